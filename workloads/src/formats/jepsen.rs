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

use super::edn::{EdnError, EdnReader, Form};
use crate::history::{Event, EventKind};
use crate::models::cas_register::CAS_MISMATCH_ERROR;
use serde_json::{Map, Value};
use std::borrow::Cow;

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

/// Reads an EDN history into events: one op map per line, or maps inside a top-level vector.
///
/// Each op map becomes its event as soon as it is read ([`EdnStream`]), its fields taken from the text without
/// building the map, so a large history never exists as maps too. What that cannot settle alone, it leaves to the
/// reading of [`read_edn_ops`] and [`to_events`], which holds every map but says exactly what is wrong and where: a
/// file with any error, or any form other than op maps, op maps in a vector and tagged op maps
/// (`#jepsen.history.Op{...}`).
pub(crate) fn read_edn_history(text: &str) -> Result<Vec<Event>, OpError> {
    // Jepsen `independent` histories split their tuples as they are read; a history that turns out otherwise is
    // read again as it is.
    let streamed = EdnStream::read(text, true).or_else(|| EdnStream::read(text, false));
    match streamed {
        Some(events) => Ok(events),
        None => read_edn_ops(text).and_then(|ops| to_events(ops, false)),
    }
}

/// Reads every op map of an EDN history: one map per line, or maps inside a top-level vector. Each op is named at
/// the line and column where it starts.
pub(crate) fn read_edn_ops(text: &str) -> Result<Vec<RawOp>, OpError> {
    let mut reader = EdnReader::new(text, 1);
    let mut ops = Vec::new();
    loop {
        reader.skip_blank();
        let (line, column) = reader.position();
        if let Some(b'[' | b'(') = reader.peek() {
            // The ops of a history vector, each at its own place; an item that is no op map is reported once the
            // whole vector has been read, as a syntax error further in comes first.
            let mut not_an_op = None;
            let close = if reader.peek() == Some(b'[') { b']' } else { b')' };
            reader.items(close, 0, |r, depth| {
                r.skip_blank();
                let (line, column) = r.position();
                match r.value(depth)? {
                    Value::Object(map) => ops.push(RawOp { map, line, column }),
                    other => {
                        not_an_op.get_or_insert_with(|| OpError {
                            line,
                            column,
                            message: format!("expected an op map inside the history vector, found {other}"),
                        });
                    }
                }
                Ok::<_, OpError>(())
            })?;
            match not_an_op {
                Some(e) => return Err(e),
                None => continue,
            }
        }
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

/// Why [`EdnStream`] stopped: the history needs the exact reading (or, for a guessed `independent` history, the
/// reading as it is).
struct Bail;

impl From<EdnError> for Bail {
    fn from(_: EdnError) -> Self {
        Bail
    }
}

impl From<OpError> for Bail {
    fn from(_: OpError) -> Self {
        Bail
    }
}

/// The fields of one EDN op map that a reading looks at, read in place.
#[derive(Default)]
struct EdnOp<'t> {
    type_: Option<Form<'t>>,
    f: Option<Form<'t>>,
    process: Option<Form<'t>>,
    time: Option<Form<'t>>,
    index: Option<Form<'t>>,
    key: Option<Form<'t>>,
    error: Option<Form<'t>>,
    value: Option<Value>,
}

impl<'t> EdnOp<'t> {
    /// Reads the value of the entry `key` (the last of a repeated key counts, as in a map).
    fn entry(&mut self, reader: &mut EdnReader<'t>, key: Form<'t>, depth: usize) -> Result<(), EdnError> {
        // A map's keys are their text: `:type`, `type` and `"type"` are one key.
        let name: Cow<'_, str> = match &key {
            Form::Name(name) => Cow::Borrowed(*name),
            Form::Value(Value::String(name)) => Cow::Borrowed(name.as_str()),
            Form::Value(other) => Cow::Owned(other.to_string()),
        };
        let slot = match name.as_ref() {
            "value" => {
                self.value = Some(reader.value(depth)?);
                return Ok(());
            }
            "type" => &mut self.type_,
            "f" => &mut self.f,
            "process" => &mut self.process,
            "time" => &mut self.time,
            "index" => &mut self.index,
            "key" => &mut self.key,
            "error" => &mut self.error,
            _ => {
                reader.value(depth)?;
                return Ok(());
            }
        };
        *slot = Some(reader.form(depth)?);
        Ok(())
    }

    fn fields(&self) -> OpFields<'_> {
        fn field<'a>(form: &'a Option<Form<'_>>) -> Option<Field<'a>> {
            form.as_ref().map(Field::of_form)
        }
        OpFields {
            type_: field(&self.type_),
            f: field(&self.f),
            process: field(&self.process),
            time: field(&self.time),
            index: field(&self.index),
            key: field(&self.key),
            error: field(&self.error),
        }
    }
}

/// Events straight from the op maps of an EDN history, one map at a time.
struct EdnStream {
    /// Split `independent` tuples as they come: the history is guessed to be one until an op shows otherwise.
    split: bool,
    events: Vec<Event>,
    /// Op maps read, the position of the next.
    ops: u64,
    independence: Independence,
    /// The largest client process named.
    max_process: Option<u64>,
    /// The events whose op names no process.
    anonymous: Vec<usize>,
}

impl EdnStream {
    /// The events of the history, or `None` when it needs another reading (see [`read_edn_history`]).
    fn read(text: &str, split: bool) -> Option<Vec<Event>> {
        let mut stream = EdnStream {
            split,
            events: Vec::new(),
            ops: 0,
            independence: Independence::default(),
            max_process: None,
            anonymous: Vec::new(),
        };
        let mut reader = EdnReader::new(text, 1);
        loop {
            reader.skip_blank();
            let read = match reader.peek() {
                None => break,
                Some(open @ (b'[' | b'(')) => {
                    let close = if open == b'[' { b']' } else { b')' };
                    reader.items(close, 0, |reader, depth| stream.op(reader, depth))
                }
                Some(_) => stream.op(&mut reader, 0),
            };
            read.ok()?;
        }
        stream.finish()
    }

    /// Reads the op map (or tagged op map) that starts at the next non-blank byte, nested `depth` deep.
    fn op<'t>(&mut self, reader: &mut EdnReader<'t>, depth: usize) -> Result<(), Bail> {
        reader.skip_blank();
        // `#jepsen.history.Op{...}`: the tag is dropped and the map read one level deeper.
        let depth = if reader.skip_tag() {
            reader.skip_blank();
            depth + 1
        } else {
            depth
        };
        if reader.peek() != Some(b'{') {
            return Err(Bail);
        }
        let mut op = EdnOp::default();
        reader.map_entries(depth, |reader, key, depth| op.entry(reader, key, depth))?;
        let value = op.value.take();
        let fields = op.fields();
        self.independence.observe(&fields, value.as_ref());
        if let Some(process) = fields.process.and_then(Field::as_u64) {
            self.max_process = Some(self.max_process.map_or(process, |max| max.max(process)));
        }
        if (self.split && self.independence.ruled_out) || fields.type_.is_none() {
            return Err(Bail);
        }
        let reading = Reading {
            position: self.ops,
            independent: self.split,
            failed_cas_mismatch: false,
            // Known at the end: see `finish`.
            anonymous: 0,
        };
        self.ops += 1;
        if let Some(event) = to_event(&fields, value.unwrap_or(Value::Null), (0, 0), &reading)? {
            if fields.process.is_none() {
                self.anonymous.push(self.events.len());
            }
            self.events.push(event);
        }
        Ok(())
    }

    fn finish(self) -> Option<Vec<Event>> {
        let EdnStream {
            split,
            mut events,
            independence,
            max_process,
            anonymous,
            ..
        } = self;
        let anonymous_process = max_process.map_or(0, |max| max + 1);
        for i in anonymous {
            events[i].process = Some(anonymous_process);
            events[i].worker = Some(anonymous_process);
        }
        match (split, independence.holds()) {
            (true, true) | (false, false) => {}
            // Tuples split in a history that turned out to have no invocation to show it is `independent`.
            (true, false) => return None,
            // Not guessed, as the guess failed: the tuples are split now.
            (false, true) => {
                for event in events.iter_mut().filter(|e| e.kind.is_client()) {
                    match std::mem::take(&mut event.value) {
                        Value::Array(mut tuple) if tuple.len() == 2 => {
                            event.value = tuple.pop().unwrap_or(Value::Null);
                            event.key = tuple.pop().map(|key| match key {
                                Value::String(key) => key,
                                other => text_of(&other),
                            });
                        }
                        _ => return None,
                    }
                    if txn_value_error(event.kind, &event.f, &event.value).is_some() {
                        return None;
                    }
                }
            }
        }
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        Some(events)
    }
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
        // As JSON writes them, without going through its formatter: `independent` keys are mostly numbers.
        Value::Number(n) if n.is_i64() => n.as_i64().unwrap_or_default().to_string(),
        Value::Number(n) if n.is_u64() => n.as_u64().unwrap_or_default().to_string(),
        other => other.to_string(),
    }
}

/// One field of an op map as the reading sees it: a name read in place from EDN (`:invoke`), which stands for the
/// JSON string it spells, or any value.
#[derive(Clone, Copy)]
enum Field<'a> {
    Name(&'a str),
    Value(&'a Value),
}

impl<'a> Field<'a> {
    fn of_form(form: &'a Form<'_>) -> Field<'a> {
        match form {
            Form::Name(name) => Field::Name(name),
            Form::Value(value) => Field::Value(value),
        }
    }

    fn as_str(self) -> Option<&'a str> {
        match self {
            Field::Name(name) => Some(name),
            Field::Value(value) => value.as_str(),
        }
    }

    fn as_u64(self) -> Option<u64> {
        match self {
            Field::Name(_) => None,
            Field::Value(value) => value.as_u64(),
        }
    }

    fn value(self) -> Cow<'a, Value> {
        match self {
            Field::Name(name) => Cow::Owned(Value::String(name.to_string())),
            Field::Value(value) => Cow::Borrowed(value),
        }
    }

    fn text(self) -> String {
        match self {
            Field::Name(name) => name.to_string(),
            Field::Value(value) => text_of(value),
        }
    }
}

/// The fields of an op map that a reading looks at, but its `:value`.
#[derive(Default)]
struct OpFields<'a> {
    type_: Option<Field<'a>>,
    f: Option<Field<'a>>,
    process: Option<Field<'a>>,
    time: Option<Field<'a>>,
    index: Option<Field<'a>>,
    key: Option<Field<'a>>,
    error: Option<Field<'a>>,
}

impl<'a> OpFields<'a> {
    fn of_map(map: &'a Map<String, Value>) -> OpFields<'a> {
        let field = |name: &str| map.get(name).map(Field::Value);
        OpFields {
            type_: field("type"),
            f: field("f"),
            process: field("process"),
            time: field("time"),
            index: field("index"),
            key: field("key"),
            error: field("error"),
        }
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

/// Whether a history is one of Jepsen's `independent` histories, which wrap every value as `[key value]`, learnt one
/// op at a time. Recognised when no op has `:key` and every register invocation's value is such a tuple (a cas's
/// inner value being `[from to]`).
#[derive(Default)]
struct Independence {
    /// An op showed the history is not one.
    ruled_out: bool,
    /// An invocation showed a tuple.
    seen: bool,
}

impl Independence {
    fn observe(&mut self, op: &OpFields, value: Option<&Value>) {
        if self.ruled_out {
            return;
        }
        if op.key.is_some() {
            self.ruled_out = true;
            return;
        }
        if op.type_.and_then(Field::as_str) != Some("invoke") {
            return;
        }
        let value = value.unwrap_or(&Value::Null);
        // A transaction of two micro-ops is a pair too, but not a tuple.
        let tuple = !is_micro_op_list(value)
            && match op.f.and_then(Field::as_str) {
                Some("cas") => is_pair(value) && value.get(1).is_some_and(is_pair),
                Some(_) => is_pair(value),
                None => false,
            };
        if tuple {
            self.seen = true;
        } else {
            self.ruled_out = true;
        }
    }

    fn holds(&self) -> bool {
        self.seen && !self.ruled_out
    }
}

/// Turns op maps into events. `failed_cas_mismatch` marks `:fail :cas` as "ran and found another value" (see
/// [`CAS_MISMATCH_ERROR`]), as Porcupine reads Jepsen's etcd logs.
pub(crate) fn to_events(ops: Vec<RawOp>, failed_cas_mismatch: bool) -> Result<Vec<Event>, OpError> {
    let mut independence = Independence::default();
    for op in &ops {
        independence.observe(&OpFields::of_map(&op.map), op.map.get("value"));
    }
    let independent = independence.holds();
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
        let RawOp { mut map, line, column } = raw;
        if !map.contains_key("type") {
            return Err(OpError {
                line,
                column,
                message: format!("op map without :type: {}", Value::Object(map)),
            });
        }
        let value = map.remove("value").unwrap_or(Value::Null);
        if let Some(event) = to_event(&OpFields::of_map(&map), value, (line, column), &reading)? {
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

/// Why a client op's value is no transaction although its `:f` says it is one.
fn txn_value_error(kind: EventKind, f: &str, value: &Value) -> Option<String> {
    let wrong = kind.is_client()
        && f == crate::checker::TXN_F
        && !value.is_null()
        && !is_micro_op_list(value)
        && !value.as_array().is_some_and(Vec::is_empty);
    wrong.then(|| {
        format!(
            "a :txn op's :value must be a list of micro-ops such as [[:append 1 2] [:r 1 nil]], found {}",
            describe(value)
        )
    })
}

/// The event of the op whose fields are `op` and whose `:value` is `value`, which starts at `at` (line, column);
/// `None` for a non-operation such as `:sleep`.
fn to_event(op: &OpFields, mut value: Value, at: (usize, usize), reading: &Reading) -> Result<Option<Event>, OpError> {
    let Reading {
        position,
        independent,
        failed_cas_mismatch,
        anonymous,
    } = *reading;
    let (line, column) = at;
    let bad = |message: String| OpError { line, column, message };
    let kind = match op.type_.and_then(Field::as_str) {
        Some("invoke") => EventKind::Invoke,
        Some("ok") => EventKind::Ok,
        Some("fail") => EventKind::Fail,
        Some("info") => EventKind::Info,
        // Jepsen also logs :sleep, :log and similar non-operations.
        Some(_) => return Ok(None),
        None => {
            return Err(bad(match op.type_ {
                Some(other) => format!(
                    "a :type must be :invoke, :ok, :fail or :info, found {}",
                    describe(&other.value())
                ),
                None => "op map without :type".to_string(),
            }))
        }
    };
    // Elle reads a transaction from `:value` whatever `:f` says, and its own test histories leave `:f` out.
    let f = match op.f {
        Some(f) => f.text(),
        None if is_micro_op_list(&value) => crate::checker::TXN_F.to_string(),
        None => String::new(),
    };
    if let Some(index) = op.index.filter(|i| i.as_u64().is_none()) {
        return Err(bad(format!(
            "an :index must be a whole number ≥ 0, found {}",
            describe(&index.value())
        )));
    }
    if let Some(f) =
        op.f.map(Field::value)
            .filter(|f| !(f.is_string() || f.is_number() || f.is_null()))
    {
        return Err(bad(format!(
            "an :f must be a name such as :read, found {}",
            describe(&f)
        )));
    }
    let (kind, process) = match op.process {
        Some(Field::Value(Value::Number(n))) => match n.as_u64() {
            Some(process) => (kind, Some(process)),
            None => return Err(bad(format!("a :process must be a whole number ≥ 0 or a name, not {n}"))),
        },
        None => (kind, Some(anonymous)),
        Some(field @ (Field::Name(_) | Field::Value(Value::String(_)))) => {
            let name = field.as_str().unwrap_or_default();
            if name.trim().parse::<i64>().is_ok() {
                return Err(bad(format!(
                    "a :process of {name:?} is text: a client's process is a number (write {} without quotes), a \
                     named process such as :nemesis a name",
                    name.trim()
                )));
            }
            // :nemesis (or any named process) is not a client.
            (EventKind::Nemesis, None)
        }
        Some(Field::Value(other)) => {
            return Err(bad(format!(
                "a :process must be a whole number ≥ 0 (a client) or a name such as :nemesis, found {}",
                describe(other)
            )))
        }
    };
    let mut key = op.key.map(Field::text);
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
    let mut error = op.error.map(Field::text);
    if failed_cas_mismatch && kind == EventKind::Fail && f == "cas" {
        error = Some(CAS_MISMATCH_ERROR.to_string());
    }
    let time_ns = match op.time {
        None | Some(Field::Value(Value::Null)) => position,
        Some(time) => time.as_u64().ok_or_else(|| {
            bad(format!(
                "a :time must be a whole number of nanoseconds ≥ 0, found {}",
                describe(&time.value())
            ))
        })?,
    };
    if let Some(message) = txn_value_error(kind, &f, &value) {
        return Err(bad(message));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading that holds every op map, against which the streamed one is checked.
    fn exact(text: &str) -> Result<Vec<Event>, OpError> {
        read_edn_ops(text).and_then(|ops| to_events(ops, false))
    }

    /// Streamed without another reading, with the events the exact reading gives.
    fn assert_streamed(text: &str, split: bool) -> Vec<Event> {
        let streamed = EdnStream::read(text, split).unwrap_or_else(|| panic!("not streamed (split {split}):\n{text}"));
        assert_eq!(streamed, exact(text).expect("good input"), "{text}");
        assert_eq!(read_edn_history(text).expect("good input"), streamed);
        streamed
    }

    #[test]
    fn given_op_maps_in_every_usual_layout_when_read_should_stream_them_as_the_exact_reading_does() {
        let ops = [
            "{:type :invoke, :f :write, :value 3, :process 0, :time 10, :index 0}",
            "{:type :ok, :f :write, :value 3, :process 0, :time 20, :index 1}",
            "{:type :info, :f :start, :value nil, :process :nemesis, :time 25}",
            "#jepsen.history.Op{:type :invoke, :f :read, :value nil, :process 1, :time 30, :index 2}",
            "{:type :sleep, :value 1, :process 1}",
            "{:type :ok, :f :read, :value 3, :process 1, \"time\" 40N, :node \"n1\", #_ :gone :index 3}",
        ];
        for text in [
            ops.join("\n"),
            format!("; a history\n{}\n", ops.join("\n\n")),
            format!("[{}]", ops.join("\n ")),
            format!("({})", ops.join(", ")),
        ] {
            let events = assert_streamed(&text, false);
            assert_eq!(events.len(), 5, "the :sleep is no operation");
            assert_eq!(events[2].kind, EventKind::Nemesis);
            assert_eq!(events[4].time_ns, 40);
        }
    }

    #[test]
    fn given_independent_tuples_when_read_should_split_them_as_they_come() {
        let text = "{:type :invoke, :f :cas, :value [3 [1 2]], :process 0}\n\
                    {:type :info, :f :kill, :process :nemesis}\n\
                    {:type :fail, :f :cas, :value [3 [1 2]], :process 0}\n\
                    {:type :invoke, :f :read, :value [:x nil], :process 1}\n";
        let events = assert_streamed(text, true);
        assert_eq!(events[0].key.as_deref(), Some("3"));
        assert_eq!(events[0].value, serde_json::json!([1, 2]));
        assert_eq!(events[3].key.as_deref(), Some("x"));
        // Read without splitting first, the tuples are split at the end.
        assert_eq!(EdnStream::read(text, false).as_ref(), Some(&events));
    }

    #[test]
    fn given_pairs_that_turn_out_no_tuples_when_read_should_keep_them_whole() {
        // The first invocation looks like a tuple, the second shows the history is not `independent`.
        let text =
            "{:type :invoke, :f :write, :value [1 2], :process 0}\n{:type :invoke, :f :write, :value 3, :process 1}\n";
        assert!(EdnStream::read(text, true).is_none());
        let events = assert_streamed(text, false);
        assert_eq!(events[0].value, serde_json::json!([1, 2]));
        assert_eq!(read_edn_history(text).unwrap(), events);
    }

    #[test]
    fn given_ops_without_a_process_when_read_should_give_them_one_past_every_named_one() {
        let text =
            "{:type :invoke, :value [[:append 1 2]]}\n{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 7}\n";
        let events = assert_streamed(text, false);
        assert_eq!(events[0].process, Some(8));
        assert_eq!(events[0].f, "txn");
    }

    #[test]
    fn given_a_bad_op_when_read_should_name_the_line_and_column_where_it_starts() {
        let cases = [
            // After an op on the line before (not where that op ended).
            (
                "{:type :invoke, :f :read, :process 0, :time 1}\n  {:type :ok, :f :read, :process 0, :time \"2\"}\n",
                (2, 3),
                "a :time must be",
            ),
            // Inside a history vector, at the op itself.
            (
                "[{:type :invoke, :f :read, :process 0}\n {:type :ok, :f :read, :process {:id 0}}]",
                (2, 2),
                "a :process must be",
            ),
            (
                "[{:type :invoke, :f :read, :process 0}\n ; a comment\n :read]",
                (3, 2),
                "expected an op map inside the history vector, found \"read\"",
            ),
            (
                "; a history\n\n{:process 0 :f :read}\n",
                (3, 1),
                "op map without :type: {",
            ),
            // A syntax error anywhere comes before a wrong field.
            (
                "{:type :ok, :f :read, :process \"0\"}\n{:type :ok, :value [1 2}\n",
                (2, 24),
                "unexpected '}'",
            ),
            // So does one further inside a history vector than an item that is no op map.
            ("[3\n {:type :ok, :value (1 2]}]", (2, 25), "unexpected ']'"),
        ];
        for (text, at, message) in cases {
            let e = read_edn_history(text).expect_err(text);
            assert_eq!((e.line, e.column), at, "{}: {text}", e.message);
            assert!(e.message.starts_with(message), "{}: {text}", e.message);
        }
    }
}
