//! The lab: the running cluster of one run. It starts, kills, pauses and resumes nodes (only processes it spawned),
//! watches each start until the node is ready or refuses to boot, notices nodes that die on their own, and records
//! all of it in the history.

use crate::recorder::Recorder;
use crate::supervisor::{signal_group, Spawned, Supervisor};
use crate::system::{NodeStatus, Role, System};
use faultline_faults::fusefs::{FaultFs, FaultFsHandle, FaultFsOptions, FsFaults};
use faultline_faults::network::netns::NetnsLab;
use faultline_faults::process::node_name;
use faultline_faults::trigger::{newest_claimant, Fact, FactRole};
use faultline_workloads::history::{Lifecycle, Nemesis, Observation};
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch, Mutex};

/// Probe timeout for readiness and role queries.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// How often a starting node is probed.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// Bound on waiting for a killed process to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout of an observer probe (a paused or cut-off node does not answer).
const OBSERVE_TIMEOUT: Duration = Duration::from_millis(250);
/// Timeout of the fresh probe right before the harness stops a node: short, so a paused node delays its kill little.
const LAST_PROBE_TIMEOUT: Duration = Duration::from_millis(50);
/// A node's progress is recorded at most this often when nothing else about it changed.
const PROGRESS_RECORD_INTERVAL: Duration = Duration::from_secs(1);
/// A node whose durable progress trails the highest fresh one by this much is recorded as `lagging` (coverage's
/// measure; a trigger's `lagging: {by}` has its own): above what probe skew gives at a few hundred ops/s.
const LAG_RECORDED: u64 = 20;
/// How often node logs are followed while triggers listen (see [`Lab::observe`]).
const LOG_FOLLOW_INTERVAL: Duration = Duration::from_millis(5);
/// How many observations the trigger engine may fall behind before it misses some.
const FACTS_CAPACITY: usize = 4096;

/// Where a node is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootState {
    /// Not started, or stopped by the harness.
    Stopped,
    /// Started, not ready yet.
    Starting,
    /// Answering probes.
    Ready,
    /// Exited before it was ready, with its refusal line.
    Refused(String),
    /// Exited on its own (before or after being ready), not refusing to boot.
    Crashed(String),
    /// Not ready within the boot timeout.
    TimedOut,
}

/// What the observer knows about one node since it was last started.
#[derive(Default)]
struct Observed {
    /// Durable values the node reported, with when (pruned to what [`System::durable_settle`] needs).
    samples: VecDeque<(Instant, u64)>,
    /// When the node last answered a probe.
    last_answer: Option<Instant>,
    /// Role, primary, view and lagging flag of the last recorded status.
    last_key: Option<(Role, Option<usize>, Option<u64>, bool)>,
    /// Durable value of the last recorded status, and when it was recorded.
    last_record: Option<(Instant, Option<u64>)>,
}

struct Slot {
    spawned: Option<Spawned>,
    /// Length of the node's log when this process was started: what it wrote since is its boot log.
    log_offset: u64,
    /// Set while the harness itself stops the node, so its exit is not a crash.
    stopping: bool,
    /// SIGSTOPped by the nemesis.
    paused: bool,
    boot: watch::Sender<BootState>,
}

/// The running cluster.
pub struct Lab {
    system: Arc<dyn System>,
    supervisor: Supervisor,
    recorder: Recorder,
    slots: Vec<Arc<Mutex<Slot>>>,
    boot_rx: Vec<watch::Receiver<BootState>>,
    log_paths: Vec<PathBuf>,
    boot_timeout: Duration,
    /// When set, every node is launched inside its own namespace of this lab.
    netns: Option<Arc<NetnsLab>>,
    /// The fault filesystem mounted over each node's data dir, when the plan asks for one.
    fault_fs: Vec<Arc<std::sync::Mutex<Option<FaultFsHandle>>>>,
    /// What the observer saw of each node.
    observed: Vec<Arc<std::sync::Mutex<Observed>>>,
    /// What the observer sees, for the trigger engine (sent only while someone listens).
    facts: broadcast::Sender<Fact>,
}

impl Lab {
    /// A lab for `system`, node logs at `log_paths[i]`.
    pub fn new(
        system: Arc<dyn System>,
        supervisor: Supervisor,
        recorder: Recorder,
        log_paths: Vec<PathBuf>,
        boot_timeout: Duration,
    ) -> Lab {
        let mut slots = Vec::new();
        let mut boot_rx = Vec::new();
        let observed = (0..system.node_count()).map(|_| Arc::default()).collect();
        for _ in 0..system.node_count() {
            let (tx, rx) = watch::channel(BootState::Stopped);
            slots.push(Arc::new(Mutex::new(Slot {
                spawned: None,
                log_offset: 0,
                stopping: false,
                paused: false,
                boot: tx,
            })));
            boot_rx.push(rx);
        }
        Lab {
            system,
            supervisor,
            recorder,
            slots,
            boot_rx,
            log_paths,
            boot_timeout,
            netns: None,
            fault_fs: Vec::new(),
            observed,
            facts: broadcast::channel(FACTS_CAPACITY).0,
        }
    }

    /// A new listener to what the observer sees: statuses, nodes becoming ready or going down, log lines.
    pub fn facts(&self) -> broadcast::Receiver<Fact> {
        self.facts.subscribe()
    }

    /// Mounts the fault filesystem over every node's data dir, backed by `<data dir>.backing`.
    pub fn mount_fault_fs(&mut self, run_tag: &str, options: FaultFsOptions) -> anyhow::Result<()> {
        faultline_faults::fusefs::fuse_available().map_err(anyhow::Error::msg)?;
        for node in 0..self.system.node_count() {
            let mountpoint = self.system.data_dir(node);
            let backing = mountpoint.with_extension("backing");
            std::fs::create_dir_all(&mountpoint)?;
            std::fs::create_dir_all(&backing)?;
            let handle = FaultFs::mount_with(&backing, &mountpoint, run_tag, options)
                .map_err(|e| anyhow::anyhow!("mounting the fault filesystem for {}: {e}", node_name(node)))?;
            self.fault_fs.push(Arc::new(std::sync::Mutex::new(Some(handle))));
        }
        Ok(())
    }

    /// Drops a stopped node's unsynced writes (power loss); the record of what was lost.
    pub async fn lose_unsynced_node(&self, node: usize) -> Result<Value, String> {
        let Some(handle) = self.fault_fs.get(node).cloned() else {
            return Err("no fault filesystem is mounted (plan: disk: {fault_fs: true})".into());
        };
        tokio::task::spawn_blocking(move || {
            let guard = handle
                .lock()
                .map_err(|_| "fault filesystem handle poisoned".to_string())?;
            let fs = guard.as_ref().ok_or("the fault filesystem is unmounted")?;
            serde_json::to_value(fs.lose_unsynced()).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Sets (or, with empty faults, clears) the I/O faults of a node's fault filesystem.
    pub fn set_io_faults(&self, node: usize, faults: &FsFaults) -> Result<(), String> {
        let handle = self.fault_fs.get(node).ok_or("no fault filesystem is mounted")?;
        let guard = handle
            .lock()
            .map_err(|_| "fault filesystem handle poisoned".to_string())?;
        let fs = guard.as_ref().ok_or("the fault filesystem is unmounted")?;
        fs.set_faults(faults).map_err(|e| e.to_string())
    }

    /// Unmounts every fault filesystem (nodes must be stopped). Unmounting keeps unsynced data: a clean shutdown.
    pub async fn unmount_fault_fs(&self) {
        for (node, handle) in self.fault_fs.iter().enumerate() {
            let handle = handle.clone();
            let result =
                tokio::task::spawn_blocking(move || handle.lock().ok().and_then(|mut h| h.take()).map(|h| h.unmount()))
                    .await;
            if let Ok(Some(Err(e))) = result {
                eprintln!("faultline: unmounting {}'s fault filesystem: {e}", node_name(node));
            }
        }
    }

    /// Launches every node inside its own namespace of `netns` (`ip netns exec`, which execs: same pid and group).
    pub fn launch_inside(&mut self, netns: Arc<NetnsLab>) {
        self.netns = Some(netns);
    }

    /// The system adapter.
    pub fn system(&self) -> &Arc<dyn System> {
        &self.system
    }

    /// The history recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Node count.
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// Starts a stopped node and watches it boot in the background. Returns details to record.
    pub async fn start_node(&self, node: usize) -> Result<Value, String> {
        let mut slot = self.slots[node].lock().await;
        if slot.spawned.as_ref().is_some_and(|s| s.exited.borrow().is_none()) {
            return Err(format!("{} is already running", node_name(node)));
        }
        let mut command = self.system.launch(node);
        if let Some(netns) = &self.netns {
            let (program, args) = netns.wrap_command(node, &command.program, &command.args);
            command.program = program;
            command.args = args;
        }
        let log_offset = std::fs::metadata(&self.log_paths[node]).map(|m| m.len()).unwrap_or(0);
        *self.observed[node].lock().expect("observations lock") = Observed::default();
        let spawned = self
            .supervisor
            .spawn(command, self.log_paths[node].clone())
            .await
            .map_err(|e| format!("cannot start {}: {e}", node_name(node)))?;
        let pid = spawned.pid;
        slot.stopping = false;
        slot.paused = false;
        slot.log_offset = log_offset;
        slot.spawned = Some(spawned.clone());
        slot.boot.send_replace(BootState::Starting);
        drop(slot);
        tokio::spawn(watch_node(
            self.system.clone(),
            self.recorder.clone(),
            self.slots[node].clone(),
            (self.observed[node].clone(), self.facts.clone()),
            node,
            spawned,
            (self.log_paths[node].clone(), log_offset),
            self.boot_timeout,
        ));
        Ok(json!({"pid": pid}))
    }

    /// SIGKILLs a node's process group and waits until it is reaped; first records what the node had durably
    /// reached (`cause`: `kill`, `restart-all`), unless `cause` is `None` (teardown).
    pub async fn kill_node_for(&self, node: usize, cause: Option<&str>) -> Result<Value, String> {
        if let Some(cause) = cause {
            let running = {
                let slot = self.slots[node].lock().await;
                slot.spawned.as_ref().is_some_and(|s| s.exited.borrow().is_none())
            };
            if running {
                // A fresh answer if the node gives one at once; else what the observer saw last.
                if let Ok(status) = self.system.probe(node, LAST_PROBE_TIMEOUT).await {
                    note_status(self.system.as_ref(), &self.recorder, &self.observed, node, &status);
                }
                record_last_durable(self.system.as_ref(), &self.recorder, &self.observed[node], node, cause);
            }
        }
        let mut slot = self.slots[node].lock().await;
        let Some(spawned) = slot.spawned.clone().filter(|s| s.exited.borrow().is_none()) else {
            return Err(format!("{} is not running", node_name(node)));
        };
        slot.stopping = true;
        signal_group(spawned.pid, Signal::SIGKILL)?;
        drop(slot);
        let mut exited = spawned.exited.clone();
        tokio::time::timeout(REAP_TIMEOUT, exited.wait_for(|e| e.is_some()))
            .await
            .map_err(|_| {
                format!(
                    "{} (pid {}) was not reaped within {REAP_TIMEOUT:?} of SIGKILL",
                    node_name(node),
                    spawned.pid
                )
            })?
            .map_err(|_| "reaper gone".to_string())?;
        self.slots[node].lock().await.boot.send_replace(BootState::Stopped);
        let _ = self.facts.send(Fact::Down {
            node,
            at: tokio::time::Instant::now(),
        });
        Ok(json!({"pid": spawned.pid, "signal": "SIGKILL"}))
    }

    /// SIGKILLs a node (a fault): [`Lab::kill_node_for`] with cause `kill`.
    pub async fn kill_node(&self, node: usize) -> Result<Value, String> {
        self.kill_node_for(node, Some("kill")).await
    }

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
                    if lab.boot_state(node) != BootState::Ready || now < next_probe {
                        continue;
                    }
                    next_probe = now + lab.system.observe_interval();
                    if let Ok(status) = lab.system.probe(node, OBSERVE_TIMEOUT).await {
                        // A probe that raced a kill answers for the old process: only a running node's counts.
                        if lab.boot_state(node) == BootState::Ready {
                            note_status(lab.system.as_ref(), &lab.recorder, &lab.observed, node, &status);
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
        let line = crate::analyze::strip_ansi(&line);
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

    /// Sends SIGSTOP or SIGCONT to a running node.
    pub async fn signal_node(&self, node: usize, signal: Signal) -> Result<Value, String> {
        let mut slot = self.slots[node].lock().await;
        let Some(pid) = slot
            .spawned
            .as_ref()
            .filter(|s| s.exited.borrow().is_none())
            .map(|s| s.pid)
        else {
            return Err(format!("{} is not running", node_name(node)));
        };
        signal_group(pid, signal)?;
        slot.paused = signal == Signal::SIGSTOP;
        Ok(json!({"pid": pid, "signal": signal.as_str()}))
    }

    /// Which nodes are down or paused right now, for the progress line.
    pub async fn fault_summary(&self) -> String {
        let mut parts = Vec::new();
        for (node, slot) in self.slots.iter().enumerate() {
            let slot = slot.lock().await;
            let running = slot.spawned.as_ref().is_some_and(|s| s.exited.borrow().is_none());
            if !running {
                parts.push(format!("{} down", node_name(node)));
            } else if slot.paused {
                parts.push(format!("{} paused", node_name(node)));
            }
        }
        if parts.is_empty() {
            "no faults".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Waits until a node's boot settles (ready, refused, crashed, timed out) and returns that state.
    pub async fn wait_boot(&self, node: usize) -> BootState {
        let mut rx = self.boot_rx[node].clone();
        let settled = rx.wait_for(|state| !matches!(state, BootState::Starting)).await;
        settled.map(|s| s.clone()).unwrap_or(BootState::Stopped)
    }

    /// Current boot state of a node.
    pub fn boot_state(&self, node: usize) -> BootState {
        self.boot_rx[node].borrow().clone()
    }

    /// The node that claims to be primary in the newest view, asking every node.
    pub async fn find_primary(&self) -> Option<usize> {
        let probes = (0..Lab::node_count(self)).map(|n| self.system.probe(n, PROBE_TIMEOUT));
        let statuses = futures::future::join_all(probes).await;
        // A primary cut off from the others keeps claiming its old view while they elect a new primary: the one in
        // the newest view leads.
        newest_claimant(statuses.iter().enumerate().filter_map(|(node, s)| {
            let s = s.as_ref().ok().filter(|s| claims_primary(s, node))?;
            Some((node, self.system.progress(s).view))
        }))
    }

    /// Every node's commit point (`None` for nodes that do not answer).
    pub async fn commit_points(&self) -> Vec<Option<String>> {
        let probes = (0..Lab::node_count(self)).map(|n| self.system.probe(n, PROBE_TIMEOUT));
        futures::future::join_all(probes)
            .await
            .into_iter()
            .map(|s| s.ok().map(|s| s.commit_point))
            .collect()
    }

    /// The first node whose status answer does not fit what the plan describes (a mistake in the plan), if any.
    pub async fn misconfiguration(&self) -> Option<String> {
        let probes = (0..Lab::node_count(self)).map(|n| self.system.probe(n, PROBE_TIMEOUT));
        futures::future::join_all(probes)
            .await
            .into_iter()
            .enumerate()
            .find_map(|(node, status)| match status {
                Err(crate::system::ProbeError::Misconfigured(why)) => Some(format!("{}: {why}", node_name(node))),
                _ => None,
            })
    }

    /// SIGKILLs every running node (shutdown path); records nothing.
    pub async fn kill_all_quietly(&self) {
        for node in 0..Lab::node_count(self) {
            let _ = self.kill_node_for(node, None).await;
        }
    }
}

/// Whether `node`'s status says it is the primary, and names no other node as primary.
fn claims_primary(status: &NodeStatus, node: usize) -> bool {
    status.role == Role::Primary && status.primary.is_none_or(|p| p == node)
}

/// Takes one status answer: keeps its durable value (with when) and records an `observation` `status` event when the
/// node's role, primary or view changed, or its durable progress moved and its last record is older than
/// [`PROGRESS_RECORD_INTERVAL`].
fn note_status(
    system: &dyn System,
    recorder: &Recorder,
    all: &[Arc<std::sync::Mutex<Observed>>],
    node: usize,
    status: &NodeStatus,
) {
    let progress = system.progress(status);
    let now = Instant::now();
    // The highest durable value another node reported in the last second (one lock at a time: no lock order).
    let highest_other = all
        .iter()
        .enumerate()
        .filter(|(other, _)| *other != node)
        .filter_map(|(_, observed)| {
            let observed = observed.lock().expect("observations lock");
            let (at, durable) = *observed.samples.back()?;
            (now.duration_since(at) <= Duration::from_secs(1)).then_some(durable)
        })
        .max();
    let behind = match (progress.durable, highest_other) {
        (Some(own), Some(highest)) => highest.saturating_sub(own),
        _ => 0,
    };
    let lagging = behind >= LAG_RECORDED;
    let mut observed = all[node].lock().expect("observations lock");
    observed.last_answer = Some(now);
    if let Some(durable) = progress.durable {
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

/// Records what a node that is being stopped (or that stopped on its own) had durably reached: the newest durable
/// value it reported at least [`System::durable_settle`] before its last answer. Nothing when it never reported one
/// since it was started.
fn record_last_durable(
    system: &dyn System,
    recorder: &Recorder,
    observed: &std::sync::Mutex<Observed>,
    node: usize,
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
            .copied()
    };
    let Some((at, durable)) = picked else {
        return;
    };
    recorder.observation(
        Observation::LastDurable,
        Some(&node_name(node)),
        json!({
            "durable": durable,
            "age_ms": at.elapsed().as_millis() as u64,
            "settle_ms": settle.as_millis() as u64,
            "cause": cause,
        }),
    );
}

/// Follows one started process: ready or refused or timed out, and later an unexpected exit.
#[allow(clippy::too_many_arguments)]
async fn watch_node(
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
    let ready = tokio::select! {
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
    match ready {
        Some(true) => {
            recorder.lifecycle(
                Lifecycle::BootOk,
                Some(&name),
                json!({"pid": spawned.pid, "boot_ms": started.elapsed().as_millis() as u64}),
            );
            if let Some(recovered) = system.recovered(&log_since(&log_path, log_offset)) {
                recorder.observation(
                    Observation::Recovered,
                    Some(&name),
                    json!({"recovered": recovered.recovered, "line": recovered.line}),
                );
            }
            publish(BootState::Ready).await;
            let _ = facts.send(Fact::Ready {
                node,
                at: tokio::time::Instant::now(),
            });
        }
        Some(false) => {
            recorder.lifecycle(
                Lifecycle::BootTimeout,
                Some(&name),
                json!({"pid": spawned.pid, "timeout_ms": boot_timeout.as_millis() as u64}),
            );
            publish(BootState::TimedOut).await;
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
        record_last_durable(system.as_ref(), &recorder, &observed, node, "crashed");
    }
    let _ = facts.send(Fact::Down {
        node,
        at: tokio::time::Instant::now(),
    });
    let tail = log_tail(&log_path);
    let state = match (ready, system.boot_refusal_line(&tail)) {
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
            recorder.lifecycle(
                Lifecycle::Crashed,
                Some(&name),
                json!({"pid": spawned.pid, "exit": exit.to_string(), "was_ready": ready == Some(true), "log_tail": last_lines}),
            );
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

impl faultline_faults::process::Lab for Lab {
    fn node_count(&self) -> usize {
        Lab::node_count(self)
    }

    async fn primary(&self) -> Option<usize> {
        self.find_primary().await
    }

    async fn next_primary(&self) -> Option<usize> {
        let primary = self.find_primary().await?;
        self.system.next_primary(primary)
    }

    async fn kill(&self, node: usize) -> Result<Value, String> {
        self.kill_node(node).await
    }

    async fn start(&self, node: usize) -> Result<Value, String> {
        self.start_node(node).await
    }

    async fn pause(&self, node: usize) -> Result<Value, String> {
        self.signal_node(node, Signal::SIGSTOP).await
    }

    async fn resume(&self, node: usize) -> Result<Value, String> {
        self.signal_node(node, Signal::SIGCONT).await
    }

    async fn lose_unsynced(&self, node: usize) -> Result<Value, String> {
        self.lose_unsynced_node(node).await
    }

    fn record(&self, name: Nemesis, node: usize, value: Value) {
        self.recorder.nemesis(name, Some(&node_name(node)), value);
    }
}

impl faultline_faults::network::schedule::NetworkLab for Lab {
    async fn primary(&self) -> Option<usize> {
        self.find_primary().await
    }

    fn record(&self, name: Nemesis, value: Value) {
        self.recorder.nemesis(name, None, value);
    }
}

impl faultline_faults::io::IoLab for Lab {
    fn set_io_faults(&self, node: usize, faults: &FsFaults) -> Result<(), String> {
        Lab::set_io_faults(self, node, faults)
    }

    fn crashed(&self, node: usize) -> bool {
        matches!(self.boot_state(node), BootState::Crashed(_))
    }

    async fn restart(&self, node: usize) {
        let details = self.start_node(node).await.unwrap_or_else(|e| json!({"error": e}));
        self.recorder
            .lifecycle(Lifecycle::Start, Some(&node_name(node)), details);
    }

    fn record(&self, name: Nemesis, node: usize, value: Value) {
        self.recorder.nemesis(name, Some(&node_name(node)), value);
    }
}
