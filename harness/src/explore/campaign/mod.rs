//! Campaigns: `faultline campaign PLAN...` runs plans x seeds (a seed count, or as many as a wall-clock budget
//! allows), up to K at once, reruns failing seeds to tell reproducible failures from flaky ones, records every
//! finished seed in the seed database (`store/seeds.jsonl`) and prints a summary; the store index shows the campaign
//! view. Seeds derive from one campaign seed (`space`), so `--shard I/N` splits the work over machines
//! deterministically and `faultline merge` puts the stores back together. A campaign's state
//! (`store/campaigns/<id>/`) lets `--resume` continue one that was stopped.
//!
//! - `space`: seed derivation and shards;
//! - `state`: the campaign's state file, resume;
//! - `schedule`: the loop that runs children, reruns failures and stops cleanly;
//! - `child`: one run as a `faultline run` child process (why processes: see there);
//! - `view`: the progress view;
//! - `summary`: the summary table and the exit code;
//! - `explored`: what each run explored (its behaviours, new to the campaign or not) in the campaign's behaviour
//!   log, and for a guided campaign (`--guided`) the guide's corpus ([`crate::explore::guide`]).

pub mod child;
pub mod explored;
pub mod schedule;
pub mod space;
pub mod state;
pub mod summary;
pub mod view;

use crate::explore::guide::Guide;
use crate::plan::builtin;
use crate::plan::{Plan, PlanError};
use anyhow::Context;
use faultline_faults::units::Millis;
use faultline_reports::seeds::{self, CampaignKind, SeedRow};
use faultline_reports::triage::{self, Triage};
use schedule::{Cell, Ending, PlanRef, Settings};
use space::{seed_at, Shard};
use state::{CampaignState, PlanSource, Status};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Seeds per plan when neither `--seeds` nor `--budget` is given.
pub const DEFAULT_SEEDS: u64 = 10;

/// Why a campaign could not run: bad input (exit 254) or a harness failure (exit 255).
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// Bad arguments, a bad plan, nothing to resume.
    #[error("{0}")]
    Input(String),
    /// Anything else.
    #[error("{0:#}")]
    Harness(#[from] anyhow::Error),
}

impl From<PlanError> for CampaignError {
    fn from(e: PlanError) -> Self {
        CampaignError::Input(format!("bad plan: {e}"))
    }
}

/// What `faultline campaign` was asked.
#[derive(Debug, Clone, Default)]
pub struct CampaignOptions {
    /// Plan files or built-in plan names.
    pub plans: Vec<String>,
    /// Seeds per plan.
    pub seeds: Option<u64>,
    /// Wall-clock budget.
    pub budget: Option<Millis>,
    /// Concurrent runs (default: [`default_parallel`]).
    pub parallel: Option<usize>,
    /// Stop launching after the first failure.
    pub stop_on_fail: bool,
    /// Reruns of a failing seed.
    pub retry_failed: u64,
    /// This machine's part of the seed space.
    pub shard: Option<Shard>,
    /// The campaign seed: a number, or any text (hashed), e.g. a CI run id every shard shares.
    pub campaign_seed: Option<String>,
    /// Campaign id (default `s<campaign seed>`).
    pub id: Option<String>,
    /// Fault-phase override for every run.
    pub time_limit: Option<Millis>,
    /// The system's git revision, for the seed database.
    pub git_rev: Option<String>,
    /// Retention: keep this many passing runs per plan, prune older passing ones at the end.
    pub keep_passing: Option<u64>,
    /// `Some(None)`: resume the latest unfinished campaign; `Some(Some(id))`: that one.
    pub resume: Option<Option<String>>,
    /// Print the runs the campaign would do and stop.
    pub dry_run: bool,
    /// Store root.
    pub store_root: PathBuf,
    /// No progress view.
    pub quiet: bool,
    /// Choose each run by the guide (a mutation of the corpus) instead of each plan with fresh seeds.
    pub guided: bool,
    /// A guided campaign's shots (`--shots`; none: the default, both kinds aimed).
    pub shots: Option<crate::explore::guide::moments::ShotMode>,
}

/// K that fits the machine: a 3-node cluster and its harness keep about two cores busy.
pub fn default_parallel() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// A campaign seed from text: a number is itself, anything else its xxh3 hash (so `--campaign-seed $CI_RUN_ID`
/// gives every shard of one CI run the same seeds).
pub fn parse_campaign_seed(text: &str) -> u64 {
    text.trim()
        .parse::<u64>()
        .unwrap_or_else(|_| xxhash_rust::xxh3::xxh3_64(text.trim().as_bytes()))
}

/// What a campaign did.
pub struct Outcome {
    /// Its state after this invocation.
    pub state: CampaignState,
    /// Why this invocation stopped.
    pub ending: Ending,
    /// Every row of the campaign (all invocations), with its failure class.
    pub rows: Vec<(SeedRow, Option<seeds::FailureClass>)>,
    /// The failure classes as of this campaign (none when it recorded no seed).
    pub triage: Option<Triage>,
    /// Wall time of this invocation.
    pub elapsed: Duration,
    /// Passing run folders pruned by retention.
    pub pruned: usize,
    /// The store index.
    pub index: PathBuf,
    /// The campaign's `junit.xml` (a test case per seed), beside its state file.
    pub junit: PathBuf,
    /// Distinct behaviours the campaign's runs showed, over every invocation.
    pub behaviours: usize,
}

/// One planned run of `--dry-run`.
pub struct PlannedRun {
    /// Plan name.
    pub plan: String,
    /// Seed index.
    pub seed_index: u64,
    /// Run seed.
    pub seed: u64,
    /// Repro command.
    pub command: String,
}

/// Loads a campaign's plan: a file or a built-in name, with the campaign's overrides, validated.
pub fn load_plan(source: &PlanSource, time_limit: Option<Millis>, nodes: Option<u64>) -> Result<Plan, PlanError> {
    let mut plan = match &source.path {
        Some(path) => Plan::load(path)?,
        None => builtin::load(&source.source)?,
    };
    if let Some(limit) = time_limit {
        plan.time_limit = limit;
    }
    if let Some(nodes) = nodes {
        plan.system.set_nodes(nodes as usize);
        plan.validate(&format!("{} with {nodes} nodes", source.source))?;
    }
    Ok(plan)
}

fn plan_refs(state: &CampaignState) -> Result<Vec<PlanRef>, CampaignError> {
    let mut refs: Vec<PlanRef> = Vec::new();
    for source in &state.plans {
        let plan = load_plan(source, state.time_limit, None)?;
        if let Some(other) = refs.iter().find(|r| r.name == plan.name.0) {
            return Err(CampaignError::Input(format!(
                "plans `{}` and `{}` are both named `{}`: a campaign tells plans apart by name",
                other.source.source, source.source, plan.name
            )));
        }
        refs.push(PlanRef {
            name: plan.name.0.clone(),
            label: plan.name.0.clone(),
            source: source.clone(),
            time_limit_ms: plan.time_limit.0,
        });
    }
    Ok(refs)
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

fn check_id(id: &str) -> Result<(), CampaignError> {
    let ok = !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(CampaignError::Input(format!(
            "campaign id `{id}` must be 1-100 letters, digits, `-`, `_`, `.` (it names a folder)"
        )))
    }
}

/// The state of a new campaign from the options.
fn new_state(options: &CampaignOptions) -> Result<CampaignState, CampaignError> {
    if options.plans.is_empty() {
        return Err(CampaignError::Input(
            "name at least one plan (a file or a built-in name), or --resume".into(),
        ));
    }
    if options.seeds == Some(0) || options.budget.is_some_and(|b| b.0 == 0) {
        return Err(CampaignError::Input("--seeds and --budget must be > 0".into()));
    }
    if options.parallel == Some(0) || options.time_limit.is_some_and(|t| t.0 == 0) {
        return Err(CampaignError::Input("--parallel and --time-limit must be > 0".into()));
    }
    let shard = options.shard.unwrap_or(Shard::ALL);
    if !shard.is_whole() && options.campaign_seed.is_none() {
        return Err(CampaignError::Input(
            "a sharded campaign needs --campaign-seed (the same on every shard) so that all shards derive the same \
             seeds"
                .into(),
        ));
    }
    let (campaign_seed, seed_text) = match &options.campaign_seed {
        Some(text) => (parse_campaign_seed(text), text.trim().to_string()),
        None => {
            let seed = u64::from(rand::random::<u32>());
            (seed, seed.to_string())
        }
    };
    let id = match &options.id {
        Some(id) => id.clone(),
        None => {
            let safe: String = seed_text
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
                .take(60)
                .collect();
            state::fresh_id(&options.store_root, &format!("s{safe}"), shard)
        }
    };
    check_id(&id)?;
    if state::state_path(&options.store_root, &id, shard).exists() && !options.dry_run {
        return Err(CampaignError::Input(format!(
            "campaign `{id}` (shard {shard}) exists in {}: continue it with --resume {id}, or pick another --id",
            options.store_root.display()
        )));
    }
    Ok(CampaignState {
        id,
        kind: CampaignKind::Campaign,
        campaign_seed,
        plans: options.plans.iter().map(|p| PlanSource::resolve(p)).collect(),
        seeds: options.seeds.or(if options.budget.is_none() {
            Some(DEFAULT_SEEDS)
        } else {
            None
        }),
        budget: options.budget,
        spent_ms: 0,
        time_limit: options.time_limit,
        retry_failed: options.retry_failed,
        stop_on_fail: options.stop_on_fail,
        parallel: options.parallel.unwrap_or_else(default_parallel),
        shard,
        git_rev: options.git_rev.clone(),
        keep_passing: options.keep_passing,
        guided: options.guided,
        shots: options.shots.unwrap_or_default(),
        started_at: now_rfc3339(),
        updated_at: now_rfc3339(),
        status: Status::Running,
    })
}

/// The state of a campaign to resume; only `--parallel`, `--quiet` and `--store` apply on top of it.
fn resumed_state(options: &CampaignOptions, id: Option<&str>) -> Result<CampaignState, CampaignError> {
    let conflicting = !options.plans.is_empty()
        || options.guided
        || options.shots.is_some()
        || options.seeds.is_some()
        || options.budget.is_some()
        || options.campaign_seed.is_some()
        || options.time_limit.is_some()
        || options.id.is_some();
    if conflicting {
        return Err(CampaignError::Input(
            "--resume continues a campaign with its own plans and settings: drop the plans, --guided, --shots, --seeds, \
             --budget, --campaign-seed, --time-limit and --id (only --parallel, --quiet, --shard and --store apply)"
                .into(),
        ));
    }
    let mut state = state::find_resumable(&options.store_root, id, options.shard)
        .map_err(|e| CampaignError::Input(format!("{e:#}")))?;
    if let Some(parallel) = options.parallel {
        state.parallel = parallel.max(1);
    }
    Ok(state)
}

/// (plan name, seed index, nodes) of every seed this campaign has recorded.
fn done_cells(store_root: &Path, id: &str) -> anyhow::Result<BTreeSet<(String, u64, Option<u64>)>> {
    let file = seeds::read_seeds(store_root)?;
    Ok(file
        .rows
        .iter()
        .filter(|r| r.campaign == id)
        .map(SeedRow::cell)
        .collect())
}

/// The campaign's cells in run order (for each seed index of the shard, every plan), without the done ones.
fn cells<'a>(
    state: &'a CampaignState,
    plans: &'a [PlanRef],
    done: &'a BTreeSet<(String, u64, Option<u64>)>,
) -> impl Iterator<Item = Cell> + 'a {
    state.shard.indices(state.seeds).flat_map(move |seed_index| {
        plans.iter().enumerate().filter_map(move |(plan, r)| {
            (!done.contains(&(r.name.clone(), seed_index, None))).then_some(Cell {
                plan,
                seed_index,
                seed: seed_at(state.campaign_seed, seed_index),
                nodes: None,
                plan_file: None,
            })
        })
    })
}

/// A guided campaign's guide over its plans (with the campaign's time limit), keeping its files under the campaign.
fn new_guide(state: &CampaignState, store_root: &Path) -> Result<Guide, CampaignError> {
    let plans = state
        .plans
        .iter()
        .map(|source| load_plan(source, state.time_limit, None))
        .collect::<Result<Vec<Plan>, PlanError>>()?;
    let shard = (!state.shard.is_whole()).then_some((state.shard.index, state.shard.count));
    let dir = Guide::dir_of(store_root, &state.id, shard);
    Ok(Guide::new(plans, dir, &state.id, state.campaign_seed).with_shots(state.shots))
}

/// A guided campaign's run indices not yet recorded: `seeds` per plan in all, this shard's share of them (without
/// end under a budget).
fn guided_indices<'a>(
    state: &CampaignState,
    plan_count: usize,
    done: &'a BTreeSet<u64>,
) -> impl Iterator<Item = u64> + 'a {
    let total = state.seeds.map(|n| n * plan_count as u64);
    state.shard.indices(total).filter(move |i| !done.contains(i))
}

/// A guided campaign's cells: each run's configuration chosen by the guide when a slot frees up for it, so it knows
/// every run that finished before.
fn guided_cells<'a>(
    state: &'a CampaignState,
    plans: &'a [PlanRef],
    done: &'a BTreeSet<u64>,
    recorder: &'a RefCell<explored::Recorder>,
) -> impl Iterator<Item = Cell> + 'a {
    guided_indices(state, plans.len(), done).map_while(move |run| {
        let mut recorder = recorder.borrow_mut();
        recorder
            .guide
            .as_mut()?
            .cell(run)
            .map_err(|e| tracing::error!("guided campaign {}: no run {run}: {e:#}", state.id))
            .ok()
    })
}

/// The runs a campaign would do (`--dry-run`): needs a seed count.
pub fn plan_runs(options: &CampaignOptions) -> Result<Vec<PlannedRun>, CampaignError> {
    let state = match &options.resume {
        Some(id) => resumed_state(options, id.as_deref())?,
        None => new_state(options)?,
    };
    if state.seeds.is_none() {
        return Err(CampaignError::Input(
            "--dry-run lists a seed count's runs: give --seeds".into(),
        ));
    }
    if state.guided {
        return Err(CampaignError::Input(
            "a guided campaign chooses each run from the runs before it: --dry-run lists uniform campaigns only".into(),
        ));
    }
    let plans = plan_refs(&state)?;
    let done = done_cells(&options.store_root, &state.id)?;
    Ok(cells(&state, &plans, &done)
        .map(|cell| {
            let plan = &plans[cell.plan];
            let request = child::RunRequest {
                plan_arg: plan.source.source.clone(),
                seed: cell.seed,
                time_limit: state.time_limit.map(|t| t.to_string()),
                nodes: None,
                extra: Vec::new(),
            };
            let mut words = vec!["faultline".into(), "run".into(), plan.source.source.clone()];
            words.extend(request.option_args());
            PlannedRun {
                plan: plan.name.clone(),
                seed_index: cell.seed_index,
                seed: cell.seed,
                command: child::shell_line(&words),
            }
        })
        .collect())
}

/// Runs (or resumes) a campaign to its end, a stop, its budget or a first failure with `--stop-on-fail`.
pub fn run_campaign(options: &CampaignOptions) -> Result<Outcome, CampaignError> {
    let mut state = match &options.resume {
        Some(id) => resumed_state(options, id.as_deref())?,
        None => new_state(options)?,
    };
    let plans = plan_refs(&state)?;
    std::fs::create_dir_all(&options.store_root)
        .with_context(|| format!("cannot create the store {}", options.store_root.display()))?;
    state.status = Status::Running;
    state.updated_at = now_rfc3339();
    state.save(&options.store_root)?;
    let done = done_cells(&options.store_root, &state.id)?;
    let done_runs: BTreeSet<u64> = done.iter().map(|(_, index, _)| *index).collect();
    let guide = match state.guided {
        true => Some(new_guide(&state, &options.store_root)?),
        false => None,
    };
    let recorder = RefCell::new(explored::Recorder::open(&options.store_root, &state, guide)?);
    let total = state.seeds.map(|_| match state.guided {
        true => guided_indices(&state, plans.len(), &done_runs).count() as u64,
        false => cells(&state, &plans, &done).count() as u64,
    });
    let left_ms = state.budget.map(|b| b.0.saturating_sub(state.spent_ms));
    let started = Instant::now();
    let settings = Settings {
        command: "campaign",
        id: state.id.clone(),
        kind: CampaignKind::Campaign,
        store_root: options.store_root.clone(),
        log_dir: state::campaigns_dir(&options.store_root).join(&state.id).join("logs"),
        parallel: state.parallel,
        retry_failed: state.retry_failed,
        stop_on_fail: state.stop_on_fail,
        deadline: left_ms.map(|ms| started + Duration::from_millis(ms)),
        time_limit: state.time_limit,
        shard: state.shard,
        git_rev: state.git_rev.clone(),
        quiet: options.quiet,
        title: format!("{}campaign {}", if state.guided { "guided " } else { "" }, state.id),
        total,
        run_args: Vec::new(),
    };
    schedule::install_stop_signals();
    let store_root = options.store_root.clone();
    let work: Box<dyn Iterator<Item = Cell> + '_> = match state.guided {
        true => Box::new(guided_cells(&state, &plans, &done_runs, &recorder)),
        false => Box::new(cells(&state, &plans, &done)),
    };
    let ending = schedule::execute(&settings, &plans, work, &mut |row| {
        seeds::append_seed(&store_root, row).context("recording a seed in seeds.jsonl")?;
        recorder.borrow_mut().record(row).map(|_| ())
    })?;
    state.spent_ms += started.elapsed().as_millis() as u64;
    state.updated_at = now_rfc3339();
    state.status = match ending {
        Ending::Finished => Status::Finished,
        Ending::Interrupted => Status::Interrupted,
        Ending::StoppedOnFail => Status::StoppedOnFail,
        Ending::BudgetSpent => Status::BudgetSpent,
    };
    state.save(&options.store_root)?;
    let behaviours = recorder.borrow().seen();
    let mut outcome = finish(state, ending, started.elapsed(), &options.store_root)?;
    outcome.behaviours = behaviours;
    Ok(outcome)
}

/// Retention, the index, and the campaign's rows and failure classes for the summary.
fn finish(
    state: CampaignState,
    ending: Ending,
    elapsed: Duration,
    store_root: &Path,
) -> Result<Outcome, CampaignError> {
    let pruned = match state.keep_passing {
        Some(keep) => crate::run::store::prune_passing(store_root, keep)?.len(),
        None => 0,
    };
    let index = faultline_reports::write_index(store_root)?;
    let file = seeds::read_seeds(store_root)?;
    let notes = triage::read_notes(store_root).unwrap_or_else(|e| {
        tracing::warn!("the class table shows no notes: {e}");
        triage::Notes::new()
    });
    let triage = triage::triage(&file.rows, Some(&state.id), &notes);
    let classes = seeds::classify(&file.rows);
    let rows: Vec<(SeedRow, Option<seeds::FailureClass>)> = file
        .rows
        .into_iter()
        .zip(classes)
        .filter(|(row, _)| row.campaign == state.id)
        .collect();
    let junit = write_junit(store_root, &state, &rows)?;
    Ok(Outcome {
        state,
        ending,
        rows,
        triage,
        elapsed,
        pruned,
        index,
        junit,
        behaviours: 0,
    })
}

/// `store/campaigns/<id>/junit.xml` (`junit-shard<I>of<N>.xml` for one shard): every seed the campaign recorded, in
/// every invocation so far, as a test case of its own.
fn write_junit(
    store_root: &Path,
    state: &CampaignState,
    rows: &[(SeedRow, Option<seeds::FailureClass>)],
) -> Result<PathBuf, CampaignError> {
    let name = if state.shard.is_whole() {
        "junit.xml".to_string()
    } else {
        format!("junit-shard{}of{}.xml", state.shard.index, state.shard.count)
    };
    let path = state::campaigns_dir(store_root).join(&state.id).join(name);
    let xml = faultline_reports::junit::campaign(&state.id, rows.iter().map(|(row, _)| row));
    faultline_reports::write_atomic(&path, xml.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

impl From<faultline_reports::ReportError> for CampaignError {
    fn from(e: faultline_reports::ReportError) -> Self {
        CampaignError::Harness(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_reports::results::Verdict;

    fn row(campaign: &str, seed_index: u64, verdict: Verdict) -> SeedRow {
        serde_json::from_value(serde_json::json!({
            "campaign": campaign,
            "plan": "default",
            "plan_source": "default",
            "seed": 500 + seed_index,
            "seed_index": seed_index,
            "verdict": verdict,
            "failing_check": (verdict != Verdict::Valid).then_some("boot"),
            "first_error": (verdict != Verdict::Valid).then_some("n2 refused to boot"),
            "duration_ms": 1000,
            "repro": format!("faultline run default --seed {}", 500 + seed_index),
            "finished_at": "2026-12-01T15:00:00Z",
        }))
        .expect("a seed row")
    }

    #[test]
    fn given_a_finished_campaign_when_finishing_should_write_its_junit_with_a_case_per_seed_of_that_campaign_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let options = CampaignOptions {
            plans: vec!["default".into()],
            seeds: Some(3),
            campaign_seed: Some("11".into()),
            store_root: store.clone(),
            ..CampaignOptions::default()
        };
        let state = new_state(&options).unwrap();
        state.save(&store).unwrap();
        for (i, verdict) in [Verdict::Valid, Verdict::Invalid, Verdict::Unknown]
            .into_iter()
            .enumerate()
        {
            seeds::append_seed(&store, &row(&state.id, i as u64, verdict)).unwrap();
        }
        seeds::append_seed(&store, &row("another-campaign", 0, Verdict::Invalid)).unwrap();
        let outcome = finish(state, Ending::Finished, Duration::ZERO, &store).unwrap();
        assert_eq!(outcome.junit, store.join("campaigns/s11/junit.xml"));
        let xml = std::fs::read_to_string(&outcome.junit).unwrap();
        assert!(
            xml.contains(
                "<testsuite name=\"faultline.campaign.s11\" tests=\"3\" skipped=\"0\" errors=\"1\" failures=\"1\""
            ),
            "{xml}"
        );
        assert!(xml.contains("<failure message=\"boot: n2 refused to boot\""), "{xml}");
        assert!(
            xml.contains("<property name=\"repro\" value=\"faultline run default --seed 502\"/>"),
            "{xml}"
        );
        let summary = outcome.render_summary();
        assert!(summary.contains("junit: "));
        let triage = outcome.triage.as_ref().expect("the campaign recorded seeds");
        assert_eq!(triage.campaign, "s11", "classes as of this campaign, not the other one");
        // `another-campaign` recorded the same failure at the same time and orders first by name: the class is known.
        assert!(
            summary
                .contains("faultline triage: campaign s11: 3 seed(s), 2 failing; 1 class(es): 0 new, 1 known, 0 gone"),
            "{summary}"
        );
        assert!(summary.contains("repro: faultline run default --seed 501"), "{summary}");
    }
}
