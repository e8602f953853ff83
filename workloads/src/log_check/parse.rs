//! From a history to each log's operations: pair invocations with completions by process, intern payloads to small
//! integers, and read the value shapes documented in the module above, refusing anything else with a message that
//! names the event.

use super::LogCheckStats;
use crate::history::{Event, EventKind, History};
use crate::models::FxBuild;
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;

/// "No such thing" for interned payload, append and read ids.
pub(super) const NONE: u32 = u32::MAX;
/// The claim "no entry at this offset", made by a read that returned a later offset.
pub(super) const GAP: u32 = u32::MAX - 1;

/// How an append ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// `ok` at `offset`, completed at history position `ack_pos`.
    Acked { offset: u64, ack_pos: usize },
    /// `fail`: definitely not appended.
    Failed,
    /// `info` or no completion: appended once or never.
    Unknown,
}

/// One append.
#[derive(Debug, Clone)]
pub(super) struct Append {
    pub payload: u32,
    pub process: u64,
    pub invoke_pos: usize,
    pub complete_pos: Option<usize>,
    pub outcome: Outcome,
}

impl Append {
    /// Offset and acknowledgement position of an acknowledged append.
    pub fn acked(&self) -> Option<(u64, usize)> {
        match self.outcome {
            Outcome::Acked { offset, ack_pos } => Some((offset, ack_pos)),
            _ => None,
        }
    }
}

/// One `ok` read; `entries` indexes [`LogOps::entries`].
#[derive(Debug, Clone)]
pub(super) struct Read {
    pub process: u64,
    pub invoke_pos: usize,
    pub complete_pos: usize,
    pub from: u64,
    pub end: u64,
    pub entries: Range<usize>,
}

/// One log's operations. Positions are indices into `History::events`; reads are sorted by invocation.
#[derive(Debug, Default)]
pub(super) struct LogOps<'h> {
    pub name: &'h str,
    /// Interned payloads by id.
    pub payloads: Vec<&'h Value>,
    /// For each payload id, the append that invoked it, or [`NONE`].
    pub appended_by: Vec<u32>,
    pub appends: Vec<Append>,
    pub reads: Vec<Read>,
    /// `(offset, payload id)` of every entry every read returned, read by read.
    pub entries: Vec<(u64, u32)>,
    /// Position of the last append invocation or completion on this log.
    pub last_append_pos: Option<usize>,
    // Std's hasher, not Fx: Fx's weak low bits make payloads like "p0-123456" collide in hashbrown's buckets.
    strings: HashMap<&'h str, u32>,
    others: HashMap<String, u32>,
    /// The payload first read at each (dense) offset: most entries are re-reads, and comparing with the payload
    /// already known there is cheaper than a hash lookup.
    by_offset: Vec<u32>,
}

impl<'h> LogOps<'h> {
    /// The id of a payload, interning it on first sight. String payloads are keyed by themselves, others by their
    /// JSON text, so the string "1" and the number 1 stay different payloads.
    fn intern(&mut self, value: &'h Value) -> Result<u32, String> {
        let next = u32::try_from(self.payloads.len())
            .ok()
            .filter(|&id| id < GAP)
            .ok_or("more than 2^32 - 2 distinct payloads in one log")?;
        let id = match value {
            Value::String(text) => *self.strings.entry(text.as_str()).or_insert(next),
            other => *self.others.entry(other.to_string()).or_insert(next),
        };
        if id == next {
            self.payloads.push(value);
            self.appended_by.push(NONE);
        }
        Ok(id)
    }

    /// The id of a payload a read returned at `offset`, trying the payload known at that offset first.
    fn intern_entry(&mut self, offset: u64, value: &'h Value) -> Result<u32, String> {
        let known = usize::try_from(offset)
            .ok()
            .and_then(|o| self.by_offset.get(o))
            .copied();
        if let Some(id) = known.filter(|&id| id != NONE && self.payloads[id as usize] == value) {
            return Ok(id);
        }
        let id = self.intern(value)?;
        // Offsets past the appends invoked so far are bogus or sparse: no fast path for them.
        let dense_limit = 2 * self.appends.len() as u64 + 1024;
        if known.is_none() && offset < dense_limit {
            self.by_offset.resize(offset as usize + 1, NONE);
        }
        if let Some(slot) = self.by_offset.get_mut(offset as usize).filter(|slot| **slot == NONE) {
            *slot = id;
        }
        Ok(id)
    }

    /// The entries of one read.
    pub fn entries_of(&self, read: u32) -> &[(u64, u32)] {
        &self.entries[self.reads[read as usize].entries.clone()]
    }
}

/// A history split into logs, sorted by name.
pub(super) struct Parsed<'h> {
    pub logs: Vec<LogOps<'h>>,
    pub ignored_ops: u64,
    pub reads_not_ok: u64,
}

/// Counts over the parsed history (the checks add theirs).
pub(super) fn stats(parsed: &Parsed<'_>) -> LogCheckStats {
    let mut stats = LogCheckStats {
        logs: parsed.logs.len() as u64,
        ignored_ops: parsed.ignored_ops,
        reads_not_ok: parsed.reads_not_ok,
        ..LogCheckStats::default()
    };
    for log in &parsed.logs {
        stats.appends += log.appends.len() as u64;
        for append in &log.appends {
            match append.outcome {
                Outcome::Acked { .. } => stats.appends_ok += 1,
                Outcome::Failed => stats.appends_failed += 1,
                Outcome::Unknown => stats.appends_unknown += 1,
            }
        }
        stats.reads_ok += log.reads.len() as u64;
        stats.entries_read += log.entries.len() as u64;
    }
    stats
}

/// An invocation waiting for its completion.
struct Open {
    invoke_pos: usize,
    /// Index into `Parser::logs`, or `None` for an ignored function.
    log: Option<usize>,
    /// The append's index in its log (appends only).
    append: u32,
}

#[derive(Default)]
struct Parser<'h> {
    logs: Vec<LogOps<'h>>,
    by_name: HashMap<&'h str, usize>,
    open: HashMap<u64, Open, FxBuild>,
    ignored_ops: u64,
    reads_not_ok: u64,
}

/// Reads a history's log operations. Fails, naming the event, on a history that does not have the documented shape.
pub(super) fn parse(history: &History) -> Result<Parsed<'_>, String> {
    let mut parser = Parser::default();
    for (pos, event) in history.events.iter().enumerate() {
        if !event.kind.is_client() {
            continue;
        }
        let process = event.client_process()?;
        if event.kind == EventKind::Invoke {
            parser.invoke(event, pos, process)?;
        } else {
            parser.complete(history, pos, process)?;
        }
    }
    let mut logs = parser.logs;
    logs.sort_by(|a, b| a.name.cmp(b.name));
    for log in &mut logs {
        log.reads.sort_by_key(|r| r.invoke_pos);
    }
    Ok(Parsed {
        logs,
        ignored_ops: parser.ignored_ops,
        reads_not_ok: parser.reads_not_ok,
    })
}

impl<'h> Parser<'h> {
    fn log(&mut self, event: &'h Event) -> usize {
        let name = event.key.as_deref().unwrap_or("");
        *self.by_name.entry(name).or_insert_with(|| {
            self.logs.push(LogOps {
                name,
                ..LogOps::default()
            });
            self.logs.len() - 1
        })
    }

    /// Opens an operation; a previous one of the same process that never completed stays unknown.
    fn invoke(&mut self, event: &'h Event, pos: usize, process: u64) -> Result<(), String> {
        let (log, append) = match event.f.as_str() {
            "append" => {
                let log = self.log(event);
                (Some(log), self.open_append(event, pos, process, log)?)
            }
            "read" => (Some(self.log(event)), NONE),
            _ => {
                self.ignored_ops += 1;
                (None, NONE)
            }
        };
        self.open.insert(
            process,
            Open {
                invoke_pos: pos,
                log,
                append,
            },
        );
        Ok(())
    }

    fn open_append(&mut self, event: &'h Event, pos: usize, process: u64, log: usize) -> Result<u32, String> {
        let ops = &mut self.logs[log];
        if event.value.is_null() {
            return Err(format!(
                "history event {}: an append must carry its payload as value",
                event.index
            ));
        }
        let payload = ops.intern(&event.value)?;
        if ops.appended_by[payload as usize] != NONE {
            let first = ops.appends[ops.appended_by[payload as usize] as usize].invoke_pos;
            return Err(format!(
                "history event {} appends {} to log {:?} again (first appended at position {first}); payloads must \
                 be unique per log",
                event.index, event.value, ops.name
            ));
        }
        let index = u32::try_from(ops.appends.len()).map_err(|_| "more than 2^32 appends in one log")?;
        ops.appended_by[payload as usize] = index;
        ops.appends.push(Append {
            payload,
            process,
            invoke_pos: pos,
            complete_pos: None,
            outcome: Outcome::Unknown,
        });
        ops.last_append_pos = Some(pos);
        Ok(index)
    }

    fn complete(&mut self, history: &'h History, pos: usize, process: u64) -> Result<(), String> {
        let event = &history.events[pos];
        let open = self.open.remove(&process).ok_or_else(|| {
            format!(
                "history event {}: {:?} completion of {} for process {process}, which has no open invocation",
                event.index, event.kind, event.f
            )
        })?;
        let invoke = &history.events[open.invoke_pos];
        if invoke.f != event.f {
            return Err(format!(
                "history event {} completes {:?} but process {process} invoked {:?} (event {})",
                event.index, event.f, invoke.f, invoke.index
            ));
        }
        let Some(log) = open.log else { return Ok(()) };
        match (event.f.as_str(), event.kind) {
            ("append", kind) => {
                let ops = &mut self.logs[log];
                let append = &mut ops.appends[open.append as usize];
                append.complete_pos = Some(pos);
                append.outcome = match kind {
                    EventKind::Ok => Outcome::Acked {
                        offset: acked_offset(event)?,
                        ack_pos: pos,
                    },
                    EventKind::Fail => Outcome::Failed,
                    _ => Outcome::Unknown,
                };
                ops.last_append_pos = Some(pos);
            }
            (_, EventKind::Ok) => self.complete_read(invoke, event, open.invoke_pos, pos, log)?,
            _ => self.reads_not_ok += 1,
        }
        Ok(())
    }

    fn complete_read(
        &mut self,
        invoke: &Event,
        done: &'h Event,
        invoke_pos: usize,
        pos: usize,
        log: usize,
    ) -> Result<(), String> {
        let bad = |what: &str| format!("history event {}: an ok read {what}, found {}", done.index, done.value);
        let from = done.value.get("from").or_else(|| invoke.value.get("from"));
        let from = from
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("must say the offset it read from"))?;
        let end = done
            .value
            .get("end")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("must report the log's end"))?;
        let entries = done
            .value
            .get("entries")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("must list entries"))?;
        let ops = &mut self.logs[log];
        let start = ops.entries.len();
        for entry in entries {
            let pair = entry.as_array().filter(|pair| pair.len() == 2 && !pair[1].is_null());
            let (offset, payload) = pair
                .and_then(|pair| Some((pair[0].as_u64()?, &pair[1])))
                .ok_or_else(|| bad("must list entries as [offset, payload] pairs"))?;
            let payload = ops.intern_entry(offset, payload)?;
            ops.entries.push((offset, payload));
        }
        u32::try_from(ops.reads.len()).map_err(|_| "more than 2^32 reads in one log")?;
        ops.reads.push(Read {
            process: invoke.process.unwrap_or_default(),
            invoke_pos,
            complete_pos: pos,
            from,
            end,
            entries: start..ops.entries.len(),
        });
        Ok(())
    }
}

/// The offset of an acknowledged append: `{"offset": N}`, or a bare `N`.
fn acked_offset(done: &Event) -> Result<u64, String> {
    done.value
        .as_u64()
        .or_else(|| done.value.get("offset").and_then(Value::as_u64))
        .ok_or_else(|| {
            format!(
                "history event {}: an ok append must return {{\"offset\": N}}, found {}",
                done.index, done.value
            )
        })
}
