//! Read leases under clock faults: three real replicas, each under libfaketime (its monotonic and realtime clocks
//! moved through a control file, as faultline's clock faults move them), the primary's links cut by proxies.
//!
//! The schedule: n1 (primary of view 0) serves a read on its lease; its links to n2 and n3 are cut; n1's clock is
//! bumped back by the bound's jump J, and n2's and n3's forward by J (one jump per node per promise: inside the
//! documented bound), and n1's again by J once every promise has passed, so a lease that ignores the bound stays
//! valid on n1's clock well after n2 and n3 have elected a new primary. A write then commits in the new view, and n1
//! is read until its mutant lease has surely ended. The correct n1 never answers the read (its lease, shortened by
//! the drift margin, ended before any promise did, so the read goes to the log, which cannot commit: 504, or 503
//! once its queue is full; tokio's timers follow the faked clock, so after a bump back a short deadline fires at
//! once); the `lease-ignores-drift` n1 answers it with the value from before the write: a stale read.
//!
//! libfaketime's control file takes offsets in seconds (`-0.8s`); `ms` is NOT a unit there (`-800ms` reads as
//! minutes). Without libfaketime the tests say so and pass, except under `CI=true`, where that is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{http, Cluster, LinkProxy};

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// The promise (the view-change timeout's lower bound) of every replica here.
const PROMISE_MS: u64 = 3000;
/// J: the bound's jump, passed as `--clock-jump-max-ms`; every bump below is one jump of this size, at most one per
/// node in any span of one promise. The rates stay equal (`--clock-drift-max-percent 0`), so the correct lease is
/// `PROMISE_MS - 2 * JUMP_MS` = 200 ms.
const JUMP_MS: u64 = 1400;
/// n1's clock is bumped back by J this often (a little more than one promise: inside the bound).
const BUMP_EVERY_MS: u64 = PROMISE_MS + 100;

/// Clusters of this file run one at a time: the schedule hinges on a few seconds of wall-clock time.
static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Whether libfaketime is installed; under `CI=true` its absence fails the test.
fn libfaketime_present() -> bool {
    if Path::new(LIBFAKETIME).exists() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{LIBFAKETIME} is missing: install the libfaketime package (apt-get install libfaketime)"
    );
    eprintln!("skipped: {LIBFAKETIME} is missing (install the libfaketime package)");
    false
}

/// A replica's libfaketime control file.
struct FakeClock {
    path: PathBuf,
    offset_ms: i64,
}

impl FakeClock {
    fn new(dir: &Path, id: u8) -> FakeClock {
        let clock = FakeClock {
            path: dir.join(format!("faketime-n{}.rc", id + 1)),
            offset_ms: 0,
        };
        clock.write();
        clock
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), LIBFAKETIME.into()),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("FAKETIME_TIMESTAMP_FILE".into(), self.path.display().to_string()),
        ]
    }

    /// Jumps the clock by `delta_ms` (both the monotonic and the realtime clock).
    fn bump(&mut self, delta_ms: i64) {
        self.offset_ms += delta_ms;
        self.write();
    }

    fn write(&self) {
        let sign = if self.offset_ms < 0 { '-' } else { '+' };
        let magnitude = self.offset_ms.unsigned_abs();
        let text = format!("{sign}{}.{:03}s\n", magnitude / 1000, magnitude % 1000);
        // Written whole and renamed, so that a replica never reads half a line.
        let partial = self.path.with_extension("partial");
        std::fs::write(&partial, text).expect("write the faketime control file");
        std::fs::rename(&partial, &self.path).expect("rename the faketime control file");
    }
}

fn status_field(cluster: &Cluster, id: u8, pointer: &str) -> Option<serde_json::Value> {
    cluster.status(id)?.pointer(pointer).cloned()
}

fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// What n1 answered while cut off, after the new view committed a write.
#[derive(Debug)]
struct Outcome {
    /// Reads n1 had served on its lease before the cut (the lease was in use).
    lease_reads_before_cut: u64,
    /// n1's monotonic clock minus n2's, as `/status` reported them after the bumps.
    monotonic_skew_ms: i64,
    /// Values n1 answered (status 200) for the key after the new view acknowledged the new value.
    answers_after_write: Vec<serde_json::Value>,
    /// Reads of n1 answered after the write, by HTTP status.
    statuses_after_write: std::collections::BTreeMap<u16, usize>,
}

fn cut_off_primary_with_bumped_clocks(bug: Option<&str>) -> Outcome {
    let _one = ONE_CLUSTER_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::new(3);
    cluster.view_change_timeout_ms = PROMISE_MS;
    cluster.heartbeat_interval_ms = Some(100);
    let clock_dir = tempfile::tempdir().expect("tempdir");
    let mut clocks: Vec<FakeClock> = (0..3).map(|id| FakeClock::new(clock_dir.path(), id)).collect();
    for id in 0..3u8 {
        cluster.env[id as usize] = clocks[id as usize].env();
        cluster.extra_args[id as usize].extend([
            "--clock-jump-max-ms".to_string(),
            JUMP_MS.to_string(),
            "--clock-drift-max-percent".to_string(),
            "0".to_string(),
        ]);
        if let Some(bug) = bug {
            cluster.extra_args[id as usize].extend(["--bug".to_string(), bug.to_string()]);
        }
    }
    // Every link to and from n1 goes through a proxy that can be cut; n2 <-> n3 stays direct.
    let mut links = Vec::new();
    for (from, to) in [(0u8, 1u8), (0, 2), (1, 0), (2, 0)] {
        let proxy = LinkProxy::spawn(cluster.nodes[to as usize].peer_addr.clone());
        cluster.dial.insert((from, to), proxy.address.clone());
        links.push(proxy);
    }
    cluster.start_all();
    assert_eq!(
        cluster.wait_for_primary(Duration::from_secs(15)),
        Some(0),
        "n1 leads view 0"
    );
    assert!(
        cluster.put("k", "old", Duration::from_secs(10)),
        "the first write commits"
    );
    let n1 = cluster.nodes[0].client_addr.clone();
    assert!(
        wait_until(Duration::from_secs(10), || {
            status_field(&cluster, 0, "/lease/held") == Some(serde_json::json!(true))
        }),
        "n1 holds a lease: {:?}",
        cluster.status(0)
    );
    // Reads on the lease (the status is published after the loop iteration that answered, hence the wait).
    let lease_reads = |cluster: &Cluster| {
        status_field(cluster, 0, "/lease/reads_served")
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    assert!(
        wait_until(Duration::from_secs(10), || {
            let read = http(&n1, "GET", "/kv/k", None, &[]).expect("n1 answers");
            assert_eq!(
                (read.status, read.body["value"].clone()),
                (200, serde_json::json!("old"))
            );
            wait_until(Duration::from_millis(200), || lease_reads(&cluster) >= 1)
        }),
        "n1 serves a read on its lease: {:?}",
        cluster.status(0)
    );
    let lease_reads_before_cut = lease_reads(&cluster);

    let jump = JUMP_MS as i64;
    let cut_at = Instant::now();
    for link in &links {
        link.cut();
    }
    clocks[0].bump(-jump);
    clocks[1].bump(jump);
    clocks[2].bump(jump);
    let skew = |cluster: &Cluster| -> Option<i64> {
        let n1 = status_field(cluster, 0, "/clock/monotonic_ms")?.as_i64()?;
        let n2 = status_field(cluster, 1, "/clock/monotonic_ms")?.as_i64()?;
        Some(n1 - n2)
    };
    let monotonic_skew_ms = skew(&cluster).expect("clock readings in /status");

    // n2 and n3 elect a primary once their promises end; the new value is written there.
    // Bumps back at 0, 1 and 2 periods after the cut: a lease of the whole promise stays valid on n1's clock until
    // about 2.4 promises after the cut (with a gap), while n2 and n3 time out within 1.5 promises of it.
    let mut bumps_left = 2;
    let mut next_bump = cut_at + Duration::from_millis(BUMP_EVERY_MS);
    let mut write_acked = false;
    let write_deadline = cut_at + Duration::from_secs(15);
    while !write_acked && Instant::now() < write_deadline {
        for id in [1u8, 2] {
            let address = cluster.nodes[id as usize].client_addr.clone();
            let headers = [("X-Faultline-Deadline-Ms", "500".to_string())];
            if let Some(response) = http(&address, "PUT", "/kv/k", Some(r#"{"value":"new"}"#), &headers) {
                write_acked |= response.status == 200;
            }
        }
        if bumps_left > 0 && Instant::now() >= next_bump {
            // One jump per promise: inside the bound.
            clocks[0].bump(-jump);
            bumps_left -= 1;
            next_bump += Duration::from_millis(BUMP_EVERY_MS);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(write_acked, "n2 and n3 commit a write in a new view");

    // Read n1 until a lease that ignored the bound would have ended on its clock too (each bump back extends it by
    // one jump), bumping as scheduled.
    let mut answers_after_write = Vec::new();
    let mut statuses_after_write = std::collections::BTreeMap::new();
    let read_until = cut_at + Duration::from_millis(2 * BUMP_EVERY_MS + PROMISE_MS);
    while Instant::now() < read_until {
        let headers = [("X-Faultline-Deadline-Ms", "200".to_string())];
        if let Some(response) = http(&n1, "GET", "/kv/k", None, &headers) {
            *statuses_after_write.entry(response.status).or_insert(0) += 1;
            if response.status == 200 {
                answers_after_write.push(response.body["value"].clone());
            }
        }
        if bumps_left > 0 && Instant::now() >= next_bump {
            clocks[0].bump(-jump);
            bumps_left -= 1;
            next_bump += Duration::from_millis(BUMP_EVERY_MS);
        }
    }
    Outcome {
        lease_reads_before_cut,
        monotonic_skew_ms,
        answers_after_write,
        statuses_after_write,
    }
}

#[test]
fn given_clock_jumps_within_the_bound_when_a_cut_off_primary_is_read_after_a_new_view_writes_should_not_answer() {
    if !libfaketime_present() {
        return;
    }
    let outcome = cut_off_primary_with_bumped_clocks(None);
    assert!(outcome.lease_reads_before_cut >= 1, "{outcome:?}");
    // n1 is J behind real time, n2 J ahead: /status shows the faked clocks.
    let expected = -2 * JUMP_MS as i64;
    assert!(
        (outcome.monotonic_skew_ms - expected).abs() < 400,
        "n1's monotonic clock minus n2's: {} ms, expected about {expected} ms",
        outcome.monotonic_skew_ms
    );
    assert!(!outcome.statuses_after_write.is_empty(), "n1 was read: {outcome:?}");
    eprintln!("{outcome:?}");
    assert!(
        outcome.answers_after_write.is_empty(),
        "the cut-off primary answered a read after a newer view committed a write: {:?}",
        outcome.answers_after_write
    );
}

#[test]
fn given_lease_ignores_drift_when_a_cut_off_primary_is_read_after_a_new_view_writes_should_serve_the_stale_value() {
    if !libfaketime_present() {
        return;
    }
    let outcome = cut_off_primary_with_bumped_clocks(Some("lease-ignores-drift"));
    assert!(outcome.lease_reads_before_cut >= 1, "{outcome:?}");
    assert!(
        outcome.answers_after_write.contains(&serde_json::json!("old")),
        "the mutant's lease outlives the promises: n1 serves the value from before the new view's write: {outcome:?}"
    );
}
