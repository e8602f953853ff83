//! The detection matrix: every mutant of the reference node against the plans that should expose it, and the correct
//! node against the same plans, over several seeds. It answers "does a green nightly mean anything?": each mutant must
//! be caught, the correct node never (no false alarms).
//!
//! Each (mutant, plan) pair is written as a plan file (the built-in plan with `--bug MUTANT` and the time limit) under
//! `store/matrix/<UTC time>/plans/`, and its seeds run as child `faultline run` processes through the campaign
//! scheduler: `--parallel K` at once (default 1), Ctrl-C stops the runs in flight, and a run that ends in a harness
//! error counts as `unknown` in its cell instead of ending the matrix. Runs land in the store like any run; the matrix
//! itself is written as `matrix.json` and `matrix.html` beside the plans, also when interrupted.

use crate::explore::campaign::schedule::{self, Ending, PlanRef, Settings};
use crate::explore::campaign::space::Shard;
use crate::explore::campaign::state::PlanSource;
use crate::plan::builtin;
use anyhow::Context;
use faultline_faults::units::Millis;
use faultline_reports::results::{Results, Verdict};
use faultline_reports::seeds::{CampaignKind, SeedRow};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each mutant with the built-in plans that should expose it (see nodes/README.md, "Mutants").
pub const MUTANTS: &[(&str, &[&str])] = &[
    ("repair-rewinds-parent", &["mutant-repair-rewinds-parent"]),
    ("ack-before-fsync", &["reference-power-loss"]),
    ("no-fsync", &["reference-power-loss"]),
    ("commit-without-quorum", &["default", "reference-power-loss"]),
    ("stale-backup-reads", &["default"]),
    ("view-change-max-op", &["mutant-view-change-max-op"]),
    ("boot-skips-verification", &["reference-disk-surgery"]),
    ("checkpoint-without-fsync", &["reference-checkpoint"]),
    ("truncate-on-boot", &["default"]),
    ("rejoin-after-lost-tail", &["reference-corruption"]),
    // Only transactions see it: the general plans (single-key workloads) cannot.
    ("txn-reads-at-receipt", &["reference-txn", "reference-bank"]),
    // Only clock faults expose it: pauses, kills and partitions leave its lease inside the backups' promise.
    ("lease-ignores-drift", &["reference-clock"]),
    // Its window is one loop iteration wide (a crash between adopting a view's log and the ack that follows), then a
    // cut of that WAL below the view's head: no plan is written for it, which is the point (issue 49).
    ("mark-ignores-adopted-log", &["reference-corruption"]),
    // Only a cluster whose members change exposes it: a quorum sized by the configuration before the last change.
    ("quorum-of-old-config", &["reference-membership"]),
];

/// The general plans: no timing scripted for any bug (timed faults, flaps, triggers, swarm). `--general` measures
/// detection with these only, since a user's own bug has no scripted plan.
pub const GENERAL_PLANS: &[&str] = &[
    "default",
    "reference-mixed",
    "reference-swarm",
    "reference-partition",
    "reference-crash-points",
    "reference-corruption",
    "reference-membership",
];

/// What to run.
pub struct MatrixOptions {
    /// Seeds per (mutant, plan) cell.
    pub seeds: u64,
    /// Upper bound on each run's fault phase.
    pub time_limit: Millis,
    /// Store root.
    pub store_root: PathBuf,
    /// Only these mutants (empty: all).
    pub only: Vec<String>,
    /// First seed; cell seeds are `first_seed + i`.
    pub first_seed: u64,
    /// Every mutant against the [`GENERAL_PLANS`] instead of the plans written to expose it.
    pub general: bool,
    /// Only these of the plans (empty: all).
    pub plans: Vec<String>,
    /// Runs at once.
    pub parallel: usize,
    /// No progress view.
    pub quiet: bool,
    /// More `faultline run` arguments for every run (`--hosts FILE --ssh-config FILE`: the runs on hosts).
    pub run_args: Vec<String>,
}

pub use faultline_reports::matrix::Cell;

/// What a matrix did.
pub struct MatrixOutcome {
    /// The cells, mutants first, then the correct node per plan.
    pub cells: Vec<Cell>,
    /// Where matrix.json and matrix.html are.
    pub dir: PathBuf,
    /// Ctrl-C stopped it: the cells hold the runs that finished.
    pub interrupted: bool,
}

/// The mutants selected (`--mutant`), each with the plans it runs against before `--plan` filters them.
fn offered(options: &MatrixOptions) -> impl Iterator<Item = (&'static str, &'static [&'static str])> + '_ {
    MUTANTS
        .iter()
        .filter(|(m, _)| options.only.is_empty() || options.only.iter().any(|o| o == m))
        .map(|(mutant, plans)| (*mutant, if options.general { GENERAL_PLANS } else { *plans }))
}

/// The (mutant, plan) pairs to run, mutants first, then the correct node (`None`) against every plan they use.
pub fn pairs(options: &MatrixOptions) -> Vec<(Option<&'static str>, &'static str)> {
    let mut pairs = Vec::new();
    let mut all_plans: Vec<&str> = Vec::new();
    for (mutant, plans) in offered(options) {
        for plan in plans
            .iter()
            .filter(|p| options.plans.is_empty() || options.plans.iter().any(|o| o == *p))
        {
            if !all_plans.contains(plan) {
                all_plans.push(plan);
            }
            pairs.push((Some(mutant), *plan));
        }
    }
    pairs.extend(all_plans.into_iter().map(|plan| (None, plan)));
    pairs
}

/// Why `options` select no run: the `--plan` names that none of the selected mutants' plans has.
pub fn nothing_to_run(options: &MatrixOptions) -> String {
    let mut offered_plans: Vec<&str> = Vec::new();
    for plan in offered(options).flat_map(|(_, plans)| plans) {
        if !offered_plans.contains(plan) {
            offered_plans.push(plan);
        }
    }
    format!(
        "no run selected: --plan {} is not among the plans of this matrix ({}{})",
        options.plans.join(", --plan "),
        offered_plans.join(", "),
        if options.general {
            ""
        } else {
            "; --general runs the general plans"
        }
    )
}

/// Runs the matrix and writes it. The caller checks first that [`pairs`] selects something ([`nothing_to_run`] says
/// why not).
pub fn run_matrix(options: &MatrixOptions) -> anyhow::Result<MatrixOutcome> {
    let pairs = pairs(options);
    let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let dir = options.store_root.join("matrix").join(&stamp);
    let plans_dir = dir.join("plans");
    std::fs::create_dir_all(&plans_dir).with_context(|| format!("cannot create {}", plans_dir.display()))?;
    let mut cells = Vec::new();
    let mut refs = Vec::new();
    for (mutant, plan_name) in &pairs {
        let (_, plan_ref) = mutant_plan(&plans_dir, plan_name, *mutant, options.time_limit)?;
        refs.push(plan_ref);
        let name = mutant.unwrap_or("correct");
        cells.push(Cell {
            mutant: name.to_string(),
            plan: plan_name.to_string(),
            runs: 0,
            detected: 0,
            unknown: 0,
            median_detection_ms: None,
            caught_by: BTreeMap::new(),
            store_dirs: Vec::new(),
            seeds: Vec::new(),
            detected_seeds: Vec::new(),
        });
    }
    let jobs: Vec<schedule::Cell> = (0..refs.len())
        .flat_map(|plan| {
            (0..options.seeds).map(move |i| schedule::Cell {
                plan,
                seed_index: i,
                seed: options.first_seed + i,
                nodes: None,
                plan_file: None,
            })
        })
        .collect();
    let settings = Settings {
        command: "matrix",
        id: format!("matrix-{stamp}"),
        // Only the rows' tag, and the rows are not recorded in seeds.jsonl: a matrix is a measurement, not a
        // campaign whose failures the store should triage.
        kind: CampaignKind::Campaign,
        store_root: options.store_root.clone(),
        log_dir: dir.join("logs"),
        parallel: options.parallel.max(1),
        retry_failed: 0,
        stop_on_fail: false,
        deadline: None,
        time_limit: None,
        shard: Shard::ALL,
        git_rev: None,
        quiet: options.quiet,
        title: "matrix".to_string(),
        total: Some(jobs.len() as u64),
        run_args: options.run_args.clone(),
    };
    schedule::install_stop_signals();
    let mut detection_ms: Vec<Vec<u64>> = vec![Vec::new(); cells.len()];
    // Runs end in any order when several run at once; the report lists each cell's runs by seed.
    let mut dirs: Vec<Vec<(u64, String)>> = vec![Vec::new(); cells.len()];
    let store_root = options.store_root.clone();
    let ending = schedule::execute(&settings, &refs, jobs.into_iter(), &mut |row| {
        let index = refs
            .iter()
            .position(|r| r.source.source == row.plan_source)
            .context("a run of a plan the matrix did not start")?;
        tally_row(&mut cells[index], &mut detection_ms[index], row, &store_root);
        cells[index].seeds.push(row.seed);
        if let Some(dir) = &row.store_dir {
            dirs[index].push((row.seed, store_root.join(dir).display().to_string()));
        }
        Ok(())
    })?;
    for ((cell, ms), mut dirs) in cells.iter_mut().zip(&mut detection_ms).zip(dirs) {
        ms.sort_unstable();
        cell.median_detection_ms = ms.get(ms.len() / 2).copied();
        dirs.sort_unstable();
        cell.seeds.sort_unstable();
        cell.detected_seeds.sort_unstable();
        cell.store_dirs = dirs.into_iter().map(|(_, dir)| dir).collect();
    }
    write_matrix(&dir, &cells)?;
    Ok(MatrixOutcome {
        cells,
        dir,
        interrupted: ending == Ending::Interrupted,
    })
}

/// The built-in plan `plan_name` with `--bug MUTANT` (none: the correct node) and its fault phase at most
/// `time_limit`, written as `plans_dir/<plan>+<mutant>.yaml`: the plan and its campaign reference.
pub fn mutant_plan(
    plans_dir: &Path,
    plan_name: &str,
    mutant: Option<&str>,
    time_limit: Millis,
) -> anyhow::Result<(crate::plan::Plan, PlanRef)> {
    let mut plan = builtin::load(plan_name).map_err(|e| anyhow::anyhow!("{e}"))?;
    plan.time_limit = Millis(plan.time_limit.0.min(time_limit.0));
    if let Some(bug) = mutant {
        let args = plan.system.adapter_mut().node_args_mut();
        let args = args.ok_or_else(|| anyhow::anyhow!("{plan_name} takes no node arguments for --bug"))?;
        args.extend(["--bug".to_string(), bug.to_string()]);
    }
    let name = mutant.unwrap_or("correct");
    let file = plans_dir.join(format!("{plan_name}+{name}.yaml"));
    std::fs::write(&file, plan.to_yaml()).with_context(|| format!("cannot write {}", file.display()))?;
    let plan_ref = PlanRef {
        name: plan.name.0.clone(),
        label: format!("{plan_name}+{name}"),
        source: PlanSource::resolve(&file.display().to_string()),
        time_limit_ms: plan.time_limit.0,
    };
    Ok((plan, plan_ref))
}

/// Counts one finished run: its results.json when it has one (the checks that caught it, the first evidence), else
/// the scheduler's row (a harness error is `unknown`).
fn tally_row(cell: &mut Cell, detection_ms: &mut Vec<u64>, row: &SeedRow, store_root: &Path) {
    let results = row.store_dir.as_ref().and_then(|dir| {
        let text = std::fs::read_to_string(store_root.join(dir).join("results.json")).ok()?;
        serde_json::from_str::<Results>(&text).ok()
    });
    match results {
        Some(results) if row.verdict != Verdict::Unknown => {
            if results.verdict == Verdict::Invalid {
                cell.detected_seeds.push(row.seed);
            }
            tally(cell, detection_ms, &results)
        }
        _ => {
            cell.runs += 1;
            cell.unknown += 1;
        }
    }
}

fn tally(cell: &mut Cell, detection_ms: &mut Vec<u64>, results: &Results) {
    cell.runs += 1;
    match results.verdict {
        Verdict::Invalid => {
            cell.detected += 1;
            let failing: Vec<_> = results
                .checks
                .iter()
                .filter(|c| c.verdict == Verdict::Invalid)
                .collect();
            for check in &failing {
                *cell.caught_by.entry(check.name.clone()).or_default() += 1;
            }
            if let Some(first_ns) = failing.iter().filter_map(|c| c.evidence_ns).min() {
                detection_ms.push(first_ns / 1_000_000);
            }
        }
        Verdict::Unknown => cell.unknown += 1,
        Verdict::Valid => {}
    }
}

/// The matrix as plain-text tables: per mutant (the verdict), then per (mutant, plan) cell.
pub fn render_table(cells: &[Cell]) -> String {
    let mut out = format!(
        "{:<26} {:>26} {:>12} {}\n",
        "mutant", "seeds caught by some plan", "runs caught", "caught by"
    );
    for line in faultline_reports::matrix::mutant_lines(cells) {
        let plans: Vec<String> = line
            .caught_by_plans
            .iter()
            .map(|(plan, detected, runs)| format!("{plan} {detected}/{runs}"))
            .collect();
        let verdict = match (line.mutant == "correct", line.is_good()) {
            (false, false) => "  MISSED",
            (true, false) => "  FALSE ALARM",
            _ => "",
        };
        out.push_str(&format!(
            "{:<26} {:>26} {:>12} {}{verdict}\n",
            line.mutant,
            format!("{}/{}", line.caught_seeds, line.seeds),
            format!("{}/{}", line.detected, line.runs),
            plans.join(", ")
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "{:<26} {:<30} {:>9} {:>12} {}\n",
        "mutant", "plan", "detected", "median ms", "caught by"
    ));
    for cell in cells {
        let median = cell.median_detection_ms.map_or("-".to_string(), |ms| ms.to_string());
        let unknown = if cell.unknown > 0 {
            format!(" ({} unknown)", cell.unknown)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{:<26} {:<30} {:>9} {:>12} {}{unknown}\n",
            cell.mutant,
            cell.plan,
            format!("{}/{}", cell.detected, cell.runs),
            median,
            cell.caught_by_text()
        ));
    }
    out
}

fn write_matrix(dir: &Path, cells: &[Cell]) -> anyhow::Result<()> {
    let matrix = serde_json::json!({
        "mutants": faultline_reports::matrix::mutant_lines(cells),
        "cells": cells,
    });
    faultline_reports::write_atomic(&dir.join("matrix.json"), &serde_json::to_vec_pretty(&matrix)?)?;
    faultline_reports::write_atomic(
        &dir.join("matrix.html"),
        faultline_reports::matrix::render_html(cells).as_bytes(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(general: bool, only: &[&str]) -> MatrixOptions {
        MatrixOptions {
            seeds: 5,
            time_limit: Millis(40_000),
            store_root: PathBuf::from("store"),
            only: only.iter().map(|m| m.to_string()).collect(),
            first_seed: 1,
            general,
            plans: Vec::new(),
            parallel: 2,
            quiet: true,
            run_args: Vec::new(),
        }
    }

    #[test]
    fn given_general_when_paired_should_run_every_mutant_on_every_general_plan_and_the_correct_node_once_per_plan() {
        let pairs = pairs(&options(true, &[]));
        assert_eq!(pairs.len(), (MUTANTS.len() + 1) * GENERAL_PLANS.len());
        for (mutant, _) in MUTANTS {
            for plan in GENERAL_PLANS {
                assert!(pairs.contains(&(Some(*mutant), *plan)), "{mutant} x {plan}");
            }
        }
        let correct: Vec<_> = pairs.iter().filter(|(m, _)| m.is_none()).map(|(_, p)| *p).collect();
        assert_eq!(correct, GENERAL_PLANS, "the correct node runs last, once per plan");
        // Runs in parallel tell their logs and plan files apart by (plan, mutant).
        let mut labels: Vec<_> = pairs.iter().map(|(m, p)| (*p, m.unwrap_or("correct"))).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), pairs.len());
    }

    #[test]
    fn given_one_mutant_when_paired_should_use_the_plans_written_to_expose_it() {
        let pairs = pairs(&options(false, &["commit-without-quorum"]));
        assert_eq!(
            pairs,
            vec![
                (Some("commit-without-quorum"), "default"),
                (Some("commit-without-quorum"), "reference-power-loss"),
                (None, "default"),
                (None, "reference-power-loss"),
            ]
        );
    }

    #[test]
    fn given_plans_when_paired_should_run_only_those_and_name_what_was_offered_when_none_match() {
        let mut options = options(true, &["no-fsync"]);
        options.plans = vec!["reference-crash-points".into()];
        assert_eq!(
            pairs(&options),
            vec![
                (Some("no-fsync"), "reference-crash-points"),
                (None, "reference-crash-points")
            ]
        );
        options.general = false;
        assert!(
            pairs(&options).is_empty(),
            "no-fsync's own plan is reference-power-loss"
        );
        let message = nothing_to_run(&options);
        assert!(message.contains("--plan reference-crash-points"), "{message}");
        assert!(message.contains("(reference-power-loss; --general"), "{message}");
    }
}
