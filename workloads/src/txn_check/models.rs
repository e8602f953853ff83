//! Anomaly classes and consistency models, and the table saying which model forbids which class.
//!
//! The table is data ([`ConsistencyModel::forbids`]) that both the verdict and the tests read. It follows Adya's
//! thesis (PL-1 .. PL-3, PL-SI) as Elle applies it to histories without predicates:
//!
//! | model | forbids |
//! |---|---|
//! | read-uncommitted (PL-1) | G0 |
//! | read-committed (PL-2) | G0, G1a, G1b, G1c |
//! | repeatable-read (PL-2.99) | read-committed's, G-single, G-nonadjacent, G2-item, lost-update |
//! | snapshot-isolation (PL-SI) | read-committed's, G-single, G-nonadjacent, lost-update (G2-item is allowed) |
//! | serializable (PL-3) | read-committed's, G-single, G-nonadjacent, G2-item, lost-update |
//! | strong-session-serializable | serializable's and their `-process` variants |
//! | strict-serializable | serializable's, their `-process` and their `-realtime` variants |
//!
//! Every model also forbids the anomalies no database may show: internal inconsistency, duplicate elements,
//! incompatible orders, phantom and lost values. Snapshot isolation forbids G-nonadjacent as well as G-single: every
//! cycle an SI history allows has two adjacent rw edges (Cerone and Gotsman, "Analysing Snapshot Isolation", PODC
//! 2016). Without predicate reads, repeatable-read and serializable forbid the same item anomalies. Lost-update
//! (rw-register only, as in Elle) is a G-single whatever the unknown order of the two writes, so the models that
//! forbid G-single forbid it.
//!
//! The cycle classes are exclusive, so that a cycle has exactly one name: G0 has only ww edges; G1c ww and wr, at
//! least one wr; G-single exactly one rw; G-nonadjacent two or more rw, no two consecutive (around the cycle);
//! G2-item two or more rw, some two consecutive. A `-realtime` (`-process`) variant is a cycle of that class that
//! needs at least one real-time (process-order) edge to close.

use serde::{Deserialize, Serialize};

/// A kind of anomaly the checker reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AnomalyClass {
    /// Write cycle: a cycle of ww edges.
    #[serde(rename = "G0")]
    G0,
    /// Aborted read: a committed transaction read a value that only a failed transaction wrote.
    #[serde(rename = "G1a")]
    G1a,
    /// Intermediate read: a committed transaction read a value its writer overwrote (or appended after) later in the
    /// same transaction.
    #[serde(rename = "G1b")]
    G1b,
    /// Circular information flow: a cycle of ww and wr edges with at least one wr.
    #[serde(rename = "G1c")]
    G1c,
    /// A cycle with exactly one rw edge (read skew, lost update).
    #[serde(rename = "G-single")]
    GSingle,
    /// A cycle with two or more rw edges, no two consecutive.
    #[serde(rename = "G-nonadjacent")]
    GNonadjacent,
    /// A cycle with two or more rw edges, some two consecutive (write skew).
    #[serde(rename = "G2-item")]
    G2Item,
    /// G0 that needs a real-time edge.
    #[serde(rename = "G0-realtime")]
    G0Realtime,
    /// G1c that needs a real-time edge.
    #[serde(rename = "G1c-realtime")]
    G1cRealtime,
    /// G-single that needs a real-time edge (a stale read, typically).
    #[serde(rename = "G-single-realtime")]
    GSingleRealtime,
    /// G-nonadjacent that needs a real-time edge.
    #[serde(rename = "G-nonadjacent-realtime")]
    GNonadjacentRealtime,
    /// G2-item that needs a real-time edge.
    #[serde(rename = "G2-item-realtime")]
    G2ItemRealtime,
    /// G0 that needs a process-order edge.
    #[serde(rename = "G0-process")]
    G0Process,
    /// G1c that needs a process-order edge.
    #[serde(rename = "G1c-process")]
    G1cProcess,
    /// G-single that needs a process-order edge.
    #[serde(rename = "G-single-process")]
    GSingleProcess,
    /// G-nonadjacent that needs a process-order edge.
    #[serde(rename = "G-nonadjacent-process")]
    GNonadjacentProcess,
    /// G2-item that needs a process-order edge.
    #[serde(rename = "G2-item-process")]
    G2ItemProcess,
    /// A transaction's read does not reflect its own earlier reads and writes of the key.
    #[serde(rename = "internal")]
    Internal,
    /// One value appears twice in one list read.
    #[serde(rename = "duplicate-elements")]
    DuplicateElements,
    /// Two reads of one list disagree on its order (neither is a prefix of the other).
    #[serde(rename = "incompatible-order")]
    IncompatibleOrder,
    /// A read saw a value no transaction wrote.
    #[serde(rename = "phantom")]
    Phantom,
    /// A read shows a committed transaction's later append to a key but not its earlier one.
    #[serde(rename = "lost")]
    Lost,
    /// rw-register: two committed transactions read the same version of a key and both wrote the key (whichever
    /// wrote second overwrote a version it never saw: a G-single in any version order).
    #[serde(rename = "lost-update")]
    LostUpdate,
}

/// The shape of a cycle class, without its real-time or process variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CycleBase {
    G0,
    G1c,
    GSingle,
    GNonadjacent,
    G2Item,
}

/// Which order edges a cycle class variant needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// Dependency edges only.
    Plain,
    /// Needs at least one real-time edge.
    Realtime,
    /// Needs at least one process-order edge.
    Process,
}

use AnomalyClass::*;

/// Every cycle class with its shape, in the order the searches run (and reports list them).
pub(crate) const CYCLE_CLASSES: [(AnomalyClass, CycleBase, Variant); 15] = [
    (G0, CycleBase::G0, Variant::Plain),
    (G1c, CycleBase::G1c, Variant::Plain),
    (GSingle, CycleBase::GSingle, Variant::Plain),
    (GNonadjacent, CycleBase::GNonadjacent, Variant::Plain),
    (G2Item, CycleBase::G2Item, Variant::Plain),
    (G0Process, CycleBase::G0, Variant::Process),
    (G1cProcess, CycleBase::G1c, Variant::Process),
    (GSingleProcess, CycleBase::GSingle, Variant::Process),
    (GNonadjacentProcess, CycleBase::GNonadjacent, Variant::Process),
    (G2ItemProcess, CycleBase::G2Item, Variant::Process),
    (G0Realtime, CycleBase::G0, Variant::Realtime),
    (G1cRealtime, CycleBase::G1c, Variant::Realtime),
    (GSingleRealtime, CycleBase::GSingle, Variant::Realtime),
    (GNonadjacentRealtime, CycleBase::GNonadjacent, Variant::Realtime),
    (G2ItemRealtime, CycleBase::G2Item, Variant::Realtime),
];

/// Anomalies every model forbids: no database may show them, whatever it promises.
const ALWAYS: [AnomalyClass; 5] = [Internal, DuplicateElements, IncompatibleOrder, Phantom, Lost];
const READ_UNCOMMITTED: [AnomalyClass; 1] = [G0];
const READ_COMMITTED: [AnomalyClass; 4] = [G0, G1a, G1b, G1c];
const SNAPSHOT_ISOLATION: [AnomalyClass; 3] = [GSingle, GNonadjacent, LostUpdate];
const SERIALIZABLE: [AnomalyClass; 4] = [GSingle, GNonadjacent, G2Item, LostUpdate];
const PROCESS: [AnomalyClass; 5] = [
    G0Process,
    G1cProcess,
    GSingleProcess,
    GNonadjacentProcess,
    G2ItemProcess,
];
const REALTIME: [AnomalyClass; 5] = [
    G0Realtime,
    G1cRealtime,
    GSingleRealtime,
    GNonadjacentRealtime,
    G2ItemRealtime,
];

impl AnomalyClass {
    /// The class's name as reports and `results.json` spell it (`G-single-realtime`, `incompatible-order`).
    pub fn name(self) -> &'static str {
        match self {
            G0 => "G0",
            G1a => "G1a",
            G1b => "G1b",
            G1c => "G1c",
            GSingle => "G-single",
            GNonadjacent => "G-nonadjacent",
            G2Item => "G2-item",
            G0Realtime => "G0-realtime",
            G1cRealtime => "G1c-realtime",
            GSingleRealtime => "G-single-realtime",
            GNonadjacentRealtime => "G-nonadjacent-realtime",
            G2ItemRealtime => "G2-item-realtime",
            G0Process => "G0-process",
            G1cProcess => "G1c-process",
            GSingleProcess => "G-single-process",
            GNonadjacentProcess => "G-nonadjacent-process",
            G2ItemProcess => "G2-item-process",
            Internal => "internal",
            DuplicateElements => "duplicate-elements",
            IncompatibleOrder => "incompatible-order",
            Phantom => "phantom",
            Lost => "lost",
            LostUpdate => "lost-update",
        }
    }

    /// Whether the class is a dependency cycle (and so carries one).
    pub fn is_cycle(self) -> bool {
        CYCLE_CLASSES.iter().any(|(class, _, _)| *class == self)
    }

    /// The class's everyday name and what it means, for a person reading a report: (`write skew`, `each
    /// transaction's read missed the other's write ...`). The `-realtime` and `-process` variants say what order
    /// closes their cycle.
    pub fn meaning(self) -> (&'static str, &'static str) {
        match self {
            G0 => (
                "write cycle",
                "the transactions overwrote each other's writes in a circle (dirty write)",
            ),
            G1a => (
                "aborted read",
                "a committed transaction read a value that only a failed transaction wrote",
            ),
            G1b => (
                "intermediate read",
                "a committed transaction read a value that its writer overwrote later in the same transaction",
            ),
            G1c => (
                "circular information flow",
                "each transaction read or overwrote what the one before it wrote, around a circle",
            ),
            GSingle => (
                "read skew",
                "one transaction's read missed a write that, by the other dependencies, came before it (one rw edge)",
            ),
            GNonadjacent => (
                "non-adjacent anti-dependencies",
                "reads missed writes at two or more places around the circle, never two in a row",
            ),
            G2Item => (
                "write skew",
                "each transaction's read missed the other's write (two rw edges in a row around the circle)",
            ),
            G0Realtime | G1cRealtime | GSingleRealtime | GNonadjacentRealtime | G2ItemRealtime => (
                "stale order in real time",
                "a cycle that closes only because one transaction completed before another began, so the later one \
                 acted as if the earlier had not happened (a stale read, typically)",
            ),
            G0Process | G1cProcess | GSingleProcess | GNonadjacentProcess | G2ItemProcess => (
                "out of session order",
                "a cycle that closes only because one client ran one transaction after another, so the later one \
                 acted as if the client's own earlier transaction had not happened",
            ),
            Internal => (
                "internal inconsistency",
                "a transaction's read did not reflect its own earlier reads and writes of the key",
            ),
            DuplicateElements => (
                "duplicate elements",
                "one list read holds the same appended value twice",
            ),
            IncompatibleOrder => (
                "incompatible order",
                "two reads of one list disagree on the order of its elements",
            ),
            Phantom => (
                "phantom value",
                "a read returned a value that no transaction ever wrote",
            ),
            Lost => (
                "lost append",
                "a read shows a transaction's later append to a key but not its earlier one to the same key",
            ),
            LostUpdate => (
                "lost update",
                "two transactions read the same version of a key and both wrote it: one overwrote a version it never \
                 saw",
            ),
        }
    }

    /// The models that forbid this class, strongest first.
    pub fn forbidden_by(self) -> Vec<ConsistencyModel> {
        ConsistencyModel::ALL
            .into_iter()
            .filter(|model| model.forbids().contains(&self))
            .collect()
    }

    /// Which models forbid the class, said briefly: the weakest ones (those forbidding no more than any other that
    /// forbids it) and "and the models above", or that every model forbids it.
    pub fn forbidden_by_phrase(self) -> String {
        let forbidding = self.forbidden_by();
        if forbidding.len() == ConsistencyModel::ALL.len() {
            return "forbidden by every model".to_string();
        }
        let sets: Vec<(ConsistencyModel, Vec<AnomalyClass>)> = forbidding.iter().map(|&m| (m, m.forbids())).collect();
        let weaker = |a: &[AnomalyClass], b: &[AnomalyClass]| a.len() < b.len() && a.iter().all(|c| b.contains(c));
        let weakest: Vec<&str> = sets
            .iter()
            .filter(|(_, mine)| !sets.iter().any(|(_, other)| weaker(other, mine)))
            .map(|(m, _)| m.name())
            .collect();
        let names = match weakest.as_slice() {
            [one] => one.to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
            [] => return "forbidden by no model".to_string(),
        };
        if weakest.len() == forbidding.len() {
            format!("forbidden by {names}")
        } else {
            format!("forbidden by {names} and every stronger model")
        }
    }
}

impl std::fmt::Display for AnomalyClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An isolation level a system may claim, from Adya's and Elle's hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsistencyModel {
    /// Serializable, and the serial order agrees with real time.
    StrictSerializable,
    /// Serializable, and the serial order agrees with each process's order.
    StrongSessionSerializable,
    /// Equivalent to some serial execution (Adya PL-3, without predicates).
    Serializable,
    /// Reads from a snapshot, first committer wins (Adya PL-SI).
    SnapshotIsolation,
    /// Adya PL-2.99: no item anti-dependency cycles.
    RepeatableRead,
    /// Adya PL-2: no dirty reads or writes, no circular information flow.
    ReadCommitted,
    /// Adya PL-1: no dirty writes (write cycles).
    ReadUncommitted,
}

impl ConsistencyModel {
    /// Every model, strongest first: the first one a history satisfies is its strongest (snapshot isolation and
    /// repeatable-read are incomparable, but a history satisfying both satisfies serializable, listed above them).
    pub const ALL: [ConsistencyModel; 7] = [
        ConsistencyModel::StrictSerializable,
        ConsistencyModel::StrongSessionSerializable,
        ConsistencyModel::Serializable,
        ConsistencyModel::SnapshotIsolation,
        ConsistencyModel::RepeatableRead,
        ConsistencyModel::ReadCommitted,
        ConsistencyModel::ReadUncommitted,
    ];

    /// The anomaly classes this model forbids: a history showing any of them does not satisfy it.
    pub fn forbids(self) -> Vec<AnomalyClass> {
        let parts: &[&[AnomalyClass]] = match self {
            ConsistencyModel::ReadUncommitted => &[&READ_UNCOMMITTED],
            ConsistencyModel::ReadCommitted => &[&READ_COMMITTED],
            ConsistencyModel::RepeatableRead | ConsistencyModel::Serializable => &[&READ_COMMITTED, &SERIALIZABLE],
            ConsistencyModel::SnapshotIsolation => &[&READ_COMMITTED, &SNAPSHOT_ISOLATION],
            ConsistencyModel::StrongSessionSerializable => &[&READ_COMMITTED, &SERIALIZABLE, &PROCESS],
            ConsistencyModel::StrictSerializable => &[&READ_COMMITTED, &SERIALIZABLE, &PROCESS, &REALTIME],
        };
        let mut classes: Vec<AnomalyClass> = ALWAYS.to_vec();
        for part in parts {
            classes.extend_from_slice(part);
        }
        classes.sort();
        classes
    }

    /// The model's name as plans spell it (`snapshot-isolation`).
    pub fn name(self) -> &'static str {
        match self {
            ConsistencyModel::StrictSerializable => "strict-serializable",
            ConsistencyModel::StrongSessionSerializable => "strong-session-serializable",
            ConsistencyModel::Serializable => "serializable",
            ConsistencyModel::SnapshotIsolation => "snapshot-isolation",
            ConsistencyModel::RepeatableRead => "repeatable-read",
            ConsistencyModel::ReadCommitted => "read-committed",
            ConsistencyModel::ReadUncommitted => "read-uncommitted",
        }
    }
}

impl std::fmt::Display for ConsistencyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
