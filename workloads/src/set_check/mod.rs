//! The set checker (Jepsen's `set-full`): clients add unique elements to one set and read the whole set; did every
//! element that became known stay in the reads that began after that, and did nothing appear that nobody added?
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
//! Jepsen's definitions (`jepsen.checker/set-full`), case by case. For each element whose add was invoked, only the
//! `ok` reads that *completed* after that invocation count, in history order:
//! - **known**: the earlier of the add's acknowledgement and the completion of the first read that showed it;
//! - **last present** / **last absent**: the read invoked last (by history index) among those that showed it / that
//!   missed it.
//!
//! Then, exactly one of:
//! - **stable**: some read showed it and no read invoked after the last such read missed it. Its *stable latency* is
//!   from when it was known to just after the last read that missed it began (0 when none did), in whole ms; a stable
//!   element with a latency above 0 is **stale** (a read that began after it was known missed it, a later one showed
//!   it);
//! - **lost**: it was known, and the last read that missed it was invoked after it was known and after the last read
//!   that showed it. Its *lost latency* is from when it was known to just after the last read that showed it began
//!   (0 if none did);
//! - **never read**: neither. No read after it was known, or only reads concurrent with its add (a read that
//!   overlaps the add may have come before it), or an add never confirmed and never shown.
//!
//! faultline adds two findings Jepsen's `set-full` does not make (Jepsen's plain `set` makes the first):
//! - **unexpected**: a read showed an element no client ever tried to add;
//! - **failed-but-present**: a read showed an element whose add was answered `fail`.
//!
//! The verdict, as Jepsen's: invalid when an element is lost (or, faultline's, unexpected or failed-but-present);
//! else `unknown` when no element is stable (nothing was checked); else invalid when the set is claimed linearizable
//! ([`SetCheckOptions::linearizable`]: faultline's live runs, `faultline check --linearizable`) and an element is
//! stale; else valid. Each element is a pass over the reads: O(elements x reads).
//!
//! Latency distributions, as Jepsen gives them: quantiles 0, 0.5, 0.95, 0.99 and 1 of the stable latencies of every
//! stable element and of the lost latencies of every lost element.
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
    /// Stable elements (Jepsen's `stable-count`; stale ones included): a read showed them and none invoked after
    /// the last such read missed them.
    pub stable: u64,
    /// Elements neither stable nor lost (Jepsen's `never-read-count`): no read after they were known, only reads
    /// concurrent with their add, or an add never confirmed and never shown.
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
    /// The first [`MAX_ANOMALIES_PER_KIND`] never-read elements.
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
    invoke_index: u64,
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
    reads.sort_by_key(|r| (r.invoke_index, r.complete_index));
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
    let (mut stable_ms, mut lost_ms) = (Vec::new(), Vec::new());
    let mut push = |stats: &mut SetCheckStats, anomaly: SetAnomaly| {
        let count = stats.anomalies.entry(anomaly.kind.clone()).or_default();
        *count += 1;
        if *count as usize <= MAX_ANOMALIES_PER_KIND {
            anomalies.push(anomaly);
        }
    };
    let shown: HashSet<&str> = reads
        .iter()
        .flat_map(|r| r.elements.iter().map(String::as_str))
        .collect();
    let mut elements: Vec<&str> = adds.keys().map(String::as_str).chain(shown.iter().copied()).collect();
    elements.sort_unstable();
    elements.dedup();
    for element in elements {
        let base = anomaly_base(element, adds.get(element));
        let Some(add) = adds.get(element) else {
            push(&mut stats, unexpected(base, &reads, "no client ever tried to add it"));
            continue;
        };
        let facts = Facts::of(element, add, &reads);
        if add.outcome == "fail" && facts.last_present.is_some() {
            // One finding per element: that it appeared at all is the anomaly; whether it then stayed is not a
            // second one (a failed add promised nothing to lose).
            push(
                &mut stats,
                unexpected(base.clone(), &reads, "its add was answered as definitely failed"),
            );
            continue;
        }
        match facts.outcome() {
            Outcome::Stable { latency_ms } => {
                stats.stable += 1;
                stable_ms.push(latency_ms);
                if latency_ms > 0 {
                    push(&mut stats, facts.anomaly(base, "stale", latency_ms, &reads));
                }
            }
            Outcome::Lost { latency_ms } => {
                lost_ms.push(latency_ms);
                push(&mut stats, facts.anomaly(base, "lost", latency_ms, &reads));
            }
            Outcome::NeverRead => {
                stats.never_read += 1;
                if stats.never_read_elements.len() < MAX_ANOMALIES_PER_KIND {
                    stats.never_read_elements.push(element.to_string());
                }
            }
        }
    }
    stats.stable_latencies_ms = quantiles(&mut stable_ms);
    stats.lost_latencies_ms = quantiles(&mut lost_ms);
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
        let Some((invoke_index, invoke_ns, f, invoked)) = open.remove(&process) else {
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
                invoke_index,
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

/// What Jepsen's `set-full` knows of one element (its `SetFullElement`), from the `ok` reads that completed after
/// the element's add was invoked, in history order:
/// - `known`: the earlier (by index) of the add's acknowledgement and the completion of the first read that showed it;
/// - `last_present`, `last_absent`: the read invoked last (by invocation index) among those that showed it, and
///   among those that missed it.
struct Facts<'a> {
    known: Option<(u64, u64)>,
    last_present: Option<&'a Read>,
    last_absent: Option<&'a Read>,
}

/// Jepsen's outcome of one element, with its latency in whole ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// A read showed it and no read invoked after the last such read missed it. Latency: from when it was known to
    /// just after the last read that missed it began (0 when none did); above 0 it is *stale*.
    Stable { latency_ms: u64 },
    /// It was known, and the last read that missed it was invoked after it was known and after the last read that
    /// showed it. Latency: from when it was known to just after the last read that showed it began (0 if none did).
    Lost { latency_ms: u64 },
    /// Neither: no read after it was known, or only reads concurrent with its add (which may have come before it).
    NeverRead,
}

impl<'a> Facts<'a> {
    fn of(element: &str, add: &Add, reads: &'a [Read]) -> Facts<'a> {
        let mut facts = Facts {
            known: add.acked.map(|(ns, index)| (index, ns)),
            last_present: None,
            last_absent: None,
        };
        for read in reads.iter().filter(|r| r.complete_index > add.invoke_index) {
            let shows = read.elements.contains(element);
            if shows && facts.known.is_none_or(|(index, _)| read.complete_index < index) {
                facts.known = Some((read.complete_index, read.complete_ns));
            }
            let last = if shows {
                &mut facts.last_present
            } else {
                &mut facts.last_absent
            };
            if last.is_none_or(|r| r.invoke_index < read.invoke_index) {
                *last = Some(read);
            }
        }
        facts
    }

    fn outcome(&self) -> Outcome {
        let after_ns = |read: Option<&Read>| read.map_or(0, |r| r.invoke_ns + 1);
        let since_known_ms = |ns: u64| ns.saturating_sub(self.known.map_or(0, |(_, known_ns)| known_ns)) / 1_000_000;
        if let Some(present) = self.last_present {
            if self
                .last_absent
                .is_none_or(|absent| absent.invoke_index < present.invoke_index)
            {
                return Outcome::Stable {
                    latency_ms: since_known_ms(after_ns(self.last_absent)),
                };
            }
        }
        match (self.known, self.last_absent) {
            (Some((known_index, _)), Some(absent))
                if self
                    .last_present
                    .is_none_or(|present| present.invoke_index < absent.invoke_index)
                    && known_index < absent.invoke_index =>
            {
                Outcome::Lost {
                    latency_ms: since_known_ms(after_ns(self.last_present)),
                }
            }
            _ => Outcome::NeverRead,
        }
    }

    /// The record of a lost or stale element: when it was known, the last read that showed it (by completion), the
    /// reads invoked after it was known that missed it, and one sentence.
    fn anomaly(&self, mut anomaly: SetAnomaly, kind: &str, latency_ms: u64, reads: &[Read]) -> SetAnomaly {
        let element = anomaly.element.clone();
        let (known_index, known_ns) = self.known.expect("a lost or stale element was known");
        let missing: Vec<&Read> = reads
            .iter()
            .filter(|r| r.invoke_index > known_index && !r.elements.contains(&element))
            .collect();
        let later = reads.iter().filter(|r| r.invoke_index > known_index).count();
        let last_seen = reads
            .iter()
            .filter(|r| r.elements.contains(&element))
            .max_by_key(|r| r.complete_index);
        anomaly.kind = kind.to_string();
        anomaly.known_ns = Some(known_ns);
        anomaly.last_seen_ns = last_seen.map(|r| r.complete_ns);
        anomaly.last_seen_index = last_seen.map(|r| r.complete_index);
        anomaly.first_missing_index = missing.first().map(|r| r.complete_index);
        anomaly.first_missing_ns = missing.first().map(|r| r.invoke_ns);
        anomaly.first_missing_node = missing.first().and_then(|r| r.node.clone());
        anomaly.missing_reads = missing.len() as u64;
        let known = match anomaly.acked_ns {
            Some(ns) if ns == known_ns => format!("acknowledged at {}", secs(ns)),
            _ => format!(
                "first seen by a read completed at {} (add {})",
                secs(known_ns),
                anomaly.add_outcome
            ),
        };
        let seen = match last_seen {
            Some(read) => format!(
                "last shown by a read completed at {}{}",
                secs(read.complete_ns),
                on(read)
            ),
            None => "never shown by any read".to_string(),
        };
        let absent = self
            .last_absent
            .expect("a lost or stale element has a read that missed it");
        anomaly.description = if kind == "lost" {
            anomaly.stable_latency_ms = None;
            format!(
                "`{element}` {known}, {seen}; {} of {later} reads invoked after it was known missed it, the last \
                 invoked at {}{}, after every read that showed it: lost",
                missing.len(),
                secs(absent.invoke_ns),
                on(absent)
            )
        } else {
            anomaly.stable_latency_ms = Some(latency_ms);
            format!(
                "`{element}` {known}; a read invoked {latency_ms} ms after it was known (at {}{}) missed it, and a \
                 read invoked later showed it: stale read ({} of {later} reads invoked after it was known missed it)",
                secs(absent.invoke_ns),
                on(absent),
                missing.len()
            )
        };
        anomaly
    }
}

/// ` on n2`, or nothing for a read whose node is not known.
fn on(read: &Read) -> String {
    read.node.as_deref().map_or(String::new(), |node| format!(" on {node}"))
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
                "not checked: no element became stable (shown by a read and missed by none invoked after it; {} \
                 adds, {} never read)",
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
            "{} acknowledged of {} adds ({} unknown); {} reads; {} elements stable (every read invoked after the last \
             that showed them shows them), {} never read",
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

    /// Jepsen's own `set-full` cases (`jepsen/test/jepsen/checker_test.clj`, `set-full-test`): op `i` has index `i`
    /// and time `i` ms; elements are integers; the checker is `(set-full)`, not claimed linearizable.
    mod jepsen {
        use super::*;

        #[derive(Clone, Copy)]
        enum Op {
            Add(u64, i64),
            AddOk(u64, i64),
            Read(u64),
            ReadOk(u64, &'static [i64]),
        }
        use Op::*;

        /// The history of `ops`, op `i` at `i` ms, as Jepsen's test helper builds it.
        fn jepsen_history(ops: &[Op]) -> History {
            let events = ops
                .iter()
                .enumerate()
                .map(|(i, op)| match *op {
                    Add(p, v) => event(Invoke, p, "add", i as u64, json!(v)),
                    AddOk(p, v) => event(Done, p, "add", i as u64, json!(v)),
                    Read(p) => event(Invoke, p, "read", i as u64, Value::Null),
                    ReadOk(p, vs) => event(Done, p, "read", i as u64, json!(vs)),
                })
                .collect();
            history(events)
        }

        fn run(ops: &[Op]) -> SetCheckResult {
            check_set_with(&jepsen_history(ops), &SetCheckOptions { linearizable: false })
        }

        fn of_kind(result: &SetCheckResult, kind: &str) -> Vec<String> {
            result
                .anomalies
                .iter()
                .filter(|a| a.kind == kind)
                .map(|a| a.element.clone())
                .collect()
        }

        fn all(ms: u64) -> BTreeMap<String, u64> {
            ["0", "0.5", "0.95", "0.99", "1"]
                .iter()
                .map(|q| (q.to_string(), ms))
                .collect()
        }

        #[test]
        fn given_an_add_never_read_should_be_never_read_and_unknown() {
            let result = run(&[Add(0, 0), AddOk(0, 0)]);
            assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
            assert_eq!((result.stats.never_read, result.stats.stable), (1, 0));
            assert_eq!(result.stats.never_read_elements, ["0"]);
        }

        #[test]
        fn given_an_add_never_confirmed_and_a_read_that_missed_it_should_be_never_read() {
            let result = run(&[Add(0, 0), Read(1), ReadOk(1, &[])]);
            assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
            assert_eq!(result.stats.never_read_elements, ["0"]);
            assert!(result.anomalies.is_empty(), "{:?}", result.anomalies);
        }

        #[test]
        fn given_a_read_that_shows_it_concurrently_or_after_should_be_stable_with_latency_zero() {
            let (a, a_ok, r, r_yes) = (Add(0, 0), AddOk(0, 0), Read(1), ReadOk(1, &[0]));
            for ops in [
                [r, a, r_yes, a_ok],
                [r, a, a_ok, r_yes],
                [a, r, r_yes, a_ok],
                [a, r, a_ok, r_yes],
                [a, a_ok, r, r_yes],
            ] {
                let result = run(&ops);
                assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
                assert_eq!((result.stats.stable, result.stats.never_read), (1, 0));
                assert_eq!(result.stats.stable_latencies_ms, all(0));
                assert!(result.anomalies.is_empty(), "{:?}", result.anomalies);
            }
        }

        #[test]
        fn given_a_read_invoked_after_the_ack_that_misses_it_should_be_lost() {
            let result = run(&[Add(0, 0), AddOk(0, 0), Read(1), ReadOk(1, &[])]);
            assert_eq!(result.verdict, Verdict::Invalid);
            assert_eq!(of_kind(&result, "lost"), ["0"]);
            assert_eq!((result.stats.stable, result.stats.never_read), (0, 0));
            assert_eq!(result.stats.lost_latencies_ms, all(0));
        }

        #[test]
        fn given_only_reads_concurrent_with_the_add_that_miss_it_should_be_never_read() {
            let (a, a_ok, r, r_no) = (Add(0, 0), AddOk(0, 0), Read(1), ReadOk(1, &[]));
            for ops in [
                [r, a, r_no, a_ok],
                [r, a, a_ok, r_no],
                [a, r, r_no, a_ok],
                [a, r, a_ok, r_no],
            ] {
                let result = run(&ops);
                assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
                assert_eq!(result.stats.never_read_elements, ["0"]);
                assert!(result.anomalies.is_empty(), "{:?}", result.anomalies);
            }
        }

        #[test]
        fn given_write_present_missing_should_lose_both_with_jepsens_latencies() {
            let result = run(&[
                Add(0, 0),
                Add(1, 1),
                Read(2),
                ReadOk(2, &[1]),
                AddOk(0, 0),
                AddOk(1, 1),
                Read(2),
                ReadOk(2, &[0, 1]),
                Read(2),
                ReadOk(2, &[0]),
                Read(2),
                ReadOk(2, &[]),
            ]);
            assert_eq!(result.verdict, Verdict::Invalid);
            assert_eq!(of_kind(&result, "lost"), ["1", "0"]); // ordered by when each was known
            assert_eq!((result.stats.stable, result.stats.never_read), (0, 0));
            let expected: BTreeMap<String, u64> = [("0", 3), ("0.5", 4), ("0.95", 4), ("0.99", 4), ("1", 4)]
                .iter()
                .map(|(q, v)| (q.to_string(), *v))
                .collect();
            assert_eq!(result.stats.lost_latencies_ms, expected);
        }

        #[test]
        fn given_write_flutter_should_find_one_stable_but_stale_and_one_lost() {
            let result = run(&[
                Add(0, 0),
                AddOk(0, 0),
                Add(1, 1),
                Read(2),
                ReadOk(2, &[1]),
                AddOk(1, 1),
                Read(2),
                Read(3),
                ReadOk(3, &[1]),
                ReadOk(2, &[0]),
            ]);
            assert_eq!(result.verdict, Verdict::Invalid);
            assert_eq!(of_kind(&result, "lost"), ["0"]);
            assert_eq!(of_kind(&result, "stale"), ["1"]);
            assert_eq!(result.stats.stable, 1);
            assert_eq!(result.stats.lost_latencies_ms, all(5));
            assert_eq!(result.stats.stable_latencies_ms, all(2));
            let stale = result.anomalies.iter().find(|a| a.kind == "stale").expect("stale");
            assert_eq!(stale.stable_latency_ms, Some(2));
            assert_eq!(
                stale.known_ns,
                Some(4_000_000),
                "known by the read completed at index 4"
            );
        }

        /// Claimed linearizable (faultline's live runs, `--linearizable`), a stale element makes the history invalid;
        /// not claimed, it is reported and the history is valid.
        #[test]
        fn given_a_stale_element_should_be_invalid_only_when_the_set_is_claimed_linearizable() {
            let ops = [
                Add(0, 0),
                AddOk(0, 0),
                Read(1),
                ReadOk(1, &[]),
                Read(1),
                ReadOk(1, &[0]),
            ];
            let relaxed = run(&ops);
            assert_eq!(relaxed.verdict, Verdict::Valid, "{}", relaxed.reason);
            assert_eq!(of_kind(&relaxed, "stale"), ["0"]);
            let strict = check_set(&jepsen_history(&ops));
            assert_eq!(strict.verdict, Verdict::Invalid, "{}", strict.reason);
        }
    }

    /// An add answered `fail` that a read shows and a later read misses is one finding (failed-but-present), not
    /// two: its disappearance loses nothing anybody was promised.
    #[test]
    fn given_a_failed_add_that_appears_then_vanishes_should_be_reported_once() {
        let h = history(vec![
            event(Invoke, 1, "add", 1, json!("a")),
            event(EventKind::Fail, 1, "add", 2, json!("a")),
            event(Invoke, 2, "read", 3, Value::Null),
            event(Done, 2, "read", 4, json!(["a"])),
            event(Invoke, 2, "read", 5, Value::Null),
            event(Done, 2, "read", 6, json!([])),
        ]);
        let result = check_set(&h);
        let kinds: Vec<&str> = result.anomalies.iter().map(|a| a.kind.as_str()).collect();
        assert_eq!(kinds, ["failed-but-present"], "{}", result.reason);
        assert!(!result.stats.anomalies.contains_key("lost"));
    }
}
