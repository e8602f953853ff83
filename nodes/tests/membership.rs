//! Reconfiguration on real processes: replicas join, leave and are replaced while the cluster serves writes
//! (`replica::reconfiguration`, nodes/README.md "Reconfiguration").

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{http, Cluster, HttpResponse, NODE_BIN};
use serde_json::{json, Value};

const SECONDS_10: Duration = Duration::from_secs(10);
const SECONDS_20: Duration = Duration::from_secs(20);

/// `POST /reconfigure` to whichever running replica is primary, until one answers other than 421 (or `timeout`).
fn reconfigure(cluster: &Cluster, members: &[u8], timeout: Duration) -> Option<HttpResponse> {
    let body = json!({ "members": members }).to_string();
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let primary = cluster.wait_for_primary(deadline.saturating_duration_since(Instant::now()))?;
        let headers = [("X-Faultline-Deadline-Ms", "3000".to_string())];
        let answer = http(
            &cluster.nodes[primary as usize].client_addr,
            "POST",
            "/reconfigure",
            Some(&body),
            &headers,
        );
        match answer {
            Some(answer) if answer.status != 421 => return Some(answer),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    None
}

/// [`reconfigure`], asked again while the primary refuses because a quorum of the new configuration has not yet
/// acknowledged its log (a backup's first PrepareOk of the view may be on its way).
fn reconfigure_once_caught_up(cluster: &Cluster, members: &[u8], timeout: Duration) -> Option<HttpResponse> {
    let deadline = Instant::now() + timeout;
    loop {
        let answer = reconfigure(cluster, members, deadline.saturating_duration_since(Instant::now()))?;
        let behind = answer.status == 409
            && answer.body["error"]
                .as_str()
                .is_some_and(|e| e.contains("short of the quorum"));
        if !behind || Instant::now() > deadline {
            return Some(answer);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until every replica in `members` is normal in `epoch` with the same op, commit and head (and commit = op).
fn wait_members_converged(cluster: &Cluster, members: &[u8], epoch: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let statuses: Vec<Option<Value>> = members.iter().map(|&id| cluster.status(id)).collect();
        let settled = statuses.iter().all(|s| {
            s.as_ref()
                .is_some_and(|s| s["status"] == "normal" && s["epoch"] == epoch)
        });
        if settled {
            let keys: Vec<(Value, Value, Value)> = statuses
                .iter()
                .flatten()
                .map(|s| (s["op"].clone(), s["commit"].clone(), s["head_checksum"].clone()))
                .collect();
            if keys.windows(2).all(|pair| pair[0] == pair[1]) && keys[0].0 == keys[0].1 {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn write_keys(cluster: &Cluster, prefix: &str, count: usize) {
    for i in 0..count {
        assert!(
            cluster.put(&format!("{prefix}{i}"), &format!("v{i}"), SECONDS_10),
            "write {prefix}{i} acknowledged"
        );
    }
}

fn assert_keys(cluster: &Cluster, prefix: &str, count: usize) {
    for i in 0..count {
        let value = cluster.get(&format!("{prefix}{i}"), SECONDS_10);
        assert_eq!(value, Some(json!(format!("v{i}"))), "{prefix}{i} survives");
    }
}

#[test]
fn given_three_members_when_two_replicas_join_one_at_a_time_should_keep_every_write_and_state_transfer_the_joiners() {
    let mut cluster = Cluster::with_pool(5, &[0, 1, 2]);
    // Small checkpoints, so the primary's WAL no longer holds the first ops when a joiner catches up.
    for args in &mut cluster.extra_args {
        args.extend(["--checkpoint-interval-ops".to_string(), "40".to_string()]);
    }
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    write_keys(&cluster, "a", 100);
    let grown = reconfigure_once_caught_up(&cluster, &[0, 1, 2, 3], SECONDS_10).expect("reconfigure answered");
    assert_eq!(
        (grown.status, grown.body.clone()),
        (200, json!({"epoch": 2, "members": [0, 1, 2, 3]}))
    );
    write_keys(&cluster, "b", 20);
    assert!(
        wait_members_converged(&cluster, &[0, 1, 2, 3], 2, SECONDS_20),
        "n4 caught up"
    );
    let grown = reconfigure_once_caught_up(&cluster, &[0, 1, 2, 3, 4], SECONDS_10).expect("reconfigure answered");
    assert_eq!(grown.body, json!({"epoch": 3, "members": [0, 1, 2, 3, 4]}));
    write_keys(&cluster, "c", 20);
    assert!(
        wait_members_converged(&cluster, &[0, 1, 2, 3, 4], 3, SECONDS_20),
        "n5 caught up"
    );
    assert_keys(&cluster, "a", 100);
    assert_keys(&cluster, "b", 20);
    let status = cluster.status(4).expect("n5 answers");
    assert_eq!(
        (status["members"].clone(), status["role"].clone()),
        (json!([0, 1, 2, 3, 4]), json!("backup"))
    );
    assert!(
        cluster.log(4).contains("state transfer: checkpoint installed"),
        "the joiner got the compacted prefix as a checkpoint"
    );
}

#[test]
fn given_a_removed_replica_when_the_remaining_members_lose_their_quorum_should_not_count_its_vote() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    write_keys(&cluster, "a", 5);
    let shrunk = reconfigure_once_caught_up(&cluster, &[0, 1], SECONDS_10).expect("reconfigure answered");
    assert_eq!(shrunk.body, json!({"epoch": 2, "members": [0, 1]}));
    assert!(wait_members_converged(&cluster, &[0, 1], 2, SECONDS_10));
    // n3 learns of its removal from the commit that follows (a busy machine may deliver it after n1 and n2 moved on).
    let deadline = Instant::now() + SECONDS_10;
    let removed = loop {
        let status = cluster.status(2).expect("n3 answers");
        if status["status"] == "removed" || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        (removed["status"].clone(), removed["epoch"].clone()),
        (json!("removed"), json!(2))
    );
    // n2 down: n1 alone is no quorum of {n1, n2}, however willing the removed n3 is.
    cluster.kill(1);
    let headers = [("X-Faultline-Deadline-Ms", "1500".to_string())];
    let body = r#"{"value":"lonely"}"#;
    let put = http(&cluster.nodes[0].client_addr, "PUT", "/kv/z", Some(body), &headers).expect("answered");
    assert_ne!(put.status, 200, "no quorum without n2: {:?}", put.body);
    let at_n3 = http(&cluster.nodes[2].client_addr, "PUT", "/kv/z", Some(body), &headers).expect("answered");
    assert_eq!(at_n3.status, 421, "a removed replica serves no client");
    cluster.start(1);
    assert!(cluster.put("z", "back", SECONDS_10), "n2 back: a quorum again");
    assert_keys(&cluster, "a", 5);
}

#[test]
fn given_the_primary_removed_when_the_reconfiguration_commits_should_hand_the_epoch_to_the_next_member() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    write_keys(&cluster, "a", 10);
    let shrunk = reconfigure_once_caught_up(&cluster, &[1, 2], SECONDS_10).expect("reconfigure answered");
    assert_eq!(shrunk.body, json!({"epoch": 2, "members": [1, 2]}));
    assert!(wait_members_converged(&cluster, &[1, 2], 2, SECONDS_10));
    assert_eq!(
        cluster.status(1).expect("n2")["role"],
        "primary",
        "the member after n1 leads"
    );
    assert_eq!(cluster.status(0).expect("n1")["status"], "removed");
    write_keys(&cluster, "b", 10);
    assert_keys(&cluster, "a", 10);
}

#[test]
fn given_a_replaced_member_when_wiped_and_added_back_should_recover_and_every_replica_should_boot_across_the_epochs() {
    let mut cluster = Cluster::new(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    write_keys(&cluster, "a", 20);
    assert_eq!(
        reconfigure_once_caught_up(&cluster, &[0, 1], SECONDS_10)
            .expect("answered")
            .status,
        200
    );
    cluster.kill(2);
    cluster.format(2, true);
    cluster.start(2);
    write_keys(&cluster, "b", 10);
    let added = reconfigure_once_caught_up(&cluster, &[0, 1, 2], SECONDS_10).expect("answered");
    assert_eq!(added.body, json!({"epoch": 3, "members": [0, 1, 2]}));
    assert!(
        wait_members_converged(&cluster, &[0, 1, 2], 3, SECONDS_20),
        "n3 recovered"
    );
    for id in 0..3 {
        cluster.kill(id);
    }
    for id in 0..3 {
        let verify = Command::new(NODE_BIN)
            .arg("verify")
            .arg(cluster.data_dir(id))
            .output()
            .expect("run verify");
        assert!(
            verify.status.success(),
            "the chain verifies across reconfigurations: {verify:?}"
        );
    }
    cluster.start_all();
    assert!(
        wait_members_converged(&cluster, &[0, 1, 2], 3, SECONDS_20),
        "every replica boots in epoch 3"
    );
    assert_keys(&cluster, "a", 20);
    assert_keys(&cluster, "b", 10);
}

#[test]
fn given_a_change_of_two_replicas_or_one_outside_the_pool_when_asked_should_be_refused_before_the_log() {
    let mut cluster = Cluster::with_pool(5, &[0, 1, 2]);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    let two = reconfigure(&cluster, &[0, 1, 2, 3, 4], SECONDS_10).expect("answered");
    assert_eq!((two.status, two.body["outcome"].clone()), (409, json!("not-applied")));
    assert!(
        two.body["error"].as_str().unwrap().contains("exactly one replica"),
        "{}",
        two.body
    );
    let outside = reconfigure(&cluster, &[0, 1, 2, 7], SECONDS_10).expect("answered");
    assert_eq!(outside.status, 409, "{}", outside.body);
    let same = reconfigure(&cluster, &[0, 1, 2], SECONDS_10).expect("answered");
    assert_eq!(same.body, json!({"epoch": 1, "members": [0, 1, 2]}));
    let body = json!({"members": [0, 1, 2, 3]}).to_string();
    let at_backup = http(&cluster.nodes[1].client_addr, "POST", "/reconfigure", Some(&body), &[]).expect("answered");
    assert_eq!(at_backup.status, 421);
    // A joiner not (yet) added learns the epoch it is no member of, and waits there.
    let deadline = Instant::now() + SECONDS_10;
    let joiner = loop {
        let status = cluster.status(3).unwrap_or(Value::Null);
        if status["epoch"] == 1 || Instant::now() > deadline {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        (joiner["status"].clone(), joiner["epoch"].clone()),
        (json!("removed"), json!(1))
    );
}

/// Grows 3 -> 4, then kills two backups: is a write committed by the primary and one backup?
fn commits_on_two_of_four(bug: Option<&str>) -> bool {
    let mut cluster = Cluster::with_pool(4, &[0, 1, 2]);
    if let Some(bug) = bug {
        cluster = cluster.with_bug(bug);
    }
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    assert_eq!(
        reconfigure_once_caught_up(&cluster, &[0, 1, 2, 3], SECONDS_10)
            .expect("answered")
            .status,
        200
    );
    assert!(wait_members_converged(&cluster, &[0, 1, 2, 3], 2, SECONDS_20));
    cluster.kill(2);
    cluster.kill(3);
    let headers = [("X-Faultline-Deadline-Ms", "2000".to_string())];
    let put = http(
        &cluster.nodes[0].client_addr,
        "PUT",
        "/kv/k",
        Some(r#"{"value":"v"}"#),
        &headers,
    );
    put.is_some_and(|put| put.status == 200)
}

#[test]
fn given_quorum_of_old_config_when_two_of_four_members_are_down_should_commit_on_two_where_the_correct_node_waits() {
    assert!(!commits_on_two_of_four(None), "the correct node needs three of four");
    assert!(
        commits_on_two_of_four(Some("quorum-of-old-config")),
        "the mutant takes two of four (the old configuration's quorum) for a quorum"
    );
}

#[test]
fn given_a_member_that_never_caught_up_when_a_change_would_leave_no_quorum_holding_the_log_should_refuse_it_until_it_has(
) {
    // n4 and n5 are joiners that are not running. [0,1,2] -> [0,1,2,3] leaves three of four with the log (a quorum);
    // -> [0,1,3] two of three; -> [0,1,3,4] would leave two of four: no quorum could commit, and none could answer
    // n4's and n5's recoveries, for good.
    let mut cluster = Cluster::with_pool(5, &[0, 1, 2]);
    for id in 0..3 {
        cluster.start(id);
    }
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    write_keys(&cluster, "a", 5);
    let grown = reconfigure_once_caught_up(&cluster, &[0, 1, 2, 3], SECONDS_10).expect("answered");
    assert_eq!(grown.body, json!({"epoch": 2, "members": [0, 1, 2, 3]}));
    write_keys(&cluster, "b", 5);
    let shrunk = reconfigure_once_caught_up(&cluster, &[0, 1, 3], SECONDS_10).expect("answered");
    assert_eq!(shrunk.body, json!({"epoch": 3, "members": [0, 1, 3]}));
    write_keys(&cluster, "c", 5);
    let refused = reconfigure(&cluster, &[0, 1, 3, 4], SECONDS_10).expect("answered");
    assert_eq!(
        (refused.status, refused.body["outcome"].clone()),
        (409, json!("not-applied")),
        "{}",
        refused.body
    );
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("short of the quorum of 3"),
        "{}",
        refused.body
    );
    // Once n4 recovered in epoch 3, the same change goes through, and n5 recovers from three with the log.
    cluster.start(3);
    assert!(
        wait_members_converged(&cluster, &[0, 1, 3], 3, SECONDS_20),
        "n4 recovered"
    );
    cluster.start(4);
    let grown = reconfigure_once_caught_up(&cluster, &[0, 1, 3, 4], SECONDS_10).expect("answered");
    assert_eq!(grown.body, json!({"epoch": 4, "members": [0, 1, 3, 4]}));
    write_keys(&cluster, "d", 5);
    assert!(
        wait_members_converged(&cluster, &[0, 1, 3, 4], 4, SECONDS_20),
        "n5 recovered"
    );
    assert_keys(&cluster, "a", 5);
    assert_keys(&cluster, "c", 5);
}
