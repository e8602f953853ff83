//! Tests of the exec adapter: its plan section (parsing, validation, messages), status reading and template variables.

use super::*;
use crate::plan::{Plan, PlanError};
use crate::system::Role;

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
        local_nodes_dir: "/tmp/faultline-exec-test/nodes".into(),
        hands: Vec::new(),
        on_hosts: None,
        node_ips: vec!["127.9.9.1".parse().unwrap(); 3],
        peer_routes: None,
        faultline: "/usr/bin/faultline".into(),
        clients: client::ClientLog::disabled(),
        starts: Default::default(),
        http: reqwest::Client::new(),
        log_patterns: exec.log_lines.patterns(),
        run_id: "test".into(),
        persistent: Vec::new(),
        initial_members: vec![0, 1, 2],
        members: std::sync::Mutex::new(vec![0, 1, 2]),
    }
}

#[test]
fn given_nodes_on_hosts_when_their_commands_are_built_should_name_the_hosts_faultline_and_copies_but_probe_from_here() {
    let mut system = system(None);
    let section =
        "start: [\"{faultline}\", node, run, /plans/exec/wrap.sh, \"{data_dir}\"]\n  verify: [\"{faultline}\"]";
    let plan = config(&GOOD.replace("start: [sh, -c, \"exec sleep 1000\", \"{id}\"]", section)).unwrap();
    let crate::plan::SystemSpec::Exec(exec) = &plan.system else {
        unreachable!("parsed as exec")
    };
    system.config = exec.clone();
    system.on_hosts = Some(super::hosts::OnHosts {
        executables: (1..=3).map(|i| format!("/srv/h{i}/faultline-b").into()).collect(),
        plan_folder: Some("/plans".into()),
        plan_copy: "/srv/fl/runs/r/plan".into(),
    });
    let launch = system.launch(1, crate::system::StartKind::First);
    assert_eq!(launch.program, std::path::PathBuf::from("/srv/h2/faultline-b"));
    assert_eq!(launch.args[2], "/srv/fl/runs/r/plan/exec/wrap.sh");
    let verify = System::verify_command(&system, 2).unwrap();
    assert_eq!(verify.program, std::path::PathBuf::from("/srv/h3/faultline-b"));
    // The probes and clients run here: their `{faultline}` is this machine's.
    assert_eq!(system.node_vars(1).expand("{faultline}"), "/usr/bin/faultline");
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
    assert_eq!(err.line, line_of(&text, "membership:"), "{err}");

    let with_wipe = text.replacen("  nodes: 3\n", "  nodes: 3\n  wipe: {command: [sh, wipe]}\n", 1);
    config(&with_wipe).unwrap_or_else(|e| panic!("{e}"));
    let bad = with_wipe.replace("[sh, ls]", "[sh, ls, \"{member_addrs.nope}\"]");
    let err = config(&bad).unwrap_err();
    assert!(
        err.message.contains("system.membership.list") && err.message.contains("names no port"),
        "{err}"
    );
}

fn spanned(text: &str) -> Spanned<String> {
    serde_saphyr::from_str(&serde_json::to_string(text).unwrap()).unwrap()
}

/// Two nodes at the same commit point (the Tarantool cluster's vclock) holding different data (1,138 elements
/// against 1,144): with a `digest` pointer their commit points differ, so convergence does not call them converged.
#[test]
fn given_a_digest_pointer_when_two_nodes_share_a_commit_point_but_not_their_data_should_not_compare_equal() {
    let system = system(Some(StatusProbe {
        http: Some(spanned("http://{client_addr}/status")),
        command: None,
        persistent: false,
        post: None,
        primary_if_equal: vec![],
        role: None,
        primary_when: vec![],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/vclock")],
        digest: Some(spanned("/digest")),
        view: None,
        durable: None,
        durable_settle: None,
        env: Default::default(),
    }));
    let leader = system
        .read_status(serde_json::json!({"vclock": {"1": 3181, "2": 5}, "digest": "n=1138 h=9f2c"}))
        .unwrap();
    let replica = system
        .read_status(serde_json::json!({"vclock": {"2": 5, "1": 3181}, "digest": "n=1144 h=77a0"}))
        .unwrap();
    assert_ne!(leader.commit_point, replica.commit_point);
    assert!(
        leader
            .commit_point
            .starts_with("/vclock={\"1\":3181,\"2\":5} digest /digest="),
        "{}",
        leader.commit_point
    );
    let same = system
        .read_status(serde_json::json!({"vclock": {"1": 3181, "2": 5}, "digest": "n=1138 h=9f2c"}))
        .unwrap();
    assert_eq!(
        leader.commit_point, same.commit_point,
        "a map's keys are compared in one order"
    );
}

#[test]
fn given_a_status_answer_when_read_with_pointers_should_give_role_primary_and_commit_point() {
    let system = system(Some(StatusProbe {
        http: Some(spanned("http://{client_addr}/status")),
        command: None,
        persistent: false,
        post: None,
        primary_if_equal: vec![],
        role: Some(spanned("/raft/role")),
        primary_when: vec!["leader".into()],
        backup_when: vec!["follower".into()],
        primary: Some(spanned("/raft/leader")),
        commit_point: vec![spanned("/commit"), spanned("/head")],
        digest: None,
        view: None,
        durable: None,
        durable_settle: None,
        env: Default::default(),
    }));
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
        http: Some(spanned("http://{client_addr}/status")),
        command: None,
        persistent: false,
        post: None,
        primary_if_equal: vec![],
        role: Some(spanned("/role")),
        primary_when: vec!["leader".into()],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/commit")],
        digest: None,
        view: view.map(spanned),
        durable: None,
        durable_settle: None,
        env: Default::default(),
    };
    let with_view = system(Some(probe(Some("/raft/term"))));
    let number = with_view
        .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": 12}}))
        .unwrap();
    assert_eq!(with_view.progress(&number).view, Some(12));
    let digits = with_view
        .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": "13"}}))
        .unwrap();
    assert_eq!(with_view.progress(&digits).view, Some(13));
    let without = system(Some(probe(None)));
    let status = without
        .read_status(serde_json::json!({"role": "leader", "commit": 7, "raft": {"term": 12}}))
        .unwrap();
    assert_eq!(without.progress(&status).view, None);
}

#[test]
fn given_leader_and_own_ids_when_read_with_primary_if_equal_should_tell_leader_from_follower() {
    let system = system(Some(StatusProbe {
        http: Some(spanned("http://{client_addr}/status")),
        command: None,
        persistent: false,
        post: Some("{}".into()),
        role: None,
        primary_if_equal: vec![spanned("/leader"), spanned("/header/member_id")],
        primary_when: vec![],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/raftIndex")],
        digest: None,
        view: None,
        durable: None,
        durable_settle: None,
        env: Default::default(),
    }));
    let leader = serde_json::json!({"leader": "71", "header": {"member_id": "71"}, "raftIndex": "9"});
    assert_eq!(system.read_status(leader).unwrap().role, Role::Primary);
    let follower = serde_json::json!({"leader": "71", "header": {"member_id": "12"}, "raftIndex": "9"});
    assert_eq!(system.read_status(follower).unwrap().role, Role::Backup);
}

#[test]
fn given_a_status_answer_without_a_pointer_when_read_should_be_a_misconfiguration_naming_it() {
    let system = system(Some(StatusProbe {
        http: Some(spanned("http://{client_addr}/status")),
        command: None,
        persistent: false,
        post: None,
        primary_if_equal: vec![],
        role: Some(spanned("/role")),
        primary_when: vec!["leader".into()],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/commit_index")],
        digest: None,
        view: None,
        durable: None,
        durable_settle: None,
        env: Default::default(),
    }));
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

/// A plan of an exec system with kills and partitions that name no role, without a status probe.
const NO_STATUS: &str = "name: no-status\ntime_limit: 10s\nsystem:\n  kind: exec\n  nodes: 3\n  start: [sh, -c, \"exec sleep 1000\"]\n  client: {command: [sh]}\nworkload: {kind: register, concurrency: 3, rate: 50, keys: 2, ops_per_key: 100, mix: {read: 1, write: 1}, op_timeout: 1s}\nnemesis:\n  process:\n    interval: 2s\n    faults:\n      - {kind: kill, targets: one, duration: 1s}\n  network:\n    interval: 3s\n    partitions:\n      - {shape: isolate-one, duration: 1s}\n";

#[test]
fn given_no_status_when_validated_should_run_what_needs_none_and_refuse_roles_and_convergence_at_their_line() {
    let plan = Plan::parse(NO_STATUS, "p.yaml").unwrap_or_else(|e| panic!("{e}"));
    let capabilities = plan.system.adapter().capabilities();
    assert!(!capabilities.status_probe && !capabilities.primary_probe && !capabilities.durable_progress);

    let role = NO_STATUS.replace("targets: one", "targets: primary");
    let err = Plan::parse(&role, "p.yaml").unwrap_err();
    assert!(err.message.contains("cannot tell who the primary is"), "{err}");
    assert_eq!((err.line, err.column), (13, 31), "{err}");

    let isolate = NO_STATUS.replace("isolate-one", "isolate-primary");
    let err = Plan::parse(&isolate, "p.yaml").unwrap_err();
    assert!(err.message.contains("`isolate-primary` partition"), "{err}");

    let converge = format!("{NO_STATUS}final_phase:\n  convergence_timeout: 20s\n");
    let err = Plan::parse(&converge, "p.yaml").unwrap_err();
    assert!(
        err.message.contains("no status probe") && err.message.contains("converge"),
        "{err}"
    );
    assert_eq!(err.line, 19, "{err}");

    let trigger = format!(
        "{NO_STATUS}  triggers:\n    - {{when: {{primary-changed: any}}, do: {{kind: kill, targets: one, duration: 1s}}}}\n"
    );
    let err = Plan::parse(&trigger, "p.yaml").unwrap_err();
    assert!(
        err.message.contains("primary-changed") && err.message.contains("tell its primary"),
        "{err}"
    );
}

#[test]
fn given_status_sources_when_validated_should_take_exactly_one_and_persistent_only_for_a_command() {
    let both = GOOD.replace("status: {http:", "status: {command: [sh], http:");
    let err = config(&both).unwrap_err();
    assert!(err.message.contains("one source"), "{err}");
    let persistent_http = GOOD.replace("status: {http:", "status: {persistent: true, http:");
    let err = config(&persistent_http).unwrap_err();
    assert!(err.message.contains("persistent is for `command`"), "{err}");
    let command = GOOD.replace(
        "status: {http: \"http://{client_addr}/status\",",
        "status: {command: [sh, -c, \"echo {addr.client}\"], persistent: true,",
    );
    config(&command).unwrap_or_else(|e| panic!("{e}"));
    let typo = command.replace("{addr.client}", "{addr.admin}");
    let err = config(&typo).unwrap_err();
    assert!(
        err.message.contains("system.status.command") && err.message.contains("names no port"),
        "{err}"
    );
}

#[test]
fn given_named_ports_when_validated_should_refuse_bad_names_overlaps_and_escaping_config_files() {
    let with = |extra: &str| {
        config(&GOOD.replace(
            "  client: {command: [sh]}\n",
            &format!("  client: {{command: [sh]}}\n{extra}"),
        ))
    };
    with("  ports: {named: {admin: 28001, election: 29001}}\n").unwrap_or_else(|e| panic!("{e}"));
    let err = with("  ports: {named: {\"ad min\": 28001}}\n").unwrap_err();
    assert!(err.message.contains("not a port name"), "{err}");
    let err = with("  ports: {named: {peer: 28001}}\n").unwrap_err();
    assert!(err.message.contains("already a port"), "{err}");
    let err = with("  ports: {named: {admin: 25002}}\n").unwrap_err();
    assert!(
        err.message.contains("`client`") && err.message.contains("`admin`") && err.message.contains("overlap"),
        "{err}"
    );
    let err = with("  ports: {named: {admin: 65534}}\n").unwrap_err();
    assert!(err.message.contains("leaves the port range"), "{err}");
    with("  config_files: {\"node.conf\": \"port={port.client}\", \"{data_dir}/myid\": \"{id}\"}\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let err = with("  config_files: {\"../other.conf\": \"x\"}\n").unwrap_err();
    assert!(err.message.contains("lives in the node's folder"), "{err}");
    let err = with("  config_files: {\"/etc/x.conf\": \"x\"}\n").unwrap_err();
    assert!(err.message.contains("lives in the node's folder"), "{err}");
    let err = with("  config_files: {\"node.conf\": \"peers={addrs.gossip}\"}\n").unwrap_err();
    assert!(
        err.message.contains("config_files") && err.message.contains("gossip"),
        "{err}"
    );
}

#[test]
fn given_named_ports_when_expanded_should_give_each_node_its_ports_hosts_and_the_cluster_lists() {
    let mut system = system(None);
    system.config.ports.named.insert("election".into(), 29001);
    system.node_ips = (1..=3).map(|i| format!("10.77.0.{i}").parse().unwrap()).collect();
    let vars = system.node_vars(2);
    assert_eq!(
        vars.expand("{host} {port.election} {addr.election} {addr.client} {port.peer}"),
        "10.77.0.3 29003 10.77.0.3:29003 10.77.0.3:25003 26003"
    );
    assert_eq!(
        vars.expand("{addrs.election}"),
        "0=10.77.0.1:29001,1=10.77.0.2:29002,2=10.77.0.3:29003"
    );
    assert_eq!(
        vars.expand("server.1={node.0.host}:{node.0.port.peer}:{node.0.port.election} {node.1.addr.client}"),
        "server.1=10.77.0.1:26001:29001 10.77.0.2:25002"
    );
    assert_eq!(vars.expand("{node_dir}"), "/tmp/faultline-exec-test/nodes/n3");
    let client = system.client_vars();
    assert_eq!(client.expand("{addrs.client}"), client.expand("{client_addrs}"));
    assert_eq!(client.expand("{host}"), "", "no per-node variable in the client's");
}

#[tokio::test]
async fn given_config_files_when_prepared_wiped_and_restarted_should_be_written_first_and_after_a_wipe_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut system = system(None);
    system.nodes_dir = dir.path().join("nodes");
    system.local_nodes_dir = system.nodes_dir.clone();
    system
        .config
        .config_files
        .insert("node.conf".into(), spanned("port={port.client} id={id}"));
    system
        .config
        .config_files
        .insert("{data_dir}/myid".into(), spanned("{id}"));
    system.config.wipe = Some(WipeSpec {
        command: vec![spanned("true")],
    });
    system.prepare(1).await.unwrap();
    let conf = dir.path().join("nodes/n2/node.conf");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "port=25002 id=1");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("nodes/n2/data/myid")).unwrap(),
        "1"
    );
    // The system rewrites its own file; a restart (launch) leaves it as it is.
    std::fs::write(&conf, "port=25002 id=1 rewritten").unwrap();
    let _ = system.launch(1, crate::system::StartKind::Restart);
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "port=25002 id=1 rewritten");
    system.wipe(1).await.unwrap();
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "port=25002 id=1");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("nodes/n2/data/myid")).unwrap(),
        "1"
    );
}

/// A status process whose answer to probe N is chosen by N: good, late, garbage, exits, or "no answer".
const STATUS_SCRIPT: &str = r#"
import json, os, sys, time
for line in sys.stdin:
    n = json.loads(line)["probe"]
    if n == 2: time.sleep(2)
    if n == 4: print("not json at all", flush=True); continue
    if n == 6: sys.exit(3)
    if n == 8: print(json.dumps({"error": "connection refused"}), flush=True); continue
    print(json.dumps({"role": "leader", "commit": n, "pid": os.getpid()}), flush=True)
"#;

fn status_command(dir: &Path, persistent: bool) -> ExecSystem {
    let script = dir.join("status.py");
    std::fs::write(&script, STATUS_SCRIPT).unwrap();
    let mut system = system(Some(StatusProbe {
        http: None,
        command: Some(vec![spanned("python3"), spanned(&script.display().to_string())]),
        persistent,
        post: None,
        role: Some(spanned("/role")),
        primary_if_equal: vec![],
        primary_when: vec!["leader".into()],
        backup_when: vec![],
        primary: None,
        commit_point: vec![spanned("/commit")],
        digest: None,
        view: None,
        durable: None,
        durable_settle: None,
        env: Default::default(),
    }));
    system.nodes_dir = dir.join("nodes");
    system.local_nodes_dir = system.nodes_dir.clone();
    std::fs::create_dir_all(system.nodes_dir.join("n1")).unwrap();
    system.with_persistent_status()
}

#[tokio::test]
async fn given_a_persistent_status_process_when_it_is_late_garbled_or_dies_should_replace_it_and_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let system = status_command(dir.path(), true);
    let timeout = Duration::from_millis(400);
    let pid = |status: &NodeStatus| status.raw["pid"].as_u64().unwrap();

    let first = system.probe(0, timeout).await.unwrap();
    assert_eq!((first.role, first.commit_point.as_str()), (Role::Primary, "/commit=1"));
    assert_eq!(
        system.probe(0, timeout).await,
        Err(ProbeError::NoAnswer),
        "probe 2 answers after its deadline"
    );
    let third = system.probe(0, timeout).await.unwrap();
    assert_eq!(third.commit_point, "/commit=3");
    assert_ne!(pid(&third), pid(&first), "the late process was replaced");
    match system.probe(0, timeout).await {
        Err(ProbeError::Misconfigured(why)) => assert!(why.contains("`not json at all`"), "{why}"),
        other => panic!("probe 4 is garbage: {other:?}"),
    }
    let fifth = system.probe(0, timeout).await.unwrap();
    assert_ne!(pid(&fifth), pid(&third), "the garbling process was replaced");
    assert_eq!(
        system.probe(0, timeout).await,
        Err(ProbeError::NoAnswer),
        "probe 6: the process exits"
    );
    let seventh = system.probe(0, timeout).await.unwrap();
    assert_ne!(pid(&seventh), pid(&fifth), "the dead process was replaced");
    assert_eq!(
        system.probe(0, timeout).await,
        Err(ProbeError::NoAnswer),
        "probe 8: {{\"error\"}} is no answer"
    );
    let ninth = system.probe(0, timeout).await.unwrap();
    assert_eq!(
        pid(&ninth),
        pid(&seventh),
        "a node that did not answer keeps its status process"
    );
    let log = std::fs::read_to_string(dir.path().join("nodes/n1/status.log")).unwrap();
    assert_eq!(
        log.matches("=== faultline: replacing status process").count(),
        3,
        "{log}"
    );
    assert!(log.contains("no answer to probe 2 within 400 ms"), "{log}");

    drop(system);
    let gone = |pid: u64| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat.split_whitespace().nth(2) == Some("Z"))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !gone(pid(&ninth)) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(pid(&ninth)), "the status process dies with its system");
}

#[tokio::test]
async fn given_a_one_shot_status_command_when_probed_should_read_its_stdout_and_take_a_failure_for_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut system = status_command(dir.path(), false);
    let status = system.config.status.as_mut().unwrap();
    status.command = Some(vec![
        spanned("sh"),
        spanned("-c"),
        spanned("echo '{{\"role\": \"follower\", \"commit\": 12}}'; echo to-the-log >&2"),
    ]);
    let answer = system.probe(0, Duration::from_millis(100)).await.unwrap();
    assert_eq!(
        (answer.role, answer.commit_point.as_str()),
        (Role::Backup, "/commit=12")
    );
    let log = std::fs::read_to_string(dir.path().join("nodes/n1/status.log")).unwrap();
    assert!(log.contains("to-the-log"), "{log}");
    system.config.status.as_mut().unwrap().command = Some(vec![spanned("sh"), spanned("-c"), spanned("exit 1")]);
    assert_eq!(
        system.probe(0, Duration::from_millis(100)).await,
        Err(ProbeError::NoAnswer)
    );
    system.config.status.as_mut().unwrap().command = Some(vec![spanned("sh"), spanned("-c"), spanned("echo [1]")]);
    match system.probe(0, Duration::from_millis(100)).await {
        Err(ProbeError::Misconfigured(why)) => assert!(why.contains("not an object") && why.contains("[1]"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// With `user`, `prepare` refuses a node folder the user cannot reach (naming the parent to open up), and otherwise
/// gives the folder, its config files and its logs to the user; `prepare` itself runs as the user. Needs root.
#[tokio::test]
async fn given_a_user_when_prepared_should_give_the_node_folder_to_it_or_name_the_parent_it_cannot_enter() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: only root may give files to another user");
        return;
    }
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let nobody = crate::supervisor::RunAs::lookup("nobody").expect("the nobody user");
    let dir = tempfile::tempdir().unwrap();
    let mut system = system(None);
    system.nodes_dir = dir.path().join("nodes");
    system.local_nodes_dir = system.nodes_dir.clone();
    system.user = Some(Arc::new(nobody.clone()));
    system
        .config
        .config_files
        .insert("node.conf".into(), spanned("id={id}"));
    // Runs as nobody: it can write to its own data dir, and says who it is.
    system.config.prepare = Some(vec![
        spanned("sh"),
        spanned("-c"),
        spanned("id -u > \"$1/whoami\"; echo \"$HOME\" >> \"$1/whoami\""),
        spanned("sh"),
        spanned("{data_dir}"),
    ]);

    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let refused = system.prepare(0).await.unwrap_err().to_string();
    assert!(refused.contains("cannot enter"), "{refused}");
    assert!(
        refused.contains(&dir.path().display().to_string()),
        "names the 0700 temp dir: {refused}"
    );

    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    system.prepare(0).await.unwrap_or_else(|e| panic!("{e:#}"));
    let node_dir = dir.path().join("nodes/n1");
    for path in ["", "data", "node.conf", "node.log", "status.log"] {
        let md = std::fs::metadata(node_dir.join(path)).unwrap();
        assert_eq!(
            (md.uid(), md.gid()),
            (nobody.uid, nobody.gid),
            "{path} belongs to nobody"
        );
    }
    let whoami = std::fs::read_to_string(node_dir.join("data/whoami")).unwrap();
    assert_eq!(whoami, format!("{}\n{}\n", nobody.uid, nobody.home.display()));
}

/// A system that prints no boot line saying what it kept: `durable` alone reads it from the first status answer
/// after a boot, `recovered: {status: POINTER}` names what to read there, and a half-written `recovered` is refused.
#[test]
fn given_a_durable_pointer_without_a_boot_line_when_validated_should_read_what_a_node_kept_from_its_status() {
    let durable = GOOD.replace("commit_point: [/commit]}", "commit_point: [/commit], durable: /commit}");
    let plan = config(&durable).unwrap_or_else(|e| panic!("durable alone is allowed: {e}"));
    assert!(plan.system.adapter().capabilities().durable_progress);
    let system = system(match plan.system {
        crate::plan::SystemSpec::Exec(e) => e.status,
        _ => unreachable!("parsed as exec"),
    });
    assert!(system.kept_from_status());
    let answer = NodeStatus {
        role: Role::Backup,
        primary: None,
        commit_point: String::new(),
        raw: serde_json::json!({"commit": 7, "op": "9"}),
    };
    assert_eq!(
        system.kept(&answer),
        Some(7),
        "the durable pointer, read after the boot"
    );

    let pointer = format!("{durable}  recovered: {{status: /op}}\n");
    config(&pointer).unwrap_or_else(|e| panic!("a status pointer for what a node kept: {e}"));
    for (recovered, expected) in [
        ("{line: \"rejoining\"}", "takes `{line, after}`"),
        (
            "{line: \"rejoining\", after: \"op=\", status: /op}",
            "takes `{line, after}`",
        ),
        ("{status: op}", "not a JSON pointer"),
    ] {
        let err = config(&format!("{durable}  recovered: {recovered}\n")).unwrap_err();
        assert!(err.message.contains(expected), "{recovered}: {err}");
        assert!(err.line > 0, "{recovered}: at its line: {err}");
    }
}

/// `system.lists`: the peers in the syntax a system wants (a Galera `gcomm://` address), every node, and item
/// templates that name what a listed node has not, refused at their line.
#[test]
fn given_lists_when_expanded_should_write_each_listed_node_in_the_plans_syntax() {
    let lists = "  lists:\n    cluster: {of: peers, item: \"{host}:{port.peer}\"}\n    \
                 all: {of: nodes, item: \"{name}@{addr.client}\", separator: \" \"}\n  start:";
    let yaml = GOOD
        .replacen("  start:", lists, 1)
        .replace("\"{id}\"]", "\"gcomm://{list.cluster}\"]");
    let plan = config(&yaml).unwrap_or_else(|e| panic!("{e}"));
    let crate::plan::SystemSpec::Exec(exec) = &plan.system else {
        unreachable!("parsed as exec")
    };
    let mut system = system(None);
    system.config.lists = exec.lists.clone();
    let vars = system.node_vars(1);
    assert_eq!(
        vars.expand("gcomm://{list.cluster}"),
        "gcomm://127.9.9.1:26001,127.9.9.1:26003"
    );
    assert_eq!(
        vars.expand("{list.all}"),
        "n1@127.9.9.1:25001 n2@127.9.9.1:25002 n3@127.9.9.1:25003"
    );
    let bad = GOOD.replacen(
        "  start:",
        "  lists:\n    cluster: {of: peers, item: \"{data_dir}\"}\n  start:",
        1,
    );
    let err = config(&bad).unwrap_err();
    assert!(err.message.contains("not a variable of a listed node"), "{err}");
    assert_eq!(err.line, bad_line(&bad, "{data_dir}"));
    let err = config(&GOOD.replace("\"{id}\"]", "\"{list.cluster}\"]")).unwrap_err();
    assert!(err.message.contains("names no list"), "{err}");
}

fn bad_line(yaml: &str, needle: &str) -> u64 {
    let text = crate::plan::DEFAULT_PLAN_YAML.replace(
        "system:\n  kind: reference        # faultline-node, found next to the faultline executable\n  nodes: 3\n",
        yaml,
    );
    text.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1
}
