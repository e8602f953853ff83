//! Disk surgery on a stopped node's files.
//!
//! Every cut is confined to the node's data dir (paths are canonicalized and checked) and returns an exact record of
//! what it did (file, offset, length, digests of the bytes before and after) for the history: the boot checker uses
//! these records to decide whether a refusal to boot was legitimate.
//!
//! - [`select`]: which files a cut hits, by a glob relative to the data dir (`wal*`, `member/wal/*.wal`).
//! - [`surgery`]: the cuts: torn tail, bit flips in a region, a zeroed 4 KiB block, a chunk snapshot restored later
//!   (lost or misdirected write), a deleted file.
//! - [`spec`]: the plan's words for a cut ([`SurgerySpec`]) and a [`Surgeon`] that applies them with seeded choices.
//!
//! Losing *unsynced* data (power loss) needs the process to have written through a filesystem that lies about
//! durability: that is [`crate::fusefs`], not surgery.

pub mod select;
pub mod spec;
pub mod surgery;

pub use select::{select_files, Pick};
pub use spec::{Region, Surgeon, SurgerySpec};
pub use surgery::{delete_file, flip_bits, restore_chunk, snapshot_chunk, truncate_tail, zero_block, ChunkSnapshot};

use serde::Serialize;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What a surgery did, as recorded in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurgeryRecord {
    /// The operation (`flip-bits`, ...).
    pub op: String,
    /// File path.
    pub file: String,
    /// Byte offset of the change.
    pub offset: u64,
    /// Number of bytes changed.
    pub length: u64,
    /// xxh3-64 of the bytes before, hex.
    pub before_xxh3: String,
    /// xxh3-64 of the bytes after, hex.
    pub after_xxh3: String,
    /// File size before the cut (0 when not measured).
    #[serde(skip_serializing_if = "is_zero")]
    pub size_before_bytes: u64,
    /// File size after the cut (0 when not measured or the file is gone).
    #[serde(skip_serializing_if = "is_zero")]
    pub size_after_bytes: u64,
    /// Where the written data ended (one past the last non-zero byte) when the file is longer than its data
    /// (preallocated); 0 otherwise. Regions are taken within this extent.
    #[serde(skip_serializing_if = "is_zero")]
    pub extent_bytes: u64,
    /// Absolute bit offsets flipped (byte * 8 + bit, bit 0 = least significant), for `flip-bits`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bits: Vec<u64>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// xxh3-64 of `bytes` as 16 hex digits, the digest every record carries.
pub fn xxh3_hex(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// Errors of disk surgery.
#[derive(Debug, thiserror::Error)]
pub enum SurgeryError {
    /// I/O failed.
    #[error("disk surgery on {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The path resolves outside the node's data dir.
    #[error("refusing disk surgery on {path}: it is outside the node's data dir {data_dir}")]
    OutsideDataDir {
        /// The file.
        path: String,
        /// The data dir.
        data_dir: String,
    },
    /// No file matched.
    #[error("no file matching `{pattern}` in {data_dir}: nothing to cut")]
    NoFile {
        /// The glob-ish prefix.
        pattern: String,
        /// The data dir.
        data_dir: String,
    },
    /// The file is too small for the requested cut.
    #[error("{path} has {size_bytes} bytes: too small for this cut")]
    TooSmall {
        /// The file.
        path: String,
        /// Its size.
        size_bytes: u64,
    },
    /// A file glob that cannot select files inside a data dir.
    #[error("bad file glob `{pattern}`: {reason}")]
    Pattern {
        /// The glob.
        pattern: String,
        /// Why it was refused.
        reason: String,
    },
    /// A cut that names something it cannot act on (a missing chunk snapshot, a directory, ...).
    #[error("disk surgery refused: {0}")]
    Refused(String),
}

/// Canonicalizes `path` and checks it lies inside `data_dir`.
pub fn confine(data_dir: &Path, path: &Path) -> Result<PathBuf, SurgeryError> {
    let io = |p: &Path, source| SurgeryError::Io {
        path: p.display().to_string(),
        source,
    };
    let root = data_dir.canonicalize().map_err(|e| io(data_dir, e))?;
    let file = path.canonicalize().map_err(|e| io(path, e))?;
    if !file.starts_with(&root) {
        return Err(SurgeryError::OutsideDataDir {
            path: file.display().to_string(),
            data_dir: root.display().to_string(),
        });
    }
    Ok(file)
}

/// Flips every bit of one byte at `offset` of `path` (inside `data_dir`) and fsyncs the file.
pub fn flip_byte(data_dir: &Path, path: &Path, offset: u64) -> Result<SurgeryRecord, SurgeryError> {
    let file_path = confine(data_dir, path)?;
    let io = |source| SurgeryError::Io {
        path: file_path.display().to_string(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file_path)
        .map_err(io)?;
    let size_bytes = file.metadata().map_err(io)?.len();
    if offset >= size_bytes {
        return Err(SurgeryError::TooSmall {
            path: file_path.display().to_string(),
            size_bytes,
        });
    }
    let mut before = [0u8; 1];
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    file.read_exact(&mut before).map_err(io)?;
    let after = [!before[0]];
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    file.write_all(&after).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(SurgeryRecord {
        op: "flip-bits".into(),
        file: file_path.display().to_string(),
        offset,
        length: 1,
        before_xxh3: xxh3_hex(&before),
        after_xxh3: xxh3_hex(&after),
        size_before_bytes: size_bytes,
        size_after_bytes: size_bytes,
        extent_bytes: 0,
        bits: (0..8).map(|bit| offset * 8 + bit).collect(),
    })
}

/// Flips one byte in the interior of the first file matching `glob` (relative to the data dir): a third of the way
/// into its written data, well away from the tail, so a correct WAL scan reports interior corruption rather than a
/// torn tail.
pub fn corrupt_interior(data_dir: &Path, glob: &str) -> Result<SurgeryRecord, SurgeryError> {
    let files = select_files(data_dir, glob)?;
    let file = files.first().ok_or_else(|| SurgeryError::NoFile {
        pattern: glob.to_string(),
        data_dir: data_dir.display().to_string(),
    })?;
    let io = |source| SurgeryError::Io {
        path: file.display().to_string(),
        source,
    };
    let opened = std::fs::File::open(file).map_err(io)?;
    let size_bytes = opened.metadata().map_err(io)?.len();
    let extent_bytes = surgery::written_extent(&opened, size_bytes).map_err(io)?;
    if extent_bytes < 64 {
        return Err(SurgeryError::TooSmall {
            path: file.display().to_string(),
            size_bytes: extent_bytes,
        });
    }
    flip_byte(data_dir, file, extent_bytes / 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_file_when_a_byte_is_flipped_should_record_it_and_change_only_that_byte() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        std::fs::write(&wal, vec![7u8; 300]).unwrap();
        let record = corrupt_interior(dir.path(), "wal*").unwrap();
        assert_eq!(record.offset, 100);
        let bytes = std::fs::read(&wal).unwrap();
        assert_eq!(bytes[100], !7u8);
        assert_eq!(bytes.iter().filter(|&&b| b != 7).count(), 1);
        assert_ne!(record.before_xxh3, record.after_xxh3);
    }

    #[test]
    fn given_a_preallocated_file_when_corrupted_should_hit_its_written_data() {
        let dir = tempfile::tempdir().unwrap();
        let segment = dir.path().join("member/wal/0.wal");
        std::fs::create_dir_all(segment.parent().unwrap()).unwrap();
        let mut bytes = vec![5u8; 3000];
        bytes.resize(1 << 20, 0);
        std::fs::write(&segment, &bytes).unwrap();
        let record = corrupt_interior(dir.path(), "member/wal/*.wal").unwrap();
        assert_eq!(record.offset, 1000);
        assert_eq!(std::fs::read(&segment).unwrap()[1000], !5u8);
    }

    #[test]
    fn given_a_path_outside_the_data_dir_when_cut_should_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let victim = other.path().join("precious");
        std::fs::write(&victim, b"keep me").unwrap();
        let err = flip_byte(dir.path(), &victim, 0).unwrap_err();
        assert!(matches!(err, SurgeryError::OutsideDataDir { .. }));
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    }
}
