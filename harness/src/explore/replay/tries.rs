//! `faultline run --replay DIR --tries K`: K replays of a run, and how many failed the same way.
//!
//! One replay of a timing-dependent failure says little: a pass does not mean the bug is gone, a failure does not
//! say how often. K replays (child `faultline run`s of the same scripted plan, as a campaign runs them: each its own
//! lifecycle and folder in the store) give the odds: how many failed with the original run's class (its most
//! severe finding's signature), how many failed some other way, how many passed. `replays.json` in the run's folder
//! keeps every try; Ctrl-C stops the replays in flight (each stays in the store as an interrupted run) and reports
//! the ones that finished.

use crate::explore::campaign::child::{self, RunRequest};
use crate::explore::campaign::schedule::{install_stop_signals, stop_signals};
use crate::plan::Plan;
use faultline_reports::results::{Results, Verdict};
use faultline_reports::triage::{findings, Signature};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One replay.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayTry {
    /// Its run folder, relative to the store.
    pub run: Option<String>,
    /// Its verdict.
    pub verdict: Verdict,
    /// It failed with the original's class.
    pub reproduced: bool,
    /// Its most severe finding, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// Wall time.
    pub wall_ms: u64,
}

/// The odds of a run's failure under replay (`replays.json` in the run's folder).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayOdds {
    /// The replayed run.
    pub source: String,
    /// The class a replay must fail with to count (none when the original passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Its title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_title: Option<String>,
    /// Replays asked for.
    pub asked: u32,
    /// Every finished replay.
    pub tries: Vec<ReplayTry>,
    /// Replays that failed with the class.
    pub reproduced: u32,
    /// Replays that failed some other way.
    pub other: u32,
    /// Ctrl-C stopped the replays before all ran.
    pub interrupted: bool,
}

impl ReplayOdds {
    /// `failed the same way (reference linearizability: not linearizable [c1]) in 3 of 4 replays; 1 passed`.
    pub fn summary(&self) -> String {
        let runs = self.tries.len();
        let passed = runs as u32 - self.reproduced - self.other;
        let mut text = match (&self.class, &self.class_title) {
            (Some(id), Some(title)) => format!(
                "failed the same way ({title} [{id}]) in {} of {runs} replays",
                self.reproduced
            ),
            _ => format!("the original passed; {} of {runs} replays failed", self.other),
        };
        if self.class.is_some() && self.other > 0 {
            text.push_str(&format!("; {} failed some other way", self.other));
        }
        text.push_str(&format!("; {passed} passed"));
        if self.interrupted {
            text.push_str(&format!(" (interrupted: {runs} of {} ran)", self.asked));
        }
        text
    }

    /// The worst verdict of the replays (what the command's exit code says).
    pub fn worst(&self) -> Verdict {
        let has = |v: Verdict| self.tries.iter().any(|t| t.verdict == v);
        if has(Verdict::Invalid) {
            Verdict::Invalid
        } else if has(Verdict::Unknown) || self.tries.is_empty() {
            Verdict::Unknown
        } else {
            Verdict::Valid
        }
    }
}

/// The class of the run in `run_dir` (its most severe finding), or none when it passed or has no results.
fn class_of(run_dir: &Path) -> anyhow::Result<Option<Signature>> {
    let path = run_dir.join("results.json");
    let bytes = std::fs::read(&path).map_err(|e| {
        anyhow::anyhow!(
            "{}: no results.json ({e}); run `faultline analyze {}` first",
            run_dir.display(),
            run_dir.display()
        )
    })?;
    let results: Results = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("{} does not parse ({e}); run `faultline analyze` again", path.display()))?;
    Ok(findings(&results).into_iter().next().map(|f| f.signature))
}

/// Runs the scripted `plan` that replays `run_dir` `tries` times, `parallel` at once, into `store_root`; writes
/// `run_dir/replays.json` and returns it. `extra`: more arguments of every child run (`--hosts FILE`).
pub fn replay_tries(
    run_dir: &Path,
    plan: &Plan,
    store_root: &Path,
    tries: u32,
    parallel: usize,
    extra: Vec<String>,
) -> anyhow::Result<ReplayOdds> {
    let class = class_of(run_dir)?;
    let dir = run_dir.join("replays");
    std::fs::create_dir_all(&dir)?;
    let plan_path = dir.join("replay.yaml");
    std::fs::write(&plan_path, plan.to_yaml())?;
    let request = RunRequest {
        plan_arg: plan_path.display().to_string(),
        seed: plan.seed.unwrap_or_default(),
        time_limit: None,
        nodes: None,
        extra,
    };
    install_stop_signals();
    let mut odds = ReplayOdds {
        source: run_dir.display().to_string(),
        class: class.as_ref().map(Signature::id),
        class_title: class.as_ref().map(Signature::title),
        asked: tries,
        tries: Vec::new(),
        reproduced: 0,
        other: 0,
        interrupted: false,
    };
    let mut running: Vec<(std::process::Child, PathBuf, Instant)> = Vec::new();
    let mut started = 0;
    let mut interrupted_at: Option<Instant> = None;
    loop {
        if stop_signals() > 0 && interrupted_at.is_none() {
            interrupted_at = Some(Instant::now());
            odds.interrupted = true;
            eprintln!("faultline run --replay: interrupted: stopping the replays in flight");
            for (child, _, _) in &running {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(child.id() as i32),
                    nix::sys::signal::Signal::SIGINT,
                );
            }
        }
        if interrupted_at.is_some_and(|at| at.elapsed() > Duration::from_secs(60)) || stop_signals() > 1 {
            for (child, _, _) in &mut running {
                let _ = child.kill();
            }
        }
        if interrupted_at.is_none() && started < tries && running.len() < parallel.max(1) {
            started += 1;
            let log = dir.join(format!("replay-{started}.log"));
            let child = child::spawn(&request, store_root, &log)?;
            eprintln!("faultline run --replay: replay {started} of {tries} started");
            running.push((child, log, Instant::now()));
            continue;
        }
        if running.is_empty() {
            break;
        }
        let mut i = 0;
        while i < running.len() {
            match running[i].0.try_wait()? {
                None => i += 1,
                Some(status) => {
                    let (_, log, at) = running.swap_remove(i);
                    let wall_ms = at.elapsed().as_millis() as u64;
                    if interrupted_at.is_some() {
                        // Stopped mid-way: it says nothing about the odds.
                        continue;
                    }
                    let result = child::result_of(status, &log, store_root, wall_ms, None);
                    let reproduced = class
                        .as_ref()
                        .is_some_and(|c| result.findings.iter().any(|f| f.signature == *c));
                    let failed = result.verdict != Verdict::Valid;
                    odds.reproduced += u32::from(reproduced);
                    odds.other += u32::from(failed && !reproduced);
                    let finding = failed
                        .then(|| result.findings.first().map(|f| f.signature.title()))
                        .flatten();
                    eprintln!(
                        "faultline run --replay: {} {}{}",
                        if reproduced {
                            "✗ the same way"
                        } else if failed {
                            "? another way"
                        } else {
                            "✓ passed"
                        },
                        result.store_dir.as_deref().unwrap_or("(no run folder)"),
                        finding.as_deref().map(|f| format!(": {f}")).unwrap_or_default()
                    );
                    odds.tries.push(ReplayTry {
                        run: result.store_dir,
                        verdict: result.verdict,
                        reproduced,
                        finding,
                        wall_ms,
                    });
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    faultline_reports::write_atomic(
        &run_dir.join("replays.json"),
        serde_json::to_string_pretty(&odds)?.as_bytes(),
    )?;
    Ok(odds)
}
