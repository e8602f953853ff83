//! The command line as a script or a person meets it: logging (a `faults` warning reaches stderr and the run's
//! `faultline.log`), `--json` (stdout carries exactly one JSON object), completions, the man page, `--version`, the
//! choices `--help` lists, and exit codes (254 only for bad input, 255 for the harness's own failures).

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::Output;
use support::{explain, faultline, history, one_cluster, repo_plan_text, results, run_text};

/// What `faultline` printed on stdout, as text.
fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The one JSON object a `--json` command printed: stdout must hold it and nothing else.
fn only_json_object(output: &Output) -> Value {
    let text = stdout(output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "stdout holds one line, the JSON object:\n{}",
        explain(output)
    );
    let value: Value =
        serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", explain(output)));
    assert!(value.is_object(), "a JSON object: {value}");
    value
}

/// `plans/exec-reference.yaml` with every node killed for the whole fault phase and a network nemesis of
/// `isolate-primary` partitions only: no node answers, so no primary is known when a partition starts, every
/// partition is skipped, and the network schedule of the `faults` crate warns each time. (A plan whose system cannot
/// tell its primary at all is refused at load, so the skip is a runtime condition.)
fn plan_whose_partitions_are_skipped() -> String {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let text = repo_plan_text("exec-reference.yaml").replace("{plan_dir}", &plans.display().to_string());
    let mut kept: Vec<&str> = Vec::new();
    let mut in_nemesis = false;
    for line in text.lines() {
        if line == "nemesis:" {
            in_nemesis = true;
            continue;
        }
        if in_nemesis && !line.starts_with(' ') {
            in_nemesis = false;
        }
        if !in_nemesis && !line.starts_with("time_limit:") {
            kept.push(line);
        }
    }
    format!(
        "{}\ntime_limit: 6s\nseed: 3\nnemesis:\n  process:\n    script:\n      - {{at: 0s, kind: kill, targets: all, \
         duration: 30s}}\n  network:\n    interval: 1s\n    partitions:\n      - {{shape: isolate-primary, duration: \
         300ms..600ms}}\n",
        kept.join("\n")
    )
}

#[test]
fn given_a_fault_the_faults_crate_skips_when_run_should_warn_on_stderr_and_in_faultline_log() {
    let _one = one_cluster();
    let run = run_text(&plan_whose_partitions_are_skipped(), &[]);
    let stderr = String::from_utf8_lossy(&run.output.stderr).into_owned();
    assert!(
        matches!(run.output.status.code(), Some(0..=2)),
        "the run finished: {}",
        explain(&run.output)
    );
    let needle = "isolate-primary: no primary known; skipped";
    assert!(stderr.contains(needle), "the warning reached stderr:\n{stderr}");
    assert!(stderr.contains("WARN"), "it is shown as a warning:\n{stderr}");
    let log = std::fs::read_to_string(run.run_dir.join("faultline.log")).expect("the run folder has faultline.log");
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains(needle)).collect();
    assert!(!warnings.is_empty(), "the warning reached faultline.log:\n{log}");
    assert!(
        warnings.iter().all(|l| l.contains("WARN") && l.contains("fault_id=")),
        "each line has its level and fields:\n{log}"
    );
    assert!(
        !stdout(&run.output).contains(needle),
        "warnings stay off stdout:\n{}",
        explain(&run.output)
    );
    let partitions = history(&run.run_dir)
        .iter()
        .filter(|e| e["f"] == "partition-start")
        .count();
    assert_eq!(partitions, 0, "every isolate-primary was skipped");
}

#[test]
fn given_faultline_log_set_to_error_when_a_fault_is_skipped_should_keep_the_warning_off_stderr() {
    let _one = one_cluster();
    let store = tempfile::tempdir().unwrap();
    let plan = support::write_plan(store.path(), &plan_whose_partitions_are_skipped());
    let output = faultline()
        .env("FAULTLINE_LOG", "error")
        .args(["run", "--quiet", "--time-limit", "3s", "--store"])
        .arg(store.path().join("store"))
        .arg(&plan)
        .output()
        .unwrap();
    assert!(matches!(output.status.code(), Some(0..=2)), "{}", explain(&output));
    let run_dir = support::latest(&store.path().join("store"));
    let events = history(&run_dir);
    let schedule = events.iter().find(|e| e["f"] == "schedule").expect("a schedule event");
    assert!(
        schedule["value"]["network"]
            .as_array()
            .is_some_and(|faults| !faults.is_empty()),
        "partitions were scheduled, so there were warnings to hide: {schedule}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("no primary known"),
        "FAULTLINE_LOG=error hides warnings:\n{stderr}"
    );
}

#[test]
fn given_run_json_when_the_run_ends_should_print_only_its_results_on_stdout_and_analyze_check_agree() {
    let _one = one_cluster();
    let store = tempfile::tempdir().unwrap();
    let store_root = store.path().join("store");
    let output = faultline()
        .args([
            "run",
            "--json",
            "default",
            "--time-limit",
            "3s",
            "--seed",
            "5",
            "--store",
        ])
        .arg(&store_root)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let printed = only_json_object(&output);
    let run_dir = store_root.join("latest").canonicalize().unwrap();
    assert_eq!(printed, results(&run_dir), "stdout is the run's results.json");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("faultline: VALID"),
        "human output went to stderr:\n{stderr}"
    );

    let analyzed = faultline().args(["analyze", "--json"]).arg(&run_dir).output().unwrap();
    assert_eq!(analyzed.status.code(), Some(0), "{}", explain(&analyzed));
    assert_eq!(only_json_object(&analyzed)["verdict"], "valid");

    let checked = faultline()
        .args(["check", "--json", "--format", "jsonl", "--model", "cas-register"])
        .arg(run_dir.join("history.jsonl"))
        .output()
        .unwrap();
    assert_eq!(checked.status.code(), Some(0), "{}", explain(&checked));
    let result = only_json_object(&checked);
    assert_eq!(result["verdict"], "valid");
    assert_eq!(result["model"], "cas-register");

    let wrong_format = faultline()
        .args(["check", "--json", "--format", "edn"])
        .arg(run_dir.join("history.jsonl"))
        .output()
        .unwrap();
    assert_eq!(
        wrong_format.status.code(),
        Some(254),
        "a history not of its format is bad input: {}",
        explain(&wrong_format)
    );
    assert_eq!(
        only_json_object(&wrong_format)["exit_code"],
        254,
        "--json reports the failure as JSON too"
    );

    // results.json turned into a folder: analyze cannot write it, which is the harness's failure, not the input's.
    std::fs::remove_file(run_dir.join("results.json")).unwrap();
    std::fs::create_dir(run_dir.join("results.json")).unwrap();
    let unwritable = faultline().arg("analyze").arg(&run_dir).output().unwrap();
    assert_eq!(
        unwritable.status.code(),
        Some(255),
        "an I/O failure is a harness error: {}",
        explain(&unwritable)
    );
}

#[test]
fn given_a_folder_named_like_a_built_in_plan_when_named_on_the_command_line_should_take_the_built_in_plan() {
    // A store keeps a plan's runs in a folder of the plan's name, so a campaign started inside its store names
    // `reference-partition` while `./reference-partition/` exists: every child run read the folder as the plan and failed (seen on etcd-mixed).
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join("reference-partition")).unwrap();
    let run = cwd.path().join("myrun");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("plan.yaml"), repo_plan_text("canary.yaml")).unwrap();
    let builtin = faultline()
        .args(["plan", "--schedule", "reference-partition", "--seed", "1"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_eq!(builtin.status.code(), Some(0), "{}", explain(&builtin));
    assert!(
        stdout(&builtin).contains("partition"),
        "the built-in plan's schedule: {}",
        explain(&builtin)
    );
    let folder = faultline()
        .args(["plan", "--schedule", "myrun", "--seed", "1"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert_eq!(folder.status.code(), Some(254), "{}", explain(&folder));
    let stderr = String::from_utf8_lossy(&folder.stderr);
    assert!(
        stderr.contains("is a folder") && stderr.contains("myrun/plan.yaml"),
        "says what to pass instead: {stderr}"
    );
}

#[test]
fn given_inputs_that_are_not_what_a_command_needs_when_run_should_exit_254() {
    let empty = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["analyze", "/nonexistent/run"], "analyze of a missing folder"),
        (vec!["report", "/nonexistent/run"], "report of a missing folder"),
        (vec!["merge", "/nonexistent/store"], "merge of a missing store"),
        (vec!["check", "/nonexistent/history.jsonl"], "check of a missing file"),
        (vec!["check", "--model", "queue", "/dev/null"], "an unknown model"),
        (
            vec!["plan", "--schedule", "default", "--check", "plans/default.yaml"],
            "--schedule with --check",
        ),
        (vec!["plan"], "plan with nothing to show"),
        (vec!["matrix", "--mutant", "no-such-mutant"], "an unknown mutant"),
        (vec!["matrix", "--parallel", "0"], "a matrix with no runs at once"),
        (vec!["shrink", "/nonexistent/run"], "shrink of a missing folder"),
        (
            vec!["shrink", "--tries", "3", "--need", "4", "/nonexistent/run"],
            "more failing tries needed than tries",
        ),
        (
            vec!["run", "--replay", "/nonexistent/run"],
            "replay of a missing folder",
        ),
        (
            vec!["run", "--replay", "/nonexistent/run", "plans/default.yaml"],
            "--replay with a plan",
        ),
    ];
    for (args, what) in cases {
        let output = faultline().args(&args).current_dir(empty.path()).output().unwrap();
        assert_eq!(output.status.code(), Some(254), "{what}: {}", explain(&output));
    }
    let need = faultline()
        .args(["shrink", "--tries", "3", "--need", "4"])
        .arg(empty.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&need.stderr);
    assert!(
        stderr.contains("--need 4 is not between 1 and --tries 3"),
        "checked before the run folder: {stderr}"
    );
    for command in ["shrink", "run --replay"] {
        let output = faultline().args(command.split(' ')).arg(empty.path()).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(254),
            "{command} of a folder that is not a run: {}",
            explain(&output)
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("is not a run folder"), "{command}: {stderr}");
    }
    let analyze_empty = faultline().arg("analyze").arg(empty.path()).output().unwrap();
    assert_eq!(
        analyze_empty.status.code(),
        Some(254),
        "a folder with no history: {}",
        explain(&analyze_empty)
    );
}

#[test]
fn given_completions_bash_when_run_should_print_a_completion_script_naming_every_subcommand() {
    let output = faultline().args(["completions", "bash"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let script = stdout(&output);
    assert!(script.contains("_faultline()"), "a bash completion function:\n{script}");
    assert!(script.contains("complete -F _faultline"), "registered for faultline");
    for subcommand in ["run", "campaign", "certify", "check", "analyze", "completions"] {
        assert!(script.contains(subcommand), "completes `{subcommand}`");
    }
    for shell in ["zsh", "fish"] {
        let output = faultline().args(["completions", shell]).output().unwrap();
        assert!(
            output.status.success() && !output.stdout.is_empty(),
            "{shell}: {}",
            explain(&output)
        );
    }
}

#[test]
fn given_man_when_run_should_print_a_roff_page_and_with_out_dir_one_per_subcommand() {
    let output = faultline().arg("man").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH faultline 1"), "a section-1 man page:\n{page}");
    assert!(page.contains("254"), "it lists the exit codes");
    let dir = tempfile::tempdir().unwrap();
    let written = faultline().args(["man", "--out-dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(written.status.code(), Some(0), "{}", explain(&written));
    for page in ["faultline.1", "faultline-run.1", "faultline-check.1"] {
        assert!(dir.path().join(page).is_file(), "{page} written");
    }
}

#[test]
fn given_version_when_run_should_show_the_git_revision_and_target() {
    let output = faultline().arg("--version").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let line = stdout(&output);
    let (revision, target) = line
        .trim()
        .strip_prefix(concat!("faultline ", env!("CARGO_PKG_VERSION"), " ("))
        .and_then(|rest| rest.strip_suffix(')'))
        .and_then(|inside| inside.split_once(", "))
        .unwrap_or_else(|| panic!("`faultline VERSION (REVISION, TARGET)`: {line:?}"));
    assert!(
        revision == "unknown" || (revision.len() == 12 && revision.chars().all(|c| c.is_ascii_hexdigit())),
        "a short git revision: {revision:?}"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Some(head) = head.ok().filter(|h| h.status.success()) {
        assert_eq!(
            revision,
            String::from_utf8_lossy(&head.stdout).trim(),
            "the revision built from"
        );
    }
    assert!(target.split('-').count() >= 3, "a target triple: {target:?}");
}

#[test]
fn given_help_when_printed_should_list_exit_codes_and_every_choice() {
    let help = stdout(&faultline().arg("--help").output().unwrap());
    for code in ["0 ", "1 ", "2 ", "130", "254", "255"] {
        assert!(help.contains(&format!("  {code}")), "exit code {code} listed:\n{help}");
    }
    let check = stdout(&faultline().args(["check", "--help"]).output().unwrap());
    for choice in ["cas-register", "kv", "append-log", "jsonl", "edn", "jepsen-log"] {
        assert!(check.contains(choice), "`check --help` lists {choice}:\n{check}");
    }
    let matrix = stdout(&faultline().args(["matrix", "--help"]).output().unwrap());
    assert!(
        matrix.contains("no-fsync"),
        "`matrix --help` lists the mutants:\n{matrix}"
    );
    let completions = stdout(&faultline().args(["completions", "--help"]).output().unwrap());
    assert!(
        completions.contains("bash") && completions.contains("zsh"),
        "{completions}"
    );
}

#[test]
fn given_campaign_dry_run_json_when_run_should_print_the_planned_runs_as_one_object() {
    let store = tempfile::tempdir().unwrap();
    let output = faultline()
        .args([
            "campaign",
            "default",
            "--seeds",
            "2",
            "--campaign-seed",
            "7",
            "--dry-run",
            "--json",
            "--store",
        ])
        .arg(store.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", explain(&output));
    let planned = only_json_object(&output);
    let runs = planned["runs"].as_array().expect("a list of runs");
    assert_eq!(runs.len(), 2, "{planned:#}");
    assert!(
        runs.iter().all(|r| r["plan"] == "default" && r["repro"].is_string()),
        "{planned:#}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("default\t0\t"),
        "the human list went to stderr:\n{stderr}"
    );
}

/// A seed row of `campaign` for `iggy-mixed` seed `seed`, failing with findings of these (kind, key) when given.
fn triage_row(campaign: &str, at: &str, seed: u64, findings: &[(&str, &str, &str)]) -> String {
    let findings: Vec<Value> = findings
        .iter()
        .map(|(check, kind, key)| {
            serde_json::json!({"signature": {"system": "iggy", "check": check, "kind": kind, "key": key},
                "example": format!("{check}: {kind}")})
        })
        .collect();
    let failing = !findings.is_empty();
    let mut row = serde_json::json!({"campaign": campaign, "plan": "iggy-mixed", "plan_source": "iggy-mixed",
        "seed": seed, "seed_index": seed, "verdict": if failing { "invalid" } else { "valid" }, "duration_ms": 1,
        "repro": format!("faultline run iggy-mixed --seed {seed}"), "finished_at": at});
    if failing {
        row["failing_check"] = findings[0]["signature"]["check"].clone();
        row["first_error"] = "why".into();
        row["findings"] = Value::Array(findings);
    }
    format!("{row}\n")
}

#[test]
fn given_a_store_when_triaged_should_exit_1_on_a_new_class_0_otherwise_and_254_without_seeds() {
    let store = tempfile::tempdir().unwrap();
    let triage = |extra: &[&str]| {
        faultline()
            .arg("triage")
            .arg(store.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let missing = triage(&[]);
    assert_eq!(missing.status.code(), Some(254), "{}", explain(&missing));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("has no seeds.jsonl"),
        "{}",
        explain(&missing)
    );
    let refusal = (
        "boot",
        "refused-clean-disk",
        "iggy refused to boot: op N does not chain to op N",
    );
    let stale = ("set", "stale", "");
    let seeds = store.path().join("seeds.jsonl");
    let night_one = triage_row("c1", "2026-12-01T02:00:00Z", 1, &[refusal, stale])
        + &triage_row("c1", "2026-12-01T02:00:01Z", 2, &[]);
    std::fs::write(&seeds, &night_one).unwrap();
    let first = triage(&[]);
    assert_eq!(first.status.code(), Some(1), "two new classes: {}", explain(&first));
    let table = stdout(&first);
    assert!(
        table.starts_with("faultline triage: campaign c1: 2 seed(s), 1 failing; 2 class(es): 2 new"),
        "{table}"
    );
    assert!(
        table.find("refusal on clean disk").unwrap() < table.find("consistency").unwrap(),
        "most severe first:\n{table}"
    );
    let night_two = triage_row("c2", "2026-12-02T02:00:00Z", 1, &[stale]);
    std::fs::write(&seeds, night_one + &night_two).unwrap();
    let second = triage(&["--json"]);
    assert_eq!(second.status.code(), Some(0), "nothing new: {}", explain(&second));
    let classes = only_json_object(&second);
    assert_eq!(classes["campaign"], "c2", "{classes:#}");
    let statuses: Vec<(&str, &str)> = classes["classes"]
        .as_array()
        .expect("a list of classes")
        .iter()
        .map(|c| (c["signature"]["kind"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        vec![("refused-clean-disk", "gone"), ("stale", "known")],
        "{classes:#}"
    );
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("faultline triage: campaign c2"),
        "the table went to stderr: {}",
        explain(&second)
    );
    let as_of_c1 = triage(&["--campaign", "c1"]);
    assert_eq!(as_of_c1.status.code(), Some(1), "{}", explain(&as_of_c1));
    std::fs::write(store.path().join("triage-notes.yaml"), "- not\n- a mapping\n").unwrap();
    let bad_notes = triage(&[]);
    assert_eq!(bad_notes.status.code(), Some(254), "{}", explain(&bad_notes));
}
