//! `store/index.html`: every run in the store, newest first, with its verdict colour, plan, system, seed, date,
//! duration and a link to its report; regenerated after each run and written atomically.
//!
//! The store layout is `store/<plan>/<UTC time>-seed<N>/`; a run folder is any such folder with a `results.json` or a
//! `history.jsonl` (a run that crashed before its checks is listed as incomplete). When the store has a seed database
//! (`seeds.jsonl`, written by campaigns), the campaign view comes first (see `campaign_view`).

use crate::error::ReportError;
use crate::pages;
use crate::results::{shout, Results};
use maud::{html, Markup, PreEscaped};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One run as the index lists it.
struct Row {
    /// Path relative to the store root, with `/` separators.
    rel: String,
    results: Result<Results, String>,
    has_report: bool,
}

/// Scans `store_root` and writes `store_root/index.html` atomically; returns its path.
pub fn write_index(store_root: &Path) -> Result<PathBuf, ReportError> {
    let rows = scan(store_root)?;
    let seeds = crate::seeds::read_seeds(store_root)?;
    let campaigns = html! {
        (crate::campaign_view::render(&seeds.rows, store_root))
        @if let Some((line, why)) = seeds.bad_lines.first() {
            p.note { (seeds.bad_lines.len()) " unreadable line(s) in seeds.jsonl skipped (line " (line) ": " (why) ")" }
        }
    };
    let page = render(&rows, campaigns);
    let path = store_root.join("index.html");
    crate::write_atomic(&path, page.as_bytes()).map_err(ReportError::io("write", &path))?;
    Ok(path)
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(ReportError::io("list", dir))?
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            // `latest` is a symlink to a run listed anyway; dot-files are temp files.
            !name.starts_with('.') && e.file_type().is_ok_and(|t| t.is_dir())
        })
        .map(|e| e.path())
        .collect();
    dirs.sort();
    Ok(dirs)
}

fn scan(store_root: &Path) -> Result<Vec<Row>, ReportError> {
    let mut rows = Vec::new();
    for plan_dir in sorted_dirs(store_root)? {
        for run_dir in sorted_dirs(&plan_dir)? {
            let results_path = run_dir.join("results.json");
            if !results_path.is_file() && !run_dir.join("history.jsonl").is_file() {
                continue;
            }
            let results = match std::fs::read(&results_path) {
                Ok(bytes) => {
                    serde_json::from_slice::<Results>(&bytes).map_err(|e| format!("unreadable results.json: {e}"))
                }
                Err(_) => Err("no results.json: the run did not finish (run `faultline analyze` on it)".to_string()),
            };
            let rel = run_dir
                .strip_prefix(store_root)
                .unwrap_or(&run_dir)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            rows.push(Row {
                rel,
                results,
                has_report: run_dir.join("report.html").is_file(),
            });
        }
    }
    // Newest first: folder names start with the UTC time, so the run folder name orders them.
    rows.sort_by(|a, b| run_name(&b.rel).cmp(run_name(&a.rel)).then(a.rel.cmp(&b.rel)));
    Ok(rows)
}

fn run_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// Percent-encodes a relative path for an `href` (keeps `/` and unreserved characters).
pub(crate) fn href(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn render(rows: &[Row], campaigns: Markup) -> String {
    let count = |v: &str| {
        rows.iter()
            .filter(|r| {
                r.results
                    .as_ref()
                    .map(|x| x.verdict.to_string())
                    .unwrap_or_else(|_| "incomplete".into())
                    == v
            })
            .count()
    };
    let body = html! {
        header {
            h1 { "faultline runs" }
            p {
                (rows.len()) " run(s): "
                @for verdict in ["valid", "invalid", "unknown", "incomplete"] {
                    (pages::pill(verdict, &format!("{} {verdict}", count(verdict)))) " "
                }
                "· " input #filter placeholder="filter: plan, seed, verdict, reason…" autofocus;
            }
        }
        (campaigns)
        h2.runs { "Runs" }
        table #runs {
            thead { tr {
                th { "verdict" } th { "plan" } th { "system" } th { "seed" } th { "started (UTC)" }
                th { "duration" } th { "reason" } th { "report" }
            } }
            tbody {
                @for row in rows { (run_row(row)) }
                @if rows.is_empty() {
                    tr { td colspan="8" { "No runs yet: " code { "faultline run" } " writes one here." } }
                }
            }
        }
        script { (PreEscaped(INDEX_JS)) }
    };
    pages::document("faultline store", "index", body)
}

fn run_row(row: &Row) -> Markup {
    let link = html! {
        @if row.has_report {
            a href={ (href(&row.rel)) "/report.html" } { "report" }
        } @else {
            a href={ (href(&row.rel)) "/" } { "folder" }
        }
    };
    match &row.results {
        Ok(r) => html! {
            tr class=(r.verdict) {
                td { (pages::pill(&r.verdict.to_string(), shout(r.verdict))) }
                td { (r.plan) }
                td { (r.system) }
                td { (r.seed) }
                td { (r.started_at) }
                td { (format!("{:.1} s", r.duration_ms as f64 / 1000.0)) }
                td.reason { (r.reason) }
                td { (link) }
            }
        },
        Err(why) => html! {
            tr.incomplete {
                td { (pages::pill("incomplete", "INCOMPLETE")) }
                td colspan="5" { code { (row.rel) } }
                td.reason { (why) }
                td { (link) }
            }
        },
    }
}

/// Filters the runs table as the person types.
const INDEX_JS: &str = "(function(){var f=document.getElementById('filter');f.addEventListener('input',\
function(){var q=f.value.toLowerCase();document.querySelectorAll('#runs tbody tr').forEach(function(r){\
r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});})();";
