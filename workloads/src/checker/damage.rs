//! What a plan's promise about damaged files (`disk: {minority_damage: ...}`) makes of the other checks, once files
//! were cut while the cluster ran.
//!
//! A **cut** is a `disk-surgery` nemesis event that changed bytes a reader reaches ([`changed_data`]: a
//! `snapshot-chunk` only reads a file, a chunk written back over equal bytes changes nothing, and a change past the
//! written data of a preallocated file is never read). A **live cut** is one of a `corrupt` fault (it carries a
//! `fault_id`); the final phase's cuts (the restart-all's `surgery`) do not. The node any cut hit is **damaged** from
//! the cut until it has caught up again: until a status it reports (an `observation` `status` with a `durable`
//! number) is at least the highest durable number any node had reported before the cut; for a system that reports no
//! durable number, until its first status after it booted. A wiped node stays damaged the same way: it is empty
//! until it has recovered. The final phase's cuts count toward a damaged majority like live ones (a node a live cut
//! left damaged and another the restart-all cut are two damaged nodes), but only live cuts are named as the cause.
//!
//! The promises ([`Promise`]):
//! - `tolerate` (the default) and `refuse`: what fails while at most a minority is damaged is a finding, and its
//!   reason names the last live cut before the first evidence; from the moment a **majority** was damaged at once,
//!   the data may exist nowhere intact, so a failure whose first evidence comes after it is `unknown` (not judged).
//!   `refuse` also makes booting on interior damage a problem (the durability check's `refuses_interior_damage`).
//! - `anything`: the system promises nothing about damaged files, so a failure whose first evidence follows a live
//!   cut is `unknown`, with the cut named.
//!
//! Times in the sentences are on the phase clock ([`History::phase_start_ns`]), the clock of a plan's `at:`.
//!
//! The boot check judges refusals itself (a refusal after a cut is legitimate; a majority refused at once is
//! `unknown`) and `history` is about the harness, so neither is changed here.

use super::CheckResult;
use crate::history::{phase_time, History, Lifecycle, Nemesis, Observation};
use crate::verdict::Verdict;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What a plan declares a system promises when a minority's files are damaged on a live cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Promise {
    /// Nothing acknowledged is lost; the damaged node may refuse to boot or forget its own tail.
    #[default]
    Tolerate,
    /// As `Tolerate`, and a damaged node refuses to boot on interior damage.
    Refuse,
    /// No promise.
    Anything,
}

/// One live cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveCut {
    /// The node cut.
    pub node: String,
    /// When (ns since the run started).
    pub time_ns: u64,
    /// The surgery op (`truncate-tail`, `flip-bits` ...).
    pub op: String,
    /// The file cut, relative to the run when the record names it.
    pub file: String,
}

/// The live cuts of a run, and when a majority of its nodes were first damaged at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveDamage {
    /// Every live cut, in history order.
    pub cuts: Vec<LiveCut>,
    /// When a majority was first damaged at once, and which nodes.
    pub majority: Option<(u64, Vec<String>)>,
    /// Every node a cut hit (live or in the final phase).
    pub cut_nodes: BTreeSet<String>,
    /// When the fault phase began: the judgement's sentences give times on the phase clock, as plans do.
    pub phase_start_ns: u64,
}

/// Reads the live cuts and the damaged-node windows from a history.
pub fn live_damage(history: &History) -> LiveDamage {
    let nodes: BTreeSet<&str> = history
        .events
        .iter()
        .filter(|e| e.is(Lifecycle::Start))
        .filter_map(|e| e.node.as_deref())
        .collect();
    let majority = nodes.len() / 2 + 1;
    let mut durable_max = 0u64;
    // node -> (the durable number it must reach again, booted since the cut)
    let mut damaged: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    let mut damage = LiveDamage {
        phase_start_ns: history.phase_start_ns(),
        ..LiveDamage::default()
    };
    for event in &history.events {
        let node = event.node.clone().unwrap_or_default();
        if event.is(Nemesis::DiskSurgery) {
            let surgery = &event.value["surgery"];
            if !changed_data(surgery) {
                continue;
            }
            if !event.value["fault_id"].is_null() {
                damage.cuts.push(LiveCut {
                    node: node.clone(),
                    time_ns: event.time_ns,
                    op: surgery["op"].as_str().unwrap_or("").to_string(),
                    file: surgery["file"].as_str().unwrap_or("").to_string(),
                });
            }
            damage.cut_nodes.insert(node.clone());
            damaged.insert(node, (durable_max, false));
        } else if event.is(Lifecycle::BootOk) {
            if let Some((_, booted)) = damaged.get_mut(&node) {
                *booted = true;
            }
        } else if event.is(Observation::Status) {
            let durable = event.value["durable"].as_u64();
            if let Some(&(needed, booted)) = damaged.get(&node) {
                let caught_up = match durable {
                    Some(durable) => durable >= needed,
                    None => booted,
                };
                if caught_up {
                    damaged.remove(&node);
                }
            }
            durable_max = durable_max.max(durable.unwrap_or(0));
        }
        if damage.majority.is_none() && !nodes.is_empty() && damaged.len() >= majority {
            damage.majority = Some((event.time_ns, damaged.keys().cloned().collect()));
        }
    }
    damage
}

/// Applies `promise` to `checks` given the run's live `damage` (see the module doc).
pub fn judge(checks: &mut [CheckResult], damage: &LiveDamage, promise: Promise) {
    for check in checks.iter_mut() {
        if check.verdict != Verdict::Invalid || check.name == "boot" || check.name == "history" {
            continue;
        }
        let evidence = check.evidence_ns.unwrap_or(u64::MAX);
        let last = damage.cuts.iter().rfind(|c| c.time_ns <= evidence);
        let cut = last.map(|last| {
            format!(
                "{} of {}'s {} at {}",
                last.op,
                last.node,
                file_name(&last.file),
                phase_time(last.time_ns, damage.phase_start_ns)
            )
        });
        // A node's own disk decides what it boots with: one whose files no cut hit and that forgot what it had
        // applied is a finding however damaged the others were.
        let intact = check
            .evidence_nodes
            .iter()
            .find(|node| !damage.cut_nodes.contains(node.as_str()));
        match (&damage.majority, cut) {
            (Some((at_ns, nodes)), _) if *at_ns <= evidence && intact.is_some() => {
                check.reason = format!(
                    "{} (judged although a majority of the nodes ({}) had damaged files at once from {}: no cut hit \
                     {}'s own files)",
                    check.reason,
                    nodes.join(", "),
                    phase_time(*at_ns, damage.phase_start_ns),
                    intact.expect("just matched")
                );
            }
            (Some((at_ns, nodes)), _) if *at_ns <= evidence => {
                check.verdict = Verdict::Unknown;
                check.reason = format!(
                    "{} (not judged: a majority of the nodes ({}) had damaged files at once from {}, beyond \
                     disk.minority_damage)",
                    check.reason,
                    nodes.join(", "),
                    phase_time(*at_ns, damage.phase_start_ns)
                );
            }
            (_, None) => {}
            (_, Some(cut)) if promise == Promise::Anything => {
                check.verdict = Verdict::Unknown;
                check.reason = format!(
                    "{} (not judged: the plan declares disk.minority_damage: anything, and the {cut} came before \
                     the first evidence)",
                    check.reason
                );
            }
            (_, Some(cut)) => check.reason = format!("{}; after a live cut: {cut}", check.reason),
        }
    }
}

/// Whether a recorded cut (a `disk-surgery` event's `surgery`) changed bytes a reader of the file reaches: it
/// succeeded, it is not a `snapshot-chunk` (which only reads), the bytes it left differ from those it found, and,
/// in a preallocated file (one whose record has `extent_bytes`, where its written data ended), it began inside the
/// written data: a reader stops at the first zeros past it, so a change out there is never read.
pub fn changed_data(surgery: &Value) -> bool {
    let Some(op) = surgery["op"].as_str() else {
        return false; // a cut that failed
    };
    let same_bytes = surgery["before_xxh3"].is_string() && surgery["before_xxh3"] == surgery["after_xxh3"];
    let extent_bytes = surgery["extent_bytes"].as_u64().unwrap_or(0);
    let unread = extent_bytes > 0 && surgery["offset"].as_u64().is_some_and(|offset| offset >= extent_bytes);
    op != "snapshot-chunk" && !same_bytes && !unread
}

/// The last component of a recorded file path (`wal`, `checkpoint.00000000000000002702`).
fn file_name(path: &str) -> &str {
    path.rsplit('/')
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or("file")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{event, history, lifecycle};
    use crate::history::EventKind;
    use serde_json::json;

    fn cut(node: &str, op: &str) -> crate::history::Event {
        event(
            EventKind::Nemesis,
            "disk-surgery",
            Some(node),
            json!({"fault_id": 1, "surgery": {"op": op, "file": format!("/s/nodes/{node}/data/wal")}}),
        )
    }

    fn status(node: &str, durable: u64) -> crate::history::Event {
        event(
            EventKind::Observation,
            "status",
            Some(node),
            json!({"role": "backup", "durable": durable}),
        )
    }

    fn start(node: &str) -> crate::history::Event {
        lifecycle("start", node, json!({}))
    }

    fn lost(evidence_ns: u64) -> CheckResult {
        let mut check = CheckResult::new(
            "linearizability",
            Verdict::Invalid,
            "not linearizable".into(),
            Value::Null,
        );
        check.evidence_ns = Some(evidence_ns);
        check
    }

    /// When the event at `index` of a [`timed`] history happened.
    fn at_ms(index: u64) -> u64 {
        index * 1_000_000
    }

    /// A history of `events`, 1 ms apart.
    fn timed(events: Vec<crate::history::Event>) -> History {
        let mut h = history(events);
        for e in &mut h.events {
            e.time_ns = at_ms(e.index);
        }
        h
    }

    #[test]
    fn given_one_damaged_node_that_catches_up_before_the_next_cut_should_never_count_a_majority() {
        let h = timed(vec![
            start("n1"),
            start("n2"),
            start("n3"),
            status("n1", 100),
            cut("n1", "truncate-tail"),
            lifecycle("boot-ok", "n1", json!({})),
            status("n1", 90),  // booted with less: still damaged
            status("n1", 120), // caught up
            cut("n2", "flip-bits"),
        ]);
        let damage = live_damage(&h);
        assert_eq!(damage.cuts.len(), 2);
        assert_eq!(damage.majority, None);
        let mut checks = [lost(at_ms(9))];
        judge(&mut checks, &damage, Promise::Tolerate);
        assert_eq!(checks[0].verdict, Verdict::Invalid, "a minority's damage: judged");
        assert!(
            checks[0]
                .reason
                .ends_with("after a live cut: flip-bits of n2's wal at 0.01 s"),
            "{}",
            checks[0].reason
        );
    }

    /// The events of a rolling `corrupt` (`targets: each`) as the harness writes them: each node's step waits for a
    /// recorded status that shows the durable number the cluster had at its cut (`rolling-ready`) before the next
    /// node is cut, so the rolling fault never damages two nodes at once, however many it damages in turn.
    #[test]
    fn given_a_rolling_corrupt_that_waits_for_each_node_to_catch_up_should_never_count_a_majority() {
        let nemesis = |f: &str, node: &str, step: u64| {
            let value = json!({"fault_id": 1, "target": "each", "rolling": {"step": step, "of": 3}});
            event(EventKind::Nemesis, f, Some(node), value)
        };
        let mut events = vec![
            start("n1"),
            start("n2"),
            start("n3"),
            status("n1", 100),
            status("n2", 100),
        ];
        for (step, node) in [(1, "n1"), (2, "n2"), (3, "n3")] {
            let reached = 100 + 50 * step;
            events.extend([
                nemesis("corrupt", node, step),
                cut(node, "truncate-tail"),
                nemesis("start", node, step),
                lifecycle("boot-ok", node, json!({})),
                status(node, reached - 60), // booted with less than the cluster had at its cut: still damaged
                status(node, reached),      // caught up: the step's wait ends here
                nemesis("rolling-ready", node, step),
                status("n1", reached),
                status("n2", reached),
                status("n3", reached),
            ]);
        }
        let damage = live_damage(&timed(events));
        assert_eq!(damage.cuts.len(), 3, "every node was cut, in turn");
        assert_eq!(damage.majority, None, "never two at once");
    }

    #[test]
    fn given_two_nodes_damaged_at_once_should_leave_a_later_failure_unjudged_and_an_earlier_one_judged() {
        let h = timed(vec![
            start("n1"),
            start("n2"),
            start("n3"),
            status("n1", 100),
            cut("n1", "truncate-tail"),
            lifecycle("wipe", "n1", json!({})),
            cut("n3", "zero-block"), // index 6: n1 not caught up yet
        ]);
        let damage = live_damage(&h);
        assert_eq!(
            damage.majority,
            Some((at_ms(6), vec!["n1".to_string(), "n3".to_string()]))
        );
        let mut checks = [lost(at_ms(5)), lost(at_ms(7))];
        judge(&mut checks, &damage, Promise::Tolerate);
        assert_eq!(checks[0].verdict, Verdict::Invalid, "{}", checks[0].reason);
        assert_eq!(checks[1].verdict, Verdict::Unknown, "{}", checks[1].reason);
        assert!(
            checks[1].reason.contains("a majority of the nodes (n1, n3)"),
            "{}",
            checks[1].reason
        );
    }

    #[test]
    fn given_anything_promised_should_leave_a_failure_after_a_cut_unjudged_and_one_before_judged() {
        let h = timed(vec![start("n1"), start("n2"), start("n3"), cut("n2", "delete-file")]);
        let damage = live_damage(&h);
        let mut checks = [lost(at_ms(2)), lost(at_ms(4))];
        judge(&mut checks, &damage, Promise::Anything);
        assert_eq!(checks[0].verdict, Verdict::Invalid, "before any cut");
        assert_eq!(checks[1].verdict, Verdict::Unknown);
        assert!(
            checks[1].reason.contains("minority_damage: anything"),
            "{}",
            checks[1].reason
        );
    }

    #[test]
    fn given_only_snapshots_unchanged_bytes_and_unread_zeros_should_count_no_damage() {
        let unchanged = event(
            EventKind::Nemesis,
            "disk-surgery",
            Some("n2"),
            json!({"fault_id": 2, "surgery": {"op": "restore-chunk", "offset": 0, "before_xxh3": "ab", "after_xxh3": "ab"}}),
        );
        let past_the_data = event(
            EventKind::Nemesis,
            "disk-surgery",
            Some("n3"),
            json!({"fault_id": 3, "surgery": {"op": "misdirect-chunk", "offset": 65536, "extent_bytes": 4096,
                   "before_xxh3": "00", "after_xxh3": "ab"}}),
        );
        let h = timed(vec![
            start("n1"),
            start("n2"),
            start("n3"),
            cut("n1", "snapshot-chunk"),
            unchanged,
            past_the_data,
        ]);
        assert_eq!(live_damage(&h), LiveDamage::default());
    }

    /// A live cut left n2 damaged; the restart-all's surgery then cut n1: two of three nodes damaged at once, so
    /// what the final reads find is beyond the plan's promise, though no second *live* cut happened.
    #[test]
    fn given_a_final_phase_cut_while_a_live_cut_still_damages_another_node_should_count_a_majority() {
        let final_cut = event(
            EventKind::Nemesis,
            "disk-surgery",
            Some("n1"),
            json!({"surgery": {"op": "flip-bits", "file": "/s/nodes/n1/data/wal"}}),
        );
        let h = timed(vec![
            start("n1"),
            start("n2"),
            start("n3"),
            status("n1", 100),
            cut("n2", "truncate-tail"),
            lifecycle("boot-ok", "n2", json!({})),
            status("n2", 40), // still behind what the cluster had at its cut
            event(EventKind::Lifecycle, "restart-all", None, json!({})),
            final_cut, // index 8
        ]);
        let damage = live_damage(&h);
        assert_eq!(damage.cuts.len(), 1, "only the live cut is named: {damage:?}");
        assert_eq!(
            damage.majority,
            Some((at_ms(8), vec!["n1".to_string(), "n2".to_string()]))
        );
        let mut checks = [lost(at_ms(9))];
        judge(&mut checks, &damage, Promise::Tolerate);
        assert_eq!(checks[0].verdict, Verdict::Unknown, "{}", checks[0].reason);
        // The restart-all's cut alone, on one node, is no majority and names no live cut.
        let alone = timed(vec![start("n1"), start("n2"), start("n3"), h.events[8].clone()]);
        let damage = live_damage(&alone);
        assert_eq!((damage.cuts.len(), &damage.majority), (0, &None), "{damage:?}");
        let mut checks = [lost(at_ms(9))];
        judge(&mut checks, &damage, Promise::Tolerate);
        assert_eq!(checks[0].reason, "not linearizable");
    }

    /// `reference-mixed`'s restart-all cuts n2 and n3: a majority damaged at once. What n1, whose files no cut hit,
    /// forgot of what it had applied is still a finding (its own disk decides what it boots with; seen as `unknown`
    /// on the `ack-before-fsync` mutant before); what a cut node forgot, or a check about the whole cluster, is not
    /// judged.
    #[test]
    fn given_a_majority_cut_in_the_final_phase_when_an_uncut_node_forgot_what_it_applied_should_stay_invalid() {
        let final_cut = |node: &str| {
            event(
                EventKind::Nemesis,
                "disk-surgery",
                Some(node),
                json!({"surgery": {"op": "flip-bits", "file": format!("/s/nodes/{node}/data/wal")}}),
            )
        };
        let h = timed(vec![
            start("n1"),
            start("n2"),
            start("n3"),
            status("n1", 100),
            event(EventKind::Lifecycle, "restart-all", None, json!({})),
            final_cut("n2"),
            final_cut("n3"), // index 6: a majority
        ]);
        let damage = live_damage(&h);
        assert_eq!(damage.majority.as_ref().map(|m| m.0), Some(at_ms(6)));
        let forgot = |node: &str| {
            let mut check = CheckResult::new(
                "durability",
                Verdict::Invalid,
                format!("{node} applied 558 before the restart-all's kill -9 and booted at 556"),
                Value::Null,
            );
            check.evidence_ns = Some(at_ms(9));
            check.evidence_nodes = vec![node.to_string()];
            check
        };
        let mut checks = [forgot("n1"), forgot("n2"), lost(at_ms(9))];
        judge(&mut checks, &damage, Promise::Tolerate);
        assert_eq!(checks[0].verdict, Verdict::Invalid, "{}", checks[0].reason);
        assert!(
            checks[0].reason.ends_with("no cut hit n1's own files)"),
            "{}",
            checks[0].reason
        );
        assert_eq!(checks[1].verdict, Verdict::Unknown, "n2 was cut: {}", checks[1].reason);
        assert_eq!(
            checks[2].verdict,
            Verdict::Unknown,
            "about the cluster: {}",
            checks[2].reason
        );
    }

    /// The plan said `at: 17s`: the fault phase began 4 s into the run, so the cut happened at 21 s of the run, and
    /// the sentence says 17 s, on the plan's clock.
    #[test]
    fn given_a_cut_after_the_set_up_when_judged_should_name_its_time_on_the_phase_clock() {
        let at = |mut e: crate::history::Event, seconds: u64| {
            e.time_ns = seconds * 1_000_000_000;
            e
        };
        let h = history(vec![
            at(start("n1"), 0),
            at(start("n2"), 0),
            at(start("n3"), 0),
            at(event(EventKind::Meta, "schedule", None, json!({})), 4),
            at(cut("n3", "truncate-tail"), 21),
        ]);
        let mut checks = [lost(30_000_000_000)];
        judge(&mut checks, &live_damage(&h), Promise::Tolerate);
        assert!(
            checks[0]
                .reason
                .ends_with("after a live cut: truncate-tail of n3's wal at 17.00 s"),
            "{}",
            checks[0].reason
        );
    }
}
