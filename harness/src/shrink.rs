//! `faultline shrink RUN_DIR`: from a failing run to the smallest scripted plan that still fails the same way.
//!
//! Real processes are not deterministic, so "still fails" is a measurement: a candidate plan runs up to `tries`
//! times and counts as failing when any try fails with the **same failure class** as the original run (its most
//! severe finding's signature, the class the seed database and `faultline triage` use). A candidate that fails some
//! other way does not count: shrinking must not wander from one bug to another.
//!
//! Removing faults asks "is it needed at all?", so one failing try is enough while the best plan so far fails only
//! now and then; once it failed in most of its own tries, dropping a fault must keep that (a majority too), or the
//! search drifts to a smaller plan that rarely fails ([`needed_failures`]). The refinements after it (a shorter
//! phase, shorter faults, a smaller workload) trade the odds of failing for size: kept on one failing try each, they
//! compound (measured: a view-change-max-op shrink whose tries failed about half the time all along ended at 7 of
//! 10). So a refinement counts as failing only when a majority of its tries fail (2 of 3): the plan a person gets
//! fails about as often as the one before it. `need` sets one count for every stage (for a failure that shows in
//! few runs, where one failing try of a smaller schedule says little).
//!
//! The search (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", 2002):
//! 1. the exact replay of every recorded fault ([`crate::replay`]) must fail, else there is nothing to shrink;
//! 2. when the run showed the failure inside its fault phase, the faults after that first evidence are dropped in one
//!    step; the fault phase is cut to just after the last fault (runs get shorter for every step after);
//! 3. ddmin over the faults: remove chunks of the list (complements first, since the failure usually needs few
//!    faults), halving the chunk size when no chunk can go;
//! 4. each fault still anchored to an observation becomes a timed fault at the offset where the failing tries
//!    applied it, when that still fails (an anchor whose observation no kept fault causes fires at its `otherwise`
//!    every time; the plan should say so);
//! 5. each remaining fault's duration is halved while that still fails;
//! 6. the workload is made smaller (clients, rate, keys), each halving kept when it still fails;
//! 7. the result is run `confirm` more times, fresh, for its reproduction rate.
//!
//! Every candidate is a child `faultline run` (as in campaigns: the run's own lifecycle, parent-death signals, its
//! own folder in the store under `<plan>-shrink`). A try is stopped with Ctrl-C (an interrupted run in the store,
//! analysed as usual) once it can no longer change anything: when the other tries decided its candidate, and when
//! its history already holds settled evidence of the target, a refusal to boot on a clean disk that nothing later
//! in the run can explain away ([`crate::analyze::settled_findings`]). A failing Iggy try spends most of its time
//! after that evidence, waiting out recovery and convergence bounds a cluster without a quorum cannot meet. The
//! search stops when the budget would be overrun by the next candidate (keeping the time the confirmation needs),
//! and on Ctrl-C, keeping the best plan found so far.
//! It writes, in `RUN_DIR/shrink/`: `shrunk.yaml` (a scripted plan a person can read and edit), `shrink.json` and
//! `shrink.html` (every step: the faults kept, each try and its result).

use crate::campaign::child::{self, RunRequest};
use crate::campaign::schedule::{install_stop_signals, stop_signals};
use crate::plan::Plan;
use crate::replay::{self, RecordedFault};
use faultline_reports::results::Results;
use faultline_reports::shrink::{ShrinkReport, Step, Try};
use faultline_reports::triage::{check_findings, findings, FindingKind, Signature};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Before a candidate has run once, a run is expected to take its fault phase plus this.
const RUN_OVERHEAD_MS: u64 = 20_000;
/// How long after its last fault a shrunk phase runs on (the failure may show a little after the fault).
const PHASE_TAIL_MS: u64 = 3000;
/// How early in the phase a shrunk schedule may start (the cluster has some traffic behind it by then).
const EARLIEST_FAULT_MS: u64 = 3000;
/// How often a try in flight is looked at for settled evidence of the target.
const EVIDENCE_POLL: Duration = Duration::from_secs(2);
/// How long a try stopped with Ctrl-C gets to tear down and analyse before it is killed.
const STOPPED_RUN_GRACE: Duration = Duration::from_secs(60);
/// A fault shorter than this is not halved further.
const MIN_DURATION_MS: u64 = 200;

/// What to shrink and how hard.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The failing run's folder.
    pub run_dir: PathBuf,
    /// Where the candidates' runs go.
    pub store_root: PathBuf,
    /// Wall-clock budget of the search (the confirmation runs are inside it too).
    pub budget: Duration,
    /// Runs per candidate before it counts as passing.
    pub tries: u32,
    /// Failing tries a candidate needs at every stage (default: [`needed_failures`]); at most `tries`.
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

/// A candidate: a list of faults and the knobs the search turns.
#[derive(Debug, Clone)]
struct Candidate {
    faults: Vec<RecordedFault>,
    phase_ms: u64,
    concurrency: u64,
    rate: f64,
    keys: u64,
    /// How much earlier than recorded everything happens (the workload's quiet windows move with the faults).
    shift_ms: u64,
}

/// A workload change: makes a candidate smaller and says how, or `None` when it cannot get smaller.
type Knob = fn(&mut Candidate) -> Option<String>;

/// A finished try: its wall time, the fault phase it ran, and whether it reproduced the failure.
#[derive(Debug, Clone, Copy)]
struct RunWall {
    wall_ms: u64,
    phase_ms: u64,
    reproduced: bool,
    /// Stopped at the evidence: shorter than a run to its end.
    stopped_at_evidence: bool,
}

/// Why a try in flight was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// Its candidate was decided by the other tries.
    Decided,
    /// Its history already held settled evidence of the target.
    AtEvidence,
}

/// A try in flight.
struct InFlight {
    child: std::process::Child,
    log: PathBuf,
    started: Instant,
    /// Why and when it was stopped.
    stopped: Option<(Stopped, Instant)>,
    /// Its run's store folder, once its lock names it.
    store_dir: Option<PathBuf>,
    /// When its history was last looked at.
    polled: Instant,
}

impl InFlight {
    /// Ctrl-C to its process group: the run stops its nodes, tears down its lab and analyses what it recorded.
    fn interrupt(&self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
    }

    fn stop(&mut self, why: Stopped) {
        self.interrupt();
        self.stopped = Some((why, Instant::now()));
    }
}

/// Whether a try can show `target` before it ends: the kinds [`crate::analyze::settled_findings`] gives.
fn settles_early(target: &Signature) -> bool {
    target.kind == FindingKind::RefusedCleanDisk
}

/// Why a search stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Budget,
    Interrupted,
}

struct Search {
    options: ShrinkOptions,
    base: Plan,
    seed: u64,
    target: Signature,
    shrink_dir: PathBuf,
    started: Instant,
    steps: Vec<Step>,
    best: Candidate,
    /// Every finished try (its wall time, phase and whether it reproduced the failure).
    run_wall_ms: Vec<RunWall>,
    bar: ProgressBar,
    stopped: Option<Stop>,
    original_faults: usize,
    /// When the source run first showed the failure, from the start of its fault phase, if inside the phase.
    evidence_ms: Option<u64>,
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
/// cannot be shrunk is a [`BadInput`] error.
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

impl Search {
    fn run(&mut self) -> anyhow::Result<ShrinkReport> {
        let replay = self.best.clone();
        let reproduces = self.test(
            "replay",
            format!("replay of all {} recorded faults", replay.faults.len()),
            &replay,
        )?;
        if reproduces != Some(true) {
            let no_replay = reproduces == Some(false);
            let report = self.finish(0, 0, no_replay)?;
            if no_replay {
                anyhow::bail!(
                    "the exact replay of {} did not fail with {} in {} tries, so there is no failing plan to shrink \
                     (the failure depends on timing the replay did not meet); try more --tries. Steps: {}",
                    self.options.run_dir.display(),
                    self.target.id(),
                    self.options.tries,
                    self.shrink_dir.join("shrink.html").display()
                );
            }
            return Ok(report);
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
        let (reproduced, runs) = if self.stopped == Some(Stop::Interrupted) {
            (0, 0)
        } else {
            self.confirm()?
        };
        self.finish(reproduced, runs, false)
    }

    /// Runs `candidate` up to `tries` times; `Some(true)` when a try failed the same way (it becomes the best),
    /// `Some(false)` when none did, `None` when the budget or a Ctrl-C stopped it first.
    fn test(&mut self, stage: &str, change: String, candidate: &Candidate) -> anyhow::Result<Option<bool>> {
        if self.stopped.is_some() {
            return Ok(None);
        }
        let need = self
            .options
            .need
            .unwrap_or_else(|| needed_failures(stage, self.options.tries, self.best_tries()))
            .clamp(1, self.options.tries);
        let number = self.steps.len() + 1;
        let plan_file = format!("candidates/{number:03}.yaml");
        self.write_plan(
            candidate,
            &self.shrink_dir.join(&plan_file),
            &format!("shrink step {number}"),
        )?;
        let label = format!(
            "step {number} ({stage}: {change}) · best so far: {} faults, {} phase",
            self.best.faults.len(),
            replay::seconds(self.best.phase_ms)
        );
        let (tries, stopped_once_decided) =
            self.run_plan(&plan_file, candidate, self.options.tries, Some(need), &label)?;
        let reproduced = tries.iter().filter(|t| t.reproduced).count() as u32;
        let failed = reproduced >= need;
        let complete = !tries.is_empty() && (failed || tries.len() as u32 - reproduced > self.options.tries - need);
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

    /// The step that made the best plan the best (the last that failed), if any did.
    fn best_step(&self) -> Option<&Step> {
        self.steps.iter().rev().find(|step| step.failed)
    }

    /// The best plan's own tries: how many failed the same way, and how many ran (the step that made it the best).
    fn best_tries(&self) -> (u32, u32) {
        self.best_step().map_or((0, 0), |step| {
            let reproduced = step.tries.iter().filter(|t| t.reproduced).count() as u32;
            (reproduced, step.tries.len() as u32)
        })
    }

    /// Moves every fault earlier, so the first starts [`EARLIEST_FAULT_MS`] into the phase, and the phase as much
    /// shorter (a failure that needs a few faults rarely needs the half minute of traffic before them).
    fn start_earlier(&mut self) -> anyhow::Result<()> {
        let Some(first) = self.best.faults.iter().map(|f| f.start_ms).min() else {
            return Ok(());
        };
        let shift = first.saturating_sub(EARLIEST_FAULT_MS);
        if shift < 2000 {
            return Ok(());
        }
        let mut candidate = self.best.clone();
        for fault in &mut candidate.faults {
            fault.start_ms -= shift;
            if let Some(anchor) = &mut fault.anchor {
                anchor.observed_ms = anchor.observed_ms.saturating_sub(shift);
            }
        }
        candidate.phase_ms = candidate.phase_ms.saturating_sub(shift).max(5000);
        candidate.shift_ms += shift;
        let change = format!("every fault {} earlier", replay::seconds(shift));
        self.test("phase", change, &candidate)?;
        Ok(())
    }

    /// Drops, in one step, every fault that started after the source run first showed the failure inside its fault
    /// phase (a refusal to boot, a stale read): what came after the evidence did not cause it. One try instead of
    /// the ddmin steps that would find the same, a few faults at a time.
    fn drop_after_evidence(&mut self) -> anyhow::Result<()> {
        let Some(evidence_ms) = self.evidence_ms else {
            return Ok(());
        };
        let mut candidate = self.best.clone();
        candidate.faults.retain(|f| f.start_ms < evidence_ms);
        let dropped = self.best.faults.len() - candidate.faults.len();
        if dropped == 0 || candidate.faults.is_empty() {
            return Ok(());
        }
        let change = format!(
            "without the {dropped} fault(s) that started after the first evidence at {}",
            replay::seconds(evidence_ms)
        );
        self.test("faults", change, &candidate)?;
        Ok(())
    }

    /// Cuts the phase to just after the last fault.
    fn shorten_phase(&mut self) -> anyhow::Result<()> {
        let last_end = self
            .best
            .faults
            .iter()
            // An anchored fault may come as late as its `otherwise`, when the observation does not come.
            .map(|f| replay::latest_start_ms(f) + f.duration_ms)
            .max()
            .unwrap_or(0);
        let phase_ms = (last_end + PHASE_TAIL_MS).max(5000);
        if phase_ms + 1000 < self.best.phase_ms {
            let mut candidate = self.best.clone();
            candidate.phase_ms = phase_ms;
            let change = format!(
                "fault phase {} -> {}",
                replay::seconds(self.best.phase_ms),
                replay::seconds(phase_ms)
            );
            self.test("phase", change, &candidate)?;
        }
        Ok(())
    }

    /// ddmin over the fault list ([`ddmin`]); then, with one fault left, whether the failure needs any.
    fn ddmin(&mut self) -> anyhow::Result<()> {
        let faults = self.best.faults.clone();
        ddmin(faults.len(), |kept, removed| {
            let mut candidate = self.best.clone();
            candidate.faults = kept.iter().map(|&i| faults[i].clone()).collect();
            let change = match removed {
                [one] => format!("without {}", faults[*one]),
                more => format!("without {} faults ({} left)", more.len(), kept.len()),
            };
            self.test("faults", change, &candidate)
        })?;
        if self.best.faults.len() == 1 {
            let mut candidate = self.best.clone();
            candidate.faults.clear();
            self.test("faults", "without any fault".to_string(), &candidate)?;
        }
        Ok(())
    }

    /// Turns each anchored fault into a timed one, at the offset where the best plan's failing tries applied it
    /// (their median), and keeps that when it still fails (a majority, as for every refinement). An anchor can
    /// outlive its reason: once ddmin dropped the kill of n3, "kill the primary 810 ms after n3 restarts" fires at
    /// its trigger's `otherwise` in every try, and the plan should say what happens ("kill primary at 4.3s"), not
    /// wait for a restart that no fault causes any more. An anchor that matters (a kill when a node starts
    /// repairing) stays: its timed version fails less often and is rejected.
    fn unanchor(&mut self) -> anyhow::Result<()> {
        let anchored: Vec<RecordedFault> = self
            .best
            .faults
            .iter()
            .filter(|f| f.anchor.is_some())
            .cloned()
            .collect();
        for fault in anchored {
            if self.stopped.is_some() {
                return Ok(());
            }
            let Some(index) = self.best.faults.iter().position(|f| *f == fault) else {
                continue;
            };
            let Some(at_ms) = self.applied_at(index) else {
                continue;
            };
            let mut candidate = self.best.clone();
            candidate.faults[index].anchor = None;
            candidate.faults[index].start_ms = at_ms;
            candidate.faults.sort_by_key(|f| f.start_ms);
            let change = format!("{fault}: timed, at {}", replay::seconds(at_ms));
            self.test("anchors", change, &candidate)?;
        }
        Ok(())
    }

    /// When the best plan's failing tries applied its fault `index` ([`applied_offset`] over their histories).
    fn applied_at(&self, index: usize) -> Option<u64> {
        let step = self.best_step()?;
        let recordings: Vec<Vec<RecordedFault>> = step
            .tries
            .iter()
            .filter(|t| t.reproduced)
            .filter_map(|t| {
                let (_, recorded) = replay::load(&self.options.store_root.join(t.run.as_deref()?)).ok()?;
                Some(recorded.faults)
            })
            .collect();
        applied_offset(&self.best.faults, index, &recordings)
    }

    fn halve_durations(&mut self) -> anyhow::Result<()> {
        for index in 0..self.best.faults.len() {
            loop {
                let Some(fault) = self.best.faults.get(index) else {
                    return Ok(());
                };
                let halved = fault.duration_ms / 2;
                if halved < MIN_DURATION_MS || self.stopped.is_some() {
                    break;
                }
                let change = format!("{} for {}", fault, replay::seconds(halved));
                let mut candidate = self.best.clone();
                candidate.faults[index].duration_ms = halved;
                if self.test("durations", change, &candidate)? != Some(true) {
                    break;
                }
            }
        }
        Ok(())
    }

    fn shrink_workload(&mut self) -> anyhow::Result<()> {
        let knobs: [Knob; 3] = [
            |c| {
                (c.concurrency > 1).then(|| {
                    c.concurrency = (c.concurrency / 2).max(1);
                    format!("{} client{}", c.concurrency, if c.concurrency == 1 { "" } else { "s" })
                })
            },
            |c| {
                (c.rate > 10.0).then(|| {
                    c.rate = (c.rate / 2.0).round();
                    format!("{} ops/s", c.rate)
                })
            },
            |c| {
                (c.keys > 1).then(|| {
                    c.keys = (c.keys / 2).max(1);
                    format!("{} keys", c.keys)
                })
            },
        ];
        for knob in knobs {
            loop {
                let mut candidate = self.best.clone();
                let Some(change) = knob(&mut candidate) else {
                    break;
                };
                if self.test("workload", change, &candidate)? != Some(true) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Runs the best plan `confirm` times, fresh; returns (reproductions, runs done).
    fn confirm(&mut self) -> anyhow::Result<(u32, u32)> {
        let plan_file = "shrunk.yaml".to_string();
        let best = self.best.clone();
        let label = format!("confirming the shrunk plan ({} faults)", best.faults.len());
        // The confirmation may use what the budget kept for it, and never stops at the first failure.
        let reserved = self.stopped;
        self.stopped = None;
        let (tries, _) = self.run_plan(&plan_file, &best, self.options.confirm, None, &label)?;
        let reproduced = tries.iter().filter(|t| t.reproduced).count() as u32;
        let runs = tries.len() as u32;
        self.say(&format!(
            "confirmation: the shrunk plan failed with {} in {reproduced} of {runs} fresh runs",
            self.target.id()
        ));
        self.steps.push(Step {
            number: self.steps.len() + 1,
            stage: "confirm".into(),
            change: format!("{runs} fresh runs of shrunk.yaml"),
            faults: best.faults.len(),
            phase_ms: best.phase_ms,
            plan: plan_file,
            tries,
            failed: reproduced > 0,
            need: 1,
            cut_short: false,
            stopped_once_decided: 0,
        });
        if self.stopped.is_none() {
            self.stopped = reserved;
        }
        Ok((reproduced, runs))
    }

    /// Runs `plan_file` (relative to the shrink folder) up to `tries` times, `parallel` at once; with `need`, no new
    /// try starts once `need` reproduced or once that many no longer can (the confirmation runs every try). A try
    /// that shows settled evidence of the target ([`crate::analyze::settled_findings`]) is stopped there.
    fn run_plan(
        &mut self,
        plan_file: &str,
        candidate: &Candidate,
        tries: u32,
        need: Option<u32>,
        label: &str,
    ) -> anyhow::Result<(Vec<Try>, u32)> {
        // The confirmation runs in the time the budget kept for it.
        let confirming = need.is_none();
        let request = RunRequest {
            plan_arg: self.shrink_dir.join(plan_file).display().to_string(),
            seed: self.seed,
            time_limit: None,
            nodes: None,
        };
        let mut done: Vec<Try> = Vec::new();
        let mut running: Vec<InFlight> = Vec::new();
        let mut superfluous = 0u32;
        let mut started = 0u32;
        let logs = self.shrink_dir.join("logs");
        std::fs::create_dir_all(&logs)?;
        let mut interrupted_at: Option<Instant> = None;
        let runs_dir = crate::runlock::runs_dir();
        let watch = settles_early(&self.target);
        loop {
            let reproduced = done.iter().filter(|t| t.reproduced).count() as u32;
            let passed = done.len() as u32 - reproduced;
            let decided = need.is_some_and(|need| reproduced >= need || tries - passed < need);
            // Once decided, the tries still in flight can change nothing: stop them (Ctrl-C, so each run cleans up
            // and stays in the store marked interrupted) instead of waiting them out. With two tries in parallel,
            // the slot the first frees starts a third that the second then makes useless, and the step would wait
            // for it: ~45 s for a passing Iggy try, ~115 s for a failing one.
            if decided && self.stopped != Some(Stop::Interrupted) {
                for run in running.iter_mut().filter(|run| run.stopped.is_none()) {
                    run.stop(Stopped::Decided);
                }
            }
            // A try whose history already holds the target's settled evidence has reproduced: the rest of it (for
            // a refusal to boot, mostly waiting out the recovery and convergence bounds it cannot meet, ~70 s of a
            // failing Iggy try's ~115 s) cannot take that back. It is stopped with Ctrl-C, so its run is analysed as
            // usual and its results name the same finding.
            if watch {
                for run in running.iter_mut().filter(|run| run.stopped.is_none()) {
                    if run.polled.elapsed() < EVIDENCE_POLL {
                        continue;
                    }
                    run.polled = Instant::now();
                    if run.store_dir.is_none() {
                        run.store_dir = crate::runlock::store_dir_of(&runs_dir, run.child.id());
                    }
                    let settled = run
                        .store_dir
                        .as_deref()
                        .and_then(|dir| crate::analyze::settled_findings(dir).ok());
                    if settled.is_some_and(|found| found.iter().any(|f| f.signature == self.target)) {
                        run.stop(Stopped::AtEvidence);
                    }
                }
            }
            let may_start =
                self.stopped.is_none() && started < tries && running.len() < self.options.parallel.max(1) && !decided;
            if may_start {
                if !confirming && !self.fits_budget(candidate) {
                    self.stopped = Some(Stop::Budget);
                } else {
                    started += 1;
                    let log = logs.join(format!("{}-{started}.log", plan_file.replace(['/', '.'], "-")));
                    let child = child::spawn(&request, &self.options.store_root, &log)?;
                    running.push(InFlight {
                        child,
                        log,
                        started: Instant::now(),
                        stopped: None,
                        store_dir: None,
                        polled: Instant::now(),
                    });
                    continue;
                }
            }
            if running.is_empty() {
                break;
            }
            if stop_signals() > 0 && self.stopped != Some(Stop::Interrupted) {
                self.stopped = Some(Stop::Interrupted);
                interrupted_at = Some(Instant::now());
                self.say("interrupted: stopping the runs in flight; the best plan so far is kept");
                for run in &running {
                    run.interrupt();
                }
            }
            if interrupted_at.is_some_and(|at| at.elapsed() > STOPPED_RUN_GRACE) || stop_signals() > 1 {
                for run in &mut running {
                    let _ = run.child.kill();
                }
            }
            for run in &mut running {
                if run.stopped.is_some_and(|(_, at)| at.elapsed() > STOPPED_RUN_GRACE) {
                    let _ = run.child.kill();
                }
            }
            let mut i = 0;
            while i < running.len() {
                match running[i].child.try_wait()? {
                    None => i += 1,
                    Some(status) => {
                        let run = running.swap_remove(i);
                        if matches!(run.stopped, Some((Stopped::Decided, _))) {
                            // Its result says nothing about the candidate, and its time nothing about a run's.
                            superfluous += 1;
                            continue;
                        }
                        let wall_ms = run.started.elapsed().as_millis() as u64;
                        let result = child::result_of(status, &run.log, &self.options.store_root, wall_ms);
                        let target = self.target.id();
                        let reproduced = result.findings.iter().any(|f| f.signature.id() == target);
                        if self.stopped != Some(Stop::Interrupted) {
                            self.run_wall_ms.push(RunWall {
                                wall_ms,
                                phase_ms: candidate.phase_ms,
                                reproduced,
                                stopped_at_evidence: matches!(run.stopped, Some((Stopped::AtEvidence, _))),
                            });
                        }
                        done.push(Try {
                            run: result.store_dir,
                            verdict: result.verdict,
                            reproduced,
                            finding: result.findings.first().map(|f| f.signature.title()),
                            wall_ms,
                            stopped_at_evidence: matches!(run.stopped, Some((Stopped::AtEvidence, _))),
                        });
                    }
                }
            }
            let reproduced = done.iter().filter(|t| t.reproduced).count();
            self.bar.set_message(format!(
                "{label} · try {started}/{tries}{}",
                match (reproduced, need) {
                    (0, _) => String::new(),
                    (n, Some(need)) if need > 1 => format!(" · reproduced {n} of the {need} needed"),
                    (n, _) => format!(" · reproduced {n}"),
                }
            ));
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok((done, superfluous))
    }

    /// Whether one more run of `candidate` ends within the budget, keeping time for the confirmation.
    fn fits_budget(&self, candidate: &Candidate) -> bool {
        let expected_ms = self.expected_run_ms(candidate);
        // The confirmation reruns a plan that fails: its runs take as long as the failing tries did (a failure often
        // waits out a final-phase timeout, ~100 s where a passing run takes ~40 s), not as long as the average try.
        // It runs in rounds of `parallel`, each as long as its slowest run: the slowest failing try, not their mean
        // (measured: an Iggy shrink whose failing tries took 57-118 s reserved 7.5 minutes for 10 runs at
        // `--parallel 2`, they took 10, and the 45-minute shrink ran 46).
        let reserve_ms = if self.steps.is_empty() {
            0
        } else {
            let parallel = self.options.parallel.max(1) as u64;
            let rounds = u64::from(self.options.confirm).div_ceil(parallel);
            self.slowest_failing_run_ms(candidate).max(expected_ms) * rounds
        };
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        elapsed_ms + expected_ms + reserve_ms <= self.options.budget.as_millis() as u64
    }

    /// The expected wall time of one run of `candidate`, from the tries so far; before any, its phase plus overhead.
    fn expected_run_ms(&self, candidate: &Candidate) -> u64 {
        expected_wall_ms(&self.walls(false), candidate.phase_ms)
    }

    /// The wall time of a run of `candidate` as slow as the slowest failing try so far.
    fn slowest_failing_run_ms(&self, candidate: &Candidate) -> u64 {
        slowest_wall_ms(&self.walls(true), candidate.phase_ms)
    }

    /// The tries' (wall, phase) so far: with `failing`, the failing ones (as the confirmation will run them, stopped
    /// at the evidence where it settles early); else the ones that ran to their end (a try stopped at the evidence
    /// says little of how long a passing one takes), or every try while none did.
    fn walls(&self, failing: bool) -> Vec<(u64, u64)> {
        let of = |keep: &dyn Fn(&RunWall) -> bool| -> Vec<(u64, u64)> {
            self.run_wall_ms
                .iter()
                .filter(|run| keep(run))
                .map(|run| (run.wall_ms, run.phase_ms))
                .collect()
        };
        if failing {
            return of(&|run| run.reproduced);
        }
        let to_the_end = of(&|run| !run.stopped_at_evidence);
        if to_the_end.is_empty() {
            of(&|_| true)
        } else {
            to_the_end
        }
    }

    /// The candidate as a plan.
    fn plan_of(&self, candidate: &Candidate, origin: &str) -> Plan {
        let mut plan = replay::scripted_plan(&self.base, &candidate.faults, self.seed, origin.to_string());
        plan.name.0 = format!("{}-shrink", self.base.name.0.trim_end_matches("-shrink"));
        plan.time_limit.0 = candidate.phase_ms;
        plan.workload.concurrency.0 = candidate.concurrency;
        plan.workload.rate.0 = candidate.rate;
        plan.workload.keys.0 = candidate.keys;
        let shift = candidate.shift_ms;
        plan.workload
            .quiet
            .retain(|quiet| quiet.at.0 + quiet.duration.0 > shift);
        for quiet in &mut plan.workload.quiet {
            let end = quiet.at.0 + quiet.duration.0 - shift;
            quiet.at.0 = quiet.at.0.saturating_sub(shift);
            quiet.duration.0 = end - quiet.at.0;
        }
        plan
    }

    fn write_plan(&self, candidate: &Candidate, path: &Path, what: &str) -> anyhow::Result<()> {
        let origin = format!("{what} of {}", self.options.run_dir.display());
        let plan = self.plan_of(candidate, &origin);
        let mut text = String::new();
        text.push_str(&format!(
            "# {what}: {} fault(s) of {} recorded in {}, failing with {} [{}]\n",
            candidate.faults.len(),
            self.original_faults,
            self.options.run_dir.display(),
            self.target.title(),
            self.target.id()
        ));
        for fault in &candidate.faults {
            text.push_str(&format!("#   {fault}\n"));
        }
        text.push_str(&plan.to_yaml());
        // What the run will load must parse and validate: a candidate the harness rejects is a harness bug.
        Plan::parse(&text, &path.display().to_string())
            .map_err(|e| anyhow::anyhow!("a shrink candidate is not a valid plan: {e}"))?;
        std::fs::write(path, text)?;
        Ok(())
    }

    fn write_best(&self) -> anyhow::Result<()> {
        self.write_plan(&self.best, &self.shrink_dir.join("shrunk.yaml"), "shrunk plan")
    }

    fn finish(&mut self, reproduced: u32, runs: u32, no_replay: bool) -> anyhow::Result<ShrinkReport> {
        let shrunk = self.shrink_dir.join("shrunk.yaml");
        if runs > 0 {
            if let Ok(text) = std::fs::read_to_string(&shrunk) {
                let rate = format!("# it failed the same way in {reproduced} of {runs} fresh runs\n");
                std::fs::write(&shrunk, rate + &text)?;
            }
        }
        let report = ShrinkReport {
            source: self.options.run_dir.display().to_string(),
            class: self.target.id(),
            class_title: self.target.title(),
            original_faults: self.original_faults,
            shrunk_faults: self.best.faults.len(),
            shrunk: self.best.faults.iter().map(ToString::to_string).collect(),
            phase_ms: self.best.phase_ms,
            steps: self.steps.clone(),
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

    fn say(&self, line: &str) {
        self.bar.suspend(|| eprintln!("faultline shrink: {line}"));
    }
}

/// How many of `tries` tries of a `stage` candidate must fail the same way. A refinement (shorter phase, durations,
/// workload) needs a majority: it must not make the failure much rarer. Dropping faults needs one failing try while
/// the best plan so far fails only now and then, so a failure that shows in few runs still shrinks; but once the best
/// plan failed in most of its own tries (`best`: its tries that reproduced, and that ran; two failures at least),
/// a majority too. Otherwise ddmin drifts: each step keeps a candidate that failed once in three, and the end is a
/// plan that fails rarely (measured: an Iggy refusal whose 9-fault plan failed 2 of 2 shrank to 7 faults that failed
/// 1 of 10). It costs no time: a passing candidate is decided once a majority can no longer fail, one round of
/// `--parallel 2` at `--tries 3` instead of two.
fn needed_failures(stage: &str, tries: u32, best: (u32, u32)) -> u32 {
    let majority = tries / 2 + 1;
    let (reproduced, ran) = best;
    match stage {
        "replay" => 1,
        "faults" if reproduced >= 2 && 2 * reproduced > ran => majority,
        "faults" => 1,
        _ => majority,
    }
}

/// When runs of a plan of `faults` applied its fault `index`: the median offset, from their fault phase's start, of
/// the fault with the same action in each run's `recordings` (counted in order, as the plan may hold the same action
/// twice); `None` when no run recorded it.
fn applied_offset(faults: &[RecordedFault], index: usize, recordings: &[Vec<RecordedFault>]) -> Option<u64> {
    let fault = faults.get(index)?;
    let nth = faults[..index].iter().filter(|f| f.action == fault.action).count();
    let mut offsets: Vec<u64> = recordings
        .iter()
        .filter_map(|recorded| recorded.iter().filter(|f| f.action == fault.action).nth(nth))
        .map(|applied| applied.start_ms)
        .collect();
    offsets.sort_unstable();
    offsets.get(offsets.len().checked_sub(1)? / 2).copied()
}

/// How links from `RUN_DIR/shrink/shrink.html` reach the candidates' store: `../../../` when it is the run's own
/// store (`STORE/<plan>/<run>/shrink/`), else its absolute path.
fn store_href(run_dir: &Path, store_root: &Path) -> String {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let run_store = run_dir.parent().and_then(Path::parent).map(canonical);
    let store = canonical(store_root);
    if run_store.as_deref() == Some(store.as_path()) {
        "../../../".to_string()
    } else {
        format!("file://{}/", store.display())
    }
}

/// Delta debugging (ddmin, complements first) over items `0..len`: `test(kept, removed)` says whether the items
/// `kept` still fail (`Some(true)`), pass (`Some(false)`), or that the search must stop (`None`: budget, Ctrl-C).
/// Returns the smallest failing set found, in order; the full set is assumed to fail.
fn ddmin<E>(len: usize, mut test: impl FnMut(&[usize], &[usize]) -> Result<Option<bool>, E>) -> Result<Vec<usize>, E> {
    let mut current: Vec<usize> = (0..len).collect();
    let mut granularity = 2usize;
    while current.len() >= 2 {
        let mut reduced = false;
        for (from, to) in split(current.len(), granularity) {
            let kept: Vec<usize> = current[..from].iter().chain(&current[to..]).copied().collect();
            match test(&kept, &current[from..to])? {
                Some(true) => {
                    current = kept;
                    granularity = (granularity - 1).max(2);
                    reduced = true;
                    break;
                }
                Some(false) => {}
                None => return Ok(current),
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    Ok(current)
}

/// `len` items in `n` contiguous chunks, as (from, to) ranges.
fn split(len: usize, n: usize) -> Vec<(usize, usize)> {
    let n = n.clamp(1, len.max(1));
    (0..n)
        .map(|i| (i * len / n, (i + 1) * len / n))
        .filter(|(a, b)| a < b)
        .collect()
}

/// The expected wall time of a run of a `phase_ms` fault phase, from earlier runs' (wall, phase): their mean time
/// beyond their own phase (boot, final phase, timeouts: about the same whatever the phase) plus this phase.
fn expected_wall_ms(walls: &[(u64, u64)], phase_ms: u64) -> u64 {
    if walls.is_empty() {
        return phase_ms + RUN_OVERHEAD_MS;
    }
    let beyond: u64 = walls.iter().map(|(wall, phase)| wall.saturating_sub(*phase)).sum();
    beyond / walls.len() as u64 + phase_ms
}

/// The wall time of a run of a `phase_ms` fault phase as slow as the slowest of earlier runs' (wall, phase), by its
/// time beyond its own phase.
fn slowest_wall_ms(walls: &[(u64, u64)], phase_ms: u64) -> u64 {
    match walls.iter().map(|(wall, phase)| wall.saturating_sub(*phase)).max() {
        Some(beyond) => beyond + phase_ms,
        None => phase_ms + RUN_OVERHEAD_MS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_failure_first_seen_in_the_fault_phase_when_prepared_should_give_its_offset_from_the_phase_start() {
        let results = |evidence_ns: u64| -> Results {
            serde_json::from_value(serde_json::json!({"schema_version": 1, "faultline_version": "t",
                "verdict": "invalid", "reason": "", "plan": "p", "system": "reference", "seed": 1, "started_at": "",
                "duration_ms": 0, "store_dir": "", "repro": "",
                "checks": [
                    {"name": "liveness", "verdict": "invalid", "reason": "no write within 30000 ms after heal",
                     "evidence_ns": 1_000_000_000u64},
                    {"name": "linearizability", "verdict": "invalid", "reason": "not linearizable",
                     "evidence_ns": evidence_ns}],
                "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0}}))
            .expect("a minimal results.json")
        };
        let recorded = replay::Recorded {
            seed: 1,
            faults: Vec::new(),
            phase_ms: 30_000,
            phase_start_ns: 2_000_000_000,
        };
        let in_phase = results(12_500_000_000);
        let target = findings(&in_phase)
            .into_iter()
            .map(|f| f.signature)
            .find(|s| s.check == "linearizability")
            .expect("a linearizability finding");
        // The linearizability check's evidence, not the liveness check's (another class).
        assert_eq!(evidence_in_phase(&in_phase, &target, &recorded), Some(10_500));
        // Evidence after the phase (in the final restart) cuts nothing.
        assert_eq!(evidence_in_phase(&results(40_000_000_000), &target, &recorded), None);
    }

    /// ddmin with a failure that needs items `needed` (any superset fails); returns the result and the tests run.
    fn minimize(len: usize, needed: &[usize]) -> (Vec<usize>, usize) {
        let mut tests = 0;
        let result = ddmin::<()>(len, |kept, _| {
            tests += 1;
            Ok(Some(needed.iter().all(|n| kept.contains(n))))
        })
        .unwrap();
        (result, tests)
    }

    #[test]
    fn given_a_failure_that_needs_two_of_forty_faults_when_minimized_should_find_exactly_them() {
        let (result, tests) = minimize(40, &[7, 31]);
        assert_eq!(result, [7, 31]);
        assert!(tests < 60, "{tests} tests");
        assert_eq!(minimize(38, &[37]).0, [37]);
        assert_eq!(minimize(5, &[0, 1, 2, 3, 4]).0, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn given_a_stop_when_minimizing_should_keep_the_best_set_so_far() {
        let mut tests = 0;
        let result = ddmin::<()>(16, |kept, _| {
            tests += 1;
            // The first halving fails; then the budget runs out.
            Ok(if tests == 1 { Some(kept.contains(&12)) } else { None })
        })
        .unwrap();
        assert_eq!(
            result,
            (8..16).collect::<Vec<_>>(),
            "the first half went; the rest is kept as it was"
        );
    }

    #[test]
    fn given_tries_when_a_stage_is_tested_should_need_one_failure_to_drop_faults_and_a_majority_to_refine() {
        assert_eq!(needed_failures("replay", 3, (0, 0)), 1);
        assert_eq!(needed_failures("faults", 5, (1, 2)), 1);
        for stage in ["phase", "durations", "workload"] {
            assert_eq!(needed_failures(stage, 3, (1, 3)), 2, "{stage}");
            assert_eq!(needed_failures(stage, 5, (1, 3)), 3, "{stage}");
            assert_eq!(
                needed_failures(stage, 1, (1, 1)),
                1,
                "{stage}: one try can only need one failure"
            );
        }
    }

    #[test]
    fn given_a_best_plan_that_failed_most_of_its_tries_when_faults_are_dropped_should_need_a_majority() {
        // The Iggy shrink: the 12-fault plan failed 2 of 2, so a candidate that fails 1 of 3 no longer replaces it.
        assert_eq!(needed_failures("faults", 3, (2, 2)), 2);
        assert_eq!(needed_failures("faults", 3, (2, 3)), 2);
        assert_eq!(needed_failures("faults", 5, (3, 4)), 3);
        // A best plan that failed now and then keeps one failure enough, so a rare failure still shrinks.
        assert_eq!(needed_failures("faults", 3, (1, 2)), 1);
        assert_eq!(needed_failures("faults", 3, (1, 3)), 1);
        assert_eq!(needed_failures("faults", 5, (2, 4)), 1, "half is not most");
        // One failing try is no evidence of a rate: with --parallel 1 a need of one stops at the first failure.
        assert_eq!(needed_failures("faults", 3, (1, 1)), 1);
        // The replay has no best before it.
        assert_eq!(needed_failures("replay", 3, (3, 3)), 1);
    }

    #[test]
    fn given_tries_that_applied_an_anchored_fault_when_timed_should_take_their_median_offset_of_the_same_fault() {
        let fault = |start_ms: u64, targets: &str| RecordedFault {
            start_ms,
            duration_ms: 300,
            action: replay::Action::Process {
                kind: faultline_faults::process::ProcessFault::Kill,
                targets: targets.into(),
            },
            anchor: None,
        };
        // The plan kills the primary twice; the second kill is the anchored one.
        let plan = vec![fault(1000, "primary"), fault(2320, "primary"), fault(3000, "[n3]")];
        let recordings = vec![
            vec![fault(1010, "primary"), fault(3000, "[n3]"), fault(4318, "primary")],
            vec![fault(990, "primary"), fault(4300, "primary")],
            vec![fault(1005, "primary"), fault(4400, "primary")],
            // This try never got to the second kill: it does not count.
            vec![fault(1000, "primary")],
        ];
        assert_eq!(applied_offset(&plan, 1, &recordings), Some(4318));
        assert_eq!(applied_offset(&plan, 2, &recordings), Some(3000));
        assert_eq!(applied_offset(&plan, 1, &[]), None);
        assert_eq!(applied_offset(&plan, 3, &recordings), None);
    }

    #[test]
    fn split_covers_every_item_once() {
        for len in 1..20 {
            for n in 1..=len {
                let chunks = split(len, n);
                assert_eq!(chunks.len(), n);
                assert_eq!(chunks[0].0, 0);
                assert_eq!(chunks.last().unwrap().1, len);
                assert!(chunks.windows(2).all(|w| w[0].1 == w[1].0));
            }
        }
    }

    #[test]
    fn given_earlier_runs_when_a_run_is_estimated_should_take_their_mean_time_beyond_their_own_phase() {
        assert_eq!(expected_wall_ms(&[], 40_000), 40_000 + RUN_OVERHEAD_MS, "no runs yet");
        // A shrink of a convergence failure: passing tries ~40 s, failing ones wait out the final phase, ~100 s. The
        // confirmation reserve is estimated from the failing ones only, so it is not half what it will take.
        let passing_and_failing = expected_wall_ms(&[(40_000, 30_000), (42_000, 30_000), (100_000, 30_000)], 30_000);
        let failing = expected_wall_ms(&[(100_000, 30_000)], 30_000);
        assert_eq!((passing_and_failing, failing), (60_666, 100_000));
        // Measured (view-change-max-op): one failing run of the 60 s replay (121 s), then 15 of 12-15 s phases
        // (73-75 s). Each spent ~61 s beyond its phase, so a 12.3 s candidate's failing run takes ~73 s. Taking the
        // longest phase off the mean of all of them guessed 28 s, and the 35 min shrink ran 42.
        let mut walls = vec![(121_000, 60_000)];
        walls.extend(std::iter::repeat_n((73_000, 12_303), 15));
        let estimate = expected_wall_ms(&walls, 12_303);
        assert!((72_000..=74_500).contains(&estimate), "{estimate}");
    }

    #[test]
    fn given_failing_tries_of_different_lengths_when_the_confirmation_is_reserved_should_take_the_slowest() {
        assert_eq!(slowest_wall_ms(&[], 28_000), 28_000 + RUN_OVERHEAD_MS, "no runs yet");
        // Measured (Iggy, a 28 s phase): failing tries of 57-118 s, the confirmation's runs 110-118 s each.
        let walls = [
            (110_181, 27_963),
            (57_219, 27_963),
            (110_009, 27_963),
            (118_000, 30_000),
        ];
        assert_eq!(slowest_wall_ms(&walls, 27_963), 118_000 - 30_000 + 27_963);
        assert!(
            expected_wall_ms(&walls, 27_963) < 100_000,
            "the mean would reserve too little"
        );
    }
}
