//! What the run benchmarks share: running a plan to the end with the built `faultline`, and reading what its fault
//! phase did from the stored history.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `plan` with `seed` and `time_limit` into `store` (quietly), and returns the run's folder. A verdict of any
/// kind is a finished run; a harness error is not.
pub fn run(plan: &Path, store: &Path, seed: &str, time_limit: &str) -> PathBuf {
    let status = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--quiet", "--seed", seed, "--time-limit", time_limit, "--store"])
        .arg(store)
        .arg(plan)
        .status()
        .expect("running faultline");
    assert!(status.code().is_some_and(|c| c <= 2), "faultline run failed: {status}");
    store.join("latest").canonicalize().expect("store/latest")
}

/// A run's fault phase, from `cluster-ready` to `fault-phase-end`, as its history has it.
pub struct Phase {
    events: Vec<Value>,
    from_ns: u64,
    to_ns: u64,
    /// The run's verdict.
    pub verdict: String,
}

impl Phase {
    /// Reads the fault phase of the run in `run_dir`.
    pub fn of(run_dir: &Path) -> Phase {
        let history = std::fs::read_to_string(run_dir.join("history.jsonl")).expect("history.jsonl");
        let events: Vec<Value> = history.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let time_of = |f: &str| {
            events
                .iter()
                .find(|e| e["kind"] == "lifecycle" && e["f"] == f)
                .and_then(|e| e["time_ns"].as_u64())
                .unwrap_or_else(|| panic!("no {f} event in {}", run_dir.display()))
        };
        let (from_ns, to_ns) = (time_of("cluster-ready"), time_of("fault-phase-end"));
        let results: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).expect("results.json"))
                .expect("results.json is JSON");
        Phase {
            events,
            from_ns,
            to_ns,
            verdict: results["verdict"].as_str().unwrap_or("?").to_string(),
        }
    }

    /// Client completions of `kind` (`ok`, `fail`, `info`) in the phase, of function `f` when given.
    pub fn count(&self, kind: &str, f: Option<&str>) -> u64 {
        self.events
            .iter()
            .filter(|e| e["kind"] == kind && f.is_none_or(|f| e["f"] == f))
            .filter(|e| {
                e["time_ns"]
                    .as_u64()
                    .is_some_and(|t| (self.from_ns..=self.to_ns).contains(&t))
            })
            .count() as u64
    }

    /// The phase's length, s.
    pub fn seconds(&self) -> f64 {
        (self.to_ns - self.from_ns) as f64 / 1e9
    }
}
