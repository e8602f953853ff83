//! Triggers: faults that react to what the cluster is doing, not to the clock.
//!
//! A plan's `nemesis.triggers` pairs a **condition** on the observed cluster with a **fault**:
//!
//! ```yaml
//! nemesis:
//!   triggers:
//!     - when: {restarted: any}            # a node just became ready again
//!       after: 0ms..800ms                 # drawn per firing from the seed
//!       probability: 0.5
//!       do: {kind: kill, targets: primary, duration: 1s..3s}
//!     - when: {lagging: {by: 5, number: op}}
//!       do: {kind: partition, shape: isolate-primary, duration: 2s..4s}
//!     - when: {log: "view change started"}
//!       do: {kind: kill, targets: subject, duration: 1s..2s}
//! ```
//!
//! The harness feeds the engine [`Fact`]s while the fault phase runs: every status probe of every node (about every
//! 100 ms), a node becoming ready or going down, and every new line of every node's log (with the names of the
//! adapter's patterns it matches). Conditions, each with the node it is about (its *subject*):
//!
//! - `restarted: any|nX`: a node became ready again (the subject);
//! - `lagging: {by: N, number?: NAME, node?: any|nX}`: an up node's progress number (default: the adapter's durable
//!   number) fell at least N behind the highest fresh one; fires when it starts lagging (the subject);
//! - `view-change: any|nX`: no up node reports itself primary any more (the subject: the primary that was);
//! - `primary-changed: any|nX`: a different node is now primary (the subject: the new one); the primary is the node
//!   that claims it in the newest view reported;
//! - `stale-primary: any|nX`: a node still claims to be primary in an older view than another claimant: it was cut
//!   off (or paused) while the others elected a new primary (the subject: the stale one). It may hold a longer log of
//!   ops it never committed, the state in which a view change that compares log lengths loses data;
//! - `repairing: any|nX`: a node logged the adapter's `repairing` pattern (the subject);
//! - `repaired: any|nX`: a node logged the adapter's `repaired` pattern: it caught up (the subject);
//! - `log: REGEX` or `log: {pattern: REGEX, node: nX}`: a node logged a matching line (the subject).
//!
//! A status older than [`FRESH`] does not count (a paused node answers nothing, so a paused primary is no primary).
//!
//! A firing is **recorded** as a `nemesis` `trigger` event (condition, subject, drawn delay, the latency from the
//! observation to the fault, the fault id, or why it was skipped), and the fault's own events carry
//! `source: triggered` and the trigger's index. **Limits** keep a run making progress: a trigger waits `cooldown`
//! (default 2 s) after it fired or declined (not after a skip), fires at most `max_fires` times (default 10), has at most one firing
//! pending, never fires inside the plan's process stable windows, and its fault ends by the next stable window and
//! by the end of the phase. Triggered faults share the timed schedule's holds ([`NodeHolds`], [`NetworkHolds`]): a
//! kill of a node another fault holds is skipped, one partition is in force at a time. A partition trigger with
//! `takeover: true` replaces the partition in force instead of being skipped (the old grudge is lifted and the new
//! one applied in one step): "the partition moves onto the new primary", so the node it had cut off rejoins just as
//! the one that replaced it is cut off, and neither hears the other first.
//!
//! Determinism: each trigger draws from its own seeded stream (`trigger-<i>`), so the same observations give the
//! same firings; real processes make the observations themselves vary from run to run.

use crate::fusefs::FsFaults;
use crate::io::IoLab;
use crate::network::grudge::Link;
use crate::network::link_fault::{BackendKind, LinkFault};
use crate::network::schedule::{
    resolve_links, LinkTarget, NetworkAction, NetworkFaults, NetworkHolds, NetworkLab, ScheduledNetworkFault,
};
use crate::network::shape::{isolate, Shape};
use crate::network::Network;
use crate::process::{
    node_name, parse_node_name, resolve_static, Lab, NodeHolds, ProcessFault, ProcessFaults, Resolved, ScheduledFault,
    Source, StableSpec, Target,
};
use crate::units::{Millis, MillisRange};
use faultline_workloads::history::Nemesis;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};
use std::fmt;
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

/// A status older than this is not evidence of anything (the node may be paused or cut off).
pub const FRESH: Duration = Duration::from_secs(1);
/// Triggered faults get ids from here up, apart from the timed schedule's.
pub const TRIGGER_FAULT_ID_BASE: u64 = 1_000_000;
const DEFAULT_COOLDOWN_MS: u64 = 2000;
const DEFAULT_MAX_FIRES: u32 = 10;

/// One trigger of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    /// The condition.
    pub when: Condition,
    /// Delay from the observation to the fault, drawn per firing (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<MillisRange>,
    /// Chance that a firing acts (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// At most this many faults from this trigger per run (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_fires: Option<u32>,
    /// Quiet time after a firing (acted or declined) before the next (default 2 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<Millis>,
    /// The condition counts only when observed at or after this offset of the fault phase (a replayed fault's
    /// anchor: "the first restart of n2 after 4 s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<Millis>,
    /// The condition counts only when observed before this offset of the fault phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Millis>,
    /// If the trigger has not applied a fault by this offset of the fault phase, it applies one then anyway, about
    /// the node its condition names (a replayed fault whose observation did not come: the fault still happens, late,
    /// rather than not at all). A firing that was skipped (its target down) has not applied one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otherwise: Option<Millis>,
    /// The fault.
    #[serde(rename = "do")]
    pub action: TriggeredFaultSpec,
}

/// Which nodes a condition is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeFilter {
    /// Any node.
    #[default]
    Any,
    /// This node (0-based).
    Node(usize),
}

impl NodeFilter {
    fn admits(self, node: usize) -> bool {
        match self {
            NodeFilter::Any => true,
            NodeFilter::Node(n) => n == node,
        }
    }
}

impl fmt::Display for NodeFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeFilter::Any => f.write_str("any"),
            NodeFilter::Node(n) => f.write_str(&node_name(*n)),
        }
    }
}

impl Serialize for NodeFilter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NodeFilter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "any" => Ok(NodeFilter::Any),
            name => parse_node_name(name).map(NodeFilter::Node).ok_or_else(|| {
                serde::de::Error::custom(format!("`{name}` is neither `any` nor a node name (n1, n2, ...)"))
            }),
        }
    }
}

/// `lagging: {by, number?, node?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaggingSpec {
    /// How far behind the highest fresh value.
    pub by: u64,
    /// Which progress number (`op`, `commit`, ...; default: the adapter's durable number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<String>,
    /// Which nodes may be the lagging one.
    #[serde(default)]
    pub node: NodeFilter,
}

/// `log: REGEX` or `log: {pattern: REGEX, node: nX}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogCondition {
    /// The regular expression a line must match.
    pub pattern: String,
    /// Whose log.
    pub node: NodeFilter,
}

impl<'de> Deserialize<'de> for LogCondition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Pattern(String),
            Full {
                pattern: String,
                #[serde(default)]
                node: NodeFilter,
            },
        }
        Ok(match Form::deserialize(d)? {
            Form::Pattern(pattern) => LogCondition {
                pattern,
                node: NodeFilter::Any,
            },
            Form::Full { pattern, node } => LogCondition { pattern, node },
        })
    }
}

/// What a trigger waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Condition {
    /// A node became ready again.
    Restarted(NodeFilter),
    /// A node fell behind.
    Lagging(LaggingSpec),
    /// The cluster lost its primary.
    ViewChange(NodeFilter),
    /// A different node became primary.
    PrimaryChanged(NodeFilter),
    /// A node claims to be primary in an older view than another claimant (the stale one).
    StalePrimary(NodeFilter),
    /// A node logged the adapter's `repairing` pattern.
    Repairing(NodeFilter),
    /// A node logged the adapter's `repaired` pattern.
    Repaired(NodeFilter),
    /// A node logged a matching line.
    Log(LogCondition),
}

impl Condition {
    /// The one node it is about, if it names one.
    pub fn node(&self) -> Option<usize> {
        let filter = match self {
            Condition::Restarted(f)
            | Condition::ViewChange(f)
            | Condition::PrimaryChanged(f)
            | Condition::StalePrimary(f)
            | Condition::Repairing(f)
            | Condition::Repaired(f) => *f,
            Condition::Lagging(lagging) => lagging.node,
            Condition::Log(log) => log.node,
        };
        match filter {
            NodeFilter::Node(node) => Some(node),
            NodeFilter::Any => None,
        }
    }

    /// Its name, as recorded.
    pub fn name(&self) -> &'static str {
        match self {
            Condition::Restarted(_) => "restarted",
            Condition::Lagging(_) => "lagging",
            Condition::ViewChange(_) => "view-change",
            Condition::PrimaryChanged(_) => "primary-changed",
            Condition::StalePrimary(_) => "stale-primary",
            Condition::Repairing(_) => "repairing",
            Condition::Repaired(_) => "repaired",
            Condition::Log(_) => "log",
        }
    }
}

/// What kind of fault a trigger does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriggeredKind {
    /// kill -9, restarted when it ends.
    Kill,
    /// SIGSTOP, SIGCONT when it ends.
    Pause,
    /// Kill and drop what was not fsynced (fault filesystem).
    PowerLoss,
    /// A network partition.
    Partition,
    /// A link fault (delay, loss, ...).
    Link,
    /// I/O faults on the fault filesystem.
    Io,
}

impl TriggeredKind {
    /// Its name, as plans write it.
    pub fn name(self) -> &'static str {
        match self {
            TriggeredKind::Kill => "kill",
            TriggeredKind::Pause => "pause",
            TriggeredKind::PowerLoss => "power-loss",
            TriggeredKind::Partition => "partition",
            TriggeredKind::Link => "link",
            TriggeredKind::Io => "io",
        }
    }
}

/// Who a triggered process or I/O fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TriggerTarget {
    /// The condition's subject.
    Subject,
    /// Every node but the subject.
    NotSubject,
    /// A target as in the timed schedule (roles resolved when the fault starts).
    Target(Target),
}

impl fmt::Display for TriggerTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TriggerTarget::Subject => f.write_str("subject"),
            TriggerTarget::NotSubject => f.write_str("not-subject"),
            TriggerTarget::Target(target) => target.fmt(f),
        }
    }
}

impl Serialize for TriggerTarget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TriggerTarget::Target(target) => target.serialize(s),
            other => s.collect_str(other),
        }
    }
}

impl<'de> Deserialize<'de> for TriggerTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Name(String),
            Nodes(Vec<String>),
        }
        match Form::deserialize(d)? {
            Form::Name(name) => match name.as_str() {
                "subject" => Ok(TriggerTarget::Subject),
                "not-subject" => Ok(TriggerTarget::NotSubject),
                role => Target::parse_role(role)
                    .map(TriggerTarget::Target)
                    .map_err(|e| serde::de::Error::custom(format!("{e}, subject, not-subject"))),
            },
            Form::Nodes(names) => {
                if let Some(bad) = names.iter().find(|n| parse_node_name(n).is_none()) {
                    return Err(serde::de::Error::custom(format!(
                        "`{bad}` is not a node name: nodes are named n1, n2, ... nN"
                    )));
                }
                if names.is_empty() {
                    return Err(serde::de::Error::custom("an empty node list targets nothing"));
                }
                Ok(TriggerTarget::Target(Target::Nodes(names)))
            }
        }
    }
}

/// The partition a trigger cuts: a shape of the timed schedule, or `isolate-subject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerShape {
    /// Cut the subject off from everyone.
    IsolateSubject,
    /// A shape (drawn when the trigger fires; `isolate-primary` resolved then).
    Shape(Shape),
}

impl Serialize for TriggerShape {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TriggerShape::IsolateSubject => s.serialize_str("isolate-subject"),
            TriggerShape::Shape(shape) => shape.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TriggerShape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text == "isolate-subject" {
            return Ok(TriggerShape::IsolateSubject);
        }
        let shape: Shape = serde_json::from_value(Value::from(text.clone())).map_err(|_| {
            serde::de::Error::custom(format!(
                "unknown shape `{text}`: expected isolate-subject, random-halves, isolate-one, isolate-primary, \
                 majorities-ring, bridge or one-way"
            ))
        })?;
        Ok(TriggerShape::Shape(shape))
    }
}

/// Which links a triggered link fault hits: the subject's or the primary's (both ways), or a link target of the timed
/// schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TriggerLinks {
    /// Every link to and from the subject.
    Subject,
    /// Every link to and from the primary when the fault starts (e.g. the new primary, when a stale one is the
    /// subject).
    Primary,
    /// As in the timed schedule.
    Links(LinkTarget),
}

impl Serialize for TriggerLinks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TriggerLinks::Subject => s.serialize_str("subject"),
            TriggerLinks::Primary => s.serialize_str("primary"),
            TriggerLinks::Links(links) => links.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TriggerLinks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        if value == "subject" {
            return Ok(TriggerLinks::Subject);
        }
        if value == "primary" {
            return Ok(TriggerLinks::Primary);
        }
        serde_json::from_value(value)
            .map(TriggerLinks::Links)
            .map_err(|e| serde::de::Error::custom(format!("{e} (or `subject`, `primary`)")))
    }
}

/// The fault a trigger does. Which fields apply depends on `kind`: `targets` for kill, pause, power-loss and io;
/// `shape` for partition; `fault` and `links` for link; `faults` for io.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggeredFaultSpec {
    /// What it does.
    pub kind: TriggeredKind,
    /// Who it hits (process and I/O faults; default `subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<TriggerTarget>,
    /// The partition (kind `partition`): a shape ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<TriggerShape>,
    /// ... or exactly these directed links cut (`[n1->n2, n3->n2]`: n2 hears neither), as a replay records them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut: Vec<Link>,
    /// A partition in force (timed or triggered) is replaced by this one in the same step, instead of this one being
    /// skipped (kind `partition`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub takeover: bool,
    /// The link fault (kind `link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<LinkFault>,
    /// Its links (kind `link`; default `subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<TriggerLinks>,
    /// The I/O faults (kind `io`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FsFaults>,
    /// How long it lasts.
    pub duration: MillisRange,
}

impl TriggeredFaultSpec {
    /// Whether whom it hits depends on the subject of the observation.
    pub fn about_subject(&self) -> bool {
        match self.kind {
            TriggeredKind::Kill | TriggeredKind::Pause | TriggeredKind::PowerLoss | TriggeredKind::Io => matches!(
                self.targets,
                None | Some(TriggerTarget::Subject) | Some(TriggerTarget::NotSubject)
            ),
            TriggeredKind::Partition => self.cut.is_empty() && self.shape == Some(TriggerShape::IsolateSubject),
            TriggeredKind::Link => matches!(self.links, None | Some(TriggerLinks::Subject)),
        }
    }
}

/// What the harness can do that a trigger's validation depends on.
#[derive(Debug, Clone, Copy)]
pub struct TriggerCapabilities {
    /// Nodes in the cluster.
    pub node_count: usize,
    /// The network backends the plan may run on (link faults must work on each), or none (no network faults).
    pub backends: &'static [BackendKind],
    /// Whether the fault filesystem is mounted (power loss and I/O faults need it).
    pub fault_fs: bool,
    /// Whether the system can tell its primary (role targets, `view-change`, `primary-changed`).
    pub primary_probe: bool,
    /// Whether the system reports a durable progress number (`lagging` without `number`).
    pub durable_progress: bool,
    /// Whether the adapter names a `repairing` log pattern.
    pub repairing_pattern: bool,
    /// Whether the adapter names a `repaired` log pattern.
    pub repaired_pattern: bool,
}

impl TriggerSpec {
    /// Checks the trigger against the cluster it will run on; the message names the field.
    pub fn validate(&self, caps: &TriggerCapabilities) -> Result<(), String> {
        let n = caps.node_count;
        let node_ok = |filter: NodeFilter| match filter {
            NodeFilter::Node(node) if node >= n => Err(format!(
                "`{}` is not a node of this {n}-node cluster (n1..n{n})",
                node_name(node)
            )),
            _ => Ok(()),
        };
        match &self.when {
            Condition::Restarted(filter) | Condition::Repairing(filter) | Condition::Repaired(filter) => {
                node_ok(*filter)?
            }
            Condition::ViewChange(filter) | Condition::PrimaryChanged(filter) | Condition::StalePrimary(filter) => {
                node_ok(*filter)?;
                if !caps.primary_probe {
                    return Err(format!(
                        "`{}` needs a system that can tell its primary (a status probe with a role)",
                        self.when.name()
                    ));
                }
            }
            Condition::Lagging(lagging) => {
                node_ok(lagging.node)?;
                if lagging.by == 0 {
                    return Err("`lagging.by` must be at least 1".into());
                }
                if lagging.number.is_none() && !caps.durable_progress {
                    return Err(
                        "`lagging` needs `number: NAME` (a progress number of the status) on a system \
                                whose adapter reports no durable progress"
                            .into(),
                    );
                }
            }
            Condition::Log(log) => {
                node_ok(log.node)?;
                regex::Regex::new(&log.pattern).map_err(|e| format!("`log` pattern does not compile: {e}"))?;
            }
        }
        if matches!(self.when, Condition::Repairing(_)) && !caps.repairing_pattern {
            return Err("`repairing` needs an adapter that names a repairing log pattern; use `log: REGEX`".into());
        }
        if matches!(self.when, Condition::Repaired(_)) && !caps.repaired_pattern {
            return Err("`repaired` needs an adapter that names a repaired log pattern; use `log: REGEX`".into());
        }
        if let Some(p) = self.probability {
            if !(p > 0.0 && p <= 1.0) {
                return Err(format!("`probability` must be in (0, 1], not {p}"));
            }
        }
        if self.max_fires == Some(0) {
            return Err("`max_fires: 0` never fires; remove the trigger instead".into());
        }
        if let (Some(from), Some(until)) = (self.not_before, self.not_after) {
            if from.0 >= until.0 {
                return Err(format!(
                    "`not_before: {}ms` is not before `not_after: {}ms`: the trigger could never fire",
                    from.0, until.0
                ));
            }
        }
        if let Some(otherwise) = self.otherwise {
            if let Some(from) = self.not_before.filter(|from| otherwise.0 < from.0) {
                return Err(format!(
                    "`otherwise: {}ms` is before `not_before: {}ms`: the fault would come before the trigger watches",
                    otherwise.0, from.0
                ));
            }
            if self.action.about_subject() && self.when.node().is_none() {
                return Err(format!(
                    "`otherwise` fires without an observation, so a `{}` fault about the subject needs a condition \
                     about one node (e.g. `{{{}: n2}}`)",
                    self.action.kind.name(),
                    self.when.name()
                ));
            }
        }
        let action = &self.action;
        let kind = action.kind.name();
        let only = |present: bool, field: &str, kinds: &str| {
            if present {
                Err(format!("`{field}` is for {kinds}, not a `{kind}` trigger"))
            } else {
                Ok(())
            }
        };
        let process_like = matches!(
            action.kind,
            TriggeredKind::Kill | TriggeredKind::Pause | TriggeredKind::PowerLoss | TriggeredKind::Io
        );
        only(
            action.targets.is_some() && !process_like,
            "targets",
            "kill, pause, power-loss and io",
        )?;
        only(
            action.shape.is_some() && action.kind != TriggeredKind::Partition,
            "shape",
            "partition",
        )?;
        only(
            !action.cut.is_empty() && action.kind != TriggeredKind::Partition,
            "cut",
            "partition",
        )?;
        only(
            action.takeover && action.kind != TriggeredKind::Partition,
            "takeover",
            "partition",
        )?;
        only(
            (action.fault.is_some() || action.links.is_some()) && action.kind != TriggeredKind::Link,
            "fault` / `links",
            "link",
        )?;
        only(
            action.faults.is_some() && action.kind != TriggeredKind::Io,
            "faults",
            "io",
        )?;
        if let Some(TriggerTarget::Target(target)) = &action.targets {
            if let Target::Nodes(names) = target {
                if let Some(bad) = names.iter().find(|name| parse_node_name(name).is_none_or(|i| i >= n)) {
                    return Err(format!(
                        "target `{bad}` is not a node of this {n}-node cluster (n1..n{n})"
                    ));
                }
            }
            if matches!(target, Target::Primary | Target::Backup | Target::NextPrimary) && !caps.primary_probe {
                return Err(format!(
                    "target `{target}` needs a system that can tell its primary; target `subject`, `one` or nodes"
                ));
            }
        }
        match action.kind {
            TriggeredKind::PowerLoss | TriggeredKind::Io if !caps.fault_fs => {
                return Err(format!(
                    "a `{kind}` trigger needs the fault filesystem: add `disk: {{fault_fs: true}}`"
                ));
            }
            TriggeredKind::Partition | TriggeredKind::Link if caps.backends.is_empty() => {
                return Err(format!(
                    "a `{kind}` trigger needs a network backend (`network: {{backend: ...}}`)"
                ));
            }
            TriggeredKind::Partition if !action.cut.is_empty() => {
                if action.shape.is_some() {
                    return Err("a `partition` trigger takes `shape` or `cut`, not both".into());
                }
                if let Some(bad) = action.cut.iter().find(|l| l.from >= n || l.to >= n || l.from == l.to) {
                    return Err(format!(
                        "cut link {bad} is not a link between two nodes of this {n}-node cluster"
                    ));
                }
            }
            TriggeredKind::Partition => {
                let shape = action
                    .shape
                    .ok_or("a `partition` trigger needs `shape` (or `cut: [n1->n2, ...]`)")?;
                if let TriggerShape::Shape(shape) = shape {
                    if n < shape.min_nodes() {
                        return Err(format!("shape `{shape}` needs at least {} nodes", shape.min_nodes()));
                    }
                    if shape == Shape::IsolatePrimary && !caps.primary_probe {
                        return Err("shape `isolate-primary` needs a system that can tell its primary".into());
                    }
                }
            }
            TriggeredKind::Link => {
                let fault = action
                    .fault
                    .as_ref()
                    .ok_or("a `link` trigger needs `fault` (e.g. {kind: delay, ...})")?;
                fault.validate()?;
                for backend in caps.backends {
                    backend.check(fault.kind())?;
                }
                if let Some(TriggerLinks::Links(LinkTarget::Links(links))) = &action.links {
                    if let Some(bad) = links.iter().find(|l| l.from >= n || l.to >= n) {
                        return Err(format!("link {bad} is outside the cluster of {n} nodes"));
                    }
                }
                if action.links == Some(TriggerLinks::Primary) && !caps.primary_probe {
                    return Err("`links: primary` needs a system that can tell its primary".into());
                }
            }
            TriggeredKind::Io => {
                action
                    .faults
                    .as_ref()
                    .ok_or("an `io` trigger needs `faults` (e.g. {eio: [...]})")?
                    .validate()?;
            }
            _ => {}
        }
        if action.duration.max.0 == 0 {
            return Err("a triggered fault needs a duration > 0".into());
        }
        Ok(())
    }
}

/// A node's role as its status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactRole {
    /// Primary (and in normal status).
    Primary,
    /// Backup.
    Backup,
    /// Anything else.
    Other,
}

/// What the harness saw, as the engine needs it.
#[derive(Debug, Clone)]
pub enum Fact {
    /// A status probe answered.
    Status {
        /// Whose.
        node: usize,
        /// When.
        at: Instant,
        /// Its role.
        role: FactRole,
        /// The view (term, epoch) it is in, if the adapter reads one: of two nodes that claim to be primary, the one
        /// in the newer view is the primary (the other is a stale primary cut off from the cluster).
        view: Option<u64>,
        /// The durable number, if the adapter reads one.
        durable: Option<u64>,
        /// Every progress number by name.
        numbers: Vec<(String, u64)>,
    },
    /// A node became ready.
    Ready {
        /// Which.
        node: usize,
        /// When.
        at: Instant,
    },
    /// A node went down (killed, crashed).
    Down {
        /// Which.
        node: usize,
        /// When.
        at: Instant,
    },
    /// A node logged a line.
    Log {
        /// Whose log.
        node: usize,
        /// When the harness read it.
        at: Instant,
        /// The line (ANSI stripped).
        line: String,
        /// The adapter patterns it matched (`repairing`, `view-change`, ...).
        patterns: Vec<&'static str>,
    },
}

/// Of the nodes that claim to be primary (with the view each reports), the one in the newest view; on a tie or
/// without views, the first. Shared with the harness's own `primary` target, so both agree on who leads.
pub fn newest_claimant(claims: impl IntoIterator<Item = (usize, Option<u64>)>) -> Option<usize> {
    claims
        .into_iter()
        .fold(None, |best: Option<(usize, Option<u64>)>, (node, view)| match best {
            Some((_, best_view)) if view <= best_view => best,
            _ => Some((node, view)),
        })
        .map(|(node, _)| node)
}

/// A node's latest status.
#[derive(Debug, Clone)]
struct SeenStatus {
    at: Instant,
    role: FactRole,
    view: Option<u64>,
    durable: Option<u64>,
    numbers: Vec<(String, u64)>,
}

/// What the cluster looked like, as far as the engine knows.
#[derive(Debug, Clone, Default)]
struct NodeModel {
    up: bool,
    /// Latest status.
    status: Option<SeenStatus>,
    /// Per trigger index: whether this node lags by that trigger's measure.
    lagging: Vec<bool>,
}

/// A condition held: which trigger, about whom, seen when.
#[derive(Debug, Clone, Copy)]
struct Held {
    trigger: usize,
    subject: Option<usize>,
    observed: Instant,
}

#[derive(Debug)]
struct Pending {
    due: Instant,
    delay_ms: u64,
    subject: Option<usize>,
    observed: Instant,
    /// Its `otherwise` came without the observation.
    otherwise: bool,
}

struct TriggerState {
    rng: ChaCha8Rng,
    fires: u32,
    /// Its `otherwise` offset has passed (it fired then, or had already applied a fault).
    otherwise_done: bool,
    quiet_until: Option<Instant>,
    pending: Option<Pending>,
    regex: Option<regex::Regex>,
}

enum Active {
    Process(u64),
    Network(u64),
    Io(Vec<usize>, usize),
}

/// The engine of one fault phase.
pub struct Triggers<'a, L> {
    lab: &'a L,
    specs: &'a [TriggerSpec],
    states: Vec<TriggerState>,
    nodes: Vec<NodeModel>,
    /// The primary the cluster had when it last had one, and whether it has one now.
    last_primary: Option<usize>,
    has_primary: bool,
    /// Per node: whether it claimed to be primary beside a newer claimant at the last look.
    stale: Vec<bool>,
    process: ProcessFaults<'a, L>,
    network: Option<NetworkFaults<'a, L>>,
    stable: Option<StableSpec>,
    phase_ms: u64,
    next_id: u64,
    active: Vec<(Instant, Active)>,
    rng: ChaCha8Rng,
    /// When the fault phase began (set by [`Triggers::run`]; `not_before`/`not_after` count from it).
    phase_start: Option<Instant>,
}

impl<'a, L: Lab + NetworkLab + IoLab> Triggers<'a, L> {
    /// The engine for `specs`, sharing holds with the timed schedule.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lab: &'a L,
        specs: &'a [TriggerSpec],
        seed: u64,
        network: Option<&'a Network>,
        holds: (NodeHolds, NetworkHolds),
        stable: Option<StableSpec>,
        phase_ms: u64,
    ) -> Triggers<'a, L> {
        let n = Lab::node_count(lab);
        let states = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| TriggerState {
                rng: crate::rng::stream(seed, &format!("trigger-{i}")),
                fires: 0,
                otherwise_done: false,
                quiet_until: None,
                pending: None,
                regex: match &spec.when {
                    Condition::Log(log) => regex::Regex::new(&log.pattern).ok(),
                    _ => None,
                },
            })
            .collect();
        let model = NodeModel {
            up: true,
            status: None,
            lagging: vec![false; specs.len()],
        };
        Triggers {
            lab,
            specs,
            states,
            nodes: vec![model; n],
            last_primary: None,
            has_primary: false,
            stale: vec![false; n],
            process: ProcessFaults::shared(lab, &[], holds.0),
            network: network.map(|network| NetworkFaults::shared(network, lab, &[], holds.1)),
            stable,
            phase_ms,
            next_id: TRIGGER_FAULT_ID_BASE,
            active: Vec::new(),
            rng: crate::rng::stream(seed, "trigger-targets"),
            phase_start: None,
        }
    }

    /// Watches `facts` and fires until `stop` is set, then heals every triggered fault still active.
    pub async fn run(
        &mut self,
        phase_start: Instant,
        mut stop: watch::Receiver<bool>,
        mut facts: broadcast::Receiver<Fact>,
    ) {
        let mut facts_open = true;
        self.phase_start = Some(phase_start);
        loop {
            let next = self
                .states
                .iter()
                .filter_map(|s| s.pending.as_ref().map(|p| p.due))
                .chain(self.active.iter().map(|(end, _)| *end))
                .chain(self.otherwise_due(phase_start))
                .min();
            let sleep = async {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // As a bool: the guard `wait_for` returns must not live across the awaits of the other arms.
                _ = async { stop.wait_for(|stop| *stop).await.is_ok() } => break,
                fact = facts.recv(), if facts_open => match fact {
                    Ok(fact) => {
                        for held in self.observe(&fact) {
                            self.hold(held);
                        }
                        // A firing without delay acts now, not at the timer's next tick (about a millisecond).
                        let now = Instant::now();
                        if self.states.iter().any(|s| s.pending.as_ref().is_some_and(|p| p.due <= now)) {
                            self.due(phase_start).await;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "the trigger engine fell behind the observations");
                    }
                    Err(broadcast::error::RecvError::Closed) => facts_open = false,
                },
                _ = sleep => self.due(phase_start).await,
            }
        }
        for (_, active) in std::mem::take(&mut self.active) {
            self.end(active).await;
        }
    }

    /// Updates the model with one fact and returns the conditions that now hold.
    fn observe(&mut self, fact: &Fact) -> Vec<Held> {
        let mut held = Vec::new();
        match fact {
            Fact::Ready { node, at } => {
                let model = &mut self.nodes[*node];
                model.up = true;
                model.status = None;
                for (trigger, spec) in self.specs.iter().enumerate() {
                    if matches!(spec.when, Condition::Restarted(filter) if filter.admits(*node)) {
                        held.push(Held {
                            trigger,
                            subject: Some(*node),
                            observed: *at,
                        });
                    }
                }
            }
            Fact::Down { node, .. } => {
                let model = &mut self.nodes[*node];
                model.up = false;
                model.status = None;
                model.lagging.iter_mut().for_each(|l| *l = false);
            }
            Fact::Status {
                node,
                at,
                role,
                view,
                durable,
                numbers,
            } => {
                if self.nodes[*node].up {
                    self.nodes[*node].status = Some(SeenStatus {
                        at: *at,
                        role: *role,
                        view: *view,
                        durable: *durable,
                        numbers: numbers.clone(),
                    });
                }
                held.extend(self.lagging(*at));
            }
            Fact::Log {
                node,
                at,
                line,
                patterns,
            } => {
                for (trigger, spec) in self.specs.iter().enumerate() {
                    let fires = match &spec.when {
                        Condition::Repairing(filter) => filter.admits(*node) && patterns.contains(&"repairing"),
                        Condition::Repaired(filter) => filter.admits(*node) && patterns.contains(&"repaired"),
                        Condition::Log(log) => {
                            log.node.admits(*node)
                                && self.states[trigger].regex.as_ref().is_some_and(|r| r.is_match(line))
                        }
                        _ => false,
                    };
                    if fires {
                        held.push(Held {
                            trigger,
                            subject: Some(*node),
                            observed: *at,
                        });
                    }
                }
            }
        }
        let at = match fact {
            Fact::Status { at, .. } | Fact::Ready { at, .. } | Fact::Down { at, .. } | Fact::Log { at, .. } => *at,
        };
        held.extend(self.primary_transitions(at));
        held
    }

    /// `lagging` conditions: a node that starts lagging by a trigger's measure.
    fn lagging(&mut self, now: Instant) -> Vec<Held> {
        let mut held = Vec::new();
        for (trigger, spec) in self.specs.iter().enumerate() {
            let Condition::Lagging(lagging) = &spec.when else {
                continue;
            };
            let value = |model: &NodeModel| -> Option<u64> {
                let status = model.status.as_ref()?;
                if !model.up || now.saturating_duration_since(status.at) > FRESH {
                    return None;
                }
                match &lagging.number {
                    None => status.durable,
                    Some(name) => status.numbers.iter().find(|(n, _)| n == name).map(|(_, v)| *v),
                }
            };
            let values: Vec<Option<u64>> = self.nodes.iter().map(value).collect();
            let Some(highest) = values.iter().flatten().max().copied() else {
                continue;
            };
            for (node, value) in values.iter().enumerate() {
                let lags = value.is_some_and(|v| v + lagging.by <= highest);
                let was = std::mem::replace(&mut self.nodes[node].lagging[trigger], lags);
                if lags && !was && lagging.node.admits(node) {
                    held.push(Held {
                        trigger,
                        subject: Some(node),
                        observed: now,
                    });
                }
            }
        }
        held
    }

    /// `view-change`, `primary-changed` and `stale-primary` conditions, from the fresh statuses of the up nodes. The
    /// primary is the node that claims it in the newest view: a primary cut off from the others keeps claiming its
    /// old view while they elect a new one, and the new one is the change a trigger waits for.
    fn primary_transitions(&mut self, now: Instant) -> Vec<Held> {
        let claims: Vec<(usize, Option<u64>)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(node, model)| {
                let status = model.status.as_ref().filter(|s| {
                    model.up && s.role == FactRole::Primary && now.saturating_duration_since(s.at) <= FRESH
                })?;
                Some((node, status.view))
            })
            .collect();
        let primary = newest_claimant(claims.iter().copied());
        let mut held = Vec::new();
        let mut push = |want: fn(&Condition) -> Option<NodeFilter>, subject: usize| {
            for (trigger, spec) in self.specs.iter().enumerate() {
                if want(&spec.when).is_some_and(|filter| filter.admits(subject)) {
                    held.push(Held {
                        trigger,
                        subject: Some(subject),
                        observed: now,
                    });
                }
            }
        };
        match (self.has_primary, primary) {
            (true, None) => {
                if let Some(old) = self.last_primary {
                    push(
                        |c| match c {
                            Condition::ViewChange(f) => Some(*f),
                            _ => None,
                        },
                        old,
                    );
                }
            }
            (_, Some(new)) if self.last_primary.is_some_and(|old| old != new) => push(
                |c| match c {
                    Condition::PrimaryChanged(f) => Some(*f),
                    _ => None,
                },
                new,
            ),
            _ => {}
        }
        for node in 0..self.stale.len() {
            let stale = primary.is_some_and(|p| p != node) && claims.iter().any(|(claimant, _)| *claimant == node);
            if stale && !self.stale[node] {
                push(
                    |c| match c {
                        Condition::StalePrimary(f) => Some(*f),
                        _ => None,
                    },
                    node,
                );
            }
            self.stale[node] = stale;
        }
        self.has_primary = primary.is_some();
        if primary.is_some() {
            self.last_primary = primary;
        }
        held
    }

    /// A condition held: unless the trigger is quiet, spent or already pending, draw whether and when it acts.
    fn hold(&mut self, held: Held) {
        let spec = &self.specs[held.trigger];
        let state = &mut self.states[held.trigger];
        let now = held.observed;
        let offset_ms = self
            .phase_start
            .map_or(0, |start| now.saturating_duration_since(start).as_millis() as u64);
        let outside = spec.not_before.is_some_and(|from| offset_ms < from.0)
            || spec.not_after.is_some_and(|until| offset_ms >= until.0);
        if outside
            || state.pending.is_some()
            || state.fires >= spec.max_fires.unwrap_or(DEFAULT_MAX_FIRES)
            || state.quiet_until.is_some_and(|until| now < until)
        {
            return;
        }
        let cooldown = Duration::from_millis(spec.cooldown.map_or(DEFAULT_COOLDOWN_MS, |c| c.0));
        state.quiet_until = Some(now + cooldown);
        if let Some(p) = spec.probability {
            if state.rng.gen::<f64>() >= p {
                let value = json!({
                    "trigger": held.trigger, "condition": spec.when.name(), "subject": held.subject.map(node_name),
                    "action": spec.action.kind.name(), "declined": true,
                });
                self.record(held.subject, value);
                return;
            }
        }
        let delay_ms = spec
            .after
            .map_or(0, |after| state.rng.gen_range(after.min.0..=after.max.0));
        state.pending = Some(Pending {
            due: now + Duration::from_millis(delay_ms),
            delay_ms,
            subject: held.subject,
            observed: held.observed,
            otherwise: false,
        });
    }

    /// When the next `otherwise` comes, of a trigger that has applied no fault and is not about to.
    fn otherwise_due(&self, phase_start: Instant) -> Option<Instant> {
        self.specs
            .iter()
            .zip(&self.states)
            .filter(|(_, state)| !state.otherwise_done && state.fires == 0 && state.pending.is_none())
            .filter_map(|(spec, _)| spec.otherwise.map(|at| phase_start + Duration::from_millis(at.0)))
            .min()
    }

    /// Applies every firing that is due and ends every triggered fault whose time is up.
    async fn due(&mut self, phase_start: Instant) {
        let now = Instant::now();
        for (spec, state) in self.specs.iter().zip(&mut self.states) {
            let Some(at) = spec.otherwise.map(|at| phase_start + Duration::from_millis(at.0)) else {
                continue;
            };
            // A firing still pending decides first: if it is skipped, the fallback comes right after.
            if state.otherwise_done || at > now || state.pending.is_some() {
                continue;
            }
            state.otherwise_done = true;
            if state.fires == 0 {
                state.pending = Some(Pending {
                    due: now,
                    delay_ms: 0,
                    subject: spec.when.node(),
                    observed: now,
                    otherwise: true,
                });
            }
        }
        let (ending, active): (Vec<_>, Vec<_>) = std::mem::take(&mut self.active)
            .into_iter()
            .partition(|(end, _)| *end <= now);
        self.active = active;
        for (_, active) in ending {
            self.end(active).await;
        }
        for trigger in 0..self.specs.len() {
            if self.states[trigger].pending.as_ref().is_some_and(|p| p.due <= now) {
                let pending = self.states[trigger].pending.take().expect("checked");
                self.fire(trigger, pending, phase_start).await;
            }
        }
    }

    /// Applies one firing and records it.
    async fn fire(&mut self, trigger: usize, pending: Pending, phase_start: Instant) {
        let spec = &self.specs[trigger];
        let started = Instant::now();
        let latency_ms = started
            .saturating_duration_since(pending.observed)
            .saturating_sub(Duration::from_millis(pending.delay_ms))
            .as_millis() as u64;
        let mut value = json!({
            "trigger": trigger, "condition": spec.when.name(), "subject": pending.subject.map(node_name),
            "action": spec.action.kind.name(), "delay_ms": pending.delay_ms, "latency_ms": latency_ms,
        });
        if pending.otherwise {
            value["otherwise"] = Value::from(true);
        }
        let phase_at = started.saturating_duration_since(phase_start).as_millis() as u64;
        let outcome = match self.until(phase_at) {
            None => Err("inside a stable window or at the end of the phase".to_string()),
            Some(limit_ms) => {
                let state = &mut self.states[trigger];
                let drawn = state
                    .rng
                    .gen_range(spec.action.duration.min.0..=spec.action.duration.max.0)
                    .max(1);
                let duration_ms = drawn.min(limit_ms.saturating_sub(phase_at)).max(1);
                self.apply(trigger, pending.subject, phase_at, duration_ms)
                    .await
                    .map(|id| (id, duration_ms))
            }
        };
        match outcome {
            Ok((fault_id, duration_ms)) => {
                self.states[trigger].fires += 1;
                value["fault_id"] = json!(fault_id);
                value["duration_ms"] = json!(duration_ms);
                value["applied_ms"] = json!(started.elapsed().as_millis() as u64);
            }
            Err(why) => {
                // Nothing happened, so nothing to recover from: no cooldown (a state that lasts milliseconds, such
                // as a backup that just filled a gap, may hold again right after a skip).
                self.states[trigger].quiet_until = None;
                value["skipped"] = Value::from(why);
            }
        }
        self.record(pending.subject, value);
    }

    /// The phase offset by which a fault starting at `at_ms` must end (the next stable window or the phase end), or
    /// `None` when it may not start at all.
    fn until(&self, at_ms: u64) -> Option<u64> {
        let mut limit = self.phase_ms;
        if let Some(stable) = self.stable.as_ref().filter(|s| s.every.0 > 0 && s.duration.0 > 0) {
            let period_start = at_ms / stable.every.0 * stable.every.0;
            let window = period_start + stable.every.0.saturating_sub(stable.duration.0);
            if at_ms >= window {
                return None;
            }
            limit = limit.min(window);
        }
        (at_ms + 1 < limit).then_some(limit)
    }

    /// Starts the fault of `trigger` about `subject`; returns its fault id, or why nothing was done.
    async fn apply(
        &mut self,
        trigger: usize,
        subject: Option<usize>,
        at_ms: u64,
        duration_ms: u64,
    ) -> Result<u64, String> {
        let spec = &self.specs[trigger].action;
        let n = self.nodes.len();
        let id = self.next_id;
        self.next_id += 1;
        let end = Instant::now() + Duration::from_millis(duration_ms);
        let need_subject = || subject.ok_or_else(|| "the condition named no subject".to_string());
        match spec.kind {
            TriggeredKind::Kill | TriggeredKind::Pause | TriggeredKind::PowerLoss => {
                let target = spec.targets.clone().unwrap_or(TriggerTarget::Subject);
                let nodes = match &target {
                    TriggerTarget::Subject => Resolved::Nodes(vec![need_subject()?]),
                    TriggerTarget::NotSubject => {
                        let subject = need_subject()?;
                        Resolved::Nodes((0..n).filter(|&node| node != subject).collect())
                    }
                    TriggerTarget::Target(target) => resolve_static(target, n, &mut self.rng),
                };
                let fault = ScheduledFault {
                    id,
                    start_ms: at_ms,
                    duration_ms,
                    kind: match spec.kind {
                        TriggeredKind::Kill => ProcessFault::Kill,
                        TriggeredKind::Pause => ProcessFault::Pause,
                        _ => ProcessFault::PowerLoss,
                    },
                    target: target.to_string(),
                    nodes,
                    source: Source::Triggered,
                    trigger: Some(trigger as u64),
                };
                self.process.start_fault(&fault).await;
                if !self.process.holds(id) {
                    return Err("its targets are held by other faults, down, or unknown".into());
                }
                self.active.push((end, Active::Process(id)));
            }
            TriggeredKind::Partition | TriggeredKind::Link => {
                let action = if spec.kind == TriggeredKind::Partition && !spec.cut.is_empty() {
                    let mut grudge = crate::network::grudge::Grudge::none(n);
                    for &link in &spec.cut {
                        grudge.cut(link);
                    }
                    NetworkAction::Partition {
                        shape: Shape::OneWay,
                        grudge: Some(grudge),
                    }
                } else if spec.kind == TriggeredKind::Partition {
                    match spec.shape.expect("validated") {
                        TriggerShape::IsolateSubject => NetworkAction::Partition {
                            shape: Shape::IsolateOne,
                            grudge: Some(isolate(n, need_subject()?)),
                        },
                        TriggerShape::Shape(shape) => NetworkAction::Partition {
                            shape,
                            grudge: shape.draw(n, &mut self.rng),
                        },
                    }
                } else {
                    let node_links = |node: usize| -> Vec<Link> {
                        (0..n)
                            .filter(|&other| other != node)
                            .flat_map(|other| [Link::new(node, other), Link::new(other, node)])
                            .collect()
                    };
                    let links: Vec<Link> = match spec.links.clone().unwrap_or(TriggerLinks::Subject) {
                        TriggerLinks::Subject => node_links(need_subject()?),
                        TriggerLinks::Primary => {
                            let primary = Lab::primary(self.lab).await.ok_or("no node is primary")?;
                            node_links(primary)
                        }
                        TriggerLinks::Links(target) => resolve_links(&target, n, &mut self.rng),
                    };
                    NetworkAction::Link {
                        fault: spec.fault.clone().expect("validated"),
                        links,
                    }
                };
                let Some(network) = self.network.as_mut() else {
                    return Err("the run has no network backend".into());
                };
                let fault = ScheduledNetworkFault {
                    id,
                    start_ms: at_ms,
                    duration_ms,
                    action,
                    takeover: false,
                };
                let started = if spec.takeover {
                    network.take_over_partition(&fault).await
                } else {
                    network.start_fault(&fault).await
                };
                if !started {
                    return Err("another partition is in force, its links are held, or it failed".into());
                }
                self.active.push((end, Active::Network(id)));
            }
            TriggeredKind::Io => {
                let target = spec.targets.clone().unwrap_or(TriggerTarget::Subject);
                let nodes: Vec<usize> = match &target {
                    TriggerTarget::Subject => vec![need_subject()?],
                    TriggerTarget::NotSubject => {
                        let subject = need_subject()?;
                        (0..n).filter(|&node| node != subject).collect()
                    }
                    TriggerTarget::Target(target) => match resolve_static(target, n, &mut self.rng) {
                        Resolved::Nodes(nodes) => nodes,
                        _ => return Err("I/O faults take `subject`, `not-subject`, a random set or named nodes".into()),
                    },
                };
                let faults = spec.faults.clone().expect("validated");
                for &node in &nodes {
                    let mut value = json!({"fault_id": id, "trigger": trigger, "faults": faults});
                    if let Err(e) = self.lab.set_io_faults(node, &faults) {
                        value["error"] = json!(e);
                    }
                    IoLab::record(self.lab, Nemesis::IoFaultStart, node, value);
                }
                self.active.push((end, Active::Io(nodes, trigger)));
            }
        }
        Ok(id)
    }

    async fn end(&mut self, active: Active) {
        match active {
            Active::Process(id) => self.process.end_fault(id).await,
            Active::Network(id) => {
                if let Some(network) = self.network.as_mut() {
                    network.stop_fault(id).await;
                }
            }
            Active::Io(nodes, trigger) => {
                for node in nodes {
                    let mut value = json!({"trigger": trigger});
                    if let Err(e) = self.lab.set_io_faults(node, &FsFaults::default()) {
                        value["error"] = json!(e);
                    }
                    IoLab::record(self.lab, Nemesis::IoFaultStop, node, value);
                    if self.lab.crashed(node) {
                        self.lab.restart(node).await;
                    }
                }
            }
        }
    }

    fn record(&self, subject: Option<usize>, value: Value) {
        match subject {
            Some(node) => Lab::record(self.lab, Nemesis::Trigger, node, value),
            None => NetworkLab::record(self.lab, Nemesis::Trigger, value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records what the engine did: (event name, node, value).
    #[derive(Default)]
    struct FakeLab {
        log: Mutex<Vec<(String, Option<usize>, Value)>>,
    }

    impl FakeLab {
        fn names(&self) -> Vec<String> {
            let log = self.log.lock().unwrap();
            log.iter()
                .map(|(name, node, _)| format!("{name}{}", node.map(node_name).unwrap_or_default()))
                .collect()
        }
        fn triggers(&self) -> Vec<Value> {
            let log = self.log.lock().unwrap();
            log.iter()
                .filter(|(name, ..)| name == "trigger")
                .map(|(.., v)| v.clone())
                .collect()
        }
    }

    impl Lab for FakeLab {
        fn node_count(&self) -> usize {
            3
        }
        async fn primary(&self) -> Option<usize> {
            Some(0)
        }
        async fn next_primary(&self) -> Option<usize> {
            Some(1)
        }
        async fn kill(&self, _: usize) -> Result<Value, String> {
            Ok(json!({}))
        }
        async fn start(&self, _: usize) -> Result<Value, String> {
            Ok(json!({}))
        }
        async fn pause(&self, _: usize) -> Result<Value, String> {
            Ok(json!({}))
        }
        async fn resume(&self, _: usize) -> Result<Value, String> {
            Ok(json!({}))
        }
        async fn lose_unsynced(&self, _: usize) -> Result<Value, String> {
            Ok(json!({}))
        }
        fn record(&self, name: Nemesis, node: usize, value: Value) {
            self.log.lock().unwrap().push((name.to_string(), Some(node), value));
        }
    }

    impl NetworkLab for FakeLab {
        async fn primary(&self) -> Option<usize> {
            Some(0)
        }
        fn record(&self, name: Nemesis, value: Value) {
            self.log.lock().unwrap().push((name.to_string(), None, value));
        }
    }

    impl IoLab for FakeLab {
        fn set_io_faults(&self, _: usize, _: &FsFaults) -> Result<(), String> {
            Ok(())
        }
        fn crashed(&self, _: usize) -> bool {
            false
        }
        async fn restart(&self, _: usize) {}
        fn record(&self, name: Nemesis, node: usize, value: Value) {
            self.log.lock().unwrap().push((name.to_string(), Some(node), value));
        }
    }

    fn specs(yaml: &str) -> Vec<TriggerSpec> {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn status(node: usize, role: FactRole, op: u64) -> Fact {
        Fact::Status {
            node,
            at: Instant::now(),
            role,
            view: None,
            durable: Some(op),
            numbers: vec![("op".into(), op)],
        }
    }

    fn status_in_view(node: usize, role: FactRole, view: u64) -> Fact {
        Fact::Status {
            node,
            at: Instant::now(),
            role,
            view: Some(view),
            durable: Some(10),
            numbers: vec![("op".into(), 10)],
        }
    }

    /// Runs the engine over `phase_ms` of paused time, feeding `script` (at ms from the start, the fact).
    async fn run(
        lab: &FakeLab,
        specs: &[TriggerSpec],
        stable: Option<StableSpec>,
        phase_ms: u64,
        script: Vec<(u64, Fact)>,
    ) {
        run_on(lab, None, specs, stable, phase_ms, script).await
    }

    /// [`run`] with a network backend.
    async fn run_on(
        lab: &FakeLab,
        network: Option<&Network>,
        specs: &[TriggerSpec],
        stable: Option<StableSpec>,
        phase_ms: u64,
        script: Vec<(u64, Fact)>,
    ) {
        let (facts_tx, facts_rx) = broadcast::channel(64);
        let (stop_tx, stop_rx) = watch::channel(false);
        let start = Instant::now();
        let holds = (NodeHolds::new(3), NetworkHolds::default());
        let mut engine = Triggers::new(lab, specs, 7, network, holds, stable, phase_ms);
        let feed = async move {
            for (at, fact) in script {
                tokio::time::sleep_until(start + Duration::from_millis(at)).await;
                // Each fact carries the time it is sent at.
                let fact = match fact {
                    Fact::Status {
                        node,
                        role,
                        view,
                        durable,
                        numbers,
                        ..
                    } => Fact::Status {
                        node,
                        at: Instant::now(),
                        role,
                        view,
                        durable,
                        numbers,
                    },
                    Fact::Ready { node, .. } => Fact::Ready {
                        node,
                        at: Instant::now(),
                    },
                    Fact::Down { node, .. } => Fact::Down {
                        node,
                        at: Instant::now(),
                    },
                    other => other,
                };
                facts_tx.send(fact).unwrap();
            }
            tokio::time::sleep_until(start + Duration::from_millis(phase_ms)).await;
            stop_tx.send(true).unwrap();
            facts_tx
        };
        let (_, _facts_tx) = tokio::join!(engine.run(start, stop_rx, facts_rx), feed);
    }

    fn ready(node: usize) -> Fact {
        Fact::Ready {
            node,
            at: Instant::now(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_restart_when_triggered_should_kill_the_subject_after_the_drawn_delay_and_restart_it() {
        let lab = FakeLab::default();
        let specs =
            specs("- {when: {restarted: any}, after: 100ms, do: {kind: kill, targets: subject, duration: 500ms}}");
        run(&lab, &specs, None, 5000, vec![(1000, ready(1))]).await;
        assert_eq!(lab.names(), ["killn2", "triggern2", "startn2"]);
        let fired = &lab.triggers()[0];
        assert_eq!(fired["condition"], "restarted");
        assert_eq!(fired["subject"], "n2");
        assert_eq!(fired["delay_ms"], 100);
        assert_eq!(fired["duration_ms"], 500);
        assert_eq!(fired["fault_id"], TRIGGER_FAULT_ID_BASE);
        let log = lab.log.lock().unwrap();
        assert_eq!(log[0].2["source"], "triggered");
        assert_eq!(log[0].2["trigger"], 0);
    }

    #[tokio::test(start_paused = true)]
    async fn given_conditions_in_a_burst_when_triggered_should_keep_the_cooldown_and_the_fire_limit() {
        let lab = FakeLab::default();
        let specs = specs(
            "- {when: {restarted: n1}, cooldown: 1s, max_fires: 2, do: {kind: pause, targets: subject, duration: 100ms}}",
        );
        // n1 restarts every 300 ms for 6 s; n2's restarts do not match the filter.
        let script = (0..20)
            .flat_map(|i| [(i * 300, ready(0)), (i * 300 + 1, ready(1))])
            .collect();
        run(&lab, &specs, None, 8000, script).await;
        let fired = lab.triggers();
        assert_eq!(fired.len(), 2, "{fired:?}");
        assert!(fired.iter().all(|f| f["subject"] == "n1"));
        assert_eq!(lab.names().iter().filter(|n| *n == "pausen1").count(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn given_the_primary_lost_when_a_view_change_trigger_holds_should_pause_everyone_but_the_old_primary() {
        let lab = FakeLab::default();
        let specs = specs("- {when: {view-change: any}, do: {kind: pause, targets: not-subject, duration: 200ms}}");
        let script = vec![
            (0, status(0, FactRole::Primary, 10)),
            (0, status(1, FactRole::Backup, 10)),
            (0, status(2, FactRole::Backup, 10)),
            (
                500,
                Fact::Down {
                    node: 0,
                    at: Instant::now(),
                },
            ),
        ];
        run(&lab, &specs, None, 3000, script).await;
        assert_eq!(lab.triggers()[0]["subject"], "n1");
        let names = lab.names();
        assert!(
            names.starts_with(&["pausen2".into(), "pausen3".into(), "triggern1".into()]),
            "{names:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_stale_primary_cut_off_when_a_newer_view_elects_one_should_fire_primary_changed_and_stale_primary()
    {
        let lab = FakeLab::default();
        let specs = specs(
            "- {when: {primary-changed: any}, do: {kind: kill, targets: subject, duration: 100ms}}\n\
             - {when: {stale-primary: any}, do: {kind: pause, targets: subject, duration: 100ms}}",
        );
        // n1 leads view 0; cut off, it keeps claiming view 0 (its probe still answers) while n2 and n3 go through
        // a view change and n2 leads view 1. n1 is the first node, so a first-claimant rule never sees n2 lead.
        let mut script = vec![
            (0, status_in_view(0, FactRole::Primary, 0)),
            (0, status_in_view(1, FactRole::Backup, 0)),
            (0, status_in_view(2, FactRole::Backup, 0)),
            (400, status_in_view(1, FactRole::Other, 1)),
            (400, status_in_view(2, FactRole::Other, 1)),
            (800, status_in_view(2, FactRole::Backup, 1)),
        ];
        for at in (100..=1500).step_by(100) {
            script.push((at, status_in_view(0, FactRole::Primary, 0)));
        }
        script.push((900, status_in_view(1, FactRole::Primary, 1)));
        script.sort_by_key(|(at, _)| *at);
        run(&lab, &specs, None, 2000, script).await;
        let fired = lab.triggers();
        let mut seen: Vec<(String, String)> = fired
            .iter()
            .map(|f| {
                (
                    f["condition"].as_str().unwrap().into(),
                    f["subject"].as_str().unwrap().into(),
                )
            })
            .collect();
        seen.sort();
        let want = [("primary-changed", "n2"), ("stale-primary", "n1")].map(|(c, n)| (c.to_string(), n.to_string()));
        assert_eq!(seen, want, "{fired:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_stale_primary_when_a_trigger_faults_the_primary_links_should_hit_the_newer_primary_not_the_subject(
    ) {
        let mesh = crate::network::proxy::ProxyMesh::start(3, vec![], Default::default(), 1)
            .await
            .unwrap();
        let network = Network::Proxy(std::sync::Arc::new(mesh));
        let lab = FakeLab::default(); // its primary is n1
        let specs = specs(
            "- {when: {stale-primary: any}, do: {kind: link, links: primary, fault: {kind: delay, latency: 400ms}, \
             duration: 300ms}}",
        );
        // n2 still claims view 3 while n1 leads view 4.
        let mut script = vec![(0, status_in_view(2, FactRole::Backup, 4))];
        for at in (0..=600).step_by(100) {
            script.push((at, status_in_view(1, FactRole::Primary, 3)));
        }
        script.push((200, status_in_view(0, FactRole::Primary, 4)));
        script.sort_by_key(|(at, _)| *at);
        run_on(&lab, Some(&network), &specs, None, 1000, script).await;
        let fired = lab.triggers();
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0]["subject"], "n2");
        let log = lab.log.lock().unwrap();
        let fault = log
            .iter()
            .find(|(name, ..)| name == "link-fault")
            .expect("a link fault");
        assert_eq!(fault.2["links"], json!(["n1->n2", "n2->n1", "n1->n3", "n3->n1"]));
        assert!(log.iter().any(|(name, ..)| name == "link-heal"));
    }

    #[test]
    fn given_claims_to_lead_when_choosing_the_primary_should_take_the_newest_view_then_the_first_node() {
        assert_eq!(newest_claimant([]), None);
        assert_eq!(newest_claimant([(0, Some(4)), (1, Some(5))]), Some(1));
        assert_eq!(newest_claimant([(0, Some(6)), (2, Some(5))]), Some(0));
        assert_eq!(newest_claimant([(1, Some(5)), (2, Some(5))]), Some(1));
        assert_eq!(newest_claimant([(0, None), (2, None)]), Some(0));
        assert_eq!(newest_claimant([(0, None), (2, Some(0))]), Some(2));
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_backup_falling_behind_when_lagging_holds_should_fire_once_until_it_catches_up() {
        let lab = FakeLab::default();
        let specs = specs(
            "- {when: {lagging: {by: 5, number: op}}, cooldown: 10ms, do: {kind: kill, targets: primary, duration: 100ms}}",
        );
        let mut script = Vec::new();
        for (i, lag) in [0u64, 6, 7, 8, 0, 9].into_iter().enumerate() {
            let at = i as u64 * 200;
            script.push((at, status(0, FactRole::Primary, 100 + 10 * i as u64)));
            script.push((at, status(2, FactRole::Backup, 100 + 10 * i as u64 - lag)));
        }
        run(&lab, &specs, None, 3000, script).await;
        let fired = lab.triggers();
        assert_eq!(
            fired.len(),
            2,
            "lagging at 200 ms, caught up at 800 ms, lagging again at 1000 ms: {fired:?}"
        );
        assert!(fired
            .iter()
            .all(|f| f["subject"] == "n3" && f["condition"] == "lagging"));
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_stable_window_when_a_trigger_holds_inside_it_should_skip_and_clip_faults_before_it() {
        let lab = FakeLab::default();
        let specs = specs("- {when: {restarted: any}, cooldown: 1s, do: {kind: kill, targets: subject, duration: 5s}}");
        let stable = StableSpec {
            every: Millis(10_000),
            duration: Millis(4000),
        };
        let script = vec![(5000, ready(0)), (7000, ready(1)), (9800, ready(2)), (10_200, ready(1))];
        run(&lab, &specs, Some(stable), 20_000, script).await;
        let fired = lab.triggers();
        assert_eq!(fired.len(), 4, "{fired:?}");
        assert_eq!(fired[0]["duration_ms"], 1000, "clipped to the window at 6 s: {fired:?}");
        for skipped in &fired[1..3] {
            assert!(
                skipped["skipped"].as_str().unwrap().contains("stable window"),
                "{fired:?}"
            );
        }
        // A skipped firing did nothing, so it starts no cooldown: 400 ms after one, the trigger fires.
        assert_eq!(fired[3]["subject"], "n2");
        assert_eq!(fired[3]["duration_ms"], 5000, "{fired:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn given_an_anchor_window_when_the_condition_holds_before_and_in_it_should_fire_only_inside_it_once() {
        let lab = FakeLab::default();
        // A replayed fault: the second restart of n2, seen about 4 s into the phase.
        let specs = specs(
            "- {when: {restarted: n2}, after: 300ms, max_fires: 1, not_before: 3s, not_after: 6s, \
             do: {kind: kill, targets: [n3], duration: 500ms}}",
        );
        let script = vec![(1000, ready(1)), (2000, ready(2)), (4200, ready(1)), (5000, ready(1))];
        run(&lab, &specs, None, 8000, script).await;
        let fired = lab.triggers();
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0]["subject"], "n2");
        assert_eq!(lab.names(), ["killn3", "triggern2", "startn3"]);
    }

    #[tokio::test(start_paused = true)]
    async fn given_otherwise_when_no_fault_was_applied_by_then_should_apply_it_then_about_the_pinned_node() {
        let lab = FakeLab::default();
        // Durations run past the 10 s phase, so each applied fault's clipped duration says when it started.
        let specs = specs(
            "- {when: {restarted: n2}, max_fires: 1, not_before: 3s, not_after: 6s, otherwise: 6300ms, \
             do: {kind: kill, duration: 60s}}\n\
             - {when: {restarted: n1}, after: 300ms, max_fires: 1, not_before: 3s, not_after: 6s, otherwise: 6300ms, \
             do: {kind: pause, targets: [n3], duration: 2s}}\n\
             - {when: {restarted: n1}, after: 500ms, max_fires: 1, not_before: 3s, not_after: 6s, otherwise: 7s, \
             do: {kind: kill, targets: [n3], duration: 60s}}",
        );
        // n2 restarts only before its window; n1 restarts inside theirs.
        let script = vec![(1000, ready(1)), (4000, ready(0))];
        run(&lab, &specs, None, 10_000, script).await;
        let fired = lab.triggers();
        let shown: Vec<String> = fired
            .iter()
            .map(|f| {
                let how = match (f.get("skipped"), f.get("otherwise")) {
                    (Some(_), _) => "skipped".to_string(),
                    (None, Some(_)) => format!("otherwise {}", f["duration_ms"]),
                    (None, None) => format!("observed {}", f["duration_ms"]),
                };
                format!("{} {} {how}", f["trigger"], f["subject"].as_str().unwrap_or("-"))
            })
            .collect();
        assert_eq!(
            shown,
            [
                // 300 ms after n1's restart: it applied a fault, so its `otherwise` does nothing.
                "1 n1 observed 2000",
                // n3 is paused: skipped, so nothing is applied yet ...
                "2 n1 skipped",
                // ... n2 never restarted in its window: at 6.3 s anyway, about n2.
                "0 n2 otherwise 3700",
                // ... and at 7 s, with n3 resumed at 6.3 s, trigger 2's kill happens.
                "2 n1 otherwise 3000",
            ],
            "{fired:?}"
        );
        assert!(lab.names().contains(&"killn2".to_string()), "{:?}", lab.names());
    }

    #[test]
    fn given_otherwise_when_validated_should_need_a_pinned_subject_and_to_come_after_not_before() {
        let caps = caps();
        let early =
            &specs("- {when: {restarted: n2}, not_before: 6s, otherwise: 5s, do: {kind: kill, duration: 1s}}")[0];
        assert!(early.validate(&caps).unwrap_err().contains("before `not_before"));
        let anyone = &specs("- {when: {restarted: any}, otherwise: 5s, do: {kind: kill, duration: 1s}}")[0];
        assert!(anyone.validate(&caps).unwrap_err().contains("about one node"));
        let named =
            &specs("- {when: {restarted: any}, otherwise: 5s, do: {kind: kill, targets: [n3], duration: 1s}}")[0];
        assert_eq!(named.validate(&caps), Ok(()));
        let pinned = &specs("- {when: {restarted: n2}, otherwise: 5s, do: {kind: kill, duration: 1s}}")[0];
        assert_eq!(pinned.validate(&caps), Ok(()));
    }

    #[test]
    fn given_an_anchor_window_that_never_opens_when_validated_should_say_why() {
        let caps = caps();
        let bad = &specs("- {when: {restarted: n2}, not_before: 6s, not_after: 3s, do: {kind: kill, duration: 1s}}")[0];
        assert!(bad.validate(&caps).unwrap_err().contains("could never fire"));
        let both = &specs(
            "- {when: {restarted: n2}, do: {kind: partition, shape: isolate-subject, cut: [n1->n2], duration: 1s}}",
        )[0];
        assert!(both.validate(&caps).unwrap_err().contains("not both"));
        let misplaced = &specs("- {when: {restarted: n2}, do: {kind: kill, cut: [n1->n2], duration: 1s}}")[0];
        assert!(misplaced
            .validate(&caps)
            .unwrap_err()
            .contains("`cut` is for partition"));
        let cut = &specs("- {when: {restarted: n2}, do: {kind: partition, cut: [n1->n2, n3->n2], duration: 1s}}")[0];
        assert_eq!(cut.validate(&caps), Ok(()));
        let takeover = &specs("- {when: {restarted: n2}, do: {kind: kill, takeover: true, duration: 1s}}")[0];
        assert!(takeover
            .validate(&caps)
            .unwrap_err()
            .contains("`takeover` is for partition"));
        let takeover = &specs(
            "- {when: {primary-changed: any}, do: {kind: partition, shape: isolate-subject, takeover: true, duration: 1s}}",
        )[0];
        assert_eq!(takeover.validate(&caps), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_log_pattern_when_a_line_matches_should_fire_on_that_node_only() {
        let lab = FakeLab::default();
        let specs =
            specs("- {when: {log: {pattern: 'view change start(ed)?', node: n3}}, do: {kind: kill, duration: 100ms}}");
        let line = |node: usize, text: &str| Fact::Log {
            node,
            at: Instant::now(),
            line: text.into(),
            patterns: vec![],
        };
        let script = vec![
            (10, line(0, "view change started")),
            (20, line(2, "repair done")),
            (30, line(2, "INFO view change started old_view=3")),
        ];
        run(&lab, &specs, None, 1000, script).await;
        let fired = lab.triggers();
        assert_eq!(fired.len(), 1);
        assert_eq!(fired[0]["subject"], "n3");
    }

    #[tokio::test(start_paused = true)]
    async fn given_adapter_patterns_when_a_node_caught_up_should_fire_repaired_not_repairing_on_that_node() {
        let lab = FakeLab::default();
        let specs = specs("- {when: {repaired: n2}, do: {kind: kill, targets: not-subject, duration: 100ms}}");
        let line = |node: usize, text: &str, patterns: &[&'static str]| Fact::Log {
            node,
            at: Instant::now(),
            line: text.into(),
            patterns: patterns.to_vec(),
        };
        let script = vec![
            (10, line(1, "INFO repair start from_op=7", &["repairing"])),
            (20, line(2, "INFO repair done op=9", &["repaired"])),
            (30, line(1, "INFO repair done op=9", &["repaired"])),
        ];
        run(&lab, &specs, None, 1000, script).await;
        let fired = lab.triggers();
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0]["subject"], "n2");
        assert_eq!(fired[0]["condition"], "repaired");
        let mut no_pattern = caps();
        no_pattern.repaired_pattern = false;
        let error = specs[0].validate(&no_pattern).unwrap_err();
        assert!(error.contains("`repaired` needs an adapter"), "{error}");
    }

    fn caps() -> TriggerCapabilities {
        TriggerCapabilities {
            node_count: 3,
            backends: &[BackendKind::Proxy],
            fault_fs: false,
            primary_probe: true,
            durable_progress: true,
            repairing_pattern: true,
            repaired_pattern: true,
        }
    }

    #[test]
    fn given_plan_typos_when_validated_should_name_the_field_and_what_to_do() {
        let error = |yaml: &str| specs(yaml)[0].validate(&caps()).unwrap_err();
        assert!(
            error("- {when: {restarted: n4}, do: {kind: kill, duration: 1s}}").contains("not a node of this 3-node")
        );
        assert!(
            error("- {when: {restarted: any}, do: {kind: kill, shape: bridge, duration: 1s}}")
                .contains("`shape` is for partition")
        );
        assert!(error("- {when: {restarted: any}, do: {kind: partition, duration: 1s}}").contains("needs `shape`"));
        assert!(error("- {when: {restarted: any}, do: {kind: power-loss, duration: 1s}}").contains("fault_fs: true"));
        assert!(error("- {when: {log: 'a(b'}, do: {kind: kill, duration: 1s}}").contains("does not compile"));
        assert!(
            error("- {when: {restarted: any}, probability: 1.5, do: {kind: kill, duration: 1s}}").contains("(0, 1]")
        );
        let parse = |yaml: &str| {
            serde_saphyr::from_str::<Vec<TriggerSpec>>(yaml)
                .unwrap_err()
                .to_string()
        };
        assert!(parse("- {when: {restartd: any}, do: {kind: kill, duration: 1s}}").contains("restartd"));
        assert!(
            parse("- {when: {restarted: any}, do: {kind: kill, targets: primery, duration: 1s}}")
                .contains("unknown target")
        );
        let ok = specs(
            "- {when: {primary-changed: any}, do: {kind: partition, shape: isolate-subject, duration: 1s..2s}}\n\
             - {when: {repairing: n2}, after: 0ms..500ms, do: {kind: link, fault: {kind: delay, latency: 50ms}, duration: 1s}}\n\
             - {when: {lagging: {by: 3}}, do: {kind: kill, targets: [n1, n2], duration: 1s}}",
        );
        for spec in &ok {
            spec.validate(&caps()).unwrap();
        }
        let yaml = serde_saphyr::to_string(&ok).unwrap();
        assert_eq!(
            serde_saphyr::from_str::<Vec<TriggerSpec>>(&yaml).unwrap(),
            ok,
            "the resolved plan round-trips: {yaml}"
        );
    }
}
