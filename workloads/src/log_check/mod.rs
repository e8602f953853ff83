//! The log checker: were a log workload's acknowledged messages kept, exactly once, in one order every reader agrees
//! on, and seen by every read that began after they were acknowledged?
//!
//! Streaming systems (Kafka, Iggy, NATS JetStream, the reference node's `/log`) are logs, not registers, and a full
//! linearizability search over a million appends is out of reach. Like Jepsen's queue and Kafka checkers, this one
//! instead records every *claim* a history makes about a log (an acknowledgement says "payload P is at offset O", a
//! read says "these payloads are at these offsets, nothing else is in between, and the log ends at E") and reports
//! the claims that contradict each other. Each step is a hash lookup per claim, so the cost is linear in the number
//! of operations and returned entries (plus a sort of the acknowledgements); see `benches/log_check.rs`.
//!
//! # History shape
//!
//! Client events with `f` `append` or `read`; `key` is the log's name; `process` pairs an invocation with its
//! completion as everywhere in faultline (see [`crate::history`]). Other client functions are ignored.
//!
//! ```text
//! {"kind":"invoke","process":3,"worker":1,"f":"append","key":"orders","value":"p-3-17"}
//! {"kind":"ok",    "process":3,"worker":1,"f":"append","key":"orders","value":{"offset":42}}
//! {"kind":"fail",  "process":3,"worker":1,"f":"append","key":"orders","error":"421 not primary"}
//! {"kind":"info",  "process":3,"worker":1,"f":"append","key":"orders","error":"timeout after 5000 ms"}
//! {"kind":"invoke","process":7,"worker":4,"f":"read","key":"orders","value":{"from":40,"limit":100}}
//! {"kind":"ok",    "process":7,"worker":4,"f":"read","key":"orders",
//!                  "value":{"from":40,"entries":[[40,"p-2-9"],[41,"p-5-3"],[42,"p-3-17"]],"end":43}}
//! {"kind":"fail"|"info", "process":7, ..., "f":"read", ...}
//! ```
//! (`index`, `time_ns` and `node` as on every event.)
//!
//! - **append**: the invocation's `value` is the payload, unique per log (any JSON but `null`; the workload uses
//!   strings). An `ok` completion's `value` is `{"offset": N}`, the node's reply as is (a bare integer is accepted
//!   too, as in [`crate::models::append_log`]). `fail` means the payload was definitely not appended; `info` (or no
//!   completion) means unknown: the payload may appear once, or never.
//! - **read**: the invocation's `value` is `{"from": F, "limit": L}`. An `ok` completion's `value` is
//!   `{"from": F, "entries": [[offset, payload], ...], "end": E}`: the entries the node returned, with their offsets
//!   as the node stated them, and `E` the log's end offset (its length) when the read ran. The checker does not use
//!   `limit`: a read that returned fewer entries than it could have claims nothing about the offsets it did not reach.
//!   `fail` and `info` reads claim nothing.
//! - A read's **`process` is a consumer identity**: the reads of one process are one consumer's, in order, and the
//!   monotonicity check compares each with the previous one. A consumer reads forward from where its last read ended
//!   and may start again from 0; a process retired after an `info` simply ends that consumer.
//! - **Final reads** are ordinary reads (the workload reads every log from 0 after the restart of all nodes). A read
//!   is *final* for its log when it was invoked after the log's last append event (invocation or completion): no
//!   append could still be on its way, so an acknowledged payload it lacks is lost, not merely not yet visible. Final
//!   reads must therefore be taken once the cluster has converged.
//!
//! # Checks
//!
//! Every anomaly names the log, offsets, payloads and operations (history indices) involved and says why in one
//! sentence; at most [`MAX_ANOMALIES_PER_KIND`] are kept per kind, all are counted.
//!
//! - **lost**: an acknowledged payload that a read which began after the acknowledgement shows elsewhere (another
//!   payload at its offset, or no entry there while the read returned later offsets), that reads show only at other
//!   offsets than the acknowledged one, or that is beyond the end of a final read.
//! - **duplicated**: one payload at two offsets, in one read, or in reads that otherwise agree on those offsets (when
//!   they disagree, it is reordering and reported as inconsistent).
//! - **inconsistent**: two reads disagree on what sits at an offset (a payload, another payload or no entry); a read
//!   that began before an acknowledgement shows something else at the acknowledged offset; two appends were
//!   acknowledged the same offset; or one read contradicts itself (offsets out of order, below `from` or at or past
//!   `end`).
//! - **non-monotonic**: a consumer re-read an offset and got a different payload than its previous read; with
//!   linearizable reads also a consumer's log end going backwards. Without linearizable reads a consumer may be served
//!   by a lagging replica, so only the data it re-reads must agree.
//! - **stale** (only with [`LogCheckOptions::linearizable_reads`]): a read that began after an append was
//!   acknowledged at offset O reports an end at or before O. A read that skips O but returns later offsets is *lost*.
//! - **phantom**: a payload no append on that log invoked, whose append failed, or that a read returned before its
//!   append was invoked.
//!
//! Judging against the system's promise ([`Durability`]): when acknowledged appends are only in a quorum's memory,
//! losing them after a majority loses power is allowed, and so is everything such a loss implies (later reads
//! disagreeing with earlier ones, stale reads, a consumer's log going backwards). Those anomalies are then warnings
//! and the verdict is `unknown` at worst; duplicates, phantoms and self-contradicting reads stay errors.

mod findings;
mod offsets;
mod parse;
mod timing;

use crate::history::History;
use crate::models::show_value;
use crate::verdict::Verdict;
use findings::Findings;
use parse::{LogOps, GAP, NONE};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

/// Anomalies kept in the result per kind; the rest are only counted.
pub const MAX_ANOMALIES_PER_KIND: usize = 100;

/// What an acknowledgement promises about durability, as the plan states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Acknowledged = on a quorum's disk: no fault the plan injects may lose it.
    #[default]
    QuorumDisk,
    /// Acknowledged = in a quorum's memory only: losing it after a majority loses power is allowed (a warning).
    QuorumMemory,
}

/// What the system promises, which decides what counts as an anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCheckOptions {
    /// Reads are linearizable: a read sees every append acknowledged before it began (enables the stale-read check).
    pub linearizable_reads: bool,
    /// How durable an acknowledged append is.
    pub durability: Durability,
}

impl Default for LogCheckOptions {
    /// The strictest promise: linearizable reads, acknowledged on a quorum's disk.
    fn default() -> Self {
        LogCheckOptions {
            linearizable_reads: true,
            durability: Durability::QuorumDisk,
        }
    }
}

/// The kinds of log anomaly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    /// An acknowledged append is missing, or not at its acknowledged offset.
    Lost,
    /// One payload at two offsets.
    Duplicated,
    /// Reads (or a read and an acknowledgement) disagree on what sits at an offset, or one read contradicts itself.
    Inconsistent,
    /// A consumer re-read different data, or saw the log end go backwards.
    NonMonotonic,
    /// A read missed an append acknowledged before it began.
    Stale,
    /// A payload that was never (successfully) appended.
    Phantom,
}

/// How bad an anomaly is under the system's promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Breaks the promise: the verdict is invalid.
    Error,
    /// Allowed by the promise (memory-only durability after a power loss): the verdict is unknown at worst.
    Warning,
}

/// One client operation an anomaly involves, by its history indices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRef {
    /// `append` or `read`.
    pub f: String,
    /// The process (for reads: the consumer) that ran it.
    pub process: u64,
    /// History index of the invocation.
    pub invoke_index: u64,
    /// History index of the completion, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_index: Option<u64>,
}

/// One anomaly: what, where, which payloads and operations, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// Which check found it.
    pub kind: AnomalyKind,
    /// Error (breaks the promise) or warning (allowed by it).
    pub severity: Severity,
    /// The log (the history's `key`).
    pub log: String,
    /// The offsets involved.
    pub offsets: Vec<u64>,
    /// The payloads involved; `null` stands for "no entry" at an offset.
    pub payloads: Vec<Value>,
    /// The operations involved.
    pub ops: Vec<OpRef>,
    /// One sentence saying what is wrong.
    pub reason: String,
}

/// Counts over the checked history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogCheckStats {
    /// Logs (distinct keys) with at least one append or read.
    pub logs: u64,
    /// Appends invoked.
    pub appends: u64,
    /// Appends acknowledged (`ok`).
    pub appends_ok: u64,
    /// Appends that definitely did not happen (`fail`).
    pub appends_failed: u64,
    /// Appends with unknown outcome (`info`, or no completion).
    pub appends_unknown: u64,
    /// Reads that returned entries (`ok`).
    pub reads_ok: u64,
    /// Reads that failed or whose outcome is unknown (they claim nothing).
    pub reads_not_ok: u64,
    /// Entries returned over all reads.
    pub entries_read: u64,
    /// Reads invoked after their log's last append event.
    pub final_reads: u64,
    /// Acknowledged appends that no read returned (neither confirmed nor refuted).
    pub acked_unseen: u64,
    /// Client operations with another `f` than append or read.
    pub ignored_ops: u64,
    /// Offsets inside read gaps left unchecked because the gap budget ran out (only in malformed histories).
    pub gap_offsets_unchecked: u64,
    /// Wall-clock time of the check.
    pub elapsed_ms: u64,
}

/// The outcome of the log check: what goes into `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogCheckResult {
    /// Invalid if any anomaly is an error, else unknown if any is a warning (or the history is unreadable), else valid.
    pub verdict: Verdict,
    /// One sentence saying why.
    pub reason: String,
    /// The promise the history was judged against.
    pub options: LogCheckOptions,
    /// Anomalies in the order found, at most [`MAX_ANOMALIES_PER_KIND`] per kind.
    pub anomalies: Vec<Anomaly>,
    /// How many anomalies of each kind were found, including those not kept.
    pub counts: BTreeMap<AnomalyKind, u64>,
    /// Counts over the history.
    pub stats: LogCheckStats,
}

/// Checks a log workload's history for lost, duplicated, inconsistent, non-monotonic, stale and phantom entries.
///
/// Never panics on bad input: a history that does not have the documented shape gives `unknown` with a reason that
/// names the event. Nemesis, lifecycle and meta events are ignored.
pub fn check_log(history: &History, options: &LogCheckOptions) -> LogCheckResult {
    let started = Instant::now();
    let parsed = match parse::parse(history) {
        Ok(parsed) => parsed,
        Err(message) => {
            return LogCheckResult {
                verdict: Verdict::Unknown,
                reason: format!("the history cannot be checked as a log workload: {message}"),
                options: *options,
                anomalies: Vec::new(),
                counts: BTreeMap::new(),
                stats: LogCheckStats {
                    elapsed_ms: started.elapsed().as_millis() as u64,
                    ..LogCheckStats::default()
                },
            }
        }
    };
    let mut findings = Findings::new(options.durability);
    let mut stats = parse::stats(&parsed);
    for log in &parsed.logs {
        let ctx = LogCtx { history, log, options };
        let mut lost = vec![false; log.appends.len()];
        let offsets = offsets::check(&ctx, &mut findings, &mut lost);
        stats.acked_unseen += offsets.acked_unseen;
        stats.gap_offsets_unchecked += offsets.gap_offsets_unchecked;
        stats.final_reads += timing::check_final_reads(&ctx, &mut findings, &mut lost);
        if options.linearizable_reads {
            timing::check_stale_reads(&ctx, &mut findings, &lost);
        }
        timing::check_consumers(&ctx, &mut findings);
    }
    stats.elapsed_ms = started.elapsed().as_millis() as u64;
    let (verdict, reason) = findings.verdict(&stats);
    LogCheckResult {
        verdict,
        reason,
        options: *options,
        anomalies: findings.anomalies,
        counts: findings.counts,
        stats,
    }
}

/// One log's operations with the history they came from, and the helpers that describe them in anomalies.
struct LogCtx<'a, 'h> {
    history: &'h History,
    log: &'a LogOps<'h>,
    options: &'a LogCheckOptions,
}

impl LogCtx<'_, '_> {
    fn op_ref(&self, f: &str, process: u64, invoke_pos: usize, complete_pos: Option<usize>) -> OpRef {
        OpRef {
            f: f.to_string(),
            process,
            invoke_index: self.history.events[invoke_pos].index,
            completion_index: complete_pos.map(|p| self.history.events[p].index),
        }
    }

    fn read_ref(&self, read: u32) -> OpRef {
        let r = &self.log.reads[read as usize];
        self.op_ref("read", r.process, r.invoke_pos, Some(r.complete_pos))
    }

    fn append_ref(&self, append: u32) -> OpRef {
        let a = &self.log.appends[append as usize];
        self.op_ref("append", a.process, a.invoke_pos, a.complete_pos)
    }

    /// The history index of a read's invocation, for reasons.
    fn read_index(&self, read: u32) -> u64 {
        self.history.events[self.log.reads[read as usize].invoke_pos].index
    }

    /// The history index of an append's invocation, for reasons.
    fn append_index(&self, append: u32) -> u64 {
        self.history.events[self.log.appends[append as usize].invoke_pos].index
    }

    /// A payload (or the "no entry" claim, as `null`) as JSON.
    fn payload(&self, id: u32) -> Value {
        match id {
            GAP | NONE => Value::Null,
            id => self.log.payloads[id as usize].clone(),
        }
    }

    /// A payload (or the "no entry" claim) for a sentence.
    fn show(&self, id: u32) -> String {
        match id {
            GAP | NONE => "no entry".to_string(),
            id => show_value(self.log.payloads[id as usize]),
        }
    }
}
