//! `liveness`: after healing (and after the restart-all) the cluster accepted a write within the bound.
//!
//! The harness's final phase probes for a write after each healing step and records the outcome: `recovered` with
//! how long it took, or `recovery-timeout` when no write was accepted within the plan's bound. A timeout is
//! `invalid`; a plan without a final phase is `valid` (not checked); a final phase that never reached the probe is
//! `unknown`; otherwise `valid`, listing every recovery time.
//!
//! The probe writes through the workload's own client. When no client operation of the whole run ever succeeded,
//! a timeout cannot tell a silent cluster from a client that fails everything it is given (a client bug, a missing
//! module, a wrong address: issue 51 saw a run blamed on the system for its client's bug), so it is `unknown`, and
//! `workload-health` names the client's errors. One success anywhere in the run makes a later timeout the system's.

use super::{lifecycle_events, CheckInput, CheckResult, Checker};
use crate::history::{EventKind, Lifecycle};
use crate::verdict::Verdict;
use serde_json::{json, Value};

/// Checks the final phase's recovery probes.
#[derive(Debug, Clone, Copy)]
pub struct Liveness {
    /// The plan runs a final phase (heal, restart-all, probe); without one there is nothing to check.
    pub final_phase_enabled: bool,
}

impl Checker for Liveness {
    fn name(&self) -> &'static str {
        "liveness"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let result = |verdict, reason, details| CheckResult::new(self.name(), verdict, reason, details);
        let lifecycle = |f| lifecycle_events(input.history, f);
        let recovered: Vec<Value> = lifecycle(Lifecycle::Recovered).map(|e| e.value.clone()).collect();
        if let Some(timeout) = lifecycle(Lifecycle::RecoveryTimeout).next() {
            let client_worked = input
                .history
                .events
                .iter()
                .any(|e| e.kind == EventKind::Ok && e.process.is_some());
            if !client_worked {
                return result(
                    Verdict::Unknown,
                    format!(
                        "no write was accepted within {} ms after {}, but no client operation of the whole run \
                         ever succeeded: the client, not the cluster, may be what fails (see workload-health)",
                        timeout.value["timeout_ms"],
                        timeout.value["after"].as_str().unwrap_or("?")
                    ),
                    json!({"recovered": recovered, "timeout": timeout.value, "client_ever_succeeded": false}),
                );
            }
            return result(
                Verdict::Invalid,
                format!(
                    "the cluster did not accept a write within {} ms after {}",
                    timeout.value["timeout_ms"],
                    timeout.value["after"].as_str().unwrap_or("?")
                ),
                json!({"recovered": recovered, "timeout": timeout.value}),
            );
        }
        if !self.final_phase_enabled {
            return CheckResult::not_checked(self.name(), "the plan disables the final phase", Value::Null);
        }
        if recovered.is_empty() {
            return result(
                Verdict::Unknown,
                "the final phase did not run to the recovery probe".into(),
                Value::Null,
            );
        }
        let summary: Vec<String> = recovered
            .iter()
            .map(|r| format!("{} ms after {}", r["recovery_ms"], r["after"].as_str().unwrap_or("?")))
            .collect();
        result(
            Verdict::Valid,
            format!("the cluster accepted a write {}", summary.join(", ")),
            json!({"recovered": recovered}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, History};
    use std::collections::BTreeMap;

    /// A history of one client write answered `answer`, then a recovery probe that timed out after heal.
    fn timed_out_after(answer: EventKind) -> History {
        let write = |kind, error: Option<&str>| Event {
            index: 0,
            time_ns: 0,
            kind,
            process: Some(0),
            worker: Some(0),
            node: Some("n1".into()),
            f: "write".into(),
            key: Some("k0".into()),
            value: json!("v1"),
            error: error.map(str::to_string),
        };
        let error = (answer != EventKind::Ok).then_some("0 ");
        History {
            events: vec![
                write(EventKind::Invoke, None),
                write(answer, error),
                Event::named(
                    Lifecycle::RecoveryTimeout,
                    None,
                    json!({"timeout_ms": 30000, "after": "heal"}),
                ),
            ],
            truncated_tail: false,
        }
    }

    fn check(history: &History) -> CheckResult {
        let logs = BTreeMap::new();
        Liveness {
            final_phase_enabled: true,
        }
        .check(&CheckInput {
            history,
            node_logs: &logs,
        })
    }

    #[test]
    fn given_a_timeout_after_heal_when_the_client_once_succeeded_should_be_invalid() {
        let result = check(&timed_out_after(EventKind::Ok));
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.reason);
        assert!(result
            .reason
            .contains("did not accept a write within 30000 ms after heal"));
    }

    #[test]
    fn given_a_timeout_after_heal_when_no_client_operation_ever_succeeded_should_be_unknown() {
        let result = check(&timed_out_after(EventKind::Fail));
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
        assert!(result.reason.contains("the client, not the cluster, may be what fails"));
    }
}
