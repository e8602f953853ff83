//! `faultline shrink RUN_DIR`: from a failing run to the smallest scripted plan that still fails the same way.
//!
//! Real processes are not deterministic, and the failures that matter most reproduce one time in four, so "still
//! fails" is a rate, measured. A try counts as failing when it fails with the **same failure class** as the original
//! run (its most severe finding's signature, the class the seed database and `faultline triage` use); a try that
//! fails some other way does not count: shrinking must not wander from one bug to another.
//!
//! The original plan's replay runs `--baseline` times first: its rate. Every candidate is then tested against that
//! rate with a curtailed binomial test ([`rate`]): it runs at most `--tries` times and still fails when enough of its
//! tries fail that its rate is not significantly below the original's; the test stops as soon as the answer is
//! settled either way. A candidate is always compared with the original, never with the last one kept, so a
//! 1-in-4 failure shrinks to a plan that fails about 1 in 4, not to one that fails 1 in 20 after a dozen lucky steps.
//! `--need` instead sets one count of `--tries` for every candidate.
//!
//! The search (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", 2002):
//! 1. the exact replay of every recorded fault ([`crate::explore::replay`]) runs `--baseline` times: its rate; when
//!    no try failed the same way there is nothing to shrink;
//! 2. when the run showed the failure inside its fault phase, the faults after that first evidence are dropped in one
//!    step; the fault phase is cut to just after the last fault (runs get shorter for every step after);
//! 3. ddmin over the faults: remove chunks of the list (complements first, since the failure usually needs few
//!    faults), halving the chunk size when no chunk can go;
//! 4. each fault still anchored to an observation becomes a timed fault at the offset where the failing tries
//!    applied it, when that still fails (an anchor whose observation no kept fault causes fires at its `otherwise`
//!    every time; the plan should say so);
//! 5. each remaining fault's duration is halved while that still fails;
//! 6. the workload is made smaller (clients, rate, keys), each halving kept when it still fails;
//! 7. the result's rate is raised without adding faults ([`raise`]): each timed fault anchored to the log line it
//!    followed in the failing tries, kept when the plan then fails more often;
//! 8. the result is run `confirm` more times, fresh, for its reproduction rate (`shrunk.yaml`'s header states it,
//!    the original's and the one before raising).
//!
//! Every candidate is a child `faultline run` (as in campaigns: the run's own lifecycle, parent-death signals, its
//! own folder in the store under `<plan>-shrink`). A try is stopped with Ctrl-C (an interrupted run in the store,
//! analysed as usual) once it can no longer change anything: when the other tries decided its candidate, and when
//! its history already holds settled evidence of the target, a refusal to boot on a clean disk that nothing later
//! in the run can explain away ([`crate::run::analyze::settled_findings`]). A failing Iggy try spends most of its time
//! after that evidence, waiting out recovery and convergence bounds a cluster without a quorum cannot meet. The
//! search stops when the budget would be overrun by the next candidate (keeping the time the confirmation needs),
//! and on Ctrl-C, keeping the best plan found so far.
//! It writes, in `RUN_DIR/shrink/`: `shrunk.yaml` (a scripted plan a person can read and edit), `shrink.json` and
//! `shrink.html` (every step: the faults kept, each try and its result).

use crate::explore::campaign::schedule::install_stop_signals;
use crate::explore::replay;
use crate::plan::Plan;
use faultline_reports::results::Results;
use faultline_reports::shrink::ShrinkReport;
use faultline_reports::triage::{check_findings, findings, Signature};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod classes;
mod raise;
pub mod rate;
mod search;
mod stages;
mod tries;

pub use classes::new_classes;
use search::{Candidate, Search};

/// What to shrink and how hard.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The failing run's folder.
    pub run_dir: PathBuf,
    /// Where the candidates' runs go.
    pub store_root: PathBuf,
    /// Wall-clock budget of the search (the confirmation runs are inside it too).
    pub budget: Duration,
    /// Budget in runs (every try of every step, the confirmation's kept), if any.
    pub max_runs: Option<u32>,
    /// Runs of the original's replay that measure its rate (and of each candidate that tries to raise the rate).
    pub baseline: u32,
    /// The most runs a candidate gets (the rule derived from the original's rate may need fewer).
    pub tries: u32,
    /// Failing tries a candidate needs of `tries`, instead of the rule derived from the original's rate.
    pub need: Option<u32>,
    /// Runs at once (tries of one candidate run in parallel).
    pub parallel: usize,
    /// Fresh runs of the result that measure its reproduction rate.
    pub confirm: u32,
    /// Keep failing with this class (its id, `c...`) instead of the run's most severe finding.
    pub class: Option<String>,
    /// No progress bar.
    pub quiet: bool,
}

/// What is wrong with the run a shrink was given (not a run, passed, no faults, unknown class): exit 254.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// The run's plan, its recorded faults, the class to keep failing with and when the run first showed it (from the
/// start of the fault phase, if inside it), or why it cannot be shrunk.
fn prepare(options: &ShrinkOptions) -> Result<(Plan, replay::Recorded, Signature, Option<u64>), BadInput> {
    let run_dir = options.run_dir.display();
    let (base, recorded) = replay::load(&options.run_dir).map_err(|e| BadInput(format!("{e:#}")))?;
    let bytes = std::fs::read(options.run_dir.join("results.json")).map_err(|e| {
        BadInput(format!(
            "{run_dir}: no results.json ({e}); run `faultline analyze {run_dir}` first"
        ))
    })?;
    let results: Results = serde_json::from_slice(&bytes).map_err(|e| {
        BadInput(format!(
            "{run_dir}/results.json does not parse ({e}); run `faultline analyze {run_dir}`"
        ))
    })?;
    let found = findings(&results);
    if found.is_empty() {
        return Err(BadInput(format!(
            "{run_dir} passed every check: there is no failure to shrink"
        )));
    }
    let target = match &options.class {
        None => found[0].signature.clone(),
        Some(id) => found
            .iter()
            .map(|f| &f.signature)
            .find(|s| &s.id() == id)
            .cloned()
            .ok_or_else(|| {
                let ids: Vec<String> = found
                    .iter()
                    .map(|f| format!("{} ({})", f.signature.id(), f.signature.title()))
                    .collect();
                BadInput(format!(
                    "class {id} is not among the findings of {run_dir}: {}",
                    ids.join("; ")
                ))
            })?,
    };
    if recorded.faults.is_empty() {
        return Err(BadInput(format!(
            "{run_dir} applied no fault in its fault phase: there is nothing to shrink (its plan fails without faults)"
        )));
    }
    let evidence_ms = evidence_in_phase(&results, &target, &recorded);
    Ok((base, recorded, target, evidence_ms))
}

/// When the check that found `target` saw its first evidence, from the start of the fault phase, if inside it.
fn evidence_in_phase(results: &Results, target: &Signature, recorded: &replay::Recorded) -> Option<u64> {
    results
        .checks
        .iter()
        .find(|check| {
            check_findings(&results.system, check)
                .iter()
                .any(|f| &f.signature == target)
        })
        .and_then(|check| check.evidence_ns)
        .map(|ns| ns.saturating_sub(recorded.phase_start_ns) / 1_000_000)
        .filter(|&ms| ms > 0 && ms < recorded.phase_ms)
}

/// Shrinks the failing run `options.run_dir`; returns the report (also written to its `shrink/` folder). A run that
/// cannot be shrunk is a [`BadInput`] error; a replay that does not fail is a report that says so (`stopped:
/// no-replay`), an outcome like an unknown verdict.
pub fn shrink(options: ShrinkOptions) -> anyhow::Result<ShrinkReport> {
    let (base, recorded, target, evidence_ms) = prepare(&options)?;
    let shrink_dir = options.run_dir.join("shrink");
    std::fs::create_dir_all(shrink_dir.join("candidates"))?;
    install_stop_signals();
    let bar = if options.quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        ProgressBar::hidden()
    } else {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}").expect("static template"));
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    };
    let best = Candidate {
        faults: recorded.faults.clone(),
        phase_ms: base.time_limit.0,
        concurrency: base.workload.concurrency.0,
        rate: base.workload.rate.0,
        keys: base.workload.keys.0,
        shift_ms: 0,
    };
    let mut search = Search {
        original_faults: recorded.faults.len(),
        options,
        base,
        seed: recorded.seed,
        target,
        shrink_dir,
        started: Instant::now(),
        steps: Vec::new(),
        best,
        run_wall_ms: Vec::new(),
        bar,
        stopped: None,
        evidence_ms,
        original_rate: None,
        rule: None,
        before_raise: None,
        runs_started: 0,
    };
    search.say(&format!(
        "shrinking {} ({} faults) while it fails with {} [{}]",
        search.options.run_dir.display(),
        search.original_faults,
        search.target.title(),
        search.target.id()
    ));
    let report = search.run();
    search.bar.finish_and_clear();
    report
}

#[cfg(test)]
mod tests;
