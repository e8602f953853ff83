//! `matrix.html` of `faultline matrix`: every (mutant, plan) cell of the detection matrix with how often the mutant
//! was caught, how fast and by which checks. A mutant must be caught; the correct node never (no false alarms).
//!
//! The verdict is per mutant, not per cell: a mutant counts as caught when some plan caught it, and the page says in
//! how many seeds some plan did (plans differ in the faults they inject, so a plan with no partitions that misses a
//! quorum bug is no miss when a partition plan catches it in the same seeds).

use crate::pages;
use maud::html;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One (mutant, plan) cell.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Mutant name, or `correct` for the node without bugs.
    pub mutant: String,
    /// Plan name.
    pub plan: String,
    /// Runs.
    pub runs: u64,
    /// Runs that ended invalid.
    pub detected: u64,
    /// Runs that ended unknown.
    pub unknown: u64,
    /// Median time from run start to the first invalid evidence, over detected runs.
    pub median_detection_ms: Option<u64>,
    /// Which checks caught it, with counts.
    pub caught_by: BTreeMap<String, u64>,
    /// The store folders of the runs.
    pub store_dirs: Vec<String>,
    /// The seeds that ran, and those whose run ended invalid (both ascending).
    #[serde(default)]
    pub seeds: Vec<u64>,
    #[serde(default)]
    pub detected_seeds: Vec<u64>,
}

/// One mutant (or the correct node) over every plan it ran against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MutantLine {
    /// Mutant name, or `correct`.
    pub mutant: String,
    /// Seeds run (by any plan).
    pub seeds: u64,
    /// Seeds in which some plan's run ended invalid.
    pub caught_seeds: u64,
    /// The plans that caught it, each with its detected/runs.
    pub caught_by_plans: Vec<(String, u64, u64)>,
    /// Runs over all plans.
    pub runs: u64,
    /// Runs that ended invalid, over all plans.
    pub detected: u64,
}

impl MutantLine {
    /// The correct node never detected; a mutant caught by some plan.
    pub fn is_good(&self) -> bool {
        if self.mutant == "correct" {
            self.detected == 0
        } else {
            self.detected > 0
        }
    }
}

/// The cells folded per mutant, in the cells' order (mutants first, then the correct node).
pub fn mutant_lines(cells: &[Cell]) -> Vec<MutantLine> {
    let mut lines: Vec<MutantLine> = Vec::new();
    let mut seeds: Vec<(std::collections::BTreeSet<u64>, std::collections::BTreeSet<u64>)> = Vec::new();
    for cell in cells {
        let index = match lines.iter().position(|l| l.mutant == cell.mutant) {
            Some(index) => index,
            None => {
                lines.push(MutantLine {
                    mutant: cell.mutant.clone(),
                    seeds: 0,
                    caught_seeds: 0,
                    caught_by_plans: Vec::new(),
                    runs: 0,
                    detected: 0,
                });
                seeds.push(Default::default());
                lines.len() - 1
            }
        };
        let line = &mut lines[index];
        line.runs += cell.runs;
        line.detected += cell.detected;
        if cell.detected > 0 {
            line.caught_by_plans.push((cell.plan.clone(), cell.detected, cell.runs));
        }
        seeds[index].0.extend(&cell.seeds);
        seeds[index].1.extend(&cell.detected_seeds);
    }
    for (line, (ran, caught)) in lines.iter_mut().zip(seeds) {
        line.seeds = ran.len() as u64;
        line.caught_seeds = caught.len() as u64;
    }
    lines
}

/// Whether the matrix is as it should be: every mutant caught by some plan, no false alarm.
pub fn all_good(cells: &[Cell]) -> bool {
    mutant_lines(cells).iter().all(MutantLine::is_good)
}

impl Cell {
    /// `linearizability 2, boot 1`.
    pub fn caught_by_text(&self) -> String {
        let caught: Vec<String> = self.caught_by.iter().map(|(check, n)| format!("{check} {n}")).collect();
        caught.join(", ")
    }
}

/// `matrix.html`, written to `store/matrix/<time>/` (run links go up to the store root).
pub fn render_html(cells: &[Cell]) -> String {
    let lines = mutant_lines(cells);
    let good = lines.iter().all(MutantLine::is_good);
    let mutants: Vec<&MutantLine> = lines.iter().filter(|l| l.mutant != "correct").collect();
    let correct = lines.iter().find(|l| l.mutant == "correct");
    let header = html! {
        h1 { "Detection matrix" }
        p {
            "Each mutant must be caught by some plan; the correct node never (no false alarms). "
            (mutants.iter().filter(|l| l.is_good()).count()) " of " (mutants.len()) " mutants caught"
            @if let Some(correct) = correct {
                "; the correct node " @if correct.detected == 0 { "valid in all " (correct.runs) " runs" }
                @else { "flagged in " (correct.detected) " of " (correct.runs) " runs" }
            }
            "."
        }
    };
    let main = html! {
        h2 { "Per mutant" }
        table.matrix {
            thead { tr {
                th { "mutant" } th { "seeds caught by some plan" } th { "runs caught" } th { "caught by" }
            } }
            tbody {
                @for line in &lines {
                    tr class=(if line.is_good() { "good" } else { "bad" }) {
                        @if line.mutant == "correct" {
                            // Its counts are false alarms, not catches: say so on the row.
                            td { "correct (no bug): false alarms" }
                        } @else {
                            td { (line.mutant) }
                        }
                        td.detected { (line.caught_seeds) "/" (line.seeds) }
                        td.detected { (line.detected) "/" (line.runs) }
                        td {
                            @for (i, (plan, detected, runs)) in line.caught_by_plans.iter().enumerate() {
                                @if i > 0 { ", " }
                                (plan) " " (detected) "/" (runs)
                            }
                        }
                    }
                }
            }
        }
        h2 { "Per plan" }
        table.matrix {
            thead { tr {
                th { "mutant" } th { "plan" } th { "detected" } th { "median ms to detection" } th { "caught by" }
                th { "runs" }
            } }
            tbody {
                @for cell in cells {
                    tr class=[cell_class(cell)] {
                        td { (cell.mutant) }
                        td { (cell.plan) }
                        td.detected {
                            (cell.detected) "/" (cell.runs)
                            @if cell.unknown > 0 { " (" (cell.unknown) " unknown)" }
                        }
                        td { @match cell.median_detection_ms { Some(ms) => (ms), None => "-" } }
                        td { (cell.caught_by_text()) }
                        td {
                            @for (i, dir) in cell.store_dirs.iter().enumerate() {
                                @if i > 0 { " " }
                                a href={ "../../" (relative_to_store(dir)) "/report.html" } { (i + 1) }
                            }
                        }
                    }
                }
            }
        }
    };
    pages::page(
        "faultline detection matrix",
        if good { "good" } else { "bad" },
        header,
        main,
    )
}

/// A false alarm is bad; a plan that misses a mutant another plan catches is only a plain row.
fn cell_class(cell: &Cell) -> Option<&'static str> {
    match (cell.mutant == "correct", cell.detected > 0) {
        (true, false) | (false, true) => Some("good"),
        (true, true) => Some("bad"),
        (false, false) => None,
    }
}

/// `store/<plan>/<run>` -> `<plan>/<run>` (links from `store/matrix/<time>/`).
fn relative_to_store(dir: &str) -> String {
    let path = Path::new(dir);
    let parts: Vec<_> = path.components().rev().take(2).collect();
    parts
        .iter()
        .rev()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mutant: &str, plan: &str, detected_seeds: &[u64]) -> Cell {
        let detected = detected_seeds.len() as u64;
        Cell {
            mutant: mutant.into(),
            plan: plan.into(),
            runs: 2,
            detected,
            unknown: 0,
            median_detection_ms: (detected > 0).then_some(1200),
            caught_by: BTreeMap::from([("linearizability".to_string(), detected)]),
            store_dirs: vec![
                format!("store/{plan}/20260101T000000Z-seed1"),
                format!("store/{plan}/20260101T000001Z-seed2"),
            ],
            seeds: vec![1, 2],
            detected_seeds: detected_seeds.to_vec(),
        }
    }

    #[test]
    fn given_a_caught_mutant_and_a_false_alarm_when_rendered_should_mark_one_good_and_one_bad_and_link_every_run() {
        let alarm = cell("correct", "<script>", &[2]);
        let page = render_html(&[cell("no-fsync", "default", &[1, 2]), alarm]);
        assert!(
            page.contains("<tr class=\"good\"><td>no-fsync</td><td>default</td>"),
            "{page}"
        );
        assert!(
            page.contains("<tr class=\"bad\"><td>correct</td><td>&lt;script&gt;</td>"),
            "{page}"
        );
        assert!(
            page.contains("<header class=\"bad\">"),
            "a false alarm makes the matrix bad"
        );
        assert!(
            page.contains("<a href=\"../../default/20260101T000001Z-seed2/report.html\">2</a>"),
            "{page}"
        );
        assert!(
            page.contains("1 of 1 mutants caught; the correct node flagged in 1 of 2 runs."),
            "{page}"
        );
        assert!(page.contains(crate::pages::PAGES_CSS), "the shared stylesheet");
        assert!(
            page.contains("<tr class=\"bad\"><td>correct (no bug): false alarms</td><td class=\"detected\">1/2</td>"),
            "the per-mutant row of the correct node counts false alarms: {page}"
        );
    }

    #[test]
    fn given_plans_that_catch_a_mutant_in_different_seeds_when_folded_should_count_the_seeds_some_plan_caught() {
        let cells = [
            cell("view-change-max-op", "default", &[]),
            cell("view-change-max-op", "reference-partition", &[2]),
            cell("view-change-max-op", "reference-mixed", &[1]),
            cell("no-fsync", "default", &[]),
            cell("correct", "default", &[]),
            cell("correct", "reference-partition", &[]),
        ];
        let lines = mutant_lines(&cells);
        let names: Vec<&str> = lines.iter().map(|l| l.mutant.as_str()).collect();
        assert_eq!(names, ["view-change-max-op", "no-fsync", "correct"]);
        let vcmo = &lines[0];
        assert_eq!((vcmo.caught_seeds, vcmo.seeds, vcmo.detected, vcmo.runs), (2, 2, 2, 6));
        assert_eq!(
            vcmo.caught_by_plans,
            [
                ("reference-partition".to_string(), 1, 2),
                ("reference-mixed".to_string(), 1, 2)
            ]
        );
        assert!(vcmo.is_good(), "caught by some plan");
        assert!(!lines[1].is_good(), "no plan caught no-fsync");
        assert!(lines[2].is_good(), "no false alarm in 4 runs");
        assert!(!all_good(&cells), "a missed mutant");
        assert!(
            all_good(&cells[..3]),
            "a plan that misses what another catches is no miss"
        );
        let page = render_html(&cells[..3]);
        assert!(page.contains("<header class=\"good\">"), "{page}");
        assert!(
            page.contains("<tr><td>view-change-max-op</td><td>default</td>"),
            "{page}"
        );
        assert!(page.contains("<td class=\"detected\">2/2</td>"), "{page}");
    }
}
