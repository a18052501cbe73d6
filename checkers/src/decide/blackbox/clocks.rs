//! Reachability by vector clocks over a chain cover.
//!
//! A *chain cover* splits a DAG's nodes into chains, each a path of the
//! graph (every node reaches the ones after it on its chain). With `k`
//! chains, a node's *vector clock* holds, per chain, how far along that
//! chain the nodes reaching it go; then `u` reaches `v` iff `u`'s place on
//! its chain is within `v`'s clock for that chain. One topological pass
//! computes every clock in O((nodes + edges) · k), and each query is then
//! O(1), where a transitive closure would take nodes² bits. Sessions are
//! such chains once session order is an edge of the graph (strong-session
//! levels): a history of 24 clients has `k = 24` whatever its length
//! (Mazurkiewicz, Lamport; dbcop and AWDIT use the same idea).

/// No chain (a node outside every session: never queried from).
pub const NO_CHAIN: u32 = u32::MAX;

/// Each node's chain and place on it.
pub struct ChainCover {
    /// The node's chain, or [`NO_CHAIN`].
    pub chain: Vec<u32>,
    /// The node's place on its chain (0 first).
    pub pos: Vec<u32>,
    /// How many chains.
    pub chains: usize,
}

impl ChainCover {
    /// Chains given as node sequences; nodes in none get [`NO_CHAIN`].
    /// The caller promises each sequence is a path of the graph.
    pub fn of_paths(nodes: usize, paths: impl Iterator<Item = Vec<u32>>) -> ChainCover {
        let mut chain = vec![NO_CHAIN; nodes];
        let mut pos = vec![0u32; nodes];
        let mut chains = 0;
        for path in paths {
            for (i, &v) in path.iter().enumerate() {
                chain[v as usize] = chains as u32;
                pos[v as usize] = i as u32;
            }
            chains += 1;
        }
        ChainCover { chain, pos, chains }
    }
}

/// Every node's vector clock, and the topological order it was computed
/// in.
pub struct Clocks {
    k: usize,
    /// `clock[v * k + c]`: one past the last place on chain `c` of a node
    /// reaching `v` (0: none does). A node reaches itself.
    clock: Vec<u32>,
    /// The nodes in the topological order of the pass.
    pub order: Vec<u32>,
}

/// The graph has a cycle; these nodes form one, in order.
pub struct Cyclic(pub Vec<u32>);

impl Clocks {
    /// The clocks of a graph given as adjacency arrays (`adj[offsets[v]..
    /// offsets[v + 1]]` are `v`'s successors); a cycle instead when there
    /// is one.
    pub fn compute(cover: &ChainCover, offsets: &[u32], adj: &[u32]) -> Result<Clocks, Cyclic> {
        let n = offsets.len() - 1;
        let k = cover.chains.max(1);
        let mut indeg = vec![0u32; n];
        for &w in adj {
            indeg[w as usize] += 1;
        }
        let mut clock = vec![0u32; n * k];
        for v in 0..n {
            let c = cover.chain[v];
            if c != NO_CHAIN {
                clock[v * k + c as usize] = cover.pos[v] + 1;
            }
        }
        let mut order: Vec<u32> = Vec::with_capacity(n);
        order.extend((0..n as u32).filter(|&v| indeg[v as usize] == 0));
        let mut next = 0;
        while next < order.len() {
            let v = order[next] as usize;
            next += 1;
            for &w in &adj[offsets[v] as usize..offsets[v + 1] as usize] {
                let w = w as usize;
                let (src, dst) = if v < w {
                    let (lo, hi) = clock.split_at_mut(w * k);
                    (&lo[v * k..v * k + k], &mut hi[..k])
                } else {
                    let (lo, hi) = clock.split_at_mut(v * k);
                    (&hi[..k], &mut lo[w * k..w * k + k])
                };
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = (*d).max(*s);
                }
                indeg[w] -= 1;
                if indeg[w] == 0 {
                    order.push(w as u32);
                }
            }
        }
        if order.len() < n {
            return Err(Cyclic(cycle_among(&indeg, offsets, adj)));
        }
        Ok(Clocks { k, clock, order })
    }

    /// A node's clock: one entry per chain.
    pub fn of(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.clock[v * self.k..v * self.k + self.k]
    }

    /// Whether `u` reaches `v` (a node reaches itself).
    pub fn reaches(&self, cover: &ChainCover, u: u32, v: u32) -> bool {
        let c = cover.chain[u as usize];
        c != NO_CHAIN && cover.pos[u as usize] < self.of(v)[c as usize]
    }
}

/// A cycle among the nodes a topological pass could not reach (those left
/// with in-degree > 0): each has a predecessor among them, so following
/// predecessors from any of them must come back.
fn cycle_among(indeg: &[u32], offsets: &[u32], adj: &[u32]) -> Vec<u32> {
    let n = indeg.len();
    let mut pred = vec![u32::MAX; n];
    for v in (0..n).filter(|&v| indeg[v] > 0) {
        for &w in &adj[offsets[v] as usize..offsets[v + 1] as usize] {
            pred[w as usize] = v as u32;
        }
    }
    let Some(start) = (0..n).find(|&v| indeg[v] > 0) else {
        return Vec::new();
    };
    let mut seen_at = vec![u32::MAX; n];
    let mut path: Vec<u32> = Vec::new();
    let mut v = start;
    while seen_at[v] == u32::MAX && pred[v] != u32::MAX {
        seen_at[v] = path.len() as u32;
        path.push(v as u32);
        v = pred[v] as usize;
    }
    if seen_at[v] == u32::MAX {
        // Unreachable: a left-over node always has a left-over predecessor.
        return path;
    }
    let mut cycle = path.split_off(seen_at[v] as usize);
    cycle.reverse();
    cycle
}

/// Adjacency arrays (CSR) of `nodes` nodes from an edge list.
pub fn adjacency(
    nodes: usize,
    edges: impl Iterator<Item = (u32, u32)> + Clone,
) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32; nodes + 1];
    for (f, _) in edges.clone() {
        offsets[f as usize + 1] += 1;
    }
    for i in 0..nodes {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut adj = vec![0u32; offsets[nodes] as usize];
    for (f, t) in edges {
        adj[fill[f as usize] as usize] = t;
        fill[f as usize] += 1;
    }
    (offsets, adj)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force reachability by depth-first search.
    fn reach(offsets: &[u32], adj: &[u32], u: u32, v: u32) -> bool {
        let mut stack = vec![u];
        let mut seen = vec![false; offsets.len() - 1];
        while let Some(x) = stack.pop() {
            if x == v {
                return true;
            }
            if !std::mem::replace(&mut seen[x as usize], true) {
                stack.extend(&adj[offsets[x as usize] as usize..offsets[x as usize + 1] as usize]);
            }
        }
        false
    }

    #[test]
    fn clocks_agree_with_search_on_random_dags() {
        let mut seed = 7u64;
        let mut rnd = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..200 {
            let chains = 1 + rnd(4) as usize;
            let len = 1 + rnd(6) as usize;
            let n = chains * len;
            // Node c * len + i is place i on chain c; chain edges, then
            // random forward edges by a hidden topological rank.
            let mut edges: Vec<(u32, u32)> = Vec::new();
            for c in 0..chains {
                for i in 1..len {
                    edges.push(((c * len + i - 1) as u32, (c * len + i) as u32));
                }
            }
            let rank: Vec<u64> = (0..n).map(|v| (v % len) as u64 * 10 + rnd(10)).collect();
            for _ in 0..rnd(2 * n as u64 + 1) {
                let (u, v) = (rnd(n as u64) as u32, rnd(n as u64) as u32);
                if rank[u as usize] < rank[v as usize] && (u as usize % len) <= (v as usize % len) {
                    edges.push((u, v));
                }
            }
            let cover = ChainCover::of_paths(
                n,
                (0..chains).map(|c| (0..len).map(|i| (c * len + i) as u32).collect()),
            );
            let (offsets, adj) = adjacency(n, edges.iter().copied());
            let Ok(clocks) = Clocks::compute(&cover, &offsets, &adj) else {
                panic!("the graph is acyclic by construction");
            };
            assert_eq!(clocks.order.len(), n);
            for u in 0..n as u32 {
                for v in 0..n as u32 {
                    assert_eq!(
                        clocks.reaches(&cover, u, v),
                        reach(&offsets, &adj, u, v),
                        "{u} -> {v}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_cycle_is_returned_as_one() {
        // 0 -> 1 -> 2 -> 1, 2 -> 3 (downstream of the cycle, on none).
        let edges = [(0, 1), (1, 2), (2, 1), (2, 3)];
        let cover = ChainCover::of_paths(4, std::iter::empty());
        let (offsets, adj) = adjacency(4, edges.iter().copied());
        let Err(Cyclic(cyc)) = Clocks::compute(&cover, &offsets, &adj) else {
            panic!("1 and 2 form a cycle");
        };
        let mut cyc = cyc;
        cyc.sort_unstable();
        assert_eq!(cyc, vec![1, 2]);
    }
}
