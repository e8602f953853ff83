//! Network nemesis: a plan's partition and link faults, a seeded schedule of them, and the network family of the
//! [timed interpreter](crate::interpreter), which applies and heals them through a [`Network`] and records each start
//! and stop in the history.
//!
//! Partitions come one at a time (a grudge replaces the previous one, as in Jepsen): after an exponentially
//! distributed gap (mean `interval`) a shape is chosen by weight and held for a duration drawn from its range, then
//! healed. Link faults are an independent stream (mean gap `link_interval`) and may overlap partitions and each other;
//! on one link, a fault of a kind already held there is skipped. Shapes and links are drawn at generation time, so
//! the schedule is seed-determined, except `isolate-primary`, resolved when it starts. Every fault heals before the
//! phase ends, and the interpreter heals what is still active when a run stops early.

use super::grudge::{Grudge, Link};
use super::link_fault::{BackendKind, LinkFault, LinkFaultKind};
use super::shape::{isolate, Shape, SplitCover};
use super::Network;
use crate::interpreter::{TimedFault, Window};
use crate::units::{Millis, MillisRange, Weight};
use faultline_workloads::history::Nemesis;
use rand::Rng;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;

/// One partition fault of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionFaultSpec {
    /// The shape (`random-halves`, `isolate-one`, `isolate-primary`, `split-members`, `majorities-ring`, `bridge`,
    /// `one-way`).
    pub shape: Shape,
    /// How long it lasts, e.g. `2s..6s`.
    pub duration: MillisRange,
    /// Relative frequency among the plan's partitions (`2`, `0.5`).
    #[serde(default)]
    pub weight: Weight,
}

/// One link fault of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFaultSpec {
    /// What happens to the links, e.g. `{kind: delay, latency: 100ms, jitter: 20ms}`.
    pub fault: LinkFault,
    /// Which links: `one` (a random directed link), `node` (every link to and from a random node), `all`, or a list
    /// like `[n1->n2, n2->n1]`.
    #[serde(default)]
    pub links: LinkTarget,
    /// How long it lasts.
    pub duration: MillisRange,
    /// Relative frequency among the plan's link faults (`2`, `0.5`).
    #[serde(default)]
    pub weight: Weight,
}

/// Which directed links a link fault hits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LinkTarget {
    /// One random directed link.
    #[default]
    One,
    /// Every link to and from one random node (a slow or flaky node).
    Node,
    /// Every directed link.
    All,
    /// These links.
    Links(Vec<Link>),
}

impl fmt::Display for LinkTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkTarget::One => f.write_str("one"),
            LinkTarget::Node => f.write_str("node"),
            LinkTarget::All => f.write_str("all"),
            LinkTarget::Links(links) => {
                let names: Vec<String> = links.iter().map(Link::to_string).collect();
                write!(f, "[{}]", names.join(", "))
            }
        }
    }
}

impl Serialize for LinkTarget {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LinkTarget::Links(links) => links.serialize(s),
            other => s.collect_str(other),
        }
    }
}

impl<'de> Deserialize<'de> for LinkTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = LinkTarget;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`one`, `node`, `all`, or a list of links like [n1->n2]")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LinkTarget, E> {
                match v {
                    "one" => Ok(LinkTarget::One),
                    "node" => Ok(LinkTarget::Node),
                    "all" => Ok(LinkTarget::All),
                    other => Err(E::custom(format!(
                        "unknown link target `{other}`: expected one, node, all, or a list like [n1->n2]"
                    ))),
                }
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<LinkTarget, A::Error> {
                let mut links = Vec::new();
                while let Some(text) = seq.next_element::<String>()? {
                    links.push(Link::parse(&text).map_err(serde::de::Error::custom)?);
                }
                if links.is_empty() {
                    return Err(serde::de::Error::custom("an empty link list targets nothing"));
                }
                Ok(LinkTarget::Links(links))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// The network part of a plan's nemesis.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkNemesisSpec {
    /// Mean gap between partitions (exponential); required when `partitions` is not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Millis>,
    /// Partitions, chosen by weight, one at a time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<PartitionFaultSpec>,
    /// Mean gap between link faults (exponential); required when `links` is not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_interval: Option<Millis>,
    /// Link faults, chosen by weight; they may overlap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkFaultSpec>,
    /// Faults at fixed times, for scripted scenarios: cuts (`{at: 3s, cut: [n1->n2], duration: 300ms}`) and link
    /// faults (`{at: 3s, links: [n1->n2], fault: {kind: reset}, duration: 300ms}`). Scripted cuts must not overlap
    /// each other or random partitions (one partition is in force at a time); scripted link faults may overlap cuts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script: Vec<ScriptedNetworkFault>,
}

/// One network fault at a fixed time of the fault phase: either a cut or a link fault.
///
/// The two model different losses. A cut is a silent partition: what is sent meanwhile waits (in TCP, behind the
/// proxy) and a connection that lived through it is reset when the partition heals, so whether queued messages arrive
/// late or never depends on how the cut ends. A `reset` link fault drops at once: open connections on the link are
/// reset and new ones refused while it lasts, so every message sent over the link meanwhile is lost and nothing else
/// is held up (the other direction keeps flowing on its own connections).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedNetworkFault {
    /// When it starts, from the start of the fault phase.
    pub at: Millis,
    /// A cut: the directed links that stop delivering (`n1->n2`: n2 no longer hears n1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut: Vec<Link>,
    /// A link fault: the directed links it hits (with `fault`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// A link fault: what happens on `links`, e.g. `{kind: reset}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<LinkFault>,
    /// How long it lasts.
    pub duration: Millis,
    /// A cut replaces the partition in force instead of being skipped (a replay's cut: at this moment the recorded
    /// network was in exactly this grudge, whatever an earlier fault that lingers longer in the replay holds).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub takeover: bool,
}

impl ScriptedNetworkFault {
    /// What it does, for a cluster of `node_count` nodes (assumes a validated spec).
    fn action(&self, node_count: usize) -> NetworkAction {
        match &self.fault {
            Some(fault) => NetworkAction::Link {
                fault: fault.clone(),
                links: self.links.clone(),
            },
            None => {
                let mut grudge = Grudge::none(node_count);
                for &link in &self.cut {
                    grudge.cut(link);
                }
                NetworkAction::Partition {
                    shape: Shape::OneWay,
                    grudge: Some(grudge),
                }
            }
        }
    }

    fn validate(&self, node_count: usize, backend: BackendKind) -> Result<(), String> {
        const EITHER: &str = "a scripted network fault is either a cut (`cut: [n1->n2]`) or a link fault \
                              (`links: [n1->n2]` with `fault: {kind: reset}`)";
        let links = match (&self.fault, self.cut.is_empty(), self.links.is_empty()) {
            (None, false, true) => &self.cut,
            (Some(fault), true, false) => {
                fault.validate()?;
                backend.check(fault.kind())?;
                &self.links
            }
            _ => return Err(EITHER.into()),
        };
        if let Some(bad) = links.iter().find(|l| l.from >= node_count || l.to >= node_count) {
            return Err(format!(
                "scripted link {bad} is outside the cluster of {node_count} nodes"
            ));
        }
        if self.duration.0 == 0 {
            return Err("a scripted network fault needs a duration > 0".into());
        }
        Ok(())
    }
}

impl NetworkNemesisSpec {
    /// Whether the spec asks for anything.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty() && self.links.is_empty() && self.script.is_empty()
    }

    /// Checks the spec against the cluster size and the chosen backend, for plan load: every message says what to
    /// change.
    pub fn validate(&self, node_count: usize, backend: BackendKind) -> Result<(), String> {
        if !self.partitions.is_empty() && self.interval.is_none_or(|i| i.0 == 0) {
            return Err("network partitions need `interval` (mean gap between partitions, e.g. `10s`)".into());
        }
        if !self.links.is_empty() && self.link_interval.is_none_or(|i| i.0 == 0) {
            return Err("network link faults need `link_interval` (mean gap between link faults, e.g. `10s`)".into());
        }
        for partition in &self.partitions {
            if node_count < partition.shape.min_nodes() {
                return Err(format!(
                    "partition shape `{}` needs at least {} nodes; the cluster has {node_count}",
                    partition.shape,
                    partition.shape.min_nodes()
                ));
            }
        }
        for scripted in &self.script {
            scripted.validate(node_count, backend)?;
        }
        let mut cuts: Vec<&ScriptedNetworkFault> = self.script.iter().filter(|s| s.fault.is_none()).collect();
        cuts.sort_by_key(|s| s.at.0);
        if let Some(pair) = cuts
            .windows(2)
            .find(|pair| pair[0].at.0 + pair[0].duration.0 > pair[1].at.0 && !pair[1].takeover)
        {
            return Err(format!(
                "scripted cuts at {}ms and {}ms overlap: one partition is in force at a time (list both links in one \
                 cut, or give the later one `takeover: true` to replace the earlier)",
                pair[0].at.0, pair[1].at.0
            ));
        }
        for link in &self.links {
            link.fault.validate()?;
            backend.check(link.fault.kind())?;
            if node_count < 2 {
                return Err("link faults need at least 2 nodes".into());
            }
            if let LinkTarget::Links(links) = &link.links {
                if let Some(bad) = links.iter().find(|l| l.from >= node_count || l.to >= node_count) {
                    return Err(format!("link {bad} is outside the cluster of {node_count} nodes"));
                }
            }
        }
        Ok(())
    }
}

/// What a scheduled network fault does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum NetworkAction {
    /// Apply a grudge for the fault's duration, then heal.
    Partition {
        /// The plan's shape.
        shape: Shape,
        /// The grudge, or `None` for `isolate-primary` (resolved at start).
        grudge: Option<Grudge>,
    },
    /// Put a fault on links for the fault's duration, then clear it.
    Link {
        /// The fault.
        fault: LinkFault,
        /// The links it hits.
        links: Vec<Link>,
    },
}

/// One fault of the network schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduledNetworkFault {
    /// Position in the schedule.
    pub id: u64,
    /// Offset from the start of the fault phase.
    pub start_ms: u64,
    /// How long it lasts.
    pub duration_ms: u64,
    /// What it does.
    pub action: NetworkAction,
    /// A partition replaces the one in force instead of being skipped.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub takeover: bool,
}

impl ScheduledNetworkFault {
    /// When it heals.
    pub fn end_ms(&self) -> u64 {
        self.start_ms + self.duration_ms
    }
}

/// Generates the network schedule for `node_count` nodes over `phase_ms`. Deterministic in `rng` (use
/// `crate::rng::stream(seed, "network")`).
pub fn generate(
    spec: &NetworkNemesisSpec,
    node_count: usize,
    phase_ms: u64,
    rng: &mut impl Rng,
) -> Vec<ScheduledNetworkFault> {
    assert!(node_count > 0, "a schedule needs at least one node");
    let mut faults = Vec::new();
    if let (Some(interval), false) = (spec.interval, spec.partitions.is_empty()) {
        let mut t = exponential(rng, interval.0);
        while t < phase_ms {
            let chosen = choose_weighted(&spec.partitions, |p| p.weight, rng);
            let duration = draw_duration(chosen.duration, rng).min(phase_ms - t);
            let grudge = chosen.shape.draw(node_count, rng);
            faults.push(scheduled(
                t,
                duration,
                NetworkAction::Partition {
                    shape: chosen.shape,
                    grudge,
                },
            ));
            t += duration + exponential(rng, interval.0);
        }
    }
    if let (Some(interval), false) = (spec.link_interval, spec.links.is_empty() || node_count < 2) {
        let mut t = exponential(rng, interval.0);
        while t < phase_ms {
            let chosen = choose_weighted(&spec.links, |l| l.weight, rng);
            let duration = draw_duration(chosen.duration, rng).min(phase_ms - t);
            let links = resolve_links(&chosen.links, node_count, rng);
            faults.push(scheduled(
                t,
                duration,
                NetworkAction::Link {
                    fault: chosen.fault.clone(),
                    links,
                },
            ));
            t += exponential(rng, interval.0);
        }
    }
    for scripted in spec.script.iter().filter(|s| s.at.0 < phase_ms) {
        let duration = scripted.duration.0.min(phase_ms - scripted.at.0);
        let mut fault = scheduled(scripted.at.0, duration, scripted.action(node_count));
        fault.takeover = scripted.takeover && scripted.fault.is_none();
        faults.push(fault);
    }
    faults.retain(|f| f.duration_ms > 0);
    faults.sort_by_key(|f| (f.start_ms, f.end_ms()));
    for (id, fault) in faults.iter_mut().enumerate() {
        fault.id = id as u64;
    }
    faults
}

fn scheduled(start_ms: u64, duration_ms: u64, action: NetworkAction) -> ScheduledNetworkFault {
    ScheduledNetworkFault {
        id: 0,
        start_ms,
        duration_ms,
        action,
        takeover: false,
    }
}

fn draw_duration(range: MillisRange, rng: &mut impl Rng) -> u64 {
    rng.gen_range(range.min.0..=range.max.0).max(1)
}

fn choose_weighted<'a, T>(items: &'a [T], weight: impl Fn(&T) -> Weight, rng: &mut impl Rng) -> &'a T {
    let weights: Vec<Weight> = items.iter().map(weight).collect();
    match Weight::choose(&weights, rng) {
        Some(index) => &items[index],
        None => &items[rng.gen_range(0..items.len())],
    }
}

/// Exponentially distributed integer with the given mean (at least 1).
fn exponential(rng: &mut impl Rng, mean_ms: u64) -> u64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    ((-u.ln()) * mean_ms as f64).round().max(1.0) as u64
}

pub(crate) fn resolve_links(target: &LinkTarget, n: usize, rng: &mut impl Rng) -> Vec<Link> {
    match target {
        LinkTarget::One => {
            let from = rng.gen_range(0..n);
            let to = (from + rng.gen_range(1..n)) % n;
            vec![Link::new(from, to)]
        }
        LinkTarget::Node => {
            let node = rng.gen_range(0..n);
            (0..n)
                .filter(|&other| other != node)
                .flat_map(|other| [Link::new(node, other), Link::new(other, node)])
                .collect()
        }
        LinkTarget::All => (0..n)
            .flat_map(|from| (0..n).filter(move |&to| to != from).map(move |to| Link::new(from, to)))
            .collect(),
        LinkTarget::Links(links) => links.clone(),
    }
}

/// What the network nemesis needs from the harness besides the [`Network`].
#[allow(async_fn_in_trait)]
pub trait NetworkLab {
    /// Current primary, if the system can tell (for `isolate-primary`).
    async fn primary(&self) -> Option<usize>;
    /// The members now (for `split-members`); every node by default (a cluster whose membership does not change).
    async fn members_now(&self, node_count: usize) -> Vec<usize> {
        (0..node_count).collect()
    }
    /// Appends a nemesis event (`partition-start`, `partition-stop`, `link-fault`, `link-heal`) to the history.
    fn record(&self, name: Nemesis, value: Value);
}

/// The network family of the timed interpreter: applies its schedule's faults through a [`Network`] and heals them.
pub struct NetworkFaults<'a, L> {
    network: &'a Network,
    lab: &'a L,
    schedule: &'a [ScheduledNetworkFault],
    /// The partition in force and the link holders, shared with the phase's other appliers.
    holds: NetworkHolds,
    /// fault id -> (fault, links it actually holds).
    held: BTreeMap<u64, (LinkFault, Vec<Link>)>,
}

/// What the network faults of one fault phase hold, shared by every applier (the timed schedule and the
/// [triggers](crate::trigger)): the partition in force (one at a time: a partition while another holds the network
/// is skipped) and which fault holds each (link, kind). A fault claims before it acts, so two appliers never both
/// take the network or a link.
#[derive(Debug, Clone, Default)]
pub struct NetworkHolds(std::sync::Arc<std::sync::Mutex<NetworkHeld>>);

#[derive(Debug, Default)]
struct NetworkHeld {
    /// The partition in force: fault id and shape.
    partition: Option<(u64, Shape)>,
    /// (link, kind) -> fault id holding it.
    holders: BTreeMap<(Link, LinkFaultKind), u64>,
    /// The run's seed, for the shapes drawn when they start (`split-members`).
    seed: u64,
    /// The `split-members` splits the phase has used, per member set.
    splits: SplitCover,
}

impl NetworkHolds {
    /// Nothing held yet; `seed` (the run's) draws the shapes resolved when they start.
    pub fn seeded(seed: u64) -> NetworkHolds {
        NetworkHolds(std::sync::Arc::new(std::sync::Mutex::new(NetworkHeld {
            seed,
            ..NetworkHeld::default()
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, NetworkHeld> {
        self.0.lock().expect("network holds lock")
    }

    /// Whether some fault's partition is in force.
    pub fn partitioned(&self) -> bool {
        self.lock().partition.is_some()
    }
}

impl<L: NetworkLab> TimedFault for NetworkFaults<'_, L> {
    fn windows(&self) -> Vec<Window> {
        let window = |fault: &ScheduledNetworkFault| Window {
            start_ms: fault.start_ms,
            end_ms: fault.end_ms(),
        };
        self.schedule.iter().map(window).collect()
    }

    async fn start(&mut self, position: usize) -> bool {
        let schedule = self.schedule;
        let fault = &schedule[position];
        let started = if fault.takeover {
            self.try_take_over_partition(fault).await
        } else {
            self.try_start(fault).await
        };
        match started {
            Ok(holds) => holds,
            Err(reason) => {
                // A scheduled fault that did nothing is part of what the run did: in the history, the report and
                // the coverage, not only in a log line. (A trigger records its own skips in its `trigger` event.)
                let mut value = json!({"fault_id": fault.id, "family": "network", "reason": reason});
                if let NetworkAction::Partition { shape, .. } = &fault.action {
                    value["shape"] = json!(shape);
                }
                self.lab.record(Nemesis::FaultSkipped, value);
                false
            }
        }
    }

    async fn stop(&mut self, position: usize) {
        self.stop_fault(self.schedule[position].id).await;
    }
}

impl<'a, L: NetworkLab> NetworkFaults<'a, L> {
    /// `schedule` on `network`, nothing in force.
    pub fn new(network: &'a Network, lab: &'a L, schedule: &'a [ScheduledNetworkFault]) -> NetworkFaults<'a, L> {
        NetworkFaults::shared(network, lab, schedule, NetworkHolds::default())
    }

    /// `schedule` through `network`, sharing `holds` with the phase's other appliers of network faults.
    pub fn shared(
        network: &'a Network,
        lab: &'a L,
        schedule: &'a [ScheduledNetworkFault],
        holds: NetworkHolds,
    ) -> NetworkFaults<'a, L> {
        NetworkFaults {
            network,
            lab,
            schedule,
            holds,
            held: BTreeMap::new(),
        }
    }

    /// Starts `fault` (from the schedule or not), records it, and returns whether it now holds something to stop.
    pub async fn start_fault(&mut self, fault: &ScheduledNetworkFault) -> bool {
        self.try_start(fault).await.unwrap_or(false)
    }

    /// [`NetworkFaults::start_fault`], or why nothing was even tried (no primary to isolate, a partition already in
    /// force), for the caller to record.
    async fn try_start(&mut self, fault: &ScheduledNetworkFault) -> Result<bool, String> {
        let (network, lab) = (self.network, self.lab);
        match &fault.action {
            NetworkAction::Partition { shape, grudge } => {
                let grudge = self.grudge_of(fault.id, *shape, grudge.as_ref()).await?;
                {
                    let mut held = self.holds.lock();
                    if let Some((holder, _)) = held.partition {
                        tracing::info!(fault_id = fault.id, holder, "a partition is already in force; skipped");
                        return Err(format!("a partition (fault {holder}) is already in force"));
                    }
                    held.partition = Some((fault.id, *shape));
                }
                let mut value = json!({
                    "fault_id": fault.id, "shape": shape, "grudge": grudge, "label": grudge.to_string(),
                    "backend": network.kind(),
                });
                let applied = match network.apply(&grudge).await {
                    Ok(()) => true,
                    Err(error) => {
                        self.holds.lock().partition = None;
                        value["error"] = Value::from(error.to_string());
                        false
                    }
                };
                lab.record(Nemesis::PartitionStart, value);
                Ok(applied)
            }
            NetworkAction::Link {
                fault: link_fault,
                links,
            } => {
                self.start_link_fault(fault.id, link_fault, links).await;
                Ok(self.held.contains_key(&fault.id))
            }
        }
    }

    /// Starts the partition `fault` (its grudge resolved), replacing the partition in force if there is one: the old
    /// one's `partition-stop` (with `replaced_by`) and the new one's `partition-start` (with `replaced`) are recorded
    /// at the same instant, and the network goes from one grudge to the other without healing in between. The fault
    /// that held the old partition no longer holds anything: its own stop does nothing.
    pub async fn take_over_partition(&mut self, fault: &ScheduledNetworkFault) -> bool {
        self.try_take_over_partition(fault).await.unwrap_or(false)
    }

    /// [`NetworkFaults::take_over_partition`], or why nothing was tried (no primary to isolate).
    async fn try_take_over_partition(&mut self, fault: &ScheduledNetworkFault) -> Result<bool, String> {
        let (network, lab) = (self.network, self.lab);
        let NetworkAction::Partition { shape, grudge } = &fault.action else {
            return self.try_start(fault).await;
        };
        let grudge = self.grudge_of(fault.id, *shape, grudge.as_ref()).await?;
        let replaced = self.holds.lock().partition.replace((fault.id, *shape));
        let mut value = json!({
            "fault_id": fault.id, "shape": shape, "grudge": grudge, "label": grudge.to_string(),
            "backend": network.kind(),
        });
        let applied = match network.apply(&grudge).await {
            Ok(()) => true,
            Err(error) => {
                self.holds.lock().partition = None;
                value["error"] = Value::from(error.to_string());
                false
            }
        };
        if let Some((old, old_shape)) = replaced {
            lab.record(
                Nemesis::PartitionStop,
                json!({"fault_id": old, "shape": old_shape, "replaced_by": fault.id}),
            );
            value["replaced"] = Value::from(old);
        }
        lab.record(Nemesis::PartitionStart, value);
        Ok(applied)
    }

    /// A partition's grudge: drawn when scheduled, or resolved now: (split-members) the members now split in
    /// halves, drawn by the run's seed and the fault's id among the splits of those members the phase has not used
    /// yet ([`SplitCover`]), or (isolate-primary) the primary's isolation; why not when no primary is known.
    async fn grudge_of(&self, fault_id: u64, shape: Shape, grudge: Option<&Grudge>) -> Result<Grudge, String> {
        let node_count = self.network.node_count();
        match grudge {
            Some(grudge) => Ok(grudge.clone()),
            None if shape == Shape::SplitMembers => {
                let members = self.lab.members_now(node_count).await;
                let mut held = self.holds.lock();
                let mut rng = crate::rng::stream(held.seed ^ fault_id.rotate_left(32), "split-members");
                Ok(held.splits.split(node_count, &members, &mut rng))
            }
            None => match self.lab.primary().await {
                Some(primary) => Ok(isolate(self.network.node_count(), primary)),
                None => {
                    tracing::warn!(fault_id, "isolate-primary: no primary known; skipped");
                    Err("isolate-primary: no primary known".into())
                }
            },
        }
    }

    async fn start_link_fault(&mut self, fault_id: u64, fault: &LinkFault, links: &[Link]) {
        let (network, lab) = (self.network, self.lab);
        let mut applied = Vec::new();
        let mut errors = Vec::new();
        for &link in links {
            {
                let mut held = self.holds.lock();
                if held.holders.contains_key(&(link, fault.kind())) {
                    continue; // another fault of this kind holds the link
                }
                held.holders.insert((link, fault.kind()), fault_id);
            }
            match network.set_link_fault(link, fault.clone()).await {
                Ok(()) => applied.push(link),
                Err(error) => {
                    self.holds.lock().holders.remove(&(link, fault.kind()));
                    errors.push(format!("{link}: {error}"));
                }
            }
        }
        if applied.is_empty() && errors.is_empty() {
            return;
        }
        let mut value = json!({"fault_id": fault_id, "fault": fault, "links": applied, "backend": network.kind()});
        if !errors.is_empty() {
            value["error"] = Value::from(errors.join("; "));
        }
        if !applied.is_empty() {
            self.held.insert(fault_id, (fault.clone(), applied));
        }
        lab.record(Nemesis::LinkFault, value);
    }

    /// Stops the fault `fault_id` if it holds something (heals its partition or clears its link faults) and records it.
    pub async fn stop_fault(&mut self, fault_id: u64) {
        let (network, lab) = (self.network, self.lab);
        let partition = self.holds.lock().partition;
        if let Some((id, shape)) = partition {
            if id == fault_id {
                let mut value = json!({"fault_id": fault_id, "shape": shape});
                let healed = Grudge::none(network.node_count());
                match network.heal().await {
                    Ok(()) => {
                        value["grudge"] = serde_json::to_value(&healed).expect("a grudge serializes");
                        value["label"] = Value::from(healed.to_string());
                    }
                    Err(error) => value["error"] = Value::from(error.to_string()),
                }
                // Forget it even on error (the event records the error): the next partition's grudge replaces it.
                self.holds.lock().partition = None;
                lab.record(Nemesis::PartitionStop, value);
                return;
            }
        }
        let Some((fault, links)) = self.held.remove(&fault_id) else {
            return;
        };
        let mut errors = Vec::new();
        for &link in &links {
            self.holds.lock().holders.remove(&(link, fault.kind()));
            if let Err(error) = network.clear_link_fault(link, fault.kind()).await {
                errors.push(format!("{link}: {error}"));
            }
        }
        let mut value = json!({"fault_id": fault_id, "kind": fault.kind(), "links": links});
        if !errors.is_empty() {
            value["error"] = Value::from(errors.join("; "));
        }
        lab.record(Nemesis::LinkHeal, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interpreter::{Families, NoFaults};
    use crate::rng::stream;
    use std::time::Duration;

    fn spec() -> NetworkNemesisSpec {
        serde_saphyr::from_str(
            "interval: 5s\n\
             partitions:\n\
             - {shape: random-halves, duration: 1s..4s, weight: 2}\n\
             - {shape: isolate-primary, duration: 2s}\n\
             - {shape: one-way, duration: 1s..3s}\n\
             link_interval: 7s\n\
             links:\n\
             - {fault: {kind: delay, latency: 100ms, jitter: 20ms}, links: node, duration: 2s..5s}\n\
             - {fault: {kind: corrupt, probability: 0.001}, links: [n1->n2], duration: 1s}\n",
        )
        .unwrap()
    }

    #[test]
    fn given_a_plan_when_parsed_should_accept_shapes_and_links_and_reject_typos() {
        let spec = spec();
        assert_eq!(spec.partitions.len(), 3);
        assert_eq!(spec.links[1].links, LinkTarget::Links(vec![Link::new(0, 1)]));
        assert!(serde_saphyr::from_str::<NetworkNemesisSpec>("intervall: 5s").is_err());
        assert!(serde_saphyr::from_str::<NetworkNemesisSpec>(
            "interval: 1s\npartitions: [{shape: isolate-majority, duration: 1s}]"
        )
        .is_err());
    }

    #[test]
    fn given_scripted_cuts_when_generated_should_cut_exactly_those_links_at_their_times() {
        let spec: NetworkNemesisSpec = serde_saphyr::from_str(
            "script:\n- {at: 3s, cut: [n1->n2], duration: 300ms}\n- {at: 3300ms, cut: [n2->n1], duration: 900ms}\n",
        )
        .unwrap();
        assert!(spec.validate(3, BackendKind::Netns).is_ok());
        let schedule = generate(&spec, 3, 10_000, &mut stream(1, "network"));
        assert_eq!(schedule.len(), 2);
        assert_eq!((schedule[0].start_ms, schedule[0].end_ms()), (3000, 3300));
        let NetworkAction::Partition {
            grudge: Some(grudge), ..
        } = &schedule[0].action
        else {
            panic!()
        };
        assert!(!grudge.hears(1, 0), "n2 no longer hears n1");
        assert!(grudge.hears(0, 1), "n1 still hears n2");
        assert!(
            spec.validate(1, BackendKind::Proxy).is_err(),
            "links outside the cluster are rejected"
        );
    }

    #[test]
    fn given_a_scripted_cut_that_takes_over_when_validated_should_allow_the_overlap_and_keep_the_takeover() {
        let spec: NetworkNemesisSpec = serde_saphyr::from_str(
            "script:\n- {at: 3s, cut: [n1->n2], duration: 1s}\n- {at: 3500ms, cut: [n2->n1], duration: 1s, takeover: true}\n",
        )
        .unwrap();
        assert_eq!(spec.validate(3, BackendKind::Proxy), Ok(()));
        let schedule = generate(&spec, 3, 10_000, &mut stream(1, "network"));
        let takeovers: Vec<bool> = schedule.iter().map(|f| f.takeover).collect();
        assert_eq!(takeovers, [false, true]);
        let without: NetworkNemesisSpec = serde_saphyr::from_str(
            "script:\n- {at: 3s, cut: [n1->n2], duration: 1s}\n- {at: 3500ms, cut: [n2->n1], duration: 1s}\n",
        )
        .unwrap();
        let error = without.validate(3, BackendKind::Proxy).unwrap_err();
        assert!(error.contains("takeover: true"), "{error}");
    }

    #[test]
    fn given_a_scripted_link_fault_when_generated_should_hold_it_on_exactly_those_links_at_its_time() {
        let spec: NetworkNemesisSpec = serde_saphyr::from_str(
            "script:\n- {at: 3s, links: [n1->n2], fault: {kind: reset}, duration: 300ms}\n\
             - {at: 3200ms, cut: [n2->n1], duration: 1s}\n",
        )
        .unwrap();
        assert!(spec.validate(3, BackendKind::Proxy).is_ok());
        assert!(spec.validate(3, BackendKind::Netns).is_ok());
        let schedule = generate(&spec, 3, 10_000, &mut stream(1, "network"));
        assert_eq!(schedule.len(), 2);
        assert_eq!((schedule[0].start_ms, schedule[0].end_ms()), (3000, 3300));
        assert_eq!(
            schedule[0].action,
            NetworkAction::Link {
                fault: LinkFault::Reset,
                links: vec![Link::new(0, 1)]
            }
        );
        assert!(matches!(schedule[1].action, NetworkAction::Partition { .. }));
    }

    #[test]
    fn given_a_malformed_script_when_validated_should_say_what_is_wrong() {
        let invalid = [
            "script:\n- {at: 3s, cut: [n1->n2], links: [n1->n2], fault: {kind: reset}, duration: 1s}\n",
            "script:\n- {at: 3s, links: [n1->n2], duration: 1s}\n",
            "script:\n- {at: 3s, fault: {kind: reset}, duration: 1s}\n",
            "script:\n- {at: 3s, links: [n1->n2], fault: {kind: loss, percent: 50}, duration: 1s}\n",
            "script:\n- {at: 3s, cut: [n1->n2], duration: 0ms}\n",
            "script:\n- {at: 3s, cut: [n1->n2], duration: 1s}\n- {at: 3500ms, cut: [n2->n1], duration: 1s}\n",
        ];
        for text in invalid {
            let spec: NetworkNemesisSpec = serde_saphyr::from_str(text).unwrap();
            assert!(spec.validate(3, BackendKind::Proxy).is_err(), "{text}");
        }
    }

    #[test]
    fn given_a_backend_when_validating_should_reject_faults_it_cannot_inject() {
        assert!(spec().validate(3, BackendKind::Proxy).is_ok());
        let error = spec().validate(3, BackendKind::Netns).unwrap_err();
        assert!(error.contains("delay"), "{error}");
        let mut no_interval = spec();
        no_interval.interval = None;
        assert!(no_interval
            .validate(3, BackendKind::Proxy)
            .unwrap_err()
            .contains("interval"));
    }

    #[test]
    fn given_a_seed_when_generated_should_be_deterministic_sequential_and_healed_by_the_end() {
        let a = generate(&spec(), 5, 120_000, &mut stream(3, "network"));
        let b = generate(&spec(), 5, 120_000, &mut stream(3, "network"));
        let c = generate(&spec(), 5, 120_000, &mut stream(4, "network"));
        assert!(a.len() > 10, "{a:?}");
        assert_eq!(a, b);
        assert_ne!(a, c);
        let partitions: Vec<&ScheduledNetworkFault> = a
            .iter()
            .filter(|f| matches!(f.action, NetworkAction::Partition { .. }))
            .collect();
        for pair in partitions.windows(2) {
            assert!(pair[0].end_ms() <= pair[1].start_ms, "partitions overlap: {pair:?}");
        }
        assert!(a.iter().all(|f| f.end_ms() <= 120_000 && f.duration_ms > 0));
        assert!(a.iter().any(|f| matches!(f.action, NetworkAction::Link { .. })));
    }

    /// A network that only records, standing in for a backend (the proxy backend with no proxies).
    struct RecordingLab {
        events: std::sync::Mutex<Vec<(String, Value)>>,
        primary: Option<usize>,
        members: Option<Vec<usize>>,
    }

    impl NetworkLab for RecordingLab {
        async fn primary(&self) -> Option<usize> {
            self.primary
        }
        async fn members_now(&self, node_count: usize) -> Vec<usize> {
            self.members.clone().unwrap_or_else(|| (0..node_count).collect())
        }
        fn record(&self, name: Nemesis, value: Value) {
            self.events.lock().unwrap().push((name.to_string(), value));
        }
    }

    /// Runs `schedule` (ids by position) for 1 s through a proxy mesh of 3 nodes whose lab reports `primary`; returns
    /// the recorded events and the network.
    async fn run_for_a_second(
        schedule: Vec<ScheduledNetworkFault>,
        primary: Option<usize>,
    ) -> (Vec<(String, Value)>, Network) {
        let mesh = super::super::proxy::ProxyMesh::start(3, vec![], Default::default(), 1)
            .await
            .unwrap();
        let network = Network::Proxy(std::sync::Arc::new(mesh));
        let schedule: Vec<_> = schedule
            .into_iter()
            .enumerate()
            .map(|(i, mut f)| {
                f.id = i as u64;
                f
            })
            .collect();
        let lab = RecordingLab {
            events: Default::default(),
            primary,
            members: None,
        };
        let (tx, rx) = tokio::sync::watch::channel(false);
        let stopper = async {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            let _ = tx.send(true); // the interpreter may be done already: nothing held
        };
        let mut families = Families {
            process: NoFaults,
            network: NetworkFaults::new(&network, &lab, &schedule),
            io: NoFaults,
        };
        tokio::join!(families.run(tokio::time::Instant::now(), rx), stopper);
        let events = lab.events.lock().unwrap().clone();
        (events, network)
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_schedule_when_run_should_record_starts_and_stops_and_heal_everything() {
        let schedule = vec![
            scheduled(
                10,
                100,
                NetworkAction::Partition {
                    shape: Shape::IsolatePrimary,
                    grudge: None,
                },
            ),
            scheduled(
                20,
                10_000,
                NetworkAction::Link {
                    fault: LinkFault::Delay {
                        latency: Millis(5),
                        jitter: Millis(0),
                    },
                    links: vec![Link::new(0, 1)],
                },
            ),
        ];
        let (events, network) = run_for_a_second(schedule, Some(2)).await;
        let names: Vec<&str> = events.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(names, ["partition-start", "link-fault", "partition-stop", "link-heal"]);
        assert_eq!(events[0].1["label"], "{n1,n2} | {n3}");
        assert_eq!(events[0].1["grudge"]["n3"], json!(["n1", "n2"]));
        let Network::Proxy(mesh) = &network else { unreachable!() };
        assert!(mesh.grudge().is_empty(), "everything healed");
    }

    #[tokio::test(start_paused = true)]
    async fn given_a_partition_in_force_when_another_takes_over_should_replace_it_in_one_step() {
        let mesh = super::super::proxy::ProxyMesh::start(3, vec![], Default::default(), 1)
            .await
            .unwrap();
        let network = Network::Proxy(std::sync::Arc::new(mesh));
        let lab = RecordingLab {
            events: Default::default(),
            primary: Some(2),
            members: None,
        };
        let holds = NetworkHolds::default();
        let mut faults = NetworkFaults::shared(&network, &lab, &[], holds.clone());
        let partition = |id: u64, node: usize| ScheduledNetworkFault {
            id,
            start_ms: 0,
            duration_ms: 1000,
            action: NetworkAction::Partition {
                shape: Shape::IsolateOne,
                grudge: Some(isolate(3, node)),
            },
            takeover: false,
        };
        assert!(faults.start_fault(&partition(1, 0)).await);
        assert!(!faults.start_fault(&partition(2, 1)).await, "one partition at a time");
        assert!(faults.take_over_partition(&partition(3, 1)).await);
        let Network::Proxy(mesh) = &network else { unreachable!() };
        assert_eq!(mesh.grudge(), isolate(3, 1), "n2 is cut off, n1 is back");
        // The replaced fault's own stop does nothing; the new holder's heals.
        faults.stop_fault(1).await;
        assert_eq!(mesh.grudge(), isolate(3, 1));
        faults.stop_fault(3).await;
        assert!(mesh.grudge().is_empty());
        let events = lab.events.lock().unwrap().clone();
        let shown: Vec<String> = events.iter().map(|(f, v)| format!("{f} {}", v["fault_id"])).collect();
        assert_eq!(
            shown,
            [
                "partition-start 1",
                "partition-stop 1",
                "partition-start 3",
                "partition-stop 3"
            ]
        );
        assert_eq!(events[1].1["replaced_by"], 3);
        assert_eq!(events[2].1["replaced"], 1);
        // With nothing in force, a takeover is an ordinary partition.
        assert!(faults.take_over_partition(&partition(4, 2)).await);
        assert!(lab.events.lock().unwrap().last().unwrap().1.get("replaced").is_none());
        // isolate-primary finds its grudge when it starts (the lab's primary is n3), also when it takes over.
        let isolate_primary = ScheduledNetworkFault {
            id: 5,
            start_ms: 0,
            duration_ms: 1000,
            action: NetworkAction::Partition {
                shape: Shape::IsolatePrimary,
                grudge: None,
            },
            takeover: false,
        };
        faults.stop_fault(4).await;
        assert!(faults.start_fault(&partition(6, 0)).await);
        assert!(faults.take_over_partition(&isolate_primary).await);
        assert_eq!(mesh.grudge(), isolate(3, 2), "the primary n3 is cut off, n1 is back");
        assert_eq!(lab.events.lock().unwrap().last().unwrap().1["replaced"], 6);
    }

    /// An `isolate-primary` when no node is primary does nothing, and says so in the history (`fault-skipped`, with
    /// its reason), not only in a log line.
    #[tokio::test(start_paused = true)]
    async fn given_isolate_primary_without_a_primary_when_run_should_record_a_skipped_fault() {
        let isolate_primary = NetworkAction::Partition {
            shape: Shape::IsolatePrimary,
            grudge: None,
        };
        let (events, _) = run_for_a_second(vec![scheduled(10, 100, isolate_primary)], None).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].0, "fault-skipped");
        assert_eq!(events[0].1["shape"], "isolate-primary");
        assert_eq!(events[0].1["reason"], "isolate-primary: no primary known");
    }

    /// `split-members` splits the members of the moment (the lab's, here n1 and n3 of three nodes) when it starts:
    /// one against the other, the non-member n2 on the second side.
    #[tokio::test(start_paused = true)]
    async fn given_split_members_when_started_should_cut_the_lab_members_apart() {
        let mesh = super::super::proxy::ProxyMesh::start(3, vec![], Default::default(), 1)
            .await
            .unwrap();
        let network = Network::Proxy(std::sync::Arc::new(mesh));
        let lab = RecordingLab {
            events: Default::default(),
            primary: None,
            members: Some(vec![0, 2]),
        };
        let split = ScheduledNetworkFault {
            id: 7,
            start_ms: 0,
            duration_ms: 1000,
            action: NetworkAction::Partition {
                shape: Shape::SplitMembers,
                grudge: None,
            },
            takeover: false,
        };
        let schedule = [split.clone()];
        let mut faults = NetworkFaults::new(&network, &lab, &schedule);
        assert!(faults.start_fault(&split).await);
        let Network::Proxy(mesh) = &network else { unreachable!() };
        let grudge = mesh.grudge();
        assert!(
            !grudge.hears(0, 2) && !grudge.hears(2, 0),
            "the members apart: {grudge}"
        );
        assert_ne!(
            grudge.hears(1, 0),
            grudge.hears(1, 2),
            "n2 with exactly one member: {grudge}"
        );
        let with_n2 = if grudge.hears(1, 0) { 0 } else { 2 };
        assert!(
            grudge.hears(1, with_n2) && grudge.hears(with_n2, 1),
            "n2 on one side: {grudge}"
        );
        let events = lab.events.lock().unwrap().clone();
        assert_eq!(events[0].1["shape"], "split-members");
    }
}
