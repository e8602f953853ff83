//! A campaign's state, `store/campaigns/<id>/campaign.json` (`campaign-shard<I>of<N>.json` for one shard of N): what
//! it runs (plans, campaign seed, seed count or budget, options) and how far it got. What is *done* is not kept here
//! but in `store/seeds.jsonl` (rows tagged with the campaign id), so a campaign killed at any point resumes from what
//! the seed database says finished, and nothing half-done is ever counted as done.

use super::space::Shard;
use anyhow::Context;
use faultline_faults::units::Millis;
use faultline_reports::seeds::CampaignKind;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where a campaign stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Running, or killed without a chance to say otherwise.
    Running,
    /// Stopped by SIGINT/SIGTERM; `--resume` continues it.
    Interrupted,
    /// Stopped launching after the first failure (`--stop-on-fail`).
    StoppedOnFail,
    /// The wall-clock budget ran out.
    BudgetSpent,
    /// Every seed ran.
    Finished,
}

/// A plan as a campaign names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSource {
    /// As given on the command line: a file path or a built-in plan's name (repro commands use it).
    pub source: String,
    /// The file's absolute path when `source` is a file (what runs use, so `--resume` works from anywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
}

impl PlanSource {
    /// Resolves `source`: an existing file (made absolute) or a built-in name.
    pub fn resolve(source: &str) -> PlanSource {
        let path = Path::new(source);
        let path = path
            .is_file()
            .then(|| path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
        PlanSource {
            source: source.to_string(),
            path,
        }
    }

    /// The argument `faultline run` gets.
    pub fn run_arg(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => self.source.clone(),
        }
    }
}

/// Everything a campaign needs to run and resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignState {
    /// Campaign id (tags its rows in `seeds.jsonl`).
    pub id: String,
    /// Campaign or certification.
    pub kind: CampaignKind,
    /// Every run seed derives from this.
    pub campaign_seed: u64,
    /// The plans, in order.
    pub plans: Vec<PlanSource>,
    /// Seeds per plan; none: until the budget runs out.
    pub seeds: Option<u64>,
    /// Wall-clock budget over all invocations (a resumed campaign gets what is left).
    pub budget: Option<Millis>,
    /// Wall-clock time spent by earlier invocations.
    pub spent_ms: u64,
    /// Fault-phase override for every run.
    pub time_limit: Option<Millis>,
    /// Reruns of a failing seed.
    pub retry_failed: u64,
    /// Stop launching after the first failure.
    pub stop_on_fail: bool,
    /// Concurrent runs.
    pub parallel: usize,
    /// This campaign's part of the seed space.
    pub shard: Shard,
    /// The system's git revision, recorded with every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_rev: Option<String>,
    /// Retention: passing runs kept per plan (older ones are pruned at the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_passing: Option<u64>,
    /// Each run a mutation of the corpus chosen by the guide (`--guided`) instead of the plans with fresh seeds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guided: bool,
    /// A guided campaign's shots (`--shots`).
    #[serde(default, skip_serializing_if = "is_default_shots")]
    pub shots: crate::explore::guide::moments::ShotMode,
    /// First start, RFC 3339 UTC.
    pub started_at: String,
    /// Last update, RFC 3339 UTC.
    pub updated_at: String,
    /// Where it stands.
    pub status: Status,
}

fn is_default_shots(mode: &crate::explore::guide::moments::ShotMode) -> bool {
    *mode == crate::explore::guide::moments::ShotMode::default()
}

/// `store/campaigns`.
pub fn campaigns_dir(store_root: &Path) -> PathBuf {
    store_root.join("campaigns")
}

/// The state file of campaign `id`, shard `shard`.
pub fn state_path(store_root: &Path, id: &str, shard: Shard) -> PathBuf {
    let name = if shard.is_whole() {
        "campaign.json".to_string()
    } else {
        format!("campaign-shard{}of{}.json", shard.index, shard.count)
    };
    campaigns_dir(store_root).join(id).join(name)
}

impl CampaignState {
    /// Writes the state file atomically.
    pub fn save(&self, store_root: &Path) -> anyhow::Result<PathBuf> {
        let path = state_path(store_root, &self.id, self.shard);
        std::fs::create_dir_all(path.parent().expect("a state path has a parent"))
            .with_context(|| format!("cannot create {}", path.display()))?;
        faultline_reports::write_atomic(&path, &serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// Reads a state file.
    pub fn load(path: &Path) -> anyhow::Result<CampaignState> {
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&bytes).with_context(|| format!("{} is not a campaign state", path.display()))
    }
}

/// Every state file of the store, newest (last modified) first.
pub fn all_states(store_root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let Ok(ids) = std::fs::read_dir(campaigns_dir(store_root)) else {
        return Vec::new();
    };
    for id in ids.flatten() {
        let Ok(files) = std::fs::read_dir(id.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.starts_with("campaign") && name.ends_with(".json") {
                let modified = file
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                found.push((modified, file.path()));
            }
        }
    }
    found.sort_by(|a, b| b.cmp(a));
    found.into_iter().map(|(_, path)| path).collect()
}

/// The state to resume: campaign `id` (its only state file, or the one of `shard`), or without an id the most
/// recently updated campaign that did not finish.
pub fn find_resumable(store_root: &Path, id: Option<&str>, shard: Option<Shard>) -> anyhow::Result<CampaignState> {
    let states = all_states(store_root);
    let mut candidates = Vec::new();
    for path in &states {
        let state = CampaignState::load(path)?;
        let id_ok = id.is_none_or(|id| state.id == id);
        let shard_ok = shard.is_none_or(|s| state.shard == s);
        if id_ok && shard_ok && (id.is_some() || state.status != Status::Finished) {
            candidates.push(state);
        }
    }
    match (candidates.len(), id) {
        (0, Some(id)) => anyhow::bail!(
            "no campaign `{id}`{} in {}",
            shard.map(|s| format!(" shard {s}")).unwrap_or_default(),
            campaigns_dir(store_root).display()
        ),
        (0, None) => anyhow::bail!(
            "no unfinished campaign in {} to resume",
            campaigns_dir(store_root).display()
        ),
        (1, _) | (_, None) => Ok(candidates.remove(0)),
        (_, Some(id)) => anyhow::bail!(
            "campaign `{id}` has several shards in this store ({}); say which with --shard I/N",
            candidates
                .iter()
                .map(|s| s.shard.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `base`, or `base-2`, `base-3`, ... : the first id whose state file for `shard` does not exist yet.
pub fn fresh_id(store_root: &Path, base: &str, shard: Shard) -> String {
    const SUFFIXES_MAX: u32 = 10_000;
    for n in 1..SUFFIXES_MAX {
        let id = if n == 1 {
            base.to_string()
        } else {
            format!("{base}-{n}")
        };
        if !state_path(store_root, &id, shard).exists() {
            return id;
        }
    }
    format!("{base}-{}", rand::random::<u32>())
}
