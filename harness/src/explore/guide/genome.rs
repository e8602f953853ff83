//! A run configuration as a genome: which of the campaign's fault elements it keeps (each timed process fault,
//! the per-node flaps, each partition shape, each link fault and each trigger of the plans the campaign was given),
//! each with its own scale factors, plus the rates of the families and the workload. A genome renders to an ordinary
//! plan ([`Genome::render`]): the base plan with its nemesis rebuilt from the genes.
//!
//! Why genes that point into the plans as written instead of plans that mutate freely: every value a mutation can
//! reach stays inside what the plan's author promised the system survives, so a guided campaign never invents a
//! fault that makes the correct system fail:
//! - durations within 0.5–1.5x of the element's (the swarm's envelope, [`crate::plan::swarm`]):
//!   `reference-mixed`'s clock offsets stay within the lease bound however durations scale;
//! - mean gaps within 0.25–2x and trigger probabilities within 0.25–2x (at most 1): up to four times as many faults,
//!   each of a kind and size the plan already has (a consensus system's fault model bounds what one fault does, not
//!   how often faults come);
//! - a partition may take any shape and a kill, pause, graceful stop or power loss aimed at a role any role, a
//!   majority or every node included: any partition and any crash-recovery fault is within the fault model of a
//!   replicated system (the checks judge what a majority's damage does, `minority_damage`);
//! - never touched: clock offsets and their targets, cuts and the targets of `corrupt` faults (a plan's damage
//!   promise names one node), named targets, scripts, stable windows, I/O windows and the final phase.

use crate::plan::Plan;
use faultline_faults::process::{ProcessFault, Target};
use faultline_faults::units::{Millis, MillisRange};
use serde::{Deserialize, Serialize};

/// Bounds of a duration factor (the swarm's).
pub const DURATION_X: (f64, f64) = (0.5, 1.5);
/// Bounds of a mean-gap factor (the swarm's upper bound; down to a quarter: four times the faults).
pub const INTERVAL_X: (f64, f64) = (0.25, 2.0);
/// Bounds of a trigger probability factor (the probability itself stays at most 1): a trigger may fire its fault
/// more or less often than written, as the rates of timed faults scale.
pub const PROBABILITY_X: (f64, f64) = (0.25, 2.0);
/// Bounds of the workload rate factor.
pub const RATE_X: (f64, f64) = (0.5, 1.5);
/// Bounds of a weight.
pub const WEIGHT: (u32, u32) = (1, 8);

/// Which list of a plan an element comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// `nemesis.process.faults[i]`.
    Process,
    /// `nemesis.process.flaps`.
    Flaps,
    /// `nemesis.network.partitions[i]`.
    Partition,
    /// `nemesis.network.links[i]`.
    Link,
    /// `nemesis.triggers[i]`.
    Trigger,
}

/// One fault element of one of the campaign's plans.
#[derive(Debug, Clone)]
pub struct Element {
    /// Index of the plan it comes from.
    pub plan: usize,
    /// Its list.
    pub family: Family,
    /// Its index in that list.
    pub index: usize,
    /// How people read it (`kill primary`, `trigger 3 (view-change -> power-loss)`).
    pub label: String,
}

/// The campaign's plans (swarm off) and every fault element in them.
#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// The plans as written, in the campaign's order.
    pub plans: Vec<Plan>,
    /// Every element of every plan.
    pub elements: Vec<Element>,
}

/// One kept element with its own factors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gene {
    /// Index into the vocabulary's elements.
    pub element: usize,
    /// Factor on its duration range.
    pub duration_x: f64,
    /// Its weight, when changed from the element's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    /// Factor on a trigger's probability.
    #[serde(default = "one")]
    pub probability_x: f64,
    /// A process fault's target role, when changed from the element's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<String>,
    /// A partition's shape, when changed from the element's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
}

fn one() -> f64 {
    1.0
}

/// A run configuration (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Genome {
    /// The plan everything but the nemesis's random faults comes from.
    pub base: usize,
    /// The kept elements, in vocabulary order.
    pub genes: Vec<Gene>,
    /// Factor on the process faults' mean gap.
    pub process_interval_x: f64,
    /// Factor on the partitions' mean gap.
    pub network_interval_x: f64,
    /// Factor on the link faults' mean gap.
    pub link_interval_x: f64,
    /// Factor on the flaps' mean up time.
    pub flaps_up_x: f64,
    /// Factor on the workload's rate.
    pub rate_x: f64,
    /// Fault combinations aimed at contexts the campaign has shown least ([`super::aim`]), started by `at` triggers
    /// after the genes' triggers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shots: Vec<super::aim::Shot>,
}

impl Vocabulary {
    /// The vocabulary of `plans` (each with swarm off: the guide chooses subsets itself).
    pub fn new(plans: Vec<Plan>) -> Vocabulary {
        let mut elements = Vec::new();
        for (p, plan) in plans.iter().enumerate() {
            let mut push = |family, index, label: String| {
                elements.push(Element {
                    plan: p,
                    family,
                    index,
                    label,
                })
            };
            if let Some(process) = &plan.nemesis.process {
                for (i, fault) in process.value.faults.iter().enumerate() {
                    push(
                        Family::Process,
                        i,
                        format!("{} {}", name_of(&fault.kind), fault.targets.value),
                    );
                }
                if process.value.flaps.is_some() {
                    push(Family::Flaps, 0, "flaps".to_string());
                }
            }
            if let Some(network) = &plan.nemesis.network {
                for (i, partition) in network.value.partitions.iter().enumerate() {
                    push(Family::Partition, i, format!("partition {}", partition.shape));
                }
                for (i, link) in network.value.links.iter().enumerate() {
                    push(Family::Link, i, format!("link {}", name_of(&link.fault.kind())));
                }
            }
            for (i, trigger) in plan.nemesis.triggers.iter().enumerate() {
                let spec = &trigger.value;
                push(
                    Family::Trigger,
                    i,
                    format!("trigger {i} ({} -> {})", spec.when.name(), spec.action.kind.name()),
                );
            }
        }
        let plans = plans
            .into_iter()
            .map(|mut plan| {
                plan.nemesis.swarm = false;
                plan.nemesis.swarmed.clear();
                plan
            })
            .collect();
        Vocabulary { plans, elements }
    }

    /// A person's name for element `e`, with its plan's when the campaign has several.
    pub fn label(&self, e: usize) -> String {
        let element = &self.elements[e];
        if self.plans.len() > 1 {
            format!("{} of {}", element.label, self.plans[element.plan].name)
        } else {
            element.label.clone()
        }
    }

    /// Whether element `e` may join a genome based on plan `base`: same system kind.
    pub fn fits(&self, e: usize, base: usize) -> bool {
        let plan = &self.plans[self.elements[e].plan];
        plan.system.kind() == self.plans[base].system.kind()
    }

    /// The genome of plan `p` as written: every element, every factor 1.
    pub fn seed_genome(&self, p: usize) -> Genome {
        let genes = (0..self.elements.len())
            .filter(|&e| self.elements[e].plan == p)
            .map(|element| Gene {
                element,
                duration_x: 1.0,
                weight: None,
                probability_x: 1.0,
                targets: None,
                shape: None,
            })
            .collect();
        Genome {
            base: p,
            genes,
            process_interval_x: 1.0,
            network_interval_x: 1.0,
            link_interval_x: 1.0,
            flaps_up_x: 1.0,
            rate_x: 1.0,
            shots: Vec::new(),
        }
    }

    /// Whether element `e` is a process fault whose target role a mutation may change: a kill, pause, graceful stop
    /// or power loss aimed at a role (never a named node, `all`, `each`, or a corrupt or clock fault, whose targets
    /// carry the plan's promises).
    pub fn retargetable(&self, e: usize) -> bool {
        let Some(fault) = self.process_fault(e) else {
            return false;
        };
        let kind_ok = matches!(
            fault.kind,
            ProcessFault::Kill | ProcessFault::Pause | ProcessFault::Stop | ProcessFault::PowerLoss
        );
        let target_ok = matches!(
            fault.targets.value,
            Target::One | Target::Minority | Target::Primary | Target::Backup | Target::NextPrimary
        );
        kind_ok && target_ok
    }

    /// The target an element's process fault has as written (`one`, `primary`, ...), empty for other elements.
    pub fn target_of(&self, e: usize) -> String {
        self.process_fault(e)
            .map_or_else(String::new, |fault| fault.targets.value.to_string())
    }

    /// The shape a partition element has as written, empty for other elements.
    pub fn shape_of(&self, e: usize) -> String {
        let element = &self.elements[e];
        match (element.family, &self.plans[element.plan].nemesis.network) {
            (Family::Partition, Some(network)) => network.value.partitions[element.index].shape.to_string(),
            _ => String::new(),
        }
    }

    /// Element `e`'s process fault as its plan writes it, none for elements of other families.
    pub fn process_fault(&self, e: usize) -> Option<&faultline_faults::process::TargetedFaultSpec> {
        let element = &self.elements[e];
        (element.family == Family::Process).then(|| &self.process_faults(element.plan)[element.index])
    }

    fn process_faults(&self, p: usize) -> &[faultline_faults::process::TargetedFaultSpec] {
        self.plans[p]
            .nemesis
            .process
            .as_ref()
            .map_or(&[], |process| process.value.faults.as_slice())
    }
}

/// The roles a retargeted process fault may take.
pub const RETARGET_ROLES: [&str; 7] = [
    "one",
    "minority",
    "majority",
    "primary",
    "backup",
    "next-primary",
    "all",
];
/// The shapes a partition may take.
pub const SHAPES: [&str; 6] = [
    "random-halves",
    "isolate-one",
    "isolate-primary",
    "majorities-ring",
    "bridge",
    "one-way",
];

impl Genome {
    /// The plan this genome configures: its base plan with the nemesis's random faults rebuilt from the genes
    /// (scripts, stable windows, I/O windows, the workload's shape and the final phase stay the base plan's).
    pub fn render(&self, vocab: &Vocabulary) -> Plan {
        let mut plan = vocab.plans[self.base].clone();
        let genes = |family: Family| {
            self.genes
                .iter()
                .filter(move |g| vocab.elements[g.element].family == family)
        };
        let process_genes: Vec<&Gene> = genes(Family::Process).collect();
        let flaps_gene = genes(Family::Flaps).next();
        if !process_genes.is_empty() || flaps_gene.is_some() || plan.nemesis.process.is_some() {
            let donor = process_genes
                .first()
                .or(flaps_gene.as_ref())
                .map(|g| vocab.elements[g.element].plan);
            let mut process = plan
                .nemesis
                .process
                .clone()
                .or_else(|| donor.and_then(|d| vocab.plans[d].nemesis.process.clone()))
                .expect("a process section comes from the base plan or a gene's");
            let spec = &mut process.value;
            if spec.interval.is_none() {
                spec.interval = donor.and_then(|d| vocab.plans[d].nemesis.process.as_ref()?.value.interval);
            }
            if plan.nemesis.process.is_none() {
                spec.script.clear(); // a script belongs to its own plan's timeline
                spec.stable = None;
            }
            spec.faults = process_genes.iter().map(|g| render_process(vocab, g)).collect();
            spec.interval = spec.interval.map(|i| scale(i, self.process_interval_x));
            spec.flaps = flaps_gene.and_then(|g| {
                let mut flaps = vocab.plans[vocab.elements[g.element].plan]
                    .nemesis
                    .process
                    .as_ref()?
                    .value
                    .flaps
                    .clone()?;
                flaps.mean_up = scale(flaps.mean_up, self.flaps_up_x);
                Some(flaps)
            });
            plan.nemesis.process = Some(process);
        }
        self.render_network(vocab, &mut plan);
        plan.nemesis.triggers = genes(Family::Trigger)
            .map(|g| {
                let element = &vocab.elements[g.element];
                let mut trigger = vocab.plans[element.plan].nemesis.triggers[element.index].clone();
                let spec = &mut trigger.value;
                spec.action.duration = scale_range(spec.action.duration, g.duration_x);
                if g.probability_x < 1.0 {
                    let probability = (spec.probability.unwrap_or(1.0) * g.probability_x).clamp(0.01, 1.0);
                    spec.probability = Some((probability * 100.0).round() / 100.0);
                }
                trigger
            })
            .collect();
        for shot in &self.shots {
            let unknown = serde_saphyr::Location::UNKNOWN;
            plan.nemesis.triggers.extend(
                shot.triggers()
                    .into_iter()
                    .map(|t| serde_saphyr::Spanned::new(t, unknown, unknown)),
            );
        }
        let rate = (plan.workload.rate.0 * self.rate_x).clamp(1.0, 100_000.0);
        plan.workload.rate = crate::plan::Rate((rate * 10.0).round() / 10.0);
        plan
    }

    fn render_network(&self, vocab: &Vocabulary, plan: &mut Plan) {
        let of = |family: Family| -> Vec<&Gene> {
            self.genes
                .iter()
                .filter(|g| vocab.elements[g.element].family == family)
                .collect()
        };
        let (partitions, links) = (of(Family::Partition), of(Family::Link));
        if partitions.is_empty() && links.is_empty() && plan.nemesis.network.is_none() {
            return;
        }
        let donor = partitions
            .first()
            .or(links.first())
            .map(|g| vocab.elements[g.element].plan);
        let Some(mut network) = plan
            .nemesis
            .network
            .clone()
            .or_else(|| donor.and_then(|d| vocab.plans[d].nemesis.network.clone()))
        else {
            return;
        };
        let spec = &mut network.value;
        let donor_spec = donor
            .and_then(|d| vocab.plans[d].nemesis.network.as_ref())
            .map(|n| &n.value);
        if spec.interval.is_none() {
            spec.interval = donor_spec.and_then(|n| n.interval);
        }
        if spec.link_interval.is_none() {
            spec.link_interval = donor_spec.and_then(|n| n.link_interval);
        }
        if plan.nemesis.network.is_none() {
            spec.script.clear();
        }
        spec.partitions = partitions.iter().map(|g| render_partition(vocab, g)).collect();
        spec.links = links.iter().map(|g| render_link(vocab, g)).collect();
        spec.interval = spec.interval.map(|i| scale(i, self.network_interval_x));
        spec.link_interval = spec.link_interval.map(|i| scale(i, self.link_interval_x));
        plan.nemesis.network = Some(network);
    }
}

fn network_of<'a>(vocab: &'a Vocabulary, gene: &Gene) -> &'a faultline_faults::network::schedule::NetworkNemesisSpec {
    let element = &vocab.elements[gene.element];
    let network = vocab.plans[element.plan].nemesis.network.as_ref();
    &network
        .expect("a partition's or link fault's plan has a network section")
        .value
}

fn render_partition(vocab: &Vocabulary, gene: &Gene) -> faultline_faults::network::schedule::PartitionFaultSpec {
    let mut partition = network_of(vocab, gene).partitions[vocab.elements[gene.element].index].clone();
    partition.duration = scale_range(partition.duration, gene.duration_x);
    partition.weight = gene.weight.map_or(partition.weight, Into::into);
    let shape = gene
        .shape
        .as_deref()
        .and_then(|s| serde_json::from_value(serde_json::json!(s)).ok());
    if let Some(shape) = shape {
        partition.shape = shape;
    }
    partition
}

fn render_link(vocab: &Vocabulary, gene: &Gene) -> faultline_faults::network::schedule::LinkFaultSpec {
    let mut link = network_of(vocab, gene).links[vocab.elements[gene.element].index].clone();
    link.duration = scale_range(link.duration, gene.duration_x);
    link.weight = gene.weight.map_or(link.weight, Into::into);
    link
}

fn render_process(vocab: &Vocabulary, gene: &Gene) -> faultline_faults::process::TargetedFaultSpec {
    let element = &vocab.elements[gene.element];
    let mut fault = vocab.process_faults(element.plan)[element.index].clone();
    fault.duration = scale_range(fault.duration, gene.duration_x);
    fault.weight = gene.weight.map_or(fault.weight, Into::into);
    if let Some(role) = &gene.targets {
        if let Ok(target) = Target::parse_role(role) {
            fault.targets.value = target;
        }
    }
    fault
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
