//! Tests of the Iggy adapter: boot refusals, launch environment, status and poll answers.

use super::client::polled_entries;
use super::*;

fn system() -> IggySystem {
    IggySystem::new(
        "/bin/iggy-server".into(),
        "/src/core/server/config.toml".into(),
        3,
        "/tmp/nodes".into(),
        vec![
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            "10.0.0.3".parse().unwrap(),
        ],
        "t1",
        2,
    )
}

#[test]
fn given_a_wal_refusal_in_coloured_output_when_judged_should_return_the_servers_own_words() {
    let tail = "\u{1b}[2m2026-11-29T14:45:52Z\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m main server::bootstrap: shard thread \
                returned error shard_id=0 error=failed to recover metadata snapshot and journal\n\
                Error: ShardJoinFailures { failures: [ShardJoinFailure { shard_id: 0, kind: Error(MetadataRecovery(\
                Journal(Io(Custom { kind: InvalidData, error: \"mid-file WAL corruption at pos 1292: corrupt header; \
                refusing to truncate and discard committed entries\" })))) }] }\n";
    assert_eq!(
        system().boot_refusal_line(tail).as_deref(),
        Some(
            "iggy refused to boot: mid-file WAL corruption at pos 1292: corrupt header; refusing to truncate and \
             discard committed entries"
        )
    );
}

#[test]
fn given_a_port_in_use_when_judged_should_not_be_a_refusal() {
    let tail = "ERROR main server::bootstrap: shard thread returned error shard_id=0 error=Cannot bind to socket \
                with addr: 127.0.0.1:31100\nError: ShardJoinFailures { failures: [ShardJoinFailure { shard_id: 0, \
                kind: Error(Iggy(CannotBindToSocket(\"127.0.0.1:31100\"))) }] }\n";
    assert_eq!(system().boot_refusal_line(tail), None);
}

#[test]
fn given_three_nodes_when_launched_should_share_one_roster_and_bind_own_addresses() {
    let system = system();
    let command = system.launch(1, crate::system::StartKind::First);
    assert!(command.env_clear);
    assert_eq!(command.args, ["--replica-id", "1"]);
    let env: std::collections::HashMap<_, _> = command.env.into_iter().collect();
    assert_eq!(env["IGGY_CLUSTER_NODES_2_IP"], "10.0.0.3");
    assert_eq!(env["IGGY_CLUSTER_NODES_0_PORTS_TCP_REPLICA"], "25101");
    assert_eq!(env["IGGY_HTTP_ADDRESS"], "10.0.0.2:25202");
    assert_eq!(env["IGGY_SYSTEM_PATH"], "/tmp/nodes/n2/data");
    assert!(env.keys().all(|k| k.starts_with("IGGY_")));
}

#[test]
fn given_poll_answers_when_read_as_log_entries_should_tell_an_empty_partition_from_one_message() {
    let empty = json!({"partition_id": 1, "current_offset": 0, "count": 0, "messages": []});
    assert_eq!(
        polled_entries(&empty, 0).unwrap(),
        json!({"from": 0, "entries": [], "end": 0})
    );
    let one = json!({"current_offset": 0, "messages": [{"header": {"offset": 0}, "payload": "cDE="}]});
    assert_eq!(
        polled_entries(&one, 0).unwrap(),
        json!({"from": 0, "entries": [[0, "p1"]], "end": 1})
    );
    assert_eq!(polled_entries(&empty, 1).unwrap()["end"], 1);
}

#[test]
fn given_a_status_with_a_serving_view_when_read_should_report_that_view() {
    let status = |view: Value| NodeStatus {
        role: Role::Primary,
        primary: Some(0),
        commit_point: String::new(),
        raw: json!({"http_status": 200, "view": view, "role": "Primary"}),
    };
    assert_eq!(system().progress(&status(json!("7"))).view, Some(7));
    assert_eq!(
        system().progress(&status(Value::Null)).view,
        None,
        "an answer without the header"
    );
    assert_eq!(system().progress(&status(json!("seven"))).view, None);
}

#[test]
fn given_the_same_streams_in_another_order_when_digested_should_be_equal() {
    let a = json!([{"id": 0, "name": "e1"}, {"id": 1, "name": "e2"}]);
    let b = json!([{"id": 1, "name": "e2"}, {"id": 0, "name": "e1"}]);
    assert_eq!(streams_digest(&a), streams_digest(&b));
    assert_ne!(streams_digest(&a), streams_digest(&json!([{"id": 0, "name": "e1"}])));
}
