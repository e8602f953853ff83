//! Version orders per key, and the ww, wr and rw edges they imply (Adya's direct dependencies).
//!
//! **List-append.** A read returns the whole list, so it reveals the order of every version up to its own. The
//! longest `ok` read of a key is its version order; every other `ok` read must be a prefix of it, or the two reads
//! disagree on the order (`incompatible-order`). Then, as in Elle:
//! - ww: consecutive elements of the longest read, appended by two different committed transactions;
//! - wr: a read's last element's writer precedes the reader (the reader saw that version);
//! - rw: a read of a prefix of length `j` precedes the writer of element `j` (the next version, which it missed).
//!
//! **rw-register.** A read returns one value, so the version order is only known where something reveals it:
//! - the initial `nil` precedes every write;
//! - with [`super::TxnCheckOptions::writes_follow_reads`], a transaction that read `a` and then wrote `b` to the same
//!   key installed `b` after `a` (Elle's `wfr-keys`: true of every database that runs a transaction on one snapshot).
//!
//! The edges then are: ww from `a`'s writer to `b`'s for every known `a < b`; wr from a value's writer to its reader;
//! rw from a reader of `a` to the writer of every `b` known to follow `a` (for a `nil` read, of every write with no
//! known predecessor). An order known only transitively is still class-preserving: the true dependency graph holds a
//! path of ww edges where the inferred one has a single edge.
//!
//! Only *external* reads give wr and rw edges: a transaction's first read of a key, before it wrote the key. Later
//! reads see its own writes and are checked for internal consistency instead. Only final writes are versions of an
//! rw-register; an intermediate one that someone read is G1b.

use super::anomalies::{read_values, Findings};
use super::explain::show_list;
use super::graph::{Edge, Why};
use super::index::Index;
use super::input::{MicroOp, TxnOutcome};
use super::models::AnomalyClass;
use super::{Anomaly, TxnModel};
use crate::models::FxBuild;
use std::collections::{HashMap, HashSet};

/// One `ok` read: its transaction, flat micro-op id, and whether it is the transaction's external read of the key.
#[derive(Clone, Copy)]
struct KeyRead {
    txn: u32,
    op: u32,
    external: bool,
}

/// Every `ok` read, grouped by key id.
fn reads_by_key(index: &Index<'_>) -> Vec<Vec<KeyRead>> {
    let mut by_key: Vec<Vec<KeyRead>> = vec![Vec::new(); index.key_names.len()];
    for (t, txn) in index.txns.iter().enumerate() {
        if txn.outcome != TxnOutcome::Ok {
            continue;
        }
        let t = t as u32;
        for group in index.key_groups(t) {
            for (i, &op) in group.iter().enumerate() {
                if matches!(index.op(t, op), MicroOp::Read { .. }) {
                    by_key[index.op_key[op as usize] as usize].push(KeyRead {
                        txn: t,
                        op,
                        external: i == 0,
                    });
                }
            }
        }
    }
    by_key
}

/// The values an `ok` read returned.
fn values<'a>(index: &Index<'a>, read: &KeyRead) -> &'a [i64] {
    match index.op(read.txn, read.op) {
        MicroOp::Read { value, .. } => read_values(value),
        _ => &[],
    }
}

/// One key's version order as the reads reveal it.
struct KeyOrder<'a> {
    key: u32,
    /// The longest `ok` read of the key, as it was read: every other read must be a prefix of it.
    order: &'a [i64],
    /// The version order: `order`'s values at their first occurrence (as Elle reads a list that holds a value twice;
    /// the duplicate itself is reported, and no model allows it).
    versions: std::borrow::Cow<'a, [i64]>,
    /// Committed appends to the key that no read shows, with their writers, by value: each was installed after every
    /// version of `order`.
    unobserved: Vec<(u32, i64)>,
}

/// List-append: reports incompatible orders and dirty updates, and pushes the ww, wr and rw edges between committed
/// transactions.
pub(crate) fn list_append_edges(index: &Index<'_>, in_graph: &[bool], findings: &mut Findings, edges: &mut Vec<Edge>) {
    let mut appends: Vec<Vec<(u32, i64)>> = vec![Vec::new(); index.key_names.len()];
    for (&(key, value), w) in &index.writers {
        if in_graph[w.txn as usize] {
            appends[key as usize].push((w.txn, value));
        }
    }
    for (key, reads) in reads_by_key(index).iter().enumerate() {
        let key = key as u32;
        let Some(longest) = reads.iter().copied().reduce(|a, b| {
            if values(index, &b).len() > values(index, &a).len() {
                b
            } else {
                a
            }
        }) else {
            continue;
        };
        let order = values(index, &longest);
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        let versions = if sorted.windows(2).all(|pair| pair[0] != pair[1]) {
            std::borrow::Cow::Borrowed(order)
        } else {
            let mut seen = HashSet::new();
            std::borrow::Cow::Owned(order.iter().copied().filter(|v| seen.insert(*v)).collect())
        };
        let mut unobserved: Vec<(u32, i64)> = std::mem::take(&mut appends[key as usize])
            .into_iter()
            .filter(|(_, value)| sorted.binary_search(value).is_err())
            .collect();
        unobserved.sort_unstable_by_key(|&(_, value)| value);
        let key_order = KeyOrder {
            key,
            order,
            versions,
            unobserved,
        };
        ww_edges(index, in_graph, &key_order, edges);
        dirty_updates(index, &key_order, findings);
        read_edges(index, in_graph, &key_order, reads, &longest, findings, edges);
    }
}

/// The committed writer of `value` on `key`, if any.
fn committed_writer(index: &Index<'_>, in_graph: &[bool], key: u32, value: i64) -> Option<u32> {
    index
        .writers
        .get(&(key, value))
        .filter(|w| in_graph[w.txn as usize])
        .map(|w| w.txn)
}

/// ww: consecutive committed versions of the order, by two different transactions; and from the last committed one
/// to every unobserved append.
fn ww_edges(index: &Index<'_>, in_graph: &[bool], key_order: &KeyOrder<'_>, edges: &mut Vec<Edge>) {
    let key = key_order.key;
    let mut previous: Option<(u32, i64)> = None;
    let mut link = |from: u32, before: i64, to: u32, after: i64, unobserved: bool| {
        if from != to {
            edges.push(Edge {
                from,
                to,
                why: Why::Ww {
                    key,
                    before,
                    after,
                    read_op: None,
                    unobserved,
                },
            });
        }
    };
    for &value in key_order.versions.iter() {
        let Some(writer) = committed_writer(index, in_graph, key, value) else {
            continue;
        };
        if let Some((from, before)) = previous {
            link(from, before, writer, value, false);
        }
        previous = Some((writer, value));
    }
    if let Some((from, before)) = previous {
        for &(writer, value) in &key_order.unobserved {
            link(from, before, writer, value, true);
        }
    }
}

/// Reads of one key: incompatible orders, and the wr and rw edges of each external read. A read that is a prefix of
/// the order precedes the next committed version after it, or, when none follows, every unobserved append.
fn read_edges(
    index: &Index<'_>,
    in_graph: &[bool],
    key_order: &KeyOrder<'_>,
    reads: &[KeyRead],
    longest: &KeyRead,
    findings: &mut Findings,
    edges: &mut Vec<Edge>,
) {
    let (key, order) = (key_order.key, key_order.order);
    // One report per distinct list that disagrees: the same list read again (by the same transaction or another) is
    // the same disagreement, not a new one.
    let mut reported: HashSet<&[i64]> = HashSet::new();
    for read in reads {
        let got = values(index, read);
        let prefix = order.starts_with(got);
        if !prefix && reported.insert(got) {
            report_incompatible(index, key, read, longest, findings);
        }
        if !read.external {
            continue;
        }
        if let Some(&last) = got.last() {
            if let Some(writer) = committed_writer(index, in_graph, key, last) {
                edges.push(Edge {
                    from: writer,
                    to: read.txn,
                    why: Why::Wr {
                        op: read.op,
                        value: last,
                    },
                });
            }
        }
        if !prefix {
            continue;
        }
        // The versions the read saw: its length, unless the order holds a value twice.
        let seen = if key_order.versions.len() == order.len() {
            got.len()
        } else {
            got.iter().collect::<HashSet<_>>().len()
        };
        let next = key_order.versions[seen..]
            .iter()
            .find_map(|&v| committed_writer(index, in_graph, key, v).map(|w| (w, v)));
        let missed = match next {
            Some(next) => vec![next],
            None => key_order.unobserved.clone(),
        };
        for (writer, value) in missed {
            edges.push(Edge {
                from: read.txn,
                to: writer,
                why: Why::Rw { op: read.op, value },
            });
        }
    }
}

/// Dirty updates (Elle's): along the order, a committed append that follows a failed transaction's append (with
/// only appends of unknown outcome between them).
fn dirty_updates(index: &Index<'_>, key_order: &KeyOrder<'_>, findings: &mut Findings) {
    // The last version whose writer's outcome is known, and the values since it.
    let mut last: (Option<u32>, TxnOutcome) = (None, TxnOutcome::Ok);
    let mut since: Vec<i64> = Vec::new();
    for &value in key_order.versions.iter() {
        let Some(writer) = index.writers.get(&(key_order.key, value)) else {
            continue;
        };
        since.push(value);
        match (last.1, index.outcome(writer.txn)) {
            (TxnOutcome::Fail, TxnOutcome::Ok) => {
                let failed = last.0.expect("a failed version has a writer");
                report_dirty_update(index, key_order.key, &since, failed, writer.txn, findings);
                last = (Some(writer.txn), TxnOutcome::Ok);
                since = vec![value];
            }
            // Unknown outcomes say nothing, and a failed version after a failed one neither: keep the range open
            // from the first failed version.
            (_, TxnOutcome::Info) | (TxnOutcome::Fail, TxnOutcome::Fail) => {}
            (_, outcome) => {
                last = (Some(writer.txn), outcome);
                since = vec![value];
            }
        }
    }
}

fn report_dirty_update(index: &Index<'_>, key: u32, values: &[i64], failed: u32, ok: u32, findings: &mut Findings) {
    findings.add(AnomalyClass::DirtyUpdate, || Anomaly {
        class: AnomalyClass::DirtyUpdate,
        txns: vec![index.txns[failed as usize].index, index.txns[ok as usize].index],
        key: Some(index.key(key).to_string()),
        cycle: Vec::new(),
        explanation: format!(
            "{} is ordered {}: {} appended {} and failed, yet {}, which committed, appended {} after it",
            index.key(key),
            show_list(values),
            index.name(failed),
            values[0],
            index.name(ok),
            values[values.len() - 1]
        ),
    });
}

fn report_incompatible(index: &Index<'_>, key: u32, read: &KeyRead, longest: &KeyRead, findings: &mut Findings) {
    findings.add(AnomalyClass::IncompatibleOrder, || Anomaly {
        class: AnomalyClass::IncompatibleOrder,
        txns: vec![
            index.txns[read.txn as usize].index,
            index.txns[longest.txn as usize].index,
        ],
        key: Some(index.key(key).to_string()),
        cycle: Vec::new(),
        explanation: format!(
            "{} read {} = {} and {} read {} = {}: the first is not a prefix of the second, so they disagree on the \
             order of the list",
            index.name(read.txn),
            index.key(key),
            show_list(values(index, read)),
            index.name(longest.txn),
            index.key(key),
            show_list(values(index, longest)),
        ),
    });
}

/// `(key, version read: the list's last element or the register's value, nil as None)` -> the transactions that
/// read it and then wrote the key, with what they wrote first.
type Overwrites = HashMap<(u32, Option<i64>), Vec<(u32, i64)>, FxBuild>;

/// Lost updates, in both datatypes (Elle's `lost-update`): two or more committed transactions whose first micro-op on
/// a key read one version of it, and which then wrote the key. Whatever the order of their writes, the later one
/// overwrote a version it never saw.
pub(crate) fn lost_updates(index: &Index<'_>, findings: &mut Findings) {
    let mut overwrites = Overwrites::default();
    for (t, txn) in index.txns.iter().enumerate() {
        if txn.outcome != TxnOutcome::Ok {
            continue;
        }
        let t = t as u32;
        for group in index.key_groups(t) {
            let MicroOp::Read { value, .. } = index.op(t, group[0]) else {
                continue;
            };
            let written = group[1..]
                .iter()
                .find_map(|&op| super::index::written_value(index.op(t, op)));
            if let Some(written) = written {
                let version = read_values(value).last().copied();
                let key = index.op_key[group[0] as usize];
                overwrites.entry((key, version)).or_default().push((t, written));
            }
        }
    }
    report_lost_updates(index, &overwrites, findings);
}

/// rw-register: pushes the ww, wr and rw edges the known parts of each key's version order imply.
pub(crate) fn rw_register_edges(
    index: &Index<'_>,
    in_graph: &[bool],
    writes_follow_reads: bool,
    edges: &mut Vec<Edge>,
) {
    let reads = reads_by_key(index);
    // Known successors of each non-nil version, `(key, a) -> [b]`.
    let mut successors: HashMap<(u32, i64), Vec<i64>, FxBuild> = HashMap::default();
    let mut has_predecessor: HashSet<(u32, i64), FxBuild> = HashSet::default();
    let final_write = |txn: u32, key: u32| {
        index.ops_of(txn).rev().find_map(|op| match index.op(txn, op) {
            MicroOp::Write { value, .. } if index.op_key[op as usize] == key => Some(*value),
            _ => None,
        })
    };
    let committed_final = |key: u32, value: i64| {
        index
            .writers
            .get(&(key, value))
            .filter(|w| in_graph[w.txn as usize] && w.last_in_txn)
    };
    for (key, key_reads) in reads.iter().enumerate() {
        let key = key as u32;
        for read in key_reads.iter().filter(|r| r.external) {
            let got = values(index, read).first().copied();
            // Only a transaction's final write of a key is a version: a read of an intermediate one is G1b, and
            // (as in Elle) orders nothing.
            if let Some(writer) = got.and_then(|v| committed_final(key, v)) {
                edges.push(Edge {
                    from: writer.txn,
                    to: read.txn,
                    why: Why::Wr {
                        op: read.op,
                        value: got.expect("a value"),
                    },
                });
            }
            let Some(after) = final_write(read.txn, key) else {
                continue;
            };
            let (Some(before), true) = (got, writes_follow_reads) else {
                continue;
            };
            has_predecessor.insert((key, after));
            successors.entry((key, before)).or_default().push(after);
            if let Some(writer) = committed_final(key, before) {
                edges.push(Edge {
                    from: writer.txn,
                    to: read.txn,
                    why: Why::Ww {
                        key,
                        before,
                        after,
                        read_op: Some(read.op),
                        unobserved: false,
                    },
                });
            }
        }
    }
    // Versions with no known predecessor but the initial nil, per key.
    let mut roots: Vec<Vec<i64>> = vec![Vec::new(); index.key_names.len()];
    for (&(key, value), w) in &index.writers {
        if in_graph[w.txn as usize] && w.last_in_txn && !has_predecessor.contains(&(key, value)) {
            roots[key as usize].push(value);
        }
    }
    for r in &mut roots {
        r.sort_unstable();
    }
    for (key, key_reads) in reads.iter().enumerate() {
        let key = key as u32;
        for read in key_reads.iter().filter(|r| r.external) {
            let got = values(index, read).first().copied();
            let next: &[i64] = match got {
                None => &roots[key as usize],
                Some(v) => successors.get(&(key, v)).map_or(&[], Vec::as_slice),
            };
            for &value in next {
                if let Some(writer) = committed_final(key, value) {
                    edges.push(Edge {
                        from: read.txn,
                        to: writer.txn,
                        why: Why::Rw { op: read.op, value },
                    });
                }
            }
        }
    }
}

/// Reports every version two or more transactions read and then overwrote.
fn report_lost_updates(index: &Index<'_>, overwrites: &Overwrites, findings: &mut Findings) {
    let mut lost: Vec<_> = overwrites.iter().filter(|(_, writers)| writers.len() >= 2).collect();
    lost.sort_unstable_by_key(|(_, writers)| writers[0].0);
    for (&(key, read), writers) in lost {
        let names: Vec<String> = writers.iter().map(|&(t, _)| index.name(t)).collect();
        let values: Vec<String> = writers.iter().map(|(_, v)| v.to_string()).collect();
        let (names, values) = (join_and(&names), join_and(&values));
        let key_name = index.key(key);
        let explanation = match index.model {
            TxnModel::ListAppend => format!(
                "{names} both read {key_name} {} and then both appended to it ({values}): whichever appended second \
                 did so without having seen the other's append (a lost update)",
                read.map_or("empty".to_string(), |v| format!("ending in {v}"))
            ),
            TxnModel::RwRegister => format!(
                "{names} both read {key_name} = {} and then both wrote it ({values}): whichever wrote second overwrote \
                 the other's write without having seen it (a lost update)",
                read.map_or("nil".to_string(), |v| v.to_string())
            ),
        };
        findings.add(AnomalyClass::LostUpdate, || Anomaly {
            class: AnomalyClass::LostUpdate,
            txns: writers.iter().map(|&(t, _)| index.txns[t as usize].index).collect(),
            key: Some(key_name.to_string()),
            cycle: Vec::new(),
            explanation,
        });
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
