//! The page skeleton: banner (verdict, reason, facts, repro), what went wrong, checks, charts, the failing key, nodes,
//! fault windows, the plan, and the embedded data the charts are drawn from.

use super::escape::{json_for_script, Shown};
use super::nodes::{self, NodeInputs};
use super::observations::{self, Lanes};
use super::ops::OpTable;
use super::timeline::{self, ms, Timeline};
use super::{anchor_offset_ns, behaviours, checks, coverage, linearizability, txn, unseen, RunInputs};
use crate::results::{CheckResult, Results, Verdict};
use faultline_workloads::history::{EventKind, History, Meta};
use faultline_workloads::LinearizabilityResult;
use maud::{html, Markup, PreEscaped};
use serde_json::{json, Value};

/// report.html's additions to the base stylesheet (`pages.css`).
const CSS: &str = include_str!("../../assets/report.css");
const JS: &str = include_str!("../../assets/report.js");
/// Fault windows listed in the table; all of them are drawn.
const FAULT_ROWS_MAX: usize = 400;

/// Renders the whole page.
pub fn render(inputs: &RunInputs) -> String {
    let results = &inputs.results;
    let history = &inputs.history;
    let table = OpTable::from_history(history);
    let timeline = timeline::build(history);
    let lanes = observations::build(history, results);
    let end_ms = run_end_ms(history, &table);
    let lin = results
        .checks
        .iter()
        .find(|c| c.name == "linearizability")
        .and_then(|c| serde_json::from_value::<LinearizabilityResult>(c.details.clone()).ok());
    let explanation = lin.as_ref().and_then(|l| l.explanation.as_ref());
    let invalid_keys: Vec<&str> = lin.as_ref().map_or_else(Vec::new, |l| {
        l.keys
            .iter()
            .filter(|k| k.verdict == Verdict::Invalid)
            .map(|k| k.key.as_str())
            .collect()
    });
    let node_inputs = NodeInputs {
        history,
        logs: &inputs.logs,
        anchor_offset_ns: anchor_offset_ns(history),
    };
    let txn_result = txn::result_of(results);
    let txn_marks = txn_result
        .as_ref()
        .map_or_else(Vec::new, |r| txn::marks(r, &table, end_ms));
    let mut data = page_data(&table, &timeline, &lanes, end_ms);
    // Only a txn run with anomalies has marks, so every other page's data is what it was.
    if !txn_marks.is_empty() {
        data["txns"] = json!(txn_marks);
    }
    let data = json_for_script(&data.to_string());
    let title = format!(
        "{} · {} seed {} · faultline",
        crate::results::shout(results.verdict),
        results.plan,
        results.seed
    );
    // A history checked on its own has no run to cover or shrink.
    let checked_history = results.system == crate::results::CHECKED_HISTORY;
    let body = html! {
        (banner(inputs, &table, &timeline))
        (toc(explanation.is_some(), txn_result.is_some(), checked_history))
        main {
            (problems(results, history, &timeline))
            section class="card" id="checks" { h2 { "Checks" } (checks::render(results, timeline.phase_start_ms)) }
            @if !checked_history {
                (coverage_section(inputs))
                section class="card" id="behaviours" { h2 { "Behaviours" } (behaviours::render(&inputs.results.behaviours)) }
            }
            (charts(!lanes.is_empty(), !txn_marks.is_empty()))
            @if let Some(result) = &txn_result {
                section class="card" id="transactions" {
                    h2 { "Transactions" }
                    (txn::render(result, history, &timeline, end_ms))
                }
            }
            @if let Some(lin) = lin.as_ref().filter(|_| explanation.is_some()) {
                section class="card" id="linearizability" {
                    h2 { "Linearizability failure" }
                    (linearizability::render_all(lin, history, end_ms))
                    (unseen::for_final_reads(history, &invalid_keys))
                }
            }
            // A history checked on its own has no nodes' logs to place, no plan and no wall-clock anchor to miss.
            @if !checked_history {
                section class="card" id="nodes" {
                    h2 { "Nodes" }
                    p class="hint" {
                        "Lifecycle and fault events per node; before each crash or refusal, the node's last log lines, \
                         with their wall-clock times mapped onto run time through the run-start anchor."
                    }
                    (nodes::render(&node_inputs))
                }
            }
            (fault_table(&timeline))
            @if !checked_history { (plan_section(inputs)) }
        }
        (footer(inputs))
        div id="tooltip" {}
        // `json_for_script` leaves no `<`, `>` or `&` in the serialized JSON, so it cannot close the script; maud's
        // HTML escaping would corrupt it (`&quot;` is not JSON).
        script type="application/json" id="report-data" { (PreEscaped(&data)) }
        // The charts' script is a constant of this crate, not run data.
        script { (PreEscaped(JS)) }
    };
    let mut out = crate::pages::styled_document(&title, "", CSS, body);
    out.push('\n');
    out
}

fn footer(inputs: &RunInputs) -> Markup {
    html! {
        footer {
            "faultline-reports " (env!("CARGO_PKG_VERSION")) " · store folder "
            code { (Shown(&inputs.run_dir.display().to_string())) } " · "
            span id="render-status" data-status="pending" { "charts not drawn (JavaScript off?)" }
            div id="render-errors" hidden {}
        }
    }
}

fn run_end_ms(history: &History, table: &OpTable) -> f64 {
    let last_event = history.events.iter().map(|e| e.time_ns).max().unwrap_or(0);
    let last_op = table.ops.iter().filter_map(|op| op.end_ns).max().unwrap_or(0);
    ms(last_event.max(last_op)).max(1.0)
}

fn page_data(table: &OpTable, timeline: &Timeline, lanes: &Lanes, end_ms: f64) -> Value {
    let mut node_rows: Vec<String> = timeline
        .faults
        .iter()
        .map(|f| f.node.clone())
        .chain(timeline.markers.iter().filter_map(|m| m.node.clone()))
        .chain(table.nodes.iter().cloned())
        .collect();
    node_rows = nodes::sorted_nodes(&node_rows);
    let mut data = json!({
        "v": 1,
        "end_ms": end_ms,
        "phase_start_ms": timeline.phase_start_ms,
        "lanes": table.lanes,
        "fs": table.fs,
        "keys": table.keys,
        "nodes": table.nodes,
        "errors": table.errors,
        "node_rows": node_rows,
        "ops": table.columns(),
        "faults": timeline.faults,
        "markers": timeline.markers,
    });
    // Likewise only a run with fired triggers has their links.
    if !timeline.links.is_empty() {
        data["links"] = json!(timeline.links);
    }
    // Only a history with observations gets the key, so an old run's page data is what it was.
    if !lanes.is_empty() {
        data["obs"] = json!(lanes);
    }
    data
}

fn banner(inputs: &RunInputs, table: &OpTable, timeline: &Timeline) -> Markup {
    let (results, history) = (&inputs.results, &inputs.history);
    let c = &results.counts;
    let meta = history
        .events
        .iter()
        .find(|e| e.is(Meta::RunStart))
        .map(|e| e.value.clone())
        .unwrap_or(Value::Null);
    let latency = table.ok_latency_ms().map_or_else(
        || "no ok ops".to_string(),
        |(p50, p99, max)| format!("{p50:.1} / {p99:.1} / {max:.0} ms"),
    );
    let facts = [
        ("plan", results.plan.clone()),
        ("system", results.system.clone()),
        ("seed", results.seed.to_string()),
        ("started", results.started_at.clone()),
        ("duration", duration(results.duration_ms)),
        (
            "client ops",
            format!("{} ok · {} fail · {} info · {} open", c.ok, c.fail, c.info, c.open),
        ),
        ("latency p50 / p99 / max", latency),
        (
            "faults",
            format!("{} windows · {} nemesis events", timeline.faults.len(), c.nemesis),
        ),
    ];
    let hash = |k: &str| Shown(meta[k].as_str().unwrap_or("?"));
    html! {
        header class={ "banner " (results.verdict) } {
            div class="top" {
                div class="verdict" { (crate::results::shout(results.verdict)) }
                div class="reason" { (Shown(&results.reason)) }
            }
            (banner_warnings(results))
            dl { @for (name, value) in &facts { div { dt { (name) } dd { (Shown(value)) } } } }
            div class="repro" {
                span { "repro" }
                code id="repro" { (Shown(&results.repro)) }
                button id="copy-repro" type="button" { "copy" }
            }
            (provenance(inputs))
            @if !meta.is_null() {
                div class="hashes" {
                    "faultline " (hash("faultline_version")) " (xxh3 " (hash("faultline_binary_xxh3"))
                    ") · node binary " code { (hash("node_binary")) } " (xxh3 " (hash("node_binary_xxh3"))
                    ") · plan digest " (hash("plan_digest"))
                }
            }
        }
    }
}

/// Where the run's plan came from (a replay, a shrink step) and, for a shrunk failing run, its minimal repro.
fn provenance(inputs: &RunInputs) -> Markup {
    let origin = inputs
        .plan_yaml
        .as_deref()
        .and_then(|plan| plan.lines().find_map(|l| l.strip_prefix("origin: ")))
        .map(|o| o.trim_matches(|c| c == '\'' || c == '"'));
    let shrink = crate::shrink::read(&inputs.run_dir);
    let failing = inputs.results.verdict != Verdict::Valid;
    // A run that never got its cluster up has no fault schedule to shrink: its cause is the set-up.
    let set_up_failed = inputs
        .history
        .events
        .iter()
        .any(|e| e.is(faultline_workloads::history::Lifecycle::SetupFailed));
    html! {
        @if let Some(origin) = origin {
            div class="repro" { span { "from" } code { (Shown(origin)) } }
        }
        @if let Some(shrink) = &shrink {
            div class="repro" {
                span { "shrunk" }
                a href="shrink/shrink.html" { (Shown(&shrink.summary())) }
                " · " a href="shrink/shrunk.yaml" { "shrunk.yaml" }
            }
        } @else if failing && inputs.results.system != crate::results::CHECKED_HISTORY && !set_up_failed {
            div class="repro" {
                span { "shrink" }
                code { "faultline shrink " (Shown(&inputs.run_dir.display().to_string())) }
            }
        }
    }
}

/// A valid run's warnings, under its verdict: "VALID, with 1 warning:" and each warning named by its check. An invalid
/// or unknown run lists what went wrong below the banner instead, and every warning stays in its check's row.
fn banner_warnings(results: &Results) -> Markup {
    let warned: Vec<(&str, String)> = results
        .checks
        .iter()
        .flat_map(|c| checks::warnings(c).into_iter().map(|w| (c.name.as_str(), w)))
        .collect();
    warning_banner(results.verdict, &warned)
}

/// The banner's warning lines, each `(check, warning)`; nothing unless the run is valid and something warned.
fn warning_banner(verdict: Verdict, warned: &[(&str, String)]) -> Markup {
    if verdict != Verdict::Valid || warned.is_empty() {
        return html! {};
    }
    let plural = if warned.len() == 1 { "" } else { "s" };
    html! {
        div class="warnings" {
            div class="count" { (crate::results::shout(verdict)) ", with " (warned.len()) " warning" (plural) ":" }
            @for (check, warning) in warned {
                div class="warning" {
                    a href={ "#check-" (Shown(check)) } { (Shown(check)) } ": " (Shown(warning))
                }
            }
        }
    }
}

/// `1.5 s`, `2 min 05 s`, `1 h 02 min`.
fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{:.1} s", ms as f64 / 1000.0),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

fn toc(has_lin: bool, has_txn: bool, checked_history: bool) -> Markup {
    let mut links = vec![("checks", "Checks")];
    // A checked history has no run: nothing to cover and no behaviours of the system under faults.
    if !checked_history {
        links.extend([("coverage", "Coverage"), ("behaviours", "Behaviours")]);
    }
    links.extend([("timeline", "Timeline"), ("latency", "Latency & throughput")]);
    if has_txn {
        links.push(("transactions", "Transactions"));
    }
    if has_lin {
        links.push(("linearizability", "Failing key"));
    }
    if checked_history {
        links.push(("faults", "Fault windows"));
    } else {
        links.extend([("nodes", "Nodes & logs"), ("faults", "Fault windows"), ("plan", "Plan")]);
    }
    html! { nav class="toc" { @for (id, name) in links { a href={ "#" (id) } { (name) } } } }
}

/// Which named states the run reached; a results.json older than coverage has none, so they are computed from the
/// history here.
fn coverage_section(inputs: &RunInputs) -> Markup {
    let stored = &inputs.results.coverage;
    let recomputed = stored.states.is_empty();
    let computed;
    let shown = if recomputed {
        computed = faultline_workloads::coverage::coverage(&inputs.history);
        &computed
    } else {
        stored
    };
    html! { section class="card" id="coverage" { h2 { "Coverage" } (coverage::render(shown, recomputed, ms(inputs.history.phase_start_ns()))) } }
}

/// The list at the top: each failing or inconclusive check in one line, linked to its evidence; those with the run's
/// verdict first, the most severe first (see `crate::triage::Severity`), then in check order.
fn problems(results: &Results, history: &History, timeline: &Timeline) -> Markup {
    if results.verdict == Verdict::Valid {
        return html! {};
    }
    let mut failing: Vec<&CheckResult> = results.checks.iter().filter(|c| c.verdict != Verdict::Valid).collect();
    // A run that is unknown because no check judged anything: each says what it lacked.
    if failing.is_empty() {
        failing = results.checks.iter().filter(|c| c.not_checked).collect();
    }
    failing.sort_by_key(|c| {
        (
            c.verdict != results.verdict,
            crate::triage::check_severity(&results.system, c),
        )
    });
    // A check whose every finding follows from another check's ([`crate::triage::folds`]) is shown under it.
    let found = crate::triage::findings(results);
    let follows_from = |check: &CheckResult| -> Option<(String, String)> {
        let mine: Vec<_> = found.iter().filter(|f| f.signature.check == check.name).collect();
        let first = mine.first()?.cause.as_ref()?;
        let all_folded = mine.iter().all(|f| {
            f.cause
                .as_ref()
                .is_some_and(|c| c.signature.check == first.signature.check)
        });
        (all_folded && first.signature.check != check.name)
            .then(|| (first.signature.check.clone(), first.because.clone()))
    };
    let item = |check: &CheckResult| {
        html! {
            (checks::check_pill(check)) " " b { (Shown(&check.name)) } ": " (Shown(&check.reason)) " "
            a href=(evidence_link(&check.name, &check.details, history)) { "evidence" }
            @if let Some(hint) = check.evidence_ns.map(|ns| evidence_hint(results, history, timeline, ns)) {
                br; span class="hint" { (Shown(&hint)) }
            }
        }
    };
    let consequences = |cause: &str| -> Vec<(&CheckResult, String)> {
        failing
            .iter()
            .filter_map(|c| {
                follows_from(c)
                    .filter(|(of, _)| of == cause)
                    .map(|(_, because)| (*c, because))
            })
            .collect()
    };
    html! {
        section class={ "card problems " (results.verdict) } {
            h2 { "What went wrong" }
            ul {
                @for check in failing.iter().filter(|c| follows_from(c).is_none()) {
                    li {
                        (item(check))
                        @let under = consequences(&check.name);
                        @if !under.is_empty() {
                            ul.follows {
                                @for (consequence, because) in &under {
                                    li { "and so: " (item(consequence)) br; span class="hint" { "follows from it: " (Shown(because)) } }
                                }
                            }
                        }
                    }
                }
                @if history.truncated_tail {
                    li { "The history's last line was torn: the harness died while writing it." }
                }
            }
        }
    }
}

/// The hint under a failing check: where its first evidence is in time and among the faults. A history checked on its
/// own may have no times (Jepsen's EDN without `:time`, where each operation's time is its position) and, its nemesis
/// operations skipped, no fault windows: then the hint says only what the history can tell.
fn evidence_hint(results: &Results, history: &History, timeline: &Timeline, evidence_ns: u64) -> String {
    if results.system != crate::results::CHECKED_HISTORY {
        return faults_at(timeline, ms(evidence_ns));
    }
    if untimed_history(history) {
        return "the history has no times (each operation's time is its position), so the evidence has no place on a \
                clock"
            .to_string();
    }
    if timeline.faults.is_empty() {
        return evidence_at(timeline, ms(evidence_ns));
    }
    faults_at(timeline, ms(evidence_ns))
}

/// "first evidence at 7.0 s": `t_ms` on the run clock, said on the phase clock.
fn evidence_at(timeline: &Timeline, t_ms: f64) -> String {
    format!("first evidence at {:.1} s", (t_ms - timeline.phase_start_ms) / 1000.0)
}

/// Whether a history's times are its operations' positions, not nanoseconds: every one at most the number of events
/// (a timed history of N events that all happened within N ns does not exist).
fn untimed_history(history: &History) -> bool {
    let count = history.events.len() as u64;
    history.events.iter().all(|event| event.time_ns <= count)
}

/// Which fault windows were open at the first evidence of a failure (`t_ms`, drawn on the run clock, said on the
/// phase clock), or which one closed last before it: a person reading a failure starts from the faults around it.
fn faults_at(timeline: &Timeline, t_ms: f64) -> String {
    let faults = timeline
        .faults
        .iter()
        .filter(|f| !matches!(f.kind, "crash" | "refused" | "non-member"));
    let open: Vec<&str> = faults
        .clone()
        .filter(|f| f.t0 <= t_ms && f.t1.is_none_or(|t1| t1 >= t_ms))
        .map(|f| f.label.as_str())
        .collect();
    let at = evidence_at(timeline, t_ms);
    if !open.is_empty() {
        return format!("{at}, during: {}", open.join(", "));
    }
    let last = faults
        .filter_map(|f| f.t1.filter(|t1| *t1 < t_ms).map(|t1| (t1, f.label.as_str())))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match last {
        Some((t1, label)) => format!(
            "{at}, no fault open then (the last to end: {label}, {:.1} s before)",
            (t_ms - t1) / 1000.0
        ),
        None => format!("{at}, before any fault"),
    }
}

/// Where a failing check's evidence is on the page.
fn evidence_link(check: &str, details: &Value, history: &History) -> String {
    match check {
        "linearizability" if details.get("explanation").is_some() => "#linearizability".to_string(),
        "txn" if details.is_object() => "#transactions".to_string(),
        "boot" => first_bad_event(history).map_or("#check-boot".to_string(), |i| format!("#ev-{i}")),
        name => format!("#check-{name}"),
    }
}

fn first_bad_event(history: &History) -> Option<u64> {
    history
        .events
        .iter()
        .find(|e| e.kind == EventKind::Lifecycle && timeline::severity(e) == "bad" && e.node.is_some())
        .map(|e| e.index)
}

/// A legend entry: a swatch of `colour` (a constant of this file) and its meaning.
fn swatch(colour: &str, meaning: &str) -> Markup {
    html! { span { i style={ "background:" (colour) } {} (meaning) } }
}

fn charts(has_observations: bool, has_txn_marks: bool) -> Markup {
    html! {
        section class="card" id="timeline" {
            h2 { "Timeline" }
            div class="toolbar" {
                button id="zoom-in" type="button" { "+" }
                button id="zoom-out" type="button" { "−" }
                button id="zoom-reset" type="button" { "whole run" }
                span class="range" id="view-range" {}
                span class="hint" {
                    "wheel: zoom · drag: pan · double-click: whole run · hover: details · click a node event: its log"
                }
            }
            div class="chart" { canvas id="timeline-canvas" {} }
            div class="legend" {
                (swatch("#3b82f6", "ok")) (swatch("#f472b6", "fail (did not happen)"))
                (swatch("#f59e0b", "info (unknown)")) (swatch("#9ca3af", "never completed"))
                (swatch("#dc2626", "kill")) (swatch("#7c3aed", "pause")) (swatch("#ca8a04", "clock moved"))
                (swatch("#7f1d1d", "crash / refused to boot")) (swatch("#64748b", "restart-all"))
                (swatch("#16a34a", "membership change")) (swatch("#cbd5e1", "not a member"))
                span { "▼ problem event · ◆ disk surgery · ▏ lifecycle event · ◇ a trigger’s condition seen (filled amber: it fired a fault, drawn by an amber arrow to that fault; hollow: declined or skipped)" }
            }
            @if has_txn_marks {
                div class="legend" {
                    span {
                        "red outline: a transaction of a reported anomaly, labelled T<history index> (hover: its \
                         anomaly; click: go to it in the Transactions section)"
                    }
                }
            }
            @if has_observations {
                div class="legend" {
                    (swatch("#0f766e", "primary")) (swatch("#94a3b8", "backup")) (swatch("#c4b5fd", "other role"))
                    (swatch("#0f172a", "durable progress")) span { "○ last durable before a stop · ● booted with" }
                    (swatch("#b91c1c", "forgotten / booted on damage")) (swatch("#d97706", "damage truncated"))
                    (swatch("rgba(245, 158, 11, 0.35)", "lagging"))
                }
            }
            p class="hint" {
                "Top rows: one per node, with its fault windows and lifecycle events; below, one lane per worker (a \
                 retired process continues in its worker's lane; " code { "final" } " is the final phase). Shaded \
                 bands mark fault windows on every chart."
                @if has_observations {
                    " Under the node rows, one observation lane per node: its role as a strip and its durable progress \
                     as a line (scaled to the values in view), with a drop where the durability check found a node \
                     booted behind what it had persisted."
                }
            }
        }
        section class="card" id="latency" {
            h2 { "Latency and throughput" }
            div class="chart-title" { "Latency of every op by invocation time (log scale)" }
            div class="chart" { canvas id="latency-canvas" {} }
            div class="legend" {
                (swatch("#0f172a", "p50 (ok)")) (swatch("#7c2d12", "p99 (ok)"))
                span { "dots: every op (colours as above)" }
            }
            div class="chart-title" { "Completions per second (ok / fail / info, stacked)" }
            div class="chart" { canvas id="throughput-canvas" {} }
        }
    }
}

fn fault_table(timeline: &Timeline) -> Markup {
    html! {
        section class="card" id="faults" {
            h2 { "Fault windows" }
            table class="faults" {
                thead {
                    tr { th { "fault" } th { "from" } th { "to" } th { "length" } th { "details" } th {} }
                }
                tbody {
                    @if timeline.faults.is_empty() {
                        tr { td colspan="6" { "No fault windows: no node was killed, paused or down." } }
                    }
                    @for fault in timeline.faults.iter().take(FAULT_ROWS_MAX) { (fault_row(fault, timeline.phase_start_ms)) }
                    @if timeline.faults.len() > FAULT_ROWS_MAX {
                        tr class="elided" {
                            td colspan="6" {
                                "… and " (timeline.faults.len() - FAULT_ROWS_MAX) " more (all drawn on the timeline)"
                            }
                        }
                    }
                }
            }
        }
    }
}

fn fault_row(fault: &timeline::FaultWindow, phase_start_ms: f64) -> Markup {
    let (to, length) = match fault.t1 {
        Some(t1) => (timeline::shown(t1, phase_start_ms), format!("{:.0} ms", t1 - fault.t0)),
        None => ("end of run".to_string(), String::new()),
    };
    html! {
        tr class={ "fault " (fault.kind) } {
            td { a href={ "#ev-" (fault.index) } { (Shown(&fault.label)) } }
            td { (timeline::shown(fault.t0, phase_start_ms)) }
            td { (to) }
            td { (length) }
            td { (Shown(&fault.detail)) }
            td {
                a href="#" class="zoom-link" data-t0=(format!("{:.3}", fault.t0))
                    data-t1=(format!("{:.3}", fault.t1.unwrap_or(fault.t0 + 1000.0))) { "show" }
            }
        }
    }
}

fn plan_section(inputs: &RunInputs) -> Markup {
    html! {
        section class="card" id="plan" {
            h2 { "Plan" }
            @match &inputs.plan_yaml {
                Some(text) => {
                    details {
                        summary { "plan.yaml (resolved, as run)" }
                        pre class="plan" { (Shown(text)) }
                    }
                }
                None => { p class="warn" { "plan.yaml is missing from the store folder." } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CheckResult, Counts};
    use faultline_workloads::history::{Event, Observation};
    use std::collections::BTreeMap;

    const HOSTILE: &str = "</script><img src=x onerror=\"alert(1)\">&";

    #[test]
    fn given_a_first_evidence_when_described_should_name_the_open_faults_or_the_last_to_close() {
        let window = |kind: &'static str, label: &str, t0: f64, t1: Option<f64>| timeline::FaultWindow {
            kind,
            node: "n1".into(),
            label: label.into(),
            t0,
            t1,
            detail: String::new(),
            index: 0,
            fault_id: None,
        };
        let timeline = Timeline {
            faults: vec![
                window("kill", "kill n1", 1000.0, Some(3000.0)),
                window("pause", "pause n2", 2000.0, Some(2500.0)),
                window("crash", "n3 crashed", 2100.0, Some(2200.0)),
                window("partition", "partition {n1} | {n2,n3}", 2400.0, None),
            ],
            ..Timeline::default()
        };
        assert_eq!(
            faults_at(&timeline, 2450.0),
            "first evidence at 2.5 s, during: kill n1, pause n2, partition {n1} | {n2,n3}"
        );
        let closed = Timeline {
            faults: timeline.faults[..3].to_vec(),
            ..Timeline::default()
        };
        assert_eq!(
            faults_at(&closed, 7000.0),
            "first evidence at 7.0 s, no fault open then (the last to end: kill n1, 4.0 s before)"
        );
        assert_eq!(faults_at(&closed, 500.0), "first evidence at 0.5 s, before any fault");
        // The fault phase began 4 s into the run: the evidence at 11 s of the run is at 7 s on the plan's clock.
        let later = Timeline {
            phase_start_ms: 4000.0,
            ..Timeline::default()
        };
        assert_eq!(faults_at(&later, 11_000.0), "first evidence at 7.0 s, before any fault");
    }

    #[test]
    fn given_a_history_checked_on_its_own_when_a_check_fails_should_not_place_the_evidence_among_faults_it_lacks() {
        let op = |index: u64, time_ns: u64| Event {
            time_ns,
            ..event(index, 0, EventKind::Ok, "read", None, json!(1))
        };
        let mut untimed = inputs((0..4).map(|i| op(i, i)).collect(), Vec::new());
        untimed.results.system = crate::results::CHECKED_HISTORY.into();
        let timeline = Timeline::default();
        assert!(untimed_history(&untimed.history));
        assert_eq!(
            evidence_hint(&untimed.results, &untimed.history, &timeline, 2),
            "the history has no times (each operation's time is its position), so the evidence has no place on a clock"
        );
        let mut timed = inputs((0..4).map(|i| op(i, i * 500_000_000)).collect(), Vec::new());
        timed.results.system = crate::results::CHECKED_HISTORY.into();
        assert!(!untimed_history(&timed.history));
        assert_eq!(
            evidence_hint(&timed.results, &timed.history, &timeline, 1_500_000_000),
            "first evidence at 1.5 s"
        );
        // A run's history keeps the fault context, even before any fault.
        let run = inputs((0..4).map(|i| op(i, i * 500_000_000)).collect(), Vec::new());
        assert_eq!(
            evidence_hint(&run.results, &run.history, &timeline, 1_500_000_000),
            "first evidence at 1.5 s, before any fault"
        );
    }

    /// A history checked on its own (`faultline check --report`) has no plan, no nodes' logs and no wall-clock
    /// anchor: its report says nothing about missing them, and a failing one suggests no shrink (no run to shrink).
    #[test]
    fn given_a_history_checked_on_its_own_when_rendered_should_not_complain_of_what_it_never_had() {
        let op = |index: u64| event(index, index, EventKind::Ok, "read", None, json!(1));
        let mut checked = inputs((0..4).map(op).collect(), Vec::new());
        checked.results.system = crate::results::CHECKED_HISTORY.into();
        checked.results.verdict = Verdict::Invalid;
        checked.plan_yaml = None;
        let page = render(&checked);
        for noise in [
            "plan.yaml is missing",
            "no wall-clock anchor",
            "faultline shrink",
            "Nodes &amp; logs",
        ] {
            assert!(!page.contains(noise), "{noise:?} in a checked history's report");
        }
        // A run's report still says when its plan is missing.
        let mut run = inputs((0..4).map(op).collect(), Vec::new());
        run.plan_yaml = None;
        run.results.verdict = Verdict::Invalid;
        let page = render(&run);
        assert!(page.contains("plan.yaml is missing") && page.contains("faultline shrink"));
        // A run whose set-up failed has no faults to shrink.
        let mut events: Vec<Event> = (0..4).map(op).collect();
        events.push(event(
            4,
            4,
            EventKind::Lifecycle,
            "setup-failed",
            None,
            json!({"reason": "boot"}),
        ));
        let mut set_up = inputs(events, Vec::new());
        set_up.results.verdict = Verdict::Unknown;
        assert!(!render(&set_up).contains("faultline shrink"));
    }

    fn event(index: u64, time_ms: u64, kind: EventKind, f: &str, node: Option<&str>, value: Value) -> Event {
        Event {
            index,
            time_ns: time_ms * 1_000_000,
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

    fn check(name: &str, details: Value) -> CheckResult {
        CheckResult {
            name: name.into(),
            verdict: Verdict::Valid,
            reason: format!("{name} passed"),
            details,
            evidence_ns: None,
            warnings: Vec::new(),
            evidence_nodes: Vec::new(),
            not_checked: false,
        }
    }

    fn inputs(events: Vec<Event>, checks: Vec<CheckResult>) -> RunInputs {
        let history = History {
            events,
            truncated_tail: false,
        };
        let results = Results {
            schema_version: crate::results::SCHEMA_VERSION,
            faultline_version: "test".into(),
            verdict: Verdict::Valid,
            reason: "every check passed".into(),
            plan: "default".into(),
            system: "reference".into(),
            seed: 5,
            started_at: "2026-12-01T00:00:00Z".into(),
            duration_ms: 40_000,
            store_dir: "/tmp/run".into(),
            repro: "faultline run --seed 5".into(),
            counts: Counts::of(&history),
            coverage: Default::default(),
            behaviours: Default::default(),
            checks,
        };
        RunInputs {
            run_dir: "/tmp/run".into(),
            plan_yaml: None,
            history,
            results,
            logs: BTreeMap::new(),
        }
    }

    /// A kill of n2 with the events around it: the old kinds only.
    fn old_events() -> Vec<Event> {
        vec![
            event(0, 0, EventKind::Meta, "run-start", None, json!({"seed": 5})),
            event(
                1,
                1_000,
                EventKind::Lifecycle,
                "boot-ok",
                Some("n2"),
                json!({"boot_ms": 30}),
            ),
            event(
                2,
                31_200,
                EventKind::Nemesis,
                "kill",
                Some("n2"),
                json!({"fault_id": 1}),
            ),
            event(
                3,
                33_000,
                EventKind::Nemesis,
                "start",
                Some("n2"),
                json!({"fault_id": 1}),
            ),
            event(4, 40_000, EventKind::Meta, "run-end", None, Value::Null),
        ]
    }

    /// The same run with n2's observations around the kill, indexes and times kept in order.
    fn observed_events() -> Vec<Event> {
        let status = |durable: u64, role: &str| {
            json!({"role": role, "primary": "n1", "view": 3, "durable": durable,
                   "progress": {"op": durable + 3, "commit": durable}})
        };
        let observed = vec![
            event(0, 0, EventKind::Meta, "run-start", None, json!({"seed": 5})),
            event(
                0,
                1_000,
                EventKind::Lifecycle,
                "boot-ok",
                Some("n2"),
                json!({"boot_ms": 30}),
            ),
            event(
                0,
                2_000,
                EventKind::Observation,
                "status",
                Some("n2"),
                status(10, "backup"),
            ),
            event(
                0,
                3_000,
                EventKind::Observation,
                "status",
                Some("n2"),
                status(300, "backup"),
            ),
            event(
                0,
                4_000,
                EventKind::Observation,
                "status",
                Some("n2"),
                status(300, "backup"),
            ),
            event(
                0,
                20_000,
                EventKind::Observation,
                "status",
                Some("n2"),
                status(717, "primary"),
            ),
            event(
                0,
                31_200,
                EventKind::Observation,
                "last-durable",
                Some("n2"),
                json!({"durable": 717, "age_ms": 40, "cause": "kill"}),
            ),
            event(
                0,
                31_200,
                EventKind::Nemesis,
                "kill",
                Some("n2"),
                json!({"fault_id": 1}),
            ),
            event(
                0,
                33_000,
                EventKind::Nemesis,
                "start",
                Some("n2"),
                json!({"fault_id": 1}),
            ),
            event(
                0,
                33_000,
                EventKind::Observation,
                "recovered",
                Some("n2"),
                json!({"recovered": 519, "line": "booted at op 519"}),
            ),
            event(0, 40_000, EventKind::Meta, "run-end", None, Value::Null),
        ];
        observed
            .into_iter()
            .enumerate()
            .map(|(i, e)| Event { index: i as u64, ..e })
            .collect()
    }

    fn data_of(page: &str) -> Value {
        let open = "<script type=\"application/json\" id=\"report-data\">";
        let start = page.find(open).expect("the page embeds its data") + open.len();
        let end = start + page[start..].find("</script>").expect("the data script ends");
        serde_json::from_str(&page[start..end]).expect("the embedded data is JSON")
    }

    #[test]
    fn given_status_last_durable_and_recovered_events_when_rendered_should_embed_the_lanes_and_the_drop() {
        assert!(observed_events().iter().any(|e| e.is(Observation::LastDurable)));
        let durability = check(
            "durability",
            super::super::durability::details_with_a_forgotten_restart(),
        );
        let data = data_of(&render(&inputs(observed_events(), vec![durability])));
        let lanes = data["obs"]["nodes"].as_array().expect("observation lanes");
        let n2 = lanes.iter().find(|l| l["node"] == "n2").expect("a lane for n2");
        assert_eq!(
            n2["durable"],
            json!([
                [2000.0, 10],
                [3000.0, 300],
                [20000.0, 717],
                [31200.0, 717],
                [31200.0, null],
                [33000.0, 519]
            ]),
            "a point where durable changed, a break at the stop, the recovered value after it"
        );
        assert_eq!(
            n2["roles"],
            json!([
                [2000.0, "backup", 3, "n1"],
                [20000.0, "primary", 3, "n1"],
                [31200.0, null, null, null]
            ])
        );
        let points: Vec<_> = n2["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["f"].clone(), p["d"].clone()))
            .collect();
        assert_eq!(
            points,
            [(json!("last-durable"), json!(717)), (json!("recovered"), json!(519))]
        );
        let drops = data["obs"]["drops"].as_array().unwrap();
        assert_eq!(drops.len(), 1, "only the forgotten restart is a drop: {drops:?}");
        let drop = &drops[0];
        assert_eq!(
            (
                &drop["node"],
                &drop["t0"],
                &drop["t1"],
                &drop["from"],
                &drop["to"],
                &drop["sev"],
                &drop["label"]
            ),
            (
                &json!("n2"),
                &json!(31200.0),
                &json!(33000.0),
                &json!(717),
                &json!(519),
                &json!("bad"),
                &json!("n2 forgot 198")
            )
        );
        assert!(
            !lanes.iter().any(|l| l["node"] == "n1"),
            "a restart judged ok draws no drop, and without observations its node gets no lane: {lanes:?}"
        );
    }

    #[test]
    fn given_an_old_history_without_observations_when_rendered_should_embed_no_lanes_and_no_legend() {
        let page = render(&inputs(old_events(), vec![check("history", json!({"events": 5}))]));
        let data = data_of(&page);
        assert!(data.get("obs").is_none(), "no observation data: {}", data["obs"]);
        let keys: Vec<&String> = data.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "end_ms",
                "errors",
                "faults",
                "fs",
                "keys",
                "lanes",
                "markers",
                "node_rows",
                "nodes",
                "ops",
                "phase_start_ms",
                "v"
            ],
            "the data is what it was before observations existed (and the phase clock's zero)"
        );
        assert!(
            !page.contains("one observation lane per node") && !page.contains("</i>durable progress"),
            "no observation legend or hint"
        );
        assert!(!page.contains("class=\"warnings\""), "no warnings");
        assert_eq!(data["faults"][0]["label"], "kill n2");
    }

    #[test]
    fn given_a_valid_run_with_a_warning_when_the_banner_is_drawn_should_name_the_check_and_the_warning() {
        let warning = "n2 booted after interior damage to member/wal/0.wal and forgot 356 applied entries (471 → 115)";
        let html = warning_banner(Verdict::Valid, &[("durability", warning.to_string())]).into_string();
        assert!(html.contains("VALID, with 1 warning:"), "{html}");
        assert!(
            html.contains("<a href=\"#check-durability\">durability</a>: n2 booted after interior damage"),
            "{html}"
        );
        let two = warning_banner(Verdict::Valid, &[("a", "x".into()), ("b", "y".into())]).into_string();
        assert!(two.contains("VALID, with 2 warnings:"), "{two}");
        assert!(warning_banner(Verdict::Invalid, &[("a", "x".into())])
            .into_string()
            .is_empty());
        assert!(warning_banner(Verdict::Valid, &[]).into_string().is_empty());
    }

    #[test]
    fn given_hostile_warnings_and_texts_when_rendered_should_escape_them() {
        let html = warning_banner(Verdict::Valid, &[(HOSTILE, HOSTILE.to_string())]).into_string();
        assert!(!html.contains("<img") && !html.contains("</script>"), "{html}");
        assert!(
            html.contains("&lt;/script&gt;&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;"),
            "{html}"
        );
        let list = checks::warning_list(&[HOSTILE.to_string()]).into_string();
        assert!(!list.contains("<img") && list.contains("&lt;img"), "{list}");
        // A hostile drop text reaches the page only inside the escaped JSON and the escaped table.
        let mut details = super::super::durability::details_with_a_forgotten_restart();
        details["nodes"]["n2"]["restarts"][0]["text"] = json!(HOSTILE);
        let page = render(&inputs(observed_events(), vec![check("durability", details)]));
        assert!(!page.contains("<img src=x"), "the hostile text is escaped everywhere");
        assert_eq!(
            data_of(&page)["obs"]["drops"][0]["text"],
            HOSTILE,
            "and read back intact"
        );
    }

    #[test]
    fn given_a_check_result_with_warnings_in_its_json_when_read_should_find_them() {
        let with = json!({"name": "durability", "verdict": "valid", "reason": "r", "details": null,
                          "warnings": ["n2 booted on damage"]});
        let check: CheckResult = serde_json::from_value(with).expect("a check with warnings parses");
        assert_eq!(checks::warnings(&check), vec!["n2 booted on damage".to_string()]);
        let page = render(&inputs(vec![], vec![check]));
        assert!(page.contains("VALID, with 1 warning:"), "the banner names it");
        assert!(checks::warnings(&super::tests::check("boot", Value::Null)).is_empty());
    }

    #[test]
    fn given_results_without_coverage_when_rendered_should_show_the_coverage_computed_from_the_history() {
        let page = render(&inputs(old_events(), vec![]));
        assert!(
            page.contains("<section class=\"card\" id=\"coverage\"><h2>Coverage</h2>"),
            "no coverage section"
        );
        assert!(page.contains("<code>primary-killed-while-backup-lagged</code>"));
        assert!(page.contains("predates coverage"));
        assert!(page.contains("href=\"#coverage\""));
    }
}
