//! Tests of plan loading: the default plan, and errors that point at the offending line and column.

use super::*;
use faultline_faults::process::{ProcessFault, Target};

#[test]
fn given_the_default_plan_when_parsed_should_be_valid_and_round_trip() {
    let plan = Plan::default_plan();
    assert_eq!(plan.system.nodes(), 3);
    let again = Plan::parse(&plan.to_yaml(), "roundtrip").unwrap();
    assert_eq!(again.to_yaml(), plan.to_yaml());
}

fn error_of(text: &str) -> PlanError {
    Plan::parse(text, "p.yaml").unwrap_err()
}

fn with(find: &str, replace: &str) -> String {
    assert!(DEFAULT_PLAN_YAML.contains(find), "default plan lacks {find}");
    DEFAULT_PLAN_YAML.replacen(find, replace, 1)
}

fn line_of(text: &str, needle: &str) -> u64 {
    text.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1
}

#[test]
fn given_an_unknown_field_when_parsed_should_name_line_column_and_expected_fields() {
    let text = with("  concurrency:", "  concurency: 3\n  concurrency:");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "concurency"));
    assert!(err.column > 0);
    assert!(err.message.contains("unknown field `concurency`"), "{err}");
    assert!(err.message.contains("concurrency"), "{err}");
}

#[test]
fn given_a_wrong_type_or_negative_interval_when_parsed_should_point_at_it() {
    let text = with("nodes: 3", "nodes: three");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "nodes: three"), "{err}");

    let text = with("interval: 6s", "interval: -5s");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "interval: -5s"), "{err}");
    assert!(err.message.contains("negative"), "{err}");
}

#[test]
fn given_a_target_beyond_the_cluster_when_validated_should_point_at_the_target() {
    let text = with("targets: backup", "targets: [n1, n7]");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "[n1, n7]"), "{err}");
    assert!(err.message.contains("n7"), "{err}");
}

#[test]
fn given_zero_nodes_when_parsed_should_say_the_range() {
    let err = error_of(&with("nodes: 3", "nodes: 0"));
    assert!(err.message.contains("1..=9"), "{err}");
}

#[test]
fn given_rolling_faults_in_the_schedule_when_validated_should_accept_them_and_keep_them_in_the_resolved_plan() {
    let plan = Plan::default_plan();
    let script = &plan.nemesis.process.as_ref().unwrap().value.script;
    assert!(
        script.iter().any(|f| f.targets.value == Target::Each),
        "the default plan has a rolling restart"
    );
    let text = with(
        "      - {kind: pause, targets: one, duration: 500ms..3s}",
        "      - {kind: pause, targets: one, duration: 500ms..3s}\n      \
         - {kind: corrupt, targets: each, duration: 1s, cuts: [{op: truncate-tail, files: wal, max_bytes: 100}]}\n      \
         - {kind: kill, targets: each, duration: 1s..2s}",
    );
    let plan = Plan::parse(&text, "p.yaml").unwrap();
    let again = Plan::parse(&plan.to_yaml(), "roundtrip").unwrap();
    let faults = &again.nemesis.process.as_ref().unwrap().value.faults;
    let rolling: Vec<ProcessFault> = faults
        .iter()
        .filter(|f| f.targets.value == Target::Each)
        .map(|f| f.kind)
        .collect();
    assert_eq!(rolling, [ProcessFault::Corrupt, ProcessFault::Kill]);
}

#[test]
fn given_a_rolling_pause_when_validated_should_point_at_its_targets_and_say_why() {
    let text = with("{kind: pause, targets: one,", "{kind: pause, targets: each,");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "targets: each"), "{err}");
    assert!(err.column > 0, "{err}");
    assert!(err.message.contains("a pause restarts nothing"), "{err}");
}

#[test]
fn given_a_rolling_fault_in_a_trigger_when_validated_should_point_at_the_trigger_and_say_why() {
    let text = with(
        "do: {kind: kill, targets: primary, duration: 1s..3s}",
        "do: {kind: stop, targets: each, duration: 1s..3s}",
    );
    let err = error_of(&text);
    assert_eq!(
        err.line,
        line_of(&text, "- when: {restarted: any}"),
        "the first trigger's line: {err}"
    );
    assert!(err.message.contains("nemesis.triggers[0]"), "{err}");
    assert!(err.message.contains("cannot be triggered"), "{err}");
}

const TXN_PLAN_YAML: &str = include_str!("../../../plans/reference-txn.yaml");

fn txn_with(find: &str, replace: &str) -> String {
    assert!(TXN_PLAN_YAML.contains(find), "reference-txn lacks {find}");
    TXN_PLAN_YAML.replacen(find, replace, 1)
}

#[test]
fn given_the_txn_plan_when_parsed_should_keep_model_claim_and_length_through_a_round_trip() {
    use faultline_workloads::txn_check::{ConsistencyModel, TxnModel};
    let plan = Plan::parse(TXN_PLAN_YAML, "reference-txn.yaml").unwrap();
    assert_eq!(plan.workload.kind, WorkloadKind::Txn);
    assert_eq!(plan.workload.model.as_ref().unwrap().value, TxnModel::ListAppend);
    assert_eq!(plan.workload.consistency, Some(ConsistencyModel::StrictSerializable));
    assert_eq!(plan.workload.txn_length, Some(TxnLength { min: 1, max: 4 }));
    let again = Plan::parse(&plan.to_yaml(), "roundtrip").unwrap();
    assert_eq!(again.to_yaml(), plan.to_yaml());
    let exact = Plan::parse(&txn_with("txn_length: 1..4", "txn_length: 3"), "p.yaml").unwrap();
    assert_eq!(exact.workload.txn_length, Some(TxnLength { min: 3, max: 3 }));
}

#[test]
fn given_a_txn_plan_without_a_model_or_with_a_bad_length_or_mix_when_validated_should_point_at_it() {
    let text = txn_with("  model: list-append", "");
    let err = error_of(&text);
    assert!(err.message.contains("needs a `model`"), "{err}");
    assert_eq!(err.line, line_of(&text, "mix:"), "{err}");

    let text = txn_with("txn_length: 1..4", "txn_length: 4..2");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "txn_length"), "{err}");
    assert!(err.message.contains("MIN..MAX"), "{err}");

    let text = txn_with("mix: {read: 1, write: 1}", "mix: {read: 1, cas: 1}");
    assert!(error_of(&text).message.contains("no cas or add"));
    let text = txn_with("model: list-append", "model: rw-register").replacen(
        "mix: {read: 1, write: 1}",
        "mix: {read: 1, append: 1}",
        1,
    );
    assert!(error_of(&text).message.contains("rw-register mixes read and write"));
}

#[test]
fn given_txn_fields_on_another_workload_when_validated_should_refuse_them_at_their_line() {
    let text = with("  kind: register ", "  model: list-append\n  kind: register ");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "model: list-append"), "{err}");
    assert!(err.message.contains("for the txn workload"), "{err}");
}

#[test]
fn given_a_txn_plan_for_an_adapter_without_txn_clients_when_validated_should_refuse_it_at_the_workload() {
    let text = txn_with("  kind: reference\n", "  kind: etcd\n");
    let err = error_of(&text);
    assert!(err.message.contains("not `txn`"), "{err}");
    assert_eq!(err.line, line_of(&text, "mix:"), "{err}");
}

const MEMBERSHIP_PLAN_YAML: &str = include_str!("../../../plans/reference-membership.yaml");
const EXEC_PLAN_YAML: &str = include_str!("../../../plans/exec-reference.yaml");

fn membership_with(find: &str, replace: &str) -> String {
    assert!(MEMBERSHIP_PLAN_YAML.contains(find), "reference-membership lacks {find}");
    MEMBERSHIP_PLAN_YAML.replacen(find, replace, 1)
}

#[test]
fn given_the_membership_plan_when_parsed_should_keep_two_spares_and_its_changes() {
    let plan = Plan::parse(MEMBERSHIP_PLAN_YAML, "reference-membership.yaml").unwrap();
    assert_eq!((plan.system.nodes(), plan.system.initial_members()), (5, 3));
    assert!(plan.changes_membership());
}

#[test]
fn given_a_membership_change_for_an_adapter_without_hooks_when_validated_should_refuse_it_at_its_line() {
    let fault = "      - {at: 5s, kind: membership, change: remove, targets: one}\n";
    let text = EXEC_PLAN_YAML.replacen("    script:\n", &format!("    script:\n{fault}"), 1);
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "kind: membership"), "{err}");
    assert!(err.message.contains("cannot change membership"), "{err}");
    assert!(err.message.contains("membership: {add, remove, list}"), "{err}");
}

#[test]
fn given_removals_that_break_the_quorum_when_validated_should_refuse_the_breaking_one_at_its_line() {
    // 3 members: the first removal leaves 2 (a quorum of 3), the second would leave 1 of a configuration of 2.
    let text = membership_with(
        "    script:              # one change at a time, each against the members of its moment\n",
        "    script:\n      - {at: 1s, kind: membership, change: remove, targets: one}\n      \
         - {at: 2s, kind: membership, change: remove, targets: [n2]}\n",
    );
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "targets: [n2]"), "{err}");
    assert!(err.message.contains("removes one of 2 members"), "{err}");
    assert!(err.message.contains("quorum"), "{err}");
}

#[test]
fn given_an_add_with_every_node_a_member_when_validated_should_refuse_it_for_want_of_a_spare() {
    let text = with(
        "    script:              # a rolling restart",
        "    script:\n      - {at: 5s, kind: membership, change: add, targets: one}\n    # a rolling restart",
    );
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "change: add"), "{err}");
    assert!(err.message.contains("no spare node"), "{err}");
}

#[test]
fn given_more_adds_than_spares_when_validated_should_refuse_the_add_that_finds_none() {
    // 3 of 5: two spares; the script adds one (3 s), removes one (13 s: two spares again) and adds two (18 s, 27 s),
    // so an add before its next removal (34 s) has none.
    let text = membership_with(
        "      - {at: 34s, kind: membership, change: remove, targets: primary}",
        "      - {at: 30s, kind: membership, change: add, targets: one}\n      - {at: 34s, kind: membership, change: remove, targets: primary}",
    );
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "at: 30s"), "{err}");
    assert!(err.message.contains("no spare node"), "{err}");
}

/// A plan that names no disk model gets Linux on ext4's (journaled metadata, write-back after 30 s and 5 s); a plan
/// may name its own, ages or `never`, and the stored plan says which one a run used.
#[test]
fn given_disk_models_when_parsed_should_default_to_linux_on_ext4_and_take_ages_or_never() {
    use faultline_faults::fusefs::{MetadataDurability, Writeback, WritebackAge};
    let plan = Plan::default_plan();
    assert_eq!(plan.disk.metadata, MetadataDurability::Journaled);
    assert_eq!(plan.disk.writeback, Writeback::LINUX_EXT4);
    assert!(plan.to_yaml().contains("metadata_after: 5s"), "{}", plan.to_yaml());

    let strict = with(
        "  nodes: 3\n",
        "  nodes: 3\ndisk:\n  metadata: posix\n  writeback: {data_after: never, metadata_after: 2s}\n",
    );
    let plan = Plan::parse(&strict, "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.disk.metadata, MetadataDurability::Posix);
    assert_eq!(plan.disk.writeback.data_after, WritebackAge::Never);
    assert_eq!(plan.disk.writeback.metadata_after, WritebackAge::After(Millis(2000)));

    let err = error_of(&with(
        "  nodes: 3\n",
        "  nodes: 3\ndisk:\n  writeback: {data_after: soon}\n",
    ));
    assert!(err.message.contains("`never`"), "{err}");
}

#[test]
fn given_a_decimal_weight_when_parsed_should_keep_it_and_refuse_a_negative_one_at_its_line() {
    let text = with("duration: 1s..4s, weight: 2}", "duration: 1s..4s, weight: 0.5}");
    let plan = Plan::parse(&text, "p.yaml").unwrap();
    let faults = &plan.nemesis.process.as_ref().unwrap().value.faults;
    assert_eq!(faults[0].weight.get(), 0.5);
    let text = with("duration: 1s..4s, weight: 2}", "duration: 1s..4s, weight: -1}");
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "weight: -1"), "{err}");
    assert!(err.message.contains("number ≥ 0"), "{err}");
}

#[test]
fn given_max_down_when_validated_should_refuse_a_cap_out_of_range_or_a_fault_it_would_always_skip() {
    let text = with("    interval: 6s", "    max_down: 1\n    interval: 6s");
    let plan = Plan::parse(&text, "p.yaml").unwrap();
    assert_eq!(plan.nemesis.process.as_ref().unwrap().value.max_down, Some(1));
    let err = error_of(&with("    interval: 6s", "    max_down: 0\n    interval: 6s"));
    assert!(err.message.contains("must be 1..=3"), "{err}");
    let text = with("    interval: 6s", "    max_down: 1\n    interval: 6s").replacen(
        "{kind: pause, targets: one,",
        "{kind: pause, targets: majority,",
        1,
    );
    let err = error_of(&text);
    assert_eq!(err.line, line_of(&text, "targets: majority"), "{err}");
    assert!(
        err.message
            .contains("takes 2 nodes down at once, more than `max_down: 1`"),
        "{err}"
    );
}
