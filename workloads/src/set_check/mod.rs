//! The set checker (Jepsen's `set-full`): clients add unique elements to one set and read the whole set; was every
//! acknowledged add visible to every read that began after it was known, and did nothing appear that nobody added?
//!
//! # History shape
//!
//! Client events with `f` `add` or `read` (the `key` is ignored: a history holds one set).
//! - **add**: the invocation's `value` is the element (a string, unique per history). `ok` = acknowledged, `fail` =
//!   definitely not added, `info` (or no completion) = unknown: it may appear at any time after its invocation, or
//!   never.
//! - **read**: an `ok` completion's `value` is the whole set as a JSON array of strings. `fail`/`info` reads claim
//!   nothing.
//!
//! # Checks
//!
//! An element is *known* from the earlier of its add's acknowledgement and the completion of the first read that
//! showed it. Every read invoked after that instant must show it (linearizable reads), including the final reads
//! after the restart of every node. For each element:
//! - **lost**: the last read invoked after it was known does not show it (reported with when it was acknowledged,
//!   when it was last seen and the first read that missed it);
//! - **stale**: some read invoked after it was known missed it, but a later read showed it again;
//! - **unexpected**: a read showed an element no client ever tried to add;
//! - **failed-but-present**: a read showed an element whose add was answered `fail`.
//!
//! Elements never read after they were known are counted (`never_read`), not judged. Each check is a pass over the
//! reads, so the cost is O(elements × reads) in the worst case and linear in the returned entries for the lookups.
//!
//! A stale read makes the verdict invalid only for a set claimed linearizable ([`SetCheckOptions::linearizable`]:
//! faultline's live runs); Jepsen's `set-full` by default reports stale elements and their latency and judges lost
//! and unexpected ones only. As in Jepsen, a history where no element became stable is `unknown`.
//!
//! Latencies, as Jepsen's `set-full` gives them (milliseconds, quantiles 0, 0.5, 0.95, 0.99 and 1): an element's
//! *stable latency* is how long after it was known the last read that missed it began (0 when no read missed it);
//! a lost element's *lost latency* how long after it was known the last read that showed it began.
//!
//! Elements are compared by their text: a string as it is, anything else (Jepsen's integers) as its JSON.
//! `final_read.rs` is Jepsen's plain `set` checker: a final read against every add.

mod final_read;

pub use final_read::check_set_final;

use crate::history::{EventKind, History};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Anomalies kept per kind (all are counted).
pub const MAX_ANOMALIES_PER_KIND: usize = 50;

/// What one element's adds and reads say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetAnomaly {
    /// The element.
    pub element: String,
    /// `lost`, `stale`, `unexpected` or `failed-but-present`.
    pub kind: String,
    /// How its add ended: `ok`, `fail`, `info`, `open`, or `none` (nobody added it).
    pub add_outcome: String,
    /// History index of the add's invocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_invoke_index: Option<u64>,
    /// When the add was acknowledged (ns since run start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acked_ns: Option<u64>,
    /// History index of the acknowledgement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acked_index: Option<u64>,
    /// From when every read had to show it (ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_ns: Option<u64>,
    /// Completion time of the last read that showed it (ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen_ns: Option<u64>,
    /// History index of that read's completion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen_index: Option<u64>,
    /// The first read invoked after `known_ns` that missed it: completion index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_missing_index: Option<u64>,
    /// That read's invocation time (ns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_missing_ns: Option<u64>,
    /// The node that served it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_missing_node: Option<String>,
    /// Reads invoked after `known_ns` that missed it.
    pub missing_reads: u64,
    /// How long after it was known the last read that missed it began (stale elements), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable_latency_ms: Option<u64>,
    /// One sentence.
    pub description: String,
}

/// How to judge a set history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetCheckOptions {
    /// The set claims linearizability: a read that began after an element was known and missed it (stale) makes the
    /// history invalid (Jepsen's `:linearizable? true`).
    pub linearizable: bool,
}

impl Default for SetCheckOptions {
    /// Linearizable, as faultline's live set workload claims.
    fn default() -> Self {
        SetCheckOptions { linearizable: true }
    }
}

/// Counts of a set history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetCheckStats {
    /// Add invocations.
    pub adds: u64,
    /// Acknowledged adds.
    pub acked: u64,
    /// Adds answered `fail`.
    pub failed: u64,
    /// Adds with an unknown outcome (`info` or never completed).
    pub unknown: u64,
    /// `ok` reads.
    pub reads: u64,
    /// Known elements shown by every read invoked after they were known.
    pub stable: u64,
    /// Known elements no read began after.
    pub never_read: u64,
    /// Anomalies per kind (all of them, including those not kept).
    pub anomalies: BTreeMap<String, u64>,
    /// Final-read check: elements the final read shows whose add's outcome was unknown or failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub recovered: u64,
    /// Quantiles (`0`, `0.5`, `0.95`, `0.99`, `1`) of the stable latencies, in ms.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stable_latencies_ms: BTreeMap<String, u64>,
    /// Quantiles of the lost elements' lost latencies, in ms.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lost_latencies_ms: BTreeMap<String, u64>,
    /// The first [`MAX_ANOMALIES_PER_KIND`] elements never read after they were known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never_read_elements: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The set checker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetCheckResult {
    /// Valid, invalid, or unknown (no successful read at all).
    pub verdict: Verdict,
    /// One sentence.
    pub reason: String,
    /// Counts.
    pub stats: SetCheckStats,
    /// The anomalies kept (at most [`MAX_ANOMALIES_PER_KIND`] per kind), lost first.
    pub anomalies: Vec<SetAnomaly>,
}

struct Add {
    invoke_index: u64,
    outcome: &'static str,
    acked: Option<(u64, u64)>,
}

struct Read {
    invoke_ns: u64,
    complete_ns: u64,
    complete_index: u64,
    node: Option<String>,
    elements: HashSet<String>,
}

/// Checks a set history claimed linearizable (see the module docs).
pub fn check_set(history: &History) -> SetCheckResult {
    check_set_with(history, &SetCheckOptions::default())
}

/// Checks a set history (see the module docs).
pub fn check_set_with(history: &History, options: &SetCheckOptions) -> SetCheckResult {
    let (adds, mut reads) = collect(history);
    reads.sort_by_key(|r| (r.invoke_ns, r.complete_index));
    let mut stats = SetCheckStats {
        adds: adds.len() as u64,
        reads: reads.len() as u64,
        ..Default::default()
    };
    for add in adds.values() {
        match add.outcome {
            "ok" => stats.acked += 1,
            "fail" => stats.failed += 1,
            _ => stats.unknown += 1,
        }
    }
    let mut anomalies: Vec<SetAnomaly> = Vec::new();
    let mut latencies = Latencies::default();
    let mut push = |stats: &mut SetCheckStats, anomaly: SetAnomaly| {
        let count = stats.anomalies.entry(anomaly.kind.clone()).or_default();
        *count += 1;
        if *count as usize <= MAX_ANOMALIES_PER_KIND {
            anomalies.push(anomaly);
        }
    };
    // First completion of a read showing each element (reads are sorted by invocation, not completion).
    let mut first_seen: HashMap<&str, u64> = HashMap::new();
    for read in &reads {
        for element in &read.elements {
            let seen = first_seen.entry(element.as_str()).or_insert(read.complete_ns);
            *seen = (*seen).min(read.complete_ns);
        }
    }
    let mut elements: Vec<&str> = adds
        .keys()
        .map(String::as_str)
        .chain(first_seen.keys().copied())
        .collect();
    elements.sort_unstable();
    elements.dedup();
    for element in elements {
        let add = adds.get(element);
        let seen_ns = first_seen.get(element).copied();
        let base = anomaly_base(element, add);
        match add {
            None => {
                push(&mut stats, unexpected(base, &reads, "no client ever tried to add it"));
                continue;
            }
            Some(add) if add.outcome == "fail" && seen_ns.is_some() => {
                push(
                    &mut stats,
                    unexpected(base.clone(), &reads, "its add was answered as definitely failed"),
                );
            }
            _ => {}
        }
        let known_ns = match (add.and_then(|a| a.acked).map(|(ns, _)| ns), seen_ns) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => continue,
        };
        latencies.record(element, known_ns, &reads);
        if let Some(anomaly) = judge_known(base, known_ns, &reads) {
            if anomaly.kind == "stale" {
                stats.stable += 1;
            }
            push(&mut stats, anomaly);
        } else if reads.iter().any(|r| r.invoke_ns > known_ns) {
            stats.stable += 1;
        } else {
            stats.never_read += 1;
            if stats.never_read_elements.len() < MAX_ANOMALIES_PER_KIND {
                stats.never_read_elements.push(element.to_string());
            }
        }
    }
    stats.stable_latencies_ms = quantiles(&mut latencies.stable_ms);
    stats.lost_latencies_ms = quantiles(&mut latencies.lost_ms);
    anomalies.sort_by_key(|a| (kind_rank(&a.kind), a.known_ns.unwrap_or(0)));
    let (verdict, reason) = summarize(&stats, &anomalies, options);
    SetCheckResult {
        verdict,
        reason,
        stats,
        anomalies,
    }
}

/// Adds by element and `ok` reads, paired by process.
fn collect(history: &History) -> (HashMap<String, Add>, Vec<Read>) {
    let mut open: HashMap<u64, (u64, u64, &str, &Value)> = HashMap::new();
    let mut adds: HashMap<String, Add> = HashMap::new();
    let mut reads = Vec::new();
    for event in history.events.iter().filter(|e| e.kind.is_client()) {
        let Some(process) = event.process else { continue };
        if event.f != "add" && event.f != "read" {
            continue;
        }
        if event.kind == EventKind::Invoke {
            open.insert(process, (event.index, event.time_ns, event.f.as_str(), &event.value));
            if let (true, Some(element)) = (event.f == "add", element_text(&event.value)) {
                adds.insert(
                    element,
                    Add {
                        invoke_index: event.index,
                        outcome: "open",
                        acked: None,
                    },
                );
            }
            continue;
        }
        let Some((_, invoke_ns, f, invoked)) = open.remove(&process) else {
            continue;
        };
        if f == "add" {
            let Some(add) = element_text(invoked).and_then(|e| adds.get_mut(&e)) else {
                continue;
            };
            add.outcome = match event.kind {
                EventKind::Ok => "ok",
                EventKind::Fail => "fail",
                _ => "info",
            };
            if event.kind == EventKind::Ok {
                add.acked = Some((event.time_ns, event.index));
            }
        } else if event.kind == EventKind::Ok {
            let elements = event
                .value
                .as_array()
                .map(|items| items.iter().filter_map(element_text).collect())
                .unwrap_or_default();
            reads.push(Read {
                invoke_ns,
                complete_ns: event.time_ns,
                complete_index: event.index,
                node: event.node.clone(),
                elements,
            });
        }
    }
    (adds, reads)
}

/// An element as text: a string as it is, anything else as its JSON (`null` is no element).
pub(crate) fn element_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// Latencies of the elements judged so far, in ms.
#[derive(Default)]
struct Latencies {
    stable_ms: Vec<u64>,
    lost_ms: Vec<u64>,
}

impl Latencies {
    /// Jepsen's: a stable element (the last read invoked after it was known shows it) became stable when the last
    /// read that missed it began; a lost one was lost when the last read that showed it began. Elements never read
    /// after they were known have neither.
    fn record(&mut self, element: &str, known_ns: u64, reads: &[Read]) {
        let after: Vec<&Read> = reads.iter().filter(|r| r.invoke_ns > known_ns).collect();
        let Some(last) = after.iter().max_by_key(|r| r.invoke_ns) else {
            return;
        };
        let since_ms = |ns: Option<u64>| ns.map_or(0, |ns| ns.saturating_sub(known_ns) / 1_000_000);
        if last.elements.contains(element) {
            let last_absent = after
                .iter()
                .filter(|r| !r.elements.contains(element))
                .map(|r| r.invoke_ns)
                .max();
            self.stable_ms.push(since_ms(last_absent));
        } else {
            let last_present = reads
                .iter()
                .filter(|r| r.elements.contains(element))
                .map(|r| r.invoke_ns)
                .max();
            self.lost_ms.push(since_ms(last_present));
        }
    }
}

/// Jepsen's frequency distribution: the value at `floor(n × point)` of the sorted values, per point.
fn quantiles(values: &mut [u64]) -> BTreeMap<String, u64> {
    values.sort_unstable();
    let n = values.len();
    if n == 0 {
        return BTreeMap::new();
    }
    [("0", 0.0), ("0.5", 0.5), ("0.95", 0.95), ("0.99", 0.99), ("1", 1.0)]
        .into_iter()
        .map(|(name, point)| {
            let at = ((n as f64 * point).floor() as usize).min(n - 1);
            (name.to_string(), values[at])
        })
        .collect()
}

fn anomaly_base(element: &str, add: Option<&Add>) -> SetAnomaly {
    SetAnomaly {
        element: element.to_string(),
        kind: String::new(),
        add_outcome: add.map_or("none", |a| a.outcome).to_string(),
        add_invoke_index: add.map(|a| a.invoke_index),
        acked_ns: add.and_then(|a| a.acked).map(|(ns, _)| ns),
        acked_index: add.and_then(|a| a.acked).map(|(_, index)| index),
        known_ns: None,
        last_seen_ns: None,
        last_seen_index: None,
        first_missing_index: None,
        first_missing_ns: None,
        first_missing_node: None,
        missing_reads: 0,
        stable_latency_ms: None,
        description: String::new(),
    }
}

/// Lost or stale, or `None` when every read invoked after `known_ns` shows the element.
fn judge_known(mut anomaly: SetAnomaly, known_ns: u64, reads: &[Read]) -> Option<SetAnomaly> {
    let element = anomaly.element.clone();
    let after: Vec<&Read> = reads.iter().filter(|r| r.invoke_ns > known_ns).collect();
    let missing: Vec<&&Read> = after.iter().filter(|r| !r.elements.contains(&element)).collect();
    let first_missing = missing.first()?;
    let last_seen = reads
        .iter()
        .filter(|r| r.elements.contains(&element))
        .max_by_key(|r| r.complete_ns);
    anomaly.known_ns = Some(known_ns);
    anomaly.last_seen_ns = last_seen.map(|r| r.complete_ns);
    anomaly.last_seen_index = last_seen.map(|r| r.complete_index);
    anomaly.first_missing_index = Some(first_missing.complete_index);
    anomaly.first_missing_ns = Some(first_missing.invoke_ns);
    anomaly.first_missing_node = first_missing.node.clone();
    anomaly.missing_reads = missing.len() as u64;
    let lost = after.last().is_some_and(|r| !r.elements.contains(&element));
    let acked = match anomaly.acked_ns {
        Some(ns) => format!("acknowledged at {}", secs(ns)),
        None => format!("seen by a read at {} (add {})", secs(known_ns), anomaly.add_outcome),
    };
    let last_seen = match anomaly.last_seen_ns {
        Some(ns) => format!("last seen at {}", secs(ns)),
        None => "never seen by any read".to_string(),
    };
    anomaly.kind = if lost { "lost" } else { "stale" }.to_string();
    if !lost {
        let last_missing_ns = missing.iter().map(|r| r.invoke_ns).max().unwrap_or(known_ns);
        anomaly.stable_latency_ms = Some(last_missing_ns.saturating_sub(known_ns) / 1_000_000);
    }
    anomaly.description = format!(
        "`{element}` {acked}, {last_seen}; {} of {} later reads missed it, the first invoked at {} on {}{}",
        missing.len(),
        after.len(),
        secs(first_missing.invoke_ns),
        first_missing.node.as_deref().unwrap_or("?"),
        if lost {
            ", and the last read does not have it: lost"
        } else {
            ", then a later read showed it again: stale read"
        }
    );
    Some(anomaly)
}

fn unexpected(mut anomaly: SetAnomaly, reads: &[Read], why: &str) -> SetAnomaly {
    let element = anomaly.element.clone();
    let first = reads
        .iter()
        .filter(|r| r.elements.contains(&element))
        .min_by_key(|r| r.complete_ns);
    anomaly.kind = if anomaly.add_outcome == "fail" {
        "failed-but-present"
    } else {
        "unexpected"
    }
    .to_string();
    anomaly.last_seen_ns = first.map(|r| r.complete_ns);
    anomaly.last_seen_index = first.map(|r| r.complete_index);
    anomaly.description = format!(
        "`{element}` appeared in a read completed at {} on {}, but {why}",
        first.map_or("?".to_string(), |r| secs(r.complete_ns)),
        first.and_then(|r| r.node.as_deref()).unwrap_or("?")
    );
    anomaly
}

fn kind_rank(kind: &str) -> u8 {
    match kind {
        "lost" => 0,
        "unexpected" => 1,
        "failed-but-present" => 2,
        _ => 3,
    }
}

fn summarize(stats: &SetCheckStats, anomalies: &[SetAnomaly], options: &SetCheckOptions) -> (Verdict, String) {
    let judged = |a: &&SetAnomaly| options.linearizable || a.kind != "stale";
    let counts: Vec<String> = stats.anomalies.iter().map(|(k, n)| format!("{n} {k}")).collect();
    if let Some(first) = anomalies.iter().find(judged) {
        return (
            Verdict::Invalid,
            format!("{}; first: {}", counts.join(", "), first.description),
        );
    }
    if stats.reads == 0 {
        return (
            Verdict::Unknown,
            "no read succeeded: nothing to check the adds against".into(),
        );
    }
    if stats.stable == 0 {
        return (
            Verdict::Unknown,
            format!(
                "no element was shown by every read after it was known ({} adds, {} never read after): nothing was \
                 checked",
                stats.adds, stats.never_read
            ),
        );
    }
    if let Some(first) = anomalies.first() {
        return (
            Verdict::Valid,
            format!(
                "{} (allowed: the set is not claimed linearizable); first: {}",
                counts.join(", "),
                first.description
            ),
        );
    }
    (
        Verdict::Valid,
        format!(
            "{} acknowledged of {} adds ({} unknown); {} reads; {} elements in every later read, {} never read after",
            stats.acked, stats.adds, stats.unknown, stats.reads, stats.stable, stats.never_read
        ),
    )
}

fn secs(ns: u64) -> String {
    format!("{:.3}s", ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Event;
    use serde_json::json;

    fn event(kind: EventKind, process: u64, f: &str, time_ms: u64, value: Value) -> Event {
        Event {
            index: 0,
            time_ns: time_ms * 1_000_000,
            kind,
            process: Some(process),
            worker: Some(process),
            node: Some("n1".into()),
            f: f.into(),
            key: Some("set".into()),
            value,
            error: None,
        }
    }

    fn history(events: Vec<Event>) -> History {
        let events = events
            .into_iter()
            .enumerate()
            .map(|(i, mut e)| {
                e.index = i as u64;
                e
            })
            .collect();
        History {
            events,
            truncated_tail: false,
        }
    }

    use EventKind::{Invoke, Ok as Done};

    #[test]
    fn given_every_acked_add_in_later_reads_should_be_valid() {
        let h = history(vec![
            event(Invoke, 1, "add", 1, json!("a")),
            event(Done, 1, "add", 2, json!("a")),
            event(Invoke, 2, "read", 3, Value::Null),
            event(Done, 2, "read", 4, json!(["a"])),
        ]);
        let result = check_set(&h);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert_eq!(result.stats.stable, 1);
    }

    #[test]
    fn given_an_acked_add_missing_from_the_last_read_should_report_it_lost_with_times() {
        let h = history(vec![
            event(Invoke, 1, "add", 1, json!("a")),
            event(Done, 1, "add", 2, json!("a")),
            event(Invoke, 2, "read", 3, Value::Null),
            event(Done, 2, "read", 4, json!(["a"])),
            event(Invoke, 3, "read", 5, Value::Null),
            event(Done, 3, "read", 6, json!([])),
        ]);
        let result = check_set(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        let lost = &result.anomalies[0];
        assert_eq!(lost.kind, "lost");
        assert_eq!(lost.acked_ns, Some(2_000_000));
        assert_eq!(lost.last_seen_ns, Some(4_000_000));
        assert_eq!(lost.first_missing_index, Some(5));
    }

    #[test]
    fn given_a_read_missing_an_acked_add_that_later_reappears_should_report_a_stale_read() {
        let h = history(vec![
            event(Invoke, 1, "add", 1, json!("a")),
            event(Done, 1, "add", 2, json!("a")),
            event(Invoke, 2, "read", 3, Value::Null),
            event(Done, 2, "read", 4, json!([])),
            event(Invoke, 3, "read", 5, Value::Null),
            event(Done, 3, "read", 6, json!(["a"])),
        ]);
        let result = check_set(&h);
        assert_eq!(result.anomalies[0].kind, "stale");
        assert_eq!(result.verdict, Verdict::Invalid);
    }

    #[test]
    fn given_a_read_concurrent_with_the_add_or_an_unknown_add_never_seen_should_be_valid() {
        let h = history(vec![
            event(Invoke, 1, "add", 1, json!("a")),
            event(Invoke, 2, "read", 2, Value::Null),
            event(Done, 1, "add", 3, json!("a")),
            event(Done, 2, "read", 4, json!([])),
            event(Invoke, 4, "add", 5, json!("b")),
            event(EventKind::Info, 4, "add", 6, json!("b")),
            event(Invoke, 5, "read", 7, Value::Null),
            event(Done, 5, "read", 8, json!(["a"])),
        ]);
        let result = check_set(&h);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
    }

    #[test]
    fn given_an_element_nobody_added_or_a_failed_add_in_a_read_should_be_invalid() {
        let h = history(vec![
            event(Invoke, 1, "add", 1, json!("a")),
            event(EventKind::Fail, 1, "add", 2, json!("a")),
            event(Invoke, 2, "read", 3, Value::Null),
            event(Done, 2, "read", 4, json!(["a", "zz"])),
        ]);
        let result = check_set(&h);
        let kinds: Vec<&str> = result.anomalies.iter().map(|a| a.kind.as_str()).collect();
        assert!(
            kinds.contains(&"unexpected") && kinds.contains(&"failed-but-present"),
            "{kinds:?}"
        );
    }
}
