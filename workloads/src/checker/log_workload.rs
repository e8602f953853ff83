//! `log` (log workload): lost, duplicated, reordered, stale and phantom messages, found by [`crate::check_log`] in
//! linear time. Which anomalies count depends on what the system promises: linearizable reads enable the stale-read
//! check, and the durability promise decides whether an acknowledged append may be lost. The details are the whole
//! [`crate::LogCheckResult`]; the evidence time is the earliest operation any anomaly names.

use super::{time_of, CheckInput, CheckResult, Checker};
use crate::log_check::{check_log, LogCheckOptions};
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
        checked.evidence_ns = result
            .anomalies
            .iter()
            .flat_map(|a| a.ops.iter())
            .filter_map(|op| time_of(history, op.completion_index.unwrap_or(op.invoke_index)))
            .min();
        checked
    }
}
