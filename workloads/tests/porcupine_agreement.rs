//! faultline and porcupine-rs agree on 1,000 random small register histories (half of them corrupted).
//! Needs `--features porcupine`.

#[path = "support/generate.rs"]
mod generate;
#[path = "support/porcupine.rs"]
mod porcupine;

use faultline_workloads::{check_history, CheckOptions, EventKind, ModelKind, Verdict};
use generate::{register_history, Shape};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

#[test]
fn given_1000_random_small_histories_when_checked_by_both_should_agree_on_every_verdict() {
    let mut rng = StdRng::seed_from_u64(0x5eed_fa17);
    let mut disagreements = Vec::new();
    let mut invalid = 0;
    for case in 0..1000 {
        let shape = Shape {
            processes: rng.gen_range(2..5),
            ops: rng.gen_range(3..14),
            keys: rng.gen_range(1..3),
            info_chance: 0.15,
            unique_values: false,
        };
        let (mut history, _) = register_history(&mut rng, &shape);
        if rng.gen_bool(0.5) {
            // Corrupt one ok read's result to a random small value (it may stay legal by chance).
            let reads: Vec<usize> = (0..history.events.len())
                .filter(|&i| history.events[i].kind == EventKind::Ok && history.events[i].f == "read")
                .collect();
            if !reads.is_empty() {
                let pos = reads[rng.gen_range(0..reads.len())];
                history.events[pos].value = Value::from(rng.gen_range(0..3));
            }
        }
        let ours = check_history(&history, ModelKind::CasRegister, &CheckOptions::default()).verdict;
        let theirs = if porcupine_rs::check_operations(&porcupine::register_ops(&history)) {
            Verdict::Valid
        } else {
            Verdict::Invalid
        };
        if ours == Verdict::Invalid {
            invalid += 1;
        }
        if ours != theirs {
            disagreements.push(format!(
                "case {case}: faultline {ours}, porcupine-rs {theirs}: {history:?}"
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(3)].join("\n")
    );
    assert!(
        (100..900).contains(&invalid),
        "the generator should give a mix of verdicts, got {invalid} invalid of 1000"
    );
}
