//! Repair: fetching missed ops as verbatim prepares (range request -> entries -> done).
//!
//! One request is in flight at a time, bounded to [`REPAIR_BATCH_MAX`] ops and retried after a timeout. Two
//! modes:
//! - gap repair (a backup in normal status missed prepares): entries come from the primary and are stored only
//!   if they chain to their stored neighbours; the head moves as gaps close;
//! - log sync ([`LogSync`]): the log is replaced by another replica's, op by op upwards from the verified
//!   prefix, truncating a local suffix only once the source proves it divergent.
//!
//! Either way, ops the source no longer holds (at or below its WAL base) come as its checkpoint instead
//! (`state_transfer`).

use std::time::{Duration, Instant};

use super::{LogSource, LogSync, RepairInFlight, Replica, ReplicaError, Status, SyncPurpose};
use crate::message::Message;
use crate::wal::entry::Entry;

/// Most ops asked for (and sent) per repair request.
pub const REPAIR_BATCH_MAX: u64 = 256;
pub(super) const REPAIR_TIMEOUT_MS: u64 = 500;

impl Replica {
    /// Starts replacing the log by `source`'s up to its head (immediately verified when the head is held).
    pub(super) fn start_sync(&mut self, source: LogSource, purpose: SyncPurpose) {
        let head = self.journal.head();
        let held = source.op <= head.op && self.journal.checksum_of(source.op) == Some(source.checksum);
        let verified_op = if held { source.op } else { self.commit_min };
        if !held {
            tracing::info!(
                ?purpose,
                source = source.replica,
                from_op = verified_op + 1,
                to_op = source.op,
                "repair start: syncing log"
            );
        }
        self.repair = None;
        self.sync = Some(LogSync {
            source,
            verified_op,
            purpose,
            progress_at: Instant::now(),
        });
    }

    /// The replica to repair from and the op range to ask for, if this replica is missing ops.
    fn repair_range(&self) -> Option<(u8, u64, u64)> {
        if let Some(sync) = self.sync {
            return Some((sync.source.replica, sync.verified_op + 1, sync.source.op));
        }
        if self.status != Status::Normal || self.is_primary() {
            return None;
        }
        let head = self.journal.head().op;
        Some((
            self.primary_of(self.view),
            head + 1,
            self.op_known_max.max(self.commit_max),
        ))
    }

    pub(super) fn maybe_request_repair(&mut self) {
        if self.repair.is_some() {
            return;
        }
        let Some((source, from_op, target_op)) = self.repair_range() else {
            return;
        };
        if from_op > target_op {
            return;
        }
        if !self.repairing && self.sync.is_none() {
            tracing::info!(source, from_op, to_op = target_op, "repair start");
        }
        self.repairing = true;
        let to_op = target_op.min(from_op + REPAIR_BATCH_MAX - 1);
        self.outbound.send(source, &Message::RequestPrepares { from_op, to_op });
        let deadline = Instant::now() + Duration::from_millis(REPAIR_TIMEOUT_MS);
        self.repair = Some(RepairInFlight { source, deadline });
    }

    pub(super) fn on_request_prepares(&mut self, from: u8, from_op: u64, to_op: u64) {
        if self.status == Status::Recovering || from_op == 0 || to_op < from_op {
            return;
        }
        let to_op = to_op.min(from_op + REPAIR_BATCH_MAX - 1);
        if from_op <= self.journal.base().op {
            // A checkpoint covers the ops asked for and the WAL no longer holds them: state transfer.
            self.send_checkpoint(from);
            self.outbound.send(from, &Message::RepairDone { from_op, to_op });
            return;
        }
        for entry in self.journal.range(from_op, to_op) {
            self.outbound
                .send(from, &Message::RepairPrepare { entry: entry.clone() });
        }
        self.outbound.send(from, &Message::RepairDone { from_op, to_op });
    }

    pub(super) fn on_repair_prepare(&mut self, from: u8, entry: Entry) -> Result<(), ReplicaError> {
        let Some(repair) = &self.repair else { return Ok(()) };
        if repair.source != from {
            return Ok(());
        }
        if let Some(recovery) = self.recovery.as_mut() {
            recovery.give_up_at = Instant::now() + Duration::from_millis(super::recovery::RECOVERY_GIVE_UP_MS);
        }
        if self.sync.is_some() {
            return self.sync_entry(entry);
        }
        self.store_entry(entry)?;
        self.ack_pending = true;
        Ok(())
    }

    /// Takes the source's entry at `verified_op + 1` into the log, replacing a divergent local suffix.
    fn sync_entry(&mut self, entry: Entry) -> Result<(), ReplicaError> {
        let mut sync = self.sync.expect("called while syncing");
        let op = entry.header.op;
        if op != sync.verified_op + 1 {
            return Ok(());
        }
        let expected_parent = self.journal.checksum_of(op - 1).expect("the verified prefix is stored");
        let wrong_head = op == sync.source.op && entry.header.checksum != sync.source.checksum;
        if entry.header.parent != expected_parent || wrong_head {
            tracing::error!(
                op,
                source = sync.source.replica,
                "sync source sent an entry off its announced chain"
            );
            return self.abort_sync(sync.purpose);
        }
        if self.journal.checksum_of(op) != Some(entry.header.checksum) {
            if self.journal.op_max() >= op {
                // The local entry at `op` (and so every local entry above it) differs from the source's log,
                // which holds every committed op: none of them was committed.
                self.truncate_log_after(op - 1)?;
            }
            let inserted = self.journal.insert(entry)?;
            assert!(
                inserted.is_ok(),
                "an entry chaining to the verified prefix fits after truncation"
            );
        }
        sync.verified_op = op;
        sync.progress_at = Instant::now();
        self.sync = Some(sync);
        Ok(())
    }

    pub(super) fn abort_sync(&mut self, purpose: SyncPurpose) -> Result<(), ReplicaError> {
        self.sync = None;
        self.repair = None;
        match purpose {
            SyncPurpose::BecomePrimary => self.start_view_change(self.view + 1),
            SyncPurpose::AdoptView => {
                self.status = Status::ViewChange;
                self.view_change = super::ViewChangeState {
                    rejoining: true,
                    ..Default::default()
                };
                self.timers.view_change_deadline = Instant::now() + self.random_timeout();
                Ok(())
            }
            SyncPurpose::Recover => self.start_recovery(),
            // Still transitioning: it asks the pool for the newer epoch again (`tick_transitioning`).
            SyncPurpose::JoinEpoch(_) => Ok(()),
        }
    }

    pub(super) fn on_repair_done(&mut self, from: u8) {
        if self.repair.as_ref().is_some_and(|repair| repair.source == from) {
            self.repair = None;
        }
    }

    /// Completes whatever was waiting for repaired ops: a log sync or a gap-repair episode.
    pub(super) fn check_progress(&mut self) -> Result<(), ReplicaError> {
        if let Some(sync) = self.sync.filter(|sync| sync.verified_op >= sync.source.op) {
            self.sync = None;
            self.repair = None;
            self.repairing = false;
            if sync.source.op > self.commit_min {
                tracing::info!(op = sync.source.op, purpose = ?sync.purpose, "repair done: log synced");
            }
            return match sync.purpose {
                SyncPurpose::BecomePrimary => {
                    self.truncate_log_after(sync.source.op)?;
                    self.become_primary()
                }
                SyncPurpose::AdoptView => self.finish_adopt_view(sync.source),
                SyncPurpose::Recover => self.finish_recovery(sync.source),
                SyncPurpose::JoinEpoch(epoch) => self.finish_join_epoch(sync.source, epoch),
            };
        }
        let head = self.journal.head();
        if self.status == Status::Normal && self.sync.is_none() && self.repairing && head.op >= self.op_known_max {
            self.repairing = false;
            tracing::info!(op = head.op, commit = self.commit_max, "repair done");
        }
        Ok(())
    }
}
