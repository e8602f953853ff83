//! `set` (set workload): acknowledged elements lost or missing from later reads, and elements nobody added, found by
//! [`crate::check_set`] (Jepsen's set-full). The details are the whole [`crate::SetCheckResult`]; the evidence time
//! is the earliest moment an element went missing (or was last seen).

use super::{CheckInput, CheckResult, Checker};
use crate::set_check::check_set;
use serde_json::Value;

/// Checks a set workload's history.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetWorkload;

impl Checker for SetWorkload {
    fn name(&self) -> &'static str {
        "set"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = check_set(input.history);
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        checked.evidence_ns = result
            .anomalies
            .iter()
            .filter_map(|a| a.first_missing_ns.or(a.last_seen_ns))
            .min();
        checked
    }
}
