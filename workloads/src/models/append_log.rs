//! An append-only log (one per key): `append(entry) -> offset`, `read(from) -> {from, entries, end}`.
//!
//! History shape:
//! - `append`: the invoke's value is the entry (any JSON); an `ok` completion's value is the offset the entry was
//!   given (an integer, or an object with an integer `offset`). Offsets start at 0 and are dense.
//! - `read`: the invoke's value is the first offset asked for (an integer, `{"from": n}`, or `null` for 0); an `ok`
//!   completion's value is `{"from": n, "entries": [...], "end": e}`: the entries at offsets `[n, n + entries.len())`
//!   and the log's end offset (its length) when the read ran. `end` may be omitted, and a bare array of entries is
//!   accepted as `entries` read from the invoke's offset.

use super::{show_value, Completion, FxBuild, Model};
use crate::history::Event;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// The append-log model: interned entries.
#[derive(Debug, Default)]
pub struct AppendLog {
    entries: Vec<Value>,
    ids: HashMap<String, u32, FxBuild>,
}

/// One cell of a persistent (shared-tail) log: appending never copies the log.
#[derive(Debug)]
pub struct LogNode {
    entry: u32,
    parent: Option<Rc<LogNode>>,
}

/// A log state: its length, a content hash, and its last cell.
#[derive(Debug, Clone, Default)]
pub struct LogState {
    len: u64,
    hash: u64,
    tip: Option<Rc<LogNode>>,
}

impl LogState {
    /// Entries from the end backwards.
    fn rev_iter(&self) -> impl Iterator<Item = (u32, &Option<Rc<LogNode>>)> + '_ {
        let mut cursor = self.tip.as_ref();
        std::iter::from_fn(move || {
            let node = cursor?;
            cursor = node.parent.as_ref();
            Some((node.entry, &node.parent))
        })
    }
}

impl PartialEq for LogState {
    fn eq(&self, other: &Self) -> bool {
        if self.len != other.len || self.hash != other.hash {
            return false;
        }
        let (mut a, mut b) = (self.tip.as_ref(), other.tip.as_ref());
        loop {
            match (a, b) {
                (None, None) => return true,
                (Some(x), Some(y)) if Rc::ptr_eq(x, y) => return true,
                (Some(x), Some(y)) if x.entry == y.entry => {
                    a = x.parent.as_ref();
                    b = y.parent.as_ref();
                }
                _ => return false,
            }
        }
    }
}

impl Eq for LogState {}

impl Hash for LogState {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash ^ self.len);
    }
}

/// One log operation with its observed result; entries are interned ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogOp {
    /// An append that was given `offset` (`None` when its outcome is unknown).
    Append {
        /// Interned entry.
        entry: u32,
        /// The offset the append returned.
        offset: Option<u64>,
    },
    /// A read of `entries` starting at `from`, seeing the log end at `end`.
    Read {
        /// First offset read.
        from: u64,
        /// Interned entries read, in order.
        entries: Vec<u32>,
        /// The log's end offset the read reported, if any.
        end: Option<u64>,
    },
}

fn as_offset(value: &Value, field: &str) -> Option<u64> {
    value.as_u64().or_else(|| value.get(field).and_then(Value::as_u64))
}

impl AppendLog {
    /// An empty log model.
    pub fn new() -> Self {
        Self::default()
    }

    fn intern(&mut self, value: &Value) -> u32 {
        let text = value.to_string();
        if let Some(&id) = self.ids.get(&text) {
            return id;
        }
        let id = u32::try_from(self.entries.len()).expect("fewer than 2^32 distinct entries");
        self.entries.push(value.clone());
        self.ids.insert(text, id);
        id
    }

    fn read_op(&mut self, invoke: &Event, done: &Event) -> Result<LogOp, String> {
        let asked = if invoke.value.is_null() {
            Some(0)
        } else {
            as_offset(&invoke.value, "from")
        };
        let (from, entries, end) = match &done.value {
            Value::Array(entries) => (asked, entries.as_slice(), None),
            Value::Object(map) => {
                let from = map.get("from").and_then(Value::as_u64).or(asked);
                let entries = map.get("entries").and_then(Value::as_array).map(Vec::as_slice);
                let end = map.get("end").and_then(Value::as_u64);
                (from, entries.unwrap_or(&[]), end)
            }
            other => return Err(format!("a log read must return {{from, entries, end}}, found {other}")),
        };
        let from =
            from.ok_or_else(|| format!("a log read must say which offset it read from, found {}", done.value))?;
        let entries = entries.iter().map(|e| self.intern(e)).collect();
        Ok(LogOp::Read { from, entries, end })
    }
}

impl Model for AppendLog {
    type State = LogState;
    type Op = LogOp;

    fn init(&self) -> LogState {
        LogState::default()
    }

    fn step(&self, state: &LogState, op: &LogOp) -> Option<LogState> {
        match op {
            LogOp::Append { entry, offset } => {
                if offset.is_some_and(|o| o != state.len) {
                    return None;
                }
                Some(LogState {
                    len: state.len + 1,
                    hash: state
                        .hash
                        .wrapping_mul(super::ROLL_BASE)
                        .wrapping_add(u64::from(*entry) + 1),
                    tip: Some(Rc::new(LogNode {
                        entry: *entry,
                        parent: state.tip.clone(),
                    })),
                })
            }
            LogOp::Read { from, entries, end } => {
                let upto = from.checked_add(entries.len() as u64)?;
                if upto > state.len || end.is_some_and(|e| e != state.len) {
                    return None;
                }
                let skip = (state.len - upto) as usize;
                let matches = state
                    .rev_iter()
                    .skip(skip)
                    .map(|(entry, _)| entry)
                    .zip(entries.iter().rev())
                    .all(|(have, want)| have == *want);
                matches.then(|| state.clone())
            }
        }
    }

    fn describe_op(&self, op: &LogOp) -> String {
        match op {
            LogOp::Append { entry, offset } => match offset {
                Some(o) => format!("append({}) -> {o}", show_value(&self.entries[*entry as usize])),
                None => format!("append({}) -> unknown", show_value(&self.entries[*entry as usize])),
            },
            LogOp::Read { from, entries, end } => {
                let shown: Vec<String> = entries.iter().map(|e| show_value(&self.entries[*e as usize])).collect();
                let end = end.map_or_else(|| "?".to_string(), |e| e.to_string());
                format!("read({from}) -> [{}] end {end}", shown.join(", "))
            }
        }
    }

    fn describe_state(&self, state: &LogState) -> String {
        const SHOWN: usize = 5;
        let mut last: Vec<String> = state
            .rev_iter()
            .take(SHOWN)
            .map(|(e, _)| show_value(&self.entries[e as usize]))
            .collect();
        last.reverse();
        let more = if state.len as usize > SHOWN { "..., " } else { "" };
        format!("[{more}{}] ({} entries)", last.join(", "), state.len)
    }

    fn op_from_history(&mut self, invoke: &Event, completion: Completion<'_>) -> Result<Option<LogOp>, String> {
        match (invoke.f.as_str(), completion) {
            ("append", Completion::Fail(_)) => Ok(None),
            ("append", Completion::Ok(done)) => {
                let offset = as_offset(&done.value, "offset")
                    .ok_or_else(|| format!("an ok append must return its offset, found {}", done.value))?;
                Ok(Some(LogOp::Append {
                    entry: self.intern(&invoke.value),
                    offset: Some(offset),
                }))
            }
            ("append", Completion::Unknown(_)) => Ok(Some(LogOp::Append {
                entry: self.intern(&invoke.value),
                offset: None,
            })),
            ("read", Completion::Ok(done)) => self.read_op(invoke, done).map(Some),
            ("read", _) => Ok(None),
            (other, _) => Err(format!(
                "the append-log model has no operation {other:?} (expected append or read)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_log_ab_when_read_from_one_should_check_entries_and_end() {
        let mut m = AppendLog::new();
        let a = m.intern(&Value::from("a"));
        let b = m.intern(&Value::from("b"));
        let s = m.init();
        let s = m
            .step(
                &s,
                &LogOp::Append {
                    entry: a,
                    offset: Some(0),
                },
            )
            .unwrap();
        assert!(m
            .step(
                &s,
                &LogOp::Append {
                    entry: b,
                    offset: Some(0)
                }
            )
            .is_none());
        let s = m.step(&s, &LogOp::Append { entry: b, offset: None }).unwrap();
        let good = LogOp::Read {
            from: 1,
            entries: vec![b],
            end: Some(2),
        };
        let stale = LogOp::Read {
            from: 0,
            entries: vec![a],
            end: Some(1),
        };
        let wrong = LogOp::Read {
            from: 0,
            entries: vec![b],
            end: None,
        };
        assert!(m.step(&s, &good).is_some());
        assert!(m.step(&s, &stale).is_none());
        assert!(m.step(&s, &wrong).is_none());
        assert_eq!(m.describe_state(&s), "[\"a\", \"b\"] (2 entries)");
    }
}
