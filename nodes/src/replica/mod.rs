//! The VSR replica core (Viewstamped Replication Revisited, Liskov & Cowling 2012).
//!
//! One OS thread owns all replica state and runs [`Replica::run`]: it takes events (peer messages, client
//! requests) from one bounded channel, handles timers, and does disk I/O synchronously. Each loop iteration
//! ends with [`Replica::flush`]: one fsync for everything appended in the iteration (group commit), then the
//! messages that must wait for durability (PrepareOk), then commit execution.
//!
//! Submodules: `normal` (requests, prepares, commits), `view_change`, `repair`, `recovery`, `state_transfer`
//! (checkpoints and catching up from one), `lease` (reads served by the primary on a quorum's promise),
//! `reconfiguration` (epochs: members join and leave).

pub mod lease;
mod normal;
mod reconfiguration;
mod recovery;
mod repair;
mod state_transfer;
mod view_change;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::oneshot;

use crate::checkpoint::CheckpointError;
use crate::checksum::hex;
use crate::config::{Members, Reconfiguration};
use crate::message::Message;
use crate::mutants::{Bug, Mutants};
use crate::network::Outbound;
use crate::state_machine::{Operation, Reply, StateMachine};
use crate::superblock::{Superblock, SuperblockError, VsrState};
use crate::wal::entry::RequestIdentity;
use crate::wal::journal::{Journal, JournalError};
use lease::{LeaseConfig, PrimaryLease};

/// Events the replica core consumes.
pub enum Event {
    /// A verified message from peer `from`.
    Message {
        /// Sender replica.
        from: u8,
        /// The sender's epoch (from the frame header).
        epoch: u64,
        /// The message.
        message: Message,
    },
    /// An operator asks the primary to change the members (`POST /reconfigure`).
    Reconfigure {
        /// The members asked for.
        members: Members,
        /// Receives the outcome.
        reply: oneshot::Sender<ClientOutcome>,
    },
    /// A client request and where to send its outcome.
    Client {
        /// The request.
        request: ClientRequest,
        /// Receives the outcome.
        reply: oneshot::Sender<ClientOutcome>,
    },
    /// Time to look at the timers (from [`spawn_ticker`]).
    Tick,
    /// Stop (SIGTERM): finish this loop iteration (its group fsync and the acks it gates), then tell `done`.
    Shutdown {
        /// Told once the WAL is synced and the loop has ended.
        done: oneshot::Sender<()>,
    },
}

/// A client operation with its optional identity (client id 0 = no deduplication).
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// The operation.
    pub operation: Operation,
    /// Client id and request number.
    pub identity: RequestIdentity,
}

/// How a client request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientOutcome {
    /// Committed and applied; the reply.
    Done(Reply),
    /// This replica is not the primary in normal status: not applied.
    NotPrimary {
        /// The primary, when known.
        primary: Option<u8>,
    },
    /// The primary's queue is full: not applied.
    Busy,
    /// Older than the client's latest request: not applied now, its original reply is gone.
    Stale,
    /// Prepared but the view changed before it committed: may or may not be applied.
    Unknown(String),
    /// A reconfiguration committed (or the members asked for are the current ones): the epoch and its members.
    Reconfigured {
        /// The epoch in force.
        epoch: u64,
        /// Its members.
        members: Members,
    },
    /// Refused before it entered the log (a reconfiguration that is not one change, or one while another is open).
    Refused(String),
}

/// Replica status, as in the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Processing requests in `view`.
    Normal,
    /// Changing view (also right after a restart, until the current view is learned).
    ViewChange,
    /// A wiped replica (or a joiner) getting its state back from the cluster.
    Recovering,
    /// It heard of a newer epoch and catches up to it; it takes no part in its old epoch any more.
    Transitioning,
    /// Not a member of its epoch: it takes part in nothing, and serves its log to replicas that catch up.
    Removed,
}

impl Status {
    /// The name used by `/status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Normal => "normal",
            Status::ViewChange => "view_change",
            Status::Recovering => "recovering",
            Status::Transitioning => "transitioning",
            Status::Removed => "removed",
        }
    }
}

/// What `/status` reports; published by the core after every loop iteration.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StatusSnapshot {
    /// Replica id.
    pub replica: u8,
    /// `normal`, `view_change`, `recovering`, `transitioning` or `removed`.
    pub status: &'static str,
    /// Current epoch (0: a joiner that has not learned one).
    pub epoch: u64,
    /// The members of the current epoch, by replica id.
    pub members: Vec<u8>,
    /// Current view (of the epoch).
    pub view: u64,
    /// View in which the log was last normal.
    pub log_view: u64,
    /// `primary` (primary of `view` and in normal status) or `backup`.
    pub role: &'static str,
    /// Primary of the current view (`None` while the replica knows no members).
    pub primary: Option<u8>,
    /// Head op.
    pub op: u64,
    /// Highest executed (committed) op.
    pub commit: u64,
    /// Checksum of the head entry, 32 hex digits.
    pub head_checksum: String,
    /// Cluster id.
    pub cluster_id: u64,
    /// WAL file fsyncs since this process started.
    pub wal_fsyncs: u64,
    /// Op of the latest checkpoint (0: none yet).
    pub checkpoint: u64,
    /// The WAL holds no entry at or below this op (a checkpoint covers them).
    pub wal_base: u64,
    /// Entries the WAL holds.
    pub wal_entries: u64,
    /// Names of the active mutants (`run --bug`); empty for the correct node.
    pub mutants: Vec<&'static str>,
    /// The primary's read lease (`None` when leases are off).
    pub lease: Option<LeaseStatus>,
    /// This process's clocks as it sees them (under a clock fault: the faked ones), read when `/status` answers.
    pub clock: ClockReading,
}

/// The read-lease part of `/status`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct LeaseStatus {
    /// Whether this replica may serve a read on its lease now (it is the primary of a normal view and holds one).
    pub held: bool,
    /// How long the lease still holds (0 when not held).
    pub remaining_ms: u64,
    /// How long a lease lasts from the send of a granted heartbeat: the promise minus the drift margin.
    pub read_lease_ms: u64,
    /// How long a backup's promise lasts (the view-change timeout's lower bound).
    pub promise_ms: u64,
    /// Whether this replica, as a backup, is bound by a promise now (it will not vote in a view change).
    pub promising: bool,
    /// Reads this process answered on its lease.
    pub reads_served: u64,
}

/// What this process's clocks read: the realtime clock (ms since the Unix epoch) and CLOCK_MONOTONIC (ms since
/// an unspecified start, the clock every timer and lease of the replica runs on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClockReading {
    /// `CLOCK_REALTIME`, in ms since the Unix epoch.
    pub realtime_ms: i64,
    /// `CLOCK_MONOTONIC`, in ms.
    pub monotonic_ms: i64,
}

impl ClockReading {
    /// Reads both clocks through libc's `clock_gettime`, the call a clock fault (libfaketime) interposes, as it
    /// does for `std::time::Instant` and `SystemTime`.
    pub fn now() -> ClockReading {
        let read_ms = |clock: libc::clockid_t| {
            let mut spec = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `spec` is a valid, writable timespec and both clock ids exist on every Linux.
            let result = unsafe { libc::clock_gettime(clock, &mut spec) };
            assert_eq!(result, 0, "clock_gettime({clock}) failed");
            spec.tv_sec * 1000 + spec.tv_nsec / 1_000_000
        };
        ClockReading {
            realtime_ms: read_ms(libc::CLOCK_REALTIME),
            monotonic_ms: read_ms(libc::CLOCK_MONOTONIC),
        }
    }
}

/// Static configuration of a replica.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    /// Cluster id.
    pub cluster: u64,
    /// This replica's id.
    pub replica: u8,
    /// Number of replica ids in the pool (members or not; every one has a peer address).
    pub replica_count: u8,
    /// Data dir (superblock and WAL).
    pub data_dir: PathBuf,
    /// Primary heartbeat period.
    pub heartbeat_interval_ms: u64,
    /// Base view-change timeout; each arm is randomized in `[t, 2t)`.
    pub view_change_timeout_ms: u64,
    /// Committed ops between checkpoints (0: never checkpoint; the WAL then grows without bound).
    pub checkpoint_interval_ops: u64,
    /// Active bugs (empty for the correct replica).
    pub mutants: Mutants,
    /// Read leases (on by default; see `lease`).
    pub lease: LeaseConfig,
}

/// A fatal error in the core: the replica stops rather than run on a log it cannot write.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// WAL I/O failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// Superblock I/O failed.
    #[error(transparent)]
    Superblock(#[from] SuperblockError),
    /// Checkpoint I/O failed, or the checkpoint loaded at boot does not decode.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
}

/// Most prepared-but-uncommitted ops on the primary.
pub const PIPELINE_PREPARE_MAX: u64 = 256;
/// Most client requests waiting for a pipeline slot.
pub const REQUEST_QUEUE_MAX: usize = 1024;
/// Most events handled per loop iteration before the group fsync.
const EVENT_BATCH_MAX: usize = 1024;
const TICK_MS: u64 = 10;
const SUPERBLOCK_COMMIT_INTERVAL_MS: u64 = 1000;
/// Most intact entries the `truncate-on-boot` mutant drops from the WAL's tail at boot.
const TRUNCATE_ON_BOOT_ENTRIES_MAX: u64 = 3;
/// How often the `ack-before-fsync` mutant fsyncs the WAL (a periodic flush, acknowledged long before it).
const DEFERRED_FSYNC_INTERVAL_MS: u64 = 1000;

type Waiter = oneshot::Sender<ClientOutcome>;

/// Starts the thread that wakes the replica loop every `TICK_MS` with [`Event::Tick`]; it ends when the loop has.
///
/// Why not `recv_timeout`: std's timed waits (`recv_timeout`, `park_timeout`, `Condvar::wait_timeout`) hand the
/// kernel an absolute CLOCK_MONOTONIC deadline read through `clock_gettime`. Under a clock fault (libfaketime, whose
/// faked CLOCK_MONOTONIC is the faked realtime, decades ahead of the kernel's) that deadline lies years away and the
/// loop would sleep until the next message. A relative sleep (`nanosleep`) and an untimed `recv` are immune.
pub fn spawn_ticker(events: SyncSender<Event>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("replica-ticker".to_string())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(TICK_MS));
            match events.try_send(Event::Tick) {
                // A full queue wakes the loop by itself.
                Ok(()) | Err(TrySendError::Full(_)) => {}
                Err(TrySendError::Disconnected(_)) => return,
            }
        })
        .map(drop)
}

/// Per-view state of the primary.
#[derive(Default)]
struct PrimaryState {
    /// Highest op each replica (including this one, once durable) has acknowledged in this view.
    acks: BTreeMap<u8, u64>,
    /// Clients waiting for an op to commit.
    waiters: BTreeMap<u64, Vec<Waiter>>,
    /// Requests waiting for a pipeline slot.
    queue: VecDeque<(ClientRequest, Waiter)>,
    /// `txn-reads-at-receipt` mutant: the reply made when a queued transaction arrived, by (client, request).
    receipt_reads: BTreeMap<(u64, u64), Reply>,
    /// `txn-reads-at-receipt` mutant: the same, by op once prepared.
    receipt_reads_by_op: BTreeMap<u64, Reply>,
}

/// A replica's log summary as carried by DoViewChange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSummary {
    /// The replica.
    pub replica: u8,
    /// Its log_view.
    pub log_view: u64,
    /// Its head op.
    pub op: u64,
    /// Its head checksum.
    pub checksum: u128,
    /// Its commit number.
    pub commit: u64,
    /// Its acknowledged mark: above `op` when the replica lost acknowledged entries (a short log).
    pub acked: u64,
}

impl LogSummary {
    /// Whether the replica's WAL lost entries it acknowledged: its log may lack committed ops, so it is no candidate
    /// for the new view's log, and the chosen log must cover what it acknowledged.
    pub fn is_short(&self) -> bool {
        self.acked > self.op
    }

    /// Whether `self` (a candidate log) holds every op `other` acknowledged: a newer log_view (its view change
    /// already covered them), or the same log_view and at least `other`'s mark (two logs of one view agree up to
    /// the shorter one).
    pub fn covers(&self, other: &LogSummary) -> bool {
        (self.log_view, self.op) >= (other.log_view, other.acked)
    }
}

/// A replica's head as announced by a peer: where a log is synced from.
#[derive(Clone, Copy, Debug)]
struct LogSource {
    replica: u8,
    op: u64,
    checksum: u128,
}

/// Why a log is being synced to another replica's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyncPurpose {
    /// The new primary installs the log chosen by the view change.
    BecomePrimary,
    /// A backup adopts the log of the view a StartView announced.
    AdoptView,
    /// A wiped replica copies the primary's log.
    Recover,
    /// A replica of an older epoch catches up to a committed op of this newer epoch's log, and executes into it.
    JoinEpoch(u64),
}

/// Replacing this replica's log by `source`'s, op by op from the committed prefix upwards.
///
/// Local entries are never dropped before the source proves them divergent: an entry is replaced only when the
/// source's entry at that op differs (so it, and everything above it, was never committed). Until the sync
/// completes, log_view is not advanced and nothing is acknowledged.
#[derive(Clone, Copy, Debug)]
struct LogSync {
    source: LogSource,
    /// Every op up to here equals the source's.
    verified_op: u64,
    purpose: SyncPurpose,
    /// When the source last sent something the sync took (an entry, a checkpoint chunk), or the sync started.
    progress_at: Instant,
}

#[derive(Default)]
struct ViewChangeState {
    /// Set right after a restart: asking for the current view instead of voting for a new one.
    rejoining: bool,
    /// The view change is waiting for a log that covers a short replica's mark (logged once).
    waiting_for_cover: bool,
    start_view_change_from: BTreeSet<u8>,
    do_view_change_sent: bool,
    do_view_changes: BTreeMap<u8, LogSummary>,
}

struct RepairInFlight {
    source: u8,
    deadline: Instant,
}

struct RecoveryState {
    nonce: u64,
    responses: BTreeMap<u8, Message>,
    /// Set once a quorum including the primary answered.
    target_chosen: bool,
    resend_at: Instant,
    give_up_at: Instant,
}

struct Timers {
    /// Next time a transitioning replica asks the pool for the epoch it catches up to.
    epoch_request_at: Instant,
    /// A backup starts a view change when this passes without hearing from the primary.
    primary_deadline: Instant,
    /// A view change (or rejoin) that has not completed by then moves to the next view.
    view_change_deadline: Instant,
    /// Next heartbeat (primary) or view-change message resend.
    resend_at: Instant,
    /// Rate limit for RequestStartView.
    start_view_request_at: Instant,
    /// Next time the commit number may be written to the superblock.
    superblock_commit_at: Instant,
    /// Next WAL fsync of the `ack-before-fsync` mutant.
    deferred_fsync_at: Instant,
}

/// The replica core.
pub struct Replica {
    config: ReplicaConfig,
    superblock: Superblock,
    journal: Journal,
    machine: StateMachine,
    outbound: Outbound,
    published: Arc<Mutex<StatusSnapshot>>,
    status: Status,
    /// The epoch this replica takes part in (durable; never goes back).
    epoch: u64,
    /// The members of `epoch`.
    members: Members,
    /// The members of the epoch before (this process's life only: the `quorum-of-old-config` mutant's stale count).
    previous_members: Members,
    /// The op of a reconfiguration in the primary's log that has not committed: nothing is prepared after it.
    pending_reconfig: Option<u64>,
    /// When each peer in another epoch was last told ours (or asked for theirs): at most once a heartbeat interval.
    epoch_told_at: BTreeMap<u8, Instant>,
    view: u64,
    log_view: u64,
    /// Highest executed op.
    commit_min: u64,
    /// Highest op known committed.
    commit_max: u64,
    /// The commit point persisted before this process started: ops this replica executed in an earlier life, the
    /// only ones it may replay while its log is not (yet) the current view's.
    commit_replay: u64,
    /// Highest op known to exist in the current view (from prepares, heartbeats, StartView).
    op_known_max: u64,
    primary: PrimaryState,
    /// The primary's read lease in this view.
    lease: PrimaryLease,
    /// Until then this replica takes no part in a view change: its promise to the primary that holds a read lease
    /// (or, after a boot, to whichever primary it may have promised before).
    promise_until: Instant,
    /// Reads served on the lease by this process.
    lease_reads_served: u64,
    view_change: ViewChangeState,
    repair: Option<RepairInFlight>,
    repairing: bool,
    sync: Option<LogSync>,
    recovery: Option<RecoveryState>,
    /// The file bytes of the latest checkpoint (empty: none), served to replicas that need a state transfer.
    checkpoint_file: Vec<u8>,
    /// A checkpoint being received by state transfer.
    transfer: Option<state_transfer::Transfer>,
    /// A backup owes the primary a PrepareOk for its head (sent after the next fsync).
    ack_pending: bool,
    /// Members that may hold no log: added by a reconfiguration, or asked this primary to recover (their state is
    /// lost), and have acknowledged no prepare since (`lacks_caught_up_quorum`). Carried from epoch to epoch, so a
    /// joiner that has not caught up by the next change still counts as one.
    unproven: std::collections::BTreeSet<u8>,
    /// The (epoch, view) of the last PrepareOk this replica sent: a backup that has sent none in its view sends one
    /// on the first heartbeat, so the primary knows who holds the log even when no client writes
    /// (`lacks_caught_up_quorum`).
    acked_in: Option<(u64, u64)>,
    timers: Timers,
    rng: StdRng,
    /// Set by [`Event::Shutdown`]: the loop ends after this iteration's flush.
    shutdown: Option<oneshot::Sender<()>>,
}

impl Replica {
    /// Builds the replica from its opened superblock, verified checkpoint (`None`: none yet) and journal, replaying
    /// committed entries above the checkpoint.
    pub fn new(
        config: ReplicaConfig,
        superblock: Superblock,
        checkpoint: Option<crate::checkpoint::Loaded>,
        journal: Journal,
        outbound: Outbound,
        published: Arc<Mutex<StatusSnapshot>>,
    ) -> Result<Replica, ReplicaError> {
        let now = Instant::now();
        let promise_until = if config.lease.enabled {
            now + config.lease.promise()
        } else {
            now
        };
        let seed = u64::from(config.replica) ^ now.elapsed().as_nanos() as u64 ^ std::process::id() as u64;
        outbound.set_epoch(superblock.state.epoch);
        let mut replica = Replica {
            status: Status::ViewChange,
            epoch: superblock.state.epoch,
            members: superblock.members,
            previous_members: superblock.members,
            pending_reconfig: None,
            epoch_told_at: BTreeMap::new(),
            view: superblock.state.view,
            log_view: superblock.state.log_view,
            commit_min: 0,
            commit_max: superblock.state.commit,
            commit_replay: superblock.state.commit,
            op_known_max: 0,
            config,
            superblock,
            journal,
            machine: StateMachine::default(),
            outbound,
            published,
            primary: PrimaryState::default(),
            lease: PrimaryLease::default(),
            // A replica may have promised just before it crashed and kept no record: it promises again from its
            // boot, for one promise.
            promise_until,
            lease_reads_served: 0,
            view_change: ViewChangeState::default(),
            repair: None,
            repairing: false,
            sync: None,
            recovery: None,
            checkpoint_file: Vec::new(),
            transfer: None,
            ack_pending: false,
            acked_in: None,
            unproven: std::collections::BTreeSet::new(),
            timers: Timers {
                epoch_request_at: now,
                primary_deadline: now,
                view_change_deadline: now,
                resend_at: now,
                start_view_request_at: now,
                superblock_commit_at: now,
                deferred_fsync_at: now,
            },
            rng: StdRng::seed_from_u64(seed ^ rand::random::<u64>()),
            shutdown: None,
        };
        replica.restore_checkpoint(checkpoint)?;
        if replica.config.mutants.has(Bug::TruncateOnBoot) {
            replica.drop_tail_as_torn()?;
        }
        replica.check_acknowledged_tail()?;
        replica.boot()?;
        Ok(replica)
    }

    /// MUTANT(truncate-on-boot): drops the last entries of an intact WAL as if they were a torn tail, although
    /// they may be committed and applied (and acknowledged to the primary): up to TRUNCATE_ON_BOOT_ENTRIES_MAX
    /// entries, never at or below the WAL base, the commit the superblock persisted or the checkpoint, so the boot
    /// that follows neither refuses nor notices. The cut is durable (a rewrite, as a view change truncates) and
    /// logged like the torn tail of an ordinary crash; the peers still hold the entries and the replica repairs
    /// them from them, so only what it had applied before the kill, compared with what it boots with, shows it.
    fn drop_tail_as_torn(&mut self) -> Result<(), ReplicaError> {
        // A wiped replica has no log to cut, and a replica that never booted (sequence 1) must keep its genesis.
        if self.superblock.recovering || self.superblock.sequence == 1 {
            return Ok(());
        }
        let op_max = self.journal.op_max();
        let floor = self
            .journal
            .base()
            .op
            .max(self.superblock.state.commit)
            .max(self.commit_min);
        let keep = op_max.saturating_sub(TRUNCATE_ON_BOOT_ENTRIES_MAX).max(floor);
        if keep >= op_max {
            return Ok(());
        }
        let dropped = self.journal.range(keep + 1, op_max).count();
        // The modeled node believes its own cut is a torn write, so it also forgets that it acknowledged them.
        self.lower_acked(keep)?;
        self.journal.truncate_after(keep)?;
        assert!(
            self.journal.op_max() == keep && self.journal.head().op >= floor,
            "the cut keeps every op up to the persisted commit (kept {keep}, floor {floor})"
        );
        tracing::warn!(
            offset = self.journal.file_size_bytes()?,
            reason = %format!("{dropped} entries above op {keep} left to VSR repair"),
            "torn tail truncated"
        );
        Ok(())
    }

    /// Protocol-aware recovery (Alagappan et al., FAST 2018): a WAL whose head is below the acknowledged mark lost
    /// entries this replica acknowledged (a truncated or rolled-back tail that looked like a torn write, or no
    /// damage sign at all). Such a replica must not vote in a view change as if it never had them: with it in a
    /// DoViewChange quorum, the new view could be chosen from logs that all lack a committed op. It keeps its mark,
    /// which its DoViewChange carries: its log is then no candidate, and a view starts only from a log that covers
    /// the mark (`view_change::maybe_complete_view_change`); the mark comes down once it holds a view's log again.
    /// A replica that merely crashed never gets here: the mark is raised only after the WAL fsync that made the
    /// acknowledged entries durable.
    ///
    /// The persisted commit point counts as acknowledged too: the replica executed those ops, so it held them, and
    /// they are committed. A WAL that ends below it lost committed entries, whatever the mark says (a crash between
    /// adopting a view's log and the ack that follows once left the mark below such a log).
    fn check_acknowledged_tail(&mut self) -> Result<(), ReplicaError> {
        let head = self.journal.head().op;
        let commit = self.superblock.state.commit;
        if !self.superblock.recovering
            && self.keeps_acked_mark()
            && commit > self.superblock.acked
            && !self.config.mutants.has(Bug::MarkIgnoresAdoptedLog)
        {
            self.superblock.store_acked(&self.config.data_dir, commit)?;
        }
        let acked = self.superblock.acked;
        if self.superblock.recovering || acked <= head {
            return Ok(());
        }
        if self.config.mutants.has(Bug::RejoinAfterLostTail) {
            // MUTANT(rejoin-after-lost-tail): the replica believes its shorter log is all it ever acknowledged (it
            // forgets the mark) and offers it in the next view change as a whole log.
            return self.lower_acked(head);
        }
        tracing::warn!(
            replica = self.config.replica,
            op = head,
            acked,
            "the wal ends below what this replica acknowledged (lost acknowledged entries): its log is no candidate in a view change until it holds a view's log again"
        );
        Ok(())
    }

    /// Whether this replica keeps an acknowledged mark. The node `no-fsync` models has no durable record of what it
    /// acknowledged either: it cannot tell that a power loss took acknowledged entries, which is how it loses them.
    fn keeps_acked_mark(&self) -> bool {
        !self.config.mutants.has(Bug::NoFsync)
    }

    /// Sets the acknowledged mark to the head of the log this replica now holds as a view's log (as the new primary,
    /// a backup that adopted a StartView, or a recovered replica), in memory: the caller persists it with the
    /// log_view in one superblock write. Claiming a log_view is claiming that view's log: were the mark left below
    /// it until the next ack, a crash in between and a cut of the WAL below the view's head would boot a shorter
    /// log of that view with nothing to say it lost committed ops, and it could win the next view change (issue
    /// 49). Lowering to the head is safe too: what it acknowledged above that log in older views never committed,
    /// or the view's log would hold it.
    fn claim_view_log(&mut self) {
        if self.keeps_acked_mark() {
            self.superblock.acked = self.journal.head().op;
        }
    }

    /// Durably raises the acknowledged mark to the head before an ack for it leaves (the WAL is already synced).
    fn raise_acked(&mut self) -> Result<(), ReplicaError> {
        if !self.keeps_acked_mark() {
            return Ok(());
        }
        let head = self.journal.head().op;
        if head > self.superblock.acked {
            self.superblock.store_acked(&self.config.data_dir, head)?;
        }
        Ok(())
    }

    /// Durably lowers the acknowledged mark to `op` before the ops above it are dropped: the protocol proved they
    /// were never committed (a view change, sync or state transfer replaces them).
    fn lower_acked(&mut self, op: u64) -> Result<(), ReplicaError> {
        if self.superblock.acked > op {
            self.superblock.store_acked(&self.config.data_dir, op)?;
        }
        Ok(())
    }

    fn boot(&mut self) -> Result<(), ReplicaError> {
        let head = self.journal.head();
        if self.superblock.recovering {
            tracing::warn!(
                replica = self.config.replica,
                "data dir was wiped or lost acknowledged entries: starting VSR recovery"
            );
            self.start_recovery()?;
        } else if !self.members.contains(self.config.replica) {
            tracing::info!(
                replica = self.config.replica,
                epoch = self.epoch,
                members = %self.members,
                "not a member of its epoch: removed"
            );
            self.execute_committed()?;
            self.status = Status::Removed;
        } else if self.superblock.sequence == 1 && self.journal.op_max() == 0 {
            tracing::info!(
                replica = self.config.replica,
                view = 0,
                epoch = self.epoch,
                members = %self.members,
                "genesis replica: entering view 0"
            );
            self.status = Status::Normal;
            self.persist_superblock()?;
            self.timers.primary_deadline = Instant::now() + self.random_timeout();
            self.primary.acks.insert(self.config.replica, 0);
            self.lease = PrimaryLease::new_view(0);
        } else {
            self.execute_committed()?;
            tracing::info!(
                replica = self.config.replica,
                epoch = self.epoch,
                view = self.view,
                log_view = self.log_view,
                op = head.op,
                commit = self.commit_min,
                "rejoining: asking the cluster for the current view"
            );
            self.view_change = ViewChangeState {
                rejoining: true,
                ..ViewChangeState::default()
            };
            self.timers.view_change_deadline = Instant::now() + self.random_timeout();
        }
        Ok(())
    }

    /// Runs the event loop until [`Event::Shutdown`] or until every event sender is gone. The loop wakes for each
    /// event and for the ticks of [`spawn_ticker`], which must feed `events`.
    pub fn run(mut self, events: Receiver<Event>) -> Result<(), ReplicaError> {
        loop {
            let first = if self.has_pending_work() {
                match events.try_recv() {
                    Ok(event) => Some(event),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => return Ok(()),
                }
            } else {
                match events.recv() {
                    Ok(event) => Some(event),
                    Err(_) => return Ok(()),
                }
            };
            if let Some(event) = first {
                self.on_event(event)?;
            }
            for _ in 0..EVENT_BATCH_MAX {
                match events.try_recv() {
                    Ok(event) => self.on_event(event)?,
                    Err(_) => break,
                }
            }
            self.on_tick(Instant::now())?;
            self.flush()?;
            self.publish_status();
            if let Some(done) = self.shutdown.take() {
                tracing::info!(commit = self.commit_max, "stopped: the WAL is synced");
                let _ = done.send(());
                return Ok(());
            }
        }
    }

    fn has_pending_work(&self) -> bool {
        let fsync_pending = self.journal.is_dirty() && !self.config.mutants.has(Bug::AckBeforeFsync);
        fsync_pending || (!self.primary.queue.is_empty() && self.pipeline_has_room())
    }

    fn on_event(&mut self, event: Event) -> Result<(), ReplicaError> {
        match event {
            Event::Client { request, reply } => {
                self.on_client_request(request, reply);
                Ok(())
            }
            Event::Message { from, epoch, message } => self.on_message(from, epoch, message),
            Event::Reconfigure { members, reply } => {
                self.on_reconfigure(members, reply);
                Ok(())
            }
            Event::Tick => Ok(()),
            Event::Shutdown { done } => {
                self.shutdown = Some(done);
                Ok(())
            }
        }
    }

    fn on_message(&mut self, from: u8, epoch: u64, message: Message) -> Result<(), ReplicaError> {
        assert!(
            from < self.config.replica_count && from != self.config.replica,
            "network checks the sender"
        );
        let Some(message) = self.admit(from, epoch, message)? else {
            return Ok(());
        };
        if message.view().is_some_and(|view| view > self.view) {
            // A higher view exists or is being voted for: whatever it commits may be missing here.
            self.lease.revoke();
        }
        match message {
            Message::Prepare { view, commit, entry } => self.on_prepare(from, view, commit, entry)?,
            Message::PrepareOk { view, op, checksum } => self.on_prepare_ok(from, view, op, checksum),
            Message::Commit {
                view,
                commit,
                op,
                round,
            } => self.on_commit(from, view, commit, op, round),
            Message::CommitOk { view, round } => self.on_commit_ok(from, view, round),
            Message::StartViewChange { view } => self.on_start_view_change(from, view)?,
            Message::DoViewChange {
                view,
                log_view,
                op,
                checksum,
                commit,
                acked,
            } => {
                let summary = LogSummary {
                    replica: from,
                    log_view,
                    op,
                    checksum,
                    commit,
                    acked,
                };
                self.on_do_view_change(view, summary)?
            }
            Message::StartView {
                view,
                op,
                checksum,
                commit,
            } => self.on_start_view(
                from,
                view,
                LogSource {
                    replica: from,
                    op,
                    checksum,
                },
                commit,
            )?,
            Message::RequestStartView { view } => self.on_request_start_view(from, view),
            Message::Recovery { nonce } => self.on_recovery(from, nonce),
            response @ Message::RecoveryResponse { .. } => self.on_recovery_response(from, response),
            repair @ (Message::RequestPrepares { .. }
            | Message::RepairPrepare { .. }
            | Message::RepairDone { .. }
            | Message::CheckpointChunk { .. }) => self.on_repair_message(from, repair)?,
            // Same epoch: nothing to catch up to (`admit` handles these across epochs).
            Message::StartEpoch { .. } | Message::RequestStartEpoch => {}
        }
        Ok(())
    }

    /// Repair traffic: ops and checkpoints, which their checksums verify whatever epoch the peer is in.
    fn on_repair_message(&mut self, from: u8, message: Message) -> Result<(), ReplicaError> {
        match message {
            Message::RequestPrepares { from_op, to_op } => self.on_request_prepares(from, from_op, to_op),
            Message::RepairPrepare { entry } => self.on_repair_prepare(from, entry)?,
            Message::RepairDone { .. } => self.on_repair_done(from),
            Message::CheckpointChunk {
                op,
                checksum,
                size,
                offset,
                bytes,
            } => self.on_checkpoint_chunk(from, op, checksum, size, offset, bytes)?,
            other => unreachable!("not repair traffic: {other:?}"),
        }
        Ok(())
    }

    fn on_tick(&mut self, now: Instant) -> Result<(), ReplicaError> {
        match self.status {
            Status::Normal if self.is_primary() => self.tick_heartbeat(now),
            Status::Normal => {
                if now >= self.timers.primary_deadline && !self.promise_holds(now) {
                    tracing::warn!(
                        view = self.view,
                        primary = self.primary_of(self.view),
                        "primary timed out"
                    );
                    self.start_view_change(self.view + 1)?;
                }
            }
            Status::ViewChange => self.tick_view_change(now)?,
            Status::Recovering => self.tick_recovery(now)?,
            Status::Transitioning => self.tick_transitioning(now)?,
            Status::Removed => {}
        }
        if let Some(repair) = &self.repair {
            if now >= repair.deadline {
                self.repair = None;
            }
        }
        Ok(())
    }

    /// Ends a loop iteration: group fsync, then durability-gated messages, then commits.
    fn flush(&mut self) -> Result<(), ReplicaError> {
        if self.status == Status::Normal && self.is_primary() {
            self.prepare_queued();
        }
        if self.config.mutants.has(Bug::AckBeforeFsync) {
            // MUTANT(ack-before-fsync): PrepareOk leaves (and the primary counts its own ack) as soon as the entry
            // is written to the page cache; the fsync follows on a timer, up to DEFERRED_FSYNC_INTERVAL_MS later.
            // The acknowledged mark follows the deferred fsync, as a node whose acks run ahead of it would keep it.
            self.acknowledge_head();
            let now = Instant::now();
            if now >= self.timers.deferred_fsync_at {
                self.timers.deferred_fsync_at = now + Duration::from_millis(DEFERRED_FSYNC_INTERVAL_MS);
                self.journal.sync()?;
                if self.status == Status::Normal {
                    self.raise_acked()?;
                }
            }
        } else {
            // The one place where the WAL becomes durable before any PrepareOk leaves (and before the primary
            // counts its own ack), and the acknowledged mark with it.
            self.journal.sync()?;
            if self.is_acking() {
                self.raise_acked()?;
            }
            self.acknowledge_head();
        }
        self.execute_committed()?;
        self.maybe_checkpoint()?;
        self.check_progress()?;
        self.maybe_request_repair();
        self.maybe_persist_commit()
    }

    /// Whether [`Replica::acknowledge_head`] acknowledges now.
    fn is_acking(&self) -> bool {
        self.status == Status::Normal && (self.is_primary() || (self.ack_pending && self.sync.is_none()))
    }

    /// The primary counts its own ack for its head; a backup sends the PrepareOk it owes.
    fn acknowledge_head(&mut self) {
        if self.status != Status::Normal {
            return;
        }
        if self.is_primary() {
            self.primary.acks.insert(self.config.replica, self.journal.head().op);
            self.commit_by_quorum();
        } else if self.ack_pending && self.sync.is_none() {
            self.send_prepare_ok();
        }
    }

    fn maybe_persist_commit(&mut self) -> Result<(), ReplicaError> {
        let now = Instant::now();
        if self.status == Status::Recovering
            || self.commit_min <= self.superblock.state.commit
            || now < self.timers.superblock_commit_at
        {
            return Ok(());
        }
        self.timers.superblock_commit_at = now + Duration::from_millis(SUPERBLOCK_COMMIT_INTERVAL_MS);
        self.persist_superblock()
    }

    /// Durably stores epoch, members, view, log_view and commit (and clears the wiped flag once recovered).
    fn persist_superblock(&mut self) -> Result<(), ReplicaError> {
        self.superblock.members = self.members;
        let state = VsrState {
            epoch: self.epoch,
            view: self.view,
            log_view: self.log_view,
            commit: self.commit_min,
        };
        let recovering = self.status == Status::Recovering;
        self.superblock.store(&self.config.data_dir, state, recovering)?;
        Ok(())
    }

    /// Applies every committed op the journal holds, in order, replying to waiting clients; a reconfiguration is
    /// executed by the replica itself (`reconfiguration`), and may move it into the next epoch.
    fn execute_committed(&mut self) -> Result<(), ReplicaError> {
        while self.execute_target() > self.commit_min {
            let op = self.commit_min + 1;
            let entry = self.journal.entry(op).expect("every op up to the head is stored");
            if let Some(next) = Reconfiguration::decode(&entry.body) {
                self.commit_min = op;
                self.execute_reconfiguration(op, next)?;
                continue;
            }
            let mut reply = self.machine.apply(entry);
            self.commit_min = op;
            if let Some(at_receipt) = self.primary.receipt_reads_by_op.remove(&op) {
                // MUTANT(txn-reads-at-receipt): the client gets the reply made when its request arrived.
                if matches!(reply, Reply::Txn(_)) {
                    reply = at_receipt;
                }
            }
            for waiter in self.primary.waiters.remove(&op).unwrap_or_default() {
                let _ = waiter.send(ClientOutcome::Done(reply.clone()));
            }
        }
        Ok(())
    }

    /// The highest op [`Replica::execute_committed`] may execute now.
    fn execute_target(&self) -> u64 {
        let mut target = self.commit_max.min(self.journal.head().op);
        if let Some(sync) = self.sync {
            // Above the verified prefix the log may still hold divergent entries.
            target = target.min(sync.verified_op);
        } else if self.status != Status::Normal || self.log_view != self.view {
            // The log is not (yet) the current view's: a commit number learned from a newer view says nothing
            // about the entries above this replica's commit point, which may be its own never-committed suffix.
            // (Seen from the outside: a deposed primary adopted a view, was pulled into the next view change
            // before its sync finished, executed its own uncommitted prepares up to the new view's commit number,
            // and could never sync again: `sync source sent an entry off its announced chain`.)
            target = target.min(self.commit_replay);
        }
        target
    }

    fn truncate_log_after(&mut self, op: u64) -> Result<(), ReplicaError> {
        assert!(
            op >= self.commit_min,
            "never truncate executed ops (op {op}, commit {})",
            self.commit_min
        );
        if self.journal.op_max() > op {
            tracing::info!(
                after_op = op,
                op_max = self.journal.op_max(),
                "truncating uncommitted wal suffix"
            );
            self.lower_acked(op)?;
            self.journal.truncate_after(op)?;
        }
        Ok(())
    }

    fn publish_status(&self) {
        let head = self.journal.head();
        let snapshot = StatusSnapshot {
            replica: self.config.replica,
            status: self.status.as_str(),
            epoch: self.epoch,
            members: self.members.ids().collect(),
            view: self.view,
            log_view: self.log_view,
            role: if self.is_primary() && self.status == Status::Normal {
                "primary"
            } else {
                "backup"
            },
            primary: (!self.members.is_empty()).then(|| self.primary_of(self.view)),
            op: head.op,
            commit: self.commit_min,
            head_checksum: hex(head.checksum),
            cluster_id: self.config.cluster,
            wal_fsyncs: self.journal.fsync_count(),
            checkpoint: self.superblock.checkpoint.op,
            wal_base: self.journal.base().op,
            wal_entries: self.journal.len() as u64,
            mutants: self.config.mutants.names(),
            lease: self.lease_status(),
            clock: ClockReading::default(),
        };
        *self.published.lock().expect("status lock is never poisoned") = snapshot;
    }

    fn lease_status(&self) -> Option<LeaseStatus> {
        if !self.config.lease.enabled {
            return None;
        }
        let now = Instant::now();
        let remaining = self.lease_remaining(now);
        Some(LeaseStatus {
            held: remaining.is_some(),
            remaining_ms: remaining.map_or(0, |left| left.as_millis() as u64),
            read_lease_ms: self.config.lease.read_lease_ms(),
            promise_ms: self.config.lease.promise_ms,
            promising: self.promise_holds(now),
            reads_served: self.lease_reads_served,
        })
    }

    /// How long this replica may still serve reads on its lease (`None`: it may not).
    fn lease_remaining(&self, now: Instant) -> Option<Duration> {
        if !self.config.lease.enabled || self.status != Status::Normal || !self.is_primary() {
            return None;
        }
        self.lease.remaining(now, self.commit_min)
    }

    /// Whether this replica is bound by its promise: it neither starts nor joins a view change.
    fn promise_holds(&self, now: Instant) -> bool {
        self.config.lease.enabled && now < self.promise_until
    }

    /// The primary of `view` in this replica's epoch: the members take turns in id order.
    fn primary_of(&self, view: u64) -> u8 {
        self.members.nth(view)
    }

    fn is_primary(&self) -> bool {
        self.members.contains(self.config.replica) && self.primary_of(self.view) == self.config.replica
    }

    /// Replicas needed for a quorum (a majority of the epoch's members).
    fn quorum(&self) -> usize {
        if self.config.mutants.has(Bug::QuorumOfOldConfig) {
            // MUTANT(quorum-of-old-config): the quorum size stays the one of the configuration this process knew
            // before the last reconfiguration it executed (a cached member count the reconfiguration path does not
            // update; a restart reads the configuration again). After 3 -> 4 members, two of four are taken for a
            // quorum, and two disjoint pairs can each commit and elect on their own.
            return self.previous_members.quorum();
        }
        self.members.quorum()
    }

    /// Sends `message` to every other member of the epoch.
    fn broadcast(&self, message: &Message) {
        self.outbound.broadcast_to(self.members, message);
    }

    fn random_timeout(&mut self) -> Duration {
        let base_ms = self.config.view_change_timeout_ms;
        Duration::from_millis(base_ms + self.rng.gen_range(0..base_ms.max(1)))
    }

    fn heartbeat_interval(&self) -> Duration {
        Duration::from_millis(self.config.heartbeat_interval_ms)
    }
}
