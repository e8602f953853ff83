//! `faultline matrix --compare guided,uniform`: the measurement behind guided campaigns. For every mutant of the
//! reference node (and the correct node), each strategy runs one campaign per campaign seed over the same plans (the
//! matrix's, `--general` for the general plans) with the same budget of runs; a mutant's campaign stops launching at
//! its first detection (runs already in flight finish and count for cost, not for the detection index), or with
//! `--full-budget` runs every run of its budget, so the share of invalid runs measures each strategy's detection
//! rate per run (the first detection's index rests on one event per seed and moves a lot between measurements). Everything
//! lands under `store/matrix/<UTC time>/`: the plans, each campaign's behaviour log (and a guided one's corpus) in
//! `campaigns/<mutant>-<mode>-s<seed>/`, and `compare.json`, `compare.txt`, `compare.html`
//! ([`faultline_reports::compare`] folds the numbers).
//!
//! The strategies:
//! - `uniform`: blind, as a campaign or the matrix runs today, but no plan favoured: the runs go through the plans in
//!   rounds, each round every plan once in an order shuffled by the campaign seed, each run with a fresh seed (a
//!   swarm plan draws its configuration from it);
//! - `guided`: the guide ([`crate::explore::guide`]): each plan as written once (in an order shuffled by the
//!   campaign seed), then rounds through the plans as uniform's, each run a mutation (or splice) of the entry of
//!   that run's plan with the most energy: the two modes give every plan the same share of runs and differ only in
//!   the configuration each run has.
//!
//! Campaigns run one after another (`--parallel` runs inside each), seeds outermost, so a measurement stopped early
//! has every mutant at the first seeds; at each seed the correct node's campaigns run first, and a mutant's invalid
//! run whose run on the correct node (same plan, seed and configuration) failed too is no detection: the mutant's
//! campaign goes on, and the comparison lists it apart. A bug of the node itself (one showed up this way: a
//! reconfiguration the correct node could not survive failed uniform's run 7 of one seed for the correct node and
//! three mutants alike) would otherwise count as every mutant's detection.

use crate::explore::campaign::explored::Recorder;
use crate::explore::campaign::schedule::{self, Cell, Ending, PlanRef, Settings};
use crate::explore::campaign::space::{seed_at, Shard};
use crate::explore::guide::Guide;
use crate::explore::matrix::{mutant_plan, pairs, MatrixOptions};
use anyhow::Context;
use faultline_reports::compare::{self, CampaignResult};
use faultline_reports::explored::Mode;
use faultline_reports::results::Verdict;
use faultline_reports::seeds::{CampaignKind, SeedRow};
use std::cell::{Cell as Flag, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What `--compare` was asked, beyond the matrix's own options.
pub struct CompareOptions {
    /// The matrix: mutants, plans, time limit, parallelism, store (its `seeds` is the number of campaign seeds).
    pub matrix: MatrixOptions,
    /// The strategies, in order.
    pub modes: Vec<Mode>,
    /// Runs per campaign at most.
    pub runs: u64,
    /// A mutant's campaign runs its whole budget instead of stopping at its first detection (`--full-budget`): the
    /// share of invalid runs is then each strategy's detection rate per run.
    pub full_budget: bool,
    /// The guided campaigns' shots (`--shots`).
    pub shots: crate::explore::guide::moments::ShotMode,
}

/// What a comparison did.
pub struct CompareOutcome {
    /// Every campaign, in the order run.
    pub results: Vec<CampaignResult>,
    /// Where compare.json, compare.txt and compare.html are.
    pub dir: PathBuf,
    /// Ctrl-C stopped it: the results hold the campaigns that finished.
    pub interrupted: bool,
}

/// Runs the comparison (see the module docs).
pub fn run_compare(options: &CompareOptions) -> anyhow::Result<CompareOutcome> {
    let stamp: String = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let dir = options.matrix.store_root.join("matrix").join(&stamp);
    let plans_dir = dir.join("plans");
    std::fs::create_dir_all(&plans_dir).with_context(|| format!("cannot create {}", plans_dir.display()))?;
    // The correct node first, then the mutants in the matrix's order, each with the plans it runs: a mutant's
    // invalid run is held against the correct node's same run (see `shared_with_correct`).
    let mut subjects: Vec<(Option<&str>, Vec<&str>)> = Vec::new();
    for (mutant, plan) in pairs(&options.matrix) {
        match subjects.iter_mut().find(|(m, _)| *m == mutant) {
            Some((_, plans)) => plans.push(plan),
            None => subjects.push((mutant, vec![plan])),
        }
    }
    subjects.sort_by_key(|(mutant, _)| mutant.is_some());
    schedule::install_stop_signals();
    let mut results = Vec::new();
    let mut interrupted = false;
    let no_alarms = HashSet::new();
    'seeds: for k in 0..options.matrix.seeds {
        let campaign_seed = options.matrix.first_seed + k;
        // The runs the correct node failed at this campaign seed, per strategy, by what makes a run that run.
        let mut alarms: HashMap<Mode, HashSet<String>> = HashMap::new();
        for (mutant, plan_names) in &subjects {
            let mut plans = Vec::new();
            let mut refs = Vec::new();
            for plan in plan_names {
                let (plan, plan_ref) = mutant_plan(&plans_dir, plan, *mutant, options.matrix.time_limit)?;
                plans.push(plan);
                refs.push(plan_ref);
            }
            for &mode in &options.modes {
                let subject = Subject {
                    mutant: *mutant,
                    mode,
                    campaign_seed,
                };
                let correct_alarms = alarms.get(&mode).unwrap_or(&no_alarms);
                let (result, ending, failed) =
                    one_campaign(options, &dir, &subject, plans.clone(), &refs, correct_alarms)?;
                if mutant.is_none() {
                    alarms.insert(mode, failed);
                }
                results.push(result);
                write(&dir, &results, options.runs, options.full_budget)?;
                if ending == Ending::Interrupted {
                    interrupted = true;
                    break 'seeds;
                }
            }
        }
    }
    write(&dir, &results, options.runs, options.full_budget)?;
    Ok(CompareOutcome {
        results,
        dir,
        interrupted,
    })
}

/// One campaign's subject.
struct Subject<'a> {
    mutant: Option<&'a str>,
    mode: Mode,
    campaign_seed: u64,
}

impl Subject<'_> {
    fn id(&self) -> String {
        format!(
            "{}-{}-s{}",
            self.mutant.unwrap_or("correct"),
            self.mode.as_str(),
            self.campaign_seed
        )
    }
}

/// One campaign of `subject` over `refs` (whose plans are `plans`); `correct_alarms` are the identities
/// ([`run_identity`]) of the runs the correct node failed in the same strategy and campaign seed. Returns the
/// campaign's numbers, how it ended, and the identities of its invalid runs.
fn one_campaign(
    options: &CompareOptions,
    dir: &Path,
    subject: &Subject,
    plans: Vec<crate::plan::Plan>,
    refs: &[PlanRef],
    correct_alarms: &HashSet<String>,
) -> anyhow::Result<(CampaignResult, Ending, HashSet<String>)> {
    let id = subject.id();
    let campaign_dir = dir.join("campaigns").join(&id);
    let guide = (subject.mode == Mode::Guided)
        .then(|| Guide::new(plans, campaign_dir.join("guide"), &id, subject.campaign_seed).with_shots(options.shots));
    let store_root = &options.matrix.store_root;
    let log = campaign_dir.join(faultline_reports::explored::LOG_FILE);
    let recorder = RefCell::new(Recorder::at(store_root, log.clone(), &id, subject.mode, 0, guide)?);
    let detected = Flag::new(false);
    let stop_at_detection = subject.mutant.is_some() && !options.full_budget;
    let mut rows: Vec<SeedRow> = Vec::new();
    let (mut failed, mut shared) = (HashSet::new(), Vec::new());
    let cells = (0..options.runs).map_while(|run| {
        if detected.get() && stop_at_detection {
            return None;
        }
        next_cell(subject, run, refs.len(), &recorder)
    });
    let settings = Settings {
        command: "matrix",
        id: id.clone(),
        kind: CampaignKind::Campaign,
        store_root: store_root.clone(),
        log_dir: campaign_dir.join("logs"),
        parallel: options.matrix.parallel.max(1),
        retry_failed: 0,
        stop_on_fail: false,
        deadline: None,
        time_limit: None,
        shard: Shard::ALL,
        git_rev: None,
        quiet: options.matrix.quiet,
        title: format!("compare {id}"),
        total: Some(options.runs),
        run_args: options.matrix.run_args.clone(),
    };
    let ending = schedule::execute(&settings, refs, cells, &mut |row| {
        recorder.borrow_mut().record(row)?;
        if row.verdict == Verdict::Invalid {
            let identity = run_identity(&campaign_dir, subject.mode, row);
            if subject.mutant.is_some() && correct_alarms.contains(&identity) {
                tracing::warn!(
                    "{id}: run {} failed, and so did the correct node's same run: not counted as a detection",
                    row.seed_index + 1
                );
                shared.push(row.seed_index);
            } else {
                detected.set(true);
            }
            failed.insert(identity);
        }
        rows.push(row.clone());
        Ok(())
    })?;
    let behaviours = recorder.borrow().seen() as u64;
    let result = tally(subject, &rows, &shared, behaviours, store_root, &log);
    Ok((result, ending, failed))
}

/// What makes a run of a comparison that run, whichever node it ran: its plan and seed and, for a guided run, the
/// configuration the guide chose (its genome file; the genome points into the plans by index, the same for a
/// mutant's plans and the correct node's). Uniform's run `i` is the same run for every subject; a guided one only
/// when both campaigns' guides chose the same configuration (the plans as written, or identical histories of
/// choices).
fn run_identity(campaign_dir: &Path, mode: Mode, row: &SeedRow) -> String {
    let genome = match mode {
        Mode::Uniform => String::new(),
        Mode::Guided => {
            std::fs::read_to_string(Guide::genome_path(&campaign_dir.join("guide"), row.seed_index)).unwrap_or_default()
        }
    };
    format!("{}\n{}\n{genome}", row.plan, row.seed)
}

/// Run `run` of `subject`'s campaign: uniform's plan and seed, or the guide's choice (none when the guide cannot
/// write a plan: the campaign ends there, and the log says why).
fn next_cell(subject: &Subject, run: u64, plan_count: usize, recorder: &RefCell<Recorder>) -> Option<Cell> {
    match subject.mode {
        Mode::Uniform => Some(Cell {
            plan: uniform_plan(subject.campaign_seed, run, plan_count),
            seed_index: run,
            seed: seed_at(subject.campaign_seed, run),
            nodes: None,
            plan_file: None,
        }),
        Mode::Guided => recorder
            .borrow_mut()
            .guide
            .as_mut()?
            .cell(run)
            .map_err(|e| tracing::error!("{}: no run {run}: {e:#}", subject.id()))
            .ok(),
    }
}

/// Uniform's plan for run `run`: rounds of every plan once, each round in an order shuffled by the campaign seed.
fn uniform_plan(campaign_seed: u64, run: u64, plan_count: usize) -> usize {
    use rand::seq::SliceRandom;
    let count = plan_count.max(1) as u64;
    let round = run / count;
    let mut order: Vec<usize> = (0..plan_count.max(1)).collect();
    order.shuffle(&mut faultline_faults::rng::stream(
        seed_at(campaign_seed, round),
        "uniform-round",
    ));
    order[(run % count) as usize]
}

/// A campaign's numbers from its rows: the first detection is the smallest run index that ended invalid, the runs
/// the correct node failed too (`shared`, run indexes) aside.
fn tally(
    subject: &Subject,
    rows: &[SeedRow],
    shared: &[u64],
    behaviours: u64,
    store_root: &Path,
    log: &Path,
) -> CampaignResult {
    let mut rows: Vec<&SeedRow> = rows.iter().collect();
    rows.sort_by_key(|r| r.seed_index);
    let detects = |r: &&&SeedRow| r.verdict == Verdict::Invalid && !shared.contains(&r.seed_index);
    let first = rows.iter().find(detects);
    let cpu = |rows: &[&SeedRow]| rows.iter().filter_map(|r| r.cpu_ms).sum::<u64>();
    CampaignResult {
        mutant: subject.mutant.unwrap_or("correct").to_string(),
        mode: subject.mode,
        campaign_seed: subject.campaign_seed,
        runs: rows.len() as u64,
        detected_at: first.map(|r| r.seed_index + 1),
        cpu_to_detection_ms: first.map(|f| {
            let upto: Vec<&SeedRow> = rows.iter().copied().filter(|r| r.seed_index <= f.seed_index).collect();
            cpu(&upto)
        }),
        cpu_ms: cpu(&rows),
        invalid: rows.iter().filter(detects).count() as u64,
        shared_with_correct: {
            let mut runs: Vec<u64> = shared.iter().map(|i| i + 1).collect();
            runs.sort_unstable();
            runs
        },
        unknown: rows.iter().filter(|r| r.verdict == Verdict::Unknown).count() as u64,
        behaviours,
        caught_by: first.map(|r| format!("{}: {}", r.plan, r.checks_text())),
        detection_dir: first
            .and_then(|r| r.store_dir.as_ref())
            .map(|d| store_root.join(d).display().to_string()),
        log: log.display().to_string(),
    }
}

/// Writes compare.json, compare.txt and compare.html (after every campaign, so a stopped measurement keeps what it
/// measured).
fn write(dir: &Path, results: &[CampaignResult], budget: u64, full_budget: bool) -> anyhow::Result<()> {
    let lines = compare::mutant_lines(results);
    let headline = compare::headline(results, &lines, budget);
    let json = serde_json::json!({"budget_runs": budget, "full_budget": full_budget, "headline": headline,
        "mutants": lines, "campaigns": results});
    faultline_reports::write_atomic(&dir.join("compare.json"), &serde_json::to_vec_pretty(&json)?)?;
    faultline_reports::write_atomic(
        &dir.join("compare.txt"),
        compare::render_text(&lines, &headline, budget, full_budget).as_bytes(),
    )?;
    faultline_reports::write_atomic(
        &dir.join("compare.html"),
        compare::render_html(results, &lines, &headline, budget, full_budget).as_bytes(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_campaign_seeds_when_uniform_picks_plans_should_run_every_plan_once_per_round_in_shuffled_orders() {
        let orders: Vec<Vec<usize>> = (0..4)
            .map(|round| (0..6).map(|i| uniform_plan(7, round * 6 + i, 6)).collect())
            .collect();
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2, 3, 4, 5], "each plan once per round: {order:?}");
        }
        assert!(orders.windows(2).any(|w| w[0] != w[1]), "rounds differ: {orders:?}");
        assert_ne!(
            (0..6).map(|i| uniform_plan(8, i, 6)).collect::<Vec<_>>(),
            orders[0],
            "another campaign seed, another order"
        );
    }

    fn row(plan: &str, seed_index: u64, verdict: Verdict) -> SeedRow {
        serde_json::from_value(serde_json::json!({
            "campaign": "c",
            "plan": plan,
            "plan_source": plan,
            "seed": 900 + seed_index,
            "seed_index": seed_index,
            "verdict": verdict,
            "duration_ms": 1000,
            "cpu_ms": 100,
            "repro": "faultline run",
            "finished_at": "2026-12-06T12:00:00Z",
        }))
        .expect("a seed row")
    }

    #[test]
    fn given_a_mutant_run_the_correct_node_failed_too_when_tallied_should_count_the_next_invalid_run_as_the_detection()
    {
        let subject = Subject {
            mutant: Some("lease-ignores-drift"),
            mode: Mode::Uniform,
            campaign_seed: 3,
        };
        let rows = vec![
            row("default", 0, Verdict::Valid),
            row("reference-membership", 1, Verdict::Invalid),
            row("reference-clock", 2, Verdict::Valid),
            row("reference-clock", 3, Verdict::Invalid),
        ];
        let at = Path::new("/nowhere");
        let result = tally(&subject, &rows, &[1], 10, at, at);
        assert_eq!(result.detected_at, Some(4), "run 2 failed on the correct node too");
        assert_eq!(result.invalid, 1);
        assert_eq!(result.shared_with_correct, vec![2]);
        assert_eq!(
            result.cpu_to_detection_ms,
            Some(400),
            "the cost counts every run up to the detection"
        );
        let unshared = tally(&subject, &rows, &[], 10, at, at);
        assert_eq!((unshared.detected_at, unshared.invalid), (Some(2), 2));
    }

    #[test]
    fn given_runs_of_two_subjects_when_identified_should_match_uniform_by_plan_and_seed_and_guided_by_genome_too() {
        let dir = tempfile::tempdir().unwrap();
        let (mutant, correct) = (dir.path().join("m"), dir.path().join("c"));
        let invalid = row("reference-membership", 6, Verdict::Invalid);
        assert_eq!(
            run_identity(&mutant, Mode::Uniform, &invalid),
            run_identity(&correct, Mode::Uniform, &invalid)
        );
        assert_ne!(
            run_identity(&mutant, Mode::Uniform, &invalid),
            run_identity(
                &mutant,
                Mode::Uniform,
                &row("reference-membership", 7, Verdict::Invalid)
            ),
            "another seed is another run"
        );
        for (campaign, genome) in [
            (&mutant, "{\"base\": 6, \"rate_x\": 1.0}"),
            (&correct, "{\"base\": 6, \"rate_x\": 1.2}"),
        ] {
            let file = Guide::genome_path(&campaign.join("guide"), 6);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, genome).unwrap();
        }
        assert_ne!(
            run_identity(&mutant, Mode::Guided, &invalid),
            run_identity(&correct, Mode::Guided, &invalid),
            "the guides chose other configurations"
        );
        std::fs::write(
            Guide::genome_path(&correct.join("guide"), 6),
            "{\"base\": 6, \"rate_x\": 1.0}",
        )
        .unwrap();
        assert_eq!(
            run_identity(&mutant, Mode::Guided, &invalid),
            run_identity(&correct, Mode::Guided, &invalid)
        );
    }
}
