//! cc by lazy saturation, for histories with few written keys: guess a
//! commit order, check it against the axiom with one entry per key and
//! transaction, add only the forced edges the guess broke, and guess again
//! (see the [module docs](super)).
//!
//! The exact algorithm ([`cc`](super::cc)) puts in, for each read, one
//! forced edge per session whose writers it saw: with few keys and many
//! sessions that is reads × sessions edges (about 89 million on AWDIT's
//! causal history of 2^20 events). Here the work per round is
//! `O((n + e)·k)` for `k` written keys, and only broken edges are kept.
//!
//! Each round takes an order of `so ∪ wr ∪ added`, computes per
//! transaction and key the latest writer of the key in its causal past
//! (latest in the guessed order), and checks that every read reads from
//! it. A read that does not adds the edge `latest → source`: a forced edge
//! the guess broke (its premise is the read itself). The next guess is a
//! topological order of the graph so far that keeps the previous order
//! wherever the graph allows. The order that passes is a witness; a cycle
//! of real edges, or a read of the initial version after a writer of the
//! key, is a refutation. When neither comes in [`MAX_ROUNDS`] rounds, the
//! caller runs the exact algorithm.
//!
//! A round makes its guess and checks it in one pass ([`Scan`]), over the
//! transactions renumbered by their place in the first guess ([`Local`]),
//! so it reads its arrays nearly in order: on AWDIT's causal history of
//! 2^20 events, a cc check's decision took 286 ms where a pass to guess
//! and another to check, over the index's own numbering, took 413 ms.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::index::{Index, INIT};

use super::cc::causal_edges_of;
use super::{Csr, InitViolation, Limit, WLabel, Why, LIMIT_EVERY, MAX_INIT_KEPT, NONE};

/// At most this many written keys: a round costs `O((n + e)·k)`.
const MAX_KEYS: usize = 64;
/// Up to this many row entries (64 MB), every transaction has a row of its
/// own. On AWDIT's causal history of 2^20 events a cc decision took 280 ms
/// so, against 319 ms when rows (then as wide as the number of written
/// keys, not a fixed width) were freed and reused as they fell out of use.
const DIRECT_ROWS: usize = 1 << 24;
/// Rounds before handing over to the exact algorithm (AWDIT's causal
/// history of 2^20 events settles in 7).
const MAX_ROUNDS: usize = 40;

/// What lazy saturation found.
pub(super) enum Lazy {
    /// A commit order (committed transactions, first first) satisfying cc.
    Witness(Vec<u32>),
    /// Forced edges `(t1, t2, label)` that close a cycle with `so ∪ wr`,
    /// or reads of an initial version after a writer of the key: the
    /// history is not cc.
    Refuted {
        edges: Vec<(u32, u32, WLabel)>,
        inits: Vec<InitViolation>,
        init_count: usize,
    },
    /// Not settled, or not tried (list reads, or more than [`MAX_KEYS`]
    /// written keys); the exact algorithm decides.
    GaveUp,
}

/// True when lazy saturation is worth trying: few written keys, and no
/// list reads (their order edges are not part of the guess).
#[cfg(test)]
fn applies(ix: &Index) -> bool {
    !ix.lists && written_keys(ix).1 <= MAX_KEYS
}

/// Dense ids of the written keys (`NONE` for keys nobody writes), and
/// their number.
fn written_keys(ix: &Index) -> (Vec<u32>, usize) {
    let mut id = vec![NONE; ix.keys.len()];
    let mut k = 0;
    for t in 0..ix.len() as u32 {
        for w in ix.writes(t) {
            if id[w.key as usize] == NONE {
                id[w.key as usize] = k as u32;
                k += 1;
            }
        }
    }
    (id, k)
}

/// The committed transactions renumbered by their place in the first
/// guess, with what a round reads of each. Later guesses keep most of the
/// first one's order, so a round walks these arrays nearly in order where
/// the index's would be visited at random (on AWDIT's causal history of
/// 2^16 events, most of a round's time went to cache misses on the
/// index's reads).
struct Local {
    /// The transaction each local id stands for.
    orig: Vec<u32>,
    /// `so ∪ wr`, both ways, in local ids.
    preds: Csr,
    succs: Csr,
    read_start: Vec<u32>,
    /// Each transaction's external reads of written keys.
    reads: Vec<LocalRead>,
    wk_start: Vec<u32>,
    /// Each transaction's written keys, as dense key ids.
    wk: Vec<u32>,
}

/// An external read of a written key.
struct LocalRead {
    /// Local id of the source, or [`INIT`].
    writer: u32,
    /// The key, as the index numbers it (for the label).
    key: u32,
    /// The key's dense id among the written keys.
    kid: u32,
}

impl Local {
    fn new(ix: &Index, kid: &[u32], preds: &Csr, succs: &Csr, orig: Vec<u32>) -> Local {
        let mut local = vec![NONE; ix.len()];
        for (i, &t) in orig.iter().enumerate() {
            local[t as usize] = i as u32;
        }
        let relabel = |g: &Csr| {
            let mut start = Vec::with_capacity(orig.len() + 1);
            let mut adj = Vec::with_capacity(g.adj.len());
            start.push(0);
            for &t in &orig {
                adj.extend(g.of(t).iter().map(|&p| local[p as usize]));
                start.push(adj.len() as u32);
            }
            Csr { start, adj }
        };
        let (preds, succs) = (relabel(preds), relabel(succs));
        let mut read_start = Vec::with_capacity(orig.len() + 1);
        let mut reads = Vec::new();
        let mut wk_start = Vec::with_capacity(orig.len() + 1);
        let mut wk = Vec::new();
        read_start.push(0);
        wk_start.push(0);
        for &t in &orig {
            for r in ix.reads(t) {
                let x = kid[r.key as usize];
                // A key nobody writes is read from the initial version,
                // which no writer can hide.
                if x != NONE {
                    reads.push(LocalRead {
                        writer: if r.writer == INIT {
                            INIT
                        } else {
                            local[r.writer as usize]
                        },
                        key: r.key,
                        kid: x,
                    });
                }
            }
            read_start.push(reads.len() as u32);
            wk.extend(ix.writes(t).iter().map(|w| kid[w.key as usize]));
            wk_start.push(wk.len() as u32);
        }
        Local {
            orig,
            preds,
            succs,
            read_start,
            reads,
            wk_start,
            wk,
        }
    }

    fn reads(&self, t: u32) -> &[LocalRead] {
        &self.reads[self.read_start[t as usize] as usize..self.read_start[t as usize + 1] as usize]
    }

    fn wkeys(&self, t: u32) -> &[u32] {
        &self.wk[self.wk_start[t as usize] as usize..self.wk_start[t as usize + 1] as usize]
    }
}

/// Guess, check, add the broken edges, guess again. Each round makes its
/// guess and checks it in one pass: a transaction's causal past is all
/// placed by the time the guess places it.
pub(super) fn cc_lazy(ix: &Index, limit: Limit) -> Lazy {
    with_rows(ix, limit, DIRECT_ROWS)
}

/// [`cc_lazy`], every transaction having a row of its own up to
/// `direct_rows` row entries.
fn with_rows(ix: &Index, limit: Limit, direct_rows: usize) -> Lazy {
    let (kid, k) = written_keys(ix);
    // Not tried with list reads (their order edges are not part of the
    // guess), nor with many written keys (a round costs `O((n + e)·k)`).
    if ix.lists || k > MAX_KEYS {
        return Lazy::GaveUp;
    }
    let lx = {
        let (preds, succs) = causal_edges_of(ix, |_| &[]);
        let Some(first) = first_order(ix, &preds, &succs) else {
            // `so ∪ wr` is cyclic: that cycle is the anomaly.
            return Lazy::Refuted {
                edges: Vec::new(),
                inits: Vec::new(),
                init_count: 0,
            };
        };
        Local::new(ix, &kid, &preds, &succs, first)
    };
    // Rows of a fixed width the compiler can keep in registers.
    match k {
        0..=8 => settle::<8>(&lx, limit, direct_rows),
        9..=16 => settle::<16>(&lx, limit, direct_rows),
        17..=32 => settle::<32>(&lx, limit, direct_rows),
        _ => settle::<64>(&lx, limit, direct_rows),
    }
}

/// The rounds, with rows of `K` entries (`K` at least the number of
/// written keys).
fn settle<const K: usize>(lx: &Local, limit: Limit, direct_rows: usize) -> Lazy {
    let n = lx.orig.len();
    // From here on, transactions are local ids; the first guess is theirs.
    let mut prev: Vec<u32> = (0..n as u32).collect();
    let mut prev_pos = prev.clone();
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut pos = vec![NONE; n];
    // Added edges (t2, t1): t1 must commit before t2.
    let mut added: Vec<(u32, u32)> = Vec::new();
    let mut labels: Vec<WLabel> = Vec::new();
    let mut inits: Vec<InitViolation> = Vec::new();
    let mut init_count = 0usize;
    // Rows: 1 + the position of the latest writer of each key in a
    // transaction's causal past, itself included (0: none). Each
    // transaction has a row of its own when they all fit in
    // `direct_rows`; otherwise a row is freed once its last `so ∪ wr`
    // successor has used it, and `slot` says where a live row is.
    let direct = n * K <= direct_rows;
    let mut arena: Vec<[u32; K]> = if direct { vec![[0; K]; n] } else { Vec::new() };
    let mut slot = if direct { Vec::new() } else { vec![NONE; n] };
    let mut free: Vec<u32> = Vec::new();
    let mut remaining = if direct { Vec::new() } else { vec![0u32; n] };
    let refuted = |added: Vec<(u32, u32)>, labels: Vec<WLabel>, inits, init_count| {
        let orig = |t: u32| lx.orig[t as usize];
        Lazy::Refuted {
            edges: added
                .into_iter()
                .zip(labels)
                .map(|((t2, t1), l)| (orig(t1), orig(t2), l))
                .collect(),
            inits,
            init_count,
        }
    };
    for _ in 0..MAX_ROUNDS {
        if limit.hit() {
            return Lazy::GaveUp;
        }
        for (t, r) in remaining.iter_mut().enumerate() {
            *r = lx.succs.of(t as u32).len() as u32;
        }
        let before = added.len();
        order.clear();
        let mut scan = Scan::new(&lx.preds, &added, &prev, &prev_pos);
        while let Some(t3) = scan.next(&lx.succs) {
            let i = order.len() as u32;
            if (i + 1).is_multiple_of(LIMIT_EVERY) && limit.hit() {
                return Lazy::GaveUp;
            }
            pos[t3 as usize] = i;
            order.push(t3);
            let mut row = [0u32; K];
            for &p in lx.preds.of(t3) {
                let from = &arena[if direct { p } else { slot[p as usize] } as usize];
                for (r, &v) in row.iter_mut().zip(from) {
                    *r = (*r).max(v);
                }
                if !direct {
                    remaining[p as usize] -= 1;
                    if remaining[p as usize] == 0 {
                        free.push(slot[p as usize]);
                        slot[p as usize] = NONE;
                    }
                }
            }
            for r in lx.reads(t3) {
                let latest = row[r.kid as usize];
                let t2 = r.writer;
                if t2 == INIT {
                    if latest > 0 {
                        init_count += 1;
                        if inits.len() < MAX_INIT_KEPT {
                            let t1 = lx.orig[order[latest as usize - 1] as usize];
                            let label = WLabel::forced(Why::Causal, r.key, lx.orig[t3 as usize]);
                            inits.push(InitViolation { t1, label });
                        }
                    }
                } else if latest > pos[t2 as usize] + 1 {
                    // The latest writer of x t3 saw is not t2 (a `wr`
                    // predecessor, so placed already): it must commit
                    // before t2, and the guess has it after.
                    added.push((t2, order[latest as usize - 1]));
                    labels.push(WLabel::forced(Why::Causal, r.key, lx.orig[t3 as usize]));
                }
            }
            if direct || remaining[t3 as usize] > 0 {
                for &x in lx.wkeys(t3) {
                    row[x as usize] = i + 1;
                }
                let s = if direct {
                    t3
                } else {
                    let s = free.pop().unwrap_or_else(|| {
                        arena.push([0; K]);
                        (arena.len() - 1) as u32
                    });
                    slot[t3 as usize] = s;
                    s
                };
                arena[s as usize] = row;
            }
        }
        if order.len() < n {
            // The edges added so far close a cycle with `so ∪ wr`.
            return refuted(added, labels, inits, init_count);
        }
        if init_count > 0 {
            return refuted(added, labels, inits, init_count);
        }
        if added.len() == before {
            return Lazy::Witness(order.iter().map(|&t| lx.orig[t as usize]).collect());
        }
        std::mem::swap(&mut prev, &mut order);
        std::mem::swap(&mut prev_pos, &mut pos);
    }
    Lazy::GaveUp
}

/// A topological order of `so ∪ wr` (Kahn's, first found first: on
/// AWDIT's causal history it settles in 7 rounds with 332k added edges,
/// against 8 and 478k last found first), or `None` when it is cyclic.
fn first_order(ix: &Index, preds: &Csr, succs: &Csr) -> Option<Vec<u32>> {
    let mut indeg: Vec<u32> = (0..ix.len() as u32)
        .map(|t| preds.of(t).len() as u32)
        .collect();
    let mut queue: VecDeque<u32> = ix
        .committed_txns()
        .filter(|&t| indeg[t as usize] == 0)
        .collect();
    let mut order = Vec::with_capacity(ix.len());
    while let Some(t) = queue.pop_front() {
        order.push(t);
        for &s in succs.of(t) {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                queue.push_back(s);
            }
        }
    }
    (order.len() == ix.committed_txns().count()).then_some(order)
}

/// Emits a topological order of `so ∪ wr ∪ added` that keeps the
/// previous order `prev` wherever it can (the ready transaction first in
/// it goes first); it stops early when the graph is cyclic.
///
/// The previous order is a topological order of all but the edges added
/// last, so nearly every transaction is ready when a scan of it reaches
/// it: the scan emits those, and only the ones it passes while they wait
/// for a predecessor go through a heap, once released. This is the same
/// order as a heap of every ready transaction gives, in `O(n + e)` and a
/// small heap rather than `O(n log n)`.
struct Scan<'a> {
    prev: &'a [u32],
    prev_pos: &'a [u32],
    indeg: Vec<u32>,
    /// The added edges, from the transaction that must commit first.
    more: Csr,
    /// Passed by the scan while waiting, and since released: by position.
    released: BinaryHeap<Reverse<u32>>,
    /// The scan's position in `prev`.
    next: usize,
}

impl<'a> Scan<'a> {
    fn new(preds: &Csr, added: &[(u32, u32)], prev: &'a [u32], prev_pos: &'a [u32]) -> Self {
        let (indeg, more) = with_added(preds.start.len() - 1, preds, added);
        Scan {
            prev,
            prev_pos,
            indeg,
            more,
            released: BinaryHeap::new(),
            next: 0,
        }
    }

    /// The next transaction, its successors released; `None` at the end,
    /// or when all that is left waits on a cycle.
    fn next(&mut self, succs: &Csr) -> Option<u32> {
        let prev = self.prev;
        // The first transaction of `prev` from `next` on that is ready;
        // those passed wait to be released.
        while self.next < prev.len() && self.indeg[prev[self.next] as usize] != 0 {
            self.next += 1;
        }
        let p = match self.released.peek() {
            Some(&Reverse(r)) if self.next >= prev.len() || (r as usize) < self.next => {
                self.released.pop();
                r as usize
            }
            _ if self.next < prev.len() => {
                self.next += 1;
                self.next - 1
            }
            _ => return None,
        };
        let t = prev[p];
        let passed = self.next;
        let (indeg, prev_pos, released) = (&mut self.indeg, self.prev_pos, &mut self.released);
        // The added edges apart: most transactions have none.
        for list in [succs.of(t), self.more.of(t)] {
            for &s in list {
                let d = &mut indeg[s as usize];
                *d -= 1;
                if *d == 0 && (prev_pos[s as usize] as usize) < passed {
                    released.push(Reverse(prev_pos[s as usize]));
                }
            }
        }
        Some(t)
    }
}

/// The in-degrees of `so ∪ wr ∪ added`, and the added edges as CSR from
/// the transaction that must commit first.
fn with_added(n: usize, preds: &Csr, added: &[(u32, u32)]) -> (Vec<u32>, Csr) {
    let mut indeg: Vec<u32> = (0..n as u32).map(|t| preds.of(t).len() as u32).collect();
    let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(added.len());
    for &(t2, t1) in added {
        indeg[t2 as usize] += 1;
        pairs.push((t1, t2));
    }
    (indeg, Csr::from_pairs(n, &pairs))
}

/// The order [`Scan`] emits, by a heap of every ready transaction:
/// its definition, for the tests.
#[cfg(test)]
fn next_order_by_heap(
    n: usize,
    preds: &Csr,
    succs: &Csr,
    added: &[(u32, u32)],
    order: &[u32],
    pos: &[u32],
) -> Option<Vec<u32>> {
    let (mut indeg, more) = with_added(n, preds, added);
    let mut heap: BinaryHeap<Reverse<u32>> = order
        .iter()
        .filter(|&&t| indeg[t as usize] == 0)
        .map(|&t| Reverse(pos[t as usize]))
        .collect();
    let mut out = Vec::with_capacity(order.len());
    while let Some(Reverse(p)) = heap.pop() {
        let t = order[p as usize];
        out.push(t);
        for &s in succs.of(t).iter().chain(more.of(t)) {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                heap.push(Reverse(pos[s as usize]));
            }
        }
    }
    (out.len() == order.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::decide::weak::cc::{causal_edges, cc_edges};
    use crate::decide::weak::{Ctx, Forced};
    use crate::graph::GraphBuilder;
    use crate::index::Index;
    use checkers_testkit::{random_history, GenConfig};

    /// The exact graph `so ∪ wr ∪ forced` of cc, and its number of
    /// initial-version violations.
    fn exact(cx: &Ctx) -> (crate::graph::Graph<WLabel>, usize) {
        let n = cx.ix.len();
        let mut b: GraphBuilder<WLabel> = GraphBuilder::new(n);
        let (preds, _) = causal_edges(cx);
        let label = WLabel {
            why: Why::Wr,
            key: NONE,
            reader: NONE,
            op: NONE,
        };
        for t in 0..n as u32 {
            for &p in preds.of(t) {
                b.edge(p, t, label);
            }
        }
        let mut out = Forced::new(&mut b);
        assert!(cc_edges(cx, &mut out, Limit::default()));
        let count = out.init_count;
        (b.build(), count)
    }

    /// The scan gives the order a heap of every ready transaction gives,
    /// on random histories with random added edges (cyclic ones too).
    #[test]
    fn the_next_order_is_the_heap_order() {
        use rand::RngExt;
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5ca7);
        let cfg = GenConfig {
            max_txns: 30,
            sessions: 5,
            keys: 3,
            ..GenConfig::default()
        };
        let (mut some, mut none) = (0, 0);
        for _ in 0..3000 {
            let h = random_history(&mut rng, &cfg);
            let ix = Index::new(&h);
            let cx = Ctx::new(&ix, None);
            let (preds, succs) = causal_edges(&cx);
            let Some(order) = first_order(&ix, &preds, &succs).filter(|o| !o.is_empty()) else {
                continue;
            };
            let mut pos = vec![NONE; ix.len()];
            for (i, &t) in order.iter().enumerate() {
                pos[t as usize] = i as u32;
            }
            let k = rng.random_range(0..6);
            let added: Vec<(u32, u32)> = (0..k)
                .map(|_| {
                    let a = order[rng.random_range(0..order.len())];
                    let b = order[rng.random_range(0..order.len())];
                    (a, b)
                })
                .filter(|(a, b)| a != b)
                .collect();
            let mut emit = Scan::new(&preds, &added, &order, &pos);
            let mut scan = Vec::new();
            while let Some(t) = emit.next(&succs) {
                scan.push(t);
            }
            let scan = (scan.len() == order.len()).then_some(scan);
            let heap = next_order_by_heap(ix.len(), &preds, &succs, &added, &order, &pos);
            assert_eq!(scan, heap, "added {added:?} to {order:?}");
            match scan {
                Some(_) => some += 1,
                None => none += 1,
            }
        }
        assert!(some > 500 && none > 100, "{some} ordered, {none} cyclic");
    }

    /// What lazy saturation found, to compare two runs.
    fn summary(l: &Lazy) -> (Option<Vec<u32>>, Vec<(u32, u32)>, usize) {
        match l {
            Lazy::Witness(o) => (Some(o.clone()), Vec::new(), 0),
            Lazy::Refuted {
                edges, init_count, ..
            } => (
                None,
                edges.iter().map(|e| (e.0, e.1)).collect(),
                *init_count,
            ),
            Lazy::GaveUp => (None, Vec::new(), usize::MAX),
        }
    }

    /// Lazy saturation settles on small histories and decides what the
    /// exact algorithm decides: its witness orders every exact edge, and
    /// the exact graph of a history it refutes has a cycle or an
    /// initial-version violation.
    #[test]
    fn agrees_with_the_exact_saturation() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x1a27);
        let few = GenConfig {
            max_txns: 14,
            sessions: 4,
            keys: 3,
            max_ops: 4,
            p_wild: 0.2,
            max_stale: 4,
            ..GenConfig::default()
        };
        // More sessions than keys, the shape lazy saturation is for.
        let many = GenConfig {
            max_txns: 30,
            sessions: 10,
            keys: 2,
            p_wild: 0.05,
            max_stale: 6,
            ..few.clone()
        };
        let (mut ok, mut bad) = (0, 0);
        for i in 0..4000 {
            let cfg = if i % 2 == 0 { &few } else { &many };
            let h = random_history(&mut rng, cfg);
            let ix = Index::new(&h);
            let cx = Ctx::new(&ix, None);
            if !applies(&ix) {
                continue;
            }
            let (g, inits) = exact(&cx);
            // Rows freed as they fall out of use decide the same way.
            let freed = summary(&with_rows(&ix, Limit::default(), 0));
            let lazy = cc_lazy(&ix, Limit::default());
            assert_eq!(summary(&lazy), freed);
            match lazy {
                Lazy::Witness(order) => {
                    ok += 1;
                    assert_eq!(inits, 0);
                    let mut pos = vec![NONE; ix.len()];
                    for (i, &t) in order.iter().enumerate() {
                        pos[t as usize] = i as u32;
                    }
                    for v in 0..g.node_count() as u32 {
                        for (_, w) in g.out(v) {
                            assert!(pos[v as usize] < pos[w as usize], "edge {v} → {w}");
                        }
                    }
                }
                Lazy::Refuted {
                    edges, init_count, ..
                } => {
                    bad += 1;
                    assert!(init_count > 0 || !g.cyclic_components(|_| true).is_empty());
                    // Each edge is a forced edge of the exact graph (or
                    // implied by its edges), premised on its label's read.
                    for (t1, t2, l) in edges {
                        let read = ix
                            .reads(l.reader)
                            .iter()
                            .any(|r| r.key == l.key && r.writer == t2);
                        assert!(
                            read,
                            "{t1} → {t2}: {} does not read {} from {t2}",
                            l.reader, l.key
                        );
                        let mut seen = vec![false; g.node_count()];
                        let mut stack = vec![t1];
                        while let Some(v) = stack.pop() {
                            for (_, w) in g.out(v) {
                                if !std::mem::replace(&mut seen[w as usize], true) {
                                    stack.push(w);
                                }
                            }
                        }
                        assert!(seen[t2 as usize], "{t1} → {t2} is not forced");
                    }
                }
                Lazy::GaveUp => panic!("gave up on a small history"),
            }
        }
        assert!(
            ok > 300 && bad > 300,
            "too few of a kind: {ok} ok, {bad} refuted"
        );
    }
}
