//! Tests of the exec adapter: its plan section (parsing, validation, messages), status reading and template variables.

use super::*;
use crate::plan::{Plan, PlanError};

fn config(yaml: &str) -> Result<Plan, PlanError> {
    let text = crate::plan::DEFAULT_PLAN_YAML.replace(
        "system:\n  kind: reference        # faultline-node, found next to the faultline executable\n  nodes: 3\n",
        yaml,
    );
    assert_ne!(
        text,
        crate::plan::DEFAULT_PLAN_YAML,
        "the default plan's system section moved"
    );
    Plan::parse(&text, "p.yaml")
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

fn system(status: StatusProbe) -> ExecSystem {
    let mut plan = config(GOOD).unwrap();
    let crate::plan::SystemSpec::Exec(exec) = &mut plan.system else {
        unreachable!("parsed as exec")
    };
    exec.status = status;
    ExecSystem {
        config: exec.clone(),
        nodes_dir: "/tmp/faultline-exec-test/nodes".into(),
        node_ips: vec!["127.9.9.1".parse().unwrap(); 3],
        peer_routes: None,
        faultline: "/usr/bin/faultline".into(),
        clients: client::ClientLog::disabled(),
        http: reqwest::Client::new(),
        log_patterns: exec.log_lines.patterns(),
    }
}

fn spanned(text: &str) -> Spanned<String> {
    serde_saphyr::from_str(&format!("\"{text}\"")).unwrap()
}

#[test]
fn given_a_status_answer_when_read_with_pointers_should_give_role_primary_and_commit_point() {
    let system = system(StatusProbe {
        http: spanned("http://{client_addr}/status"),
        post: None,
        primary_if_equal: vec![],
        role: Some(spanned("/raft/role")),
        primary_when: vec!["leader".into()],
        backup_when: vec!["follower".into()],
        primary: Some(spanned("/raft/leader")),
        commit_point: vec![spanned("/commit"), spanned("/head")],
        view: None,
        durable: None,
        durable_settle: None,
    });
    let status = system
        .read_status(serde_json::json!({"raft": {"role": "leader", "leader": 2}, "commit": 7, "head": "ab"}))
        .unwrap();
    assert_eq!(status.role, Role::Primary);
    assert_eq!(status.primary, Some(2));
    assert_eq!(status.commit_point, "/commit=7 /head=ab");
    let candidate = system
        .read_status(serde_json::json!({"raft": {"role": "candidate", "leader": 0}, "commit": 7, "head": "ab"}))
        .unwrap();
    assert_eq!(candidate.role, Role::Other);
    assert_eq!(candidate.primary, None);
}

#[test]
fn given_a_view_pointer_when_reading_progress_should_give_the_view_as_a_number_or_digits() {
    let probe = |view: Option<&str>| StatusProbe {
        http: spanned("http://{client_addr}/status"),
        post: None,
        primary_if_equal: vec![],
        role: Some(spanned("/role")),
        primary_when: vec!["leader".into()],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/commit")],
        view: view.map(spanned),
        durable: None,
        durable_settle: None,
    };
    let with_view = system(probe(Some("/raft/term")));
    let number = with_view
        .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": 12}}))
        .unwrap();
    assert_eq!(with_view.progress(&number).view, Some(12));
    let digits = with_view
        .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": "13"}}))
        .unwrap();
    assert_eq!(with_view.progress(&digits).view, Some(13));
    let without = system(probe(None));
    let status = without
        .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": 12}}))
        .unwrap();
    assert_eq!(without.progress(&status).view, None);
}

#[test]
fn given_leader_and_own_ids_when_read_with_primary_if_equal_should_tell_leader_from_follower() {
    let system = system(StatusProbe {
        http: spanned("http://{client_addr}/status"),
        post: Some("{}".into()),
        role: None,
        primary_if_equal: vec![spanned("/leader"), spanned("/header/member_id")],
        primary_when: vec![],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/raftIndex")],
        view: None,
        durable: None,
        durable_settle: None,
    });
    let leader = serde_json::json!({"leader": "71", "header": {"member_id": "71"}, "raftIndex": "9"});
    assert_eq!(system.read_status(leader).unwrap().role, Role::Primary);
    let follower = serde_json::json!({"leader": "71", "header": {"member_id": "12"}, "raftIndex": "9"});
    assert_eq!(system.read_status(follower).unwrap().role, Role::Backup);
}

#[test]
fn given_a_status_answer_without_a_pointer_when_read_should_be_a_misconfiguration_naming_it() {
    let system = system(StatusProbe {
        http: spanned("http://{client_addr}/status"),
        post: None,
        primary_if_equal: vec![],
        role: Some(spanned("/role")),
        primary_when: vec!["leader".into()],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/commit_index")],
        view: None,
        durable: None,
        durable_settle: None,
    });
    let err = system
        .read_status(serde_json::json!({"role": "leader", "commit": 3}))
        .unwrap_err();
    let ProbeError::Misconfigured(why) = err else {
        panic!("{err:?}")
    };
    assert!(why.contains("/commit_index") && why.contains("commit_point"), "{why}");
    assert!(why.contains("\"commit\":3"), "the answer is quoted: {why}");
}

#[test]
fn given_node_vars_when_expanded_should_give_ids_addresses_and_peers_without_self() {
    let system = system(
        config(GOOD)
            .map(|p| match p.system {
                crate::plan::SystemSpec::Exec(e) => e.status,
                _ => unreachable!("parsed as exec"),
            })
            .unwrap(),
    );
    let vars = system.node_vars(1);
    assert_eq!(
        vars.expand("{id} {name} {client_addr} {peer_addr} {node_count}"),
        "1 n2 127.9.9.1:25002 127.9.9.1:26002 3"
    );
    assert_eq!(vars.expand("{peers}"), "0=127.9.9.1:26001,2=127.9.9.1:26003");
    assert_eq!(
        vars.expand("{client_addrs}"),
        "0=127.9.9.1:25001,1=127.9.9.1:25002,2=127.9.9.1:25003"
    );
    assert_eq!(vars.expand("{data_dir}"), "/tmp/faultline-exec-test/nodes/n2/data");
}
