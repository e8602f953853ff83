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
//!    (its writer wrote the key again later), garbage read (nobody wrote it: faultline's own class, not Elle's),
//!    duplicate elements, lost appends; and check
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
mod judge;
pub mod lattice;
mod models;
mod version_order;

#[cfg(test)]
mod tests;

pub use graph::EdgeKind;
pub use input::{MicroOp, ReadValue, Txn, TxnInputError, TxnModel, TxnOutcome};
pub use lattice::ConsistencyModel;
pub use models::AnomalyClass;

use crate::verdict::Verdict;
use anomalies::Findings;
use graph::{Graph, Why};
use index::Index;
use models::{Variant, CYCLE_CLASSES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Anomalies kept in the result per class; the rest are only counted.
pub const MAX_ANOMALIES_PER_CLASS: usize = 100;

/// What to check a history against, and how far to search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnCheckOptions {
    /// The datatype the transactions use.
    pub model: TxnModel,
    /// The models the system claims (Elle's `:consistency-models`); the verdict is invalid exactly when an anomaly
    /// one of them (or `anomalies`) forbids is found. May be empty when `anomalies` says what to look for.
    pub consistency_models: Vec<ConsistencyModel>,
    /// Anomalies the history must not show whatever the models allow (Elle's `:anomalies`), by Elle's names; each
    /// also forbids every anomaly implying it (`G2` forbids `G2-item`, `G-single-item`, `lost-update` ...).
    pub anomalies: Vec<String>,
    /// Infer real-time edges (needed to decide strict-serializable and the `strong-` models).
    pub realtime: bool,
    /// Infer process-order edges (needed to decide the `strong-session-` models).
    pub process: bool,
    /// rw-register: a transaction that read `a` and then wrote `b` to a key installed `b` after `a` (Elle's
    /// `wfr-keys`). Turn it off for a database that may let a transaction write under a version newer than it read.
    pub writes_follow_reads: bool,
    /// rw-register: a read of a value no transaction in the history wrote is the key's value from before the history
    /// (Elle's reading: its own tests call such histories valid), not a garbage read. Off by default: in a history
    /// that starts from empty registers, such a read is a value the database made up.
    #[serde(default)]
    pub unwritten_reads_initial: bool,
    /// Edges a cycle search may relax per class and strongly connected component before giving up on finding (a
    /// shorter) cycle of that class there.
    pub cycle_search_steps_max: u64,
}

impl TxnCheckOptions {
    /// Options for a datatype and claims, with the order edges Elle infers for what the claims forbid: real time when
    /// a `-realtime` anomaly is forbidden, else process order when a `-process` one is (each process's transactions
    /// are ordered in real time too, so real-time edges alone find those cycles as well, as `-realtime` ones).
    /// Refuses an anomaly name the model hierarchy does not know, listing those it knows.
    pub fn for_claims(
        model: TxnModel,
        consistency_models: Vec<ConsistencyModel>,
        anomalies: Vec<String>,
    ) -> Result<TxnCheckOptions, TxnInputError> {
        let claims = claims(&consistency_models, &anomalies)?;
        let prohibited = claims.prohibited();
        let realtime = prohibited.iter().any(|a| a.ends_with("-realtime"));
        let process = !realtime && prohibited.iter().any(|a| a.ends_with("-process"));
        Ok(TxnCheckOptions {
            model,
            consistency_models,
            anomalies,
            realtime,
            process,
            writes_follow_reads: true,
            unwritten_reads_initial: false,
            cycle_search_steps_max: 2_000_000,
        })
    }
}

impl Default for TxnCheckOptions {
    /// List-append claimed strict-serializable, real-time edges, and a search budget of two million steps.
    fn default() -> Self {
        TxnCheckOptions::for_claims(
            TxnModel::ListAppend,
            vec![ConsistencyModel::StrictSerializable],
            Vec::new(),
        )
        .expect("strict-serializable is a known model")
    }
}

/// The claims of options, each anomaly name checked against the hierarchy.
fn claims(models: &[ConsistencyModel], anomalies: &[String]) -> Result<judge::Claims, TxnInputError> {
    let anomalies = anomalies
        .iter()
        .map(|name| {
            lattice::anomaly_name(name).ok_or_else(|| TxnInputError::UnknownAnomaly {
                name: name.clone(),
                known: lattice::anomaly_names().into_iter().collect::<Vec<_>>().join(", "),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(judge::Claims {
        models: models.to_vec(),
        anomalies,
    })
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
    /// Invalid when an anomaly the claims forbid was found; unknown when none was found but something they depend on
    /// could not be checked (no dependency at all, a search out of budget, edges not inferred); valid otherwise.
    pub verdict: Verdict,
    /// The models the history was judged against (a results.json written before several could be claimed holds one
    /// name).
    #[serde(deserialize_with = "one_or_many")]
    pub claimed: Vec<ConsistencyModel>,
    /// The anomalies the history was held to not show, beside the models (Elle's `:anomalies`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies_claimed: Vec<String>,
    /// Every class the claims forbid.
    #[serde(default)]
    pub forbidden: Vec<AnomalyClass>,
    /// One sentence saying why the verdict is what it is.
    pub reason: String,
    /// The anomalies found, by class (at most [`MAX_ANOMALIES_PER_CLASS`] each).
    pub anomalies: BTreeMap<AnomalyClass, Vec<Anomaly>>,
    /// How many anomalies of each class were found, all of them.
    pub anomaly_counts: BTreeMap<AnomalyClass, u64>,
    /// Elle's `:anomaly-types`: the classes found that the claims forbid or that make the verdict unknown, in Elle's
    /// spelling (`G-single-item`), sorted.
    #[serde(default)]
    pub anomaly_types: Vec<String>,
    /// Elle's `:not`: the weakest models the classes found rule out.
    #[serde(default)]
    pub not: Vec<ConsistencyModel>,
    /// Elle's `:also-not`: the other models they rule out, stronger than those in `not`.
    #[serde(default)]
    pub also_not: Vec<ConsistencyModel>,
    /// Classes that could not be decided (search budget, or edges not inferred), each with why.
    pub undecided: BTreeMap<AnomalyClass, String>,
    /// Every transactional model the history is still consistent with (none of the classes it forbids was found or
    /// left undecided), strongest first.
    pub models_satisfied: Vec<ConsistencyModel>,
    /// The strongest model the history is consistent with (the first of `models_satisfied`).
    pub strongest_model: Option<ConsistencyModel>,
    /// Every model of `models_satisfied` that none of the others implies: the strongest ones held (snapshot isolation
    /// and repeatable read are incomparable, so both may be listed).
    #[serde(default)]
    pub strongest_models: Vec<ConsistencyModel>,
    /// Counts.
    pub stats: TxnCheckStats,
}

impl TxnCheckResult {
    /// Every class the claims forbid: `forbidden`, or for a results.json written before it was stored, what the
    /// claimed models forbid.
    pub fn forbidden_classes(&self) -> Vec<AnomalyClass> {
        if !self.forbidden.is_empty() {
            return self.forbidden.clone();
        }
        self.claims().forbidden()
    }

    /// The claims in a few words: `strict-serializable`, `serializable and no G1`.
    pub fn claimed_phrase(&self) -> String {
        self.claims().phrase()
    }

    /// The claims as the check judged them.
    fn claims(&self) -> judge::Claims {
        judge::Claims {
            models: self.claimed.clone(),
            anomalies: self
                .anomalies_claimed
                .iter()
                .filter_map(|a| lattice::anomaly_name(a))
                .collect(),
        }
    }
}

/// A list of models, or the single model an older results.json holds.
fn one_or_many<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ConsistencyModel>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(ConsistencyModel),
        Many(Vec<ConsistencyModel>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(model) => vec![model],
        OneOrMany::Many(models) => models,
    })
}

/// Checks a transaction history for isolation anomalies against the claimed model; refuses (with where and why) a
/// history whose values are not unique per key or whose micro-ops do not fit `options.model`.
pub fn check_txns(txns: &[Txn], options: &TxnCheckOptions) -> Result<TxnCheckResult, TxnInputError> {
    let started = Instant::now();
    let claims = claims(&options.consistency_models, &options.anomalies)?;
    let index = Index::build(txns, options.model)?;
    let mut findings = Findings::default();
    let unwritten_initial = options.unwritten_reads_initial && options.model == TxnModel::RwRegister;
    let in_graph = anomalies::observe_reads(&index, unwritten_initial, &mut findings);
    anomalies::check_internal(&index, &mut findings);
    let mut edges = Vec::new();
    match options.model {
        TxnModel::ListAppend => version_order::list_append_edges(&index, &in_graph, &mut findings, &mut edges),
        TxnModel::RwRegister => {
            version_order::rw_register_edges(&index, &in_graph, options.writes_follow_reads, &mut edges)
        }
    }
    version_order::lost_updates(&index, &mut findings);
    if options.realtime {
        graph::realtime_edges(&index, &in_graph, &mut edges);
    }
    if options.process {
        graph::process_edges(&index, &in_graph, &mut edges);
    }
    let graph = Graph::new(txns.len(), edges);
    let components = graph::strongly_connected(&graph);
    if graph.edges.is_empty() {
        findings.add(AnomalyClass::EmptyTransactionGraph, || Anomaly {
            class: AnomalyClass::EmptyTransactionGraph,
            txns: Vec::new(),
            key: None,
            cycle: Vec::new(),
            explanation: format!(
                "no dependency between the history's {} transactions could be inferred, so no cycle could be looked \
                 for: were no reads ever filled, or no key ever touched twice?",
                txns.len()
            ),
        });
    }
    let undecided = search_cycles(&index, &graph, &components, options, &mut findings);

    let mut stats = count(&index, &in_graph, &graph, &components);
    let mut result = judge::judge(&claims, findings, undecided);
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
    // Real time orders each process's transactions too: a cycle that a process edge would close, real-time edges
    // close as well (found as its `-realtime` variant), so process classes are decided without process edges then.
    let decided = |variant: Variant| inferred(variant) || (variant == Variant::Process && options.realtime);
    for (class, _, variant) in CYCLE_CLASSES {
        if !decided(variant) {
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
        // As Elle does, a class implied by one already found in this component is not searched: the models it
        // would rule out are ruled out already (classes are searched so that an implying one comes first).
        let mut shown: std::collections::BTreeSet<&'static str> = Default::default();
        for (class, base, variant) in CYCLE_CLASSES {
            if !inferred(variant) || shown.contains(class.elle_name()) {
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
                shown.extend(lattice::implied([class.elle_name()]));
            } else if found.exhausted {
                let why = format!(
                    "the search ran out of its {} steps in a component of {} transactions before finding a cycle",
                    options.cycle_search_steps_max,
                    component.len()
                );
                findings.add(AnomalyClass::CycleSearchTimeout, || Anomaly {
                    class: AnomalyClass::CycleSearchTimeout,
                    txns: Vec::new(),
                    key: None,
                    cycle: Vec::new(),
                    explanation: format!("{class}: {why}"),
                });
                undecided.entry(class).or_insert(why);
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
