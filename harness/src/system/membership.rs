//! The membership hooks of a system: how the lab adds a node to the cluster, removes one, and learns who the members
//! are. An adapter that has them returns them from [`super::System::membership`], and declares it in
//! [`super::Capabilities::membership`], which the plan check reads before a `kind: membership` fault or a pool of
//! spare nodes is accepted.
//!
//! The lab drives a change: for `add` it prepares the node's data dir as a fresh joiner
//! ([`Membership::prepare_joiner`]), then starts it and asks for the change in the order the system needs
//! ([`JoinOrder`]); for `remove` it asks for the change, then stops the node once it is out. Whatever the outcome, it
//! asks [`Membership::list`] afterwards and records what the system says: the history's member set is the system's,
//! not the harness's wish.

use async_trait::async_trait;
use serde_json::Value;

/// Whether a joiner is started before its addition is asked for, or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinOrder {
    /// Started first; it waits to be added (the reference node, ZooKeeper).
    StartThenAdd,
    /// Added first; then started, joining a cluster that lists it already (etcd: `member add`, then
    /// `--initial-cluster-state existing`).
    AddThenStart,
}

/// Who the members are, as the system says: with the epoch (configuration number) they belong to, when the system
/// has one (a status or answer of an older epoch is then never taken for the newer one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The configuration's epoch, if the system numbers them.
    pub epoch: Option<u64>,
    /// The members (0-based).
    pub members: Vec<usize>,
}

/// How a membership change ended, Jepsen-style.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeOutcome {
    /// It took effect; what the system answered.
    Ok(Value),
    /// It definitely did not take effect (refused, never sent).
    Fail(String),
    /// Unknown (a timeout, a lost connection): the list that follows says.
    Info(String),
}

impl ChangeOutcome {
    /// `ok`, `fail` or `info`.
    pub fn name(&self) -> &'static str {
        match self {
            ChangeOutcome::Ok(_) => "ok",
            ChangeOutcome::Fail(_) => "fail",
            ChangeOutcome::Info(_) => "info",
        }
    }
}

/// A system's membership hooks (see the module doc).
#[async_trait]
pub trait Membership: Send + Sync {
    /// When a joiner is started, relative to its addition.
    fn join_order(&self) -> JoinOrder;
    /// Makes a stopped node's data dir a fresh joiner's of the cluster whose members are `members` (0-based): its
    /// next start joins rather than bootstraps.
    async fn prepare_joiner(&self, node: usize, members: &[usize]) -> anyhow::Result<()>;
    /// Asks the cluster (whose members are `members`) to add `node`.
    async fn add(&self, node: usize, members: &[usize]) -> ChangeOutcome;
    /// Asks the cluster (whose members are `members`) to remove `node`.
    async fn remove(&self, node: usize, members: &[usize]) -> ChangeOutcome;
    /// Who the members are, asked of the cluster (`members`: who the lab believes they are, to know whom to ask).
    async fn list(&self, members: &[usize]) -> Result<Listed, String>;
    /// The members a successful change's answer names, if the system answers with them (then the lab takes them:
    /// right after a change a list may still reach a node that has not heard of it).
    fn members_in_answer(&self, _answer: &serde_json::Value) -> Option<Listed> {
        None
    }
    /// The members a node's status names, if it names them with their epoch: the observer follows a change whose
    /// outcome was unknown when it ended (a reconfiguration that commits after a view change).
    fn members_in_status(&self, _status: &serde_json::Value) -> Option<Listed> {
        None
    }
}
