//! Checkers: one small trait, many checks, composed as in Jepsen's `checker/compose`.
//!
//! A [`Checker`] reads a run's [`CheckInput`] (the history and the node logs, both taken from the store by the caller)
//! and answers with a [`CheckResult`]: `valid`, `invalid` or `unknown`, one sentence of reason, and check-specific
//! details for `results.json` and `report.html`. Checkers take their parameters as plain values when they are built
//! (a durability promise, log patterns, a time and memory budget), never the harness's plan, so a store folder can be
//! re-checked without the orchestrator.
//!
//! [`check_all`] runs a list of checkers and combines them as the worst verdict: invalid beats unknown beats valid. A
//! checker that panics does not take the run down with it: its check becomes `unknown`, naming the panic, and the
//! others still run.
//!
//! The checks faultline runs, in the order `results.json` lists them:
//! - [`Completion`] (`history`): the run finished;
//! - one workload check: [`Linearizability`] (register), [`LogWorkload`] (`log`), [`SetWorkload`] (`set`),
//!   [`TxnWorkload`] (`txn`), [`BankWorkload`] (`bank`), [`LongForkWorkload`] (`long-fork`) or [`CounterWorkload`]
//!   (`counter`, offline only); [`history_model`] picks one for `faultline check FILE --model M`;
//! - [`WorkloadHealth`] (`workload-health`): enough operations succeeded outside fault windows for the others to
//!   mean something;
//! - [`Boot`]: no node refused to boot or died on its own without a recorded reason;
//! - [`Liveness`]: after healing the cluster accepted a write within the bound;
//! - [`Convergence`]: every node reached the same commit point;
//! - [`Durability`]: no node booted with less than it had applied before it stopped;
//! - [`LogPatterns`] (`log-patterns`): no node log shows a failure pattern.

mod bank_workload;
mod boot;
mod completion;
mod convergence;
mod counter_workload;
pub mod damage;
mod durability;
pub mod fault_windows;
pub mod history_model;
mod linearizability;
mod liveness;
mod log_patterns;
mod log_workload;
mod long_fork_workload;
mod set_workload;
mod txn_workload;
mod workload_health;

pub use bank_workload::BankWorkload;
pub use boot::{Boot, IO_FAULT_GRACE_NS};
pub use completion::Completion;
pub use convergence::Convergence;
pub use counter_workload::CounterWorkload;
pub use durability::{interior_damage, Durability};
pub use history_model::{checker_for, HistoryModel, ModelOptions};
pub use linearizability::Linearizability;
pub use liveness::Liveness;
pub use log_patterns::{message_line, strip_ansi, LogPatterns};
pub use log_workload::LogWorkload;
pub use long_fork_workload::LongForkWorkload;
pub use set_workload::SetWorkload;
pub use txn_workload::{history_txns, TxnWorkload, TXN_F};
pub use workload_health::WorkloadHealth;

use crate::history::{Event, History, Lifecycle};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What every checker reads: the run's history and its node logs.
#[derive(Debug, Clone, Copy)]
pub struct CheckInput<'a> {
    /// The whole history, in order.
    pub history: &'a History,
    /// Node name (`n1`) -> the text of its log, for the nodes whose log could be read.
    pub node_logs: &'a BTreeMap<String, String>,
}

/// A check of a run: a name for `results.json` and a verdict on the input.
pub trait Checker {
    /// The check's name in `results.json` (`boot`, `log-patterns`, ...).
    fn name(&self) -> &'static str;
    /// Judges the input. Returns `unknown` rather than panicking when it cannot tell.
    fn check(&self, input: &CheckInput) -> CheckResult;
}

/// One check's outcome, as stored in `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// Check name (`linearizability`, `boot`, `liveness`, `convergence`, `log-patterns`, `history`).
    pub name: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// One sentence.
    pub reason: String,
    /// Check-specific evidence.
    #[serde(default)]
    pub details: Value,
    /// When the first evidence of an invalid verdict happened (ns since run start), for time-to-detection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_ns: Option<u64>,
    /// Named warnings: findings a person must see that do not make the verdict invalid (e.g. a system that
    /// truncated interior damage to its WAL as if it were a torn write).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// For a check about each node's own disk (durability): the nodes its invalid evidence is about. A node no cut
    /// ever hit is judged whatever other nodes' damage was ([`damage::judge`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence_nodes: Vec<String>,
    /// The check had nothing to judge (no operation completed, no final phase, no status probe, no restart that
    /// said what it kept): neither valid nor invalid. Its verdict is `valid` so it never makes a run worse, but it
    /// carries nothing: reports show "not checked", and a run none of whose checks judged anything is `unknown`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_checked: bool,
}

impl CheckResult {
    /// A result without evidence time.
    pub fn new(name: &str, verdict: Verdict, reason: String, details: Value) -> CheckResult {
        CheckResult {
            name: name.to_string(),
            verdict,
            reason,
            details,
            evidence_ns: None,
            warnings: Vec::new(),
            evidence_nodes: Vec::new(),
            not_checked: false,
        }
    }

    /// A check that had nothing to judge; `why` says what was missing (the reason reads "not checked: why").
    pub fn not_checked(name: &str, why: &str, details: Value) -> CheckResult {
        CheckResult {
            not_checked: true,
            ..CheckResult::new(name, Verdict::Valid, format!("not checked: {why}"), details)
        }
    }

    /// What a person reads for this check's outcome: `valid`, `invalid`, `unknown` or `not checked`.
    pub fn status(&self) -> &'static str {
        match (self.not_checked, self.verdict) {
            (true, Verdict::Valid) => "not checked",
            (_, Verdict::Valid) => "valid",
            (_, Verdict::Invalid) => "invalid",
            (_, Verdict::Unknown) => "unknown",
        }
    }
}

/// The outcome of several checks together.
#[derive(Debug, Clone, PartialEq)]
pub struct Composed {
    /// The worst verdict of the checks; `unknown` when nothing was checked.
    pub verdict: Verdict,
    /// The reason of the first check with that verdict, prefixed by its name.
    pub reason: String,
    /// Every check's result, in the order of the checkers.
    pub checks: Vec<CheckResult>,
}

/// Runs every checker on the input, in order, and combines their results (see [`combine`]).
pub fn check_all(checkers: &[Box<dyn Checker>], input: &CheckInput) -> Composed {
    let checks: Vec<CheckResult> = checkers.iter().map(|c| check_safely(c.as_ref(), input)).collect();
    let (verdict, reason) = combine(&checks);
    Composed {
        verdict,
        reason,
        checks,
    }
}

/// Runs one checker; a panic becomes an `unknown` result naming it (Jepsen's `check-safe`).
fn check_safely(checker: &dyn Checker, input: &CheckInput) -> CheckResult {
    catch_unwind(AssertUnwindSafe(|| checker.check(input))).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        CheckResult::new(
            checker.name(),
            Verdict::Unknown,
            format!("the checker panicked ({message}); this property was not checked"),
            Value::Null,
        )
    })
}

/// Combines checks: the verdict is the worst; the reason is that of the first check with the worst verdict. An empty
/// list is `unknown`: an unchecked run is never valid. A valid run whose checks raised warnings says so, with the
/// first warning, so the headline never hides one.
pub fn combine(checks: &[CheckResult]) -> (Verdict, String) {
    let verdict = Verdict::combine_all(checks.iter().map(|c| c.verdict));
    let unjudged: Vec<&CheckResult> = checks
        .iter()
        .filter(|c| c.not_checked && c.verdict == Verdict::Valid)
        .collect();
    if verdict == Verdict::Valid && !checks.is_empty() && unjudged.len() == checks.len() {
        let why: Vec<String> = unjudged.iter().map(|c| format!("{}: {}", c.name, c.reason)).collect();
        return (Verdict::Unknown, format!("nothing was checked ({})", why.join("; ")));
    }
    let carried = |text: String| {
        if unjudged.is_empty() {
            return text;
        }
        let judged: Vec<&str> = checks
            .iter()
            .filter(|c| !c.not_checked)
            .map(|c| c.name.as_str())
            .collect();
        let names: Vec<&str> = unjudged.iter().map(|c| c.name.as_str()).collect();
        format!(
            "{text} (carried by {}; not checked: {})",
            judged.join(", "),
            names.join(", ")
        )
    };
    let warnings: Vec<(&str, &str)> = checks
        .iter()
        .flat_map(|c| c.warnings.iter().map(move |w| (c.name.as_str(), w.as_str())))
        .collect();
    let reason = match checks
        .iter()
        .find(|c| c.verdict == verdict && verdict != Verdict::Valid)
    {
        Some(check) => format!("{}: {}", check.name, check.reason),
        None if checks.is_empty() => "nothing was checked".to_string(),
        None => carried(match warnings.as_slice() {
            [] => "every check passed".to_string(),
            [(name, warning)] => format!("every check passed, with a warning: {name}: {warning}"),
            [(name, warning), rest @ ..] => format!(
                "every check passed, with {} warnings; first: {name}: {warning}",
                rest.len() + 1
            ),
        }),
    };
    let verdict = if checks.is_empty() { Verdict::Unknown } else { verdict };
    (verdict, reason)
}

/// The lifecycle events named `name`, in order.
fn lifecycle_events(history: &History, name: Lifecycle) -> impl Iterator<Item = &Event> {
    history.events.iter().filter(move |e| e.is(name))
}

/// When the event with history index `index` happened, if the history holds it at that position.
fn time_of(history: &History, index: u64) -> Option<u64> {
    history
        .events
        .get(index as usize)
        .filter(|e| e.index == index)
        .map(|e| e.time_ns)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::EventKind;
    use serde_json::json;

    /// An event of `kind` named `f`, on `node` when given.
    pub(crate) fn event(kind: EventKind, f: &str, node: Option<&str>, value: Value) -> Event {
        Event {
            index: 0,
            time_ns: 0,
            kind,
            process: None,
            worker: None,
            node: node.map(Into::into),
            f: f.to_string(),
            key: None,
            value,
            error: None,
        }
    }

    /// A client op of `process` named `f`, as the set, counter, bank and long-fork checks' tests write them.
    pub(crate) fn client_op(kind: EventKind, process: u64, f: &str, value: Value) -> Event {
        Event {
            process: Some(process),
            ..event(kind, f, None, value)
        }
    }

    /// A lifecycle event on `node`.
    pub(crate) fn lifecycle(f: &str, node: &str, value: Value) -> Event {
        event(EventKind::Lifecycle, f, Some(node), value)
    }

    /// A history of `events`, indexed in order.
    pub(crate) fn history(events: Vec<Event>) -> History {
        let events = events.into_iter().enumerate().map(|(i, mut e)| {
            e.index = i as u64;
            e
        });
        History {
            events: events.collect(),
            truncated_tail: false,
        }
    }

    struct Fixed(Verdict);

    impl Checker for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn check(&self, _: &CheckInput) -> CheckResult {
            CheckResult::new("fixed", self.0, format!("it is {}", self.0), Value::Null)
        }
    }

    struct Panics;

    impl Checker for Panics {
        fn name(&self) -> &'static str {
            "panics"
        }
        fn check(&self, _: &CheckInput) -> CheckResult {
            panic!("index out of bounds")
        }
    }

    fn run(checkers: Vec<Box<dyn Checker>>) -> Composed {
        let history = history(vec![event(EventKind::Meta, "run-end", None, json!({}))]);
        let logs = BTreeMap::new();
        check_all(
            &checkers,
            &CheckInput {
                history: &history,
                node_logs: &logs,
            },
        )
    }

    #[test]
    fn given_checkers_when_composed_should_let_invalid_beat_unknown_beat_valid() {
        let composed = run(vec![
            Box::new(Fixed(Verdict::Valid)),
            Box::new(Fixed(Verdict::Unknown)),
            Box::new(Fixed(Verdict::Invalid)),
        ]);
        assert_eq!(composed.verdict, Verdict::Invalid);
        assert_eq!(composed.reason, "fixed: it is invalid");
        assert_eq!(composed.checks.len(), 3);
        assert_eq!(run(vec![Box::new(Fixed(Verdict::Valid))]).verdict, Verdict::Valid);
        assert_eq!(run(vec![]).verdict, Verdict::Unknown, "an unchecked run is never valid");
    }

    #[test]
    fn given_a_panicking_checker_when_composed_should_be_unknown_and_the_others_still_run() {
        let composed = run(vec![Box::new(Panics), Box::new(Fixed(Verdict::Valid))]);
        assert_eq!(composed.verdict, Verdict::Unknown);
        assert!(
            composed
                .reason
                .starts_with("panics: the checker panicked (index out of bounds)"),
            "{}",
            composed.reason
        );
        assert_eq!(composed.checks[1].verdict, Verdict::Valid);
    }

    /// A check that had nothing to judge is neither valid nor invalid: a valid run says which checks carried it and
    /// which were not checked, a run none of whose checks judged anything is `unknown`, and an invalid one stays so.
    #[test]
    fn given_checks_that_judged_nothing_when_composed_should_say_so_and_never_carry_a_run() {
        let valid = CheckResult::new(
            "linearizability",
            Verdict::Valid,
            "all 9 operations ...".into(),
            Value::Null,
        );
        let unjudged = CheckResult::not_checked("convergence", "the system has no status probe", Value::Null);
        assert_eq!(unjudged.status(), "not checked");
        assert_eq!(unjudged.reason, "not checked: the system has no status probe");
        let (verdict, reason) = combine(&[valid.clone(), unjudged.clone()]);
        assert_eq!(verdict, Verdict::Valid);
        assert_eq!(
            reason,
            "every check passed (carried by linearizability; not checked: convergence)"
        );
        let (verdict, reason) = combine(std::slice::from_ref(&unjudged));
        assert_eq!(verdict, Verdict::Unknown);
        assert_eq!(
            reason,
            "nothing was checked (convergence: not checked: the system has no status probe)"
        );
        let invalid = CheckResult::new("durability", Verdict::Invalid, "n1 forgot".into(), Value::Null);
        assert_eq!(combine(&[unjudged, invalid]).0, Verdict::Invalid);
    }

    /// A register history none of whose operations completed ok is not checked, not "valid: all 0 operations".
    #[test]
    fn given_a_history_without_an_ok_operation_when_checked_for_linearizability_should_be_not_checked() {
        let checker = Linearizability {
            model: crate::models::ModelKind::CasRegister,
            options: crate::linearizability::CheckOptions::default(),
        };
        let check = |events: Vec<Event>| {
            let history = history(events);
            checker.check(&CheckInput {
                history: &history,
                node_logs: &BTreeMap::new(),
            })
        };
        let none_ok = check(vec![
            client_op(EventKind::Invoke, 0, "write", json!(1)),
            client_op(EventKind::Info, 0, "write", json!(1)),
        ]);
        assert!(none_ok.not_checked, "{none_ok:?}");
        assert!(
            none_ok.reason.contains("none of the 1 operations completed ok"),
            "{}",
            none_ok.reason
        );
        let one_ok = check(vec![
            client_op(EventKind::Invoke, 0, "write", json!(1)),
            client_op(EventKind::Ok, 0, "write", json!(1)),
        ]);
        assert!(!one_ok.not_checked && one_ok.verdict == Verdict::Valid, "{one_ok:?}");
    }
}
