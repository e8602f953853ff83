//! Coverage: which named states a run reached, and how often each plan trigger fired.
//!
//! A run that passes says little unless it reached the states where consensus bugs live. [`coverage`] reads the
//! history alone (so `faultline analyze DIR` recomputes it) and lists every state below, in this order, reached or
//! not, with how often and when (ms since the run started) it was first reached.
//!
//! # What the history says, and how it is read
//!
//! - A node is *down* after a successful nemesis `kill` or `power-loss`, or a lifecycle `crashed`, `boot-refused` or
//!   `kill` (the final phase's restart-all), until its next successful lifecycle or nemesis `start`. Events with an
//!   `error` (a fault or a start that failed) change nothing.
//! - A node's *current status* is its latest `status` observation, but only while it is up: going down forgets it,
//!   and a restarted node has none until its next `status` event.
//! - The cluster *has no primary* when no node's current status says `role: primary`.
//! - `n`, the node count, is the number of distinct nodes with a lifecycle `start` before `cluster-ready` (all
//!   lifecycle starts when the cluster never became ready).
//! - The *fault phase* is the time from `cluster-ready` to `fault-phase-end`.
//!
//! # The states
//!
//! 1. `primary-killed-while-backup-lagged`: a successful nemesis kill or power-loss of a node whose current status
//!    says `role: primary`, while some other node's current status says `lagging: true`.
//! 2. `view-change-while-repairing`: a node logs `repairing` and, before it logs `repaired`, goes down, or 5 s pass,
//!    some node logs `view-change` or the cluster loses its primary. Counted once per repair.
//! 3. `restart-during-view-change`: a `boot-ok` in the fault phase while the cluster has no primary, or within 2 s
//!    after a `view-change` log line with no `role: primary` status recorded since.
//! 4. `majority-down`: in the fault phase, at least `n/2+1` nodes are down at once. Counted once per entry into it.
//! 5. `all-lost-power`: every node lost power at once: successful nemesis `power-loss` events of one `fault_id`
//!    covering all `n` nodes (the steps of a rolling fault, `rolling: {step}`, each count on their own: one node at
//!    a time is not at once), or the final phase's power loss (`source: restart-all`) of all `n` nodes after one
//!    `restart-all`.
//! 6. `refused-wiped-rejoined`: a node refused to boot (`boot-refused`), was wiped (`wipe`) and then booted
//!    (`boot-ok`).
//! 7. `two-primaries`: two up nodes report the primary role in different views at once, in the fault phase.
//! 8. `graceful-stop`: a nemesis `stop` (or a `corrupt` with `stop: graceful`) whose node exited within its grace
//!    (`killed: false`).
//! 9. `cut-truncate-tail` ... 14. `cut-delete-file`: a `disk-surgery` event of a live `corrupt` fault (it carries a
//!    `fault_id`) that cut with that op, one state per op; the final phase's cuts (no `fault_id`) do not count, nor
//!    does a cut that changed no byte a reader reaches ([`crate::checker::damage::changed_data`]: a chunk written
//!    back over equal bytes, a misdirected write past a preallocated file's data). `cut-snapshot-chunk` counts the
//!    chunks saved (a snapshot reads, it never changes anything).
//! 15. `damaged-node-led`: a node whose files a live cut damaged later reported `role: primary`: the state in which
//!     a system that trusts a damaged log loses acknowledged writes. Counted once per cut.
//! 16. `rolling-restart`: one rolling fault (`targets: each`) took every one of the `n` nodes down and each was ready
//!     again before the next went down: successful `rolling-ready` events of one `fault_id` for all `n` nodes.
//!     Counted once per rolling fault.
//! 17. `primary-clock-moved`: a clock fault moved the clock of a node whose current status says `role: primary`, or a
//!     node whose clock a clock fault holds (a successful `clock`, no `clock-heal` since) reported `role: primary`:
//!     the state in which leases and timeouts that trust a clock go wrong. Counted once per clock fault and node.
//! 18. `member-removed-while-primary`: a membership step `remove` that took effect (`outcome: ok`) on the node whose
//!     status said `role: primary` when the step began (`duration_ms` before its record).
//! 19. `add-during-partition`: a membership step `add` that was tried (`ok` or `info`) while a partition was in force
//!     (one started before the step ended and had not stopped before it began).
//! 20. `replace-of-lagging-node`: the `remove` step of a `replace` that took effect on a node whose status said
//!     `lagging: true` when the step began.
//! 21. `config-change-during-view-change`: a membership step that was tried while the cluster had no primary when it
//!     began, or with a `view-change` line from 2 s before it began to its end: a reconfiguration racing an election.
//!
//! Membership: a `members` observation sets `n` to its member count and forgets the status of a node that left; a
//! node that left is not down.
//!
//! Triggers: one row per trigger index seen in nemesis `trigger` events, in index order: `declined` counts events
//! with `declined: true` (the probability draw said no), `skipped` those with a `skipped` reason, `fired` the rest.
//!
//! Skipped faults: every nemesis `fault-skipped` event (a scheduled fault that did nothing, such as an
//! `isolate-primary` with no primary known), in history order, with when and why: a plan whose scripted fault never
//! happened did not test what it says.

use crate::history::{Event, History, Lifecycle, Nemesis, Observation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// How long a `repairing` line stays open without a `repaired` (state 2).
const REPAIR_WINDOW_NS: u64 = 5_000_000_000;
/// How long after a `view-change` line a boot counts as during the view change (state 3).
const VIEW_CHANGE_WINDOW_NS: u64 = 2_000_000_000;

/// The named states, in the order [`Coverage::states`] lists them, with their one-line meaning.
pub const STATES: [(&str, &str); 21] = [
    (
        "primary-killed-while-backup-lagged",
        "the primary was killed or lost power while another node reported lagging",
    ),
    (
        "view-change-while-repairing",
        "a view change started (or the primary was lost) while a node was repairing",
    ),
    (
        "restart-during-view-change",
        "a node booted during the fault phase while the cluster had no primary",
    ),
    (
        "majority-down",
        "a majority of the nodes were down at once during the fault phase",
    ),
    ("all-lost-power", "every node lost power at once"),
    (
        "refused-wiped-rejoined",
        "a node refused to boot, was wiped and booted again",
    ),
    (
        "two-primaries",
        "two nodes claimed to be primary at once (one cut off or paused in an older view) during the fault phase",
    ),
    (
        "graceful-stop",
        "a node asked to stop (SIGTERM or its stop command) exited on its own within its grace",
    ),
    (
        "cut-truncate-tail",
        "a live node's file lost its tail (a corrupt fault)",
    ),
    ("cut-flip-bits", "bits flipped in a live node's file (a corrupt fault)"),
    (
        "cut-zero-block",
        "a block of a live node's file zeroed (a corrupt fault)",
    ),
    (
        "cut-snapshot-chunk",
        "a chunk of a live node's file saved for a later lost or misdirected write",
    ),
    (
        "cut-restore-chunk",
        "an old chunk written back into a live node's file: a lost or misdirected write",
    ),
    ("cut-delete-file", "a live node's file deleted (a corrupt fault)"),
    (
        "damaged-node-led",
        "a node whose files a live cut damaged later became primary",
    ),
    (
        "rolling-restart",
        "every node was taken down and was ready again in turn, one at a time (a rolling fault)",
    ),
    (
        "primary-clock-moved",
        "a primary's clock was moved by a clock fault (bump, strobe or skew) while it led",
    ),
    (
        "member-removed-while-primary",
        "a membership change removed the node that was primary when it began",
    ),
    (
        "add-during-partition",
        "a membership change added a node while a network partition was in force",
    ),
    (
        "replace-of-lagging-node",
        "a membership change replaced (removed, wiped, added back) a node that reported lagging",
    ),
    (
        "config-change-during-view-change",
        "a membership change ran while the cluster had no primary or a view change started",
    ),
];

/// The states of live cuts, by the surgery op they count (`cut-<op>`).
const CUT_OPS: [&str; 6] = [
    "truncate-tail",
    "flip-bits",
    "zero-block",
    "snapshot-chunk",
    "restore-chunk",
    "delete-file",
];

/// Which named states a run reached, and what its triggers did: `coverage` in `results.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Every named state, in [`STATES`] order (empty in results written before coverage existed).
    pub states: Vec<StateCoverage>,
    /// One entry per plan trigger that appears in the history, by trigger index.
    pub triggers: Vec<TriggerCoverage>,
    /// The scheduled faults that did nothing, in history order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFault>,
}

/// A scheduled fault that did nothing (a `fault-skipped` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFault {
    /// The fault's id in its family's schedule, when recorded.
    pub fault_id: Option<u64>,
    /// What it was: its kind and target (`kill primary`) or its partition shape (`isolate-primary`).
    pub fault: String,
    /// When it was due and skipped, ms since the run started.
    pub at_ms: u64,
    /// Why it did nothing.
    pub reason: String,
}

impl Coverage {
    /// The state named `name`, if this coverage lists it.
    pub fn state(&self, name: &str) -> Option<&StateCoverage> {
        self.states.iter().find(|s| s.name == name)
    }
}

/// One named state and whether (how often, first when) the run reached it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCoverage {
    /// The state's name (see the module doc).
    pub name: String,
    /// What it means, in one line.
    pub description: String,
    /// True when the run reached it at least once.
    pub reached: bool,
    /// How many times it was reached.
    pub count: u64,
    /// When it was first reached, ms since the run started.
    pub first_ms: Option<u64>,
}

/// What one plan trigger did over the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerCoverage {
    /// The trigger's index in the plan.
    pub trigger: u64,
    /// Its condition (`restarted`, `lagging` ...).
    pub condition: String,
    /// Its action (`kill`, `pause`, `power-loss`, `partition`, `link`, `io`).
    pub action: String,
    /// Times its condition held and it acted.
    pub fired: u64,
    /// Times its probability draw said no.
    pub declined: u64,
    /// Times it would have acted but was skipped (the reason is in the history).
    pub skipped: u64,
}

/// Computes a run's coverage from its history alone.
pub fn coverage(history: &History) -> Coverage {
    let mut walk = Walk::new(node_count(history));
    for event in &history.events {
        walk.step(event);
    }
    Coverage {
        states: walk
            .hits
            .iter()
            .zip(STATES)
            .map(|(hit, (name, description))| hit.state(name, description))
            .collect(),
        triggers: triggers(history),
        skipped: skipped_faults(history),
    }
}

/// Every `fault-skipped` event of the history, in order.
fn skipped_faults(history: &History) -> Vec<SkippedFault> {
    let text = |value: &Value| value.as_str().map(str::to_string);
    history
        .events
        .iter()
        .filter(|e| e.is(Nemesis::FaultSkipped))
        .map(|e| {
            let value = &e.value;
            let fault = match (text(&value["kind"]), text(&value["target"]), text(&value["shape"])) {
                (Some(kind), Some(target), _) => format!("{kind} {target}"),
                (Some(kind), None, _) => kind,
                (None, _, Some(shape)) => format!("partition {shape}"),
                _ => "a fault".to_string(),
            };
            SkippedFault {
                fault_id: value["fault_id"].as_u64(),
                fault,
                at_ms: e.time_ns / 1_000_000,
                reason: text(&value["reason"]).unwrap_or_default(),
            }
        })
        .collect()
}

/// Distinct nodes started before `cluster-ready` (every started node when the cluster never became ready).
fn node_count(history: &History) -> usize {
    let starts = |before_ready: bool| {
        let mut nodes = BTreeSet::new();
        for event in &history.events {
            if before_ready && event.is(Lifecycle::ClusterReady) {
                break;
            }
            if event.is(Lifecycle::Start) {
                nodes.extend(event.node.as_deref());
            }
        }
        nodes.len()
    };
    if history.events.iter().any(|e| e.is(Lifecycle::ClusterReady)) {
        starts(true)
    } else {
        starts(false)
    }
}

fn triggers(history: &History) -> Vec<TriggerCoverage> {
    let mut by_index: BTreeMap<u64, TriggerCoverage> = BTreeMap::new();
    for event in history.events.iter().filter(|e| e.is(Nemesis::Trigger)) {
        let Some(index) = event.value["trigger"].as_u64() else {
            continue;
        };
        let text = |key: &str| event.value[key].as_str().unwrap_or("").to_string();
        let entry = by_index.entry(index).or_insert_with(|| TriggerCoverage {
            trigger: index,
            condition: text("condition"),
            action: text("action"),
            fired: 0,
            declined: 0,
            skipped: 0,
        });
        if event.value["declined"].as_bool() == Some(true) {
            entry.declined += 1;
        } else if !event.value["skipped"].is_null() {
            entry.skipped += 1;
        } else {
            entry.fired += 1;
        }
    }
    by_index.into_values().collect()
}

/// How often one state was reached, and first when.
#[derive(Debug, Default, Clone, Copy)]
struct Hit {
    count: u64,
    first_ns: Option<u64>,
}

impl Hit {
    fn record(&mut self, time_ns: u64) {
        self.count += 1;
        self.first_ns.get_or_insert(time_ns);
    }

    fn state(&self, name: &str, description: &str) -> StateCoverage {
        StateCoverage {
            name: name.to_string(),
            description: description.to_string(),
            reached: self.count > 0,
            count: self.count,
            first_ms: self.first_ns.map(|ns| ns / 1_000_000),
        }
    }
}

/// Indices into `Walk::hits`, in [`STATES`] order.
const PRIMARY_KILLED: usize = 0;
const VIEW_CHANGE_REPAIRING: usize = 1;
const RESTART_VIEW_CHANGE: usize = 2;
const MAJORITY_DOWN: usize = 3;
const ALL_LOST_POWER: usize = 4;
const REFUSED_WIPED_REJOINED: usize = 5;
const TWO_PRIMARIES: usize = 6;
const GRACEFUL_STOP: usize = 7;
/// The first of the [`CUT_OPS`] states; the others follow in that order.
const FIRST_CUT: usize = 8;
const DAMAGED_NODE_LED: usize = 14;
const ROLLING_RESTART: usize = 15;
const PRIMARY_CLOCK_MOVED: usize = 16;
const MEMBER_REMOVED_WHILE_PRIMARY: usize = 17;
const ADD_DURING_PARTITION: usize = 18;
const REPLACE_OF_LAGGING_NODE: usize = 19;
const CONFIG_CHANGE_DURING_VIEW_CHANGE: usize = 20;

/// Where a refused node is on its way back (state 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rejoin {
    Refused,
    Wiped,
}

/// The cluster as the history has told it so far, walked one event at a time.
struct Walk {
    nodes: usize,
    hits: [Hit; STATES.len()],
    /// Nodes a live cut damaged that have not reported `role: primary` since (state 15).
    damaged: BTreeSet<String>,
    /// Nodes that went down and have not started since.
    down: BTreeSet<String>,
    /// Current status of each up node that has reported since it (re)started.
    status: BTreeMap<String, Value>,
    /// Open repairs: node -> when it logged `repairing`.
    repairing: BTreeMap<String, u64>,
    /// The last `view-change` line with no primary status since.
    view_change_ns: Option<u64>,
    /// Successful power losses: `fault_id` (or the final phase's `restart-all` number) -> nodes.
    power_lost: BTreeMap<String, BTreeSet<String>>,
    /// Rolling faults: `fault_id` -> the nodes that were ready again (state 16).
    rolled: BTreeMap<u64, BTreeSet<String>>,
    rejoin: BTreeMap<String, Rejoin>,
    /// Nodes whose clock a clock fault holds and that have not counted as a primary under it yet (state 17).
    clock_moved: BTreeSet<String>,
    /// Membership (states 18-21): what each node's status said over time, partitions, view changes.
    changes: MembershipWalk,
    restart_alls: u64,
    cluster_ready: bool,
    fault_phase_end: bool,
    majority_down: bool,
    two_primaries: bool,
}

impl Walk {
    fn new(nodes: usize) -> Walk {
        Walk {
            nodes,
            hits: [Hit::default(); STATES.len()],
            damaged: BTreeSet::new(),
            down: BTreeSet::new(),
            status: BTreeMap::new(),
            repairing: BTreeMap::new(),
            view_change_ns: None,
            power_lost: BTreeMap::new(),
            rolled: BTreeMap::new(),
            rejoin: BTreeMap::new(),
            clock_moved: BTreeSet::new(),
            changes: MembershipWalk::default(),
            restart_alls: 0,
            cluster_ready: false,
            fault_phase_end: false,
            majority_down: false,
            two_primaries: false,
        }
    }

    fn step(&mut self, event: &Event) {
        let t = event.time_ns;
        self.repairing
            .retain(|_, start| t.saturating_sub(*start) <= REPAIR_WINDOW_NS);
        let had_primary = self.has_primary();
        let node = event.node.clone().unwrap_or_default();
        let ok = succeeded(event);
        if ok && (event.is(Nemesis::Stop) || event.is(Nemesis::Corrupt)) {
            if event.value["killed"] == Value::Bool(false) {
                self.hits[GRACEFUL_STOP].record(t);
            }
            self.go_down(&node);
        } else if event.is(Nemesis::DiskSurgery) {
            self.live_cut(event, &node);
        } else if event.is(Nemesis::Kill) || event.is(Nemesis::PowerLoss) {
            if ok && self.is_primary(&node) && self.other_lagging(&node) {
                self.hits[PRIMARY_KILLED].record(t);
            }
            if ok && event.is(Nemesis::PowerLoss) {
                self.power_loss(event, &node);
            }
            if ok {
                self.go_down(&node);
            }
        } else if event.is(Lifecycle::Crashed) || event.is(Lifecycle::Kill) {
            if ok {
                self.go_down(&node);
            }
        } else if event.is(Lifecycle::BootRefused) {
            self.go_down(&node);
            self.rejoin.insert(node, Rejoin::Refused);
        } else if event.is(Lifecycle::Start) || event.is(Nemesis::Start) {
            if ok {
                self.down.remove(&node);
            }
        } else if event.is(Nemesis::Clock) {
            if ok && self.is_primary(&node) {
                self.hits[PRIMARY_CLOCK_MOVED].record(t);
            } else if ok {
                self.clock_moved.insert(node);
            }
        } else if event.is(Nemesis::ClockHeal) {
            self.clock_moved.remove(&node);
        } else if event.is(Nemesis::RollingReady) {
            if ok {
                self.rolled_ready(event, node);
            }
        } else if event.is(Lifecycle::Wipe) {
            if self.rejoin.get(&node) == Some(&Rejoin::Refused) {
                self.rejoin.insert(node, Rejoin::Wiped);
            }
        } else if event.is(Lifecycle::BootOk) {
            self.boot_ok(t, &node);
        } else if event.is(Lifecycle::ClusterReady) {
            self.cluster_ready = true;
        } else if event.is(Lifecycle::FaultPhaseEnd) {
            self.fault_phase_end = true;
        } else if event.is(Lifecycle::RestartAll) {
            self.restart_alls += 1;
        } else if event.is(Observation::Status) {
            self.changes.note_status(t, &node, &event.value);
            if !self.down.contains(&node) {
                if event.value["role"].as_str() == Some("primary") {
                    self.view_change_ns = None;
                    if self.damaged.remove(&node) {
                        self.hits[DAMAGED_NODE_LED].record(t);
                    }
                    if self.clock_moved.remove(&node) {
                        self.hits[PRIMARY_CLOCK_MOVED].record(t);
                    }
                }
                self.status.insert(node, event.value.clone());
            }
        } else if event.is(Observation::Log) {
            if event.value["pattern"] == "view-change" {
                self.changes.view_change_ns = Some(t);
            }
            self.log_line(t, node, event.value["pattern"].as_str().unwrap_or(""));
        } else if event.is(Observation::Members) {
            self.members(event);
        } else if event.is(Nemesis::Membership) {
            self.membership_step(event, &node);
        } else if event.is(Nemesis::PartitionStart) && ok {
            self.changes.partitions.insert(event.value["fault_id"].to_string());
        } else if event.is(Nemesis::PartitionStop) {
            self.changes.partitions.remove(&event.value["fault_id"].to_string());
            self.changes.partition_ended_ns = Some(t);
        }
        if had_primary && !self.has_primary() {
            self.repair_interrupted(t);
        }
        self.check_majority_down(t);
        self.check_two_primaries(t);
    }

    /// Who the members are now: `n` follows them, and a node that left is neither up nor down.
    fn members(&mut self, event: &Event) {
        let members = crate::membership::names(&event.value["members"]);
        if members.is_empty() {
            return;
        }
        self.nodes = members.len();
        self.status.retain(|node, _| members.contains(node));
        self.down.retain(|node| members.contains(node));
    }

    /// One membership step (states 18-21).
    fn membership_step(&mut self, event: &Event, node: &str) {
        let t = event.time_ns;
        let value = &event.value;
        let outcome = value["outcome"].as_str().unwrap_or("");
        if !matches!(outcome, "ok" | "info") {
            return; // refused or skipped: nothing ran
        }
        let began = t.saturating_sub(value["duration_ms"].as_u64().unwrap_or(0) * 1_000_000);
        let took = outcome == "ok";
        let at_start = self.changes.status_at(node, began);
        match value["step"].as_str() {
            Some("remove") if took && at_start.is_some_and(|(primary, _)| primary) => {
                self.hits[MEMBER_REMOVED_WHILE_PRIMARY].record(t);
            }
            Some("add") if self.changes.partitioned_during(began) => self.hits[ADD_DURING_PARTITION].record(t),
            _ => {}
        }
        let lagging = at_start.is_some_and(|(_, lagging)| lagging);
        if took && value["change"] == "replace" && value["step"] == "remove" && lagging {
            self.hits[REPLACE_OF_LAGGING_NODE].record(t);
        }
        let electing = !self.changes.primary_at(began)
            || self
                .changes
                .view_change_ns
                .is_some_and(|at| at + VIEW_CHANGE_WINDOW_NS >= began);
        if electing {
            self.hits[CONFIG_CHANGE_DURING_VIEW_CHANGE].record(t);
        }
    }

    fn go_down(&mut self, node: &str) {
        self.down.insert(node.to_string());
        self.status.remove(node);
        self.repairing.remove(node);
    }

    /// A cut of a live `corrupt` fault (it names its fault; the final phase's cuts do not).
    fn live_cut(&mut self, event: &Event, node: &str) {
        let Some(op) = event.value["surgery"]["op"].as_str() else {
            return; // a cut that failed
        };
        if event.value["fault_id"].is_null() {
            return;
        }
        if op != "snapshot-chunk" && !crate::checker::damage::changed_data(&event.value["surgery"]) {
            return; // it tested nothing: no reader sees a difference
        }
        // A restore records `misdirect-chunk` when it wrote the old chunk somewhere else.
        let op = if op == "misdirect-chunk" { "restore-chunk" } else { op };
        if let Some(i) = CUT_OPS.iter().position(|o| *o == op) {
            self.hits[FIRST_CUT + i].record(event.time_ns);
        }
        if op != "snapshot-chunk" {
            self.damaged.insert(node.to_string());
        }
    }

    fn power_loss(&mut self, event: &Event, node: &str) {
        let key = match event.value["fault_id"].as_u64() {
            Some(id) => match event.value["rolling"]["step"].as_u64() {
                Some(step) => format!("fault {id} step {step}"),
                None => format!("fault {id}"),
            },
            None if event.value["source"].as_str() == Some("restart-all") => {
                format!("restart-all {}", self.restart_alls)
            }
            None => return,
        };
        let nodes = self.power_lost.entry(key).or_default();
        let before = nodes.len();
        nodes.insert(node.to_string());
        if self.nodes > 0 && before < self.nodes && nodes.len() >= self.nodes {
            self.hits[ALL_LOST_POWER].record(event.time_ns);
        }
    }

    /// A node of a rolling fault is ready again: once every node of the cluster was, the fault rolled through it.
    fn rolled_ready(&mut self, event: &Event, node: String) {
        let Some(id) = event.value["fault_id"].as_u64() else {
            return;
        };
        let nodes = self.rolled.entry(id).or_default();
        let before = nodes.len();
        nodes.insert(node);
        if self.nodes > 0 && before < self.nodes && nodes.len() >= self.nodes {
            self.hits[ROLLING_RESTART].record(event.time_ns);
        }
    }

    fn boot_ok(&mut self, t: u64, node: &str) {
        if self.rejoin.remove(node) == Some(Rejoin::Wiped) {
            self.hits[REFUSED_WIPED_REJOINED].record(t);
        }
        let in_fault_phase = self.cluster_ready && !self.fault_phase_end;
        let after_view_change = self
            .view_change_ns
            .is_some_and(|at| t.saturating_sub(at) <= VIEW_CHANGE_WINDOW_NS);
        if in_fault_phase && (!self.has_primary() || after_view_change) {
            self.hits[RESTART_VIEW_CHANGE].record(t);
        }
    }

    fn log_line(&mut self, t: u64, node: String, pattern: &str) {
        match pattern {
            "repairing" => {
                self.repairing.insert(node, t);
            }
            "repaired" => {
                self.repairing.remove(&node);
            }
            "view-change" => {
                self.view_change_ns = Some(t);
                self.repair_interrupted(t);
            }
            _ => {}
        }
    }

    /// Every open repair was overtaken by a view change: each counts once and is closed.
    fn repair_interrupted(&mut self, t: u64) {
        for _ in 0..self.repairing.len() {
            self.hits[VIEW_CHANGE_REPAIRING].record(t);
        }
        self.repairing.clear();
    }

    fn check_majority_down(&mut self, t: u64) {
        let in_fault_phase = self.cluster_ready && !self.fault_phase_end;
        let majority = self.nodes > 0 && self.down.len() > self.nodes / 2;
        let now = in_fault_phase && majority;
        if now && !self.majority_down {
            self.hits[MAJORITY_DOWN].record(t);
        }
        self.majority_down = now;
    }

    /// Two up nodes report the primary role in different views (or without views): one of them is stale.
    fn check_two_primaries(&mut self, t: u64) {
        let in_fault_phase = self.cluster_ready && !self.fault_phase_end;
        let views: Vec<Option<u64>> = self
            .status
            .iter()
            .filter(|(node, _)| self.is_primary(node))
            .map(|(_, s)| s["view"].as_u64())
            .collect();
        let stale = views
            .iter()
            .enumerate()
            .any(|(i, a)| views[i + 1..].iter().any(|b| a.is_none() || b.is_none() || a != b));
        let now = in_fault_phase && stale;
        if now && !self.two_primaries {
            self.hits[TWO_PRIMARIES].record(t);
        }
        self.two_primaries = now;
    }

    fn has_primary(&self) -> bool {
        self.status.keys().any(|node| self.is_primary(node))
    }

    fn is_primary(&self, node: &str) -> bool {
        self.status
            .get(node)
            .is_some_and(|s| s["role"].as_str() == Some("primary"))
    }

    fn other_lagging(&self, primary: &str) -> bool {
        self.status
            .iter()
            .any(|(node, s)| node != primary && s["lagging"].as_bool() == Some(true))
    }
}

/// What the membership states need beyond the current status: each node's status over time (to ask what it was
/// when a change began, `duration_ms` before its record), the partitions in force, the last view change.
#[derive(Debug, Default)]
struct MembershipWalk {
    /// node -> (when, primary?, lagging?) at every status change.
    statuses: BTreeMap<String, Vec<(u64, bool, bool)>>,
    /// Partitions in force, by `fault_id`.
    partitions: BTreeSet<String>,
    /// When the last partition stopped.
    partition_ended_ns: Option<u64>,
    /// The last `view-change` line.
    view_change_ns: Option<u64>,
}

impl MembershipWalk {
    fn note_status(&mut self, t: u64, node: &str, status: &Value) {
        let primary = status["role"].as_str() == Some("primary");
        let lagging = status["lagging"].as_bool() == Some(true);
        let history = self.statuses.entry(node.to_string()).or_default();
        if history.last().is_none_or(|&(_, p, l)| (p, l) != (primary, lagging)) {
            history.push((t, primary, lagging));
        }
    }

    /// (primary?, lagging?) of `node`'s last status at or before `t`.
    fn status_at(&self, node: &str, t: u64) -> Option<(bool, bool)> {
        let history = self.statuses.get(node)?;
        history
            .iter()
            .take_while(|(at, _, _)| *at <= t)
            .last()
            .map(|&(_, primary, lagging)| (primary, lagging))
    }

    /// Whether some node's last status at or before `t` said primary.
    fn primary_at(&self, t: u64) -> bool {
        self.statuses
            .keys()
            .any(|node| self.status_at(node, t).is_some_and(|(primary, _)| primary))
    }

    /// Whether a partition was in force at some moment from `began` until now.
    fn partitioned_during(&self, began: u64) -> bool {
        !self.partitions.is_empty() || self.partition_ended_ns.is_some_and(|ended| ended >= began)
    }
}

/// False when the event records a failure: an `error` on the event, in its value, or in the power loss's `lost`.
fn succeeded(event: &Event) -> bool {
    event.error.is_none() && event.value.get("error").is_none() && event.value["lost"].get("error").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Name;
    use serde_json::json;

    fn at(ms: u64, name: impl Into<Name>, node: Option<&str>, value: Value) -> Event {
        let mut event = Event::named(name, node.map(str::to_string), value);
        event.time_ns = ms * 1_000_000;
        event
    }

    fn status(ms: u64, node: &str, role: &str, lagging: bool) -> Event {
        at(
            ms,
            Observation::Status,
            Some(node),
            json!({"role": role, "view": 1, "lagging": lagging}),
        )
    }

    fn log(ms: u64, node: &str, pattern: &str) -> Event {
        at(
            ms,
            Observation::Log,
            Some(node),
            json!({"pattern": pattern, "line": "x"}),
        )
    }

    fn kill(ms: u64, node: &str, fault_id: u64) -> Event {
        at(
            ms,
            Nemesis::Kill,
            Some(node),
            json!({"fault_id": fault_id, "target": node, "source": "flap"}),
        )
    }

    fn power_loss(ms: u64, node: &str, fault_id: u64) -> Event {
        at(
            ms,
            Nemesis::PowerLoss,
            Some(node),
            json!({"fault_id": fault_id, "target": "all", "source": "flap"}),
        )
    }

    fn restart(ms: u64, node: &str) -> Event {
        at(ms, Nemesis::Start, Some(node), json!({"fault_id": 1}))
    }

    fn boot_ok(ms: u64, node: &str) -> Event {
        at(ms, Lifecycle::BootOk, Some(node), json!({}))
    }

    /// Three nodes started and ready, n1 primary, at 100 ms; then `rest`.
    fn run(rest: Vec<Event>) -> Coverage {
        let mut events = Vec::new();
        for node in ["n1", "n2", "n3"] {
            events.push(at(0, Lifecycle::Start, Some(node), json!({"pid": 1})));
        }
        events.push(at(50, Lifecycle::ClusterReady, None, json!({})));
        events.push(status(100, "n1", "primary", false));
        events.push(status(100, "n2", "backup", false));
        events.push(status(100, "n3", "backup", false));
        events.extend(rest);
        for (index, event) in events.iter_mut().enumerate() {
            event.index = index as u64;
        }
        coverage(&History {
            events,
            truncated_tail: false,
        })
    }

    fn reached(coverage: &Coverage, name: &str) -> (bool, u64, Option<u64>) {
        let state = coverage.state(name).expect("every state is listed");
        (state.reached, state.count, state.first_ms)
    }

    #[test]
    fn given_any_history_when_covered_should_list_every_state_in_order() {
        let names: Vec<String> = run(vec![]).states.into_iter().map(|s| s.name).collect();
        assert_eq!(names, STATES.map(|(name, _)| name.to_string()));
        assert!(run(vec![])
            .states
            .iter()
            .all(|s| !s.reached && s.count == 0 && s.first_ms.is_none()));
    }

    /// A membership step that ended at `ms` after `duration_ms`.
    fn step(ms: u64, node: &str, change: &str, step: &str, outcome: &str, duration_ms: u64) -> Event {
        at(
            ms,
            Nemesis::Membership,
            Some(node),
            json!({"fault_id": 9, "change": change, "step": step, "outcome": outcome, "duration_ms": duration_ms}),
        )
    }

    #[test]
    fn given_membership_steps_when_covered_should_reach_each_membership_state_from_the_moment_the_step_began() {
        let partition = |ms, f: Nemesis| at(ms, f, None, json!({"fault_id": 4}));
        let c = run(vec![
            // n1 led when its removal began (by the time it is recorded, n2 leads).
            status(900, "n2", "primary", false),
            status(900, "n1", "backup", false),
            step(1000, "n1", "remove", "remove", "ok", 300),
            at(1001, Observation::Members, None, json!({"members": ["n2", "n3"]})),
            partition(1500, Nemesis::PartitionStart),
            step(2500, "n4", "add", "add", "info", 800),
            partition(2600, Nemesis::PartitionStop),
            status(3000, "n3", "backup", true),
            step(3500, "n3", "replace", "remove", "ok", 200),
        ]);
        assert_eq!(reached(&c, "member-removed-while-primary"), (true, 1, Some(1000)));
        assert_eq!(reached(&c, "add-during-partition"), (true, 1, Some(2500)));
        assert_eq!(reached(&c, "replace-of-lagging-node"), (true, 1, Some(3500)));
        assert!(
            !reached(&c, "config-change-during-view-change").0,
            "a primary led every step"
        );
        let electing = run(vec![
            log(4000, "n2", "view-change"),
            step(5000, "n3", "add", "add", "ok", 1500),
        ]);
        assert_eq!(
            reached(&electing, "config-change-during-view-change"),
            (true, 1, Some(5000))
        );
    }

    #[test]
    fn given_membership_steps_that_did_nothing_or_hit_a_backup_should_not_reach_the_membership_states() {
        let c = run(vec![
            step(1000, "n1", "remove", "remove", "skipped", 0),
            step(1100, "n1", "remove", "remove", "fail", 50),
            step(1200, "n2", "remove", "remove", "ok", 50),
            step(1300, "n4", "add", "add", "ok", 50),
            step(1400, "n3", "replace", "remove", "ok", 50),
        ]);
        for state in [
            "member-removed-while-primary",
            "add-during-partition",
            "replace-of-lagging-node",
        ] {
            assert!(!reached(&c, state).0, "{state}");
        }
    }

    #[test]
    fn given_the_primary_killed_while_a_backup_lagged_should_reach_primary_killed_while_backup_lagged() {
        let c = run(vec![status(1000, "n3", "backup", true), kill(2000, "n1", 1)]);
        assert_eq!(reached(&c, "primary-killed-while-backup-lagged"), (true, 1, Some(2000)));
    }

    #[test]
    fn given_a_backup_killed_or_a_lagging_node_down_or_a_failed_kill_should_not_reach_primary_killed() {
        let backup_killed = run(vec![status(1000, "n3", "backup", true), kill(2000, "n2", 1)]);
        let lagger_down = run(vec![
            status(1000, "n3", "backup", true),
            kill(1500, "n3", 1),
            kill(2000, "n1", 2),
        ]);
        let mut failed = kill(2000, "n1", 1);
        failed.value["error"] = json!("no such process");
        let failed = run(vec![status(1000, "n3", "backup", true), failed]);
        for c in [backup_killed, lagger_down, failed] {
            assert!(!reached(&c, "primary-killed-while-backup-lagged").0);
        }
    }

    #[test]
    fn given_a_view_change_while_a_node_repairs_should_reach_view_change_while_repairing() {
        let c = run(vec![log(1000, "n3", "repairing"), log(3000, "n2", "view-change")]);
        assert_eq!(reached(&c, "view-change-while-repairing"), (true, 1, Some(3000)));
        let lost_primary = run(vec![log(1000, "n3", "repairing"), kill(2000, "n1", 1)]);
        assert_eq!(
            reached(&lost_primary, "view-change-while-repairing"),
            (true, 1, Some(2000))
        );
    }

    #[test]
    fn given_a_view_change_after_the_repair_ended_or_expired_should_not_reach_view_change_while_repairing() {
        let repaired = run(vec![
            log(1000, "n3", "repairing"),
            log(2000, "n3", "repaired"),
            log(3000, "n2", "view-change"),
        ]);
        let expired = run(vec![log(1000, "n3", "repairing"), log(6500, "n2", "view-change")]);
        let repairer_down = run(vec![
            log(1000, "n3", "repairing"),
            kill(2000, "n3", 1),
            log(3000, "n2", "view-change"),
        ]);
        for c in [repaired, expired, repairer_down] {
            assert!(!reached(&c, "view-change-while-repairing").0);
        }
    }

    #[test]
    fn given_a_boot_while_the_cluster_has_no_primary_should_reach_restart_during_view_change() {
        let c = run(vec![
            kill(1000, "n2", 1),
            kill(2000, "n1", 2),
            restart(2500, "n2"),
            boot_ok(3000, "n2"),
        ]);
        assert_eq!(reached(&c, "restart-during-view-change"), (true, 1, Some(3000)));
        // A primary is still reported, but a view change began 1 s before the boot and no primary has reported since.
        let c = run(vec![
            kill(1000, "n2", 1),
            log(2000, "n3", "view-change"),
            restart(2500, "n2"),
            boot_ok(3000, "n2"),
        ]);
        assert_eq!(reached(&c, "restart-during-view-change"), (true, 1, Some(3000)));
    }

    #[test]
    fn given_a_boot_with_a_primary_or_after_the_fault_phase_should_not_reach_restart_during_view_change() {
        let with_primary = run(vec![kill(1000, "n2", 1), restart(2500, "n2"), boot_ok(3000, "n2")]);
        let view_change_settled = run(vec![
            kill(1000, "n2", 1),
            log(2000, "n3", "view-change"),
            status(2200, "n3", "primary", false),
            restart(2500, "n2"),
            boot_ok(3000, "n2"),
        ]);
        let after_faults = run(vec![
            kill(1000, "n1", 1),
            at(1500, Lifecycle::FaultPhaseEnd, None, json!({})),
            restart(2500, "n1"),
            boot_ok(3000, "n1"),
        ]);
        for c in [with_primary, view_change_settled, after_faults] {
            assert!(!reached(&c, "restart-during-view-change").0);
        }
    }

    #[test]
    fn given_two_of_three_nodes_down_in_the_fault_phase_should_reach_majority_down_once_per_entry() {
        let c = run(vec![
            kill(1000, "n1", 1),
            at(1100, Lifecycle::Crashed, Some("n2"), json!({})),
            restart(1200, "n2"),
            kill(1300, "n3", 2),
        ]);
        assert_eq!(reached(&c, "majority-down"), (true, 2, Some(1100)));
    }

    #[test]
    fn given_one_node_down_or_a_majority_down_after_the_fault_phase_should_not_reach_majority_down() {
        let one = run(vec![kill(1000, "n1", 1), restart(1100, "n1"), kill(1200, "n2", 2)]);
        let final_phase = run(vec![
            at(900, Lifecycle::FaultPhaseEnd, None, json!({})),
            at(1000, Lifecycle::Kill, Some("n1"), json!({"pid": 1})),
            at(1000, Lifecycle::Kill, Some("n2"), json!({"pid": 2})),
        ]);
        for c in [one, final_phase] {
            assert!(!reached(&c, "majority-down").0);
        }
    }

    fn in_view(ms: u64, node: &str, role: &str, view: u64) -> Event {
        at(ms, Observation::Status, Some(node), json!({"role": role, "view": view}))
    }

    #[test]
    fn given_a_cut_off_primary_and_a_new_primary_in_a_later_view_should_reach_two_primaries_once_per_entry() {
        let c = run(vec![
            in_view(1000, "n1", "primary", 1),
            in_view(2000, "n2", "primary", 2),
            in_view(2500, "n3", "backup", 2),
            // n1 hears of view 2: one primary again; later n2 is stale and n3 leads view 3.
            in_view(3000, "n1", "backup", 2),
            in_view(4000, "n3", "primary", 3),
        ]);
        assert_eq!(reached(&c, "two-primaries"), (true, 2, Some(2000)));
    }

    #[test]
    fn given_a_primary_killed_before_the_next_one_or_two_primaries_after_the_fault_phase_should_not_reach_two_primaries(
    ) {
        let killed = run(vec![kill(1000, "n1", 1), in_view(2000, "n2", "primary", 2)]);
        let same_view = run(vec![in_view(1000, "n2", "primary", 1)]);
        let final_phase = run(vec![
            at(900, Lifecycle::FaultPhaseEnd, None, json!({})),
            in_view(1000, "n2", "primary", 2),
        ]);
        for c in [killed, same_view, final_phase] {
            assert!(!reached(&c, "two-primaries").0);
        }
    }

    #[test]
    fn given_one_power_loss_fault_on_every_node_should_reach_all_lost_power() {
        let c = run(vec![
            power_loss(1000, "n1", 7),
            power_loss(1000, "n2", 7),
            power_loss(1001, "n3", 7),
        ]);
        assert_eq!(reached(&c, "all-lost-power"), (true, 1, Some(1001)));
    }

    #[test]
    fn given_the_final_phase_power_loss_of_every_node_should_reach_all_lost_power() {
        let mut rest = vec![
            at(900, Lifecycle::FaultPhaseEnd, None, json!({})),
            at(1000, Lifecycle::RestartAll, None, json!({})),
        ];
        for node in ["n1", "n2", "n3"] {
            rest.push(at(1000, Lifecycle::Kill, Some(node), json!({"pid": 1})));
        }
        for node in ["n1", "n2", "n3"] {
            rest.push(at(
                1010,
                Nemesis::PowerLoss,
                Some(node),
                json!({"source": "restart-all", "lost": {}}),
            ));
        }
        assert_eq!(reached(&run(rest), "all-lost-power"), (true, 1, Some(1010)));
    }

    #[test]
    fn given_power_losses_of_different_faults_or_one_failed_should_not_reach_all_lost_power() {
        let split = run(vec![
            power_loss(1000, "n1", 7),
            power_loss(1000, "n2", 7),
            power_loss(1001, "n3", 8),
        ]);
        let mut failed = power_loss(1001, "n3", 7);
        failed.value["error"] = json!("kill failed");
        let failed = run(vec![power_loss(1000, "n1", 7), power_loss(1000, "n2", 7), failed]);
        for c in [split, failed] {
            assert!(!reached(&c, "all-lost-power").0);
        }
    }

    #[test]
    fn given_a_refused_node_wiped_and_booted_should_reach_refused_wiped_rejoined() {
        let c = run(vec![
            at(1000, Lifecycle::BootRefused, Some("n2"), json!({"line": "refusing"})),
            at(1100, Lifecycle::Wipe, Some("n2"), json!({})),
            at(1200, Lifecycle::Start, Some("n2"), json!({"pid": 3})),
            boot_ok(1300, "n2"),
        ]);
        assert_eq!(reached(&c, "refused-wiped-rejoined"), (true, 1, Some(1300)));
    }

    #[test]
    fn given_a_refused_node_booted_without_a_wipe_should_not_reach_refused_wiped_rejoined() {
        let c = run(vec![
            at(1000, Lifecycle::BootRefused, Some("n2"), json!({"line": "refusing"})),
            at(1100, Lifecycle::Wipe, Some("n3"), json!({})),
            boot_ok(1300, "n2"),
        ]);
        assert!(!reached(&c, "refused-wiped-rejoined").0);
    }

    #[test]
    fn given_trigger_events_when_covered_should_count_fired_declined_and_skipped_per_trigger() {
        let trigger = |ms, index, extra: Value| {
            let mut value = json!({"trigger": index, "condition": "lagging", "subject": "n2", "action": "kill",
                "delay_ms": 0});
            if let (Some(value), Value::Object(extra)) = (value.as_object_mut(), extra) {
                value.extend(extra);
            }
            at(ms, Nemesis::Trigger, Some("n2"), value)
        };
        let c = run(vec![
            trigger(1000, 1, json!({"fault_id": 9})),
            trigger(1100, 0, json!({"declined": true})),
            trigger(1200, 1, json!({"skipped": "node already down"})),
            trigger(1300, 1, json!({"fault_id": 10})),
        ]);
        let rows: Vec<(u64, &str, &str, u64, u64, u64)> = c
            .triggers
            .iter()
            .map(|t| {
                (
                    t.trigger,
                    t.condition.as_str(),
                    t.action.as_str(),
                    t.fired,
                    t.declined,
                    t.skipped,
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![(0, "lagging", "kill", 0, 1, 0), (1, "lagging", "kill", 2, 0, 1)]
        );
        assert!(run(vec![]).triggers.is_empty());
    }

    #[test]
    fn given_skipped_faults_when_covered_should_list_each_with_when_and_why() {
        let coverage = run(vec![
            at(
                1500,
                Nemesis::FaultSkipped,
                None,
                json!({"fault_id": 3, "family": "network", "shape": "isolate-primary",
                       "reason": "isolate-primary: no primary known"}),
            ),
            at(
                2500,
                Nemesis::FaultSkipped,
                None,
                json!({"fault_id": 1, "family": "process", "kind": "kill", "target": "primary",
                       "reason": "primary: no primary known"}),
            ),
        ]);
        let shown: Vec<(Option<u64>, &str, u64, &str)> = coverage
            .skipped
            .iter()
            .map(|s| (s.fault_id, s.fault.as_str(), s.at_ms, s.reason.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    Some(3),
                    "partition isolate-primary",
                    1500,
                    "isolate-primary: no primary known"
                ),
                (Some(1), "kill primary", 2500, "primary: no primary known"),
            ]
        );
    }

    #[test]
    fn given_a_coverage_when_serialized_should_round_trip() {
        let c = run(vec![status(1000, "n3", "backup", true), kill(2000, "n1", 1)]);
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Coverage>(&text).unwrap(), c);
    }

    #[test]
    fn given_clock_faults_on_the_primary_and_on_a_backup_that_then_leads_should_reach_primary_clock_moved_twice() {
        let clock = |ms: u64, node: &str, id: u64| at(ms, Nemesis::Clock, Some(node), json!({"fault_id": id}));
        let c = run(vec![
            clock(1000, "n1", 1),                                             // the primary: counts
            clock(1100, "n2", 2),                                             // a backup: not yet
            at(1500, Nemesis::ClockHeal, Some("n2"), json!({"fault_id": 2})), // healed before it leads
            clock(2000, "n3", 3),
            status(2500, "n3", "primary", false), // led under its moved clock: counts
            status(2600, "n2", "primary", false), // healed: does not
        ]);
        assert_eq!(reached(&c, "primary-clock-moved"), (true, 2, Some(1000)));
    }

    #[test]
    fn given_graceful_stops_and_live_cuts_when_covered_should_count_each_op_and_a_damaged_node_that_led() {
        let surgery = |ms, node, op: &str, fault_id: Option<u64>| {
            let mut value = json!({"surgery": {"op": op}});
            if let Some(id) = fault_id {
                value["fault_id"] = json!(id);
            }
            at(ms, Nemesis::DiskSurgery, Some(node), value)
        };
        let coverage = run(vec![
            at(200, Nemesis::Stop, Some("n2"), json!({"fault_id": 0, "killed": false})),
            at(300, Nemesis::Start, Some("n2"), json!({"fault_id": 0})),
            at(400, Nemesis::Stop, Some("n3"), json!({"fault_id": 1, "killed": true})),
            at(500, Nemesis::Start, Some("n3"), json!({"fault_id": 1})),
            at(
                600,
                Nemesis::Corrupt,
                Some("n2"),
                json!({"fault_id": 2, "stop": "kill"}),
            ),
            surgery(600, "n2", "truncate-tail", Some(2)),
            surgery(600, "n2", "snapshot-chunk", Some(2)),
            at(
                700,
                Nemesis::DiskSurgery,
                Some("n2"),
                json!({"fault_id": 2, "error": "no file"}),
            ),
            at(800, Nemesis::Start, Some("n2"), json!({"fault_id": 2})),
            status(900, "n3", "primary", false),
            status(1000, "n2", "primary", false),
            status(1100, "n2", "primary", false),
            surgery(1200, "n1", "flip-bits", None), // the final phase's: not live
        ]);
        assert_eq!(
            reached(&coverage, "graceful-stop"),
            (true, 1, Some(200)),
            "only the stop within its grace"
        );
        assert_eq!(reached(&coverage, "cut-truncate-tail"), (true, 1, Some(600)));
        assert_eq!(reached(&coverage, "cut-snapshot-chunk"), (true, 1, Some(600)));
        assert_eq!(
            reached(&coverage, "cut-flip-bits"),
            (false, 0, None),
            "the final phase's cut is not live"
        );
        assert_eq!(
            reached(&coverage, "damaged-node-led"),
            (true, 1, Some(1000)),
            "once per cut"
        );
    }

    /// etcd's 64 MB segment holding 20 KiB: a misdirected chunk written at 32 MiB is never read, and a chunk written
    /// back over the same bytes changes nothing; neither reaches `cut-restore-chunk`, a write inside the data does.
    #[test]
    fn given_restored_chunks_that_no_reader_sees_when_covered_should_not_count_them() {
        let restore = |ms, offset: u64, before: &str| {
            let surgery = json!({"op": "misdirect-chunk", "offset": offset, "length": 4096, "extent_bytes": 20480,
                                 "before_xxh3": before, "after_xxh3": "5eed"});
            at(
                ms,
                Nemesis::DiskSurgery,
                Some("n3"),
                json!({"fault_id": 4, "surgery": surgery}),
            )
        };
        let unread = run(vec![restore(100, 32 << 20, "0000"), restore(200, 8192, "5eed")]);
        assert_eq!(reached(&unread, "cut-restore-chunk"), (false, 0, None));
        assert_eq!(reached(&unread, "damaged-node-led"), (false, 0, None));
        let read = run(vec![restore(300, 8192, "0ld0")]);
        assert_eq!(reached(&read, "cut-restore-chunk"), (true, 1, Some(300)));
    }

    #[test]
    fn given_a_rolling_fault_when_covered_should_count_a_rolling_restart_once_every_node_was_ready_again() {
        let step = |ms, name: Nemesis, node: &str, step: u64, extra: Value| {
            let mut value = json!({"fault_id": 4, "target": "each", "rolling": {"step": step, "of": 3}});
            if let (Some(value), Value::Object(extra)) = (value.as_object_mut(), extra) {
                value.extend(extra);
            }
            at(ms, name, Some(node), value)
        };
        let mut events = Vec::new();
        for (i, node) in ["n1", "n2", "n3"].into_iter().enumerate() {
            let (t, n) = (1000 + 1000 * i as u64, i as u64 + 1);
            events.push(step(t, Nemesis::PowerLoss, node, n, json!({})));
            events.push(step(t + 500, Nemesis::Start, node, n, json!({})));
            events.push(step(t + 700, Nemesis::RollingReady, node, n, json!({"waited_ms": 200})));
        }
        let coverage = run(events.clone());
        assert_eq!(reached(&coverage, "rolling-restart"), (true, 1, Some(3700)));
        assert_eq!(
            reached(&coverage, "all-lost-power"),
            (false, 0, None),
            "one node at a time is not every node at once"
        );
        assert_eq!(reached(&coverage, "majority-down"), (false, 0, None));
        // A node that was not ready again within the bound: the fault did not roll through the cluster.
        events[8] = step(3700, Nemesis::RollingReady, "n3", 3, json!({"error": "not ready"}));
        assert_eq!(reached(&run(events), "rolling-restart"), (false, 0, None));
    }
}
