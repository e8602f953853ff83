//! Boot-scan and journal tests that mirror real failure modes of a hash-chained WAL.

use std::fs;
use std::path::Path;

use super::entry::{Entry, RequestIdentity, HEADER_SIZE_BYTES};
use super::head::Head;
use super::journal::{scan_dir, InsertRejected, Journal, JournalError, WAL_FILE_NAME};
use super::scan::RefusalKind;
use crate::checksum::root_checksum;

const CLUSTER: u64 = 77;

/// Builds a chained log of `count` entries (ops 1..=count).
fn chain(count: u64) -> Vec<Entry> {
    let mut parent = root_checksum(CLUSTER);
    (1..=count)
        .map(|op| {
            let entry = Entry::new(
                CLUSTER,
                op,
                0,
                parent,
                RequestIdentity::default(),
                format!("body {op}").into(),
            );
            parent = entry.header.checksum;
            entry
        })
        .collect()
}

fn write_wal(dir: &Path, entries: &[Entry]) -> Vec<u8> {
    let bytes: Vec<u8> = entries.iter().flat_map(|e| e.encode()).collect();
    fs::write(dir.join(WAL_FILE_NAME), &bytes).expect("write test wal");
    bytes
}

fn offset_of(entries: &[Entry], index: usize) -> usize {
    entries[..index].iter().map(Entry::size_bytes).sum()
}

fn refusal(dir: &Path) -> super::scan::BootRefusal {
    match Journal::open(dir, CLUSTER) {
        Err(JournalError::Refused(refusal)) => refusal,
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("expected a refusal, the journal opened"),
    }
}

#[test]
fn given_a_partially_written_last_entry_when_booting_should_truncate_the_torn_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(4);
    let bytes = write_wal(dir.path(), &entries);
    let cut = offset_of(&entries, 3) + HEADER_SIZE_BYTES + 2;
    fs::write(dir.path().join(WAL_FILE_NAME), &bytes[..cut]).expect("tear");
    let (journal, torn) = Journal::open(dir.path(), CLUSTER).expect("boots");
    assert_eq!(
        torn.expect("torn tail reported").offset_bytes,
        offset_of(&entries, 3) as u64
    );
    assert_eq!(
        journal.head(),
        Head {
            op: 3,
            checksum: entries[2].header.checksum
        }
    );
    let len = fs::metadata(dir.path().join(WAL_FILE_NAME)).expect("stat").len();
    assert_eq!(len, offset_of(&entries, 3) as u64);
}

#[test]
fn given_a_corrupt_body_in_the_last_entry_when_booting_should_truncate_the_torn_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(3);
    let mut bytes = write_wal(dir.path(), &entries);
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(dir.path().join(WAL_FILE_NAME), &bytes).expect("corrupt");
    let (journal, torn) = Journal::open(dir.path(), CLUSTER).expect("boots");
    assert!(torn.is_some());
    assert_eq!(journal.head().op, 2);
}

#[test]
fn given_interior_header_corruption_when_booting_should_refuse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(5);
    let mut bytes = write_wal(dir.path(), &entries);
    let at = offset_of(&entries, 1) + 60;
    bytes[at] ^= 0x10;
    fs::write(dir.path().join(WAL_FILE_NAME), &bytes).expect("corrupt");
    let refusal = refusal(dir.path());
    assert_eq!(refusal.kind, RefusalKind::InteriorHeader);
    assert_eq!(refusal.offset_bytes, offset_of(&entries, 1) as u64);
    assert!(refusal.to_string().contains("refusing to boot"));
}

#[test]
fn given_interior_body_corruption_when_booting_should_refuse_naming_op_offset_and_checksums() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(5);
    let mut bytes = write_wal(dir.path(), &entries);
    let at = offset_of(&entries, 2) + HEADER_SIZE_BYTES + 1;
    bytes[at] ^= 0x01;
    fs::write(dir.path().join(WAL_FILE_NAME), &bytes).expect("corrupt");
    let refusal = refusal(dir.path());
    assert_eq!(refusal.kind, RefusalKind::InteriorBody);
    let line = refusal.to_string();
    assert!(line.contains("op 3"), "{line}");
    assert!(line.contains(&format!("offset {}", offset_of(&entries, 2))), "{line}");
    assert!(
        line.contains(&format!("{:032x}", entries[2].header.checksum_body)),
        "{line}"
    );
    assert!(!line.contains('\n'));
}

#[test]
fn given_op_n_plus_1_parented_on_op_n_minus_1_when_booting_should_refuse_with_does_not_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut entries = chain(3);
    let skip_parent = entries[0].header.checksum;
    let forged = Entry::new(
        CLUSTER,
        3,
        0,
        skip_parent,
        RequestIdentity::default(),
        b"forged".to_vec(),
    );
    entries[2] = forged;
    write_wal(dir.path(), &entries);
    let refusal = refusal(dir.path());
    assert_eq!(refusal.kind, RefusalKind::DoesNotChain);
    assert!(refusal.to_string().contains("does not chain"));
    assert_eq!(refusal.expected, entries[1].header.checksum);
    assert_eq!(refusal.actual, skip_parent);
}

#[test]
fn given_out_of_order_entries_that_chain_when_booting_should_accept_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(4);
    let shuffled = vec![
        entries[0].clone(),
        entries[3].clone(),
        entries[1].clone(),
        entries[2].clone(),
    ];
    write_wal(dir.path(), &shuffled);
    let (journal, torn) = Journal::open(dir.path(), CLUSTER).expect("boots");
    assert!(torn.is_none());
    assert_eq!(
        journal.head(),
        Head {
            op: 4,
            checksum: entries[3].header.checksum
        }
    );
}

#[test]
fn given_a_gap_when_booting_should_boot_with_the_head_below_the_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(5);
    write_wal(
        dir.path(),
        &[entries[0].clone(), entries[1].clone(), entries[4].clone()],
    );
    let (journal, _) = Journal::open(dir.path(), CLUSTER).expect("boots");
    assert_eq!(
        journal.head(),
        Head {
            op: 2,
            checksum: entries[1].header.checksum
        }
    );
    assert_eq!(journal.op_max(), 5);
}

#[test]
fn given_a_refusal_when_booting_should_leave_the_file_bytes_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut entries = chain(4);
    entries[3] = Entry::new(CLUSTER, 4, 0, 1234, RequestIdentity::default(), b"x".to_vec());
    let bytes = write_wal(dir.path(), &entries);
    refusal(dir.path());
    assert!(scan_dir(dir.path(), CLUSTER, crate::wal::head::Head { op: 0, checksum: 0 }).is_err());
    assert_eq!(fs::read(dir.path().join(WAL_FILE_NAME)).expect("read"), bytes);
}

#[test]
fn given_a_journal_when_repair_backfills_below_the_head_should_keep_head_op_and_checksum() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(6);
    write_wal(dir.path(), &[entries[0].clone(), entries[2].clone()]);
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("boots");
    for entry in &entries[3..6] {
        journal
            .insert(entry.clone())
            .expect("io")
            .expect("chains to its stored neighbours");
    }
    assert_eq!(journal.head().op, 1, "op 2 is still missing");
    journal.insert(entries[1].clone()).expect("io").expect("closes the gap");
    let head = journal.head();
    assert_eq!(
        head,
        Head {
            op: 6,
            checksum: entries[5].header.checksum
        }
    );
    assert_eq!(
        journal.insert(entries[2].clone()).expect("io"),
        Err(InsertRejected::Duplicate)
    );
    assert_eq!(journal.head(), head);
}

#[test]
fn given_a_gap_when_repair_closes_it_should_adopt_the_new_head_checksum() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(5);
    write_wal(
        dir.path(),
        &[
            entries[0].clone(),
            entries[1].clone(),
            entries[3].clone(),
            entries[4].clone(),
        ],
    );
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("boots");
    assert_eq!(journal.head().op, 2);
    let head = journal.insert(entries[2].clone()).expect("io").expect("inserted");
    assert_eq!(
        head,
        Head {
            op: 5,
            checksum: entries[4].header.checksum
        }
    );
    journal.sync().expect("sync");
    drop(journal);
    let (reopened, torn) = Journal::open(dir.path(), CLUSTER).expect("reboots");
    assert!(torn.is_none());
    assert_eq!(reopened.head(), head);
}

#[test]
fn given_an_entry_that_does_not_chain_to_its_stored_neighbour_when_inserting_should_reject_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(3);
    write_wal(dir.path(), &entries[..2]);
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("boots");
    let stray = Entry::new(
        CLUSTER,
        3,
        1,
        entries[0].header.checksum,
        RequestIdentity::default(),
        vec![],
    );
    assert_eq!(journal.insert(stray).expect("io"), Err(InsertRejected::DoesNotChain));
}

#[test]
fn given_an_uncommitted_suffix_when_truncating_should_rewrite_the_file_and_move_the_head_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(5);
    write_wal(dir.path(), &entries);
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("boots");
    journal.truncate_after(3).expect("truncate");
    assert_eq!(
        journal.head(),
        Head {
            op: 3,
            checksum: entries[2].header.checksum
        }
    );
    let other = Entry::new(
        CLUSTER,
        4,
        1,
        entries[2].header.checksum,
        RequestIdentity::default(),
        b"v1".to_vec(),
    );
    journal.insert(other.clone()).expect("io").expect("chains");
    journal.sync().expect("sync");
    drop(journal);
    let (reopened, _) = Journal::open(dir.path(), CLUSTER).expect("reboots");
    assert_eq!(
        reopened.head(),
        Head {
            op: 4,
            checksum: other.header.checksum
        }
    );
}

fn base_at(entries: &[Entry], op: u64) -> Head {
    Head {
        op,
        checksum: entries[op as usize - 1].header.checksum,
    }
}

#[test]
fn given_a_compacted_journal_when_reopened_above_its_base_should_boot_with_the_same_head_and_no_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(10);
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("open");
    for entry in &entries {
        journal.insert(entry.clone()).expect("io").expect("chains");
    }
    journal.sync().expect("sync");
    let head = journal.head();
    journal.compact(base_at(&entries, 6)).expect("compact");
    assert_eq!((journal.base().op, journal.head(), journal.len()), (6, head, 4));
    assert_eq!(
        journal.checksum_of(6),
        Some(entries[5].header.checksum),
        "the base is op 7's parent"
    );
    assert_eq!(journal.checksum_of(5), None, "nothing below the base");
    assert_eq!(journal.check_insert(&entries[2]), Err(InsertRejected::Compacted));
    let size = fs::metadata(dir.path().join(WAL_FILE_NAME)).expect("stat").len();
    let kept: usize = entries[6..].iter().map(Entry::size_bytes).sum();
    assert_eq!(size, kept as u64, "the file holds only the entries above the base");
    drop(journal);
    let (reopened, torn) =
        Journal::open_with_mutants(dir.path(), CLUSTER, base_at(&entries, 6), Default::default()).expect("boots");
    assert!(torn.is_none());
    assert_eq!((reopened.base().op, reopened.head(), reopened.len()), (6, head, 4));
}

#[test]
fn given_a_compaction_a_crash_interrupted_when_booting_above_the_new_base_should_ignore_the_stale_prefix() {
    // The superblock already names base 6 but the WAL rewrite never happened: the file still starts at op 1.
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(10);
    write_wal(dir.path(), &entries);
    let (journal, _) =
        Journal::open_with_mutants(dir.path(), CLUSTER, base_at(&entries, 6), Default::default()).expect("boots");
    assert_eq!((journal.base().op, journal.head().op, journal.len()), (6, 10, 4));
    assert!(journal.entry(6).is_none() && journal.entry(7).is_some());
}

#[test]
fn given_a_wal_whose_first_entry_above_the_base_does_not_chain_to_it_when_booting_should_refuse_naming_the_checkpoint()
{
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(10);
    write_wal(dir.path(), &entries[6..]);
    let wrong_base = Head {
        op: 6,
        checksum: 0xdead,
    };
    match Journal::open_with_mutants(dir.path(), CLUSTER, wrong_base, Default::default()) {
        Err(JournalError::Refused(refusal)) => {
            assert_eq!(refusal.kind, RefusalKind::DoesNotChain);
            assert!(
                refusal
                    .to_string()
                    .contains("op 7 does not chain to the checkpoint's op 6"),
                "{refusal}"
            );
        }
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("a log that does not chain to its checkpoint booted"),
    }
}

#[test]
fn given_a_received_checkpoint_when_installing_it_should_keep_a_chaining_suffix_and_drop_a_divergent_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entries = chain(10);
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("open");
    for entry in &entries[..4] {
        journal.insert(entry.clone()).expect("io").expect("chains");
    }
    // Op 8 (above a gap) chains to the committed op 7: it survives the install of a checkpoint at op 6.
    journal
        .insert(entries[7].clone())
        .expect("io")
        .expect("fits above a gap");
    assert_eq!(journal.install_base(base_at(&entries, 6)).expect("install"), 0);
    assert_eq!((journal.base().op, journal.head().op, journal.len()), (6, 6, 1));
    journal
        .insert(entries[6].clone())
        .expect("io")
        .expect("op 7 chains to the base");
    assert_eq!(journal.head().op, 8, "the gap closed");

    // A divergent op 7 (another view's, never committed) is dropped with everything above it.
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut journal, _) = Journal::open(dir.path(), CLUSTER).expect("open");
    let other = chain(10);
    for entry in &entries[..6] {
        journal.insert(entry.clone()).expect("io").expect("chains");
    }
    let divergent = Entry::new(
        CLUSTER,
        7,
        1,
        entries[5].header.checksum,
        RequestIdentity::default(),
        b"x".to_vec(),
    );
    journal.insert(divergent).expect("io").expect("chains locally");
    let committed_base = Head {
        op: 6,
        checksum: other[5].header.checksum ^ 1,
    };
    assert_eq!(journal.install_base(committed_base).expect("install"), 1);
    assert_eq!((journal.head(), journal.len()), (committed_base, 0));
}
