//! `store/seeds.jsonl`: the seed database. One JSON object per line, one line per finished (plan, seed) of a campaign
//! or certification: the verdict, the failing check and its first error line, every finding of the run (see
//! [`crate::triage`]), the duration, the system build that ran, the repro command and what reruns of a failing seed
//! said.
//!
//! Failures are grouped into classes by their findings' signatures (system, check, kind, masked key line), across
//! plans: the same stale read under two plans is one class, and a run that shows three bugs is in three classes. A
//! row recorded before findings existed has none; its class is its [`FailureKey`]: (plan, failing check, first error
//! line with numbers, hex and paths normalized), so "n2 booted on a WAL refused at offset 4517 in /tmp/x/wal" and the
//! same failure at another offset in another folder are one class, as they always were. A class is `new` in a
//! campaign when no earlier campaign's row has it.
//!
//! Lines are appended with one `write` each (O_APPEND), so a crash leaves at worst one torn last line; readers skip
//! lines they cannot parse and say how many.

use crate::error::ReportError;
use crate::results::{Results, Verdict};
use crate::triage::{ClassKey, Finding};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

/// The seed database's file name under the store root.
pub const SEEDS_FILE: &str = "seeds.jsonl";

/// What produced a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CampaignKind {
    /// `faultline campaign`: plans x seeds, reruns of failures.
    #[default]
    Campaign,
    /// `faultline certify`: a fixed matrix that must be fully valid.
    Certify,
}

/// Which build of the system (and of faultline) ran a seed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildIdentity {
    /// The node binary's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_binary: Option<String>,
    /// xxh3-128 of the node binary, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_xxh3: Option<String>,
    /// xxh3-128 of the faultline binary, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faultline_xxh3: Option<String>,
    /// The system's git revision, when the campaign was told it (`--git-rev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_rev: Option<String>,
}

impl BuildIdentity {
    /// A short label: the git revision when known, else the first 12 hex digits of the node binary's hash.
    pub fn label(&self) -> String {
        match (&self.git_rev, &self.node_xxh3) {
            (Some(rev), _) => rev.chars().take(12).collect(),
            (None, Some(hash)) => hash.chars().take(12).collect(),
            (None, None) => "?".to_string(),
        }
    }
}

/// What reruns of a failing seed said. Real processes are not deterministic: a seed fixes the workload and the fault
/// schedule, not thread interleavings or timing, so a failure may not come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reproducibility {
    /// A rerun failed the same check with the same verdict again.
    Reproducible,
    /// No rerun failed the same check again.
    Flaky,
}

impl std::fmt::Display for Reproducibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reproducibility::Reproducible => "reproducible",
            Reproducibility::Flaky => "flaky",
        })
    }
}

/// One rerun of a failing seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rerun {
    /// Its verdict.
    pub verdict: Verdict,
    /// Every check with that verdict, when not valid (a rerun reproduces the failure when the first run's failing
    /// check is among them: the order in which checks report is not a property of the bug).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_checks: Vec<String>,
    /// Its length.
    pub duration_ms: u64,
    /// Its run folder, relative to the store root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_dir: Option<String>,
    /// The ids of the failure classes it showed (none for a valid rerun, and for reruns recorded before findings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<String>,
}

/// One finished (plan, seed) of a campaign: a line of `seeds.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRow {
    /// The campaign (or certification) id.
    pub campaign: String,
    /// Campaign or certification.
    #[serde(default)]
    pub kind: CampaignKind,
    /// Plan name.
    pub plan: String,
    /// The plan as the campaign was given it: a file path or a built-in plan's name.
    pub plan_source: String,
    /// The run seed.
    pub seed: u64,
    /// Position of the seed in the campaign's seed sequence (seeds derive from the campaign seed by index).
    pub seed_index: u64,
    /// Node-count override of the plan (certification matrices), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    /// `I/N` when the campaign ran as one shard of N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The first run's verdict (a harness error is `unknown` with failing check `harness`).
    pub verdict: Verdict,
    /// The check whose verdict made the run's verdict, when not valid: the one with the most severe findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_check: Option<String>,
    /// The first line of that check's reason (or of the harness error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// The other checks that failed in the first run (a boot refusal behind a stale read is the real finding).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_failing: Vec<String>,
    /// Every finding of the first run, most severe first (empty for a valid run, and for rows recorded before
    /// findings existed: those classify by their [`FailureKey`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Length of the first run.
    pub duration_ms: u64,
    /// CPU time of the first run and everything it waited for (its nodes, clients and tools), when the campaign
    /// measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms: Option<u64>,
    /// The first run's folder, relative to the store root (none when the harness failed before creating it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_dir: Option<String>,
    /// A command that runs this seed again.
    pub repro: String,
    /// The build that ran.
    #[serde(default)]
    pub build: BuildIdentity,
    /// For a failure that was rerun: whether a rerun failed the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproducibility: Option<Reproducibility>,
    /// The reruns of a failure, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<Rerun>,
    /// When the row was recorded, RFC 3339 UTC (orders campaigns).
    pub finished_at: String,
}

impl SeedRow {
    /// Every check that failed in the first run, the one that made the verdict first.
    pub fn failing_checks(&self) -> impl Iterator<Item = &String> {
        self.failing_check.iter().chain(self.also_failing.iter())
    }

    /// The failing checks as one cell: `set +boot +liveness`.
    pub fn checks_text(&self) -> String {
        let mut text = self.failing_check.clone().unwrap_or_else(|| "-".into());
        for other in &self.also_failing {
            text.push_str(" +");
            text.push_str(other);
        }
        text
    }

    /// The failure class key, for a row that is not valid.
    pub fn failure_key(&self) -> Option<FailureKey> {
        if self.verdict == Verdict::Valid {
            return None;
        }
        Some(FailureKey {
            plan: self.plan.clone(),
            check: self.failing_check.clone().unwrap_or_else(|| "?".into()),
            line: normalize_error_line(self.first_error.as_deref().unwrap_or("")),
        })
    }

    /// The failure classes the row shows: one per distinct signature of its findings that follows from no other,
    /// or, for a failing row recorded before findings existed, its [`FailureKey`]. None for a valid row.
    pub fn class_keys(&self) -> Vec<ClassKey> {
        if self.verdict == Verdict::Valid {
            return Vec::new();
        }
        if self.findings.is_empty() {
            return self.failure_key().map(ClassKey::Legacy).into_iter().collect();
        }
        // A consequence is shown under its cause, not as a class ([`crate::triage::folds`]).
        let mut keys: Vec<ClassKey> = self
            .findings
            .iter()
            .filter(|f| f.cause.is_none())
            .map(|f| ClassKey::Signature(f.signature.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Identifies the work item a row finishes within its campaign (resume skips these).
    pub fn cell(&self) -> (String, u64, Option<u64>) {
        (self.plan.clone(), self.seed_index, self.nodes)
    }
}

/// Every check whose verdict is the run's (non-valid) verdict, in check order.
pub fn failing_checks(results: &Results) -> Vec<String> {
    if results.verdict == Verdict::Valid {
        return Vec::new();
    }
    results
        .checks
        .iter()
        .filter(|c| c.verdict == results.verdict)
        .map(|c| c.name.clone())
        .collect()
}

/// The run's headline check (among those with its verdict, the one with the most severe findings; see
/// [`crate::triage::headline_check`]) and the first line of its reason; none for a valid run.
pub fn failure_of(results: &Results) -> Option<(String, String)> {
    let check = crate::triage::headline_check(&results.system, results.verdict, &results.checks)?;
    let line = check.reason.lines().next().unwrap_or("").to_string();
    Some((check.name.clone(), line))
}

/// The failure class of a row recorded before findings existed: same plan, same failing check, same normalized first
/// error line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FailureKey {
    /// Plan name.
    pub plan: String,
    /// Failing check.
    pub check: String,
    /// First error line, normalized by [`normalize_error_line`].
    pub line: String,
}

/// Whether a failure class was seen in an earlier campaign, and whether it still shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureClass {
    /// No earlier campaign had it.
    New,
    /// An earlier campaign had it.
    Known,
    /// An earlier campaign had it and this one, which ran a plan that showed it, did not (only a class is gone: a
    /// row is new or known).
    Gone,
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailureClass::New => "new",
            FailureClass::Known => "known",
            FailureClass::Gone => "gone",
        })
    }
}

/// Normalizes an error line so that the same failure in another run reads the same: the first line only, paths ->
/// `P`, hex numbers (`0x..`, or runs of 4+ hex digits mixing digits and letters, e.g. checksums) -> `X`, decimal
/// numbers -> `N`, whitespace collapsed.
pub fn normalize_error_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    line.split_whitespace()
        .map(normalize_word)
        .collect::<Vec<_>>()
        .join(" ")
}

fn normalize_word(word: &str) -> String {
    const OPENERS: &[char] = &['(', '[', '{', '"', '\'', '<', '`', '='];
    const CLOSERS: &[char] = &[')', ']', '}', '"', '\'', '>', '`', ',', ';', ':', '.'];
    let core_start = word.len() - word.trim_start_matches(OPENERS).len();
    let core_end = word.trim_end_matches(CLOSERS).len().max(core_start);
    let core = &word[core_start..core_end];
    if core.contains('/') && core.chars().any(|c| c.is_ascii_alphabetic()) {
        return format!("{}P{}", &word[..core_start], &word[core_end..]);
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while !rest.is_empty() {
        let run_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if run_len == 0 {
            let c = rest.chars().next().expect("rest is not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        out.push_str(&normalize_run(&rest[..run_len]));
        rest = &rest[run_len..];
    }
    out
}

/// One alphanumeric run: a hex number becomes `X`, each decimal digit run `N`.
fn normalize_run(run: &str) -> String {
    if crate::triage::mask::is_hex_run(run) {
        return "X".to_string();
    }
    let mut out = String::with_capacity(run.len());
    let mut in_digits = false;
    for c in run.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// The rows of a seed database, and the lines that could not be read.
#[derive(Debug, Default)]
pub struct SeedsFile {
    /// Rows, in file order.
    pub rows: Vec<SeedRow>,
    /// (1-based line number, why) of every line that is not a row.
    pub bad_lines: Vec<(usize, String)>,
}

/// Reads `store_root/seeds.jsonl` (an absent file is an empty database).
pub fn read_seeds(store_root: &Path) -> Result<SeedsFile, ReportError> {
    let path = store_root.join(SEEDS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(SeedsFile::default()),
        Err(e) => return Err(ReportError::io("read", &path)(e)),
    };
    let mut file = SeedsFile::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<SeedRow>(line) {
            Ok(row) => file.rows.push(row),
            Err(e) => file.bad_lines.push((i + 1, e.to_string())),
        }
    }
    for row in &mut file.rows {
        backfill_findings(store_root, row);
    }
    Ok(file)
}

/// A failing row recorded before findings existed gets them from its run's `results.json`, when the run folder is
/// still in the store, so an upgraded store triages its old campaigns by bug too (the file is not rewritten). A row
/// whose run is gone keeps its legacy [`FailureKey`] class. A row recorded before [`crate::triage::folds`] gets its
/// findings folded the same way.
fn backfill_findings(store_root: &Path, row: &mut SeedRow) {
    // A row recorded before consequences were folded into their causes: folded again from its run, or from what
    // the row holds when the run is gone.
    let unfolded = row.findings.len() > 1 && row.findings.iter().all(|f| f.cause.is_none());
    if row.verdict == Verdict::Valid || !(row.findings.is_empty() || unfolded) {
        return;
    }
    if unfolded {
        crate::triage::folds::fold(None, &mut row.findings);
    }
    let Some(dir) = &row.store_dir else {
        return;
    };
    let run_dir = store_root.join(dir);
    let Ok(text) = std::fs::read_to_string(run_dir.join("results.json")) else {
        return;
    };
    if let Ok(mut results) = serde_json::from_str::<Results>(&text) {
        add_message_lines(&run_dir, &mut results);
        row.findings = crate::triage::findings(&results);
    }
}

/// A log-patterns hit recorded before hits kept their `next` line (a Rust panic's message) gets it from the node's
/// log in the run folder, so a panic found then keys the same as the same panic found now.
fn add_message_lines(run_dir: &Path, results: &mut Results) {
    let checks = results.checks.iter_mut().filter(|c| c.name == "log-patterns");
    for hit in checks.flat_map(|c| c.details.as_array_mut().into_iter().flatten()) {
        let (Some(node), Some(number)) = (hit["node"].as_str(), hit["line_number"].as_u64()) else {
            continue;
        };
        if hit.get("next").is_some() {
            continue;
        }
        let Ok(log) = std::fs::read_to_string(run_dir.join("nodes").join(node).join("node.log")) else {
            continue;
        };
        let log = faultline_workloads::checker::strip_ansi(&log);
        let mut lines = log.lines().skip(number.saturating_sub(1) as usize);
        let (Some(line), next) = (lines.next(), lines.next()) else {
            continue;
        };
        if let Some(next) = faultline_workloads::checker::message_line(line, next) {
            hit["next"] = next.into();
        }
    }
}

/// Appends one row to `store_root/seeds.jsonl` with a single write, and syncs it.
pub fn append_seed(store_root: &Path, row: &SeedRow) -> Result<(), ReportError> {
    let line = serde_json::to_string(row).expect("a seed row serializes");
    append_line(&store_root.join(SEEDS_FILE), line)
}

/// Appends `line` and a newline to the JSON-lines file `path` with a single write, and syncs it.
pub(crate) fn append_line(path: &Path, mut line: String) -> Result<(), ReportError> {
    line.push('\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(ReportError::io("open", path))?;
    // A torn last line (a crash mid-write) must not swallow this row too: start a fresh line.
    let len = file.metadata().map_err(ReportError::io("stat", path))?.len();
    let mut last = [b'\n'];
    if len > 0 {
        std::os::unix::fs::FileExt::read_at(&file, &mut last, len - 1).map_err(ReportError::io("read", path))?;
    }
    if last[0] != b'\n' {
        line.insert(0, '\n');
    }
    file.write_all(line.as_bytes())
        .map_err(ReportError::io("append to", path))?;
    file.sync_data().map_err(ReportError::io("sync", path))
}

/// Replaces `store_root/seeds.jsonl` with `rows`, atomically (used by `faultline merge`).
pub fn write_seeds(store_root: &Path, rows: &[SeedRow]) -> Result<(), ReportError> {
    let path = store_root.join(SEEDS_FILE);
    let mut text = String::new();
    for row in rows {
        text.push_str(&serde_json::to_string(row).expect("a seed row serializes"));
        text.push('\n');
    }
    crate::write_atomic(&path, text.as_bytes()).map_err(ReportError::io("write", &path))
}

/// Campaign ids, oldest first (by the first row each recorded).
pub fn campaign_order(rows: &[SeedRow]) -> Vec<String> {
    let mut first: BTreeMap<&str, &str> = BTreeMap::new();
    for row in rows {
        let at = first.entry(&row.campaign).or_insert(&row.finished_at);
        if row.finished_at.as_str() < *at {
            *at = &row.finished_at;
        }
    }
    let mut order: Vec<(&str, &str)> = first.into_iter().map(|(id, at)| (at, id)).collect();
    order.sort();
    order.into_iter().map(|(_, id)| id.to_string()).collect()
}

/// Classifies every failing row: `new` when one of its classes ([`SeedRow::class_keys`]) no campaign before its own
/// (in [`campaign_order`]) had, else `known`. Valid rows get `None`.
pub fn classify(rows: &[SeedRow]) -> Vec<Option<FailureClass>> {
    let order = campaign_order(rows);
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let keys: Vec<Vec<ClassKey>> = rows.iter().map(SeedRow::class_keys).collect();
    let mut first_seen: BTreeMap<&ClassKey, usize> = BTreeMap::new();
    for (row, keys) in rows.iter().zip(&keys) {
        let r = rank[row.campaign.as_str()];
        for key in keys {
            let seen = first_seen.entry(key).or_insert(r);
            *seen = (*seen).min(r);
        }
    }
    rows.iter()
        .zip(&keys)
        .map(|(row, keys)| {
            if row.verdict == Verdict::Valid {
                return None;
            }
            let own = rank[row.campaign.as_str()];
            let new = keys.iter().any(|key| first_seen[key] >= own);
            Some(if new { FailureClass::New } else { FailureClass::Known })
        })
        .collect()
}

/// Removes duplicate rows (the same campaign, plan, seed index and node count recorded twice, e.g. by merging a store
/// into itself), keeping the first; the result is ordered by `finished_at`.
pub fn dedupe(rows: Vec<SeedRow>) -> Vec<SeedRow> {
    let mut seen = BTreeSet::new();
    let mut kept: Vec<SeedRow> = rows
        .into_iter()
        .filter(|row| seen.insert((row.campaign.clone(), row.cell(), row.store_dir.clone())))
        .collect();
    kept.sort_by(|a, b| a.finished_at.cmp(&b.finished_at));
    kept
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A row of `campaign` for `plan` and seed index `index`, failing `check` with `error` when given.
    pub(crate) fn row(campaign: &str, at: &str, plan: &str, index: u64, failure: Option<(&str, &str)>) -> SeedRow {
        SeedRow {
            campaign: campaign.into(),
            kind: CampaignKind::Campaign,
            plan: plan.into(),
            plan_source: plan.into(),
            seed: 1000 + index,
            seed_index: index,
            nodes: None,
            shard: None,
            verdict: if failure.is_some() {
                Verdict::Invalid
            } else {
                Verdict::Valid
            },
            failing_check: failure.map(|(c, _)| c.to_string()),
            first_error: failure.map(|(_, e)| e.to_string()),
            also_failing: Vec::new(),
            findings: Vec::new(),
            duration_ms: 4000,
            cpu_ms: None,
            store_dir: Some(format!("{plan}/20260101T000000Z-seed{}", 1000 + index)),
            repro: format!("faultline run {plan} --seed {}", 1000 + index),
            build: BuildIdentity::default(),
            reproducibility: None,
            reruns: Vec::new(),
            finished_at: at.into(),
        }
    }

    #[test]
    fn given_error_lines_differing_in_numbers_hex_and_paths_when_normalized_should_be_equal() {
        let a = "n2 booted at 2.443s on a WAL that its own offline verification refused (wal \
                 /tmp/tmp.Wp4/s/canary/20261129T142912Z-seed1/nodes/n2/data/wal at offset 4517: expected \
                 2d1054cdb3a3c1700eb4ce1612ce59d3, actual 0xdeadBEEF)";
        let b = "n3 booted at 11.2s on a WAL that its own offline verification refused (wal \
                 /var/store/canary/20270101T000000Z-seed77/nodes/n3/data/wal at offset 81: expected \
                 f61e1f1b1f91ee2cb3420e962ca80544, actual 0x12)";
        assert_eq!(normalize_error_line(a), normalize_error_line(b));
        assert_eq!(
            normalize_error_line(a),
            "nN booted at N.Ns on a WAL that its own offline verification refused (wal P at offset N: expected X, \
             actual X)"
        );
    }

    #[test]
    fn given_words_and_fractions_when_normalized_should_keep_words_and_only_number_the_digits() {
        assert_eq!(
            normalize_error_line("deadline exceeded: 2/3 acked"),
            "deadline exceeded: N/N acked"
        );
        assert_eq!(
            normalize_error_line("a  b\nsecond line"),
            "a b",
            "first line, whitespace collapsed"
        );
        assert_ne!(
            normalize_error_line("lost 3 acknowledged writes"),
            normalize_error_line("lost 3 unacknowledged writes")
        );
    }

    #[test]
    fn given_a_failure_seen_in_an_earlier_campaign_when_classified_should_be_known_and_else_new() {
        let boot = Some(("boot", "n2 booted on a WAL refused at offset 4517"));
        let rows = vec![
            row("c1", "2026-01-01T00:00:01Z", "canary", 0, boot),
            row("c1", "2026-01-01T00:00:02Z", "default", 0, None),
            row(
                "c2",
                "2026-01-02T00:00:01Z",
                "canary",
                0,
                Some(("boot", "n3 booted on a WAL refused at offset 9")),
            ),
            row(
                "c2",
                "2026-01-02T00:00:02Z",
                "canary",
                1,
                Some(("liveness", "no write within 30000 ms")),
            ),
            row("c2", "2026-01-02T00:00:03Z", "default", 1, boot),
        ];
        let classes = classify(&rows);
        assert_eq!(
            classes,
            vec![
                Some(FailureClass::New),
                None,
                Some(FailureClass::Known),
                Some(FailureClass::New),
                Some(FailureClass::New), // the same line on another plan is another class
            ]
        );
        assert_eq!(campaign_order(&rows), vec!["c1".to_string(), "c2".to_string()]);
    }

    #[test]
    fn given_an_old_failing_row_whose_run_is_in_the_store_when_read_should_take_its_findings_from_results_json() {
        let dir = tempfile::tempdir().unwrap();
        let old = row(
            "c1",
            "2026-01-01T00:00:01Z",
            "default",
            0,
            Some(("liveness", "no write")),
        );
        assert!(old.findings.is_empty());
        let gone = row(
            "c1",
            "2026-01-01T00:00:02Z",
            "default",
            1,
            Some(("liveness", "no write")),
        );
        append_seed(dir.path(), &old).unwrap();
        append_seed(dir.path(), &gone).unwrap();
        let run = dir.path().join(old.store_dir.as_deref().unwrap());
        std::fs::create_dir_all(&run).unwrap();
        let results = serde_json::json!({"schema_version": 1, "faultline_version": "t", "verdict": "invalid",
            "reason": "no write", "plan": "default", "system": "reference", "seed": 1, "started_at": "",
            "duration_ms": 0, "store_dir": "", "repro": "",
            "checks": [{"name": "liveness", "verdict": "invalid",
                        "reason": "the cluster did not accept a write within 30000 ms after heal",
                        "details": {"timeout": {"after": "heal"}}},
                       {"name": "log-patterns", "verdict": "invalid", "reason": "n2 log line 2 matches",
                        "details": [{"node": "n2", "line_number": 2, "pattern": "panicked at",
                                     "line": "thread 'shard-0' panicked at core/x.rs:10:5:"}]}],
            "counts": {"invoke": 0, "ok": 0, "fail": 0, "info": 0, "open": 0, "nemesis": 0, "lifecycle": 0}});
        std::fs::write(run.join("results.json"), results.to_string()).unwrap();
        std::fs::create_dir_all(run.join("nodes/n2")).unwrap();
        let log = "starting\n\u{1b}[31mthread 'shard-0' panicked at core/x.rs:10:5:\u{1b}[0m\nboom at op 42\n";
        std::fs::write(run.join("nodes/n2/node.log"), log).unwrap();
        let read = read_seeds(dir.path()).unwrap();
        let checks: Vec<&str> = read.rows[0]
            .findings
            .iter()
            .map(|f| f.signature.check.as_str())
            .collect();
        assert_eq!(checks, ["liveness", "log-patterns"], "{:?}", read.rows[0]);
        let panic = &read.rows[0].findings[1].signature.key;
        assert!(
            panic.contains("x.rs:10") && panic.contains("boom at op N"),
            "the message line comes from the node's log, as a new run records it: {panic}"
        );
        assert!(
            read.rows[1].findings.is_empty(),
            "its run folder is gone: it keeps its old class"
        );
        let text = std::fs::read_to_string(dir.path().join(SEEDS_FILE)).unwrap();
        assert!(!text.contains("findings\":[{"), "the file is not rewritten: {text}");
    }

    #[test]
    fn given_rows_and_a_torn_line_when_written_and_read_should_round_trip_and_report_the_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let first = row("c1", "2026-01-01T00:00:01Z", "canary", 0, Some(("boot", "x")));
        append_seed(dir.path(), &first).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(SEEDS_FILE))
            .unwrap();
        file.write_all(b"{\"campaign\":\"c1\",\"pl").unwrap();
        let second = row("c1", "2026-01-01T00:00:02Z", "canary", 1, None);
        append_seed(dir.path(), &second).unwrap();
        let read = read_seeds(dir.path()).unwrap();
        assert_eq!(read.rows, vec![first, second], "a row after a torn line is intact");
        assert_eq!(read.bad_lines.len(), 1);
        assert_eq!(read.bad_lines[0].0, 2);
        assert!(read_seeds(&dir.path().join("none")).unwrap().rows.is_empty());
    }
}
