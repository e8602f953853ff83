//! The store: `store/<plan>/<UTC time>-seed<N>/` per run, and `store/latest` pointing at the newest run.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// Creates `root/<plan>/<UTC yyyymmddThhmmssZ>-seed<N>` (with a suffix if it exists already).
pub fn create_run_dir(root: &Path, plan: &str, seed: u64) -> anyhow::Result<PathBuf> {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp: String = stamp.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let base = root.join(plan);
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create the store folder {}", base.display()))?;
    for attempt in 0..100 {
        let name = if attempt == 0 {
            format!("{stamp}-seed{seed}")
        } else {
            format!("{stamp}-seed{seed}-{attempt}")
        };
        let dir = base.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    anyhow::bail!(
        "too many runs of {plan} with seed {seed} in the same second under {}",
        base.display()
    )
}

/// Points `root/latest` at `run_dir` (a relative symlink, replaced atomically).
pub fn point_latest(root: &Path, run_dir: &Path) {
    let target = run_dir.strip_prefix(root).unwrap_or(run_dir);
    let tmp = root.join(format!(".latest.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if std::os::unix::fs::symlink(target, &tmp).is_ok() {
        let _ = std::fs::rename(&tmp, root.join("latest"));
    }
}
