//! Property tests of the log checker: histories of a correct sequential log, with random concurrency, `info` and
//! `fail` appends and paged final reads, are always clean under every promise; each injected anomaly (an acknowledged
//! entry dropped from a final read, a duplicated payload, two offsets swapped in one read, a phantom, a stale read) is
//! always reported.

#[path = "support/log_generate.rs"]
mod log_generate;

use faultline_workloads::{
    check_log, AnomalyKind, Durability, EventKind, History, LogCheckOptions, LogCheckResult, Verdict,
};
use log_generate::{log_history, Generated, LogShape};
use proptest::prelude::*;
use proptest::sample::Index;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Map, Value};

fn shape() -> impl Strategy<Value = LogShape> {
    (
        1usize..5,
        1usize..4,
        5usize..80,
        1usize..3,
        0.0f64..0.3,
        0.0f64..0.15,
        1u64..10,
        1u64..25,
    )
        .prop_map(
            |(producers, consumers, appends, logs, info_chance, fail_chance, read_limit_max, final_page)| LogShape {
                producers,
                consumers,
                appends,
                logs,
                info_chance,
                fail_chance,
                rewind_chance: 0.1,
                read_limit_max,
                final_reads: 2,
                final_page,
            },
        )
}

fn generate(seed: u64, shape: &LogShape) -> Generated {
    log_history(&mut StdRng::seed_from_u64(seed), shape)
}

fn strict() -> LogCheckOptions {
    LogCheckOptions::default()
}

/// The `ok` read completion at `pos`, as a JSON object to corrupt.
fn read_at(history: &mut History, pos: usize) -> &mut Map<String, Value> {
    history.events[pos]
        .value
        .as_object_mut()
        .expect("an ok read's value is an object")
}

fn entries(read: &mut Map<String, Value>) -> &mut Vec<Value> {
    read.get_mut("entries")
        .and_then(Value::as_array_mut)
        .expect("a read lists entries")
}

/// Adds `[end, payload]` to the read at `pos` and moves its end past it.
fn add_at_end(history: &mut History, pos: usize, payload: Value) {
    let read = read_at(history, pos);
    let end = read["end"].as_u64().expect("a read's end");
    entries(read).push(json!([end, payload]));
    read.insert("end".into(), json!(end + 1));
}

/// The last page of the last final read of a log with at least one entry.
fn last_final_page(generated: &Generated, pick: &Index) -> Option<usize> {
    let finals: Vec<_> = generated.reads.iter().filter(|r| r.is_final).collect();
    let chosen = finals[pick.index(finals.len())];
    let log_end = generated
        .appends
        .iter()
        .filter(|a| a.log == chosen.log && a.offset.is_some())
        .count();
    (log_end > 0).then(|| {
        finals
            .iter()
            .rfind(|r| r.log == chosen.log)
            .expect("a final read")
            .complete_pos
    })
}

fn reported(result: &LogCheckResult, kinds: &[AnomalyKind], payload: &Value) -> bool {
    result
        .anomalies
        .iter()
        .any(|a| kinds.contains(&a.kind) && a.payloads.contains(payload))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn given_a_correct_log_history_when_checked_under_any_promise_should_be_valid(seed in any::<u64>(), shape in shape()) {
        let generated = generate(seed, &shape);
        for linearizable_reads in [true, false] {
            for durability in [Durability::QuorumDisk, Durability::QuorumMemory] {
                let options = LogCheckOptions { linearizable_reads, durability };
                let result = check_log(&generated.history, &options);
                prop_assert_eq!(result.verdict, Verdict::Valid, "{:#?}", result);
            }
        }
    }

    #[test]
    fn given_an_acknowledged_entry_dropped_from_a_final_read_when_checked_should_report_it_lost(
        seed in any::<u64>(), shape in shape(), pick in any::<Index>()
    ) {
        let mut generated = generate(seed, &shape);
        let acked: Vec<_> = generated.appends.iter().filter(|a| a.kind == EventKind::Ok).cloned().collect();
        prop_assume!(!acked.is_empty());
        let victim = &acked[pick.index(acked.len())];
        let offset = victim.offset.expect("an acknowledged append took effect");
        let page = generated.reads.iter().find(|r| {
            r.is_final && r.log == victim.log && {
                let value = &generated.history.events[r.complete_pos].value;
                value["entries"].as_array().is_some_and(|e| e.iter().any(|e| e[0] == json!(offset)))
            }
        });
        let pos = page.expect("the final reads cover every entry").complete_pos;
        let read = read_at(&mut generated.history, pos);
        let list = entries(read);
        let i = list.iter().position(|e| e[0] == json!(offset)).expect("the entry");
        let last = i + 1 == list.len();
        list.remove(i);
        if last {
            read.insert("end".into(), json!(offset));
        }
        let result = check_log(&generated.history, &strict());
        prop_assert_eq!(result.verdict, Verdict::Invalid);
        prop_assert!(reported(&result, &[AnomalyKind::Lost], &json!(victim.payload)), "{:#?}", result);

        let relaxed = LogCheckOptions { linearizable_reads: true, durability: Durability::QuorumMemory };
        prop_assert_eq!(check_log(&generated.history, &relaxed).verdict, Verdict::Unknown);
    }

    #[test]
    fn given_a_payload_duplicated_in_a_final_read_when_checked_should_report_it(
        seed in any::<u64>(), shape in shape(), pick in any::<Index>(), which in any::<Index>()
    ) {
        let mut generated = generate(seed, &shape);
        let pos = last_final_page(&generated, &pick);
        prop_assume!(pos.is_some());
        let pos = pos.expect("checked");
        let log = generated.history.events[pos].key.clone().unwrap_or_default();
        let landed: Vec<_> = generated.appends.iter().filter(|a| a.log == log && a.offset.is_some()).collect();
        let payload = json!(landed[which.index(landed.len())].payload);
        add_at_end(&mut generated.history, pos, payload.clone());
        let result = check_log(&generated.history, &strict());
        prop_assert_eq!(result.verdict, Verdict::Invalid);
        prop_assert!(reported(&result, &[AnomalyKind::Duplicated], &payload), "{:#?}", result);
    }

    #[test]
    fn given_two_offsets_swapped_in_one_read_when_checked_should_report_it(
        seed in any::<u64>(), shape in shape(), pick in any::<Index>(), a in any::<Index>(), b in any::<Index>()
    ) {
        let mut generated = generate(seed, &shape);
        let candidates: Vec<usize> = generated
            .reads
            .iter()
            .filter(|r| r.kind == EventKind::Ok)
            .map(|r| r.complete_pos)
            .filter(|&pos| generated.history.events[pos].value["entries"].as_array().is_some_and(|e| e.len() >= 2))
            .collect();
        prop_assume!(!candidates.is_empty());
        let pos = candidates[pick.index(candidates.len())];
        let list = entries(read_at(&mut generated.history, pos));
        let (i, mut j) = (a.index(list.len()), b.index(list.len()));
        if i == j {
            j = (j + 1) % list.len();
        }
        let (pi, pj) = (list[i][1].clone(), list[j][1].clone());
        list[i][1] = pj;
        list[j][1] = pi.clone();
        let result = check_log(&generated.history, &strict());
        prop_assert_eq!(result.verdict, Verdict::Invalid);
        prop_assert!(reported(&result, &[AnomalyKind::Inconsistent, AnomalyKind::Lost], &pi), "{:#?}", result);
    }

    #[test]
    fn given_a_phantom_in_a_final_read_when_checked_should_report_it(
        seed in any::<u64>(), shape in shape(), pick in any::<Index>()
    ) {
        let mut generated = generate(seed, &shape);
        let pos = last_final_page(&generated, &pick);
        prop_assume!(pos.is_some());
        let phantom = json!("nobody-appended-this");
        add_at_end(&mut generated.history, pos.expect("checked"), phantom.clone());
        let result = check_log(&generated.history, &strict());
        prop_assert_eq!(result.verdict, Verdict::Invalid);
        prop_assert!(reported(&result, &[AnomalyKind::Phantom], &phantom), "{:#?}", result);
    }

    #[test]
    fn given_a_read_made_stale_when_reads_are_linearizable_should_report_it(
        seed in any::<u64>(), shape in shape(), pick in any::<Index>()
    ) {
        let mut generated = generate(seed, &shape);
        // A consumer read and the highest offset acknowledged on its log before it began.
        let targets: Vec<(usize, u64, String)> = generated
            .reads
            .iter()
            .filter(|r| r.kind == EventKind::Ok && !r.is_final)
            .filter_map(|r| {
                let before = generated.appends.iter().filter(|a| {
                    a.log == r.log && a.kind == EventKind::Ok && a.complete_pos.is_some_and(|c| c < r.invoke_pos)
                });
                let newest = before.max_by_key(|a| a.offset)?;
                Some((r.complete_pos, newest.offset?, newest.payload.clone()))
            })
            .collect();
        prop_assume!(!targets.is_empty());
        let (pos, offset, payload) = targets[pick.index(targets.len())].clone();
        let read = read_at(&mut generated.history, pos);
        read.insert("end".into(), json!(offset));
        entries(read).retain(|e| e[0].as_u64().is_some_and(|o| o < offset));
        let result = check_log(&generated.history, &strict());
        prop_assert_eq!(result.verdict, Verdict::Invalid);
        prop_assert!(reported(&result, &[AnomalyKind::Stale, AnomalyKind::Lost], &json!(payload)), "{:#?}", result);
    }
}
