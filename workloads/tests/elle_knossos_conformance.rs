//! Conformance with Elle, Knossos and elle-cli: every case of `tests/conformance/expected-verdicts.tsv`, derived by
//! `tests/conformance/gen.py` from the upstream repositories' own tests, checked with the options its test used, as
//! `faultline check` checks it. The histories are the upstream's own files, read where they are in
//! `../shared/upstream/` beside the checkout (never copied into the repository), and Elle's inline test histories,
//! which this test has gen.py transcribe into a temporary folder each run. Each case must get the expected verdict,
//! and for Elle's models exactly its anomaly types and the models it rules out (Elle's `:not`), and for Knossos's the
//! op it names; or, where faultline differs and the table's `reason` says why, exactly what the table says faultline
//! finds instead (`refused`: the history is bad input, refused naming the file). `?` in an expected column: the
//! upstream test does not say (elle-cli asserts only its exit code), so faultline's answer there is not compared.

use faultline_workloads::checker::{checker_for, history_txns, CheckInput, HistoryModel, ModelOptions};
use faultline_workloads::txn_check::{ConsistencyModel, CycleStep, EdgeKind, MicroOp, ReadValue, Txn, TxnCheckResult};
use faultline_workloads::{load_history_file, LinearizabilityResult, Verdict};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

#[path = "support/shared_data.rs"]
mod shared_data;

/// What the upstream data is and where it goes, as a missing folder is reported.
const WHAT: &str = "The Elle, Knossos and elle-cli test data";
const HOW: &str = "Put unmodified copies of jepsen-io/elle (histories/, test/), jepsen-io/knossos (data/, test/) and \
                   ligurio/elle-cli (histories/, test.sh) in `shared/upstream/elle`, `knossos` and `elle-cli` beside \
                   the repository checkout, with a README.md saying which commits they are";

/// The upstream repositories' data, kept outside the repository under their own licences (`shared/upstream` beside
/// the checkout); required under `CI=true`.
fn upstream_dir() -> Option<PathBuf> {
    shared_data::required_shared_data("upstream", "README.md", WHAT, HOW)
}

/// The generator and the table, kept in the repository.
fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// Where a case's history is: `elle/tests/...` names one of Elle's inline test histories, transcribed by gen.py into
/// `transcribed`; every other path is an upstream file under `upstream`.
struct Roots {
    upstream: PathBuf,
    transcribed: PathBuf,
}

impl Roots {
    fn resolve(&self, file: &str) -> PathBuf {
        if file.starts_with("elle/tests/") {
            self.transcribed.join(file)
        } else {
            self.upstream.join(file)
        }
    }
}

/// A folder of the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs gen.py on the upstream data: Elle's inline test histories transcribed under `out`, and the table it derives
/// (with the committed table's `faultline` and `reason` columns) as `out/expected-verdicts.tsv`.
fn generate(upstream: &Path, out: &Path) {
    let script = conformance_dir().join("gen.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg("--upstream")
        .arg(upstream)
        .arg("--histories")
        .arg(out)
        .arg("--table")
        .arg(out.join("expected-verdicts.tsv"))
        .arg("--keep")
        .arg(conformance_dir().join("expected-verdicts.tsv"))
        .output()
        .unwrap_or_else(|e| panic!("running python3 {}: {e} (the test needs Python 3)", script.display()));
    assert!(
        output.status.success(),
        "python3 {} failed ({}):\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Verdict, anomaly types, `:not`; a list is `None` where the upstream test does not say (`?`).
type Want = (String, Option<Vec<String>>, Option<Vec<String>>);

/// Verdict, anomaly types, `:not` as faultline finds them, and why it refused the history if it did.
type Got = (String, Vec<String>, Vec<String>, Option<String>);

/// One row of `expected-verdicts.tsv`.
struct Case {
    line: usize,
    file: String,
    model: HistoryModel,
    options: String,
    /// As faultline must say them: upstream's expectation, or the `faultline` column where it differs.
    want: Want,
    op: Option<u64>,
}

/// `a,b` as a sorted list, `-` as the empty one, `?` as unknown.
fn list(text: &str) -> Option<Vec<String>> {
    if text == "?" {
        return None;
    }
    let mut items: Vec<String> = text
        .split(',')
        .filter(|s| *s != "-" && !s.is_empty())
        .map(String::from)
        .collect();
    items.sort();
    Some(items)
}

fn cases(table: &str) -> Vec<Case> {
    let mut lines = table.lines().enumerate();
    let (_, header) = lines.next().expect("a header");
    assert_eq!(
        header.split('\t').collect::<Vec<_>>(),
        [
            "file",
            "model",
            "options",
            "expected_verdict",
            "expected_anomalies",
            "expected_not",
            "expected_op",
            "faultline",
            "reason"
        ]
    );
    lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert!(cols.len() >= 8, "line {}: {} columns", n + 1, cols.len());
            let reason = cols.get(8).copied().unwrap_or_default();
            let want = if cols[7] == "=" {
                (cols[3].to_string(), list(cols[4]), list(cols[5]))
            } else {
                assert!(
                    !reason.trim().is_empty(),
                    "line {}: faultline differs from upstream ({}) and the reason column does not say why",
                    n + 1,
                    cols[7]
                );
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

/// `consistency-models=none anomalies=G0 wfr-keys group-size=3` as the CLI's options. Elle's `linearizable-keys`,
/// `sequential-keys` and `transaction-order` (version orders Elle may assume) have no faultline counterpart: they are
/// written down as the test used them and not applied, and the table says what faultline finds without them.
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
            "linearizable-keys" | "sequential-keys" | "transaction-order" => {}
            other => panic!("unknown option {other:?} in the table"),
        }
    }
    options
}

/// What faultline says of one case, in the table's terms (`refused` for a history it will not read, with why), and
/// the op a linearizability explanation names.
fn judge(roots: &Roots, case: &Case) -> (Got, Option<u64>) {
    let path = roots.resolve(&case.file);
    let history = match load_history_file(&path, None) {
        Ok(history) => history,
        Err(e) => {
            assert!(
                e.to_string().contains(&case.file),
                "line {}: the refusal names the file: {e}",
                case.line
            );
            return (
                ("refused".to_string(), Vec::new(), Vec::new(), Some(e.to_string())),
                None,
            );
        }
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
    ((result.verdict.to_string(), anomalies, not, None), op)
}

/// Whether faultline's answer is what the case wants: the verdict, and each list the case knows. Elle reports no
/// `:not` when nothing it reports was found.
fn agrees(got: &Got, want: &Want) -> bool {
    let nothing_found = want.1.as_ref().is_some_and(Vec::is_empty);
    got.0 == want.0
        && want.1.as_ref().is_none_or(|a| *a == got.1)
        && (nothing_found || want.2.as_ref().is_none_or(|n| *n == got.2))
}

#[test]
fn given_no_upstream_data_when_looked_for_should_skip_saying_where_it_goes_and_fail_under_ci() {
    let nowhere = Path::new("/nonexistent/shared/upstream");
    assert_eq!(
        shared_data::found_marker(nowhere, "README.md", false, WHAT, HOW),
        Ok(None)
    );
    let err = shared_data::found_marker(nowhere, "README.md", true, WHAT, HOW).unwrap_err();
    assert!(
        err.starts_with("CI=true") && err.contains("/nonexistent/shared/upstream/README.md") && err.contains(HOW),
        "{err}"
    );
}

#[test]
fn given_the_elle_and_knossos_histories_when_checked_should_match_every_expected_verdict_anomaly_and_model() {
    let Some(upstream) = upstream_dir() else { return };
    let transcribed = TempDir::new("faultline-elle-tests");
    generate(&upstream, &transcribed.0);
    let table_path = conformance_dir().join("expected-verdicts.tsv");
    let table = std::fs::read_to_string(&table_path).expect("the table is readable");
    let derived = std::fs::read_to_string(transcribed.0.join("expected-verdicts.tsv")).expect("gen.py's table");
    assert!(
        derived == table,
        "{} is not what gen.py derives from {}: run `python3 workloads/tests/conformance/gen.py --table \
         workloads/tests/conformance/expected-verdicts.tsv` and give every new difference its reason",
        table_path.display(),
        upstream.display()
    );
    let roots = Roots {
        upstream,
        transcribed: transcribed.0.clone(),
    };
    let cases = cases(&table);
    assert!(cases.len() >= 200, "{} cases: the table lost rows", cases.len());
    let count = |prefix: &str| cases.iter().filter(|c| c.file.starts_with(prefix)).count();
    assert!(count("elle/tests/list-append/") >= 49 && count("elle/tests/rw-register/") >= 16);
    assert!(count("knossos/data/cas-register/") >= 120 && count("elle-cli/") >= 16);
    let mut mismatches = Vec::new();
    for case in &cases {
        let (got, op) = judge(&roots, case);
        if !agrees(&got, &case.want) {
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
    eprintln!("{} cases checked", cases.len());
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
    let Some(upstream) = upstream_dir() else { return };
    let path = upstream.join("elle/histories/huge-scc.edn");
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
