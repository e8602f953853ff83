//! Faults and node lifecycle on the timeline: fault windows (a node down or paused, from the event that began it to
//! the one that ended it) and point markers (boots, refusals, crashes, disk surgery, phase changes).

use faultline_workloads::history::{Event, EventKind, History, Lifecycle, Meta, Name, Nemesis};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A span of time during which a node was faulted, drawn as a shaded band.
#[derive(Debug, Clone, Serialize)]
pub struct FaultWindow {
    /// `kill`, `pause`, `crash`, `refused`, `restart-all`, `clock` ([`super::clocks`]), `membership` (a change) or
    /// `non-member` ([`super::membership`]).
    pub kind: &'static str,
    /// The node.
    pub node: String,
    /// Short label, e.g. `kill n2`.
    pub label: String,
    /// Start, ms since the run started.
    pub t0: f64,
    /// End, ms since the run started; none if it lasted until the end of the run.
    pub t1: Option<f64>,
    /// Where it came from (`flap`, `targeted`, target role, fault id).
    pub detail: String,
    /// History index of the event that began it.
    pub index: u64,
    /// The nemesis fault id, when the fault had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_id: Option<u64>,
}

/// A trigger drawn from its condition to its fault: from the diamond on the subject's row at the time the condition
/// was observed to the start of the fault window it caused (on the faulted node's row, or the network row).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TriggerLink {
    /// When the condition was observed, ms since the run started.
    pub t0: f64,
    /// The row of the trigger's subject.
    pub from: String,
    /// When the fault began, ms since the run started.
    pub t1: f64,
    /// The row of the fault window.
    pub to: String,
    /// The trigger's index in the plan.
    pub trigger: u64,
}

/// A point event on the timeline.
#[derive(Debug, Clone, Serialize)]
pub struct Marker {
    /// Time, ms since the run started.
    pub t: f64,
    /// The node, for node events; none for run-wide events (phases).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Event name (`boot-refused`, `disk-surgery`, `restart-all` ...).
    pub f: String,
    /// What a person reads on hover.
    pub label: String,
    /// `bad`, `warn`, `ok` or `info`.
    pub sev: &'static str,
    /// History index (the node section links events by `ev-<index>`).
    pub index: u64,
}

/// Fault windows and markers of a run.
#[derive(Debug, Default, Serialize)]
pub struct Timeline {
    /// Fault windows, by start time.
    pub faults: Vec<FaultWindow>,
    /// Markers, by time.
    pub markers: Vec<Marker>,
    /// Each fired trigger, from its condition to each window of the fault it caused.
    pub links: Vec<TriggerLink>,
    /// When the fault phase began (ms since the run started): the zero of every time the report shows, the clock of
    /// a plan's `at:` ([`faultline_workloads::History::phase_start_ns`]). Positions stay on the run clock.
    pub phase_start_ms: f64,
}

/// Milliseconds since the run started (where things are drawn; what the report *shows* is [`shown`]).
pub fn ms(time_ns: u64) -> f64 {
    time_ns as f64 / 1e6
}

/// A time (`t_ms` since the run started) as the report shows it: seconds on the phase clock that starts at
/// `phase_start_ms`, so a fault a plan puts `at: 17s` reads as at 17 s everywhere (the set-up before it is negative).
pub fn shown(t_ms: f64, phase_start_ms: f64) -> String {
    format!("{:.3} s", (t_ms - phase_start_ms) / 1000.0)
}

/// The severity of a lifecycle or nemesis event, for colour.
pub fn severity(event: &Event) -> &'static str {
    if event.value.get("error").is_some() {
        return "warn";
    }
    use Lifecycle as L;
    match event.name() {
        Some(Name::Lifecycle(
            L::BootRefused
            | L::VerifyRefused
            | L::Crashed
            | L::BootTimeout
            | L::RecoveryTimeout
            | L::ConvergenceTimeout
            | L::SetupFailed
            | L::VerifyError,
        )) => "bad",
        Some(
            Name::Nemesis(Nemesis::DiskSurgery | Nemesis::Kill | Nemesis::Pause | Nemesis::Stop | Nemesis::Corrupt)
            | Name::Lifecycle(L::Kill)
            | Name::Meta(Meta::Interrupted),
        ) => "warn",
        Some(
            Name::Lifecycle(L::BootOk | L::VerifyOk | L::Recovered | L::Converged | L::ClusterReady)
            | Name::Nemesis(Nemesis::RollingReady),
        ) => "ok",
        _ => "info",
    }
}

/// A one-line description of an event's value, for hovers and tables.
pub fn describe_value(event: &Event) -> String {
    let Value::Object(map) = &event.value else {
        return match &event.value {
            Value::Null => String::new(),
            other => other.to_string(),
        };
    };
    map.iter()
        .filter(|(k, _)| k.as_str() != "log_tail")
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            Value::Object(lost) if k == "lost" => format!("lost: {}", describe_lost(lost)),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a power loss dropped (its `lost` record), in words: each file cut back with its sizes, the directory entries
/// dropped or restored, the torn write; at most [`LOST_NAMED_MAX`] of each, then how many more. A raw JSON blob of
/// it in a table cell was unreadable.
fn describe_lost(lost: &serde_json::Map<String, Value>) -> String {
    let list = |key: &str| lost.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let bytes = |v: &Value| v.as_u64().map_or("?".to_string(), |b| b.to_string());
    let mut parts = Vec::new();
    let files = list("files");
    if !files.is_empty() {
        let shown = files.iter().map(|f| {
            let restored = f["restored_bytes"].as_u64().filter(|b| *b > 0);
            format!(
                "{} {}→{} bytes{}",
                f["path"].as_str().unwrap_or("?"),
                bytes(&f["size_before_bytes"]),
                bytes(&f["size_after_bytes"]),
                restored.map_or(String::new(), |b| format!(" ({b} overwritten bytes put back)"))
            )
        });
        parts.push(format!(
            "{} file(s) cut back to what was synced: {}",
            files.len(),
            named(shown)
        ));
    }
    for (key, what) in [
        ("entries_dropped", "entries dropped"),
        ("entries_restored", "removed entries back"),
    ] {
        let entries = list(key);
        if !entries.is_empty() {
            let shown = entries.iter().map(|e| e.as_str().unwrap_or("?").to_string());
            parts.push(format!("{} {what}: {}", entries.len(), named(shown)));
        }
    }
    if let Some(torn) = lost.get("torn_write").filter(|t| t.is_object()) {
        parts.push(format!(
            "torn write to {} at {}: {} of {} bytes kept",
            torn["path"].as_str().unwrap_or("?"),
            bytes(&torn["offset"]),
            bytes(&torn["kept_bytes"]),
            bytes(&torn["write_bytes"])
        ));
    }
    let warnings = list("warnings");
    if !warnings.is_empty() {
        parts.push(format!(
            "{} warning(s): {}",
            warnings.len(),
            named(warnings.iter().map(Value::to_string))
        ));
    }
    if parts.is_empty() {
        return "nothing (everything was synced)".to_string();
    }
    parts.join("; ")
}

/// How many files or entries of a power loss are named before "and N more".
const LOST_NAMED_MAX: usize = 3;

/// The first [`LOST_NAMED_MAX`] of `items`, comma-separated, then how many more.
fn named(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.take(LOST_NAMED_MAX).collect();
    if total > LOST_NAMED_MAX {
        shown.push(format!("and {} more", total - LOST_NAMED_MAX));
    }
    shown.join(", ")
}

/// Builds the fault windows and markers of a history.
pub fn build(history: &History) -> Timeline {
    let mut timeline = Timeline {
        phase_start_ms: ms(history.phase_start_ns()),
        ..Timeline::default()
    };
    // node -> index into `faults` of the window still open on it.
    let mut open: BTreeMap<String, usize> = BTreeMap::new();
    let mut restart_all = false;
    // Fired triggers: their marker, the fault id they caused, their index.
    let mut fired: Vec<(Marker, u64, u64)> = Vec::new();
    for event in &history.events {
        let is_fault_or_node = matches!(event.kind, EventKind::Nemesis | EventKind::Lifecycle);
        if event.is(Meta::Interrupted) {
            timeline.markers.push(marker(event, "run interrupted".into()));
        }
        if !is_fault_or_node {
            continue;
        }
        if event.is(Lifecycle::RestartAll) {
            restart_all = true;
        }
        if event.is(Nemesis::Trigger) {
            // At its node's row, at the time the condition was observed (not as a run-wide phase line).
            if let Some(marker) = trigger_marker(event) {
                if let (Some(id), true) = (event.value["fault_id"].as_u64(), marker.sev == "warn") {
                    fired.push((marker.clone(), id, event.value["trigger"].as_u64().unwrap_or(0)));
                }
                timeline.markers.push(marker);
            }
            continue;
        }
        let Some(node) = event.node.clone() else {
            network_window(&mut timeline, &mut open, event);
            timeline.markers.push(marker(event, phase_label(event)));
            continue;
        };
        let failed = event.value.get("error").is_some();
        let name = event.name();
        let window = match name {
            _ if failed => None,
            Some(Name::Nemesis(Nemesis::Kill)) => Some(("kill", format!("kill {node}"))),
            Some(Name::Nemesis(Nemesis::Pause)) => Some(("pause", format!("pause {node}"))),
            Some(Name::Nemesis(Nemesis::PowerLoss)) => Some(("power-loss", format!("power loss {node}"))),
            Some(Name::Nemesis(Nemesis::Stop)) => Some(("stop", format!("stop {node}"))),
            Some(Name::Nemesis(Nemesis::Corrupt)) => Some(("corrupt", format!("corrupt {node}"))),
            Some(Name::Lifecycle(Lifecycle::Kill)) if restart_all => {
                Some(("restart-all", format!("restart-all {node}")))
            }
            Some(Name::Lifecycle(Lifecycle::Kill)) => Some(("kill", format!("kill {node}"))),
            Some(Name::Lifecycle(Lifecycle::Crashed)) => Some(("crash", format!("{node} crashed"))),
            Some(Name::Lifecycle(Lifecycle::BootRefused)) => Some(("refused", format!("{node} refused to boot"))),
            _ => None,
        };
        let ends = matches!(
            name,
            Some(Name::Nemesis(Nemesis::Start | Nemesis::Resume) | Name::Lifecycle(Lifecycle::Start))
        );
        if ends || window.is_some() {
            if let Some(i) = open.remove(&node) {
                timeline.faults[i].t1 = Some(ms(event.time_ns));
            }
        }
        if let Some((kind, mut label)) = window {
            if let Some(trigger) = event.value.get("trigger").and_then(Value::as_u64) {
                label.push_str(&format!(" (trigger #{trigger})"));
            }
            if let Some(step) = rolling_step(&event.value) {
                label.push_str(&format!(" (rolling, {step})"));
            }
            open.insert(node.clone(), timeline.faults.len());
            timeline.faults.push(FaultWindow {
                kind,
                node: node.clone(),
                label,
                t0: ms(event.time_ns),
                t1: None,
                detail: fault_detail(event),
                index: event.index,
                fault_id: event.value["fault_id"].as_u64(),
            });
        }
        let label = format!("{} {node}{}", event.f, suffix(event));
        timeline.markers.push(marker(event, label));
    }
    timeline.faults.extend(super::clocks::windows(history));
    // Non-member spans first, so every other window is drawn over them.
    let mut membership = super::membership::windows(history);
    let steps = membership.split_off(membership.iter().take_while(|w| w.kind == "non-member").count());
    timeline.faults.splice(0..0, membership);
    timeline.faults.extend(steps);
    for (marker, id, trigger) in fired {
        let windows = timeline.faults.iter().filter(|f| f.fault_id == Some(id));
        for window in windows {
            timeline.links.push(TriggerLink {
                t0: marker.t,
                from: marker.node.clone().unwrap_or_default(),
                t1: window.t0,
                to: window.node.clone(),
                trigger,
            });
        }
    }
    timeline
}

/// Row of the timeline that shows network faults (partitions and link faults have no single node).
pub const NETWORK_ROW: &str = "net";

/// Opens or closes a partition or link-fault window on the network row.
fn network_window(timeline: &mut Timeline, open: &mut BTreeMap<String, usize>, event: &Event) {
    if event.kind != EventKind::Nemesis || event.value.get("error").is_some() {
        return;
    }
    let id = event.value["fault_id"].as_u64().unwrap_or(u64::MAX);
    let Some(Name::Nemesis(name)) = event.name() else {
        return;
    };
    let (kind, key) = match name {
        Nemesis::PartitionStart | Nemesis::PartitionStop => ("partition", format!("{NETWORK_ROW}/partition/{id}")),
        Nemesis::LinkFault | Nemesis::LinkHeal => ("link", format!("{NETWORK_ROW}/link/{id}")),
        _ => return,
    };
    if matches!(name, Nemesis::PartitionStart | Nemesis::LinkFault) {
        let label = match kind {
            "partition" => format!("partition {}", event.value["label"].as_str().unwrap_or("?")),
            _ => format!(
                "{} on {}",
                event.value["fault"]["kind"].as_str().unwrap_or("link fault"),
                event.value["links"]
            ),
        };
        open.insert(key, timeline.faults.len());
        timeline.faults.push(FaultWindow {
            kind,
            node: NETWORK_ROW.to_string(),
            label,
            t0: ms(event.time_ns),
            t1: None,
            detail: fault_detail(event),
            index: event.index,
            fault_id: Some(id),
        });
    } else if let Some(i) = open.remove(&key) {
        timeline.faults[i].t1 = Some(ms(event.time_ns));
    }
}

/// A trigger's firing as a marker on its subject's row, at the time its condition was observed (the event is
/// recorded after the fault it caused: `applied_ms`, the drawn `delay_ms` and the reaction `latency_ms` earlier).
/// Firings without a subject have no row; the Coverage section counts them.
fn trigger_marker(event: &Event) -> Option<Marker> {
    let v = &event.value;
    event.node.as_ref()?;
    let number = |field: &str| v[field].as_u64().unwrap_or(0);
    let before = (number("applied_ms") + number("delay_ms") + number("latency_ms")) as f64;
    let head = format!(
        "trigger #{}: {} {}",
        number("trigger"),
        v["condition"].as_str().unwrap_or("?"),
        v["subject"].as_str().unwrap_or("")
    );
    let action = v["action"].as_str().unwrap_or("?");
    let (label, sev) = if v["declined"] == true {
        (format!("{head}: declined ({action}, by its probability)"), "info")
    } else if let Some(why) = v["skipped"].as_str() {
        (format!("{head}: {action} skipped: {why}"), "info")
    } else if v["otherwise"] == true {
        (
            format!(
                "{head} not seen in its window → {action} (fault {}) anyway, at its `otherwise` time",
                number("fault_id")
            ),
            "warn",
        )
    } else {
        (
            format!(
                "{head} → {action} (fault {}) after {} ms, reaction {} ms",
                number("fault_id"),
                number("delay_ms"),
                number("latency_ms")
            ),
            "warn",
        )
    };
    let mut marker = marker(event, label);
    marker.t = (marker.t - before).max(0.0);
    marker.sev = sev;
    Some(marker)
}

fn marker(event: &Event, label: String) -> Marker {
    Marker {
        t: ms(event.time_ns),
        node: event.node.clone(),
        f: event.f.clone(),
        label,
        sev: severity(event),
        index: event.index,
    }
}

fn suffix(event: &Event) -> String {
    let text = match event.name() {
        Some(Name::Lifecycle(Lifecycle::BootRefused | Lifecycle::VerifyRefused)) => {
            event.value["line"].as_str().map(str::to_string)
        }
        Some(Name::Lifecycle(Lifecycle::Crashed)) => event.value["exit"].as_str().map(|e| format!("exit {e}")),
        Some(Name::Lifecycle(Lifecycle::BootOk)) => event.value["boot_ms"].as_u64().map(|b| format!("after {b} ms")),
        Some(Name::Nemesis(Nemesis::RollingReady)) => rolling_step(&event.value).map(|step| {
            match (event.value["error"].as_str(), event.value["waited_ms"].as_u64()) {
                (Some(error), _) => format!("{step}: not ready: {error}"),
                (None, Some(waited)) => format!("{step}: ready again {waited} ms after its restart"),
                (None, None) => step,
            }
        }),
        _ if event.value.get("error").is_some() => event.value["error"].as_str().map(|e| format!("failed: {e}")),
        _ => None,
    };
    text.map(|t| format!(": {t}")).unwrap_or_default()
}

/// `step 2 of 3` for a step of a rolling fault (`targets: each`).
fn rolling_step(value: &Value) -> Option<String> {
    let rolling = value.get("rolling")?;
    Some(format!(
        "step {} of {}",
        rolling["step"].as_u64()?,
        rolling["of"].as_u64()?
    ))
}

fn phase_label(event: &Event) -> String {
    let v = &event.value;
    let Some(Name::Lifecycle(name)) = event.name() else {
        return event.f.replace('-', " ");
    };
    match name {
        Lifecycle::Recovered => format!(
            "recovered after {} in {} ms",
            v["after"].as_str().unwrap_or("?"),
            v["recovery_ms"]
        ),
        Lifecycle::RecoveryTimeout => format!("no recovery within {} ms", v["timeout_ms"]),
        Lifecycle::Converged => format!("converged in {} ms", v["converge_ms"]),
        Lifecycle::ConvergenceTimeout => format!("no convergence within {} ms", v["timeout_ms"]),
        Lifecycle::FinalReads => format!("final reads {}", v["label"].as_str().unwrap_or("")),
        other => other.as_str().replace('-', " "),
    }
}

fn fault_detail(event: &Event) -> String {
    let v = &event.value;
    let mut parts = Vec::new();
    if let Some(source) = v["source"].as_str() {
        parts.push(source.to_string());
    }
    if let Some(target) = v.get("target").filter(|t| !t.is_null()) {
        parts.push(format!(
            "target {}",
            target.as_str().map_or_else(|| target.to_string(), str::to_string)
        ));
    }
    if let Some(id) = v["fault_id"].as_u64() {
        parts.push(format!("fault #{id}"));
    }
    if let Some(exit) = v["exit"].as_str() {
        parts.push(exit.to_string());
    }
    if let Some(line) = v["line"].as_str() {
        parts.push(line.to_string());
    }
    parts.join(", ")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// A history event on `node` at `time_ms` (also the fixture of the other timeline rows' tests).
    pub(in crate::html) fn event(
        index: u64,
        time_ms: u64,
        kind: EventKind,
        f: &str,
        node: &str,
        value: Value,
    ) -> Event {
        Event {
            index,
            time_ns: time_ms * 1_000_000,
            kind,
            process: None,
            worker: None,
            node: Some(node.into()),
            f: f.into(),
            key: None,
            value,
            error: None,
        }
    }

    #[test]
    fn given_a_firing_at_its_otherwise_time_when_marked_should_say_the_condition_was_not_seen() {
        let fired = json!({"trigger": 4, "condition": "restarted", "subject": "n2", "action": "kill",
            "delay_ms": 0, "latency_ms": 0, "applied_ms": 3, "fault_id": 1_000_002, "otherwise": true});
        let marker = trigger_marker(&event(0, 9000, EventKind::Nemesis, "trigger", "n2", fired)).unwrap();
        assert_eq!(
            marker.label,
            "trigger #4: restarted n2 not seen in its window → kill (fault 1000002) anyway, at its `otherwise` time"
        );
        assert_eq!(marker.t, 8997.0);
    }

    #[test]
    fn given_trigger_firings_when_built_should_mark_the_subject_at_the_observation_and_name_the_trigger_on_its_fault() {
        let kill = json!({"fault_id": 1_000_000, "source": "triggered", "trigger": 0});
        let fired = json!({"trigger": 0, "condition": "restarted", "subject": "n2", "action": "kill",
            "delay_ms": 300, "latency_ms": 1, "applied_ms": 4, "fault_id": 1_000_000});
        let declined =
            json!({"trigger": 1, "condition": "lagging", "subject": "n3", "action": "pause", "declined": true});
        let mut no_subject = event(
            4,
            6000,
            EventKind::Nemesis,
            "trigger",
            "n1",
            json!({"trigger": 2, "skipped": "x"}),
        );
        no_subject.node = None;
        let mut partition = event(
            5,
            7001,
            EventKind::Nemesis,
            "partition-start",
            "n1",
            json!({"fault_id": 1_000_001, "label": "isolate n1", "source": "triggered", "trigger": 3}),
        );
        partition.node = None;
        let isolated = json!({"trigger": 3, "condition": "lagging", "subject": "n3", "action": "partition",
            "delay_ms": 0, "latency_ms": 1, "applied_ms": 2, "fault_id": 1_000_001});
        let history = History {
            events: vec![
                event(0, 2000, EventKind::Nemesis, "kill", "n2", kill),
                event(1, 2005, EventKind::Nemesis, "trigger", "n2", fired),
                event(
                    2,
                    3000,
                    EventKind::Nemesis,
                    "start",
                    "n2",
                    json!({"fault_id": 1_000_000}),
                ),
                event(3, 5000, EventKind::Nemesis, "trigger", "n3", declined),
                no_subject,
                partition,
                event(6, 7003, EventKind::Nemesis, "trigger", "n3", isolated),
            ],
            truncated_tail: false,
        };
        let timeline = build(&history);
        assert_eq!(
            timeline.links,
            vec![
                TriggerLink {
                    t0: 1700.0,
                    from: "n2".into(),
                    t1: 2000.0,
                    to: "n2".into(),
                    trigger: 0
                },
                TriggerLink {
                    t0: 7000.0,
                    from: "n3".into(),
                    t1: 7001.0,
                    to: NETWORK_ROW.into(),
                    trigger: 3
                },
            ],
            "fired triggers only, each to the window of its fault"
        );
        assert_eq!(timeline.faults[0].label, "kill n2 (trigger #0)");
        let triggers: Vec<&Marker> = timeline.markers.iter().filter(|m| m.f == "trigger").collect();
        assert_eq!(triggers.len(), 3, "a firing without a subject has no row: {triggers:?}");
        assert_eq!(triggers[0].node.as_deref(), Some("n2"));
        assert_eq!(
            triggers[0].t,
            2005.0 - 4.0 - 300.0 - 1.0,
            "at the observation, not at the record"
        );
        assert!(
            triggers[0].label.contains("restarted n2 → kill") && triggers[0].sev == "warn",
            "{:?}",
            triggers[0]
        );
        assert!(
            triggers[1].label.contains("declined") && triggers[1].sev == "info",
            "{:?}",
            triggers[1]
        );
    }

    #[test]
    fn given_kill_then_start_when_built_should_make_one_closed_window_labelled_with_the_node() {
        let history = History {
            events: vec![
                event(
                    0,
                    100,
                    EventKind::Nemesis,
                    "kill",
                    "n2",
                    json!({"fault_id": 1, "source": "flap"}),
                ),
                event(1, 300, EventKind::Nemesis, "pause", "n1", json!({"fault_id": 2})),
                event(2, 900, EventKind::Nemesis, "start", "n2", json!({"fault_id": 1})),
            ],
            truncated_tail: false,
        };
        let timeline = build(&history);
        assert_eq!(timeline.faults.len(), 2);
        let kill = &timeline.faults[0];
        assert_eq!((kill.label.as_str(), kill.t0, kill.t1), ("kill n2", 100.0, Some(900.0)));
        assert!(kill.detail.contains("flap"));
        assert_eq!(timeline.faults[1].t1, None, "the pause never ended");
    }

    #[test]
    fn given_a_rolling_stop_when_built_should_draw_one_window_per_node_in_turn_and_mark_each_ready_again() {
        let mut events = Vec::new();
        for (i, node) in ["n1", "n2", "n3"].into_iter().enumerate() {
            let (t, step) = (1000 + 2000 * i as u64, json!({"step": i + 1, "of": 3, "down_ms": 1000}));
            let stop = json!({"fault_id": 3, "target": "each", "source": "scripted", "rolling": step});
            let ready = if node == "n3" {
                json!({"fault_id": 3, "rolling": step, "error": "n3 crashed; going on with the next node"})
            } else {
                json!({"fault_id": 3, "rolling": step, "waited_ms": 210})
            };
            let base = 3 * i as u64;
            events.push(event(base, t, EventKind::Nemesis, "stop", node, stop));
            events.push(event(
                base + 1,
                t + 1000,
                EventKind::Nemesis,
                "start",
                node,
                json!({"fault_id": 3, "rolling": step}),
            ));
            events.push(event(
                base + 2,
                t + 1210,
                EventKind::Nemesis,
                "rolling-ready",
                node,
                ready,
            ));
        }
        let timeline = build(&History {
            events,
            truncated_tail: false,
        });
        let windows: Vec<(&str, &str, f64, Option<f64>)> = timeline
            .faults
            .iter()
            .map(|w| (w.node.as_str(), w.label.as_str(), w.t0, w.t1))
            .collect();
        assert_eq!(
            windows,
            [
                ("n1", "stop n1 (rolling, step 1 of 3)", 1000.0, Some(2000.0)),
                ("n2", "stop n2 (rolling, step 2 of 3)", 3000.0, Some(4000.0)),
                ("n3", "stop n3 (rolling, step 3 of 3)", 5000.0, Some(6000.0)),
            ]
        );
        let ready: Vec<(&str, &str)> = timeline
            .markers
            .iter()
            .filter(|m| m.f == "rolling-ready")
            .map(|m| (m.label.as_str(), m.sev))
            .collect();
        assert_eq!(
            ready,
            [
                (
                    "rolling-ready n1: step 1 of 3: ready again 210 ms after its restart",
                    "ok"
                ),
                (
                    "rolling-ready n2: step 2 of 3: ready again 210 ms after its restart",
                    "ok"
                ),
                (
                    "rolling-ready n3: step 3 of 3: not ready: n3 crashed; going on with the next node",
                    "warn"
                ),
            ]
        );
    }

    #[test]
    fn given_a_power_loss_that_lost_files_when_described_should_read_as_words_not_json() {
        let lost = json!({
            "files": [
                {"path": "wal", "size_before_bytes": 12288, "size_after_bytes": 4096, "restored_bytes": 0},
                {"path": "checkpoint.7", "size_before_bytes": 512, "size_after_bytes": 0, "restored_bytes": 100},
            ],
            "entries_dropped": ["a", "b", "c", "d", "e"],
            "entries_restored": [],
            "torn_write": {"path": "wal", "offset": 4096, "write_bytes": 512, "kept_bytes": 100},
        });
        let e = event(
            3,
            1200,
            EventKind::Nemesis,
            "power-loss",
            "n2",
            json!({"fault_id": 4, "lost": lost}),
        );
        let text = describe_value(&e);
        assert_eq!(
            text,
            "fault_id=4 lost: 2 file(s) cut back to what was synced: wal 12288→4096 bytes, checkpoint.7 512→0 bytes \
             (100 overwritten bytes put back); 5 entries dropped: a, b, c, and 2 more; torn write to wal at 4096: 100 \
             of 512 bytes kept"
        );
        assert!(!text.contains('{'), "{text}");
        let nothing = event(
            4,
            1300,
            EventKind::Nemesis,
            "power-loss",
            "n2",
            json!({"lost": {"files": []}}),
        );
        assert_eq!(describe_value(&nothing), "lost: nothing (everything was synced)");
    }
}
