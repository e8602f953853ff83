//! What libfaketime costs the reference node: the same write-only plan and seed run twice in one process, once as
//! is and once with libfaketime preloaded into every node (`FAKETIME_NO_CACHE=1`: the control file is read at every
//! clock call, as clock faults need), its clock at real time throughout (the plan's only clock fault is scheduled
//! after the fault phase ends, so it never fires, but it makes the run preload libfaketime). Prints each run's ok
//! writes/s over the fault phase and their ratio (preloaded / plain).
//!
//! `cargo bench -p faultline --bench clock` (env: `FAULTLINE_BENCH_SEED`, default 1; `FAULTLINE_BENCH_TIME_LIMIT`,
//! default 20s; `FAULTLINE_BENCH_RATE`, ops/s offered, default 3000: above what the node commits, so the number is
//! its write throughput).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PLAN: &str = "name: clock-bench
time_limit: 20s
system: {kind: reference, nodes: 3}
workload: {kind: register, concurrency: 16, rate: RATE, keys: 8, ops_per_key: 100000, mix: {write: 1}, op_timeout: 1500ms}
final_phase: {enabled: false}
";

const NEVER_FIRES: &str = "nemesis:
  process:
    script:
      - {at: 1h, kind: clock, targets: all, duration: 1s, bump: +1s}
";

/// Ok writes between `cluster-ready` and `fault-phase-end`, that window's length in s, and the verdict.
fn measure(run_dir: &Path) -> (u64, f64, String) {
    let history = std::fs::read_to_string(run_dir.join("history.jsonl")).expect("history.jsonl");
    let events: Vec<Value> = history.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let time_of = |f: &str| {
        events
            .iter()
            .find(|e| e["kind"] == "lifecycle" && e["f"] == f)
            .and_then(|e| e["time_ns"].as_u64())
            .unwrap_or_else(|| panic!("no {f} event in {}", run_dir.display()))
    };
    let (from, to) = (time_of("cluster-ready"), time_of("fault-phase-end"));
    let ok = events
        .iter()
        .filter(|e| e["kind"] == "ok" && e["f"] == "write")
        .filter(|e| e["time_ns"].as_u64().is_some_and(|t| (from..=to).contains(&t)))
        .count() as u64;
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).expect("results.json")).unwrap();
    let verdict = results["verdict"].as_str().unwrap_or("?").to_string();
    (ok, (to - from) as f64 / 1e9, verdict)
}

fn run(plan: &Path, store: &Path, seed: &str, time_limit: &str) -> PathBuf {
    let status = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--quiet", "--seed", seed, "--time-limit", time_limit, "--store"])
        .arg(store)
        .arg(plan)
        .status()
        .expect("running faultline");
    assert!(status.code().is_some_and(|c| c <= 2), "faultline run failed: {status}");
    store.join("latest").canonicalize().expect("store/latest")
}

fn main() {
    if let Err(why) = faultline_faults::clock::faketime::library() {
        eprintln!("clock bench: {why}");
        return;
    }
    let seed = std::env::var("FAULTLINE_BENCH_SEED").unwrap_or_else(|_| "1".into());
    let time_limit = std::env::var("FAULTLINE_BENCH_TIME_LIMIT").unwrap_or_else(|_| "20s".into());
    let rate = std::env::var("FAULTLINE_BENCH_RATE").unwrap_or_else(|_| "3000".into());
    let work = tempfile::tempdir().expect("a temporary folder");
    let plain_text = PLAN.replace("RATE", &rate);
    let plain = work.path().join("plain.yaml");
    std::fs::write(&plain, &plain_text).unwrap();
    let preloaded = work.path().join("preloaded.yaml");
    std::fs::write(&preloaded, format!("{plain_text}{NEVER_FIRES}")).unwrap();

    println!(
        "libfaketime's cost: reference node, write-only, seed {seed}, fault phase {time_limit}, offered {rate} ops/s"
    );
    let mut rates = Vec::new();
    for (name, plan) in [("plain", &plain), ("preloaded", &preloaded)] {
        let run_dir = run(plan, &work.path().join(name), &seed, &time_limit);
        let preloads = std::fs::read_to_string(run_dir.join("nodes/n1/node.log"))
            .map(|_| run_dir.join("nodes/n1/clock.faketime").exists())
            .unwrap_or(false);
        assert_eq!(
            preloads,
            name == "preloaded",
            "{name}: libfaketime preloaded only where asked"
        );
        let (ok, phase_s, verdict) = measure(&run_dir);
        let per_s = ok as f64 / phase_s;
        println!("  {name:<10} {per_s:>8.1} ok writes/s  ({ok} ok in {phase_s:.1} s; {verdict})");
        rates.push(per_s);
    }
    println!("  ratio (preloaded / plain ok writes/s): {:.2}", rates[1] / rates[0]);
}
