//! etcd 3.4 (Debian's `etcd-server`) end to end: a healthy etcd is judged valid under a leader kill and a restart of
//! every member; a recorded interior WAL bit flip makes a member refuse to boot and is judged legitimate; and a
//! deliberately broken client (serializable reads from a member cut off from the majority) is caught as
//! non-linearizable, proving the pipeline can fail on etcd.
//!
//! Needs `/usr/bin/etcd` (or `etcd` on PATH); the broken-client test also needs root, iproute2 and nftables (netns
//! backend), the disk test root and /dev/fuse. Under `CI=true` a missing prerequisite fails; elsewhere it skips.
//! `FAULTLINE_REPEAT=N` repeats the broken-client scenario N times (it must be caught every time).

mod support;

use serde_json::Value;
use support::{
    after_restart_all, assert_exit, check, explain, fuse_ready, history, netns_ready, one_cluster, prerequisite,
    results, run_text,
};

fn etcd_installed() -> Result<(), String> {
    faultline::system::etcd::EtcdSystem::locate(None)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn plan(body: &str) -> String {
    format!(
        "name: etcd-e2e
system:
  kind: etcd
  nodes: 3
{body}
log_patterns: ['\"level\":\"panic\"']
"
    )
}

const WORKLOAD: &str = "workload:
  kind: register
  concurrency: 6
  rate: 100
  keys: 3
  ops_per_key: 150
  mix: {read: 4, write: 4, cas: 2}
  op_timeout: 1500ms";

#[test]
fn given_etcd_when_the_leader_is_killed_and_every_member_restarted_should_be_valid() {
    if !prerequisite("etcd", etcd_installed()) {
        return;
    }
    let _one = one_cluster();
    let run = run_text(
        &plan(&format!(
            "seed: 5
time_limit: 8s
{WORKLOAD}
nemesis:
  process:
    script:
      - {{at: 2s, kind: kill, targets: primary, duration: 2s}}
final_phase:
  restart_all: true"
        )),
        &[],
    );
    let results = assert_exit(&run, 0);
    let events = history(&run.run_dir);
    let killed = events
        .iter()
        .find(|e| e["kind"] == "nemesis" && e["f"] == "kill")
        .expect("the leader was killed");
    assert_eq!(killed["value"]["target"], "primary");
    // The killed leader was started again when its fault ended. Whether that start answered before the restart-all
    // killed it again is a race on a loaded machine (a CI run, otherwise valid, counted 6 boots where this asserted
    // 7), so the boots asserted are the ones after the restart-all: every member's.
    let killed_at = events.iter().position(|e| e == killed).expect("found above");
    assert!(
        events[killed_at..]
            .iter()
            .any(|e| e["kind"] == "nemesis" && e["f"] == "start" && e["node"] == killed["node"]),
        "the killed leader was started again"
    );
    after_restart_all(&events, &["n1", "n2", "n3"], "boot-ok");
    assert_eq!(check(&results, "linearizability")["verdict"], "valid");
    assert!(check(&results, "linearizability")["reason"]
        .as_str()
        .unwrap()
        .contains("operations"));
}

/// etcd verifies every WAL record's CRC at boot. A flip that lands in a record's length field instead sends etcd's
/// reader past the written data into the preallocated zeros, which it takes for a torn write and "repairs" by
/// truncating the WAL there (it boots, silently dropping the entries after the flip): a few percent of flips.
/// Such a run is reported and the scenario retried with the next seed.
#[test]
fn given_an_interior_wal_bit_flip_on_one_member_should_record_the_refusal_and_judge_it_legitimate() {
    if !prerequisite("etcd", etcd_installed()) || !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    for seed in 31..37 {
        let run = run_text(
            &plan(&format!(
                "seed: {seed}
time_limit: 6s
disk:
  fault_fs: true
  metadata: journaled
{WORKLOAD}
final_phase:
  restart_all: true
  surgery:
    - {{node: n2, cut: {{op: flip-bits, files: 'member/wal/*.wal', region: interior, bits: 1}}}}
  after_refusal: wipe"
            )),
            &[],
        );
        let results = results(&run.run_dir);
        let events = history(&run.run_dir);
        let surgery = events
            .iter()
            .find(|e| e["f"] == "disk-surgery" && e["node"] == "n2")
            .unwrap_or_else(|| panic!("the surgery is recorded\n{results:#}"));
        assert!(surgery["value"]["surgery"]["file"]
            .as_str()
            .unwrap()
            .contains("member/wal/"));
        let refused: Vec<&Value> = events.iter().filter(|e| e["f"] == "boot-refused").collect();
        let log = std::fs::read_to_string(run.run_dir.join("nodes/n2/node.log")).unwrap();
        if refused.is_empty() && log.contains("repaired WAL") {
            eprintln!("seed {seed}: the flip hit a length field and etcd truncated its WAL; next seed");
            continue;
        }
        if refused.is_empty() {
            // etcd pads records to 8 bytes and its CRCs do not cover the padding: a flip there is harmless.
            eprintln!(
                "seed {seed}: etcd booted over the flipped bit (record padding, not covered by a CRC); next seed"
            );
            continue;
        }
        assert_eq!(refused.len(), 1, "n2 refuses once: {refused:?}\n{results:#}");
        assert_eq!(refused[0]["node"], "n2");
        let line = refused[0]["value"]["line"].as_str().unwrap();
        assert!(line.starts_with("etcd refused to boot"), "{line}");
        let boot = check(&results, "boot");
        assert_eq!(boot["verdict"], "valid", "{boot:#}");
        assert!(boot["reason"]
            .as_str()
            .unwrap()
            .contains("refused to boot after recorded disk surgery"));
        assert!(
            events.iter().any(|e| e["f"] == "wipe" && e["node"] == "n2"),
            "n2 is re-added and wiped"
        );
        assert_eq!(
            run.output.status.code(),
            Some(0),
            "{}\n{results:#}",
            explain(&run.output)
        );
        return;
    }
    panic!("six seeds in a row flipped a bit etcd did not refuse (a length field or padding): not chance; look at the runs");
}

/// etcd 3.4 takes a zeroed 4 KiB block in the interior of its WAL for a torn write: its decoder sees a zero length
/// (the end of the data) or a record with a zeroed sector (a torn write), truncates the WAL there, and boots having
/// dropped every later entry, while its peers still hold them. The durability check compares the applied index the
/// member reported before the restart-all's kill with the commit index its own boot line names, and says how many
/// applied entries it forgot: a named warning by default (etcd does not promise to refuse such damage), invalid when
/// the plan declares `disk: {interior_damage: refuse}`.
#[test]
fn given_a_zeroed_block_in_a_members_wal_interior_should_report_the_applied_entries_it_forgot() {
    if !prerequisite("etcd", etcd_installed()) || !fuse_ready() {
        return;
    }
    let _one = one_cluster();
    for (declared, seed) in [("", 51), ("\n  interior_damage: refuse", 52)] {
        let run = run_text(
            &plan(&format!(
                "seed: {seed}
time_limit: 5s
disk:
  fault_fs: true
  metadata: journaled{declared}
{WORKLOAD}
final_phase:
  restart_all: true
  surgery:
    - {{node: n2, cut: {{op: zero-block, files: 'member/wal/*.wal', region: '4096..8192'}}}}
  after_refusal: wipe"
            )),
            &[],
        );
        let results = results(&run.run_dir);
        let durability = check(&results, "durability");
        let restart = &durability["details"]["nodes"]["n2"]["restarts"][0];
        let forgotten = restart["forgotten"].as_u64().unwrap_or(0);
        assert!(forgotten > 0, "n2 forgot applied entries\n{durability:#}");
        assert_eq!(
            restart["durable"].as_u64().unwrap() - restart["recovered"].as_u64().unwrap(),
            forgotten
        );
        let stdout = String::from_utf8_lossy(&run.output.stdout);
        let said = format!("forgot {forgotten} applied entries");
        if declared.is_empty() {
            assert_eq!(restart["judgement"], "damage-truncated", "{durability:#}");
            assert_eq!(results["verdict"], "valid", "{results:#}");
            assert!(
                durability["warnings"][0].as_str().unwrap().contains(&said),
                "{durability:#}"
            );
            assert!(
                stdout.contains("VALID") && stdout.contains("with a warning: durability: n2 booted after zero-block"),
                "the headline names the warning: {}",
                explain(&run.output)
            );
        } else {
            assert_eq!(restart["judgement"], "booted-on-damage", "{durability:#}");
            assert_eq!(results["verdict"], "invalid", "{results:#}");
            let reason = results["reason"].as_str().unwrap();
            assert!(
                reason.starts_with("durability: n2 booted after zero-block") && reason.contains(&said),
                "{reason}"
            );
            assert!(reason.contains("booted on damage it should have refused"), "{reason}");
            assert!(stdout.contains("INVALID"), "{}", explain(&run.output));
        }
        for node in ["n1", "n3"] {
            let restarts = &durability["details"]["nodes"][node]["restarts"];
            assert_eq!(restarts[0]["judgement"], "ok", "{node} kept everything: {durability:#}");
        }
    }
}

#[test]
fn given_serializable_reads_from_a_member_cut_off_from_the_majority_should_be_caught_as_non_linearizable() {
    if !prerequisite("etcd", etcd_installed()) || !netns_ready() {
        return;
    }
    let _one = one_cluster();
    let repeat: usize = std::env::var("FAULTLINE_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for round in 0..repeat {
        // One key, so n3's stale reads meet the majority's fresh writes; n3 is cut off both ways for 4 s.
        let text = plan(&format!(
            "seed: {}
time_limit: 8s
network:
  backend: netns
workload:
  kind: register
  concurrency: 6
  rate: 100
  keys: 1
  ops_per_key: 5000
  mix: {{read: 5, write: 5}}
  op_timeout: 1500ms
nemesis:
  network:
    script:
      - {{at: 2s, cut: [n1->n3, n3->n1, n2->n3, n3->n2], duration: 4s}}
final_phase:
  restart_all: false",
            40 + round
        ))
        .replace("  nodes: 3\n", "  nodes: 3\n  serializable_reads: true\n");
        let run = run_text(&text, &[]);
        let results = results(&run.run_dir);
        assert_eq!(
            run.output.status.code(),
            Some(1),
            "round {round}: {}",
            explain(&run.output)
        );
        let linearizability = check(&results, "linearizability");
        assert_eq!(
            linearizability["verdict"], "invalid",
            "round {round}: {linearizability:#}"
        );
        assert_eq!(check(&results, "boot")["verdict"], "valid", "only the client is broken");
        eprintln!("round {round}: caught: {}", linearizability["reason"]);
    }
}
