//! Scale of the log checker: a clean history of 1,000,000 appends (4 logs, 8 producers, 4 consumers reading forward
//! up to 100 entries at a time and 1% of the time from 0 again, 5% `info` and 2% `fail` appends, two paged final reads of every log) checked for every
//! anomaly, then the same history with the tail of one final read cut off (about 10,000 lost appends: the anomaly
//! paths and the per-kind cap under load). Prints generation and check times and peak RSS.
//!
//! `cargo bench -p faultline-workloads --bench log_check` (`-- 100000` for another number of appends)

#[path = "../tests/support/log_generate.rs"]
mod log_generate;

mod support;

use faultline_workloads::{check_log, LogCheckOptions, Verdict};
use log_generate::{log_history, LogShape};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::json;
use std::time::Instant;
use support::peak_rss_mib;

fn main() {
    let appends: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let shape = LogShape {
        producers: 8,
        consumers: 4,
        appends,
        logs: 4,
        info_chance: 0.05,
        fail_chance: 0.02,
        rewind_chance: 0.01,
        read_limit_max: 100,
        final_reads: 2,
        final_page: 1000,
    };
    let started = Instant::now();
    let mut generated = log_history(&mut StdRng::seed_from_u64(11), &shape);
    println!(
        "generated {} appends, {} reads, {} events in {:.2} s",
        generated.appends.len(),
        generated.reads.len(),
        generated.history.events.len(),
        started.elapsed().as_secs_f64()
    );

    let options = LogCheckOptions::default();
    let mut runs_s = Vec::new();
    let mut result = None;
    for _ in 0..3 {
        let started = Instant::now();
        result = Some(check_log(&generated.history, &options));
        runs_s.push(started.elapsed().as_secs_f64());
    }
    let result = result.expect("three runs");
    let clean_s = runs_s.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
    println!(
        "clean: {} in {clean_s:.2} s, best of {runs_s:.2?} ({} entries read, {:.0} appends/s)",
        result.verdict,
        result.stats.entries_read,
        appends as f64 / clean_s
    );

    // Cut the last 10 pages of the first log's first final read: its end moves back by 10,000 entries.
    let finals: Vec<_> = generated
        .reads
        .iter()
        .filter(|r| r.is_final && r.log == "log0")
        .collect();
    let pages = finals.len() / 2;
    let cut = pages.saturating_sub(10).max(1) - 1;
    let new_end = generated.history.events[finals[cut].complete_pos].value["from"]
        .as_u64()
        .unwrap_or(0);
    for page in &finals[cut..pages] {
        let value = &mut generated.history.events[page.complete_pos].value;
        value["entries"] = json!([]);
        value["end"] = json!(new_end);
    }
    let started = Instant::now();
    let broken = check_log(&generated.history, &options);
    let broken_s = started.elapsed().as_secs_f64();
    assert_eq!(broken.verdict, Verdict::Invalid);
    println!(
        "broken: {} in {broken_s:.2} s, counts {:?}, {} anomalies kept",
        broken.verdict,
        broken.counts,
        broken.anomalies.len()
    );
    println!("peak RSS {:.0} MiB", peak_rss_mib());
}
