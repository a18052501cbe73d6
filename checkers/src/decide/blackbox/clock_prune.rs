//! Pruning a polygraph by vector clocks, without building its pairs.
//!
//! PolySI's pruning asks, for every pair of writers of a key, whether one
//! of the two orders closes a cycle with what is known, and if so adds the
//! other. Built pair by pair, a 100k-transaction history has tens of
//! millions of pairs and their edges (gigabytes). When session order is
//! part of the level (strong-session SI and SER), the sessions are a chain
//! cover of the known graph, so [`clocks`](crate::decide::blackbox::clocks) answer each
//! reachability question in O(1), and the questions themselves collapse:
//!
//! For a writer `a` of key `x` and a session `c`, the writers of `x` in
//! `c` that must come *before* `a` are a prefix of `c`'s writers. Writer
//! `b` must come first exactly when `a`-first closes a cycle: `b`'s begin
//! reaches `a`'s commit (so `a →ww b` goes backwards), or `b`'s commit
//! reaches a reader of `a` (so `reader →rw b` does). Both tests are
//! thresholds on `b`'s place in `c`, so one binary search per (writer,
//! session) finds the prefix. Only its last member's edges are added (the
//! earlier ones follow through session order and the edges added for
//! them), and only when the clocks do not already imply them.
//!
//! Rounds repeat until no edge is new. A cycle in the graph is then a
//! contradiction (each added edge is forced, so no version order works);
//! pairs in no prefix are left open for the solver, and are the only pairs
//! ever listed.

use std::time::Instant;

use rustc_hash::FxHashMap;

use crate::decide::blackbox::clocks::{adjacency, ChainCover, Clocks, Cyclic};
use crate::decide::blackbox::derive::{derivation_of, Decision};
use crate::decide::blackbox::polygraph::{NodeEdge, Polygraph};
use crate::decide::depgraph::{Dep, Label, Model, Why};
use crate::index::{Index, INIT};

/// What pruning by clocks concluded.
pub enum ClockPruned {
    /// Every pair of writers is ordered; `order` is a topological order of
    /// the known and added edges, so a witness once checked.
    Decided { order: Vec<u32> },
    /// The pairs still open per key (`a < b` ids), with the edges added
    /// and a topological order of the graph with them.
    Open {
        order: Vec<u32>,
        added: Vec<NodeEdge>,
        open: FxHashMap<u32, Vec<(u32, u32)>>,
    },
    /// The forced edges close a cycle: no version order satisfies the
    /// level. `seed`: transactions to grow a small refuted sub-history
    /// from.
    Contradiction { seed: Vec<u32>, proof: ClockProof },
    /// Not decided here (why).
    Pass(String),
}

/// How pruning by clocks reached a contradiction, for a
/// [`Derivation`](crate::certify::certificate::Derivation).
pub struct ClockProof {
    /// Each decision (`first` before `second`, its round, the rejected
    /// edge) and the range of `added` it contributed.
    pub decisions: Vec<Decision>,
    pub ranges: Vec<(u32, u32)>,
    pub added: Vec<NodeEdge>,
    /// The cycle the decisions closed, as node edges.
    pub cycle: Vec<(u32, u32)>,
}

impl ClockProof {
    /// The derivation a certificate checks, when one can be written.
    pub fn derivation(
        &self,
        ix: &Index,
        known: &Polygraph,
        deadline: Option<Instant>,
    ) -> Option<crate::certify::certificate::Derivation> {
        let sides: Vec<&[NodeEdge]> = self
            .ranges
            .iter()
            .map(|&(a, b)| &self.added[a as usize..b as usize])
            .collect();
        derivation_of(
            ix,
            known,
            &self.decisions,
            &sides,
            self.cycle.clone(),
            deadline,
        )
    }
}

/// The most clock entries (nodes × sessions) we allocate.
const MAX_CLOCK_ENTRIES: usize = 1 << 27;

/// The most open pairs we list for the solver.
pub const MAX_OPEN_PAIRS: u64 = 4_000_000;

/// Prunes every key's writer pairs by vector clocks over `chains`
/// (sequences of transactions, each a path of `known`'s edges: sessions,
/// when session order is among them), from the known edges of `known`.
pub fn clock_prune(
    ix: &Index,
    known: &Polygraph,
    chains: &[Vec<u32>],
    deadline: Option<Instant>,
) -> ClockPruned {
    let model = known.model;
    let nodes = known.nodes;
    if nodes.saturating_mul(chains.len()) > MAX_CLOCK_ENTRIES {
        return ClockPruned::Pass(format!(
            "{} nodes x {} sessions is too many clock entries",
            nodes,
            chains.len()
        ));
    }
    let cover = ChainCover::of_paths(
        nodes,
        chains.iter().map(|s| match model {
            Model::Ser => s.clone(),
            Model::Si => s.iter().flat_map(|&t| [2 * t, 2 * t + 1]).collect(),
        }),
    );
    let keys = KeyWriters::of(ix, &cover, model);
    let mut added: Vec<NodeEdge> = Vec::new();
    let mut decisions: Vec<Decision> = Vec::new();
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut last_round = 0;
    let mut round = 0u32;
    loop {
        round += 1;
        if deadline.is_some_and(|d| Instant::now() > d) {
            return ClockPruned::Pass(format!("out of time in round {round} of pruning by clocks"));
        }
        let edges = known.known.iter().chain(&added).map(|&(f, t, _)| (f, t));
        let (offsets, adj) = adjacency(nodes, edges);
        let clocks = match Clocks::compute(&cover, &offsets, &adj) {
            Ok(c) => c,
            Err(Cyclic(cyc)) => {
                // The last round's edges closed it: show the shortest cycle
                // through one of them, not whichever the pass found.
                let last = added[last_round..].iter().map(|&(f, t, _)| (f, t));
                let cyc = shortest_cycle(&offsets, &adj, last).unwrap_or(cyc);
                let seed = seed_of_cycle(ix, known, &added, &cyc);
                let cycle = cyc
                    .iter()
                    .zip(cyc.iter().cycle().skip(1))
                    .map(|(&f, &t)| (f, t))
                    .collect();
                return ClockPruned::Contradiction {
                    seed,
                    proof: ClockProof {
                        decisions,
                        ranges,
                        added,
                        cycle,
                    },
                };
            }
        };
        let before = added.len();
        last_round = before;
        let decided_before = decisions.len();
        let mut sweep = Sweep::new(&keys, &cover, &clocks, model);
        for k in 0..keys.count() {
            let mut decide = |first: u32, second: u32, rejected: NodeEdge, edges: &[NodeEdge]| {
                let from = added.len() as u32;
                added.extend_from_slice(edges);
                decisions.push((first, second, round, rejected));
                ranges.push((from, added.len() as u32));
            };
            sweep.key(k, &mut decide, None);
            if k % 1024 == 0 && deadline.is_some_and(|d| Instant::now() > d) {
                return ClockPruned::Pass(format!(
                    "out of time in round {round} of pruning by clocks"
                ));
            }
        }
        // Each decision stands for a constraint decided without being built.
        crate::decide::blackbox::polygraph::add_work((decisions.len() - decided_before) as u64);
        if added.len() > before {
            continue;
        }
        // A fixpoint: every prefix's edges are implied.
        let open_pairs = keys.pairs() - sweep.decided;
        if open_pairs == 0 {
            return ClockPruned::Decided {
                order: clocks.order,
            };
        }
        if open_pairs > MAX_OPEN_PAIRS {
            return ClockPruned::Pass(format!(
                "{open_pairs} pairs of writers are still open after pruning by clocks"
            ));
        }
        let mut open: FxHashMap<u32, Vec<(u32, u32)>> = FxHashMap::default();
        let mut sweep = Sweep::new(&keys, &cover, &clocks, model);
        for k in 0..keys.count() {
            let mut pairs = Vec::new();
            sweep.key(k, &mut |_, _, _, _| {}, Some(&mut pairs));
            if !pairs.is_empty() {
                open.insert(keys.key[k], pairs);
            }
        }
        return ClockPruned::Open {
            order: clocks.order,
            added,
            open,
        };
    }
}

/// The shortest cycle through one of `edges` (the first few dozen tried),
/// by breadth-first search back from each edge's head to its tail.
fn shortest_cycle(
    offsets: &[u32],
    adj: &[u32],
    edges: impl Iterator<Item = (u32, u32)>,
) -> Option<Vec<u32>> {
    const TRIES: usize = 32;
    let n = offsets.len() - 1;
    let mut from = vec![u32::MAX; n];
    let mut queue: Vec<u32> = Vec::new();
    let mut best: Option<Vec<u32>> = None;
    for (f, t) in edges.take(TRIES) {
        from.iter_mut().for_each(|x| *x = u32::MAX);
        queue.clear();
        queue.push(t);
        from[t as usize] = t;
        let mut next = 0;
        let bound = best.as_ref().map_or(usize::MAX, Vec::len);
        while next < queue.len() && from[f as usize] == u32::MAX {
            let v = queue[next];
            next += 1;
            for &w in &adj[offsets[v as usize] as usize..offsets[v as usize + 1] as usize] {
                if from[w as usize] == u32::MAX {
                    from[w as usize] = v;
                    queue.push(w);
                }
            }
        }
        if from[f as usize] == u32::MAX {
            continue;
        }
        // t ... f, then the edge f -> t closes it.
        let mut path = vec![f];
        let mut v = f;
        while v != t && path.len() <= bound {
            v = from[v as usize];
            path.push(v);
        }
        if path.len() < bound {
            path.reverse();
            best = Some(path);
        }
    }
    best
}

/// The transactions a contradiction's cycle goes through, as a seed for a
/// small refuted sub-history: runs along one session are cut to their
/// ends (session order joins them in any sub-history), and each added
/// edge brings the writer whose version it is about.
fn seed_of_cycle(ix: &Index, known: &Polygraph, added: &[NodeEdge], cyc: &[u32]) -> Vec<u32> {
    let mut session = vec![u32::MAX; ix.len()];
    let mut place = vec![0u32; ix.len()];
    for (s, ts) in ix.sessions.iter().enumerate() {
        for (i, &t) in ts.iter().enumerate() {
            session[t as usize] = s as u32;
            place[t as usize] = i as u32;
        }
    }
    let mut txns: Vec<u32> = cyc.iter().filter_map(|&v| known.txn_of(v)).collect();
    txns.dedup();
    if txns.len() > 1 && txns.first() == txns.last() {
        txns.pop();
    }
    let n = txns.len();
    let inner = |i: usize| {
        let (p, t, q) = (txns[(i + n - 1) % n], txns[i], txns[(i + 1) % n]);
        let same = |x: u32| session[x as usize] == session[t as usize];
        n > 3
            && same(p)
            && same(q)
            && place[p as usize] < place[t as usize]
            && place[t as usize] < place[q as usize]
    };
    let mut seed: Vec<u32> = (0..n).filter(|&i| !inner(i)).map(|i| txns[i]).collect();
    for w in cyc
        .windows(2)
        .chain(std::iter::once(&[cyc[cyc.len() - 1], cyc[0]][..]))
    {
        if let Some(&(_, _, l)) = added.iter().find(|&&(f, t, _)| (f, t) == (w[0], w[1])) {
            seed.push(l.read_from);
        }
    }
    seed.sort_unstable();
    seed.dedup();
    seed
}

/// One writer of a key, as the sweep needs it.
#[derive(Clone, Copy)]
struct Writer {
    txn: u32,
    /// Its session (chain) and its begin node's place there.
    chain: u32,
    place: u32,
    /// Its readers: `readers[r0..r1]`.
    r0: u32,
    r1: u32,
}

/// Each key with two or more committed writers, its writers and the
/// readers of each writer's version.
struct KeyWriters {
    /// The key's id, per listed key.
    key: Vec<u32>,
    /// `writers[start[k]..start[k + 1]]`: key `k`'s writers.
    start: Vec<u32>,
    writers: Vec<Writer>,
    readers: Vec<u32>,
}

impl KeyWriters {
    fn of(ix: &Index, cover: &ChainCover, model: Model) -> KeyWriters {
        let mut per_key: Vec<Vec<u32>> = vec![Vec::new(); ix.keys.len()];
        for t in ix.committed_txns() {
            for w in ix.writes(t) {
                per_key[w.key as usize].push(t);
            }
        }
        let mut readers_of: FxHashMap<(u32, u32), Vec<u32>> = FxHashMap::default();
        for r in ix.committed_txns() {
            for rd in ix.reads(r) {
                if rd.writer != INIT && ix.committed[rd.writer as usize] {
                    readers_of.entry((rd.key, rd.writer)).or_default().push(r);
                }
            }
        }
        let begin = |t: u32| match model {
            Model::Ser => t,
            Model::Si => 2 * t,
        };
        let mut kw = KeyWriters {
            key: Vec::new(),
            start: vec![0],
            writers: Vec::new(),
            readers: Vec::new(),
        };
        for (k, ws) in per_key.iter().enumerate() {
            if ws.len() < 2 {
                continue;
            }
            kw.key.push(k as u32);
            for &t in ws {
                let r0 = kw.readers.len() as u32;
                if let Some(rs) = readers_of.get(&(k as u32, t)) {
                    kw.readers.extend(rs);
                }
                let b = begin(t) as usize;
                kw.writers.push(Writer {
                    txn: t,
                    chain: cover.chain[b],
                    place: cover.pos[b],
                    r0,
                    r1: kw.readers.len() as u32,
                });
            }
            kw.start.push(kw.writers.len() as u32);
        }
        kw
    }

    fn count(&self) -> usize {
        self.key.len()
    }

    fn of_key(&self, k: usize) -> &[Writer] {
        &self.writers[self.start[k] as usize..self.start[k + 1] as usize]
    }

    fn readers(&self, w: &Writer) -> &[u32] {
        &self.readers[w.r0 as usize..w.r1 as usize]
    }

    /// How many pairs of writers of one key there are in all.
    fn pairs(&self) -> u64 {
        (0..self.count())
            .map(|k| {
                let n = self.of_key(k).len() as u64;
                n * (n - 1) / 2
            })
            .sum()
    }
}

/// Takes a decision: `first` before `second`, the rejected edge, and the
/// new edges.
type Decide<'d> = dyn FnMut(u32, u32, NodeEdge, &[NodeEdge]) + 'd;

/// One pass over the keys with fixed clocks, counting the decided pairs.
struct Sweep<'a> {
    keys: &'a KeyWriters,
    cover: &'a ChainCover,
    clocks: &'a Clocks,
    model: Model,
    /// Pairs found ordered so far (each once: by its later writer).
    decided: u64,
    /// Scratch: the key's writers grouped by session.
    by_chain: Vec<(u32, u32, u32)>,
}

impl<'a> Sweep<'a> {
    fn new(keys: &'a KeyWriters, cover: &'a ChainCover, clocks: &'a Clocks, model: Model) -> Self {
        Sweep {
            keys,
            cover,
            clocks,
            model,
            decided: 0,
            by_chain: Vec::new(),
        }
    }

    fn begin(&self, t: u32) -> u32 {
        match self.model {
            Model::Ser => t,
            Model::Si => 2 * t,
        }
    }

    fn commit(&self, t: u32) -> u32 {
        match self.model {
            Model::Ser => t,
            Model::Si => 2 * t + 1,
        }
    }

    /// Key `k`: each writer's prefixes, their last members' edges (given
    /// to `decide` with the decision, when the clocks do not imply them)
    /// and, with `open`, the pairs in no prefix.
    fn key(&mut self, k: usize, decide: &mut Decide, open: Option<&mut Vec<(u32, u32)>>) {
        let keys = self.keys;
        let ws = keys.of_key(k);
        let key = keys.key[k];
        // Writers grouped by session, in session order: (chain, place, index).
        self.by_chain.clear();
        self.by_chain.extend(
            ws.iter()
                .enumerate()
                .map(|(i, w)| (w.chain, w.place, i as u32)),
        );
        self.by_chain.sort_unstable();
        // Each session's run in `by_chain`: chains[s] = (chain, from, to).
        let mut chains: Vec<(u32, u32, u32)> = Vec::new();
        for (i, &(c, _, _)) in self.by_chain.iter().enumerate() {
            match chains.last_mut() {
                Some(last) if last.0 == c => last.2 = i as u32 + 1,
                _ => chains.push((c, i as u32, i as u32 + 1)),
            }
        }
        // Where each writer sits in `by_chain`.
        let mut at = vec![0u32; ws.len()];
        for (i, &(_, _, w)) in self.by_chain.iter().enumerate() {
            at[w as usize] = i as u32;
        }
        let slack = match self.model {
            Model::Ser => 0,
            // A commit node is its begin node's place plus one.
            Model::Si => 1,
        };
        // prefix[i * chains + s]: how many of session s's writers must
        // precede writer i.
        let mut prefix = vec![0u32; ws.len() * chains.len()];
        let mut limit = vec![0u32; chains.len()];
        // Which reader set each limit (`u32::MAX`: `a`'s own commit).
        let mut why = vec![u32::MAX; chains.len()];
        let mut edges: Vec<NodeEdge> = Vec::new();
        for (i, a) in ws.iter().enumerate() {
            // Thresholds on a begin node's place: below `limit[s]`, the
            // writer of session s must come before `a`.
            let ca = self.clocks.of(self.commit(a.txn));
            for (s, &(c, _, _)) in chains.iter().enumerate() {
                limit[s] = ca[c as usize];
                why[s] = u32::MAX;
            }
            for &r in keys.readers(a) {
                let cr = self.clocks.of(self.begin(r));
                let rchain = self.cover.chain[self.begin(r) as usize];
                for (s, &(c, _, _)) in chains.iter().enumerate() {
                    // b's commit reaches r's begin: commit place < clock.
                    // In the SER model a node reaches itself, and r's own
                    // place is not a writer before it.
                    let mut m = cr[c as usize];
                    if self.model == Model::Ser && c == rchain {
                        m = m.saturating_sub(1);
                    }
                    if m.saturating_sub(slack) > limit[s] {
                        limit[s] = m.saturating_sub(slack);
                        why[s] = r;
                    }
                }
            }
            for (s, &(c, from, to)) in chains.iter().enumerate() {
                let run = &self.by_chain[from as usize..to as usize];
                let p = run.partition_point(|&(_, place, _)| place < limit[s]);
                prefix[i * chains.len() + s] = p as u32;
                let own = c == a.chain;
                self.decided += p as u64 - u64::from(own && p > 0);
                // The prefix's last member other than `a`.
                let last = match p.checked_sub(1) {
                    Some(j) if own && run[j].2 as usize == i => j.checked_sub(1),
                    j => j,
                };
                if let Some(j) = last {
                    let b = &ws[run[j].2 as usize];
                    edges.clear();
                    self.edges_before(key, b, a, &mut edges);
                    if !edges.is_empty() {
                        // The edge of `a`-first that closes a cycle.
                        let label = |dep| Label {
                            dep,
                            why: Why::Chosen,
                            predicate: false,
                            key,
                            read_from: a.txn,
                        };
                        let rejected = if b.place < ca[c as usize] {
                            (self.commit(a.txn), self.begin(b.txn), label(Dep::Ww))
                        } else {
                            (self.begin(why[s]), self.commit(b.txn), label(Dep::Rw))
                        };
                        decide(b.txn, a.txn, rejected, &edges);
                    }
                }
            }
        }
        let Some(open) = open else { return };
        let slot = |w: &Writer| chains.partition_point(|&(c, _, _)| c < w.chain);
        for i in 0..ws.len() {
            let si = slot(&ws[i]);
            let ai = at[i] - chains[si].1;
            for j in i + 1..ws.len() {
                let sj = slot(&ws[j]);
                let bj = at[j] - chains[sj].1;
                let b_first = bj < prefix[i * chains.len() + sj];
                let a_first = ai < prefix[j * chains.len() + si];
                if !a_first && !b_first {
                    let (x, y) = (ws[i].txn, ws[j].txn);
                    open.push((x.min(y), x.max(y)));
                }
            }
        }
    }

    /// The edges of "`b` writes the key before `a`": `b →ww a`, and
    /// `r →rw a` for each reader `r` of `b`'s version; each only when the
    /// clocks do not already imply it.
    fn edges_before(&self, key: u32, b: &Writer, a: &Writer, out: &mut Vec<NodeEdge>) {
        let label = |dep| Label {
            dep,
            why: Why::Chosen,
            predicate: false,
            key,
            read_from: b.txn,
        };
        let mut push = |f: u32, t: u32, l: Label| {
            if f != t && !self.clocks.reaches(self.cover, f, t) {
                out.push((f, t, l));
            }
        };
        push(self.commit(b.txn), self.begin(a.txn), label(Dep::Ww));
        for &r in self.keys.readers(b) {
            if r != a.txn {
                push(self.begin(r), self.commit(a.txn), label(Dep::Rw));
            }
        }
    }
}
