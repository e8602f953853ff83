//! Exact replay: the faults a run recorded in its history, and the scripted plan that applies them again.
//!
//! A seed fixes a plan's fault *schedule*, but a rerun of the seed regenerates it on a cluster whose timing differs:
//! roles resolve to other nodes, triggers see other states. Replay does not regenerate anything. It reads what the
//! history says was done (every fault that took effect, with its nodes, links, grudge, I/O rules and measured
//! length) and turns it into a scripted plan:
//!
//! - a fault of the timed schedule starts at its recorded offset from the start of the fault phase
//!   (`nemesis.process.script`, `nemesis.network.script`, `nemesis.io`);
//! - a fault a trigger fired is **anchored** to what fired it: a one-shot trigger with the same condition, pinned to
//!   the recorded subject (`{restarted: n2}`, `{log: {pattern: ..., node: n3}}`), counting only within a window
//!   around the recorded observation, after the recorded delay. On a slower or faster machine it still follows the
//!   event it followed ("1.2 s after n2 became ready"). If the observation does not come inside its window, the
//!   trigger's `otherwise` ([`latest_start_ms`]: the window's end plus the delay) applies the fault anyway, about the
//!   recorded subject, so one lost observation does not lose every fault that waited for the states after it. A
//!   fault recorded as such a fallback (`otherwise: true`) replays at its recorded offset;
//! - a timed kill, pause or power loss of a node within [`RESTART_ANCHOR_MS`] of that node becoming ready again
//!   is anchored too: it follows the restart (`{restarted: n2}` + the recorded gap), since how long a restart takes
//!   is what varies most between runs;
//! - every replayed cut takes over (`takeover: true`): it replaces the partition in force when it starts, as the
//!   recorded one did, instead of being skipped because an earlier partition, later in the replay than in the
//!   recording, is still in force.
//!
//! Targets: a role the plan wrote (`primary`, `backup`, `next-primary`, `subject`, `not-subject`) is intent and stays
//! a role; a random pick (`one`, `minority`, a flap's node) was the seed's accident and becomes the nodes it hit.
//! Partitions become the exact links they cut.
//!
//! The same list is what `faultline shrink` minimizes.

use crate::plan::Plan;
use faultline_faults::fusefs::FsFaults;
use faultline_faults::network::grudge::{Grudge, Link};
use faultline_faults::network::link_fault::LinkFault;
use faultline_faults::process::{kind_name, node_name, parse_node_name, FaultDetail, ProcessFault};
use faultline_faults::trigger::{Condition, NodeFilter};
use faultline_faults::units::Millis;
use faultline_workloads::history::{Event, History, Lifecycle, Meta, Nemesis};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

mod script;
mod tries;
pub use script::{latest_start_ms, scripted_plan, slack_ms};
pub use tries::{replay_tries, ReplayOdds, ReplayTry};

/// An anchored fault's trigger counts its condition within this much of the recorded observation (at least), so a
/// replay that runs a little faster or slower still finds it, and an earlier or later occurrence does not fire it.
const ANCHOR_SLACK_MS: u64 = 2000;

/// What a recorded fault does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Action {
    /// kill -9, pause, power loss, graceful stop or corruption of nodes.
    Process {
        /// What it does.
        kind: ProcessFault,
        /// A role, or named nodes.
        targets: String,
        /// A stop's grace, a corruption's way down and cuts.
        #[serde(default, skip_serializing_if = "FaultDetail::is_empty")]
        detail: FaultDetail,
    },
    /// These directed links stop delivering (a partition).
    Cut {
        /// The cut links.
        links: Vec<Link>,
        /// It replaced the partition in force (a `takeover` trigger).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        takeover: bool,
    },
    /// A link fault (delay, loss, reset ...).
    Link {
        /// What happens.
        fault: LinkFault,
        /// On which links.
        links: Vec<Link>,
    },
    /// I/O faults on nodes' fault filesystems.
    Io {
        /// The nodes (0-based).
        nodes: Vec<usize>,
        /// The rules.
        faults: FsFaults,
    },
}

/// A timed process fault on a node this soon after that node became ready again is anchored to the restart: a
/// restart's length varies from run to run (a node replaying a longer WAL boots later), so the offset alone would
/// move the fault to before or long after it.
const RESTART_ANCHOR_MS: u64 = 2000;

/// What a fault followed, as the replay looks for it again: the observation that fired a trigger, or the restart a
/// timed fault came right after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    /// The trigger's index in the recorded plan (none: a timed fault anchored to a restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<u64>,
    /// Its condition, pinned to the recorded subject.
    pub condition: Condition,
    /// When the condition was observed (offset from the start of the fault phase).
    pub observed_ms: u64,
    /// The drawn delay from observation to fault.
    pub delay_ms: u64,
}

/// One fault a run applied, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedFault {
    /// When it started, from the start of the fault phase.
    pub start_ms: u64,
    /// How long it held.
    pub duration_ms: u64,
    /// What it did.
    pub action: Action,
    /// The observation it followed, for a fault a trigger fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
}

impl fmt::Display for RecordedFault {
    /// `kill [n2] at 3.2s for 1.5s`, `cut n1->n2, n3->n2 at 8s for 2s (after restarted n2 + 300ms)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.action {
            Action::Process { kind, targets, .. } => format!("{} {targets}", kind_name(*kind)),
            Action::Cut { links, takeover } => format!(
                "cut {}{}",
                links_text(links),
                if *takeover {
                    " (replacing the partition in force)"
                } else {
                    ""
                }
            ),
            Action::Link { fault, links } => format!("link {} on {}", link_fault_name(fault), links_text(links)),
            Action::Io { nodes, .. } => format!(
                "io faults on {}",
                nodes.iter().map(|&n| node_name(n)).collect::<Vec<_>>().join(", ")
            ),
        };
        write!(
            f,
            "{what} at {} for {}",
            seconds(self.start_ms),
            seconds(self.duration_ms)
        )?;
        if let Some(anchor) = &self.anchor {
            write!(
                f,
                " (after {} + {})",
                condition_text(&anchor.condition),
                seconds(anchor.delay_ms)
            )?;
        }
        Ok(())
    }
}

/// `1.25s`, `300ms`.
pub fn seconds(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", (ms as f64 / 1000.0 * 100.0).round() / 100.0)
    }
}

fn link_fault_name(fault: &LinkFault) -> String {
    serde_json::to_value(fault)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_string))
        .unwrap_or_else(|| "fault".to_string())
}

fn links_text(links: &[Link]) -> String {
    links.iter().map(Link::to_string).collect::<Vec<_>>().join(", ")
}

/// `restarted n2`, `log "repair done" on n3`.
pub fn condition_text(condition: &Condition) -> String {
    match condition {
        Condition::Restarted(f) => format!("restarted {f}"),
        Condition::Lagging(l) => format!("lagging by {} on {}", l.by, l.node),
        Condition::ViewChange(f) => format!("view-change (primary was {f})"),
        Condition::PrimaryChanged(f) => format!("primary-changed to {f}"),
        Condition::StalePrimary(f) => format!("stale-primary {f}"),
        Condition::Repairing(f) => format!("repairing {f}"),
        Condition::Repaired(f) => format!("repaired {f}"),
        Condition::Log(l) => format!("log \"{}\" on {}", l.pattern, l.node),
        Condition::Template(l) => format!("template \"{}\" on {}", l.pattern, l.node),
        Condition::At(at) => format!("at {at}"),
    }
}

/// What a history says was done in its fault phase.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The run's seed.
    pub seed: u64,
    /// The faults in start order.
    pub faults: Vec<RecordedFault>,
    /// How long the fault phase ran.
    pub phase_ms: u64,
    /// When the fault phase started (history time: ns since the run started).
    pub phase_start_ns: u64,
}

/// Reads a run folder's plan and the faults its history recorded.
pub fn load(run_dir: &Path) -> anyhow::Result<(Plan, Recorded)> {
    use anyhow::Context;
    let plan_path = run_dir.join("plan.yaml");
    anyhow::ensure!(
        plan_path.is_file(),
        "{} is not a run folder: it has no plan.yaml (give the folder a run wrote, e.g. store/default/<time>-seed<N>)",
        run_dir.display()
    );
    let plan = Plan::load(&plan_path)?;
    let history = History::read_jsonl(&run_dir.join("history.jsonl")).context("reading the run's history")?;
    let recorded =
        recorded_faults(&plan, &history.events).map_err(|e| anyhow::anyhow!("{}: {e}", run_dir.display()))?;
    Ok((plan, recorded))
}

/// A fault being assembled from its start and stop events.
struct Open {
    start_ns: u64,
    end_ns: Option<u64>,
    action: Action,
    trigger: Option<u64>,
    /// The nodes a process fault hit (a role keeps only its name in `action`).
    hit: Vec<usize>,
    /// A rolling fault's (`targets: each`) time down per node, as scheduled.
    down_ms: Option<u64>,
}

/// The faults of a history's fault phase (from the `schedule` event to `fault-phase-end`), in start order.
pub fn recorded_faults(plan: &Plan, events: &[Event]) -> Result<Recorded, String> {
    let seed = events
        .iter()
        .find(|e| e.is(Meta::RunStart))
        .and_then(|e| e.value["seed"].as_u64())
        .or(plan.seed)
        .ok_or("the history has no run-start line with the seed")?;
    let phase_start = events
        .iter()
        .position(|e| e.is(Meta::Schedule))
        .ok_or("the history has no fault phase (no `schedule` event): the run ended before its cluster was ready")?;
    let start_ns = events[phase_start].time_ns;
    let phase_end_ns = events[phase_start..]
        .iter()
        .find(|e| e.is(Lifecycle::FaultPhaseEnd))
        .or_else(|| events.last())
        .map_or(start_ns, |e| e.time_ns);
    let node_count = plan.system.nodes();
    let mut open: BTreeMap<String, Open> = BTreeMap::new();
    let mut fired: BTreeMap<u64, Value> = BTreeMap::new();
    let mut ready: Vec<(u64, usize)> = Vec::new();
    for event in &events[phase_start..] {
        if event.is(Lifecycle::FaultPhaseEnd) {
            break;
        }
        if event.is(Lifecycle::BootOk) {
            if let Some(node) = event.node.as_deref().and_then(parse_node_name) {
                ready.push((event.time_ns.saturating_sub(start_ns) / 1_000_000, node));
            }
            continue;
        }
        let Some(faultline_workloads::history::Name::Nemesis(name)) = event.name() else {
            continue;
        };
        let value = &event.value;
        let fault_id = value["fault_id"].as_u64();
        let node = event.node.as_deref().and_then(parse_node_name);
        let failed = value.get("error").is_some_and(|e| !e.is_null());
        match name {
            Nemesis::Kill | Nemesis::Pause | Nemesis::PowerLoss | Nemesis::Stop | Nemesis::Corrupt | Nemesis::Clock => {
                let (Some(id), Some(node), false) = (fault_id, node, failed) else {
                    continue;
                };
                let kind = match name {
                    Nemesis::Kill => ProcessFault::Kill,
                    Nemesis::Pause => ProcessFault::Pause,
                    Nemesis::Stop => ProcessFault::Stop,
                    Nemesis::Corrupt => ProcessFault::Corrupt,
                    Nemesis::Clock => ProcessFault::Clock,
                    _ => ProcessFault::PowerLoss,
                };
                let entry = open.entry(format!("p{id}")).or_insert_with(|| Open {
                    start_ns: event.time_ns,
                    end_ns: None,
                    action: Action::Process {
                        kind,
                        targets: String::new(),
                        detail: recorded_detail(kind, value),
                    },
                    trigger: value["trigger"].as_u64(),
                    hit: Vec::new(),
                    down_ms: value["rolling"]["down_ms"].as_u64(),
                });
                entry.hit.push(node);
                // A guided shot's role was the guide's pick for that moment, not the plan's intent: its faults replay
                // on the nodes they hit.
                let shot = shot_trigger(plan, value["trigger"].as_u64());
                if let Action::Process { targets, .. } = &mut entry.action {
                    let role = value["target"].as_str().unwrap_or("");
                    *targets = match role {
                        // `each` is a rolling fault: it replays as one, node after node, each waited for again.
                        "primary" | "backup" | "next-primary" | "subject" | "not-subject" | "other-backup" | "each"
                            if !shot =>
                        {
                            role.to_string()
                        }
                        _ => add_node(targets, node),
                    };
                }
            }
            Nemesis::Membership => note_membership(&mut open, event, fault_id, node),
            Nemesis::Start | Nemesis::Resume | Nemesis::ClockHeal => {
                if let Some(entry) = fault_id.and_then(|id| open.get_mut(&format!("p{id}"))) {
                    entry.end_ns = Some(event.time_ns);
                }
            }
            Nemesis::PartitionStart => {
                let (Some(id), false) = (fault_id, failed) else {
                    continue;
                };
                let grudge: Grudge = serde_json::from_value(value["grudge"].clone())
                    .map_err(|e| format!("history line {}: a partition's grudge: {e}", event.index + 1))?;
                open.insert(
                    format!("n{id}"),
                    Open {
                        start_ns: event.time_ns,
                        end_ns: None,
                        action: Action::Cut {
                            links: grudge.links(),
                            takeover: value.get("replaced").is_some(),
                        },
                        trigger: None,
                        hit: Vec::new(),
                        down_ms: None,
                    },
                );
            }
            Nemesis::LinkFault => {
                let Some(id) = fault_id else {
                    continue;
                };
                let fault: LinkFault = serde_json::from_value(value["fault"].clone())
                    .map_err(|e| format!("history line {}: a link fault: {e}", event.index + 1))?;
                let links: Vec<Link> = serde_json::from_value(value["links"].clone())
                    .map_err(|e| format!("history line {}: a link fault's links: {e}", event.index + 1))?;
                if links.is_empty() {
                    continue;
                }
                open.insert(
                    format!("n{id}"),
                    Open {
                        start_ns: event.time_ns,
                        end_ns: None,
                        action: Action::Link { fault, links },
                        trigger: None,
                        hit: Vec::new(),
                        down_ms: None,
                    },
                );
            }
            Nemesis::PartitionStop | Nemesis::LinkHeal => {
                if let Some(entry) = fault_id.and_then(|id| open.get_mut(&format!("n{id}"))) {
                    entry.end_ns = Some(event.time_ns);
                }
            }
            Nemesis::IoFaultStart => {
                let (Some(node), false) = (node, failed) else {
                    continue;
                };
                let faults: FsFaults = serde_json::from_value(value["faults"].clone())
                    .map_err(|e| format!("history line {}: I/O faults: {e}", event.index + 1))?;
                // A timed window is one node's (`window`); a triggered one may span nodes (`fault_id`).
                let key = match (value["window"].as_u64(), fault_id) {
                    (Some(window), _) => format!("w{window}"),
                    (None, Some(id)) => format!("n{id}"),
                    _ => continue,
                };
                let entry = open.entry(key).or_insert_with(|| Open {
                    start_ns: event.time_ns,
                    end_ns: None,
                    action: Action::Io {
                        nodes: Vec::new(),
                        faults,
                    },
                    trigger: value["trigger"].as_u64(),
                    hit: Vec::new(),
                    down_ms: None,
                });
                if let Action::Io { nodes, .. } = &mut entry.action {
                    nodes.push(node);
                }
            }
            Nemesis::IoFaultStop => {
                let key = match value["window"].as_u64() {
                    Some(window) => Some(format!("w{window}")),
                    // A triggered window's stop names its trigger only: it ends the open one of that trigger.
                    None => value["trigger"].as_u64().and_then(|trigger| {
                        open.iter()
                            .find(|(k, o)| {
                                k.starts_with('n')
                                    && o.end_ns.is_none()
                                    && o.trigger == Some(trigger)
                                    && matches!(o.action, Action::Io { .. })
                            })
                            .map(|(k, _)| k.clone())
                    }),
                };
                if let Some(entry) = key.and_then(|key| open.get_mut(&key)) {
                    entry.end_ns = Some(event.time_ns);
                }
            }
            Nemesis::Trigger => {
                if let (Some(id), None) = (fault_id, value.get("skipped")) {
                    fired.insert(id, value.clone());
                }
            }
            // A skipped fault did nothing: a replay has nothing to do again.
            Nemesis::DiskSurgery | Nemesis::RollingReady | Nemesis::FaultSkipped => {}
        }
    }
    let offset_ms = |ns: u64| ns.saturating_sub(start_ns) / 1_000_000;
    let mut faults: Vec<RecordedFault> = Vec::new();
    for (key, entry) in open {
        if matches!(&entry.action, Action::Process { targets, .. } if targets.is_empty()) {
            continue;
        }
        let start_ms = offset_ms(entry.start_ns);
        let end_ms = offset_ms(entry.end_ns.unwrap_or(phase_end_ns));
        let id: u64 = key[1..].parse().unwrap_or(u64::MAX);
        let fired_by = (!key.starts_with('w')).then(|| fired.get(&id)).flatten();
        let triggered = fired_by.and_then(|value| anchor_of(plan, value, start_ms, node_count));
        // An `at` firing came at its offset, whatever restarted before it: it replays at its offset, never after a
        // restart (a shot's faults start together, and one anchored to a restart would part from the others).
        let at_offset = fired_by.is_some_and(|value| {
            value["trigger"]
                .as_u64()
                .and_then(|t| plan.nemesis.triggers.get(t as usize))
                .is_some_and(|t| matches!(t.value.when, Condition::At(_)))
        });
        // A rolling fault is timed (triggers cannot aim one), and its recorded length is per node.
        let (anchor, duration_ms) = match entry.down_ms {
            Some(down_ms) => (None, down_ms),
            None => (
                triggered.or_else(|| {
                    (!at_offset)
                        .then(|| restart_before(&ready, start_ms, &entry.hit))
                        .flatten()
                }),
                end_ms.saturating_sub(start_ms),
            ),
        };
        faults.push(RecordedFault {
            start_ms,
            duration_ms: duration_ms.max(1),
            action: entry.action,
            anchor,
        });
    }
    faults.sort_by_key(|f| f.start_ms);
    Ok(Recorded {
        seed,
        faults,
        phase_ms: offset_ms(phase_end_ns),
        phase_start_ns: start_ns,
    })
}

/// Whether the plan's trigger `trigger` is a guided campaign's shot.
fn shot_trigger(plan: &Plan, trigger: Option<u64>) -> bool {
    trigger
        .and_then(|t| plan.nemesis.triggers.get(t as usize))
        .is_some_and(|t| t.value.shot.is_some())
}

/// `[n1]` + n3 -> `[n1, n3]`.
fn add_node(targets: &str, node: usize) -> String {
    let mut nodes: Vec<String> = targets
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let name = node_name(node);
    if !nodes.contains(&name) {
        nodes.push(name);
    }
    nodes.sort_by_key(|n| parse_node_name(n));
    format!("[{}]", nodes.join(", "))
}

/// The anchor of a fault trigger `value` (its `trigger` event) fired at `start_ms`: the plan trigger's condition
/// pinned to the recorded subject.
fn anchor_of(plan: &Plan, value: &Value, start_ms: u64, node_count: usize) -> Option<Anchor> {
    if value["otherwise"] == Value::Bool(true) {
        return None; // it followed no observation: it replays at its offset
    }
    let trigger = value["trigger"].as_u64()?;
    let spec = plan.nemesis.triggers.get(trigger as usize)?;
    if matches!(spec.value.when, Condition::At(_)) {
        return None; // it followed no observation either: at its offset, as any timed fault
    }
    let delay_ms = value["delay_ms"].as_u64().unwrap_or(0);
    let latency_ms = value["latency_ms"].as_u64().unwrap_or(0);
    let subject = value["subject"]
        .as_str()
        .and_then(parse_node_name)
        .filter(|&n| n < node_count);
    Some(Anchor {
        trigger: Some(trigger),
        condition: pin(&spec.value.when, subject),
        observed_ms: start_ms.saturating_sub(delay_ms + latency_ms),
        delay_ms,
    })
}

/// The last restart (`ready`: offset, node) of a node the process fault hit (`hit`) at most [`RESTART_ANCHOR_MS`]
/// before `start_ms`, as an anchor. Only a fault on the node that restarted follows its restart: a fault elsewhere
/// anchored to it would be lost whenever the replay does not restart that node in time (and everything anchored
/// to *its* restarts with it), where at its offset it still runs.
fn restart_before(ready: &[(u64, usize)], start_ms: u64, hit: &[usize]) -> Option<Anchor> {
    let &(observed_ms, node) = ready
        .iter()
        .rev()
        .find(|&&(at, node)| at <= start_ms && start_ms - at <= RESTART_ANCHOR_MS && hit.contains(&node))?;
    Some(Anchor {
        trigger: None,
        condition: Condition::Restarted(NodeFilter::Node(node)),
        observed_ms,
        delay_ms: start_ms - observed_ms,
    })
}

/// `condition` about `subject` only.
fn pin(condition: &Condition, subject: Option<usize>) -> Condition {
    let Some(node) = subject else {
        return condition.clone();
    };
    let only = NodeFilter::Node(node);
    match condition {
        Condition::Restarted(_) => Condition::Restarted(only),
        Condition::ViewChange(_) => Condition::ViewChange(only),
        Condition::PrimaryChanged(_) => Condition::PrimaryChanged(only),
        Condition::StalePrimary(_) => Condition::StalePrimary(only),
        Condition::Repairing(_) => Condition::Repairing(only),
        Condition::Repaired(_) => Condition::Repaired(only),
        Condition::Lagging(l) => {
            let mut l = l.clone();
            l.node = only;
            Condition::Lagging(l)
        }
        Condition::Log(l) => {
            let mut l = l.clone();
            l.node = only;
            Condition::Log(l)
        }
        Condition::Template(l) => {
            let mut l = l.clone();
            l.node = only;
            Condition::Template(l)
        }
        Condition::At(at) => Condition::At(*at),
    }
}

/// What a recorded `stop` or `corrupt` start event says the fault carried: the grace it was given, how `corrupt` took
/// the node down, and its cuts as the plan wrote them (empty for the other kinds).
fn recorded_detail(kind: ProcessFault, value: &Value) -> FaultDetail {
    let graceful = kind == ProcessFault::Stop || value["stop"] == "graceful";
    FaultDetail {
        grace: value["grace_ms"].as_u64().filter(|_| graceful).map(Millis),
        stop: serde_json::from_value(value["stop"].clone())
            .ok()
            .filter(|_| kind == ProcessFault::Corrupt),
        cuts: serde_json::from_value(value["cuts"].clone()).unwrap_or_default(),
        clock: serde_json::from_value(value["clock"].clone())
            .ok()
            .filter(|_| kind == ProcessFault::Clock),
        change: serde_json::from_value(value["change"].clone())
            .ok()
            .filter(|_| kind == ProcessFault::Membership),
    }
}

/// A recorded membership step: an `add` or `remove` replays as that change of the node it took, at the offset it
/// began (`duration_ms` before its record); a `replace` as one fault from its remove to its add. A skipped step did
/// nothing, and replays as nothing.
fn note_membership(open: &mut BTreeMap<String, Open>, event: &Event, fault_id: Option<u64>, node: Option<usize>) {
    let value = &event.value;
    let (Some(id), Some(node)) = (fault_id, node) else {
        return;
    };
    if value["outcome"] == "skipped" {
        return;
    }
    let begun_ns = event
        .time_ns
        .saturating_sub(value["duration_ms"].as_u64().unwrap_or(0) * 1_000_000);
    let replace = value["change"] == "replace";
    if replace && value["step"] == "add" {
        if let Some(entry) = open.get_mut(&format!("p{id}")) {
            entry.end_ns = Some(begun_ns);
        }
        return;
    }
    let entry = open.entry(format!("p{id}")).or_insert_with(|| Open {
        start_ns: begun_ns,
        end_ns: (!replace).then_some(begun_ns),
        action: Action::Process {
            kind: ProcessFault::Membership,
            targets: add_node("", node),
            detail: recorded_detail(ProcessFault::Membership, value),
        },
        trigger: value["trigger"].as_u64(),
        hit: Vec::new(),
        down_ms: None,
    });
    entry.hit.push(node);
}

#[cfg(test)]
mod tests;
