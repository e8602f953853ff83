//! The timeline's observation lanes: per node, what the harness saw it report. A step line of its durable progress
//! (from `status` observations, with the `last-durable` value before each stop and the `recovered` value after each
//! boot as points) over a strip coloured by its role (primary, backup, other); and, from the durability check, a drop
//! from what a node had durably reached before a stop to what it booted with, for each restart judged bad or a
//! warning.
//!
//! The data is kept small because a 30-minute run records about 6,000 status events: the line keeps only the points
//! where `durable` changed, the strip only the points where the role, view or primary changed, and times are rounded
//! to 0.1 ms. A history without observations yields no lanes, and the page data then has no `obs` key at all, so an
//! old run's page is the same as before.

use super::durability::{self, Restart};
use super::timeline::ms;
use crate::results::Results;
use faultline_workloads::history::{Event, History, Observation};
use faultline_workloads::position::Position;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One node's observation lane.
#[derive(Debug, Default, Serialize)]
pub struct NodeLane {
    /// The node.
    pub node: String,
    /// Step line of durable progress, `[t_ms, durable]`; `durable` is null from a stop on (the line breaks there).
    pub durable: Vec<(f64, Option<u64>)>,
    /// Role changes, `[t_ms, role, view, primary]`; `role` is null from a stop on (the strip breaks there).
    pub roles: Vec<(f64, Option<String>, Value, Value)>,
    /// The `last-durable` and `recovered` points.
    pub points: Vec<Point>,
    /// Spans `[t0_ms, t1_ms]` in which the node reported itself `lagging` (its durable progress trailing the highest
    /// fresh one by the harness's lag threshold), drawn as an amber band on its lane; an open span ends at the node's
    /// next report that does not lag, or at its stop.
    pub lagging: Vec<(f64, f64)>,
    /// Start of the lagging span still open while building.
    #[serde(skip)]
    lag_open: Option<f64>,
}

/// A `last-durable` or `recovered` value, drawn as a dot on the line.
#[derive(Debug, Serialize)]
pub struct Point {
    /// Time, ms since the run started.
    pub t: f64,
    /// The progress number.
    pub d: Option<u64>,
    /// `last-durable` or `recovered`.
    pub f: &'static str,
    /// What a person reads on hover.
    pub label: String,
    /// History index.
    pub index: u64,
}

/// A restart the durability check judged bad or a warning: drawn as a drop from `from` at `t0` to `to` at `t1`.
#[derive(Debug, Serialize)]
pub struct DurableDrop {
    /// The node.
    pub node: String,
    /// The stop, ms since the run started.
    pub t0: f64,
    /// The boot, ms since the run started.
    pub t1: f64,
    /// Durable progress before the stop.
    pub from: Option<u64>,
    /// Progress the node booted with.
    pub to: Option<u64>,
    /// `bad` or `warn`.
    pub sev: &'static str,
    /// Short label, e.g. `n2 forgot 198`.
    pub label: String,
    /// The check's sentence.
    pub text: String,
}

/// Every observation lane and drop of a run.
#[derive(Debug, Default, Serialize)]
pub struct Lanes {
    /// One lane per node that reported anything, in node order.
    pub nodes: Vec<NodeLane>,
    /// Drops of the durability check's bad and warning restarts.
    pub drops: Vec<DurableDrop>,
}

impl Lanes {
    /// True when there is nothing to draw (an old history, or a system whose adapter reports nothing).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.drops.is_empty()
    }
}

/// Time rounded to 0.1 ms: precise enough to place a point, short enough for 6,000 of them.
fn t_ms(time_ns: u64) -> f64 {
    (ms(time_ns) * 10.0).round() / 10.0
}

/// Builds the lanes from a history's observations and the durability check in `results`.
pub fn build(history: &History, results: &Results) -> Lanes {
    let mut by_node: BTreeMap<String, NodeLane> = BTreeMap::new();
    for event in &history.events {
        let Some(node) = &event.node else {
            continue;
        };
        if event.is(Observation::Status) {
            status(lane(&mut by_node, node), event);
        } else if event.is(Observation::LastDurable) {
            last_durable(lane(&mut by_node, node), event);
        } else if event.is(Observation::Recovered) {
            recovered(lane(&mut by_node, node), event);
        }
    }
    let drops = drops(results);
    for dropped in &drops {
        lane(&mut by_node, &dropped.node);
    }
    let end = history.events.last().map_or(0.0, |e| t_ms(e.time_ns));
    for lane in by_node.values_mut() {
        if let Some(t0) = lane.lag_open.take() {
            lane.lagging.push((t0, end.max(t0)));
        }
    }
    let order = super::nodes::sorted_nodes(by_node.keys());
    let nodes = order.iter().filter_map(|n| by_node.remove(n)).collect();
    Lanes { nodes, drops }
}

fn lane<'a>(by_node: &'a mut BTreeMap<String, NodeLane>, node: &str) -> &'a mut NodeLane {
    by_node.entry(node.to_string()).or_insert_with(|| NodeLane {
        node: node.to_string(),
        ..NodeLane::default()
    })
}

fn status(lane: &mut NodeLane, event: &Event) {
    let v = &event.value;
    let t = t_ms(event.time_ns);
    let lagging = v["lagging"].as_bool() == Some(true);
    match (lane.lag_open, lagging) {
        (None, true) => lane.lag_open = Some(t),
        (Some(t0), false) => {
            lane.lagging.push((t0, t));
            lane.lag_open = None;
        }
        _ => {}
    }
    if let Some(durable) = position_total(&v["durable"]) {
        if lane.durable.last().map(|&(_, d)| d) != Some(Some(durable)) {
            lane.durable.push((t, Some(durable)));
        }
    }
    let role = v["role"].as_str().map(str::to_string);
    let (view, primary) = (v["view"].clone(), v["primary"].clone());
    let same = lane
        .roles
        .last()
        .is_some_and(|(_, r, vw, p)| *r == role && *vw == view && *p == primary);
    if !same {
        lane.roles.push((t, role, view, primary));
    }
}

/// The node stopped: its last durable value is a point, and the line and the strip break until it reports again.
fn last_durable(lane: &mut NodeLane, event: &Event) {
    let v = &event.value;
    let t = t_ms(event.time_ns);
    let durable = position_total(&v["durable"]);
    let cause = v["cause"].as_str().unwrap_or("stop");
    let age = v["age_ms"]
        .as_u64()
        .map(|a| format!(", reported {a} ms before"))
        .unwrap_or_default();
    let shown = durable.map_or("unknown".to_string(), |d| d.to_string());
    lane.points.push(Point {
        t,
        d: durable,
        f: Observation::LastDurable.as_str(),
        label: format!(
            "{} durable {shown} before {cause}{age}",
            event.node.as_deref().unwrap_or("?")
        ),
        index: event.index,
    });
    if let Some(d) = durable {
        lane.durable.push((t, Some(d)));
    }
    if let Some(t0) = lane.lag_open.take() {
        lane.lagging.push((t0, t));
    }
    lane.durable.push((t, None));
    lane.roles.push((t, None, Value::Null, Value::Null));
}

/// The node booted: the value it booted with starts its line again.
fn recovered(lane: &mut NodeLane, event: &Event) {
    let v = &event.value;
    let t = t_ms(event.time_ns);
    let recovered = position_total(&v["recovered"]);
    let shown = recovered.map_or("unknown".to_string(), |d| d.to_string());
    let line = v["line"].as_str().map(|l| format!("\n{l}")).unwrap_or_default();
    lane.points.push(Point {
        t,
        d: recovered,
        f: Observation::Recovered.as_str(),
        label: format!("{} booted with {shown}{line}", event.node.as_deref().unwrap_or("?")),
        index: event.index,
    });
    if let Some(d) = recovered {
        lane.durable.push((t, Some(d)));
    }
}

/// The durability check's restarts judged bad (`forgotten`, `booted-on-damage`) or a warning (`damage-truncated`).
fn drops(results: &Results) -> Vec<DurableDrop> {
    let Some(check) = results.checks.iter().find(|c| c.name == "durability") else {
        return Vec::new();
    };
    durability::restarts(&check.details)
        .into_iter()
        .filter(|(_, r)| matches!(r.severity(), "bad" | "warn"))
        .filter_map(|(node, r)| durable_drop(node, &r))
        .collect()
}

/// A recorded position as the lane draws it: a number, or a vector clock's components summed.
fn position_total(value: &Value) -> Option<u64> {
    Position::from_json(value).map(|p| p.total())
}

fn durable_drop(node: String, r: &Restart) -> Option<DurableDrop> {
    let t0 = t_ms(r.stop_ns?);
    let t1 = r.boot_ns.map_or(t0, t_ms);
    // A vector clock is drawn at its components' sum (the lane is one number); its table row says it whole.
    let (from, to) = (
        r.durable.as_ref().map(Position::total),
        r.recovered.as_ref().map(Position::total),
    );
    let forgotten = r.forgotten.or_else(|| Some(from?.saturating_sub(to?)));
    let label = match (r.judgement.as_str(), forgotten) {
        (_, Some(n)) if n > 0 => format!("{node} forgot {n}"),
        (judgement, _) => format!("{node} {judgement}"),
    };
    Some(DurableDrop {
        node,
        t0,
        t1,
        from,
        to,
        sev: r.severity(),
        label,
        text: r.text.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::history::EventKind;
    use serde_json::json;

    fn status(index: u64, time_ms: u64, node: &str, durable: u64, role: &str) -> Event {
        Event {
            index,
            time_ns: time_ms * 1_000_000,
            kind: EventKind::Observation,
            process: None,
            worker: None,
            node: Some(node.into()),
            f: "status".into(),
            key: None,
            value: json!({"role": role, "primary": "n1", "view": 1, "durable": durable,
                          "progress": {"op": durable, "commit": durable}}),
            error: None,
        }
    }

    fn results() -> Results {
        serde_json::from_value(
            json!({"schema_version": 1, "faultline_version": "t", "verdict": "valid", "reason": "",
            "plan": "p", "system": "s", "seed": 1, "started_at": "", "duration_ms": 0, "store_dir": "", "repro": "",
            "checks": [], "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0,
            "lifecycle": 0}}),
        )
        .expect("a minimal results.json")
    }

    #[test]
    fn given_a_30_minute_run_of_status_events_when_built_should_stay_small_and_keep_only_changes() {
        // Three nodes, one status a second each for 30 minutes: about the 6,000 events of a real run.
        let mut events = Vec::new();
        for second in 0..1800u64 {
            for (n, node) in ["n1", "n2", "n3"].iter().enumerate() {
                let role = if n == 0 { "primary" } else { "backup" };
                // Progress moves every other second: the line keeps only the changes.
                events.push(status(
                    events.len() as u64,
                    second * 1000 + n as u64,
                    node,
                    second / 2,
                    role,
                ));
            }
        }
        let history = History {
            events,
            truncated_tail: false,
        };
        let lanes = build(&history, &results());
        assert_eq!(lanes.nodes.len(), 3);
        for lane in &lanes.nodes {
            assert_eq!(
                lane.durable.len(),
                900,
                "{}: one point per change of durable",
                lane.node
            );
            assert_eq!(lane.roles.len(), 1, "{}: the role never changed", lane.node);
        }
        let size_bytes = serde_json::to_string(&lanes).unwrap().len();
        assert!(
            size_bytes < 100_000,
            "the embedded lanes stay small: {size_bytes} bytes"
        );
    }

    #[test]
    fn given_lagging_reports_when_built_should_span_each_lag_until_a_report_without_it_the_stop_or_the_end() {
        let lagging = |index: u64, time_ms: u64, node: &str, lags: bool| {
            let mut event = status(index, time_ms, node, 10, "backup");
            event.value["lagging"] = json!(lags);
            event
        };
        let mut stop = status(5, 500, "n2", 10, "backup");
        stop.f = Observation::LastDurable.as_str().into();
        stop.value = json!({"durable": 10, "cause": "kill"});
        let events = vec![
            lagging(0, 0, "n2", false),
            lagging(1, 100, "n2", true),
            lagging(2, 200, "n2", true),
            lagging(3, 300, "n2", false),
            lagging(4, 400, "n2", true),
            stop,
            lagging(6, 600, "n3", true),
            lagging(7, 900, "n2", false),
        ];
        let history = History {
            events,
            truncated_tail: false,
        };
        let lanes = build(&history, &results());
        assert_eq!(lanes.nodes[0].lagging, vec![(100.0, 300.0), (400.0, 500.0)]);
        assert_eq!(
            lanes.nodes[1].lagging,
            vec![(600.0, 900.0)],
            "open until the history ends"
        );
        let json = serde_json::to_value(&lanes).unwrap();
        assert!(json["nodes"][0].get("lag_open").is_none(), "{json}");
    }

    #[test]
    fn given_no_observations_when_built_should_be_empty() {
        let history = History {
            events: vec![],
            truncated_tail: false,
        };
        assert!(build(&history, &results()).is_empty());
    }
}
