//! The checks table: one row per check with its verdict, its one-sentence reason and its evidence drawn for a person
//! (linearizability per key, set elements lost or stale with their times, boot per node with the refusal line,
//! recovery times, convergence, log pattern hits).

use super::escape::html;
use crate::results::{CheckResult, Results, Verdict};
use faultline_workloads::{LinearizabilityResult, SetCheckResult};
use serde_json::Value;
use std::fmt::Write;

/// Keys listed in the linearizability row (invalid and unknown keys first, then the largest).
const KEYS_SHOWN: usize = 12;
/// Set anomalies listed.
const SET_ANOMALIES_SHOWN: usize = 30;
/// Log pattern hits listed.
const HITS_SHOWN: usize = 20;
/// Raw details shown for checks without a dedicated view are cut to this many bytes.
const RAW_DETAILS_MAX_BYTES: usize = 20_000;

/// CSS class and label of a verdict.
pub fn pill(verdict: Verdict) -> String {
    format!(
        "<span class=\"pill {verdict}\">{}</span>",
        crate::results::shout(verdict)
    )
}

/// Renders the checks table.
pub fn render(results: &Results) -> String {
    let mut out = String::from(
        "<table class=\"checks\"><thead><tr><th>check</th><th>verdict</th><th>what it found</th></tr></thead><tbody>",
    );
    for check in &results.checks {
        let _ = write!(
            out,
            "<tr id=\"check-{}\" class=\"{}\"><td class=\"name\">{}</td><td>{}</td><td><div class=\"reason\">{}</div>{}</td></tr>",
            html(&check.name),
            check.verdict,
            html(&check.name),
            pill(check.verdict),
            html(&check.reason),
            details(check)
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn details(check: &CheckResult) -> String {
    let d = &check.details;
    match check.name.as_str() {
        "linearizability" => match serde_json::from_value::<LinearizabilityResult>(d.clone()) {
            Ok(result) => linearizability(&result),
            Err(_) => raw(d),
        },
        "set" => match serde_json::from_value::<SetCheckResult>(d.clone()) {
            Ok(result) if !result.anomalies.is_empty() => set_anomalies(&result),
            _ => raw(d),
        },
        "boot" if d.is_object() => boot(d),
        "liveness" => liveness(d),
        "convergence" => convergence(d),
        "log-patterns" if d.is_array() => log_patterns(d),
        "history" => format!(
            "<div class=\"detail\">{} events{}</div>",
            d["events"],
            if d["truncated_tail"].as_bool() == Some(true) {
                "; the last line was torn (the run crashed while writing it)"
            } else {
                ""
            }
        ),
        _ => raw(d),
    }
}

fn linearizability(result: &LinearizabilityResult) -> String {
    let mut out = format!(
        "<div class=\"detail\">{} model · {} ops on {} keys · searched in {} ms",
        result.model,
        result.ops,
        result.keys.len(),
        result.elapsed_ms
    );
    if result.explanation.is_some() {
        out.push_str(" · <a href=\"#lin-view\">see the failing key below</a>");
    }
    out.push_str("</div>");
    let mut keys: Vec<_> = result.keys.iter().collect();
    let rank = |v: Verdict| match v {
        Verdict::Invalid => 0,
        Verdict::Unknown => 1,
        Verdict::Valid => 2,
    };
    keys.sort_by_key(|k| (rank(k.verdict), std::cmp::Reverse(k.ops)));
    if keys.is_empty() {
        return out;
    }
    // A passing check folds its key table away; a failing one shows it.
    let open = if result.verdict == Verdict::Valid { "" } else { " open" };
    let _ = write!(
        out,
        "<details{open}><summary>per key</summary><table class=\"inner\"><thead><tr><th>key</th><th>verdict</th>\
         <th>ops</th><th>search</th></tr></thead><tbody>"
    );
    // Every failing or unknown key is listed; passing keys fill the table up to `KEYS_SHOWN`.
    let shown = keys
        .iter()
        .filter(|k| k.verdict != Verdict::Valid)
        .count()
        .max(KEYS_SHOWN);
    for key in keys.iter().take(shown) {
        let stopped = key.stopped.map(|s| format!(" (stopped: {s:?})")).unwrap_or_default();
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}{}</td><td>{}</td><td>{} ms, {} states</td></tr>",
            html(&key.key),
            pill(key.verdict),
            html(&stopped),
            key.ops,
            key.elapsed_ms,
            key.cache_entries
        );
    }
    if keys.len() > shown {
        let rest = &keys[shown..];
        let valid = rest.iter().filter(|k| k.verdict == Verdict::Valid).count();
        let _ = write!(
            out,
            "<tr class=\"elided\"><td colspan=\"4\">… and {} more keys ({valid} valid)</td></tr>",
            rest.len()
        );
    }
    out.push_str("</tbody></table></details>");
    out
}

fn boot(details: &Value) -> String {
    let mut out = String::from(
        "<table class=\"inner\"><thead><tr><th>node</th><th>boots</th><th>refusals (line from its log)</th>\
         <th>problems</th></tr></thead><tbody>",
    );
    for (node, entry) in details.as_object().into_iter().flatten() {
        let mut refusals = String::new();
        for refusal in entry["refusals"].as_array().into_iter().flatten() {
            let legit = refusal["legitimate"].as_bool() == Some(true);
            let _ = write!(
                refusals,
                "<div class=\"refusal {}\"><a href=\"#ev-{}\">{}</a> <code class=\"logline\">{}</code> {}</div>",
                if legit { "legit" } else { "bad" },
                refusal["index"],
                html(refusal["event"].as_str().unwrap_or("refused")),
                html(refusal["line"].as_str().unwrap_or("")),
                if legit {
                    "<span class=\"tag ok\">after recorded disk surgery: expected</span>"
                } else {
                    "<span class=\"tag bad\">nothing corrupted this disk</span>"
                }
            );
        }
        let problems: Vec<String> = entry["problems"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| html(p.as_str().unwrap_or("")))
            .collect();
        let _ = write!(
            out,
            "<tr><td><a href=\"#node-{0}\">{0}</a></td><td>{1}</td><td>{2}</td><td>{3}</td></tr>",
            html(node),
            entry["boots"],
            if refusals.is_empty() {
                "none".to_string()
            } else {
                refusals
            },
            if problems.is_empty() {
                "none".to_string()
            } else {
                problems.join("<br>")
            }
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn liveness(details: &Value) -> String {
    let mut parts: Vec<String> = details["recovered"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "after {}: <b>{} ms</b> ({} attempt(s))",
                html(r["after"].as_str().unwrap_or("?")),
                r["recovery_ms"],
                r["attempts"]
            )
        })
        .collect();
    if let Some(timeout) = details.get("timeout") {
        parts.push(format!(
            "<span class=\"bad\">after {}: no write accepted within {} ms ({} attempts)</span>",
            html(timeout["after"].as_str().unwrap_or("?")),
            timeout["timeout_ms"],
            timeout["attempts"]
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("<div class=\"detail\">recovery time: {}</div>", parts.join(" · "))
}

fn convergence(details: &Value) -> String {
    if let Some(points) = details.get("commit_points").and_then(Value::as_object) {
        let rows: Vec<String> = points
            .iter()
            .map(|(node, p)| {
                format!(
                    "<tr><td>{}</td><td><code>{}</code></td></tr>",
                    html(node),
                    html(&p.to_string())
                )
            })
            .collect();
        return format!(
            "<table class=\"inner\"><thead><tr><th>node</th><th>commit point</th></tr></thead><tbody>{}</tbody></table>",
            rows.join("")
        );
    }
    let parts: Vec<String> = details
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} ms at <code>{}</code>",
                c["converge_ms"],
                html(c["commit_point"].as_str().unwrap_or(""))
            )
        })
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("<div class=\"detail\">{}</div>", parts.join("<br>"))
}

fn log_patterns(details: &Value) -> String {
    let hits = details.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = String::from(
        "<table class=\"inner\"><thead><tr><th>node</th><th>line</th><th>pattern</th><th>text</th></tr></thead><tbody>",
    );
    for hit in hits.iter().take(HITS_SHOWN) {
        let _ = write!(
            out,
            "<tr><td><a href=\"#node-{0}\">{0}</a></td><td>{1}</td><td><code>{2}</code></td><td><code class=\"logline\">{3}</code></td></tr>",
            html(hit["node"].as_str().unwrap_or("?")),
            hit["line_number"],
            html(hit["pattern"].as_str().unwrap_or("")),
            html(hit["line"].as_str().unwrap_or(""))
        );
    }
    if hits.len() > HITS_SHOWN {
        let _ = write!(
            out,
            "<tr class=\"elided\"><td colspan=\"4\">… and {} more</td></tr>",
            hits.len() - HITS_SHOWN
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// Each lost, stale or unexpected element with when it was acknowledged, last seen and first missed (seconds since
/// the run started), so a person can line it up with the fault timeline.
fn set_anomalies(result: &SetCheckResult) -> String {
    let secs = |ns: Option<u64>| ns.map_or("–".to_string(), |ns| format!("{:.3}s", ns as f64 / 1e9));
    let mut out = String::from(
        "<table class=\"inner\"><thead><tr><th>element</th><th>kind</th><th>add</th><th>acknowledged</th>\
         <th>last seen</th><th>first missed (read invoked, node)</th><th>reads that missed it</th></tr></thead><tbody>",
    );
    for a in result.anomalies.iter().take(SET_ANOMALIES_SHOWN) {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td></tr>",
            html(&a.element),
            html(&a.kind),
            html(&a.add_outcome),
            secs(a.acked_ns),
            secs(a.last_seen_ns),
            secs(a.first_missing_ns),
            html(a.first_missing_node.as_deref().unwrap_or("")),
            a.missing_reads
        );
    }
    if result.anomalies.len() > SET_ANOMALIES_SHOWN {
        let _ = write!(
            out,
            "<tr class=\"elided\"><td colspan=\"7\">… and {} more (see results.json)</td></tr>",
            result.anomalies.len() - SET_ANOMALIES_SHOWN
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn raw(details: &Value) -> String {
    if details.is_null() {
        return String::new();
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
    format!(
        "<details><summary>details</summary><pre>{}</pre></details>",
        html(&text)
    )
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
    fn given_more_failing_keys_than_the_table_shows_when_rendered_should_list_every_failing_key() {
        let html = linearizability(&result(20, 30));
        for i in 0..20 {
            assert!(html.contains(&format!("<code>bad{i}</code>")), "bad{i} is listed");
        }
        assert!(!html.contains("<code>ok"), "passing keys fold away");
        assert!(html.contains("… and 30 more keys (30 valid)"), "{html}");
    }

    #[test]
    fn given_a_few_failing_keys_when_rendered_should_list_them_first_then_passing_keys_up_to_the_limit() {
        let html = linearizability(&result(3, 30));
        let last_bad = html.rfind("<code>bad").unwrap();
        assert!(last_bad < html.find("<code>ok").unwrap(), "failing keys come first");
        assert_eq!(html.matches("<code>ok").count(), KEYS_SHOWN - 3);
        assert!(html.contains("… and 21 more keys (21 valid)"), "{html}");
    }
}
