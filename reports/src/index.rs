//! `store/index.html`: every run in the store, newest first, with its verdict colour, plan, system, seed, date,
//! duration and a link to its report; regenerated after each run and written atomically.
//!
//! The store layout is `store/<plan>/<UTC time>-seed<N>/`; a run folder is any such folder with a `results.json` or a
//! `history.jsonl` (a run that crashed before its checks is listed as incomplete). When the store has a seed database
//! (`seeds.jsonl`, written by campaigns), the campaign view comes first (see `campaign_view`).

use crate::campaign_view::CAMPAIGN_CSS;
use crate::error::ReportError;
use crate::html::escape_html as html;
use crate::results::{shout, Results};
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
    let mut campaigns = crate::campaign_view::render(&seeds.rows, store_root);
    if !seeds.bad_lines.is_empty() {
        let (line, why) = &seeds.bad_lines[0];
        let _ = write!(
            campaigns,
            "<p class=\"note\">{} unreadable line(s) in seeds.jsonl skipped (line {line}: {})</p>",
            seeds.bad_lines.len(),
            html(why)
        );
    }
    let page = render(&rows, &campaigns);
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

fn render(rows: &[Row], campaigns: &str) -> String {
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
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>faultline store</title><style>{INDEX_CSS}\
         {CAMPAIGN_CSS}</style></head><body><header><h1>faultline runs</h1><p>{} run(s): <span class=\"v valid\">{} \
         valid</span> <span class=\"v invalid\">{} invalid</span> <span class=\"v unknown\">{} unknown</span> \
         <span class=\"v incomplete\">{} incomplete</span> · <input id=\"filter\" placeholder=\"filter: plan, seed, \
         verdict, reason…\" autofocus></p></header>{campaigns}<h2 class=\"runs\">Runs</h2><table id=\"runs\"><thead>\
         <tr><th>verdict</th><th>plan</th><th>system</th><th>seed</th><th>started (UTC)</th><th>duration</th>\
         <th>reason</th><th>report</th></tr></thead><tbody>",
        rows.len(),
        count("valid"),
        count("invalid"),
        count("unknown"),
        count("incomplete")
    );
    for row in rows {
        let link = if row.has_report {
            format!("<a href=\"{}/report.html\">report</a>", href(&row.rel))
        } else {
            format!("<a href=\"{}/\">folder</a>", href(&row.rel))
        };
        match &row.results {
            Ok(r) => {
                let _ = write!(
                    out,
                    "<tr class=\"{v}\"><td><span class=\"v {v}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td>\
                     <td>{}</td><td>{:.1} s</td><td class=\"reason\">{}</td><td>{link}</td></tr>",
                    shout(r.verdict),
                    html(&r.plan),
                    html(&r.system),
                    r.seed,
                    html(&r.started_at),
                    r.duration_ms as f64 / 1000.0,
                    html(&r.reason),
                    v = r.verdict
                );
            }
            Err(why) => {
                let _ = write!(
                    out,
                    "<tr class=\"incomplete\"><td><span class=\"v incomplete\">INCOMPLETE</span></td><td colspan=\"5\">\
                     <code>{}</code></td><td class=\"reason\">{}</td><td>{link}</td></tr>",
                    html(&row.rel),
                    html(why)
                );
            }
        }
    }
    if rows.is_empty() {
        out.push_str("<tr><td colspan=\"8\">No runs yet: <code>faultline run</code> writes one here.</td></tr>");
    }
    out.push_str("</tbody></table>");
    out.push_str(INDEX_JS);
    out.push_str("</body></html>\n");
    out
}

const INDEX_CSS: &str = "body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1f2937;background:#f6f7f9}\
header{padding:14px 24px;background:#111827;color:#f9fafb}h1{margin:0 0 4px;font-size:20px}header p{margin:0}\
table{border-collapse:collapse;width:100%;background:#fff}th{text-align:left;font-size:12px;color:#6b7280;\
text-transform:uppercase;padding:8px 10px;border-bottom:1px solid #e5e7eb}td{padding:6px 10px;border-bottom:1px solid \
#e5e7eb;vertical-align:top}td.reason{max-width:640px;overflow-wrap:anywhere}tr.invalid td:first-child{border-left:5px \
solid #b91c1c}tr.valid td:first-child{border-left:5px solid #15803d}tr.unknown td:first-child{border-left:5px solid \
#b45309}tr.incomplete td:first-child{border-left:5px solid #9ca3af}.v{display:inline-block;padding:1px 8px;\
border-radius:10px;font-size:11px;font-weight:700;color:#fff}.v.valid{background:#15803d}.v.invalid{background:#b91c1c}\
.v.unknown{background:#b45309}.v.incomplete{background:#6b7280}#filter{padding:3px 8px;border-radius:5px;border:0;\
width:320px}h2.runs{font-size:17px;margin:14px 24px 6px}";

const INDEX_JS: &str = "<script>(function(){var f=document.getElementById('filter');f.addEventListener('input',\
function(){var q=f.value.toLowerCase();document.querySelectorAll('#runs tbody tr').forEach(function(r){\
r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});})();</script>";
