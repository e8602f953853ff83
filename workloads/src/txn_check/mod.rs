//! The transactional isolation checker: which anomalies does a history of multi-key transactions show, and which
//! consistency models is it still consistent with?
//!
//! References: A. Adya, "Weak Consistency: A Generalized Theory and Optimistic Implementations for Distributed
//! Transactions" (MIT PhD thesis, 1999), for the dependency graph and the anomaly classes; K. Kingsbury and P. Alvaro,
//! "Elle: Inferring Isolation Anomalies from Experimental Observations" (VLDB 2020), whose method this follows;
//! A. Cerone and A. Gotsman, "Analysing Snapshot Isolation" (PODC 2016), for G-nonadjacent.
//!
//! **Why it works from the outside.** A database does not tell a client its version order. Elle's datatypes make
//! reads reveal it: in list-append, every value appended to a key is unique and a read returns the whole list, so
//! the list *is* the order of the versions it contains; in rw-register, values written to a key are unique, so a read
//! names the one write it saw. From the orders (`version_order.rs`) come Adya's direct dependencies between committed
//! transactions: ww (T2 installed the version after T1's), wr (T2 read T1's version), rw (T1 read a version that T2
//! overwrote). Optional order edges add real time (T1 completed before T2 was invoked) and process order (`graph.rs`).
//!
//! **The steps.**
//! 1. Index the history (`index.rs`): intern keys, name the writer of every `(key, value)`; refuse histories whose
//!    values are not unique per key or whose micro-ops do not fit the model.
//! 2. Look at every value every `ok` read returned (`anomalies.rs`): G1a (only a failed transaction wrote it), G1b
//!    (its writer wrote the key again later), phantom (nobody wrote it), duplicate elements, lost appends; and check
//!    each transaction's reads against its own earlier micro-ops (internal consistency).
//! 3. Infer the version orders and the ww, wr, rw edges; report lists whose reads disagree on the order, and
//!    registers two transactions read at one version and both overwrote (lost update).
//! 4. Build the graph, find its strongly connected components (iterative Tarjan), and in each one search the
//!    shortest cycle of every class (`cycles.rs`): G0, G1c, G-single, G-nonadjacent, G2-item, and their `-process` and
//!    `-realtime` variants (cycles that need such an edge to close).
//! 5. Judge: the claimed model's forbidden classes (`models.rs`) decide the verdict; every model none of whose
//!    forbidden classes was found is listed as still satisfied.
//!
//! **Indeterminate transactions (`info`).** Such a transaction may have committed at any time after its invocation,
//! or never. The rule, Elle's: an `info` transaction some `ok` read observed (any value it wrote appears in a
//! committed read) certainly committed, and joins the graph as committed; one nobody observed joins it not at all,
//! so it adds no edge. Its reads are never used (a client that timed out never saw them), and no real-time or
//! process edge leaves it (it may have committed after it timed out). Every edge that touches an `info` transaction
//! therefore holds in every way it could have ended, so a cycle through one is reported only when it holds however
//! that transaction ended: if it never committed nobody could have read its writes; if it did, the cycle's edges
//! are what its writes imply. An unobserved one that *would* close a cycle had it committed is never reported: it
//! may as well have aborted.
//!
//! **Bounds.** Everything but the cycle search is linear in the number of micro-ops and read values (plus sorting
//! the edges). A valid history has no cycle, so no component to search. Cycle searches are bounded by
//! [`TxnCheckOptions::cycle_search_steps_max`] per class and component; a class whose search ran out without a cycle
//! is *undecided*, which makes the verdict `unknown` when the claimed model forbids it and nothing forbidden was found.
//!
//! **Limits.** No predicates (Adya's G2 beyond G2-item, phantoms in the predicate sense); rw-register orders are only
//! as complete as its reads reveal them; real-time edges are a transitive reduction, so a `-realtime` cycle is the
//! shortest in that reduced graph (its class is exact, its length may exceed that of a cycle using a skipped
//! real-time pair).

mod anomalies;
mod cycles;
mod explain;
mod graph;
mod index;
mod input;
mod models;
mod version_order;

#[cfg(test)]
mod tests;

pub use graph::EdgeKind;
pub use input::{MicroOp, ReadValue, Txn, TxnInputError, TxnModel, TxnOutcome};
pub use models::{AnomalyClass, ConsistencyModel};

use crate::verdict::Verdict;
use anomalies::Findings;
use graph::{Graph, Why};
use index::Index;
use models::{Variant, CYCLE_CLASSES};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Anomalies kept in the result per class; the rest are only counted.
pub const MAX_ANOMALIES_PER_CLASS: usize = 100;

/// What to check a history against, and how far to search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnCheckOptions {
    /// The datatype the transactions use.
    pub model: TxnModel,
    /// The isolation level the system claims; the verdict is invalid exactly when an anomaly it forbids is found.
    pub claimed: ConsistencyModel,
    /// Infer real-time edges (needed to decide strict-serializable).
    pub realtime: bool,
    /// Infer process-order edges (needed to decide strong-session-serializable and strict-serializable).
    pub process: bool,
    /// rw-register: a transaction that read `a` and then wrote `b` to a key installed `b` after `a` (Elle's
    /// `wfr-keys`). Turn it off for a database that may let a transaction write under a version newer than it read.
    pub writes_follow_reads: bool,
    /// Edges a cycle search may relax per class and strongly connected component before giving up on finding (a
    /// shorter) cycle of that class there.
    pub cycle_search_steps_max: u64,
}

impl Default for TxnCheckOptions {
    /// List-append, the strictest claim, every kind of edge, and a search budget of two million steps.
    fn default() -> Self {
        TxnCheckOptions {
            model: TxnModel::ListAppend,
            claimed: ConsistencyModel::StrictSerializable,
            realtime: true,
            process: true,
            writes_follow_reads: true,
            cycle_search_steps_max: 2_000_000,
        }
    }
}

/// One edge of a reported cycle, with the sentence that justifies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CycleStep {
    /// The transaction that comes first (its index).
    pub from: u64,
    /// The transaction that comes after.
    pub to: u64,
    /// Why: ww, wr, rw, realtime or process.
    pub kind: EdgeKind,
    /// The key whose versions give the dependency (none for real-time and process edges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// One sentence, e.g. "T2 read k3 = [1 4], so it followed T1's append of 4 (wr)".
    pub sentence: String,
}

/// One anomaly: its class, the transactions involved, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anomaly {
    /// What kind of anomaly.
    pub class: AnomalyClass,
    /// The transactions involved (indices); for a cycle, in cycle order, each followed by the next (the last by the
    /// first).
    pub txns: Vec<u64>,
    /// The key involved, for anomalies about one key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// For a cycle: its edges in order, `cycle[i]` from `txns[i]` to `txns[i + 1]` (the last back to `txns[0]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<CycleStep>,
    /// One sentence summing it up.
    pub explanation: String,
}

/// Counts over the checked history and its graph.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnCheckStats {
    /// Transactions in the history.
    pub txns: u64,
    /// Transactions that committed (`ok`).
    pub ok: u64,
    /// Transactions that certainly aborted (`fail`).
    pub failed: u64,
    /// Transactions with unknown outcome (`info`).
    pub info: u64,
    /// `info` transactions whose writes a committed read observed, so taken as committed.
    pub info_committed: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Edges of each kind in the dependency graph.
    pub edges: BTreeMap<EdgeKind, u64>,
    /// Strongly connected components with two or more transactions (each holds at least one cycle).
    pub cyclic_components: u64,
    /// Transactions in the largest such component.
    pub largest_component: u64,
    /// Wall-clock time of the check.
    pub check_ms: u64,
}

/// The checker's answer for one history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnCheckResult {
    /// Invalid when an anomaly the claimed model forbids was found; unknown when none was found but a search the
    /// claimed model depends on ran out of budget (or its edges were not inferred); valid otherwise.
    pub verdict: Verdict,
    /// The model the history was judged against.
    pub claimed: ConsistencyModel,
    /// One sentence saying why the verdict is what it is.
    pub reason: String,
    /// The anomalies found, by class (at most [`MAX_ANOMALIES_PER_CLASS`] each).
    pub anomalies: BTreeMap<AnomalyClass, Vec<Anomaly>>,
    /// How many anomalies of each class were found, all of them.
    pub anomaly_counts: BTreeMap<AnomalyClass, u64>,
    /// Classes that could not be decided (search budget, or edges not inferred), each with why.
    pub undecided: BTreeMap<AnomalyClass, String>,
    /// Every model the history is still consistent with, strongest first.
    pub models_satisfied: Vec<ConsistencyModel>,
    /// The strongest model the history is consistent with (the first of `models_satisfied`).
    pub strongest_model: Option<ConsistencyModel>,
    /// Counts.
    pub stats: TxnCheckStats,
}

/// Checks a transaction history for isolation anomalies against the claimed model; refuses (with where and why) a
/// history whose values are not unique per key or whose micro-ops do not fit `options.model`.
pub fn check_txns(txns: &[Txn], options: &TxnCheckOptions) -> Result<TxnCheckResult, TxnInputError> {
    let started = Instant::now();
    let index = Index::build(txns, options.model)?;
    let mut findings = Findings::default();
    let in_graph = anomalies::observe_reads(&index, &mut findings);
    anomalies::check_internal(&index, &mut findings);
    let mut edges = Vec::new();
    match options.model {
        TxnModel::ListAppend => version_order::list_append_edges(&index, &in_graph, &mut findings, &mut edges),
        TxnModel::RwRegister => version_order::rw_register_edges(
            &index,
            &in_graph,
            options.writes_follow_reads,
            &mut findings,
            &mut edges,
        ),
    }
    if options.realtime {
        graph::realtime_edges(&index, &in_graph, &mut edges);
    }
    if options.process {
        graph::process_edges(&index, &in_graph, &mut edges);
    }
    let graph = Graph::new(txns.len(), edges);
    let components = graph::strongly_connected(&graph);
    let undecided = search_cycles(&index, &graph, &components, options, &mut findings);

    let mut stats = count(&index, &in_graph, &graph, &components);
    let mut result = judge(options.claimed, findings, undecided);
    stats.check_ms = started.elapsed().as_millis() as u64;
    result.stats = stats;
    Ok(result)
}

/// The counts of a checked history.
fn count(index: &Index<'_>, in_graph: &[bool], graph: &Graph, components: &[Vec<u32>]) -> TxnCheckStats {
    let mut stats = TxnCheckStats {
        txns: index.txns.len() as u64,
        keys: index.key_names.len() as u64,
        cyclic_components: components.len() as u64,
        largest_component: components.iter().map(Vec::len).max().unwrap_or(0) as u64,
        ..TxnCheckStats::default()
    };
    for (t, txn) in index.txns.iter().enumerate() {
        match txn.outcome {
            TxnOutcome::Ok => stats.ok += 1,
            TxnOutcome::Fail => stats.failed += 1,
            TxnOutcome::Info => {
                stats.info += 1;
                stats.info_committed += u64::from(in_graph[t]);
            }
        }
    }
    for kind in [
        EdgeKind::Ww,
        EdgeKind::Wr,
        EdgeKind::Rw,
        EdgeKind::Realtime,
        EdgeKind::Process,
    ] {
        stats.edges.insert(kind, graph.count(kind));
    }
    stats
}

/// Searches every cyclic component for the shortest cycle of every class; returns the classes left undecided.
fn search_cycles(
    index: &Index<'_>,
    graph: &Graph,
    components: &[Vec<u32>],
    options: &TxnCheckOptions,
    findings: &mut Findings,
) -> BTreeMap<AnomalyClass, String> {
    let mut undecided = BTreeMap::new();
    let inferred = |variant: Variant| match variant {
        Variant::Plain => true,
        Variant::Realtime => options.realtime,
        Variant::Process => options.process,
    };
    for (class, _, variant) in CYCLE_CLASSES {
        if !inferred(variant) {
            let edges = if variant == Variant::Realtime {
                "real-time"
            } else {
                "process"
            };
            undecided.insert(
                class,
                format!("{edges} edges were not inferred (see the check's options)"),
            );
        }
    }
    let mut member = vec![false; index.txns.len()];
    for component in components {
        component.iter().for_each(|&v| member[v as usize] = true);
        for (class, base, variant) in CYCLE_CLASSES {
            if !inferred(variant) {
                continue;
            }
            let found = cycles::shortest_cycle(
                graph,
                component,
                &mut member,
                (base, variant),
                options.cycle_search_steps_max,
            );
            if !found.edges.is_empty() {
                findings.add(class, || {
                    cycle_anomaly(index, graph, class, &found.edges, found.exhausted)
                });
            } else if found.exhausted {
                undecided.entry(class).or_insert_with(|| {
                    format!(
                        "the search ran out of its {} steps in a component of {} transactions before finding a cycle",
                        options.cycle_search_steps_max,
                        component.len()
                    )
                });
            }
        }
        component.iter().for_each(|&v| member[v as usize] = false);
    }
    undecided
}

/// The anomaly a found cycle is: its transactions in order and one sentence per edge.
fn cycle_anomaly(index: &Index<'_>, graph: &Graph, class: AnomalyClass, edge_ids: &[u32], exhausted: bool) -> Anomaly {
    let cycle: Vec<CycleStep> = edge_ids
        .iter()
        .map(|&id| {
            let edge = &graph.edges[id as usize];
            let key = match edge.why {
                Why::Ww { key, .. } => Some(key),
                Why::Wr { op, .. } | Why::Rw { op, .. } => Some(index.op_key[op as usize]),
                Why::Realtime | Why::Process => None,
            };
            CycleStep {
                from: index.txns[edge.from as usize].index,
                to: index.txns[edge.to as usize].index,
                kind: edge.kind(),
                key: key.map(|k| index.key(k).to_string()),
                sentence: explain::edge_sentence(index, edge),
            }
        })
        .collect();
    let mut path: String = cycle.iter().map(|s| format!("T{} -{}-> ", s.from, s.kind)).collect();
    path.push_str(&format!("T{}", cycle[0].from));
    let caveat = if exhausted {
        "; the search budget ran out, so a shorter one may exist"
    } else {
        ""
    };
    Anomaly {
        class,
        txns: cycle.iter().map(|s| s.from).collect(),
        key: None,
        explanation: format!("{class}: a cycle of {} transactions, {path}{caveat}", cycle.len()),
        cycle,
    }
}

/// The verdict for the claimed model, and every model the findings leave standing.
fn judge(claimed: ConsistencyModel, findings: Findings, undecided: BTreeMap<AnomalyClass, String>) -> TxnCheckResult {
    let found: BTreeSet<AnomalyClass> = findings.counts.keys().copied().collect();
    let holds = |model: ConsistencyModel| {
        model
            .forbids()
            .iter()
            .all(|class| !found.contains(class) && !undecided.contains_key(class))
    };
    let models_satisfied: Vec<ConsistencyModel> = ConsistencyModel::ALL.into_iter().filter(|&m| holds(m)).collect();
    let forbidden = claimed.forbids();
    let shown: Vec<String> = forbidden
        .iter()
        .filter_map(|class| findings.counts.get(class).map(|n| format!("{class} ({n})")))
        .collect();
    let open: Vec<&str> = forbidden
        .iter()
        .filter(|class| undecided.contains_key(class))
        .map(|class| class.name())
        .collect();
    let still = match models_satisfied.first() {
        Some(model) => format!("the strongest model it is still consistent with is {model}"),
        None => "it is consistent with none of the models".to_string(),
    };
    let (verdict, reason) = if !shown.is_empty() {
        let reason = format!(
            "the history shows {}, which {claimed} forbids; {still}",
            shown.join(", ")
        );
        (Verdict::Invalid, reason)
    } else if !open.is_empty() {
        let reason = format!(
            "no anomaly {claimed} forbids was found, but {} could not be decided; {still}",
            open.join(", ")
        );
        (Verdict::Unknown, reason)
    } else {
        (
            Verdict::Valid,
            format!("no anomaly {claimed} forbids was found; {still}"),
        )
    };
    TxnCheckResult {
        verdict,
        claimed,
        reason,
        anomalies: findings.kept,
        anomaly_counts: findings.counts,
        undecided,
        strongest_model: models_satisfied.first().copied(),
        models_satisfied,
        stats: TxnCheckStats::default(),
    }
}
