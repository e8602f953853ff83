//! Scale and bounds: a 1,000,000-operation register history (100 keys, 10 processes, 1% `info`) written as JSONL,
//! read back and checked, with the time and peak RSS; and a pathological history (many concurrent `info` writes on
//! one key) that must end `unknown` within its budget.
//!
//! `cargo bench -p faultline-workloads --bench synthetic`

#[path = "support/register_history.rs"]
mod register_history;
mod support;

use faultline_workloads::{check_history, render_text, CheckOptions, EventKind, History, ModelKind, Verdict};
use register_history::{client, write_history};
use serde_json::Value;
use std::time::{Duration, Instant};
use support::peak_rss_mib;

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
