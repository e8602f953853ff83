//! Overhead of the fault filesystem: plain dir vs the same disk through the fault FS.
//!
//! 1. Raw: 4 KiB appends with `fdatasync` every 8 writes (a WAL's shape).
//! 2. The reference node (`faultline-node`, single replica): `PUT /kv/k` throughput from a few keep-alive clients,
//!    with its data dir plain and then on the fault FS. Skipped when the binary is absent (build it with
//!    `cargo build --release -p faultline-nodes`; or point `FAULTLINE_NODE` at it).
//!
//! `cargo bench -p faultline-faults --bench fusefs` (root; /dev/fuse). `FAULTLINE_BENCH_SECS` sets each phase's
//! length (default 3).

use faultline_faults::fusefs::{self, FaultFs, FaultFsOptions};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const APPEND_BYTES: usize = 4096;
const WRITES_PER_SYNC: usize = 8;
const NODE_CLIENTS: usize = 4;

fn phase() -> Duration {
    let secs = std::env::var("FAULTLINE_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    Duration::from_secs(secs)
}

/// Appends 4 KiB blocks with an fdatasync every 8, for one phase; returns MiB/s and fsyncs/s.
fn raw_appends(dir: &Path) -> (f64, f64) {
    let path = dir.join("bench.wal");
    let mut file = OpenOptions::new().create(true).append(true).open(&path).unwrap();
    File::open(dir).unwrap().sync_all().unwrap();
    let block = vec![0xA5u8; APPEND_BYTES];
    let started = Instant::now();
    let mut writes = 0usize;
    while started.elapsed() < phase() {
        for _ in 0..WRITES_PER_SYNC {
            file.write_all(&block).unwrap();
        }
        file.sync_data().unwrap();
        writes += WRITES_PER_SYNC;
    }
    let secs = started.elapsed().as_secs_f64();
    drop(file);
    fs::remove_file(&path).unwrap();
    let mib = (writes * APPEND_BYTES) as f64 / (1024.0 * 1024.0);
    (mib / secs, (writes / WRITES_PER_SYNC) as f64 / secs)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Node {
    child: Child,
    client_port: u16,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_node(binary: &Path, data_dir: &Path) -> Node {
    let data = data_dir.to_str().unwrap();
    let status = Command::new(binary)
        .args([
            "format",
            "--data-dir",
            data,
            "--cluster-id",
            "1",
            "--id",
            "0",
            "--replica-count",
            "1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "faultline-node format failed");
    let (client_port, peer_port) = (free_port(), free_port());
    let child = Command::new(binary)
        .args(["run", "--id", "0", "--data-dir", data, "--cluster-id", "1"])
        .arg("--client-addr")
        .arg(format!("127.0.0.1:{client_port}"))
        .arg("--peer-addr")
        .arg(format!("127.0.0.1:{peer_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let node = Node { child, client_port };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut client = HttpClient::connect(client_port);
        if client.as_mut().is_some_and(|c| c.put("ready", 0, 0) == 200) {
            return node;
        }
        assert!(
            Instant::now() < deadline,
            "faultline-node did not accept a write within 20 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A minimal HTTP/1.1 keep-alive client: enough for `PUT /kv/k`.
struct HttpClient {
    reader: BufReader<TcpStream>,
}

impl HttpClient {
    fn connect(port: u16) -> Option<HttpClient> {
        let stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        stream.set_nodelay(true).ok()?;
        Some(HttpClient {
            reader: BufReader::new(stream),
        })
    }

    /// Returns the status code (0 on a transport error).
    fn put(&mut self, key: &str, client_id: u64, request_number: u64) -> u16 {
        let body = format!("{{\"value\":\"v{request_number}\"}}");
        let request = format!(
            "PUT /kv/{key} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-client-id: {client_id}\r\n\
             x-request-number: {request_number}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if self.reader.get_mut().write_all(request.as_bytes()).is_err() {
            return 0;
        }
        let mut status = 0u16;
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
                return 0;
            }
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some(code) = trimmed.strip_prefix("HTTP/1.1 ") {
                status = code.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
            } else if let Some((name, value)) = trimmed.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; length];
        if self.reader.read_exact(&mut body).is_err() {
            return 0;
        }
        status
    }
}

/// Acknowledged PUTs per second from `NODE_CLIENTS` clients over one phase.
fn node_throughput(binary: &Path, data_dir: &Path) -> f64 {
    let node = start_node(binary, data_dir);
    let started = Instant::now();
    let workers: Vec<_> = (0..NODE_CLIENTS)
        .map(|worker| {
            let port = node.client_port;
            std::thread::spawn(move || {
                let mut client = HttpClient::connect(port).expect("connect");
                let mut acked = 0u64;
                let mut request_number = 1;
                while started.elapsed() < phase() {
                    if client.put(&format!("k{worker}"), 100 + worker as u64, request_number) == 200 {
                        acked += 1;
                    }
                    request_number += 1;
                }
                acked
            })
        })
        .collect();
    let acked: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let secs = started.elapsed().as_secs_f64();
    drop(node);
    acked as f64 / secs
}

fn node_binary() -> Option<PathBuf> {
    let path = std::env::var_os("FAULTLINE_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/faultline-node"));
    path.is_file().then_some(path)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for a list; this bench has no test cases
    }
    if let Err(reason) = fusefs::fuse_available() {
        println!("fusefs bench skipped: {reason}");
        return;
    }
    let tmp = tempfile::tempdir_in(std::env::var_os("FAULTLINE_BENCH_DIR").unwrap_or_else(|| "/tmp".into())).unwrap();
    let (plain, backing, mounted) = (
        tmp.path().join("plain"),
        tmp.path().join("backing"),
        tmp.path().join("mnt"),
    );
    for dir in [&plain, &backing, &mounted] {
        fs::create_dir(dir).unwrap();
    }
    let tag = format!("bench-{}", std::process::id());
    let options = FaultFsOptions::default();
    println!(
        "fault FS overhead, {:?} per phase, {} FUSE threads",
        phase(),
        options.threads
    );

    let (plain_mib, plain_syncs) = raw_appends(&plain);
    let fs = FaultFs::mount_with(&backing, &mounted, &tag, options).unwrap();
    let (fault_mib, fault_syncs) = raw_appends(&mounted);
    println!("raw 4 KiB appends, fdatasync every {WRITES_PER_SYNC}:");
    println!("  plain dir : {plain_mib:8.1} MiB/s {plain_syncs:8.0} fsyncs/s");
    println!("  fault FS  : {fault_mib:8.1} MiB/s {fault_syncs:8.0} fsyncs/s");
    println!("  ratio     : {:8.2} (fault FS / plain)", fault_mib / plain_mib);

    match node_binary() {
        None => println!("reference node: skipped (no faultline-node binary; set FAULTLINE_NODE)"),
        Some(binary) => {
            let node_dir = mounted.join("n1");
            fs::create_dir(&node_dir).unwrap();
            let fault_ops = node_throughput(&binary, &node_dir);
            let stats = fs.stats();
            fs.unmount().unwrap();
            let plain_node = plain.join("n1");
            fs::create_dir(&plain_node).unwrap();
            let plain_ops = node_throughput(&binary, &plain_node);
            println!("reference node, 1 replica, {NODE_CLIENTS} clients, acknowledged PUT /kv/k:");
            println!("  plain dir : {plain_ops:8.0} ops/s");
            println!("  fault FS  : {fault_ops:8.0} ops/s (unsynced at the end: {stats:?})");
            println!("  ratio     : {:8.2} (fault FS / plain)", fault_ops / plain_ops);
            return;
        }
    }
    fs.unmount().unwrap();
}
