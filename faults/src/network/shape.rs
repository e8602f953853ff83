//! Partition shapes in Jepsen's vocabulary, as pure functions from (node count, seeded rng) to a [`Grudge`].
//!
//! | shape | grudge |
//! |---|---|
//! | `random-halves` | a random minority (`max(1, n - (n/2+1))` nodes) and the majority do not hear each other |
//! | `isolate-one` | one random node hears nobody and nobody hears it |
//! | `isolate-primary` | the same for the primary at fault start (resolved by the harness, see [`isolate`]) |
//! | `split-members` | the members at fault start in two halves as even as can be, each side deaf to the other (resolved by the harness when it starts, see [`split_members`]; a run tries every split of the same members before it repeats one, see [`SplitCover`]): with an even member count neither side holds a majority |
//! | `majorities-ring` | on a random ring, every node hears the `n/2+1` nodes around it (itself included): every node sees a majority, no two the same one |
//! | `bridge` | two halves that do not hear each other, and one node that both halves hear and that hears both |
//! | `one-way` | a random ordered pair: `i` hears `j`, `j` does not hear `i` |
//! | `heal` | nobody holds a grudge |

use super::grudge::{Grudge, Link};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A partition shape as plans name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// A random minority against the majority.
    RandomHalves,
    /// One random node against the rest.
    IsolateOne,
    /// The current primary against the rest (resolved when the fault starts).
    IsolatePrimary,
    /// The current members in two even halves (resolved when the fault starts).
    SplitMembers,
    /// Every node sees a different majority.
    MajoritiesRing,
    /// Two halves joined by one node.
    Bridge,
    /// One node does not hear another that still hears it.
    OneWay,
    /// No grudge.
    Heal,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Shape::RandomHalves => "random-halves",
            Shape::IsolateOne => "isolate-one",
            Shape::IsolatePrimary => "isolate-primary",
            Shape::SplitMembers => "split-members",
            Shape::MajoritiesRing => "majorities-ring",
            Shape::Bridge => "bridge",
            Shape::OneWay => "one-way",
            Shape::Heal => "heal",
        };
        f.write_str(name)
    }
}

impl Shape {
    /// The grudge of this shape for `node_count` nodes, drawing from `rng`; `None` for `isolate-primary` and
    /// `split-members`, whose nodes are known only when the fault starts (then call [`isolate`] or
    /// [`split_members`]).
    pub fn draw(self, node_count: usize, rng: &mut impl Rng) -> Option<Grudge> {
        Some(match self {
            Shape::RandomHalves => random_halves(node_count, rng),
            Shape::IsolateOne => isolate(node_count, rng.gen_range(0..node_count)),
            Shape::IsolatePrimary | Shape::SplitMembers => return None,
            Shape::MajoritiesRing => majorities_ring(node_count, rng),
            Shape::Bridge => bridge(node_count, rng),
            Shape::OneWay => one_way(node_count, rng),
            Shape::Heal => Grudge::none(node_count),
        })
    }

    /// The smallest cluster this shape means anything for.
    pub fn min_nodes(self) -> usize {
        match self {
            Shape::Heal => 1,
            Shape::Bridge => 3,
            _ => 2,
        }
    }
}

fn shuffled(node_count: usize, rng: &mut impl Rng) -> Vec<usize> {
    let mut nodes: Vec<usize> = (0..node_count).collect();
    nodes.shuffle(rng);
    nodes
}

/// Size of the minority side of `random-halves`: what is left beside a strict majority, at least one node.
pub fn minority_size(node_count: usize) -> usize {
    node_count.saturating_sub(node_count / 2 + 1).max(1)
}

/// A random minority against the majority (for 2 nodes, one against one).
pub fn random_halves(node_count: usize, rng: &mut impl Rng) -> Grudge {
    assert!(node_count >= 2, "random-halves needs at least 2 nodes");
    let mut nodes = shuffled(node_count, rng);
    let mut majority = nodes.split_off(minority_size(node_count));
    nodes.sort_unstable();
    majority.sort_unstable();
    Grudge::components(node_count, &[nodes, majority])
}

/// The `members` (of `node_count` nodes) shuffled by `rng` and cut in two halves (the first `len / 2` against the
/// rest), each side deaf to the other; the other nodes (spares, removed members) go with the second half. With four
/// members it is the 2/2 split no quorum of four survives, the one a quorum counted over a stale configuration
/// does not see; with three or five, a minority against a majority.
pub fn split_members(node_count: usize, members: &[usize], rng: &mut impl Rng) -> Grudge {
    let members = sorted_members(node_count, members);
    halves(node_count, &members, rng).0
}

/// The members below `node_count`, sorted, each once.
fn sorted_members(node_count: usize, members: &[usize]) -> Vec<usize> {
    let mut members: Vec<usize> = members.iter().copied().filter(|&m| m < node_count).collect();
    members.sort_unstable();
    members.dedup();
    members
}

/// A random split of the sorted `members` into halves (see [`split_members`]), and the side that holds the smallest
/// member, which names the split whatever order the halves were drawn in.
fn halves(node_count: usize, members: &[usize], rng: &mut impl Rng) -> (Grudge, Vec<usize>) {
    let mut shuffled = members.to_vec();
    shuffled.shuffle(rng);
    let mut first: Vec<usize> = shuffled[..shuffled.len() / 2].to_vec();
    first.sort_unstable();
    let key = match members.first() {
        Some(smallest) if !first.contains(smallest) => members.iter().copied().filter(|m| !first.contains(m)).collect(),
        _ => first.clone(),
    };
    let second: Vec<usize> = (0..node_count).filter(|n| !first.contains(n)).collect();
    (Grudge::components(node_count, &[first, second]), key)
}

/// How many random draws [`SplitCover::split`] makes to find a split not used yet before it takes a used one.
const SPLIT_DRAWS_MAX: usize = 64;

/// `split-members` over a run: each split of a member set is drawn among those not used yet for that set, and only
/// once all were used do they repeat. Four members halve three ways, and which of them a bug needs is a matter of
/// where the primary and the newest member stand (a quorum counted over the configuration before a change splits
/// the cluster only when the joiner sits with the primary); sampling with replacement leaves one of the three
/// untried after three splits 30 % of the time, a cover never. Bounded: one record per member set a run had.
#[derive(Debug, Default)]
pub struct SplitCover {
    /// Member set -> the splits used (each named by its side with the smallest member).
    used: std::collections::BTreeMap<Vec<usize>, std::collections::BTreeSet<Vec<usize>>>,
}

impl SplitCover {
    /// The members now split in halves, as [`split_members`], avoiding the splits this cover already gave them.
    pub fn split(&mut self, node_count: usize, members: &[usize], rng: &mut impl Rng) -> Grudge {
        let members = sorted_members(node_count, members);
        let total = distinct_splits(members.len());
        let used = self.used.entry(members.clone()).or_default();
        if used.len() as u128 >= total {
            used.clear();
        }
        let mut drawn = halves(node_count, &members, rng);
        for _ in 1..SPLIT_DRAWS_MAX {
            if !used.contains(&drawn.1) {
                break;
            }
            drawn = halves(node_count, &members, rng);
        }
        used.insert(drawn.1);
        drawn.0
    }
}

/// The ways to cut `n` members into a half of `n / 2` and the rest: n choose n/2, halved when both sides are the
/// same size (either could be drawn first). Saturates for member sets far larger than any cluster.
fn distinct_splits(n: usize) -> u128 {
    let k = n / 2;
    let mut ways: u128 = 1;
    for i in 0..k {
        ways = ways.saturating_mul((n - i) as u128) / (i as u128 + 1);
    }
    if n.is_multiple_of(2) && n > 0 {
        ways / 2
    } else {
        ways
    }
}

/// `node` against everyone else.
pub fn isolate(node_count: usize, node: usize) -> Grudge {
    assert!(node < node_count, "cannot isolate node {node} of {node_count}");
    let rest: Vec<usize> = (0..node_count).filter(|&n| n != node).collect();
    Grudge::components(node_count, &[vec![node], rest])
}

/// On a random ring, node at position `p` hears positions `p-a ..= p+b` with `a + b + 1 = n/2+1`: a majority each.
/// Symmetric when `n/2+1` is odd; for other sizes (3, 6, ...) the window leans forward and the grudge is one-way
/// between some pairs, which is still a ring of distinct majorities.
pub fn majorities_ring(node_count: usize, rng: &mut impl Rng) -> Grudge {
    assert!(node_count >= 2, "majorities-ring needs at least 2 nodes");
    let ring = shuffled(node_count, rng);
    let majority = node_count / 2 + 1;
    let behind = (majority - 1) / 2;
    let ahead = majority - 1 - behind;
    let mut grudge = Grudge::none(node_count);
    for (position, &to) in ring.iter().enumerate() {
        for offset in (ahead + 1)..(node_count - behind) {
            let from = ring[(position + offset) % node_count];
            grudge.cut(Link::new(from, to));
        }
    }
    grudge
}

/// Two halves that do not hear each other and one bridge node in both.
pub fn bridge(node_count: usize, rng: &mut impl Rng) -> Grudge {
    assert!(node_count >= 3, "bridge needs at least 3 nodes");
    let mut nodes = shuffled(node_count, rng);
    let bridge_node = nodes.pop().expect("at least 3 nodes");
    let right = nodes.split_off(nodes.len() / 2);
    let mut grudge = Grudge::none(node_count);
    for &a in &nodes {
        for &b in &right {
            grudge.cut(Link::new(a, b));
            grudge.cut(Link::new(b, a));
        }
    }
    debug_assert!((0..node_count).all(|n| grudge.hears(bridge_node, n) && grudge.hears(n, bridge_node)));
    grudge
}

/// A random ordered pair: the first node's traffic never reaches the second; the reverse direction flows.
pub fn one_way(node_count: usize, rng: &mut impl Rng) -> Grudge {
    assert!(node_count >= 2, "one-way needs at least 2 nodes");
    let nodes = shuffled(node_count, rng);
    let mut grudge = Grudge::none(node_count);
    grudge.cut(Link::new(nodes[0], nodes[1]));
    grudge
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn given_random_halves_when_drawn_should_split_into_minority_and_strict_majority() {
        for (n, minority) in [(2, 1), (3, 1), (4, 1), (5, 2), (7, 3)] {
            for seed in 0..20 {
                let grudge = random_halves(n, &mut stream(seed, "shape"));
                let mut sizes: Vec<usize> = grudge
                    .as_components()
                    .expect("symmetric")
                    .iter()
                    .map(Vec::len)
                    .collect();
                sizes.sort_unstable();
                assert_eq!(sizes, vec![minority, n - minority], "n={n} seed={seed}: {grudge}");
            }
        }
    }

    #[test]
    fn given_isolate_when_applied_should_cut_exactly_that_node_both_ways() {
        let grudge = isolate(5, 2);
        assert_eq!(grudge.to_string(), "{n1,n2,n4,n5} | {n3}");
        assert_eq!(grudge.cuts().count(), 8);
    }

    #[test]
    fn given_one_way_when_drawn_should_cut_exactly_one_direction() {
        for seed in 0..20 {
            let grudge = one_way(5, &mut stream(seed, "shape"));
            let cuts: Vec<Link> = grudge.cuts().collect();
            assert_eq!(cuts.len(), 1);
            let Link { from, to } = cuts[0];
            assert!(!grudge.hears(to, from));
            assert!(grudge.hears(from, to), "the reverse direction must still flow");
        }
    }

    #[test]
    fn given_majorities_ring_when_drawn_should_give_every_node_a_distinct_majority() {
        for n in [3, 4, 5, 6, 7] {
            let grudge = majorities_ring(n, &mut stream(3, "shape"));
            let mut seen = std::collections::BTreeSet::new();
            for node in 0..n {
                let heard: Vec<usize> = (0..n).filter(|&j| grudge.hears(node, j)).collect();
                assert_eq!(heard.len(), n / 2 + 1, "n={n} node={node}: {grudge}");
                assert!(seen.insert(heard), "n={n}: two nodes see the same majority: {grudge}");
            }
        }
        let five = majorities_ring(5, &mut stream(3, "shape"));
        assert!(five.cuts().all(|l| !five.hears(l.from, l.to)), "n=5 ring is symmetric");
    }

    #[test]
    fn given_bridge_when_drawn_should_join_two_halves_through_one_node() {
        let grudge = bridge(5, &mut stream(9, "shape"));
        let bridges: Vec<usize> = (0..5).filter(|&n| grudge.deaf_to(n).is_empty()).collect();
        assert_eq!(bridges.len(), 1, "{grudge}");
        let others: Vec<usize> = (0..5).filter(|n| !bridges.contains(n)).collect();
        for &n in &others {
            assert_eq!(grudge.deaf_to(n).len(), 2, "{grudge}");
            assert!(grudge.hears(bridges[0], n) && grudge.hears(n, bridges[0]));
        }
    }

    #[test]
    fn given_the_same_seed_when_drawn_twice_should_give_the_same_grudge() {
        for shape in [
            Shape::RandomHalves,
            Shape::IsolateOne,
            Shape::MajoritiesRing,
            Shape::Bridge,
            Shape::OneWay,
        ] {
            let a = shape.draw(5, &mut stream(11, "shape"));
            let b = shape.draw(5, &mut stream(11, "shape"));
            assert_eq!(a, b, "{shape}");
            let differs = (12..40).any(|seed| shape.draw(5, &mut stream(seed, "shape")) != a);
            assert!(differs, "{shape} ignores its seed");
        }
        assert_eq!(Shape::IsolatePrimary.draw(5, &mut stream(1, "shape")), None);
        assert_eq!(Shape::SplitMembers.draw(5, &mut stream(1, "shape")), None);
        assert!(Shape::Heal.draw(3, &mut stream(1, "shape")).unwrap().is_empty());
    }

    #[test]
    fn given_four_members_of_five_nodes_when_split_should_leave_two_members_on_each_side_and_no_majority() {
        let members = [0, 1, 2, 4];
        let mut sides_seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let grudge = split_members(5, &members, &mut stream(seed, "split"));
            let hears = |a: usize, b: usize| grudge.hears(a, b);
            let side_of_n1: Vec<usize> = members.iter().copied().filter(|&m| hears(0, m)).collect();
            assert_eq!(side_of_n1.len(), 2, "seed {seed}: {grudge}");
            for &a in &members {
                for &b in &members {
                    assert_eq!(
                        hears(a, b),
                        side_of_n1.contains(&a) == side_of_n1.contains(&b),
                        "symmetric halves"
                    );
                }
            }
            sides_seen.insert(side_of_n1);
        }
        assert_eq!(sides_seen.len(), 3, "every way to pair n1: {sides_seen:?}");
        let odd = split_members(3, &[0, 1, 2], &mut stream(1, "split"));
        assert_eq!(
            (0..3).filter(|&n| odd.deaf_to(n).is_empty()).count(),
            0,
            "one against two: everyone loses someone"
        );
        assert!(
            split_members(3, &[1], &mut stream(1, "split")).is_empty(),
            "one member: nothing to split"
        );
    }

    /// The side of `members` that hears member `first`.
    fn side_of(grudge: &Grudge, members: &[usize], first: usize) -> Vec<usize> {
        members.iter().copied().filter(|&m| grudge.hears(first, m)).collect()
    }

    #[test]
    fn given_a_cover_when_four_members_are_split_three_times_should_give_each_pairing_once_then_repeat() {
        let members = [0, 1, 2, 4];
        for seed in 0..20 {
            let mut cover = SplitCover::default();
            let mut rng = stream(seed, "cover");
            let sides: std::collections::BTreeSet<Vec<usize>> = (0..3)
                .map(|_| side_of(&cover.split(5, &members, &mut rng), &members, 0))
                .collect();
            assert_eq!(sides.len(), 3, "seed {seed}: {sides:?}");
            let fourth = side_of(&cover.split(5, &members, &mut rng), &members, 0);
            assert!(
                sides.contains(&fourth),
                "seed {seed}: a fourth split repeats one: {fourth:?}"
            );
        }
    }

    #[test]
    fn given_a_cover_when_the_members_change_should_cover_each_member_set_on_its_own() {
        let mut cover = SplitCover::default();
        let mut rng = stream(3, "cover");
        let four = [0, 1, 2, 3];
        let first = side_of(&cover.split(5, &four, &mut rng), &four, 0);
        // Five members in between (2 against 3: ten ways) do not use up the four's pairings.
        let five = [0, 1, 2, 3, 4];
        let fives: std::collections::BTreeSet<Vec<usize>> = (0..10)
            .map(|_| {
                let grudge = cover.split(5, &five, &mut rng);
                five.iter()
                    .copied()
                    .filter(|&m| grudge.hears(0, m))
                    .collect::<Vec<usize>>()
            })
            .collect();
        assert_eq!(fives.len(), 10, "{fives:?}");
        let next_two: std::collections::BTreeSet<Vec<usize>> = (0..2)
            .map(|_| side_of(&cover.split(5, &four, &mut rng), &four, 0))
            .collect();
        assert_eq!(next_two.len(), 2);
        assert!(
            !next_two.contains(&first),
            "{first:?} again before the other two: {next_two:?}"
        );
    }

    #[test]
    fn given_member_counts_when_counted_should_give_the_distinct_splits() {
        let counts: Vec<u128> = (0..=6).map(distinct_splits).collect();
        assert_eq!(counts, vec![1, 1, 1, 3, 3, 10, 10]);
    }
}
