//! `faultline run`: one run of a plan (a file, a built-in name, or the replay of a stored run).

use super::{parse_millis, plan_error, print_checks, Ended, Failed, Outcome};
use crate::plan::Plan;
use crate::remote::lab::RemoteOptions;
use crate::run::{run, RunOptions};
use faultline_faults::units::Millis;
use faultline_reports::results::shout;
use std::path::{Path, PathBuf};

/// `faultline run` arguments.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Plan file (YAML). Omit for the built-in default: 3 reference nodes, register workload, process faults.
    pub plan: Option<PathBuf>,
    /// Override the plan's fault-phase length, e.g. 30s.
    #[arg(long, value_parser = parse_millis)]
    pub time_limit: Option<Millis>,
    /// Override the plan's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Override the plan's cluster size (1..=9); the plan is validated again for it.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Store folder.
    #[arg(long, default_value = "store")]
    pub store: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Print the run's results.json on stdout at the end (human output goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Rerun exactly the faults recorded in this run's history (not regenerated from the seed): timed faults at
    /// their recorded offsets, triggered ones after the observation that fired them.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["plan", "nodes"])]
    pub replay: Option<PathBuf>,
    /// With --replay: replay K times and report how many failed the same way as the run (its most severe
    /// finding's class), how many another way, how many passed; every try is kept in RUN_DIR/replays.json.
    #[arg(long, value_name = "K", requires = "replay", value_parser = clap::value_parser!(u32).range(1..))]
    pub tries: Option<u32>,
    /// With --tries: replays at once.
    #[arg(long, default_value_t = 1, requires = "tries")]
    pub parallel: usize,
    /// Change a plan value for this run (repeatable), e.g. `--set workload.consistency=repeatable-read` or
    /// `--set system.client.env.PG_ISOLATION=serializable`: the plan's field names joined by dots (a number picks a
    /// list item), the value as YAML. The stored plan.yaml holds the values as run and lists the settings.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Where the nodes run (this machine, unless --hosts).
    #[command(flatten)]
    pub on_hosts: super::hosts::OnHosts,
}

/// `faultline run`.
pub(super) fn command(args: RunArgs) -> Outcome {
    let RunArgs {
        plan: plan_path,
        time_limit,
        seed,
        nodes,
        store,
        quiet,
        json: _,
        replay,
        tries,
        parallel,
        set,
        on_hosts,
    } = args;
    let remote = on_hosts.remote("faultline run")?;
    if let (Some(run_dir), Some(tries)) = (&replay, tries) {
        let mut plan =
            replay_plan(run_dir).and_then(|plan| crate::plan::overrides::apply(&plan, &set).map_err(plan_error))?;
        if let Some(limit) = time_limit {
            plan.time_limit = limit;
        }
        if seed.is_some() {
            plan.seed = seed;
        }
        return replay_odds(run_dir, &plan, &store, tries, parallel, on_hosts.child_args());
    }
    let loaded = match (&replay, &plan_path) {
        (Some(run_dir), _) => {
            return replay_plan(run_dir)
                .and_then(|plan| crate::plan::overrides::apply(&plan, &set).map_err(plan_error))
                .and_then(|plan| finish_run_command(plan, (time_limit, seed, None), store, quiet, remote))
        }
        (None, plan_path) => match plan_path {
            Some(path) => Plan::from_arg(path),
            None => Ok(Plan::default_plan()),
        },
    };
    let plan = loaded
        .and_then(|plan| crate::plan::overrides::apply(&plan, &set))
        .map_err(plan_error)?;
    finish_run_command(plan, (time_limit, seed, nodes), store, quiet, remote)
}

/// The scripted plan that replays `run_dir`'s recorded faults.
fn replay_plan(run_dir: &Path) -> Result<Plan, Failed> {
    let (base, recorded) = crate::explore::replay::load(run_dir)
        .map_err(|e| Failed::bad_input(format!("faultline run --replay: {e:#}")))?;
    let anchored = recorded.faults.iter().filter(|f| f.anchor.is_some()).count();
    eprintln!(
        "faultline: replaying the {} faults recorded in {} ({anchored} anchored to what the cluster did, the rest at \
         their recorded offsets), seed {}",
        recorded.faults.len(),
        run_dir.display(),
        recorded.seed
    );
    let origin = format!("replay of {}", run_dir.display());
    let plan = crate::explore::replay::scripted_plan(&base, &recorded.faults, recorded.seed, origin);
    // What runs must be a plan the harness accepts, exactly as it is stored.
    Plan::parse(&plan.to_yaml(), &format!("the replay of {}", run_dir.display())).map_err(plan_error)?;
    Ok(plan)
}

/// `faultline run --replay DIR --tries K`: the odds, on stdout; the exit code is the worst replay's verdict's.
fn replay_odds(run_dir: &Path, plan: &Plan, store: &Path, tries: u32, parallel: usize, extra: Vec<String>) -> Outcome {
    let odds = crate::explore::replay::replay_tries(run_dir, plan, store, tries, parallel, extra).map_err(|e| {
        Failed::bad_input(format!(
            "faultline run --replay {} --tries {tries}: {e:#}",
            run_dir.display()
        ))
    })?;
    println!("faultline run --replay: {}", odds.summary());
    println!("  every try: {}", run_dir.join("replays.json").display());
    let code = match odds.worst() {
        faultline_reports::results::Verdict::Valid => 0,
        faultline_reports::results::Verdict::Invalid => 1,
        faultline_reports::results::Verdict::Unknown => 2,
    };
    let code = if odds.interrupted { 130 } else { code };
    Ok(Ended::with(code, &odds))
}

fn finish_run_command(
    mut plan: Plan,
    (time_limit, seed, nodes): (Option<Millis>, Option<u64>, Option<u64>),
    store: PathBuf,
    quiet: bool,
    remote: Option<RemoteOptions>,
) -> Outcome {
    if let Some(limit) = time_limit {
        if limit.0 == 0 {
            return Err(Failed::bad_input("faultline: --time-limit must be > 0"));
        }
        plan.time_limit = limit;
    }
    if seed.is_some() {
        plan.seed = seed;
    }
    if let Some(nodes) = nodes {
        plan.system.set_nodes(nodes as usize);
        let origin = format!("{} with --nodes {nodes}", plan.name);
        plan.validate(&origin).map_err(plan_error)?;
    }
    if let Some(remote) = &remote {
        crate::remote::lab::check_plan(&plan, &remote.hosts)
            .map_err(|e| Failed::bad_input(format!("faultline: {e}")))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("building the tokio runtime");
    let quiet = quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    match runtime.block_on(run(RunOptions {
        plan,
        store_root: store,
        quiet,
        remote,
    })) {
        Ok(outcome) => {
            print_checks(&outcome.results);
            println!("  report: {}", outcome.store_dir.join("report.html").display());
            println!(
                "faultline: {} — {} — {}",
                shout(outcome.results.verdict),
                outcome.results.reason,
                outcome.store_dir.display()
            );
            Ok(Ended::with(outcome.results.verdict.exit_code() as u8, &outcome.results))
        }
        Err(e) => {
            crate::supervisor::kill_all_spawned();
            Err(Failed::harness(format!("faultline: harness error: {e:#}")))
        }
    }
}
