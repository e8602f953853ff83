//! Rolling faults: the schedule places them, the applier does one node at a time and waits for each.

use super::*;
use crate::disk::spec::SurgerySpec;
use crate::process::{generate, FaultDetail, ProcessNemesisSpec, ScriptedFaultSpec, Source, StableSpec, Target};
use crate::process::{node_name, TargetedFaultSpec};
use crate::rng::stream;
use crate::units::{Millis, MillisRange};
use std::sync::Mutex;

fn spanned(target: Target) -> serde_saphyr::Spanned<Target> {
    let unknown = serde_saphyr::Location::UNKNOWN;
    serde_saphyr::Spanned::new(target, unknown, unknown)
}

fn scripted(at_ms: u64, kind: ProcessFault, duration_ms: u64) -> ScriptedFaultSpec {
    ScriptedFaultSpec {
        at: Millis(at_ms),
        kind,
        targets: spanned(Target::Each),
        duration: Millis(duration_ms),
        grace: None,
        stop: None,
        cuts: vec![],
        bump: None,
        strobe: None,
        skew: None,
        change: None,
    }
}

#[test]
fn given_targets_each_when_parsed_and_shown_should_round_trip() {
    assert_eq!(Target::parse_role("each").unwrap(), Target::Each);
    assert_eq!(Target::Each.to_string(), "each");
    assert!(Target::parse_role("every").unwrap_err().contains("each"));
}

#[test]
fn given_a_scripted_rolling_fault_when_generated_should_hold_every_node_in_order_with_a_span_per_node() {
    let spec = ProcessNemesisSpec {
        script: vec![scripted(2000, ProcessFault::Stop, 1000)],
        ..Default::default()
    };
    let schedule = generate(&spec, 3, 60_000, &mut stream(1, "nemesis"));
    assert_eq!(schedule.len(), 1);
    let fault = &schedule[0];
    assert_eq!(fault.nodes, Resolved::Each(vec![0, 1, 2]), "n1, n2, n3 in turn");
    assert_eq!(fault.target, "each");
    assert!(fault.is_rolling());
    assert_eq!(fault.duration_ms, 1000, "the duration is each node's");
    assert_eq!((fault.span_ms(), fault.end_ms()), (3000, 5000));
}

#[test]
fn given_a_rolling_fault_near_the_end_of_the_phase_when_generated_should_share_what_is_left_among_its_nodes() {
    let spec = ProcessNemesisSpec {
        script: vec![scripted(58_000, ProcessFault::Kill, 2000)],
        ..Default::default()
    };
    let fault = &generate(&spec, 3, 60_000, &mut stream(1, "nemesis"))[0];
    assert_eq!(fault.duration_ms, 666, "2 s left, shared by 3 nodes");
    assert!(fault.end_ms() <= 60_000);
}

#[test]
fn given_targeted_rolling_faults_when_generated_should_place_their_spans_outside_stable_windows() {
    let stable = StableSpec {
        every: Millis(20_000),
        duration: Millis(4000),
    };
    let spec = ProcessNemesisSpec {
        interval: Some(Millis(3000)),
        faults: vec![TargetedFaultSpec {
            kind: ProcessFault::Stop,
            targets: spanned(Target::Each),
            duration: MillisRange {
                min: Millis(500),
                max: Millis(2000),
            },
            weight: 1.into(),
            grace: Some(Millis(2000)),
            stop: None,
            cuts: vec![],
            bump: None,
            strobe: None,
            skew: None,
            change: None,
        }],
        stable: Some(stable.clone()),
        ..Default::default()
    };
    let mut seen = 0;
    for seed in 0..20 {
        for fault in generate(&spec, 3, 60_000, &mut stream(seed, "nemesis")) {
            seen += 1;
            assert_eq!(fault.nodes, Resolved::Each(vec![0, 1, 2]));
            assert_eq!(fault.detail, FaultDetail::new(Some(Millis(2000)), None, &[]));
            assert!(fault.end_ms() <= 60_000);
            for window in 0..3u64 {
                let (from, until) = (window * 20_000 + 16_000, window * 20_000 + 20_000);
                assert!(
                    fault.end_ms() <= from || fault.start_ms >= until,
                    "{fault:?} overlaps the stable window {from}..{until}"
                );
            }
        }
    }
    assert!(seen > 20, "only {seen} rolling faults in 20 seeds");
}

#[test]
fn given_a_schedule_with_rolling_faults_when_split_should_keep_ids_and_order() {
    let spec = ProcessNemesisSpec {
        script: vec![
            scripted(1000, ProcessFault::Stop, 100),
            ScriptedFaultSpec {
                targets: spanned(Target::Nodes(vec!["n2".into()])),
                ..scripted(2000, ProcessFault::Kill, 100)
            },
            scripted(3000, ProcessFault::Kill, 100),
        ],
        ..Default::default()
    };
    let (timed, rolling) = split_rolling(generate(&spec, 3, 10_000, &mut stream(1, "nemesis")));
    assert_eq!(timed.iter().map(|f| f.id).collect::<Vec<_>>(), [1]);
    assert_eq!(rolling.iter().map(|f| f.id).collect::<Vec<_>>(), [0, 2]);
}

#[test]
fn given_each_kind_when_checked_should_refuse_pause_only() {
    assert!(check_rolling_kind(ProcessFault::Pause)
        .unwrap_err()
        .contains("a pause restarts nothing"));
    for kind in [
        ProcessFault::Kill,
        ProcessFault::PowerLoss,
        ProcessFault::Stop,
        ProcessFault::Corrupt,
    ] {
        assert!(check_rolling_kind(kind).is_ok());
    }
}

/// What a fake lab was asked to do or record: (ms since the test began, what, node).
type Log = Mutex<Vec<(u64, String, usize)>>;

/// A 3-node lab whose nodes are ready again `boot_ms` after a restart, except the `never_ready` ones.
struct RollingLab {
    began: Instant,
    boot_ms: u64,
    never_ready: Vec<usize>,
    log: Log,
}

impl RollingLab {
    fn new(boot_ms: u64, never_ready: Vec<usize>) -> RollingLab {
        RollingLab {
            began: Instant::now(),
            boot_ms,
            never_ready,
            log: Log::default(),
        }
    }

    fn note(&self, what: impl Into<String>, node: usize) {
        let ms = self.began.elapsed().as_millis() as u64;
        self.log.lock().unwrap().push((ms, what.into(), node));
    }

    /// The log as `what+node` words, without times.
    fn words(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .map(|(_, what, node)| format!("{what}{}", node + 1))
            .collect()
    }

    /// When (ms) the first entry `what` about `node` was made.
    fn at(&self, what: &str, node: usize) -> u64 {
        let log = self.log.lock().unwrap();
        let entry = log.iter().find(|(_, w, n)| w == what && *n == node);
        entry.unwrap_or_else(|| panic!("no {what} of {}", node_name(node))).0
    }
}

impl Lab for RollingLab {
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
        self.note("sigkill", node);
        Ok(json!({"signal": "SIGKILL"}))
    }
    async fn start(&self, node: usize) -> Result<Value, String> {
        self.note("spawn", node);
        Ok(json!({"pid": 100 + node}))
    }
    async fn pause(&self, _: usize) -> Result<Value, String> {
        unreachable!("a pause does not roll")
    }
    async fn resume(&self, _: usize) -> Result<Value, String> {
        unreachable!("a pause does not roll")
    }
    async fn lose_unsynced(&self, node: usize) -> Result<Value, String> {
        self.note("lose", node);
        Ok(json!({"files": 1}))
    }
    async fn stop(&self, node: usize, grace: Duration) -> Result<Value, String> {
        self.note(format!("sigterm/{}ms", grace.as_millis()), node);
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(json!({"ended": "exited 0 after 0.1 s", "killed": false}))
    }
    async fn cut(&self, node: usize, _: &SurgerySpec) -> Result<Value, String> {
        self.note("cut", node);
        Ok(json!({"op": "truncate-tail"}))
    }
    async fn ready_again(&self, node: usize) -> Result<Value, String> {
        if self.never_ready.contains(&node) {
            tokio::time::sleep(Duration::from_millis(5000)).await;
            return Err(format!("{} was not ready again within 5 s", node_name(node)));
        }
        tokio::time::sleep(Duration::from_millis(self.boot_ms)).await;
        self.note("ready", node);
        Ok(json!({"waited_ms": self.boot_ms}))
    }
    fn record(&self, name: Nemesis, node: usize, value: Value) {
        let bad = if value.get("error").is_some() { "!" } else { "" };
        self.note(format!("{name}{bad}"), node);
        if name != Nemesis::DiskSurgery {
            assert_eq!(value["rolling"]["of"], 3, "{name} {value}");
            assert_eq!(value["rolling"]["step"], node as u64 + 1, "{name} {value}");
        }
    }
    fn record_cluster(&self, name: Nemesis, value: Value) {
        unreachable!("a rolling fault skips no fault: {name} {value}")
    }
}

fn rolling_fault(kind: ProcessFault, detail: FaultDetail) -> ScheduledFault {
    ScheduledFault {
        id: 7,
        start_ms: 100,
        duration_ms: 1000,
        kind,
        target: "each".into(),
        nodes: Resolved::Each(vec![0, 1, 2]),
        source: Source::Scripted,
        trigger: None,
        detail,
    }
}

#[tokio::test(start_paused = true)]
async fn given_a_rolling_graceful_stop_when_run_should_do_one_node_at_a_time_each_ready_before_the_next() {
    let lab = RollingLab::new(400, vec![]);
    let faults = [rolling_fault(
        ProcessFault::Stop,
        FaultDetail::new(Some(Millis(3000)), None, &[]),
    )];
    let (_tx, rx) = watch::channel(false);
    RollingFaults::shared(&lab, &faults, NodeHolds::new(3))
        .run(lab.began, rx)
        .await;
    let step = |n: &str| {
        [
            format!("sigterm/3000ms{n}"),
            format!("stop{n}"),
            format!("spawn{n}"),
            format!("start{n}"),
            format!("ready{n}"),
            format!("rolling-ready{n}"),
        ]
    };
    let expected: Vec<String> = ["1", "2", "3"].into_iter().flat_map(step).collect();
    assert_eq!(lab.words(), expected);
    assert_eq!(lab.at("sigterm/3000ms", 0), 100, "starts at its offset");
    for node in 0..3 {
        let down = lab.at("stop", node);
        assert_eq!(lab.at("start", node) - down, 1000, "each node is down for the duration");
        if node > 0 {
            assert!(
                lab.at("sigterm/3000ms", node) >= lab.at("ready", node - 1),
                "n{} before n{node} was ready",
                node + 1
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn given_a_rolling_corrupt_and_a_rolling_power_loss_when_run_should_cut_each_node_while_down_and_lose_each_alone()
{
    let cut = SurgerySpec::TruncateTail {
        files: "wal".into(),
        pick: Default::default(),
        max_bytes: 100,
    };
    let lab = RollingLab::new(10, vec![]);
    let mut second = rolling_fault(ProcessFault::PowerLoss, FaultDetail::default());
    second.id = 8;
    second.start_ms = 200; // due while the first still rolls: it starts when the first ends
    let faults = [
        rolling_fault(ProcessFault::Corrupt, FaultDetail::new(None, None, &[cut])),
        second,
    ];
    let (_tx, rx) = watch::channel(false);
    RollingFaults::shared(&lab, &faults, NodeHolds::new(3))
        .run(lab.began, rx)
        .await;
    let words = lab.words();
    let corrupt = |n| {
        [
            "sigkill",
            "corrupt",
            "cut",
            "disk-surgery",
            "spawn",
            "start",
            "ready",
            "rolling-ready",
        ]
        .map(|w| format!("{w}{n}"))
    };
    let power = |n| {
        [
            "sigkill",
            "lose",
            "power-loss",
            "spawn",
            "start",
            "ready",
            "rolling-ready",
        ]
        .map(|w| format!("{w}{n}"))
    };
    let expected: Vec<String> = (1..=3).flat_map(corrupt).chain((1..=3).flat_map(power)).collect();
    assert_eq!(words, expected);
}

#[tokio::test(start_paused = true)]
async fn given_a_node_another_fault_holds_for_a_while_when_rolled_should_wait_for_it_and_then_do_it() {
    let lab = RollingLab::new(100, vec![]);
    let holds = NodeHolds::new(3);
    holds.0.lock().unwrap()[1] = NodeState::Down(99); // n2 is down for another fault ...
    let faults = [rolling_fault(ProcessFault::Kill, FaultDetail::default())];
    let (_tx, rx) = watch::channel(false);
    let rolling = RollingFaults::shared(&lab, &faults, holds.clone());
    let other_fault = async {
        tokio::time::sleep(Duration::from_millis(4000)).await; // ... until 4 s
        holds.0.lock().unwrap()[1] = NodeState::Up;
    };
    tokio::join!(rolling.run(lab.began, rx), other_fault);
    let expected: Vec<String> = (1..=3)
        .flat_map(|n| ["sigkill", "kill", "spawn", "start", "ready", "rolling-ready"].map(|w| format!("{w}{n}")))
        .collect();
    assert_eq!(lab.words(), expected);
    let n2_down = lab.at("kill", 1);
    assert!(
        (4000..4100).contains(&n2_down),
        "n2 went down when the other fault let it go: {n2_down}"
    );
}

#[tokio::test(start_paused = true)]
async fn given_a_node_another_fault_holds_or_that_is_never_ready_when_rolled_should_record_it_and_go_on() {
    let lab = RollingLab::new(100, vec![0]);
    let holds = NodeHolds::new(3);
    holds.0.lock().unwrap()[1] = NodeState::Down(99); // n2 is down for another fault
    let faults = [rolling_fault(ProcessFault::Kill, FaultDetail::default())];
    let (_tx, rx) = watch::channel(false);
    RollingFaults::shared(&lab, &faults, holds.clone())
        .run(lab.began, rx)
        .await;
    let expected = [
        "sigkill1",
        "kill1",
        "spawn1",
        "start1",
        "rolling-ready!1", // n1 not ready within the bound: recorded
        "kill!2",          // n2 held by another fault longer than the step waits: skipped, recorded
        "sigkill3",
        "kill3",
        "spawn3",
        "start3",
        "ready3",
        "rolling-ready3",
    ];
    assert_eq!(lab.words(), expected);
    assert!(
        holds.is_free(0) && holds.is_free(2),
        "every node this fault took is released"
    );
    assert!(!holds.is_free(1), "the other fault's node stays held");
}

#[tokio::test(start_paused = true)]
async fn given_the_phase_stops_while_a_node_is_down_when_rolled_should_restart_it_at_once_and_do_no_more() {
    let lab = RollingLab::new(100, vec![]);
    let holds = NodeHolds::new(3);
    let faults = [rolling_fault(ProcessFault::Kill, FaultDetail::default())];
    let (tx, rx) = watch::channel(false);
    let stopper = async {
        tokio::time::sleep(Duration::from_millis(1600)).await; // n2 is down
        tx.send(true).unwrap();
    };
    let rolling = RollingFaults::shared(&lab, &faults, holds.clone());
    tokio::join!(rolling.run(lab.began, rx), stopper);
    let expected = [
        "sigkill1",
        "kill1",
        "spawn1",
        "start1",
        "ready1",
        "rolling-ready1",
        "sigkill2",
        "kill2",
        "spawn2",
        "start2",
    ];
    assert_eq!(lab.words(), expected);
    assert_eq!(lab.at("start", 1), 1600, "restarted when the phase stopped");
    assert!((0..3).all(|node| holds.is_free(node)));
}
