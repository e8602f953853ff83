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
