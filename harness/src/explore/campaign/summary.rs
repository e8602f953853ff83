//! The end of a campaign on the terminal: a table of its seeds (failures first, each with its class, what its reruns
//! said and its repro command), its counts per plan, its failure classes (as `faultline triage` prints them), and one
//! closing line; and the exit code.

use super::schedule::Ending;
use super::Outcome;
use faultline_reports::results::{shout, Verdict};
use faultline_reports::seeds::{FailureClass, SeedRow};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Campaigns with at most this many seeds list every seed; bigger ones list only failures.
const LIST_EVERY_SEED_MAX: usize = 40;

/// Exit code of the campaign `faultline campaign` ran.
pub const EXIT_INTERRUPTED: u8 = 130;

impl Outcome {
    /// 130 when interrupted; else 1 when a seed was invalid, 2 when one was unknown (or nothing ran), 0 when every
    /// seed was valid.
    pub fn exit_code(&self) -> u8 {
        if self.ending == Ending::Interrupted {
            return EXIT_INTERRUPTED;
        }
        let any = |v: Verdict| self.rows.iter().any(|(r, _)| r.verdict == v);
        if any(Verdict::Invalid) {
            1
        } else if any(Verdict::Unknown) || self.rows.is_empty() {
            2
        } else {
            0
        }
    }

    /// The summary: seeds table, per-plan table, closing line.
    pub fn render_summary(&self) -> String {
        let mut rows: Vec<&(SeedRow, Option<FailureClass>)> = self.rows.iter().collect();
        rows.sort_by_key(|(row, class)| {
            (
                row.verdict == Verdict::Valid,
                *class != Some(FailureClass::New),
                row.verdict != Verdict::Invalid,
                row.plan.clone(),
                row.seed_index,
                row.nodes,
            )
        });
        let failures = rows.iter().filter(|(r, _)| r.verdict != Verdict::Valid).count();
        let listed: Vec<_> = if rows.len() <= LIST_EVERY_SEED_MAX {
            rows.clone()
        } else {
            rows.iter()
                .copied()
                .filter(|(r, _)| r.verdict != Verdict::Valid)
                .collect()
        };
        let mut out = self.headline();
        out.push_str(&seed_table(&listed));
        if listed.len() < rows.len() {
            let _ = writeln!(out, "  ({} valid seeds not listed)", rows.len() - listed.len());
        }
        out.push_str(&plan_table(&rows));
        if let Some(triage) = &self.triage {
            out.push_str(&faultline_reports::triage::render_text(triage));
        }
        if self.pruned > 0 {
            let _ = writeln!(out, "  retention: pruned {} older passing run folder(s)", self.pruned);
        }
        let mode = if self.state.guided { "guided" } else { "uniform" };
        let _ = writeln!(
            out,
            "  behaviours: {} distinct over the campaign ({mode}; per run in campaigns/{}/behaviours*.jsonl)",
            self.behaviours, self.state.id
        );
        let _ = writeln!(out, "  index: {}", self.index.display());
        let _ = writeln!(out, "  junit: {}", self.junit.display());
        out.push_str(&self.closing_line(failures));
        out
    }

    fn headline(&self) -> String {
        let state = &self.state;
        let count = |v: Verdict| self.rows.iter().filter(|(r, _)| r.verdict == v).count();
        let shard = if state.shard.is_whole() {
            String::new()
        } else {
            format!(" shard {}", state.shard)
        };
        let ended = match self.ending {
            Ending::Finished => "finished",
            Ending::Interrupted => "interrupted (continue with --resume)",
            Ending::StoppedOnFail => "stopped on the first failure",
            Ending::BudgetSpent => "budget spent",
        };
        format!(
            "faultline campaign {}{shard}: {ended}; {} seed(s) of {} plan(s): {} valid, {} invalid, {} unknown; \
             {} this time\n",
            state.id,
            self.rows.len(),
            state.plans.len(),
            count(Verdict::Valid),
            count(Verdict::Invalid),
            count(Verdict::Unknown),
            humantime::format_duration(std::time::Duration::from_secs(self.elapsed.as_secs()))
        )
    }

    fn closing_line(&self, failures: usize) -> String {
        let verdict = match self.exit_code() {
            0 => "VALID",
            1 => "INVALID",
            EXIT_INTERRUPTED => "INTERRUPTED",
            _ => "UNKNOWN",
        };
        let reproducible = self
            .rows
            .iter()
            .filter(|(r, _)| r.reproducibility == Some(faultline_reports::seeds::Reproducibility::Reproducible))
            .count();
        let flaky = self
            .rows
            .iter()
            .filter(|(r, _)| r.reproducibility == Some(faultline_reports::seeds::Reproducibility::Flaky))
            .count();
        let new = self.rows.iter().filter(|(_, c)| *c == Some(FailureClass::New)).count();
        format!(
            "faultline campaign: {verdict} — {failures} of {} seed(s) failed ({reproducible} reproducible, {flaky} \
             flaky; {new} in new failure classes) — {}\n",
            self.rows.len(),
            self.index.display()
        )
    }
}

fn seed_table(rows: &[&(SeedRow, Option<FailureClass>)]) -> String {
    let mut out = format!(
        "  {:<8} {:<28} {:>10} {:<16} {:<6} {:<13} {:>9}  {}\n",
        "verdict", "plan", "seed", "check", "class", "reruns", "duration", "repro"
    );
    for (row, class) in rows {
        let plan = match row.nodes {
            Some(n) => format!("{} ({n} nodes)", row.plan),
            None => row.plan.clone(),
        };
        let reruns = match row.reproducibility {
            Some(r) => r.to_string(),
            None if row.verdict != Verdict::Valid => "not rerun".into(),
            None => "-".into(),
        };
        let _ = writeln!(
            out,
            "  {:<8} {:<28} {:>10} {:<16} {:<6} {:<13} {:>7.1} s  {}",
            shout(row.verdict),
            plan,
            row.seed,
            row.checks_text(),
            class.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            reruns,
            row.duration_ms as f64 / 1000.0,
            row.repro
        );
    }
    out
}

fn plan_table(rows: &[&(SeedRow, Option<FailureClass>)]) -> String {
    let mut plans: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for (row, _) in rows {
        let counts = plans.entry(&row.plan).or_default();
        counts[match row.verdict {
            Verdict::Valid => 0,
            Verdict::Invalid => 1,
            Verdict::Unknown => 2,
        }] += 1;
    }
    let mut plans: Vec<(&str, [usize; 3])> = plans.into_iter().collect();
    plans.sort_by_key(|(name, [_, invalid, unknown])| (std::cmp::Reverse((*invalid, *unknown)), *name));
    let mut out = format!(
        "  {:<28} {:>6} {:>6} {:>8} {:>8}\n",
        "plan", "seeds", "valid", "invalid", "unknown"
    );
    for (name, [valid, invalid, unknown]) in plans {
        let _ = writeln!(
            out,
            "  {:<28} {:>6} {:>6} {:>8} {:>8}",
            name,
            valid + invalid + unknown,
            valid,
            invalid,
            unknown
        );
    }
    out
}
