//! `log-patterns`: none of the plan's failure patterns (`panicked at`, `assertion failed`, ...) appears in a node log.
//!
//! Each log is read line by line, in node-name order, after stripping ANSI colour codes: a colour code between the
//! words of a line must not hide a pattern. A line counts once, for the first pattern it contains. Any hit is
//! `invalid`, with the first hit as the reason; the details list every hit.
//!
//! A matched line that ends with `:` announces its message on the next line, as a Rust panic does since 1.73
//! (`thread 'shard-0' panicked at core/consensus/src/impls.rs:1494:9:` then `commit_min must advance ...`): that
//! line is kept as the hit's `next` and ends the reason, since the message is what tells two panics apart.
//!
//! The evidence time (for time-to-detection and for naming the live cut that preceded a failure) is the newest RFC
//! 3339 timestamp that starts a line at or above the earliest hit (a panic's own lines carry none), against the run's
//! wall-clock start; unknown when a log has no such timestamps.

use super::{CheckInput, CheckResult, Checker};
use crate::verdict::Verdict;
use serde_json::{json, Value};
use std::time::SystemTime;

/// Characters of a hit's `next` line kept.
const NEXT_LINE_CHARS_MAX: usize = 400;

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
        let started = run_start(input);
        let mut hits = Vec::new();
        let mut evidence_ns: Option<u64> = None;
        for (node, text) in input.node_logs {
            let text = strip_ansi(text);
            let lines: Vec<&str> = text.lines().collect();
            for (number, line) in lines.iter().enumerate() {
                if let Some(pattern) = self.patterns.iter().find(|p| line.contains(p.as_str())) {
                    let mut hit = json!({"node": node, "line_number": number + 1, "pattern": pattern, "line": line});
                    if let Some(next) = message_line(line, lines.get(number + 1).copied()) {
                        hit["next"] = json!(next);
                    }
                    if let Some(at_ns) = started.and_then(|started| hit_time_ns(&lines, number, started)) {
                        hit["at_ns"] = json!(at_ns);
                        evidence_ns = Some(evidence_ns.map_or(at_ns, |earliest| earliest.min(at_ns)));
                    }
                    hits.push(hit);
                }
            }
        }
        let mut result = self.verdict(&hits);
        result.evidence_ns = evidence_ns.filter(|_| !hits.is_empty());
        result
    }
}

/// The run's wall-clock start, from the history's `run-start` event.
fn run_start(input: &CheckInput) -> Option<SystemTime> {
    let start = input.history.events.iter().find(|e| e.f == "run-start")?;
    humantime::parse_rfc3339_weak(start.value["wall_clock_start"].as_str()?).ok()
}

/// Nanoseconds since `started` of the newest line at or above `number` that has an RFC 3339 timestamp: leading, or a
/// JSON logger's `"ts"` / `"time"` field (etcd's zap lines). Without it a panic in a JSON log had no evidence time,
/// and the damage judgement named the run's last cut instead of the one before the panic.
fn hit_time_ns(lines: &[&str], number: usize, started: SystemTime) -> Option<u64> {
    let stamp = lines[..=number].iter().rev().find_map(|line| line_stamp(line))?;
    let since = stamp.duration_since(started).ok()?;
    u64::try_from(since.as_nanos()).ok()
}

/// A log line's own timestamp, if it has one (see [`hit_time_ns`]).
fn line_stamp(line: &str) -> Option<SystemTime> {
    let leading = line
        .split_whitespace()
        .next()
        .filter(|t| t.as_bytes().first().is_some_and(u8::is_ascii_digit));
    if let Some(stamp) = leading.and_then(|token| humantime::parse_rfc3339_weak(token).ok()) {
        return Some(stamp);
    }
    ["\"ts\":\"", "\"time\":\""].iter().find_map(|field| {
        let (_, rest) = line.split_once(field)?;
        let (value, _) = rest.split_once('"')?;
        humantime::parse_rfc3339_weak(value).ok()
    })
}

impl LogPatterns {
    fn verdict(&self, hits: &[Value]) -> CheckResult {
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
                    "{} log line {} matches `{}`: {}{}",
                    first["node"].as_str().unwrap_or("?"),
                    first["line_number"],
                    first["pattern"].as_str().unwrap_or("?"),
                    first["line"].as_str().unwrap_or(""),
                    first["next"]
                        .as_str()
                        .map(|next| format!(" {next}"))
                        .unwrap_or_default()
                ),
                json!(hits),
            ),
        }
    }
}

/// The line after a matched `line` when `line` ends with `:` (its message follows), trimmed and cut; none when it
/// is blank or is the panic hook's backtrace note rather than a message.
pub fn message_line(line: &str, next: Option<&str>) -> Option<String> {
    if !line.trim_end().ends_with(':') {
        return None;
    }
    let next = next?.trim();
    if next.is_empty() || next.starts_with("note: run with `RUST_BACKTRACE") || next == "stack backtrace:" {
        return None;
    }
    Some(next.chars().take(NEXT_LINE_CHARS_MAX).collect())
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
    use crate::checker::tests::{event, history};
    use crate::history::EventKind;
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
        assert!(
            result.details[0].get("next").is_none(),
            "a line that does not end with `:` has no message after it"
        );
    }

    #[test]
    fn given_a_panic_after_timestamped_lines_when_checked_should_date_the_evidence_by_the_line_above_it() {
        let logs = BTreeMap::from([
            (
                "n1".to_string(),
                "2026-12-05T01:00:30.500Z INFO ready\nthread 'replica' panicked at x.rs:1:2:\nboom\n".to_string(),
            ),
            (
                "n2".to_string(),
                "2026-12-05T01:00:27.250000Z INFO view change\npanicked at y.rs:3:4\n".to_string(),
            ),
            (
                "n3".to_string(),
                "panicked at z.rs:5:6 with no timestamp anywhere\n".to_string(),
            ),
        ]);
        let checker = LogPatterns {
            patterns: vec!["panicked at".into()],
        };
        let start = event(
            EventKind::Meta,
            "run-start",
            None,
            json!({"wall_clock_start": "2026-12-05T01:00:26.000Z"}),
        );
        let h = history(vec![start]);
        let result = checker.check(&CheckInput {
            history: &h,
            node_logs: &logs,
        });
        assert_eq!(
            result.details[0]["at_ns"], 4_500_000_000u64,
            "n1, dated by the line above the panic"
        );
        assert_eq!(
            result.evidence_ns,
            Some(1_250_000_000),
            "the earliest hit is n2's, not the first listed"
        );
        assert!(result.details[2].get("at_ns").is_none(), "no timestamp: no date");
        let undated = checker.check(&CheckInput {
            history: &history(vec![]),
            node_logs: &logs,
        });
        assert_eq!(undated.evidence_ns, None, "no run start: no evidence time");
    }

    /// etcd logs zap JSON: the panic's time is its `ts` field.
    #[test]
    fn given_a_json_panic_line_when_checked_should_date_it_by_its_ts_field() {
        let logs = BTreeMap::from([(
            "n3".to_string(),
            "{\"level\":\"panic\",\"ts\":\"2026-12-05T01:00:29.159Z\",\"msg\":\"tocommit(9) is out of range\"}\n"
                .to_string(),
        )]);
        let checker = LogPatterns {
            patterns: vec!["\"level\":\"panic\"".into()],
        };
        let start = event(
            EventKind::Meta,
            "run-start",
            None,
            json!({"wall_clock_start": "2026-12-05T01:00:26.000Z"}),
        );
        let result = checker.check(&CheckInput {
            history: &history(vec![start]),
            node_logs: &logs,
        });
        assert_eq!(result.evidence_ns, Some(3_159_000_000), "{result:?}");
    }

    #[test]
    fn given_a_panic_whose_message_is_on_the_next_line_when_checked_should_keep_it_as_next_and_in_the_reason() {
        let logs = BTreeMap::from([(
            "n3".to_string(),
            "thread 'shard-0' panicked at core/consensus/src/impls.rs:1494:9:\n\
             commit_min must advance sequentially: commit_min=41, op=43\n\
             note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\
             thread 'shard-1' panicked at core/x.rs:7:1:\n\
             note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
                .to_string(),
        )]);
        let checker = LogPatterns {
            patterns: vec!["panicked at".into()],
        };
        let h = history(vec![]);
        let result = checker.check(&CheckInput {
            history: &h,
            node_logs: &logs,
        });
        assert_eq!(
            result.details[0]["next"],
            "commit_min must advance sequentially: commit_min=41, op=43"
        );
        assert!(
            result
                .reason
                .ends_with("impls.rs:1494:9: commit_min must advance sequentially: commit_min=41, op=43"),
            "{}",
            result.reason
        );
        assert!(
            result.details[1].get("next").is_none(),
            "the backtrace note is not a message"
        );
    }
}
