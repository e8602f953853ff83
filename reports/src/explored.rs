//! A campaign's behaviour log: `store/campaigns/<id>/behaviours.jsonl` (`behaviours-shard<I>of<N>.jsonl` for one
//! shard of N), one line per finished run, in the order runs finished: what it ran (plan, seed, and for a guided run
//! the corpus entries and mutations it came from), its verdict, how many distinct behaviours it showed, the ids of
//! those no earlier run of the campaign (shard) had shown, the campaign's cumulative count after it, and when (wall
//! time since the campaign started, over every invocation) and at what cost (the run's wall and CPU time).
//!
//! It is the source of truth of a campaign's exploration: the union of the lines' `new` ids is everything the
//! campaign has seen, so a resumed campaign rebuilds its corpus from it, `faultline analyze RUN` reads the run's
//! novelty from it, and the campaign view draws its curves (cumulative distinct behaviours over runs and over time)
//! from it. Shards keep their own logs (each shard its own corpus); the view joins a campaign's shards by the time
//! their runs finished.

use crate::error::ReportError;
use crate::results::Verdict;
use faultline_workloads::behaviour::{BehaviourId, Novelty, RunBehaviours, NEW_TEMPLATES_SHOWN_MAX};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The behaviour log's file name for a whole campaign.
pub const LOG_FILE: &str = "behaviours.jsonl";

/// How a campaign chose its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Each plan with fresh seeds (a swarm plan draws its configuration from the seed): blind.
    Uniform,
    /// Mutations and splices of the corpus, chosen by energy.
    Guided,
}

impl Mode {
    /// `uniform` or `guided`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Uniform => "uniform",
            Mode::Guided => "guided",
        }
    }
}

/// Where a guided run's configuration came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// The plan it ran as written (the guide runs each plan of the campaign once, first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_written: Option<String>,
    /// The corpus entry it mutated, by the run that found it; none for a plan as written or a mutation of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
    /// The entry it spliced with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub splice: Option<u64>,
    /// The mutations, in the order applied, for people (`interval x0.62 on process`, `dropped trigger 3 ...`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mutations: Vec<String>,
    /// The mutation operators applied (`faster`, `drop`, ...), whose weights the guide learns from what this run
    /// found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<String>,
}

/// One finished run of a campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExploredRun {
    /// Campaign id.
    pub campaign: String,
    /// `I/N` for a shard's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Position in the campaign (shard), 0-based, in the order runs were started.
    pub run: u64,
    /// How the campaign chose it.
    pub mode: Mode,
    /// Plan name.
    pub plan: String,
    /// The plan file it ran (a guided run's own plan, under the campaign folder) or a built-in name.
    pub plan_source: String,
    /// Run seed.
    pub seed: u64,
    /// The run folder, relative to the store root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_dir: Option<String>,
    /// Its verdict.
    pub verdict: Verdict,
    /// Whether it went to its end (not a harness error): a run that did not says nothing about its configuration.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Distinct behaviours it showed.
    pub distinct: u64,
    /// Those no earlier run of the campaign (shard) showed, in the order the run showed them.
    pub new: Vec<BehaviourId>,
    /// How many of `new` are of each kind (by kind name), so the campaign view compares guided and uniform kind by
    /// kind (logs written before it have none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub new_by_kind: BTreeMap<String, u64>,
    /// The campaign's distinct behaviours after this run.
    pub cumulative: u64,
    /// Wall time from the campaign's start to this run's end, over every invocation (a resumed campaign goes on
    /// from where it stopped).
    pub elapsed_ms: u64,
    /// The run's length (its history's, from start to end).
    pub wall_ms: u64,
    /// CPU time of the run and everything it waited for (its nodes, clients and tools), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    /// Where a guided run's configuration came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<Choice>,
    /// RFC 3339 UTC.
    pub finished_at: String,
}

fn yes() -> bool {
    true
}

/// The behaviour log of campaign `id` (or of one of its shards, `(index, count)`), under `store_root`.
pub fn log_path(store_root: &Path, id: &str, shard: Option<(u64, u64)>) -> PathBuf {
    let name = match shard {
        Some((index, count)) if count > 1 => format!("behaviours-shard{index}of{count}.jsonl"),
        _ => LOG_FILE.to_string(),
    };
    store_root.join("campaigns").join(id).join(name)
}

/// A behaviour log as read.
#[derive(Debug, Default)]
pub struct LogFile {
    /// Its runs, in file order.
    pub runs: Vec<ExploredRun>,
    /// Lines that are not a run (a torn last line): line number, why.
    pub bad_lines: Vec<(usize, String)>,
}

/// Reads a behaviour log; a missing file is an empty log.
pub fn read_log(path: &Path) -> Result<LogFile, ReportError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LogFile::default()),
        Err(e) => return Err(ReportError::io("read", path)(e)),
    };
    let mut file = LogFile::default();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str::<ExploredRun>(line) {
            Ok(run) => file.runs.push(run),
            Err(e) => file.bad_lines.push((i + 1, e.to_string())),
        }
    }
    Ok(file)
}

/// Appends one run to a behaviour log with a single write, and syncs it.
pub fn append(path: &Path, run: &ExploredRun) -> Result<(), ReportError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(ReportError::io("create", dir))?;
    }
    crate::seeds::append_line(path, serde_json::to_string(run).expect("a run line serializes"))
}

/// Every behaviour log of the store: campaign id -> its runs, every shard's, ordered by when they finished.
pub fn all_logs(store_root: &Path) -> BTreeMap<String, Vec<ExploredRun>> {
    let mut logs: BTreeMap<String, Vec<ExploredRun>> = BTreeMap::new();
    let Ok(campaigns) = std::fs::read_dir(store_root.join("campaigns")) else {
        return logs;
    };
    for campaign in campaigns.flatten() {
        let Ok(files) = std::fs::read_dir(campaign.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if name.starts_with("behaviours") && name.ends_with(".jsonl") {
                if let Ok(log) = read_log(&file.path()) {
                    let id = campaign.file_name().to_string_lossy().into_owned();
                    logs.entry(id).or_default().extend(log.runs);
                }
            }
        }
    }
    for runs in logs.values_mut() {
        runs.sort_by(|a, b| (&a.finished_at, &a.shard, a.run).cmp(&(&b.finished_at, &b.shard, b.run)));
    }
    logs
}

/// The campaign log line of the run stored at `store_dir` (relative to the store root), if a campaign recorded it.
pub fn logged_run(store_root: &Path, store_dir: &str) -> Option<ExploredRun> {
    all_logs(store_root)
        .into_values()
        .flatten()
        .find(|run| run.store_dir.as_deref() == Some(store_dir))
}

/// A run's novelty from its campaign log line: the line's new ids, by kind, with the new templates as text (from the
/// run's own behaviours).
pub fn novelty(line: &ExploredRun, behaviours: &RunBehaviours) -> Novelty {
    let new: HashSet<BehaviourId> = line.new.iter().copied().collect();
    let mut novelty = Novelty {
        campaign: line.campaign.clone(),
        run: line.run,
        new: line.new.len() as u64,
        ..Novelty::default()
    };
    for behaviour in behaviours.behaviours.iter().filter(|b| new.contains(&b.id)) {
        *novelty
            .new_by_kind
            .entry(behaviour.kind.as_str().to_string())
            .or_insert(0) += 1;
        let is_template = behaviour.kind == faultline_workloads::behaviour::BehaviourKind::Template;
        if is_template && novelty.new_templates.len() < NEW_TEMPLATES_SHOWN_MAX {
            novelty.new_templates.push(behaviour.text.clone());
        }
    }
    novelty
}

/// The union of the `new` ids of `runs`: everything they saw first.
pub fn seen(runs: &[ExploredRun]) -> HashSet<BehaviourId> {
    runs.iter().flat_map(|r| r.new.iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(run: u64, new: &[u64], finished_at: &str) -> ExploredRun {
        ExploredRun {
            campaign: "s1".into(),
            shard: None,
            run,
            mode: Mode::Guided,
            plan: "default".into(),
            plan_source: "default".into(),
            seed: 7,
            store_dir: Some(format!("default/run{run}")),
            verdict: Verdict::Valid,
            complete: true,
            distinct: 10,
            new: new.iter().map(|n| BehaviourId(*n)).collect(),
            new_by_kind: BTreeMap::new(),
            cumulative: 0,
            elapsed_ms: 1000 * run,
            wall_ms: 1000,
            cpu_ms: Some(400),
            choice: Some(Choice {
                as_written: None,
                parent: Some(0),
                splice: None,
                mutations: vec!["process interval x0.50".into()],
                operators: vec!["faster".into()],
            }),
            finished_at: finished_at.into(),
        }
    }

    #[test]
    fn given_a_log_with_a_torn_last_line_when_appended_and_read_should_keep_every_whole_line_and_name_the_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path(), "s1", None);
        append(&path, &line(0, &[1, 2], "2026-12-01T00:00:01Z")).unwrap();
        std::fs::write(
            &path,
            format!("{}{{\"campaign\":", std::fs::read_to_string(&path).unwrap()),
        )
        .unwrap();
        append(&path, &line(1, &[3], "2026-12-01T00:00:02Z")).unwrap();
        let log = read_log(&path).unwrap();
        assert_eq!(log.runs.iter().map(|r| r.run).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(log.bad_lines.len(), 1, "{:?}", log.bad_lines);
        assert_eq!(seen(&log.runs).len(), 3);
        assert_eq!(logged_run(dir.path(), "default/run1").map(|r| r.run), Some(1));
        assert_eq!(logged_run(dir.path(), "default/run9"), None);
    }

    #[test]
    fn given_shards_of_a_campaign_when_all_logs_are_read_should_join_them_by_finish_time() {
        let dir = tempfile::tempdir().unwrap();
        let shard = |i| log_path(dir.path(), "s1", Some((i, 2)));
        append(&shard(1), &line(0, &[1], "2026-12-01T00:00:03Z")).unwrap();
        append(&shard(2), &line(0, &[2], "2026-12-01T00:00:01Z")).unwrap();
        append(&shard(2), &line(1, &[3], "2026-12-01T00:00:05Z")).unwrap();
        let logs = all_logs(dir.path());
        let order: Vec<&str> = logs["s1"].iter().map(|r| r.finished_at.as_str()).collect();
        assert_eq!(
            order,
            vec!["2026-12-01T00:00:01Z", "2026-12-01T00:00:03Z", "2026-12-01T00:00:05Z"]
        );
    }
}
