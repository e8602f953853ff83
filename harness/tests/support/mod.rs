//! Helpers shared by the end-to-end tests: run `faultline` on a plan in a temporary store and read what it wrote.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

pub mod ssh_hosts;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// Runs inside one test binary go one at a time: several clusters at once on a 2-core machine would make
/// timing-sensitive verdicts (recovery bounds, scripted scenarios) flaky. Cargo runs test binaries one after another.
pub static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How many seeds each end-to-end scenario runs (`FAULTLINE_REPEAT`, default 1).
pub fn repeat() -> u64 {
    std::env::var("FAULTLINE_REPEAT")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// The plan file `plan` (under `plans/`) with a lighter nemesis (kills, pauses, primary isolation; no flaps or
/// triggers) and `bug` switched on, so that a short run commits enough concurrent transactions: the default plan's
/// faults leave the cluster mostly unavailable in its first seconds.
pub fn light_nemesis(plan: &str, bug: Option<&str>) -> String {
    let text = repo_plan_text(plan);
    let (Some(start), Some(end)) = (text.find("\nnemesis:\n"), text.find("\nfinal_phase:\n")) else {
        panic!("{plan} has a nemesis section followed by final_phase");
    };
    let light = "\nnemesis:\n  process:\n    interval: 5s\n    faults:\n      \
                 - {kind: kill, targets: primary, duration: 1s..2s, weight: 2}\n      \
                 - {kind: kill, targets: backup, duration: 1s..2s}\n      \
                 - {kind: pause, targets: one, duration: 500ms..1500ms}\n  network:\n    interval: 8s\n    \
                 partitions:\n      - {shape: isolate-primary, duration: 1s..3s}";
    with_bug(&format!("{}{light}{}", &text[..start], &text[end..]), bug)
}

/// Takes the one-cluster lock (a panicking test does not poison it for the others).
pub fn one_cluster() -> std::sync::MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `faultline` binary under test.
pub fn faultline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
}

/// `faultline run PLAN --quiet --seed SEED --time-limit LIMIT --store STORE`.
pub fn run_command(plan: &str, seed: &str, time_limit: &str, store: &Path) -> Command {
    let store = store.to_str().expect("a UTF-8 store path");
    let mut command = faultline();
    command.args([
        "run",
        plan,
        "--quiet",
        "--seed",
        seed,
        "--time-limit",
        time_limit,
        "--store",
        store,
    ]);
    command
}

/// A plan file of `plans/`, as text.
pub fn repo_plan_text(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans").join(name)).unwrap()
}

/// Writes `text` as `dir/plan.yaml`.
pub fn write_plan(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `faultline run --quiet --store STORE PLAN [extra args]`.
pub fn run_plan_with(store: &Path, plan: &Path, extra: &[&str]) -> Output {
    faultline()
        .args(["run", "--quiet"])
        .args(extra)
        .arg("--store")
        .arg(store)
        .arg(plan)
        .output()
        .unwrap()
}

/// The run folder `store/latest` points at.
pub fn latest(store: &Path) -> PathBuf {
    store.join("latest").canonicalize().expect("store/latest exists")
}

/// A run's history as JSON values.
pub fn history(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A run's results.json.
/// The index of the `restart-all` event, after asserting that each of `nodes` has an event named `f` (`boot-ok`,
/// `verify-ok`) after it.
pub fn after_restart_all(events: &[Value], nodes: &[&str], f: &str) -> usize {
    let restart_all = events
        .iter()
        .position(|e| e["f"] == "restart-all")
        .expect("a restart-all event");
    for node in nodes {
        assert!(
            events[restart_all..].iter().any(|e| e["f"] == f && e["node"] == *node),
            "{node} has no {f} after the restart-all"
        );
    }
    restart_all
}

pub fn results(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap()).unwrap()
}

/// A failed command's output, for assertion messages.
pub fn explain(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `plan` with `args: ["--bug", bug]` added to its 3-node system, when `bug` is given.
pub fn with_bug(plan: &str, bug: Option<&str>) -> String {
    match bug {
        Some(bug) => {
            assert!(plan.contains("\n  nodes: 3\n"), "the plan has a system with `nodes: 3`");
            plan.replace(
                "\n  nodes: 3\n",
                &format!("\n  nodes: 3\n  args: [\"--bug\", \"{bug}\"]\n"),
            )
        }
        None => plan.to_string(),
    }
}

/// The check named `name` of a results.json.
pub fn check<'a>(results: &'a Value, name: &str) -> &'a Value {
    results["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no `{name}` check in {results:#}"))
}

/// A finished `faultline run` of a plan in a fresh temporary store (deleted when this is dropped).
pub struct Run {
    /// What the command printed and how it exited.
    pub output: Output,
    /// The run's store folder.
    pub run_dir: PathBuf,
    _store: tempfile::TempDir,
}

/// Runs plan `text` (with `extra` arguments) in a fresh temporary store.
pub fn run_text(text: &str, extra: &[&str]) -> Run {
    let store = tempfile::tempdir().unwrap();
    let plan = write_plan(store.path(), text);
    let output = run_plan_with(&store.path().join("store"), &plan, extra);
    let run_dir = latest(&store.path().join("store"));
    Run {
        output,
        run_dir,
        _store: store,
    }
}

/// A test prerequisite: under `CI=true` its absence fails the test with the reason; elsewhere the test skips.
pub fn prerequisite(what: &str, result: Result<(), String>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("CI needs {what}: {e}"),
        Err(e) => {
            eprintln!("skipping: {what}: {e}");
            false
        }
    }
}

/// Root, `ip` and `nft` (the netns network backend)?
pub fn netns_ready() -> bool {
    prerequisite(
        "the netns backend",
        faultline_faults::network::netns::check_tools().map_err(|e| e.to_string()),
    )
}

/// Root and /dev/fuse (the fault filesystem)?
pub fn fuse_ready() -> bool {
    prerequisite("the fault filesystem", faultline_faults::fusefs::fuse_available())
}

/// Live (not zombie) processes whose environment carries `FAULTLINE_RUN_ID=<run_id>`.
pub fn tagged_processes(run_id: &str) -> Vec<i32> {
    let needle = format!("FAULTLINE_RUN_ID={run_id}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        if !zombie && environ.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// The run's results.json, once it exited with `code` (else the test fails with the run's output and results).
pub fn assert_exit(run: &Run, code: i32) -> Value {
    let results = results(&run.run_dir);
    assert_eq!(
        run.output.status.code(),
        Some(code),
        "{}\n{results:#}",
        explain(&run.output)
    );
    results
}

/// Asserts the run's clients completed at least one `ok` of each of `fs`: a valid verdict on a workload that did
/// nothing proves nothing. (How many depends on the machine: under a CPU hog a 12 s run saw 12.)
pub fn assert_did_real_work(events: &[Value], fs: &[&str]) {
    let oks = |f: &str| events.iter().filter(|e| e["kind"] == "ok" && e["f"] == f).count();
    let counts: Vec<String> = fs.iter().map(|f| format!("{} ok {f}", oks(f))).collect();
    assert!(
        fs.iter().all(|f| oks(f) > 0),
        "the clients did real work: {}",
        counts.join(", ")
    );
}

/// Asserts no process tagged with the run's id (nodes, clients, status processes) is alive after it.
pub fn assert_no_process_left(events: &[Value]) {
    let start = events
        .iter()
        .find(|e| e["f"] == "run-start")
        .expect("a run-start event");
    let run_id = start["value"]["run_id"].as_str().expect("a run id");
    let left = tagged_processes(run_id);
    assert!(left.is_empty(), "processes of run {run_id} are left after it: {left:?}");
}
