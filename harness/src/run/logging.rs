//! Where `tracing` events go in the `faultline` binary: every warning a crate emits (a fault skipped, a proxy that
//! cannot rebind, a netns teardown that failed) reaches the person at the terminal and the run's own `faultline.log`.
//!
//! - stderr, human format, printed above the progress bar (the bar is suspended while a line is written, so the two
//!   never interleave);
//! - `faultline.log` in the store folder of the run in progress (one run at a time per process: `faultline run`;
//!   campaigns, matrices and shrinks run each run as a child `faultline run`), without colours, with UTC timestamps.
//!
//! The filter is `FAULTLINE_LOG`, else `RUST_LOG` (`tracing_subscriber::EnvFilter` syntax, e.g. `info` or
//! `warn,faultline_faults=debug`); without either, stderr shows warnings and errors and `faultline.log` also keeps
//! `info` (both without the fault filesystem library's expected complaints, see [`STDERR_DEFAULT`]). The embedded
//! reference node (`faultline node ...`) installs its own subscriber instead of this one.

use indicatif::ProgressBar;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The filter variables, in the order they are looked up.
pub const FILTER_VARIABLES: [&str; 2] = ["FAULTLINE_LOG", "RUST_LOG"];

/// What stderr shows without a filter variable. The fault filesystem's library is held to errors, and its reply
/// errors are off: under kill -9 they are expected, not news. A node killed in the middle of a write makes the kernel
/// drop its request, so the reply fails with ENOENT (`Failed to send FUSE reply`); the harness unmounts lazily before
/// the session ends, so the library's own unmount finds nothing (`Unmount failed: Invalid argument`); and the
/// kernel's first `getxattr(security.capability)` gets ENOSYS on purpose, so it stops asking (`[Not Implemented]`).
const STDERR_DEFAULT: &str = "warn,fuser=error,fuser::reply=off";

/// What `faultline.log` keeps without a filter variable (the same fault filesystem noise left out).
const RUN_LOG_DEFAULT: &str = "info,fuser=error,fuser::reply=off";

/// The progress bar being drawn on stderr now, if any: log lines are written while it is suspended.
static PROGRESS_BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// The `faultline.log` of the run in progress, if any.
static RUN_LOG: Mutex<Option<File>> = Mutex::new(None);

/// Installs the global subscriber. Call once, early in `main`; a second call (or another subscriber already set)
/// leaves the first in place.
pub fn install() {
    let (directives, from) = match FILTER_VARIABLES
        .iter()
        .find_map(|name| Some((std::env::var(name).ok().filter(|v| !v.trim().is_empty())?, *name)))
    {
        Some((directives, name)) => (Some(directives), name),
        None => (None, ""),
    };
    let filter = |default: &str| match &directives {
        Some(directives) => EnvFilter::try_new(directives).unwrap_or_else(|e| {
            eprintln!("faultline: {from}={directives:?} is not a log filter ({e}); using {default:?}");
            EnvFilter::new(default)
        }),
        None => EnvFilter::new(default),
    };
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none();
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(AboveProgressBar)
        .with_ansi(colour)
        .without_time()
        .with_filter(filter(STDERR_DEFAULT));
    let run_log = tracing_subscriber::fmt::layer()
        .with_writer(RunLogWriter)
        .with_ansi(false)
        .with_filter(filter(RUN_LOG_DEFAULT));
    let _ = tracing_subscriber::registry().with(stderr).with(run_log).try_init();
}

/// Routes log lines around `bar` until it is unregistered (see [`crate::run::progress::Progress`]).
pub fn register_progress_bar(bar: Option<ProgressBar>) {
    *PROGRESS_BAR.lock().unwrap_or_else(|e| e.into_inner()) = bar;
}

/// The open `faultline.log` of one run: log events go to it until this is dropped.
#[must_use = "the run log closes when this is dropped"]
pub struct RunLog(());

impl RunLog {
    /// Creates `path` (truncating it) and makes it the current run log.
    pub fn open(path: &Path) -> std::io::Result<RunLog> {
        let file = File::create(path)?;
        *RUN_LOG.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
        Ok(RunLog(()))
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        *RUN_LOG.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Writes each formatted event to stderr with the progress bar, if one is drawn, suspended around it.
struct AboveProgressBar;

impl<'a> MakeWriter<'a> for AboveProgressBar {
    type Writer = AboveProgressBar;

    fn make_writer(&'a self) -> Self::Writer {
        AboveProgressBar
    }
}

impl Write for AboveProgressBar {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // A clone, so the lock is not held while the bar redraws.
        let bar = PROGRESS_BAR.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match bar {
            Some(bar) => bar.suspend(|| std::io::stderr().lock().write_all(buf))?,
            None => std::io::stderr().lock().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Writes each formatted event to the current run log; drops it when no run is in progress.
struct RunLogWriter;

impl<'a> MakeWriter<'a> for RunLogWriter {
    type Writer = RunLogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RunLogWriter
    }
}

impl Write for RunLogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(file) = RUN_LOG.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            // A full disk must not turn a warning into a harness error: the line still reached stderr.
            let _ = file.write_all(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex as StdMutex};

    /// Collects formatted lines.
    #[derive(Clone, Default)]
    struct Lines(Arc<StdMutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What the default filter `directives` lets through of the fault filesystem's expected complaints and of a
    /// harness warning.
    fn shown(directives: &str) -> String {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_env_filter(EnvFilter::new(directives))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "fuser::reply", "Failed to send FUSE reply: No such file or directory");
            tracing::warn!(target: "fuser::mnt", "Unmount failed: Invalid argument");
            tracing::warn!(target: "fuser", "[Not Implemented] getxattr");
            tracing::warn!(target: "faultline_faults::network::schedule", "isolate-primary: no primary known");
            tracing::error!(target: "fuser::session", "the session failed");
        });
        let text = lines.0.lock().unwrap().clone();
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn given_the_default_filters_when_the_fault_filesystem_complains_as_expected_should_show_only_real_problems() {
        for directives in [STDERR_DEFAULT, RUN_LOG_DEFAULT] {
            let text = shown(directives);
            assert!(
                text.contains("no primary known"),
                "{directives}: a harness warning is shown: {text}"
            );
            assert!(
                text.contains("the session failed"),
                "{directives}: a fuser error is shown: {text}"
            );
            for noise in ["Failed to send FUSE reply", "Unmount failed", "Not Implemented"] {
                assert!(
                    !text.contains(noise),
                    "{directives}: {noise:?} is expected under faults: {text}"
                );
            }
        }
    }
}
