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

/// Retention: in every plan folder of the store, removes passing run folders (results.json says `valid`) older than
/// the newest `keep` passing ones. Failing, unknown and unfinished runs are never removed. Returns what was removed.
pub fn prune_passing(root: &Path, keep: u64) -> anyhow::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let Ok(plans) = std::fs::read_dir(root) else {
        return Ok(removed);
    };
    for plan_dir in plans.flatten() {
        if !plan_dir.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let mut passing: Vec<PathBuf> = std::fs::read_dir(plan_dir.path())
            .with_context(|| format!("cannot list {}", plan_dir.path().display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|run| is_passing(run))
            .collect();
        // Run folders are named by their UTC start: the name orders them.
        passing.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
        for old in passing.into_iter().skip(keep as usize) {
            std::fs::remove_dir_all(&old).with_context(|| format!("cannot prune {}", old.display()))?;
            removed.push(old);
        }
    }
    Ok(removed)
}

fn is_passing(run_dir: &Path) -> bool {
    let Ok(bytes) = std::fs::read(run_dir.join("results.json")) else {
        return false;
    };
    serde_json::from_slice::<faultline_reports::results::Results>(&bytes)
        .is_ok_and(|r| r.verdict == faultline_reports::results::Verdict::Valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_run(root: &Path, plan: &str, name: &str, verdict: &str) -> PathBuf {
        let dir = root.join(plan).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let results = serde_json::json!({
            "schema_version": 1, "faultline_version": "0", "verdict": verdict, "reason": "r", "plan": plan,
            "system": "reference", "seed": 1, "started_at": "", "duration_ms": 1, "store_dir": "", "repro": "",
            "checks": [],
            "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0}
        });
        std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
        dir
    }

    #[test]
    fn given_old_passing_and_failing_runs_when_pruned_should_keep_the_newest_passing_and_every_failure() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let old_valid = fake_run(root, "p", "20260101T000000Z-seed1", "valid");
        let old_invalid = fake_run(root, "p", "20260101T000001Z-seed2", "invalid");
        let mid_valid = fake_run(root, "p", "20260102T000000Z-seed3", "valid");
        let new_valid = fake_run(root, "p", "20260103T000000Z-seed4", "valid");
        let unfinished = root.join("p/20260100T000000Z-seed9");
        std::fs::create_dir_all(&unfinished).unwrap();
        let other_plan = fake_run(root, "q", "20250101T000000Z-seed5", "valid");
        let removed = prune_passing(root, 2).unwrap();
        assert_eq!(removed, vec![old_valid.clone()]);
        assert!(!old_valid.exists());
        for kept in [old_invalid, mid_valid, new_valid, unfinished, other_plan] {
            assert!(kept.exists(), "{} was pruned", kept.display());
        }
    }
}
