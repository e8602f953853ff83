//! `faultline hosts check` against real SSH hosts (network, PID and mount namespaces on this machine, each with its
//! own sshd; see support/ssh_hosts.rs), reached only over SSH: faultline uploaded into each host's own /srv, the
//! agent started there, each host's capabilities and clock reported; an unknown host key refused; a dead host named.

mod support;

use serde_json::Value;
use support::ssh_hosts::{ssh_hosts_ready, SshHosts};
use support::*;

/// `faultline run reference-hosts` on `hosts` into `store`, for `time_limit` with `seed`.
fn run_on_hosts(hosts: &SshHosts, store: &std::path::Path, time_limit: &str, seed: &str) -> std::process::Command {
    hosts.run("reference-hosts", seed, time_limit, store)
}

fn hosts_check(hosts: &SshHosts, extra: &[&str]) -> (std::process::Output, Value) {
    let output = faultline()
        .args(["hosts", "check", "--json", "--hosts"])
        .arg(&hosts.hosts_file)
        .arg("--ssh-config")
        .arg(&hosts.ssh_config)
        .args(extra)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output, json)
}

#[test]
fn given_three_ssh_hosts_when_checked_should_install_faultline_there_once_and_report_each_host() {
    if !ssh_hosts_ready() {
        return;
    }
    let mut hosts = SshHosts::start(3);
    let (output, report) = hosts_check(&hosts, &[]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        explain(&output),
        hosts.sshd_log(0)
    );
    let reports = report["hosts"].as_array().unwrap();
    assert_eq!(reports.len(), 3);
    for (i, host) in reports.iter().enumerate() {
        assert_eq!(host["reached"], true, "{host}");
        assert_eq!(host["uploaded"], true, "the first contact uploads: {host}");
        assert_eq!(host["hello"]["uid"], 0, "{host}");
        assert_eq!(host["hello"]["capabilities"]["root"], true, "{host}");
        // Its own PID namespace: the agent is no process of this machine's view with that pid's command line.
        let clock = &host["clock"];
        let uncertainty = clock["uncertainty_ns"].as_u64().unwrap();
        // One machine, one wall clock: the measured offset is within its uncertainty (plus a millisecond of slack).
        assert!(
            clock["wall_offset_ns"].as_i64().unwrap().unsigned_abs() <= uncertainty + 1_000_000,
            "host {i}: {clock}"
        );
    }
    // Nothing reached this machine's own /srv: each host's workdir is its own.
    assert!(
        !std::path::Path::new("/srv/faultline").exists(),
        "the upload went through the shared file system"
    );
    // Again: the hosts have this build, nothing is uploaded.
    let (output, report) = hosts_check(&hosts, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    assert!(
        report["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["uploaded"] == false),
        "{report}"
    );
    // A host that is gone is named, with ssh's words; the others are still reported.
    hosts.kill_host(1);
    let (output, report) = hosts_check(&hosts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&output));
    let reports = report["hosts"].as_array().unwrap();
    assert_eq!(
        (reports[0]["reached"].clone(), reports[2]["reached"].clone()),
        (Value::Bool(true), Value::Bool(true))
    );
    let error = reports[1]["error"].as_str().unwrap();
    assert!(error.starts_with("fl-h2: cannot connect over ssh"), "{error}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fl-h2: NOT REACHED") && stderr.contains("1 of 3 hosts not reached"),
        "{stderr}"
    );
}

#[test]
fn given_a_host_whose_key_is_not_known_when_checked_should_refuse_it_unless_new_keys_are_accepted() {
    if !ssh_hosts_ready() {
        return;
    }
    let hosts = SshHosts::start(1);
    std::fs::write(hosts.dir().join("known_hosts"), "").unwrap();
    let (output, report) = hosts_check(&hosts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&output));
    let error = report["hosts"][0]["error"].as_str().unwrap();
    assert!(error.contains("Host key verification failed"), "{error}");
    let (output, _) = hosts_check(&hosts, &["--accept-new-host-keys"]);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let known = std::fs::read_to_string(hosts.dir().join("known_hosts")).unwrap();
    assert!(known.contains(&hosts.addresses[0]), "the new key was recorded: {known}");
    // A changed key is refused even then.
    std::fs::write(
        hosts.dir().join("known_hosts"),
        format!(
            "{} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHm1yQk7b5Xx1y0w3bQ8m6dD7kz8gNwXcJH1yV3m6y4X\n",
            hosts.addresses[0]
        ),
    )
    .unwrap();
    let (output, report) = hosts_check(&hosts, &["--accept-new-host-keys"]);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&output));
    let error = report["hosts"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("HOST IDENTIFICATION HAS CHANGED") || error.contains("Host key verification failed"),
        "{error}"
    );
}

/// The lab's hands on a host: a process started there through its agent, its log mirrored here as it grows (and
/// caught up before its exit is told), paused, resumed and killed in its group, and a process that exits at once
/// reported with its code.
#[tokio::test]
async fn given_remote_hands_on_an_ssh_host_when_a_node_runs_there_should_mirror_its_log_and_signal_its_group() {
    use faultline::remote::hands::Hands;
    use faultline::supervisor::{Exit, LaunchCommand};
    use nix::sys::signal::Signal;
    use std::time::Duration;
    if !ssh_hosts_ready() {
        return;
    }
    let hosts = SshHosts::start(1);
    let (_connected, hands, control) = hosts.first_hands("/srv/faultline/run/n1/node.log").await;
    let log = control.path().join("node.log");
    let command = |script: &str| LaunchCommand {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("GREETING".into(), "from the host".into())],
        env_clear: false,
        user: None,
    };
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let spawned = hands
        .spawn(command("echo booting $GREETING; sleep 100"), log.clone(), None)
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !read().contains("booting from the host") {
        assert!(
            std::time::Instant::now() < deadline,
            "the host's log never reached here: {:?}",
            read()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(read().starts_with("=== faultline: starting `sh -c"), "{}", read());
    for signal in [Signal::SIGSTOP, Signal::SIGCONT] {
        hands.signal(spawned.pid, signal).await.unwrap();
    }
    assert!(hands.group_alive(spawned.pid).await);
    hands.signal(spawned.pid, Signal::SIGKILL).await.unwrap();
    let mut exited = spawned.exited.clone();
    let exit = tokio::time::timeout(Duration::from_secs(10), exited.wait_for(Option::is_some))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(exit, Exit::Signal(9));
    assert!(!hands.group_alive(spawned.pid).await);
    // A process that exits at once: its last words are here by the time its exit is.
    let spawned = hands
        .spawn(command("echo last words; exit 7"), log.clone(), None)
        .await
        .unwrap();
    let mut exited = spawned.exited.clone();
    let exit = tokio::time::timeout(Duration::from_secs(10), exited.wait_for(Option::is_some))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(exit, Exit::Code(7));
    assert!(read().contains("last words"), "{}", read());
    // A pid the host's agent did not start is refused there.
    let err = hands.signal(1, Signal::SIGKILL).await.unwrap_err();
    assert!(err.contains("signals only its own"), "{err}");
}

/// The reference cluster on three SSH hosts, the default plan's process faults (kills, pauses, graceful stops, a
/// rolling restart, flaps, process triggers) and partitions (each host's nft) done by the hosts' agents: VALID, every node's log back here, the run's
/// metadata naming each node's host and clock, and nothing left running on a host afterwards.
#[test]
fn given_the_reference_cluster_on_three_ssh_hosts_when_run_with_process_faults_and_partitions_should_be_valid() {
    if !ssh_hosts_ready() {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let output = run_on_hosts(&hosts, &store, "15s", "3").output().unwrap();
    let run_dir = latest(&store);
    let results = results(&run_dir);
    assert_eq!(results["verdict"], "valid", "{}\n{results}", explain(&output));
    let events = history(&run_dir);
    let start = events.iter().find(|e| e["f"] == "run-start").expect("run-start");
    let described = start["value"]["hosts"]
        .as_array()
        .expect("the hosts in the run's metadata");
    assert_eq!(described.len(), 3);
    for (i, host) in described.iter().enumerate() {
        assert_eq!(host["address"], hosts.addresses[i].as_str(), "{host}");
        assert!(host["clock"]["uncertainty_ns"].as_u64().is_some(), "{host}");
    }
    assert!(
        events.iter().any(|e| e["kind"] == "nemesis" && e["f"] == "kill"),
        "the plan's kills ran"
    );
    assert!(check(&results, "durability")["details"]["judged"].as_u64().unwrap() >= 3);
    for node in ["n1", "n2", "n3"] {
        let log = std::fs::read_to_string(run_dir.join("nodes").join(node).join("node.log")).unwrap();
        assert!(
            log.contains("on the host, through its agent"),
            "{node}'s log came back: {log}"
        );
        assert!(log.contains("rejoining"), "{node}'s own lines came back: {log}");
    }
    // Nothing of the run is left running on the hosts (their sshd only).
    for i in 0..3 {
        let processes = hosts.run_on(i, "ps -e -o comm=");
        assert!(
            !processes.lines().any(|p| p.starts_with("faultline")),
            "host {i}: {processes}"
        );
    }
}

/// A plan that needs more of a host than hosts do yet is refused before anything connects, naming each need.
#[test]
fn given_a_plan_needing_more_hosts_than_given_when_run_on_hosts_should_be_refused_naming_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "db1\ndb2\n").unwrap();
    // Power loss, a clock bump, packet loss and a link reset (all things hosts do), on three nodes for two hosts
    // (which they cannot).
    let text = "name: hosts-refusal
time_limit: 10s
system: {kind: reference, nodes: 3}
network: {backend: netns}
disk: {fault_fs: true}
workload: {kind: register, concurrency: 3, rate: 50, keys: 2, ops_per_key: 100, mix: {read: 2, write: 2, cas: 1}, op_timeout: 1s}
nemesis:
  process:
    script:
      - {at: 1s, kind: power-loss, targets: one, duration: 1s}
      - {at: 2s, kind: clock, targets: one, duration: 1s, bump: -50ms}
  network:
    link_interval: 3s
    links:
      - {fault: {kind: loss, percent: 20}, links: one, duration: 1s}
      - {fault: {kind: reset}, links: one, duration: 1s}
";
    let plan = write_plan(dir.path(), text);
    let output = faultline()
        .args(["run", "--hosts"])
        .arg(&hosts)
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(254), "{}", explain(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("3 hosts: the hosts file names 2"), "{stderr}");
    // What hosts do is not named among what they cannot.
    for done in [
        "the fault filesystem",
        "clock faults",
        "`reset`",
        "`loss`",
        "link faults",
    ] {
        assert!(!stderr.contains(done), "{done}: {stderr}");
    }
    std::fs::write(&hosts, "db1 password=x\n").unwrap();
    let output = faultline()
        .args(["run", "reference-hosts", "--hosts"])
        .arg(&hosts)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(254), "{}", explain(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("hosts:1:5: a hosts file holds no passwords"),
        "{}",
        explain(&output)
    );
}

/// Partitions between hosts, measured by a probe: a host made deaf to another drops its connections (and only its),
/// while the control's own SSH to it works throughout; healing opens it again; the agent's table goes with it.
#[tokio::test]
async fn given_a_host_made_deaf_to_another_when_probed_should_drop_only_that_hosts_traffic_and_never_the_controls() {
    use faultline::remote::agent::Request;
    use faultline::remote::hosts::read_hosts_file;
    use faultline::remote::ssh::{connect, SshOptions};
    if !ssh_hosts_ready() {
        return;
    }
    let hosts = SshHosts::start(3);
    let options = SshOptions {
        config: Some(hosts.ssh_config.clone()),
        accept_new_host_keys: false,
        executable: Some(env!("CARGO_BIN_EXE_faultline").into()),
    };
    let control = tempfile::tempdir().unwrap();
    let list = read_hosts_file(&hosts.hosts_file).unwrap();
    let n2 = connect(&list[1], &options, control.path(), 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Can host `from` open a TCP connection to host `to`'s sshd? Asked on `from` itself, over SSH.
    let probe = |from: usize, to: usize| {
        let script = format!(
            "timeout 2 bash -c '</dev/tcp/{}/22' && echo open || echo cut",
            hosts.addresses[to]
        );
        hosts.run_on(from, &script).trim().to_string()
    };
    assert_eq!((probe(0, 1), probe(2, 1)), ("open".to_string(), "open".to_string()));
    let n1: std::net::IpAddr = hosts.addresses[0].parse().unwrap();
    n2.agent
        .call(Request::Deafen {
            from: vec![n1],
            loss: vec![],
        })
        .await
        .unwrap();
    assert_eq!(probe(0, 1), "cut", "n2 is deaf to n1");
    assert_eq!(probe(2, 1), "open", "n2 still hears n3");
    n2.agent
        .call(Request::Clock)
        .await
        .expect("the control's own SSH to n2 is never cut");
    n2.agent
        .call(Request::Deafen {
            from: vec![],
            loss: vec![],
        })
        .await
        .unwrap();
    assert_eq!(probe(0, 1), "open", "healed");
    // Packet loss: all of n1's packets (a share below 100 % would make the probe a matter of luck).
    let lossy = faultline_faults::network::hosts::Lossy { from: n1, percent: 100 };
    n2.agent
        .call(Request::Deafen {
            from: vec![],
            loss: vec![lossy],
        })
        .await
        .unwrap();
    assert_eq!(probe(0, 1), "cut", "n2 loses every packet of n1");
    assert_eq!(probe(2, 1), "open", "and none of n3's");
    n2.agent
        .call(Request::Deafen {
            from: vec![],
            loss: vec![],
        })
        .await
        .unwrap();
    assert_eq!(probe(0, 1), "open", "no loss once cleared");
    n2.agent
        .call(Request::Deafen {
            from: vec![n1],
            loss: vec![],
        })
        .await
        .unwrap();
    n2.agent.call(Request::Shutdown).await.unwrap();
    drop(n2);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while probe(0, 1) != "open" {
        assert!(std::time::Instant::now() < deadline, "the agent's firewall outlived it");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The control SIGKILLed mid-run: every agent notices its channel close and, once no control reattached within its
/// linger, ends what it started, so nothing of the run is left on any host (processes, fault filesystem mounts, nft tables), whatever the plan had running there.
#[test]
fn given_a_control_sigkilled_mid_run_when_the_agents_notice_should_leave_nothing_on_the_hosts() {
    if !ssh_hosts_ready() {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // reference-mixed: nodes on the fault filesystem, clocks under libfaketime, proxies and nft on every host.
    let mut control = hosts
        .run("reference-mixed", "5", "60s", &store)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Once every host runs its node (and a partition may be in force), kill the control outright.
    hosts.wait_for_nodes(std::time::Duration::from_secs(60));
    std::thread::sleep(std::time::Duration::from_secs(3));
    control.kill().unwrap();
    control.wait().unwrap();
    // An agent keeps its nodes for its linger (the control may reattach), then ends them.
    let deadline =
        std::time::Instant::now() + faultline::remote::ssh::AGENT_LINGER + std::time::Duration::from_secs(20);
    for i in 0..3 {
        loop {
            let processes = hosts.run_on(i, "ps -e -o comm=");
            let tables = hosts.run_on(i, "nft list tables");
            let mounts = hosts.run_on(i, "cat /proc/self/mountinfo");
            let left: Vec<&str> = processes.lines().filter(|p| p.starts_with("faultline")).collect();
            let mounted: Vec<&str> = mounts.lines().filter(|m| m.contains("faultline")).collect();
            if left.is_empty() && mounted.is_empty() && !tables.contains("faultline_agent") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "host {i} still has {left:?}, mounts {mounted:?} and tables {tables:?} after the control died"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// The SSH session carrying one host's agent drops mid-run (its sshd session process killed on the host, as a
/// network blip or a restarted sshd would end it): the agent keeps its node running, the control reattaches over a
/// new session, the requests in flight are answered once, and the run goes on to a VALID end; the history says
/// when the link dropped and when it came back, and nothing says the host was lost.
#[test]
fn given_the_ssh_session_to_a_host_dropped_mid_run_when_reattached_should_keep_the_node_and_end_valid() {
    if !ssh_hosts_ready() {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let control = run_on_hosts(&hosts, &store, "12s", "8")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    hosts.wait_for_nodes(std::time::Duration::from_secs(90));
    // The sshd process serving the agent's session (its parent), not the host's listening sshd.
    let killed = hosts.run_on(
        1,
        "for agent in $(pgrep -f 'faultline-[0-9a-f]* agent --linger'); do \
         session=$(ps -o ppid= -p $agent); kill -9 $session && echo $session; done",
    );
    assert!(!killed.trim().is_empty(), "the agent's session was found on host 1");
    let output = control.wait_with_output().unwrap();
    let run_dir = latest(&store);
    let results = results(&run_dir);
    assert_eq!(output.status.code(), Some(0), "{}\n{results:#}", explain(&output));
    let events = history(&run_dir);
    let link: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["f"].as_str().is_some_and(|f| f.starts_with("host-link-")))
        .map(|e| (e["node"].as_str().unwrap_or(""), e["f"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        link,
        [("n2", "host-link-lost"), ("n2", "host-link-restored")],
        "only n2's link dropped, and it came back"
    );
    assert!(
        !events.iter().any(|e| e["value"]["host_lost"] == true),
        "no node was reported lost with its host"
    );
}

/// One host dies mid-run (its sshd and everything on it): the run still ends, its history and report are kept, and
/// the boot check says the host went away (unknown), not that its node crashed.
#[test]
fn given_a_host_that_dies_mid_run_when_the_run_ends_should_keep_the_history_and_report_the_node() {
    if !ssh_hosts_ready() {
        return;
    }
    let _one = one_cluster();
    let mut hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let control = run_on_hosts(&hosts, &store, "12s", "6")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    hosts.wait_for_nodes(std::time::Duration::from_secs(90));
    std::thread::sleep(std::time::Duration::from_secs(4));
    hosts.kill_host(2);
    let output = control.wait_with_output().unwrap();
    let run_dir = latest(&store);
    let results = results(&run_dir);
    assert_eq!(output.status.code(), Some(2), "{}\n{results}", explain(&output));
    assert!(run_dir.join("report.html").is_file() && run_dir.join("history.jsonl").is_file());
    let boot = check(&results, "boot");
    assert_eq!(boot["verdict"], "unknown", "{boot}");
    assert!(
        boot["reason"].as_str().unwrap().starts_with("n3's host went away"),
        "{boot}"
    );
    let events = history(&run_dir);
    assert!(events
        .iter()
        .any(|e| e["f"] == "crashed" && e["node"] == "n3" && e["value"]["host_lost"] == true));
}

/// `faultline clean --hosts`: what an agent that was itself killed left on its host (a node process tagged with its
/// pid, its nft table) is listed by `--dry-run`, removed by the sweep, and nothing is left for the next one; a live
/// agent's (the sweep's own) is left alone.
#[test]
fn given_what_a_dead_agent_left_on_a_host_when_cleaned_should_kill_its_processes_and_delete_its_table() {
    if !ssh_hosts_ready() {
        return;
    }
    let hosts = SshHosts::start(1);
    let made = hosts.run_on(
        0,
        "FAULTLINE_RUN_ID=agent-999999 setsid sleep 1000 </dev/null >/dev/null 2>&1 & \
         nft add table inet faultline_agent_999999 && echo made",
    );
    assert_eq!(made.trim(), "made");
    let clean = |extra: &[&str]| {
        let output = hosts.faultline(&[&["clean"], extra].concat()).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let left = |what: &str| match what {
        "process" => hosts.run_on(0, "ps -e -o args=").lines().any(|l| l == "sleep 1000"),
        _ => hosts.run_on(0, "nft list tables").contains("faultline_agent_999999"),
    };
    let listed = clean(&["--dry-run"]);
    assert!(
        listed.contains("would kill pid") && listed.contains("(agent 999999)"),
        "{listed}"
    );
    assert!(
        listed.contains("would delete nft tables faultline_agent_999999"),
        "{listed}"
    );
    assert!(left("process") && left("table"), "a dry run removes nothing");
    let swept = clean(&[]);
    assert!(
        swept.contains("killed pid") && swept.contains("deleted nft tables faultline_agent_999999"),
        "{swept}"
    );
    assert!(!left("process") && !left("table"), "{swept}");
    let again = clean(&[]);
    assert!(again.contains("fl-h1: nothing left by dead agents"), "{again}");
}
