//! The search: its state, the order of its stages, how one candidate is tested and how the report is written.

use super::rate::{self, Rule};
use super::tries::RunWall;
use super::ShrinkOptions;
use crate::explore::replay::{self, RecordedFault};
use crate::plan::Plan;
use faultline_reports::shrink::{ShrinkReport, Step};
use faultline_reports::triage::Signature;
use indicatif::ProgressBar;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A candidate: a list of faults and the knobs the search turns.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) faults: Vec<RecordedFault>,
    pub(super) phase_ms: u64,
    pub(super) concurrency: u64,
    pub(super) rate: f64,
    pub(super) keys: u64,
    /// How much earlier than recorded everything happens (the workload's quiet windows move with the faults).
    pub(super) shift_ms: u64,
}

/// A workload change: makes a candidate smaller and says how, or `None` when it cannot get smaller.
pub(super) type Knob = fn(&mut Candidate) -> Option<String>;

/// Why a search stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Budget,
    Interrupted,
}

pub(super) struct Search {
    pub(super) options: ShrinkOptions,
    pub(super) base: Plan,
    pub(super) seed: u64,
    pub(super) target: Signature,
    pub(super) shrink_dir: PathBuf,
    pub(super) started: Instant,
    pub(super) steps: Vec<Step>,
    pub(super) best: Candidate,
    /// Every finished try (its wall time, phase and whether it reproduced the failure).
    pub(super) run_wall_ms: Vec<RunWall>,
    pub(super) bar: ProgressBar,
    pub(super) stopped: Option<Stop>,
    pub(super) original_faults: usize,
    /// When the source run first showed the failure, from the start of its fault phase, if inside the phase.
    pub(super) evidence_ms: Option<u64>,
    /// How often the original plan's replay failed the same way (failed, runs), once measured.
    pub(super) original_rate: Option<(u32, u32)>,
    /// The test every candidate takes, derived from the original's rate (none with `--need`).
    pub(super) rule: Option<Rule>,
    /// The shrunk plan's rate before [`Search::raise_rate`] tried to raise it, when it did.
    pub(super) before_raise: Option<(u32, u32)>,
    /// Runs started so far (every try of every step).
    pub(super) runs_started: u32,
}

impl Search {
    pub(super) fn run(&mut self) -> anyhow::Result<ShrinkReport> {
        let replay = self.best.clone();
        let change = format!(
            "replay of all {} recorded faults, {} times: the original's rate",
            replay.faults.len(),
            self.options.baseline
        );
        let (failed, runs) = self.measure("rate", change, &replay, self.options.baseline, false)?;
        if failed == 0 {
            let no_replay = runs > 0 && self.stopped.is_none();
            if no_replay {
                // An outcome, not an error: the report says so (`stopped: no-replay`) and the command exits 2.
                self.say(&format!(
                    "the exact replay of {} did not fail with {} in {runs} tries, so there is no failing plan to \
                     shrink (the failure depends on timing the replay did not meet); try more --baseline tries. \
                     Steps: {}",
                    self.options.run_dir.display(),
                    self.target.id(),
                    self.shrink_dir.join("shrink.html").display()
                ));
            }
            return self.finish(0, 0, no_replay);
        }
        self.original_rate = Some((failed, runs));
        self.write_best()?;
        if self.options.need.is_none() {
            let rule = rate::rule(failed, runs, self.options.tries);
            self.say(&format!(
                "the original failed the same way in {failed} of {runs} replays: a candidate {}",
                rule.describe()
            ));
            self.rule = Some(rule);
        }
        self.drop_after_evidence()?;
        self.shorten_phase()?;
        self.ddmin()?;
        self.start_earlier()?;
        self.unanchor()?;
        self.shorten_phase()?;
        self.halve_durations()?;
        self.shrink_workload()?;
        self.shorten_phase()?;
        self.raise_rate()?;
        let (reproduced, runs) = if self.stopped == Some(Stop::Interrupted) {
            (0, 0)
        } else {
            self.confirm()?
        };
        self.finish(reproduced, runs, false)
    }

    /// Runs `candidate` up to `tries` times; `Some(true)` when a try failed the same way (it becomes the best),
    /// `Some(false)` when none did, `None` when the budget or a Ctrl-C stopped it first.
    pub(super) fn test(&mut self, stage: &str, change: String, candidate: &Candidate) -> anyhow::Result<Option<bool>> {
        if self.stopped.is_some() {
            return Ok(None);
        }
        let (max_tries, need) = self.tries_and_need();
        let (number, plan_file) = self.write_step_plan(candidate)?;
        let label = format!(
            "step {number} ({stage}: {change}) · best so far: {} faults, {} phase",
            self.best.faults.len(),
            replay::seconds(self.best.phase_ms)
        );
        let (tries, stopped_once_decided) =
            self.run_plan(&plan_file, candidate, max_tries, Some(need), true, &label)?;
        let reproduced = tries.iter().filter(|t| t.reproduced).count() as u32;
        let failed = reproduced >= need;
        let complete = !tries.is_empty() && (failed || tries.len() as u32 - reproduced > max_tries - need);
        let outcome = if failed {
            "still fails"
        } else if tries.is_empty() {
            "not run: the search stopped first"
        } else if !complete {
            "passed the tries it had before the search stopped"
        } else {
            "passes"
        };
        let counts = if tries.is_empty() {
            String::new()
        } else {
            format!(
                " ({reproduced} of {} tr{} failed{}{}{})",
                tries.len(),
                if tries.len() == 1 { "y" } else { "ies" },
                if need > 1 {
                    format!(", {need} needed")
                } else {
                    String::new()
                },
                if stopped_once_decided > 0 {
                    format!("; {stopped_once_decided} more stopped once decided")
                } else {
                    String::new()
                },
                match tries.iter().filter(|t| t.stopped_at_evidence).count() {
                    0 => String::new(),
                    n => format!("; {n} stopped at the evidence"),
                }
            )
        };
        self.say(&format!("step {number} {stage}: {change} — {outcome}{counts}"));
        self.steps.push(Step {
            number,
            stage: stage.to_string(),
            change,
            faults: candidate.faults.len(),
            phase_ms: candidate.phase_ms,
            plan: plan_file,
            tries,
            failed,
            need,
            cut_short: !failed && !complete,
            stopped_once_decided,
        });
        if failed {
            self.best = candidate.clone();
            self.write_best()?;
        }
        Ok(if failed {
            Some(true)
        } else if complete {
            Some(false)
        } else {
            None
        })
    }

    /// Writes `candidate` as the next step's plan; returns the step's number and its plan file (relative to the
    /// shrink folder).
    pub(super) fn write_step_plan(&self, candidate: &Candidate) -> anyhow::Result<(usize, String)> {
        let number = self.steps.len() + 1;
        let plan_file = format!("candidates/{number:03}.yaml");
        self.write_plan(
            candidate,
            &self.shrink_dir.join(&plan_file),
            &format!("shrink step {number}"),
        )?;
        Ok((number, plan_file))
    }

    /// The step that made the best plan the best (the last that failed), if any did.
    pub(super) fn best_step(&self) -> Option<&Step> {
        self.steps.iter().rev().find(|step| step.failed)
    }

    /// A candidate's most tries and the failing tries it needs: `--tries` and `--need` when given, else the rule
    /// derived from the original's rate ([`rate::rule`]).
    pub(super) fn tries_and_need(&self) -> (u32, u32) {
        match (self.options.need, self.rule) {
            (Some(need), _) => (self.options.tries, need.clamp(1, self.options.tries)),
            (None, Some(rule)) => (rule.tries, rule.need),
            (None, None) => (self.options.tries, 1),
        }
    }

    pub(super) fn finish(&mut self, reproduced: u32, runs: u32, no_replay: bool) -> anyhow::Result<ShrinkReport> {
        let shrunk = self.shrink_dir.join("shrunk.yaml");
        if runs > 0 {
            if let Ok(text) = std::fs::read_to_string(&shrunk) {
                let mut header = format!("# it failed the same way in {reproduced} of {runs} fresh runs\n");
                if let Some((failed, runs)) = self.before_raise {
                    header.push_str(&format!(
                        "# before its faults were anchored to the lines they followed: {failed} of {runs}\n"
                    ));
                }
                if let Some((failed, runs)) = self.original_rate {
                    header.push_str(&format!("# the original run's replay: {failed} of {runs}\n"));
                }
                std::fs::write(&shrunk, header + &text)?;
            }
        }
        let rate = |(failed, runs): (u32, u32)| faultline_reports::shrink::Rate { failed, runs };
        let report = ShrinkReport {
            source: self.options.run_dir.display().to_string(),
            class: self.target.id(),
            class_title: self.target.title(),
            original_faults: self.original_faults,
            shrunk_faults: self.best.faults.len(),
            shrunk: self.best.faults.iter().map(ToString::to_string).collect(),
            phase_ms: self.best.phase_ms,
            steps: self.steps.clone(),
            original_rate: self.original_rate.map(rate),
            rule: self.rule,
            before_raise: self.before_raise.map(rate),
            reproduced,
            confirm_runs: runs,
            stopped: match (no_replay, self.stopped) {
                (true, _) => Some("no-replay".to_string()),
                (false, Some(Stop::Budget)) => Some("budget".to_string()),
                (false, Some(Stop::Interrupted)) => Some("interrupted".to_string()),
                (false, None) => None,
            },
            wall_s: self.started.elapsed().as_secs(),
            store_href: store_href(&self.options.run_dir, &self.options.store_root),
        };
        faultline_reports::write_atomic(
            &self.shrink_dir.join("shrink.json"),
            serde_json::to_string_pretty(&report)?.as_bytes(),
        )?;
        faultline_reports::write_atomic(
            &self.shrink_dir.join("shrink.html"),
            faultline_reports::shrink::render(&report).as_bytes(),
        )?;
        // The run's report and its store's index link the shrink.
        if let Err(e) = faultline_reports::write_report(&self.options.run_dir) {
            tracing::warn!(error = %e, "could not re-render the run's report with the shrink link");
        }
        if let Some(store) = self.options.run_dir.parent().and_then(Path::parent) {
            if let Err(e) = faultline_reports::write_index(store) {
                tracing::warn!(error = %e, "could not rewrite the store index with the shrink link");
            }
        }
        Ok(report)
    }

    pub(super) fn say(&self, line: &str) {
        self.bar.suspend(|| eprintln!("faultline shrink: {line}"));
    }
}

/// How links from `RUN_DIR/shrink/shrink.html` reach the candidates' store: `../../../` when it is the run's own
/// store (`STORE/<plan>/<run>/shrink/`), else its absolute path.
pub(super) fn store_href(run_dir: &Path, store_root: &Path) -> String {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let run_store = run_dir.parent().and_then(Path::parent).map(canonical);
    let store = canonical(store_root);
    if run_store.as_deref() == Some(store.as_path()) {
        "../../../".to_string()
    } else {
        format!("file://{}/", store.display())
    }
}
