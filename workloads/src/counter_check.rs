//! Jepsen's counter checker: a counter starts at zero, `add` increments it by its value, and every `read` must fall
//! between what was certainly added before it began and what may have been added before it ended.
//!
//! Walking the history in order: an `add` invocation raises the upper bound by its value (unless that add failed:
//! it certainly did nothing), an `ok` completion raises the lower bound; a read invoked at lower bound `l` and
//! completed at upper bound `u` must return a value in `[l, u]`. Like Jepsen's, the check assumes increments only:
//! a decrement makes the history unknown, naming the op. Unlike Jepsen's, a history without a single `ok` read is
//! unknown, not valid: nothing was checked.

use crate::history::{EventKind, History};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Out-of-bounds reads kept in the result (all are counted).
pub const MAX_ERRORS_KEPT: usize = 50;

/// One read with the bounds it had to fall in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRead {
    /// History index of the read's completion.
    pub index: u64,
    /// The process that read.
    pub process: u64,
    /// What was certainly added before the read began.
    pub lower: i64,
    /// What it returned.
    pub value: i64,
    /// What may have been added before it ended.
    pub upper: i64,
    /// One sentence (what a person reads; empty in results written before it existed).
    #[serde(default)]
    pub description: String,
}

/// The counter checker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterCheckResult {
    /// Invalid when a read fell outside its bounds; unknown when nothing could be checked.
    pub verdict: Verdict,
    /// One sentence.
    pub reason: String,
    /// `ok` reads checked.
    pub reads: u64,
    /// Adds attempted and acknowledged.
    pub adds: u64,
    /// Acknowledged adds.
    pub adds_ok: u64,
    /// Reads outside their bounds, all of them.
    pub error_count: u64,
    /// The first [`MAX_ERRORS_KEPT`] of them.
    pub errors: Vec<CounterRead>,
    /// The read furthest outside its bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_absolute_error: Option<CounterRead>,
}

/// Checks a counter history (see the module docs).
pub fn check_counter(history: &History) -> CounterCheckResult {
    match walk(history) {
        Ok(result) => result,
        Err(reason) => CounterCheckResult {
            verdict: Verdict::Unknown,
            reason,
            ..CounterCheckResult::nothing_seen()
        },
    }
}

impl CounterCheckResult {
    /// A result before any op was read: valid, with nothing counted.
    fn nothing_seen() -> Self {
        CounterCheckResult {
            verdict: Verdict::Valid,
            reason: String::new(),
            reads: 0,
            adds: 0,
            adds_ok: 0,
            error_count: 0,
            errors: Vec::new(),
            max_absolute_error: None,
        }
    }
}

fn walk(history: &History) -> Result<CounterCheckResult, String> {
    let failed = failed_invocations(history);
    let (mut lower, mut upper) = (0i64, 0i64);
    let mut pending: HashMap<u64, (&str, i64, i64)> = HashMap::new();
    let mut result = CounterCheckResult::nothing_seen();
    let mut worst = 0i64;
    for event in history.client_events() {
        let Some(process) = event.process else { continue };
        let number = |what: &str| {
            event.value.as_i64().ok_or_else(|| {
                format!(
                    "event {} ({what} of process {process}) has the value {}, not an integer",
                    event.index, event.value
                )
            })
        };
        match (event.kind, event.f.as_str()) {
            (EventKind::Invoke, "add") => {
                let delta = number("an add")?;
                if delta < 0 {
                    return Err(format!(
                        "event {} adds {delta}: the counter check (Jepsen's) bounds reads by increments only",
                        event.index
                    ));
                }
                result.adds += 1;
                if !failed.contains(&event.index) {
                    upper = upper.saturating_add(delta);
                }
                pending.insert(process, ("add", delta, 0));
            }
            (EventKind::Invoke, f) => {
                pending.insert(process, (if f == "read" { "read" } else { "other" }, 0, lower));
            }
            (kind, _) => {
                let Some((f, delta, lower_at_invoke)) = pending.remove(&process) else {
                    continue;
                };
                match (f, kind) {
                    ("add", EventKind::Ok) => {
                        result.adds_ok += 1;
                        lower = lower.saturating_add(delta);
                    }
                    ("read", EventKind::Ok) => {
                        let mut read = CounterRead {
                            index: event.index,
                            process,
                            lower: lower_at_invoke,
                            value: number("a read")?,
                            upper,
                            description: String::new(),
                        };
                        result.reads += 1;
                        let error = (read.lower - read.value).max(read.value - read.upper);
                        if error > 0 {
                            read.description = format!(
                                "process {process} read {} (event {}), but the counter was between {} (certainly \
                                 added before the read began) and {} (possibly added before it ended)",
                                read.value, read.index, read.lower, read.upper
                            );
                            result.error_count += 1;
                            if error > worst {
                                worst = error;
                                result.max_absolute_error = Some(read.clone());
                            }
                            if result.errors.len() < MAX_ERRORS_KEPT {
                                result.errors.push(read);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    judge(&mut result);
    Ok(result)
}

/// History indices of invocations whose completion was `fail`.
fn failed_invocations(history: &History) -> std::collections::HashSet<u64> {
    let mut open: HashMap<u64, u64> = HashMap::new();
    let mut failed = std::collections::HashSet::new();
    for event in history.client_events() {
        let Some(process) = event.process else { continue };
        if event.kind == EventKind::Invoke {
            open.insert(process, event.index);
        } else if let Some(invoked) = open.remove(&process) {
            if event.kind == EventKind::Fail {
                failed.insert(invoked);
            }
        }
    }
    failed
}

fn judge(result: &mut CounterCheckResult) {
    (result.verdict, result.reason) = if let Some(first) = result.errors.first() {
        let reason = format!(
            "{} of {} reads fell outside what could have been added; first: event {} read {}, but the counter was \
             between {} and {} then",
            result.error_count, result.reads, first.index, first.value, first.lower, first.upper
        );
        (Verdict::Invalid, reason)
    } else if result.reads == 0 {
        let reason = format!("no read succeeded: nothing to check {} adds against", result.adds);
        (Verdict::Unknown, reason)
    } else {
        let reason = format!(
            "all {} reads fell between what was certainly and what may have been added ({} adds, {} acknowledged)",
            result.reads, result.adds, result.adds_ok
        );
        (Verdict::Valid, reason)
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::history;
    use serde_json::{json, Value};

    use crate::checker::tests::client_op as op;

    use EventKind::*;

    #[test]
    fn given_reads_within_the_bounds_of_concurrent_adds_should_be_valid() {
        let h = history(vec![
            op(Invoke, 0, "add", json!(1)),
            op(Ok, 0, "add", json!(1)),
            op(Invoke, 1, "add", json!(5)),
            op(Invoke, 2, "read", Value::Null),
            op(Ok, 2, "read", json!(6)),
            op(Info, 1, "add", json!(5)),
            op(Invoke, 2, "read", Value::Null),
            op(Ok, 2, "read", json!(1)),
        ]);
        let result = check_counter(&h);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert_eq!(result.reads, 2);
    }

    #[test]
    fn given_a_read_above_every_attempted_add_or_below_an_acknowledged_one_should_be_invalid() {
        let h = history(vec![
            op(Invoke, 0, "add", json!(2)),
            op(Ok, 0, "add", json!(2)),
            op(Invoke, 1, "add", json!(3)),
            op(Fail, 1, "add", json!(3)),
            op(Invoke, 2, "read", Value::Null),
            op(Ok, 2, "read", json!(5)),
            op(Invoke, 2, "read", Value::Null),
            op(Ok, 2, "read", json!(0)),
        ]);
        let result = check_counter(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        let bounds: Vec<(i64, i64, i64)> = result.errors.iter().map(|r| (r.lower, r.value, r.upper)).collect();
        assert_eq!(
            bounds,
            vec![(2, 5, 2), (2, 0, 2)],
            "the failed add of 3 raised no bound"
        );
        assert_eq!(result.max_absolute_error.map(|r| r.value), Some(5));
        assert_eq!(
            result.errors[0].description,
            "process 2 read 5 (event 5), but the counter was between 2 (certainly added before the read began) and 2 \
             (possibly added before it ended)",
            "a sentence, not the read's JSON"
        );
    }

    #[test]
    fn given_a_decrement_or_no_read_should_be_unknown_saying_why() {
        let decrement = history(vec![op(Invoke, 0, "add", json!(-1)), op(Ok, 0, "add", json!(-1))]);
        let result = check_counter(&decrement);
        assert_eq!(result.verdict, Verdict::Unknown);
        assert!(result.reason.contains("event 0 adds -1"), "{}", result.reason);
        let unread = history(vec![op(Invoke, 0, "add", json!(1)), op(Ok, 0, "add", json!(1))]);
        assert_eq!(check_counter(&unread).verdict, Verdict::Unknown);
    }
}
