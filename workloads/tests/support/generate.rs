//! Histories generated from a real sequential execution: each operation takes effect at one moment inside its
//! interval (or never, for `fail` and some `info` operations), so every generated history is linearizable.
#![allow(dead_code)]

use faultline_workloads::{Event, EventKind, History};
use rand::Rng;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Shape of a generated register history.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Concurrent client slots.
    pub processes: usize,
    /// Operations to invoke.
    pub ops: usize,
    /// Keys operations spread over.
    pub keys: usize,
    /// Chance that an operation ends `info` (taking effect or not).
    pub info_chance: f64,
    /// Values written are unique strings (`w-<n>`) when true, else drawn from a small set of integers.
    pub unique_values: bool,
}

/// What one operation did, for corruptions to find targets.
#[derive(Debug, Clone)]
pub struct OpRecord {
    pub invoke_pos: usize,
    pub complete_pos: Option<usize>,
    pub kind: EventKind,
    pub f: &'static str,
    pub key: String,
    /// For writes and applied cas: the value it wrote.
    pub wrote: Option<Value>,
}

struct Open {
    record: usize,
    applied: bool,
    result: Option<Value>,
    outcome: EventKind,
}

fn event(kind: EventKind, process: u64, f: &str, key: &str, value: Value) -> Event {
    Event {
        index: 0,
        time_ns: 0,
        kind,
        process: Some(process),
        worker: Some(process),
        node: Some("n1".into()),
        f: f.into(),
        key: Some(key.into()),
        value,
        error: None,
    }
}

/// Generates a linearizable register history and the record of each operation.
pub fn register_history(rng: &mut impl Rng, shape: &Shape) -> (History, Vec<OpRecord>) {
    let mut events: Vec<Event> = Vec::new();
    let mut records: Vec<OpRecord> = Vec::new();
    let mut registers: HashMap<String, Value> = HashMap::new();
    let mut slots: Vec<(u64, Option<Open>)> = (0..shape.processes).map(|p| (p as u64, None)).collect();
    let mut next_process = shape.processes as u64;
    let mut invoked = 0;
    let mut written = 0u64;
    loop {
        let busy: Vec<usize> = (0..slots.len()).filter(|&s| slots[s].1.is_some()).collect();
        if invoked == shape.ops && busy.is_empty() {
            break;
        }
        let slot = rng.gen_range(0..slots.len());
        match slots[slot].1.take() {
            None if invoked < shape.ops => {
                let key = format!("k{}", rng.gen_range(0..shape.keys));
                let (f, value) = match rng.gen_range(0..3) {
                    0 => ("read", Value::Null),
                    1 => {
                        written += 1;
                        ("write", fresh(rng, shape, written))
                    }
                    _ => {
                        written += 1;
                        let current = registers.get(&key).cloned().unwrap_or(Value::Null);
                        let from = if rng.gen_bool(0.6) {
                            current
                        } else {
                            fresh_small(rng, shape)
                        };
                        ("cas", json!([from, fresh(rng, shape, written)]))
                    }
                };
                let process = slots[slot].0;
                records.push(OpRecord {
                    invoke_pos: events.len(),
                    complete_pos: None,
                    kind: EventKind::Invoke,
                    f,
                    key: key.clone(),
                    wrote: None,
                });
                events.push(event(EventKind::Invoke, process, f, &key, value));
                let outcome = if rng.gen_bool(shape.info_chance) {
                    EventKind::Info
                } else {
                    EventKind::Ok
                };
                slots[slot].1 = Some(Open {
                    record: records.len() - 1,
                    applied: false,
                    result: None,
                    outcome,
                });
                invoked += 1;
            }
            None => {}
            Some(mut open) if !(open.applied || (open.outcome == EventKind::Info && rng.gen_bool(0.3))) => {
                // The operation takes effect now, at one moment inside its interval.
                apply(&mut open, &events, &mut records, &mut registers);
                slots[slot].1 = Some(open);
            }
            Some(open) => {
                complete(open, slot, &mut slots, &mut events, &mut records, &mut next_process);
            }
        }
    }
    for (i, e) in events.iter_mut().enumerate() {
        e.index = i as u64;
        e.time_ns = i as u64 * 10;
    }
    (
        History {
            events,
            truncated_tail: false,
        },
        records,
    )
}

fn fresh(rng: &mut impl Rng, shape: &Shape, n: u64) -> Value {
    if shape.unique_values {
        Value::from(format!("w-{n}"))
    } else {
        fresh_small(rng, shape)
    }
}

fn fresh_small(rng: &mut impl Rng, shape: &Shape) -> Value {
    if shape.unique_values {
        Value::from(format!("never-{}", rng.gen_range(0..1_000_000)))
    } else {
        Value::from(rng.gen_range(0..3))
    }
}

fn apply(open: &mut Open, events: &[Event], records: &mut [OpRecord], registers: &mut HashMap<String, Value>) {
    let record = &mut records[open.record];
    let invoke = &events[record.invoke_pos];
    let current = registers.get(&record.key).cloned().unwrap_or(Value::Null);
    open.applied = true;
    match record.f {
        "read" => open.result = Some(current),
        "write" => {
            registers.insert(record.key.clone(), invoke.value.clone());
            record.wrote = Some(invoke.value.clone());
        }
        _ => {
            let (from, to) = (&invoke.value[0], &invoke.value[1]);
            if *from == current {
                registers.insert(record.key.clone(), to.clone());
                record.wrote = Some(to.clone());
            } else if open.outcome == EventKind::Ok {
                // The cas ran and found another value: it definitely did not take effect.
                open.outcome = EventKind::Fail;
            }
        }
    }
}

fn complete(
    open: Open,
    slot: usize,
    slots: &mut [(u64, Option<Open>)],
    events: &mut Vec<Event>,
    records: &mut [OpRecord],
    next_process: &mut u64,
) {
    let record = &mut records[open.record];
    let invoke = events[record.invoke_pos].clone();
    let value = match (record.f, &open.result) {
        ("read", Some(v)) if open.outcome == EventKind::Ok => v.clone(),
        ("read", _) => Value::Null,
        _ => invoke.value.clone(),
    };
    let process = slots[slot].0;
    record.complete_pos = Some(events.len());
    record.kind = open.outcome;
    events.push(event(open.outcome, process, record.f, &record.key, value));
    if open.outcome == EventKind::Info {
        // A process whose operation's outcome is unknown is retired.
        slots[slot].0 = *next_process;
        *next_process += 1;
    }
}
