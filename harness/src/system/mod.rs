//! System adapters: how to run and talk to one kind of system under test.
//!
//! An adapter knows how to prepare and launch node *i* (command, args, env, data dir, ports), how to probe it
//! (readiness, role, commit point for convergence), which files hold its WAL (for disk faults), how a refusal to boot
//! looks in its log, and which clients it offers. The harness treats every system, the reference node included, as a
//! black box behind this trait.

pub mod etcd;
pub mod iggy;
pub mod reference;

use crate::supervisor::LaunchCommand;
use async_trait::async_trait;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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

/// A set client (add unique elements, read the whole set) bound to one node.
#[async_trait]
pub trait SetClient: Send + Sync {
    /// Adds `element`: `Ok(Value::Null)` once acknowledged.
    async fn add(&self, element: &str) -> (Outcome, usize);
    /// Reads the whole set: `Ok(Value::Array)` of its elements (strings).
    async fn read_all(&self) -> (Outcome, usize);
}

/// A system under test.
#[async_trait]
pub trait System: Send + Sync {
    /// Adapter name (`reference`, `etcd`, ...).
    fn kind(&self) -> &'static str;
    /// Cluster size.
    fn node_count(&self) -> usize;
    /// The node's data dir.
    fn data_dir(&self, node: usize) -> PathBuf;
    /// The node's addresses.
    fn addrs(&self, node: usize) -> NodeAddrs;
    /// One-time preparation of a node's data dir before its first start (e.g. format).
    async fn prepare(&self, node: usize) -> anyhow::Result<()>;
    /// Wipes a stopped node's data dir so that it rejoins as an empty replica and recovers its state from its peers.
    async fn wipe(&self, node: usize) -> anyhow::Result<()>;
    /// The command that starts the node with its data dir.
    fn launch(&self, node: usize) -> LaunchCommand;
    /// Asks a live node for its status; `None` when it does not answer within `timeout`.
    async fn probe(&self, node: usize, timeout: Duration) -> Option<NodeStatus>;
    /// The node that becomes primary in the next view, given the current primary, if the system can tell.
    fn next_primary(&self, primary: usize) -> Option<usize>;
    /// Glob of the WAL files, relative to the data dir (for disk faults), e.g. `wal*` or `member/wal/*.wal`.
    fn wal_glob(&self) -> &'static str;
    /// An offline verification command for a stopped node's data dir (exit 0 = sound), if the system has one.
    fn verify_command(&self, node: usize) -> Option<LaunchCommand>;
    /// The line of a node's log that says it refused to boot, if any.
    fn boot_refusal_line(&self, log_tail: &str) -> Option<String>;
    /// A register client bound to `home` (it follows the system's redirects to the primary).
    fn register_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> Box<dyn RegisterClient>;
    /// A log client bound to `home`, if the system offers logs.
    fn log_client(&self, home: usize, op_timeout: Duration, client_id: u64) -> Option<Box<dyn LogClient>>;
    /// A set client bound to `home`, if the system offers sets.
    fn set_client(&self, _home: usize, _op_timeout: Duration, _client_id: u64) -> Option<Box<dyn SetClient>> {
        None
    }
}

/// A failed read has no effect whatever happened, so it is a `fail`; a write or cas is `info` (unknown).
pub(crate) fn unknown(is_read: bool, why: String) -> Outcome {
    if is_read {
        Outcome::Fail(format!("{why} (a read has no effect)"))
    } else {
        Outcome::Info(why)
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
