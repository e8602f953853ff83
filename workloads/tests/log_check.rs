//! The log checker over hand-made histories: each anomaly is found with the right offsets, payloads and operations,
//! and clean histories (info appends present or absent, concurrent appends, reads racing appends) pass.

use faultline_workloads::{
    check_log, Anomaly, AnomalyKind, Durability, Event, EventKind, History, LogCheckOptions, LogCheckResult, Severity,
    Verdict,
};
use serde_json::{json, Value};

/// A history under construction; every event is on log `orders` unless `on` switched it.
#[derive(Default)]
struct H {
    events: Vec<Event>,
    log: Option<String>,
}

impl H {
    fn new() -> Self {
        H::default()
    }

    fn on(&mut self, log: &str) -> &mut Self {
        self.log = Some(log.into());
        self
    }

    fn push(&mut self, kind: EventKind, process: u64, f: &str, value: Value) -> &mut Self {
        let index = self.events.len() as u64;
        self.events.push(Event {
            index,
            time_ns: index * 1000,
            kind,
            process: Some(process),
            worker: Some(process),
            node: Some("n1".into()),
            f: f.into(),
            key: Some(self.log.clone().unwrap_or_else(|| "orders".into())),
            value,
            error: None,
        });
        self
    }

    fn append(&mut self, process: u64, payload: &str) -> &mut Self {
        self.push(EventKind::Invoke, process, "append", json!(payload))
    }

    fn acked(&mut self, process: u64, offset: u64) -> &mut Self {
        self.push(EventKind::Ok, process, "append", json!({ "offset": offset }))
    }

    fn ends(&mut self, kind: EventKind, process: u64, f: &str) -> &mut Self {
        self.push(kind, process, f, Value::Null)
    }

    /// An append invoked and acknowledged at once.
    fn appended(&mut self, process: u64, payload: &str, offset: u64) -> &mut Self {
        self.append(process, payload).acked(process, offset)
    }

    fn read(&mut self, process: u64, from: u64) -> &mut Self {
        self.push(EventKind::Invoke, process, "read", json!({"from": from, "limit": 100}))
    }

    fn got(&mut self, process: u64, from: u64, entries: &[(u64, &str)], end: u64) -> &mut Self {
        let entries: Vec<Value> = entries.iter().map(|(o, p)| json!([o, p])).collect();
        self.push(
            EventKind::Ok,
            process,
            "read",
            json!({"from": from, "entries": entries, "end": end}),
        )
    }

    /// A read invoked and answered at once.
    fn read_ok(&mut self, process: u64, from: u64, entries: &[(u64, &str)], end: u64) -> &mut Self {
        self.read(process, from).got(process, from, entries, end)
    }

    fn history(&self) -> History {
        History {
            events: self.events.clone(),
            truncated_tail: false,
        }
    }

    fn check(&self) -> LogCheckResult {
        check_log(&self.history(), &LogCheckOptions::default())
    }

    fn check_with(&self, linearizable_reads: bool, durability: Durability) -> LogCheckResult {
        check_log(
            &self.history(),
            &LogCheckOptions {
                linearizable_reads,
                durability,
            },
        )
    }
}

fn of_kind(result: &LogCheckResult, kind: AnomalyKind) -> Vec<&Anomaly> {
    result.anomalies.iter().filter(|a| a.kind == kind).collect()
}

fn only(result: &LogCheckResult, kind: AnomalyKind) -> &Anomaly {
    let found = of_kind(result, kind);
    assert_eq!(found.len(), 1, "expected one {kind:?} anomaly: {result:#?}");
    found[0]
}

#[track_caller]
fn assert_valid(result: &LogCheckResult) {
    assert_eq!(result.verdict, Verdict::Valid, "{result:#?}");
    assert!(result.anomalies.is_empty(), "{result:#?}");
}

#[test]
fn given_sequential_appends_and_forward_reads_when_checked_should_be_valid() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(7, 0, &[(0, "a")], 2).read_ok(7, 1, &[(1, "b")], 2);
    h.appended(1, "c", 2).read_ok(7, 2, &[(2, "c")], 3);
    h.read_ok(100, 0, &[(0, "a"), (1, "b"), (2, "c")], 3);
    let result = h.check();
    assert_valid(&result);
    assert_eq!(result.stats.appends_ok, 3);
    assert_eq!(result.stats.final_reads, 2, "both reads after the last append");
    assert_eq!(result.stats.acked_unseen, 0);
}

#[test]
fn given_concurrent_appends_acknowledged_out_of_order_and_a_racing_read_when_checked_should_be_valid() {
    let mut h = H::new();
    h.append(1, "a").append(2, "b").read(3, 0);
    h.acked(2, 0).got(3, 0, &[(0, "b")], 1).acked(1, 1);
    h.read_ok(100, 0, &[(0, "b"), (1, "a")], 2);
    assert_valid(&h.check());
}

#[test]
fn given_info_appends_present_or_absent_when_checked_should_be_valid() {
    let mut h = H::new();
    h.append(1, "a").ends(EventKind::Info, 1, "append");
    h.append(2, "b").ends(EventKind::Info, 2, "append");
    h.append(3, "never-completed");
    h.appended(4, "c", 1);
    h.read_ok(100, 0, &[(0, "a"), (1, "c")], 2);
    let result = h.check();
    assert_valid(&result);
    assert_eq!(result.stats.appends_unknown, 3);
}

#[test]
fn given_failed_read_and_failed_append_absent_when_checked_should_be_valid() {
    let mut h = H::new();
    h.append(1, "a").ends(EventKind::Fail, 1, "append");
    h.read(2, 0).ends(EventKind::Info, 2, "read");
    h.appended(1, "b", 0).read_ok(100, 0, &[(0, "b")], 1);
    let result = h.check();
    assert_valid(&result);
    assert_eq!(result.stats.reads_not_ok, 1);
}

#[test]
fn given_acknowledged_append_past_the_final_read_end_when_checked_should_report_it_lost() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(100, 0, &[(0, "a")], 1);
    let result = h.check();
    assert_eq!(result.verdict, Verdict::Invalid);
    let lost = only(&result, AnomalyKind::Lost);
    assert_eq!(lost.offsets, vec![1]);
    assert_eq!(lost.payloads, vec![json!("b")]);
    assert_eq!(lost.severity, Severity::Error);
    assert_eq!(lost.ops[0].invoke_index, 2, "the append of b");
    assert_eq!(lost.ops[1].invoke_index, 4, "the final read");
    assert!(lost.reason.contains("final read"), "{}", lost.reason);
    assert!(
        of_kind(&result, AnomalyKind::Stale).is_empty(),
        "a final read is judged lost, not stale"
    );
}

#[test]
fn given_a_later_read_skipping_an_acknowledged_offset_when_checked_should_report_it_lost() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1).appended(1, "c", 2);
    h.read_ok(100, 0, &[(0, "a"), (2, "c")], 3);
    let result = h.check();
    let lost = only(&result, AnomalyKind::Lost);
    assert_eq!(lost.offsets, vec![1]);
    assert_eq!(lost.payloads, vec![json!("b"), Value::Null]);
    assert!(lost.reason.contains("no entry"), "{}", lost.reason);
}

#[test]
fn given_another_payload_at_an_acknowledged_offset_when_checked_should_report_it_lost() {
    let mut h = H::new();
    h.appended(1, "a", 0);
    h.append(2, "c").ends(EventKind::Info, 2, "append");
    h.appended(1, "b", 1);
    h.read_ok(100, 0, &[(0, "a"), (1, "c"), (2, "b")], 3);
    let result = h.check();
    let lost = only(&result, AnomalyKind::Lost);
    assert_eq!(lost.offsets, vec![1]);
    assert_eq!(lost.payloads, vec![json!("b"), json!("c")]);
}

#[test]
fn given_acknowledged_payload_read_only_at_another_offset_when_checked_should_report_it_lost() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(100, 1, &[(1, "a")], 2).read_ok(101, 2, &[], 2);
    let result = h.check();
    let lost: Vec<_> = of_kind(&result, AnomalyKind::Lost);
    let moved = lost
        .iter()
        .find(|a| a.payloads == vec![json!("a")])
        .expect("a reported lost");
    assert_eq!(moved.offsets, vec![0, 1], "acknowledged at 0, read at 1");
    assert!(moved.reason.contains("only at"), "{}", moved.reason);
}

#[test]
fn given_a_payload_at_two_offsets_when_checked_should_report_it_duplicated() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(100, 0, &[(0, "a"), (1, "b"), (2, "a")], 3);
    let result = h.check();
    assert_eq!(result.verdict, Verdict::Invalid);
    let dup = only(&result, AnomalyKind::Duplicated);
    assert_eq!(dup.offsets, vec![0, 2]);
    assert_eq!(dup.payloads, vec![json!("a")]);
    assert!(dup.reason.contains("one read"), "{}", dup.reason);
    assert_eq!(result.counts.len(), 1, "only the duplicate: {result:#?}");
}

#[test]
fn given_an_info_payload_in_two_agreeing_reads_at_two_offsets_when_checked_should_report_it_duplicated() {
    let mut h = H::new();
    h.append(1, "a").ends(EventKind::Info, 1, "append");
    h.read_ok(5, 0, &[(0, "a")], 1);
    h.appended(2, "b", 1);
    h.read_ok(5, 1, &[(1, "b"), (2, "a")], 3);
    let result = h.check();
    let dup = only(&result, AnomalyKind::Duplicated);
    assert_eq!(dup.offsets, vec![0, 2]);
}

#[test]
fn given_two_reads_disagreeing_on_offsets_when_checked_should_report_inconsistent_offsets_not_duplicates() {
    let mut h = H::new();
    h.append(1, "a").ends(EventKind::Info, 1, "append");
    h.append(2, "b").ends(EventKind::Info, 2, "append");
    h.read_ok(5, 0, &[(0, "a"), (1, "b")], 2);
    h.read_ok(6, 0, &[(0, "b"), (1, "a")], 2);
    let result = h.check();
    assert_eq!(result.verdict, Verdict::Invalid);
    let found = of_kind(&result, AnomalyKind::Inconsistent);
    assert_eq!(found.len(), 2, "{result:#?}");
    assert_eq!(found[0].offsets, vec![0]);
    assert_eq!(found[0].payloads, vec![json!("a"), json!("b")]);
    assert_eq!(found[1].offsets, vec![1]);
    assert!(
        of_kind(&result, AnomalyKind::Duplicated).is_empty(),
        "reordering is not duplication"
    );
}

#[test]
fn given_a_read_with_offsets_out_of_order_when_checked_under_memory_durability_should_still_be_invalid() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(100, 0, &[(1, "b"), (0, "a")], 2);
    let result = h.check_with(true, Durability::QuorumMemory);
    assert_eq!(result.verdict, Verdict::Invalid);
    let bad = only(&result, AnomalyKind::Inconsistent);
    assert_eq!(bad.offsets, vec![1, 0]);
    assert_eq!(bad.severity, Severity::Error);
}

#[test]
fn given_a_read_returning_an_offset_at_its_own_end_when_checked_should_report_it_inconsistent() {
    let mut h = H::new();
    h.appended(1, "a", 0);
    h.read_ok(100, 0, &[(0, "a")], 0);
    let result = h.check();
    let bad = of_kind(&result, AnomalyKind::Inconsistent);
    assert!(
        bad.iter().any(|a| a.reason.contains("outside the range [0, 0)")),
        "{result:#?}"
    );
}

#[test]
fn given_a_consumer_rereading_different_data_when_checked_should_report_non_monotonic() {
    let mut h = H::new();
    h.append(1, "a").ends(EventKind::Info, 1, "append");
    h.append(1, "b").ends(EventKind::Info, 1, "append");
    h.append(1, "c").ends(EventKind::Info, 1, "append");
    h.read_ok(5, 0, &[(0, "a"), (1, "b")], 2);
    h.read_ok(5, 1, &[(1, "c")], 2);
    let result = h.check();
    let nm = only(&result, AnomalyKind::NonMonotonic);
    assert_eq!(nm.offsets, vec![1]);
    assert_eq!(nm.payloads, vec![json!("b"), json!("c")]);
    assert_eq!(nm.ops[0].process, 5);
    assert_eq!(
        of_kind(&result, AnomalyKind::Inconsistent).len(),
        1,
        "the same fact per offset"
    );
}

#[test]
fn given_a_consumer_seeing_the_end_go_backwards_when_reads_are_linearizable_should_report_non_monotonic_and_stale() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(5, 0, &[(0, "a"), (1, "b")], 2);
    h.read_ok(5, 2, &[], 1);
    h.append(1, "c").ends(EventKind::Info, 1, "append");
    h.read_ok(100, 0, &[(0, "a"), (1, "b")], 2);
    let result = h.check();
    let nm = only(&result, AnomalyKind::NonMonotonic);
    assert_eq!(nm.offsets, vec![2, 1]);
    let stale = only(&result, AnomalyKind::Stale);
    assert_eq!(stale.offsets, vec![1]);
    assert_eq!(stale.payloads, vec![json!("b")]);

    let relaxed = h.check_with(false, Durability::QuorumDisk);
    assert_valid(&relaxed);
}

#[test]
fn given_a_read_that_began_after_an_acknowledgement_and_ends_before_it_when_checked_should_report_stale() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(5, 0, &[(0, "a")], 1);
    h.appended(1, "c", 2);
    h.read_ok(100, 0, &[(0, "a"), (1, "b"), (2, "c")], 3);
    let result = h.check();
    assert_eq!(result.verdict, Verdict::Invalid);
    let stale = only(&result, AnomalyKind::Stale);
    assert_eq!(stale.offsets, vec![1]);
    assert_eq!(stale.payloads, vec![json!("b")]);
    assert_eq!((stale.ops[0].f.as_str(), stale.ops[1].f.as_str()), ("append", "read"));
    assert_eq!(stale.ops[1].invoke_index, 4);
    assert_eq!(result.counts.len(), 1, "{result:#?}");

    assert_valid(&h.check_with(false, Durability::QuorumDisk));
}

#[test]
fn given_a_read_racing_an_append_that_misses_it_when_checked_should_be_valid() {
    let mut h = H::new();
    h.appended(1, "a", 0);
    h.append(1, "b").read(5, 0).acked(1, 1).got(5, 0, &[(0, "a")], 1);
    h.read_ok(100, 0, &[(0, "a"), (1, "b")], 2);
    assert_valid(&h.check());
}

#[test]
fn given_a_payload_nobody_appended_when_checked_should_report_a_phantom() {
    let mut h = H::new();
    h.appended(1, "a", 0);
    h.read_ok(100, 0, &[(0, "a"), (1, "ghost")], 2);
    let result = h.check();
    assert_eq!(result.verdict, Verdict::Invalid);
    let phantom = only(&result, AnomalyKind::Phantom);
    assert_eq!(phantom.offsets, vec![1]);
    assert_eq!(phantom.payloads, vec![json!("ghost")]);
    assert!(phantom.reason.contains("no append"), "{}", phantom.reason);
}

#[test]
fn given_a_failed_append_that_appears_when_checked_should_report_a_phantom() {
    let mut h = H::new();
    h.append(1, "a").ends(EventKind::Fail, 1, "append");
    h.read_ok(100, 0, &[(0, "a")], 1);
    let phantom = only(&h.check(), AnomalyKind::Phantom).clone();
    assert!(phantom.reason.contains("failed"), "{}", phantom.reason);
    assert_eq!(phantom.ops.len(), 2, "the read and the failed append");
}

#[test]
fn given_a_read_that_returned_a_payload_before_its_append_was_invoked_when_checked_should_report_a_phantom() {
    let mut h = H::new();
    h.read_ok(5, 0, &[(0, "early")], 1);
    h.appended(1, "early", 0);
    h.read_ok(100, 0, &[(0, "early")], 1);
    let phantom = only(&h.check(), AnomalyKind::Phantom).clone();
    assert!(phantom.reason.contains("before its append"), "{}", phantom.reason);
}

#[test]
fn given_a_payload_of_another_log_when_checked_should_report_a_phantom_in_that_log() {
    let mut h = H::new();
    h.appended(1, "a", 0);
    h.on("audit")
        .appended(2, "a", 0)
        .read_ok(100, 0, &[(0, "a"), (1, "b")], 2);
    h.on("orders").read_ok(101, 0, &[(0, "a")], 1);
    let result = h.check();
    let phantom = only(&result, AnomalyKind::Phantom);
    assert_eq!(phantom.log, "audit");
    assert_eq!(phantom.payloads, vec![json!("b")]);
    assert_eq!(result.stats.logs, 2);
}

#[test]
fn given_memory_durability_when_acknowledged_appends_are_lost_should_warn_with_unknown_verdict() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(1, "b", 1);
    h.read_ok(5, 0, &[(0, "a"), (1, "b")], 2);
    h.append(1, "c").ends(EventKind::Info, 1, "append");
    h.read_ok(100, 0, &[(0, "a")], 1);
    let strict = h.check();
    assert_eq!(strict.verdict, Verdict::Invalid);
    let relaxed = h.check_with(true, Durability::QuorumMemory);
    assert_eq!(relaxed.verdict, Verdict::Unknown, "{relaxed:#?}");
    let lost = only(&relaxed, AnomalyKind::Lost);
    assert_eq!(lost.severity, Severity::Warning);
    assert_eq!(lost.offsets, vec![1]);
    assert!(relaxed.reason.contains("in memory"), "{}", relaxed.reason);
}

#[test]
fn given_two_appends_acknowledged_at_one_offset_when_checked_should_report_inconsistent() {
    let mut h = H::new();
    h.appended(1, "a", 0).appended(2, "b", 0);
    h.read_ok(100, 0, &[(0, "a"), (1, "b")], 2);
    let result = h.check();
    let found = of_kind(&result, AnomalyKind::Inconsistent);
    assert!(
        found.iter().any(|a| a.reason.contains("both acknowledged at offset 0")),
        "{result:#?}"
    );
    assert_eq!(result.verdict, Verdict::Invalid);
}

#[test]
fn given_a_malformed_event_when_checked_should_be_unknown_naming_the_event() {
    let mut h = H::new();
    h.append(1, "a").push(EventKind::Ok, 1, "append", json!("zero"));
    let result = h.check();
    assert_eq!(result.verdict, Verdict::Unknown);
    assert!(result.reason.contains("history event 1"), "{}", result.reason);

    let mut h = H::new();
    h.read(1, 0).push(
        EventKind::Ok,
        1,
        "read",
        json!({"from": 0, "entries": [["0", "a"]], "end": 1}),
    );
    assert!(h.check().reason.contains("[offset, payload] pairs"));

    let mut h = H::new();
    h.appended(1, "a", 0).appended(2, "a", 1);
    assert!(h.check().reason.contains("must be unique"));
}

#[test]
fn given_many_lost_appends_when_checked_should_keep_one_hundred_and_count_all() {
    let mut h = H::new();
    for i in 0..150 {
        h.appended(1, &format!("m{i}"), i);
    }
    h.read_ok(100, 0, &[], 0);
    let result = h.check();
    assert_eq!(result.counts[&AnomalyKind::Lost], 150);
    assert_eq!(of_kind(&result, AnomalyKind::Lost).len(), 100);
    assert!(result.reason.contains("150 lost"), "{}", result.reason);
}

#[test]
fn given_a_result_when_serialized_should_round_trip_with_kebab_case_kinds() {
    let mut h = H::new();
    h.appended(1, "a", 0);
    h.read_ok(100, 0, &[(0, "a"), (1, "ghost")], 2);
    let result = h.check();
    let text = serde_json::to_string(&result).expect("serializable");
    assert!(text.contains("\"counts\":{\"phantom\":1}"), "{text}");
    assert!(text.contains("\"durability\":\"quorum-disk\""), "{text}");
    let back: LogCheckResult = serde_json::from_str(&text).expect("deserializable");
    assert_eq!(back, result);
}

#[test]
fn given_non_log_operations_when_checked_should_ignore_them() {
    let mut h = H::new();
    h.push(EventKind::Invoke, 9, "write", json!("x"))
        .push(EventKind::Ok, 9, "write", Value::Null);
    h.appended(1, "a", 0).read_ok(100, 0, &[(0, "a")], 1);
    let result = h.check();
    assert_valid(&result);
    assert_eq!(result.stats.ignored_ops, 1);
}
