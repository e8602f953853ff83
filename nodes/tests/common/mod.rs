//! Test support: spawn real `faultline-node` processes on loopback and talk HTTP/1.1 to them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const NODE_BIN: &str = env!("CARGO_BIN_EXE_faultline-node");
pub const CLUSTER_ID: u64 = 4242;

/// A minimal HTTP response.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub body: serde_json::Value,
}

/// Sends one HTTP/1.1 request (Connection: close) and parses a JSON body.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, String)],
) -> Option<HttpResponse> {
    let mut stream = TcpStream::connect_timeout(&addr.parse().ok()?, Duration::from_millis(500)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(8))).ok()?;
    let body = body.unwrap_or("");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> Option<HttpResponse> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
    Some(HttpResponse { status, body })
}

/// A loopback address of its own for one cluster, `127.a.b.1`. Ports reserved on 127.0.0.1 and released (bind to 0)
/// race with every outbound connection on the machine, whose ephemeral source ports come from the same range on
/// 127.0.0.1; nothing dials out from a cluster's own address, so a port found free there stays free.
pub fn cluster_ip() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    format!("127.{}.{}.1", rng.gen_range(1..=254u8), rng.gen_range(0..=255u8))
}

/// One replica: its addresses, data dir and (when running) its process.
pub struct Node {
    pub id: u8,
    pub client_addr: String,
    pub peer_addr: String,
    pub data_dir: PathBuf,
    pub log_path: PathBuf,
    pub child: Option<Child>,
}

/// A cluster of replicas; kills every child on drop.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub _dir: tempfile::TempDir,
    /// `--view-change-timeout-ms` of every replica.
    pub view_change_timeout_ms: u64,
    /// `--heartbeat-interval-ms` of every replica (the node's default when None).
    pub heartbeat_interval_ms: Option<u64>,
    /// Extra `run` arguments per replica (e.g. `--bug NAME`).
    pub extra_args: Vec<Vec<String>>,
    /// (from, to) -> the address replica `from` dials to reach `to` (e.g. a test proxy); default: `to`'s peer address.
    pub dial: BTreeMap<(u8, u8), String>,
    /// Extra environment per replica (e.g. libfaketime's `LD_PRELOAD` and control file).
    pub env: Vec<Vec<(String, String)>>,
    /// The members of the first epoch (`format --members`); the others of the pool are formatted as joiners.
    pub members: Vec<u8>,
}

impl Cluster {
    /// Formats `count` replicas, all members (not started).
    pub fn new(count: u8) -> Cluster {
        Cluster::with_pool(count, &(0..count).collect::<Vec<u8>>())
    }

    /// Formats a pool of `count` replicas: `members` as the first epoch's members, the rest as joiners (not started).
    pub fn with_pool(count: u8, members: &[u8]) -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let ip = cluster_ip();
        // Every port of the cluster is reserved while the next is picked: a port released after a bind to port 0 may be
        // handed out again by the next bind to port 0 (seen: a node's client port equal to another's peer port).
        let reserved: Vec<TcpListener> = (0..2 * count)
            .map(|_| TcpListener::bind((ip.as_str(), 0)).expect("bind port 0"))
            .collect();
        let ports: Vec<u16> = reserved
            .iter()
            .map(|listener| listener.local_addr().expect("local addr").port())
            .collect();
        drop(reserved);
        let nodes = (0..count)
            .map(|id| Node {
                id,
                client_addr: format!("{ip}:{}", ports[2 * id as usize]),
                peer_addr: format!("{ip}:{}", ports[2 * id as usize + 1]),
                data_dir: dir.path().join(format!("n{}", id + 1)),
                log_path: dir.path().join(format!("n{}.log", id + 1)),
                child: None,
            })
            .collect();
        let cluster = Cluster {
            nodes,
            _dir: dir,
            view_change_timeout_ms: 400,
            heartbeat_interval_ms: None,
            extra_args: vec![Vec::new(); count as usize],
            dial: BTreeMap::new(),
            env: vec![Vec::new(); count as usize],
            members: members.to_vec(),
        };
        for id in 0..count {
            cluster.format(id, !members.contains(&id));
        }
        cluster
    }

    /// Runs `faultline-node format` for replica `id` (`join` marks the dir as wiped).
    pub fn format(&self, id: u8, join: bool) {
        let node = &self.nodes[id as usize];
        let mut command = Command::new(NODE_BIN);
        command.args(["format", "--data-dir"]).arg(&node.data_dir);
        command.args(["--cluster-id", &CLUSTER_ID.to_string(), "--id", &id.to_string()]);
        command.args(["--replica-count", &self.nodes.len().to_string(), "--force"]);
        if join {
            command.arg("--join");
        } else {
            let members: Vec<String> = self.members.iter().map(u8::to_string).collect();
            command.args(["--members", &members.join(",")]);
        }
        let status = command.stderr(Stdio::null()).status().expect("run format");
        assert!(status.success(), "format of replica {id} failed");
    }

    /// Passes `--bug NAME` to every replica from now on.
    pub fn with_bug(mut self, name: &str) -> Cluster {
        for args in &mut self.extra_args {
            args.extend(["--bug".to_string(), name.to_string()]);
        }
        self
    }

    /// Starts replica `id`, appending its stderr to its log file.
    pub fn start(&mut self, id: u8) {
        let count = self.nodes.len();
        let peers: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.id != id)
            .flat_map(|n| {
                let address = self.dial.get(&(id, n.id)).unwrap_or(&n.peer_addr);
                ["--peer".to_string(), format!("{}={address}", n.id)]
            })
            .collect();
        let mut options = vec![
            "--cluster-id".to_string(),
            CLUSTER_ID.to_string(),
            "--view-change-timeout-ms".to_string(),
            self.view_change_timeout_ms.to_string(),
        ];
        if let Some(interval_ms) = self.heartbeat_interval_ms {
            options.extend(["--heartbeat-interval-ms".to_string(), interval_ms.to_string()]);
        }
        options.extend(self.extra_args[id as usize].iter().cloned());
        let peer_clients: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.id != id)
            .flat_map(|n| ["--peer-client".to_string(), format!("{}={}", n.id, n.client_addr)])
            .collect();
        let env = self.env[id as usize].clone();
        let node = &mut self.nodes[id as usize];
        assert!(node.child.is_none() && count > 0);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log_path)
            .expect("log file");
        let child = Command::new(NODE_BIN)
            .args(["run", "--id", &id.to_string(), "--data-dir"])
            .arg(&node.data_dir)
            .args(["--client-addr", &node.client_addr, "--peer-addr", &node.peer_addr])
            .args(&options)
            .args(&peers)
            .args(&peer_clients)
            .envs(env)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn faultline-node");
        node.child = Some(child);
    }

    pub fn start_all(&mut self) {
        for id in 0..self.nodes.len() as u8 {
            self.start(id);
        }
    }

    /// kill -9.
    pub fn kill(&mut self, id: u8) {
        if let Some(mut child) = self.nodes[id as usize].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGSTOP (`resume` sends SIGCONT).
    pub fn pause(&self, id: u8) {
        self.signal(id, "-STOP");
    }

    pub fn resume(&self, id: u8) {
        self.signal(id, "-CONT");
    }

    fn signal(&self, id: u8, signal: &str) {
        let child = self.nodes[id as usize].child.as_ref().expect("replica is running");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} replica {id}");
    }

    /// Waits until replica `id` exits by itself; returns its exit status (None if still running at `timeout`).
    pub fn wait_exit(&mut self, id: u8, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let child = self.nodes[id as usize].child.as_mut()?;
            if let Ok(Some(status)) = child.try_wait() {
                self.nodes[id as usize].child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Kills replica `id` (kill -9) the moment `condition` holds, checking it every 200 µs (e.g. on the replica's
    /// superblock file, to stop it between two writes of one protocol step). Returns whether it held within `timeout`
    /// (when it did not, the replica is left running).
    pub fn kill_when(&mut self, id: u8, timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if condition() {
                self.kill(id);
                return true;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        false
    }

    pub fn log(&self, id: u8) -> String {
        std::fs::read_to_string(&self.nodes[id as usize].log_path).unwrap_or_default()
    }

    pub fn status(&self, id: u8) -> Option<serde_json::Value> {
        let response = http(&self.nodes[id as usize].client_addr, "GET", "/status", None, &[])?;
        (response.status == 200).then_some(response.body)
    }

    /// Waits until some running replica reports itself primary in normal status; returns its id.
    pub fn wait_for_primary(&self, timeout: Duration) -> Option<u8> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            for node in self.nodes.iter().filter(|n| n.child.is_some()) {
                if let Some(status) = self.status(node.id) {
                    if status["status"] == "normal" && status["role"] == "primary" {
                        return Some(node.id);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Waits until every running replica is normal with the same op, commit and head checksum.
    pub fn wait_converged(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let statuses: Vec<_> = self
                .nodes
                .iter()
                .filter(|n| n.child.is_some())
                .map(|n| self.status(n.id))
                .collect();
            if statuses
                .iter()
                .all(|s| s.as_ref().is_some_and(|s| s["status"] == "normal"))
            {
                let keys: Vec<_> = statuses
                    .iter()
                    .flatten()
                    .map(|s| (s["op"].clone(), s["commit"].clone(), s["head_checksum"].clone()))
                    .collect();
                if keys.windows(2).all(|w| w[0] == w[1]) && keys[0].0 == keys[0].1 {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// PUT a key on the current primary, retrying on 421/5xx until `timeout`; true once acknowledged.
    pub fn put(&self, key: &str, value: &str, timeout: Duration) -> bool {
        self.request_ok(
            "PUT",
            &format!("/kv/{key}"),
            &format!("{{\"value\":\"{value}\"}}"),
            timeout,
        )
        .is_some()
    }

    /// GET a key through the primary.
    pub fn get(&self, key: &str, timeout: Duration) -> Option<serde_json::Value> {
        self.request_ok("GET", &format!("/kv/{key}"), "", timeout)
            .map(|body| body["value"].clone())
    }

    /// Sends a request to whichever running replica answers 200, retrying until `timeout`.
    pub fn request_ok(&self, method: &str, path: &str, body: &str, timeout: Duration) -> Option<serde_json::Value> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            for node in self.nodes.iter().filter(|n| n.child.is_some()) {
                let body = (!body.is_empty()).then_some(body);
                let headers = [("X-Faultline-Deadline-Ms", "2000".to_string())];
                if let Some(response) = http(&node.client_addr, method, path, body, &headers) {
                    if response.status == 200 {
                        return Some(response.body);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    pub fn data_dir(&self, id: u8) -> &Path {
        &self.nodes[id as usize].data_dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for id in 0..self.nodes.len() as u8 {
            self.kill(id);
        }
    }
}

/// One directed replica link through a userspace proxy that can be cut (connections closed, new ones refused
/// right after accept) and healed. Replica traffic on a link flows one way only, so one copy loop suffices.
pub struct LinkProxy {
    pub address: String,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl LinkProxy {
    pub fn spawn(upstream: String) -> LinkProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        listener.set_nonblocking(true).expect("nonblocking listener");
        let proxy = LinkProxy {
            address: listener.local_addr().expect("proxy address").to_string(),
            cut: Arc::new(AtomicBool::new(false)),
            stop: Arc::new(AtomicBool::new(false)),
            streams: Arc::new(Mutex::new(Vec::new())),
        };
        let (cut, stop, streams) = (proxy.cut.clone(), proxy.stop.clone(), proxy.streams.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) if !cut.load(Ordering::Relaxed) => forward(client, &upstream, &streams),
                    Ok((client, _)) => drop(client),
                    Err(error) if error.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        proxy
    }

    /// Closes every forwarded connection; new ones are closed right after accept until `heal`.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
        for stream in self.streams.lock().expect("lock").drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::Relaxed);
    }

    /// Whether a connection was forwarded since the last `cut` (the replica has dialled again).
    pub fn connected(&self) -> bool {
        !self.streams.lock().expect("lock").is_empty()
    }
}

fn forward(client: TcpStream, upstream: &str, streams: &Mutex<Vec<TcpStream>>) {
    let _ = client.set_nonblocking(false);
    let address = upstream.parse().expect("upstream address");
    let Ok(server) = TcpStream::connect_timeout(&address, Duration::from_millis(500)) else {
        return;
    };
    let (Ok(client_handle), Ok(server_handle)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    streams.lock().expect("lock").extend([client_handle, server_handle]);
    std::thread::spawn(move || {
        let (mut from, mut to) = (client, server);
        let _ = std::io::copy(&mut from, &mut to);
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
    }
}
