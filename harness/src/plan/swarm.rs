//! Swarm schedules (Groce et al., "Swarm Testing", ISSTA 2012; TigerBeetle's VOPR does the same to its fault
//! probabilities): `nemesis: {swarm: true}` makes each seed test a different *configuration* of the plan's nemesis,
//! not only a different schedule of the same one. A fault kind that is always on can mask a bug another kind needs
//! room for (constant partitions keep a view change from ever completing with a lagging replica), so each seed keeps
//! a random subset of the plan's fault kinds and triggers and scales their rates and durations.
//!
//! The choice is drawn from the seed (its own stream, `swarm`) and applied to the plan *before* the run writes its
//! `plan.yaml`: the stored plan is the reduced one, with `swarm` off and `swarmed` listing what was chosen, so
//! `faultline run --seed S <store>/plan.yaml` reruns exactly that configuration, and the schedules (drawn from their
//! own streams) are the same.
//!
//! What a seed draws:
//! - each targeted process fault, each partition shape, each link fault and each trigger is kept with probability
//!   1/2 (if that would leave the nemesis with nothing, one of them is kept);
//! - per-node flaps are kept with probability 1/2;
//! - the mean gaps (`interval`, `link_interval`, flaps' `mean_up`) are scaled by a factor in [0.5, 2], the fault
//!   durations by one in [0.5, 1.5] (at least 1 ms), each trigger's `probability` by one in [0.5, 1] (at most 1);
//! - scripted faults, I/O windows and the final phase are left as they are (they are what the plan's author chose).

use crate::plan::Plan;
use faultline_faults::rng::stream;
use faultline_faults::units::{Millis, MillisRange};
use rand::Rng;

/// The plan a seed runs: `plan` itself without `swarm`, else its swarm configuration for `seed`.
pub fn configure(plan: &Plan, seed: u64) -> Plan {
    let mut plan = plan.clone();
    if !plan.nemesis.swarm {
        return plan;
    }
    let mut rng = stream(seed, "swarm");
    let nemesis = &mut plan.nemesis;
    // Which (family, index) to drop, with the line that says so. Decided first, in plan order, so that the scales
    // drawn after never change which kinds a seed keeps.
    let mut candidates: Vec<(&'static str, usize, String)> = Vec::new();
    if let Some(process) = &nemesis.process {
        for (index, fault) in process.value.faults.iter().enumerate() {
            candidates.push((
                "process",
                index,
                format!("process fault {} {}", name_of(&fault.kind), fault.targets.value),
            ));
        }
        if process.value.flaps.is_some() {
            candidates.push(("flaps", 0, "flaps".to_string()));
        }
    }
    if let Some(network) = &nemesis.network {
        for (index, partition) in network.value.partitions.iter().enumerate() {
            candidates.push(("partition", index, format!("partition {}", partition.shape)));
        }
        for (index, link) in network.value.links.iter().enumerate() {
            candidates.push(("link", index, format!("link fault {}", name_of(&link.fault.kind()))));
        }
    }
    for (index, trigger) in nemesis.triggers.iter().enumerate() {
        let spec = &trigger.value;
        candidates.push((
            "trigger",
            index,
            format!("trigger {index} ({} -> {})", spec.when.name(), spec.action.kind.name()),
        ));
    }
    let keep: Vec<bool> = candidates.iter().map(|_| rng.gen_bool(0.5)).collect();
    let mut dropped: Vec<(&'static str, usize, String)> = candidates
        .into_iter()
        .zip(&keep)
        .filter(|(_, keep)| !**keep)
        .map(|(candidate, _)| candidate)
        .collect();
    let mut chosen = vec![format!("swarm configuration of seed {seed}")];
    if !keep.is_empty() && keep.iter().all(|k| !k) {
        let (_, _, line) = dropped.remove(rng.gen_range(0..dropped.len()));
        chosen.push(format!("kept {line} (nothing else was kept)"));
    }
    chosen.extend(dropped.iter().map(|(_, _, line)| format!("dropped {line}")));
    let is_dropped = |family: &str, index: usize| dropped.iter().any(|(f, i, _)| *f == family && *i == index);
    let retain_kept =
        |family: &'static str, len: usize| -> Vec<bool> { (0..len).map(|i| !is_dropped(family, i)).collect() };
    if let Some(process) = nemesis.process.as_mut() {
        let spec = &mut process.value;
        let kept = retain_kept("process", spec.faults.len());
        let mut kept = kept.iter();
        spec.faults.retain(|_| *kept.next().expect("one flag per fault"));
        if is_dropped("flaps", 0) {
            spec.flaps = None;
        }
        if let Some(interval) = spec.interval.as_mut().filter(|_| !spec.faults.is_empty()) {
            let factor = rng.gen_range(0.5..=2.0);
            *interval = scale(*interval, factor);
            chosen.push(format!("process interval x{factor:.2} = {interval}"));
        }
        for fault in &mut spec.faults {
            fault.duration = scale_range(fault.duration, rng.gen_range(0.5..=1.5));
        }
        if let Some(flaps) = spec.flaps.as_mut() {
            let factor = rng.gen_range(0.5..=2.0);
            flaps.mean_up = scale(flaps.mean_up, factor);
            chosen.push(format!("flaps mean_up x{factor:.2} = {}", flaps.mean_up));
        }
    }
    if let Some(network) = nemesis.network.as_mut() {
        let spec = &mut network.value;
        let kept = retain_kept("partition", spec.partitions.len());
        let mut kept = kept.iter();
        spec.partitions
            .retain(|_| *kept.next().expect("one flag per partition"));
        let kept = retain_kept("link", spec.links.len());
        let mut kept = kept.iter();
        spec.links.retain(|_| *kept.next().expect("one flag per link fault"));
        if let Some(interval) = spec.interval.as_mut().filter(|_| !spec.partitions.is_empty()) {
            let factor = rng.gen_range(0.5..=2.0);
            *interval = scale(*interval, factor);
            chosen.push(format!("partition interval x{factor:.2} = {interval}"));
        }
        if let Some(interval) = spec.link_interval.as_mut().filter(|_| !spec.links.is_empty()) {
            let factor = rng.gen_range(0.5..=2.0);
            *interval = scale(*interval, factor);
            chosen.push(format!("link interval x{factor:.2} = {interval}"));
        }
        for partition in &mut spec.partitions {
            partition.duration = scale_range(partition.duration, rng.gen_range(0.5..=1.5));
        }
        for link in &mut spec.links {
            link.duration = scale_range(link.duration, rng.gen_range(0.5..=1.5));
        }
    }
    let kept = retain_kept("trigger", nemesis.triggers.len());
    let mut kept = kept.iter();
    nemesis.triggers.retain(|_| *kept.next().expect("one flag per trigger"));
    for trigger in &mut nemesis.triggers {
        let spec = &mut trigger.value;
        spec.action.duration = scale_range(spec.action.duration, rng.gen_range(0.5..=1.5));
        let factor: f64 = rng.gen_range(0.5..=1.0);
        let probability = (spec.probability.unwrap_or(1.0) * factor).clamp(0.01, 1.0);
        spec.probability = Some((probability * 100.0).round() / 100.0);
    }
    nemesis.swarm = false;
    nemesis.swarmed = chosen;
    plan
}

/// A kebab-case enum's name as the plan writes it.
fn name_of<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn scale(value: Millis, factor: f64) -> Millis {
    Millis(((value.0 as f64 * factor).round() as u64).max(1))
}

fn scale_range(range: MillisRange, factor: f64) -> MillisRange {
    MillisRange {
        min: scale(range.min, factor),
        max: scale(range.max, factor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swarm_plan() -> Plan {
        let text = Plan::default_plan()
            .to_yaml()
            .replace("nemesis:\n", "nemesis:\n  swarm: true\n");
        Plan::parse(&text, "swarm.yaml").unwrap()
    }

    #[test]
    fn given_a_swarm_plan_when_configured_per_seed_should_vary_the_kinds_and_fix_them_by_the_seed() {
        let plan = swarm_plan();
        assert!(plan.nemesis.swarm);
        let a = configure(&plan, 1);
        assert_eq!(a, configure(&plan, 1), "the seed fixes the configuration");
        assert!(!a.nemesis.swarm && a.nemesis.swarmed[0].contains("seed 1"));
        let configurations: std::collections::BTreeSet<String> = (0..20)
            .map(|seed| configure(&plan, seed).nemesis.swarmed[1..].join("; "))
            .collect();
        assert!(
            configurations.len() >= 15,
            "seeds choose different subsets: {configurations:?}"
        );
        for seed in 0..50 {
            let configured = configure(&plan, seed);
            let nemesis = &configured.nemesis;
            let process = nemesis
                .process
                .as_ref()
                .map_or(0, |p| p.value.faults.len() + p.value.flaps.iter().count());
            let network = nemesis
                .network
                .as_ref()
                .map_or(0, |n| n.value.partitions.len() + n.value.links.len());
            assert!(
                process + network + nemesis.triggers.len() > 0,
                "seed {seed} kept nothing"
            );
            // The resolved plan is a plan: it reloads as written, without swarm, and validates.
            let reloaded = Plan::parse(&configured.to_yaml(), "plan.yaml").unwrap();
            assert_eq!(reloaded.to_yaml(), configured.to_yaml());
            assert!(!reloaded.nemesis.swarm);
        }
    }

    #[test]
    fn given_a_plan_without_swarm_when_configured_should_be_the_plan_itself() {
        let plan = Plan::default_plan();
        assert_eq!(configure(&plan, 7), plan);
    }
}
