//! `faultline merge STORE... [--store OUT]`: puts the stores of a sharded campaign (or any stores) together: every
//! run folder, campaign state, certification and matrix not yet in OUT is copied in, the seed databases are united
//! (without duplicates), and OUT's index is regenerated. Merging is idempotent: merging a store twice changes nothing.

use anyhow::Context;
use faultline_reports::seeds;
use std::path::{Path, PathBuf};

/// Top-level folders of a store that are not plans: copied file by file.
const NON_PLAN_DIRS: &[&str] = &["campaigns", "certify", "matrix"];

/// What a merge did.
#[derive(Debug, Default)]
pub struct MergeReport {
    /// Run folders copied in.
    pub runs_copied: usize,
    /// Run folders OUT had already.
    pub runs_present: usize,
    /// Seed database rows of OUT after the merge.
    pub rows: usize,
    /// The regenerated index.
    pub index: PathBuf,
}

/// Merges `sources` into `into` (created if needed).
pub fn merge(into: &Path, sources: &[PathBuf]) -> anyhow::Result<MergeReport> {
    std::fs::create_dir_all(into).with_context(|| format!("cannot create {}", into.display()))?;
    let into_real = into.canonicalize()?;
    let mut report = MergeReport::default();
    let mut rows = seeds::read_seeds(into)?.rows;
    for source in sources {
        let real = source
            .canonicalize()
            .with_context(|| format!("no store at {}", source.display()))?;
        if real == into_real {
            continue;
        }
        anyhow::ensure!(real.is_dir(), "{} is not a store folder", source.display());
        merge_one(&real, into, &mut report)?;
        let file = seeds::read_seeds(&real)?;
        if let Some((line, why)) = file.bad_lines.first() {
            eprintln!(
                "faultline merge: {} unreadable line(s) of {}/seeds.jsonl skipped (line {line}: {why})",
                file.bad_lines.len(),
                source.display()
            );
        }
        rows.extend(file.rows);
    }
    let rows = seeds::dedupe(rows);
    if !rows.is_empty() {
        seeds::write_seeds(into, &rows)?;
    }
    report.rows = rows.len();
    report.index = faultline_reports::write_index(into)?;
    Ok(report)
}

fn merge_one(source: &Path, into: &Path, report: &mut MergeReport) -> anyhow::Result<()> {
    for entry in sorted_entries(source)? {
        let name = entry.file_name().expect("a listed entry has a name").to_owned();
        let is_dir = std::fs::symlink_metadata(&entry).is_ok_and(|m| m.is_dir());
        if !is_dir || name.to_string_lossy().starts_with('.') {
            continue; // latest, index.html, seeds.jsonl, temp files
        }
        if NON_PLAN_DIRS.iter().any(|d| name == *d) {
            copy_missing(&entry, &into.join(&name))?;
            continue;
        }
        for run in sorted_entries(&entry)? {
            if !(run.join("results.json").is_file() || run.join("history.jsonl").is_file()) {
                continue;
            }
            let target = into
                .join(&name)
                .join(run.file_name().expect("a listed entry has a name"));
            if target.exists() {
                report.runs_present += 1;
                continue;
            }
            copy_run(&run, &target)?;
            report.runs_copied += 1;
        }
    }
    Ok(())
}

fn sorted_entries(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    Ok(entries)
}

/// Copies a run folder beside its target first and renames it into place, so a merge cut short never leaves half a
/// run that looks whole.
fn copy_run(run: &Path, target: &Path) -> anyhow::Result<()> {
    let parent = target.parent().expect("a run target has a parent");
    std::fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(
        ".{}.merge-{}",
        target.file_name().expect("a run target has a name").to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    copy_tree(run, &tmp)?;
    std::fs::rename(&tmp, target).with_context(|| format!("cannot move {} into place", target.display()))
}

/// Copies `from` into `to`, file by file, keeping files `to` has already.
fn copy_missing(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in sorted_entries(from)? {
        let target = to.join(entry.file_name().expect("a listed entry has a name"));
        let meta = std::fs::symlink_metadata(&entry)?;
        if meta.is_dir() {
            copy_missing(&entry, &target)?;
        } else if !target.exists() && meta.is_file() {
            std::fs::copy(&entry, &target).with_context(|| format!("cannot copy {}", entry.display()))?;
        }
    }
    Ok(())
}

/// Copies a tree: folders, files and symlinks (as links); anything else (sockets, FIFOs) is skipped.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in sorted_entries(from)? {
        let target = to.join(entry.file_name().expect("a listed entry has a name"));
        let meta = std::fs::symlink_metadata(&entry)?;
        if meta.is_dir() {
            copy_tree(&entry, &target)?;
        } else if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&entry)?, &target)?;
        } else if meta.is_file() {
            std::fs::copy(&entry, &target).with_context(|| format!("cannot copy {}", entry.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_reports::results::Verdict;
    use faultline_reports::seeds::{BuildIdentity, CampaignKind, SeedRow};

    /// A run folder with a results.json, and the seed row a campaign would have written for it.
    fn fake_run(store: &Path, seed_index: u64, verdict: Verdict, shard: Option<&str>) -> SeedRow {
        let seed = 100 + seed_index;
        let rel = format!("p/2026010{seed_index}T000000Z-seed{seed}");
        let dir = store.join(&rel);
        std::fs::create_dir_all(dir.join("nodes/n1")).unwrap();
        std::fs::write(dir.join("nodes/n1/node.log"), "a log line\n").unwrap();
        let results = serde_json::json!({
            "schema_version": 1, "faultline_version": "0", "verdict": verdict, "reason": "r", "plan": "p",
            "system": "reference", "seed": seed, "started_at": format!("2026-01-0{seed_index}T00:00:00Z"),
            "duration_ms": 1000, "store_dir": rel, "repro": "", "checks": [],
            "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0}
        });
        std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
        let row = SeedRow {
            campaign: "c".into(),
            kind: CampaignKind::Campaign,
            plan: "p".into(),
            plan_source: "p".into(),
            seed,
            seed_index,
            nodes: None,
            shard: shard.map(str::to_string),
            verdict,
            failing_check: (verdict != Verdict::Valid).then(|| "boot".to_string()),
            also_failing: Vec::new(),
            findings: Vec::new(),
            first_error: (verdict != Verdict::Valid).then(|| "n2 refused".to_string()),
            duration_ms: 1000,
            cpu_ms: None,
            store_dir: Some(rel),
            repro: format!("faultline run p --seed {seed}"),
            build: BuildIdentity::default(),
            reproducibility: None,
            reruns: Vec::new(),
            finished_at: format!("2026-01-0{seed_index}T00:00:01Z"),
        };
        seeds::append_seed(store, &row).unwrap();
        row
    }

    /// The runs table of a store's index.html.
    fn runs_table(store: &Path) -> String {
        let page = std::fs::read_to_string(store.join("index.html")).unwrap();
        page[page.find("<table id=\"runs\">").unwrap()..].to_string()
    }

    #[test]
    fn given_two_shard_stores_when_merged_should_hold_every_run_and_row_once_and_index_like_one_store() {
        let tmp = tempfile::tempdir().unwrap();
        let (one, two, whole, merged) = (
            tmp.path().join("one"),
            tmp.path().join("two"),
            tmp.path().join("whole"),
            tmp.path().join("merged"),
        );
        let mut rows = vec![
            fake_run(&one, 1, Verdict::Valid, Some("1/2")),
            fake_run(&two, 2, Verdict::Invalid, Some("2/2")),
            fake_run(&one, 3, Verdict::Valid, Some("1/2")),
        ];
        for i in [1, 2, 3] {
            fake_run(&whole, i, if i == 2 { Verdict::Invalid } else { Verdict::Valid }, None);
        }
        std::fs::create_dir_all(two.join("campaigns/c")).unwrap();
        std::fs::write(two.join("campaigns/c/campaign-shard2of2.json"), "{}").unwrap();
        faultline_reports::write_index(&whole).unwrap();

        let report = merge(&merged, &[one.clone(), two.clone()]).unwrap();
        assert_eq!((report.runs_copied, report.runs_present, report.rows), (3, 0, 3));
        assert_eq!(
            runs_table(&merged),
            runs_table(&whole),
            "the same index entries as one store"
        );
        assert!(merged.join("p/20260102T000000Z-seed102/nodes/n1/node.log").is_file());
        assert!(merged.join("campaigns/c/campaign-shard2of2.json").is_file());
        rows.sort_by(|a, b| a.finished_at.cmp(&b.finished_at));
        assert_eq!(seeds::read_seeds(&merged).unwrap().rows, rows);

        let again = merge(&merged, &[one, two, merged.clone()]).unwrap();
        assert_eq!(
            (again.runs_copied, again.runs_present, again.rows),
            (0, 3, 3),
            "merging is idempotent"
        );
        let leftovers: Vec<_> = std::fs::read_dir(merged.join("p"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "no temp folders: {leftovers:?}");
    }

    #[test]
    fn given_a_missing_store_when_merged_should_fail_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let err = merge(&tmp.path().join("out"), &[tmp.path().join("nope")]).unwrap_err();
        assert!(format!("{err:#}").contains("nope"), "{err:#}");
    }
}
