use super::stages::{applied_offset, ddmin, split};
use super::tries::{expected_wall_ms, slowest_wall_ms, RUN_OVERHEAD_MS};
use super::*;
use crate::explore::replay::RecordedFault;

#[test]
fn given_a_failure_first_seen_in_the_fault_phase_when_prepared_should_give_its_offset_from_the_phase_start() {
    let results = |evidence_ns: u64| -> Results {
        serde_json::from_value(serde_json::json!({"schema_version": 1, "faultline_version": "t",
            "verdict": "invalid", "reason": "", "plan": "p", "system": "reference", "seed": 1, "started_at": "",
            "duration_ms": 0, "store_dir": "", "repro": "",
            "checks": [
                {"name": "liveness", "verdict": "invalid", "reason": "no write within 30000 ms after heal",
                 "evidence_ns": 1_000_000_000u64},
                {"name": "linearizability", "verdict": "invalid", "reason": "not linearizable",
                 "evidence_ns": evidence_ns}],
            "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0}}))
        .expect("a minimal results.json")
    };
    let recorded = replay::Recorded {
        seed: 1,
        faults: Vec::new(),
        phase_ms: 30_000,
        phase_start_ns: 2_000_000_000,
    };
    let in_phase = results(12_500_000_000);
    let target = findings(&in_phase)
        .into_iter()
        .map(|f| f.signature)
        .find(|s| s.check == "linearizability")
        .expect("a linearizability finding");
    // The linearizability check's evidence, not the liveness check's (another class).
    assert_eq!(evidence_in_phase(&in_phase, &target, &recorded), Some(10_500));
    // Evidence after the phase (in the final restart) cuts nothing.
    assert_eq!(evidence_in_phase(&results(40_000_000_000), &target, &recorded), None);
}

/// ddmin with a failure that needs items `needed` (any superset fails); returns the result and the tests run.
fn minimize(len: usize, needed: &[usize]) -> (Vec<usize>, usize) {
    let mut tests = 0;
    let result = ddmin::<()>(len, |kept, _| {
        tests += 1;
        Ok(Some(needed.iter().all(|n| kept.contains(n))))
    })
    .unwrap();
    (result, tests)
}

#[test]
fn given_a_failure_that_needs_two_of_forty_faults_when_minimized_should_find_exactly_them() {
    let (result, tests) = minimize(40, &[7, 31]);
    assert_eq!(result, [7, 31]);
    assert!(tests < 60, "{tests} tests");
    assert_eq!(minimize(38, &[37]).0, [37]);
    assert_eq!(minimize(5, &[0, 1, 2, 3, 4]).0, [0, 1, 2, 3, 4]);
}

#[test]
fn given_a_stop_when_minimizing_should_keep_the_best_set_so_far() {
    let mut tests = 0;
    let result = ddmin::<()>(16, |kept, _| {
        tests += 1;
        // The first halving fails; then the budget runs out.
        Ok(if tests == 1 { Some(kept.contains(&12)) } else { None })
    })
    .unwrap();
    assert_eq!(
        result,
        (8..16).collect::<Vec<_>>(),
        "the first half went; the rest is kept as it was"
    );
}

#[test]
fn given_the_binomial_tail_when_computed_should_match_exact_sums() {
    // P(X < 1 | 8, 0.25) = 0.75^8; P(X < 2 | 4, 0.5) = (1 + 4) / 16.
    assert!((rate::below(8, 1, 0.25) - 0.75f64.powi(8)).abs() < 1e-12);
    assert!((rate::below(4, 2, 0.5) - 5.0 / 16.0).abs() < 1e-12);
    assert!(
        (rate::below(5, 6, 0.3) - 1.0).abs() < 1e-12,
        "every outcome is below n + 1"
    );
    assert_eq!(rate::below(3, 0, 0.9), 0.0);
    assert!((rate::below(3, 3, 1.0)).abs() < 1e-12, "a sure failure fails every try");
}

#[test]
fn given_an_original_that_always_failed_when_a_rule_is_derived_should_need_most_of_few_tries() {
    // 8 of 8: p0 = 0.9 (rule of succession), so three of four tries must fail; a third as often fails that rarely.
    let rule = rate::rule(8, 8, 12);
    assert_eq!((rule.tries, rule.need), (4, 3), "{rule:?}");
    assert!(rule.alpha <= rate::ALPHA && rule.beta <= rate::BETA, "{rule:?}");
}

#[test]
fn given_a_one_in_four_failure_when_a_rule_is_derived_should_use_the_cap_and_say_what_it_cannot_tell_apart() {
    // 2 of 8: p0 = 0.3. No dozen tries tell it from 0.1 with both errors bounded: the cap, the need that keeps ALPHA.
    let rule = rate::rule(2, 8, 12);
    assert_eq!((rule.tries, rule.need), (12, 2), "{rule:?}");
    assert!(rule.alpha <= rate::ALPHA, "{rule:?}");
    assert!(rule.beta > rate::BETA, "{rule:?}");
    // With room for more tries, the test needs more failures of more tries and tells them apart better.
    let wider = rate::rule(2, 8, 20);
    assert!(wider.need > rule.need && wider.beta < rule.beta, "{wider:?}");
    // A failure never counts with no failing try.
    assert!(rate::rule(1, 20, 3).need >= 1);
}

#[test]
fn given_the_rule_when_a_candidate_fails_as_often_as_the_original_should_accept_it_nine_times_in_ten() {
    // The rule's promise, checked by its own arithmetic against rates either side.
    for (failed, runs) in [(8, 8), (6, 8), (4, 8), (3, 8), (2, 8)] {
        let rule = rate::rule(failed, runs, 12);
        let p0 = rate::estimate(failed, runs);
        let accept = |p: f64| 1.0 - rate::below(rule.tries, rule.need, p);
        assert!(accept(p0) >= 1.0 - rate::ALPHA - 1e-9, "{failed}/{runs}: {rule:?}");
        assert!(accept(p0 / rate::RARER) < accept(p0), "{failed}/{runs}: {rule:?}");
        assert!(accept(0.0) == 0.0, "a candidate that never fails is never accepted");
    }
}

#[test]
fn given_tries_that_applied_an_anchored_fault_when_timed_should_take_their_median_offset_of_the_same_fault() {
    let fault = |start_ms: u64, targets: &str| RecordedFault {
        start_ms,
        duration_ms: 300,
        action: replay::Action::Process {
            kind: faultline_faults::process::ProcessFault::Kill,
            targets: targets.into(),
            detail: Default::default(),
        },
        anchor: None,
    };
    // The plan kills the primary twice; the second kill is the anchored one.
    let plan = vec![fault(1000, "primary"), fault(2320, "primary"), fault(3000, "[n3]")];
    let recordings = vec![
        vec![fault(1010, "primary"), fault(3000, "[n3]"), fault(4318, "primary")],
        vec![fault(990, "primary"), fault(4300, "primary")],
        vec![fault(1005, "primary"), fault(4400, "primary")],
        // This try never got to the second kill: it does not count.
        vec![fault(1000, "primary")],
    ];
    assert_eq!(applied_offset(&plan, 1, &recordings), Some(4318));
    assert_eq!(applied_offset(&plan, 2, &recordings), Some(3000));
    assert_eq!(applied_offset(&plan, 1, &[]), None);
    assert_eq!(applied_offset(&plan, 3, &recordings), None);
}

#[test]
fn split_covers_every_item_once() {
    for len in 1..20 {
        for n in 1..=len {
            let chunks = split(len, n);
            assert_eq!(chunks.len(), n);
            assert_eq!(chunks[0].0, 0);
            assert_eq!(chunks.last().unwrap().1, len);
            assert!(chunks.windows(2).all(|w| w[0].1 == w[1].0));
        }
    }
}

#[test]
fn given_earlier_runs_when_a_run_is_estimated_should_take_their_mean_time_beyond_their_own_phase() {
    assert_eq!(expected_wall_ms(&[], 40_000), 40_000 + RUN_OVERHEAD_MS, "no runs yet");
    // A shrink of a convergence failure: passing tries ~40 s, failing ones wait out the final phase, ~100 s. The
    // confirmation reserve is estimated from the failing ones only, so it is not half what it will take.
    let passing_and_failing = expected_wall_ms(&[(40_000, 30_000), (42_000, 30_000), (100_000, 30_000)], 30_000);
    let failing = expected_wall_ms(&[(100_000, 30_000)], 30_000);
    assert_eq!((passing_and_failing, failing), (60_666, 100_000));
    // Measured (view-change-max-op): one failing run of the 60 s replay (121 s), then 15 of 12-15 s phases
    // (73-75 s). Each spent ~61 s beyond its phase, so a 12.3 s candidate's failing run takes ~73 s. Taking the
    // longest phase off the mean of all of them guessed 28 s, and the 35 min shrink ran 42.
    let mut walls = vec![(121_000, 60_000)];
    walls.extend(std::iter::repeat_n((73_000, 12_303), 15));
    let estimate = expected_wall_ms(&walls, 12_303);
    assert!((72_000..=74_500).contains(&estimate), "{estimate}");
}

#[test]
fn given_failing_tries_of_different_lengths_when_the_confirmation_is_reserved_should_take_the_slowest() {
    assert_eq!(slowest_wall_ms(&[], 28_000), 28_000 + RUN_OVERHEAD_MS, "no runs yet");
    // Measured (Iggy, a 28 s phase): failing tries of 57-118 s, the confirmation's runs 110-118 s each.
    let walls = [
        (110_181, 27_963),
        (57_219, 27_963),
        (110_009, 27_963),
        (118_000, 30_000),
    ];
    assert_eq!(slowest_wall_ms(&walls, 27_963), 118_000 - 30_000 + 27_963);
    assert!(
        expected_wall_ms(&walls, 27_963) < 100_000,
        "the mean would reserve too little"
    );
}
