//! The disk and clock tools of one machine's hands: the fault filesystems mounted over nodes' data dirs, the
//! surgeons that cut nodes' files, and the libfaketime control files of nodes' clocks, each kept by its path on
//! that machine. [`super::hands::LocalHands`] uses one in this process; a host's agent uses its own on its host
//! ([`super::agent`]), so a power loss, an I/O fault, a cut or a clock jump is the same code wherever the node runs.
//!
//! Every method may block (a mount, a power loss, a cut touch the disk): async callers run them on a blocking thread.

use faultline_faults::clock::faketime::NodeClock;
use faultline_faults::clock::ClockShift;
use faultline_faults::disk::{Surgeon, SurgerySpec};
use faultline_faults::fusefs::{FaultFs, FaultFsHandle, FaultFsOptions, FsFaults};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One machine's mounts, surgeons and clocks.
#[derive(Default)]
pub struct Workbench {
    /// Fault filesystems by mountpoint (as the caller named it).
    mounts: Mutex<BTreeMap<PathBuf, Arc<Mutex<Option<FaultFsHandle>>>>>,
    /// Surgeons by stream name (one per node for a run's live cuts, so a snapshot taken at one cut is there for a
    /// restore at a later one).
    surgeons: Mutex<BTreeMap<String, Arc<Mutex<Surgeon>>>>,
    /// Clocks by their folder.
    clocks: Mutex<BTreeMap<PathBuf, NodeClock>>,
}

fn poisoned<T>(_: T) -> String {
    "a workbench lock is poisoned (a thread panicked holding it)".to_string()
}

impl Workbench {
    /// Mounts a fault filesystem over `mountpoint`, backed by `backing` (both created), its fsname carrying `tag`.
    pub fn mount(&self, backing: &Path, mountpoint: &Path, tag: &str, options: FaultFsOptions) -> Result<(), String> {
        faultline_faults::fusefs::fuse_available()?;
        let mut mounts = self.mounts.lock().map_err(poisoned)?;
        if mounts.contains_key(mountpoint) {
            return Err(format!("{} already has a fault filesystem", mountpoint.display()));
        }
        for dir in [mountpoint, backing] {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let handle = FaultFs::mount_with(backing, mountpoint, tag, options)
            .map_err(|e| format!("mounting the fault filesystem over {}: {e}", mountpoint.display()))?;
        mounts.insert(mountpoint.to_path_buf(), Arc::new(Mutex::new(Some(handle))));
        Ok(())
    }

    fn mount_at(&self, mountpoint: &Path) -> Result<Arc<Mutex<Option<FaultFsHandle>>>, String> {
        self.mounts
            .lock()
            .map_err(poisoned)?
            .get(mountpoint)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "no fault filesystem is mounted over {} (plan: disk: {{fault_fs: true}})",
                    mountpoint.display()
                )
            })
    }

    /// Power loss on the filesystem over `mountpoint` (its node stopped): drops every unsynced write; what was lost.
    pub fn lose_unsynced(&self, mountpoint: &Path) -> Result<Value, String> {
        let handle = self.mount_at(mountpoint)?;
        let guard = handle.lock().map_err(poisoned)?;
        let fs = guard.as_ref().ok_or("the fault filesystem is unmounted")?;
        serde_json::to_value(fs.lose_unsynced()).map_err(|e| e.to_string())
    }

    /// Sets (or, with empty faults, clears) the I/O faults of the filesystem over `mountpoint`.
    pub fn set_io_faults(&self, mountpoint: &Path, faults: &FsFaults) -> Result<(), String> {
        let handle = self.mount_at(mountpoint)?;
        let guard = handle.lock().map_err(poisoned)?;
        let fs = guard.as_ref().ok_or("the fault filesystem is unmounted")?;
        fs.set_faults(faults).map_err(|e| e.to_string())
    }

    /// Unmounts the filesystem over `mountpoint` (a clean shutdown: unsynced data stays). Unmounting what is not
    /// mounted is not an error.
    pub fn unmount(&self, mountpoint: &Path) -> Result<(), String> {
        let Some(handle) = self.mounts.lock().map_err(poisoned)?.remove(mountpoint) else {
            return Ok(());
        };
        let taken = handle.lock().map_err(poisoned)?.take();
        match taken {
            Some(fs) => fs.unmount().map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// Unmounts every filesystem; the errors, each naming its mountpoint.
    pub fn unmount_all(&self) -> Vec<String> {
        let mountpoints: Vec<PathBuf> = match self.mounts.lock() {
            Ok(mounts) => mounts.keys().cloned().collect(),
            Err(_) => return vec!["a workbench lock is poisoned; mounts left to `faultline clean`".into()],
        };
        mountpoints
            .into_iter()
            .filter_map(|m| self.unmount(&m).err().map(|e| format!("{}: {e}", m.display())))
            .collect()
    }

    /// Applies `cut` to the files under `dir` (their node stopped) with the surgeon of `stream` (seeded from `seed`
    /// and the stream's name): kept for the next cut of the same stream when `keep`, else a fresh one. The record.
    pub fn cut(&self, dir: &Path, cut: &SurgerySpec, (seed, stream): (u64, &str), keep: bool) -> Result<Value, String> {
        let surgeon = if keep {
            self.surgeons
                .lock()
                .map_err(poisoned)?
                .entry(stream.to_string())
                .or_insert_with(|| Arc::new(Mutex::new(Surgeon::new(seed, stream))))
                .clone()
        } else {
            Arc::new(Mutex::new(Surgeon::new(seed, stream)))
        };
        let mut surgeon = surgeon.lock().map_err(poisoned)?;
        let record = surgeon.apply(dir, cut).map_err(|e| e.to_string())?;
        serde_json::to_value(record).map_err(|e| e.to_string())
    }

    /// A clock at real time for the node whose folder is `dir` (its control file goes there).
    pub fn enable_clock(&self, dir: &Path) -> Result<(), String> {
        let library = faultline_faults::clock::faketime::library()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let clock =
            NodeClock::new(dir, library).map_err(|e| format!("cannot write {}'s clock file: {e}", dir.display()))?;
        self.clocks.lock().map_err(poisoned)?.insert(dir.to_path_buf(), clock);
        Ok(())
    }

    fn clock(&self, dir: &Path) -> Result<NodeClock, String> {
        self.clocks.lock().map_err(poisoned)?.get(dir).cloned().ok_or_else(|| {
            format!(
                "no clock is set up in {}: the plan has no clock fault, so nodes run without libfaketime",
                dir.display()
            )
        })
    }

    /// Right before the node of clock `dir` is spawned: the environment that preloads libfaketime into it, joined
    /// to `preload` (the command's own `LD_PRELOAD`, or the one this process would pass on).
    pub fn clock_env(&self, dir: &Path, preload: Option<&str>) -> Result<Vec<(String, String)>, String> {
        self.clock(dir)?.before_spawn(preload)
    }

    /// Right after the node of clock `dir` was spawned (libfaketime's start).
    pub fn clock_spawned(&self, dir: &Path) -> Result<(), String> {
        self.clock(dir)?.spawned()
    }

    /// Moves the clock of `dir`, or returns it to real time (`None`); what to record. A strobe runs on a task of
    /// the current tokio runtime.
    pub fn set_clock(&self, dir: &Path, shift: Option<ClockShift>) -> Result<Value, String> {
        let clock = self.clock(dir)?;
        match shift {
            Some(shift) => clock.apply(shift),
            None => clock.heal(),
        }
    }
}

/// Creates `dir` (and its parents), with permission bits `mode` when given (a node's data dir: etcd wants 0700).
pub fn make_dir(dir: &Path, mode: Option<u32>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("cannot set the mode of {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// How [`write_file`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileWrite {
    /// Replace the file, fsynced with its folder, with permission bits `mode` when given: a node's config file must
    /// survive the power loss of the fault filesystem as any file the system wrote and synced would (ZooKeeper's
    /// `myid`, lost, stops the server for good).
    Durable {
        /// Its mode (`493` = 0o755 for a script), if any.
        mode: Option<u32>,
    },
    /// Append to the file (a line of a node's log).
    Append,
}

/// Writes `bytes` to `path` as `how` says, creating its folder.
pub fn write_file(path: &Path, bytes: &[u8], how: FileWrite) -> Result<(), String> {
    use std::io::Write;
    let failed = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match how {
        FileWrite::Append => {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(failed)?;
            file.write_all(bytes).map_err(failed)
        }
        FileWrite::Durable { mode } => {
            let mut file = std::fs::File::create(path).map_err(failed)?;
            file.write_all(bytes).map_err(failed)?;
            if let Some(mode) = mode {
                use std::os::unix::fs::PermissionsExt;
                file.set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(failed)?;
            }
            file.sync_all().map_err(failed)?;
            if let Some(parent) = path.parent() {
                std::fs::File::open(parent)
                    .and_then(|dir| dir.sync_all())
                    .map_err(|e| format!("cannot sync {}: {e}", parent.display()))?;
            }
            Ok(())
        }
    }
}

/// Empties a node's data dir (keeping the fault filesystem's hidden folder): the first half of every adapter's wipe.
pub fn empty_dir(dir: &Path) -> Result<(), String> {
    crate::system::empty_data_dir(dir).map_err(|e| format!("{e:#}"))
}

/// Moves `LD_PRELOAD` out of `env` (a command's environment): what the node would preload without faultline's
/// clock, which the clock joins to its own library. `inherited` is the `LD_PRELOAD` the spawning process passes on
/// when the command keeps its environment.
pub fn take_preload(env: &mut Vec<(String, String)>, env_clear: bool, inherited: Option<String>) -> Option<String> {
    match env.iter().position(|(k, _)| k == "LD_PRELOAD") {
        Some(index) => Some(env.remove(index).1),
        None if env_clear => None,
        None => inherited,
    }
}
