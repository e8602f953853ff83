//! When faults were active, from the history alone: each fault from the event that began it to the one that ended it,
//! plus a settle time after it (a cluster elects a leader again, a restarted node replays its log).
//!
//! A node is faulted from a `kill`, `power-loss`, `stop`, `corrupt` or `pause` (or a crash or a refusal to boot seen
//! by the harness) until it is started or resumed again; the network from `partition-start` to `partition-stop` and
//! from `link-fault` to `link-heal`; a node's disk from `io-fault-start` to `io-fault-stop`; its clock from `clock` to
//! `clock-heal`. A fault that never ended lasts to the end of the history. Events that record a fault which did not
//! happen (`error`, `skipped`) open nothing.

use crate::history::{Event, EventKind, History, Lifecycle, Name, Nemesis};
use std::collections::BTreeMap;

/// One span in which some fault was active (or settling), ns since the run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultWindow {
    /// When the fault began.
    pub start_ns: u64,
    /// When it ended, plus the settle time.
    pub end_ns: u64,
}

/// What an event does to the fault windows: opens one on a slot, closes the slot's, or nothing.
enum Edge {
    Open(String),
    Close(String),
}

fn edge(event: &Event) -> Option<Edge> {
    let did_not_happen = event.value.get("error").is_some() || event.value.get("skipped").is_some();
    if did_not_happen {
        return None;
    }
    let node = event.node.clone().unwrap_or_default();
    use Lifecycle as L;
    use Nemesis as N;
    Some(match event.name()? {
        Name::Nemesis(N::Kill | N::PowerLoss | N::Stop | N::Corrupt | N::Pause) => Edge::Open(node),
        Name::Lifecycle(L::Crashed | L::BootRefused) => Edge::Open(node),
        Name::Nemesis(N::Start | N::Resume) | Name::Lifecycle(L::Start) => Edge::Close(node),
        Name::Nemesis(N::PartitionStart) => Edge::Open("partition".into()),
        Name::Nemesis(N::PartitionStop) => Edge::Close("partition".into()),
        Name::Nemesis(N::LinkFault) => Edge::Open("links".into()),
        Name::Nemesis(N::LinkHeal) => Edge::Close("links".into()),
        Name::Nemesis(N::IoFaultStart) => Edge::Open(format!("io {node}")),
        Name::Nemesis(N::IoFaultStop) => Edge::Close(format!("io {node}")),
        Name::Nemesis(N::Clock) => Edge::Open(format!("clock {node}")),
        Name::Nemesis(N::ClockHeal) => Edge::Close(format!("clock {node}")),
        _ => return None,
    })
}

/// The fault windows of a history, each extended by `settle_ns` after the fault ended, in order of their start.
pub fn fault_windows(history: &History, settle_ns: u64) -> Vec<FaultWindow> {
    let mut open: BTreeMap<String, u64> = BTreeMap::new();
    let mut windows = Vec::new();
    for event in &history.events {
        if !matches!(event.kind, EventKind::Nemesis | EventKind::Lifecycle) {
            continue;
        }
        match edge(event) {
            Some(Edge::Open(slot)) => {
                open.entry(slot).or_insert(event.time_ns);
            }
            Some(Edge::Close(slot)) => {
                if let Some(start_ns) = open.remove(&slot) {
                    windows.push(FaultWindow {
                        start_ns,
                        end_ns: event.time_ns.saturating_add(settle_ns),
                    });
                }
            }
            None => {}
        }
    }
    windows.extend(open.into_values().map(|start_ns| FaultWindow {
        start_ns,
        end_ns: u64::MAX,
    }));
    windows.sort_by_key(|w| w.start_ns);
    windows
}

/// Whether `time_ns` falls in one of `windows`.
pub fn in_window(windows: &[FaultWindow], time_ns: u64) -> bool {
    windows.iter().any(|w| (w.start_ns..w.end_ns).contains(&time_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(ms: u64, mut event: Event) -> Event {
        event.time_ns = ms * 1_000_000;
        event
    }

    #[test]
    fn given_node_network_and_skipped_faults_when_windowed_should_open_close_and_settle_each() {
        let history = History {
            events: vec![
                at(1_000, Event::named(Nemesis::Kill, Some("n1".into()), json!({}))),
                at(2_000, Event::named(Nemesis::Start, Some("n1".into()), json!({}))),
                at(3_000, Event::named(Nemesis::PartitionStart, None, json!({}))),
                at(
                    4_000,
                    Event::named(Nemesis::Kill, Some("n2".into()), json!({"skipped": "no primary"})),
                ),
                at(5_000, Event::named(Nemesis::PartitionStop, None, json!({}))),
                at(9_000, Event::named(Nemesis::Pause, Some("n3".into()), json!({}))),
            ],
            truncated_tail: false,
        };
        let windows = fault_windows(&history, 500_000_000);
        let ms = |w: &FaultWindow| (w.start_ns / 1_000_000, w.end_ns.checked_div(1_000_000));
        let spans: Vec<_> = windows.iter().map(ms).collect();
        assert_eq!(
            spans,
            [
                (1_000, Some(2_500)),
                (3_000, Some(5_500)),
                (9_000, Some(u64::MAX / 1_000_000))
            ]
        );
        assert!(in_window(&windows, 2_400_000_000) && !in_window(&windows, 2_600_000_000));
        assert!(!in_window(&windows, 6_000_000_000) && in_window(&windows, 60_000_000_000));
    }
}
