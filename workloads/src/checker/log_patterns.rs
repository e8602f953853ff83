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

/// `text` without ANSI escape sequences: CSI (`ESC [ ... final`, colours and cursor moves), OSC (`ESC ] ... BEL` or
/// `ESC ] ... ESC \`, hyperlinks and window titles), DCS/SOS/PM/APC strings (`ESC P|X|^|_ ... ESC \`) and the
/// two-character escapes, so that an escape between the words of a log line cannot hide a pattern.
///
/// Hand-written rather than the `strip-ansi-escapes` crate that the report uses (`reports/src/html/logs.rs`) only
/// because this crate's manifest was not part of the change that brought that crate in; replacing this with
/// `strip_ansi_escapes::strip_str` per tab-separated piece is a one-line manifest change away. Unlike the crate, it
/// keeps tabs and carriage returns, which the patterns may contain.
pub fn strip_ansi(text: &str) -> String {
    const ESC: char = '\u{1b}';
    const BEL: char = '\u{7}';
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ESC {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters and intermediates up to a final byte in 0x40..=0x7e.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            // OSC ends at BEL or ST (`ESC \`); DCS, SOS, PM and APC end at ST.
            Some(kind @ (']' | 'P' | 'X' | '^' | '_')) => {
                while let Some(c) = chars.next() {
                    if c == BEL && kind == ']' {
                        break;
                    }
                    if c == ESC && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            // `ESC` intermediates (0x20..=0x2f) and a final character, e.g. `ESC ( B`.
            Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
                chars.next();
            }
            // Any other two-character escape (`ESC 7`, `ESC M`, ...).
            _ => {}
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
    fn given_osc_hyperlinks_titles_and_charset_escapes_when_stripped_should_leave_only_the_text() {
        let line = "\u{1b}]0;iggy-server\u{7}\u{1b}(B\u{1b}[2m2026-11-29T14:45:52Z\u{1b}[0m \
                    \u{1b}]8;;file:///src/x.rs\u{1b}\\x.rs\u{1b}]8;;\u{1b}\\ panicked at\tthere";
        assert_eq!(strip_ansi(line), "2026-11-29T14:45:52Z x.rs panicked at\tthere");
        assert_eq!(
            strip_ansi("cut \u{1b}]8;;never ended"),
            "cut ",
            "an unterminated OSC runs to the end"
        );
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
