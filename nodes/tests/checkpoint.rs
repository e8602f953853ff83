//! Checkpoints and state transfer on real `faultline-node` processes: the WAL stays bounded, a replica whose
//! missing ops were compacted away catches up from a checkpoint, and every node boots from its own.

mod common;

use std::time::Duration;

use common::{http, Cluster};

const SECONDS_10: Duration = Duration::from_secs(10);
const SECONDS_20: Duration = Duration::from_secs(20);
/// Small, so a test of a few hundred writes crosses several checkpoints.
const INTERVAL: u64 = 40;

fn cluster_with_checkpoints(count: u8) -> Cluster {
    let mut cluster = Cluster::new(count);
    for args in &mut cluster.extra_args {
        args.extend(["--checkpoint-interval-ops".to_string(), INTERVAL.to_string()]);
    }
    cluster
}

fn put_range(cluster: &Cluster, range: std::ops::Range<u32>) {
    for i in range {
        assert!(cluster.put(&format!("k{i}"), &format!("v{i}"), SECONDS_10), "put k{i}");
    }
}

fn status_u64(cluster: &Cluster, id: u8, field: &str) -> u64 {
    let status = cluster.status(id).expect("status answers");
    status[field].as_u64().unwrap_or_else(|| panic!("{field} in {status}"))
}

#[test]
fn given_a_backup_down_while_the_cluster_checkpointed_past_it_when_restarted_should_catch_up_by_state_transfer() {
    let mut cluster = cluster_with_checkpoints(3);
    // Replica 2 answers reads from its own state machine (the stale-backup-reads mutant), which is how this test
    // reads what the state transfer installed there rather than what the primary holds.
    cluster.extra_args[2].extend(["--bug".to_string(), "stale-backup-reads".to_string()]);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    put_range(&cluster, 0..10);
    assert!(cluster.wait_converged(SECONDS_10));
    cluster.kill(2);
    put_range(&cluster, 10..250);
    assert!(
        status_u64(&cluster, 0, "wal_base") > 10,
        "the primary compacted past the backup's head"
    );
    cluster.start(2);
    assert!(
        cluster.wait_converged(SECONDS_20),
        "the lagging backup catches up: {}",
        cluster.log(2)
    );
    assert!(
        cluster.log(0).contains("state transfer: checkpoint sent"),
        "{}",
        cluster.log(0)
    );
    assert!(
        cluster.log(2).contains("state transfer: checkpoint installed"),
        "{}",
        cluster.log(2)
    );
    for i in 0..250 {
        let read = http(&cluster.nodes[2].client_addr, "GET", &format!("/kv/k{i}"), None, &[]).expect("answers");
        assert_eq!(read.body["value"], format!("v{i}"), "k{i} in the replica's own state");
    }
    for id in 0..3 {
        let entries = status_u64(&cluster, id, "wal_entries");
        assert!(entries <= 3 * INTERVAL, "replica {id} holds {entries} wal entries");
    }
}

#[test]
fn given_every_replica_checkpointed_when_all_are_killed_and_restarted_should_boot_from_the_checkpoints() {
    let mut cluster = cluster_with_checkpoints(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    put_range(&cluster, 0..200);
    assert!(cluster.wait_converged(SECONDS_10));
    let wal_bytes = std::fs::metadata(cluster.data_dir(1).join("wal")).expect("wal").len();
    for id in 0..3 {
        cluster.kill(id);
    }
    cluster.start_all();
    assert!(cluster.wait_converged(SECONDS_20), "{}", cluster.log(0));
    for id in 0..3 {
        let log = cluster.log(id);
        assert!(log.contains("checkpoint loaded"), "replica {id}: {log}");
        assert!(!log.contains("refusing to boot"), "replica {id}: {log}");
        assert!(status_u64(&cluster, id, "checkpoint") >= 3 * INTERVAL);
    }
    for i in 0..200 {
        assert_eq!(
            cluster.get(&format!("k{i}"), SECONDS_10),
            Some(serde_json::json!(format!("v{i}")))
        );
    }
    // 200 writes of about 130 bytes each would be 26 KB without checkpoints; the WAL keeps one to two intervals.
    assert!(wal_bytes < 3 * INTERVAL * 200, "wal of {wal_bytes} bytes");
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_faultline-node"))
        .arg("verify")
        .arg(cluster.data_dir(1))
        .output()
        .expect("verify");
    let verdict = String::from_utf8_lossy(&verify.stdout);
    assert!(
        verify.status.success() && verdict.contains("checkpoint at op"),
        "{verdict}"
    );
}

#[test]
fn given_a_wiped_replica_when_the_cluster_compacted_its_log_should_recover_by_state_transfer_and_keep_every_write() {
    let mut cluster = cluster_with_checkpoints(3);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    put_range(&cluster, 0..150);
    cluster.kill(1);
    cluster.format(1, true);
    cluster.start(1);
    assert!(
        cluster.wait_converged(SECONDS_20),
        "the wiped replica recovers: {}",
        cluster.log(1)
    );
    assert!(
        cluster.log(1).contains("state transfer: checkpoint installed"),
        "{}",
        cluster.log(1)
    );
    cluster.kill(0);
    assert!(cluster.put("after", "v", SECONDS_20), "replicas 1 and 2 form a quorum");
    for i in 0..150 {
        assert_eq!(
            cluster.get(&format!("k{i}"), SECONDS_10),
            Some(serde_json::json!(format!("v{i}"))),
            "k{i}"
        );
    }
}

#[test]
fn given_an_emptied_checkpoint_file_when_booting_should_refuse_naming_it() {
    let mut cluster = cluster_with_checkpoints(1);
    cluster.start_all();
    assert_eq!(cluster.wait_for_primary(SECONDS_10), Some(0));
    put_range(&cluster, 0..60);
    cluster.kill(0);
    let checkpoints: Vec<_> = std::fs::read_dir(cluster.data_dir(0))
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("checkpoint."))
        })
        .collect();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    std::fs::write(&checkpoints[0], b"").expect("empty the checkpoint");
    cluster.start(0);
    let exit = cluster.wait_exit(0, SECONDS_10).expect("the replica exits");
    assert!(!exit.success());
    let log = cluster.log(0);
    assert!(
        log.contains("checkpoint") && log.contains("short file") && log.contains("refusing to boot"),
        "{log}"
    );
}
