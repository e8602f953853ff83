//! I/O-fault nemesis: windows of the fault phase in which one node's [fault filesystem](crate::fusefs) injects EIO,
//! ENOSPC or stalls, as the I/O family of the [timed interpreter](crate::interpreter).
//!
//! A window's start sets its faults on the node's mount and records `io-fault-start`; its stop clears them and
//! records `io-fault-stop` (both with the window's position in the plan and its faults, plus `error` when the mount
//! refused). A node that stopped on the injected errors (a correct fail-stop) is started again when its window closes,
//! as a supervisor would once the disk works again; a window healed because the phase ended early is only cleared,
//! since what follows the phase (the final phase) decides about nodes.

use crate::fusefs::FsFaults;
use crate::interpreter::{TimedFault, Window};
use faultline_workloads::history::Nemesis;
use serde_json::{json, Value};

/// I/O faults on one node for a window of the fault phase (plain data: the plan's window, resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct IoWindow {
    /// Start, in ms from the start of the fault phase.
    pub start_ms: u64,
    /// Length in ms; a zero-length window lasts 1 ms, so that it still starts before it stops.
    pub duration_ms: u64,
    /// Which node (0-based).
    pub node: usize,
    /// The faults, e.g. EIO on the second fsync of `wal*`.
    pub faults: FsFaults,
}

/// What the I/O nemesis needs from the lab. The harness implements it.
#[allow(async_fn_in_trait)]
pub trait IoLab {
    /// Sets (or, with empty faults, clears) the I/O faults of a node's fault filesystem.
    async fn set_io_faults(&self, node: usize, faults: &FsFaults) -> Result<(), String>;
    /// Whether the node exited on its own (not stopped by the harness) and is down.
    fn crashed(&self, node: usize) -> bool;
    /// Starts a stopped node again with its data dir, recording the start (or why it failed) in the history.
    async fn restart(&self, node: usize);
    /// Appends a nemesis event (`io-fault-start`, `io-fault-stop`) about `node` to the history.
    fn record(&self, name: Nemesis, node: usize, value: Value);
}

/// The I/O family of the timed interpreter: the plan's windows on a lab.
pub struct IoFaults<'a, L> {
    lab: &'a L,
    windows: &'a [IoWindow],
}

impl<'a, L: IoLab> IoFaults<'a, L> {
    /// `windows` (in plan order: a window's position is its id in the history) on `lab`.
    pub fn new(lab: &'a L, windows: &'a [IoWindow]) -> IoFaults<'a, L> {
        IoFaults { lab, windows }
    }

    /// Sets or clears the window's faults and records it; a start is recorded even when the mount refused it.
    async fn set(&self, position: usize, start: bool) {
        let window = &self.windows[position];
        let faults = if start {
            window.faults.clone()
        } else {
            FsFaults::default()
        };
        let mut value = json!({"window": position, "faults": window.faults});
        if let Err(e) = self.lab.set_io_faults(window.node, &faults).await {
            value["error"] = json!(e);
        }
        let name = if start {
            Nemesis::IoFaultStart
        } else {
            Nemesis::IoFaultStop
        };
        self.lab.record(name, window.node, value);
    }
}

impl<L: IoLab> TimedFault for IoFaults<'_, L> {
    fn windows(&self) -> Vec<Window> {
        let window = |w: &IoWindow| Window {
            start_ms: w.start_ms,
            end_ms: w.start_ms + w.duration_ms.max(1),
        };
        self.windows.iter().map(window).collect()
    }

    async fn start(&mut self, position: usize) -> bool {
        self.set(position, true).await;
        // Held even when the mount refused: its stop is recorded too, as it always was.
        true
    }

    async fn stop(&mut self, position: usize) {
        self.set(position, false).await;
        let node = self.windows[position].node;
        if self.lab.crashed(node) {
            self.lab.restart(node).await;
        }
    }

    async fn heal(&mut self, position: usize) {
        self.set(position, false).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interpreter::{Families, NoFaults};
    use std::sync::Mutex;
    use std::time::Duration;

    /// A lab whose `crashed` nodes stay down until restarted; it logs every call.
    struct FakeIoLab {
        crashed: Mutex<Vec<usize>>,
        log: Mutex<Vec<(String, usize, Value)>>,
        refuse: bool,
    }

    impl IoLab for FakeIoLab {
        async fn set_io_faults(&self, node: usize, faults: &FsFaults) -> Result<(), String> {
            let set = json!({"empty": faults.is_empty()});
            self.log.lock().unwrap().push(("set".into(), node, set));
            match self.refuse {
                true => Err("no fault filesystem is mounted".into()),
                false => Ok(()),
            }
        }
        fn crashed(&self, node: usize) -> bool {
            self.crashed.lock().unwrap().contains(&node)
        }
        async fn restart(&self, node: usize) {
            self.crashed.lock().unwrap().retain(|&n| n != node);
            self.log.lock().unwrap().push(("restart".into(), node, Value::Null));
        }
        fn record(&self, name: Nemesis, node: usize, value: Value) {
            self.log.lock().unwrap().push((name.to_string(), node, value));
        }
    }

    fn lab(crashed: Vec<usize>, refuse: bool) -> FakeIoLab {
        FakeIoLab {
            crashed: Mutex::new(crashed),
            log: Mutex::default(),
            refuse,
        }
    }

    fn eio() -> FsFaults {
        serde_saphyr::from_str("{eio: [{ops: [fsync], files: \"wal*\", nth: 1}]}").unwrap()
    }

    fn window(start_ms: u64, duration_ms: u64, node: usize) -> IoWindow {
        IoWindow {
            start_ms,
            duration_ms,
            node,
            faults: eio(),
        }
    }

    async fn run(lab: &FakeIoLab, windows: &[IoWindow], stop_after: Duration) {
        let mut families = Families {
            process: NoFaults,
            network: NoFaults,
            io: IoFaults::new(lab, windows),
        };
        let (tx, rx) = tokio::sync::watch::channel(false);
        let stopper = async {
            tokio::time::sleep(stop_after).await;
            let _ = tx.send(true); // the run may be over already
        };
        tokio::join!(families.run(tokio::time::Instant::now(), rx), stopper);
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_window_when_it_closes_should_clear_it_record_both_edges_and_restart_a_crashed_node() {
        let lab = lab(vec![1], false);
        run(&lab, &[window(10, 100, 1)], Duration::from_secs(1)).await;
        let log = lab.log.lock().unwrap().clone();
        let calls: Vec<(&str, usize)> = log.iter().map(|(f, n, _)| (f.as_str(), *n)).collect();
        let expected = [
            ("set", 1),
            ("io-fault-start", 1),
            ("set", 1),
            ("io-fault-stop", 1),
            ("restart", 1),
        ];
        assert_eq!(calls, expected);
        assert_eq!(log[0].2["empty"], false, "the start sets the faults");
        assert_eq!(log[2].2["empty"], true, "the stop clears them");
        let recorded = json!({"window": 0, "faults": eio()});
        assert_eq!((&log[1].2, &log[3].2), (&recorded, &recorded));
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_window_open_when_the_phase_stops_should_clear_it_without_restarting() {
        let lab = lab(vec![0], true);
        run(
            &lab,
            &[window(5, 50, 2), window(10, 10_000, 0)],
            Duration::from_millis(100),
        )
        .await;
        let log = lab.log.lock().unwrap().clone();
        let events: Vec<(&str, usize)> = log
            .iter()
            .filter(|(f, _, _)| f != "set")
            .map(|(f, n, _)| (f.as_str(), *n))
            .collect();
        let expected = [
            ("io-fault-start", 2),
            ("io-fault-start", 0),
            ("io-fault-stop", 2),
            ("io-fault-stop", 0),
        ];
        assert_eq!(events, expected);
        assert!(log
            .iter()
            .filter(|(f, _, _)| f != "set")
            .all(|(_, _, v)| v["error"].is_string()));
        assert_eq!(log[1].2["window"], 0);
        assert_eq!(log[3].2["window"], 1);
    }
}
