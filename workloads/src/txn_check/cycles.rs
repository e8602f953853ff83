//! The shortest cycle of each anomaly class inside one strongly connected component.
//!
//! Elle's approach: a cycle class is a condition on the kinds of the edges around the cycle, so the search is a
//! breadth-first search over pairs `(transaction, state)`, where the state is a small automaton that reads the edge
//! kinds taken so far ([`step`]) and says at the end whether they make a cycle of the class ([`accepts`]). Edges of
//! kinds the class does not use are never followed, which is Elle's edge filter; the automaton adds what a filter
//! cannot say ("exactly one rw", "no two rw in a row", "at least one real-time edge").
//!
//! From a start transaction, the first time the search comes back to it in an accepting state is the shortest
//! closed walk of the class through that start. Every cycle of a class holds an edge of the kind the class needs
//! most (rw for the G-single/G-nonadjacent/G2-item family, wr for G1c, the real-time or process edge for a variant),
//! so starting from every source of such an edge in the component, and keeping the shortest result, finds the
//! shortest cycle of the class in the component. A start done with is left out of the later searches (as in
//! Johnson's cycle enumeration): every cycle through it was already considered.
//!
//! **Needed order edges.** A real-time or process edge that runs beside a ww edge (or, past G0, a wr edge) between
//! the same two transactions is not followed in a variant's search: the cycle would close on the dependency edge
//! alone, so it is a plain-class cycle, not one that needs real time or process order (Elle, likewise, explains a
//! pair by its dependency before its order). An order edge beside an rw edge is kept: without it the cycle would
//! hold one more rw edge, a different class.
//!
//! **Simple cycles.** A shortest closed walk of a class may pass through one transaction twice (two G-single cycles
//! sharing a node walk like one G-nonadjacent). Such a walk is not a cycle, so the search drops it and goes on; the
//! cycles it was made of are found by their own classes. Because visited states are shared, the search may then miss
//! a longer simple cycle of that class through the same start; it never reports a cycle that is not one.
//!
//! **Bounds.** Each start's search stops at the length of the best cycle found so far (nothing longer can win);
//! the search of a class ends once it found a cycle as short as the class allows (2 edges, 4 for G-nonadjacent);
//! and all starts together relax at most [`super::TxnCheckOptions::cycle_search_steps_max`] edges per class and
//! component; past that, the best cycle so far is returned with `exhausted` set (or none, and the class is
//! undecided for this component).

use super::graph::{EdgeKind, Graph};
use super::models::{CycleBase, Variant};
use crate::models::FxBuild;
use std::collections::{HashMap, VecDeque};

/// Set once a real-time or process edge (whichever the variant needs) was taken.
const EXTRA: u8 = 1;
/// Set once a wr edge was taken.
const WR: u8 = 2;
/// Set once an rw edge was taken.
const RW_ONE: u8 = 4;
/// Set once a second rw edge was taken.
const RW_MANY: u8 = 8;
/// The first edge of the walk was rw.
const FIRST_RW: u8 = 16;
/// The last edge taken was rw.
const LAST_RW: u8 = 32;
/// Two consecutive rw edges were taken.
const ADJACENT: u8 = 64;

/// The state bits a class's decision depends on; the others are cleared, so the search visits fewer states.
fn relevant(base: CycleBase) -> u8 {
    match base {
        CycleBase::G0 => EXTRA,
        CycleBase::G1c => EXTRA | WR,
        CycleBase::GSingle => EXTRA | RW_ONE | RW_MANY,
        CycleBase::GNonadjacent | CycleBase::G2Item => EXTRA | RW_ONE | RW_MANY | FIRST_RW | LAST_RW | ADJACENT,
    }
}

/// The automaton's transition: the state after taking an edge of `kind` (`first`: as the walk's first edge), or
/// `None` when no cycle of the class can take it.
pub(crate) fn step(base: CycleBase, variant: Variant, state: u8, kind: EdgeKind, first: bool) -> Option<u8> {
    let allowed = match kind {
        EdgeKind::Ww => true,
        EdgeKind::Wr => base != CycleBase::G0,
        EdgeKind::Rw => base >= CycleBase::GSingle,
        EdgeKind::Realtime => variant == Variant::Realtime,
        EdgeKind::Process => variant == Variant::Process,
    };
    if !allowed {
        return None;
    }
    let mut next = state & !LAST_RW;
    match kind {
        EdgeKind::Wr => next |= WR,
        EdgeKind::Rw => {
            if state & RW_ONE != 0 {
                next |= RW_MANY;
            }
            if state & LAST_RW != 0 {
                next |= ADJACENT;
            }
            if first {
                next |= FIRST_RW;
            }
            next |= RW_ONE | LAST_RW;
        }
        EdgeKind::Realtime | EdgeKind::Process => next |= EXTRA,
        EdgeKind::Ww => {}
    }
    let refused = match base {
        CycleBase::GSingle => next & RW_MANY != 0,
        CycleBase::GNonadjacent => next & ADJACENT != 0,
        _ => false,
    };
    (!refused).then_some(next & relevant(base))
}

/// Whether a closed walk that ended in `state` is a cycle of the class.
pub(crate) fn accepts(base: CycleBase, variant: Variant, state: u8) -> bool {
    if variant != Variant::Plain && state & EXTRA == 0 {
        return false;
    }
    // The last edge and the first are consecutive too, around the cycle.
    let adjacent = state & ADJACENT != 0 || (state & FIRST_RW != 0 && state & LAST_RW != 0);
    let rw_many = state & RW_MANY != 0;
    match base {
        CycleBase::G0 => true,
        CycleBase::G1c => state & WR != 0,
        CycleBase::GSingle => state & RW_ONE != 0 && !rw_many,
        CycleBase::GNonadjacent => rw_many && !adjacent,
        CycleBase::G2Item => rw_many && adjacent,
    }
}

/// The edge kind every cycle of the class holds at least once: searches start at the sources of such edges.
fn needed_kind(base: CycleBase, variant: Variant) -> EdgeKind {
    match (variant, base) {
        (Variant::Realtime, _) => EdgeKind::Realtime,
        (Variant::Process, _) => EdgeKind::Process,
        (Variant::Plain, CycleBase::G0) => EdgeKind::Ww,
        (Variant::Plain, CycleBase::G1c) => EdgeKind::Wr,
        (Variant::Plain, _) => EdgeKind::Rw,
    }
}

/// The shortest cycle of one class found in one component.
pub(crate) struct Found {
    /// The cycle's edges (ids into the graph), in order; the first starts where the last ends. Empty if none.
    pub edges: Vec<u32>,
    /// The step budget ran out: `edges` may not be the shortest, and an empty `edges` does not mean there is none.
    pub exhausted: bool,
}

/// Searches `component` (sorted node ids; `member[v]` says whether `v` is in it) for the shortest cycle of the class.
/// `member` is changed on the way and restored before returning.
pub(crate) fn shortest_cycle(
    graph: &Graph,
    component: &[u32],
    member: &mut [bool],
    (base, variant): (CycleBase, Variant),
    steps_max: u64,
) -> Found {
    let needed = needed_kind(base, variant);
    let shortest_possible = if base == CycleBase::GNonadjacent { 4 } else { 2 };
    let mut search = Search {
        graph,
        base,
        variant,
        steps_left: steps_max,
        parents: HashMap::default(),
        queue: VecDeque::new(),
    };
    let mut best: Vec<u32> = Vec::new();
    let mut exhausted = false;
    let mut removed: Vec<u32> = Vec::new();
    for &start in component {
        let has_needed = graph
            .out(start)
            .any(|(_, e)| e.kind() == needed && member[e.to as usize]);
        if !has_needed {
            continue;
        }
        let limit = if best.is_empty() { u32::MAX } else { best.len() as u32 };
        match search.from(member, start, limit) {
            Ok(Some(cycle)) => best = cycle,
            Ok(None) => {}
            Err(()) => {
                exhausted = true;
                break;
            }
        }
        if best.len() == shortest_possible {
            break;
        }
        // Every cycle through `start` was just considered: later starts need not pass through it. A cycle whose
        // first start candidate (in this order) comes later holds no earlier candidate, so it stays intact.
        member[start as usize] = false;
        removed.push(start);
    }
    for v in removed {
        member[v as usize] = true;
    }
    Found { edges: best, exhausted }
}

/// A `(node, state)` pair packed in a `u64`.
fn pack(node: u32, state: u8) -> u64 {
    (u64::from(node) << 8) | u64::from(state)
}

/// The breadth-first search from one start, with its buffers kept across starts.
struct Search<'g> {
    graph: &'g Graph,
    base: CycleBase,
    variant: Variant,
    steps_left: u64,
    /// For each visited `(node, state)`: the pair it was reached from and the edge taken (`u32::MAX` at the start).
    parents: HashMap<u64, (u64, u32), FxBuild>,
    queue: VecDeque<(u32, u8, u32)>,
}

impl Search<'_> {
    /// The shortest simple cycle of the class through `start` and `member` nodes, shorter than `limit` edges, if
    /// any; `Err` when the step budget ran out.
    fn from(&mut self, member: &[bool], start: u32, limit: u32) -> Result<Option<Vec<u32>>, ()> {
        self.parents.clear();
        self.queue.clear();
        self.parents.insert(pack(start, 0), (u64::MAX, u32::MAX));
        self.queue.push_back((start, 0, 0));
        while let Some((v, state, depth)) = self.queue.pop_front() {
            if depth + 1 >= limit {
                return Ok(None);
            }
            for (id, edge) in self.graph.out(v) {
                if self.steps_left == 0 {
                    return Err(());
                }
                self.steps_left -= 1;
                if !member[edge.to as usize] {
                    continue;
                }
                let first = v == start && depth == 0;
                let Some(next) = step(self.base, self.variant, state, edge.kind(), first) else {
                    continue;
                };
                if self.redundant_order_edge(id) {
                    continue;
                }
                if edge.to == start {
                    if accepts(self.base, self.variant, next) {
                        if let Some(cycle) = self.simple_cycle(pack(v, state), id) {
                            return Ok(Some(cycle));
                        }
                    }
                    continue;
                }
                let key = pack(edge.to, next);
                if let std::collections::hash_map::Entry::Vacant(slot) = self.parents.entry(key) {
                    slot.insert((pack(v, state), id));
                    self.queue.push_back((edge.to, next, depth + 1));
                }
            }
        }
        Ok(None)
    }

    /// Whether edge `id` is a real-time or process edge beside a ww edge (or, past G0, a wr edge) between the same
    /// transactions: a cycle through it closes without it, so a `-realtime` or `-process` variant does not need it.
    /// Edges are sorted by `(from, to, kind)`, and dependency kinds sort first, so such an edge sits just before.
    fn redundant_order_edge(&self, id: u32) -> bool {
        let edge = &self.graph.edges[id as usize];
        if !matches!(edge.kind(), EdgeKind::Realtime | EdgeKind::Process) {
            return false;
        }
        let first = self.graph.offsets[edge.from as usize] as usize;
        self.graph.edges[first..id as usize]
            .iter()
            .rev()
            .take_while(|e| e.to == edge.to)
            .any(|e| e.kind() == EdgeKind::Ww || (e.kind() == EdgeKind::Wr && self.base != CycleBase::G0))
    }

    /// The edges from the start to `(v, state)` and then `last`, if no transaction repeats on the way.
    fn simple_cycle(&self, mut at: u64, last: u32) -> Option<Vec<u32>> {
        let mut edges = vec![last];
        loop {
            let &(parent, edge) = self.parents.get(&at).expect("every visited pair has a parent entry");
            if edge == u32::MAX {
                break;
            }
            edges.push(edge);
            at = parent;
        }
        edges.reverse();
        let mut nodes: Vec<u32> = edges.iter().map(|&e| self.graph.edges[e as usize].from).collect();
        nodes.sort_unstable();
        let simple = nodes.windows(2).all(|pair| pair[0] != pair[1]);
        simple.then_some(edges)
    }
}
