//! Orders for the general search: a topological order of the known graph
//! with ties broken by time or by layers, the witness version order it
//! gives, timestamp chains, and the guided polygraph (writers far apart in
//! the time spans or the guessed order assumed ordered).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::decide::blackbox::acyclic::{Acyclic, FIXED};
use crate::decide::blackbox::polygraph::{NodeEdge, Pairs, Polygraph};
use crate::decide::blackbox::solve::{solve, Solved};
use crate::decide::cycles::find_cycles;
use crate::decide::depgraph::{DepGraph, Label, Model, Orders, VersionOrder, Why};
use crate::index::{Index, INIT};

use super::types::{graph_of, GeneralOptions};

/// The transaction nodes of a polygraph sorted by their positions in an
/// acyclic order of its graph.
pub(super) fn txn_nodes_in_order(p: &Polygraph, pos: &[u32]) -> Vec<u32> {
    let n = match p.model {
        Model::Ser => p.txns,
        Model::Si => 2 * p.txns,
    } as u32;
    let mut nodes: Vec<u32> = (0..n).collect();
    nodes.sort_unstable_by_key(|&v| pos[v as usize]);
    nodes
}

/// The witness schedule of an acyclic dependency graph: its transaction
/// nodes in a topological order.
pub(crate) fn schedule_of(dg: &DepGraph) -> Option<Vec<u32>> {
    let order = dg.graph.topological_order()?;
    Some(
        order
            .into_iter()
            .filter(|&v| dg.txn_of(v).is_some())
            .collect(),
    )
}

/// Solves the polygraph that assumes an order between writers whose
/// intervals (`spans`, one per transaction) do not overlap, and checks the
/// version order it proposes: the witness schedule when that order is
/// valid, `None` (refuted or out of time) when it proves nothing.
pub(super) fn guided(
    ix: &Index,
    model: Model,
    orders: Orders,
    chains: &rustc_hash::FxHashMap<u32, Vec<u32>>,
    opts: &GeneralOptions,
    spans: &[(u64, u64)],
) -> Option<Vec<u32>> {
    let p = Polygraph::build_with(
        ix,
        model,
        orders,
        chains,
        Pairs::Guided(spans),
        opts.max_pairs,
    )
    .ok()?;
    let order = topo_order_by(ix, &p, Ties::Time)?;
    let mut g = Acyclic::new(&order);
    for &(f, t, _) in &p.known {
        g.add(f, t, FIXED).ok()?;
    }
    let open: Vec<u32> = (0..p.constraints.len() as u32).collect();
    let mut position = vec![0u32; p.nodes];
    for (i, &v) in order.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    let commit_node = |t: u32| match model {
        Model::Ser => t,
        Model::Si => 2 * t + 1,
    };
    let polarity: Vec<bool> = p
        .constraints
        .iter()
        .map(|c| position[commit_node(c.a) as usize] < position[commit_node(c.b) as usize])
        .collect();
    let pos = match solve(&p, g, &open, &polarity, opts.deadline, opts.strategy) {
        Solved::Sat(_, pos) => pos,
        _ => return None,
    };
    let vo = witness_order(ix, &|t| pos[commit_node(t) as usize]);
    let dg = DepGraph::build(ix, &vo, model, orders);
    if !find_cycles(&dg, orders).is_empty() {
        return None;
    }
    schedule_of(&dg)
}

/// White-box version orders: each key's writers in commit-timestamp order.
/// Writers without a commit timestamp are left to the solver. Writers that
/// share a commit timestamp are neighbours in the chain, and the polygraph
/// leaves only them unordered (the tie orders nothing between them, while
/// the other timestamps still order them against the rest).
pub fn timestamp_chains(ix: &Index) -> rustc_hash::FxHashMap<u32, Vec<u32>> {
    let mut per_key: rustc_hash::FxHashMap<u32, Vec<(u64, u32)>> = Default::default();
    for t in ix.committed_txns() {
        let Some(c) = ix.history.txns[t as usize].dbts.and_then(|d| d.commit) else {
            continue;
        };
        for w in ix.writes(t) {
            per_key.entry(w.key).or_default().push((c, t));
        }
    }
    per_key
        .into_iter()
        .map(|(k, mut ws)| {
            ws.sort_unstable();
            (k, ws.into_iter().map(|(_, t)| t).collect())
        })
        .collect()
}

/// A node-level cycle from the acyclic graph, as transaction edges with
/// their labels (looked up among the known edges and constraint sides).
pub(super) fn labelled_cycle(
    p: &Polygraph,
    cyc: &[(u32, u32, u32)],
) -> Vec<crate::decide::depgraph::TxnEdge> {
    let sides =
        (0..p.constraints.len()).flat_map(|c| p.side(c, true).iter().chain(p.side(c, false)));
    let pairs: Vec<(u32, u32)> = cyc.iter().map(|&(f, t, _)| (f, t)).collect();
    cycle_in(p, p.known.iter().chain(sides), &pairs)
}

/// A node-level cycle as transaction edges, each with the label of the
/// first of `edges` that joins its two nodes.
pub(super) fn cycle_in<'e>(
    p: &Polygraph,
    edges: impl Iterator<Item = &'e NodeEdge>,
    cyc: &[(u32, u32)],
) -> Vec<crate::decide::depgraph::TxnEdge> {
    let wanted: rustc_hash::FxHashSet<(u32, u32)> = cyc.iter().copied().collect();
    let mut labels: rustc_hash::FxHashMap<(u32, u32), Label> = Default::default();
    for &(f, t, l) in edges {
        if wanted.contains(&(f, t)) {
            labels.entry((f, t)).or_insert(l);
        }
    }
    let path: Vec<crate::graph::PathEdge<Label>> = cyc
        .iter()
        .filter_map(|&(f, t)| {
            labels.get(&(f, t)).map(|&label| crate::graph::PathEdge {
                from: f,
                to: t,
                label,
            })
        })
        .collect();
    let dg = graph_of(p, path.iter().map(|e| (e.from, e.to, e.label)));
    dg.to_txn_edges(&path)
}

/// The transactions a node-level cycle passes through.
pub(super) fn txns_of(p: &Polygraph, cyc: &[(u32, u32, u32)]) -> Vec<u32> {
    let mut out: Vec<u32> = cyc.iter().filter_map(|&(f, _, _)| p.txn_of(f)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// How a topological order of the known graph breaks ties.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ties {
    /// By time, when the history has times (a begin node by its
    /// transaction's start, a commit or SER node by its end); else as
    /// `File`.
    Time,
    /// By the database's own timestamps (`dbts`: a begin node by the
    /// snapshot, a commit by the commit timestamp), when it reported them;
    /// only ever a guess to check, unless `--use-dbts` trusts them.
    DbTs,
    /// By the order of the file.
    File,
    /// By layer (the longest known path that reaches the node), then by
    /// place in its session: an order read-from and session order alone
    /// suggest, whatever the file's order and numbering.
    Layers,
}

/// Above this many writer pairs, the complete polygraph is too large to
/// build first, and the order-guided search goes before it.
pub(super) const GUIDE_ABOVE: u64 = 2_000_000;

/// How many pairs of writers of a key the complete polygraph would hold
/// (an upper bound: keys with a known chain counted in full).
pub(super) fn open_pairs(ix: &Index, chains: &rustc_hash::FxHashMap<u32, Vec<u32>>) -> u64 {
    let mut writers = vec![0u64; ix.keys.len()];
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            writers[w.key as usize] += 1;
        }
    }
    writers
        .iter()
        .enumerate()
        .filter(|(k, _)| !chains.contains_key(&(*k as u32)))
        .map(|(_, &n)| n * n.saturating_sub(1) / 2)
        .sum()
}

/// A position in a slack-widened order: how far apart (in nodes) two
/// writers must be before the first is assumed to come first.
pub(super) const SLACK_START: u64 = 256;
/// Beyond this slack, the guided search hands over to the complete one.
pub(super) const SLACK_MAX: u64 = 1 << 16;

/// A topological order of the known graph, ties broken as `ties` says.
/// `None` if the graph has a cycle.
pub(super) fn topo_order_by(ix: &Index, p: &Polygraph, ties: Ties) -> Option<Vec<u32>> {
    let h = ix.history;
    let timed = ties == Ties::Time && h.txns.iter().any(|t| t.start.is_some() || t.end.is_some());
    let time = |t: u32, commit: bool| -> u64 {
        let x = &h.txns[t as usize];
        if ties == Ties::DbTs {
            // Unstamped transactions go as early as their edges allow.
            return x.dbts.map_or(0, |d| {
                let at = if commit {
                    d.commit.unwrap_or(d.start)
                } else {
                    d.start
                };
                2 * at + u64::from(commit)
            });
        }
        if !timed {
            return 2 * t as u64 + u64::from(commit);
        }
        let s = x.start.unwrap_or(0);
        if commit {
            x.end.unwrap_or(s)
        } else {
            s
        }
    };
    let layers = (ties == Ties::Layers).then(|| layers_of(ix, p)).flatten();
    let prio = |v: u32| -> u64 {
        if let Some(l) = &layers {
            return l[v as usize];
        }
        match p.model {
            Model::Ser if (v as usize) < p.txns => time(v, true),
            Model::Si if (v as usize) < 2 * p.txns => time(v / 2, v % 2 == 1),
            _ => 0, // time nodes: as early as allowed
        }
    };
    let n = p.nodes;
    let (mut indeg, offsets, adj) = known_adjacency(p);
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = (0..n as u32)
        .filter(|&v| indeg[v as usize] == 0)
        .map(|v| Reverse((prio(v), v)))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((_, v))) = heap.pop() {
        order.push(v);
        for i in offsets[v as usize]..offsets[v as usize + 1] {
            let w = adj[i as usize];
            indeg[w as usize] -= 1;
            if indeg[w as usize] == 0 {
                heap.push(Reverse((prio(w), w)));
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// The known edges as adjacency arrays (CSR: node `v`'s successors are
/// `adj[offsets[v]..offsets[v + 1]]`) and each node's in-degree, for the
/// topological passes below.
pub(super) fn known_adjacency(p: &Polygraph) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let n = p.nodes;
    let mut indeg = vec![0u32; n];
    let mut offsets = vec![0u32; n + 1];
    for &(f, t, _) in &p.known {
        indeg[t as usize] += 1;
        offsets[f as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut adj = vec![0u32; p.known.len()];
    for &(f, t, _) in &p.known {
        adj[fill[f as usize] as usize] = t;
        fill[f as usize] += 1;
    }
    (indeg, offsets, adj)
}

/// Each key's writers, in the order of their commit nodes.
pub(super) fn witness_order(ix: &Index, commit_pos: &impl Fn(u32) -> u32) -> VersionOrder {
    let mut per_key: Vec<Vec<(u32, u32)>> = vec![Vec::new(); ix.keys.len()];
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            per_key[w.key as usize].push((commit_pos(t), t));
        }
    }
    let mut vo = VersionOrder::new();
    for (k, ws) in per_key.iter_mut().enumerate() {
        ws.sort_unstable();
        let mut prev = INIT;
        for &(_, t) in ws.iter() {
            vo.link(k as u32, prev, t, Why::Chosen);
            prev = t;
        }
    }
    vo
}

/// Each node's priority in the layered order: its layer (the number of
/// nodes on the longest known path reaching it) in the high bits, its
/// transaction's place in its session in the low ones. Sorting by it is a
/// topological order, since a known edge always goes to a higher layer.
/// `None` if the known graph has a cycle.
pub(super) fn layers_of(ix: &Index, p: &Polygraph) -> Option<Vec<u64>> {
    let n = p.nodes;
    let (mut indeg, offsets, adj) = known_adjacency(p);
    let mut depth = vec![0u32; n];
    let mut stack: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
    let mut seen = 0;
    while let Some(v) = stack.pop() {
        seen += 1;
        for i in offsets[v as usize]..offsets[v as usize + 1] {
            let w = adj[i as usize] as usize;
            depth[w] = depth[w].max(depth[v as usize] + 1);
            indeg[w] -= 1;
            if indeg[w] == 0 {
                stack.push(w as u32);
            }
        }
    }
    if seen < n {
        return None;
    }
    let mut place = vec![0u32; ix.len()];
    for s in &ix.sessions {
        for (i, &t) in s.iter().enumerate() {
            place[t as usize] = i as u32;
        }
    }
    Some(
        (0..n)
            .map(|v| {
                let tie = p.txn_of(v as u32).map_or(0, |t| place[t as usize]);
                (u64::from(depth[v]) << 32) | u64::from(tie)
            })
            .collect(),
    )
}

/// Each node's position in an order.
pub(super) fn positions(order: &[u32]) -> Vec<u32> {
    let mut pos = vec![0u32; order.len()];
    for (i, &v) in order.iter().enumerate() {
        pos[v as usize] = i as u32;
    }
    pos
}

/// A transaction's commit node (its only node in the SER model).
pub(super) fn commit_node(model: Model, t: u32) -> u32 {
    match model {
        Model::Ser => t,
        Model::Si => 2 * t + 1,
    }
}

/// Each transaction's client interval (start, end), unknown ends open.
pub(super) fn client_spans(ix: &Index) -> Vec<(u64, u64)> {
    ix.history
        .txns
        .iter()
        .map(|x| (x.start.unwrap_or(0), x.end.unwrap_or(u64::MAX)))
        .collect()
}

/// Each transaction's interval in a guessed order: from its begin node's
/// position to its commit node's, widened by `slack` nodes.
pub(super) fn order_spans(ix: &Index, model: Model, pos: &[u32], slack: u64) -> Vec<(u64, u64)> {
    (0..ix.len() as u32)
        .map(|t| {
            let begin = match model {
                Model::Ser => t,
                Model::Si => 2 * t,
            };
            let b = u64::from(pos[begin as usize]);
            let c = u64::from(pos[commit_node(model, t) as usize]);
            (b, c + slack)
        })
        .collect()
}
