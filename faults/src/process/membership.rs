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

use super::{fault_value, merge, Lab, NodeState, ProcessFault, ProcessFaults, ScheduledFault};
use faultline_workloads::history::Nemesis;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
    members > 0 && members - 1 >= members / 2 + 1
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
        let wanted = if step == MembershipStep::Add {
            NodeState::Out
        } else {
            NodeState::Up
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
        let claimed = skipped
            .is_none()
            .then(|| self.claim_first(&candidates, wanted, fault.id))
            .flatten();
        let Some(node) = claimed else {
            let reason = skipped.unwrap_or_else(|| match step {
                MembershipStep::Add => format!("no spare node among {candidates:?} (every node is a member or held)"),
                MembershipStep::Remove => format!("no member among {candidates:?} that no other fault holds"),
            });
            let mut value = fault_value(fault);
            value["step"] = json!(step.name());
            value["outcome"] = json!("skipped");
            value["skipped"] = json!(reason);
            let node = candidates.first().copied().unwrap_or(0);
            self.lab.record(Nemesis::Membership, node, value);
            return;
        };
        let member = self.apply_step(fault, step, node).await;
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

    /// Applies one step of `fault` to `node` and records it; whether `node` is a member after it.
    async fn apply_step(&self, fault: &ScheduledFault, step: MembershipStep, node: usize) -> bool {
        self.step_recorded(step, node, fault_value(fault)).await
    }

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

    /// Takes the first of `candidates` in state `wanted` for fault `id`.
    fn claim_first(&self, candidates: &[usize], wanted: NodeState, id: u64) -> Option<usize> {
        let mut states = self.states.lock();
        let node = candidates
            .iter()
            .copied()
            .find(|&node| states.get(node) == Some(&wanted))?;
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
