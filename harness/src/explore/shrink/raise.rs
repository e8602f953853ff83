//! Making a shrunk failure fail more often without adding faults: each timed fault anchored, in turn, to the log
//! line that came right before it in the failing tries, kept when the plan then fails more often.
//!
//! A timing-dependent failure needs its faults at a moment ("the kill just after n2 adopted the view's log"); a
//! fault at a fixed offset meets that moment only when the cluster happens to be there at that offset. Anchored to
//! the line, it follows the moment wherever it falls in a run. The line: among the lines logged at most
//! [`LOOKBACK_MS`] before the fault in the best plan's failing tries, the (node, template) seen there in the most
//! tries, then the closest to the fault; a line counts only when its template did not occur on its node in the
//! replay window before it ([`replay::slack_ms`]: the replay's trigger fires on the first occurrence in its window,
//! so a template logged every few milliseconds would fire the fault early). Each candidate runs `--baseline` times,
//! as the shrunk plan did just before, and is kept when it failed the same way in more of them.

use super::search::Search;
use super::stages::{applied_offset, PHASE_TAIL_MS};
use crate::explore::replay::{self, Anchor, RecordedFault};
use faultline_faults::process::parse_node_name;
use faultline_faults::trigger::{Condition, LogCondition, NodeFilter};
use faultline_workloads::behaviour::lines::timed_lines;
use faultline_workloads::history::History;
use std::collections::BTreeMap;
use std::path::Path;

/// How long before a fault a line may come to be the one it followed.
pub(super) const LOOKBACK_MS: u64 = 1000;

/// The line a fault followed, as a replay's trigger looks for it again.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LineBefore {
    /// Whose log.
    pub(super) node: String,
    /// The masked line.
    pub(super) template: String,
    /// From the line to the fault (median over the tries that had it).
    pub(super) gap_ms: u64,
    /// When the line came, from the start of the fault phase (median).
    pub(super) observed_ms: u64,
    /// Failing tries in which it came before the fault.
    pub(super) tries: usize,
}

impl LineBefore {
    /// The anchor that fires the fault `gap_ms` after the line on its node.
    pub(super) fn anchor(&self) -> Option<Anchor> {
        Some(Anchor {
            trigger: None,
            condition: Condition::Template(LogCondition {
                pattern: self.template.clone(),
                node: NodeFilter::Node(parse_node_name(&self.node)?),
            }),
            observed_ms: self.observed_ms,
            delay_ms: self.gap_ms,
        })
    }
}

impl Search {
    /// After the shrink: measures the best plan's rate (`--baseline` runs), then anchors each of its timed faults
    /// to the line it followed, keeping each anchor that raised the rate. Stops at the budget and on Ctrl-C.
    pub(super) fn raise_rate(&mut self) -> anyhow::Result<()> {
        let timed: Vec<usize> = (0..self.best.faults.len())
            .filter(|&i| self.best.faults[i].anchor.is_none())
            .collect();
        let runs = self.options.baseline;
        if timed.is_empty() || self.stopped.is_some() || runs == 0 {
            return Ok(());
        }
        // The lines come from the failing tries of the step that made the plan the best (before this one).
        let sources = self.failing_runs();
        let best = self.best.clone();
        if !self.fits_budget(&best) {
            self.stopped = Some(super::search::Stop::Budget);
            return Ok(());
        }
        let change = format!("the shrunk plan, {runs} times: its rate before raising it");
        let (mut failed, mut ran) = self.measure("rate", change, &best, runs, true)?;
        if ran < runs {
            return Ok(());
        }
        self.before_raise = Some((failed, ran));
        if failed == ran {
            self.say("the shrunk plan failed in every run: no rate to raise");
            return Ok(());
        }
        let sources: Vec<_> = sources.into_iter().chain(self.failing_runs()).collect();
        for index in timed {
            if self.stopped.is_some() {
                break;
            }
            let recordings: Vec<(std::path::PathBuf, Vec<RecordedFault>)> = sources
                .iter()
                .filter_map(|dir| Some((dir.clone(), replay::load(dir).ok()?.1.faults)))
                .collect();
            let Some(line) = line_before(&self.best.faults, index, &recordings) else {
                continue;
            };
            let Some(anchor) = line.anchor() else {
                continue;
            };
            let fault = &self.best.faults[index];
            let change = format!(
                "{fault}: {} after {} logs \"{}\" (the line before it in {} of {} failing tries)",
                replay::seconds(line.gap_ms),
                line.node,
                line.template,
                line.tries,
                recordings.len()
            );
            let mut candidate = self.best.clone();
            if !self.fits_budget(&candidate) {
                self.stopped = Some(super::search::Stop::Budget);
                break;
            }
            candidate.faults[index].anchor = Some(anchor);
            // An anchored fault may come as late as its trigger's `otherwise`: the phase must still hold it.
            let latest_end = replay::latest_start_ms(&candidate.faults[index]) + candidate.faults[index].duration_ms;
            candidate.phase_ms = candidate.phase_ms.max(latest_end + PHASE_TAIL_MS);
            let (f, r) = self.measure("raise", change, &candidate, runs, true)?;
            if r < runs {
                break;
            }
            // More failures in as many runs: a higher rate (the header and the confirmation say by how much).
            let kept = u64::from(f) * u64::from(ran) > u64::from(failed) * u64::from(r);
            if let Some(step) = self.steps.last_mut() {
                step.failed = kept;
            }
            if kept {
                self.best = candidate;
                (failed, ran) = (f, r);
                self.write_best()?;
            }
        }
        Ok(())
    }

    /// The run folders of the failing tries of the step that made the best plan the best.
    fn failing_runs(&self) -> Vec<std::path::PathBuf> {
        self.best_step()
            .map(|step| {
                step.tries
                    .iter()
                    .filter(|t| t.reproduced)
                    .filter_map(|t| Some(self.options.store_root.join(t.run.as_deref()?)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The line fault `index` of `faults` followed in the runs `recordings` (each run's folder and recorded faults), if
/// one came before it in any of them (see the module docs).
pub(super) fn line_before(
    faults: &[RecordedFault],
    index: usize,
    recordings: &[(std::path::PathBuf, Vec<RecordedFault>)],
) -> Option<LineBefore> {
    let mut seen: BTreeMap<(String, String), Vec<(u64, u64)>> = BTreeMap::new();
    for (dir, recorded) in recordings {
        let Some(start_ms) = applied_offset(faults, index, std::slice::from_ref(recorded)) else {
            continue;
        };
        for (key, gap_and_offset) in lines_before_in(dir, start_ms) {
            seen.entry(key).or_default().push(gap_and_offset);
        }
    }
    pick(seen)
}

/// Of each (node, template) and its (gap, offset) in each try that had it, the line in the most tries, then the
/// closest to the fault (median gap); its gap and offset the medians.
pub(super) fn pick(seen: BTreeMap<(String, String), Vec<(u64, u64)>>) -> Option<LineBefore> {
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[(v.len() - 1) / 2]
    };
    seen.into_iter()
        .filter(|(_, found)| !found.is_empty())
        .map(|((node, template), found)| LineBefore {
            node,
            template,
            tries: found.len(),
            gap_ms: median(found.iter().map(|(gap, _)| *gap).collect()),
            observed_ms: median(found.iter().map(|(_, at)| *at).collect()),
        })
        .max_by(|a, b| (a.tries, std::cmp::Reverse(a.gap_ms)).cmp(&(b.tries, std::cmp::Reverse(b.gap_ms))))
}

/// In the run at `dir`, each (node, template) logged at most [`LOOKBACK_MS`] before `start_ms` (from the start of
/// the fault phase) and not in the replay window before that: (gap to the fault, its offset), the latest line each.
fn lines_before_in(dir: &Path, start_ms: u64) -> BTreeMap<(String, String), (u64, u64)> {
    let Ok(history) = History::read_jsonl(&dir.join("history.jsonl")) else {
        return BTreeMap::new();
    };
    lines_before(&history, &crate::run::analyze::read_node_logs(dir), start_ms)
}

/// [`lines_before_in`] of a run's history and node logs.
pub(super) fn lines_before(
    history: &History,
    logs: &BTreeMap<String, String>,
    start_ms: u64,
) -> BTreeMap<(String, String), (u64, u64)> {
    let mut found = BTreeMap::new();
    let Some(phase_start_ns) = history
        .events
        .iter()
        .find(|e| e.is(faultline_workloads::history::Meta::Schedule))
        .map(|e| e.time_ns)
    else {
        return found;
    };
    let lines = timed_lines(logs, faultline_workloads::nodelog::anchor_offset_ns(history));
    let fault_ns = phase_start_ns + start_ms * 1_000_000;
    let offset_ms = |ns: u64| ns.saturating_sub(phase_start_ns) / 1_000_000;
    for (i, line) in lines.iter().enumerate() {
        if line.time_ns > fault_ns || line.time_ns < phase_start_ns {
            continue;
        }
        let gap_ms = (fault_ns - line.time_ns) / 1_000_000;
        if gap_ms > LOOKBACK_MS {
            continue;
        }
        let at_ms = offset_ms(line.time_ns);
        let window_from = line.time_ns.saturating_sub(replay::slack_ms(at_ms) * 1_000_000);
        let alone = !lines[..i]
            .iter()
            .any(|l| l.time_ns >= window_from && l.node == line.node && l.template == line.template);
        let key = (line.node.clone(), line.template.clone());
        if alone {
            found.insert(key, (gap_ms, at_ms));
        } else {
            // A later line of the same kind is not alone either.
            found.remove(&key);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_workloads::history::{Event, Meta, Name};
    use serde_json::json;

    fn at(ms: u64, name: impl Into<Name>, value: serde_json::Value) -> Event {
        let mut event = Event::named(name, None, value);
        event.time_ns = ms * 1_000_000;
        event
    }

    /// A run that started at unix 100 s, its fault phase 1 s later; node logs as given.
    fn run() -> History {
        History {
            events: vec![
                at(0, Meta::RunStart, json!({"wall_clock_unix_ns": 100_000_000_000u64})),
                at(1000, Meta::Schedule, json!({})),
            ],
            ..History::default()
        }
    }

    #[test]
    fn given_lines_before_a_fault_when_read_should_keep_the_lone_ones_within_a_second_and_drop_chatter() {
        // The fault comes 2 s into the phase: history 3 s, unix 103.000 s.
        let mut chatter = String::new();
        for tenth in 0..=20 {
            chatter.push_str(&format!(
                "1970-01-01T00:01:{:02}.{}00Z  INFO committed op={tenth}\n",
                41 + tenth / 10,
                tenth % 10
            ));
        }
        let logs = BTreeMap::from([
            ("n1".to_string(), chatter),
            (
                "n2".to_string(),
                "1970-01-01T00:01:41.500Z  INFO view change started old_view=1\n\
                 1970-01-01T00:01:42.700Z  INFO view change started old_view=2\n"
                    .to_string(),
            ),
            (
                "n3".to_string(),
                "1970-01-01T00:01:41.000Z  INFO repair done op=3\n\
                 1970-01-01T00:01:42.950Z  INFO repair start source=0\n\
                 1970-01-01T00:01:43.100Z  INFO repair start source=1\n"
                    .to_string(),
            ),
        ]);
        let found = lines_before(&run(), &logs, 2000);
        let keys: Vec<(&str, u64, u64)> = found
            .iter()
            .map(|((node, _), (gap, at))| (node.as_str(), *gap, *at))
            .collect();
        // n1 logs every 100 ms: never alone in the replay's window. n2's second view change came 1.2 s after its
        // first: a replay's trigger would fire on the first. n3's `repair done` is 2 s before the fault: too early;
        // its second `repair start` comes after the fault.
        assert_eq!(keys, [("n3", 50, 1950)], "{found:?}");
    }

    #[test]
    fn given_lines_seen_in_several_tries_when_picked_should_take_the_most_tries_then_the_closest() {
        let key = |node: &str, template: &str| (node.to_string(), template.to_string());
        let seen = BTreeMap::from([
            (
                key("n2", "view change started old_view=N"),
                vec![(300, 1700), (280, 1720), (320, 1680)],
            ),
            (key("n3", "repair start source=N"), vec![(40, 1960)]),
            (
                key("n1", "became primary view=N"),
                vec![(90, 1910), (110, 1890), (70, 1930)],
            ),
        ]);
        let line = pick(seen).expect("a line");
        assert_eq!((line.node.as_str(), line.tries), ("n1", 3), "{line:?}");
        assert_eq!((line.gap_ms, line.observed_ms), (90, 1910), "the medians: {line:?}");
        let anchor = line.anchor().expect("n1 is a node name");
        assert_eq!(anchor.delay_ms, 90);
        assert!(matches!(anchor.condition, Condition::Template(ref l) if l.node == NodeFilter::Node(0)));
        assert_eq!(pick(BTreeMap::new()), None);
    }
}
