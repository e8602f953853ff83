//! `log-patterns`: none of the plan's failure patterns (`panicked at`, `assertion failed`, ...) appears in a node log.
//!
//! Each log is read line by line, in node-name order, after stripping ANSI colour codes: a colour code between the
//! words of a line must not hide a pattern. A line counts once, for the first pattern it contains. Any hit is
//! `invalid`, with the first hit as the reason; the details list every hit.

use super::{CheckInput, CheckResult, Checker};
use crate::verdict::Verdict;
use serde_json::{json, Value};

/// Checks node logs for failure patterns.
#[derive(Debug, Clone, Default)]
pub struct LogPatterns {
    /// Substrings that mean failure when a node log line contains one.
    pub patterns: Vec<String>,
}

impl Checker for LogPatterns {
    fn name(&self) -> &'static str {
        "log-patterns"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let mut hits = Vec::new();
        for (node, text) in input.node_logs {
            let text = strip_ansi(text);
            for (number, line) in text.lines().enumerate() {
                if let Some(pattern) = self.patterns.iter().find(|p| line.contains(p.as_str())) {
                    hits.push(json!({"node": node, "line_number": number + 1, "pattern": pattern, "line": line}));
                }
            }
        }
        match hits.first() {
            None => CheckResult::new(
                self.name(),
                Verdict::Valid,
                format!("no node log matches {:?}", self.patterns),
                Value::Null,
            ),
            Some(first) => CheckResult::new(
                self.name(),
                Verdict::Invalid,
                format!(
                    "{} log line {} matches `{}`: {}",
                    first["node"].as_str().unwrap_or("?"),
                    first["line_number"],
                    first["pattern"].as_str().unwrap_or("?"),
                    first["line"].as_str().unwrap_or("")
                ),
                json!(hits),
            ),
        }
    }
}

/// `text` without ANSI escape sequences (CSI `ESC [ ... final-byte`, and lone `ESC x`): colour codes between the
/// words of a log line must not hide a pattern.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // A CSI sequence runs to its final byte (0x40..=0x7e); any other escape is two characters.
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::history;
    use std::collections::BTreeMap;

    #[test]
    fn given_coloured_log_text_when_stripped_should_match_plain_patterns() {
        let line = "\u{1b}[31mthread 'shard-0' \u{1b}[1mpanicked\u{1b}[0m at core/x.rs:1:2";
        assert_eq!(strip_ansi(line), "thread 'shard-0' panicked at core/x.rs:1:2");
        assert!(strip_ansi("\u{1b}[2m2026\u{1b}[0m panicked at").contains("panicked at"));
    }

    #[test]
    fn given_a_coloured_panic_in_a_node_log_when_checked_should_be_invalid_naming_node_and_line() {
        let logs = BTreeMap::from([
            ("n1".to_string(), "booted\n".to_string()),
            (
                "n2".to_string(),
                "ok\n\u{1b}[1mpanicked\u{1b}[0m at x.rs:1:2\n".to_string(),
            ),
        ]);
        let checker = LogPatterns {
            patterns: vec!["panicked at".into()],
        };
        let h = history(vec![]);
        let result = checker.check(&CheckInput {
            history: &h,
            node_logs: &logs,
        });
        assert_eq!(result.verdict, Verdict::Invalid);
        assert_eq!(
            result.reason,
            "n2 log line 2 matches `panicked at`: panicked at x.rs:1:2"
        );
    }
}
