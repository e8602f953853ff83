//! What a campaign shows while it runs: an indicatif multi-progress view (an overall bar, a line per running test)
//! on a terminal, and one line per finished run otherwise (CI logs), or nothing with `--quiet`.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// The progress view of one campaign.
pub struct View {
    multi: MultiProgress,
    overall: ProgressBar,
    /// Draw bars (stderr is a terminal and not quiet).
    bars: bool,
    /// Print a line per finished run.
    lines: bool,
    /// Budget-bound campaigns measure the overall bar in seconds of the budget, others in runs.
    budget_s: Option<u64>,
}

/// The line of one running test.
pub struct RunLine(ProgressBar);

impl View {
    /// A view of `total` runs (unknown for budget campaigns, then the bar is the `budget_s` seconds).
    pub fn new(quiet: bool, title: &str, total: Option<u64>, budget_s: Option<u64>) -> View {
        let bars = !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
        let multi = MultiProgress::with_draw_target(if bars {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let (len, template) = match (total, budget_s) {
            (Some(total), _) => (
                total,
                "{spinner} {prefix} [{bar:30}] {pos}/{len} runs · {elapsed_precise} · {msg}",
            ),
            (None, Some(budget)) => (budget, "{spinner} {prefix} [{bar:30}] {pos}/{len}s of budget · {msg}"),
            (None, None) => (0, "{spinner} {prefix} {elapsed_precise} · {msg}"),
        };
        let overall = multi.add(ProgressBar::new(len));
        overall.set_style(
            ProgressStyle::with_template(template)
                .expect("static progress template")
                .progress_chars("=> "),
        );
        overall.set_prefix(title.to_string());
        overall.enable_steady_tick(Duration::from_millis(250));
        View {
            multi,
            overall,
            bars,
            lines: !quiet,
            budget_s: if total.is_none() { budget_s } else { None },
        }
    }

    /// A line for a test that just started, expected to take about `expected_s`.
    pub fn start(&self, label: &str, expected_s: u64) -> RunLine {
        let bar = self.multi.add(ProgressBar::new(expected_s.max(1)));
        bar.set_style(
            ProgressStyle::with_template("  {prefix:48} [{bar:20}] {elapsed}")
                .expect("static progress template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        RunLine(bar)
    }

    /// Moves every running line and the overall bar on; `counts` goes in the overall message.
    pub fn tick(&self, running: &[&RunLine], elapsed_s: u64, counts: &str) {
        for line in running {
            line.0.set_position(line.0.elapsed().as_secs());
        }
        if self.budget_s.is_some() {
            self.overall.set_position(elapsed_s);
        }
        self.overall.set_message(counts.to_string());
    }

    /// A run finished: its line goes, one message line stays; `counted` moves a run-counting overall bar.
    pub fn finish(&self, line: RunLine, message: &str, counted: bool) {
        line.0.finish_and_clear();
        self.multi.remove(&line.0);
        if counted && self.budget_s.is_none() {
            self.overall.inc(1);
        }
        self.say(message);
    }

    /// A message above the bars (or on stderr without them).
    pub fn say(&self, message: &str) {
        if self.bars {
            let _ = self.multi.println(message);
        } else if self.lines {
            eprintln!("{message}");
        }
    }

    /// Clears the view.
    pub fn close(&self) {
        self.overall.finish_and_clear();
        let _ = self.multi.clear();
    }
}
