//! `shrink.html` and `shrink.json` of `faultline shrink`: how a failing run became its smallest repro, step by step
//! (the faults each candidate kept, every try and whether it failed the same way), and how often the result fails.

use crate::pages;
use crate::results::Verdict;
use maud::html;
use serde::{Deserialize, Serialize};

/// One run of a candidate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Try {
    /// Its folder, relative to the store.
    pub run: Option<String>,
    /// Its verdict.
    pub verdict: Verdict,
    /// Whether it failed with the original's class.
    pub reproduced: bool,
    /// Its most severe finding, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// Wall time.
    pub wall_ms: u64,
    /// Stopped (Ctrl-C) once its history held settled evidence of the class (a refusal to boot on a clean disk),
    /// instead of running to its end: an interrupted run in the store, with the same finding.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_at_evidence: bool,
}

/// One step of the search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// 1-based.
    pub number: usize,
    /// `rate` (a measurement: the original's, or the shrunk plan's before raising it), `phase`, `faults`, `anchors`,
    /// `durations`, `workload`, `raise`, `confirm` (`replay` in shrinks before rates were measured).
    pub stage: String,
    /// What the candidate changed.
    pub change: String,
    /// Faults in the candidate.
    pub faults: usize,
    /// Its fault phase.
    pub phase_ms: u64,
    /// The candidate plan (relative to the shrink folder).
    pub plan: String,
    /// Its runs.
    pub tries: Vec<Try>,
    /// Whether it failed the same way often enough (and so became the best); for `raise`, whether it failed more
    /// often than the best and was kept; for a measurement, whether any run failed the same way.
    pub failed: bool,
    /// How many tries had to fail the same way for it to count (the rule derived from the original's rate, or
    /// `--need`; 1 for a measurement).
    #[serde(default = "one")]
    pub need: u32,
    /// It passed the tries it had, but the budget or a Ctrl-C ended it before all of them ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
    /// Tries in flight when the step was decided, stopped then (not counted in `tries`; each stays in the store as
    /// an interrupted run).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stopped_once_decided: u32,
}

/// A try's tooltip: its most severe finding (or valid), and whether it was stopped at the evidence.
fn try_title(t: &Try) -> String {
    let finding = t.finding.as_deref().unwrap_or("valid");
    if t.stopped_at_evidence {
        format!("{finding} (stopped at the evidence after {} s)", t.wall_ms / 1000)
    } else {
        finding.to_string()
    }
}

fn one() -> u32 {
    1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How often a plan failed the same way: `failed` of `runs` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    /// Runs that failed with the class.
    pub failed: u32,
    /// Runs.
    pub runs: u32,
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of {}", self.failed, self.runs)
    }
}

/// How every candidate of a shrink is tested (derived from the original's rate): at most `tries` runs, `need` of
/// them failing the same way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// The most tries a candidate gets.
    pub tries: u32,
    /// Failing tries that make it "still fails".
    pub need: u32,
    /// The original rate it was derived from (the rule-of-succession estimate).
    pub rate: f64,
    /// The chance it rejects a candidate that fails as often as the original.
    pub alpha: f64,
    /// The chance it accepts one that fails three times less often.
    pub beta: f64,
}

impl Rule {
    /// `needs 2 of at most 12 tries (rejects a candidate as frequent 9% of the time, accepts one 3x rarer 34%)`.
    pub fn describe(&self) -> String {
        format!(
            "needs {} of at most {} tries (rejects a candidate that fails as often {:.0}% of the time, accepts one \
             that fails 3x less often {:.0}%)",
            self.need,
            self.tries,
            self.alpha * 100.0,
            self.beta * 100.0
        )
    }
}

/// How a shrink ended (`shrink/shrink.json` of the run).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShrinkReport {
    /// The original run's folder.
    pub source: String,
    /// The class it must keep failing with.
    pub class: String,
    /// Its title.
    pub class_title: String,
    /// Faults the original run applied.
    pub original_faults: usize,
    /// Faults in the result.
    pub shrunk_faults: usize,
    /// The result's faults, as a person reads them.
    pub shrunk: Vec<String>,
    /// Its fault phase.
    pub phase_ms: u64,
    /// Every step.
    pub steps: Vec<Step>,
    /// How often the original plan's replay failed the same way (measured first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_rate: Option<Rate>,
    /// The test every candidate took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
    /// The shrunk plan's rate before the search tried to raise it (anchoring its faults to the lines they followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_raise: Option<Rate>,
    /// Reproductions over the confirmation runs.
    pub reproduced: u32,
    /// Confirmation runs done.
    pub confirm_runs: u32,
    /// Why the search ended early (`budget`, `interrupted`, `no-replay`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Seconds it took.
    pub wall_s: u64,
    /// How links from `shrink.html` reach the store root (`../../../`).
    pub store_href: String,
}

impl ShrinkReport {
    /// `4 faults of 23, fails in 9 of 10 fresh runs`.
    pub fn summary(&self) -> String {
        let rate = if self.confirm_runs > 0 {
            format!(", fails in {} of {} fresh runs", self.reproduced, self.confirm_runs)
        } else {
            String::new()
        };
        let rate = match self.original_rate {
            Some(original) if self.confirm_runs > 0 => format!("{rate} (the original's replay: {original})"),
            _ => rate,
        };
        let stopped = match self.stopped.as_deref() {
            Some("budget") => " (the budget ended the search)",
            Some("interrupted") => " (interrupted: the best plan found so far)",
            Some("no-replay") => " (the replay did not fail: nothing shrunk)",
            _ => "",
        };
        format!(
            "{} fault{} of {}{rate}{stopped}",
            self.shrunk_faults,
            if self.shrunk_faults == 1 { "" } else { "s" },
            self.original_faults
        )
    }
}

/// Reads `run_dir/shrink/shrink.json`, if the run was shrunk.
pub fn read(run_dir: &std::path::Path) -> Option<ShrinkReport> {
    let bytes = std::fs::read(run_dir.join("shrink").join("shrink.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The page.
pub fn render(report: &ShrinkReport) -> String {
    // Red when the shrunk plan fails: its fresh runs say so, or, without any (`--confirm 0`), its steps did.
    let fails = report.reproduced > 0 || (report.confirm_runs == 0 && report.steps.iter().any(|s| s.failed));
    let good = report.stopped.as_deref() != Some("no-replay") && fails;
    let runs = report.steps.iter().map(|s| s.tries.len()).sum::<usize>();
    let header = html! {
        h1 { "Shrink: " (report.summary()) }
        p {
            "Source run: " a href="../report.html" { (report.source) } ". "
            "Kept failing with " code { (report.class) } " " (report.class_title) ". "
            (report.steps.len()) " steps, " (runs) " runs, " (report.wall_s / 60) " min " (report.wall_s % 60) " s."
        }
        @if let Some(original) = report.original_rate {
            p {
                "The original run's replay failed the same way in " strong { (original) } " runs"
                @if let Some(rule) = &report.rule { "; so every candidate " (rule.describe()) }
                ". "
                @if let Some(before) = report.before_raise {
                    "The shrunk plan failed in " (before) " runs before its faults were anchored to the log lines they \
                     followed"
                    @if report.confirm_runs > 0 { ", and in " strong { (report.reproduced) " of " (report.confirm_runs) } " fresh runs after" }
                    ". "
                }
            }
        }
    };
    let main = html! {
        h2 { "The shrunk plan" }
        p { a href="shrunk.yaml" { "shrunk.yaml" } " — fault phase " (report.phase_ms / 1000) " s; run it with "
            code { "faultline run " (report.source) "/shrink/shrunk.yaml" } }
        @if report.shrunk.is_empty() {
            p { "No fault: the plan fails without any." }
        } @else {
            ol { @for fault in &report.shrunk { li { (fault) } } }
        }
        h2 { "Steps" }
        table.matrix {
            thead { tr { th { "#" } th { "stage" } th { "candidate" } th { "faults" } th { "phase" } th { "tries" } th { "result" } } }
            tbody {
                @for step in &report.steps {
                    tr class=(if step.failed { "bad" } else { "good" }) {
                        td { (step.number) }
                        td { (step.stage) }
                        td { a href=(step.plan) { (step.change) } }
                        td { (step.faults) }
                        td { (step.phase_ms / 1000) " s" }
                        td {
                            @for (i, t) in step.tries.iter().enumerate() {
                                @if i > 0 { " " }
                                @let mark = match (t.reproduced, t.stopped_at_evidence, t.verdict) {
                                    (true, true, _) => "✗·",
                                    (true, false, _) => "✗",
                                    (false, _, Verdict::Valid) => "✓",
                                    _ => "?",
                                };
                                @match &t.run {
                                    Some(run) => a href={ (report.store_href) (run) "/report.html" }
                                        title=(try_title(t)) { (mark) },
                                    None => span title="the run did not start or left no folder" { (mark) },
                                }
                            }
                        }
                        td {
                            @if matches!(step.stage.as_str(), "confirm" | "rate") {
                                (step.tries.iter().filter(|t| t.reproduced).count()) " of " (step.tries.len()) " failed"
                            } @else if step.failed { "still fails (kept)" }
                            @else if step.tries.is_empty() { "not run" }
                            @else if step.tries.iter().any(|t| t.reproduced) {
                                "failed " (step.tries.iter().filter(|t| t.reproduced).count()) " of "
                                (step.tries.len()) ", needed " (step.need) " (rejected)"
                            }
                            @else if step.cut_short { "passed the tries it had (stopped)" }
                            @else { "passes (rejected)" }
                            @if step.stopped_once_decided > 0 {
                                span title="tries in flight once decided: interrupted runs in the store" {
                                    " · " (step.stopped_once_decided) " more stopped once decided"
                                }
                            }
                        }
                    }
                }
            }
        }
        p {
            "✗ failed with the same class · ✓ valid · ? failed some other way (does not count) · "
            "✗· stopped at the evidence (the failure was settled before the run's end)"
        }
    };
    pages::page("faultline shrink", if good { "bad" } else { "good" }, header, main)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_shrink_when_rendered_should_link_every_try_and_escape_text() {
        let report = ShrinkReport {
            source: "store/default/x-seed1".into(),
            class: "c12345678".into(),
            class_title: "reference boot: refused to boot on a clean disk: <does not chain>".into(),
            original_faults: 12,
            shrunk_faults: 2,
            shrunk: vec!["kill [n1] at 3s for 1s".into(), "cut n1->n2 at 4s for 2s".into()],
            phase_ms: 9000,
            steps: vec![Step {
                number: 1,
                stage: "replay".into(),
                change: "replay of all 12 recorded faults".into(),
                faults: 12,
                phase_ms: 30000,
                plan: "candidates/001.yaml".into(),
                tries: vec![Try {
                    run: Some("default-shrink/y-seed1".into()),
                    verdict: Verdict::Invalid,
                    reproduced: true,
                    finding: Some("boot".into()),
                    wall_ms: 40000,
                    stopped_at_evidence: true,
                }],
                failed: true,
                need: 1,
                cut_short: false,
                stopped_once_decided: 1,
            }],
            original_rate: Some(Rate { failed: 3, runs: 8 }),
            rule: Some(Rule {
                tries: 12,
                need: 2,
                rate: 0.4,
                alpha: 0.08,
                beta: 0.3,
            }),
            before_raise: Some(Rate { failed: 4, runs: 8 }),
            reproduced: 9,
            confirm_runs: 10,
            stopped: None,
            wall_s: 600,
            store_href: "../../../".into(),
        };
        let page = render(&report);
        assert!(
            page.contains("2 faults of 12, fails in 9 of 10 fresh runs (the original's replay: 3 of 8)"),
            "{page}"
        );
        assert!(page.contains("needs 2 of at most 12 tries"), "{page}");
        assert!(page.contains("failed in 4 of 8 runs before"), "{page}");
        assert!(
            page.contains("href=\"../../../default-shrink/y-seed1/report.html\""),
            "{page}"
        );
        assert!(page.contains("&lt;does not chain&gt;"), "{page}");
        assert!(!page.contains("<does not chain>"));
        assert!(page.contains("1 more stopped once decided"), "{page}");
        assert!(
            page.contains("title=\"boot (stopped at the evidence after 40 s)\">✗·</a>"),
            "{page}"
        );
    }
}
