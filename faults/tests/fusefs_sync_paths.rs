//! Which ways of making data durable the fault filesystem honours at a power loss, each through the real system call
//! on a real mount (the README's table says the same): `O_SYNC`/`O_DSYNC` descriptors, `pwritev2` with `RWF_DSYNC`,
//! `msync(MS_SYNC)` of a shared mapping, `O_DIRECT` writes followed by `fdatasync`; and a process that writes its log
//! only through `O_SYNC` and never calls fsync loses nothing it was told was written.
//!
//! Needs root and /dev/fuse (and python3 for the process test). Under `CI=true` their absence fails the test with the
//! reason; elsewhere the tests skip with a printed reason.

#[path = "support/fuse_lab.rs"]
mod fuse_lab;

use fuse_lab::{fuse_ready, Lab};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A file that exists, empty, with its directory entry durable (so only its data is at stake).
fn durable_empty(lab: &Lab, name: &str) -> PathBuf {
    let path = lab.path(name);
    File::create(&path).and_then(|f| f.sync_all()).expect("create");
    File::open(&lab.data).and_then(|d| d.sync_all()).expect("dir fsync");
    path
}

fn open_with(path: &Path, custom_flags: i32) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(custom_flags)
        .open(path)
        .expect("open")
}

#[test]
fn given_o_sync_and_o_dsync_descriptors_when_power_is_lost_should_keep_every_returned_write() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("oflags");
    for (name, flag) in [("o_sync", libc::O_SYNC), ("o_dsync", libc::O_DSYNC)] {
        let path = durable_empty(&lab, name);
        let file = open_with(&path, flag);
        file.write_all_at(b"first|", 0).expect("write");
        file.write_all_at(b"second|", 6).expect("write");
        file.write_all_at(b"FIRST", 0).expect("overwrite");
        // A plain descriptor beside it: its append is not durable.
        OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"plain"))
            .expect("plain append");
        let record = lab.fs().lose_unsynced();
        assert_eq!(fs::read(&path).expect("read"), b"FIRST|second|", "{name}: {record:?}");
    }
}

#[test]
fn given_pwritev2_with_rwf_dsync_when_power_is_lost_should_keep_that_write_only() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("rwf");
    let path = durable_empty(&lab, "log");
    let file = open_with(&path, 0);
    file.write_all_at(b"plain|", 0).expect("plain write");
    let bytes = b"dsync|";
    let iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: one valid iovec over a live buffer, on a descriptor we own.
    let written = unsafe { libc::pwritev2(file.as_raw_fd(), &iov, 1, 6, libc::RWF_DSYNC) };
    assert_eq!(written, bytes.len() as isize, "{}", std::io::Error::last_os_error());
    lab.fs().lose_unsynced();
    assert_eq!(
        fs::read(&path).expect("read"),
        b"\0\0\0\0\0\0dsync|",
        "the plain write before it is lost (zeros: the disk never got it), the RWF_DSYNC write kept"
    );
}

#[test]
fn given_msync_of_a_shared_mapping_when_power_is_lost_should_keep_the_synced_pages() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("msync");
    let path = durable_empty(&lab, "mapped");
    let file = open_with(&path, 0);
    file.set_len(4096).expect("size");
    file.sync_all().expect("fsync the size");
    // SAFETY: a shared mapping of 4096 bytes of a file we hold open; unmapped below before the file is dropped.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(
        map,
        libc::MAP_FAILED,
        "shared mmap: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `map` is a live writable mapping of 4096 bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(b"mapped and synced".as_ptr(), map as *mut u8, 17);
        assert_eq!(
            libc::msync(map, 4096, libc::MS_SYNC),
            0,
            "{}",
            std::io::Error::last_os_error()
        );
        libc::munmap(map, 4096);
    }
    lab.fs().lose_unsynced();
    assert_eq!(&fs::read(&path).expect("read")[..17], b"mapped and synced");
}

#[test]
fn given_o_direct_writes_when_power_is_lost_should_keep_them_only_after_a_flush() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("odirect");
    let path = durable_empty(&lab, "direct");
    let file = open_with(&path, libc::O_DIRECT);
    // O_DIRECT bypasses the page cache, not the disk's volatile cache: durable only after fdatasync.
    let layout = std::alloc::Layout::from_size_align(4096, 4096).expect("layout");
    // SAFETY: a 4096-byte, 4096-aligned allocation, freed below.
    let buf = unsafe { std::alloc::alloc_zeroed(layout) };
    // SAFETY: `buf` is valid for 4096 bytes.
    let page = unsafe { std::slice::from_raw_parts_mut(buf, 4096) };
    page.fill(b'd');
    file.write_all_at(page, 0).expect("direct write, then flushed");
    file.sync_data().expect("fdatasync");
    page.fill(b'u');
    file.write_all_at(page, 4096).expect("direct write, never flushed");
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(buf, layout) };
    lab.fs().lose_unsynced();
    assert_eq!(fs::read(&path).expect("read"), vec![b'd'; 4096]);
}

/// Tarantool's `wal_mode = 'fsync'` opens its xlogs `O_SYNC` and never calls fsync. A process that appends records
/// that way and prints each one once the write returned, killed and then put through a power loss, must find every
/// printed record in its file.
#[test]
fn given_a_process_that_writes_only_through_o_sync_when_killed_and_power_is_lost_should_lose_nothing_acknowledged() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("process");
    let log = lab.data.join("xlog");
    let script = r#"
import os, sys
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_SYNC, 0o644)
dfd = os.open(os.path.dirname(path), os.O_RDONLY)
os.fsync(dfd)
seq = 0
while True:
    os.write(fd, b"record %08d\n" % seq)
    print(seq, flush=True)
    seq += 1
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 runs the O_SYNC writer: {e}"));
    let mut acked = None;
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let seq: u64 = line.expect("line").trim().parse().expect("a sequence number");
        acked = Some(seq);
        if seq >= 300 {
            break;
        }
    }
    child.kill().expect("kill -9");
    child.wait().expect("reaped");
    let acked = acked.expect("the writer acknowledged records");
    let record = lab.fs().lose_unsynced();
    let text = fs::read_to_string(&log).expect("the xlog survives");
    let records: Vec<&str> = text.lines().collect();
    assert!(
        records.len() as u64 > acked,
        "{} records after the power loss, {} acknowledged: {record:?}",
        records.len(),
        acked + 1
    );
    for (seq, line) in records.iter().enumerate() {
        assert_eq!(*line, format!("record {seq:08}"), "record {seq} intact");
    }
}

/// What the README says the fault filesystem does not count: `sync_file_range` (it promises neither the metadata nor
/// a flush of the device's cache, so no database relies on it alone) and `syncfs`/`sync` (the kernel forwards them
/// only to virtiofs servers, never to a FUSE server like this one, so they cannot be seen). If a kernel ever forwards
/// them, this test fails and the README's table must change with the code.
#[test]
fn given_sync_file_range_or_syncfs_when_power_is_lost_should_not_count_them_as_documented() {
    if !fuse_ready() {
        return;
    }
    let lab = Lab::new("uncounted");
    let path = durable_empty(&lab, "range");
    let file = open_with(&path, 0);
    file.write_all_at(b"ranged", 0).expect("write");
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    // SAFETY: plain syscalls on a descriptor we own.
    assert_eq!(unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 6, flags) }, 0);
    let other = durable_empty(&lab, "whole-fs");
    open_with(&other, 0).write_all_at(b"syncfs", 0).expect("write");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::syncfs(file.as_raw_fd()) }, 0);
    lab.fs().lose_unsynced();
    assert_eq!(fs::read(&path).expect("read"), b"", "sync_file_range is not counted");
    assert_eq!(fs::read(&other).expect("read"), b"", "syncfs is not counted");
}
