//! Faults on a live cluster: graceful stops and the corruption of one node's files while the others serve, end to
//! end on real reference nodes (and through the exec adapter), and the plan mistakes they can be written with.

mod support;

use serde_json::Value;
use std::path::Path;
use support::*;

/// A 3-node reference plan without random faults: only `script` (process faults), a 12 s phase.
fn scripted(script: &str, disk: &str) -> String {
    format!(
        "name: live-faults\nseed: 5\ntime_limit: 12s\nsystem: {{kind: reference, nodes: 3}}\n{disk}\
         workload: {{kind: register, concurrency: 4, rate: 80, keys: 2, ops_per_key: 150, mix: {{read: 4, write: 4, cas: 2}}, op_timeout: 1500ms}}\n\
         nemesis:\n  process:\n    script:\n{script}\
         final_phase: {{after_refusal: wipe, recovery_timeout: 20s, convergence_timeout: 20s}}\n"
    )
}

fn nemesis<'a>(events: &'a [Value], f: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["kind"] == "nemesis" && e["f"] == f)
        .collect()
}

/// A graceful stop ends with the node's own clean exit (the reference node syncs its WAL on SIGTERM); a corrupt
/// fault takes its node down, cuts it (recorded as `disk-surgery` of that fault) and restarts it; a node that
/// refuses to boot on the damage is wiped and rejoins during the fault phase; and the correct node loses nothing.
#[test]
fn given_a_graceful_stop_and_cuts_on_one_live_node_when_run_should_record_each_and_the_correct_node_survive() {
    let _one = one_cluster();
    let script = "      - {at: 2s, kind: stop, targets: [n2], duration: 1s, grace: 5s}\n\
                  \x20     - {at: 4s, kind: corrupt, targets: [n3], duration: 500ms, cuts: [{op: truncate-tail, files: wal, max_bytes: 4096}]}\n\
                  \x20     - {at: 6s, kind: corrupt, targets: [n3], duration: 500ms, stop: graceful, cuts: [{op: flip-bits, files: wal, region: interior, bits: 3}]}\n";
    let run = run_text(&scripted(script, ""), &[]);
    let events = history(&run.run_dir);
    let stops = nemesis(&events, "stop");
    assert_eq!(stops.len(), 1, "{stops:?}");
    assert_eq!(stops[0]["node"], "n2");
    assert_eq!(stops[0]["value"]["killed"], false, "{:?}", stops[0]);
    let ended = stops[0]["value"]["ended"].as_str().unwrap();
    assert!(ended.starts_with("exited 0 after"), "{ended}");
    let corrupts = nemesis(&events, "corrupt");
    assert_eq!(corrupts.len(), 2, "{corrupts:?}");
    assert_eq!(corrupts[0]["value"]["stop"], "kill");
    assert_eq!(corrupts[1]["value"]["stop"], "graceful");
    let cuts: Vec<&Value> = nemesis(&events, "disk-surgery")
        .into_iter()
        .filter(|e| !e["value"]["fault_id"].is_null())
        .collect();
    let ops: Vec<&str> = cuts
        .iter()
        .map(|e| e["value"]["surgery"]["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["truncate-tail", "flip-bits"], "{cuts:?}");
    assert!(cuts.iter().all(|e| e["node"] == "n3"));
    // Interior damage: n3 refuses to boot, is wiped in the fault phase and boots again.
    let n3: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "lifecycle" && e["node"] == "n3")
        .filter_map(|e| e["f"].as_str())
        .collect();
    let refused = n3
        .iter()
        .position(|f| *f == "boot-refused")
        .expect("n3 refuses its damaged WAL");
    assert_eq!(n3[refused + 1], "wipe", "{n3:?}");
    assert!(n3[refused + 1..].contains(&"boot-ok"), "{n3:?}");
    let results = results(&run.run_dir);
    assert_eq!(results["verdict"], "valid", "{}", explain(&run.output));
    let coverage = &results["coverage"]["states"];
    let reached = |name: &str| {
        coverage
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == name && s["reached"] == true)
    };
    assert!(
        reached("graceful-stop") && reached("cut-truncate-tail") && reached("cut-flip-bits"),
        "{coverage:#}"
    );
}

/// `plans/exec-reference.yaml` with its client path made absolute, a stop command that does not stop the node (it
/// ignores the request), and one scripted graceful stop.
fn exec_stop_plan() -> String {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-reference.yaml").replace("{plan_dir}", &plans.display().to_string());
    let start = text.find("\nnemesis:\n").unwrap();
    let end = text.find("\nfinal_phase:\n").unwrap();
    let limit = text.lines().find(|l| l.starts_with("time_limit:")).unwrap().to_string();
    format!(
        "{}\nnemesis:\n  process:\n    script:\n      - {{at: 2s, kind: stop, targets: [n1], duration: 1s, grace: 1500ms}}{}",
        &text[..start],
        &text[end..]
    )
    .replace(&limit, "time_limit: 8s\nseed: 3")
    .replace("  verify: [", "  stop: [\"true\"]\n  verify: [")
}

/// A node that does not stop when asked is SIGKILLed after its grace, and the history says so.
#[test]
fn given_a_node_that_ignores_the_stop_request_when_stopped_should_be_killed_after_the_grace_and_recorded_so() {
    let _one = one_cluster();
    let plan = exec_stop_plan();
    assert!(plan.contains("stop: [\"true\"]"), "{plan}");
    let run = run_text(&plan, &[]);
    let events = history(&run.run_dir);
    let stops = nemesis(&events, "stop");
    assert_eq!(stops.len(), 1, "{}", explain(&run.output));
    let value = &stops[0]["value"];
    assert_eq!(value["killed"], true, "{value}");
    assert_eq!(value["ended"], "killed after the grace (1.5 s)", "{value}");
    assert_eq!(value["command"], "true", "{value}");
    assert!(value["after_ms"].as_u64().unwrap() >= 1500, "{value}");
    assert_eq!(nemesis(&events, "start").len(), 1, "restarted when the fault ended");
    let results = results(&run.run_dir);
    assert_eq!(check(&results, "boot")["verdict"], "valid", "{results:#}");
}

/// Mistakes in stop and corrupt faults are refused before anything starts, at the fault's line.
#[test]
fn given_bad_stop_and_corrupt_faults_when_checked_should_exit_254_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let fault = |spec: &str| format!("      - {{at: 2s, targets: [n2], duration: 1s, {spec}}}\n");
    let cases = [
        (
            scripted(
                &fault("kind: corrupt, cuts: [{op: truncate-tail, files: journal, max_bytes: 10}]"),
                "",
            ),
            "`files: journal` is no file class of this system (wal, snapshot, superblock)",
        ),
        (
            scripted(&fault("kind: corrupt, cuts: [{op: restore-chunk, name: never}]"), ""),
            "restore-chunk `never`: no cut of the plan takes a snapshot-chunk named `never`",
        ),
        (scripted(&fault("kind: stop, grace: 0s"), ""), "grace must be > 0"),
        (
            scripted(&fault("kind: kill, cuts: [{op: delete-file, files: wal}]"), ""),
            "`cuts` belong to `kind: corrupt`",
        ),
        (
            scripted(
                &fault("kind: corrupt, stop: power-loss, cuts: [{op: delete-file, files: wal}]"),
                "",
            ),
            "power-loss needs the fault filesystem",
        ),
    ];
    for (text, message) in cases {
        let plan = write_plan(dir.path(), &text);
        let output = faultline().args(["plan", "--check"]).arg(&plan).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(254), "{stderr}");
        let line = text.lines().position(|l| l.contains("at: 2s")).unwrap() + 1;
        assert!(
            stderr.contains(&format!("plan.yaml:{line}:")),
            "no line {line} in: {stderr}"
        );
        assert!(stderr.contains(message), "{stderr}");
    }
    // minority_damage on a cluster with no minority to lose.
    let one_node = scripted(&fault("kind: stop"), "disk:\n  minority_damage: tolerate\n")
        .replace("nodes: 3", "nodes: 1")
        .replace("targets: [n2]", "targets: [n1]");
    let plan = write_plan(dir.path(), &one_node);
    let output = faultline().args(["plan", "--check"]).arg(&plan).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(254), "{stderr}");
    let line = one_node.lines().position(|l| l.contains("minority_damage")).unwrap() + 1;
    assert!(
        stderr.contains(&format!("plan.yaml:{line}:")),
        "no line {line} in: {stderr}"
    );
    assert!(stderr.contains("a 1-node cluster has none"), "{stderr}");
}
