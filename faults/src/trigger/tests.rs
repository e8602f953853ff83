use super::*;
use crate::fusefs::FsFaults;
use crate::io::IoLab;
use crate::network::link_fault::BackendKind;
use crate::network::schedule::{NetworkHolds, NetworkLab};
use crate::network::Network;
use crate::process::{node_name, Lab, NodeHolds, StableSpec};
use crate::units::Millis;
use faultline_workloads::history::Nemesis;
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

/// Records what the engine did: (event name, node, value).
#[derive(Default)]
struct FakeLab {
    log: Mutex<Vec<(String, Option<usize>, Value)>>,
}

impl FakeLab {
    fn names(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .map(|(name, node, _)| format!("{name}{}", node.map(node_name).unwrap_or_default()))
            .collect()
    }
    fn triggers(&self) -> Vec<Value> {
        let log = self.log.lock().unwrap();
        log.iter()
            .filter(|(name, ..)| name == "trigger")
            .map(|(.., v)| v.clone())
            .collect()
    }
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
    async fn kill(&self, _: usize) -> Result<Value, String> {
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
    async fn lose_unsynced(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn stop(&self, _: usize, _: std::time::Duration) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn cut(&self, _: usize, _: &crate::disk::spec::SurgerySpec) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn ready_again(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    fn record(&self, name: Nemesis, node: usize, value: Value) {
        self.log.lock().unwrap().push((name.to_string(), Some(node), value));
    }
    fn record_cluster(&self, name: Nemesis, value: Value) {
        self.log.lock().unwrap().push((name.to_string(), None, value));
    }
}

impl NetworkLab for FakeLab {
    async fn primary(&self) -> Option<usize> {
        Some(0)
    }
    fn record(&self, name: Nemesis, value: Value) {
        self.log.lock().unwrap().push((name.to_string(), None, value));
    }
}

impl IoLab for FakeLab {
    async fn set_io_faults(&self, _: usize, _: &FsFaults) -> Result<(), String> {
        Ok(())
    }
    fn crashed(&self, _: usize) -> bool {
        false
    }
    async fn restart(&self, _: usize) {}
    fn record(&self, name: Nemesis, node: usize, value: Value) {
        self.log.lock().unwrap().push((name.to_string(), Some(node), value));
    }
}

fn specs(yaml: &str) -> Vec<TriggerSpec> {
    serde_saphyr::from_str(yaml).unwrap()
}

fn status(node: usize, role: FactRole, op: u64) -> Fact {
    Fact::Status {
        node,
        at: Instant::now(),
        role,
        view: None,
        durable: Some(op),
        numbers: vec![("op".into(), op)],
    }
}

fn status_in_view(node: usize, role: FactRole, view: u64) -> Fact {
    Fact::Status {
        node,
        at: Instant::now(),
        role,
        view: Some(view),
        durable: Some(10),
        numbers: vec![("op".into(), 10)],
    }
}

/// Runs the engine over `phase_ms` of paused time, feeding `script` (at ms from the start, the fact).
async fn run(
    lab: &FakeLab,
    specs: &[TriggerSpec],
    stable: Option<StableSpec>,
    phase_ms: u64,
    script: Vec<(u64, Fact)>,
) {
    run_on(lab, None, specs, stable, phase_ms, script).await
}

/// [`run`] with a network backend.
async fn run_on(
    lab: &FakeLab,
    network: Option<&Network>,
    specs: &[TriggerSpec],
    stable: Option<StableSpec>,
    phase_ms: u64,
    script: Vec<(u64, Fact)>,
) {
    let (facts_tx, facts_rx) = broadcast::channel(64);
    let (stop_tx, stop_rx) = watch::channel(false);
    let start = Instant::now();
    let holds = (NodeHolds::new(3), NetworkHolds::default());
    let mut engine = Triggers::new(lab, specs, 7, network, holds, stable, phase_ms);
    let feed = async move {
        for (at, fact) in script {
            tokio::time::sleep_until(start + Duration::from_millis(at)).await;
            // Each fact carries the time it is sent at.
            let fact = match fact {
                Fact::Status {
                    node,
                    role,
                    view,
                    durable,
                    numbers,
                    ..
                } => Fact::Status {
                    node,
                    at: Instant::now(),
                    role,
                    view,
                    durable,
                    numbers,
                },
                Fact::Ready { node, .. } => Fact::Ready {
                    node,
                    at: Instant::now(),
                },
                Fact::Down { node, .. } => Fact::Down {
                    node,
                    at: Instant::now(),
                },
                other => other,
            };
            facts_tx.send(fact).unwrap();
        }
        tokio::time::sleep_until(start + Duration::from_millis(phase_ms)).await;
        stop_tx.send(true).unwrap();
        facts_tx
    };
    let (_, _facts_tx) = tokio::join!(engine.run(start, stop_rx, facts_rx), feed);
}

fn ready(node: usize) -> Fact {
    Fact::Ready {
        node,
        at: Instant::now(),
    }
}

#[tokio::test(start_paused = true)]
async fn given_a_restart_when_triggered_should_kill_the_subject_after_the_drawn_delay_and_restart_it() {
    let lab = FakeLab::default();
    let specs = specs("- {when: {restarted: any}, after: 100ms, do: {kind: kill, targets: subject, duration: 500ms}}");
    run(&lab, &specs, None, 5000, vec![(1000, ready(1))]).await;
    assert_eq!(lab.names(), ["killn2", "triggern2", "startn2"]);
    let fired = &lab.triggers()[0];
    assert_eq!(fired["condition"], "restarted");
    assert_eq!(fired["subject"], "n2");
    assert_eq!(fired["delay_ms"], 100);
    assert_eq!(fired["duration_ms"], 500);
    assert_eq!(fired["fault_id"], TRIGGER_FAULT_ID_BASE);
    let log = lab.log.lock().unwrap();
    assert_eq!(log[0].2["source"], "triggered");
    assert_eq!(log[0].2["trigger"], 0);
}

#[tokio::test(start_paused = true)]
async fn given_conditions_in_a_burst_when_triggered_should_keep_the_cooldown_and_the_fire_limit() {
    let lab = FakeLab::default();
    let specs = specs(
        "- {when: {restarted: n1}, cooldown: 1s, max_fires: 2, do: {kind: pause, targets: subject, duration: 100ms}}",
    );
    // n1 restarts every 300 ms for 6 s; n2's restarts do not match the filter.
    let script = (0..20)
        .flat_map(|i| [(i * 300, ready(0)), (i * 300 + 1, ready(1))])
        .collect();
    run(&lab, &specs, None, 8000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 2, "{fired:?}");
    assert!(fired.iter().all(|f| f["subject"] == "n1"));
    assert_eq!(lab.names().iter().filter(|n| *n == "pausen1").count(), 2);
}

#[tokio::test(start_paused = true)]
async fn given_the_primary_lost_when_a_view_change_trigger_holds_should_pause_everyone_but_the_old_primary() {
    let lab = FakeLab::default();
    let specs = specs("- {when: {view-change: any}, do: {kind: pause, targets: not-subject, duration: 200ms}}");
    let script = vec![
        (0, status(0, FactRole::Primary, 10)),
        (0, status(1, FactRole::Backup, 10)),
        (0, status(2, FactRole::Backup, 10)),
        (
            500,
            Fact::Down {
                node: 0,
                at: Instant::now(),
            },
        ),
    ];
    run(&lab, &specs, None, 3000, script).await;
    assert_eq!(lab.triggers()[0]["subject"], "n1");
    let names = lab.names();
    assert!(
        names.starts_with(&["pausen2".into(), "pausen3".into(), "triggern1".into()]),
        "{names:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn given_a_stale_primary_cut_off_when_a_newer_view_elects_one_should_fire_primary_changed_and_stale_primary() {
    let lab = FakeLab::default();
    let specs = specs(
        "- {when: {primary-changed: any}, do: {kind: kill, targets: subject, duration: 100ms}}\n\
         - {when: {stale-primary: any}, do: {kind: pause, targets: subject, duration: 100ms}}",
    );
    // n1 leads view 0; cut off, it keeps claiming view 0 (its probe still answers) while n2 and n3 go through
    // a view change and n2 leads view 1. n1 is the first node, so a first-claimant rule never sees n2 lead.
    let mut script = vec![
        (0, status_in_view(0, FactRole::Primary, 0)),
        (0, status_in_view(1, FactRole::Backup, 0)),
        (0, status_in_view(2, FactRole::Backup, 0)),
        (400, status_in_view(1, FactRole::Other, 1)),
        (400, status_in_view(2, FactRole::Other, 1)),
        (800, status_in_view(2, FactRole::Backup, 1)),
    ];
    for at in (100..=1500).step_by(100) {
        script.push((at, status_in_view(0, FactRole::Primary, 0)));
    }
    script.push((900, status_in_view(1, FactRole::Primary, 1)));
    script.sort_by_key(|(at, _)| *at);
    run(&lab, &specs, None, 2000, script).await;
    let fired = lab.triggers();
    let mut seen: Vec<(String, String)> = fired
        .iter()
        .map(|f| {
            (
                f["condition"].as_str().unwrap().into(),
                f["subject"].as_str().unwrap().into(),
            )
        })
        .collect();
    seen.sort();
    let want = [("primary-changed", "n2"), ("stale-primary", "n1")].map(|(c, n)| (c.to_string(), n.to_string()));
    assert_eq!(seen, want, "{fired:?}");
}

#[tokio::test(start_paused = true)]
async fn given_a_stale_primary_when_a_trigger_faults_the_primary_links_should_hit_the_newer_primary_not_the_subject() {
    let mesh = crate::network::proxy::ProxyMesh::start(3, vec![], Default::default(), 1)
        .await
        .unwrap();
    let network = Network::Proxy(std::sync::Arc::new(mesh));
    let lab = FakeLab::default(); // its primary is n1
    let specs = specs(
        "- {when: {stale-primary: any}, do: {kind: link, links: primary, fault: {kind: delay, latency: 400ms}, \
         duration: 300ms}}",
    );
    // n2 still claims view 3 while n1 leads view 4.
    let mut script = vec![(0, status_in_view(2, FactRole::Backup, 4))];
    for at in (0..=600).step_by(100) {
        script.push((at, status_in_view(1, FactRole::Primary, 3)));
    }
    script.push((200, status_in_view(0, FactRole::Primary, 4)));
    script.sort_by_key(|(at, _)| *at);
    run_on(&lab, Some(&network), &specs, None, 1000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["subject"], "n2");
    let log = lab.log.lock().unwrap();
    let fault = log
        .iter()
        .find(|(name, ..)| name == "link-fault")
        .expect("a link fault");
    assert_eq!(fault.2["links"], json!(["n1->n2", "n2->n1", "n1->n3", "n3->n1"]));
    assert!(log.iter().any(|(name, ..)| name == "link-heal"));
}

#[test]
fn given_claims_to_lead_when_choosing_the_primary_should_take_the_newest_view_then_the_first_node() {
    assert_eq!(newest_claimant([]), None);
    assert_eq!(newest_claimant([(0, Some(4)), (1, Some(5))]), Some(1));
    assert_eq!(newest_claimant([(0, Some(6)), (2, Some(5))]), Some(0));
    assert_eq!(newest_claimant([(1, Some(5)), (2, Some(5))]), Some(1));
    assert_eq!(newest_claimant([(0, None), (2, None)]), Some(0));
    assert_eq!(newest_claimant([(0, None), (2, Some(0))]), Some(2));
}

#[tokio::test(start_paused = true)]
async fn given_a_backup_falling_behind_when_lagging_holds_should_fire_once_until_it_catches_up() {
    let lab = FakeLab::default();
    let specs = specs(
        "- {when: {lagging: {by: 5, number: op}}, cooldown: 10ms, do: {kind: kill, targets: primary, duration: 100ms}}",
    );
    let mut script = Vec::new();
    for (i, lag) in [0u64, 6, 7, 8, 0, 9].into_iter().enumerate() {
        let at = i as u64 * 200;
        script.push((at, status(0, FactRole::Primary, 100 + 10 * i as u64)));
        script.push((at, status(2, FactRole::Backup, 100 + 10 * i as u64 - lag)));
    }
    run(&lab, &specs, None, 3000, script).await;
    let fired = lab.triggers();
    assert_eq!(
        fired.len(),
        2,
        "lagging at 200 ms, caught up at 800 ms, lagging again at 1000 ms: {fired:?}"
    );
    assert!(fired
        .iter()
        .all(|f| f["subject"] == "n3" && f["condition"] == "lagging"));
}

#[tokio::test(start_paused = true)]
async fn given_a_stable_window_when_a_trigger_holds_inside_it_should_skip_and_clip_faults_before_it() {
    let lab = FakeLab::default();
    let specs = specs("- {when: {restarted: any}, cooldown: 1s, do: {kind: kill, targets: subject, duration: 5s}}");
    let stable = StableSpec {
        every: Millis(10_000),
        duration: Millis(4000),
    };
    let script = vec![(5000, ready(0)), (7000, ready(1)), (9800, ready(2)), (10_200, ready(1))];
    run(&lab, &specs, Some(stable), 20_000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 4, "{fired:?}");
    assert_eq!(fired[0]["duration_ms"], 1000, "clipped to the window at 6 s: {fired:?}");
    for skipped in &fired[1..3] {
        assert!(
            skipped["skipped"].as_str().unwrap().contains("stable window"),
            "{fired:?}"
        );
    }
    // A skipped firing did nothing, so it starts no cooldown: 400 ms after one, the trigger fires.
    assert_eq!(fired[3]["subject"], "n2");
    assert_eq!(fired[3]["duration_ms"], 5000, "{fired:?}");
}

#[tokio::test(start_paused = true)]
async fn given_an_anchor_window_when_the_condition_holds_before_and_in_it_should_fire_only_inside_it_once() {
    let lab = FakeLab::default();
    // A replayed fault: the second restart of n2, seen about 4 s into the phase.
    let specs = specs(
        "- {when: {restarted: n2}, after: 300ms, max_fires: 1, not_before: 3s, not_after: 6s, \
         do: {kind: kill, targets: [n3], duration: 500ms}}",
    );
    let script = vec![(1000, ready(1)), (2000, ready(2)), (4200, ready(1)), (5000, ready(1))];
    run(&lab, &specs, None, 8000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["subject"], "n2");
    assert_eq!(lab.names(), ["killn3", "triggern2", "startn3"]);
}

#[tokio::test(start_paused = true)]
async fn given_otherwise_when_no_fault_was_applied_by_then_should_apply_it_then_about_the_pinned_node() {
    let lab = FakeLab::default();
    // Durations run past the 10 s phase, so each applied fault's clipped duration says when it started.
    let specs = specs(
        "- {when: {restarted: n2}, max_fires: 1, not_before: 3s, not_after: 6s, otherwise: 6300ms, \
         do: {kind: kill, duration: 60s}}\n\
         - {when: {restarted: n1}, after: 300ms, max_fires: 1, not_before: 3s, not_after: 6s, otherwise: 6300ms, \
         do: {kind: pause, targets: [n3], duration: 2s}}\n\
         - {when: {restarted: n1}, after: 500ms, max_fires: 1, not_before: 3s, not_after: 6s, otherwise: 7s, \
         do: {kind: kill, targets: [n3], duration: 60s}}",
    );
    // n2 restarts only before its window; n1 restarts inside theirs.
    let script = vec![(1000, ready(1)), (4000, ready(0))];
    run(&lab, &specs, None, 10_000, script).await;
    let fired = lab.triggers();
    let shown: Vec<String> = fired
        .iter()
        .map(|f| {
            let how = match (f.get("skipped"), f.get("otherwise")) {
                (Some(_), _) => "skipped".to_string(),
                (None, Some(_)) => format!("otherwise {}", f["duration_ms"]),
                (None, None) => format!("observed {}", f["duration_ms"]),
            };
            format!("{} {} {how}", f["trigger"], f["subject"].as_str().unwrap_or("-"))
        })
        .collect();
    assert_eq!(
        shown,
        [
            // 300 ms after n1's restart: it applied a fault, so its `otherwise` does nothing.
            "1 n1 observed 2000",
            // n3 is paused: skipped, so nothing is applied yet ...
            "2 n1 skipped",
            // ... n2 never restarted in its window: at 6.3 s anyway, about n2.
            "0 n2 otherwise 3700",
            // ... and at 7 s, with n3 resumed at 6.3 s, trigger 2's kill happens.
            "2 n1 otherwise 3000",
        ],
        "{fired:?}"
    );
    assert!(lab.names().contains(&"killn2".to_string()), "{:?}", lab.names());
}

#[tokio::test(start_paused = true)]
async fn given_at_triggers_when_their_offsets_come_should_apply_each_once_then_and_record_no_subject() {
    let lab = FakeLab::default();
    // Durations run past the 10 s phase where they may, so each applied fault's clipped duration says when it
    // started; the observations on the way hold no condition of theirs.
    let specs = specs(
        "- {when: {at: 2s}, do: {kind: kill, targets: primary, duration: 1s}}\n\
         - {when: {at: 4500ms}, after: 500ms, do: {kind: pause, targets: [n3], duration: 60s}}\n\
         - {when: {at: 12s}, do: {kind: kill, targets: [n2], duration: 1s}}",
    );
    let script = vec![(1000, ready(1)), (2500, ready(0)), (6000, ready(2))];
    run(&lab, &specs, None, 10_000, script).await;
    let fired: Vec<String> = lab
        .triggers()
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {} {}",
                f["trigger"], f["condition"], f["subject"], f["delay_ms"], f["duration_ms"]
            )
        })
        .collect();
    // The kill of the primary (n1 in this lab) at 2 s for its second; the pause at 4.5 s + 500 ms, until the
    // phase's end; the one past the phase never.
    assert_eq!(fired, ["0 \"at\" null 0 1000", "1 \"at\" null 500 5000"]);
    assert_eq!(
        lab.names(),
        ["killn1", "trigger", "startn1", "pausen3", "trigger", "resumen3"],
        "{:?}",
        lab.triggers()
    );
}

#[test]
fn given_an_at_trigger_when_validated_should_need_named_targets_and_no_anchor_window() {
    let caps = caps();
    let fine = &specs("- {when: {at: 4s}, do: {kind: kill, targets: primary, duration: 1s}}")[0];
    assert_eq!(fine.validate(&caps), Ok(()));
    let subject = &specs("- {when: {at: 4s}, do: {kind: kill, duration: 1s}}")[0];
    assert!(subject.validate(&caps).unwrap_err().contains("name its targets"));
    let isolate = &specs("- {when: {at: 4s}, do: {kind: partition, shape: isolate-subject, duration: 1s}}")[0];
    assert!(isolate.validate(&caps).unwrap_err().contains("or a shape"));
    let windowed = &specs("- {when: {at: 4s}, not_before: 1s, do: {kind: kill, targets: [n2], duration: 1s}}")[0];
    assert!(windowed.validate(&caps).unwrap_err().contains("nothing to add"));
    let round_trip: Vec<TriggerSpec> = specs(&serde_saphyr::to_string(&vec![fine.clone()]).unwrap());
    assert_eq!(round_trip[0].when, Condition::At(Millis(4000)));
}

#[test]
fn given_otherwise_when_validated_should_need_a_pinned_subject_and_to_come_after_not_before() {
    let caps = caps();
    let early = &specs("- {when: {restarted: n2}, not_before: 6s, otherwise: 5s, do: {kind: kill, duration: 1s}}")[0];
    assert!(early.validate(&caps).unwrap_err().contains("before `not_before"));
    let anyone = &specs("- {when: {restarted: any}, otherwise: 5s, do: {kind: kill, duration: 1s}}")[0];
    assert!(anyone.validate(&caps).unwrap_err().contains("about one node"));
    let named = &specs("- {when: {restarted: any}, otherwise: 5s, do: {kind: kill, targets: [n3], duration: 1s}}")[0];
    assert_eq!(named.validate(&caps), Ok(()));
    let pinned = &specs("- {when: {restarted: n2}, otherwise: 5s, do: {kind: kill, duration: 1s}}")[0];
    assert_eq!(pinned.validate(&caps), Ok(()));
}

#[test]
fn given_an_anchor_window_that_never_opens_when_validated_should_say_why() {
    let caps = caps();
    let bad = &specs("- {when: {restarted: n2}, not_before: 6s, not_after: 3s, do: {kind: kill, duration: 1s}}")[0];
    assert!(bad.validate(&caps).unwrap_err().contains("could never fire"));
    let both =
        &specs("- {when: {restarted: n2}, do: {kind: partition, shape: isolate-subject, cut: [n1->n2], duration: 1s}}")
            [0];
    assert!(both.validate(&caps).unwrap_err().contains("not both"));
    let misplaced = &specs("- {when: {restarted: n2}, do: {kind: kill, cut: [n1->n2], duration: 1s}}")[0];
    assert!(misplaced
        .validate(&caps)
        .unwrap_err()
        .contains("`cut` is for partition"));
    let cut = &specs("- {when: {restarted: n2}, do: {kind: partition, cut: [n1->n2, n3->n2], duration: 1s}}")[0];
    assert_eq!(cut.validate(&caps), Ok(()));
    let takeover = &specs("- {when: {restarted: n2}, do: {kind: kill, takeover: true, duration: 1s}}")[0];
    assert!(takeover
        .validate(&caps)
        .unwrap_err()
        .contains("`takeover` is for partition"));
    let takeover = &specs(
        "- {when: {primary-changed: any}, do: {kind: partition, shape: isolate-subject, takeover: true, duration: 1s}}",
    )[0];
    assert_eq!(takeover.validate(&caps), Ok(()));
}

#[tokio::test(start_paused = true)]
async fn given_a_log_pattern_when_a_line_matches_should_fire_on_that_node_only() {
    let lab = FakeLab::default();
    let specs =
        specs("- {when: {log: {pattern: 'view change start(ed)?', node: n3}}, do: {kind: kill, duration: 100ms}}");
    let line = |node: usize, text: &str| log_line(node, text, &[]);
    let script = vec![
        (10, line(0, "view change started")),
        (20, line(2, "repair done")),
        (30, line(2, "INFO view change started old_view=3")),
    ];
    run(&lab, &specs, None, 1000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0]["subject"], "n3");
}

#[tokio::test(start_paused = true)]
async fn given_a_template_when_a_line_masks_to_it_should_fire_once_and_hit_a_backup_other_than_the_subject() {
    let lab = FakeLab::default();
    let specs = specs(
        "- {when: {template: 'view change started old_view=N new_view=N new_primary=N'}, after: 0ms..50ms, \
         max_fires: 1, shot: 'view change started old_view=N new_view=N new_primary=N => kill@other-backup', \
         do: {kind: kill, targets: other-backup, duration: 100ms}}",
    );
    assert_eq!(specs[0].validate(&caps()), Ok(()));
    let line = |node: usize, text: &str| log_line(node, text, &[]);
    let script = vec![
        // Another template (a prefix of it), then the template with other numbers and a timestamp, on n2.
        (
            10,
            line(2, "2026-12-07T10:00:00.1Z  INFO view change started old_view=3"),
        ),
        (
            20,
            line(
                1,
                "2026-12-07T10:00:00.2Z  INFO view change started old_view=3 new_view=4 new_primary=1",
            ),
        ),
        (
            30,
            line(
                2,
                "2026-12-07T10:00:00.3Z  INFO view change started old_view=4 new_view=5 new_primary=2",
            ),
        ),
    ];
    run(&lab, &specs, None, 1000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 1, "max_fires 1: {fired:?}");
    assert_eq!(
        (fired[0]["subject"].as_str(), fired[0]["condition"].as_str()),
        (Some("n2"), Some("template"))
    );
    assert!(fired[0]["delay_ms"].as_u64().unwrap() <= 50);
    // The primary is n1 (the fake lab's), the subject n2: the other backup is n3.
    let kills: Vec<String> = lab.names().into_iter().filter(|n| n.starts_with("kill")).collect();
    assert_eq!(kills, ["killn3"]);
    let mut no_primary = caps();
    no_primary.primary_probe = false;
    assert!(specs[0]
        .validate(&no_primary)
        .unwrap_err()
        .contains("`other-backup` needs"));
    let empty = &self::specs("- {when: {template: ' '}, do: {kind: kill, duration: 1s}}")[0];
    assert!(empty.validate(&caps()).unwrap_err().contains("`template` is empty"));
}

#[tokio::test(start_paused = true)]
async fn given_adapter_patterns_when_a_node_caught_up_should_fire_repaired_not_repairing_on_that_node() {
    let lab = FakeLab::default();
    let specs = specs("- {when: {repaired: n2}, do: {kind: kill, targets: not-subject, duration: 100ms}}");
    let line = log_line;
    let script = vec![
        (10, line(1, "INFO repair start from_op=7", &["repairing"])),
        (20, line(2, "INFO repair done op=9", &["repaired"])),
        (30, line(1, "INFO repair done op=9", &["repaired"])),
    ];
    run(&lab, &specs, None, 1000, script).await;
    let fired = lab.triggers();
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["subject"], "n2");
    assert_eq!(fired[0]["condition"], "repaired");
    let mut no_pattern = caps();
    no_pattern.repaired_pattern = false;
    let error = specs[0].validate(&no_pattern).unwrap_err();
    assert!(error.contains("`repaired` needs an adapter"), "{error}");
}

/// A line `node` logged now, matching the adapter's `patterns`.
fn log_line(node: usize, text: &str, patterns: &[&'static str]) -> Fact {
    Fact::Log {
        node,
        at: Instant::now(),
        line: text.into(),
        patterns: patterns.to_vec(),
    }
}

fn caps() -> TriggerCapabilities {
    TriggerCapabilities {
        node_count: 3,
        backends: &[BackendKind::Proxy],
        fault_fs: false,
        primary_probe: true,
        durable_progress: true,
        repairing_pattern: true,
        repaired_pattern: true,
    }
}

#[test]
fn given_plan_typos_when_validated_should_name_the_field_and_what_to_do() {
    let error = |yaml: &str| specs(yaml)[0].validate(&caps()).unwrap_err();
    assert!(error("- {when: {restarted: n4}, do: {kind: kill, duration: 1s}}").contains("not a node of this 3-node"));
    assert!(
        error("- {when: {restarted: any}, do: {kind: kill, shape: bridge, duration: 1s}}")
            .contains("`shape` is for partition")
    );
    assert!(error("- {when: {restarted: any}, do: {kind: partition, duration: 1s}}").contains("needs `shape`"));
    assert!(error("- {when: {restarted: any}, do: {kind: power-loss, duration: 1s}}").contains("fault_fs: true"));
    assert!(error("- {when: {log: 'a(b'}, do: {kind: kill, duration: 1s}}").contains("does not compile"));
    assert!(error("- {when: {restarted: any}, probability: 1.5, do: {kind: kill, duration: 1s}}").contains("(0, 1]"));
    let parse = |yaml: &str| {
        serde_saphyr::from_str::<Vec<TriggerSpec>>(yaml)
            .unwrap_err()
            .to_string()
    };
    assert!(parse("- {when: {restartd: any}, do: {kind: kill, duration: 1s}}").contains("restartd"));
    assert!(
        parse("- {when: {restarted: any}, do: {kind: kill, targets: primery, duration: 1s}}")
            .contains("unknown target")
    );
    let ok = specs(
        "- {when: {primary-changed: any}, do: {kind: partition, shape: isolate-subject, duration: 1s..2s}}\n\
         - {when: {repairing: n2}, after: 0ms..500ms, do: {kind: link, fault: {kind: delay, latency: 50ms}, duration: 1s}}\n\
         - {when: {lagging: {by: 3}}, do: {kind: kill, targets: [n1, n2], duration: 1s}}",
    );
    for spec in &ok {
        spec.validate(&caps()).unwrap();
    }
    let yaml = serde_saphyr::to_string(&ok).unwrap();
    assert_eq!(
        serde_saphyr::from_str::<Vec<TriggerSpec>>(&yaml).unwrap(),
        ok,
        "the resolved plan round-trips: {yaml}"
    );
}

#[test]
fn given_a_rolling_fault_in_a_trigger_when_validated_should_refuse_it_and_say_where_it_belongs() {
    for kind in [
        "stop",
        "kill",
        "corrupt, cuts: [{op: delete-file, files: wal}]",
        "io, faults: {eio: []}",
    ] {
        let yaml = format!("- {{when: {{restarted: any}}, do: {{kind: {kind}, targets: each, duration: 1s}}}}");
        let mut caps = caps();
        caps.fault_fs = true;
        let error = specs(&yaml)[0].validate(&caps).unwrap_err();
        assert!(
            error.contains("`targets: each`") && error.contains("cannot be triggered"),
            "{kind}: {error}"
        );
        assert!(error.contains("`nemesis.process.faults` or `script`"), "{error}");
    }
}
