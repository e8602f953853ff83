//! Disk and clock faults on SSH hosts (the fixture of support/ssh_hosts.rs, reached only over SSH): the hands of a
//! node on a host mount the fault filesystem there and lose what was not synced, cut its files, and move the clock
//! a process there reads; and a whole run of power losses on three hosts catches the node that never fsyncs.

mod support;

use faultline::remote::agent::Request;
use faultline::remote::hands::Hands;
use faultline::supervisor::{Exit, LaunchCommand, Spawned};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use support::ssh_hosts::{ssh_hosts_ready, SshHosts};
use support::*;

/// A file on the host, read through its agent (None: it does not exist).
async fn read_on_host(agent: &faultline::remote::client::AgentClient, path: &Path) -> Option<Vec<u8>> {
    use base64::Engine;
    let request = Request::Read {
        path: path.to_path_buf(),
        offset: 0,
        max: None,
    };
    match agent.call(request).await {
        Ok((ok, _)) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(ok["data"].as_str().unwrap())
                .unwrap(),
        ),
        Err(e) if e.contains("No such file") => None,
        Err(e) => panic!("reading {} on the host: {e}", path.display()),
    }
}

fn shell(script: &str) -> LaunchCommand {
    LaunchCommand {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: Vec::new(),
        env_clear: false,
        user: None,
    }
}

async fn exit_of(spawned: Spawned) -> Exit {
    let mut exited = spawned.exited.clone();
    let exit = tokio::time::timeout(Duration::from_secs(10), exited.wait_for(Option::is_some))
        .await
        .expect("the process ends")
        .unwrap()
        .unwrap();
    exit
}

/// A node's hands on one SSH host: the fault filesystem mounted there drops, at a power loss, the file a process
/// there wrote without syncing and keeps the one it synced; a cut flips exactly the bits it records in a file there;
/// a clock bump moves the time a process there reads (through libfaketime on the host) and the heal moves it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_hands_on_an_ssh_host_when_its_disk_and_clock_are_faulted_should_lose_cut_and_move_what_is_there() {
    use faultline_faults::clock::ClockShift;
    use faultline_faults::disk::SurgerySpec;
    if !ssh_hosts_ready() || !fuse_ready() {
        return;
    }
    let hosts = SshHosts::start(1);
    let node = Path::new("/srv/faultline/t/n1");
    let (connected, hands, control) = hosts.first_hands("/srv/faultline/t/n1/node.log").await;
    let agent = connected.agent.clone();
    let log = control.path().join("node.log");
    let (data, backing) = (node.join("data"), node.join("data.backing"));

    // Power loss: `synced` written with fsync (and its folder synced), `unsynced` not.
    hands
        .mount_fault_fs((&backing, &data), "unused", Default::default())
        .await
        .unwrap();
    let write = format!(
        "cd {} && echo kept | dd of=synced conv=fsync 2>/dev/null && sync . && echo lost > unsynced",
        data.display()
    );
    let spawned = hands.spawn(shell(&write), log.clone(), None).await.unwrap();
    assert_eq!(
        exit_of(spawned).await,
        Exit::Code(0),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(read_on_host(&agent, &data.join("unsynced")).await.is_some());
    let lost = hands.lose_unsynced(&data).await.unwrap();
    let named = lost.to_string();
    assert!(
        named.contains("unsynced"),
        "the power loss names what it dropped: {lost:#}"
    );
    assert!(!named.contains("\"synced"), "and not what was synced: {lost:#}");
    assert_eq!(
        read_on_host(&agent, &data.join("unsynced")).await,
        None,
        "gone on the host"
    );
    assert_eq!(
        read_on_host(&agent, &data.join("synced")).await.as_deref(),
        Some(&b"kept\n"[..])
    );

    // A cut: 4 KiB of ones (a cut reaches only written data: zeros at a file's end are not), 8 bits flipped.
    let write = format!("head -c 4096 /dev/zero | tr '\\0' '\\377' > {}/ones", data.display());
    let spawned = hands.spawn(shell(&write), log.clone(), None).await.unwrap();
    assert_eq!(exit_of(spawned).await, Exit::Code(0));
    let cut: SurgerySpec =
        serde_json::from_value(serde_json::json!({"op": "flip-bits", "files": "ones", "bits": 8})).unwrap();
    let record = hands.cut(&data, &cut, (7, "n1/live"), true).await.unwrap();
    let bytes = read_on_host(&agent, &data.join("ones")).await.unwrap();
    let zeros: u32 = bytes.iter().map(|b| b.count_zeros()).sum();
    assert_eq!(
        (bytes.len(), zeros),
        (4096, 8),
        "eight bits flipped on the host: {record:#}"
    );
    assert!(record.to_string().contains("ones"), "{record:#}");
    hands.unmount_fault_fs(&data).await.unwrap();

    // The clock: a process printing `date +%s` every 100 ms, under a bump of one hour, then healed.
    hands.enable_clock(node).await.unwrap();
    let now_file = node.join("now");
    let tick = format!(
        "while :; do date +%s > {0}.tmp && mv {0}.tmp {0}; sleep 0.1; done",
        now_file.display()
    );
    let ticking = hands.spawn(shell(&tick), log.clone(), Some(node)).await.unwrap();
    let offset_s = || async {
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let text = read_on_host(&agent, &now_file).await.unwrap_or_default();
        String::from_utf8_lossy(&text)
            .trim()
            .parse::<i64>()
            .ok()
            .map(|t| t - real)
    };
    let settle = |want: std::ops::RangeInclusive<i64>| {
        let offset_s = &offset_s;
        async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let now = offset_s().await;
                if now.is_some_and(|o| want.contains(&o)) {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "the host's process reads {now:?} s off real time, not {want:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    settle(-2..=2).await;
    let applied = hands
        .set_clock(node, Some(ClockShift::Bump { offset_ms: 3_600_000 }))
        .await
        .unwrap();
    settle(3598..=3602).await;
    let healed = hands.set_clock(node, None).await.unwrap();
    settle(-2..=2).await;
    assert!(applied.to_string().contains("clock.faketime"), "{applied:#}");
    assert!(healed.to_string().contains("real"), "{healed:#}");
    hands
        .signal(ticking.pid, nix::sys::signal::Signal::SIGKILL)
        .await
        .unwrap();
}

/// Power losses (one node, the primary, the whole cluster, the restart-all) on three SSH hosts, each node's data on
/// the fault filesystem of its own host: the node that never fsyncs loses acknowledged writes there, and the run
/// says so (INVALID), with what each power loss dropped on record.
#[test]
fn given_power_losses_on_three_ssh_hosts_when_the_node_never_fsyncs_should_be_invalid() {
    if !ssh_hosts_ready() || !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let text = repo_plan_text("reference-power-loss.yaml")
        .replace("time_limit: 30s", "time_limit: 10s")
        .replace("at: 12s", "at: 5s");
    let plan = write_plan(dir.path(), &with_bug(&text, Some("no-fsync")));
    let store = dir.path().join("store");
    let (store_arg, plan_arg) = (store.to_str().unwrap(), plan.to_str().unwrap());
    let output = hosts
        .faultline(&["run", "--quiet", "--seed", "21", "--store", store_arg, plan_arg])
        .output()
        .unwrap();
    let run = latest(&store);
    let results = results(&run);
    assert_eq!(output.status.code(), Some(1), "{}\n{results:#}", explain(&output));
    assert_eq!(check(&results, "linearizability")["verdict"], "invalid", "{results:#}");
    let events = history(&run);
    let dropped = events
        .iter()
        .filter(|e| e["f"] == "power-loss")
        .filter(|e| e["value"]["lost"]["files"].as_array().is_some_and(|f| !f.is_empty()))
        .count();
    assert!(
        dropped >= 1,
        "a power loss on a host dropped unsynced data: {:?}",
        events
            .iter()
            .filter(|e| e["f"] == "power-loss")
            .collect::<Vec<&Value>>()
    );
    // The nodes' files came back into the store (an INVALID run keeps them, as locally), and left their hosts.
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        let backing = run.join("nodes").join(node).join("data.backing");
        let files = std::fs::read_dir(&backing).map(|d| d.count()).unwrap_or(0);
        assert!(files > 0, "{node}'s data is in the store: {}", backing.display());
        assert_eq!(
            hosts.run_on(i, "ls /srv/faultline/runs").trim(),
            "",
            "{node}'s host keeps no run folder"
        );
    }
}

/// Link faults between hosts, measured by a probe: host 1's agent runs node 0's proxy to node 1 (here host 2's
/// sshd, which greets every connection at once); a process on host 1 dials it. It reads the greeting, a delay of
/// 1.5 s on the link the greeting travels holds it back at least that long, a reset of the link has the proxy refuse
/// the connection, and clearing the faults passes it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_the_proxies_on_a_host_when_its_link_is_delayed_or_reset_should_hold_back_or_refuse_what_it_carries() {
    use faultline_faults::network::{LinkFault, LinkFaultKind};
    if !ssh_hosts_ready() {
        return;
    }
    let hosts = SshHosts::start(2);
    let (connected, hands, _control) = hosts.first_hands("/srv/faultline/t/n1/node.log").await;
    let agent = connected.agent.clone();
    let far: std::net::SocketAddr = format!("{}:22", hosts.addresses[1]).parse().unwrap();
    let (ok, _) = agent
        .call(Request::MeshStart {
            node_count: 2,
            me: 0,
            upstreams: vec!["127.0.0.1:1".parse().unwrap(), far],
            seed: 1,
        })
        .await
        .unwrap();
    let route: std::net::SocketAddr = serde_json::from_value(ok["routes"][1].clone()).unwrap();
    assert!(route.ip().is_loopback(), "node 0 dials its peers on its own host: {ok}");
    // What a process on host 1 reads through the proxy, and how long the whole dial took.
    let dial = || async {
        let script = format!("exec 3<>/dev/tcp/127.0.0.1/{} && head -c 7 <&3", route.port());
        let command = LaunchCommand {
            program: "timeout".into(),
            args: vec!["5".into(), "bash".into(), "-c".into(), script],
            env: Vec::new(),
            env_clear: false,
            user: None,
        };
        let started = Instant::now();
        let output = hands.output(&command, Duration::from_secs(10)).await.unwrap();
        (String::from_utf8_lossy(&output.stdout).into_owned(), started.elapsed())
    };
    let set = |from: usize, to: usize, fault: LinkFault| agent.call(Request::MeshSet { from, to, fault });
    let (greeting, _) = dial().await;
    assert_eq!(greeting, "SSH-2.0", "the proxy carries host 2's greeting");
    // The greeting is what node 1 sends node 0: the delay of link 1 -> 0 holds it back.
    let delay = LinkFault::Delay {
        latency: faultline_faults::units::Millis(1500),
        jitter: faultline_faults::units::Millis(0),
    };
    set(1, 0, delay).await.unwrap();
    let (greeting, took) = dial().await;
    assert_eq!(greeting, "SSH-2.0");
    assert!(took >= Duration::from_millis(1500), "held back by the delay: {took:?}");
    agent
        .call(Request::MeshClear {
            from: 1,
            to: 0,
            kind: LinkFaultKind::Delay,
        })
        .await
        .unwrap();
    // A reset of link 0 -> 1: node 0's proxy to node 1 refuses connections.
    set(0, 1, LinkFault::Reset).await.unwrap();
    let (refused, _) = dial().await;
    assert_eq!(refused, "", "a reset link refuses the connection");
    agent.call(Request::MeshClearAll).await.unwrap();
    let (greeting, _) = dial().await;
    assert_eq!(greeting, "SSH-2.0", "healed");
}

/// etcd on three SSH hosts: the hosts' own etcd started by their agents, partitions by each host's nftables (etcd
/// dials its peers itself, so a proxy could not cut it, and packet drops can), power loss and cuts of a member's
/// files on its host's fault filesystem, refusals judged against those cuts: VALID, as locally.
#[test]
fn given_etcd_on_three_ssh_hosts_when_run_with_etcd_mixed_should_be_valid_with_its_faults_done_on_the_hosts() {
    if !ssh_hosts_ready() || !fuse_ready() {
        return;
    }
    let etcd = faultline::system::etcd::EtcdSystem::locate(None)
        .map(|_| ())
        .map_err(|e| e.to_string());
    if !prerequisite("etcd", etcd) {
        return;
    }
    let _one = one_cluster();
    let hosts = SshHosts::start(3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // etcd-mixed with one partition sure to happen: n1 cut off from both peers at 2 s for 2 s.
    let text = repo_plan_text("etcd-mixed.yaml").replacen(
        "\n  network:\n    interval: 6s\n",
        "\n  network:\n    interval: 6s\n    script:\n      - {at: 2s, cut: [n1->n2, n2->n1, n1->n3, n3->n1], duration: 2s, \
         takeover: true}\n",
        1,
    );
    assert!(text.contains("takeover: true"));
    let plan = write_plan(dir.path(), &text);
    let output = hosts.run(plan.to_str().unwrap(), "2", "15s", &store).output().unwrap();
    let run = latest(&store);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{:#}",
        explain(&output),
        results(&run)
    );
    let events = history(&run);
    let partitions: Vec<&Value> = events.iter().filter(|e| e["f"] == "partition-start").collect();
    assert!(!partitions.is_empty(), "the scripted cut at least");
    for partition in &partitions {
        assert_eq!(partition["value"]["backend"], "hosts", "{partition}");
        assert!(partition["value"].get("error").is_none(), "{partition}");
    }
    let cut = events
        .iter()
        .filter(|e| e["f"] == "disk-surgery")
        .filter_map(|e| e["value"]["surgery"]["file"].as_str())
        .find(|file| file.starts_with("/srv/faultline/runs/"));
    assert!(cut.is_some(), "a member's file was cut on its host");
    assert!(events
        .iter()
        .any(|e| e["f"] == "power-loss" && e["value"].get("error").is_none()));
}
