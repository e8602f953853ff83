use super::*;
use crate::interpreter::{Families, NoFaults};
use crate::rng::stream;
use std::time::Duration;

fn process_only<P>(process: P) -> Families<P, NoFaults, NoFaults> {
    Families {
        process,
        network: NoFaults,
        io: NoFaults,
    }
}

fn spanned(target: Target) -> serde_saphyr::Spanned<Target> {
    let unknown = serde_saphyr::Location::UNKNOWN;
    serde_saphyr::Spanned::new(target, unknown, unknown)
}

fn spec() -> ProcessNemesisSpec {
    ProcessNemesisSpec {
        interval: Some(Millis(3000)),
        faults: vec![
            TargetedFaultSpec {
                kind: ProcessFault::Kill,
                targets: spanned(Target::Primary),
                duration: MillisRange {
                    min: Millis(500),
                    max: Millis(3000),
                },
                weight: 2.into(),
                grace: None,
                stop: None,
                cuts: vec![],
                bump: None,
                strobe: None,
                skew: None,
                change: None,
            },
            TargetedFaultSpec {
                kind: ProcessFault::Pause,
                targets: spanned(Target::Minority),
                duration: MillisRange {
                    min: Millis(500),
                    max: Millis(2000),
                },
                weight: 1.into(),
                grace: None,
                stop: None,
                cuts: vec![],
                bump: None,
                strobe: None,
                skew: None,
                change: None,
            },
        ],
        flaps: Some(FlapSpec {
            mean_up: Millis(6000),
            mean_down: Millis(1500),
            max_down: Millis(5000),
        }),
        stable: Some(StableSpec {
            every: Millis(20_000),
            duration: Millis(4000),
        }),
        script: vec![],
        max_down: None,
    }
}

#[test]
fn given_same_seed_when_generated_twice_should_give_the_same_schedule() {
    let a = generate(&spec(), 3, 60_000, &mut stream(7, "nemesis"));
    let b = generate(&spec(), 3, 60_000, &mut stream(7, "nemesis"));
    let c = generate(&spec(), 3, 60_000, &mut stream(8, "nemesis"));
    assert!(!a.is_empty());
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn given_flaps_when_generated_should_overlap_faults_on_different_nodes() {
    let schedule = generate(&spec(), 5, 120_000, &mut stream(1, "nemesis"));
    let overlapping = schedule.iter().enumerate().any(|(i, a)| {
        schedule[i + 1..]
            .iter()
            .any(|b| b.start_ms < a.end_ms() && a.start_ms < b.end_ms() && a.nodes != b.nodes)
    });
    assert!(overlapping, "flaps must produce overlapping faults: {schedule:?}");
}

#[test]
fn given_stable_windows_when_generated_should_keep_them_fault_free_and_end_by_the_limit() {
    let stable = spec().stable.unwrap();
    for seed in 0..20 {
        for fault in generate(&spec(), 3, 60_000, &mut stream(seed, "nemesis")) {
            assert!(fault.end_ms() <= 60_000);
            for w in 0..3u64 {
                let ws = w * 20_000 + 16_000;
                let we = ws + stable.duration.0;
                assert!(
                    fault.end_ms() <= ws || fault.start_ms >= we,
                    "fault {fault:?} overlaps window {ws}..{we}"
                );
            }
        }
    }
}

#[test]
fn given_a_script_when_generated_should_place_its_faults_at_their_times_even_in_stable_windows() {
    let mut spec = spec();
    spec.faults.clear();
    spec.flaps = None;
    spec.script = vec![
        ScriptedFaultSpec {
            at: Millis(17_000),
            kind: ProcessFault::Kill,
            targets: spanned(Target::Backup),
            duration: Millis(3000),
            grace: None,
            stop: None,
            cuts: vec![],
            bump: None,
            strobe: None,
            skew: None,
            change: None,
        },
        ScriptedFaultSpec {
            at: Millis(59_000),
            kind: ProcessFault::Pause,
            targets: spanned(Target::Nodes(vec!["n2".into()])),
            duration: Millis(5000),
            grace: None,
            stop: None,
            cuts: vec![],
            bump: None,
            strobe: None,
            skew: None,
            change: None,
        },
    ];
    let schedule = generate(&spec, 3, 60_000, &mut stream(1, "nemesis"));
    assert_eq!(schedule.len(), 2);
    assert_eq!(
        (schedule[0].start_ms, schedule[0].duration_ms, schedule[0].source),
        (17_000, 3000, Source::Scripted)
    );
    assert_eq!(schedule[1].nodes, Resolved::Nodes(vec![1]));
    assert_eq!(schedule[1].end_ms(), 60_000, "clipped to the phase");
}

#[tokio::test(start_paused = true)]
async fn given_a_power_loss_of_all_when_run_should_kill_everyone_before_anyone_loses_data() {
    let log = run_one(ProcessFault::PowerLoss, "all", Resolved::Nodes(vec![0, 1, 2])).await;
    let log: Vec<String> = log.iter().map(|(f, n)| format!("{f}{n}")).collect();
    let expected = [
        "sigkill0",
        "sigkill1",
        "sigkill2",
        "lose0",
        "power-loss0",
        "lose1",
        "power-loss1",
        "lose2",
        "power-loss2",
        "start0",
        "start1",
        "start2",
    ];
    assert_eq!(log, expected);
}

#[test]
fn given_targets_when_parsed_should_accept_roles_and_names_and_reject_typos() {
    assert_eq!(Target::parse_role("next-primary").unwrap(), Target::NextPrimary);
    assert!(Target::parse_role("primery").unwrap_err().contains("unknown target"));
    assert_eq!(parse_node_name("n3"), Some(2));
    assert_eq!(parse_node_name("n0"), None);
    assert_eq!(parse_node_name("x1"), None);
}

#[test]
fn given_a_role_with_except_when_parsed_should_take_the_map_and_text_forms_and_refuse_what_means_nothing() {
    let target: Target = serde_saphyr::from_str("{role: backup, except: [n3]}").unwrap();
    assert_eq!(target, Target::except(Target::Backup, vec!["n3".into()]).unwrap());
    assert_eq!(target.to_string(), "backup except [n3]");
    assert_eq!(
        Target::parse_role("backup except [n3]").unwrap(),
        target,
        "what a schedule records reads back"
    );
    let yaml = serde_saphyr::to_string(&target).unwrap();
    assert_eq!(serde_saphyr::from_str::<Target>(&yaml).unwrap(), target, "{yaml}");
    for (bad, why) in [
        ("{role: each, except: [n1]}", "not `each`"),
        ("{role: one, except: []}", "excepts nothing"),
        ("{role: one, except: [x]}", "not a node name"),
        ("{role: one}", "add `except"),
    ] {
        let err = serde_saphyr::from_str::<Target>(bad).unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

/// "A backup other than n3" when n3 is the damaged one: whatever the draw, the fault lands on the other backup.
#[tokio::test(start_paused = true)]
async fn given_backup_except_a_node_when_run_should_hit_only_the_other_backup() {
    let target = Target::except(Target::Backup, vec!["n3".into()]).unwrap();
    let one = Target::except(Target::One, vec!["n1".into(), "n2".into()]).unwrap();
    for seed in 0..20 {
        let mut rng = stream(seed, "nemesis");
        assert_eq!(resolve_static(&one, 3, &mut rng), Resolved::Nodes(vec![2]));
        let nodes = resolve_static(&target, 3, &mut rng);
        let log = run_one(ProcessFault::Kill, &target.to_string(), nodes).await;
        let killed: Vec<usize> = log
            .iter()
            .filter(|(f, _)| f == "sigkill")
            .map(|(_, node)| *node)
            .collect();
        assert_eq!(killed, [1], "the primary is n1 and n3 is excepted: seed {seed}");
    }
}

/// Runs one scripted fault of `kind` on `nodes` (at 10 ms, for 100 ms) against the fake lab; what the lab was asked.
async fn run_one(kind: ProcessFault, target: &str, nodes: Resolved) -> Vec<(String, usize)> {
    let schedule = vec![ScheduledFault {
        id: 0,
        start_ms: 10,
        duration_ms: 100,
        kind,
        target: target.into(),
        nodes,
        source: Source::Scripted,
        trigger: None,
        detail: FaultDetail::default(),
    }];
    let lab = FakeLab::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    process_only(ProcessFaults::new(&lab, &schedule))
        .run(tokio::time::Instant::now(), rx)
        .await;
    let log = lab.log.lock().unwrap().clone();
    log
}

#[derive(Default)]
struct FakeLab {
    log: std::sync::Mutex<Vec<(String, usize)>>,
    /// How long a node asked to stop takes to exit (none: at once).
    stop_takes: Duration,
    /// What was recorded, by name and node, and when.
    recorded_at: std::sync::Mutex<Vec<(String, tokio::time::Instant)>>,
}

impl Lab for FakeLab {
    fn node_count(&self) -> usize {
        3
    }
    async fn primary(&self) -> Option<usize> {
        Some(0)
    }
    async fn next_primary(&self) -> Option<usize> {
        Some(1)
    }
    async fn kill(&self, node: usize) -> Result<Value, String> {
        self.log.lock().unwrap().push(("sigkill".to_string(), node));
        Ok(json!({}))
    }
    async fn start(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn pause(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn resume(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn lose_unsynced(&self, node: usize) -> Result<Value, String> {
        self.log.lock().unwrap().push(("lose".to_string(), node));
        Ok(json!({}))
    }
    async fn stop(&self, node: usize, grace: Duration) -> Result<Value, String> {
        self.log
            .lock()
            .unwrap()
            .push((format!("sigterm/{}ms", grace.as_millis()), node));
        tokio::time::sleep(self.stop_takes.min(grace)).await;
        Ok(json!({"ended": "exited 0 after 0.1 s"}))
    }
    async fn cut(&self, node: usize, cut: &SurgerySpec) -> Result<Value, String> {
        match cut {
            SurgerySpec::RestoreChunk { name, .. } => Err(format!("no chunk snapshot named `{name}`")),
            _ => {
                self.log.lock().unwrap().push(("cut".to_string(), node));
                Ok(json!({"op": "truncate-tail"}))
            }
        }
    }
    async fn ready_again(&self, _: usize) -> Result<Value, String> {
        unreachable!("only rolling faults wait for readiness")
    }
    async fn clock(&self, node: usize, shift: Option<crate::clock::ClockShift>) -> Result<Value, String> {
        let what = shift.map_or("real".to_string(), |s| s.kind().to_string());
        self.log.lock().unwrap().push((format!("set-{what}"), node));
        Ok(json!({}))
    }
    fn record(&self, name: Nemesis, node: usize, value: Value) {
        let name = match value.get("error") {
            Some(_) => format!("{name}!"),
            None => name.to_string(),
        };
        let at = tokio::time::Instant::now();
        self.recorded_at
            .lock()
            .unwrap()
            .push((format!("{name}{}", node + 1), at));
        self.log.lock().unwrap().push((name, node));
    }
    fn record_cluster(&self, name: Nemesis, _: Value) {
        self.log.lock().unwrap().push((name.to_string(), usize::MAX));
    }
}

#[tokio::test(start_paused = true)]
async fn given_overlapping_faults_on_one_node_when_run_should_not_double_fault_and_heal_everything() {
    let fault = |id, start_ms, duration_ms, kind| ScheduledFault {
        id,
        start_ms,
        duration_ms,
        kind,
        target: "n1".into(),
        nodes: Resolved::Nodes(vec![0]),
        source: Source::Targeted,
        trigger: None,
        detail: FaultDetail::default(),
    };
    let schedule = vec![
        fault(0, 10, 100, ProcessFault::Kill),
        fault(1, 20, 500, ProcessFault::Pause), // n1 is down: skipped
        fault(2, 200, 10_000, ProcessFault::Pause),
    ];
    let lab = FakeLab::default();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut families = process_only(ProcessFaults::new(&lab, &schedule));
    let start = tokio::time::Instant::now();
    let stopper = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        tx.send(true).unwrap();
    };
    tokio::join!(families.run(start, rx), stopper);
    let log = lab.log.lock().unwrap().clone();
    let names: Vec<&str> = log
        .iter()
        .map(|(f, _)| f.as_str())
        .filter(|f| *f != "sigkill")
        .collect();
    // The pause aimed at n1 while the kill held it did nothing, and the history says so.
    assert_eq!(names, ["kill", "fault-skipped", "start", "pause", "resume"]);
}

#[tokio::test(start_paused = true)]
async fn given_a_graceful_stop_and_a_corrupt_fault_when_run_should_stop_cut_in_order_and_restart_each() {
    let truncate = SurgerySpec::TruncateTail {
        files: "wal".into(),
        pick: Default::default(),
        max_bytes: 100,
    };
    let restore = SurgerySpec::RestoreChunk {
        name: "never-taken".into(),
        misdirect: false,
    };
    let fault = |id, start_ms, kind, node: usize, detail| ScheduledFault {
        id,
        start_ms,
        duration_ms: 100,
        kind,
        target: node_name(node),
        nodes: Resolved::Nodes(vec![node]),
        source: Source::Scripted,
        trigger: None,
        detail,
    };
    let schedule = vec![
        fault(
            0,
            10,
            ProcessFault::Stop,
            0,
            FaultDetail::new(Some(Millis(2500)), None, &[]),
        ),
        fault(
            1,
            300,
            ProcessFault::Corrupt,
            1,
            FaultDetail::new(None, Some(StopHow::Graceful), &[truncate.clone(), restore]),
        ),
        fault(
            2,
            600,
            ProcessFault::Corrupt,
            2,
            FaultDetail::new(None, None, &[truncate]),
        ),
    ];
    let lab = FakeLab::default();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut families = process_only(ProcessFaults::new(&lab, &schedule));
    let stopper = async {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let _ = tx.send(true); // the run may have ended with its last fault
    };
    tokio::join!(families.run(tokio::time::Instant::now(), rx), stopper);
    let log: Vec<String> = lab
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|(name, node)| format!("{name}{}", node + 1))
        .collect();
    let expected = [
        "sigterm/2500ms1",
        "stop1",
        "start1",
        // graceful with the default grace, then the cuts in order; a cut that fails is recorded as such
        "sigterm/10000ms2",
        "corrupt2",
        "cut2",
        "disk-surgery2",
        "disk-surgery!2",
        "start2",
        // kill by default
        "sigkill3",
        "corrupt3",
        "cut3",
        "disk-surgery3",
        "start3",
    ];
    assert_eq!(log, expected);
}

#[test]
fn given_fault_details_when_validated_should_refuse_what_does_not_fit_the_kind() {
    let cut = SurgerySpec::TruncateTail {
        files: "wal".into(),
        pick: Default::default(),
        max_bytes: 100,
    };
    let ok = |kind, detail: FaultDetail| detail.validate(kind);
    assert!(ok(ProcessFault::Stop, FaultDetail::new(Some(Millis(1)), None, &[])).is_ok());
    assert!(ok(
        ProcessFault::Corrupt,
        FaultDetail::new(None, None, std::slice::from_ref(&cut))
    )
    .is_ok());
    let refused = |kind, detail: FaultDetail| detail.validate(kind).unwrap_err();
    assert!(refused(ProcessFault::Stop, FaultDetail::new(Some(Millis(0)), None, &[])).contains("grace must be > 0"));
    assert!(refused(ProcessFault::Kill, FaultDetail::new(Some(Millis(5)), None, &[])).contains("graceful stops"));
    assert!(refused(
        ProcessFault::Corrupt,
        FaultDetail::new(Some(Millis(5)), None, std::slice::from_ref(&cut))
    )
    .contains("graceful stops"));
    assert!(refused(ProcessFault::Corrupt, FaultDetail::default()).contains("needs `cuts`"));
    assert!(refused(
        ProcessFault::Kill,
        FaultDetail::new(None, None, std::slice::from_ref(&cut))
    )
    .contains("`cuts`"));
    assert!(refused(ProcessFault::Pause, FaultDetail::new(None, Some(StopHow::Kill), &[])).contains("`stop`"));
    let bad_cut = SurgerySpec::TruncateTail {
        files: "wal".into(),
        pick: Default::default(),
        max_bytes: 0,
    };
    assert!(refused(ProcessFault::Corrupt, FaultDetail::new(None, None, &[bad_cut])).contains("cuts[0]"));
    assert!(is_file_class("wal") && is_file_class("snapshot"));
    assert!(!is_file_class("wal*") && !is_file_class("member/wal/x") && !is_file_class("db.0"));
}

#[tokio::test(start_paused = true)]
async fn given_clock_faults_overlapping_each_other_and_a_kill_when_run_should_hold_one_clock_per_node_and_heal_to_real()
{
    use crate::clock::ClockShift;
    let fault = |id, start_ms, duration_ms, kind, nodes: Vec<usize>, clock| ScheduledFault {
        id,
        start_ms,
        duration_ms,
        kind,
        target: "nodes".into(),
        nodes: Resolved::Nodes(nodes),
        source: Source::Scripted,
        trigger: None,
        detail: FaultDetail {
            clock,
            ..FaultDetail::default()
        },
    };
    let bump = Some(ClockShift::Bump { offset_ms: -500 });
    let skew = Some(ClockShift::Skew { rate: 1.5 });
    let schedule = vec![
        fault(0, 10, 100, ProcessFault::Clock, vec![0], bump),
        // n1's clock is held by fault 0: only n2's moves.
        fault(1, 20, 100, ProcessFault::Clock, vec![0, 1], skew),
        // A kill of n1 while its clock is moved: clocks do not hold processes.
        fault(2, 30, 10, ProcessFault::Kill, vec![0], None),
    ];
    let lab = FakeLab::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    process_only(ProcessFaults::new(&lab, &schedule))
        .run(tokio::time::Instant::now(), rx)
        .await;
    let log: Vec<String> = lab.log.lock().unwrap().iter().map(|(f, n)| format!("{f}{n}")).collect();
    let expected = [
        "set-bump0",
        "clock0",
        "set-skew1",
        "clock1",
        "sigkill0",
        "kill0",
        "start0",
        "set-real0",
        "clock-heal0",
        "set-real1",
        "clock-heal1",
    ];
    assert_eq!(log, expected);
}

/// A graceful stop waits out its grace beside the schedule: a pause due 2 s in starts at 2 s, not when the stopped
/// node (8 s to exit) is down; the stopped node is restarted only after it went down, however early its fault ends.
#[tokio::test(start_paused = true)]
async fn given_a_slow_graceful_stop_when_run_should_not_hold_the_faults_after_it() {
    let fault = |id, start_ms, duration_ms, kind, node| ScheduledFault {
        detail: FaultDetail::new(Some(Millis(10_000)), None, &[]),
        ..on_node(id, (start_ms, duration_ms), kind, node)
    };
    let schedule = vec![
        fault(0, 10, 100, ProcessFault::Stop, 0),
        fault(1, 2000, 500, ProcessFault::Pause, 1),
    ];
    let lab = FakeLab {
        stop_takes: Duration::from_secs(8),
        ..FakeLab::default()
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let begun = tokio::time::Instant::now();
    process_only(ProcessFaults::new(&lab, &schedule)).run(begun, rx).await;
    let recorded = lab.recorded_at.lock().unwrap().clone();
    let at = |what: &str| {
        let (_, at) = recorded
            .iter()
            .find(|(name, _)| name == what)
            .unwrap_or_else(|| panic!("no {what}: {recorded:?}"));
        at.duration_since(begun).as_millis() as u64
    };
    // The pause and its end come on time (the paused clock moves only when every task waits).
    assert_eq!((at("pause2"), at("resume2")), (2000, 2500), "{recorded:?}");
    // The stop is recorded when the node has gone down, and the restart only after that.
    assert_eq!(at("stop1"), 8010, "{recorded:?}");
    assert!(at("start1") >= at("stop1"), "{recorded:?}");
    let order: Vec<&str> = recorded.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(order, ["pause2", "resume2", "stop1", "start1"]);
}

/// `max_down: 1`: a kill of n2 while n1 is down is skipped (and says why); once n1 is back, a pause of n3 goes ahead.
#[tokio::test(start_paused = true)]
async fn given_max_down_when_faults_overlap_should_skip_what_would_take_more_nodes_down() {
    let fault = |id, start_ms, duration_ms, kind, node| on_node(id, (start_ms, duration_ms), kind, node);
    let schedule = vec![
        fault(0, 10, 1000, ProcessFault::Kill, 0),
        fault(1, 100, 200, ProcessFault::Kill, 1),
        fault(2, 1500, 100, ProcessFault::Pause, 2),
    ];
    let lab = FakeLab::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let holds = NodeHolds::new(3).with_max_down(Some(1));
    process_only(ProcessFaults::shared(&lab, &schedule, holds))
        .run(tokio::time::Instant::now(), rx)
        .await;
    let log: Vec<String> = lab
        .log
        .lock()
        .unwrap()
        .iter()
        .map(|(name, node)| format!("{name}@{node}"))
        .collect();
    assert_eq!(
        log,
        [
            "sigkill@0",
            "kill@0",
            &format!("fault-skipped@{}", usize::MAX),
            "start@0",
            "pause@2",
            "resume@2"
        ]
    );
    // Without the cap the same schedule has two nodes down at once.
    let lab = FakeLab::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    process_only(ProcessFaults::new(&lab, &schedule))
        .run(tokio::time::Instant::now(), rx)
        .await;
    assert!(lab.log.lock().unwrap().contains(&("sigkill".to_string(), 1)));
}

/// A scripted fault `kind` of node `node` over `(start_ms, duration_ms)`, with the default detail.
fn on_node(id: u64, (start_ms, duration_ms): (u64, u64), kind: ProcessFault, node: usize) -> ScheduledFault {
    ScheduledFault {
        id,
        start_ms,
        duration_ms,
        kind,
        target: node_name(node),
        nodes: Resolved::Nodes(vec![node]),
        source: Source::Scripted,
        trigger: None,
        detail: FaultDetail::default(),
    }
}
