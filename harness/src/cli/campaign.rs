//! `faultline campaign`: plans x seeds, K runs at once, failing seeds rerun, every seed in the seed database.

use super::{parse_millis, Ended, Failed, Outcome};
use faultline_faults::units::Millis;
use serde_json::{json, Value};
use std::path::PathBuf;

/// `faultline campaign` arguments.
#[derive(clap::Args)]
pub struct CampaignArgs {
    /// Plan files or built-in plan names.
    pub plans: Vec<String>,
    /// Seeds per plan (default 10 when there is no --budget).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Wall-clock budget, e.g. 2h: no run is started that would not end within it.
    #[arg(long, value_parser = parse_millis)]
    pub budget: Option<Millis>,
    /// Concurrent runs (default: half the cores, at least 1).
    #[arg(long)]
    pub parallel: Option<usize>,
    /// Stop starting new seeds after the first failure.
    #[arg(long)]
    pub stop_on_fail: bool,
    /// Rerun a failing seed up to M times: reproducible when a rerun fails the same check again, else flaky.
    #[arg(long, default_value_t = 1)]
    pub retry_failed: u64,
    /// Run only shard I of N of the seed space (needs --campaign-seed, the same on every shard).
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<crate::explore::campaign::space::Shard>,
    /// Campaign seed every run seed derives from: a number, or any text (hashed), e.g. a CI run id.
    #[arg(long)]
    pub campaign_seed: Option<String>,
    /// Campaign id (default: s<campaign seed>).
    #[arg(long)]
    pub id: Option<String>,
    /// Override every plan's fault-phase length, e.g. 30s.
    #[arg(long, value_parser = parse_millis)]
    pub time_limit: Option<Millis>,
    /// The system's git revision, recorded with every seed.
    #[arg(long)]
    pub git_rev: Option<String>,
    /// Retention: keep the newest N passing runs per plan, prune older passing runs (never failing ones).
    #[arg(long)]
    pub keep_passing: Option<u64>,
    /// After the campaign, shrink one seed of each new failure class to a minimal repro (`faultline shrink`), all
    /// within --shrink-budget; the campaign view lists each shrunk repro beside its seed's.
    #[arg(long)]
    pub shrink_failures: bool,
    /// Total wall-clock budget of --shrink-failures, shared by the new classes.
    #[arg(long, default_value = "1h", value_parser = parse_millis)]
    pub shrink_budget: Millis,
    /// Guided: each run's configuration is a mutation or splice of the corpus (runs that showed behaviours no run
    /// had shown), chosen by energy, instead of each plan with fresh seeds; --seeds N runs N per plan in all.
    #[arg(long)]
    pub guided: bool,
    /// With --guided: which shots its runs get: `both` (the default: timed shots aimed at the least shown fault
    /// contexts and shots anchored to the log lines that mark state changes), `timed`, `anchored`, `random` (both
    /// kinds, chosen at random) or `none`.
    #[arg(long, value_enum, requires = "guided")]
    pub shots: Option<crate::explore::guide::moments::ShotMode>,
    /// Continue a stopped campaign (the latest unfinished one, or ID).
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "ID")]
    pub resume: Option<String>,
    /// Print the runs (plan, seed, repro command) and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Store folder.
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// No progress view and no per-run lines.
    #[arg(long)]
    pub quiet: bool,
    /// Print the campaign summary (or with --dry-run the planned runs) on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

fn parse_shard(text: &str) -> Result<crate::explore::campaign::space::Shard, String> {
    text.parse()
}

pub(super) fn campaign_error(command: &str, e: crate::explore::campaign::CampaignError) -> Failed {
    use crate::explore::campaign::CampaignError;
    match e {
        CampaignError::Input(message) => Failed::bad_input(format!("faultline {command}: {message}")),
        CampaignError::Harness(e) => Failed::harness(format!("faultline {command}: harness error: {e:#}")),
    }
}

/// `faultline campaign`.
pub(super) fn command(args: CampaignArgs) -> Outcome {
    let options = crate::explore::campaign::CampaignOptions {
        plans: args.plans,
        seeds: args.seeds,
        budget: args.budget,
        parallel: args.parallel,
        stop_on_fail: args.stop_on_fail,
        retry_failed: args.retry_failed,
        shard: args.shard,
        campaign_seed: args.campaign_seed,
        id: args.id,
        time_limit: args.time_limit,
        git_rev: args.git_rev,
        keep_passing: args.keep_passing,
        resume: args.resume.map(|id| Some(id).filter(|id| !id.is_empty())),
        dry_run: args.dry_run,
        store_root: args.store,
        quiet: args.quiet,
        guided: args.guided,
        shots: args.shots,
    };
    if options.dry_run {
        let runs = crate::explore::campaign::plan_runs(&options).map_err(|e| campaign_error("campaign", e))?;
        for run in &runs {
            println!("{}\t{}\t{}\t{}", run.plan, run.seed_index, run.seed, run.command);
        }
        let planned: Vec<Value> = runs
            .iter()
            .map(|run| json!({"plan": run.plan, "seed_index": run.seed_index, "seed": run.seed, "repro": run.command}))
            .collect();
        return Ok(Ended::with(0, &json!({ "runs": planned })));
    }
    let outcome = crate::explore::campaign::run_campaign(&options).map_err(|e| campaign_error("campaign", e))?;
    print!("{}", outcome.render_summary());
    if args.shrink_failures && outcome.ending != crate::explore::campaign::schedule::Ending::Interrupted {
        let parallel = options
            .parallel
            .unwrap_or_else(crate::explore::campaign::default_parallel);
        for (class, result) in
            crate::explore::shrink::new_classes(&outcome, &options.store_root, args.shrink_budget.duration(), parallel)
        {
            match result {
                Ok(report) if report.stopped.as_deref() == Some("no-replay") => {
                    println!("faultline campaign: class {class} not shrunk: {}", report.summary())
                }
                Ok(report) => println!(
                    "faultline campaign: class {class} shrunk: {} — {}/shrink/shrunk.yaml",
                    report.summary(),
                    report.source
                ),
                Err(e) => println!("faultline campaign: class {class} not shrunk: {e:#}"),
            }
        }
    }
    let code = outcome.exit_code();
    Ok(Ended::with(code, &campaign_summary(&outcome, code)))
}

/// `faultline campaign --json`: what the printed summary says, as data.
fn campaign_summary(outcome: &crate::explore::campaign::Outcome, code: u8) -> Value {
    use crate::explore::campaign::schedule::Ending;
    use faultline_reports::results::Verdict;
    let ending = match outcome.ending {
        Ending::Finished => "finished",
        Ending::Interrupted => "interrupted",
        Ending::StoppedOnFail => "stopped-on-fail",
        Ending::BudgetSpent => "budget-spent",
    };
    let count = |verdict: Verdict| outcome.rows.iter().filter(|(row, _)| row.verdict == verdict).count();
    let seeds: Vec<Value> = outcome
        .rows
        .iter()
        .map(|(row, class)| {
            let mut value = serde_json::to_value(row).expect("a seed row serializes");
            value["class"] = serde_json::to_value(class).expect("a failure class serializes");
            value
        })
        .collect();
    json!({
        "campaign": outcome.state,
        "ending": ending,
        "exit_code": code,
        "elapsed_ms": outcome.elapsed.as_millis() as u64,
        "counts": {"valid": count(Verdict::Valid), "invalid": count(Verdict::Invalid), "unknown": count(Verdict::Unknown)},
        "pruned": outcome.pruned,
        "behaviours": outcome.behaviours,
        "index": outcome.index.display().to_string(),
        "seeds": seeds,
        "classes": outcome.triage,
    })
}
