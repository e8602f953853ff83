//! Clock faults on the timeline: each node's clock offset, as a window on its row from the `clock` event that moved
//! it to the `clock-heal` that returned it to real time, labelled with the offset (a bump's step, a strobe's delta
//! and period, a skew's rate and what it had gained by its heal).
//!
//! Clock windows are kept apart from the process windows of [`super::timeline`]: a clock fault does not take its node
//! down, so a kill of a node whose clock is moved draws both, one over the other.

use super::timeline::{ms, FaultWindow};
use faultline_workloads::history::{History, Nemesis};
use serde_json::Value;
use std::collections::BTreeMap;

/// One window per node a clock fault moved; open windows (no heal recorded) run to the end of the run.
pub fn windows(history: &History) -> Vec<FaultWindow> {
    let mut windows: Vec<FaultWindow> = Vec::new();
    // (node, fault id) -> index of its open window.
    let mut open: BTreeMap<(String, u64), usize> = BTreeMap::new();
    for event in &history.events {
        let (Some(node), Some(fault_id)) = (event.node.clone(), event.value["fault_id"].as_u64()) else {
            continue;
        };
        if event.value.get("error").is_some() {
            continue;
        }
        if event.is(Nemesis::Clock) {
            open.insert((node.clone(), fault_id), windows.len());
            windows.push(FaultWindow {
                kind: "clock",
                node: node.clone(),
                label: format!("clock {node} {}", offset_label(&event.value["clock"])),
                t0: ms(event.time_ns),
                t1: None,
                detail: detail(&event.value),
                index: event.index,
                fault_id: Some(fault_id),
            });
        } else if event.is(Nemesis::ClockHeal) {
            if let Some(i) = open.remove(&(node, fault_id)) {
                windows[i].t1 = Some(ms(event.time_ns));
                if let Some(gained) = event.value["offset_ms_before"].as_i64() {
                    if event.value.get("rate_before").is_some() {
                        windows[i]
                            .label
                            .push_str(&format!(", {} at the heal", signed_seconds(gained)));
                    }
                }
            }
        }
    }
    windows
}

/// `+2.5 s`, `−30 s`, `strobe ±200 ms every 10 ms`, `skew 1.5x`.
fn offset_label(clock: &Value) -> String {
    match clock["kind"].as_str() {
        Some("bump") => signed_seconds(clock["offset_ms"].as_i64().unwrap_or(0)),
        Some("strobe") => format!(
            "strobe {} every {} ms",
            signed_seconds(clock["delta_ms"].as_i64().unwrap_or(0)),
            clock["period_ms"].as_u64().unwrap_or(0)
        ),
        Some("skew") => format!("skew {}x", clock["rate"].as_f64().unwrap_or(1.0)),
        _ => "moved".into(),
    }
}

fn signed_seconds(offset_ms: i64) -> String {
    let sign = if offset_ms < 0 { "−" } else { "+" };
    let magnitude = offset_ms.unsigned_abs();
    if magnitude < 1000 {
        format!("{sign}{magnitude} ms")
    } else {
        format!("{sign}{} s", magnitude as f64 / 1000.0)
    }
}

fn detail(value: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(source) = value["source"].as_str() {
        parts.push(source.to_string());
    }
    if let Some(target) = value["target"].as_str() {
        parts.push(format!("target {target}"));
    }
    if let Some(id) = value["fault_id"].as_u64() {
        parts.push(format!("fault #{id}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::history::{Event, EventKind};
    use serde_json::json;

    /// A nemesis event (every clock row's event is one).
    fn event(index: u64, time_ms: u64, f: &str, node: &str, value: Value) -> Event {
        super::super::timeline::tests::event(index, time_ms, EventKind::Nemesis, f, node, value)
    }

    #[test]
    fn given_clock_faults_and_heals_when_built_should_draw_one_labelled_window_per_node_and_fault() {
        let events = vec![
            event(
                0,
                1000,
                "clock",
                "n1",
                json!({"fault_id": 3, "source": "targeted", "target": "one",
                "clock": {"kind": "bump", "offset_ms": -2500}}),
            ),
            event(1, 1200, "kill", "n1", json!({"fault_id": 4})),
            event(
                2,
                1500,
                "clock",
                "n2",
                json!({"fault_id": 5, "clock": {"kind": "skew", "rate": 1.5}}),
            ),
            event(
                3,
                3000,
                "clock-heal",
                "n1",
                json!({"fault_id": 3, "clock": "real", "offset_ms_before": -2500}),
            ),
            event(
                4,
                3500,
                "clock-heal",
                "n2",
                json!({"fault_id": 5, "clock": "real", "offset_ms_before": 1000,
                "rate_before": 1.5}),
            ),
            event(
                5,
                4000,
                "clock",
                "n3",
                json!({"fault_id": 6, "clock": {"kind": "strobe", "delta_ms": 200,
                "period_ms": 10}}),
            ),
            event(6, 4000, "clock", "n1", json!({"fault_id": 7, "error": "no clocks"})),
        ];
        let history = History {
            events,
            truncated_tail: false,
        };
        let windows = windows(&history);
        let got: Vec<(&str, f64, Option<f64>)> = windows.iter().map(|w| (w.label.as_str(), w.t0, w.t1)).collect();
        assert_eq!(
            got,
            [
                ("clock n1 −2.5 s", 1000.0, Some(3000.0)),
                ("clock n2 skew 1.5x, +1 s at the heal", 1500.0, Some(3500.0)),
                ("clock n3 strobe +200 ms every 10 ms", 4000.0, None),
            ]
        );
        assert!(windows.iter().all(|w| w.kind == "clock"));
    }
}
