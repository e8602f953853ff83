//! Tests of how the exec adapter reads positions from a status answer: a number, or a vector clock at the durable
//! pointer (issue 64: a map must not work only by accident).

use super::ExecConfig;
use crate::plan::{Plan, SystemSpec};
use faultline_workloads::position::Position;
use serde_json::json;

/// An exec section whose status names a durable pointer (`/vclock`) and, when given, a `recovered` section.
fn exec(recovered: &str) -> ExecConfig {
    let section = format!(
        "system:\n  kind: exec\n  nodes: 3\n  start: [sh, -c, \"exec sleep 1000\", \"{{id}}\"]\n  status: {{http: \
         \"http://{{client_addr}}/status\", role: /role, primary_when: [leader], commit_point: [/vclock], durable: \
         /vclock}}\n{recovered}  log_lines: {{repairing: \"repair start\", view-change: \"view change started\"}}\n  \
         client: {{command: [sh]}}\n"
    );
    let text = crate::plan::DEFAULT_PLAN_YAML.replace(
        "system:\n  kind: reference        # faultline-node, found next to the faultline executable\n  nodes: 3\n",
        &section,
    );
    assert_ne!(
        text,
        crate::plan::DEFAULT_PLAN_YAML,
        "the default plan's system section moved"
    );
    let plan = Plan::parse(&text, "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert!(plan.system.adapter().capabilities().durable_progress);
    match plan.system {
        SystemSpec::Exec(exec) => exec,
        _ => unreachable!("parsed as exec"),
    }
}

fn vclock() -> Position {
    Position::Map([("1".to_string(), 3181), ("2".to_string(), 5)].into())
}

#[test]
fn given_a_vector_clock_at_the_durable_pointer_when_a_status_is_read_should_give_the_whole_clock() {
    let exec = exec("");
    let object = json!({"role": "leader", "vclock": {"1": 3181, "2": 5}});
    assert_eq!(exec.durable_at(&object), Some(vclock()));
    assert_eq!(
        exec.durable_at(&object).map(|p| p.total()),
        Some(3186),
        "lag counts by its sum"
    );
    let written = json!({"role": "leader", "vclock": "{1: 3181, 2: 5}"});
    assert_eq!(
        exec.durable_at(&written),
        Some(vclock()),
        "a string that writes the clock"
    );
    assert_eq!(
        exec.kept_at(&object),
        Some(vclock()),
        "no boot line: the first status says what it kept"
    );
    // Numbers read as they always did.
    assert_eq!(exec.durable_at(&json!({"vclock": 42})), Some(Position::Scalar(42)));
    assert_eq!(exec.durable_at(&json!({"vclock": "42"})), Some(Position::Scalar(42)));
    for not_a_position in [
        json!({"vclock": "x"}),
        json!({"vclock": [1, 2]}),
        json!({"vclock": {"1": "a"}}),
        json!({}),
    ] {
        assert_eq!(exec.durable_at(&not_a_position), None, "{not_a_position}");
    }
}

#[test]
fn given_a_recovered_status_pointer_at_a_vector_clock_when_a_booted_node_answers_should_read_what_it_kept_there() {
    let exec = exec("  recovered: {status: /kept}\n");
    let answer = json!({"vclock": {"1": 9999}, "kept": {"1": 3181, "2": 5}});
    assert_eq!(exec.kept_at(&answer), Some(vclock()));
}

#[test]
fn given_a_recovered_boot_line_with_a_vector_clock_when_read_should_take_the_clock() {
    let exec = exec("  recovered: {line: \"instance vclock\", after: \"vclock\"}\n");
    let boot_log = "I> recovery start\nI> instance vclock {1: 3181, 2: 5}\nI> ready to accept requests\n";
    let recovered = exec
        .recovered
        .as_ref()
        .and_then(|r| r.read(boot_log))
        .expect("a boot line");
    assert_eq!(recovered.recovered, vclock());
}
