//! `faultline check FILE` on other tools' histories, through the same readers and checkers the command uses:
//! - Elle's `huge-scc.edn` (list-append, one strongly connected component of thousands of transactions; Elle's own
//!   test gives up with a cycle-search timeout): read, checked against strict-serializable, the cycle it names and
//!   the models it rules out, against issue 47's goal of 2 s; the baseline is reading the file.
//! - A Knossos-style cas-register history of 100,000 operations (100 independent registers as Jepsen's
//!   `independent` `[key value]` tuples, 10 processes, 1% `info`, integer values, one EDN op map per line): read
//!   and checked, against the same operations as faultline JSONL read and checked in the same run (the baseline:
//!   what `faultline run` and `analyze` do), so the ratios show what the Jepsen format costs. Each file is also read
//!   on its own in a fresh process of this bench, as `faultline check FILE` reads it (format sniffed), alternating the
//!   formats and keeping the best of [`READ_ROUNDS`], for the read time and the peak memory (VmHWM) of reading: a
//!   reader's peak is otherwise hidden under whatever the process held before. The goal (issue 63) is EDN within
//!   x1.5 of JSONL on both.
//!
//! `cargo bench -p faultline-workloads --bench offline_check` (needs `../shared/upstream` beside the checkout, as
//! the conformance test does)

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

/// Fresh-process reads of each format; the best is kept.
const READ_ROUNDS: usize = 3;

/// Set (to a history's path) in the child processes that only read a history and report.
const READ_ONLY_ENV: &str = "FAULTLINE_OFFLINE_CHECK_READ_ONLY";

/// EDN may cost this much of JSONL's read time and peak memory (issue 63).
const GOAL_RATIO: f64 = 1.5;

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

/// In a child process: reads the history at `path` as `faultline check FILE` does and prints its events, the read
/// time in nanoseconds and the process's peak RSS in MiB.
fn read_only(path: &str) {
    let t = Instant::now();
    let history = load_history_file(Path::new(path), None).unwrap_or_else(|e| panic!("{e}"));
    let read = t.elapsed();
    println!("{} {} {}", history.events.len(), read.as_nanos(), peak_rss_mib());
}

/// One fresh-process read of a history: its events, read time and peak RSS (MiB).
fn read_in_child(path: &Path) -> (usize, Duration, f64) {
    let exe = std::env::current_exe().expect("this bench's executable");
    let out = std::process::Command::new(exe)
        .env(READ_ONLY_ENV, path)
        .output()
        .expect("run the reading child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "reading {} failed: {stdout}{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    let parse = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .expect("the child's report")
    };
    (parse(0) as usize, Duration::from_nanos(parse(1) as u64), parse(2))
}

/// The best of [`READ_ROUNDS`] fresh-process reads of each file, alternating: (read time, peak RSS MiB) per file.
fn fresh_reads(files: [&Path; 2], events: usize) -> [(Duration, f64); 2] {
    let mut best = [(Duration::MAX, f64::INFINITY); 2];
    for _ in 0..READ_ROUNDS {
        for (file, best) in files.iter().zip(best.iter_mut()) {
            let (n, read, peak) = read_in_child(file);
            assert_eq!(n, events, "{}", file.display());
            *best = (best.0.min(read), best.1.min(peak));
        }
    }
    best
}

fn size_mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(f64::NAN, |m| m.len() as f64 / 1e6)
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
    let (jsonl_mb, edn_mb) = (size_mb(&jsonl), size_mb(&edn));
    let [(base_fresh, base_peak), (edn_fresh, edn_peak)] = fresh_reads([&jsonl, &edn], baseline.events.len());
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
    let time_ratio = edn_fresh.as_secs_f64() / base_fresh.as_secs_f64();
    let peak_ratio = edn_peak / base_peak;
    println!(
        "  read alone in a fresh process as `faultline check FILE` does, best of {READ_ROUNDS}: JSONL ({jsonl_mb:.1} MB) \
         in {base_fresh:.2?}, peak RSS {base_peak:.0} MiB; EDN ({edn_mb:.1} MB) in {edn_fresh:.2?}, peak RSS \
         {edn_peak:.0} MiB"
    );
    println!(
        "  EDN/JSONL: read time x{time_ratio:.2}, peak memory x{peak_ratio:.2} (goal x{GOAL_RATIO}: {})",
        if time_ratio <= GOAL_RATIO && peak_ratio <= GOAL_RATIO {
            "met"
        } else {
            "MISSED"
        }
    );
}

fn main() {
    if let Ok(path) = std::env::var(READ_ONLY_ENV) {
        read_only(&path);
        return;
    }
    huge_scc();
    knossos_cas_register();
}
