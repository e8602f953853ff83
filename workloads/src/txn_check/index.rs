//! The history indexed for analysis: interned keys, one flat array of micro-ops, and the writer of every value.
//!
//! Values are unique per key (the workload promises it), so `(key, value)` names one write, and any read of that value
//! names its writer. Every later step works on these ids: transactions by their position in the input (`u32`), keys
//! by intern id (`u32`), micro-ops by their position in the flat array (`u32`).

use super::input::{MicroOp, Txn, TxnInputError, TxnModel, TxnOutcome};
use crate::models::FxBuild;
use std::collections::HashMap;

/// The write of one value: which transaction, and whether it was that transaction's last write to
/// the key (an earlier one is an intermediate version nobody else should see).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writer {
    /// The writing transaction (position in the input).
    pub txn: u32,
    /// Whether no later write of the same transaction touched the key.
    pub last_in_txn: bool,
    /// The value of the same transaction's previous append or write to the key, if any.
    pub previous_in_txn: Option<i64>,
}

/// The indexed history.
pub(crate) struct Index<'a> {
    /// The input, in its order.
    pub txns: &'a [Txn],
    /// Which datatype the history uses.
    pub model: TxnModel,
    /// Key names by intern id.
    pub key_names: Vec<&'a str>,
    /// First flat micro-op id of each transaction; `op_start[t + 1]` ends it (one extra entry at the end).
    pub op_start: Vec<u32>,
    /// The key id of each flat micro-op.
    pub op_key: Vec<u32>,
    /// Each transaction's flat micro-op ids sorted by key (stably: in order within a key), in its own range.
    pub by_key: Vec<u32>,
    /// The writer of every `(key id, value)`, whatever the writer's outcome.
    pub writers: HashMap<(u32, i64), Writer, FxBuild>,
}

impl<'a> Index<'a> {
    /// Indexes `txns`, refusing histories the analysis cannot read unambiguously.
    pub fn build(txns: &'a [Txn], model: TxnModel) -> Result<Index<'a>, TxnInputError> {
        let limit = u32::MAX as usize - 1;
        let ops_total: usize = txns.iter().map(|t| t.ops.len()).sum();
        for (what, count) in [("transactions", txns.len()), ("micro-ops", ops_total)] {
            if count > limit {
                return Err(TxnInputError::TooLarge { what, count, limit });
            }
        }
        let mut positions: HashMap<u64, usize, FxBuild> = HashMap::default();
        positions.reserve(txns.len());
        for (position, txn) in txns.iter().enumerate() {
            if let Some(first) = positions.insert(txn.index, position) {
                return Err(TxnInputError::DuplicateIndex {
                    index: txn.index,
                    first,
                    second: position,
                });
            }
            if txn.complete_time_ns < txn.invoke_time_ns {
                return Err(TxnInputError::TimeReversed {
                    txn: txn.index,
                    invoke_time_ns: txn.invoke_time_ns,
                    complete_time_ns: txn.complete_time_ns,
                });
            }
            check_model(txn, model)?;
        }
        let mut index = Index {
            txns,
            model,
            key_names: Vec::new(),
            op_start: Vec::with_capacity(txns.len() + 1),
            op_key: Vec::with_capacity(ops_total),
            by_key: Vec::new(),
            writers: HashMap::default(),
        };
        index.intern_keys();
        index.index_writers()?;
        Ok(index)
    }

    fn intern_keys(&mut self) {
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let txns = self.txns;
        for txn in txns {
            self.op_start.push(self.op_key.len() as u32);
            for op in &txn.ops {
                let next = self.key_names.len() as u32;
                let id = *ids.entry(op.key()).or_insert(next);
                if id == next {
                    self.key_names.push(op.key());
                }
                self.op_key.push(id);
            }
        }
        self.op_start.push(self.op_key.len() as u32);
        // A sort per transaction, so that a transaction touching thousands of keys costs n log n, not n².
        self.by_key = (0..self.op_key.len() as u32).collect();
        for t in 0..txns.len() as u32 {
            let range = self.ops_of(t);
            let op_key = &self.op_key;
            self.by_key[range.start as usize..range.end as usize].sort_by_key(|&op| op_key[op as usize]);
        }
    }

    fn index_writers(&mut self) -> Result<(), TxnInputError> {
        let mut writers: HashMap<(u32, i64), Writer, FxBuild> = HashMap::default();
        writers.reserve(self.op_key.len() / 2);
        for t in 0..self.txns.len() as u32 {
            for group in self.key_groups(t) {
                let last_write = group.iter().rev().find(|&&op| written_value(self.op(t, op)).is_some());
                let mut previous_in_txn = None;
                for &op in group {
                    let Some(value) = written_value(self.op(t, op)) else {
                        continue;
                    };
                    let key = self.op_key[op as usize];
                    let writer = Writer {
                        txn: t,
                        last_in_txn: Some(&op) == last_write,
                        previous_in_txn,
                    };
                    previous_in_txn = Some(value);
                    if let Some(first) = writers.insert((key, value), writer) {
                        return Err(TxnInputError::DuplicateWrite {
                            key: self.key_names[key as usize].to_string(),
                            value,
                            first: self.txns[first.txn as usize].index,
                            second: self.txns[t as usize].index,
                        });
                    }
                }
            }
        }
        self.writers = writers;
        Ok(())
    }

    /// The transaction's micro-ops grouped by key: one slice of flat ids per key, in the transaction's order.
    pub fn key_groups(&self, txn: u32) -> impl Iterator<Item = &[u32]> {
        let range = self.ops_of(txn);
        self.by_key[range.start as usize..range.end as usize]
            .chunk_by(|&a, &b| self.op_key[a as usize] == self.op_key[b as usize])
    }

    /// The transaction's flat micro-op ids.
    pub fn ops_of(&self, txn: u32) -> std::ops::Range<u32> {
        self.op_start[txn as usize]..self.op_start[txn as usize + 1]
    }

    /// The micro-op with flat id `op`, which belongs to `txn`.
    pub fn op(&self, txn: u32, op: u32) -> &'a MicroOp {
        &self.txns[txn as usize].ops[(op - self.op_start[txn as usize]) as usize]
    }

    /// `T<index>`, how explanations name a transaction.
    pub fn name(&self, txn: u32) -> String {
        format!("T{}", self.txns[txn as usize].index)
    }

    /// The name of a key id.
    pub fn key(&self, key: u32) -> &'a str {
        self.key_names[key as usize]
    }

    /// The outcome of a transaction.
    pub fn outcome(&self, txn: u32) -> TxnOutcome {
        self.txns[txn as usize].outcome
    }
}

/// The value an append or write puts in place; `None` for reads.
pub(crate) fn written_value(op: &MicroOp) -> Option<i64> {
    match op {
        MicroOp::Append { value, .. } | MicroOp::Write { value, .. } => Some(*value),
        MicroOp::Read { .. } => None,
    }
}

fn check_model(txn: &Txn, model: TxnModel) -> Result<(), TxnInputError> {
    use super::input::ReadValue;
    let (model_name, wrong): (&'static str, fn(&MicroOp) -> Option<&'static str>) = match model {
        TxnModel::ListAppend => ("list-append", |op| match op {
            MicroOp::Write { .. } => Some("a write"),
            MicroOp::Read {
                value: Some(ReadValue::Register(_)),
                ..
            } => Some("an integer read"),
            _ => None,
        }),
        TxnModel::RwRegister => ("rw-register", |op| match op {
            MicroOp::Append { .. } => Some("an append"),
            MicroOp::Read {
                value: Some(ReadValue::List(_)),
                ..
            } => Some("a list read"),
            _ => None,
        }),
    };
    for (i, op) in txn.ops.iter().enumerate() {
        // Reads of transactions that did not commit are never used, so only their writes must fit the model.
        let unused_read = txn.outcome != TxnOutcome::Ok && matches!(op, MicroOp::Read { .. });
        if let (false, Some(found)) = (unused_read, wrong(op)) {
            return Err(TxnInputError::WrongModel {
                txn: txn.index,
                op: i,
                found,
                model: model_name,
            });
        }
    }
    Ok(())
}
