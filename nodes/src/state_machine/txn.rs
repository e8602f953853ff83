//! Running a transaction: its micro-ops in order against the state, each seeing the ones before it, all applied at
//! the end or none (a `debit` of more than its register holds aborts the whole transaction).
//!
//! The run is a pure function of the state ([`StateMachine::run_txn`]): what the reads return and what the
//! transaction would change (an overlay of registers set and values appended). Applying it ([`StateMachine`]'s
//! `execute_txn`) writes the overlay into the state. The `txn-reads-at-receipt` mutant runs the same function on the
//! primary's state when the request arrives ([`StateMachine::txn_at_receipt`]) and keeps its reads, and the balances
//! its credits and debits computed there, instead of those of the state the transaction is ordered after.

use super::{Reply, StateMachine, TxnOp};
use serde_json::{json, Value};
use std::collections::HashMap;

/// What a run of a transaction would change: registers set and values appended, by key.
#[derive(Default)]
struct Overlay {
    registers: HashMap<String, String>,
    appends: HashMap<String, Vec<String>>,
}

/// A transaction run against a state without applying it.
struct Run {
    /// Each micro-op with its read filled, as the reply shows it.
    filled: Vec<Value>,
    /// The balance each credit or debit left, in order (`None` for the other micro-ops).
    balances: Vec<Option<i64>>,
    overlay: Overlay,
}

/// What the `txn-reads-at-receipt` mutant takes from the state when a transaction arrives: the reply the client will
/// get (the reads as they were then) and the micro-ops to log in its place, its credits and debits resolved into
/// plain writes of the balances computed then.
pub struct ReceiptTxn {
    /// The reply, filled with the reads taken at receipt.
    pub reply: Reply,
    /// The micro-ops to order in the log.
    pub logged: Vec<TxnOp>,
}

fn number(text: &str) -> Value {
    text.parse::<i64>().map_or_else(|_| json!(text), |n| json!(n))
}

impl StateMachine {
    /// A register as the transaction sees it: its own write first, else the state's.
    fn register_seen<'a>(&'a self, overlay: &'a Overlay, key: &str) -> Option<&'a String> {
        overlay.registers.get(key).or_else(|| self.registers.get(key))
    }

    /// What a read of `key` returns inside a transaction: the key's log (with the transaction's own appends) as
    /// integers if it has one, else its register as an integer, else `null`.
    fn read_seen(&self, overlay: &Overlay, key: &str) -> Value {
        let (log, own) = (self.logs.get(key), overlay.appends.get(key));
        if log.is_some() || own.is_some() {
            let items = log.into_iter().flatten().chain(own.into_iter().flatten());
            return Value::Array(items.map(|v| number(v)).collect());
        }
        self.register_seen(overlay, key)
            .map_or(Value::Null, |text| number(text))
    }

    /// A balance: the register as an integer, 0 when it holds nothing; an error for a register holding text.
    fn balance_seen(&self, overlay: &Overlay, key: &str) -> Result<i64, String> {
        match self.register_seen(overlay, key) {
            None => Ok(0),
            Some(text) => text
                .parse()
                .map_err(|_| format!("register {key} holds {text:?}, not a balance")),
        }
    }

    /// Runs `ops` against the state as it is, applying nothing: `Err` with why when a debit aborts it.
    fn run_txn(&self, ops: &[TxnOp]) -> Result<Run, String> {
        let mut run = Run {
            filled: Vec::with_capacity(ops.len()),
            balances: Vec::with_capacity(ops.len()),
            overlay: Overlay::default(),
        };
        for op in ops {
            let (mut read, mut balance) = (Value::Null, None);
            match op {
                TxnOp::Read { key } => read = self.read_seen(&run.overlay, key),
                TxnOp::Append { key, value } => run
                    .overlay
                    .appends
                    .entry(key.clone())
                    .or_default()
                    .push(value.to_string()),
                TxnOp::Write { key, value } => {
                    run.overlay.registers.insert(key.clone(), value.to_string());
                }
                TxnOp::Init { key, value } => {
                    if self.register_seen(&run.overlay, key).is_none() {
                        run.overlay.registers.insert(key.clone(), value.to_string());
                    }
                }
                TxnOp::Credit { key, amount } | TxnOp::Debit { key, amount } => {
                    let held = self.balance_seen(&run.overlay, key)?;
                    let debit = matches!(op, TxnOp::Debit { .. });
                    if debit && held < *amount {
                        return Err(format!("{key} holds {held}, less than the {amount} debited"));
                    }
                    let left = if debit {
                        held - amount
                    } else {
                        held.saturating_add(*amount)
                    };
                    run.overlay.registers.insert(key.clone(), left.to_string());
                    balance = Some(left);
                }
            }
            run.filled.push(op.to_json(read));
            run.balances.push(balance);
        }
        Ok(run)
    }

    /// Runs and applies a transaction: its filled micro-ops, or the abort with nothing applied.
    pub(super) fn execute_txn(&mut self, ops: &[TxnOp]) -> Reply {
        let run = match self.run_txn(ops) {
            Ok(run) => run,
            Err(why) => return Reply::TxnAborted(why),
        };
        self.registers.extend(run.overlay.registers);
        for (key, values) in run.overlay.appends {
            self.logs.entry(key).or_default().extend(values);
        }
        Reply::Txn(Value::Array(run.filled).to_string())
    }

    /// What the `txn-reads-at-receipt` mutant takes when a transaction arrives (see [`ReceiptTxn`]), or the abort a
    /// debit meets in the state as it is now.
    pub fn txn_at_receipt(&self, ops: &[TxnOp]) -> Result<ReceiptTxn, String> {
        let run = self.run_txn(ops)?;
        let logged = ops
            .iter()
            .zip(&run.balances)
            .map(|(op, balance)| match (op, balance) {
                (TxnOp::Credit { key, .. } | TxnOp::Debit { key, .. }, Some(left)) => TxnOp::Write {
                    key: key.clone(),
                    value: *left,
                },
                (op, _) => op.clone(),
            })
            .collect();
        Ok(ReceiptTxn {
            reply: Reply::Txn(Value::Array(run.filled).to_string()),
            logged,
        })
    }
}
