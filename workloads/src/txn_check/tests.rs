//! Conformance: a hand-written history for every anomaly class, each found with the right class and its minimal
//! cycle; valid histories that must pass (with indeterminate transactions that could close a cycle but need not);
//! the model table applied to write skew.

use super::*;
use serde_json::json;

/// A transaction from the client protocol's JSON `value`.
fn txn(
    index: u64,
    process: u64,
    invoke_time_ns: u64,
    complete_time_ns: u64,
    outcome: &str,
    ops: serde_json::Value,
) -> Txn {
    serde_json::from_value(json!({
        "index": index,
        "process": process,
        "invoke_time_ns": invoke_time_ns,
        "complete_time_ns": complete_time_ns,
        "outcome": outcome,
        "value": ops,
    }))
    .expect("a well-formed test transaction")
}

/// An `ok` transaction on its own process, concurrent with every other `concurrent` one (no real-time or process
/// edges between them).
fn concurrent(index: u64, ops: serde_json::Value) -> Txn {
    txn(index, index, 0, 1_000, "ok", ops)
}

fn options(model: TxnModel, claimed: ConsistencyModel) -> TxnCheckOptions {
    TxnCheckOptions::for_claims(model, vec![claimed], Vec::new()).expect("no anomaly names to refuse")
}

fn check(txns: &[Txn], model: TxnModel, claimed: ConsistencyModel) -> TxnCheckResult {
    check_txns(txns, &options(model, claimed)).expect("a history the checker accepts")
}

fn list(txns: &[Txn], claimed: ConsistencyModel) -> TxnCheckResult {
    check(txns, TxnModel::ListAppend, claimed)
}

/// The classes found, sorted.
fn classes(result: &TxnCheckResult) -> Vec<AnomalyClass> {
    result.anomaly_counts.keys().copied().collect()
}

/// The only anomaly of `class`.
fn only(result: &TxnCheckResult, class: AnomalyClass) -> &Anomaly {
    let found = result
        .anomalies
        .get(&class)
        .unwrap_or_else(|| panic!("no {class} in {result:#?}"));
    assert_eq!(found.len(), 1, "{found:#?}");
    &found[0]
}

/// The cycle's transactions rotated to start at the smallest, and its edge kinds in that order.
fn cycle_of(anomaly: &Anomaly) -> (Vec<u64>, Vec<EdgeKind>) {
    let at = (0..anomaly.txns.len())
        .min_by_key(|&i| anomaly.txns[i])
        .expect("a cycle has transactions");
    let mut txns = anomaly.txns.clone();
    let mut kinds: Vec<EdgeKind> = anomaly.cycle.iter().map(|s| s.kind).collect();
    txns.rotate_left(at);
    kinds.rotate_left(at);
    for (i, step) in anomaly.cycle.iter().enumerate() {
        assert_eq!(step.from, anomaly.txns[i]);
        assert_eq!(step.to, anomaly.txns[(i + 1) % anomaly.txns.len()]);
    }
    (txns, kinds)
}

use AnomalyClass as A;
use ConsistencyModel as M;
use EdgeKind::{Realtime, Rw, Wr, Ww};

#[test]
fn given_protocol_json_when_parsed_should_read_every_micro_op_and_write_it_back_the_same() {
    let ops = json!([
        ["append", "k3", 7],
        ["r", "k1", [1, 4, 7]],
        ["w", "k2", 5],
        ["r", "k2", null],
        ["r", "k4", 9]
    ]);
    let parsed: Vec<MicroOp> = serde_json::from_value(ops.clone()).expect("the protocol's shape");
    assert_eq!(
        parsed,
        vec![
            MicroOp::Append {
                key: "k3".into(),
                value: 7
            },
            MicroOp::Read {
                key: "k1".into(),
                value: Some(ReadValue::List(vec![1, 4, 7]))
            },
            MicroOp::Write {
                key: "k2".into(),
                value: 5
            },
            MicroOp::Read {
                key: "k2".into(),
                value: None
            },
            MicroOp::Read {
                key: "k4".into(),
                value: Some(ReadValue::Register(9))
            },
        ]
    );
    assert_eq!(serde_json::to_value(&parsed).expect("serializable"), ops);
    let bad = serde_json::from_value::<MicroOp>(json!(["cas", "k1", 3])).expect_err("an unknown function");
    assert!(bad.to_string().contains("unknown function \"cas\""), "{bad}");
}

#[test]
fn given_a_value_written_twice_when_checked_should_refuse_naming_key_value_and_both_writers() {
    let history = [
        concurrent(1, json!([["append", "x", 1]])),
        concurrent(2, json!([["append", "x", 1]])),
    ];
    let err = check_txns(&history, &TxnCheckOptions::default()).expect_err("values must be unique per key");
    assert_eq!(
        err.to_string(),
        "T1 and T2 both wrote 1 to \"x\"; values must be unique per key, so a read of it could not name its writer"
    );
}

#[test]
fn given_a_write_in_a_list_append_history_when_checked_should_refuse_naming_the_op() {
    let history = [concurrent(4, json!([["append", "x", 1], ["w", "y", 2]]))];
    let err = check_txns(&history, &TxnCheckOptions::default()).expect_err("a write has no list-append meaning");
    assert_eq!(
        err.to_string(),
        "T4 op 1: a write in a list-append history; refusing to guess what it means"
    );
}

#[test]
fn given_interleaved_appends_to_two_keys_when_checked_should_find_g0_with_two_ww_edges() {
    let history = [
        concurrent(1, json!([["append", "x", 1], ["append", "y", 1]])),
        concurrent(2, json!([["append", "x", 2], ["append", "y", 2]])),
        concurrent(3, json!([["r", "x", [1, 2]], ["r", "y", [2, 1]]])),
    ];
    let result = list(&history, M::ReadUncommitted);
    assert_eq!(classes(&result), vec![A::G0]);
    let g0 = only(&result, A::G0);
    assert_eq!(cycle_of(g0), (vec![1, 2], vec![Ww, Ww]));
    assert_eq!(
        g0.cycle[0].key.as_deref(),
        Some(if g0.txns[0] == 1 { "x" } else { "y" })
    );
    assert!(
        g0.cycle
            .iter()
            .any(|s| s.sentence == "T2 appended 2 to x right after T1's append of 1, so it followed T1 (ww)"),
        "{g0:#?}"
    );
    assert_eq!(result.verdict, Verdict::Invalid);
    assert!(result.models_satisfied.is_empty());
}

#[test]
fn given_a_write_cycle_whose_ww_edge_is_also_real_time_when_checked_should_find_g0_only() {
    // T1 completed before T2 began, so T1 -rt-> T2 runs beside T1 -ww-> T2: the cycle does not need real time.
    let history = [
        txn(1, 1, 0, 10, "ok", json!([["append", "x", 1], ["append", "y", 2]])),
        txn(2, 2, 20, 30, "ok", json!([["append", "x", 2], ["append", "y", 1]])),
        txn(3, 3, 40, 50, "ok", json!([["r", "x", [1, 2]], ["r", "y", [1, 2]]])),
    ];
    let result = list(&history, M::StrictSerializable);
    assert_eq!(classes(&result), vec![A::G0]);
    assert_eq!(cycle_of(only(&result, A::G0)), (vec![1, 2], vec![Ww, Ww]));
}

#[test]
fn given_a_read_of_a_failed_append_when_checked_should_find_g1a_allowed_only_by_read_uncommitted() {
    let history = [
        txn(1, 1, 0, 1_000, "fail", json!([["append", "x", 1]])),
        concurrent(2, json!([["r", "x", [1]]])),
    ];
    let result = list(&history, M::ReadCommitted);
    // The aborted read gives no dependency edge, and there is nothing else: as Elle, the graph is reported empty.
    assert_eq!(classes(&result), vec![A::G1a, A::EmptyTransactionGraph]);
    let g1a = only(&result, A::G1a);
    assert_eq!(g1a.txns, vec![2, 1]);
    assert_eq!(
        g1a.explanation,
        "T2 read x = [1], but 1 was written only by T1, which failed (aborted read)"
    );
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(result.models_satisfied, vec![M::ReadUncommitted]);
}

#[test]
fn given_a_read_of_a_non_final_append_when_checked_should_find_g1b() {
    let history = [
        concurrent(1, json!([["append", "x", 1], ["append", "x", 2]])),
        concurrent(2, json!([["r", "x", [1]]])),
    ];
    let result = list(&history, M::ReadCommitted);
    // T2 also missed T1's append of 2, which no read shows and so came after 1: T2 -rw-> T1 -wr-> T2 (Elle finds the
    // same G-single-item beside the G1b).
    assert_eq!(classes(&result), vec![A::G1b, A::GSingle]);
    assert_eq!(only(&result, A::G1b).txns, vec![2, 1]);
    assert_eq!(cycle_of(only(&result, A::GSingle)), (vec![1, 2], vec![Wr, Rw]));
    assert_eq!(result.strongest_model, Some(M::ReadUncommitted));
}

#[test]
fn given_two_transactions_reading_each_others_appends_when_checked_should_find_g1c_with_two_wr_edges() {
    let history = [
        concurrent(1, json!([["append", "x", 1], ["r", "y", [1]]])),
        concurrent(2, json!([["append", "y", 1], ["r", "x", [1]]])),
    ];
    let result = list(&history, M::ReadCommitted);
    assert_eq!(classes(&result), vec![A::G1c]);
    let g1c = only(&result, A::G1c);
    assert_eq!(cycle_of(g1c), (vec![1, 2], vec![Wr, Wr]));
    assert!(g1c
        .cycle
        .iter()
        .any(|s| s.sentence == "T2 read x = [1], so it followed T1's append of 1 (wr)"));
    assert_eq!(result.models_satisfied, vec![M::ReadUncommitted]);
}

#[test]
fn given_read_skew_when_checked_should_find_g_single_with_one_rw_edge() {
    let history = [
        concurrent(1, json!([["append", "x", 1], ["append", "y", 1]])),
        concurrent(2, json!([["r", "x", []], ["r", "y", [1]]])),
        concurrent(3, json!([["r", "x", [1]]])),
    ];
    let result = list(&history, M::SnapshotIsolation);
    assert_eq!(classes(&result), vec![A::GSingle]);
    let single = only(&result, A::GSingle);
    assert_eq!(cycle_of(single), (vec![1, 2], vec![Wr, Rw]));
    assert!(single
        .cycle
        .iter()
        .any(|s| s.sentence == "T1 appended 1 to x and T2 read x = [] without it, so T2 came before T1 (rw)"));
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(
        result.not,
        vec![M::RepeatableRead, M::ConsistentView],
        "Elle's `:not` for G-single-item"
    );
    assert_eq!(result.strongest_model, Some(M::CursorStability));
}

#[test]
fn given_two_rw_edges_separated_by_wr_edges_when_checked_should_find_g_nonadjacent_of_four() {
    let history = [
        concurrent(1, json!([["r", "a", []], ["r", "b", [1]]])),
        concurrent(2, json!([["append", "a", 1]])),
        concurrent(3, json!([["r", "a", [1]], ["r", "b", []]])),
        concurrent(4, json!([["append", "b", 1]])),
    ];
    let result = list(&history, M::SnapshotIsolation);
    assert_eq!(classes(&result), vec![A::GNonadjacent]);
    let nonadjacent = only(&result, A::GNonadjacent);
    assert_eq!(cycle_of(nonadjacent), (vec![1, 2, 3, 4], vec![Rw, Wr, Rw, Wr]));
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(result.not, vec![M::SnapshotIsolation, M::RepeatableRead]);
    assert_eq!(result.strongest_model, Some(M::UpdateSerializable));
}

/// T1 and T2 each read the key the other appends to, and miss the other's append: write skew.
fn write_skew() -> Vec<Txn> {
    vec![
        concurrent(1, json!([["r", "x", []], ["append", "y", 1]])),
        concurrent(2, json!([["r", "y", []], ["append", "x", 1]])),
        txn(3, 3, 2_000, 3_000, "ok", json!([["r", "x", [1]], ["r", "y", [1]]])),
    ]
}

#[test]
fn given_write_skew_when_checked_should_find_g2_item_with_two_adjacent_rw_edges() {
    let result = list(&write_skew(), M::Serializable);
    assert_eq!(classes(&result), vec![A::G2Item]);
    let skew = only(&result, A::G2Item);
    assert_eq!(cycle_of(skew), (vec![1, 2], vec![Rw, Rw]));
    assert!(
        skew.explanation.starts_with("G2-item: a cycle of 2 transactions, T"),
        "{}",
        skew.explanation
    );
    assert_eq!(result.verdict, Verdict::Invalid);
    let json = serde_json::to_value(&result).expect("serializable");
    assert_eq!(json["anomalies"]["G2-item"][0]["cycle"][0]["kind"], "rw");
    assert_eq!(json["models_satisfied"][0], "snapshot-isolation");
}

#[test]
fn given_write_skew_when_judged_by_each_model_should_fail_serializable_and_pass_snapshot_isolation() {
    let history = write_skew();
    // Only a claim that needs real time infers its edges, so only then can strong snapshot isolation be decided.
    for (claimed, verdict, strongest) in [
        (M::StrictSerializable, Verdict::Invalid, M::StrongSnapshotIsolation),
        (M::Serializable, Verdict::Invalid, M::SnapshotIsolation),
        (M::RepeatableRead, Verdict::Invalid, M::SnapshotIsolation),
        (M::SnapshotIsolation, Verdict::Valid, M::SnapshotIsolation),
        (M::ReadCommitted, Verdict::Valid, M::SnapshotIsolation),
    ] {
        let result = list(&history, claimed);
        assert_eq!(result.verdict, verdict, "{claimed}: {}", result.reason);
        assert_eq!(result.strongest_model, Some(strongest), "{claimed}");
        for ruled_out in [M::RepeatableRead, M::Serializable, M::StrictSerializable] {
            assert!(!result.models_satisfied.contains(&ruled_out), "{claimed}: {ruled_out}");
        }
        assert_eq!(result.not, vec![M::RepeatableRead]);
        assert_eq!(result.anomaly_types.is_empty(), verdict == Verdict::Valid, "{claimed}");
    }
    let result = list(&history, M::Serializable);
    assert_eq!(
        result.reason,
        "the history shows G2-item (1), forbidden by serializable; the strongest model it is still consistent with \
         is snapshot-isolation"
    );
}

#[test]
fn given_each_class_when_described_should_name_the_weakest_models_that_forbid_it() {
    assert_eq!(
        A::G2Item.forbidden_by_phrase(),
        "forbidden by repeatable-read and every stronger model"
    );
    assert_eq!(
        A::GSingle.forbidden_by_phrase(),
        "forbidden by repeatable-read and consistent-view and every stronger model"
    );
    assert_eq!(
        A::G0.forbidden_by_phrase(),
        "forbidden by read-uncommitted and every stronger model"
    );
    assert_eq!(
        A::Internal.forbidden_by_phrase(),
        "forbidden by read-atomic and every stronger model"
    );
    assert_eq!(
        A::G1a.forbidden_by_phrase(),
        "forbidden by read-committed and every stronger model"
    );
    assert_eq!(
        A::GSingleRealtime.forbidden_by_phrase(),
        "forbidden by strong-snapshot-isolation and every stronger model"
    );
    assert_eq!(
        A::G2ItemProcess.forbidden_by_phrase(),
        "forbidden by strong-session-serializable and every stronger model"
    );
    assert_eq!(
        A::EmptyTransactionGraph.forbidden_by_phrase(),
        "forbidden by no model (it says the check could not be done)"
    );
    assert_eq!(A::G2Item.meaning().0, "write skew");
    assert!(!A::G2Item.forbidden_by().contains(&M::SnapshotIsolation));
}

/// With no model claimed, the sentences say what was claimed instead of "forbidden by no G2" or "forbidden by
/// nothing".
#[test]
fn given_claims_of_anomalies_only_or_of_nothing_when_checked_should_say_what_was_claimed() {
    let only_g2 = TxnCheckOptions::for_claims(TxnModel::ListAppend, Vec::new(), vec!["G2".into()]).expect("G2");
    let result = check_txns(&write_skew(), &only_g2).expect("accepted");
    assert_eq!(result.verdict, Verdict::Invalid);
    assert!(
        result
            .reason
            .starts_with("the history shows G2-item (1), forbidden by the claim of no G2; "),
        "{}",
        result.reason
    );
    let nothing = TxnCheckOptions::for_claims(TxnModel::ListAppend, Vec::new(), Vec::new()).expect("none");
    let result = check_txns(&write_skew(), &nothing).expect("accepted");
    assert_eq!(result.verdict, Verdict::Valid);
    assert!(
        result
            .reason
            .starts_with("nothing was claimed (no model, no anomaly), so nothing is forbidden; "),
        "{}",
        result.reason
    );
}

#[test]
fn given_a_search_budget_too_small_to_finish_when_checked_should_be_unknown_naming_the_undecided_classes() {
    let options = TxnCheckOptions {
        cycle_search_steps_max: 1,
        ..options(TxnModel::ListAppend, M::Serializable)
    };
    let result = check_txns(&write_skew(), &options).expect("a well-formed history");
    assert_eq!(result.verdict, Verdict::Unknown, "{result:#?}");
    assert_eq!(classes(&result), vec![A::CycleSearchTimeout]);
    assert!(result.anomaly_types.contains(&"cycle-search-timeout".to_string()));
    assert!(result.undecided[&A::G2Item].starts_with("the search ran out of its 1 steps in a component of 2"));
    assert_eq!(
        result.reason,
        "no anomaly forbidden by serializable was found, but G-single, G-nonadjacent, G2-item could not be decided; the \
         strongest model it is certainly consistent with is cursor-stability, and the undecided classes (G-single, \
         G-nonadjacent, G2-item) leave open whether it is serializable"
    );
    assert_eq!(result.strongest_model, Some(M::CursorStability));
}

#[test]
fn given_a_stale_read_after_a_completed_append_when_checked_should_find_only_g_single_realtime() {
    let history = [
        txn(1, 1, 0, 10_000_000, "ok", json!([["append", "x", 1]])),
        txn(2, 2, 20_000_000, 30_000_000, "ok", json!([["r", "x", []]])),
        txn(3, 3, 40_000_000, 50_000_000, "ok", json!([["r", "x", [1]]])),
    ];
    let result = list(&history, M::StrictSerializable);
    assert_eq!(classes(&result), vec![A::GSingleRealtime]);
    let stale = only(&result, A::GSingleRealtime);
    assert_eq!(cycle_of(stale), (vec![1, 2], vec![Realtime, Rw]));
    assert!(stale
        .cycle
        .iter()
        .any(|s| s.sentence == "T1 completed at 10.000 ms, before T2 began at 20.000 ms (realtime)"));
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(result.strongest_model, Some(M::StrongSessionSerializable));
    assert_eq!(list(&history, M::Serializable).verdict, Verdict::Valid);
}

#[test]
fn given_a_stale_read_by_the_same_process_when_checked_should_find_the_variant_of_the_order_the_claim_needs() {
    let history = [
        txn(1, 1, 0, 10, "ok", json!([["append", "x", 1]])),
        txn(2, 1, 20, 30, "ok", json!([["r", "x", []]])),
        txn(3, 3, 40, 50, "ok", json!([["r", "x", [1]]])),
    ];
    // A session claim infers process order only (as Elle does) ...
    let result = list(&history, M::StrongSessionSerializable);
    assert_eq!(classes(&result), vec![A::GSingleProcess]);
    assert_eq!(
        cycle_of(only(&result, A::GSingleProcess)),
        (vec![1, 2], vec![EdgeKind::Process, Rw])
    );
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(result.not, vec![M::StrongSessionSnapshotIsolation]);
    assert_eq!(result.strongest_model, Some(M::Serializable));
    // ... a strict one real time, which orders the process's transactions too.
    let strict = list(&history, M::StrictSerializable);
    assert_eq!(classes(&strict), vec![A::GSingleRealtime]);
    assert_eq!(strict.verdict, Verdict::Invalid);
}

#[test]
fn given_a_read_missing_its_own_append_when_checked_should_find_internal_inconsistency() {
    let history = [concurrent(1, json!([["append", "x", 1], ["r", "x", []]]))];
    let result = list(&history, M::ReadUncommitted);
    assert_eq!(classes(&result), vec![A::Internal, A::EmptyTransactionGraph]);
    assert_eq!(
        only(&result, A::Internal).explanation,
        "T1 read x = [], but its own earlier micro-ops on x mean it should have read a list ending in [1]: it lacks 1"
    );
    // Elle's hierarchy: only read atomicity and the models above it forbid internal inconsistency, and nothing here
    // forbids it or finds a dependency, so the verdict is unknown.
    assert_eq!(result.verdict, Verdict::Unknown);
    assert_eq!(result.not, vec![M::ReadAtomic]);
    assert_eq!(list(&history, M::ReadAtomic).verdict, Verdict::Invalid);
}

/// A list-append read of a key nobody appended to returns `nil`; the edge sentence says `nil`, as the op table does.
#[test]
fn given_a_nil_list_read_in_an_edge_when_explained_should_say_nil_as_the_op_table_does() {
    let history = [
        concurrent(1, json!([["append", "x", 1], ["append", "y", 1]])),
        concurrent(2, json!([["r", "x", null], ["r", "y", [1]]])),
        concurrent(3, json!([["r", "x", [1]]])),
    ];
    let result = list(&history, M::SnapshotIsolation);
    let single = only(&result, A::GSingle);
    let sentences: Vec<&str> = single.cycle.iter().map(|s| s.sentence.as_str()).collect();
    assert!(
        sentences.contains(&"T1 appended 1 to x and T2 read x = nil without it, so T2 came before T1 (rw)"),
        "{sentences:?}"
    );
}

/// The second read holds a value the first did not and the transaction did not append: the sentence names it and
/// the transaction that appended it, however long the lists are.
#[test]
fn given_a_read_with_a_value_its_earlier_read_lacked_when_checked_should_name_the_value_and_its_writer() {
    let long: Vec<i64> = (10..40).collect();
    let mut more = long.clone();
    more.insert(17, 99);
    let history = [
        concurrent(
            1,
            json!([
                ["r", "x", long],
                ["append", "x", 7],
                ["r", "x", more.iter().chain([&7]).collect::<Vec<_>>()]
            ]),
        ),
        concurrent(2, json!([["append", "x", 99]])),
    ];
    let result = list(&history, M::ReadUncommitted);
    let internal = &only(&result, A::Internal).explanation;
    assert!(internal.ends_with(": it also holds 99 (appended by T2)"), "{internal}");
    assert!(internal.contains("…"), "the lists are abbreviated: {internal}");
}

#[test]
fn given_a_register_read_disagreeing_with_its_own_write_when_checked_should_find_internal_inconsistency() {
    let history = [
        concurrent(1, json!([["w", "x", 1]])),
        concurrent(2, json!([["w", "x", 2], ["r", "x", 1]])),
    ];
    let result = check(&history, TxnModel::RwRegister, M::ReadUncommitted);
    assert!(result.anomaly_counts.contains_key(&A::Internal), "{result:#?}");
    assert_eq!(only(&result, A::Internal).txns, vec![2]);
}

#[test]
fn given_a_list_holding_a_value_twice_when_checked_should_find_duplicate_elements() {
    let history = [
        concurrent(1, json!([["append", "x", 1]])),
        concurrent(2, json!([["r", "x", [1, 1]]])),
    ];
    let result = list(&history, M::ReadUncommitted);
    assert_eq!(classes(&result), vec![A::DuplicateElements]);
    assert_eq!(
        only(&result, A::DuplicateElements).explanation,
        "T2 read x = [1 1], in which 1 appears more than once"
    );
}

#[test]
fn given_two_reads_disagreeing_on_the_order_when_checked_should_find_incompatible_order() {
    let history = [
        concurrent(1, json!([["append", "x", 1]])),
        concurrent(2, json!([["append", "x", 2]])),
        concurrent(3, json!([["r", "x", [1, 2]]])),
        concurrent(4, json!([["r", "x", [2, 1]]])),
    ];
    let result = list(&history, M::ReadUncommitted);
    assert_eq!(classes(&result), vec![A::IncompatibleOrder]);
    let incompatible = only(&result, A::IncompatibleOrder);
    assert_eq!(incompatible.txns, vec![4, 3]);
    assert_eq!(incompatible.key.as_deref(), Some("x"));
}

#[test]
fn given_one_disagreeing_list_read_three_times_when_checked_should_report_it_once() {
    let history = [
        concurrent(1, json!([["append", "x", 1]])),
        concurrent(2, json!([["append", "x", 2]])),
        concurrent(3, json!([["r", "x", [1, 2]]])),
        concurrent(4, json!([["r", "x", [2]], ["r", "x", [2]]])),
        concurrent(5, json!([["r", "x", [2]]])),
        concurrent(6, json!([["r", "x", [2, 1]]])),
    ];
    let result = list(&history, M::ReadUncommitted);
    let found: Vec<&Vec<u64>> = result.anomalies[&A::IncompatibleOrder]
        .iter()
        .map(|a| &a.txns)
        .collect();
    assert_eq!(found, vec![&vec![4, 3], &vec![6, 3]], "each distinct list once");
    assert_eq!(result.anomaly_counts[&A::IncompatibleOrder], 2);
}

#[test]
fn given_a_read_of_a_value_nobody_wrote_when_checked_should_find_a_garbage_read() {
    let history = [
        concurrent(1, json!([["append", "x", 1]])),
        concurrent(2, json!([["r", "x", [1, 5]]])),
    ];
    let result = list(&history, M::ReadCommitted);
    assert_eq!(classes(&result), vec![A::GarbageRead, A::EmptyTransactionGraph]);
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(
        only(&result, A::GarbageRead).explanation,
        "T2 read x = [1 5], but no transaction in the history wrote 5 to it (a garbage read)"
    );
}

/// elle-cli's `rw-register.edn`: a read of x = 3, which no transaction wrote. faultline calls it a garbage read
/// (faultline's own class, read as an aborted read, so read-committed is ruled out); with `unwritten_reads_initial`
/// it is the key's value from before the history, as Elle's rw-register takes it, and the history is valid as Elle
/// says.
#[test]
fn given_a_register_read_of_a_value_nobody_wrote_should_be_a_garbage_read_unless_read_as_elle_reads_it() {
    let history = [
        txn(0, 0, 0, 10, "ok", json!([["w", "x", 2]])),
        txn(1, 0, 20, 30, "ok", json!([["r", "x", 3]])),
        txn(2, 0, 40, 50, "ok", json!([["r", "x", 2]])),
    ];
    let strict = check(&history, TxnModel::RwRegister, M::StrictSerializable);
    assert_eq!(strict.verdict, Verdict::Invalid, "{}", strict.reason);
    assert!(classes(&strict).contains(&A::GarbageRead), "{:?}", classes(&strict));
    assert!(A::GarbageRead.elle_result().starts_with("none: faultline's own class"));
    let mut elle = options(TxnModel::RwRegister, M::StrictSerializable);
    elle.unwritten_reads_initial = true;
    let as_elle = check_txns(&history, &elle).expect("accepted");
    assert_eq!(as_elle.verdict, Verdict::Valid, "{}", as_elle.reason);
    assert!(!classes(&as_elle).contains(&A::GarbageRead));
}

#[test]
fn given_a_read_holding_a_later_append_of_a_transaction_but_not_its_earlier_one_should_find_a_lost_append() {
    let history = [
        concurrent(1, json!([["append", "x", 1], ["append", "x", 2]])),
        concurrent(2, json!([["r", "x", [2]]])),
    ];
    let result = list(&history, M::ReadUncommitted);
    // Reading 2 and not 1 also misses T1's append of 1, which no read shows: a G-single (T2 -rw-> T1 -wr-> T2).
    assert_eq!(classes(&result), vec![A::GSingle, A::Lost]);
    assert_eq!(only(&result, A::Lost).txns, vec![2, 1]);
}

#[test]
fn given_a_serial_history_when_checked_should_be_valid_and_strict_serializable() {
    let history = [
        txn(1, 1, 0, 10, "ok", json!([["append", "x", 1], ["r", "y", null]])),
        txn(
            2,
            2,
            20,
            30,
            "ok",
            json!([["r", "x", [1]], ["append", "x", 2], ["append", "y", 1]]),
        ),
        txn(5, 2, 31, 35, "fail", json!([["append", "y", 9], ["r", "x", null]])),
        txn(3, 1, 40, 50, "ok", json!([["r", "x", [1, 2]], ["r", "y", [1]]])),
        txn(4, 3, 45, 60, "ok", json!([["append", "x", 3], ["r", "x", [1, 2, 3]]])),
    ];
    let result = list(&history, M::StrictSerializable);
    assert_eq!(result.verdict, Verdict::Valid, "{result:#?}");
    assert!(result.anomalies.is_empty());
    assert_eq!(result.models_satisfied, lattice::held(&Default::default()));
    assert_eq!(result.strongest_model, Some(M::StrictSerializable));
    assert_eq!(result.stats.cyclic_components, 0);
    assert_eq!(result.stats.edges[&Ww], 2);
}

#[test]
fn given_an_unobserved_info_append_that_would_make_a_stale_read_when_checked_should_be_valid() {
    // Had T1 committed before it timed out, T2's empty read would be stale (T1 -rt-> T2 -rw-> T1). Nobody read 1,
    // so T1 may as well have aborted: no cycle may be reported.
    let history = [
        txn(1, 1, 0, 10, "info", json!([["append", "x", 1], ["r", "y", null]])),
        txn(2, 2, 20, 30, "ok", json!([["r", "x", []], ["append", "y", 1]])),
        txn(3, 3, 40, 50, "ok", json!([["r", "y", [1]]])),
    ];
    let result = list(&history, M::StrictSerializable);
    assert_eq!(result.verdict, Verdict::Valid, "{result:#?}");
    assert_eq!(result.stats.info_committed, 0);
}

#[test]
fn given_an_unobserved_info_transaction_that_would_close_write_skew_when_checked_should_be_valid() {
    let history = [
        concurrent(1, json!([["r", "x", []], ["append", "y", 1]])),
        txn(2, 2, 0, 1_000, "info", json!([["r", "y", null], ["append", "x", 1]])),
        txn(3, 3, 2_000, 3_000, "ok", json!([["r", "y", [1]], ["r", "x", []]])),
    ];
    let result = list(&history, M::Serializable);
    assert_eq!(result.verdict, Verdict::Valid, "{result:#?}");
}

#[test]
fn given_an_info_transaction_whose_append_was_read_when_checked_should_treat_it_as_committed() {
    // T1 timed out, but T2 read its append to x, so it committed; T2 missed its append to y: read skew through T1.
    let history = [
        txn(1, 1, 0, 10, "info", json!([["append", "x", 1], ["append", "y", 1]])),
        concurrent(2, json!([["r", "x", [1]], ["r", "y", []]])),
        txn(3, 3, 2_000, 3_000, "ok", json!([["r", "y", [1]]])),
    ];
    let result = list(&history, M::Serializable);
    assert_eq!(result.stats.info_committed, 1);
    assert_eq!(classes(&result), vec![A::GSingle]);
    assert_eq!(cycle_of(only(&result, A::GSingle)), (vec![1, 2], vec![Wr, Rw]));
    assert_eq!(result.verdict, Verdict::Invalid);
}

#[test]
fn given_register_read_skew_when_checked_should_find_g_single() {
    let history = [
        concurrent(1, json!([["w", "x", 1], ["w", "y", 1]])),
        concurrent(2, json!([["r", "x", null], ["r", "y", 1]])),
    ];
    let result = check(&history, TxnModel::RwRegister, M::SnapshotIsolation);
    assert_eq!(classes(&result), vec![A::GSingle]);
    let single = only(&result, A::GSingle);
    assert_eq!(cycle_of(single), (vec![1, 2], vec![Wr, Rw]));
    assert!(single
        .cycle
        .iter()
        .any(|s| s.sentence == "T1 wrote 1 to x and T2 read x = nil, an earlier version, so T2 came before T1 (rw)"));
}

#[test]
fn given_register_write_skew_when_checked_should_find_g2_item_and_allow_snapshot_isolation() {
    let history = [
        concurrent(1, json!([["r", "x", null], ["w", "y", 1]])),
        concurrent(2, json!([["r", "y", null], ["w", "x", 1]])),
    ];
    let result = check(&history, TxnModel::RwRegister, M::Serializable);
    assert_eq!(classes(&result), vec![A::G2Item]);
    assert_eq!(cycle_of(only(&result, A::G2Item)), (vec![1, 2], vec![Rw, Rw]));
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(result.strongest_model, Some(M::SnapshotIsolation));
}

#[test]
fn given_a_register_lost_update_when_checked_should_find_lost_update_and_its_rw_cycle() {
    // Both read x = 1 and wrote over it. The order of 2 and 3 is unknown, so each read of 1 is known to precede both
    // writes: two adjacent rw edges (G2-item). Whichever wrote second overwrote a version it never saw, a G-single in
    // either order, which the lost-update check says without knowing the order.
    let history = [
        txn(1, 1, 0, 10, "ok", json!([["w", "x", 1]])),
        txn(2, 2, 20, 100, "ok", json!([["r", "x", 1], ["w", "x", 2]])),
        txn(3, 3, 20, 100, "ok", json!([["r", "x", 1], ["w", "x", 3]])),
    ];
    let result = check(&history, TxnModel::RwRegister, M::SnapshotIsolation);
    assert_eq!(classes(&result), vec![A::G2Item, A::LostUpdate]);
    assert_eq!(cycle_of(only(&result, A::G2Item)), (vec![2, 3], vec![Rw, Rw]));
    let lost = only(&result, A::LostUpdate);
    assert_eq!(lost.txns, vec![2, 3]);
    assert_eq!(
        lost.explanation,
        "T2 and T3 both read x = 1 and then both wrote it (2 and 3): whichever wrote second overwrote the other's \
         write without having seen it (a lost update)"
    );
    assert_eq!(result.verdict, Verdict::Invalid);
    assert_eq!(
        result.not,
        vec![M::CursorStability, M::UpdateAtomic],
        "Elle's `:not` for a lost update"
    );
    assert_eq!(result.strongest_model, Some(M::MonotonicView));
}

#[test]
fn given_a_serial_register_history_when_checked_should_be_valid() {
    let history = [
        txn(1, 1, 0, 10, "ok", json!([["r", "x", null], ["w", "x", 1]])),
        txn(2, 2, 20, 30, "ok", json!([["r", "x", 1], ["w", "x", 2], ["w", "y", 7]])),
        txn(3, 1, 40, 50, "ok", json!([["r", "x", 2], ["r", "y", 7]])),
        txn(4, 3, 41, 51, "info", json!([["w", "z", 3]])),
    ];
    let result = check(&history, TxnModel::RwRegister, M::StrictSerializable);
    assert_eq!(result.verdict, Verdict::Valid, "{result:#?}");
    assert_eq!(result.stats.edges[&Ww], 1);
    assert_eq!(result.strongest_model, Some(M::StrictSerializable));
}

#[test]
fn given_a_ring_of_a_hundred_thousand_write_cycles_when_checked_should_find_g0_without_overflowing_the_stack() {
    // Key k_i gets T_i's append, then T_{i+1}'s: one ww cycle through every transaction.
    let n = 100_000u64;
    let mut history: Vec<Txn> = (0..n)
        .map(|i| {
            let previous = (i + n - 1) % n;
            concurrent(
                i,
                json!([["append", format!("k{i}"), 1], ["append", format!("k{previous}"), 2]]),
            )
        })
        .collect();
    let reads: Vec<serde_json::Value> = (0..n).map(|i| json!(["r", format!("k{i}"), [1, 2]])).collect();
    history.push(concurrent(n, serde_json::Value::Array(reads)));
    let result = list(&history, M::ReadUncommitted);
    assert_eq!(classes(&result), vec![A::G0]);
    assert_eq!(only(&result, A::G0).txns.len(), n as usize);
    assert_eq!(result.stats.largest_component, n);
}

/// A random history from a simulated strictly serializable store: each transaction takes effect at one instant
/// inside its interval (an `info` one possibly after the client gave up, or never), in that order, against one
/// in-memory state. Processes run their transactions one after the other.
fn serializable_history(seed: u64, txns: usize, processes: u64, keys: u64, model: TxnModel) -> Vec<Txn> {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let mut rng = StdRng::seed_from_u64(seed);
    let mut clocks = vec![0u64; processes as usize];
    // (commit instant, txn) with the transaction's ops still unfilled.
    let mut planned: Vec<(u64, Txn)> = Vec::new();
    for index in 0..txns as u64 {
        let process = rng.gen_range(0..processes);
        let invoke_time_ns = clocks[process as usize] + rng.gen_range(0..50);
        let duration_ns = rng.gen_range(1..100);
        let complete_time_ns = invoke_time_ns + duration_ns;
        clocks[process as usize] = complete_time_ns;
        let outcome = match rng.gen_range(0..10) {
            0 => TxnOutcome::Fail,
            1 => TxnOutcome::Info,
            _ => TxnOutcome::Ok,
        };
        // An unknown outcome may take effect after the client gave up.
        let window_ns = if outcome == TxnOutcome::Info {
            3 * duration_ns
        } else {
            duration_ns
        };
        let commit_ns = invoke_time_ns + rng.gen_range(0..window_ns);
        let txn = Txn {
            index,
            process,
            invoke_time_ns,
            complete_time_ns,
            positions: None,
            outcome,
            ops: Vec::new(),
        };
        planned.push((commit_ns, txn));
    }
    planned.sort_by_key(|(commit_ns, txn)| (*commit_ns, txn.index));
    let mut lists: Vec<Vec<i64>> = vec![Vec::new(); keys as usize];
    let mut registers: Vec<Option<i64>> = vec![None; keys as usize];
    let mut next_value = 0i64;
    let mut history = Vec::new();
    for (_, mut txn) in planned {
        let applied = match txn.outcome {
            TxnOutcome::Ok => true,
            TxnOutcome::Fail => false,
            TxnOutcome::Info => rng.gen_bool(0.5),
        };
        // A transaction that does not commit runs on a copy that is thrown away.
        let (mut my_lists, mut my_registers) = (lists.clone(), registers.clone());
        for _ in 0..rng.gen_range(1..5) {
            let k = rng.gen_range(0..keys) as usize;
            let key = format!("k{k}");
            let read = rng.gen_bool(0.5);
            let filled = txn.outcome == TxnOutcome::Ok;
            txn.ops.push(match (model, read) {
                (TxnModel::ListAppend, true) => MicroOp::Read {
                    key,
                    value: filled.then(|| ReadValue::List(my_lists[k].clone())),
                },
                (TxnModel::RwRegister, true) => MicroOp::Read {
                    key,
                    value: my_registers[k].filter(|_| filled).map(ReadValue::Register),
                },
                (TxnModel::ListAppend, false) => {
                    next_value += 1;
                    my_lists[k].push(next_value);
                    MicroOp::Append { key, value: next_value }
                }
                (TxnModel::RwRegister, false) => {
                    next_value += 1;
                    my_registers[k] = Some(next_value);
                    MicroOp::Write { key, value: next_value }
                }
            });
        }
        if applied {
            (lists, registers) = (my_lists, my_registers);
        }
        history.push(txn);
    }
    history.sort_by_key(|t| t.index);
    history
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

    #[test]
    fn given_a_strictly_serializable_history_when_checked_should_be_valid_under_every_model(
        seed in proptest::prelude::any::<u64>(),
        txns in 1usize..60,
        processes in 1u64..6,
        keys in 1u64..4,
        register in proptest::prelude::any::<bool>(),
    ) {
        let model = if register { TxnModel::RwRegister } else { TxnModel::ListAppend };
        let history = serializable_history(seed, txns, processes, keys, model);
        let result = check(&history, model, M::StrictSerializable);
        // A history too small to relate two transactions is unknown (nothing checked), never invalid.
        let empty = result.anomaly_counts.contains_key(&A::EmptyTransactionGraph);
        let expected = if empty { Verdict::Unknown } else { Verdict::Valid };
        proptest::prop_assert_eq!(result.verdict, expected, "{:#?}\n{:#?}", result, history);
        proptest::prop_assert_eq!(result.anomaly_counts.len(), usize::from(empty));
        proptest::prop_assert_eq!(result.strongest_model, Some(M::StrictSerializable));
    }
}
