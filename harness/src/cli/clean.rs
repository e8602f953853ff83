//! `faultline clean`: what dead runs left behind, removed.

use super::{Ended, Failed, Outcome};

/// `faultline clean` arguments.
#[derive(clap::Args)]
pub struct CleanArgs {
    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
}

/// `faultline clean`.
pub(super) fn command(args: CleanArgs) -> Outcome {
    clean_command(args.dry_run)
}

fn clean_command(dry_run: bool) -> Outcome {
    let leftovers = crate::run::cleanup::sweep(dry_run);
    if leftovers.is_empty() {
        println!("faultline clean: nothing left by dead runs");
    } else {
        print!("{}", leftovers.describe(dry_run));
    }
    if leftovers.errors.is_empty() {
        Ok(Ended::ok())
    } else {
        Err(Failed::harness(format!(
            "faultline clean: {} thing(s) could not be removed",
            leftovers.errors.len()
        )))
    }
}
