//! Tests of the exec adapter: its plan section (parsing, validation, messages), status reading and template variables.

use super::*;
use crate::plan::{Plan, PlanError};

fn config(yaml: &str) -> Result<Plan, PlanError> {
    Plan::parse(&plan_text(yaml), "p.yaml")
}

/// The default plan with `yaml` as its system section.
fn plan_text(yaml: &str) -> String {
    let text = crate::plan::DEFAULT_PLAN_YAML.replace(
        "system:\n  kind: reference        # faultline-node, found next to the faultline executable\n  nodes: 3\n",
        yaml,
    );
    assert_ne!(
        text,
        crate::plan::DEFAULT_PLAN_YAML,
        "the default plan's system section moved"
    );
    text
}

/// The line of the composed plan that holds `needle` (the system section starts at line 13).
fn line_of(section: &str, needle: &str) -> u64 {
    let text = crate::plan::DEFAULT_PLAN_YAML;
    let before = text[..text.find("system:\n").unwrap()].lines().count() as u64;
    before + section.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1
}

const GOOD: &str = "system:\n  kind: exec\n  nodes: 3\n  start: [sh, -c, \"exec sleep 1000\", \"{id}\"]\n  status: {http: \"http://{client_addr}/status\", role: /role, primary_when: [leader], commit_point: [/commit]}\n  log_lines: {repairing: \"repair start\", view-change: \"view change started\"}\n  client: {command: [sh]}\n";

#[test]
fn given_a_complete_exec_section_when_parsed_should_be_valid() {
    let plan = config(GOOD).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.system.kind(), "exec");
    assert!(plan.system.adapter().capabilities().primary_probe);
    assert!(
        plan.system.adapter().capabilities().repairing_pattern,
        "log_lines names `repairing`"
    );
    let again = Plan::parse(&plan.to_yaml(), "roundtrip").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.to_yaml(), plan.to_yaml());
}

#[test]
fn given_an_unknown_template_variable_when_parsed_should_point_at_it_and_list_the_known_ones() {
    let text = GOOD.replace("\"{id}\"", "\"{data_dri}\"");
    let err = config(&text).unwrap_err();
    assert_eq!(err.line, line_of(&text, "{data_dri}"), "{err}");
    assert!(err.column > 0, "{err}");
    assert!(err.message.contains("{data_dri}"), "{err}");
    assert!(err.message.contains("data_dir"), "{err}");
}

#[test]
fn given_a_per_node_variable_in_the_client_command_when_parsed_should_say_why_not() {
    let err = config(&GOOD.replace("command: [sh]", "command: [sh, \"{data_dir}\"]")).unwrap_err();
    assert!(err.message.contains("system.client.command"), "{err}");
    assert!(err.message.contains("{data_dir}"), "{err}");
}

#[test]
fn given_a_missing_program_when_parsed_should_name_it_and_what_to_do() {
    let text = GOOD.replace("start: [sh,", "start: [./no-such-db,");
    let err = config(&text).unwrap_err();
    assert_eq!(err.line, line_of(&text, "no-such-db"), "{err}");
    assert!(
        err.message.contains("no-such-db") && err.message.contains("build it"),
        "{err}"
    );
    let err = config(&GOOD.replace("command: [sh]", "command: [no-such-client-xyz]")).unwrap_err();
    assert!(err.message.contains("not on PATH"), "{err}");
}

#[test]
fn given_a_pointer_without_a_slash_when_parsed_should_explain_pointers() {
    let err = config(&GOOD.replace("role: /role", "role: role")).unwrap_err();
    assert!(err.message.contains("JSON pointer"), "{err}");
}

#[test]
fn given_a_system_section_not_starting_with_kind_when_parsed_should_say_kind_comes_first() {
    let err = config(&GOOD.replace("  kind: exec\n  nodes: 3\n", "  nodes: 3\n  kind: exec\n")).unwrap_err();
    assert!(err.message.contains("must start with `kind`"), "{err}");
    let err = config(&GOOD.replace("kind: exec", "kind: exce")).unwrap_err();
    assert!(err.message.contains("exce") && err.message.contains("exec"), "{err}");
}

#[test]
fn given_an_etcd_switch_on_an_exec_system_when_parsed_should_reject_the_field_with_its_location() {
    let text = GOOD.replace("  nodes: 3\n", "  nodes: 3\n  serializable_reads: true\n");
    let err = config(&text).unwrap_err();
    assert_eq!(err.line, line_of(&text, "serializable_reads"), "{err}");
    assert!(err.message.contains("unknown field `serializable_reads`"), "{err}");
}

#[test]
fn given_role_targets_without_a_role_pointer_when_validated_should_reject_them() {
    let err = config(&GOOD.replace("role: /role, primary_when: [leader], ", "")).unwrap_err();
    assert!(err.message.contains("role targets"), "{err}");
}

fn system(status: Option<StatusProbe>) -> ExecSystem {
    let mut plan = config(GOOD).unwrap();
    let crate::plan::SystemSpec::Exec(exec) = &mut plan.system else {
        unreachable!("parsed as exec")
    };
    exec.status = status;
    ExecSystem {
        config: exec.clone(),
        user: None,
        nodes_dir: "/tmp/faultline-exec-test/nodes".into(),
        node_ips: vec!["127.9.9.1".parse().unwrap(); 3],
        peer_routes: None,
        faultline: "/usr/bin/faultline".into(),
        clients: client::ClientLog::disabled(),
        http: reqwest::Client::new(),
        log_patterns: exec.log_lines.patterns(),
        run_id: "test".into(),
        persistent: Vec::new(),
        initial_members: vec![0, 1, 2],
        members: std::sync::Mutex::new(vec![0, 1, 2]),
    }
}

#[test]
fn given_membership_variables_when_a_node_command_is_expanded_should_name_the_current_members() {
    let system = system(None);
    system.set_members(&[0, 2]);
    let vars = system.node_vars(1);
    assert_eq!(vars.expand("{members}"), "0,2");
    assert_eq!(
        vars.expand("{member_addrs.client}"),
        format!("0={},2={}", system.addrs(0).client, system.addrs(2).client)
    );
}

#[test]
fn given_membership_hooks_without_wipe_or_with_a_bad_variable_when_validated_should_point_at_them() {
    let hooks = "  membership: {add: [sh, add, \"{id}\"], remove: [sh, rm, \"{id}\"], list: [sh, ls]}\n";
    let text = GOOD.replacen("  nodes: 3\n", &format!("  nodes: 3\n{hooks}"), 1);
    let err = config(&text).unwrap_err();
    assert!(err.message.contains("needs `system.wipe`"), "{err}");
    let line_of = |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1;
    assert_eq!(err.line, line_of(&plan_text(&text), "membership:"), "{err}");

    let with_wipe = text.replacen("  nodes: 3\n", "  nodes: 3\n  wipe: {command: [sh, wipe]}\n", 1);
    config(&with_wipe).unwrap_or_else(|e| panic!("{e}"));
    let bad = with_wipe.replace("[sh, ls]", "[sh, ls, \"{member_addrs.nope}\"]");
    let err = config(&bad).unwrap_err();
    assert!(
        err.message.contains("system.membership.list") && err.message.contains("names no port"),
        "{err}"
    );
}
