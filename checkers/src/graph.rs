//! A compact directed graph with labelled edges, and the two searches the
//! checkers need: strongly connected components (any cycle lives inside
//! one) and the shortest cycle inside a component (the smallest
//! counterexample).
//!
//! Nodes are dense `u32` ids; edges are stored once, in compressed sparse
//! row form, so graphs of millions of transactions stay small and
//! cache-friendly.

use std::collections::VecDeque;

/// A graph under construction: an edge list.
pub struct GraphBuilder<L> {
    nodes: usize,
    /// Lists appended whole ([`GraphBuilder::append`]), kept as they are
    /// rather than copied: their edges come before `edges`, in this order.
    earlier: Vec<Vec<(u32, u32, L)>>,
    edges: Vec<(u32, u32, L)>,
}

impl<L: Copy> GraphBuilder<L> {
    /// An empty graph on `nodes` nodes.
    pub fn new(nodes: usize) -> Self {
        GraphBuilder {
            nodes,
            earlier: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// Adds a node and returns its id.
    pub fn add_node(&mut self) -> u32 {
        self.nodes += 1;
        (self.nodes - 1) as u32
    }

    /// Number of nodes so far.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// Adds an edge; self-loops are dropped (they never witness anything
    /// here: a transaction does not depend on itself).
    pub fn edge(&mut self, from: u32, to: u32, label: L) {
        if from != to {
            self.edges.push((from, to, label));
        }
    }

    /// Room for `extra` more edges.
    pub fn reserve(&mut self, extra: usize) {
        self.edges.reserve(extra);
    }

    /// Adds `other`'s edges after this one's (the nodes are the larger
    /// set of the two), without copying them.
    pub fn append(&mut self, other: GraphBuilder<L>) {
        self.nodes = self.nodes.max(other.nodes);
        let mine = std::mem::take(&mut self.edges);
        let lists = [mine].into_iter().chain(other.earlier).chain([other.edges]);
        self.earlier.extend(lists.filter(|l| !l.is_empty()));
    }

    /// The edges added so far, in the order they were added.
    pub fn edges(&self) -> impl Iterator<Item = &(u32, u32, L)> {
        self.earlier.iter().flatten().chain(&self.edges)
    }

    /// Where each node's out-edges start in compressed sparse rows (the
    /// last entry: the edge count).
    fn offsets(&self) -> Vec<u32> {
        let n = self.nodes;
        let mut offsets = vec![0u32; n + 1];
        for &(f, _, _) in self.edges() {
            offsets[f as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        offsets
    }

    /// The out-edge targets in compressed sparse rows, without labels:
    /// (offsets, targets).
    fn rows(&self) -> (Vec<u32>, Vec<u32>) {
        let offsets = self.offsets();
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; offsets[self.nodes] as usize];
        for &(f, t, _) in self.edges() {
            targets[fill[f as usize] as usize] = t;
            fill[f as usize] += 1;
        }
        (offsets, targets)
    }

    /// A topological order of the nodes `keep` admits (Kahn's, last found
    /// first), or `None` when the graph has a cycle: what [`Graph`] would
    /// give, without laying out the labels a graph with no cycle to
    /// explain never reads.
    pub fn topo_order(&self, keep: impl Fn(u32) -> bool) -> Option<Vec<u32>> {
        let n = self.nodes;
        let (offsets, targets) = self.rows();
        let mut indeg = in_degrees(n, &targets);
        let mut stack: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
        let mut order = Vec::with_capacity(n);
        let mut done = 0usize;
        while let Some(v) = stack.pop() {
            done += 1;
            if keep(v) {
                order.push(v);
            }
            for &w in &targets[offsets[v as usize] as usize..offsets[v as usize + 1] as usize] {
                indeg[w as usize] -= 1;
                if indeg[w as usize] == 0 {
                    stack.push(w);
                }
            }
        }
        (done == n).then_some(order)
    }

    /// A topological order that takes the smallest ready node first (of
    /// it, the nodes `keep` admits), or `None` when the graph has a cycle.
    /// When node ids follow the history, the order strays from it only
    /// where an edge forces it, so whoever replays the order (the
    /// certifier) reads the history nearly in sequence instead of at
    /// random. No label is laid out: an acyclic graph is only ordered.
    pub fn topo_order_by_id(&self, keep: impl Fn(u32) -> bool) -> Option<Vec<u32>> {
        let (offsets, targets) = self.rows();
        order_by_id(&offsets, &targets, keep)
    }

    /// Freezes into compressed sparse rows.
    pub fn build(self) -> Graph<L> {
        let offsets = self.offsets();
        let m = offsets[self.nodes] as usize;
        let mut fill = offsets.clone();
        let mut adj = vec![0u32; m];
        // Every slot is filled below; the first label is only a filler.
        let mut labels: Vec<L> = match self.edges().next() {
            Some(&(_, _, l)) => vec![l; m],
            None => Vec::new(),
        };
        for (f, t, l) in self.earlier.into_iter().flatten().chain(self.edges) {
            let slot = fill[f as usize] as usize;
            fill[f as usize] += 1;
            adj[slot] = t;
            labels[slot] = l;
        }
        Graph {
            offsets,
            targets: adj,
            labels,
        }
    }
}

/// A frozen graph. Edge ids are positions in the CSR arrays.
pub struct Graph<L> {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    labels: Vec<L>,
}

/// One edge of a found cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathEdge<L> {
    pub from: u32,
    pub to: u32,
    pub label: L,
}

impl<L: Copy> Graph<L> {
    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// Out-edges of `v` as (edge id, target).
    pub fn out(&self, v: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let a = self.offsets[v as usize];
        let b = self.offsets[v as usize + 1];
        (a..b).map(move |e| (e, self.targets[e as usize]))
    }

    /// The label of an edge.
    pub fn label(&self, e: u32) -> L {
        self.labels[e as usize]
    }

    /// A topological order of every node (Kahn's algorithm), or `None` if
    /// the graph has a cycle: the order a witness is read from.
    pub fn topological_order(&self) -> Option<Vec<u32>> {
        let n = self.node_count();
        let mut indeg = in_degrees(n, &self.targets);
        let mut order: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
        let mut i = 0;
        while i < order.len() {
            let v = order[i];
            i += 1;
            for (_, t) in self.out(v) {
                indeg[t as usize] -= 1;
                if indeg[t as usize] == 0 {
                    order.push(t);
                }
            }
        }
        (order.len() == n).then_some(order)
    }

    /// Strongly connected components with more than one node, by an
    /// iterative Tarjan (no recursion, so deep graphs cannot overflow the
    /// stack). `keep` filters edges.
    pub fn cyclic_components(&self, keep: impl Fn(L) -> bool) -> Vec<Vec<u32>> {
        let n = self.node_count();
        const UNSEEN: u32 = u32::MAX;
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut call: Vec<(u32, u32)> = Vec::new(); // (node, next edge id)
        let mut next_index = 0u32;
        let mut out = Vec::new();
        for root in 0..n as u32 {
            if index[root as usize] != UNSEEN {
                continue;
            }
            call.push((root, self.offsets[root as usize]));
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(&(v, start_edge)) = call.last() {
                let end = self.offsets[v as usize + 1];
                let mut e = start_edge;
                let mut descended = false;
                while e < end {
                    let edge = e;
                    e += 1;
                    if !keep(self.labels[edge as usize]) {
                        continue;
                    }
                    let w = self.targets[edge as usize];
                    if index[w as usize] == UNSEEN {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        descended = true;
                        break;
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                }
                let top = call.len() - 1;
                call[top].1 = e;
                if descended {
                    let w = self.targets[(e - 1) as usize];
                    call.push((w, self.offsets[w as usize]));
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent as usize] = low[parent as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    let mut comp = Vec::new();
                    loop {
                        let w = stack.pop().expect("tarjan stack");
                        on_stack[w as usize] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        out.push(comp);
                    }
                }
            }
        }
        out
    }

    /// The cheapest cycle through `start` using only nodes for which
    /// `inside` holds and edges `keep` accepts; `weight` gives each edge a
    /// cost of 0 or 1 (0-1 BFS). Returns the cycle's edges in order.
    pub fn shortest_cycle_through(
        &self,
        start: u32,
        inside: impl Fn(u32) -> bool,
        keep: impl Fn(L) -> bool,
        weight: impl Fn(L) -> u32,
        scratch: &mut CycleScratch,
    ) -> Option<Vec<PathEdge<L>>> {
        scratch.reset(self.node_count());
        let mut dq: VecDeque<u32> = VecDeque::new();
        // Distances are to nodes; the cycle closes when an edge returns to
        // `start`. Track the best closing edge.
        scratch.set(start, 0, u32::MAX);
        dq.push_back(start);
        let mut best: Option<(u32, u32, u32)> = None; // (cost, from, edge)
        while let Some(v) = dq.pop_front() {
            let dv = scratch.dist[v as usize];
            if scratch.done[v as usize] {
                continue;
            }
            scratch.done[v as usize] = true;
            if let Some((c, _, _)) = best {
                if dv >= c {
                    break;
                }
            }
            for (e, w) in self.out(v) {
                let l = self.labels[e as usize];
                if !keep(l) || !inside(w) {
                    continue;
                }
                let nd = dv + weight(l);
                if w == start {
                    if best.is_none_or(|(c, _, _)| nd < c) {
                        best = Some((nd, v, e));
                    }
                    continue;
                }
                if nd < scratch.dist[w as usize] {
                    scratch.set(w, nd, e);
                    if nd == dv {
                        dq.push_front(w);
                    } else {
                        dq.push_back(w);
                    }
                }
            }
        }
        let (_, last_from, last_edge) = best?;
        let mut path = vec![PathEdge {
            from: last_from,
            to: start,
            label: self.labels[last_edge as usize],
        }];
        let mut v = last_from;
        while v != start {
            let e = scratch.via[v as usize];
            let from = self.source_of(e);
            path.push(PathEdge {
                from,
                to: v,
                label: self.labels[e as usize],
            });
            v = from;
        }
        path.reverse();
        Some(path)
    }

    fn source_of(&self, e: u32) -> u32 {
        // Binary search the CSR offsets for the row holding edge `e`.
        let i = self.offsets.partition_point(|&o| o <= e);
        (i - 1) as u32
    }
}

/// How many edges enter each of `n` nodes.
fn in_degrees(n: usize, targets: &[u32]) -> Vec<u32> {
    let mut indeg = vec![0u32; n];
    for &t in targets {
        indeg[t as usize] += 1;
    }
    indeg
}

/// Kahn's algorithm over compressed sparse rows, the smallest ready node
/// first; the nodes `keep` admits, or `None` on a cycle.
fn order_by_id(offsets: &[u32], targets: &[u32], keep: impl Fn(u32) -> bool) -> Option<Vec<u32>> {
    use std::cmp::Reverse;
    let n = offsets.len() - 1;
    let mut indeg = in_degrees(n, targets);
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut done = 0usize;
    // Ready nodes below the sweep point (all smaller than it), smallest
    // first; the sweep takes the others in id order.
    let mut ready: std::collections::BinaryHeap<Reverse<u32>> = Default::default();
    let mut sweep = 0u32;
    loop {
        let v = if let Some(Reverse(v)) = ready.pop() {
            v
        } else if (sweep as usize) < n {
            sweep += 1;
            if indeg[sweep as usize - 1] != 0 {
                continue;
            }
            sweep - 1
        } else {
            break;
        };
        done += 1;
        if keep(v) {
            order.push(v);
        }
        for &t in &targets[offsets[v as usize] as usize..offsets[v as usize + 1] as usize] {
            indeg[t as usize] -= 1;
            if indeg[t as usize] == 0 && t < sweep {
                ready.push(Reverse(t));
            }
        }
    }
    (done == n).then_some(order)
}

/// Reusable buffers for [`Graph::shortest_cycle_through`], so repeated
/// searches touch only the nodes they visit.
#[derive(Default)]
pub struct CycleScratch {
    dist: Vec<u32>,
    via: Vec<u32>,
    done: Vec<bool>,
    touched: Vec<u32>,
}

impl CycleScratch {
    fn reset(&mut self, n: usize) {
        if self.dist.len() != n {
            self.dist = vec![u32::MAX; n];
            self.via = vec![u32::MAX; n];
            self.done = vec![false; n];
            self.touched.clear();
            return;
        }
        for &v in &self.touched {
            self.dist[v as usize] = u32::MAX;
            self.via[v as usize] = u32::MAX;
            self.done[v as usize] = false;
        }
        self.touched.clear();
    }

    fn set(&mut self, v: u32, d: u32, via: u32) {
        if self.dist[v as usize] == u32::MAX {
            self.touched.push(v);
        }
        self.dist[v as usize] = d;
        self.via[v as usize] = via;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32)]) -> Graph<u8> {
        let mut b = GraphBuilder::new(n);
        for &(f, t) in edges {
            b.edge(f, t, 1);
        }
        b.build()
    }

    #[test]
    fn finds_components() {
        let g = graph(6, &[(0, 1), (1, 2), (2, 0), (3, 4), (4, 5)]);
        let mut comps = g.cyclic_components(|_| true);
        assert_eq!(comps.len(), 1);
        comps[0].sort();
        assert_eq!(comps[0], vec![0, 1, 2]);
        assert!(graph(3, &[(0, 1), (1, 2)])
            .cyclic_components(|_| true)
            .is_empty());
    }

    /// The order by id by its definition, slowly: of the nodes with no
    /// edge left from an unplaced node, the smallest, again and again.
    fn smallest_ready_first(n: u32, edges: &[(u32, u32)]) -> Option<Vec<u32>> {
        let mut placed = vec![false; n as usize];
        let mut order = Vec::new();
        while order.len() < n as usize {
            let ready = (0..n).find(|&v| {
                !placed[v as usize]
                    && !edges
                        .iter()
                        .any(|&(f, t)| t == v && f != v && !placed[f as usize])
            })?;
            placed[ready as usize] = true;
            order.push(ready);
        }
        Some(order)
    }

    #[test]
    fn the_order_by_id_is_the_smallest_ready_node_first() {
        use rand::{RngExt, SeedableRng};
        // Small random graphs, acyclic (edges only go up) and not.
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x6a9);
        for round in 0..200 {
            let n = rng.random_range(1..31u32);
            let mut b = GraphBuilder::new(n as usize);
            let mut edges = Vec::new();
            for _ in 0..rng.random_range(0..3 * n) {
                let (f, t) = (rng.random_range(0..n), rng.random_range(0..n));
                // Every fifth graph may have a back edge.
                if f < t || round % 5 == 0 {
                    b.edge(f, t, f as u8);
                    edges.push((f, t));
                }
            }
            let want = smallest_ready_first(n, &edges);
            assert_eq!(b.topo_order_by_id(|_| true), want, "round {round}");
            let odd = want.map(|o| o.into_iter().filter(|v| v % 2 == 1).collect::<Vec<_>>());
            assert_eq!(b.topo_order_by_id(|v| v % 2 == 1), odd, "round {round}");
        }
        // A cycle gives no order; a chain gives its own order.
        let mut b = GraphBuilder::new(3);
        b.edge(2, 1, ());
        b.edge(1, 0, ());
        assert_eq!(b.topo_order_by_id(|_| true), Some(vec![2, 1, 0]));
        b.edge(0, 2, ());
        assert_eq!(b.topo_order_by_id(|_| true), None);
    }

    #[test]
    fn deep_chains_do_not_overflow() {
        let n = 1_000_000u32;
        let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (i, i + 1)).chain([(n - 1, 0)]).collect();
        let g = graph(n as usize, &edges);
        let comps = g.cyclic_components(|_| true);
        assert_eq!(comps.len(), 1);
        assert_eq!(comps[0].len(), n as usize);
    }

    #[test]
    fn shortest_cycle_prefers_fewer_hops() {
        // 0->1->2->3->0 and a shortcut 1->0.
        let g = graph(4, &[(0, 1), (1, 2), (2, 3), (3, 0), (1, 0)]);
        let mut s = CycleScratch::default();
        let c = g
            .shortest_cycle_through(0, |_| true, |_| true, |_| 1, &mut s)
            .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].from, c[0].to, c[1].from, c[1].to), (0, 1, 1, 0));
        // Filtered: without node 1 there is no cycle through 0.
        assert!(g
            .shortest_cycle_through(0, |v| v != 1, |_| true, |_| 1, &mut s)
            .is_none());
    }

    #[test]
    fn zero_weight_edges_are_free() {
        let mut b = GraphBuilder::new(4);
        // 0 -> 1 (cost 1) -> 0 (cost 1); 0 -> 2 -> 3 -> 0 all cost 0.
        b.edge(0, 1, 1u8);
        b.edge(1, 0, 1);
        b.edge(0, 2, 0);
        b.edge(2, 3, 0);
        b.edge(3, 0, 0);
        let g = b.build();
        let mut s = CycleScratch::default();
        let c = g
            .shortest_cycle_through(0, |_| true, |_| true, |l| l as u32, &mut s)
            .unwrap();
        assert_eq!(c.len(), 3);
    }
}
