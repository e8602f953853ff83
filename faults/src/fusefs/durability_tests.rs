//! The durability model on a plain backing dir, without a mount: what a power loss keeps under write-back ages and
//! journal commits. The clock is moved by hand, so no test waits for an age to pass.

use super::*;
use crate::fusefs::writeback::WritebackAge;
use crate::units::Millis;

struct Disk {
    _tmp: tempfile::TempDir,
    state: State,
}

impl Disk {
    fn new(writeback: Writeback) -> Disk {
        let tmp = tempfile::tempdir().expect("temp dir");
        let state = State::new(tmp.path().to_path_buf(), writeback).expect("state");
        Disk { _tmp: tmp, state }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.state.root().join(name)
    }

    /// Creates `name` in the root as the filesystem would (a logged directory change), returning its inode and file.
    fn create(&mut self, name: &str) -> (u64, File) {
        self.state.log_dir(ROOT_INO).expect("log root");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.path(name))
            .expect("create");
        let ino = self.state.intern(Path::new(name), &file.metadata().expect("stat"));
        self.state.created_file(ino);
        (ino, file)
    }

    /// A file that is fully durable: `bytes`, synced, its entry synced.
    fn durable(&mut self, name: &str, bytes: &[u8]) -> (u64, File) {
        let (ino, file) = self.create(name);
        self.state.write(ino, &file, 0, bytes).expect("write");
        self.state.sync_file(ino);
        self.state.sync_dir(ROOT_INO);
        (ino, file)
    }

    fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path(name)).ok()
    }
}

fn ages(data_s: u64, metadata_s: u64) -> Writeback {
    Writeback {
        data_after: WritebackAge::After(Millis(data_s * 1000)),
        metadata_after: WritebackAge::After(Millis(metadata_s * 1000)),
    }
}

#[test]
fn given_writeback_ages_when_power_is_lost_should_keep_changes_older_than_them_and_lose_newer_ones() {
    let mut disk = Disk::new(ages(30, 5));
    let (old, old_file) = disk.create("set-up.conf");
    disk.state
        .write(old, &old_file, 0, b"written at set-up")
        .expect("write");
    disk.state.clock.advance(31_000);
    let (new, new_file) = disk.create("fresh.log");
    disk.state
        .write(new, &new_file, 0, b"written a moment ago")
        .expect("write");

    let record = disk.state.power_loss(None);
    assert_eq!(
        disk.read("set-up.conf").as_deref(),
        Some(&b"written at set-up"[..]),
        "{record:?}"
    );
    assert_eq!(
        disk.read("fresh.log"),
        None,
        "a fresh entry and its data are lost: {record:?}"
    );
    assert_eq!(record.entries_dropped, ["fresh.log"]);
}

#[test]
fn given_no_writeback_when_power_is_lost_should_lose_every_unsynced_change_however_old() {
    let mut disk = Disk::new(Writeback::NEVER);
    let (old, old_file) = disk.create("set-up.conf");
    disk.state
        .write(old, &old_file, 0, b"written at set-up")
        .expect("write");
    disk.state.clock.advance(3_600_000);

    let record = disk.state.power_loss(None);
    assert_eq!(disk.read("set-up.conf"), None, "{record:?}");
}

#[test]
fn given_a_file_written_again_after_its_writeback_when_power_is_lost_should_lose_only_the_later_writes() {
    let mut disk = Disk::new(ages(30, 5));
    let (ino, file) = disk.durable("wal", b"");
    disk.state.write(ino, &file, 0, b"first").expect("write");
    disk.state.clock.advance(30_000);
    disk.state.write(ino, &file, 5, b"+second").expect("write");
    disk.state.clock.advance(29_000);

    let record = disk.state.power_loss(None);
    assert_eq!(disk.read("wal").as_deref(), Some(&b"first"[..]), "{record:?}");
}

#[test]
fn given_a_truncation_when_the_journal_commits_should_keep_the_cut_and_lose_later_writes() {
    let mut disk = Disk::new(Writeback::NEVER);
    let original: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let (ino, file) = disk.durable("log.1", &original);
    disk.state.truncate(ino, &file, 100).expect("truncate");
    disk.state.commit_metadata(); // an fsync of another file on a journaled filesystem
    disk.state
        .write(ino, &file, 100, &[9u8; 500])
        .expect("write past the cut");
    disk.state
        .write(ino, &file, 0, &[7u8; 50])
        .expect("overwrite below the cut");

    let record = disk.state.power_loss(None);
    assert_eq!(disk.read("log.1").as_deref(), Some(&original[..100]), "{record:?}");
}

#[test]
fn given_an_uncommitted_truncation_when_power_is_lost_should_bring_the_bytes_back() {
    let mut disk = Disk::new(Writeback::NEVER);
    let original = vec![3u8; 9_000];
    let (ino, file) = disk.durable("log.1", &original);
    disk.state.truncate(ino, &file, 10).expect("truncate");

    disk.state.power_loss(None);
    assert_eq!(disk.read("log.1").as_deref(), Some(&original[..]));
}

#[test]
fn given_a_shrink_then_a_growth_when_committed_should_keep_zeros_past_the_shrink() {
    let mut disk = Disk::new(Writeback::NEVER);
    let (ino, file) = disk.durable("seg", &[5u8; 6_000]);
    disk.state.truncate(ino, &file, 1_000).expect("shrink");
    disk.state
        .write(ino, &file, 1_000, &[8u8; 2_000])
        .expect("unsynced write");
    disk.state.truncate(ino, &file, 8_192).expect("grow");
    disk.state.commit_metadata();

    disk.state.power_loss(None);
    let mut expected = vec![5u8; 1_000];
    expected.resize(8_192, 0);
    assert_eq!(disk.read("seg"), Some(expected));
}

#[test]
fn given_a_metadata_age_when_a_directory_change_is_older_should_keep_it_without_an_fsync() {
    let mut disk = Disk::new(ages(30, 5));
    let (ino, file) = disk.create("made-early");
    disk.state.write(ino, &file, 0, b"x").expect("write");
    disk.state.clock.advance(6_000);
    disk.create("made-late");

    let record = disk.state.power_loss(None);
    assert_eq!(
        disk.read("made-early").as_deref(),
        Some(&b""[..]),
        "the entry is committed by the journal, its data not yet written back: {record:?}"
    );
    assert!(!disk.path("made-late").exists(), "{record:?}");
    assert_eq!(record.entries_dropped, ["made-late"]);
}

#[test]
fn given_a_metadata_age_when_a_truncation_is_older_should_commit_it_at_the_power_loss() {
    let mut disk = Disk::new(Writeback {
        data_after: WritebackAge::Never,
        metadata_after: WritebackAge::After(Millis(5_000)),
    });
    let (ino, file) = disk.durable("log.1", &[1u8; 5_000]);
    disk.state.truncate(ino, &file, 64).expect("truncate");
    disk.state.clock.advance(5_000);

    disk.state.power_loss(None);
    assert_eq!(disk.read("log.1"), Some(vec![1u8; 64]));
}

/// A write through an O_SYNC/O_DSYNC descriptor is durable when it returns: a log appended only that way loses
/// nothing, an overwrite of synced bytes stays, and the unsynced writes made beside it through another descriptor
/// are still lost (the kernel syncs the written range, not the file).
#[test]
fn given_synced_writes_when_power_is_lost_should_keep_them_and_lose_only_the_plain_writes_beside_them() {
    let mut disk = Disk::new(Writeback::NEVER);
    let (ino, file) = disk.create("xlog");
    disk.state.sync_dir(ROOT_INO);
    let mut expected = Vec::new();
    for record in 0..40u8 {
        let bytes = vec![record; 1000];
        disk.state
            .write_synced(ino, &file, expected.len() as u64, &bytes)
            .expect("synced append");
        expected.extend_from_slice(&bytes);
    }
    assert!(
        disk.state.file_logs.is_empty(),
        "a log written only synced has nothing to undo"
    );
    // Beside it: a plain overwrite of the start, then a synced overwrite inside it and a plain append.
    disk.state.write(ino, &file, 0, &[0xAA; 6000]).expect("plain overwrite");
    disk.state
        .write_synced(ino, &file, 5000, &[0xBB; 100])
        .expect("synced overwrite");
    let end = expected.len() as u64;
    disk.state.write(ino, &file, end, b"plain tail").expect("plain append");
    expected[5000..5100].copy_from_slice(&[0xBB; 100]);

    let record = disk.state.power_loss(None);
    assert_eq!(disk.read("xlog").expect("xlog"), expected, "{record:?}");
}

/// A synced write past a plain, unsynced one leaves a gap the disk never got: it reads as zeros, the write as
/// written, and the size reaches the write's end.
#[test]
fn given_a_synced_write_past_an_unsynced_gap_when_power_is_lost_should_keep_the_write_and_zero_the_gap() {
    let mut disk = Disk::new(Writeback::NEVER);
    let (ino, file) = disk.durable("data", &[1u8; 5000]);
    disk.state.write(ino, &file, 5000, &[2u8; 7000]).expect("plain append");
    disk.state
        .write_synced(ino, &file, 12_000, &[3u8; 3000])
        .expect("synced write past it");
    disk.state
        .write(ino, &file, 15_000, &[4u8; 10])
        .expect("plain append after it");

    let record = disk.state.power_loss(None);
    let mut expected = vec![1u8; 5000];
    expected.extend_from_slice(&[0u8; 7000]);
    expected.extend_from_slice(&[3u8; 3000]);
    assert_eq!(disk.read("data").expect("data"), expected, "{record:?}");
}

/// A truncation before a synced write is durable with it: O_SYNC's metadata includes the size that reaches the data.
#[test]
fn given_a_truncation_then_a_synced_write_when_power_is_lost_should_keep_the_truncation_and_the_write() {
    let mut disk = Disk::new(Writeback::NEVER);
    let (ino, file) = disk.durable("data", &[1u8; 9000]);
    disk.state.truncate(ino, &file, 0).expect("truncate");
    disk.state.write_synced(ino, &file, 0, b"fresh").expect("synced write");

    disk.state.power_loss(None);
    assert_eq!(disk.read("data").as_deref(), Some(&b"fresh"[..]));
}
