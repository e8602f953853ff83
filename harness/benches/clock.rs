//! What libfaketime costs the reference node: the same write-only plan and seed run twice in one process, once as
//! is and once with libfaketime preloaded into every node (`FAKETIME_NO_CACHE=1`: the control file is read at every
//! clock call, as clock faults need), its clock at real time throughout (the plan's only clock fault is scheduled
//! after the fault phase ends, so it never fires, but it makes the run preload libfaketime). Prints each run's ok
//! writes/s over the fault phase and their ratio (preloaded / plain).
//!
//! `cargo bench -p faultline --bench clock` (env: `FAULTLINE_BENCH_SEED`, default 1; `FAULTLINE_BENCH_TIME_LIMIT`,
//! default 20s; `FAULTLINE_BENCH_RATE`, ops/s offered, default 3000: above what the node commits, so the number is
//! its write throughput).

mod support;

use support::{run, Phase};

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
        let phase = Phase::of(&run_dir);
        let (ok, phase_s, verdict) = (phase.count("ok", Some("write")), phase.seconds(), phase.verdict);
        let per_s = ok as f64 / phase_s;
        println!("  {name:<10} {per_s:>8.1} ok writes/s  ({ok} ok in {phase_s:.1} s; {verdict})");
        rates.push(per_s);
    }
    println!("  ratio (preloaded / plain ok writes/s): {:.2}", rates[1] / rates[0]);
}
