//! The lab: the running cluster of one run. It starts, kills, pauses and resumes nodes (only processes it spawned),
//! watches each start until the node is ready or refuses to boot, notices nodes that die on their own, and records
//! all of it in the history.

mod cuts;
mod membership;
mod nemesis;
mod ready;
mod stop;
mod watch;

pub use watch::log_tail;

use crate::remote::hands::Hands;
use crate::run::recorder::Recorder;
use crate::supervisor::Spawned;
use crate::system::{Role, StartKind, System};
use faultline_faults::clock::ClockShift;
use faultline_faults::fusefs::{FaultFsOptions, FsFaults};
use faultline_faults::network::netns::NetnsLab;
use faultline_faults::process::node_name;
use faultline_faults::trigger::{newest_claimant, Fact};
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, Mutex};
use watch::{claims_primary, note_status, record_last_durable, watch_node};

/// Probe timeout for readiness and role queries.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// Bound on waiting for a killed process to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on the rest of a killed node's process group exiting after the node itself was reaped.
const GROUP_EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// Timeout of the fresh probe right before the harness stops a node: short, so a paused node delays its kill little.
const LAST_PROBE_TIMEOUT: Duration = Duration::from_millis(50);
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
    /// Durable positions the node reported ([`System::durable_position`]), with when (pruned to what
    /// [`System::durable_settle`] needs).
    samples: VecDeque<(Instant, faultline_workloads::position::Position)>,
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
    boot: tokio::sync::watch::Sender<BootState>,
}

/// The running cluster.
pub struct Lab {
    system: Arc<dyn System>,
    /// Each node's hands: where its processes live (this machine's supervisor, or a host's agent).
    hands: Vec<Arc<dyn Hands>>,
    recorder: Recorder,
    slots: Vec<Arc<Mutex<Slot>>>,
    boot_rx: Vec<tokio::sync::watch::Receiver<BootState>>,
    log_paths: Vec<PathBuf>,
    boot_timeout: Duration,
    /// When set, every node is launched inside its own namespace of this lab.
    netns: Option<Arc<NetnsLab>>,
    /// Whether the fault filesystem is mounted over each node's data dir (the plan asks for one), by its hands.
    fault_fs: bool,
    /// What the observer saw of each node.
    observed: Vec<Arc<std::sync::Mutex<Observed>>>,
    /// What the observer sees, for the trigger engine (sent only while someone listens).
    facts: broadcast::Sender<Fact>,
    /// The cuts of `corrupt` faults: the adapter's file classes and each node's surgeon.
    cuts: cuts::Cuts,
    /// Each node's clock folder on its machine, when the plan has clock faults (empty otherwise: nothing is
    /// preloaded).
    clocks: Vec<PathBuf>,
    /// Who the members are, as the system last listed them (the spares are the other nodes).
    members: tokio::sync::watch::Sender<Vec<usize>>,
    /// The newest epoch of those members, for a system that numbers its configurations (0: none known).
    members_epoch: std::sync::Mutex<u64>,
}

impl Lab {
    /// A lab for `system`, node logs at `log_paths[i]`.
    pub fn new(
        system: Arc<dyn System>,
        hands: Vec<Arc<dyn Hands>>,
        recorder: Recorder,
        log_paths: Vec<PathBuf>,
        boot_timeout: Duration,
    ) -> Lab {
        let mut slots = Vec::new();
        let mut boot_rx = Vec::new();
        let observed = (0..system.node_count()).map(|_| Arc::default()).collect();
        let members = tokio::sync::watch::channel(system.initial_members()).0;
        for _ in 0..system.node_count() {
            let (tx, rx) = tokio::sync::watch::channel(BootState::Stopped);
            slots.push(Arc::new(Mutex::new(Slot {
                spawned: None,
                log_offset: 0,
                stopping: false,
                paused: false,
                boot: tx,
            })));
            boot_rx.push(rx);
        }
        assert_eq!(hands.len(), system.node_count(), "hands for every node");
        Lab {
            hands,
            system,
            recorder,
            slots,
            boot_rx,
            log_paths,
            boot_timeout,
            netns: None,
            fault_fs: false,
            observed,
            facts: broadcast::channel(FACTS_CAPACITY).0,
            cuts: cuts::Cuts::default(),
            clocks: Vec::new(),
            members,
            members_epoch: std::sync::Mutex::new(0),
        }
    }

    /// Preloads libfaketime into every node from now on, each reading its control file in `dirs[node]`, a folder
    /// of its machine (beside its data dir, not in it): what clock faults move ([`faultline_faults::clock`]).
    pub async fn enable_clocks(&mut self, dirs: Vec<PathBuf>) -> anyhow::Result<()> {
        for (node, dir) in dirs.iter().enumerate() {
            self.hands[node]
                .enable_clock(dir)
                .await
                .map_err(|e| anyhow::anyhow!("setting up {}'s clock: {e}", node_name(node)))?;
        }
        self.clocks = dirs;
        Ok(())
    }

    /// The folder of each node's log on this machine.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.log_paths
            .iter()
            .map(|log| log.parent().expect("a node log has a folder").to_path_buf())
            .collect()
    }

    /// Moves node `node`'s clock, or returns it to real time (`None`).
    pub async fn set_clock(&self, node: usize, shift: Option<ClockShift>) -> Result<Value, String> {
        let dir = self
            .clocks
            .get(node)
            .ok_or("clocks are not set up: the plan has no clock fault, so nodes run without libfaketime")?;
        self.hands[node].set_clock(dir, shift).await
    }

    /// A new listener to what the observer sees: statuses, nodes becoming ready or going down, log lines.
    pub fn facts(&self) -> broadcast::Receiver<Fact> {
        self.facts.subscribe()
    }

    /// Mounts the fault filesystem over every node's data dir, backed by `<data dir>.backing`, on the node's
    /// machine.
    pub async fn mount_fault_fs(&mut self, run_tag: &str, options: FaultFsOptions) -> anyhow::Result<()> {
        for node in 0..self.system.node_count() {
            let mountpoint = self.system.data_dir(node);
            let backing = mountpoint.with_extension("backing");
            self.hands[node]
                .mount_fault_fs((&backing, &mountpoint), run_tag, options)
                .await
                .map_err(|e| anyhow::anyhow!("mounting the fault filesystem for {}: {e}", node_name(node)))?;
            self.fault_fs = true;
        }
        Ok(())
    }

    /// Drops a stopped node's unsynced writes (power loss); the record of what was lost.
    pub async fn lose_unsynced_node(&self, node: usize) -> Result<Value, String> {
        if !self.fault_fs {
            return Err("no fault filesystem is mounted (plan: disk: {fault_fs: true})".into());
        }
        self.hands[node].lose_unsynced(&self.system.data_dir(node)).await
    }

    /// Sets (or, with empty faults, clears) the I/O faults of a node's fault filesystem.
    pub async fn set_io_faults(&self, node: usize, faults: &FsFaults) -> Result<(), String> {
        if !self.fault_fs {
            return Err("no fault filesystem is mounted".into());
        }
        self.hands[node]
            .set_io_faults(&self.system.data_dir(node), faults)
            .await
    }

    /// Unmounts every fault filesystem (nodes must be stopped). Unmounting keeps unsynced data: a clean shutdown.
    pub async fn unmount_fault_fs(&self) {
        if !self.fault_fs {
            return;
        }
        for node in 0..self.node_count() {
            if let Err(e) = self.hands[node].unmount_fault_fs(&self.system.data_dir(node)).await {
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

    /// Node `node`'s hands: where its processes and one-shot commands run.
    pub fn hands(&self, node: usize) -> &Arc<dyn Hands> {
        &self.hands[node]
    }

    /// The history recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Node count.
    pub fn node_count(&self) -> usize {
        self.slots.len()
    }

    /// Starts a stopped node and watches it boot in the background: its first start in the run, else a restart.
    /// Returns details to record.
    pub async fn start_node(&self, node: usize) -> Result<Value, String> {
        self.start_node_as(node, None).await
    }

    /// [`Lab::start_node`] as a start of `kind` (the restart-all's), or of the kind the node's past gives.
    pub async fn start_node_as(&self, node: usize, kind: Option<StartKind>) -> Result<Value, String> {
        let mut slot = self.slots[node].lock().await;
        if slot.spawned.as_ref().is_some_and(|s| s.exited.borrow().is_none()) {
            return Err(format!("{} is already running", node_name(node)));
        }
        let kind = kind.unwrap_or(if slot.spawned.is_none() {
            StartKind::First
        } else {
            StartKind::Restart
        });
        let mut command = self.system.launch(node, kind);
        if let Some(netns) = &self.netns {
            // `ip netns exec` must run as root: it enters the namespace, then `setpriv` becomes the node's user.
            if let Some(user) = command.user.take() {
                command.env.extend(
                    user.env()
                        .map(|(k, v)| (k.to_string(), v.to_string_lossy().into_owned())),
                );
                let mut args = user.setpriv_args();
                args.push(command.program.display().to_string());
                args.append(&mut command.args);
                command.program = PathBuf::from(if std::path::Path::new("/usr/bin/setpriv").exists() {
                    "/usr/bin/setpriv"
                } else {
                    "setpriv"
                });
                command.args = args;
            }
            let (program, args) = netns.wrap_command(node, &command.program, &command.args);
            command.program = program;
            command.args = args;
        }
        let log_offset = std::fs::metadata(&self.log_paths[node]).map(|m| m.len()).unwrap_or(0);
        *self.observed[node].lock().expect("observations lock") = Observed::default();
        let clock = self.clocks.get(node).map(PathBuf::as_path);
        let spawned = match self.hands[node]
            .spawn(command, self.log_paths[node].clone(), clock)
            .await
        {
            Ok(spawned) => spawned,
            Err(e) => {
                if self.hands[node].host_lost() {
                    // Its host went away while the node was down: the checks learn it as for a node that was up.
                    let value = json!({"exit": crate::supervisor::Exit::HostLost.to_string(), "host_lost": true,
                                       "was_ready": false, "start_failed": e.to_string()});
                    let crashed = faultline_workloads::history::Lifecycle::Crashed;
                    self.recorder.lifecycle(crashed, Some(&node_name(node)), value);
                }
                return Err(format!("cannot start {}: {e}", node_name(node)));
            }
        };
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
        Ok(json!({"pid": pid, "start": kind.as_str()}))
    }

    /// SIGKILLs a node's process group and waits until it is reaped; first records what the node had durably
    /// reached (`cause`: `kill`, `restart-all`), unless `cause` is `None` (teardown).
    pub async fn kill_node_for(&self, node: usize, cause: Option<&str>) -> Result<Value, String> {
        if let Some(cause) = cause {
            self.note_last_durable(node, cause).await;
        }
        let mut slot = self.slots[node].lock().await;
        let Some(spawned) = slot.spawned.clone().filter(|s| s.exited.borrow().is_none()) else {
            return Err(format!("{} is not running", node_name(node)));
        };
        slot.stopping = true;
        self.hands[node].signal(spawned.pid, Signal::SIGKILL).await?;
        drop(slot);
        self.reaped(node, &spawned).await?;
        Ok(json!({"pid": spawned.pid, "signal": "SIGKILL"}))
    }

    /// Records what a running node had durably reached before the harness stops it (`cause`): a fresh answer if
    /// the node gives one at once, else what the observer saw last.
    async fn note_last_durable(&self, node: usize, cause: &str) {
        let running = {
            let slot = self.slots[node].lock().await;
            slot.spawned
                .as_ref()
                .filter(|s| s.exited.borrow().is_none())
                .map(|s| s.pid)
        };
        if let Some(pid) = running {
            if let Ok(status) = self.system.probe(node, LAST_PROBE_TIMEOUT).await {
                note_status(self.system.as_ref(), &self.recorder, &self.observed, node, &status);
            }
            record_last_durable(
                self.system.as_ref(),
                &self.recorder,
                &self.observed[node],
                (node, pid),
                cause,
            );
        }
    }

    /// Waits until a node the harness signalled to die is reaped (bounded), then marks it stopped and down.
    async fn reaped(&self, node: usize, spawned: &Spawned) -> Result<crate::supervisor::Exit, String> {
        let mut exited = spawned.exited.clone();
        let exit = tokio::time::timeout(REAP_TIMEOUT, exited.wait_for(|e| e.is_some()))
            .await
            .map_err(|_| {
                format!(
                    "{} (pid {}) was not reaped within {REAP_TIMEOUT:?} of SIGKILL",
                    node_name(node),
                    spawned.pid
                )
            })?
            .map_err(|_| "reaper gone".to_string())?
            .expect("waited for an exit");
        // The node's own children (a sidecar it started, e.g. Redis's Sentinel beside redis-server) were killed with
        // its group but may still be exiting, holding their ports: a restart must not race them.
        let group_gone = tokio::time::Instant::now() + GROUP_EXIT_TIMEOUT;
        while self.hands[node].group_alive(spawned.pid).await && tokio::time::Instant::now() < group_gone {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.mark_down(node).await;
        Ok(exit)
    }

    /// A node the harness stopped: its boot state is `Stopped`, and the trigger engine hears it went down.
    async fn mark_down(&self, node: usize) {
        self.slots[node].lock().await.boot.send_replace(BootState::Stopped);
        let _ = self.facts.send(Fact::Down {
            node,
            at: tokio::time::Instant::now(),
        });
    }

    /// SIGKILLs a node (a fault): [`Lab::kill_node_for`] with cause `kill`.
    pub async fn kill_node(&self, node: usize) -> Result<Value, String> {
        self.kill_node_for(node, Some("kill")).await
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
        self.hands[node].signal(pid, signal).await?;
        slot.paused = signal == Signal::SIGSTOP;
        Ok(json!({"pid": pid, "signal": signal.as_str()}))
    }

    /// Which nodes are down or paused right now, for the progress line.
    pub async fn fault_summary(&self) -> String {
        let mut parts = Vec::new();
        let members = self.members();
        for (node, slot) in self.slots.iter().enumerate() {
            if !members.contains(&node) {
                continue; // a spare is down by design
            }
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
