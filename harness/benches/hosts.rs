//! faultline on hosts against faultline on this machine, side by side in one session: the same plan and seed run
//! here (the baseline) and on three SSH test hosts (the remote tests' fixture: network, PID and mount namespaces,
//! each with its own sshd and address, reached only over SSH). For each plan it prints:
//!
//! - client throughput: completed operations (ok, fail, info) per second of the fault phase, and the ratio hosts /
//!   local (issue 65's goal: at least 0.8x);
//! - fault latency, scheduled to applied, p50 and p99: for every timed fault of the schedule, the time from its
//!   scheduled start (the fault phase starts right after the schedule is recorded) to its nemesis event in the
//!   history (written once the fault is done: the kill reaped, the partition's rules in place, the power loss's
//!   unsynced writes dropped), by kind: kill, power loss, partition, link fault.
//!
//! `cargo bench -p faultline --bench hosts` as root (env: `FAULTLINE_BENCH_PLANS`, built-in names or files,
//! default `reference-power-loss,reference-partition,reference-mixed`; `FAULTLINE_BENCH_SEEDS`, default `1,2`;
//! `FAULTLINE_BENCH_TIME_LIMIT`, default `30s`).
//!
//! `cargo bench -p faultline --bench hosts -- --hold` starts the three hosts, prints the arguments that reach them
//! (`--hosts FILE --ssh-config FILE`), and keeps them until its standard input ends (Enter, or Ctrl-D): hosts for a
//! person to try plans on by hand.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use support::ssh_hosts::SshHosts;

/// What one run measured.
#[derive(Default)]
struct Measured {
    verdict: String,
    ops_per_s: f64,
    /// Scheduled-to-applied latencies (ms) by fault kind.
    latency_ms: BTreeMap<&'static str, Vec<f64>>,
}

fn history(run_dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(run_dir.join("history.jsonl")).expect("history.jsonl");
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Throughput and fault latencies of one run's history.
fn measure(run_dir: &Path) -> Measured {
    let events = history(run_dir);
    let find = |f: &str| events.iter().find(|e| e["f"] == f);
    let schedule = find("schedule").expect("a schedule event");
    let phase_start_ns = schedule["time_ns"].as_f64().expect("time_ns");
    let phase_ms = find("fault-phase-end")
        .and_then(|e| e["value"]["phase_ms"].as_f64())
        .unwrap_or(1.0);
    let completed = events
        .iter()
        .filter(|e| matches!(e["kind"].as_str(), Some("ok" | "fail" | "info")))
        .filter(|e| e["time_ns"].as_f64().unwrap_or(0.0) <= phase_start_ns + phase_ms * 1e6)
        .count();
    let starts = |family: &str| -> BTreeMap<u64, f64> {
        schedule["value"][family]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| Some((f["id"].as_u64()?, f["start_ms"].as_f64()?)))
            .collect()
    };
    let (process, network) = (starts("process"), starts("network"));
    let mut latency_ms: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for event in events.iter().filter(|e| e["kind"] == "nemesis") {
        let (kind, scheduled) = match event["f"].as_str() {
            Some("kill") => ("kill", &process),
            Some("power-loss") => ("power loss", &process),
            Some("partition-start") => ("partition", &network),
            Some("link-fault") => ("link fault", &network),
            _ => continue,
        };
        // Timed faults only (a trigger's or a flap's has no scheduled start), once each (a fault on several
        // nodes is applied when its last node is).
        let Some(start_ms) = event["value"]["fault_id"].as_u64().and_then(|id| scheduled.get(&id)) else {
            continue;
        };
        if event["value"]["source"]
            .as_str()
            .is_some_and(|s| s == "triggered" || s == "flap")
        {
            continue;
        }
        let applied_ms = (event["time_ns"].as_f64().unwrap_or(0.0) - phase_start_ns) / 1e6;
        latency_ms.entry(kind).or_default().push(applied_ms - start_ms);
    }
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).expect("results.json"))
            .expect("results.json is JSON");
    Measured {
        verdict: results["verdict"].as_str().unwrap_or("?").to_string(),
        ops_per_s: completed as f64 / (phase_ms / 1000.0),
        latency_ms,
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Runs `plan` with `seed` into `store` (on `hosts` when given); the run's folder.
fn run(plan: &str, seed: &str, time_limit: &str, store: &Path, hosts: Option<&SshHosts>) -> std::path::PathBuf {
    let mut command = match hosts {
        Some(hosts) => hosts.run(plan, seed, time_limit, store),
        None => support::run_command(plan, seed, time_limit, store),
    };
    let output = command.output().expect("faultline runs");
    // A verdict (0 VALID, 1 INVALID, 2 UNKNOWN) means the run finished and wrote its folder.
    assert!(
        matches!(output.status.code(), Some(0..=2)),
        "{plan} did not run: {}",
        support::explain(&output)
    );
    support::latest(store)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !nix::unistd::geteuid().is_root() {
        eprintln!("the hosts benchmark needs root (network namespaces, sshd, nft, FUSE)");
        std::process::exit(2);
    }
    let hosts = SshHosts::start(3);
    if args.iter().any(|a| a == "--hold") {
        println!(
            "three SSH hosts ({}): --hosts {} --ssh-config {}",
            hosts.addresses.join(", "),
            hosts.hosts_file.display(),
            hosts.ssh_config.display()
        );
        println!("(kept until standard input ends)");
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
        return;
    }
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
    let plans = env(
        "FAULTLINE_BENCH_PLANS",
        "reference-power-loss,reference-partition,reference-mixed",
    );
    let seeds = env("FAULTLINE_BENCH_SEEDS", "1,2");
    let time_limit = env("FAULTLINE_BENCH_TIME_LIMIT", "30s");
    let store = tempfile::tempdir().expect("a temporary folder");
    for plan in plans.split(',') {
        let mut side: BTreeMap<&str, Vec<Measured>> = BTreeMap::new();
        for seed in seeds.split(',') {
            for (name, on) in [("local", None), ("hosts", Some(&hosts))] {
                let dir = run(plan, seed, &time_limit, store.path(), on);
                side.entry(name).or_default().push(measure(&dir));
            }
        }
        println!("{plan} (seeds {seeds}, {time_limit} each)");
        let ops = |name: &str| side[name].iter().map(|m| m.ops_per_s).sum::<f64>() / side[name].len() as f64;
        for name in ["local", "hosts"] {
            let verdicts: Vec<&str> = side[name].iter().map(|m| m.verdict.as_str()).collect();
            println!("  {name:5}  {:7.1} ops/s   verdicts {}", ops(name), verdicts.join(" "));
            let mut kinds: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for m in &side[name] {
                for (kind, values) in &m.latency_ms {
                    kinds.entry(kind).or_default().extend(values);
                }
            }
            for (kind, values) in kinds {
                println!(
                    "         {kind:10} scheduled -> applied  p50 {:7.1} ms  p99 {:7.1} ms  ({} faults)",
                    percentile(&values, 0.5),
                    percentile(&values, 0.99),
                    values.len()
                );
            }
        }
        println!("  hosts / local throughput: {:.2}x", ops("hosts") / ops("local"));
    }
}
