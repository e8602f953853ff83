//! The exec adapter on SSH hosts (the fixture of `support::ssh_hosts`): a system described in YAML alone runs on
//! hosts with only `--hosts` added. A node's own commands run on its host, where `{faultline}` is the faultline
//! installed there and a script of the plan's folder is a copy made for the run; config files are written there;
//! the probes and clients stay on the control.

mod support;

use std::path::Path;
use support::ssh_hosts::{ssh_hosts_ready, SshHosts};
use support::*;

/// plans/exec-reference.yaml with its client named in this repository's plans (the plan is written elsewhere) and
/// the start of its start command (`sh -c 'echo $$ > "$0" && exec "$@"', `) replaced by `start`.
fn exec_reference_with_start(start: &str) -> String {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-reference.yaml")
        .replace(
            "\"{plan_dir}/exec/reference_client.py\"",
            &format!("\"{}/exec/reference_client.py\"", plans.display()),
        )
        .replacen("  start: [sh, -c, 'echo $$ > \"$0\" && exec \"$@\"', ", start, 1);
    assert!(text.contains(start), "the exec-reference plan's start moved");
    text
}

/// The reference node through the exec adapter on three hosts, started by a wrapper script of the plan's folder
/// that prints its own path and its node's config file: every node ran the host's copy of the script (under the
/// hosts' workdir, not this machine's plan folder, which the fixture's hosts could also see), read a config file
/// written on its host with its own id and its host's address, and the run is VALID with its verification, wipes
/// and probes done across the hosts.
#[test]
fn given_an_exec_plan_on_three_ssh_hosts_when_run_should_start_each_node_from_its_hosts_copy_and_be_valid() {
    if !ssh_hosts_ready() {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    let script = dir.path().join("bin/start.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\n# $1: the pid file (in the node's folder); then the node's command\n\
         echo \"start.sh at $0 reads: $(cat \"$(dirname \"$1\")/node.conf\")\"\n\
         echo $$ > \"$1\"; shift; exec \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let text = exec_reference_with_start(
        "  config_files: {\"node.conf\": \"id={id} host={host}\"}\n  start: [\"{plan_dir}/bin/start.sh\", ",
    );
    let plan = write_plan(dir.path(), &text);
    let store = dir.path().join("store");
    let output = hosts.run(plan.to_str().unwrap(), "3", "10s", &store).output().unwrap();
    let run = latest(&store);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{:#}",
        explain(&output),
        results(&run)
    );
    for (i, address) in hosts.addresses.iter().enumerate() {
        let log = std::fs::read_to_string(run.join("nodes").join(format!("n{}", i + 1)).join("node.log")).unwrap();
        let started = log
            .lines()
            .find(|line| line.starts_with("start.sh at "))
            .unwrap_or_else(|| panic!("n{}'s wrapper printed its path:\n{log}", i + 1));
        assert!(
            started.starts_with("start.sh at /srv/faultline/runs/") && started.contains("/plan/bin/start.sh reads: "),
            "n{} ran the copy on its host: {started}",
            i + 1
        );
        assert!(
            started.ends_with(&format!("reads: id={i} host={address}")),
            "n{}'s config file was written on its host with its values: {started}",
            i + 1
        );
        assert!(
            log.contains("=== faultline: prepare `/srv/faultline/"),
            "n{}'s prepare ran the host's faultline:\n{log}",
            i + 1
        );
    }
    let events = history(&run);
    assert!(
        events.iter().any(|e| e["f"] == "verify-ok"),
        "the offline verification ran on the hosts"
    );
}

/// A node's program the hosts lack: with `--hosts` the plan check does not look for it here (where it need not
/// exist), and the run looks for it on every host before any node starts, naming the host, the program and its
/// plan field; no verdict (exit 1 would say the system failed).
#[test]
fn given_an_exec_plan_whose_start_program_the_hosts_lack_when_run_should_stop_before_starting_naming_it() {
    if !ssh_hosts_ready() {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let text =
        exec_reference_with_start("  start: [faultline-test-no-such-program, -c, 'echo $$ > \"$0\" && exec \"$@\"', ");
    let plan = write_plan(dir.path(), &text);
    let store = dir.path().join("store");
    let output = hosts.run(plan.to_str().unwrap(), "1", "5s", &store).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !matches!(output.status.code(), Some(0) | Some(1)),
        "a harness error, not a verdict: {}",
        explain(&output)
    );
    for n in ["n1", "n2", "n3"] {
        let need = format!("{n}'s host has no `faultline-test-no-such-program` (system.start)");
        assert!(stderr.contains(&need), "{need}: {stderr}");
    }
    assert!(
        !stderr.contains("is not on PATH"),
        "the plan check left the program to the hosts: {stderr}"
    );
}
