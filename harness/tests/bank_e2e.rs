//! Jepsen's bank and long-fork workloads end to end against real reference nodes (`POST /txn`: the bank's `init`,
//! `debit` and `credit` micro-ops, the long fork's inserts and group reads), under light faults. The correct node
//! must pass with transfers acknowledged, aborted overdrafts and groups compared; the `txn-reads-at-receipt` mutant,
//! whose transfers write balances computed from the state at the request's arrival, must be caught by the `bank`
//! check, whose reads stop adding up.
//!
//! `FAULTLINE_REPEAT=5 cargo test --release -p faultline --test bank_e2e` repeats each scenario with seeds 1..=5.

mod support;

use serde_json::Value;
use support::{check, explain, faultline, history, light_nemesis, one_cluster, repeat, results, run_text, Run};

const RUN_SECONDS: &str = "12s";

/// The completions of `f` with kind `kind`.
fn completions(events: &[Value], f: &str, kind: &str) -> usize {
    events.iter().filter(|e| e["f"] == f && e["kind"] == kind).count()
}

/// Runs `plan` for [`RUN_SECONDS`] with `seed` and asserts it exits `code`; the run and its results.
fn run_seed(plan: &str, seed: u64, code: i32) -> (Run, Value) {
    let run = run_text(plan, &["--time-limit", RUN_SECONDS, "--seed", &seed.to_string()]);
    let results = results(&run.run_dir);
    assert_eq!(
        run.output.status.code(),
        Some(code),
        "seed {seed}\n{}\n{results:#}",
        explain(&run.output)
    );
    (run, results)
}

#[test]
fn given_the_bank_when_the_node_is_correct_should_be_valid_with_transfers_acknowledged_and_overdrafts_aborted() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let (run, results) = run_seed(&light_nemesis("reference-bank.yaml", None), seed, 0);
        let bank = check(&results, "bank");
        assert_eq!(bank["verdict"], "valid", "seed {seed}: {bank:#}");
        assert_eq!(bank["details"]["total"], 100);
        let events = history(&run.run_dir);
        let transfers = completions(&events, "transfer", "ok");
        assert!(
            transfers >= 20,
            "seed {seed}: only {transfers} transfers acknowledged: the run exercised too little"
        );
        assert!(
            bank["details"]["read_count"].as_u64().unwrap() >= 5,
            "seed {seed}: {bank:#}"
        );
        let aborted = events
            .iter()
            .filter(|e| e["f"] == "transfer" && e["kind"] == "fail")
            .any(|e| {
                e["error"]
                    .as_str()
                    .is_some_and(|why| why.contains("transaction aborted"))
            });
        assert!(
            aborted,
            "seed {seed}: some transfer met too small a balance and was aborted, not applied"
        );
    }
}

#[test]
fn given_txn_reads_at_receipt_when_the_bank_runs_should_be_invalid_by_the_bank_check_with_unbalanced_reads() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let plan = light_nemesis("reference-bank.yaml", Some("txn-reads-at-receipt"));
        let (run, results) = run_seed(&plan, seed, 1);
        let bank = check(&results, "bank");
        assert_eq!(bank["verdict"], "invalid", "seed {seed}: {bank:#}");
        let first = &bank["details"]["errors"][0];
        assert_eq!(first["kind"], "wrong-total", "seed {seed}: {first:#}");
        assert_ne!(first["total"], 100, "seed {seed}: {first:#}");
        let report = std::fs::read_to_string(run.run_dir.join("report.html")).unwrap();
        assert!(
            report.contains("class=\"inner bank-reads\""),
            "seed {seed}: the report lists the unbalanced reads"
        );
        // `faultline analyze` judges the store folder alone the same way.
        let analyzed = faultline().arg("analyze").arg(&run.run_dir).output().unwrap();
        assert_eq!(analyzed.status.code(), Some(1), "{}", explain(&analyzed));
    }
}

#[test]
fn given_the_long_fork_workload_when_the_node_is_correct_should_be_valid_with_groups_compared() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let (_, results) = run_seed(&light_nemesis("reference-long-fork.yaml", None), seed, 0);
        let fork = check(&results, "long-fork");
        assert_eq!(fork["verdict"], "valid", "seed {seed}: {fork:#}");
        let compared = fork["details"]["groups_compared"].as_u64().unwrap();
        assert!(
            compared >= 10,
            "seed {seed}: only {compared} groups read twice: {fork:#}"
        );
    }
}
