//! `faultline shrink`: a failing run to the smallest scripted plan that still fails the same way.

use super::{parse_millis, Ended, Failed, Outcome};
use faultline_faults::units::Millis;
use std::path::{Path, PathBuf};

/// `faultline shrink` arguments.
#[derive(clap::Args)]
pub struct ShrinkArgs {
    /// The failing run's folder (e.g. store/default/<time>-seed<N>).
    pub run_dir: PathBuf,
    /// Wall-clock budget, confirmation runs included, e.g. 30m.
    #[arg(long, default_value = "30m", value_parser = parse_millis)]
    pub budget: Millis,
    /// Budget in runs: no try starts that would leave fewer than --confirm runs of it (default: none, the wall
    /// clock's --budget alone).
    #[arg(long, value_name = "N")]
    pub max_runs: Option<u32>,
    /// Runs of the original run's replay that measure its failure rate first (and of each candidate that tries
    /// to raise the shrunk plan's rate).
    #[arg(long, default_value_t = 8)]
    pub baseline: u32,
    /// The most runs a candidate gets: it still fails when so many of its tries fail the same way that its rate is
    /// not significantly below the original's (a sequential test that stops once the answer is settled).
    #[arg(long, default_value_t = 12)]
    pub tries: u32,
    /// Failing tries a candidate needs of --tries, instead of the test derived from the original's rate.
    #[arg(long)]
    pub need: Option<u32>,
    /// Runs at once (the tries of a candidate run in parallel).
    #[arg(long, default_value_t = 1)]
    pub parallel: usize,
    /// Fresh runs of the shrunk plan that measure how often it reproduces.
    #[arg(long, default_value_t = 10)]
    pub confirm: u32,
    /// Store for the candidates' runs (default: the run's own store).
    #[arg(long)]
    pub store: Option<PathBuf>,
    /// Keep failing with this failure class (its id, e.g. c3fa81c02, as `faultline triage` shows it) instead of
    /// the run's most severe finding.
    #[arg(long)]
    pub class: Option<String>,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
    /// Print shrink.json on stdout at the end (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// `faultline shrink`.
pub(super) fn command(args: ShrinkArgs) -> Outcome {
    let ShrinkArgs {
        run_dir,
        budget,
        max_runs,
        baseline,
        tries,
        need,
        parallel,
        confirm,
        store,
        class,
        quiet,
        json: _,
    } = args;
    shrink_command(crate::explore::shrink::ShrinkOptions {
        class,
        store_root: store.unwrap_or_else(|| {
            run_dir
                .parent()
                .and_then(Path::parent)
                .map_or_else(|| PathBuf::from("store"), Path::to_path_buf)
        }),
        run_dir,
        budget: budget.duration(),
        max_runs,
        baseline: baseline.max(1),
        tries: tries.max(1),
        need,
        parallel: parallel.max(1),
        confirm,
        quiet,
    })
}

fn shrink_command(options: crate::explore::shrink::ShrinkOptions) -> Outcome {
    if let Some(need) = options.need.filter(|need| !(1..=options.tries).contains(need)) {
        return Err(Failed::bad_input(format!(
            "faultline shrink: --need {need} is not between 1 and --tries {}: a candidate runs at most {} times",
            options.tries, options.tries
        )));
    }
    match crate::explore::shrink::shrink(options) {
        Ok(report) => {
            let dir = Path::new(&report.source).join("shrink");
            println!("faultline shrink: {}", report.summary());
            for fault in &report.shrunk {
                println!("  {fault}");
            }
            println!("  plan: {}", dir.join("shrunk.yaml").display());
            println!("  steps: {}", dir.join("shrink.html").display());
            let code = match report.stopped.as_deref() {
                Some("interrupted") => 130,
                // The replay did not fail in its tries: nothing was decided about the failure, as for an unknown
                // verdict (exit 2); the harness did its work.
                Some("no-replay") => 2,
                _ => 0,
            };
            Ok(Ended::with(code, &report))
        }
        Err(e) if e.is::<crate::explore::shrink::BadInput>() => {
            Err(Failed::bad_input(format!("faultline shrink: {e:#}")))
        }
        Err(e) => Err(Failed::harness(format!("faultline shrink: {e:#}"))),
    }
}
