//! Per node: its lifecycle and fault events, and the last lines of its log before each crash or refusal, with each
//! log line's time mapped onto history time.

use super::escape::Shown;
use super::logs::{LogLine, NodeLog, EXCERPT_LINES};
use super::timeline::{describe_value, ms, severity};
use faultline_workloads::history::{Event, EventKind, History, Lifecycle, Name, Nemesis};
use maud::{html, Markup};
use std::collections::BTreeMap;

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
pub fn render(inputs: &NodeInputs<'_>) -> Markup {
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
    let clocks = Clocks {
        offset: inputs.anchor_offset_ns,
        phase_start_ms: ms(inputs.history.phase_start_ns()),
    };
    html! {
        @if inputs.anchor_offset_ns.is_none() {
            p class="warn" {
                "The history has no wall-clock anchor (run-start event), so log lines cannot be placed on history \
                 time; excerpts show the end of each log."
            }
        }
        @for node in sorted_nodes(by_node.keys()) {
            (node_section(&node, &by_node[&node], inputs.logs.get(&node), clocks))
        }
    }
}

/// How history time maps to the logs' wall clock (`offset`, added to a history time) and to what the report shows
/// (the phase clock, from `phase_start_ms`).
#[derive(Clone, Copy)]
struct Clocks {
    offset: Option<i128>,
    phase_start_ms: f64,
}

fn node_section(node: &str, events: &[&Event], log: Option<&NodeLog>, clocks: Clocks) -> Markup {
    let count = |wanted: &[Name]| events.iter().filter(|e| wanted.iter().any(|&name| e.is(name))).count();
    let bad = events.iter().filter(|e| severity(e) == "bad").count();
    // The first crashes and refusals shown get the node's log lines before them.
    let excerpted: Vec<u64> = events
        .iter()
        .take(EVENTS_SHOWN_MAX)
        .filter(|e| log.is_some() && wants_excerpt(e))
        .take(EXCERPTS_MAX)
        .map(|e| e.index)
        .collect();
    html! {
        section class={ "node" @if bad > 0 { " has-bad" } } id={ "node-" (Shown(node)) } {
            h3 {
                (Shown(node)) " "
                small {
                    (count(&[Lifecycle::BootOk.into()])) " boots · "
                    // A fault-phase kill (nemesis) and a restart-all kill (lifecycle) are both kills of the node.
                    (count(&[Nemesis::Kill.into(), Lifecycle::Kill.into()])) " kills · "
                    (count(&[Nemesis::Pause.into()])) " pauses · " (bad) " problem events · "
                    a href={ "nodes/" (Shown(node)) "/node.log" } { "full log" }
                }
            }
            table class="events" {
                thead { tr { th { "time" } th { "#" } th { "event" } th { "details" } } }
                tbody {
                    @for event in events.iter().take(EVENTS_SHOWN_MAX) {
                        (event_row(event, clocks.phase_start_ms))
                        @if let Some(log) = log.filter(|_| excerpted.contains(&event.index)) {
                            (excerpt(node, event, log, clocks))
                        }
                    }
                    @if events.len() > EVENTS_SHOWN_MAX {
                        tr class="elided" {
                            td colspan="4" {
                                "… and " (events.len() - EVENTS_SHOWN_MAX) " more events (see history.jsonl)"
                            }
                        }
                    }
                }
            }
        }
    }
}

fn event_row(event: &Event, phase_start_ms: f64) -> Markup {
    html! {
        tr id={ "ev-" (event.index) } class=(severity(event)) {
            td class="num" { (super::timeline::shown(ms(event.time_ns), phase_start_ms)) }
            td class="num" { (event.index) }
            td { @if event.kind == EventKind::Nemesis { "nemesis " } (Shown(&event.f)) }
            td { (Shown(&describe_value(event))) }
        }
    }
}

/// Crashes and refusals come with the node's last log lines.
fn wants_excerpt(event: &Event) -> bool {
    matches!(
        event.name(),
        Some(Name::Lifecycle(
            Lifecycle::Crashed | Lifecycle::BootRefused | Lifecycle::BootTimeout | Lifecycle::VerifyRefused
        ))
    )
}

fn excerpt(node: &str, event: &Event, log: &NodeLog, clocks: Clocks) -> Markup {
    let offset = clocks.offset;
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
    html! {
        tr class="excerpt" {
            td colspan="4" {
                div class="log-title" {
                    "last " (lines.len()) " lines of " code { "nodes/" (Shown(node)) "/node.log" } " before "
                    (Shown(&event.f)) " at " (super::timeline::shown(event_ms, clocks.phase_start_ms)) " · "
                    a href="#" class="zoom-link" data-t0=(format!("{first_ms:.3}")) data-t1=(format!("{event_ms:.3}")) {
                        "show on the timeline"
                    }
                }
                pre class="log" {
                    @if lines.is_empty() { "(no log lines before this event)" }
                    // One line of the log per line of the page, so the excerpt reads (and copies) as the log does.
                    @for line in lines { (log_line(line, clocks, refusal)) "\n" }
                }
            }
        }
    }
}

fn log_line(line: &LogLine, clocks: Clocks, refusal: Option<&str>) -> Markup {
    let at = match (line.unix_ns, clocks.offset) {
        (Some(t), Some(offset)) => format!("{:>9.3}s", (t - offset) as f64 / 1e9 - clocks.phase_start_ms / 1000.0),
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
    html! {
        span class={ "ln " (class) } {
            span class="t" { (at) } " " span class="n" { (format!("{:>6}", line.number)) } " " (Shown(&line.text))
        }
    }
}
