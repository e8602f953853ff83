//! 3-replica write throughput and latency on loopback, fsync on.
//!
//! Starts three real `faultline-node` processes, then runs `CLIENTS` concurrent clients for `DURATION`, each
//! doing `PUT /kv/{key}` over one keep-alive HTTP/1.1 connection to the primary, and prints ops/s and p50/p99.
//! Run with `cargo bench -p faultline-node`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::Cluster;

const CLIENTS: usize = 16;
const DURATION: Duration = Duration::from_secs(10);

/// One keep-alive connection; returns the status of each request.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    fn open(addr: &str) -> Connection {
        let stream = TcpStream::connect(addr).expect("connect to the primary");
        stream.set_nodelay(true).expect("nodelay");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        Connection {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        }
    }

    fn put(&mut self, key: &str, value: &str) -> Option<u16> {
        let body = format!("{{\"value\":\"{value}\"}}");
        let request = format!(
            "PUT /kv/{key} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.writer.write_all(request.as_bytes()).ok()?;
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).ok()?;
        let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).ok()?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    content_length = value.trim().parse().ok()?;
                }
            }
        }
        let mut body = vec![0u8; content_length];
        self.reader.read_exact(&mut body).ok()?;
        Some(status)
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index]
}

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
                    match connection.put(&format!("c{client}-{}", i % 1000), &i.to_string()) {
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
