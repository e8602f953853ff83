//! Who the members of a run's cluster are at each moment, read from its history alone: the `observation` `members`
//! events the harness records at the start (`source: plan`) and after every membership change (`source: list`, as
//! the system's adapter lists them). The checks judge convergence, boots and liveness over the members of their
//! moment; coverage and the report's timeline draw the changes.
//!
//! A history without any `members` event (written before membership existed, or imported) has every node as a
//! member throughout: [`Members::is_member`] answers true.

use crate::history::{History, Observation};
use std::collections::BTreeSet;

/// One record of who the members are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembersAt {
    /// The history index of the record.
    pub index: u64,
    /// When (ns since the run started).
    pub time_ns: u64,
    /// The member names (`n1`, ...).
    pub members: BTreeSet<String>,
}

/// Every member record of a run, in history order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    records: Vec<MembersAt>,
}

impl Members {
    /// The member records of `history`.
    pub fn of(history: &History) -> Members {
        let records = history
            .events
            .iter()
            .filter(|event| event.is(Observation::Members))
            .map(|event| MembersAt {
                index: event.index,
                time_ns: event.time_ns,
                members: names(&event.value["members"]),
            })
            .collect();
        Members { records }
    }

    /// Every record, in history order.
    pub fn records(&self) -> &[MembersAt] {
        &self.records
    }

    /// Whether the members changed during the run (more than one distinct member set recorded).
    pub fn changed(&self) -> bool {
        self.records.windows(2).any(|pair| pair[0].members != pair[1].members)
    }

    /// The members as recorded last at or before history index `index` (`None`: nothing recorded yet).
    pub fn at(&self, index: u64) -> Option<&BTreeSet<String>> {
        self.records
            .iter()
            .take_while(|record| record.index <= index)
            .last()
            .map(|record| &record.members)
    }

    /// Whether `node` is a member at history index `index` (true when nothing says otherwise).
    pub fn is_member(&self, node: &str, index: u64) -> bool {
        self.at(index).is_none_or(|members| members.contains(node))
    }

    /// When `node` was a member: `[start_ns, end_ns)` spans up to `end_ns` (one span from 0 when nothing is
    /// recorded).
    pub fn spans(&self, node: &str, end_ns: u64) -> Vec<(u64, u64)> {
        if self.records.is_empty() {
            return vec![(0, end_ns)];
        }
        let mut spans = Vec::new();
        let mut since: Option<u64> = None;
        for record in &self.records {
            match (record.members.contains(node), since) {
                (true, None) => since = Some(record.time_ns),
                (false, Some(start)) => {
                    spans.push((start, record.time_ns));
                    since = None;
                }
                _ => {}
            }
        }
        if let Some(start) = since {
            spans.push((start, end_ns.max(start)));
        }
        spans
    }
}

/// The node names of a JSON list (`["n1", "n3"]`), anything else skipped.
pub fn names(value: &serde_json::Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|name| name.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Event, EventKind};
    use serde_json::json;

    fn members(index: u64, time_ns: u64, names: &[&str]) -> Event {
        Event {
            index,
            time_ns,
            kind: EventKind::Observation,
            process: None,
            worker: None,
            node: None,
            f: "members".into(),
            key: None,
            value: json!({"members": names, "source": "list"}),
            error: None,
        }
    }

    #[test]
    fn given_member_records_when_read_should_answer_who_is_a_member_when_and_draw_its_spans() {
        let history = History {
            events: vec![
                members(0, 0, &["n1", "n2", "n3"]),
                members(4, 10, &["n1", "n2", "n3", "n4"]),
                members(9, 30, &["n1", "n2", "n4"]),
            ],
            truncated_tail: false,
        };
        let record = Members::of(&history);
        assert!(record.changed());
        assert!(!record.is_member("n4", 3) && record.is_member("n4", 4));
        assert!(record.is_member("n3", 8) && !record.is_member("n3", 9));
        assert_eq!(record.spans("n3", 50), [(0, 30)]);
        assert_eq!(record.spans("n4", 50), [(10, 50)]);
        assert_eq!(record.spans("n5", 50), []);
        let none = Members::of(&History::default());
        assert!(
            !none.changed() && none.is_member("n9", 0),
            "no record: everyone is a member"
        );
        assert_eq!(none.spans("n1", 7), [(0, 7)]);
    }
}
