//! The progress line of a run: elapsed/remaining, ops ok/fail/info, and the active faults. Hidden with `--quiet` and
//! when stderr is not a terminal, so CI logs stay clean. While the bar is drawn, log lines are printed above it
//! (see [`crate::run::logging`]).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar over the fault phase.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `phase_ms`; hidden when `quiet` or stderr is not a TTY.
    pub fn new(quiet: bool, phase_ms: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(phase_ms / 1000), ProgressDrawTarget::stderr());
        if quiet {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        } else {
            crate::run::logging::register_progress_bar(Some(bar.clone()));
        }
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {pos}/{len}s (eta {eta}) {msg}")
                .expect("static progress template")
                .progress_chars("=> "),
        );
        Progress { bar }
    }

    /// Updates position and message.
    pub fn update(&self, elapsed_ms: u64, (ok, fail, info): (u64, u64, u64), faults: &str) {
        self.bar.set_position(elapsed_ms / 1000);
        self.bar
            .set_message(format!("ok {ok} fail {fail} info {info} | {faults}"));
    }

    /// Clears the bar.
    pub fn finish(&self) {
        crate::run::logging::register_progress_bar(None);
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    /// A fault phase that ends early (its task aborted on Ctrl-C) leaves no bar for log lines to wait on.
    fn drop(&mut self) {
        crate::run::logging::register_progress_bar(None);
    }
}
