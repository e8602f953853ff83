//! The Porcupine-style view of a non-linearizable key: every operation on the key around the failure as a bar over
//! its real-time interval, one row per client process; the tail of the longest partial linearization numbered and
//! joined at (valid) linearization points, with the model state after each step on hover; the operation that cannot be
//! placed in red; the operations concurrent with it outlined. When that op is a read, the acknowledged writes it does
//! not see are listed by name ([`super::unseen`]). Every failing key the check explained gets its view: the first
//! open, each other folded under its key and one-line headline ([`render_all`]).

use super::escape::Shown;
use super::timeline::ms;
use faultline_workloads::history::{Event, EventKind, History};
use faultline_workloads::{Explanation, LinearizabilityResult, OpSummary, Verdict};
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

/// Failing keys' views drawn at most: each is some 30 to 40 KiB of page and scans the history twice (50 views of a
/// 400,000-event history: 0.6 s and 2 MiB); past it, explained keys get their headline only.
const VIEWS_DRAWN_MAX: usize = 50;

/// Where the first failing key's view is on the page (the checks table and the evidence links point at it).
const FIRST_VIEW_ID: &str = "lin-view";

/// Every failing key's view: the first open, each other folded in a `<details>` whose summary is its key and
/// headline, up to [`VIEWS_DRAWN_MAX`] views; explained keys past those get their headline only. A results.json
/// written before every failing key was explained holds only the first; a check that explained only the first
/// [`faultline_workloads::linearizability::EXPLAINED_KEYS_MAX`] failing keys says how many it left out.
pub fn render_all(result: &LinearizabilityResult, history: &History, end_ms: f64) -> Markup {
    let explained = result.explanations();
    let failing = result.keys.iter().filter(|k| k.verdict == Verdict::Invalid).count();
    let unexplained = failing.saturating_sub(explained.len());
    let Some((first, rest)) = explained.split_first() else {
        return html! {};
    };
    let (drawn, listed) = rest.split_at(rest.len().min(VIEWS_DRAWN_MAX - 1));
    let ids = view_ids(result);
    html! {
        (render(first, history, end_ms, Some(FIRST_VIEW_ID)))
        @if !rest.is_empty() {
            h3 { (rest.len()) " more failing key(s), each folded: open one for its view" }
            @for explanation in drawn {
                details class="lin-key" id=[ids.get(explanation.key.as_str())] {
                    summary { (Shown(&explanation.headline())) }
                    (render(explanation, history, end_ms, None))
                }
            }
        }
        @if !listed.is_empty() {
            details class="lin-key" {
                summary {
                    (listed.len()) " more explained failing key(s), not drawn (a report draws " (VIEWS_DRAWN_MAX)
                    "); each in one line, and in full by " code { "faultline check --explain-keys KEY" }
                }
                ul class="lin-lines" {
                    @for explanation in listed {
                        li id=[ids.get(explanation.key.as_str())] { (Shown(&explanation.headline())) }
                    }
                }
            }
        }
        @if unexplained > 0 {
            p class="hint" {
                (unexplained) " more failing key(s) are not explained here: the check explained the first "
                (explained.len()) ". " code { "faultline check --explain-keys all" } " on the history explains each."
            }
        }
    }
}

/// The id of each explained key's view on the page: the first view's, or `lin-key-N` with N the key's place in the
/// result's per-key list (keys are run text, so they do not go into ids).
pub(super) fn view_ids(result: &LinearizabilityResult) -> HashMap<&str, String> {
    let explained = result.explanations();
    let mut ids: HashMap<&str, String> = result
        .keys
        .iter()
        .enumerate()
        .filter(|(_, k)| k.explanation.is_some())
        .map(|(place, k)| (k.key.as_str(), format!("lin-key-{place}")))
        .collect();
    if let Some(first) = explained.first() {
        ids.insert(first.key.as_str(), FIRST_VIEW_ID.to_string());
    }
    ids
}

/// Renders the view for `explanation`, with op intervals taken from `history`. `end_ms` is the end of the run. The
/// view is drawn and labelled on the phase clock ([`super::timeline::shown`]), as the rest of the report speaks.
/// `id` names the first view (the others are named by the `<details>` that folds them).
pub fn render(explanation: &Explanation, history: &History, end_ms: f64, id: Option<&str>) -> Markup {
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
        div class="lin" id=[id] {
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
            (super::unseen::for_failing_read(history, explanation, id.is_some()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::{check_history, CheckOptions, Event, ModelKind};
    use serde_json::{json, Value};

    /// Key "k1" reads nothing after a write; key `k2<b>` (run text that needs escaping) applies a cas from a value it
    /// never held; key "k3" is fine.
    fn two_keys_failing_two_ways() -> History {
        let op = |process: u64, f: &str, key: &str, value: Value| {
            [EventKind::Invoke, EventKind::Ok].map(|kind| Event {
                index: 0,
                time_ns: 0,
                kind,
                process: Some(process),
                worker: Some(process),
                node: None,
                f: f.into(),
                key: Some(key.into()),
                value: value.clone(),
                error: None,
            })
        };
        let mut events: Vec<Event> = [
            op(0, "write", "k1", json!("a")),
            op(1, "read", "k1", Value::Null),
            op(2, "write", "k2<b>", json!("x")),
            op(3, "cas", "k2<b>", json!(["y", "z"])),
            op(4, "write", "k3", json!("b")),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
            e.time_ns = (i as u64 + 1) * 1_000_000;
        }
        History {
            events,
            truncated_tail: false,
        }
    }

    #[test]
    fn given_two_failing_keys_when_rendered_should_show_the_first_open_and_the_second_folded_under_its_headline() {
        let history = two_keys_failing_two_ways();
        let result = check_history(&history, ModelKind::CasRegister, &CheckOptions::default());
        let html = render_all(&result, &history, 20.0).into_string();
        let first = html
            .find("<div class=\"lin\" id=\"lin-view\">")
            .expect("the first view, open");
        let folded = html
            .find("<details class=\"lin-key\" id=\"lin-key-1\"><summary>Key &quot;k2&lt;b&gt;&quot;: cas(&quot;y&quot;, &quot;z&quot;) -&gt; ok (process 3, history events 6..7) cannot be placed in any legal order: it is illegal in state &quot;x&quot;.</summary>")
            .unwrap_or_else(|| panic!("the second folded under its escaped key and headline: {html}"));
        assert!(first < folded, "the first comes first");
        assert!(
            html[first..folded].contains("read() -&gt; nil"),
            "the first names its op"
        );
        assert!(
            html[folded..].contains("✖ cas(&quot;y&quot;, &quot;z&quot;) -&gt; ok"),
            "the second draws its op"
        );
        assert!(!html.contains("k2<b>"), "the key is escaped");
        assert_eq!(html.matches("id=\"lin-view\"").count(), 1, "ids stay unique");
        assert!(html.contains("1 more failing key(s)"), "{html}");
        assert!(!html.contains("not explained here"), "{html}");
    }

    #[test]
    fn given_a_result_explaining_only_some_failing_keys_when_rendered_should_say_how_many_it_left_out() {
        let history = two_keys_failing_two_ways();
        let opts = CheckOptions {
            explained_keys_max: 1,
            ..CheckOptions::default()
        };
        let result = check_history(&history, ModelKind::CasRegister, &opts);
        let html = render_all(&result, &history, 20.0).into_string();
        assert!(html.contains("id=\"lin-view\""));
        assert!(!html.contains("<details"), "{html}");
        assert!(
            html.contains("1 more failing key(s) are not explained here: the check explained the first 1."),
            "{html}"
        );
    }

    #[test]
    fn given_more_explained_keys_than_views_drawn_when_rendered_should_list_the_rest_by_headline() {
        let mut events = Vec::new();
        for k in 0..60u64 {
            let key = format!("k{k:02}");
            for (process, f, value, read) in [
                (2 * k, "write", json!("a"), json!("a")),
                (2 * k + 1, "read", Value::Null, Value::Null),
            ] {
                for (kind, value) in [(EventKind::Invoke, value), (EventKind::Ok, read)] {
                    events.push(Event {
                        index: events.len() as u64,
                        time_ns: events.len() as u64 * 1_000_000,
                        kind,
                        process: Some(process),
                        worker: Some(process),
                        node: None,
                        f: f.into(),
                        key: Some(key.clone()),
                        value,
                        error: None,
                    });
                }
            }
        }
        let history = History {
            events,
            truncated_tail: false,
        };
        let every = CheckOptions {
            explained_keys_max: usize::MAX,
            ..CheckOptions::default()
        };
        let result = check_history(&history, ModelKind::CasRegister, &every);
        let html = render_all(&result, &history, 300.0).into_string();
        assert_eq!(
            html.matches("<div class=\"lin\"").count(),
            VIEWS_DRAWN_MAX,
            "views drawn"
        );
        assert!(html.contains("10 more explained failing key(s), not drawn"), "{html}");
        assert!(
            html.contains("<li id=\"lin-key-59\">Key &quot;k59&quot;: read() -&gt; nil"),
            "{html}"
        );
        assert_eq!(
            html.matches("id=\"lin-key-").count(),
            59,
            "every explained key has its anchor"
        );
    }

    /// A results.json written before every failing key was explained: only the result's own explanation.
    #[test]
    fn given_a_result_from_before_per_key_explanations_when_rendered_should_show_its_one_explanation() {
        let history = two_keys_failing_two_ways();
        let mut result = check_history(&history, ModelKind::CasRegister, &CheckOptions::default());
        result.keys.iter_mut().for_each(|k| k.explanation = None);
        let html = render_all(&result, &history, 20.0).into_string();
        assert!(html.contains("id=\"lin-view\""));
        assert!(!html.contains("<details"), "{html}");
        assert_eq!(view_ids(&result).get("k1").map(String::as_str), Some("lin-view"));
    }
}
