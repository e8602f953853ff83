//! Membership on the timeline: each membership step as a band on its node's row, from when it began (`duration_ms`
//! before its record) to when it ended, labelled with the change and its outcome; and, on every node's row, the
//! spans in which it was no member (a spare not yet added, a node removed), from the `members` records of the
//! history. Drawn only for a run whose members changed or that kept spares.

use super::timeline::{ms, FaultWindow};
use faultline_workloads::history::{History, Nemesis};
use faultline_workloads::membership::Members;
use std::collections::BTreeSet;

/// The membership windows of a run: non-member spans first (drawn beneath every other window), then the steps.
pub fn windows(history: &History) -> Vec<FaultWindow> {
    let mut windows = non_member_spans(history);
    windows.extend(
        history
            .events
            .iter()
            .filter(|e| e.is(Nemesis::Membership))
            .filter_map(|event| {
                let node = event.node.clone()?;
                let v = &event.value;
                let outcome = v["outcome"].as_str().unwrap_or("?");
                if outcome == "skipped" {
                    return None; // a marker says why; nothing ran
                }
                let duration_ms = v["duration_ms"].as_u64().unwrap_or(0) as f64;
                let end = ms(event.time_ns);
                let step = v["step"].as_str().unwrap_or("change");
                let change = match v["change"].as_str() {
                    Some("replace") => format!("replace: {step}"),
                    _ => step.to_string(),
                };
                let members = faultline_workloads::membership::names(&v["members"]);
                Some(FaultWindow {
                    kind: "membership",
                    node: node.clone(),
                    label: format!("{change} {node} ({outcome})"),
                    t0: (end - duration_ms).max(0.0),
                    t1: Some(end),
                    detail: format!(
                        "members after: {}{}",
                        members.into_iter().collect::<Vec<_>>().join(", "),
                        v["error"].as_str().map(|e| format!("; {e}")).unwrap_or_default()
                    ),
                    index: event.index,
                    fault_id: v["fault_id"].as_u64(),
                })
            }),
    );
    windows
}

/// The spans in which each node that was ever named was no member, when the members changed or spares were kept.
fn non_member_spans(history: &History) -> Vec<FaultWindow> {
    let members = Members::of(history);
    let Some(first) = members.records().first() else {
        return Vec::new();
    };
    let nodes: BTreeSet<String> = history.events.iter().filter_map(|e| e.node.clone()).collect();
    let spares = nodes.iter().any(|node| !first.members.contains(node));
    if !members.changed() && !spares {
        return Vec::new();
    }
    let end_ns = history.events.last().map_or(0, |e| e.time_ns);
    let mut windows = Vec::new();
    for node in &nodes {
        let mut from = 0u64;
        for (start, stop) in members.spans(node, end_ns).into_iter().chain([(end_ns, end_ns)]) {
            if start > from {
                windows.push(FaultWindow {
                    kind: "non-member",
                    node: node.clone(),
                    label: format!("{node} not a member"),
                    t0: ms(from),
                    t1: (start < end_ns).then(|| ms(start)),
                    detail: "a spare, or removed by a membership change".to_string(),
                    index: first.index,
                    fault_id: None,
                });
            }
            from = stop;
        }
    }
    windows
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::history::{Event, EventKind};
    use serde_json::json;

    fn event(index: u64, ms: u64, kind: EventKind, f: &str, node: Option<&str>, value: serde_json::Value) -> Event {
        Event {
            index,
            time_ns: ms * 1_000_000,
            kind,
            process: None,
            worker: None,
            node: node.map(str::to_string),
            f: f.into(),
            key: None,
            value,
            error: None,
        }
    }

    #[test]
    fn given_a_grow_and_a_removal_when_drawn_should_band_each_step_and_grey_each_node_outside_the_cluster() {
        let members = |index, ms, names: &[&str]| {
            event(
                index,
                ms,
                EventKind::Observation,
                "members",
                None,
                json!({"members": names}),
            )
        };
        let step = |index, ms, node, step, duration_ms| {
            event(
                index,
                ms,
                EventKind::Nemesis,
                "membership",
                Some(node),
                json!({"change": step, "step": step, "outcome": "ok", "duration_ms": duration_ms, "members": []}),
            )
        };
        let history = History {
            events: vec![
                members(0, 0, &["n1", "n2"]),
                event(1, 1, EventKind::Lifecycle, "start", Some("n3"), json!({})),
                members(2, 1000, &["n1", "n2", "n3"]),
                step(3, 1000, "n3", "add", 200),
                members(4, 3000, &["n1", "n3"]),
                step(5, 3000, "n2", "remove", 100),
                event(6, 5000, EventKind::Meta, "run-end", None, json!({})),
            ],
            truncated_tail: false,
        };
        let windows = windows(&history);
        let spans: Vec<(&str, &str, f64, Option<f64>)> =
            windows.iter().map(|w| (w.kind, w.node.as_str(), w.t0, w.t1)).collect();
        assert_eq!(
            spans,
            [
                ("non-member", "n2", 3000.0, None),
                ("non-member", "n3", 0.0, Some(1000.0)),
                ("membership", "n3", 800.0, Some(1000.0)),
                ("membership", "n2", 2900.0, Some(3000.0)),
            ]
        );
        assert_eq!(windows[2].label, "add n3 (ok)");
    }
}
