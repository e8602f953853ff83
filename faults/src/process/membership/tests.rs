use super::*;
use crate::disk::spec::SurgerySpec;
use crate::interpreter::{Families, NoFaults};
use crate::process::{NodeHolds, Pool, Resolved, SetSize, Source};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

/// Five nodes, `members` in the cluster; a change is applied at once and always succeeds, a removed node stopped.
struct MembersLab {
    members: Mutex<BTreeSet<usize>>,
    log: Mutex<Vec<String>>,
}

impl MembersLab {
    fn new(members: &[usize]) -> MembersLab {
        MembersLab {
            members: Mutex::new(members.iter().copied().collect()),
            log: Mutex::default(),
        }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Lab for MembersLab {
    fn node_count(&self) -> usize {
        5
    }
    async fn primary(&self) -> Option<usize> {
        self.members.lock().unwrap().iter().next().copied()
    }
    async fn next_primary(&self) -> Option<usize> {
        None
    }
    async fn kill(&self, node: usize) -> Result<Value, String> {
        self.log.lock().unwrap().push(format!("kill n{}", node + 1));
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
    async fn stop(&self, _: usize, _: Duration) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn cut(&self, _: usize, _: &SurgerySpec) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn ready_again(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    fn members(&self) -> Vec<usize> {
        self.members.lock().unwrap().iter().copied().collect()
    }
    async fn change_membership(&self, step: MembershipStep, node: usize) -> Result<Value, String> {
        let mut members = self.members.lock().unwrap();
        match step {
            MembershipStep::Add => members.insert(node),
            MembershipStep::Remove => members.remove(&node),
        };
        Ok(json!({"outcome": "ok", "members": members.iter().collect::<Vec<_>>()}))
    }
    fn record(&self, name: Nemesis, node: usize, value: Value) {
        let what = match (&value["step"], &value["outcome"]) {
            (Value::String(step), Value::String(outcome)) => format!(" {step} {outcome}"),
            _ => String::new(),
        };
        self.log.lock().unwrap().push(format!("{name} n{}{what}", node + 1));
    }

    fn record_cluster(&self, name: Nemesis, value: Value) {
        self.log.lock().unwrap().push(format!("{name} {}", value["reason"]));
    }
}

fn membership(id: u64, start_ms: u64, duration_ms: u64, change: MembershipChange, nodes: Resolved) -> ScheduledFault {
    ScheduledFault {
        id,
        start_ms,
        duration_ms,
        kind: ProcessFault::Membership,
        target: "one".into(),
        nodes,
        source: Source::Scripted,
        trigger: None,
        detail: super::super::FaultDetail {
            change: Some(change),
            ..Default::default()
        },
    }
}

async fn run(lab: &MembersLab, schedule: &[ScheduledFault], holds: NodeHolds) {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let mut families = Families {
        process: ProcessFaults::shared(lab, schedule, holds),
        network: NoFaults,
        io: NoFaults,
    };
    families.run(tokio::time::Instant::now(), rx).await;
}

#[tokio::test(start_paused = true)]
async fn given_add_remove_and_replace_when_run_should_take_a_spare_a_member_and_bring_the_replaced_one_back() {
    let lab = MembersLab::new(&[0, 1, 2]);
    let among = |pick| Resolved::Among {
        size: SetSize::One,
        pick,
    };
    let schedule = vec![
        membership(0, 10, 1, MembershipChange::Add, among(7)),
        membership(1, 20, 1, MembershipChange::Remove, Resolved::Nodes(vec![1])),
        membership(2, 30, 500, MembershipChange::Replace, Resolved::Nodes(vec![2])),
        // n3 is out (held by the replace) meanwhile: a kill drawn among the members never takes it.
        ScheduledFault {
            kind: ProcessFault::Kill,
            detail: Default::default(),
            ..membership(
                3,
                100,
                50,
                MembershipChange::Add,
                Resolved::Among {
                    size: SetSize::All,
                    pick: 1,
                },
            )
        },
    ];
    run(&lab, &schedule, NodeHolds::with_members(5, &[0, 1, 2])).await;
    let log = lab.log();
    let added = log[0].clone();
    assert!(
        added == "membership n4 add ok" || added == "membership n5 add ok",
        "{log:?}"
    );
    assert_eq!(log[1], "membership n2 remove ok");
    assert_eq!(log[2], "membership n3 remove ok");
    assert!(
        !log.iter()
            .any(|line| line.starts_with("kill n3") || line.starts_with("kill n2")),
        "{log:?}"
    );
    assert_eq!(
        log.last().unwrap(),
        "membership n3 add ok",
        "the replaced node comes back when it ends: {log:?}"
    );
    assert_eq!(lab.members().len(), 3, "3 + 1 - 1, and the replaced one back");
}

#[tokio::test(start_paused = true)]
async fn given_two_members_when_one_is_removed_should_skip_it_and_record_why() {
    let lab = MembersLab::new(&[0, 1]);
    let schedule = vec![membership(0, 10, 1, MembershipChange::Remove, Resolved::Nodes(vec![1]))];
    run(&lab, &schedule, NodeHolds::with_members(5, &[0, 1])).await;
    assert_eq!(lab.log(), ["membership n2 remove skipped"]);
    assert_eq!(lab.members(), [0, 1]);
    let lab = MembersLab::new(&[0, 1, 2, 3, 4]);
    let schedule = vec![membership(
        0,
        10,
        1,
        MembershipChange::Add,
        Resolved::Among {
            size: SetSize::One,
            pick: 3,
        },
    )];
    run(&lab, &schedule, NodeHolds::new(5)).await;
    assert_eq!(lab.log(), ["membership n1 add skipped"], "no spare node to add");
}

#[test]
fn given_member_counts_when_removing_one_should_keep_the_quorum_of_the_old_configuration_only_from_three() {
    let keeps: Vec<bool> = (0..6).map(removal_keeps_quorum).collect();
    assert_eq!(keeps, [false, false, false, true, true, true]);
}

#[test]
fn given_a_pool_whose_members_change_when_generating_should_draw_random_targets_when_each_fault_starts() {
    use crate::process::{generate_in, ProcessNemesisSpec, ScriptedFaultSpec, Target};
    let unknown = serde_saphyr::Location::UNKNOWN;
    let script = |kind, change| ScriptedFaultSpec {
        at: crate::units::Millis(10),
        kind,
        targets: serde_saphyr::Spanned::new(Target::One, unknown, unknown),
        duration: crate::units::Millis(100),
        grace: None,
        stop: None,
        cuts: vec![],
        bump: None,
        strobe: None,
        skew: None,
        change,
    };
    let spec = ProcessNemesisSpec {
        script: vec![
            script(ProcessFault::Kill, None),
            script(ProcessFault::Membership, Some(MembershipChange::Add)),
        ],
        ..Default::default()
    };
    let mut rng = crate::rng::stream(1, "nemesis");
    let dynamic = generate_in(
        &spec,
        Pool {
            nodes: 5,
            dynamic: true,
        },
        1000,
        &mut rng,
    );
    assert!(dynamic
        .iter()
        .all(|f| matches!(f.nodes, Resolved::Among { size: SetSize::One, .. })));
    let fixed = generate_in(&spec, Pool::fixed(5), 1000, &mut crate::rng::stream(1, "nemesis"));
    assert!(
        fixed.iter().all(|f| matches!(f.nodes, Resolved::Nodes(_))),
        "a fixed pool draws as before"
    );
}

#[tokio::test(start_paused = true)]
async fn given_a_replace_when_the_phase_stops_while_its_node_is_out_should_add_it_back_and_begin_no_later_change() {
    let lab = MembersLab::new(&[0, 1, 2]);
    let schedule = vec![
        membership(0, 10, 10_000, MembershipChange::Replace, Resolved::Nodes(vec![1])),
        membership(1, 20_000, 1, MembershipChange::Add, Resolved::Nodes(vec![3])),
    ];
    let holds = NodeHolds::with_members(5, &[0, 1, 2]);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut changes = MembershipFaults::shared(&lab, &schedule, holds.clone());
    let stopper = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(holds.is_out(3) && !holds.is_free(1), "n2 is held out by the replace");
        tx.send(true).unwrap();
    };
    tokio::join!(changes.run(tokio::time::Instant::now(), rx), stopper);
    assert_eq!(lab.log(), ["membership n2 remove ok", "membership n2 add ok"]);
    assert!(holds.is_free(1), "back and free");
}
