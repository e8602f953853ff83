//! Conformance with Porcupine: every etcd log and kv history of Porcupine's test data gets the verdict listed in
//! `expected-verdicts.tsv`.

use faultline_workloads::{check_history, load_history_file, CheckOptions, ModelKind, Verdict};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[path = "support/shared_data.rs"]
mod shared_data;

/// Where Porcupine's test data goes, as a missing folder is reported.
const HOW: &str =
    "Put Porcupine's `test_data` (its jepsen/ and kv/ folders) and faultline's expected-verdicts.tsv in a \
                   folder `shared/porcupine-test-data` beside the repository checkout";

/// Porcupine's test data, kept outside the repository (`shared/porcupine-test-data` beside the checkout).
fn data_dir() -> Option<PathBuf> {
    shared_data::shared_data("porcupine-test-data", "Porcupine's test data", HOW)
}

#[test]
fn given_no_porcupine_data_when_looked_for_should_skip_saying_where_it_goes_and_fail_under_ci() {
    let nowhere = Path::new("/nonexistent/shared/porcupine-test-data");
    assert_eq!(
        shared_data::found(nowhere, false, "Porcupine's test data", HOW),
        Ok(None)
    );
    let err = shared_data::found(nowhere, true, "Porcupine's test data", HOW).unwrap_err();
    assert!(
        err.starts_with("CI=true") && err.contains("shared/porcupine-test-data` beside the repository checkout"),
        "{err}"
    );
}

struct Case {
    file: String,
    expected: Option<bool>,
}

fn cases(dir: &Path) -> Vec<Case> {
    let table = std::fs::read_to_string(dir.join("expected-verdicts.tsv")).expect("expected-verdicts.tsv is readable");
    table
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut cols = line.split('\t');
            let file = cols.next().expect("a file column").to_string();
            let expected = match cols.next().expect("an expected column") {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            };
            Case { file, expected }
        })
        .collect()
}

fn opts() -> CheckOptions {
    CheckOptions {
        timeout: Duration::from_secs(60),
        ..CheckOptions::default()
    }
}

#[test]
fn given_porcupine_test_data_when_checked_should_match_every_expected_verdict() {
    let Some(dir) = data_dir() else { return };
    let cases = cases(&dir);
    assert_eq!(cases.iter().filter(|c| c.file.starts_with("jepsen/")).count(), 103);
    assert_eq!(cases.iter().filter(|c| c.file.starts_with("kv/")).count(), 6);
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for case in &cases {
        let path = dir.join(&case.file);
        let history = load_history_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
        let Some(expected) = case.expected else {
            // Porcupine skips the one empty log (the etcd cluster never started); it must load as an empty history.
            assert!(history.events.is_empty(), "{} is expected to be empty", case.file);
            continue;
        };
        let model = if case.file.starts_with("kv/") {
            ModelKind::Kv
        } else {
            ModelKind::CasRegister
        };
        let result = check_history(&history, model, &opts());
        let want = if expected { Verdict::Valid } else { Verdict::Invalid };
        if result.verdict != want {
            mismatches.push(format!(
                "{}: expected {want}, got {} ({})",
                case.file, result.verdict, result.reason
            ));
        }
        if result.verdict == Verdict::Invalid {
            assert!(
                result.explanation.is_some(),
                "{}: an invalid verdict carries an explanation",
                case.file
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 108, "102 non-empty etcd logs and 6 kv histories");
    assert!(
        mismatches.is_empty(),
        "verdicts differ from Porcupine's:\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn given_kv_history_when_checked_without_partitioning_should_match_expected_verdict() {
    let Some(dir) = data_dir() else { return };
    for (file, want) in [("kv/c10-ok.txt", Verdict::Valid), ("kv/c10-bad.txt", Verdict::Invalid)] {
        let history = load_history_file(&dir.join(file), None).unwrap_or_else(|e| panic!("{e}"));
        let opts = CheckOptions {
            partition_by_key: false,
            ..opts()
        };
        let result = check_history(&history, ModelKind::Kv, &opts);
        assert_eq!(result.verdict, want, "{file}: {}", result.reason);
        assert_eq!(result.keys.len(), 1);
    }
}
