//! `faultline certify`: a fixed matrix of plans, node counts and seeds that must be fully valid.

use super::campaign::campaign_error;
use super::{Ended, Outcome};
use faultline_reports::results::shout;
use std::path::PathBuf;

/// `faultline certify` arguments.
#[derive(clap::Args)]
pub struct CertifyArgs {
    /// The suite file (YAML): name, plans, seeds or seed_count, nodes, time_limit.
    #[arg(long)]
    pub suite: PathBuf,
    /// Concurrent runs (default: half the cores, at least 1).
    #[arg(long)]
    pub parallel: Option<usize>,
    /// The system's git revision, recorded with every cell.
    #[arg(long)]
    pub git_rev: Option<String>,
    /// Store folder.
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// No progress view.
    #[arg(long)]
    pub quiet: bool,
    /// Print the certification (certification.json) on stdout at the end (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// `faultline certify`.
pub(super) fn command(args: CertifyArgs) -> Outcome {
    certify_command(crate::explore::certify::CertifyOptions {
        suite: args.suite,
        store_root: args.store,
        parallel: args.parallel.unwrap_or_else(crate::explore::campaign::default_parallel),
        git_rev: args.git_rev,
        quiet: args.quiet,
    })
}

fn certify_command(options: crate::explore::certify::CertifyOptions) -> Outcome {
    let outcome = crate::explore::certify::certify(&options).map_err(|e| campaign_error("certify", e))?;
    let cert = &outcome.certification;
    for cell in &cert.cells {
        let verdict = cell.verdict.map_or("NOT RUN", shout);
        println!(
            "  {verdict:<8} {:<28} {:>2} nodes  seed {:<10}  {}",
            cell.plan, cell.nodes, cell.seed, cell.reason
        );
    }
    let (valid, invalid, unknown, not_run) = cert.counts();
    println!(
        "faultline certify: {} — {} cells: {valid} valid, {invalid} invalid, {unknown} unknown, {not_run} not \
         run — {}",
        if cert.certified { "CERTIFIED" } else { "NOT CERTIFIED" },
        cert.cells.len(),
        outcome.dir.join("certification.html").display()
    );
    let summary = WithDir {
        inner: cert,
        dir: outcome.dir.display().to_string(),
    };
    Ok(Ended::with(outcome.exit_code(), &summary))
}

/// A result document with the folder it was written to (`certify --json`).
#[derive(serde::Serialize)]
struct WithDir<'a, T> {
    #[serde(flatten)]
    inner: &'a T,
    dir: String,
}
