//! Checkpoints: a durable snapshot of the state machine at a committed op, so the WAL below it can be dropped and a
//! replica too far behind can catch up by state transfer instead of a replay it can no longer get.
//!
//! One file per checkpoint, `checkpoint.<op, 20 digits>` in the data dir (not `wal*`: the harness's WAL faults do not
//! hit it unless a plan names it). Layout, little-endian:
//!
//! | bytes   | field                                                                |
//! |---------|----------------------------------------------------------------------|
//! | 0..16   | checksum (xxh3-128) of bytes 16..end                                 |
//! | 16..24  | magic `FLCKPT01`                                                      |
//! | 24..32  | cluster id                                                            |
//! | 32..40  | op: every op up to here is applied in `state`                         |
//! | 40..56  | anchor: the checksum of the WAL entry at `op` (op + 1's parent)       |
//! | 56..64  | state size in bytes                                                   |
//! | 64..72  | epoch: the configuration in force after `op`                          |
//! | 72..80  | the members of that epoch (a bit mask in the low 16 bits)             |
//! | 80..    | the state machine ([`crate::state_machine::StateMachine::snapshot`]) |
//!
//! The superblock names the current checkpoint by (op, checksum), so a file that is missing, short or not the one
//! the superblock committed to is refused at boot rather than half-loaded. The order that makes this crash-safe
//! (see `Replica::checkpoint`): the file is written to a temporary name, fsynced, renamed and its directory
//! fsynced; only then does the superblock point to it; only then is the WAL prefix it covers dropped.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::checksum::checksum;
use crate::config::Members;

/// Checkpoint file names start with this (and `format` deletes every such file).
pub const CHECKPOINT_FILE_PREFIX: &str = "checkpoint";
const TEMP_FILE_NAME: &str = "checkpoint.tmp";
const MAGIC: u64 = 0x3230_5450_4b43_4c46; // "FLCKPT02"
const HEADER_SIZE_BYTES: usize = 80;

/// Which checkpoint the superblock committed to (op 0: none, the state machine starts empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointRef {
    /// The checkpoint's op.
    pub op: u64,
    /// The checksum of its file (bytes 0..16).
    pub checksum: u128,
}

/// A decoded checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Cluster id.
    pub cluster: u64,
    /// Every op up to here is applied in `state`.
    pub op: u64,
    /// The checksum of the WAL entry at `op`.
    pub anchor: u128,
    /// The epoch in force after `op` (the configuration is replicated state, as the state machine is: a replica that
    /// installs the checkpoint learns the reconfigurations it covers).
    pub epoch: u64,
    /// The members of `epoch`.
    pub members: Members,
    /// The encoded state machine.
    pub state: Vec<u8>,
}

/// Errors reading or writing checkpoints; every one names the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The superblock names a checkpoint whose file is gone.
    #[error("checkpoint {path} (op {op}) named by the superblock is missing; refusing to boot")]
    Missing {
        /// The file.
        path: String,
        /// Its op.
        op: u64,
    },
    /// The file does not decode, or is not the one the superblock committed to.
    #[error("checkpoint {path}: {reason}; refusing to boot")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// An I/O error.
    #[error("checkpoint {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: io::Error,
    },
}

fn io_error(path: &Path, source: io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("slice of 8 bytes"))
}

/// The path of the checkpoint file for `op`.
pub fn path(dir: &Path, op: u64) -> PathBuf {
    dir.join(format!("{CHECKPOINT_FILE_PREFIX}.{op:020}"))
}

impl Checkpoint {
    /// The file bytes; the checksum the superblock records is [`file_checksum`] of them.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_SIZE_BYTES + self.state.len());
        out.extend_from_slice(&[0u8; 16]);
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&self.cluster.to_le_bytes());
        out.extend_from_slice(&self.op.to_le_bytes());
        out.extend_from_slice(&self.anchor.to_le_bytes());
        out.extend_from_slice(&(self.state.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&u64::from(self.members.bits()).to_le_bytes());
        out.extend_from_slice(&self.state);
        let sum = checksum(&out[16..]);
        out[0..16].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// Decodes and verifies file bytes (checksum, magic, size).
    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, String> {
        if bytes.len() < HEADER_SIZE_BYTES {
            return Err(format!(
                "short file ({} of at least {HEADER_SIZE_BYTES} bytes)",
                bytes.len()
            ));
        }
        let stored = file_checksum(bytes);
        let actual = checksum(&bytes[16..]);
        if stored != actual {
            return Err(format!("checksum expected {stored:032x}, actual {actual:032x}"));
        }
        if u64_at(bytes, 16) != MAGIC {
            return Err("bad magic".to_string());
        }
        let state_size = u64_at(bytes, 56);
        if state_size != (bytes.len() - HEADER_SIZE_BYTES) as u64 {
            return Err(format!(
                "state size {state_size} but {} bytes follow the header",
                bytes.len() - HEADER_SIZE_BYTES
            ));
        }
        Ok(Checkpoint {
            cluster: u64_at(bytes, 24),
            op: u64_at(bytes, 32),
            anchor: u128::from_le_bytes(bytes[40..56].try_into().expect("slice of 16 bytes")),
            epoch: u64_at(bytes, 64),
            members: Members::from_bits(u64_at(bytes, 72) as u16),
            state: bytes[HEADER_SIZE_BYTES..].to_vec(),
        })
    }
}

/// The checksum stored in the first 16 bytes of checkpoint file bytes (0 when too short to hold one).
pub fn file_checksum(bytes: &[u8]) -> u128 {
    bytes
        .get(0..16)
        .map_or(0, |b| u128::from_le_bytes(b.try_into().expect("slice of 16 bytes")))
}

/// Writes checkpoint file bytes for `op` under its final name: temporary file, fsync, rename, directory fsync.
/// With `durable == false` (the `checkpoint-without-fsync` mutant) both fsyncs are skipped.
pub fn write(dir: &Path, op: u64, bytes: &[u8], durable: bool) -> Result<(), CheckpointError> {
    let temp = dir.join(TEMP_FILE_NAME);
    let mut file = File::create(&temp).map_err(|source| io_error(&temp, source))?;
    file.write_all(bytes).map_err(|source| io_error(&temp, source))?;
    if durable {
        file.sync_all().map_err(|source| io_error(&temp, source))?;
    }
    drop(file);
    let target = path(dir, op);
    fs::rename(&temp, &target).map_err(|source| io_error(&target, source))?;
    if durable {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| io_error(dir, source))?;
    }
    Ok(())
}

/// A checkpoint read from its file and verified against the superblock's reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The file bytes (what state transfer sends).
    pub file: Vec<u8>,
    /// Their decoding.
    pub checkpoint: Checkpoint,
}

/// Reads and verifies the checkpoint `reference` names (`None` for op 0: no checkpoint yet).
pub fn read(dir: &Path, reference: CheckpointRef) -> Result<Option<Loaded>, CheckpointError> {
    if reference.op == 0 {
        return Ok(None);
    }
    let file = path(dir, reference.op);
    let bytes = match fs::read(&file) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(CheckpointError::Missing {
                path: file.display().to_string(),
                op: reference.op,
            })
        }
        Err(source) => return Err(io_error(&file, source)),
    };
    let corrupt = |reason: String| CheckpointError::Corrupt {
        path: file.display().to_string(),
        reason,
    };
    let checkpoint = Checkpoint::decode(&bytes).map_err(corrupt)?;
    if checkpoint.op != reference.op || file_checksum(&bytes) != reference.checksum {
        return Err(corrupt(format!(
            "holds op {} with checksum {:032x}, but the superblock committed to op {} with checksum {:032x}",
            checkpoint.op,
            file_checksum(&bytes),
            reference.op,
            reference.checksum
        )));
    }
    Ok(Some(Loaded {
        file: bytes,
        checkpoint,
    }))
}

/// Deletes every checkpoint file (and temporary file) of `dir` except the one for `keep_op`.
pub fn remove_others(dir: &Path, keep_op: Option<u64>) -> Result<(), CheckpointError> {
    let keep = keep_op.map(|op| path(dir, op));
    let listing = fs::read_dir(dir).map_err(|source| io_error(dir, source))?;
    for item in listing {
        let item = item.map_err(|source| io_error(dir, source))?;
        let name = item.file_name();
        if !name.to_string_lossy().starts_with(CHECKPOINT_FILE_PREFIX) || Some(item.path()) == keep {
            continue;
        }
        fs::remove_file(item.path()).map_err(|source| io_error(&item.path(), source))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(op: u64) -> Checkpoint {
        Checkpoint {
            cluster: 3,
            op,
            anchor: 0xabc,
            epoch: 2,
            members: Members::from_ids([0, 2, 3]).expect("ids"),
            state: vec![1, 2, 3, 4],
        }
    }

    #[test]
    fn given_a_written_checkpoint_when_read_by_its_reference_should_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bytes = sample(7).encode();
        write(dir.path(), 7, &bytes, true).expect("write");
        let reference = CheckpointRef {
            op: 7,
            checksum: file_checksum(&bytes),
        };
        assert_eq!(
            read(dir.path(), reference)
                .expect("read")
                .map(|loaded| loaded.checkpoint),
            Some(sample(7))
        );
        assert_eq!(read(dir.path(), CheckpointRef::default()).expect("none"), None);
    }

    #[test]
    fn given_a_damaged_or_foreign_checkpoint_when_read_should_refuse_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bytes = sample(7).encode();
        let reference = CheckpointRef {
            op: 7,
            checksum: file_checksum(&bytes),
        };
        let missing = read(dir.path(), reference).expect_err("missing");
        assert!(matches!(missing, CheckpointError::Missing { op: 7, .. }), "{missing}");
        assert!(missing.to_string().contains("refusing to boot"));
        let mut flipped = bytes.clone();
        flipped[82] ^= 1;
        fs::write(path(dir.path(), 7), &flipped).expect("write");
        let corrupt = read(dir.path(), reference).expect_err("corrupt").to_string();
        assert!(
            corrupt.contains("checkpoint.00000000000000000007") && corrupt.contains("checksum"),
            "{corrupt}"
        );
        fs::write(path(dir.path(), 7), &bytes[..10]).expect("write");
        assert!(read(dir.path(), reference)
            .expect_err("short")
            .to_string()
            .contains("short file"));
        // A valid checkpoint that is not the one the superblock committed to.
        let other = Checkpoint {
            state: vec![9],
            ..sample(7)
        }
        .encode();
        fs::write(path(dir.path(), 7), &other).expect("write");
        let foreign = read(dir.path(), reference).expect_err("foreign").to_string();
        assert!(foreign.contains("superblock committed to op 7"), "{foreign}");
    }

    #[test]
    fn given_several_checkpoints_when_removing_others_should_keep_only_the_named_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        for op in [3, 5, 9] {
            write(dir.path(), op, &sample(op).encode(), true).expect("write");
        }
        fs::write(dir.path().join("wal"), b"").expect("wal");
        remove_others(dir.path(), Some(5)).expect("remove");
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["checkpoint.00000000000000000005", "wal"]);
    }
}
