//! `convergence`: every node reached the same commit point.
//!
//! After the final phase the harness waits for every member's commit point to agree and records `converged` (how long
//! it took, the commit point, the members it compared) or `convergence-timeout` (each member's commit point when the
//! wait gave up). Members are who the system listed last (`observation` `members`): a node a membership change removed
//! is not required to converge. A timeout is `invalid`; a plan without a final phase is `valid` (not checked); a final
//! phase that never reached the wait is `unknown`; otherwise `valid`.

use super::{lifecycle_events, CheckInput, CheckResult, Checker};
use crate::history::Lifecycle;
use crate::verdict::Verdict;
use serde_json::{json, Value};

/// Checks that the nodes converged after the final phase.
#[derive(Debug, Clone, Copy)]
pub struct Convergence {
    /// The plan runs a final phase; without one there is nothing to check.
    pub final_phase_enabled: bool,
    /// The system reports a commit point (it has a status probe); without one there is nothing to compare.
    pub commit_point_known: bool,
}

impl Checker for Convergence {
    fn name(&self) -> &'static str {
        "convergence"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = |verdict, reason, details| CheckResult::new(self.name(), verdict, reason, details);
        let lifecycle = |f| lifecycle_events(input.history, f);
        if let Some(timeout) = lifecycle(Lifecycle::ConvergenceTimeout).next() {
            return result(
                Verdict::Invalid,
                format!(
                    "nodes did not reach the same commit point within {} ms: {}",
                    timeout.value["timeout_ms"], timeout.value["commit_points"]
                ),
                timeout.value.clone(),
            );
        }
        let converged: Vec<Value> = lifecycle(Lifecycle::Converged).map(|e| e.value.clone()).collect();
        if !self.final_phase_enabled {
            return result(
                Verdict::Valid,
                "not checked: the plan disables the final phase".into(),
                Value::Null,
            );
        }
        if !self.commit_point_known {
            return result(
                Verdict::Valid,
                "not checked: the system has no status probe, so it reports no commit point to compare (give it \
                 `system.status` with a `commit_point`)"
                    .into(),
                Value::Null,
            );
        }
        if converged.is_empty() {
            return result(
                Verdict::Unknown,
                "the final phase did not reach the convergence check".into(),
                Value::Null,
            );
        }
        let times: Vec<String> = converged.iter().map(|c| format!("{} ms", c["converge_ms"])).collect();
        let who = match converged.last().map(|c| crate::membership::names(&c["members"])) {
            Some(members) if !members.is_empty() => {
                format!("every member ({})", members.into_iter().collect::<Vec<_>>().join(", "))
            }
            _ => "every node".to_string(),
        };
        result(
            Verdict::Valid,
            format!("{who} reached the same commit point (after {})", times.join(", ")),
            json!(converged),
        )
    }
}
