//! The three `junit.xml` writers (run, campaign, certification) share one verdict mapping, and a JUnit consumer reads
//! all three. The consumer is Python's `junitparser` when the interpreter has it (`FAULTLINE_TEST_PYTHON` picks the
//! interpreter, default `python3`), and otherwise a structural check with `xml.etree` against the common JUnit schema
//! (testsuites / testsuite / testcase, at most one of failure, error or skipped per case, properties as name/value
//! pairs, the count attributes matching the cases).

use faultline_reports::certification::{Cell, Certification, CERTIFICATION_SCHEMA_VERSION};
use faultline_reports::results::{CheckResult, Counts, Results, Verdict, SCHEMA_VERSION};
use faultline_reports::seeds::{BuildIdentity, SeedRow};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const VERDICTS: [Verdict; 3] = [Verdict::Unknown, Verdict::Invalid, Verdict::Valid];

fn run_results() -> Results {
    Results {
        schema_version: SCHEMA_VERSION,
        faultline_version: "0.1.0".into(),
        verdict: Verdict::Invalid,
        reason: "boot: n2 refused".into(),
        plan: "default".into(),
        system: "reference".into(),
        seed: 7,
        started_at: "2026-12-01T15:00:00Z".into(),
        duration_ms: 4200,
        store_dir: "store/default/20261201T150000Z-seed7".into(),
        repro: "faultline run --seed 7 store/default/20261201T150000Z-seed7/plan.yaml".into(),
        checks: VERDICTS
            .iter()
            .map(|&verdict| CheckResult {
                name: format!("check-{verdict}"),
                verdict,
                reason: format!("{verdict} <because> \u{1b}[31m&"),
                details: Value::Null,
                evidence_ns: None,
                warnings: Vec::new(),
                evidence_nodes: Vec::new(),
                not_checked: false,
            })
            .collect(),
        counts: Counts::default(),
        coverage: Default::default(),
        behaviours: Default::default(),
    }
}

fn seed_rows() -> Vec<SeedRow> {
    VERDICTS
        .iter()
        .enumerate()
        .map(|(i, &verdict)| {
            let failing = (verdict != Verdict::Valid).then(|| format!("check-{verdict}"));
            serde_json::from_value(json!({
                "campaign": "s11",
                "plan": "default",
                "plan_source": "default",
                "seed": 100 + i,
                "seed_index": i,
                "verdict": verdict,
                "failing_check": failing,
                "first_error": failing.as_ref().map(|_| format!("{verdict} <because>")),
                "duration_ms": 1000,
                "repro": format!("faultline run default --seed {}", 100 + i),
                "finished_at": "2026-12-01T15:00:00Z",
            }))
            .expect("a seed row")
        })
        .collect()
}

fn certification() -> Certification {
    let cells = VERDICTS
        .iter()
        .enumerate()
        .map(|(i, &verdict)| Cell {
            plan: "default".into(),
            plan_source: "default".into(),
            nodes: 3,
            seed: 200 + i as u64,
            verdict: Some(verdict),
            failing_check: None,
            reason: format!("{verdict} <because>"),
            duration_ms: 1000,
            store_dir: None,
            repro: format!("faultline run default --seed {} --nodes 3", 200 + i),
        })
        .collect();
    Certification {
        schema_version: CERTIFICATION_SCHEMA_VERSION,
        suite: "release".into(),
        suite_file: "suite.yaml".into(),
        suite_digest: "00".into(),
        id: "release-20261201T150000Z".into(),
        faultline_version: "0.1.0".into(),
        build: BuildIdentity::default(),
        started_at: "2026-12-01T15:00:00Z".into(),
        finished_at: "2026-12-01T15:01:00Z".into(),
        complete: true,
        certified: false,
        cells,
    }
}

/// Reads every file given with junitparser (or the structural check) and prints, per file, its counts and each
/// case's (status, message, properties) as JSON.
const CONSUMER: &str = r#"
import json, sys
import xml.etree.ElementTree as ET

def structural(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites", root.tag
    suites = list(root)
    assert suites and all(s.tag == "testsuite" for s in suites), [s.tag for s in suites]
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cases = []
    for suite in suites:
        assert suite.get("name"), "a testsuite has a name"
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for child in suite:
            assert child.tag in ("properties", "testcase", "system-out", "system-err"), child.tag
            if child.tag != "testcase":
                continue
            assert child.get("name") and child.get("classname"), child.attrib
            counts["tests"] += 1
            results = [c for c in child if c.tag in ("failure", "error", "skipped")]
            others = [c.tag for c in child if c.tag not in ("failure", "error", "skipped", "properties",
                                                              "system-out", "system-err")]
            assert not others, others
            assert len(results) <= 1, "at most one result per test case"
            status, message = "passed", None
            if results:
                status, message = results[0].tag, results[0].get("message")
                counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[status]] += 1
            props = {p.get("name"): p.get("value") for ps in child.findall("properties") for p in ps}
            assert all(p.tag == "property" for ps in child.findall("properties") for p in ps)
            cases.append({"name": child.get("name"), "status": status, "message": message, "properties": props})
        for key, value in counts.items():
            assert int(suite.get(key)) == value, (key, suite.get(key), value)
            total[key] += value
    for key, value in total.items():
        assert int(root.get(key)) == value, (key, root.get(key), value)
    return total, cases

def with_junitparser(path, total, cases):
    from junitparser import JUnitXml, Failure, Error, Skipped
    xml = JUnitXml.fromfile(path)
    seen = []
    for suite in xml:
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
            total["tests"], total["failures"], total["errors"], total["skipped"]), "junitparser counts"
        for case in suite:
            kinds = [type(r).__name__.lower() for r in case.result]
            seen.append(kinds[0] if kinds else "passed")
    assert seen == [c["status"] for c in cases], (seen, cases)

try:
    import junitparser
    consumer = "junitparser " + junitparser.version
except ImportError:
    consumer = "xml.etree structural check"
out = {"consumer": consumer, "files": {}}
for path in sys.argv[1:]:
    total, cases = structural(path)
    if consumer.startswith("junitparser"):
        with_junitparser(path, total, cases)
    out["files"][path] = {"counts": total, "cases": cases}
print(json.dumps(out))
"#;

fn consume(paths: &[&Path]) -> Value {
    let python = std::env::var("FAULTLINE_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .arg("-c")
        .arg(CONSUMER)
        .args(paths)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        output.status.success(),
        "the JUnit consumer refused a file:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the consumer prints JSON")
}

#[test]
fn given_an_unknown_an_invalid_and_a_valid_result_when_written_as_run_campaign_and_certification_junit_should_map_them_alike(
) {
    let dir = tempfile::tempdir().unwrap();
    let documents = [
        ("run", faultline_reports::junit::render(&run_results())),
        ("campaign", faultline_reports::junit::campaign("s11", &seed_rows())),
        ("certification", certification().render_junit()),
    ];
    let mut paths = Vec::new();
    for (name, xml) in &documents {
        assert!(!xml.contains('\u{1b}'), "{name}: no ANSI codes in XML");
        let path = dir.path().join(format!("{name}.xml"));
        std::fs::write(&path, xml).unwrap();
        paths.push(path);
    }
    let read = consume(&paths.iter().map(|p| p.as_path()).collect::<Vec<_>>());
    eprintln!("JUnit consumer: {}", read["consumer"]);
    for ((name, _), path) in documents.iter().zip(&paths) {
        let file = &read["files"][path.display().to_string()];
        assert_eq!(
            file["counts"],
            json!({"tests": 3, "failures": 1, "errors": 1, "skipped": 0}),
            "{name}: {file:#}"
        );
        let statuses: Vec<&str> = file["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["status"].as_str().unwrap())
            .collect();
        assert_eq!(
            statuses,
            ["error", "failure", "passed"],
            "{name}: unknown, invalid, valid"
        );
        for case in file["cases"].as_array().unwrap() {
            let props = &case["properties"];
            assert_eq!(props["plan"], "default", "{name}: {case:#}");
            assert!(
                props["seed"].as_str().is_some_and(|s| s.parse::<u64>().is_ok()),
                "{name}: {case:#}"
            );
            assert!(
                props["repro"].as_str().is_some_and(|r| r.starts_with("faultline run ")),
                "{name}: {case:#}"
            );
            if case["status"] != "passed" {
                let message = case["message"].as_str().unwrap_or("");
                assert!(
                    message.contains("<because>"),
                    "{name}: the reason is the message: {case:#}"
                );
            }
        }
    }
}
