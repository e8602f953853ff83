//! The journal: the WAL file on disk plus an in-memory copy of every stored entry above its base.
//!
//! Invariants (checked on every insert): at most one entry per op, every op above the base, and any two stored
//! neighbours N and N+1 chain (N+1's parent is N's checksum; the entry at base + 1 chains to the base checksum), so
//! the boot scan of a file this code wrote never refuses. The base is op 0 (the cluster's root checksum) until a
//! checkpoint lets the journal drop the prefix it covers ([`Journal::compact`], [`Journal::install_base`]).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::checksum::root_checksum;
use crate::mutants::{Bug, Mutants};
use crate::wal::entry::Entry;
use crate::wal::head::{head_after_insert, head_after_insert_rewinding_parent, Head};
use crate::wal::scan::{scan, scan_unverified, BootRefusal, ScanReport, TornTail};

/// The WAL file name under the data dir (the harness's disk faults target `wal*`).
pub const WAL_FILE_NAME: &str = "wal";
const REWRITE_TEMP_FILE_NAME: &str = "tmp-rewrite.wal";

/// Errors from opening or writing the journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The boot scan refused the file.
    #[error(transparent)]
    Refused(#[from] BootRefusal),
    /// An I/O error, with the file it happened on.
    #[error("wal {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: io::Error,
    },
}

/// Why an entry was not inserted (the journal is unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertRejected {
    /// This exact entry is already stored.
    Duplicate,
    /// A different entry is stored for this op.
    Conflict,
    /// The entry does not chain to a stored neighbour.
    DoesNotChain,
    /// The op is at or below the base: a checkpoint covers it.
    Compacted,
}

/// The WAL of one replica.
pub struct Journal {
    path: PathBuf,
    dir: PathBuf,
    file: File,
    cluster: u64,
    entries: BTreeMap<u64, Entry>,
    /// No entry at or below `base.op` is stored; `base.checksum` is base + 1's parent.
    base: Head,
    head: Head,
    dirty: bool,
    /// WAL file fsyncs done so far (reported by `/status` as `wal_fsyncs`).
    fsync_count: u64,
    mutants: Mutants,
}

/// Reads the WAL of `dir` without verifying it (the `boot-skips-verification` mutant).
fn scan_unverified_dir(dir: &Path) -> Result<ScanReport, JournalError> {
    let path = dir.join(WAL_FILE_NAME);
    match fs::read(&path) {
        Ok(bytes) => Ok(scan_unverified(&bytes)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(ScanReport::default()),
        Err(source) => Err(io_error(&path, source)),
    }
}

/// The base a superblock names, with op 0 meaning the cluster's root.
pub fn normalize_base(base: Head, cluster: u64) -> Head {
    if base.op == 0 {
        Head {
            op: 0,
            checksum: root_checksum(cluster),
        }
    } else {
        base
    }
}

/// Reads and scans the WAL of `dir` above `base` without modifying anything.
pub fn scan_dir(dir: &Path, cluster: u64, base: Head) -> Result<ScanReport, JournalError> {
    let path = dir.join(WAL_FILE_NAME);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(io_error(&path, source)),
    };
    Ok(scan(
        &bytes,
        cluster,
        normalize_base(base, cluster),
        &path.display().to_string(),
    )?)
}

fn io_error(path: &Path, source: io::Error) -> JournalError {
    JournalError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Fsyncs a WAL file (the log or its rewrite; `sync_all` when `metadata` too, else `sync_data`); every WAL fsync
/// goes through here. Returns whether it synced.
fn fsync_wal_file(file: &File, path: &Path, metadata: bool, mutants: Mutants) -> Result<bool, JournalError> {
    if mutants.has(Bug::NoFsync) {
        // MUTANT(no-fsync): the WAL is never fsynced; it reaches the disk only when the kernel writes it back,
        // and a power loss (or a fault filesystem that drops unsynced writes) takes every acknowledged entry since.
        return Ok(false);
    }
    let synced = if metadata { file.sync_all() } else { file.sync_data() };
    synced.map_err(|source| io_error(path, source))?;
    Ok(true)
}

fn fsync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| io_error(dir, source))
}

/// The head of `entries` stored above `base`.
fn head_from(base: Head, entries: &BTreeMap<u64, Entry>) -> Head {
    if entries.contains_key(&(base.op + 1)) {
        head_after_insert(base, base.op + 1, |op| entries.get(&op).map(|e| e.header.checksum))
    } else {
        base
    }
}

impl Journal {
    /// Opens the WAL under `dir` (no checkpoint: base op 0): scans it, truncates a torn tail (fsynced) and loads
    /// every entry.
    pub fn open(dir: &Path, cluster: u64) -> Result<(Journal, Option<TornTail>), JournalError> {
        let root = Head { op: 0, checksum: 0 };
        Journal::open_with_mutants(dir, cluster, root, Mutants::NONE)
    }

    /// [`Journal::open`] above the superblock's WAL base, with the given bugs active (see [`crate::mutants`]).
    /// Entries at or below the base (left by a compaction a crash interrupted) are not loaded.
    pub fn open_with_mutants(
        dir: &Path,
        cluster: u64,
        base: Head,
        mutants: Mutants,
    ) -> Result<(Journal, Option<TornTail>), JournalError> {
        let base = normalize_base(base, cluster);
        let report = if mutants.has(Bug::BootSkipsVerification) {
            // MUTANT(boot-skips-verification): entries are loaded by their header fields alone: no header or body
            // checksum and no parent chain is verified, so interior corruption boots (and is served) instead of
            // being refused.
            scan_unverified_dir(dir)?
        } else {
            scan_dir(dir, cluster, base)?
        };
        let path = dir.join(WAL_FILE_NAME);
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|source| io_error(&path, source))?;
        if let Some(torn) = &report.torn_tail {
            file.set_len(torn.offset_bytes)
                .map_err(|source| io_error(&path, source))?;
            fsync_wal_file(&file, &path, true, mutants)?;
        }
        fsync_dir(dir)?;
        let entries: BTreeMap<u64, Entry> = report
            .entries
            .into_iter()
            .filter(|scanned| scanned.entry.header.op > base.op)
            .map(|scanned| (scanned.entry.header.op, scanned.entry))
            .collect();
        let head = head_from(base, &entries);
        let journal = Journal {
            path,
            dir: dir.to_path_buf(),
            file,
            cluster,
            entries,
            base,
            head,
            dirty: false,
            fsync_count: 0,
            mutants,
        };
        Ok((journal, report.torn_tail))
    }

    /// The head: highest contiguous op and its checksum.
    pub fn head(&self) -> Head {
        self.head
    }

    /// The stored entry for `op`, if any.
    pub fn entry(&self, op: u64) -> Option<&Entry> {
        self.entries.get(&op)
    }

    /// The base: no entry at or below `base().op` is stored.
    pub fn base(&self) -> Head {
        self.base
    }

    /// The checksum an entry at `op + 1` must carry as parent, if known (`None` below the base).
    pub fn checksum_of(&self, op: u64) -> Option<u128> {
        if op == self.base.op {
            return Some(self.base.checksum);
        }
        self.entries.get(&op).map(|e| e.header.checksum)
    }

    /// Highest stored op (may be above a gap); the base when nothing is stored above it.
    pub fn op_max(&self) -> u64 {
        self.entries.keys().next_back().copied().unwrap_or(self.base.op)
    }

    /// Entries stored (all above the base).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is stored above the base.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks whether `entry` may be stored without breaking the chain invariant.
    pub fn check_insert(&self, entry: &Entry) -> Result<(), InsertRejected> {
        let op = entry.header.op;
        if op <= self.base.op {
            return Err(InsertRejected::Compacted);
        }
        if let Some(existing) = self.entries.get(&op) {
            if existing.header.checksum == entry.header.checksum {
                return Err(InsertRejected::Duplicate);
            }
            return Err(InsertRejected::Conflict);
        }
        if let Some(parent) = self.checksum_of(op - 1) {
            if parent != entry.header.parent {
                return Err(InsertRejected::DoesNotChain);
            }
        }
        if let Some(next) = self.entries.get(&(op + 1)) {
            if next.header.parent != entry.header.checksum {
                return Err(InsertRejected::DoesNotChain);
            }
        }
        Ok(())
    }

    /// Appends `entry` to the file (not yet durable: call [`Journal::sync`]) and updates the head.
    pub fn insert(&mut self, entry: Entry) -> Result<Result<Head, InsertRejected>, JournalError> {
        if let Err(rejected) = self.check_insert(&entry) {
            return Ok(Err(rejected));
        }
        self.write_and_index(entry).map(Ok)
    }

    /// Appends `entry` without [`Journal::check_insert`]: the correct replica never does this. Only the
    /// `repair-rewinds-parent` mutant uses it, for the primary's own prepares, as the replica it models did (it
    /// trusted its head; ours re-checks and would turn that bug into a crash instead of a WAL that does not chain).
    pub fn insert_unchecked(&mut self, entry: Entry) -> Result<Head, JournalError> {
        assert!(!self.entries.contains_key(&entry.header.op), "one entry per op");
        assert!(entry.header.op > self.base.op, "entries sit above the base");
        self.write_and_index(entry)
    }

    fn write_and_index(&mut self, entry: Entry) -> Result<Head, JournalError> {
        assert_eq!(entry.header.cluster, self.cluster, "entry of another cluster");
        self.file
            .write_all(&entry.encode())
            .map_err(|source| io_error(&self.path, source))?;
        self.dirty = true;
        let op = entry.header.op;
        self.entries.insert(op, entry);
        let stored_checksum = |op| self.entries.get(&op).map(|e: &Entry| e.header.checksum);
        self.head = if self.mutants.has(Bug::RepairRewindsParent) {
            head_after_insert_rewinding_parent(self.head, op, stored_checksum)
        } else {
            head_after_insert(self.head, op, stored_checksum)
        };
        Ok(self.head)
    }

    /// Makes every inserted entry durable (one fsync for all writes since the last call: group commit).
    pub fn sync(&mut self) -> Result<bool, JournalError> {
        if !self.dirty {
            return Ok(false);
        }
        if fsync_wal_file(&self.file, &self.path, false, self.mutants)? {
            self.fsync_count += 1;
        }
        self.dirty = false;
        Ok(true)
    }

    /// WAL file fsyncs done since the journal was opened.
    pub fn fsync_count(&self) -> u64 {
        self.fsync_count
    }

    /// Whether entries were written since the last sync.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Discards every entry above `op` by rewriting the file (temp file, fsync, rename, directory fsync).
    pub fn truncate_after(&mut self, op: u64) -> Result<(), JournalError> {
        assert!(op >= self.base.op, "never truncate below the base");
        if self.op_max() <= op {
            return Ok(());
        }
        self.entries.retain(|&stored, _| stored <= op);
        self.rewrite()?;
        if self.head.op > op {
            let checksum = self.checksum_of(op).expect("ops below the head are stored");
            self.head = Head { op, checksum };
        }
        Ok(())
    }

    /// The length of the WAL file in bytes.
    pub fn file_size_bytes(&self) -> Result<u64, JournalError> {
        self.file
            .metadata()
            .map(|metadata| metadata.len())
            .map_err(|source| io_error(&self.path, source))
    }

    /// Drops every entry at or below `base.op`, which a durable checkpoint covers (the superblock must already
    /// name `base` as the WAL base: a crash during the rewrite then leaves either file, both of which boot).
    /// `base` is a stored entry at or below the head.
    pub fn compact(&mut self, base: Head) -> Result<(), JournalError> {
        assert!(base.op <= self.head.op, "compact only below the head");
        assert_eq!(
            self.checksum_of(base.op),
            Some(base.checksum),
            "the base is a stored entry"
        );
        if base.op == self.base.op {
            return Ok(());
        }
        self.entries.retain(|&stored, _| stored > base.op);
        self.base = base;
        self.rewrite()
    }

    /// Moves the base to a checkpoint received by state transfer: drops every entry at or below it and, when the
    /// entry above it does not chain to it (a suffix that diverged from the committed log), every entry above it
    /// too. Returns the number of divergent entries dropped above the base.
    pub fn install_base(&mut self, base: Head) -> Result<usize, JournalError> {
        assert!(base.op >= self.base.op, "the base never goes back");
        let mut divergent = 0;
        if self
            .entries
            .get(&(base.op + 1))
            .is_some_and(|next| next.header.parent != base.checksum)
        {
            divergent = self.entries.range(base.op + 1..).count();
            self.entries.retain(|&stored, _| stored <= base.op);
        }
        self.entries.retain(|&stored, _| stored > base.op);
        self.base = base;
        self.head = head_from(base, &self.entries);
        self.rewrite()?;
        Ok(divergent)
    }

    /// Writes the in-memory entries as the new WAL file: temp file, fsync, rename, directory fsync.
    fn rewrite(&mut self) -> Result<(), JournalError> {
        let temp = self.dir.join(REWRITE_TEMP_FILE_NAME);
        let mut out = File::create(&temp).map_err(|source| io_error(&temp, source))?;
        for entry in self.entries.values() {
            out.write_all(&entry.encode())
                .map_err(|source| io_error(&temp, source))?;
        }
        if fsync_wal_file(&out, &temp, true, self.mutants)? {
            self.fsync_count += 1;
        }
        drop(out);
        fs::rename(&temp, &self.path).map_err(|source| io_error(&self.path, source))?;
        fsync_dir(&self.dir)?;
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(|source| io_error(&self.path, source))?;
        self.dirty = false;
        Ok(())
    }

    /// Iterates over stored entries in `from..=to`, in op order.
    pub fn range(&self, from: u64, to: u64) -> impl Iterator<Item = &Entry> {
        self.entries.range(from..=to).map(|(_, entry)| entry)
    }

    /// The lowest missing op in `from..=to`, if any.
    pub fn first_missing(&self, from: u64, to: u64) -> Option<u64> {
        (from..=to).find(|op| !self.entries.contains_key(op))
    }
}
