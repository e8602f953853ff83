//! Property tests: histories from a real sequential execution are always linearizable; subtle corruptions of them
//! never are.

#[path = "support/generate.rs"]
mod generate;

use faultline_workloads::{check_history, CheckOptions, EventKind, History, ModelKind, Verdict};
use generate::{register_history, OpRecord, Shape};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Value};

fn shape() -> impl Strategy<Value = Shape> {
    (2usize..6, 10usize..80, 1usize..4, 0.0f64..0.2).prop_map(|(processes, ops, keys, info_chance)| Shape {
        processes,
        ops,
        keys,
        info_chance,
        unique_values: true,
    })
}

fn verdict(history: &History) -> Verdict {
    check_history(history, ModelKind::CasRegister, &CheckOptions::default()).verdict
}

fn ok_reads(records: &[OpRecord]) -> impl Iterator<Item = &OpRecord> {
    records.iter().filter(|r| r.f == "read" && r.kind == EventKind::Ok)
}

/// A value a read could not have seen: one written before a write that completed before the read began (or the
/// initial "missing"), never written again.
fn stale_read(records: &[OpRecord]) -> Option<(usize, Value)> {
    for read in ok_reads(records) {
        let done_before = |r: &OpRecord, pos: usize| r.kind == EventKind::Ok && r.complete_pos.is_some_and(|c| c < pos);
        let overwrite = records
            .iter()
            .filter(|w| w.key == read.key && w.wrote.is_some() && done_before(w, read.invoke_pos))
            .max_by_key(|w| w.invoke_pos);
        let Some(overwrite) = overwrite else { continue };
        let older = records
            .iter()
            .filter(|w| w.key == read.key && w.wrote.is_some() && done_before(w, overwrite.invoke_pos))
            .filter_map(|w| w.wrote.clone())
            .next()
            .unwrap_or(Value::Null);
        return Some((read.complete_pos?, older));
    }
    None
}

/// A value whose write was invoked after the read completed.
fn future_read(records: &[OpRecord]) -> Option<(usize, Value)> {
    for read in ok_reads(records) {
        let done = read.complete_pos?;
        let later = records
            .iter()
            .filter(|w| w.key == read.key && w.f != "read" && w.invoke_pos > done)
            .find_map(|w| w.wrote.clone());
        if let Some(value) = later {
            return Some((done, value));
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn given_history_of_a_real_execution_when_checked_should_be_valid(seed in any::<u64>(), shape in shape()) {
        let (history, _) = register_history(&mut StdRng::seed_from_u64(seed), &shape);
        prop_assert_eq!(verdict(&history), Verdict::Valid);
    }

    #[test]
    fn given_read_of_an_overwritten_value_when_checked_should_be_invalid(seed in any::<u64>(), shape in shape()) {
        let (mut history, records) = register_history(&mut StdRng::seed_from_u64(seed), &shape);
        let target = stale_read(&records);
        prop_assume!(target.is_some());
        let (pos, value) = target.unwrap();
        history.events[pos].value = value;
        prop_assert_eq!(verdict(&history), Verdict::Invalid);
    }

    #[test]
    fn given_read_of_a_value_written_only_later_when_checked_should_be_invalid(seed in any::<u64>(), shape in shape()) {
        let (mut history, records) = register_history(&mut StdRng::seed_from_u64(seed), &shape);
        let target = future_read(&records);
        prop_assume!(target.is_some());
        let (pos, value) = target.unwrap();
        history.events[pos].value = value;
        prop_assert_eq!(verdict(&history), Verdict::Invalid);
    }

    #[test]
    fn given_successful_cas_from_a_value_never_current_in_its_interval_when_checked_should_be_invalid(
        seed in any::<u64>(),
        shape in shape(),
    ) {
        let (mut history, records) = register_history(&mut StdRng::seed_from_u64(seed), &shape);
        let cas = records.iter().find(|r| r.f == "cas" && r.kind == EventKind::Ok);
        prop_assume!(cas.is_some());
        let cas = cas.unwrap();
        let done = cas.complete_pos.unwrap();
        // Prefer a value written only after the cas completed; else one nobody ever writes.
        let from = records
            .iter()
            .filter(|w| w.key == cas.key && w.invoke_pos > done)
            .find_map(|w| w.wrote.clone())
            .unwrap_or_else(|| Value::from("never-written"));
        for pos in [cas.invoke_pos, done] {
            let to = history.events[pos].value[1].clone();
            history.events[pos].value = json!([from, to]);
        }
        prop_assert_eq!(verdict(&history), Verdict::Invalid);
    }
}
