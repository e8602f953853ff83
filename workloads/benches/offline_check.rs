//! `faultline check FILE` on other tools' histories, through the same readers and checkers the command uses:
//! - Elle's `huge-scc.edn` (list-append, one strongly connected component of thousands of transactions; Elle's own
//!   test gives up with a cycle-search timeout): read, checked against strict-serializable, the cycle it names and
//!   the models it rules out, against issue 47's goal of 2 s; the baseline is reading the file.
//! - A Knossos-style cas-register history of 100,000 operations (100 independent registers as Jepsen's
//!   `independent` `[key value]` tuples, 10 processes, 1% `info`, integer values, one EDN op map per line): read
//!   and checked, against the same operations as faultline JSONL read and checked in the same run (the baseline:
//!   what `faultline run` and `analyze` do), so the ratios show what the Jepsen format costs.
//!
//! `cargo bench -p faultline-workloads --bench offline_check` (needs `../shared/elle-knossos-test-data` beside the
//! checkout, as the conformance test does)

#[path = "support/register_history.rs"]
mod register_history;
mod support;

use faultline_workloads::checker::{checker_for, HistoryModel, ModelOptions};
use faultline_workloads::{load_history_file, CheckInput, CheckResult, Event, EventKind, Format, History, Verdict};
use register_history::write_history;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::peak_rss_mib;

/// Operations in the cas-register history.
const CAS_OPS: usize = 100_000;

fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/upstream");
    assert!(
        dir.join("elle/histories/huge-scc.edn").is_file(),
        "Elle's histories are missing at {}/elle/histories (the shared/ folder must sit beside the checkout)",
        dir.display()
    );
    dir
}

/// Reads `path` and checks it as `model` with the command's defaults; the times of each step.
fn read_and_check(
    path: &Path,
    format: Option<Format>,
    model: HistoryModel,
) -> (History, CheckResult, Duration, Duration) {
    let t = Instant::now();
    let history = load_history_file(path, format).unwrap_or_else(|e| panic!("{e}"));
    let read = t.elapsed();
    let checker = checker_for(model, &ModelOptions::default()).expect("the default options are valid");
    let t = Instant::now();
    let logs = BTreeMap::new();
    let result = checker.check(&CheckInput {
        history: &history,
        node_logs: &logs,
    });
    (history, result, read, t.elapsed())
}

/// The strings of `details[field]`, comma-separated.
fn names(details: &Value, field: &str) -> String {
    let list = details[field].as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
}

fn huge_scc() {
    let path = data_dir().join("elle/histories/huge-scc.edn");
    let (history, result, read, checked) = read_and_check(&path, None, HistoryModel::ListAppend);
    assert_eq!(result.verdict, Verdict::Invalid, "{}", result.reason);
    let total = read + checked;
    println!(
        "huge-scc.edn: {} events read in {read:.2?}, checked in {checked:.2?} (x{:.1} the read); {} in {total:.2?} \
         (goal 2 s: {}); peak RSS {:.0} MiB",
        history.events.len(),
        checked.as_secs_f64() / read.as_secs_f64(),
        result.verdict,
        if total <= Duration::from_secs(2) {
            "met"
        } else {
            "MISSED"
        },
        peak_rss_mib()
    );
    println!("  anomalies: {}", names(&result.details, "anomaly_types"));
    println!(
        "  not: {}; also not: {}",
        names(&result.details, "not"),
        names(&result.details, "also_not")
    );
    let anomalies = result.details["anomalies"]
        .as_object()
        .expect("the txn check's anomalies");
    // Each explanation starts with its class.
    for found in anomalies.values() {
        if let Some(explanation) = found[0]["explanation"].as_str() {
            println!("  {explanation}");
        }
    }
}

/// A register value of the JSONL history as Knossos writes it: `w-7` is 7, `null` is nil.
fn edn_value(value: &Value) -> String {
    match value {
        Value::Null => "nil".into(),
        Value::String(s) => s.trim_start_matches("w-").to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(edn_value).collect::<Vec<_>>().join(" ")),
        other => other.to_string(),
    }
}

/// One event as a Jepsen op map with an `independent` tuple: `{:type :ok, :f :cas, :value [3 [1 2]], ...}`.
fn edn_op(event: &Event) -> String {
    let kind = match event.kind {
        EventKind::Invoke => "invoke",
        EventKind::Ok => "ok",
        EventKind::Fail => "fail",
        _ => "info",
    };
    let key = event.key.as_deref().unwrap_or_default().trim_start_matches('k');
    let mut line = String::with_capacity(96);
    let _ = write!(
        line,
        "{{:type :{kind}, :f :{}, :value [{key} {}], :process {}, :time {}, :index {}}}",
        event.f,
        edn_value(&event.value),
        event.process.unwrap_or_default(),
        event.time_ns,
        event.index
    );
    line
}

fn knossos_cas_register() {
    let dir = std::env::temp_dir();
    let jsonl = dir.join(format!("faultline-offline-check-{}.jsonl", std::process::id()));
    let edn = dir.join(format!("faultline-offline-check-{}.edn", std::process::id()));
    write_history(&jsonl, CAS_OPS, 100, 10, 0.01);
    let (baseline, base_result, base_read, base_checked) = read_and_check(&jsonl, None, HistoryModel::CasRegister);
    let mut out = BufWriter::new(std::fs::File::create(&edn).expect("create the EDN history"));
    for event in &baseline.events {
        writeln!(out, "{}", edn_op(event)).expect("write the EDN history");
    }
    out.flush().expect("flush the EDN history");
    drop(out);
    let (history, result, read, checked) = read_and_check(&edn, Some(Format::JepsenEdn), HistoryModel::CasRegister);
    let _ = std::fs::remove_file(&jsonl);
    let _ = std::fs::remove_file(&edn);
    assert_eq!(base_result.verdict, Verdict::Valid, "{}", base_result.reason);
    assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
    assert_eq!(history.events.len(), baseline.events.len());
    println!(
        "cas-register, {CAS_OPS} ops over 100 keys: faultline JSONL (baseline) read in {base_read:.2?}, checked in \
         {base_checked:.2?}: {}",
        base_result.verdict
    );
    println!(
        "  Knossos EDN: read in {read:.2?} (x{:.2}), checked in {checked:.2?} (x{:.2}): {}; peak RSS {:.0} MiB",
        read.as_secs_f64() / base_read.as_secs_f64(),
        checked.as_secs_f64() / base_checked.as_secs_f64(),
        result.verdict,
        peak_rss_mib()
    );
}

fn main() {
    huge_scc();
    knossos_cas_register();
}
