//! Scale of the transactional checker: list-append histories (10 processes, 4 micro-ops per transaction, half
//! appends and half reads, over 5 keys that rotate every 100 transactions, 1% `fail` and 1% `info`) made by a
//! simulated strictly serializable database (every transaction takes effect at one instant inside its overlapping
//! invoke/complete interval), checked against strict-serializable; then the same history with one write skew planted
//! between two concurrent transactions (three read-only ones rewritten), which must be found as the only anomaly, a
//! G2-item cycle of two.
//!
//! Two sizes in one run: the baseline, 100,000 transactions (issue 40's target: within 5 s and 1 GiB on 2 cores),
//! then 1,000,000 (issue 47's: within 10 s and 2 GiB). Prints each check's time, transactions per second and peak
//! RSS (VmHWM, the whole process, history included), and the big run's ratios to the baseline: time per transaction
//! (1.0 is linear scaling) and growth of the peak RSS.
//!
//! `cargo bench -p faultline-workloads --bench txn_check` (`-- N` checks N transactions against a baseline of N/10)

mod support;

use faultline_workloads::txn_check::{
    check_txns, AnomalyClass, ConsistencyModel, EdgeKind, MicroOp, ReadValue, Txn, TxnCheckOptions, TxnCheckResult,
    TxnOutcome,
};
use faultline_workloads::Verdict;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::Instant;
use support::peak_rss_mib;

const PROCESSES: u64 = 10;
const OPS_PER_TXN: usize = 4;
const KEYS_PER_WINDOW: u64 = 5;
const TXNS_PER_WINDOW: usize = 100;
const FAIL_CHANCE: f64 = 0.01;
const INFO_CHANCE: f64 = 0.01;

/// One transaction's interval and the instant it takes effect.
struct Slot {
    process: u64,
    invoke_ns: u64,
    commit_ns: u64,
    complete_ns: u64,
}

/// The intervals: each process runs its transactions one after the other, 50-5,000 µs each, with up to 200 µs
/// between them, so about ten transactions overlap at any time.
fn schedule(rng: &mut StdRng, txns: usize) -> Vec<Slot> {
    let mut slots = Vec::with_capacity(txns);
    let mut clocks = [0u64; PROCESSES as usize];
    for i in 0..txns {
        let process = (i as u64) % PROCESSES;
        let clock = &mut clocks[process as usize];
        let invoke_ns = *clock + rng.gen_range(0..200_000);
        let duration_ns = rng.gen_range(50_000..5_000_000);
        slots.push(Slot {
            process,
            invoke_ns,
            commit_ns: invoke_ns + rng.gen_range(0..duration_ns),
            complete_ns: invoke_ns + duration_ns,
        });
        *clock = invoke_ns + duration_ns;
    }
    slots
}

/// Runs the transactions at their commit instants against an in-memory list store, in commit order; keys come from
/// the window of the commit rank, so the transactions that run together share keys.
fn list_append_history(seed: u64, txns: usize) -> Vec<Txn> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut slots = schedule(&mut rng, txns);
    slots.sort_by_key(|s| s.commit_ns);
    let mut store: HashMap<String, Vec<i64>> = HashMap::new();
    let mut next_value = 0i64;
    let mut history = Vec::with_capacity(txns);
    for (rank, slot) in slots.iter().enumerate() {
        let window = (rank / TXNS_PER_WINDOW) as u64;
        if rank % TXNS_PER_WINDOW == 0 && window >= 2 {
            // Keys two windows back are never touched again.
            for j in 0..KEYS_PER_WINDOW {
                store.remove(&format!("k{}", (window - 2) * KEYS_PER_WINDOW + j));
            }
        }
        let roll: f64 = rng.gen();
        let outcome = if roll < FAIL_CHANCE {
            TxnOutcome::Fail
        } else if roll < FAIL_CHANCE + INFO_CHANCE {
            TxnOutcome::Info
        } else {
            TxnOutcome::Ok
        };
        let applied = match outcome {
            TxnOutcome::Ok => true,
            TxnOutcome::Fail => false,
            TxnOutcome::Info => rng.gen_bool(0.5),
        };
        let mut ops = Vec::with_capacity(OPS_PER_TXN);
        for _ in 0..OPS_PER_TXN {
            let key = format!("k{}", window * KEYS_PER_WINDOW + rng.gen_range(0..KEYS_PER_WINDOW));
            let list = store.entry(key.clone()).or_default();
            if rng.gen_bool(0.5) {
                next_value += 1;
                if applied {
                    list.push(next_value);
                }
                ops.push(MicroOp::Append { key, value: next_value });
            } else {
                let value = (outcome == TxnOutcome::Ok).then(|| ReadValue::List(list.clone()));
                ops.push(MicroOp::Read { key, value });
            }
        }
        history.push(Txn {
            index: 0,
            process: slot.process,
            invoke_time_ns: slot.invoke_ns,
            complete_time_ns: slot.complete_ns,
            positions: None,
            outcome,
            ops,
        });
    }
    history.sort_by_key(|t| (t.invoke_time_ns, t.process));
    for (i, txn) in history.iter_mut().enumerate() {
        txn.index = i as u64;
    }
    history
}

/// Turns three committed read-only transactions near the middle of the history into write skew: two concurrent
/// ones each read the key the other appends to and miss the other's append, and a later one reads both appends, so
/// the version orders are known. The rest of the history stays as it was (read-only transactions wrote nothing
/// anyone read), and the two share no other key, so the skew is the only cycle. Returns the two transactions' indices.
fn plant_write_skew(history: &mut [Txn]) -> (u64, u64) {
    let read_only = |t: &Txn| t.outcome == TxnOutcome::Ok && t.ops.iter().all(|op| matches!(op, MicroOp::Read { .. }));
    let middle = history.len() / 2;
    // The history is sorted by invocation: the transactions overlapping `a` and invoked after it follow it directly.
    let (a, b) = (middle..history.len())
        .filter(|&a| read_only(&history[a]))
        .find_map(|a| {
            let overlapping =
                (a + 1..history.len()).take_while(|&i| history[i].invoke_time_ns < history[a].complete_time_ns);
            overlapping
                .filter(|&i| read_only(&history[i]) && history[i].process != history[a].process)
                .map(|b| (a, b))
                .next()
        })
        .expect("two overlapping read-only transactions");
    let after = history[a].complete_time_ns.max(history[b].complete_time_ns);
    let c = (b + 1..history.len())
        .find(|&i| read_only(&history[i]) && history[i].invoke_time_ns > after)
        .expect("a read-only transaction after both");
    let read = |key: &str, items: Vec<i64>| MicroOp::Read {
        key: key.into(),
        value: Some(ReadValue::List(items)),
    };
    let append = |key: &str| MicroOp::Append {
        key: key.into(),
        value: 1,
    };
    history[a].ops = vec![read("skew-x", vec![]), append("skew-y")];
    history[b].ops = vec![read("skew-y", vec![]), append("skew-x")];
    history[c].ops = vec![read("skew-x", vec![1]), read("skew-y", vec![1])];
    (history[a].index, history[b].index)
}

/// Checks `history` `runs` times; returns the last result and the best time in seconds.
fn timed_check(history: &[Txn], options: &TxnCheckOptions, runs: usize) -> (TxnCheckResult, f64, Vec<f64>) {
    let mut times_s = Vec::new();
    let mut result = None;
    for _ in 0..runs {
        let started = Instant::now();
        result = Some(check_txns(history, options).expect("the generated history is well-formed"));
        times_s.push(started.elapsed().as_secs_f64());
    }
    let best_s = times_s.iter().copied().fold(f64::INFINITY, f64::min);
    (result.expect("at least one run"), best_s, times_s)
}

/// What one size measured.
struct Measured {
    txns: usize,
    clean_s: f64,
    skewed_s: f64,
    peak_rss_mib: f64,
}

/// Generates and checks one history of `txns` transactions, clean and with write skew, asserting each verdict.
fn measure(txns: usize) -> Measured {
    let started = Instant::now();
    let mut history = list_append_history(42, txns);
    let values_read: usize = history
        .iter()
        .flat_map(|t| &t.ops)
        .map(|op| match op {
            MicroOp::Read {
                value: Some(ReadValue::List(items)),
                ..
            } => items.len(),
            _ => 0,
        })
        .sum();
    println!(
        "{txns} transactions: generated ({} micro-ops, {values_read} values read) in {:.2} s; peak RSS {:.0} MiB",
        history.len() * OPS_PER_TXN,
        started.elapsed().as_secs_f64(),
        peak_rss_mib()
    );
    let options = TxnCheckOptions::default();
    let (clean, clean_s, runs_s) = timed_check(&history, &options, 3);
    assert_eq!(clean.verdict, Verdict::Valid, "{}", clean.reason);
    println!(
        "  clean: {} in {clean_s:.2} s, best of {runs_s:.2?} ({:.0} txns/s); edges ww {} wr {} rw {} realtime {}; \
         {} info taken as committed; peak RSS {:.0} MiB",
        clean.verdict,
        txns as f64 / clean_s,
        clean.stats.edges[&EdgeKind::Ww],
        clean.stats.edges[&EdgeKind::Wr],
        clean.stats.edges[&EdgeKind::Rw],
        clean.stats.edges[&EdgeKind::Realtime],
        clean.stats.info_committed,
        peak_rss_mib()
    );
    assert_eq!(clean.strongest_model, Some(ConsistencyModel::StrictSerializable));

    let (a, b) = plant_write_skew(&mut history);
    let (skewed, skewed_s, runs_s) = timed_check(&history, &options, 3);
    assert_eq!(skewed.verdict, Verdict::Invalid);
    let classes: Vec<AnomalyClass> = skewed.anomaly_counts.keys().copied().collect();
    assert_eq!(classes, vec![AnomalyClass::G2Item], "{}", skewed.reason);
    let cycle = &skewed.anomalies[&AnomalyClass::G2Item][0];
    let mut members = cycle.txns.clone();
    members.sort_unstable();
    assert_eq!(members, vec![a.min(b), a.max(b)]);
    println!(
        "  write skew: {} in {skewed_s:.2} s, best of {runs_s:.2?} ({:.0} txns/s): {}; strongest models still held: \
         {:?}; peak RSS {:.0} MiB",
        skewed.verdict,
        txns as f64 / skewed_s,
        cycle.explanation,
        skewed
            .strongest_models
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        peak_rss_mib()
    );
    for step in &cycle.cycle {
        println!("    {}", step.sentence);
    }
    Measured {
        txns,
        clean_s,
        skewed_s,
        peak_rss_mib: peak_rss_mib(),
    }
}

/// Whether `value` is within `goal`, as the bench prints it.
fn within(value: f64, goal: f64) -> &'static str {
    if value <= goal {
        "met"
    } else {
        "MISSED"
    }
}

fn main() {
    let txns: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // The baseline first, so that its peak RSS is its own (VmHWM only grows).
    let baseline = measure(txns / 10);
    let big = measure(txns);
    let per_txn = |m: &Measured, s: f64| s / m.txns as f64;
    println!(
        "baseline {} txns: clean {:.2} s (goal 5 s: {}), peak RSS {:.0} MiB (goal 1024: {})",
        baseline.txns,
        baseline.clean_s,
        within(baseline.clean_s, 5.0),
        baseline.peak_rss_mib,
        within(baseline.peak_rss_mib, 1024.0)
    );
    println!(
        "{} txns: clean {:.2} s (goal 10 s: {}), write skew {:.2} s, peak RSS {:.0} MiB (goal 2048: {})",
        big.txns,
        big.clean_s,
        within(big.clean_s.max(big.skewed_s), 10.0),
        big.skewed_s,
        big.peak_rss_mib,
        within(big.peak_rss_mib, 2048.0)
    );
    println!(
        "ratios to the baseline: time per transaction clean x{:.2}, write skew x{:.2} (1.00 = linear); peak RSS x{:.2} \
         for x{:.0} the transactions",
        per_txn(&big, big.clean_s) / per_txn(&baseline, baseline.clean_s),
        per_txn(&big, big.skewed_s) / per_txn(&baseline, baseline.skewed_s),
        big.peak_rss_mib / baseline.peak_rss_mib,
        big.txns as f64 / baseline.txns as f64
    );
}
