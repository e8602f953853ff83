//! The page skeleton: banner (verdict, reason, facts, repro), what went wrong, checks, charts, the failing key, nodes,
//! fault windows, the plan, and the embedded data the charts are drawn from.

use super::escape::{html, json_for_script};
use super::nodes::{self, NodeInputs};
use super::ops::OpTable;
use super::timeline::{self, ms, Timeline};
use super::{anchor_offset_ns, checks, linearizability, RunInputs};
use crate::results::{Results, Verdict};
use faultline_workloads::history::{EventKind, History, Meta};
use faultline_workloads::LinearizabilityResult;
use serde_json::{json, Value};
use std::fmt::Write;

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
    let end_ms = run_end_ms(history, &table);
    let lin = results
        .checks
        .iter()
        .find(|c| c.name == "linearizability")
        .and_then(|c| serde_json::from_value::<LinearizabilityResult>(c.details.clone()).ok());
    let explanation = lin.as_ref().and_then(|l| l.explanation.as_ref());

    let mut out = String::with_capacity(table.ops.len() * 14 + 200_000);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · {} seed {} · faultline</title><style>{CSS}</style></head><body>",
        crate::results::shout(results.verdict),
        html(&results.plan),
        results.seed
    );
    out.push_str(&banner(results, history, &table, &timeline));
    out.push_str(&toc(explanation.is_some()));
    out.push_str("<main>");
    out.push_str(&problems(results, history));
    let _ = write!(
        out,
        "<section class=\"card\" id=\"checks\"><h2>Checks</h2>{}</section>",
        checks::render(results).into_string()
    );
    out.push_str(&charts());
    if let Some(explanation) = explanation {
        let _ = write!(
            out,
            "<section class=\"card\" id=\"linearizability\"><h2>Linearizability failure</h2>{}</section>",
            linearizability::render(explanation, history, end_ms).into_string()
        );
    }
    let node_inputs = NodeInputs {
        history,
        logs: &inputs.logs,
        anchor_offset_ns: anchor_offset_ns(history),
    };
    let _ = write!(
        out,
        "<section class=\"card\" id=\"nodes\"><h2>Nodes</h2><p class=\"hint\">Lifecycle and fault events per node; \
         before each crash or refusal, the node's last log lines, with their wall-clock times mapped onto run time \
         through the run-start anchor.</p>{}</section>",
        nodes::render(&node_inputs).into_string()
    );
    out.push_str(&fault_table(&timeline));
    out.push_str(&plan_section(inputs));
    let _ = write!(
        out,
        "</main><footer>faultline-reports {} · store folder <code>{}</code> · <span id=\"render-status\" \
         data-status=\"pending\">charts not drawn (JavaScript off?)</span><div id=\"render-errors\" hidden></div>\
         </footer><div id=\"tooltip\"></div>",
        env!("CARGO_PKG_VERSION"),
        html(&inputs.run_dir.display().to_string())
    );
    let data = page_data(&table, &timeline, end_ms);
    let _ = writeln!(
        out,
        "<script type=\"application/json\" id=\"report-data\">{}</script><script>{JS}</script></body></html>",
        json_for_script(&data.to_string())
    );
    out
}

fn run_end_ms(history: &History, table: &OpTable) -> f64 {
    let last_event = history.events.iter().map(|e| e.time_ns).max().unwrap_or(0);
    let last_op = table.ops.iter().filter_map(|op| op.end_ns).max().unwrap_or(0);
    ms(last_event.max(last_op)).max(1.0)
}

fn page_data(table: &OpTable, timeline: &Timeline, end_ms: f64) -> Value {
    let mut node_rows: Vec<String> = timeline
        .faults
        .iter()
        .map(|f| f.node.clone())
        .chain(timeline.markers.iter().filter_map(|m| m.node.clone()))
        .chain(table.nodes.iter().cloned())
        .collect();
    node_rows = nodes::sorted_nodes(&node_rows);
    json!({
        "v": 1,
        "end_ms": end_ms,
        "lanes": table.lanes,
        "fs": table.fs,
        "keys": table.keys,
        "nodes": table.nodes,
        "errors": table.errors,
        "node_rows": node_rows,
        "ops": table.columns(),
        "faults": timeline.faults,
        "markers": timeline.markers,
    })
}

fn banner(results: &Results, history: &History, table: &OpTable, timeline: &Timeline) -> String {
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
    let mut out = format!(
        "<header class=\"banner {v}\"><div class=\"top\"><div class=\"verdict\">{}</div><div class=\"reason\">{}</div>\
         </div><dl>",
        crate::results::shout(results.verdict),
        html(&results.reason),
        v = results.verdict
    );
    let facts = [
        ("plan", html(&results.plan)),
        ("system", html(&results.system)),
        ("seed", results.seed.to_string()),
        ("started", html(&results.started_at)),
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
    for (name, value) in facts {
        let _ = write!(out, "<div><dt>{name}</dt><dd>{value}</dd></div>");
    }
    let _ = write!(
        out,
        "</dl><div class=\"repro\"><span>repro</span><code id=\"repro\">{}</code><button id=\"copy-repro\" \
         type=\"button\">copy</button></div>",
        html(&results.repro)
    );
    let hash = |k: &str| meta[k].as_str().map(html).unwrap_or_else(|| "?".to_string());
    if !meta.is_null() {
        let _ = write!(
            out,
            "<div class=\"hashes\">faultline {} (xxh3 {}) · node binary <code>{}</code> (xxh3 {}) · plan digest {}</div>",
            hash("faultline_version"),
            hash("faultline_binary_xxh3"),
            hash("node_binary"),
            hash("node_binary_xxh3"),
            hash("plan_digest")
        );
    }
    out.push_str("</header>");
    out
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

fn toc(has_lin: bool) -> String {
    let mut links = vec![
        ("checks", "Checks"),
        ("timeline", "Timeline"),
        ("latency", "Latency & throughput"),
    ];
    if has_lin {
        links.push(("linearizability", "Failing key"));
    }
    links.extend([("nodes", "Nodes & logs"), ("faults", "Fault windows"), ("plan", "Plan")]);
    let items: Vec<String> = links
        .iter()
        .map(|(id, name)| format!("<a href=\"#{id}\">{name}</a>"))
        .collect();
    format!("<nav class=\"toc\">{}</nav>", items.join(""))
}

/// The list at the top: each failing or inconclusive check in one line, linked to its evidence.
fn problems(results: &Results, history: &History) -> String {
    if results.verdict == Verdict::Valid {
        return String::new();
    }
    let mut items = Vec::new();
    for check in results.checks.iter().filter(|c| c.verdict != Verdict::Valid) {
        let link = match check.name.as_str() {
            "linearizability" if check.details.get("explanation").is_some() => "#linearizability".to_string(),
            "boot" => first_bad_event(history).map_or("#check-boot".to_string(), |i| format!("#ev-{i}")),
            name => format!("#check-{}", html(name)),
        };
        items.push(format!(
            "<li>{} <b>{}</b>: {} <a href=\"{link}\">evidence</a></li>",
            checks::pill(check.verdict).into_string(),
            html(&check.name),
            html(&check.reason)
        ));
    }
    if history.truncated_tail {
        items.push("<li>The history's last line was torn: the harness died while writing it.</li>".to_string());
    }
    format!(
        "<section class=\"card problems {}\"><h2>What went wrong</h2><ul>{}</ul></section>",
        results.verdict,
        items.join("")
    )
}

fn first_bad_event(history: &History) -> Option<u64> {
    history
        .events
        .iter()
        .find(|e| e.kind == EventKind::Lifecycle && timeline::severity(e) == "bad" && e.node.is_some())
        .map(|e| e.index)
}

fn charts() -> String {
    let legend = "<div class=\"legend\"><span><i style=\"background:#3b82f6\"></i>ok</span>\
         <span><i style=\"background:#f472b6\"></i>fail (did not happen)</span>\
         <span><i style=\"background:#f59e0b\"></i>info (unknown)</span>\
         <span><i style=\"background:#9ca3af\"></i>never completed</span>\
         <span><i style=\"background:#dc2626\"></i>kill</span><span><i style=\"background:#7c3aed\"></i>pause</span>\
         <span><i style=\"background:#7f1d1d\"></i>crash / refused to boot</span>\
         <span><i style=\"background:#64748b\"></i>restart-all</span>\
         <span>▼ problem event · ◆ disk surgery · ▏ lifecycle event</span></div>";
    format!(
        "<section class=\"card\" id=\"timeline\"><h2>Timeline</h2><div class=\"toolbar\"><button id=\"zoom-in\" \
         type=\"button\">+</button><button id=\"zoom-out\" type=\"button\">−</button><button id=\"zoom-reset\" \
         type=\"button\">whole run</button><span class=\"range\" id=\"view-range\"></span><span class=\"hint\">wheel: \
         zoom · drag: pan · double-click: whole run · hover: details · click a node event: its log</span></div>\
         <div class=\"chart\"><canvas id=\"timeline-canvas\"></canvas></div>{legend}<p class=\"hint\">Top rows: \
         one per node, with its fault windows and lifecycle events; below, one lane per worker (a retired \
         process continues in its worker's lane; <code>final</code> is the final phase). Shaded bands mark fault \
         windows on every chart.</p></section>\
         <section class=\"card\" id=\"latency\"><h2>Latency and throughput</h2><div class=\"chart-title\">Latency \
         of every op by invocation time (log scale)</div><div class=\"chart\"><canvas id=\"latency-canvas\"></canvas>\
         </div><div class=\"legend\"><span><i style=\"background:#0f172a\">\
         </i>p50 (ok)</span><span><i style=\"background:#7c2d12\"></i>p99 (ok)</span><span>dots: every op \
         (colours as above)</span></div><div class=\"chart-title\">Completions per second \
         (ok / fail / info, stacked)</div><div class=\"chart\"><canvas id=\"throughput-canvas\"></canvas></div>\
         </section>"
    )
}

fn fault_table(timeline: &Timeline) -> String {
    let mut out = String::from(
        "<section class=\"card\" id=\"faults\"><h2>Fault windows</h2><table class=\"faults\"><thead><tr><th>fault</th>\
         <th>from</th><th>to</th><th>length</th><th>details</th><th></th></tr></thead><tbody>",
    );
    if timeline.faults.is_empty() {
        out.push_str("<tr><td colspan=\"6\">No fault windows: no node was killed, paused or down.</td></tr>");
    }
    for fault in timeline.faults.iter().take(FAULT_ROWS_MAX) {
        let (to, length) = match fault.t1 {
            Some(t1) => (format!("{:.3}s", t1 / 1000.0), format!("{:.0} ms", t1 - fault.t0)),
            None => ("end of run".to_string(), String::new()),
        };
        let _ = write!(
            out,
            "<tr class=\"fault {}\"><td><a href=\"#ev-{}\">{}</a></td><td>{:.3}s</td><td>{to}</td><td>{length}</td>\
             <td>{}</td><td><a href=\"#\" class=\"zoom-link\" data-t0=\"{:.3}\" data-t1=\"{:.3}\">show</a></td></tr>",
            fault.kind,
            fault.index,
            html(&fault.label),
            fault.t0 / 1000.0,
            html(&fault.detail),
            fault.t0,
            fault.t1.unwrap_or(fault.t0 + 1000.0)
        );
    }
    if timeline.faults.len() > FAULT_ROWS_MAX {
        let _ = write!(
            out,
            "<tr class=\"elided\"><td colspan=\"6\">… and {} more (all drawn on the timeline)</td></tr>",
            timeline.faults.len() - FAULT_ROWS_MAX
        );
    }
    out.push_str("</tbody></table></section>");
    out
}

fn plan_section(inputs: &RunInputs) -> String {
    match &inputs.plan_yaml {
        Some(text) => format!(
            "<section class=\"card\" id=\"plan\"><h2>Plan</h2><details><summary>plan.yaml (resolved, as run)</summary>\
             <pre class=\"plan\">{}</pre></details></section>",
            html(text)
        ),
        None => "<section class=\"card\" id=\"plan\"><h2>Plan</h2><p class=\"warn\">plan.yaml is missing from the \
                 store folder.</p></section>"
            .to_string(),
    }
}
