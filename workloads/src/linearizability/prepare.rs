//! From a history to the search's input: pair each invocation with its completion, split by key
//! (P-compositionality: keys are independent objects, so a history is linearizable iff each key's is), and let the
//! model turn each pair into its operation.

use super::search::SearchOp;
use crate::history::{Event, EventKind, History};
use crate::models::{completion_name, Completion, Model};
use std::collections::{BTreeMap, HashMap};

/// An invocation and its completion (`None`: the history ended first), as positions in `History::events`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pair {
    pub invoke: usize,
    pub completion: Option<usize>,
}

/// Where an operation came from, for explanations.
#[derive(Debug, Clone)]
pub(crate) struct OpOrigin {
    pub process: Option<u64>,
    pub invoke_index: u64,
    pub complete_index: Option<u64>,
    pub completion: &'static str,
}

/// One key's operations, ready to search.
pub(crate) struct Partition<M: Model> {
    pub key: String,
    pub model: M,
    pub ops: Vec<SearchOp<M::Op>>,
    pub origins: Vec<OpOrigin>,
}

/// Pairs client invocations with their completions by process. A process that invokes again without completing, or
/// never completes, leaves its operation's outcome unknown.
pub(crate) fn pair_operations(history: &History) -> Result<Vec<Pair>, String> {
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut pairs = Vec::new();
    for (pos, event) in history.events.iter().enumerate() {
        if !event.kind.is_client() {
            continue;
        }
        let process = event.client_process()?;
        if event.kind == EventKind::Invoke {
            if let Some(previous) = open.insert(process, pos) {
                pairs.push(Pair {
                    invoke: previous,
                    completion: None,
                });
            }
            continue;
        }
        let invoke = open.remove(&process).ok_or_else(|| {
            format!(
                "history event {}: {:?} completion of {} for process {process}, which has no open invocation",
                event.index, event.kind, event.f
            )
        })?;
        pairs.push(Pair {
            invoke,
            completion: Some(pos),
        });
    }
    pairs.extend(open.into_values().map(|invoke| Pair {
        invoke,
        completion: None,
    }));
    pairs.sort_by_key(|p| p.invoke);
    Ok(pairs)
}

/// Splits pairs by key (or keeps one partition when `by_key` is false) and builds each partition's model and ops.
pub(crate) fn partitions<M: Model + Default>(
    history: &History,
    pairs: &[Pair],
    by_key: bool,
) -> Result<Vec<Partition<M>>, String> {
    let mut groups: BTreeMap<&str, Vec<Pair>> = BTreeMap::new();
    for pair in pairs {
        let key = if by_key {
            history.events[pair.invoke].key.as_deref().unwrap_or("")
        } else {
            ""
        };
        groups.entry(key).or_default().push(*pair);
    }
    groups
        .into_iter()
        .map(|(key, pairs)| partition(history, key, &pairs))
        .collect()
}

fn partition<M: Model + Default>(history: &History, key: &str, pairs: &[Pair]) -> Result<Partition<M>, String> {
    let mut model = M::default();
    let mut ops = Vec::with_capacity(pairs.len());
    let mut origins = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let invoke = &history.events[pair.invoke];
        let done: Option<&Event> = pair.completion.map(|p| &history.events[p]);
        let completion = match done {
            Some(e) if e.kind == EventKind::Ok => Completion::Ok(e),
            Some(e) if e.kind == EventKind::Fail => Completion::Fail(e),
            other => Completion::Unknown(other),
        };
        let op = model.op_from_history(invoke, completion).map_err(|message| {
            format!(
                "history event {} ({} by process {}): {message}",
                invoke.index,
                invoke.f,
                invoke.process.unwrap_or_default()
            )
        })?;
        let Some(op) = op else { continue };
        let ret = match completion {
            Completion::Unknown(_) => None,
            _ => pair.completion.map(|p| p as u64),
        };
        ops.push(SearchOp {
            op,
            call: pair.invoke as u64,
            ret,
        });
        origins.push(OpOrigin {
            process: invoke.process,
            invoke_index: invoke.index,
            complete_index: done.map(|e| e.index),
            completion: completion_name(&completion),
        });
    }
    Ok(Partition {
        key: key.to_string(),
        model,
        ops,
        origins,
    })
}
