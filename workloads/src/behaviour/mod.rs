//! Behaviours: what the system under test did in a run, as a set of small, stable facts, computed from the stored
//! run alone (its history and its nodes' logs), so `faultline analyze DIR` recomputes them, and a guided campaign
//! can tell a run that did something no earlier run did from one that repeated what is known.
//!
//! # Why black-box, and which facts
//!
//! Greybox fuzzers measure coverage inside the program (AFL's edge hit counts; Mallory, "Greybox Fuzzing of
//! Distributed Systems", CCS 2023, instruments the nodes to summarise their events into happens-before graphs).
//! faultline tests systems it did not build and cannot instrument, so it abstracts what every run already records:
//! each node's log lines, the status the observer saw, every fault, every client outcome. The measurement this
//! starts from (issue 50) is that single log templates saturate at once: the reference node logs 21–35 distinct
//! masked line templates per run, and ten runs of two plans found 34 in all, most in the first. The signal is in
//! their combinations with the faults in force, with the cluster's state and with each other, so a behaviour is one
//! of these facts ([`BehaviourKind`]):
//!
//! - `template`: a log line template, alone ([`lines`]: numbers, hex, ids, paths, durations, node names and
//!   timestamps masked by the same masking triage keys failure classes on; stable across runs and machines);
//! - `context-line`: a template logged in a fault context by a node in an abstract status ([`cluster`]), e.g.
//!   `kill@primary+link-reset@some | up:backup+lag | view change started old_view=N new_view=N new_primary=N`;
//! - `transition`: a change of the abstract cluster state in a fault context, e.g.
//!   `partition:isolate-primary | up:backup up:backup up:primary -> up:backup+part up:primary+cut up:primary+part`;
//! - `pair`: template A on one node, then template B on another node within [`PAIR_WINDOW_NS`]: a simplified
//!   happens-before edge between nodes (Mallory's summaries, without instrumentation: a message's cause and effect
//!   land within a window far more often than apart);
//! - `outcome`: a client operation's outcome in a fault context (`partition:isolate-primary | cas info: timeout`);
//! - `finding`: a failure class a check found (added by the run's analysis, [`RunBehaviours::add_finding`]): the
//!   rarest behaviour of all, so a guided search learns from verdicts too.
//!
//! Values never enter a behaviour (ops, views, commit points, node names, fault ids, durations): the space over
//! values never saturates, and a state that is new only in a number is not new. What the abstraction keeps is what a
//! consensus bug depends on: who is down, paused or cut off, who leads and who lags, which fault hit which role.
//!
//! # Identity and bounds
//!
//! A behaviour's id is the xxh3-64 of its kind and text, so the same fact has the same id in every run, shard and
//! machine, and a campaign unites runs' behaviours by id. A run keeps at most [`BEHAVIOURS_PER_RUN_MAX`] distinct
//! behaviours, in a budget per kind ([`kind_budget`]: half for `pair`, the rest shared out among the others; findings
//! are never dropped), so a chatty system's pairs cannot crowd out its transitions and contexts. Past its budget, a
//! kind keeps the behaviours with the smallest ids (a bottom-k sample of the hash, as in KMV sketches), not the first
//! seen: the first-seen rule kept an etcd run's first 70% and dropped the end of its fault phase, where runs differ
//! most, and the hash sample is consistent (a pair with a small id is kept in every run that shows it, so campaigns
//! that unite runs count the same sample of the space). A run past a budget says how many it dropped. A log line
//! pairs with at most [`RECENT_LINES_MAX`] recent lines. Extraction is one pass over the history merged with the
//! time-ordered log lines: linear in both, with memory bounded by the budgets (and 8 bytes per distinct id seen).

pub mod cluster;
pub mod lines;

use crate::history::{Event, History};
use crate::logmask::mask_line;
use cluster::Cluster;
use lines::TimedLine;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BinaryHeap, HashSet, VecDeque};
use std::fmt;

/// Distinct behaviours a run keeps, findings aside (the sum of [`kind_budget`]); the rest are counted in
/// [`RunBehaviours::dropped`].
pub const BEHAVIOURS_PER_RUN_MAX: usize = 4096;

/// Distinct behaviours of `kind` a run keeps at most. Measured (issue 50, 40 runs each): a `reference-mixed` run
/// shows about 230 context lines, 370 pairs, 140 outcomes, 75 transitions and 31 templates, under every budget; an
/// `etcd-mixed` run shows about 4,900 pairs, which the budget samples, and about 150 templates, 540 context lines,
/// 65 outcomes and 50 transitions, under theirs.
pub const fn kind_budget(kind: BehaviourKind) -> usize {
    match kind {
        BehaviourKind::Pair => 2048,
        BehaviourKind::ContextLine => 1024,
        BehaviourKind::Transition => 512,
        BehaviourKind::Outcome => 256,
        BehaviourKind::Template => 256,
        BehaviourKind::Finding => usize::MAX,
    }
}
/// Two lines on different nodes at most this far apart make a `pair`.
pub const PAIR_WINDOW_NS: u64 = 500_000_000;
/// Recent lines a new line pairs with, at most (a burst of chatter does not make pairing quadratic).
pub const RECENT_LINES_MAX: usize = 64;
/// Characters of a client error kept in an `outcome` (after masking).
const ERROR_CHARS_MAX: usize = 80;
/// The format of `behaviours.json`.
pub const BEHAVIOURS_VERSION: u32 = 1;

/// What kind of fact a behaviour is (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BehaviourKind {
    /// A log line template alone.
    Template,
    /// A template in a fault context, by a node in an abstract status.
    ContextLine,
    /// An abstract cluster state change in a fault context.
    Transition,
    /// Template A on one node, then template B on another within the pair window.
    Pair,
    /// A client outcome in a fault context.
    Outcome,
    /// A failure class a check found.
    Finding,
}

impl BehaviourKind {
    /// Every kind, in the order summaries list them.
    pub const ALL: [BehaviourKind; 6] = [
        BehaviourKind::Template,
        BehaviourKind::ContextLine,
        BehaviourKind::Transition,
        BehaviourKind::Pair,
        BehaviourKind::Outcome,
        BehaviourKind::Finding,
    ];

    /// The kind's name as `behaviours.json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            BehaviourKind::Template => "template",
            BehaviourKind::ContextLine => "context-line",
            BehaviourKind::Transition => "transition",
            BehaviourKind::Pair => "pair",
            BehaviourKind::Outcome => "outcome",
            BehaviourKind::Finding => "finding",
        }
    }
}

/// A behaviour's stable id: xxh3-64 of its kind and text, written as 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BehaviourId(pub u64);

impl BehaviourId {
    /// The id of the behaviour of `kind` with `text`.
    pub fn of(kind: BehaviourKind, text: &str) -> BehaviourId {
        let mut bytes = Vec::with_capacity(text.len() + 16);
        bytes.extend_from_slice(kind.as_str().as_bytes());
        bytes.push(0x1f);
        bytes.extend_from_slice(text.as_bytes());
        BehaviourId(xxhash_rust::xxh3::xxh3_64(&bytes))
    }
}

impl fmt::Display for BehaviourId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl std::str::FromStr for BehaviourId {
    type Err = String;

    fn from_str(text: &str) -> Result<BehaviourId, String> {
        if text.len() != 16 {
            return Err(format!("behaviour id `{text}` is not 16 hex digits"));
        }
        u64::from_str_radix(text, 16)
            .map(BehaviourId)
            .map_err(|_| format!("behaviour id `{text}` is not 16 hex digits"))
    }
}

impl Serialize for BehaviourId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for BehaviourId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// One behaviour of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behaviour {
    /// Its stable id.
    pub id: BehaviourId,
    /// Its kind.
    pub kind: BehaviourKind,
    /// What it is, for people (its id is the hash of kind and text).
    pub text: String,
    /// When the run first showed it, ms since the run started.
    pub first_ms: u64,
}

impl Behaviour {
    /// The fault context it happened in (`kill@primary+partition:one-way`, `calm`, `final`), for the kinds that have
    /// one (`context-line`, `transition`, `outcome`): their text starts with it.
    pub fn context(&self) -> Option<&str> {
        match self.kind {
            BehaviourKind::ContextLine | BehaviourKind::Transition | BehaviourKind::Outcome => {
                self.text.split(" | ").next()
            }
            _ => None,
        }
    }
}

/// A run's behaviours: `behaviours.json` in its store folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunBehaviours {
    /// [`BEHAVIOURS_VERSION`].
    pub version: u32,
    /// Distinct behaviours, first seen first, within each kind's budget ([`kind_budget`]).
    pub behaviours: Vec<Behaviour>,
    /// Distinct behaviours past their kind's budget, not kept.
    pub dropped: u64,
    /// How each log template was used in the run ([`TemplateUse`]), at most [`TEMPLATE_USES_MAX`] templates (the
    /// first logged): what a guided campaign anchors its shots to.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub template_uses: BTreeMap<String, TemplateUse>,
}

/// How a run used one log template: how many lines of it its nodes logged, and how many of those came at most
/// [`MARK_WINDOW_NS`] before the node that logged it changed its abstract status (its role, lag, view standing or
/// reach, as the next status observation told it; not its first status after a restart, which is the observer
/// learning its role). A template most of whose lines come right before a status
/// change marks a state change (`view change started`, `became primary`); one logged on every operation is chatter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateUse {
    /// Lines of it.
    pub lines: u64,
    /// Of them, those right before their node's status changed.
    pub marks: u64,
}

/// A line this long before its node's status changed marks the change ([`TemplateUse`]): the status probe's period
/// (100 ms for the reference node and etcd) plus the time a change takes to show in the probe's answer.
pub const MARK_WINDOW_NS: u64 = 300_000_000;
/// Templates a run's [`RunBehaviours::template_uses`] keeps.
pub const TEMPLATE_USES_MAX: usize = 512;

/// A run's behaviours in numbers: `behaviours` in `results.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BehaviourSummary {
    /// Distinct behaviours kept.
    pub distinct: u64,
    /// Distinct behaviours by kind name.
    pub by_kind: BTreeMap<String, u64>,
    /// Distinct behaviours past their kind's budget.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
    /// What the run showed that its campaign had not, when it ran in a campaign that records behaviours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub novelty: Option<Novelty>,
}

/// What a run of a campaign showed first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Novelty {
    /// The campaign id.
    pub campaign: String,
    /// The run's position in the campaign (0-based, in the order runs finished).
    pub run: u64,
    /// Behaviours no earlier run of the campaign showed.
    pub new: u64,
    /// New behaviours by kind name.
    pub new_by_kind: BTreeMap<String, u64>,
    /// The new templates as text (at most [`NEW_TEMPLATES_SHOWN_MAX`]).
    pub new_templates: Vec<String>,
}

/// New templates a run's novelty lists as text.
pub const NEW_TEMPLATES_SHOWN_MAX: usize = 50;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Collects a run's distinct behaviours within each kind's budget.
#[derive(Debug, Default)]
struct Collector {
    seen: HashSet<BehaviourId>,
    /// Per kind, the kept behaviours as a max-heap on id (the bottom-k sample), each with its arrival number.
    kept: BTreeMap<BehaviourKind, BinaryHeap<Kept>>,
    arrivals: u64,
    dropped: u64,
}

/// A kept behaviour, ordered by id for the bottom-k heap.
#[derive(Debug)]
struct Kept {
    arrival: u64,
    behaviour: Behaviour,
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.behaviour.id == other.behaviour.id
    }
}
impl Eq for Kept {}
impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Kept {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.behaviour.id.cmp(&other.behaviour.id)
    }
}

impl Collector {
    /// Adds a behaviour seen at `time_ns` unless the run has it already. Past its kind's budget it replaces the kept
    /// behaviour with the largest id when its own id is smaller; either way one is dropped and counted.
    fn add(&mut self, kind: BehaviourKind, text: String, time_ns: u64) {
        let id = BehaviourId::of(kind, &text);
        if !self.seen.insert(id) {
            return;
        }
        let heap = self.kept.entry(kind).or_default();
        if heap.len() >= kind_budget(kind) {
            self.dropped += 1;
            if heap.peek().is_some_and(|max| max.behaviour.id <= id) {
                return;
            }
            heap.pop();
        }
        self.arrivals += 1;
        heap.push(Kept {
            arrival: self.arrivals,
            behaviour: Behaviour {
                id,
                kind,
                text,
                first_ms: time_ns / 1_000_000,
            },
        });
    }

    /// The kept behaviours, first seen first.
    fn finish(self, template_uses: BTreeMap<String, TemplateUse>) -> RunBehaviours {
        let mut kept: Vec<Kept> = self.kept.into_values().flat_map(BinaryHeap::into_vec).collect();
        kept.sort_by_key(|k| k.arrival);
        RunBehaviours {
            version: BEHAVIOURS_VERSION,
            behaviours: kept.into_iter().map(|k| k.behaviour).collect(),
            dropped: self.dropped,
            template_uses,
        }
    }
}

impl RunBehaviours {
    /// Adds a failure class a check found, by its key text, unless the run has it already. Findings are kept past
    /// the bound: a run has few, and they are what a search most needs to see.
    pub fn add_finding(&mut self, key: &str, time_ns: u64) {
        let id = BehaviourId::of(BehaviourKind::Finding, key);
        if self.behaviours.iter().any(|b| b.id == id) {
            return;
        }
        self.behaviours.push(Behaviour {
            id,
            kind: BehaviourKind::Finding,
            text: key.to_string(),
            first_ms: time_ns / 1_000_000,
        });
    }

    /// The ids of the kept behaviours.
    pub fn ids(&self) -> impl Iterator<Item = BehaviourId> + '_ {
        self.behaviours.iter().map(|b| b.id)
    }

    /// Counts by kind.
    pub fn summary(&self) -> BehaviourSummary {
        let mut by_kind = BTreeMap::new();
        for behaviour in &self.behaviours {
            *by_kind.entry(behaviour.kind.as_str().to_string()).or_insert(0) += 1;
        }
        BehaviourSummary {
            distinct: self.behaviours.len() as u64,
            by_kind,
            dropped: self.dropped,
            novelty: None,
        }
    }

    /// What of this run is not in `seen` (a campaign's behaviours before it): the new behaviours in run order.
    pub fn new_against<'a>(&'a self, seen: &'a HashSet<BehaviourId>) -> impl Iterator<Item = &'a Behaviour> + 'a {
        self.behaviours.iter().filter(move |b| !seen.contains(&b.id))
    }
}

/// The behaviours of a run: its history walked in order, each node log line merged in at its time.
pub fn behaviours(history: &History, node_logs: &BTreeMap<String, String>) -> RunBehaviours {
    let offset = crate::nodelog::anchor_offset_ns(history);
    let lines = lines::timed_lines(node_logs, offset);
    let mut walk = Walk {
        cluster: Cluster::new(),
        state: String::new(),
        recent: VecDeque::new(),
        found: Collector::default(),
        uses: BTreeMap::new(),
        of_node: BTreeMap::new(),
    };
    let mut lines = lines.iter().peekable();
    for event in &history.events {
        while let Some(line) = lines.next_if(|l| l.time_ns <= event.time_ns) {
            walk.line(line);
        }
        walk.event(event);
    }
    for line in lines {
        walk.line(line);
    }
    walk.found.finish(walk.uses)
}

/// The walk's state: the abstract cluster, its last state, the recent lines for pairs, what was found.
struct Walk {
    cluster: Cluster,
    state: String,
    recent: VecDeque<TimedLine>,
    found: Collector,
    uses: BTreeMap<String, TemplateUse>,
    /// Per node, its lines of the last [`MARK_WINDOW_NS`] (time, template), not yet counted as marks.
    of_node: BTreeMap<String, VecDeque<(u64, String)>>,
}

impl Walk {
    fn event(&mut self, event: &Event) {
        if matches!(
            event.kind,
            crate::EventKind::Ok | crate::EventKind::Fail | crate::EventKind::Info
        ) {
            let outcome = match (&event.error, event.kind) {
                (Some(error), kind) => {
                    let error: String = mask_line(error).chars().take(ERROR_CHARS_MAX).collect();
                    format!("{} {}: {error}", event.f, kind_name(kind))
                }
                (None, kind) => format!("{} {}", event.f, kind_name(kind)),
            };
            let text = format!("{} | {outcome}", self.cluster.context());
            self.found.add(BehaviourKind::Outcome, text, event.time_ns);
            return;
        }
        if event.kind == crate::EventKind::Invoke {
            return;
        }
        let observed = event
            .node
            .as_ref()
            .filter(|_| event.is(crate::history::Observation::Status));
        let before = observed.map(|node| self.cluster.node_status(node));
        self.cluster.apply(event);
        // A node's first status after it (re)started is the observer learning its role, not a change of it: its boot
        // lines would otherwise mark every restart.
        if let (Some(node), Some(before)) = (observed, before.filter(|b| !b.contains(":unknown"))) {
            if self.cluster.node_status(node) != before {
                self.mark(node, event.time_ns);
            }
        }
        let state = self.cluster.state();
        if state != self.state {
            if !self.state.is_empty() {
                let text = format!("{} | {} -> {state}", self.cluster.context(), self.state);
                self.found.add(BehaviourKind::Transition, text, event.time_ns);
            }
            self.state = state;
        }
    }

    /// The lines `node` logged in the [`MARK_WINDOW_NS`] before its status changed at `time_ns` mark that change
    /// (each line once).
    fn mark(&mut self, node: &str, time_ns: u64) {
        let Some(lines) = self.of_node.get_mut(node) else {
            return;
        };
        for (at, template) in lines.drain(..) {
            if time_ns.saturating_sub(at) <= MARK_WINDOW_NS {
                if let Some(used) = self.uses.get_mut(&template) {
                    used.marks += 1;
                }
            }
        }
    }

    fn line(&mut self, line: &TimedLine) {
        let t = line.time_ns;
        if self.uses.len() < TEMPLATE_USES_MAX || self.uses.contains_key(&line.template) {
            self.uses.entry(line.template.clone()).or_default().lines += 1;
        }
        let mine = self.of_node.entry(line.node.clone()).or_default();
        while mine
            .front()
            .is_some_and(|(at, _)| t.saturating_sub(*at) > MARK_WINDOW_NS)
        {
            mine.pop_front();
        }
        if mine.len() >= RECENT_LINES_MAX {
            mine.pop_front(); // the lines right before a change are the ones that mark it
        }
        mine.push_back((t, line.template.clone()));
        self.found.add(BehaviourKind::Template, line.template.clone(), t);
        let text = format!(
            "{} | {} | {}",
            self.cluster.context(),
            self.cluster.node_status(&line.node),
            line.template
        );
        self.found.add(BehaviourKind::ContextLine, text, t);
        while self
            .recent
            .front()
            .is_some_and(|r| t.saturating_sub(r.time_ns) > PAIR_WINDOW_NS)
        {
            self.recent.pop_front();
        }
        let pairs: Vec<String> = self
            .recent
            .iter()
            .filter(|r| r.node != line.node)
            .map(|r| format!("{} => {}", r.template, line.template))
            .collect();
        for pair in pairs {
            self.found.add(BehaviourKind::Pair, pair, t);
        }
        if self.recent.len() >= RECENT_LINES_MAX {
            self.recent.pop_front();
        }
        self.recent.push_back(line.clone());
    }
}

fn kind_name(kind: crate::EventKind) -> &'static str {
    match kind {
        crate::EventKind::Ok => "ok",
        crate::EventKind::Fail => "fail",
        _ => "info",
    }
}

#[cfg(test)]
mod tests;
