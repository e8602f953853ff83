//! `workload-health`: did the workload do enough for the other checks to mean something?
//!
//! A run whose clients failed almost every operation is not evidence of anything: linearizability of 166 successful
//! operations out of 4,397 says little, and a client bug (a missing module, a wrong column, an opaque error) looks
//! exactly like that. So the operations invoked in the fault phase *outside fault windows* (no fault active, and
//! none ended within [`SETTLE_NS`]: the time a cluster takes to elect and catch up again) are counted, where a healthy
//! system serves, and the run is `unknown` when
//! - fewer than [`MIN_OK_RATIO`] of them succeeded, or
//! - one error accounts for [`DOMINANT_ERROR_SHARE`] of them or more, or
//! - one kind of operation (`read`, `write`, `txn`, ...) was tried [`MIN_OPS_PER_F`] times or more and never
//!   succeeded (a read that always fails leaves a register check with writes alone).
//!
//! A `fail` answered `cas-mismatch` counts as answered: the compare-and-set read another value, which the checker
//! uses. With fewer than [`MIN_JUDGED_OPS`] operations outside fault windows, every operation of the fault phase is
//! judged instead (a plan with faults everywhere: the default plan's partitions and link resets leave no quiet 3 s),
//! against the lower [`MIN_OK_RATIO_UNDER_FAULTS`] and without the dominance rule (a node down for long fails most
//! operations with one error); with fewer than that in all, the check passes saying so, and with
//! none it is `unknown` (the run tested nothing). Where faults leave no quiet window but an operation invoked after
//! the fault phase (the final phase's reads, once everything is healed) succeeded, the client is shown to work on a
//! healthy cluster, and the fault phase is only required to have had one success: how much a cluster serves under
//! faults everywhere is the system's business (a loaded machine makes every view change slower; a `reference-txn` run
//! beside a busy test suite served 1.6% of its fault phase and every final read). The verdict never goes beyond `unknown`: a workload that stopped
//! working may be the system's fault, which the liveness and workload checks judge.
//!
//! Calibrated on the shipped plans (README, "Workload health"): healthy runs succeed in 90% (PostgreSQL at
//! SERIALIZABLE on five contended rows) to 100% of their operations outside fault windows, and in 25% or more of all
//! their operations where faults leave no quiet window (`reference-txn`, `default`, `reference-mixed`).

use super::fault_windows::{fault_windows, in_window};
use super::{CheckInput, CheckResult, Checker};
use crate::history::{EventKind, History, Lifecycle};
use crate::verdict::Verdict;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};

/// How long after a fault ends its effects may still fail operations.
pub const SETTLE_NS: u64 = 3_000_000_000;
/// The share of operations outside fault windows that must succeed.
pub const MIN_OK_RATIO: f64 = 0.10;
/// The share that must succeed when every operation of the fault phase is judged (faults fail many legitimately).
pub const MIN_OK_RATIO_UNDER_FAULTS: f64 = 0.05;
/// An error this common among the operations outside fault windows says the workload, not the system, is broken.
pub const DOMINANT_ERROR_SHARE: f64 = 0.90;
/// Operations below which the operations outside fault windows are too few to judge alone.
pub const MIN_JUDGED_OPS: usize = 20;
/// Attempts of one kind of operation after which none succeeding is a broken workload.
pub const MIN_OPS_PER_F: usize = 20;
/// Errors named in the reason.
const TOP_ERRORS_NAMED: usize = 3;
/// Errors kept in the details.
const TOP_ERRORS_KEPT: usize = 10;
/// Characters of an error quoted.
const ERROR_CHARS_MAX: usize = 160;

/// Judges whether the workload did enough to test the system.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkloadHealth;

/// One completed client operation of the fault phase.
struct Op {
    f: String,
    invoked_ns: u64,
    /// `None` when it succeeded (or was answered informatively), else its error.
    error: Option<String>,
}

/// The operations a verdict is drawn from, how they were chosen, and the share of them that must succeed.
struct Judged<'a> {
    ops: Vec<&'a Op>,
    scope: &'static str,
    min_ok_ratio: f64,
    /// Whether one error may be judged to dominate: not under faults, where a down node fails most operations alike.
    judge_dominance: bool,
    /// The whole fault phase's operations and successes, said beside a narrower scope's so neither misleads.
    phase: Option<(usize, usize)>,
}

impl Checker for WorkloadHealth {
    fn name(&self) -> &'static str {
        "workload-health"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let ops = fault_phase_ops(input.history);
        let windows = fault_windows(input.history, SETTLE_NS);
        let quiet: Vec<&Op> = ops.iter().filter(|op| !in_window(&windows, op.invoked_ns)).collect();
        let judged = if quiet.len() >= MIN_JUDGED_OPS {
            let phase_ok = ops.iter().filter(|op| op.error.is_none()).count();
            Judged {
                ops: quiet,
                scope: "outside fault windows (invoked while no fault was active and none had ended in the last 3 s)",
                min_ok_ratio: MIN_OK_RATIO,
                judge_dominance: true,
                phase: Some((phase_ok, ops.len())),
            }
        } else {
            let after = client_ops(input.history, Phase::AfterFaults);
            let after_ok = after.iter().filter(|op| op.error.is_none()).count();
            if after_ok > 0 {
                return under_faults_with_a_working_client(self.name(), &ops, after_ok, after.len());
            }
            Judged {
                ops: ops.iter().collect(),
                scope: "of the fault phase (too few ran outside fault windows)",
                min_ok_ratio: MIN_OK_RATIO_UNDER_FAULTS,
                judge_dominance: false,
                phase: None,
            }
        };
        judge(self.name(), &judged)
    }
}

/// Faults everywhere, and the client worked once they stopped: the fault phase needs one success to have tested
/// anything.
fn under_faults_with_a_working_client(name: &str, ops: &[Op], after_ok: usize, after: usize) -> CheckResult {
    let refs: Vec<&Op> = ops.iter().collect();
    let ok = refs.iter().filter(|op| op.error.is_none()).count();
    let errors = top_errors(&refs);
    let details = json!({
        "scope": "of the fault phase (too few ran outside fault windows), the client shown to work after it",
        "ops": ops.len(),
        "ok": ok,
        "after_fault_phase": {"ops": after, "ok": after_ok},
        "top_errors": errors.iter().take(TOP_ERRORS_KEPT)
            .map(|(e, n)| json!({"error": e, "count": n})).collect::<Vec<_>>(),
    });
    let named = name_errors(&errors);
    let worked = format!("{after_ok} of {after} operations after the fault phase succeeded, so the client works");
    if ok == 0 && ops.len() >= MIN_JUDGED_OPS {
        return CheckResult::new(
            name,
            Verdict::Unknown,
            format!(
                "none of the {} operations of the fault phase succeeded ({worked}): the run tested nothing under \
                 faults; {named}",
                ops.len()
            ),
            details,
        );
    }
    CheckResult::new(
        name,
        Verdict::Valid,
        format!(
            "{ok} of {} operations of the fault phase succeeded under faults everywhere; {worked}; {named}",
            ops.len()
        ),
        details,
    )
}

fn judge(name: &str, judged: &Judged) -> CheckResult {
    let total = judged.ops.len();
    let ok = judged.ops.iter().filter(|op| op.error.is_none()).count();
    let errors = top_errors(&judged.ops);
    let by_f = by_f(&judged.ops);
    let ratio = if total == 0 { 0.0 } else { ok as f64 / total as f64 };
    let details = json!({
        "scope": judged.scope,
        "ops": total,
        "ok": ok,
        "ok_ratio": ratio,
        "by_f": by_f.iter().map(|(f, (n, ok))| (f.clone(), json!({"ops": n, "ok": ok}))).collect::<BTreeMap<_, _>>(),
        "top_errors": errors.iter().take(TOP_ERRORS_KEPT).map(|(e, n)| json!({"error": e, "count": n})).collect::<Vec<_>>(),
        "rule": {"min_ok_ratio": judged.min_ok_ratio, "dominant_error_share": DOMINANT_ERROR_SHARE,
                 "min_ops_per_f": MIN_OPS_PER_F, "settle_ms": SETTLE_NS / 1_000_000},
    });
    let named = name_errors(&errors);
    let result = |verdict, reason| CheckResult::new(name, verdict, reason, details.clone());
    if total == 0 {
        return result(
            Verdict::Unknown,
            "no client operation completed in the fault phase: the run tested nothing".into(),
        );
    }
    if total < MIN_JUDGED_OPS {
        return result(
            Verdict::Valid,
            format!("only {total} operations completed in the fault phase: too few to judge the workload's health"),
        );
    }
    let whole = match judged.phase {
        Some((phase_ok, phase_total)) => format!(
            "; in the whole fault phase {phase_ok} of {phase_total} succeeded ({:.1}%)",
            100.0 * phase_ok as f64 / phase_total.max(1) as f64
        ),
        None => String::new(),
    };
    let summary = format!(
        "{ok} of {total} operations {} succeeded ({:.1}%){whole}",
        judged.scope,
        ratio * 100.0
    );
    if ratio < judged.min_ok_ratio {
        return result(
            Verdict::Unknown,
            format!(
                "the workload barely worked: {summary}, under the {:.0}% a run needs to test anything; {named}",
                judged.min_ok_ratio * 100.0
            ),
        );
    }
    if let Some((error, count)) = errors.first().filter(|_| judged.judge_dominance) {
        if *count as f64 >= DOMINANT_ERROR_SHARE * total as f64 {
            return result(
                Verdict::Unknown,
                format!(
                    "one error dominates the workload: `{error}` ended {count} of the {total} operations {}; {summary}",
                    judged.scope
                ),
            );
        }
    }
    let never = by_f.iter().find(|(_, (n, ok))| *n >= MIN_OPS_PER_F && *ok == 0);
    if let Some((f, (n, _))) = never {
        return result(
            Verdict::Unknown,
            format!(
                "no `{f}` succeeded: all {n} {} failed, so the checks saw none; {named}",
                judged.scope
            ),
        );
    }
    match errors.first() {
        Some(_) => result(Verdict::Valid, format!("{summary}; {named}")),
        None => result(Verdict::Valid, summary),
    }
}

/// Completed client operations invoked between `cluster-ready` and `fault-phase-end`.
fn fault_phase_ops(history: &History) -> Vec<Op> {
    client_ops(history, Phase::Faults)
}

/// Which part of a run's client operations.
enum Phase {
    /// Invoked between `cluster-ready` and `fault-phase-end`.
    Faults,
    /// Invoked after `fault-phase-end` (the final phase: healed, then restarted).
    AfterFaults,
}

/// Completed client operations invoked in `phase`.
fn client_ops(history: &History, phase: Phase) -> Vec<Op> {
    let ready_ns = history
        .events
        .iter()
        .find(|e| e.is(Lifecycle::ClusterReady))
        .map(|e| e.time_ns);
    let Some(ready_ns) = ready_ns else {
        return Vec::new();
    };
    let phase_end_ns = history
        .events
        .iter()
        .find(|e| e.is(Lifecycle::FaultPhaseEnd))
        .map(|e| e.time_ns);
    let (ready_ns, end_ns) = match phase {
        Phase::Faults => (ready_ns, phase_end_ns.unwrap_or(u64::MAX)),
        Phase::AfterFaults => match phase_end_ns {
            Some(end_ns) => (end_ns, u64::MAX),
            None => return Vec::new(),
        },
    };
    let mut invoked: HashMap<u64, (u64, &str)> = HashMap::new();
    let mut ops = Vec::new();
    for event in &history.events {
        let Some(process) = event.process else { continue };
        let error = match event.kind {
            EventKind::Invoke => {
                invoked.insert(process, (event.time_ns, event.f.as_str()));
                continue;
            }
            EventKind::Ok => None,
            EventKind::Fail if event.error.as_deref() == Some("cas-mismatch") => None,
            EventKind::Fail | EventKind::Info => Some(
                event
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("{:?} without an error", event.kind).to_lowercase()),
            ),
            _ => continue,
        };
        let Some((invoked_ns, f)) = invoked.remove(&process) else {
            continue;
        };
        if (ready_ns..end_ns).contains(&invoked_ns) {
            ops.push(Op {
                f: f.to_string(),
                invoked_ns,
                error,
            });
        }
    }
    ops
}

/// Errors by how many operations they ended, most first; alike errors (the same text but for numbers: op ids,
/// process ids, timings) count as one, quoted as first seen.
fn top_errors(ops: &[&Op]) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, (String, usize, usize)> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(error) = &op.error {
            let entry = counts.entry(mask_numbers(error)).or_insert((clip(error), 0, i));
            entry.1 += 1;
        }
    }
    let mut errors: Vec<(String, usize, usize)> = counts.into_values().collect();
    errors.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    errors.into_iter().map(|(error, n, _)| (error, n)).collect()
}

/// Attempts and successes per kind of operation.
fn by_f(ops: &[&Op]) -> BTreeMap<String, (usize, usize)> {
    let mut by_f: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for op in ops {
        let entry = by_f.entry(op.f.clone()).or_default();
        entry.0 += 1;
        entry.1 += usize::from(op.error.is_none());
    }
    by_f
}

fn name_errors(errors: &[(String, usize)]) -> String {
    if errors.is_empty() {
        return "no errors".into();
    }
    let named: Vec<String> = errors
        .iter()
        .take(TOP_ERRORS_NAMED)
        .map(|(error, n)| format!("`{error}` × {n}"))
        .collect();
    format!("top errors: {}", named.join(", "))
}

fn mask_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(ERROR_CHARS_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, Nemesis};
    use serde_json::{json, Value};

    /// A fault phase of `ops` operations, one every 100 ms from 1 s on, each answered by `answer(i)`: `None` for ok.
    fn run(ops: usize, answer: impl Fn(usize) -> (&'static str, Option<String>)) -> History {
        let at = |ms: u64, mut event: Event| {
            event.time_ns = ms * 1_000_000;
            event
        };
        let mut events = vec![at(0, Event::named(Lifecycle::ClusterReady, None, json!({})))];
        for i in 0..ops {
            let (f, error) = answer(i);
            let t = 1_000 + 100 * i as u64;
            let op = |kind, error: Option<String>| Event {
                index: 0,
                time_ns: 0,
                kind,
                process: Some(i as u64),
                worker: Some(0),
                node: Some("n1".into()),
                f: f.into(),
                key: Some("k0".into()),
                value: Value::Null,
                error,
            };
            events.push(at(t, op(EventKind::Invoke, None)));
            let kind = if error.is_some() {
                EventKind::Fail
            } else {
                EventKind::Ok
            };
            events.push(at(t + 10, op(kind, error)));
        }
        events.push(at(
            1_000 + 100 * ops as u64,
            Event::named(Lifecycle::FaultPhaseEnd, None, json!({})),
        ));
        History {
            events,
            truncated_tail: false,
        }
    }

    fn check(history: &History) -> CheckResult {
        let logs = BTreeMap::new();
        WorkloadHealth.check(&CheckInput {
            history,
            node_logs: &logs,
        })
    }

    #[test]
    fn given_a_client_that_fails_every_operation_when_checked_should_be_unknown_naming_the_error() {
        let history = run(200, |i| {
            ("txn", Some(format!("client p{i} failed: ModuleNotFoundError: kazoo")))
        });
        let result = check(&history);
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
        assert!(
            result.reason.contains(
                "0 of 200 operations outside fault windows (invoked while no fault was active and none had \
                           ended in the last 3 s) succeeded (0.0%); in the whole fault phase 0 of 200 succeeded"
            ) && result
                .reason
                .contains("`client p0 failed: ModuleNotFoundError: kazoo` × 200"),
            "{}",
            result.reason
        );
        assert_eq!(result.details["top_errors"][0]["count"], 200);
    }

    #[test]
    fn given_contention_aborts_and_cas_mismatches_when_checked_should_be_valid() {
        // PostgreSQL at SERIALIZABLE on a few rows: most transactions abort, a healthy share commits.
        let history = run(400, |i| match i % 4 {
            0 => ("txn", None),
            1 => ("cas", Some("cas-mismatch".into())),
            _ => (
                "txn",
                Some("could not serialize access due to read/write dependencies".into()),
            ),
        });
        let result = check(&history);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert!(result.reason.contains("200 of 400"), "{}", result.reason);
    }

    #[test]
    fn given_reads_that_never_succeed_when_checked_should_be_unknown_naming_the_function() {
        let history = run(100, |i| match i % 2 {
            0 => ("write", None),
            _ => ("read", Some("KeyError: 'value'".into())),
        });
        let result = check(&history);
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
        assert!(
            result.reason.contains("no `read` succeeded: all 50"),
            "{}",
            result.reason
        );
    }

    #[test]
    fn given_failures_inside_fault_windows_only_when_checked_should_judge_the_quiet_operations() {
        let mut history = run(300, |i| match i {
            100..=199 => ("write", Some("connection refused".into())),
            _ => ("write", None),
        });
        let mut kill = Event::named(Nemesis::Kill, Some("n1".into()), json!({}));
        kill.time_ns = 10_500_000_000;
        let mut start = Event::named(Nemesis::Start, Some("n1".into()), json!({}));
        start.time_ns = 18_000_000_000;
        history.events.push(kill);
        history.events.push(start);
        let result = check(&history);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert!(result.reason.contains("outside fault windows"), "{}", result.reason);
    }

    /// Faults everywhere (a node down the whole phase): every operation is judged, against the lower bar.
    #[test]
    fn given_no_quiet_window_when_checked_should_judge_the_whole_phase_against_the_lower_bar() {
        let under_faults = |every: usize| {
            let mut history = run(400, |i| match i % every {
                0 => ("write", None),
                _ => ("write", Some("connection refused".into())),
            });
            let mut kill = Event::named(Nemesis::Kill, Some("n1".into()), json!({}));
            kill.time_ns = 500_000_000;
            history.events.push(kill);
            check(&history)
        };
        let some = under_faults(14);
        assert_eq!(some.verdict, Verdict::Valid, "{}", some.reason);
        assert!(some.reason.contains("of the fault phase"), "{}", some.reason);
        let barely = under_faults(40);
        assert_eq!(barely.verdict, Verdict::Unknown, "{}", barely.reason);
        assert!(barely.reason.contains("under the 5%"), "{}", barely.reason);
    }

    #[test]
    fn given_no_quiet_window_when_reads_after_the_fault_phase_succeeded_should_ask_only_for_one_success_under_faults() {
        // Faults everywhere and a cluster that served 1 in 60 of them (a loaded machine's slow view changes), then
        // the final phase's reads on the healed cluster succeeded: the client works, the run tested something.
        let with_final_reads = |every: usize| {
            let mut history = run(400, |i| match (i + 1) % every {
                0 => ("write", None),
                _ => ("write", Some("connection refused".into())),
            });
            let mut kill = Event::named(Nemesis::Kill, Some("n1".into()), json!({}));
            kill.time_ns = 500_000_000;
            history.events.push(kill);
            let end_ns = history.events.iter().map(|e| e.time_ns).max().unwrap();
            for (offset, kind) in [(1, EventKind::Invoke), (2, EventKind::Ok)] {
                let mut read = history.events[1].clone();
                read.kind = kind;
                read.f = "read".into();
                read.error = None;
                read.time_ns = end_ns + offset * 1_000_000;
                history.events.push(read);
            }
            check(&history)
        };
        let barely = with_final_reads(60);
        assert_eq!(barely.verdict, Verdict::Valid, "{}", barely.reason);
        assert!(
            barely
                .reason
                .contains("1 of 1 operations after the fault phase succeeded"),
            "{}",
            barely.reason
        );
        let none = with_final_reads(usize::MAX);
        assert_eq!(none.verdict, Verdict::Unknown, "{}", none.reason);
        assert!(none.reason.contains("none of the 400 operations"), "{}", none.reason);
    }

    #[test]
    fn given_no_operation_when_checked_should_be_unknown() {
        let result = check(&run(0, |_| ("read", None)));
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
    }
}
