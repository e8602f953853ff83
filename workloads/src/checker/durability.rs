//! `durability`: a node that comes back from a restart knows at least what it had applied before it stopped.
//!
//! A node that applied an entry had persisted it. If it boots from a kill -9, a crash or a power loss under a
//! correct fsync policy, with no surgery on its data, knowing less than it had applied, it broke its durability
//! promise, whatever the cluster does next: the peers may hide it while they hold the entries, and a second such node
//! loses them. The check reads two observations per restart from the history (the harness records both; see
//! `faultline_workloads::history::Observation`):
//!
//! - `last-durable` (right before the harness stopped the node, or when it saw it crash): the newest durable value
//!   the node had reported (its adapter's durable lower bound: the reference node's commit, etcd's settled applied
//!   index);
//! - `recovered` (right after the node booted): what it says, in its own boot log, it booted with.
//!
//! A boot is paired with the stop of the process before it, by pid: both observations carry the pid of their
//! process, and the order in which the harness records them is not the order of the processes. A trigger may kill a
//! new process (its `repair start` line) before the watcher has recorded its boot, so that process's `last-durable`
//! precedes its own `recovered`; a restart-all may stop a process whose late boot is recorded after it. A boot pairs
//! with the newest pending stop of another process; a history without pids (older stores) pairs in record order.
//!
//! Each restart is judged, in order:
//! - `ok`: recovered >= durable;
//! - `wiped`: the node was wiped on purpose in between (it rejoins empty);
//! - `booted-on-damage` (a problem): recorded surgery damaged the interior of a file (not its tail; see
//!   [`interior_damage`]) and the system promises to refuse such damage, yet it booted, dropping applied entries;
//! - `damage-truncated` (a named warning): the same, for a system that does not promise to refuse interior damage
//!   (etcd 3.4 takes a zeroed block or a flipped length field for a torn write and truncates there);
//! - `truncated-after-surgery`: recorded surgery on its tail (a torn tail, a deleted file): a drop is expected;
//! - `power-loss-allowed`: it lost power and the plan declares that acknowledged data lives in a quorum's memory;
//! - `forgotten` (a problem): anything else.
//!
//! The verdict is invalid when a restart is a problem (the reason names the first), else valid; warnings name each
//! `damage-truncated` restart. A restart whose boot says nothing (a first boot, a wiped node) is counted as unjudged.
//!
//! Details: `{nodes: {name: {restarts: [{stop_index, stop_ns, cause, durable, boot_index, boot_ns, recovered,
//! forgotten, judgement, surgery?, text}]}}, judged, unjudged}`.

use super::{CheckInput, CheckResult, Checker};
use crate::history::{Event, Lifecycle, Name, Nemesis, Observation};
use crate::verdict::Verdict;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Judges every restart of every node against what it had durably reached before it stopped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Durability {
    /// The system promises to refuse to boot on interior damage to its files.
    pub refuses_interior_damage: bool,
    /// Acknowledged data may live in a quorum's memory only (plan `durability: quorum-memory`): a power loss may
    /// take what a node had applied.
    pub lazy_fsync: bool,
}

/// What a node had reached when it stopped, and what happened to it before it booted again.
struct Stop {
    /// The stopped process (absent in histories written before stops carried it).
    pid: Option<u64>,
    index: u64,
    time_ns: u64,
    cause: String,
    durable: u64,
    surgery: Vec<Value>,
    power_loss: bool,
    wiped: bool,
}

/// Whether a recorded surgery damaged a file's interior: a flip, a zeroed block or a restored (lost or misdirected)
/// chunk that ends at least an eighth of the written data before its end, the plan's own `region: interior` (damage
/// there is not a torn write to a correct log). A cut without a known data extent is not counted as interior.
pub fn interior_damage(surgery: &Value) -> bool {
    let op = surgery["op"].as_str().unwrap_or("");
    if !matches!(op, "flip-bits" | "zero-block" | "restore-chunk") {
        return false;
    }
    let extent = surgery["extent_bytes"]
        .as_u64()
        .filter(|&e| e > 0)
        .or_else(|| surgery["size_before_bytes"].as_u64().filter(|&e| e > 0));
    let (Some(extent), Some(offset), Some(length)) = (extent, surgery["offset"].as_u64(), surgery["length"].as_u64())
    else {
        return false;
    };
    offset + length <= extent - extent / 8
}

impl Checker for Durability {
    fn name(&self) -> &'static str {
        "durability"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        // Per node, the stops no boot has answered yet, in the order recorded.
        let mut stops: BTreeMap<String, Vec<Stop>> = BTreeMap::new();
        let mut restarts: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut problems: Vec<(u64, String, String)> = Vec::new();
        let mut warnings = Vec::new();
        let (mut judged, mut unjudged) = (0u64, 0u64);
        for event in &input.history.events {
            let Some(node) = event.node.clone() else { continue };
            match event.name() {
                Some(Name::Observation(Observation::LastDurable)) => {
                    let Some(durable) = event.value["durable"].as_u64() else {
                        continue;
                    };
                    stops.entry(node).or_default().push(Stop {
                        pid: event.value["pid"].as_u64(),
                        index: event.index,
                        time_ns: event.time_ns,
                        cause: event.value["cause"].as_str().unwrap_or("stop").to_string(),
                        durable,
                        surgery: Vec::new(),
                        power_loss: false,
                        wiped: false,
                    });
                }
                // What happens to a node's files happens after its newest stop.
                Some(Name::Nemesis(Nemesis::DiskSurgery)) => {
                    if let (Some(stop), Some(surgery)) = (newest(&mut stops, &node), event.value.get("surgery")) {
                        stop.surgery.push(surgery.clone());
                    }
                }
                Some(Name::Nemesis(Nemesis::PowerLoss)) if event.value.get("error").is_none() => {
                    if let Some(stop) = newest(&mut stops, &node) {
                        stop.power_loss = true;
                    }
                }
                Some(Name::Lifecycle(Lifecycle::Wipe)) => {
                    if let Some(stop) = newest(&mut stops, &node) {
                        stop.wiped = true;
                    }
                }
                Some(Name::Observation(Observation::Recovered)) => {
                    let Some(recovered) = event.value["recovered"].as_u64() else {
                        continue;
                    };
                    let pending = stops.entry(node.clone()).or_default();
                    let Some((stop, skipped)) = take_stop_before(pending, event.value["pid"].as_u64()) else {
                        continue;
                    };
                    unjudged += skipped; // stopped again before a boot said what it held
                    judged += 1;
                    let restart = self.judge(&node, &stop, event, (recovered, input.history.phase_start_ns()));
                    let text = restart["text"].as_str().unwrap_or("").to_string();
                    match restart["judgement"].as_str() {
                        Some("forgotten" | "booted-on-damage") => problems.push((event.time_ns, text, node.clone())),
                        Some("damage-truncated") => warnings.push(text),
                        _ => {}
                    }
                    restarts.entry(node).or_default().push(restart);
                }
                _ => {}
            }
        }
        unjudged += stops.values().map(|pending| pending.len() as u64).sum::<u64>();
        let nodes: serde_json::Map<String, Value> = restarts
            .into_iter()
            .map(|(node, restarts)| (node, json!({"restarts": restarts})))
            .collect();
        let details = json!({"nodes": nodes, "judged": judged, "unjudged": unjudged});
        let mut result = match problems.first() {
            Some((at_ns, text, _)) => {
                let more = match problems.len() {
                    1 => String::new(),
                    n => format!(" (and {} more restart{})", n - 1, if n == 2 { "" } else { "s" }),
                };
                let mut result = CheckResult::new(self.name(), Verdict::Invalid, format!("{text}{more}"), details);
                result.evidence_ns = Some(*at_ns);
                result.evidence_nodes = problems.iter().map(|(_, _, node)| node.clone()).collect();
                result.evidence_nodes.sort();
                result.evidence_nodes.dedup();
                result
            }
            None if judged == 0 => CheckResult::not_checked(
                self.name(),
                "no node reported durable progress before a stop and said what it booted with after it",
                details,
            ),
            None => CheckResult::new(
                self.name(),
                Verdict::Valid,
                format!(
                    "{judged} restart{} judged: no node booted with less than it had applied, except after recorded \
                     disk surgery",
                    if judged == 1 { "" } else { "s" }
                ),
                details,
            ),
        };
        result.warnings = warnings;
        result
    }
}

/// The newest stop of `node` no boot has answered yet.
fn newest<'a>(stops: &'a mut BTreeMap<String, Vec<Stop>>, node: &str) -> Option<&'a mut Stop> {
    stops.get_mut(node).and_then(|pending| pending.last_mut())
}

/// The stop a boot of process `pid` answers: the newest pending stop of another process (any process, when either
/// pid is unknown). It leaves `pending` with the stops recorded after it (the booted process's own, recorded before
/// its boot was); the ones before it were superseded and are counted as unjudged.
fn take_stop_before(pending: &mut Vec<Stop>, pid: Option<u64>) -> Option<(Stop, u64)> {
    let position = pending
        .iter()
        .rposition(|stop| pid.is_none() || stop.pid.is_none() || stop.pid != pid)?;
    let mut rest = pending.split_off(position);
    let skipped = std::mem::replace(pending, rest.split_off(1));
    Some((rest.pop().expect("split_off at a valid position"), skipped.len() as u64))
}

impl Durability {
    /// One restart's record: the numbers, the judgement and its sentence.
    /// `recovered` is what the boot kept and when the fault phase began (the clock its sentence speaks).
    fn judge(&self, node: &str, stop: &Stop, boot: &Event, (recovered, phase_ns): (u64, u64)) -> Value {
        let forgotten = stop.durable.saturating_sub(recovered);
        let stopped = match stop.cause.as_str() {
            "kill" if stop.power_loss => "the power loss".to_string(),
            "kill" => "the kill -9".to_string(),
            "restart-all" => "the restart-all's kill -9".to_string(),
            "crashed" => "it crashed".to_string(),
            other => other.to_string(),
        };
        let at = crate::history::phase_time(stop.time_ns, phase_ns);
        let interior = stop.surgery.iter().find(|s| interior_damage(s));
        let surgery = interior
            .or(stop.surgery.first())
            .map(|s| json!({"op": s["op"], "file": s["file"], "offset": s["offset"], "length": s["length"]}));
        let file_name = |s: &Value| {
            let file = s["file"].as_str().unwrap_or("?");
            file.rsplit_once("/data/").map_or(file, |(_, rest)| rest).to_string()
        };
        let (judgement, text) = if forgotten == 0 {
            (
                "ok",
                format!(
                    "{node} had applied {} before {stopped} at {at} and booted with {recovered}",
                    stop.durable
                ),
            )
        } else if stop.wiped {
            (
                "wiped",
                format!("{node} was wiped after {stopped} at {at} and rejoined empty"),
            )
        } else if let Some(damage) = interior {
            let what = format!(
                "{node} booted after {} in the interior of {} (offset {}) and forgot {forgotten} applied entries \
                 ({} before {stopped} at {at}, {recovered} after)",
                damage["op"].as_str().unwrap_or("surgery"),
                file_name(damage),
                damage["offset"],
                stop.durable
            );
            if self.refuses_interior_damage {
                (
                    "booted-on-damage",
                    format!("{what}: booted on damage it should have refused"),
                )
            } else {
                (
                    "damage-truncated",
                    format!("{what}: the system truncated interior damage as if it were a torn write"),
                )
            }
        } else if let Some(cut) = stop.surgery.first() {
            (
                "truncated-after-surgery",
                format!(
                    "{node} was truncated after surgery ({} on {}): {forgotten} applied entries dropped ({} → \
                     {recovered})",
                    cut["op"].as_str().unwrap_or("surgery"),
                    file_name(cut),
                    stop.durable
                ),
            )
        } else if stop.power_loss && self.lazy_fsync {
            (
                "power-loss-allowed",
                format!(
                    "{node} lost {forgotten} applied entries in the power loss at {at}, which the plan allows \
                     (durability: quorum-memory)"
                ),
            )
        } else {
            (
                "forgotten",
                format!(
                    "{node} applied {} before {stopped} at {at} and booted at {recovered}: {forgotten} applied \
                     entr{} forgotten, no surgery recorded",
                    stop.durable,
                    if forgotten == 1 { "y" } else { "ies" }
                ),
            )
        };
        json!({
            "stop_pid": stop.pid,
            "boot_pid": boot.value["pid"],
            "stop_index": stop.index,
            "stop_ns": stop.time_ns,
            "cause": if stop.power_loss { "power-loss" } else { stop.cause.as_str() },
            "durable": stop.durable,
            "boot_index": boot.index,
            "boot_ns": boot.time_ns,
            "recovered": recovered,
            "forgotten": forgotten,
            "judgement": judgement,
            "surgery": surgery,
            "text": text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{event, history};
    use crate::history::{EventKind, History};

    fn observation(f: &str, node: &str, value: Value) -> Event {
        event(EventKind::Observation, f, Some(node), value)
    }

    fn stop(node: &str, durable: u64, cause: &str) -> Event {
        observation(
            "last-durable",
            node,
            json!({"durable": durable, "age_ms": 3, "cause": cause}),
        )
    }

    fn recovered(node: &str, value: u64) -> Event {
        observation(
            "recovered",
            node,
            json!({"recovered": value, "line": "rejoining op=..."}),
        )
    }

    fn surgery(node: &str, op: &str, offset: u64, length: u64, extent: u64) -> Event {
        event(
            EventKind::Nemesis,
            "disk-surgery",
            Some(node),
            json!({"surgery": {"op": op, "file": "/s/nodes/n2/data/member/wal/0.wal", "offset": offset,
                "length": length, "extent_bytes": extent}}),
        )
    }

    fn check(checker: Durability, history: &History) -> CheckResult {
        let logs = BTreeMap::new();
        checker.check(&CheckInput {
            history,
            node_logs: &logs,
        })
    }

    #[test]
    fn given_a_node_that_boots_with_less_than_it_had_applied_should_be_invalid_with_the_numbers() {
        let history = history(vec![
            stop("n2", 717, "kill"),
            event(EventKind::Nemesis, "kill", Some("n2"), json!({})),
            event(EventKind::Lifecycle, "boot-ok", Some("n2"), json!({})),
            recovered("n2", 519),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Invalid, "{result:?}");
        assert!(
            result
                .reason
                .starts_with("n2 applied 717 before the kill -9 at 0.00 s and booted at 519: 198 applied"),
            "{}",
            result.reason
        );
        assert!(result.reason.contains("no surgery recorded"));
        let restart = &result.details["nodes"]["n2"]["restarts"][0];
        assert_eq!(restart["forgotten"], 198);
        assert_eq!(restart["judgement"], "forgotten");
        assert_eq!(result.evidence_ns, Some(0));
    }

    #[test]
    fn given_boots_with_at_least_what_was_applied_should_be_valid_and_count_them() {
        let history = history(vec![
            stop("n1", 612, "kill"),
            recovered("n1", 612),
            stop("n1", 795, "restart-all"),
            stop("n2", 796, "restart-all"),
            recovered("n1", 800),
            recovered("n2", 796),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Valid, "{result:?}");
        assert_eq!(result.details["judged"], 3);
        assert!(result.warnings.is_empty());
    }

    #[test]
    fn given_interior_damage_should_be_a_finding_only_for_a_system_that_promises_to_refuse_it() {
        let events = || {
            history(vec![
                stop("n2", 471, "restart-all"),
                surgery("n2", "zero-block", 12288, 4096, 49388),
                recovered("n2", 115),
            ])
        };
        let etcd = check(Durability::default(), &events());
        assert_eq!(etcd.verdict, Verdict::Valid, "{etcd:?}");
        assert_eq!(etcd.warnings.len(), 1);
        assert!(
            etcd.warnings[0].contains("forgot 356 applied entries") && etcd.warnings[0].contains("member/wal/0.wal"),
            "{}",
            etcd.warnings[0]
        );
        let refusing = Durability {
            refuses_interior_damage: true,
            ..Durability::default()
        };
        let reference = check(refusing, &events());
        assert_eq!(reference.verdict, Verdict::Invalid);
        assert!(
            reference.reason.contains("booted on damage it should have refused"),
            "{}",
            reference.reason
        );
    }

    #[test]
    fn given_surgery_on_the_tail_or_a_wipe_or_an_allowed_power_loss_should_explain_the_drop_without_a_finding() {
        let torn = history(vec![
            stop("n3", 800, "restart-all"),
            surgery("n3", "truncate-tail", 49000, 40, 49040),
            recovered("n3", 799),
        ]);
        let result = check(Durability::default(), &torn);
        assert_eq!(result.verdict, Verdict::Valid);
        assert_eq!(
            result.details["nodes"]["n3"]["restarts"][0]["judgement"],
            "truncated-after-surgery"
        );
        // A flip near the end of the data is where a torn write lands: not interior.
        assert!(!interior_damage(
            &json!({"op": "flip-bits", "offset": 48000, "length": 1, "extent_bytes": 49040})
        ));
        assert!(interior_damage(
            &json!({"op": "flip-bits", "offset": 20000, "length": 1, "extent_bytes": 49040})
        ));
        let wiped = history(vec![
            stop("n2", 800, "restart-all"),
            event(EventKind::Lifecycle, "wipe", Some("n2"), json!({})),
            recovered("n2", 0),
        ]);
        assert_eq!(check(Durability::default(), &wiped).verdict, Verdict::Valid);
        let power = || {
            history(vec![
                stop("n1", 300, "kill"),
                event(EventKind::Nemesis, "power-loss", Some("n1"), json!({"lost": []})),
                recovered("n1", 280),
            ])
        };
        let lazy = Durability {
            lazy_fsync: true,
            ..Durability::default()
        };
        assert_eq!(check(lazy, &power()).verdict, Verdict::Valid);
        let strict = check(Durability::default(), &power());
        assert_eq!(strict.verdict, Verdict::Invalid);
        assert!(strict.reason.contains("before the power loss"), "{}", strict.reason);
    }

    fn with_pid(mut event: Event, pid: u64) -> Event {
        event.value["pid"] = json!(pid);
        event
    }

    /// A trigger killed a new process (pid 200) on its `repair start` line before its boot was recorded: its stop
    /// (56, what it reached by repair) comes before its own boot (55, what it booted with). The boot answers the stop
    /// of the process before it (pid 100), the stop of pid 200 the boot after it, and the cut belongs to that one.
    #[test]
    fn given_a_stop_recorded_before_the_boot_of_the_same_process_should_pair_each_boot_with_the_process_before_it() {
        let history = history(vec![
            with_pid(stop("n3", 55, "kill"), 100),
            with_pid(stop("n3", 56, "kill"), 200),
            with_pid(event(EventKind::Lifecycle, "boot-ok", Some("n3"), json!({})), 200),
            with_pid(recovered("n3", 55), 200),
            surgery("n3", "truncate-tail", 49000, 40, 49040),
            with_pid(recovered("n3", 54), 300),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Valid, "{result:?}");
        let restarts = &result.details["nodes"]["n3"]["restarts"];
        assert_eq!(restarts[0]["stop_pid"], 100);
        assert_eq!(restarts[0]["boot_pid"], 200);
        assert_eq!(restarts[0]["judgement"], "ok");
        assert_eq!(restarts[1]["stop_pid"], 200);
        assert_eq!(restarts[1]["boot_pid"], 300);
        assert_eq!(restarts[1]["judgement"], "truncated-after-surgery");
        assert_eq!(result.details["unjudged"], 0);
    }

    /// A restart-all stops a process (pid 100, 88) whose late boot (86) is recorded after that stop: the late boot
    /// answers the stop before it (pid 50, 80), and the restart-all's stop the next process's boot.
    #[test]
    fn given_a_late_boot_recorded_after_its_own_process_was_stopped_should_not_be_judged_against_that_stop() {
        let history = history(vec![
            with_pid(stop("n1", 80, "kill"), 50),
            with_pid(stop("n1", 88, "restart-all"), 100),
            with_pid(recovered("n1", 86), 100),
            with_pid(recovered("n1", 88), 200),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Valid, "{result:?}");
        assert_eq!(result.details["judged"], 2);
        // And a real loss is still a loss when pids pair it: pid 200 booting with 87 forgot one entry of pid 100's.
        let lost = history_of_loss();
        let result = check(Durability::default(), &lost);
        assert_eq!(result.verdict, Verdict::Invalid, "{result:?}");
        assert!(
            result.reason.starts_with("n1 applied 88 before the restart-all"),
            "{}",
            result.reason
        );
    }

    fn history_of_loss() -> History {
        history(vec![
            with_pid(stop("n1", 80, "kill"), 50),
            with_pid(stop("n1", 88, "restart-all"), 100),
            with_pid(recovered("n1", 86), 100),
            with_pid(recovered("n1", 87), 200),
        ])
    }

    #[test]
    fn given_a_boot_that_says_nothing_should_leave_the_restart_unjudged() {
        let history = history(vec![stop("n1", 10, "kill"), stop("n1", 12, "kill")]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Valid);
        assert_eq!(result.details["unjudged"], 2);
        assert_eq!(result.details["judged"], 0);
    }
}
