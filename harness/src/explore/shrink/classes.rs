//! `faultline campaign --shrink-failures`: one seed of each new failure class of a campaign, shrunk.

use super::ShrinkOptions;
use crate::explore::campaign::Outcome;
use faultline_reports::seeds;
use std::path::Path;
use std::time::{Duration, Instant};

/// Shrinks one seed of each failure class that is new in `outcome`'s campaign (most severe first), each within an
/// equal share of what is left of `budget`; returns each class id with its shrink (or why it was not shrunk).
pub fn new_classes(
    outcome: &Outcome,
    store_root: &Path,
    budget: Duration,
    parallel: usize,
) -> Vec<(String, anyhow::Result<faultline_reports::shrink::ShrinkReport>)> {
    let Some(triage) = &outcome.triage else {
        return Vec::new();
    };
    let new: Vec<_> = triage
        .classes
        .iter()
        .filter(|c| c.status == seeds::FailureClass::New && c.signature.is_some())
        .filter_map(|c| {
            let dir = c.seeds.iter().find_map(|s| s.store_dir.clone())?;
            Some((c.id.clone(), store_root.join(dir)))
        })
        .collect();
    let started = Instant::now();
    let mut shrunk = Vec::new();
    for (i, (class, run_dir)) in new.iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        let share = left / (new.len() - i) as u32;
        eprintln!(
            "faultline campaign: shrinking class {class} ({} of {}) from {} within {} min",
            i + 1,
            new.len(),
            run_dir.display(),
            share.as_secs() / 60
        );
        let result = super::shrink(ShrinkOptions {
            run_dir: run_dir.clone(),
            store_root: store_root.to_path_buf(),
            budget: share,
            max_runs: None,
            baseline: 6,
            tries: 12,
            need: None,
            parallel,
            confirm: 10,
            class: Some(class.clone()),
            quiet: true,
        });
        let interrupted = matches!(&result, Ok(r) if r.stopped.as_deref() == Some("interrupted"));
        shrunk.push((class.clone(), result));
        if interrupted {
            break;
        }
    }
    if let Err(e) = faultline_reports::write_index(store_root) {
        tracing::warn!(error = %e, "could not rewrite the store index after shrinking");
    }
    shrunk
}
