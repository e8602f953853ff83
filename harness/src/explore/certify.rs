//! `faultline certify --suite SUITE.yaml`: a fixed matrix (plans x node counts x seeds) that must be fully valid,
//! run like a campaign (same scheduler, no reruns: every cell counts as it ran) and reported as
//! `store/certify/<name>-<UTC time>/certification.{html,json}` and `junit.xml`, to attach to a release.
//!
//! A suite file (unknown fields are refused; errors carry file:line:column):
//! ```yaml
//! name: release                 # names the report folder
//! plans: [default, plans/reference-disk-surgery.yaml]   # built-in names, or files relative to the suite file
//! seeds: [1, 2, 3]              # or `seed_count: 5` (derived from `campaign_seed`, default 0)
//! nodes: [3, 5]                 # optional: every plan at each cluster size (default: the plan's own)
//! time_limit: 20s               # optional: fault-phase override for every cell
//! ```

use crate::explore::campaign::schedule::{self, Cell, Ending, PlanRef, Settings};
use crate::explore::campaign::space::{seed_at, Shard};
use crate::explore::campaign::state::PlanSource;
use crate::explore::campaign::{load_plan, CampaignError};
use crate::plan::{Bounded, PlanError, PlanName};
use anyhow::Context;
use faultline_faults::units::Millis;
use faultline_reports::certification::{Cell as CertCell, Certification, CERTIFICATION_SCHEMA_VERSION};
use faultline_reports::results::Verdict;
use faultline_reports::seeds::{self, CampaignKind, SeedRow};
use serde::Deserialize;
use serde_saphyr::{Location, Spanned};
use std::path::{Path, PathBuf};

/// The suite file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    name: PlanName,
    #[serde(default)]
    #[allow(dead_code)] // for people reading the suite
    description: Option<String>,
    plans: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    seeds: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    seed_count: Option<Spanned<Bounded<1, 100_000>>>,
    #[serde(default)]
    campaign_seed: Option<u64>,
    #[serde(default)]
    nodes: Option<Spanned<Vec<Bounded<1, 9>>>>,
    #[serde(default)]
    time_limit: Option<Millis>,
}

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Suite name.
    pub name: String,
    /// The suite file.
    pub file: PathBuf,
    /// xxh3-128 of the suite text, hex.
    pub digest: String,
    /// Plans, in order.
    pub plans: Vec<PlanSource>,
    /// Seeds, in order.
    pub seeds: Vec<u64>,
    /// Node counts (empty: each plan's own).
    pub nodes: Vec<u64>,
    /// Fault-phase override.
    pub time_limit: Option<Millis>,
}

fn error_at(origin: &str, location: Location, message: String) -> PlanError {
    PlanError {
        origin: origin.to_string(),
        line: location.line(),
        column: location.column(),
        message,
    }
}

/// Loads and validates a suite: every plan must load and run at every node count.
pub fn load_suite(path: &Path) -> Result<Suite, PlanError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| PlanError {
        origin: origin.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read the suite: {e}"),
    })?;
    // The plan parser's error shape (file:line:column and the first line of the message).
    let file: SuiteFile = serde_saphyr::from_str(&text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        let full = e.to_string();
        let first = full.lines().next().unwrap_or(&full).to_string();
        PlanError {
            origin: origin.clone(),
            line,
            column,
            message: first,
        }
    })?;
    let seeds = match (&file.seeds, &file.seed_count) {
        (Some(seeds), None) if !seeds.value.is_empty() => seeds.value.clone(),
        (Some(seeds), None) => return Err(error_at(&origin, seeds.referenced, "`seeds` is empty".into())),
        (None, Some(count)) => (0..count.value.0)
            .map(|i| seed_at(file.campaign_seed.unwrap_or(0), i))
            .collect(),
        (Some(seeds), Some(_)) => {
            return Err(error_at(
                &origin,
                seeds.referenced,
                "give `seeds: [..]` or `seed_count: N`, not both".into(),
            ))
        }
        (None, None) => {
            return Err(PlanError {
                origin,
                line: 0,
                column: 0,
                message: "the suite needs `seeds: [1, 2, ..]` or `seed_count: N`".into(),
            })
        }
    };
    if file.plans.value.is_empty() {
        return Err(error_at(&origin, file.plans.referenced, "`plans` is empty".into()));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let nodes: Vec<u64> = file
        .nodes
        .as_ref()
        .map(|n| n.value.iter().map(|b| b.0).collect())
        .unwrap_or_default();
    let mut plans = Vec::new();
    for entry in &file.plans.value {
        let source = resolve_plan(base, &entry.value);
        let at = |e: PlanError| error_at(&origin, entry.referenced, format!("plan `{}`: {e}", entry.value));
        load_plan(&source, file.time_limit, None).map_err(at)?;
        for &n in &nodes {
            let location = file.nodes.as_ref().map(|n| n.referenced).unwrap_or(entry.referenced);
            load_plan(&source, file.time_limit, Some(n)).map_err(|e| {
                error_at(
                    &origin,
                    location,
                    format!("plan `{}` cannot run on {n} node(s): {e}", entry.value),
                )
            })?;
        }
        plans.push(source);
    }
    Ok(Suite {
        name: file.name.0,
        file: path.to_path_buf(),
        digest: format!("{:032x}", xxhash_rust::xxh3::xxh3_128(text.as_bytes())),
        plans,
        seeds,
        nodes,
        time_limit: file.time_limit,
    })
}

/// A suite's plan: a file relative to the suite's folder, or a built-in name.
fn resolve_plan(base: &Path, name: &str) -> PlanSource {
    let relative = base.join(name);
    if relative.is_file() {
        let mut source = PlanSource::resolve(&relative.display().to_string());
        source.source = name.to_string();
        return source;
    }
    PlanSource::resolve(name)
}

/// What `faultline certify` was asked.
pub struct CertifyOptions {
    /// The suite file.
    pub suite: PathBuf,
    /// Store root.
    pub store_root: PathBuf,
    /// Concurrent runs.
    pub parallel: usize,
    /// The system's git revision.
    pub git_rev: Option<String>,
    /// No progress view.
    pub quiet: bool,
}

/// What a certification did.
pub struct CertifyOutcome {
    /// The report.
    pub certification: Certification,
    /// Its folder.
    pub dir: PathBuf,
    /// Interrupted.
    pub interrupted: bool,
}

impl CertifyOutcome {
    /// 0 certified; 130 interrupted; 1 a cell invalid; 2 otherwise (a cell unknown).
    pub fn exit_code(&self) -> u8 {
        if self.certification.certified {
            0
        } else if self.interrupted {
            crate::explore::campaign::summary::EXIT_INTERRUPTED
        } else if self.certification.counts().1 > 0 {
            1
        } else {
            2
        }
    }
}

/// Runs every cell of a suite and writes the certification report.
pub fn certify(options: &CertifyOptions) -> Result<CertifyOutcome, CampaignError> {
    let suite = load_suite(&options.suite)?;
    let started_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp: String = started_at.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let id = format!("{}-{stamp}", suite.name);
    let mut plans = Vec::new();
    for source in &suite.plans {
        let plan = load_plan(source, suite.time_limit, None)?;
        plans.push(PlanRef {
            name: plan.name.0.clone(),
            label: plan.name.0.clone(),
            source: source.clone(),
            time_limit_ms: plan.time_limit.0,
        });
    }
    let cells = matrix(&suite, plans.len());
    let dir = options.store_root.join("certify").join(&id);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let settings = Settings {
        command: "certify",
        id: id.clone(),
        kind: CampaignKind::Certify,
        store_root: options.store_root.clone(),
        log_dir: dir.join("logs"),
        parallel: options.parallel.max(1),
        retry_failed: 0,
        stop_on_fail: false,
        deadline: None,
        time_limit: suite.time_limit,
        shard: Shard::ALL,
        git_rev: options.git_rev.clone(),
        quiet: options.quiet,
        title: format!("certify {}", suite.name),
        total: Some(cells.len() as u64),
        run_args: Vec::new(),
    };
    schedule::install_stop_signals();
    let mut rows: Vec<SeedRow> = Vec::new();
    let store_root = options.store_root.clone();
    let ending = schedule::execute(&settings, &plans, cells.clone().into_iter(), &mut |row| {
        seeds::append_seed(&store_root, row).context("recording a seed in seeds.jsonl")?;
        rows.push(row.clone());
        Ok(())
    })?;
    let certification = report(&suite, &id, started_at, &plans, &cells, &rows);
    let json = serde_json::to_vec_pretty(&certification).context("serializing the certification")?;
    let write = |name: &str, bytes: &[u8]| {
        faultline_reports::write_atomic(&dir.join(name), bytes).with_context(|| format!("cannot write {name}"))
    };
    write("certification.json", &json)?;
    write("certification.html", certification.render_html().as_bytes())?;
    write("junit.xml", certification.render_junit().as_bytes())?;
    faultline_reports::write_index(&options.store_root).map_err(anyhow::Error::from)?;
    Ok(CertifyOutcome {
        certification,
        dir,
        interrupted: ending == Ending::Interrupted,
    })
}

/// Every cell: for each plan, each node count, each seed.
fn matrix(suite: &Suite, plan_count: usize) -> Vec<Cell> {
    let node_counts: Vec<Option<u64>> = if suite.nodes.is_empty() {
        vec![None]
    } else {
        suite.nodes.iter().map(|&n| Some(n)).collect()
    };
    let mut cells = Vec::new();
    for plan in 0..plan_count {
        for &nodes in &node_counts {
            for (seed_index, &seed) in suite.seeds.iter().enumerate() {
                cells.push(Cell {
                    plan,
                    seed_index: seed_index as u64,
                    seed,
                    nodes,
                    plan_file: None,
                });
            }
        }
    }
    cells
}

fn report(
    suite: &Suite,
    id: &str,
    started_at: String,
    plans: &[PlanRef],
    cells: &[Cell],
    rows: &[SeedRow],
) -> Certification {
    let cert_cells: Vec<CertCell> = cells
        .iter()
        .map(|cell| {
            let plan = &plans[cell.plan];
            let row = rows
                .iter()
                .find(|r| r.plan == plan.name && r.seed_index == cell.seed_index && r.nodes == cell.nodes);
            let node_count = cell
                .nodes
                .unwrap_or_else(|| load_plan(&plan.source, None, None).map_or(0, |p| p.system.nodes() as u64));
            let reason = match row {
                Some(r) if r.verdict == Verdict::Valid => "every check passed".to_string(),
                Some(r) => format!(
                    "{}: {}",
                    r.failing_check.as_deref().unwrap_or("?"),
                    r.first_error.as_deref().unwrap_or("")
                ),
                None => "not run: the certification was interrupted".to_string(),
            };
            CertCell {
                plan: plan.name.clone(),
                plan_source: plan.source.source.clone(),
                nodes: node_count,
                seed: cell.seed,
                verdict: row.map(|r| r.verdict),
                failing_check: row.and_then(|r| r.failing_check.clone()),
                reason,
                duration_ms: row.map_or(0, |r| r.duration_ms),
                store_dir: row.and_then(|r| r.store_dir.clone()),
                repro: row.map(|r| r.repro.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let complete = cert_cells.iter().all(|c| c.verdict.is_some());
    let certified = complete && cert_cells.iter().all(|c| c.verdict == Some(Verdict::Valid));
    Certification {
        schema_version: CERTIFICATION_SCHEMA_VERSION,
        suite: suite.name.clone(),
        suite_file: suite.file.display().to_string(),
        suite_digest: suite.digest.clone(),
        id: id.to_string(),
        faultline_version: env!("CARGO_PKG_VERSION").to_string(),
        build: rows.first().map(|r| r.build.clone()).unwrap_or_default(),
        started_at,
        finished_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        complete,
        certified,
        cells: cert_cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite_error(text: &str) -> PlanError {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("suite.yaml");
        std::fs::write(&path, text).unwrap();
        load_suite(&path).unwrap_err()
    }

    #[test]
    fn given_a_suite_with_builtin_and_file_plans_when_loaded_should_resolve_files_next_to_the_suite() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plans")).unwrap();
        std::fs::write(
            dir.path().join("plans/mine.yaml"),
            crate::plan::builtin::PLANS[0].1.replace("name: default", "name: mine"),
        )
        .unwrap();
        let path = dir.path().join("suite.yaml");
        std::fs::write(
            &path,
            "name: rel\nplans: [canary, plans/mine.yaml]\nseed_count: 3\nnodes: [3, 5]\n",
        )
        .unwrap();
        let suite = load_suite(&path).unwrap();
        assert_eq!(suite.plans[0].path, None, "canary is built in");
        assert!(suite.plans[1].path.as_ref().unwrap().is_absolute());
        assert_eq!(
            suite.plans[1].source, "plans/mine.yaml",
            "repro commands name it as the suite does"
        );
        assert_eq!(suite.seeds, (0..3).map(|i| seed_at(0, i)).collect::<Vec<_>>());
        assert_eq!(suite.nodes, vec![3, 5]);
    }

    #[test]
    fn given_bad_suites_when_loaded_should_point_at_the_offending_line() {
        let err = suite_error("name: rel\nplans: [canary]\nseeds: [1]\nnodez: [3]\n");
        assert_eq!(err.line, 4, "{err}");
        assert!(err.message.contains("unknown field `nodez`"), "{err}");

        let err = suite_error("name: rel\nplans:\n  - canary\n  - no-such-plan\nseeds: [1]\n");
        assert_eq!(err.line, 4, "{err}");
        assert!(err.message.contains("no-such-plan"), "{err}");

        // canary cuts n2's WAL: a 1-node cluster has no n2.
        let err = suite_error("name: rel\nplans: [canary]\nseeds: [1]\nnodes: [3, 1]\n");
        assert_eq!(err.line, 4, "{err}");
        assert!(err.message.contains("cannot run on 1 node(s)"), "{err}");

        let err = suite_error("name: rel\nplans: [canary]\nseeds: [1]\nseed_count: 2\n");
        assert!(err.message.contains("not both"), "{err}");
        let err = suite_error("name: rel\nplans: [canary]\nnodes: [10]\nseeds: [1]\n");
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("1..=9"), "{err}");
    }
}
