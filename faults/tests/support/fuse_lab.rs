//! What the fault filesystem's integration tests share: whether FUSE can be used here (a failure under `CI=true`, a
//! printed skip elsewhere) and a lab of one mount over a backing dir in a temp dir.
// Each test binary that includes this module uses some of it.
#![allow(dead_code)]

use faultline_faults::fusefs::{self, FaultFs, FaultFsHandle, FaultFsOptions};
use std::fs;
use std::path::PathBuf;

pub fn fuse_ready() -> bool {
    match fusefs::fuse_available() {
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

pub struct Lab {
    _tmp: tempfile::TempDir,
    pub backing: PathBuf,
    pub data: PathBuf,
    pub tag: String,
    pub fs: Option<FaultFsHandle>,
}

impl Lab {
    pub fn new(name: &str) -> Lab {
        Lab::with(name, FaultFsOptions::default())
    }

    pub fn with(name: &str, options: FaultFsOptions) -> Lab {
        let tmp = tempfile::tempdir().unwrap();
        let backing = tmp.path().join("backing");
        let data = tmp.path().join("data");
        fs::create_dir(&backing).unwrap();
        fs::create_dir(&data).unwrap();
        let tag = format!("test-{name}-{}", std::process::id());
        let fs = Some(FaultFs::mount_with(&backing, &data, &tag, options).unwrap());
        Lab {
            _tmp: tmp,
            backing,
            data,
            tag,
            fs,
        }
    }

    pub fn fs(&self) -> &FaultFsHandle {
        self.fs.as_ref().unwrap()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.data.join(name)
    }

    pub fn unmount(&mut self) {
        self.fs.take().unwrap().unmount().unwrap();
    }

    pub fn remount(&mut self) {
        self.fs = Some(FaultFs::mount(&self.backing, &self.data, &self.tag).unwrap());
    }
}
