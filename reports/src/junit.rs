//! `junit.xml` for CI systems: one writer for a run (a test case per check), a campaign (a test case per seed) and a
//! certification (a test case per cell), so a dashboard shows the same outcome the same way whichever command
//! produced it.
//!
//! One mapping of verdicts, [`status`]:
//! - `valid`: the test case passes;
//! - `invalid`: `<failure>` (the system under test did something wrong), message = the reason;
//! - `unknown`: `<error>` (the test could not decide, e.g. the checker ran out of time or the harness failed), message
//!   = the reason, type `unknown`;
//! - not run (a certification interrupted before a cell ran): `<skipped>`.
//!
//! Every test case carries the properties `plan`, `seed` and `repro` (the command that runs it again), and the failure
//! or error text ends with the repro command too, for consumers that drop properties. A check's named warnings do not
//! fail its case: they are its `system-out` (one `warning: ...` line each) and a `warnings` property.
//!
//! The XML itself is written by `quick-junit` (from the nextest project): it keeps the `tests`/`failures`/`errors`/
//! `skipped` counts consistent with the cases, escapes text and strips what XML 1.0 cannot hold (ANSI codes, control
//! characters), which node log excerpts and error lines do contain.

use crate::certification::Certification;
use crate::results::{Results, Verdict};
use crate::seeds::SeedRow;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// The JUnit status of a verdict (`None`: the test case did not run); `reason` is the message, `text` the body.
pub fn status(verdict: Option<Verdict>, reason: &str, text: &str) -> TestCaseStatus {
    let mut status = match verdict {
        Some(Verdict::Valid) => return TestCaseStatus::success(),
        Some(Verdict::Invalid) => TestCaseStatus::non_success(NonSuccessKind::Failure),
        Some(Verdict::Unknown) => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type("unknown");
            status
        }
        None => TestCaseStatus::skipped(),
    };
    status.set_message(reason);
    if !text.is_empty() {
        status.set_description(text);
    }
    status
}

/// One test case: a check of a run, a seed of a campaign or a cell of a certification.
struct Case<'a> {
    classname: String,
    name: String,
    verdict: Option<Verdict>,
    reason: String,
    /// Evidence for a person, before the repro line.
    text: String,
    duration_ms: Option<u64>,
    plan: &'a str,
    seed: u64,
    repro: &'a str,
    /// Properties beyond plan, seed and repro.
    extra: Vec<(&'static str, String)>,
    /// Named warnings of a check (they do not fail the case): its `system-out`, one `warning:` line each.
    warnings: Vec<String>,
}

impl Case<'_> {
    fn into_test_case(self) -> TestCase {
        let text = if self.text.is_empty() {
            format!("repro: {}", self.repro)
        } else {
            format!("{}\nrepro: {}", self.text, self.repro)
        };
        let mut case = TestCase::new(self.name, status(self.verdict, &self.reason, &text));
        case.set_classname(self.classname);
        if let Some(ms) = self.duration_ms {
            case.set_time(Duration::from_millis(ms));
        }
        case.add_property(Property::new("plan", self.plan));
        case.add_property(Property::new("seed", self.seed.to_string()));
        case.add_property(Property::new("repro", self.repro));
        for (name, value) in self.extra {
            case.add_property(Property::new(name, value));
        }
        if !self.warnings.is_empty() {
            case.add_property(Property::new("warnings", self.warnings.len().to_string()));
            let lines: Vec<String> = self.warnings.iter().map(|w| format!("warning: {w}")).collect();
            case.set_system_out(lines.join("\n"));
        }
        case
    }
}

fn suite(name: &str, duration_ms: u64, properties: Vec<(&'static str, String)>, cases: Vec<Case<'_>>) -> TestSuite {
    let mut suite = TestSuite::new(name);
    suite.set_time(Duration::from_millis(duration_ms));
    for (key, value) in properties {
        suite.add_property(Property::new(key, value));
    }
    suite.add_test_cases(cases.into_iter().map(Case::into_test_case));
    suite
}

fn document(report_name: &str, suite: TestSuite) -> String {
    let mut report = Report::new(report_name);
    report.add_test_suite(suite);
    // Serializing into a String fails only on an I/O error of the writer, which a String does not have.
    report.to_string().expect("JUnit XML serializes into a String")
}

/// `junit.xml` of a run: a test suite `faultline.<plan>`, a test case per check.
pub fn render(results: &Results) -> String {
    let name = format!("faultline.{}", results.plan);
    let cases = results
        .checks
        .iter()
        .map(|check| Case {
            classname: name.clone(),
            name: check.name.clone(),
            // A check that had nothing to judge did not run, as JUnit sees it.
            verdict: Some(check.verdict).filter(|_| !check.not_checked),
            reason: check.reason.clone(),
            text: check_text(check),
            duration_ms: None,
            plan: &results.plan,
            seed: results.seed,
            repro: &results.repro,
            extra: Vec::new(),
            warnings: check.warnings.clone(),
        })
        .collect();
    let properties = vec![
        ("plan", results.plan.clone()),
        ("system", results.system.clone()),
        ("seed", results.seed.to_string()),
        ("repro", results.repro.clone()),
        ("store_dir", results.store_dir.clone()),
        ("started_at", results.started_at.clone()),
    ];
    document(&name, suite(&name, results.duration_ms, properties, cases))
}

/// Anomalies written out per class in a txn check's failure text; the rest are counted.
const TXN_ANOMALIES_PER_CLASS: usize = 3;

/// A check's failure or error body: for the txn check, each anomaly class it found in one sentence with its first
/// anomalies and the sentence behind each edge (a CI log is read by a person; the whole result is in results.json);
/// for the others, their details as JSON.
fn check_text(check: &crate::results::CheckResult) -> String {
    use faultline_workloads::txn_check::TxnCheckResult;
    if check.name == "txn" {
        if let Ok(result) = serde_json::from_value::<TxnCheckResult>(check.details.clone()) {
            return txn_text(&result);
        }
    }
    match &check.details {
        serde_json::Value::Null => String::new(),
        details => details.to_string(),
    }
}

fn txn_text(result: &faultline_workloads::txn_check::TxnCheckResult) -> String {
    let claimed = result.claimed_phrase();
    let mut lines = vec![format!("claimed {claimed}")];
    for (class, found) in &result.anomalies {
        let total = result.anomaly_counts.get(class).copied().unwrap_or(found.len() as u64);
        let forbids = if result.forbidden_classes().contains(class) {
            "forbids"
        } else {
            "allows"
        };
        lines.push(format!(
            "{} ({total} found; {} {forbids} it)",
            crate::html::class_sentence(*class),
            claimed
        ));
        for anomaly in found.iter().take(TXN_ANOMALIES_PER_CLASS) {
            lines.push(format!("  {}", anomaly.explanation));
            lines.extend(anomaly.cycle.iter().map(|step| format!("    {}", step.sentence)));
        }
        if total > TXN_ANOMALIES_PER_CLASS as u64 {
            lines.push(format!("  … and {} more", total - TXN_ANOMALIES_PER_CLASS as u64));
        }
    }
    lines.join("\n")
}

/// `junit.xml` of a campaign: a test suite `faultline.campaign.<id>`, a test case per seed (its first run's verdict;
/// what reruns said is in the text and the `reproducibility` property).
pub fn campaign<'a>(id: &str, rows: impl IntoIterator<Item = &'a SeedRow>) -> String {
    let name = format!("faultline.campaign.{id}");
    let rows: Vec<&SeedRow> = rows.into_iter().collect();
    let cases = rows
        .iter()
        .map(|row| {
            let mut text = Vec::new();
            if row.verdict != Verdict::Valid {
                text.push(format!("failing checks: {}", row.checks_text()));
            }
            let mut extra = Vec::new();
            if let Some(r) = row.reproducibility {
                text.push(format!("{r} ({} rerun(s))", row.reruns.len()));
                extra.push(("reproducibility", r.to_string()));
            }
            if let Some(dir) = &row.store_dir {
                text.push(format!("run folder: {dir}"));
                extra.push(("store_dir", dir.clone()));
            }
            if let Some(shard) = &row.shard {
                extra.push(("shard", shard.clone()));
            }
            Case {
                classname: format!("{name}.{}", row.plan),
                name: cell_name(row.nodes, row.seed),
                verdict: Some(row.verdict),
                reason: match (&row.failing_check, &row.first_error) {
                    (Some(check), Some(error)) => format!("{check}: {error}"),
                    (check, error) => check.clone().or_else(|| error.clone()).unwrap_or_default(),
                },
                text: text.join("\n"),
                duration_ms: Some(row.duration_ms),
                plan: &row.plan,
                seed: row.seed,
                repro: &row.repro,
                extra,
                warnings: Vec::new(),
            }
        })
        .collect();
    let duration_ms = rows.iter().map(|r| r.duration_ms).sum();
    document(
        &name,
        suite(&name, duration_ms, vec![("campaign", id.to_string())], cases),
    )
}

/// `junit.xml` of a certification: a test suite `faultline.certify.<suite>`, a test case per cell.
pub fn certification(cert: &Certification) -> String {
    let name = format!("faultline.certify.{}", cert.suite);
    let cases = cert
        .cells
        .iter()
        .map(|cell| Case {
            classname: format!("{name}.{}", cell.plan),
            name: cell_name(Some(cell.nodes), cell.seed),
            verdict: cell.verdict,
            reason: cell.reason.clone(),
            text: cell
                .store_dir
                .as_ref()
                .map(|d| format!("run folder: {d}"))
                .unwrap_or_default(),
            duration_ms: Some(cell.duration_ms),
            plan: &cell.plan,
            seed: cell.seed,
            repro: &cell.repro,
            extra: vec![("nodes", cell.nodes.to_string())],
            warnings: Vec::new(),
        })
        .collect();
    let properties = vec![
        ("certification", cert.id.clone()),
        ("suite_file", cert.suite_file.clone()),
        ("suite_digest", cert.suite_digest.clone()),
        ("certified", cert.certified.to_string()),
    ];
    let duration_ms = cert.cells.iter().map(|c| c.duration_ms).sum();
    document(&name, suite(&name, duration_ms, properties, cases))
}

/// `seed=7`, or `nodes=5 seed=7` for a cell with a node count.
fn cell_name(nodes: Option<u64>, seed: u64) -> String {
    match nodes {
        Some(n) => format!("nodes={n} seed={seed}"),
        None => format!("seed={seed}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CheckResult, Counts, SCHEMA_VERSION};
    use serde_json::json;

    #[test]
    fn given_an_invalid_check_when_rendered_should_emit_a_failure_with_the_repro() {
        let results = Results {
            schema_version: SCHEMA_VERSION,
            faultline_version: "0".into(),
            verdict: Verdict::Invalid,
            reason: "boot: n2 refused".into(),
            plan: "default".into(),
            system: "reference".into(),
            seed: 3,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_ms: 1500,
            store_dir: "store/x".into(),
            repro: "faultline run --seed 3".into(),
            checks: vec![
                CheckResult {
                    name: "boot".into(),
                    verdict: Verdict::Invalid,
                    reason: "n2 <refused>".into(),
                    details: serde_json::Value::Null,
                    evidence_ns: None,
                    warnings: Vec::new(),
                    evidence_nodes: Vec::new(),
                    not_checked: false,
                },
                CheckResult {
                    name: "linearizability".into(),
                    verdict: Verdict::Valid,
                    reason: "ok".into(),
                    details: serde_json::Value::Null,
                    evidence_ns: None,
                    warnings: Vec::new(),
                    evidence_nodes: Vec::new(),
                    not_checked: false,
                },
            ],
            counts: Counts::default(),
            coverage: Default::default(),
            behaviours: Default::default(),
        };
        let xml = render(&results);
        assert!(xml.contains("failures=\"1\""), "{xml}");
        assert!(xml.contains("<failure message=\"n2 &lt;refused&gt;\""), "{xml}");
        assert!(xml.contains("repro: faultline run --seed 3"), "{xml}");
        assert!(xml.contains("<property name=\"seed\" value=\"3\"/>"), "{xml}");
        assert!(!xml.contains("system-out"), "no warnings, no output: {xml}");
    }

    #[test]
    fn given_an_invalid_txn_check_when_rendered_should_name_the_class_and_write_each_edge_sentence() {
        let steps = |n: u64| {
            (0..n)
                .map(|i| json!({"from": i, "to": (i + 1) % n, "kind": "rw", "key": "x", "sentence": format!("edge {i}")}))
                .collect::<Vec<_>>()
        };
        let anomaly = |n: u64| {
            json!({"class": "G2-item", "txns": (0..n).collect::<Vec<_>>(), "cycle": steps(n),
            "explanation": format!("G2-item: a cycle of {n} transactions")})
        };
        let details = json!({
            "verdict": "invalid", "claimed": "serializable", "reason": "the history shows G2-item (5)",
            "anomalies": {"G2-item": [anomaly(2), anomaly(3), anomaly(2), anomaly(2)]},
            "anomaly_counts": {"G2-item": 5}, "undecided": {}, "models_satisfied": [], "strongest_model": null,
            "stats": {"txns": 9, "ok": 9, "failed": 0, "info": 0, "info_committed": 0, "keys": 1, "edges": {},
                      "cyclic_components": 1, "largest_component": 3, "check_ms": 0}
        });
        let check = CheckResult {
            name: "txn".into(),
            verdict: Verdict::Invalid,
            reason: "the history shows G2-item (5), which serializable forbids".into(),
            details,
            evidence_ns: None,
            warnings: Vec::new(),
            evidence_nodes: Vec::new(),
            not_checked: false,
        };
        let text = check_text(&check);
        assert!(
            text.starts_with("claimed serializable\nG2-item: write skew — "),
            "{text}"
        );
        assert!(text.contains("(5 found; serializable forbids it)"), "{text}");
        assert_eq!(
            text.matches("  G2-item: a cycle of").count(),
            3,
            "the first three: {text}"
        );
        assert!(
            text.contains("    edge 2\n") && text.ends_with("  … and 2 more"),
            "{text}"
        );
        let raw = CheckResult {
            name: "boot".into(),
            details: json!({"n1": 1}),
            ..check
        };
        assert_eq!(check_text(&raw), "{\"n1\":1}", "other checks keep their JSON");
    }

    #[test]
    fn given_a_passing_check_with_warnings_when_rendered_should_pass_and_print_them() {
        let mut check = CheckResult::new(
            "durability",
            Verdict::Valid,
            "3 restarts judged".into(),
            serde_json::Value::Null,
        );
        check.warnings = vec!["n2 forgot 290 applied entries <after a zeroed block>".into()];
        let results = Results {
            schema_version: SCHEMA_VERSION,
            faultline_version: "0".into(),
            verdict: Verdict::Valid,
            reason: "every check passed, with a warning".into(),
            plan: "etcd".into(),
            system: "etcd".into(),
            seed: 41,
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_ms: 1500,
            store_dir: "store/x".into(),
            repro: "faultline run --seed 41".into(),
            checks: vec![check],
            counts: Counts::default(),
            coverage: Default::default(),
            behaviours: Default::default(),
        };
        let xml = render(&results);
        assert!(xml.contains("failures=\"0\""), "{xml}");
        assert!(
            xml.contains(
                "<system-out>warning: n2 forgot 290 applied entries &lt;after a zeroed block&gt;</system-out>"
            ),
            "{xml}"
        );
        assert!(xml.contains("<property name=\"warnings\" value=\"1\"/>"), "{xml}");
    }

    #[test]
    fn given_each_verdict_when_mapped_should_pass_fail_error_or_skip() {
        assert_eq!(status(Some(Verdict::Valid), "r", "t"), TestCaseStatus::success());
        let kind = |s: TestCaseStatus| match s {
            TestCaseStatus::NonSuccess { kind, message, .. } => (Some(kind), message.map(|m| m.into_string())),
            TestCaseStatus::Skipped { message, .. } => (None, message.map(|m| m.into_string())),
            TestCaseStatus::Success { .. } => unreachable!("only valid passes"),
        };
        assert_eq!(
            kind(status(Some(Verdict::Invalid), "r", "")),
            (Some(NonSuccessKind::Failure), Some("r".into()))
        );
        assert_eq!(
            kind(status(Some(Verdict::Unknown), "timed out", "")),
            (Some(NonSuccessKind::Error), Some("timed out".into()))
        );
        assert_eq!(kind(status(None, "not run", "")), (None, Some("not run".into())));
    }
}
