//! Loading a plan: reading its file, parsing it with locations in errors, resolving its relative paths, validating.

use super::{Plan, PlanError, DEFAULT_PLAN_YAML};
use std::path::{Path, PathBuf};

impl Plan {
    /// Loads and validates a plan file.
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PlanError {
            origin: origin.clone(),
            line: 0,
            column: 0,
            message: format!("cannot read the plan: {e}"),
        })?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        Plan::parse_in(&text, &origin, &dir)
    }

    /// A plan as the command line names it: a plan file, else a built-in plan's name (`faultline run canary`). A
    /// folder is never a plan: a built-in name wins over a folder of that name (a store's runs of `etcd-mixed` live
    /// in `etcd-mixed/`, so a campaign started inside its store would else read its own runs' folder as the plan),
    /// and a folder that names no built-in plan is refused with what to pass instead.
    pub fn from_arg(arg: &Path) -> Result<Plan, PlanError> {
        let name = arg.display().to_string();
        if arg.is_file() {
            return Plan::load(arg);
        }
        if arg.is_dir() && !super::builtin::PLANS.iter().any(|(n, _)| *n == name) {
            let hint = if arg.join("plan.yaml").is_file() {
                format!("; to rerun that run's plan, pass {}", arg.join("plan.yaml").display())
            } else {
                String::new()
            };
            return Err(PlanError {
                origin: name,
                line: 0,
                column: 0,
                message: format!("is a folder, not a plan file nor a built-in plan's name{hint}"),
            });
        }
        super::builtin::load(&name)
    }

    /// The built-in default plan.
    pub fn default_plan() -> Plan {
        Plan::parse(DEFAULT_PLAN_YAML, "<default plan>").expect("the built-in default plan is valid")
    }

    /// Parses and validates plan text; `origin` names it in errors. Relative paths in it are relative to the
    /// current directory.
    pub fn parse(text: &str, origin: &str) -> Result<Plan, PlanError> {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Plan::parse_in(text, origin, &here)
    }

    /// Parses and validates plan text whose relative paths (an exec system's programs, `{plan_dir}`) are relative
    /// to `dir`; they are made absolute, so the stored `plan.yaml` runs from anywhere.
    pub fn parse_in(text: &str, origin: &str, dir: &Path) -> Result<Plan, PlanError> {
        let mut plan: Plan = serde_saphyr::from_str(text).map_err(|e| {
            let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
            // serde-saphyr's Display repeats the location and draws a snippet; keep the first line's message.
            let full = e.to_string();
            let message = full.lines().next().unwrap_or(&full).to_string();
            let message = strip_location_prefix(&message).to_string();
            PlanError {
                origin: origin.to_string(),
                line,
                column,
                message,
            }
        })?;
        plan.system.adapter_mut().resolve_paths(dir);
        plan.validate(origin)?;
        Ok(plan)
    }
}

/// `error: line 3 column 1: unknown field` -> `unknown field` (the location is printed as file:line:column).
fn strip_location_prefix(message: &str) -> &str {
    let rest = message.strip_prefix("error: ").unwrap_or(message);
    match rest.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((location, tail)) if location.contains("column") => tail,
        _ => rest,
    }
}
