//! Operations on a real mount whose kernel request shape matters, beside the code that answers them.
//!
//! Needs root and /dev/fuse. Under `CI=true` their absence fails the test with the reason; elsewhere the test skips
//! with a printed reason (as `faults/tests/fusefs.rs` does).

use super::{fuse_available, FaultFs, FaultFsHandle, FaultFsOptions};
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
        Lab::with_options(name, FaultFsOptions::default())
    }

    fn with_options(name: &str, options: FaultFsOptions) -> Lab {
        let tmp = tempfile::tempdir().expect("temp dir");
        // Other users may enter the temp dir (`mktemp -d` would make it 0700), as they may a store folder.
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
        let backing = tmp.path().join("backing");
        let data = tmp.path().join("data");
        fs::create_dir(&backing).expect("backing dir");
        fs::create_dir(&data).expect("mountpoint");
        let tag = format!("unit-{name}-{}", std::process::id());
        let fs = Some(FaultFs::mount_with(&backing, &data, &tag, options).expect("mount"));
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

/// `nobody`, the user the next tests act as (present on every Debian-like system).
const NOBODY: u32 = 65_534;

/// Runs `script` under `sh -e` as `nobody` (uid and gid 65534, no supplementary groups), in `dir`.
fn as_nobody(dir: &Path, script: &str) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    std::process::Command::new("sh")
        .args(["-ec", script])
        .current_dir("/")
        .env("DIR", dir)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("sh runs")
}

/// A node run as its own user (PostgreSQL as `postgres`) on the fault filesystem: with `allow_other` the user gets in,
/// the kernel checks its accesses against the owners and modes the filesystem reports (`default_permissions`), what
/// it creates is its own with the modes it asked for, its fsyncs (of files and directories) and renames count, and a
/// power loss still takes exactly what it did not sync.
#[test]
fn given_allow_other_when_a_non_root_user_writes_syncs_and_renames_should_own_its_files_and_lose_only_unsynced_writes()
{
    if !fuse_ready() {
        return;
    }
    let options = FaultFsOptions {
        allow_other: true,
        ..FaultFsOptions::default()
    };
    let lab = Lab::with_options("allow-other", options);
    std::os::unix::fs::chown(&lab.data, Some(NOBODY), Some(NOBODY)).expect("give the data dir to nobody");
    fs::write(lab.data.join("root-owned"), b"root").expect("a file of root's");
    File::open(&lab.data).and_then(|d| d.sync_all()).expect("dir fsync");

    let output = as_nobody(
        &lab.data,
        r#"cd "$DIR"
        chmod 700 .
        umask 077
        mkdir own
        printf synced > own/a.tmp
        sync own/a.tmp
        mv own/a.tmp own/a
        sync own .
        printf unsynced > own/b
        printf '%s' -more >> own/a
        if printf x >> root-owned 2>/dev/null; then echo "wrote a file of root's"; exit 1; fi
        if chown 0 own/a 2>/dev/null; then echo "gave a file away"; exit 1; fi"#,
    );
    assert!(
        output.status.success(),
        "nobody's script failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    use std::os::unix::fs::MetadataExt;
    let mode_owner = |path: &Path| {
        let md = fs::metadata(path).expect("stat");
        (md.mode() & 0o7777, md.uid(), md.gid())
    };
    assert_eq!(
        mode_owner(&lab.data),
        (0o700, NOBODY, NOBODY),
        "chmod of its own data dir"
    );
    assert_eq!(mode_owner(&lab.data.join("own")), (0o700, NOBODY, NOBODY));
    assert_eq!(mode_owner(&lab.data.join("own/a")), (0o600, NOBODY, NOBODY));
    assert_eq!(mode_owner(&lab.data.join("own/b")), (0o600, NOBODY, NOBODY));
    assert_eq!(fs::read(lab.data.join("root-owned")).expect("read"), b"root");
    assert_eq!(fs::read(lab.data.join("own/a")).expect("read"), b"synced-more");

    let record = lab.fs().lose_unsynced();
    assert!(record.warnings.is_empty(), "{:?}", record.warnings);
    assert_eq!(
        fs::read(lab.data.join("own/a")).expect("read after the power loss"),
        b"synced"
    );
    assert!(
        !lab.data.join("own/b").exists(),
        "own/b was never synced, nor was its entry"
    );
    assert!(!lab.data.join("own/a.tmp").exists(), "the synced rename stays");
    assert_eq!(
        mode_owner(&lab.data.join("own/a")),
        (0o600, NOBODY, NOBODY),
        "owner and mode survive"
    );
    let again = as_nobody(&lab.data, r#"cd "$DIR"; printf again >> own/a; sync own/a"#);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(fs::read(lab.data.join("own/a")).expect("read"), b"syncedagain");
}

/// Without `allow_other` (every node runs as root) the kernel keeps every other user out of the mount.
#[test]
fn given_no_allow_other_when_a_non_root_user_enters_should_be_refused() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("owner-only");
    std::os::unix::fs::chown(&lab.data, Some(NOBODY), Some(NOBODY)).expect("give the data dir to nobody");
    let output = as_nobody(&lab.data, r#"ls "$DIR""#);
    assert!(!output.status.success(), "nobody listed a mount without allow_other");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Permission denied"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(fs::read_dir(&lab.data).is_ok(), "root, who mounted it, still gets in");
}
