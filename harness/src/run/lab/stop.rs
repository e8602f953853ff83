//! A graceful stop: the node is asked to stop (SIGTERM, or its adapter's stop command), gets its grace to exit on its
//! own, and is SIGKILLed after it. Either way the history says how it ended.

use super::Lab;
use crate::supervisor::Exit;
use faultline_faults::process::node_name;
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

impl Lab {
    /// Asks `node` to stop and waits up to `grace` for it to exit, then SIGKILLs it; first records what it had
    /// durably reached (cause `stop`). Returns how it ended: `{pid, signal | command, ended, exit, after_ms, killed}`.
    pub async fn stop_node(&self, node: usize, grace: Duration) -> Result<Value, String> {
        self.note_last_durable(node, "stop").await;
        let mut slot = self.slots[node].lock().await;
        let Some(spawned) = slot.spawned.clone().filter(|s| s.exited.borrow().is_none()) else {
            return Err(format!("{} is not running", node_name(node)));
        };
        slot.stopping = true;
        drop(slot);
        let started = Instant::now();
        let mut details = json!({"pid": spawned.pid, "grace_ms": grace.as_millis() as u64});
        match self.system.stop_command(node, spawned.pid) {
            Some(command) => {
                details["command"] = json!(command.display());
                // On the node's machine, as its other one-shot commands; it gets the grace too (killed after it),
                // and what it leaves running is killed below with the node.
                let hands = self.hands[node].clone();
                tokio::spawn(async move {
                    if let Err(e) = hands.output(&command, grace).await {
                        tracing::warn!("the stop command: {e}");
                    }
                });
            }
            None => {
                self.hands[node].signal(spawned.pid, Signal::SIGTERM).await?;
                details["signal"] = json!("SIGTERM");
            }
        }
        let mut exited = spawned.exited.clone();
        let on_its_own = tokio::time::timeout(grace, exited.wait_for(|e| e.is_some()))
            .await
            .is_ok();
        let after_ms = started.elapsed().as_millis() as u64;
        let exit = if on_its_own {
            self.reaped(node, &spawned).await?
        } else {
            self.hands[node].signal(spawned.pid, Signal::SIGKILL).await?;
            self.reaped(node, &spawned).await?
        };
        details["killed"] = json!(!on_its_own);
        details["after_ms"] = json!(after_ms);
        details["exit"] = json!(exit.to_string());
        details["ended"] = json!(ended(&exit, on_its_own, after_ms, grace));
        Ok(details)
    }
}

/// How a stopped node ended, as a person says it: `exited 0 after 1.2 s`, `ended by SIGTERM after 0.0 s`,
/// `killed after the grace (10 s)`.
fn ended(exit: &Exit, on_its_own: bool, after_ms: u64, grace: Duration) -> String {
    let seconds = after_ms as f64 / 1000.0;
    match (on_its_own, exit) {
        (false, _) => format!("killed after the grace ({} s)", grace.as_secs_f64()),
        (true, Exit::Code(code)) => format!("exited {code} after {seconds:.1} s"),
        (true, Exit::Signal(signal)) => {
            let name = Signal::try_from(*signal).map(|s| s.as_str()).unwrap_or("a signal");
            format!("ended by {name} after {seconds:.1} s")
        }
        (true, Exit::HostLost) => format!("lost with its host after {seconds:.1} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_each_way_a_node_ends_when_told_should_say_it_as_a_person_would() {
        let grace = Duration::from_secs(10);
        assert_eq!(ended(&Exit::Code(0), true, 1234, grace), "exited 0 after 1.2 s");
        assert_eq!(
            ended(&Exit::Signal(15), true, 40, grace),
            "ended by SIGTERM after 0.0 s"
        );
        assert_eq!(
            ended(&Exit::Signal(9), false, 10_003, grace),
            "killed after the grace (10 s)"
        );
    }
}
