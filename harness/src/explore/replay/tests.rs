//! Tests of replay: recorded faults read from histories, and the scripted plans made of them.

use super::script::{exactly, spanned};
use super::*;
use faultline_faults::process::Target;
use faultline_faults::trigger::{TriggerSpec, TriggerTarget, TriggeredKind};
use faultline_workloads::history::Name;
use serde_json::json;

/// A history event `ms` after the run started.
fn at(ms: u64, name: Name, node: Option<&str>, value: Value) -> Event {
    let mut event = Event::named(name, node.map(str::to_string), value);
    event.time_ns = ms * 1_000_000;
    event
}

fn history() -> Vec<Event> {
    let mut events = vec![
        at(0, Meta::RunStart.into(), None, json!({"seed": 5})),
        // The cluster's first boot is before the fault phase: nothing follows it.
        at(900, Lifecycle::BootOk.into(), Some("n1"), json!({})),
        at(1000, Meta::Schedule.into(), None, json!({})),
        at(
            2000,
            Nemesis::Kill.into(),
            Some("n1"),
            json!({"fault_id": 1, "target": "primary"}),
        ),
        at(3500, Nemesis::Start.into(), Some("n1"), json!({"fault_id": 1})),
        // A triggered kill: the trigger saw n3 restart, waited 200 ms, and took 3 ms to act.
        at(
            5000,
            Nemesis::Kill.into(),
            Some("n2"),
            json!({"fault_id": 1_000_000, "target": "[n2]", "trigger": 0}),
        ),
        at(
            5001,
            Nemesis::Trigger.into(),
            Some("n3"),
            json!({"trigger": 0, "condition": "restarted", "subject": "n3", "delay_ms": 200, "latency_ms": 3,
                   "fault_id": 1_000_000}),
        ),
        at(
            5500,
            Nemesis::Trigger.into(),
            Some("n1"),
            json!({"trigger": 1, "skipped": "held"}),
        ),
        at(6000, Nemesis::Start.into(), Some("n2"), json!({"fault_id": 1_000_000})),
        // n2 is ready again: the kill of n2 1 s later follows that restart; the partition does not (it is not
        // a fault on n2).
        at(6500, Lifecycle::BootOk.into(), Some("n2"), json!({})),
        at(
            7000,
            Nemesis::PartitionStart.into(),
            None,
            json!({"fault_id": 2, "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}}),
        ),
        at(
            7500,
            Nemesis::Kill.into(),
            Some("n2"),
            json!({"fault_id": 5, "target": "one"}),
        ),
        at(7800, Nemesis::Start.into(), Some("n2"), json!({"fault_id": 5})),
        at(
            8000,
            Nemesis::LinkFault.into(),
            None,
            json!({"fault_id": 3, "fault": {"kind": "reset"}, "links": ["n1->n2"]}),
        ),
        at(8300, Nemesis::LinkHeal.into(), None, json!({"fault_id": 3})),
        at(
            8500,
            Nemesis::Kill.into(),
            Some("n3"),
            json!({"fault_id": 4, "target": "one", "error": "no such process"}),
        ),
        at(9000, Nemesis::PartitionStop.into(), None, json!({"fault_id": 2})),
        at(12_000, Lifecycle::FaultPhaseEnd.into(), None, json!({})),
        // The final phase's kills are not faults of the phase.
        at(
            13_000,
            Nemesis::Kill.into(),
            Some("n1"),
            json!({"fault_id": 9, "target": "one"}),
        ),
    ];
    for (i, event) in events.iter_mut().enumerate() {
        event.index = i as u64;
    }
    events
}

#[test]
fn given_a_history_when_read_should_give_every_applied_fault_with_roles_kept_and_triggers_anchored() {
    let plan = Plan::default_plan();
    let recorded = recorded_faults(&plan, &history()).unwrap();
    assert_eq!(recorded.seed, 5);
    assert_eq!(recorded.phase_ms, 11_000);
    let shown: Vec<String> = recorded.faults.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "kill primary at 1s for 1.5s",
            "kill [n2] at 4s for 1s (after restarted n3 + 200ms)",
            "cut n2->n1, n3->n1, n1->n2, n1->n3 at 6s for 2s",
            "kill [n2] at 6.5s for 300ms (after restarted n2 + 1s)",
            "link reset on n1->n2 at 7s for 300ms",
        ]
    );
    let anchor = recorded.faults[1].anchor.as_ref().unwrap();
    assert_eq!((anchor.trigger, anchor.observed_ms), (Some(0), 3797));
    let anchor = recorded.faults[3].anchor.as_ref().unwrap();
    assert_eq!((anchor.trigger, anchor.observed_ms), (None, 5500));
}

#[test]
fn given_a_fault_a_trigger_applied_without_its_observation_when_read_should_replay_at_its_offset() {
    let plan = Plan::default_plan();
    let mut events = history();
    let fired = events
        .iter_mut()
        .find(|e| e.value["condition"] == "restarted" && e.value["fault_id"] == 1_000_000)
        .unwrap();
    fired.value["otherwise"] = json!(true);
    let recorded = recorded_faults(&plan, &events).unwrap();
    assert_eq!(recorded.faults[1].to_string(), "kill [n2] at 4s for 1s");
    assert_eq!(recorded.faults[1].anchor, None);
}

#[test]
fn given_a_fault_of_an_at_trigger_when_read_should_replay_at_its_offset() {
    let mut plan = Plan::default_plan();
    let at: Vec<TriggerSpec> =
        serde_saphyr::from_str("- {when: {at: 4s}, do: {kind: kill, targets: [n2], duration: 1s}}").unwrap();
    plan.nemesis.triggers = at.into_iter().map(spanned).collect();
    let mut events = history();
    let fired = events
        .iter_mut()
        .find(|e| e.value["condition"] == "restarted" && e.value["fault_id"] == 1_000_000)
        .unwrap();
    fired.value["condition"] = json!("at");
    fired.value["subject"] = Value::Null;
    let recorded = recorded_faults(&plan, &events).unwrap();
    assert_eq!(recorded.faults[1].to_string(), "kill [n2] at 4s for 1s");
    assert_eq!(recorded.faults[1].anchor, None, "it followed no observation");
}

#[test]
fn given_recorded_faults_when_scripted_should_be_a_valid_plan_that_applies_exactly_them() {
    let plan = Plan::default_plan();
    let recorded = recorded_faults(&plan, &history()).unwrap();
    let scripted = scripted_plan(&plan, &recorded.faults, recorded.seed, "replay of somewhere".into());
    let yaml = scripted.to_yaml();
    let back = Plan::parse(&yaml, "the replay").unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    assert_eq!(back.seed, Some(5));
    assert_eq!(back.origin.as_deref(), Some("replay of somewhere"));
    let process = &back.nemesis.process.as_ref().unwrap().value;
    assert!(process.faults.is_empty() && process.flaps.is_none());
    assert_eq!(process.script.len(), 1);
    assert_eq!(process.script[0].targets.value, Target::Primary);
    let network = &back.nemesis.network.as_ref().unwrap().value;
    assert!(network.partitions.is_empty() && network.links.is_empty());
    assert_eq!(network.script.len(), 2);
    assert_eq!(back.nemesis.triggers.len(), 2);
    let trigger = &back.nemesis.triggers[0].value;
    assert_eq!(trigger.when, Condition::Restarted(NodeFilter::Node(2)));
    assert_eq!(trigger.max_fires, Some(1));
    assert_eq!(trigger.not_before, Some(Millis(1797)));
    assert_eq!(trigger.not_after, Some(Millis(5797)));
    assert_eq!(trigger.after, Some(exactly(200)));
    // Without the observation, the fault comes as if it had come at the window's end.
    assert_eq!(trigger.otherwise, Some(Millis(5997)));
    assert!(
        network.script.iter().filter(|s| !s.cut.is_empty()).all(|s| s.takeover),
        "a replayed cut replaces whatever partition lingers"
    );
    let kill = &back.nemesis.triggers[1].value;
    assert_eq!(kill.when, Condition::Restarted(NodeFilter::Node(1)));
    assert_eq!(kill.after, Some(exactly(1000)));
    assert_eq!(kill.action.kind, TriggeredKind::Kill);
    assert_eq!(
        kill.action.targets,
        Some(TriggerTarget::Target(Target::Nodes(vec!["n2".into()])))
    );
}

#[test]
fn given_a_triggered_partition_that_took_over_when_replayed_should_take_over_again() {
    let mut events = vec![
        at(0, Meta::RunStart.into(), None, json!({"seed": 5})),
        at(1000, Meta::Schedule.into(), None, json!({})),
        at(
            2000,
            Nemesis::PartitionStart.into(),
            None,
            json!({"fault_id": 2, "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}}),
        ),
        // n2 became primary; the trigger moved the partition onto it.
        at(
            4000,
            Nemesis::PartitionStop.into(),
            None,
            json!({"fault_id": 2, "replaced_by": 1_000_000}),
        ),
        at(
            4000,
            Nemesis::PartitionStart.into(),
            None,
            json!({"fault_id": 1_000_000, "replaced": 2,
                   "grudge": {"n2": ["n1", "n3"], "n1": ["n2"], "n3": ["n2"]}}),
        ),
        at(
            4001,
            Nemesis::Trigger.into(),
            Some("n2"),
            json!({"trigger": 6, "condition": "primary-changed", "subject": "n2", "delay_ms": 500,
                   "latency_ms": 1, "fault_id": 1_000_000}),
        ),
        at(
            7000,
            Nemesis::PartitionStop.into(),
            None,
            json!({"fault_id": 1_000_000}),
        ),
        at(9000, Lifecycle::FaultPhaseEnd.into(), None, json!({})),
    ];
    for (i, event) in events.iter_mut().enumerate() {
        event.index = i as u64;
    }
    let plan = Plan::default_plan();
    let recorded = recorded_faults(&plan, &events).unwrap();
    let shown: Vec<String> = recorded.faults.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "cut n2->n1, n3->n1, n1->n2, n1->n3 at 1s for 2s",
            "cut n2->n1, n1->n2, n3->n2, n2->n3 (replacing the partition in force) at 3s for 3s \
             (after primary-changed to n2 + 500ms)",
        ]
    );
    let scripted = scripted_plan(&plan, &recorded.faults, 5, "replay".into());
    let back = Plan::parse(&scripted.to_yaml(), "the replay").unwrap();
    assert_eq!(back.nemesis.network.as_ref().unwrap().value.script.len(), 1);
    let trigger = &back.nemesis.triggers[0].value;
    assert_eq!(trigger.when, Condition::PrimaryChanged(NodeFilter::Node(1)));
    assert!(trigger.action.takeover && trigger.action.kind == TriggeredKind::Partition);
}

#[test]
fn given_a_triggered_partition_that_found_the_network_healed_when_replayed_should_still_take_over() {
    let mut events = vec![
        at(0, Meta::RunStart.into(), None, json!({"seed": 5})),
        at(1000, Meta::Schedule.into(), None, json!({})),
        at(
            2000,
            Nemesis::PartitionStart.into(),
            None,
            json!({"fault_id": 2, "grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}}),
        ),
        at(3900, Nemesis::PartitionStop.into(), None, json!({"fault_id": 2})),
        at(
            4000,
            Nemesis::PartitionStart.into(),
            None,
            json!({"fault_id": 1_000_000, "grudge": {"n2": ["n1", "n3"], "n1": ["n2"], "n3": ["n2"]}}),
        ),
        at(
            4001,
            Nemesis::Trigger.into(),
            Some("n2"),
            json!({"trigger": 0, "condition": "primary-changed", "subject": "n2", "delay_ms": 100,
                   "latency_ms": 1, "fault_id": 1_000_000}),
        ),
        at(
            6000,
            Nemesis::PartitionStop.into(),
            None,
            json!({"fault_id": 1_000_000}),
        ),
        at(9000, Lifecycle::FaultPhaseEnd.into(), None, json!({})),
    ];
    for (i, event) in events.iter_mut().enumerate() {
        event.index = i as u64;
    }
    let plan = Plan::default_plan();
    let recorded = recorded_faults(&plan, &events).unwrap();
    assert!(
        !recorded.faults[1].to_string().contains("replacing"),
        "the record says what happened: {}",
        recorded.faults[1]
    );
    let scripted = scripted_plan(&plan, &recorded.faults, 5, "replay".into());
    let back = Plan::parse(&scripted.to_yaml(), "the replay").unwrap();
    let trigger = &back.nemesis.triggers[0].value;
    assert!(
        trigger.action.takeover,
        "a replay whose observation comes while the earlier cut still holds must not skip the fault"
    );
}

#[test]
fn add_node_keeps_node_order() {
    assert_eq!(add_node("", 2), "[n3]");
    assert_eq!(add_node("[n3]", 0), "[n1, n3]");
    assert_eq!(add_node("[n1, n3]", 0), "[n1, n3]");
}

#[test]
fn seconds_reads_well() {
    assert_eq!(seconds(300), "300ms");
    assert_eq!(seconds(2000), "2s");
    assert_eq!(seconds(1250), "1.25s");
}

/// A rolling graceful restart whose second node restarted right before the next step: it replays as one rolling
/// fault at its offset with each node's time down (not as one stop of every node for the whole span), and is never
/// anchored to a restart (triggers cannot aim a rolling fault).
#[test]
fn given_a_rolling_restart_when_replayed_should_be_one_rolling_fault_with_its_time_down_per_node() {
    let plan = Plan::default_plan();
    let mut events = vec![
        at(0, Meta::RunStart.into(), None, json!({"seed": 5})),
        at(1000, Meta::Schedule.into(), None, json!({})),
    ];
    for (i, node) in ["n1", "n2", "n3"].into_iter().enumerate() {
        let t = 3000 + 1500 * i as u64;
        let step = json!({"step": i + 1, "of": 3, "down_ms": 1000});
        let down = json!({"fault_id": 4, "target": "each", "source": "scripted", "rolling": step, "grace_ms": 5000});
        let again = json!({"fault_id": 4, "rolling": step});
        events.push(at(t, Nemesis::Stop.into(), Some(node), down));
        events.push(at(t + 1000, Nemesis::Start.into(), Some(node), again.clone()));
        events.push(at(t + 1100, Lifecycle::BootOk.into(), Some(node), json!({})));
        events.push(at(t + 1200, Nemesis::RollingReady.into(), Some(node), again));
    }
    events.push(at(9000, Lifecycle::FaultPhaseEnd.into(), None, json!({})));
    let recorded = recorded_faults(&plan, &events).unwrap();
    let shown: Vec<String> = recorded.faults.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["stop each at 2s for 1s"]);
    assert_eq!(recorded.faults[0].anchor, None);
    let scripted = scripted_plan(&plan, &recorded.faults, recorded.seed, "replay".into());
    let back = Plan::parse(&scripted.to_yaml(), "the replay").unwrap();
    let script = &back.nemesis.process.as_ref().unwrap().value.script;
    assert_eq!(script.len(), 1);
    assert_eq!(
        (
            script[0].kind,
            &script[0].targets.value,
            script[0].duration,
            script[0].grace
        ),
        (ProcessFault::Stop, &Target::Each, Millis(1000), Some(Millis(5000)))
    );
}

#[test]
fn given_a_guided_runs_shots_when_read_should_pin_their_nodes_and_keep_an_at_shot_at_its_offset() {
    let mut plan = Plan::default_plan();
    let shots: Vec<TriggerSpec> = serde_saphyr::from_str(
        "- {when: {at: 6500ms}, max_fires: 1, shot: kill@primary, do: {kind: kill, targets: primary, duration: 2s}}\n\
         - {when: {template: 'view change started old_view=N'}, after: 0ms..50ms, max_fires: 1, \
            shot: 'view change started old_view=N => kill@other-backup', \
            do: {kind: kill, targets: other-backup, duration: 2s}}",
    )
    .unwrap();
    plan.nemesis.triggers = shots.into_iter().map(spanned).collect();
    let mut events = vec![
        at(0, Meta::RunStart.into(), None, json!({"seed": 5})),
        at(1000, Meta::Schedule.into(), None, json!({})),
        // n2 was ready again 1 s before the timed shot hit it: a timed kill would follow that restart; the shot's
        // did not, and replays at its offset.
        at(6500, Lifecycle::BootOk.into(), Some("n2"), json!({})),
        at(
            7500,
            Nemesis::Kill.into(),
            Some("n2"),
            json!({"fault_id": 1_000_001, "target": "primary", "trigger": 0}),
        ),
        at(
            7501,
            Nemesis::Trigger.into(),
            None,
            json!({"trigger": 0, "condition": "at", "fault_id": 1_000_001, "delay_ms": 0, "latency_ms": 0}),
        ),
        at(8000, Nemesis::Start.into(), Some("n2"), json!({"fault_id": 1_000_001})),
        at(
            9000,
            Nemesis::Kill.into(),
            Some("n3"),
            json!({"fault_id": 1_000_002, "target": "other-backup", "trigger": 1}),
        ),
        at(
            9001,
            Nemesis::Trigger.into(),
            Some("n1"),
            json!({"trigger": 1, "condition": "template", "subject": "n1", "delay_ms": 20, "latency_ms": 5,
                   "fault_id": 1_000_002}),
        ),
        at(9500, Nemesis::Start.into(), Some("n3"), json!({"fault_id": 1_000_002})),
        at(12_000, Lifecycle::FaultPhaseEnd.into(), None, json!({})),
    ];
    for (i, event) in events.iter_mut().enumerate() {
        event.index = i as u64;
    }
    let recorded = recorded_faults(&plan, &events).unwrap();
    let shown: Vec<String> = recorded.faults.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "kill [n2] at 6.5s for 500ms",
            "kill [n3] at 8s for 500ms (after template \"view change started old_view=N\" on n1 + 20ms)",
        ]
    );
    let replay = scripted_plan(&plan, &recorded.faults, 5, "test".into());
    let text = replay.to_yaml();
    Plan::parse(&text, "replay").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(text.contains("template:"), "{text}");
}
