//! The stages of the search, in the order [`Search::run`] takes them: drop what came after the evidence, shorten the
//! phase, ddmin over the faults, start earlier, unanchor, halve durations, shrink the workload, confirm.

use super::search::{Candidate, Knob, Search};
use crate::explore::replay::{self, RecordedFault};
use faultline_reports::shrink::Step;

/// How long after its last fault a shrunk phase runs on (the failure may show a little after the fault).
pub(super) const PHASE_TAIL_MS: u64 = 3000;
/// How early in the phase a shrunk schedule may start (the cluster has some traffic behind it by then).
const EARLIEST_FAULT_MS: u64 = 3000;
/// A fault shorter than this is not halved further.
const MIN_DURATION_MS: u64 = 200;

impl Search {
    /// Drops, in one step, every fault that started after the source run first showed the failure inside its fault
    /// phase (a refusal to boot, a stale read): what came after the evidence did not cause it. One try instead of
    /// the ddmin steps that would find the same, a few faults at a time.
    pub(super) fn drop_after_evidence(&mut self) -> anyhow::Result<()> {
        let Some(evidence_ms) = self.evidence_ms else {
            return Ok(());
        };
        let mut candidate = self.best.clone();
        candidate.faults.retain(|f| f.start_ms < evidence_ms);
        let dropped = self.best.faults.len() - candidate.faults.len();
        if dropped == 0 || candidate.faults.is_empty() {
            return Ok(());
        }
        let change = format!(
            "without the {dropped} fault(s) that started after the first evidence at {}",
            replay::seconds(evidence_ms)
        );
        self.test("faults", change, &candidate)?;
        Ok(())
    }

    /// Cuts the phase to just after the last fault.
    pub(super) fn shorten_phase(&mut self) -> anyhow::Result<()> {
        let last_end = self
            .best
            .faults
            .iter()
            // An anchored fault may come as late as its `otherwise`, when the observation does not come.
            .map(|f| replay::latest_start_ms(f) + f.duration_ms)
            .max()
            .unwrap_or(0);
        let phase_ms = (last_end + PHASE_TAIL_MS).max(5000);
        if phase_ms + 1000 < self.best.phase_ms {
            let mut candidate = self.best.clone();
            candidate.phase_ms = phase_ms;
            let change = format!(
                "fault phase {} -> {}",
                replay::seconds(self.best.phase_ms),
                replay::seconds(phase_ms)
            );
            self.test("phase", change, &candidate)?;
        }
        Ok(())
    }

    /// ddmin over the fault list ([`ddmin`]); then, with one fault left, whether the failure needs any.
    pub(super) fn ddmin(&mut self) -> anyhow::Result<()> {
        let faults = self.best.faults.clone();
        ddmin(faults.len(), |kept, removed| {
            let mut candidate = self.best.clone();
            candidate.faults = kept.iter().map(|&i| faults[i].clone()).collect();
            let change = match removed {
                [one] => format!("without {}", faults[*one]),
                more => format!("without {} faults ({} left)", more.len(), kept.len()),
            };
            self.test("faults", change, &candidate)
        })?;
        if self.best.faults.len() == 1 {
            let mut candidate = self.best.clone();
            candidate.faults.clear();
            self.test("faults", "without any fault".to_string(), &candidate)?;
        }
        Ok(())
    }

    /// Moves every fault earlier, so the first starts [`EARLIEST_FAULT_MS`] into the phase, and the phase as much
    /// shorter (a failure that needs a few faults rarely needs the half minute of traffic before them).
    pub(super) fn start_earlier(&mut self) -> anyhow::Result<()> {
        let Some(first) = self.best.faults.iter().map(|f| f.start_ms).min() else {
            return Ok(());
        };
        let shift = first.saturating_sub(EARLIEST_FAULT_MS);
        if shift < 2000 {
            return Ok(());
        }
        let mut candidate = self.best.clone();
        for fault in &mut candidate.faults {
            fault.start_ms -= shift;
            if let Some(anchor) = &mut fault.anchor {
                anchor.observed_ms = anchor.observed_ms.saturating_sub(shift);
            }
        }
        candidate.phase_ms = candidate.phase_ms.saturating_sub(shift).max(5000);
        candidate.shift_ms += shift;
        let change = format!("every fault {} earlier", replay::seconds(shift));
        self.test("phase", change, &candidate)?;
        Ok(())
    }

    /// Turns each anchored fault into a timed one, at the offset where the best plan's failing tries applied it
    /// (their median), and keeps that when it still fails (a majority, as for every refinement). An anchor can
    /// outlive its reason: once ddmin dropped the kill of n3, "kill the primary 810 ms after n3 restarts" fires at
    /// its trigger's `otherwise` in every try, and the plan should say what happens ("kill primary at 4.3s"), not
    /// wait for a restart that no fault causes any more. An anchor that matters (a kill when a node starts
    /// repairing) stays: its timed version fails less often and is rejected.
    pub(super) fn unanchor(&mut self) -> anyhow::Result<()> {
        let anchored: Vec<RecordedFault> = self
            .best
            .faults
            .iter()
            .filter(|f| f.anchor.is_some())
            .cloned()
            .collect();
        for fault in anchored {
            if self.stopped.is_some() {
                return Ok(());
            }
            let Some(index) = self.best.faults.iter().position(|f| *f == fault) else {
                continue;
            };
            let Some(at_ms) = self.applied_at(index) else {
                continue;
            };
            let mut candidate = self.best.clone();
            candidate.faults[index].anchor = None;
            candidate.faults[index].start_ms = at_ms;
            candidate.faults.sort_by_key(|f| f.start_ms);
            let change = format!("{fault}: timed, at {}", replay::seconds(at_ms));
            self.test("anchors", change, &candidate)?;
        }
        Ok(())
    }

    /// When the best plan's failing tries applied its fault `index` ([`applied_offset`] over their histories).
    pub(super) fn applied_at(&self, index: usize) -> Option<u64> {
        let step = self.best_step()?;
        let recordings: Vec<Vec<RecordedFault>> = step
            .tries
            .iter()
            .filter(|t| t.reproduced)
            .filter_map(|t| {
                let (_, recorded) = replay::load(&self.options.store_root.join(t.run.as_deref()?)).ok()?;
                Some(recorded.faults)
            })
            .collect();
        applied_offset(&self.best.faults, index, &recordings)
    }

    pub(super) fn halve_durations(&mut self) -> anyhow::Result<()> {
        for index in 0..self.best.faults.len() {
            loop {
                let Some(fault) = self.best.faults.get(index) else {
                    return Ok(());
                };
                let halved = fault.duration_ms / 2;
                if halved < MIN_DURATION_MS || self.stopped.is_some() {
                    break;
                }
                let change = format!("{} for {}", fault, replay::seconds(halved));
                let mut candidate = self.best.clone();
                candidate.faults[index].duration_ms = halved;
                if self.test("durations", change, &candidate)? != Some(true) {
                    break;
                }
            }
        }
        Ok(())
    }

    pub(super) fn shrink_workload(&mut self) -> anyhow::Result<()> {
        let knobs: [Knob; 3] = [
            |c| {
                (c.concurrency > 1).then(|| {
                    c.concurrency = (c.concurrency / 2).max(1);
                    format!("{} client{}", c.concurrency, if c.concurrency == 1 { "" } else { "s" })
                })
            },
            |c| {
                (c.rate > 10.0).then(|| {
                    c.rate = (c.rate / 2.0).round();
                    format!("{} ops/s", c.rate)
                })
            },
            |c| {
                (c.keys > 1).then(|| {
                    c.keys = (c.keys / 2).max(1);
                    format!("{} keys", c.keys)
                })
            },
        ];
        for knob in knobs {
            loop {
                let mut candidate = self.best.clone();
                let Some(change) = knob(&mut candidate) else {
                    break;
                };
                if self.test("workload", change, &candidate)? != Some(true) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Runs the best plan `confirm` times, fresh; returns (reproductions, runs done).
    pub(super) fn confirm(&mut self) -> anyhow::Result<(u32, u32)> {
        let best = self.best.clone();
        // The confirmation may use what the budget kept for it.
        let reserved = self.stopped;
        self.stopped = None;
        let change = format!("{} fresh runs of shrunk.yaml", self.options.confirm);
        let (reproduced, runs) = self.measure("confirm", change, &best, self.options.confirm, false)?;
        self.say(&format!(
            "confirmation: the shrunk plan failed with {} in {reproduced} of {runs} fresh runs",
            self.target.id()
        ));
        if self.stopped.is_none() {
            self.stopped = reserved;
        }
        Ok((reproduced, runs))
    }

    /// Runs `candidate` `runs` times, every one (a measurement never stops at the first failure), as the step
    /// `stage`; returns (failed the same way, runs done). `budgeted`: no run starts that would overrun the budget.
    pub(super) fn measure(
        &mut self,
        stage: &str,
        change: String,
        candidate: &Candidate,
        runs: u32,
        budgeted: bool,
    ) -> anyhow::Result<(u32, u32)> {
        let (number, plan_file) = self.write_step_plan(candidate)?;
        let label = format!("step {number} ({stage}: {change})");
        let (tries, _) = self.run_plan(&plan_file, candidate, runs, None, budgeted, &label)?;
        let reproduced = tries.iter().filter(|t| t.reproduced).count() as u32;
        let done = tries.len() as u32;
        self.say(&format!(
            "step {number} {stage}: {change} — failed the same way in {reproduced} of {done}"
        ));
        self.steps.push(Step {
            number,
            stage: stage.into(),
            change,
            faults: candidate.faults.len(),
            phase_ms: candidate.phase_ms,
            plan: plan_file,
            tries,
            failed: reproduced > 0,
            need: 1,
            cut_short: done < runs,
            stopped_once_decided: 0,
        });
        Ok((reproduced, done))
    }
}

/// When runs of a plan of `faults` applied its fault `index`: the median offset, from their fault phase's start, of
/// the fault with the same action in each run's `recordings` (counted in order, as the plan may hold the same action
/// twice); `None` when no run recorded it.
pub(super) fn applied_offset(faults: &[RecordedFault], index: usize, recordings: &[Vec<RecordedFault>]) -> Option<u64> {
    let fault = faults.get(index)?;
    let nth = faults[..index].iter().filter(|f| f.action == fault.action).count();
    let mut offsets: Vec<u64> = recordings
        .iter()
        .filter_map(|recorded| recorded.iter().filter(|f| f.action == fault.action).nth(nth))
        .map(|applied| applied.start_ms)
        .collect();
    offsets.sort_unstable();
    offsets.get(offsets.len().checked_sub(1)? / 2).copied()
}

/// Delta debugging (ddmin, complements first) over items `0..len`: `test(kept, removed)` says whether the items
/// `kept` still fail (`Some(true)`), pass (`Some(false)`), or that the search must stop (`None`: budget, Ctrl-C).
/// Returns the smallest failing set found, in order; the full set is assumed to fail.
pub(super) fn ddmin<E>(
    len: usize,
    mut test: impl FnMut(&[usize], &[usize]) -> Result<Option<bool>, E>,
) -> Result<Vec<usize>, E> {
    let mut current: Vec<usize> = (0..len).collect();
    let mut granularity = 2usize;
    while current.len() >= 2 {
        let mut reduced = false;
        for (from, to) in split(current.len(), granularity) {
            let kept: Vec<usize> = current[..from].iter().chain(&current[to..]).copied().collect();
            match test(&kept, &current[from..to])? {
                Some(true) => {
                    current = kept;
                    granularity = (granularity - 1).max(2);
                    reduced = true;
                    break;
                }
                Some(false) => {}
                None => return Ok(current),
            }
        }
        if !reduced {
            if granularity >= current.len() {
                break;
            }
            granularity = (granularity * 2).min(current.len());
        }
    }
    Ok(current)
}

/// `len` items in `n` contiguous chunks, as (from, to) ranges.
pub(super) fn split(len: usize, n: usize) -> Vec<(usize, usize)> {
    let n = n.clamp(1, len.max(1));
    (0..n)
        .map(|i| (i * len / n, (i + 1) * len / n))
        .filter(|(a, b)| a < b)
        .collect()
}
