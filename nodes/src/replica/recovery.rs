//! VSR recovery for a wiped replica (`format --join`): it neither votes nor acknowledges prepares until it has
//! the state of a quorum that includes the primary of the latest view, and the primary's log up to its head.

use std::time::{Duration, Instant};

use super::{LogSource, RecoveryState, Replica, ReplicaError, Status, SyncPurpose};
use crate::message::Message;
use crate::mutants::Bug;

const RECOVERY_RESEND_MS: u64 = 300;
pub(super) const RECOVERY_GIVE_UP_MS: u64 = 5000;

impl Replica {
    pub(super) fn start_recovery(&mut self) -> Result<(), ReplicaError> {
        self.status = Status::Recovering;
        // Whatever an earlier, interrupted recovery stored may be uncommitted: only executed ops are kept.
        self.truncate_log_after(self.commit_min)?;
        let nonce = self.rng.gen_nonce();
        let now = Instant::now();
        self.recovery = Some(RecoveryState {
            nonce,
            responses: Default::default(),
            target_chosen: false,
            resend_at: now + Duration::from_millis(RECOVERY_RESEND_MS),
            give_up_at: now + Duration::from_millis(RECOVERY_GIVE_UP_MS),
        });
        self.repair = None;
        self.sync = None;
        tracing::info!(nonce, epoch = self.epoch, members = %self.members, "recovery started");
        if self.members.len() == 1 && self.members.contains(self.config.replica) {
            let head = self.journal.head();
            return self.finish_recovery(LogSource {
                replica: self.config.replica,
                op: head.op,
                checksum: head.checksum,
            });
        }
        self.broadcast_recovery(nonce);
        Ok(())
    }

    /// Asks for the cluster's state: the members of its epoch, or, for a joiner that knows none yet, the whole pool
    /// (whoever is in an epoch answers with a `StartEpoch`).
    fn broadcast_recovery(&self, nonce: u64) {
        let message = Message::Recovery { nonce };
        if self.members.is_empty() {
            self.outbound.broadcast(&message);
        } else {
            self.broadcast(&message);
        }
    }

    pub(super) fn on_recovery(&mut self, from: u8, nonce: u64) {
        if self.status != Status::Normal {
            return;
        }
        if self.is_primary() && from != self.config.replica {
            // A replica that recovers lost its state since it acknowledged anything: it holds no log a new epoch
            // could start from (see `lacks_caught_up_quorum`). Its acks counted for the commits already made; no
            // later commit may count them either.
            self.primary.acks.remove(&from);
            self.unproven.insert(from);
        }
        let head = self.journal.head();
        let message = Message::RecoveryResponse {
            view: self.view,
            nonce,
            op: head.op,
            checksum: head.checksum,
            commit: self.commit_max,
            primary: self.is_primary(),
        };
        self.outbound.send(from, &message);
    }

    pub(super) fn on_recovery_response(&mut self, from: u8, response: Message) {
        let Message::RecoveryResponse { nonce, .. } = response else {
            return;
        };
        let quorum = self.quorum();
        let members = self.members;
        let Some(recovery) = self.recovery.as_mut() else { return };
        if nonce != recovery.nonce || recovery.target_chosen {
            return;
        }
        recovery.responses.insert(from, response);
        if recovery.responses.len() < quorum {
            return;
        }
        let view_max = recovery
            .responses
            .values()
            .filter_map(|r| {
                if let Message::RecoveryResponse { view, .. } = r {
                    Some(*view)
                } else {
                    None
                }
            })
            .max()
            .expect("a quorum of responses");
        if view_max < self.view {
            // A replica that lost its tail keeps its durable view: it may have voted in a later view than the
            // cluster now runs, and a vote is a promise never to acknowledge in an older one (a DoViewChange it sent
            // there could still complete that view). It asks the cluster to move up to its view instead, and
            // recovers from a primary of that view or a later one; its own DoViewChange is never sent.
            recovery.responses.clear();
            let view = self.view;
            tracing::info!(
                view,
                cluster_view = view_max,
                "recovery: the cluster is in an older view; asking it to move up"
            );
            self.broadcast(&Message::StartViewChange { view });
            return;
        }
        let primary = members.nth(view_max);
        let Some(&Message::RecoveryResponse {
            view,
            op,
            checksum,
            commit,
            primary: true,
            ..
        }) = recovery.responses.get(&primary)
        else {
            return;
        };
        if view != view_max {
            return;
        }
        recovery.target_chosen = true;
        recovery.give_up_at = Instant::now() + Duration::from_millis(RECOVERY_GIVE_UP_MS);
        self.view = view;
        self.commit_max = commit;
        tracing::info!(view, primary, op, commit, "recovery: fetching the log from the primary");
        self.start_sync(
            LogSource {
                replica: primary,
                op,
                checksum,
            },
            SyncPurpose::Recover,
        );
    }

    pub(super) fn tick_recovery(&mut self, now: Instant) -> Result<(), ReplicaError> {
        let Some(recovery) = self.recovery.as_mut() else {
            return Ok(());
        };
        if now >= recovery.give_up_at {
            tracing::warn!("recovery made no progress; starting over");
            return self.start_recovery();
        }
        if !recovery.target_chosen && now >= recovery.resend_at {
            recovery.resend_at = now + Duration::from_millis(RECOVERY_RESEND_MS);
            let nonce = recovery.nonce;
            self.broadcast_recovery(nonce);
        }
        Ok(())
    }

    /// Recovery ends once the primary's log is held up to its head: the replica becomes a backup in that view.
    pub(super) fn finish_recovery(&mut self, source: LogSource) -> Result<(), ReplicaError> {
        self.truncate_log_after(source.op)?;
        self.journal.sync()?;
        if self.config.mutants.has(Bug::MarkIgnoresAdoptedLog) {
            // MUTANT(mark-ignores-adopted-log): as in `finish_adopt_view`, the mark only comes down here.
            self.superblock.acked = self.superblock.acked.min(self.journal.head().op);
        } else {
            self.claim_view_log();
        }
        self.recovery = None;
        self.log_view = self.view;
        self.status = Status::Normal;
        self.persist_superblock()?;
        self.op_known_max = self.op_known_max.max(source.op);
        self.timers.primary_deadline = Instant::now() + self.random_timeout();
        self.ack_pending = true;
        let head = self.journal.head();
        tracing::info!(
            view = self.view,
            op = head.op,
            commit = self.commit_max,
            "recovery done: backup in view"
        );
        Ok(())
    }
}

/// A random nonce source.
trait GenNonce {
    fn gen_nonce(&mut self) -> u64;
}

impl GenNonce for rand::rngs::StdRng {
    fn gen_nonce(&mut self) -> u64 {
        rand::Rng::gen(self)
    }
}
