//! `log` (log workload): lost, duplicated, reordered, stale and phantom messages, found by [`crate::check_log`] in
//! linear time. Which anomalies count depends on what the system promises: linearizable reads enable the stale-read
//! check, and the durability promise decides whether an acknowledged append may be lost. The details are the whole
//! [`crate::LogCheckResult`]; the evidence time is the earliest moment any anomaly became visible: an anomaly is a
//! contradiction between the operations it names (an acknowledgement and the read that found the entry missing or
//! overwritten, two reads that disagree), so it is seen at the completion of the *last* of them, not at the first
//! acknowledgement. A loss found after a live cut is thus dated after the cut, and the damage judgement names it.

use super::{time_of, CheckInput, CheckResult, Checker};
use crate::history::History;
use crate::log_check::{check_log, Anomaly, LogCheckOptions};
use serde_json::Value;

/// Checks a log workload's history against the system's promises.
#[derive(Debug, Clone, Default)]
pub struct LogWorkload {
    /// Linearizable reads and the durability promise.
    pub options: LogCheckOptions,
}

impl Checker for LogWorkload {
    fn name(&self) -> &'static str {
        "log"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let history = input.history;
        let result = check_log(history, &self.options);
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        checked.evidence_ns = result.anomalies.iter().filter_map(|a| seen_ns(history, a)).min();
        checked
    }
}

/// When `anomaly` became visible: the completion (or, if none, the invocation) of the last operation it names.
fn seen_ns(history: &History, anomaly: &Anomaly) -> Option<u64> {
    anomaly
        .ops
        .iter()
        .filter_map(|op| time_of(history, op.completion_index.unwrap_or(op.invoke_index)))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{event, history};
    use crate::history::EventKind;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn op(kind: EventKind, f: &str, process: u64, value: Value) -> crate::history::Event {
        let mut e = event(kind, f, None, value);
        e.process = Some(process);
        e.key = Some("log-1".into());
        e
    }

    /// An append acknowledged at 1 s, a cut at 5 s, and the final read at 9 s that no longer has it: the loss is
    /// seen at 9 s, after the cut, not at the acknowledgement.
    #[test]
    fn given_an_entry_acknowledged_early_and_found_missing_late_when_checked_should_date_the_evidence_at_the_read() {
        let mut h = history(vec![
            op(EventKind::Invoke, "append", 1, json!("a")),
            op(EventKind::Ok, "append", 1, json!({"offset": 0, "payload": "a"})),
            op(EventKind::Invoke, "append", 2, json!("b")),
            op(EventKind::Ok, "append", 2, json!({"offset": 1, "payload": "b"})),
            event(
                EventKind::Lifecycle,
                "final-reads",
                None,
                json!({"label": "after-heal"}),
            ),
            op(EventKind::Invoke, "read", 3, json!({"from": 0})),
            op(EventKind::Ok, "read", 3, json!({"entries": [[0, "a"]], "end": 1})),
        ]);
        for (e, at_s) in h.events.iter_mut().zip([1, 1, 2, 2, 8, 9, 9]) {
            e.time_ns = at_s * 1_000_000_000;
        }
        let logs = BTreeMap::new();
        let result = LogWorkload::default().check(&CheckInput {
            history: &h,
            node_logs: &logs,
        });
        assert_eq!(result.verdict, crate::Verdict::Invalid, "{}", result.reason);
        assert_eq!(result.evidence_ns, Some(9_000_000_000), "{}", result.reason);
    }
}
