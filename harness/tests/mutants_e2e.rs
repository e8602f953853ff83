//! Mutants found from the outside: `faultline run` drives real reference nodes, with a documented bug switched on
//! (`system.args: ["--bug", NAME]`), through a scripted plan, and must end invalid for the right reason, while the
//! correct node passes the same plan.
//!
//! `FAULTLINE_REPEAT=20 cargo test --release -p faultline --test mutants_e2e` repeats each scenario with seeds
//! 1..=20 (default: once, so CI stays short). Runs go one at a time (a lock below): several clusters at once on a
//! 2-core machine would make the scripted timings unreliable.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

fn faultline() -> Command {
    Command::new(env!("CARGO_BIN_EXE_faultline"))
}

/// How many seeds each scenario runs (`FAULTLINE_REPEAT`, default 1).
fn repeat() -> u64 {
    std::env::var("FAULTLINE_REPEAT")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// A plan of `plans/`, with `args: ["--bug", bug]` added to its system when `bug` is given.
fn repo_plan(name: &str, bug: Option<&str>) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans").join(name)).unwrap();
    match bug {
        Some(bug) => {
            assert!(text.contains("\n  nodes: 3\n"), "the plan has a system with `nodes: 3`");
            text.replace(
                "\n  nodes: 3\n",
                &format!("\n  nodes: 3\n  args: [\"--bug\", \"{bug}\"]\n"),
            )
        }
        None => text,
    }
}

fn write_plan(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run_plan(store: &Path, plan: &Path, seed: u64) -> Output {
    faultline()
        .args(["run", "--quiet", "--seed", &seed.to_string(), "--store"])
        .arg(store)
        .arg(plan)
        .output()
        .unwrap()
}

fn latest(store: &Path) -> PathBuf {
    store.join("latest").canonicalize().expect("store/latest exists")
}

fn history(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("history.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn results(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("results.json")).unwrap()).unwrap()
}

fn explain(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

const REWIND_PLAN: &str = "mutant-repair-rewinds-parent.yaml";

/// One run of the scripted repair-rewinds-parent plan.
struct RewindRun {
    output: Output,
    events: Vec<Value>,
    results: Value,
    /// n2's node log (every start of it).
    n2_log: String,
}

fn run_rewind_plan(bug: Option<&str>, seed: u64) -> RewindRun {
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), &repo_plan(REWIND_PLAN, bug));
    let store = dir.path().join("store");
    let output = run_plan(&store, &plan, seed);
    let run_dir = latest(&store);
    RewindRun {
        output,
        events: history(&run_dir),
        results: results(&run_dir),
        n2_log: std::fs::read_to_string(run_dir.join("nodes/n2/node.log")).unwrap_or_default(),
    }
}

#[test]
fn given_the_scripted_rewind_plan_when_the_node_has_repair_rewinds_parent_should_refuse_to_boot_with_does_not_chain() {
    let _one = ONE_CLUSTER_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for seed in 1..=repeat() {
        let RewindRun {
            output,
            events,
            results,
            ..
        } = run_rewind_plan(Some("repair-rewinds-parent"), seed);
        assert_eq!(
            output.status.code(),
            Some(1),
            "seed {seed}: the mutant must make the run invalid\n{}\n{results:#}",
            explain(&output)
        );
        assert_eq!(results["verdict"], "invalid", "seed {seed}: {results:#}");
        let refusal = events.iter().find(|e| {
            e["kind"] == "lifecycle"
                && e["f"] == "boot-refused"
                && e["value"]["line"]
                    .as_str()
                    .is_some_and(|line| line.contains("does not chain"))
        });
        assert!(
            refusal.is_some(),
            "seed {seed}: no boot-refused event saying `does not chain`\n{results:#}"
        );
    }
}

#[test]
fn given_the_scripted_rewind_plan_when_the_node_is_correct_should_be_valid() {
    let _one = ONE_CLUSTER_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for seed in 1..=repeat() {
        let RewindRun {
            output,
            events,
            results,
            n2_log,
        } = run_rewind_plan(None, seed);
        assert_eq!(
            output.status.code(),
            Some(0),
            "seed {seed}: the correct node must pass the scripted plan\n{}\n{results:#}",
            explain(&output)
        );
        assert_eq!(results["verdict"], "valid", "seed {seed}: {results:#}");
        assert!(
            events.iter().any(|e| e["f"] == "restart-all"),
            "seed {seed}: the final phase reached the restart-all"
        );
        assert!(
            !events.iter().any(|e| e["f"] == "boot-refused"),
            "seed {seed}: no refusal without the bug"
        );
        // Not vacuous: the correct n2 went through the same gap repair the mutant gets wrong.
        assert!(
            n2_log.contains("repair start source=0"),
            "seed {seed}: n2 never repaired a gap from n1: the schedule missed its window\n{n2_log}"
        );
    }
}
