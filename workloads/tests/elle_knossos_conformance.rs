//! Conformance with Elle, Knossos and elle-cli: every history of `../shared/elle-knossos-test-data` (their own files,
//! and Elle's test histories transcribed) checked with the options its test used, as `faultline check` checks it.
//! Each must get the expected verdict, and for Elle's models exactly its anomaly types and the models it rules out
//! (Elle's `:not`), and for Knossos's the op it names; or, where faultline differs and the table says why, exactly
//! what the table says faultline finds instead (`refused`: the history is bad input, refused naming the file).

use faultline_workloads::checker::{checker_for, history_txns, CheckInput, HistoryModel, ModelOptions};
use faultline_workloads::txn_check::{ConsistencyModel, CycleStep, EdgeKind, MicroOp, ReadValue, Txn, TxnCheckResult};
use faultline_workloads::{load_history_file, LinearizabilityResult, Verdict};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[path = "support/shared_data.rs"]
mod shared_data;

/// The histories and the table, kept outside the repository under their own licences.
fn data_dir() -> Option<PathBuf> {
    shared_data::shared_data(
        "elle-knossos-test-data",
        "The Elle and Knossos test data",
        "The folder `shared/elle-knossos-test-data` must sit beside the repository checkout; its gen.py rebuilds it \
         from work trees of jepsen-io/elle, jepsen-io/knossos and ligurio/elle-cli",
    )
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

fn cases(dir: &Path) -> Vec<Case> {
    let table = std::fs::read_to_string(dir.join("expected-verdicts.tsv")).expect("the table is readable");
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
fn judge(dir: &Path, case: &Case) -> ((String, Vec<String>, Vec<String>), Option<u64>) {
    let path = dir.join(&case.file);
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
    let Some(dir) = data_dir() else { return };
    let cases = cases(&dir);
    assert!(cases.len() >= 200, "{} cases: the table lost rows", cases.len());
    let count = |prefix: &str| cases.iter().filter(|c| c.file.starts_with(prefix)).count();
    assert!(count("elle/tests/list-append/") >= 49 && count("elle/tests/rw-register/") >= 16);
    assert!(count("knossos/cas-register/") >= 120 && count("elle-cli/") >= 16);
    let mut mismatches = Vec::new();
    for case in &cases {
        let (got, op) = judge(&dir, case);
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

/// What `txn` appended to `key`.
fn appended(txn: &Txn, key: &str) -> Vec<i64> {
    txn.ops
        .iter()
        .filter_map(|op| match op {
            MicroOp::Append { key: k, value } if k == key => Some(*value),
            _ => None,
        })
        .collect()
}

/// The lists `txn` read at `key` (a read of `nil` is the empty list).
fn reads(txn: &Txn, key: &str) -> Vec<Vec<i64>> {
    txn.ops
        .iter()
        .filter_map(|op| match op {
            MicroOp::Read { key: k, value } if k == key => match value {
                Some(ReadValue::List(list)) => Some(list.clone()),
                _ => Some(Vec::new()),
            },
            _ => None,
        })
        .collect()
}

/// Whether the history shows `step`: a real-time edge's completion is written before the invocation, a wr edge's
/// reader saw one of the writer's appends, an rw edge's reader saw a list without the later writer's append. (A ww
/// edge rests on the version order the reads imply, which the unit tests of the checker cover.)
fn shown(step: &CycleStep, txns: &HashMap<u64, &Txn>) -> bool {
    let (from, to) = (txns[&step.from], txns[&step.to]);
    let key = step.key.as_deref().unwrap_or_default();
    match step.kind {
        EdgeKind::Realtime => match (from.positions, to.positions) {
            (Some((_, completed)), Some((invoked, _))) => completed < invoked,
            _ => false,
        },
        EdgeKind::Wr => reads(to, key)
            .iter()
            .any(|list| appended(from, key).iter().any(|v| list.contains(v))),
        EdgeKind::Rw => reads(from, key)
            .iter()
            .any(|list| appended(to, key).iter().any(|v| !list.contains(v))),
        _ => true,
    }
}

/// Elle's `huge-scc.edn`: one strongly connected component of over a thousand transactions, in which Elle's own test
/// expects its cycle search to time out. faultline must still name a concrete cycle with a real-time edge and an
/// anti-dependency (G2-item-realtime, or a stronger class such as G-single-item-realtime), each of whose steps the
/// history shows, and rule out the models Elle rules out.
#[test]
fn given_elles_huge_scc_history_when_checked_as_list_append_should_name_a_concrete_realtime_cycle_and_the_models_ruled_out(
) {
    let Some(dir) = data_dir() else { return };
    let path = dir.join("elle/histories/huge-scc.edn");
    let history = load_history_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
    let checker = checker_for(HistoryModel::ListAppend, &ModelOptions::default()).expect("the default options");
    let result = checker.check(&CheckInput {
        history: &history,
        node_logs: &BTreeMap::new(),
    });
    let txn: TxnCheckResult = serde_json::from_value(result.details).expect("the txn check's details");
    assert_eq!(txn.verdict, Verdict::Invalid, "{}", txn.reason);
    assert!(txn.stats.largest_component > 1000, "{:?}", txn.stats);
    assert!(
        txn.not.contains(&ConsistencyModel::StrongSnapshotIsolation),
        "{:?}",
        txn.not
    );
    assert!(
        txn.also_not.contains(&ConsistencyModel::StrictSerializable),
        "{:?}",
        txn.also_not
    );
    let cycle = txn
        .anomalies
        .values()
        .flatten()
        .find(|a| a.class.to_string().ends_with("-realtime") && !a.cycle.is_empty())
        .unwrap_or_else(|| panic!("no real-time cycle among {:?}", txn.anomaly_types));
    let steps = &cycle.cycle;
    assert!(steps.iter().any(|s| s.kind == EdgeKind::Realtime) && steps.iter().any(|s| s.kind == EdgeKind::Rw));
    let all = history_txns(&history).expect("the history's transactions");
    let by_index: HashMap<u64, &Txn> = all.iter().map(|t| (t.index, t)).collect();
    for (step, next) in steps.iter().zip(steps.iter().cycle().skip(1)) {
        assert_eq!(step.to, next.from, "the cycle closes: {}", cycle.explanation);
        assert!(shown(step, &by_index), "the history does not show: {}", step.sentence);
    }
}
