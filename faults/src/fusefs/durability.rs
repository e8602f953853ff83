//! What the fault filesystem knows: its inodes, and what of the backing dir is durable.
//!
//! Writes and directory changes go to the backing dir at once (so reads, listings and a clean unmount see them, and
//! memory stays bounded by what a sync would make durable, not by write volume), and this state records how to take
//! them back: for each file written since its last `fsync`/`fdatasync`, its size at that sync and the original bytes
//! of every 4 KiB page a write or truncate overwrote below that size (an undo log); for each directory changed since
//! its last `fsync`, its entries at that sync (name -> inode). An inode that leaves every current name while a
//! durable entry still names it keeps a hard link (a directory: the directory itself) in the hidden
//! `.faultline-fault-fs/keep/` dir of the backing dir, so a power loss can bring it back.
//!
//! A power loss ([`State::power_loss`]) rolls the backing dir back to exactly that durable state: files are cut to
//! their synced size and their saved pages written back (optionally keeping a prefix of the newest unsynced write: a
//! torn write); every changed directory is emptied into a staging dir and refilled from its durable entries; what is
//! left in staging never became durable and is deleted. The observable result is LazyFS's: unsynced bytes and
//! unsynced directory entries are gone.
//!
//! Durability is per object, as POSIX promises: a created file needs an `fsync` of its directory, a rename needs one
//! of both directories; file metadata (mode, owner, times) is not rolled back. Two options make it what real file
//! systems give: `Journaled` metadata commits every directory change and truncation at any fsync (one journal
//! transaction carries them all, as on ext4 and XFS), and a [`Writeback`] makes old unsynced changes durable (a file
//! written back as a whole once its oldest unsynced write is `data_after` old; every directory change and truncation
//! once the oldest uncommitted one is `metadata_after` old). Both are applied lazily and exactly: a file's expiry is
//! checked before its next change and at the power loss, the journal's before the next metadata change and at the
//! power loss, so nothing that happened after the moment of expiry is counted in.
//!
//! A truncation is metadata: committed, it sets the durable size, and the bytes it cut off are gone for good (a
//! truncation that grew the file leaves zeros, as a hole reads). The undo log keeps that as `zeros_from`: the durable
//! content is the saved pages below it, and zeros from it up to the durable size.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::writeback::{Clock, Writeback};
use super::HIDDEN_DIR_NAME;

/// Granularity of the undo log.
pub(crate) const PAGE_BYTES: u64 = 4096;
/// The root inode, as FUSE numbers it.
pub(crate) const ROOT_INO: u64 = 1;
/// Upper bound on the zero pages a synced write past the durable end saves for the gap before it (1 MiB).
const GAP_PAGES_SAVED_MAX: u64 = 256;
/// Upper bound on entries walked when rebuilding paths or measuring usage.
const WALK_ENTRIES_MAX: usize = 1_000_000;

/// What the filesystem remembers about one inode.
#[derive(Debug)]
pub(crate) struct Node {
    /// Path relative to the backing root (`""` for the root); `None` once it has no name we know.
    pub path: Option<PathBuf>,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// Kernel lookups not yet forgotten.
    pub lookups: u64,
    key: (u64, u64),
}

/// The undo log of a file written or truncated since its last sync.
#[derive(Debug)]
struct FileLog {
    durable_size: u64,
    /// Durable content from here up to `durable_size` is zeros (a committed truncation cut it or grew the file).
    zeros_from: u64,
    /// Page index -> the page's bytes (up to `zeros_from`) as of the last sync.
    undo: BTreeMap<u64, Vec<u8>>,
    last_write: Option<LastWrite>,
    /// When the first change since the last sync was made (ms on the state's clock), for write-back.
    dirtied_at_ms: u64,
    /// Truncations not yet committed: the smallest size and the latest, since the last sync or commit.
    truncated: Option<(u64, u64)>,
}

impl FileLog {
    /// A log whose durable content is the file's first `size` bytes, dirtied now.
    fn new(size: u64, now_ms: u64) -> FileLog {
        FileLog {
            durable_size: size,
            zeros_from: size,
            undo: BTreeMap::new(),
            last_write: None,
            dirtied_at_ms: now_ms,
            truncated: None,
        }
    }

    /// A journal commit of the truncations since the last one: the durable file is cut at the smallest size and
    /// then set to the latest (zeros past the cut).
    fn commit_truncation(&mut self) {
        let Some((smallest, latest)) = self.truncated.take() else {
            return;
        };
        if smallest < self.zeros_from {
            self.zeros_from = smallest;
            let cut = smallest;
            self.undo.retain(|&page, _| page * PAGE_BYTES < cut);
            if let Some((&page, bytes)) = self.undo.iter_mut().next_back() {
                bytes.truncate((cut - page * PAGE_BYTES).min(bytes.len() as u64) as usize);
            }
        }
        self.durable_size = latest;
        self.zeros_from = self.zeros_from.min(latest);
    }
}

#[derive(Debug)]
struct LastWrite {
    seq: u64,
    offset: u64,
    data: Vec<u8>,
}

/// A byte quota over the apparent size of every file (the `enospc` fault).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quota {
    pub limit_bytes: u64,
    pub used_bytes: u64,
}

/// One file a power loss rolled back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileLoss {
    /// Path relative to the data dir (or the hidden keep dir for a file with no name left).
    pub path: String,
    /// Size before the power loss.
    pub size_before_bytes: u64,
    /// Size after (the last synced size, plus a torn prefix if any).
    pub size_after_bytes: u64,
    /// Bytes of synced content that had been overwritten and were put back.
    pub restored_bytes: u64,
}

/// The part of the newest unsynced write that a torn-write power loss kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornWrite {
    /// Path relative to the data dir.
    pub path: String,
    /// Offset of the write.
    pub offset: u64,
    /// Its length.
    pub write_bytes: u64,
    /// How many of its first bytes survived (0 < kept < write, for writes of 2 bytes or more).
    pub kept_bytes: u64,
}

/// Exactly what a power loss dropped, for the history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PowerLossRecord {
    /// Files cut back to their synced state.
    pub files: Vec<FileLoss>,
    /// Directory entries that had not been made durable and are gone (`dir/name`).
    pub entries_dropped: Vec<String>,
    /// Entries that had been removed or replaced without a directory sync and are back.
    pub entries_restored: Vec<String>,
    /// The torn write, if the power loss tore one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torn_write: Option<TornWrite>,
    /// Problems met while rolling back (the rollback goes on past them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Inodes and durability of one mounted fault filesystem.
#[derive(Debug)]
pub(crate) struct State {
    root: PathBuf,
    nodes: HashMap<u64, Node>,
    by_key: HashMap<(u64, u64), u64>,
    next_ino: u64,
    dir_logs: HashMap<u64, BTreeMap<OsString, u64>>,
    durable_refs: HashMap<u64, u32>,
    kept: HashSet<u64>,
    file_logs: HashMap<u64, FileLog>,
    write_seq: u64,
    pub quota: Option<Quota>,
    writeback: Writeback,
    clock: Clock,
    /// When the oldest metadata change not yet committed was made (the journal's running transaction).
    metadata_dirty_since_ms: Option<u64>,
}

fn key_of(metadata: &Metadata) -> (u64, u64) {
    (metadata.dev(), metadata.ino())
}

fn hidden_rel() -> PathBuf {
    PathBuf::from(HIDDEN_DIR_NAME)
}

fn keep_rel(ino: u64) -> PathBuf {
    hidden_rel().join("keep").join(ino.to_string())
}

impl State {
    /// State for a freshly mounted backing dir: everything in it is durable; old unsynced changes become durable as
    /// `writeback` says.
    pub fn new(root: PathBuf, writeback: Writeback) -> io::Result<State> {
        let metadata = std::fs::symlink_metadata(&root)?;
        let mut state = State {
            root,
            nodes: HashMap::new(),
            by_key: HashMap::new(),
            next_ino: ROOT_INO + 1,
            dir_logs: HashMap::new(),
            durable_refs: HashMap::new(),
            kept: HashSet::new(),
            file_logs: HashMap::new(),
            write_seq: 0,
            quota: None,
            writeback,
            clock: Clock::start(),
            metadata_dirty_since_ms: None,
        };
        state.nodes.insert(
            ROOT_INO,
            Node {
                path: Some(PathBuf::new()),
                is_dir: true,
                lookups: 1,
                key: key_of(&metadata),
            },
        );
        state.by_key.insert(key_of(&metadata), ROOT_INO);
        Ok(state)
    }

    /// The backing root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute backing path of an inode.
    pub fn abs(&self, ino: u64) -> io::Result<PathBuf> {
        let rel = self.rel(ino)?;
        Ok(self.root.join(rel))
    }

    /// Path relative to the backing root.
    pub fn rel(&self, ino: u64) -> io::Result<&Path> {
        match self.nodes.get(&ino).and_then(|node| node.path.as_deref()) {
            Some(path) => Ok(path),
            None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }

    /// Relative path of `name` in directory `parent`; refuses the hidden dir's name at the root.
    pub fn child_rel(&self, parent: u64, name: &OsStr) -> io::Result<PathBuf> {
        if parent == ROOT_INO && name == HIDDEN_DIR_NAME {
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        Ok(self.rel(parent)?.join(name))
    }

    /// Number for the inode at `rel` (allocating one on first sight); records `rel` as its path.
    pub fn intern(&mut self, rel: &Path, metadata: &Metadata) -> u64 {
        let key = key_of(metadata);
        let ino = match self.by_key.get(&key) {
            Some(&ino) => ino,
            None => {
                let ino = self.next_ino;
                self.next_ino += 1;
                self.by_key.insert(key, ino);
                ino
            }
        };
        let node = self.nodes.entry(ino).or_insert_with(|| Node {
            path: None,
            is_dir: metadata.is_dir(),
            lookups: 0,
            key,
        });
        node.path = Some(rel.to_path_buf());
        node.is_dir = metadata.is_dir();
        ino
    }

    /// Our number for a backing inode already seen, if any (for listings).
    pub fn known(&self, dev: u64, st_ino: u64) -> Option<u64> {
        self.by_key.get(&(dev, st_ino)).copied()
    }

    /// Counts a kernel lookup.
    pub fn looked_up(&mut self, ino: u64) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.lookups += 1;
        }
    }

    /// The kernel forgot `n` lookups; a nameless, unreferenced inode is dropped.
    pub fn forget(&mut self, ino: u64, n: u64) {
        let Some(node) = self.nodes.get_mut(&ino) else {
            return;
        };
        node.lookups = node.lookups.saturating_sub(n);
        let unreferenced = node.lookups == 0
            && node.path.is_none()
            && ino != ROOT_INO
            && !self.file_logs.contains_key(&ino)
            && !self.durable_refs.contains_key(&ino);
        if unreferenced {
            let key = node.key;
            self.nodes.remove(&ino);
            if self.by_key.get(&key) == Some(&ino) {
                self.by_key.remove(&key);
            }
        }
    }

    /// Inodes the kernel may hold, for cache invalidation after a power loss.
    pub fn looked_up_inodes(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.lookups > 0)
            .map(|(&ino, _)| ino)
            .collect()
    }

    /// Records directory `dir`'s current entries as its durable ones, unless it already has unsynced changes.
    /// Called before every change to a directory.
    pub fn log_dir(&mut self, dir: u64) -> io::Result<()> {
        self.metadata_change();
        if self.dir_logs.contains_key(&dir) {
            return Ok(());
        }
        let dir_rel = self.rel(dir)?.to_path_buf();
        let mut entries = BTreeMap::new();
        for entry in std::fs::read_dir(self.root.join(&dir_rel))? {
            let entry = entry?;
            let name = entry.file_name();
            if dir == ROOT_INO && name == HIDDEN_DIR_NAME {
                continue;
            }
            let metadata = std::fs::symlink_metadata(entry.path())?;
            let ino = self.intern(&dir_rel.join(&name), &metadata);
            entries.insert(name, ino);
        }
        for ino in entries.values() {
            *self.durable_refs.entry(*ino).or_insert(0) += 1;
        }
        self.dir_logs.insert(dir, entries);
        Ok(())
    }

    /// Before the entry `rel` (inode `ino`) is removed or replaced: if a durable entry still names the inode and it
    /// has no kept link yet, keep it (hard link; a directory is moved, and `true` says the caller must not remove
    /// it again).
    pub fn keep_if_durable(&mut self, ino: u64, rel: &Path, is_dir: bool) -> io::Result<bool> {
        if !self.durable_refs.contains_key(&ino) || self.kept.contains(&ino) {
            return Ok(false);
        }
        let keep_dir = self.root.join(hidden_rel()).join("keep");
        std::fs::create_dir_all(&keep_dir)?;
        let keep = keep_rel(ino);
        if is_dir {
            std::fs::rename(self.root.join(rel), self.root.join(&keep))?;
        } else {
            std::fs::hard_link(self.root.join(rel), self.root.join(&keep))?;
        }
        self.kept.insert(ino);
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.path = Some(keep);
        }
        Ok(is_dir)
    }

    /// After the name `rel` of `ino` was removed: forget the name (a kept inode keeps its keep path).
    pub fn unnamed(&mut self, ino: u64, rel: &Path, last_link: bool) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            if node.path.as_deref() == Some(rel) {
                node.path = None;
            }
            if last_link && !self.kept.contains(&ino) {
                node.path = None;
                let key = node.key;
                if self.by_key.get(&key) == Some(&ino) {
                    self.by_key.remove(&key);
                }
            }
        }
    }

    /// After a rename of `from` to `to`: every known path under `from` moves.
    pub fn renamed(&mut self, from: &Path, to: &Path) {
        for node in self.nodes.values_mut() {
            let Some(path) = &node.path else { continue };
            if let Ok(rest) = path.strip_prefix(from) {
                node.path = Some(if rest.as_os_str().is_empty() {
                    to.to_path_buf()
                } else {
                    to.join(rest)
                });
            }
        }
    }

    /// A created file starts with nothing durable: its synced size is 0.
    pub fn created_file(&mut self, ino: u64) {
        let now_ms = self.clock.now_ms();
        self.file_logs.insert(ino, FileLog::new(0, now_ms));
    }

    /// The file's undo log, first writing it back if its oldest unsynced change is past the write-back age (a
    /// change after a write-back starts a fresh dirty period, as in the kernel).
    fn file_log(&mut self, ino: u64, file: &File) -> io::Result<&mut FileLog> {
        let now_ms = self.clock.now_ms();
        let expired = self
            .file_logs
            .get(&ino)
            .is_some_and(|log| self.writeback.data_after.expired(log.dirtied_at_ms, now_ms));
        if expired {
            self.file_logs.remove(&ino);
        }
        match self.file_logs.entry(ino) {
            std::collections::hash_map::Entry::Occupied(entry) => Ok(entry.into_mut()),
            std::collections::hash_map::Entry::Vacant(entry) => {
                Ok(entry.insert(FileLog::new(file.metadata()?.len(), now_ms)))
            }
        }
    }

    /// Before a directory change or a truncation: commits the journal's running transaction if it is past the
    /// metadata write-back age, and opens one if none is open.
    fn metadata_change(&mut self) {
        let now_ms = self.clock.now_ms();
        self.commit_expired_metadata(now_ms);
        self.metadata_dirty_since_ms.get_or_insert(now_ms);
    }

    fn commit_expired_metadata(&mut self, now_ms: u64) {
        let expired = self
            .metadata_dirty_since_ms
            .is_some_and(|since| self.writeback.metadata_after.expired(since, now_ms));
        if expired {
            self.commit_metadata();
        }
    }

    /// Everything past its write-back age becomes durable (before a power loss decides what is lost).
    fn write_back_expired(&mut self) {
        let now_ms = self.clock.now_ms();
        let data_after = self.writeback.data_after;
        self.file_logs
            .retain(|_, log| !data_after.expired(log.dirtied_at_ms, now_ms));
        self.commit_expired_metadata(now_ms);
    }

    /// Saves the synced bytes of every page in `start..end` not saved yet (only below `zeros_from`: above it the
    /// durable content is zeros, which the rollback restores by cutting and growing the file).
    fn save_pages(log: &mut FileLog, file: &File, start: u64, end: u64) -> io::Result<()> {
        let end = end.min(log.zeros_from);
        if start >= end {
            return Ok(());
        }
        for page in start / PAGE_BYTES..=(end - 1) / PAGE_BYTES {
            if log.undo.contains_key(&page) {
                continue;
            }
            let page_start = page * PAGE_BYTES;
            let page_end = (page_start + PAGE_BYTES).min(log.zeros_from);
            let mut bytes = vec![0u8; (page_end - page_start) as usize];
            file.read_exact_at(&mut bytes, page_start)?;
            log.undo.insert(page, bytes);
        }
        Ok(())
    }

    /// Checks the quota for a change of `file`'s size to `new_size`, and accounts it.
    fn charge(&mut self, file: &File, new_size: u64) -> io::Result<()> {
        let Some(quota) = self.quota.as_mut() else {
            return Ok(());
        };
        let size = file.metadata()?.len();
        if new_size > size {
            let growth = new_size - size;
            if quota.used_bytes + growth > quota.limit_bytes {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            quota.used_bytes += growth;
        } else {
            quota.used_bytes = quota.used_bytes.saturating_sub(size - new_size);
        }
        Ok(())
    }

    /// Writes `data` at `offset` of `file` (inode `ino`), logging what it overwrites.
    pub fn write(&mut self, ino: u64, file: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        let end = offset + data.len() as u64;
        if self.quota.is_some() {
            let size = file.metadata()?.len();
            self.charge(file, end.max(size))?;
        }
        self.write_seq += 1;
        let seq = self.write_seq;
        let log = self.file_log(ino, file)?;
        Self::save_pages(log, file, offset, end)?;
        file.write_all_at(data, offset)?;
        match &mut log.last_write {
            Some(last) => {
                last.seq = seq;
                last.offset = offset;
                last.data.clear();
                last.data.extend_from_slice(data);
            }
            None => {
                log.last_write = Some(LastWrite {
                    seq,
                    offset,
                    data: data.to_vec(),
                })
            }
        }
        Ok(())
    }

    /// A write that is durable when it returns: through an `O_SYNC`/`O_DSYNC` descriptor, or `pwritev2` with
    /// `RWF_SYNC`/`RWF_DSYNC` (the kernel marks such a write in its request). POSIX's synchronized I/O data integrity:
    /// the written bytes and the metadata needed to read them back (the file's size, and with it a truncation made
    /// before) are on disk; other unsynced writes to the file are not (the kernel syncs only the written range).
    pub fn write_synced(&mut self, ino: u64, file: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write(ino, file, offset, data)?;
        if data.is_empty() {
            return Ok(());
        }
        let end = offset + data.len() as u64;
        let Some(log) = self.file_logs.get_mut(&ino) else {
            return Ok(());
        };
        log.commit_truncation();
        // Saved pages below the zeros take the written bytes: that is their durable content now.
        for (&page, bytes) in log.undo.range_mut(offset / PAGE_BYTES..=(end - 1) / PAGE_BYTES) {
            let page_start = page * PAGE_BYTES;
            let (from, to) = (offset.max(page_start), end.min(page_start + bytes.len() as u64));
            if from < to {
                bytes[(from - page_start) as usize..(to - page_start) as usize]
                    .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
            }
        }
        if end > log.zeros_from {
            Self::extend_durable(log, file, offset, data)?;
        }
        log.durable_size = log.durable_size.max(end);
        log.last_write = None; // it returned durable: nothing of it can tear
        let size = file.metadata()?.len();
        let clean =
            log.undo.is_empty() && log.truncated.is_none() && log.zeros_from == size && log.durable_size == size;
        if clean {
            self.file_logs.remove(&ino); // nothing of the file is unsynced any more
        }
        Ok(())
    }

    /// The durable content of `log` grows past `zeros_from` to the end of a synced write at `offset`: the written
    /// bytes, and zeros in any gap between the old durable end and the write (unsynced bytes there were never made
    /// durable; the file system reads an unwritten range as zeros). Saved pages are extended with that content, and
    /// pages holding gap bytes saved; the rest stay unsaved (their current content is their durable content).
    fn extend_durable(log: &mut FileLog, file: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        let end = offset + data.len() as u64;
        let old = log.zeros_from;
        let gap_pages = offset.saturating_sub(old) / PAGE_BYTES;
        // A gap this large holds zeros nobody asked to keep; saving it would cost its size in memory. Past the
        // bound its unsynced bytes count as durable (a power loss then loses less than a disk would, never more).
        let model_gap = gap_pages <= GAP_PAGES_SAVED_MAX;
        for page in old / PAGE_BYTES..=(end - 1) / PAGE_BYTES {
            let page_start = page * PAGE_BYTES;
            let page_end = (page_start + PAGE_BYTES).min(end);
            // An unsaved page with no modelled gap in it reads as its durable content already: below `old` it is
            // unchanged since the sync, above it the write or an unmodelled gap.
            let has_gap = model_gap && old.max(page_start) < offset.min(page_end);
            if !log.undo.contains_key(&page) && !has_gap {
                continue;
            }
            let mut bytes = vec![0u8; (page_end - page_start) as usize];
            let below_old = old.saturating_sub(page_start).min(bytes.len() as u64) as usize;
            match log.undo.get(&page) {
                Some(saved) => bytes[..below_old].copy_from_slice(&saved[..below_old]),
                None => file.read_exact_at(&mut bytes[..below_old], page_start)?,
            }
            let from = offset.max(old).max(page_start);
            if from < page_end {
                bytes[(from - page_start) as usize..]
                    .copy_from_slice(&data[(from - offset) as usize..(page_end - offset) as usize]);
            }
            if !model_gap {
                let gap_to = offset.min(page_end).max(page_start + below_old as u64);
                let gap_from = page_start + below_old as u64;
                if gap_from < gap_to {
                    file.read_exact_at(
                        &mut bytes[(gap_from - page_start) as usize..(gap_to - page_start) as usize],
                        gap_from,
                    )?;
                }
            }
            log.undo.insert(page, bytes);
        }
        log.zeros_from = end;
        Ok(())
    }

    /// Sets the size of `file` (inode `ino`), logging what a shrink cuts off. A truncation is metadata: the
    /// journal's next commit makes it durable.
    pub fn truncate(&mut self, ino: u64, file: &File, size: u64) -> io::Result<()> {
        self.charge(file, size)?;
        self.metadata_change();
        let log = self.file_log(ino, file)?;
        let durable_size = log.durable_size;
        Self::save_pages(log, file, size, durable_size)?;
        file.set_len(size)?;
        log.truncated = Some(match log.truncated {
            Some((smallest, _)) => (smallest.min(size), size),
            None => (size, size),
        });
        Ok(())
    }

    /// `fallocate` on `file`: punching or zeroing logs the range first.
    pub fn fallocate(&mut self, ino: u64, file: &File, offset: u64, length: u64, mode: i32) -> io::Result<()> {
        let end = offset + length;
        let keep_size = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        if !keep_size && self.quota.is_some() {
            let size = file.metadata()?.len();
            self.charge(file, end.max(size))?;
        }
        let log = self.file_log(ino, file)?;
        if mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_COLLAPSE_RANGE) != 0 {
            let durable_size = log.durable_size;
            let from = if mode & libc::FALLOC_FL_COLLAPSE_RANGE != 0 {
                offset
            } else {
                durable_size.min(offset)
            };
            let to = if mode & libc::FALLOC_FL_COLLAPSE_RANGE != 0 {
                durable_size
            } else {
                end
            };
            Self::save_pages(log, file, from, to)?;
        }
        use std::os::fd::AsRawFd;
        // SAFETY: plain syscall on an fd we own; no memory is passed.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset as i64, length as i64) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `fsync`/`fdatasync` of a file: everything written to it so far is durable.
    pub fn sync_file(&mut self, ino: u64) {
        self.file_logs.remove(&ino);
    }

    /// `fsync` of a directory: its current entries are durable. Kept inodes nothing durable names any more go.
    pub fn sync_dir(&mut self, dir: u64) {
        let Some(entries) = self.dir_logs.remove(&dir) else {
            return;
        };
        for ino in entries.values() {
            let Some(count) = self.durable_refs.get_mut(ino) else {
                continue;
            };
            *count -= 1;
            if *count > 0 {
                continue;
            }
            self.durable_refs.remove(ino);
            if self.kept.remove(ino) {
                let keep = self.root.join(keep_rel(*ino));
                let is_dir = keep.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false);
                let removed = if is_dir {
                    std::fs::remove_dir_all(&keep)
                } else {
                    std::fs::remove_file(&keep)
                };
                if let Err(e) = removed {
                    tracing::warn!(path = %keep.display(), error = %e, "fault fs: could not drop a kept inode");
                }
                self.file_logs.remove(ino);
                if let Some(node) = self.nodes.get_mut(ino) {
                    node.path = None;
                }
            }
        }
    }

    /// A journal commit: every directory's current entries and every file's truncations become durable (see
    /// `MetadataDurability::Journaled`).
    pub fn commit_metadata(&mut self) {
        let dirs: Vec<u64> = self.dir_logs.keys().copied().collect();
        for dir in dirs {
            self.sync_dir(dir);
        }
        for log in self.file_logs.values_mut() {
            log.commit_truncation();
        }
        self.metadata_dirty_since_ms = None;
    }

    /// Bytes written but not yet synced (an estimate for stats: growth past the synced size plus saved pages).
    pub fn unsynced_summary(&self) -> (usize, usize) {
        (self.file_logs.len(), self.dir_logs.len())
    }

    /// Total apparent size of the files in the backing dir (for the quota).
    pub fn measure_usage(&self) -> io::Result<u64> {
        let mut total = 0;
        walk(&self.root, |_, metadata| {
            if metadata.is_file() {
                total += metadata.len();
            }
        })?;
        Ok(total)
    }

    /// A clean unmount: everything is durable; the hidden dir goes.
    pub fn settle(&mut self) -> io::Result<()> {
        self.file_logs.clear();
        self.dir_logs.clear();
        self.durable_refs.clear();
        self.kept.clear();
        self.metadata_dirty_since_ms = None;
        remove_hidden(&self.root)
    }

    /// Power loss: rolls the backing dir back to its durable state (see the module docs). With `torn`, the newest
    /// unsynced write keeps a random non-empty proper prefix.
    pub fn power_loss(&mut self, torn: Option<&mut ChaCha8Rng>) -> PowerLossRecord {
        let mut record = PowerLossRecord::default();
        self.write_back_expired();
        let torn_choice = torn.and_then(|rng| self.choose_torn(rng));
        self.roll_back_files(torn_choice, &mut record);
        if let Err(e) = self.roll_back_dirs(&mut record) {
            record.warnings.push(format!("rolling back directories: {e}"));
        }
        self.file_logs.clear();
        self.dir_logs.clear();
        self.durable_refs.clear();
        self.kept.clear();
        self.metadata_dirty_since_ms = None;
        if let Err(e) = remove_hidden(&self.root) {
            record.warnings.push(format!("removing the staging dir: {e}"));
        }
        if let Err(e) = self.rebuild_paths() {
            record.warnings.push(format!("re-reading the backing dir: {e}"));
        }
        record
    }

    fn choose_torn(&self, rng: &mut ChaCha8Rng) -> Option<(u64, u64)> {
        let (ino, last) = self
            .file_logs
            .iter()
            .filter_map(|(ino, log)| log.last_write.as_ref().map(|last| (*ino, last)))
            .max_by_key(|(_, last)| last.seq)?;
        let length = last.data.len() as u64;
        let kept = if length >= 2 { rng.gen_range(1..length) } else { 0 };
        Some((ino, kept))
    }

    fn roll_back_files(&mut self, torn: Option<(u64, u64)>, record: &mut PowerLossRecord) {
        let mut inos: Vec<u64> = self.file_logs.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let log = &self.file_logs[&ino];
            let Ok(rel) = self.rel(ino).map(Path::to_path_buf) else {
                continue; // no name left and not kept: nothing durable can reach it
            };
            let path = self.root.join(&rel);
            let result = (|| -> io::Result<FileLoss> {
                let file = OpenOptions::new().write(true).open(&path)?;
                let size_before_bytes = file.metadata()?.len();
                file.set_len(log.zeros_from)?;
                file.set_len(log.durable_size)?;
                let mut restored_bytes = 0;
                for (page, bytes) in &log.undo {
                    file.write_all_at(bytes, page * PAGE_BYTES)?;
                    restored_bytes += bytes.len() as u64;
                }
                let mut size_after_bytes = log.durable_size;
                if let (Some((torn_ino, kept)), Some(last)) = (torn, &log.last_write) {
                    if torn_ino == ino {
                        file.write_all_at(&last.data[..kept as usize], last.offset)?;
                        size_after_bytes = size_after_bytes.max(last.offset + kept);
                        record.torn_write = Some(TornWrite {
                            path: rel.display().to_string(),
                            offset: last.offset,
                            write_bytes: last.data.len() as u64,
                            kept_bytes: kept,
                        });
                    }
                }
                file.sync_all()?;
                Ok(FileLoss {
                    path: rel.display().to_string(),
                    size_before_bytes,
                    size_after_bytes,
                    restored_bytes,
                })
            })();
            match result {
                Ok(loss) => record.files.push(loss),
                Err(e) => record.warnings.push(format!("rolling back {}: {e}", rel.display())),
            }
        }
    }

    /// Empties every changed directory into staging and refills it from its durable entries.
    fn roll_back_dirs(&mut self, record: &mut PowerLossRecord) -> io::Result<()> {
        if self.dir_logs.is_empty() {
            return Ok(());
        }
        let stage = self.root.join(hidden_rel()).join("stage");
        std::fs::create_dir_all(&stage)?;
        let stage_dir = File::open(&stage)?;
        let stage_fd = fd_path(&stage_dir);
        let keep = self.root.join(hidden_rel()).join("keep");
        // Open every changed directory first: the fds stay valid while directories move around.
        let mut dirs: Vec<(u64, PathBuf, File)> = Vec::new();
        for &dir in self.dir_logs.keys() {
            match self.rel(dir).map(Path::to_path_buf) {
                Ok(rel) => match File::open(self.root.join(&rel)) {
                    Ok(file) => dirs.push((dir, rel, file)),
                    Err(e) => record.warnings.push(format!("opening {}: {e}", rel.display())),
                },
                Err(_) => record.warnings.push(format!("directory inode {dir} has no name left")),
            }
        }
        dirs.sort_by(|a, b| a.1.cmp(&b.1));
        // Durable inodes that sit in an unchanged directory now: link them into staging too (files only).
        let current = self.current_entries(&dirs)?;
        let staged_by_move: HashSet<u64> = current.values().flat_map(|m| m.values().copied()).collect();
        for entries in self.dir_logs.values() {
            for &ino in entries.values() {
                if staged_by_move.contains(&ino) || self.kept.contains(&ino) {
                    continue;
                }
                if let Some(node) = self.nodes.get(&ino) {
                    if let (false, Some(rel)) = (node.is_dir, &node.path) {
                        let target = stage.join(ino.to_string());
                        if !target.exists() {
                            std::fs::hard_link(self.root.join(rel), &target)?;
                        }
                    }
                }
            }
        }
        // Phase 1: move every current entry of a changed directory into staging, named by inode.
        for (dir, rel, file) in &dirs {
            for (name, ino) in &current[dir] {
                let from = fd_path(file).join(name);
                let to = stage_fd.join(ino.to_string());
                if to.symlink_metadata().is_ok() {
                    std::fs::remove_file(&from)?;
                } else {
                    std::fs::rename(&from, &to)?;
                }
                let durable = self.dir_logs[dir].get(name);
                if durable != Some(ino) {
                    record.entries_dropped.push(rel.join(name).display().to_string());
                }
            }
        }
        // Phase 2: refill from the durable entries.
        let mut placed_dirs = HashSet::new();
        for (dir, rel, file) in &dirs {
            for (name, ino) in &self.dir_logs[dir] {
                let staged = stage_fd.join(ino.to_string());
                let source = if staged.symlink_metadata().is_ok() {
                    staged
                } else {
                    keep.join(ino.to_string())
                };
                let to = fd_path(file).join(name);
                let is_dir = source.symlink_metadata().map(|m| m.is_dir());
                let placed = match is_dir {
                    Ok(true) if placed_dirs.insert(*ino) => std::fs::rename(&source, &to),
                    Ok(true) => Err(io::Error::other("directory already placed under another name")),
                    Ok(false) => std::fs::hard_link(&source, &to),
                    Err(e) => Err(e),
                };
                match placed {
                    Ok(()) => {
                        if current[dir].get(name) != Some(ino) {
                            record.entries_restored.push(rel.join(name).display().to_string());
                        }
                    }
                    Err(e) => record
                        .warnings
                        .push(format!("restoring {}: {e}", rel.join(name).display())),
                }
            }
            file.sync_all()?;
        }
        Ok(())
    }

    fn current_entries(&mut self, dirs: &[(u64, PathBuf, File)]) -> io::Result<HashMap<u64, BTreeMap<OsString, u64>>> {
        let mut current = HashMap::new();
        for (dir, rel, file) in dirs {
            let mut entries = BTreeMap::new();
            for entry in std::fs::read_dir(fd_path(file))? {
                let entry = entry?;
                let name = entry.file_name();
                if *dir == ROOT_INO && name == HIDDEN_DIR_NAME {
                    continue;
                }
                let metadata = std::fs::symlink_metadata(entry.path())?;
                let ino = self.intern(&rel.join(&name), &metadata);
                entries.insert(name, ino);
            }
            current.insert(*dir, entries);
        }
        Ok(current)
    }

    /// After a power loss: every inode's path is whatever the backing dir now says.
    fn rebuild_paths(&mut self) -> io::Result<()> {
        for (&ino, node) in self.nodes.iter_mut() {
            if ino != ROOT_INO {
                node.path = None;
            }
        }
        let mut found = Vec::new();
        walk(&self.root, |rel, metadata| {
            found.push((rel.to_path_buf(), key_of(metadata)))
        })?;
        for (rel, key) in found {
            if let Some(ino) = self.by_key.get(&key) {
                if let Some(node) = self.nodes.get_mut(ino) {
                    node.path = Some(rel);
                }
            }
        }
        let nameless: Vec<(u64, (u64, u64))> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.path.is_none())
            .map(|(&ino, node)| (ino, node.key))
            .collect();
        for (ino, key) in nameless {
            if self.by_key.get(&key) == Some(&ino) {
                self.by_key.remove(&key);
            }
        }
        Ok(())
    }
}

/// `/proc/self/fd/N`: a path that follows the open directory wherever it moves.
fn fd_path(file: &File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Removes the hidden dir of a backing root, if present.
pub(crate) fn remove_hidden(root: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(root.join(HIDDEN_DIR_NAME)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Walks the backing tree (not the hidden dir), calling `visit(relative path, metadata)` for every entry.
fn walk(root: &Path, mut visit: impl FnMut(&Path, &Metadata)) -> io::Result<()> {
    let mut pending = vec![PathBuf::new()];
    let mut seen = 0usize;
    while let Some(dir_rel) = pending.pop() {
        for entry in std::fs::read_dir(root.join(&dir_rel))? {
            let entry = entry?;
            let name = entry.file_name();
            if dir_rel.as_os_str().is_empty() && name == HIDDEN_DIR_NAME {
                continue;
            }
            seen += 1;
            if seen > WALK_ENTRIES_MAX {
                return Err(io::Error::other(format!("more than {WALK_ENTRIES_MAX} entries")));
            }
            let rel = dir_rel.join(&name);
            let metadata = std::fs::symlink_metadata(entry.path())?;
            visit(&rel, &metadata);
            if metadata.is_dir() {
                pending.push(rel);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "durability_tests.rs"]
mod tests;
