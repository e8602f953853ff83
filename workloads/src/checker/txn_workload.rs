//! `txn` (transactional workload): isolation anomalies of multi-key transactions, found by
//! [`crate::txn_check::check_txns`] (Elle's method) against the consistency model the system claims.
//!
//! The history holds one client op `f: txn` per transaction: its invocation's value is the micro-op list with reads
//! unfilled, an `ok` completion's value the same list with every read filled, a `fail` or `info` completion repeats
//! the invocation's. This check pairs each invocation with its process's next completion into one
//! [`crate::txn_check::Txn`] (index = the invocation's history index, so `T12` in an explanation is line 12 of
//! `history.jsonl`); an invocation the run never completed is `info`, completed at the history's end. A history the
//! checker refuses (a malformed micro-op, a value written twice) is `unknown`, naming the event and why. The details
//! are the whole [`crate::txn_check::TxnCheckResult`]; an invalid verdict's evidence time is the earliest moment one
//! anomaly it found was complete (the latest completion among its transactions).

use super::{CheckInput, CheckResult, Checker};
use crate::history::{Event, EventKind, History};
use crate::txn_check::{check_txns, MicroOp, Txn, TxnCheckOptions, TxnOutcome};
use crate::verdict::Verdict;
use serde_json::Value;
use std::collections::HashMap;

/// The `f` of a transaction in the history and the client protocol.
pub const TXN_F: &str = "txn";

/// Checks a transactional workload's history against the claimed consistency model.
#[derive(Debug, Clone, Default)]
pub struct TxnWorkload {
    /// The datatype, the claimed model, which order edges to infer, the search budget.
    pub options: TxnCheckOptions,
}

impl Checker for TxnWorkload {
    fn name(&self) -> &'static str {
        "txn"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let txns = match history_txns(input.history) {
            Ok(txns) => txns,
            Err(why) => {
                return CheckResult::new(
                    self.name(),
                    Verdict::Unknown,
                    format!("the history cannot be read as transactions: {why}"),
                    Value::Null,
                )
            }
        };
        let result = match check_txns(&txns, &self.options) {
            Ok(result) => result,
            Err(refused) => {
                return CheckResult::new(
                    self.name(),
                    Verdict::Unknown,
                    format!("the transactional checker refused the history: {refused}"),
                    Value::Null,
                )
            }
        };
        let completed: HashMap<u64, u64> = txns.iter().map(|t| (t.index, t.complete_time_ns)).collect();
        let details = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut checked = CheckResult::new(self.name(), result.verdict, result.reason.clone(), details);
        if result.verdict == Verdict::Invalid {
            checked.evidence_ns = result
                .anomalies
                .iter()
                .filter(|(class, _)| result.forbidden.contains(class))
                .flat_map(|(_, found)| found.iter())
                .filter_map(|anomaly| anomaly.txns.iter().filter_map(|t| completed.get(t)).max().copied())
                .min();
        }
        checked
    }
}

/// The transactions of a history: every `f: txn` invocation paired with its process's next completion.
pub fn history_txns(history: &History) -> Result<Vec<Txn>, String> {
    let end_ns = history.events.last().map_or(0, |e| e.time_ns);
    let end_index = history.events.last().map_or(0, |e| e.index + 1);
    let mut open: HashMap<u64, &Event> = HashMap::new();
    let mut txns = Vec::new();
    for event in history.client_events().filter(|e| e.f == TXN_F) {
        let process = event.client_process()?;
        if event.kind == EventKind::Invoke {
            if let Some(earlier) = open.insert(process, event) {
                return Err(format!(
                    "process {process} invoked a transaction at event {} while the one it invoked at event {} was \
                     still open",
                    event.index, earlier.index
                ));
            }
            continue;
        }
        // A completion with no invocation before it (Elle's own test histories hold such ops) began where it
        // completed.
        let invoke = open.remove(&process).unwrap_or(event);
        let outcome = match event.kind {
            EventKind::Ok => TxnOutcome::Ok,
            EventKind::Fail => TxnOutcome::Fail,
            _ => TxnOutcome::Info,
        };
        // Only an `ok` completion carries filled reads; otherwise what the client asked for is what it did, if
        // anything.
        let source = if outcome == TxnOutcome::Ok { event } else { invoke };
        txns.push(Txn {
            index: invoke.index,
            process,
            invoke_time_ns: invoke.time_ns,
            complete_time_ns: event.time_ns.max(invoke.time_ns),
            positions: Some((invoke.index, event.index)),
            outcome,
            ops: micro_ops(source)?,
        });
    }
    // Still open when the history ends: the run stopped waiting, so the outcome is unknown.
    let mut unfinished: Vec<&Event> = open.into_values().collect();
    unfinished.sort_by_key(|e| e.index);
    for invoke in unfinished {
        txns.push(Txn {
            index: invoke.index,
            process: invoke.client_process()?,
            invoke_time_ns: invoke.time_ns,
            complete_time_ns: end_ns.max(invoke.time_ns),
            positions: Some((invoke.index, end_index)),
            outcome: TxnOutcome::Info,
            ops: micro_ops(invoke)?,
        });
    }
    Ok(txns)
}

/// The micro-ops an event's value holds.
fn micro_ops(event: &Event) -> Result<Vec<MicroOp>, String> {
    serde_json::from_value(event.value.clone()).map_err(|e| {
        format!(
            "event {} ({:?} txn of process {}) holds no micro-op list ({e}): {}",
            event.index,
            event.kind,
            event.process.unwrap_or_default(),
            event.value
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::history;
    use crate::txn_check::AnomalyClass;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn op(kind: EventKind, process: u64, time_ns: u64, value: Value) -> Event {
        Event {
            index: 0,
            time_ns,
            kind,
            process: Some(process),
            worker: Some(process),
            node: Some("n1".into()),
            f: TXN_F.into(),
            key: None,
            value,
            error: None,
        }
    }

    fn check(events: Vec<Event>) -> CheckResult {
        let history = history(events);
        let logs = BTreeMap::new();
        TxnWorkload::default().check(&CheckInput {
            history: &history,
            node_logs: &logs,
        })
    }

    #[test]
    fn given_appends_read_in_order_when_checked_should_be_valid() {
        let result = check(vec![
            op(EventKind::Invoke, 0, 1, json!([["append", "k1", 1]])),
            op(EventKind::Ok, 0, 2, json!([["append", "k1", 1]])),
            op(EventKind::Invoke, 1, 3, json!([["r", "k1", null], ["append", "k1", 2]])),
            op(EventKind::Ok, 1, 4, json!([["r", "k1", [1]], ["append", "k1", 2]])),
            op(EventKind::Invoke, 0, 5, json!([["r", "k1", null]])),
            op(EventKind::Ok, 0, 6, json!([["r", "k1", [1, 2]]])),
        ]);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert_eq!(result.details["stats"]["ok"], 3);
    }

    #[test]
    fn given_a_read_that_missed_a_write_committed_before_it_when_checked_should_name_a_cycle_class() {
        // T0 and T2 both read k1 before the other's append took effect, then both appended: each read misses the
        // other's append although the list orders them (two rw edges, some adjacent: G2-item); T4's read shows it.
        let result = check(vec![
            op(EventKind::Invoke, 0, 1, json!([["r", "k1", null], ["append", "k2", 1]])),
            op(EventKind::Invoke, 1, 2, json!([["r", "k2", null], ["append", "k1", 2]])),
            op(EventKind::Ok, 0, 3, json!([["r", "k1", null], ["append", "k2", 1]])),
            op(EventKind::Ok, 1, 4, json!([["r", "k2", null], ["append", "k1", 2]])),
            op(EventKind::Invoke, 2, 5, json!([["r", "k1", null], ["r", "k2", null]])),
            op(EventKind::Ok, 2, 6, json!([["r", "k1", [2]], ["r", "k2", [1]]])),
        ]);
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.reason);
        assert!(
            result.details["anomalies"][AnomalyClass::G2Item.name()].is_array(),
            "{}",
            result.details
        );
        assert_eq!(result.evidence_ns, Some(4), "the later of the two completions");
    }

    #[test]
    fn given_an_unfinished_or_failed_txn_when_paired_should_use_its_invocation_and_be_info_or_fail() {
        let history = history(vec![
            op(EventKind::Invoke, 0, 1, json!([["append", "k1", 1]])),
            op(EventKind::Fail, 0, 2, json!([["append", "k1", 1]])),
            op(EventKind::Invoke, 1, 3, json!([["append", "k1", 2]])),
            op(EventKind::Invoke, 2, 9, json!([["r", "k1", null]])),
            op(EventKind::Info, 2, 10, json!([["r", "k1", null]])),
        ]);
        let txns = history_txns(&history).unwrap();
        let outcomes: Vec<(u64, TxnOutcome, u64)> =
            txns.iter().map(|t| (t.index, t.outcome, t.complete_time_ns)).collect();
        assert_eq!(
            outcomes,
            vec![
                (0, TxnOutcome::Fail, 2),
                (3, TxnOutcome::Info, 10),
                (2, TxnOutcome::Info, 10)
            ]
        );
    }

    #[test]
    fn given_a_malformed_micro_op_when_checked_should_be_unknown_naming_the_event() {
        let result = check(vec![
            op(EventKind::Invoke, 0, 1, json!([["incr", "k1", 1]])),
            op(EventKind::Ok, 0, 2, json!([["incr", "k1", 1]])),
        ]);
        assert_eq!(result.verdict, Verdict::Unknown);
        assert!(result.reason.contains("event 1"), "{}", result.reason);
    }
}
