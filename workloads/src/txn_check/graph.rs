//! The dependency graph: edges between transactions, the order edges (real time, process), and its strongly
//! connected components.
//!
//! Nodes are the transactions that certainly committed: `ok` ones, and `info` ones whose writes an `ok` read
//! observed (see the module essay in [`super`]). Edges carry why they exist, so that a cycle can be explained.
//!
//! **Real-time edges** are the transitive reduction Elle uses, not all O(n²) pairs: scanning invocations and
//! completions in time order, a *frontier* holds the completed transactions no later-completed one follows in real
//! time; an invocation gets an edge from every member of the frontier, and a completion removes from the frontier
//! the members that completed before its own invocation (they reach it through the edges it got). Every pair
//! `T1 completed < T2 invoked` is then joined by a path of real-time edges. Each process's next invocation follows
//! its last completion, so the frontier holds about one transaction per process, and there are O(n × processes)
//! edges (a history where thousands of transactions complete before any is invoked would make it quadratic). An `info` transaction gets edges in (it was invoked after its
//! predecessors completed) but none out: it may have committed long after it timed out.
//!
//! **Strongly connected components** are Tarjan's, iterative (an explicit call stack), so a 100,000-transaction
//! chain does not overflow the thread's stack.

use super::index::Index;
use super::input::TxnOutcome;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Why one transaction must precede another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    /// Write-write: the second installed the next version of a key after the first's.
    Ww,
    /// Write-read: the second read a version the first installed.
    Wr,
    /// Read-write (anti-dependency): the first read a version the second overwrote.
    Rw,
    /// Real time: the first completed before the second was invoked.
    Realtime,
    /// Process order: one process ran the first, then the second.
    Process,
}

impl EdgeKind {
    /// The kind as reports spell it: `ww`, `wr`, `rw`, `realtime`, `process`.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
            EdgeKind::Realtime => "realtime",
            EdgeKind::Process => "process",
        }
    }
}

impl std::fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The evidence behind an edge, enough to write its sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// `after` was installed right after `before` on `key`; for rw-register, `read_op` is the micro-op of the
    /// transaction that read `before` and then wrote `after`. `unobserved`: no read shows `after`, so it was installed
    /// after every version a read shows, the last of them `before`.
    Ww {
        key: u32,
        before: i64,
        after: i64,
        read_op: Option<u32>,
        unobserved: bool,
    },
    /// The read micro-op `op` (of the edge's target) observed `value`, written by the edge's source.
    Wr { op: u32, value: i64 },
    /// The read micro-op `op` (of the edge's source) missed `value`, the next version, written by the edge's target.
    Rw { op: u32, value: i64 },
    /// The source completed before the target was invoked; their times say when.
    Realtime,
    /// One process ran the source and then the target.
    Process,
}

/// One edge of the dependency graph.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edge {
    /// The transaction that comes first (position in the input).
    pub from: u32,
    /// The transaction that comes after.
    pub to: u32,
    /// The evidence, which also says the kind of dependency.
    pub why: Why,
}

impl Edge {
    /// The kind of dependency.
    pub fn kind(&self) -> EdgeKind {
        match self.why {
            Why::Ww { .. } => EdgeKind::Ww,
            Why::Wr { .. } => EdgeKind::Wr,
            Why::Rw { .. } => EdgeKind::Rw,
            Why::Realtime => EdgeKind::Realtime,
            Why::Process => EdgeKind::Process,
        }
    }
}

/// The graph in compressed sparse rows: the out-edges of node `v` are `edges[offsets[v]..offsets[v + 1]]`.
pub(crate) struct Graph {
    /// Out-edge ranges per node (one extra entry at the end).
    pub offsets: Vec<u32>,
    /// All edges, sorted by `(from, to, kind)`, one per `(from, to, kind)` (the first evidence found is kept).
    pub edges: Vec<Edge>,
}

impl Graph {
    /// Builds the graph of `nodes` nodes from edges in any order; self-edges are dropped (a transaction does not
    /// depend on itself).
    pub fn new(nodes: usize, mut edges: Vec<Edge>) -> Graph {
        edges.retain(|e| e.from != e.to);
        edges.sort_by_key(|e| (e.from, e.to, e.kind()));
        edges.dedup_by_key(|e| (e.from, e.to, e.kind()));
        let mut offsets = vec![0u32; nodes + 1];
        for e in &edges {
            offsets[e.from as usize + 1] += 1;
        }
        for v in 0..nodes {
            offsets[v + 1] += offsets[v];
        }
        Graph { offsets, edges }
    }

    /// The out-edges of `v`, with their ids.
    pub fn out(&self, v: u32) -> impl Iterator<Item = (u32, &Edge)> {
        let range = self.offsets[v as usize]..self.offsets[v as usize + 1];
        range.clone().zip(&self.edges[range.start as usize..range.end as usize])
    }

    /// How many edges of each kind the graph holds.
    pub fn count(&self, kind: EdgeKind) -> u64 {
        self.edges.iter().filter(|e| e.kind() == kind).count() as u64
    }
}

/// When a transaction began and ended for real-time and process order: its history positions when every
/// transaction has them (see [`super::Txn::positions`]), else its times.
pub(crate) struct Clock {
    by_position: bool,
}

impl Clock {
    /// Positions when every transaction has them, else times.
    pub fn of(index: &Index<'_>) -> Clock {
        Clock {
            by_position: !index.txns.is_empty() && index.txns.iter().all(|t| t.positions.is_some()),
        }
    }

    /// `(began, ended)` of a transaction.
    pub fn span(&self, txn: &super::Txn) -> (u64, u64) {
        match txn.positions {
            Some(positions) if self.by_position => positions,
            _ => (txn.invoke_time_ns, txn.complete_time_ns),
        }
    }
}

/// Real-time edges among the committed transactions (`in_graph`), transitively reduced (see the module comment).
pub(crate) fn realtime_edges(index: &Index<'_>, in_graph: &[bool], out: &mut Vec<Edge>) {
    let clock = Clock::of(index);
    // (time, 0 = invocation | 1 = completion, txn): invocations first at equal times, so that only a completion
    // strictly before an invocation orders two transactions.
    let mut events: Vec<(u64, u8, u32)> = Vec::with_capacity(index.txns.len() * 2);
    for (t, txn) in index.txns.iter().enumerate() {
        if !in_graph[t] {
            continue;
        }
        let (began, ended) = clock.span(txn);
        events.push((began, 0, t as u32));
        if txn.outcome == TxnOutcome::Ok {
            events.push((ended, 1, t as u32));
        }
    }
    events.sort_unstable();
    // Completions arrive in order, so the frontier is sorted by completion and the members a completion removes
    // (completed before its own invocation) are a prefix.
    let mut frontier: VecDeque<u32> = VecDeque::new();
    for (_, event, t) in events {
        if event == 0 {
            out.extend(frontier.iter().map(|&from| Edge {
                from,
                to: t,
                why: Why::Realtime,
            }));
        } else {
            let (began, _) = clock.span(&index.txns[t as usize]);
            while frontier
                .front()
                .is_some_and(|&f| clock.span(&index.txns[f as usize]).1 < began)
            {
                frontier.pop_front();
            }
            frontier.push_back(t);
        }
    }
}

/// Process-order edges: each committed transaction follows its process's previous `ok` one. None leave an `info`
/// transaction, which may have committed after the process moved on.
pub(crate) fn process_edges(index: &Index<'_>, in_graph: &[bool], out: &mut Vec<Edge>) {
    let clock = Clock::of(index);
    let mut order: Vec<u32> = (0..index.txns.len() as u32).filter(|&t| in_graph[t as usize]).collect();
    order.sort_by_key(|&t| {
        let txn = &index.txns[t as usize];
        (txn.process, clock.span(txn).0, t)
    });
    let mut process = None;
    let mut last_ok: Option<u32> = None;
    for t in order {
        let txn = &index.txns[t as usize];
        if process != Some(txn.process) {
            process = Some(txn.process);
            last_ok = None;
        }
        if let Some(from) = last_ok {
            out.push(Edge {
                from,
                to: t,
                why: Why::Process,
            });
        }
        if txn.outcome == TxnOutcome::Ok {
            last_ok = Some(t);
        }
    }
}

/// The strongly connected components with two or more nodes (the only ones that hold a cycle: there are no
/// self-edges), each sorted, in order of their smallest node. Tarjan's algorithm with an explicit stack.
pub(crate) fn strongly_connected(graph: &Graph) -> Vec<Vec<u32>> {
    let nodes = graph.offsets.len() - 1;
    let mut tarjan = Tarjan {
        graph,
        order: vec![UNVISITED; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        calls: Vec::new(),
        counter: 0,
        components: Vec::new(),
    };
    for root in 0..nodes as u32 {
        let has_edges = graph.offsets[root as usize] < graph.offsets[root as usize + 1];
        if has_edges && tarjan.order[root as usize] == UNVISITED {
            tarjan.run(root);
        }
    }
    let mut components = tarjan.components;
    components.sort_unstable_by_key(|c| c[0]);
    components
}

const UNVISITED: u32 = u32::MAX;

/// The state of one Tarjan run, with the recursion turned into `calls`.
struct Tarjan<'g> {
    graph: &'g Graph,
    /// Discovery order per node, `UNVISITED` until visited.
    order: Vec<u32>,
    /// Lowest discovery order reachable per node.
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    /// The explicit call stack: (node, position of its next out-edge to look at).
    calls: Vec<(u32, u32)>,
    counter: u32,
    components: Vec<Vec<u32>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: u32) {
        self.order[v as usize] = self.counter;
        self.low[v as usize] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v as usize] = true;
        self.calls.push((v, self.graph.offsets[v as usize]));
    }

    fn run(&mut self, root: u32) {
        self.visit(root);
        while let Some(&mut (v, ref mut next)) = self.calls.last_mut() {
            if *next < self.graph.offsets[v as usize + 1] {
                let w = self.graph.edges[*next as usize].to;
                *next += 1;
                if self.order[w as usize] == UNVISITED {
                    self.visit(w);
                } else if self.on_stack[w as usize] {
                    self.low[v as usize] = self.low[v as usize].min(self.order[w as usize]);
                }
                continue;
            }
            self.calls.pop();
            if let Some(&(parent, _)) = self.calls.last() {
                self.low[parent as usize] = self.low[parent as usize].min(self.low[v as usize]);
            }
            if self.low[v as usize] == self.order[v as usize] {
                self.pop_component(v);
            }
        }
    }

    fn pop_component(&mut self, root: u32) {
        let mut component = Vec::new();
        loop {
            let w = self.stack.pop().expect("Tarjan: a component's root is on the stack");
            self.on_stack[w as usize] = false;
            component.push(w);
            if w == root {
                break;
            }
        }
        if component.len() >= 2 {
            component.sort_unstable();
            self.components.push(component);
        }
    }
}
