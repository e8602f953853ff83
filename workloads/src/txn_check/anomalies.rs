//! The anomalies a single read (or a single transaction) shows, without any cycle: aborted and intermediate reads
//! (G1a, G1b), garbage reads (values nobody wrote) and lost values, duplicate elements, internal inconsistency. The same pass over `ok` reads
//! finds the `info` transactions whose writes were observed, which proves they committed.

use super::explain::{show_list, show_read};
use super::index::{Index, Writer};
use super::input::{MicroOp, ReadValue, TxnModel, TxnOutcome};
use super::models::AnomalyClass;
use super::{Anomaly, MAX_ANOMALIES_PER_CLASS};
use std::collections::BTreeMap;

/// Anomalies found so far: the first [`MAX_ANOMALIES_PER_CLASS`] of each class kept, all counted.
#[derive(Default)]
pub(crate) struct Findings {
    /// The anomalies kept, by class.
    pub kept: BTreeMap<AnomalyClass, Vec<Anomaly>>,
    /// How many of each class were found.
    pub counts: BTreeMap<AnomalyClass, u64>,
}

impl Findings {
    /// Counts one anomaly of `class`, and keeps it (built by `make`, only then) while the class has room.
    pub fn add(&mut self, class: AnomalyClass, make: impl FnOnce() -> Anomaly) {
        *self.counts.entry(class).or_default() += 1;
        let kept = self.kept.entry(class).or_default();
        if kept.len() < MAX_ANOMALIES_PER_CLASS {
            kept.push(make());
        }
    }

    /// A non-cycle anomaly over transactions (input positions), on `key`, explained by `sentence`.
    fn add_plain(&mut self, index: &Index<'_>, class: AnomalyClass, txns: &[u32], key: u32, sentence: String) {
        self.add(class, || Anomaly {
            class,
            txns: txns.iter().map(|&t| index.txns[t as usize].index).collect(),
            key: Some(index.key(key).to_string()),
            cycle: Vec::new(),
            explanation: sentence,
        });
    }
}

/// The values a committed read returned: a list's elements, a register's value, nothing for `nil`.
pub(crate) fn read_values(value: &Option<ReadValue>) -> &[i64] {
    match value {
        Some(ReadValue::List(items)) => items,
        Some(ReadValue::Register(v)) => std::slice::from_ref(v),
        None => &[],
    }
}

/// Looks at every value every `ok` read returned: reports G1a, G1b, garbage reads (unless `unwritten_initial`: such a
/// value is the key's initial one), duplicate and lost values, and returns which transactions are nodes of the
/// dependency graph (`ok` ones, and `info` ones some `ok` read observed).
pub(crate) fn observe_reads(index: &Index<'_>, unwritten_initial: bool, findings: &mut Findings) -> Vec<bool> {
    let mut in_graph: Vec<bool> = index.txns.iter().map(|t| t.outcome == TxnOutcome::Ok).collect();
    let mut scratch = Vec::new();
    for (t, txn) in index.txns.iter().enumerate() {
        if txn.outcome != TxnOutcome::Ok {
            continue;
        }
        let t = t as u32;
        for op in index.ops_of(t) {
            if let MicroOp::Read { value, .. } = index.op(t, op) {
                let read = Read {
                    txn: t,
                    op,
                    key: index.op_key[op as usize],
                    values: read_values(value),
                };
                observe_read(index, &read, (&mut in_graph, unwritten_initial), findings);
                if index.model == TxnModel::ListAppend {
                    check_list_read(index, &read, &mut scratch, findings);
                }
            }
        }
    }
    in_graph
}

/// One committed read: its transaction, flat micro-op id, key id and values.
struct Read<'a> {
    txn: u32,
    op: u32,
    key: u32,
    values: &'a [i64],
}

impl Read<'_> {
    fn phrase(&self, index: &Index<'_>) -> String {
        match index.op(self.txn, self.op) {
            MicroOp::Read { key, value } => format!(
                "{} read {key} = {}",
                index.name(self.txn),
                show_read(value, index.model)
            ),
            other => format!("{} did {other:?}", index.name(self.txn)),
        }
    }
}

fn observe_read(index: &Index<'_>, read: &Read<'_>, graph: (&mut [bool], bool), findings: &mut Findings) {
    let (in_graph, unwritten_initial) = graph;
    let mut garbage = None;
    let mut aborted: Option<(i64, Writer)> = None;
    for &value in read.values {
        match index.writers.get(&(read.key, value)) {
            None if unwritten_initial => {}
            None => garbage = garbage.or(Some(value)),
            Some(w) => match index.outcome(w.txn) {
                TxnOutcome::Fail => aborted = aborted.or(Some((value, *w))),
                TxnOutcome::Info => in_graph[w.txn as usize] = true,
                TxnOutcome::Ok => {}
            },
        }
    }
    if let Some(value) = garbage {
        let sentence = format!(
            "{}, but no transaction in the history wrote {value} to it (a garbage read)",
            read.phrase(index)
        );
        findings.add_plain(index, AnomalyClass::GarbageRead, &[read.txn], read.key, sentence);
    }
    if let Some((value, w)) = aborted {
        let sentence = format!(
            "{}, but {value} was written only by {}, which failed (aborted read)",
            read.phrase(index),
            index.name(w.txn)
        );
        findings.add_plain(index, AnomalyClass::G1a, &[read.txn, w.txn], read.key, sentence);
    }
    let Some(&last) = read.values.last() else { return };
    let Some(w) = index.writers.get(&(read.key, last)) else {
        return;
    };
    if w.txn != read.txn && !w.last_in_txn && index.outcome(w.txn) != TxnOutcome::Fail {
        let sentence = format!(
            "{}, but {} wrote {last} and then wrote {} again, so {last} was an intermediate version (intermediate read)",
            read.phrase(index),
            index.name(w.txn),
            index.key(read.key)
        );
        findings.add_plain(index, AnomalyClass::G1b, &[read.txn, w.txn], read.key, sentence);
    }
}

/// Duplicate elements, and appends lost from between two of one transaction's appends.
fn check_list_read(index: &Index<'_>, read: &Read<'_>, scratch: &mut Vec<i64>, findings: &mut Findings) {
    scratch.clear();
    scratch.extend_from_slice(read.values);
    scratch.sort_unstable();
    if let Some(pair) = scratch.windows(2).find(|pair| pair[0] == pair[1]) {
        let sentence = format!("{}, in which {} appears more than once", read.phrase(index), pair[0]);
        findings.add_plain(index, AnomalyClass::DuplicateElements, &[read.txn], read.key, sentence);
    }
    for (i, &value) in read.values.iter().enumerate() {
        let Some(w) = index.writers.get(&(read.key, value)) else {
            continue;
        };
        let Some(previous) = w.previous_in_txn else { continue };
        let in_place = i > 0 && read.values[i - 1] == previous;
        let lost = w.txn != read.txn
            && index.outcome(w.txn) != TxnOutcome::Fail
            && !in_place
            && scratch.binary_search(&previous).is_err();
        if lost {
            let sentence = format!(
                "{}, which holds {}'s append of {value} but not its earlier append of {previous} to the same key \
                 (lost append)",
                read.phrase(index),
                index.name(w.txn)
            );
            findings.add_plain(index, AnomalyClass::Lost, &[read.txn, w.txn], read.key, sentence);
        }
    }
}

/// What a transaction has done to one key so far, which its next read of the key must reflect.
enum Expected<'a> {
    /// List-append: the last list it read (if any), and what it appended since.
    List {
        base: Option<&'a [i64]>,
        appended: Vec<i64>,
    },
    /// rw-register: the value it last read or wrote.
    Register(Option<i64>),
}

/// Reports every `ok` read that does not reflect its own transaction's earlier reads and writes of the key.
pub(crate) fn check_internal(index: &Index<'_>, findings: &mut Findings) {
    for (t, txn) in index.txns.iter().enumerate() {
        if txn.outcome != TxnOutcome::Ok {
            continue;
        }
        let t = t as u32;
        for group in index.key_groups(t) {
            let key = index.op_key[group[0] as usize];
            let mut expected = match index.model {
                TxnModel::ListAppend => Expected::List {
                    base: None,
                    appended: Vec::new(),
                },
                TxnModel::RwRegister => Expected::Register(None),
            };
            for (i, &op) in group.iter().enumerate() {
                let at = Read {
                    txn: t,
                    op,
                    key,
                    values: &[],
                };
                if let Some(sentence) = step_expected(index, &mut expected, &at, i > 0) {
                    findings.add_plain(index, AnomalyClass::Internal, &[t], key, sentence);
                }
            }
            future_read(index, t, group, findings);
        }
    }
}

/// A read of a key that shows a value the same transaction writes to it only later (Elle's future read): reported
/// once per transaction and key, at the first such write.
fn future_read(index: &Index<'_>, txn: u32, group: &[u32], findings: &mut Findings) {
    for (i, &op) in group.iter().enumerate() {
        let Some(value) = super::index::written_value(index.op(txn, op)) else {
            continue;
        };
        let earlier = group[..i].iter().find(|&&read| match index.op(txn, read) {
            MicroOp::Read { value: got, .. } => read_values(got).contains(&value),
            _ => false,
        });
        if let Some(&read) = earlier {
            let key = index.op_key[op as usize];
            let at = Read {
                txn,
                op: read,
                key,
                values: &[],
            };
            let sentence = format!(
                "{}, which holds {value}, but {} writes {value} to {} only afterwards (future read)",
                at.phrase(index),
                index.name(txn),
                index.key(key)
            );
            findings.add_plain(index, AnomalyClass::FutureRead, &[txn], key, sentence);
            return;
        }
    }
}

/// Applies one micro-op to what the transaction expects of its key; a read that disagrees returns the sentence
/// saying why. `seen` is whether an earlier micro-op of the transaction touched the key.
fn step_expected<'a>(index: &Index<'a>, slot: &mut Expected<'a>, at: &Read<'_>, seen: bool) -> Option<String> {
    let op = index.op(at.txn, at.op);
    match (op, slot) {
        (MicroOp::Append { value, .. }, Expected::List { appended, .. }) => {
            appended.push(*value);
            None
        }
        (MicroOp::Write { value, .. }, Expected::Register(last)) => {
            *last = Some(*value);
            None
        }
        (MicroOp::Read { value, .. }, Expected::List { base, appended }) => {
            let got = read_values(value);
            let (ok, expected) = match base {
                Some(base) => {
                    let whole = [base, appended.as_slice()].concat();
                    let ok =
                        got.len() == base.len() + appended.len() && got.starts_with(base) && got.ends_with(appended);
                    let difference = list_difference(index, at.key, got, &whole);
                    (ok, format!("{}{difference}", show_list(&whole)))
                }
                None => {
                    let difference = list_difference(index, at.key, got, appended);
                    let expected = format!("a list ending in {}{difference}", show_list(appended));
                    (got.ends_with(appended), expected)
                }
            };
            *base = Some(got);
            appended.clear();
            (!ok).then(|| internal_sentence(index, at, expected))
        }
        (MicroOp::Read { value, .. }, Expected::Register(last)) => {
            let got = read_values(value).first().copied();
            let ok = !seen || *last == got;
            let expected = last.map_or("nil".to_string(), |v| v.to_string());
            *last = got;
            (!ok).then(|| internal_sentence(index, at, expected))
        }
        // The index refused micro-ops the model has no meaning for, so no other pair reaches here.
        _ => None,
    }
}

/// How a list read (`got`) differs from what it should hold (`expected`), in words: the values it has that it
/// should not, each with the transaction that appended it, and those it lacks (`: it also holds 9 (appended by T12)
/// and lacks 4`); only the order when the values agree. Lists in a sentence are abbreviated when long, so the
/// difference is what tells the reader where to look.
fn list_difference(index: &Index<'_>, key: u32, got: &[i64], expected: &[i64]) -> String {
    /// Values named per side, so a sentence stays one line.
    const NAMED_MAX: usize = 3;
    let extra: Vec<i64> = got.iter().copied().filter(|v| !expected.contains(v)).collect();
    let missing: Vec<i64> = expected.iter().copied().filter(|v| !got.contains(v)).collect();
    let name = |values: &[i64], with_writer: bool| {
        let mut named: Vec<String> = values
            .iter()
            .take(NAMED_MAX)
            .map(|&v| match index.writers.get(&(key, v)) {
                Some(w) if with_writer => format!("{v} (appended by {})", index.name(w.txn)),
                None if with_writer => format!("{v} (appended by no transaction)"),
                _ => v.to_string(),
            })
            .collect();
        if values.len() > NAMED_MAX {
            named.push(format!("{} more", values.len() - NAMED_MAX));
        }
        named.join(", ")
    };
    match (extra.is_empty(), missing.is_empty()) {
        (false, false) => format!(
            ": it also holds {} and lacks {}",
            name(&extra, true),
            name(&missing, false)
        ),
        (false, true) => format!(": it also holds {}", name(&extra, true)),
        (true, false) => format!(": it lacks {}", name(&missing, false)),
        (true, true) => ": the same values in another order".to_string(),
    }
}

fn internal_sentence(index: &Index<'_>, at: &Read<'_>, expected: String) -> String {
    format!(
        "{}, but its own earlier micro-ops on {} mean it should have read {expected}",
        at.phrase(index),
        index.key(at.key)
    )
}
