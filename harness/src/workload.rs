//! The register workload: N logical clients issue read / write / cas over a rotating set of keys at a target rate.
//!
//! Jepsen semantics: each client process has at most one op in flight; an op whose outcome is unknown is recorded
//! `info` and its process is retired (a new process id takes over the worker's slot), because the old process might
//! still have an effect at any later time. Writes use unique values, so a read names the write it saw. CAS takes its
//! `from` from the last value this run saw on the key, so many CAS ops can succeed. Keys rotate after a bounded number
//! of ops (Jepsen's `independent`), which keeps every key's history small enough to check fast.

use crate::plan::WorkloadSpec;
use crate::recorder::Recorder;
use crate::system::{Outcome, RegisterClient, System};
use faultline_workloads::history::{Event, EventKind};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    rng: ChaCha8Rng,
    slots: Vec<KeySlot>,
    next_key: u64,
    next_value: u64,
    ops_per_key: u64,
    weights: [u32; 3],
}

impl Generator {
    /// A generator for `spec`.
    pub fn new(spec: &WorkloadSpec, rng: ChaCha8Rng) -> Generator {
        let mix = &spec.mix.value;
        let mut generator = Generator {
            rng,
            slots: Vec::new(),
            next_key: 0,
            next_value: 0,
            ops_per_key: spec.ops_per_key.0,
            weights: [mix.read, mix.write, mix.cas],
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
        format!("k{}", self.next_key - 1)
    }

    /// The next op.
    pub fn next_op(&mut self) -> PlannedOp {
        let slot_index = self.rng.gen_range(0..self.slots.len());
        if self.slots[slot_index].ops >= self.ops_per_key {
            let key = self.fresh_key();
            self.slots[slot_index] = KeySlot {
                key,
                ops: 0,
                last_seen: None,
            };
        }
        let total: u32 = self.weights.iter().sum();
        let mut pick = self.rng.gen_range(0..total);
        let mut f = 0;
        while pick >= self.weights[f] {
            pick -= self.weights[f];
            f += 1;
        }
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

    /// Learns the key's latest value from a completed op (so CAS has a plausible `from`).
    pub fn observe(&mut self, op: &PlannedOp, outcome: &Outcome) {
        let Outcome::Ok(read) = outcome else { return };
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

/// Invokes one op through `client`, recording the invocation and the completion. Returns the outcome.
pub async fn perform(
    recorder: &Recorder,
    client: &dyn RegisterClient,
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
        key: Some(op.key.clone()),
        value,
        error,
    };
    recorder.record(event(EventKind::Invoke, op.value.clone(), home.to_string(), None));
    let (outcome, served_by) = match op.f {
        "read" => client.read(&op.key).await,
        "write" => client.write(&op.key, op.value.as_str().unwrap_or_default()).await,
        _ => {
            let from = op.value.get(0).and_then(Value::as_str).unwrap_or_default();
            let to = op.value.get(1).and_then(Value::as_str).unwrap_or_default();
            client.cas(&op.key, from, to).await
        }
    };
    let node = faultline_faults::process::node_name(served_by);
    let completion = match &outcome {
        Outcome::Ok(read) => {
            let value = if op.f == "read" { read.clone() } else { op.value.clone() };
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

    /// Every key the generator has handed out so far.
    pub fn keys_used(&self) -> Vec<String> {
        let generator = self.generator.lock().expect("generator poisoned");
        (0..generator.next_key).map(|i| format!("k{i}")).collect()
    }

    /// A fresh process id (for retired processes and the final phase).
    pub fn new_process(&self) -> u64 {
        self.next_process.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs worker `worker` against its home node until `stop` turns true. Its in-flight op completes first.
    pub async fn run_worker(
        self: Arc<Self>,
        system: Arc<dyn System>,
        recorder: Recorder,
        worker: u64,
        mut rng: ChaCha8Rng,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let home = worker as usize % system.node_count();
        let home_name = faultline_faults::process::node_name(home);
        let op_timeout = self.spec.op_timeout.duration();
        let mean_gap_s = self.spec.concurrency.0 as f64 / self.spec.rate.0;
        let mut process = worker;
        let mut client = system.register_client(home, op_timeout, process);
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
            let op = self.generator.lock().expect("generator poisoned").next_op();
            let outcome = perform(&recorder, client.as_ref(), process, worker, &home_name, &op).await;
            self.generator
                .lock()
                .expect("generator poisoned")
                .observe(&op, &outcome);
            match outcome {
                Outcome::Ok(_) => self.stats.ok.fetch_add(1, Ordering::Relaxed),
                Outcome::Fail(_) => self.stats.fail.fetch_add(1, Ordering::Relaxed),
                Outcome::Info(_) => {
                    process = self.new_process();
                    client = system.register_client(home, op_timeout, process);
                    self.stats.info.fetch_add(1, Ordering::Relaxed)
                }
            };
            if *stop.borrow() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use faultline_faults::rng::stream;

    #[test]
    fn given_ops_per_key_when_generating_should_rotate_keys_and_keep_values_unique() {
        let mut spec = Plan::default_plan().workload;
        spec.keys = crate::plan::Bounded(2);
        spec.ops_per_key = crate::plan::Bounded(10);
        let mut generator = Generator::new(&spec, stream(1, "workload"));
        let mut per_key = std::collections::HashMap::<String, u64>::new();
        let mut written = std::collections::HashSet::new();
        for _ in 0..200 {
            let op = generator.next_op();
            *per_key.entry(op.key.clone()).or_default() += 1;
            if op.f == "write" {
                assert!(
                    written.insert(op.value.as_str().unwrap().to_string()),
                    "duplicate write value"
                );
            }
            generator.observe(&op, &Outcome::Ok(Value::Null));
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
            let op = generator.next_op();
            if op.f == "cas" {
                saw_cas = true;
                let from = op.value[0].as_str().unwrap();
                assert!(from.starts_with('v'));
            }
            generator.observe(&op, &Outcome::Ok(Value::from("v1")));
        }
        assert!(saw_cas);
    }
}
