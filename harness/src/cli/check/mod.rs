//! `faultline check`: a history file from anywhere (faultline JSONL, Jepsen EDN or JSON, Jepsen log lines) checked
//! against a model: Knossos's and Porcupine's linearizability models, Elle's transactional ones, Jepsen's set, counter,
//! bank and long-fork. The checkers are the ones a run's workload check uses; with `--report DIR` the history and its
//! results land in DIR as a run's do, and DIR/report.html is the report a run has.

mod args;
mod text;

pub use args::{CheckArgs, FormatArg, ModelArg};

use super::{Ended, Failed, Outcome};
use faultline_reports::results::{Counts, Results, SCHEMA_VERSION};
use faultline_workloads::checker::{
    checker_for, combine, CheckInput, CheckResult, Checker, HistoryModel, Linearizability,
};
use faultline_workloads::linearizability::ExplainKeys;
use faultline_workloads::{History, HistoryWriter};
use std::collections::BTreeMap;
use std::path::Path;

/// `faultline check`.
pub(super) fn command(args: CheckArgs) -> Outcome {
    // The options first: a typo in them is found before a large file is read.
    let model = HistoryModel::from(args.model);
    let options = args.options().map_err(Failed::bad_input)?;
    let explain = args.explain_keys().map_err(Failed::bad_input)?;
    let checker: Box<dyn Checker> = match model.linearizable() {
        // Keys asked for by name may lie past the ones a run's check explains.
        Some(kind) if explain != ExplainKeys::First => {
            Box::new(Linearizability::explaining_every_key(kind, options.timeout))
        }
        _ => checker_for(model, &options).map_err(|e| Failed::bad_input(format!("faultline check: {e}")))?,
    };
    let history = load(&args)?;
    let logs = BTreeMap::new();
    let check = checker.check(&CheckInput {
        history: &history,
        node_logs: &logs,
    });
    let results = results_of(&args, &history, check.clone());
    eprint!("{}", text::render(&check, model, &explain));
    if let Some(dir) = &args.report {
        let page = write_report(dir, &history, &results)?;
        eprintln!("faultline check: report {}", page.display());
    }
    // A check that had nothing to judge is no verdict on the history: the run's `unknown` (exit 2) says so.
    let shouted = if check.not_checked {
        "NOT CHECKED"
    } else {
        faultline_reports::results::shout(check.verdict)
    };
    eprintln!(
        "faultline check: {shouted} — {}: {} — {}",
        check.name,
        check.reason,
        args.file.display()
    );
    Ok(Ended::with(
        results.verdict.exit_code() as u8,
        &json_object(&check, model),
    ))
}

/// The history in the file, or why it is not one: bad input naming the file, line and column, or a harness error
/// when it cannot be read at all.
fn load(args: &CheckArgs) -> Result<History, Failed> {
    use faultline_workloads::{HistoryError, LoadError};
    if !args.file.is_file() {
        return Err(Failed::bad_input(format!(
            "faultline check: no history file {} (give the path of a history: faultline JSONL, Jepsen EDN or JSON, \
             or jepsen.util log lines)",
            args.file.display()
        )));
    }
    faultline_workloads::load_history_file(&args.file, args.format.map(Into::into)).map_err(|e| {
        let io = matches!(e, LoadError::Io { .. } | LoadError::Jsonl(HistoryError::Io { .. }));
        let message = format!("faultline check: {e}");
        if io {
            Failed::harness(message)
        } else {
            Failed::bad_input(message)
        }
    })
}

/// The object `--json` prints: the check's result (its details), with the model, the check's name and the file.
fn json_object(check: &CheckResult, model: HistoryModel) -> serde_json::Value {
    let mut object = match &check.details {
        serde_json::Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    object.insert("verdict".into(), serde_json::json!(check.verdict));
    if check.not_checked {
        object.insert("not_checked".into(), true.into());
    }
    object.entry("reason").or_insert_with(|| check.reason.clone().into());
    object.insert("model".into(), model.name().into());
    object.insert("check".into(), check.name.clone().into());
    serde_json::Value::Object(object)
}

/// The results.json a run would have, for the history alone.
fn results_of(args: &CheckArgs, history: &History, check: CheckResult) -> Results {
    let checks = vec![check];
    let (verdict, reason) = combine(&checks);
    let name = args
        .file
        .file_name()
        .map_or_else(|| args.file.display().to_string(), |n| n.to_string_lossy().into_owned());
    Results {
        schema_version: SCHEMA_VERSION,
        faultline_version: env!("CARGO_PKG_VERSION").to_string(),
        verdict,
        reason,
        plan: format!("check {name}"),
        system: faultline_reports::results::CHECKED_HISTORY.to_string(),
        seed: 0,
        started_at: String::new(),
        duration_ms: history.events.last().map_or(0, |e| e.time_ns / 1_000_000),
        store_dir: args
            .report
            .as_ref()
            .map_or_else(String::new, |d| d.display().to_string()),
        repro: args.repro(),
        checks,
        counts: Counts::of(history),
        coverage: Default::default(),
        // A history alone has no node logs or faults to draw behaviours from.
        behaviours: Default::default(),
    }
}

/// Writes DIR/history.jsonl (the history as faultline JSONL), DIR/results.json and DIR/report.html; returns the
/// page's path. Failing to write is the harness's error.
fn write_report(dir: &Path, history: &History, results: &Results) -> Result<std::path::PathBuf, Failed> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        Failed::harness(format!(
            "faultline check: cannot write {what} in {}: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(|e| failed("the report folder", &e))?;
    let file = std::fs::File::create(dir.join("history.jsonl")).map_err(|e| failed("history.jsonl", &e))?;
    let mut writer = HistoryWriter::new(std::io::BufWriter::new(file));
    for event in &history.events {
        writer.append(event.clone()).map_err(|e| failed("history.jsonl", &e))?;
    }
    writer.flush().map_err(|e| failed("history.jsonl", &e))?;
    let json = serde_json::to_vec_pretty(results).map_err(|e| failed("results.json", &e))?;
    faultline_reports::write_atomic(&dir.join("results.json"), &json).map_err(|e| failed("results.json", &e))?;
    faultline_reports::write_report(dir).map_err(|e| failed("report.html", &e))
}
