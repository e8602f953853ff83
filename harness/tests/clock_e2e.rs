//! Clock faults end to end: a reference node under libfaketime reads each fault kind's time in its `/status` and real
//! time again after the heal; a run with scripted clock faults of every kind records and heals each; and `plan
//! --check` refuses a clock fault aimed at a binary libfaketime cannot reach (etcd is Go; a static binary).
//!
//! The node of the first test listens on 127.41.0.1 (no other test uses 127.41.x.x); the runs pick their own free
//! loopback addresses.

mod support;

use faultline_faults::clock::faketime::{self, NodeClock};
use faultline_faults::clock::ClockShift;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, SystemTime};
use support::*;

const NODE_ADDR: &str = "127.41.0.1";

/// libfaketime's library, or a skip outside CI (a failure under `CI=true`).
fn library_or_skip() -> Option<std::path::PathBuf> {
    match faketime::library() {
        Ok(library) => Some(library),
        Err(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI needs libfaketime: {why}"
            );
            eprintln!("skipping: {why}");
            None
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The node's `/status` clock against real time: (its realtime minus real time, its monotonic minus its realtime), in
/// ms; real time is the midpoint of the request.
async fn clock_offsets(client: &reqwest::Client) -> (i64, i64) {
    let before = now_ms();
    let status: Value = client
        .get(format!("http://{NODE_ADDR}:20001/status"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .expect("the node answers /status")
        .json()
        .await
        .expect("/status is JSON");
    let after = now_ms();
    let realtime = status["clock"]["realtime_ms"]
        .as_i64()
        .expect("/status has clock.realtime_ms");
    let monotonic = status["clock"]["monotonic_ms"]
        .as_i64()
        .expect("/status has clock.monotonic_ms");
    (realtime - (before + after) / 2, monotonic - realtime)
}

/// Kills the node when the test ends, passing or not.
struct Node(std::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A one-replica reference node on `dir`, its clock driven by `clock`.
fn start_node(dir: &Path, clock: &NodeClock) -> Node {
    let data = dir.join("data");
    let format = faultline()
        .args([
            "node",
            "format",
            "--cluster-id",
            "9",
            "--id",
            "0",
            "--replica-count",
            "1",
            "--data-dir",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(format.status.success(), "{}", String::from_utf8_lossy(&format.stderr));
    let log = std::fs::File::create(dir.join("node.log")).unwrap();
    let child = faultline()
        .args(["node", "run", "--id", "0", "--cluster-id", "9", "--data-dir"])
        .arg(&data)
        .args(["--client-addr", &format!("{NODE_ADDR}:20001")])
        .args(["--peer-addr", &format!("{NODE_ADDR}:21001")])
        .envs(clock.before_spawn(None).expect("the control file is written"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    clock.spawned().expect("the control file is written");
    Node(child)
}

async fn wait_ready(client: &reqwest::Client) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let url = format!("http://{NODE_ADDR}:20001/status");
    while client
        .get(&url)
        .timeout(Duration::from_millis(500))
        .send()
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the node did not answer within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// The guard only orders this file's tests (one cluster at a time); no task of this test waits for it.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_a_node_under_each_clock_fault_when_its_status_is_read_should_show_the_faked_time_then_real_time_after_the_heal(
) {
    let Some(library) = library_or_skip() else { return };
    let _cluster = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let clock = NodeClock::new(dir.path(), library).unwrap();
    let _node = start_node(dir.path(), &clock);
    let client = reqwest::Client::new();
    wait_ready(&client).await;
    // A request takes milliseconds but the machine may be busy: 400 ms of slack on every reading.
    let near = |got: i64, want: i64| (got - want).abs() < 400;
    let (offset, mono_gap) = clock_offsets(&client).await;
    assert!(near(offset, 0), "real time before any fault: {offset} ms off");

    clock.apply(ClockShift::Bump { offset_ms: -30_000 }).unwrap();
    let (offset, bumped_gap) = clock_offsets(&client).await;
    assert!(near(offset, -30_000), "bumped back 30 s: {offset} ms off");
    assert!(
        near(bumped_gap, mono_gap),
        "the monotonic clock moved with it: {mono_gap} then {bumped_gap}"
    );
    clock.heal().unwrap();
    let (offset, _) = clock_offsets(&client).await;
    assert!(near(offset, 0), "real time after the bump's heal: {offset} ms off");

    // The node started seconds before the skew: libfaketime's rate counts from its start, the offset cancels that.
    clock.apply(ClockShift::Skew { rate: 2.0 }).unwrap();
    let (at_start, _) = clock_offsets(&client).await;
    assert!(
        near(at_start, 0),
        "a skew starts from the current time, no jump: {at_start} ms off"
    );
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let (offset, _) = clock_offsets(&client).await;
    assert!((1600..2800).contains(&offset), "2 s at 2x gain 2 s: {offset} ms off");
    clock.heal().unwrap();
    let (offset, _) = clock_offsets(&client).await;
    assert!(near(offset, 0), "real time after the skew's heal: {offset} ms off");

    clock
        .apply(ClockShift::Strobe {
            delta_ms: 60_000,
            period_ms: 10,
        })
        .unwrap();
    let (mut far, mut real) = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while (far == 0 || real == 0) && std::time::Instant::now() < deadline {
        match clock_offsets(&client).await.0 {
            r if near(r, 60_000) => far += 1,
            r if near(r, 0) => real += 1,
            r => panic!("a strobed node reads +60 s or real time, not {r} ms off"),
        }
    }
    assert!(far > 0 && real > 0, "the strobe flipped: {far} far, {real} real");
    clock.heal().unwrap();
    for _ in 0..5 {
        let (offset, _) = clock_offsets(&client).await;
        assert!(near(offset, 0), "real time after the strobe's heal: {offset} ms off");
    }
}

const CLOCK_RUN: &str = "name: clock-e2e
time_limit: 10s
system: {kind: reference, nodes: 3}
workload: {kind: register, concurrency: 3, rate: 50, keys: 2, ops_per_key: 100, mix: {read: 2, write: 2, cas: 1}, op_timeout: 1s}
nemesis:
  process:
    script:
      - {at: 1s, kind: clock, targets: primary, duration: 3s, bump: -800ms}
      - {at: 2s, kind: clock, targets: [n2], duration: 3s, strobe: {delta: 500ms, period: 20ms}}
      - {at: 1500ms, kind: clock, targets: [n3], duration: 4s, skew: 1.05x}
      - {at: 5s, kind: kill, targets: [n3], duration: 1s}
      - {at: 7s, kind: clock, targets: [n1, n2, n3], duration: 10s, bump: +300ms}
final_phase: {recovery_timeout: 20s, convergence_timeout: 20s, boot_timeout: 20s, restart_all: false}
";

#[test]
fn given_scripted_clock_faults_of_every_kind_when_run_should_record_each_change_and_heal_it_and_stay_valid() {
    if library_or_skip().is_none() {
        return;
    }
    let _cluster = one_cluster();
    let dir = tempfile::tempdir().unwrap();
    let plan = write_plan(dir.path(), CLOCK_RUN);
    let store = dir.path().join("store");
    let output = run_plan_with(&store, &plan, &["--seed", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the correct node stays VALID under clock faults: {stderr}"
    );
    let run = latest(&store);
    let events = history(&run);
    let moved: Vec<&Value> = events.iter().filter(|e| e["f"] == "clock").collect();
    let kinds: std::collections::BTreeSet<&str> = moved
        .iter()
        .filter_map(|e| e["value"]["clock"]["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["bump", "skew", "strobe"].into(),
        "every kind was applied: {moved:?}"
    );
    assert!(moved.iter().all(|e| e["value"].get("error").is_none()), "{moved:?}");
    // The last bump moves all three nodes and is still on when the fault phase ends: healed then, like the rest.
    assert_eq!(
        moved.len(),
        6,
        "bump, strobe and skew on one node each, then a bump of all three: {moved:?}"
    );
    for event in &moved {
        let healed = events.iter().any(|e| {
            e["f"] == "clock-heal"
                && e["node"] == event["node"]
                && e["value"]["fault_id"] == event["value"]["fault_id"]
                && e["value"]["clock"] == "real"
        });
        assert!(healed, "{event} has its clock-heal");
    }
    let n3 = std::fs::read_to_string(run.join("nodes/n3/clock.faketime")).unwrap();
    assert_eq!(n3, "+0.000 x1\n", "every control file is back to real time");
    let report = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        report.contains("clock n2 strobe +500 ms every 20 ms"),
        "the report labels the strobe's window"
    );
}

/// `plan --check` of `text` (written to `dir`): its exit code and stderr.
fn check(dir: &Path, text: &str) -> (Option<i32>, String) {
    let plan = write_plan(dir, text);
    let output = faultline().args(["plan", "--check"]).arg(&plan).output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn given_a_clock_fault_aimed_at_etcd_when_checked_should_exit_254_naming_the_go_binary_at_the_faults_line() {
    let etcd = Path::new("/usr/bin/etcd");
    if !etcd.is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI needs etcd-server installed"
        );
        eprintln!("skipping: /usr/bin/etcd is not installed (apt-get install -y etcd-server)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = repo_plan_text("etcd-kill.yaml");
    let (code, stderr) = check(dir.path(), &base);
    assert_eq!(code, Some(0), "the etcd plan without clock faults passes: {stderr}");
    let fault = "      - {kind: clock, targets: one, duration: 1s..3s, bump: -5s..+5s}\n";
    let anchor = "      - {kind: pause, targets: one, duration: 500ms..3s}\n";
    let text = base.replace(anchor, &format!("{anchor}{fault}"));
    let line = text.lines().position(|l| l.contains("kind: clock")).unwrap() + 1;
    let (code, stderr) = check(dir.path(), &text);
    assert_eq!(code, Some(254), "{stderr}");
    assert!(
        stderr.contains("/usr/bin/etcd") && stderr.contains("Go binary"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("plan.yaml:{line}:")),
        "refused at the clock fault's line {line}: {stderr}"
    );
}

#[test]
fn given_a_clock_trigger_on_a_static_node_binary_when_checked_should_exit_254_saying_it_is_statically_linked() {
    // Debian's ldconfig is static-pie (libc-bin, on every Debian system): a stand-in for a static node binary.
    let dir = tempfile::tempdir().unwrap();
    let text = "name: static-clock
time_limit: 10s
system: {kind: reference, nodes: 3, binary: /sbin/ldconfig}
workload: {kind: register, concurrency: 3, rate: 50, keys: 2, ops_per_key: 100, mix: {read: 1, write: 1}, op_timeout: 1s}
nemesis:
  triggers:
    - when: {restarted: any}
      do: {kind: clock, targets: subject, duration: 1s, skew: 1.5x}
";
    let (code, stderr) = check(dir.path(), text);
    assert_eq!(code, Some(254), "{stderr}");
    assert!(
        stderr.contains("/sbin/ldconfig") && stderr.contains("statically linked"),
        "{stderr}"
    );
    assert!(
        stderr.contains("plan.yaml:7:"),
        "refused at the trigger's line: {stderr}"
    );
}
