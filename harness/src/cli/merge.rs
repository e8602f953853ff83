//! `faultline merge`: stores (e.g. a campaign's shards) into one.

use super::{input_or_harness, Ended, Failed, Outcome};
use std::path::{Path, PathBuf};

/// `faultline merge` arguments.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// Stores to merge in.
    #[arg(required = true)]
    pub stores: Vec<PathBuf>,
    /// The store to merge into (created if needed).
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
}

/// `faultline merge`.
pub(super) fn command(args: MergeArgs) -> Outcome {
    merge_command(&args.store, &args.stores)
}

fn merge_command(into: &Path, stores: &[PathBuf]) -> Outcome {
    if let Some(missing) = stores.iter().find(|store| !store.is_dir()) {
        return Err(Failed::bad_input(format!(
            "faultline merge: no store at {}",
            missing.display()
        )));
    }
    let report = crate::explore::merge::merge(into, stores).map_err(|e| Failed {
        code: input_or_harness(&e),
        message: format!("faultline merge: {e:#}"),
    })?;
    println!(
        "faultline merge: {} run(s) copied, {} already present, {} seed row(s) — {}",
        report.runs_copied,
        report.runs_present,
        report.rows,
        report.index.display()
    );
    Ok(Ended::ok())
}
