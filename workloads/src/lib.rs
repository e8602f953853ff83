//! faultline workloads: the one history type, models, history formats and every checker of a run.
//!
//! The checker's entry points are [`load_history_file`] (faultline JSONL, Jepsen EDN, Jepsen log lines, Porcupine's
//! kv logs, all read into one [`History`]) and [`check_history`], whose [`LinearizabilityResult`] goes into
//! `results.json`; [`render_text`] prints it for a person. Log workloads are checked by [`check_log`] (loss,
//! duplication, reordering, stale reads) in linear time instead, set workloads by [`check_set`] (Jepsen's set-full).
//!
//! [`checker`] wraps these, and the checks of a run's lifecycle (boot, liveness, convergence, log patterns), behind
//! one [`Checker`] trait whose results compose into the verdict of `results.json`.

pub mod bank_check;
pub mod behaviour;
pub mod checker;
pub mod counter_check;
pub mod coverage;
pub mod formats;
pub mod history;
pub mod linearizability;
pub mod log_check;
pub mod logmask;
pub mod long_fork_check;
pub mod membership;
pub mod models;
pub mod nodelog;
pub mod position;
pub mod set_check;
pub mod txn_check;
pub mod verdict;

pub use checker::{check_all, CheckInput, CheckResult, Checker, Composed};
pub use formats::{load_history_file, Format, LoadError};
pub use history::{Event, EventKind, History, HistoryError, HistoryWriter, Lifecycle, Meta, Name, Nemesis};
pub use linearizability::{
    check_history, render_text, CheckOptions, Explanation, KeySummary, LinearizabilityResult, LinearizedStep,
    OpSummary, StopReason,
};
pub use log_check::{
    check_log, Anomaly, AnomalyKind, Durability, LogCheckOptions, LogCheckResult, LogCheckStats, OpRef, Severity,
};
pub use models::{Model, ModelKind};
pub use set_check::{
    check_set, check_set_final, check_set_with, SetAnomaly, SetCheckOptions, SetCheckResult, SetCheckStats,
};
pub use verdict::Verdict;
