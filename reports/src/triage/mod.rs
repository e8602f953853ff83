//! Triage: one bug, one failure class, across seeds and nights.
//!
//! A nightly campaign that reports "5 new failure classes" when three bugs failed seven seeds teaches a team to skim
//! the page. So a failure class is not "this plan's first failing check and its first error line", but what
//! identifies the bug:
//!
//! 1. [`finding`]: each failing check of a run yields findings, each with a [`Signature`]: the system, the check,
//!    the kind of anomaly (lost, stale, refused on a clean disk, a log pattern, ...) and a key line where the kind
//!    alone does not identify the bug: the node's refusal line, a panic's `file.rs:LINE` and message, the matched log
//!    line, each masked by [`mask`] (numbers, hashes, offsets, paths, node names, durations, timestamps). A run
//!    contributes to every class it shows, not only its first check's.
//! 2. The seed database records each row's findings; [`classes`] groups every row's findings by class across seeds
//!    and campaigns (nights): severity, the seeds that show it with their repro commands, first and last campaign,
//!    how often reruns showed it again, and `new` / `known` / `gone`. A person's notes (`triage-notes.yaml`, see
//!    [`notes`]) are shown beside their class.
//! 3. [`folds`]: within a run, a finding that follows from another (a liveness failure from refusals that left no
//!    quorum, a convergence failure from a lost write) carries its cause, is shown under it, and is no class of its
//!    own: nightly classes are keyed by causes.
//! 4. Severity orders everything: a refusal to boot on a clean disk, lost or corrupted acknowledged data, not
//!    linearizable or stale reads, no recovery, no convergence, log patterns, then the rest ([`Severity`]). A run's
//!    headline is its most severe check ([`headline_check`]).
//!
//! `faultline triage STORE [--json]` and the end of `faultline campaign` print [`text::render_text`] (or the
//! [`Triage`] as JSON); the store index shows the same classes in its campaign view.

pub mod classes;
pub mod finding;
pub mod folds;
pub use faultline_workloads::logmask as mask;
pub mod notes;
pub mod text;

pub use classes::{triage, Class, ClassKey, ClassSeed, Reruns, Seen, Triage};
pub use finding::{
    check_findings, check_severity, findings, harness_finding, headline_check, Finding, FindingKind, Severity,
    Signature,
};
pub use notes::{read_notes, Notes, NOTES_FILE};
pub use text::render_text;
