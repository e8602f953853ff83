//! What behaviour extraction costs against the run it describes: one real run of a plan (its wall time, start to
//! end, is the baseline), then the extraction of its behaviours from the store (reading history.jsonl and the node
//! logs, parsing, masking, walking) repeated and timed. Prints the run's wall time, the extraction's median and worst
//! time, the behaviours found, and the ratio extraction / run (issue 50 asks for at most 5 %).
//!
//! `cargo bench -p faultline --bench behaviours` (env: `FAULTLINE_BENCH_PLAN`, a built-in name or a file, default
//! `default`, which needs no root; `reference-mixed` and `etcd-mixed` need root and their tools;
//! `FAULTLINE_BENCH_SEED`, default 1; `FAULTLINE_BENCH_TIME_LIMIT`, default 20s; `FAULTLINE_BENCH_REPEAT`, default
//! 20).

use faultline_workloads::behaviour::behaviours;
use faultline_workloads::history::History;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Node name -> log text, as the run's analysis reads them.
fn node_logs(run_dir: &Path) -> BTreeMap<String, String> {
    let mut logs = BTreeMap::new();
    for entry in std::fs::read_dir(run_dir.join("nodes")).expect("nodes/").flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path().join("node.log")) {
            logs.insert(entry.file_name().to_string_lossy().into_owned(), text);
        }
    }
    logs
}

fn main() {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
    let (plan, seed) = (env("FAULTLINE_BENCH_PLAN", "default"), env("FAULTLINE_BENCH_SEED", "1"));
    let time_limit = env("FAULTLINE_BENCH_TIME_LIMIT", "20s");
    let repeat: usize = env("FAULTLINE_BENCH_REPEAT", "20")
        .parse()
        .expect("FAULTLINE_BENCH_REPEAT is a number");
    let store = tempfile::tempdir().expect("a temporary folder");
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "run",
            "--quiet",
            "--seed",
            &seed,
            "--time-limit",
            &time_limit,
            "--store",
        ])
        .arg(store.path())
        .arg(&plan)
        .status()
        .expect("running faultline");
    let run_wall = started.elapsed();
    assert!(status.code().is_some_and(|c| c <= 2), "faultline run failed: {status}");
    let run_dir = store.path().join("latest").canonicalize().expect("store/latest");
    let mut times: Vec<Duration> = Vec::with_capacity(repeat);
    let mut found = 0;
    for _ in 0..repeat.max(1) {
        let started = Instant::now();
        let history = History::read_jsonl(&run_dir.join("history.jsonl")).expect("history.jsonl");
        let extracted = behaviours(&history, &node_logs(&run_dir));
        times.push(started.elapsed());
        found = extracted.behaviours.len();
    }
    times.sort_unstable();
    let median = times[times.len() / 2];
    let worst = *times.last().expect("one repetition at least");
    println!("behaviour extraction: plan {plan}, seed {seed}, fault phase {time_limit}");
    println!("  run (start to end, wall):        {:>9.2} s", run_wall.as_secs_f64());
    println!(
        "  extraction (read + parse + walk): {:>9.1} ms median, {:.1} ms worst of {repeat}; {found} behaviours",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3
    );
    println!(
        "  ratio extraction / run:          {:>9.3} % (median), {:.3} % (worst); bar: 5 %",
        median.as_secs_f64() / run_wall.as_secs_f64() * 100.0,
        worst.as_secs_f64() / run_wall.as_secs_f64() * 100.0
    );
}
