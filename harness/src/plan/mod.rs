//! Test plans: YAML files that say which system to test, with which workload, under which faults, for how long.
//!
//! Parsing rejects unknown fields and reports every problem with file:line:column and what was expected, before
//! anything starts. Checks that need more than one field (a node name beyond the node count, a fault the system cannot
//! do) run in [`Plan::validate`] and point at the offending field too.

pub mod builtin;
pub mod swarm;

mod load;
mod membership;
pub mod overrides;
mod validate;

pub use crate::system::spec::SystemSpec;
use faultline_faults::disk::spec::SurgerySpec;
use faultline_faults::fusefs::FsFaults;
use faultline_faults::network::schedule::NetworkNemesisSpec;
use faultline_faults::network::BackendKind;
use faultline_faults::process::ProcessNemesisSpec;
use faultline_faults::trigger::{TriggerSpec, TriggeredKind};
use faultline_faults::units::Millis;
use serde::{Deserialize, Deserializer, Serialize};
use serde_saphyr::Spanned;
use std::fmt;

/// The built-in default plan (also `plans/default.yaml`), printed by `faultline plan --print-default`.
pub const DEFAULT_PLAN_YAML: &str = include_str!("../../../plans/default.yaml");

/// A whole test plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Plan name; names the store folder.
    pub name: PlanName,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Run seed; omitted = random (printed and stored, so the run can be repeated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Where a generated plan came from (`replay of store/default/...`, `shrunk from ...`); set by the harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The `--set PATH=VALUE` settings this plan was run with (their values are in the plan already); set by the
    /// harness, for the person who reads the stored plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// Length of the fault phase (the final phase comes after it).
    pub time_limit: Millis,
    /// The system under test.
    pub system: SystemSpec,
    /// The client workload.
    pub workload: WorkloadSpec,
    /// How the harness shapes the network between nodes.
    #[serde(default)]
    pub network: NetworkSpec,
    /// How the harness stores nodes' data.
    #[serde(default)]
    pub disk: DiskSpec,
    /// The faults.
    #[serde(default)]
    pub nemesis: NemesisSpec,
    /// What happens after the fault phase.
    #[serde(default)]
    pub final_phase: FinalPhaseSpec,
    /// Checker settings.
    #[serde(default)]
    pub check: CheckSpec,
    /// Substrings that make a run invalid when they appear in a node's log (e.g. `panicked at`).
    #[serde(default = "default_log_patterns")]
    pub log_patterns: Vec<String>,
}

fn default_log_patterns() -> Vec<String> {
    vec!["panicked at".to_string()]
}

/// A plan name: letters, digits, `-`, `_`, `.` (it becomes a folder name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanName(pub String);

impl<'de> Deserialize<'de> for PlanName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !name.starts_with('.');
        if !ok {
            return Err(serde::de::Error::custom(format!(
                "plan name `{name}` must be 1-64 characters of letters, digits, `-`, `_`, `.` (it names a folder)"
            )));
        }
        Ok(PlanName(name))
    }
}

impl fmt::Display for PlanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An integer that must be at least `MIN` and at most `MAX`, checked where it is parsed (so errors carry a location).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Bounded<const MIN: u64, const MAX: u64>(pub u64);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Bounded<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = i64::deserialize(d)?;
        if value < MIN as i64 || value as u64 > MAX {
            return Err(serde::de::Error::custom(format!(
                "{value} is out of range: expected {MIN}..={MAX}"
            )));
        }
        Ok(Bounded(value as u64))
    }
}

/// A positive rate (operations per second).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(transparent)]
pub struct Rate(pub f64);

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(d)?;
        if !(value > 0.0 && value <= 100_000.0) {
            return Err(serde::de::Error::custom(format!(
                "rate {value} must be > 0 and <= 100000 ops/s"
            )));
        }
        Ok(Rate(value))
    }
}

/// Workload kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// Read / write / compare-and-set on independent keys; checked for linearizability (cas-register model).
    Register,
    /// Producers append unique payloads to a few logs, consumers read forward; checked for lost, duplicated,
    /// reordered, stale and phantom messages.
    Log,
    /// Clients add unique elements to one set and read the whole set (Jepsen's set-full): every acknowledged add
    /// must be in every read that starts after it, and nothing nobody added may appear.
    Set,
    /// Multi-key transactions of micro-ops (`model: list-append | rw-register`, Elle's datatypes) over rotating
    /// keys; checked for isolation anomalies (dependency cycles and more) against the claimed `consistency`.
    Txn,
    /// Jepsen's bank: transfers between accounts and reads of every balance (`bank:` sets the accounts, the total and
    /// the largest transfer); every read must sum to the total with no negative balance.
    Bank,
    /// Jepsen's long fork: each write inserts a fresh key, reads read a group of `group_size` keys; every read of a
    /// group must see the inserts in one order (snapshot isolation forbids the long fork).
    LongFork,
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkloadKind::Register => "register",
            WorkloadKind::Log => "log",
            WorkloadKind::Set => "set",
            WorkloadKind::Txn => "txn",
            WorkloadKind::Bank => "bank",
            WorkloadKind::LongFork => "long-fork",
        })
    }
}

/// Operation mix (relative weights). The txn workload mixes micro-ops: `read` against `write` (a write is an
/// `append` in list-append and a `w` in rw-register; `append` is taken as a synonym in list-append).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mix {
    /// Reads.
    #[serde(default)]
    pub read: u32,
    /// Writes of unique values.
    #[serde(default)]
    pub write: u32,
    /// Compare-and-set.
    #[serde(default)]
    pub cas: u32,
    /// Appends to a log (log workload).
    #[serde(default)]
    pub append: u32,
    /// Adds of unique elements (set workload).
    #[serde(default)]
    pub add: u32,
    /// Transfers between accounts (bank workload).
    #[serde(default)]
    pub transfer: u32,
}

/// The client workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Workload kind.
    pub kind: WorkloadKind,
    /// Concurrent logical clients (workers); each is bound to one node, round-robin.
    pub concurrency: Bounded<1, 256>,
    /// Target total rate, ops/s.
    pub rate: Rate,
    /// Keys in use at once.
    pub keys: Bounded<1, 1000>,
    /// Operations on a key before it is retired for a fresh one (Jepsen's `independent`: keeps per-key histories
    /// small enough to check fast).
    pub ops_per_key: Bounded<1, 100_000>,
    /// Operation mix.
    pub mix: Spanned<Mix>,
    /// Per-operation deadline; an op whose outcome is unknown by then is recorded `info`.
    pub op_timeout: Millis,
    /// What the system promises for an acknowledged append (log workload): `quorum-disk` (loss is invalid) or
    /// `quorum-memory` (loss is reported as a warning, the verdict at worst unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durability: Option<faultline_workloads::Durability>,
    /// Whether the system promises linearizable reads (log workload: a read that misses an acknowledged append is
    /// stale). Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linearizable_reads: Option<bool>,
    /// Txn workload: the datatype of the keys, `list-append` or `rw-register` (required there, refused elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Spanned<faultline_workloads::txn_check::TxnModel>>,
    /// Txn workload: the isolation level the system claims (default `strict-serializable`); the run is invalid
    /// exactly when the history shows an anomaly it forbids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<faultline_workloads::txn_check::ConsistencyModel>,
    /// Txn workload: micro-ops per transaction, `MIN..MAX` inclusive (e.g. `1..4`) or a number for exactly that
    /// many (default `1..4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_length: Option<TxnLength>,
    /// Bank workload: the accounts, the total they hold and the largest transfer (defaults: 8, 100, 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank: Option<Spanned<BankSpec>>,
    /// Long-fork workload: keys each read reads (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_size: Option<Bounded<2, 16>>,
    /// Windows of the fault phase in which no client starts an op (scripted scenarios: let the cluster settle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quiet: Vec<QuietWindow>,
}

/// The bank of the bank workload (Jepsen's): accounts `0..accounts`, account 0 opening with the whole total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BankSpec {
    /// Accounts.
    #[serde(default = "BankSpec::default_accounts")]
    pub accounts: Bounded<2, 64>,
    /// What they hold together, and every read must sum to.
    #[serde(default = "BankSpec::default_total")]
    pub total: Bounded<1, 1_000_000_000>,
    /// The largest amount a transfer moves (each draws from 1 to it).
    #[serde(default = "BankSpec::default_max_transfer")]
    pub max_transfer: Bounded<1, 1_000_000_000>,
}

impl BankSpec {
    fn default_accounts() -> Bounded<2, 64> {
        Bounded(8)
    }
    fn default_total() -> Bounded<1, 1_000_000_000> {
        Bounded(100)
    }
    fn default_max_transfer() -> Bounded<1, 1_000_000_000> {
        Bounded(5)
    }
}

impl Default for BankSpec {
    /// Jepsen's: 8 accounts, 100 in all, transfers of at most 5.
    fn default() -> Self {
        BankSpec {
            accounts: BankSpec::default_accounts(),
            total: BankSpec::default_total(),
            max_transfer: BankSpec::default_max_transfer(),
        }
    }
}

/// Micro-ops per transaction: between `min` and `max`, inclusive, at most [`TxnLength::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnLength {
    /// Fewest micro-ops (at least 1).
    pub min: u64,
    /// Most micro-ops (at least `min`).
    pub max: u64,
}

impl TxnLength {
    /// Longest transaction a plan may ask for (a node takes the whole transaction in one request body).
    pub const MAX: u64 = 64;
    /// The default, `1..4`.
    pub const DEFAULT: TxnLength = TxnLength { min: 1, max: 4 };
}

impl Serialize for TxnLength {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}..{}", self.min, self.max))
    }
}

impl<'de> Deserialize<'de> for TxnLength {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Exactly(u64),
            Range(String),
        }
        let expected = |found: &str| {
            serde::de::Error::custom(format!(
                "txn_length `{found}`: expected `MIN..MAX` (e.g. `1..4`) or a number, with 1 <= MIN <= MAX <= {}",
                TxnLength::MAX
            ))
        };
        let (min, max) = match Form::deserialize(d)? {
            Form::Exactly(n) => (n, n),
            Form::Range(text) => {
                let (min, max) = text.split_once("..").ok_or_else(|| expected(&text))?;
                let parse = |part: &str| part.trim().parse::<u64>().map_err(|_| expected(&text));
                (parse(min)?, parse(max)?)
            }
        };
        if min == 0 || min > max || max > TxnLength::MAX {
            return Err(expected(&format!("{min}..{max}")));
        }
        Ok(TxnLength { min, max })
    }
}

/// A window without client ops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuietWindow {
    /// Start, from the start of the fault phase.
    pub at: Millis,
    /// Length.
    pub duration: Millis,
}

/// The nemesis: every fault of the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NemesisSpec {
    /// Process faults (kill, pause) and per-node flaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Spanned<ProcessNemesisSpec>>,
    /// Network faults: partitions and link faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Spanned<NetworkNemesisSpec>>,
    /// I/O faults of the fault filesystem (EIO, ENOSPC, stalls) on nodes for windows of the fault phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub io: Vec<IoFaultWindow>,
    /// Faults that react to the observed cluster (see [`faultline_faults::trigger`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Spanned<TriggerSpec>>,
    /// Each seed runs a random subset of the fault kinds and triggers, rates and durations scaled
    /// ([`crate::plan::swarm`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub swarm: bool,
    /// What the swarm chose for this run's seed (written into the run's `plan.yaml`; informational).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swarmed: Vec<String>,
}

impl NemesisSpec {
    /// Whether the fault phase cuts or degrades the network (timed or triggered): the run needs a network backend.
    pub fn has_network_faults(&self) -> bool {
        self.network.as_ref().is_some_and(|n| !n.value.is_empty())
            || self
                .triggers
                .iter()
                .any(|t| matches!(t.value.action.kind, TriggeredKind::Partition | TriggeredKind::Link))
    }

    /// Where the plan first asks for a clock fault (timed, scripted or triggered), if it does: the run then preloads
    /// libfaketime into every node, and the plan check asks whether the node binary can be reached.
    pub fn first_clock_fault(&self) -> Option<serde_saphyr::Location> {
        let process = self.process.iter().flat_map(|p| {
            let faults = p.value.faults.iter().map(|f| (f.kind, f.targets.referenced));
            faults.chain(p.value.script.iter().map(|f| (f.kind, f.targets.referenced)))
        });
        process
            .filter(|(kind, _)| *kind == faultline_faults::process::ProcessFault::Clock)
            .map(|(_, at)| at)
            .chain(
                self.triggers
                    .iter()
                    .filter(|t| t.value.action.kind == TriggeredKind::Clock)
                    .map(|t| t.referenced),
            )
            .next()
    }

    /// Whether the fault phase moves clocks.
    pub fn has_clock_faults(&self) -> bool {
        self.first_clock_fault().is_some()
    }

    /// Where the plan first changes membership (a timed, scripted or triggered `kind: membership`), if it does.
    pub fn first_membership_fault(&self) -> Option<serde_saphyr::Location> {
        let process = self.process.iter().flat_map(|p| {
            let faults = p.value.faults.iter().map(|f| (f.kind, f.targets.referenced));
            faults.chain(p.value.script.iter().map(|f| (f.kind, f.targets.referenced)))
        });
        process
            .filter(|(kind, _)| *kind == faultline_faults::process::ProcessFault::Membership)
            .map(|(_, at)| at)
            .chain(
                self.triggers
                    .iter()
                    .filter(|t| t.value.action.kind == TriggeredKind::Membership)
                    .map(|t| t.referenced),
            )
            .next()
    }
}

/// I/O faults on one node for a window of the fault phase (needs `disk.fault_fs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoFaultWindow {
    /// Start, from the start of the fault phase.
    pub at: Millis,
    /// Length.
    pub duration: Millis,
    /// Which node (`n1..nN`).
    pub node: Spanned<String>,
    /// The faults, e.g. `{eio: [{ops: [fsync], files: "wal*", nth: 1}]}`, `{stall: [...]}`, `{enospc: {...}}`.
    pub faults: FsFaults,
}

/// Network backends a run can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkBackend {
    /// One TCP proxy per directed peer link (no root; for systems that take per-node peer addresses).
    #[default]
    Proxy,
    /// Every node in its own network namespace, partitions as nftables rules (root, `ip`, `nft`).
    Netns,
    /// netns when this machine can do it, else proxy (the plan's faults must suit both).
    Auto,
}

impl NetworkBackend {
    /// The backends a plan's network faults must be valid for.
    pub fn candidate_kinds(self) -> &'static [BackendKind] {
        match self {
            NetworkBackend::Proxy => &[BackendKind::Proxy],
            NetworkBackend::Netns => &[BackendKind::Netns],
            NetworkBackend::Auto => &[BackendKind::Proxy, BackendKind::Netns],
        }
    }
}

/// The plan's network section.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// `proxy` (the default), `netns` or `auto`.
    #[serde(default)]
    pub backend: NetworkBackend,
}

/// The final phase: heal, recover, converge, read, restart everything, read again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalPhaseSpec {
    /// Run the final phase (default true). Without it the run only checks the fault phase.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Bound on the cluster accepting a write after healing; past it the run is invalid (liveness).
    #[serde(default = "default_recovery_timeout")]
    pub recovery_timeout: Millis,
    /// Bound on every node reporting the same commit point (default: 30 s). Refused for a system without a status
    /// probe, which reports no commit point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence_timeout: Option<Spanned<Millis>>,
    /// Bound on a restarted node becoming ready.
    #[serde(default = "default_boot_timeout")]
    pub boot_timeout: Millis,
    /// kill -9 every node and restart every node, then read again (default true).
    #[serde(default = "yes")]
    pub restart_all: bool,
    /// Test-only: flip a byte in the middle of a node's WAL while it is stopped in the restart-all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_only_corrupt_wal: Option<TestCorruptWal>,
    /// Make the restart-all a power loss of every node: unsynced writes are dropped (needs `disk.fault_fs`).
    #[serde(default)]
    pub power_loss: bool,
    /// Disk surgery on stopped nodes during the restart-all, recorded exactly in the history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surgery: Vec<FinalSurgery>,
    /// What to do with a node that legitimately refuses to boot after surgery: `leave-down` or `wipe` (format it
    /// empty so it recovers its state from its peers).
    #[serde(default)]
    pub after_refusal: AfterRefusal,
}

/// One cut on one stopped node in the restart-all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalSurgery {
    /// Which node (`n1..nN`).
    pub node: Spanned<String>,
    /// The cut, e.g. `{op: flip-bits, files: "wal*", region: interior, bits: 3}`.
    pub cut: SurgerySpec,
}

/// After a legitimate refusal to boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AfterRefusal {
    /// Leave the node down; the rest of the cluster must carry on.
    #[default]
    LeaveDown,
    /// Wipe its data dir (a fresh, joining replica) and start it again; it must recover from its peers.
    Wipe,
}

/// The plan's disk section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// Mount the fault filesystem (FUSE, root) over every node's data dir: unsynced writes stay droppable, so power
    /// loss can discard them. Needed by `power-loss` faults.
    #[serde(default)]
    pub fault_fs: bool,
    /// When the fault filesystem makes directory changes and truncations durable at an fsync: `journaled` (the
    /// default: any fsync commits every earlier change, as the journal of ext4 and XFS does) or `posix` (only an
    /// fsync of the directory, or of the truncated file).
    #[serde(default = "default_metadata")]
    pub metadata: faultline_faults::fusefs::MetadataDurability,
    /// When unsynced changes become durable with age alone, as the kernel's flusher and the journal's commit make
    /// them: `{data_after: 30s, metadata_after: 5s}` by default (Linux on ext4), `never` for either.
    #[serde(default = "default_writeback")]
    pub writeback: faultline_faults::fusefs::Writeback,
    /// What the system must do on interior damage to its files (a flip or a zeroed block a correct log cannot take
    /// for a torn write): `refuse` (booting on it with less than it had applied is invalid) or `may-truncate` (a
    /// named warning). Default: what the system's adapter promises (the reference node refuses; etcd 3.4 does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interior_damage: Option<InteriorDamage>,
    /// What the system promises when a minority's files are damaged while the cluster runs (`corrupt` faults):
    /// `tolerate` (the default: the damaged node may refuse to boot or forget its own tail, but no acknowledged
    /// write is lost, the history stays linearizable and the cluster converges), `refuse` (as `tolerate`, and the
    /// damaged node must notice interior damage and refuse to boot) or `anything` (no promise: what fails after a
    /// cut is reported, not judged). Damage to a majority is never judged as a bug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minority_damage: Option<Spanned<MinorityDamage>>,
}

/// What a plan declares a system promises when a minority's files are damaged on a live cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MinorityDamage {
    /// It tolerates it: nothing acknowledged is lost, the damaged node may refuse or forget its tail.
    #[default]
    Tolerate,
    /// As `tolerate`, and the damaged node refuses to boot on interior damage.
    Refuse,
    /// No promise.
    Anything,
}

/// What a plan declares a system must do on interior damage to its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InteriorDamage {
    /// Refuse to boot.
    Refuse,
    /// It may truncate there (reported as a warning with what it dropped).
    MayTruncate,
}

/// The disk model a plan gets when it names none: Linux on ext4 with its default settings, which loses what a
/// program never fsynced within the last half minute and nothing a correct program relies on.
fn default_metadata() -> faultline_faults::fusefs::MetadataDurability {
    faultline_faults::fusefs::MetadataDurability::Journaled
}

fn default_writeback() -> faultline_faults::fusefs::Writeback {
    faultline_faults::fusefs::Writeback::LINUX_EXT4
}

impl Default for DiskSpec {
    fn default() -> Self {
        DiskSpec {
            fault_fs: false,
            metadata: default_metadata(),
            writeback: default_writeback(),
            interior_damage: None,
            minority_damage: None,
        }
    }
}

/// A test-only fault step used to prove boot verification is judged correctly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCorruptWal {
    /// Which node (`n1..nN`).
    pub node: Spanned<String>,
    /// Record the surgery in the history (true: a refusal is legitimate; false: it looks like nothing corrupted the
    /// disk, as with a buggy WAL).
    #[serde(default = "yes")]
    pub recorded: bool,
}

impl FinalPhaseSpec {
    /// The bound on convergence: the plan's, else the default.
    pub fn convergence_timeout(&self) -> std::time::Duration {
        self.convergence_timeout
            .as_ref()
            .map_or(default_recovery_timeout(), |t| t.value)
            .duration()
    }
}

impl Default for FinalPhaseSpec {
    fn default() -> Self {
        FinalPhaseSpec {
            enabled: true,
            recovery_timeout: default_recovery_timeout(),
            convergence_timeout: None,
            boot_timeout: default_boot_timeout(),
            restart_all: true,
            test_only_corrupt_wal: None,
            power_loss: false,
            surgery: Vec::new(),
            after_refusal: AfterRefusal::LeaveDown,
        }
    }
}

fn yes() -> bool {
    true
}

fn default_recovery_timeout() -> Millis {
    Millis(30_000)
}

fn default_boot_timeout() -> Millis {
    Millis(20_000)
}

/// Checker settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// Wall-time budget of the linearizability search; past it the verdict is `unknown`.
    #[serde(default = "default_check_timeout")]
    pub timeout: Millis,
    /// Memory budget of the search, MiB.
    #[serde(default = "default_memory_mib")]
    pub memory_budget_mib: Bounded<16, 65536>,
}

impl Default for CheckSpec {
    fn default() -> Self {
        CheckSpec {
            timeout: default_check_timeout(),
            memory_budget_mib: default_memory_mib(),
        }
    }
}

fn default_check_timeout() -> Millis {
    Millis(60_000)
}

fn default_memory_mib() -> Bounded<16, 65536> {
    Bounded(1024)
}

/// A plan that could not be loaded: where and why. Exit code 254.
#[derive(Debug, thiserror::Error)]
#[error("{}", self.located())]
pub struct PlanError {
    /// File path or `<default plan>`.
    pub origin: String,
    /// 1-based line (0 = unknown).
    pub line: u64,
    /// 1-based column (0 = unknown).
    pub column: u64,
    /// What was wrong and what was expected.
    pub message: String,
}

impl PlanError {
    /// `origin:line:column: message`, or `origin: message` when the place is not known (line 0: a whole file that
    /// cannot be read, a `--set` setting).
    fn located(&self) -> String {
        if self.line == 0 {
            format!("{}: {}", self.origin, self.message)
        } else {
            format!("{}:{}:{}: {}", self.origin, self.line, self.column, self.message)
        }
    }
}

impl Plan {
    /// Whether who is a member changes during the run: membership faults, or spare nodes (`members:` below
    /// `nodes:`). Random fault targets are then drawn among the members of the moment a fault starts.
    pub fn changes_membership(&self) -> bool {
        self.system.initial_members() < self.system.nodes() || self.nemesis.first_membership_fault().is_some()
    }

    /// The plan as YAML (what the store keeps as `plan.yaml`, with the seed filled in).
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).unwrap_or_else(|e| format!("# could not serialize the plan: {e}\n"))
    }

    /// A stable digest of the resolved plan.
    pub fn digest(&self) -> String {
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(self.to_yaml().as_bytes()))
    }
}

#[cfg(test)]
mod tests;
