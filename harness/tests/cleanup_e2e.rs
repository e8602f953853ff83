//! A harness killed with SIGKILL leaves mounts, namespaces and lock files behind; the next start of any run (here the
//! default plan, which itself uses neither) or `faultline clean` removes all of it, and `--dry-run` only lists it.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// A reference plan on the netns backend and the fault filesystem, long enough to be killed in any phase.
const PLAN: &str = "name: cleanup-e2e
seed: 7
time_limit: 4s
system:
  kind: reference
  nodes: 3
network:
  backend: netns
disk:
  fault_fs: true
workload:
  kind: register
  concurrency: 3
  rate: 50
  keys: 2
  ops_per_key: 100
  mix: {read: 1, write: 1}
  op_timeout: 1s
nemesis:
  process:
    interval: 2s
    faults:
      - {kind: kill, targets: one, duration: 500ms..1s}
final_phase:
  recovery_timeout: 20s
  convergence_timeout: 20s
";

/// Bound on waiting for the run to reach the phase it is killed in.
const PHASE_TIMEOUT: Duration = Duration::from_secs(60);

/// The history so far of the one run in `store` (`store/latest` is only set when a run ends).
fn events(store: &Path) -> Vec<Value> {
    let Some(run_dir) = std::fs::read_dir(store.join("cleanup-e2e"))
        .ok()
        .and_then(|mut runs| runs.next())
        .and_then(Result::ok)
    else {
        return Vec::new();
    };
    std::fs::read_to_string(run_dir.path().join("history.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Namespaces, nft tables and fault-filesystem mounts that carry `run_id` or the harness pid `pid`.
fn leftovers(run_id: &str, pid: u32) -> Vec<String> {
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let tables = Command::new("nft").args(["list", "tables"]).output().unwrap();
    let mut found: Vec<String> = String::from_utf8_lossy(&namespaces.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&tables.stdout).lines())
        .filter(|l| l.contains(run_id) || l.contains(&run_id.replace('-', "_")))
        .map(str::to_string)
        .collect();
    let mounts = faultline_faults::fusefs::faultline_mounts().unwrap();
    found.extend(
        mounts
            .iter()
            .filter(|m| faultline_faults::fusefs::tag_pid(&m.run_tag) == Some(pid))
            .map(|m| m.mountpoint.display().to_string()),
    );
    found.extend(tagged_processes(run_id).iter().map(|p| format!("process {p}")));
    found
}

/// Starts the plan, SIGKILLs the harness once its history shows `phase` (lifecycle event name), and returns the
/// killed run's id and the harness pid.
fn kill_during(store: &Path, phase: &str) -> (String, u32) {
    let plan = write_plan(store, PLAN);
    let mut child = faultline()
        .args(["run", "--quiet", "--store"])
        .arg(store.join("store"))
        .arg(&plan)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let run_id = loop {
        let events = events(&store.join("store"));
        if events.iter().any(|e| e["kind"] == "lifecycle" && e["f"] == phase) {
            let start = events.iter().find(|e| e["f"] == "run-start").unwrap();
            break start["value"]["run_id"].as_str().unwrap().to_string();
        }
        assert!(started.elapsed() < PHASE_TIMEOUT, "the run never reached {phase}");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before reaching {phase}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    (run_id, pid)
}

/// Waits for the nodes' parent-death signal to take them (the kernel delivers it asynchronously).
fn wait_until_no_processes(run_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tagged_processes(run_id).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn given_a_run_killed_mid_fault_phase_with_netns_and_fault_fs_when_the_default_plan_runs_next_should_leave_nothing() {
    if !netns_ready() || !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let (run_id, pid) = kill_during(dir.path(), "cluster-ready");
    wait_until_no_processes(&run_id);
    let left = leftovers(&run_id, pid);
    assert!(
        left.iter().any(|l| l.contains("-lab")) && left.iter().any(|l| l.contains("/data")),
        "a SIGKILLed run leaves its namespaces and mounts: {left:?}"
    );

    let dry = faultline().args(["clean", "--dry-run"]).output().unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", explain(&dry));
    let listed = String::from_utf8_lossy(&dry.stdout);
    assert!(
        listed.contains(&format!("fl-{run_id}-lab")),
        "the dry run lists the namespaces: {listed}"
    );
    assert!(listed.contains("fault filesystems to unmount"), "{listed}");
    assert_eq!(leftovers(&run_id, pid), left, "a dry run removes nothing");

    let next = run_plan_with(
        &dir.path().join("store2"),
        Path::new("default"),
        &["--time-limit", "3s"],
    );
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert!(
        stderr.contains("leftovers of dead runs"),
        "the start says what it removed: {stderr}"
    );
    assert_eq!(
        leftovers(&run_id, pid),
        Vec::<String>::new(),
        "the default plan's start swept it all"
    );
}

#[test]
fn given_a_run_killed_in_the_final_phase_when_cleaned_should_leave_nothing() {
    if !netns_ready() || !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let (run_id, pid) = kill_during(dir.path(), "fault-phase-end");
    wait_until_no_processes(&run_id);
    assert!(!leftovers(&run_id, pid).is_empty(), "a SIGKILLed run leaves something");
    let clean = faultline().arg("clean").output().unwrap();
    assert_eq!(clean.status.code(), Some(0), "{}", explain(&clean));
    assert!(String::from_utf8_lossy(&clean.stdout).contains("deleted network namespaces"));
    assert_eq!(
        leftovers(&run_id, pid),
        Vec::<String>::new(),
        "faultline clean removed it all"
    );
    let again = faultline().arg("clean").output().unwrap();
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("nothing left by dead runs"),
        "{}",
        explain(&again)
    );
}
