//! A compare-and-set register (one per key): `read`, `write`, `cas [from, to]`.
//!
//! History shape: `read` invokes with no value and completes `ok` with the value read (`null` = the key is missing);
//! `write` carries the written value on invoke and completion; `cas` carries `[from, to]`. Values are any JSON; they are
//! compared by their compact JSON text, so `3` and `"3"` differ.

use super::{show_value, Completion, FxBuild, Model};
use crate::history::Event;
use serde_json::Value;
use std::collections::HashMap;

/// The `error` text of a `fail` cas completion that means "the cas ran and found the register holding a value other
/// than `from`" (Porcupine's `cas -> false`). Such a cas is checked as a read that saw "not `from`"; any other failed
/// cas is one that definitely did not take effect and constrains nothing.
pub const CAS_MISMATCH_ERROR: &str = "cas-mismatch";

/// The register model. Values are interned: a state is `0` for a missing key or `1 + index` into the value table.
#[derive(Debug, Default)]
pub struct CasRegister {
    values: Vec<Value>,
    ids: HashMap<String, u32, FxBuild>,
}

/// What became of a cas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    /// It completed `ok`: the register held `from` and now holds `to`.
    Applied,
    /// It ran and found the register not holding `from` (see [`CAS_MISMATCH_ERROR`]).
    Rejected,
    /// Unknown: applied if the register held `from` at its linearization point, else no effect.
    Unknown,
}

/// One register operation with its observed result. Values are interned ids (`0` = missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterOp {
    /// A read that returned `value`.
    Read {
        /// The value read.
        value: u32,
    },
    /// A write of `value` (completed or unknown: a write is legal in every state).
    Write {
        /// The value written.
        value: u32,
    },
    /// A compare-and-set.
    Cas {
        /// Expected current value.
        from: u32,
        /// New value.
        to: u32,
        /// What became of it.
        outcome: CasOutcome,
    },
}

impl CasRegister {
    /// An empty register model (no values interned yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Interns a value: `null` is the missing key (0).
    pub fn intern(&mut self, value: &Value) -> u32 {
        if value.is_null() {
            return 0;
        }
        let text = value.to_string();
        if let Some(&id) = self.ids.get(&text) {
            return id;
        }
        self.values.push(value.clone());
        let id = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values in one key");
        self.ids.insert(text, id);
        id
    }

    fn show(&self, id: u32) -> String {
        match id {
            0 => "nil".to_string(),
            n => show_value(&self.values[n as usize - 1]),
        }
    }

    fn cas_args(&mut self, invoke: &Event) -> Result<(u32, u32), String> {
        match invoke.value.as_array().map(Vec::as_slice) {
            Some([from, to]) => Ok((self.intern(from), self.intern(to))),
            _ => Err(format!("cas value must be [from, to], found {}", invoke.value)),
        }
    }
}

impl Model for CasRegister {
    type State = u32;
    type Op = RegisterOp;

    fn init(&self) -> u32 {
        0
    }

    fn step(&self, state: &u32, op: &RegisterOp) -> Option<u32> {
        let state = *state;
        match *op {
            RegisterOp::Read { value } => (state == value).then_some(state),
            RegisterOp::Write { value } => Some(value),
            RegisterOp::Cas { from, to, outcome } => match outcome {
                CasOutcome::Applied => (state == from).then_some(to),
                CasOutcome::Rejected => (state != from).then_some(state),
                CasOutcome::Unknown => Some(if state == from { to } else { state }),
            },
        }
    }

    fn describe_op(&self, op: &RegisterOp) -> String {
        match *op {
            RegisterOp::Read { value } => format!("read() -> {}", self.show(value)),
            RegisterOp::Write { value } => format!("write({})", self.show(value)),
            RegisterOp::Cas { from, to, outcome } => {
                let result = match outcome {
                    CasOutcome::Applied => "ok",
                    CasOutcome::Rejected => "mismatch",
                    CasOutcome::Unknown => "unknown",
                };
                format!("cas({}, {}) -> {result}", self.show(from), self.show(to))
            }
        }
    }

    fn describe_state(&self, state: &u32) -> String {
        match *state {
            0 => "missing".to_string(),
            id => self.show(id),
        }
    }

    fn op_from_history(&mut self, invoke: &Event, completion: Completion<'_>) -> Result<Option<RegisterOp>, String> {
        match (invoke.f.as_str(), completion) {
            ("read", Completion::Ok(done)) => Ok(Some(RegisterOp::Read {
                value: self.intern(&done.value),
            })),
            // A read that failed or whose result is unknown observed nothing we can check.
            ("read", _) => Ok(None),
            ("write", Completion::Fail(_)) => Ok(None),
            ("write", _) => Ok(Some(RegisterOp::Write {
                value: self.intern(&invoke.value),
            })),
            ("cas", Completion::Fail(done)) if done.error.as_deref() == Some(CAS_MISMATCH_ERROR) => {
                let (from, to) = self.cas_args(invoke)?;
                Ok(Some(RegisterOp::Cas {
                    from,
                    to,
                    outcome: CasOutcome::Rejected,
                }))
            }
            ("cas", Completion::Fail(_)) => Ok(None),
            ("cas", completion) => {
                let (from, to) = self.cas_args(invoke)?;
                let outcome = match completion {
                    Completion::Ok(_) => CasOutcome::Applied,
                    _ => CasOutcome::Unknown,
                };
                Ok(Some(RegisterOp::Cas { from, to, outcome }))
            }
            (other, _) => Err(format!(
                "the cas-register model has no operation {other:?} (expected read, write or cas)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_register_holding_a_when_cas_from_b_applied_should_be_illegal() {
        let mut m = CasRegister::new();
        let a = m.intern(&Value::from("a"));
        let b = m.intern(&Value::from("b"));
        let op = RegisterOp::Cas {
            from: b,
            to: a,
            outcome: CasOutcome::Applied,
        };
        assert_eq!(m.step(&a, &op), None);
        assert_eq!(m.step(&b, &op), Some(a));
    }

    #[test]
    fn given_unknown_cas_when_stepped_should_be_legal_in_every_state() {
        let mut m = CasRegister::new();
        let a = m.intern(&Value::from(1));
        let b = m.intern(&Value::from(2));
        let op = RegisterOp::Cas {
            from: a,
            to: b,
            outcome: CasOutcome::Unknown,
        };
        assert_eq!(m.step(&a, &op), Some(b));
        assert_eq!(m.step(&0, &op), Some(0));
    }

    #[test]
    fn given_missing_key_when_read_nil_should_be_legal() {
        let mut m = CasRegister::new();
        let nil = m.intern(&Value::Null);
        assert_eq!(m.step(&m.init(), &RegisterOp::Read { value: nil }), Some(0));
        assert_eq!(m.describe_state(&0), "missing");
    }
}
