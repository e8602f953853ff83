//! Membership changes in the lab: a spare node joins the cluster, a member leaves it. The system's hooks
//! ([`crate::system::membership`]) do the asking; the lab prepares and starts a joiner, stops a node once it is out,
//! and after every change asks the system who the members are and records it (`observation` `members`, `source:
//! list`): the member set of the history is what the system says, whatever the change's outcome. The workers and
//! the fault targets follow it ([`Lab::members`], [`Lab::members_watch`]).

use super::{BootState, Lab};
use crate::system::membership::{ChangeOutcome, JoinOrder, Listed};
use faultline_faults::process::node_name;
use faultline_workloads::history::{Lifecycle, Observation};
use serde_json::{json, Value};
use std::time::Instant;

impl Lab {
    /// The members now, as the system last listed them (in node order).
    pub fn members(&self) -> Vec<usize> {
        self.members.borrow().clone()
    }

    /// The members as they change.
    pub fn members_watch(&self) -> tokio::sync::watch::Receiver<Vec<usize>> {
        self.members.subscribe()
    }

    /// Takes the members a node's status names (`source: status`) when they are of a newer epoch than any the lab
    /// knows: a change whose outcome was unknown when it ended may take effect later.
    pub fn note_members(&self, status: &crate::system::NodeStatus) {
        let Some(listed) = self.system.membership().and_then(|m| m.members_in_status(&status.raw)) else {
            return;
        };
        let mut epoch = self.members_epoch.lock().expect("members epoch lock");
        if listed.epoch.is_none_or(|newer| newer <= *epoch) {
            return;
        }
        *epoch = listed.epoch.unwrap_or(*epoch);
        drop(epoch);
        if listed.members != self.members() {
            self.members.send_replace(listed.members);
            self.record_members("status");
        }
    }

    /// Asks the system who the members are and takes its answer (the final phase starts so).
    pub async fn refresh_members(&self) {
        let before = self.members();
        let (members, error) = self.relist(&before, &ChangeOutcome::Fail(String::new())).await;
        if error.is_none() && members != before {
            self.members.send_replace(members);
            self.record_members("list");
        }
    }

    /// Records who the members are now (`source`: `plan` at the start, `list` after a change).
    pub fn record_members(&self, source: &str) {
        let members = names(&self.members());
        self.recorder.observation(
            Observation::Members,
            None,
            json!({"members": members, "source": source}),
        );
    }

    /// Adds the spare `node`: prepared as a fresh joiner (recorded as a `wipe`), started and added in the order its
    /// system needs; returns what to record of the step.
    pub async fn add_member(&self, node: usize) -> Value {
        let started = Instant::now();
        let before = self.members();
        let Some(membership) = self.system.membership() else {
            return unable(&before, "this system has no membership hooks");
        };
        let name = node_name(node);
        // A node the lab could not stop when it left is stopped now: a joiner starts from nothing.
        let _ = self.kill_node_for(node, None).await;
        if let Err(error) = membership.prepare_joiner(node, &before).await {
            return unable(&before, &format!("preparing {name} as a joiner: {error:#}"));
        }
        self.recorder
            .lifecycle(Lifecycle::Wipe, Some(&name), json!({"after": "membership add"}));
        let outcome = match membership.join_order() {
            JoinOrder::StartThenAdd => match self.start_joiner(node).await {
                Ok(()) => membership.add(node, &before).await,
                Err(why) => ChangeOutcome::Fail(why),
            },
            JoinOrder::AddThenStart => {
                let outcome = membership.add(node, &before).await;
                // Unknown: started only once the system lists it (an etcd joiner that the cluster does not list
                // exits at once); if the addition commits later, the final phase starts it as a member.
                let listed = match &outcome {
                    ChangeOutcome::Fail(_) => None,
                    _ => Some(self.relist(&before, &outcome).await),
                };
                if let Some((members, _)) = listed.filter(|(members, _)| members.contains(&node)) {
                    // The joiner is told the cluster as it is with it added, not as it was before: another change
                    // may have committed in between (etcd refuses a joiner whose `--initial-cluster` differs from
                    // its member list: `error validating peerURLs`).
                    let others: Vec<usize> = members.into_iter().filter(|&m| m != node).collect();
                    match membership.prepare_joiner(node, &others).await {
                        Ok(()) => {
                            let _ = self.start_joiner(node).await;
                        }
                        Err(error) => {
                            tracing::warn!("preparing {name} to join {others:?} after its addition: {error:#}")
                        }
                    }
                }
                outcome
            }
        };
        let (members, list_error) = self.relist(&before, &outcome).await;
        let mut stopped = Value::Null;
        if !members.contains(&node) && matches!(outcome, ChangeOutcome::Fail(_)) {
            // Surely not added: a spare again, down. A joiner whose addition is unknown keeps running: the change may
            // still commit (after a view change), and a member the lab had stopped would cost the new configuration
            // a vote its quorum counts on.
            stopped = self
                .kill_node_for(node, None)
                .await
                .unwrap_or_else(|why| json!({"not_running": why}));
        }
        let mut value = self.settle_members(members, &before, outcome, list_error, started);
        value["stopped"] = stopped;
        value
    }

    /// Removes the member `node` and stops it once the system lists it no more; returns what to record of the step.
    pub async fn remove_member(&self, node: usize) -> Value {
        let started = Instant::now();
        let before = self.members();
        let Some(membership) = self.system.membership() else {
            return unable(&before, "this system has no membership hooks");
        };
        // A node that leaves may stop on its own (an etcd member does): not a crash.
        self.slots[node].lock().await.stopping = true;
        let outcome = membership.remove(node, &before).await;
        let (members, list_error) = self.relist(&before, &outcome).await;
        let mut stopped = Value::Null;
        if members.contains(&node) {
            self.slots[node].lock().await.stopping = false;
        } else {
            stopped = self
                .kill_node_for(node, Some("removed"))
                .await
                .unwrap_or_else(|why| json!({"not_running": why}));
        }
        let mut value = self.settle_members(members, &before, outcome, list_error, started);
        value["stopped"] = stopped;
        value
    }

    /// Starts a joiner and waits for its boot to settle; why not, if it is not ready.
    async fn start_joiner(&self, node: usize) -> Result<(), String> {
        let details = self.start_node(node).await.unwrap_or_else(|e| json!({"error": e}));
        self.recorder
            .lifecycle(Lifecycle::Start, Some(&node_name(node)), details);
        match self.wait_boot(node).await {
            BootState::Ready => Ok(()),
            state => Err(format!(
                "the joiner {} did not become ready: {state:?}",
                node_name(node)
            )),
        }
    }

    /// Who the members are now: what a successful change answered, else asked of the system; `before` (and why)
    /// when it cannot tell.
    async fn relist(&self, before: &[usize], outcome: &ChangeOutcome) -> (Vec<usize>, Option<String>) {
        let Some(membership) = self.system.membership() else {
            return (before.to_vec(), None);
        };
        let answered = match outcome {
            ChangeOutcome::Ok(answer) => membership.members_in_answer(answer),
            _ => None,
        };
        let listed = match answered {
            Some(listed) => Ok(listed),
            None => membership.list(before).await,
        };
        let taken = listed.and_then(|listed| {
            let mut known = self.members_epoch.lock().expect("members epoch lock");
            take_listed(listed, &mut known, self.node_count())
        });
        match taken {
            Ok(members) => (members, None),
            Err(why) => (before.to_vec(), Some(why)),
        }
    }

    /// Takes `members` as the members from now on, records them, and returns the step's record.
    fn settle_members(
        &self,
        members: Vec<usize>,
        before: &[usize],
        outcome: ChangeOutcome,
        list_error: Option<String>,
        started: Instant,
    ) -> Value {
        self.members.send_replace(members.clone());
        self.record_members("list");
        let mut value = json!({
            "outcome": outcome.name(),
            "duration_ms": started.elapsed().as_millis() as u64,
            "members": names(&members),
            "members_before": names(before),
        });
        match outcome {
            ChangeOutcome::Ok(answer) => value["answer"] = answer,
            ChangeOutcome::Fail(why) | ChangeOutcome::Info(why) => value["error"] = json!(why),
        }
        if let Some(why) = list_error {
            value["list_error"] = json!(why);
        }
        value
    }
}

/// The members of a list answer, unless its epoch is older than `known`, the newest the lab has seen (a committed
/// change's answer, a member's status): the nodes that answered are behind, while those of the newer epoch are down
/// or slow (say a primary killed right after it committed a removal). Taking the older set would bring a removed
/// node back into the checks and the final phase. Raises `known` to the answer's epoch.
fn take_listed(listed: Listed, known: &mut u64, node_count: usize) -> Result<Vec<usize>, String> {
    let Listed { epoch, mut members } = listed;
    if let Some(epoch) = epoch {
        if epoch < *known {
            return Err(format!(
                "the newest configuration any node answered with is epoch {epoch}, older than epoch {known} seen \
                 committed: kept the members of epoch {known}"
            ));
        }
        *known = epoch;
    }
    members.sort_unstable();
    members.dedup();
    members.retain(|&member| member < node_count);
    Ok(members)
}

/// A step that could not be tried at all.
fn unable(members: &[usize], why: &str) -> Value {
    json!({"outcome": "fail", "error": why, "members": names(members), "members_before": names(members)})
}

/// Node indices as the history names them.
fn names(nodes: &[usize]) -> Vec<String> {
    nodes.iter().map(|&node| node_name(node)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(epoch: Option<u64>, members: &[usize]) -> Listed {
        Listed {
            epoch,
            members: members.to_vec(),
        }
    }

    #[test]
    fn given_a_list_answer_of_an_older_epoch_when_taken_should_keep_the_known_members() {
        // Epoch 11 removed n2 (index 1); only nodes still in epoch 10 answered the list.
        let mut known = 11;
        let taken = take_listed(listed(Some(10), &[1, 2, 3, 4]), &mut known, 5);
        let why = taken.unwrap_err();
        assert!(why.contains("epoch 10, older than epoch 11"), "{why}");
        assert_eq!(known, 11);
    }

    #[test]
    fn given_a_list_answer_of_the_known_or_a_newer_epoch_when_taken_should_take_it_sorted_and_raise_the_epoch() {
        let mut known = 11;
        assert_eq!(
            take_listed(listed(Some(11), &[4, 2, 3, 3]), &mut known, 5),
            Ok(vec![2, 3, 4])
        );
        assert_eq!(take_listed(listed(Some(12), &[0, 2, 7]), &mut known, 5), Ok(vec![0, 2]));
        assert_eq!(known, 12);
    }

    #[test]
    fn given_a_list_answer_without_an_epoch_when_taken_should_take_it() {
        // etcd's member list carries no epoch: the answer is all there is.
        let mut known = 3;
        assert_eq!(take_listed(listed(None, &[0, 1]), &mut known, 3), Ok(vec![0, 1]));
        assert_eq!(known, 3);
    }
}
