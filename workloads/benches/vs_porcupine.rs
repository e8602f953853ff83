//! faultline's checker against porcupine-rs (Porcupine's published algorithm in Rust) on Porcupine's own test data:
//! same parsed histories (parsing excluded, conversion to porcupine-rs operations excluded), same machine, one run.
//!
//! `cargo bench -p faultline-workloads --features porcupine --bench vs_porcupine`

#[path = "../tests/support/porcupine.rs"]
mod porcupine;

use faultline_workloads::{check_history, load_history_file, CheckOptions, History, ModelKind, Verdict};
use porcupine_rs::{Model, Operation};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/porcupine-test-data");
    assert!(dir.is_dir(), "Porcupine's test data is missing at {}", dir.display());
    dir
}

fn load(file: &str) -> History {
    load_history_file(&data_dir().join(file), None).unwrap_or_else(|e| panic!("{e}"))
}

/// Medians of timings of `ours` and `theirs`, run alternately (so a busy machine slows both alike), at least 3 runs
/// each and more for fast inputs.
fn median_times(mut ours: impl FnMut(), mut theirs: impl FnMut()) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    let once = time(&mut ours) + time(&mut theirs);
    let runs = (Duration::from_millis(1500).as_nanos() / once.as_nanos().max(1)).clamp(3, 50) as usize;
    let (mut a, mut b): (Vec<Duration>, Vec<Duration>) =
        (0..runs).map(|_| (time(&mut ours), time(&mut theirs))).unzip();
    a.sort();
    b.sort();
    (a[runs / 2], b[runs / 2])
}

struct Row {
    name: String,
    ours: Duration,
    ours_one_thread: Duration,
    theirs: Duration,
}

fn faultline(histories: &[History], model: ModelKind, opts: &CheckOptions, expected: &[bool]) {
    for (h, want) in histories.iter().zip(expected) {
        let v = check_history(h, model, opts).verdict;
        assert_eq!(v == Verdict::Valid, *want, "faultline verdict changed");
    }
}

fn porcupine_all<M: Model>(ops: &[Vec<Operation<M>>], expected: &[bool]) {
    for (o, want) in ops.iter().zip(expected) {
        assert_eq!(porcupine_rs::check_operations(o), *want, "porcupine-rs verdict changed");
    }
}

fn compare<M: Model>(
    name: &str,
    histories: &[History],
    model: ModelKind,
    partition_by_key: bool,
    convert: fn(&History) -> Vec<Operation<M>>,
) -> Row {
    let opts = CheckOptions {
        timeout: Duration::from_secs(120),
        partition_by_key,
        ..CheckOptions::default()
    };
    let one_thread = CheckOptions {
        parallelism: 1,
        ..opts.clone()
    };
    let expected: Vec<bool> = histories
        .iter()
        .map(|h| check_history(h, model, &opts).verdict == Verdict::Valid)
        .collect();
    let ops: Vec<Vec<Operation<M>>> = histories.iter().map(convert).collect();
    let (ours, theirs) = median_times(
        || faultline(histories, model, &opts, &expected),
        || porcupine_all(&ops, &expected),
    );
    let (ours_one_thread, _) = median_times(|| faultline(histories, model, &one_thread, &expected), || {});
    Row {
        name: name.to_string(),
        ours,
        ours_one_thread,
        theirs,
    }
}

fn main() {
    let table = std::fs::read_to_string(data_dir().join("expected-verdicts.tsv")).expect("expected-verdicts.tsv");
    let etcd: Vec<History> = table
        .lines()
        .filter(|l| l.starts_with("jepsen/") && (l.contains("\ttrue\t") || l.contains("\tfalse\t")))
        .map(|l| load(l.split('\t').next().unwrap_or_default()))
        .collect();
    assert_eq!(etcd.len(), 102);
    let mut rows = vec![compare(
        "etcd: all 102 logs",
        &etcd,
        ModelKind::CasRegister,
        true,
        porcupine::register_ops,
    )];
    for name in ["c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad"] {
        let h = [load(&format!("kv/{name}.txt"))];
        rows.push(compare(
            &format!("kv {name}"),
            &h,
            ModelKind::Kv,
            true,
            porcupine::kv_ops::<porcupine::Kv>,
        ));
    }
    for name in ["c10-ok", "c10-bad"] {
        let h = [load(&format!("kv/{name}.txt"))];
        rows.push(compare(
            &format!("kv {name} unpartitioned"),
            &h,
            ModelKind::Kv,
            false,
            porcupine::kv_ops::<porcupine::KvNoPartition>,
        ));
    }
    println!(
        "{:<28} {:>14} {:>14} {:>14} {:>9} {:>9}",
        "input", "faultline", "faultline 1t", "porcupine-rs", "ratio", "ratio 1t"
    );
    let (mut ours, mut one, mut theirs) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for r in &rows {
        print_row(&r.name, r.ours, r.ours_one_thread, r.theirs);
        ours += r.ours;
        one += r.ours_one_thread;
        theirs += r.theirs;
    }
    print_row("total", ours, one, theirs);
    println!(
        "ratio = porcupine-rs time / faultline time (higher is better for faultline); 1t = faultline on one thread"
    );
}

fn print_row(name: &str, ours: Duration, one: Duration, theirs: Duration) {
    let ratio = |d: Duration| theirs.as_secs_f64() / d.as_secs_f64().max(1e-9);
    println!(
        "{name:<28} {:>12.3}ms {:>12.3}ms {:>12.3}ms {:>8.1}x {:>8.1}x",
        ours.as_secs_f64() * 1e3,
        one.as_secs_f64() * 1e3,
        theirs.as_secs_f64() * 1e3,
        ratio(ours),
        ratio(one)
    );
}
