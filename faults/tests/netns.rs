//! The netns backend against real namespaces: partitions, one-way cuts, loss and reset as nftables rules, isolation
//! from the host, node launch wrapping, teardown and sweep.
//!
//! Needs root, `ip` and `nft`. Under `CI=true` their absence fails the tests (with the install hint); elsewhere each
//! test prints why it skipped. Every lab is torn down by its drop guard, also when an assertion fails.

use faultline_faults::network::netns::{self, NetnsLab};
use faultline_faults::network::{Grudge, Link, LinkFault};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ECHO_PORT: u16 = 7000;
const UDP_PORT: u16 = 7001;
const STEP: Duration = Duration::from_millis(500);

/// `Some(())` when the tests can run here; `None` (skip) or a panic under CI when they cannot.
fn netns_available(test: &str) -> Option<()> {
    match netns::check_tools() {
        Ok(()) => Some(()),
        Err(error) if std::env::var("CI").as_deref() == Ok("true") => panic!("{test}: {error}"),
        Err(error) => {
            // Straight to stderr: the test harness captures `eprintln!`, and a skip must be visible.
            let _ = writeln!(std::io::stderr(), "skipping {test}: {error}");
            None
        }
    }
}

fn run_id(tag: &str) -> String {
    format!("t{}{tag}-{:x}", std::process::id(), rand::random::<u16>())
}

/// A TCP echo server listening inside `namespace`, served from a plain thread until dropped (at most 60 s).
struct EchoServer {
    stop: Arc<AtomicBool>,
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn echo_server(namespace: &str, addr: Ipv4Addr) -> EchoServer {
    let listener = netns::run_in_namespace(namespace, move || TcpListener::bind((addr, ECHO_PORT)))
        .unwrap()
        .unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline && !stopped.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(STEP));
                    let mut buffer = [0u8; 256];
                    while let Ok(n) = stream.read(&mut buffer) {
                        if n == 0 || stream.write_all(&buffer[..n]).is_err() {
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
    });
    EchoServer { stop }
}

/// Connects from inside `namespace` to `target`'s echo server and checks one round trip, all within `STEP`s.
fn echo_from(namespace: &str, target: Ipv4Addr) -> std::io::Result<()> {
    netns::run_in_namespace(namespace, move || -> std::io::Result<()> {
        let mut stream = TcpStream::connect_timeout(&SocketAddr::from((target, ECHO_PORT)), STEP)?;
        stream.set_read_timeout(Some(STEP))?;
        stream.write_all(b"ping")?;
        let mut back = [0u8; 4];
        stream.read_exact(&mut back)?;
        assert_eq!(&back, b"ping");
        Ok(())
    })
    .expect("cannot enter namespace")
}

/// A UDP socket bound inside `namespace` at `addr`.
fn udp_in(namespace: &str, addr: Ipv4Addr) -> UdpSocket {
    let socket = netns::run_in_namespace(namespace, move || UdpSocket::bind((addr, UDP_PORT)))
        .unwrap()
        .unwrap();
    // How long `datagrams_through` waits for one more datagram: generous, because delivery through the veth pair
    // runs in softirq context, which a busy machine defers to a ksoftirqd thread competing for the cores.
    socket.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    socket
}

/// Sends `count` datagrams from `from` to `to` and counts how many arrive: until all have, or none arrives within the
/// socket's read timeout.
fn datagrams_through(from: &UdpSocket, to: &UdpSocket, count: usize) -> usize {
    let target = to.local_addr().unwrap();
    for i in 0..count {
        from.send_to(&(i as u32).to_be_bytes(), target).unwrap();
    }
    let mut received = 0;
    let mut buffer = [0u8; 16];
    while received < count && to.recv_from(&mut buffer).is_ok() {
        received += 1;
    }
    received
}

fn namespaces_of(run_id: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(run_id))
        .map(str::to_string)
        .collect()
}

fn host_tables() -> String {
    String::from_utf8_lossy(&Command::new("nft").args(["list", "tables"]).output().unwrap().stdout).into_owned()
}

fn host_routes_to(subnet: Ipv4Addr) -> String {
    let out = Command::new("ip")
        .args(["-4", "route", "show", "table", "all"])
        .output()
        .unwrap();
    let [a, b, c, _] = subnet.octets();
    let prefix = format!("{a}.{b}.{c}.");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&prefix))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn given_a_lab_when_partitioned_cut_one_way_and_healed_should_drop_exactly_what_the_grudge_says() {
    let Some(()) = netns_available("netns partition test") else {
        return;
    };
    let id = run_id("p");
    let lab = NetnsLab::create(&id, 2).unwrap();
    let (n1, n2) = (lab.node_namespace(0), lab.node_namespace(1));
    let (a1, a2) = (lab.node_addr(0), lab.node_addr(1));
    let _servers = (echo_server(&n1, a1), echo_server(&n2, a2));
    echo_from(&n1, a2).expect("n1 -> n2 before any fault");
    echo_from(&n2, a1).expect("n2 -> n1 before any fault");
    echo_from(&lab.lab_namespace(), a1).expect("harness -> n1 from the lab namespace");

    lab.apply(&Grudge::components(2, &[vec![0], vec![1]])).unwrap();
    assert!(echo_from(&n1, a2).is_err(), "n1 reached n2 through a partition");
    assert!(echo_from(&n2, a1).is_err(), "n2 reached n1 through a partition");
    echo_from(&lab.lab_namespace(), a2).expect("clients in the lab are not partitioned");

    // n2 does not hear n1; n1 still hears n2.
    let mut one_way = Grudge::none(2);
    one_way.cut(Link::new(0, 1));
    lab.apply(&one_way).unwrap();
    let (u1, u2) = (udp_in(&n1, a1), udp_in(&n2, a2));
    assert_eq!(datagrams_through(&u1, &u2, 5), 0, "n1 -> n2 must be dropped");
    assert_eq!(datagrams_through(&u2, &u1, 5), 5, "n2 -> n1 must flow");

    lab.heal().unwrap();
    echo_from(&n1, a2).expect("n1 -> n2 after heal");
    echo_from(&n2, a1).expect("n2 -> n1 after heal");
    assert_eq!(datagrams_through(&u1, &u2, 5), 5);

    lab.teardown().unwrap();
    assert_eq!(
        namespaces_of(&id),
        Vec::<String>::new(),
        "namespaces left after teardown"
    );
    assert!(
        !host_tables().contains(&id.replace('-', "_")),
        "nft tables left: {}",
        host_tables()
    );
    assert_eq!(host_routes_to(lab.subnet()), "", "host routes left for the lab subnet");
}

#[test]
fn given_loss_and_reset_faults_when_traffic_flows_should_drop_a_share_and_refuse_connections() {
    let Some(()) = netns_available("netns link fault test") else {
        return;
    };
    let lab = NetnsLab::create(&run_id("l"), 2).unwrap();
    let (n1, n2) = (lab.node_namespace(0), lab.node_namespace(1));
    let (a1, a2) = (lab.node_addr(0), lab.node_addr(1));
    let _server = echo_server(&n2, a2);
    let (u1, u2) = (udp_in(&n1, a1), udp_in(&n2, a2));

    lab.set_link_fault(Link::new(0, 1), LinkFault::Loss { percent: 50 })
        .unwrap();
    let received = datagrams_through(&u1, &u2, 400);
    assert!((120..280).contains(&received), "50% loss delivered {received} of 400");
    assert_eq!(datagrams_through(&u2, &u1, 20), 20, "loss is one-way");
    lab.clear_link_faults().unwrap();
    assert_eq!(datagrams_through(&u1, &u2, 20), 20);

    lab.set_link_fault(Link::new(0, 1), LinkFault::Reset).unwrap();
    let refused = echo_from(&n1, a2).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused, "{refused}");
    let delay = LinkFault::Delay {
        latency: faultline_faults::units::Millis(10),
        jitter: faultline_faults::units::Millis(0),
    };
    assert!(
        lab.set_link_fault(Link::new(0, 1), delay).is_err(),
        "netns cannot delay"
    );
    lab.clear_link_faults().unwrap();
    echo_from(&n1, a2).expect("works again once the reset is cleared");
}

#[test]
fn given_a_lab_when_reached_from_the_host_namespace_should_fail_at_once_without_a_route() {
    let Some(()) = netns_available("netns isolation test") else {
        return;
    };
    let lab = NetnsLab::create(&run_id("i"), 2).unwrap();
    let _server = echo_server(&lab.node_namespace(0), lab.node_addr(0));
    echo_from(&lab.lab_namespace(), lab.node_addr(0)).expect("reachable from the lab namespace");

    // From the host namespace: refused by the route lookup itself, before any packet exists. A SYN sent out of the
    // default route would instead wait for the timeout.
    // The connect timeout is long and the bound well below it: a descheduled thread on a busy machine must not pass
    // for a SYN that waited, and one that waited takes the whole timeout.
    let start = Instant::now();
    let error = TcpStream::connect_timeout(
        &SocketAddr::from((lab.node_addr(0), ECHO_PORT)),
        Duration::from_secs(10),
    )
    .expect_err("the host namespace reached a lab address");
    let errno = error.raw_os_error();
    assert!(
        errno == Some(libc::EHOSTUNREACH) || errno == Some(libc::ENETUNREACH),
        "expected no route / network unreachable, got {error}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "the connect waited {:?}: a packet may have left",
        start.elapsed()
    );
    let lookup = Command::new("ip")
        .args(["route", "get", &lab.node_addr(0).to_string()])
        .output()
        .unwrap();
    assert!(
        !lookup.status.success(),
        "the host routes the lab: {}",
        String::from_utf8_lossy(&lookup.stdout)
    );

    // Inside the lab and node namespaces: the lab subnet and nothing else, no default route.
    for namespace in [lab.lab_namespace(), lab.node_namespace(0), lab.node_namespace(1)] {
        let routes = Command::new("ip")
            .args(["-n", &namespace, "-4", "route", "show", "table", "all"])
            .output();
        let routes = String::from_utf8_lossy(&routes.unwrap().stdout).into_owned();
        assert!(
            !routes.contains("default"),
            "{namespace} has a default route:\n{routes}"
        );
        let elsewhere = Command::new("ip")
            .args(["-n", &namespace, "route", "get", "192.0.2.1"])
            .output()
            .unwrap();
        assert!(!elsewhere.status.success(), "{namespace} routes outside the lab");
    }
    // Clients made on the lab runtime live in the lab namespace.
    let runtime = lab.lab_runtime(1).unwrap();
    let target = SocketAddr::from((lab.node_addr(0), ECHO_PORT));
    // `spawn`, not `block_on`: block_on polls on the calling (host-namespace) thread, and a socket made there fails
    // with "no route to host" thanks to the guard route.
    let task = runtime.spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::time::timeout(STEP, tokio::net::TcpStream::connect(target)).await??;
        stream.write_all(b"ping").await?;
        let mut back = [0u8; 4];
        tokio::time::timeout(STEP, stream.read_exact(&mut back)).await??;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(back)
    });
    let echoed = runtime.block_on(task).unwrap();
    assert_eq!(&echoed.unwrap(), b"ping");
    let from_caller = runtime.block_on(tokio::net::TcpStream::connect(target));
    assert_eq!(
        from_caller.unwrap_err().raw_os_error(),
        Some(libc::EHOSTUNREACH),
        "block_on runs on the host thread"
    );
    runtime.shutdown_background();
}

#[test]
fn given_a_wrapped_launch_command_when_spawned_should_keep_pid_namespace_and_parent_death_signal() {
    let Some(()) = netns_available("netns launch test") else {
        return;
    };
    let lab = NetnsLab::create(&run_id("w"), 1).unwrap();
    let args = vec!["-c".to_string(), "echo $$; exec sleep 30".to_string()];
    let (program, wrapped) = lab.wrap_command(0, std::path::Path::new("/bin/sh"), &args);
    let namespace_inode = std::fs::metadata(format!("/run/netns/{}", lab.node_namespace(0)))
        .unwrap()
        .ino();
    // Spawn like the harness's supervisor: own process group, PDEATHSIG from a thread that then exits.
    let spawner = std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(program);
        command
            .args(wrapped)
            .stdout(std::process::Stdio::piped())
            .process_group(0);
        // SAFETY: prctl is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().unwrap();
        let mut line = [0u8; 32];
        let n = child.stdout.as_mut().unwrap().read(&mut line).unwrap();
        let printed_pid: u32 = String::from_utf8_lossy(&line[..n]).trim().parse().unwrap();
        let inode = std::fs::metadata(format!("/proc/{}/ns/net", child.id())).unwrap().ino();
        (child, printed_pid, inode)
    });
    let (mut child, printed_pid, inode) = spawner.join().unwrap(); // the spawning thread is gone now
    assert_eq!(
        printed_pid,
        child.id(),
        "`ip netns exec` must exec the program, not fork it"
    );
    assert_eq!(inode, namespace_inode, "the program runs in the node's namespace");
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("PDEATHSIG did not kill the wrapped program after its spawning thread exited");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

/// Sweeps `run_id`'s leftovers when dropped, so a failing sweep test leaves nothing behind either.
struct SweepOnDrop(String);

impl Drop for SweepOnDrop {
    fn drop(&mut self) {
        let _ = netns::sweep_where(|id| id == self.0);
    }
}

#[test]
fn given_leftovers_of_a_dead_run_when_swept_should_remove_them_and_spare_live_runs() {
    let Some(()) = netns_available("netns sweep test") else {
        return;
    };
    let dead_id = run_id("d");
    let _cleanup = SweepOnDrop(dead_id.clone());
    let dead = NetnsLab::create(&dead_id, 2).unwrap();
    let dead_subnet = dead.subnet();
    std::mem::forget(dead); // a crashed run: no teardown
    let live = NetnsLab::create(&run_id("a"), 1).unwrap();
    assert_eq!(namespaces_of(&dead_id).len(), 3);
    assert!(
        !host_routes_to(dead_subnet).is_empty(),
        "the dead run's guard route exists before the sweep"
    );

    let report = netns::sweep_where(|id| id == dead_id).unwrap();
    assert_eq!(report.namespaces.len(), 3, "{report:?}");
    assert_eq!(namespaces_of(&dead_id), Vec::<String>::new());
    assert_eq!(host_routes_to(dead_subnet), "", "the dead run's guard route survived");
    assert_eq!(namespaces_of(live.run_id()).len(), 2, "a live run was swept");
    assert!(
        !host_routes_to(live.subnet()).is_empty(),
        "a live run's guard route was swept"
    );
}

#[test]
fn given_preflight_probes_when_swept_should_remove_only_those_whose_process_is_gone() {
    let Some(()) = netns_available("netns probe sweep test") else {
        return;
    };
    // A probe has no run lock: a sweep that judged it by one took a live probe for a dead run's namespace. pid 1
    // always lives; the dead pid is one no process has.
    let gone = (1..4_000_000u32)
        .rev()
        .find(|pid| !std::path::Path::new("/proc").join(pid.to_string()).exists())
        .unwrap();
    let (live, dead) = ("fl-probe1-lab".to_string(), format!("fl-probe{gone}-lab"));
    for name in [&live, &dead] {
        let added = std::process::Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .unwrap();
        assert!(added.success(), "ip netns add {name}");
    }
    // No run counts as dead by its lock: only the probes' own processes decide.
    let report = netns::sweep_where(|_| false);
    let listed = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    let _ = std::process::Command::new("ip").args(["netns", "del", &live]).status();
    let report = report.unwrap();
    assert_eq!(report.namespaces, vec![dead.clone()], "{report:?}");
    assert!(listed.contains(&live), "the live probe was swept: {listed}");
    assert!(!listed.contains(&dead), "the dead probe survived: {listed}");
}
