//! A grudge: who cannot hear whom. The one description of a partition that both backends apply and the history
//! records.
//!
//! `deaf[i]` is the set of nodes whose bytes (proxy) or packets (netns) never reach node `i`. A symmetric partition
//! into components is the common case and renders as `{n1} | {n2,n3}`; any other grudge (one-way cuts, rings, bridges)
//! renders receiver by receiver as `{n1} -x-> n2` ("nothing from n1 reaches n2").

use crate::process::{node_name, parse_node_name};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A directed link between two nodes: traffic sent by `from` to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    /// Sender (0-based node index).
    pub from: usize,
    /// Receiver (0-based node index).
    pub to: usize,
}

impl Link {
    /// `from -> to`.
    pub fn new(from: usize, to: usize) -> Link {
        Link { from, to }
    }

    /// Parses `n1->n2`.
    pub fn parse(text: &str) -> Result<Link, String> {
        let (a, b) = text
            .split_once("->")
            .ok_or_else(|| format!("`{text}` is not a link: write it as `n1->n2` (traffic from n1 to n2)"))?;
        let node = |name: &str| {
            parse_node_name(name.trim())
                .ok_or_else(|| format!("`{}` in link `{text}` is not a node name (n1, n2, ... nN)", name.trim()))
        };
        let link = Link::new(node(a)?, node(b)?);
        if link.from == link.to {
            return Err(format!("link `{text}` goes from a node to itself"));
        }
        Ok(link)
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}->{}", node_name(self.from), node_name(self.to))
    }
}

impl Serialize for Link {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Link {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Link::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Who does not hear whom, for `node_count` nodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Grudge {
    /// `deaf[i]`: nodes that node `i` does not hear from. Never contains `i`.
    deaf: Vec<BTreeSet<usize>>,
}

impl Grudge {
    /// Nobody holds a grudge: the healed network.
    pub fn none(node_count: usize) -> Grudge {
        Grudge {
            deaf: vec![BTreeSet::new(); node_count],
        }
    }

    /// A symmetric partition: nodes in different components do not hear each other. Nodes in no component are
    /// treated as a component of their own each.
    pub fn components(node_count: usize, components: &[Vec<usize>]) -> Grudge {
        let mut component_of: Vec<Option<usize>> = vec![None; node_count];
        for (c, nodes) in components.iter().enumerate() {
            for &node in nodes {
                assert!(node < node_count, "node {node} out of range for {node_count} nodes");
                component_of[node] = Some(c);
            }
        }
        let mut grudge = Grudge::none(node_count);
        for to in 0..node_count {
            for from in 0..node_count {
                let same = from == to || (component_of[to].is_some() && component_of[to] == component_of[from]);
                if !same {
                    grudge.deaf[to].insert(from);
                }
            }
        }
        grudge
    }

    /// Adds a one-way cut: nothing `from` sends reaches `to`.
    pub fn cut(&mut self, link: Link) {
        assert!(link.from != link.to, "a node always hears itself");
        assert!(
            link.to < self.deaf.len() && link.from < self.deaf.len(),
            "link {link:?} out of range"
        );
        self.deaf[link.to].insert(link.from);
    }

    /// Every cut directed link (`from` not heard by `to`), in node order.
    pub fn links(&self) -> Vec<Link> {
        self.deaf
            .iter()
            .enumerate()
            .flat_map(|(to, froms)| froms.iter().map(move |&from| Link::new(from, to)))
            .collect()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.deaf.len()
    }

    /// Whether `to` hears what `from` sends.
    pub fn hears(&self, to: usize, from: usize) -> bool {
        !self.deaf[to].contains(&from)
    }

    /// Nodes that `node` does not hear from.
    pub fn deaf_to(&self, node: usize) -> &BTreeSet<usize> {
        &self.deaf[node]
    }

    /// True when every node hears every other (nothing to apply).
    pub fn is_empty(&self) -> bool {
        self.deaf.iter().all(BTreeSet::is_empty)
    }

    /// Every cut link, ordered by receiver then sender.
    pub fn cuts(&self) -> impl Iterator<Item = Link> + '_ {
        self.deaf
            .iter()
            .enumerate()
            .flat_map(|(to, froms)| froms.iter().map(move |&from| Link::new(from, to)))
    }

    /// The components, when the grudge is a symmetric partition into groups that hear each other fully; `None` for
    /// one-way cuts, rings and bridges.
    pub fn as_components(&self) -> Option<Vec<Vec<usize>>> {
        let n = self.node_count();
        let mut components: Vec<Vec<usize>> = Vec::new();
        let mut placed = vec![false; n];
        for first in 0..n {
            if placed[first] {
                continue;
            }
            let component: Vec<usize> = (0..n).filter(|&j| self.hears(first, j)).collect();
            for &a in &component {
                let hears_exactly: Vec<usize> = (0..n).filter(|&j| self.hears(a, j)).collect();
                if placed[a] || hears_exactly != component || component.iter().any(|&b| !self.hears(b, a)) {
                    return None;
                }
            }
            for &a in &component {
                placed[a] = true;
            }
            components.push(component);
        }
        Some(components)
    }
}

fn set_label(nodes: impl IntoIterator<Item = usize>) -> String {
    let names: Vec<String> = nodes.into_iter().map(node_name).collect();
    format!("{{{}}}", names.join(","))
}

impl fmt::Display for Grudge {
    /// `{n1} | {n2,n3}` for a symmetric partition (one component when healed), otherwise `{n1} -x-> n2, ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(components) = self.as_components() {
            let parts: Vec<String> = components.into_iter().map(set_label).collect();
            return f.write_str(&parts.join(" | "));
        }
        let parts: Vec<String> = self
            .deaf
            .iter()
            .enumerate()
            .filter(|(_, froms)| !froms.is_empty())
            .map(|(to, froms)| format!("{} -x-> {}", set_label(froms.iter().copied()), node_name(to)))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

impl Serialize for Grudge {
    /// `{"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}`: every node, with the nodes it does not hear from.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // In node order (n2 before n10), for people reading the history.
        let ordered = self
            .deaf
            .iter()
            .enumerate()
            .map(|(to, froms)| (node_name(to), froms.iter().copied().map(node_name).collect::<Vec<_>>()));
        s.collect_map(ordered)
    }
}

impl<'de> Deserialize<'de> for Grudge {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let map = BTreeMap::<String, Vec<String>>::deserialize(d)?;
        let node =
            |name: &str| parse_node_name(name).ok_or_else(|| D::Error::custom(format!("`{name}` is not a node")));
        let node_count = map.len();
        let mut grudge = Grudge::none(node_count);
        for (to, froms) in &map {
            let to = node(to)?;
            for from in froms {
                let from = node(from)?;
                if to >= node_count || from >= node_count || to == from {
                    return Err(D::Error::custom(format!(
                        "grudge entry {from}->{to} out of range or self"
                    )));
                }
                grudge.deaf[to].insert(from);
            }
        }
        Ok(grudge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_two_components_when_rendered_should_read_as_groups_and_round_trip_through_json() {
        let grudge = Grudge::components(3, &[vec![0], vec![1, 2]]);
        assert_eq!(grudge.to_string(), "{n1} | {n2,n3}");
        assert!(!grudge.hears(0, 1) && !grudge.hears(1, 0) && grudge.hears(1, 2));
        let json = serde_json::to_value(&grudge).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]})
        );
        let back: Grudge = serde_json::from_value(json).unwrap();
        assert_eq!(back, grudge);
    }

    #[test]
    fn given_no_grudge_when_rendered_should_show_one_component() {
        let grudge = Grudge::none(3);
        assert!(grudge.is_empty());
        assert_eq!(grudge.to_string(), "{n1,n2,n3}");
    }

    #[test]
    fn given_a_one_way_cut_when_rendered_should_name_sender_and_receiver() {
        let mut grudge = Grudge::none(3);
        grudge.cut(Link::new(0, 1));
        assert!(grudge.hears(0, 1), "n1 still hears n2");
        assert!(!grudge.hears(1, 0), "n2 does not hear n1");
        assert_eq!(grudge.as_components(), None);
        assert_eq!(grudge.to_string(), "{n1} -x-> n2");
        assert_eq!(grudge.cuts().collect::<Vec<_>>(), vec![Link::new(0, 1)]);
    }

    #[test]
    fn given_link_text_when_parsed_should_accept_arrows_and_reject_self_links() {
        assert_eq!(Link::parse("n1->n3").unwrap(), Link::new(0, 2));
        assert!(Link::parse("n1->n1").is_err());
        assert!(Link::parse("n1-n2").is_err());
        assert_eq!(Link::new(1, 0).to_string(), "n2->n1");
    }
}
