//! The FUSE operations: a passthrough to the backing dir that logs durability ([`super::durability`]) and injects
//! faults ([`super::faults`]).
//!
//! Nothing is cached by the kernel: entries and attributes have a zero TTL, every file is opened `direct_io` (reads
//! and writes all reach this code; shared mmap is allowed where the kernel supports it, and a power loss
//! invalidates those pages), writeback caching and passthrough are never requested.

use super::durability::ROOT_INO;
use super::faults::IoOp;
use super::{lock, Inner, MetadataDurability, HIDDEN_DIR_NAME};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Entry and attribute TTL: zero, so the kernel asks again every time and a rollback is seen at once.
const TTL: Duration = Duration::ZERO;

/// The filesystem fuser drives; all state lives in the shared [`Inner`].
pub(crate) struct FsServer {
    pub inner: Arc<Inner>,
}

fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs < 0 {
        return UNIX_EPOCH;
    }
    UNIX_EPOCH + Duration::new(secs as u64, nsecs.clamp(0, 999_999_999) as u32)
}

fn attr(ino: u64, md: &Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: md.size(),
        blocks: md.blocks(),
        atime: time(md.atime(), md.atime_nsec()),
        mtime: time(md.mtime(), md.mtime_nsec()),
        ctime: time(md.ctime(), md.ctime_nsec()),
        crtime: time(md.ctime(), md.ctime_nsec()),
        kind: FileType::from_std(md.file_type()).unwrap_or(FileType::RegularFile),
        perm: (md.mode() & 0o7777) as u16,
        nlink: md.nlink() as u32,
        uid: md.uid(),
        gid: md.gid(),
        rdev: md.rdev() as u32,
        blksize: md.blksize() as u32,
        flags: 0,
    }
}

fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Gives a new node to the caller, as the kernel would on a normal filesystem (this daemon runs as root).
fn own(req: &Request, path: &Path) -> io::Result<()> {
    // SAFETY: geteuid/getegid have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if req.uid() != uid || req.gid() != gid {
        std::os::unix::fs::lchown(path, Some(req.uid()), Some(req.gid()))?;
    }
    Ok(())
}

fn set_times(path: &Path, atime: Option<TimeOrNow>, mtime: Option<TimeOrNow>) -> io::Result<()> {
    let spec = |t: Option<TimeOrNow>| match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => {
            let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
            libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            }
        }
    };
    let times = [spec(atime), spec(mtime)];
    let path = cpath(path)?;
    // SAFETY: `path` is a valid C string and `times` two timespecs, as utimensat requires.
    let rc = unsafe { libc::utimensat(libc::AT_FDCWD, path.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn renameat2(from: &Path, to: &Path, flags: u32) -> io::Result<()> {
    let (from, to) = (cpath(from)?, cpath(to)?);
    // SAFETY: both are valid C strings; AT_FDCWD with absolute paths.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl FsServer {
    /// Stall and EIO injection for one call on inode `ino`.
    fn inject(&self, op: IoOp, ino: u64) -> Result<(), Errno> {
        if !self.inner.rules_active.load(Ordering::Relaxed) {
            return Ok(());
        }
        let path = lock(&self.inner.state)
            .rel(ino)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let verdict = match lock(&self.inner.injector).as_mut() {
            Some(injector) => injector.decide(op, &path),
            None => return Ok(()),
        };
        if let Some(delay) = verdict.stall {
            std::thread::sleep(delay);
        }
        if verdict.eio {
            return Err(Errno::EIO);
        }
        Ok(())
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<File>, Errno> {
        lock(&self.inner.handles).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    fn add_handle(&self, file: File) -> u64 {
        let fh = self.inner.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.handles).insert(fh, Arc::new(file));
        fh
    }

    fn count_enospc(&self, e: &io::Error) {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            self.inner.enospc_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Creates a node named `name` in `parent` with `make`, then interns and returns it (one kernel lookup).
    fn make_node(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        make: impl FnOnce(&Path) -> io::Result<()>,
    ) -> Result<FileAttr, Errno> {
        let mut st = lock(&self.inner.state);
        st.log_dir(parent.0).map_err(errno)?;
        let rel = st.child_rel(parent.0, name).map_err(errno)?;
        let path = st.root().join(&rel);
        make(&path).map_err(errno)?;
        own(req, &path).map_err(errno)?;
        let md = std::fs::symlink_metadata(&path).map_err(errno)?;
        let ino = st.intern(&rel, &md);
        st.looked_up(ino);
        Ok(attr(ino, &md))
    }

    fn do_setattr(
        &self,
        ino: u64,
        mode: Option<u32>,
        owner: (Option<u32>, Option<u32>),
        size: Option<u64>,
        times: (Option<TimeOrNow>, Option<TimeOrNow>),
        fh: Option<FileHandle>,
    ) -> Result<FileAttr, Errno> {
        if size.is_some() {
            self.inject(IoOp::Write, ino)?;
        }
        let mut st = lock(&self.inner.state);
        let path = st.abs(ino).map_err(errno)?;
        if let Some(size) = size {
            // No handle is the common case, not a corner: without atomic O_TRUNC the kernel turns
            // `open(O_TRUNC)` of an existing file into an open and then this setattr with the handle dropped, as
            // for truncate(2). Read-write, as in `do_open`: a shrink reads the bytes it cuts off into the undo
            // log, and a write-only descriptor fails that read with EBADF.
            let file = match fh.and_then(|fh| self.handle(fh).ok()) {
                Some(file) => file,
                None => Arc::new(OpenOptions::new().read(true).write(true).open(&path).map_err(errno)?),
            };
            st.truncate(ino, &file, size).map_err(|e| {
                self.count_enospc(&e);
                errno(e)
            })?;
        }
        if let Some(mode) = mode {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o7777)).map_err(errno)?;
        }
        if owner.0.is_some() || owner.1.is_some() {
            std::os::unix::fs::lchown(&path, owner.0, owner.1).map_err(errno)?;
        }
        if times.0.is_some() || times.1.is_some() {
            set_times(&path, times.0, times.1).map_err(errno)?;
        }
        let md = std::fs::symlink_metadata(&path).map_err(errno)?;
        Ok(attr(ino, &md))
    }

    fn do_unlink(&self, parent: INodeNo, name: &OsStr, dir: bool) -> Result<(), Errno> {
        let mut st = lock(&self.inner.state);
        st.log_dir(parent.0).map_err(errno)?;
        let rel = st.child_rel(parent.0, name).map_err(errno)?;
        let path = st.root().join(&rel);
        let md = std::fs::symlink_metadata(&path).map_err(errno)?;
        if dir != md.is_dir() {
            return Err(if dir { Errno::ENOTDIR } else { Errno::EISDIR });
        }
        let ino = st.intern(&rel, &md);
        if dir {
            if std::fs::read_dir(&path).map_err(errno)?.next().is_some() {
                return Err(Errno::ENOTEMPTY);
            }
            if !st.keep_if_durable(ino, &rel, true).map_err(errno)? {
                std::fs::remove_dir(&path).map_err(errno)?;
                st.sync_dir(ino); // nothing durable names it: its own log is moot
            }
        } else {
            st.keep_if_durable(ino, &rel, false).map_err(errno)?;
            std::fs::remove_file(&path).map_err(errno)?;
            if let (Some(quota), true) = (st.quota.as_mut(), md.nlink() == 1) {
                quota.used_bytes = quota.used_bytes.saturating_sub(md.len());
            }
        }
        st.unnamed(ino, &rel, dir || md.nlink() == 1);
        Ok(())
    }

    fn do_rename(
        &self,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
    ) -> Result<(), Errno> {
        let mut st = lock(&self.inner.state);
        st.log_dir(parent.0).map_err(errno)?;
        st.log_dir(newparent.0).map_err(errno)?;
        let from_rel = st.child_rel(parent.0, name).map_err(errno)?;
        let to_rel = st.child_rel(newparent.0, newname).map_err(errno)?;
        let (from, to) = (st.root().join(&from_rel), st.root().join(&to_rel));
        let from_md = std::fs::symlink_metadata(&from).map_err(errno)?;
        st.intern(&from_rel, &from_md);
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            renameat2(&from, &to, flags.bits()).map_err(errno)?;
            let swap = Path::new(HIDDEN_DIR_NAME).join("swap");
            st.renamed(&from_rel, &swap);
            st.renamed(&to_rel, &from_rel);
            st.renamed(&swap, &to_rel);
            return Ok(());
        }
        let mut replaced = None;
        if let Ok(to_md) = std::fs::symlink_metadata(&to) {
            let same = to_md.dev() == from_md.dev() && to_md.ino() == from_md.ino();
            if !same {
                if flags.contains(RenameFlags::RENAME_NOREPLACE) {
                    return Err(Errno::EEXIST);
                }
                let to_ino = st.intern(&to_rel, &to_md);
                match (from_md.is_dir(), to_md.is_dir()) {
                    (false, true) => return Err(Errno::EISDIR),
                    (true, false) => return Err(Errno::ENOTDIR),
                    (true, true) if std::fs::read_dir(&to).map_err(errno)?.next().is_some() => {
                        return Err(Errno::ENOTEMPTY)
                    }
                    _ => {}
                }
                let moved = st.keep_if_durable(to_ino, &to_rel, to_md.is_dir()).map_err(errno)?;
                replaced = Some((to_ino, to_md, moved));
            }
        }
        renameat2(&from, &to, flags.bits()).map_err(errno)?;
        if let Some((to_ino, to_md, moved)) = replaced {
            if !moved {
                st.unnamed(to_ino, &to_rel, to_md.is_dir() || to_md.nlink() == 1);
                if to_md.is_dir() {
                    st.sync_dir(to_ino);
                } else if let (Some(quota), true) = (st.quota.as_mut(), to_md.nlink() == 1) {
                    quota.used_bytes = quota.used_bytes.saturating_sub(to_md.len());
                }
            }
        }
        st.renamed(&from_rel, &to_rel);
        Ok(())
    }

    fn do_create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        flags: i32,
    ) -> Result<(u64, FileAttr), Errno> {
        let mut st = lock(&self.inner.state);
        st.log_dir(parent.0).map_err(errno)?;
        let rel = st.child_rel(parent.0, name).map_err(errno)?;
        let path = st.root().join(&rel);
        let existed = std::fs::symlink_metadata(&path).is_ok();
        if existed && flags & libc::O_EXCL != 0 {
            return Err(Errno::EEXIST);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(mode & 0o7777)
            .open(&path)
            .map_err(errno)?;
        if !existed {
            own(req, &path).map_err(errno)?;
        }
        let md = file.metadata().map_err(errno)?;
        let ino = st.intern(&rel, &md);
        st.looked_up(ino);
        if !existed {
            st.created_file(ino);
        } else if flags & libc::O_TRUNC != 0 {
            st.truncate(ino, &file, 0).map_err(errno)?;
        }
        let md = file.metadata().map_err(errno)?;
        drop(st);
        let fh = self.add_handle(file);
        Ok((fh, attr(ino, &md)))
    }

    fn do_open(&self, ino: INodeNo, flags: OpenFlags) -> Result<u64, Errno> {
        let path = lock(&self.inner.state).abs(ino.0).map_err(errno)?;
        // Read-write even for a read-only open: the undo log reads what writes overwrite. The kernel enforces the
        // caller's access mode on its own descriptor.
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => file,
            Err(_) if flags.acc_mode() == OpenAccMode::O_RDONLY => File::open(&path).map_err(errno)?,
            Err(e) => return Err(errno(e)),
        };
        Ok(self.add_handle(file))
    }

    fn do_readdir(&self, ino: INodeNo, offset: u64, reply: &mut ReplyDirectory) -> Result<(), Errno> {
        let st = lock(&self.inner.state);
        let path = st.abs(ino.0).map_err(errno)?;
        let dev = std::fs::symlink_metadata(&path).map_err(errno)?.dev();
        let mut entries: Vec<(u64, FileType, std::ffi::OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (ino.0, FileType::Directory, "..".into()),
        ];
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&path).map_err(errno)? {
            let entry = entry.map_err(errno)?;
            let name = entry.file_name();
            if ino.0 == ROOT_INO && name == HIDDEN_DIR_NAME {
                continue;
            }
            let file_type = entry.file_type().map_err(errno)?;
            let kind = FileType::from_std(file_type).unwrap_or(FileType::RegularFile);
            use std::os::unix::fs::DirEntryExt;
            // Listings need no stable numbers (the kernel looks names up); offset unknown ones out of our range.
            let number = st.known(dev, entry.ino()).unwrap_or(entry.ino() | (1 << 62));
            names.push((number, kind, name));
        }
        names.sort_by(|a, b| a.2.cmp(&b.2));
        entries.extend(names);
        drop(st);
        for (index, (number, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(number), index as u64 + 1, kind, &name) {
                break;
            }
        }
        Ok(())
    }
}

fn state_io<T>(result: io::Result<T>) -> Result<T, Errno> {
    result.map_err(errno)
}

impl Filesystem for FsServer {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Shared mmap of a direct_io file (bbolt, LMDB) needs this; without kernel support such an mmap fails.
        if config.capabilities().contains(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP) {
            let _ = config.add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let mut st = lock(&self.inner.state);
            let rel = st.child_rel(parent.0, name).map_err(|_| Errno::ENOENT)?;
            let md = state_io(std::fs::symlink_metadata(st.root().join(&rel)))?;
            let ino = st.intern(&rel, &md);
            st.looked_up(ino);
            Ok(attr(ino, &md))
        })();
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        lock(&self.inner.state).forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let result = match fh.and_then(|fh| self.handle(fh).ok()) {
            Some(file) => state_io(file.metadata()),
            None => lock(&self.inner.state)
                .abs(ino.0)
                .and_then(std::fs::symlink_metadata)
                .map_err(errno),
        };
        match result {
            Ok(md) => reply.attr(&TTL, &attr(ino.0, &md)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        match self.do_setattr(ino.0, mode, (uid, gid), size, (atime, mtime), fh) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match lock(&self.inner.state).abs(ino.0).and_then(std::fs::read_link) {
            Ok(target) => reply.data(target.as_os_str().as_bytes()),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        let result = self.make_node(req, parent, name, |path| {
            let c = cpath(path)?;
            // SAFETY: valid C string; mknod has no memory preconditions.
            let rc = unsafe { libc::mknod(c.as_ptr(), (mode & !umask) as libc::mode_t, libc::dev_t::from(rdev)) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
        if let Ok(attr) = &result {
            if attr.kind == FileType::RegularFile {
                lock(&self.inner.state).created_file(attr.ino.0);
            }
        }
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let result = self.make_node(req, parent, name, |path| {
            std::fs::DirBuilder::new().mode(mode & !umask & 0o7777).create(path)
        });
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.do_unlink(parent, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.do_unlink(parent, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        match self.make_node(req, parent, link_name, |path| std::os::unix::fs::symlink(target, path)) {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        match self.do_rename(parent, name, newparent, newname, flags) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let result = (|| {
            let mut st = lock(&self.inner.state);
            st.log_dir(newparent.0).map_err(errno)?;
            let from = st.abs(ino.0).map_err(errno)?;
            let rel = st.child_rel(newparent.0, newname).map_err(errno)?;
            let to = st.root().join(&rel);
            state_io(std::fs::hard_link(&from, &to))?;
            let md = state_io(std::fs::symlink_metadata(&to))?;
            let ino = st.intern(&rel, &md);
            st.looked_up(ino);
            Ok(attr(ino, &md))
        })();
        match result {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self.do_open(ino, flags) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let result = (|| {
            self.inject(IoOp::Read, ino.0)?;
            let file = self.handle(fh)?;
            let mut buf = vec![0u8; size as usize];
            let mut filled = 0;
            while filled < buf.len() {
                match file.read_at(&mut buf[filled..], offset + filled as u64) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(errno(e)),
                }
            }
            buf.truncate(filled);
            Ok(buf)
        })();
        match result {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let result = (|| {
            self.inject(IoOp::Write, ino.0)?;
            let file = self.handle(fh)?;
            // The kernel sets O_DSYNC here for a write through an O_SYNC or O_DSYNC descriptor and for pwritev2's
            // RWF_SYNC/RWF_DSYNC (O_SYNC's bits include O_DSYNC's): durable when it returns, as on a disk. Its
            // inode change forces a journal commit, which carries every metadata change (as an fsync does).
            let synced = flags.0 & libc::O_DSYNC != 0;
            let mut st = lock(&self.inner.state);
            let written = if synced {
                st.write_synced(ino.0, &file, offset, data)
            } else {
                st.write(ino.0, &file, offset, data)
            };
            if synced && written.is_ok() && self.inner.options.metadata == MetadataDurability::Journaled {
                st.commit_metadata();
            }
            drop(st);
            if synced && written.is_ok() && self.inner.options.real_fsync {
                state_io(file.sync_data())?;
            }
            written.map_err(|e| {
                self.count_enospc(&e);
                errno(e)
            })
        })();
        match result {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        lock(&self.inner.handles).remove(&fh.0);
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        let result = (|| {
            self.inject(IoOp::Fsync, ino.0)?;
            let file = self.handle(fh)?;
            // Durable from here: writes racing this fsync count as after it.
            {
                let mut st = lock(&self.inner.state);
                st.sync_file(ino.0);
                if self.inner.options.metadata == MetadataDurability::Journaled {
                    st.commit_metadata();
                }
            }
            if self.inner.options.real_fsync {
                state_io(if datasync { file.sync_data() } else { file.sync_all() })?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        match self.do_readdir(ino, offset, &mut reply) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let result = (|| {
            self.inject(IoOp::Fsync, ino.0)?;
            let path = {
                let mut st = lock(&self.inner.state);
                st.sync_dir(ino.0);
                if self.inner.options.metadata == MetadataDurability::Journaled {
                    st.commit_metadata();
                }
                st.abs(ino.0).map_err(errno)?
            };
            if self.inner.options.real_fsync {
                state_io(File::open(&path).and_then(|dir| dir.sync_all()))?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let root = lock(&self.inner.state).root().to_path_buf();
        let result = cpath(&root).and_then(|c| {
            // SAFETY: zeroed statvfs is a valid out-parameter; `c` is a valid C string.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(st)
        });
        match result {
            Ok(st) => reply.statfs(
                st.f_blocks,
                st.f_bfree,
                st.f_bavail,
                st.f_files,
                st.f_ffree,
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            ),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        match self.do_create(req, parent, name, mode & !umask, flags) {
            Ok((fh, attr)) => reply.created(&TTL, &attr, Generation(0), FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let result = (|| {
            self.inject(IoOp::Write, ino.0)?;
            let file = self.handle(fh)?;
            lock(&self.inner.state)
                .fallocate(ino.0, &file, offset, length, mode)
                .map_err(|e| {
                    self.count_enospc(&e);
                    errno(e)
                })
        })();
        match result {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }
}
