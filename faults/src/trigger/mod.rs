//! Triggers: faults that react to what the cluster is doing, not to the clock.
//!
//! A plan's `nemesis.triggers` pairs a **condition** on the observed cluster with a **fault**:
//!
//! ```yaml
//! nemesis:
//!   triggers:
//!     - when: {restarted: any}            # a node just became ready again
//!       after: 0ms..800ms                 # drawn per firing from the seed
//!       probability: 0.5
//!       do: {kind: kill, targets: primary, duration: 1s..3s}
//!     - when: {lagging: {by: 5, number: op}}
//!       do: {kind: partition, shape: isolate-primary, duration: 2s..4s}
//!     - when: {log: "view change started"}
//!       do: {kind: kill, targets: subject, duration: 1s..2s}
//! ```
//!
//! The harness feeds the engine [`Fact`]s while the fault phase runs: every status probe of every node (about every
//! 100 ms), a node becoming ready or going down, and every new line of every node's log (with the names of the
//! adapter's patterns it matches). Conditions, each with the node it is about (its *subject*):
//!
//! - `restarted: any|nX`: a node became ready again (the subject);
//! - `lagging: {by: N, number?: NAME, node?: any|nX}`: an up node's progress number (default: the adapter's durable
//!   number) fell at least N behind the highest fresh one; fires when it starts lagging (the subject);
//! - `view-change: any|nX`: no up node reports itself primary any more (the subject: the primary that was);
//! - `primary-changed: any|nX`: a different node is now primary (the subject: the new one); the primary is the node
//!   that claims it in the newest view reported;
//! - `stale-primary: any|nX`: a node still claims to be primary in an older view than another claimant: it was cut
//!   off (or paused) while the others elected a new primary (the subject: the stale one). It may hold a longer log of
//!   ops it never committed, the state in which a view change that compares log lengths loses data;
//! - `repairing: any|nX`: a node logged the adapter's `repairing` pattern (the subject);
//! - `repaired: any|nX`: a node logged the adapter's `repaired` pattern: it caught up (the subject);
//! - `log: REGEX` or `log: {pattern: REGEX, node: nX}`: a node logged a matching line (the subject).
//!
//! A status older than [`FRESH`] does not count (a paused node answers nothing, so a paused primary is no primary).
//!
//! A firing is **recorded** as a `nemesis` `trigger` event (condition, subject, drawn delay, the latency from the
//! observation to the fault, the fault id, or why it was skipped), and the fault's own events carry
//! `source: triggered` and the trigger's index. **Limits** keep a run making progress: a trigger waits `cooldown`
//! (default 2 s) after it fired or declined (not after a skip), fires at most `max_fires` times (default 10), has at most one firing
//! pending, never fires inside the plan's process stable windows, and its fault ends by the next stable window and
//! by the end of the phase. Triggered faults share the timed schedule's holds ([`NodeHolds`], [`NetworkHolds`]): a
//! kill of a node another fault holds is skipped, one partition is in force at a time. A partition trigger with
//! `takeover: true` replaces the partition in force instead of being skipped (the old grudge is lifted and the new
//! one applied in one step): "the partition moves onto the new primary", so the node it had cut off rejoins just as
//! the one that replaced it is cut off, and neither hears the other first.
//!
//! Determinism: each trigger draws from its own seeded stream (`trigger-<i>`), so the same observations give the
//! same firings; real processes make the observations themselves vary from run to run.
//!
//! Two submodules: `spec` holds the plan syntax (what a trigger says, and its validation against the cluster it
//! will run on); `engine` holds the runtime that consumes [`Fact`]s and fires the faults.
//!
//! [`NodeHolds`]: crate::process::NodeHolds
//! [`NetworkHolds`]: crate::network::schedule::NetworkHolds

mod engine;
mod spec;
#[cfg(test)]
mod tests;

pub use engine::{newest_claimant, Fact, FactRole, Triggers, FRESH, TRIGGER_FAULT_ID_BASE};
pub use spec::{
    Condition, LaggingSpec, LogCondition, NodeFilter, TriggerCapabilities, TriggerLinks, TriggerShape, TriggerSpec,
    TriggerTarget, TriggeredFaultSpec, TriggeredKind,
};
