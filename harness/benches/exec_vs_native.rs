//! The exec adapter's cost: the same plan and seed run twice against the reference node, once through the native
//! adapter (Rust HTTP clients) and once through the exec adapter (`plans/exec-reference.yaml`: templates, HTTP status
//! probes, one Python client process per logical client speaking JSON lines), measured in the same run. Prints each
//! run's ok ops/s over the fault phase and their ratio (exec / native).
//!
//! `cargo bench -p faultline --bench exec_vs_native` (env: `FAULTLINE_BENCH_SEED`, default 1;
//! `FAULTLINE_BENCH_TIME_LIMIT`, default 30s; `FAULTLINE_BENCH_RATE`, ops/s, default the plan's 100; set it high,
//! e.g. 2000, to measure throughput at saturation instead of at the plan's rate).

mod support;

use std::path::Path;
use support::{run, Phase};

struct Measured {
    ok: u64,
    fail: u64,
    info: u64,
    phase_s: f64,
    verdict: String,
}

impl Measured {
    fn ok_per_s(&self) -> f64 {
        self.ok as f64 / self.phase_s
    }
}

/// Ok/fail/info completions of the fault phase, its length and the run's verdict.
fn measure(run_dir: &Path) -> Measured {
    let phase = Phase::of(run_dir);
    Measured {
        ok: phase.count("ok", None),
        fail: phase.count("fail", None),
        info: phase.count("info", None),
        phase_s: phase.seconds(),
        verdict: phase.verdict,
    }
}

fn main() {
    let seed = std::env::var("FAULTLINE_BENCH_SEED").unwrap_or_else(|_| "1".into());
    let time_limit = std::env::var("FAULTLINE_BENCH_TIME_LIMIT").unwrap_or_else(|_| "30s".into());
    let rate = std::env::var("FAULTLINE_BENCH_RATE").ok();
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
    let exec_text = std::fs::read_to_string(plans.join("exec-reference.yaml")).expect("plans/exec-reference.yaml");
    // The same workload, faults and final phase: the exec plan's, under the default plan's native system section
    // with the exec plan's checkpoint interval. The exec plan's file classes `wal` and `snapshot` are the native
    // adapter's too; its `data` (the superblock) is the native `superblock`.
    let default_text = std::fs::read_to_string(plans.join("default.yaml")).expect("plans/default.yaml");
    let rest = &exec_text[exec_text.find("workload:\n").expect("a workload section")..];
    let head = &default_text[..default_text.find("workload:\n").expect("a workload section")];
    let checkpoints = "--checkpoint-interval-ops, \"300\"";
    assert!(
        exec_text.contains(checkpoints),
        "exec-reference.yaml checkpoints every 300 ops"
    );
    let native_text = format!(
        "{}{}",
        head.replacen(
            "  nodes: 3\n",
            "  nodes: 3\n  args: [\"--checkpoint-interval-ops\", \"300\"]\n",
            1
        ),
        rest.replace("files: data,", "files: superblock,")
    );
    let work = tempfile::tempdir().expect("a temporary folder");
    let with_rate = |text: &str| match &rate {
        Some(rate) => text.replacen("  rate: 100 ", &format!("  rate: {rate} "), 1),
        None => text.to_string(),
    };
    let exec_plan = work.path().join("exec.yaml");
    let exec_text = with_rate(&exec_text).replace("{plan_dir}", &plans.display().to_string());
    std::fs::write(&exec_plan, exec_text).unwrap();
    let native_plan = work.path().join("native.yaml");
    std::fs::write(&native_plan, with_rate(&native_text)).unwrap();

    println!(
        "exec vs native adapter: reference node, seed {seed}, fault phase {time_limit}, rate {}",
        rate.as_deref().unwrap_or("100 (plan)")
    );
    let native = measure(&run(&native_plan, &work.path().join("native"), &seed, &time_limit));
    let exec = measure(&run(&exec_plan, &work.path().join("exec"), &seed, &time_limit));
    for (name, m) in [("native", &native), ("exec", &exec)] {
        println!(
            "  {name:<7} {:>8.1} ok ops/s  ({} ok, {} fail, {} info in {:.1} s; {})",
            m.ok_per_s(),
            m.ok,
            m.fail,
            m.info,
            m.phase_s,
            m.verdict
        );
    }
    println!(
        "  ratio (exec / native ok ops/s): {:.2}",
        exec.ok_per_s() / native.ok_per_s()
    );
}
