//! What the acknowledged mark costs a group commit (nodes/README.md, "A WAL shorter than what it acknowledged").
//!
//! Before an ack leaves, a replica appends the batch to its WAL and fsyncs it; since the protocol-aware recovery
//! rule it also writes one superblock copy with the new mark and fsyncs that. This measures both on the same disk in
//! the same run, in interleaved rounds so drift hits both alike: a group commit of one entry with the WAL fsync only
//! (the baseline) and with the mark write as well, and prints the ratio. `TMPDIR` picks the disk (default: the
//! temp dir). Run with `cargo bench -p faultline-node --bench acked_mark`.

use std::time::{Duration, Instant};

use faultline_node::checkpoint::CheckpointRef;
use faultline_node::superblock::{Superblock, VsrState};
use faultline_node::wal::entry::{Entry, RequestIdentity};
use faultline_node::wal::head::Head;
use faultline_node::wal::journal::Journal;

const CLUSTER: u64 = 7;
const ROUNDS: usize = 6;
const COMMITS_PER_ROUND: usize = 300;
const BODY_BYTES: usize = 64;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let superblock = Superblock {
        cluster_id: CLUSTER,
        replica: 0,
        replica_count: 3,
        members: faultline_node::config::Members::first(3),
        recovering: false,
        state: VsrState::default(),
        checkpoint: CheckpointRef::default(),
        wal_base: Head { op: 0, checksum: 0 },
        acked: 0,
        sequence: 0,
    };
    Superblock::format(dir.path(), superblock, false).expect("format");
    let mut superblock = Superblock::open(dir.path()).expect("open superblock");
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("open journal");
    let commit = |journal: &mut Journal, superblock: &mut Superblock, mark: bool| {
        let head = journal.head();
        let entry = Entry::new(
            CLUSTER,
            head.op + 1,
            0,
            head.checksum,
            RequestIdentity::default(),
            vec![b'v'; BODY_BYTES],
        );
        let started = Instant::now();
        journal.insert(entry).expect("write").expect("chains");
        journal.sync().expect("fsync");
        if mark {
            superblock.store_acked(dir.path(), journal.head().op).expect("mark");
        }
        started.elapsed()
    };
    let (mut without, mut with) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        // Alternate which variant goes first, so neither always runs on a warmer cache.
        for mark in if round % 2 == 0 { [false, true] } else { [true, false] } {
            let total: Duration = (0..COMMITS_PER_ROUND)
                .map(|_| commit(&mut journal, &mut superblock, mark))
                .sum();
            if mark {
                with += total;
            } else {
                without += total;
            }
        }
    }
    let commits = (ROUNDS * COMMITS_PER_ROUND) as f64;
    let per = |total: Duration| total.as_secs_f64() * 1e6 / commits;
    println!(
        "group commit of one {BODY_BYTES}-byte entry in {}",
        dir.path().display()
    );
    println!("  wal fsync only (baseline):      {:8.1} us", per(without));
    println!("  wal fsync + acknowledged mark:  {:8.1} us", per(with));
    println!("  ratio: {:.2}x the baseline", per(with) / per(without));
}
