//! Dependency graphs, for a known version order.
//!
//! Given the version order of each key (who overwrote whom), the history's
//! dependencies are fixed (Adya): write-read (wr) from each writer to its
//! readers, write-write (ww) from each version to the next, read-write
//! anti-dependencies (rw) from each reader of a version to the writer of the
//! next one. The stronger levels add session order (so) and real-time order
//! (rt). Then:
//!
//! * serializability holds iff the graph on transactions is acyclic;
//! * snapshot isolation holds iff the *begin/commit graph* is acyclic: two
//!   nodes per transaction, `B → C`; a wr, ww, so or rt edge `T → S` becomes
//!   `C_T → B_S` (S's snapshot includes T), an rw edge `T → S` becomes
//!   `B_T → C_S` (S commits after T's snapshot). A cycle there is exactly a
//!   cycle with no two adjacent rw edges (see the BC-graph paper and Viper).
//!
//! Only immediate successors are linked: a reader's rw edge to the next
//! version, chained by ww edges to later ones, implies the rest. Real-time
//! order is compressed from O(n²) pairs to O(n) edges through a chain of
//! auxiliary "time" nodes, after one sort by time.

use rustc_hash::FxHashMap;

use crate::graph::{Graph, GraphBuilder, PathEdge};
use crate::index::{Index, INIT};

/// The kind of a graph edge, including the two structural kinds that are
/// not dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dep {
    Ww,
    Wr,
    Rw,
    So,
    /// Real time, into or out of the time chain.
    Rt,
    /// Between two time nodes.
    RtChain,
    /// A transaction's begin node to its commit node.
    Internal,
    /// The database's own timestamp order (white-box checking).
    Ts,
}

/// How the history forces an edge, for explanations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Why {
    /// A read returned the source's value (wr), or a reader of a version
    /// and the next writer (rw).
    Observed,
    /// The target read the source's version of the key and then wrote the
    /// key itself (read-modify-write).
    Rmw,
    /// The source read the key's initial version and then wrote the key:
    /// under snapshot isolation and stronger its version is the first, so
    /// it precedes the target's. Adya's graph has the anti-dependency
    /// source -rw-> target here, which is what the cycle is named by.
    FirstWriter,
    /// A list read shows the order of appends.
    ListOrder,
    /// The database's own commit timestamps order the writes.
    DbTs,
    /// A choice the solver had to make; every alternative is refuted too.
    Chosen,
    /// Session or real-time order.
    Order,
}

/// One edge label: 12 bytes, so graphs of millions of edges stay small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub dep: Dep,
    pub why: Why,
    /// True when the dependency comes from a range (predicate) read.
    pub predicate: bool,
    /// The key (meaningless for so / rt).
    pub key: u32,
    /// For rw: the writer of the version the source read ([`INIT`] for the
    /// initial version).
    pub read_from: u32,
}

impl Label {
    pub(crate) fn plain(dep: Dep, why: Why) -> Label {
        Label {
            dep,
            why,
            predicate: false,
            key: u32::MAX,
            read_from: INIT,
        }
    }
}

/// What a graph keeps of each edge's [`Label`]: all of it to explain a
/// cycle, nothing (`()`) when only an order is wanted, so an acyclic graph
/// of millions of edges is laid out at 8 bytes an edge, not 20.
pub(crate) trait EdgeLabel: Copy + Send {
    fn of(label: Label) -> Self;
}

impl EdgeLabel for Label {
    fn of(label: Label) -> Label {
        label
    }
}

impl EdgeLabel for () {
    fn of(_: Label) {}
}

/// The known part of each key's version order: immediate successors.
/// `next[(key, w)] = s` says the version after `w`'s (or after the initial
/// version, `w = INIT`) is `s`'s.
#[derive(Default, Clone)]
pub struct VersionOrder {
    /// Made by [`VersionOrder::by_txn`]: the first two links out of each
    /// transaction's versions, found by its id instead of by hashing (a
    /// mini-transaction writes at most two keys). Empty otherwise.
    slots: Vec<[Slot; 2]>,
    /// The links no slot holds: out of the initial versions, out of a
    /// transaction's third key and on, and every link of an order made by
    /// [`VersionOrder::new`].
    next: FxHashMap<(u32, u32), (u32, Why)>,
    /// Versions with two competing successors: no rw edge is drawn from
    /// their readers, because which successor is immediate is unknown.
    ambiguous: FxHashMap<(u32, u32), ()>,
}

/// One link of [`VersionOrder::slots`]: the version of `key` after its
/// transaction's is `after`'s.
#[derive(Clone, Copy)]
struct Slot {
    key: u32,
    after: u32,
    why: Why,
}

impl Slot {
    const EMPTY: Slot = Slot {
        key: u32::MAX,
        after: 0,
        why: Why::Rmw,
    };
}

impl VersionOrder {
    /// An empty order.
    pub fn new() -> VersionOrder {
        VersionOrder::default()
    }

    /// An empty order over `txns` transactions whose links are mostly out
    /// of transactions' versions: a hash table of a million links misses
    /// the cache on every step, a slot by transaction id rarely does.
    pub fn by_txn(txns: usize) -> VersionOrder {
        VersionOrder {
            slots: vec![[Slot::EMPTY; 2]; txns],
            ..VersionOrder::default()
        }
    }

    /// The successor of `(key, before)` and why, from its slot or the table.
    fn find(&self, key: u32, before: u32) -> Option<(u32, Why)> {
        if let Some(slots) = self.slots.get(before as usize) {
            if let Some(s) = slots.iter().find(|s| s.key == key) {
                return Some((s.after, s.why));
            }
            // A full pair sends the rest to the table; a free slot means
            // the table has no link of this version either.
            if slots[1].key == u32::MAX {
                return None;
            }
        }
        self.next.get(&(key, before)).copied()
    }

    /// Records that `after` installed the version right after `before`'s.
    /// Returns the competing successor if one was already recorded.
    pub fn link(&mut self, key: u32, before: u32, after: u32, why: Why) -> Option<u32> {
        match self.find(key, before) {
            Some((other, _)) if other != after => {
                self.ambiguous.insert((key, before), ());
                Some(other)
            }
            Some(_) => None,
            None => {
                let new = Slot { key, after, why };
                match self.slots.get_mut(before as usize) {
                    Some([a, _]) if a.key == u32::MAX => *a = new,
                    Some([_, b]) if b.key == u32::MAX => *b = new,
                    _ => {
                        self.next.insert((key, before), (after, why));
                    }
                }
                None
            }
        }
    }

    /// The writer of the version after `before`'s, when known for sure.
    pub fn next(&self, key: u32, before: u32) -> Option<(u32, Why)> {
        if !self.ambiguous.is_empty() && self.ambiguous.contains_key(&(key, before)) {
            return None;
        }
        self.find(key, before)
    }

    /// Every recorded link (key, before, after, why), ambiguous ones included
    /// (each is still a forced ww edge).
    pub fn links(&self) -> impl Iterator<Item = (u32, u32, u32, Why)> + '_ {
        let slotted = self.slots.iter().enumerate().flat_map(|(t, pair)| {
            pair.iter()
                .filter(|s| s.key != u32::MAX)
                .map(move |s| (s.key, t as u32, s.after, s.why))
        });
        let hashed = self.next.iter().map(|(&(k, b), &(a, w))| (k, b, a, w));
        slotted.chain(hashed)
    }
}

/// Which orders besides data dependencies a check must respect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Orders {
    /// Session order (the session levels, and the real-time ones).
    pub sessions: bool,
    /// Real-time order (strong SI, strict serializability).
    pub realtime: bool,
    /// The database's own timestamps (`dbts`), for white-box checking.
    pub timestamps: bool,
}

impl Orders {
    /// The orders a level constrains the commit order with.
    pub fn of(level: history::Level) -> Orders {
        Orders {
            sessions: level.uses_sessions() || level.uses_real_time(),
            realtime: level.uses_real_time(),
            timestamps: false,
        }
    }
}

/// Which graph to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// One node per transaction (serializability).
    Ser,
    /// Begin and commit nodes per transaction (snapshot isolation).
    Si,
}

impl Model {
    /// How many nodes `txns` transactions take; the time nodes come after.
    pub fn txn_nodes(self, txns: usize) -> usize {
        match self {
            Model::Ser => txns,
            Model::Si => 2 * txns,
        }
    }
}

/// A transaction-level edge of a cycle, after the structural nodes are
/// dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnEdge {
    pub from: u32,
    pub to: u32,
    pub label: Label,
}

/// A dependency graph ready for cycle search.
pub struct DepGraph {
    pub graph: Graph<Label>,
    pub model: Model,
    /// Number of transactions; nodes past the transaction nodes are time
    /// nodes.
    txns: usize,
}

impl DepGraph {
    /// Builds the graph of the committed transactions of `ix` under the
    /// version order `vo`, with session and real-time edges if asked.
    pub fn build(ix: &Index, vo: &VersionOrder, model: Model, orders: Orders) -> DepGraph {
        DepGraph::from_builder(edges_of(ix, vo, model, orders), model, ix.len())
    }

    /// A topological order of the transaction nodes of the graph
    /// [`DepGraph::build`] would give (smallest id first among the ready
    /// ones; time nodes dropped), or `None` when it has a cycle. No label
    /// is kept: only a graph with a cycle needs them, and it is built again.
    pub fn schedule(
        ix: &Index,
        vo: &VersionOrder,
        model: Model,
        orders: Orders,
    ) -> Option<Vec<u32>> {
        let txn_nodes = model.txn_nodes(ix.len()) as u32;
        edges_of::<()>(ix, vo, model, orders).topo_order_by_id(|v| v < txn_nodes)
    }

    /// Wraps a graph whose first nodes are the transaction nodes of `model`.
    pub(crate) fn from_builder(b: GraphBuilder<Label>, model: Model, txns: usize) -> DepGraph {
        DepGraph {
            graph: b.build(),
            model,
            txns,
        }
    }

    /// The transaction a node stands for, if it is not a time node.
    pub fn txn_of(&self, node: u32) -> Option<u32> {
        match self.model {
            _ if node as usize >= self.model.txn_nodes(self.txns) => None,
            Model::Ser => Some(node),
            Model::Si => Some(node / 2),
        }
    }

    /// Maps a cycle of graph nodes to transaction-level edges: begin/commit
    /// steps vanish and a path through the time chain becomes one rt edge.
    pub fn to_txn_edges(&self, path: &[PathEdge<Label>]) -> Vec<TxnEdge> {
        // Start at a transaction node, so no time-chain segment is cut.
        let start = path
            .iter()
            .position(|p| self.txn_of(p.from).is_some())
            .unwrap_or(0);
        let mut out: Vec<TxnEdge> = Vec::new();
        let mut rt_source: Option<u32> = None;
        let mut ts_source: Option<(u32, u32)> = None;
        for i in 0..path.len() {
            let p = path[(start + i) % path.len()];
            match p.label.dep {
                Dep::Internal | Dep::RtChain => {}
                Dep::Ts => match (self.txn_of(p.from), self.txn_of(p.to)) {
                    // Into the time chain, and out of it: one edge.
                    (Some(f), None) => ts_source = Some((f, p.from)),
                    (None, Some(t)) => {
                        if let Some((f, node)) = ts_source.take() {
                            // A transaction's own commit stamped before its
                            // snapshot is a cycle of one edge.
                            if f != t || (node % 2 == 1 && p.to.is_multiple_of(2)) {
                                // Which events the timestamps order: bit 0,
                                // the source's commit; bit 1, the target's.
                                let key = (node % 2) | ((p.to % 2) << 1);
                                out.push(TxnEdge {
                                    from: f,
                                    to: t,
                                    label: Label { key, ..p.label },
                                });
                            }
                        }
                    }
                    _ => {}
                },
                Dep::Rt => match (self.txn_of(p.from), self.txn_of(p.to)) {
                    (Some(f), None) => rt_source = Some(f),
                    (None, Some(t)) => {
                        if let Some(f) = rt_source.take() {
                            out.push(TxnEdge {
                                from: f,
                                to: t,
                                label: p.label,
                            });
                        }
                    }
                    _ => {}
                },
                _ => {
                    if let (Some(f), Some(t)) = (self.txn_of(p.from), self.txn_of(p.to)) {
                        out.push(TxnEdge {
                            from: f,
                            to: t,
                            label: p.label,
                        });
                    }
                }
            }
        }
        out
    }
}

/// The edges of the dependency graph: structure and wr on this thread, rw
/// and ww on a second core from [`PARALLEL_BUILD`] transactions on, joined
/// in the order one thread adds them.
fn edges_of<L: EdgeLabel>(
    ix: &Index,
    vo: &VersionOrder,
    model: Model,
    orders: Orders,
) -> GraphBuilder<L> {
    let mut b = GraphBuilder::new(0);
    let mut e = Edges::new(&mut b, model, ix.len());
    let two = ix.len() >= PARALLEL_BUILD && crate::two_cores();
    if !two {
        e.structure(ix, orders);
        add_wr_edges(ix, &mut e);
        add_rw_ww_edges(ix, vo, &mut e);
        return b;
    }
    e.b.reserve(ix.len() + ix.read_count());
    let mut b2 = GraphBuilder::new(e.b.node_count());
    b2.reserve(ix.read_count() + ix.write_count());
    std::thread::scope(|s| {
        let second = std::thread::Builder::new()
            .name("depgraph".into())
            .spawn_scoped(s, || {
                let mut e2 = Edges::new(&mut b2, model, ix.len());
                add_rw_ww_edges(ix, vo, &mut e2);
            })
            .expect("cannot start a graph-building thread");
        e.structure(ix, orders);
        add_wr_edges(ix, &mut e);
        second
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
    });
    b.append(b2);
    b
}

/// Adds transaction-level edges to a graph in the chosen model, mapping
/// each dependency to the right begin/commit nodes.
pub(crate) struct Edges<'a, L = Label> {
    pub(crate) b: &'a mut GraphBuilder<L>,
    model: Model,
}

impl<'a, L: EdgeLabel> Edges<'a, L> {
    /// Wraps a builder, adding the transaction nodes if it has none yet.
    pub(crate) fn new(b: &'a mut GraphBuilder<L>, model: Model, txns: usize) -> Edges<'a, L> {
        while b.node_count() < model.txn_nodes(txns) {
            b.add_node();
        }
        Edges { b, model }
    }

    /// The graph node of a transaction's begin (`commit = false`) or commit.
    pub(crate) fn node(&self, t: u32, commit: bool) -> u32 {
        match self.model {
            Model::Ser => t,
            Model::Si => 2 * t + u32::from(commit),
        }
    }

    /// Adds a dependency `from → to` between transactions.
    pub(crate) fn dep(&mut self, from: u32, to: u32, label: Label) {
        if from == to {
            return;
        }
        let (f, t) = map_edge(self.model, from, to, label.dep);
        self.b.edge(f, t, L::of(label));
    }

    /// Adds an edge between graph nodes.
    fn edge(&mut self, from: u32, to: u32, label: Label) {
        self.b.edge(from, to, L::of(label));
    }

    /// Begin-to-commit edges (SI), session order and real-time order: the
    /// edges that do not depend on the version order.
    pub(crate) fn structure(&mut self, ix: &Index, orders: Orders) {
        if self.model == Model::Si {
            for t in ix.committed_txns() {
                self.edge(2 * t, 2 * t + 1, Label::plain(Dep::Internal, Why::Order));
            }
        }
        if orders.sessions {
            for s in &ix.sessions {
                for w in s.windows(2) {
                    self.dep(w[0], w[1], Label::plain(Dep::So, Why::Order));
                }
            }
        }
        if orders.realtime {
            add_realtime(ix, self);
        }
        if orders.timestamps {
            add_timestamps(ix, self);
        }
    }
}

/// The graph nodes a transaction-level dependency joins: in the SI model an
/// rw edge runs begin → commit, every other edge commit → begin.
pub fn map_edge(model: Model, from: u32, to: u32, dep: Dep) -> (u32, u32) {
    match model {
        Model::Ser => (from, to),
        Model::Si if dep == Dep::Rw => (2 * from, 2 * to + 1),
        Model::Si => (2 * from + 1, 2 * to),
    }
}

/// wr edges: from each committed writer to each committed reader.
pub(crate) fn add_wr_edges<L: EdgeLabel>(ix: &Index, e: &mut Edges<L>) {
    for r in ix.committed_txns() {
        for rd in ix.reads(r) {
            if rd.writer != INIT && ix.committed[rd.writer as usize] {
                e.dep(
                    rd.writer,
                    r,
                    Label {
                        dep: Dep::Wr,
                        why: Why::Observed,
                        predicate: rd.predicate,
                        key: rd.key,
                        read_from: rd.writer,
                    },
                );
            }
        }
    }
}

/// The fewest transactions whose graph is built on two threads.
const PARALLEL_BUILD: usize = 50_000;

/// rw and ww edges of committed transactions.
fn add_rw_ww_edges<L: EdgeLabel>(ix: &Index, vo: &VersionOrder, e: &mut Edges<L>) {
    for r in ix.committed_txns() {
        for rd in ix.reads(r) {
            if rd.writer != INIT && !ix.committed[rd.writer as usize] {
                continue;
            }
            if let Some((nx, _)) = vo.next(rd.key, rd.writer) {
                if nx != r && ix.committed[nx as usize] {
                    e.dep(
                        r,
                        nx,
                        Label {
                            dep: Dep::Rw,
                            why: Why::Observed,
                            predicate: rd.predicate,
                            key: rd.key,
                            read_from: rd.writer,
                        },
                    );
                }
            }
        }
    }
    for (k, before, after, why) in vo.links() {
        if before != INIT && ix.committed[before as usize] && ix.committed[after as usize] {
            e.dep(
                before,
                after,
                Label {
                    dep: Dep::Ww,
                    why,
                    predicate: false,
                    key: k,
                    read_from: before,
                },
            );
        }
    }
}

/// The database's snapshot and commit timestamps, in the SI model: every
/// begin at its start timestamp and every commit at its commit timestamp,
/// in timestamp order. A commit is visible only to snapshots taken after
/// it, so at equal timestamps a begin comes first; two events of one kind
/// at equal timestamps stay unordered. Events are joined through one time
/// node per distinct (timestamp, kind), so ties order nothing.
///
/// Only what the database stated is used: a transaction without `dbts`, or
/// a commit without a commit timestamp (an `info` transaction, a failed
/// timestamp query), is placed by black-box reasoning alone. The SER model
/// gets no events at all: serializability never requires the serial order
/// to be the commit order; the timestamps only fix each key's version order
/// ([`crate::decide::blackbox::general::timestamp_chains`]).
fn add_timestamps<L: EdgeLabel>(ix: &Index, e: &mut Edges<L>) {
    if e.model != Model::Si {
        return;
    }
    let h = ix.history;
    let mut events: Vec<(u64, u8, u32)> = Vec::new();
    for t in ix.committed_txns() {
        let Some(ts) = h.txns[t as usize].dbts else {
            continue;
        };
        events.push((ts.start, 0, e.node(t, false)));
        if let Some(c) = ts.commit {
            events.push((c, 1, e.node(t, true)));
        }
    }
    if events.is_empty() {
        return;
    }
    events.sort_unstable();
    let label = Label::plain(Dep::Ts, Why::DbTs);
    let mut prev: Option<u32> = None;
    let mut i = 0;
    while i < events.len() {
        let group = (events[i].0, events[i].1);
        let node = e.b.add_node();
        if let Some(p) = prev {
            e.edge(p, node, label);
        }
        while i < events.len() && (events[i].0, events[i].1) == group {
            let v = events[i].2;
            // The event comes after the previous group and before this
            // group's node, which precedes every later group.
            if let Some(p) = prev {
                e.edge(p, v, label);
            }
            e.edge(v, node, label);
            i += 1;
        }
        prev = Some(node);
    }
}

/// Real-time edges `T → S` for every `T.end < S.start` (`T` an `ok`
/// transaction: an unknown outcome has no known end), through a chain of
/// time nodes: `T → A[rank of T.end]`, `A[i] → A[i+1]`, and
/// `A[last end before S.start] → S`.
fn add_realtime<L: EdgeLabel>(ix: &Index, e: &mut Edges<L>) {
    let h = ix.history;
    let mut ends: Vec<(u64, u32)> = ix
        .committed_txns()
        // An `info` transaction may have committed after its client gave
        // up, so its end orders nothing.
        .filter(|&t| h.txns[t as usize].status == history::Status::Ok)
        .filter_map(|t| h.txns[t as usize].end.map(|x| (x, t)))
        .collect();
    if ends.is_empty() {
        return;
    }
    ends.sort_unstable();
    let base = e.b.node_count() as u32;
    for _ in 0..ends.len() {
        e.b.add_node();
    }
    let label = Label::plain(Dep::Rt, Why::Order);
    let chain = Label::plain(Dep::RtChain, Why::Order);
    for (i, &(_, t)) in ends.iter().enumerate() {
        let from = e.node(t, true);
        e.edge(from, base + i as u32, label);
        if i + 1 < ends.len() {
            e.edge(base + i as u32, base + i as u32 + 1, chain);
        }
    }
    for s in ix.committed_txns() {
        let Some(start) = h.txns[s as usize].start else {
            continue;
        };
        let j = ends.partition_point(|&(end, _)| end < start);
        if j > 0 {
            let to = e.node(s, false);
            e.edge(base + (j - 1) as u32, to, label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_by_transaction_answers_as_the_hashed_one() {
        // Random links among 12 transactions and 4 keys, the initial
        // version included: third keys of one transaction overflow its
        // two slots into the table.
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x2545);
        for round in 0..300 {
            let (mut hashed, mut slotted) = (VersionOrder::new(), VersionOrder::by_txn(12));
            for _ in 0..rng.random_range(0..40) {
                let before = if rng.random_ratio(1, 5) {
                    INIT
                } else {
                    rng.random_range(0..12)
                };
                let (key, after) = (rng.random_range(0..4), rng.random_range(0..12));
                let why = if rng.random_bool(0.5) {
                    Why::Rmw
                } else {
                    Why::Chosen
                };
                assert_eq!(
                    hashed.link(key, before, after, why),
                    slotted.link(key, before, after, why),
                    "round {round}"
                );
            }
            for key in 0..4 {
                for before in (0..12).chain([INIT]) {
                    assert_eq!(hashed.next(key, before), slotted.next(key, before));
                }
            }
            let mut a: Vec<_> = hashed.links().map(|(k, b, t, _)| (k, b, t)).collect();
            let mut b: Vec<_> = slotted.links().map(|(k, b, t, _)| (k, b, t)).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "round {round}");
        }
    }
}
