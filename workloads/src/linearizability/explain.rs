//! Explaining a non-linearizable key: the operation the search could not place, the longest partial linearization
//! before it with the model states along it, the operations concurrent with it, and a few plain-English lines.

use super::prepare::{OpOrigin, Partition};
use crate::models::{Model, ModelKind};
use serde::{Deserialize, Serialize};

/// Steps of the partial linearization kept in an explanation (the last ones, which lead up to the failure).
const STEPS_SHOWN: usize = 20;
/// Concurrent operations listed in an explanation.
const CONCURRENT_SHOWN: usize = 20;

/// One operation as a person reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    /// The client process that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u64>,
    /// History index of its invocation.
    pub invoke_index: u64,
    /// History index of its completion (none if the history ended first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_index: Option<u64>,
    /// `ok`, `fail` or `info`.
    pub completion: String,
    /// The model's description, e.g. `read() -> "a"`.
    pub description: String,
}

/// One step of a partial linearization: an operation and the model state after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearizedStep {
    /// The operation.
    pub op: OpSummary,
    /// The model state after it.
    pub state_after: String,
}

/// Why a key is not linearizable, as structured data a report can draw and as plain-English lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// The key.
    pub key: String,
    /// The operation that cannot be linearized after the longest partial linearization: of the operations not yet
    /// placed, the one that returned first.
    pub op: OpSummary,
    /// Whether `op` is legal at all in `state` (if it is, what fails is everything that must follow it).
    pub op_legal_in_state: bool,
    /// Length of the longest partial linearization found.
    pub linearized_count: u64,
    /// Its last steps (at most 20), in order, each with the state after it.
    pub linearized_tail: Vec<LinearizedStep>,
    /// The model state at the end of the longest partial linearization.
    pub state: String,
    /// Operations whose intervals overlap `op`'s (at most 20).
    pub concurrent: Vec<OpSummary>,
    /// How many operations overlap `op` in all.
    pub concurrent_count: u64,
    /// The explanation in a few sentences.
    pub lines: Vec<String>,
}

impl Explanation {
    /// The explanation in one line: the key, the operation that cannot be placed, and whether it is illegal where it
    /// must come or legal there with nothing able to follow it.
    pub fn headline(&self) -> String {
        let why = if self.op_legal_in_state {
            format!(
                "it is legal in state {}, but every way to continue after it fails",
                self.state
            )
        } else {
            format!("it is illegal in state {}", self.state)
        };
        format!(
            "{}: {} ({}) cannot be placed in any legal order: {why}.",
            capitalized(&super::key_subject(&self.key)),
            self.op.description,
            who(&self.op)
        )
    }
}

fn summary<M: Model>(partition: &Partition<M>, i: usize) -> OpSummary {
    let OpOrigin {
        process,
        invoke_index,
        complete_index,
        completion,
    } = partition.origins[i];
    OpSummary {
        process,
        invoke_index,
        complete_index,
        completion: completion.to_string(),
        description: partition.model.describe_op(&partition.ops[i].op),
    }
}

/// Builds the explanation for `partition`, given the longest partial linearization (op indices, in order).
pub(crate) fn explain<M: Model>(partition: &Partition<M>, longest: &[u32], kind: ModelKind) -> Explanation {
    let model = &partition.model;
    let ops = &partition.ops;
    let mut state = model.init();
    let mut steps = Vec::with_capacity(longest.len().min(STEPS_SHOWN));
    let mut placed = vec![false; ops.len()];
    for (n, &i) in longest.iter().enumerate() {
        let i = i as usize;
        placed[i] = true;
        // The search accepted this path, so each step is legal; stay total anyway rather than panic.
        state = model.step(&state, &ops[i].op).unwrap_or(state);
        if n + STEPS_SHOWN >= longest.len() {
            steps.push(LinearizedStep {
                op: summary(partition, i),
                state_after: model.describe_state(&state),
            });
        }
    }
    // Of the operations not placed, the first to return is the one the search had to place next and could not.
    let stuck = (0..ops.len())
        .filter(|&i| !placed[i])
        .min_by_key(|&i| ops[i].ret.unwrap_or(u64::MAX))
        .unwrap_or(0);
    let (call, ret) = (ops[stuck].call, ops[stuck].ret.unwrap_or(u64::MAX));
    let overlapping: Vec<usize> = (0..ops.len())
        .filter(|&i| i != stuck && ops[i].call < ret && ops[i].ret.is_none_or(|r| r > call))
        .collect();
    let op = summary(partition, stuck);
    let legal = model.step(&state, &ops[stuck].op).is_some();
    let state_text = model.describe_state(&state);
    let concurrent: Vec<OpSummary> = overlapping
        .iter()
        .take(CONCURRENT_SHOWN)
        .map(|&i| summary(partition, i))
        .collect();
    let lines = sentences(
        partition,
        kind,
        &op,
        legal,
        &state_text,
        longest,
        &concurrent,
        overlapping.len(),
    );
    Explanation {
        key: partition.key.clone(),
        op,
        op_legal_in_state: legal,
        linearized_count: longest.len() as u64,
        linearized_tail: steps,
        state: state_text,
        concurrent,
        concurrent_count: overlapping.len() as u64,
        lines,
    }
}

fn who(op: &OpSummary) -> String {
    let process = op.process.map_or_else(|| "?".to_string(), |p| p.to_string());
    match op.complete_index {
        Some(done) => format!("process {process}, history events {}..{done}", op.invoke_index),
        None => format!("process {process}, invoked at history event {}", op.invoke_index),
    }
}

#[allow(clippy::too_many_arguments)]
fn sentences<M: Model>(
    partition: &Partition<M>,
    kind: ModelKind,
    op: &OpSummary,
    legal: bool,
    state: &str,
    longest: &[u32],
    concurrent: &[OpSummary],
    concurrent_count: usize,
) -> Vec<String> {
    let mut lines = vec![format!(
        "{}: no order of its {} operations that respects real time is legal for the {kind} model.",
        capitalized(&super::key_subject(&partition.key)),
        partition.ops.len()
    )];
    lines.push(match longest.last() {
        Some(&last) => {
            let last = summary(partition, last as usize);
            format!(
                "The longest legal prefix found places {} operations, ending with {} ({}), and leaves the state {state}.",
                longest.len(),
                last.description,
                who(&last)
            )
        }
        None => format!("Not even a first operation can be placed: the initial state is {state}."),
    });
    lines.push(if legal {
        format!(
            "Next must come {} ({}), the first unplaced operation to return; it is legal there, but every way to \
             continue after it fails.",
            op.description,
            who(op)
        )
    } else {
        format!(
            "Next must come {} ({}), the first unplaced operation to return, but it is illegal in state {state}.",
            op.description,
            who(op)
        )
    });
    if concurrent_count > 0 {
        let named: Vec<String> = concurrent
            .iter()
            .take(3)
            .map(|c| format!("{} [{}]", c.description, c.completion))
            .collect();
        let more = if concurrent_count > named.len() { ", ..." } else { "" };
        lines.push(format!(
            "{concurrent_count} operation(s) overlap it in time and could be ordered around it: {}{more}.",
            named.join(", ")
        ));
    } else {
        lines.push("No operation overlaps it in time, so its place in the order is fixed.".to_string());
    }
    lines
}

/// `text` with its first letter in upper case.
pub(super) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}
