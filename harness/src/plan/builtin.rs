//! Built-in plans: every file of `plans/`, compiled into the binary, so `faultline run canary` and
//! `faultline matrix` work from any directory.

use crate::plan::{Plan, PlanError};

/// (name, YAML) of every built-in plan.
pub const PLANS: &[(&str, &str)] = &[
    ("default", include_str!("../../../plans/default.yaml")),
    ("canary", include_str!("../../../plans/canary.yaml")),
    (
        "reference-power-loss",
        include_str!("../../../plans/reference-power-loss.yaml"),
    ),
    (
        "reference-disk-surgery",
        include_str!("../../../plans/reference-disk-surgery.yaml"),
    ),
    ("reference-mixed", include_str!("../../../plans/reference-mixed.yaml")),
    ("reference-hosts", include_str!("../../../plans/reference-hosts.yaml")),
    ("reference-swarm", include_str!("../../../plans/reference-swarm.yaml")),
    (
        "reference-partition",
        include_str!("../../../plans/reference-partition.yaml"),
    ),
    ("reference-log", include_str!("../../../plans/reference-log.yaml")),
    (
        "reference-checkpoint",
        include_str!("../../../plans/reference-checkpoint.yaml"),
    ),
    (
        "reference-disk-zero-block",
        include_str!("../../../plans/reference-disk-zero-block.yaml"),
    ),
    (
        "reference-io-faults",
        include_str!("../../../plans/reference-io-faults.yaml"),
    ),
    ("soak", include_str!("../../../plans/soak.yaml")),
    ("etcd-kill", include_str!("../../../plans/etcd-kill.yaml")),
    ("etcd-partition", include_str!("../../../plans/etcd-partition.yaml")),
    ("etcd-disk", include_str!("../../../plans/etcd-disk.yaml")),
    ("etcd-mixed", include_str!("../../../plans/etcd-mixed.yaml")),
    ("etcd-corruption", include_str!("../../../plans/etcd-corruption.yaml")),
    ("etcd-membership", include_str!("../../../plans/etcd-membership.yaml")),
    (
        "reference-crash-points",
        include_str!("../../../plans/reference-crash-points.yaml"),
    ),
    (
        "reference-corruption",
        include_str!("../../../plans/reference-corruption.yaml"),
    ),
    ("iggy-kill", include_str!("../../../plans/iggy-kill.yaml")),
    ("iggy-partition", include_str!("../../../plans/iggy-partition.yaml")),
    ("iggy-split-brain", include_str!("../../../plans/iggy-split-brain.yaml")),
    ("iggy-disk", include_str!("../../../plans/iggy-disk.yaml")),
    ("iggy-mixed", include_str!("../../../plans/iggy-mixed.yaml")),
    ("iggy-messages", include_str!("../../../plans/iggy-messages.yaml")),
    ("reference-txn", include_str!("../../../plans/reference-txn.yaml")),
    ("reference-bank", include_str!("../../../plans/reference-bank.yaml")),
    (
        "reference-long-fork",
        include_str!("../../../plans/reference-long-fork.yaml"),
    ),
    ("reference-clock", include_str!("../../../plans/reference-clock.yaml")),
    (
        "reference-membership",
        include_str!("../../../plans/reference-membership.yaml"),
    ),
    (
        "mutant-repair-rewinds-parent",
        include_str!("../../../plans/mutant-repair-rewinds-parent.yaml"),
    ),
    (
        "mutant-view-change-max-op",
        include_str!("../../../plans/mutant-view-change-max-op.yaml"),
    ),
];

/// The built-in plan `name`, parsed.
pub fn load(name: &str) -> Result<Plan, PlanError> {
    match PLANS.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => Plan::parse(text, &format!("<built-in plan {name}>")),
        None => Err(PlanError {
            origin: name.to_string(),
            line: 0,
            column: 0,
            message: format!(
                "no such plan file, and no built-in plan of that name (built-in: {})",
                PLANS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn given_every_built_in_plan_when_parsed_should_be_valid_and_named_like_its_file() {
        for (name, _) in super::PLANS {
            let plan = super::load(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(plan.name.0, *name);
        }
        // Exec plans name scripts beside them (plans/exec/), so they run from their file, not built in.
        let plans_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plans");
        let files = std::fs::read_dir(&plans_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".yaml") && !name.starts_with("exec-"))
            .count();
        assert_eq!(
            files,
            super::PLANS.len(),
            "every plan file of plans/ but the exec ones is a built-in plan"
        );
        for entry in std::fs::read_dir(&plans_dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap().to_string_lossy().starts_with("exec-") {
                crate::plan::Plan::load(&path).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
