//! The register workload: N logical clients issue read / write / cas over a rotating set of keys at a target rate.
//!
//! Jepsen semantics: each client process has at most one op in flight; an op whose outcome is unknown is recorded
//! `info` and its process is retired (a new process id takes over the worker's slot), because the old process might
//! still have an effect at any later time. Writes use unique values, so a read names the write it saw. CAS takes its
//! `from` from the last value this run saw on the key, so many CAS ops can succeed. Keys rotate after a bounded number
//! of ops (Jepsen's `independent`), which keeps every key's history small enough to check fast.
//!
//! The txn workload draws transactions of `txn_length` micro-ops from the same rotating keys (each micro-op counts as
//! one op on its key): a read `["r", k, null]` or a write, `["append", k, v]` (list-append) or `["w", k, v]`
//! (rw-register), with `v` unique in the run, so unique per key as Elle needs. One history op `f: txn` carries the
//! list; its `ok` completion carries the list with every read filled.
//!
//! The bank and long-fork workloads are Jepsen's: `bank.rs` draws reads of every balance and transfers, `long_fork.rs`
//! inserts of fresh keys followed by reads of their group.

mod bank;
mod long_fork;

use crate::plan::{BankSpec, TxnLength, WorkloadKind, WorkloadSpec};
use crate::run::recorder::Recorder;
use crate::system::{BankClient, LogClient, Outcome, RegisterClient, SetClient, System, TxnClient};
use faultline_workloads::checker::TXN_F;
use faultline_workloads::history::{Event, EventKind};
use faultline_workloads::txn_check::TxnModel;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Entries a consumer asks for at once.
pub const LOG_READ_LIMIT: u64 = 100;
use crate::system::SET_KEY;
/// How often a consumer starts again from offset 0.
const LOG_REWIND_PROBABILITY: f64 = 0.05;

/// Client op counters for the progress line.
#[derive(Default)]
pub struct Stats {
    /// Completed ok.
    pub ok: AtomicU64,
    /// Completed fail.
    pub fail: AtomicU64,
    /// Completed info.
    pub info: AtomicU64,
}

/// One op the generator picked.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedOp {
    /// `read`, `write` or `cas`.
    pub f: &'static str,
    /// Key.
    pub key: String,
    /// Written value, `[from, to]` for cas, null for reads.
    pub value: Value,
}

struct KeySlot {
    key: String,
    ops: u64,
    last_seen: Option<String>,
}

/// Picks ops: which function, which key, which values. Deterministic in its seed.
pub struct Generator {
    kind: WorkloadKind,
    /// Log workload: each consumer's next offset per log (consumers read forward).
    consumer_next: std::collections::HashMap<(u64, String), u64>,
    rng: ChaCha8Rng,
    slots: Vec<KeySlot>,
    next_key: u64,
    next_value: u64,
    ops_per_key: u64,
    weights: [u32; 3],
    /// Txn workload: the datatype and how many micro-ops a transaction has.
    txn: Option<(TxnModel, TxnLength)>,
    /// Bank workload: the bank.
    bank: BankSpec,
    /// Long-fork workload: its inserts and reads.
    long_fork: long_fork::LongFork,
}

/// Groups the long-fork workload's final phase reads again, the most recent ones.
const FINAL_GROUPS_MAX: u64 = 500;

impl Generator {
    /// A generator for `spec`.
    pub fn new(spec: &WorkloadSpec, rng: ChaCha8Rng) -> Generator {
        let mix = &spec.mix.value;
        let mut generator = Generator {
            kind: spec.kind,
            consumer_next: Default::default(),
            rng,
            slots: Vec::new(),
            next_key: 0,
            next_value: 0,
            ops_per_key: spec.ops_per_key.0,
            weights: match spec.kind {
                WorkloadKind::Register => [mix.read, mix.write, mix.cas],
                WorkloadKind::Log => [mix.read, mix.append, 0],
                WorkloadKind::Set => [mix.read, mix.add, 0],
                WorkloadKind::Txn => [mix.read, mix.write + mix.append, 0],
                WorkloadKind::Bank => [mix.read, mix.transfer, 0],
                WorkloadKind::LongFork => [mix.read, mix.write, 0],
            },
            txn: spec
                .model
                .as_ref()
                .map(|model| (model.value, spec.txn_length.unwrap_or(TxnLength::DEFAULT))),
            bank: spec.bank.as_ref().map(|b| b.value).unwrap_or_default(),
            long_fork: long_fork::LongFork::new(spec.group_size.map_or(3, |g| g.0)),
        };
        for _ in 0..spec.keys.0 {
            let key = generator.fresh_key();
            generator.slots.push(KeySlot {
                key,
                ops: 0,
                last_seen: None,
            });
        }
        generator
    }

    fn fresh_key(&mut self) -> String {
        self.next_key += 1;
        match self.kind {
            WorkloadKind::Register | WorkloadKind::Txn => format!("k{}", self.next_key - 1),
            WorkloadKind::Log => format!("log{}", self.next_key - 1),
            WorkloadKind::Set => SET_KEY.to_string(),
            WorkloadKind::Bank => crate::system::BANK_KEY.to_string(),
            WorkloadKind::LongFork => long_fork::key_name(self.next_key - 1),
        }
    }

    /// The next op of `process`.
    pub fn next_op(&mut self, process: u64) -> PlannedOp {
        match self.kind {
            WorkloadKind::Log => return self.next_log_op(process),
            WorkloadKind::Set => return self.next_set_op(),
            WorkloadKind::Txn => return self.next_txn_op(),
            WorkloadKind::Bank => {
                return match self.pick_f() {
                    0 => bank::read(bank::bank_of(&self.bank)),
                    _ => bank::random_transfer(&self.bank, &mut self.rng),
                }
            }
            WorkloadKind::LongFork => {
                let read = self.pick_f() == 0;
                return self.long_fork.next_op(process, read, &mut self.rng);
            }
            WorkloadKind::Register => {}
        }
        let slot_index = self.pick_slot();
        let f = self.pick_f();
        self.next_value += 1;
        let fresh = format!("v{}", self.next_value);
        let slot = &mut self.slots[slot_index];
        slot.ops += 1;
        let key = slot.key.clone();
        match (f, slot.last_seen.clone()) {
            (0, _) => PlannedOp {
                f: "read",
                key,
                value: Value::Null,
            },
            (2, Some(from)) => PlannedOp {
                f: "cas",
                key,
                value: Value::from(vec![from, fresh]),
            },
            _ => PlannedOp {
                f: "write",
                key,
                value: Value::from(fresh),
            },
        }
    }

    /// A key slot for the next op, replacing its key by a fresh one once it has had `ops_per_key` ops.
    fn pick_slot(&mut self) -> usize {
        let slot_index = self.rng.gen_range(0..self.slots.len());
        if self.slots[slot_index].ops >= self.ops_per_key {
            let key = self.fresh_key();
            self.slots[slot_index] = KeySlot {
                key,
                ops: 0,
                last_seen: None,
            };
        }
        slot_index
    }

    /// The index of the function to run next, drawn by the mix's weights.
    fn pick_f(&mut self) -> usize {
        let total: u32 = self.weights.iter().sum();
        let mut pick = self.rng.gen_range(0..total);
        let mut f = 0;
        while pick >= self.weights[f] {
            pick -= self.weights[f];
            f += 1;
        }
        f
    }

    /// Txn workload: `txn_length` micro-ops, each a read or a write (append) of a fresh value on a rotating key.
    fn next_txn_op(&mut self) -> PlannedOp {
        let (model, length) = self.txn.expect("a txn workload has a model (plan validation)");
        let count = self.rng.gen_range(length.min..=length.max);
        let mut ops = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let slot_index = self.pick_slot();
            let f = self.pick_f();
            let slot = &mut self.slots[slot_index];
            slot.ops += 1;
            let key = slot.key.clone();
            let op = if f == 0 {
                json!(["r", key, null])
            } else {
                self.next_value += 1;
                let write = match model {
                    TxnModel::ListAppend => "append",
                    TxnModel::RwRegister => "w",
                };
                json!([write, key, self.next_value])
            };
            ops.push(op);
        }
        PlannedOp {
            f: TXN_F,
            key: String::new(),
            value: Value::Array(ops),
        }
    }

    /// Log workload: an append of a unique payload, or a consumer's read forward from where it stopped (now and then
    /// from 0 again).
    fn next_log_op(&mut self, process: u64) -> PlannedOp {
        let log = self.slots[self.rng.gen_range(0..self.slots.len())].key.clone();
        let total = self.weights[0] + self.weights[1];
        if self.rng.gen_range(0..total) < self.weights[0] {
            let rewind = self.rng.gen_bool(LOG_REWIND_PROBABILITY);
            let next = self.consumer_next.entry((process, log.clone())).or_insert(0);
            if rewind {
                *next = 0;
            }
            return PlannedOp {
                f: "read",
                key: log,
                value: json!({"from": *next, "limit": LOG_READ_LIMIT}),
            };
        }
        self.next_value += 1;
        PlannedOp {
            f: "append",
            key: log,
            value: Value::from(format!("p{}", self.next_value)),
        }
    }

    /// Set workload: an add of a unique element, or a read of the whole set.
    fn next_set_op(&mut self) -> PlannedOp {
        let total = self.weights[0] + self.weights[1];
        if self.rng.gen_range(0..total) < self.weights[0] {
            return PlannedOp {
                f: "read",
                key: SET_KEY.to_string(),
                value: Value::Null,
            };
        }
        self.next_value += 1;
        PlannedOp {
            f: "add",
            key: SET_KEY.to_string(),
            value: Value::from(format!("e{}", self.next_value)),
        }
    }

    /// Learns from a completed op: the key's latest value (so CAS has a plausible `from`), or where a consumer goes on.
    pub fn observe(&mut self, process: u64, op: &PlannedOp, outcome: &Outcome) {
        let Outcome::Ok(read) = outcome else { return };
        if !matches!(self.kind, WorkloadKind::Register | WorkloadKind::Log) {
            return;
        }
        if self.kind == WorkloadKind::Log {
            if op.f == "read" {
                let last = read["entries"]
                    .as_array()
                    .and_then(|e| e.last())
                    .and_then(|e| e[0].as_u64());
                if let Some(last) = last {
                    self.consumer_next.insert((process, op.key.clone()), last + 1);
                }
            }
            return;
        }
        let seen = match op.f {
            "read" => read.as_str().map(str::to_string),
            "write" => op.value.as_str().map(str::to_string),
            _ => op.value.get(1).and_then(Value::as_str).map(str::to_string),
        };
        if let Some(slot) = self.slots.iter_mut().find(|s| s.key == op.key) {
            if seen.is_some() {
                slot.last_seen = seen;
            }
        }
    }
}

/// A client of the workload's kind.
pub enum Client {
    /// Register ops.
    Register(Box<dyn RegisterClient>),
    /// Log ops.
    Log(Box<dyn LogClient>),
    /// Set ops.
    Set(Box<dyn SetClient>),
    /// Transactions (and the long-fork workload's inserts and group reads).
    Txn(Box<dyn TxnClient>),
    /// Bank reads and transfers.
    Bank(Box<dyn BankClient>),
}

impl Client {
    /// A client of `kind` bound to `home`; an error when the system offers no such client (plan validation checks
    /// the adapter's capabilities first, so this names an adapter that claims more than it has).
    pub fn new(
        system: &dyn System,
        kind: WorkloadKind,
        home: usize,
        op_timeout: Duration,
        process: u64,
    ) -> Result<Client, String> {
        let client = match kind {
            WorkloadKind::Register => system.register_client(home, op_timeout, process).map(Client::Register),
            WorkloadKind::Log => system.log_client(home, op_timeout, process).map(Client::Log),
            WorkloadKind::Set => system.set_client(home, op_timeout, process).map(Client::Set),
            WorkloadKind::Txn | WorkloadKind::LongFork => system.txn_client(home, op_timeout, process).map(Client::Txn),
            WorkloadKind::Bank => system.bank_client(home, op_timeout, process).map(Client::Bank),
        };
        client.ok_or_else(|| format!("the {} adapter offers no {kind} client", system.kind()))
    }
}

/// Invokes one op through `client`, recording the invocation and the completion. Returns the outcome.
pub async fn perform(
    recorder: &Recorder,
    client: &Client,
    process: u64,
    worker: u64,
    home: &str,
    op: &PlannedOp,
) -> Outcome {
    let event = |kind, value: Value, node: String, error: Option<String>| Event {
        index: 0,
        time_ns: 0,
        kind,
        process: Some(process),
        worker: Some(worker),
        node: Some(node),
        f: op.f.to_string(),
        // A transaction's keys are in its micro-ops.
        key: (!matches!(client, Client::Txn(_))).then(|| op.key.clone()),
        value,
        error,
    };
    recorder.record(event(EventKind::Invoke, op.value.clone(), home.to_string(), None));
    let (outcome, served_by) = match (client, op.f) {
        (Client::Log(log), "append") => log.append(&op.key, op.value.as_str().unwrap_or_default()).await,
        (Client::Log(log), _) => {
            let from = op.value["from"].as_u64().unwrap_or(0);
            log.read(&op.key, from, op.value["limit"].as_u64().unwrap_or(LOG_READ_LIMIT))
                .await
        }
        (Client::Set(set), "add") => set.add(op.value.as_str().unwrap_or_default()).await,
        (Client::Set(set), _) => set.read_all().await,
        (Client::Txn(txn), _) => txn.txn(&op.value).await,
        (Client::Bank(client), "read") => client.read(bank::bank_in(&op.value)).await,
        (Client::Bank(client), _) => {
            let number = |field: &str| op.value[field].as_u64().unwrap_or_default();
            let bank = bank::bank_in(&op.value);
            client
                .transfer(bank, number("from"), number("to"), number("amount"))
                .await
        }
        (Client::Register(register), "read") => register.read(&op.key).await,
        (Client::Register(register), "write") => register.write(&op.key, op.value.as_str().unwrap_or_default()).await,
        (Client::Register(register), _) => {
            let from = op.value.get(0).and_then(Value::as_str).unwrap_or_default();
            let to = op.value.get(1).and_then(Value::as_str).unwrap_or_default();
            register.cas(&op.key, from, to).await
        }
    };
    let node = faultline_faults::process::node_name(served_by);
    let completion = match &outcome {
        Outcome::Ok(read) => {
            let value = match client {
                Client::Log(_) | Client::Txn(_) => read.clone(),
                Client::Bank(_) if op.f == "read" => read.clone(),
                Client::Bank(_) => op.value.clone(),
                Client::Set(_) if op.f == "read" => read.clone(),
                Client::Set(_) => op.value.clone(),
                Client::Register(_) if op.f == "read" => read.clone(),
                Client::Register(_) => op.value.clone(),
            };
            event(EventKind::Ok, value, node, None)
        }
        Outcome::Fail(why) => event(EventKind::Fail, op.value.clone(), node, Some(why.clone())),
        Outcome::Info(why) => event(EventKind::Info, op.value.clone(), node, Some(why.clone())),
    };
    recorder.record(completion);
    outcome
}

/// Shared state of the running workload.
pub struct Workload {
    generator: Mutex<Generator>,
    next_process: AtomicU64,
    /// Counters.
    pub stats: Stats,
    spec: WorkloadSpec,
}

impl Workload {
    /// A workload for `spec`; process ids `0..concurrency` are the first generation.
    pub fn new(spec: &WorkloadSpec, rng: ChaCha8Rng) -> Arc<Workload> {
        Arc::new(Workload {
            generator: Mutex::new(Generator::new(spec, rng)),
            next_process: AtomicU64::new(spec.concurrency.0),
            stats: Stats::default(),
            spec: spec.clone(),
        })
    }

    /// The end of the quiet window the workload is in now, if any.
    fn quiet_until(&self, phase_start: tokio::time::Instant) -> Option<tokio::time::Instant> {
        let now_ms = phase_start.elapsed().as_millis() as u64;
        self.spec
            .quiet
            .iter()
            .find(|w| (w.at.0..w.at.0 + w.duration.0).contains(&now_ms))
            .map(|w| phase_start + Duration::from_millis(w.at.0 + w.duration.0))
    }

    /// Every key the generator has handed out so far (none for the bank and long-fork workloads: see
    /// [`Workload::final_ops`]).
    pub fn keys_used(&self) -> Vec<String> {
        let generator = self.generator.lock().expect("generator poisoned");
        let prefix = match generator.kind {
            WorkloadKind::Log => "log",
            WorkloadKind::Register | WorkloadKind::Txn => "k",
            WorkloadKind::Set => return vec![SET_KEY.to_string()],
            WorkloadKind::Bank | WorkloadKind::LongFork => return Vec::new(),
        };
        (0..generator.next_key).map(|i| format!("{prefix}{i}")).collect()
    }

    /// The workload's kind.
    pub fn kind(&self) -> WorkloadKind {
        self.spec.kind
    }

    /// The bank and long-fork workloads' final reads: a read of every balance, or a read of each recent group.
    pub fn final_ops(&self) -> Vec<PlannedOp> {
        let mut generator = self.generator.lock().expect("generator poisoned");
        match generator.kind {
            WorkloadKind::Bank => vec![bank::read(bank::bank_of(&generator.bank))],
            WorkloadKind::LongFork => {
                let Generator { long_fork, rng, .. } = &mut *generator;
                long_fork.final_reads(FINAL_GROUPS_MAX, rng)
            }
            _ => Vec::new(),
        }
    }

    /// The bank and long-fork workloads' recovery probe, an ordinary write of the workload: a transfer of 0 (which
    /// always succeeds), or an insert of a key of its own.
    pub fn probe(&self, after: &str, attempt: u64) -> Option<PlannedOp> {
        let generator = self.generator.lock().expect("generator poisoned");
        match generator.kind {
            WorkloadKind::Bank => Some(bank::transfer(bank::bank_of(&generator.bank), 0, 1, 0)),
            WorkloadKind::LongFork => Some(PlannedOp {
                f: TXN_F,
                key: String::new(),
                value: json!([["w", format!("lf-probe-{after}-{attempt}"), 1]]),
            }),
            _ => None,
        }
    }

    /// Txn workload: the write micro-op of its model (`append` for list-append, `w` for rw-register).
    pub fn txn_write_f(&self) -> &'static str {
        match self.spec.model.as_ref().map(|m| m.value) {
            Some(TxnModel::RwRegister) => "w",
            _ => "append",
        }
    }

    /// A fresh process id (for retired processes and the final phase).
    pub fn new_process(&self) -> u64 {
        self.next_process.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs worker `worker` against its home node until `stop` turns true. Its in-flight op completes first. Its home
    /// is a member (of `members`, as the lab lists them): when its home leaves the cluster, the worker moves to
    /// another member, as a new process.
    pub async fn run_worker(
        self: Arc<Self>,
        system: Arc<dyn System>,
        recorder: Recorder,
        (worker, mut members): (u64, tokio::sync::watch::Receiver<Vec<usize>>),
        mut rng: ChaCha8Rng,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut home = home_among(worker, &members.borrow_and_update(), system.node_count());
        let mut home_name = faultline_faults::process::node_name(home);
        let op_timeout = self.spec.op_timeout.duration();
        let mean_gap_s = self.spec.concurrency.0 as f64 / self.spec.rate.0;
        let mut process = worker;
        let kind = self.spec.kind;
        let Ok(mut client) = Client::new(system.as_ref(), kind, home, op_timeout, process) else {
            return;
        };
        let phase_start = tokio::time::Instant::now();
        loop {
            // Poisson arrivals per worker add up to the target total rate.
            let gap = Duration::from_secs_f64(-rng.gen_range(f64::EPSILON..1.0f64).ln() * mean_gap_s);
            tokio::select! {
                _ = tokio::time::sleep(gap) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            if let Some(end) = self.quiet_until(phase_start) {
                tokio::select! {
                    _ = tokio::time::sleep_until(end) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
            if members.has_changed().unwrap_or(false) {
                let now = members.borrow_and_update().clone();
                if !now.is_empty() && !now.contains(&home) {
                    home = home_among(worker, &now, system.node_count());
                    home_name = faultline_faults::process::node_name(home);
                    process = self.new_process();
                    match Client::new(system.as_ref(), kind, home, op_timeout, process) {
                        Ok(fresh) => client = fresh,
                        Err(_) => return,
                    }
                }
            }
            let op = self.generator.lock().expect("generator poisoned").next_op(process);
            let outcome = perform(&recorder, &client, process, worker, &home_name, &op).await;
            self.generator
                .lock()
                .expect("generator poisoned")
                .observe(process, &op, &outcome);
            match outcome {
                Outcome::Ok(_) => self.stats.ok.fetch_add(1, Ordering::Relaxed),
                Outcome::Fail(_) => self.stats.fail.fetch_add(1, Ordering::Relaxed),
                Outcome::Info(_) => {
                    process = self.new_process();
                    match Client::new(system.as_ref(), kind, home, op_timeout, process) {
                        Ok(fresh) => client = fresh,
                        Err(_) => return,
                    }
                    self.stats.info.fetch_add(1, Ordering::Relaxed)
                }
            };
            if *stop.borrow() {
                return;
            }
        }
    }
}

/// The home of worker `worker`: the members take the workers round-robin (every node when none is known).
fn home_among(worker: u64, members: &[usize], node_count: usize) -> usize {
    match members.len() {
        0 => worker as usize % node_count,
        n => members[worker as usize % n],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use faultline_faults::rng::stream;
    use std::collections::HashSet;

    #[test]
    fn given_ops_per_key_when_generating_should_rotate_keys_and_keep_values_unique() {
        let mut spec = Plan::default_plan().workload;
        spec.keys = crate::plan::Bounded(2);
        spec.ops_per_key = crate::plan::Bounded(10);
        let mut generator = Generator::new(&spec, stream(1, "workload"));
        let mut per_key = std::collections::HashMap::<String, u64>::new();
        let mut written = std::collections::HashSet::new();
        for _ in 0..200 {
            let op = generator.next_op(0);
            *per_key.entry(op.key.clone()).or_default() += 1;
            if op.f == "write" {
                assert!(
                    written.insert(op.value.as_str().unwrap().to_string()),
                    "duplicate write value"
                );
            }
            generator.observe(0, &op, &Outcome::Ok(Value::Null));
        }
        assert!(per_key.len() >= 20, "keys must rotate: {per_key:?}");
        assert!(per_key.values().all(|&n| n <= 10));
    }

    #[test]
    fn given_a_seen_value_when_cas_is_picked_should_use_it_as_from() {
        let spec = Plan::default_plan().workload;
        let mut generator = Generator::new(&spec, stream(2, "workload"));
        let mut saw_cas = false;
        for _ in 0..300 {
            let op = generator.next_op(0);
            if op.f == "cas" {
                saw_cas = true;
                let from = op.value[0].as_str().unwrap();
                assert!(from.starts_with('v'));
            }
            generator.observe(0, &op, &Outcome::Ok(Value::from("v1")));
        }
        assert!(saw_cas);
    }

    #[test]
    fn given_the_txn_workload_when_generating_should_draw_lengths_in_range_unique_values_and_rotate_keys() {
        let mut spec = crate::plan::builtin::load("reference-txn").unwrap().workload;
        spec.keys = crate::plan::Bounded(2);
        spec.ops_per_key = crate::plan::Bounded(10);
        let mut generator = Generator::new(&spec, stream(3, "workload"));
        let (mut keys, mut values, mut lengths) = (HashSet::new(), HashSet::new(), HashSet::new());
        let mut reads = 0;
        for _ in 0..200 {
            let op = generator.next_op(0);
            assert_eq!(op.f, "txn");
            let micro_ops = op.value.as_array().unwrap();
            lengths.insert(micro_ops.len());
            for micro_op in micro_ops {
                keys.insert(micro_op[1].as_str().unwrap().to_string());
                match micro_op[0].as_str().unwrap() {
                    "r" => {
                        assert!(micro_op[2].is_null());
                        reads += 1;
                    }
                    "append" => assert!(values.insert(micro_op[2].as_i64().unwrap()), "duplicate value"),
                    other => panic!("list-append drew {other}"),
                }
            }
        }
        assert_eq!(lengths, HashSet::from([1, 2, 3, 4]), "txn_length 1..4");
        assert!(reads > 100 && values.len() > 100, "reads and appends both drawn");
        assert!(keys.len() >= 40, "keys rotate every 10 micro-ops: {}", keys.len());
    }
}
