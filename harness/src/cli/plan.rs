//! `faultline plan`: print the default plan, check a plan, or print the schedule a seed gives.

use super::{plan_error, Ended, Failed, Outcome};
use crate::plan::{Plan, DEFAULT_PLAN_YAML};
use clap::ArgGroup;
use std::path::{Path, PathBuf};

/// `faultline plan` arguments.
#[derive(clap::Args)]
#[command(group(ArgGroup::new("what").required(true).args(["print_default", "check", "schedule"])))]
pub struct PlanArgs {
    /// Print the built-in default plan as commented YAML.
    #[arg(long)]
    pub print_default: bool,
    /// Check a plan file and print it resolved.
    #[arg(long)]
    pub check: Option<PathBuf>,
    /// Print the process-fault schedule a plan file (or `default`) gives with its seed (or --seed), one fault per
    /// line, without running anything: the same seed always gives the same schedule.
    #[arg(long)]
    pub schedule: Option<PathBuf>,
    /// Seed for --schedule.
    #[arg(long, requires = "schedule")]
    pub seed: Option<u64>,
}

/// `faultline plan`.
pub(super) fn command(args: PlanArgs) -> Outcome {
    let PlanArgs {
        print_default,
        check,
        schedule,
        seed,
    } = args;
    match (schedule, check) {
        (Some(path), _) => schedule_command(&path, seed),
        (None, Some(path)) => check_plan_command(&path),
        (None, None) => {
            debug_assert!(
                print_default,
                "clap requires one of --print-default, --check, --schedule"
            );
            print!("{DEFAULT_PLAN_YAML}");
            Ok(Ended::ok())
        }
    }
}

fn check_plan_command(path: &Path) -> Outcome {
    let plan = Plan::load(path).map_err(plan_error)?;
    print!("{}", plan.to_yaml());
    Ok(Ended::ok())
}

fn schedule_command(path: &Path, seed: Option<u64>) -> Outcome {
    let plan = if path == Path::new("default") {
        Plan::default_plan()
    } else {
        Plan::load(path).map_err(plan_error)?
    };
    let Some(seed) = seed.or(plan.seed) else {
        return Err(Failed::bad_input(
            "faultline plan --schedule: the plan has no seed; pass --seed N",
        ));
    };
    for fault in crate::run::fault_schedule(&plan, seed) {
        println!("{}", serde_json::to_string(&fault).expect("a schedule serializes"));
    }
    Ok(Ended::ok())
}
