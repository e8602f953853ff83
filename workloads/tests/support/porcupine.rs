//! faultline histories as porcupine-rs operations, with porcupine-rs models written the way its own tests write them
//! (an `i64` register like its etcd model, `String` kv states like its kv models), so both checkers get the same
//! problem: same operations, same real-time order, same reading of `fail` and `info`.
#![allow(dead_code)]

use faultline_workloads::models::cas_register::CAS_MISMATCH_ERROR;
use faultline_workloads::{EventKind, History};
use porcupine_rs::{Model, Operation};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A register operation: values interned to integers (`0` = missing).
#[derive(Debug, Clone)]
pub enum RegisterOp {
    Read {
        key: u32,
        value: i64,
    },
    Write {
        key: u32,
        value: i64,
    },
    Cas {
        key: u32,
        from: i64,
        to: i64,
        ok: bool,
        unknown: bool,
    },
}

impl RegisterOp {
    fn key(&self) -> u32 {
        match self {
            RegisterOp::Read { key, .. } | RegisterOp::Write { key, .. } | RegisterOp::Cas { key, .. } => *key,
        }
    }
}

/// Porcupine's etcd register model, partitioned by key.
#[derive(Debug, Clone)]
pub struct Register;

impl Model for Register {
    type State = i64;
    type Op = RegisterOp;
    type Metadata = ();

    fn init() -> i64 {
        0
    }

    fn step(state: &i64, op: &RegisterOp) -> (bool, i64) {
        match *op {
            RegisterOp::Read { value, .. } => (*state == value, *state),
            RegisterOp::Write { value, .. } => (true, value),
            RegisterOp::Cas {
                from, to, ok, unknown, ..
            } => {
                let legal = unknown || (from == *state) == ok;
                (legal, if from == *state { to } else { *state })
            }
        }
    }

    fn partition_operations(history: &[Operation<Self>]) -> Vec<Vec<Operation<Self>>> {
        let mut by_key: BTreeMap<u32, Vec<Operation<Self>>> = BTreeMap::new();
        for op in history {
            by_key.entry(op.op.key()).or_default().push(op.clone());
        }
        by_key.into_values().collect()
    }
}

/// A kv operation, as in porcupine-rs's kv tests.
#[derive(Debug, Clone)]
pub enum KvOp {
    Get { key: String, value: String },
    Put { key: String, value: String },
    Append { key: String, value: String },
}

impl KvOp {
    fn key(&self) -> &str {
        match self {
            KvOp::Get { key, .. } | KvOp::Put { key, .. } | KvOp::Append { key, .. } => key,
        }
    }
}

/// Porcupine's kv model, partitioned by key.
#[derive(Debug, Clone)]
pub struct Kv;

impl Model for Kv {
    type State = String;
    type Op = KvOp;
    type Metadata = ();

    fn init() -> String {
        String::new()
    }

    fn step(state: &String, op: &KvOp) -> (bool, String) {
        match op {
            KvOp::Get { value, .. } => (value == state, state.clone()),
            KvOp::Put { value, .. } => (true, value.clone()),
            KvOp::Append { value, .. } => (true, state.clone() + value),
        }
    }

    fn partition_operations(history: &[Operation<Self>]) -> Vec<Vec<Operation<Self>>> {
        let mut by_key: HashMap<String, Vec<Operation<Self>>> = HashMap::new();
        for op in history {
            by_key.entry(op.op.key().to_owned()).or_default().push(op.clone());
        }
        by_key.into_values().collect()
    }
}

/// Porcupine's kv model without partitioning: one map of all keys.
#[derive(Debug, Clone)]
pub struct KvNoPartition;

impl Model for KvNoPartition {
    type State = BTreeMap<String, String>;
    type Op = KvOp;
    type Metadata = ();

    fn init() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    fn step(state: &BTreeMap<String, String>, op: &KvOp) -> (bool, BTreeMap<String, String>) {
        match op {
            KvOp::Get { key, value } => (state.get(key).map_or(value.is_empty(), |v| v == value), state.clone()),
            KvOp::Put { key, value } => {
                let mut next = state.clone();
                next.insert(key.clone(), value.clone());
                (true, next)
            }
            KvOp::Append { key, value } => {
                let mut next = state.clone();
                next.entry(key.clone()).or_default().push_str(value);
                (true, next)
            }
        }
    }
}

/// An invocation with its completion kind and value, and their times (positions; info returns far in the future).
struct Paired<'a> {
    f: &'a str,
    key: &'a str,
    invoke: &'a Value,
    kind: EventKind,
    result: &'a Value,
    mismatch: bool,
    call: i64,
    ret: i64,
}

fn pairs(history: &History) -> Vec<Paired<'_>> {
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut out: Vec<(usize, Option<usize>)> = Vec::new();
    let far = history.events.len() as i64 * 2;
    let null = &Value::Null;
    let events = &history.events;
    for (pos, e) in events.iter().enumerate() {
        let Some(process) = e.process.filter(|_| e.kind.is_client()) else {
            continue;
        };
        if e.kind == EventKind::Invoke {
            if let Some(previous) = open.insert(process, pos) {
                out.push((previous, None));
            }
            continue;
        }
        let Some(inv) = open.remove(&process) else { continue };
        out.push((inv, Some(pos)));
    }
    out.extend(open.into_values().map(|inv| (inv, None)));
    out.sort();
    out.into_iter()
        .enumerate()
        .map(|(n, (inv, done))| {
            let invoke = &events[inv];
            let (kind, result, mismatch, ret) = match done.map(|d| &events[d]) {
                Some(d) if d.kind != EventKind::Info => (
                    d.kind,
                    &d.value,
                    d.error.as_deref() == Some(CAS_MISMATCH_ERROR),
                    done.unwrap_or_default() as i64,
                ),
                _ => (EventKind::Info, null, false, far + n as i64),
            };
            Paired {
                f: &invoke.f,
                key: invoke.key.as_deref().unwrap_or(""),
                invoke: &invoke.value,
                kind,
                result,
                mismatch,
                call: inv as i64,
                ret,
            }
        })
        .collect()
}

fn operation<M: Model>(p: &Paired<'_>, op: M::Op) -> Operation<M> {
    Operation {
        client_id: None,
        call_time: p.call,
        return_time: p.ret,
        op,
        metadata: None,
    }
}

/// Register operations, with `fail` and unknown-result reads dropped as faultline reads them.
pub fn register_ops(history: &History) -> Vec<Operation<Register>> {
    let mut values: HashMap<String, i64> = HashMap::new();
    let mut keys: HashMap<String, u32> = HashMap::new();
    let mut intern = |v: &Value| -> i64 {
        if v.is_null() {
            return 0;
        }
        let n = values.len() as i64 + 1;
        *values.entry(v.to_string()).or_insert(n)
    };
    let mut ops = Vec::new();
    for p in pairs(history) {
        let n = keys.len() as u32;
        let key = *keys.entry(p.key.to_string()).or_insert(n);
        let unknown = p.kind == EventKind::Info;
        let op = match (p.f, p.kind) {
            ("read", EventKind::Ok) => RegisterOp::Read {
                key,
                value: intern(p.result),
            },
            ("write", EventKind::Ok | EventKind::Info) => RegisterOp::Write {
                key,
                value: intern(p.invoke),
            },
            ("cas", EventKind::Fail) if !p.mismatch => continue,
            ("cas", _) => RegisterOp::Cas {
                key,
                from: intern(&p.invoke[0]),
                to: intern(&p.invoke[1]),
                ok: p.kind == EventKind::Ok,
                unknown,
            },
            _ => continue,
        };
        ops.push(operation(&p, op));
    }
    ops
}

/// Kv operations (Porcupine's kv histories have no `fail` or `info`; unknown outcomes are kept as writes).
pub fn kv_ops<M: Model<Op = KvOp>>(history: &History) -> Vec<Operation<M>> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut ops = Vec::new();
    for p in pairs(history) {
        let key = p.key.to_string();
        let op = match (p.f, p.kind) {
            ("get", EventKind::Ok) => KvOp::Get {
                key,
                value: text(p.result),
            },
            ("put", EventKind::Ok | EventKind::Info) => KvOp::Put {
                key,
                value: text(p.invoke),
            },
            ("append", EventKind::Ok | EventKind::Info) => KvOp::Append {
                key,
                value: text(p.invoke),
            },
            _ => continue,
        };
        ops.push(operation(&p, op));
    }
    ops
}
