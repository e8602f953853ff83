//! The fault filesystem on a real FUSE mount: what a power loss drops and keeps, and the injected I/O faults.
//!
//! Needs root and /dev/fuse. Under `CI=true` their absence fails the test with the reason; elsewhere the tests skip
//! with a printed reason.

#[path = "support/fuse_lab.rs"]
mod fuse_lab;

use faultline_faults::fusefs::{self, FaultFsOptions, FsFaults, MetadataDurability, PowerLossSpec};
use fuse_lab::{fuse_ready, Lab};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn sync_dir(dir: &Path) {
    File::open(dir).unwrap().sync_all().unwrap();
}

fn write_synced(path: &Path, bytes: &[u8]) {
    let mut file = File::create(path).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
    sync_dir(path.parent().unwrap());
}

fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

#[test]
fn given_written_but_unsynced_data_when_power_is_lost_should_be_gone_from_mount_backing_and_remount() {
    if !fuse_ready() {
        return;
    }
    let mut lab = Lab::new("lost");
    let wal = lab.path("wal");
    write_synced(&wal, b"durable|");
    append(&wal, b"unsynced tail");
    // An overwrite of synced bytes must be rolled back too (the undo log).
    OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .write_all_at(b"XX", 0)
        .unwrap();
    assert_eq!(
        fs::read(&wal).unwrap(),
        b"XXrable|unsynced tail",
        "reads see the unsynced state"
    );

    let record = lab.fs().lose_unsynced();
    assert_eq!(fs::read(&wal).unwrap(), b"durable|", "through the mount");
    assert_eq!(record.files.len(), 1);
    assert_eq!(record.files[0].path, "wal");
    assert_eq!(
        (record.files[0].size_before_bytes, record.files[0].size_after_bytes),
        (21, 8)
    );
    assert_eq!(record.files[0].restored_bytes, 8);

    lab.unmount();
    assert_eq!(
        fs::read(lab.backing.join("wal")).unwrap(),
        b"durable|",
        "in the backing dir"
    );
    assert!(
        !lab.backing.join(fusefs::HIDDEN_DIR_NAME).exists(),
        "no private dir left behind"
    );
    lab.remount();
    assert_eq!(fs::read(&wal).unwrap(), b"durable|", "after a remount");
}

#[test]
fn given_synced_data_and_entries_when_power_is_lost_should_survive() {
    if !fuse_ready() {
        return;
    }
    let mut lab = Lab::new("synced");
    fs::create_dir(lab.path("member")).unwrap();
    sync_dir(&lab.data);
    write_synced(&lab.path("member/wal"), &vec![7u8; 100_000]);
    let mut file = OpenOptions::new().append(true).open(lab.path("member/wal")).unwrap();
    file.write_all(b"more").unwrap();
    file.sync_data().unwrap();
    drop(file);

    let record = lab.fs().lose_unsynced();
    assert!(
        record.files.is_empty() && record.entries_dropped.is_empty(),
        "{record:?}"
    );
    let mut expected = vec![7u8; 100_000];
    expected.extend_from_slice(b"more");
    assert_eq!(fs::read(lab.path("member/wal")).unwrap(), expected);
    lab.unmount();
    assert_eq!(fs::read(lab.backing.join("member/wal")).unwrap(), expected);
}

#[test]
fn given_a_created_file_whose_directory_was_not_synced_when_power_is_lost_should_disappear() {
    if !fuse_ready() {
        return;
    }
    let mut lab = Lab::new("create");
    let mut file = File::create(lab.path("new.wal")).unwrap();
    file.write_all(b"fsynced content, but no directory fsync").unwrap();
    file.sync_all().unwrap();
    drop(file);
    fs::create_dir(lab.path("newdir")).unwrap();

    let record = lab.fs().lose_unsynced();
    assert!(!lab.path("new.wal").exists());
    assert!(!lab.path("newdir").exists());
    let mut dropped = record.entries_dropped.clone();
    dropped.sort();
    assert_eq!(dropped, ["new.wal", "newdir"]);
    lab.unmount();
    assert!(!lab.backing.join("new.wal").exists());
    lab.remount();
    assert_eq!(fs::read_dir(&lab.data).unwrap().count(), 0);
}

/// ext4's journal: an fsync of any file commits every directory change made before it (etcd never fsyncs the
/// parent of the `member/` dir it creates, and relies on this).
#[test]
fn given_journaled_metadata_when_any_file_is_fsynced_should_keep_every_earlier_directory_change() {
    if !fuse_ready() {
        return;
    }
    let options = FaultFsOptions {
        metadata: MetadataDurability::Journaled,
        ..Default::default()
    };
    let lab = Lab::with("journaled", options);
    fs::create_dir_all(lab.path("member/wal")).unwrap();
    let mut file = File::create(lab.path("member/wal/0.wal")).unwrap();
    file.write_all(b"record").unwrap();
    file.sync_all().unwrap();
    fs::create_dir(lab.path("after-the-commit")).unwrap();

    let record = lab.fs().lose_unsynced();
    assert_eq!(fs::read(lab.path("member/wal/0.wal")).unwrap(), b"record");
    assert!(
        !lab.path("after-the-commit").exists(),
        "a change after the last fsync is still lost"
    );
    assert_eq!(record.entries_dropped, ["after-the-commit"]);
}

/// ext4's journal carries truncations too: ZooKeeper truncates a log file at a follower's TRUNC without an fsync of
/// that file and goes on in a new one, whose fsync commits the truncation.
#[test]
fn given_journaled_metadata_when_another_file_is_fsynced_after_a_truncation_should_keep_the_truncation() {
    if !fuse_ready() {
        return;
    }
    let options = FaultFsOptions {
        metadata: MetadataDurability::Journaled,
        ..Default::default()
    };
    let lab = Lab::with("journaled-trunc", options);
    let original: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
    write_synced(&lab.path("log.100"), &original);
    OpenOptions::new()
        .write(true)
        .open(lab.path("log.100"))
        .unwrap()
        .set_len(1_000)
        .unwrap();
    write_synced(&lab.path("log.200"), b"the next log");

    let record = lab.fs().lose_unsynced();
    assert_eq!(fs::read(lab.path("log.100")).unwrap(), &original[..1_000], "{record:?}");
    assert_eq!(fs::read(lab.path("log.200")).unwrap(), b"the next log");
}

/// The kernel's flusher: data and entries older than the write-back ages survive a power loss without any fsync.
#[test]
fn given_writeback_ages_when_unsynced_changes_are_older_should_survive_a_power_loss() {
    if !fuse_ready() {
        return;
    }
    let age = |ms| fusefs::WritebackAge::After(faultline_faults::units::Millis(ms));
    let options = FaultFsOptions {
        writeback: fusefs::Writeback {
            data_after: age(200),
            metadata_after: age(100),
        },
        ..Default::default()
    };
    let lab = Lab::with("writeback", options);
    fs::create_dir(lab.path("base")).unwrap();
    fs::write(lab.path("base/16385"), b"a relation file, never fsynced").unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let mut late = File::create(lab.path("base/late")).unwrap();
    late.write_all(b"too young").unwrap();

    let record = lab.fs().lose_unsynced();
    assert_eq!(
        fs::read(lab.path("base/16385")).unwrap(),
        b"a relation file, never fsynced",
        "{record:?}"
    );
    assert!(!lab.path("base/late").exists(), "{record:?}");
}

#[test]
fn given_a_file_in_a_synced_new_directory_when_only_the_file_was_synced_should_lose_the_file_keep_the_dir() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("newdir");
    fs::create_dir(lab.path("snap")).unwrap();
    sync_dir(&lab.data);
    let mut file = File::create(lab.path("snap/1.snap")).unwrap();
    file.write_all(b"snapshot").unwrap();
    file.sync_all().unwrap();
    drop(file);

    lab.fs().lose_unsynced();
    assert!(lab.path("snap").is_dir());
    assert!(!lab.path("snap/1.snap").exists());
}

#[test]
fn given_a_rename_and_an_unlink_without_directory_sync_when_power_is_lost_should_revert_both() {
    if !fuse_ready() {
        return;
    }
    let mut lab = Lab::new("rename");
    write_synced(&lab.path("wal"), b"old wal");
    write_synced(&lab.path("superblock"), b"sb v1");
    write_synced(&lab.path("doomed"), b"still here");
    // The classic atomic replace, minus the directory fsync.
    write_synced(&lab.path("wal.tmp"), b"new wal");
    fs::rename(lab.path("wal.tmp"), lab.path("wal")).unwrap();
    fs::rename(lab.path("superblock"), lab.path("superblock.moved")).unwrap();
    fs::remove_file(lab.path("doomed")).unwrap();
    assert_eq!(fs::read(lab.path("wal")).unwrap(), b"new wal");

    let record = lab.fs().lose_unsynced();
    assert_eq!(fs::read(lab.path("wal")).unwrap(), b"old wal");
    assert_eq!(
        fs::read(lab.path("wal.tmp")).unwrap(),
        b"new wal",
        "its own entry was synced"
    );
    assert_eq!(fs::read(lab.path("superblock")).unwrap(), b"sb v1");
    assert!(!lab.path("superblock.moved").exists());
    assert_eq!(fs::read(lab.path("doomed")).unwrap(), b"still here");
    let mut restored = record.entries_restored.clone();
    restored.sort();
    assert_eq!(restored, ["doomed", "superblock", "wal", "wal.tmp"]);
    lab.unmount();
    let mut names: Vec<String> = fs::read_dir(&lab.backing)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["doomed", "superblock", "wal", "wal.tmp"]);
}

#[test]
fn given_a_rename_with_directory_sync_when_power_is_lost_should_stay_renamed() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("renamesync");
    write_synced(&lab.path("wal"), b"old wal");
    write_synced(&lab.path("wal.tmp"), b"new wal");
    fs::rename(lab.path("wal.tmp"), lab.path("wal")).unwrap();
    sync_dir(&lab.data);
    lab.fs().lose_unsynced();
    assert_eq!(fs::read(lab.path("wal")).unwrap(), b"new wal");
    assert!(!lab.path("wal.tmp").exists());
}

#[test]
fn given_a_torn_write_power_loss_should_keep_a_proper_prefix_of_the_newest_unsynced_write_only() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("torn");
    let wal = lab.path("wal");
    write_synced(&wal, &[1u8; 100]);
    append(&wal, &[2u8; 500]);
    append(&wal, &[3u8; 1000]);

    let record = lab.fs().power_loss(&PowerLossSpec { torn_write: true });
    let torn = record.torn_write.expect("a torn write");
    assert_eq!((torn.path.as_str(), torn.offset, torn.write_bytes), ("wal", 600, 1000));
    assert!((1..1000).contains(&torn.kept_bytes));
    let bytes = fs::read(&wal).unwrap();
    // The older unsynced append is lost, the newest is torn: bytes 100..600 come back as a hole of zeros.
    assert_eq!(bytes.len() as u64, 600 + torn.kept_bytes);
    assert!(bytes[..100].iter().all(|&b| b == 1));
    assert!(bytes[100..600].iter().all(|&b| b == 0));
    assert!(bytes[600..].iter().all(|&b| b == 3));
}

#[test]
fn given_eio_rules_when_the_writer_writes_and_fsyncs_should_see_eio() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("eio");
    write_synced(&lab.path("wal"), b"x");
    write_synced(&lab.path("other"), b"x");
    let faults: FsFaults = serde_saphyr::from_str(
        "eio: [{ops: [write], files: 'wal*', nth: 2}, {ops: [fsync], files: 'other', probability: 1.0}]",
    )
    .unwrap();
    lab.fs().set_faults(&faults).unwrap();

    let mut wal = OpenOptions::new().append(true).open(lab.path("wal")).unwrap();
    wal.write_all(b"a").unwrap();
    let err = wal.write_all(b"b").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    wal.write_all(b"c").unwrap();
    wal.sync_all().unwrap();

    let other = OpenOptions::new().append(true).open(lab.path("other")).unwrap();
    let err = other.sync_all().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert_eq!(lab.fs().stats().injected.eio, 2);

    lab.fs().clear_faults();
    other.sync_all().unwrap();
    assert_eq!(fs::read(lab.path("wal")).unwrap(), b"xac");
}

#[test]
fn given_a_quota_when_writes_pass_it_should_fail_with_enospc_and_write_nothing() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("enospc");
    write_synced(&lab.path("big"), &[0u8; 10_000]);
    let faults: FsFaults = serde_saphyr::from_str("enospc: {quota_bytes: 18000}").unwrap();
    lab.fs().set_faults(&faults).unwrap();

    let mut wal = File::create(lab.path("wal")).unwrap();
    wal.write_all(&[1u8; 6000]).unwrap();
    let err = wal.write_all(&[2u8; 6000]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
    assert_eq!(fs::metadata(lab.path("wal")).unwrap().len(), 6000);
    // Overwriting in place needs no new space.
    wal.write_all_at(&[3u8; 6000], 0).unwrap();
    assert_eq!(lab.fs().stats().injected.enospc, 1);
    // Freeing space makes room again.
    fs::remove_file(lab.path("big")).unwrap();
    wal.write_all(&[2u8; 6000]).unwrap();
}

#[test]
fn given_a_stall_rule_when_fsyncing_should_delay_it() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("stall");
    write_synced(&lab.path("wal"), b"x");
    // A stall far above what a read takes even on a busy machine, so "delayed" and "not delayed" cannot overlap.
    let faults: FsFaults = serde_saphyr::from_str("stall: [{ops: [fsync], files: 'wal', delay: 1500ms}]").unwrap();
    lab.fs().set_faults(&faults).unwrap();
    let file = OpenOptions::new().append(true).open(lab.path("wal")).unwrap();
    let started = Instant::now();
    file.sync_all().unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    fs::read(lab.path("wal")).unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "reads are not stalled: {:?}",
        started.elapsed()
    );
}

#[test]
fn given_a_mount_when_dropped_or_swept_should_leave_no_mount_behind() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("sweep");
    let listed = fusefs::faultline_mounts().unwrap();
    let ours = listed
        .iter()
        .find(|m| m.run_tag == lab.tag)
        .expect("listed in mountinfo");
    assert_eq!(ours.mountpoint, lab.data.canonicalize().unwrap());
    // A sweep that thinks other runs dead leaves a live one alone. (A plain `sweep(&[live])` would also take the
    // mounts of the tests running beside this one.)
    let swept = fusefs::sweep_where(|tag| tag == "no-such-run").unwrap();
    assert!(swept.is_empty());
    assert!(fusefs::faultline_mounts().unwrap().iter().any(|m| m.run_tag == lab.tag));

    let tag = lab.tag.clone();
    drop(lab);
    assert!(!fusefs::faultline_mounts().unwrap().iter().any(|m| m.run_tag == tag));
}

#[test]
fn given_a_dead_runs_mount_when_swept_should_be_lazily_unmounted() {
    if !fuse_ready() {
        return;
    }
    let mut lab = Lab::new("deadrun");
    // A run that died holding its mount: the handle is never dropped.
    std::mem::forget(lab.fs.take());
    // Only this test's run is dead: the tests running beside it keep their mounts.
    let swept = fusefs::sweep_where(|tag| tag == lab.tag).unwrap();
    assert!(
        swept.iter().any(|s| s.mount.run_tag == lab.tag && s.error.is_none()),
        "{swept:?}"
    );
    assert!(!fusefs::faultline_mounts().unwrap().iter().any(|m| m.run_tag == lab.tag));
}
