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
//! Both are positions ([`crate::position`]): a number, or a vector clock (`{1: 3181, 2: 5}`) compared per component,
//! so a node that lost rows of one writer is caught however far another writer went on. A restart whose stop gave a
//! number and whose boot gave a map (or the reverse) is not judged, with a warning.
//!
//! A `power-loss` recorded after a stop is that stop's cause when it names the stopped pid (a process fault's power
//! loss) or when both are the restart-all's; otherwise it came while the node was already down (the restart-all's
//! power loss of a node a kill -9 had stopped), and the sentence names both: `the kill -9 at 6.96 s, then the power
//! loss at 9.10 s while it was down`.
//!
//! A boot is paired with the stop of the process before it, by pid: both observations carry the pid of their
//! process, and the order in which the harness records them is not the order of the processes. A trigger may kill a
//! new process (its `repair start` line) before the watcher has recorded its boot, so that process's `last-durable`
//! precedes its own `recovered`; a restart-all may stop a process whose late boot is recorded after it. A boot pairs
//! with the newest pending stop of another process; a history without pids (older stores) pairs in record order.
//!
//! Each restart is judged, in order:
//! - `ok`: recovered >= durable (in every component, for maps);
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
//! forgotten, judgement, surgery?, text, went_back?, power_loss_while_down_ns?}]}}, judged, unjudged}`: `durable` and
//! `recovered` a number or an object, `forgotten` the entries forgotten in all, `went_back` (maps) each component
//! that went back and by how much, `cause` `power-loss` only when the power loss stopped the process.

use super::{CheckInput, CheckResult, Checker};
use crate::history::{Event, Lifecycle, Name, Nemesis, Observation};
use crate::position::{Forgotten, Position};
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
    durable: Position,
    surgery: Vec<Value>,
    power_loss: Option<PowerLoss>,
    wiped: bool,
}

/// A power loss recorded after a stop, before the boot that answers it.
struct PowerLoss {
    time_ns: u64,
    /// It is what stopped the process (its kill was the power loss's first half), not a later power loss of a node
    /// that was already down.
    stopped_it: bool,
}

impl PowerLoss {
    /// `event` (a `power-loss`) recorded after `stop`: it stopped that process when it names the stop's pid (a
    /// process fault's power loss carries its kill's details) or when both are the restart-all's. A restart-all's
    /// power loss after a kill -9 (the node was down: its kill by the restart-all failed and recorded no stop) only
    /// took the power of a node that was already down. A record without a pid or a source (older histories) is
    /// taken as the stop's own, as it always was.
    fn after(stop: &Stop, event: &Event) -> PowerLoss {
        let restart_all = event.value["source"].as_str() == Some("restart-all");
        let stopped_it = match (event.value["pid"].as_u64(), stop.pid) {
            (Some(pid), Some(stopped)) => pid == stopped,
            _ if restart_all => stop.cause == "restart-all",
            _ => true,
        };
        PowerLoss {
            time_ns: event.time_ns,
            stopped_it,
        }
    }
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
                    let Some(durable) = Position::from_json(&event.value["durable"]) else {
                        continue;
                    };
                    stops.entry(node).or_default().push(Stop {
                        pid: event.value["pid"].as_u64(),
                        index: event.index,
                        time_ns: event.time_ns,
                        cause: event.value["cause"].as_str().unwrap_or("stop").to_string(),
                        durable,
                        surgery: Vec::new(),
                        power_loss: None,
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
                        stop.power_loss = Some(PowerLoss::after(stop, event));
                    }
                }
                Some(Name::Lifecycle(Lifecycle::Wipe)) => {
                    if let Some(stop) = newest(&mut stops, &node) {
                        stop.wiped = true;
                    }
                }
                Some(Name::Observation(Observation::Recovered)) => {
                    let Some(recovered) = Position::from_json(&event.value["recovered"]) else {
                        continue;
                    };
                    let pending = stops.entry(node.clone()).or_default();
                    let Some((stop, skipped)) = take_stop_before(pending, event.value["pid"].as_u64()) else {
                        continue;
                    };
                    unjudged += skipped; // stopped again before a boot said what it held
                    let Some(forgotten) = stop.durable.forgotten(&recovered) else {
                        unjudged += 1;
                        warnings.push(format!(
                            "{node} reported {} before a stop and booted with {recovered}: one is a number and the \
                             other a map, so the restart was not judged (does the adapter read both from the same \
                             field?)",
                            stop.durable
                        ));
                        continue;
                    };
                    judged += 1;
                    let kept = Kept {
                        recovered,
                        forgotten,
                        phase_ns: input.history.phase_start_ns(),
                    };
                    let restart = self.judge(&node, &stop, event, &kept);
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

/// What a boot kept, judged against its stop: the position, what it lacks of the stop's, and when the fault phase
/// began (the clock the sentences speak).
struct Kept {
    recovered: Position,
    forgotten: Forgotten,
    phase_ns: u64,
}

/// What stopped the node, and when, as a sentence names it (`the kill -9 at 6.96 s`; `the power loss at 6.96 s` for
/// a power loss that killed it), and a power loss that came later while it was down (`the power loss at 9.10 s`).
fn stopped_by(stop: &Stop, phase_ns: u64) -> (String, Option<String>) {
    let caused_by_power_loss = stop.power_loss.as_ref().is_some_and(|p| p.stopped_it);
    let what = match stop.cause.as_str() {
        "kill" if caused_by_power_loss => "the power loss",
        "kill" => "the kill -9",
        "restart-all" => "the restart-all's kill -9",
        "crashed" => "it crashed",
        other => other,
    };
    let at = crate::history::phase_time(stop.time_ns, phase_ns);
    let while_down = stop
        .power_loss
        .as_ref()
        .filter(|power_loss| !power_loss.stopped_it)
        .map(|power_loss| {
            format!(
                "the power loss at {}",
                crate::history::phase_time(power_loss.time_ns, phase_ns)
            )
        });
    (format!("{what} at {at}"), while_down)
}

impl Durability {
    /// One restart's record: the positions, the judgement and its sentence.
    fn judge(&self, node: &str, stop: &Stop, boot: &Event, kept: &Kept) -> Value {
        let Kept {
            recovered,
            forgotten,
            phase_ns,
        } = kept;
        let durable = &stop.durable;
        let lost = forgotten.entries;
        let (stop_at, while_down) = stopped_by(stop, *phase_ns);
        // `the kill -9 at 6.96 s, then the power loss at 9.10 s while it was down`: a clause of its own, which the
        // sentence goes on from after a comma.
        let (stopped, pause) = match &while_down {
            Some(power_loss) => (format!("{stop_at}, then {power_loss} while it was down"), ","),
            None => (stop_at.clone(), ""),
        };
        // For maps: which components went back (`component 1 went back by 11`).
        let back = forgotten.describe();
        let interior = stop.surgery.iter().find(|s| interior_damage(s));
        let surgery = interior
            .or(stop.surgery.first())
            .map(|s| json!({"op": s["op"], "file": s["file"], "offset": s["offset"], "length": s["length"]}));
        let file_name = |s: &Value| {
            let file = s["file"].as_str().unwrap_or("?");
            file.rsplit_once("/data/").map_or(file, |(_, rest)| rest).to_string()
        };
        let (judgement, text) = if lost == 0 {
            (
                "ok",
                format!("{node} had applied {durable} before {stopped}{pause} and booted with {recovered}"),
            )
        } else if stop.wiped {
            (
                "wiped",
                format!("{node} was wiped after {stopped}{pause} and rejoined empty"),
            )
        } else if let Some(damage) = interior {
            let what = format!(
                "{node} booted after {} in the interior of {} (offset {}) and forgot {lost} applied entries \
                 ({}{durable} before {stopped}, {recovered} after)",
                damage["op"].as_str().unwrap_or("surgery"),
                file_name(damage),
                damage["offset"],
                back.as_ref().map_or(String::new(), |back| format!("{back}; ")),
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
                    "{node} was truncated after surgery ({} on {}): {lost} applied entries dropped ({}{durable} → \
                     {recovered})",
                    cut["op"].as_str().unwrap_or("surgery"),
                    file_name(cut),
                    back.as_ref().map_or(String::new(), |back| format!("{back}: ")),
                ),
            )
        } else if stop.power_loss.is_some() && self.lazy_fsync {
            let back = back.as_ref().map_or(String::new(), |back| format!(" ({back})"));
            let power_loss = match &while_down {
                Some(power_loss) => format!("{power_loss} while it was down after {stop_at}"),
                None => format!(
                    "the power loss at {}",
                    crate::history::phase_time(stop.time_ns, *phase_ns)
                ),
            };
            (
                "power-loss-allowed",
                format!(
                    "{node} lost {lost} applied entries{back} in {power_loss}, which the plan allows (durability: \
                     quorum-memory)"
                ),
            )
        } else {
            let text = match &back {
                Some(back) => format!(
                    "{node} had applied {durable} before {stopped}{pause} and booted with {recovered}: {back}{}, no \
                     surgery recorded",
                    if forgotten.components.len() > 1 {
                        format!(" ({lost} applied entries forgotten)")
                    } else {
                        String::new()
                    }
                ),
                None => format!(
                    "{node} applied {durable} before {stopped}{pause} and booted at {recovered}: {lost} applied \
                     entr{} forgotten, no surgery recorded",
                    if lost == 1 { "y" } else { "ies" }
                ),
            };
            ("forgotten", text)
        };
        let cause = match &stop.power_loss {
            Some(power_loss) if power_loss.stopped_it => "power-loss",
            _ => stop.cause.as_str(),
        };
        let mut restart = json!({
            "stop_pid": stop.pid,
            "boot_pid": boot.value["pid"],
            "stop_index": stop.index,
            "stop_ns": stop.time_ns,
            "cause": cause,
            "durable": durable.to_json(),
            "boot_index": boot.index,
            "boot_ns": boot.time_ns,
            "recovered": recovered.to_json(),
            "forgotten": lost,
            "judgement": judgement,
            "surgery": surgery,
            "text": text,
        });
        if let Some(power_loss) = stop.power_loss.as_ref().filter(|p| !p.stopped_it) {
            restart["power_loss_while_down_ns"] = json!(power_loss.time_ns);
        }
        if !forgotten.components.is_empty() {
            restart["went_back"] = forgotten
                .components
                .iter()
                .map(|(component, by)| (component.clone(), json!(by)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        restart
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

    fn map_stop(node: &str, durable: Value) -> Event {
        observation(
            "last-durable",
            node,
            json!({"durable": durable, "age_ms": 3, "cause": "kill"}),
        )
    }

    fn map_recovered(node: &str, vclock: Value) -> Event {
        observation("recovered", node, json!({"recovered": vclock, "line": "vclock ..."}))
    }

    /// Vector clocks are compared per component: n2's component 1 went back while its component 2 advanced further
    /// (a sum of the components calls that a gain), n3's component 1 went back under a larger component 2 (a max
    /// reads only component 2, which held).
    #[test]
    fn given_vector_clocks_where_one_component_went_back_should_be_invalid_and_name_that_component() {
        let history = history(vec![
            map_stop("n2", json!({"1": 3181, "2": 5})),
            map_recovered("n2", json!({"1": 3170, "2": 30})),
            map_stop("n3", json!({"1": 5, "2": 3181})),
            map_recovered("n3", json!({"1": 3, "2": 3181})),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Invalid, "{result:?}");
        assert_eq!(
            result.reason,
            "n2 had applied {1: 3181, 2: 5} before the kill -9 at 0.00 s and booted with {1: 3170, 2: 30}: component \
             1 went back by 11, no surgery recorded (and 1 more restart)"
        );
        let n2 = &result.details["nodes"]["n2"]["restarts"][0];
        assert_eq!(n2["durable"], json!({"1": 3181, "2": 5}));
        assert_eq!(n2["recovered"], json!({"1": 3170, "2": 30}));
        assert_eq!(n2["forgotten"], 11);
        assert_eq!(n2["went_back"], json!({"1": 11}));
        let n3 = &result.details["nodes"]["n3"]["restarts"][0];
        assert_eq!(n3["judgement"], "forgotten");
        assert!(
            n3["text"].as_str().unwrap().contains("component 1 went back by 2"),
            "{n3}"
        );
        assert_eq!(result.evidence_nodes, ["n2", "n3"]);
    }

    /// The written component held while another advanced, or a component the stop did not know appeared: nothing
    /// was forgotten. Before positions were read as maps these restarts were not judged at all.
    #[test]
    fn given_vector_clocks_where_the_written_component_held_and_another_advanced_should_be_valid() {
        let history = history(vec![
            map_stop("n1", json!({"1": 3181, "2": 5})),
            map_recovered("n1", json!({"1": 3181, "2": 9})),
            map_stop("n1", json!({"1": 3200, "2": 9})),
            map_recovered("n1", json!({"1": 3200, "2": 9, "3": 1})),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Valid, "{result:?}");
        assert_eq!(result.details["judged"], 2);
        let first = &result.details["nodes"]["n1"]["restarts"][0];
        assert_eq!(first["judgement"], "ok");
        assert_eq!(
            first["text"],
            "n1 had applied {1: 3181, 2: 5} before the kill -9 at 0.00 s and booted with {1: 3181, 2: 9}"
        );
        assert!(first.get("went_back").is_none());
    }

    /// A stop that reported a number and a boot that said a map count different things: not judged, and said so.
    #[test]
    fn given_a_number_before_the_stop_and_a_map_after_the_boot_should_leave_the_restart_unjudged_with_a_warning() {
        let history = history(vec![stop("n1", 10, "kill"), map_recovered("n1", json!({"1": 3}))]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.details["judged"], 0);
        assert_eq!(result.details["unjudged"], 1);
        assert!(
            result.warnings[0].contains("one is a number and the other a map"),
            "{:?}",
            result.warnings
        );
    }

    fn at(mut event: Event, seconds: f64) -> Event {
        event.time_ns = (seconds * 1e9) as u64;
        event
    }

    /// n2 was killed by a kill -9 at 6.96 s and was still down when the restart-all cut the power of the cluster at
    /// 9.10 s (its kill of n2 failed: nothing to kill, no stop recorded). The power loss did not stop n2's process.
    #[test]
    fn given_a_restart_all_power_loss_while_a_killed_node_was_down_should_name_the_kill_then_the_power_loss() {
        let history = history(vec![
            at(with_pid(stop("n2", 717, "kill"), 100), 6.96),
            at(event(EventKind::Nemesis, "kill", Some("n2"), json!({"pid": 100})), 6.96),
            at(event(EventKind::Lifecycle, "restart-all", None, json!({})), 9.0),
            at(
                event(
                    EventKind::Lifecycle,
                    "kill",
                    Some("n2"),
                    json!({"error": "n2 is not running"}),
                ),
                9.0,
            ),
            at(
                event(
                    EventKind::Nemesis,
                    "power-loss",
                    Some("n2"),
                    json!({"source": "restart-all", "lost": []}),
                ),
                9.10,
            ),
            at(with_pid(recovered("n2", 519), 200), 10.0),
        ]);
        let result = check(Durability::default(), &history);
        assert_eq!(result.verdict, Verdict::Invalid, "{result:?}");
        assert!(
            result.reason.starts_with(
                "n2 applied 717 before the kill -9 at 6.96 s, then the power loss at 9.10 s while it was down, and \
                 booted at 519: 198 applied entries forgotten"
            ),
            "{}",
            result.reason
        );
        let restart = &result.details["nodes"]["n2"]["restarts"][0];
        assert_eq!(restart["cause"], "kill", "the kill stopped it, not the power loss");
        assert_eq!(restart["power_loss_while_down_ns"], 9_100_000_000u64);
        // A plan that keeps acknowledged data in memory allows what the power loss took, and says which came first.
        let lazy = Durability {
            lazy_fsync: true,
            ..Durability::default()
        };
        let allowed = check(lazy, &history);
        assert_eq!(allowed.verdict, Verdict::Valid, "{allowed:?}");
        assert_eq!(
            allowed.details["nodes"]["n2"]["restarts"][0]["text"],
            "n2 lost 198 applied entries in the power loss at 9.10 s while it was down after the kill -9 at 6.96 s, \
             which the plan allows (durability: quorum-memory)"
        );
    }

    /// A process fault's power loss carries its kill's pid: the power loss stopped that process. The restart-all's
    /// power loss after its own kill stopped the node too; a power loss naming another pid did not.
    #[test]
    fn given_a_power_loss_with_the_pid_of_the_stopped_process_should_name_the_power_loss_as_what_stopped_it() {
        let power_loss = |value: Value| at(event(EventKind::Nemesis, "power-loss", Some("n1"), value), 6.97);
        let restart = |stop_cause: &str, loss: Value| {
            let history = history(vec![
                at(with_pid(stop("n1", 300, stop_cause), 100), 6.96),
                power_loss(loss),
                at(with_pid(recovered("n1", 280), 200), 8.0),
            ]);
            let result = check(Durability::default(), &history);
            assert_eq!(result.verdict, Verdict::Invalid, "{result:?}");
            (
                result.reason,
                result.details["nodes"]["n1"]["restarts"][0]["cause"].clone(),
            )
        };
        let (reason, cause) = restart("kill", json!({"pid": 100, "signal": "SIGKILL", "lost": []}));
        assert!(
            reason.starts_with("n1 applied 300 before the power loss at 6.96 s and booted at 280"),
            "{reason}"
        );
        assert_eq!(cause, "power-loss");
        let (reason, cause) = restart("restart-all", json!({"source": "restart-all", "lost": []}));
        assert!(
            reason.starts_with("n1 applied 300 before the restart-all's kill -9 at 6.96 s and"),
            "{reason}"
        );
        assert_eq!(cause, "power-loss");
        let (reason, cause) = restart("kill", json!({"pid": 99, "lost": []}));
        assert!(
            reason.contains("the kill -9 at 6.96 s, then the power loss at 6.97 s while it was down"),
            "{reason}"
        );
        assert_eq!(cause, "kill");
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
