//! How a refusal to boot is quoted: the line a pattern matched and the error lines just before it.
//!
//! A system that refuses to boot usually says why a few lines before the line that says it gives up: MySQL logs
//! `[ERROR] ... Table 'mysql.db' doesn't exist` two lines before `[ERROR] Aborting`, and a plan's refusal pattern
//! naturally matches the second. Quoting only the match tells the reader that the node stopped, not why, so the quote
//! leads with the system's own error and fatal lines among the few before the match, then the match itself.

/// How many lines before the matched one may hold its cause.
pub const CAUSE_LINES_BEFORE: usize = 5;
/// Upper bound on the cause lines quoted (the nearest ones to the match are kept).
const CAUSE_LINES_MAX: usize = 3;
/// Upper bound on one quoted line, in characters: a stack trace on one line must not fill the report.
const QUOTED_LINE_CHARS_MAX: usize = 300;
/// Words by which a log line says it is the system's own error (case matters: `error` in lower case is too common in
/// ordinary messages, `error:` is how most programs print one).
const ERROR_WORDS: &[&str] = &[
    "ERROR", "Error", "error:", "FATAL", "Fatal", "fatal", "PANIC", "panic:", "CRITICAL", "SEVERE",
];

/// The quote of a refusal whose pattern matched `lines[matched]`: the error lines among the
/// [`CAUSE_LINES_BEFORE`] lines before it (in log order), then the matched line, joined by ` | `.
pub fn quote(lines: &[&str], matched: usize) -> String {
    let first = matched.saturating_sub(CAUSE_LINES_BEFORE);
    let causes: Vec<&str> = lines[first..matched]
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.is_empty() && ERROR_WORDS.iter().any(|word| line.contains(word)))
        .collect();
    let causes = &causes[causes.len().saturating_sub(CAUSE_LINES_MAX)..];
    causes
        .iter()
        .chain(std::iter::once(&lines[matched].trim()))
        .map(|line| shorten(line))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `line` cut to [`QUOTED_LINE_CHARS_MAX`] characters, with an ellipsis when cut.
fn shorten(line: &str) -> String {
    match line.char_indices().nth(QUOTED_LINE_CHARS_MAX) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_refusal_whose_cause_is_two_lines_earlier_when_quoted_should_lead_with_the_cause() {
        let log = "2026-12-01T10:00:00.1 0 [Note] InnoDB: Buffer pool(s) load completed\n\
                   2026-12-01T10:00:00.2 0 [ERROR] Fatal error: Can't open and lock privilege tables: Table 'mysql.db' doesn't exist\n\
                   2026-12-01T10:00:00.3 0 [Note] Server socket created on IP: '127.0.0.1'.\n\
                   2026-12-01T10:00:00.4 0 [ERROR] Aborting";
        let lines: Vec<&str> = log.lines().collect();
        let quoted = quote(&lines, 3);
        assert_eq!(
            quoted,
            "2026-12-01T10:00:00.2 0 [ERROR] Fatal error: Can't open and lock privilege tables: Table 'mysql.db' \
             doesn't exist | 2026-12-01T10:00:00.4 0 [ERROR] Aborting"
        );
    }

    #[test]
    fn given_a_refusal_without_error_lines_before_it_when_quoted_should_be_the_match_alone() {
        let lines = ["starting", "opened wal", "wal: op 7 does not chain: refusing to boot"];
        assert_eq!(quote(&lines, 2), "wal: op 7 does not chain: refusing to boot");
        assert_eq!(quote(&lines[2..], 0), "wal: op 7 does not chain: refusing to boot");
    }

    #[test]
    fn given_many_error_lines_and_a_long_one_when_quoted_should_keep_the_nearest_and_bound_each() {
        let long = format!("ERROR {}", "x".repeat(1000));
        let lines = ["ERROR a", "ERROR b", "ERROR c", "ERROR d", long.as_str(), "refusing"];
        let quoted = quote(&lines, 5);
        assert!(quoted.starts_with("ERROR c | ERROR d | ERROR xxx"), "{quoted}");
        assert!(quoted.ends_with("… | refusing"), "{quoted}");
        assert!(quoted.chars().count() < 400, "{quoted}");
    }
}
