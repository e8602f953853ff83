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

/// `plans/exec-reference.yaml` with its client path made absolute, its stop command replaced by one that does not
/// stop the node (it ignores the request), and one scripted graceful stop.
fn exec_stop_plan() -> String {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-reference.yaml").replace("{plan_dir}", &plans.display().to_string());
    let start = text.find("\nnemesis:\n").unwrap();
    let end = text.find("\nfinal_phase:\n").unwrap();
    let limit = text.lines().find(|l| l.starts_with("time_limit:")).unwrap().to_string();
    let stop = text.lines().find(|l| l.starts_with("  stop: [")).unwrap().to_string();
    format!(
        "{}\nnemesis:\n  process:\n    script:\n      - {{at: 2s, kind: stop, targets: [n1], duration: 1s, grace: 1500ms}}{}",
        &text[..start],
        &text[end..]
    )
    .replace(&limit, "time_limit: 8s\nseed: 3")
    .replace(&stop, "  stop: [\"true\"]")
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

/// A rolling fault's events in history order: `(f, node)` of its `stop`/`kill`/`corrupt`, `start`, `rolling-ready`,
/// and of every `boot-ok` in the fault phase; after asserting that each node of n1..n3 had one step, in that order.
fn rolling_steps<'a>(events: &'a [Value], down: &str) -> Vec<(&'a str, &'a str)> {
    let phase_start = events.iter().position(|e| e["f"] == "schedule").unwrap();
    let phase_end = events.iter().position(|e| e["f"] == "fault-phase-end").unwrap();
    let steps: Vec<(&str, &str)> = events[phase_start..phase_end]
        .iter()
        .filter(|e| {
            let rolling = e["kind"] == "nemesis" && !e["value"]["rolling"].is_null();
            rolling || (e["kind"] == "lifecycle" && e["f"] == "boot-ok")
        })
        .map(|e| (e["f"].as_str().unwrap(), e["node"].as_str().unwrap()))
        .collect();
    let downs: Vec<&str> = steps.iter().filter(|(f, _)| *f == down).map(|(_, n)| *n).collect();
    assert_eq!(downs, ["n1", "n2", "n3"], "one step per node, in node order: {steps:?}");
    for event in events.iter().filter(|e| !e["value"]["rolling"].is_null()) {
        let target = if event["f"] == down {
            Value::from("each")
        } else {
            Value::Null
        };
        assert_eq!(event["value"]["target"], target, "{event}");
        assert!(event["value"].get("error").is_none(), "{event}");
    }
    steps
}

/// At no point of `steps` is more than one node down or booting: each node is stopped, restarted and booted, and
/// ready again (`rolling-ready`), before the next one goes down.
fn assert_one_at_a_time(steps: &[(&str, &str)], down: &str) {
    let mut away: Vec<&str> = Vec::new(); // down, or restarted and not yet ready again
    for &(f, node) in steps {
        match f {
            "rolling-ready" => {
                assert_eq!(away, [node], "ready again: {steps:?}");
                away.clear();
            }
            "start" | "boot-ok" => {}
            _ if f == down => {
                assert!(
                    away.is_empty(),
                    "{node} went down while {away:?} was not ready again: {steps:?}"
                );
                away.push(node);
            }
            _ => {}
        }
    }
    assert!(
        away.is_empty(),
        "the last node was ready again before the phase ended: {steps:?}"
    );
    for node in ["n1", "n2", "n3"] {
        let at = |f: &str| steps.iter().position(|s| *s == (f, node)).unwrap();
        assert!(at(down) < at("start") && at("start") < at("boot-ok") && at("boot-ok") < at("rolling-ready"));
    }
}

/// A rolling graceful restart (`targets: each`): n1, n2, n3 each asked to stop, exiting on their own, restarted after
/// the fault's duration, and ready again before the next goes down; the correct node loses nothing.
#[test]
fn given_a_rolling_graceful_restart_when_run_should_stop_and_restart_every_node_one_at_a_time_and_stay_valid() {
    let _one = one_cluster();
    let script = "      - {at: 1s, kind: stop, targets: each, duration: 1s, grace: 5s}\n";
    let run = run_text(&scripted(script, ""), &[]);
    let events = history(&run.run_dir);
    let steps = rolling_steps(&events, "stop");
    assert_one_at_a_time(&steps, "stop");
    for stop in nemesis(&events, "stop") {
        assert_eq!(stop["value"]["killed"], false, "{stop}");
        assert!(
            stop["value"]["ended"].as_str().unwrap().starts_with("exited 0 after"),
            "{stop}"
        );
        assert_eq!(stop["value"]["rolling"]["of"], 3, "{stop}");
    }
    let results = results(&run.run_dir);
    assert_eq!(results["verdict"], "valid", "{}", explain(&run.output));
    let coverage = results["coverage"]["states"].as_array().unwrap().clone();
    let state = |name: &str| coverage.iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(state("rolling-restart")["count"], 1, "{coverage:#?}");
    assert_eq!(state("graceful-stop")["count"], 3, "{coverage:#?}");
    assert_eq!(state("majority-down")["reached"], false, "{coverage:#?}");
}

/// A rolling corruption: each node's WAL tail cut in turn, and the next node cut only once the last one caught up
/// again as the history records it, so the checks never see two damaged nodes at once (no majority damage), and the
/// correct node loses nothing.
#[test]
fn given_a_rolling_corrupt_when_run_should_damage_one_node_at_a_time_and_never_a_majority() {
    let _one = one_cluster();
    let script = "      - {at: 1s, kind: corrupt, targets: each, duration: 500ms, \
                  cuts: [{op: truncate-tail, files: wal, max_bytes: 4096}]}\n";
    let run = run_text(&scripted(script, ""), &[]);
    let events = history(&run.run_dir);
    let steps = rolling_steps(&events, "corrupt");
    assert_one_at_a_time(&steps, "corrupt");
    let cuts: Vec<&str> = nemesis(&events, "disk-surgery")
        .into_iter()
        .filter(|e| !e["value"]["fault_id"].is_null())
        .map(|e| e["node"].as_str().unwrap())
        .collect();
    assert_eq!(cuts, ["n1", "n2", "n3"]);
    for ready in nemesis(&events, "rolling-ready") {
        assert!(
            ready["value"]["caught_up"].is_u64(),
            "waited until it caught up: {ready}"
        );
    }
    let stored = faultline_workloads::History::read_jsonl(&run.run_dir.join("history.jsonl")).unwrap();
    let damage = faultline_workloads::checker::damage::live_damage(&stored);
    assert_eq!(damage.cuts.len(), 3, "{damage:?}");
    assert_eq!(damage.majority, None, "never two damaged nodes at once: {damage:?}");
    let results = results(&run.run_dir);
    assert_eq!(results["verdict"], "valid", "{}", explain(&run.output));
}

/// `targets: each` where it cannot work is refused before anything starts, at its line.
#[test]
fn given_a_rolling_pause_when_checked_should_exit_254_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let text = scripted("      - {at: 2s, kind: pause, targets: each, duration: 1s}\n", "");
    let plan = write_plan(dir.path(), &text);
    let output = faultline().args(["plan", "--check"]).arg(&plan).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(254), "{stderr}");
    let line = text.lines().position(|l| l.contains("targets: each")).unwrap() + 1;
    assert!(
        stderr.contains(&format!("plan.yaml:{line}:")),
        "no line {line} in: {stderr}"
    );
    assert!(stderr.contains("a pause restarts nothing"), "{stderr}");
    let ok = scripted("      - {at: 2s, kind: stop, targets: each, duration: 1s}\n", "");
    let output = faultline()
        .args(["plan", "--check"])
        .arg(write_plan(dir.path(), &ok))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", explain(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("targets: each"));
}

/// A cut that fails ("nothing to cut": no file matches) damages nothing: a rolling `corrupt` whose cuts all fail
/// waits for each node to boot, never for it to catch up with what the cluster had at a cut that did not happen.
#[test]
fn given_a_rolling_corrupt_whose_cuts_fail_when_run_should_not_count_any_node_damaged() {
    let _one = one_cluster();
    let script = "      - {at: 1s, kind: corrupt, targets: each, duration: 500ms, \
                  cuts: [{op: truncate-tail, files: 'no-such-file-*', max_bytes: 4096}]}\n";
    let run = run_text(&scripted(script, ""), &[]);
    let events = history(&run.run_dir);
    let cuts = nemesis(&events, "disk-surgery");
    assert_eq!(cuts.len(), 3, "{cuts:?}");
    assert!(
        cuts.iter().all(|c| c["value"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("nothing to cut"))),
        "{cuts:?}"
    );
    let ready = nemesis(&events, "rolling-ready");
    assert_eq!(ready.len(), 3, "{ready:?}");
    for step in ready {
        assert!(
            step["value"]["caught_up"].is_null(),
            "an undamaged node was waited for: {step}"
        );
    }
    let results = results(&run.run_dir);
    assert_eq!(results["verdict"], "valid", "{}", explain(&run.output));
}

/// n3 refuses on a live cut the fault phase heals at its very end (after the phase's last look for refusals), and the
/// restart-all's surgery then damages n1: n3 is wiped and rejoins at the start of the final phase, before the
/// restart-all, so n1's refusal still leaves a majority (n2, n3) to wipe it against, and the run ends valid.
#[test]
fn given_a_refusal_at_the_very_end_of_the_fault_phase_and_surgery_on_another_node_should_wipe_it_before_the_restart_all(
) {
    let _one = one_cluster();
    let plan = "name: live-faults\nseed: 5\ntime_limit: 8s\nsystem: {kind: reference, nodes: 3}\n\
         workload: {kind: register, concurrency: 4, rate: 80, keys: 2, ops_per_key: 150, mix: {read: 4, write: 4, cas: 2}, op_timeout: 1500ms}\n\
         nemesis:\n  process:\n    script:\n\
         \x20     - {at: 7500ms, kind: corrupt, targets: [n3], duration: 500ms, stop: graceful, cuts: [{op: flip-bits, files: wal, region: interior, bits: 3}]}\n\
         final_phase:\n  after_refusal: wipe\n  recovery_timeout: 20s\n  convergence_timeout: 20s\n\
         \x20 surgery:\n    - {node: n1, cut: {op: flip-bits, files: wal, region: interior, bits: 3}}\n";
    let run = run_text(plan, &[]);
    let events = history(&run.run_dir);
    let position = |f: &str, node: Option<&str>| {
        events
            .iter()
            .position(|e| e["kind"] == "lifecycle" && e["f"] == f && node.is_none_or(|node| e["node"] == node))
    };
    let phase_end = position("fault-phase-end", None).expect("the fault phase ended");
    let restart_all = position("restart-all", None).expect("a restart-all");
    let n3_wiped =
        position("wipe", Some("n3")).unwrap_or_else(|| panic!("n3 was never wiped: {}", explain(&run.output)));
    assert!(
        phase_end < n3_wiped && n3_wiped < restart_all,
        "n3 is wiped in the final phase, before the restart-all (events {phase_end}, {n3_wiped}, {restart_all})"
    );
    let n1_wiped = events[restart_all..]
        .iter()
        .any(|e| e["kind"] == "lifecycle" && e["f"] == "wipe" && e["node"] == "n1");
    assert!(
        n1_wiped,
        "n1 refused after the surgery and was wiped: {}",
        explain(&run.output)
    );
    let results = results(&run.run_dir);
    assert_ne!(results["verdict"], "invalid", "{}", explain(&run.output));
    assert_eq!(
        check(&results, "liveness")["verdict"],
        "valid",
        "{}",
        explain(&run.output)
    );
}
