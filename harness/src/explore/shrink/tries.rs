//! The tries of a candidate: child runs, stopped once decided or at settled evidence; their wall times, and the
//! budget the search keeps by them; the candidate's plan as it is written for a run.

use super::search::{Candidate, Search, Stop};
use crate::explore::campaign::child::{self, RunRequest};
use crate::explore::campaign::schedule::stop_signals;
use crate::explore::replay;
use crate::plan::Plan;
use faultline_reports::shrink::Try;
use faultline_reports::triage::{FindingKind, Signature};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Before a candidate has run once, a run is expected to take its fault phase plus this.
pub(super) const RUN_OVERHEAD_MS: u64 = 20_000;
/// How often a try in flight is looked at for settled evidence of the target.
const EVIDENCE_POLL: Duration = Duration::from_secs(2);
/// How long a try stopped with Ctrl-C gets to tear down and analyse before it is killed.
const STOPPED_RUN_GRACE: Duration = Duration::from_secs(60);

/// A finished try: its wall time, the fault phase it ran, and whether it reproduced the failure.
#[derive(Debug, Clone, Copy)]
pub(super) struct RunWall {
    pub(super) wall_ms: u64,
    pub(super) phase_ms: u64,
    pub(super) reproduced: bool,
    /// Stopped at the evidence: shorter than a run to its end.
    pub(super) stopped_at_evidence: bool,
}

/// Why a try in flight was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stopped {
    /// Its candidate was decided by the other tries.
    Decided,
    /// Its history already held settled evidence of the target.
    AtEvidence,
}

/// A try in flight.
pub(super) struct InFlight {
    pub(super) child: std::process::Child,
    pub(super) log: PathBuf,
    pub(super) started: Instant,
    /// Why and when it was stopped.
    pub(super) stopped: Option<(Stopped, Instant)>,
    /// Its run's store folder, once its lock names it.
    pub(super) store_dir: Option<PathBuf>,
    /// When its history was last looked at.
    pub(super) polled: Instant,
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

/// Whether a try can show `target` before it ends: the kinds [`crate::run::analyze::settled_findings`] gives.
pub(super) fn settles_early(target: &Signature) -> bool {
    target.kind == FindingKind::RefusedCleanDisk
}

impl Search {
    /// Runs `plan_file` (relative to the shrink folder) up to `tries` times, `parallel` at once; with `need`, no new
    /// try starts once `need` reproduced or once that many no longer can (a measurement runs every try). A try
    /// that shows settled evidence of the target ([`crate::run::analyze::settled_findings`]) is stopped there.
    /// `budgeted`: no try starts that would overrun the budget (the original's rate and the confirmation run in
    /// the time the budget keeps for them).
    pub(super) fn run_plan(
        &mut self,
        plan_file: &str,
        candidate: &Candidate,
        tries: u32,
        need: Option<u32>,
        budgeted: bool,
        label: &str,
    ) -> anyhow::Result<(Vec<Try>, u32)> {
        let request = RunRequest {
            plan_arg: self.shrink_dir.join(plan_file).display().to_string(),
            seed: self.seed,
            time_limit: None,
            nodes: None,
            extra: Vec::new(),
        };
        let mut done: Vec<Try> = Vec::new();
        let mut running: Vec<InFlight> = Vec::new();
        let mut superfluous = 0u32;
        let mut started = 0u32;
        let logs = self.shrink_dir.join("logs");
        std::fs::create_dir_all(&logs)?;
        let mut interrupted_at: Option<Instant> = None;
        let runs_dir = crate::run::runlock::runs_dir();
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
                        run.store_dir = crate::run::runlock::store_dir_of(&runs_dir, run.child.id());
                    }
                    let settled = run
                        .store_dir
                        .as_deref()
                        .and_then(|dir| crate::run::analyze::settled_findings(dir).ok());
                    if settled.is_some_and(|found| found.iter().any(|f| f.signature == self.target)) {
                        run.stop(Stopped::AtEvidence);
                    }
                }
            }
            let may_start =
                self.stopped.is_none() && started < tries && running.len() < self.options.parallel.max(1) && !decided;
            if may_start {
                if budgeted && !self.fits_budget(candidate) {
                    self.stopped = Some(Stop::Budget);
                } else {
                    started += 1;
                    self.runs_started += 1;
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
                        let result = child::result_of(status, &run.log, &self.options.store_root, wall_ms, None);
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
    pub(super) fn fits_budget(&self, candidate: &Candidate) -> bool {
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
        // The runs' budget keeps the confirmation's runs too.
        let runs_fit = self.options.max_runs.is_none_or(|max| {
            let reserved = if self.steps.is_empty() { 0 } else { self.options.confirm };
            self.runs_started + 1 + reserved <= max
        });
        runs_fit && elapsed_ms + expected_ms + reserve_ms <= self.options.budget.as_millis() as u64
    }

    /// The expected wall time of one run of `candidate`, from the tries so far; before any, its phase plus overhead.
    pub(super) fn expected_run_ms(&self, candidate: &Candidate) -> u64 {
        expected_wall_ms(&self.walls(false), candidate.phase_ms)
    }

    /// The wall time of a run of `candidate` as slow as the slowest failing try so far.
    pub(super) fn slowest_failing_run_ms(&self, candidate: &Candidate) -> u64 {
        slowest_wall_ms(&self.walls(true), candidate.phase_ms)
    }

    /// The tries' (wall, phase) so far: with `failing`, the failing ones (as the confirmation will run them, stopped
    /// at the evidence where it settles early); else the ones that ran to their end (a try stopped at the evidence
    /// says little of how long a passing one takes), or every try while none did.
    pub(super) fn walls(&self, failing: bool) -> Vec<(u64, u64)> {
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
    pub(super) fn plan_of(&self, candidate: &Candidate, origin: &str) -> Plan {
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

    pub(super) fn write_plan(&self, candidate: &Candidate, path: &Path, what: &str) -> anyhow::Result<()> {
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

    pub(super) fn write_best(&self) -> anyhow::Result<()> {
        self.write_plan(&self.best, &self.shrink_dir.join("shrunk.yaml"), "shrunk plan")
    }
}

/// The expected wall time of a run of a `phase_ms` fault phase, from earlier runs' (wall, phase): their mean time
/// beyond their own phase (boot, final phase, timeouts: about the same whatever the phase) plus this phase.
pub(super) fn expected_wall_ms(walls: &[(u64, u64)], phase_ms: u64) -> u64 {
    if walls.is_empty() {
        return phase_ms + RUN_OVERHEAD_MS;
    }
    let beyond: u64 = walls.iter().map(|(wall, phase)| wall.saturating_sub(*phase)).sum();
    beyond / walls.len() as u64 + phase_ms
}

/// The wall time of a run of a `phase_ms` fault phase as slow as the slowest of earlier runs' (wall, phase), by its
/// time beyond its own phase.
pub(super) fn slowest_wall_ms(walls: &[(u64, u64)], phase_ms: u64) -> u64 {
    match walls.iter().map(|(wall, phase)| wall.saturating_sub(*phase)).max() {
        Some(beyond) => beyond + phase_ms,
        None => phase_ms + RUN_OVERHEAD_MS,
    }
}
