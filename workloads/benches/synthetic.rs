//! Scale and bounds: a 1,000,000-operation register history (100 keys, 10 processes, 1% `info`) written as JSONL,
//! read back and checked, with the time and peak RSS; and a pathological history (many concurrent `info` writes on
//! one key) that must end `unknown` within its budget.
//!
//! `cargo bench -p faultline-workloads --bench synthetic`

mod support;

use faultline_workloads::{
    check_history, render_text, CheckOptions, Event, EventKind, History, HistoryWriter, ModelKind, Verdict,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::io::BufWriter;
use std::time::{Duration, Instant};
use support::peak_rss_mib;

fn client(kind: EventKind, process: u64, f: &str, key: &str, value: Value) -> Event {
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
fn write_history(path: &std::path::Path, ops: usize, keys: usize, processes: usize, info_chance: f64) {
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

fn million_ops() {
    let path = std::env::temp_dir().join(format!("faultline-synthetic-{}.jsonl", std::process::id()));
    let t = Instant::now();
    write_history(&path, 1_000_000, 100, 10, 0.01);
    let generated = t.elapsed();
    let t = Instant::now();
    let history = History::read_jsonl(&path).expect("read the history back");
    let read = t.elapsed();
    let _ = std::fs::remove_file(&path);
    let rss_history = peak_rss_mib();
    let opts = CheckOptions {
        timeout: Duration::from_secs(60),
        ..CheckOptions::default()
    };
    let t = Instant::now();
    let result = check_history(&history, ModelKind::CasRegister, &opts);
    let checked = t.elapsed();
    let cache: u64 = result.keys.iter().map(|k| k.cache_entries).sum();
    println!(
        "1M-op history: {} events, generated in {generated:.2?}, read in {read:.2?}, peak RSS after reading {rss_history:.0} MiB",
        history.events.len()
    );
    println!(
        "1M-op check: verdict {}, {} ops over {} keys, {checked:.2?} (goal < 10 s), {cache} cache entries, peak RSS {:.0} MiB (goal < 1024)",
        result.verdict,
        result.ops,
        result.keys.len(),
        peak_rss_mib()
    );
    assert_eq!(result.verdict, Verdict::Valid, "{}", render_text(&result));
}

/// Many concurrent info writes of distinct values on one key, then reads no order can explain: the search space is
/// every subset of the info writes, so only the budget can end it.
fn pathological() {
    let writers = 40u64;
    let mut events = Vec::new();
    for p in 0..writers {
        events.push(client(EventKind::Invoke, p, "write", "k", Value::from(format!("v{p}"))));
    }
    for p in 0..writers {
        events.push(client(EventKind::Info, p, "write", "k", Value::from(format!("v{p}"))));
    }
    let reader = writers;
    for n in 0..60u64 {
        let v = Value::from(format!("v{}", n % 3));
        events.push(client(EventKind::Invoke, reader, "read", "k", Value::Null));
        events.push(client(EventKind::Ok, reader, "read", "k", v));
    }
    for (i, e) in events.iter_mut().enumerate() {
        e.index = i as u64;
        e.time_ns = i as u64;
    }
    let history = History {
        events,
        truncated_tail: false,
    };
    for (timeout, budget_mib) in [(Duration::from_secs(5), 4096u64), (Duration::from_secs(60), 256)] {
        let opts = CheckOptions {
            timeout,
            memory_budget_bytes: budget_mib << 20,
            ..CheckOptions::default()
        };
        let t = Instant::now();
        let result = check_history(&history, ModelKind::CasRegister, &opts);
        println!(
            "pathological ({writers} concurrent info writes, budget {timeout:?} / {budget_mib} MiB): {} after {:.2?}: {}",
            result.verdict,
            t.elapsed(),
            result.reason
        );
        assert_eq!(result.verdict, Verdict::Unknown);
    }
    println!("peak RSS so far {:.0} MiB", peak_rss_mib());
}

fn main() {
    // The 1M-op check first, so that its peak RSS is its own.
    million_ops();
    pathological();
}
