//! A graph that stays acyclic as edges come and go: the Pearce–Kelly
//! dynamic topological order.
//!
//! The solver adds the edges implied by each guess it makes and must learn
//! at once whether they close a cycle, and which guesses the cycle rests
//! on. Pearce and Kelly keep a topological order and, on inserting `u → v`
//! against it, search only the nodes between `v` and `u` in that order, then
//! reorder just those. Removing edges never breaks a topological order, so
//! backtracking is a cheap undo of the last insertions.
//!
//! Every edge carries a tag (the solver literal that implied it, or
//! [`FIXED`] for known edges) so a cycle can be turned into a clause.

/// The tag of an edge that no guess implies.
pub const FIXED: u32 = u32::MAX;

/// One edge of a cycle: `(from, to, tag)`.
pub type TaggedEdge = (u32, u32, u32);

/// A directed graph kept acyclic, with a topological order.
#[derive(Clone)]
pub struct Acyclic {
    out: Vec<Vec<(u32, u32)>>,
    inc: Vec<Vec<(u32, u32)>>,
    /// Position of each node in the topological order.
    ord: Vec<u32>,
    /// Edges in insertion order, for undo.
    trail: Vec<(u32, u32)>,
    // Search scratch.
    mark: Vec<u32>,
    epoch: u32,
    parent: Vec<(u32, u32)>,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    bwd: Vec<u32>,
}

impl Acyclic {
    /// An empty graph whose initial topological order is `order` (a
    /// permutation of the nodes); a good initial order keeps searches short.
    pub fn new(order: &[u32]) -> Acyclic {
        let n = order.len();
        let mut ord = vec![0u32; n];
        for (i, &v) in order.iter().enumerate() {
            ord[v as usize] = i as u32;
        }
        Acyclic {
            out: vec![Vec::new(); n],
            inc: vec![Vec::new(); n],
            ord,
            trail: Vec::new(),
            mark: vec![0; n],
            epoch: 0,
            parent: vec![(u32::MAX, FIXED); n],
            stack: Vec::new(),
            fwd: Vec::new(),
            bwd: Vec::new(),
        }
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.ord.len()
    }

    /// Current number of edges; pass it to [`Acyclic::undo_to`] later.
    pub fn checkpoint(&self) -> usize {
        self.trail.len()
    }

    /// Removes every edge added after `checkpoint`, newest first.
    pub fn undo_to(&mut self, checkpoint: usize) {
        while self.trail.len() > checkpoint {
            let (u, v) = self.trail.pop().expect("trail");
            self.out[u as usize].pop();
            self.inc[v as usize].pop();
        }
    }

    /// The transitive closure of the current graph as bit rows, over the
    /// nodes that have an edge; `None` if that would take more than
    /// `max_bytes`. Lets a batch of reachability queries cost O(1) each.
    pub fn closure(&self, max_bytes: usize) -> Option<Closure> {
        let n = self.ord.len();
        let mut dense = vec![u32::MAX; n];
        let mut nodes: Vec<u32> = (0..n as u32)
            .filter(|&v| !self.out[v as usize].is_empty() || !self.inc[v as usize].is_empty())
            .collect();
        let words = nodes.len().div_ceil(64);
        if nodes.len().saturating_mul(words).saturating_mul(8) > max_bytes {
            return None;
        }
        // Reverse topological order: successors first.
        nodes.sort_unstable_by_key(|&v| std::cmp::Reverse(self.ord[v as usize]));
        for (i, &v) in nodes.iter().enumerate() {
            dense[v as usize] = i as u32;
        }
        let mut bits = vec![0u64; nodes.len() * words];
        let mut succ: Vec<usize> = Vec::new();
        for (i, &v) in nodes.iter().enumerate() {
            // Nearest successors first: a later successor already reached
            // through an earlier one costs one bit test, not a row merge.
            succ.clear();
            succ.extend(
                self.out[v as usize]
                    .iter()
                    .map(|&(w, _)| dense[w as usize] as usize),
            );
            succ.sort_unstable_by(|a, b| b.cmp(a));
            succ.dedup();
            let (lo, hi) = bits.split_at_mut(i * words);
            let row = &mut hi[..words];
            for &j in &succ {
                // j < i: w comes later in the order, so its row is done.
                if row[j / 64] & (1 << (j % 64)) != 0 {
                    continue;
                }
                row[j / 64] |= 1 << (j % 64);
                for (a, b) in row.iter_mut().zip(&lo[j * words..(j + 1) * words]) {
                    *a |= *b;
                }
            }
        }
        Some(Closure { dense, bits, words })
    }

    /// Every node's position in the current topological order.
    pub fn positions(&self) -> Vec<u32> {
        self.ord.clone()
    }

    /// The current topological order position of a node.
    pub fn position(&self, v: u32) -> u32 {
        self.ord[v as usize]
    }

    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        self.epoch
    }

    /// True when `to` can reach `from`, i.e. adding `from → to` would close
    /// a cycle. Does not change the graph.
    pub fn would_cycle(&mut self, from: u32, to: u32) -> bool {
        if from == to {
            return true;
        }
        if self.ord[to as usize] > self.ord[from as usize] {
            return false;
        }
        self.search_forward(to, from).is_some()
    }

    /// Forward search from `start` through nodes no later than `target` in
    /// the order; on reaching `target`, returns the path as tagged edges.
    fn search_forward(&mut self, start: u32, target: u32) -> Option<Vec<TaggedEdge>> {
        let ep = self.next_epoch();
        let limit = self.ord[target as usize];
        self.stack.clear();
        self.fwd.clear();
        self.stack.push(start);
        self.mark[start as usize] = ep;
        self.fwd.push(start);
        while let Some(x) = self.stack.pop() {
            for &(y, tag) in &self.out[x as usize] {
                if self.mark[y as usize] == ep || self.ord[y as usize] > limit {
                    continue;
                }
                self.mark[y as usize] = ep;
                self.parent[y as usize] = (x, tag);
                if y == target {
                    let mut path = Vec::new();
                    let mut cur = y;
                    while cur != start {
                        let (p, t) = self.parent[cur as usize];
                        path.push((p, cur, t));
                        cur = p;
                    }
                    path.reverse();
                    return Some(path);
                }
                self.stack.push(y);
                self.fwd.push(y);
            }
        }
        None
    }

    /// Adds `from → to` tagged `tag`. If it would close a cycle, the graph is
    /// unchanged and the cycle (ending with the new edge) is returned.
    pub fn add(&mut self, from: u32, to: u32, tag: u32) -> Result<(), Vec<TaggedEdge>> {
        if from == to {
            return Err(vec![(from, to, tag)]);
        }
        let (lb, ub) = (self.ord[to as usize], self.ord[from as usize]);
        if lb < ub {
            // Against the order: Pearce–Kelly discovery and reorder.
            if let Some(mut path) = self.search_forward(to, from) {
                path.push((from, to, tag));
                return Err(path);
            }
            // `self.fwd` holds the nodes reachable from `to` within bounds.
            let ep = self.next_epoch();
            self.bwd.clear();
            self.stack.clear();
            self.stack.push(from);
            self.mark[from as usize] = ep;
            self.bwd.push(from);
            while let Some(x) = self.stack.pop() {
                for &(y, _) in &self.inc[x as usize] {
                    if self.mark[y as usize] == ep || self.ord[y as usize] < lb {
                        continue;
                    }
                    self.mark[y as usize] = ep;
                    self.stack.push(y);
                    self.bwd.push(y);
                }
            }
            self.reorder();
        }
        self.out[from as usize].push((to, tag));
        self.inc[to as usize].push((from, tag));
        self.trail.push((from, to));
        Ok(())
    }

    /// Places the backward set before the forward set, reusing their slots.
    fn reorder(&mut self) {
        let ord = &self.ord;
        self.fwd.sort_unstable_by_key(|&v| ord[v as usize]);
        self.bwd.sort_unstable_by_key(|&v| ord[v as usize]);
        let mut slots: Vec<u32> = self
            .bwd
            .iter()
            .chain(self.fwd.iter())
            .map(|&v| self.ord[v as usize])
            .collect();
        slots.sort_unstable();
        for (i, &v) in self.bwd.iter().chain(self.fwd.iter()).enumerate() {
            self.ord[v as usize] = slots[i];
        }
    }
}

/// Reachability between the nodes of an [`Acyclic`] at one moment.
pub struct Closure {
    dense: Vec<u32>,
    bits: Vec<u64>,
    words: usize,
}

impl Closure {
    /// True when there is a non-empty path `from ⇝ to`.
    pub fn reaches(&self, from: u32, to: u32) -> bool {
        let (a, b) = (self.dense[from as usize], self.dense[to as usize]);
        if a == u32::MAX || b == u32::MAX {
            return false;
        }
        let (a, b) = (a as usize, b as usize);
        self.bits[a * self.words + b / 64] & (1 << (b % 64)) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn detects_cycles_and_undoes() {
        let mut g = Acyclic::new(&[0, 1, 2, 3]);
        g.add(0, 1, 10).unwrap();
        g.add(1, 2, 11).unwrap();
        let cp = g.checkpoint();
        g.add(2, 3, 12).unwrap();
        let cyc = g.add(3, 0, 13).unwrap_err();
        let tags: Vec<u32> = cyc.iter().map(|e| e.2).collect();
        assert_eq!(tags, vec![10, 11, 12, 13]);
        assert!(g.would_cycle(2, 0));
        g.undo_to(cp);
        g.add(3, 0, 13).unwrap();
        assert!(g.would_cycle(2, 3));
        assert!(!g.would_cycle(0, 2));
    }

    #[test]
    fn agrees_with_a_naive_cycle_test_on_random_graphs() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200 {
            let n = rng.random_range(2..12u32);
            let order: Vec<u32> = (0..n).collect();
            let mut g = Acyclic::new(&order);
            let mut edges: Vec<(u32, u32)> = Vec::new();
            for _ in 0..30 {
                let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
                // Naive: does b reach a?
                let mut seen = vec![false; n as usize];
                let mut st = vec![b];
                seen[b as usize] = true;
                while let Some(x) = st.pop() {
                    for &(p, q) in &edges {
                        if p == x && !seen[q as usize] {
                            seen[q as usize] = true;
                            st.push(q);
                        }
                    }
                }
                let cyclic = seen[a as usize];
                match g.add(a, b, 0) {
                    Ok(()) => {
                        assert!(!cyclic);
                        edges.push((a, b));
                    }
                    Err(c) => {
                        assert!(cyclic);
                        // The cycle is closed and made of real edges.
                        assert_eq!(c.first().unwrap().0, c.last().unwrap().1);
                        for w in c.windows(2) {
                            assert_eq!(w[0].1, w[1].0);
                        }
                    }
                }
                // The order stays topological.
                for &(p, q) in &edges {
                    assert!(g.position(p) < g.position(q));
                }
                // The closure agrees with a naive search.
                let c = g.closure(1 << 20).unwrap();
                for x in 0..n {
                    let mut seen = vec![false; n as usize];
                    let mut st: Vec<u32> = edges.iter().filter(|e| e.0 == x).map(|e| e.1).collect();
                    while let Some(y) = st.pop() {
                        if !seen[y as usize] {
                            seen[y as usize] = true;
                            st.extend(edges.iter().filter(|e| e.0 == y).map(|e| e.1));
                        }
                    }
                    for y in 0..n {
                        assert_eq!(c.reaches(x, y), seen[y as usize], "{x} -> {y}");
                    }
                }
            }
        }
    }
}
