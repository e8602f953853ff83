//! Errors of writing reports: each names the file and what could not be done with it.

use std::path::PathBuf;

/// Why a report or the store index could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or folder could not be read or written.
    #[error("report: cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`read`, `write`, `list`).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The run's history could not be read.
    #[error("report: {0}")]
    History(#[from] faultline_workloads::HistoryError),
    /// `triage-notes.yaml` is not a mapping of class ids to notes.
    #[error("report: cannot use {path}: {message}")]
    Notes {
        /// The notes file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// `results.json` is missing or is not a results document.
    #[error("report: cannot use {path}: {message} (run `faultline analyze {run_dir}` to write it)")]
    Results {
        /// The results.json path.
        path: PathBuf,
        /// The run folder.
        run_dir: String,
        /// What was wrong.
        message: String,
    },
}

impl ReportError {
    /// An I/O error on `path` while doing `action`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ReportError {
        let path = path.into();
        move |source| ReportError::Io { action, path, source }
    }
}
