//! The detection matrix: every mutant of the reference node against the plans that should expose it, and the correct
//! node against the same plans, over several seeds. It answers "does a green nightly mean anything?": each mutant must
//! be caught, the correct node never (no false alarms).
//!
//! Runs are sequential (a 2-core machine runs one cluster well, not several) and land in the store like any run;
//! the matrix itself is written as `matrix.json` and `matrix.html` under `store/matrix/<UTC time>/`.

use crate::builtin;
use crate::run::{run, RunOptions};
use faultline_faults::units::Millis;
use faultline_reports::results::{Results, Verdict};
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
];

/// The general plans: no timing scripted for any bug (timed faults, flaps, triggers, swarm). `--general` measures
/// detection with these only, since a user's own bug has no scripted plan.
pub const GENERAL_PLANS: &[&str] = &["default", "reference-mixed", "reference-swarm", "reference-partition"];

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
}

pub use faultline_reports::matrix::Cell;

/// Runs the matrix and writes it; returns the cells.
pub async fn run_matrix(options: &MatrixOptions) -> anyhow::Result<(Vec<Cell>, PathBuf)> {
    let mut cells = Vec::new();
    let mut all_plans: Vec<&str> = Vec::new();
    for (mutant, plans) in MUTANTS
        .iter()
        .filter(|(m, _)| options.only.is_empty() || options.only.iter().any(|o| o == m))
    {
        let plans: &[&str] = if options.general { GENERAL_PLANS } else { plans };
        for plan in plans.iter() {
            if !all_plans.contains(plan) {
                all_plans.push(plan);
            }
            cells.push(run_cell(options, Some(mutant), plan).await?);
        }
    }
    for plan in all_plans {
        cells.push(run_cell(options, None, plan).await?);
    }
    let dir = write_matrix(&options.store_root, &cells)?;
    Ok((cells, dir))
}

async fn run_cell(options: &MatrixOptions, mutant: Option<&str>, plan_name: &str) -> anyhow::Result<Cell> {
    let name = mutant.unwrap_or("correct");
    let mut cell = Cell {
        mutant: name.to_string(),
        plan: plan_name.to_string(),
        runs: 0,
        detected: 0,
        unknown: 0,
        median_detection_ms: None,
        caught_by: BTreeMap::new(),
        store_dirs: Vec::new(),
    };
    let mut detection_ms = Vec::new();
    for i in 0..options.seeds {
        let mut plan = builtin::load(plan_name).map_err(|e| anyhow::anyhow!("{e}"))?;
        plan.seed = Some(options.first_seed + i);
        plan.time_limit = Millis(plan.time_limit.0.min(options.time_limit.0));
        if let Some(bug) = mutant {
            let args = plan.system.adapter_mut().node_args_mut();
            let args = args.ok_or_else(|| anyhow::anyhow!("{plan_name} takes no node arguments for --bug"))?;
            args.extend(["--bug".to_string(), bug.to_string()]);
        }
        eprintln!(
            "faultline matrix: {name} x {plan_name}, seed {} ({}/{})",
            options.first_seed + i,
            i + 1,
            options.seeds
        );
        let outcome = run(RunOptions {
            plan,
            store_root: options.store_root.clone(),
            quiet: true,
        })
        .await?;
        tally(&mut cell, &mut detection_ms, &outcome.results);
        cell.store_dirs.push(outcome.store_dir.display().to_string());
    }
    detection_ms.sort_unstable();
    cell.median_detection_ms = detection_ms.get(detection_ms.len() / 2).copied();
    Ok(cell)
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

/// The matrix as a plain-text table.
pub fn render_table(cells: &[Cell]) -> String {
    let mut out = format!(
        "{:<26} {:<30} {:>9} {:>12} {}\n",
        "mutant", "plan", "detected", "median ms", "caught by"
    );
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

fn write_matrix(store_root: &Path, cells: &[Cell]) -> anyhow::Result<PathBuf> {
    let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let dir = store_root.join("matrix").join(stamp);
    std::fs::create_dir_all(&dir)?;
    faultline_reports::write_atomic(&dir.join("matrix.json"), &serde_json::to_vec_pretty(cells)?)?;
    faultline_reports::write_atomic(
        &dir.join("matrix.html"),
        faultline_reports::matrix::render_html(cells).as_bytes(),
    )?;
    Ok(dir)
}
