//! `liveness`: after healing (and after the restart-all) the cluster accepted a write within the bound.
//!
//! The harness's final phase probes for a write after each healing step and records the outcome: `recovered` with
//! how long it took, or `recovery-timeout` when no write was accepted within the plan's bound. A timeout is
//! `invalid`; a plan without a final phase is `valid` (not checked); a final phase that never reached the probe is
//! `unknown`; otherwise `valid`, listing every recovery time.

use super::{lifecycle_events, CheckInput, CheckResult, Checker};
use crate::history::Lifecycle;
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
            return result(
                Verdict::Valid,
                "not checked: the plan disables the final phase".into(),
                Value::Null,
            );
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
