//! Ready again: what a rolling fault (`targets: each`, `faultline_faults::process::rolling`) waits for before it takes
//! the next node down. A node is ready again once it booted (the adapter's readiness probe answers, as after any
//! start), and, when a live cut damaged it, once it has caught up: a status *the history records* shows at least the
//! durable number the cluster held at the cut. That is the rule by which the checks count a node as damaged
//! (`faultline_workloads::checker::damage`), so a rolling `corrupt` never has two damaged nodes at once in the
//! checks' eyes, whatever the observer saw but did not yet record.
//!
//! Bounds: booting within the plan's `boot_timeout` of the restart (twice that for a damaged node in a plan that
//! wipes live refusals: it may refuse, be wiped and boot again), then catching up within `boot_timeout` more.

use super::{BootState, Lab};
use faultline_faults::process::node_name;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How often the wait looks at the node's recorded status (a change of its boot state wakes it at once).
const POLL_INTERVAL: Duration = Duration::from_millis(100);

impl Lab {
    /// Waits until `node`, just restarted by a rolling fault, is ready again (see the module doc); returns what to
    /// record (`waited_ms`, and `booted_ms`, `caught_up` after a cut), or why it is not.
    pub async fn ready_again(&self, node: usize) -> Result<Value, String> {
        let name = node_name(node);
        let started = Instant::now();
        // Set by the node's cut before this restart; only a ready node is cleared, so it is still here.
        let needed = self.damage_needed(node);
        let may_be_wiped = needed.is_some() && self.cuts.wipes_live_refusals;
        let boot_bound = if may_be_wiped {
            self.boot_timeout * 2
        } else {
            self.boot_timeout
        };
        let mut booted: Option<Duration> = None;
        let mut boot_changes = self.boot_rx[node].clone();
        loop {
            let waited = started.elapsed();
            match self.boot_state(node) {
                BootState::Ready => {
                    let booted = *booted.get_or_insert(waited);
                    let Some(needed) = needed else {
                        return Ok(json!({"waited_ms": millis(waited)}));
                    };
                    if self.recorded_durable_reaches(node, needed) {
                        return Ok(
                            json!({"waited_ms": millis(waited), "booted_ms": millis(booted), "caught_up": needed}),
                        );
                    }
                    if waited > booted + self.boot_timeout {
                        return Err(format!(
                            "{name} booted {:.1} s after its restart but recorded no durable number of {needed} or more \
                             (what the cluster held at its cut) in the {:.0} s after",
                            booted.as_secs_f64(),
                            self.boot_timeout.as_secs_f64()
                        ));
                    }
                }
                BootState::Starting if waited <= boot_bound => {}
                // The fault phase wipes it and starts it again once a majority is intact (`after_refusal: wipe`).
                BootState::Refused(_) if may_be_wiped && waited <= boot_bound => {}
                state => {
                    return Err(format!(
                        "{name} was not ready again {:.1} s after its restart: {}",
                        waited.as_secs_f64(),
                        describe(&state)
                    ))
                }
            }
            if let Ok(Err(_)) = tokio::time::timeout(POLL_INTERVAL, boot_changes.changed()).await {
                tokio::time::sleep(POLL_INTERVAL).await; // no sender: never while the lab lives, but never a spin
            }
        }
    }

    /// Whether the newest status the history recorded of `node` since it last started shows a durable number of at
    /// least `needed` (or, for a system that reports none, whether there is such a status at all).
    pub(super) fn recorded_durable_reaches(&self, node: usize, needed: u64) -> bool {
        let observed = self.observed[node].lock().expect("observations lock");
        observed
            .last_record
            .is_some_and(|(_, durable)| durable.is_none_or(|durable| durable >= needed))
    }
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

/// A boot state as a person reads it.
fn describe(state: &BootState) -> String {
    match state {
        BootState::Stopped => "it is not running".into(),
        BootState::Starting => "still starting".into(),
        BootState::Ready => "ready".into(),
        BootState::Refused(line) => format!("it refused to boot: {line}"),
        BootState::Crashed(why) => format!("it crashed: {why}"),
        BootState::TimedOut => "not ready within the boot timeout".into(),
    }
}
