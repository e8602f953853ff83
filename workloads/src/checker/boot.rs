//! `boot`: no node refused to boot or died on its own, unless the history records a reason for it.
//!
//! The check walks the history once, keeping per node whether disk surgery was recorded since it last booted, and
//! decides each lifecycle event by these rules:
//!
//! - **disk surgery** (a nemesis `disk-surgery` event carrying a `surgery` value) marks the node as damaged on purpose
//!   until its next clean boot.
//! - **boot refused** (`boot-refused`) after recorded surgery is legitimate: the node did what it should on a disk we
//!   corrupted. Without recorded surgery it is a problem: the node refused a disk nothing corrupted.
//! - **offline verification refused** (`verify-refused`: the node's own WAL verifier rejected its data dir) is judged
//!   the same way, and is also remembered: if the node then boots (`boot-ok`) without a `boot-refused` in between, that
//!   boot is a problem, because the node accepted entries its own verifier calls corrupt. A legitimate
//!   `verify-refused` alone does not count as a refusal to boot.
//! - **exited on its own** (`crashed`) is a problem, except while an I/O fault is injected on that node (from
//!   `io-fault-start` until [`IO_FAULT_GRACE_NS`] after `io-fault-stop`): stopping on an injected I/O error is
//!   fail-stop, the correct reaction, and is noted in the details but is not a problem. Nor is the exit of a joiner
//!   (wiped for a membership `add` and not booted since) that never became ready and logged that it could not reach
//!   the cluster (`join_failure`, the adapter's reading of its log: an etcd joiner a partition cuts off exits
//!   `discovery failed: cannot fetch cluster info`): a failed join, noted in `failed_joins`. A member added but not
//!   running is then the membership checks' concern, and the final phase starts it as a member.
//! - **not ready in time** (`boot-timeout`) is a problem, except while a majority of the *other* nodes are refused
//!   legitimately at once: then the node has no quorum to join (an etcd member cannot become ready without one), and
//!   the timeout is the majority rule's to judge below, not a fault of the node. Nor, for a system whose readiness
//!   needs a quorum (the run-start line's `ready_needs_quorum`: an etcd member is ready once it has published itself
//!   through Raft), while the nemesis *disturbed* the quorum during the node's boot window (the `timeout_ms` before
//!   the timeout): a fault began in it on another node or the network (kill, pause, power loss, stop, corrupt,
//!   partition, link or I/O fault, membership change) or a partition was in force at its start, before the fault
//!   phase ended. Measured on `etcd-mixed`: a member that lost power restarted with a shorter log and, without
//!   pre-vote, kept calling elections while its peers were killed, stopped and cut one way, and was not ready 20 s
//!   later; healed, it booted in 1.5 s. Such a node owes a boot: it must boot later (the restart-all on a healed
//!   cluster is the test), else that is the problem (`disturbed[]` in the details either way).
//! - **after a restart-all**, every node that is a member then (`observation` `members`; every node when none is
//!   recorded) must boot again, unless it refused legitimately, timed out without a quorum or already has a problem:
//!   a spare, or a node a membership change removed, stays down.
//! - **a wipe** (`wipe`: after a refusal, or a joiner prepared by a membership `add`) makes the node a new one: the
//!   surgery and the offline verification that came before it no longer speak of its data.
//!
//! The verdict: any problem makes it `invalid`, with the first problem as the reason (nodes in name order) and the
//! earliest problem as the evidence time. Otherwise, when a majority of the nodes were refused legitimately at the same
//! time (each from its refusal until it next booted, e.g. wiped and rejoined) it is `unknown`:
//! the cluster lost more than the fault model allows, so nothing after that tells whether the system is right.
//! Otherwise it is `valid`.
//!
//! Details: per node name `{boots, refusals[{event, index, line, legitimate}], problems[], io_exits[],
//! failed_joins[], without_quorum[], disturbed[]}`.

use super::{CheckInput, CheckResult, Checker};
use crate::history::{phase_time, Event, History, Lifecycle, Meta, Name, Nemesis};
use crate::membership::Members;
use crate::verdict::Verdict;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// How long after an I/O-fault window a node's exit still counts as its reaction to the injected errors.
pub const IO_FAULT_GRACE_NS: u64 = 2_000_000_000;

/// Checks every node's boots, refusals and exits against the faults the history records.
#[derive(Debug, Clone, Copy)]
pub struct Boot {
    /// How long after an I/O-fault window ends an exit still counts as fail-stop.
    pub io_fault_grace_ns: u64,
}

impl Default for Boot {
    fn default() -> Self {
        Boot {
            io_fault_grace_ns: IO_FAULT_GRACE_NS,
        }
    }
}

/// Per-node boot bookkeeping while walking the history.
#[derive(Default)]
struct NodeBoots {
    /// Disk surgery recorded since the node last booted cleanly.
    surgery_since_boot: bool,
    /// The offline verifier refused this node's WAL and the node has not been started since.
    verify_refused: Option<String>,
    boots: u64,
    refusals: Vec<Value>,
    problems: Vec<String>,
    /// When the first problem happened (ns since run start).
    first_problem_ns: Option<u64>,
    /// Injected I/O faults count until this time (the window's end plus a grace for the node to notice).
    io_faults_until_ns: Option<u64>,
    /// Exits on injected I/O errors: fail-stop, a correct reaction, noted but not a problem.
    io_exits: Vec<String>,
    /// Wiped for a membership `add` and not booted since: a joiner.
    joining: bool,
    /// Joiners that gave up, unable to reach the cluster: noted but not a problem.
    failed_joins: Vec<String>,
    /// The node's host went away (a run on hosts): what happened to it after that is unknown.
    hosts_lost: Vec<String>,
    /// Boot timeouts while a majority of the other nodes were refused legitimately: no quorum to join.
    without_quorum: Vec<String>,
    /// Boot timeouts of a node whose readiness needs a quorum while the nemesis disturbed it ([`disturbance`]).
    disturbed: Vec<String>,
    /// A disturbed boot timeout not yet followed by a boot: when, and what it said.
    owes_boot: Option<(u64, String)>,
    /// Legitimate refusals to boot (after recorded surgery).
    legit: u64,
    /// The node's last start ended in a legitimate refusal and it has not booted since.
    refused_now: bool,
    /// The first refusal to boot on a disk nothing corrupted, among `problems`: the worst a node can do at boot, so
    /// the check's reason leads with it (not with a node that merely booted late).
    first_clean_refusal: Option<String>,
}

impl NodeBoots {
    fn problem(&mut self, at_ns: u64, text: String) {
        if !self.hosts_lost.is_empty() {
            return; // its host went away: nothing that happens to the node after that is its own doing
        }
        self.first_problem_ns.get_or_insert(at_ns);
        self.problems.push(text);
    }
}

impl Checker for Boot {
    fn name(&self) -> &'static str {
        "boot"
    }

    fn check(&self, input: &CheckInput) -> CheckResult {
        let mut refused_at_once = 0;
        let nodes = self.walk(input.history, &mut refused_at_once);
        self.judge(&nodes, refused_at_once)
    }
}

impl Boot {
    /// Applies the rules to every event, in order: per node, its boots, refusals, problems and fail-stop exits.
    /// Also keeps in `refused_at_once` the most nodes that were refused legitimately at the same time.
    fn walk(&self, history: &History, refused_at_once: &mut usize) -> BTreeMap<String, NodeBoots> {
        let majority = cluster_size(history) / 2 + 1;
        let phase_ns = history.phase_start_ns();
        let needs_quorum = history
            .events
            .iter()
            .find(|e| e.is(Meta::RunStart))
            .is_some_and(|e| e.value["ready_needs_quorum"] == json!(true));
        let mut nodes: BTreeMap<String, NodeBoots> = BTreeMap::new();
        let mut restart_all_at: Option<u64> = None;
        let mut booted_after_restart: BTreeMap<String, bool> = BTreeMap::new();
        for event in &history.events {
            let Some(node) = event.node.clone() else {
                if event.is(Lifecycle::RestartAll) {
                    restart_all_at = Some(event.index);
                }
                continue;
            };
            // Who else is refused legitimately right now: a node cannot boot into a cluster a majority of which is.
            let others_refused: Vec<String> = nodes
                .iter()
                .filter(|(other, n)| **other != node && n.refused_now)
                .map(|(other, _)| other.clone())
                .collect();
            let entry = nodes.entry(node.clone()).or_default();
            let Some(name) = event.name() else { continue };
            match name {
                Name::Nemesis(Nemesis::DiskSurgery) if event.value.get("surgery").is_some() => {
                    entry.surgery_since_boot = true
                }
                Name::Lifecycle(Lifecycle::BootOk) => {
                    if let (true, Some((_, owed))) = (event.value["late"] == json!(true), &entry.owes_boot) {
                        // The same process became ready after its timeout: the excuse has its evidence.
                        if let Some(text) = entry.disturbed.iter_mut().rev().find(|t| *t == owed) {
                            text.push_str(&format!(
                                ", and became ready {} ms after it started",
                                event.value["boot_ms"]
                            ));
                        }
                    }
                    booted(entry, &node, event, phase_ns);
                    if restart_all_at.is_some() {
                        booted_after_restart.insert(node, true);
                    }
                }
                Name::Lifecycle(Lifecycle::VerifyRefused) => {
                    entry.verify_refused = Some(event.value["line"].as_str().unwrap_or("").to_string());
                    judge_refusal(entry, &node, event, phase_ns)
                }
                Name::Lifecycle(Lifecycle::BootRefused) => {
                    entry.verify_refused = None;
                    judge_refusal(entry, &node, event, phase_ns)
                }
                Name::Nemesis(Nemesis::IoFaultStart) => entry.io_faults_until_ns = Some(u64::MAX),
                Name::Nemesis(Nemesis::IoFaultStop) => {
                    entry.io_faults_until_ns = Some(event.time_ns + self.io_fault_grace_ns);
                }
                Name::Lifecycle(Lifecycle::Crashed) => crashed(entry, &node, event, phase_ns),
                Name::Lifecycle(Lifecycle::Wipe) => {
                    entry.surgery_since_boot = false;
                    entry.verify_refused = None;
                    entry.joining = event.value["after"].as_str() == Some("membership add");
                }
                Name::Lifecycle(Lifecycle::BootTimeout) if others_refused.len() >= majority => {
                    entry.without_quorum.push(format!(
                        "{node} was not ready within {} ms of starting while {} refused to boot after disk surgery: \
                         no quorum to join",
                        event.value["timeout_ms"],
                        others_refused.join(", ")
                    ))
                }
                Name::Lifecycle(Lifecycle::BootTimeout) => {
                    let text = format!(
                        "{node} was not ready within {} ms of starting",
                        event.value["timeout_ms"]
                    );
                    let window_ns = event.value["timeout_ms"].as_u64().unwrap_or(0) * 1_000_000;
                    let since_ns = event.time_ns.saturating_sub(window_ns);
                    match disturbance(history, &node, since_ns, event.index).filter(|_| needs_quorum) {
                        Some(why) => {
                            let text = format!("{text} while {why}");
                            entry.disturbed.push(text.clone());
                            entry.owes_boot = Some((event.time_ns, text));
                        }
                        None => entry.problem(event.time_ns, text),
                    }
                }
                _ => {}
            }
            let at_once = nodes.values().filter(|n| n.refused_now).count();
            *refused_at_once = (*refused_at_once).max(at_once);
        }
        let end_ns = history.events.last().map_or(0, |e| e.time_ns);
        for entry in nodes.values_mut() {
            if let Some((at_ns, text)) = entry.owes_boot.take() {
                entry.problem(at_ns, format!("{text}, and never booted after it"));
            }
        }
        if let Some(restart_all_at) = restart_all_at {
            let members = Members::of(history);
            for (node, entry) in nodes.iter_mut() {
                let excused = entry.legit > 0 || !entry.without_quorum.is_empty();
                let member = members.is_member(node, restart_all_at);
                if member && !booted_after_restart.contains_key(node) && !excused && entry.problems.is_empty() {
                    entry.problem(end_ns, format!("{node} did not boot after the restart-all"));
                }
            }
        }
        nodes
    }

    /// The verdict on the walked nodes: any problem is invalid; a majority refusing legitimately is unknown.
    fn judge(&self, nodes: &BTreeMap<String, NodeBoots>, refused_at_once: usize) -> CheckResult {
        let problems: Vec<String> = nodes.values().flat_map(|n| n.problems.clone()).collect();
        let legit_nodes = nodes.values().filter(|n| n.legit > 0).count();
        let details: serde_json::Map<String, Value> = nodes
            .iter()
            .map(|(name, n)| {
                (
                    name.clone(),
                    json!({"boots": n.boots, "refusals": n.refusals, "problems": n.problems, "io_exits": n.io_exits,
                           "failed_joins": n.failed_joins, "hosts_lost": n.hosts_lost, "without_quorum": n.without_quorum,
                           "disturbed": n.disturbed}),
                )
            })
            .collect();
        let details = Value::Object(details);
        let worst = nodes.values().find_map(|n| n.first_clean_refusal.as_ref());
        if let Some(first) = worst.or(problems.first()) {
            let more = if problems.len() > 1 {
                format!(" (and {} more)", problems.len() - 1)
            } else {
                String::new()
            };
            let mut result = CheckResult::new(self.name(), Verdict::Invalid, format!("{first}{more}"), details);
            result.evidence_ns = nodes.values().filter_map(|n| n.first_problem_ns).min();
            return result;
        }
        // Refusals count against the fault model only while they overlap: a damaged node that was wiped and rejoined
        // before the next one refused left a majority holding the data all along.
        let majority = nodes.len() / 2 + 1;
        let at_once = refused_at_once;
        if at_once >= majority && !nodes.is_empty() {
            let stranded: Vec<&String> = nodes.values().flat_map(|n| &n.without_quorum).collect();
            let stranded = match stranded.as_slice() {
                [] => String::new(),
                [first, rest @ ..] => format!(
                    "; {first}{}",
                    if rest.is_empty() {
                        String::new()
                    } else {
                        format!(" (and {} more)", rest.len())
                    }
                ),
            };
            let reason = format!(
                "{at_once} of {} nodes refused to boot after disk surgery at once: beyond the fault model{stranded}",
                nodes.len()
            );
            return CheckResult::new(self.name(), Verdict::Unknown, reason, details);
        }
        let lost: Vec<&String> = nodes.values().flat_map(|n| &n.hosts_lost).collect();
        if let Some(first) = lost.first() {
            let more = if lost.len() > 1 {
                format!(" (and {} more)", lost.len() - 1)
            } else {
                String::new()
            };
            let reason = format!("{first}{more}: whether it booted again is unknown, the harness lost its hands there");
            return CheckResult::new(self.name(), Verdict::Unknown, reason, details);
        }
        let boots: u64 = nodes.values().map(|n| n.boots).sum();
        let io_exits: usize = nodes.values().map(|n| n.io_exits.len()).sum();
        let mut io_note = if io_exits > 0 {
            format!("; {io_exits} fail-stop exit(s) on injected I/O errors")
        } else {
            String::new()
        };
        let failed_joins: usize = nodes.values().map(|n| n.failed_joins.len()).sum();
        if failed_joins > 0 {
            io_note.push_str(&format!(
                "; {failed_joins} joiner(s) gave up joining, cut off from the cluster"
            ));
        }
        let reason = match legit_nodes {
            0 => format!("every start booted ({boots} boots); no refusals{io_note}"),
            n => format!(
                "{boots} boots; {n} node(s) refused to boot after recorded disk surgery, as they should{io_note}"
            ),
        };
        CheckResult::new(self.name(), Verdict::Valid, reason, details)
    }
}

/// What disturbed the quorum `node` needed while it booted, from `since_ns` up to the event at `until_index` (its
/// boot timeout), if anything did before the fault phase ended: the first fault that began in the window on another
/// node or on the network, or a partition in force when it opened. `None` when the window was calm or after the fault
/// phase (then the cluster was healed and the node had no excuse).
fn disturbance(history: &History, node: &str, since_ns: u64, until_index: u64) -> Option<String> {
    let mut partition_at_open: Option<&Event> = None;
    for event in history.events.iter().take_while(|e| e.index < until_index) {
        if event.is(Lifecycle::FaultPhaseEnd) {
            if event.time_ns <= since_ns {
                return None;
            }
            break;
        }
        let Some(Name::Nemesis(name)) = event.name() else {
            continue;
        };
        if event.time_ns < since_ns {
            match name {
                Nemesis::PartitionStart => partition_at_open = Some(event),
                Nemesis::PartitionStop => partition_at_open = None,
                _ => {}
            }
            continue;
        }
        let faults = matches!(
            name,
            Nemesis::Kill
                | Nemesis::Pause
                | Nemesis::PowerLoss
                | Nemesis::Stop
                | Nemesis::Corrupt
                | Nemesis::PartitionStart
                | Nemesis::LinkFault
                | Nemesis::IoFaultStart
                | Nemesis::Membership
        );
        if faults && event.node.as_deref() != Some(node) && event.value.get("error").is_none() {
            let whom = event.node.as_deref().map(|n| format!(" of {n}")).unwrap_or_default();
            return Some(format!(
                "the nemesis faulted its peers ({}{whom} at {})",
                name.as_str(),
                phase_time(event.time_ns, history.phase_start_ns())
            ));
        }
    }
    partition_at_open.map(|p| format!("a partition ({}) was in force", describe(p)))
}

/// A partition event as its label says (`{n2} -x-> n1`), or its shape.
fn describe(partition: &Event) -> String {
    partition.value["label"]
        .as_str()
        .or(partition.value["shape"].as_str())
        .unwrap_or("partition")
        .to_string()
}

/// How many nodes the run has: those it started (every node named in the history when it records no start).
fn cluster_size(history: &History) -> usize {
    let named = |start_only: bool| {
        history
            .events
            .iter()
            .filter(|e| !start_only || e.is(Lifecycle::Start))
            .filter_map(|e| e.node.as_deref())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    match named(true) {
        0 => named(false),
        started => started,
    }
}

/// A clean boot: counted, clears the surgery mark, and is a problem if the node's own verifier refused its WAL.
fn booted(entry: &mut NodeBoots, node: &str, event: &Event, phase_ns: u64) {
    entry.boots += 1;
    entry.owes_boot = None;
    entry.joining = false;
    entry.surgery_since_boot = false;
    entry.refused_now = false;
    if let Some(line) = entry.verify_refused.take() {
        entry.problem(
            event.time_ns,
            format!(
                "{node} booted at {} on a WAL that its own offline verification refused ({line}): it accepts \
                 corrupt entries instead of refusing to boot",
                phase_time(event.time_ns, phase_ns)
            ),
        );
    }
}

/// An exit: fail-stop inside an I/O-fault window (and its grace), a failed join of a joiner cut off from the
/// cluster, a problem otherwise.
fn crashed(entry: &mut NodeBoots, node: &str, event: &Event, phase_ns: u64) {
    let exit = event.value["exit"].as_str().unwrap_or("?");
    let at = phase_time(event.time_ns, phase_ns);
    let join_failure = event.value["join_failure"].as_str();
    if event.value["host_lost"] == json!(true) {
        entry.hosts_lost.push(format!(
            "{node}'s host went away at {at} (the connection to its agent closed)"
        ));
    } else if let Some(line) = join_failure.filter(|_| entry.joining && event.value["was_ready"] != json!(true)) {
        entry
            .failed_joins
            .push(format!("{node} gave up joining at {at} ({exit}): {line}"));
    } else if entry.io_faults_until_ns.is_some_and(|until| event.time_ns <= until) {
        entry
            .io_exits
            .push(format!("{node} stopped on an injected I/O error ({exit}) at {at}"));
    } else {
        // The log's own words first: a process that catches SIGSEGV and aborts exits on SIGABRT.
        let said = match event.value["crash_line"].as_str() {
            Some(line) => format!("; its log: {line:?}"),
            None => String::new(),
        };
        entry.problem(
            event.time_ns,
            format!("{node} exited on its own ({exit}) at {at}{said}"),
        );
    }
}

/// A refusal (to boot, or of the offline verifier): legitimate after recorded surgery, a problem otherwise.
fn judge_refusal(entry: &mut NodeBoots, node: &str, event: &Event, phase_ns: u64) {
    let line = event.value["line"].as_str().unwrap_or("").to_string();
    let legit = entry.surgery_since_boot;
    entry
        .refusals
        .push(json!({"event": event.f, "index": event.index, "line": line, "legitimate": legit}));
    if legit {
        if event.is(Lifecycle::BootRefused) {
            entry.legit += 1;
            entry.refused_now = true;
            // It did what a node should on a damaged disk: a start that answers for a disturbed boot timeout.
            entry.owes_boot = None;
        }
    } else {
        let problem = format!(
            "{node} refused to boot on a disk nothing corrupted ({} at {}): {line}",
            event.f,
            phase_time(event.time_ns, phase_ns)
        );
        entry.first_clean_refusal.get_or_insert_with(|| problem.clone());
        entry.problem(event.time_ns, problem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{event, history, lifecycle};
    use crate::history::{EventKind, History};

    fn check_boot(history: &History) -> CheckResult {
        let logs = BTreeMap::new();
        Boot::default().check(&CheckInput {
            history,
            node_logs: &logs,
        })
    }

    /// `event` at `time_ns`.
    fn at(mut event: Event, time_ns: u64) -> Event {
        event.time_ns = time_ns;
        event
    }

    fn restart_all() -> Event {
        event(EventKind::Lifecycle, "restart-all", None, json!({}))
    }

    #[test]
    fn given_a_refusal_without_surgery_when_checked_should_be_invalid() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            restart_all(),
            lifecycle(
                "boot-refused",
                "n1",
                json!({"line": "wal: op 7 does not chain: refusing to boot"}),
            ),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(result.reason.contains("does not chain"), "{}", result.reason);
    }

    #[test]
    fn given_a_late_node_and_a_refusal_on_a_clean_disk_when_checked_should_lead_with_the_refusal() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            restart_all(),
            lifecycle("boot-timeout", "n1", json!({"timeout_ms": 20000})),
            lifecycle(
                "boot-refused",
                "n2",
                json!({"line": "interior WAL corruption at pos 9: op 3 does not chain to op 2"}),
            ),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(
            result
                .reason
                .starts_with("n2 refused to boot on a disk nothing corrupted"),
            "{}",
            result.reason
        );
        assert!(result.reason.ends_with("(and 1 more)"), "{}", result.reason);
        assert_eq!(result.details["n1"]["problems"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn given_a_refusal_after_recorded_surgery_when_checked_should_be_legitimate() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            lifecycle("boot-ok", "n3", json!({})),
            restart_all(),
            event(
                EventKind::Nemesis,
                "disk-surgery",
                Some("n2"),
                json!({"surgery": {"offset": 1}}),
            ),
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-refused", "n2", json!({"line": "refusing to boot"})),
            lifecycle("boot-ok", "n3", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
    }

    #[test]
    fn given_a_boot_after_a_refused_verification_when_checked_should_be_invalid() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            event(EventKind::Nemesis, "disk-surgery", Some("n1"), json!({"surgery": {}})),
            lifecycle(
                "verify-refused",
                "n1",
                json!({"line": "interior corruption: refusing to boot"}),
            ),
            lifecycle("boot-ok", "n1", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(result.reason.contains("accepts corrupt entries"), "{}", result.reason);
    }

    #[test]
    fn given_a_boot_timeout_while_the_nemesis_faulted_the_peers_when_checked_should_need_a_quorum_and_a_later_boot() {
        let start = |needs_quorum: bool| {
            event(
                EventKind::Meta,
                "run-start",
                None,
                json!({"ready_needs_quorum": needs_quorum}),
            )
        };
        let second = 1_000_000_000;
        // n2 starts at 6 s; its peers are killed and cut one way while it waits; it times out at 26 s.
        let disturbed = |needs_quorum: bool, later: Vec<Event>| {
            let mut events = vec![
                start(needs_quorum),
                at(lifecycle("boot-ok", "n1", json!({})), second),
                at(lifecycle("boot-ok", "n2", json!({})), second),
                at(lifecycle("boot-ok", "n3", json!({})), second),
                at(event(EventKind::Nemesis, "start", Some("n2"), json!({})), 6 * second),
                at(
                    event(EventKind::Nemesis, "kill", Some("n1"), json!({"pid": 7})),
                    8 * second,
                ),
                at(
                    event(
                        EventKind::Nemesis,
                        "partition-start",
                        None,
                        json!({"label": "{n2} -x-> n1"}),
                    ),
                    15 * second,
                ),
                at(
                    event(EventKind::Lifecycle, "fault-phase-end", None, json!({})),
                    24 * second,
                ),
                at(
                    lifecycle("boot-timeout", "n2", json!({"timeout_ms": 20000})),
                    26 * second,
                ),
                at(restart_all(), 31 * second),
                at(lifecycle("boot-ok", "n1", json!({})), 32 * second),
                at(lifecycle("boot-ok", "n3", json!({})), 32 * second),
            ];
            events.extend(later);
            history(events)
        };
        let booted = || vec![at(lifecycle("boot-ok", "n2", json!({})), 33 * second)];
        let result = check_boot(&disturbed(true, booted()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        let noted = result.details["n2"]["disturbed"][0].as_str().unwrap();
        assert!(noted.contains("kill of n1"), "{noted}");
        // The same process ready after its timeout (the watcher probes on): the note says so.
        let late = vec![at(
            lifecycle("boot-ok", "n2", json!({"late": true, "boot_ms": 21500})),
            27 * second,
        )];
        let result = check_boot(&disturbed(true, late.clone()));
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        let noted = result.details["n2"]["disturbed"][0].as_str().unwrap();
        assert!(noted.ends_with("and became ready 21500 ms after it started"), "{noted}");
        // A system whose readiness is its own (the reference node) has no excuse, late or not.
        assert_eq!(check_boot(&disturbed(false, booted())).verdict, Verdict::Invalid);
        assert_eq!(check_boot(&disturbed(false, late)).verdict, Verdict::Invalid);
        // Excused only if it boots later, on the healed cluster.
        let never = check_boot(&disturbed(true, Vec::new()));
        assert_eq!(never.verdict, Verdict::Invalid);
        assert!(never.reason.contains("never booted after it"), "{}", never.reason);
        // A window with no fault in it (the fault phase ended before it opened) excuses nothing.
        let calm = history(vec![
            start(true),
            at(lifecycle("boot-ok", "n2", json!({})), second),
            at(
                event(EventKind::Nemesis, "kill", Some("n1"), json!({"pid": 7})),
                2 * second,
            ),
            at(
                event(EventKind::Lifecycle, "fault-phase-end", None, json!({})),
                3 * second,
            ),
            at(
                lifecycle("boot-timeout", "n2", json!({"timeout_ms": 20000})),
                30 * second,
            ),
            at(lifecycle("boot-ok", "n2", json!({})), 40 * second),
        ]);
        assert_eq!(check_boot(&calm).verdict, Verdict::Invalid);
    }

    #[test]
    fn given_an_exit_during_an_io_fault_window_when_checked_should_be_a_fail_stop_but_later_exits_a_crash() {
        let nemesis = |f: &str| event(EventKind::Nemesis, f, Some("n2"), json!({}));
        let h = history(vec![
            at(lifecycle("boot-ok", "n2", json!({})), 1),
            at(nemesis("io-fault-start"), 10),
            at(lifecycle("crashed", "n2", json!({"exit": "exit code 2"})), 20),
            at(nemesis("io-fault-stop"), 30),
            at(lifecycle("boot-ok", "n2", json!({})), 40),
        ]);
        assert_eq!(check_boot(&h).verdict, Verdict::Valid, "{}", check_boot(&h).reason);
        let mut late = h.events.clone();
        late.push(at(
            lifecycle("crashed", "n2", json!({"exit": "exit code 2"})),
            30 + IO_FAULT_GRACE_NS + 1,
        ));
        let late = history(late);
        assert_eq!(
            check_boot(&late).verdict,
            Verdict::Invalid,
            "an exit long after the window is a crash"
        );
    }

    /// A process that caught its segfault and aborted exits on SIGABRT: the sentence quotes its own crash line.
    #[test]
    fn given_a_crash_whose_log_says_why_when_checked_should_quote_the_logs_crash_line() {
        let h = history(vec![
            at(lifecycle("boot-ok", "n3", json!({})), 1),
            at(
                lifecycle(
                    "crashed",
                    "n3",
                    json!({"exit": "signal 6 (SIGABRT)", "crash_line": "Segmentation fault"}),
                ),
                20,
            ),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(
            result.reason.contains("exited on its own (signal 6 (SIGABRT))")
                && result.reason.contains("its log: \"Segmentation fault\""),
            "{}",
            result.reason
        );
    }

    /// A node whose host went away (a run on hosts) did not exit on its own: what became of it is unknown, and the
    /// check says so rather than calling the node's death a crash.
    #[test]
    fn given_a_node_whose_host_went_away_when_judged_should_be_unknown_not_a_crash() {
        let lost = json!({"exit": "its host went away (the connection to its agent closed)", "was_ready": true,
                          "host_lost": true});
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n3", json!({})),
            lifecycle("crashed", "n3", lost),
            restart_all(),
            lifecycle("boot-ok", "n1", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
        assert!(result.reason.starts_with("n3's host went away at"), "{}", result.reason);
        assert!(!result.reason.contains("exited on its own"), "{}", result.reason);
    }

    #[test]
    fn given_a_joiner_cut_off_from_the_cluster_when_it_gives_up_should_be_a_failed_join_but_not_a_member_that_does() {
        let gave_up = json!({"exit": "exit code 1", "was_ready": false,
                             "join_failure": "etcd gave up joining: discovery failed: cannot fetch cluster info"});
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("wipe", "n4", json!({"after": "membership add"})),
            lifecycle("crashed", "n4", gave_up.clone()),
            lifecycle("boot-ok", "n4", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        assert!(
            result.reason.contains("1 joiner(s) gave up joining"),
            "{}",
            result.reason
        );
        assert_eq!(result.details["n4"]["failed_joins"].as_array().unwrap().len(), 1);
        // The same line from a node that booted since it joined, or one wiped after a refusal: a crash.
        let mut member = h.events.clone();
        member.push(lifecycle("crashed", "n4", gave_up.clone()));
        assert_eq!(check_boot(&history(member)).verdict, Verdict::Invalid);
        let refused = history(vec![
            lifecycle("wipe", "n4", json!({"after": "refusal"})),
            lifecycle("crashed", "n4", gave_up),
        ]);
        assert_eq!(check_boot(&refused).verdict, Verdict::Invalid);
    }

    #[test]
    fn given_a_node_missing_after_restart_all_when_checked_should_be_invalid() {
        let h = history(vec![
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            restart_all(),
            lifecycle("boot-ok", "n1", json!({})),
        ]);
        let result = check_boot(&h);
        assert_eq!(result.verdict, Verdict::Invalid);
        assert!(
            result.reason.contains("n2 did not boot after the restart-all"),
            "{}",
            result.reason
        );
    }

    /// etcd: after a restart-all whose surgery damaged n1 and n2, both refuse, and n3, alone, cannot become ready.
    #[test]
    fn given_a_timeout_while_a_majority_of_the_others_refused_legitimately_when_checked_should_be_unknown() {
        let surgery = |node| event(EventKind::Nemesis, "disk-surgery", Some(node), json!({"surgery": {}}));
        let refused = |node| lifecycle("boot-refused", node, json!({"line": "walpb: crc mismatch"}));
        let mut events = vec![
            lifecycle("start", "n1", json!({})),
            lifecycle("start", "n2", json!({})),
            lifecycle("start", "n3", json!({})),
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            lifecycle("boot-ok", "n3", json!({})),
            restart_all(),
            surgery("n1"),
            surgery("n2"),
            refused("n1"),
            refused("n2"),
            lifecycle("boot-timeout", "n3", json!({"timeout_ms": 20000})),
        ];
        let result = check_boot(&history(events.clone()));
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
        assert!(result.reason.starts_with("2 of 3 nodes refused"), "{}", result.reason);
        assert!(result.reason.contains("n3 was not ready"), "{}", result.reason);
        assert!(result.reason.contains("no quorum to join"), "{}", result.reason);
        // With only n1 refused, n2 and n3 are a quorum: n3's timeout is its own.
        events.retain(|e| e.node.as_deref() != Some("n2") || e.f != "boot-refused");
        events.push(lifecycle("boot-ok", "n2", json!({})));
        let result = check_boot(&history(events));
        assert_eq!(result.verdict, Verdict::Invalid, "{}", result.reason);
        assert!(
            result.reason.starts_with("n3 was not ready within 20000 ms"),
            "{}",
            result.reason
        );
    }

    #[test]
    fn given_a_node_removed_before_the_restart_all_when_it_stays_down_should_be_valid() {
        let members = |names: &[&str]| event(EventKind::Observation, "members", None, json!({"members": names}));
        let h = history(vec![
            members(&["n1", "n2", "n3"]),
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            lifecycle("boot-ok", "n3", json!({})),
            members(&["n1", "n2"]),
            restart_all(),
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
        ]);
        assert_eq!(
            check_boot(&h).verdict,
            Verdict::Valid,
            "n3 left the cluster: it need not boot"
        );
        let h = history(vec![
            members(&["n1", "n2"]),
            lifecycle("boot-ok", "n1", json!({})),
            lifecycle("boot-ok", "n2", json!({})),
            restart_all(),
            lifecycle("boot-ok", "n1", json!({})),
        ]);
        let result = check_boot(&h);
        assert!(
            result.reason.contains("n2 did not boot after the restart-all"),
            "{}",
            result.reason
        );
    }

    #[test]
    fn given_damaged_nodes_refusing_one_after_another_when_checked_should_be_valid_and_at_once_unknown() {
        let cut = |node| {
            event(
                EventKind::Nemesis,
                "disk-surgery",
                Some(node),
                json!({"fault_id": 1, "surgery": {}}),
            )
        };
        let refused = |node| {
            lifecycle(
                "boot-refused",
                node,
                json!({"line": "interior corruption; refusing to boot"}),
            )
        };
        let ok = |node| lifecycle("boot-ok", node, json!({}));
        // n1 refuses, is wiped and rejoins; only then does n2 refuse: never more than one at once.
        let one_after_another = history(vec![
            ok("n1"),
            ok("n2"),
            ok("n3"),
            cut("n1"),
            refused("n1"),
            lifecycle("wipe", "n1", json!({})),
            ok("n1"),
            cut("n2"),
            refused("n2"),
            lifecycle("wipe", "n2", json!({})),
            ok("n2"),
        ]);
        let result = check_boot(&one_after_another);
        assert_eq!(result.verdict, Verdict::Valid, "{}", result.reason);
        // The same two refusals overlapping: a majority was refused at once.
        let at_once = history(vec![
            ok("n1"),
            ok("n2"),
            ok("n3"),
            cut("n1"),
            refused("n1"),
            cut("n2"),
            refused("n2"),
        ]);
        let result = check_boot(&at_once);
        assert_eq!(result.verdict, Verdict::Unknown, "{}", result.reason);
        assert!(result.reason.starts_with("2 of 3 nodes refused"), "{}", result.reason);
    }
}
