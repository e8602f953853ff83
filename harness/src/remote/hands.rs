//! Where a node's processes live, and how faultline acts on them: one interface for this machine and for a host
//! reached over SSH, so that a run's lab kills, pauses, stops and restarts a node the same way wherever it is.
//!
//! - [`LocalHands`]: the supervisor's process groups on this machine (parent-death signal, `FAULTLINE_RUN_ID`).
//! - [`RemoteHands`]: the same, done by the host's `faultline agent` (`plans/exec/AGENT.md`). The node's log on the
//!   host is mirrored into its log file here as it grows, so everything that reads a node's log (boot lines,
//!   refusals, crash lines, log triggers, the report) reads it as for a local node; an exit is reported only once
//!   the log has caught up to it.

use crate::remote::agent::Request;
use crate::remote::client::AgentClient;
use crate::remote::workbench::{take_preload, FileWrite, Workbench};
use crate::supervisor::{Exit, LaunchCommand, Spawned, Supervisor};
use async_trait::async_trait;
use base64::Engine;
use faultline_faults::clock::ClockShift;
use faultline_faults::disk::SurgerySpec;
use faultline_faults::fusefs::{FaultFsOptions, FsFaults};
use nix::sys::signal::Signal;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// How often a host's node log is mirrored while it runs.
const MIRROR_EVERY: Duration = Duration::from_millis(100);

/// What faultline's hands do to a node: its processes, its disk and its clock. Paths are the node's machine's.
#[async_trait]
pub trait Hands: Send + Sync {
    /// Starts `command`; its output ends up appended to `log`, a file of this machine. With `clock` (a folder set
    /// up by [`Hands::enable_clock`]), the process runs under libfaketime reading that clock.
    async fn spawn(&self, command: LaunchCommand, log: PathBuf, clock: Option<&Path>) -> std::io::Result<Spawned>;
    /// Sends `signal` to the process group of `pid`, a process these hands started (and to its descendants that
    /// left the group).
    async fn signal(&self, pid: i32, signal: Signal) -> Result<(), String>;
    /// Whether `pid`'s group still has a live member (a restart must not race the children of a killed node).
    async fn group_alive(&self, pid: i32) -> bool;
    /// Runs a one-shot `command` (a node's format, its offline verification) to its end, at most `timeout`: its
    /// status and output, or why it could not run.
    async fn output(&self, command: &LaunchCommand, timeout: Duration) -> Result<std::process::Output, String>;
    /// Mounts the fault filesystem over `mountpoint`, backed by `backing`.
    async fn mount_fault_fs(
        &self,
        (backing, mountpoint): (&Path, &Path),
        tag: &str,
        options: FaultFsOptions,
    ) -> Result<(), String>;
    /// Power loss on the fault filesystem over `mountpoint` (its node stopped); what was lost.
    async fn lose_unsynced(&self, mountpoint: &Path) -> Result<Value, String>;
    /// Sets (or, empty, clears) the I/O faults of the fault filesystem over `mountpoint`.
    async fn set_io_faults(&self, mountpoint: &Path, faults: &FsFaults) -> Result<(), String>;
    /// Unmounts the fault filesystem over `mountpoint`.
    async fn unmount_fault_fs(&self, mountpoint: &Path) -> Result<(), String>;
    /// Cuts the files under `dir` (their node stopped) with the surgeon of `stream`, kept for its next cut when
    /// `keep`; the surgery record.
    async fn cut(&self, dir: &Path, cut: &SurgerySpec, seed_stream: (u64, &str), keep: bool) -> Result<Value, String>;
    /// Sets up the clock of the node whose folder is `dir`, at real time.
    async fn enable_clock(&self, dir: &Path) -> Result<(), String>;
    /// Moves the clock of `dir`, or returns it to real time (`None`); what to record.
    async fn set_clock(&self, dir: &Path, shift: Option<ClockShift>) -> Result<Value, String>;
    /// Creates a node's folder `dir`, with permission bits `mode` when given.
    async fn make_dir(&self, dir: &Path, mode: Option<u32>) -> Result<(), String>;
    /// Writes `bytes` to `path` as `how` says (a node's config file, a line of its log), its folder created.
    async fn write_file(&self, path: &Path, bytes: &[u8], how: FileWrite) -> Result<(), String>;
    /// Empties a node's data dir (a wipe), keeping the fault filesystem's hidden folder.
    async fn empty_dir(&self, dir: &Path) -> Result<(), String>;
    /// Whether the machine these hands act on is out of reach for good (a host whose agent's channel closed):
    /// what fails there from now on is not the node's doing.
    fn host_lost(&self) -> bool {
        false
    }
    /// The events of the link to the node's host (`link-lost`, `link-restored`, `link-failed`), for the history;
    /// the first call takes them (a node on this machine has none).
    fn take_link_events(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Value>> {
        None
    }
}

/// This machine's processes, disks and clocks.
pub struct LocalHands {
    supervisor: Supervisor,
    bench: Arc<Workbench>,
}

impl LocalHands {
    /// Hands for every node of this machine, through `supervisor`.
    pub fn new(supervisor: Supervisor) -> LocalHands {
        LocalHands {
            supervisor,
            bench: Arc::default(),
        }
    }

    /// Runs `work` on the workbench on a blocking thread (it touches the disk).
    async fn on_bench<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Workbench) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let bench = self.bench.clone();
        tokio::task::spawn_blocking(move || work(&bench))
            .await
            .map_err(|e| format!("a disk worker failed: {e}"))?
    }
}

#[async_trait]
impl Hands for LocalHands {
    async fn spawn(&self, mut command: LaunchCommand, log: PathBuf, clock: Option<&Path>) -> std::io::Result<Spawned> {
        if let Some(dir) = clock {
            let preload = take_preload(&mut command.env, command.env_clear, std::env::var("LD_PRELOAD").ok());
            let env = self
                .bench
                .clock_env(dir, preload.as_deref())
                .map_err(std::io::Error::other)?;
            command.env.extend(env);
        }
        let spawned = self.supervisor.spawn(command, log).await?;
        if let Some(dir) = clock {
            self.bench.clock_spawned(dir).map_err(std::io::Error::other)?;
        }
        Ok(spawned)
    }

    async fn signal(&self, pid: i32, signal: Signal) -> Result<(), String> {
        crate::supervisor::signal_group(pid, signal)
    }

    async fn group_alive(&self, pid: i32) -> bool {
        crate::supervisor::group_has_live_members(pid)
    }

    async fn output(&self, command: &LaunchCommand, timeout: Duration) -> Result<std::process::Output, String> {
        tokio::time::timeout(timeout, crate::supervisor::one_shot_command(command).output())
            .await
            .map_err(|_| format!("`{}` did not end within {timeout:?} (killed)", command.display()))?
            .map_err(|e| format!("cannot run `{}`: {e}", command.display()))
    }

    async fn mount_fault_fs(
        &self,
        (backing, mountpoint): (&Path, &Path),
        tag: &str,
        options: FaultFsOptions,
    ) -> Result<(), String> {
        let (backing, mountpoint, tag) = (backing.to_path_buf(), mountpoint.to_path_buf(), tag.to_string());
        self.on_bench(move |bench| bench.mount(&backing, &mountpoint, &tag, options))
            .await
    }

    async fn lose_unsynced(&self, mountpoint: &Path) -> Result<Value, String> {
        let mountpoint = mountpoint.to_path_buf();
        self.on_bench(move |bench| bench.lose_unsynced(&mountpoint)).await
    }

    async fn set_io_faults(&self, mountpoint: &Path, faults: &FsFaults) -> Result<(), String> {
        self.bench.set_io_faults(mountpoint, faults)
    }

    async fn unmount_fault_fs(&self, mountpoint: &Path) -> Result<(), String> {
        let mountpoint = mountpoint.to_path_buf();
        self.on_bench(move |bench| bench.unmount(&mountpoint)).await
    }

    async fn cut(
        &self,
        dir: &Path,
        cut: &SurgerySpec,
        (seed, stream): (u64, &str),
        keep: bool,
    ) -> Result<Value, String> {
        let (dir, cut, stream) = (dir.to_path_buf(), cut.clone(), stream.to_string());
        self.on_bench(move |bench| bench.cut(&dir, &cut, (seed, &stream), keep))
            .await
    }

    async fn enable_clock(&self, dir: &Path) -> Result<(), String> {
        self.bench.enable_clock(dir)
    }

    async fn set_clock(&self, dir: &Path, shift: Option<ClockShift>) -> Result<Value, String> {
        self.bench.set_clock(dir, shift)
    }

    async fn make_dir(&self, dir: &Path, mode: Option<u32>) -> Result<(), String> {
        crate::remote::workbench::make_dir(dir, mode)
    }

    async fn empty_dir(&self, dir: &Path) -> Result<(), String> {
        let dir = dir.to_path_buf();
        self.on_bench(move |_| crate::remote::workbench::empty_dir(&dir)).await
    }

    async fn write_file(&self, path: &Path, bytes: &[u8], how: FileWrite) -> Result<(), String> {
        let (path, bytes) = (path.to_path_buf(), bytes.to_vec());
        self.on_bench(move |_| crate::remote::workbench::write_file(&path, &bytes, how))
            .await
    }
}

/// One node's processes on a host, through the host's agent.
pub struct RemoteHands {
    agent: Arc<AgentClient>,
    /// The node's log on the host (every start of the node appends to it).
    remote_log: PathBuf,
    /// The mirror: the local file and how far into the host's log it has copied.
    mirror: Arc<tokio::sync::Mutex<Mirror>>,
    /// Exits, matched to the processes started here.
    exits: Arc<Mutex<Exits>>,
    /// The link's events, until the lab takes them.
    link_events: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Value>>>,
}

/// The exit watch of each process started here until its exit arrives, and exits that arrived before the answer
/// that named their process (a process that exits at once).
#[derive(Default)]
struct Exits {
    waiting: BTreeMap<i32, watch::Sender<Option<Exit>>>,
    early: BTreeMap<i32, Exit>,
}

struct Mirror {
    local: Option<PathBuf>,
    offset: u64,
}

impl Mirror {
    /// Copies what the host's log has grown by since the last call into the local file.
    async fn catch_up(&mut self, agent: &AgentClient, remote: &std::path::Path) -> Result<(), String> {
        let Some(local) = self.local.clone() else { return Ok(()) };
        loop {
            let request = Request::Read {
                path: remote.to_path_buf(),
                offset: self.offset,
                max: None,
            };
            let (ok, _) = match agent.call(request).await {
                Ok(answer) => answer,
                Err(e) if e.contains("No such file") => return Ok(()), // nothing written yet
                Err(e) => return Err(e),
            };
            let data = base64::engine::general_purpose::STANDARD
                .decode(ok["data"].as_str().unwrap_or(""))
                .map_err(|e| format!("the agent sent a log chunk that is not base64: {e}"))?;
            if data.is_empty() {
                return Ok(());
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&local)
                .map_err(|e| format!("cannot append to {}: {e}", local.display()))?;
            file.write_all(&data)
                .map_err(|e| format!("cannot append to {}: {e}", local.display()))?;
            self.offset += data.len() as u64;
        }
    }
}

impl RemoteHands {
    /// Hands on one node whose log on the host is `remote_log`, through `agent`; `events` are the agent's events
    /// (this node's exits among them). The mirror runs until the agent's channel closes.
    pub fn new(
        agent: Arc<AgentClient>,
        mut events: tokio::sync::mpsc::UnboundedReceiver<Value>,
        remote_log: PathBuf,
    ) -> Arc<RemoteHands> {
        let (links, link_events) = tokio::sync::mpsc::unbounded_channel();
        let hands = Arc::new(RemoteHands {
            agent,
            remote_log,
            mirror: Arc::new(tokio::sync::Mutex::new(Mirror { local: None, offset: 0 })),
            exits: Arc::default(),
            link_events: Mutex::new(Some(link_events)),
        });
        let weak = Arc::downgrade(&hands);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(MIRROR_EVERY);
            loop {
                tokio::select! {
                    event = events.recv() => {
                        let Some(event) = event else { break };
                        let Some(hands) = weak.upgrade() else { break };
                        match event["event"].as_str() {
                            Some("exit") => hands.exited(&event).await,
                            Some(link) if link.starts_with("link-") => {
                                let _ = links.send(event);
                            }
                            _ => {}
                        }
                    }
                    _ = tick.tick() => {
                        let Some(hands) = weak.upgrade() else { break };
                        let _ = hands.mirror.lock().await.catch_up(&hands.agent, &hands.remote_log).await;
                    }
                }
            }
            // The channel is gone (the host or the connection to it): its processes ended with the agent, or are
            // out of reach; whoever waits for them learns that the host went away, not that they crashed.
            if let Some(hands) = weak.upgrade() {
                for (_, exit) in std::mem::take(&mut hands.exits.lock().expect("exits lock").waiting) {
                    exit.send_replace(Some(Exit::HostLost));
                }
            }
        });
        hands
    }

    /// A process exited: its log caught up first, then its watch.
    async fn exited(&self, event: &Value) {
        let Some(pid) = event["pid"].as_i64().map(|p| p as i32) else {
            return;
        };
        let _ = self.mirror.lock().await.catch_up(&self.agent, &self.remote_log).await;
        let exit = match (event["code"].as_i64(), event["signal"].as_str()) {
            (Some(code), _) => Exit::Code(code as i32),
            (None, Some(signal)) => Exit::Signal(signal.parse::<Signal>().map_or(0, |s| s as i32)),
            (None, None) => Exit::Signal(0),
        };
        let mut exits = self.exits.lock().expect("exits lock");
        match exits.waiting.remove(&pid) {
            Some(sender) => {
                sender.send_replace(Some(exit));
            }
            None => {
                exits.early.insert(pid, exit);
            }
        }
    }
}

#[async_trait]
impl Hands for RemoteHands {
    async fn spawn(&self, command: LaunchCommand, log: PathBuf, clock: Option<&Path>) -> std::io::Result<Spawned> {
        {
            let mut mirror = self.mirror.lock().await;
            let _ = mirror.catch_up(&self.agent, &self.remote_log).await;
            mirror.local = Some(log.clone());
        }
        let mut local = std::fs::OpenOptions::new().create(true).append(true).open(&log)?;
        writeln!(
            local,
            "=== faultline: starting `{}` at {} (on the host, through its agent) ===",
            command.display(),
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        )?;
        let mut argv = vec![command.program.display().to_string()];
        argv.extend(command.args.iter().cloned());
        let request = Request::Spawn {
            argv,
            env: command.env.iter().cloned().collect(),
            cwd: None,
            log: self.remote_log.clone(),
            clock: clock.map(Path::to_path_buf),
        };
        let (ok, _) = self.agent.call(request).await.map_err(std::io::Error::other)?;
        let pid = ok["pid"]
            .as_i64()
            .ok_or_else(|| std::io::Error::other("the agent's spawn answer has no pid"))? as i32;
        // Its exit may have come before this answer.
        let mut exits = self.exits.lock().expect("exits lock");
        let (sender, exited) = watch::channel(exits.early.remove(&pid));
        if sender.borrow().is_none() {
            exits.waiting.insert(pid, sender);
        }
        Ok(Spawned { pid, exited })
    }

    async fn signal(&self, pid: i32, signal: Signal) -> Result<(), String> {
        self.agent
            .call(Request::Signal {
                pid,
                signal: signal.as_str().to_string(),
            })
            .await
            .map(|_| ())
    }

    async fn group_alive(&self, pid: i32) -> bool {
        match self.agent.call(Request::GroupAlive { pid }).await {
            Ok((ok, _)) => ok["alive"].as_bool().unwrap_or(false),
            Err(_) => false, // the agent is gone, and with it the group
        }
    }

    async fn output(&self, command: &LaunchCommand, timeout: Duration) -> Result<std::process::Output, String> {
        use std::os::unix::process::ExitStatusExt;
        let mut argv = vec![command.program.display().to_string()];
        argv.extend(command.args.iter().cloned());
        let request = Request::Run {
            argv,
            env: command.env.iter().cloned().collect(),
            cwd: None,
            timeout_ms: timeout.as_millis() as u64,
        };
        let (ok, _) = self.agent.call(request).await?;
        let decode = |field: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(ok[field].as_str().unwrap_or(""))
                .map_err(|e| format!("the agent's {field} is not base64: {e}"))
        };
        Ok(std::process::Output {
            status: std::process::ExitStatus::from_raw(ok["status"].as_i64().unwrap_or(-1) as i32),
            stdout: decode("stdout")?,
            stderr: decode("stderr")?,
        })
    }
    async fn mount_fault_fs(
        &self,
        (backing, mountpoint): (&Path, &Path),
        _tag: &str,
        options: FaultFsOptions,
    ) -> Result<(), String> {
        // The agent tags the mount with its own pid (a host's sweep knows a dead agent's mount by it).
        let request = Request::FsMount {
            mountpoint: mountpoint.to_path_buf(),
            backing: backing.to_path_buf(),
            options,
        };
        self.agent.call(request).await.map(|_| ())
    }

    async fn lose_unsynced(&self, mountpoint: &Path) -> Result<Value, String> {
        let request = Request::FsLoseUnsynced {
            mountpoint: mountpoint.to_path_buf(),
        };
        self.agent.call(request).await.map(|(ok, _)| ok)
    }

    async fn set_io_faults(&self, mountpoint: &Path, faults: &FsFaults) -> Result<(), String> {
        let request = Request::FsFaults {
            mountpoint: mountpoint.to_path_buf(),
            faults: faults.clone(),
        };
        self.agent.call(request).await.map(|_| ())
    }

    async fn unmount_fault_fs(&self, mountpoint: &Path) -> Result<(), String> {
        let request = Request::FsUnmount {
            mountpoint: mountpoint.to_path_buf(),
        };
        self.agent.call(request).await.map(|_| ())
    }

    async fn cut(
        &self,
        dir: &Path,
        cut: &SurgerySpec,
        (seed, stream): (u64, &str),
        keep: bool,
    ) -> Result<Value, String> {
        let request = Request::Cut {
            dir: dir.to_path_buf(),
            cut: cut.clone(),
            seed,
            stream: stream.to_string(),
            keep,
        };
        self.agent.call(request).await.map(|(ok, _)| ok)
    }

    async fn enable_clock(&self, dir: &Path) -> Result<(), String> {
        let request = Request::ClockEnable { dir: dir.to_path_buf() };
        self.agent.call(request).await.map(|_| ())
    }

    async fn set_clock(&self, dir: &Path, shift: Option<ClockShift>) -> Result<Value, String> {
        let request = Request::ClockSet {
            dir: dir.to_path_buf(),
            shift,
        };
        self.agent.call(request).await.map(|(ok, _)| ok)
    }

    async fn make_dir(&self, dir: &Path, mode: Option<u32>) -> Result<(), String> {
        let request = Request::MakeDir {
            dir: dir.to_path_buf(),
            mode,
        };
        self.agent.call(request).await.map(|_| ())
    }

    async fn empty_dir(&self, dir: &Path) -> Result<(), String> {
        let request = Request::EmptyDir { dir: dir.to_path_buf() };
        self.agent.call(request).await.map(|_| ())
    }

    async fn write_file(&self, path: &Path, bytes: &[u8], how: FileWrite) -> Result<(), String> {
        let request = Request::Write {
            path: path.to_path_buf(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            append: how == FileWrite::Append,
            mode: match how {
                FileWrite::Durable { mode } => mode,
                FileWrite::Append => None,
            },
        };
        self.agent.call(request).await.map(|_| ())
    }

    fn host_lost(&self) -> bool {
        self.agent.is_closed()
    }

    fn take_link_events(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Value>> {
        self.link_events.lock().expect("link events lock").take()
    }
}
