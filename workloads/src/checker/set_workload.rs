//! `set` (set workload): acknowledged elements lost or missing from later reads, and elements nobody added, found by
//! [`crate::check_set`] (Jepsen's set-full), or by [`crate::check_set_final`] (Jepsen's set: adds against one final
//! read). The details are the whole [`crate::SetCheckResult`]; the evidence time is the earliest moment an element
//! went missing (or was last seen).

use super::{CheckInput, CheckResult, Checker};
use crate::set_check::{check_set_final, check_set_with, SetCheckOptions};
use serde_json::Value;

/// Checks a set workload's history.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetWorkload {
    /// Whether stale reads count (set-full).
    pub options: SetCheckOptions,
    /// Judge only the final read (Jepsen's `set`) instead of every read (`set-full`).
    pub final_read: bool,
}

impl Checker for SetWorkload {
    fn name(&self) -> &'static str {
        "set"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = if self.final_read {
            check_set_final(input.history)
        } else {
            check_set_with(input.history, &self.options)
        };
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
