//! End-to-end tests of the exec adapter: a system described in the plan alone (the reference node started from
//! templates), driven by client processes that speak the JSON-lines protocol of `plans/exec/PROTOCOL.md`, and every
//! way such a plan or client can go wrong.

mod support;

use serde_json::Value;
use std::path::Path;
use support::*;

/// `plans/exec-reference.yaml` with its client path made absolute (the plan is written to a temporary folder), a
/// fixed seed, a shorter fault phase, and `extra_start` appended to the nodes' start command.
fn exec_plan(seed: u64, time_limit: &str, extra_start: &str) -> String {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-reference.yaml").replace("{plan_dir}", &plans.display().to_string());
    let limit = text.lines().find(|l| l.starts_with("time_limit:")).unwrap().to_string();
    let start_end = "--peer-clients, \"{client_addrs}\"]";
    assert!(
        text.contains(start_end),
        "the start command of exec-reference.yaml ends with its peer clients"
    );
    text.replace(&limit, &format!("time_limit: {time_limit}\nseed: {seed}"))
        .replace(
            start_end,
            &format!("--peer-clients, \"{{client_addrs}}\"{extra_start}]"),
        )
}

/// The plan without its nemesis: nothing but the client can go wrong.
fn without_faults(plan: &str) -> String {
    let start = plan.find("\nnemesis:\n").unwrap();
    let end = plan.find("\nfinal_phase:\n").unwrap();
    format!("{}{}", &plan[..start], &plan[end..])
}

fn completions_with_error<'a>(events: &'a [Value], needle: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| matches!(e["kind"].as_str(), Some("fail" | "info")))
        .filter(|e| e["error"].as_str().is_some_and(|error| error.contains(needle)))
        .collect()
}

#[test]
fn given_the_exec_reference_plan_when_the_node_is_correct_should_be_valid_and_leave_no_client_behind() {
    let _one = one_cluster();
    let run = run_text(&exec_plan(1, "12s", ""), &[]);
    let results = assert_exit(&run, 0);
    let events = history(&run.run_dir);
    // Not vacuous: the valid verdict judged acknowledged writes and reads of the Python clients.
    assert_did_real_work(&events, &["write", "read"]);
    assert_no_process_left(&events);
    let clients_log = std::fs::read_to_string(run.run_dir.join("clients.log")).unwrap();
    assert!(
        clients_log.contains("started `python3"),
        "client starts are logged:\n{clients_log}"
    );
    // `status.durable` and `recovered` turn on the durability check: every node's restart-all boot is judged.
    let durability = check(&results, "durability");
    assert_eq!(durability["verdict"], "valid", "{durability:#}");
    assert!(durability["details"]["judged"].as_u64().unwrap() >= 3, "{durability:#}");
}

#[test]
fn given_the_exec_reference_plan_when_backups_serve_stale_reads_should_be_invalid_by_linearizability() {
    let _one = one_cluster();
    let run = run_text(&exec_plan(1, "15s", ", --bug, stale-backup-reads"), &[]);
    let results = assert_exit(&run, 1);
    assert_eq!(check(&results, "linearizability")["verdict"], "invalid", "{results:#}");
}

#[test]
fn given_the_exec_reference_plan_when_nodes_never_fsync_and_every_node_loses_power_should_lose_writes() {
    if !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    // One power loss of the whole cluster at 5 s, and the restart-all is one too.
    let plan = without_faults(&exec_plan(21, "8s", ", --bug, no-fsync"))
        .replace("\ndisk:\n", "\ndisk:\n  fault_fs: true\n")
        .replace(
            "\nfinal_phase:\n",
            "\nnemesis:\n  process:\n    script:\n      \
             - {at: 5s, kind: power-loss, targets: all, duration: 2s}\nfinal_phase:\n  power_loss: true\n",
        );
    assert!(
        plan.contains("  fault_fs: true\n"),
        "the plan's disk section gets the fault filesystem"
    );
    let run = run_text(&plan, &[]);
    let results = assert_exit(&run, 1);
    assert_eq!(
        check(&results, "linearizability")["verdict"],
        "invalid",
        "lost acknowledged writes show as a linearizability failure: {results:#}"
    );
}

/// A client whose 3rd op goes wrong, in one of three ways by its logical process: a line that is not JSON, an answer
/// to another op's id, or an exit. Every other op goes through the example client.
const MISBEHAVING_CLIENT: &str = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
import reference_client as rc
count = 0
for line in sys.stdin:
    op = json.loads(line)
    count += 1
    if count == 3 and op["process"] % 3 == 0:
        print("this is not json", flush=True)
        continue
    if count == 3 and op["process"] % 3 == 1:
        print(json.dumps({"id": op["id"] + 1000, "type": "ok"}), flush=True)
        continue
    if count == 3:
        sys.exit(3)
    try:
        answer = rc.call(op)
    except rc.NotSent as e:
        answer = {"type": "fail", "error": str(e)}
    except rc.Unknown as e:
        answer = {"type": "info", "error": str(e)}
    answer["id"] = op["id"]
    print(json.dumps(answer), flush=True)
"#;

#[test]
fn given_clients_that_print_garbage_answer_other_ids_and_exit_should_name_them_and_go_on_with_fresh_processes() {
    let _one = one_cluster();
    let store = tempfile::tempdir().unwrap();
    let script = store.path().join("bad_client.py");
    std::fs::write(&script, MISBEHAVING_CLIENT).unwrap();
    let plans_exec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans/exec");
    let plan = without_faults(&exec_plan(5, "6s", ""));
    let client_line = plan.lines().find(|l| l.starts_with("  client:")).unwrap().to_string();
    let bad_client = format!(
        "  client: {{command: [python3, \"{}\", \"{}\"], workloads: [register]}}",
        script.display(),
        plans_exec.display()
    );
    let plan = plan.replace(&client_line, &bad_client);
    let run = run_text(&plan, &[]);
    let results = results(&run.run_dir);
    assert_eq!(
        run.output.status.code(),
        Some(0),
        "an unknown outcome is not a violation\n{}\n{results:#}",
        explain(&run.output)
    );
    let events = history(&run.run_dir);
    let garbage = completions_with_error(&events, "printed a line that is not JSON");
    assert!(!garbage.is_empty(), "the non-JSON answer is recorded");
    let error = garbage[0]["error"].as_str().unwrap();
    assert!(
        error.contains("`this is not json`") && error.contains("client p"),
        "names the client and the line: {error}"
    );
    assert!(
        !completions_with_error(&events, "but the op in flight is").is_empty(),
        "the wrong id is recorded"
    );
    assert!(
        !completions_with_error(&events, "exited (exit status: 3)").is_empty(),
        "the exit is recorded"
    );
    // A worker whose client process exited and that completes an op afterwards did so through a fresh process
    // (a count of ok ops after the first bad line depends on how fast Python starts on a loaded machine, and
    // could come from processes that had not misbehaved yet).
    let worker = |e: &Value| e["worker"].as_u64().expect("client events carry their worker slot");
    let exits = completions_with_error(&events, "exited (exit status: 3)");
    let taken_over = exits
        .iter()
        .filter(|exit| {
            events
                .iter()
                .any(|e| e["kind"] == "ok" && worker(e) == worker(exit) && e["index"].as_u64() > exit["index"].as_u64())
        })
        .count();
    assert!(
        taken_over > 0,
        "fresh client processes take over: none of {} exited clients' workers completed an op afterwards",
        exits.len()
    );
    let clients_log = std::fs::read_to_string(run.run_dir.join("clients.log")).unwrap();
    assert!(
        clients_log.contains("replacing pid"),
        "replacements are logged:\n{clients_log}"
    );
}

/// A client whose every process dies before its first answer (a `python3` without the client's module) is a broken
/// set-up: the run stops early, says so with the client's own stderr, and judges nothing about the system.
#[test]
fn given_a_client_that_cannot_start_when_run_should_stop_early_quoting_its_stderr_and_judge_nothing() {
    let _one = one_cluster();
    let plan = without_faults(&exec_plan(5, "20s", ""));
    let client = plan.lines().find(|l| l.starts_with("  client:")).unwrap().to_string();
    let dying = r#"  client: {command: [python3, -c, 'import sys; sys.stderr.write("ModuleNotFoundError: No module named kazoo\n"); sys.exit(1)']}"#;
    let run = run_text(&plan.replace(&client, dying), &[]);
    let results = assert_exit(&run, 2);
    let reason = results["reason"].as_str().unwrap();
    assert!(
        reason.contains("the client cannot start") && reason.contains("No module named kazoo"),
        "the headline names the client's own error: {reason}"
    );
    let events = history(&run.run_dir);
    let failed = events
        .iter()
        .find(|e| e["f"] == "setup-failed")
        .expect("a setup-failed event");
    assert_eq!(failed["value"]["reason"], "client", "{failed:#}");
    let phase_end = events
        .iter()
        .find(|e| e["f"] == "fault-phase-end")
        .expect("the fault phase ended");
    assert!(
        phase_end["value"]["phase_ms"].as_u64().unwrap() < 20_000,
        "the phase stopped before its 20 s: {phase_end:#}"
    );
    assert!(
        !events.iter().any(|e| e["f"] == "restart-all"),
        "no final phase judges the system on a client that never worked"
    );
    let clients_log = std::fs::read_to_string(run.run_dir.join("clients.log")).unwrap();
    let started = clients_log.matches("=== faultline: started").count();
    assert!(started < 30, "a handful of client processes, not hundreds: {started}");
}

#[test]
fn given_a_client_that_fails_every_operation_when_run_should_not_be_valid_and_name_the_error() {
    // A client bug of the kind issue 51 met: every transaction failed with one opaque error and the run said VALID.
    // The nodes are healthy; the client answers every operation `fail` with the error `0 `.
    let _one = one_cluster();
    let plan = without_faults(&exec_plan(6, "8s", ""))
        .replace("recovery_timeout: 30s", "recovery_timeout: 5s")
        .replace("convergence_timeout: 30s", "convergence_timeout: 5s");
    let client = plan.lines().find(|l| l.starts_with("  client:")).unwrap().to_string();
    let failing = r#"  client: {command: [python3, -c, 'import json, sys; [print(json.dumps(dict(id=json.loads(l)["id"], type="fail", error="0 ")), flush=True) for l in sys.stdin]']}"#;
    let run = run_text(&plan.replace(&client, failing), &[]);
    let results = results(&run.run_dir);
    assert_ne!(results["verdict"], "valid", "{results:#}");
    assert_ne!(run.output.status.code(), Some(0), "{}", explain(&run.output));
    let health = check(&results, "workload-health");
    assert_eq!(health["verdict"], "unknown", "{health:#}");
    let reason = health["reason"].as_str().unwrap();
    assert!(
        reason.contains("top errors: `0` ×"),
        "the reason names the error: {reason}"
    );
    assert!(
        results["reason"].as_str().unwrap().contains("workload"),
        "the headline says the workload barely worked: {results:#}"
    );
}

#[test]
fn given_a_status_pointer_that_does_not_resolve_when_the_nodes_answer_should_stop_setup_naming_the_pointer() {
    let _one = one_cluster();
    let plan = without_faults(&exec_plan(2, "5s", "")).replace(
        "commit_point: [/status, /op, /commit, /head_checksum]",
        "commit_point: [/status, /commit_index]",
    );
    let run = run_text(&plan, &[]);
    let results = results(&run.run_dir);
    assert_eq!(
        run.output.status.code(),
        Some(2),
        "setup failed: unknown\n{}",
        explain(&run.output)
    );
    let history_check = check(&results, "history");
    let reason = history_check["reason"].as_str().unwrap();
    assert!(
        reason.contains("/commit_index") && reason.contains("commit_point"),
        "{reason}"
    );
    let stderr = String::from_utf8_lossy(&run.output.stderr);
    assert!(stderr.contains("/commit_index"), "the harness says it too: {stderr}");
}

#[test]
fn given_a_bad_template_or_a_missing_program_when_checked_should_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "\"{data_dir}\"",
            "\"{data_dri}\"",
            "unknown template variable `{data_dri}`",
        ),
        ("start: [sh,", "start: [./bin/mydb,", "build it, or fix the path"),
        ("command: [python3,", "command: [no-such-python-xyz,", "not on PATH"),
    ];
    for (find, replace, expected) in cases {
        let text = exec_plan(1, "5s", "");
        assert!(text.contains(find), "{find}");
        let text = text.replacen(find, replace, 1);
        let path = write_plan(dir.path(), &text);
        let output = faultline().args(["plan", "--check"]).arg(&path).output().unwrap();
        assert_eq!(output.status.code(), Some(254), "{}", explain(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let line = text.lines().position(|l| l.contains(replace)).unwrap() + 1;
        assert!(
            stderr.contains(&format!("{}:{line}:", path.display())),
            "the error points at line {line}: {stderr}"
        );
        assert!(stderr.contains(expected), "{stderr}");
    }
}

/// A system that prints no boot line saying what it kept still gets the durability check from its status alone: a
/// restarted node's first status answer once it is ready says what it kept (the reference node's head `/op`; its
/// `/commit` it learns again from the primary, so right after a boot it reports less than it holds).
#[test]
fn given_a_status_pointer_instead_of_a_boot_line_when_run_should_judge_every_restart_from_the_status() {
    let _one = one_cluster();
    let text = without_faults(&exec_plan(3, "6s", ""));
    let recovered = text.lines().find(|l| l.trim_start().starts_with("recovered:")).unwrap();
    let run = run_text(&text.replace(recovered, "  recovered: {status: /op}"), &[]);
    let results = assert_exit(&run, 0);
    let durability = check(&results, "durability");
    assert_eq!(durability["verdict"], "valid", "{durability:#}");
    assert!(
        durability["details"]["judged"].as_u64().unwrap() >= 3,
        "every node's restart-all boot is judged: {durability:#}"
    );
    let events = history(&run.run_dir);
    let from_status = events
        .iter()
        .filter(|e| e["f"] == "recovered" && e["kind"] == "observation")
        .all(|e| e["value"]["line"].as_str().unwrap().contains("first status answer"));
    assert!(from_status, "what each node kept came from its status");
}

#[test]
fn given_etcd_through_the_exec_adapter_when_killed_paused_and_partitioned_should_be_valid() {
    let etcd = faultline::system::etcd::EtcdSystem::locate(None)
        .map(|_| ())
        .map_err(|e| e.to_string());
    if !prerequisite("etcd (apt-get install -y etcd-server)", etcd) || !netns_ready() {
        return;
    }
    let _one = one_cluster();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-etcd.yaml")
        .replace("{plan_dir}", &plans.display().to_string())
        .replace(
            "[./exec/etcd-node.sh,",
            &format!("[{}/exec/etcd-node.sh,", plans.display()),
        )
        .replace("time_limit: 30s", "time_limit: 12s\nseed: 2");
    // The seed's kills, and one partition at a fixed time (a random one may not fall within 12 s).
    let network = text.find("\n  network:\n").unwrap();
    let final_phase = text.find("\nfinal_phase:\n").unwrap();
    let text = format!(
        "{}\n  network:\n    script:\n      - {{at: 4s, cut: [n3->n1, n1->n3, n3->n2, n2->n3], duration: 3s}}{}",
        &text[..network],
        &text[final_phase..]
    );
    let run = run_text(&text, &[]);
    let results = assert_exit(&run, 0);
    let events = history(&run.run_dir);
    let schedule = &events.iter().find(|e| e["f"] == "schedule").unwrap()["value"];
    let kills = schedule["process"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "kill")
        .count();
    assert!(kills > 0, "seed 2 kills within 12 s: {schedule:#}");
    assert!(
        events
            .iter()
            .any(|e| e["f"] == "partition-start" && e["value"]["backend"] == "netns"),
        "n3 is cut off in its namespace"
    );
    // The Python etcd client wrote through the gateway.
    assert_did_real_work(&events, &["write"]);
    let durability = check(&results, "durability");
    assert_eq!(durability["verdict"], "valid", "{durability:#}");
    assert!(durability["details"]["judged"].as_u64().unwrap() >= 3, "{durability:#}");
}

#[test]
fn given_no_status_probe_when_killed_paused_and_partitioned_should_be_valid_with_convergence_not_checked() {
    let _one = one_cluster();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-reference-nostatus.yaml")
        .replace("{plan_dir}", &plans.display().to_string())
        .replace("time_limit: 30s", "time_limit: 12s\nseed: 4");
    let run = run_text(&text, &[]);
    let results = assert_exit(&run, 0);
    let events = history(&run.run_dir);
    assert_did_real_work(&events, &["write", "read"]);
    let nemesis = |f: &str| events.iter().filter(|e| e["f"] == f).count();
    assert!(nemesis("kill") + nemesis("partition-start") > 0, "faults were injected");
    assert_eq!(
        events
            .iter()
            .filter(|e| e["kind"] == "observation" && e["f"] == "status")
            .count(),
        0,
        "nothing probes a system without a status"
    );
    let convergence = check(&results, "convergence");
    assert!(
        convergence["reason"].as_str().unwrap().contains("no status probe"),
        "{convergence:#}"
    );
    assert_eq!(check(&results, "liveness")["verdict"], "valid");
}

#[test]
fn given_a_persistent_status_process_when_the_run_is_faulted_should_read_roles_through_it_and_be_valid() {
    let _one = one_cluster();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let plan = exec_plan(5, "12s", "").replace(
        "    http: \"http://{client_addr}/status\"\n",
        &format!(
            "    command: [python3, \"{}/exec/http_status.py\", \"http://{{client_addr}}/status\"]\n    persistent: true\n",
            plans.display()
        ),
    );
    assert!(
        plan.contains("persistent: true"),
        "the status section of exec-reference.yaml moved"
    );
    let run = run_text(&plan, &[]);
    let results = assert_exit(&run, 0);
    let events = history(&run.run_dir);
    let primaries = events
        .iter()
        .filter(|e| e["kind"] == "observation" && e["f"] == "status" && e["value"]["role"] == "primary")
        .count();
    assert!(primaries > 0, "the status process told faultline who leads");
    assert_eq!(check(&results, "convergence")["verdict"], "valid");
    assert!(check(&results, "durability")["details"]["judged"].as_u64().unwrap() >= 3);
    for node in ["n1", "n2", "n3"] {
        let log = std::fs::read_to_string(run.run_dir.join(format!("nodes/{node}/status.log"))).unwrap();
        assert!(log.contains("started status process"), "{node}: {log}");
    }
    assert_no_process_left(&events);
}

#[test]
fn given_membership_hooks_when_spares_join_and_the_primary_is_removed_should_list_the_new_members_and_be_valid() {
    let _one = one_cluster();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    // 20 s: the two adds (2 s, 9 s) and the removal of the primary (16 s).
    let text = repo_plan_text("exec-reference-membership.yaml")
        .replace("{plan_dir}", &plans.display().to_string())
        .replace("time_limit: 40s", "time_limit: 20s\nseed: 3");
    let run = run_text(&text, &[]);
    let results = results(&run.run_dir);
    assert_eq!(
        run.output.status.code(),
        Some(0),
        "{}\n{results:#}",
        explain(&run.output)
    );
    let events = history(&run.run_dir);
    let changes: Vec<&Value> = events.iter().filter(|e| e["f"] == "membership").collect();
    assert!(
        changes.iter().any(|e| e["value"]["change"] == "add"),
        "the script adds spares: {changes:#?}"
    );
    // Whichever way an addition ended (ok, or unknown until a later list), the system's own list must name a spare
    // as a member at some point: the hooks ran and the history took the members from them.
    let listed_spare = events.iter().any(|e| {
        e["f"] == "members"
            && e["value"]["source"] != "plan"
            && e["value"]["members"]
                .as_array()
                .is_some_and(|m| m.iter().any(|n| n == "n4" || n == "n5"))
    });
    assert!(listed_spare, "no listed member set names n4 or n5: {changes:#?}");
    let spare_log =
        |n: &str| std::fs::read_to_string(run.run_dir.join("nodes").join(n).join("node.log")).unwrap_or_default();
    assert!(
        ["n4", "n5"]
            .iter()
            .any(|n| spare_log(n).contains("=== faultline: membership add")),
        "the add hook ran as a spare's command, logged in its node.log"
    );
}

/// A node whose restart takes longer than its boot timeout: the watcher records the timeout and goes on probing, so
/// the history says the same process became ready later (`late: true`), with what it kept; the boot check, on a
/// system whose readiness is its own, still reports the timeout.
#[test]
fn given_a_restart_slower_than_the_boot_timeout_when_probed_on_should_record_the_late_boot_of_the_same_process() {
    let _one = one_cluster();
    let text = exec_plan(3, "10s", "");
    // Every life after a node's first waits 5 s before it starts (a slow disk, a long recovery): far past the 2 s
    // boot timeout.
    let start = "start: [sh, -c, 'echo $$ > \"$0\" && exec \"$@\"'";
    assert!(text.contains(start), "the start command of exec-reference.yaml");
    let text = text.replace(
        start,
        "start: [sh, -c, 'if [ -e \"$0.lived\" ]; then sleep 5; fi; touch \"$0.lived\"; echo $$ > \"$0\" && exec \"$@\"'",
    );
    let nemesis = text.find("\nnemesis:\n").unwrap();
    let final_phase = text.find("\nfinal_phase:\n").unwrap();
    let text = format!(
        "{}\nnemesis:\n  process:\n    script:\n      - {{at: 1s, kind: kill, targets: [n2], duration: 500ms}}\n\
         final_phase:\n  enabled: false\n  boot_timeout: 2s\n{}",
        &text[..nemesis],
        text[final_phase..]
            .lines()
            .skip_while(|l| !l.starts_with("log_patterns"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let run = run_text(&text, &[]);
    let events = history(&run.run_dir);
    let of_n2 = |f: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["kind"] == "lifecycle" && e["f"] == f && e["node"] == "n2")
            .collect()
    };
    let timeouts = of_n2("boot-timeout");
    assert_eq!(timeouts.len(), 1, "the restart missed its 2 s: {timeouts:?}");
    let late: Vec<&Value> = of_n2("boot-ok")
        .into_iter()
        .filter(|e| e["value"]["late"] == true)
        .collect();
    assert_eq!(late.len(), 1, "{:?}", of_n2("boot-ok"));
    assert_eq!(late[0]["value"]["pid"], timeouts[0]["value"]["pid"], "the same process");
    assert!(late[0]["value"]["boot_ms"].as_u64().unwrap() >= 5000, "{}", late[0]);
    assert!(late[0]["index"].as_u64() > timeouts[0]["index"].as_u64());
    let results = assert_exit(&run, 1);
    let boot = check(&results, "boot");
    assert_eq!(
        boot["verdict"], "invalid",
        "the reference node's readiness is its own: {boot:#}"
    );
    assert!(
        boot["reason"]
            .as_str()
            .unwrap()
            .contains("n2 was not ready within 2000 ms"),
        "{boot:#}"
    );
}

/// `{start}` tells a node what kind of start it is (first, then restart-all), and `system.restart_all.position`
/// starts the most advanced node first and alone: here each node's position is its id, so n3 boots before n1 and n2
/// are started at all.
#[test]
fn given_start_kinds_and_a_restart_all_position_when_run_should_start_the_most_advanced_node_first_and_alone() {
    let _one = one_cluster();
    let text = without_faults(&exec_plan(4, "4s", ""));
    let start = "start: [sh, -c, 'echo $$ > \"$0\" && exec \"$@\"'";
    assert!(text.contains(start), "exec-reference.yaml's start keeps the node's pid");
    let text = text.replace(
        start,
        "restart_all: {position: [sh, -c, 'echo \"position of {name}\"; echo {id}']}\n  \
             start: [sh, -c, 'echo \"start kind: {start}\" >&2; echo $$ > \"$0\" && exec \"$@\"'",
    );
    let run = run_text(&text, &[]);
    assert_exit(&run, 0);
    let log = |n: &str| std::fs::read_to_string(run.run_dir.join("nodes").join(n).join("node.log")).unwrap_or_default();
    let kinds = |n: &str| -> Vec<String> {
        log(n)
            .lines()
            .filter_map(|l| l.strip_prefix("start kind: "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(kinds("n1"), ["first", "restart-all"], "{}", log("n1"));
    assert_eq!(kinds("n2"), ["first", "restart-all"]);
    assert_eq!(kinds("n3"), ["first", "restart-all-first"]);
    // In the history: n3's restart-all start carries its position, and it booted before the others started.
    let events = history(&run.run_dir);
    let restart_all = events
        .iter()
        .position(|e| e["f"] == "restart-all")
        .expect("a restart-all");
    let after = &events[restart_all..];
    let at = |f: &str, node: &str| {
        after
            .iter()
            .position(|e| e["f"] == f && e["node"] == node)
            .unwrap_or_else(|| panic!("no {f} of {node} after the restart-all"))
    };
    let n3_start = &after[at("start", "n3")];
    assert_eq!(n3_start["value"]["start"], "restart-all-first", "{n3_start}");
    assert_eq!(n3_start["value"]["position"], 2, "{n3_start}");
    assert!(at("boot-ok", "n3") < at("start", "n1") && at("boot-ok", "n3") < at("start", "n2"));
}
