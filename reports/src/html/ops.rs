//! Client operations as the page draws them: invocations paired with their completions, one lane per worker, and
//! packed into compact columns (varints in base64), so a 1,000,000-op history embeds in about 10 MB.
//!
//! Columns, each a base64 string of unsigned LEB128 varints (or raw bytes where noted), ops grouped by lane (lanes in
//! `lanes` order, `lane_counts[i]` ops each) and sorted by invocation time within a lane:
//! - `start`: microseconds since the previous op's start in the same lane (the first: since the run started);
//! - `dur`: microseconds from invocation to completion (0 for ops that never completed);
//! - `code` (bytes): `outcome | f << 2`, outcome 0 ok, 1 fail, 2 info, 3 open (never completed); `f` indexes `fs`;
//! - `key`: index into `keys` plus one (0: no key);
//! - `proc`: zigzag delta of the process id from the previous op in the lane;
//! - `node` (bytes): index into `nodes` plus one (0: none), the node the op was sent to;
//! - `idx`: zigzag delta of the history index of the invocation from the previous op in the lane;
//! - `err`: index into `errors` plus one (0: no error text).

use faultline_workloads::history::{EventKind, History};
use serde::Serialize;
use std::collections::HashMap;

/// Distinct error texts kept for hovering; later ones show as "(error text not embedded)".
const ERRORS_MAX: usize = 2000;
/// Error texts are cut to this many characters.
const ERROR_CHARS_MAX: usize = 200;
/// `f` names that fit the 6 bits of the `code` column; the last slot means "other".
const FS_MAX: usize = 63;
/// The final phase's lane: the harness runs its probes and final reads as worker `u64::MAX`.
pub const FINAL_PHASE_WORKER: u64 = u64::MAX;

/// How a client operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Took effect.
    Ok = 0,
    /// Definitely did not take effect.
    Fail = 1,
    /// Unknown.
    Info = 2,
    /// Never completed: the history ended first.
    Open = 3,
}

/// One client operation: an invocation and its completion.
#[derive(Debug, Clone)]
pub struct Op {
    /// Index into [`OpTable::lanes`].
    pub lane: u32,
    /// Invocation time.
    pub start_ns: u64,
    /// Completion time (none while open).
    pub end_ns: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// Index into [`OpTable::fs`].
    pub f: u8,
    /// Index into [`OpTable::keys`] plus one; 0 for none.
    pub key: u32,
    /// Client process.
    pub process: u64,
    /// Index into [`OpTable::nodes`] plus one; 0 for none.
    pub node: u8,
    /// History index of the invocation.
    pub invoke_index: u64,
    /// Index into [`OpTable::errors`] plus one; 0 for none.
    pub error: u32,
}

/// A lane of the timeline: one worker slot.
#[derive(Debug, Clone, Serialize)]
pub struct Lane {
    /// Label shown left of the lane (`w3`, `final`).
    pub label: String,
}

/// Every client operation of a run with the tables their small integers index into.
#[derive(Debug, Default)]
pub struct OpTable {
    /// Operations, in invocation order.
    pub ops: Vec<Op>,
    /// Lanes, in display order.
    pub lanes: Vec<Lane>,
    /// Operation names.
    pub fs: Vec<String>,
    /// Keys.
    pub keys: Vec<String>,
    /// Node names, as client ops name them.
    pub nodes: Vec<String>,
    /// Distinct error texts.
    pub errors: Vec<String>,
    /// Completions without an open invocation of their process (a malformed history).
    pub orphan_completions: u64,
}

/// Small-integer ids for strings, in order of first appearance, up to a maximum.
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    max: usize,
}

impl Interner {
    fn new(max: usize) -> Interner {
        Interner {
            ids: HashMap::new(),
            names: Vec::new(),
            max,
        }
    }

    /// The id of `name` plus one, or 0 when the table is full.
    fn id_plus_one(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id + 1;
        }
        if self.names.len() >= self.max {
            return 0;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        id + 1
    }
}

impl OpTable {
    /// Pairs each invocation with the next completion of the same process.
    pub fn from_history(history: &History) -> OpTable {
        let mut table = OpTable::default();
        let mut lane_ids: HashMap<u64, u32> = HashMap::new();
        let mut lane_of_op: Vec<u64> = Vec::new();
        let mut open: HashMap<u64, usize> = HashMap::new();
        let (mut fs, mut keys) = (Interner::new(FS_MAX), Interner::new(u32::MAX as usize - 1));
        let (mut nodes, mut errors) = (Interner::new(255), Interner::new(ERRORS_MAX));
        for event in history.client_events() {
            let process = event.process.unwrap_or(u64::MAX);
            if event.kind == EventKind::Invoke {
                let lane_key = event.worker.unwrap_or(process);
                let next = lane_ids.len() as u32;
                let lane = *lane_ids.entry(lane_key).or_insert(next);
                open.insert(process, table.ops.len());
                lane_of_op.push(lane_key);
                table.ops.push(Op {
                    lane,
                    start_ns: event.time_ns,
                    end_ns: None,
                    outcome: Outcome::Open,
                    f: fs.id_plus_one(&event.f).saturating_sub(1).min(FS_MAX as u32) as u8,
                    key: event.key.as_deref().map_or(0, |k| keys.id_plus_one(k)),
                    process,
                    node: event.node.as_deref().map_or(0, |n| nodes.id_plus_one(n)) as u8,
                    invoke_index: event.index,
                    error: 0,
                });
                continue;
            }
            let Some(i) = open.remove(&process) else {
                table.orphan_completions += 1;
                continue;
            };
            let op = &mut table.ops[i];
            op.end_ns = Some(event.time_ns.max(op.start_ns));
            op.outcome = match event.kind {
                EventKind::Ok => Outcome::Ok,
                EventKind::Fail => Outcome::Fail,
                _ => Outcome::Info,
            };
            if let Some(error) = &event.error {
                let cut: String = error.chars().take(ERROR_CHARS_MAX).collect();
                op.error = errors.id_plus_one(&cut);
            }
        }
        if fs.names.len() == FS_MAX {
            fs.names.push("other".into());
        }
        table.assign_lanes(lane_ids, history.events.iter().any(|e| e.worker.is_some()));
        table.fs = fs.names;
        table.keys = keys.names;
        table.nodes = nodes.names;
        table.errors = errors.names;
        table
    }

    /// Orders lanes by worker id (the final phase last) and renumbers ops to match.
    fn assign_lanes(&mut self, lane_ids: HashMap<u64, u32>, by_worker: bool) {
        let mut order: Vec<(u64, u32)> = lane_ids.into_iter().collect();
        order.sort_unstable();
        let mut renumber = vec![0u32; order.len()];
        for (position, &(key, old)) in order.iter().enumerate() {
            renumber[old as usize] = position as u32;
            let label = match key {
                FINAL_PHASE_WORKER => "final".to_string(),
                k if by_worker => format!("w{k}"),
                k => format!("p{k}"),
            };
            self.lanes.push(Lane { label });
        }
        for op in &mut self.ops {
            op.lane = renumber[op.lane as usize];
        }
    }

    /// Latency quantiles of ok operations, in milliseconds: (p50, p99, max); none without ok ops.
    pub fn ok_latency_ms(&self) -> Option<(f64, f64, f64)> {
        let mut latencies: Vec<u64> = self
            .ops
            .iter()
            .filter(|op| op.outcome == Outcome::Ok)
            .filter_map(|op| op.end_ns.map(|end| end - op.start_ns))
            .collect();
        if latencies.is_empty() {
            return None;
        }
        let quantile = |latencies: &mut Vec<u64>, q: f64| {
            let rank = ((latencies.len() - 1) as f64 * q).round() as usize;
            *latencies.select_nth_unstable(rank).1 as f64 / 1e6
        };
        let p50 = quantile(&mut latencies, 0.5);
        let p99 = quantile(&mut latencies, 0.99);
        let max = latencies.iter().copied().max().unwrap_or(0) as f64 / 1e6;
        Some((p50, p99, max))
    }

    /// Packs the ops into the columns described in the module docs.
    pub fn columns(&self) -> Columns {
        let mut by_lane: Vec<Vec<&Op>> = vec![Vec::new(); self.lanes.len()];
        for op in &self.ops {
            by_lane[op.lane as usize].push(op);
        }
        let mut c = ColumnWriter::with_capacity(self.ops.len());
        let mut lane_counts = Vec::with_capacity(by_lane.len());
        for lane in &mut by_lane {
            lane.sort_by_key(|op| op.start_ns);
            lane_counts.push(lane.len() as u64);
            let (mut prev_start_us, mut prev_process, mut prev_index) = (0u64, 0u64, 0u64);
            for op in lane.iter() {
                let start_us = op.start_ns / 1000;
                varint(&mut c.start, start_us - prev_start_us);
                prev_start_us = start_us;
                varint(&mut c.dur, op.end_ns.map_or(0, |end| end / 1000 - start_us));
                c.code.push(op.outcome as u8 | (op.f << 2));
                varint(&mut c.key, u64::from(op.key));
                varint(&mut c.process, zigzag(op.process.wrapping_sub(prev_process) as i64));
                prev_process = op.process;
                c.node.push(op.node);
                varint(&mut c.index, zigzag(op.invoke_index.wrapping_sub(prev_index) as i64));
                prev_index = op.invoke_index;
                varint(&mut c.error, u64::from(op.error));
            }
        }
        Columns {
            n: self.ops.len() as u64,
            lane_counts,
            start: base64(&c.start),
            dur: base64(&c.dur),
            code: base64(&c.code),
            key: base64(&c.key),
            proc_: base64(&c.process),
            node: base64(&c.node),
            idx: base64(&c.index),
            err: base64(&c.error),
        }
    }
}

#[derive(Default)]
struct ColumnWriter {
    start: Vec<u8>,
    dur: Vec<u8>,
    code: Vec<u8>,
    key: Vec<u8>,
    process: Vec<u8>,
    node: Vec<u8>,
    index: Vec<u8>,
    error: Vec<u8>,
}

impl ColumnWriter {
    fn with_capacity(ops: usize) -> ColumnWriter {
        ColumnWriter {
            start: Vec::with_capacity(ops * 3),
            dur: Vec::with_capacity(ops * 3),
            code: Vec::with_capacity(ops),
            key: Vec::with_capacity(ops * 2),
            process: Vec::with_capacity(ops),
            node: Vec::with_capacity(ops),
            index: Vec::with_capacity(ops),
            error: Vec::with_capacity(ops),
        }
    }
}

/// The packed op columns, as embedded in the page (see the module docs).
#[derive(Debug, Serialize)]
pub struct Columns {
    /// Op count.
    pub n: u64,
    /// Ops per lane, in lane order.
    pub lane_counts: Vec<u64>,
    /// Start deltas, µs.
    pub start: String,
    /// Durations, µs.
    pub dur: String,
    /// Outcome and f.
    pub code: String,
    /// Key ids.
    pub key: String,
    /// Process deltas.
    #[serde(rename = "proc")]
    pub proc_: String,
    /// Node ids.
    pub node: String,
    /// History index deltas.
    pub idx: String,
    /// Error ids.
    pub err: String,
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Standard base64 with padding (what the browser's `atob` reads).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    let mut chunks = bytes.chunks_exact(3);
    for chunk in &mut chunks {
        let n = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
        out.extend_from_slice(&[
            ALPHABET[(n >> 18) as usize & 63],
            ALPHABET[(n >> 12) as usize & 63],
            ALPHABET[(n >> 6) as usize & 63],
            ALPHABET[n as usize & 63],
        ]);
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                b'=',
                b'=',
            ]);
        }
        [a, b] => {
            let n = (u32::from(a) << 16) | (u32::from(b) << 8);
            out.extend_from_slice(&[
                ALPHABET[(n >> 18) as usize & 63],
                ALPHABET[(n >> 12) as usize & 63],
                ALPHABET[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
    String::from_utf8(out).expect("the base64 alphabet is ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_bytes_when_base64_encoded_should_match_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn given_values_when_varint_encoded_should_use_seven_bits_per_byte() {
        let mut out = Vec::new();
        varint(&mut out, 1);
        varint(&mut out, 300);
        assert_eq!(out, vec![1, 0xac, 0x02]);
        assert_eq!((zigzag(0), zigzag(-1), zigzag(1)), (0, 1, 2));
    }
}
