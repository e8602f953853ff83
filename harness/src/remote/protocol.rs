//! The agent's protocol: what the control asks a host's agent (one JSON object per line, `op` naming the request,
//! `id` echoed in the answer). `plans/exec/AGENT.md` documents it for people; [`super::agent`] answers it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The protocol's version: a control refuses an agent of another.
pub const PROTOCOL: u32 = 1;

/// Most bytes one `read` returns (the control pages through larger files).
pub const READ_MAX: u64 = 4 << 20;

/// One request of the control.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// Who the agent is and what its host can do.
    Hello,
    /// The agent's clocks, for the control's offset and round-trip measurement.
    Clock,
    /// Start `argv` in its own process group, stdout and stderr appended to `log`.
    Spawn {
        /// Program and arguments (no shell).
        argv: Vec<String>,
        /// Extra environment.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory (default: the agent's).
        #[serde(default)]
        cwd: Option<PathBuf>,
        /// The file its output is appended to (created, with its folder).
        log: PathBuf,
        /// The folder of the node's clock (`clock-enable`), when it runs under libfaketime.
        #[serde(default)]
        clock: Option<PathBuf>,
    },
    /// Run `argv` to its end (at most `timeout_ms`) and answer its wait status, stdout and stderr (base64, at most
    /// [`READ_MAX`] each): a one-shot command such as a node's format or offline verification.
    Run {
        /// Program and arguments (no shell).
        argv: Vec<String>,
        /// Extra environment.
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory (default: the agent's).
        #[serde(default)]
        cwd: Option<PathBuf>,
        /// How long it may take before it is killed.
        timeout_ms: u64,
    },
    /// Send `signal` (`SIGKILL`, `SIGSTOP`, `SIGCONT`, `SIGTERM`, ...) to the process group of `pid`, a process
    /// this agent started.
    Signal {
        /// The process (and its group).
        pid: i32,
        /// The signal's name.
        signal: String,
    },
    /// Whether the process group of `pid` (a process this agent started) still has a live member.
    GroupAlive {
        /// The process (and its group).
        pid: i32,
    },
    /// Up to `max` bytes of `path` from `offset` (base64), and its size.
    Read {
        /// The file.
        path: PathBuf,
        /// Where to start.
        #[serde(default)]
        offset: u64,
        /// At most this many bytes (at most [`READ_MAX`]).
        #[serde(default)]
        max: Option<u64>,
    },
    /// Every regular file under `dir` (recursively; symlinks not followed): `files`, each `{path, size}` with its
    /// path relative to `dir`. A missing `dir` has none.
    List {
        /// The folder.
        dir: PathBuf,
    },
    /// Delete `path` (a file or a whole folder). Only inside `runs/` of the folder this agent claimed: the control
    /// removes a finished run's files from a host once they are back in its store.
    Remove {
        /// What to delete.
        path: PathBuf,
    },
    /// Create `dir` and its parents, with permission bits `mode` when given.
    MakeDir {
        /// The folder.
        dir: PathBuf,
        /// Its mode (`448` = 0o700), if any.
        #[serde(default)]
        mode: Option<u32>,
    },
    /// Write `data` (base64) to `path`, its folder created: replacing the file, fsynced with its folder, with mode
    /// `mode` when given (a node's config file, a script of the plan's folder); or with `append`, at its end.
    Write {
        /// The file.
        path: PathBuf,
        /// Its bytes, base64.
        data: String,
        /// Append instead of replacing (no fsync).
        #[serde(default)]
        append: bool,
        /// Its mode (`493` = 0o755), if any.
        #[serde(default)]
        mode: Option<u32>,
    },
    /// Empty a node's data dir (keeping the fault filesystem's hidden folder): a wipe.
    EmptyDir {
        /// The folder.
        dir: PathBuf,
    },
    /// Make this host deaf to `from` (nftables, the agent's own table: drop every packet whose source is one of
    /// them), replacing what it was deaf to; an empty list heals. The table goes when the agent ends.
    Deafen {
        /// Source addresses to drop.
        from: Vec<std::net::IpAddr>,
        /// Source addresses a share of whose packets to drop (packet loss), after those.
        #[serde(default)]
        loss: Vec<faultline_faults::network::hosts::Lossy>,
    },
    /// Mount the fault filesystem over `mountpoint`, backed by `backing` (both created); its fsname carries the
    /// agent's own tag (`agent-p<pid>`), so a sweep of the host knows a dead agent's mount.
    FsMount {
        /// The files the node sees (its data dir).
        mountpoint: PathBuf,
        /// Where they are kept.
        backing: PathBuf,
        /// Seed, durability model, writeback, `allow_other`.
        options: faultline_faults::fusefs::FaultFsOptions,
    },
    /// Power loss on the filesystem over `mountpoint` (its node stopped): every unsynced write dropped; the record.
    FsLoseUnsynced {
        /// Which filesystem.
        mountpoint: PathBuf,
    },
    /// Set (or, with empty faults, clear) the I/O faults of the filesystem over `mountpoint`.
    FsFaults {
        /// Which filesystem.
        mountpoint: PathBuf,
        /// The faults.
        faults: faultline_faults::fusefs::FsFaults,
    },
    /// Unmount the filesystem over `mountpoint` (unsynced data stays: a clean shutdown).
    FsUnmount {
        /// Which filesystem.
        mountpoint: PathBuf,
    },
    /// Cut the files under `dir` (their node stopped) as `cut` says, with the surgeon of `stream` seeded from
    /// `seed` (kept for the stream's next cut when `keep`); the surgery record.
    Cut {
        /// The node's data dir.
        dir: PathBuf,
        /// What to cut.
        cut: faultline_faults::disk::SurgerySpec,
        /// The run's seed.
        seed: u64,
        /// The surgeon's stream (`n2/live`, `n2`).
        stream: String,
        /// Keep the surgeon (and its snapshots) for the next cut of the stream.
        #[serde(default)]
        keep: bool,
    },
    /// Set up a node's clock in `dir` (libfaketime's control file, at real time); a `spawn` naming the folder
    /// preloads libfaketime into the node.
    ClockEnable {
        /// The node's folder.
        dir: PathBuf,
    },
    /// Move the clock of `dir`, or (`shift` null) return it to real time.
    ClockSet {
        /// The node's folder.
        dir: PathBuf,
        /// The shift (`{"kind": "bump", "offset_ms": -800}`, a skew, a strobe), or null to heal.
        shift: Option<faultline_faults::clock::ClockShift>,
    },
    /// Start the proxies of node `me`'s outgoing peer links (the proxy mesh's, holding only those): one per other
    /// node, listening on this host's loopback and forwarding to `upstreams[to]` (that node's peer address). Answers
    /// `routes`: where node `me` must dial each node (its own entry: its own peer address).
    MeshStart {
        /// Nodes in the run.
        node_count: usize,
        /// This host's node.
        me: usize,
        /// Each node's peer address.
        upstreams: Vec<std::net::SocketAddr>,
        /// The run's seed (jitter and corruption streams).
        seed: u64,
    },
    /// Put `fault` on link `from -> to` (this host's proxies apply the paths they carry).
    MeshSet {
        /// Sender (0-based).
        from: usize,
        /// Receiver (0-based).
        to: usize,
        /// The fault (`{"kind": "delay", "latency": "50ms"}`, ...).
        fault: faultline_faults::network::LinkFault,
    },
    /// Clear the fault of `kind` from link `from -> to`.
    MeshClear {
        /// Sender (0-based).
        from: usize,
        /// Receiver (0-based).
        to: usize,
        /// Which fault.
        kind: faultline_faults::network::LinkFaultKind,
    },
    /// Clear every link fault.
    MeshClearAll,
    /// Claim `dir` (the hosts' workdir) for run `run`: one run at a time on a host, since a run's nodes listen on
    /// fixed ports and a second run's clients would talk to the first run's nodes. The claim is an exclusive
    /// `flock` on `dir/.faultline-run.lock`, held until the agent ends (whatever ends it: the kernel drops the lock
    /// with the process). A host already claimed is refused, naming the run that holds it.
    Claim {
        /// The folder to claim.
        dir: PathBuf,
        /// The run claiming it.
        run: String,
    },
    /// Sweep what dead agents left on this host (their processes, nft tables and fault filesystems) and the host's
    /// other faultline leftovers; with `dry_run`, only list them. What `faultline clean --hosts` asks.
    Sweep {
        /// Only list.
        #[serde(default)]
        dry_run: bool,
    },
    /// Kill everything it started and exit.
    Shutdown,
}

/// A request with its id, as it travels.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    /// Echoed in the answer.
    pub id: u64,
    /// The request.
    #[serde(flatten)]
    pub request: Request,
}
