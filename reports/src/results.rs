//! `results.json`: every verdict of a run, its counts and timings.
//!
//! Schema (versioned by `schema_version`; bump it on any incompatible change):
//! - `schema_version` (1), `faultline_version`
//! - `verdict` (`valid|invalid|unknown`, the worst of the checks), `reason` (one sentence)
//! - `plan`, `system`, `seed`, `started_at` (RFC 3339 UTC), `duration_ms`, `store_dir`, `repro` (a command line)
//! - `checks`: one entry per check: `name`, `verdict`, `reason`, `details` (check-specific JSON) and `warnings` (what a
//!   person should know even when the verdict stands; absent when there are none)
//! - `counts`: client ops by completion (`invoke`, `ok`, `fail`, `info`, `open`), nemesis and lifecycle events
//! - `coverage`: a `faultline_workloads::coverage::Coverage`: `states[{name, description, reached, count, first_ms}]`
//!   (every named state, in order) and `triggers[{trigger, condition, action, fired, declined, skipped}]`. Added
//!   without a version bump: it is additive, and a results.json written before it loads with empty coverage
//! - `behaviours`: a `faultline_workloads::behaviour::BehaviourSummary`: `distinct`, `by_kind{kind: count}`,
//!   `dropped` (past their kind's budget, `faultline_workloads::behaviour::kind_budget`) and, for a run of a
//!   campaign that records behaviours, `novelty{campaign, run, new, new_by_kind, new_templates[]}`; the behaviours
//!   themselves are in `behaviours.json` beside it. Additive too
//!
//! `details` per check (what `report.html` draws; unknown fields are ignored, so checks may add to them):
//! - `history`: `{events, truncated_tail}`;
//! - `linearizability`: a `faultline_workloads::LinearizabilityResult` (`verdict`, `reason`, `model`, `ops`,
//!   `elapsed_ms`, `keys[{key, ops, verdict, stopped?, elapsed_ms, cache_entries}]`, and for an invalid history
//!   `explanation{key, op, op_legal_in_state, linearized_count, linearized_tail[{op, state_after}], state, concurrent,
//!   concurrent_count, lines}`, ops as `{process?, invoke_index, complete_index?, completion, description}`);
//! - `boot`: per node name `{boots, refusals[{event, index, line, legitimate}], problems[], io_exits[]}` (`index`:
//!   history index);
//! - `liveness`: `{recovered[{after, recovery_ms, attempts}], timeout?{after, timeout_ms, attempts}}`;
//! - `convergence`: `[{converge_ms, commit_point}]`, or on timeout `{timeout_ms, commit_points{node: point}}`;
//! - `set`: a `faultline_workloads::SetCheckResult` (`verdict`, `reason`, `stats`, `anomalies[{element, kind, add_outcome,
//!   acked_ns?, last_seen_ns?, first_missing_ns?, first_missing_node?, missing_reads, description, ...}]`);
//! - `log-patterns`: `[{node, line_number, pattern, line, next?}]` (`next`: the message line after a matched line
//!   that ends with `:`, as a Rust panic prints it; null when nothing matched);
//! - `durability`: `{nodes{<node>{restarts[{stop_index, stop_ns, cause, durable, boot_index, boot_ns, recovered,
//!   forgotten, judgement, surgery?{op, file, offset, length}, text}]}}}` (`judgement` `forgotten` and
//!   `booted-on-damage` are drawn bad, `damage-truncated` a warning).

pub use faultline_workloads::behaviour::BehaviourSummary;
pub use faultline_workloads::coverage::Coverage;
use faultline_workloads::history::{EventKind, History};
use serde::{Deserialize, Serialize};

/// The current results.json schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// The `system` of the results `faultline check FILE --report DIR` writes: a history checked on its own, with no
/// run, plan, faults or coverage behind it.
pub const CHECKED_HISTORY: &str = "history";

pub use faultline_workloads::Verdict;

/// Upper-case verdict name for terminal output.
pub fn shout(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Valid => "VALID",
        Verdict::Invalid => "INVALID",
        Verdict::Unknown => "UNKNOWN",
    }
}

/// One check's outcome; it lives beside the checkers that produce it.
pub use faultline_workloads::CheckResult;

/// Operation and event counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Client invocations.
    pub invoke: u64,
    /// Completed and took effect.
    pub ok: u64,
    /// Definitely did not take effect.
    pub fail: u64,
    /// Unknown outcome.
    pub info: u64,
    /// Invoked but never completed (the run stopped first).
    pub open: u64,
    /// Nemesis events.
    pub nemesis: u64,
    /// Lifecycle events.
    pub lifecycle: u64,
}

impl Counts {
    /// Counts a history's events.
    pub fn of(history: &History) -> Counts {
        let mut counts = Counts::default();
        for event in &history.events {
            match event.kind {
                EventKind::Invoke => counts.invoke += 1,
                EventKind::Ok => counts.ok += 1,
                EventKind::Fail => counts.fail += 1,
                EventKind::Info => counts.info += 1,
                EventKind::Nemesis => counts.nemesis += 1,
                EventKind::Lifecycle => counts.lifecycle += 1,
                EventKind::Meta | EventKind::Observation => {}
            }
        }
        counts.open = counts.invoke.saturating_sub(counts.ok + counts.fail + counts.info);
        counts
    }
}

/// The whole results.json document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Schema version, [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// faultline's version.
    pub faultline_version: String,
    /// Combined verdict.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
    /// Plan name.
    pub plan: String,
    /// System kind.
    pub system: String,
    /// Run seed.
    pub seed: u64,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Run length.
    pub duration_ms: u64,
    /// The store folder.
    pub store_dir: String,
    /// A command that re-runs this test.
    pub repro: String,
    /// All checks.
    pub checks: Vec<CheckResult>,
    /// Counts.
    pub counts: Counts,
    /// Which named states the run reached (empty when read from a results.json older than coverage).
    #[serde(default)]
    pub coverage: Coverage,
    /// What the system did, in numbers: distinct behaviours by kind and, in a campaign, how many were new to it
    /// (`faultline_workloads::behaviour`; the behaviours themselves are in `behaviours.json`). Empty when read from a
    /// results.json older than behaviours.
    #[serde(default)]
    pub behaviours: BehaviourSummary,
}

impl Results {
    /// Combines checks: the verdict is the worst; the reason is that of the first check with the worst verdict.
    pub fn combine(checks: &[CheckResult]) -> (Verdict, String) {
        faultline_workloads::checker::combine(checks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn check(name: &str, verdict: Verdict) -> CheckResult {
        CheckResult {
            name: name.into(),
            verdict,
            reason: format!("{name} said so"),
            details: Value::Null,
            evidence_ns: None,
            warnings: Vec::new(),
            evidence_nodes: Vec::new(),
            not_checked: false,
        }
    }

    #[test]
    fn given_checks_when_combined_should_let_invalid_beat_unknown_beat_valid() {
        let (v, r) = Results::combine(&[check("a", Verdict::Valid), check("b", Verdict::Unknown)]);
        assert_eq!(v, Verdict::Unknown);
        assert_eq!(r, "b: b said so");
        let (v, r) = Results::combine(&[check("a", Verdict::Unknown), check("c", Verdict::Invalid)]);
        assert_eq!((v, r.as_str()), (Verdict::Invalid, "c: c said so"));
        assert_eq!(Results::combine(&[check("a", Verdict::Valid)]).0, Verdict::Valid);
        assert_eq!(
            Results::combine(&[]).0,
            Verdict::Unknown,
            "an unchecked run is never valid"
        );
    }

    #[test]
    fn given_a_results_json_written_before_coverage_when_read_should_load_with_empty_coverage() {
        let old = serde_json::json!({"schema_version": 1, "faultline_version": "0.1.0", "verdict": "valid",
            "reason": "", "plan": "p", "system": "reference", "seed": 1, "started_at": "", "duration_ms": 0,
            "store_dir": "", "repro": "", "checks": [], "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0,
            "open": 0, "nemesis": 0, "lifecycle": 0}});
        let results: Results = serde_json::from_value(old).expect("an old results.json still loads");
        assert_eq!(results.coverage, Coverage::default());
    }
}
