//! `faultline matrix --compare guided,uniform`: search strategies side by side. For every mutant of the reference
//! node (and the correct node), each strategy runs campaigns over the same plans with the same budget of runs, one
//! per campaign seed, each stopping at its first detection; this module folds those campaigns into the headline
//! numbers and renders `compare.json`, the text table and `compare.html`.
//!
//! - *Runs to first detection* of a campaign: the index (1-based, in the order runs were started) of its first run
//!   that ended invalid; a campaign that never detected within its budget has none, and ranks after every number
//!   (a median that lands on it is "not within the budget", never a made-up number).
//! - A mutant is *hard* when uniform did not catch it on the first run of every campaign seed: those are the mutants
//!   a search strategy can make a difference on.
//! - The acceptance of issue 50 is checked as written: over the hard mutants' campaigns, the median runs to first
//!   detection guided is at most half uniform's; no mutant uniform caught in some seed is missed by guided in every
//!   seed; every mutant uniform caught in fewer than half its seeds is caught in more seeds guided; the correct
//!   node is never flagged.

use crate::explored::Mode;
use crate::pages;
use maud::html;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One campaign of the comparison: a mutant (or `correct`), a strategy, a campaign seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CampaignResult {
    /// Mutant name, or `correct`.
    pub mutant: String,
    /// The strategy.
    pub mode: Mode,
    /// The campaign seed.
    pub campaign_seed: u64,
    /// Runs that finished (a mutant's campaign stops launching at its first detection).
    pub runs: u64,
    /// Runs to the first detection (1-based), none when no run ended invalid.
    pub detected_at: Option<u64>,
    /// CPU time of the runs up to and including the first detection.
    pub cpu_to_detection_ms: Option<u64>,
    /// CPU time of every run.
    pub cpu_ms: u64,
    /// Runs that ended invalid, those in `shared_with_correct` aside.
    pub invalid: u64,
    /// Invalid runs (1-based) whose run on the correct node, the same plan, seed and configuration, ended invalid
    /// too: whatever failed them is no evidence of the mutant, so they count neither as its detection nor among its
    /// invalid runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_with_correct: Vec<u64>,
    /// Runs that ended unknown.
    pub unknown: u64,
    /// Distinct behaviours the campaign saw.
    pub behaviours: u64,
    /// The plan of the first detecting run and its checks that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caught_by: Option<String>,
    /// The first detecting run's folder (or, for the correct node, the first invalid one: a false alarm to read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detection_dir: Option<String>,
    /// Where the campaign's behaviour log is.
    pub log: String,
}

/// One mutant's numbers in one strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModeLine {
    /// Campaign seeds run.
    pub campaigns: u64,
    /// Campaign seeds in which some run detected it.
    pub caught: u64,
    /// Runs to first detection per campaign seed, in seed order (none: not within the budget).
    pub runs_to_detection: Vec<Option<u64>>,
    /// Their median (none: the median is not within the budget).
    pub median_runs: Option<f64>,
    /// Median CPU seconds to first detection (none: not within the budget).
    pub median_cpu_s: Option<f64>,
    /// Runs that finished, over every campaign seed.
    pub runs: u64,
    /// Of them, runs that ended invalid: with `--full-budget` (every campaign runs its whole budget) the share is
    /// the strategy's detection rate per run, a steadier measure than the first detection's index; without it a
    /// campaign stops at its first detection, so the share is about one over the runs it took.
    pub invalid: u64,
}

/// One mutant over every strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MutantCompare {
    /// Mutant name, or `correct`.
    pub mutant: String,
    /// Whether uniform missed it on the first run of some campaign seed.
    pub hard: bool,
    /// Per strategy.
    pub modes: BTreeMap<String, ModeLine>,
}

/// The comparison's headline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// Over every campaign of the hard mutants: the median runs to first detection per strategy (none: beyond the
    /// budget).
    pub hard_median_runs: BTreeMap<String, Option<f64>>,
    /// Guided's median at most half uniform's.
    pub halved: bool,
    /// Mutants uniform caught in some seed that guided caught in none.
    pub missed_by_guided: Vec<String>,
    /// Mutants uniform caught in fewer than half its seeds that guided did not catch in more seeds.
    pub rare_not_improved: Vec<String>,
    /// Invalid runs of the correct node, per strategy.
    pub correct_alarms: BTreeMap<String, u64>,
    /// Mutants' invalid runs that the correct node's same run shared (`mutant mode s<seed> run <n>`), not counted.
    pub shared_with_correct: Vec<String>,
}

/// Folds campaigns into per-mutant lines, in the campaigns' order of mutants, the correct node last.
pub fn mutant_lines(results: &[CampaignResult]) -> Vec<MutantCompare> {
    let mut lines: Vec<MutantCompare> = Vec::new();
    for result in results {
        let index = match lines.iter().position(|l| l.mutant == result.mutant) {
            Some(i) => i,
            None => {
                lines.push(MutantCompare {
                    mutant: result.mutant.clone(),
                    hard: false,
                    modes: BTreeMap::new(),
                });
                lines.len() - 1
            }
        };
        let line = lines[index].modes.entry(result.mode.as_str().to_string()).or_default();
        line.campaigns += 1;
        line.caught += u64::from(result.detected_at.is_some());
        line.runs_to_detection.push(result.detected_at);
        line.runs += result.runs;
        line.invalid += result.invalid;
    }
    for line in &mut lines {
        for (mode, mode_line) in line.modes.iter_mut() {
            mode_line.median_runs = median(&mode_line.runs_to_detection);
            let cpu: Vec<Option<u64>> = results
                .iter()
                .filter(|r| r.mutant == line.mutant && r.mode.as_str() == mode)
                .map(|r| r.cpu_to_detection_ms)
                .collect();
            mode_line.median_cpu_s = median(&cpu).map(|ms| (ms / 100.0).round() / 10.0);
        }
        line.hard = line.mutant != "correct"
            && line
                .modes
                .get(Mode::Uniform.as_str())
                .is_some_and(|u| u.runs_to_detection.iter().any(|r| *r != Some(1)));
    }
    // The correct node's line last, whatever order its campaigns ran in (first, at each seed).
    lines.sort_by_key(|l| l.mutant == "correct");
    lines
}

/// The median of values where none ranks after every number; none when the median lands on a none.
pub fn median(values: &[Option<u64>]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted: Vec<Option<u64>> = values.to_vec();
    sorted.sort_by_key(|v| v.unwrap_or(u64::MAX));
    let n = sorted.len();
    let (a, b) = (sorted[(n - 1) / 2], sorted[n / 2]);
    Some((a? as f64 + b? as f64) / 2.0)
}

/// The headline numbers over `lines` (see the module docs); `budget` is the runs each campaign had. A median beyond
/// the budget is only known to be more than it, so guided halves it only at (budget + 1) / 2 or less.
pub fn headline(results: &[CampaignResult], lines: &[MutantCompare], budget: u64) -> Headline {
    let hard: Vec<&str> = lines
        .iter()
        .filter(|l| l.hard && l.mutant != "correct")
        .map(|l| l.mutant.as_str())
        .collect();
    let mut hard_median_runs = BTreeMap::new();
    for mode in [Mode::Uniform, Mode::Guided] {
        let pooled: Vec<Option<u64>> = results
            .iter()
            .filter(|r| r.mode == mode && hard.contains(&r.mutant.as_str()))
            .map(|r| r.detected_at)
            .collect();
        if !pooled.is_empty() {
            hard_median_runs.insert(mode.as_str().to_string(), median(&pooled));
        }
    }
    let halved = match (
        hard_median_runs.get("guided").copied().flatten(),
        hard_median_runs.get("uniform").copied(),
    ) {
        (Some(guided), Some(Some(uniform))) => guided <= uniform / 2.0,
        (Some(guided), Some(None)) => guided <= (budget + 1) as f64 / 2.0,
        _ => false,
    };
    let (mut missed_by_guided, mut rare_not_improved) = (Vec::new(), Vec::new());
    for line in lines.iter().filter(|l| l.mutant != "correct") {
        let (Some(uniform), Some(guided)) = (line.modes.get("uniform"), line.modes.get("guided")) else {
            continue;
        };
        if uniform.caught > 0 && guided.caught == 0 {
            missed_by_guided.push(line.mutant.clone());
        }
        if uniform.caught * 2 < uniform.campaigns && guided.caught <= uniform.caught {
            rare_not_improved.push(line.mutant.clone());
        }
    }
    let mut correct_alarms = BTreeMap::new();
    for result in results.iter().filter(|r| r.mutant == "correct") {
        *correct_alarms.entry(result.mode.as_str().to_string()).or_insert(0) += result.invalid;
    }
    let shared_with_correct = results
        .iter()
        .flat_map(|r| {
            r.shared_with_correct
                .iter()
                .map(move |run| format!("{} {} s{} run {run}", r.mutant, r.mode.as_str(), r.campaign_seed))
        })
        .collect();
    Headline {
        hard_median_runs,
        halved,
        missed_by_guided,
        rare_not_improved,
        correct_alarms,
        shared_with_correct,
    }
}

fn runs_text(runs: &[Option<u64>]) -> String {
    runs.iter()
        .map(|r| r.map_or("-".to_string(), |n| n.to_string()))
        .collect::<Vec<_>>()
        .join(",")
}

fn median_text(value: Option<f64>) -> String {
    value.map_or("not within".to_string(), |v| format!("{v}"))
}

/// The comparison as text: a line per mutant and strategy, then the headline.
pub fn render_text(lines: &[MutantCompare], headline: &Headline, budget: u64, full_budget: bool) -> String {
    let mut out = format!(
        "{:<26} {:<5} {:<8} {:>7} {:<24} {:>12} {:>14} {:>14}\n",
        "mutant", "hard", "mode", "caught", "runs to detection/seed", "median runs", "median cpu s", "invalid runs"
    );
    for line in lines {
        for (mode, m) in &line.modes {
            out.push_str(&format!(
                "{:<26} {:<5} {:<8} {:>7} {:<24} {:>12} {:>14} {:>14}\n",
                line.mutant,
                if line.hard { "yes" } else { "" },
                mode,
                format!("{}/{}", m.caught, m.campaigns),
                runs_text(&m.runs_to_detection),
                median_text(m.median_runs),
                median_text(m.median_cpu_s),
                format!("{}/{}", m.invalid, m.runs),
            ));
        }
    }
    out.push_str(if full_budget {
        "\ninvalid runs: of all the runs of the strategy's campaigns, each of which ran its whole budget (--full-budget): \
         its detection rate per run\n"
    } else {
        "\ninvalid runs: of all the runs of the strategy's campaigns; a mutant's campaign stopped at its first detection, \
         so this is no rate (--full-budget measures one)\n"
    });
    out.push_str(&format!(
        "hard mutants, median runs to first detection (budget {budget} runs; `-` = not within it): {}\n",
        headline
            .hard_median_runs
            .iter()
            .map(|(mode, m)| format!("{mode} {}", median_text(*m)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.push_str(&format!(
        "halved: {}; missed by guided: {}; rare and not improved: {}; correct-node alarms: {}\n",
        if headline.halved { "yes" } else { "no" },
        list(&headline.missed_by_guided),
        list(&headline.rare_not_improved),
        headline
            .correct_alarms
            .iter()
            .map(|(mode, n)| format!("{mode} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if !headline.shared_with_correct.is_empty() {
        out.push_str(&format!(
            "not counted, the correct node failed the same run (plan, seed and configuration): {}\n",
            headline.shared_with_correct.join(", ")
        ));
    }
    out
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// `compare.html`: the headline and every campaign, each linked to its first detecting run.
pub fn render_html(
    results: &[CampaignResult],
    lines: &[MutantCompare],
    headline: &Headline,
    budget: u64,
    full_budget: bool,
) -> String {
    let stopping = if full_budget {
        "every campaign running its whole budget"
    } else {
        "a mutant's campaign stopping at its first detection"
    };
    let main = html! {
        p { "Each strategy ran a campaign per mutant and campaign seed over the same plans, at most " (budget)
            " runs, " (stopping) ". Runs to detection per seed: `-` is not within the budget." }
        pre { (render_text(lines, headline, budget, full_budget)) }
        h2 { "Campaigns" }
        table {
            tr { th { "mutant" } th { "mode" } th { "seed" } th { "runs" } th { "detected at" } th { "invalid runs" }
                 th { "cpu s to detection" } th { "behaviours" } th { "caught by" } th { "run" } }
            @for r in results {
                tr {
                    td { (r.mutant) } td { (r.mode.as_str()) } td { (r.campaign_seed) } td { (r.runs) }
                    td { (r.detected_at.map_or("-".to_string(), |n| n.to_string())) }
                    td { (r.invalid) }
                    td { (r.cpu_to_detection_ms.map_or("-".to_string(), |ms| format!("{:.1}", ms as f64 / 1000.0))) }
                    td { (r.behaviours) }
                    td { (r.caught_by.clone().unwrap_or_default()) }
                    td { @if let Some(dir) = &r.detection_dir { a href=(format!("file://{dir}/report.html")) { "report" } } }
                }
            }
        }
    };
    pages::page(
        "faultline: search strategies compared",
        "",
        html! { h1 { "Search strategies compared" } },
        main,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(mutant: &str, mode: Mode, seed: u64, detected_at: Option<u64>) -> CampaignResult {
        CampaignResult {
            mutant: mutant.into(),
            mode,
            campaign_seed: seed,
            runs: detected_at.unwrap_or(10),
            detected_at,
            cpu_to_detection_ms: detected_at.map(|n| n * 1000),
            cpu_ms: 10_000,
            invalid: u64::from(detected_at.is_some()),
            shared_with_correct: Vec::new(),
            unknown: 0,
            behaviours: 100,
            caught_by: None,
            detection_dir: None,
            log: String::new(),
        }
    }

    #[test]
    fn given_medians_with_campaigns_beyond_the_budget_should_rank_them_last_and_never_make_up_a_number() {
        assert_eq!(median(&[Some(3), None, Some(1)]), Some(3.0));
        assert_eq!(median(&[Some(2), Some(4)]), Some(3.0));
        assert_eq!(
            median(&[Some(2), None]),
            None,
            "the median lands between a number and not within"
        );
        assert_eq!(median(&[None, None, Some(1)]), None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn given_campaigns_of_both_modes_when_folded_should_mark_hard_mutants_and_check_the_acceptance() {
        use Mode::{Guided, Uniform};
        let results = vec![
            result("correct", Uniform, 1, None),
            result("correct", Guided, 1, None),
            // Easy: uniform catches it at once in every seed.
            result("easy", Uniform, 1, Some(1)),
            result("easy", Uniform, 2, Some(1)),
            result("easy", Guided, 1, Some(1)),
            result("easy", Guided, 2, Some(2)),
            // Hard: uniform needs 8 runs or misses it; guided 2 and 4.
            result("hard", Uniform, 1, Some(8)),
            result("hard", Uniform, 2, None),
            result("hard", Guided, 1, Some(2)),
            result("hard", Guided, 2, Some(4)),
            // Rare: uniform caught it in 0 of 2 seeds, guided in 1.
            result("rare", Uniform, 1, None),
            result("rare", Uniform, 2, None),
            result("rare", Guided, 1, Some(9)),
            result("rare", Guided, 2, None),
        ];
        let lines = mutant_lines(&results);
        assert_eq!(
            lines.last().map(|l| l.mutant.as_str()),
            Some("correct"),
            "the correct node's line last"
        );
        let hard: Vec<&str> = lines.iter().filter(|l| l.hard).map(|l| l.mutant.as_str()).collect();
        assert_eq!(hard, vec!["hard", "rare"], "the correct node is no mutant");
        let headline = headline(&results, &lines, 20);
        assert_eq!(
            headline.hard_median_runs["uniform"], None,
            "3 of 4 hard uniform campaigns missed"
        );
        assert_eq!(headline.hard_median_runs["guided"], Some(6.5));
        assert!(headline.halved, "uniform's median is beyond 20 runs, guided's 6.5");
        let within_ten = super::headline(&results, &lines, 10);
        assert!(!within_ten.halved, "beyond 10 runs is not known to be twice 6.5");
        assert!(headline.missed_by_guided.is_empty());
        assert!(headline.rare_not_improved.is_empty());
        assert_eq!(headline.correct_alarms["guided"], 0);
        let text = render_text(&lines, &headline, 20, false);
        assert!(text.contains("halved: yes"), "{text}");
        assert!(text.contains("so this is no rate"), "{text}");
    }

    #[test]
    fn given_campaigns_that_ran_their_whole_budget_when_folded_should_count_invalid_runs_over_every_seed() {
        use Mode::{Guided, Uniform};
        let full = |mode, seed, detected_at, invalid| CampaignResult {
            runs: 20,
            invalid,
            ..result("slow", mode, seed, detected_at)
        };
        let results = vec![
            full(Uniform, 1, Some(3), 2),
            CampaignResult {
                shared_with_correct: vec![7],
                ..full(Uniform, 2, None, 0)
            },
            full(Guided, 1, Some(5), 4),
            full(Guided, 2, Some(1), 3),
        ];
        let lines = mutant_lines(&results);
        let (uniform, guided) = (&lines[0].modes["uniform"], &lines[0].modes["guided"]);
        assert_eq!((uniform.invalid, uniform.runs), (2, 40));
        assert_eq!((guided.invalid, guided.runs), (7, 40));
        let text = render_text(&lines, &headline(&results, &lines, 20), 20, true);
        let guided_row = text.lines().find(|l| l.contains("guided")).expect("a guided row");
        assert!(guided_row.trim_end().ends_with("7/40"), "{text}");
        assert!(text.contains("its detection rate per run"), "{text}");
        assert!(
            text.contains("the correct node failed the same run (plan, seed and configuration): slow uniform s2 run 7"),
            "{text}"
        );
    }
}
