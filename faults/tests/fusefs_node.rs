//! The reference node on the fault filesystem: acknowledged writes survive kill -9 + power loss + restart.
//!
//! Needs root, /dev/fuse and a built `faultline-node` (`../target/release/faultline-node` or `FAULTLINE_NODE`);
//! skips with a printed reason without the binary, and without FUSE unless `CI=true`.

use faultline_faults::fusefs::{self, FaultFs};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn node_binary() -> Option<PathBuf> {
    let path = std::env::var_os("FAULTLINE_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/faultline-node"));
    path.is_file().then_some(path)
}

/// A loopback address of this test's own, `127.a.b.1`: a port found free on 127.0.0.1 and released can be taken by
/// any outbound connection on the machine (ephemeral source ports come from the same range there) before the node
/// binds it; nothing dials out from this address.
fn own_ip() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    format!("127.{}.{}.1", rng.gen_range(1..=254u8), rng.gen_range(0..=255u8))
}

/// Two distinct free ports on `ip` (client and peer address of one start), both held until both are found.
fn free_ports(ip: &str) -> (u16, u16) {
    let (a, b) = (TcpListener::bind((ip, 0)).unwrap(), TcpListener::bind((ip, 0)).unwrap());
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

/// Where one start of the node listens.
#[derive(Clone, Copy)]
struct Addresses<'a> {
    ip: &'a str,
    client_port: u16,
    peer_port: u16,
}

impl<'a> Addresses<'a> {
    fn fresh(ip: &'a str) -> Addresses<'a> {
        let (client_port, peer_port) = free_ports(ip);
        Addresses {
            ip,
            client_port,
            peer_port,
        }
    }
}

/// One HTTP/1.1 request on a fresh connection; returns (status, body).
fn http(
    at: Addresses,
    method: &str,
    path: &str,
    body: &str,
    client_id: u64,
    request_number: u64,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect((at.ip, at.client_port)).ok()?;
    // Generous: an answer that is slow on a loaded machine is not wrong (each PUT is an fsync through FUSE).
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n\
         x-client-id: {client_id}\r\nx-request-number: {request_number}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

fn run(binary: &Path, data: &Path, at: Addresses) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data.with_extension("log"))
        .unwrap();
    Command::new(binary)
        .args([
            "run",
            "--id",
            "0",
            "--cluster-id",
            "1",
            "--data-dir",
            data.to_str().unwrap(),
        ])
        .arg("--client-addr")
        .arg(format!("{}:{}", at.ip, at.client_port))
        .arg("--peer-addr")
        .arg(format!("{}:{}", at.ip, at.peer_port))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn wait_ready(at: Addresses, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    // A fresh client id per probe: the node refuses request numbers a client has used before.
    let mut probe = 1_000_000;
    while http(at, "GET", "/kv/probe", "", probe, 1).is_none_or(|(status, _)| status != 200) {
        probe += 1;
        let log = std::fs::read_to_string(log).unwrap_or_default();
        assert!(Instant::now() < deadline, "node not ready within 20 s; its log:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn given_the_reference_node_on_the_fault_fs_when_power_is_lost_should_boot_with_every_acknowledged_write() {
    let Some(binary) = node_binary() else {
        eprintln!("skipping: no faultline-node binary (build it, or set FAULTLINE_NODE)");
        return;
    };
    if let Err(reason) = fusefs::fuse_available() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: {reason}");
        eprintln!("skipping: {reason}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (backing, data) = (tmp.path().join("backing"), tmp.path().join("data"));
    std::fs::create_dir(&backing).unwrap();
    std::fs::create_dir(&data).unwrap();
    let fs = FaultFs::mount(&backing, &data, &format!("test-node-{}", std::process::id())).unwrap();
    let status = Command::new(&binary)
        .args([
            "format",
            "--data-dir",
            data.to_str().unwrap(),
            "--cluster-id",
            "1",
            "--id",
            "0",
        ])
        .args(["--replica-count", "1"])
        .status()
        .unwrap();
    assert!(status.success());
    let ip = own_ip();
    let at = Addresses::fresh(&ip);
    let mut node = run(&binary, &data, at);
    wait_ready(at, &data.with_extension("log"));
    for i in 1..=50u64 {
        let (status, body) = http(
            at,
            "PUT",
            &format!("/kv/k{i}"),
            &format!("{{\"value\":\"v{i}\"}}"),
            7,
            i,
        )
        .unwrap();
        assert_eq!(status, 200, "{body}");
    }
    node.kill().unwrap();
    node.wait().unwrap();
    let record = fs.lose_unsynced();
    assert!(record.warnings.is_empty(), "{record:?}");

    let at = Addresses::fresh(&ip);
    let mut node = run(&binary, &data, at);
    wait_ready(at, &data.with_extension("log"));
    for i in 1..=50u64 {
        let (status, body) = http(at, "GET", &format!("/kv/k{i}"), "", 8, i).unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(
            body.contains(&format!("\"v{i}\"")),
            "k{i} lost after power loss: {body}"
        );
    }
    node.kill().unwrap();
    node.wait().unwrap();
    fs.unmount().unwrap();
}
