//! Per node: its lifecycle and fault events, and the last lines of its log before each crash or refusal, with each
//! log line's time mapped onto history time.

use super::escape::html;
use super::logs::{NodeLog, EXCERPT_LINES};
use super::timeline::{describe_value, ms, severity};
use faultline_workloads::history::{Event, EventKind, History, Lifecycle, Name, Nemesis};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Events listed per node; the rest are counted.
const EVENTS_SHOWN_MAX: usize = 500;
/// Log excerpts shown per node.
const EXCERPTS_MAX: usize = 20;
/// A log line with one of these is drawn as an error: plain and coloured (Iggy) levels, Rust panics, zap JSON levels
/// (etcd).
const ERROR_WORDS: [&str; 7] = [
    "ERROR",
    "panicked",
    "FATAL",
    "refusing",
    "\"level\":\"error\"",
    "\"level\":\"fatal\"",
    "\"level\":\"panic\"",
];
/// ... and with one of these as a warning.
const WARN_WORDS: [&str; 2] = ["WARN", "\"level\":\"warn\""];

/// What the node section needs.
pub struct NodeInputs<'a> {
    /// The run's history.
    pub history: &'a History,
    /// Parsed logs by node name.
    pub logs: &'a BTreeMap<String, NodeLog>,
    /// `wall_clock_unix_ns - run_start.time_ns`: adds to history time to give wall-clock time; none without anchor.
    pub anchor_offset_ns: Option<i128>,
}

/// Node names in a natural order (`n2` before `n10`).
pub fn sorted_nodes<'a>(names: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().cloned().collect();
    names.sort_by_key(|n| {
        let digits: String = n.chars().filter(char::is_ascii_digit).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), n.clone())
    });
    names.dedup();
    names
}

/// Renders one section per node.
pub fn render(inputs: &NodeInputs<'_>) -> String {
    let mut by_node: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
    for event in &inputs.history.events {
        if matches!(event.kind, EventKind::Lifecycle | EventKind::Nemesis) {
            if let Some(node) = &event.node {
                by_node.entry(node.clone()).or_default().push(event);
            }
        }
    }
    for node in inputs.logs.keys() {
        by_node.entry(node.clone()).or_default();
    }
    let mut out = String::new();
    if inputs.anchor_offset_ns.is_none() {
        out.push_str(
            "<p class=\"warn\">The history has no wall-clock anchor (run-start event), so log lines cannot be placed \
             on history time; excerpts show the end of each log.</p>",
        );
    }
    for node in sorted_nodes(by_node.keys()) {
        let events = &by_node[&node];
        let log = inputs.logs.get(&node);
        out.push_str(&node_section(&node, events, log, inputs.anchor_offset_ns));
    }
    out
}

fn node_section(node: &str, events: &[&Event], log: Option<&NodeLog>, offset: Option<i128>) -> String {
    let count = |wanted: &[Name]| events.iter().filter(|e| wanted.iter().any(|&name| e.is(name))).count();
    let bad = events.iter().filter(|e| severity(e) == "bad").count();
    let mut out = format!(
        "<section class=\"node{}\" id=\"node-{node}\"><h3>{node} <small>{} boots · {} kills · {} pauses · {} \
         problem events · <a href=\"nodes/{node}/node.log\">full log</a></small></h3>",
        if bad > 0 { " has-bad" } else { "" },
        count(&[Lifecycle::BootOk.into()]),
        // A fault-phase kill (nemesis) and a restart-all kill (lifecycle) are both kills of the node.
        count(&[Nemesis::Kill.into(), Lifecycle::Kill.into()]),
        count(&[Nemesis::Pause.into()]),
        bad,
        node = html(node)
    );
    out.push_str(
        "<table class=\"events\"><thead><tr><th>time</th><th>#</th><th>event</th><th>details</th></tr></thead><tbody>",
    );
    let mut excerpts = 0;
    for (shown, event) in events.iter().enumerate() {
        if shown == EVENTS_SHOWN_MAX {
            let _ = write!(
                out,
                "<tr class=\"elided\"><td colspan=\"4\">… and {} more events (see history.jsonl)</td></tr>",
                events.len() - shown
            );
            break;
        }
        let sev = severity(event);
        let _ = write!(
            out,
            "<tr id=\"ev-{}\" class=\"{sev}\"><td class=\"num\">{:.3}s</td><td class=\"num\">{}</td><td>{}{}</td><td>{}</td></tr>",
            event.index,
            ms(event.time_ns) / 1000.0,
            event.index,
            if event.kind == EventKind::Nemesis { "nemesis " } else { "" },
            html(&event.f),
            html(&describe_value(event))
        );
        let wants_excerpt = matches!(
            event.name(),
            Some(Name::Lifecycle(
                Lifecycle::Crashed | Lifecycle::BootRefused | Lifecycle::BootTimeout | Lifecycle::VerifyRefused
            ))
        );
        if wants_excerpt && excerpts < EXCERPTS_MAX {
            if let Some(log) = log {
                excerpts += 1;
                out.push_str(&excerpt(node, event, log, offset));
            }
        }
    }
    out.push_str("</tbody></table></section>");
    out
}

fn excerpt(node: &str, event: &Event, log: &NodeLog, offset: Option<i128>) -> String {
    let lines = match offset {
        Some(offset) => log.before(i128::from(event.time_ns) + offset, EXCERPT_LINES),
        None => &log.lines[log.lines.len().saturating_sub(EXCERPT_LINES)..],
    };
    let refusal = event.value["line"].as_str().filter(|l| !l.is_empty());
    let event_ms = ms(event.time_ns);
    // The excerpt's span on the timeline: from its first stamped line to the event.
    let first_ms = match (lines.iter().find_map(|l| l.unix_ns), offset) {
        (Some(t), Some(offset)) => ((t - offset) as f64 / 1e6).clamp(0.0, event_ms),
        _ => event_ms,
    };
    let mut out = format!(
        "<tr class=\"excerpt\"><td colspan=\"4\"><div class=\"log-title\">last {} lines of <code>nodes/{}/node.log</code> \
         before {} at {:.3}s · <a href=\"#\" class=\"zoom-link\" data-t0=\"{:.3}\" data-t1=\"{:.3}\">show on the \
         timeline</a></div><pre class=\"log\">",
        lines.len(),
        html(node),
        html(&event.f),
        event_ms / 1000.0,
        first_ms,
        event_ms
    );
    if lines.is_empty() {
        out.push_str("(no log lines before this event)");
    }
    for line in lines {
        let at = match (line.unix_ns, offset) {
            (Some(t), Some(offset)) => format!("{:>9.3}s", (t - offset) as f64 / 1e9),
            _ => format!("{:>10}", ""),
        };
        let class = if refusal.is_some_and(|r| line.text.contains(r)) {
            "hit"
        } else if ERROR_WORDS.iter().any(|w| line.text.contains(w)) {
            "err"
        } else if WARN_WORDS.iter().any(|w| line.text.contains(w)) {
            "wrn"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<span class=\"ln {class}\"><span class=\"t\">{at}</span> <span class=\"n\">{:>6}</span> {}</span>",
            line.number,
            html(&line.text)
        );
    }
    out.push_str("</pre></td></tr>");
    out
}
