//! End-to-end runs of `faultline run` against real reference nodes on loopback.
//!
//! Each run picks its own random loopback address, so these never collide with other tests; they are still run one
//! at a time (`support::one_cluster`), because several clusters at once on a 2-core machine would make timing-sensitive
//! verdicts (recovery bounds) flaky.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{
    after_restart_all, assert_exit, check, explain, faultline, fuse_ready, history, latest, netns_ready, one_cluster,
    repo_plan_text, results, run_text, tagged_processes, with_bug, write_plan,
};

fn default_plan() -> String {
    repo_plan_text("default.yaml")
}

/// The default plan with a short fault phase and frequent faults, so a ~10 s run sees kills, pauses and restarts.
/// Without the new-primary triggers (the last ones of plans/default.yaml): with a primary change every second or
/// two, slowing and then dropping each new primary leaves a 10 s workload almost nothing to do (about 50 ok ops
/// measured); the trigger tests below cover triggers.
fn short_plan(seed: u64, time_limit: &str) -> String {
    let plan = default_plan();
    let start = plan
        .find("    - when: {primary-changed: any}")
        .expect("the new-primary triggers of plans/default.yaml");
    let end = plan.find("final_phase:").expect("a final phase");
    format!("{}{}", &plan[..start], &plan[end..])
        .replace("time_limit: 60s", &format!("time_limit: {time_limit}\nseed: {seed}"))
        .replace("interval: 6s", "interval: 1500ms")
        .replace("mean_up: 20s", "mean_up: 6s")
        .replace("every: 20s", "every: 60s")
}

fn count(events: &[Value], kind: &str, f: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind && e["f"] == f).count()
}

#[test]
fn given_a_short_default_plan_when_run_should_kill_restart_restart_all_boot_every_node_and_be_valid() {
    let _one = one_cluster();
    let run = run_text(&short_plan(7, "10s"), &[]);
    let output = &run.output;
    assert_eq!(output.status.code(), Some(0), "{}", explain(output));
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    assert!(count(&events, "nemesis", "kill") >= 1, "no kill in the fault phase");
    assert!(count(&events, "nemesis", "start") >= 1, "no restart in the fault phase");
    after_restart_all(&events, &["n1", "n2", "n3"], "boot-ok");
    after_restart_all(&events, &["n1", "n2", "n3"], "verify-ok");
    let results = results(run_dir);
    assert_eq!(results["verdict"], "valid", "{results:#}");
    // Every node was stopped and booted again at least in the restart-all, each boot judged against what it had.
    let durability = check(&results, "durability");
    assert_eq!(durability["verdict"], "valid", "{durability:#}");
    assert!(durability["details"]["judged"].as_u64().unwrap() >= 3, "{durability:#}");
    assert!(
        results["counts"]["ok"].as_u64().unwrap() > 100,
        "too few ops: {}",
        results["counts"]
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap();
    assert!(
        last.contains("VALID") && last.contains(&run_dir.file_name().unwrap().to_string_lossy().to_string()),
        "{last}"
    );
    assert!(
        !run_dir.join("nodes/n1/data").exists(),
        "a valid run removes the data dirs"
    );
}

/// A plan whose faults come mostly from triggers: timed kills of backups make restarts, and each restart fires a
/// kill of the node that just came back after a drawn delay.
fn trigger_plan(seed: u64) -> String {
    format!(
        "name: triggers\nseed: {seed}\ntime_limit: 12s\nsystem: {{kind: reference, nodes: 3}}\n\
         workload: {{kind: register, concurrency: 4, rate: 60, keys: 3, ops_per_key: 150, op_timeout: 1500ms,\n\
         \x20 mix: {{read: 4, write: 4, cas: 2}}}}\n\
         nemesis:\n  process:\n    interval: 1500ms\n    faults: [{{kind: kill, targets: backup, duration: 500ms..1s}}]\n\
         \x20 triggers:\n\
         \x20   - when: {{restarted: any}}\n      after: 200ms..400ms\n      cooldown: 500ms\n      max_fires: 3\n\
         \x20     do: {{kind: kill, targets: subject, duration: 300ms..600ms}}\n\
         \x20   - when: {{log: \"view change started\"}}\n      max_fires: 2\n\
         \x20     do: {{kind: pause, targets: subject, duration: 200ms}}\n\
         final_phase: {{recovery_timeout: 20s, convergence_timeout: 20s, boot_timeout: 20s, restart_all: true}}\n"
    )
}

#[test]
fn given_triggers_when_nodes_restart_should_fault_the_observed_subject_after_the_drawn_delay_and_record_why() {
    let _one = one_cluster();
    let run = run_text(&trigger_plan(5), &[]);
    assert_eq!(run.output.status.code(), Some(0), "{}", explain(&run.output));
    let events = history(&run.run_dir);
    let ms = |e: &Value| e["time_ns"].as_u64().unwrap() / 1_000_000;
    let fired: Vec<&Value> = events
        .iter()
        .filter(|e| e["f"] == "trigger" && e["value"]["condition"] == "restarted" && e["value"]["fault_id"].is_u64())
        .collect();
    assert!(
        !fired.is_empty(),
        "timed kills restart backups, so the restart trigger fires"
    );
    for firing in &fired {
        let value = &firing["value"];
        let subject = value["subject"].as_str().unwrap();
        let fault_id = &value["fault_id"];
        let kill = events
            .iter()
            .find(|e| e["kind"] == "nemesis" && e["f"] == "kill" && e["value"]["fault_id"] == *fault_id)
            .unwrap_or_else(|| panic!("no kill for {firing}"));
        assert_eq!(kill["node"], subject, "the trigger kills its subject: {kill}");
        assert_eq!(kill["value"]["source"], "triggered");
        assert_eq!(kill["value"]["trigger"], 0);
        // The subject became ready before the kill, at least the drawn delay before it.
        let boot = events
            .iter()
            .rev()
            .find(|e| e["f"] == "boot-ok" && e["node"] == subject && e["index"].as_u64() < kill["index"].as_u64())
            .expect("a boot-ok of the subject before the triggered kill");
        let delay = value["delay_ms"].as_u64().unwrap();
        assert!((200..=400).contains(&delay), "{value}");
        assert!(
            ms(kill) >= ms(boot) + delay,
            "kill at {} ms, boot-ok at {} ms, delay {delay}",
            ms(kill),
            ms(boot)
        );
    }
    assert!(fired.len() <= 3, "max_fires: {}", fired.len());
    let results = results(&run.run_dir);
    assert_eq!(results["verdict"], "valid", "{results:#}");

    // Its exact replay: the recorded timed faults at their recorded offsets (or, within 2 s of a node becoming
    // ready, after that restart), and each firing as a one-shot trigger anchored to the condition (and subject)
    // that fired it.
    let (_, recorded) = faultline::explore::replay::load(&run.run_dir).unwrap();
    let timed: Vec<_> = recorded.faults.iter().filter(|f| f.anchor.is_none()).collect();
    let anchored: Vec<_> = recorded.faults.iter().filter_map(|f| f.anchor.as_ref()).collect();
    // Every firing that applied a fault (it names the fault), of either trigger, is anchored to its trigger's
    // condition; a timed fault anchored to a restart names no trigger.
    let firings = events
        .iter()
        .filter(|e| e["f"] == "trigger" && e["value"]["fault_id"].is_u64())
        .count();
    let fired = anchored.iter().filter(|a| a.trigger.is_some()).count();
    assert_eq!(fired, firings, "every firing is anchored: {recorded:?}");
    for anchor in anchored.iter().filter(|a| a.trigger.is_none()) {
        use faultline_faults::trigger::{Condition, NodeFilter};
        let Condition::Restarted(NodeFilter::Node(node)) = anchor.condition else {
            panic!("a timed fault is anchored to a node's restart: {anchor:?}");
        };
        let name = faultline_faults::process::node_name(node);
        let boot = events
            .iter()
            .find(|e| e["f"] == "boot-ok" && e["node"] == name.as_str());
        assert!(
            boot.is_some(),
            "a restart anchor names a node that restarted: {anchor:?}"
        );
        assert!(anchor.delay_ms <= 2000, "{anchor:?}");
    }
    let store = run.run_dir.parent().unwrap().parent().unwrap();
    let output = faultline()
        .args(["run", "--quiet", "--store"])
        .arg(store)
        .arg("--replay")
        .arg(&run.run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let replay_dir = latest(store);
    assert_ne!(replay_dir, run.run_dir);
    let text = std::fs::read_to_string(replay_dir.join("plan.yaml")).unwrap();
    assert!(
        text.contains(&format!("origin: replay of {}", run.run_dir.display())),
        "{text}"
    );
    let plan = faultline::plan::Plan::load(&replay_dir.join("plan.yaml")).unwrap();
    let script = plan
        .nemesis
        .process
        .as_ref()
        .map(|p| p.value.script.clone())
        .unwrap_or_default();
    let scripted: Vec<(u64, u64)> = script.iter().map(|s| (s.at.0, s.duration.0)).collect();
    let want: Vec<(u64, u64)> = timed.iter().map(|f| (f.start_ms, f.duration_ms)).collect();
    assert_eq!(scripted, want);
    assert!(
        plan.nemesis.process.as_ref().is_some_and(|p| p.value.faults.is_empty()),
        "nothing random is left"
    );
    assert_eq!(plan.nemesis.triggers.len(), anchored.len());
    for (trigger, anchor) in plan.nemesis.triggers.iter().zip(&anchored) {
        assert_eq!(trigger.value.when, anchor.condition);
        assert_eq!(trigger.value.max_fires, Some(1));
        assert!(trigger.value.not_before.unwrap().0 <= anchor.observed_ms);
        assert!(anchor.observed_ms < trigger.value.not_after.unwrap().0);
        assert!(trigger.value.otherwise.unwrap().0 >= trigger.value.not_after.unwrap().0 + anchor.delay_ms);
    }
    // What the replay applied: timed faults at scripted offsets (a role resolves when the fault starts, so the node
    // may differ, and a fault whose targets are all down is skipped; the first finds every node up), and anchored
    // faults whose observation did not come in their window at their trigger's `otherwise` (which of the two a
    // replay meets depends on its timing).
    let otherwise: Vec<u64> = plan
        .nemesis
        .triggers
        .iter()
        .filter_map(|t| t.value.otherwise.map(|o| o.0))
        .collect();
    let (_, replayed) = faultline::explore::replay::load(&replay_dir).unwrap();
    let applied: Vec<_> = replayed
        .faults
        .iter()
        .filter(|f| f.anchor.as_ref().is_none_or(|a| a.trigger.is_none()))
        .collect();
    assert!(!applied.is_empty(), "{replayed:?}");
    for fault in applied {
        assert!(
            timed.iter().any(|t| t.start_ms.abs_diff(fault.start_ms) < 1000)
                || otherwise.iter().any(|&at| at.abs_diff(fault.start_ms) < 1000),
            "{fault} is neither a scripted fault nor an anchored one at its `otherwise`: {timed:?}, {otherwise:?}"
        );
    }
}

/// Kills the child if the test panics before it does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn without_nemesis(plan: &str) -> String {
    let start = plan.find("nemesis:").unwrap();
    let end = plan.find("final_phase:").unwrap();
    format!("{}{}", &plan[..start], &plan[end..])
}

fn corrupt_plan(recorded: bool) -> String {
    let plan = without_nemesis(&short_plan(11, "4s"));
    plan.replace(
        "  restart_all: true",
        &format!("  restart_all: true\n  test_only_corrupt_wal: {{node: n2, recorded: {recorded}}}"),
    )
}

#[test]
fn given_recorded_wal_corruption_when_restarting_all_should_record_the_refusal_and_judge_it_legitimate() {
    let _one = one_cluster();
    let run = run_text(&corrupt_plan(true), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    let refused = events
        .iter()
        .find(|e| e["f"] == "boot-refused")
        .unwrap_or_else(|| panic!("no boot-refused: {}", explain(output)));
    assert_eq!(refused["node"], "n2");
    let line = refused["value"]["line"].as_str().unwrap();
    assert!(line.contains("refusing to boot"), "the node's own error line: {line}");
    let log = std::fs::read_to_string(run_dir.join("nodes/n2/node.log")).unwrap();
    assert!(log.contains(line), "the recorded line comes from n2's log");
    let results = results(run_dir);
    let boot = check(&results, "boot");
    assert_eq!(
        boot["verdict"], "valid",
        "a refusal after recorded surgery is legitimate: {boot:#}"
    );
    assert_eq!(output.status.code(), Some(0), "{}\n{results:#}", explain(output));
}

#[test]
fn given_a_refusal_on_a_disk_nothing_corrupted_when_checked_should_be_invalid() {
    let _one = one_cluster();
    let run = run_text(&corrupt_plan(false), &[]);
    let output = &run.output;
    assert_eq!(output.status.code(), Some(1), "{}", explain(output));
    let run_dir = &run.run_dir;
    let results = results(run_dir);
    assert_eq!(results["verdict"], "invalid");
    assert!(
        results["reason"]
            .as_str()
            .unwrap()
            .contains("refused to boot on a disk nothing corrupted"),
        "{results:#}"
    );
    assert!(
        run_dir.join("nodes/n2/data").exists(),
        "a failed run keeps its data dirs for post-mortem"
    );
}

#[test]
fn given_a_harness_killed_with_sigkill_mid_run_should_leave_no_node_alive() {
    let _one = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    // No nemesis: all three nodes must be up when the harness dies.
    let plan = write_plan(dir.path(), &without_nemesis(&short_plan(3, "60s")));
    let store = dir.path().join("store");
    let child = faultline()
        .args(["run", "--quiet", "--store"])
        .arg(&store)
        .arg(&plan)
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let started = Instant::now();
    let run_id = loop {
        // Generous: three node boots on a loaded 2-core machine; only a run that never gets going hits it.
        assert!(started.elapsed() < Duration::from_secs(60), "the run never got going");
        std::thread::sleep(Duration::from_millis(200));
        let Ok(run_dir) = store.join("latest").canonicalize().or_else(|_| find_run_dir(&store)) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(run_dir.join("history.jsonl")) else {
            continue;
        };
        if text.contains("\"cluster-ready\"") {
            let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            break first["value"]["run_id"].as_str().unwrap().to_string();
        }
    };
    assert_eq!(tagged_processes(&run_id).len(), 3, "three nodes run before the kill");
    child.0.kill().unwrap(); // SIGKILL
    child.0.wait().unwrap();
    // The kernel delivers the parent-death signal asynchronously: wait (bounded) for the nodes to go.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !tagged_processes(&run_id).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        tagged_processes(&run_id),
        Vec::<i32>::new(),
        "nodes outlived a SIGKILLed harness"
    );
}

fn find_run_dir(store: &Path) -> std::io::Result<PathBuf> {
    let plan_dir = std::fs::read_dir(store)?
        .flatten()
        .find(|e| e.path().is_dir())
        .ok_or(std::io::ErrorKind::NotFound)?;
    let run = std::fs::read_dir(plan_dir.path())?
        .flatten()
        .next()
        .ok_or(std::io::ErrorKind::NotFound)?;
    Ok(run.path())
}

#[test]
fn given_bad_plans_when_run_should_exit_254_with_line_and_column_before_starting_anything() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            default_plan().replace("  concurrency: 6", "  concurrency: 6\n  concurency: 3"),
            "unknown field `concurency`",
            "concurency",
        ),
        (default_plan().replace("  nodes: 3", "  nodes: many"), "", "nodes: many"),
        (
            default_plan().replace("interval: 6s", "interval: -2s"),
            "negative",
            "interval: -2s",
        ),
        (
            default_plan().replace("{restarted: any}", "{restartd: any}"),
            "unknown variant `restartd`",
            "restartd",
        ),
        (
            default_plan().replace(
                "do: {kind: pause, targets: one,",
                "do: {kind: pause, shape: bridge, targets: one,",
            ),
            "nemesis.triggers[4]: `shape` is for partition",
            "- when: {view-change: any}", // a trigger's mistakes are reported at the trigger
        ),
    ];
    for (text, message, line_with) in cases {
        let plan = write_plan(dir.path(), &text);
        let output = faultline()
            .args(["run", "--quiet", "--store"])
            .arg(dir.path().join("store"))
            .arg(&plan)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(254), "{stderr}");
        let line = text.lines().position(|l| l.contains(line_with)).unwrap() + 1;
        assert!(
            stderr.contains(&format!("plan.yaml:{line}:")),
            "no line {line} in: {stderr}"
        );
        assert!(stderr.contains(message), "{stderr}");
        assert!(!dir.path().join("store").exists(), "nothing may start for a bad plan");
    }
}

#[test]
fn given_the_same_seed_when_scheduling_twice_should_give_the_same_fault_schedule() {
    let schedule = |seed: &str| {
        let output = faultline()
            .args(["plan", "--schedule", "default", "--seed", seed])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", explain(&output));
        String::from_utf8(output.stdout).unwrap()
    };
    let first = schedule("42");
    assert!(
        first.lines().count() > 5,
        "a 60 s default plan has many faults: {first}"
    );
    assert!(first.contains("\"kill\"") && first.contains("\"pause\"") && first.contains("\"flap\""));
    // Network faults too (the default plan partitions and resets links), on the same time line as process faults.
    let lines: Vec<serde_json::Value> = first.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let family = |name: &str| lines.iter().filter(|l| l["family"] == name).count();
    assert!(family("process") > 0 && family("network") > 0, "{first}");
    assert_eq!(
        family("process") + family("network"),
        lines.len(),
        "every line names its family: {first}"
    );
    assert!(
        lines.iter().any(|l| l["action"]["type"] == "partition"),
        "the default plan's partitions are listed: {first}"
    );
    let starts: Vec<u64> = lines.iter().map(|l| l["start_ms"].as_u64().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "one time line: {starts:?}");
    assert_eq!(first, schedule("42"));
    assert_ne!(first, schedule("43"));
}

/// A plan whose only faults are partitions of one shape, every ~2 s, through the proxy mesh.
fn partition_plan(shape: &str, seed: u64) -> String {
    without_nemesis(&short_plan(seed, "10s")).replace(
        "final_phase:",
        &format!(
            "nemesis:\n  network:\n    interval: 2s\n    partitions:\n      - {{shape: {shape}, duration: 3s..3s}}\nfinal_phase:"
        ),
    )
}

#[test]
fn given_the_primary_isolated_by_a_partition_when_run_should_time_out_its_writes_fail_over_heal_and_converge() {
    let _one = one_cluster();
    let run = run_text(&partition_plan("isolate-primary", 5), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    let results = results(run_dir);
    assert_eq!(output.status.code(), Some(0), "{}\n{results:#}", explain(output));
    let starts: Vec<&Value> = events.iter().filter(|e| e["f"] == "partition-start").collect();
    assert!(!starts.is_empty(), "no partition happened");
    // Writes sent to the isolated primary while it was cut off end unknown (it cannot commit them).
    let first = starts[0];
    let isolated = first["value"]["grudge"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, deaf_to)| deaf_to.as_array().unwrap().len() == 2)
        .map(|(node, _)| node.clone())
        .expect("isolate-primary cuts one node from both others");
    let start_ns = first["time_ns"].as_u64().unwrap();
    let stop_ns = events
        .iter()
        .find(|e| e["f"] == "partition-stop" && e["value"]["fault_id"] == first["value"]["fault_id"])
        .unwrap()["time_ns"]
        .as_u64()
        .unwrap();
    let during = |e: &&Value| (start_ns..stop_ns).contains(&e["time_ns"].as_u64().unwrap());
    let infos_at_isolated = events
        .iter()
        .filter(during)
        .filter(|e| e["kind"] == "info" && e["node"] == isolated.as_str() && e["f"] != "read")
        .count();
    assert!(
        infos_at_isolated > 0,
        "writes to the isolated primary {isolated} must time out as info"
    );
    // The majority fails over and acknowledges writes during the partition.
    let majority_writes = events
        .iter()
        .filter(during)
        .filter(|e| e["kind"] == "ok" && e["f"] == "write" && e["node"] != isolated.as_str())
        .count();
    assert!(
        majority_writes > 0,
        "the majority side served no write during the partition"
    );
    let convergence = check(&results, "convergence");
    assert_eq!(convergence["verdict"], "valid", "{convergence:#}");
}

/// The primary isolated by partitions, with split-brain triggers: while the cut-off primary still claims its old
/// view, `stale-primary` names it, `links: primary` slows the new primary's links (not the stale one's) and an
/// `isolate-primary` takeover cuts the new primary off.
fn stale_primary_plan(seed: u64) -> String {
    partition_plan("isolate-primary", seed).replace(
        "final_phase:",
        "  triggers:\n\
         \x20   - when: {stale-primary: any}\n      max_fires: 2\n\
         \x20     do: {kind: link, links: primary, fault: {kind: delay, latency: 50ms}, duration: 1s}\n\
         \x20   - when: {stale-primary: any}\n      after: 300ms\n      max_fires: 2\n\
         \x20     do: {kind: partition, shape: isolate-primary, takeover: true, duration: 1s}\n\
         final_phase:",
    )
}

#[test]
fn given_a_stale_primary_when_triggered_should_name_it_and_fault_the_new_primary_instead() {
    let _one = one_cluster();
    let run = run_text(&stale_primary_plan(5), &[]);
    let results = assert_exit(&run, 0);
    let events = history(&run.run_dir);
    let fired: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["f"] == "trigger" && e["value"]["condition"] == "stale-primary" && e["value"]["fault_id"].is_u64()
        })
        .collect();
    assert!(
        fired.iter().any(|f| f["value"]["trigger"] == 0),
        "a primary cut off for 3 s keeps claiming its view while the others elect a new one"
    );
    for firing in &fired {
        let value = &firing["value"];
        let subject = value["subject"].as_str().unwrap();
        let fault = events
            .iter()
            .find(|e| {
                (e["f"] == "link-fault" || e["f"] == "partition-start") && e["value"]["fault_id"] == value["fault_id"]
            })
            .unwrap_or_else(|| panic!("no fault for {firing}"));
        // The node the fault is about: the one every faulted link touches, or the one the partition cuts off.
        let faulted = if fault["f"] == "link-fault" {
            let links: Vec<&str> = fault["value"]["links"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect();
            assert_eq!(links.len(), 4, "{fault}");
            let node = links[0]
                .split("->")
                .find(|n| links.iter().all(|l| l.split("->").any(|m| m == *n)));
            node.expect("links to and from one node").to_string()
        } else {
            let grudge = fault["value"]["grudge"].as_object().unwrap();
            let cut = grudge
                .iter()
                .find(|(_, deaf_to)| deaf_to.as_array().unwrap().len() == 2);
            cut.map(|(node, _)| node.clone())
                .expect("isolate-primary cuts one node from both others")
        };
        assert_ne!(
            faulted, subject,
            "the stale primary is the subject; the fault hits the newer one: {fault}"
        );
    }
    assert_eq!(results["verdict"], "valid", "{results:#}");
}

#[test]
fn given_one_way_partitions_when_run_should_end_valid() {
    let _one = one_cluster();
    let run = run_text(&partition_plan("one-way", 6), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    assert!(events
        .iter()
        .any(|e| e["f"] == "partition-start" && e["value"]["shape"] == "one-way"));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{:#}",
        explain(output),
        results(run_dir)
    );
}

#[test]
fn given_the_netns_backend_when_running_partitions_should_end_valid_and_leave_no_namespace_or_table() {
    if !netns_ready() {
        return;
    }
    let _one = one_cluster();
    let plan = partition_plan("isolate-primary", 8).replace("  backend: proxy", "  backend: netns");
    assert!(plan.contains("backend: netns"));
    let run = run_text(&plan, &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{:#}",
        explain(output),
        results(run_dir)
    );
    assert_eq!(events[0]["value"]["network_backend"], "netns");
    let run_id = events[0]["value"]["run_id"].as_str().unwrap().to_string();
    assert!(events
        .iter()
        .any(|e| e["f"] == "partition-start" && e["value"]["backend"] == "netns"));
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains(&run_id),
        "namespaces left behind"
    );
    let tables = Command::new("nft").args(["list", "tables"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&tables.stdout).contains(&run_id.replace('-', "_")),
        "nft tables left behind"
    );
}

fn repo_plan(name: &str, seed: u64, time_limit: &str) -> String {
    let text = repo_plan_text(name);
    let limit_line = text.lines().find(|l| l.starts_with("time_limit:")).unwrap().to_string();
    text.replace(&limit_line, &format!("time_limit: {time_limit}\nseed: {seed}"))
}

fn power_loss_plan(bug: Option<&str>) -> String {
    // Power loss of the whole cluster at 5 s, and again as the restart-all.
    with_bug(
        &repo_plan("reference-power-loss.yaml", 21, "8s").replace("at: 12s", "at: 5s"),
        bug,
    )
}

#[test]
fn given_power_loss_of_every_node_when_the_node_fsyncs_correctly_should_lose_nothing_and_be_valid() {
    if !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let run = run_text(&power_loss_plan(None), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    let power_losses = events.iter().filter(|e| e["f"] == "power-loss").count();
    assert!(
        power_losses >= 6,
        "the scripted and the final power loss each hit all three nodes: {power_losses}"
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{:#}",
        explain(output),
        results(run_dir)
    );
    // The node executes only what it has fsynced: after losing power it still boots with all it had applied.
    let results = results(run_dir);
    let durability = check(&results, "durability");
    assert_eq!(durability["verdict"], "valid", "{durability:#}");
    assert!(durability["details"]["judged"].as_u64().unwrap() >= 6, "{durability:#}");
}

#[test]
fn given_power_loss_of_every_node_when_the_node_never_fsyncs_should_lose_acknowledged_writes_and_be_invalid() {
    if !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let run = run_text(&power_loss_plan(Some("no-fsync")), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let results = results(run_dir);
    assert_eq!(output.status.code(), Some(1), "{}\n{results:#}", explain(output));
    let linearizability = check(&results, "linearizability");
    assert_eq!(
        linearizability["verdict"], "invalid",
        "lost acknowledged writes show as a linearizability failure"
    );
}

#[test]
fn given_interior_bit_flips_and_a_torn_tail_when_restarting_all_should_refuse_wipe_rejoin_and_boot_with_a_warning() {
    let _one = one_cluster();
    let run = run_text(&repo_plan("reference-disk-surgery.yaml", 4, "5s"), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let events = history(run_dir);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{:#}",
        explain(output),
        results(run_dir)
    );
    let refused = events
        .iter()
        .find(|e| e["f"] == "boot-refused")
        .expect("n2 refuses its flipped WAL");
    assert_eq!(refused["node"], "n2");
    let wipe = events
        .iter()
        .position(|e| e["f"] == "wipe" && e["node"] == "n2")
        .expect("n2 is wiped");
    assert!(
        events[wipe..].iter().any(|e| e["f"] == "boot-ok" && e["node"] == "n2"),
        "the wiped n2 rejoins"
    );
    let restart_all = events.iter().position(|e| e["f"] == "restart-all").unwrap();
    assert!(
        events[restart_all..]
            .iter()
            .any(|e| e["f"] == "boot-ok" && e["node"] == "n3"),
        "a torn tail boots"
    );
    let n3_log = std::fs::read_to_string(run_dir.join("nodes/n3/node.log")).unwrap();
    assert!(
        n3_log.contains("torn tail"),
        "n3 warns about the torn tail it truncated"
    );
}

fn log_plan(bug: Option<&str>) -> String {
    // Power loss of the whole cluster at 5 s, then the restart-all as a power loss too.
    with_bug(
        &repo_plan("reference-log.yaml", 31, "8s").replace("at: 20s", "at: 5s"),
        bug,
    )
}

#[test]
fn given_the_log_workload_under_kills_partitions_and_power_loss_when_the_node_is_correct_should_be_valid() {
    if !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let run = run_text(&log_plan(None), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let results = results(run_dir);
    assert_eq!(output.status.code(), Some(0), "{}\n{results:#}", explain(output));
    let log = check(&results, "log");
    assert!(log["details"]["stats"].is_object(), "{log:#}");
    let events = history(run_dir);
    assert!(
        events.iter().any(|e| e["f"] == "append" && e["kind"] == "ok"),
        "acknowledged appends"
    );
    assert!(events.iter().any(|e| e["f"] == "power-loss"), "power loss happened");
}

#[test]
fn given_the_log_workload_when_the_node_never_fsyncs_and_every_node_loses_power_should_report_lost_messages() {
    if !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let run = run_text(&log_plan(Some("no-fsync")), &[]);
    let output = &run.output;
    let run_dir = &run.run_dir;
    let results = results(run_dir);
    assert_eq!(output.status.code(), Some(1), "{}\n{results:#}", explain(output));
    let log = check(&results, "log");
    assert_eq!(log["verdict"], "invalid");
    assert!(
        log["details"]["counts"]["lost"].as_u64().unwrap_or(0) > 0,
        "lost acknowledged messages: {log:#}"
    );
}
