//! `linearizability` (register workload): the client history under a model (the cas-register for faultline's
//! register workload), checked per key by the search in [`crate::linearizability`] within a time and memory budget;
//! past either the answer is `unknown`. The details are the whole [`crate::LinearizabilityResult`], with every failing
//! key's explanation up to [`crate::linearizability::EXPLAINED_KEYS_MAX`]; an invalid verdict's evidence time is that
//! of the operation the first explanation names.

use super::{time_of, CheckInput, CheckResult, Checker};
use crate::history::EventKind;
use crate::linearizability::{check_history, CheckOptions};
use crate::models::ModelKind;
use crate::verdict::Verdict;
use serde_json::Value;
use std::time::Duration;

/// Checks the client history for linearizability under `model`.
#[derive(Debug, Clone)]
pub struct Linearizability {
    /// The model the history must be linearizable under.
    pub model: ModelKind,
    /// The search's time and memory budget and parallelism.
    pub options: CheckOptions,
}

impl Linearizability {
    /// The checker of `model` within `timeout` that explains every failing key, not only the first
    /// [`crate::linearizability::EXPLAINED_KEYS_MAX`]: for `faultline check --explain-keys`, where a person asked.
    pub fn explaining_every_key(model: ModelKind, timeout: Duration) -> Linearizability {
        Linearizability {
            model,
            options: CheckOptions {
                timeout,
                explained_keys_max: usize::MAX,
                ..CheckOptions::default()
            },
        }
    }
}

impl Checker for Linearizability {
    fn name(&self) -> &'static str {
        "linearizability"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let history = input.history;
        let result = check_history(history, self.model, &self.options);
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        let completed_ok = history.client_events().filter(|e| e.kind == EventKind::Ok).count();
        if result.verdict == Verdict::Valid && completed_ok == 0 {
            let invoked = history.client_events().filter(|e| e.kind == EventKind::Invoke).count();
            let why = match invoked {
                0 => "the history holds no client operation".to_string(),
                n => format!(
                    "none of the {n} operations completed ok (a failed or unknown operation constrains no order)"
                ),
            };
            return CheckResult::not_checked(self.name(), &why, details);
        }
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        checked.evidence_ns = result.explanation.as_ref().and_then(|e| {
            let index = e.op.complete_index.unwrap_or(e.op.invoke_index);
            time_of(history, index)
        });
        checked
    }
}
