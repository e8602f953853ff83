//! Jepsen histories into faultline [`Event`]s: EDN op maps (`{:process 0, :type :invoke, :f :write, :value 3}`,
//! with `:key` as in Porcupine's kv logs or `[k v]` independent tuples in `:value`), the same maps in JSON (read by
//! `json.rs`), and the `jepsen.util` log lines of Porcupine's etcd data (`INFO  jepsen.util - 0 :invoke :read nil`,
//! tab-separated).
//!
//! As Jepsen writes them: `:type` `:invoke`, `:ok`, `:fail` or `:info` (other types, such as `:sleep` or `:log`, are
//! not operations and are left out); `:process` a number for a client, a name (`:nemesis`) for a fault, which becomes
//! a `nemesis` event no checker takes for a client op; `:time` in nanoseconds (the op's position when absent);
//! `:index` is not read: an event's index is its position. A transaction is `:f :txn` with a micro-op list in
//! `:value`; Elle's own histories leave `:f` and `:process` out, so a micro-op list without `:f` is a transaction and
//! ops without `:process` share one process.

use super::edn::{EdnError, EdnReader};
use crate::history::{Event, EventKind};
use crate::models::cas_register::CAS_MISMATCH_ERROR;
use serde_json::{Map, Value};

/// An op map that is not a Jepsen operation.
#[derive(Debug)]
pub(crate) struct OpError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl From<EdnError> for OpError {
    fn from(e: EdnError) -> Self {
        OpError {
            line: e.line,
            column: e.column,
            message: e.message,
        }
    }
}

/// An op map with the line and column it started on.
#[derive(Debug)]
pub(crate) struct RawOp {
    pub map: Map<String, Value>,
    pub line: usize,
    pub column: usize,
}

/// Reads every op map of an EDN history: one map per line, or maps inside a top-level vector.
pub(crate) fn read_edn_ops(text: &str) -> Result<Vec<RawOp>, OpError> {
    let mut reader = EdnReader::new(text, 1);
    let mut ops = Vec::new();
    loop {
        let (line, column) = reader.position();
        let Some(value) = reader.next_value()? else { break };
        match value {
            Value::Object(map) => ops.push(RawOp { map, line, column }),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::Object(map) => ops.push(RawOp { map, line, column }),
                        other => {
                            return Err(OpError {
                                line,
                                column,
                                message: format!("expected an op map inside the history vector, found {other}"),
                            })
                        }
                    }
                }
            }
            other => {
                return Err(OpError {
                    line,
                    column,
                    message: format!("expected an op map, found {other}"),
                })
            }
        }
    }
    Ok(ops)
}

/// Reads the `jepsen.util` op lines of a Jepsen log: `<process> <:type> <:f> <value>` after `jepsen.util - `. Other
/// lines are log noise and are skipped.
pub(crate) fn read_log_ops(text: &str) -> Result<Vec<RawOp>, OpError> {
    const MARKER: &str = "jepsen.util - ";
    let mut ops = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some(at) = line.find(MARKER) else { continue };
        let rest = &line[at + MARKER.len()..];
        let column = at + MARKER.len() + 1;
        let mut reader = EdnReader::new(rest, n + 1);
        let mut fields = Vec::with_capacity(4);
        for _ in 0..4 {
            match reader.next_value() {
                Ok(Some(v)) => fields.push(v),
                Ok(None) => break,
                Err(e) => {
                    return Err(OpError {
                        line: n + 1,
                        column: column + e.column - 1,
                        message: e.message,
                    })
                }
            }
        }
        let is_op = fields.len() >= 3
            && (fields[0].is_u64() || fields[0].is_string())
            && fields[1]
                .as_str()
                .is_some_and(|t| matches!(t, "invoke" | "ok" | "fail" | "info"));
        if !is_op {
            continue;
        }
        let mut map = Map::new();
        let mut fields = fields.into_iter();
        for name in ["process", "type", "f", "value"] {
            map.insert(name.to_string(), fields.next().unwrap_or(Value::Null));
        }
        ops.push(RawOp {
            map,
            line: n + 1,
            column,
        });
    }
    Ok(ops)
}

/// A value of the wrong type, as a sentence names it: `the text "12"`, `a map {...}`, `a list [...]`, `-3`.
fn describe(value: &Value) -> String {
    let shown = value.to_string();
    let shown = if shown.chars().count() > 60 {
        format!("{}…", shown.chars().take(60).collect::<String>())
    } else {
        shown
    };
    match value {
        Value::String(_) => format!("the text {shown}"),
        Value::Object(_) => format!("a map {shown}"),
        Value::Array(_) => format!("a list {shown}"),
        Value::Bool(_) => format!("the boolean {shown}"),
        Value::Null => "nil".to_string(),
        Value::Number(_) => shown,
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn is_pair(value: &Value) -> bool {
    value.as_array().is_some_and(|a| a.len() == 2)
}

/// A transaction's value: a non-empty list of micro-ops, each a list that starts with its function
/// (`[[:append 253 1] [:r 253 nil]]`).
pub(crate) fn is_micro_op_list(value: &Value) -> bool {
    value.as_array().is_some_and(|ops| {
        !ops.is_empty()
            && ops
                .iter()
                .all(|op| op.as_array().is_some_and(|op| op.first().is_some_and(Value::is_string)))
    })
}

/// Jepsen's `independent` histories wrap every value as `[key value]`. Recognised when no op has `:key` and every
/// register invocation's value is such a tuple (a cas's inner value being `[from to]`).
fn is_independent(ops: &[RawOp]) -> bool {
    let mut seen = false;
    for op in ops {
        if op.map.contains_key("key") {
            return false;
        }
        if op.map.get("type").and_then(Value::as_str) != Some("invoke") {
            continue;
        }
        let value = op.map.get("value").unwrap_or(&Value::Null);
        // A transaction of two micro-ops is a pair too, but not a tuple.
        if is_micro_op_list(value) {
            return false;
        }
        let ok = match op.map.get("f").and_then(Value::as_str) {
            Some("cas") => is_pair(value) && value.get(1).is_some_and(is_pair),
            Some(_) => is_pair(value),
            None => false,
        };
        if !ok {
            return false;
        }
        seen = true;
    }
    seen
}

/// Turns op maps into events. `failed_cas_mismatch` marks `:fail :cas` as "ran and found another value" (see
/// [`CAS_MISMATCH_ERROR`]), as Porcupine reads Jepsen's etcd logs.
pub(crate) fn to_events(ops: Vec<RawOp>, failed_cas_mismatch: bool) -> Result<Vec<Event>, OpError> {
    let independent = is_independent(&ops);
    // Elle's own test histories leave `:process` out: their ops then belong to one process, numbered past every
    // process the file names.
    let anonymous = ops
        .iter()
        .filter_map(|op| op.map.get("process").and_then(Value::as_u64))
        .max()
        .map_or(0, |max| max + 1);
    let mut events = Vec::with_capacity(ops.len());
    for (position, raw) in ops.into_iter().enumerate() {
        let reading = Reading {
            position: position as u64,
            independent,
            failed_cas_mismatch,
            anonymous,
        };
        if let Some(event) = to_event(raw, &reading)? {
            events.push(event);
        }
    }
    for (i, e) in events.iter_mut().enumerate() {
        e.index = i as u64;
    }
    Ok(events)
}

/// How to read one op of a history.
#[derive(Clone, Copy)]
struct Reading {
    /// Its position among the history's ops.
    position: u64,
    /// Values are Jepsen `independent` `[key value]` tuples.
    independent: bool,
    /// `:fail :cas` means the cas read another value (see [`CAS_MISMATCH_ERROR`]).
    failed_cas_mismatch: bool,
    /// The process of ops without one.
    anonymous: u64,
}

fn to_event(raw: RawOp, reading: &Reading) -> Result<Option<Event>, OpError> {
    let Reading {
        position,
        independent,
        failed_cas_mismatch,
        anonymous,
    } = *reading;
    let RawOp { mut map, line, column } = raw;
    let bad = |message: String| OpError { line, column, message };
    let kind = match map.get("type").and_then(Value::as_str) {
        Some("invoke") => EventKind::Invoke,
        Some("ok") => EventKind::Ok,
        Some("fail") => EventKind::Fail,
        Some("info") => EventKind::Info,
        // Jepsen also logs :sleep, :log and similar non-operations.
        Some(_) => return Ok(None),
        None => {
            return Err(bad(match map.get("type") {
                Some(other) => format!(
                    "a :type must be :invoke, :ok, :fail or :info, found {}",
                    describe(other)
                ),
                None => format!("op map without :type: {}", Value::Object(map)),
            }))
        }
    };
    // Elle reads a transaction from `:value` whatever `:f` says, and its own test histories leave `:f` out.
    let f = match map.get("f") {
        Some(f) => text_of(f),
        None if map.get("value").is_some_and(is_micro_op_list) => crate::checker::TXN_F.to_string(),
        None => String::new(),
    };
    if let Some(index) = map.get("index").filter(|i| !i.is_u64()) {
        return Err(bad(format!(
            "an :index must be a whole number ≥ 0, found {}",
            describe(index)
        )));
    }
    if let Some(f) = map
        .get("f")
        .filter(|f| !(f.is_string() || f.is_number() || f.is_null()))
    {
        return Err(bad(format!(
            "an :f must be a name such as :read, found {}",
            describe(f)
        )));
    }
    let (kind, process) = match map.get("process") {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(process) => (kind, Some(process)),
            None => return Err(bad(format!("a :process must be a whole number ≥ 0 or a name, not {n}"))),
        },
        None => (kind, Some(anonymous)),
        Some(Value::String(name)) if name.trim().parse::<i64>().is_ok() => {
            return Err(bad(format!(
                "a :process of {name:?} is text: a client's process is a number (write {} without quotes), a \
                 named process such as :nemesis a name",
                name.trim()
            )))
        }
        // :nemesis (or any named process) is not a client.
        Some(Value::String(_)) => (EventKind::Nemesis, None),
        Some(other) => {
            return Err(bad(format!(
                "a :process must be a whole number ≥ 0 (a client) or a name such as :nemesis, found {}",
                describe(other)
            )))
        }
    };
    let mut value = map.remove("value").unwrap_or(Value::Null);
    let mut key = map.get("key").map(text_of);
    if independent && kind.is_client() {
        match value {
            Value::Array(mut tuple) if tuple.len() == 2 => {
                value = tuple.pop().unwrap_or(Value::Null);
                key = tuple.pop().map(|k| text_of(&k));
            }
            other => {
                let shown = match &other {
                    Value::Array(items) => format!("a list of {} values", items.len()),
                    other => other.to_string(),
                };
                return Err(bad(format!(
                    "expected an independent [key value] tuple, as every invocation of this history has, found {shown}; \
                     refusing to guess which part is the key"
                )));
            }
        }
    }
    let mut error = map.get("error").map(text_of);
    if failed_cas_mismatch && kind == EventKind::Fail && f == "cas" {
        error = Some(CAS_MISMATCH_ERROR.to_string());
    }
    let time_ns = match map.get("time") {
        None | Some(Value::Null) => position,
        Some(time) => time.as_u64().ok_or_else(|| {
            bad(format!(
                "a :time must be a whole number of nanoseconds ≥ 0, found {}",
                describe(time)
            ))
        })?,
    };
    if kind.is_client() && f == crate::checker::TXN_F && !value.is_null() && !is_micro_op_list(&value) {
        let empty = value.as_array().is_some_and(Vec::is_empty);
        if !empty {
            return Err(bad(format!(
                "a :txn op's :value must be a list of micro-ops such as [[:append 1 2] [:r 1 nil]], found {}",
                describe(&value)
            )));
        }
    }
    Ok(Some(Event {
        index: position,
        time_ns,
        kind,
        process,
        worker: process,
        node: None,
        f,
        key,
        value,
        error,
    }))
}
