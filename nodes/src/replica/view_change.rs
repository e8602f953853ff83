//! View change (StartViewChange / DoViewChange / StartView) and rejoin after a restart.

use std::time::Instant;

use super::lease::PrimaryLease;
use super::{LogSource, LogSummary, Replica, ReplicaError, Status, SyncPurpose, ViewChangeState};
use crate::message::Message;
use crate::mutants::{Bug, Mutants};

/// Chooses the log of the new view: highest `log_view`, then highest op (ties prefer `prefer`, whose log
/// needs no fetch). This is the one place where the view-change log is chosen.
pub fn choose_log(summaries: &[LogSummary], prefer: u8, mutants: Mutants) -> LogSummary {
    let chosen = if mutants.has(Bug::ViewChangeMaxOp) {
        // MUTANT(view-change-max-op): "longest log wins": the log_view is ignored, so a stale primary's long,
        // never-committed suffix from an old view beats a newer view's log that holds committed ops.
        summaries.iter().max_by_key(|s| (s.op, s.replica == prefer))
    } else {
        summaries.iter().max_by_key(|s| (s.log_view, s.op, s.replica == prefer))
    };
    *chosen.expect("a view change has at least a quorum of summaries")
}

impl Replica {
    /// Moves to `view` in view-change status and votes for it.
    pub(super) fn start_view_change(&mut self, view: u64) -> Result<(), ReplicaError> {
        let rejoining = self.view_change.rejoining;
        assert!(
            view > self.view || (view == self.view && rejoining),
            "view change never goes back"
        );
        assert!(self.status != Status::Recovering, "a recovering replica does not vote");
        tracing::info!(
            old_view = self.view,
            new_view = view,
            new_primary = self.primary_of(view),
            "view change started"
        );
        self.abandon_clients();
        self.view = view;
        self.status = Status::ViewChange;
        self.view_change = ViewChangeState::default();
        self.repair = None;
        self.sync = None;
        // The view must be durable before this replica votes in it (it must never vote in an older one again).
        self.persist_superblock()?;
        let now = Instant::now();
        self.timers.view_change_deadline = now + self.random_timeout();
        self.timers.resend_at = now + self.heartbeat_interval();
        self.broadcast(&Message::StartViewChange { view });
        self.maybe_send_do_view_change()
    }

    fn own_summary(&self) -> LogSummary {
        let head = self.journal.head();
        LogSummary {
            replica: self.config.replica,
            log_view: self.log_view,
            op: head.op,
            checksum: head.checksum,
            commit: self.commit_min,
            acked: self.superblock.acked,
        }
    }

    pub(super) fn on_start_view_change(&mut self, from: u8, view: u64) -> Result<(), ReplicaError> {
        if self.status == Status::Recovering || view < self.view {
            return Ok(());
        }
        if view > self.view || (self.view_change.rejoining && self.status == Status::ViewChange) {
            if self.promise_holds(Instant::now()) {
                // Bound by a read-lease promise: the vote waits (the voters resend every heartbeat interval).
                return Ok(());
            }
            self.start_view_change(view)?;
        }
        if self.status != Status::ViewChange || view != self.view {
            return Ok(());
        }
        self.view_change.start_view_change_from.insert(from);
        self.maybe_send_do_view_change()
    }

    fn maybe_send_do_view_change(&mut self) -> Result<(), ReplicaError> {
        let state = &self.view_change;
        if state.rejoining || state.do_view_change_sent || state.start_view_change_from.len() + 1 < self.quorum() {
            return Ok(());
        }
        self.view_change.do_view_change_sent = true;
        let new_primary = self.primary_of(self.view);
        if new_primary == self.config.replica {
            return self.maybe_complete_view_change();
        }
        self.send_do_view_change();
        Ok(())
    }

    fn send_do_view_change(&mut self) {
        let own = self.own_summary();
        let message = Message::DoViewChange {
            view: self.view,
            log_view: own.log_view,
            op: own.op,
            checksum: own.checksum,
            commit: own.commit,
            acked: own.acked,
        };
        self.outbound.send(self.primary_of(self.view), &message);
    }

    pub(super) fn on_do_view_change(&mut self, view: u64, summary: LogSummary) -> Result<(), ReplicaError> {
        if self.status == Status::Recovering || view < self.view {
            return Ok(());
        }
        if view > self.view || (self.view_change.rejoining && self.status == Status::ViewChange) {
            if self.promise_holds(Instant::now()) {
                return Ok(());
            }
            self.start_view_change(view)?;
        }
        if self.status != Status::ViewChange || self.primary_of(self.view) != self.config.replica {
            return Ok(());
        }
        self.view_change.do_view_changes.insert(summary.replica, summary);
        self.maybe_complete_view_change()
    }

    /// The new primary, with a quorum of DoViewChange (its own included), installs the chosen log.
    fn maybe_complete_view_change(&mut self) -> Result<(), ReplicaError> {
        let state = &self.view_change;
        if self.sync.is_some() || state.rejoining || state.do_view_changes.len() + 1 < self.quorum() {
            return Ok(());
        }
        let own = self.own_summary();
        self.view_change.do_view_changes.insert(own.replica, own);
        let summaries: Vec<LogSummary> = self.view_change.do_view_changes.values().copied().collect();
        // Protocol-aware recovery: a short log (its replica lost entries it acknowledged) is no candidate, and the
        // chosen log must cover every short replica's mark, or it may lack a committed op that only the short
        // replica had seen besides a replica not heard from. Otherwise the view waits for more DoViewChanges (or
        // times out into the next view).
        let candidates: Vec<LogSummary> = summaries.iter().filter(|s| !s.is_short()).copied().collect();
        let covered = !candidates.is_empty() && {
            let best = choose_log(&candidates, self.config.replica, self.config.mutants);
            summaries
                .iter()
                .filter(|s| s.is_short())
                .all(|short| best.covers(short))
        };
        if !covered {
            if !self.view_change.waiting_for_cover {
                self.view_change.waiting_for_cover = true;
                let short: Vec<u8> = summaries.iter().filter(|s| s.is_short()).map(|s| s.replica).collect();
                tracing::warn!(
                    view = self.view,
                    ?short,
                    "view change waits: no log heard so far covers what a replica with a short log acknowledged"
                );
            }
            return Ok(());
        }
        let best = choose_log(&candidates, self.config.replica, self.config.mutants);
        let mut commit = summaries.iter().map(|s| s.commit).max().expect("non-empty");
        if self.config.mutants.has(Bug::RejoinAfterLostTail) && commit > best.op {
            // MUTANT(rejoin-after-lost-tail): the modeled replica has no cross-check of the chosen log against the
            // commit numbers it heard: the log it chose is the truth, commit point included. (Without this, the lost
            // ops surface as the assertion below, exit 101, instead of as lost acknowledged writes.)
            commit = best.op;
        }
        assert!(commit <= best.op, "the chosen log holds every committed op");
        self.commit_max = self.commit_max.max(commit);
        let head = self.journal.head();
        let mut held = best.op <= head.op && self.journal.checksum_of(best.op) == Some(best.checksum);
        if self.config.mutants.has(Bug::RepairRewindsParent) && best.replica == self.config.replica {
            // MUTANT(repair-rewinds-parent): the chosen log is this replica's own, so its head pair is trusted as
            // is, as the replica this bug models did. (The correct check above compares the head checksum with
            // the stored entry; a rewound head fails it, and the replica would then sync from itself and crash.)
            held = true;
        }
        if held {
            self.truncate_log_after(best.op)?;
            return self.become_primary();
        }
        let source = LogSource {
            replica: best.replica,
            op: best.op,
            checksum: best.checksum,
        };
        self.start_sync(source, SyncPurpose::BecomePrimary);
        Ok(())
    }

    pub(super) fn become_primary(&mut self) -> Result<(), ReplicaError> {
        self.journal.sync()?;
        // The primary counts its own ack for the whole log, so the mark is exactly its head.
        self.claim_view_log();
        self.log_view = self.view;
        self.status = Status::Normal;
        self.view_change = ViewChangeState::default();
        self.persist_superblock()?;
        let head = self.journal.head();
        self.primary.acks.clear();
        self.primary.acks.insert(self.config.replica, head.op);
        // The chosen log may end with a reconfiguration of this epoch that has not committed: nothing follows it.
        self.pending_reconfig = self.uncommitted_reconfiguration();
        // No read on a lease until an op of this view commits: the ops above the commit point may have been
        // committed by the old view without this replica knowing, and its state lacks them until then.
        self.lease = PrimaryLease::new_view(head.op);
        self.op_known_max = head.op;
        tracing::info!(
            view = self.view,
            primary = self.config.replica,
            op = head.op,
            commit = self.commit_max,
            "view change done: this replica is primary"
        );
        let message = Message::StartView {
            view: self.view,
            op: head.op,
            checksum: head.checksum,
            commit: self.commit_max,
        };
        self.broadcast(&message);
        self.timers.resend_at = Instant::now();
        Ok(())
    }

    /// A backup adopts the view the primary started: it syncs its log to the primary's head, then acks.
    pub(super) fn on_start_view(
        &mut self,
        from: u8,
        view: u64,
        head: LogSource,
        commit: u64,
    ) -> Result<(), ReplicaError> {
        if self.status == Status::Recovering || view < self.view || from != self.primary_of(view) {
            return Ok(());
        }
        if view == self.view && self.status == Status::Normal {
            return Ok(());
        }
        if head.op < self.commit_min {
            tracing::error!(
                view,
                op = head.op,
                commit = self.commit_min,
                "StartView below our commit; ignored"
            );
            return Ok(());
        }
        if view > self.view {
            self.abandon_clients();
        }
        let old_view = self.view;
        self.view = view;
        self.status = Status::Normal;
        self.view_change = ViewChangeState::default();
        self.repair = None;
        self.commit_max = self.commit_max.max(commit);
        self.op_known_max = head.op;
        self.timers.primary_deadline = Instant::now() + self.random_timeout();
        tracing::info!(
            old_view,
            new_view = view,
            primary = from,
            op = head.op,
            "start view received"
        );
        self.start_sync(head, SyncPurpose::AdoptView);
        // Persist the view (not yet the log_view: the log is not the new view's until the sync completes).
        self.persist_superblock()
    }

    /// A backup whose log now equals the primary's up to the StartView head enters the view for real.
    pub(super) fn finish_adopt_view(&mut self, head: LogSource) -> Result<(), ReplicaError> {
        self.truncate_log_after(head.op)?;
        self.journal.sync()?;
        if self.config.mutants.has(Bug::MarkIgnoresAdoptedLog) {
            // MUTANT(mark-ignores-adopted-log): the mark only comes down to the adopted head here; it covers the
            // adopted log only once the PrepareOk that follows raises it. A crash in between leaves a superblock
            // that claims the view's log (log_view) with a mark below it, and a later cut of that log boots as a
            // whole, shorter log of that view, which wins the next view change.
            self.superblock.acked = self.superblock.acked.min(self.journal.head().op);
        } else {
            self.claim_view_log();
        }
        self.log_view = self.view;
        self.persist_superblock()?;
        self.ack_pending = true;
        tracing::info!(
            view = self.view,
            primary = head.replica,
            op = head.op,
            "view change done: backup in new view"
        );
        Ok(())
    }

    pub(super) fn on_request_start_view(&mut self, from: u8, view: u64) {
        if self.status != Status::Normal || !self.is_primary() || view > self.view {
            return;
        }
        let head = self.journal.head();
        let message = Message::StartView {
            view: self.view,
            op: head.op,
            checksum: head.checksum,
            commit: self.commit_max,
        };
        self.outbound.send(from, &message);
    }

    /// Asks `primary` for a StartView, at most once per heartbeat interval.
    pub(super) fn request_start_view(&mut self, primary: u8) {
        let now = Instant::now();
        if now < self.timers.start_view_request_at || primary == self.config.replica {
            return;
        }
        self.timers.start_view_request_at = now + self.heartbeat_interval();
        self.outbound
            .send(primary, &Message::RequestStartView { view: self.view });
    }

    pub(super) fn tick_view_change(&mut self, now: Instant) -> Result<(), ReplicaError> {
        if now >= self.timers.view_change_deadline && !self.promise_holds(now) {
            let next = self.view + 1;
            tracing::warn!(view = self.view, next_view = next, "view change timed out");
            self.view_change.rejoining = false;
            return self.start_view_change(next);
        }
        if now < self.timers.resend_at {
            return Ok(());
        }
        self.timers.resend_at = now + self.heartbeat_interval();
        if self.view_change.rejoining {
            self.broadcast(&Message::RequestStartView { view: self.view });
            return Ok(());
        }
        self.broadcast(&Message::StartViewChange { view: self.view });
        if self.view_change.do_view_change_sent && self.primary_of(self.view) != self.config.replica {
            self.send_do_view_change();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(replica: u8, log_view: u64, op: u64) -> LogSummary {
        LogSummary {
            replica,
            log_view,
            op,
            checksum: u128::from(op),
            commit: 0,
            acked: op,
        }
    }

    #[test]
    fn given_logs_of_different_log_views_when_choosing_should_prefer_the_highest_log_view_over_op() {
        let chosen = choose_log(
            &[summary(0, 1, 9), summary(1, 2, 5), summary(2, 2, 4)],
            0,
            Mutants::NONE,
        );
        assert_eq!(chosen.replica, 1);
    }

    #[test]
    fn given_the_max_op_mutant_when_choosing_should_pick_the_longer_log_of_an_older_view() {
        // Replica 0 led view 1 and prepared ops 6..=9 that never committed; view 2 (replicas 1, 2) committed op 5.
        let summaries = [summary(0, 1, 9), summary(1, 2, 5), summary(2, 2, 4)];
        let mutant = Mutants::from_bugs(&[Bug::ViewChangeMaxOp]);
        assert_eq!(choose_log(&summaries, 1, Mutants::NONE).replica, 1);
        let wrong = choose_log(&summaries, 1, mutant);
        assert_eq!(
            (wrong.replica, wrong.log_view, wrong.op),
            (0, 1, 9),
            "the stale view-1 log wins"
        );
    }

    #[test]
    fn given_equal_logs_when_choosing_should_prefer_the_local_replica() {
        let chosen = choose_log(&[summary(0, 2, 5), summary(1, 2, 5)], 1, Mutants::NONE);
        assert_eq!(chosen.replica, 1);
    }

    #[test]
    fn given_a_short_log_when_judged_should_be_covered_only_by_a_newer_view_or_a_longer_log_of_its_view() {
        // Replica 2 acknowledged up to op 9 in log_view 3, then lost its tail down to op 6.
        let short = LogSummary {
            acked: 9,
            ..summary(2, 3, 6)
        };
        assert!(short.is_short() && !summary(1, 3, 6).is_short());
        assert!(summary(0, 3, 9).covers(&short), "the same view's log up to its mark");
        assert!(
            summary(0, 4, 2).covers(&short),
            "a newer view's log: its view change covered the mark"
        );
        assert!(!summary(0, 3, 8).covers(&short), "one op short of the mark");
        assert!(
            !summary(0, 2, 20).covers(&short),
            "a longer log of an older view may lack what it acknowledged"
        );
    }
}
