//! `store/index.html`: every run in the store, newest first, with its verdict colour, plan, system, seed, date,
//! duration and a link to its report, and per plan the share of its runs that reached each named coverage state;
//! regenerated after each run and written atomically.
//!
//! The store layout is `store/<plan>/<UTC time>-seed<N>/`; a run folder is any such folder with a `results.json` or a
//! `history.jsonl` (a run that crashed before its checks is listed as incomplete). When the store has a seed database
//! (`seeds.jsonl`, written by campaigns), the campaign view comes first (see `campaign_view`).

use crate::error::ReportError;
use crate::pages;
use crate::results::{shout, Results};
use faultline_workloads::coverage::{Coverage, STATES};
use maud::{html, Markup, PreEscaped};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One run as the index lists it.
struct Row {
    /// Path relative to the store root, with `/` separators.
    rel: String,
    results: Result<Results, String>,
    has_report: bool,
    /// The summary of its shrink (`shrink/shrink.json`), if it was shrunk.
    shrink: Option<String>,
}

/// Scans `store_root` and writes `store_root/index.html` atomically; returns its path.
pub fn write_index(store_root: &Path) -> Result<PathBuf, ReportError> {
    let rows = scan(store_root)?;
    let seeds = crate::seeds::read_seeds(store_root)?;
    let campaigns = html! {
        (crate::campaign_view::render(&seeds.rows, store_root))
        (crate::behaviour_view::render(store_root))
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
                shrink: crate::shrink::read(&run_dir).map(|s| s.summary()),
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
        (coverage_per_plan(rows.iter().filter_map(|r| r.results.as_ref().ok()).map(|r| (r.plan.as_str(), &r.coverage))))
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

/// Per plan, the share of its runs that reached each named state (`3/8`: 3 of its 8 runs with coverage); runs whose
/// results.json predates coverage are left out of the share. Nothing when no run has coverage.
pub(crate) fn coverage_per_plan<'a>(runs: impl IntoIterator<Item = (&'a str, &'a Coverage)>) -> Markup {
    // plan -> (runs with coverage, runs that reached each state in `STATES` order)
    let mut plans: BTreeMap<&str, (usize, [usize; STATES.len()])> = BTreeMap::new();
    for (plan, coverage) in runs {
        if coverage.states.is_empty() {
            continue;
        }
        let (runs, reached) = plans.entry(plan).or_default();
        *runs += 1;
        for (count, (name, _)) in reached.iter_mut().zip(STATES) {
            if coverage.state(name).is_some_and(|s| s.reached) {
                *count += 1;
            }
        }
    }
    if plans.is_empty() {
        return html! {};
    }
    html! {
        h3.coverage { "Coverage per plan" }
        p.note { "Runs (seeds) of each plan that reached each named state, of its runs with coverage." }
        table.coverage {
            thead { tr { th { "plan" } @for (name, description) in STATES { th title=(description) { (name) } } } }
            tbody {
                @for (plan, (runs, reached)) in &plans {
                    tr {
                        td { (plan) }
                        @for (count, (name, _)) in reached.iter().zip(STATES) {
                            td title={ (name) " " (count) "/" (runs) } { (count) "/" (runs) }
                        }
                    }
                }
            }
        }
    }
}

fn run_row(row: &Row) -> Markup {
    let link = html! {
        @if row.has_report {
            a href={ (href(&row.rel)) "/report.html" } { "report" }
        } @else {
            a href={ (href(&row.rel)) "/" } { "folder" }
        }
        @if let Some(summary) = &row.shrink {
            " · " a href={ (href(&row.rel)) "/shrink/shrink.html" } title=(summary) { "shrunk" }
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

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::coverage::StateCoverage;
    use serde_json::json;

    fn results_json(plan: &str, seed: u64, primary_killed: bool) -> serde_json::Value {
        let states: Vec<StateCoverage> = STATES
            .iter()
            .map(|(name, description)| {
                let reached = *name == "primary-killed-while-backup-lagged" && primary_killed;
                StateCoverage {
                    name: name.to_string(),
                    description: description.to_string(),
                    reached,
                    count: u64::from(reached),
                    first_ms: reached.then_some(1200),
                }
            })
            .collect();
        json!({"schema_version": 1, "faultline_version": "t", "verdict": "valid", "reason": "ok", "plan": plan,
            "system": "reference", "seed": seed, "started_at": "", "duration_ms": 1000, "store_dir": "",
            "repro": "", "checks": [], "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0,
            "nemesis": 0, "lifecycle": 0},
            "coverage": {"states": states, "triggers": []}})
    }

    fn write_run(store: &Path, plan: &str, seed: u64, results: serde_json::Value) {
        let dir = store.join(plan).join(format!("20261201T000000Z-seed{seed}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("results.json"), serde_json::to_vec(&results).unwrap()).unwrap();
    }

    #[test]
    fn given_runs_with_coverage_when_the_index_is_written_should_show_each_plans_share_per_state() {
        let store = tempfile::tempdir().unwrap();
        for seed in 0..8 {
            write_run(
                store.path(),
                "lagging-primary",
                seed,
                results_json("lagging-primary", seed, seed < 3),
            );
        }
        // A run from before coverage: listed as a run, left out of the share.
        let mut old = results_json("lagging-primary", 99, true);
        old.as_object_mut().unwrap().remove("coverage");
        write_run(store.path(), "lagging-primary", 99, old);
        let page = std::fs::read_to_string(write_index(store.path()).unwrap()).unwrap();
        assert!(page.contains("Coverage per plan"), "{page}");
        assert!(
            page.contains("title=\"primary-killed-while-backup-lagged 3/8\">3/8</td>"),
            "{page}"
        );
        assert!(page.contains("title=\"all-lost-power 0/8\">0/8</td>"), "{page}");
        assert!(page.contains("9 run(s)"));
    }

    #[test]
    fn given_only_runs_without_coverage_when_the_index_is_written_should_draw_no_coverage_table() {
        let html = coverage_per_plan([("p", &Coverage::default())]).into_string();
        assert!(html.is_empty(), "{html}");
    }
}
