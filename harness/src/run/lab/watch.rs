//! Watching nodes: each start until it is ready, refuses or crashes, and the observer's status probes and log following.

use super::{BootState, Lab, Observed, Slot, PROBE_TIMEOUT};
use crate::run::recorder::Recorder;
use crate::supervisor::Spawned;
use crate::system::{NodeStatus, Role, System};
use faultline_faults::process::node_name;
use faultline_faults::trigger::{Fact, FactRole};
use faultline_workloads::history::{Lifecycle, Observation};
use faultline_workloads::position::Position;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch, Mutex};

/// How often a starting node is probed.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// Timeout of an observer probe (a paused or cut-off node does not answer).
const OBSERVE_TIMEOUT: Duration = Duration::from_millis(250);
/// A node's progress is recorded at most this often when nothing else about it changed.
const PROGRESS_RECORD_INTERVAL: Duration = Duration::from_secs(1);
/// A node whose durable progress trails the highest fresh one by this much is recorded as `lagging` (coverage's
/// measure; a trigger's `lagging: {by}` has its own): above what probe skew gives at a few hundred ops/s.
const LAG_RECORDED: u64 = 20;
/// How often node logs are followed while triggers listen (see [`Lab::observe`]).
const LOG_FOLLOW_INTERVAL: Duration = Duration::from_millis(5);

impl Lab {
    /// Watches every node until `stop` is set: a status probe every [`System::observe_interval`], changes recorded as
    /// `observation` `status` events (see [`note_status`]); and every new line of its log, recorded as an
    /// `observation` `log` event when it matches one of the adapter's [`System::log_patterns`]. Everything seen goes
    /// to the [`Lab::facts`] listeners (the trigger engine).
    ///
    /// The log is followed on its own clock, apart from the probe (which may wait [`OBSERVE_TIMEOUT`] on a paused
    /// node): every [`LOG_FOLLOW_INTERVAL`] while triggers listen, since a state a log line announces may last only
    /// until the node's next message (a backup that just caught up is a candidate primary until the next prepare,
    /// ~10 ms away at 100 ops/s), else at the probe's pace.
    pub async fn observe(self: Arc<Self>, stop: watch::Receiver<bool>) {
        let mut tasks = tokio::task::JoinSet::new();
        let probe_every = self.system.observe_interval().min(Duration::from_millis(100));
        for node in 0..self.node_count() {
            let (lab, mut stop_follow) = (self.clone(), stop.clone());
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(LOG_FOLLOW_INTERVAL);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut log = LogFollower::default();
                let mut next_follow = tokio::time::Instant::now();
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stop_follow.wait_for(|stop| *stop) => return,
                    }
                    // Triggers subscribe once the fault phase starts: ask on every tick.
                    let now = tokio::time::Instant::now();
                    if lab.facts.receiver_count() == 0 && now < next_follow {
                        continue;
                    }
                    next_follow = now + probe_every;
                    for line in log.new_lines(&lab.log_paths[node]) {
                        lab.note_log_line(node, line);
                    }
                }
            });
            let (lab, mut stop) = (self.clone(), stop.clone());
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(probe_every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut next_probe = tokio::time::Instant::now();
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stop.wait_for(|stop| *stop) => return,
                    }
                    let now = tokio::time::Instant::now();
                    if lab.boot_state(node) != BootState::Ready || now < next_probe || !lab.system.reports_status() {
                        continue;
                    }
                    next_probe = now + lab.system.observe_interval();
                    if let Ok(status) = lab.system.probe(node, OBSERVE_TIMEOUT).await {
                        // A probe that raced a kill answers for the old process: only a running node's counts.
                        if lab.boot_state(node) == BootState::Ready {
                            note_status(lab.system.as_ref(), &lab.recorder, &lab.observed, node, &status);
                            lab.note_members(&status);
                            lab.send_status(node, &status);
                        }
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// One new line of a node's log: recorded when it matches an adapter pattern, sent to listeners.
    fn note_log_line(&self, node: usize, line: String) {
        let listened = self.facts.receiver_count() > 0;
        if !listened && self.system.log_patterns().is_empty() {
            return;
        }
        let line = faultline_workloads::checker::strip_ansi(&line);
        let patterns: Vec<&'static str> = self
            .system
            .log_patterns()
            .iter()
            .filter(|(_, needle)| line.contains(needle.as_ref()))
            .map(|(name, _)| *name)
            .collect();
        for pattern in &patterns {
            let shown: String = line.trim().chars().take(300).collect();
            self.recorder.observation(
                Observation::Log,
                Some(&node_name(node)),
                json!({"pattern": pattern, "line": shown}),
            );
        }
        if listened {
            let _ = self.facts.send(Fact::Log {
                node,
                at: tokio::time::Instant::now(),
                line,
                patterns,
            });
        }
    }

    fn send_status(&self, node: usize, status: &NodeStatus) {
        if self.facts.receiver_count() == 0 {
            return;
        }
        let progress = self.system.progress(status);
        let role = match status.role {
            _ if claims_primary(status, node) => FactRole::Primary,
            Role::Backup => FactRole::Backup,
            Role::Primary | Role::Other => FactRole::Other,
        };
        let _ = self.facts.send(Fact::Status {
            node,
            at: tokio::time::Instant::now(),
            role,
            view: progress.view,
            durable: progress.durable,
            numbers: progress
                .numbers
                .iter()
                .map(|(name, v)| (name.to_string(), *v))
                .collect(),
        });
    }
}

/// Whether `node`'s status says it is the primary, and names no other node as primary.
pub(super) fn claims_primary(status: &NodeStatus, node: usize) -> bool {
    status.role == Role::Primary && status.primary.is_none_or(|p| p == node)
}

/// Takes one status answer: keeps its durable value (with when) and records an `observation` `status` event when the
/// node's role, primary or view changed, or its durable progress moved and its last record is older than
/// [`PROGRESS_RECORD_INTERVAL`].
pub(super) fn note_status(
    system: &dyn System,
    recorder: &Recorder,
    all: &[Arc<std::sync::Mutex<Observed>>],
    node: usize,
    status: &NodeStatus,
) {
    let progress = system.progress(status);
    let position = system.durable_position(status);
    let now = Instant::now();
    // The highest durable value another node reported in the last second (one lock at a time: no lock order); a
    // vector clock counts by its sum here, a rough measure of lag.
    let highest_other = all
        .iter()
        .enumerate()
        .filter(|(other, _)| *other != node)
        .filter_map(|(_, observed)| {
            let observed = observed.lock().expect("observations lock");
            let (at, durable) = observed.samples.back()?;
            (now.duration_since(*at) <= Duration::from_secs(1)).then_some(durable.total())
        })
        .max();
    let behind = match (progress.durable, highest_other) {
        (Some(own), Some(highest)) => highest.saturating_sub(own),
        _ => 0,
    };
    let lagging = behind >= LAG_RECORDED;
    let mut observed = all[node].lock().expect("observations lock");
    observed.last_answer = Some(now);
    if let Some(durable) = position {
        observed.samples.push_back((now, durable));
        // Keep what the settle rule can still pick: samples up to settle + a margin before the newest answer.
        let keep = system.durable_settle() + Duration::from_secs(2);
        while observed.samples.len() > 1 && observed.samples[1].0 + keep < now {
            observed.samples.pop_front();
        }
    }
    let key = (status.role, status.primary, progress.view, lagging);
    let changed = observed.last_key != Some(key);
    let moved = observed
        .last_record
        .is_none_or(|(at, durable)| durable != progress.durable && now.duration_since(at) >= PROGRESS_RECORD_INTERVAL);
    if !changed && !moved {
        return;
    }
    observed.last_key = Some(key);
    observed.last_record = Some((now, progress.durable));
    drop(observed);
    let role = match status.role {
        Role::Primary => "primary",
        Role::Backup => "backup",
        Role::Other => "other",
    };
    let numbers: serde_json::Map<String, Value> = progress
        .numbers
        .iter()
        .map(|(name, value)| (name.to_string(), json!(value)))
        .collect();
    recorder.observation(
        Observation::Status,
        Some(&node_name(node)),
        json!({
            "role": role,
            "primary": status.primary.map(node_name),
            "view": progress.view,
            "durable": progress.durable,
            "progress": numbers,
            "lagging": lagging,
            "behind": behind,
        }),
    );
}

/// Reads what a node's log gained since the last call, whole lines only (a partial last line waits for its end).
/// The log is the harness's own file (stdout and stderr of every process of the node), so it only grows.
#[derive(Default)]
struct LogFollower {
    offset: u64,
    partial: Vec<u8>,
}

impl LogFollower {
    /// At most this much per call, so a node that floods its log cannot stall the observer.
    const CHUNK: u64 = 256 << 10;

    fn new_lines(&mut self, path: &std::path::Path) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(path) else {
            return Vec::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            self.offset = 0; // replaced (not expected): start over
            self.partial.clear();
        }
        if len == self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let read = file.take(Self::CHUNK).read_to_end(&mut self.partial).unwrap_or(0);
        self.offset += read as u64;
        let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        let rest = self.partial.split_off(last_newline + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        String::from_utf8_lossy(&complete).lines().map(str::to_string).collect()
    }
}

/// Records what a node's process `pid` that is being stopped (or that stopped on its own) had durably reached: the
/// newest durable position it reported at least [`System::durable_settle`] before its last answer (a number, or a
/// vector clock as a JSON object). Nothing when it never reported one since it was started. The pid pairs the stop
/// with the boot of the process after it (the durability check), whatever order the two are recorded in.
pub(super) fn record_last_durable(
    system: &dyn System,
    recorder: &Recorder,
    observed: &std::sync::Mutex<Observed>,
    (node, pid): (usize, i32),
    cause: &str,
) {
    let settle = system.durable_settle();
    let picked = {
        let observed = observed.lock().expect("observations lock");
        let Some(last_answer) = observed.last_answer else {
            return;
        };
        observed
            .samples
            .iter()
            .rev()
            .find(|(at, _)| *at + settle <= last_answer)
            .cloned()
    };
    let Some((at, durable)) = picked else {
        return;
    };
    recorder.observation(
        Observation::LastDurable,
        Some(&node_name(node)),
        json!({
            "durable": durable.to_json(),
            "age_ms": at.elapsed().as_millis() as u64,
            "settle_ms": settle.as_millis() as u64,
            "cause": cause,
            "pid": pid,
        }),
    );
}

/// Status probes asked of a booted node for what it kept, when its boot log does not say.
const KEPT_PROBES_MAX: u32 = 5;

/// What a booted node says it kept (a number or a vector clock), and where it said it: its boot log's line, or (a
/// system without one) its first status answer now that it is ready.
async fn kept(system: &dyn System, node: usize, boot_log: &str) -> Option<(Position, String)> {
    if let Some(recovered) = system.recovered(boot_log) {
        return Some((recovered.recovered, recovered.line));
    }
    if !system.kept_from_status() {
        return None;
    }
    for _ in 0..KEPT_PROBES_MAX {
        if let Ok(status) = system.probe(node, PROBE_TIMEOUT).await {
            let kept = system.kept_position(&status)?;
            let said = format!("its first status answer after the boot: {kept}");
            return Some((kept, said));
        }
        tokio::time::sleep(PROBE_INTERVAL).await;
    }
    None
}

/// Follows one started process: ready or refused or timed out, and later an unexpected exit.
#[allow(clippy::too_many_arguments)]
pub(super) async fn watch_node(
    system: Arc<dyn System>,
    recorder: Recorder,
    slot: Arc<Mutex<Slot>>,
    (observed, facts): (Arc<std::sync::Mutex<Observed>>, broadcast::Sender<Fact>),
    node: usize,
    spawned: Spawned,
    (log_path, log_offset): (PathBuf, u64),
    boot_timeout: Duration,
) {
    let name = node_name(node);
    let mut exited = spawned.exited.clone();
    let started = tokio::time::Instant::now();
    let boot = async {
        loop {
            if system.ready(node, PROBE_TIMEOUT).await {
                return true;
            }
            if started.elapsed() > boot_timeout {
                return false;
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    };
    let mut ready = tokio::select! {
        ready = boot => Some(ready),
        _ = exited.wait_for(|e| e.is_some()) => None,
    };
    let publish = |state: BootState| async {
        let slot = slot.lock().await;
        // A newer start owns the slot now: stay quiet.
        if slot.spawned.as_ref().map(|s| s.pid) == Some(spawned.pid) {
            slot.boot.send_replace(state);
        }
    };
    // Ready (`late`: after its boot timeout): recorded with what it kept, told to whoever waits for it.
    let booted = |late: bool| {
        let (recorder, name, system, log_path, publish, facts) =
            (&recorder, &name, &system, &log_path, &publish, &facts);
        let pid = spawned.pid;
        async move {
            let mut value = json!({"pid": pid, "boot_ms": started.elapsed().as_millis() as u64});
            if late {
                value["late"] = json!(true);
            }
            recorder.lifecycle(Lifecycle::BootOk, Some(name), value);
            if let Some((recovered, line)) = kept(system.as_ref(), node, &log_since(log_path, log_offset)).await {
                recorder.observation(
                    Observation::Recovered,
                    Some(name),
                    json!({"recovered": recovered.to_json(), "line": line, "pid": pid}),
                );
            }
            publish(BootState::Ready).await;
            let _ = facts.send(Fact::Ready {
                node,
                at: tokio::time::Instant::now(),
            });
        }
    };
    match ready {
        Some(true) => booted(false).await,
        Some(false) => {
            recorder.lifecycle(
                Lifecycle::BootTimeout,
                Some(&name),
                json!({"pid": spawned.pid, "timeout_ms": boot_timeout.as_millis() as u64}),
            );
            publish(BootState::TimedOut).await;
            // Probing goes on until the process exits: whether a node that missed its timeout became ready later
            // is what tells a boot that hung from one that waited for a quorum the nemesis had taken away (the
            // boot check reads it), and a node that comes up late serves and is faulted like any other.
            let late = async {
                loop {
                    tokio::time::sleep(PROBE_INTERVAL).await;
                    if system.ready(node, PROBE_TIMEOUT).await {
                        return;
                    }
                }
            };
            let became_ready = tokio::select! {
                _ = late => true,
                _ = exited.wait_for(|e| e.is_some()) => false,
            };
            if became_ready {
                booted(true).await;
                ready = Some(true);
            }
        }
        None => {}
    }
    let _ = exited.wait_for(|e| e.is_some()).await;
    let exit = exited.borrow().expect("exited is set");
    {
        let slot = slot.lock().await;
        // Killed on purpose, or already replaced: a kill followed at once by a start (the restart-all) resets
        // `stopping` for the new process before this watcher may have looked, and the old process's SIGKILL must
        // not be reported as the node dying on its own.
        if slot.stopping || slot.spawned.as_ref().map(|s| s.pid) != Some(spawned.pid) {
            return;
        }
    }
    if ready == Some(true) {
        record_last_durable(system.as_ref(), &recorder, &observed, (node, spawned.pid), "crashed");
    }
    let _ = facts.send(Fact::Down {
        node,
        at: tokio::time::Instant::now(),
    });
    // This process's own output only: a refusal line an earlier life of the node wrote (before a wipe, say) is not
    // why this one exited.
    let own = log_since(&log_path, log_offset);
    let mut start = own.len().saturating_sub(8192);
    while !own.is_char_boundary(start) {
        start += 1;
    }
    let tail = &own[start..];
    let state = match (ready, system.boot_refusal_line(tail)) {
        (None, Some(line)) => {
            recorder.lifecycle(
                Lifecycle::BootRefused,
                Some(&name),
                json!({"pid": spawned.pid, "exit": exit.to_string(), "line": line}),
            );
            BootState::Refused(line)
        }
        _ => {
            let last_lines: Vec<&str> = tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let mut value = json!({"pid": spawned.pid, "exit": exit.to_string(), "was_ready": ready == Some(true), "log_tail": last_lines});
            if exit == crate::supervisor::Exit::HostLost {
                value["host_lost"] = json!(true);
            }
            // What the process itself said it died of: a program that catches SIGSEGV and then aborts exits on
            // SIGABRT, and only its log names the segmentation fault.
            if let Some(line) = faultline_workloads::nodelog::crash_line(tail) {
                value["crash_line"] = json!(line);
            }
            if ready != Some(true) {
                if let Some(line) = system.join_failure_line(tail) {
                    value["join_failure"] = json!(line);
                }
            }
            recorder.lifecycle(Lifecycle::Crashed, Some(&name), value);
            BootState::Crashed(format!("{exit}: {}", last_lines.last().unwrap_or(&"")))
        }
    };
    publish(state).await;
}

/// What a node's log holds from `offset` on (at most 1 MiB: a boot log is short).
fn log_since(path: &std::path::Path, offset: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const BOOT_LOG_BYTES_MAX: u64 = 1 << 20;
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let _ = file.seek(SeekFrom::Start(offset));
    let mut bytes = Vec::new();
    let _ = file.take(BOOT_LOG_BYTES_MAX).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last few KiB of a node's log.
pub fn log_tail(path: &std::path::Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(8192)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
