//! Sentences: one per dependency edge, saying which read or write puts one transaction before another, in Elle's
//! manner ("T2 read k3 = [1 4], so it followed T1's append of 4 (wr)").

use super::graph::{Edge, Why};
use super::index::Index;
use super::input::{MicroOp, ReadValue, TxnModel};

/// Lists longer than this are shown by their first and last few elements.
const LIST_SHOWN_MAX: usize = 12;

/// A list as Elle prints it, `[1 4 7]`; a long one abbreviated, `[1 2 3 4 … 97 98 99 100] (100 values)`.
pub(crate) fn show_list(items: &[i64]) -> String {
    let join = |part: &[i64]| part.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
    if items.len() <= LIST_SHOWN_MAX {
        return format!("[{}]", join(items));
    }
    let edge = LIST_SHOWN_MAX / 3;
    format!(
        "[{} … {}] ({} values)",
        join(&items[..edge]),
        join(&items[items.len() - edge..]),
        items.len()
    )
}

/// What a read returned, as a sentence shows it: `[1 4]`, `5` or `nil` (a key never written; for list-append Elle's
/// `nil` is the empty list). `nil` in both models, as the report's op table writes it: a sentence that said `[]`
/// where the table beside it says `nil` made readers look for two different reads.
pub(crate) fn show_read(value: &Option<ReadValue>, _model: TxnModel) -> String {
    match value {
        Some(ReadValue::List(items)) => show_list(items),
        Some(ReadValue::Register(v)) => v.to_string(),
        None => "nil".to_string(),
    }
}

/// `read k3 = [1 4]`, for the read micro-op `op` of `txn`.
fn read_phrase(index: &Index<'_>, txn: u32, op: u32) -> String {
    match index.op(txn, op) {
        MicroOp::Read { key, value } => format!("read {key} = {}", show_read(value, index.model)),
        other => format!("did {other:?}"),
    }
}

/// `append of 4` or `write of 4`.
fn write_noun(model: TxnModel, value: i64) -> String {
    match model {
        TxnModel::ListAppend => format!("append of {value}"),
        TxnModel::RwRegister => format!("write of {value}"),
    }
}

/// `appended 4 to k3` or `wrote 4 to k3`.
fn write_verb(model: TxnModel, value: i64, key: &str) -> String {
    match model {
        TxnModel::ListAppend => format!("appended {value} to {key}"),
        TxnModel::RwRegister => format!("wrote {value} to {key}"),
    }
}

/// A time since the run's start, in ms with µs precision.
fn show_ms(time_ns: u64) -> String {
    format!("{:.3} ms", time_ns as f64 / 1e6)
}

/// The sentence that explains one edge of a cycle.
pub(crate) fn edge_sentence(index: &Index<'_>, edge: &Edge) -> String {
    let (from, to) = (index.name(edge.from), index.name(edge.to));
    let model = index.model;
    match edge.why {
        Why::Ww {
            key,
            before,
            after,
            read_op: None,
            unobserved,
        } => format!(
            "{to} {}{} {from}'s {}, so it followed {from} (ww)",
            write_verb(model, after, index.key(key)),
            if unobserved {
                ", which no read shows, so after every version a read shows, the last of them"
            } else {
                " right after"
            },
            write_noun(model, before)
        ),
        Why::Ww {
            before,
            after,
            read_op: Some(op),
            ..
        } => format!(
            "{to} {} ({from}'s {}) and then wrote {after}, so it followed {from} (ww)",
            read_phrase(index, edge.to, op),
            write_noun(model, before)
        ),
        Why::Wr { op, value } => format!(
            "{to} {}, so it followed {from}'s {} (wr)",
            read_phrase(index, edge.to, op),
            write_noun(model, value)
        ),
        Why::Rw { op, value } => {
            let key = index.key(index.op_key[op as usize]);
            let missed = match model {
                TxnModel::ListAppend => " without it",
                TxnModel::RwRegister => ", an earlier version",
            };
            format!(
                "{to} {} and {from} {}{missed}, so {from} came before {to} (rw)",
                write_verb(model, value, key),
                read_phrase(index, edge.from, op)
            )
        }
        Why::Realtime => {
            let (before, after) = (&index.txns[edge.from as usize], &index.txns[edge.to as usize]);
            match (before.positions, after.positions) {
                // A history's order is what real time means there (see `Txn::positions`).
                (Some((_, completed)), Some((invoked, _))) => {
                    format!("{from} completed (event {completed}) before {to} was invoked (event {invoked}) (realtime)")
                }
                _ => format!(
                    "{from} completed at {}, before {to} began at {} (realtime)",
                    show_ms(before.complete_time_ns),
                    show_ms(after.invoke_time_ns)
                ),
            }
        }
        Why::Process => format!(
            "process {} ran {from} and then {to} (process)",
            index.txns[edge.from as usize].process
        ),
    }
}
