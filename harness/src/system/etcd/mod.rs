//! etcd 3.4 (Debian's `etcd-server`) as a system under test: a static-bootstrap Raft cluster driven through its
//! v3 HTTP/JSON gateway (every call a POST, keys and values base64, int64 as JSON strings).
//!
//! - Readiness: `/v3/maintenance/status` answers. etcd's client listener only serves once the member has published
//!   itself through Raft, so a restarted member is "ready" once it has rejoined a quorum.
//! - Primary: the Raft leader, from the status of any member (`leader` equals its own `header.member_id`).
//! - WAL: `member/wal/*.wal` (64 MB preallocated segments; disk surgery aims at their written data), snapshots in
//!   `member/snap`. etcd verifies WAL record CRCs at boot and exits 1 with a `fatal` JSON log line.
//! - Operator remedy after a legitimate refusal: remove the member through a live peer, add it back, wipe its data
//!   dir and start it with `--initial-cluster-state existing`: it catches up from the leader's snapshot and log.
//! - Membership ([`membership`]): `member add` through a live member, then the joiner started with
//!   `--initial-cluster-state existing` and the current members in `--initial-cluster`; `member remove` by the ID
//!   `member list` gives its peer URL; the members are `member list`'s, by peer URL.
//!
//! Measured facts behind these choices: `shared/systems/etcd.md`.

mod membership;

use super::{
    transport_outcome, unknown, AdapterSpec, BuildContext, Built, Capabilities, NodeAddrs, NodeStatus, Outcome,
    ProbeError, Progress, Recovered, RegisterClient, Role, System,
};
use crate::plan::{Bounded, WorkloadKind};
use crate::remote::hands::Hands;
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use faultline_workloads::models::cas_register::CAS_MISMATCH_ERROR;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

/// First client port; member i listens on `CLIENT_PORT_BASE + i` of its address.
const CLIENT_PORT_BASE: u16 = 23_001;
/// First peer port.
const PEER_PORT_BASE: u16 = 24_001;
/// Where etcd is looked for when the plan names no binary (Debian's `etcd-server`).
const DEFAULT_BINARY: &str = "/usr/bin/etcd";
/// gRPC status codes that prove a request was rejected before it was proposed (InvalidArgument, OutOfRange).
const DEFINITE_FAILURE_CODES: &[i64] = &[3, 11];
/// How long a wipe keeps trying to remove and re-add a member.
const READD_TIMEOUT: Duration = Duration::from_secs(30);
/// Log lines of a boot that stopped on damaged or missing data (as opposed to a port in use or a bad flag).
const REFUSAL_MARKERS: &[&str] = &[
    "crc mismatch",
    "illegal tag",
    "proto: ",
    "wal: file not found",
    "walpb:",
    "unexpected EOF",
    "failed to find database snapshot file",
    "snap: ",
    "failed to recover",
    "failed to open WAL",
    "failed to read WAL",
    "wal: ",
    // raft's own panic when the leader sends a commit index past what the member's WAL kept: its log lost a tail
    // it had acknowledged (a cut tail etcd took for a torn write and dropped).
    "Was the raft log corrupted, truncated, or lost?",
    // raft's panic at boot when the WAL kept no member id: a WAL cut down to its first records.
    "cannot use none as id",
];

/// The plan section `system: {kind: etcd, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdConfig {
    /// Cluster size (1..=9).
    pub nodes: Bounded<1, 9>,
    /// Path to etcd; default `/usr/bin/etcd`, else `etcd` on PATH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// Extra arguments for every member's command line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A deliberately broken client: read with `serializable: true` (the member's local state, possibly stale)
    /// instead of a linearizable range. Proves the pipeline can fail on etcd; never for real testing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serializable_reads: bool,
    /// How many of the nodes bootstrap the cluster (n1..nM); the others are spares that membership changes add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<serde_saphyr::Spanned<Bounded<1, 9>>>,
}

#[async_trait]
impl AdapterSpec for EtcdConfig {
    fn node_command(&self) -> Result<(PathBuf, Vec<String>), String> {
        let binary = EtcdSystem::locate(self.binary.as_deref()).map_err(|e| format!("{e:#}"))?;
        Ok((binary, Vec::new()))
    }

    fn file_classes(&self) -> Vec<(String, String)> {
        // etcd 3.4's data dir: the WAL segments, the raft snapshots, and the bbolt backend.
        [
            ("wal", "member/wal/*.wal"),
            ("snapshot", "member/snap/*.snap"),
            ("data", "member/snap/db"),
        ]
        .map(|(class, glob)| (class.to_string(), glob.to_string()))
        .to_vec()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: vec![WorkloadKind::Register],
            // Members also use peer connections they open themselves (and advertise), which a proxy cannot cut.
            proxy_partitions: false,
            primary_probe: true,
            status_probe: true,
            wipe: true,
            offline_verify: false,
            // raftAppliedIndex, settled (see `EtcdSystem::durable_settle`); raft's `newRaft ... lastindex` says the rest.
            durable_progress: true,
            // etcd 3.4 takes interior damage that looks torn (a zeroed block, a length flip) for a torn write.
            refuses_interior_damage: false,
            repairing_pattern: false,
            repaired_pattern: false,
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
        let binary = match context.remote {
            // The hosts' own etcd (a spawn that cannot find it says so, naming the path and the host).
            Some(_) => self.binary.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_BINARY)),
            None => EtcdSystem::locate(self.binary.as_deref())?,
        };
        let node_count = context.node_count();
        let node_ips = context.node_ips(&EtcdSystem::ports(node_count))?;
        let mut system = EtcdSystem::new(
            binary.clone(),
            node_count,
            context.nodes_dir.clone(),
            node_ips.clone(),
            format!("faultline-{}", context.run_id),
            self.args.clone(),
            self.serializable_reads,
        );
        system.initial_members = context.initial_members();
        system.hands = context.hands.clone();
        Ok(Built {
            system: Arc::new(system),
            binary,
            node_ips,
            network: context.netns_network().await?,
        })
    }
}

/// The etcd cluster of one run.
pub struct EtcdSystem {
    program: PathBuf,
    node_count: usize,
    nodes_dir: PathBuf,
    node_ips: Vec<IpAddr>,
    token: String,
    extra_args: Vec<String>,
    /// A deliberately broken client: reads with `serializable: true` (local, possibly stale).
    serializable_reads: bool,
    /// Raft member id of each node, learned from its own status answers (ids change when a member is re-added).
    member_ids: Mutex<Vec<Option<String>>>,
    /// Nodes re-added after a wipe, or added as new members: they join the running cluster with these members in
    /// `--initial-cluster` (themselves included) instead of bootstrapping a new one.
    rejoined: Mutex<Vec<Option<Vec<usize>>>>,
    /// The members that bootstrap the cluster.
    initial_members: Vec<usize>,
    /// Each node's hands (its data dir is on its machine: this one, or its host).
    hands: Vec<Arc<dyn Hands>>,
}

impl EtcdSystem {
    /// A cluster of `node_count` members at `node_ips`, data under `nodes_dir/n<i>/data`; `token` keeps clusters of
    /// concurrent runs apart.
    pub fn new(
        program: PathBuf,
        node_count: usize,
        nodes_dir: PathBuf,
        node_ips: Vec<IpAddr>,
        token: String,
        extra_args: Vec<String>,
        serializable_reads: bool,
    ) -> Self {
        assert_eq!(node_ips.len(), node_count, "one address per node");
        EtcdSystem {
            program,
            node_count,
            nodes_dir,
            node_ips,
            token,
            extra_args,
            serializable_reads,
            member_ids: Mutex::new(vec![None; node_count]),
            rejoined: Mutex::new(vec![None; node_count]),
            initial_members: (0..node_count).collect(),
            hands: Vec::new(),
        }
    }

    /// Empties node `node`'s data dir on its machine.
    pub(super) async fn empty_data_dir(&self, node: usize) -> anyhow::Result<()> {
        let dir = self.data_dir(node);
        match self.hands.get(node) {
            Some(hands) => {
                hands.make_dir(&dir, None).await.map_err(anyhow::Error::msg)?;
                hands.empty_dir(&dir).await.map_err(anyhow::Error::msg)
            }
            None => {
                std::fs::create_dir_all(&dir)?;
                super::empty_data_dir(&dir)
            }
        }
    }

    /// The plan's binary, else `/usr/bin/etcd`, else `etcd` on PATH.
    pub fn locate(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
        if let Some(path) = explicit {
            anyhow::ensure!(
                path.is_file(),
                "system.binary {} does not exist: install etcd (apt-get install -y etcd-server) or fix the plan",
                path.display()
            );
            return Ok(path.to_path_buf());
        }
        let default = Path::new(DEFAULT_BINARY);
        if default.is_file() {
            return Ok(default.to_path_buf());
        }
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join("etcd"))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "etcd is not installed ({DEFAULT_BINARY} is missing and no `etcd` is on PATH): \
                     apt-get install -y etcd-server, or set system.binary in the plan"
                )
            })
    }

    /// Every port the cluster listens on (for choosing a free loopback address).
    pub fn ports(node_count: usize) -> Vec<u16> {
        (0..node_count as u16)
            .flat_map(|i| [CLIENT_PORT_BASE + i, PEER_PORT_BASE + i])
            .collect()
    }

    fn name(node: usize) -> String {
        format!("n{}", node + 1)
    }

    fn client_url(&self, node: usize) -> String {
        format!("http://{}", self.addrs(node).client)
    }

    fn peer_url(&self, node: usize) -> String {
        format!("http://{}", self.addrs(node).peer)
    }

    /// `--initial-cluster`: `nodes`' names and peer URLs.
    fn initial_cluster(&self, nodes: &[usize]) -> String {
        nodes
            .iter()
            .map(|&node| format!("{}={}", Self::name(node), self.peer_url(node)))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn http(timeout: Duration) -> reqwest::Client {
        reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_millis(500)))
            .timeout(timeout)
            .pool_max_idle_per_host(2)
            .build()
            .expect("building an HTTP client with static settings")
    }

    /// Removes `node` from the cluster and adds it back as a new member, through any live peer. etcd refuses
    /// membership changes until its leader has been connected to a quorum for 5 s (`unhealthy cluster`), which is
    /// usual right after a restart, so steps are retried until `READD_TIMEOUT`.
    async fn readd_member(&self, node: usize) -> anyhow::Result<()> {
        let http = Self::http(Duration::from_secs(5));
        let deadline = tokio::time::Instant::now() + READD_TIMEOUT;
        let mut attempt = 0;
        loop {
            let peer = (0..self.node_count)
                .filter(|&p| p != node)
                .nth(attempt % (self.node_count - 1));
            attempt += 1;
            let Some(peer) = peer else {
                anyhow::bail!("no other member to ask");
            };
            match self.readd_through(&http, peer, node).await {
                Ok(()) => return Ok(()),
                Err(e) if tokio::time::Instant::now() >= deadline => {
                    return Err(e.context(format!("through {} (after {attempt} attempts)", Self::name(peer))))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// One attempt: remove the old member if it is still listed, then add the new one unless it already is.
    async fn readd_through(&self, http: &reqwest::Client, peer: usize, node: usize) -> anyhow::Result<()> {
        let base = self.client_url(peer);
        let members = post_ok(http, &base, "/v3/cluster/member/list", json!({})).await?;
        let peer_url = json!(self.peer_url(node));
        let listed = members["members"].as_array().cloned().unwrap_or_default();
        let mine = |m: &&Value| m["peerURLs"].as_array().is_some_and(|urls| urls.contains(&peer_url));
        match listed.iter().find(mine) {
            // Added by an earlier attempt and not started yet: an unstarted member has no name.
            Some(member) if member["name"].as_str().unwrap_or("").is_empty() => return Ok(()),
            Some(member) => {
                post_ok(http, &base, "/v3/cluster/member/remove", json!({"ID": member["ID"]})).await?;
            }
            None => {}
        }
        post_ok(http, &base, "/v3/cluster/member/add", json!({"peerURLs": [peer_url]})).await?;
        Ok(())
    }
}

/// POSTs `body` to `base + path` and returns the answer, or an error naming the call and etcd's answer.
async fn post_ok(http: &reqwest::Client, base: &str, path: &str, body: Value) -> anyhow::Result<Value> {
    let response = http.post(format!("{base}{path}")).json(&body).send().await?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    anyhow::ensure!(status.is_success(), "{path}: HTTP {status}: {body}");
    Ok(body)
}

#[async_trait]
impl System for EtcdSystem {
    fn kind(&self) -> &'static str {
        "etcd"
    }

    fn node_count(&self) -> usize {
        self.node_count
    }

    /// A member's client listener serves once it has published itself through Raft (module docs, "Readiness").
    fn ready_needs_quorum(&self) -> bool {
        true
    }

    fn data_dir(&self, node: usize) -> PathBuf {
        self.nodes_dir.join(Self::name(node)).join("data")
    }

    fn addrs(&self, node: usize) -> NodeAddrs {
        NodeAddrs {
            client: SocketAddr::new(self.node_ips[node], CLIENT_PORT_BASE + node as u16),
            peer: SocketAddr::new(self.node_ips[node], PEER_PORT_BASE + node as u16),
        }
    }

    async fn prepare(&self, node: usize) -> anyhow::Result<()> {
        let dir = self.data_dir(node);
        // etcd warns about anything wider than 0700 on its data dir.
        match self.hands.get(node) {
            Some(hands) => hands.make_dir(&dir, Some(0o700)).await.map_err(anyhow::Error::msg),
            None => crate::remote::workbench::make_dir(&dir, Some(0o700)).map_err(anyhow::Error::msg),
        }
        .with_context(|| format!("preparing {}'s data dir", Self::name(node)))
    }

    async fn wipe(&self, node: usize) -> anyhow::Result<()> {
        self.readd_member(node)
            .await
            .with_context(|| format!("re-adding {} to the cluster", Self::name(node)))?;
        self.empty_data_dir(node).await?;
        let members: Vec<usize> = match self.list_members().await {
            Ok(members) => members,
            Err(_) => (0..self.node_count).collect(),
        };
        self.rejoined.lock().expect("rejoined lock")[node] = Some(members);
        self.member_ids.lock().expect("member ids lock")[node] = None;
        Ok(())
    }

    fn initial_members(&self) -> Vec<usize> {
        self.initial_members.clone()
    }

    fn membership(&self) -> Option<&dyn super::membership::Membership> {
        Some(self)
    }

    fn launch(&self, node: usize, _: super::StartKind) -> LaunchCommand {
        let me = self.addrs(node);
        let joining = self.rejoined.lock().expect("rejoined lock")[node].clone();
        let (state, cluster) = match joining {
            Some(members) => ("existing", self.initial_cluster(&members)),
            None => ("new", self.initial_cluster(&self.initial_members)),
        };
        let mut args: Vec<String> = [
            "--name".to_string(),
            Self::name(node),
            "--data-dir".into(),
            self.data_dir(node).display().to_string(),
            "--listen-client-urls".into(),
            format!("http://{}", me.client),
            "--advertise-client-urls".into(),
            format!("http://{}", me.client),
            "--listen-peer-urls".into(),
            format!("http://{}", me.peer),
            "--initial-advertise-peer-urls".into(),
            format!("http://{}", me.peer),
            "--initial-cluster".into(),
            cluster,
            "--initial-cluster-state".into(),
            state.into(),
            "--initial-cluster-token".into(),
            self.token.clone(),
            "--logger".into(),
            "zap".into(),
            "--log-outputs".into(),
            "stderr".into(),
        ]
        .into();
        args.extend(self.extra_args.iter().cloned());
        LaunchCommand {
            program: self.program.clone(),
            args,
            env: vec![],
            env_clear: false,
            user: None,
        }
    }

    async fn probe(&self, node: usize, timeout: Duration) -> Result<NodeStatus, ProbeError> {
        let url = format!("{}/v3/maintenance/status", self.client_url(node));
        let no_answer = |_| ProbeError::NoAnswer;
        let response = Self::http(timeout)
            .post(url)
            .json(&json!({}))
            .send()
            .await
            .map_err(no_answer)?;
        if !response.status().is_success() {
            return Err(ProbeError::NoAnswer);
        }
        let raw: Value = response.json().await.map_err(no_answer)?;
        let me = raw["header"]["member_id"]
            .as_str()
            .ok_or(ProbeError::NoAnswer)?
            .to_string();
        let leader = raw["leader"].as_str().filter(|l| *l != "0").map(str::to_string);
        let primary = {
            let mut ids = self.member_ids.lock().expect("member ids lock");
            ids[node] = Some(me.clone());
            leader
                .as_ref()
                .and_then(|leader| ids.iter().position(|id| id.as_deref() == Some(leader.as_str())))
        };
        let role = match &leader {
            Some(leader) if *leader == me => Role::Primary,
            Some(_) => Role::Backup,
            None => Role::Other,
        };
        // Followers learn the commit index with the next heartbeat (100 ms), so at rest every member agrees.
        let commit_point = format!(
            "leader={} term={} commit={} applied={}",
            leader.as_deref().unwrap_or("none"),
            raw["raftTerm"].as_str().unwrap_or("?"),
            raw["raftIndex"].as_str().unwrap_or("?"),
            raw["raftAppliedIndex"].as_str().unwrap_or("?"),
        );
        Ok(NodeStatus {
            role,
            primary,
            commit_point,
            raw,
        })
    }

    /// `raftAppliedIndex`. etcd 3.4 hands a Ready's committed entries to the apply goroutine *before* its raft loop
    /// writes that Ready to the WAL (`raftNode.start`: `applyc <- ap`, then `storage.Save`), and the apply side waits
    /// for that write only before a snapshot (`applyAll`: "applied index might be greater than the last index in raft
    /// storage"); a leader even commits on its own unsynced append. So neither the applied nor the committed index
    /// (`raftIndex`) is durable the moment it is reported, on a leader or a follower. The applied index is durable
    /// once that one write and fsync are done: see [`System::durable_settle`].
    fn progress(&self, status: &NodeStatus) -> Progress {
        let number = |field: &str| status.raw[field].as_str().and_then(|text| text.parse::<u64>().ok());
        let numbers = [("raft_index", "raftIndex"), ("raft_applied_index", "raftAppliedIndex")]
            .into_iter()
            .filter_map(|(name, field)| Some((name, number(field)?)))
            .collect();
        Progress {
            view: number("raftTerm"),
            durable: number("raftAppliedIndex"),
            numbers,
        }
    }

    /// An applied index is on disk once the raft loop has written the Ready that carried it: one WAL write and
    /// fsync, milliseconds. One second of the member answering probes after it is a wide bound (a paused member
    /// answers nothing, so its pause does not count).
    fn durable_settle(&self) -> Duration {
        Duration::from_secs(1)
    }

    /// The last index of the raft log a restarted member kept (after any WAL repair): `lastindex: N` in raft's
    /// `newRaft ...` line, which follows `restarting local member`. Not that line's `"commit-index"`: the WAL saves
    /// a HardState whose only change is its commit without an fsync (`raft.MustSync` is false), and its encoder
    /// buffers the record in memory, so a kill -9 can lose a commit the member had applied while every entry up to
    /// it is on disk (seen in CI: applied 133, `commit-index` 132 after a kill -9). A first boot (`starting local
    /// member`) and a wiped, re-added member print no `restarting` line.
    fn recovered(&self, boot_log: &str) -> Option<Recovered> {
        let (_, restarted) = boot_log.split_once("\"msg\":\"restarting local member\"")?;
        Recovered::from_line(restarted, "\"msg\":\"newRaft ", "lastindex:")
    }

    /// raft's own lines: a member that starts an election (pre-vote or vote) is etcd's view change.
    fn log_patterns(&self) -> &[(&'static str, std::borrow::Cow<'static, str>)] {
        &[("view-change", std::borrow::Cow::Borrowed("became candidate at term"))]
    }

    fn next_primary(&self, _primary: usize) -> Option<usize> {
        None // Raft elections are decided by randomized timeouts: nobody can tell in advance.
    }

    fn wal_glob(&self) -> &str {
        "member/wal/*.wal"
    }

    fn verify_command(&self, _node: usize) -> Option<LaunchCommand> {
        None // etcd 3.4 ships no offline WAL verifier (etcdutl came with 3.5); boot is the verification.
    }

    fn boot_refusal_line(&self, log_tail: &str) -> Option<String> {
        // zap's fatal and panic lines, and a Go runtime panic (`panic: cannot use none as id`, raft's own, printed
        // on stderr without zap).
        let fatal = log_tail.lines().rev().find(|line| {
            line.contains("\"level\":\"fatal\"") || line.contains("\"level\":\"panic\"") || line.starts_with("panic: ")
        })?;
        let describes_data = REFUSAL_MARKERS.iter().any(|marker| fatal.contains(marker));
        describes_data.then(|| one_line_summary(fatal))
    }

    /// A joiner (`--initial-cluster-state existing`) first asks the members' peer URLs for the cluster; when none
    /// answers (a partition cuts it off) it exits `discovery failed: cannot fetch cluster info from peer urls`.
    fn join_failure_line(&self, log_tail: &str) -> Option<String> {
        let fatal = log_tail
            .lines()
            .rev()
            .find(|line| line.contains("\"level\":\"fatal\""))?;
        let gave_up = fatal.contains("discovery failed") && fatal.contains("cannot fetch cluster info");
        gave_up.then(|| zap_summary("etcd gave up joining", fatal))
    }

    fn register_client(&self, home: usize, op_timeout: Duration, _client_id: u64) -> Option<Box<dyn RegisterClient>> {
        Some(Box::new(EtcdClient {
            http: Self::http(op_timeout),
            base: self.client_url(home),
            serializable_reads: self.serializable_reads,
        }))
    }
}

/// `etcd refused to boot: msg: error` of a zap JSON line (the stack trace left out), or the line itself if it is not
/// JSON.
fn one_line_summary(line: &str) -> String {
    zap_summary("etcd refused to boot", line)
}

/// `what: msg: error` of a zap JSON line (the stack trace left out), or the line itself if it is not JSON.
fn zap_summary(what: &str, line: &str) -> String {
    match serde_json::from_str::<Value>(line.trim()) {
        Ok(record) => {
            let message = record["msg"].as_str().unwrap_or("");
            match record["error"].as_str() {
                Some(error) => format!("{what}: {message}: {error}"),
                None => format!("{what}: {message}"),
            }
        }
        Err(_) => line.trim().to_string(),
    }
}

/// A register client on one member's JSON gateway. Every member forwards to the leader, so no redirects.
struct EtcdClient {
    http: reqwest::Client,
    base: String,
    serializable_reads: bool,
}

enum Call<'a> {
    Read,
    Write(&'a str),
    Cas(&'a str, &'a str),
}

impl EtcdClient {
    async fn call(&self, key: &str, call: Call<'_>) -> Outcome {
        let key64 = BASE64.encode(key);
        let (path, body) = match call {
            // A range without `serializable` is linearizable: it goes through the leader's read index.
            Call::Read if self.serializable_reads => ("/v3/kv/range", json!({"key": key64, "serializable": true})),
            Call::Read => ("/v3/kv/range", json!({"key": key64})),
            Call::Write(value) => ("/v3/kv/put", json!({"key": key64, "value": BASE64.encode(value)})),
            Call::Cas(from, to) => (
                "/v3/kv/txn",
                json!({
                    "compare": [{"key": key64, "target": "VALUE", "result": "EQUAL", "value": BASE64.encode(from)}],
                    "success": [{"request_put": {"key": key64, "value": BASE64.encode(to)}}],
                    "failure": [{"request_range": {"key": key64}}],
                }),
            ),
        };
        let is_read = matches!(call, Call::Read);
        let response = match self.http.post(format!("{}{path}", self.base)).json(&body).send().await {
            Ok(response) => response,
            Err(e) => return transport_outcome(&e, is_read),
        };
        let status = response.status().as_u16();
        let body: Value = match response.json().await {
            Ok(body) => body,
            Err(e) => return unknown(is_read, format!("HTTP {status}, unreadable body: {e}")),
        };
        if status != 200 {
            let code = body["code"].as_i64().unwrap_or(-1);
            let message = body["message"].as_str().or(body["error"].as_str()).unwrap_or("");
            let why = format!("HTTP {status}, gRPC code {code}: {message}");
            return if DEFINITE_FAILURE_CODES.contains(&code) {
                Outcome::Fail(why)
            } else {
                unknown(is_read, why)
            };
        }
        match call {
            Call::Read => match decode_value(&body["kvs"][0]["value"]) {
                Ok(value) => Outcome::Ok(value),
                Err(e) => Outcome::Fail(format!("unreadable range answer ({e}): {body}")),
            },
            Call::Write(_) => Outcome::Ok(Value::Null),
            // proto3 leaves `succeeded: false` out of the JSON.
            Call::Cas(..) if body["succeeded"] == true => Outcome::Ok(Value::Null),
            Call::Cas(..) => Outcome::Fail(CAS_MISMATCH_ERROR.to_string()),
        }
    }
}

/// A range answer's value: `null` when the key is missing; a missing `value` field is the empty string (proto3).
fn decode_value(value: &Value) -> Result<Value, String> {
    match value {
        Value::Null => Ok(Value::Null),
        Value::String(text) => {
            let bytes = BASE64.decode(text).map_err(|e| e.to_string())?;
            String::from_utf8(bytes).map(Value::String).map_err(|e| e.to_string())
        }
        other => Err(format!("value is not base64 text: {other}")),
    }
}

#[async_trait]
impl RegisterClient for EtcdClient {
    async fn read(&self, key: &str) -> (Outcome, usize) {
        (self.call(key, Call::Read).await, 0)
    }

    async fn write(&self, key: &str, value: &str) -> (Outcome, usize) {
        (self.call(key, Call::Write(value)).await, 0)
    }

    async fn cas(&self, key: &str, from: &str, to: &str) -> (Outcome, usize) {
        (self.call(key, Call::Cas(from, to)).await, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system() -> EtcdSystem {
        EtcdSystem::new(
            "/usr/bin/etcd".into(),
            3,
            "/tmp/nodes".into(),
            vec!["127.9.9.1".parse().unwrap(); 3],
            "tok".into(),
            vec![],
            false,
        )
    }

    #[test]
    fn given_a_restart_boot_log_when_read_should_take_the_raft_last_index_not_the_hardstate_commit() {
        // Real etcd 3.4 lines: a commit-only HardState is not fsynced, so `commit-index` can trail what was applied.
        let restart = r#"{"level":"info","ts":"2026-12-01T18:47:07.162Z","caller":"etcdserver/raft.go:586","msg":"restarting local member","cluster-id":"5c5feca35e2040ab","local-member-id":"aee43fd71c5ba852","commit-index":849}
{"level":"info","ts":"2026-12-01T18:47:07.162Z","caller":"raft/raft.go:389","msg":"newRaft aee43fd71c5ba852 [peers: [], term: 14, commit: 849, applied: 0, lastindex: 850, lastterm: 14]"}"#;
        let found = system().recovered(restart).unwrap();
        assert_eq!(found.recovered, 850);
        assert!(found.line.contains("newRaft"), "{}", found.line);
        let first_boot = r#"{"level":"info","caller":"etcdserver/raft.go:486","msg":"starting local member","local-member-id":"a5a3"}
{"level":"info","ts":"2026-12-01T18:56:04.395Z","caller":"raft/raft.go:389","msg":"newRaft a5a327e1c0442d58 [peers: [], term: 0, commit: 0, applied: 0, lastindex: 0, lastterm: 0]"}"#;
        assert_eq!(
            system().recovered(first_boot),
            None,
            "a first boot kept nothing to judge"
        );
    }

    #[test]
    fn given_a_fatal_wal_line_when_judged_should_be_a_refusal_with_its_message() {
        let tail = r#"{"level":"info","msg":"closing etcd server"}
{"level":"fatal","ts":"x","caller":"etcdmain/etcd.go:271","msg":"discovery failed","error":"walpb: crc mismatch","stacktrace":"go.etcd.io/etcd/etcdmain..."}"#;
        assert_eq!(
            system().boot_refusal_line(tail).as_deref(),
            Some("etcd refused to boot: discovery failed: walpb: crc mismatch")
        );
    }

    #[test]
    fn given_raft_panics_on_a_cut_wal_when_judged_should_be_refusals() {
        let out_of_range = r#"{"level":"info","msg":"raft.node: aee4 elected leader 5c5f at term 14"}
{"level":"panic","ts":"x","caller":"raft/log.go:203","msg":"tocommit(320) is out of range [lastIndex(306)]. Was the raft log corrupted, truncated, or lost?","stacktrace":"go.etcd.io/etcd/raft..."}
panic: tocommit(320) is out of range [lastIndex(306)]. Was the raft log corrupted, truncated, or lost?

goroutine 160 [running]:"#;
        let line = system().boot_refusal_line(out_of_range);
        assert!(
            line.as_deref()
                .is_some_and(|l| l.contains("Was the raft log corrupted")),
            "{line:?}"
        );
        let no_id = "{\"level\":\"info\",\"msg\":\"restarting local member\"}\npanic: cannot use none as id\n\ngoroutine 1 [running]:\ngo.etcd.io/etcd/raft.newRaft(...)";
        assert_eq!(
            system().boot_refusal_line(no_id).as_deref(),
            Some("panic: cannot use none as id")
        );
    }

    #[test]
    fn given_a_fatal_port_in_use_line_when_judged_should_not_be_a_refusal() {
        let tail = r#"{"level":"fatal","msg":"discovery failed","error":"listen tcp 127.0.0.1:2380: bind: address already in use"}"#;
        assert_eq!(system().boot_refusal_line(tail), None);
    }

    #[test]
    fn given_a_joiner_that_cannot_reach_the_members_when_judged_should_be_a_failed_join_not_a_refusal() {
        let tail = r#"{"level":"warn","caller":"etcdserver/cluster_util.go:76","msg":"failed to get cluster response","address":"http://10.251.138.15:24005/members","error":"dial tcp 10.251.138.15:24005: i/o timeout"}
{"level":"fatal","ts":"x","caller":"etcdmain/etcd.go:271","msg":"discovery failed","error":"cannot fetch cluster info from peer urls: could not retrieve cluster information from the given URLs","stacktrace":"go.etcd.io/etcd/etcdmain..."}"#;
        assert_eq!(system().boot_refusal_line(tail), None);
        assert_eq!(
            system().join_failure_line(tail).as_deref(),
            Some(
                "etcd gave up joining: discovery failed: cannot fetch cluster info from peer urls: could not retrieve \
                 cluster information from the given URLs"
            )
        );
        let crc = r#"{"level":"fatal","msg":"discovery failed","error":"walpb: crc mismatch"}"#;
        assert_eq!(system().join_failure_line(crc), None);
    }

    #[test]
    fn given_range_values_when_decoded_should_map_missing_to_null_and_base64_to_text() {
        assert_eq!(decode_value(&Value::Null), Ok(Value::Null));
        assert_eq!(decode_value(&json!("djE=")), Ok(json!("v1")));
        assert!(decode_value(&json!("***")).is_err());
    }

    #[test]
    fn given_three_members_when_launched_should_bootstrap_one_static_cluster() {
        let system = system();
        let args = system.launch(1, crate::system::StartKind::Restart).args.join(" ");
        assert!(args.contains("--name n2"), "{args}");
        assert!(args.contains(
            "--initial-cluster n1=http://127.9.9.1:24001,n2=http://127.9.9.1:24002,n3=http://127.9.9.1:24003"
        ));
        assert!(args.contains("--initial-cluster-state new"));
        assert!(args.contains("--listen-client-urls http://127.9.9.1:23002"));
    }
}
