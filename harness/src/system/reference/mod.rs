//! The reference system: `faultline-node`, a VSR replica with a hash-chained WAL, over its HTTP/JSON client API.
//! Its membership hooks (`POST /reconfigure`, `/status`'s members) are in [`membership`].

mod membership;

use super::{
    transport_outcome, txn_answer, txn_is_read_only, unknown, AdapterSpec, Bank, BankClient, BuildContext, Built,
    Capabilities, LogClient, NodeAddrs, NodeStatus, Outcome, ProbeError, Progress, Recovered, RegisterClient, Role,
    System, TxnClient,
};
use crate::plan::{Bounded, WorkloadKind};
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use async_trait::async_trait;
use faultline_workloads::models::cas_register::CAS_MISMATCH_ERROR;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// First client port; node i listens on `CLIENT_PORT_BASE + i` of the run's loopback address.
const CLIENT_PORT_BASE: u16 = 20_001;
/// First peer port.
const PEER_PORT_BASE: u16 = 21_001;
/// First port of the peer proxies (directed link i->j listens on `+ 10 i + j`; at most 9 nodes).
const PEER_PROXY_PORT_BASE: u16 = 22_000;
/// Redirect hops a client follows for one op before giving up (a redirect proves the op was not applied).
const REDIRECTS_MAX: usize = 3;

/// The plan section `system: {kind: reference, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceConfig {
    /// Cluster size (1..=9).
    pub nodes: Bounded<1, 9>,
    /// Path to `faultline-node`; default: the one next to the faultline executable when it was built from the same
    /// sources (its `--version` names them), else the node built into faultline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// Extra arguments for every node's run command (e.g. `--bug NAME`, the mutants of `nodes/README.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// How many of the nodes are members at the start (n1..nM); the others are spares that membership changes add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<serde_saphyr::Spanned<Bounded<1, 9>>>,
}

#[async_trait]
impl AdapterSpec for ReferenceConfig {
    fn node_command(&self) -> Result<(PathBuf, Vec<String>), String> {
        let program = NodeProgram::locate(self.binary.as_deref()).map_err(|e| format!("{e:#}"))?;
        Ok((program.program, program.prefix_args))
    }

    fn file_classes(&self) -> Vec<(String, String)> {
        // nodes/README.md, "On disk".
        [
            ("wal", "wal"),
            ("snapshot", "checkpoint.*"),
            ("superblock", "superblock"),
        ]
        .map(|(class, glob)| (class.to_string(), glob.to_string()))
        .to_vec()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: vec![
                WorkloadKind::Register,
                WorkloadKind::Log,
                WorkloadKind::Txn,
                WorkloadKind::Bank,
                WorkloadKind::LongFork,
            ],
            proxy_partitions: true,
            primary_probe: true,
            status_probe: true,
            wipe: true,
            offline_verify: true,
            durable_progress: true,
            // Its boot scan truncates only a torn last entry and refuses anything else that does not chain.
            refuses_interior_damage: true,
            repairing_pattern: true,
            repaired_pattern: true,
            membership: true,
        }
    }

    fn node_args_mut(&mut self) -> Option<&mut Vec<String>> {
        Some(&mut self.args)
    }

    fn members(&self) -> Option<serde_saphyr::Spanned<Bounded<1, 9>>> {
        self.members.clone()
    }

    async fn build(&self, context: BuildContext<'_>) -> anyhow::Result<Built> {
        let program = match context.remote {
            // The build of faultline installed on the hosts, whose embedded node is this one.
            Some(remote) => NodeProgram {
                program: remote.executable(0),
                prefix_args: vec!["node".into()],
            },
            None => NodeProgram::locate(self.binary.as_deref())?,
        };
        let node_count = context.node_count();
        let node_ips = context.node_ips(&ReferenceSystem::ports(node_count))?;
        let mut reference = ReferenceSystem::new(
            program.clone(),
            node_count,
            context.nodes_dir.clone(),
            node_ips.clone(),
            u64::from(rand::random::<u32>()),
            self.args.clone(),
        );
        reference.keep_spares(context.initial_members());
        reference.hands = context.hands.clone();
        let (network, routes) = context
            .proxied_network(
                |to| reference.addrs(to).peer,
                |from, to| ReferenceSystem::proxy_addr(node_ips[0], from, to),
            )
            .await?;
        if let Some(routes) = routes {
            reference.route_peers_through(routes);
        }
        Ok(Built {
            system: Arc::new(reference),
            binary: program.program,
            node_ips,
            network,
        })
    }
}

/// How long formatting a node's data dir may take.
const FORMAT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// How to run the node program.
#[derive(Debug, Clone)]
pub struct NodeProgram {
    /// Executable.
    pub program: PathBuf,
    /// Arguments before the node's own subcommand (the multicall fallback runs `faultline node ...`).
    pub prefix_args: Vec<String>,
}

impl NodeProgram {
    /// The plan's binary, else `faultline-node` next to the running executable, else this executable's embedded node
    /// (`faultline node ...`), so a fresh `cargo run --release -- run` works.
    pub fn locate(explicit: Option<&Path>) -> anyhow::Result<NodeProgram> {
        if let Some(path) = explicit {
            anyhow::ensure!(
                path.is_file(),
                "system.binary {} does not exist: build it (cargo build --release -p faultline-node) or fix the plan",
                path.display()
            );
            return Ok(NodeProgram {
                program: path.to_path_buf(),
                prefix_args: vec![],
            });
        }
        let exe = crate::supervisor::self_exe().context("cannot find the faultline executable")?;
        let sibling = exe.with_file_name("faultline-node");
        // A sibling built from other sources than the node compiled into this executable (an old build left in
        // target/ when `cargo build` rebuilt only the harness, or copied beside it, which gives it a fresh
        // modification time) would test other node code: use it only when its source identity is ours.
        if sibling.is_file() {
            match source_id_of(&sibling) {
                Some(id) if id == faultline_node::SOURCE_ID => {
                    return Ok(NodeProgram {
                        program: sibling,
                        prefix_args: vec![],
                    })
                }
                found => tracing::debug!(
                    "{} was built from other sources ({}) than the node in this faultline ({}): using the node \
                     built in (`cargo build --release -p faultline-node` rebuilds it)",
                    sibling.display(),
                    found.as_deref().unwrap_or("no source identity"),
                    faultline_node::SOURCE_ID
                ),
            }
        }
        Ok(NodeProgram {
            program: exe,
            prefix_args: vec!["node".into()],
        })
    }

    fn command(&self, args: Vec<String>) -> LaunchCommand {
        let mut all = self.prefix_args.clone();
        all.extend(args);
        LaunchCommand {
            program: self.program.clone(),
            args: all,
            env: vec![],
            env_clear: false,
            user: None,
        }
    }
}

/// The reference cluster of one run.
pub struct ReferenceSystem {
    program: NodeProgram,
    node_count: usize,
    nodes_dir: PathBuf,
    /// Each node's address (one loopback address for all, or each node's namespace address).
    node_ips: Vec<IpAddr>,
    cluster_id: u64,
    extra_args: Vec<String>,
    /// `peer_routes[i][j]`: where node i dials node j (a proxy of the mesh), when peer traffic is proxied.
    peer_routes: Option<Vec<Vec<SocketAddr>>>,
    /// The members at the start (the others are formatted as joiners).
    initial_members: Vec<usize>,
    /// The members as last listed (the next primary is the next of them).
    members: std::sync::Mutex<Vec<usize>>,
    /// Where each node's one-shot commands (format) run: its host's agent, or this machine (empty: here).
    hands: Vec<Arc<dyn crate::remote::hands::Hands>>,
}

impl ReferenceSystem {
    /// A cluster of `node_count` nodes at `node_ips` (fixed ports per node), data under `nodes_dir/n<i>/data`.
    pub fn new(
        program: NodeProgram,
        node_count: usize,
        nodes_dir: PathBuf,
        node_ips: Vec<IpAddr>,
        cluster_id: u64,
        extra_args: Vec<String>,
    ) -> Self {
        assert_eq!(node_ips.len(), node_count, "one address per node");
        ReferenceSystem {
            program,
            node_count,
            nodes_dir,
            node_ips,
            cluster_id,
            extra_args,
            peer_routes: None,
            initial_members: (0..node_count).collect(),
            members: std::sync::Mutex::new((0..node_count).collect()),
            hands: Vec::new(),
        }
    }

    /// Keeps every node but `members` out of the cluster at the start: spares, formatted as joiners.
    pub fn keep_spares(&mut self, members: Vec<usize>) {
        *self.members.lock().expect("members lock") = members.clone();
        self.initial_members = members;
    }

    /// Makes node i dial node j at `routes[i][j]` (the proxy of directed link i->j) instead of j's peer port.
    pub fn route_peers_through(&mut self, routes: Vec<Vec<SocketAddr>>) {
        assert_eq!(routes.len(), self.node_count, "one route row per node");
        self.peer_routes = Some(routes);
    }

    /// Where the directed link i->j's proxy listens: `PEER_PROXY_PORT_BASE + 10 i + j` on the run's address.
    pub fn proxy_addr(ip: IpAddr, from: usize, to: usize) -> SocketAddr {
        SocketAddr::new(ip, PEER_PROXY_PORT_BASE + (from * 10 + to) as u16)
    }

    /// Every port the cluster will listen on (for choosing a free loopback address).
    pub fn ports(node_count: usize) -> Vec<u16> {
        let nodes = (0..node_count as u16).flat_map(|i| [CLIENT_PORT_BASE + i, PEER_PORT_BASE + i]);
        let proxies =
            (0..node_count).flat_map(|i| (0..node_count).map(move |j| PEER_PROXY_PORT_BASE + (i * 10 + j) as u16));
        nodes.chain(proxies).collect()
    }

    fn client_urls(&self) -> Vec<String> {
        (0..self.node_count)
            .map(|i| format!("http://{}", self.addrs(i).client))
            .collect()
    }
}

impl ReferenceSystem {
    /// `faultline-node format` on a node's data dir, with extra flags.
    async fn format(&self, node: usize, extra: &[&str]) -> anyhow::Result<()> {
        let dir = self.data_dir(node);
        let mut cmd = self.program.command(vec![
            "format".into(),
            "--data-dir".into(),
            dir.display().to_string(),
            "--cluster-id".into(),
            self.cluster_id.to_string(),
            "--id".into(),
            node.to_string(),
            "--replica-count".into(),
            self.node_count.to_string(),
        ]);
        cmd.args.extend(extra.iter().map(|a| a.to_string()));
        let output = match self.hands.get(node) {
            Some(hands) => hands.output(&cmd, FORMAT_TIMEOUT).await.map_err(anyhow::Error::msg)?,
            None => tokio::process::Command::new(&cmd.program)
                .args(&cmd.args)
                .output()
                .await
                .with_context(|| format!("cannot run {}", cmd.display()))?,
        };
        anyhow::ensure!(
            output.status.success(),
            "formatting n{} failed ({}): {}",
            node + 1,
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
        Ok(())
    }

    fn launch_command(&self, node: usize) -> LaunchCommand {
        let me = self.addrs(node);
        let mut args = vec![
            "run".into(),
            "--id".into(),
            node.to_string(),
            "--data-dir".into(),
            self.data_dir(node).display().to_string(),
            "--cluster-id".into(),
            self.cluster_id.to_string(),
            "--client-addr".into(),
            me.client.to_string(),
            "--peer-addr".into(),
            me.peer.to_string(),
        ];
        for peer in (0..self.node_count).filter(|&p| p != node) {
            let addrs = self.addrs(peer);
            let dial = self
                .peer_routes
                .as_ref()
                .map_or(addrs.peer, |routes| routes[node][peer]);
            args.extend(["--peer".into(), format!("{peer}={dial}")]);
            args.extend(["--peer-client".into(), format!("{peer}={}", addrs.client)]);
        }
        args.extend(self.extra_args.iter().cloned());
        self.program.command(args)
    }
}

#[async_trait]
impl System for ReferenceSystem {
    fn kind(&self) -> &'static str {
        "reference"
    }

    fn node_count(&self) -> usize {
        self.node_count
    }

    fn data_dir(&self, node: usize) -> PathBuf {
        self.nodes_dir.join(format!("n{}", node + 1)).join("data")
    }

    fn addrs(&self, node: usize) -> NodeAddrs {
        NodeAddrs {
            client: SocketAddr::new(self.node_ips[node], CLIENT_PORT_BASE + node as u16),
            peer: SocketAddr::new(self.node_ips[node], PEER_PORT_BASE + node as u16),
        }
    }

    async fn prepare(&self, node: usize) -> anyhow::Result<()> {
        if !self.initial_members.contains(&node) {
            // A spare: a joiner that learns the cluster's epoch and waits until it is added.
            return self.format(node, &["--join"]).await;
        }
        let members: Vec<String> = self.initial_members.iter().map(usize::to_string).collect();
        self.format(node, &["--members", &members.join(",")]).await
    }

    fn initial_members(&self) -> Vec<usize> {
        self.initial_members.clone()
    }

    fn membership(&self) -> Option<&dyn crate::system::membership::Membership> {
        Some(self)
    }

    async fn wipe(&self, node: usize) -> anyhow::Result<()> {
        // `--force` replaces the old superblock and WAL; `--join` makes the replica recover before it votes or acks.
        self.format(node, &["--force", "--join"]).await
    }

    fn launch(&self, node: usize, _: super::StartKind) -> LaunchCommand {
        self.launch_command(node)
    }

    async fn probe(&self, node: usize, timeout: Duration) -> Result<NodeStatus, ProbeError> {
        let url = format!("http://{}/status", self.addrs(node).client);
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|_| ProbeError::NoAnswer)?;
        let response = client.get(url).send().await.map_err(|_| ProbeError::NoAnswer)?;
        let raw: Value = response.json().await.map_err(|_| ProbeError::NoAnswer)?;
        let role = match (raw["status"].as_str(), raw["role"].as_str()) {
            (Some("normal"), Some("primary")) => Role::Primary,
            (Some("normal"), Some("backup")) => Role::Backup,
            _ => Role::Other,
        };
        let commit_point = format!(
            "status={} op={} commit={} head={}",
            raw["status"].as_str().unwrap_or("?"),
            raw["op"],
            raw["commit"],
            raw["head_checksum"].as_str().unwrap_or("?")
        );
        let primary = raw["primary"]
            .as_u64()
            .map(|p| p as usize)
            .filter(|_| role != Role::Other);
        Ok(NodeStatus {
            role,
            primary,
            commit_point,
            raw,
        })
    }

    /// The node reports `commit` only after its own fsync of everything up to it (its loop fsyncs the WAL, then
    /// executes committed ops), so commit is durable as reported.
    fn progress(&self, status: &NodeStatus) -> Progress {
        let number = |field: &str| status.raw[field].as_u64();
        let numbers = ["op", "commit", "checkpoint"]
            .into_iter()
            .filter_map(|field| Some((field, number(field)?)))
            .collect();
        Progress {
            view: number("view"),
            durable: number("commit"),
            numbers,
        }
    }

    /// The boot's `rejoining: ... op=N` line: N is the head its WAL scan kept (torn tail already cut). A wiped node
    /// (VSR recovery) and a genesis replica print no such line.
    fn recovered(&self, boot_log: &str) -> Option<Recovered> {
        Recovered::from_line(boot_log, "rejoining: asking the cluster for the current view", " op=")
    }

    /// The replica's own log lines (nodes/src/replica/repair.rs, view_change.rs).
    fn log_patterns(&self) -> &[(&'static str, Cow<'static, str>)] {
        &[
            ("repairing", Cow::Borrowed("repair start")),
            ("repaired", Cow::Borrowed("repair done")),
            ("view-change", Cow::Borrowed("view change started")),
        ]
    }

    fn next_primary(&self, primary: usize) -> Option<usize> {
        // VSR: the members take turns in id order, so the next view's primary is the next member.
        let members = self.members.lock().expect("members lock");
        let next = members.iter().copied().find(|&member| member > primary);
        next.or_else(|| members.first().copied())
    }

    fn wal_glob(&self) -> &str {
        "wal*"
    }

    fn verify_command(&self, node: usize) -> Option<LaunchCommand> {
        Some(
            self.program
                .command(vec!["verify".into(), self.data_dir(node).display().to_string()]),
        )
    }

    fn boot_refusal_line(&self, log_tail: &str) -> Option<String> {
        log_tail
            .lines()
            .rev()
            // A data dir without its superblock (deleted by a cut) is refused too: "not formatted".
            .find(|line| line.contains("refusing to boot") || line.contains("is not formatted"))
            .map(|line| line.trim().to_string())
    }

    fn log_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> Option<Box<dyn LogClient>> {
        Some(Box::new(self.reference_client(home, op_timeout, client_id)))
    }

    fn register_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> Option<Box<dyn RegisterClient>> {
        Some(Box::new(self.reference_client(home, op_timeout, client_id)))
    }

    fn txn_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> Option<Box<dyn TxnClient>> {
        Some(Box::new(self.reference_client(home, op_timeout, client_id)))
    }

    fn bank_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> Option<Box<dyn BankClient>> {
        Some(Box::new(self.reference_client(home, op_timeout, client_id)))
    }
}

impl ReferenceSystem {
    fn reference_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> ReferenceClient {
        let http = reqwest::Client::builder()
            .connect_timeout(op_timeout.min(Duration::from_millis(500)))
            .timeout(op_timeout)
            .pool_max_idle_per_host(2)
            .build()
            .expect("building an HTTP client with static settings");
        ReferenceClient {
            http,
            nodes: self.client_urls(),
            home,
            op_timeout,
            client_id,
            request_number: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// Register client over the reference node's HTTP/JSON API.
struct ReferenceClient {
    http: reqwest::Client,
    /// `http://ip:port` per node.
    nodes: Vec<String>,
    home: usize,
    op_timeout: Duration,
    client_id: u64,
    request_number: std::sync::atomic::AtomicU64,
}

enum Verb<'a> {
    Read,
    Write(&'a str),
    Cas(&'a str, &'a str),
    Append(&'a str),
    ReadLog {
        from: u64,
        limit: u64,
    },
    /// `POST /txn` with the micro-op list.
    Txn(&'a Value),
}

impl ReferenceClient {
    /// Sends one op to the home node, following not-primary redirects (which prove the op was not applied).
    async fn call(&self, key: &str, verb: Verb<'_>) -> (Outcome, usize) {
        let deadline = tokio::time::Instant::now() + self.op_timeout;
        let request_number = self.request_number.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut node = self.home;
        let key = urlencode(key);
        for _ in 0..=REDIRECTS_MAX {
            let base = &self.nodes[node];
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if remaining.is_zero() {
                break;
            }
            let request = match verb {
                Verb::Read => self.http.get(format!("{base}/kv/{key}")),
                Verb::Write(value) => self.http.put(format!("{base}/kv/{key}")).json(&json!({"value": value})),
                Verb::Cas(from, to) => self
                    .http
                    .post(format!("{base}/kv/{key}/cas"))
                    .json(&json!({"from": from, "to": to})),
                Verb::Append(value) => self
                    .http
                    .post(format!("{base}/log/{key}"))
                    .json(&json!({"value": value})),
                Verb::ReadLog { from, limit } => self.http.get(format!("{base}/log/{key}?from={from}&limit={limit}")),
                Verb::Txn(ops) => self.http.post(format!("{base}/txn")).json(ops),
            }
            .timeout(remaining)
            .header("X-Faultline-Deadline-Ms", remaining.as_millis().to_string())
            .header("X-Client-Id", self.client_id.to_string())
            .header("X-Request-Number", request_number.to_string());
            let is_read = match verb {
                Verb::Read | Verb::ReadLog { .. } => true,
                Verb::Txn(ops) => txn_is_read_only(ops),
                _ => false,
            };
            let response = match request.send().await {
                Ok(response) => response,
                Err(e) => return (transport_outcome(&e, is_read), node),
            };
            let status = response.status().as_u16();
            let body: Value = match response.json().await {
                Ok(body) => body,
                Err(e) if status == 200 => return (unknown(is_read, format!("unreadable response body: {e}")), node),
                Err(_) => Value::Null,
            };
            match status {
                200 => return (Outcome::Ok(success_value(&verb, body)), node),
                // The cas ran and saw another value: an observation the checker uses (Porcupine's cas -> false).
                409 if body["error"] == "precondition failed" => {
                    return (Outcome::Fail(CAS_MISMATCH_ERROR.to_string()), node)
                }
                421 => match body["primary"].as_str().and_then(|addr| self.node_of(addr)) {
                    Some(primary) if primary != node => node = primary,
                    _ => {
                        return (
                            Outcome::Fail(format!("not primary, and no other primary known: {body}")),
                            node,
                        )
                    }
                },
                _ if body["outcome"] == "not-applied" => {
                    return (Outcome::Fail(format!("HTTP {status}: {body}")), node)
                }
                _ => return (unknown(is_read, format!("HTTP {status}: {body}")), node),
            }
        }
        (
            Outcome::Fail("gave up following redirects before sending to a primary".into()),
            node,
        )
    }

    fn node_of(&self, addr: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|url| url.strip_prefix("http://") == Some(addr))
    }
}

#[async_trait]
impl RegisterClient for ReferenceClient {
    async fn read(&self, key: &str) -> (Outcome, usize) {
        self.call(key, Verb::Read).await
    }

    async fn write(&self, key: &str, value: &str) -> (Outcome, usize) {
        self.call(key, Verb::Write(value)).await
    }

    async fn cas(&self, key: &str, from: &str, to: &str) -> (Outcome, usize) {
        self.call(key, Verb::Cas(from, to)).await
    }
}

/// What a successful op returned, in the history's shape.
fn success_value(verb: &Verb<'_>, body: Value) -> Value {
    match verb {
        Verb::Read => body["value"].clone(),
        Verb::Write(_) | Verb::Cas(..) => Value::Null,
        Verb::Txn(_) => body["value"].clone(),
        Verb::Append(_) => json!({"offset": body["offset"]}),
        Verb::ReadLog { from, .. } => {
            let entries: Vec<Value> = body["entries"]
                .as_array()
                .map(|entries| entries.iter().map(|e| json!([e["offset"], e["value"]])).collect())
                .unwrap_or_default();
            json!({"from": from, "entries": entries, "end": body["end"]})
        }
    }
}

#[async_trait]
impl LogClient for ReferenceClient {
    async fn append(&self, log: &str, payload: &str) -> (Outcome, usize) {
        self.call(log, Verb::Append(payload)).await
    }

    async fn read(&self, log: &str, from: u64, limit: u64) -> (Outcome, usize) {
        self.call(log, Verb::ReadLog { from, limit }).await
    }
}

#[async_trait]
impl TxnClient for ReferenceClient {
    async fn txn(&self, ops: &Value) -> (Outcome, usize) {
        let (outcome, node) = self.call("", Verb::Txn(ops)).await;
        match outcome {
            Outcome::Ok(value) => match txn_answer(ops, &value) {
                Ok(value) => (Outcome::Ok(value), node),
                Err(wrong) => (
                    unknown(txn_is_read_only(ops), format!("the node answered txn ok, but {wrong}")),
                    node,
                ),
            },
            other => (other, node),
        }
    }
}

/// The register of account `i` on the reference node.
fn account_key(i: u64) -> String {
    format!("bank-{i}")
}

/// The micro-op that opens account `i` if nobody has.
fn open_account(bank: Bank, i: u64) -> Value {
    json!(["init", account_key(i), bank.opening(i)])
}

/// The bank over `/txn`: a read is one transaction opening and reading every account, a transfer one opening both
/// accounts, debiting one and crediting the other (the node aborts it, with nothing applied, on an overdraft: a
/// `fail`).
#[async_trait]
impl BankClient for ReferenceClient {
    async fn read(&self, bank: Bank) -> (Outcome, usize) {
        let mut ops: Vec<Value> = (0..bank.accounts).map(|i| open_account(bank, i)).collect();
        ops.extend((0..bank.accounts).map(|i| json!(["r", account_key(i), null])));
        let ops = Value::Array(ops);
        match self.txn(&ops).await {
            (Outcome::Ok(filled), node) => {
                let reads = filled.as_array().into_iter().flatten().skip(bank.accounts as usize);
                let balances: serde_json::Map<String, Value> = (0..bank.accounts)
                    .zip(reads)
                    .map(|(i, op)| (i.to_string(), op[2].clone()))
                    .collect();
                (Outcome::Ok(Value::Object(balances)), node)
            }
            other => other,
        }
    }

    async fn transfer(&self, bank: Bank, from: u64, to: u64, amount: u64) -> (Outcome, usize) {
        let ops = json!([
            open_account(bank, from),
            open_account(bank, to),
            ["debit", account_key(from), amount],
            ["credit", account_key(to), amount]
        ]);
        match self.txn(&ops).await {
            (Outcome::Ok(_), node) => (Outcome::Ok(Value::Null), node),
            other => other,
        }
    }
}

fn urlencode(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The source identity a `faultline-node` binary prints in `--version` (`faultline-node 0.1.0 (source ID)`), or
/// `None` when it prints none (a node built before identities) or does not run.
fn source_id_of(binary: &Path) -> Option<String> {
    // A binary just written (copied beside faultline, or by a test) may still be open for writing in a child some
    // other thread forked before it execs: exec fails with ETXTBSY for that instant, so try again briefly.
    let mut tries = 0;
    let output = loop {
        match std::process::Command::new(binary).arg("--version").output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            result => break result.ok()?,
        }
    };
    let text = String::from_utf8(output.stdout).ok()?;
    let id = text.split("(source ").nth(1)?.split(')').next()?;
    Some(id.to_string())
}

#[cfg(test)]
mod source_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, version_line: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version_line}'\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn given_node_binaries_when_their_source_is_read_should_take_the_identity_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let ours = script(
            dir.path(),
            "ours",
            &format!("faultline-node 0.1.0 (source {})", faultline_node::SOURCE_ID),
        );
        assert_eq!(source_id_of(&ours).as_deref(), Some(faultline_node::SOURCE_ID));
        let old = script(dir.path(), "old", "faultline-node 0.1.0");
        assert_eq!(source_id_of(&old), None, "a node built before identities");
        assert_eq!(source_id_of(&dir.path().join("missing")), None);
    }
}
