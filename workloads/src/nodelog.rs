//! Node logs aligned with history time, read alike by the report's log excerpts and the behaviour analysis
//! ([`crate::behaviour`]). Each node's stdout and stderr go to `nodes/n<i>/node.log`, every start introduced by
//! `=== faultline: starting ... at <time> ===`. The run-start event records the wall clock at (about) its own history
//! time, which maps a log line's wall-clock time to history time:
//! `history_ns = unix_ns - (wall_clock_unix_ns - run_start.time_ns)`.
//!
//! Each system stamps its lines its own way; [`line_time`] finds the stamp in all of them:
//! - plain lines (the reference node, most Rust and Go servers): an RFC 3339 time as the first word
//!   (`2026-12-01T15:06:25.123456Z INFO ...`, also in brackets);
//! - JSON lines (etcd's zap logger): the `ts` field (`"ts":"2026-12-01T15:06:25.123Z"`, or with a `+0000` offset, or
//!   epoch seconds as a number), else `time` / `timestamp` / `@timestamp`;
//! - coloured lines (Iggy's tracing output: ANSI colour codes before the time): stripped of escape sequences first
//!   (with `strip-ansi-escapes`, which parses CSI, OSC and the rest like a terminal would), so the page shows the
//!   text a terminal would and never a raw `\x1b`.
//!
//! A line without a stamp (a backtrace, a panic message) inherits the last stamp before it.

use crate::history::{History, Meta};
use std::path::Path;

/// What a dying process prints about its own death, case-insensitive: a crash line is the last line holding one.
const CRASH_MARKERS: &[&str] = &[
    "segmentation fault",
    "sigsegv",
    "sigbus",
    "panicked at",
    "fatal error",
    "fatal:",
    "assertion",
    "aborted",
    "core dumped",
    "terminate called",
    "stack overflow",
    "out of memory",
    "unhandled exception",
    "[fatal]",
];

/// The last line of `tail` (a process's last output) in which it says what it died of (`Segmentation fault`,
/// `panicked at ...`, `Assertion failed ...`), with escape sequences stripped; `None` when no line says.
pub fn crash_line(tail: &str) -> Option<String> {
    tail.lines().rev().map(strip_escapes).find(|line| {
        let lower = line.to_lowercase();
        CRASH_MARKERS.iter().any(|marker| lower.contains(marker))
    })
}

/// Lines shown before a crash or refusal.
pub const EXCERPT_LINES: usize = 30;
/// Log lines logged up to this long after the event was recorded still belong to it (the harness records a crash
/// after it reaps the process, so the node's last words come first; this absorbs clock jitter).
const EXCERPT_SLACK_NS: i128 = 2_000_000_000;
/// Node logs larger than this are read from their last bytes only.
const LOG_READ_MAX_BYTES: u64 = 256 << 20;
/// The harness's start marker.
const START_MARKER: &str = "=== faultline: starting ";

/// One line of a node log.
#[derive(Debug, Clone)]
pub struct LogLine {
    /// 1-based line number in the file.
    pub number: usize,
    /// Wall-clock time (its own stamp, or the last stamp before it), unix ns.
    pub unix_ns: Option<i128>,
    /// Which start of the node it belongs to (0 before the first marker, 1 from the first marker on, ...).
    pub segment: u32,
    /// The text.
    pub text: String,
}

/// A node's log, parsed.
#[derive(Debug, Clone, Default)]
pub struct NodeLog {
    /// Lines in file order.
    pub lines: Vec<LogLine>,
    /// Lines skipped at the front of a very large log.
    pub skipped_bytes: u64,
}

impl NodeLog {
    /// Reads and parses `path`; a missing file is an empty log.
    pub fn read(path: &Path) -> std::io::Result<NodeLog> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(NodeLog::default()),
            Err(e) => return Err(e),
        };
        let size = file.metadata()?.len();
        let skipped_bytes = size.saturating_sub(LOG_READ_MAX_BYTES);
        file.seek(SeekFrom::Start(skipped_bytes))?;
        let mut bytes = Vec::with_capacity((size - skipped_bytes) as usize);
        file.read_to_end(&mut bytes)?;
        let mut log = NodeLog::parse(&String::from_utf8_lossy(&bytes));
        log.skipped_bytes = skipped_bytes;
        Ok(log)
    }

    /// Parses log text.
    pub fn parse(text: &str) -> NodeLog {
        let mut lines = Vec::new();
        let (mut segment, mut last_time) = (0u32, None);
        for (i, line) in text.lines().enumerate() {
            let text = strip_escapes(line);
            let stamp = if let Some(rest) = text.strip_prefix(START_MARKER) {
                segment += 1;
                rest.rsplit_once(" at ")
                    .and_then(|(_, tail)| parse_rfc3339(tail.trim_end_matches(" ===").trim()))
            } else {
                line_time(&text)
            };
            last_time = stamp.or(last_time);
            lines.push(LogLine {
                number: i + 1,
                unix_ns: last_time,
                segment,
                text,
            });
        }
        NodeLog {
            lines,
            skipped_bytes: 0,
        }
    }

    /// The last lines the node wrote before an event at `event_unix_ns`: lines of the start the event belongs to (the
    /// last start that began before it), up to the event plus a little slack.
    pub fn before(&self, event_unix_ns: i128, count: usize) -> &[LogLine] {
        let limit = event_unix_ns + EXCERPT_SLACK_NS;
        let segment = self
            .lines
            .iter()
            .filter(|l| l.unix_ns.is_some_and(|t| t <= event_unix_ns) && l.text.starts_with(START_MARKER))
            .map(|l| l.segment)
            .next_back()
            .unwrap_or(0);
        let end = self
            .lines
            .iter()
            .rposition(|l| l.segment == segment && l.unix_ns.is_none_or(|t| t <= limit))
            .map_or(0, |i| i + 1);
        let segment_start = self.lines[..end]
            .iter()
            .rposition(|l| l.segment != segment)
            .map_or(0, |i| i + 1);
        &self.lines[segment_start.max(end.saturating_sub(count))..end]
    }
}

/// `wall_clock_unix_ns - time_ns` of the run-start event: added to a history time it gives the wall clock.
pub fn anchor_offset_ns(history: &History) -> Option<i128> {
    let start = history.events.iter().find(|e| e.is(Meta::RunStart))?;
    let wall = start.value["wall_clock_unix_ns"]
        .as_u64()
        .map(i128::from)
        .or_else(|| start.value["wall_clock_start"].as_str().and_then(parse_rfc3339))?;
    Some(wall - i128::from(start.time_ns))
}

/// `line` without terminal escape sequences (colours, OSC hyperlinks and titles, cursor moves). Tabs are kept
/// (Go stack traces indent with them; the stripper drops every control character but the newline).
pub fn strip_escapes(line: &str) -> String {
    if !line.contains('\u{1b}') && !line.contains('\u{9b}') {
        return line.to_string();
    }
    line.split('\t')
        .map(strip_ansi_escapes::strip_str)
        .collect::<Vec<_>>()
        .join("\t")
}

/// JSON fields that hold a log line's time, in the order they are tried (`ts`: zap, as etcd logs; the others: logrus,
/// slog, tracing-subscriber's JSON, Logstash).
const JSON_TIME_FIELDS: [&str; 4] = ["\"ts\":", "\"time\":", "\"timestamp\":", "\"@timestamp\":"];

/// The wall-clock time a log line (already stripped of escape sequences) is stamped with, unix ns.
pub fn line_time(text: &str) -> Option<i128> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        if let Some(t) = JSON_TIME_FIELDS.iter().find_map(|field| json_time(trimmed, field)) {
            return Some(t);
        }
    }
    let first = trimmed.split_whitespace().next()?;
    parse_rfc3339(first.trim_start_matches('[').trim_end_matches([']', ',', ':']))
}

/// The value of a top-level-looking `"field":` of a JSON line as a time: an RFC 3339 string, or a number of seconds
/// (milliseconds when it is too large to be seconds) since the epoch. Scanning, not parsing: a 256 MiB log of JSON
/// lines would otherwise be parsed into values just to read one field.
fn json_time(line: &str, field: &str) -> Option<i128> {
    let at = line.find(field)? + field.len();
    let value = line[at..].trim_start();
    if let Some(quoted) = value.strip_prefix('"') {
        return parse_rfc3339(&quoted[..quoted.find('"')?]);
    }
    let end = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (whole, fraction) = value[..end].split_once('.').unwrap_or((&value[..end], ""));
    let whole: i128 = whole.parse().ok()?;
    // Decimal digits read exactly: an f64 of epoch seconds is off by up to a few hundred nanoseconds.
    let fraction_ns = |digits: usize| -> Option<i128> {
        let kept = &fraction[..fraction.len().min(digits)];
        let value: i128 = if kept.is_empty() { 0 } else { kept.parse().ok()? };
        Some(value * 10i128.pow((digits - kept.len()) as u32))
    };
    /// Epoch seconds past this are milliseconds (year 5138 in seconds).
    const SECONDS_MAX: i128 = 100_000_000_000;
    if whole < SECONDS_MAX {
        Some(whole * 1_000_000_000 + fraction_ns(9)?)
    } else {
        Some(whole * 1_000_000 + fraction_ns(6)?)
    }
}

/// Parses an RFC 3339 time (`2026-01-02T03:04:05.123456Z`, `...+02:00`, and the ISO 8601 `...+0200` that etcd 3.4's
/// zap logger writes outside UTC) to unix nanoseconds.
pub fn parse_rfc3339(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(range)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut pos = 19;
    let mut nanos: i128 = 0;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let digits = b[pos..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for (i, c) in b[pos..pos + digits].iter().enumerate() {
            if i < 9 {
                nanos = nanos * 10 + i128::from(c - b'0');
            }
        }
        nanos *= 10i128.pow(9u32.saturating_sub(digits as u32));
        pos += digits;
    }
    let offset_s: i64 = match b.get(pos)? {
        b'Z' | b'z' => 0,
        sign @ (b'+' | b'-') => {
            let minutes_at = if b.get(pos + 3) == Some(&b':') {
                pos + 4
            } else {
                pos + 3
            };
            let (h, m) = (num(pos + 1..pos + 3)?, num(minutes_at..minutes_at + 2)?);
            let offset = h * 3600 + m * 60;
            if *sign == b'+' {
                offset
            } else {
                -offset
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(i128::from(seconds) * 1_000_000_000 + nanos)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_rfc3339_times_when_parsed_should_give_unix_nanoseconds() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(
            parse_rfc3339("2026-11-29T12:03:59.076Z"),
            Some(1_795_953_839_076_000_000)
        );
        assert_eq!(
            parse_rfc3339("2026-11-29T13:03:59.076+01:00"),
            parse_rfc3339("2026-11-29T12:03:59.076Z")
        );
        assert_eq!(parse_rfc3339("INFO starting"), None);
        assert_eq!(parse_rfc3339("2026-11-29Tgarbage:00Z"), None);
    }

    #[test]
    fn given_lines_of_etcd_iggy_and_the_reference_node_when_timed_should_find_each_stamp() {
        let t = parse_rfc3339("2026-12-01T15:06:25.123Z");
        let etcd = r#"{"level":"warn","ts":"2026-12-01T15:06:25.123Z","caller":"etcdserver/raft.go:1","msg":"x"}"#;
        assert_eq!(line_time(etcd), t, "zap JSON `ts`");
        let etcd_offset = r#"{"level":"info","ts":"2026-12-01T16:06:25.123+0100","msg":"x"}"#;
        assert_eq!(line_time(etcd_offset), t, "ISO 8601 offset without a colon");
        assert_eq!(line_time(r#"{"ts":1796137585.123,"msg":"x"}"#), t);
        let iggy = strip_escapes(
            "\u{1b}[2m2026-12-01T15:06:25.123000Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2mserver\u{1b}[0m: started",
        );
        assert_eq!(iggy, "2026-12-01T15:06:25.123000Z  INFO server: started");
        assert_eq!(line_time(&iggy), t, "coloured, once stripped");
        assert_eq!(line_time("[2026-12-01T15:06:25.123Z] INFO x"), t, "in brackets");
        assert_eq!(line_time("\tat core/x.rs:1"), None);
        assert_eq!(line_time(r#"{"msg":"no time here"}"#), None);
    }

    #[test]
    fn given_osc_hyperlinks_and_tabs_when_stripped_should_keep_the_text_and_the_tabs() {
        let line = "\u{1b}]8;;file:///x.rs\u{1b}\\x.rs\u{1b}]8;;\u{1b}\\:\t\u{1b}[31mpanicked\u{1b}[0m";
        assert_eq!(strip_escapes(line), "x.rs:\tpanicked");
    }

    #[test]
    fn given_two_starts_when_asking_before_an_event_should_return_lines_of_the_start_it_belongs_to() {
        let log = NodeLog::parse(
            "=== faultline: starting `node` at 1970-01-01T00:00:01Z ===\n\
             1970-01-01T00:00:01.5Z INFO first life\n\
             1970-01-01T00:00:02Z ERROR first death\n\
             === faultline: starting `node` at 1970-01-01T00:00:10Z ===\n\
             1970-01-01T00:00:10.1Z ERROR wal: refusing to boot\n\
             backtrace line without a stamp\n",
        );
        let first = log.before(3_000_000_000, 10);
        assert_eq!(first.len(), 3);
        assert_eq!(first[2].text, "1970-01-01T00:00:02Z ERROR first death");
        let second = log.before(10_200_000_000, 10);
        assert_eq!(second.len(), 3);
        assert!(second[1].text.contains("refusing to boot"));
        assert_eq!(
            second[2].unix_ns,
            Some(10_100_000_000),
            "unstamped lines inherit the last stamp"
        );
    }

    #[test]
    fn given_a_process_that_printed_why_it_died_when_its_crash_line_is_asked_should_quote_the_last_such_line() {
        let tail = "2026-12-07 I> ready\nSegmentation fault\n  #0 0x55 in tx_fiber\n  #1 0x56 in main\n";
        assert_eq!(crash_line(tail).as_deref(), Some("Segmentation fault"));
        assert_eq!(crash_line("I> ready\nI> serving\n"), None);
        let panic = "thread 'main' panicked at src/wal.rs:12:5:\nchain broken\nnote: run with RUST_BACKTRACE=1\n";
        assert_eq!(
            crash_line(panic).as_deref(),
            Some("thread 'main' panicked at src/wal.rs:12:5:")
        );
    }
}
