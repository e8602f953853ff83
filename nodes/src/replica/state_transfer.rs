//! Checkpoints and state transfer.
//!
//! Every `checkpoint_interval_ops` executed ops the replica writes a checkpoint of its state machine, points the
//! superblock at it and drops the WAL prefix up to its *previous* checkpoint: the WAL keeps between one and two
//! intervals of entries, so a replica lagging by less than that still repairs from prepares, and nothing (memory,
//! WAL file, boot replay) grows with the age of the cluster.
//!
//! The order is what makes it crash-safe: (1) the checkpoint file is durable (temporary file, fsync, rename,
//! directory fsync); (2) the superblock names it and the new WAL base; (3) the WAL prefix is dropped. A crash
//! before (2) boots from the previous checkpoint and a WAL that still holds everything above it; after (2), from
//! the new one (entries at or below the base that the rewrite did not drop yet are ignored).
//!
//! A replica asked for ops at or below its WAL base answers with its checkpoint file (`CheckpointChunk`s from
//! offset 0, then `RepairDone`). The receiver verifies the whole file, stores it the same way, drops any local
//! suffix that does not chain to the checkpoint (it diverged from the committed log) and continues repairing or
//! syncing from the op above it.

use std::time::{Duration, Instant};

use super::repair::REPAIR_TIMEOUT_MS;
use super::{LogSource, Replica, ReplicaError, Status};
use crate::checkpoint::{self, file_checksum, Checkpoint, CheckpointError, CheckpointRef};
use crate::message::{Message, CHECKPOINT_CHUNK_SIZE_MAX_BYTES};
use crate::mutants::Bug;
use crate::state_machine::StateMachine;
use crate::superblock::VsrState;
use crate::wal::head::Head;

/// Largest checkpoint file taken by state transfer: a bound on what a peer can make this replica buffer.
const TRANSFER_SIZE_MAX_BYTES: u64 = 1 << 30;

/// A checkpoint file arriving chunk by chunk from one source.
pub(super) struct Transfer {
    source: u8,
    op: u64,
    checksum: u128,
    size: u64,
    bytes: Vec<u8>,
}

impl Replica {
    /// Loads the checkpoint the superblock names (read and verified by the caller; `None`: none yet).
    pub(super) fn restore_checkpoint(&mut self, loaded: Option<checkpoint::Loaded>) -> Result<(), ReplicaError> {
        let Some(checkpoint::Loaded {
            file,
            checkpoint: loaded,
        }) = loaded
        else {
            return Ok(());
        };
        let dir = self.config.data_dir.clone();
        let machine = StateMachine::restore(&loaded.state).map_err(|_| CheckpointError::Corrupt {
            path: checkpoint::path(&dir, loaded.op).display().to_string(),
            reason: "its state machine does not decode".to_string(),
        })?;
        let op = loaded.op;
        self.machine = machine;
        self.commit_min = op;
        self.commit_max = self.commit_max.max(op);
        self.commit_replay = self.commit_replay.max(op);
        if loaded.epoch > self.epoch {
            // The superblock was not written after a state transfer took this checkpoint of a newer epoch (a crash in
            // between): the checkpoint's epoch is the replica's, durably before it takes part in anything.
            self.epoch = loaded.epoch;
            self.members = loaded.members;
            self.previous_members = loaded.members;
            self.outbound.set_epoch(loaded.epoch);
            self.view = 0;
            self.log_view = 0;
            self.superblock.members = loaded.members;
            let state = VsrState {
                epoch: loaded.epoch,
                view: 0,
                log_view: 0,
                commit: self.superblock.state.commit.max(op),
            };
            let recovering = self.superblock.recovering;
            self.superblock.store(&dir, state, recovering)?;
        }
        if self.journal.head().op < op {
            // The WAL lost entries the checkpoint covers (a torn tail cut below it): the log restarts above it.
            let base = Head {
                op,
                checksum: loaded.anchor,
            };
            let state = VsrState {
                commit: self.superblock.state.commit.max(op),
                ..self.superblock.state
            };
            let reference = self.superblock.checkpoint;
            self.superblock.store_checkpoint(&dir, state, reference, base)?;
            let divergent = self.journal.install_base(base)?;
            tracing::warn!(
                checkpoint = op,
                divergent,
                "the wal ends below the checkpoint: the log restarts above it"
            );
        }
        self.checkpoint_file = file;
        checkpoint::remove_others(&dir, Some(op))?;
        tracing::info!(
            op,
            wal_base = self.journal.base().op,
            wal_entries = self.journal.len(),
            "checkpoint loaded"
        );
        Ok(())
    }

    /// Takes a checkpoint once `checkpoint_interval_ops` ops were executed since the last one.
    pub(super) fn maybe_checkpoint(&mut self) -> Result<(), ReplicaError> {
        let interval = self.config.checkpoint_interval_ops;
        if interval == 0
            || matches!(self.status, Status::Recovering | Status::Transitioning)
            || self.commit_min < self.superblock.checkpoint.op.saturating_add(interval)
        {
            return Ok(());
        }
        self.checkpoint()
    }

    fn checkpoint(&mut self) -> Result<(), ReplicaError> {
        let op = self.commit_min;
        let dir = self.config.data_dir.clone();
        let anchor = self.journal.checksum_of(op).expect("executed ops are stored");
        assert!(
            !matches!(self.status, Status::Recovering | Status::Transitioning),
            "a replica checkpoints only its own epoch's committed state"
        );
        let file = Checkpoint {
            cluster: self.config.cluster,
            op,
            anchor,
            epoch: self.epoch,
            members: self.members,
            state: self.machine.snapshot(),
        }
        .encode();
        self.write_checkpoint_file(op, &file)?;
        // The WAL keeps everything above the previous checkpoint (at least one interval), for repairs.
        let previous = self.superblock.checkpoint.op;
        let wal_base = Head {
            op: previous,
            checksum: self
                .journal
                .checksum_of(previous)
                .expect("every op from the base to the head is stored"),
        };
        let state = VsrState {
            epoch: self.epoch,
            view: self.view,
            log_view: self.log_view,
            commit: self.commit_min,
        };
        let reference = CheckpointRef {
            op,
            checksum: file_checksum(&file),
        };
        self.superblock.store_checkpoint(&dir, state, reference, wal_base)?;
        let entries_before = self.journal.len();
        self.journal.compact(wal_base)?;
        checkpoint::remove_others(&dir, Some(op))?;
        tracing::info!(
            op,
            wal_base = wal_base.op,
            state_bytes = file.len(),
            wal_entries = self.journal.len(),
            dropped = entries_before - self.journal.len(),
            "checkpoint written"
        );
        self.checkpoint_file = file;
        Ok(())
    }

    fn write_checkpoint_file(&self, op: u64, file: &[u8]) -> Result<(), ReplicaError> {
        let durable = if self.config.mutants.has(Bug::CheckpointWithoutFsync) {
            // MUTANT(checkpoint-without-fsync): the checkpoint is written and renamed but neither it nor its
            // directory is fsynced; the superblock then points to it (durably) and the WAL prefix it covers is
            // dropped (durably). A power loss before the kernel writes it back leaves an empty or missing file
            // that the superblock names: the replica refuses to boot on a disk nobody corrupted.
            false
        } else {
            true
        };
        checkpoint::write(&self.config.data_dir, op, file, durable)?;
        Ok(())
    }

    /// Sends the latest checkpoint to `to`, which asked for ops the WAL no longer holds.
    pub(super) fn send_checkpoint(&mut self, to: u8) {
        let file = &self.checkpoint_file;
        assert!(!file.is_empty(), "a WAL base above op 0 comes from a checkpoint");
        let CheckpointRef { op, checksum } = self.superblock.checkpoint;
        let size = file.len() as u64;
        for (index, chunk) in file.chunks(CHECKPOINT_CHUNK_SIZE_MAX_BYTES).enumerate() {
            let message = Message::CheckpointChunk {
                op,
                checksum,
                size,
                offset: (index * CHECKPOINT_CHUNK_SIZE_MAX_BYTES) as u64,
                bytes: chunk.to_vec(),
            };
            self.outbound.send(to, &message);
        }
        tracing::info!(to, op, size, "state transfer: checkpoint sent");
    }

    pub(super) fn on_checkpoint_chunk(
        &mut self,
        from: u8,
        op: u64,
        checksum: u128,
        size: u64,
        offset: u64,
        bytes: Vec<u8>,
    ) -> Result<(), ReplicaError> {
        let Some(repair) = self.repair.as_mut() else {
            return Ok(());
        };
        if repair.source != from || op <= self.commit_min || size > TRANSFER_SIZE_MAX_BYTES {
            return Ok(());
        }
        // A transfer can take longer than a batch of prepares: every chunk extends the request's deadline.
        let now = Instant::now();
        repair.deadline = now + Duration::from_millis(REPAIR_TIMEOUT_MS);
        if let Some(recovery) = self.recovery.as_mut() {
            recovery.give_up_at = now + Duration::from_millis(super::recovery::RECOVERY_GIVE_UP_MS);
        }
        if let Some(sync) = self.sync.as_mut() {
            sync.progress_at = now;
        }
        if offset == 0 {
            self.transfer = Some(Transfer {
                source: from,
                op,
                checksum,
                size,
                bytes: Vec::new(),
            });
        }
        let Some(transfer) = self.transfer.as_mut() else {
            return Ok(());
        };
        if (transfer.source, transfer.op, transfer.checksum, transfer.size) != (from, op, checksum, size)
            || offset != transfer.bytes.len() as u64
            || offset + bytes.len() as u64 > size
        {
            // A chunk of another file, or one after a gap (a dropped connection): the retried request resends the
            // file from offset 0.
            return Ok(());
        }
        transfer.bytes.extend_from_slice(&bytes);
        if (transfer.bytes.len() as u64) < size {
            return Ok(());
        }
        let file = self.transfer.take().expect("matched above").bytes;
        let received = match Checkpoint::decode(&file) {
            Ok(received)
                if received.op == op && received.cluster == self.config.cluster && file_checksum(&file) == checksum =>
            {
                received
            }
            Ok(_) | Err(_) => {
                tracing::warn!(from, op, "state transfer: the checkpoint does not verify; ignored");
                return Ok(());
            }
        };
        let Ok(machine) = StateMachine::restore(&received.state) else {
            tracing::warn!(
                from,
                op,
                "state transfer: the checkpoint's state does not decode; ignored"
            );
            return Ok(());
        };
        self.install_checkpoint(from, received, machine, file)
    }

    /// Replaces the state machine and the log below the checkpoint by the received one.
    fn install_checkpoint(
        &mut self,
        from: u8,
        received: Checkpoint,
        machine: StateMachine,
        file: Vec<u8>,
    ) -> Result<(), ReplicaError> {
        let op = received.op;
        let base = Head {
            op,
            checksum: received.anchor,
        };
        if let Some(sync) = self.sync {
            if sync.source.op == op && sync.source.checksum != received.anchor {
                tracing::error!(op, source = from, "sync source's checkpoint is off its announced chain");
                return self.abort_sync(sync.purpose);
            }
        }
        let dir = self.config.data_dir.clone();
        self.write_checkpoint_file(op, &file)?;
        // A local entry above the checkpoint that does not chain to it diverged from the committed log (so did
        // everything above it): dropped before the superblock moves the base, so no boot sees it above the base.
        let divergent = self
            .journal
            .entry(op + 1)
            .is_some_and(|next| next.header.parent != received.anchor);
        if divergent {
            self.lower_acked(op)?;
            self.journal.truncate_after(op)?;
        }
        let state = VsrState {
            epoch: self.epoch,
            view: self.view,
            log_view: self.log_view,
            commit: op,
        };
        let reference = CheckpointRef {
            op,
            checksum: file_checksum(&file),
        };
        self.superblock.store_checkpoint(&dir, state, reference, base)?;
        self.journal.install_base(base)?;
        checkpoint::remove_others(&dir, Some(op))?;
        self.machine = machine;
        self.commit_min = op;
        self.commit_max = self.commit_max.max(op);
        self.commit_replay = self.commit_replay.max(op);
        self.op_known_max = self.op_known_max.max(op);
        self.checkpoint_file = file;
        if let Some(mut sync) = self.sync {
            sync.verified_op = sync.verified_op.max(op);
            if op > sync.source.op {
                // The source checkpointed past the head it announced: its log up to the checkpoint is committed.
                sync.source = LogSource {
                    replica: sync.source.replica,
                    op,
                    checksum: received.anchor,
                };
            }
            self.sync = Some(sync);
        }
        tracing::info!(
            source = from,
            op,
            divergent_suffix_dropped = divergent,
            head = self.journal.head().op,
            epoch = received.epoch,
            "state transfer: checkpoint installed"
        );
        self.follow_checkpoint_epoch(received.epoch, received.members)
    }
}
