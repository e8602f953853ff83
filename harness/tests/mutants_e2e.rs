//! Mutants found from the outside: `faultline run` drives real reference nodes, with a documented bug switched on
//! (`system.args: ["--bug", NAME]`), through a scripted plan, and must end invalid for the right reason, while the
//! correct node passes the same plan.
//!
//! `FAULTLINE_REPEAT=20 cargo test --release -p faultline --test mutants_e2e` repeats each scenario with seeds
//! 1..=20 (default: once, so CI stays short). Runs go one at a time (a lock below): several clusters at once on a
//! 2-core machine would make the scripted timings unreliable.

mod support;

use serde_json::Value;
use support::{check, explain, history, one_cluster, repeat, repo_plan_text, results, run_text, with_bug};

/// A plan of `plans/`, with `args: ["--bug", bug]` added to its system when `bug` is given.
fn repo_plan(name: &str, bug: Option<&str>) -> String {
    with_bug(&repo_plan_text(name), bug)
}

const REWIND_PLAN: &str = "mutant-repair-rewinds-parent.yaml";
const VIEW_CHANGE_PLAN: &str = "mutant-view-change-max-op.yaml";

/// One run of a scripted plan of `plans/`, with what the assertions read.
struct ScriptedRun {
    run: support::Run,
    events: Vec<Value>,
    results: Value,
}

impl ScriptedRun {
    fn new(plan: &str, bug: Option<&str>, seed: u64) -> ScriptedRun {
        let run = run_text(&repo_plan(plan, bug), &["--seed", &seed.to_string()]);
        ScriptedRun {
            events: history(&run.run_dir),
            results: results(&run.run_dir),
            run,
        }
    }

    /// A node's log (every start of it).
    fn log(&self, node: &str) -> String {
        std::fs::read_to_string(self.run.run_dir.join(format!("nodes/{node}/node.log"))).unwrap_or_default()
    }

    /// The run ended with `verdict` (and its exit code); `why` says what that means for this scenario.
    fn assert_verdict(&self, seed: u64, verdict: &str, why: &str) {
        let code = if verdict == "valid" { 0 } else { 1 };
        let results = &self.results;
        assert_eq!(
            self.run.output.status.code(),
            Some(code),
            "seed {seed}: {why}\n{}\n{results:#}",
            explain(&self.run.output)
        );
        assert_eq!(results["verdict"], verdict, "seed {seed}: {results:#}");
    }
}

#[test]
fn given_the_scripted_rewind_plan_when_the_node_has_repair_rewinds_parent_should_refuse_to_boot_with_does_not_chain() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let run = ScriptedRun::new(REWIND_PLAN, Some("repair-rewinds-parent"), seed);
        run.assert_verdict(seed, "invalid", "the mutant must make the run invalid");
        let (events, results) = (&run.events, &run.results);
        let refusal = events.iter().find(|e| {
            e["kind"] == "lifecycle"
                && e["f"] == "boot-refused"
                && e["value"]["line"]
                    .as_str()
                    .is_some_and(|line| line.contains("does not chain"))
        });
        assert!(
            refusal.is_some(),
            "seed {seed}: no boot-refused event saying `does not chain`\n{results:#}"
        );
    }
}

#[test]
fn given_the_scripted_rewind_plan_when_the_node_is_correct_should_be_valid() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let run = ScriptedRun::new(REWIND_PLAN, None, seed);
        run.assert_verdict(seed, "valid", "the correct node must pass the scripted plan");
        let (events, n2_log) = (&run.events, run.log("n2"));
        assert!(
            events.iter().any(|e| e["f"] == "restart-all"),
            "seed {seed}: the final phase reached the restart-all"
        );
        assert!(
            !events.iter().any(|e| e["f"] == "boot-refused"),
            "seed {seed}: no refusal without the bug"
        );
        // Not vacuous: the correct n2 went through the same gap repair the mutant gets wrong.
        assert!(
            n2_log.contains("repair start source=0"),
            "seed {seed}: n2 never repaired a gap from n1: the schedule missed its window\n{n2_log}"
        );
    }
}

/// `faultline shrink` end to end on the rewind mutant's refusal: the exact replay fails the same way, its try is
/// stopped at the refusal (an interrupted run that keeps the finding), the budget ends the search, the confirmation
/// runs, and the shrink writes shrunk.yaml, shrink.json and shrink.html, linked from the source run's report.
///
/// The phase is 12 s (the scripted refusal comes at ~9 s, so the run goes on ~5 s after it: the shrink looks at a
/// try's history every 2 s) and the budget 33 s: the replay's one measuring run (`--baseline 1`) fits, no candidate
/// does once the confirmation's time is kept. About 35 s in all.
#[test]
fn given_the_rewind_refusal_when_shrunk_should_stop_each_failing_try_at_the_refusal_and_write_the_shrunk_plan() {
    let _one = one_cluster();
    let plan =
        repo_plan(REWIND_PLAN, Some("repair-rewinds-parent")).replace("\ntime_limit: 10s\n", "\ntime_limit: 12s\n");
    assert!(
        plan.contains("time_limit: 12s"),
        "the scripted plan has `time_limit: 10s`"
    );
    let source = run_text(&plan, &["--seed", "1"]);
    assert_eq!(source.output.status.code(), Some(1), "{}", explain(&source.output));
    let store = source.run_dir.parent().and_then(|p| p.parent()).unwrap().to_path_buf();
    let output = support::faultline()
        .args([
            "shrink",
            "--quiet",
            "--budget",
            "33s",
            "--baseline",
            "1",
            "--tries",
            "2",
            "--confirm",
            "1",
            "--store",
        ])
        .arg(&store)
        .arg(&source.run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let shrink_dir = source.run_dir.join("shrink");
    let report: Value = serde_json::from_slice(&std::fs::read(shrink_dir.join("shrink.json")).unwrap()).unwrap();
    let steps = report["steps"].as_array().unwrap();
    let replay = &steps[0];
    assert_eq!(replay["stage"], "rate", "{report:#}");
    assert_eq!(replay["failed"], true, "the scripted refusal replays: {report:#}");
    assert_eq!(
        report["original_rate"],
        serde_json::json!({"failed": 1, "runs": 1}),
        "{report:#}"
    );
    let failing: Vec<&Value> = steps
        .iter()
        .flat_map(|step| step["tries"].as_array().unwrap())
        .filter(|t| t["reproduced"] == true)
        .collect();
    assert!(!failing.is_empty(), "{report:#}");
    for t in &failing {
        assert_eq!(
            t["stopped_at_evidence"], true,
            "a failing try runs on ~5 s after its refusal: {report:#}"
        );
        let run_dir = store.join(t["run"].as_str().unwrap());
        let events = history(&run_dir);
        assert!(
            events.iter().any(|e| e["kind"] == "meta" && e["f"] == "interrupted"),
            "{}: stopped with Ctrl-C",
            run_dir.display()
        );
        let results = results(&run_dir);
        assert_eq!(
            results["verdict"], "invalid",
            "the stopped run keeps its finding: {results:#}"
        );
        assert_eq!(check(&results, "boot")["verdict"], "invalid", "{results:#}");
    }
    assert_eq!(report["stopped"], "budget", "{report:#}");
    let confirm = steps.last().unwrap();
    assert_eq!(confirm["stage"], "confirm", "{report:#}");
    assert_eq!(confirm["tries"].as_array().unwrap().len(), 1, "{report:#}");
    let shrunk = std::fs::read_to_string(shrink_dir.join("shrunk.yaml")).unwrap();
    assert!(shrunk.contains("script:"), "a scripted plan:\n{shrunk}");
    let page = std::fs::read_to_string(shrink_dir.join("shrink.html")).unwrap();
    assert!(page.contains("replay of all"), "{page}");
    let source_page = std::fs::read_to_string(source.run_dir.join("report.html")).unwrap();
    assert!(
        source_page.contains("shrink/shrink.html"),
        "the source run's report links the shrink"
    );
}

/// `faultline shrink` of a failure whose exact replay does not fail is an outcome, not a harness error: it exits 2
/// (as an unknown verdict does), says why, and its shrink.json says `stopped: no-replay`. The run's stored plan is
/// the rewind mutant's with the bug taken out again, so the replay runs the correct node through the same faults and
/// cannot fail the same way. About 30 s.
#[test]
fn given_a_failing_run_whose_replay_passes_when_shrunk_should_exit_2_and_report_no_replay() {
    let _one = one_cluster();
    let source = run_text(&repo_plan(REWIND_PLAN, Some("repair-rewinds-parent")), &["--seed", "1"]);
    assert_eq!(source.output.status.code(), Some(1), "{}", explain(&source.output));
    let plan_file = source.run_dir.join("plan.yaml");
    let stored = std::fs::read_to_string(&plan_file).unwrap();
    let without_bug = stored.replace("  args:\n  - --bug\n  - repair-rewinds-parent\n", "");
    assert_ne!(stored, without_bug, "the stored plan names the bug:\n{stored}");
    std::fs::write(&plan_file, without_bug).unwrap();
    let store = source.run_dir.parent().and_then(|p| p.parent()).unwrap().to_path_buf();
    let output = support::faultline()
        .args([
            "shrink",
            "--quiet",
            "--budget",
            "2m",
            "--baseline",
            "1",
            "--confirm",
            "1",
            "--store",
        ])
        .arg(&store)
        .arg(&source.run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", explain(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did not fail with"), "{stderr}");
    assert!(!stderr.contains("harness error"), "{stderr}");
    let report: Value =
        serde_json::from_slice(&std::fs::read(source.run_dir.join("shrink").join("shrink.json")).unwrap()).unwrap();
    assert_eq!(report["stopped"], "no-replay", "{report:#}");
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "only the replay ran: {report:#}");
    assert_eq!(steps[0]["stage"], "rate", "{report:#}");
    assert_eq!(steps[0]["failed"], false, "{report:#}");
}

/// A failure made random at a known rate, on real processes: the rewind scenario with the mutant on in 3 of 4 data
/// dirs (`--bug-probability 0.75`, drawn once per data dir; the failure needs n2's). The source run had it on
/// everywhere (so it failed); its stored plan is then given the probability, so every replay draws again.
///
/// `run --replay --tries 2` reports the odds and keeps every try; `shrink` measures the original's rate first (6
/// replays, every one run), derives its test from that rate, and decides each candidate by it, stopping once settled
/// (what is checked: each step's outcome follows from its tries and the rule, whatever the draws were). 0 of 6
/// replays failing (and so nothing to shrink) has odds of 1 in 4096. The budget: 100 s or 13 runs. About 2 minutes.
#[test]
fn given_a_failure_at_a_known_rate_when_replayed_and_shrunk_should_state_the_odds_and_decide_by_the_original_rate() {
    let _one = one_cluster();
    let source = run_text(&repo_plan(REWIND_PLAN, Some("repair-rewinds-parent")), &["--seed", "1"]);
    assert_eq!(source.output.status.code(), Some(1), "{}", explain(&source.output));
    let plan_file = source.run_dir.join("plan.yaml");
    let stored = std::fs::read_to_string(&plan_file).unwrap();
    let bug = "  - --bug\n  - repair-rewinds-parent\n";
    assert!(stored.contains(bug), "the stored plan names the bug:\n{stored}");
    let random = stored.replace(bug, &format!("{bug}  - --bug-probability\n  - '0.75'\n"));
    std::fs::write(&plan_file, random).unwrap();
    let store = source.run_dir.parent().and_then(|p| p.parent()).unwrap().to_path_buf();

    let replays = support::faultline()
        .args(["run", "--replay"])
        .arg(&source.run_dir)
        .args(["--tries", "2", "--parallel", "2", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let odds: Value = serde_json::from_slice(&std::fs::read(source.run_dir.join("replays.json")).unwrap()).unwrap();
    let tries = odds["tries"].as_array().unwrap();
    assert_eq!(tries.len(), 2, "{odds:#}");
    let same = tries.iter().filter(|t| t["reproduced"] == true).count();
    assert_eq!(odds["reproduced"], same, "{odds:#}");
    let invalid = tries.iter().any(|t| t["verdict"] == "invalid");
    assert_eq!(
        replays.status.code(),
        Some(if invalid { 1 } else { 0 }),
        "{}",
        explain(&replays)
    );
    let stdout = String::from_utf8_lossy(&replays.stdout);
    assert!(stdout.contains(&format!("in {same} of 2 replays")), "{stdout}");
    for t in tries {
        let run_dir = store.join(t["run"].as_str().unwrap());
        assert!(run_dir.join("results.json").is_file(), "{}", run_dir.display());
        let plan = std::fs::read_to_string(run_dir.join("plan.yaml")).unwrap();
        assert!(
            plan.contains("--bug-probability"),
            "a replay runs the stored plan's nodes:\n{plan}"
        );
    }

    let output = support::faultline()
        .args([
            "shrink",
            "--quiet",
            "--budget",
            "100s",
            "--max-runs",
            "13",
            "--baseline",
            "6",
            "--tries",
            "4",
            "--confirm",
            "2",
            "--parallel",
            "2",
            "--store",
        ])
        .arg(&store)
        .arg(&source.run_dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let shrink_dir = source.run_dir.join("shrink");
    let report: Value = serde_json::from_slice(&std::fs::read(shrink_dir.join("shrink.json")).unwrap()).unwrap();
    let steps = report["steps"].as_array().unwrap();
    let failed_of = |step: &Value| {
        step["tries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["reproduced"] == true)
            .count() as u32
    };
    assert_eq!(steps[0]["stage"], "rate", "{report:#}");
    assert_eq!(
        steps[0]["tries"].as_array().unwrap().len(),
        6,
        "the rate is measured on every try: {report:#}"
    );
    let original = failed_of(&steps[0]);
    assert_eq!(
        report["original_rate"],
        serde_json::json!({"failed": original, "runs": 6}),
        "{report:#}"
    );
    let rule = faultline::explore::shrink::rate::rule(original, 6, 4);
    assert_eq!(report["rule"]["tries"], rule.tries, "{report:#}");
    assert_eq!(report["rule"]["need"], rule.need, "{report:#}");
    for step in steps.iter().filter(|s| {
        matches!(
            s["stage"].as_str(),
            Some("faults" | "phase" | "anchors" | "durations" | "workload")
        )
    }) {
        let ran = step["tries"].as_array().unwrap().len() as u32;
        let failed = failed_of(step);
        assert!(ran <= rule.tries, "at most the rule's tries: {step:#}");
        assert_eq!(step["need"], rule.need, "{step:#}");
        assert_eq!(step["failed"], failed >= rule.need, "decided by the rule: {step:#}");
        if step["cut_short"] != true && failed < rule.need {
            assert_eq!(
                ran - failed,
                rule.tries - rule.need + 1,
                "rejected once the need was out of reach: {step:#}"
            );
        }
    }
    // The runs' budget: 13, of which the confirmation keeps 2; the original's 6 are measured whatever it is.
    let spent: u64 = steps
        .iter()
        .filter(|s| s["stage"] != "confirm")
        .map(|s| s["tries"].as_array().unwrap().len() as u64 + s["stopped_once_decided"].as_u64().unwrap_or(0))
        .sum();
    assert!(spent <= 11, "{spent} runs before the confirmation: {report:#}");
    let shrunk = std::fs::read_to_string(shrink_dir.join("shrunk.yaml")).unwrap();
    assert!(
        shrunk.contains(&format!("# the original run's replay: {original} of 6")),
        "{shrunk}"
    );
    let confirm = steps.last().unwrap();
    assert_eq!(confirm["stage"], "confirm", "{report:#}");
    assert!(
        shrunk.starts_with(&format!(
            "# it failed the same way in {} of 2 fresh runs",
            failed_of(confirm)
        )),
        "{shrunk}"
    );
    let page = std::fs::read_to_string(shrink_dir.join("shrink.html")).unwrap();
    assert!(
        page.contains(&format!("failed the same way in <strong>{original} of 6</strong>")),
        "{page}"
    );
}

#[test]
fn given_the_scripted_stale_primary_plan_when_the_node_has_view_change_max_op_should_lose_acknowledged_writes() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let run = ScriptedRun::new(VIEW_CHANGE_PLAN, Some("view-change-max-op"), seed);
        run.assert_verdict(seed, "invalid", "the mutant must make the run invalid");
        let (results, n3_log) = (&run.results, run.log("n3"));
        assert_eq!(
            check(results, "linearizability")["verdict"],
            "invalid",
            "seed {seed}: the burst's acknowledged writes must be lost\n{results:#}"
        );
        // For the right reason: view 2's new primary (n3) took the stale primary's (n1's) longer log.
        assert!(
            n3_log.contains("repair start: syncing log purpose=BecomePrimary source=0"),
            "seed {seed}: n3 never installed n1's log\n{n3_log}"
        );
    }
}

#[test]
fn given_the_scripted_stale_primary_plan_when_the_node_is_correct_should_be_valid() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let run = ScriptedRun::new(VIEW_CHANGE_PLAN, None, seed);
        run.assert_verdict(seed, "valid", "the correct node must pass the scripted plan");
        let (n1_log, n3_log) = (run.log("n1"), run.log("n3"));
        // Not vacuous: n1 still held its stale suffix when view 2 started (it was not told of view 1 first), and
        // dropped it only when it synced to the log n3 kept.
        let synced = n1_log
            .find("repair start: syncing log purpose=AdoptView source=2")
            .unwrap_or_else(|| panic!("seed {seed}: n1 never synced to n3's view-2 log\n{n1_log}"));
        assert!(
            n1_log[synced..].contains("truncating uncommitted wal suffix"),
            "seed {seed}: n1 had no stale suffix left to truncate: the schedule missed its window\n{n1_log}"
        );
        assert!(
            n3_log.contains("view change done: this replica is primary view=2"),
            "seed {seed}: n3 did not lead view 2\n{n3_log}"
        );
    }
}

/// `truncate-on-boot` drops up to three intact entries at its WAL's tail at every boot, as if torn. While the peers
/// hold them the node repairs them, so without other faults linearizability, boot and convergence see nothing; the
/// durability check sees each restarted node boot below the commit it had reported right before its kill, whatever
/// else happens. A short `default` run restarts every node at least once (the restart-all), most of them more often
/// (kills, flaps). Its triggers kill the primary right after a restart, so the node that forgot may lead: then the
/// forgotten entries are lost for good and other checks see it too (lost writes, a replica's assertion), in some
/// seeds and not others; only the durability verdict is asserted.
#[test]
fn given_the_default_plan_when_the_node_has_truncate_on_boot_should_be_caught_by_the_durability_check() {
    let _one = one_cluster();
    for seed in 1..=repeat() {
        let run = support::run_text(
            &repo_plan("default.yaml", Some("truncate-on-boot")),
            &["--seed", &seed.to_string(), "--time-limit", "12s"],
        );
        let results = results(&run.run_dir);
        assert_eq!(
            run.output.status.code(),
            Some(1),
            "{}\n{results:#}",
            explain(&run.output)
        );
        let durability = check(&results, "durability");
        assert_eq!(durability["verdict"], "invalid", "seed {seed}: {durability:#}");
        let reason = durability["reason"].as_str().unwrap();
        assert!(
            reason.contains(" applied ") && reason.contains("forgotten, no surgery recorded"),
            "seed {seed}: {reason}"
        );
    }
}
