//! `faultline report`: a stored run's report.html (and the store's index) rendered again.

use super::{input_or_harness, Ended, Failed, Outcome};
use std::path::{Path, PathBuf};

/// `faultline report` arguments.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// The run's store folder (e.g. store/latest).
    pub dir: PathBuf,
}

/// `faultline report`.
pub(super) fn command(args: ReportArgs) -> Outcome {
    report_command(&args.dir)
}

fn report_command(dir: &Path) -> Outcome {
    if !dir.is_dir() {
        return Err(Failed::bad_input(format!(
            "faultline report: {} is not a run folder",
            dir.display()
        )));
    }
    match faultline_reports::write_report(dir) {
        Ok(path) => {
            let store_root = dir
                .canonicalize()
                .ok()
                .and_then(|d| Some(d.parent()?.parent()?.to_path_buf()));
            if let Some(root) = store_root {
                if let Err(e) = faultline_reports::write_index(&root) {
                    eprintln!("faultline report: index not updated: {e}");
                }
            }
            println!("{}", path.display());
            Ok(Ended::ok())
        }
        Err(e) => {
            let message = format!("faultline report: {e}");
            Err(Failed {
                code: input_or_harness(&anyhow::Error::from(e)),
                message,
            })
        }
    }
}
