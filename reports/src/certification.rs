//! The certification report of `faultline certify`: every cell of a fixed matrix (plan x node count x seed) with its
//! verdict, written as `certification.json` (the document below), `certification.html` (to attach to a release) and
//! `junit.xml` (one test case per cell). A suite is certified only when every cell ran and every cell is valid.

use crate::pages;
use crate::results::{shout, Verdict};
use crate::seeds::BuildIdentity;
use maud::{html, Markup};
use serde::{Deserialize, Serialize};

/// The current certification.json schema version.
pub const CERTIFICATION_SCHEMA_VERSION: u32 = 1;

/// A whole certification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certification {
    /// [`CERTIFICATION_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The suite's name.
    pub suite: String,
    /// The suite file.
    pub suite_file: String,
    /// xxh3-128 of the suite file's text, hex.
    pub suite_digest: String,
    /// This certification's id (its folder name under `store/certify/`, and its campaign id in `seeds.jsonl`).
    pub id: String,
    /// faultline's version.
    pub faultline_version: String,
    /// The build that ran (of the first cell that recorded one).
    pub build: BuildIdentity,
    /// Start, RFC 3339 UTC.
    pub started_at: String,
    /// End, RFC 3339 UTC.
    pub finished_at: String,
    /// Every cell ran (the certification was not interrupted).
    pub complete: bool,
    /// Complete and every cell valid.
    pub certified: bool,
    /// Every cell, in matrix order (plan, node count, seed).
    pub cells: Vec<Cell>,
}

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Plan name.
    pub plan: String,
    /// The plan as the suite names it (file path or built-in name).
    pub plan_source: String,
    /// Cluster size.
    pub nodes: u64,
    /// Run seed.
    pub seed: u64,
    /// Its verdict; none when it did not run (interrupted).
    pub verdict: Option<Verdict>,
    /// The check that decided a non-valid verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_check: Option<String>,
    /// Why, in one line.
    pub reason: String,
    /// Run length.
    pub duration_ms: u64,
    /// Run folder, relative to the store root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_dir: Option<String>,
    /// A command that runs this cell again.
    pub repro: String,
}

impl Certification {
    /// Cells by verdict: (valid, invalid, unknown, not run).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let count = |v: Option<Verdict>| self.cells.iter().filter(|c| c.verdict == v).count();
        (
            count(Some(Verdict::Valid)),
            count(Some(Verdict::Invalid)),
            count(Some(Verdict::Unknown)),
            count(None),
        )
    }

    /// `certification.html`: self-contained; links to run reports are relative to `store/certify/<id>/`.
    pub fn render_html(&self) -> String {
        let (valid, invalid, unknown, not_run) = self.counts();
        let verdict = if self.certified { "CERTIFIED" } else { "NOT CERTIFIED" };
        let header = html! {
            h1 { (verdict) ": " (self.suite) }
            p { (self.cells.len()) " cells: " (valid) " valid, " (invalid) " invalid, " (unknown) " unknown, "
                (not_run) " not run" }
        };
        let main = html! {
            table.meta {
                tr { th { "suite file" } td { code { (self.suite_file) } " (xxh3 " (self.suite_digest) ")" } }
                tr { th { "certification" } td { code { (self.id) } } }
                tr { th { "build" } td { (build_text(&self.build)) } }
                tr { th { "faultline" } td { (self.faultline_version) } }
                tr { th { "time (UTC)" } td { (self.started_at) " – " (self.finished_at) } }
            }
            table.cells {
                thead { tr {
                    th { "verdict" } th { "plan" } th { "nodes" } th { "seed" } th { "duration" } th { "reason" }
                    th { "repro" } th { "report" }
                } }
                tbody { @for cell in &self.cells { (cell_row(cell)) } }
            }
        };
        pages::page(
            &format!("faultline certification {}", self.suite),
            if self.certified { "certified" } else { "not-certified" },
            header,
            main,
        )
    }

    /// `junit.xml`: a test suite per certification, a test case per cell (see [`crate::junit`] for the mapping).
    pub fn render_junit(&self) -> String {
        crate::junit::certification(self)
    }
}

fn cell_row(cell: &Cell) -> Markup {
    let (class, label) = match cell.verdict {
        Some(v) => (v.to_string(), shout(v)),
        None => ("not-run".to_string(), "NOT RUN"),
    };
    html! {
        tr class=(class) {
            td { (pages::pill(&class, label)) }
            td { (cell.plan) }
            td { (cell.nodes) }
            td { (cell.seed) }
            td { (format!("{:.1} s", cell.duration_ms as f64 / 1000.0)) }
            td.reason { (cell.reason) }
            td { code { (cell.repro) } }
            td {
                @match &cell.store_dir {
                    Some(dir) => a href={ "../../" (dir) "/report.html" } { "report" },
                    None => "-",
                }
            }
        }
    }
}

fn build_text(build: &BuildIdentity) -> String {
    let mut parts = Vec::new();
    if let Some(rev) = &build.git_rev {
        parts.push(format!("git {rev}"));
    }
    if let Some(binary) = &build.node_binary {
        parts.push(format!(
            "node binary {binary} (xxh3 {})",
            build.node_xxh3.as_deref().unwrap_or("?")
        ));
    }
    if let Some(hash) = &build.faultline_xxh3 {
        parts.push(format!("faultline xxh3 {hash}"));
    }
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(plan: &str, nodes: u64, seed: u64, verdict: Option<Verdict>) -> Cell {
        Cell {
            plan: plan.into(),
            plan_source: plan.into(),
            nodes,
            seed,
            verdict,
            failing_check: (verdict == Some(Verdict::Invalid)).then(|| "boot".to_string()),
            reason: if verdict == Some(Verdict::Invalid) {
                "boot: n2 <refused>".into()
            } else {
                "every check passed".into()
            },
            duration_ms: 4200,
            store_dir: Some(format!("{plan}/20260101T000000Z-seed{seed}")),
            repro: format!("faultline run {plan} --seed {seed} --nodes {nodes}"),
        }
    }

    fn certification(cells: Vec<Cell>) -> Certification {
        let certified = cells.iter().all(|c| c.verdict == Some(Verdict::Valid));
        Certification {
            schema_version: CERTIFICATION_SCHEMA_VERSION,
            suite: "release".into(),
            suite_file: "suite.yaml".into(),
            suite_digest: "00".into(),
            id: "release-20260101T000000Z".into(),
            faultline_version: "0.1.0".into(),
            build: BuildIdentity::default(),
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:01:00Z".into(),
            complete: cells.iter().all(|c| c.verdict.is_some()),
            certified,
            cells,
        }
    }

    #[test]
    fn given_a_failing_and_a_not_run_cell_when_rendered_should_list_every_cell_and_not_certify() {
        let cert = certification(vec![
            cell("default", 3, 1, Some(Verdict::Valid)),
            cell("canary", 5, 1, Some(Verdict::Invalid)),
            cell("canary", 5, 2, None),
        ]);
        let page = cert.render_html();
        assert!(page.contains("NOT CERTIFIED: release"));
        assert_eq!(page.matches("<tr class=").count(), 3, "one row per cell");
        assert!(page.contains("boot: n2 &lt;refused&gt;"), "escaped");
        assert!(page.contains("href=\"../../canary/20260101T000000Z-seed1/report.html\""));
        let junit = cert.render_junit();
        assert!(
            junit.contains("tests=\"3\" skipped=\"1\" errors=\"0\" failures=\"1\""),
            "{junit}"
        );
        assert!(junit.contains("name=\"nodes=5 seed=1\""));
        assert!(junit.contains("repro: faultline run canary --seed 1 --nodes 5"));
    }

    #[test]
    fn given_only_valid_cells_when_rendered_should_say_certified() {
        let cert = certification(vec![cell("default", 3, 1, Some(Verdict::Valid))]);
        assert!(cert.certified);
        assert!(cert.render_html().contains("CERTIFIED: release"));
        assert!(!cert.render_html().contains("NOT CERTIFIED"));
        assert!(cert
            .render_junit()
            .contains("skipped=\"0\" errors=\"0\" failures=\"0\""));
    }
}
