//! `faultline triage`: the failure classes of a store's campaign, new ones first.

use super::{Ended, Failed, Outcome};
use std::path::{Path, PathBuf};

/// `faultline triage` arguments.
#[derive(clap::Args)]
pub struct TriageArgs {
    /// The store (the folder that holds seeds.jsonl).
    #[arg(default_value = "store")]
    pub store: PathBuf,
    /// As of this campaign instead of the latest.
    #[arg(long)]
    pub campaign: Option<String>,
    /// Print the classes as one JSON object on stdout (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// `faultline triage`.
pub(super) fn command(args: TriageArgs) -> Outcome {
    triage_command(&args.store, args.campaign.as_deref())
}

/// `faultline triage`: the class table (stdout, or stderr with `--json`), exit 1 when a class is new.
fn triage_command(store: &Path, campaign: Option<&str>) -> Outcome {
    use faultline_reports::seeds::{read_seeds, FailureClass, SEEDS_FILE};
    use faultline_reports::triage;
    if !store.join(SEEDS_FILE).is_file() {
        return Err(Failed::bad_input(format!(
            "faultline triage: {} has no {SEEDS_FILE}: not a store a campaign has recorded seeds in (run `faultline \
             campaign PLAN... --store {}` first)",
            store.display(),
            store.display()
        )));
    }
    let file = read_seeds(store).map_err(|e| Failed::harness(format!("faultline triage: {e}")))?;
    if !file.bad_lines.is_empty() {
        eprintln!(
            "faultline triage: skipped {} line(s) of {SEEDS_FILE} that are not seed rows (first: line {}: {})",
            file.bad_lines.len(),
            file.bad_lines[0].0,
            file.bad_lines[0].1
        );
    }
    let notes = triage::read_notes(store).map_err(|e| match e {
        faultline_reports::ReportError::Notes { .. } => Failed::bad_input(format!("faultline triage: {e}")),
        e => Failed::harness(format!("faultline triage: {e}")),
    })?;
    let Some(classes) = triage::triage(&file.rows, campaign, &notes) else {
        return Err(Failed::bad_input(match campaign {
            Some(id) => format!("faultline triage: {SEEDS_FILE} has no campaign `{id}`"),
            None => format!("faultline triage: {SEEDS_FILE} has no seed rows yet"),
        }));
    };
    print!("{}", triage::render_text(&classes));
    let code = u8::from(classes.count(FailureClass::New) > 0);
    Ok(Ended::with(code, &classes))
}
