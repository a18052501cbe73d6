//! Polygraphs: what a black-box history fixes, and what it leaves open.
//!
//! Without a read before every write, the version order of a key is
//! unknown, and checking SER or SI is NP-complete. A polygraph (Papadimitriou;
//! Cobra; PolySI's generalized form) keeps the *known* edges (wr, session,
//! real time, and every write-write order the history forces) and, for each
//! pair of transactions A, B that write a common key, one binary
//! *constraint*: either A's writes come first, with `A →ww B` and
//! `R →rw B` for every R that read A's version, or the other way round.
//! Constraints of one pair on several keys are one choice (mixing orders
//! across keys closes a cycle anyway), which keeps the encoding compact.
//!
//! The history satisfies the level iff some choice for every constraint
//! leaves the graph acyclic. In the SER model nodes are transactions; in
//! the SI model they are begin/commit nodes (Viper's BC-polygraph), so the
//! same machinery decides both.
//!
//! What the history forces:
//! * a transaction that read `x` from W and then wrote `x` comes right
//!   after W on `x`, and one that read `x` as absent and wrote it comes
//!   first;
//! * a transaction that read `x` as absent precedes (rw) every writer of x;
//! * two transactions that read the same version and both overwrote it
//!   are a lost update, whatever the order (reported, not encoded).

use std::ops::Range;
use std::time::Instant;

use rustc_hash::FxHashMap;

use crate::decide::blackbox::acyclic::{Acyclic, TaggedEdge, FIXED};
use crate::decide::depgraph::{add_wr_edges, map_edge, Dep, Edges, Label, Model, Orders, Why};
use crate::graph::GraphBuilder;
use crate::index::{Index, INIT};

thread_local! {
    static BUILT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many constraints this thread has built since [`reset_work`]: the
/// checker's measure of search effort (0 when every version order was
/// known), reported with each check.
pub fn work() -> u64 {
    BUILT.with(|b| b.get())
}

/// Counts `n` more constraints decided without being built (pruning by
/// clocks), as search effort.
pub(crate) fn add_work(n: u64) {
    BUILT.with(|b| b.set(b.get() + n));
}

/// Starts counting [`work`] afresh.
pub fn reset_work() {
    BUILT.with(|b| b.set(0));
}

/// One node-level edge.
pub type NodeEdge = (u32, u32, Label);

/// A choice between two orders of transactions `a < b` (ids): `true`
/// means `a` wrote first.
#[derive(Clone, Debug)]
pub struct Constraint {
    pub a: u32,
    pub b: u32,
    /// Edges when `a` comes first, and when `b` comes first.
    sides: [Range<u32>; 2],
}

/// Two transactions that read the same version of a key and both wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostUpdate {
    pub key: u32,
    pub base: u32,
    pub a: u32,
    pub b: u32,
}

/// The polygraph of a history at a level.
pub struct Polygraph {
    pub model: Model,
    /// Graph nodes: transaction (or begin/commit) nodes, then time nodes.
    pub nodes: usize,
    pub txns: usize,
    /// Edges every version order has.
    pub known: Vec<NodeEdge>,
    pub constraints: Vec<Constraint>,
    side_edges: Vec<NodeEdge>,
    /// Lost updates found while building.
    pub lost_updates: Vec<LostUpdate>,
}

/// Which pairs of writers of a key become constraints.
#[derive(Clone, Copy)]
pub enum Pairs<'a> {
    /// None: only the known edges (cheap: linear).
    None,
    /// Every pair whose order no known chain fixes.
    All,
    /// A `guide` (an interval per transaction: client times, or positions
    /// in a guessed order): writers whose intervals do not overlap are
    /// *assumed* to be in that order (true of real time for every database
    /// whose commit happens between BEGIN and the COMMIT reply), so only
    /// overlapping writers get constraints, and the others are never
    /// paired. The result only proposes a version order; it proves nothing
    /// until checked (Viper's heuristic pruning).
    Guided(&'a [(u64, u64)]),
    /// Only these pairs, per key: the rest were decided elsewhere (e.g. by
    /// [`clock_prune`](crate::decide::blackbox::clock_prune)), whose edges the caller adds.
    Only(&'a FxHashMap<u32, Vec<(u32, u32)>>),
}

/// Too many constraints to build within the memory we allow ourselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge(pub u64);

impl Polygraph {
    /// Builds the polygraph of the committed transactions of `ix`; without
    /// `with_constraints`, only the known edges (cheap: linear).
    pub fn build(
        ix: &Index,
        model: Model,
        orders: Orders,
        chains: &FxHashMap<u32, Vec<u32>>,
        with_constraints: bool,
        max_pairs: u64,
    ) -> Result<Polygraph, TooLarge> {
        let pairs = if with_constraints {
            Pairs::All
        } else {
            Pairs::None
        };
        Polygraph::build_with(ix, model, orders, chains, pairs, max_pairs)
    }

    /// Like [`Polygraph::build`], with the writer pairs that become
    /// constraints chosen by `pairs` (see [`Pairs`]).
    pub fn build_with(
        ix: &Index,
        model: Model,
        orders: Orders,
        chains: &FxHashMap<u32, Vec<u32>>,
        pairs_wanted: Pairs,
        max_pairs: u64,
    ) -> Result<Polygraph, TooLarge> {
        let (with_constraints, guide, only) = match pairs_wanted {
            Pairs::None => (false, None, None),
            Pairs::All => (true, None, None),
            Pairs::Guided(g) => (true, Some(g), None),
            Pairs::Only(o) => (true, None, Some(o)),
        };
        let time_guided = guide.is_some();
        let n = ix.len();
        let mut b = GraphBuilder::new(0);
        let mut e = Edges::new(&mut b, model, n);
        e.structure(ix, orders);
        add_wr_edges(ix, &mut e);

        // Writers of each key, readers of each version.
        let nk = ix.keys.len();
        let mut writers: Vec<Vec<u32>> = vec![Vec::new(); nk];
        for t in ix.committed_txns() {
            for w in ix.writes(t) {
                writers[w.key as usize].push(t);
            }
        }
        // Writers a known chain does not place, per chained key.
        let mut unplaced: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for (&k, chain) in chains {
            let placed: rustc_hash::FxHashSet<u32> = chain.iter().copied().collect();
            let rest: Vec<u32> = writers[k as usize]
                .iter()
                .copied()
                .filter(|w| !placed.contains(w))
                .collect();
            unplaced.insert(k, rest);
        }
        // A list read shows every version up to the one read, so an append
        // no read shows comes after the whole chain. Timestamps say nothing
        // of a writer that has none: it may sit anywhere in the chain, so
        // it gets a constraint with every writer of the key.
        let rest_after_chain = !orders.timestamps;
        let open_pairs = |k: usize, ws: &[u32]| -> u64 {
            let n = ws.len() as u64;
            match unplaced.get(&(k as u32)) {
                None => n * n.saturating_sub(1) / 2,
                Some(rest) => {
                    let u = rest.len() as u64;
                    let within = u * u.saturating_sub(1) / 2;
                    if rest_after_chain {
                        within
                    } else {
                        within + u * (n - u)
                    }
                }
            }
        };
        let span = |t: u32| guide.map_or((0, u64::MAX), |g| g[t as usize]);
        let pair_count: u64 = if time_guided {
            0
        } else if let Some(only) = only {
            only.values().map(|v| v.len() as u64).sum()
        } else {
            writers
                .iter()
                .enumerate()
                .map(|(k, w)| open_pairs(k, w))
                .sum()
        };
        if with_constraints && pair_count > max_pairs {
            return Err(TooLarge(pair_count));
        }
        let mut readers: FxHashMap<(u32, u32), Vec<(u32, bool)>> = FxHashMap::default();
        for r in ix.committed_txns() {
            for rd in ix.reads(r) {
                if rd.writer == INIT || ix.committed[rd.writer as usize] {
                    readers
                        .entry((rd.key, rd.writer))
                        .or_default()
                        .push((r, rd.predicate));
                }
            }
        }
        // Read-modify-writes: (key, base) -> the writers that read base.
        let mut rmw: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
        for t in ix.committed_txns() {
            for w in ix.writes(t) {
                if let Some(r) = ix.reads(t).iter().find(|r| r.key == w.key && r.op < w.op) {
                    rmw.entry((w.key, r.writer)).or_default().push(t);
                }
            }
        }
        let mut lost_updates = Vec::new();
        // (key, txn) -> the version it must directly follow, when forced.
        let mut follows: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for (&(k, base), ts) in &rmw {
            if ts.len() > 1 {
                for w in ts.windows(2) {
                    lost_updates.push(LostUpdate {
                        key: k,
                        base,
                        a: w[0],
                        b: w[1],
                    });
                }
            } else {
                follows.insert((k, ts[0]), base);
            }
        }
        lost_updates.sort_by_key(|l| (l.key, l.base, l.a, l.b));

        let mut known: Vec<NodeEdge> = b.edges().copied().collect();
        let mut push_known = |from: u32, to: u32, l: Label| {
            if from != to {
                let (f, t) = map_edge(model, from, to, l.dep);
                known.push((f, t, l));
            }
        };
        let rw = |k: u32, read_from: u32, pred: bool, why: Why| Label {
            dep: Dep::Rw,
            why,
            predicate: pred,
            key: k,
            read_from,
        };
        let ww = |k: u32, before: u32, why: Why| Label {
            dep: Dep::Ww,
            why,
            predicate: false,
            key: k,
            read_from: before,
        };

        let side_edges =
            |k: u32, first: u32, second: u32, why: Why, out: &mut dyn FnMut(u32, u32, Label)| {
                out(first, second, ww(k, first, why));
                if let Some(rs) = readers.get(&(k, first)) {
                    for &(r, pred) in rs {
                        if r != second {
                            out(r, second, rw(k, first, pred, why));
                        }
                    }
                }
            };
        // With timestamps the chains are commit orders, else list orders.
        let chain_why = if orders.timestamps {
            Why::DbTs
        } else {
            Why::ListOrder
        };
        for (k, ws) in writers.iter().enumerate() {
            let k = k as u32;
            // Reading the initial version precedes every writer.
            if let Some(rs) = readers.get(&(k, INIT)) {
                for &(r, pred) in rs {
                    for &w in ws {
                        push_known(r, w, rw(k, INIT, pred, Why::Observed));
                    }
                }
            }
            // A known chain (list reads, database timestamps) fixes the order
            // of the writers it names (a timestamp tie leaves its group
            // unordered, and orders it against the groups before and after);
            // the others come after all of them.
            if let Some(chain) = chains.get(&k) {
                for g in chain_groups(ix, orders, chain).windows(2) {
                    for &a in g[0] {
                        for &c in g[1] {
                            side_edges(k, a, c, chain_why, &mut |x, y, l| push_known(x, y, l));
                        }
                    }
                }
                if let (Some(&last), true) = (chain.last(), rest_after_chain) {
                    for &u in &unplaced[&k] {
                        side_edges(k, last, u, chain_why, &mut |x, y, l| push_known(x, y, l));
                    }
                }
            }
            // Read-modify-writes fix their place in the order.
            for &t in ws {
                match follows.get(&(k, t)) {
                    Some(&INIT) => {
                        for &s in ws {
                            if s != t {
                                side_edges(k, t, s, Why::FirstWriter, &mut |x, y, l| {
                                    push_known(x, y, l)
                                });
                            }
                        }
                    }
                    Some(&base) => {
                        side_edges(k, base, t, Why::Rmw, &mut |x, y, l| push_known(x, y, l))
                    }
                    None => {}
                }
            }
        }

        // Pending constraint sides: (constraint, side, from txn, to txn, label).
        let mut pending: Vec<(u32, u8, u32, u32, Label)> = Vec::new();
        let mut cons_of: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut constraints: Vec<Constraint> = Vec::new();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (k, ws) in writers.iter().enumerate() {
            if !with_constraints {
                break;
            }
            let k = k as u32;
            if let Some(only) = only {
                pairs.extend(only.get(&k).into_iter().flatten());
            }
            // Writers whose relative order is open: all of them, or those
            // no chain places (paired with each other and, for timestamp
            // chains, with the chained writers too).
            let rest: &[u32] = unplaced.get(&k).map_or(ws.as_slice(), Vec::as_slice);
            let chained: &[u32] = match chains.get(&k) {
                Some(chain) if !rest_after_chain => chain,
                _ => &[],
            };
            // Time-guided: writers sorted by start; only pairs whose
            // intervals overlap are left open.
            let mut by_start: Vec<u32> = rest.to_vec();
            if time_guided {
                by_start.sort_unstable_by_key(|&t| span(t));
            }
            let ws: &[u32] = match (time_guided, only.is_some()) {
                (_, true) => &[],
                (true, false) => &by_start,
                (false, false) => rest,
            };
            for &u in ws {
                for &c in chained {
                    pairs.push((u, c));
                }
            }
            // Writers of a timestamp chain that share a commit timestamp.
            if only.is_none() {
                if let Some(chain) = chains.get(&k) {
                    for g in chain_groups(ix, orders, chain) {
                        for i in 0..g.len() {
                            for j in i + 1..g.len() {
                                pairs.push((g[i], g[j]));
                            }
                        }
                    }
                }
            }
            for i in 0..ws.len() {
                for j in i + 1..ws.len() {
                    if time_guided && span(ws[i]).1 < span(ws[j]).0 {
                        // ws[j] and everything after it started after ws[i]
                        // ended: ordered by assumption, not a constraint.
                        break;
                    }
                    pairs.push((ws[i], ws[j]));
                }
            }
            for (x, y) in pairs.drain(..) {
                let (a, bb) = if x < y { (x, y) } else { (y, x) };
                // Already ordered by a read-modify-write?
                let fa = follows.get(&(k, a)).copied();
                let fb = follows.get(&(k, bb)).copied();
                if fb == Some(a) || fa == Some(INIT) || fa == Some(bb) || fb == Some(INIT) {
                    continue;
                }
                let c = *cons_of.entry((a, bb)).or_insert_with(|| {
                    constraints.push(Constraint {
                        a,
                        b: bb,
                        sides: [0..0, 0..0],
                    });
                    (constraints.len() - 1) as u32
                });
                side_edges(k, a, bb, Why::Chosen, &mut |x, y, l| {
                    pending.push((c, 0, x, y, l))
                });
                side_edges(k, bb, a, Why::Chosen, &mut |x, y, l| {
                    pending.push((c, 1, x, y, l))
                });
            }
        }
        if time_guided {
            add_time_chains(
                &mut b, model, &writers, &unplaced, &readers, &span, &mut known,
            );
        }
        BUILT.with(|b| b.set(b.get() + constraints.len() as u64));
        // Group the pending edges by (constraint, side), keeping their
        // order within a side: a counting sort, linear in their number
        // (a comparison sort of tens of millions of them was most of the
        // time of a large build).
        let slot = |c: u32, s: u8| 2 * c as usize + s as usize;
        let mut start = vec![0u32; 2 * constraints.len() + 1];
        for &(c, s, x, y, _) in &pending {
            if x != y {
                start[slot(c, s) + 1] += 1;
            }
        }
        for i in 0..2 * constraints.len() {
            start[i + 1] += start[i];
        }
        let mut side_edges: Vec<NodeEdge> = match pending.first() {
            Some(&(_, _, _, _, l)) => vec![(0, 0, l); start[2 * constraints.len()] as usize],
            None => Vec::new(),
        };
        let mut fill = start.clone();
        for (c, s, x, y, l) in pending {
            if x != y {
                let at = &mut fill[slot(c, s)];
                side_edges[*at as usize] = {
                    let (f, t) = map_edge(model, x, y, l.dep);
                    (f, t, l)
                };
                *at += 1;
            }
        }
        for (c, con) in constraints.iter_mut().enumerate() {
            for s in 0..2u8 {
                let i = slot(c as u32, s);
                con.sides[s as usize] = start[i]..start[i + 1];
            }
        }
        Ok(Polygraph {
            model,
            nodes: b.node_count(),
            txns: n,
            known,
            constraints,
            side_edges,
            lost_updates,
        })
    }

    /// The known part alone, with `extra` edges assumed known too (for a
    /// search that checks what it proposes).
    pub fn known_with(&self, extra: impl Iterator<Item = NodeEdge>) -> Polygraph {
        Polygraph {
            model: self.model,
            nodes: self.nodes,
            txns: self.txns,
            known: self.known.iter().copied().chain(extra).collect(),
            constraints: Vec::new(),
            side_edges: Vec::new(),
            lost_updates: self.lost_updates.clone(),
        }
    }

    /// The edges of one side of a constraint (`first_a`: `a` writes first).
    pub fn side(&self, c: usize, first_a: bool) -> &[NodeEdge] {
        let r = &self.constraints[c].sides[usize::from(!first_a)];
        &self.side_edges[r.start as usize..r.end as usize]
    }

    /// The transaction a node belongs to (`None` for time nodes).
    pub fn txn_of(&self, node: u32) -> Option<u32> {
        match self.model {
            Model::Ser if (node as usize) < self.txns => Some(node),
            Model::Si if (node as usize) < 2 * self.txns => Some(node / 2),
            _ => None,
        }
    }
}

/// A known chain as the groups of writers it orders, in order: with
/// timestamps, writers that share a commit timestamp are one group (the tie
/// orders nothing between them); a list chain orders every writer.
fn chain_groups<'c>(ix: &Index, orders: Orders, chain: &'c [u32]) -> Vec<&'c [u32]> {
    if !orders.timestamps {
        return chain.chunks(1).collect();
    }
    let ts = |t: u32| ix.history.txns[t as usize].dbts.and_then(|d| d.commit);
    chain.chunk_by(|&a, &b| ts(a) == ts(b)).collect()
}

/// The assumed real-time order of each key's writers, in O(writes) edges:
/// per key, a chain of time nodes by writer end time. A writer enters the
/// chain at its rank; the readers of its version enter the read chain at
/// the same rank; each writer is entered from the last rank that ended
/// before it started. So `a →ww b` and `R →rw b` hold for every writer `b`
/// that started after `a` ended, as if those pairs' orders were known.
#[allow(clippy::too_many_arguments)]
fn add_time_chains(
    b: &mut GraphBuilder<Label>,
    model: Model,
    writers: &[Vec<u32>],
    unplaced: &FxHashMap<u32, Vec<u32>>,
    readers: &FxHashMap<(u32, u32), Vec<(u32, bool)>>,
    span: &impl Fn(u32) -> (u64, u64),
    known: &mut Vec<NodeEdge>,
) {
    let node = |t: u32, commit: bool| match model {
        Model::Ser => t,
        Model::Si => 2 * t + u32::from(commit),
    };
    for (k, ws) in writers.iter().enumerate() {
        let k = k as u32;
        let ws: &[u32] = unplaced.get(&k).map_or(ws.as_slice(), Vec::as_slice);
        if ws.len() < 2 {
            continue;
        }
        let writes_k: rustc_hash::FxHashSet<u32> = ws.iter().copied().collect();
        let mut by_end: Vec<(u64, u32)> = ws.iter().map(|&t| (span(t).1, t)).collect();
        by_end.sort_unstable();
        let ww = Label {
            dep: Dep::Ww,
            why: Why::Order,
            predicate: false,
            key: k,
            read_from: INIT,
        };
        let rw = Label { dep: Dep::Rw, ..ww };
        let chain = Label {
            dep: Dep::RtChain,
            ..ww
        };
        // Write chain (entering begin nodes) and, for SI, read chain
        // (entering commit nodes).
        let wbase = b.node_count() as u32;
        for _ in 0..by_end.len() {
            b.add_node();
        }
        let rbase = if model == Model::Si {
            let r = b.node_count() as u32;
            for _ in 0..by_end.len() {
                b.add_node();
            }
            r
        } else {
            wbase
        };
        for (i, &(_, a)) in by_end.iter().enumerate() {
            let i = i as u32;
            known.push((node(a, true), wbase + i, ww));
            if let Some(rs) = readers.get(&(k, a)) {
                for &(r, _) in rs {
                    // A reader that also writes the key follows its own
                    // write into the order instead (it comes right after a).
                    if !writes_k.contains(&r) {
                        known.push((node(r, false), rbase + i, rw));
                    }
                }
            }
            if (i as usize) + 1 < by_end.len() {
                known.push((wbase + i, wbase + i + 1, chain));
                if rbase != wbase {
                    known.push((rbase + i, rbase + i + 1, chain));
                }
            }
            if rbase != wbase {
                known.push((wbase + i, rbase + i, chain));
            }
        }
        for &t in ws {
            let j = by_end.partition_point(|&(end, _)| end < span(t).0);
            if j > 0 {
                let j = (j - 1) as u32;
                known.push((wbase + j, node(t, false), ww));
                if rbase != wbase {
                    known.push((rbase + j, node(t, true), rw));
                }
            }
        }
    }
}

/// What pruning concluded.
pub enum Pruned {
    /// Every constraint still open is in `open`; the rest are decided in
    /// the state vector and their edges added to the graph.
    Open(Vec<u32>),
    /// Both sides of a constraint close a cycle (or the known edges do):
    /// no version order works.
    Contradiction(Vec<TaggedEdge>),
    /// The time budget ran out.
    OutOfTime,
}

/// What pruning decided, and why, for a proof of its contradiction.
#[derive(Default, Debug)]
pub struct PruneLog {
    /// Each decided constraint, in order: (constraint, `a` first?, round,
    /// an edge of the rejected side that closed a cycle with the graph as
    /// it stood at the start of the round).
    pub decisions: Vec<(u32, bool, u32, NodeEdge)>,
    /// How pruning found its contradiction.
    pub end: Option<PruneEnd>,
}

/// The last step of a pruning contradiction.
#[derive(Debug)]
pub enum PruneEnd {
    /// Both sides of constraint `c` close a cycle at the start of `round`:
    /// an offending edge of the `a`-first side and of the `b`-first side.
    Both {
        c: u32,
        round: u32,
        a_first: NodeEdge,
        b_first: NodeEdge,
    },
    /// Applying the decisions of a round closed this cycle.
    Cycle(Vec<TaggedEdge>),
}

/// Decides constraints whose one side would close a cycle with what is
/// known, adds the other side as known, and repeats until nothing changes
/// (PolySI's pruning). Sound and complete: only impossible sides are
/// removed. Each round answers its reachability queries from one transitive
/// closure when it fits in memory, else by bounded searches.
pub fn prune(
    p: &Polygraph,
    g: &mut Acyclic,
    state: &mut [Option<bool>],
    deadline: Option<Instant>,
) -> Pruned {
    prune_logged(p, g, state, deadline, None)
}

/// [`prune`], writing down what it decided and why.
pub fn prune_logged(
    p: &Polygraph,
    g: &mut Acyclic,
    state: &mut [Option<bool>],
    deadline: Option<Instant>,
    mut log: Option<&mut PruneLog>,
) -> Pruned {
    const CLOSURE_BYTES: usize = 512 << 20;
    let mut round = 0;
    loop {
        round += 1;
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Pruned::OutOfTime;
        }
        let closure = g.closure(CLOSURE_BYTES);
        let mut decided: Vec<(usize, bool, NodeEdge)> = Vec::new();
        for (c, st) in state.iter().enumerate() {
            if st.is_some() {
                continue;
            }
            if c % 4096 == 0 && deadline.is_some_and(|d| Instant::now() > d) {
                return Pruned::OutOfTime;
            }
            let mut bad = |first_a: bool| {
                p.side(c, first_a)
                    .iter()
                    .find(|&&(f, t, _)| match &closure {
                        Some(cl) => f == t || cl.reaches(t, f),
                        None => g.would_cycle(f, t),
                    })
                    .copied()
            };
            match (bad(true), bad(false)) {
                (Some(ea), Some(eb)) => {
                    if let Some(l) = log.as_deref_mut() {
                        l.end = Some(PruneEnd::Both {
                            c: c as u32,
                            round,
                            a_first: ea,
                            b_first: eb,
                        });
                    }
                    return Pruned::Contradiction(first_cycle(p, g, c, false));
                }
                (Some(ea), None) => decided.push((c, false, ea)),
                (None, Some(eb)) => decided.push((c, true, eb)),
                (None, None) => {}
            }
        }
        let open = state.iter().filter(|s| s.is_none()).count();
        // Later rounds decide less and less; the solver finishes the tail
        // more cheaply than more closures would.
        let tail = round >= 3 && decided.len() * 50 < open;
        if decided.is_empty() {
            break;
        }
        for (c, choice, rejected) in decided {
            if let Some(l) = log.as_deref_mut() {
                l.decisions.push((c as u32, choice, round, rejected));
            }
            for &(f, t, _) in p.side(c, choice) {
                if let Err(cyc) = g.add(f, t, FIXED) {
                    if let Some(l) = log.as_deref_mut() {
                        l.end = Some(PruneEnd::Cycle(cyc.clone()));
                    }
                    return Pruned::Contradiction(cyc);
                }
            }
            state[c] = Some(choice);
        }
        if tail {
            break;
        }
    }
    Pruned::Open(
        (0..p.constraints.len() as u32)
            .filter(|&c| state[c as usize].is_none())
            .collect(),
    )
}

/// The cycle a side's first offending edge closes.
fn first_cycle(p: &Polygraph, g: &mut Acyclic, c: usize, first_a: bool) -> Vec<TaggedEdge> {
    let cp = g.checkpoint();
    for &(f, t, _) in p.side(c, first_a) {
        if let Err(cyc) = g.add(f, t, FIXED) {
            g.undo_to(cp);
            return cyc;
        }
    }
    g.undo_to(cp);
    Vec::new()
}
