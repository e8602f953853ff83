//! Reads on the primary's lease against reads through the log: 3 replicas on loopback, fsync on.
//!
//! Runs the same read load twice, first on a cluster started with `--no-lease-reads` (every `GET /kv` is a VSR op:
//! prepare, a backup's PrepareOk after its fsync, the primary's own fsync, commit), then on a cluster with leases
//! (the default: the primary answers from its state), and prints reads/s and p50/p99 of each and their ratios.
//! `CLIENTS` concurrent clients each read over one keep-alive HTTP/1.1 connection to the primary.
//! Run with `cargo bench -p faultline-node --bench lease_reads`.

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use common::Cluster;
use support::{percentile, Connection};

const CLIENTS: usize = 16;
const KEYS: usize = 100;
const DURATION: Duration = Duration::from_secs(8);

struct Measured {
    reads_per_s: f64,
    p50: Duration,
    p99: Duration,
    lease_reads: u64,
}

fn measure(lease: bool) -> Measured {
    let mut cluster = Cluster::new(3);
    if !lease {
        for args in &mut cluster.extra_args {
            args.push("--no-lease-reads".to_string());
        }
    }
    cluster.start_all();
    let primary = cluster.wait_for_primary(Duration::from_secs(10)).expect("a primary");
    let addr = cluster.nodes[primary as usize].client_addr.clone();
    let mut writer = Connection::open(&addr);
    for key in 0..KEYS {
        assert_eq!(
            writer.request("PUT", &format!("/kv/k{key}"), r#"{"value":"v"}"#),
            Some(200)
        );
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut connection = Connection::open(&addr);
                let mut latencies = Vec::new();
                let mut i = client;
                while started.elapsed() < DURATION {
                    let begin = Instant::now();
                    if connection.request("GET", &format!("/kv/k{}", i % KEYS), "") == Some(200) {
                        latencies.push(begin.elapsed());
                    }
                    i += 1;
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = workers
        .into_iter()
        .flat_map(|worker| worker.join().expect("client thread"))
        .collect();
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    assert!(!latencies.is_empty(), "no read succeeded");
    let lease_reads = cluster
        .status(primary)
        .and_then(|status| status["lease"]["reads_served"].as_u64())
        .unwrap_or(0);
    Measured {
        reads_per_s: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        lease_reads,
    }
}

fn main() {
    let log = measure(false);
    let lease = measure(true);
    println!("faultline-node 3-replica read benchmark (loopback, fsync on, {CLIENTS} clients, {DURATION:?} each)");
    for (name, m) in [("through the log", &log), ("on the lease", &lease)] {
        println!(
            "  {name:<16} {:>8.0} reads/s  p50 {:>9.2?}  p99 {:>9.2?}  (lease reads served: {})",
            m.reads_per_s, m.p50, m.p99, m.lease_reads
        );
    }
    println!(
        "  lease / log:     throughput x{:.1}, p50 x{:.2}, p99 x{:.2}",
        lease.reads_per_s / log.reads_per_s,
        lease.p50.as_secs_f64() / log.p50.as_secs_f64(),
        lease.p99.as_secs_f64() / log.p99.as_secs_f64()
    );
}
