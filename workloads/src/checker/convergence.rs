//! `convergence`: every node reached the same commit point.
//!
//! After the final phase the harness waits for every member's commit point to agree and records `converged` (how long
//! it took, the commit point, the members it compared) or `convergence-timeout` (each member's commit point when the
//! wait gave up). Members are who the system listed last (`observation` `members`): a node a membership change removed
//! is not required to converge. A timeout is `invalid`; a plan without a final phase or a system without a status
//! probe is not checked; a final
//! phase that never reached the wait is `unknown`; otherwise `valid`.

use super::{lifecycle_events, CheckInput, CheckResult, Checker};
use crate::history::Lifecycle;
use crate::verdict::Verdict;
use serde_json::{json, Value};

/// Why convergence timed out. An exec system's `digest` joins its commit point as ` digest /ptr=...`: when the
/// positions agree and only the digests differ, the data diverged at one commit point, which is what the sentence
/// says (commit points alone would have called such nodes converged).
fn timeout_sentence(timeout: &Value) -> String {
    let points: Vec<&str> = timeout["commit_points"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let position = |point: &str| point.split_once(" digest ").map(|(at, _)| at.to_string());
    let positions: Vec<Option<String>> = points.iter().map(|p| position(p)).collect();
    let same_position = positions.len() > 1 && positions.iter().all(|p| p.is_some() && *p == positions[0]);
    if same_position {
        return format!(
            "nodes reached the same commit point but their data differs (their digests disagree) for {} ms: {}",
            timeout["timeout_ms"], timeout["commit_points"]
        );
    }
    format!(
        "nodes did not reach the same commit point within {} ms: {}",
        timeout["timeout_ms"], timeout["commit_points"]
    )
}

/// Who a `converged` record compared, in words: the members that were ready (`compared`), and those left out with
/// their state (`left_out`: refused, crashed, still starting). Records written before `compared` existed name the
/// members only.
fn who_converged(converged: &Value) -> String {
    let compared = match converged.get("compared") {
        Some(compared) => crate::membership::names(compared),
        None => crate::membership::names(&converged["members"]),
    };
    if compared.is_empty() {
        return "every node".to_string();
    }
    let names = compared.into_iter().collect::<Vec<_>>().join(", ");
    let left_out: Vec<String> = converged["left_out"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(node, state)| format!("{node} ({})", state.as_str().unwrap_or("?")))
                .collect()
        })
        .unwrap_or_default();
    if left_out.is_empty() {
        format!("every member ({names})")
    } else {
        format!("the ready members ({names}; not compared: {})", left_out.join(", "))
    }
}

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
                timeout_sentence(&timeout.value),
                timeout.value.clone(),
            );
        }
        let converged: Vec<Value> = lifecycle(Lifecycle::Converged).map(|e| e.value.clone()).collect();
        if !self.final_phase_enabled {
            return CheckResult::not_checked(self.name(), "the plan disables the final phase", Value::Null);
        }
        if !self.commit_point_known {
            return CheckResult::not_checked(
                self.name(),
                "the system has no status probe, so it reports no commit point to compare (give it `system.status` \
                 with a `commit_point`)",
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
        let who = converged.last().map_or_else(|| "every node".to_string(), who_converged);
        result(
            Verdict::Valid,
            format!("{who} reached the same commit point (after {})", times.join(", ")),
            json!(converged),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{event, history};
    use crate::history::EventKind;
    use std::collections::BTreeMap;

    fn check(converged: Value) -> CheckResult {
        let history = history(vec![event(EventKind::Lifecycle, "converged", None, converged)]);
        let logs = BTreeMap::new();
        let checker = Convergence {
            final_phase_enabled: true,
            commit_point_known: true,
        };
        checker.check(&CheckInput {
            history: &history,
            node_logs: &logs,
        })
    }

    #[test]
    fn given_a_member_left_out_of_the_comparison_should_not_name_it_among_those_that_converged() {
        let result = check(
            json!({"converge_ms": 40, "commit_point": "77", "members": ["n1", "n2", "n3"],
            "compared": ["n1", "n2"], "left_out": {"n3": "not ready yet"}}),
        );
        assert_eq!(result.verdict, Verdict::Valid);
        assert_eq!(
            result.reason,
            "the ready members (n1, n2; not compared: n3 (not ready yet)) reached the same commit point (after 40 ms)"
        );
        let all = check(json!({"converge_ms": 40, "commit_point": "77", "members": ["n1", "n2"],
            "compared": ["n1", "n2"], "left_out": {}}));
        assert_eq!(
            all.reason,
            "every member (n1, n2) reached the same commit point (after 40 ms)"
        );
    }

    #[test]
    fn given_equal_positions_with_different_digests_when_convergence_timed_out_should_say_the_data_differs() {
        let history = history(vec![event(
            EventKind::Lifecycle,
            "convergence-timeout",
            None,
            json!({"timeout_ms": 30000, "commit_points": {
                "n1": "/vclock={\"1\":3181} digest /digest=n=1138",
                "n2": "/vclock={\"1\":3181} digest /digest=n=1144"}}),
        )]);
        let logs = BTreeMap::new();
        let checker = Convergence {
            final_phase_enabled: true,
            commit_point_known: true,
        };
        let result = checker.check(&CheckInput {
            history: &history,
            node_logs: &logs,
        });
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(
            result
                .reason
                .starts_with("nodes reached the same commit point but their data differs"),
            "{}",
            result.reason
        );
    }
}
