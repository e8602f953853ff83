//! `matrix.html` of `faultline matrix`: every (mutant, plan) cell of the detection matrix with how often the mutant
//! was caught, how fast and by which checks. A mutant must be caught; the correct node never (no false alarms).

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
}

impl Cell {
    /// What the cell should show: the correct node never detected, a mutant detected at least once.
    pub fn is_good(&self) -> bool {
        if self.mutant == "correct" {
            self.detected == 0
        } else {
            self.detected > 0
        }
    }

    /// `linearizability 2, boot 1`.
    pub fn caught_by_text(&self) -> String {
        let caught: Vec<String> = self.caught_by.iter().map(|(check, n)| format!("{check} {n}")).collect();
        caught.join(", ")
    }
}

/// `matrix.html`, written to `store/matrix/<time>/` (run links go up to the store root).
pub fn render_html(cells: &[Cell]) -> String {
    let good = cells.iter().all(Cell::is_good);
    let header = html! {
        h1 { "Detection matrix" }
        p { "Each mutant must be detected; the correct node never (no false alarms). "
            (cells.iter().filter(|c| c.is_good()).count()) " of " (cells.len()) " cells as they should be." }
    };
    let main = html! {
        table.matrix {
            thead { tr {
                th { "mutant" } th { "plan" } th { "detected" } th { "median ms to detection" } th { "caught by" }
                th { "runs" }
            } }
            tbody {
                @for cell in cells {
                    tr class=(if cell.is_good() { "good" } else { "bad" }) {
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

    fn cell(mutant: &str, detected: u64) -> Cell {
        Cell {
            mutant: mutant.into(),
            plan: "default".into(),
            runs: 2,
            detected,
            unknown: 0,
            median_detection_ms: (detected > 0).then_some(1200),
            caught_by: BTreeMap::from([("linearizability".to_string(), detected)]),
            store_dirs: vec![
                "store/default/20260101T000000Z-seed1".into(),
                "store/default/20260101T000001Z-seed2".into(),
            ],
        }
    }

    #[test]
    fn given_a_caught_mutant_and_a_false_alarm_when_rendered_should_mark_one_good_and_one_bad_and_link_every_run() {
        let mut alarm = cell("correct", 1);
        alarm.plan = "<script>".into();
        let page = render_html(&[cell("no-fsync", 2), alarm]);
        assert!(page.contains("<tr class=\"good\"><td>no-fsync</td>"), "{page}");
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
        assert!(page.contains("1 of 2 cells as they should be"));
        assert!(page.contains(crate::pages::PAGES_CSS), "the shared stylesheet");
    }
}
