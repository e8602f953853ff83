//! Node log lines as timed templates: each line of `nodes/n<i>/node.log` (the harness's own `=== faultline: ...`
//! lines aside) masked into its template ([`crate::logmask::log_line_key`]: numbers, hex, ids, paths, durations,
//! node names and timestamps masked; a panic keyed on its place; a JSON line on its level, caller and message) and
//! placed on the history's clock through the run-start anchor ([`crate::nodelog`]).
//!
//! A line's time is the node's own stamp. Under a clock fault that stamp is the faked clock's, so a line may land up to
//! the fault's offset away from where the history would put it; behaviours that use time (the fault context, pairs
//! within a window) are coarse enough for the bounded offsets the general plans use, and a plan that bumps clocks by
//! seconds gets coarser contexts for those lines, not wrong verdicts (behaviours judge nothing).

use crate::logmask::log_line_key;
use crate::nodelog::NodeLog;
use std::collections::BTreeMap;

/// Prefix of the lines the harness writes into a node's log.
const HARNESS_PREFIX: &str = "=== faultline";

/// One log line of one node, on the history's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedLine {
    /// History time (ns since the run started); lines before the anchor are at 0.
    pub time_ns: u64,
    /// The node (`n1` ...).
    pub node: String,
    /// The masked line.
    pub template: String,
}

/// Every line of every node's log, as templates in time order (a node's lines keep their file order among equal
/// times). Without an anchor (`offset_ns` none: a history without its run-start line) every line is at 0.
pub fn timed_lines(node_logs: &BTreeMap<String, String>, offset_ns: Option<i128>) -> Vec<TimedLine> {
    let mut lines = Vec::new();
    for (node, text) in node_logs {
        let log = NodeLog::parse(text);
        let mut lines_of_node = log.lines.iter().peekable();
        while let Some(line) = lines_of_node.next() {
            if line.text.starts_with(HARNESS_PREFIX) || line.text.trim().is_empty() {
                continue;
            }
            let next = lines_of_node.peek().map(|l| l.text.as_str());
            let template = log_line_key(&line.text, next);
            if template.is_empty() {
                continue;
            }
            let time_ns = match (line.unix_ns, offset_ns) {
                (Some(unix_ns), Some(offset)) => u64::try_from((unix_ns - offset).max(0)).unwrap_or(u64::MAX),
                _ => 0,
            };
            lines.push(TimedLine {
                time_ns,
                node: node.clone(),
                template,
            });
        }
    }
    lines.sort_by_key(|l| l.time_ns);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_logs_of_two_nodes_when_timed_should_mask_and_order_them_on_the_history_clock_without_harness_lines() {
        let logs = BTreeMap::from([
            (
                "n1".to_string(),
                "=== faultline: starting `node` at 1970-01-01T00:00:10Z ===\n\
                 1970-01-01T00:00:10.5Z  INFO view change started old_view=3 new_view=4 new_primary=1\n"
                    .to_string(),
            ),
            (
                "n2".to_string(),
                "1970-01-01T00:00:10.2Z  WARN primary timed out view=3 primary=0\n\
                 \n\
                 1970-01-01T00:00:11Z  INFO view change started old_view=9 new_view=10 new_primary=2\n"
                    .to_string(),
            ),
        ]);
        // The run started at unix 10 s, history time 1 s: history = unix - 9 s.
        let lines = timed_lines(&logs, Some(9_000_000_000));
        let seen: Vec<(u64, &str, &str)> = lines
            .iter()
            .map(|l| (l.time_ns / 1_000_000, l.node.as_str(), l.template.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1200, "n2", "primary timed out view=N primary=N"),
                (1500, "n1", "view change started old_view=N new_view=N new_primary=N"),
                (2000, "n2", "view change started old_view=N new_view=N new_primary=N"),
            ]
        );
        assert!(
            timed_lines(&logs, None).iter().all(|l| l.time_ns == 0),
            "no anchor: no times"
        );
    }
}
