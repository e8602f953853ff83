//! The superblock: durable replica identity, VSR state (epoch, view, log_view, commit), the configuration of the
//! current epoch and which checkpoint and WAL base the data dir holds, written as two checksummed copies so a torn
//! write of one copy never loses the state.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::checkpoint::{self, CheckpointRef};
use crate::checksum::checksum;
use crate::config::Members;
use crate::wal::head::Head;

/// The superblock file name under the data dir.
pub const SUPERBLOCK_FILE_NAME: &str = "superblock";
const MAGIC: u64 = 0x4641_554c_544c_4e33; // "FAULTLN3"
const COPY_SIZE_BYTES: usize = 144;
/// Copies sit in different 4 KiB blocks so one torn block write damages at most one.
const COPY_STRIDE_BYTES: u64 = 4096;
const COPY_COUNT: u64 = 2;

/// The durable VSR state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VsrState {
    /// The epoch (configuration) this replica takes part in: 0 for a joiner that has not learned one yet, 1 for the
    /// configuration the cluster was formatted with; each committed reconfiguration starts the next.
    pub epoch: u64,
    /// Highest view of `epoch` this replica has taken part in (views start again in every epoch).
    pub view: u64,
    /// The view in which the replica's log was last in normal status.
    pub log_view: u64,
    /// An op known committed (the state machine may be replayed up to it at boot).
    pub commit: u64,
}

/// Replica identity plus durable VSR state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Cluster id.
    pub cluster_id: u64,
    /// This replica's id (0-based).
    pub replica: u8,
    /// Number of replica ids in the pool (every replica the cluster may ever have; not all are members).
    pub replica_count: u8,
    /// The members of `state.epoch` (empty for a joiner that has not learned them yet).
    pub members: Members,
    /// Set when the data dir was wiped (`format --join`): the replica must do VSR recovery before voting.
    pub recovering: bool,
    /// The VSR state.
    pub state: VsrState,
    /// The checkpoint the state machine is loaded from at boot (op 0: none).
    pub checkpoint: CheckpointRef,
    /// The WAL holds no entry at or below `wal_base.op`; the entry above it must have `wal_base.checksum` as its
    /// parent (op 0: the WAL starts at op 1, whose parent is the cluster's root checksum).
    pub wal_base: Head,
    /// The highest op this replica acknowledged (a PrepareOk sent, or counted as the primary's own ack) that its
    /// WAL must still hold: raised durably before an ack leaves, lowered only when the protocol proves the ops above
    /// it were never committed (a view change or sync drops them). A WAL whose head is below it at boot lost
    /// acknowledged entries (a truncated or rolled-back tail), and the replica must not vote as if it held them.
    pub acked: u64,
    /// Incremented on every write; the valid copy with the highest sequence wins.
    pub sequence: u64,
}

/// Errors from reading or writing the superblock.
#[derive(Debug, thiserror::Error)]
pub enum SuperblockError {
    /// No superblock: the data dir was never formatted.
    #[error("data dir {0} is not formatted (no {SUPERBLOCK_FILE_NAME}): run `faultline-node format` first")]
    NotFormatted(String),
    /// `format` found an existing superblock.
    #[error("data dir {0} already holds a superblock: refusing to format it (pass --force to wipe it)")]
    AlreadyFormatted(String),
    /// Neither copy verified.
    #[error("superblock {path}: no valid copy (copy 0: {copy0}; copy 1: {copy1}); refusing to boot")]
    Corrupt {
        /// The file.
        path: String,
        /// What was wrong with copy 0.
        copy0: String,
        /// What was wrong with copy 1.
        copy1: String,
    },
    /// An I/O error.
    #[error("superblock {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: io::Error,
    },
}

fn io_error(path: &Path, source: io::Error) -> SuperblockError {
    SuperblockError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("slice of 8 bytes"))
}

fn u128_at(bytes: &[u8], at: usize) -> u128 {
    u128::from_le_bytes(bytes[at..at + 16].try_into().expect("slice of 16 bytes"))
}

impl Superblock {
    fn encode(&self) -> [u8; COPY_SIZE_BYTES] {
        let mut out = [0u8; COPY_SIZE_BYTES];
        out[16..24].copy_from_slice(&MAGIC.to_le_bytes());
        out[24..32].copy_from_slice(&self.cluster_id.to_le_bytes());
        out[32] = self.replica;
        out[33] = self.replica_count;
        out[34] = u8::from(self.recovering);
        out[40..48].copy_from_slice(&self.sequence.to_le_bytes());
        out[48..56].copy_from_slice(&self.state.view.to_le_bytes());
        out[56..64].copy_from_slice(&self.state.log_view.to_le_bytes());
        out[64..72].copy_from_slice(&self.state.commit.to_le_bytes());
        out[72..80].copy_from_slice(&self.checkpoint.op.to_le_bytes());
        out[80..96].copy_from_slice(&self.checkpoint.checksum.to_le_bytes());
        out[96..104].copy_from_slice(&self.wal_base.op.to_le_bytes());
        out[104..120].copy_from_slice(&self.wal_base.checksum.to_le_bytes());
        out[120..128].copy_from_slice(&self.acked.to_le_bytes());
        out[128..136].copy_from_slice(&self.state.epoch.to_le_bytes());
        out[136..138].copy_from_slice(&self.members.bits().to_le_bytes());
        let sum = checksum(&out[16..]);
        out[0..16].copy_from_slice(&sum.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Result<Superblock, String> {
        if bytes.len() < COPY_SIZE_BYTES {
            return Err(format!("short copy ({} bytes)", bytes.len()));
        }
        let stored = u128::from_le_bytes(bytes[0..16].try_into().expect("slice of 16 bytes"));
        let actual = checksum(&bytes[16..COPY_SIZE_BYTES]);
        if stored != actual {
            return Err(format!("checksum expected {stored:032x}, actual {actual:032x}"));
        }
        if u64_at(bytes, 16) != MAGIC {
            return Err("bad magic".to_string());
        }
        Ok(Superblock {
            cluster_id: u64_at(bytes, 24),
            replica: bytes[32],
            replica_count: bytes[33],
            recovering: bytes[34] != 0,
            sequence: u64_at(bytes, 40),
            members: Members::from_bits(u16::from_le_bytes(bytes[136..138].try_into().expect("2 bytes"))),
            state: VsrState {
                epoch: u64_at(bytes, 128),
                view: u64_at(bytes, 48),
                log_view: u64_at(bytes, 56),
                commit: u64_at(bytes, 64),
            },
            checkpoint: CheckpointRef {
                op: u64_at(bytes, 72),
                checksum: u128_at(bytes, 80),
            },
            wal_base: Head {
                op: u64_at(bytes, 96),
                checksum: u128_at(bytes, 104),
            },
            acked: u64_at(bytes, 120),
        })
    }

    /// The superblock path of a data dir.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(SUPERBLOCK_FILE_NAME)
    }

    /// Writes a fresh superblock into `dir` (created if needed) and an empty WAL.
    pub fn format(dir: &Path, superblock: Superblock, force: bool) -> Result<(), SuperblockError> {
        fs::create_dir_all(dir).map_err(|source| io_error(dir, source))?;
        let path = Superblock::path(dir);
        if path.exists() && !force {
            return Err(SuperblockError::AlreadyFormatted(dir.display().to_string()));
        }
        remove_wal_files(dir)?;
        let wal = dir.join(crate::wal::journal::WAL_FILE_NAME);
        File::create(&wal)
            .and_then(|f| f.sync_all())
            .map_err(|source| io_error(&wal, source))?;
        superblock.write(dir)?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| io_error(dir, source))
    }

    /// Reads the newest valid copy.
    pub fn open(dir: &Path) -> Result<Superblock, SuperblockError> {
        let path = Superblock::path(dir);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(SuperblockError::NotFormatted(dir.display().to_string()))
            }
            Err(source) => return Err(io_error(&path, source)),
        };
        let copy = |index: u64| {
            let start = (index * COPY_STRIDE_BYTES) as usize;
            bytes
                .get(start..)
                .map_or(Err("missing".to_string()), Superblock::decode)
        };
        match (copy(0), copy(1)) {
            (Ok(a), Ok(b)) => Ok(if b.sequence > a.sequence { b } else { a }),
            (Ok(a), Err(_)) => Ok(a),
            (Err(_), Ok(b)) => Ok(b),
            (Err(copy0), Err(copy1)) => Err(SuperblockError::Corrupt {
                path: path.display().to_string(),
                copy0,
                copy1,
            }),
        }
    }

    /// Durably writes both copies (each fsynced before the next is touched).
    pub fn write(&self, dir: &Path) -> Result<(), SuperblockError> {
        let path = Superblock::path(dir);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| io_error(&path, source))?;
        let bytes = self.encode();
        for index in 0..COPY_COUNT {
            file.write_all_at(&bytes, index * COPY_STRIDE_BYTES)
                .map_err(|source| io_error(&path, source))?;
            file.sync_data().map_err(|source| io_error(&path, source))?;
        }
        Ok(())
    }

    /// Durably raises or lowers the acknowledged mark. Only the copy the new sequence selects is written (one
    /// fsync, not two, since this runs before every ack): the other copy keeps the previous state, so a torn write
    /// of this one boots with the previous mark, which is never above what the WAL durably holds.
    pub fn store_acked(&mut self, dir: &Path, acked: u64) -> Result<(), SuperblockError> {
        self.acked = acked;
        self.sequence += 1;
        let path = Superblock::path(dir);
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|source| io_error(&path, source))?;
        file.write_all_at(&self.encode(), (self.sequence % COPY_COUNT) * COPY_STRIDE_BYTES)
            .and_then(|()| file.sync_data())
            .map_err(|source| io_error(&path, source))
    }

    /// Updates the VSR state and writes it durably.
    pub fn store(&mut self, dir: &Path, state: VsrState, recovering: bool) -> Result<(), SuperblockError> {
        assert!(
            (state.epoch, state.view) >= (self.state.epoch, self.state.view),
            "epochs never go backwards, nor views within one"
        );
        assert!(state.log_view <= state.view, "log_view is at most view");
        self.state = state;
        self.recovering = recovering;
        self.sequence += 1;
        self.write(dir)
    }

    /// Durably points the superblock at a new checkpoint and WAL base (with the VSR state of that moment; the
    /// commit point is at least the checkpoint's op).
    pub fn store_checkpoint(
        &mut self,
        dir: &Path,
        state: VsrState,
        checkpoint: CheckpointRef,
        wal_base: Head,
    ) -> Result<(), SuperblockError> {
        assert!(checkpoint.op >= self.checkpoint.op, "checkpoints never go backwards");
        assert!(
            wal_base.op <= checkpoint.op,
            "the WAL keeps every op above the checkpoint"
        );
        assert!(state.commit >= checkpoint.op, "a checkpoint holds committed ops only");
        self.checkpoint = checkpoint;
        self.wal_base = wal_base;
        let recovering = self.recovering;
        self.store(dir, state, recovering)
    }
}

fn remove_wal_files(dir: &Path) -> Result<(), SuperblockError> {
    let listing = fs::read_dir(dir).map_err(|source| io_error(dir, source))?;
    for item in listing {
        let item = item.map_err(|source| io_error(dir, source))?;
        let name = item.file_name().to_string_lossy().into_owned();
        if name.starts_with("wal") || name.starts_with(checkpoint::CHECKPOINT_FILE_PREFIX) {
            fs::remove_file(item.path()).map_err(|source| io_error(&item.path(), source))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Superblock {
        Superblock {
            cluster_id: 5,
            replica: 1,
            replica_count: 3,
            members: Members::first(3),
            recovering: false,
            state: VsrState::default(),
            checkpoint: CheckpointRef::default(),
            wal_base: Head { op: 0, checksum: 0 },
            acked: 0,
            sequence: 0,
        }
    }

    #[test]
    fn given_a_formatted_dir_when_formatting_again_without_force_should_refuse() {
        let dir = tempfile::tempdir().expect("tempdir");
        Superblock::format(dir.path(), fresh(), false).expect("format");
        assert!(matches!(
            Superblock::format(dir.path(), fresh(), false),
            Err(SuperblockError::AlreadyFormatted(_))
        ));
        Superblock::format(dir.path(), fresh(), true).expect("forced format");
    }

    #[test]
    fn given_one_torn_copy_when_opening_should_use_the_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        Superblock::format(dir.path(), fresh(), false).expect("format");
        let mut superblock = Superblock::open(dir.path()).expect("open");
        superblock
            .store(
                dir.path(),
                VsrState {
                    epoch: 2,
                    view: 4,
                    log_view: 3,
                    commit: 9,
                },
                false,
            )
            .expect("store");
        let path = Superblock::path(dir.path());
        let mut bytes = fs::read(&path).expect("read");
        bytes[50] ^= 0xff;
        fs::write(&path, &bytes).expect("write");
        assert_eq!(
            Superblock::open(dir.path()).expect("open").state,
            VsrState {
                epoch: 2,
                view: 4,
                log_view: 3,
                commit: 9
            }
        );
    }

    #[test]
    fn given_acked_marks_when_one_copy_is_torn_should_boot_with_the_previous_mark_and_keep_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        Superblock::format(dir.path(), fresh(), false).expect("format");
        let mut superblock = Superblock::open(dir.path()).expect("open");
        let state = VsrState {
            epoch: 1,
            view: 2,
            log_view: 2,
            commit: 5,
        };
        superblock.store(dir.path(), state, false).expect("store");
        superblock.store_acked(dir.path(), 7).expect("acked 7");
        superblock.store_acked(dir.path(), 8).expect("acked 8");
        let reopened = Superblock::open(dir.path()).expect("open");
        assert_eq!((reopened.acked, reopened.state), (8, state));
        // The copy holding 8 is torn: the other one, holding 7, wins; nothing else is lost.
        let path = Superblock::path(dir.path());
        let mut bytes = fs::read(&path).expect("read");
        let newest = (reopened.sequence % COPY_COUNT * COPY_STRIDE_BYTES) as usize;
        bytes[newest + 121] ^= 0x01;
        fs::write(&path, &bytes).expect("write");
        let fallback = Superblock::open(dir.path()).expect("open");
        assert_eq!((fallback.acked, fallback.state), (7, state));
    }

    #[test]
    fn given_a_new_epoch_when_stored_should_read_back_its_members_and_refuse_an_older_epoch() {
        let dir = tempfile::tempdir().expect("tempdir");
        Superblock::format(dir.path(), fresh(), false).expect("format");
        let mut superblock = Superblock::open(dir.path()).expect("open");
        superblock
            .store(
                dir.path(),
                VsrState {
                    epoch: 1,
                    view: 7,
                    log_view: 7,
                    commit: 3,
                },
                false,
            )
            .expect("store");
        // A new epoch starts its views again: view 1 of epoch 2 follows view 7 of epoch 1.
        superblock.members = Members::from_ids([0, 1, 2, 4]).expect("ids");
        let next = VsrState {
            epoch: 2,
            view: 1,
            log_view: 1,
            commit: 4,
        };
        superblock.store(dir.path(), next, false).expect("store");
        let reopened = Superblock::open(dir.path()).expect("open");
        assert_eq!((reopened.state, reopened.members), (next, superblock.members));
        let back = std::panic::catch_unwind(move || {
            let mut superblock = reopened;
            let older = VsrState {
                epoch: 1,
                view: 9,
                log_view: 9,
                commit: 4,
            };
            superblock.store(std::path::Path::new("/nonexistent"), older, false)
        });
        assert!(back.is_err(), "an older epoch is never stored");
    }

    #[test]
    fn given_an_unformatted_dir_when_opening_should_say_to_format() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = Superblock::open(dir.path()).expect_err("not formatted");
        assert!(error.to_string().contains("faultline-node format"));
    }
}
