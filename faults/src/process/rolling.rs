//! Rolling faults (`targets: each`): one fault applied to every node in turn, the way operators restart a cluster.
//!
//! ```yaml
//! nemesis:
//!   process:
//!     script:
//!       - {at: 5s, kind: stop, targets: each, duration: 1s, grace: 5s}     # n1, then n2, then n3
//!     faults:
//!       - {kind: corrupt, targets: each, duration: 500ms, cuts: [{op: truncate-tail, files: wal, max_bytes: 4096}]}
//! ```
//!
//! **Steps.** One per node, in node order (n1, n2, ... nN): take the node down as the kind says (kill, power loss,
//! a graceful stop, or down and cut for `corrupt`), keep it down for the fault's `duration`, restart it, then wait
//! until the lab says it is ready again ([`Lab::ready_again`]: booted, and caught up if a live cut damaged it) before
//! the next node goes down. So at most one node of the fault is down or damaged at a time, and the fault ends when
//! its last node is ready again. The node is held (no other fault touches it) from its step's start until it is
//! ready again.
//!
//! **Bounds.** A node that is not ready again within the lab's bound is recorded so and the fault goes on with the
//! next node (the final phase judges the node). A node another fault holds (a flap, a triggered kill) is waited for
//! until that fault lets it go, at most [`HELD_WAIT_MAX`], then skipped (recorded). When the fault phase stops, a
//! node that is down is restarted at once, and the steps not begun are not done.
//!
//! **Timing.** How long a rolling fault takes depends on how fast its nodes come back, so it cannot be a window of
//! the [timed interpreter](crate::interpreter), whose steps run one at a time (waiting for a boot there would hold
//! every other fault up). The schedule places its nominal span (nodes × duration) like any fault's: outside the
//! stable windows and before the end of the phase, the per-node duration cut to fit; [`RollingFaults`] then runs
//! beside the interpreter and the triggers, sharing their [`NodeHolds`], one rolling fault after another (one due
//! while another still rolls starts when that one ends). The waits come on top of the span, so the last steps may
//! run into a stable window; a majority stays up throughout.
//!
//! **Refused.** Pauses roll nothing (a resumed process does not boot, so there is no readiness to wait for); and
//! triggers cannot aim a rolling fault (a triggered fault lasts its drawn duration and ends before the next stable
//! window, which a rolling fault cannot promise). Both are refused at plan check.
//!
//! **History.** Each step is recorded as a single-node fault of the same kind, with the fault's `fault_id`, `target:
//! each` and `rolling: {step, of, down_ms}`: `stop` / `kill` / `power-loss` / `corrupt` (and its `disk-surgery`
//! events), then `start`, then `rolling-ready` (`waited_ms`, or an `error` saying why the node was not ready).

use super::{cut_files, fault_value, lose_after_kill, merge, Lab, NodeHolds, NodeState, ProcessFault, Resolved};
use super::{ScheduledFault, StopHow};
use faultline_workloads::history::Nemesis;
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a step waits for its node while another fault holds it (longer than any fault of the shipped plans).
pub const HELD_WAIT_MAX: Duration = Duration::from_secs(30);
/// How often a step looks whether the other fault let its node go.
const HELD_POLL: Duration = Duration::from_millis(50);

/// Whether a fault of `kind` can roll over every node (`targets: each`); the message says why not and what instead.
pub fn check_rolling_kind(kind: ProcessFault) -> Result<(), String> {
    match kind {
        ProcessFault::Pause => Err(
            "`targets: each` is a rolling restart (each node in turn taken down, restarted and waited for until it is \
             ready again); a pause restarts nothing: use kill, stop, power-loss or corrupt, or pause one node at a \
             time with `targets: one`"
                .into(),
        ),
        ProcessFault::Clock => Err(
            "`targets: each` is a rolling restart; a clock fault restarts nothing: move every node's clock at once \
             with `targets: all`, or one at a time with `targets: one`"
                .into(),
        ),
        ProcessFault::Membership => Err(
            "`targets: each` is a rolling restart; a membership change takes one node: change one member at a time \
             with `targets: one`, `primary`, `backup` or a named node"
                .into(),
        ),
        ProcessFault::Kill | ProcessFault::PowerLoss | ProcessFault::Stop | ProcessFault::Corrupt => Ok(()),
    }
}

/// Splits a schedule into its timed faults (the interpreter's) and its rolling faults ([`RollingFaults`]'), in
/// schedule order, each keeping its id.
pub fn split_rolling(schedule: Vec<ScheduledFault>) -> (Vec<ScheduledFault>, Vec<ScheduledFault>) {
    schedule.into_iter().partition(|fault| !fault.is_rolling())
}

/// The applier of a fault phase's rolling faults (see the module doc).
pub struct RollingFaults<'a, L> {
    lab: &'a L,
    faults: &'a [ScheduledFault],
    holds: NodeHolds,
}

impl<'a, L: Lab> RollingFaults<'a, L> {
    /// The rolling faults of `faults` (the others are ignored) on `lab`, sharing `holds` with the phase's other
    /// appliers of process faults.
    pub fn shared(lab: &'a L, faults: &'a [ScheduledFault], holds: NodeHolds) -> RollingFaults<'a, L> {
        RollingFaults { lab, faults, holds }
    }

    /// Applies each rolling fault from its start offset (after the one before it ended) until all are done or `stop`
    /// is set (or its sender is gone).
    pub async fn run(&self, phase_start: Instant, mut stop: watch::Receiver<bool>) {
        for fault in self.faults.iter().filter(|fault| fault.is_rolling()) {
            let at = phase_start + Duration::from_millis(fault.start_ms);
            if unless_stopped(&mut stop, tokio::time::sleep_until(at)).await.is_none() {
                return;
            }
            if !self.roll(fault, &mut stop).await {
                return;
            }
        }
    }

    /// Applies `fault` to each of its nodes in turn; false when `stop` came first.
    async fn roll(&self, fault: &ScheduledFault, stop: &mut watch::Receiver<bool>) -> bool {
        let Resolved::Each(order) = &fault.nodes else {
            return true;
        };
        for (index, &node) in order.iter().enumerate() {
            let step = json!({"step": index + 1, "of": order.len(), "down_ms": fault.duration_ms});
            let waited = Instant::now();
            let Some(claimed) = unless_stopped(stop, self.claim_when_free(node, fault.id)).await else {
                return false;
            };
            if !claimed {
                let mut value = fault_value(fault);
                value["rolling"] = step;
                value["error"] = json!(format!(
                    "held by another fault for {} s: this step is skipped",
                    HELD_WAIT_MAX.as_secs()
                ));
                self.lab.record(fault.kind.start_name(), node, value);
                continue;
            }
            let held_ms = waited.elapsed().as_millis() as u64;
            if !self.take_down(fault, node, &step, held_ms).await {
                self.release(node);
                continue;
            }
            let down = tokio::time::sleep(Duration::from_millis(fault.duration_ms));
            let stopped = unless_stopped(stop, down).await.is_none();
            self.restart(fault, node, &step).await;
            if stopped {
                self.release(node);
                return false;
            }
            let ready = unless_stopped(stop, self.lab.ready_again(node)).await;
            self.release(node);
            let stopped = ready.is_none();
            let mut value = json!({"fault_id": fault.id, "rolling": step});
            match ready {
                Some(Ok(details)) => merge(&mut value, details),
                Some(Err(error)) => value["error"] = json!(format!("{error}; going on with the next node")),
                None => value["error"] = json!("the fault phase ended before the node was ready again"),
            }
            self.lab.record(Nemesis::RollingReady, node, value);
            if stopped {
                return false;
            }
        }
        true
    }

    /// Takes `node` down as `fault` says and records it (with how long it waited for another fault to let the node
    /// go, if it did); a `corrupt` fault then cuts it. Whether it went down.
    async fn take_down(&self, fault: &ScheduledFault, node: usize, step: &Value, held_ms: u64) -> bool {
        let lab = self.lab;
        let result = match fault.down_how() {
            Some(StopHow::Kill) => lab.kill(node).await,
            Some(StopHow::Graceful) => lab.stop(node, fault.detail.grace_duration()).await,
            Some(StopHow::PowerLoss) => lose_after_kill(lab, node, lab.kill(node).await).await,
            None => Err("a pause does not roll (refused at plan check)".to_string()),
        };
        let mut value = fault_value(fault);
        value["rolling"] = step.clone();
        if held_ms > 0 {
            value["rolling"]["held_ms"] = json!(held_ms);
        }
        let went_down = result.is_ok();
        match result {
            Ok(details) => merge(&mut value, details),
            Err(error) => value["error"] = Value::from(error),
        }
        lab.record(fault.kind.start_name(), node, value);
        if went_down && fault.kind == ProcessFault::Corrupt {
            cut_files(lab, fault, node).await;
        }
        went_down
    }

    /// Starts `node` again and records it.
    async fn restart(&self, fault: &ScheduledFault, node: usize, step: &Value) {
        let mut value = json!({"fault_id": fault.id, "rolling": step});
        match self.lab.start(node).await {
            Ok(details) => merge(&mut value, details),
            Err(error) => value["error"] = Value::from(error),
        }
        self.lab.record(fault.kind.stop_name(), node, value);
    }

    /// Takes `node` for fault `id` once no other fault holds it; false when one still does after [`HELD_WAIT_MAX`].
    async fn claim_when_free(&self, node: usize, id: u64) -> bool {
        let deadline = Instant::now() + HELD_WAIT_MAX;
        while !self.claim(node, id) {
            if self.holds.is_out(node) {
                return false; // no member: nothing to roll
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(HELD_POLL).await;
        }
        true
    }

    /// Takes `node` for fault `id` if no fault holds it.
    fn claim(&self, node: usize, id: u64) -> bool {
        let mut states = self.holds.lock();
        // Under the plan's `max_down` too: a rolling fault waits until the others leave it room.
        let free = states.get(node) == Some(&NodeState::Up) && self.holds.over_cap(&states, 1).is_none();
        if free {
            states[node] = NodeState::Down(id);
        }
        free
    }

    fn release(&self, node: usize) {
        self.holds.lock()[node] = NodeState::Up;
    }
}

/// `work`'s output, or `None` when `stop` is set (or its sender gone) first.
async fn unless_stopped<F: Future>(stop: &mut watch::Receiver<bool>, work: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        // As a bool: the guard `wait_for` returns must not live across the other arm's await.
        _ = async { stop.wait_for(|stopped| *stopped).await.is_ok() } => None,
        output = work => Some(output),
    }
}

#[cfg(test)]
mod tests;
