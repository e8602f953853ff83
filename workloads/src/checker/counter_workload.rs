//! `counter`: every read between what was certainly and what may have been added before it (Jepsen's counter), by
//! [`crate::counter_check`]. The details are the whole [`crate::counter_check::CounterCheckResult`]; the evidence
//! time is the first out-of-bounds read's completion.

use super::{time_of, CheckInput, CheckResult, Checker};
use crate::counter_check::check_counter;
use serde_json::Value;

/// Checks a counter history.
#[derive(Debug, Clone, Copy, Default)]
pub struct CounterWorkload;

impl Checker for CounterWorkload {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = check_counter(input.history);
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        if result.reads == 0 && result.errors.is_empty() {
            // Jepsen's counter calls such a history valid (no read can be wrong); it is rather one nothing checked.
            let why = format!(
                "no read succeeded, so nothing bounds the {} adds (Jepsen's counter calls such a history valid)",
                result.adds
            );
            return CheckResult::not_checked(self.name(), &why, details);
        }
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        checked.evidence_ns = result.errors.first().and_then(|e| time_of(input.history, e.index));
        checked
    }
}
