//! Reaction time of a trigger against the timed schedule, measured in the same run.
//!
//! Baseline: the timed interpreter applying kills at scheduled offsets; its lateness (applied - scheduled) is what
//! a clock-driven fault costs. Triggers: the engine receiving `restarted` observations and killing their subject;
//! its latency (applied - observed) is what reacting to the cluster costs on top of seeing it. Both use the same
//! in-memory lab (no processes), so the numbers are the harness's own overhead.
//!
//! Not included, and bounded by the harness's settings instead: the time from a node's state change to the
//! observer seeing it, at most one observer tick (100 ms by default) plus the probe.
//!
//! `cargo bench -p faultline-faults --bench triggers`. `FAULTLINE_BENCH_FAULTS` sets the faults per side (default 300).

use faultline_faults::fusefs::FsFaults;
use faultline_faults::interpreter::{Families, NoFaults};
use faultline_faults::io::IoLab;
use faultline_faults::network::schedule::{NetworkHolds, NetworkLab};
use faultline_faults::process::{Lab, NodeHolds, ProcessFault, ProcessFaults, Resolved, ScheduledFault, Source};
use faultline_faults::trigger::{Fact, TriggerSpec, Triggers};
use faultline_workloads::history::Nemesis;
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

const GAP_MS: u64 = 10;

/// One node per fault, so that no fault ever finds its node still held by the one before (under load).
struct TimingLab {
    nodes: usize,
    kills: Mutex<Vec<(usize, Instant)>>,
}

impl TimingLab {
    fn new(nodes: usize) -> TimingLab {
        TimingLab {
            nodes,
            kills: Mutex::default(),
        }
    }

    /// When each node was killed.
    fn killed_at(&self, node: usize) -> Instant {
        let kills = self.kills.lock().unwrap();
        kills
            .iter()
            .find(|(n, _)| *n == node)
            .expect("every fault was applied")
            .1
    }
}

impl Lab for TimingLab {
    fn node_count(&self) -> usize {
        self.nodes
    }
    async fn primary(&self) -> Option<usize> {
        Some(0)
    }
    async fn next_primary(&self) -> Option<usize> {
        Some(1)
    }
    async fn kill(&self, node: usize) -> Result<Value, String> {
        self.kills.lock().unwrap().push((node, Instant::now()));
        Ok(json!({}))
    }
    async fn start(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn pause(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn resume(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn lose_unsynced(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn stop(&self, _: usize, _: Duration) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn cut(&self, _: usize, _: &faultline_faults::disk::spec::SurgerySpec) -> Result<Value, String> {
        Ok(json!({}))
    }
    async fn ready_again(&self, _: usize) -> Result<Value, String> {
        Ok(json!({}))
    }
    fn record(&self, _: Nemesis, _: usize, _: Value) {}
    fn record_cluster(&self, _: Nemesis, _: Value) {}
}

impl NetworkLab for TimingLab {
    async fn primary(&self) -> Option<usize> {
        Some(0)
    }
    fn record(&self, _: Nemesis, _: Value) {}
}

impl IoLab for TimingLab {
    async fn set_io_faults(&self, _: usize, _: &FsFaults) -> Result<(), String> {
        Ok(())
    }
    fn crashed(&self, _: usize) -> bool {
        false
    }
    async fn restart(&self, _: usize) {}
    fn record(&self, _: Nemesis, _: usize, _: Value) {}
}

fn percentiles(mut micros: Vec<u64>) -> (u64, u64, u64) {
    micros.sort_unstable();
    let at = |q: f64| micros[((micros.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99), *micros.last().unwrap())
}

async fn timed(faults: usize) -> Vec<u64> {
    let lab = TimingLab::new(faults);
    let schedule: Vec<ScheduledFault> = (0..faults)
        .map(|i| ScheduledFault {
            id: i as u64,
            start_ms: 20 + i as u64 * GAP_MS,
            duration_ms: 2,
            kind: ProcessFault::Kill,
            target: "n1".into(),
            nodes: Resolved::Nodes(vec![i]),
            source: Source::Scripted,
            trigger: None,
            detail: Default::default(),
        })
        .collect();
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let start = Instant::now();
    let mut families = Families {
        process: ProcessFaults::new(&lab, &schedule),
        network: NoFaults,
        io: NoFaults,
    };
    families.run(start, stop).await;
    schedule
        .iter()
        .enumerate()
        .map(|(node, fault)| {
            let due = start + Duration::from_millis(fault.start_ms);
            lab.killed_at(node).duration_since(due).as_micros() as u64
        })
        .collect()
}

async fn triggered(faults: usize) -> Vec<u64> {
    let lab = TimingLab::new(faults);
    let specs: Vec<TriggerSpec> = serde_saphyr::from_str(&format!(
        "- {{when: {{restarted: any}}, cooldown: 1ms, max_fires: {faults}, do: {{kind: kill, targets: subject, duration: 2ms}}}}"
    ))
    .unwrap();
    let (facts_tx, facts) = tokio::sync::broadcast::channel(64);
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let holds = (NodeHolds::new(faults), NetworkHolds::default());
    let mut engine = Triggers::new(&lab, &specs, 1, None, holds, None, 3_600_000);
    let start = Instant::now();
    let feed = async {
        let mut observed = Vec::new();
        for i in 0..faults {
            tokio::time::sleep_until(start + Duration::from_millis(20 + i as u64 * GAP_MS)).await;
            let at = Instant::now();
            observed.push(at);
            facts_tx.send(Fact::Ready { node: i, at }).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop_tx.send(true).unwrap();
        observed
    };
    let ((), observed) = tokio::join!(engine.run(start, stop, facts), feed);
    observed
        .iter()
        .enumerate()
        .map(|(node, seen)| lab.killed_at(node).duration_since(*seen).as_micros() as u64)
        .collect()
}

fn main() {
    let faults: usize = std::env::var("FAULTLINE_BENCH_FAULTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let baseline = percentiles(runtime.block_on(timed(faults)));
    let triggers = percentiles(runtime.block_on(triggered(faults)));
    println!("faults per side: {faults}, one every {GAP_MS} ms");
    println!("{:<34} {:>9} {:>9} {:>9}", "", "p50 us", "p99 us", "max us");
    println!(
        "{:<34} {:>9} {:>9} {:>9}",
        "timed schedule (applied - due)", baseline.0, baseline.1, baseline.2
    );
    println!(
        "{:<34} {:>9} {:>9} {:>9}",
        "trigger (applied - observed)", triggers.0, triggers.1, triggers.2
    );
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    println!(
        "ratio trigger/timed: p50 {:.2}x, p99 {:.2}x",
        ratio(triggers.0, baseline.0),
        ratio(triggers.1, baseline.1)
    );
}
