//! The plan syntax of triggers: what a plan's `nemesis.triggers` says, and its validation against the cluster.

use crate::fusefs::FsFaults;
use crate::network::grudge::Link;
use crate::network::link_fault::{BackendKind, LinkFault};
use crate::network::schedule::LinkTarget;
use crate::network::shape::Shape;
use crate::process::{node_name, parse_node_name, Target};
use crate::units::{Millis, MillisRange};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;

/// What a plan that leaves out a trigger's `cooldown` gets.
pub(super) const DEFAULT_COOLDOWN_MS: u64 = 2000;
/// What a plan that leaves out a trigger's `max_fires` gets.
pub(super) const DEFAULT_MAX_FIRES: u32 = 10;

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
    /// What a guided campaign's shot made of this trigger aimed at (`kill@primary+partition:bridge`, or an anchored
    /// shot's `TEMPLATE => kill@subject`); none in a plan a person wrote. A replay fires a shot's faults on the nodes
    /// they hit (a shot's role was the guide's choice of that moment, not the plan's intent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shot: Option<String>,
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
    /// Whether `node` is one of the nodes it names (the engine asks, for each observation).
    pub(super) fn admits(self, node: usize) -> bool {
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
    /// A node logged a line of this template (`template: "view change started old_view=N new_view=N"`): the line
    /// masked as behaviours and triage mask it (numbers, hex, ids, paths, durations, node names, timestamps; harness
    /// `faultline_workloads::logmask::log_line_key`) equals `pattern`. A guided campaign anchors its shots to the
    /// templates its runs logged; a person copies one from `behaviours.json` or a report.
    Template(LogCondition),
    /// This offset of the fault phase (`at: 4s`): no observation, the fault comes then, once. A guided campaign
    /// aims its runs' fault combinations with these (harness `explore::guide::aim`); a plan may script a role-aimed
    /// fault the timed script cannot (`{when: {at: 4s}, do: {kind: partition, shape: isolate-primary}}`).
    At(Millis),
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
            Condition::Log(log) | Condition::Template(log) => log.node,
            Condition::At(_) => NodeFilter::Any,
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
            Condition::Template(_) => "template",
            Condition::At(_) => "at",
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
    /// A graceful stop (SIGTERM, SIGKILL after `grace`), restarted when it ends.
    Stop,
    /// Take the node down, cut its files (`cuts`), restart it when it ends.
    Corrupt,
    /// Move the node's clock (`bump`, `strobe` or `skew`); real time again when it ends.
    Clock,
    /// Change who is a member (`change: add | remove | replace`).
    Membership,
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
            TriggeredKind::Stop => "stop",
            TriggeredKind::Corrupt => "corrupt",
            TriggeredKind::Clock => "clock",
            TriggeredKind::Membership => "membership",
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
    /// A backup that is not the subject (`other-backup`): "the subject just logged X; now hit another backup".
    OtherBackup,
    /// A target as in the timed schedule (roles resolved when the fault starts).
    Target(Target),
}

impl fmt::Display for TriggerTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TriggerTarget::Subject => f.write_str("subject"),
            TriggerTarget::NotSubject => f.write_str("not-subject"),
            TriggerTarget::OtherBackup => f.write_str("other-backup"),
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
            Except { role: String, except: Vec<String> },
        }
        match Form::deserialize(d)? {
            Form::Except { role, except } => Target::parse_role(&role)
                .and_then(|role| Target::except(role, except))
                .map(TriggerTarget::Target)
                .map_err(serde::de::Error::custom),
            Form::Name(name) => match name.as_str() {
                "subject" => Ok(TriggerTarget::Subject),
                "not-subject" => Ok(TriggerTarget::NotSubject),
                "other-backup" => Ok(TriggerTarget::OtherBackup),
                role => Target::parse_role(role)
                    .map(TriggerTarget::Target)
                    .map_err(|e| serde::de::Error::custom(format!("{e}, subject, not-subject, other-backup"))),
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
                 split-members, majorities-ring, bridge or one-way"
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
    /// How long it lasts (a membership change: how long a `replace` keeps the node out; `add` and `remove` take
    /// none).
    #[serde(default, skip_serializing_if = "MillisRange::is_zero")]
    pub duration: MillisRange,
    /// The grace of a graceful stop (kind `stop`, or `corrupt` with `stop: graceful`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace: Option<crate::units::Millis>,
    /// How `corrupt` takes its targets down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<crate::process::StopHow>,
    /// `corrupt`'s cuts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<crate::disk::spec::SurgerySpec>,
    /// `clock`: a step drawn from this signed range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bump: Option<crate::clock::OffsetRange>,
    /// `clock`: a strobe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strobe: Option<crate::clock::StrobeSpec>,
    /// `clock`: a rate drawn from this range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<crate::clock::RateRange>,
    /// `membership`: `add`, `remove` or `replace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<crate::process::MembershipChange>,
}

impl TriggeredFaultSpec {
    /// Whether whom it hits depends on the subject of the observation.
    pub fn about_subject(&self) -> bool {
        match self.kind {
            TriggeredKind::Kill
            | TriggeredKind::Pause
            | TriggeredKind::PowerLoss
            | TriggeredKind::Stop
            | TriggeredKind::Corrupt
            | TriggeredKind::Clock
            | TriggeredKind::Membership
            | TriggeredKind::Io => matches!(
                self.targets,
                None | Some(TriggerTarget::Subject)
                    | Some(TriggerTarget::NotSubject)
                    | Some(TriggerTarget::OtherBackup)
            ),
            TriggeredKind::Partition => self.cut.is_empty() && self.shape == Some(TriggerShape::IsolateSubject),
            TriggeredKind::Link => matches!(self.links, None | Some(TriggerLinks::Subject)),
        }
    }
}

impl TriggeredFaultSpec {
    /// The process fault it starts, for the kinds that are process faults.
    pub fn process_fault(&self) -> Option<crate::process::ProcessFault> {
        use crate::process::ProcessFault;
        Some(match self.kind {
            TriggeredKind::Kill => ProcessFault::Kill,
            TriggeredKind::Pause => ProcessFault::Pause,
            TriggeredKind::PowerLoss => ProcessFault::PowerLoss,
            TriggeredKind::Stop => ProcessFault::Stop,
            TriggeredKind::Corrupt => ProcessFault::Corrupt,
            TriggeredKind::Clock => ProcessFault::Clock,
            TriggeredKind::Membership => ProcessFault::Membership,
            TriggeredKind::Partition | TriggeredKind::Link | TriggeredKind::Io => return None,
        })
    }

    /// What a stop, corrupt or membership fault carries beyond its kind.
    pub fn detail(&self) -> crate::process::FaultDetail {
        crate::process::FaultDetail {
            change: self.change,
            ..crate::process::FaultDetail::new(self.grace, self.stop, &self.cuts)
        }
    }

    /// Its clock fields.
    pub fn clock_spec(&self) -> crate::clock::ClockSpec {
        crate::clock::ClockSpec {
            bump: self.bump,
            strobe: self.strobe,
            skew: self.skew,
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
            Condition::Template(template) => {
                node_ok(template.node)?;
                if template.pattern.trim().is_empty() {
                    return Err("`template` is empty: give a masked log line, as `behaviours.json` lists them".into());
                }
            }
            Condition::At(at) => {
                if self.otherwise.is_some() || self.not_before.is_some() || self.not_after.is_some() {
                    return Err(format!(
                        "`at: {}ms` fires at that offset of the fault phase, once: `otherwise`, `not_before` and \
                         `not_after` have nothing to add; remove them",
                        at.0
                    ));
                }
                if self.action.about_subject() {
                    return Err(format!(
                        "`at` observes no node, so a `{}` fault about the subject has nobody to hit; name its \
                         targets (a role such as `primary`, or nodes{})",
                        self.action.kind.name(),
                        if self.action.kind == TriggeredKind::Partition {
                            "; or a shape"
                        } else {
                            ""
                        }
                    ));
                }
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
            TriggeredKind::Kill
                | TriggeredKind::Pause
                | TriggeredKind::PowerLoss
                | TriggeredKind::Stop
                | TriggeredKind::Corrupt
                | TriggeredKind::Clock
                | TriggeredKind::Membership
                | TriggeredKind::Io
        );
        only(
            action.targets.is_some() && !process_like,
            "targets",
            "kill, pause, power-loss, stop, corrupt, clock, membership and io",
        )?;
        action
            .clock_spec()
            .validate(action.kind == TriggeredKind::Clock, kind)?;
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
        if let Some(kind) = action.process_fault() {
            action.detail().validate(kind)?;
        } else if action.grace.is_some() || action.stop.is_some() || !action.cuts.is_empty() {
            return Err(format!(
                "`grace`, `stop` and `cuts` are for stop and corrupt, not a `{kind}` trigger"
            ));
        } else if action.change.is_some() {
            return Err(format!("`change` is for membership, not a `{kind}` trigger"));
        }
        if action.targets == Some(TriggerTarget::OtherBackup) && !caps.primary_probe {
            return Err(
                "target `other-backup` needs a system that can tell its primary (who is a backup); target \
                 `not-subject` or nodes"
                    .into(),
            );
        }
        if let Some(TriggerTarget::Target(target)) = &action.targets {
            if *target == Target::Each {
                return Err(format!(
                    "`targets: each` (a rolling fault, every node in turn) cannot be triggered: a `{kind}` trigger's \
                     fault lasts its drawn `duration` and ends before the next stable window, and a rolling fault \
                     lasts as long as its nodes take to be ready again; put it in `nemesis.process.faults` or \
                     `script`"
                ));
            }
            let names = match target {
                Target::Nodes(names) => Some(names),
                Target::Except { except, .. } => Some(except),
                _ => None,
            };
            if let Some(names) = names {
                if let Some(bad) = names.iter().find(|name| parse_node_name(name).is_none_or(|i| i >= n)) {
                    return Err(format!(
                        "target `{bad}` is not a node of this {n}-node cluster (n1..n{n})"
                    ));
                }
            }
            if matches!(target.role(), Target::Primary | Target::Backup | Target::NextPrimary) && !caps.primary_probe {
                return Err(format!(
                    "target `{target}` needs a system that can tell its primary; target `subject`, `one` or nodes"
                ));
            }
        }
        match action.kind {
            TriggeredKind::Corrupt if action.stop == Some(crate::process::StopHow::PowerLoss) && !caps.fault_fs => {
                return Err(
                    "a `corrupt` trigger with `stop: power-loss` needs the fault filesystem: add `disk: \
                            {fault_fs: true}`"
                        .into(),
                );
            }
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
        let replace = action.change == Some(crate::process::MembershipChange::Replace);
        if action.duration.max.0 == 0 && (action.kind != TriggeredKind::Membership || replace) {
            return Err(
                "a triggered fault needs a duration > 0 (a membership `replace`: how long the node stays out)".into(),
            );
        }
        Ok(())
    }
}
