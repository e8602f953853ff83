//! Run ownership: every run holds an exclusive lock on `<runs dir>/<run id>.lock` for its whole life.
//!
//! Everything a run creates is tagged with its run id (processes carry `FAULTLINE_RUN_ID` in their environment;
//! later: namespaces, nft tables, mounts). The startup sweep of a new run looks at every lock file: a lock nobody holds
//! belongs to a run that died (e.g. SIGKILL), so its leftovers are removed; a held lock belongs to a live run and is
//! never touched. Two concurrent runs therefore never interfere.

use crate::supervisor::RUN_ID_ENV;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A held run lock; released (and its file removed) on drop.
pub struct RunLock {
    path: PathBuf,
    _file: File,
}

/// The directory that holds run locks: `$FAULTLINE_RUNS_DIR` or `<tmp>/faultline-runs`.
pub fn runs_dir() -> PathBuf {
    std::env::var_os("FAULTLINE_RUNS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("faultline-runs"))
}

impl RunLock {
    /// Creates and locks `<dir>/<run_id>.lock`, recording the harness pid and store folder in it.
    pub fn acquire(dir: &Path, run_id: &str, store_dir: &Path) -> std::io::Result<RunLock> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{run_id}.lock"));
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .read(true)
            .open(&path)?;
        file.try_lock()
            .map_err(|e| std::io::Error::other(format!("run lock {} is held: {e}", path.display())))?;
        file.set_len(0)?;
        writeln!(
            file,
            "{{\"run_id\":\"{run_id}\",\"pid\":{},\"store_dir\":{:?}}}",
            std::process::id(),
            store_dir.display().to_string()
        )?;
        file.sync_all()?;
        Ok(RunLock { path, _file: file })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a sweep removed.
#[derive(Debug, Default)]
pub struct Sweep {
    /// Run ids whose leftovers were removed.
    pub dead_runs: Vec<String>,
    /// Processes killed (pid, run id).
    pub killed: Vec<(i32, String)>,
}

/// Removes leftovers of dead runs: for each lock file nobody holds, SIGKILL processes tagged with that run id and
/// delete the lock. Locks held by live runs are skipped.
pub fn sweep(dir: &Path) -> std::io::Result<Sweep> {
    sweep_or_list(dir, false)
}

/// [`sweep`], or with `dry_run` only what it would remove.
pub fn sweep_or_list(dir: &Path, dry_run: bool) -> std::io::Result<Sweep> {
    let mut sweep = Sweep::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(sweep);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(run_id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".lock"))
        else {
            continue;
        };
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
            continue;
        };
        if file.try_lock().is_err() {
            continue; // a live run holds it
        }
        for pid in processes_tagged(run_id) {
            if !dry_run {
                // Tagged by a dead run of ours: its own process group, so kill the group.
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
            sweep.killed.push((pid, run_id.to_string()));
        }
        if !dry_run {
            let _ = std::fs::remove_file(&path);
        }
        sweep.dead_runs.push(run_id.to_string());
    }
    Ok(sweep)
}

/// Whether the run `run_id` is alive: its lock file exists and someone holds it.
pub fn is_live(dir: &Path, run_id: &str) -> bool {
    let Ok(file) = OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join(format!("{run_id}.lock")))
    else {
        return false;
    };
    file.try_lock().is_err()
}

/// The store folder of the live run whose harness is `pid` (a child `faultline run`), from its lock file; `None`
/// until the run has taken its lock.
pub fn store_dir_of(dir: &Path, pid: u32) -> Option<PathBuf> {
    let prefix = format!("{pid}-");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name();
        let name = name.to_str()?;
        if !(name.starts_with(&prefix) && name.ends_with(".lock")) {
            return None;
        }
        let text = std::fs::read_to_string(entry.path()).ok()?;
        let lock: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
        if lock["pid"].as_u64() != Some(u64::from(pid)) {
            return None;
        }
        lock["store_dir"].as_str().map(PathBuf::from)
    })
}

/// Pids whose environment carries `FAULTLINE_RUN_ID=<run_id>`.
pub fn processes_tagged(run_id: &str) -> Vec<i32> {
    let needle = format!("{RUN_ID_ENV}={run_id}");
    let mut pids = Vec::new();
    let Ok(proc_dir) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in proc_dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|var| var == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_held_lock_when_swept_should_leave_it_and_given_a_free_one_should_remove_it() {
        let dir = tempfile::tempdir().unwrap();
        let live = RunLock::acquire(dir.path(), "live-run", Path::new("store/x")).unwrap();
        std::fs::write(dir.path().join("dead-run.lock"), "{}").unwrap();
        let sweep = sweep(dir.path()).unwrap();
        assert_eq!(sweep.dead_runs, vec!["dead-run".to_string()]);
        assert!(dir.path().join("live-run.lock").exists());
        assert!(!dir.path().join("dead-run.lock").exists());
        drop(live);
        assert!(!dir.path().join("live-run.lock").exists());
    }

    #[test]
    fn given_a_run_holding_its_lock_when_its_pid_is_looked_up_should_give_its_store_folder() {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        assert_eq!(store_dir_of(dir.path(), pid), None);
        // Another run whose pid starts with the same digits is not this one.
        let _other = RunLock::acquire(dir.path(), &format!("{pid}1-ab"), Path::new("store/other")).unwrap();
        let _lock = RunLock::acquire(dir.path(), &format!("{pid}-ab"), Path::new("store/plan/run-seed1")).unwrap();
        assert_eq!(
            store_dir_of(dir.path(), pid),
            Some(PathBuf::from("store/plan/run-seed1"))
        );
    }
}
