//! Integration tests: real `faultline-node` processes on loopback.

mod common;

use std::time::{Duration, Instant};

use common::{http, Cluster};

const SECONDS_5: Duration = Duration::from_secs(5);
const SECONDS_10: Duration = Duration::from_secs(10);

#[test]
fn given_three_fresh_replicas_when_started_should_elect_view_0_and_serve_writes_and_reads() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    let primary = cluster.nodes[0].client_addr.clone();
    let put = http(&primary, "PUT", "/kv/a", Some(r#"{"value":"1"}"#), &[]).expect("put answered");
    assert_eq!((put.status, put.body["ok"].clone()), (200, serde_json::json!(true)));
    let get = http(&primary, "GET", "/kv/a", None, &[]).expect("get answered");
    assert_eq!(get.body["value"], "1");
    let missing = http(&primary, "GET", "/kv/missing", None, &[]).expect("get answered");
    assert_eq!(
        (missing.status, missing.body["value"].clone()),
        (200, serde_json::Value::Null)
    );
    let cas = http(&primary, "POST", "/kv/a/cas", Some(r#"{"from":"0","to":"2"}"#), &[]).expect("cas answered");
    assert_eq!((cas.status, cas.body["current"].clone()), (409, serde_json::json!("1")));
    let cas = http(&primary, "POST", "/kv/a/cas", Some(r#"{"from":"1","to":"2"}"#), &[]).expect("cas answered");
    assert_eq!(cas.status, 200);
    // View 0 needs only one backup, so n2 may still be booting (busy machine): wait until it answers.
    let deadline = Instant::now() + SECONDS_10;
    let backup = loop {
        match http(&cluster.nodes[1].client_addr, "GET", "/kv/a", None, &[]) {
            Some(answer) => break answer,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            None => panic!("the backup never answered within {SECONDS_10:?}"),
        }
    };
    assert_eq!(
        (backup.status, backup.body["primary"].clone()),
        (421, serde_json::json!(primary))
    );
    for value in ["x", "y"] {
        let append = http(
            &primary,
            "POST",
            "/log/l",
            Some(&format!(r#"{{"value":"{value}"}}"#)),
            &[],
        )
        .expect("append");
        assert_eq!(append.status, 200);
    }
    let read = http(&primary, "GET", "/log/l?from=1&limit=5", None, &[]).expect("log read");
    assert_eq!(
        read.body,
        serde_json::json!({"entries":[{"offset":1,"value":"y"}],"end":2})
    );
    assert!(cluster.wait_converged(SECONDS_5), "replicas converge");
}

#[test]
fn given_a_retried_request_when_resent_with_the_same_identity_should_apply_once() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    let primary = cluster.nodes[0].client_addr.clone();
    let headers = [("X-Client-Id", "7".to_string()), ("X-Request-Number", "1".to_string())];
    let first = http(&primary, "POST", "/log/l", Some(r#"{"value":"once"}"#), &headers).expect("append");
    let retry = http(&primary, "POST", "/log/l", Some(r#"{"value":"once"}"#), &headers).expect("retry");
    assert_eq!((first.status, retry.status), (200, 200));
    assert_eq!(first.body, retry.body);
    let read = http(&primary, "GET", "/log/l", None, &[]).expect("read");
    assert_eq!(read.body["end"], 1);
}

#[test]
fn given_a_killed_primary_when_the_others_view_change_should_serve_writes_within_5s() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    assert!(cluster.put("before", "1", SECONDS_5));
    cluster.kill(0);
    let killed_at = Instant::now();
    assert!(
        cluster.put("after", "2", SECONDS_5),
        "a write is acknowledged after the failover"
    );
    assert!(
        killed_at.elapsed() < SECONDS_5,
        "failover took {:?}",
        killed_at.elapsed()
    );
    assert_eq!(cluster.get("before", SECONDS_5), Some(serde_json::json!("1")));
    assert!(cluster.log(1).contains("view change") || cluster.log(2).contains("view change"));
}

#[test]
fn given_a_killed_backup_when_restarted_should_rejoin_and_repair_the_missed_ops() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    assert!(cluster.put("k0", "v", SECONDS_5));
    cluster.kill(2);
    for i in 1..40 {
        assert!(cluster.put(&format!("k{i}"), "v", SECONDS_5));
    }
    cluster.start(2);
    assert!(cluster.wait_converged(SECONDS_10), "the restarted backup catches up");
    // The repaired backup can now carry a quorum: kill the other backup and keep writing.
    cluster.kill(1);
    assert!(cluster.put("k40", "v", SECONDS_5));
    assert!(cluster.log(2).contains("repair"), "{}", cluster.log(2));
}

#[test]
fn given_a_killed_primary_when_restarted_should_rejoin_as_backup_and_repair() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    assert!(cluster.put("a", "1", SECONDS_5));
    cluster.kill(0);
    for i in 0..20 {
        assert!(cluster.put(&format!("b{i}"), "2", SECONDS_10));
    }
    cluster.start(0);
    assert!(
        cluster.wait_converged(SECONDS_10),
        "the old primary rejoins and catches up"
    );
    let status = cluster.status(0).expect("status");
    assert_eq!(status["role"], "backup");
}

#[test]
fn given_all_three_killed_when_restarted_should_boot_cleanly_and_keep_every_acknowledged_write() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    let mut acknowledged = Vec::new();
    for i in 0..30 {
        let key = format!("k{i}");
        if cluster.put(&key, &format!("v{i}"), SECONDS_5) {
            acknowledged.push((key, format!("v{i}")));
        }
    }
    assert_eq!(acknowledged.len(), 30);
    for id in 0..3 {
        cluster.kill(id);
    }
    cluster.start_all();
    assert!(
        cluster.wait_for_primary(SECONDS_10).is_some(),
        "a primary is elected after the restart"
    );
    for (key, value) in &acknowledged {
        assert_eq!(cluster.get(key, SECONDS_5), Some(serde_json::json!(value)), "key {key}");
    }
    for id in 0..3 {
        assert!(!cluster.log(id).contains("refusing to boot"), "{}", cluster.log(id));
    }
}

#[test]
fn given_a_wiped_replica_when_it_recovers_and_the_primary_is_killed_should_keep_every_acknowledged_write() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    for i in 0..20 {
        assert!(cluster.put(&format!("k{i}"), "v", SECONDS_5));
    }
    cluster.kill(1);
    cluster.format(1, true);
    cluster.start(1);
    assert!(
        cluster.wait_converged(SECONDS_10),
        "the wiped replica recovers: {}",
        cluster.log(1)
    );
    assert!(cluster.log(1).contains("recovery"));
    cluster.kill(0);
    assert!(cluster.put("after", "v", SECONDS_10), "replicas 1 and 2 form a quorum");
    for i in 0..20 {
        assert_eq!(
            cluster.get(&format!("k{i}"), SECONDS_5),
            Some(serde_json::json!("v")),
            "key k{i}"
        );
    }
}

#[test]
fn given_one_replica_with_a_torn_wal_tail_when_restarted_should_truncate_it_and_keep_acknowledged_writes() {
    let mut cluster = Cluster::new(1);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    for i in 0..5 {
        assert!(cluster.put(&format!("k{i}"), "v", SECONDS_5));
    }
    cluster.kill(0);
    let wal = cluster.data_dir(0).join("wal");
    let mut bytes = std::fs::read(&wal).expect("read wal");
    bytes.extend_from_slice(&[0xab; 40]);
    std::fs::write(&wal, &bytes).expect("tear the wal tail");
    cluster.start(0);
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    for i in 0..5 {
        assert_eq!(cluster.get(&format!("k{i}"), SECONDS_5), Some(serde_json::json!("v")));
    }
    assert!(cluster.log(0).contains("torn tail"), "{}", cluster.log(0));
}

#[test]
fn given_five_replicas_when_two_are_killed_should_keep_serving_writes() {
    let mut cluster = Cluster::new(5);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    assert!(cluster.put("a", "1", SECONDS_5));
    cluster.kill(0);
    cluster.kill(3);
    assert!(cluster.put("b", "2", SECONDS_10));
    assert_eq!(cluster.get("a", SECONDS_5), Some(serde_json::json!("1")));
    cluster.start(0);
    cluster.start(3);
    assert!(cluster.wait_converged(SECONDS_10), "all five converge");
}
