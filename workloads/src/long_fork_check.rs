//! Jepsen's long-fork checker: inserts to distinct keys must become visible in one order to everyone (snapshot
//! isolation forbids the long fork that parallel snapshot isolation allows).
//!
//! History shape (Jepsen's `long-fork` workload): transactions, each either one write `[["w", k, v]]` (a key is
//! written once, by one transaction) or reads of a whole group of keys `[["r", k1, null], ["r", k2, null], ...]`.
//! Reads of the same keys form a group; in a group, what each `ok` read saw is the set of keys it found written.
//! Had the writes become visible in one order, those sets would nest (each read sees a prefix of that order), so two
//! reads that each saw a write the other missed are a **long fork**:
//!
//! ```text
//! T3: r x = nil, r y = 1     (y's insert before x's)
//! T4: r x = 1,   r y = nil   (x's insert before y's)
//! ```
//!
//! Sorting a group's reads by how many keys they saw, the sets nest exactly when each one contains the one before,
//! so the check is a sort and a pass per group, not Jepsen's comparison of every pair; each fork reported is two
//! consecutive reads of that order that do not nest. With [`LongForkOptions::group_size`], every read must read
//! exactly that many keys. Like Jepsen's, a history where a key is written twice, or two reads saw different
//! values of one key, is unknown: the method does not apply. So is one without two reads of a group: nothing was
//! compared.

use crate::history::{EventKind, History};
use crate::txn_check::{MicroOp, ReadValue};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Forks kept in the result (all are counted).
pub const MAX_FORKS_KEPT: usize = 50;

/// How to read the history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LongForkOptions {
    /// Keys each read transaction reads (Jepsen's `n`); `None`: whatever each group has.
    pub group_size: Option<usize>,
}

/// One read of a group: where it is and which keys it found written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRead {
    /// History index of its completion.
    pub index: u64,
    /// Its process.
    pub process: u64,
    /// The keys it found written.
    pub saw: Vec<String>,
}

/// Two reads of one group that each saw a write the other missed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fork {
    /// The group's keys.
    pub keys: Vec<String>,
    /// One read.
    pub a: GroupRead,
    /// The other.
    pub b: GroupRead,
    /// One sentence.
    pub explanation: String,
}

/// The long-fork checker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LongForkResult {
    /// Invalid when a fork was found; unknown when the method does not apply or nothing was compared.
    pub verdict: Verdict,
    /// One sentence.
    pub reason: String,
    /// Write transactions.
    pub writes: u64,
    /// `ok` read transactions.
    pub reads: u64,
    /// Groups with two or more reads.
    pub groups_compared: u64,
    /// Forks found, all of them.
    pub fork_count: u64,
    /// The first [`MAX_FORKS_KEPT`].
    pub forks: Vec<Fork>,
}

/// Checks a long-fork history (see the module docs).
pub fn check_long_fork(history: &History, options: &LongForkOptions) -> LongForkResult {
    let mut result = LongForkResult {
        verdict: Verdict::Valid,
        reason: String::new(),
        writes: 0,
        reads: 0,
        groups_compared: 0,
        fork_count: 0,
        forks: Vec::new(),
    };
    let groups = match collect(history, options, &mut result) {
        Ok(groups) => groups,
        Err(reason) => {
            result.verdict = Verdict::Unknown;
            result.reason = reason;
            return result;
        }
    };
    for (keys, reads) in groups {
        if reads.len() < 2 {
            continue;
        }
        result.groups_compared += 1;
        find_forks(&keys, reads, &mut result);
    }
    summarize(&mut result);
    result
}

/// Reads by group (their key set), checking writes are unique and values agree.
type Groups = BTreeMap<Vec<String>, Vec<GroupRead>>;

fn collect(history: &History, options: &LongForkOptions, result: &mut LongForkResult) -> Result<Groups, String> {
    let mut written: HashMap<String, u64> = HashMap::new();
    let mut values: HashMap<String, (ReadValue, u64)> = HashMap::new();
    let mut groups = Groups::new();
    for event in history.client_events() {
        let Ok(ops) = serde_json::from_value::<Vec<MicroOp>>(event.value.clone()) else {
            continue;
        };
        if event.kind == EventKind::Invoke {
            if let [MicroOp::Write { key, .. }] = ops.as_slice() {
                result.writes += 1;
                if let Some(first) = written.insert(key.clone(), event.index) {
                    return Err(format!(
                        "key {key} is written twice (events {first} and {}): the long-fork check needs every key \
                         written once",
                        event.index
                    ));
                }
            }
            continue;
        }
        let all_reads = ops.iter().all(|op| matches!(op, MicroOp::Read { .. }));
        if event.kind != EventKind::Ok || !all_reads || ops.is_empty() {
            continue;
        }
        result.reads += 1;
        let keys: BTreeSet<String> = ops.iter().map(|op| op.key().to_string()).collect();
        if let Some(n) = options.group_size.filter(|&n| n != keys.len()) {
            return Err(format!(
                "the read at event {} read {} keys ({}), not the group size {n}",
                event.index,
                keys.len(),
                keys.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        let mut saw = Vec::new();
        for op in &ops {
            let MicroOp::Read {
                key,
                value: Some(value),
            } = op
            else {
                continue;
            };
            if let Some((other, at)) = values.insert(key.clone(), (value.clone(), event.index)) {
                if other != *value {
                    return Err(format!(
                        "key {key} read as {} at event {at} and as {} at event {}: the long-fork check needs every \
                         key written once",
                        show(&other),
                        show(value),
                        event.index
                    ));
                }
            }
            saw.push(key.clone());
        }
        saw.sort();
        saw.dedup();
        groups.entry(keys.into_iter().collect()).or_default().push(GroupRead {
            index: event.index,
            process: event.process.unwrap_or_default(),
            saw,
        });
    }
    Ok(groups)
}

fn show(value: &ReadValue) -> String {
    match value {
        ReadValue::Register(v) => v.to_string(),
        ReadValue::List(items) => Value::from(items.clone()).to_string(),
    }
}

/// Sorted by how much they saw, the reads of a group must nest; each consecutive pair that does not is a fork.
fn find_forks(keys: &[String], mut reads: Vec<GroupRead>, result: &mut LongForkResult) {
    reads.sort_by_key(|r| (r.saw.len(), r.index));
    for pair in reads.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let nested = a.saw.iter().all(|k| b.saw.binary_search(k).is_ok());
        if nested {
            continue;
        }
        result.fork_count += 1;
        if result.forks.len() >= MAX_FORKS_KEPT {
            continue;
        }
        let only = |x: &GroupRead, y: &GroupRead| -> Vec<String> {
            x.saw
                .iter()
                .filter(|k| y.saw.binary_search(k).is_err())
                .cloned()
                .collect()
        };
        let explanation = format!(
            "the read at event {} saw {} written but not {}, the read at event {} saw {} but not {}: the writes \
             became visible in two orders (long fork)",
            a.index,
            only(a, b).join(", "),
            only(b, a).join(", "),
            b.index,
            only(b, a).join(", "),
            only(a, b).join(", ")
        );
        result.forks.push(Fork {
            keys: keys.to_vec(),
            a: a.clone(),
            b: b.clone(),
            explanation,
        });
    }
}

fn summarize(result: &mut LongForkResult) {
    (result.verdict, result.reason) = match result.forks.first() {
        Some(first) => (
            Verdict::Invalid,
            format!(
                "{} long fork(s) in {} groups; first: {}",
                result.fork_count, result.groups_compared, first.explanation
            ),
        ),
        None if result.groups_compared == 0 => (
            Verdict::Unknown,
            format!(
                "no two reads of the same keys to compare ({} writes, {} reads): nothing was checked",
                result.writes, result.reads
            ),
        ),
        None => (
            Verdict::Valid,
            format!(
                "in each of {} groups, the {} reads saw the writes in one order ({} writes)",
                result.groups_compared, result.reads, result.writes
            ),
        ),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::history;
    use crate::history::Event;
    use serde_json::json;

    /// A transaction of `process`.
    fn op(kind: EventKind, process: u64, value: Value) -> Event {
        crate::checker::tests::client_op(kind, process, "txn", value)
    }

    fn txn(process: u64, invoke: Value, ok: Value) -> Vec<Event> {
        vec![op(EventKind::Invoke, process, invoke), op(EventKind::Ok, process, ok)]
    }

    fn check(events: Vec<Event>, group_size: Option<usize>) -> LongForkResult {
        check_long_fork(&history(events), &LongForkOptions { group_size })
    }

    #[test]
    fn given_two_reads_each_seeing_one_insert_the_other_missed_should_find_a_long_fork() {
        let unread = json!([["r", "x", null], ["r", "y", null]]);
        let mut events = txn(0, json!([["w", "x", 1]]), json!([["w", "x", 1]]));
        events.extend(txn(1, json!([["w", "y", 1]]), json!([["w", "y", 1]])));
        events.extend(txn(2, unread.clone(), json!([["r", "x", null], ["r", "y", 1]])));
        events.extend(txn(3, unread.clone(), json!([["r", "x", 1], ["r", "y", null]])));
        events.extend(txn(4, unread, json!([["r", "x", 1], ["r", "y", 1]])));
        let result = check(events, Some(2));
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.reason);
        assert_eq!(result.fork_count, 1);
        assert_eq!(
            (result.forks[0].a.saw.clone(), result.forks[0].b.saw.clone()),
            (vec!["y".to_string()], vec!["x".to_string()])
        );
    }

    #[test]
    fn given_reads_that_nest_should_be_valid_and_a_wrong_group_size_or_a_double_write_unknown() {
        let unread = json!([["r", "x", null], ["r", "y", null]]);
        let mut events = txn(0, json!([["w", "x", 1]]), json!([["w", "x", 1]]));
        events.extend(txn(2, unread.clone(), json!([["r", "x", 1], ["r", "y", null]])));
        events.extend(txn(3, unread, json!([["r", "x", 1], ["r", "y", 1]])));
        assert_eq!(check(events.clone(), Some(2)).verdict, Verdict::Valid);
        let wrong_size = check(events.clone(), Some(3));
        assert_eq!(wrong_size.verdict, Verdict::Unknown);
        assert!(
            wrong_size.reason.contains("not the group size 3"),
            "{}",
            wrong_size.reason
        );
        events.extend(txn(5, json!([["w", "x", 2]]), json!([["w", "x", 2]])));
        assert!(check(events, None).reason.contains("key x is written twice"));
    }
}
