//! The trigger engine: it keeps a model of the cluster from the [`Fact`]s the harness feeds it, decides which
//! conditions hold, draws whether and when each firing acts, and starts and ends the triggered faults under the
//! shared holds.

use super::spec::{
    Condition, NodeFilter, TriggerLinks, TriggerShape, TriggerSpec, TriggerTarget, TriggeredKind, DEFAULT_COOLDOWN_MS,
    DEFAULT_MAX_FIRES,
};
use crate::fusefs::FsFaults;
use crate::io::IoLab;
use crate::network::grudge::Link;
use crate::network::schedule::{
    resolve_links, NetworkAction, NetworkFaults, NetworkHolds, NetworkLab, ScheduledNetworkFault,
};
use crate::network::shape::{isolate, Shape};
use crate::network::Network;
use crate::process::{
    node_name, resolve, resolve_static, Lab, NodeHolds, Pool, ProcessFault, ProcessFaults, Resolved, ScheduledFault,
    Source, StableSpec, Target,
};
use faultline_workloads::history::Nemesis;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

/// A status older than this is not evidence of anything (the node may be paused or cut off).
pub const FRESH: Duration = Duration::from_secs(1);
/// Triggered faults get ids from here up, apart from the timed schedule's.
pub const TRIGGER_FAULT_ID_BASE: u64 = 1_000_000;

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
    /// Whether some trigger waits for a template (each log line is then masked, once).
    wants_templates: bool,
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
            wants_templates: specs.iter().any(|s| matches!(s.when, Condition::Template(_))),
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
                // A graceful stop a firing asked for ends beside the next firings, not before them.
                _ = self.process.settle_next() => {}
            }
        }
        for (_, active) in std::mem::take(&mut self.active) {
            self.end(active).await;
        }
        self.process.finish().await;
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
                // Masked once per line, and only when some trigger waits for a template.
                let template = self
                    .wants_templates
                    .then(|| faultline_workloads::logmask::log_line_key(line, None));
                for (trigger, spec) in self.specs.iter().enumerate() {
                    let fires = match &spec.when {
                        Condition::Repairing(filter) => filter.admits(*node) && patterns.contains(&"repairing"),
                        Condition::Repaired(filter) => filter.admits(*node) && patterns.contains(&"repaired"),
                        Condition::Log(log) => {
                            log.node.admits(*node)
                                && self.states[trigger].regex.as_ref().is_some_and(|r| r.is_match(line))
                        }
                        Condition::Template(wanted) => {
                            wanted.node.admits(*node) && template.as_deref() == Some(wanted.pattern.as_str())
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

    /// When the next `otherwise` or `at` comes, of a trigger that has applied no fault and is not about to.
    fn otherwise_due(&self, phase_start: Instant) -> Option<Instant> {
        self.specs
            .iter()
            .zip(&self.states)
            .filter(|(_, state)| !state.otherwise_done && state.fires == 0 && state.pending.is_none())
            .filter_map(|(spec, _)| timed(spec).map(|at| phase_start + Duration::from_millis(at.0)))
            .min()
    }

    /// Applies every firing that is due and ends every triggered fault whose time is up.
    async fn due(&mut self, phase_start: Instant) {
        let now = Instant::now();
        let mut at_offsets = Vec::new();
        for (trigger, (spec, state)) in self.specs.iter().zip(&mut self.states).enumerate() {
            let Some(at) = timed(spec).map(|at| phase_start + Duration::from_millis(at.0)) else {
                continue;
            };
            // A firing still pending decides first: if it is skipped, the fallback comes right after.
            if state.otherwise_done || at > now || state.pending.is_some() {
                continue;
            }
            state.otherwise_done = true;
            if matches!(spec.when, Condition::At(_)) {
                // Its condition: the offset came (probability and delay apply as to any observation).
                at_offsets.push(Held {
                    trigger,
                    subject: None,
                    observed: at,
                });
            } else if state.fires == 0 {
                state.pending = Some(Pending {
                    due: now,
                    delay_ms: 0,
                    subject: spec.when.node(),
                    observed: now,
                    otherwise: true,
                });
            }
        }
        for held in at_offsets {
            self.hold(held);
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
            TriggeredKind::Kill
            | TriggeredKind::Pause
            | TriggeredKind::PowerLoss
            | TriggeredKind::Stop
            | TriggeredKind::Corrupt
            | TriggeredKind::Clock
            | TriggeredKind::Membership => {
                let target = spec.targets.clone().unwrap_or(TriggerTarget::Subject);
                let members = self.lab.members();
                // A cluster whose members change draws random targets among the members of this moment.
                let pool = Pool {
                    nodes: n,
                    dynamic: spec.kind == TriggeredKind::Membership || members.len() < n,
                };
                let nodes = match &target {
                    TriggerTarget::Target(Target::Each) => {
                        return Err(
                            "a rolling fault (`targets: each`) cannot be triggered (refused at plan check)".into(),
                        )
                    }
                    TriggerTarget::Subject => Resolved::Nodes(vec![need_subject()?]),
                    TriggerTarget::NotSubject => {
                        let subject = need_subject()?;
                        Resolved::Nodes(members.iter().copied().filter(|&node| node != subject).collect())
                    }
                    TriggerTarget::OtherBackup => {
                        // A backup the engine knows is up, when there is one: right after a line (a view change
                        // just started) the old primary may be down, and a pick among all backups would often
                        // choose it and skip the fault.
                        let subject = need_subject()?;
                        let primary = Lab::primary(self.lab).await;
                        let up: Vec<usize> = members
                            .iter()
                            .copied()
                            .filter(|&node| node != subject && Some(node) != primary && self.nodes[node].up)
                            .collect();
                        match up.get(self.rng.gen_range(0..up.len().max(1))) {
                            Some(&node) => Resolved::Nodes(vec![node]),
                            None => {
                                Resolved::Except(Box::new(resolve(&Target::Backup, pool, &mut self.rng)), vec![subject])
                            }
                        }
                    }
                    TriggerTarget::Target(target) => resolve(target, pool, &mut self.rng),
                };
                let kind = spec.process_fault().expect("a process fault kind");
                let fault = ScheduledFault {
                    id,
                    start_ms: at_ms,
                    duration_ms,
                    kind,
                    target: target.to_string(),
                    nodes,
                    source: Source::Triggered,
                    trigger: Some(trigger as u64),
                    detail: spec.detail().drawn(kind, &spec.clock_spec(), &mut self.rng),
                };
                self.process.start_fault(&fault).await;
                if kind == ProcessFault::Membership {
                    // An add or remove is done when it returns (its outcome, or why it was skipped, is recorded); a
                    // replace holds its node out until it ends.
                    if self.process.holds(id) {
                        self.active.push((end, Active::Process(id)));
                    }
                    return Ok(id);
                }
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
                    TriggerTarget::OtherBackup => {
                        return Err("I/O faults take `subject`, `not-subject`, a random set or named nodes".into())
                    }
                    TriggerTarget::Target(target) => match resolve_static(target, n, &mut self.rng) {
                        Resolved::Nodes(nodes) => nodes,
                        _ => return Err("I/O faults take `subject`, `not-subject`, a random set or named nodes".into()),
                    },
                };
                let faults = spec.faults.clone().expect("validated");
                for &node in &nodes {
                    let mut value = json!({"fault_id": id, "trigger": trigger, "faults": faults});
                    if let Err(e) = self.lab.set_io_faults(node, &faults).await {
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
                    if let Err(e) = self.lab.set_io_faults(node, &FsFaults::default()).await {
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

/// The offset at which `spec` acts without an observation: its `at`, or its `otherwise`.
fn timed(spec: &TriggerSpec) -> Option<crate::units::Millis> {
    match spec.when {
        Condition::At(at) => Some(at),
        _ => spec.otherwise,
    }
}
