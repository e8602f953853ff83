//! Mutation and splice of genomes, AFL's havoc stage on run configurations: a child is its parent with one to
//! [`HAVOC_STACK_MAX`] small changes stacked, each drawn from the operators below, every factor kept inside the
//! envelope of [`super::genome`]. A splice (AFL's splicing stage) first takes whole fault families (process faults
//! with their rate, the network's partitions or links with theirs, the triggers) from a second corpus entry, so two
//! configurations that each found something can meet.
//!
//! The operators ([`Operator`]), each one change:
//! - `drop` a gene (never the last one: a run with no fault explores nothing); `add` an element of the vocabulary
//!   the genome lacks (of a plan of the same system), at factor 1;
//! - `faster` / `slower`: one family's mean gap (process faults, partitions, link faults, flaps' up time) times
//!   0.3–0.8 or 1.25–2 (steps that matter: a fault context no run showed comes from a different density, not from a
//!   gap 10 % shorter);
//! - `longer` / `shorter`: one gene's duration times 1.1–1.5 or 0.67–0.9;
//! - `likelier` / `unlikelier`: one trigger's probability times 1.1–2 or 0.5–0.9;
//! - `weight`: halve or double one gene's weight;
//! - `retarget`: one retargetable process fault's target role (`one`, `minority`, `majority`, `primary`, `backup`,
//!   `next-primary`, `all`), or one partition's shape;
//! - `workload`: the workload's rate times 0.67–1.5;
//! - `intensify` / `calm`: every family's mean gap at once times 0.4–0.8 or 1.25–2 (more or fewer faults overall);
//! - `reshuffle`: one family drawn anew, as a swarm draws a configuration (each of the family's elements in the
//!   vocabulary kept with probability 1/2, at least one; its mean gap log-uniform over the envelope; each kept
//!   fault's target role or partition's shape redrawn with probability 1/2): a jump to another region of the
//!   configuration space, which single steps reach only slowly.
//!
//! Which operator a change uses is drawn by weight, and the guide learns the weights from what children found
//! (MOpt, Lyu et al., USENIX Security 2019: mutation operators are not equally useful for a given target, and which
//! ones are is learned while fuzzing). Directions are operators of their own so that "more faults" and "fewer" can
//! earn different weights.

use super::genome::{
    Family, Gene, Genome, Vocabulary, DURATION_X, INTERVAL_X, PROBABILITY_X, RATE_X, RETARGET_ROLES, SHAPES, WEIGHT,
};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Most changes stacked on one child.
pub const HAVOC_STACK_MAX: u32 = 8;
/// Chance of stacking one more change (geometric: 1 change 30% of the time, 2 21%, 3 15%, ...): configurations
/// differ from their parents by jumps, not only by steps, since a fault context that a run never shows comes from
/// a different mix of faults, not from a slightly longer pause.
const HAVOC_MORE_PROBABILITY: f64 = 0.7;
/// Tries of an operator that finds nothing to change (a genome without triggers asked to scale one) before the
/// child is left with the changes it has.
const OPERATOR_TRIES_MAX: u32 = 16;

/// A mutation operator (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operator {
    /// Drop a gene.
    Drop,
    /// Add a missing element.
    Add,
    /// A family's faults come more often.
    Faster,
    /// A family's faults come less often.
    Slower,
    /// A gene's faults last longer.
    Longer,
    /// A gene's faults last shorter.
    Shorter,
    /// A trigger fires more often.
    Likelier,
    /// A trigger fires less often.
    Unlikelier,
    /// A gene's weight halves or doubles.
    Weight,
    /// A fault's target role or a partition's shape changes.
    Retarget,
    /// The workload's rate changes.
    Workload,
    /// Every family's faults come more often.
    Intensify,
    /// Every family's faults come less often.
    Calm,
    /// One family drawn anew.
    Reshuffle,
}

impl Operator {
    /// Every operator.
    pub const ALL: [Operator; 14] = [
        Operator::Drop,
        Operator::Add,
        Operator::Faster,
        Operator::Slower,
        Operator::Longer,
        Operator::Shorter,
        Operator::Likelier,
        Operator::Unlikelier,
        Operator::Weight,
        Operator::Retarget,
        Operator::Workload,
        Operator::Intensify,
        Operator::Calm,
        Operator::Reshuffle,
    ];
}

/// `parent` with 1..=[`HAVOC_STACK_MAX`] changes (geometric, [`HAVOC_MORE_PROBABILITY`]), each by an operator drawn
/// by `weights` (one per [`Operator::ALL`]); what each change was, and its operator.
pub fn havoc(
    parent: &Genome,
    vocab: &Vocabulary,
    weights: &[f64; Operator::ALL.len()],
    rng: &mut impl Rng,
) -> (Genome, Vec<String>, Vec<Operator>) {
    let mut child = parent.clone();
    let (mut changes, mut operators) = (Vec::new(), Vec::new());
    let mut stack = 1;
    while stack < HAVOC_STACK_MAX && rng.gen_bool(HAVOC_MORE_PROBABILITY) {
        stack += 1;
    }
    for _ in 0..stack {
        for _ in 0..OPERATOR_TRIES_MAX {
            let operator = draw(weights, rng);
            if let Some(change) = apply(operator, &mut child, vocab, rng) {
                changes.push(change);
                operators.push(operator);
                break;
            }
        }
    }
    (child, changes, operators)
}

/// An operator drawn with probability proportional to its weight.
fn draw(weights: &[f64; Operator::ALL.len()], rng: &mut impl Rng) -> Operator {
    let total: f64 = weights.iter().sum();
    let mut at = rng.gen_range(0.0..total.max(f64::MIN_POSITIVE));
    for (operator, weight) in Operator::ALL.iter().zip(weights) {
        if at < *weight {
            return *operator;
        }
        at -= weight;
    }
    Operator::ALL[Operator::ALL.len() - 1]
}

/// One change by `operator`, or none when it found nothing to change.
fn apply(operator: Operator, genome: &mut Genome, vocab: &Vocabulary, rng: &mut impl Rng) -> Option<String> {
    match operator {
        Operator::Drop => drop_gene(genome, vocab, rng),
        Operator::Add => add_gene(genome, vocab, rng),
        Operator::Faster => scale_interval(genome, vocab, rng.gen_range(0.3..=0.8), rng),
        Operator::Slower => scale_interval(genome, vocab, rng.gen_range(1.25..=2.0), rng),
        Operator::Longer => scale_duration(genome, vocab, rng.gen_range(1.1..=1.5), rng),
        Operator::Shorter => scale_duration(genome, vocab, rng.gen_range(0.67..=0.9), rng),
        Operator::Likelier => scale_probability(genome, vocab, rng.gen_range(1.1..=2.0), rng),
        Operator::Unlikelier => scale_probability(genome, vocab, rng.gen_range(0.5..=0.9), rng),
        Operator::Weight => {
            let gene = genome.genes.choose_mut(rng)?;
            let family = vocab.elements[gene.element].family;
            if matches!(family, Family::Flaps | Family::Trigger) {
                return None;
            }
            let weight = gene.weight.unwrap_or(1);
            let next = if rng.gen_bool(0.5) { weight * 2 } else { weight / 2 }.clamp(WEIGHT.0, WEIGHT.1);
            gene.weight = Some(next);
            (next != weight).then(|| format!("{} weight {next}", vocab.label(gene.element)))
        }
        Operator::Retarget => retarget(genome, vocab, rng),
        Operator::Workload => {
            let before = genome.rate_x;
            genome.rate_x = clamp(before * rng.gen_range(0.67..=1.5), RATE_X);
            (genome.rate_x != before).then(|| format!("workload rate x{:.2}", genome.rate_x))
        }
        Operator::Intensify => scale_all(genome, rng.gen_range(0.4..=0.8)),
        Operator::Calm => scale_all(genome, rng.gen_range(1.25..=2.0)),
        Operator::Reshuffle => reshuffle(genome, vocab, rng),
    }
}

/// Every family's mean gap times `factor`.
fn scale_all(genome: &mut Genome, factor: f64) -> Option<String> {
    let before = genome.clone();
    for slot in [
        &mut genome.process_interval_x,
        &mut genome.network_interval_x,
        &mut genome.link_interval_x,
        &mut genome.flaps_up_x,
    ] {
        *slot = clamp(*slot * factor, INTERVAL_X);
    }
    (*genome != before).then(|| format!("every mean gap x{factor:.2}"))
}

/// One family of the genome's system drawn anew (see the module docs).
fn reshuffle(genome: &mut Genome, vocab: &Vocabulary, rng: &mut impl Rng) -> Option<String> {
    let families = [Family::Process, Family::Partition, Family::Link, Family::Trigger];
    let &family = families.choose(rng)?;
    let elements: Vec<usize> = (0..vocab.elements.len())
        .filter(|&e| vocab.elements[e].family == family && vocab.fits(e, genome.base))
        .collect();
    if elements.is_empty() {
        return None;
    }
    let mut kept: Vec<usize> = elements.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
    if kept.is_empty() {
        kept.push(*elements.choose(rng)?);
    }
    genome.genes.retain(|g| vocab.elements[g.element].family != family);
    for element in kept {
        let mut gene = Gene {
            element,
            duration_x: clamp(rng.gen_range(DURATION_X.0..=DURATION_X.1), DURATION_X),
            weight: None,
            probability_x: 1.0,
            targets: None,
            shape: None,
        };
        if rng.gen_bool(0.5) && vocab.retargetable(element) {
            gene.targets = RETARGET_ROLES.choose(rng).map(|r| r.to_string());
        }
        if rng.gen_bool(0.5) && family == Family::Partition {
            gene.shape = SHAPES.choose(rng).map(|s| s.to_string());
        }
        if family == Family::Trigger {
            gene.probability_x = clamp(rng.gen_range(0.5..=2.0), PROBABILITY_X);
        }
        genome.genes.push(gene);
    }
    genome.genes.sort_by_key(|g| g.element);
    let gap = (rng.gen_range(INTERVAL_X.0.ln()..=INTERVAL_X.1.ln())).exp();
    match family {
        Family::Process => genome.process_interval_x = clamp(gap, INTERVAL_X),
        Family::Partition => genome.network_interval_x = clamp(gap, INTERVAL_X),
        Family::Link => genome.link_interval_x = clamp(gap, INTERVAL_X),
        _ => {}
    }
    Some(format!("reshuffled {}", format!("{family:?}").to_lowercase()))
}

fn scale_duration(genome: &mut Genome, vocab: &Vocabulary, factor: f64, rng: &mut impl Rng) -> Option<String> {
    let gene = genome.genes.choose_mut(rng)?;
    if vocab.elements[gene.element].family == Family::Flaps {
        return None;
    }
    let before = gene.duration_x;
    gene.duration_x = clamp(before * factor, DURATION_X);
    (gene.duration_x != before).then(|| format!("{} duration x{:.2}", vocab.label(gene.element), gene.duration_x))
}

fn scale_probability(genome: &mut Genome, vocab: &Vocabulary, factor: f64, rng: &mut impl Rng) -> Option<String> {
    let triggers: Vec<&mut Gene> = genome
        .genes
        .iter_mut()
        .filter(|g| vocab.elements[g.element].family == Family::Trigger)
        .collect();
    let gene = triggers.into_iter().max_by_key(|_| rng.gen::<u32>())?;
    let before = gene.probability_x;
    gene.probability_x = clamp(before * factor, PROBABILITY_X);
    (gene.probability_x != before)
        .then(|| format!("{} probability x{:.2}", vocab.label(gene.element), gene.probability_x))
}

fn drop_gene(genome: &mut Genome, vocab: &Vocabulary, rng: &mut impl Rng) -> Option<String> {
    if genome.genes.len() <= 1 {
        return None;
    }
    let gene = genome.genes.remove(rng.gen_range(0..genome.genes.len()));
    Some(format!("dropped {}", vocab.label(gene.element)))
}

fn add_gene(genome: &mut Genome, vocab: &Vocabulary, rng: &mut impl Rng) -> Option<String> {
    let missing: Vec<usize> = (0..vocab.elements.len())
        .filter(|&e| vocab.fits(e, genome.base) && !genome.genes.iter().any(|g| g.element == e))
        // One flaps element at most: a plan has one `flaps`.
        .filter(|&e| {
            vocab.elements[e].family != Family::Flaps
                || !genome
                    .genes
                    .iter()
                    .any(|g| vocab.elements[g.element].family == Family::Flaps)
        })
        .collect();
    let &element = missing.choose(rng)?;
    let at = genome.genes.partition_point(|g| g.element < element);
    genome.genes.insert(
        at,
        Gene {
            element,
            duration_x: 1.0,
            weight: None,
            probability_x: 1.0,
            targets: None,
            shape: None,
        },
    );
    Some(format!("added {}", vocab.label(element)))
}

fn scale_interval(genome: &mut Genome, vocab: &Vocabulary, factor: f64, rng: &mut impl Rng) -> Option<String> {
    let has = |family: Family| genome.genes.iter().any(|g| vocab.elements[g.element].family == family);
    let mut which: Vec<(&str, Family)> = Vec::new();
    for (name, family) in [
        ("process interval", Family::Process),
        ("partition interval", Family::Partition),
        ("link interval", Family::Link),
        ("flaps mean_up", Family::Flaps),
    ] {
        if has(family) {
            which.push((name, family));
        }
    }
    let &(name, family) = which.choose(rng)?;
    let slot = match family {
        Family::Process => &mut genome.process_interval_x,
        Family::Partition => &mut genome.network_interval_x,
        Family::Link => &mut genome.link_interval_x,
        _ => &mut genome.flaps_up_x,
    };
    let before = *slot;
    *slot = clamp(before * factor, INTERVAL_X);
    (*slot != before).then(|| format!("{name} x{:.2}", *slot))
}

fn retarget(genome: &mut Genome, vocab: &Vocabulary, rng: &mut impl Rng) -> Option<String> {
    let candidates: Vec<usize> = (0..genome.genes.len())
        .filter(|&g| {
            let e = genome.genes[g].element;
            vocab.retargetable(e) || vocab.elements[e].family == Family::Partition
        })
        .collect();
    let &g = candidates.choose(rng)?;
    if vocab.elements[genome.genes[g].element].family == Family::Partition {
        let shape = *SHAPES.choose(rng)?;
        let gene = &mut genome.genes[g];
        let written = vocab.shape_of(gene.element);
        if gene.shape.as_deref().unwrap_or(&written) == shape {
            return None;
        }
        gene.shape = (shape != written).then(|| shape.to_string());
        return Some(format!("{} reshaped to {shape}", vocab.label(gene.element)));
    }
    let role = *RETARGET_ROLES.choose(rng)?;
    let gene = &mut genome.genes[g];
    let current = gene.targets.clone().unwrap_or_else(|| vocab.target_of(gene.element));
    if current == role {
        return None;
    }
    gene.targets = (role != vocab.target_of(gene.element)).then(|| role.to_string());
    Some(format!("{} aimed at {role}", vocab.label(gene.element)))
}

/// `genome` with whole families taken from `other` (each family with probability 1/2, at least one that differs),
/// the mean gaps of the families taken with them; what was taken. `None` when nothing could be taken (the other has
/// the same families, or a splice would leave no gene).
pub fn splice(
    genome: &Genome,
    other: &Genome,
    vocab: &Vocabulary,
    rng: &mut impl Rng,
) -> Option<(Genome, Vec<String>)> {
    let families = [
        Family::Process,
        Family::Flaps,
        Family::Partition,
        Family::Link,
        Family::Trigger,
    ];
    let genes_of = |g: &Genome, family: Family| -> Vec<Gene> {
        g.genes
            .iter()
            .filter(|gene| vocab.elements[gene.element].family == family && vocab.fits(gene.element, genome.base))
            .cloned()
            .collect()
    };
    let differing: Vec<Family> = families
        .into_iter()
        .filter(|&f| genes_of(genome, f) != genes_of(other, f))
        .collect();
    if differing.is_empty() {
        return None;
    }
    let mut taken: Vec<Family> = differing.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
    if taken.is_empty() {
        taken.push(*differing.choose(rng)?);
    }
    let mut child = genome.clone();
    child
        .genes
        .retain(|g| !taken.contains(&vocab.elements[g.element].family));
    for &family in &taken {
        child.genes.extend(genes_of(other, family));
        match family {
            Family::Process => child.process_interval_x = other.process_interval_x,
            Family::Partition => child.network_interval_x = other.network_interval_x,
            Family::Link => child.link_interval_x = other.link_interval_x,
            Family::Flaps => child.flaps_up_x = other.flaps_up_x,
            Family::Trigger => {}
        }
    }
    child.genes.sort_by_key(|g| g.element);
    if child.genes.is_empty() {
        return None;
    }
    let names: Vec<String> = taken.iter().map(|f| format!("{f:?}").to_lowercase()).collect();
    Some((child, vec![format!("spliced {}", names.join(", "))]))
}

fn clamp(value: f64, (min, max): (f64, f64)) -> f64 {
    let clamped = value.clamp(min, max);
    (clamped * 100.0).round() / 100.0
}
