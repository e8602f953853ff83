//! The anomaly classes the checker reports, what each means, and which models forbid it.
//!
//! Which model forbids which class is not decided here: it is Elle's hierarchy (`lattice.rs`), read through each
//! class's Elle name ([`AnomalyClass::elle_name`]). faultline's class names are Adya's; without predicates every
//! cycle is an item cycle, so faultline's `G-single` is Elle's `G-single-item` (and likewise `G-nonadjacent` and their
//! variants).
//!
//! The cycle classes are exclusive, so that a cycle has exactly one name: G0 has only ww edges; G1c ww and wr, at
//! least one wr; G-single exactly one rw; G-nonadjacent two or more rw, no two consecutive (around the cycle);
//! G2-item two or more rw, some two consecutive. A `-realtime` (`-process`) variant is a cycle of that class that
//! needs at least one real-time (process-order) edge to close.

use super::lattice::{self, ConsistencyModel};
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
    /// A read saw a value no transaction in the history wrote (a garbage read; faultline's own class: Elle has none,
    /// see [`AnomalyClass::elle_result`]). Read as an aborted read (it implies G1a). Named `phantom` before.
    #[serde(rename = "garbage-read", alias = "phantom")]
    GarbageRead,
    /// A read shows a committed transaction's later append to a key but not its earlier one.
    #[serde(rename = "lost")]
    Lost,
    /// rw-register: two committed transactions read the same version of a key and both wrote the key (whichever
    /// wrote second overwrote a version it never saw: a G-single in any version order).
    #[serde(rename = "lost-update")]
    LostUpdate,
    /// A transaction's read shows a value the same transaction writes only later (Elle's future read).
    #[serde(rename = "future-read")]
    FutureRead,
    /// List-append: a committed append was applied after a failed transaction's append to the same key (a dirty
    /// update: the committed state builds on an aborted one).
    #[serde(rename = "dirty-update")]
    DirtyUpdate,
    /// No dependency at all could be inferred between transactions: nothing was checked (Elle reports it and calls
    /// the history unknown).
    #[serde(rename = "empty-transaction-graph")]
    EmptyTransactionGraph,
    /// A cycle search ran out of its budget before it could decide a class (the verdict is unknown unless something
    /// forbidden was found).
    #[serde(rename = "cycle-search-timeout")]
    CycleSearchTimeout,
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
            GarbageRead => "garbage-read",
            Lost => "lost",
            LostUpdate => "lost-update",
            FutureRead => "future-read",
            DirtyUpdate => "dirty-update",
            EmptyTransactionGraph => "empty-transaction-graph",
            CycleSearchTimeout => "cycle-search-timeout",
        }
    }

    /// The class's name as Elle spells it, and as the model hierarchy knows it: an item cycle gets Elle's `-item`
    /// (`G-single-item-realtime`), the rest are spelled alike.
    pub fn elle_name(self) -> &'static str {
        match self {
            GSingle => "G-single-item",
            GNonadjacent => "G-nonadjacent-item",
            GSingleRealtime => "G-single-item-realtime",
            GNonadjacentRealtime => "G-nonadjacent-item-realtime",
            GSingleProcess => "G-single-item-process",
            GNonadjacentProcess => "G-nonadjacent-item-process",
            other => other.name(),
        }
    }

    /// What Elle reports for this class, for a reader who knows Elle: its own name, or for faultline's own classes
    /// what Elle gives instead.
    pub fn elle_result(self) -> String {
        match self {
            GarbageRead => {
                "none: faultline's own class; Elle reports G1a only when the value's writer failed, and its \
                            rw-register takes a value nobody wrote as the key's initial one"
                    .to_string()
            }
            Lost => {
                "none: faultline's own class (Elle finds such a read through the version order it implies)".to_string()
            }
            other => format!("Elle: {}", other.elle_name()),
        }
    }

    /// Every class, in report order.
    pub const ALL: [AnomalyClass; 27] = [
        G0,
        G1a,
        G1b,
        G1c,
        GSingle,
        GNonadjacent,
        G2Item,
        G0Realtime,
        G1cRealtime,
        GSingleRealtime,
        GNonadjacentRealtime,
        G2ItemRealtime,
        G0Process,
        G1cProcess,
        GSingleProcess,
        GNonadjacentProcess,
        G2ItemProcess,
        Internal,
        DuplicateElements,
        IncompatibleOrder,
        GarbageRead,
        Lost,
        LostUpdate,
        FutureRead,
        DirtyUpdate,
        EmptyTransactionGraph,
        CycleSearchTimeout,
    ];

    /// The class with this name, faultline's (`G-single`) or Elle's (`G-single-item`).
    pub fn parse(name: &str) -> Option<AnomalyClass> {
        AnomalyClass::ALL
            .into_iter()
            .find(|class| class.name() == name || class.elle_name() == name)
    }

    /// Classes that make a verdict unknown rather than invalid: they say something could not be checked.
    pub fn is_unknown(self) -> bool {
        matches!(self, EmptyTransactionGraph | CycleSearchTimeout)
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
            GarbageRead => (
                "garbage read",
                "a read returned a value that no transaction in the history wrote (faultline's class; read as an \
                 aborted read)",
            ),
            Lost => (
                "lost append",
                "a read shows a transaction's later append to a key but not its earlier one to the same key",
            ),
            LostUpdate => (
                "lost update",
                "two transactions read the same version of a key and then both wrote it: whichever wrote second did \
                 so without having seen the other's write",
            ),
            FutureRead => (
                "future read",
                "a transaction's read shows a value the transaction itself writes only afterwards",
            ),
            DirtyUpdate => (
                "dirty update",
                "a committed transaction's append landed after a failed transaction's append to the same key: \
                 committed state was built on an aborted write",
            ),
            EmptyTransactionGraph => (
                "nothing to check",
                "no dependency between transactions could be inferred, so no cycle could be looked for",
            ),
            CycleSearchTimeout => (
                "search budget exhausted",
                "a cycle search ran out of its budget before it could say whether a cycle of some class exists",
            ),
        }
    }

    /// The models that forbid this class, strongest first.
    pub fn forbidden_by(self) -> Vec<ConsistencyModel> {
        let ruled_out = lattice::impossible([self.elle_name()]);
        ConsistencyModel::ALL
            .into_iter()
            .filter(|model| ruled_out.contains(model))
            .collect()
    }

    /// Which models forbid the class, said briefly: the weakest ones and "every stronger model", or that none does.
    pub fn forbidden_by_phrase(self) -> String {
        let forbidding: std::collections::BTreeSet<ConsistencyModel> = self.forbidden_by().into_iter().collect();
        let weakest: Vec<&str> = ConsistencyModel::ALL
            .into_iter()
            .filter(|m| lattice::weakest(&forbidding).contains(m))
            .map(|m| m.name())
            .collect();
        let names = match weakest.as_slice() {
            [] => return "forbidden by no model (it says the check could not be done)".to_string(),
            [one] => one.to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
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

impl ConsistencyModel {
    /// The anomaly classes this model forbids: a history showing any of them does not satisfy it.
    pub fn forbids(self) -> Vec<AnomalyClass> {
        let prohibited = lattice::prohibited_by(&[self]);
        AnomalyClass::ALL
            .into_iter()
            .filter(|class| prohibited.contains(class.elle_name()))
            .collect()
    }
}
