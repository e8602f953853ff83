//! 3-replica write throughput and latency on loopback, fsync on.
//!
//! Starts three real `faultline-node` processes, then runs `CLIENTS` concurrent clients for `DURATION`, each
//! doing `PUT /kv/{key}` over one keep-alive HTTP/1.1 connection to the primary, and prints ops/s and p50/p99.
//! Run with `cargo bench -p faultline-node`.

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use common::Cluster;
use support::{percentile, Connection};

const CLIENTS: usize = 16;
const DURATION: Duration = Duration::from_secs(10);

fn main() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    let primary = cluster.wait_for_primary(Duration::from_secs(10)).expect("a primary");
    let addr = cluster.nodes[primary as usize].client_addr.clone();
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut connection = Connection::open(&addr);
                let mut latencies = Vec::new();
                let mut errors = 0u64;
                let mut i = 0u64;
                while started.elapsed() < DURATION {
                    let begin = Instant::now();
                    let body = format!("{{\"value\":\"{i}\"}}");
                    match connection.request("PUT", &format!("/kv/c{client}-{}", i % 1000), &body) {
                        Some(200) => latencies.push(begin.elapsed()),
                        _ => errors += 1,
                    }
                    i += 1;
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut errors = 0;
    for worker in workers {
        let (mut some, failed) = worker.join().expect("client thread");
        latencies.append(&mut some);
        errors += failed;
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    assert!(!latencies.is_empty(), "no write succeeded");
    println!("faultline-node 3-replica write benchmark (loopback, fsync on, {CLIENTS} clients, {elapsed:.1?})");
    println!("  writes ok:   {} ({errors} errors)", latencies.len());
    println!(
        "  throughput:  {:.0} writes/s",
        latencies.len() as f64 / elapsed.as_secs_f64()
    );
    println!("  latency p50: {:.2?}", percentile(&latencies, 0.50));
    println!("  latency p99: {:.2?}", percentile(&latencies, 0.99));
    println!("  latency max: {:.2?}", latencies[latencies.len() - 1]);
    assert!(
        cluster.wait_converged(Duration::from_secs(10)),
        "replicas converge after the benchmark"
    );
}
