//! Mutants: documented, switchable real bugs (off by default) that faultline must find from the outside.
//!
//! `faultline-node run --bug NAME` (repeatable) turns one on. Each bug is a small deviation from the correct code
//! path, marked in the source with `// MUTANT(name): ...` (grep for `MUTANT(`); nodes/README.md ("Mutants") says
//! which real bug each one models, which faults should expose it and how faultline detects it.

use std::fmt;

use clap::ValueEnum;

/// One switchable bug. The clap value names (kebab-case) are the names used everywhere: CLI, logs, `/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum Bug {
    /// A repair backfill below the head rewrites the head checksum (the next prepare's parent).
    RepairRewindsParent,
    /// PrepareOk (and the primary's own ack) before the WAL entry is durable; fsync deferred to a timer.
    AckBeforeFsync,
    /// The WAL is never fsynced.
    NoFsync,
    /// The primary commits after its own write only.
    CommitWithoutQuorum,
    /// Backups answer reads from their local state instead of 421.
    StaleBackupReads,
    /// The view change picks the log with the highest op, ignoring log_view.
    ViewChangeMaxOp,
    /// Boot loads corrupt entries instead of refusing.
    BootSkipsVerification,
    /// A checkpoint is not fsynced before the superblock points to it and the WAL prefix it covers is dropped.
    CheckpointWithoutFsync,
    /// Boot drops up to three intact (possibly committed and applied) entries at the WAL's tail as if they were torn.
    TruncateOnBoot,
    /// A replica whose WAL ends below what it acknowledged rejoins and votes as if it still held those entries.
    RejoinAfterLostTail,
    /// The primary answers a transaction's reads from the state it had applied when the request arrived, while the
    /// transaction's writes go through the log.
    TxnReadsAtReceipt,
    /// The primary's read lease lasts the backups' whole promise: no margin for clock drift or jumps, so only a clock
    /// fault (a primary clock slowed or bumped back, a backup's sped up or bumped forward) lets a deposed primary
    /// serve a stale read.
    LeaseIgnoresDrift,
    /// The acknowledged mark covers what a replica acknowledged, not the view's log it adopted: a crash between the
    /// adoption and the next ack, then a cut of its WAL, boots a shorter log of that view as a whole one.
    MarkIgnoresAdoptedLog,
    /// After a reconfiguration, the quorum is still sized by the configuration before it (a cached member count):
    /// after 3 -> 4 members, two replicas are taken for a quorum.
    QuorumOfOldConfig,
}

impl Bug {
    /// Every bug, in declaration order.
    pub const ALL: [Bug; 14] = [
        Bug::RepairRewindsParent,
        Bug::AckBeforeFsync,
        Bug::NoFsync,
        Bug::CommitWithoutQuorum,
        Bug::StaleBackupReads,
        Bug::ViewChangeMaxOp,
        Bug::BootSkipsVerification,
        Bug::CheckpointWithoutFsync,
        Bug::TruncateOnBoot,
        Bug::RejoinAfterLostTail,
        Bug::TxnReadsAtReceipt,
        Bug::LeaseIgnoresDrift,
        Bug::MarkIgnoresAdoptedLog,
        Bug::QuorumOfOldConfig,
    ];

    /// The name used on the command line and in logs.
    pub fn name(self) -> &'static str {
        match self {
            Bug::RepairRewindsParent => "repair-rewinds-parent",
            Bug::AckBeforeFsync => "ack-before-fsync",
            Bug::NoFsync => "no-fsync",
            Bug::CommitWithoutQuorum => "commit-without-quorum",
            Bug::StaleBackupReads => "stale-backup-reads",
            Bug::ViewChangeMaxOp => "view-change-max-op",
            Bug::BootSkipsVerification => "boot-skips-verification",
            Bug::CheckpointWithoutFsync => "checkpoint-without-fsync",
            Bug::TruncateOnBoot => "truncate-on-boot",
            Bug::RejoinAfterLostTail => "rejoin-after-lost-tail",
            Bug::TxnReadsAtReceipt => "txn-reads-at-receipt",
            Bug::LeaseIgnoresDrift => "lease-ignores-drift",
            Bug::MarkIgnoresAdoptedLog => "mark-ignores-adopted-log",
            Bug::QuorumOfOldConfig => "quorum-of-old-config",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The set of active bugs of one replica (empty: the correct node).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mutants {
    bits: u16,
}

impl Mutants {
    /// No bug active.
    pub const NONE: Mutants = Mutants { bits: 0 };

    /// The set holding `bugs`.
    pub fn from_bugs(bugs: &[Bug]) -> Mutants {
        Mutants {
            bits: bugs.iter().fold(0, |bits, bug| bits | bug.bit()),
        }
    }

    /// Whether `bug` is active.
    pub fn has(self, bug: Bug) -> bool {
        self.bits & bug.bit() != 0
    }

    /// Whether no bug is active.
    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The names of the active bugs, in declaration order.
    pub fn names(self) -> Vec<&'static str> {
        Bug::ALL
            .iter()
            .filter(|bug| self.has(**bug))
            .map(|bug| bug.name())
            .collect()
    }
}

impl fmt::Display for Mutants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&self.names().join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_every_bug_when_named_should_match_its_command_line_value() {
        for bug in Bug::ALL {
            let value = bug.to_possible_value().expect("no bug is hidden");
            assert_eq!(value.get_name(), bug.name());
        }
        assert_eq!(Bug::value_variants().len(), Bug::ALL.len());
    }

    #[test]
    fn given_a_set_of_bugs_when_queried_should_hold_exactly_those() {
        let mutants = Mutants::from_bugs(&[Bug::NoFsync, Bug::ViewChangeMaxOp, Bug::NoFsync]);
        let held: Vec<Bug> = Bug::ALL.into_iter().filter(|bug| mutants.has(*bug)).collect();
        assert_eq!(held, vec![Bug::NoFsync, Bug::ViewChangeMaxOp]);
        assert_eq!(mutants.to_string(), "no-fsync, view-change-max-op");
        assert!(Mutants::NONE.is_empty() && Mutants::NONE.to_string() == "none");
    }
}
