//! The Porcupine-style view of a non-linearizable key: every operation on the key around the failure as a bar over
//! its real-time interval, one row per client process; the tail of the longest partial linearization numbered and
//! joined at (valid) linearization points, with the model state after each step on hover; the operation that cannot be
//! placed in red; the operations concurrent with it outlined. When that op is a read, the acknowledged writes it does
//! not see are listed by name ([`super::unseen`]).

use super::escape::Shown;
use super::timeline::ms;
use faultline_workloads::history::{Event, EventKind, History};
use faultline_workloads::{Explanation, OpSummary};
use maud::{html, Markup};
use std::collections::HashMap;

/// Operations of the key drawn at most (the ones nearest the failing op).
const OPS_DRAWN_MAX: usize = 160;
const WIDTH: f64 = 1200.0;
const LABEL_W: f64 = 70.0;
const ROW_H: f64 = 30.0;
const TOP: f64 = 28.0;

/// What an operation is in the explanation.
#[derive(Debug, Clone)]
enum Role {
    Step { number: u64, state_after: String },
    Stuck,
    Concurrent,
    Other,
}

#[derive(Debug, Clone)]
struct KeyOp {
    process: u64,
    invoke_index: u64,
    start_ms: f64,
    end_ms: Option<f64>,
    completion: &'static str,
    description: String,
    role: Role,
}

/// Renders the view for `explanation`, with op intervals taken from `history`. `end_ms` is the end of the run. The
/// view is drawn and labelled on the phase clock ([`super::timeline::shown`]), as the rest of the report speaks.
pub fn render(explanation: &Explanation, history: &History, end_ms: f64) -> Markup {
    let phase_ms = ms(history.phase_start_ns());
    let end_ms = end_ms - phase_ms;
    let mut ops = key_ops(history, &explanation.key);
    for op in &mut ops {
        op.start_ms -= phase_ms;
        op.end_ms = op.end_ms.map(|end| end - phase_ms);
    }
    let mut summaries: HashMap<u64, (&OpSummary, Role)> = HashMap::new();
    let first_step = explanation.linearized_count - explanation.linearized_tail.len() as u64;
    for (i, step) in explanation.linearized_tail.iter().enumerate() {
        let role = Role::Step {
            number: first_step + i as u64 + 1,
            state_after: step.state_after.clone(),
        };
        summaries.insert(step.op.invoke_index, (&step.op, role));
    }
    for op in &explanation.concurrent {
        summaries.entry(op.invoke_index).or_insert((op, Role::Concurrent));
    }
    summaries.insert(explanation.op.invoke_index, (&explanation.op, Role::Stuck));
    for op in &mut ops {
        if let Some((summary, role)) = summaries.get(&op.invoke_index) {
            op.description = summary.description.clone();
            op.role = role.clone();
        }
    }
    let window = select_window(&mut ops, end_ms);
    html! {
        div class="lin" id="lin-view" {
            h3 {
                @if explanation.key.is_empty() { "The one object (the history names no key)" } @else { "Key " code { (Shown(&explanation.key)) } }
                ": the longest legal order found, and the op that cannot follow it"
            }
            ul class="lin-lines" { @for line in &explanation.lines { li { (Shown(line)) } } }
            (svg(&ops, window, explanation))
            p class="hint" {
                "Bars span invocation to completion. Green bars are the last steps of the longest legal order \
                 (numbered; the line joins a valid linearization point of each); hover a bar for the model state \
                 after it. Red: the op that cannot be placed. Amber outline: concurrent with it. Grey: other ops on \
                 the key. "
                a href="#" class="zoom-link" data-t0=(format!("{:.3}", window.0 + phase_ms))
                    data-t1=(format!("{:.3}", window.1 + phase_ms)) {
                    "Show this window on the timeline"
                }
                "."
            }
            (steps_table(explanation))
            (super::unseen::for_failing_read(history, explanation))
        }
    }
}

/// Every client op on `key`, invocations paired with completions.
fn key_ops(history: &History, key: &str) -> Vec<KeyOp> {
    let mut ops: Vec<KeyOp> = Vec::new();
    let mut open: HashMap<u64, (usize, &Event)> = HashMap::new();
    for event in history.client_events() {
        if event.key.as_deref() != Some(key) {
            continue;
        }
        let process = event.process.unwrap_or(u64::MAX);
        if event.kind == EventKind::Invoke {
            open.insert(process, (ops.len(), event));
            ops.push(KeyOp {
                process,
                invoke_index: event.index,
                start_ms: ms(event.time_ns),
                end_ms: None,
                completion: "open",
                description: describe(event, None),
                role: Role::Other,
            });
        } else if let Some((i, invoke)) = open.remove(&process) {
            let op = &mut ops[i];
            op.end_ms = Some(ms(event.time_ns));
            op.completion = match event.kind {
                EventKind::Ok => "ok",
                EventKind::Fail => "fail",
                _ => "info",
            };
            op.description = describe(invoke, Some(event));
        }
    }
    ops
}

/// `f(args) -> result` for ops the explanation does not describe.
pub(super) fn describe(invoke: &Event, completion: Option<&Event>) -> String {
    let value = |v: &serde_json::Value| if v.is_null() { "nil".to_string() } else { v.to_string() };
    match (invoke.f.as_str(), completion) {
        ("read", Some(done)) if done.kind == EventKind::Ok => format!("read() -> {}", value(&done.value)),
        ("read", _) => "read() -> ?".to_string(),
        (f, _) => match &invoke.value {
            serde_json::Value::Array(args) => {
                format!("{f}({})", args.iter().map(value).collect::<Vec<_>>().join(", "))
            }
            v => format!("{f}({})", value(v)),
        },
    }
}

/// Keeps the ops around the explained ones (at most [`OPS_DRAWN_MAX`]) and returns the time window to draw, in ms.
fn select_window(ops: &mut Vec<KeyOp>, end_ms: f64) -> (f64, f64) {
    let explained: Vec<&KeyOp> = ops.iter().filter(|op| !matches!(op.role, Role::Other)).collect();
    let (mut t0, mut t1) = explained.iter().fold((f64::MAX, f64::MIN), |(a, b), op| {
        (a.min(op.start_ms), b.max(op.end_ms.unwrap_or(op.start_ms)))
    });
    if explained.is_empty() {
        (t0, t1) = (0.0, end_ms);
    }
    let pad = ((t1 - t0) * 0.04).max(0.5);
    let (t0, t1) = ((t0 - pad).max(0.0), t1 + pad);
    ops.retain(|op| op.start_ms <= t1 && op.end_ms.unwrap_or(end_ms) >= t0);
    if ops.len() > OPS_DRAWN_MAX {
        let centre = (t0 + t1) / 2.0;
        ops.sort_by(|a, b| {
            let rank = |op: &KeyOp| (matches!(op.role, Role::Other), (op.start_ms - centre).abs());
            rank(a).partial_cmp(&rank(b)).unwrap_or(std::cmp::Ordering::Equal)
        });
        ops.truncate(OPS_DRAWN_MAX);
        ops.sort_by_key(|op| op.invoke_index);
    }
    (t0, t1)
}

fn svg(ops: &[KeyOp], (t0, t1): (f64, f64), explanation: &Explanation) -> Markup {
    let mut rows: Vec<u64> = Vec::new();
    for op in ops {
        if !rows.contains(&op.process) {
            rows.push(op.process);
        }
    }
    let height = TOP + rows.len() as f64 * ROW_H + 24.0;
    let x = |t: f64| LABEL_W + (t - t0) / (t1 - t0).max(1e-9) * (WIDTH - LABEL_W - 10.0);
    let row_y = |p: u64| TOP + rows.iter().position(|&r| r == p).unwrap_or(0) as f64 * ROW_H;
    let mut points: Vec<(f64, f64, u64)> = Vec::new();
    let mut last_point = f64::MIN;
    let mut steps: Vec<&KeyOp> = ops.iter().filter(|op| matches!(op.role, Role::Step { .. })).collect();
    steps.sort_by_key(|op| match op.role {
        Role::Step { number, .. } => number,
        _ => 0,
    });
    for op in &steps {
        // Any increasing choice inside each interval is a valid set of linearization points for a legal order.
        let point = op.start_ms.max(last_point).min(op.end_ms.unwrap_or(t1));
        last_point = point;
        if let Role::Step { number, .. } = op.role {
            points.push((x(point), row_y(op.process) + ROW_H / 2.0, number));
        }
    }
    let path: Vec<String> = points.iter().map(|(px, py, _)| format!("{px:.1},{py:.1}")).collect();
    // SVG elements are written with an explicit end tag (`{}`): the HTML parser does not self-close them otherwise.
    html! {
        svg class="lin-svg" viewBox={ "0 0 " (WIDTH) " " (height) } width="100%" role="img"
            aria-label="operations on the failing key" {
            (axis(t0, t1, height, &x))
            @for &p in &rows {
                text class="row-label" x="4" y=(format!("{:.1}", row_y(p) + ROW_H / 2.0 + 4.0)) { "proc " (p) }
            }
            // The path goes under the bars so their labels stay readable; the points go on top.
            @if points.len() > 1 { polyline class="lin-path" points=(path.join(" ")) {} }
            @for op in ops {
                (bar(op, x(op.start_ms), x(op.end_ms.unwrap_or(t1)), row_y(op.process), explanation))
            }
            @for (px, py, number) in &points {
                circle class="lin-point" cx=(format!("{px:.1}")) cy=(format!("{py:.1}")) r="3.5" {
                    title { "step " (number) }
                }
            }
        }
    }
}

fn axis(t0: f64, t1: f64, height: f64, x: &impl Fn(f64) -> f64) -> Markup {
    let step = nice_step((t1 - t0) / 8.0);
    let mut ticks = Vec::new();
    let mut t = (t0 / step).ceil() * step;
    while t <= t1 {
        ticks.push(t);
        t += step;
    }
    html! {
        @for t in ticks {
            @let tx = format!("{:.1}", x(t));
            line class="grid" x1=(tx) x2=(tx) y1="18" y2=(format!("{:.1}", height - 20.0)) {}
            text class="tick" x=(tx) y="12" { (format_seconds(t)) }
        }
    }
}

fn bar(op: &KeyOp, x0: f64, x1: f64, y: f64, explanation: &Explanation) -> Markup {
    let (class, tip) = match &op.role {
        Role::Step { number, state_after } => (
            "op step",
            format!(
                "step {number} of {}: {}\nstate after: {state_after}",
                explanation.linearized_count, op.description
            ),
        ),
        Role::Stuck => (
            "op stuck",
            format!(
                "cannot be placed: {}\nstate when it must come next: {}\n{}",
                op.description,
                explanation.state,
                if explanation.op_legal_in_state {
                    "legal there, but nothing can follow it"
                } else {
                    "illegal in that state"
                }
            ),
        ),
        Role::Concurrent => (
            "op concurrent",
            format!("concurrent with the failing op: {}", op.description),
        ),
        Role::Other => ("op other", op.description.clone()),
    };
    let width = (x1 - x0).max(3.0);
    let tip = format!(
        "{tip}\nprocess {}, {} at {:.3}s{}",
        op.process,
        op.completion,
        op.start_ms / 1000.0,
        op.end_ms
            .map_or(" (never completed)".to_string(), |e| format!(" .. {:.3}s", e / 1000.0))
    );
    let label = match &op.role {
        Role::Step { number, .. } => format!("#{number} {}", op.description),
        Role::Stuck => format!("✖ {}", op.description),
        _ => op.description.clone(),
    };
    let text_x = x0 + if matches!(op.role, Role::Step { .. }) { 9.0 } else { 4.0 };
    html! {
        g class={ (class) " " (op.completion) } {
            title { (Shown(&tip)) }
            rect x=(format!("{x0:.1}")) y=(format!("{:.1}", y + 4.0)) width=(format!("{width:.1}"))
                height=(format!("{:.1}", ROW_H - 8.0)) rx="3" {}
            text x=(format!("{text_x:.1}")) y=(format!("{:.1}", y + ROW_H / 2.0 + 4.0)) {
                (Shown(&fit_label(label, width)))
            }
        }
    }
}

/// `label` cut (with `…`) to what fits in a bar `width` wide.
fn fit_label(label: String, width: f64) -> String {
    let chars = ((width - 6.0) / 6.6).max(0.0) as usize;
    if label.chars().count() <= chars {
        return label;
    }
    let cut: String = label.chars().take(chars.saturating_sub(1)).collect();
    if cut.is_empty() {
        cut
    } else {
        format!("{cut}…")
    }
}

fn steps_table(explanation: &Explanation) -> Markup {
    let first = explanation.linearized_count - explanation.linearized_tail.len() as u64;
    let op = &explanation.op;
    let verdict = if explanation.op_legal_in_state {
        "legal here, but every continuation fails"
    } else {
        "illegal in this state"
    };
    html! {
        table class="steps" {
            thead {
                tr {
                    th { "step" } th { "operation" } th { "process" } th { "history events" }
                    th { "model state after" }
                }
            }
            tbody {
                @if first > 0 { tr class="elided" { td colspan="5" { "… " (first) " earlier steps" } } }
                @for (i, step) in explanation.linearized_tail.iter().enumerate() {
                    tr {
                        td { (first + i as u64 + 1) }
                        td { code { (Shown(&step.op.description)) } }
                        td { (summary_process(&step.op)) }
                        td { (summary_events(&step.op)) }
                        td { code { (Shown(&step.state_after)) } }
                    }
                }
                tr class="stuck-row" {
                    td { "✖" }
                    td { code { (Shown(&op.description)) } }
                    td { (summary_process(op)) }
                    td { (summary_events(op)) }
                    td { "state " code { (Shown(&explanation.state)) } ": " (verdict) }
                }
            }
        }
    }
}

fn summary_process(op: &OpSummary) -> String {
    op.process.map_or_else(|| "?".to_string(), |p| format!("p{p}"))
}

fn summary_events(op: &OpSummary) -> Markup {
    html! {
        @match op.complete_index {
            Some(done) => { "#" (op.invoke_index) "..#" (done) " (" (Shown(&op.completion)) ")" }
            None => { "#" (op.invoke_index) " (never completed)" }
        }
    }
}

/// A round step (1, 2 or 5 times a power of ten) of at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-6);
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * power)
}

/// Milliseconds as seconds for an axis: `1.25s`, `3s`.
fn format_seconds(t_ms: f64) -> String {
    let text = format!("{:.3}", t_ms / 1000.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}s")
}
