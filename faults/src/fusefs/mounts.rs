//! Finding and removing faultline's FUSE mounts, so none outlives its run.
//!
//! Every fault filesystem mounts with fsname `faultline-<run tag>`; `/proc/self/mountinfo` shows it as the mount
//! source with fstype `fuse` (or `fuse.faultline` when mounted through a helper).

use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};

/// The fsname prefix of every fault filesystem.
pub const FSNAME_PREFIX: &str = "faultline-";

/// One faultline FUSE mount seen in the mount table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultMount {
    /// Where it is mounted.
    pub mountpoint: PathBuf,
    /// The run tag from its fsname.
    pub run_tag: String,
}

/// A mount [`sweep`] removed (or tried to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SweptMount {
    /// The mount.
    pub mount: FaultMount,
    /// Why the lazy unmount failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Undoes mountinfo's octal escapes (`\040` for a space, ...).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|b| (b'0'..=b'7').contains(b)) {
                let value = digits.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                out.push(value as u8);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Faultline mounts in a mountinfo text.
pub fn parse_mountinfo(text: &str) -> Vec<FaultMount> {
    let mut mounts = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let mut right = right.split_whitespace();
        let (Some(fstype), Some(source)) = (right.next(), right.next()) else {
            continue;
        };
        if !(fstype == "fuse" || fstype.starts_with("fuse.")) {
            continue;
        }
        let source = unescape(source);
        let Some(run_tag) = source.strip_prefix(FSNAME_PREFIX) else {
            continue;
        };
        let Some(mountpoint) = left.split(' ').nth(4) else {
            continue;
        };
        mounts.push(FaultMount {
            mountpoint: PathBuf::from(unescape(mountpoint)),
            run_tag: run_tag.to_string(),
        });
    }
    mounts
}

/// Faultline mounts currently in this process's mount namespace.
pub fn faultline_mounts() -> io::Result<Vec<FaultMount>> {
    Ok(parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo")?))
}

fn umount2(path: &Path, flags: libc::c_int) -> io::Result<()> {
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: valid C string; umount2 has no memory preconditions.
    let rc = unsafe { libc::umount2(c.as_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Unmounts `path`; if it is busy (a process still has files open there), detaches it lazily instead. Not mounted
/// is fine.
pub(crate) fn unmount(path: &Path) -> io::Result<()> {
    match umount2(path, 0) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => umount2(path, libc::MNT_DETACH),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Lazily unmounts every faultline mount whose run tag is not in `live_run_tags` (leftovers of runs that died
/// before they could unmount). Deepest mountpoints go first.
pub fn sweep(live_run_tags: &[&str]) -> io::Result<Vec<SweptMount>> {
    sweep_where(|tag| !live_run_tags.contains(&tag))
}

/// Faultline mounts of harness processes that are gone (their run tags name their pid), unmounting nothing.
pub fn orphans() -> io::Result<Vec<FaultMount>> {
    let me = std::process::id();
    Ok(faultline_mounts()?
        .into_iter()
        .filter(|m| is_orphan(&m.run_tag, me))
        .collect())
}

fn is_orphan(tag: &str, me: u32) -> bool {
    tag_pid(tag).is_some_and(|pid| pid != me && !Path::new(&format!("/proc/{pid}")).exists())
}

/// Lazily unmounts every faultline mount whose run tag `is_dead` says is dead. Deepest mountpoints go first.
pub fn sweep_where(is_dead: impl Fn(&str) -> bool) -> io::Result<Vec<SweptMount>> {
    let mut dead: Vec<FaultMount> = faultline_mounts()?
        .into_iter()
        .filter(|m| is_dead(&m.run_tag))
        .collect();
    dead.sort_by_key(|m| std::cmp::Reverse(m.mountpoint.components().count()));
    Ok(dead
        .into_iter()
        .map(|mount| {
            let error = umount2(&mount.mountpoint, libc::MNT_DETACH)
                .err()
                .map(|e| e.to_string());
            SweptMount { mount, error }
        })
        .collect())
}

/// A run tag that names this process: `<label>-p<pid>`, so [`sweep_orphans`] can tell a dead run's mount from a
/// live one in another process.
pub fn run_tag(label: &str) -> String {
    format!("{label}-p{}", std::process::id())
}

/// The pid a [`run_tag`]-style tag names, if it has one.
pub fn tag_pid(tag: &str) -> Option<u32> {
    tag.rsplit_once("-p")?.1.parse().ok()
}

/// Lazily unmounts the faultline mounts whose [`run_tag`] names a process that no longer exists (a harness that was
/// killed). Mounts of live processes, including this one, and tags without a pid are left alone: safe to call at
/// every harness start, even with other runs going on beside it.
pub fn sweep_orphans() -> io::Result<Vec<SweptMount>> {
    let me = std::process::id();
    sweep_where(|tag| is_orphan(tag, me))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_run_tags_should_carry_and_yield_the_pid() {
        assert_eq!(tag_pid(&run_tag("default-seed42")), Some(std::process::id()));
        assert_eq!(tag_pid("a-p-p17"), Some(17));
        assert_eq!(tag_pid("no-pid"), None);
    }

    #[test]
    fn given_mountinfo_lines_when_parsed_should_find_only_faultline_fuse_mounts() {
        let text = "\
36 35 98:0 / /work/n1\\040data rw,nosuid,nodev - fuse faultline-run7 rw,user_id=0,group_id=0
37 35 98:0 / /mnt/other rw - fuse sshfs rw
38 35 0:5 / /proc rw - proc proc rw
39 35 0:6 / /x rw - fuse.faultline faultline-a-b rw
";
        let mounts = parse_mountinfo(text);
        assert_eq!(
            mounts,
            vec![
                FaultMount {
                    mountpoint: PathBuf::from("/work/n1 data"),
                    run_tag: "run7".into()
                },
                FaultMount {
                    mountpoint: PathBuf::from("/x"),
                    run_tag: "a-b".into()
                },
            ]
        );
    }
}
