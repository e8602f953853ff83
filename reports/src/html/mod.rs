//! `report.html`: one self-contained page (inline CSS, JS and SVG; no network) that says whether a run passed and, if
//! not, what went wrong, when, on which node, under which fault, and how to reproduce it.
//!
//! The page is rendered from the store folder alone: `plan.yaml`, `history.jsonl`, `results.json` and the node logs.
//! Text parts (banner, checks, the failing key, node events and log excerpts) are written here with maud, so every value
//! from the run is escaped by construction (see [`escape`] for the two cases maud alone does not cover); the timeline,
//! latency and throughput charts are drawn on canvas by `assets/report.js` from compact columns (see [`ops`]), and the
//! timeline's observation lanes (durable progress and role per node) from the history's observations (see
//! `observations`). A txn run gets a Transactions section (`txn`): each anomaly class in one sentence, each cycle
//! drawn as an inline SVG graph (`txn_cycle`) over its transactions' micro-ops, and those transactions outlined on
//! the timeline, linked both ways.

mod behaviours;
mod checks;
mod clocks;
mod coverage;
mod durability;
mod escape;
mod linearizability;
use faultline_workloads::nodelog as logs;
mod membership;
mod nodes;
mod observations;
pub mod ops;
mod page;
mod timeline;
mod txn;
mod txn_cycle;
mod unseen;
mod workload_checks;

pub use escape::json_for_script;
use logs::anchor_offset_ns;
pub use logs::parse_rfc3339;
pub use txn::class_sentence;

use crate::error::ReportError;
use crate::results::Results;
use faultline_workloads::history::History;
use logs::NodeLog;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything a report is rendered from, read from a run's store folder.
pub struct RunInputs {
    /// The run folder.
    pub run_dir: PathBuf,
    /// `plan.yaml` as stored (none if missing).
    pub plan_yaml: Option<String>,
    /// The history.
    pub history: History,
    /// The checked results.
    pub results: Results,
    /// Node logs by node name (`n1` ...), parsed.
    logs: BTreeMap<String, NodeLog>,
}

impl RunInputs {
    /// Reads a run folder: `results.json` and `history.jsonl` must exist; `plan.yaml` and node logs may be missing.
    pub fn load(run_dir: &Path) -> Result<RunInputs, ReportError> {
        let results_path = run_dir.join("results.json");
        let results_error = |message: String| ReportError::Results {
            path: results_path.clone(),
            run_dir: run_dir.display().to_string(),
            message,
        };
        let results_text = std::fs::read(&results_path).map_err(|e| results_error(e.to_string()))?;
        let results: Results = serde_json::from_slice(&results_text).map_err(|e| results_error(e.to_string()))?;
        let history = History::read_jsonl(&run_dir.join("history.jsonl"))?;
        let plan_yaml = match std::fs::read_to_string(run_dir.join("plan.yaml")) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ReportError::io("read", run_dir.join("plan.yaml"))(e)),
        };
        let logs = read_logs(&run_dir.join("nodes"))?;
        Ok(RunInputs {
            run_dir: run_dir.to_path_buf(),
            plan_yaml,
            history,
            results,
            logs,
        })
    }
}

fn read_logs(nodes_dir: &Path) -> Result<BTreeMap<String, NodeLog>, ReportError> {
    let mut logs = BTreeMap::new();
    let entries = match std::fs::read_dir(nodes_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(logs),
        Err(e) => return Err(ReportError::io("list", nodes_dir)(e)),
    };
    for entry in entries.flatten() {
        let path = entry.path().join("node.log");
        if !path.is_file() {
            continue;
        }
        let log = NodeLog::read(&path).map_err(ReportError::io("read", &path))?;
        logs.insert(entry.file_name().to_string_lossy().into_owned(), log);
    }
    Ok(logs)
}

/// Renders the page.
pub fn render(inputs: &RunInputs) -> String {
    page::render(inputs)
}

/// Reads `run_dir` and writes `run_dir/report.html` atomically; returns its path.
pub fn write_report(run_dir: &Path) -> Result<PathBuf, ReportError> {
    let inputs = RunInputs::load(run_dir)?;
    let page = render(&inputs);
    let path = run_dir.join("report.html");
    crate::write_atomic(&path, page.as_bytes()).map_err(ReportError::io("write", &path))?;
    Ok(path)
}
