//! The linearizability checker: is there a total order of a history's operations, consistent with their real-time
//! order, that a model accepts?
//!
//! [`check_history`] pairs invocations with completions, splits the history by key, checks keys in parallel with the
//! search in [`search`] (Wing & Gong with Lowe's memoization), checks every key (a failing key does not cancel the
//! others, so a report can say whether one key went wrong or twenty), explains every key found non-linearizable
//! ([`explain`]), and honours a wall-clock and a memory budget: keys still unanswered when a budget runs out are
//! [`Verdict::Unknown`] with that reason. [`text`] prints a result for a person.

mod explain;
mod prepare;
mod search;
mod text;

pub use explain::{Explanation, LinearizedStep, OpSummary};
pub use text::{render_text, render_text_explaining, ExplainKeys};

use crate::history::History;
use crate::models::{AppendLog, CasRegister, Kv, Model, ModelKind};
use crate::verdict::Verdict;
use prepare::Partition;
use search::{Limits, Outcome, Search, SearchStats};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Budgets and knobs for one check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Wall-clock budget for the whole check; past it the answer is `unknown`.
    pub timeout: Duration,
    /// Approximate bytes the search caches of all keys together may hold; past it the answer is `unknown`.
    pub memory_budget_bytes: u64,
    /// Keys checked at once; 0 means one per available core.
    pub parallelism: usize,
    /// Check each key on its own (P-compositionality). Turn off only to measure: keys are independent objects.
    pub partition_by_key: bool,
    /// Failing keys explained, the first ones in key order (each explanation is some 6 KiB of results.json).
    pub explained_keys_max: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            timeout: Duration::from_secs(30),
            memory_budget_bytes: 1 << 30,
            parallelism: 0,
            partition_by_key: true,
            explained_keys_max: EXPLAINED_KEYS_MAX,
        }
    }
}

/// Why a search ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The wall-clock budget ran out.
    Timeout,
    /// The caches outgrew the memory budget.
    MemoryBudget,
    /// Another key was found non-linearizable first, so this key's answer was not needed (checkers before every
    /// key was checked; kept so that their results still read).
    Cancelled,
}

/// The verdict for one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeySummary {
    /// The key (empty for histories without keys).
    pub key: String,
    /// Operations checked (failed operations and reads with unknown results constrain nothing and are left out).
    pub ops: u64,
    /// This key's verdict.
    pub verdict: Verdict,
    /// Why the verdict is `unknown`, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopReason>,
    /// Wall-clock time spent searching this key.
    pub elapsed_ms: u64,
    /// Distinct (linearized set, state) pairs the search cached.
    pub cache_entries: u64,
    /// Why the key is not linearizable, when it is not (absent from results.json files written before every
    /// failing key was explained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// The outcome of checking a history: what goes into `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearizabilityResult {
    /// Overall verdict: invalid if any key is, else unknown if any key is, else valid.
    pub verdict: Verdict,
    /// One sentence saying why.
    pub reason: String,
    /// The model checked against.
    pub model: ModelKind,
    /// Operations checked over all keys.
    pub ops: u64,
    /// Wall-clock time of the whole check.
    pub elapsed_ms: u64,
    /// Per-key verdicts, in key order.
    pub keys: Vec<KeySummary>,
    /// For an invalid history: why, on the first key found non-linearizable (the same as that key's
    /// [`KeySummary::explanation`]; kept for readers of results.json written before every failing key was explained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

impl LinearizabilityResult {
    /// Every failing key's explanation, in key order. A result written before every failing key was explained holds
    /// only the first, in [`LinearizabilityResult::explanation`].
    pub fn explanations(&self) -> Vec<&Explanation> {
        let per_key: Vec<&Explanation> = self.keys.iter().filter_map(|k| k.explanation.as_ref()).collect();
        if per_key.is_empty() {
            self.explanation.iter().collect()
        } else {
            per_key
        }
    }
}

/// Checks that `history`'s client operations are linearizable under `model`.
///
/// Never panics on bad input: a history the model cannot read gives `unknown` with the reason. Nemesis, lifecycle
/// and meta events are ignored.
pub fn check_history(history: &History, model: ModelKind, opts: &CheckOptions) -> LinearizabilityResult {
    match model {
        ModelKind::CasRegister => check_with::<CasRegister>(history, model, opts),
        ModelKind::Kv => check_with::<Kv>(history, model, opts),
        ModelKind::AppendLog => check_with::<AppendLog>(history, model, opts),
        ModelKind::Mutex => check_with::<crate::models::Mutex>(history, model, opts),
    }
}

struct KeyOutcome {
    summary: KeySummary,
    longest: Option<Vec<u32>>,
}

fn check_with<M: Model + Default>(history: &History, kind: ModelKind, opts: &CheckOptions) -> LinearizabilityResult {
    let started = Instant::now();
    let prepared = prepare::pair_operations(history)
        .and_then(|pairs| prepare::partitions::<M>(history, &pairs, opts.partition_by_key));
    let partitions = match prepared {
        Ok(p) => p,
        Err(message) => {
            return LinearizabilityResult {
                verdict: Verdict::Unknown,
                reason: format!("the history cannot be checked against the {kind} model: {message}"),
                model: kind,
                ops: 0,
                elapsed_ms: started.elapsed().as_millis() as u64,
                keys: Vec::new(),
                explanation: None,
            };
        }
    };
    let outcomes = run_partitions(&partitions, started + opts.timeout, opts);
    // Explaining replays one legal prefix per failing key: linear in the key's operations, far below its search
    // (200 failing keys of 500 operations: 3 ms of a 190 ms check). What bounds the count is results.json's size.
    let mut explained = 0;
    let keys: Vec<KeySummary> = outcomes
        .into_iter()
        .zip(&partitions)
        .map(|(outcome, partition)| {
            let longest = outcome.longest.filter(|_| explained < opts.explained_keys_max);
            explained += usize::from(longest.is_some());
            KeySummary {
                explanation: longest.map(|longest| explain::explain(partition, &longest, kind)),
                ..outcome.summary
            }
        })
        .collect();
    let explanation = keys.iter().find_map(|k| k.explanation.clone());
    let verdict = Verdict::combine_all(keys.iter().map(|k| k.verdict));
    let ops = keys.iter().map(|k| k.ops).sum();
    let reason = overall_reason(verdict, kind, &keys, explanation.as_ref(), opts);
    LinearizabilityResult {
        verdict,
        reason,
        model: kind,
        ops,
        elapsed_ms: started.elapsed().as_millis() as u64,
        keys,
        explanation,
    }
}

/// Failing keys named in the check's one-line reason (the per-key table lists them all).
const FAILING_KEYS_NAMED_MAX: usize = 8;

/// Failing keys explained by default ([`CheckOptions::explained_keys_max`]): 200 explanations would add some
/// 1.3 MiB to results.json, 2,000 some 13 MiB; past a few dozen a reader wants the pattern, not every key.
pub const EXPLAINED_KEYS_MAX: usize = 50;

/// Where a reason naming several failing keys sends the reader for the ones it does not explain.
const EXPLAIN_EVERY_KEY: &str = "`faultline check --explain-keys all`";

/// Histories with fewer operations than this are checked on one thread unless `parallelism` asks otherwise.
const SMALL_HISTORY_OPS: usize = 4096;

/// Steps a key gets before it yields to the next; it doubles each time the key comes round again.
const FIRST_SLICE_STEPS: u64 = 1 << 16;

/// Checks partitions on worker threads, every one to its answer unless a budget runs out.
///
/// Each worker takes keys from a shared queue and gives each a slice of search steps; a key that needs more waits
/// at the back of the worker's own queue with a doubled slice. So easy keys finish first and one hard (possibly
/// exponential) key cannot hide an illegal key that would have answered the whole check in milliseconds.
fn run_partitions<M: Model>(partitions: &[Partition<M>], deadline: Instant, opts: &CheckOptions) -> Vec<KeyOutcome> {
    let memory_used = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let limits = Limits {
        deadline,
        memory_budget_bytes: opts.memory_budget_bytes,
        memory_used_bytes: &memory_used,
        stop: &stop,
    };
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<KeyOutcome>>> = partitions.iter().map(|_| Mutex::new(None)).collect();
    // Below a few thousand operations, starting threads costs more than it saves.
    let total_ops: usize = partitions.iter().map(|p| p.ops.len()).sum();
    let wanted = match opts.parallelism {
        0 if total_ops < SMALL_HISTORY_OPS => 1,
        0 => cores(),
        n => n,
    };
    let workers = wanted.min(partitions.len()).max(1);
    let work = || worker(partitions, &next, &limits, &results);
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(work);
            }
        });
    }
    results
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .expect("no worker panics while holding a result slot")
                .expect("every partition is visited by a worker")
        })
        .collect()
}

fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A key's search waiting for its next slice.
struct Paused<'a, M: Model> {
    partition: usize,
    search: Search<'a, M>,
    slice_steps: u64,
    spent: Duration,
}

fn worker<'a, M: Model>(
    partitions: &'a [Partition<M>],
    next: &AtomicUsize,
    limits: &Limits<'a>,
    results: &[Mutex<Option<KeyOutcome>>],
) {
    let mut paused: VecDeque<Paused<'a, M>> = VecDeque::new();
    loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let mut task = match partitions.get(index) {
            Some(partition) => {
                let stopped = if limits.stop.load(Ordering::Relaxed) {
                    Some(StopReason::MemoryBudget)
                } else if Instant::now() >= limits.deadline {
                    Some(StopReason::Timeout)
                } else {
                    None
                };
                if let Some(reason) = stopped {
                    let outcome = Outcome::Stopped(reason);
                    record(
                        results,
                        index,
                        partition,
                        outcome,
                        SearchStats::default(),
                        Duration::ZERO,
                    );
                    continue;
                }
                Paused {
                    partition: index,
                    search: Search::new(&partition.model, &partition.ops, limits),
                    slice_steps: FIRST_SLICE_STEPS,
                    spent: Duration::ZERO,
                }
            }
            None => match paused.pop_front() {
                Some(task) => task,
                None => break,
            },
        };
        let started = Instant::now();
        let outcome = task.search.run(limits, task.slice_steps);
        task.spent += started.elapsed();
        match outcome {
            Some(outcome) => {
                let partition = &partitions[task.partition];
                record(
                    results,
                    task.partition,
                    partition,
                    outcome,
                    task.search.stats(),
                    task.spent,
                );
            }
            None => {
                task.slice_steps = task.slice_steps.saturating_mul(2);
                paused.push_back(task);
            }
        }
    }
}

fn record<M: Model>(
    results: &[Mutex<Option<KeyOutcome>>],
    index: usize,
    partition: &Partition<M>,
    outcome: Outcome,
    stats: SearchStats,
    spent: Duration,
) {
    let (verdict, stopped, longest) = match outcome {
        Outcome::Linearizable => (Verdict::Valid, None, None),
        Outcome::Illegal { longest } => (Verdict::Invalid, None, Some(longest)),
        Outcome::Stopped(reason) => (Verdict::Unknown, Some(reason), None),
    };
    let outcome = KeyOutcome {
        summary: KeySummary {
            key: partition.key.clone(),
            ops: partition.ops.len() as u64,
            verdict,
            stopped,
            elapsed_ms: spent.as_millis() as u64,
            cache_entries: stats.cache_entries,
            explanation: None,
        },
        longest,
    };
    *results[index]
        .lock()
        .expect("no worker panics while holding a result slot") = Some(outcome);
}

/// How a sentence names a key: `key "x"`, or for a history without keys (one register, one mutex) its one object.
pub fn key_subject(key: &str) -> String {
    if key.is_empty() {
        "the one object (the history names no key)".to_string()
    } else {
        format!("key {key:?}")
    }
}

fn overall_reason(
    verdict: Verdict,
    kind: ModelKind,
    keys: &[KeySummary],
    explanation: Option<&Explanation>,
    opts: &CheckOptions,
) -> String {
    let ops: u64 = keys.iter().map(|k| k.ops).sum();
    match verdict {
        Verdict::Valid => match keys {
            [only] if only.key.is_empty() => {
                format!("all {ops} operations on the one object (the history names no key) are linearizable under the {kind} model")
            }
            _ => format!(
                "all {ops} operations on {} key(s) are linearizable under the {kind} model",
                keys.len()
            ),
        },
        Verdict::Invalid => {
            let failing: Vec<&str> = keys
                .iter()
                .filter(|k| k.verdict == Verdict::Invalid)
                .map(|k| k.key.as_str())
                .collect();
            let first = match explanation {
                Some(e) => format!(
                    "{} is not linearizable under the {kind} model: {} cannot be placed in any legal order",
                    key_subject(&e.key),
                    e.op.description
                ),
                None => format!("a key is not linearizable under the {kind} model"),
            };
            match failing.len() {
                0 | 1 => first,
                n => {
                    let shown: Vec<String> = failing
                        .iter()
                        .take(FAILING_KEYS_NAMED_MAX)
                        .map(|k| format!("{k:?}"))
                        .collect();
                    let more = if n > FAILING_KEYS_NAMED_MAX {
                        format!(" and {} more", n - FAILING_KEYS_NAMED_MAX)
                    } else {
                        String::new()
                    };
                    let explained = keys.iter().filter(|k| k.explanation.is_some()).count();
                    let where_explained = if explained < n {
                        format!(
                            "the first {explained} failing keys are explained in the report, and each by \
                             {EXPLAIN_EVERY_KEY}"
                        )
                    } else {
                        format!("each failing key is explained in the report and by {EXPLAIN_EVERY_KEY}")
                    };
                    format!(
                        "{n} keys are not linearizable ({}{more}); {first}; {where_explained}",
                        shown.join(", ")
                    )
                }
            }
        }
        Verdict::Unknown => {
            let stopped = |r: StopReason| keys.iter().filter(|k| k.stopped == Some(r)).count();
            let (timeouts, memory) = (stopped(StopReason::Timeout), stopped(StopReason::MemoryBudget));
            if memory > 0 {
                format!(
                    "the search outgrew the memory budget of {} MiB on {memory} key(s) before reaching an answer",
                    opts.memory_budget_bytes >> 20
                )
            } else if timeouts > 0 {
                format!(
                    "the search ran out of its {:?} time budget on {timeouts} key(s) before reaching an answer",
                    opts.timeout
                )
            } else {
                "the search stopped before reaching an answer".to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, EventKind};
    use serde_json::{json, Value};

    fn ev(kind: EventKind, process: u64, f: &str, key: &str, value: Value) -> Event {
        Event {
            index: 0,
            time_ns: 0,
            kind,
            process: Some(process),
            worker: Some(process),
            node: None,
            f: f.into(),
            key: Some(key.into()),
            value,
            error: None,
        }
    }

    fn history(mut events: Vec<Event>) -> History {
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        History {
            events,
            truncated_tail: false,
        }
    }

    /// A history without keys (one register, one mutex) names its one object, not `Key ""`.
    #[test]
    fn given_a_history_without_keys_when_explained_should_name_its_one_object_not_an_empty_key() {
        use EventKind::*;
        let events = |read: Value| {
            let mut events = vec![
                ev(Invoke, 0, "write", "", json!("a")),
                ev(Ok, 0, "write", "", json!("a")),
                ev(Invoke, 1, "read", "", Value::Null),
                ev(Ok, 1, "read", "", read),
            ];
            for e in &mut events {
                e.key = None;
            }
            history(events)
        };
        let stale = check_history(&events(Value::Null), ModelKind::CasRegister, &CheckOptions::default());
        assert_eq!(stale.verdict, Verdict::Invalid);
        assert!(
            stale
                .reason
                .starts_with("the one object (the history names no key) is not linearizable"),
            "{}",
            stale.reason
        );
        let text = render_text(&stale);
        assert!(!text.contains("Key \"\""), "{text}");
        assert!(
            text.contains("The one object (the history names no key): no order"),
            "{text}"
        );
        let fine = check_history(&events(json!("a")), ModelKind::CasRegister, &CheckOptions::default());
        assert_eq!(
            fine.reason,
            "all 2 operations on the one object (the history names no key) are linearizable under the cas-register model"
        );
    }

    #[test]
    fn given_stale_read_when_checked_should_be_invalid_with_explanation_naming_key_op_and_state() {
        use EventKind::*;
        let h = history(vec![
            ev(Invoke, 0, "write", "k1", json!("a")),
            ev(Ok, 0, "write", "k1", json!("a")),
            ev(Invoke, 1, "read", "k1", Value::Null),
            ev(Ok, 1, "read", "k1", Value::Null),
            ev(Invoke, 2, "write", "k2", json!("b")),
        ]);
        let result = check_history(&h, ModelKind::CasRegister, &CheckOptions::default());
        assert_eq!(result.verdict, Verdict::Invalid);
        let e = result.explanation.as_ref().expect("an explanation");
        assert_eq!(e.key, "k1");
        assert_eq!(e.op.description, "read() -> nil");
        assert_eq!(e.state, "\"a\"");
        assert!(!e.op_legal_in_state);
        assert!(render_text(&result).contains("Key \"k1\""), "{}", render_text(&result));
        let json = serde_json::to_value(&result).expect("serializable");
        assert_eq!(json["verdict"], "invalid");
        assert_eq!(json["keys"][0]["verdict"], "invalid");
    }

    #[test]
    fn given_two_failing_keys_and_a_good_one_when_checked_should_report_both_failures_and_the_good_key() {
        use EventKind::*;
        let stale_read = |process: u64, key: &str| {
            vec![
                ev(Invoke, process, "write", key, json!("a")),
                ev(Ok, process, "write", key, json!("a")),
                ev(Invoke, process + 1, "read", key, Value::Null),
                ev(Ok, process + 1, "read", key, Value::Null),
            ]
        };
        let mut events = stale_read(0, "k1");
        events.extend([
            ev(Invoke, 4, "write", "k2", json!("b")),
            ev(Ok, 4, "write", "k2", json!("b")),
        ]);
        events.extend(stale_read(2, "k3"));
        let result = check_history(&history(events), ModelKind::CasRegister, &CheckOptions::default());
        assert_eq!(result.verdict, Verdict::Invalid);
        let verdict_of = |key: &str| {
            result
                .keys
                .iter()
                .find(|k| k.key == key)
                .map(|k| (k.verdict, k.stopped))
        };
        assert_eq!(verdict_of("k1"), Some((Verdict::Invalid, None)));
        assert_eq!(
            verdict_of("k2"),
            Some((Verdict::Valid, None)),
            "a failing key cancels nothing"
        );
        assert_eq!(verdict_of("k3"), Some((Verdict::Invalid, None)));
        assert!(
            result
                .reason
                .starts_with("2 keys are not linearizable (\"k1\", \"k3\")"),
            "{}",
            result.reason
        );
    }

    /// Key "k1" reads nothing after a write; key "k2" applies a cas from a value it never held; key "k3" is fine.
    fn two_keys_failing_two_ways() -> History {
        use EventKind::*;
        history(vec![
            ev(Invoke, 0, "write", "k1", json!("a")),
            ev(Ok, 0, "write", "k1", json!("a")),
            ev(Invoke, 1, "read", "k1", Value::Null),
            ev(Ok, 1, "read", "k1", Value::Null),
            ev(Invoke, 2, "write", "k2", json!("x")),
            ev(Ok, 2, "write", "k2", json!("x")),
            ev(Invoke, 3, "cas", "k2", json!(["y", "z"])),
            ev(Ok, 3, "cas", "k2", json!(["y", "z"])),
            ev(Invoke, 4, "write", "k3", json!("b")),
            ev(Ok, 4, "write", "k3", json!("b")),
        ])
    }

    #[test]
    fn given_two_keys_failing_in_different_ways_when_checked_should_explain_each_naming_its_own_operation() {
        let result = check_history(
            &two_keys_failing_two_ways(),
            ModelKind::CasRegister,
            &CheckOptions::default(),
        );
        assert_eq!(result.verdict, Verdict::Invalid);
        let explained = |key: &str| {
            result
                .keys
                .iter()
                .find(|k| k.key == key)
                .and_then(|k| k.explanation.as_ref())
        };
        let k1 = explained("k1").expect("k1 is explained");
        let k2 = explained("k2").expect("k2 is explained, not only the first failing key");
        assert!(explained("k3").is_none(), "a linearizable key has nothing to explain");
        assert_eq!((k1.key.as_str(), k1.op.description.as_str()), ("k1", "read() -> nil"));
        assert_eq!(
            (k2.key.as_str(), k2.op.description.as_str(), k2.state.as_str()),
            ("k2", "cas(\"y\", \"z\") -> ok", "\"x\"")
        );
        assert!(k2.lines[0].starts_with("Key \"k2\""), "{:?}", k2.lines);
        assert!(k2.headline().contains("cas(\"y\", \"z\") -> ok"), "{}", k2.headline());
        assert_eq!(
            result.explanation.as_ref(),
            Some(k1),
            "the first stays where old readers look"
        );
        assert!(
            result
                .reason
                .ends_with("; each failing key is explained in the report and by `faultline check --explain-keys all`"),
            "{}",
            result.reason
        );
    }

    #[test]
    fn given_one_failing_key_when_checked_should_not_send_the_reader_to_the_other_explanations() {
        use EventKind::*;
        let h = history(vec![
            ev(Invoke, 0, "write", "k1", json!("a")),
            ev(Ok, 0, "write", "k1", json!("a")),
            ev(Invoke, 1, "read", "k1", Value::Null),
            ev(Ok, 1, "read", "k1", Value::Null),
        ]);
        let result = check_history(&h, ModelKind::CasRegister, &CheckOptions::default());
        assert!(!result.reason.contains("--explain-keys"), "{}", result.reason);
        assert!(
            !render_text(&result).contains("other failing key"),
            "{}",
            render_text(&result)
        );
    }

    #[test]
    fn given_two_failing_keys_when_rendered_should_explain_the_first_and_list_the_second_by_its_headline() {
        let result = check_history(
            &two_keys_failing_two_ways(),
            ModelKind::CasRegister,
            &CheckOptions::default(),
        );
        let text = render_text(&result);
        assert!(text.contains("\n  Key \"k1\": no order"), "{text}");
        assert!(
            !text.contains("\n  Key \"k2\": no order"),
            "only the first in full: {text}"
        );
        assert!(
            text.contains("\n  1 other failing key(s)")
                && text.contains(
                    "\n    Key \"k2\": cas(\"y\", \"z\") -> ok (process 3, history events 6..7) cannot be placed"
                ),
            "{text}"
        );
    }

    #[test]
    fn given_keys_asked_for_when_rendered_should_explain_each_and_name_the_failing_keys_for_the_others() {
        let result = check_history(
            &two_keys_failing_two_ways(),
            ModelKind::CasRegister,
            &CheckOptions::default(),
        );
        let words = |w: &[&str]| ExplainKeys::from_words(&w.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let all = render_text_explaining(&result, &words(&["all"]));
        assert!(
            all.contains("\n  Key \"k1\": no order") && all.contains("\n  Key \"k2\": no order"),
            "{all}"
        );
        assert!(!all.contains("other failing key"), "{all}");
        let asked = render_text_explaining(&result, &words(&["k2", "k3", "nope", "k2"]));
        assert!(asked.contains("\n  Key \"k2\": no order"), "{asked}");
        assert_eq!(
            asked.matches("Key \"k2\": no order").count(),
            1,
            "each key once: {asked}"
        );
        assert!(!asked.contains("Key \"k1\": no order"), "{asked}");
        assert!(
            asked.contains(
                "--explain-keys: key \"k3\" is linearizable, so there is nothing to explain; the failing keys are \"k1\", \"k2\"."
            ),
            "{asked}"
        );
        assert!(
            asked.contains(
                "--explain-keys: the history has no operation on key \"nope\"; the failing keys are \"k1\", \"k2\"."
            ),
            "{asked}"
        );
        assert!(
            asked.contains("\n    Key \"k1\": read() -> nil"),
            "the unasked failing key is listed: {asked}"
        );
    }

    /// A result written before every failing key was explained: its keys carry no explanation, only the result does.
    #[test]
    fn given_a_results_json_from_before_per_key_explanations_when_read_should_load_and_render_its_one_explanation() {
        let result = check_history(
            &two_keys_failing_two_ways(),
            ModelKind::CasRegister,
            &CheckOptions::default(),
        );
        let mut old = serde_json::to_value(&result).expect("serializable");
        for key in old["keys"].as_array_mut().expect("keys") {
            key.as_object_mut().expect("a key object").remove("explanation");
        }
        let old: LinearizabilityResult = serde_json::from_value(old).expect("an old file still loads");
        assert!(old.keys.iter().all(|k| k.explanation.is_none()));
        let text = render_text(&old);
        assert!(text.contains("\n  Key \"k1\": no order"), "{text}");
        let fine = serde_json::to_value(&old.keys[2]).expect("serializable");
        assert!(
            fine.get("explanation").is_none(),
            "no explanation field on a key without one: {fine}"
        );
    }

    #[test]
    fn given_many_failing_keys_when_checked_should_explain_a_bounded_number_and_say_how_many() {
        use EventKind::*;
        let mut events = Vec::new();
        for k in 0..200u64 {
            let key = format!("k{k:03}");
            events.extend([
                ev(Invoke, 2 * k, "write", &key, json!("a")),
                ev(Ok, 2 * k, "write", &key, json!("a")),
                ev(Invoke, 2 * k + 1, "read", &key, Value::Null),
                ev(Ok, 2 * k + 1, "read", &key, Value::Null),
            ]);
        }
        let h = history(events);
        let result = check_history(&h, ModelKind::CasRegister, &CheckOptions::default());
        let explained: Vec<&str> = result
            .keys
            .iter()
            .filter(|k| k.explanation.is_some())
            .map(|k| k.key.as_str())
            .collect();
        assert_eq!(explained.len(), EXPLAINED_KEYS_MAX);
        assert_eq!(
            (explained[0], explained[49]),
            ("k000", "k049"),
            "the first ones in key order"
        );
        assert!(
            result.reason.ends_with(
                "; the first 50 failing keys are explained in the report, and each by `faultline check --explain-keys all`"
            ),
            "{}",
            result.reason
        );
        let text = render_text(&result);
        assert!(text.contains("\n  199 other failing key(s)"), "{text}");
        assert_eq!(text.matches("\n    Key \"k").count(), 20, "{text}");
        assert!(text.contains("\n    ... and 179 more\n"), "{text}");
        let asked = render_text_explaining(&result, &ExplainKeys::Named(vec!["k150".into()]));
        assert!(
            asked.contains("key \"k150\" is not linearizable, but this result explains only the first 50 failing keys"),
            "{asked}"
        );
        let every = CheckOptions {
            explained_keys_max: usize::MAX,
            ..CheckOptions::default()
        };
        let result = check_history(&h, ModelKind::CasRegister, &every);
        assert!(result.keys.iter().all(|k| k.explanation.is_some()));
        assert!(
            result
                .reason
                .ends_with("; each failing key is explained in the report and by `faultline check --explain-keys all`"),
            "{}",
            result.reason
        );
        let all = render_text_explaining(&result, &ExplainKeys::All);
        assert_eq!(all.matches(": no order of its 2 operations").count(), 200);
    }

    #[test]
    fn given_invoke_without_completion_when_checked_should_treat_it_as_info() {
        use EventKind::*;
        let h = history(vec![
            ev(Invoke, 0, "write", "k", json!("a")),
            ev(Invoke, 1, "read", "k", Value::Null),
            ev(Ok, 1, "read", "k", json!("a")),
            ev(Invoke, 2, "read", "k", Value::Null),
            ev(Ok, 2, "read", "k", json!("a")),
        ]);
        let result = check_history(&h, ModelKind::CasRegister, &CheckOptions::default());
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
    }

    #[test]
    fn given_many_concurrent_info_writes_when_budget_is_tiny_should_be_unknown_with_reason() {
        use EventKind::*;
        let mut events = Vec::new();
        for p in 0..30 {
            events.push(ev(Invoke, p, "write", "k", json!(format!("v{p}"))));
        }
        for n in 0..30u64 {
            events.push(ev(Invoke, 100, "read", "k", Value::Null));
            events.push(ev(Ok, 100, "read", "k", json!(format!("v{}", n % 3))));
        }
        let opts = CheckOptions {
            timeout: Duration::from_millis(300),
            ..CheckOptions::default()
        };
        let started = Instant::now();
        let result = check_history(&history(events), ModelKind::CasRegister, &opts);
        assert_eq!(result.verdict, Verdict::Unknown);
        assert!(started.elapsed() < Duration::from_secs(5), "stopped near its budget");
        assert!(result.reason.contains("budget"), "{}", result.reason);
    }

    #[test]
    fn given_operation_the_model_does_not_know_when_checked_should_be_unknown_naming_the_event() {
        use EventKind::*;
        let h = history(vec![ev(Invoke, 0, "frobnicate", "k", Value::Null)]);
        let result = check_history(&h, ModelKind::CasRegister, &CheckOptions::default());
        assert_eq!(result.verdict, Verdict::Unknown);
        assert!(result.reason.contains("history event 0"), "{}", result.reason);
    }
}
