//! Jepsen's bank checker: transfers move money between accounts and reads see every balance at once; under snapshot
//! isolation or anything stronger, every read sums to the same total, and no balance goes negative.
//!
//! History shape: client ops `f: transfer` (value `{from, to, amount}`; they change nothing the check reads) and
//! `f: read`, whose `ok` completion's value maps each account to its balance (`{"0": 100, "1": 0}`; Jepsen's EDN
//! integer keys are read as their digits). Each `ok` read is judged on its own, the first of these that applies
//! (Jepsen's order):
//! - **unexpected-key**: an account that is not one of the bank's;
//! - **nil-balance**: an account without a balance;
//! - **wrong-total**: the balances do not add up to the total;
//! - **negative-value**: a negative balance, unless [`BankCheckOptions::negative_balances`] allows them.
//!
//! The accounts and the total are the options' when given; else those a read invocation announces
//! (`{"accounts": 8, "total": 100}`, what faultline's live bank workload sends: accounts `0..8`); else, as
//! elle-cli's checker infers them, the first `ok` read's accounts and sum. A history without an `ok` read is
//! unknown.

use crate::history::{Event, EventKind, History};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Unbalanced reads kept in the result (all are counted).
pub const MAX_READS_KEPT: usize = 50;

/// What the bank promises.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BankCheckOptions {
    /// The sum every read must show; `None`: announced by the history, else the first read's.
    pub total: Option<i64>,
    /// The accounts (by name); `None`: announced by the history, else the first read's.
    pub accounts: Option<BTreeSet<String>>,
    /// Balances may go below zero.
    pub negative_balances: bool,
}

/// One read that broke the bank's promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankRead {
    /// `unexpected-key`, `nil-balance`, `wrong-total` or `negative-value`.
    pub kind: String,
    /// History index of the read's completion.
    pub index: u64,
    /// When it completed (ns).
    pub time_ns: u64,
    /// The process that read.
    pub process: u64,
    /// The node that served it, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Every balance it saw, by account.
    pub balances: BTreeMap<String, Option<i64>>,
    /// Their sum (nil balances count 0).
    pub total: i64,
    /// One sentence.
    pub description: String,
}

/// The bank checker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankCheckResult {
    /// Invalid when a read broke the promise; unknown when nothing was read.
    pub verdict: Verdict,
    /// One sentence.
    pub reason: String,
    /// The total every read had to show, and where it came from (`option`, `announced`, `first read`).
    pub total: Option<i64>,
    /// Where `total` came from.
    pub total_from: String,
    /// The accounts.
    pub accounts: Vec<String>,
    /// `ok` reads judged.
    pub read_count: u64,
    /// Transfers attempted, and acknowledged.
    pub transfers: u64,
    /// Acknowledged transfers.
    pub transfers_ok: u64,
    /// Reads that broke a promise (a wrong total, a negative balance, a missing or unknown account), by kind.
    pub error_counts: BTreeMap<String, u64>,
    /// The first [`MAX_READS_KEPT`] such reads, in history order.
    pub errors: Vec<BankRead>,
    /// The read whose total was furthest from the promise, and the lowest and highest totals seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst: Option<BankRead>,
    /// Lowest and highest total any read showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals_seen: Option<(i64, i64)>,
}

/// Checks a bank history (see the module docs).
pub fn check_bank(history: &History, options: &BankCheckOptions) -> BankCheckResult {
    let reads = ok_reads(history);
    let (transfers, transfers_ok) = count_transfers(history);
    let announced = history
        .client_events()
        .find(|e| e.kind == EventKind::Invoke && e.f == "read" && e.value.get("total").is_some());
    let first = reads.first();
    let (total, total_from) = match (options.total, announced.and_then(|e| e.value["total"].as_i64()), first) {
        (Some(total), _, _) => (Some(total), "option"),
        (None, Some(total), _) => (Some(total), "announced by the history's reads"),
        (None, None, Some(read)) => (Some(read.1.values().flatten().sum()), "the first read's sum"),
        (None, None, None) => (None, "no read"),
    };
    let accounts: BTreeSet<String> = match (&options.accounts, announced.and_then(|e| e.value["accounts"].as_u64())) {
        (Some(accounts), _) => accounts.clone(),
        (None, Some(n)) => (0..n).map(|i| i.to_string()).collect(),
        (None, None) => first.map(|r| r.1.keys().cloned().collect()).unwrap_or_default(),
    };
    let mut result = BankCheckResult {
        verdict: Verdict::Valid,
        reason: String::new(),
        total,
        total_from: total_from.to_string(),
        accounts: accounts.iter().cloned().collect(),
        read_count: reads.len() as u64,
        transfers,
        transfers_ok,
        error_counts: BTreeMap::new(),
        errors: Vec::new(),
        worst: None,
        totals_seen: None,
    };
    let Some(total) = total else {
        result.verdict = Verdict::Unknown;
        result.reason = format!("no read succeeded: nothing to check {transfers} transfers against");
        return result;
    };
    for (event, balances) in &reads {
        judge_read(
            &mut result,
            event,
            balances,
            &accounts,
            total,
            options.negative_balances,
        );
    }
    summarize(&mut result, total);
    result
}

/// The `ok` reads with their balances by account.
fn ok_reads(history: &History) -> Vec<(&Event, BTreeMap<String, Option<i64>>)> {
    let mut open: HashMap<u64, bool> = HashMap::new();
    let mut reads = Vec::new();
    for event in history.client_events() {
        let Some(process) = event.process else { continue };
        if event.kind == EventKind::Invoke {
            open.insert(process, event.f == "read");
            continue;
        }
        if open.remove(&process) != Some(true) || event.kind != EventKind::Ok {
            continue;
        }
        let Some(map) = event.value.as_object() else { continue };
        let balances = map
            .iter()
            .map(|(account, balance)| (account.clone(), balance.as_i64()))
            .collect();
        reads.push((event, balances));
    }
    reads
}

fn count_transfers(history: &History) -> (u64, u64) {
    let transfers = history.client_events().filter(|e| e.f == "transfer");
    transfers.fold((0, 0), |(all, ok), e| match e.kind {
        EventKind::Invoke => (all + 1, ok),
        EventKind::Ok => (all, ok + 1),
        _ => (all, ok),
    })
}

fn judge_read(
    result: &mut BankCheckResult,
    event: &Event,
    balances: &BTreeMap<String, Option<i64>>,
    accounts: &BTreeSet<String>,
    total: i64,
    negative_balances: bool,
) {
    let sum: i64 = balances.values().flatten().sum();
    let unexpected: Vec<&String> = balances.keys().filter(|a| !accounts.contains(*a)).collect();
    let nils: Vec<&String> = balances.iter().filter(|(_, b)| b.is_none()).map(|(a, _)| a).collect();
    let negative: Vec<String> = balances
        .iter()
        .filter_map(|(a, b)| b.filter(|b| *b < 0).map(|b| format!("{a}: {b}")))
        .collect();
    let (lo, hi) = result.totals_seen.unwrap_or((sum, sum));
    result.totals_seen = Some((lo.min(sum), hi.max(sum)));
    let (kind, description) = if !unexpected.is_empty() {
        let names: Vec<&str> = unexpected.iter().map(|a| a.as_str()).collect();
        (
            "unexpected-key",
            format!("it shows accounts the bank does not have: {}", names.join(", ")),
        )
    } else if !nils.is_empty() {
        let names: Vec<&str> = nils.iter().map(|a| a.as_str()).collect();
        (
            "nil-balance",
            format!("accounts without a balance: {}", names.join(", ")),
        )
    } else if sum != total {
        (
            "wrong-total",
            format!("its balances add up to {sum}, not {total} ({:+})", sum - total),
        )
    } else if !negative_balances && !negative.is_empty() {
        ("negative-value", format!("negative balances: {}", negative.join(", ")))
    } else {
        return;
    };
    let read = BankRead {
        kind: kind.to_string(),
        index: event.index,
        time_ns: event.time_ns,
        process: event.process.unwrap_or_default(),
        node: event.node.clone(),
        balances: balances.clone(),
        total: sum,
        description: format!(
            "the read at event {} (process {}): {description}",
            event.index,
            event.process.unwrap_or_default()
        ),
    };
    *result.error_counts.entry(kind.to_string()).or_default() += 1;
    let worse = result
        .worst
        .as_ref()
        .is_none_or(|w| (w.total - total).abs() < (sum - total).abs());
    if worse {
        result.worst = Some(read.clone());
    }
    if result.errors.len() < MAX_READS_KEPT {
        result.errors.push(read);
    }
}

fn summarize(result: &mut BankCheckResult, total: i64) {
    let errors: u64 = result.error_counts.values().sum();
    (result.verdict, result.reason) = match result.errors.first() {
        Some(first) => {
            let counts: Vec<String> = result.error_counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
            // Only a wrong total is an unbalanced read; the rest break the bank's other promises.
            let what = if result.error_counts.keys().all(|k| k == "wrong-total") {
                "are unbalanced"
            } else if result.error_counts.keys().all(|k| k == "negative-value") {
                "show a negative balance"
            } else {
                "break the bank's promises"
            };
            let reason = format!(
                "{errors} of {} reads {what} ({}); first: {}",
                result.read_count,
                counts.join(", "),
                first.description
            );
            (Verdict::Invalid, reason)
        }
        None if result.read_count == 0 => (Verdict::Unknown, "no read succeeded: nothing was checked".to_string()),
        None => {
            let reason = format!(
                "all {} reads add up to {total} ({}) with no negative balance; {} of {} transfers acknowledged",
                result.read_count, result.total_from, result.transfers_ok, result.transfers
            );
            (Verdict::Valid, reason)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::history;
    use serde_json::{json, Value};

    use crate::checker::tests::client_op as op;

    fn read(process: u64, balances: Value) -> Vec<Event> {
        vec![
            op(EventKind::Invoke, process, "read", Value::Null),
            op(EventKind::Ok, process, "read", balances),
        ]
    }

    #[test]
    fn given_reads_that_keep_the_total_should_be_valid_with_the_total_of_the_first_read() {
        let mut events = read(0, json!({"0": 10, "1": 0}));
        events.extend([
            op(
                EventKind::Invoke,
                1,
                "transfer",
                json!({"from": 0, "to": 1, "amount": 4}),
            ),
            op(EventKind::Ok, 1, "transfer", json!({"from": 0, "to": 1, "amount": 4})),
        ]);
        events.extend(read(0, json!({"0": 6, "1": 4})));
        let result = check_bank(&history(events), &BankCheckOptions::default());
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert_eq!((result.total, result.transfers_ok), (Some(10), 1));
    }

    #[test]
    fn given_a_lost_transfer_and_a_negative_balance_should_report_each_read_by_kind() {
        let mut events = read(0, json!({"0": 10, "1": 0}));
        events.extend(read(0, json!({"0": 6, "1": 0})));
        events.extend(read(0, json!({"0": 11, "1": -1})));
        events.extend(read(0, json!({"0": 5, "2": 5})));
        let result = check_bank(&history(events), &BankCheckOptions::default());
        assert_eq!(result.verdict, Verdict::Invalid);
        let kinds: Vec<&str> = result.errors.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, vec!["wrong-total", "negative-value", "unexpected-key"]);
        assert_eq!(result.errors[0].total, 6);
        assert_eq!(result.totals_seen, Some((6, 10)));
        assert!(
            result.reason.starts_with("3 of 4 reads break the bank's promises"),
            "{}",
            result.reason
        );
        let negative = check_bank(
            &history(read(0, json!({"0": 11, "1": -1}))),
            &BankCheckOptions::default(),
        );
        assert!(
            negative
                .reason
                .starts_with("1 of 1 reads show a negative balance (1 negative-value)"),
            "a negative balance is not called unbalanced: {}",
            negative.reason
        );
        let allowed = BankCheckOptions {
            negative_balances: true,
            ..BankCheckOptions::default()
        };
        assert_eq!(
            check_bank(&history(read(0, json!({"0": 11, "1": -1}))), &allowed).verdict,
            Verdict::Valid
        );
    }

    #[test]
    fn given_a_total_announced_by_the_read_invocations_should_judge_the_first_read_by_it() {
        let events = vec![
            op(EventKind::Invoke, 0, "read", json!({"accounts": 2, "total": 10})),
            op(EventKind::Ok, 0, "read", json!({"0": 9, "1": 0})),
        ];
        let result = check_bank(&history(events), &BankCheckOptions::default());
        assert_eq!(result.verdict, Verdict::Invalid, "the first read is judged too");
        assert_eq!(result.total_from, "announced by the history's reads");
    }
}
