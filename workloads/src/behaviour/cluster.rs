//! The cluster as the history tells it, abstracted: each node's liveness, role and standing, and the faults in force
//! with the role of the node each hit. Values (ops, views, commit points, node names, fault ids) are left out on
//! purpose: two runs that differ only in them did the same thing, and a state space over values never saturates, so
//! no state would ever be *new* in a way that means something.
//!
//! A node's abstract status is `LIVE:ROLE[+FLAGS]`, or `down`:
//! - `LIVE`: `up`, or `paused` (a nemesis `pause` until its `resume`). A node is `down` from a successful nemesis
//!   `kill`, `power-loss`, `stop` or `corrupt`, or a lifecycle `crashed`, `boot-refused`, `boot-timeout` or `kill`
//!   (the restart-all), until its next successful lifecycle or nemesis `start`;
//! - `ROLE`: the role of its latest `status` observation since it (re)started (`primary`, `backup`, else `other`),
//!   `unknown` before its first;
//! - `FLAGS`: `lag` (its status says `lagging`), `old` (its view is below the newest view an up node reported: a
//!   stale primary or a backup that missed a view change), `cut` (the partition in force leaves it without a
//!   majority it can reach both ways), `part` (it lost some peers but still reaches a majority).
//!
//! The cluster's abstract state is its nodes' statuses sorted (node names do not matter: which node the schedule hit
//! is chance, not behaviour), e.g. `down up:backup+lag up:primary`.
//!
//! The fault context is the set of faults in force, each as `KIND@ROLE` with the role its node had when it was hit
//! (`kill@primary`, `pause@backup`, `clock-bump@primary`, `io-eio@backup`), `partition:SHAPE`, `link-KIND@ROLE` (the
//! node whose links it degrades, `some` when the links share no node) and `final` once the fault phase ended; sorted,
//! joined by `+`, or `calm` when nothing is in force.

use crate::history::{Event, EventKind, Lifecycle, Nemesis, Observation};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What the nemesis holds a node in: one entry per fault family (down, pause, clock, io), so one fault of each family
/// at a time, as the fault interpreter holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Hold {
    Down,
    Pause,
    Clock,
    Io,
}

/// One node as the history has told it so far.
#[derive(Debug, Clone, Default)]
struct Node {
    down: bool,
    paused: bool,
    /// The latest status since the node (re)started: role, lagging, view.
    role: Option<String>,
    lagging: bool,
    view: Option<u64>,
    /// Fault tokens holding it, by family.
    holds: BTreeMap<Hold, String>,
}

impl Node {
    fn role_name(&self) -> &str {
        if self.down {
            "down"
        } else {
            self.role.as_deref().unwrap_or("unknown")
        }
    }
}

/// The walk over a history: [`Cluster::apply`] each event in order, then read [`Cluster::state`] and
/// [`Cluster::context`].
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    nodes: BTreeMap<String, Node>,
    /// The partition in force: its shape and the links it cuts (either direction), as unordered node pairs.
    partition: Option<(String, BTreeSet<(String, String)>)>,
    /// Link faults in force by fault id: their tokens.
    links: BTreeMap<u64, String>,
    final_phase: bool,
}

impl Cluster {
    /// A cluster of no nodes yet: nodes join as the history names them.
    pub fn new() -> Cluster {
        Cluster::default()
    }

    /// Takes one history event into account.
    pub fn apply(&mut self, event: &Event) {
        let ok = succeeded(event);
        let name = event.node.clone();
        if event.kind == EventKind::Nemesis {
            self.nemesis(event, name.as_deref(), ok);
            return;
        }
        if event.is(Lifecycle::FaultPhaseEnd) {
            self.final_phase = true;
        }
        let Some(name) = name else { return };
        if !self.nodes.contains_key(&name) && !event.kind.is_client() {
            self.nodes.insert(name.clone(), Node::default());
        }
        let Some(node) = self.nodes.get_mut(&name) else { return };
        if event.is(Lifecycle::Start) && ok {
            restart(node);
        } else if [
            Lifecycle::Crashed,
            Lifecycle::BootRefused,
            Lifecycle::BootTimeout,
            Lifecycle::Kill,
        ]
        .iter()
        .any(|l| event.is(*l))
        {
            go_down(node);
        } else if event.is(Observation::Status) && !node.down {
            node.role = Some(role_of(&event.value));
            node.lagging = event.value["lagging"].as_bool() == Some(true);
            node.view = event.value["view"].as_u64();
        }
    }

    fn nemesis(&mut self, event: &Event, name: Option<&str>, ok: bool) {
        let Some(crate::history::Name::Nemesis(kind)) = event.name() else {
            return;
        };
        let fault_id = event.value["fault_id"].as_u64().unwrap_or(u64::MAX);
        match kind {
            Nemesis::PartitionStart if ok => self.partition = Some(partition_of(&event.value)),
            Nemesis::PartitionStop => self.partition = None,
            Nemesis::LinkFault if ok => {
                let kind = text(&event.value["fault"]["kind"]);
                let token = format!("link-{kind}@{}", self.link_target(event));
                self.links.insert(fault_id, token);
            }
            Nemesis::LinkHeal => {
                self.links.remove(&fault_id);
            }
            _ => {
                if let Some(name) = name {
                    self.node_fault(kind, event.f.as_str(), name, &event.value, ok);
                }
            }
        }
    }

    /// A fault on one node: it takes the node down, pauses it, moves its clock or fails its I/O, or ends one of those.
    fn node_fault(&mut self, kind: Nemesis, f: &str, name: &str, value: &Value, ok: bool) {
        let node = self.nodes.entry(name.to_string()).or_default();
        let token = |what: &str, node: &Node| format!("{what}@{}", node.role_name());
        match kind {
            Nemesis::Kill | Nemesis::PowerLoss | Nemesis::Stop | Nemesis::Corrupt if ok => {
                let token = token(f, node);
                go_down(node);
                node.holds.insert(Hold::Down, token);
            }
            Nemesis::Start if ok => restart(node),
            Nemesis::Pause if ok => {
                let token = token(f, node);
                node.paused = true;
                node.holds.insert(Hold::Pause, token);
            }
            Nemesis::Resume => {
                node.paused = false;
                node.holds.remove(&Hold::Pause);
            }
            Nemesis::Clock if ok => {
                let token = token(&format!("clock-{}", text(&value["clock"]["kind"])), node);
                node.holds.insert(Hold::Clock, token);
            }
            Nemesis::ClockHeal => {
                node.holds.remove(&Hold::Clock);
            }
            Nemesis::IoFaultStart if ok => {
                let kinds: Vec<&str> = value["faults"]
                    .as_object()
                    .map(|o| o.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                let token = token(&format!("io-{}", kinds.join("-")), node);
                node.holds.insert(Hold::Io, token);
            }
            Nemesis::IoFaultStop => {
                node.holds.remove(&Hold::Io);
            }
            _ => {}
        }
    }

    /// The role of the node every link of a link fault touches (`some` when they share none, or several do).
    fn link_target(&self, event: &Event) -> String {
        let links: Vec<(String, String)> = event.value["links"]
            .as_array()
            .map(|links| links.iter().filter_map(|l| l.as_str().and_then(link_ends)).collect())
            .unwrap_or_default();
        let common: Vec<&String> = self
            .nodes
            .keys()
            .filter(|n| !links.is_empty() && links.iter().all(|(a, b)| a == *n || b == *n))
            .collect();
        match common.as_slice() {
            [one] => self.nodes[*one].role_name().to_string(),
            _ => "some".to_string(),
        }
    }

    /// The cluster's abstract state (see the module docs).
    pub fn state(&self) -> String {
        let newest_view = self.nodes.values().filter(|n| !n.down).filter_map(|n| n.view).max();
        let mut statuses: Vec<String> = self
            .nodes
            .iter()
            .map(|(name, node)| self.status(name, node, newest_view))
            .collect();
        statuses.sort();
        statuses.join(" ")
    }

    /// The abstract status of the node named `name`, `down` for a node the history never named.
    pub fn node_status(&self, name: &str) -> String {
        let newest_view = self.nodes.values().filter(|n| !n.down).filter_map(|n| n.view).max();
        self.nodes
            .get(name)
            .map_or_else(|| "down".to_string(), |node| self.status(name, node, newest_view))
    }

    fn status(&self, name: &str, node: &Node, newest_view: Option<u64>) -> String {
        if node.down {
            return "down".to_string();
        }
        let mut text = format!("{}:{}", if node.paused { "paused" } else { "up" }, node.role_name());
        let mut flag = |f: &str| {
            text.push(if text.contains('+') { ',' } else { '+' });
            text.push_str(f);
        };
        if node.lagging {
            flag("lag");
        }
        if node.view.zip(newest_view).is_some_and(|(v, newest)| v < newest) {
            flag("old");
        }
        match self.reach(name) {
            Reach::All => {}
            Reach::Majority => flag("part"),
            Reach::Minority => flag("cut"),
        }
        text
    }

    /// How much of the cluster `name` reaches both ways under the partition in force.
    fn reach(&self, name: &str) -> Reach {
        let Some((_, cut)) = &self.partition else {
            return Reach::All;
        };
        let reached = self
            .nodes
            .keys()
            .filter(|other| *other == name || !cut.contains(&ordered(name, other)))
            .count();
        if reached == self.nodes.len() {
            Reach::All
        } else if reached > self.nodes.len() / 2 {
            Reach::Majority
        } else {
            Reach::Minority
        }
    }

    /// The faults in force (see the module docs).
    pub fn context(&self) -> String {
        let mut tokens: BTreeSet<&str> = self
            .nodes
            .values()
            .flat_map(|n| n.holds.values().map(String::as_str))
            .collect();
        tokens.extend(self.links.values().map(String::as_str));
        let partition = self.partition.as_ref().map(|(shape, _)| format!("partition:{shape}"));
        tokens.extend(partition.as_deref());
        if self.final_phase {
            tokens.insert("final");
        }
        if tokens.is_empty() {
            "calm".to_string()
        } else {
            tokens.into_iter().collect::<Vec<_>>().join("+")
        }
    }
}

enum Reach {
    All,
    Majority,
    Minority,
}

fn restart(node: &mut Node) {
    node.down = false;
    node.paused = false;
    node.role = None;
    node.lagging = false;
    node.view = None;
    node.holds.remove(&Hold::Down);
    node.holds.remove(&Hold::Pause);
}

fn go_down(node: &mut Node) {
    node.down = true;
    node.paused = false;
    node.role = None;
    node.lagging = false;
    node.view = None;
    node.holds.remove(&Hold::Pause);
}

/// `primary`, `backup` or `other`: the adapters' roles, with anything else folded into `other`.
fn role_of(status: &Value) -> String {
    match status["role"].as_str() {
        Some(role @ ("primary" | "backup")) => role.to_string(),
        _ => "other".to_string(),
    }
}

/// A partition's shape and the node pairs its grudge cuts in either direction.
fn partition_of(value: &Value) -> (String, BTreeSet<(String, String)>) {
    let mut cut = BTreeSet::new();
    if let Some(grudge) = value["grudge"].as_object() {
        for (node, dropped) in grudge {
            for other in dropped.as_array().into_iter().flatten().filter_map(Value::as_str) {
                cut.insert(ordered(node, other));
            }
        }
    }
    let shape = value["shape"].as_str().unwrap_or("cut").to_string();
    (shape, cut)
}

fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// `n1->n2` -> (`n1`, `n2`).
fn link_ends(link: &str) -> Option<(String, String)> {
    let (a, b) = link.split_once("->")?;
    Some((a.trim().to_string(), b.trim().to_string()))
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("?")
}

/// A fault or start that did not fail (a failed one changed nothing).
fn succeeded(event: &Event) -> bool {
    event.error.is_none() && event.value.get("error").is_none() && event.value["lost"].get("error").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Name;
    use serde_json::json;

    fn event(name: impl Into<Name>, node: Option<&str>, value: Value) -> Event {
        Event::named(name, node.map(str::to_string), value)
    }

    fn status(node: &str, role: &str, view: u64, lagging: bool) -> Event {
        event(
            Observation::Status,
            Some(node),
            json!({"role": role, "view": view, "lagging": lagging}),
        )
    }

    fn started(cluster: &mut Cluster) {
        for node in ["n1", "n2", "n3"] {
            cluster.apply(&event(Lifecycle::Start, Some(node), json!({})));
        }
        cluster.apply(&status("n1", "primary", 1, false));
        cluster.apply(&status("n2", "backup", 1, false));
        cluster.apply(&status("n3", "backup", 1, true));
    }

    #[test]
    fn given_statuses_of_any_nodes_when_abstracted_should_be_sorted_and_free_of_names_and_values() {
        let (mut a, mut b) = (Cluster::new(), Cluster::new());
        started(&mut a);
        for node in ["n1", "n2", "n3"] {
            b.apply(&event(Lifecycle::Start, Some(node), json!({})));
        }
        b.apply(&status("n3", "primary", 7, false));
        b.apply(&status("n1", "backup", 7, true));
        b.apply(&status("n2", "backup", 7, false));
        assert_eq!(a.state(), "up:backup up:backup+lag up:primary");
        assert_eq!(a.state(), b.state(), "other nodes, other views: the same state");
        assert_eq!(a.context(), "calm");
    }

    #[test]
    fn given_a_killed_primary_and_a_paused_backup_when_abstracted_should_name_each_fault_by_the_role_it_hit() {
        let mut cluster = Cluster::new();
        started(&mut cluster);
        cluster.apply(&event(Nemesis::Kill, Some("n1"), json!({"fault_id": 3})));
        cluster.apply(&event(Nemesis::Pause, Some("n2"), json!({"fault_id": 4})));
        assert_eq!(cluster.state(), "down paused:backup up:backup+lag");
        assert_eq!(cluster.context(), "kill@primary+pause@backup");
        cluster.apply(&event(Nemesis::Start, Some("n1"), json!({"fault_id": 3})));
        cluster.apply(&event(Nemesis::Resume, Some("n2"), json!({"fault_id": 4})));
        assert_eq!(
            cluster.state(),
            "up:backup up:backup+lag up:unknown",
            "no role before its first status"
        );
        assert_eq!(cluster.context(), "calm");
    }

    #[test]
    fn given_a_failed_kill_when_applied_should_change_nothing() {
        let mut cluster = Cluster::new();
        started(&mut cluster);
        let before = (cluster.state(), cluster.context());
        cluster.apply(&event(Nemesis::Kill, Some("n1"), json!({"error": "no such process"})));
        assert_eq!((cluster.state(), cluster.context()), before);
    }

    #[test]
    fn given_an_isolated_primary_in_an_old_view_when_abstracted_should_flag_it_cut_and_old() {
        let mut cluster = Cluster::new();
        started(&mut cluster);
        let grudge = json!({"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]});
        cluster.apply(&event(
            Nemesis::PartitionStart,
            None,
            json!({"shape": "isolate-primary", "grudge": grudge, "fault_id": 1}),
        ));
        cluster.apply(&status("n2", "primary", 2, false));
        assert_eq!(
            cluster.state(),
            "up:backup+lag,old,part up:primary+old,cut up:primary+part"
        );
        assert_eq!(cluster.context(), "partition:isolate-primary");
        cluster.apply(&event(Nemesis::PartitionStop, None, json!({"fault_id": 1})));
        assert_eq!(cluster.state(), "up:backup+lag,old up:primary up:primary+old");
    }

    #[test]
    fn given_link_faults_when_abstracted_should_name_the_node_all_links_touch_or_some() {
        let mut cluster = Cluster::new();
        started(&mut cluster);
        let links = json!(["n1->n2", "n2->n1", "n1->n3", "n3->n1"]);
        cluster.apply(&event(
            Nemesis::LinkFault,
            None,
            json!({"fault": {"kind": "reset"}, "fault_id": 5, "links": links}),
        ));
        cluster.apply(&event(
            Nemesis::LinkFault,
            None,
            json!({"fault": {"kind": "delay"}, "fault_id": 6, "links": ["n2->n3", "n1->n3", "n1->n2"]}),
        ));
        assert_eq!(cluster.context(), "link-delay@some+link-reset@primary");
        cluster.apply(&event(Nemesis::LinkHeal, None, json!({"fault_id": 5})));
        cluster.apply(&event(Lifecycle::FaultPhaseEnd, None, json!({})));
        assert_eq!(cluster.context(), "final+link-delay@some");
    }
}
