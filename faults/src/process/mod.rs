//! Process faults: kill -9 + restart later, SIGSTOP/SIGCONT pauses, power loss, graceful stops, and the corruption
//! of a live node's files (taken down, cut, restarted while the others go on; see [`detail`]).
//!
//! A schedule is generated up front from the run seed, so the same seed always gives the same fault schedule. It
//! composes two sources, because consensus bugs need *overlapping* faults (repair racing a view change, a lagging
//! replica promoted with a hole), not one fault at a time:
//!
//! - **flaps**: every node runs an independent crash/restart process with exponentially distributed up and down times
//!   (as TigerBeetle's simulator does), so one node restarts while another is still down, majority outages happen
//!   and end with only some nodes back, and kill-restart flaps can be quick;
//! - **targeted faults**: at exponentially distributed intervals, a fault (kill or pause) on a target
//!   (`one|minority|majority|primary|backup|next-primary|all|each|[names]`) for a duration drawn from a range.
//!
//! `each` is a rolling fault: every node in turn, each ready again before the next goes down ([`rolling`]).
//!
//! Role targets (`primary`, `backup`, `next-primary`) are resolved when the fault starts, by asking the lab; their
//! random choice (which backup) is drawn at generation time so the schedule itself stays seed-determined. Stable
//! periods are windows in which no fault is active, so the cluster can make progress. Every fault ends (heals) before
//! the time limit. [`ProcessFaults`] is this family of the [timed interpreter](crate::interpreter), which applies the
//! schedule and heals whatever is still active when a run stops early.

mod clock;
mod detail;
pub mod membership;
pub mod rolling;

pub use detail::{is_file_class, kind_name, FaultDetail, StopHow, DEFAULT_GRACE};
pub use membership::{split_membership, MembershipChange, MembershipFaults, MembershipStep};
pub use rolling::{check_rolling_kind, split_rolling, RollingFaults};

use crate::clock::{ClockShift, ClockSpec, OffsetRange, RateRange, StrobeSpec};
use crate::disk::spec::SurgerySpec;
use crate::interpreter::{TimedFault, Window};
use crate::units::{Millis, MillisRange, Weight};
use faultline_workloads::history::Nemesis;
use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;

/// What a process fault does to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessFault {
    /// SIGKILL the node's process group; restart it with the same data dir when the fault ends.
    Kill,
    /// SIGSTOP the node's process group; SIGCONT when the fault ends.
    Pause,
    /// Power loss: SIGKILL every target at once, then drop every byte and directory entry they had not fsynced (the
    /// fault filesystem); restart them when the fault ends.
    PowerLoss,
    /// A graceful stop: ask the node to stop (SIGTERM, or its adapter's stop command), SIGKILL it after `grace`;
    /// restart it when the fault ends. The path operators take in every rolling restart.
    Stop,
    /// Take the node down (`stop`: kill, power loss or graceful), cut its files (`cuts`, the final phase's surgeon),
    /// restart it when the fault ends, while the workload and the other nodes go on.
    Corrupt,
    /// Move the node's clock (`bump`, `strobe` or `skew`, [`crate::clock`]); real time again when the fault ends. The
    /// process keeps running.
    Clock,
    /// Change who is a member (`change: add | remove | replace`, [`membership`]): add a spare node, remove a member,
    /// or remove one, wipe it and add it back when the fault ends.
    Membership,
}

impl ProcessFault {
    fn start_name(self) -> Nemesis {
        match self {
            ProcessFault::Kill => Nemesis::Kill,
            ProcessFault::Pause => Nemesis::Pause,
            ProcessFault::PowerLoss => Nemesis::PowerLoss,
            ProcessFault::Stop => Nemesis::Stop,
            ProcessFault::Corrupt => Nemesis::Corrupt,
            ProcessFault::Clock => Nemesis::Clock,
            ProcessFault::Membership => Nemesis::Membership,
        }
    }

    fn stop_name(self) -> Nemesis {
        match self {
            ProcessFault::Kill | ProcessFault::PowerLoss | ProcessFault::Stop | ProcessFault::Corrupt => Nemesis::Start,
            ProcessFault::Pause => Nemesis::Resume,
            ProcessFault::Clock => Nemesis::ClockHeal,
            ProcessFault::Membership => Nemesis::Membership,
        }
    }
}

/// Which nodes a fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// One random node.
    One,
    /// A random minority (at most (n-1)/2 nodes, at least one).
    Minority,
    /// A random majority (n/2+1 nodes).
    Majority,
    /// The current primary, asked of the system when the fault starts.
    Primary,
    /// One random backup (not the current primary).
    Backup,
    /// The node that would become primary in the next view.
    NextPrimary,
    /// Every node.
    All,
    /// Every node in turn, n1 to nN, each ready again before the next goes down: a rolling restart ([`rolling`]).
    Each,
    /// Named nodes (`n1..nN`).
    Nodes(Vec<String>),
    /// A role or random set among the nodes other than the named ones: `{role: backup, except: [n3]}` is a backup
    /// other than n3 (the damaged one), `{role: one, except: [n1]}` any node but n1.
    Except {
        /// The role or random set (`one`, `minority`, `majority`, `primary`, `backup`, `next-primary`, `all`).
        of: Box<Target>,
        /// The nodes it never picks (`n1..nN`).
        except: Vec<String>,
    },
}

impl Target {
    /// The role or set a target picks from (`backup` for "a backup other than n3").
    pub fn role(&self) -> &Target {
        match self {
            Target::Except { of, .. } => of,
            other => other,
        }
    }

    /// How many nodes it takes at once in an `n`-node cluster (a rolling fault: one at a time).
    pub fn size(&self, n: usize) -> usize {
        let excepted = self.excepted().len();
        match self.role() {
            Target::One | Target::Primary | Target::Backup | Target::NextPrimary | Target::Each => 1,
            Target::Minority => ((n - 1) / 2).max(1).min(n.saturating_sub(excepted)),
            Target::Majority => (n / 2 + 1).min(n.saturating_sub(excepted)),
            Target::All => n.saturating_sub(excepted),
            Target::Nodes(names) => names.len(),
            Target::Except { .. } => unreachable!("`role()` is never an `except`"),
        }
    }

    /// The nodes it never picks.
    pub fn excepted(&self) -> &[String] {
        match self {
            Target::Except { except, .. } => except,
            _ => &[],
        }
    }

    /// `role` less `except`, refused where it means nothing: a rolling fault (`each`) takes every node, named nodes
    /// are already exact, an empty list excepts nothing.
    pub fn except(of: Target, except: Vec<String>) -> Result<Target, String> {
        if matches!(of, Target::Each | Target::Nodes(_) | Target::Except { .. }) {
            return Err(format!(
                "`except` narrows a role or a random set (one, minority, majority, primary, backup, next-primary, \
                 all), not `{of}`: name the nodes you mean instead"
            ));
        }
        if except.is_empty() {
            return Err("`except: []` excepts nothing: drop it, or name the nodes to leave out, e.g. [n3]".into());
        }
        if let Some(bad) = except.iter().find(|name| parse_node_name(name).is_none()) {
            return Err(format!(
                "`except`: `{bad}` is not a node name: nodes are named n1, n2, ... nN"
            ));
        }
        Ok(Target::Except {
            of: Box::new(of),
            except,
        })
    }

    /// Parses a role name (`one`, `minority`, ...), or a role less some nodes as [`fmt::Display`] writes it
    /// (`backup except [n3]`, what a stored schedule records).
    pub fn parse_role(text: &str) -> Result<Target, String> {
        if let Some((role, except)) = text.split_once(" except ") {
            let names = except
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(|name| name.trim().to_string())
                .filter(|name| !name.is_empty())
                .collect();
            return Target::except(Target::parse_role(role.trim())?, names);
        }
        Ok(match text {
            "one" => Target::One,
            "minority" => Target::Minority,
            "majority" => Target::Majority,
            "primary" => Target::Primary,
            "backup" => Target::Backup,
            "next-primary" => Target::NextPrimary,
            "all" => Target::All,
            "each" => Target::Each,
            other => {
                return Err(format!(
                    "unknown target `{other}`: expected one of one, minority, majority, primary, backup, next-primary, \
                     all, each, or a list of node names like [n1, n3]"
                ))
            }
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Target::One => "one",
            Target::Minority => "minority",
            Target::Majority => "majority",
            Target::Primary => "primary",
            Target::Backup => "backup",
            Target::NextPrimary => "next-primary",
            Target::All => "all",
            Target::Each => "each",
            Target::Nodes(names) => return write!(f, "[{}]", names.join(", ")),
            Target::Except { of, except } => return write!(f, "{of} except [{}]", except.join(", ")),
        };
        f.write_str(name)
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Target::Nodes(names) => names.serialize(s),
            Target::Except { of, except } => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", &of.to_string())?;
                map.serialize_entry("except", except)?;
                map.end()
            }
            other => s.collect_str(other),
        }
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TargetVisitor;
        impl<'de> serde::de::Visitor<'de> for TargetVisitor {
            type Value = Target;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a target role (one, minority, majority, primary, backup, next-primary, all, each), a list of node \
                     names, or a role less some nodes ({role: backup, except: [n3]})",
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Target, A::Error> {
                let (mut role, mut except) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "role" => role = Some(map.next_value::<String>()?),
                        "except" => except = Some(map.next_value::<Vec<String>>()?),
                        other => {
                            return Err(serde::de::Error::custom(format!(
                                "unknown field `{other}` of a target: write {{role: backup, except: [n3]}}"
                            )))
                        }
                    }
                }
                let role = role.ok_or_else(|| serde::de::Error::custom("a target with `except` needs its `role`"))?;
                let except = except.ok_or_else(|| {
                    serde::de::Error::custom("a target map is a role less some nodes: add `except: [n3]`")
                })?;
                Target::except(Target::parse_role(&role).map_err(serde::de::Error::custom)?, except)
                    .map_err(serde::de::Error::custom)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Target, E> {
                Target::parse_role(v).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Target, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    if parse_node_name(&name).is_none() {
                        return Err(serde::de::Error::custom(format!(
                            "`{name}` is not a node name: nodes are named n1, n2, ... nN"
                        )));
                    }
                    names.push(name);
                }
                if names.is_empty() {
                    return Err(serde::de::Error::custom("an empty node list targets nothing"));
                }
                Ok(Target::Nodes(names))
            }
        }
        d.deserialize_any(TargetVisitor)
    }
}

/// `n3` -> Some(2) (0-based index); anything else -> None.
pub fn parse_node_name(name: &str) -> Option<usize> {
    let number: usize = name.strip_prefix('n')?.parse().ok()?;
    number.checked_sub(1)
}

/// Node index (0-based) -> `n1..nN`.
pub fn node_name(index: usize) -> String {
    format!("n{}", index + 1)
}

/// One kind of targeted fault in a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetedFaultSpec {
    /// `kill` or `pause`.
    pub kind: ProcessFault,
    /// Who it hits (with its place in the plan, for errors about node names).
    pub targets: serde_saphyr::Spanned<Target>,
    /// How long the node stays down or paused, e.g. `1s..4s` (a membership change: how long a `replace` keeps the
    /// node out; `add` and `remove` take none).
    #[serde(default, skip_serializing_if = "MillisRange::is_zero")]
    pub duration: MillisRange,
    /// Relative frequency among the plan's faults (`2`, `0.5`).
    #[serde(default)]
    pub weight: Weight,
    /// `stop`, and `corrupt` with `stop: graceful`: how long the node gets to exit before SIGKILL (default 10 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace: Option<Millis>,
    /// `corrupt`: how the targets go down (`kill`, the default; `power-loss`; `graceful`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopHow>,
    /// `corrupt`: the cuts, in order (`files:` a file class of the adapter, such as `wal`, or a glob).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<SurgerySpec>,
    /// `clock`: a step of the node's clock, drawn from this signed range (`-30s..+30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bump: Option<OffsetRange>,
    /// `clock`: flip the node's clock between `+delta` and real time every `period`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strobe: Option<StrobeSpec>,
    /// `clock`: the node's clock rate, drawn from this range (`1.5x`, `0.5x..2x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<RateRange>,
    /// `membership`: `add`, `remove` or `replace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<MembershipChange>,
}

impl TargetedFaultSpec {
    /// What the fault carries beyond its kind (a clock fault's change is drawn later, [`FaultDetail::drawn`]).
    pub fn detail(&self) -> FaultDetail {
        FaultDetail {
            change: self.change,
            ..FaultDetail::new(self.grace, self.stop, &self.cuts)
        }
    }

    /// Its clock fields.
    pub fn clock_spec(&self) -> ClockSpec {
        ClockSpec {
            bump: self.bump,
            strobe: self.strobe,
            skew: self.skew,
        }
    }
}

/// Independent per-node crash/restart processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlapSpec {
    /// Mean time a node stays up between crashes (exponential).
    pub mean_up: Millis,
    /// Mean time a crashed node stays down (exponential).
    pub mean_down: Millis,
    /// Upper bound on one down time.
    pub max_down: Millis,
}

/// Quiet windows: nothing is faulted during them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StableSpec {
    /// A stable window starts every `every`.
    pub every: Millis,
    /// Length of each stable window.
    pub duration: Millis,
}

/// The process-fault part of a plan's nemesis.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessNemesisSpec {
    /// Mean gap between targeted faults (exponential); required when `faults` is not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Millis>,
    /// Targeted faults, chosen by weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<TargetedFaultSpec>,
    /// Per-node crash/restart flaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaps: Option<FlapSpec>,
    /// Stable periods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<StableSpec>,
    /// At most this many nodes down or paused at once by process faults (kill, pause, stop, power loss, corrupt;
    /// timed, triggered and rolling alike): a fault that would take more is skipped (recorded with why), a rolling
    /// fault waits its turn. Without it, overlapping faults may take any number down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_down: Option<usize>,
    /// Faults at fixed times, for scripted scenarios (they ignore stable periods).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script: Vec<ScriptedFaultSpec>,
}

/// One fault at a fixed time of the fault phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedFaultSpec {
    /// When it starts, from the start of the fault phase.
    pub at: Millis,
    /// `kill` or `pause`.
    pub kind: ProcessFault,
    /// Who it hits (roles are resolved when it starts).
    pub targets: serde_saphyr::Spanned<Target>,
    /// How long it lasts (a membership change: how long a `replace` keeps the node out; `add` and `remove` take
    /// none).
    #[serde(default, skip_serializing_if = "is_zero_millis")]
    pub duration: Millis,
    /// As in [`TargetedFaultSpec::grace`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace: Option<Millis>,
    /// As in [`TargetedFaultSpec::stop`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopHow>,
    /// As in [`TargetedFaultSpec::cuts`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<SurgerySpec>,
    /// As in [`TargetedFaultSpec::bump`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bump: Option<OffsetRange>,
    /// As in [`TargetedFaultSpec::strobe`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strobe: Option<StrobeSpec>,
    /// As in [`TargetedFaultSpec::skew`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<RateRange>,
    /// As in [`TargetedFaultSpec::change`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<MembershipChange>,
}

fn is_zero_millis(millis: &Millis) -> bool {
    millis.0 == 0
}

impl ScriptedFaultSpec {
    /// What the fault carries beyond its kind (a clock fault's change is drawn later, [`FaultDetail::drawn`]).
    pub fn detail(&self) -> FaultDetail {
        FaultDetail {
            change: self.change,
            ..FaultDetail::new(self.grace, self.stop, &self.cuts)
        }
    }

    /// Its clock fields.
    pub fn clock_spec(&self) -> ClockSpec {
        ClockSpec {
            bump: self.bump,
            strobe: self.strobe,
            skew: self.skew,
        }
    }
}

/// Which nodes a scheduled fault hits, resolved as far as the seed allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "resolve", content = "arg")]
pub enum Resolved {
    /// Fixed node indices.
    Nodes(Vec<usize>),
    /// The primary at fault start.
    Primary,
    /// The backup at position `pick % backups` at fault start.
    Backup(u64),
    /// The next view's primary at fault start.
    NextPrimary,
    /// Every one of these nodes in turn, in this order: a rolling fault ([`rolling`]).
    Each(Vec<usize>),
    /// A role resolved at fault start, never one of these nodes.
    Except(Box<Resolved>, Vec<usize>),
    /// A random set of this size among the current members (or, for a membership `add`, the spare nodes), drawn
    /// from `pick` when the fault starts: the faults of a cluster whose members change.
    Among {
        /// How many.
        size: SetSize,
        /// The draw.
        pick: u64,
    },
}

/// The size of a random set of nodes, relative to the nodes it is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SetSize {
    /// One node.
    One,
    /// At most (n-1)/2, at least one.
    Minority,
    /// n/2+1.
    Majority,
    /// Every one.
    All,
}

impl SetSize {
    /// How many of `n` nodes.
    pub fn of(self, n: usize) -> usize {
        match self {
            SetSize::One => 1.min(n),
            SetSize::Minority => ((n.saturating_sub(1)) / 2).max(1).min(n),
            SetSize::Majority => (n / 2 + 1).min(n),
            SetSize::All => n,
        }
    }
}

/// Where a scheduled fault came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A per-node flap.
    Flap,
    /// A targeted fault.
    Targeted,
    /// A scripted fault.
    Scripted,
    /// A fault a plan trigger fired on what it observed ([`crate::trigger`]).
    Triggered,
}

/// One fault of the schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScheduledFault {
    /// Position in the schedule.
    pub id: u64,
    /// Offset from the start of the fault phase.
    pub start_ms: u64,
    /// How long it lasts (a rolling fault: how long each node stays down).
    pub duration_ms: u64,
    /// What it does.
    pub kind: ProcessFault,
    /// The target as the plan wrote it.
    pub target: String,
    /// Its resolution.
    pub nodes: Resolved,
    /// Flap, targeted, scripted or triggered.
    pub source: Source,
    /// The plan trigger that fired it (triggered faults only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<u64>,
    /// What a `stop` or `corrupt` fault carries beyond its kind (empty for the others).
    #[serde(flatten)]
    pub detail: FaultDetail,
}

impl ScheduledFault {
    /// When it heals (a rolling fault: when its nominal span ends, waits for readiness not counted).
    pub fn end_ms(&self) -> u64 {
        self.start_ms + self.span_ms()
    }

    /// Whether it is a rolling fault (`targets: each`): applied by [`RollingFaults`], not the timed interpreter.
    pub fn is_rolling(&self) -> bool {
        matches!(self.nodes, Resolved::Each(_))
    }

    /// How long it lasts as scheduled: its duration, or for a rolling fault its duration once per node.
    pub fn span_ms(&self) -> u64 {
        match &self.nodes {
            Resolved::Each(order) => self.duration_ms * order.len().max(1) as u64,
            _ => self.duration_ms,
        }
    }

    /// Makes it last `span_ms` as scheduled (a rolling fault: each node gets its share, at least 1 ms).
    fn set_span_ms(&mut self, span_ms: u64) {
        self.duration_ms = match &self.nodes {
            Resolved::Each(order) => (span_ms / order.len().max(1) as u64).max(1),
            _ => span_ms,
        };
    }

    /// How it takes its targets down (`None`: a pause, a clock fault or a membership change, which do not).
    pub fn down_how(&self) -> Option<StopHow> {
        match self.kind {
            ProcessFault::Pause | ProcessFault::Clock | ProcessFault::Membership => None,
            ProcessFault::Kill => Some(StopHow::Kill),
            ProcessFault::PowerLoss => Some(StopHow::PowerLoss),
            ProcessFault::Stop => Some(StopHow::Graceful),
            ProcessFault::Corrupt => Some(self.detail.stop.unwrap_or(StopHow::Kill)),
        }
    }
}

/// The nodes a schedule's faults are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    /// Every node of the cluster (`n1..nN`).
    pub nodes: usize,
    /// The members change during the run (membership faults, or spare nodes): random targets are drawn when a fault
    /// starts, among the members of that moment ([`Resolved::Among`]), not when the schedule is made.
    pub dynamic: bool,
}

impl Pool {
    /// `nodes` nodes, all members throughout.
    pub fn fixed(nodes: usize) -> Pool {
        Pool { nodes, dynamic: false }
    }
}

/// Generates the fault schedule for `node_count` nodes over `phase_ms` from `rng`. Deterministic in the rng.
pub fn generate(
    spec: &ProcessNemesisSpec,
    node_count: usize,
    phase_ms: u64,
    rng: &mut impl Rng,
) -> Vec<ScheduledFault> {
    generate_in(spec, Pool::fixed(node_count), phase_ms, rng)
}

/// Generates the fault schedule for the nodes of `pool` over `phase_ms` from `rng`. Deterministic in the rng.
pub fn generate_in(spec: &ProcessNemesisSpec, pool: Pool, phase_ms: u64, rng: &mut impl Rng) -> Vec<ScheduledFault> {
    let node_count = pool.nodes;
    assert!(node_count > 0, "a schedule needs at least one node");
    let mut faults = Vec::new();
    if let Some(flaps) = &spec.flaps {
        for node in 0..node_count {
            let mut t = exponential(rng, flaps.mean_up.0);
            while t < phase_ms {
                let down = exponential(rng, flaps.mean_down.0).clamp(1, flaps.max_down.0.max(1));
                faults.push(ScheduledFault {
                    id: 0,
                    start_ms: t,
                    duration_ms: down,
                    kind: ProcessFault::Kill,
                    target: node_name(node),
                    nodes: Resolved::Nodes(vec![node]),
                    source: Source::Flap,
                    trigger: None,
                    detail: FaultDetail::default(),
                });
                t += down + exponential(rng, flaps.mean_up.0);
            }
        }
    }
    let weights: Vec<Weight> = spec.faults.iter().map(|f| f.weight).collect();
    if let (Some(interval), true) = (spec.interval, weights.iter().any(|w| w.get() > 0.0)) {
        let mut t = exponential(rng, interval.0);
        while t < phase_ms {
            let chosen = &spec.faults[Weight::choose(&weights, rng).expect("a weight > 0")];
            let duration = rng.gen_range(chosen.duration.min.0..=chosen.duration.max.0).max(1);
            let nodes = resolve(&chosen.targets.value, pool, rng);
            faults.push(ScheduledFault {
                id: 0,
                start_ms: t,
                duration_ms: duration,
                kind: chosen.kind,
                target: chosen.targets.value.to_string(),
                nodes,
                source: Source::Targeted,
                trigger: None,
                detail: chosen.detail().drawn(chosen.kind, &chosen.clock_spec(), rng),
            });
            t += exponential(rng, interval.0);
        }
    }
    let mut faults = fit_into_windows(faults, spec.stable.as_ref(), phase_ms);
    for scripted in &spec.script {
        let nodes = resolve(&scripted.targets.value, pool, rng);
        faults.push(ScheduledFault {
            id: 0,
            start_ms: scripted.at.0,
            duration_ms: scripted.duration.0.max(1),
            kind: scripted.kind,
            target: scripted.targets.value.to_string(),
            nodes,
            source: Source::Scripted,
            trigger: None,
            detail: scripted.detail().drawn(scripted.kind, &scripted.clock_spec(), rng),
        });
    }
    faults.retain(|f| f.start_ms < phase_ms);
    for fault in &mut faults {
        let span_ms = fault.span_ms().min(phase_ms - fault.start_ms);
        fault.set_span_ms(span_ms);
    }
    faults.sort_by_key(|f| (f.start_ms, f.end_ms()));
    for (id, fault) in faults.iter_mut().enumerate() {
        fault.id = id as u64;
    }
    faults
}

/// Exponentially distributed integer with the given mean (at least 1).
fn exponential(rng: &mut impl Rng, mean_ms: u64) -> u64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    ((-u.ln()) * mean_ms as f64).round().max(1.0) as u64
}

/// Resolves a target for `pool`: in a fixed pool as [`resolve_static`]; in a dynamic one a random set is drawn when
/// the fault starts, among the members of that moment.
pub(crate) fn resolve(target: &Target, pool: Pool, rng: &mut impl Rng) -> Resolved {
    let size = match target {
        _ if !pool.dynamic => return resolve_static(target, pool.nodes, rng),
        Target::One => SetSize::One,
        Target::Minority => SetSize::Minority,
        Target::Majority => SetSize::Majority,
        Target::All => SetSize::All,
        _ => return resolve_static(target, pool.nodes, rng),
    };
    Resolved::Among { size, pick: rng.gen() }
}

/// Resolves a target as far as `rng` allows: random sets are drawn now, roles when the fault starts.
pub(crate) fn resolve_static(target: &Target, n: usize, rng: &mut impl Rng) -> Resolved {
    let excepted: Vec<usize> = target
        .excepted()
        .iter()
        .filter_map(|name| parse_node_name(name))
        .collect();
    // The sizes are the cluster's (a minority of 5 is 2), drawn from the nodes not excepted.
    let mut random_set = |count: usize| {
        let mut all: Vec<usize> = (0..n).filter(|node| !excepted.contains(node)).collect();
        let count = count.min(all.len());
        for i in 0..count {
            let j = rng.gen_range(i..all.len());
            all.swap(i, j);
        }
        all.truncate(count);
        all.sort_unstable();
        Resolved::Nodes(all)
    };
    let at_start = |resolved: Resolved| {
        if excepted.is_empty() {
            resolved
        } else {
            Resolved::Except(Box::new(resolved), excepted.clone())
        }
    };
    match target.role() {
        Target::One => random_set(1),
        Target::Minority => random_set(((n - 1) / 2).max(1)),
        Target::Majority => random_set(n / 2 + 1),
        Target::All => Resolved::Nodes((0..n).filter(|node| !excepted.contains(node)).collect()),
        Target::Each => Resolved::Each((0..n).collect()),
        Target::Nodes(names) => Resolved::Nodes(names.iter().filter_map(|name| parse_node_name(name)).collect()),
        Target::Primary => at_start(Resolved::Primary),
        Target::Backup => at_start(Resolved::Backup(rng.gen())),
        Target::NextPrimary => at_start(Resolved::NextPrimary),
        Target::Except { .. } => unreachable!("`role()` is never an `except`"),
    }
}

/// `count` of `nodes`, drawn from `pick` (a seeded shuffle: the same pick and nodes give the same set), in node order.
fn draw(nodes: &[usize], count: usize, pick: u64) -> Vec<usize> {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(pick);
    let mut all = nodes.to_vec();
    for i in 0..count.min(all.len()) {
        let j = rng.gen_range(i..all.len());
        all.swap(i, j);
    }
    all.truncate(count.min(nodes.len()));
    all.sort_unstable();
    all
}

/// Cuts faults so none is active during a stable window or after the phase ends; drops those left empty.
fn fit_into_windows(faults: Vec<ScheduledFault>, stable: Option<&StableSpec>, phase_ms: u64) -> Vec<ScheduledFault> {
    faults
        .into_iter()
        .filter_map(|mut fault| {
            let mut end = fault.end_ms().min(phase_ms);
            if let Some(stable) = stable.filter(|s| s.every.0 > 0 && s.duration.0 > 0) {
                let window_start = stable_window_start(fault.start_ms, stable);
                if fault.start_ms >= window_start && fault.start_ms < window_start + stable.duration.0 {
                    return None; // starts inside a stable window
                }
                let next_window = window_start + stable.every.0;
                let next_window = if fault.start_ms < window_start {
                    window_start
                } else {
                    next_window
                };
                end = end.min(next_window);
            }
            (end > fault.start_ms).then(|| {
                fault.set_span_ms(end - fault.start_ms);
                fault
            })
        })
        .collect()
}

/// Start of the stable window at or before `t` (windows sit at the end of each `every` period).
fn stable_window_start(t: u64, stable: &StableSpec) -> u64 {
    let period_start = t / stable.every.0 * stable.every.0;
    period_start + stable.every.0.saturating_sub(stable.duration.0)
}

/// What the nemesis needs from the lab. The harness implements it; every method acts on nodes it spawned only.
#[allow(async_fn_in_trait)]
pub trait Lab: Sync {
    /// Number of nodes.
    fn node_count(&self) -> usize;
    /// Current primary, if the system can tell.
    async fn primary(&self) -> Option<usize>;
    /// The node that becomes primary in the next view, if the system can tell.
    async fn next_primary(&self) -> Option<usize>;
    /// SIGKILL the node; returns details to record (pid, signal).
    async fn kill(&self, node: usize) -> Result<Value, String>;
    /// Start a stopped node with its data dir; returns details to record (`Send`: a graceful stop's restart
    /// settles beside the schedule, as its stop does).
    fn start(&self, node: usize) -> impl std::future::Future<Output = Result<Value, String>> + Send;
    /// SIGSTOP the node.
    async fn pause(&self, node: usize) -> Result<Value, String>;
    /// SIGCONT the node.
    async fn resume(&self, node: usize) -> Result<Value, String>;
    /// Drops a killed node's unsynced writes (fault filesystem); returns what was lost, to record.
    async fn lose_unsynced(&self, node: usize) -> Result<Value, String>;
    /// Asks the node to stop (SIGTERM or its adapter's stop command), waits up to `grace` for it to exit, then
    /// SIGKILLs it; returns how it ended, to record (`ended`, `exit`, `after_ms`, `killed`). `Send`, because the
    /// timed schedule lets it settle beside its other faults instead of holding them for the grace.
    fn stop(
        &self,
        node: usize,
        grace: std::time::Duration,
    ) -> impl std::future::Future<Output = Result<Value, String>> + Send;
    /// Applies one cut to a stopped node's files (its `files:` a file class of the adapter or a glob), with the
    /// node's own surgeon (chunk snapshots live from one fault to a later one); returns the surgery record.
    fn cut(&self, node: usize, cut: &SurgerySpec) -> impl std::future::Future<Output = Result<Value, String>> + Send;
    /// Waits until a node a rolling fault just restarted is ready again: booted and, if a live cut damaged it,
    /// caught up with what the cluster held at the cut (as the history records it), within the lab's own bound.
    /// Returns what to record (how long it took), or why the node is not ready.
    async fn ready_again(&self, node: usize) -> Result<Value, String>;
    /// Moves the node's clock (`Some`, a clock fault starts) or returns it to real time (`None`, its heal), running or
    /// not (a node started later reads its clock as it is); returns details to record. A lab that cannot move clocks
    /// says so (plans with clock faults set up the labs that can, [`crate::clock`]).
    async fn clock(&self, node: usize, shift: Option<ClockShift>) -> Result<Value, String> {
        let _ = (node, shift);
        Err("this lab cannot move a node's clock".into())
    }
    /// The current members (every node, unless the lab's cluster changes who is one).
    fn members(&self) -> Vec<usize> {
        (0..self.node_count()).collect()
    }
    /// Adds `node` (a spare: prepared as a joiner and started) to the cluster, or removes it (and stops it), through
    /// the system's membership hooks; returns what to record (`outcome`, `members` after the step, ...). The lab
    /// learns the members from the system after the step, whatever its outcome.
    async fn change_membership(&self, step: MembershipStep, node: usize) -> Result<Value, String> {
        let _ = (step, node);
        Err("this lab cannot change who is a member".into())
    }
    /// Appends a nemesis event about `node` to the history.
    fn record(&self, name: Nemesis, node: usize, value: Value);
    /// Appends a nemesis event about no one node (a fault that was skipped) to the history.
    fn record_cluster(&self, name: Nemesis, value: Value);
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeState {
    Up,
    Down(u64),
    Paused(u64),
    /// Not a member: no fault takes it but a membership `add`.
    Out,
}

/// Which process fault holds each node, shared by every applier of process faults in one fault phase (the timed
/// schedule and the [triggers](crate::trigger)), so that neither kills or resumes a node the other holds. A fault
/// claims its nodes before it acts on them, so two appliers racing for a node never both take it.
#[derive(Debug, Clone)]
pub struct NodeHolds(
    std::sync::Arc<std::sync::Mutex<Vec<NodeState>>>,
    /// Which clock fault holds each node's clock (one at a time; independent of what holds its process).
    std::sync::Arc<std::sync::Mutex<Vec<Option<u64>>>>,
    /// The plan's `max_down`: at most this many nodes down or paused at once, by any applier sharing these holds.
    Option<usize>,
);

impl NodeHolds {
    /// Every one of `node_count` nodes up and free.
    pub fn new(node_count: usize) -> NodeHolds {
        NodeHolds::with_members(node_count, &(0..node_count).collect::<Vec<_>>())
    }

    /// `members` up and free, the other nodes of `node_count` out of the cluster (spares a membership `add` takes).
    pub fn with_members(node_count: usize, members: &[usize]) -> NodeHolds {
        let states = (0..node_count)
            .map(|node| {
                if members.contains(&node) {
                    NodeState::Up
                } else {
                    NodeState::Out
                }
            })
            .collect();
        NodeHolds(
            std::sync::Arc::new(std::sync::Mutex::new(states)),
            std::sync::Arc::new(std::sync::Mutex::new(vec![None; node_count])),
            None,
        )
    }

    /// These holds, keeping at most `max_down` nodes down or paused at once (none: no cap).
    pub fn with_max_down(self, max_down: Option<usize>) -> NodeHolds {
        NodeHolds(self.0, self.1, max_down)
    }

    /// Why taking `taking` more nodes down now would break the plan's `max_down`, if it would.
    fn over_cap(&self, states: &[NodeState], taking: usize) -> Option<String> {
        let cap = self.2?;
        let down: Vec<String> = states
            .iter()
            .enumerate()
            .filter(|(_, state)| matches!(state, NodeState::Down(_) | NodeState::Paused(_)))
            .map(|(node, _)| node_name(node))
            .collect();
        (down.len() + taking > cap).then(|| {
            let already = match down.as_slice() {
                [] => String::new(),
                [one] => format!(" ({one} is down or paused already)"),
                many => format!(" ({} are down or paused already)", many.join(", ")),
            };
            format!(
                "max_down: {cap} holds: {taking} more would make {} nodes down or paused at once{already}",
                down.len() + taking
            )
        })
    }

    /// Whether `node` is out of the cluster (not a member, and no membership change holds it).
    pub fn is_out(&self, node: usize) -> bool {
        self.lock().get(node) == Some(&NodeState::Out)
    }

    fn clocks(&self) -> std::sync::MutexGuard<'_, Vec<Option<u64>>> {
        self.1.lock().expect("clock holds lock")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<NodeState>> {
        self.0.lock().expect("node holds lock")
    }

    /// Whether no process fault holds `node`.
    pub fn is_free(&self, node: usize) -> bool {
        self.lock().get(node) == Some(&NodeState::Up)
    }
}

/// The process family of the timed interpreter: applies its schedule's faults to a lab, keeping track of which fault
/// holds which node, so overlapping faults never double-kill or resume a node another fault still holds.
pub struct ProcessFaults<'a, L> {
    lab: &'a L,
    schedule: &'a [ScheduledFault],
    states: NodeHolds,
    /// fault id -> nodes it actually affected.
    holding: BTreeMap<u64, (ProcessFault, Vec<usize>)>,
    /// Graceful stops asked for: each waits out the node's grace, then the fault's end, then restarts the node,
    /// all beside the schedule ([`ProcessFaults::settle_next`]), so a 10 s grace never holds a pause due 2 s later.
    /// (In a mutex only to be `Sync`, as the appliers' `&self` methods need across their awaits; always reached
    /// through `&mut self`, never locked.)
    settling: std::sync::Mutex<FuturesUnordered<BoxFuture<'a, Settled>>>,
    /// fault id -> how many of its graceful stops are still settling.
    unsettled: BTreeMap<u64, usize>,
    /// fault id -> the signal that its graceful stops' window is over (their nodes may be restarted).
    ends: BTreeMap<u64, tokio::sync::watch::Sender<bool>>,
}

/// A graceful stop that ended: whose, on which node, and whether the node went down.
struct Settled {
    fault_id: u64,
    node: usize,
    went_down: bool,
}

impl<L: Lab> TimedFault for ProcessFaults<'_, L> {
    fn windows(&self) -> Vec<Window> {
        let window = |fault: &ScheduledFault| Window {
            start_ms: fault.start_ms,
            end_ms: fault.end_ms(),
        };
        self.schedule.iter().map(window).collect()
    }

    async fn start(&mut self, position: usize) -> bool {
        let schedule = self.schedule;
        let fault = &schedule[position];
        if let Err(reason) = self.try_start(fault).await {
            // A scheduled fault that did nothing is part of what the run did: in the history, the report and the
            // coverage, not lost. (A trigger records its own skips in its `trigger` event.)
            let value = json!({"fault_id": fault.id, "family": "process", "kind": fault.kind, "target": fault.target,
                               "source": fault.source, "reason": reason});
            self.lab.record_cluster(Nemesis::FaultSkipped, value);
        }
        self.holding.contains_key(&fault.id)
    }

    async fn stop(&mut self, position: usize) {
        self.end_fault(self.schedule[position].id).await;
    }

    async fn heal(&mut self, position: usize) {
        let fault_id = self.schedule[position].id;
        self.end_fault(fault_id).await;
        self.settle_all_of(fault_id).await;
    }

    async fn background(&mut self) {
        self.settle_next().await
    }

    async fn settle(&mut self) {
        self.finish().await
    }
}

impl<'a, L: Lab> ProcessFaults<'a, L> {
    /// `schedule` on `lab`, all nodes up.
    pub fn new(lab: &'a L, schedule: &'a [ScheduledFault]) -> ProcessFaults<'a, L> {
        ProcessFaults::shared(lab, schedule, NodeHolds::new(lab.node_count()))
    }

    /// `schedule` on `lab`, sharing `holds` with the phase's other appliers of process faults.
    pub fn shared(lab: &'a L, schedule: &'a [ScheduledFault], holds: NodeHolds) -> ProcessFaults<'a, L> {
        ProcessFaults {
            lab,
            schedule,
            states: holds,
            holding: BTreeMap::new(),
            settling: std::sync::Mutex::new(FuturesUnordered::new()),
            unsettled: BTreeMap::new(),
            ends: BTreeMap::new(),
        }
    }

    fn settling_mut(&mut self) -> &mut FuturesUnordered<BoxFuture<'a, Settled>> {
        self.settling
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until every graceful stop has settled: its node down and, its window over, restarted.
    pub async fn finish(&mut self) {
        while let Some(settled) = self.settling_mut().next().await {
            self.take_settled(settled);
        }
    }

    /// Waits for the next graceful stop to end and takes it in (a node that did not go down is free again); pending
    /// forever while none is settling, so a caller can race it against its own timers.
    pub async fn settle_next(&mut self) {
        match self.settling_mut().next().await {
            Some(settled) => self.take_settled(settled),
            None => std::future::pending().await,
        }
    }

    fn take_settled(
        &mut self,
        Settled {
            fault_id,
            node,
            went_down,
        }: Settled,
    ) {
        if let Some(count) = self.unsettled.get_mut(&fault_id) {
            *count -= 1;
            if *count == 0 {
                self.unsettled.remove(&fault_id);
                self.ends.remove(&fault_id);
            }
        }
        if went_down {
            return; // restarted by its own settling, which freed the node
        }
        if let Some((_, nodes)) = self.holding.get_mut(&fault_id) {
            nodes.retain(|&held| held != node);
            if nodes.is_empty() {
                self.holding.remove(&fault_id);
            }
        }
    }

    /// Waits until every graceful stop of `fault_id` has settled (its nodes restarted).
    async fn settle_all_of(&mut self, fault_id: u64) {
        while self.unsettled.contains_key(&fault_id) {
            match self.settling_mut().next().await {
                Some(settled) => self.take_settled(settled),
                None => break,
            }
        }
    }

    /// Asks `node` to stop gracefully for `fault`. The stop (a `corrupt`'s cuts after it) settles in the background,
    /// recorded when the node has gone down; once the fault's window is over too, the same settling restarts it.
    fn stop_gracefully(&mut self, fault: &ScheduledFault, node: usize) {
        let (lab, states) = (self.lab, self.states.clone());
        let fault = fault.clone();
        *self.unsettled.entry(fault.id).or_default() += 1;
        let mut ended = self
            .ends
            .entry(fault.id)
            .or_insert_with(|| tokio::sync::watch::channel(false).0)
            .subscribe();
        self.settling_mut().push(Box::pin(async move {
            let result = lab.stop(node, fault.detail.grace_duration()).await;
            let mut value = fault_value(&fault);
            let went_down = result.is_ok();
            match result {
                Ok(details) => merge(&mut value, details),
                Err(error) => value["error"] = Value::from(error),
            }
            lab.record(fault.kind.start_name(), node, value);
            if !went_down {
                states.lock()[node] = NodeState::Up;
                return Settled {
                    fault_id: fault.id,
                    node,
                    went_down,
                };
            }
            if fault.kind == ProcessFault::Corrupt {
                cut_files(lab, &fault, node).await;
            }
            // The window's end (a closed channel: the applier is gone, and the final phase restarts every node).
            if ended.wait_for(|ended| *ended).await.is_ok() {
                let mut value = json!({"fault_id": fault.id});
                match lab.start(node).await {
                    Ok(details) => merge(&mut value, details),
                    Err(error) => value["error"] = Value::from(error),
                }
                states.lock()[node] = NodeState::Up;
                lab.record(fault.kind.stop_name(), node, value);
            }
            Settled {
                fault_id: fault.id,
                node,
                went_down,
            }
        }));
    }

    /// Whether the fault `fault_id` holds at least one node now.
    pub fn holds(&self, fault_id: u64) -> bool {
        self.holding.contains_key(&fault_id)
    }

    /// Starts `fault` (from the schedule or not) on its free targets and records what it did to each.
    pub async fn start_fault(&mut self, fault: &ScheduledFault) {
        let _ = self.try_start(fault).await;
    }

    /// [`ProcessFaults::start_fault`], or why it touched no node at all (its role target resolved to no node, or
    /// every target is held by another fault), for the caller to record.
    async fn try_start(&mut self, fault: &ScheduledFault) -> Result<(), String> {
        let lab = self.lab;
        let candidates = self.candidates(fault).await;
        if fault.kind == ProcessFault::Membership {
            // A membership change waits a while for its target (a primary being elected, a member another fault
            // holds) and records its own skip.
            self.start_membership(fault, candidates.unwrap_or_default()).await;
            return Ok(());
        }
        let candidates = candidates?;
        if fault.kind == ProcessFault::Clock {
            return self.start_clock(fault, candidates).await;
        }
        let mut affected = Vec::new();
        let claimed = match fault.kind {
            ProcessFault::Pause => NodeState::Paused(fault.id),
            _ => NodeState::Down(fault.id),
        };
        let free: Vec<usize> = {
            let mut states = self.states.lock();
            let free: Vec<usize> = candidates
                .into_iter()
                .filter(|&node| states.get(node) == Some(&NodeState::Up))
                .collect();
            if free.is_empty() {
                return Err(format!("{}: every target is held by another fault", fault.target));
            }
            if let Some(why) = self.states.over_cap(&states, free.len()) {
                return Err(format!("{}: {why}", fault.target));
            }
            for &node in &free {
                states[node] = claimed;
            }
            free
        };
        let down = fault.down_how();
        // A power loss hits its targets at the same instant: kill them all before any loses its unsynced data.
        let mut killed = BTreeMap::new();
        if down == Some(StopHow::PowerLoss) {
            for &node in &free {
                killed.insert(node, lab.kill(node).await);
            }
        }
        for node in free {
            let result = match down {
                None => lab.pause(node).await,
                Some(StopHow::Kill) => lab.kill(node).await,
                Some(StopHow::Graceful) => {
                    self.stop_gracefully(fault, node);
                    affected.push(node);
                    continue;
                }
                Some(StopHow::PowerLoss) => {
                    lose_after_kill(lab, node, killed.remove(&node).expect("killed above")).await
                }
            };
            let mut value = fault_value(fault);
            let went_down = result.is_ok();
            match result {
                Ok(details) => {
                    merge(&mut value, details);
                    affected.push(node);
                }
                Err(error) => {
                    self.states.lock()[node] = NodeState::Up;
                    value["error"] = Value::from(error);
                }
            }
            lab.record(fault.kind.start_name(), node, value);
            if went_down && fault.kind == ProcessFault::Corrupt {
                cut_files(lab, fault, node).await;
            }
        }
        if !affected.is_empty() {
            self.holding.insert(fault.id, (fault.kind, affected));
        }
        Ok(())
    }

    /// The nodes `fault`'s target resolves to now (random ones among the members of the moment), less the nodes it
    /// excepts; or why none.
    async fn candidates(&self, fault: &ScheduledFault) -> Result<Vec<usize>, String> {
        let lab = self.lab;
        let (resolved, excepted) = match &fault.nodes {
            Resolved::Except(role, excepted) => (role.as_ref(), excepted.as_slice()),
            other => (other, &[][..]),
        };
        let mut candidates = match resolved {
            Resolved::Nodes(nodes) => nodes.clone(),
            Resolved::Primary => match lab.primary().await {
                Some(primary) => vec![primary],
                None => return Err(format!("{}: no primary known", fault.target)),
            },
            Resolved::NextPrimary => match lab.next_primary().await {
                Some(next) => vec![next],
                None => return Err(format!("{}: no next primary known", fault.target)),
            },
            // Not the interpreter's: `split_rolling` hands rolling faults to `RollingFaults`, which never calls this.
            Resolved::Each(_) | Resolved::Except(..) => {
                debug_assert!(
                    false,
                    "a rolling or nested fault reached the timed interpreter: {fault:?}"
                );
                Vec::new()
            }
            Resolved::Backup(pick) => {
                // Drawn among the members that are backups and not excepted: "a backup other than n3" is one whenever
                // there is one, and a spare is no backup.
                let primary = lab.primary().await;
                let backups: Vec<usize> = lab
                    .members()
                    .into_iter()
                    .filter(|&n| Some(n) != primary && !excepted.contains(&n))
                    .collect();
                if backups.is_empty() {
                    return Err(format!("{}: no backup to pick", fault.target));
                }
                backups
                    .get(*pick as usize % backups.len().max(1))
                    .copied()
                    .into_iter()
                    .collect()
            }
            Resolved::Among { size, pick } => {
                let members = lab.members();
                let among: Vec<usize> = if fault.detail.change == Some(MembershipChange::Add) {
                    (0..lab.node_count()).filter(|node| !members.contains(node)).collect()
                } else {
                    members
                };
                draw(&among, size.of(among.len()), *pick)
            }
        };
        let resolved_to = candidates.clone();
        candidates.retain(|node| !excepted.contains(node));
        if candidates.is_empty() && !resolved_to.is_empty() {
            let names: Vec<String> = resolved_to.iter().map(|&node| node_name(node)).collect();
            return Err(format!(
                "{}: it resolved to {}, which is excepted",
                fault.target,
                names.join(", ")
            ));
        }
        Ok(candidates)
    }

    /// Ends the fault `fault_id` if it holds nodes: restarts or resumes them and records it (a graceful stop's
    /// nodes are restarted by its settling, once they have gone down: [`ProcessFaults::finish`] waits for that).
    pub async fn end_fault(&mut self, fault_id: u64) {
        let lab = self.lab;
        let Some((kind, nodes)) = self.holding.remove(&fault_id) else {
            return;
        };
        // Graceful stops restart their nodes themselves once they have gone down: tell them the window is over.
        if let Some(end) = self.ends.get(&fault_id) {
            let _ = end.send(true);
            return;
        }
        if kind == ProcessFault::Clock {
            return self.heal_clocks(fault_id, nodes).await;
        }
        if kind == ProcessFault::Membership {
            return self.end_membership(fault_id, nodes).await;
        }
        for node in nodes {
            let result = match kind {
                ProcessFault::Pause => lab.resume(node).await,
                _ => lab.start(node).await,
            };
            let mut value = json!({"fault_id": fault_id});
            match result {
                Ok(details) => merge(&mut value, details),
                Err(error) => value["error"] = Value::from(error),
            }
            self.states.lock()[node] = NodeState::Up;
            lab.record(kind.stop_name(), node, value);
        }
    }
}

/// What the event that takes a node down records of its fault: its id, target and source (and trigger), and for
/// `corrupt` what a replay needs to do it again (how the node went down, the cuts as the plan wrote them).
fn fault_value(fault: &ScheduledFault) -> Value {
    let mut value = json!({"fault_id": fault.id, "target": fault.target, "source": fault.source});
    if let Some(trigger) = fault.trigger {
        value["trigger"] = Value::from(trigger);
    }
    if fault.kind == ProcessFault::Corrupt {
        value["stop"] = json!(fault.down_how());
        value["cuts"] = json!(fault.detail.cuts);
    }
    if let Some(shift) = fault.detail.clock {
        value["clock"] = json!(shift);
    }
    value
}

/// The second half of a power loss: once `node` is killed (`killed`, what its kill recorded), drops what it had not
/// fsynced; what was lost joins the record.
async fn lose_after_kill<L: Lab>(lab: &L, node: usize, killed: Result<Value, String>) -> Result<Value, String> {
    let mut details = killed?;
    let lost = lab.lose_unsynced(node).await?;
    merge(&mut details, json!({"lost": lost}));
    Ok(details)
}

/// Applies `fault`'s cuts to `node` (down), in order, each recorded as a `disk-surgery` event of the fault (as the
/// final phase records its cuts, so the checks read both alike).
async fn cut_files<L: Lab>(lab: &L, fault: &ScheduledFault, node: usize) {
    for cut in &fault.detail.cuts {
        let value = match lab.cut(node, cut).await {
            Ok(record) => json!({"fault_id": fault.id, "surgery": record}),
            Err(error) => json!({"fault_id": fault.id, "op": cut_op(cut), "error": error}),
        };
        lab.record(Nemesis::DiskSurgery, node, value);
    }
}

/// A cut's op as plans write it (`truncate-tail`, ...), for the record of a cut that failed.
fn cut_op(cut: &SurgerySpec) -> String {
    serde_json::to_value(cut)
        .ok()
        .and_then(|v| v.get("op").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

fn merge(into: &mut Value, details: Value) {
    if let (Some(into), Value::Object(details)) = (into.as_object_mut(), details) {
        into.extend(details);
    }
}

#[cfg(test)]
mod tests;
