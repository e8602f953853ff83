//! Reconfiguration: replicas join and leave the cluster while it runs, by epochs (Viewstamped Replication Revisited,
//! Liskov & Cowling 2012, § 7), one replica at a time.
//!
//! # Why epochs
//! Raft's single-server changes let a server use a configuration as soon as it is in its log, committed or not; two
//! uncommitted changes of different terms can then decide apart, which is the published safety bug of Ongaro's
//! single-server changes (2015) and why Raft needs the rule that a leader commits an entry of its term before it
//! changes the configuration. Here a configuration is used only once the reconfiguration that names it has
//! committed, and the two configurations never overlap in time:
//!
//! - The members of epoch `e` run plain VSR among themselves: every view, quorum, lease, acknowledged mark and
//!   DoViewChange log choice is of one epoch, as it was before reconfiguration existed. Every message carries its
//!   sender's epoch (frame header), and a replica takes no message of another epoch for one of its own.
//! - The primary of `e` appends a reconfiguration as an ordinary op `n` (it chains and is verified at boot like any
//!   entry) and prepares **nothing after it** in `e` (`pending_reconfig`). A view change of `e` keeps `n` if it
//!   committed (quorum intersection, as for any op); the chosen log then ends at `n`, so epoch `e` can never commit
//!   anything after it.
//! - A replica enters `e + 1` only by **executing** `n`, that is once `n` committed in `e`. Epoch `e + 1` starts in
//!   a view fixed by the entry (`start_view`, whose primary holds the log) with the committed log up to `n`, and
//!   durably (superblock first): a replica never takes part in an older epoch again.
//! - So `e` decides every op up to `n`, `e + 1` every op after it: old and new quorums never decide the same op.
//!
//! # One replica at a time
//! A change adds or removes exactly one replica (`Members::single_change`; the primary refuses anything else, and
//! a second change while one is open). Safety does not need it (epochs do not overlap); liveness does: every member
//! of `e + 1` but a joiner holds the log up to `n`, so they are a quorum of `e + 1` at once, and a joiner recovers
//! from them. That holds only if the previous joiner caught up first, so the primary also refuses a change that
//! would leave fewer members holding a log than the new quorum (`lacks_caught_up_quorum`).
//!
//! # Catching up
//! - A replica that hears from an older epoch answers `StartEpoch` (its epoch, members, and a committed op of its
//!   log at or after the epoch's start, with the op's checksum); one that hears from a newer epoch asks for it
//!   (`RequestStartEpoch`). Both at most once a heartbeat interval per peer.
//! - A replica with a log (a lagging member, or one removed) that gets `StartEpoch` is **transitioning**: it takes
//!   no part in its old epoch any more, syncs its log to the announced op from the sender (ops or a checkpoint,
//!   verified by the chain to the announced checksum), and executes its way through every reconfiguration up to it.
//! - A wiped replica or a joiner (`format --join`: epoch 0, no members) recovers: once a `StartEpoch` names it a
//!   member, it takes that epoch and runs VSR recovery there (a quorum of the epoch's members, including its
//!   primary). A joiner that is not (yet) a member waits.
//! - A checkpoint carries the epoch in force at its op, so a replica that installs one learns the reconfigurations
//!   it covers.
//!
//! # Removed
//! A replica that executes the reconfiguration removing it is **removed**: it votes, acknowledges and leads nothing
//! (the members drop any protocol message of their epoch from a non-member too), answers clients 421, and still
//! serves its log and checkpoint to replicas that catch up.

use std::time::{Duration, Instant};

use super::lease::PrimaryLease;
use super::{ClientOutcome, LogSource, Replica, ReplicaError, Status, SyncPurpose, ViewChangeState, Waiter};
use crate::config::{Members, Reconfiguration};
use crate::message::Message;
use crate::mutants::Bug;
use crate::wal::entry::RequestIdentity;

/// A transitioning replica's catch-up that got nothing from its source for this long is given up, and the pool is
/// asked again (four repair timeouts: a live source answers every request within one, a transfer's chunks too).
pub(super) const JOIN_EPOCH_STALL_MS: u64 = 4 * super::repair::REPAIR_TIMEOUT_MS;

impl Replica {
    /// Lets a message of epoch `epoch` through to the protocol, or handles it here: repair traffic from any epoch,
    /// a newer epoch's `StartEpoch`, an answer to a replica of another epoch, and nothing from a non-member.
    pub(super) fn admit(&mut self, from: u8, epoch: u64, message: Message) -> Result<Option<Message>, ReplicaError> {
        if is_repair_traffic(&message) {
            return Ok(Some(message));
        }
        if epoch > self.epoch {
            // This replica's epoch is over: whatever the newer one commits is missing here.
            self.lease.revoke();
            match message {
                Message::StartEpoch {
                    epoch,
                    members,
                    op,
                    checksum,
                } => self.on_start_epoch(
                    from,
                    epoch,
                    members,
                    LogSource {
                        replica: from,
                        op,
                        checksum,
                    },
                )?,
                _ => self.ask_epoch(from),
            }
            return Ok(None);
        }
        if epoch < self.epoch {
            self.tell_epoch(from);
            return Ok(None);
        }
        let takes_part = !matches!(self.status, Status::Transitioning | Status::Removed);
        if !takes_part || !self.members.contains(from) {
            tracing::debug!(
                from,
                epoch,
                status = self.status.as_str(),
                "message of a non-member or to one; dropped"
            );
            return Ok(None);
        }
        Ok(Some(message))
    }

    /// `POST /reconfigure` at the primary: prepares the reconfiguration to `members` (one replica added or removed),
    /// answered once it commits and this replica has executed it.
    pub(super) fn on_reconfigure(&mut self, members: Members, reply: Waiter) {
        if self.status != Status::Normal || !self.is_primary() {
            let primary = (self.status == Status::Normal).then(|| self.primary_of(self.view));
            let _ = reply.send(ClientOutcome::NotPrimary { primary });
            return;
        }
        if members == self.members {
            let _ = reply.send(ClientOutcome::Reconfigured {
                epoch: self.epoch,
                members,
            });
            return;
        }
        if let Some(op) = self.pending_reconfig {
            let why = format!("a reconfiguration (op {op}) is in progress; ask again once it committed");
            let _ = reply.send(ClientOutcome::Refused(why));
            return;
        }
        if self.members.single_change(members).is_none() || members.ids().any(|id| id >= self.config.replica_count) {
            let why = format!(
                "members {} -> {members}: a reconfiguration adds or removes exactly one replica of the pool (ids \
                 below {})",
                self.members, self.config.replica_count
            );
            let _ = reply.send(ClientOutcome::Refused(why));
            return;
        }
        if let Some(why) = self.lacks_caught_up_quorum(members) {
            let _ = reply.send(ClientOutcome::Refused(why));
            return;
        }
        if !self.pipeline_has_room() {
            let _ = reply.send(ClientOutcome::Busy);
            return;
        }
        let next = Reconfiguration::next(self.epoch, self.config.replica, members);
        let op = self.append_prepare(next.encode(), RequestIdentity::default());
        self.pending_reconfig = Some(op);
        self.primary.waiters.entry(op).or_default().push(reply);
        tracing::info!(
            op,
            epoch = self.epoch,
            next_epoch = next.epoch,
            from = %self.members,
            to = %members,
            "reconfiguration prepared"
        );
    }

    /// Why a change to `members` would leave the new epoch stuck for good, if it would: fewer of its members than
    /// its quorum hold a log. The ones that may hold none: a replica being added, and the `unproven` ones (added by
    /// an earlier change, or asked to recover, [`Replica::on_recovery`]; each until it acknowledges a prepare). A
    /// member that is down or cut off still holds its log and rejoins with it.
    ///
    /// Without it, `[n1, n2]` -> `[n1, n2, n3]` (n3 wiped, not yet recovered) -> `[n1, n2, n3, n5]` commits on the
    /// old configurations' quorums, and the new epoch has two replicas with a log among four: no quorum of three to
    /// commit, and none of normal replicas to answer the two recoveries, so the cluster is stuck for good (found on
    /// `reference-membership` by a guided and a uniform campaign: the correct node accepted no write after the
    /// heal). etcd refuses such changes for the same reason (`--strict-reconfig-check`).
    fn lacks_caught_up_quorum(&self, members: Members) -> Option<String> {
        let adding = match self.members.single_change(members) {
            Some(crate::config::Change::Add(id)) => Some(id),
            _ => None,
        };
        let (holding, without): (Vec<u8>, Vec<u8>) = members
            .ids()
            .partition(|&id| Some(id) != adding && !self.unproven.contains(&id));
        if holding.len() >= members.quorum() {
            return None;
        }
        Some(format!(
            "members {} -> {members}: only {} of the {} members would hold a log ({holding:?}; {without:?} joining \
             or recovering), short of the quorum of {}: the new configuration could never commit; ask again once \
             they caught up",
            self.members,
            holding.len(),
            members.len(),
            members.quorum()
        ))
    }

    /// The op of a reconfiguration in the uncommitted part of this replica's log, if any (a new primary prepares
    /// nothing after it).
    pub(super) fn uncommitted_reconfiguration(&self) -> Option<u64> {
        let head = self.journal.head().op;
        (self.commit_min + 1..=head).find(|&op| {
            self.journal
                .entry(op)
                .is_some_and(|entry| Reconfiguration::decode(&entry.body).is_some())
        })
    }

    /// Executes the committed reconfiguration at `op` (the replica's commit point is `op` already): answers the
    /// operator, and enters the epoch it starts unless this replica is there already (a replay, or a recovery that
    /// learned the epoch from a `StartEpoch`).
    pub(super) fn execute_reconfiguration(&mut self, op: u64, next: Reconfiguration) -> Result<(), ReplicaError> {
        for waiter in self.primary.waiters.remove(&op).unwrap_or_default() {
            let _ = waiter.send(ClientOutcome::Reconfigured {
                epoch: next.epoch,
                members: next.members,
            });
        }
        if next.epoch <= self.epoch {
            return Ok(());
        }
        self.enter_epoch(op, next)
    }

    /// Moves this replica from its epoch into `next` (started by the committed op `op`, which it has executed): a
    /// member starts in `next.start_view` with the committed log, the primary of that view leading; a replica that is
    /// no member is removed.
    fn enter_epoch(&mut self, op: u64, next: Reconfiguration) -> Result<(), ReplicaError> {
        assert_eq!(
            next.epoch,
            self.epoch + 1,
            "each epoch starts from a reconfiguration prepared in the one before"
        );
        assert!(
            self.commit_min == op,
            "an epoch starts once its reconfiguration is executed"
        );
        assert!(
            matches!(self.status, Status::Normal | Status::Transitioning | Status::Removed),
            "only a replica with the committed log executes a reconfiguration ({:?})",
            self.status
        );
        // Who may hold no log in the new epoch: whom this change adds, and whoever may hold none still (a PrepareOk
        // took a member out already, `on_prepare_ok`).
        if let Some(crate::config::Change::Add(id)) = self.members.single_change(next.members) {
            self.unproven.insert(id);
        }
        self.unproven.retain(|&id| next.members.contains(id));
        let live = self.status == Status::Normal;
        let queue = std::mem::take(&mut self.primary.queue);
        self.abandon_clients();
        self.previous_members = self.members;
        self.epoch = next.epoch;
        self.members = next.members;
        self.outbound.set_epoch(next.epoch);
        self.view = next.start_view;
        self.log_view = next.start_view;
        self.view_change = ViewChangeState::default();
        self.repair = None;
        self.sync = None;
        self.epoch_told_at.clear();
        let member = self.members.contains(self.config.replica);
        self.status = if member { Status::Normal } else { Status::Removed };
        // Entering the epoch claims its starting log (log_view = start_view), so the mark covers it (issue 49).
        if self.config.mutants.has(Bug::MarkIgnoresAdoptedLog) {
            // MUTANT(mark-ignores-adopted-log): as in `finish_adopt_view`, the mark only comes down here.
            self.superblock.acked = self.superblock.acked.min(self.journal.head().op);
        } else {
            self.claim_view_log();
        }
        self.persist_superblock()?;
        let head = self.journal.head();
        self.op_known_max = self.op_known_max.max(head.op);
        if self.is_primary() {
            self.primary.queue = queue;
            self.primary.acks.insert(self.config.replica, head.op);
            self.lease = PrimaryLease::new_view(head.op);
            self.pending_reconfig = self.uncommitted_reconfiguration();
            self.timers.resend_at = Instant::now();
        } else {
            for (_, waiter) in queue {
                let _ = waiter.send(ClientOutcome::NotPrimary { primary: None });
            }
            self.timers.primary_deadline = Instant::now() + self.random_timeout();
            self.ack_pending = member;
        }
        tracing::info!(
            epoch = self.epoch,
            view = self.view,
            members = %self.members,
            primary = self.primary_of(self.view),
            op,
            status = self.status.as_str(),
            "epoch started"
        );
        if live {
            // Its old epoch's members learn that `op` committed (a removed primary tells them nothing else).
            let pool = self.pool_members();
            self.announce_epoch(pool);
        }
        Ok(())
    }

    /// A replica of a newer epoch says it exists: a joiner that is named a member recovers there; a replica with a
    /// log catches up to `source` (a committed op of the newer epoch's log) and executes its way into it.
    fn on_start_epoch(
        &mut self,
        from: u8,
        epoch: u64,
        members: Members,
        source: LogSource,
    ) -> Result<(), ReplicaError> {
        match self.status {
            Status::Recovering => {
                tracing::info!(from, epoch, %members, "recovery: learned a newer epoch");
                self.adopt_epoch_while_recovering(epoch, members)
            }
            Status::Transitioning if self.sync.is_some() => Ok(()),
            _ if source.op <= self.commit_min => Ok(()),
            _ => {
                tracing::info!(
                    from,
                    epoch,
                    %members,
                    op = source.op,
                    old_epoch = self.epoch,
                    "transitioning: catching up to a newer epoch"
                );
                self.abandon_clients();
                self.view_change = ViewChangeState::default();
                self.status = Status::Transitioning;
                self.start_sync(source, SyncPurpose::JoinEpoch(epoch));
                Ok(())
            }
        }
    }

    /// The log is synced up to a committed op of epoch `epoch`'s log: every op up to it is committed (the chain
    /// proves them the sender's), so it executes them, entering each epoch their reconfigurations start.
    pub(super) fn finish_join_epoch(&mut self, source: LogSource, epoch: u64) -> Result<(), ReplicaError> {
        self.commit_replay = self.commit_replay.max(source.op);
        self.commit_max = self.commit_max.max(source.op);
        self.execute_committed()?;
        if self.status != Status::Transitioning {
            return Ok(());
        }
        if self.epoch < epoch {
            tracing::warn!(
                op = self.commit_min,
                epoch = self.epoch,
                target_epoch = epoch,
                "transitioning: the announced op did not reach the newer epoch; asking again"
            );
            return Ok(());
        }
        // A checkpoint took it into the epoch (its start is inside the checkpoint): it learns the view there.
        self.settle_in_epoch()
    }

    /// A replica that reached its epoch without executing the reconfiguration that started it (a checkpoint covered
    /// it): a member asks the epoch's primary for the current view, as after a restart; any other is removed.
    fn settle_in_epoch(&mut self) -> Result<(), ReplicaError> {
        // Its log holds the committed prefix up to the checkpoint at least: what it claims with log_view 0.
        self.claim_view_log();
        if self.members.contains(self.config.replica) {
            self.status = Status::ViewChange;
            self.view_change = ViewChangeState {
                rejoining: true,
                ..ViewChangeState::default()
            };
            self.timers.view_change_deadline = Instant::now() + self.random_timeout();
        } else {
            self.status = Status::Removed;
        }
        self.persist_superblock()
    }

    /// A recovering replica learned that `epoch` exists: a member recovers there (a quorum of its members, with its
    /// primary); a replica that is none is removed (it never takes part in an older epoch again, and if it is added
    /// later it catches up to that epoch as any replica with a log does).
    fn adopt_epoch_while_recovering(&mut self, epoch: u64, members: Members) -> Result<(), ReplicaError> {
        self.epoch = epoch;
        self.members = members;
        self.previous_members = members;
        self.outbound.set_epoch(epoch);
        self.view = 0;
        self.log_view = 0;
        self.epoch_told_at.clear();
        if members.contains(self.config.replica) {
            self.persist_superblock()?;
            return self.start_recovery();
        }
        self.recovery = None;
        self.repair = None;
        self.sync = None;
        self.status = Status::Removed;
        self.persist_superblock()
    }

    /// A checkpoint (installed by state transfer) that covers reconfigurations: a recovering replica takes the
    /// epoch it records (and recovers there); any other catches up to it as if it had executed them.
    pub(super) fn follow_checkpoint_epoch(&mut self, epoch: u64, members: Members) -> Result<(), ReplicaError> {
        if epoch <= self.epoch {
            return Ok(());
        }
        tracing::info!(
            epoch,
            %members,
            old_epoch = self.epoch,
            "the installed checkpoint is of a newer epoch"
        );
        if self.status == Status::Recovering {
            return self.adopt_epoch_while_recovering(epoch, members);
        }
        // Its reconfigurations are covered by the checkpoint, committed: the replica is in its epoch now. A replica
        // catching up stays transitioning until the catch-up ends (`finish_join_epoch`); one that repaired a gap from
        // a primary that moved on meanwhile leaves its old view at once. Either way it learns the view in the epoch.
        self.previous_members = self.members;
        self.epoch = epoch;
        self.members = members;
        self.outbound.set_epoch(epoch);
        self.view = 0;
        self.log_view = 0;
        self.epoch_told_at.clear();
        if self.status == Status::Transitioning {
            return self.persist_superblock();
        }
        self.abandon_clients();
        self.sync = None;
        self.repair = None;
        self.settle_in_epoch()
    }

    /// Tells `to` (heard from in an older epoch) about this one, at most once a heartbeat interval.
    fn tell_epoch(&mut self, to: u8) {
        if matches!(self.status, Status::Recovering | Status::Transitioning) || !self.may_contact(to) {
            return;
        }
        self.announce_epoch(Members::from_bits(1 << to));
    }

    /// Sends `StartEpoch` to `peers`: this epoch, its members, and the commit point (committed, and at or after the
    /// epoch's start, since this replica entered it by executing its reconfiguration).
    fn announce_epoch(&self, peers: Members) {
        let Some(checksum) = self.journal.checksum_of(self.commit_min) else {
            return;
        };
        let message = Message::StartEpoch {
            epoch: self.epoch,
            members: self.members,
            op: self.commit_min,
            checksum,
        };
        self.outbound.broadcast_to(peers, &message);
    }

    /// Asks `to` (heard from in a newer epoch) for a `StartEpoch`, at most once a heartbeat interval.
    fn ask_epoch(&mut self, to: u8) {
        if self.may_contact(to) {
            self.outbound.send(to, &Message::RequestStartEpoch);
        }
    }

    /// Rate limit of the epoch messages to one peer.
    fn may_contact(&mut self, peer: u8) -> bool {
        let now = Instant::now();
        if self.epoch_told_at.get(&peer).is_some_and(|&at| now < at) {
            return false;
        }
        self.epoch_told_at.insert(peer, now + self.heartbeat_interval());
        true
    }

    /// A transitioning replica whose catch-up ended without reaching the newer epoch asks the pool again; so does
    /// one whose catch-up source stopped answering (it was removed and stopped, crashed, or is cut off), after
    /// [`JOIN_EPOCH_STALL_MS`] without anything from it: the StartEpoch answers name live sources. Without this a
    /// replica that began catching up from a member that was removed right after waited for it forever, and a
    /// cluster of four with one member recovering lost its quorum for good.
    pub(super) fn tick_transitioning(&mut self, now: Instant) -> Result<(), ReplicaError> {
        if let Some(sync) = self.sync {
            if now < sync.progress_at + Duration::from_millis(JOIN_EPOCH_STALL_MS) {
                return Ok(());
            }
            tracing::warn!(
                source = sync.source.replica,
                op = sync.verified_op,
                to_op = sync.source.op,
                "transitioning: the catch-up source stopped answering; asking the pool again"
            );
            self.abort_sync(sync.purpose)?;
        }
        if now < self.timers.epoch_request_at {
            return Ok(());
        }
        self.timers.epoch_request_at = now + self.heartbeat_interval();
        let pool = self.pool_members();
        self.outbound.broadcast_to(pool, &Message::RequestStartEpoch);
        Ok(())
    }

    /// Every replica of the pool but this one.
    pub(super) fn pool_members(&self) -> Members {
        let all = Members::first(self.config.replica_count);
        Members::from_bits(all.bits() & !(1 << self.config.replica))
    }
}

/// Ops and checkpoints asked for and sent by op range: their checksums verify them whatever epoch the peer is in.
fn is_repair_traffic(message: &Message) -> bool {
    matches!(
        message,
        Message::RequestPrepares { .. }
            | Message::RepairPrepare { .. }
            | Message::RepairDone { .. }
            | Message::CheckpointChunk { .. }
    )
}
