//! The scheduler: keeps up to K child runs going, reruns failing seeds, respects the wall-clock budget, and stops
//! cleanly on SIGINT/SIGTERM. It is a plain polling loop on the main thread (the children are processes; there is
//! nothing to await), which also keeps every child's parent-death signal tied to a thread that lives as long as the
//! campaign.
//!
//! A seed is recorded (one row in `seeds.jsonl`) only when it is finished: its first run, and for a failure its
//! reruns. On a stop, runs in flight get SIGINT (each stops its cluster and records an interrupted history), their
//! seeds are not recorded, and `--resume` runs them again.

use super::child::{self, RunRequest, RunResult};
use super::space::Shard;
use super::state::PlanSource;
use super::view::{RunLine, View};
use faultline_faults::units::Millis;
use faultline_reports::results::Verdict;
use faultline_reports::seeds::{CampaignKind, Reproducibility, Rerun, SeedRow};
use nix::sys::signal::{killpg, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::iter::Peekable;
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the loop polls children and redraws.
const POLL: Duration = Duration::from_millis(100);
/// Bound on waiting for interrupted runs to stop their clusters and write their results; past it they are SIGKILLed
/// (their nodes die with them through their parent-death signal). A second Ctrl-C does it at once.
const STOP_GRACE: Duration = Duration::from_secs(90);
/// Before a plan has finished once, a run is expected to take its fault phase plus this (setup, final phase, checks).
const RUN_OVERHEAD_MS: u64 = 15_000;

/// SIGINT/SIGTERM received by this process.
static STOP_SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP_SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// How many SIGINT/SIGTERM this process received since [`install_stop_signals`].
pub fn stop_signals() -> usize {
    STOP_SIGNALS.load(Ordering::SeqCst)
}

/// Makes SIGINT and SIGTERM ask the scheduler to stop instead of killing the process.
pub fn install_stop_signals() {
    let action = SigAction::new(
        SigHandler::Handler(on_stop_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only does an atomic add, which is async-signal-safe.
        unsafe { nix::sys::signal::sigaction(signal, &action) }.expect("installing a signal handler");
    }
}

/// A plan of the campaign.
#[derive(Debug, Clone)]
pub struct PlanRef {
    /// Plan name.
    pub name: String,
    /// What progress lines and log files call it: the plan name, or e.g. `default+no-fsync` in a matrix, where one
    /// plan runs once per mutant.
    pub label: String,
    /// Where it comes from.
    pub source: PlanSource,
    /// Its fault phase (after any override), for budget estimates and the progress view.
    pub time_limit_ms: u64,
}

/// One work item: a plan with a seed (and a node count, for certification matrices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Index into the campaign's plans.
    pub plan: usize,
    /// Position in the seed sequence.
    pub seed_index: u64,
    /// Run seed.
    pub seed: u64,
    /// Node-count override.
    pub nodes: Option<u64>,
    /// The plan file this run takes instead of its plan's (a guided run's own configuration of it).
    pub plan_file: Option<std::path::PathBuf>,
}

/// What the scheduler needs to know.
pub struct Settings {
    /// The command, for its lines (`faultline campaign: ...`).
    pub command: &'static str,
    /// Campaign id (tags rows).
    pub id: String,
    /// Campaign or certification.
    pub kind: CampaignKind,
    /// Store root (children write runs there).
    pub store_root: PathBuf,
    /// Where child output goes.
    pub log_dir: PathBuf,
    /// Concurrent runs (>= 1).
    pub parallel: usize,
    /// Reruns of a failing seed (stops early once a rerun reproduces it).
    pub retry_failed: u64,
    /// Stop launching new seeds after the first failure.
    pub stop_on_fail: bool,
    /// No run is started that would not end before this.
    pub deadline: Option<Instant>,
    /// Fault-phase override for every run.
    pub time_limit: Option<Millis>,
    /// The shard, recorded in rows.
    pub shard: Shard,
    /// Recorded in rows.
    pub git_rev: Option<String>,
    /// No progress view, no lines.
    pub quiet: bool,
    /// Title of the overall bar.
    pub title: String,
    /// First runs to do, when known (the overall bar).
    pub total: Option<u64>,
    /// More `faultline run` arguments for every run (`--hosts FILE ...`: the runs' nodes on hosts).
    pub run_args: Vec<String>,
}

/// Why the scheduler stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every cell ran.
    Finished,
    /// SIGINT/SIGTERM.
    Interrupted,
    /// A failure with `--stop-on-fail`.
    StoppedOnFail,
    /// The next run would not have ended within the budget.
    BudgetSpent,
}

struct Task {
    cell: Cell,
    first: Option<RunResult>,
    reruns: Vec<RunResult>,
}

#[derive(Debug, Clone, Copy)]
struct Job {
    task: usize,
    /// 0: the first run; 1..: reruns.
    attempt: u64,
}

struct Running {
    job: Job,
    child: Child,
    started: Instant,
    line: RunLine,
    log_path: PathBuf,
}

/// Runs `cells` and calls `record` with each finished seed's row; returns why it stopped.
pub fn execute(
    settings: &Settings,
    plans: &[PlanRef],
    cells: impl Iterator<Item = Cell>,
    record: &mut dyn FnMut(&SeedRow) -> anyhow::Result<()>,
) -> anyhow::Result<Ending> {
    std::fs::create_dir_all(&settings.log_dir)?;
    let budget_s = settings
        .deadline
        .map(|d| d.saturating_duration_since(Instant::now()).as_secs());
    let mut scheduler = Scheduler {
        settings,
        plans,
        cells: cells.peekable(),
        tasks: Vec::new(),
        reruns: VecDeque::new(),
        running: Vec::new(),
        no_more_new: None,
        stopping: None,
        killed: false,
        observed_ms: vec![None; plans.len()],
        counts: [0; 3],
        view: View::new(settings.quiet, &settings.title, settings.total, budget_s),
        started: Instant::now(),
        record,
    };
    let result = scheduler.run();
    if result.is_err() {
        scheduler.kill_all();
    }
    scheduler.view.close();
    result
}

struct Scheduler<'a, I: Iterator<Item = Cell>> {
    settings: &'a Settings,
    plans: &'a [PlanRef],
    cells: Peekable<I>,
    tasks: Vec<Task>,
    reruns: VecDeque<Job>,
    running: Vec<Running>,
    no_more_new: Option<Ending>,
    stopping: Option<Instant>,
    killed: bool,
    /// Longest wall time of a finished run, per plan.
    observed_ms: Vec<Option<u64>>,
    /// Recorded seeds: valid, invalid, unknown.
    counts: [u64; 3],
    view: View,
    started: Instant,
    record: &'a mut dyn FnMut(&SeedRow) -> anyhow::Result<()>,
}

impl<I: Iterator<Item = Cell>> Scheduler<'_, I> {
    fn run(&mut self) -> anyhow::Result<Ending> {
        loop {
            let signals = STOP_SIGNALS.load(Ordering::SeqCst);
            if signals > 0 && self.stopping.is_none() {
                self.stop();
            }
            if let Some(since) = self.stopping {
                if !self.killed && (signals > 1 || since.elapsed() > STOP_GRACE) {
                    self.kill_all();
                }
            } else {
                self.launch()?;
            }
            self.reap()?;
            // Peeked only with nothing running: a guided campaign's next cell is chosen when a slot frees up, so
            // it knows every run that finished before it.
            if self.running.is_empty()
                && (self.stopping.is_some()
                    || (self.reruns.is_empty() && (self.no_more_new.is_some() || self.cells.peek().is_none())))
            {
                break;
            }
            let lines: Vec<&RunLine> = self.running.iter().map(|r| &r.line).collect();
            let [valid, invalid, unknown] = self.counts;
            let counts = format!(
                "{valid} valid, {invalid} invalid, {unknown} unknown · {} running",
                lines.len()
            );
            self.view.tick(&lines, self.started.elapsed().as_secs(), &counts);
            std::thread::sleep(POLL);
        }
        Ok(match (self.stopping, self.no_more_new) {
            (Some(_), _) => Ending::Interrupted,
            (None, Some(_)) if self.cells.peek().is_none() => Ending::Finished,
            (None, Some(ending)) => ending,
            (None, None) => Ending::Finished,
        })
    }

    /// Starts reruns first (so failures get classified early), then new seeds, up to K runs.
    fn launch(&mut self) -> anyhow::Result<()> {
        while self.running.len() < self.settings.parallel {
            if let Some(job) = self.reruns.pop_front() {
                let plan = self.tasks[job.task].cell.plan;
                if self.fits(plan) {
                    self.start(job);
                } else {
                    self.finalize(job.task)?; // no time left for reruns: recorded as not rerun
                }
                continue;
            }
            if self.no_more_new.is_some() {
                break;
            }
            let Some(cell) = self.cells.peek().cloned() else {
                break;
            };
            if !self.fits(cell.plan) {
                self.view.say(&format!(
                    "faultline {}: the budget is spent; no new runs",
                    self.settings.command
                ));
                self.no_more_new = Some(Ending::BudgetSpent);
                break;
            }
            self.cells.next();
            self.tasks.push(Task {
                cell,
                first: None,
                reruns: Vec::new(),
            });
            self.start(Job {
                task: self.tasks.len() - 1,
                attempt: 0,
            });
        }
        Ok(())
    }

    /// Whether a run of `plan` started now would end before the deadline.
    fn fits(&self, plan: usize) -> bool {
        let expected_ms = self.observed_ms[plan].unwrap_or(self.plans[plan].time_limit_ms + RUN_OVERHEAD_MS);
        self.settings
            .deadline
            .is_none_or(|deadline| Instant::now() + Duration::from_millis(expected_ms) <= deadline)
    }

    fn request(&self, cell: &Cell) -> RunRequest {
        RunRequest {
            plan_arg: match &cell.plan_file {
                Some(file) => file.display().to_string(),
                None => self.plans[cell.plan].source.run_arg(),
            },
            seed: cell.seed,
            time_limit: self.settings.time_limit.map(|t| t.to_string()),
            nodes: cell.nodes,
            extra: self.settings.run_args.clone(),
        }
    }

    fn label(&self, job: Job) -> String {
        let cell = &self.tasks[job.task].cell;
        let mut label = format!("{} seed {}", self.plans[cell.plan].label, cell.seed);
        if let Some(nodes) = cell.nodes {
            label.push_str(&format!(" ({nodes} nodes)"));
        }
        if job.attempt > 0 {
            label.push_str(&format!(" rerun {}/{}", job.attempt, self.settings.retry_failed));
        }
        label
    }

    fn start(&mut self, job: Job) {
        let cell = self.tasks[job.task].cell.clone();
        let request = self.request(&cell);
        let log_path = self.settings.log_dir.join(format!(
            "{}-i{}{}-a{}.log",
            self.plans[cell.plan].label,
            cell.seed_index,
            cell.nodes.map(|n| format!("-n{n}")).unwrap_or_default(),
            job.attempt
        ));
        let expected_s =
            self.observed_ms[cell.plan].unwrap_or(self.plans[cell.plan].time_limit_ms + RUN_OVERHEAD_MS) / 1000;
        let line = self.view.start(&self.label(job), expected_s);
        match child::spawn(&request, &self.settings.store_root, &log_path) {
            Ok(child) => self.running.push(Running {
                job,
                child,
                started: Instant::now(),
                line,
                log_path,
            }),
            Err(e) => {
                // Nothing ran: record it as a harness error, so the campaign does not spin on it.
                self.view.finish(
                    line,
                    &format!("faultline {}: cannot start a run: {e}", self.settings.command),
                    true,
                );
                let error = format!("cannot start `faultline run`: {e}");
                let result = RunResult {
                    verdict: Verdict::Unknown,
                    findings: vec![faultline_reports::triage::harness_finding(&error)],
                    failure: Some(("harness".into(), error)),
                    failing_checks: vec!["harness".into()],
                    duration_ms: 0,
                    cpu_ms: None,
                    store_dir: None,
                    build: Default::default(),
                    complete: false,
                };
                let _ = self.handle(job, result);
            }
        }
    }

    fn reap(&mut self) -> anyhow::Result<()> {
        let mut i = 0;
        while i < self.running.len() {
            let (status, cpu_ms) = match child::try_reap(&self.running[i].child) {
                Ok(Some(reaped)) => reaped,
                Ok(None) => {
                    i += 1;
                    continue;
                }
                Err(e) => anyhow::bail!("cannot wait for a run (pid {}): {e}", self.running[i].child.id()),
            };
            // Its nodes are in groups of their own, which the run (or their parent-death signal) took down; its own
            // group is not signalled after the reap, since its pid may be reused.
            let done = self.running.swap_remove(i);
            let wall_ms = done.started.elapsed().as_millis() as u64;
            let result = child::result_of(status, &done.log_path, &self.settings.store_root, wall_ms, Some(cpu_ms));
            let plan = self.tasks[done.job.task].cell.plan;
            self.observed_ms[plan] = Some(self.observed_ms[plan].unwrap_or(0).max(wall_ms));
            let message = format!(
                "faultline {}: {} {} ({:.1} s){}",
                self.settings.command,
                faultline_reports::results::shout(result.verdict),
                self.label(done.job),
                wall_ms as f64 / 1000.0,
                result
                    .failure
                    .as_ref()
                    .map(|(check, line)| format!(" — {check}: {line}"))
                    .unwrap_or_default()
            );
            self.view.finish(done.line, &message, done.job.attempt == 0);
            self.handle(done.job, result)?;
        }
        Ok(())
    }

    fn handle(&mut self, job: Job, result: RunResult) -> anyhow::Result<()> {
        if self.stopping.is_some() && !result.complete {
            let label = self.label(job);
            let again = if self.settings.command == "campaign" {
                " (--resume runs it again)"
            } else {
                ""
            };
            self.view.say(&format!(
                "faultline {}: {label} was interrupted; not recorded{again}",
                self.settings.command
            ));
            return Ok(());
        }
        let failed = result.verdict != Verdict::Valid;
        let retry = self.settings.retry_failed;
        let task = &mut self.tasks[job.task];
        if job.attempt == 0 {
            task.first = Some(result);
            if failed && self.settings.stop_on_fail && self.no_more_new.is_none() {
                self.view.say(&format!(
                    "faultline {}: a seed failed and --stop-on-fail is set; no new seeds",
                    self.settings.command
                ));
                self.no_more_new = Some(Ending::StoppedOnFail);
            }
            if failed && retry > 0 {
                self.reruns.push_front(Job {
                    task: job.task,
                    attempt: 1,
                });
                return Ok(());
            }
        } else {
            task.reruns.push(result);
            if !reproduced(task) && job.attempt < retry {
                self.reruns.push_front(Job {
                    task: job.task,
                    attempt: job.attempt + 1,
                });
                return Ok(());
            }
        }
        self.finalize(job.task)
    }

    fn finalize(&mut self, task: usize) -> anyhow::Result<()> {
        let row = self.row(&self.tasks[task]);
        self.counts[match row.verdict {
            Verdict::Valid => 0,
            Verdict::Invalid => 1,
            Verdict::Unknown => 2,
        }] += 1;
        (self.record)(&row)
    }

    fn row(&self, task: &Task) -> SeedRow {
        let first = task.first.as_ref().expect("a finalized task has its first run");
        let cell = &task.cell;
        let plan = &self.plans[cell.plan];
        let plan_source = match &cell.plan_file {
            Some(file) => file.display().to_string(),
            None => plan.source.source.clone(),
        };
        let mut words = vec!["faultline".to_string(), "run".to_string(), plan_source.clone()];
        words.extend(self.request(cell).option_args());
        let mut build = first.build.clone();
        build.git_rev = self.settings.git_rev.clone();
        SeedRow {
            campaign: self.settings.id.clone(),
            kind: self.settings.kind,
            plan: plan.name.clone(),
            plan_source,
            seed: cell.seed,
            seed_index: cell.seed_index,
            nodes: cell.nodes,
            shard: (!self.settings.shard.is_whole()).then(|| self.settings.shard.to_string()),
            verdict: first.verdict,
            failing_check: first.failure.as_ref().map(|(check, _)| check.clone()),
            first_error: first.failure.as_ref().map(|(_, line)| line.clone()),
            also_failing: first
                .failing_checks
                .iter()
                .filter(|c| first.failure.as_ref().is_none_or(|(check, _)| check != *c))
                .cloned()
                .collect(),
            findings: first.findings.clone(),
            duration_ms: first.duration_ms,
            cpu_ms: first.cpu_ms,
            store_dir: first.store_dir.clone(),
            repro: child::shell_line(&words),
            build,
            reproducibility: match (task.reruns.is_empty(), reproduced(task)) {
                (true, _) => None,
                (false, true) => Some(Reproducibility::Reproducible),
                (false, false) => Some(Reproducibility::Flaky),
            },
            reruns: task
                .reruns
                .iter()
                .map(|r| Rerun {
                    verdict: r.verdict,
                    failing_checks: r.failing_checks.clone(),
                    duration_ms: r.duration_ms,
                    store_dir: r.store_dir.clone(),
                    classes: class_ids(&r.findings),
                })
                .collect(),
            finished_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        }
    }

    /// Stop launching; SIGINT every running test (each stops its own cluster).
    fn stop(&mut self) {
        self.stopping = Some(Instant::now());
        self.view.say(&format!(
            "faultline {}: stopping; waiting for {} running test(s) to stop their clusters (Ctrl-C again to kill \
             them now)",
            self.settings.command,
            self.running.len()
        ));
        for running in &self.running {
            let _ = killpg(Pid::from_raw(running.child.id() as i32), Signal::SIGINT);
        }
    }

    /// SIGKILL every running test's process group (their nodes die through their parent-death signal).
    fn kill_all(&mut self) {
        self.killed = true;
        for running in &mut self.running {
            let _ = killpg(Pid::from_raw(running.child.id() as i32), Signal::SIGKILL);
            let _ = running.child.wait();
        }
    }
}

/// The distinct class ids of a run's findings, in order.
fn class_ids(findings: &[faultline_reports::triage::Finding]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for finding in findings {
        let id = finding.signature.id();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// Whether a rerun failed like the first run: the same verdict, and a check that failed in the first run fails
/// again. Which checks a bug trips varies from run to run (the canary's accepted corrupt boot always fails `boot`,
/// and only sometimes also `linearizability`, which is reported first), so any shared failing check counts.
fn reproduced(task: &Task) -> bool {
    let Some(first) = &task.first else {
        return false;
    };
    if first.failure.is_none() {
        return false;
    }
    task.reruns.iter().any(|r| {
        r.verdict == first.verdict
            && r.failing_checks
                .iter()
                .any(|check| first.failing_checks.contains(check))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict, checks: &[&str]) -> RunResult {
        RunResult {
            verdict,
            failure: checks.first().map(|c| (c.to_string(), "why".to_string())),
            failing_checks: checks.iter().map(|c| c.to_string()).collect(),
            findings: Vec::new(),
            duration_ms: 1,
            cpu_ms: None,
            store_dir: None,
            build: Default::default(),
            complete: true,
        }
    }

    fn task(first: RunResult, reruns: Vec<RunResult>) -> Task {
        Task {
            cell: Cell {
                plan: 0,
                seed_index: 0,
                seed: 1,
                nodes: None,
                plan_file: None,
            },
            first: Some(first),
            reruns,
        }
    }

    #[test]
    fn given_reruns_when_judged_should_reproduce_only_with_the_same_verdict_and_a_shared_failing_check() {
        let boot = || result(Verdict::Invalid, &["boot"]);
        let also_boot = result(Verdict::Invalid, &["linearizability", "boot"]);
        assert!(
            reproduced(&task(boot(), vec![also_boot])),
            "boot failed again, after another check"
        );
        assert!(!reproduced(&task(
            boot(),
            vec![result(Verdict::Invalid, &["liveness"])]
        )));
        assert!(!reproduced(&task(boot(), vec![result(Verdict::Unknown, &["boot"])])));
        assert!(!reproduced(&task(boot(), vec![result(Verdict::Valid, &[])])));
        assert!(
            reproduced(&task(boot(), vec![result(Verdict::Valid, &[]), boot()])),
            "any rerun"
        );
        assert!(!reproduced(&task(boot(), vec![])));
        assert!(
            reproduced(&task(also_boot_first(), vec![boot()])),
            "the first run also failed linearizability; boot failing again reproduces it"
        );
    }

    fn also_boot_first() -> RunResult {
        result(Verdict::Invalid, &["linearizability", "boot"])
    }
}
