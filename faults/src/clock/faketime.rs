//! One node's clock through libfaketime: the control file faultline rewrites at each clock fault, and the
//! environment that makes the node read it.
//!
//! **What libfaketime 0.9.10 (Debian's `libfaketime`) does, found by experiment** on a small C program printing
//! `clock_gettime` through libc next to the raw syscall, and on `faultline-node`:
//!
//! - `LD_PRELOAD=.../faketime/libfaketimeMT.so.1` (the thread-safe build: the node is multi-threaded) with
//!   `FAKETIME_TIMESTAMP_FILE=<file>` reads the fake-time spec from that file. It caches the spec for 10 s by
//!   default (`FAKETIME_CACHE_DURATION`, whole seconds, 1 at least); `FAKETIME_NO_CACHE=1` re-reads the file at every
//!   clock call, which a strobe with a 10 ms period needs. The cost of that read is what `benches/clock.rs` in the
//!   harness measures. A missing or empty file means real time.
//! - The spec `+1.250` or `-30.000` (seconds: a bare number, or with `s`; `m` means *minutes*, so `-800ms` is not
//!   800 milliseconds; a `.` decimal point in the C locale the node runs in) is a relative
//!   offset: every clock the node reads is real time plus the offset, from the next call on. Fractions and negative
//!   offsets work.
//! - `CLOCK_MONOTONIC` is faked too unless `FAKETIME_DONT_FAKE_MONOTONIC=1`: it moves with every offset, *backwards
//!   too* (a negative bump makes the node's monotonic clock go back, which real kernels never do; that is the fault).
//!   It also counts from the epoch, not from boot: libfaketime bases it on the real-time clock, so a node's
//!   `monotonic_ms` reads like a wall clock. Only differences of it mean anything, as with any monotonic clock.
//! - A rate, `+0 x1.5`, applies to the time since *the process started* (libfaketime's start time, taken when it
//!   loads), not since the rate was written: switching from `+0` to `+0 x2` after 2 s jumps the clock forward by 2 s.
//!   Faked time is `t + offset + (t - start) * (rate - 1)`. So a skew that starts from the node's current time writes
//!   the offset that cancels the jump: `offset = (start - anchor) * (rate - 1)` for a skew anchored at `anchor`.
//!   faultline takes `start` as the moment the spawn returned (the process has exec'd; libfaketime's constructor
//!   runs as the loader maps it, milliseconds later, or hundreds on a loaded machine: the skew then starts with a
//!   jump of that gap times `rate - 1`, 3 ms for a 1.1x skew of a node that took 30 ms to load), and rewrites the
//!   file around every restart of a skewed node, whose new process starts its own count. libfaketime's start is
//!   when it loads, not its first clock call (a program that spins 1 s on raw syscalls before its first
//!   `clock_gettime` under `+0 x2` reads +1 s). `FAKETIME_XRESET=1` is libfaketime's own answer, but with it an offset of `+0`
//!   after a skew keeps the time the skew gained instead of returning to real time, so a heal would not heal.
//! - Sleeps (`nanosleep`, `sleep`) are scaled by the rate too: a 1 s sleep at `x2` lasts 0.5 s.
//! - A spec without a rate keeps the rate in force: `+0` after `+0 x2` goes on at twice real speed. Every line
//!   faultline writes carries its rate; the heal, `+0.000 x1`, returns the process to real time at once.
//! - libfaketime sets up shared memory only for `faketime`'s wrapper (`FAKETIME_SHARED`); under `LD_PRELOAD` alone it
//!   leaves nothing in `/dev/shm` behind a killed node.
//!
//! The file is written atomically (a temporary file renamed over it), so a node never reads half a spec.

use super::ClockShift;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The control file's name in a node's folder.
pub const CONTROL_FILE: &str = "clock.faketime";

/// Where Debian's packages put libfaketime, by multiarch triplet.
const LIBRARY_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime",
    "/usr/lib/aarch64-linux-gnu/faketime",
    "/usr/lib/faketime",
    "/usr/local/lib/faketime",
];

/// The library a node preloads (the thread-safe build).
const LIBRARY: &str = "libfaketimeMT.so.1";

/// Finds libfaketime, or says how to install it.
pub fn library() -> Result<PathBuf, String> {
    LIBRARY_DIRS
        .iter()
        .map(|dir| Path::new(dir).join(LIBRARY))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            format!(
                "clock faults need libfaketime ({LIBRARY} in {}): apt-get install -y libfaketime",
                LIBRARY_DIRS.join(" or ")
            )
        })
}

/// The spec line for an offset and a rate, as libfaketime parses it: always with its rate, since a spec without one
/// keeps the rate of the spec before it.
pub fn spec_line(offset_ms: i64, rate: f64) -> String {
    let seconds = offset_ms as f64 / 1000.0;
    format!("{seconds:+.3} x{rate}\n")
}

/// The offset to write for a skew at `rate` anchored at `anchor`, for a process that started at `start`: the one
/// that makes libfaketime's `t + offset + (t - start)(rate - 1)` equal `t + (t - anchor)(rate - 1)`.
pub fn skew_offset_ms(start: SystemTime, anchor: SystemTime, rate: f64) -> i64 {
    let signed_ms = |a: SystemTime, b: SystemTime| match a.duration_since(b) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    };
    (signed_ms(start, anchor) as f64 * (rate - 1.0)).round() as i64
}

/// Writes `contents` to `path` atomically (a temporary beside it, renamed over it).
fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let temporary = path.with_extension("faketime.tmp");
    std::fs::write(&temporary, contents)?;
    std::fs::rename(&temporary, path)
}

/// What the node's clock does now.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Current {
    Real,
    Offset(i64),
    Skew { rate: f64, anchor: SystemTime },
}

struct State {
    current: Current,
    /// When the node's current process was spawned (libfaketime's start, within milliseconds).
    process_start: SystemTime,
    /// The task flipping a strobe.
    strobe: Option<tokio::task::JoinHandle<()>>,
    /// Bumped at every apply and heal: a strobe task that lost the race with its abort (it may be waiting for the
    /// lock on another thread) sees a newer epoch and writes nothing.
    epoch: u64,
}

/// One node's clock: its control file and what the fault in force does.
#[derive(Clone)]
pub struct NodeClock {
    file: PathBuf,
    library: PathBuf,
    state: Arc<Mutex<State>>,
}

impl NodeClock {
    /// A clock at real time whose control file lives in `node_dir`, preloading `library`.
    pub fn new(node_dir: &Path, library: PathBuf) -> std::io::Result<NodeClock> {
        let file = node_dir.join(CONTROL_FILE);
        write_atomically(&file, &spec_line(0, 1.0))?;
        Ok(NodeClock {
            file,
            library,
            state: Arc::new(Mutex::new(State {
                current: Current::Real,
                process_start: SystemTime::now(),
                strobe: None,
                epoch: 0,
            })),
        })
    }

    /// The control file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("node clock lock")
    }

    /// Called right before the node's process is spawned: notes its start and rewrites the file for it (a skew's
    /// offset depends on it). Returns the environment the process needs, `LD_PRELOAD` joined to `preload` (the
    /// command's own, if any).
    pub fn before_spawn(&self, preload: Option<&str>) -> Result<Vec<(String, String)>, String> {
        let mut state = self.lock();
        state.process_start = SystemTime::now();
        self.write(&state)?;
        let library = self.library.display().to_string();
        let preload = match preload.filter(|p| !p.is_empty()) {
            Some(other) => format!("{library}:{other}"),
            None => library,
        };
        Ok(vec![
            ("LD_PRELOAD".into(), preload),
            ("FAKETIME_TIMESTAMP_FILE".into(), self.file.display().to_string()),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
        ])
    }

    /// Called right after the spawn returned (the process has exec'd; libfaketime loads now): notes that as its start,
    /// a closer estimate than [`NodeClock::before_spawn`]'s on a busy machine (loading a large binary took 330 ms
    /// under load in one test run), and rewrites the file if a skew depends on it.
    pub fn spawned(&self) -> Result<(), String> {
        let mut state = self.lock();
        state.process_start = SystemTime::now();
        match state.current {
            Current::Skew { .. } => self.write(&state),
            _ => Ok(()),
        }
    }

    fn write(&self, state: &State) -> Result<(), String> {
        let line = match state.current {
            Current::Real => spec_line(0, 1.0),
            Current::Offset(offset_ms) => spec_line(offset_ms, 1.0),
            Current::Skew { rate, anchor } => spec_line(skew_offset_ms(state.process_start, anchor, rate), rate),
        };
        write_atomically(&self.file, &line).map_err(|e| format!("writing {}: {e}", self.file.display()))
    }

    /// Applies `shift` (the node's clock must be real: one clock fault at a time); returns what to record beyond the
    /// shift itself (the control file). A strobe
    /// flips on a task of the current tokio runtime until [`NodeClock::heal`].
    pub fn apply(&self, shift: ClockShift) -> Result<Value, String> {
        let mut state = self.lock();
        if let Some(task) = state.strobe.take() {
            task.abort();
        }
        state.epoch += 1;
        state.current = match shift {
            ClockShift::Bump { offset_ms } => Current::Offset(offset_ms),
            ClockShift::Strobe { delta_ms, .. } => Current::Offset(delta_ms),
            ClockShift::Skew { rate } => Current::Skew {
                rate,
                anchor: SystemTime::now(),
            },
        };
        self.write(&state)?;
        if let ClockShift::Strobe { delta_ms, period_ms } = shift {
            let epoch = state.epoch;
            state.strobe = Some(tokio::spawn(strobe(self.clone(), epoch, delta_ms, period_ms)));
        }
        Ok(json!({"file": self.file}))
    }

    /// Returns the node's clock to real time; returns what to record (what it healed from).
    pub fn heal(&self) -> Result<Value, String> {
        let mut state = self.lock();
        if let Some(task) = state.strobe.take() {
            task.abort();
        }
        let before = match state.current {
            Current::Real => json!({}),
            Current::Offset(offset_ms) => json!({"offset_ms_before": offset_ms}),
            Current::Skew { rate, anchor } => {
                let skewed_ms = skew_offset_ms(SystemTime::now(), anchor, rate);
                json!({"offset_ms_before": skewed_ms, "rate_before": rate})
            }
        };
        state.epoch += 1;
        state.current = Current::Real;
        self.write(&state)?;
        let mut value = json!({"clock": "real"});
        if let (Some(into), Value::Object(before)) = (value.as_object_mut(), before) {
            into.extend(before);
        }
        Ok(value)
    }
}

/// Flips `clock` between `+delta_ms` (set by the caller) and real time every `period_ms`, until aborted.
async fn strobe(clock: NodeClock, epoch: u64, delta_ms: i64, period_ms: u64) {
    let period = Duration::from_millis(period_ms.max(1));
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let mut state = clock.lock();
        if state.epoch != epoch {
            return;
        }
        state.current = match state.current {
            Current::Offset(0) => Current::Offset(delta_ms),
            _ => Current::Offset(0),
        };
        if let Err(error) = clock.write(&state) {
            tracing::warn!("strobe: {error}");
        }
    }
}
