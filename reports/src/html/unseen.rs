//! Acknowledged writes a read does not see, named one by one: in a register history where every value is written
//! once, a read of `u` shows the state right after `u`'s writer, so every write acknowledged after that writer
//! completed and before the read began (real time puts it between the two) is missing from what the read saw. Either
//! the system lost those writes (a primary that acknowledged them was replaced without them, as in Redis with
//! Sentinel) or the read is stale; the linearizability check says that the history is wrong, this names what is
//! missing.
//!
//! Two views: under the failing key, the writes its unplaceable read does not see; and for every non-linearizable
//! key, the writes its first read of the final phase (after the heal, when the cluster has converged) does not see.

use super::escape::Shown;
use super::linearizability::describe;
use super::timeline::ms;
use faultline_workloads::history::{Event, EventKind, History};
use faultline_workloads::Explanation;
use maud::{html, Markup};
use serde_json::Value;
use std::collections::HashMap;

/// Unseen writes listed under the failing key at most (the rest are counted).
const LISTED_MAX: usize = 40;
/// Unseen writes named per key in the final-read summary.
const NAMED_PER_KEY_MAX: usize = 4;
/// The lifecycle event that opens the final phase's reads.
const FINAL_READS: &str = "final-reads";

/// A read, what it returned, and the acknowledged writes it does not see.
struct Unseen<'a> {
    read: &'a Event,
    value: &'a Value,
    writer: Option<&'a Event>,
    writes: Vec<(&'a Event, &'a Event)>,
}

/// An op as its invocation and completion.
type Pair<'a> = (&'a Event, &'a Event);

/// The writes `read` (an `ok` read among `pairs`, the key's completed ops) does not see; `None` when the value it
/// returned has no writer in the history (a read of nil sees the initial state).
fn unseen_by<'a>(pairs: &[Pair<'a>], (read, done): Pair<'a>) -> Option<Unseen<'a>> {
    let writer = pairs
        .iter()
        .filter(|(invoke, completion)| completion.kind != EventKind::Fail && written_value(invoke) == Some(&done.value))
        .max_by_key(|(_, completion)| completion.time_ns);
    if writer.is_none() && !done.value.is_null() {
        return None;
    }
    let written_by_ns = writer.map_or(0, |(_, completion)| completion.time_ns);
    let writes = pairs
        .iter()
        .filter(|(invoke, completion)| {
            written_value(invoke).is_some()
                && completion.kind == EventKind::Ok
                && invoke.time_ns > written_by_ns
                && completion.time_ns < read.time_ns
        })
        .copied()
        .collect();
    Some(Unseen {
        read,
        value: &done.value,
        writer: writer.map(|(invoke, _)| *invoke),
        writes,
    })
}

/// Shorter keys first, then as text: `k3` before `k12` for the `k<N>` keys workloads generate, and still a total
/// order for any other names.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn is_ok_read((invoke, completion): &Pair) -> bool {
    invoke.f == "read" && completion.kind == EventKind::Ok
}

/// The value a write or cas writes.
fn written_value(invoke: &Event) -> Option<&Value> {
    match (invoke.f.as_str(), &invoke.value) {
        ("write", v) => Some(v),
        ("cas", Value::Array(args)) if args.len() == 2 => Some(&args[1]),
        _ => None,
    }
}

/// The completed client ops on `key`.
fn completed_pairs<'a>(history: &'a History, key: &str) -> Vec<Pair<'a>> {
    let mut open: HashMap<u64, &Event> = HashMap::new();
    let mut pairs = Vec::new();
    for event in history.client_events() {
        if event.key.as_deref() != Some(key) {
            continue;
        }
        let process = event.process.unwrap_or(u64::MAX);
        if event.kind == EventKind::Invoke {
            open.insert(process, event);
        } else if let Some(invoke) = open.remove(&process) {
            pairs.push((invoke, event));
        }
    }
    pairs
}

fn value_text(value: &Value) -> String {
    if value.is_null() {
        "nil".to_string()
    } else {
        value.to_string()
    }
}

/// A time as the report shows it: on the phase clock that starts at `phase_ms` ([`super::timeline::shown`]). The
/// caller finds the phase start once: `History::phase_start_ns` scans the history.
fn seconds(phase_ms: f64, time_ns: u64) -> String {
    super::timeline::shown(ms(time_ns), phase_ms)
}

fn process(event: &Event) -> String {
    event.process.map_or_else(|| "?".to_string(), |p| format!("p{p}"))
}

/// Under the failing key: the acknowledged writes its unplaceable op does not see, when that op is an `ok` read.
/// `first`: this is the first failing key's view, the one whose list is named `lin-unseen` (ids are unique).
pub fn for_failing_read(history: &History, explanation: &Explanation, first: bool) -> Markup {
    let pairs = completed_pairs(history, &explanation.key);
    let read = pairs
        .iter()
        .copied()
        .find(|(invoke, _)| invoke.index == explanation.op.invoke_index)
        .filter(is_ok_read);
    let Some(unseen) = read.and_then(|read| unseen_by(&pairs, read)) else {
        return html! {};
    };
    if unseen.writes.is_empty() {
        return html! {};
    }
    let phase_ms = ms(history.phase_start_ns());
    let count = unseen.writes.len();
    html! {
        div class="lin-unseen" id=[first.then_some("lin-unseen")] {
            h4 { (count) " acknowledged write(s) the read does not see" }
            p {
                "The read (" (process(unseen.read)) ", invoked at " (seconds(phase_ms, unseen.read.time_ns)) " on "
                (unseen.read.node.as_deref().unwrap_or("?")) ") returns " code { (Shown(&value_text(unseen.value))) }
                @match unseen.writer {
                    Some(writer) => { ", written by " (process(writer)) " at " (seconds(phase_ms, writer.time_ns)) }
                    None => { ", the initial state" }
                }
                ". These writes were acknowledged after that and before the read began, so in real time they come \
                 between the two and the read should show one of them or a later value. Each value is written once: \
                 the system lost these writes, or the read is stale."
            }
            table class="steps" {
                thead {
                    tr {
                        th { "operation" } th { "process" } th { "acknowledged by" } th { "invoked" }
                        th { "acknowledged" }
                    }
                }
                tbody {
                    @for (invoke, completion) in unseen.writes.iter().take(LISTED_MAX) {
                        tr {
                            td { code { (Shown(&describe(invoke, Some(completion)))) } }
                            td { (process(invoke)) }
                            td { (completion.node.as_deref().unwrap_or("?")) }
                            td { (seconds(phase_ms, invoke.time_ns)) }
                            td { (seconds(phase_ms, completion.time_ns)) " (#" (completion.index) ")" }
                        }
                    }
                    @if count > LISTED_MAX {
                        tr class="elided" { td colspan="5" { "… and " (count - LISTED_MAX) " more" } }
                    }
                }
            }
        }
    }
}

/// For every non-linearizable key in `keys`: the acknowledged writes its first `ok` read of the final phase does not
/// see (nothing when the run has no final reads or none of them misses a write).
pub fn for_final_reads(history: &History, keys: &[&str]) -> Markup {
    let Some(final_ns) = history
        .events
        .iter()
        .find(|e| e.kind == EventKind::Lifecycle && e.f == FINAL_READS)
        .map(|e| e.time_ns)
    else {
        return html! {};
    };
    let phase_ms = ms(history.phase_start_ns());
    let mut rows = Vec::new();
    for key in keys {
        let pairs = completed_pairs(history, key);
        let read = pairs
            .iter()
            .copied()
            .find(|pair| pair.0.time_ns >= final_ns && is_ok_read(pair));
        if let Some(unseen) = read.and_then(|read| unseen_by(&pairs, read)) {
            if !unseen.writes.is_empty() {
                rows.push((*key, unseen));
            }
        }
    }
    if rows.is_empty() {
        return html! {};
    }
    rows.sort_by(|(a, _), (b, _)| key_order(a, b));
    let total: usize = rows.iter().map(|(_, u)| u.writes.len()).sum();
    html! {
        div class="lin-unseen" id="lin-lost" {
            h4 {
                (total) " acknowledged write(s) the final reads do not see, on " (rows.len()) " of "
                (keys.len()) " non-linearizable key(s)"
            }
            p {
                "After the heal and convergence, each key's first final read returns a value; every write acknowledged \
                 after that value's writer completed and before the read began is missing from it (each value is \
                 written once): lost, unless the final read itself is stale."
            }
            table class="steps" {
                thead {
                    tr { th { "key" } th { "final read" } th { "unseen" } th { "the latest of them" } }
                }
                tbody {
                    @for (key, unseen) in &rows {
                        tr {
                            td { code { (Shown(key)) } }
                            td {
                                code { (Shown(&value_text(unseen.value))) } " (" (process(unseen.read)) " on "
                                (unseen.read.node.as_deref().unwrap_or("?")) " at " (seconds(phase_ms, unseen.read.time_ns)) ")"
                            }
                            td { (unseen.writes.len()) }
                            td {
                                @for (i, (invoke, completion)) in unseen.writes.iter().rev().take(NAMED_PER_KEY_MAX).enumerate() {
                                    @if i > 0 { "; " }
                                    code { (Shown(&describe(invoke, Some(completion)))) }
                                    " " (process(invoke)) ", acknowledged by "
                                    (completion.node.as_deref().unwrap_or("?")) " at " (seconds(phase_ms, completion.time_ns))
                                }
                                @if unseen.writes.len() > NAMED_PER_KEY_MAX { "; …" }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::key_order;

    #[test]
    fn given_generated_keys_when_ordered_should_put_k3_before_k12_and_keep_a_total_order() {
        let mut keys = vec!["k12", "k3", "k100", "k20", "b", "a"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(keys, ["a", "b", "k3", "k12", "k20", "k100"]);
    }
}
