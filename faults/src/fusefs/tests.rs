//! Operations on a real mount whose kernel request shape matters, beside the code that answers them.
//!
//! Needs root and /dev/fuse. Under `CI=true` their absence fails the test with the reason; elsewhere the test skips
//! with a printed reason (as `faults/tests/fusefs.rs` does).

use super::{fuse_available, FaultFs, FaultFsHandle};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

fn fuse_ready() -> bool {
    match fuse_available() {
        Ok(()) => true,
        Err(reason) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true: the fault filesystem tests must run here, but {reason}")
        }
        Err(reason) => {
            eprintln!("skipping fault filesystem test: {reason}");
            false
        }
    }
}

struct Lab {
    _tmp: tempfile::TempDir,
    backing: PathBuf,
    data: PathBuf,
    tag: String,
    fs: Option<FaultFsHandle>,
}

impl Lab {
    fn new(name: &str) -> Lab {
        let tmp = tempfile::tempdir().expect("temp dir");
        let backing = tmp.path().join("backing");
        let data = tmp.path().join("data");
        fs::create_dir(&backing).expect("backing dir");
        fs::create_dir(&data).expect("mountpoint");
        let tag = format!("unit-{name}-{}", std::process::id());
        let fs = Some(FaultFs::mount(&backing, &data, &tag).expect("mount"));
        Lab {
            _tmp: tmp,
            backing,
            data,
            tag,
            fs,
        }
    }

    fn fs(&self) -> &FaultFsHandle {
        self.fs.as_ref().expect("mounted")
    }

    fn remount(&mut self) {
        self.fs.take().expect("mounted").unmount().expect("unmount");
        self.fs = Some(FaultFs::mount(&self.backing, &self.data, &self.tag).expect("remount"));
    }
}

/// What `checkpoint::write` in the node does up to its rename: create (O_CREAT|O_TRUNC), write, fsync.
fn write_temp_and_fsync(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The node killed after fsyncing `checkpoint.tmp` and before renaming it leaves a synced, non-empty temp file.
/// The next `File::create` of it is, to FUSE without atomic O_TRUNC, an `open` and then a `setattr(size = 0)`
/// that carries no file handle (the kernel drops it for the truncate of an open). That truncate must read the
/// bytes it cuts off for the undo log, so the filesystem must not serve it through a write-only descriptor
/// (EBADF at every restart, on the same file, until someone removes it).
#[test]
fn given_a_synced_temp_file_left_by_a_killed_writer_when_recreated_with_o_trunc_should_truncate_and_write() {
    if !fuse_ready() {
        return;
    }
    let mut lab = Lab::new("otrunc");
    let temp = lab.data.join("checkpoint.tmp");
    let old = vec![7u8; 10_000];
    write_temp_and_fsync(&temp, &old).expect("first checkpoint.tmp");
    // The writer dies here (its handle is released when the kernel closes its files).

    let new = vec![9u8; 5_000];
    write_temp_and_fsync(&temp, &new).expect("recreating checkpoint.tmp over a synced one");
    assert_eq!(fs::read(&temp).expect("read back"), new);
    // And with no handle at all: a plain truncate by path shrinks a synced file too.
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&temp)
        .expect("O_TRUNC open of a synced file");
    assert_eq!(fs::metadata(&temp).expect("stat").len(), 0);

    // After a power loss (every log cleared) and after a remount (a fresh state), the same holds.
    write_temp_and_fsync(&temp, &old).expect("rewriting checkpoint.tmp");
    lab.fs().lose_unsynced();
    write_temp_and_fsync(&temp, &new).expect("recreating checkpoint.tmp after a power loss");
    write_temp_and_fsync(&temp, &old).expect("rewriting checkpoint.tmp");
    lab.remount();
    write_temp_and_fsync(&temp, &new).expect("recreating checkpoint.tmp after a remount");
    assert_eq!(fs::read(&temp).expect("read back"), new);
}

/// A shrink through a path truncate is still undone by a power loss: the undo log saw the bytes it cut off.
#[test]
fn given_a_synced_file_when_truncated_by_path_and_power_is_lost_should_get_its_bytes_back() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("truncate-undo");
    let path = lab.data.join("checkpoint.tmp");
    let old: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    write_temp_and_fsync(&path, &old).expect("synced file");
    File::open(&lab.data).and_then(|d| d.sync_all()).expect("dir fsync");

    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .expect("O_TRUNC open of a synced file")
        .write_all(b"unsynced")
        .expect("unsynced write");
    let record = lab.fs().lose_unsynced();
    assert!(record.warnings.is_empty(), "{:?}", record.warnings);
    assert_eq!(fs::read(&path).expect("read back"), old);
}
