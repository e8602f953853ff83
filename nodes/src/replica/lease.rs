//! Read leases: the primary answers a linearizable read from its own state, without a round through the log,
//! while a quorum's promise not to elect anyone else is known to hold (Raft's leader lease, § 6.4 of Ongaro's
//! thesis; CockroachDB's epoch leases with a max clock offset).
//!
//! # Protocol
//! - Every heartbeat (`Commit`) the primary sends carries a fresh `round`; it notes the instant it *sent* the round
//!   on its monotonic clock.
//! - A backup in normal status that accepts the heartbeat answers `CommitOk { view, round }` and thereby promises,
//!   on ITS monotonic clock, not to take part in a view change (no StartViewChange or DoViewChange, not even a
//!   view-change timeout) for [`LeaseConfig::promise`] (the view-change timeout's lower bound) from the moment it
//!   received the round. A replica that (re)starts promises the same from its boot, as it may have promised before
//!   the crash and kept no record.
//! - The primary holds a lease that starts at the send instant of the newest round a quorum (itself included) has
//!   granted, and lasts [`LeaseConfig::read_lease`] on its own clock: the promise minus the drift margin below.
//! - While the lease holds, its view is normal, no message of a higher view was seen and its commit point has
//!   reached the head it started the view with (the chosen log holds every op an older view committed, but until
//!   they commit again here its state may lack some), the primary serves `get` and log reads locally. Otherwise a
//!   read goes through the log, as before.
//!
//! Why it is safe: a new view needs a quorum of DoViewChange, which shares a replica with the quorum that granted
//! the lease. That replica is the old primary itself (which stopped serving when it left normal status) or a backup
//! that votes only after its promise ran out; so no write of a newer view commits before the promise ends, and the
//! drift bound places the end of every promise after the end of the lease.
//!
//! # The clock bound (what the guarantee assumes)
//! Each replica's monotonic clock runs at a rate within `±drift_max_percent` (ρ) of real time, and during any one
//! promise it jumps (is bumped or strobed) by at most `jump_max_ms` (J) in total, forward or back. A round sent at
//! real time `s` and received at `a >= s` is promised until real time `>= a + (L - J) / (1 + ρ)`; the primary's lease
//! `R` ends by real time `s + (R + J) / (1 - ρ)`. So `R = (L - J)·(1 - ρ)/(1 + ρ) - J` is safe. With the defaults
//! (L = view-change timeout 600 ms, ρ = 10 %, J = 100 ms) R = 309 ms, renewed every heartbeat (100 ms). A clock
//! running more than ρ off, or a jump larger than J within one promise, voids the guarantee: that is what the bound
//! means, and the `lease-ignores-drift` mutant is the node that assumes ρ = J = 0.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// Most heartbeat rounds whose send instants the primary keeps (older rounds can no longer extend a lease anyway:
/// the lease of a round sent longer than one promise ago has ended).
const ROUNDS_KEPT_MAX: usize = 256;

/// Read-lease settings of one replica (`faultline-node run --no-lease-reads`, `--clock-drift-max-percent`,
/// `--clock-jump-max-ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Whether the primary serves reads on a lease and backups promise (off: every read goes through the log and
    /// nothing waits for a promise, the node as it was before leases).
    pub enabled: bool,
    /// How long a backup's promise lasts on its clock: the view-change timeout's lower bound.
    pub promise_ms: u64,
    /// ρ: most a replica's clock rate differs from real time, in percent (below 100).
    pub drift_max_percent: u64,
    /// J: most a replica's clock jumps, forward or back, in total during one promise.
    pub jump_max_ms: u64,
    /// `lease-ignores-drift` mutant: the lease lasts the whole promise (ρ = J = 0).
    pub ignores_drift: bool,
}

impl LeaseConfig {
    /// How long the primary's lease lasts on its own clock from the send instant of a granted round:
    /// `(L - J)·(100 - ρ)/(100 + ρ) - J`, zero when the bound leaves nothing.
    pub fn read_lease_ms(&self) -> u64 {
        if self.ignores_drift {
            // MUTANT(lease-ignores-drift): the primary takes the backups' whole promise for its own lease, as if
            // every clock ran at one rate and never jumped. On one machine's unfaked clock that holds (the lease
            // starts at the send, the promise at the later receipt, both on CLOCK_MONOTONIC), so no pause, kill or
            // partition exposes it; a primary clock that runs slow or is bumped back, or a backup clock that runs
            // fast or is bumped forward, lets the lease outlive a promise, and a deposed primary serves stale reads.
            return self.promise_ms;
        }
        let rho = self.drift_max_percent.min(99);
        let shrunk = self.promise_ms.saturating_sub(self.jump_max_ms) * (100 - rho) / (100 + rho);
        shrunk.saturating_sub(self.jump_max_ms)
    }

    /// How long a promise lasts on the backup's clock.
    pub fn promise(&self) -> Duration {
        Duration::from_millis(self.promise_ms)
    }
}

/// The primary's side: heartbeat rounds sent, grants received, and whether reads may be served on the lease.
#[derive(Debug, Default)]
pub(super) struct PrimaryLease {
    /// Last round sent in this view (rounds start at 1).
    round: u64,
    /// Send instants of recent rounds, oldest first.
    sent: VecDeque<(u64, Instant)>,
    /// Newest round each backup granted in this view.
    granted: BTreeMap<u8, u64>,
    /// The lease ends here (on this replica's clock); `None`: no lease yet in this view.
    expires_at: Option<Instant>,
    /// The head when this replica became primary: no lease read before its commit reaches this op (until then its
    /// state may lack ops an older view committed).
    view_start_op: u64,
    /// A message of a higher view was seen: no lease reads for the rest of this view.
    revoked: bool,
}

impl PrimaryLease {
    /// A fresh lease state for a view this replica leads from `head_op`.
    pub(super) fn new_view(head_op: u64) -> PrimaryLease {
        PrimaryLease {
            view_start_op: head_op,
            ..PrimaryLease::default()
        }
    }

    /// The next heartbeat round, sent `now`.
    pub(super) fn next_round(&mut self, now: Instant) -> u64 {
        self.round += 1;
        self.sent.push_back((self.round, now));
        while self.sent.len() > ROUNDS_KEPT_MAX {
            self.sent.pop_front();
        }
        self.round
    }

    /// Counts `from`'s grant of `round`, extending the lease to the newest round a quorum (this primary included)
    /// granted.
    pub(super) fn grant(&mut self, from: u8, round: u64, quorum: usize, config: &LeaseConfig) {
        if round == 0 || round > self.round {
            return;
        }
        let newest = self.granted.entry(from).or_insert(0);
        *newest = (*newest).max(round);
        // The primary grants every round it sent; it needs quorum - 1 backups.
        let backups_needed = quorum.saturating_sub(1);
        let mut rounds: Vec<u64> = self.granted.values().copied().collect();
        if backups_needed == 0 || rounds.len() < backups_needed {
            return;
        }
        rounds.sort_unstable_by(|a, b| b.cmp(a));
        let quorum_round = rounds[backups_needed - 1];
        let Some(&(_, sent_at)) = self.sent.iter().find(|(r, _)| *r == quorum_round) else {
            return;
        };
        let expires_at = sent_at + Duration::from_millis(config.read_lease_ms());
        if self.expires_at.is_none_or(|current| expires_at > current) {
            self.expires_at = Some(expires_at);
        }
    }

    /// Stops lease reads for the rest of this view.
    pub(super) fn revoke(&mut self) {
        self.revoked = true;
        self.expires_at = None;
    }

    /// How long the lease still holds at `now` (`None`: no lease), given the replica's executed commit point.
    pub(super) fn remaining(&self, now: Instant, commit_min: u64) -> Option<Duration> {
        if self.revoked || commit_min < self.view_start_op {
            return None;
        }
        let expires_at = self.expires_at?;
        (now < expires_at).then(|| expires_at - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(promise_ms: u64, drift_max_percent: u64, jump_max_ms: u64) -> LeaseConfig {
        LeaseConfig {
            enabled: true,
            promise_ms,
            drift_max_percent,
            jump_max_ms,
            ignores_drift: false,
        }
    }

    #[test]
    fn given_the_default_bound_when_sizing_the_lease_should_cover_drift_and_jumps_on_both_sides() {
        let lease = config(600, 10, 100);
        assert_eq!(lease.read_lease_ms(), 309);
        // The primary's clock slow and bumped back, the backup's fast and bumped forward: still inside the promise.
        let lease_end_real_ms = (309.0 + 100.0) / 0.9;
        let promise_end_real_ms = (600.0 - 100.0) / 1.1;
        assert!(lease_end_real_ms <= promise_end_real_ms);
        assert_eq!(config(600, 0, 0).read_lease_ms(), 600);
        assert_eq!(config(300, 10, 200).read_lease_ms(), 0, "a bound that leaves nothing");
        let mutant = LeaseConfig {
            ignores_drift: true,
            ..lease
        };
        assert_eq!(mutant.read_lease_ms(), 600);
    }

    #[test]
    fn given_grants_when_a_quorum_holds_a_round_should_lease_from_its_send_instant() {
        let lease_config = config(600, 10, 100);
        let start = Instant::now();
        let mut lease = PrimaryLease::new_view(0);
        let first = lease.next_round(start);
        let second = lease.next_round(start + Duration::from_millis(100));
        assert_eq!(lease.remaining(start, 0), None, "no grant yet");
        // Five replicas: the primary and two backups.
        lease.grant(1, second, 3, &lease_config);
        assert_eq!(lease.remaining(start, 0), None, "one backup is no quorum of five");
        lease.grant(2, first, 3, &lease_config);
        assert_eq!(
            lease.remaining(start, 0),
            Some(Duration::from_millis(309)),
            "from the older round both granted"
        );
        lease.grant(2, second, 3, &lease_config);
        assert_eq!(
            lease.remaining(start + Duration::from_millis(400), 0),
            Some(Duration::from_millis(9))
        );
        assert_eq!(lease.remaining(start + Duration::from_millis(409), 0), None, "expired");
        lease.grant(1, 99, 3, &lease_config);
        assert_eq!(lease.granted[&1], second, "a round never sent grants nothing");
    }

    #[test]
    fn given_a_new_view_when_its_commit_lags_or_a_higher_view_shows_should_not_lease() {
        let lease_config = config(600, 10, 100);
        let start = Instant::now();
        let mut lease = PrimaryLease::new_view(7);
        let round = lease.next_round(start);
        lease.grant(1, round, 2, &lease_config);
        assert_eq!(
            lease.remaining(start, 6),
            None,
            "older views' ops not yet committed here"
        );
        assert!(lease.remaining(start, 7).is_some());
        lease.revoke();
        assert_eq!(lease.remaining(start, 7), None);
        let round = lease.next_round(start);
        lease.grant(1, round, 2, &lease_config);
        assert_eq!(lease.remaining(start, 7), None, "revoked for the rest of the view");
    }
}
