//! `faultline plan`: print the default plan, check a plan, or print the schedule a seed gives.

use super::{plan_error, Ended, Failed, Outcome};
use crate::plan::{Plan, DEFAULT_PLAN_YAML};
use clap::ArgGroup;
use std::io::Write;
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
    /// Print the fault schedule a plan file (or a built-in plan's name) gives with its seed (or --seed), process and network
    /// faults on one time line, one JSON object per line (`family`: process or network), without running anything:
    /// the same seed always gives the same schedule.
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
    // As `faultline run` takes it: a file, else a built-in plan's name (`default` is one).
    let plan = Plan::from_arg(path).map_err(plan_error)?;
    let Some(seed) = seed.or(plan.seed) else {
        return Err(Failed::bad_input(
            "faultline plan --schedule: the plan has no seed; pass --seed N",
        ));
    };
    // Both families on one time line, each fault tagged with its family first (`process`: kills, pauses, power loss,
    // clock faults ...; `network`: partitions and link faults); the rest keeps the schedule's own field order.
    fn line(family: &str, fault: &impl serde::Serialize) -> (u64, String) {
        let json = serde_json::to_string(fault).expect("a schedule serializes");
        let start_ms = serde_json::from_str::<serde_json::Value>(&json).expect("just serialized")["start_ms"]
            .as_u64()
            .unwrap_or(0);
        let fields = json.strip_prefix('{').expect("a fault serializes as an object");
        (start_ms, format!("{{\"family\":\"{family}\",{fields}"))
    }
    let mut lines: Vec<(u64, String)> = crate::run::fault_schedule(&plan, seed)
        .iter()
        .map(|fault| line("process", fault))
        .chain(
            crate::run::network_fault_schedule(&plan, seed)
                .iter()
                .map(|fault| line("network", fault)),
        )
        .collect();
    // Stable: within a family, the schedule's own order stays.
    lines.sort_by_key(|(start_ms, _)| *start_ms);
    // A closed pipe (`| head`) ends the listing quietly instead of panicking in println!.
    let mut out = std::io::stdout().lock();
    for (_, text) in lines {
        if writeln!(out, "{text}").is_err() {
            break;
        }
    }
    Ok(Ended::ok())
}
