//! Log-workload histories from a correct sequential log: every operation takes effect at one moment inside its
//! interval (a `fail` append never, an `info` append before its completion, after it, or never), consumers read
//! forward from where their last read ended (sometimes from 0 again), and every log is read in full at the end, more
//! than once. Such a history is clean by construction; the records let tests corrupt it precisely.
#![allow(dead_code)]

use faultline_workloads::{Event, EventKind, History};
use rand::Rng;
use serde_json::{json, Value};

/// Shape of a generated log history.
#[derive(Debug, Clone)]
pub struct LogShape {
    /// Concurrent producer slots.
    pub producers: usize,
    /// Concurrent consumer slots (each a consumer process until an `info` read retires it).
    pub consumers: usize,
    /// Appends to invoke.
    pub appends: usize,
    /// Logs appends and reads spread over.
    pub logs: usize,
    /// Chance that an append ends `info` (taking effect before or after its completion, or never).
    pub info_chance: f64,
    /// Chance that an append ends `fail` (never taking effect).
    pub fail_chance: f64,
    /// Chance that a consumer's read starts again from 0 instead of where its last read of that log ended.
    pub rewind_chance: f64,
    /// Reads ask for 1..=this many entries.
    pub read_limit_max: u64,
    /// Full reads of every log at the end.
    pub final_reads: usize,
    /// Page size of the final reads.
    pub final_page: u64,
}

impl LogShape {
    /// A small shape for property tests.
    pub fn small(appends: usize) -> Self {
        LogShape {
            producers: 3,
            consumers: 2,
            appends,
            logs: 2,
            info_chance: 0.1,
            fail_chance: 0.05,
            rewind_chance: 0.1,
            read_limit_max: 8,
            final_reads: 2,
            final_page: 1000,
        }
    }
}

/// What one append did.
#[derive(Debug, Clone)]
pub struct AppendRec {
    pub log: String,
    pub payload: String,
    pub invoke_pos: usize,
    pub complete_pos: Option<usize>,
    /// `Ok`, `Fail`, `Info`, or `Invoke` when it never completed.
    pub kind: EventKind,
    /// Where it landed, if it took effect.
    pub offset: Option<u64>,
}

/// What one read did.
#[derive(Debug, Clone)]
pub struct ReadRec {
    pub log: String,
    pub invoke_pos: usize,
    pub complete_pos: usize,
    pub kind: EventKind,
    pub is_final: bool,
}

/// A generated history and what each operation did.
pub struct Generated {
    pub history: History,
    pub appends: Vec<AppendRec>,
    pub reads: Vec<ReadRec>,
}

enum Pending {
    Append {
        rec: usize,
        applied: bool,
        outcome: EventKind,
        late: bool,
    },
    Read {
        rec: usize,
        log: usize,
        from: u64,
        limit: u64,
        result: Option<Value>,
        outcome: EventKind,
    },
}

struct Slot {
    process: u64,
    producer: bool,
    op: Option<Pending>,
    /// Consumer: where its next read of each log starts.
    positions: Vec<u64>,
}

struct Gen<'r, R: Rng> {
    rng: &'r mut R,
    shape: LogShape,
    events: Vec<Event>,
    logs: Vec<Vec<String>>,
    appends: Vec<AppendRec>,
    reads: Vec<ReadRec>,
    /// `info` appends that take effect after their completion.
    late: Vec<usize>,
    next_process: u64,
}

pub fn log_name(log: usize) -> String {
    format!("log{log}")
}

fn event(kind: EventKind, process: u64, f: &str, log: usize, value: Value) -> Event {
    Event {
        index: 0,
        time_ns: 0,
        kind,
        process: Some(process),
        worker: Some(process),
        node: Some("n1".into()),
        f: f.into(),
        key: Some(log_name(log)),
        value,
        error: None,
    }
}

/// Generates a clean log history and the record of each operation.
pub fn log_history(rng: &mut impl Rng, shape: &LogShape) -> Generated {
    let mut gen = Gen {
        rng,
        shape: shape.clone(),
        events: Vec::new(),
        logs: vec![Vec::new(); shape.logs],
        appends: Vec::new(),
        reads: Vec::new(),
        late: Vec::new(),
        next_process: 0,
    };
    let mut slots: Vec<Slot> = (0..shape.producers + shape.consumers)
        .map(|s| Slot {
            process: s as u64,
            producer: s < shape.producers,
            op: None,
            positions: vec![0; shape.logs],
        })
        .collect();
    gen.next_process = slots.len() as u64;
    let mut busy = 0usize;
    while gen.appends.len() < shape.appends || busy > 0 {
        if !gen.late.is_empty() && gen.rng.gen_bool(0.2) {
            let i = gen.rng.gen_range(0..gen.late.len());
            let rec = gen.late.swap_remove(i);
            gen.apply_append(rec);
        }
        let s = gen.rng.gen_range(0..slots.len());
        let was_busy = slots[s].op.is_some();
        gen.step(&mut slots[s]);
        busy = busy + usize::from(slots[s].op.is_some()) - usize::from(was_busy);
    }
    while let Some(rec) = gen.late.pop() {
        gen.apply_append(rec);
    }
    for log in 0..shape.logs {
        for _ in 0..shape.final_reads {
            gen.final_read(log);
        }
    }
    for (i, e) in gen.events.iter_mut().enumerate() {
        e.index = i as u64;
        e.time_ns = i as u64 * 1000;
    }
    Generated {
        history: History {
            events: gen.events,
            truncated_tail: false,
        },
        appends: gen.appends,
        reads: gen.reads,
    }
}

impl<R: Rng> Gen<'_, R> {
    fn push(&mut self, event: Event) -> usize {
        self.events.push(event);
        self.events.len() - 1
    }

    fn step(&mut self, slot: &mut Slot) {
        match slot.op.take() {
            None if slot.producer && self.appends.len() < self.shape.appends => {
                slot.op = Some(self.invoke_append(slot))
            }
            None if !slot.producer && self.appends.len() < self.shape.appends => slot.op = Some(self.invoke_read(slot)),
            None => {}
            Some(Pending::Append {
                rec,
                applied: false,
                outcome,
                late,
            }) if outcome != EventKind::Fail && !late => {
                self.apply_append(rec);
                slot.op = Some(Pending::Append {
                    rec,
                    applied: true,
                    outcome,
                    late,
                });
            }
            Some(Pending::Append { rec, outcome, late, .. }) => self.complete_append(slot, rec, outcome, late),
            Some(Pending::Read {
                rec,
                log,
                from,
                limit,
                result: None,
                outcome: EventKind::Ok,
            }) => {
                let result = Some(self.read(log, from, limit));
                slot.op = Some(Pending::Read {
                    rec,
                    log,
                    from,
                    limit,
                    result,
                    outcome: EventKind::Ok,
                });
            }
            Some(Pending::Read {
                rec,
                log,
                result,
                outcome,
                ..
            }) => self.complete_read(slot, rec, log, result, outcome),
        }
    }

    fn invoke_append(&mut self, slot: &Slot) -> Pending {
        let log = self.rng.gen_range(0..self.shape.logs);
        let payload = format!("p{}-{}", log, self.appends.len());
        let invoke_pos = self.push(event(EventKind::Invoke, slot.process, "append", log, json!(payload)));
        let roll: f64 = self.rng.gen();
        let (outcome, applies, late) = if roll < self.shape.fail_chance {
            (EventKind::Fail, false, false)
        } else if roll < self.shape.fail_chance + self.shape.info_chance {
            match self.rng.gen_range(0..3) {
                0 => (EventKind::Info, false, false),
                1 => (EventKind::Info, true, false),
                _ => (EventKind::Info, true, true),
            }
        } else {
            (EventKind::Ok, true, false)
        };
        self.appends.push(AppendRec {
            log: log_name(log),
            payload,
            invoke_pos,
            complete_pos: None,
            kind: EventKind::Invoke,
            offset: None,
        });
        let rec = self.appends.len() - 1;
        // An info append that never applies is marked applied so that the next visit completes it.
        Pending::Append {
            rec,
            applied: !applies,
            outcome,
            late,
        }
    }

    fn apply_append(&mut self, rec: usize) {
        let log: usize = self.appends[rec].log[3..].parse().expect("a generated log name");
        self.appends[rec].offset = Some(self.logs[log].len() as u64);
        self.logs[log].push(self.appends[rec].payload.clone());
    }

    fn complete_append(&mut self, slot: &mut Slot, rec: usize, outcome: EventKind, late: bool) {
        let log: usize = self.appends[rec].log[3..].parse().expect("a generated log name");
        let value = match (outcome, self.appends[rec].offset) {
            (EventKind::Ok, Some(offset)) => json!({ "offset": offset }),
            _ => Value::Null,
        };
        let pos = self.push(event(outcome, slot.process, "append", log, value));
        self.appends[rec].complete_pos = Some(pos);
        self.appends[rec].kind = outcome;
        if late {
            self.late.push(rec);
        }
        if outcome == EventKind::Info {
            slot.process = self.next_process;
            self.next_process += 1;
        }
    }

    fn invoke_read(&mut self, slot: &Slot) -> Pending {
        let log = self.rng.gen_range(0..self.shape.logs);
        let from = if self.rng.gen_bool(self.shape.rewind_chance) {
            0
        } else {
            slot.positions[log]
        };
        let limit = self.rng.gen_range(1..=self.shape.read_limit_max);
        let invoke_pos = self.push(event(
            EventKind::Invoke,
            slot.process,
            "read",
            log,
            json!({"from": from, "limit": limit}),
        ));
        let outcome = match self.rng.gen_range(0..50) {
            0 => EventKind::Fail,
            1 => EventKind::Info,
            _ => EventKind::Ok,
        };
        self.reads.push(ReadRec {
            log: log_name(log),
            invoke_pos,
            complete_pos: 0,
            kind: outcome,
            is_final: false,
        });
        Pending::Read {
            rec: self.reads.len() - 1,
            log,
            from,
            limit,
            result: None,
            outcome,
        }
    }

    /// The log as it is now: entries from `from`, at most `limit`, and its end.
    fn read(&self, log: usize, from: u64, limit: u64) -> Value {
        let entries = &self.logs[log];
        let end = entries.len() as u64;
        let upto = end.min(from.saturating_add(limit));
        let listed: Vec<Value> = (from.min(upto)..upto)
            .map(|o| json!([o, entries[o as usize]]))
            .collect();
        json!({"from": from, "entries": listed, "end": end})
    }

    fn complete_read(&mut self, slot: &mut Slot, rec: usize, log: usize, result: Option<Value>, outcome: EventKind) {
        if let Some(result) = &result {
            let returned = result["entries"].as_array().map_or(0, Vec::len) as u64;
            slot.positions[log] = result["from"].as_u64().unwrap_or(0) + returned;
        }
        let pos = self.push(event(outcome, slot.process, "read", log, result.unwrap_or(Value::Null)));
        self.reads[rec].complete_pos = pos;
        if outcome == EventKind::Info {
            slot.process = self.next_process;
            self.next_process += 1;
        }
    }

    fn final_read(&mut self, log: usize) {
        let process = self.next_process;
        self.next_process += 1;
        let mut from = 0;
        loop {
            let limit = self.shape.final_page;
            let invoke_pos = self.push(event(
                EventKind::Invoke,
                process,
                "read",
                log,
                json!({"from": from, "limit": limit}),
            ));
            let result = self.read(log, from, limit);
            let complete_pos = self.push(event(EventKind::Ok, process, "read", log, result));
            self.reads.push(ReadRec {
                log: log_name(log),
                invoke_pos,
                complete_pos,
                kind: EventKind::Ok,
                is_final: true,
            });
            from += limit;
            if from >= self.logs[log].len() as u64 {
                break;
            }
        }
    }
}
