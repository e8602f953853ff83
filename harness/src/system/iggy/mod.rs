//! Apache Iggy's VSR cluster as a system under test: one `iggy-server` per replica, driven through its HTTP API.
//!
//! - Launch: a clean environment plus explicit `IGGY_*` variables (a debug server panics on an unknown `IGGY_*`
//!   variable, so nothing of the harness's environment leaks in), `--replica-id i`, the source tree's
//!   `core/server/config.toml` as the base config, one data dir and one set of ports per node, and the same roster on
//!   every node with the namespace addresses under the netns backend.
//! - Readiness: `/ping` answers and a login succeeds (the HTTP listener serves).
//! - Primary: a linearizable stream list sent with Iggy's forward loop-guard header (`iggy-forwarded: 1`): only the
//!   node that believes it is the VSR primary answers 200; a backup answers 503 instead of forwarding. The roles of
//!   `/cluster/metadata` are `view % n` even mid view change, so they are not trusted.
//! - Commit point: the view (`iggy-view` header) and a digest of the node's local stream list.
//! - WAL: `metadata/journal.wal` (hash-chained, 256-byte headers), `metadata/superblock.*`, `metadata/snapshot.bin`.
//!   Boot refuses interior damage (`interior WAL corruption ...`, `... does not chain ...`, `refusing to truncate`) and
//!   exits 1. Exit code 1 also means a port in use, so a refusal is told by its log line, never by the exit code.
//! - Operator remedy after a legitimate refusal: empty the node's data dir; it rejoins by repair / state transfer.
//! - Logs (message workload): log `logK` is partition K of topic `t` of stream `faultline-log` (the probes' logs
//!   take the last two partitions). Each partition is its own consensus group; a send must reach that group's
//!   primary (a backup answers 503 `transient_not_accepted`, a promise that nothing was applied), so the client tries
//!   the nodes in turn. Default topics keep messages in memory: plans must say `durability: quorum-memory`.
//!
//! Measured facts behind these choices: `shared/systems/iggy.md`.

mod client;

use super::{
    error_chain, AdapterSpec, BuildContext, Built, Capabilities, LogClient, NodeAddrs, NodeStatus, ProbeError,
    Progress, Role, SetClient, System,
};
use crate::plan::{Bounded, WorkloadKind};
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use async_trait::async_trait;
use client::{IggyLogClient, IggySetClient};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Client TCP ports start here; node i uses `base + i` for every transport.
const TCP_PORT_BASE: u16 = 25_001;
/// Replica-to-replica (VSR) TCP.
const REPLICA_PORT_BASE: u16 = 25_101;
/// HTTP API.
const HTTP_PORT_BASE: u16 = 25_201;
/// QUIC (disabled, but the roster needs a port).
const QUIC_PORT_BASE: u16 = 25_301;
/// WebSocket (disabled, but the roster needs a port).
const WEBSOCKET_PORT_BASE: u16 = 25_401;
/// The binary when the plan names none.
pub const BINARY_ENV: &str = "FAULTLINE_IGGY_BIN";
/// The source tree when the plan names none.
pub const SOURCE_ENV: &str = "FAULTLINE_IGGY_SRC";
/// The server's base config inside the source tree.
const CONFIG_IN_SOURCE: &str = "core/server/config.toml";
const ROOT_USERNAME: &str = "iggy";
const ROOT_PASSWORD: &str = "faultline-iggy";
/// Iggy's forward loop guard: a backup that sees it answers 503 instead of forwarding to the primary.
const FORWARDED_HEADER: &str = "iggy-forwarded";
/// The view a node serves in, stamped on successful answers.
const VIEW_HEADER: &str = "iggy-view";
/// Words of an error line that say the node stopped on its data (WAL, superblock, snapshot).
const REFUSAL_MARKERS: &[&str] = &[
    "refusing",
    "WAL corruption",
    "does not chain",
    "checksum mismatch",
    "MetadataRecovery",
    "failed to recover metadata",
    "superblock",
    "snapshot",
    "InvalidData",
];
/// Words of an error line that say the node stopped for another reason (exit code 1 as well).
const NOT_DATA_MARKERS: &[&str] = &["CannotBindToSocket", "Cannot bind", "Address already in use"];
/// The plan section `system: {kind: iggy, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IggyConfig {
    /// Cluster size (1..=9).
    pub nodes: Bounded<1, 9>,
    /// Path to an `iggy-server` build; default `FAULTLINE_IGGY_BIN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// The source tree the binary was built from (its `core/server/config.toml` is the base config); default
    /// `FAULTLINE_IGGY_SRC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_root: Option<PathBuf>,
}

#[async_trait]
impl AdapterSpec for IggyConfig {
    fn node_command(&self) -> Result<(PathBuf, Vec<String>), String> {
        let (binary, _) =
            IggySystem::locate(self.binary.as_deref(), self.source_root.as_deref()).map_err(|e| format!("{e:#}"))?;
        Ok((binary, Vec::new()))
    }

    fn file_classes(&self) -> Vec<(String, String)> {
        // The metadata journal (the consensus log), and the partitions' message segments.
        [
            ("wal", "metadata/journal.wal"),
            ("data", "streams/*/topics/*/partitions/*/*.log"),
        ]
        .map(|(class, glob)| (class.to_string(), glob.to_string()))
        .to_vec()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // Streams on the metadata plane (set) and messages on a topic's partitions (log); no registers.
            workloads: vec![WorkloadKind::Set, WorkloadKind::Log],
            // Replicas dial each other at the roster's addresses, which a proxy mesh cannot stand in for.
            proxy_partitions: false,
            primary_probe: true,
            status_probe: true,
            wipe: true,
            offline_verify: false,
            // Its status names no op number the harness can compare across a restart.
            durable_progress: false,
            refuses_interior_damage: false,
            repairing_pattern: false,
            repaired_pattern: false,
            membership: false,
        }
    }

    async fn build(&self, context: BuildContext<'_>) -> anyhow::Result<Built> {
        let (binary, config) = IggySystem::locate(self.binary.as_deref(), self.source_root.as_deref())?;
        let node_count = context.node_count();
        let node_ips = context.node_ips(&IggySystem::ports(node_count))?;
        let system = IggySystem::new(
            binary.clone(),
            config,
            node_count,
            context.nodes_dir.clone(),
            node_ips.clone(),
            context.run_id,
            context.plan.workload.keys.0 as u32,
        );
        Ok(Built {
            system: Arc::new(system),
            binary,
            node_ips,
            network: context.netns_network().await?,
        })
    }
}

/// The Iggy cluster of one run.
pub struct IggySystem {
    program: PathBuf,
    config: PathBuf,
    node_count: usize,
    nodes_dir: PathBuf,
    node_ips: Vec<IpAddr>,
    cluster_name: String,
    shared_secret: String,
    /// A bearer token for probes (cluster-wide: every node accepts it), learned from the first login that worked.
    probe_token: Mutex<Option<String>>,
    /// Partitions of the message workload's topic (its logs plus the final phase's two probe logs).
    log_partitions: u32,
    /// The message workload's stream and topic exist.
    log_topic_ready: Arc<AtomicBool>,
}

impl IggySystem {
    /// A cluster of `node_count` replicas at `node_ips`, data under `nodes_dir/n<i>/data`; `run_tag` names the cluster
    /// and seeds its replica secret.
    pub fn new(
        program: PathBuf,
        config: PathBuf,
        node_count: usize,
        nodes_dir: PathBuf,
        node_ips: Vec<IpAddr>,
        run_tag: &str,
        workload_logs: u32,
    ) -> Self {
        assert_eq!(node_ips.len(), node_count, "one address per node");
        IggySystem {
            program,
            config,
            node_count,
            nodes_dir,
            node_ips,
            cluster_name: format!("faultline-{run_tag}"),
            shared_secret: format!("faultline-{run_tag}-replica-secret-0123456789abcdef"),
            probe_token: Mutex::new(None),
            log_partitions: workload_logs + 2,
            log_topic_ready: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The binary (plan, else `FAULTLINE_IGGY_BIN`) and its base config (plan's `source_root`, else
    /// `FAULTLINE_IGGY_SRC`, joined with `core/server/config.toml`).
    pub fn locate(binary: Option<&Path>, source_root: Option<&Path>) -> anyhow::Result<(PathBuf, PathBuf)> {
        let from_env = |name: &str| std::env::var_os(name).map(PathBuf::from);
        let program = binary
            .map(Path::to_path_buf)
            .or_else(|| from_env(BINARY_ENV))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no iggy-server: set system.binary in the plan or {BINARY_ENV} (Iggy is built from source)"
                )
            })?;
        anyhow::ensure!(program.is_file(), "iggy-server {} does not exist", program.display());
        let source = source_root
            .map(Path::to_path_buf)
            .or_else(|| from_env(SOURCE_ENV))
            .ok_or_else(|| {
                anyhow::anyhow!(
                "no Iggy source tree for the server's base config: set system.source_root in the plan or {SOURCE_ENV}"
            )
            })?;
        let config = source.join(CONFIG_IN_SOURCE);
        anyhow::ensure!(config.is_file(), "{} does not exist", config.display());
        Ok((program, config))
    }

    /// Every port the cluster listens on (for choosing a free loopback address).
    pub fn ports(node_count: usize) -> Vec<u16> {
        (0..node_count as u16)
            .flat_map(|i| [TCP_PORT_BASE + i, REPLICA_PORT_BASE + i, HTTP_PORT_BASE + i])
            .collect()
    }

    fn name(node: usize) -> String {
        format!("n{}", node + 1)
    }

    fn http_base(&self, node: usize) -> String {
        format!("http://{}", self.addrs(node).client)
    }

    fn http(timeout: Duration) -> reqwest::Client {
        reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_millis(500)))
            .timeout(timeout)
            .pool_max_idle_per_host(2)
            .redirect(reqwest::redirect::Policy::limited(2))
            .build()
            .expect("building an HTTP client with static settings")
    }

    /// The roster and settings every node shares, then this node's own.
    fn environment(&self, node: usize) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = vec![
            ("IGGY_CONFIG_PATH".into(), self.config.display().to_string()),
            ("IGGY_CLUSTER_ENABLED".into(), "true".into()),
            ("IGGY_CLUSTER_NAME".into(), self.cluster_name.clone()),
            ("IGGY_MESSAGE_BUS_RECONNECT_PERIOD".into(), "100ms".into()),
            ("IGGY_CLUSTER_AUTH_ENABLED".into(), "true".into()),
            ("IGGY_CLUSTER_AUTH_SHARED_SECRET".into(), self.shared_secret.clone()),
        ];
        for j in 0..self.node_count {
            let port = |base: u16| (base + j as u16).to_string();
            let prefix = format!("IGGY_CLUSTER_NODES_{j}_");
            env.extend([
                (format!("{prefix}NAME"), Self::name(j)),
                (format!("{prefix}IP"), self.node_ips[j].to_string()),
                (format!("{prefix}REPLICA_ID"), j.to_string()),
                (format!("{prefix}PORTS_TCP"), port(TCP_PORT_BASE)),
                (format!("{prefix}PORTS_TCP_REPLICA"), port(REPLICA_PORT_BASE)),
                (format!("{prefix}PORTS_HTTP"), port(HTTP_PORT_BASE)),
                (format!("{prefix}PORTS_QUIC"), port(QUIC_PORT_BASE)),
                (format!("{prefix}PORTS_WEBSOCKET"), port(WEBSOCKET_PORT_BASE)),
            ]);
        }
        let ip = self.node_ips[node];
        let at = |base: u16| SocketAddr::new(ip, base + node as u16).to_string();
        env.extend([
            ("IGGY_SYSTEM_PATH".into(), self.data_dir(node).display().to_string()),
            ("IGGY_TCP_ADDRESS".into(), at(TCP_PORT_BASE)),
            ("IGGY_HTTP_ADDRESS".into(), at(HTTP_PORT_BASE)),
            ("IGGY_QUIC_ADDRESS".into(), at(QUIC_PORT_BASE)),
            ("IGGY_WEBSOCKET_ADDRESS".into(), at(WEBSOCKET_PORT_BASE)),
            ("IGGY_QUIC_ENABLED".into(), "false".into()),
            ("IGGY_WEBSOCKET_ENABLED".into(), "false".into()),
            ("IGGY_SYSTEM_SHARDING_CPU_ALLOCATION".into(), "1".into()),
            ("IGGY_SYSTEM_SHARDING_PIN_CORES".into(), "false".into()),
            ("IGGY_SYSTEM_MEMORY_POOL_SIZE".into(), "512 MiB".into()),
            ("IGGY_SHARD_RUNTIME_CAPACITY".into(), "256".into()),
            ("IGGY_ROOT_USERNAME".into(), ROOT_USERNAME.into()),
            ("IGGY_ROOT_PASSWORD".into(), ROOT_PASSWORD.into()),
        ]);
        env
    }

    /// The cached probe token, or a fresh one from `node`.
    async fn probe_token(&self, http: &reqwest::Client, node: usize) -> Option<String> {
        if let Some(token) = self.probe_token.lock().expect("probe token lock").clone() {
            return Some(token);
        }
        let token = login(http, &self.http_base(node)).await.ok()?;
        *self.probe_token.lock().expect("probe token lock") = Some(token.clone());
        Some(token)
    }
}

/// Logs in as root on `base`: the bearer token (valid on every node: the key derives from the cluster secret).
async fn login(http: &reqwest::Client, base: &str) -> Result<String, String> {
    let response = http
        .post(format!("{base}/users/login"))
        .json(&json!({"username": ROOT_USERNAME, "password": ROOT_PASSWORD}))
        .send()
        .await
        .map_err(|e| format!("login: {}", error_chain(&e)))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    match body["access_token"]["token"].as_str() {
        Some(token) if status.is_success() => Ok(token.to_string()),
        _ => Err(format!("login: HTTP {status}: {body}")),
    }
}

/// A stream list answer: the serving view and the list.
struct StreamList {
    status: u16,
    view: Option<String>,
    body: Value,
}

async fn list_streams(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    linearizable_here: bool,
) -> reqwest::Result<StreamList> {
    let mut request = http.get(format!("{base}/streams")).bearer_auth(token);
    if linearizable_here {
        request = request
            .query(&[("consistency", "linearizable")])
            .header(FORWARDED_HEADER, "1");
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let view = response
        .headers()
        .get(VIEW_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.json().await.unwrap_or(Value::Null);
    Ok(StreamList { status, view, body })
}

/// `id:name` of every stream, sorted: equal on nodes that applied the same metadata ops.
fn streams_digest(list: &Value) -> (usize, u64) {
    let mut entries: Vec<String> = list
        .as_array()
        .map(|streams| {
            streams
                .iter()
                .map(|s| format!("{}:{}", s["id"], s["name"].as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    (entries.len(), xxhash_rust::xxh3::xxh3_64(entries.join("\n").as_bytes()))
}

#[async_trait]
impl System for IggySystem {
    /// Its probe is a ping, a login once, and one or two stream lists (the primary's is linearizable): every 100 ms on
    /// every node would be a load of its own, and its status names no progress number to follow closely.
    fn observe_interval(&self) -> Duration {
        Duration::from_secs(1)
    }

    /// The view of the node's stream-list answer (`iggy-view`): with it the trigger engine and the `primary` target
    /// tell a new primary from an old one still claiming its view behind a partition (`stale-primary`).
    fn progress(&self, status: &NodeStatus) -> Progress {
        Progress {
            view: status.raw["view"].as_str().and_then(|view| view.trim().parse().ok()),
            ..Progress::default()
        }
    }

    fn kind(&self) -> &'static str {
        "iggy"
    }

    fn node_count(&self) -> usize {
        self.node_count
    }

    fn data_dir(&self, node: usize) -> PathBuf {
        self.nodes_dir.join(Self::name(node)).join("data")
    }

    fn addrs(&self, node: usize) -> NodeAddrs {
        NodeAddrs {
            client: SocketAddr::new(self.node_ips[node], HTTP_PORT_BASE + node as u16),
            peer: SocketAddr::new(self.node_ips[node], REPLICA_PORT_BASE + node as u16),
        }
    }

    async fn prepare(&self, node: usize) -> anyhow::Result<()> {
        let dir = self.data_dir(node);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))
    }

    async fn wipe(&self, node: usize) -> anyhow::Result<()> {
        super::empty_data_dir(&self.data_dir(node))?;
        Ok(())
    }

    fn launch(&self, node: usize, _: super::StartKind) -> LaunchCommand {
        LaunchCommand {
            program: self.program.clone(),
            args: vec!["--replica-id".into(), node.to_string()],
            env: self.environment(node),
            env_clear: true,
            user: None,
        }
    }

    async fn probe(&self, node: usize, timeout: Duration) -> Result<NodeStatus, ProbeError> {
        self.status_of(node, timeout).await.ok_or(ProbeError::NoAnswer)
    }

    fn next_primary(&self, primary: usize) -> Option<usize> {
        Some((primary + 1) % self.node_count) // VSR: the primary of view v is replica v mod n
    }

    fn wal_glob(&self) -> &str {
        "metadata/journal.wal"
    }

    fn verify_command(&self, _node: usize) -> Option<LaunchCommand> {
        None // Iggy ships no offline verifier; boot is the verification.
    }

    fn boot_refusal_line(&self, log_tail: &str) -> Option<String> {
        let text = faultline_workloads::checker::strip_ansi(log_tail);
        let errors: Vec<&str> = text
            .lines()
            .filter(|line| line.contains("ERROR") || line.trim_start().starts_with("Error:"))
            .collect();
        if errors
            .iter()
            .any(|line| NOT_DATA_MARKERS.iter().any(|m| line.contains(m)))
        {
            return None;
        }
        let line = errors
            .iter()
            .rev()
            .find(|line| REFUSAL_MARKERS.iter().any(|m| line.contains(m)))?;
        Some(refusal_summary(line))
    }

    fn log_client(&self, home: usize, op_timeout: Duration, _client_id: u64) -> Option<Box<dyn LogClient>> {
        Some(Box::new(IggyLogClient {
            http: Self::http(op_timeout),
            bases: (0..self.node_count).map(|n| self.http_base(n)).collect(),
            home,
            token: Mutex::new(None),
            partitions: self.log_partitions,
            topic_ready: self.log_topic_ready.clone(),
        }))
    }

    fn set_client(&self, home: usize, op_timeout: Duration, _client_id: u64) -> Option<Box<dyn SetClient>> {
        Some(Box::new(IggySetClient {
            http: Self::http(op_timeout),
            base: self.http_base(home),
            home,
            token: Mutex::new(None),
        }))
    }
}

impl IggySystem {
    /// The status of a node that answers, as [`System::probe`] reports it.
    async fn status_of(&self, node: usize, timeout: Duration) -> Option<NodeStatus> {
        let http = Self::http(timeout);
        let base = self.http_base(node);
        let ping = http.get(format!("{base}/ping")).send().await.ok()?;
        if !ping.status().is_success() {
            return None;
        }
        let token = self.probe_token(&http, node).await?;
        let serving = list_streams(&http, &base, &token, true).await.ok()?;
        if serving.status == 401 {
            self.probe_token.lock().expect("probe token lock").take();
            return None;
        }
        let (role, list) = if serving.status == 200 {
            (Role::Primary, serving)
        } else {
            let local = list_streams(&http, &base, &token, false).await.ok()?;
            (Role::Backup, local)
        };
        let commit_point = if list.status == 200 {
            let (count, digest) = streams_digest(&list.body);
            let view = list.view.as_deref().unwrap_or("?");
            format!("view={view} streams={count} digest={digest:016x}")
        } else {
            // Never equal across nodes: a node that cannot serve its own state has not converged.
            format!("{} cannot list streams: HTTP {}", Self::name(node), list.status)
        };
        Some(NodeStatus {
            role,
            primary: (role == Role::Primary).then_some(node),
            commit_point,
            raw: json!({"http_status": list.status, "view": list.view, "role": format!("{role:?}")}),
        })
    }
}

/// The server's own error text (`error: "..."`) of a refusal line, else the line.
fn refusal_summary(line: &str) -> String {
    let inner = line
        .split_once("error: \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(text, _)| text);
    match inner {
        Some(text) => format!("iggy refused to boot: {text}"),
        None => line.trim().chars().take(400).collect(),
    }
}

#[cfg(test)]
mod tests;
