//! Normal operation: client requests, Prepare / PrepareOk / Commit, heartbeats.

use std::time::Instant;

use super::lease::PrimaryLease;
use super::{
    ClientOutcome, ClientRequest, Replica, ReplicaError, Status, Waiter, PIPELINE_PREPARE_MAX, REQUEST_QUEUE_MAX,
};
use crate::message::Message;
use crate::mutants::Bug;
use crate::state_machine::{Operation, Reply, SessionLookup};
use crate::wal::entry::{Entry, RequestIdentity, BODY_SIZE_MAX_BYTES};
use crate::wal::journal::InsertRejected;

impl Replica {
    pub(super) fn on_client_request(&mut self, request: ClientRequest, reply: Waiter) {
        let serves_clients = self.status == Status::Normal && self.is_primary();
        if !serves_clients && self.status != Status::Recovering && self.config.mutants.has(Bug::StaleBackupReads) {
            // MUTANT(stale-backup-reads): a backup (or a replica in a view change) answers reads from whatever
            // its state machine has executed, which lags the primary's commit point (by at least the op whose
            // commit rides on the next prepare or heartbeat, and by everything it missed while paused or cut off).
            if let Some(local) = self.machine.read(&request.operation) {
                let _ = reply.send(ClientOutcome::Done(local));
                return;
            }
        }
        if !serves_clients {
            let primary = (self.status == Status::Normal).then(|| self.primary_of(self.view));
            let _ = reply.send(ClientOutcome::NotPrimary { primary });
            return;
        }
        if self.lease_remaining(Instant::now()).is_some() {
            if let Some(local) = self.machine.read(&request.operation) {
                // A read on the lease: no newer view can have committed anything yet (see `lease`), and this
                // state holds every op whose client has been answered.
                self.lease_reads_served += 1;
                let _ = reply.send(ClientOutcome::Done(local));
                return;
            }
        }
        let identity = request.identity;
        if identity.client_id != 0 {
            match self.machine.lookup(identity.client_id, identity.request_number) {
                SessionLookup::Duplicate(done) => {
                    let _ = reply.send(ClientOutcome::Done(done));
                    return;
                }
                SessionLookup::Stale => {
                    let _ = reply.send(ClientOutcome::Stale);
                    return;
                }
                SessionLookup::New => {}
            }
        }
        if self.primary.queue.len() >= REQUEST_QUEUE_MAX {
            let _ = reply.send(ClientOutcome::Busy);
            return;
        }
        let mut request = request;
        if self.config.mutants.has(Bug::TxnReadsAtReceipt) && identity.client_id != 0 {
            if let Operation::Txn { ops } = &request.operation {
                // MUTANT(txn-reads-at-receipt): the reads are taken now, from what this primary has applied (with
                // the transaction's own earlier writes over it), and so are the balances its credits and debits
                // leave, logged as plain writes, while the writes wait their turn in the log: a transaction
                // committed between the two is missed by the reads and overwritten by the balances.
                match self.machine.txn_at_receipt(ops) {
                    Err(abort) => {
                        let _ = reply.send(ClientOutcome::Done(Reply::TxnAborted(abort)));
                        return;
                    }
                    Ok(receipt) => {
                        self.primary
                            .receipt_reads
                            .insert((identity.client_id, identity.request_number), receipt.reply);
                        assert!(self.primary.receipt_reads.len() <= REQUEST_QUEUE_MAX + 1);
                        request.operation = Operation::Txn { ops: receipt.logged };
                    }
                }
            }
        }
        self.primary.queue.push_back((request, reply));
        self.prepare_queued();
    }

    pub(super) fn pipeline_has_room(&self) -> bool {
        self.journal.head().op.saturating_sub(self.commit_max) < PIPELINE_PREPARE_MAX
    }

    /// Moves queued requests into the pipeline: append to the WAL (fsynced at the end of the loop iteration)
    /// and send the prepare to every backup right away. Nothing follows a reconfiguration in its epoch.
    pub(super) fn prepare_queued(&mut self) {
        assert!(self.status == Status::Normal && self.is_primary());
        while self.pipeline_has_room() && self.pending_reconfig.is_none() {
            let Some((request, reply)) = self.primary.queue.pop_front() else {
                break;
            };
            let body = request.operation.encode();
            assert!(
                body.len() <= BODY_SIZE_MAX_BYTES,
                "the client API bounds operation sizes"
            );
            let op = self.append_prepare(body, request.identity);
            self.primary.waiters.entry(op).or_default().push(reply);
            let identity = (request.identity.client_id, request.identity.request_number);
            if let Some(reads) = self.primary.receipt_reads.remove(&identity) {
                self.primary.receipt_reads_by_op.insert(op, reads);
            }
        }
    }

    /// Appends the next op (`body`) to the primary's WAL and sends its prepare to every backup; returns its op.
    pub(super) fn append_prepare(&mut self, body: Vec<u8>, identity: RequestIdentity) -> u64 {
        assert!(
            self.pending_reconfig.is_none(),
            "nothing is prepared after a reconfiguration in its epoch"
        );
        let head = self.journal.head();
        let op = head.op + 1;
        let entry = Entry::new(self.config.cluster, op, self.view, head.checksum, identity, body);
        let inserted = if self.config.mutants.has(Bug::RepairRewindsParent) {
            // MUTANT(repair-rewinds-parent): the primary trusts its head pair and appends its own prepare
            // without checking the parent against the stored entry below it, as the replica this bug models
            // did. (The correct primary re-checks, which would turn the bug into the panic below.)
            self.journal.insert_unchecked(entry.clone()).map(Ok)
        } else {
            self.journal.insert(entry.clone())
        };
        match inserted {
            Ok(Ok(_)) => {}
            Ok(Err(rejected)) => panic!("primary's own prepare rejected by its journal: {rejected:?}"),
            Err(error) => {
                tracing::error!(%error, "fatal: cannot append to the wal");
                std::process::exit(2);
            }
        }
        self.broadcast(&Message::Prepare {
            view: self.view,
            commit: self.commit_max,
            entry,
        });
        self.op_known_max = op;
        op
    }

    /// Commits the highest op acknowledged by a quorum (acks are cumulative: "I hold every op up to this").
    pub(super) fn commit_by_quorum(&mut self) {
        let quorum = if self.config.mutants.has(Bug::CommitWithoutQuorum) {
            // MUTANT(commit-without-quorum): the primary's own durable write is taken for a quorum, so it commits
            // (and answers the client) with no backup holding the op.
            1
        } else {
            self.quorum()
        };
        let mut acked: Vec<u64> = self.primary.acks.values().copied().collect();
        if acked.len() < quorum {
            return;
        }
        acked.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = acked[quorum - 1].min(self.journal.head().op);
        if candidate > self.commit_max {
            self.commit_max = candidate;
        }
    }

    pub(super) fn on_prepare(&mut self, from: u8, view: u64, commit: u64, entry: Entry) -> Result<(), ReplicaError> {
        if !self.accept_from_primary(from, view) {
            return Ok(());
        }
        self.commit_max = self.commit_max.max(commit);
        self.op_known_max = self.op_known_max.max(entry.header.op);
        if self.sync.is_some() {
            // Until the log equals the primary's, new prepares are fetched by repair afterwards.
            return Ok(());
        }
        self.store_entry(entry)?;
        self.ack_pending = true;
        Ok(())
    }

    /// Whether a Prepare/Commit from `from` in `view` is for this backup's current normal view; asks for the
    /// current view when the sender is ahead.
    pub(super) fn accept_from_primary(&mut self, from: u8, view: u64) -> bool {
        if self.status == Status::Recovering || view < self.view {
            return false;
        }
        if view > self.view || self.status != Status::Normal {
            if from == self.primary_of(view) {
                self.request_start_view(from);
            }
            return false;
        }
        if self.is_primary() || from != self.primary_of(view) {
            return false;
        }
        self.timers.primary_deadline = Instant::now() + self.random_timeout();
        true
    }

    /// Stores an entry received from the current primary (or a repair source) in the journal.
    pub(super) fn store_entry(&mut self, entry: Entry) -> Result<(), ReplicaError> {
        let op = entry.header.op;
        if op <= self.commit_min {
            return Ok(());
        }
        match self.journal.insert(entry)? {
            Ok(_) | Err(InsertRejected::Duplicate) => {}
            Err(rejected) => {
                tracing::warn!(
                    op,
                    ?rejected,
                    head = self.journal.head().op,
                    "entry does not fit the log; ignored"
                );
            }
        }
        Ok(())
    }

    pub(super) fn send_prepare_ok(&mut self) {
        self.ack_pending = false;
        self.acked_in = Some((self.epoch, self.view));
        let head = self.journal.head();
        let message = Message::PrepareOk {
            view: self.view,
            op: head.op,
            checksum: head.checksum,
        };
        self.outbound.send(self.primary_of(self.view), &message);
    }

    pub(super) fn on_prepare_ok(&mut self, from: u8, view: u64, op: u64, checksum: u128) {
        if self.status != Status::Normal || !self.is_primary() || view != self.view {
            return;
        }
        if self.journal.checksum_of(op) != Some(checksum) || op > self.journal.head().op {
            tracing::warn!(from, op, "PrepareOk for an entry this primary does not hold; ignored");
            return;
        }
        let acked = self.primary.acks.entry(from).or_insert(0);
        *acked = (*acked).max(op);
        self.unproven.remove(&from);
        self.commit_by_quorum();
    }

    pub(super) fn on_commit(&mut self, from: u8, view: u64, commit: u64, op: u64, round: u64) {
        if !self.accept_from_primary(from, view) {
            return;
        }
        if self.config.lease.enabled && round != 0 {
            // The grant: from now (it cannot have been sent later than now) this replica keeps out of view
            // changes for one promise, on its own clock.
            let promise_until = Instant::now() + self.config.lease.promise();
            self.promise_until = self.promise_until.max(promise_until);
            self.outbound.send(from, &Message::CommitOk { view, round });
        }
        self.commit_max = self.commit_max.max(commit);
        self.op_known_max = self.op_known_max.max(op);
        if commit < self.journal.head().op || self.acked_in != Some((self.epoch, self.view)) {
            // The primary has not committed everything we hold: our PrepareOk may have been lost, resend it. Or
            // none was sent in this view (an idle cluster): the primary learns this backup holds the log.
            self.ack_pending = true;
        }
    }

    pub(super) fn tick_heartbeat(&mut self, now: Instant) {
        if now < self.timers.resend_at {
            return;
        }
        self.timers.resend_at = now + self.heartbeat_interval();
        let op = self.journal.head().op;
        let round = if self.config.lease.enabled {
            // Noted before the send: the lease is measured from no later than the instant the round left.
            self.lease.next_round(now)
        } else {
            0
        };
        self.broadcast(&Message::Commit {
            view: self.view,
            commit: self.commit_max,
            op,
            round,
        });
    }

    /// A backup granted a heartbeat round of this view: the lease may extend.
    pub(super) fn on_commit_ok(&mut self, from: u8, view: u64, round: u64) {
        if !self.config.lease.enabled || self.status != Status::Normal || !self.is_primary() || view != self.view {
            return;
        }
        let quorum = self.quorum();
        self.lease.grant(from, round, quorum, &self.config.lease);
    }

    /// Fails every waiting client as the view changes: prepared ops may still commit in the next view, queued
    /// ones were never prepared.
    pub(super) fn abandon_clients(&mut self) {
        for (_, waiters) in std::mem::take(&mut self.primary.waiters) {
            for waiter in waiters {
                let _ = waiter.send(ClientOutcome::Unknown("view change before commit".to_string()));
            }
        }
        for (_, waiter) in std::mem::take(&mut self.primary.queue) {
            let _ = waiter.send(ClientOutcome::NotPrimary { primary: None });
        }
        self.primary.acks.clear();
        self.pending_reconfig = None;
        self.lease = PrimaryLease::default();
        self.primary.receipt_reads.clear();
        self.primary.receipt_reads_by_op.clear();
    }
}
