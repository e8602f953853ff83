//! Benchmark: the report of a synthetic 1,000,000-op run (100 keys, 10 workers, kill/pause faults, a crash):
//! generation time, file size, and headless Chromium load time (`--dump-dom` wall time, browser start included).
//!
//! `cargo bench -p faultline-reports --bench report_1m` (set `FAULTLINE_BENCH_OPS` for another size). Targets: < 10 s,
//! < 25 MB, < 5 s.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

const WORKERS: u64 = 10;
const KEYS: u64 = 100;
const NODES: u64 = 3;

/// A tiny deterministic generator (xorshift), so the benchmark history is the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Line {
    time_ns: u64,
    text: String,
}

fn main() {
    let ops: u64 = std::env::var("FAULTLINE_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let tmp = support::temp_dir("bench");
    let dir = tmp.path().join("default/20260101T000000Z-seed1");
    let started = Instant::now();
    let history_bytes = write_store(&dir, ops);
    println!(
        "synthetic store: {ops} ops, {:.1} MB history.jsonl, written in {:.2?}",
        history_bytes as f64 / 1e6,
        started.elapsed()
    );

    let started = Instant::now();
    let page = faultline_reports::write_report(&dir).expect("the report is written");
    let generate = started.elapsed();
    let size = std::fs::metadata(&page).unwrap().len();
    println!("report.html generated in {generate:.2?} (target < 10 s)");
    println!("report.html size {:.2} MB (target < 25 MB)", size as f64 / 1e6);
    let started = Instant::now();
    faultline_reports::write_index(tmp.path()).unwrap();
    println!("index.html generated in {:.2?}", started.elapsed());

    if let Some(chromium) = support::chromium() {
        let (dom, elapsed) = support::dump_dom(&chromium, &page);
        let status = support::element_text(&dom, "render-status").unwrap_or("(no status)");
        println!("chromium --dump-dom load {elapsed:.2?} (target < 5 s, browser start included); page: {status}");
        assert!(status.starts_with("ok:"), "the page did not render: {status}");
        if let Some(out) = std::env::var_os("FAULTLINE_SCREENSHOTS") {
            let png = Path::new(&out).join("faultline-report-1m.png");
            support::screenshot(&chromium, &page, &png);
            println!("screenshot {}", png.display());
        }
    }
}

/// Writes history.jsonl (one line per event, in time order), node logs, plan.yaml and results.json; returns the
/// history size in bytes.
fn write_store(dir: &Path, ops: u64) -> u64 {
    std::fs::create_dir_all(dir).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut lines: Vec<Line> = Vec::with_capacity(ops as usize * 2 + 1000);
    let per_worker = ops / WORKERS;
    // ~1 ms think time + ~2 ms latency per op per worker: about 3,300 ops/s in all.
    let mut end_ns = 0;
    let mut next_process = WORKERS;
    for worker in 0..WORKERS {
        let mut t: u64 = 200_000_000 + worker * 100_000;
        let mut process = worker;
        for i in 0..per_worker {
            t += 200_000 + rng.below(1_600_000);
            let key = rng.below(KEYS);
            let node = rng.below(NODES) + 1;
            let (f, value) = match rng.below(10) {
                0..4 => ("read", String::new()),
                4..8 => ("write", format!(",\"value\":\"v{worker}-{i}\"")),
                _ => (
                    "cas",
                    format!(",\"value\":[\"v{}\",\"v{worker}-{i}\"]", rng.below(1000)),
                ),
            };
            let roll = rng.below(1000);
            let (kind, latency, error) = match roll {
                0..5 => ("info", 1_500_000_000, ",\"error\":\"timed out after 1500 ms\""),
                5..60 => ("fail", 100_000 + rng.below(400_000), ",\"error\":\"not primary\""),
                _ => (
                    "ok",
                    300_000 + rng.below(3_000_000) + if roll > 990 { 50_000_000 } else { 0 },
                    "",
                ),
            };
            let common = format!(
                "\"process\":{process},\"worker\":{worker},\"node\":\"n{node}\",\"f\":\"{f}\",\"key\":\"k{key}\""
            );
            lines.push(Line {
                time_ns: t,
                text: format!("\"kind\":\"invoke\",{common}{}", if f == "read" { "" } else { &value }),
            });
            t += latency;
            let result = if f == "read" && kind == "ok" {
                format!(",\"value\":\"v{}\"", rng.below(1000))
            } else {
                value
            };
            lines.push(Line {
                time_ns: t,
                text: format!("\"kind\":\"{kind}\",{common}{result}{error}"),
            });
            if kind == "info" {
                process = next_process;
                next_process += 1;
            }
        }
        end_ns = end_ns.max(t);
    }
    let crash_at = add_faults(&mut lines, &mut rng, end_ns);
    lines.sort_by_key(|l| l.time_ns);
    let anchor = support::ANCHOR_UNIX_NS;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("history.jsonl")).unwrap());
    let meta = json!({"run_id": "bench", "plan": "default", "plan_digest": "00", "seed": 1, "system": "reference",
        "faultline_version": "0.1.0", "faultline_binary_xxh3": "aa", "node_binary": "faultline-node",
        "node_binary_xxh3": "bb", "wall_clock_start": support::rfc3339(anchor), "wall_clock_unix_ns": anchor,
        "repro": support::repro("default", 1)});
    writeln!(
        out,
        "{{\"index\":0,\"time_ns\":0,\"kind\":\"meta\",\"f\":\"run-start\",\"value\":{meta}}}"
    )
    .unwrap();
    let mut bytes = 0u64;
    let mut line = String::new();
    for (i, l) in lines.iter().enumerate() {
        line.clear();
        let _ = writeln!(line, "{{\"index\":{},\"time_ns\":{},{}}}", i + 1, l.time_ns, l.text);
        bytes += line.len() as u64;
        out.write_all(line.as_bytes()).unwrap();
    }
    let last = lines.last().map_or(0, |l| l.time_ns) + 1_000_000;
    writeln!(
        out,
        "{{\"index\":{},\"time_ns\":{last},\"kind\":\"meta\",\"f\":\"run-end\"}}",
        lines.len() + 1
    )
    .unwrap();
    out.flush().unwrap();
    write_logs(dir, anchor, end_ns, crash_at);
    write_results(dir, ops, last / 1_000_000);
    bytes
}

/// Kill and pause windows every ~20 s on a random node, and one crash of n3; returns the crash time.
fn add_faults(lines: &mut Vec<Line>, rng: &mut Rng, end_ns: u64) -> u64 {
    let mut t = 5_000_000_000;
    let mut id = 0;
    while t + 10_000_000_000 < end_ns {
        let node = rng.below(NODES) + 1;
        let (start, stop) = if rng.below(2) == 0 {
            ("kill", "start")
        } else {
            ("pause", "resume")
        };
        let length = 1_000_000_000 + rng.below(4_000_000_000);
        lines.push(Line {
            time_ns: t,
            text: format!("\"kind\":\"nemesis\",\"node\":\"n{node}\",\"f\":\"{start}\",\"value\":{{\"fault_id\":{id},\"source\":\"targeted\",\"target\":\"one\"}}"),
        });
        lines.push(Line {
            time_ns: t + length,
            text: format!("\"kind\":\"nemesis\",\"node\":\"n{node}\",\"f\":\"{stop}\",\"value\":{{\"fault_id\":{id}}}"),
        });
        id += 1;
        t += 10_000_000_000 + rng.below(20_000_000_000);
    }
    let crash_at = end_ns / 2 + 1;
    lines.push(Line {
        time_ns: crash_at,
        text: "\"kind\":\"lifecycle\",\"node\":\"n3\",\"f\":\"crashed\",\"value\":{\"exit\":\"signal: 6 (SIGABRT)\"}"
            .into(),
    });
    lines.push(Line {
        time_ns: crash_at + 2_000_000_000,
        text: "\"kind\":\"lifecycle\",\"node\":\"n3\",\"f\":\"start\",\"value\":{}".into(),
    });
    crash_at
}

fn write_logs(dir: &Path, anchor: u64, end_ns: u64, crash_at: u64) {
    for node in 1..=NODES {
        let node_dir = dir.join(format!("nodes/n{node}"));
        std::fs::create_dir_all(&node_dir).unwrap();
        let mut text = format!(
            "=== faultline: starting `faultline-node` at {} ===\n",
            support::rfc3339(anchor)
        );
        let mut t = 0;
        while t < end_ns {
            let _ = writeln!(
                text,
                "{}  INFO commit advanced op={}",
                support::rfc3339(anchor + t),
                t / 1_000_000
            );
            if node == 3 && t <= crash_at && t + 50_000_000 > crash_at {
                let _ = writeln!(
                    text,
                    "{}  ERROR thread 'main' panicked at src/replica.rs:42",
                    support::rfc3339(anchor + t)
                );
            }
            t += 50_000_000;
        }
        std::fs::write(node_dir.join("node.log"), text).unwrap();
    }
}

fn write_results(dir: &Path, ops: u64, duration_ms: u64) {
    let keys: Vec<_> = (0..KEYS)
        .map(|k| json!({"key": format!("k{k}"), "ops": ops / KEYS, "verdict": "valid", "elapsed_ms": 10, "cache_entries": ops / KEYS}))
        .collect();
    let lin = json!({"verdict": "valid", "reason": format!("all {ops} operations on {KEYS} key(s) are linearizable"),
        "model": "cas-register", "ops": ops, "elapsed_ms": 900, "keys": keys});
    let results = json!({
        "schema_version": 1, "faultline_version": "0.1.0", "verdict": "invalid",
        "reason": "boot: n3 exited on its own (signal: 6 (SIGABRT))", "plan": "default", "system": "reference", "seed": 1,
        "started_at": support::rfc3339(support::ANCHOR_UNIX_NS), "duration_ms": duration_ms, "store_dir": dir,
        "repro": support::repro("default", 1),
        "checks": [
            {"name": "linearizability", "verdict": "valid", "reason": lin["reason"], "details": lin},
            {"name": "boot", "verdict": "invalid", "reason": "n3 exited on its own (signal: 6 (SIGABRT))",
             "details": {"n3": {"boots": 1, "refusals": [], "problems": ["n3 exited on its own"]}}},
        ],
        "counts": {"invoke": ops, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0},
    });
    std::fs::write(dir.join("results.json"), serde_json::to_vec_pretty(&results).unwrap()).unwrap();
}
