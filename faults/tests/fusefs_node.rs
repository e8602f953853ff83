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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 request on a fresh connection; returns (status, body).
fn http(port: u16, method: &str, path: &str, body: &str, client_id: u64, request_number: u64) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
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

fn run(binary: &Path, data: &Path, port: u16) -> Child {
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
        .arg(format!("127.0.0.1:{port}"))
        .arg("--peer-addr")
        .arg(format!("127.0.0.1:{}", free_port()))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn wait_ready(port: u16, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    // A fresh client id per probe: the node refuses request numbers a client has used before.
    let mut probe = 1_000_000;
    while http(port, "GET", "/kv/probe", "", probe, 1).is_none_or(|(status, _)| status != 200) {
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
    let port = free_port();
    let mut node = run(&binary, &data, port);
    wait_ready(port, &data.with_extension("log"));
    for i in 1..=50u64 {
        let (status, body) = http(
            port,
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

    let port = free_port();
    let mut node = run(&binary, &data, port);
    wait_ready(port, &data.with_extension("log"));
    for i in 1..=50u64 {
        let (status, body) = http(port, "GET", &format!("/kv/k{i}"), "", 8, i).unwrap();
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
