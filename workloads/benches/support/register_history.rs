//! A linearizable register history of any size, written straight to faultline JSONL (the `synthetic` and
//! `offline_check` benches).

use faultline_workloads::{Event, EventKind, HistoryWriter};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::io::BufWriter;

/// One client event of `process` (worker `process % 10`), index and time left for the writer.
pub fn client(kind: EventKind, process: u64, f: &str, key: &str, value: Value) -> Event {
    Event {
        index: 0,
        time_ns: 0,
        kind,
        process: Some(process),
        worker: Some(process % 10),
        node: None,
        f: f.into(),
        key: Some(key.into()),
        value,
        error: None,
    }
}

struct Open {
    process: u64,
    f: &'static str,
    key: String,
    value: Value,
    applied: bool,
    info: bool,
    result: Value,
    outcome: EventKind,
}

/// Writes a linearizable history of `ops` operations straight to JSONL (each op takes effect at one moment inside its
/// interval), so generating it holds almost nothing in memory.
pub fn write_history(path: &std::path::Path, ops: usize, keys: usize, processes: usize, info_chance: f64) {
    let mut rng = StdRng::seed_from_u64(7);
    let file = std::fs::File::create(path).expect("create the history file");
    let mut out = HistoryWriter::new(BufWriter::new(file));
    let mut registers: Vec<Value> = vec![Value::Null; keys];
    let mut slots: Vec<Option<Open>> = (0..processes).map(|_| None).collect();
    let mut process_ids: Vec<u64> = (0..processes as u64).collect();
    let mut next_process = processes as u64;
    let (mut invoked, mut written, mut t) = (0usize, 0u64, 0u64);
    let mut emit = |out: &mut HistoryWriter<BufWriter<std::fs::File>>, mut e: Event| {
        t += 1000;
        e.time_ns = t;
        out.append(e).expect("write the history");
    };
    while invoked < ops || slots.iter().any(Option::is_some) {
        let s = rng.gen_range(0..processes);
        match slots[s].take() {
            None if invoked < ops => {
                let k = rng.gen_range(0..keys);
                let key = format!("k{k}");
                let (f, value) = match rng.gen_range(0..10) {
                    0..=4 => ("read", Value::Null),
                    5..=7 => {
                        written += 1;
                        ("write", Value::from(format!("w-{written}")))
                    }
                    _ => {
                        written += 1;
                        let from = registers[k].clone();
                        ("cas", json!([from, format!("w-{written}")]))
                    }
                };
                let process = process_ids[s];
                emit(&mut out, client(EventKind::Invoke, process, f, &key, value.clone()));
                let info = rng.gen_bool(info_chance);
                slots[s] = Some(Open {
                    process,
                    f,
                    key,
                    value,
                    applied: false,
                    info,
                    result: Value::Null,
                    outcome: if info { EventKind::Info } else { EventKind::Ok },
                });
                invoked += 1;
            }
            None => {}
            Some(mut open) if !(open.applied || (open.info && rng.gen_bool(0.5))) => {
                let k: usize = open.key[1..].parse().expect("generated key");
                open.applied = true;
                match open.f {
                    "read" => open.result = registers[k].clone(),
                    "write" => registers[k] = open.value.clone(),
                    _ if open.value[0] == registers[k] => registers[k] = open.value[1].clone(),
                    _ if !open.info => open.outcome = EventKind::Fail,
                    _ => {}
                }
                slots[s] = Some(open);
            }
            Some(open) => {
                let value = if open.f == "read" { open.result } else { open.value };
                let value = if open.outcome == EventKind::Info && open.f == "read" {
                    Value::Null
                } else {
                    value
                };
                emit(&mut out, client(open.outcome, open.process, open.f, &open.key, value));
                if open.outcome == EventKind::Info {
                    process_ids[s] = next_process;
                    next_process += 1;
                }
            }
        }
    }
    out.flush().expect("flush the history");
}
