//! The transactions section of a txn run: the claimed model and the verdict, the models the history is still
//! consistent with, counts, and every anomaly class found, each said in one sentence ("G2-item: write skew — ...;
//! forbidden by ..."). Per anomaly: a cycle drawn as a small graph ([`super::txn_cycle`]) with the sentence behind
//! each edge, and a table of its transactions (process, node, times, outcome, every micro-op with its result, the
//! faults open meanwhile); non-cycle anomalies (internal, duplicate, incompatible order, lost, phantom ...) get the
//! same table under their sentence. The anomalies' transactions are marked on the timeline ([`marks`]), which links
//! back to the anomaly; each anomaly links to the timeline, zoomed to its transactions.
//!
//! Everything is rendered from `results.json` (the whole [`TxnCheckResult`]) and `history.jsonl` (the transactions'
//! micro-ops and nodes), so `faultline analyze` rebuilds the same section.

use super::escape::Shown;
use super::ops::OpTable;
use super::timeline::{self, ms, Timeline};
use super::txn_cycle::{self, TxnBox};
use crate::results::Results;
use faultline_workloads::checker::history_txns;
use faultline_workloads::history::{Event, History};
use faultline_workloads::txn_check::{
    Anomaly, AnomalyClass, ConsistencyModel, EdgeKind, MicroOp, ReadValue, Txn, TxnCheckResult, TxnOutcome,
};
use maud::{html, Markup};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// Anomalies drawn in full (graph, sentences, transactions) per class.
pub const DRAWN_PER_CLASS: usize = 3;
/// Anomalies listed in one line each per class after the drawn ones; the rest are counted.
const LISTED_PER_CLASS: usize = 12;
/// Values of a list shown at each end of a long read.
const LIST_ENDS_SHOWN: usize = 4;

/// The txn check's whole result, when the run has one (`None` for other workloads, or a result that does not parse).
pub fn result_of(results: &Results) -> Option<TxnCheckResult> {
    let check = results.checks.iter().find(|c| c.name == "txn")?;
    serde_json::from_value(check.details.clone()).ok()
}

/// The anchor of the `n`th (from 1) anomaly of `class`: `txn-G2-item-1` (class names are letters, digits and
/// hyphens).
pub fn anchor(class: AnomalyClass, n: usize) -> String {
    format!("txn-{}-{n}", class.name())
}

/// A transaction of a drawn anomaly on the timeline: an outline around its op in its lane, linking to the anomaly.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Mark {
    /// Invocation, ms since the run started.
    pub t0: f64,
    /// Completion, ms since the run started (the end of the run for one that never completed).
    pub t1: f64,
    /// The lane the op is drawn in (index into the page data's `lanes`).
    pub lane: u32,
    /// `T12`.
    pub label: String,
    /// The anomaly's anchor (`txn-G2-item-1`), where a click on the mark goes.
    pub a: String,
    /// The anomaly's class, for the hover text.
    pub class: &'static str,
}

/// The drawn anomalies' transactions, as marks on the timeline (each transaction once per anomaly), in the order
/// the section shows the anomalies.
pub fn marks(result: &TxnCheckResult, table: &OpTable, end_ms: f64) -> Vec<Mark> {
    let ops: HashMap<u64, usize> = table
        .ops
        .iter()
        .enumerate()
        .map(|(i, op)| (op.invoke_index, i))
        .collect();
    let mut marks = Vec::new();
    for (class, n, anomaly) in drawn(result) {
        for txn in &anomaly.txns {
            let Some(op) = ops.get(txn).map(|&i| &table.ops[i]) else {
                continue;
            };
            marks.push(Mark {
                t0: ms(op.start_ns),
                t1: op.end_ns.map_or(end_ms, ms),
                lane: op.lane,
                label: format!("T{txn}"),
                a: anchor(class, n),
                class: class.name(),
            });
        }
    }
    marks
}

/// The anomalies drawn in full, with their class and number: the first [`DRAWN_PER_CLASS`] of each class, classes
/// the claimed model forbids first.
fn drawn(result: &TxnCheckResult) -> impl Iterator<Item = (AnomalyClass, usize, &Anomaly)> {
    classes_in_order(result).into_iter().flat_map(move |class| {
        result.anomalies[&class]
            .iter()
            .take(DRAWN_PER_CLASS)
            .enumerate()
            .map(move |(i, anomaly)| (class, i + 1, anomaly))
    })
}

/// The classes found (and kept), those the claimed model forbids first.
fn classes_in_order(result: &TxnCheckResult) -> Vec<AnomalyClass> {
    let forbidden = result.forbidden_classes();
    let mut classes: Vec<AnomalyClass> = result.anomalies.keys().copied().collect();
    classes.sort_by_key(|class| (!forbidden.contains(class), *class));
    classes
}

/// What the section needs besides the result: the transactions, the nodes they were sent to, the fault windows.
struct Context<'a> {
    result: &'a TxnCheckResult,
    txns: HashMap<u64, Txn>,
    nodes: HashMap<u64, &'a str>,
    timeline: &'a Timeline,
    end_ms: f64,
}

impl Context<'_> {
    /// A time as the report shows it (the phase clock).
    fn seconds(&self, time_ns: u64) -> String {
        super::timeline::shown(ms(time_ns), self.timeline.phase_start_ms)
    }
}

/// The section: summary, the classes found, and each anomaly.
pub fn render(result: &TxnCheckResult, history: &History, timeline: &Timeline, end_ms: f64) -> Markup {
    let wanted: BTreeSet<u64> = result
        .anomalies
        .values()
        .flatten()
        .flat_map(|a| a.txns.iter().copied())
        .collect();
    let txns = match history_txns(history) {
        Ok(txns) => txns
            .into_iter()
            .filter(|t| wanted.contains(&t.index))
            .map(|t| (t.index, t))
            .collect(),
        Err(_) => HashMap::new(),
    };
    let nodes = history
        .events
        .iter()
        .filter(|e| wanted.contains(&e.index))
        .filter_map(|e: &Event| Some((e.index, e.node.as_deref()?)))
        .collect();
    let context = Context {
        result,
        txns,
        nodes,
        timeline,
        end_ms,
    };
    html! {
        (summary(result))
        @if result.anomalies.is_empty() {
            p { "No anomaly of any class was found: no dependency cycle, and every read is one a committed \
                 transaction's writes explain." }
        } @else {
            (class_table(result))
        }
        @for class in classes_in_order(result) { (class_section(&context, class)) }
    }
}

/// The claimed model, the verdict and why, the models still satisfied, the counts.
fn summary(result: &TxnCheckResult) -> Markup {
    let s = &result.stats;
    let edges: Vec<String> = s
        .edges
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    let still = if result.strongest_models.is_empty() {
        "none of the models".to_string()
    } else {
        result
            .strongest_models
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    html! {
        p class="txn-verdict" {
            (super::checks::pill(result.verdict)) " against the claimed " b { (result.claimed_phrase()) } ": "
            (Shown(&result.reason)) "."
        }
        p { "Still consistent with (the strongest models held): " b { (still) } "." }
        @if !result.not.is_empty() {
            p { "Ruled out (the weakest models the anomalies found exclude, as Elle's " code { ":not" } "): "
                b { (result.not.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")) } "." }
        }
        div class="txn-models" { @for model in ConsistencyModel::PRINCIPAL { (model_chip(result, model)) } }
        p class="hint" {
            (s.txns) " transactions: " (s.ok) " ok · " (s.failed) " fail · " (s.info) " info ("
            (s.info_committed) " of them seen by a committed read, so taken as committed) · " (s.keys) " keys · "
            "dependency graph: " (if edges.is_empty() { "no edges".to_string() } else { edges.join(", ") }) " edges · "
            (s.cyclic_components) " cyclic components (largest " (s.largest_component) ") · checked in " (s.check_ms)
            " ms."
        }
        @if !result.undecided.is_empty() {
            ul class="warnings" {
                @for (class, why) in &result.undecided {
                    li { span class="tag warn" { "undecided" } " " (class.name()) ": " (Shown(why)) }
                }
            }
        }
    }
}

/// One model as a chip: satisfied, violated or undecided (not satisfied, though none of its classes was found).
fn model_chip(result: &TxnCheckResult, model: ConsistencyModel) -> Markup {
    let (tag, mark, title) = if result.models_satisfied.contains(&model) {
        ("ok", "✓", "the history is consistent with it")
    } else if model
        .forbids()
        .iter()
        .any(|c| result.anomaly_counts.contains_key(c) && !c.is_unknown())
    {
        ("bad", "✗", "the history shows an anomaly it forbids")
    } else {
        ("warn", "?", "a class it forbids could not be decided")
    };
    html! {
        @let claimed = result.claimed.contains(&model);
        span class={ "tag " (tag) @if claimed { " claimed" } } title=(title) {
            (mark) " " (model.name()) @if claimed { " (claimed)" }
        }
    }
}

/// `G2-item: write skew — each transaction's read missed ...; forbidden by ...`
pub fn class_sentence(class: AnomalyClass) -> String {
    let (name, meaning) = class.meaning();
    format!("{class}: {name} — {meaning}; {}", class.forbidden_by_phrase())
}

/// The classes found: how many, what each means, whether the claimed model forbids it.
fn class_table(result: &TxnCheckResult) -> Markup {
    let forbidden = result.forbidden_classes();
    let claimed = result.claimed_phrase();
    html! {
        table class="inner txn-classes" {
            thead { tr { th { "anomaly" } th { "found" } th { "what it means" } th { "claimed model" } } }
            tbody {
                @for class in classes_in_order(result) {
                    tr {
                        td {
                            a href={ "#" (anchor(class, 1)) } { (class.name()) }
                            @if class.elle_result() != format!("Elle: {}", class.name()) { " " small { "(" (class.elle_result()) ")" } }
                        }
                        td { (result.anomaly_counts.get(&class).copied().unwrap_or(0)) }
                        td { (class_sentence(class)) }
                        td {
                            @if forbidden.contains(&class) {
                                span class="tag bad" { (claimed) " forbids it" }
                            } @else {
                                span class="tag info" { (claimed) " allows it" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One class: its sentence, its first anomalies in full, the next ones in a line each, how many more.
fn class_section(context: &Context<'_>, class: AnomalyClass) -> Markup {
    let kept = &context.result.anomalies[&class];
    let total = context
        .result
        .anomaly_counts
        .get(&class)
        .copied()
        .unwrap_or(kept.len() as u64);
    let listed = kept.iter().enumerate().skip(DRAWN_PER_CLASS).take(LISTED_PER_CLASS);
    let shown = kept.len().min(DRAWN_PER_CLASS + LISTED_PER_CLASS) as u64;
    let forbidden = context.result.forbidden_classes().contains(&class);
    let claimed = context.result.claimed_phrase();
    html! {
        section class={ "txn-class" @if forbidden { " forbidden" } } {
            h3 { (class.name()) " " small { "· " (class.meaning().0) " · " (total) " found" } }
            p class="meaning" {
                (class_sentence(class)) ". "
                @if forbidden {
                    b { "The claimed " (claimed) " forbids it." }
                } @else {
                    "The claimed " (claimed) " allows it; it is listed for information."
                }
            }
            @for (i, anomaly) in kept.iter().take(DRAWN_PER_CLASS).enumerate() {
                (anomaly_view(context, class, i + 1, anomaly))
            }
            @if kept.len() > DRAWN_PER_CLASS {
                ul class="txn-more" {
                    @for (_, anomaly) in listed { li { (Shown(&anomaly.explanation)) } }
                }
            }
            @if total > shown {
                p class="hint" { "… and " (total - shown) " more " (class.name()) " (the first "
                    (kept.len()) " are in results.json)." }
            }
        }
    }
}

/// One anomaly in full: its explanation, the graph and the edge sentences for a cycle, its transactions.
fn anomaly_view(context: &Context<'_>, class: AnomalyClass, n: usize, anomaly: &Anomaly) -> Markup {
    let id = anchor(class, n);
    let (t0, t1) = span_ms(context, anomaly);
    html! {
        div class="txn-anomaly" id=(id) {
            h4 {
                a href={ "#" (id) } { (class.name()) " #" (n) } " "
                @if !anomaly.cycle.is_empty() {
                    small { "a cycle of " (anomaly.cycle.len()) " transactions" }
                } @else if let Some(key) = &anomaly.key {
                    small { "on key " code { (Shown(key)) } }
                }
            }
            p class="explanation" { (Shown(&anomaly.explanation)) }
            @if !anomaly.cycle.is_empty() {
                (cycle_view(context, &id, anomaly))
            }
            (txn_table(context, &id, anomaly))
            p class="hint" {
                a href="#" class="zoom-link" data-focus=(id) data-t0=(format!("{t0:.3}")) data-t1=(format!("{t1:.3}")) {
                    "Show these transactions on the timeline"
                }
                " (outlined in red there; click one to come back here)."
            }
        }
    }
}

/// From the first invocation to the last completion among an anomaly's transactions, in ms.
fn span_ms(context: &Context<'_>, anomaly: &Anomaly) -> (f64, f64) {
    let known: Vec<&Txn> = anomaly.txns.iter().filter_map(|t| context.txns.get(t)).collect();
    let t0 = known.iter().map(|t| ms(t.invoke_time_ns)).fold(f64::MAX, f64::min);
    let t1 = known.iter().map(|t| ms(t.complete_time_ns)).fold(0.0, f64::max);
    if known.is_empty() {
        (0.0, context.end_ms)
    } else {
        (t0, t1.max(t0))
    }
}

/// The graph and, under it, one sentence per edge with its kind.
fn cycle_view(context: &Context<'_>, id: &str, anomaly: &Anomaly) -> Markup {
    let boxes: Vec<TxnBox> = anomaly
        .txns
        .iter()
        .map(|&index| TxnBox {
            index,
            detail: box_detail(context, index),
            href: format!("#{id}-T{index}"),
        })
        .collect();
    let title = format!("{}: {}", anomaly.class, anomaly.explanation);
    let kinds: BTreeSet<EdgeKind> = anomaly.cycle.iter().map(|s| s.kind).collect();
    html! {
        div class="txn-graph" {
            (txn_cycle::svg(&anomaly.cycle, &boxes, &title))
            @if anomaly.txns.len() > txn_cycle::DRAWN_TXNS_MAX {
                p class="hint" { "A cycle this long is not drawn; its edges follow." }
            }
            div class="legend" {
                @for kind in &kinds {
                    span { i style={ "background:" (txn_cycle::colour(*kind)) } {} (kind.name()) " — " (edge_meaning(*kind)) }
                }
            }
        }
        ol class="txn-edges" {
            @for step in &anomaly.cycle {
                li {
                    span class={ "edge-kind " (step.kind.name()) } style={ "color:" (txn_cycle::colour(step.kind)) } {
                        "T" (step.from) " → T" (step.to) " " (step.kind.name())
                        @if let Some(key) = &step.key { " " (Shown(key)) }
                    }
                    ": " (Shown(&step.sentence))
                }
            }
        }
    }
}

/// What an edge kind says, for the legend.
fn edge_meaning(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Ww => "overwrote its version",
        EdgeKind::Wr => "read its write",
        EdgeKind::Rw => "its read missed the next one's write",
        EdgeKind::Realtime => "completed before the next began",
        EdgeKind::Process => "the same client ran it first",
    }
}

/// `p3 · n2 · ok` under a box.
fn box_detail(context: &Context<'_>, index: u64) -> String {
    let Some(txn) = context.txns.get(&index) else {
        return "not in the history".to_string();
    };
    let mut parts = vec![format!("p{}", txn.process)];
    if let Some(node) = context.nodes.get(&index) {
        parts.push((*node).to_string());
    }
    parts.push(outcome_name(txn.outcome).to_string());
    parts.join(" · ")
}

fn outcome_name(outcome: TxnOutcome) -> &'static str {
    match outcome {
        TxnOutcome::Ok => "ok",
        TxnOutcome::Fail => "fail",
        TxnOutcome::Info => "info",
    }
}

/// The anomaly's transactions, one row each.
fn txn_table(context: &Context<'_>, id: &str, anomaly: &Anomaly) -> Markup {
    let keys: BTreeSet<&str> = anomaly
        .cycle
        .iter()
        .filter_map(|s| s.key.as_deref())
        .chain(anomaly.key.as_deref())
        .collect();
    html! {
        table class="inner txn-txns" {
            thead {
                tr {
                    th { "txn" } th { "process" } th { "node" } th { "invoked" } th { "completed" } th { "outcome" }
                    th { "micro-ops (result)" } th { "faults meanwhile" }
                }
            }
            tbody {
                @for &index in unique(&anomaly.txns).iter() {
                    (txn_row(context, id, index, &keys, !anomaly.cycle.is_empty()))
                }
            }
        }
    }
}

/// The transactions in order of first appearance, each once.
fn unique(txns: &[u64]) -> Vec<u64> {
    let mut seen = BTreeSet::new();
    txns.iter().copied().filter(|t| seen.insert(*t)).collect()
}

fn txn_row(context: &Context<'_>, id: &str, index: u64, keys: &BTreeSet<&str>, in_cycle: bool) -> Markup {
    let row_id = format!("{id}-T{index}");
    let Some(txn) = context.txns.get(&index) else {
        return html! {
            tr id=(row_id) { td { "T" (index) } td colspan="7" { "not found in history.jsonl" } }
        };
    };
    let outcome = match (txn.outcome, in_cycle) {
        (TxnOutcome::Info, true) => "info: unknown to the client, but a committed read saw its writes",
        (TxnOutcome::Info, false) => "info: unknown to the client",
        (TxnOutcome::Fail, _) => "fail: certainly aborted",
        (TxnOutcome::Ok, _) => "ok",
    };
    html! {
        tr id=(row_id) class={ "txn " (outcome_name(txn.outcome)) } {
            td { a href={ "#ev-" (index) } title="history.jsonl index of its invocation" { "T" (index) } }
            td { "p" (txn.process) }
            td { (Shown(context.nodes.get(&index).copied().unwrap_or("?"))) }
            td class="num" { (context.seconds(txn.invoke_time_ns)) }
            td class="num" { (context.seconds(txn.complete_time_ns)) }
            td { (outcome) }
            td { (micro_ops(txn, keys)) }
            td { (faults_meanwhile(context.timeline, txn, context.end_ms)) }
        }
    }
}

/// Every micro-op with its result, one per line; those on the anomaly's keys highlighted.
fn micro_ops(txn: &Txn, keys: &BTreeSet<&str>) -> Markup {
    html! {
        ul class="micro-ops" {
            @for op in &txn.ops {
                @let text = micro_op(op, txn.outcome);
                li {
                    @if keys.contains(op.key()) { mark { code { (Shown(&text)) } } } @else { code { (Shown(&text)) } }
                }
            }
        }
    }
}

/// `append k3 7`, `w k2 5`, `r k1 → [1 4 7]`; a read of a transaction that did not complete `ok` returned nothing
/// the client saw (`r k1 → ?`).
pub fn micro_op(op: &MicroOp, outcome: TxnOutcome) -> String {
    match op {
        MicroOp::Append { key, value } => format!("append {key} {value}"),
        MicroOp::Write { key, value } => format!("w {key} {value}"),
        MicroOp::Read { key, .. } if outcome != TxnOutcome::Ok => format!("r {key} → ?"),
        MicroOp::Read { key, value: None } => format!("r {key} → nil"),
        MicroOp::Read {
            key,
            value: Some(ReadValue::Register(v)),
        } => format!("r {key} → {v}"),
        MicroOp::Read {
            key,
            value: Some(ReadValue::List(items)),
        } => format!("r {key} → {}", list(items)),
    }
}

/// `[1 4 7]`, or a long list by its ends: `[1 2 3 4 … 97 98 99 100] (100 values)`.
fn list(items: &[i64]) -> String {
    let join = |part: &[i64]| part.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
    if items.len() <= 3 * LIST_ENDS_SHOWN {
        return format!("[{}]", join(items));
    }
    format!(
        "[{} … {}] ({} values)",
        join(&items[..LIST_ENDS_SHOWN]),
        join(&items[items.len() - LIST_ENDS_SHOWN..]),
        items.len()
    )
}

/// The fault windows open at any time while the transaction ran, by label; "none".
fn faults_meanwhile(timeline: &Timeline, txn: &Txn, end_ms: f64) -> Markup {
    let (t0, t1) = (ms(txn.invoke_time_ns), ms(txn.complete_time_ns));
    let open: Vec<&timeline::FaultWindow> = timeline
        .faults
        .iter()
        .filter(|f| f.t0 <= t1 && f.t1.unwrap_or(end_ms) >= t0)
        .collect();
    html! {
        @if open.is_empty() { span class="hint" { "none" } }
        @for (i, fault) in open.iter().enumerate() {
            @if i > 0 { br; }
            a href={ "#ev-" (fault.index) } { (Shown(&fault.label)) }
        }
    }
}

/// The txn row of the checks table: the claimed model, the counts, the classes found, a link to the section.
pub fn check_details(result: &TxnCheckResult) -> Markup {
    let s = &result.stats;
    html! {
        div class="detail" {
            "claimed " (result.claimed_phrase()) " · " (s.txns) " transactions (" (s.ok) " ok, " (s.failed) " fail, "
            (s.info) " info) on " (s.keys) " keys"
            @if !result.anomaly_counts.is_empty() {
                " · found: "
                @for (i, (class, n)) in result.anomaly_counts.iter().enumerate() {
                    @if i > 0 { ", " }
                    a href={ "#" (anchor(*class, 1)) } { (class.name()) } " (" (n) ")"
                }
            }
            " · " a href="#transactions" { "see the transactions section" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::timeline::FaultWindow;
    use faultline_workloads::history::EventKind;
    use serde_json::{json, Value};

    fn event(index: u64, time_ms: u64, kind: EventKind, process: u64, node: &str, value: Value) -> Event {
        Event {
            index,
            time_ns: time_ms * 1_000_000,
            kind,
            process: Some(process),
            worker: Some(process),
            node: Some(node.into()),
            f: "txn".into(),
            key: None,
            value,
            error: None,
        }
    }

    /// Write skew between T1 and T2, an `info` append T5 some read saw, T7 whose read missed its own append, and a
    /// T9 that reads everything.
    fn history() -> History {
        use EventKind::*;
        let events = vec![
            event(0, 0, Meta, 0, "n1", Value::Null),
            event(1, 10, Invoke, 1, "n1", json!([["r", "x", null], ["append", "y", 1]])),
            event(2, 11, Invoke, 2, "n2", json!([["r", "y", null], ["append", "x", 2]])),
            event(3, 20, Ok, 1, "n1", json!([["r", "x", []], ["append", "y", 1]])),
            event(4, 21, Ok, 2, "n2", json!([["r", "y", []], ["append", "x", 2]])),
            event(5, 30, Invoke, 3, "n3", json!([["append", "z", 3]])),
            event(6, 40, Info, 3, "n3", json!([["append", "z", 3]])),
            event(
                7,
                50,
                Invoke,
                4,
                "n1",
                json!([["append", "<b>k</b>", 4], ["r", "<b>k</b>", null]]),
            ),
            event(
                8,
                51,
                Ok,
                4,
                "n1",
                json!([["append", "<b>k</b>", 4], ["r", "<b>k</b>", []]]),
            ),
            event(
                9,
                60,
                Invoke,
                5,
                "n2",
                json!([["r", "x", null], ["r", "y", null], ["r", "z", null]]),
            ),
            event(
                10,
                61,
                Ok,
                5,
                "n2",
                json!([["r", "x", [2]], ["r", "y", [1]], ["r", "z", [3]]]),
            ),
        ];
        let mut events = events;
        events[0].f = "run-start".into();
        events[0].process = None;
        History {
            events,
            truncated_tail: false,
        }
    }

    fn step(from: u64, to: u64, kind: &str, key: Option<&str>, sentence: &str) -> Value {
        json!({"from": from, "to": to, "kind": kind, "key": key, "sentence": sentence})
    }

    /// A hand-made result: a G2-item of two (T1, T2), a G-single of three through the info T5 (one kept of 20), an
    /// internal anomaly on a hostile key; claimed serializable, still read-committed.
    fn result() -> TxnCheckResult {
        let skew = json!({"class": "G2-item", "txns": [1, 2], "explanation": "G2-item: a cycle of 2 transactions, T1 -rw-> T2 -rw-> T1",
        "cycle": [
            step(1, 2, "rw", Some("x"), "T2 appended 2 to x and T1 read x = [] without it, so T1 came before T2 (rw)"),
            step(2, 1, "rw", Some("y"), "T1 appended 1 to y and T2 read y = [] without it, so T2 came before T1 (rw)"),
        ]});
        let single = json!({"class": "G-single", "txns": [9, 5, 1], "explanation": "G-single: a cycle of 3 transactions, T9 -rw-> T5 -wr-> T1 -ww-> T9",
        "cycle": [
            step(9, 5, "rw", Some("z"), "T5 appended 3 to z and T9 read z = [] without it, so T9 came before T5 (rw)"),
            step(5, 1, "wr", Some("z"), "T1 read z = [3], so it followed T5's append of 3 (wr)"),
            step(1, 9, "realtime", None, "T1 completed at 20.000 ms, before T9 began at 60.000 ms (realtime)"),
        ]});
        let internal = json!({"class": "internal", "txns": [7], "key": "<b>k</b>",
            "explanation": "T7 read <b>k</b> = [], but its own earlier micro-ops on <b>k</b> mean it should have read a list ending in [4]"});
        serde_json::from_value(json!({
            "verdict": "invalid", "claimed": "serializable",
            "reason": "the history shows G-single (20), G2-item (1), internal (1), which serializable forbids",
            "anomalies": {"G2-item": [skew], "G-single": [single], "internal": [internal]},
            "anomaly_counts": {"G2-item": 1, "G-single": 20, "internal": 1},
            "undecided": {}, "models_satisfied": ["read-committed", "read-uncommitted"],
            "strongest_model": "read-committed", "strongest_models": ["read-committed"],
            "stats": {"txns": 5, "ok": 4, "failed": 0, "info": 1, "info_committed": 1, "keys": 4,
                      "edges": {"ww": 0, "wr": 1, "rw": 3, "realtime": 2, "process": 0},
                      "cyclic_components": 1, "largest_component": 3, "check_ms": 0}
        }))
        .expect("a well-formed hand-made result")
    }

    fn timeline() -> Timeline {
        Timeline {
            faults: vec![FaultWindow {
                kind: "kill",
                node: "n2".into(),
                label: "kill n2".into(),
                t0: 15.0,
                t1: Some(25.0),
                detail: String::new(),
                index: 99,
                fault_id: Some(1),
            }],
            ..Timeline::default()
        }
    }

    fn page() -> String {
        render(&result(), &history(), &timeline(), 70.0).into_string()
    }

    /// The part of `page` from the element with `id` to the next anomaly.
    fn part<'a>(page: &'a str, id: &str) -> &'a str {
        let start = page.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
        let rest = &page[start..];
        let end = rest[1..].find("class=\"txn-anomaly\"").map_or(rest.len(), |e| e + 1);
        &rest[..end]
    }

    #[test]
    fn given_a_cycle_of_two_when_rendered_should_say_the_class_draw_both_edges_and_link_its_transactions() {
        let page = page();
        assert!(
            page.contains(
                "G2-item: write skew — each transaction's read missed the other's write (two rw edges in a row around \
                 the circle); forbidden by repeatable-read and every stronger model"
            ),
            "the class in one sentence"
        );
        let skew = part(&page, "txn-G2-item-1");
        assert!(page.contains("<b>The claimed serializable forbids it.</b>"));
        assert!(skew.contains("<svg class=\"txn-cycle\""), "the graph");
        assert!(
            skew.contains(">rw x</text>") && skew.contains(">rw y</text>"),
            "both edges labelled: {skew}"
        );
        assert!(
            skew.contains("T2 appended 2 to x and T1 read x = [] without it, so T1 came before T2 (rw)"),
            "each edge's sentence"
        );
        for t in [1, 2] {
            assert!(
                skew.contains(&format!("href=\"#txn-G2-item-1-T{t}\"")),
                "the box links to the row of T{t}"
            );
            assert!(skew.contains(&format!("id=\"txn-G2-item-1-T{t}\"")), "the row of T{t}");
            assert!(
                skew.contains(&format!("href=\"#ev-{t}\"")),
                "the row links to the history event"
            );
        }
        assert!(
            skew.contains("<code>r x → []</code>") && skew.contains("<code>append y 1</code>"),
            "micro-ops"
        );
        assert!(skew.contains("<mark>"), "the ops on the cycle's keys are highlighted");
        assert!(
            skew.contains("data-focus=\"txn-G2-item-1\"") && skew.contains("class=\"zoom-link\""),
            "a link to the timeline"
        );
        assert!(
            skew.contains(">kill n2</a>"),
            "the kill open while T1 and T2 ran: {skew}"
        );
    }

    #[test]
    fn given_a_cycle_of_three_through_an_info_txn_when_rendered_should_draw_three_edges_and_say_it_committed() {
        let page = page();
        let single = part(&page, "txn-G-single-1");
        assert_eq!(single.matches("<g class=\"txn-box\">").count(), 3, "three boxes");
        assert!(
            single.contains(">rw z</text>") && single.contains(">wr z</text>") && single.contains(">realtime</text>")
        );
        assert!(
            single.contains("class=\"edge realtime\""),
            "the real-time edge drawn (dashed by its class)"
        );
        assert!(single.contains("p3 · n3 · info"), "the info box says so");
        assert!(
            single.contains("info: unknown to the client, but a committed read saw its writes"),
            "an info txn in a cycle committed"
        );
        assert!(single.contains("<code>append z 3</code>"));
        assert!(page.contains("… and 19 more G-single"), "the rest counted");
        assert!(
            page.contains("G-single: read skew — ")
                && page.contains("forbidden by repeatable-read and consistent-view and every stronger"),
            "the class's sentence"
        );
    }

    #[test]
    fn given_a_non_cycle_anomaly_when_rendered_should_show_its_sentence_and_transaction_escaped_without_a_graph() {
        let page = page();
        let internal = part(&page, "txn-internal-1");
        assert!(!internal.contains("<svg"), "no graph for a non-cycle anomaly");
        assert!(
            internal.contains("on key <code>&lt;b&gt;k&lt;/b&gt;</code>"),
            "{internal}"
        );
        assert!(internal.contains("T7 read &lt;b&gt;k&lt;/b&gt; = [], but its own earlier micro-ops"));
        assert!(internal.contains("id=\"txn-internal-1-T7\""));
        assert!(!page.contains("<b>k</b>"), "the hostile key escaped everywhere");
        assert!(
            page.contains("internal: internal inconsistency — ")
                && page.contains("forbidden by read-atomic and every stronger model")
        );
    }

    #[test]
    fn given_a_result_when_summarised_should_name_the_claimed_model_the_models_still_held_and_link_each_class() {
        let page = page();
        assert!(
            page.contains("Still consistent with (the strongest models held): <b>read-committed</b>"),
            "{page}"
        );
        assert!(page.contains("✗ serializable (claimed)") && page.contains("✓ read-committed"));
        for class in ["G-single", "G2-item", "internal"] {
            assert!(
                page.contains(&format!("<a href=\"#txn-{class}-1\">{class}</a>")),
                "the class table links {class}"
            );
        }
        assert!(!page.contains("No anomaly of any class was found"));
        let details = check_details(&result()).into_string();
        assert!(details.contains("<a href=\"#txn-G2-item-1\">G2-item</a> (1)") && details.contains("#transactions"));
    }

    #[test]
    fn given_a_valid_result_when_rendered_should_say_nothing_was_found_and_mark_nothing() {
        let valid: TxnCheckResult = serde_json::from_value(json!({
            "verdict": "valid", "claimed": "strict-serializable", "reason": "no anomaly strict-serializable forbids was found",
            "anomalies": {}, "anomaly_counts": {}, "undecided": {},
            "models_satisfied": ConsistencyModel::ALL.to_vec(), "strongest_model": "strict-serializable",
            "stats": {"txns": 5, "ok": 5, "failed": 0, "info": 0, "info_committed": 0, "keys": 4, "edges": {},
                      "cyclic_components": 0, "largest_component": 0, "check_ms": 0}
        }))
        .unwrap();
        let page = render(&valid, &history(), &timeline(), 70.0).into_string();
        assert!(page.contains("No anomaly of any class was found"), "{page}");
        assert!(
            page.contains("✓ strict-serializable (claimed)") && !page.contains('✗'),
            "{page}"
        );
        assert!(marks(&valid, &OpTable::from_history(&history()), 70.0).is_empty());
    }

    #[test]
    fn given_the_drawn_anomalies_when_marked_should_put_each_transaction_in_its_lane_linking_to_its_anomaly() {
        let history = history();
        let table = OpTable::from_history(&history);
        let marks = marks(&result(), &table, 70.0);
        let found: Vec<(&str, &str)> = marks.iter().map(|m| (m.label.as_str(), m.a.as_str())).collect();
        assert_eq!(
            found,
            [
                ("T9", "txn-G-single-1"),
                ("T5", "txn-G-single-1"),
                ("T1", "txn-G-single-1"),
                ("T1", "txn-G2-item-1"),
                ("T2", "txn-G2-item-1"),
                ("T7", "txn-internal-1"),
            ],
            "forbidden classes in order, each anomaly's transactions"
        );
        let t5 = &marks[1];
        assert_eq!((t5.t0, t5.t1), (30.0, 40.0), "the info txn until it timed out");
        let lane_of = |label: &str| {
            table.lanes[marks.iter().find(|m| m.label == label).unwrap().lane as usize]
                .label
                .clone()
        };
        assert_eq!(
            (lane_of("T1"), lane_of("T2"), lane_of("T5")),
            ("w1".into(), "w2".into(), "w3".into())
        );
    }
}
