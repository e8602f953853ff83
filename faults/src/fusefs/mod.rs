//! A fault filesystem (FUSE) that loses unsynced data on demand: power loss for real processes.
//!
//! `kill -9` cannot lose what a process already `write()`-ed: the page cache keeps it. Mounted over a node's data
//! dir and backed by a real directory, this filesystem tracks what the node has made durable (`fsync`/`fdatasync`
//! of a file, `fsync` of a directory for its entries) and on [`FaultFsHandle::lose_unsynced`] rolls the backing dir
//! back to exactly that (see [`durability`] for how), as LazyFS does. It also injects I/O faults on demand
//! ([`faults::FsFaults`]: EIO by path glob with a probability or on the n-th call, ENOSPC past a byte quota, stalls).
//!
//! It runs on threads inside the calling process (no libfuse, no fusermount: a root `mount(2)` of `/dev/fuse` by the
//! `fuser` crate). Kernel caching cannot hide a fault: zero entry/attribute TTLs, `direct_io` opens, no writeback
//! cache, no passthrough. Mounts carry fsname `faultline-<run tag>`; [`FaultFsHandle`] unmounts on drop, and
//! [`sweep`] lazily unmounts the leftovers of runs that died.
//!
//! A power loss, as the harness runs it:
//! ```text
//! kill -9 the node  ->  handle.lose_unsynced()  ->  restart the node (same data dir, same mount)
//! ```

pub mod durability;
pub mod faults;
pub mod mounts;
mod ops;
#[cfg(test)]
mod tests;
pub mod writeback;

pub use durability::{FileLoss, PowerLossRecord, TornWrite};
pub use faults::{EioRule, Enospc, FsFaults, InjectedCounts, IoOp, StallRule};
pub use mounts::{
    faultline_mounts, orphans, run_tag, sweep, sweep_orphans, sweep_where, tag_pid, FaultMount, SweptMount,
};
pub use writeback::{Writeback, WritebackAge};

use durability::{Quota, State};
use faults::Injector;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Name of the fault filesystem's private dir at the root of a backing dir (kept inodes, rollback staging). Hidden
/// from the mount; removed at unmount and at the next mount.
pub const HIDDEN_DIR_NAME: &str = ".faultline-fault-fs";

/// How long [`FaultFsHandle::unmount`] waits for the filesystem threads to end.
const UNMOUNT_WAIT: Duration = Duration::from_secs(5);

/// Errors of the fault filesystem.
#[derive(Debug, thiserror::Error)]
pub enum FaultFsError {
    /// FUSE cannot be used here.
    #[error("fault filesystem unavailable: {0}")]
    Unavailable(String),
    /// A bad argument (run tag, overlapping dirs, fault rules).
    #[error("fault filesystem: {0}")]
    Invalid(String),
    /// I/O on a path failed.
    #[error("fault filesystem: {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// How to run a fault filesystem (serializable: a host's agent mounts one with the options the control sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultFsOptions {
    /// Seed for fault probabilities and torn-write lengths (use the run seed).
    pub seed: u64,
    /// FUSE worker threads (at least 1).
    pub threads: usize,
    /// Also fsync the backing file when the node fsyncs (keeps fsync latency realistic; off only for benchmarks of
    /// the filesystem itself).
    pub real_fsync: bool,
    /// When directory changes (creates, renames, unlinks) and truncations become durable at an fsync.
    pub metadata: MetadataDurability,
    /// When unsynced data and metadata become durable with age alone (the kernel's flusher, a journal's commit).
    pub writeback: Writeback,
    /// Let users other than root in (the `allow_other` mount option), for nodes that run as their own user. The
    /// kernel still checks every access against the files' owners and modes (`default_permissions`). Root needs no
    /// `user_allow_other` in /etc/fuse.conf for it: that file only restricts unprivileged mounts through fusermount.
    pub allow_other: bool,
}

impl Default for FaultFsOptions {
    fn default() -> Self {
        FaultFsOptions {
            seed: 0,
            threads: 2,
            real_fsync: true,
            metadata: MetadataDurability::Posix,
            writeback: Writeback::NEVER,
            allow_other: false,
        }
    }
}

/// When a directory change or a truncation becomes durable at an fsync, as plans write it
/// (`disk: {metadata: journaled}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetadataDurability {
    /// Only an `fsync` of the directory makes its entries durable, only an `fsync` of a file its truncation: POSIX's
    /// promise and no more (a program that creates a file, fsyncs it and never fsyncs its directory loses it at a
    /// power loss).
    Posix,
    /// Any `fsync` on the filesystem makes every directory change and truncation made before it durable, as the
    /// journal of ext4 (`data=ordered`) and XFS does: one commit carries all metadata, and an fsync forces it.
    Journaled,
}

/// How a power loss happens, as plans write it: `{torn_write: true}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerLossSpec {
    /// Keep a random non-empty proper prefix of the newest unsynced write (a write torn by the power cut).
    #[serde(default)]
    pub torn_write: bool,
}

/// What the filesystem holds unsynced right now, and the faults it injected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FsStats {
    /// Files with writes not yet synced.
    pub unsynced_files: usize,
    /// Directories with entry changes not yet synced.
    pub unsynced_dirs: usize,
    /// Faults injected since mount.
    pub injected: InjectedCounts,
}

/// State shared by the FUSE threads and the handle.
pub(crate) struct Inner {
    pub state: Mutex<State>,
    pub handles: Mutex<HashMap<u64, Arc<File>>>,
    pub next_fh: AtomicU64,
    pub injector: Mutex<Option<Injector>>,
    pub rules_active: AtomicBool,
    pub enospc_count: AtomicU64,
    pub options: FaultFsOptions,
}

/// Locks a mutex; a panicked FUSE thread must not take the harness down with poisoning.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Checks that this process can mount a fault filesystem: root and an openable `/dev/fuse`.
pub fn fuse_available() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("the fault filesystem mounts /dev/fuse directly and needs root".into());
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map(|_| ())
        .map_err(|e| format!("cannot open /dev/fuse ({e}); load the fuse module or give the container the device"))
}

/// The fault filesystem.
#[derive(Debug)]
pub struct FaultFs;

impl FaultFs {
    /// Mounts a fault filesystem at `mountpoint` (the node's data dir; should be empty) backed by `backing_dir`,
    /// with default options. `run_tag` (`[A-Za-z0-9._-]{1,64}`) names the mount for [`sweep`].
    pub fn mount(backing_dir: &Path, mountpoint: &Path, run_tag: &str) -> Result<FaultFsHandle, FaultFsError> {
        Self::mount_with(backing_dir, mountpoint, run_tag, FaultFsOptions::default())
    }

    /// [`FaultFs::mount`] with options.
    pub fn mount_with(
        backing_dir: &Path,
        mountpoint: &Path,
        run_tag: &str,
        options: FaultFsOptions,
    ) -> Result<FaultFsHandle, FaultFsError> {
        fuse_available().map_err(FaultFsError::Unavailable)?;
        let tag_ok = (1..=64).contains(&run_tag.len())
            && run_tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !tag_ok {
            return Err(FaultFsError::Invalid(format!(
                "run tag `{run_tag}` must be 1..=64 of [A-Za-z0-9._-]"
            )));
        }
        let canonical = |what, path: &Path| {
            path.canonicalize().map_err(|source| FaultFsError::Io {
                what,
                path: path.display().to_string(),
                source,
            })
        };
        let backing = canonical("backing dir", backing_dir)?;
        let mountpoint = canonical("mountpoint", mountpoint)?;
        if backing.starts_with(&mountpoint) || mountpoint.starts_with(&backing) {
            return Err(FaultFsError::Invalid(format!(
                "backing dir {} and mountpoint {} must not contain each other",
                backing.display(),
                mountpoint.display()
            )));
        }
        let mounted = faultline_mounts().unwrap_or_default();
        if mounted.iter().any(|m| m.mountpoint == mountpoint) {
            return Err(FaultFsError::Invalid(format!(
                "{} already has a fault filesystem mounted; unmount or sweep it first",
                mountpoint.display()
            )));
        }
        let io = |what, source| FaultFsError::Io {
            what,
            path: backing.display().to_string(),
            source,
        };
        durability::remove_hidden(&backing).map_err(|e| io("clearing leftovers in", e))?;
        let state = State::new(backing.clone(), options.writeback).map_err(|e| io("reading", e))?;
        let inner = Arc::new(Inner {
            state: Mutex::new(state),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            injector: Mutex::new(None),
            rules_active: AtomicBool::new(false),
            enospc_count: AtomicU64::new(0),
            options,
        });
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName(format!("{}{run_tag}", mounts::FSNAME_PREFIX)),
            fuser::MountOption::Subtype("faultline".into()),
            fuser::MountOption::DefaultPermissions,
            fuser::MountOption::NoSuid,
            fuser::MountOption::NoDev,
        ];
        // Without `allow_other` the kernel lets in only the mounting user (root); fuser's `Owner` adds no option.
        config.acl = if options.allow_other {
            fuser::SessionACL::All
        } else {
            fuser::SessionACL::Owner
        };
        config.n_threads = Some(options.threads.max(1));
        config.clone_fd = true;
        let server = ops::FsServer { inner: inner.clone() };
        let mount_err = |source| FaultFsError::Io {
            what: "mounting at",
            path: mountpoint.display().to_string(),
            source,
        };
        let session = fuser::Session::new(server, &mountpoint, &config).map_err(mount_err)?;
        let notifier = session.notifier();
        let session = session.spawn().map_err(mount_err)?;
        Ok(FaultFsHandle {
            inner,
            session: Some(session),
            notifier: Some(notifier),
            torn_rng: Mutex::new(crate::rng::stream(options.seed, &format!("fusefs/{run_tag}/torn"))),
            faults_set: AtomicU64::new(0),
            mountpoint,
            backing,
            run_tag: run_tag.to_string(),
        })
    }
}

/// A mounted fault filesystem. Unmounts on drop (a clean shutdown: unsynced data stays, as after a clean OS
/// shutdown); use [`FaultFsHandle::lose_unsynced`] first for a power loss.
pub struct FaultFsHandle {
    inner: Arc<Inner>,
    session: Option<fuser::BackgroundSession>,
    notifier: Option<fuser::Notifier>,
    torn_rng: Mutex<ChaCha8Rng>,
    faults_set: AtomicU64,
    mountpoint: PathBuf,
    backing: PathBuf,
    run_tag: String,
}

impl std::fmt::Debug for FaultFsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultFsHandle")
            .field("mountpoint", &self.mountpoint)
            .field("backing", &self.backing)
            .field("run_tag", &self.run_tag)
            .finish()
    }
}

impl FaultFsHandle {
    /// Where it is mounted (canonical).
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The backing dir (canonical).
    pub fn backing_dir(&self) -> &Path {
        &self.backing
    }

    /// The run tag in its fsname.
    pub fn run_tag(&self) -> &str {
        &self.run_tag
    }

    /// Power loss: drops every unsynced byte and directory entry. Call it after the node is killed (kill -9) and
    /// before it restarts; the record says exactly what was lost.
    pub fn lose_unsynced(&self) -> PowerLossRecord {
        self.power_loss(&PowerLossSpec::default())
    }

    /// Power loss as `spec` says (optionally tearing the newest unsynced write).
    pub fn power_loss(&self, spec: &PowerLossSpec) -> PowerLossRecord {
        let (record, inodes) = {
            let mut rng = lock(&self.torn_rng);
            let mut state = lock(&self.inner.state);
            let record = state.power_loss(spec.torn_write.then_some(&mut *rng));
            (record, state.looked_up_inodes())
        };
        // Pages of shared mmaps are the only kernel cache left; drop them (outside our locks: the kernel may call
        // back into the filesystem).
        if let Some(notifier) = &self.notifier {
            for ino in inodes {
                let _ = notifier.inval_inode(fuser::INodeNo(ino), 0, 0);
            }
        }
        record
    }

    /// Replaces the injected faults (an empty [`FsFaults`] clears them). The quota is measured now.
    pub fn set_faults(&self, faults: &FsFaults) -> Result<(), FaultFsError> {
        faults.validate().map_err(FaultFsError::Invalid)?;
        let generation = self.faults_set.fetch_add(1, Ordering::Relaxed);
        let rng = crate::rng::stream(
            self.inner.options.seed,
            &format!("fusefs/{}/faults/{generation}", self.run_tag),
        );
        let mut injector_slot = lock(&self.inner.injector);
        let counts = injector_slot.as_ref().map(|i| i.counts).unwrap_or_default();
        let injector = Injector::new(faults, rng, counts).map_err(FaultFsError::Invalid)?;
        {
            let mut state = lock(&self.inner.state);
            state.quota = match faults.enospc {
                Some(enospc) => Some(Quota {
                    limit_bytes: enospc.quota_bytes,
                    used_bytes: state.measure_usage().map_err(|source| FaultFsError::Io {
                        what: "measuring usage of",
                        path: self.backing.display().to_string(),
                        source,
                    })?,
                }),
                None => None,
            };
        }
        self.inner.rules_active.store(injector.has_rules(), Ordering::Relaxed);
        *injector_slot = Some(injector);
        Ok(())
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.set_faults(&FsFaults::default())
            .expect("no faults always validate");
    }

    /// What is unsynced now, and what was injected.
    pub fn stats(&self) -> FsStats {
        let (unsynced_files, unsynced_dirs) = lock(&self.inner.state).unsynced_summary();
        let mut injected = lock(&self.inner.injector)
            .as_ref()
            .map(|i| i.counts)
            .unwrap_or_default();
        injected.enospc = self.inner.enospc_count.load(Ordering::Relaxed);
        FsStats {
            unsynced_files,
            unsynced_dirs,
            injected,
        }
    }

    /// Unmounts (lazily if a process still has files open there) and waits, bounded, for the threads to end.
    pub fn unmount(mut self) -> Result<(), FaultFsError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), FaultFsError> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        self.notifier = None;
        let unmounted = mounts::unmount(&self.mountpoint).map_err(|source| FaultFsError::Io {
            what: "unmounting",
            path: self.mountpoint.display().to_string(),
            source,
        });
        let deadline = Instant::now() + UNMOUNT_WAIT;
        while !session.guard.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if session.guard.is_finished() {
            if let Err(e) = session.join() {
                tracing::warn!(mountpoint = %self.mountpoint.display(), error = %e, "fault fs session ended with an error");
            }
        } else {
            tracing::warn!(
                mountpoint = %self.mountpoint.display(),
                "fault fs still in use {UNMOUNT_WAIT:?} after a lazy unmount; leaving its thread behind"
            );
            drop(session);
        }
        lock(&self.inner.handles).clear();
        if let Err(e) = lock(&self.inner.state).settle() {
            tracing::warn!(backing = %self.backing.display(), error = %e, "fault fs: could not remove its hidden dir");
        }
        unmounted
    }
}

impl Drop for FaultFsHandle {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!(error = %e, "fault fs unmount on drop failed");
        }
    }
}
