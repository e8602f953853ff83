//! `history`: did the run finish? A run that was interrupted, crashed mid-way or never got its cluster ready is at best
//! `unknown`: what was recorded is still checked by the other checks, but the absence of a failure proves less.
//!
//! The rules, first match wins: a `setup-failed` lifecycle event means `unknown` (who never became ready, or why the
//! client could not work at all, quoted with its stderr); an
//! `interrupted` meta event (SIGINT/SIGTERM) means `unknown`; a `run-end` meta event means `valid`; otherwise the
//! history stops early and is `unknown`, naming its last event.

use super::{CheckInput, CheckResult, Checker};
use crate::history::{Lifecycle, Meta};
use crate::verdict::Verdict;
use serde_json::json;

/// Checks that the run finished.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion;

impl Checker for Completion {
    fn name(&self) -> &'static str {
        "history"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let history = input.history;
        let end = history.events.iter().rev().find(|e| e.is(Meta::RunEnd));
        let interrupted = history.events.iter().any(|e| e.is(Meta::Interrupted));
        let setup_failed = history.events.iter().find(|e| e.is(Lifecycle::SetupFailed));
        let details = json!({"events": history.events.len(), "truncated_tail": history.truncated_tail});
        let result = |verdict, reason| CheckResult::new(self.name(), verdict, reason, details.clone());
        if let Some(failed) = setup_failed {
            if let Some(why) = failed.value["error"]
                .as_str()
                .filter(|_| failed.value["reason"] == "client")
            {
                return result(Verdict::Unknown, format!("setup failed: {why}"));
            }
            let who = failed.node.clone().unwrap_or_else(|| "the cluster".into());
            return result(
                Verdict::Unknown,
                format!("setup failed: {who} never became ready ({})", failed.value),
            );
        }
        match (end, interrupted) {
            (Some(_), false) => result(
                Verdict::Valid,
                format!("the run finished; {} events recorded", history.events.len()),
            ),
            (_, true) => result(
                Verdict::Unknown,
                "the run was interrupted (SIGINT/SIGTERM); what was recorded is checked".into(),
            ),
            (None, _) => {
                let last = history
                    .events
                    .last()
                    .map(|e| format!("#{} {:?} {}", e.index, e.kind, e.f))
                    .unwrap_or_default();
                result(
                    Verdict::Unknown,
                    format!("the run did not finish (the history ends at {last}); what was recorded is checked"),
                )
            }
        }
    }
}
