//! Sequential specifications ("models") that the linearizability search checks histories against.
//!
//! A model is a plain value with a pure [`Model::step`] function, like Porcupine's `Model`: the search owns all the
//! bookkeeping, the model only says whether an operation is legal in a state and what state follows. Each model also
//! turns a history's invoke/completion pairs into its own compact operations ([`Model::op_from_history`]), interning
//! values to small integers so that states are cheap to copy, hash and compare in the search's inner loop.

pub mod append_log;
pub mod cas_register;
pub mod kv;
pub mod mutex;

use crate::history::Event;
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;

pub use append_log::AppendLog;
pub use cas_register::CasRegister;
pub use kv::Kv;
pub use mutex::Mutex;

/// Which model a history is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// A register per key: `read` (null = missing key), `write`, `cas [from, to]`.
    CasRegister,
    /// Porcupine's key-value store: `get` (missing key reads `""`), `put`, `append` (string concatenation).
    Kv,
    /// An append-only log per key: `append` returns the offset, `read` returns entries from an offset and the end.
    AppendLog,
    /// Knossos's lock: `acquire` and `release` of one mutex.
    Mutex,
}

impl ModelKind {
    /// The name used on the command line and in results (`cas-register`, `kv`, `append-log`).
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::CasRegister => "cas-register",
            ModelKind::Kv => "kv",
            ModelKind::AppendLog => "append-log",
            ModelKind::Mutex => "mutex",
        }
    }
}

impl std::str::FromStr for ModelKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cas-register" | "register" | "cas" => Ok(ModelKind::CasRegister),
            "kv" => Ok(ModelKind::Kv),
            "append-log" | "log" => Ok(ModelKind::AppendLog),
            "mutex" | "lock" => Ok(ModelKind::Mutex),
            other => Err(format!(
                "unknown model {other:?}: expected cas-register, kv, append-log or mutex"
            )),
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a client operation ended, as the model sees it when building its operation.
#[derive(Debug, Clone, Copy)]
pub enum Completion<'a> {
    /// The operation took effect; the event carries its result.
    Ok(&'a Event),
    /// The operation definitely did not take effect.
    Fail(&'a Event),
    /// Unknown: an `info` completion, or no completion at all (the run ended first).
    Unknown(Option<&'a Event>),
}

/// A sequential specification: initial state, a pure step function, and functions that describe operations and
/// states to a person.
pub trait Model: Send + Sync {
    /// A model state. Clones must be cheap (copy a small value or an `Rc`) and `Hash` fast: the search hashes a state
    /// for every memoization lookup.
    type State: Clone + Eq + Hash + Debug;
    /// One operation with its observed result.
    type Op: Debug + Send + Sync;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `op` if `op` (with its observed result) is legal in `state`, else `None`.
    ///
    /// An operation whose result is unknown (an `info` completion) must be legal in every state: the search treats
    /// such an operation as taking effect at any point after its invocation, or never.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Option<Self::State>;

    /// A short description of an operation, e.g. `write("w-3-17")` or `read() -> "a"`.
    fn describe_op(&self, op: &Self::Op) -> String;

    /// A short description of a state, e.g. `"w-3-17"` or `missing`.
    fn describe_state(&self, state: &Self::State) -> String;

    /// Builds this model's operation from a history's invocation and its completion, interning values into the model.
    ///
    /// Returns `Ok(None)` for an operation that constrains nothing and is left out of the search (a failed write, a
    /// read whose result is unknown), and `Err` with a human-readable message for an operation the model does not
    /// understand.
    fn op_from_history(&mut self, invoke: &Event, completion: Completion<'_>) -> Result<Option<Self::Op>, String>;
}

/// Describes an operation's completion kind for messages (`ok`, `fail`, `info`).
pub(crate) fn completion_name(completion: &Completion<'_>) -> &'static str {
    match completion {
        Completion::Ok(_) => "ok",
        Completion::Fail(_) => "fail",
        Completion::Unknown(_) => "info",
    }
}

/// A fast, deterministic hasher for the search's small keys (the FxHash mixing step).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.hash = (self.hash.rotate_left(5) ^ i).wrapping_mul(FX_SEED);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// `BuildHasher` for [`FxHasher`], for the interning tables.
pub(crate) type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

/// Rolling polynomial hash used by sequence-valued states (kv strings, logs): `h(s ++ t) = h(s) * B^|t| + h(t)`, so
/// the hash of a state depends only on its content, however it was built.
pub(crate) const ROLL_BASE: u64 = 0x100_0000_01b3;

/// `(hash, base^len)` of a byte string under [`ROLL_BASE`].
pub(crate) fn roll_bytes(bytes: &[u8]) -> (u64, u64) {
    let mut hash = 0u64;
    let mut power = 1u64;
    for &b in bytes {
        hash = hash.wrapping_mul(ROLL_BASE).wrapping_add(u64::from(b) + 1);
        power = power.wrapping_mul(ROLL_BASE);
    }
    (hash, power)
}

/// A JSON value rendered compactly for messages, with strings quoted.
pub(crate) fn show_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "nil".to_string(),
        other => other.to_string(),
    }
}
