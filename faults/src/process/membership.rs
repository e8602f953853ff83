//! Membership changes as process faults: who is a member of the cluster changes while it runs.
//!
//! ```yaml
//! system: {kind: reference, nodes: 5, members: 3}     # n1..n3 members, n4 and n5 spares
//! nemesis:
//!   process:
//!     script:
//!       - {at: 5s, kind: membership, change: add, targets: one}            # a spare joins (3 -> 4)
//!       - {at: 20s, kind: membership, change: remove, targets: primary}     # the primary leaves (4 -> 3)
//!       - {at: 30s, kind: membership, change: replace, targets: backup, duration: 2s}
//! ```
//!
//! - `add` takes a spare node (one that is no member: `one` draws among the spares, or name it), which the lab
//!   prepares as a fresh joiner (a wipe), starts and asks the system to add, in the order its adapter needs.
//! - `remove` takes a member (`one` among the members, `primary`, `backup`, named): the system is asked to remove
//!   it, and the lab stops it once it is out.
//! - `replace` removes a member when the fault starts, keeps it out for `duration`, then adds it back wiped: the
//!   operator's replacement of a failed disk's node.
//!
//! A change is one step of one node (a `replace` is two), applied only to a node no other fault holds, and only
//! when it leaves at least the quorum of the configuration it changes (a removal from two members would need the
//! removed one to commit); otherwise it is skipped, and the skip is recorded. Each step is a `membership` nemesis
//! event with its outcome (`ok`, `fail`: definitely not applied, `info`: unknown) and the members the system lists
//! after it, whatever the outcome. Random targets are drawn among the members of the moment the change starts
//! ([`super::Resolved::Among`]), and so are the other faults' in a plan with membership changes.
//!
//! **Timing.** A change waits for the cluster (a reconfiguration commits through a quorum, a joiner boots), seconds
//! under a partition, so the timed schedule's changes are not windows of the [timed
//! interpreter](crate::interpreter), whose steps run one at a time: [`MembershipFaults`] applies them beside it, one
//! change after another from each one's start offset (a change due while another still runs starts when that one
//! ends; a `replace` runs until its node is back), sharing the [`NodeHolds`]. When the fault phase stops, a node a
//! `replace` holds out is added back at once, and the changes not begun are not done. A triggered change runs in
//! the trigger engine, which waits for it.

use super::{fault_value, merge, Lab, NodeHolds, NodeState, ProcessFault, ProcessFaults, ScheduledFault};
use faultline_workloads::history::Nemesis;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a change waits for a node it may take (a primary while a view change elects one, a member another
/// fault holds) before it is skipped.
pub const TARGET_WAIT_MAX: Duration = Duration::from_secs(5);
/// How often it looks again meanwhile.
const TARGET_POLL: Duration = Duration::from_millis(200);

/// What a membership fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MembershipChange {
    /// A spare node joins.
    Add,
    /// A member leaves (and is stopped).
    Remove,
    /// A member leaves, is wiped, and joins again when the fault ends.
    Replace,
}

/// One step of a membership change, as the lab applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MembershipStep {
    /// Prepare the node as a fresh joiner, start it, add it.
    Add,
    /// Remove the node, stop it.
    Remove,
}

impl MembershipStep {
    fn name(self) -> &'static str {
        match self {
            MembershipStep::Add => "add",
            MembershipStep::Remove => "remove",
        }
    }
}

/// Whether removing one of `members` members still leaves the quorum of the configuration it changes: the removal
/// commits in the old configuration, whose quorum the remaining members must make up without the removed one.
pub fn removal_keeps_quorum(members: usize) -> bool {
    // The members left (`members - 1`) must number at least the quorum (`members / 2 + 1`).
    members > members / 2 + 1
}

/// Splits a schedule into its membership changes ([`MembershipFaults`]') and the rest, each keeping its id.
pub fn split_membership(schedule: Vec<ScheduledFault>) -> (Vec<ScheduledFault>, Vec<ScheduledFault>) {
    schedule
        .into_iter()
        .partition(|fault| fault.kind == ProcessFault::Membership)
}

/// The applier of a fault phase's timed membership changes (see the module doc).
pub struct MembershipFaults<'a, L> {
    process: ProcessFaults<'a, L>,
    faults: &'a [ScheduledFault],
}

impl<'a, L: Lab> MembershipFaults<'a, L> {
    /// The membership changes of `faults` on `lab`, sharing `holds` with the phase's other appliers.
    pub fn shared(lab: &'a L, faults: &'a [ScheduledFault], holds: NodeHolds) -> MembershipFaults<'a, L> {
        MembershipFaults {
            process: ProcessFaults::shared(lab, &[], holds),
            faults,
        }
    }

    /// Applies each change from its start offset (after the one before it ended) until all are done or `stop` is
    /// set; a `replace` still holding its node out then adds it back.
    pub async fn run(&mut self, phase_start: Instant, mut stop: watch::Receiver<bool>) {
        let faults = self.faults;
        for fault in faults.iter().filter(|fault| fault.kind == ProcessFault::Membership) {
            let at = phase_start + Duration::from_millis(fault.start_ms);
            if until_stopped(&mut stop, at).await {
                return;
            }
            self.process.start_fault(fault).await;
            if !self.process.holds(fault.id) {
                continue;
            }
            let end = phase_start + Duration::from_millis(fault.end_ms());
            let stopped = until_stopped(&mut stop, end).await;
            self.process.end_fault(fault.id).await;
            if stopped {
                return;
            }
        }
    }
}

/// Sleeps until `at`; true when `stop` is set (or its sender gone) first.
async fn until_stopped(stop: &mut watch::Receiver<bool>, at: Instant) -> bool {
    tokio::select! {
        biased;
        _ = async { stop.wait_for(|stopped| *stopped).await.is_ok() } => true,
        _ = tokio::time::sleep_until(at) => false,
    }
}

impl<L: Lab> ProcessFaults<'_, L> {
    /// Starts a membership fault on the first of `candidates` it may take (a spare for `add`, a free member for the
    /// others), and records the step.
    pub(super) async fn start_membership(&mut self, fault: &ScheduledFault, candidates: Vec<usize>) {
        let Some(change) = fault.detail.change else {
            debug_assert!(false, "a membership fault without its change: {fault:?}");
            return;
        };
        let step = match change {
            MembershipChange::Add => MembershipStep::Add,
            MembershipChange::Remove | MembershipChange::Replace => MembershipStep::Remove,
        };
        let members = self.lab.members();
        let skipped = if step == MembershipStep::Remove && !removal_keeps_quorum(members.len()) {
            Some(format!(
                "removing one of {} members would leave fewer than the quorum of their configuration",
                members.len()
            ))
        } else {
            None
        };
        let mut candidates = candidates;
        let mut claimed = None;
        if skipped.is_none() {
            let deadline = Instant::now() + TARGET_WAIT_MAX;
            loop {
                claimed = self.claim_first(&candidates, step, fault.id);
                if claimed.is_some() || Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(TARGET_POLL).await;
                candidates = self.candidates(fault).await.unwrap_or_default();
            }
        }
        let Some(node) = claimed else {
            let waited = TARGET_WAIT_MAX.as_secs();
            let reason = skipped.unwrap_or_else(|| match step {
                MembershipStep::Add => {
                    format!("no spare node among {candidates:?} within {waited} s (every node is a member or held)")
                }
                MembershipStep::Remove => {
                    format!("no member among {candidates:?} that no other fault held within {waited} s")
                }
            });
            let mut value = fault_value(fault);
            value["change"] = json!(change);
            value["step"] = json!(step.name());
            value["outcome"] = json!("skipped");
            value["skipped"] = json!(reason);
            let node = candidates.first().copied().unwrap_or(0);
            self.lab.record(Nemesis::Membership, node, value);
            return;
        };
        let mut value = fault_value(fault);
        value["change"] = json!(change);
        let member = self.step_recorded(step, node, value).await;
        let holds = change == MembershipChange::Replace && !member;
        self.settle(node, member, holds.then_some(fault.id));
        if holds {
            self.holding.insert(fault.id, (ProcessFault::Membership, vec![node]));
        }
    }

    /// The end of a `replace`: the node it holds out joins again.
    pub(super) async fn end_membership(&mut self, fault_id: u64, nodes: Vec<usize>) {
        for node in nodes {
            let value = json!({"fault_id": fault_id, "change": MembershipChange::Replace});
            let member = self.step_recorded(MembershipStep::Add, node, value).await;
            self.settle(node, member, None);
        }
    }

    /// Applies one step to `node` and records it (`value`: what the record says of the fault); whether `node` is a
    /// member after it.
    async fn step_recorded(&self, step: MembershipStep, node: usize, mut value: Value) -> bool {
        value["step"] = json!(step.name());
        match self.lab.change_membership(step, node).await {
            Ok(details) => merge(&mut value, details),
            Err(error) => {
                value["outcome"] = json!("fail");
                value["error"] = Value::from(error);
            }
        }
        self.lab.record(Nemesis::Membership, node, value);
        self.lab.members().contains(&node)
    }

    /// Takes the first of `candidates` `step` may take for fault `id`: for `add` a node out of the cluster (or one
    /// that left it without a change of this phase: a change whose outcome was unknown took effect later), for
    /// `remove` a free member.
    fn claim_first(&self, candidates: &[usize], step: MembershipStep, id: u64) -> Option<usize> {
        let members = self.lab.members();
        let mut states = self.states.lock();
        let node = candidates.iter().copied().find(|&node| {
            let member = members.contains(&node);
            match (step, states.get(node)) {
                (MembershipStep::Add, Some(NodeState::Out)) => true,
                (MembershipStep::Add, Some(NodeState::Up)) => !member,
                (MembershipStep::Remove, Some(NodeState::Up)) => member,
                _ => false,
            }
        })?;
        states[node] = NodeState::Down(id);
        Some(node)
    }

    /// After a step: a member is up and free, a node out of the cluster is out, unless `held_by` keeps it (a
    /// `replace` until it ends).
    fn settle(&self, node: usize, member: bool, held_by: Option<u64>) {
        self.states.lock()[node] = match (member, held_by) {
            (true, _) => NodeState::Up,
            (false, Some(id)) => NodeState::Down(id),
            (false, None) => NodeState::Out,
        };
    }
}

#[cfg(test)]
mod tests;
