//! `junit.xml`: one test case per check, so CI systems show failures natively.

use crate::results::{Results, Verdict};
use std::fmt::Write;

/// Renders a JUnit XML document for a run's results.
pub fn render(results: &Results) -> String {
    let failures = results.checks.iter().filter(|c| c.verdict == Verdict::Invalid).count();
    let skipped = results.checks.iter().filter(|c| c.verdict == Verdict::Unknown).count();
    let suite = format!("faultline.{}", results.plan);
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites><testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{:.3}\">",
        escape(&suite),
        results.checks.len(),
        results.duration_ms as f64 / 1000.0
    );
    for check in &results.checks {
        let _ = write!(
            xml,
            "  <testcase classname=\"{}\" name=\"{}\">",
            escape(&suite),
            escape(&check.name)
        );
        match check.verdict {
            Verdict::Valid => {}
            Verdict::Invalid => {
                let _ = write!(
                    xml,
                    "<failure message=\"{}\">{}\nrepro: {}</failure>",
                    escape(&check.reason),
                    escape(&check.details.to_string()),
                    escape(&results.repro)
                );
            }
            Verdict::Unknown => {
                let _ = write!(xml, "<skipped message=\"unknown: {}\"/>", escape(&check.reason));
            }
        }
        xml.push_str("</testcase>\n");
    }
    xml.push_str("</testsuite></testsuites>\n");
    xml
}

pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CheckResult, Counts, SCHEMA_VERSION};

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
                },
                CheckResult {
                    name: "linearizability".into(),
                    verdict: Verdict::Valid,
                    reason: "ok".into(),
                    details: serde_json::Value::Null,
                    evidence_ns: None,
                },
            ],
            counts: Counts::default(),
        };
        let xml = render(&results);
        assert!(xml.contains("failures=\"1\""));
        assert!(xml.contains("<failure message=\"n2 &lt;refused&gt;\""));
        assert!(xml.contains("faultline run --seed 3"));
    }
}
