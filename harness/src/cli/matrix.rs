//! `faultline matrix`: every mutant of the reference node against the plans that should expose it.

use super::{parse_millis, Ended, Failed, Outcome};
use clap::builder::PossibleValue;
use faultline_faults::units::Millis;
use serde_json::json;
use std::path::PathBuf;

/// `faultline matrix` arguments.
#[derive(clap::Args)]
pub struct MatrixArgs {
    /// Seeds per cell.
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// Upper bound on each run's fault phase.
    #[arg(long, value_parser = parse_millis, default_value = "60s")]
    pub time_limit: Millis,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub first_seed: u64,
    /// Only these mutants (repeatable).
    #[arg(long = "mutant", value_parser = mutant_names())]
    pub mutants: Vec<String>,
    /// Run every mutant (and the correct node) against the general plans (default, reference-mixed,
    /// reference-swarm, reference-partition, reference-crash-points, reference-corruption, reference-membership:
    /// nothing scripted for a bug) instead of the plans written to expose each.
    #[arg(long)]
    pub general: bool,
    /// Only this plan of the matrix (repeatable), e.g. a general plan just added.
    #[arg(long = "plan", value_name = "PLAN")]
    pub plans: Vec<String>,
    /// Runs at once (each run is a child `faultline run`; a reference cluster at the general plans' rates keeps
    /// well under one core busy).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub parallel: u64,
    /// Store folder.
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// No progress view.
    #[arg(long)]
    pub quiet: bool,
    /// Compare search strategies instead (`guided,uniform`): per mutant and the correct node, each strategy runs a
    /// campaign per seed (--seeds is the number of campaign seeds) over the same plans, at most --runs runs, a
    /// mutant's stopping at its first detection; writes compare.json, compare.txt and compare.html.
    #[arg(long, value_delimiter = ',', value_parser = ["guided", "uniform"])]
    pub compare: Vec<String>,
    /// Runs per campaign of --compare.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub runs: u64,
    /// With --compare: every mutant's campaign runs all its --runs instead of stopping at its first detection, so
    /// the share of invalid runs is each strategy's detection rate per run (steadier than the first detection).
    #[arg(long, requires = "compare")]
    pub full_budget: bool,
    /// With --compare: the guided campaigns' shots: `both` (timed shots aimed at the least shown fault contexts and
    /// shots anchored to the log lines that mark state changes), `timed`, `anchored`, `random` (both kinds, chosen at
    /// random) or `none` (the ablations in the README).
    #[arg(long, value_enum, default_value = "both", requires = "compare")]
    pub shots: crate::explore::guide::moments::ShotMode,
    /// Print the detection matrix (matrix.json: per mutant and per cell) on stdout at the end (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Every run on hosts, as `faultline run --hosts` (one run at a time: a host holds one run).
    #[command(flatten)]
    pub hosts: super::hosts::OnHosts,
}

/// `faultline matrix --mutant`: the mutants of the reference node, each with the plans that should expose it.
fn mutant_names() -> clap::builder::PossibleValuesParser {
    let values = crate::explore::matrix::MUTANTS
        .iter()
        .map(|(name, plans)| PossibleValue::new(*name).help(format!("exposed by {}", plans.join(", "))));
    clap::builder::PossibleValuesParser::new(values)
}

/// `faultline matrix`.
pub(super) fn command(args: MatrixArgs) -> Outcome {
    if args.hosts.hosts.is_some() && args.parallel > 1 {
        return Err(Failed::bad_input(
            "faultline matrix: --hosts runs one run at a time (a host holds one run: its nodes' ports are fixed); \
             drop --parallel, or give each parallel matrix hosts of its own"
                .to_string(),
        ));
    }
    let options = crate::explore::matrix::MatrixOptions {
        seeds: args.seeds,
        time_limit: args.time_limit,
        store_root: args.store,
        only: args.mutants,
        first_seed: args.first_seed,
        general: args.general,
        plans: args.plans,
        parallel: args.parallel as usize,
        quiet: args.quiet,
        run_args: args.hosts.run_args("faultline matrix")?,
    };
    if args.compare.is_empty() {
        return matrix_command(&options);
    }
    let modes = args
        .compare
        .iter()
        .map(|m| match m.as_str() {
            "guided" => faultline_reports::explored::Mode::Guided,
            _ => faultline_reports::explored::Mode::Uniform,
        })
        .collect();
    compare_command(&crate::explore::compare::CompareOptions {
        matrix: options,
        modes,
        runs: args.runs,
        full_budget: args.full_budget,
        shots: args.shots,
    })
}

fn compare_command(options: &crate::explore::compare::CompareOptions) -> Outcome {
    if crate::explore::matrix::pairs(&options.matrix).is_empty() {
        let why = crate::explore::matrix::nothing_to_run(&options.matrix);
        return Err(Failed::bad_input(format!("faultline matrix: {why}")));
    }
    match crate::explore::compare::run_compare(options) {
        Ok(outcome) => {
            let text = std::fs::read_to_string(outcome.dir.join("compare.txt")).unwrap_or_default();
            print!("{text}");
            println!("faultline matrix: {}", outcome.dir.join("compare.html").display());
            let json = std::fs::read(outcome.dir.join("compare.json"))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .unwrap_or_default();
            if outcome.interrupted {
                eprintln!("faultline matrix: interrupted; the comparison holds the campaigns that finished");
                return Ok(Ended::with(130, &json));
            }
            Ok(Ended::with(0, &json))
        }
        Err(e) => Err(Failed::harness(format!("faultline matrix: harness error: {e:#}"))),
    }
}

fn matrix_command(options: &crate::explore::matrix::MatrixOptions) -> Outcome {
    if crate::explore::matrix::pairs(options).is_empty() {
        let why = crate::explore::matrix::nothing_to_run(options);
        return Err(Failed::bad_input(format!("faultline matrix: {why}")));
    }
    match crate::explore::matrix::run_matrix(options) {
        Ok(outcome) => {
            let cells = &outcome.cells;
            print!("{}", crate::explore::matrix::render_table(cells));
            println!("faultline matrix: {}", outcome.dir.join("matrix.html").display());
            // Per mutant: caught when some plan caught it (a plan without partitions may miss a quorum bug).
            let lines = faultline_reports::matrix::mutant_lines(cells);
            let missed = lines.iter().any(|l| l.mutant != "correct" && !l.is_good());
            let false_alarm = lines.iter().any(|l| l.mutant == "correct" && !l.is_good());
            let summary = json!({
                "dir": outcome.dir.display().to_string(),
                "interrupted": outcome.interrupted,
                "missed": missed,
                "false_alarm": false_alarm,
                "mutants": lines,
                "cells": cells,
            });
            if outcome.interrupted {
                eprintln!("faultline matrix: interrupted; the matrix holds the runs that finished");
                return Ok(Ended::with(130, &summary));
            }
            Ok(Ended::with(u8::from(missed || false_alarm), &summary))
        }
        Err(e) => Err(Failed::harness(format!("faultline matrix: harness error: {e:#}"))),
    }
}
