//! The checks table: one row per check with its verdict, its one-sentence reason and its evidence drawn for a person
//! (linearizability per key, set elements lost or stale with their times, boot per node with the refusal line,
//! recovery times, convergence, log pattern hits, durability restarts per node).

use super::escape::Shown;
use crate::results::{CheckResult, Results, Verdict};
use faultline_workloads::{LinearizabilityResult, SetCheckResult};
use maud::{html, Markup};
use serde_json::Value;

/// Keys listed in the linearizability row (invalid and unknown keys first, then the largest).
const KEYS_SHOWN: usize = 12;
/// Set anomalies listed.
const SET_ANOMALIES_SHOWN: usize = 30;
/// Log pattern hits listed.
const HITS_SHOWN: usize = 20;
/// Raw details shown for checks without a dedicated view are cut to this many bytes.
const RAW_DETAILS_MAX_BYTES: usize = 20_000;

/// A verdict's pill, the same on every page.
pub fn pill(verdict: Verdict) -> Markup {
    crate::pages::pill(&verdict.to_string(), crate::results::shout(verdict))
}

/// A check's outcome as a class: its verdict, or `not-checked` for a check that had nothing to judge.
pub fn status_class(check: &CheckResult) -> String {
    check.status().replace(' ', "-")
}

/// A check's pill: its verdict, or a grey NOT CHECKED for a check that had nothing to judge.
pub fn check_pill(check: &CheckResult) -> Markup {
    crate::pages::pill(&status_class(check), &check.status().to_uppercase())
}

/// A check's named warnings: things whose verdict may still be valid but that a person should know (a node that booted
/// on damage its system truncates, for example).
pub fn warnings(check: &CheckResult) -> Vec<String> {
    check.warnings.clone()
}

/// Renders the checks table. Times are shown on the phase clock that starts at `phase_start_ms` (see [`super::timeline::shown`]).
pub fn render(results: &Results, phase_start_ms: f64) -> Markup {
    html! {
        table class="checks" {
            thead { tr { th { "check" } th { "verdict" } th { "what it found" } } }
            tbody {
                @for check in &results.checks {
                    tr id={ "check-" (Shown(&check.name)) } class=(status_class(check)) {
                        td class="name" { (Shown(&check.name)) }
                        td { (check_pill(check)) }
                        td {
                            div class="reason" { (Shown(&check.reason)) }
                            (warning_list(&warnings(check)))
                            (details(check, phase_start_ms))
                        }
                    }
                }
            }
        }
    }
}

/// A check's warnings, one line each; nothing when it has none.
pub fn warning_list(warnings: &[String]) -> Markup {
    html! {
        @if !warnings.is_empty() {
            ul class="warnings" {
                @for warning in warnings { li { span class="tag warn" { "warning" } " " (Shown(warning)) } }
            }
        }
    }
}

fn details(check: &CheckResult, phase_start_ms: f64) -> Markup {
    let d = &check.details;
    match check.name.as_str() {
        "linearizability" => match serde_json::from_value::<LinearizabilityResult>(d.clone()) {
            Ok(result) => linearizability(&result),
            Err(_) => raw(d),
        },
        "set" => match serde_json::from_value::<SetCheckResult>(d.clone()) {
            Ok(result) if !result.anomalies.is_empty() => {
                html! { (super::workload_checks::set_latencies(&result.stats)) (set_anomalies(&result, phase_start_ms)) }
            }
            Ok(result) => super::workload_checks::set_latencies(&result.stats),
            _ => raw(d),
        },
        "bank" => match serde_json::from_value(d.clone()) {
            Ok(result) => super::workload_checks::bank(&result),
            Err(_) => raw(d),
        },
        "long-fork" => match serde_json::from_value(d.clone()) {
            Ok(result) => super::workload_checks::long_fork(&result),
            Err(_) => raw(d),
        },
        "counter" => match serde_json::from_value(d.clone()) {
            Ok(result) => super::workload_checks::counter(&result),
            Err(_) => raw(d),
        },
        "txn" => match serde_json::from_value::<faultline_workloads::txn_check::TxnCheckResult>(d.clone()) {
            Ok(result) => super::txn::check_details(&result),
            Err(_) => raw(d),
        },
        "boot" if d.is_object() => boot(d),
        "durability" if d["nodes"].is_object() => super::durability::render(d, phase_start_ms),
        "liveness" => liveness(d),
        "workload-health" if d.is_object() => workload_health(d),
        "convergence" => convergence(d),
        "log-patterns" if d.is_array() => log_patterns(d),
        "history" => html! {
            div class="detail" {
                (d["events"]) " events"
                @if d["truncated_tail"].as_bool() == Some(true) {
                    "; the last line was torn (the run crashed while writing it)"
                }
            }
        },
        _ => raw(d),
    }
}

fn linearizability(result: &LinearizabilityResult) -> Markup {
    let mut keys: Vec<_> = result.keys.iter().collect();
    let rank = |v: Verdict| match v {
        Verdict::Invalid => 0,
        Verdict::Unknown => 1,
        Verdict::Valid => 2,
    };
    keys.sort_by_key(|k| (rank(k.verdict), std::cmp::Reverse(k.ops)));
    // Every failing or unknown key is listed; passing keys fill the table up to `KEYS_SHOWN`.
    let shown = keys
        .iter()
        .filter(|k| k.verdict != Verdict::Valid)
        .count()
        .max(KEYS_SHOWN);
    let rest = keys.get(shown..).unwrap_or_default();
    let views = super::linearizability::view_ids(result);
    html! {
        div class="detail" {
            (result.model) " model · " (result.ops) " ops on " (result.keys.len()) " keys · searched in "
            (result.elapsed_ms) " ms"
            @match result.explanations().len() {
                0 => {}
                1 => { " · " a href="#lin-view" { "see the failing key below" } }
                n => { " · " a href="#lin-view" { "see the " (n) " failing keys below" } }
            }
        }
        @if !keys.is_empty() {
            // A passing check folds its key table away; a failing one shows it.
            details open[result.verdict != Verdict::Valid] {
                summary { "per key" }
                table class="inner" {
                    thead { tr { th { "key" } th { "verdict" } th { "ops" } th { "search" } } }
                    tbody {
                        @for key in keys.iter().take(shown) {
                            tr {
                                td { code { (Shown(&key.key)) } }
                                td {
                                    (pill(key.verdict)) @if let Some(s) = key.stopped { " (stopped: " (format!("{s:?}")) ")" }
                                    @if let Some(id) = views.get(key.key.as_str()) { " · " a href={ "#" (id) } { "why" } }
                                }
                                td { (key.ops) }
                                td { (key.elapsed_ms) " ms, " (key.cache_entries) " states" }
                            }
                        }
                        @if !rest.is_empty() {
                            tr class="elided" {
                                td colspan="4" {
                                    "… and " (rest.len()) " more keys ("
                                    (rest.iter().filter(|k| k.verdict == Verdict::Valid).count()) " valid)"
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn boot(details: &Value) -> Markup {
    html! {
        table class="inner" {
            thead { tr { th { "node" } th { "boots" } th { "refusals (line from its log)" } th { "problems" } } }
            tbody {
                @for (node, entry) in details.as_object().into_iter().flatten() {
                    tr {
                        td { a href={ "#node-" (Shown(node)) } { (Shown(node)) } }
                        td { (entry["boots"]) }
                        td { (refusals(entry)) }
                        td { (problems(entry)) }
                    }
                }
            }
        }
    }
}

fn refusals(entry: &Value) -> Markup {
    let refusals = entry["refusals"].as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        @if refusals.is_empty() { "none" }
        @for refusal in refusals {
            @let legit = refusal["legitimate"].as_bool() == Some(true);
            div class={ "refusal " (if legit { "legit" } else { "bad" }) } {
                a href={ "#ev-" (refusal["index"]) } { (Shown(refusal["event"].as_str().unwrap_or("refused"))) }
                " "
                code class="logline" { (Shown(refusal["line"].as_str().unwrap_or(""))) }
                " "
                @if legit {
                    span class="tag ok" { "after recorded disk surgery: expected" }
                } @else {
                    span class="tag bad" { "nothing corrupted this disk" }
                }
            }
        }
    }
}

fn problems(entry: &Value) -> Markup {
    let problems = entry["problems"].as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        @if problems.is_empty() { "none" }
        @for (i, problem) in problems.iter().enumerate() {
            @if i > 0 { br; }
            (Shown(problem.as_str().unwrap_or("")))
        }
    }
}

fn liveness(details: &Value) -> Markup {
    let recovered = details["recovered"].as_array().map(Vec::as_slice).unwrap_or_default();
    let timeout = details.get("timeout");
    if recovered.is_empty() && timeout.is_none() {
        return html! {};
    }
    html! {
        div class="detail" {
            "recovery time: "
            @for (i, r) in recovered.iter().enumerate() {
                @if i > 0 { " · " }
                "after " (Shown(r["after"].as_str().unwrap_or("?"))) ": " b { (r["recovery_ms"]) " ms" }
                " (" (r["attempts"]) " attempt(s))"
            }
            @if let Some(timeout) = timeout {
                @if !recovered.is_empty() { " · " }
                span class="bad" {
                    "after " (Shown(timeout["after"].as_str().unwrap_or("?"))) ": no write accepted within "
                    (timeout["timeout_ms"]) " ms (" (timeout["attempts"]) " attempts)"
                }
            }
        }
    }
}

/// What the workload did outside fault windows: per kind of operation, and the errors that ended the others.
fn workload_health(details: &Value) -> Markup {
    let by_f = details["by_f"].as_object();
    let errors = details["top_errors"].as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        div class="detail" {
            (details["ok"]) " of " (details["ops"]) " operations " (Shown(details["scope"].as_str().unwrap_or("")))
            " succeeded"
            @if let Some(by_f) = by_f {
                " · "
                @for (i, (f, counts)) in by_f.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (Shown(f)) } " " (counts["ok"]) "/" (counts["ops"])
                }
            }
        }
        @if !errors.is_empty() {
            table class="inner" {
                thead { tr { th { "error" } th { "operations" } } }
                tbody {
                    @for error in errors {
                        tr { td { code { (Shown(error["error"].as_str().unwrap_or(""))) } } td { (error["count"]) } }
                    }
                }
            }
        }
    }
}

fn convergence(details: &Value) -> Markup {
    if let Some(points) = details.get("commit_points").and_then(Value::as_object) {
        return html! {
            table class="inner" {
                thead { tr { th { "node" } th { "commit point" } } }
                tbody {
                    @for (node, p) in points {
                        tr { td { (Shown(node)) } td { code { (Shown(&p.to_string())) } } }
                    }
                }
            }
        };
    }
    let converged = details.as_array().map(Vec::as_slice).unwrap_or_default();
    if converged.is_empty() {
        return html! {};
    }
    html! {
        div class="detail" {
            @for (i, c) in converged.iter().enumerate() {
                @if i > 0 { br; }
                (c["converge_ms"]) " ms at " code { (Shown(c["commit_point"].as_str().unwrap_or(""))) }
            }
        }
    }
}

fn log_patterns(details: &Value) -> Markup {
    let hits = details.as_array().map(Vec::as_slice).unwrap_or_default();
    html! {
        table class="inner" {
            thead { tr { th { "node" } th { "line" } th { "pattern" } th { "text" } } }
            tbody {
                @for hit in hits.iter().take(HITS_SHOWN) {
                    @let node = Shown(hit["node"].as_str().unwrap_or("?"));
                    tr {
                        td { a href={ "#node-" (node) } { (node) } }
                        td { (hit["line_number"]) }
                        td { code { (Shown(hit["pattern"].as_str().unwrap_or(""))) } }
                        td { code class="logline" { (Shown(hit["line"].as_str().unwrap_or(""))) } }
                    }
                }
                @if hits.len() > HITS_SHOWN {
                    tr class="elided" { td colspan="4" { "… and " (hits.len() - HITS_SHOWN) " more" } }
                }
            }
        }
    }
}

/// Each lost, stale or unexpected element with when it was acknowledged, last seen and first missed (on the phase
/// clock, as the timeline shows it), so a person can line it up with the fault timeline.
fn set_anomalies(result: &SetCheckResult, phase_start_ms: f64) -> Markup {
    let secs = |ns: Option<u64>| {
        ns.map_or("–".to_string(), |ns| {
            super::timeline::shown(super::timeline::ms(ns), phase_start_ms)
        })
    };
    html! {
        table class="inner" {
            thead {
                tr {
                    th { "element" } th { "kind" } th { "add" } th { "acknowledged" } th { "last seen" }
                    th { "first missed (read invoked, node)" } th { "reads that missed it" }
                }
            }
            tbody {
                @for a in result.anomalies.iter().take(SET_ANOMALIES_SHOWN) {
                    tr {
                        td { code { (Shown(&a.element)) } }
                        td { (Shown(&a.kind)) }
                        td { (Shown(&a.add_outcome)) }
                        td { (secs(a.acked_ns)) }
                        td { (secs(a.last_seen_ns)) }
                        td { (secs(a.first_missing_ns)) " " (Shown(a.first_missing_node.as_deref().unwrap_or(""))) }
                        td { (a.missing_reads) }
                    }
                }
                @if result.anomalies.len() > SET_ANOMALIES_SHOWN {
                    tr class="elided" {
                        td colspan="7" {
                            "… and " (result.anomalies.len() - SET_ANOMALIES_SHOWN) " more (see results.json)"
                        }
                    }
                }
            }
        }
    }
}

fn raw(details: &Value) -> Markup {
    if details.is_null() {
        return html! {};
    }
    let mut text = serde_json::to_string_pretty(details).unwrap_or_default();
    if text.len() > RAW_DETAILS_MAX_BYTES {
        let mut cut = RAW_DETAILS_MAX_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (cut; see results.json)");
    }
    html! { details { summary { "details" } pre { (Shown(&text)) } } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::{KeySummary, ModelKind};

    fn key(name: &str, verdict: Verdict) -> KeySummary {
        KeySummary {
            key: name.to_string(),
            ops: 10,
            verdict,
            stopped: None,
            elapsed_ms: 0,
            cache_entries: 0,
            explanation: None,
        }
    }

    fn result(bad: usize, good: usize) -> LinearizabilityResult {
        let mut keys: Vec<KeySummary> = (0..good).map(|i| key(&format!("ok{i}"), Verdict::Valid)).collect();
        keys.extend((0..bad).map(|i| key(&format!("bad{i}"), Verdict::Invalid)));
        LinearizabilityResult {
            verdict: Verdict::Invalid,
            reason: format!("{bad} keys are not linearizable"),
            model: ModelKind::CasRegister,
            ops: 10 * (bad + good) as u64,
            elapsed_ms: 1,
            keys,
            explanation: None,
        }
    }

    #[test]
    fn given_explained_failing_keys_when_rendered_should_link_each_row_to_its_view() {
        let mut result = result(3, 2);
        let explained = |key: &str| faultline_workloads::Explanation {
            key: key.to_string(),
            op: faultline_workloads::OpSummary {
                process: Some(1),
                invoke_index: 0,
                complete_index: Some(1),
                completion: "ok".into(),
                description: "read() -> nil".into(),
            },
            op_legal_in_state: false,
            linearized_count: 0,
            linearized_tail: Vec::new(),
            state: "missing".into(),
            concurrent: Vec::new(),
            concurrent_count: 0,
            lines: Vec::new(),
        };
        // Keys: ok0, ok1, bad0, bad1, bad2; the first two failing keys are explained.
        for place in [2, 3] {
            result.keys[place].explanation = Some(explained(&result.keys[place].key.clone()));
        }
        result.explanation = result.keys[2].explanation.clone();
        let html = linearizability(&result).into_string();
        assert!(html.contains("see the 2 failing keys below"), "{html}");
        assert!(
            html.contains("<a href=\"#lin-view\">why</a>"),
            "the first key's view: {html}"
        );
        assert!(html.contains("<a href=\"#lin-key-3\">why</a>"), "the second's: {html}");
        assert_eq!(
            html.matches(">why</a>").count(),
            2,
            "an unexplained key has no link: {html}"
        );
    }

    #[test]
    fn given_more_failing_keys_than_the_table_shows_when_rendered_should_list_every_failing_key() {
        let html = linearizability(&result(20, 30)).into_string();
        for i in 0..20 {
            assert!(html.contains(&format!("<code>bad{i}</code>")), "bad{i} is listed");
        }
        assert!(!html.contains("<code>ok"), "passing keys fold away");
        assert!(html.contains("… and 30 more keys (30 valid)"), "{html}");
    }

    #[test]
    fn given_a_few_failing_keys_when_rendered_should_list_them_first_then_passing_keys_up_to_the_limit() {
        let html = linearizability(&result(3, 30)).into_string();
        let last_bad = html.rfind("<code>bad").unwrap();
        assert!(last_bad < html.find("<code>ok").unwrap(), "failing keys come first");
        assert_eq!(html.matches("<code>ok").count(), KEYS_SHOWN - 3);
        assert!(html.contains("… and 21 more keys (21 valid)"), "{html}");
    }
}
