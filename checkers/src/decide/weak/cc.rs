//! cc: the forced edges of causal consistency, by vector clocks over
//! sessions in a topological order of `so ∪ wr` (see the [module docs](super)).

use std::collections::VecDeque;

use crate::index::INIT;

use super::{Csr, Ctx, Forced, Limit, WLabel, Why, LIMIT_EVERY, NONE};

/// The distinct `so ∪ wr` predecessors of each committed transaction, as
/// CSR in both directions: (preds, succs).
pub(super) fn causal_edges(cx: &Ctx) -> (Csr, Csr) {
    let ix = cx.ix;
    let n = ix.len();
    let mut pairs: Vec<(u32, u32)> = Vec::new(); // (reader, pred)
    let mut seen = vec![0u32; n];
    for t3 in ix.committed_txns() {
        let stamp = t3 + 1;
        let (s, p) = (cx.sess_of[t3 as usize], cx.pos_of[t3 as usize]);
        if p > 0 {
            let prev = ix.sessions[s as usize][p as usize - 1];
            seen[prev as usize] = stamp;
            pairs.push((t3, prev));
        }
        let elements = cx.elements(t3).iter().map(|e| e.0);
        for w in ix.reads(t3).iter().map(|r| r.writer).chain(elements) {
            if w != INIT && seen[w as usize] != stamp {
                seen[w as usize] = stamp;
                pairs.push((t3, w));
            }
        }
    }
    let preds = Csr::from_pairs(n, &pairs);
    for p in pairs.iter_mut() {
        *p = (p.1, p.0);
    }
    let succs = Csr::from_pairs(n, &pairs);
    (preds, succs)
}

/// A clock entry: 1 + a position in a session (0: none of the session).
/// `i16` when every session is short enough, since the join (an
/// element-wise max) then vectorizes to 8 lanes even on baseline x86-64
/// (`pmaxsw`; unsigned and 32-bit max need SSE4.1).
trait Tick: Copy + Ord + Default {
    fn of(x: u32) -> Self;
    fn get(self) -> u32;
}

impl Tick for i16 {
    fn of(x: u32) -> Self {
        x as i16
    }
    fn get(self) -> u32 {
        self as u32
    }
}

impl Tick for u32 {
    fn of(x: u32) -> Self {
        x
    }
    fn get(self) -> u32 {
        self
    }
}

/// Each key's committed writers by session, positions ascending: the
/// segments (session, from, to) of `wpos`. Which of them are in a causal
/// past is read off the clock, so this is built up front.
struct Writers {
    seg_start: Vec<u32>,
    segs: Vec<(u32, u32, u32)>,
    wpos: Vec<u32>,
}

impl Writers {
    fn new(cx: &Ctx) -> Writers {
        let ix = cx.ix;
        let mut triples: Vec<(u32, u32, u32)> = Vec::new(); // (key, session, position)
        for t in ix.committed_txns() {
            for w in ix.writes(t) {
                triples.push((w.key, cx.sess_of[t as usize], cx.pos_of[t as usize]));
            }
        }
        triples.sort_unstable();
        let wpos: Vec<u32> = triples.iter().map(|t| t.2).collect();
        let nk = ix.keys.len();
        let mut seg_start = vec![0u32; nk + 1];
        let mut segs: Vec<(u32, u32, u32)> = Vec::new();
        let mut i = 0;
        for (key, start) in seg_start.iter_mut().enumerate().take(nk) {
            *start = segs.len() as u32;
            while i < triples.len() && triples[i].0 == key as u32 {
                let (s, from) = (triples[i].1, i);
                while i < triples.len() && triples[i].0 == key as u32 && triples[i].1 == s {
                    i += 1;
                }
                segs.push((s, from as u32, i as u32));
            }
        }
        seg_start[nk] = segs.len() as u32;
        Writers {
            seg_start,
            segs,
            wpos,
        }
    }

    /// The segments of key `x`.
    fn of(&self, x: u32) -> &[(u32, u32, u32)] {
        &self.segs[self.seg_start[x as usize] as usize..self.seg_start[x as usize + 1] as usize]
    }
}

/// cc: vector clocks in a topological order of `so ∪ wr`. When `so ∪ wr`
/// is cyclic no clock exists; the cycle is the anomaly and no co edge is
/// added. False when the limit is hit first.
pub(super) fn cc_edges(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
    let longest = cx.ix.sessions.iter().map(Vec::len).max().unwrap_or(0);
    if longest < i16::MAX as usize {
        clocks::<i16>(cx, out, limit)
    } else {
        clocks::<u32>(cx, out, limit)
    }
}

fn clocks<T: Tick>(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
    let ix = cx.ix;
    let n = ix.len();
    let k = ix.sessions.len();
    let (preds, succs) = causal_edges(cx);
    let mut indeg: Vec<u32> = (0..n as u32).map(|t| preds.of(t).len() as u32).collect();
    let mut remaining: Vec<u32> = (0..n as u32).map(|t| succs.of(t).len() as u32).collect();
    let mut queue: VecDeque<u32> = ix
        .committed_txns()
        .filter(|&t| indeg[t as usize] == 0)
        .collect();
    let writers = Writers::new(cx);
    // Clocks, in slots of an arena: entry s is 1 + the position of the
    // latest transaction of session s in the causal past (0: none). A
    // slot is freed once the last successor has used it.
    let mut arena: Vec<T> = Vec::new();
    let mut slot_of = vec![NONE; n];
    let mut free: Vec<u32> = Vec::new();
    let mut vc = vec![T::default(); k];
    let mut handled = 0u32;
    while let Some(t3) = queue.pop_front() {
        handled += 1;
        if handled.is_multiple_of(LIMIT_EVERY) && limit.hit() {
            return false;
        }
        vc.fill(T::default());
        for &p in preds.of(t3) {
            let s = cx.sess_of[p as usize] as usize;
            let tick = T::of(cx.pos_of[p as usize] + 1);
            if vc[s] >= tick {
                // `p` is in the past already, and so is its whole past
                // (the session predecessor, first, often brings it).
                continue;
            }
            let slot = slot_of[p as usize] as usize;
            for (a, &b) in vc.iter_mut().zip(&arena[slot * k..slot * k + k]) {
                *a = (*a).max(b);
            }
            vc[s] = tick;
        }
        for r in ix.reads(t3) {
            let (x, t2) = (r.key, r.writer);
            // t2's clock (t2 is a predecessor: its slot is alive), and its
            // own place.
            let (c2, s2, p2) = if t2 == INIT {
                (None, NONE, NONE)
            } else {
                let at = slot_of[t2 as usize] as usize * k;
                let at = &arena[at..at + k];
                (Some(at), cx.sess_of[t2 as usize], cx.pos_of[t2 as usize])
            };
            for &(s, from, to) in writers.of(x) {
                let c = vc[s as usize];
                if c == T::default() || c2.is_some_and(|c2| c <= c2[s as usize]) {
                    // No writer of session s in t3's past that is not in
                    // t2's already.
                    continue;
                }
                let c = c.get();
                let ps = &writers.wpos[from as usize..to as usize];
                let i = ps.partition_point(|&p| p < c);
                if i == 0 {
                    continue;
                }
                let p1 = ps[i - 1];
                if s == s2 && p1 == p2 {
                    continue; // t1 is t2
                }
                if c2.is_some_and(|c2| c2[s as usize].get() > p1) {
                    continue; // t1 is in t2's causal past already
                }
                let t1 = ix.sessions[s as usize][p1 as usize];
                out.co(t1, t2, WLabel::forced(Why::Causal, x, t3));
            }
        }
        for &p in preds.of(t3) {
            remaining[p as usize] -= 1;
            if remaining[p as usize] == 0 {
                free.push(slot_of[p as usize]);
                slot_of[p as usize] = NONE;
            }
        }
        if remaining[t3 as usize] > 0 {
            let slot = free.pop().unwrap_or_else(|| {
                arena.resize(arena.len() + k, T::default());
                (arena.len() / k - 1) as u32
            });
            let at = slot as usize * k;
            arena[at..at + k].copy_from_slice(&vc);
            slot_of[t3 as usize] = slot;
        }
        for &s in succs.of(t3) {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                queue.push_back(s);
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::graph::GraphBuilder;
    use crate::index::Index;
    use checkers_testkit::{random_history, GenConfig};

    /// The forced edges and initial-version violations with clock entries
    /// of type `T`.
    fn edges<T: Tick>(ix: &Index) -> (Vec<(u32, u32, u32, u32)>, usize) {
        let cx = Ctx::new(ix, None);
        let mut b: GraphBuilder<WLabel> = GraphBuilder::new(ix.len());
        let mut out = Forced::new(&mut b);
        clocks::<T>(&cx, &mut out, Limit::default());
        let count = out.init_count;
        let g = b.build();
        let mut out: Vec<_> = (0..g.node_count() as u32)
            .flat_map(|v| {
                let g = &g;
                g.out(v)
                    .map(move |(e, w)| (v, w, g.label(e).key, g.label(e).reader))
            })
            .collect();
        out.sort_unstable();
        (out, count)
    }

    /// The `i16` clocks (sessions shorter than 32767) and the `u32` ones
    /// force the same edges.
    #[test]
    fn narrow_and_wide_clocks_agree() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xcc);
        let cfg = GenConfig {
            max_txns: 12,
            sessions: 3,
            keys: 3,
            max_ops: 4,
            p_wild: 0.3,
            max_stale: 4,
            ..GenConfig::default()
        };
        let mut forced = 0;
        for _ in 0..3000 {
            let h = random_history(&mut rng, &cfg);
            let ix = Index::new(&h);
            let narrow = edges::<i16>(&ix);
            assert_eq!(narrow, edges::<u32>(&ix));
            forced += narrow.0.len();
        }
        assert!(forced > 1000, "too few forced edges to compare: {forced}");
    }
}
