//! `faultline analyze`: every check again on a stored run (a crashed one too).

use super::{input_or_harness, print_checks, Ended, Failed, Outcome};
use faultline_reports::results::shout;
use std::path::{Path, PathBuf};

/// `faultline analyze` arguments.
#[derive(clap::Args)]
pub struct AnalyzeArgs {
    /// The run's store folder (e.g. store/latest).
    pub dir: PathBuf,
    /// Print the new results.json on stdout at the end (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// `faultline analyze`.
pub(super) fn command(args: AnalyzeArgs) -> Outcome {
    analyze_command(&args.dir)
}

fn analyze_command(dir: &Path) -> Outcome {
    if !dir.join("history.jsonl").is_file() {
        return Err(Failed::bad_input(format!(
            "faultline: cannot analyze {}: not a run folder (it has no history.jsonl)",
            dir.display()
        )));
    }
    match crate::run::analyze::analyze_and_write(dir) {
        Ok(results) => {
            print_checks(&results);
            println!(
                "faultline: {} — {} — {}",
                shout(results.verdict),
                results.reason,
                dir.display()
            );
            Ok(Ended::with(results.verdict.exit_code() as u8, &results))
        }
        Err(e) => Err(Failed {
            code: input_or_harness(&e),
            message: format!("faultline: cannot analyze {}: {e:#}", dir.display()),
        }),
    }
}
