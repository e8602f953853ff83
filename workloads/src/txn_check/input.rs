//! What the transactional checker reads: a history of transactions, each with its outcome and micro-ops, in the
//! client protocol's JSON shape (`[["append","k3",7],["r","k1",[1,4,7]],["w","k2",5],["r","k2",null]]`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// Which datatype the transactions operate on; it decides how reads reveal the version order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnModel {
    /// Keys are lists; `append` adds a value unique per key, a read returns the whole list (Elle's list-append).
    ListAppend,
    /// Keys are registers; `w` writes a value unique per key, a read returns the value or `nil` (Elle's rw-register).
    RwRegister,
}

/// How a transaction ended, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxnOutcome {
    /// Committed; every read in it is filled in.
    Ok,
    /// Certainly aborted: none of its writes took effect.
    Fail,
    /// Unknown (timeout, lost connection): it may have committed, at any time after its invocation, or not at all.
    Info,
}

/// What a read returned: a list (list-append) or a register value (rw-register). `nil` is the `None` around it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReadValue {
    /// The list a list-append read returned.
    List(Vec<i64>),
    /// The value an rw-register read returned.
    Register(i64),
}

/// One micro-operation of a transaction.
///
/// A read's `value` is `None` for JSON `null`: an unfilled read (in an invocation, a failed or an unknown
/// transaction), an rw-register read of the initial `nil`, or a list-append read of a key never appended to (Elle
/// reads `nil` for an empty list). The transaction's outcome tells these apart: only `ok` transactions' reads count.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<Value>", into = "(String, String, Value)")]
pub enum MicroOp {
    /// `["append", key, value]`: add `value` (unique per key) to the end of the list at `key`.
    Append {
        /// The list appended to.
        key: String,
        /// The value appended, unique per key across the whole history.
        value: i64,
    },
    /// `["w", key, value]`: set the register at `key` to `value` (unique per key across the whole history).
    Write {
        /// The register written.
        key: String,
        /// The value written.
        value: i64,
    },
    /// `["r", key, value]`: read `key`; `value` as described on [`MicroOp`].
    Read {
        /// The key read.
        key: String,
        /// What the read returned; `None` for `null`.
        value: Option<ReadValue>,
    },
}

impl MicroOp {
    /// The key this micro-op touches.
    pub fn key(&self) -> &str {
        match self {
            MicroOp::Append { key, .. } | MicroOp::Write { key, .. } | MicroOp::Read { key, .. } => key,
        }
    }
}

impl TryFrom<Vec<Value>> for MicroOp {
    type Error = String;

    /// `[f, key, value]`, or `[f, key]` for a read (Elle writes unfilled reads either way). A key that is not a
    /// string (Elle's histories use integers and keywords) is named by its JSON text, so `253` and `"253"` are one
    /// key.
    fn try_from(parts: Vec<Value>) -> Result<Self, String> {
        let shown = || Value::Array(parts.clone()).to_string();
        let (f, key, value) = match parts.as_slice() {
            [Value::String(f), key, value] => (f.clone(), key_text(key), value.clone()),
            [Value::String(f), key] if f == "r" => (f.clone(), key_text(key), Value::Null),
            _ => {
                return Err(format!(
                    "micro-op {}: expected [f, key, value] with f a string (\"append\", \"w\" or \"r\")",
                    shown()
                ))
            }
        };
        let key = key.ok_or_else(|| format!("micro-op {}: a key is a string, a number or a keyword", shown()))?;
        MicroOp::parse(f, key, value)
    }
}

/// A micro-op's key as text: a string as it is, a number as its digits; `None` for anything else.
fn key_text(key: &Value) -> Option<String> {
    match key {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        // Elle's tests compose keys (`[:anti 3]`); their JSON text names them just as well.
        Value::Array(_) => Some(key.to_string()),
        _ => None,
    }
}

impl MicroOp {
    fn parse(f: String, key: String, value: Value) -> Result<Self, String> {
        let int = |what: &str| {
            value
                .as_i64()
                .ok_or_else(|| format!("micro-op [{f:?} {key:?} {value}]: {what} needs an integer value"))
        };
        match f.as_str() {
            "append" => Ok(MicroOp::Append {
                value: int("an append")?,
                key,
            }),
            "w" => Ok(MicroOp::Write {
                value: int("a write")?,
                key,
            }),
            "r" => {
                let read = if value.is_null() {
                    None
                } else {
                    Some(serde_json::from_value(value.clone()).map_err(|_| {
                        format!(
                            "micro-op [\"r\" {key:?} {value}]: a read returns null, an integer or a list of integers"
                        )
                    })?)
                };
                Ok(MicroOp::Read { key, value: read })
            }
            other => Err(format!(
                "micro-op [{other:?} {key:?} {value}]: unknown function {other:?} (expected \"append\", \"w\" or \"r\")"
            )),
        }
    }
}

impl From<MicroOp> for (String, String, Value) {
    fn from(op: MicroOp) -> Self {
        match op {
            MicroOp::Append { key, value } => ("append".into(), key, Value::from(value)),
            MicroOp::Write { key, value } => ("w".into(), key, Value::from(value)),
            MicroOp::Read { key, value } => {
                let value = match value {
                    None => Value::Null,
                    Some(ReadValue::Register(v)) => Value::from(v),
                    Some(ReadValue::List(items)) => Value::from(items),
                };
                ("r".into(), key, value)
            }
        }
    }
}

/// One transaction of the history: who ran it, when, how it ended and what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Txn {
    /// Identifies the transaction in every explanation (`T12`); unique in the history (the history index of its
    /// invocation, typically).
    pub index: u64,
    /// The client process; one process runs one transaction at a time, in order.
    pub process: u64,
    /// When the client invoked it, in ns since the run started.
    pub invoke_time_ns: u64,
    /// When the client saw its outcome, in ns since the run started (for `info`: when it gave up waiting).
    pub complete_time_ns: u64,
    /// Where its invocation and its completion stand in the history, when it came from one. Real-time order is read
    /// from these, as Elle reads it (a completion written before an invocation happened before it): Jepsen's `:time`s
    /// come from many threads' clocks and need not rise along the file. `None` for a transaction built without a
    /// history (real time then comes from the times, unless every transaction has positions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions: Option<(u64, u64)>,
    /// How it ended.
    pub outcome: TxnOutcome,
    /// Its micro-ops in order, reads filled in when `ok` (the client protocol's `value`).
    #[serde(alias = "value")]
    pub ops: Vec<MicroOp>,
}

/// A history the checker refuses, because its assumptions do not hold: what, where, and why it cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TxnInputError {
    /// Two transactions share an index, so explanations could not tell them apart.
    #[error("transactions at positions {first} and {second} both have index {index}; refusing an ambiguous history")]
    DuplicateIndex {
        /// The shared index.
        index: u64,
        /// Position of the first in the input.
        first: usize,
        /// Position of the second.
        second: usize,
    },
    /// A micro-op that the model has no meaning for (a write in list-append, an append or a list read in
    /// rw-register).
    #[error("T{txn} op {op}: {found} in a {model} history; refusing to guess what it means")]
    WrongModel {
        /// The transaction's index.
        txn: u64,
        /// Position of the micro-op in the transaction.
        op: usize,
        /// What was found (`a write`, `an append`, `a list read`, `an integer read`).
        found: &'static str,
        /// The model checked (`list-append` or `rw-register`).
        model: &'static str,
    },
    /// One value written twice to one key: the checker could not tell which write a read saw.
    #[error(
        "T{first} and T{second} both wrote {value} to {key:?}; values must be unique per key, so a read of it could \
         not name its writer"
    )]
    DuplicateWrite {
        /// The key.
        key: String,
        /// The value written twice.
        value: i64,
        /// The first writer's index.
        first: u64,
        /// The second writer's index (may equal `first`: one transaction wrote it twice).
        second: u64,
    },
    /// The transaction completed before it was invoked.
    #[error("T{txn}: completed at {complete_time_ns} ns, before its invocation at {invoke_time_ns} ns")]
    TimeReversed {
        /// The transaction's index.
        txn: u64,
        /// Its invocation time.
        invoke_time_ns: u64,
        /// Its completion time.
        complete_time_ns: u64,
    },
    /// An anomaly the model hierarchy has no name for was asked for.
    #[error("unknown anomaly {name:?}; known anomalies: {known}")]
    UnknownAnomaly {
        /// The name asked for.
        name: String,
        /// Every name the hierarchy knows.
        known: String,
    },
    /// More transactions or micro-ops than the checker's 32-bit node ids hold.
    #[error("{what}: {count} is more than the checker's limit of {limit}")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        limit: usize,
    },
}
