//! Every campaign records what its runs explored, guided or not: after each finished seed it reads the run's
//! `behaviours.json`, sets apart the behaviours no earlier run of the campaign (shard) showed, appends a line to the
//! campaign's behaviour log ([`faultline_reports::explored`]), tells a guided campaign's guide, and writes the run's
//! novelty into its `results.json` and report. A uniform campaign thus has the same curve as a guided one, which is
//! what makes the two comparable.

use super::state::CampaignState;
use crate::explore::guide::Guide;
use anyhow::Context;
use faultline_reports::explored::{self, ExploredRun, Mode};
use faultline_reports::seeds::SeedRow;
use faultline_workloads::behaviour::{BehaviourId, RunBehaviours};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A campaign's recorder of behaviours (and its guide, when guided).
pub struct Recorder {
    log: PathBuf,
    campaign: String,
    shard: Option<String>,
    mode: Mode,
    seen: HashSet<BehaviourId>,
    started: Instant,
    spent_before_ms: u64,
    store_root: PathBuf,
    /// The guide of a guided campaign.
    pub guide: Option<Guide>,
}

impl Recorder {
    /// The recorder of `state`'s campaign: what its log has seen so far (a resumed campaign goes on from there) and,
    /// for a guided campaign, its guide with the corpus rebuilt.
    pub fn open(store_root: &Path, state: &CampaignState, guide: Option<Guide>) -> anyhow::Result<Recorder> {
        let shard = (!state.shard.is_whole()).then_some((state.shard.index, state.shard.count));
        let log = explored::log_path(store_root, &state.id, shard);
        let mode = if state.guided { Mode::Guided } else { Mode::Uniform };
        let mut recorder = Recorder::at(store_root, log, &state.id, mode, state.spent_ms, guide)?;
        recorder.shard = shard.map(|(i, n)| format!("{i}/{n}"));
        Ok(recorder)
    }

    /// A recorder that keeps its log at `log` (a measurement's campaigns keep theirs beside its results), going on
    /// from what the log has; `spent_before_ms` is the campaign's time in earlier invocations.
    pub fn at(
        store_root: &Path,
        log: PathBuf,
        campaign: &str,
        mode: Mode,
        spent_before_ms: u64,
        guide: Option<Guide>,
    ) -> anyhow::Result<Recorder> {
        let file = explored::read_log(&log)?;
        if let Some((line, why)) = file.bad_lines.first() {
            tracing::warn!(
                "{}: {} unreadable line(s) skipped (line {line}: {why}); their runs' behaviours count as unseen",
                log.display(),
                file.bad_lines.len()
            );
        }
        let runs = file.runs;
        let mut guide = guide;
        if let Some(guide) = guide.as_mut() {
            guide.resume(&runs, store_root);
        }
        Ok(Recorder {
            log,
            campaign: campaign.to_string(),
            shard: None,
            mode,
            seen: explored::seen(&runs),
            started: Instant::now(),
            spent_before_ms,
            store_root: store_root.to_path_buf(),
            guide,
        })
    }

    /// Distinct behaviours the campaign has seen.
    pub fn seen(&self) -> usize {
        self.seen.len()
    }

    /// Records a finished seed: its line in the behaviour log, the guide's corpus, the run's novelty.
    pub fn record(&mut self, row: &SeedRow) -> anyhow::Result<ExploredRun> {
        let run_dir = row.store_dir.as_ref().map(|dir| self.store_root.join(dir));
        let behaviours = run_dir.as_ref().and_then(|dir| read_behaviours(dir));
        let shown = behaviours.as_ref().map_or(&[][..], |b| &b.behaviours[..]);
        let mut new: Vec<BehaviourId> = Vec::new();
        let mut new_by_kind = std::collections::BTreeMap::new();
        for behaviour in shown.iter().filter(|b| !self.seen.contains(&b.id)) {
            new.push(behaviour.id);
            *new_by_kind.entry(behaviour.kind.as_str().to_string()).or_insert(0) += 1;
        }
        self.seen.extend(new.iter().copied());
        let complete = row.failing_check.as_deref() != Some("harness") && behaviours.is_some();
        let line = ExploredRun {
            campaign: self.campaign.clone(),
            shard: self.shard.clone(),
            run: row.seed_index,
            mode: self.mode,
            plan: row.plan.clone(),
            plan_source: row.plan_source.clone(),
            seed: row.seed,
            store_dir: row.store_dir.clone(),
            verdict: row.verdict,
            complete,
            distinct: shown.len() as u64,
            new: new.clone(),
            new_by_kind,
            cumulative: self.seen.len() as u64,
            elapsed_ms: self.spent_before_ms + self.started.elapsed().as_millis() as u64,
            wall_ms: row.duration_ms,
            cpu_ms: row.cpu_ms,
            choice: self.guide.as_ref().and_then(|g| g.choice_of(row.seed_index)),
            finished_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        };
        explored::append(&self.log, &line)
            .with_context(|| format!("recording run {} in {}", line.run, self.log.display()))?;
        if let Some(guide) = self.guide.as_mut() {
            // The guide learns from what a configuration steers (`guide::steers`); the log and curve count all.
            let (steering, steering_new) = behaviours
                .as_ref()
                .map(|b| crate::explore::guide::steering(b, &new))
                .unwrap_or_default();
            if let Some(behaviours) = &behaviours {
                guide.saw(row.seed_index, behaviours, run_dir.as_deref());
            }
            guide.observe(row.seed_index, &steering, &steering_new, complete);
            guide.save_corpus()?;
        }
        if let Some(dir) = run_dir.filter(|_| behaviours.is_some()) {
            if let Err(e) = crate::run::analyze::annotate_novelty(&dir) {
                tracing::warn!("{}: its novelty is not in its results.json: {e:#}", dir.display());
            }
        }
        Ok(line)
    }
}

/// A run folder's `behaviours.json`, if it has a readable one.
fn read_behaviours(run_dir: &Path) -> Option<RunBehaviours> {
    let bytes = std::fs::read(run_dir.join(crate::run::analyze::BEHAVIOURS_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_reports::results::Verdict;
    use faultline_workloads::behaviour::{Behaviour, BehaviourKind};

    /// A run folder `plan/run<i>` whose behaviours are the templates `t<n>` for `n` in `templates`, with a minimal
    /// results.json.
    fn fake_run(store: &Path, i: u64, templates: std::ops::Range<u64>) -> SeedRow {
        fake_run_of(store, i, BehaviourKind::Template, templates)
    }

    /// [`fake_run`] with behaviours of `kind`.
    fn fake_run_of(store: &Path, i: u64, kind: BehaviourKind, numbers: std::ops::Range<u64>) -> SeedRow {
        let dir = store.join("default").join(format!("run{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let behaviours = RunBehaviours {
            version: 1,
            behaviours: numbers
                .map(|n| {
                    let text = format!("t{n}");
                    Behaviour {
                        id: BehaviourId::of(kind, &text),
                        kind,
                        text,
                        first_ms: n,
                    }
                })
                .collect(),
            dropped: 0,
            template_uses: Default::default(),
        };
        std::fs::write(dir.join("behaviours.json"), serde_json::to_vec(&behaviours).unwrap()).unwrap();
        let results = serde_json::json!({"schema_version": 1, "faultline_version": "t", "verdict": "valid",
            "reason": "", "plan": "default", "system": "reference", "seed": i, "started_at": "", "duration_ms": 1000,
            "store_dir": "", "repro": "", "checks": [], "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0,
            "open": 0, "nemesis": 0, "lifecycle": 0}});
        std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
        serde_json::from_value(serde_json::json!({
            "campaign": "c1", "plan": "default", "plan_source": "default", "seed": i, "seed_index": i,
            "verdict": "valid", "duration_ms": 1000, "cpu_ms": 300, "store_dir": format!("default/run{i}"),
            "repro": "", "finished_at": "2026-12-01T00:00:00Z"}))
        .unwrap()
    }

    #[test]
    fn given_runs_of_a_campaign_when_recorded_should_log_what_each_found_first_and_put_its_novelty_in_its_results() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path();
        let log = store.join("campaigns/c1").join(explored::LOG_FILE);
        let mut recorder = Recorder::at(store, log.clone(), "c1", Mode::Uniform, 0, None).unwrap();
        let first = recorder.record(&fake_run(store, 0, 0..10)).unwrap();
        let second = recorder.record(&fake_run(store, 1, 5..12)).unwrap();
        assert_eq!((first.new.len(), first.cumulative), (10, 10));
        assert_eq!((second.distinct, second.new.len(), second.cumulative), (7, 2, 12));
        assert_eq!(second.cpu_ms, Some(300));
        assert!(second.complete && second.verdict == Verdict::Valid);
        let results: serde_json::Value =
            serde_json::from_slice(&std::fs::read(store.join("default/run1/results.json")).unwrap()).unwrap();
        let novelty = &results["behaviours"]["novelty"];
        assert_eq!(novelty["campaign"], "c1");
        assert_eq!(novelty["new"], 2);
        assert_eq!(novelty["new_templates"], serde_json::json!(["t10", "t11"]));
        // A recorder reopened on the log (a resumed campaign) goes on from what it has seen.
        let mut reopened = Recorder::at(store, log, "c1", Mode::Uniform, 5_000, None).unwrap();
        assert_eq!(reopened.seen(), 12);
        let third = reopened.record(&fake_run(store, 2, 0..13)).unwrap();
        assert_eq!((third.new.len(), third.cumulative), (1, 13));
        assert!(third.elapsed_ms >= 5_000, "time goes on from the earlier invocations");
    }

    #[test]
    fn given_a_run_without_behaviours_when_recorded_should_count_it_incomplete_and_find_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("campaigns/c1").join(explored::LOG_FILE);
        let mut recorder = Recorder::at(dir.path(), log, "c1", Mode::Guided, 0, None).unwrap();
        let mut row = fake_run(dir.path(), 0, 0..3);
        row.store_dir = None;
        row.failing_check = Some("harness".into());
        let line = recorder.record(&row).unwrap();
        assert!(!line.complete);
        assert_eq!((line.distinct, line.new.len(), line.cumulative), (0, 0, 0));
    }

    #[test]
    fn given_a_guided_run_that_found_only_new_pairs_when_recorded_should_log_them_but_give_the_guide_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path();
        let log = store.join("campaigns/c1").join(explored::LOG_FILE);
        let plans = vec![crate::plan::builtin::load("default").unwrap()];
        let mut guide = Guide::new(plans, store.join("campaigns/c1/guide"), "c1", 7);
        for run in 0..3 {
            guide.choose(run).unwrap();
        }
        let mut recorder = Recorder::at(store, log, "c1", Mode::Guided, 0, Some(guide)).unwrap();
        recorder
            .record(&fake_run_of(store, 0, BehaviourKind::ContextLine, 0..100))
            .unwrap();
        let corpus = |recorder: &Recorder| recorder.guide.as_ref().unwrap().energies().len();
        let seeds_only = corpus(&recorder);
        // Run 1 finds 500 pairs no run showed, and nothing else new: the campaign counts them, the guide does not.
        let pairs = recorder
            .record(&fake_run_of(store, 1, BehaviourKind::Pair, 0..500))
            .unwrap();
        assert_eq!((pairs.new.len(), pairs.cumulative), (500, 600));
        assert_eq!(pairs.new_by_kind, [("pair".to_string(), 500)].into_iter().collect());
        assert_eq!(corpus(&recorder), seeds_only, "new pairs alone earn no corpus entry");
        // Run 2 finds 10 new context lines: an entry.
        recorder
            .record(&fake_run_of(store, 2, BehaviourKind::ContextLine, 95..110))
            .unwrap();
        assert_eq!(corpus(&recorder), seeds_only + 1, "what the faults steer does");
    }
}
