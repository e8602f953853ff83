//! Which consistency models an anomaly rules out, and which anomalies a model forbids: Elle's two hierarchies, as
//! data.
//!
//! Three tables, taken from Elle's `elle.consistency-model` (Kingsbury and Alvaro, VLDB 2020), whose sources are
//! Adya's thesis, Adya, Liskov and O'Neil, Bailis et al. ("Highly Available Transactions"), Cerone, Bernardi and
//! Gotsman, Cerone and Gotsman ("Analysing Snapshot Isolation"), Daudjee and Salem, Fekete et al. and others:
//! - [`MODELS`]: `a -> b` when every history that satisfies `a` satisfies `b`;
//! - [`IMPLIES`]: `a -> b` when a history showing anomaly `a` shows `b` too (G0 is a G1c; a lost update is a G2-item);
//! - [`PROSCRIBES`]: the anomalies each model forbids directly, on top of the models it implies.
//!
//! From them, as Elle computes them: the anomalies a set of models forbids (every model they imply, every anomaly
//! those forbid, and every anomaly that implies one of those: [`prohibited_by`]); the models a set of anomalies rules
//! out (every anomaly they imply, every model forbidding one, and every model implying one of those:
//! [`impossible`]); and the weakest and strongest members of a set of models ([`weakest`], [`strongest`]), so a
//! report can say "not repeatable-read" instead of listing the eleven models above it.
//!
//! Names are Elle's, spelled as Elle prints them (`G-single-item`, `strong-session-snapshot-isolation`). faultline adds
//! two anomalies of its own, `garbage-read` (a read of a value nobody wrote) and `lost` (a read showing a transaction's later
//! append to a key but not its earlier one); it treats both as aborted reads (G1a): the read saw a state no committed
//! transaction made.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// An isolation or consistency model a system may claim, named as Elle names it.
///
/// Elle's canonical names (`PL-2`, `PL-SS`, ...) and synonyms (`conflict-serializable`, `strong-serializable`) are
/// accepted by [`ConsistencyModel::parse`]; each model is shown by its friendly name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsistencyModel {
    /// Serializable, and the serial order agrees with real time (Adya PL-SS).
    #[serde(alias = "strong-serializable")]
    StrictSerializable,
    /// Serializable, and the serial order agrees with each process's order.
    StrongSessionSerializable,
    /// Equivalent to some serial execution (Adya PL-3, conflict serializability).
    #[serde(alias = "conflict-serializable")]
    Serializable,
    /// Snapshot isolation whose snapshots include every transaction that completed before it began.
    StrongSnapshotIsolation,
    /// Snapshot isolation whose snapshots include the process's own earlier transactions.
    StrongSessionSnapshotIsolation,
    /// Reads from a snapshot, first committer wins (Adya PL-SI).
    SnapshotIsolation,
    /// Adya PL-2.99: no item anti-dependency cycles.
    RepeatableRead,
    /// Adya PL-3U.
    UpdateSerializable,
    /// Adya PL-FCV.
    ForwardConsistentView,
    /// Adya PL-2+.
    ConsistentView,
    /// Adya PL-CS.
    CursorStability,
    /// Adya PL-2L.
    MonotonicView,
    /// Adya PL-MSR.
    MonotonicSnapshotRead,
    /// Cerone et al.'s parallel snapshot isolation.
    ParallelSnapshotIsolation,
    /// Cerone et al.'s prefix consistency.
    Prefix,
    /// Cerone et al.'s causal consistency.
    CausalCerone,
    /// Cerone et al.'s update atomicity: no lost updates.
    UpdateAtomic,
    /// Cerone et al.'s read atomicity.
    ReadAtomic,
    /// Bailis et al.'s monotonic atomic view.
    MonotonicAtomicView,
    /// Read committed, and real-time order respected by its cycles.
    #[serde(rename = "strong-read-committed")]
    StrongReadCommitted,
    /// Read committed, and process order respected by its cycles.
    #[serde(rename = "strong-session-read-committed")]
    StrongSessionReadCommitted,
    /// Adya PL-2: no dirty reads or writes, no circular information flow.
    ReadCommitted,
    /// Read uncommitted, and real-time order respected by its write cycles.
    #[serde(rename = "strong-read-uncommitted")]
    StrongReadUncommitted,
    /// Read uncommitted, and process order respected by its write cycles.
    #[serde(rename = "strong-session-read-uncommitted")]
    StrongSessionReadUncommitted,
    /// Adya PL-1: no dirty writes (write cycles).
    ReadUncommitted,
    /// View serializability.
    ViewSerializable,
    /// Zuikeviciute and Pedone's session serializability.
    SessionSerializable,
    /// One-copy serializability.
    #[serde(rename = "1SR")]
    OneCopySerializable,
    /// A single object's linearizability (in Elle's graph; no transactional check rules it out).
    Linearizable,
    /// Sequential consistency.
    Sequential,
    /// Causal consistency.
    Causal,
    /// Writes follow reads.
    WritesFollowReads,
    /// Pipelined RAM.
    #[serde(rename = "PRAM")]
    Pram,
    /// Monotonic reads.
    MonotonicReads,
    /// Monotonic writes.
    MonotonicWrites,
    /// Read your writes.
    ReadYourWrites,
}

use ConsistencyModel as M;

/// `a -> [b]`: every history satisfying `a` satisfies each `b` (Elle's `models`, canonical names merged).
pub const MODELS: &[(M, &[M])] = &[
    (M::CausalCerone, &[M::ReadAtomic]),
    (M::ConsistentView, &[M::CursorStability, M::MonotonicView]),
    (
        M::Serializable,
        &[
            M::ViewSerializable,
            M::RepeatableRead,
            M::UpdateSerializable,
            M::SnapshotIsolation,
        ],
    ),
    (M::CursorStability, &[M::ReadCommitted]),
    (M::ForwardConsistentView, &[M::ConsistentView]),
    (M::ReadCommitted, &[M::ReadUncommitted]),
    (M::UpdateSerializable, &[M::ForwardConsistentView]),
    (M::MonotonicAtomicView, &[M::ReadCommitted]),
    (M::MonotonicView, &[M::ReadCommitted]),
    (M::MonotonicSnapshotRead, &[M::ReadCommitted]),
    (M::ParallelSnapshotIsolation, &[M::CausalCerone, M::UpdateAtomic]),
    (M::Prefix, &[M::CausalCerone]),
    (M::ReadAtomic, &[M::MonotonicAtomicView]),
    (M::RepeatableRead, &[M::CursorStability, M::MonotonicAtomicView]),
    (M::UpdateAtomic, &[M::ReadAtomic]),
    (M::SessionSerializable, &[M::OneCopySerializable]),
    (
        M::SnapshotIsolation,
        &[
            M::ForwardConsistentView,
            M::MonotonicAtomicView,
            M::MonotonicSnapshotRead,
            M::ParallelSnapshotIsolation,
            M::Prefix,
        ],
    ),
    (
        M::StrictSerializable,
        &[
            M::Serializable,
            M::Linearizable,
            M::SnapshotIsolation,
            M::StrongSnapshotIsolation,
            M::StrongSessionSerializable,
            M::SessionSerializable,
        ],
    ),
    (M::StrongSessionReadUncommitted, &[M::ReadUncommitted]),
    (
        M::StrongSessionReadCommitted,
        &[M::ReadCommitted, M::StrongSessionReadUncommitted],
    ),
    (M::StrongReadUncommitted, &[M::StrongSessionReadUncommitted]),
    (
        M::StrongReadCommitted,
        &[M::StrongSessionReadCommitted, M::StrongReadUncommitted],
    ),
    (
        M::StrongSessionSerializable,
        &[M::Serializable, M::StrongSessionSnapshotIsolation],
    ),
    (
        M::StrongSessionSnapshotIsolation,
        &[M::SnapshotIsolation, M::StrongSessionReadCommitted],
    ),
    (
        M::StrongSnapshotIsolation,
        &[M::StrongSessionSnapshotIsolation, M::StrongReadCommitted],
    ),
    (M::Linearizable, &[M::Sequential]),
    (M::Sequential, &[M::Causal]),
    (M::Causal, &[M::WritesFollowReads, M::Pram]),
    (M::Pram, &[M::MonotonicReads, M::MonotonicWrites, M::ReadYourWrites]),
];

/// `a -> [b]`: a history showing anomaly `a` shows each `b` too (Elle's `implied-anomalies`, plus faultline's
/// `garbage-read` and `lost`, read as aborted reads).
pub const IMPLIES: &[(&str, &[&str])] = &[
    ("G0", &["G1c", "G0-process"]),
    ("G0-process", &["G1c-process", "G0-realtime"]),
    ("G0-realtime", &["G1c-realtime"]),
    ("G1a", &["G1"]),
    ("G1b", &["G1"]),
    ("G1c", &["G1", "G1c-process"]),
    ("G1c-process", &["G1c-realtime", "G1-process"]),
    ("G1c-realtime", &["G1-realtime"]),
    ("G1", &["G1-process"]),
    ("G1-process", &["G1-realtime"]),
    (
        "G-single-item",
        &["G-single", "G-single-item-process", "G-nonadjacent-item"],
    ),
    (
        "G-single-item-process",
        &[
            "G-single-process",
            "G-single-item-realtime",
            "G-nonadjacent-item-process",
        ],
    ),
    (
        "G-single-item-realtime",
        &["G-single-realtime", "G-nonadjacent-item-realtime"],
    ),
    ("G-single", &["G-nonadjacent", "GSIb", "G-single-process"]),
    ("G-single-process", &["G-nonadjacent-process", "G-single-realtime"]),
    ("G-single-realtime", &["G-nonadjacent-realtime"]),
    (
        "G-nonadjacent-item",
        &["G-nonadjacent", "G2-item", "G-nonadjacent-item-process"],
    ),
    (
        "G-nonadjacent-item-process",
        &[
            "G-nonadjacent-process",
            "G2-item-process",
            "G-nonadjacent-item-realtime",
        ],
    ),
    (
        "G-nonadjacent-item-realtime",
        &["G2-item-realtime", "G-nonadjacent-realtime"],
    ),
    ("G-nonadjacent", &["G2", "G-nonadjacent-process"]),
    ("G-nonadjacent-process", &["G2-process", "G-nonadjacent-realtime"]),
    ("G-nonadjacent-realtime", &["G2-realtime"]),
    ("G2", &["G2-process"]),
    ("G2-item", &["G2", "G2-item-process"]),
    ("G2-item-process", &["G2-process", "G2-item-realtime"]),
    ("G2-item-realtime", &["G2-realtime"]),
    ("G2-process", &["G2-realtime"]),
    ("GSIa", &["GSI"]),
    ("GSIb", &["GSI"]),
    ("incompatible-order", &["G1a"]),
    ("future-read", &["G1c"]),
    ("dirty-update", &["G1a"]),
    ("lost-update", &["write-skew", "G2-item"]),
    ("write-skew", &["G2"]),
    ("garbage-read", &["G1a"]),
    ("lost", &["G1a"]),
];

/// The anomalies each model forbids directly (Elle's `direct-proscribed-anomalies`, canonical names merged).
pub const PROSCRIBES: &[(M, &[&str])] = &[
    (M::CausalCerone, &["internal", "G1a"]),
    (M::CursorStability, &["G1", "G-cursor", "lost-update"]),
    (M::MonotonicView, &["G1", "G-monotonic"]),
    (M::MonotonicSnapshotRead, &["G1", "G-MSR"]),
    (M::ConsistentView, &["G1", "G-single"]),
    (M::ForwardConsistentView, &["G1", "G-SIb"]),
    (M::ParallelSnapshotIsolation, &["internal", "G1a"]),
    (
        M::Serializable,
        &["G1", "G2", "predicate-read-miss", "PL-3-cycle-exists", "internal"],
    ),
    (M::ReadCommitted, &["G1", "PL-2-cycle-exists"]),
    (
        M::ReadUncommitted,
        &["G0", "duplicate-elements", "cyclic-versions", "PL-1-cycle-exists"],
    ),
    (M::Prefix, &["internal", "G1a"]),
    (
        M::SnapshotIsolation,
        &["internal", "G1", "G-SI", "G-nonadjacent", "PL-SI-cycle-exists"],
    ),
    (M::ReadAtomic, &["internal", "G1a", "future-read"]),
    (
        M::RepeatableRead,
        &["G1", "G2-item", "PL-2.99-cycle-exists", "lost-update"],
    ),
    (M::UpdateAtomic, &["lost-update"]),
    (
        M::StrictSerializable,
        &["G1", "G1c-realtime", "G2-realtime", "PL-SS-cycle-exists"],
    ),
    (
        M::StrongSessionReadUncommitted,
        &["strong-session-PL-1-cycle-exists", "G0-process"],
    ),
    (
        M::StrongSessionReadCommitted,
        &["strong-session-PL-2-cycle-exists", "G1c-process"],
    ),
    (M::StrongReadUncommitted, &["strong-PL-1-cycle-exists", "G0-realtime"]),
    (M::StrongReadCommitted, &["strong-PL-2-cycle-exists", "G1c-realtime"]),
    (
        M::StrongSessionSnapshotIsolation,
        &[
            "internal",
            "G1-process",
            "G-nonadjacent-process",
            "strong-session-snapshot-isolation-cycle-exists",
        ],
    ),
    (
        M::StrongSnapshotIsolation,
        &[
            "internal",
            "G1-realtime",
            "G-nonadjacent-realtime",
            "strong-snapshot-isolation-cycle-exists",
        ],
    ),
    (
        M::StrongSessionSerializable,
        &["G1-process", "G2-process", "strong-session-serializable-cycle-exists"],
    ),
    (M::UpdateSerializable, &["G1", "G-update"]),
];

/// Models of single objects: in Elle's graph beside the transactional ones, but nothing a transactional history shows
/// rules them in or out, so they are never listed as held.
const SINGLE_OBJECT: [M; 8] = [
    M::Linearizable,
    M::Sequential,
    M::Causal,
    M::WritesFollowReads,
    M::Pram,
    M::MonotonicReads,
    M::MonotonicWrites,
    M::ReadYourWrites,
];

/// Breadth-first closure of `start` under `next`, `start` included.
fn closure<T: Copy + Ord>(start: impl IntoIterator<Item = T>, next: impl Fn(T) -> Vec<T>) -> BTreeSet<T> {
    let mut seen: BTreeSet<T> = BTreeSet::new();
    let mut queue: VecDeque<T> = start.into_iter().collect();
    while let Some(node) = queue.pop_front() {
        if seen.insert(node) {
            queue.extend(next(node));
        }
    }
    seen
}

fn implied_models(model: M) -> Vec<M> {
    MODELS
        .iter()
        .filter(|(m, _)| *m == model)
        .flat_map(|(_, weaker)| weaker.iter().copied())
        .collect()
}

fn implying_models(model: M) -> Vec<M> {
    MODELS
        .iter()
        .filter(|(_, weaker)| weaker.contains(&model))
        .map(|(m, _)| *m)
        .collect()
}

fn implied_anomalies(anomaly: &'static str) -> Vec<&'static str> {
    IMPLIES
        .iter()
        .filter(|(a, _)| *a == anomaly)
        .flat_map(|(_, implied)| implied.iter().copied())
        .collect()
}

fn implying_anomalies(anomaly: &'static str) -> Vec<&'static str> {
    IMPLIES
        .iter()
        .filter(|(_, implied)| implied.contains(&anomaly))
        .map(|(a, _)| *a)
        .collect()
}

fn proscribed(model: M) -> impl Iterator<Item = &'static str> {
    PROSCRIBES
        .iter()
        .filter(move |(m, _)| *m == model)
        .flat_map(|(_, anomalies)| anomalies.iter().copied())
}

/// Every anomaly name the tables know, in no particular order.
pub fn anomaly_names() -> BTreeSet<&'static str> {
    IMPLIES
        .iter()
        .flat_map(|(a, implied)| std::iter::once(*a).chain(implied.iter().copied()))
        .chain(PROSCRIBES.iter().flat_map(|(_, anomalies)| anomalies.iter().copied()))
        .chain(["empty-transaction-graph", "cycle-search-timeout"])
        .collect()
}

/// The known anomaly name `name` as the tables spell it, if it is one.
pub fn anomaly_name(name: &str) -> Option<&'static str> {
    anomaly_names().into_iter().find(|known| *known == name)
}

/// Every anomaly a history showing `anomalies` shows: themselves and everything they imply.
pub fn implied(anomalies: impl IntoIterator<Item = &'static str>) -> BTreeSet<&'static str> {
    closure(anomalies, implied_anomalies)
}

/// Every anomaly that would mean one of `anomalies` happened: themselves and every anomaly implying one of them.
pub fn implying(anomalies: impl IntoIterator<Item = &'static str>) -> BTreeSet<&'static str> {
    closure(anomalies, implying_anomalies)
}

/// The anomalies a history may not show if every one of `models` is to hold.
pub fn prohibited_by(models: &[M]) -> BTreeSet<&'static str> {
    let models = closure(models.iter().copied(), implied_models);
    implying(models.into_iter().flat_map(proscribed))
}

/// The models a history showing every one of `anomalies` cannot satisfy.
pub fn impossible(anomalies: impl IntoIterator<Item = &'static str>) -> BTreeSet<M> {
    let shown = closure(anomalies, implied_anomalies);
    let direct = PROSCRIBES
        .iter()
        .filter(|(_, forbidden)| forbidden.iter().any(|a| shown.contains(a)))
        .map(|(m, _)| *m);
    closure(direct, implying_models)
}

/// The members of `models` that imply no other member: Elle's `:not`, the weakest models a history rules out.
pub fn weakest(models: &BTreeSet<M>) -> BTreeSet<M> {
    models
        .iter()
        .copied()
        .filter(|&m| {
            let weaker = closure(implied_models(m), implied_models);
            !weaker.iter().any(|w| *w != m && models.contains(w))
        })
        .collect()
}

/// The members of `models` that no other member implies: the strongest of them.
pub fn strongest(models: &BTreeSet<M>) -> BTreeSet<M> {
    models
        .iter()
        .copied()
        .filter(|&m| {
            let stronger = closure(implying_models(m), implying_models);
            !stronger.iter().any(|s| *s != m && models.contains(s))
        })
        .collect()
}

/// The transactional models a history still satisfies when it shows `anomalies` (and the check could not decide
/// `undecided`, counted as shown): every model neither rules out, leaving out the single-object models and those
/// that forbid nothing (which no history could ever rule out). Strongest first, in [`ConsistencyModel::ALL`]'s order.
pub fn held(anomalies: &BTreeSet<&'static str>) -> Vec<M> {
    let ruled_out = impossible(anomalies.iter().copied());
    M::ALL
        .into_iter()
        .filter(|m| !ruled_out.contains(m) && !SINGLE_OBJECT.contains(m) && !prohibited_by(&[*m]).is_empty())
        .collect()
}

impl ConsistencyModel {
    /// Every model, the strongest transactional ones first: a history's first satisfied model is a strongest one.
    pub const ALL: [ConsistencyModel; 36] = [
        M::StrictSerializable,
        M::StrongSessionSerializable,
        M::Serializable,
        M::StrongSnapshotIsolation,
        M::StrongSessionSnapshotIsolation,
        M::SnapshotIsolation,
        M::RepeatableRead,
        M::UpdateSerializable,
        M::ForwardConsistentView,
        M::ConsistentView,
        M::CursorStability,
        M::MonotonicView,
        M::MonotonicSnapshotRead,
        M::ParallelSnapshotIsolation,
        M::Prefix,
        M::CausalCerone,
        M::UpdateAtomic,
        M::ReadAtomic,
        M::MonotonicAtomicView,
        M::StrongReadCommitted,
        M::StrongSessionReadCommitted,
        M::ReadCommitted,
        M::StrongReadUncommitted,
        M::StrongSessionReadUncommitted,
        M::ReadUncommitted,
        M::ViewSerializable,
        M::SessionSerializable,
        M::OneCopySerializable,
        M::Linearizable,
        M::Sequential,
        M::Causal,
        M::WritesFollowReads,
        M::Pram,
        M::MonotonicReads,
        M::MonotonicWrites,
        M::ReadYourWrites,
    ];

    /// The models a report shows one by one: those users claim most, strongest first.
    pub const PRINCIPAL: [ConsistencyModel; 9] = [
        M::StrictSerializable,
        M::StrongSessionSerializable,
        M::Serializable,
        M::StrongSnapshotIsolation,
        M::SnapshotIsolation,
        M::RepeatableRead,
        M::ReadAtomic,
        M::ReadCommitted,
        M::ReadUncommitted,
    ];

    /// The model's name as Elle prints it and plans spell it (`snapshot-isolation`).
    pub fn name(self) -> &'static str {
        match self {
            M::StrictSerializable => "strict-serializable",
            M::StrongSessionSerializable => "strong-session-serializable",
            M::Serializable => "serializable",
            M::StrongSnapshotIsolation => "strong-snapshot-isolation",
            M::StrongSessionSnapshotIsolation => "strong-session-snapshot-isolation",
            M::SnapshotIsolation => "snapshot-isolation",
            M::RepeatableRead => "repeatable-read",
            M::UpdateSerializable => "update-serializable",
            M::ForwardConsistentView => "forward-consistent-view",
            M::ConsistentView => "consistent-view",
            M::CursorStability => "cursor-stability",
            M::MonotonicView => "monotonic-view",
            M::MonotonicSnapshotRead => "monotonic-snapshot-read",
            M::ParallelSnapshotIsolation => "parallel-snapshot-isolation",
            M::Prefix => "prefix",
            M::CausalCerone => "causal-cerone",
            M::UpdateAtomic => "update-atomic",
            M::ReadAtomic => "read-atomic",
            M::MonotonicAtomicView => "monotonic-atomic-view",
            M::StrongReadCommitted => "strong-read-committed",
            M::StrongSessionReadCommitted => "strong-session-read-committed",
            M::ReadCommitted => "read-committed",
            M::StrongReadUncommitted => "strong-read-uncommitted",
            M::StrongSessionReadUncommitted => "strong-session-read-uncommitted",
            M::ReadUncommitted => "read-uncommitted",
            M::ViewSerializable => "view-serializable",
            M::SessionSerializable => "session-serializable",
            M::OneCopySerializable => "1SR",
            M::Linearizable => "linearizable",
            M::Sequential => "sequential",
            M::Causal => "causal",
            M::WritesFollowReads => "writes-follow-reads",
            M::Pram => "PRAM",
            M::MonotonicReads => "monotonic-reads",
            M::MonotonicWrites => "monotonic-writes",
            M::ReadYourWrites => "read-your-writes",
        }
    }

    /// The model named `name`: its name, Elle's canonical name (`PL-2`, `PL-SS`), or a synonym Elle accepts
    /// (`conflict-serializable`, `strong-serializable`, `strong-session-PL-2`).
    pub fn parse(name: &str) -> Option<ConsistencyModel> {
        let canonical = match name {
            "PL-SS" | "strong-serializable" => M::StrictSerializable,
            "PL-3" | "conflict-serializable" => M::Serializable,
            "PL-SI" => M::SnapshotIsolation,
            "PL-2.99" => M::RepeatableRead,
            "PL-3U" => M::UpdateSerializable,
            "PL-FCV" => M::ForwardConsistentView,
            "PL-2+" => M::ConsistentView,
            "PL-CS" => M::CursorStability,
            "PL-2L" => M::MonotonicView,
            "PL-MSR" => M::MonotonicSnapshotRead,
            "PL-2" => M::ReadCommitted,
            "PL-1" => M::ReadUncommitted,
            "strong-PL-2" => M::StrongReadCommitted,
            "strong-session-PL-2" => M::StrongSessionReadCommitted,
            "strong-PL-1" => M::StrongReadUncommitted,
            "strong-session-PL-1" => M::StrongSessionReadUncommitted,
            other => return M::ALL.into_iter().find(|m| m.name() == other),
        };
        Some(canonical)
    }
}

impl std::fmt::Display for ConsistencyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ConsistencyModel {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ConsistencyModel::parse(name).ok_or_else(|| {
            let known: Vec<&str> = M::ALL.iter().map(|m| m.name()).collect();
            format!("unknown consistency model {name:?}; known models: {}", known.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<T: Ord + Copy>(items: &[T]) -> BTreeSet<T> {
        items.iter().copied().collect()
    }

    fn not(anomalies: &[&'static str]) -> BTreeSet<M> {
        weakest(&impossible(anomalies.iter().copied()))
    }

    #[test]
    fn given_elle_test_anomalies_when_ruling_out_models_should_name_the_weakest_as_elle_does() {
        // The `:not` sets of Elle's list-append and rw-register tests.
        assert_eq!(not(&["G0"]), set(&[M::ReadUncommitted]));
        assert_eq!(not(&["G1a"]), set(&[M::ReadCommitted]));
        assert_eq!(not(&["G-single-item"]), set(&[M::ConsistentView, M::RepeatableRead]));
        assert_eq!(not(&["G2-item"]), set(&[M::RepeatableRead]));
        assert_eq!(
            not(&["G-nonadjacent-item"]),
            set(&[M::SnapshotIsolation, M::RepeatableRead])
        );
        assert_eq!(not(&["lost-update"]), set(&[M::UpdateAtomic, M::CursorStability]));
        assert_eq!(not(&["internal"]), set(&[M::ReadAtomic]));
        assert_eq!(not(&["G-single-item-realtime"]), set(&[M::StrongSnapshotIsolation]));
        assert_eq!(
            not(&["G-single-item-process"]),
            set(&[M::StrongSessionSnapshotIsolation])
        );
        assert_eq!(not(&["G1c-process"]), set(&[M::StrongSessionReadCommitted]));
        assert_eq!(
            not(&["G2-item", "lost-update"]),
            set(&[M::UpdateAtomic, M::CursorStability])
        );
        assert_eq!(not(&["G0", "G-single-item"]), set(&[M::ReadUncommitted]));
        assert_eq!(not(&["future-read"]), set(&[M::ReadCommitted]));
    }

    #[test]
    fn given_a_model_when_asking_what_it_prohibits_should_include_what_its_weaker_models_forbid_and_their_implicants() {
        let rc = prohibited_by(&[M::ReadCommitted]);
        for anomaly in [
            "G0",
            "G1a",
            "G1b",
            "G1c",
            "incompatible-order",
            "dirty-update",
            "future-read",
        ] {
            assert!(rc.contains(anomaly), "{anomaly}");
        }
        assert!(!rc.contains("G2-item") && !rc.contains("internal"));
        let g2 = implying(["G2"]);
        assert!(g2.contains("G-single-item") && g2.contains("lost-update") && !g2.contains("G0"));
        let strict = prohibited_by(&[M::StrictSerializable]);
        assert!(strict.contains("G-single-item-realtime") && strict.contains("G0-process"));
        assert!(prohibited_by(&[M::SessionSerializable]).is_empty());
    }

    #[test]
    fn given_anomalies_when_listing_models_held_should_give_the_strongest_first_and_skip_what_nothing_rules_out() {
        assert_eq!(held(&BTreeSet::new()).first(), Some(&M::StrictSerializable));
        let write_skew = held(&set(&["G2-item"]));
        assert_eq!(write_skew.first(), Some(&M::StrongSnapshotIsolation));
        assert!(!write_skew.contains(&M::RepeatableRead) && write_skew.contains(&M::SnapshotIsolation));
        for never in [M::Linearizable, M::SessionSerializable, M::ViewSerializable] {
            assert!(!held(&BTreeSet::new()).contains(&never), "{never}");
        }
        assert_eq!(
            strongest(&set(&[M::Serializable, M::StrictSerializable, M::SnapshotIsolation])),
            set(&[M::StrictSerializable])
        );
    }

    #[test]
    fn given_every_model_when_named_should_parse_back_and_round_trip_through_serde() {
        for model in M::ALL {
            assert_eq!(M::parse(model.name()), Some(model));
            let json = serde_json::to_string(&model).unwrap();
            assert_eq!(json, format!("\"{}\"", model.name()));
            assert_eq!(serde_json::from_str::<M>(&json).unwrap(), model);
        }
        assert_eq!(M::parse("PL-2"), Some(M::ReadCommitted));
        assert_eq!(M::parse("strong-serializable"), Some(M::StrictSerializable));
        assert!("bogus"
            .parse::<M>()
            .unwrap_err()
            .contains("known models: strict-serializable"));
    }
}
