//! Porcupine's key-value store: `get(key) -> string`, `put(key, string)`, `append(key, string)`.
//!
//! A missing key reads as `""`, and `append` concatenates strings, exactly as in Porcupine's kv tests, so that
//! faultline's verdicts can be compared with Porcupine's on its kv histories. The state holds one string per key the
//! partition touches (one key when the history is partitioned by key, as it normally is).
//!
//! States carry a content hash (a rolling polynomial hash, so `put("ab")` and `put("a"); append("b")` hash alike) so
//! that the search's memoization hashes a state in constant time however long its strings grow.

use super::{roll_bytes, Completion, FxBuild, Model};
use crate::history::Event;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The kv model: interned keys and argument strings.
#[derive(Debug, Default)]
pub struct Kv {
    keys: Vec<String>,
    key_ids: HashMap<String, u32, FxBuild>,
    values: Vec<Text>,
    value_ids: HashMap<String, u32, FxBuild>,
}

/// A string with its rolling hash and `base^len`, so concatenation updates the hash in O(1). Bytes rather than
/// `str` so that a concatenation is built in one allocation.
#[derive(Debug, Clone)]
pub struct Text {
    hash: u64,
    power: u64,
    text: Arc<[u8]>,
}

impl Text {
    fn new(text: &str) -> Text {
        let (hash, power) = roll_bytes(text.as_bytes());
        Text {
            hash,
            power,
            text: Arc::from(text.as_bytes()),
        }
    }

    fn concat(&self, tail: &Text) -> Text {
        Text {
            hash: self.hash.wrapping_mul(tail.power).wrapping_add(tail.hash),
            power: self.power.wrapping_mul(tail.power),
            text: {
                let mut bytes = Vec::with_capacity(self.text.len() + tail.text.len());
                bytes.extend_from_slice(&self.text);
                bytes.extend_from_slice(&tail.text);
                Arc::from(bytes)
            },
        }
    }

    fn shown(&self) -> String {
        String::from_utf8_lossy(&self.text).into_owned()
    }

    fn same(&self, other: &Text) -> bool {
        self.hash == other.hash && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}

/// One string per key (indexed by interned key id), and a hash of them all.
#[derive(Debug, Clone)]
pub struct KvState {
    hash: u64,
    texts: Texts,
}

/// The strings of a state. A partition normally holds one key, and then a step allocates nothing but the new string.
#[derive(Debug, Clone)]
enum Texts {
    One(Text),
    Many(Arc<[Text]>),
}

impl Texts {
    fn as_slice(&self) -> &[Text] {
        match self {
            Texts::One(t) => std::slice::from_ref(t),
            Texts::Many(ts) => ts,
        }
    }
}

impl PartialEq for KvState {
    fn eq(&self, other: &Self) -> bool {
        if self.hash != other.hash {
            return false;
        }
        if let (Texts::Many(a), Texts::Many(b)) = (&self.texts, &other.texts) {
            if Arc::ptr_eq(a, b) {
                return true;
            }
        }
        let (a, b) = (self.texts.as_slice(), other.texts.as_slice());
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
    }
}

impl Eq for KvState {}

impl Hash for KvState {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// One kv operation with its observed result; keys and strings are interned ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvOp {
    /// `get(key)` returned `value`.
    Get {
        /// Interned key.
        key: u32,
        /// Interned string read.
        value: u32,
    },
    /// `put(key, value)`.
    Put {
        /// Interned key.
        key: u32,
        /// Interned string written.
        value: u32,
    },
    /// `append(key, value)`.
    Append {
        /// Interned key.
        key: u32,
        /// Interned string appended.
        value: u32,
    },
}

fn key_mix(key: u32, hash: u64) -> u64 {
    (hash ^ (u64::from(key) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd)
}

impl Kv {
    /// An empty kv model.
    pub fn new() -> Self {
        Self::default()
    }

    fn intern_key(&mut self, key: &str) -> u32 {
        if let Some(&id) = self.key_ids.get(key) {
            return id;
        }
        let id = u32::try_from(self.keys.len()).expect("fewer than 2^32 keys");
        self.keys.push(key.to_string());
        self.key_ids.insert(key.to_string(), id);
        id
    }

    fn intern_value(&mut self, value: &Value) -> u32 {
        let text = match value {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(&id) = self.value_ids.get(&text) {
            return id;
        }
        let id = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct strings");
        self.values.push(Text::new(&text));
        self.value_ids.insert(text, id);
        id
    }

    fn with_text(&self, state: &KvState, key: u32, text: Text) -> KvState {
        let k = key as usize;
        let old = &state.texts.as_slice()[k];
        let hash = state
            .hash
            .wrapping_sub(key_mix(key, old.hash))
            .wrapping_add(key_mix(key, text.hash));
        let texts = match &state.texts {
            Texts::One(_) => Texts::One(text),
            Texts::Many(ts) => Texts::Many(
                ts.iter()
                    .enumerate()
                    .map(|(i, t)| if i == k { text.clone() } else { t.clone() })
                    .collect(),
            ),
        };
        KvState { hash, texts }
    }
}

impl Model for Kv {
    type State = KvState;
    type Op = KvOp;

    fn init(&self) -> KvState {
        let empty = Text::new("");
        let hash = (0..self.keys.len() as u32).fold(0u64, |h, k| h.wrapping_add(key_mix(k, empty.hash)));
        let texts = if self.keys.len() == 1 {
            Texts::One(empty)
        } else {
            Texts::Many(vec![empty; self.keys.len()].into())
        };
        KvState { hash, texts }
    }

    fn step(&self, state: &KvState, op: &KvOp) -> Option<KvState> {
        match *op {
            KvOp::Get { key, value } => state.texts.as_slice()[key as usize]
                .same(&self.values[value as usize])
                .then(|| state.clone()),
            KvOp::Put { key, value } => Some(self.with_text(state, key, self.values[value as usize].clone())),
            KvOp::Append { key, value } => {
                let text = state.texts.as_slice()[key as usize].concat(&self.values[value as usize]);
                Some(self.with_text(state, key, text))
            }
        }
    }

    fn describe_op(&self, op: &KvOp) -> String {
        let (key, value) = match *op {
            KvOp::Get { key, value } | KvOp::Put { key, value } | KvOp::Append { key, value } => {
                (&self.keys[key as usize], self.values[value as usize].shown())
            }
        };
        match op {
            KvOp::Get { .. } => format!("get({key:?}) -> {value:?}"),
            KvOp::Put { .. } => format!("put({key:?}, {value:?})"),
            KvOp::Append { .. } => format!("append({key:?}, {value:?})"),
        }
    }

    fn describe_state(&self, state: &KvState) -> String {
        let shown: Vec<String> = state
            .texts
            .as_slice()
            .iter()
            .zip(&self.keys)
            .map(|(t, k)| format!("{k:?}: {:?}", t.shown()))
            .collect();
        format!("{{{}}}", shown.join(", "))
    }

    fn op_from_history(&mut self, invoke: &Event, completion: Completion<'_>) -> Result<Option<KvOp>, String> {
        let key = self.intern_key(invoke.key.as_deref().unwrap_or(""));
        match (invoke.f.as_str(), completion) {
            ("get" | "read", Completion::Ok(done)) => Ok(Some(KvOp::Get {
                key,
                value: self.intern_value(&done.value),
            })),
            ("get" | "read", _) => Ok(None),
            ("put" | "write" | "append", Completion::Fail(_)) => Ok(None),
            ("put" | "write", _) => Ok(Some(KvOp::Put {
                key,
                value: self.intern_value(&invoke.value),
            })),
            ("append", _) => Ok(Some(KvOp::Append {
                key,
                value: self.intern_value(&invoke.value),
            })),
            (other, _) => Err(format!(
                "the kv model has no operation {other:?} (expected get, put or append)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_put_then_append_when_compared_with_whole_put_should_be_equal_states() {
        let mut m = Kv::new();
        let k = m.intern_key("k");
        let ab = m.intern_value(&Value::from("ab"));
        let a = m.intern_value(&Value::from("a"));
        let b = m.intern_value(&Value::from("b"));
        let s0 = m.init();
        let whole = m.step(&s0, &KvOp::Put { key: k, value: ab }).unwrap();
        let parts = m.step(&s0, &KvOp::Put { key: k, value: a }).unwrap();
        let parts = m.step(&parts, &KvOp::Append { key: k, value: b }).unwrap();
        assert_eq!(whole, parts);
        assert!(m.step(&parts, &KvOp::Get { key: k, value: ab }).is_some());
        assert!(m.step(&parts, &KvOp::Get { key: k, value: a }).is_none());
    }
}
