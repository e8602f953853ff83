//! System adapters: how to run and talk to one kind of system under test.
//!
//! Each adapter is one module that owns three things:
//! - its plan section, a typed config (`system: {kind: NAME, ...}`; [`spec::SystemSpec`] has one arm per
//!   adapter), checked at load against what the adapter can do ([`Capabilities`]) in one generic place
//!   ([`crate::plan::Plan::validate`]);
//! - its constructor ([`AdapterSpec::build`]), which places the nodes on addresses and, where the system allows it,
//!   routes their peer traffic through the proxy mesh;
//! - the [`System`] it builds: how to prepare and launch node *i*, how to probe it (readiness, role, commit point),
//!   which files hold its WAL, how a refusal to boot looks in its log, and the clients it offers, one method per
//!   workload kind that answers `None` when the system has no such client.
//!
//! The harness treats every system, the reference node included, as a black box behind these traits. Adding a
//! built-in adapter touches its own file and one line of the adapter table in `spec.rs`; a system without Rust
//! code uses the `exec` adapter (templates, HTTP/command probes, a JSON-lines client process).

pub mod etcd;
pub mod exec;
pub mod iggy;
pub mod membership;
pub mod reference;
pub mod refusal;
pub mod spec;

use crate::plan::{Plan, PlanError, WorkloadKind};
use crate::supervisor::LaunchCommand;
use anyhow::Context;
use async_trait::async_trait;
use faultline_faults::network::netns::NetnsLab;
use faultline_faults::network::proxy::{ProxyId, ProxyLimits, ProxyMesh, ProxySpec};
use faultline_faults::network::{Link, Network};
use faultline_workloads::position::Position;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a system can do, as its adapter declares it; a plan that asks for more is rejected at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The workload kinds it has clients for.
    pub workloads: Vec<WorkloadKind>,
    /// The proxy mesh can partition it: its nodes dial peers only at the addresses the harness hands them. When
    /// false, network faults need the netns backend.
    pub proxy_partitions: bool,
    /// It can tell who the primary is (role targets `primary`, `backup`, `next-primary` need it).
    pub primary_probe: bool,
    /// It has a status probe at all: a commit point to compare (the convergence check needs it).
    pub status_probe: bool,
    /// It can wipe a node and let it rejoin (`final_phase.after_refusal: wipe`).
    pub wipe: bool,
    /// It has an offline WAL verifier, run on every stopped node in the restart-all.
    pub offline_verify: bool,
    /// It reports a durable progress number ([`Progress::durable`]) and says in its boot log what it booted with
    /// ([`System::recovered`]): the `durability` check judges its restarts.
    pub durable_progress: bool,
    /// It promises to refuse to boot on interior damage to its WAL (damage a correct log cannot take for a torn
    /// write): booting after such damage with less than it had applied is a finding, not a warning.
    pub refuses_interior_damage: bool,
    /// Its [`System::log_patterns`] include `repairing` (the `repairing` trigger condition needs it).
    pub repairing_pattern: bool,
    /// Its [`System::log_patterns`] include `repaired` (the `repaired` trigger condition needs it).
    pub repaired_pattern: bool,
    /// It can add and remove members while it runs ([`System::membership`]): `kind: membership` faults, and a
    /// `members:` count below `nodes:` (spare nodes to add), need it.
    pub membership: bool,
}

/// What an adapter's constructor gets: the plan, the run, where the nodes keep their data, the netns lab if any.
pub struct BuildContext<'a> {
    /// The resolved plan.
    pub plan: &'a Plan,
    /// The run seed (the proxy mesh's faults draw from it).
    pub seed: u64,
    /// The run id (tags processes, names clusters).
    pub run_id: &'a str,
    /// `store/.../nodes`: node i's folder is `nodes/n<i+1>`.
    pub nodes_dir: PathBuf,
    /// `store/.../nodes` on this machine, where the files of a node's processes that run here go (an exec status
    /// command's `status.log`): `nodes_dir` itself for a local run.
    pub local_nodes_dir: PathBuf,
    /// The netns lab when the run uses the netns backend.
    pub netns: Option<&'a Arc<NetnsLab>>,
    /// Each node's hands: where its processes and one-shot commands run (this machine, or its host).
    pub hands: Vec<Arc<dyn crate::remote::hands::Hands>>,
    /// The hosts, when the nodes live on hosts reached over SSH (`nodes_dir` is then their folder there).
    pub remote: Option<&'a crate::remote::lab::RemoteLab>,
}

/// A built system: the adapter, where its nodes listen, and the network that can fault it.
pub struct Built {
    /// The system.
    pub system: Arc<dyn System>,
    /// The node executable (for the run's metadata: path and digest).
    pub binary: PathBuf,
    /// Each node's address.
    pub node_ips: Vec<IpAddr>,
    /// The network fault backend, when the plan has network faults (or netns is in use).
    pub network: Option<Network>,
}

/// One adapter's plan section: what it can do, its own checks, and its constructor.
#[async_trait]
pub trait AdapterSpec: Send + Sync {
    /// What the configured system can do.
    fn capabilities(&self) -> Capabilities;
    /// Checks of the section itself that need more than parsing (with `file:line:column` where it can).
    fn validate(&self, _plan: &Plan, _origin: &str) -> Result<(), PlanError> {
        Ok(())
    }
    /// Builds the system of one run.
    async fn build(&self, context: BuildContext<'_>) -> anyhow::Result<Built>;
    /// Makes the section's relative paths absolute, relative to the plan's folder `dir` (at load).
    fn resolve_paths(&mut self, _dir: &std::path::Path) {}
    /// The named file classes of a node's data dir that cuts name (`files: wal`), each with its glob relative to the
    /// data dir: what the system's files are, so a plan can say "its WAL" without knowing the file names.
    fn file_classes(&self) -> Vec<(String, String)>;
    /// The program every node runs and its first arguments, as the plan resolves it: what the plan check of a clock
    /// fault inspects ([`faultline_faults::clock::reach`]), or why it cannot be found.
    fn node_command(&self) -> Result<(std::path::PathBuf, Vec<String>), String>;
    /// Extra arguments for every node's start command, if the adapter takes them (the mutant matrix's `--bug`).
    fn node_args_mut(&mut self) -> Option<&mut Vec<String>> {
        None
    }
    /// How many of the `nodes` are members at the start (`members:`; every node when the plan does not say), with
    /// where the plan says it.
    fn members(&self) -> Option<serde_saphyr::Spanned<crate::plan::Bounded<1, 9>>> {
        None
    }
}

impl BuildContext<'_> {
    /// Cluster size: every node of the pool, members or spares.
    pub fn node_count(&self) -> usize {
        self.plan.system.nodes()
    }

    /// The nodes that are members at the start: the first `members:` of the pool.
    pub fn initial_members(&self) -> Vec<usize> {
        (0..self.plan.system.initial_members()).collect()
    }

    /// Each node's address: its namespace address under netns, else one random loopback address on which every
    /// port in `ports` is free (so concurrent runs and tests never collide).
    pub fn node_ips(&self, ports: &[u16]) -> anyhow::Result<Vec<IpAddr>> {
        let n = self.node_count();
        if let Some(remote) = self.remote {
            return Ok(remote.node_ips[..n].to_vec());
        }
        Ok(match self.netns {
            Some(lab) => (0..n).map(|i| IpAddr::V4(lab.node_addr(i))).collect(),
            None => vec![pick_loopback_ip(ports)?; n],
        })
    }

    /// Whether the plan injects network faults.
    pub fn has_network_faults(&self) -> bool {
        self.plan.nemesis.has_network_faults()
    }

    /// The network of a system whose nodes can only be partitioned by dropping packets (they dial each other on
    /// their own connections): the netns lab's, or on hosts each host's nftables.
    pub async fn netns_network(&self) -> anyhow::Result<Option<Network>> {
        if let Some(remote) = self.remote {
            // No proxies: the plan check refuses link faults for a system that cannot route its peers.
            return Ok(remote.network(self.plan, self.seed, None).await?.0);
        }
        Ok(self.netns.map(|lab| Network::Netns(lab.clone())))
    }

    /// The network of a system the proxy mesh can partition: the netns lab when there is one; else, when the plan
    /// has network faults, a proxy per directed peer link (`proxy_addr(from, to)` listens, forwarding to
    /// `peer_addr(to)`), with `routes[i][j]` = where node i must dial node j. `None` routes: dial peers directly.
    pub async fn proxied_network(
        &self,
        peer_addr: impl Fn(usize) -> SocketAddr,
        proxy_addr: impl Fn(usize, usize) -> SocketAddr,
    ) -> anyhow::Result<(Option<Network>, Option<Vec<Vec<SocketAddr>>>)> {
        if let Some(remote) = self.remote {
            let upstreams = (0..self.node_count()).map(&peer_addr).collect();
            return remote.network(self.plan, self.seed, Some(upstreams)).await;
        }
        if let Some(lab) = self.netns {
            return Ok((Some(Network::Netns(lab.clone())), None));
        }
        if !self.has_network_faults() {
            return Ok((None, None));
        }
        let n = self.node_count();
        let mut specs = Vec::new();
        let mut routes = vec![Vec::with_capacity(n); n];
        for (from, row) in routes.iter_mut().enumerate() {
            for to in 0..n {
                let listen = proxy_addr(from, to);
                row.push(listen);
                if from != to {
                    specs.push(ProxySpec {
                        id: ProxyId::Peer(Link::new(from, to)),
                        listen,
                        upstream: peer_addr(to),
                    });
                }
            }
        }
        let mesh = ProxyMesh::start(n, specs, ProxyLimits::default(), self.seed)
            .await
            .context("starting the proxy mesh")?;
        Ok((Some(Network::Proxy(Arc::new(mesh))), Some(routes)))
    }
}

/// Empties a stopped node's data dir but keeps the dir itself (it may be the mount point of the fault filesystem,
/// whose hidden bookkeeping folder stays too): the first half of every adapter's wipe.
pub(crate) fn empty_data_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        if entry.file_name() == faultline_faults::fusefs::HIDDEN_DIR_NAME {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        }
        .with_context(|| format!("removing {}", path.display()))?;
    }
    Ok(())
}

/// A random loopback address 127.a.b.1 on which every port the cluster needs is free, so concurrent runs and tests
/// never collide. Only loopback is ever used.
fn pick_loopback_ip(ports: &[u16]) -> anyhow::Result<IpAddr> {
    const ATTEMPTS_MAX: usize = 32;
    for _ in 0..ATTEMPTS_MAX {
        let ip = IpAddr::V4(Ipv4Addr::new(127, rand::random::<u8>().max(1), rand::random(), 1));
        let free = ports.iter().all(|&port| TcpListener::bind((ip, port)).is_ok());
        if free {
            return Ok(ip);
        }
    }
    anyhow::bail!("no loopback address with free ports {ports:?} after {ATTEMPTS_MAX} attempts")
}

/// A node's role as the system reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Leader / primary.
    Primary,
    /// Follower / backup.
    Backup,
    /// Anything else (view change, recovering, candidate).
    Other,
}

/// What a probe of a live node says.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeStatus {
    /// Its role.
    pub role: Role,
    /// The primary it believes in, if any (0-based).
    pub primary: Option<usize>,
    /// A value that is equal on two nodes exactly when they have converged (same commit point and log head).
    pub commit_point: String,
    /// The raw status document, for the history.
    pub raw: Value,
}

/// The numbers a status probe carries, as the adapter reads them from [`NodeStatus::raw`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The view, term or epoch, where the system has one.
    pub view: Option<u64>,
    /// A durable lower bound: a value the node can only have reached after persisting everything up to it (see
    /// [`System::durable_settle`] for systems that report it a little before the write is done). For a system that
    /// counts with a vector clock, the sum of its components: one number for lag and catching up, while the
    /// durability check compares the clock itself ([`System::durable_position`]).
    pub durable: Option<u64>,
    /// Every numeric progress field by name (`op`, `commit`, `raft_index` ...), for the history.
    pub numbers: Vec<(&'static str, u64)>,
}

/// What a restarted node says it booted with, read from its own boot log.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// The progress it holds after the boot, comparable with [`System::durable_position`] from before its stop: a
    /// number, or a vector clock compared per component.
    pub recovered: Position,
    /// The log line it was read from.
    pub line: String,
}

impl Recovered {
    /// From a boot log: the first line that contains `marker`, and the position right after `after` in it (e.g. the
    /// reference node's `rejoining: ...` line and `op=`): a decimal number, a hexadecimal one after `0x` (ZooKeeper
    /// logs its zxids so) or a vector clock in braces (Tarantool's `{1: 3181, 2: 5}`; see [`Position::parse_prefix`]).
    pub fn from_line(boot_log: &str, marker: &str, after: &str) -> Option<Recovered> {
        let line = boot_log.lines().find(|line| line.contains(marker))?;
        let (_, rest) = line.split_once(after)?;
        let recovered = Position::parse_prefix(rest)?;
        Some(Recovered {
            recovered,
            line: line.trim().to_string(),
        })
    }
}

/// What kind of start a node's start is (the exec adapter's `{start}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartKind {
    /// The node's first start in this run: its data dir is new (the time to bootstrap).
    First,
    /// A later start while the others run (after a kill, a stop, a power loss, a cut, a wipe): recover and rejoin.
    Restart,
    /// The final phase's restart of every node after all were killed at once.
    RestartAll,
    /// The node a restart-all starts first, alone, because `system.restart_all.position` ranked it the most
    /// advanced (the one to bootstrap the cluster again from).
    RestartAllFirst,
}

impl StartKind {
    /// As `{start}` gives it: `first`, `restart`, `restart-all`, `restart-all-first`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartKind::First => "first",
            StartKind::Restart => "restart",
            StartKind::RestartAll => "restart-all",
            StartKind::RestartAllFirst => "restart-all-first",
        }
    }
}

/// Where a node listens.
#[derive(Debug, Clone)]
pub struct NodeAddrs {
    /// Client API.
    pub client: SocketAddr,
    /// Peer traffic.
    pub peer: SocketAddr,
}

/// The outcome of one client operation, Jepsen style.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It took effect; the value read (reads) or echoed.
    Ok(Value),
    /// It definitely did not take effect.
    Fail(String),
    /// Unknown: it may or may not have taken effect.
    Info(String),
}

/// A register client (read / write / cas on string values) bound to one node.
#[async_trait]
pub trait RegisterClient: Send + Sync {
    /// Reads `key`: `Ok(Value::String)` or `Ok(Value::Null)` for a missing key.
    async fn read(&self, key: &str) -> (Outcome, usize);
    /// Writes `value` to `key`.
    async fn write(&self, key: &str, value: &str) -> (Outcome, usize);
    /// Sets `key` to `to` if it is `from`.
    async fn cas(&self, key: &str, from: &str, to: &str) -> (Outcome, usize);
}

/// A log client (append to a named log, read a range) bound to one node.
#[async_trait]
pub trait LogClient: Send + Sync {
    /// Appends `payload` to `log`: `Ok({"offset": N})`.
    async fn append(&self, log: &str, payload: &str) -> (Outcome, usize);
    /// Reads up to `limit` entries of `log` from offset `from`: `Ok({"from", "entries": [[offset, payload]], "end"})`.
    async fn read(&self, log: &str, from: u64, limit: u64) -> (Outcome, usize);
}

/// A cut whose `files:` names one of `classes` (a file class of the adapter), with that class's glob in its place;
/// a glob stays as it is. An unknown class name is refused with the classes there are.
pub fn resolve_cut(
    classes: &[(String, String)],
    cut: &faultline_faults::disk::spec::SurgerySpec,
) -> Result<faultline_faults::disk::spec::SurgerySpec, String> {
    let mut resolved = cut.clone();
    if let Some(files) = resolved.files_mut() {
        if faultline_faults::process::is_file_class(files) {
            let glob = classes
                .iter()
                .find(|(name, _)| name == files)
                .map(|(_, glob)| glob.clone());
            *files = glob.ok_or_else(|| {
                let names: Vec<&str> = classes.iter().map(|(name, _)| name.as_str()).collect();
                format!(
                    "`files: {files}` is no file class of this system ({}); name one, or write a glob relative to \
                     the data dir (e.g. `wal*`)",
                    names.join(", ")
                )
            })?;
        }
    }
    Ok(resolved)
}

/// The one key of the set workload (every element goes into one set).
pub const SET_KEY: &str = "set";

/// A set client (add unique elements, read the whole set) bound to one node.
#[async_trait]
pub trait SetClient: Send + Sync {
    /// Adds `element`: `Ok(Value::Null)` once acknowledged.
    async fn add(&self, element: &str) -> (Outcome, usize);
    /// Reads the whole set: `Ok(Value::Array)` of its elements (strings).
    async fn read_all(&self) -> (Outcome, usize);
}

/// A transaction client bound to one node: one request runs a whole transaction of micro-ops, atomically or not at
/// all (`fail`), or with an unknown outcome (`info`).
#[async_trait]
pub trait TxnClient: Send + Sync {
    /// Runs the micro-op list `ops` (`[["append","k3",7],["r","k1",null]]`): `Ok` of the same list with every read
    /// filled (checked by [`txn_answer`]).
    async fn txn(&self, ops: &Value) -> (Outcome, usize);
}

/// The bank of a bank workload, which every op of it carries: accounts `0..accounts` holding `total` together, each
/// opening with an equal share (account 0 with the remainder too). A client opens an account, if nobody has, before
/// it touches it; the openings are fixed, so the order in which clients open them does not matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bank {
    /// Accounts.
    pub accounts: u64,
    /// What they hold together.
    pub total: u64,
}

impl Bank {
    /// What account `i` opens with.
    pub fn opening(&self, i: u64) -> u64 {
        let share = self.total / self.accounts.max(1);
        if i == 0 {
            share + self.total % self.accounts.max(1)
        } else {
            share
        }
    }
}

/// The one key of the bank workload's ops (the accounts are in their values).
pub const BANK_KEY: &str = "bank";

/// A bank client bound to one node (Jepsen's bank workload): reads of every balance at once, and transfers.
#[async_trait]
pub trait BankClient: Send + Sync {
    /// Reads every balance in one transaction: `Ok({"0": 100, "1": 0, ...})`, an integer per account.
    async fn read(&self, bank: Bank) -> (Outcome, usize);
    /// Moves `amount` from account `from` to `to` in one transaction; `Fail` when `from` holds less (nothing moved).
    async fn transfer(&self, bank: Bank, from: u64, to: u64, amount: u64) -> (Outcome, usize);
}

/// An `ok` answer to a bank read, checked: an object of integer balances.
pub fn bank_balances(got: &Value) -> Result<Value, &'static str> {
    match got.as_object() {
        Some(map) if !map.is_empty() && map.values().all(Value::is_i64) => Ok(got.clone()),
        _ => Err("an object of every account's integer balance, e.g. {\"0\": 100, \"1\": 0}"),
    }
}

/// Whether a transaction has no write (an unknown outcome of it is a `fail`: it had no effect).
pub fn txn_is_read_only(ops: &Value) -> bool {
    ops.as_array()
        .is_some_and(|ops| ops.iter().all(|op| op.get(0).and_then(Value::as_str) == Some("r")))
}

/// An `ok` answer to transaction `sent`, checked: the same micro-ops in the same order, writes as sent, every read
/// filled with `null`, an integer or a list of integers. The error says which micro-op is wrong and how.
pub fn txn_answer(sent: &Value, got: &Value) -> Result<Value, String> {
    let (Some(sent_ops), Some(got_ops)) = (sent.as_array(), got.as_array()) else {
        return Err(format!("expected the micro-op list back, got {got}"));
    };
    if sent_ops.len() != got_ops.len() {
        return Err(format!(
            "expected {} micro-ops back, got {}: {got}",
            sent_ops.len(),
            got_ops.len()
        ));
    }
    for (position, (asked, answered)) in sent_ops.iter().zip(got_ops).enumerate() {
        let same_op =
            answered.as_array().is_some_and(|a| a.len() == 3) && asked[0] == answered[0] && asked[1] == answered[1];
        if !same_op {
            return Err(format!("micro-op {position} is {answered}, but {asked} was sent"));
        }
        let filled = &answered[2];
        let fits = if asked[0] == "r" {
            filled.is_null()
                || filled.is_i64()
                || filled.as_array().is_some_and(|items| items.iter().all(Value::is_i64))
        } else {
            *filled == asked[2]
        };
        if !fits {
            return Err(format!(
                "micro-op {position} came back as {answered} (a read is filled with null, an integer or a list of \
                 integers; a write comes back as sent, {asked})"
            ));
        }
    }
    Ok(got.clone())
}

/// Why a probe got no status.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// The node did not answer (down, paused, partitioned, still booting).
    NoAnswer,
    /// The node answered, but not in the shape the plan describes (e.g. a status pointer that does not resolve):
    /// a mistake in the plan, not a fault of the node. The run stops its setup with this message.
    Misconfigured(String),
}

/// A system under test.
#[async_trait]
pub trait System: Send + Sync {
    /// Adapter name (`reference`, `etcd`, ...).
    fn kind(&self) -> &'static str;
    /// Cluster size: every node of the pool, members or spares.
    fn node_count(&self) -> usize;
    /// The nodes that are members at the start (every node unless the plan keeps spares).
    fn initial_members(&self) -> Vec<usize> {
        (0..self.node_count()).collect()
    }
    /// Its membership hooks, if it can add and remove members while it runs.
    fn membership(&self) -> Option<&dyn membership::Membership> {
        None
    }
    /// The node's data dir.
    fn data_dir(&self, node: usize) -> PathBuf;
    /// The node's addresses.
    fn addrs(&self, node: usize) -> NodeAddrs;
    /// One-time preparation of a node's data dir before its first start (e.g. format).
    async fn prepare(&self, node: usize) -> anyhow::Result<()>;
    /// Wipes a stopped node's data dir so that it rejoins as an empty replica and recovers its state from its peers
    /// (only called when [`Capabilities::wipe`] says the system can).
    async fn wipe(&self, node: usize) -> anyhow::Result<()> {
        anyhow::bail!(
            "the {} adapter cannot wipe {} and let it rejoin",
            self.kind(),
            faultline_faults::process::node_name(node)
        )
    }
    /// The command that starts the node with its data dir, as a start of `kind` (a system that must bootstrap only
    /// once, or start from its most advanced node after a restart-all, reads it: the exec adapter's `{start}`).
    fn launch(&self, node: usize, kind: StartKind) -> LaunchCommand;
    /// Asks a live node for its status.
    async fn probe(&self, node: usize, timeout: Duration) -> Result<NodeStatus, ProbeError>;
    /// Whether the system has a status probe; without one [`System::probe`] never answers, the observer does not
    /// ask, and nothing waits for a commit point.
    fn reports_status(&self) -> bool {
        true
    }
    /// Whether a started node is ready to serve (by default: it answers a status probe).
    async fn ready(&self, node: usize, timeout: Duration) -> bool {
        self.probe(node, timeout).await.is_ok()
    }
    /// Whether [`System::ready`] needs the node to have joined a quorum (an etcd member serves once it has published
    /// itself through Raft), so a boot timeout while the nemesis faulted its peers is the fault model's doing, not
    /// the node's (the `boot` check's rule; the run-start line records it). False by default: readiness is the
    /// node's own, and a node that is not ready in time is a problem whatever its peers do.
    fn ready_needs_quorum(&self) -> bool {
        false
    }
    /// How often the observer asks a node for its status during a run (every 100 ms unless the probe is heavy).
    fn observe_interval(&self) -> Duration {
        Duration::from_millis(100)
    }
    /// The progress numbers of a status (none by default).
    fn progress(&self, _status: &NodeStatus) -> Progress {
        Progress::default()
    }
    /// The durable lower bound of a status as a position, what a stop records and a boot's [`Recovered`] is compared
    /// with: [`Progress::durable`] by default; a system that counts with a vector clock answers the clock.
    fn durable_position(&self, status: &NodeStatus) -> Option<Position> {
        self.progress(status).durable.map(Position::Scalar)
    }
    /// How long after a node reports a durable value that value is surely on its disk: zero for a system that reports
    /// only what it has fsynced. The durable value of a stopped node is the newest one it reported at least this long
    /// before its last answer.
    fn durable_settle(&self) -> Duration {
        Duration::ZERO
    }
    /// What a node booted with, from the log it wrote since it was started (`None`: the log does not say, e.g. a
    /// first boot or a wiped node).
    fn recovered(&self, _boot_log: &str) -> Option<Recovered> {
        None
    }
    /// Whether, for want of a boot line, a restarted node's first status answer once it is ready says what it kept
    /// ([`System::kept`]): a system with a durable number and no `recovered` line.
    fn kept_from_status(&self) -> bool {
        false
    }
    /// What a restarted node's status answer says it kept on its own disk (see [`System::kept_from_status`]).
    fn kept(&self, _status: &NodeStatus) -> Option<u64> {
        None
    }
    /// [`System::kept`] as a position: a system that counts with a vector clock answers it here (the number of
    /// [`System::kept`] by default).
    fn kept_position(&self, status: &NodeStatus) -> Option<Position> {
        self.kept(status).map(Position::Scalar)
    }
    /// Named log patterns the observer watches for (a substring of a node's log line), recorded as `observation`
    /// `log` events and fed to triggers and coverage: `repairing` (a node started repairing its log), `repaired`
    /// (it finished), `view-change` (a node started a view change or election). None by default.
    fn log_patterns(&self) -> &[(&'static str, std::borrow::Cow<'static, str>)] {
        &[]
    }
    /// The node that becomes primary in the next view, given the current primary, if the system can tell.
    fn next_primary(&self, primary: usize) -> Option<usize>;
    /// Glob of the WAL files, relative to the data dir (for disk faults), e.g. `wal*` or `member/wal/*.wal`.
    fn wal_glob(&self) -> &str;
    /// Whether the nodes run as a user other than root (an exec plan's `system.user`): their fault filesystems must
    /// then let other users in.
    fn runs_as_other_user(&self) -> bool {
        false
    }
    /// Why the workload's client cannot work at all, once that is clear (an exec client whose processes all died
    /// before their first answer): the run stops early on it. `None` while the client may still work.
    fn client_setup_error(&self) -> Option<String> {
        None
    }
    /// The command that asks live node `node` (running as `pid`) to stop gracefully, if the system has its own;
    /// `None`: SIGTERM to the node.
    fn stop_command(&self, _node: usize, _pid: i32) -> Option<LaunchCommand> {
        None
    }
    /// An offline verification command for a stopped node's data dir (exit 0 = sound), if the system has one.
    fn verify_command(&self, node: usize) -> Option<LaunchCommand>;
    /// The command that reads, from a stopped node's own files, how far it got (its last line a number: a seqno,
    /// an index), when the system must start again from its most advanced node after a restart-all.
    fn restart_position_command(&self, _node: usize) -> Option<LaunchCommand> {
        None
    }
    /// The line of a node's log that says it refused to boot, if any.
    fn boot_refusal_line(&self, log_tail: &str) -> Option<String>;
    /// The line of a joiner's log that says it gave up joining because it could not reach the cluster (not a fault
    /// of its data or its code: a joiner cut off by a partition), if any. The boot check takes the exit of a joiner
    /// that never became ready with such a line for a failed join, not a crash.
    fn join_failure_line(&self, _log_tail: &str) -> Option<String> {
        None
    }
    /// A register client bound to `home` (it follows the system's redirects to the primary), if the system offers
    /// registers.
    fn register_client(&self, _home: usize, _op_timeout: Duration, _client_id: u64) -> Option<Box<dyn RegisterClient>> {
        None
    }
    /// A log client bound to `home`, if the system offers logs.
    fn log_client(&self, _home: usize, _op_timeout: Duration, _client_id: u64) -> Option<Box<dyn LogClient>> {
        None
    }
    /// A set client bound to `home`, if the system offers sets.
    fn set_client(&self, _home: usize, _op_timeout: Duration, _client_id: u64) -> Option<Box<dyn SetClient>> {
        None
    }
    /// A transaction client bound to `home`, if the system offers multi-key transactions.
    fn txn_client(&self, _home: usize, _op_timeout: Duration, _client_id: u64) -> Option<Box<dyn TxnClient>> {
        None
    }
    /// A bank client bound to `home`, if the system offers the bank workload.
    fn bank_client(&self, _home: usize, _op_timeout: Duration, _client_id: u64) -> Option<Box<dyn BankClient>> {
        None
    }
}

/// Jepsen's central rule, in one place: an op whose outcome is unknown is `info`, except a read, which has no effect
/// whatever happened, so it is a `fail` (and its process need not be retired).
pub(crate) fn unknown(is_read: bool, why: String) -> Outcome {
    if is_read {
        Outcome::Fail(format!("{why} (a read has no effect)"))
    } else {
        Outcome::Info(why)
    }
}

/// How a transport error sorts: a connection that was never established sent nothing (`fail`); a timeout or a
/// connection lost after sending leaves the outcome unknown ([`unknown`]).
pub(crate) fn transport_outcome(error: &reqwest::Error, is_read: bool) -> Outcome {
    if error.is_connect() {
        Outcome::Fail(format!("connection failed: {}", error_chain(error)))
    } else if error.is_timeout() {
        unknown(is_read, "timed out".into())
    } else {
        unknown(
            is_read,
            format!("connection lost after sending: {}", error_chain(error)),
        )
    }
}

/// An error and its sources, one line (reqwest hides the useful part, e.g. "Connection refused", in a source).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{txn_answer, Position, Recovered};
    use serde_json::json;

    #[test]
    fn given_txn_answers_when_checked_should_take_filled_reads_and_refuse_changed_ops() {
        let sent = json!([["append", "k1", 3], ["r", "k1", null], ["r", "k2", null]]);
        let good = json!([["append", "k1", 3], ["r", "k1", [1, 3]], ["r", "k2", null]]);
        assert_eq!(txn_answer(&sent, &good), Ok(good.clone()));
        let dropped = json!([["append", "k1", 3], ["r", "k1", [1, 3]]]);
        assert!(txn_answer(&sent, &dropped)
            .unwrap_err()
            .contains("expected 3 micro-ops"));
        let changed = json!([["append", "k1", 4], ["r", "k1", [1, 4]], ["r", "k2", null]]);
        assert!(txn_answer(&sent, &changed)
            .unwrap_err()
            .starts_with("micro-op 0 came back"));
        let strings = json!([["append", "k1", 3], ["r", "k1", ["1"]], ["r", "k2", null]]);
        assert!(txn_answer(&sent, &strings)
            .unwrap_err()
            .starts_with("micro-op 1 came back"));
        let reordered = json!([["r", "k1", [3]], ["append", "k1", 3], ["r", "k2", null]]);
        assert!(txn_answer(&sent, &reordered).unwrap_err().starts_with("micro-op 0 is"));
    }

    #[test]
    fn given_real_boot_lines_when_read_should_take_the_number_after_the_marker_and_nothing_else() {
        let reference = "2026-12-01T18:13:12.9Z  INFO opening wal\n2026-12-01T18:13:13.1Z  INFO rejoining: asking the \
                         cluster for the current view replica=0 view=1 log_view=1 op=656 commit=647\n";
        let found = Recovered::from_line(reference, "rejoining: asking the cluster", " op=").unwrap();
        assert_eq!(found.recovered, 656);
        assert!(found.line.ends_with("op=656 commit=647"), "{}", found.line);
        let etcd = r#"{"level":"info","caller":"raft/raft.go:389","msg":"newRaft aee43fd71c5ba852 [peers: [], term: 14, commit: 849, applied: 0, lastindex: 850, lastterm: 14]"}"#;
        let found = Recovered::from_line(etcd, "\"msg\":\"newRaft ", "lastindex:").unwrap();
        assert_eq!(found.recovered, 850);
        assert_eq!(Recovered::from_line(etcd, "no such line", "op="), None);
        assert_eq!(
            Recovered::from_line("recovered op=x", "recovered", "op="),
            None,
            "no digits"
        );
        let zookeeper = "2026-12-05 05:01:02,345 [myid:0] - INFO  [main:o.a.z.s.p.FileTxnSnapLog@372] - Snapshotting: \
                         highest zxid is 0x900000115";
        let found = Recovered::from_line(zookeeper, "Snapshotting", "highest zxid is").unwrap();
        assert_eq!(found.recovered, 0x9_0000_0115, "hexadecimal after 0x");
    }

    #[test]
    fn given_boot_lines_with_a_vector_clock_when_read_should_take_every_component_in_any_notation() {
        let vclock = Position::Map([("1".to_string(), 3181), ("2".to_string(), 5)].into());
        for (line, after) in [
            (
                "2026-12-05 05:01:02.345 [1234] main/103/interactive I> instance vclock {1: 3181, 2: 5}",
                "vclock",
            ),
            (
                r#"{"msg": "recovered vclock", "vclock": {"1": 3181, "2": 5}, "lsn": 9}"#,
                "\"vclock\":",
            ),
            ("recovered vclock={1:3181,2:5} (2 replicas)", "vclock="),
        ] {
            let log = format!("opening wal\n{line}\nready\n");
            let found = Recovered::from_line(&log, "vclock", after).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(found.recovered, vclock, "{line}");
            assert_eq!(found.recovered.to_string(), "{1: 3181, 2: 5}");
            assert_eq!(found.line, line);
        }
        assert_eq!(
            Recovered::from_line("instance vclock {1: 3181", "instance", "vclock"),
            None,
            "an unclosed clock is no position"
        );
    }
}
