//! Conformance with Elle, Knossos and elle-cli: every history of `../shared/elle-knossos-test-data` (their own files,
//! and Elle's test histories transcribed) checked with the options its test used, as `faultline check` checks it.
//! Each must get the expected verdict, and for Elle's models exactly its anomaly types and the models it rules out
//! (Elle's `:not`), and for Knossos's the op it names; or, where faultline differs and the table says why, exactly
//! what the table says faultline finds instead (`refused`: the history is bad input, refused naming the file).

use faultline_workloads::checker::{checker_for, CheckInput, HistoryModel, ModelOptions};
use faultline_workloads::txn_check::ConsistencyModel;
use faultline_workloads::{load_history_file, LinearizabilityResult};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/elle-knossos-test-data");
    assert!(
        dir.join("expected-verdicts.tsv").is_file(),
        "the Elle and Knossos test data is missing: expected {}/expected-verdicts.tsv (the shared/ folder must sit \
         beside the repository checkout; its gen.py rebuilds it from the fetched repositories)",
        dir.display()
    );
    dir
}

/// One row of `expected-verdicts.tsv`.
struct Case {
    line: usize,
    file: String,
    model: HistoryModel,
    options: String,
    /// Verdict, anomaly types, `:not`, as faultline must say them.
    want: (String, Vec<String>, Vec<String>),
    op: Option<u64>,
}

fn list(text: &str) -> Vec<String> {
    let mut items: Vec<String> = text
        .split(',')
        .filter(|s| *s != "-" && !s.is_empty())
        .map(String::from)
        .collect();
    items.sort();
    items
}

fn cases() -> Vec<Case> {
    let table = std::fs::read_to_string(data_dir().join("expected-verdicts.tsv")).expect("the table is readable");
    let mut lines = table.lines().enumerate();
    let (_, header) = lines.next().expect("a header");
    assert_eq!(
        header.split('\t').take(8).collect::<Vec<_>>(),
        [
            "file",
            "model",
            "options",
            "expected_verdict",
            "expected_anomalies",
            "expected_not",
            "expected_op",
            "faultline"
        ]
    );
    lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| {
            let cols: Vec<&str> = line.split('\t').collect();
            let want = if cols[7] == "=" {
                (cols[3].to_string(), list(cols[4]), list(cols[5]))
            } else {
                let mut parts = cols[7].split(' ');
                let verdict = parts.next().expect("a verdict").to_string();
                (
                    verdict,
                    list(parts.next().unwrap_or("-")),
                    list(parts.next().unwrap_or("-")),
                )
            };
            Case {
                line: n + 1,
                file: cols[0].to_string(),
                model: cols[1].parse().unwrap_or_else(|e| panic!("line {}: {e}", n + 1)),
                options: cols[2].to_string(),
                want,
                op: cols[6].parse().ok(),
            }
        })
        .collect()
}

/// `consistency-models=none anomalies=G0 wfr-keys group-size=3` as the CLI's options.
fn options(text: &str) -> ModelOptions {
    let mut options = ModelOptions::default();
    for word in text.split(' ').filter(|w| *w != "-") {
        let (key, value) = word.split_once('=').unwrap_or((word, ""));
        let values = || value.split(',').filter(|v| *v != "none").map(String::from);
        match key {
            "consistency-models" => {
                options.consistency_models = values()
                    .map(|m| m.parse::<ConsistencyModel>().expect("a known model"))
                    .collect()
            }
            "anomalies" => options.anomalies = values().collect(),
            "wfr-keys" => options.writes_follow_reads = true,
            "group-size" => options.group_size = value.parse().ok(),
            other => panic!("unknown option {other:?} in the table"),
        }
    }
    options
}

/// What faultline says of one case, in the table's terms (`refused` for a history it will not read), and the op a
/// linearizability explanation names.
fn judge(case: &Case) -> ((String, Vec<String>, Vec<String>), Option<u64>) {
    let path = data_dir().join(&case.file);
    let history = match load_history_file(&path, None) {
        Ok(history) => history,
        Err(e) if case.want.0 == "refused" => {
            assert!(
                e.to_string().contains(&case.file),
                "line {}: the refusal names the file: {e}",
                case.line
            );
            return (("refused".to_string(), Vec::new(), Vec::new()), None);
        }
        Err(e) => panic!("line {}: {e}", case.line),
    };
    let checker = checker_for(case.model, &options(&case.options)).expect("options the checker accepts");
    let logs = BTreeMap::new();
    let result = checker.check(&CheckInput {
        history: &history,
        node_logs: &logs,
    });
    let strings = |field: &str| -> Vec<String> {
        let mut items: Vec<String> = result.details[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        items.sort();
        items
    };
    let txn = matches!(case.model, HistoryModel::ListAppend | HistoryModel::RwRegister);
    let (anomalies, not) = if txn {
        (strings("anomaly_types"), strings("not"))
    } else {
        (vec![], vec![])
    };
    let op = serde_json::from_value::<LinearizabilityResult>(result.details.clone())
        .ok()
        .and_then(|r| r.explanation)
        .and_then(|e| e.op.complete_index);
    ((result.verdict.to_string(), anomalies, not), op)
}

#[test]
fn given_the_elle_and_knossos_histories_when_checked_should_match_every_expected_verdict_anomaly_and_model() {
    let cases = cases();
    assert!(cases.len() >= 200, "{} cases: the table lost rows", cases.len());
    let count = |prefix: &str| cases.iter().filter(|c| c.file.starts_with(prefix)).count();
    assert!(count("elle/tests/list-append/") >= 49 && count("elle/tests/rw-register/") >= 16);
    assert!(count("knossos/cas-register/") >= 120 && count("elle-cli/") >= 16);
    let mut mismatches = Vec::new();
    for case in &cases {
        let (got, op) = judge(case);
        // Elle reports no `:not` when nothing it reports was found.
        let got = if case.want.1.is_empty() {
            (got.0, got.1, Vec::new())
        } else {
            got
        };
        if got != case.want {
            mismatches.push(format!(
                "line {} {} [{}]: want {:?}, got {got:?}",
                case.line, case.file, case.options, case.want
            ));
        }
        if case.op.is_some() && op != case.op {
            mismatches.push(format!(
                "line {} {}: Knossos names op {:?}, faultline {op:?}",
                case.line, case.file, case.op
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}
