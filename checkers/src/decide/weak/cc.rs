//! cc: the forced edges of causal consistency, by vector clocks over
//! sessions in a topological order of `so ∪ wr` (see the [module docs](super)).

use std::collections::VecDeque;

use crate::index::{Index, INIT};

use super::{Csr, Ctx, Forced, Limit, WLabel, Why, LIMIT_EVERY, NONE};
use crate::graph::GraphBuilder;
use crate::session_writes::{
    by_key, end_walk, join, latest_in, narrow_fits, prefetch, sort_walk, start_walk, walk_fits,
    walk_parallel, zeroed_clocks, ClockEntry, SessionWrites, WalkRead, WalkWrite,
};

/// The distinct `so ∪ wr` predecessors of each committed transaction, as
/// CSR in both directions: (preds, succs). Each transaction's predecessors
/// come in the order it names them (its session predecessor first), its
/// successors in increasing order.
pub(super) fn causal_edges(cx: &Ctx) -> (Csr, Csr) {
    causal_edges_of(cx.ix, |t| cx.elements(t))
}

/// [`causal_edges`], with `elements(t)` the writers of list elements `t`
/// read besides the versions it read (none in a history without lists).
pub(super) fn causal_edges_of<'a>(
    ix: &Index,
    elements: impl Fn(u32) -> &'a [(u32, u32, u32)],
) -> (Csr, Csr) {
    let n = ix.len();
    let mut so_prev = vec![NONE; n];
    for s in &ix.sessions {
        for w in s.windows(2) {
            so_prev[w[1] as usize] = w[0];
        }
    }
    let mut start: Vec<u32> = Vec::with_capacity(n + 1);
    let mut adj: Vec<u32> = Vec::with_capacity(n + ix.read_count());
    let mut seen = vec![0u32; n];
    start.push(0);
    for t3 in 0..n as u32 {
        if ix.committed[t3 as usize] {
            let stamp = t3 + 1;
            let prev = so_prev[t3 as usize];
            if prev != NONE {
                seen[prev as usize] = stamp;
                adj.push(prev);
            }
            let elements = elements(t3).iter().map(|e| e.0);
            for w in ix.reads(t3).iter().map(|r| r.writer).chain(elements) {
                if w != INIT && seen[w as usize] != stamp {
                    seen[w as usize] = stamp;
                    adj.push(w);
                }
            }
        }
        start.push(adj.len() as u32);
    }
    let preds = Csr { start, adj };
    let succs = preds.reversed();
    (preds, succs)
}

/// Every committed write as (key, session, position in the session): a
/// key's writers by session, for [`SessionWrites`]. Which of them are in a
/// causal past is read off the clock, so this is built up front.
fn write_triples(cx: &Ctx) -> Vec<(u32, u32, u32)> {
    let ix = cx.ix;
    let mut triples = Vec::new();
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            triples.push((w.key, cx.sess_of[t as usize], cx.pos_of[t as usize]));
        }
    }
    triples
}

/// cc: vector clocks in a topological order of `so ∪ wr`. When `so ∪ wr`
/// is cyclic no clock exists; the cycle is the anomaly and no co edge is
/// added. False when the limit is hit first.
pub(super) fn cc_edges(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
    let longest = cx.ix.sessions.iter().map(Vec::len).max().unwrap_or(0);
    #[cfg(test)]
    let walk = KEY_WALK.with(|w| w.get());
    #[cfg(not(test))]
    let walk = true;
    let stored = walk && walk_fits(cx.ix.len(), cx.ix.sessions.len());
    match (narrow_fits(longest), stored) {
        (true, true) => key_walk::<i16>(cx, out, limit),
        (false, true) => key_walk::<u32>(cx, out, limit),
        (true, false) => clocks::<i16>(cx, out, limit),
        (false, false) => clocks::<u32>(cx, out, limit),
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: false forces [`clocks`] where [`key_walk`] would do.
    pub(super) static KEY_WALK: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Every clock, in a topological order `τ` of `so ∪ wr`, then one walk per
/// key over its writers in `τ` order, keeping per session `s` the position
/// `next[s]` of its first writer of `x` not yet passed and `last[s]`, 1 +
/// that of the last one passed (0: none). For a read of `x` by `t3` from
/// `t2`, once the walk has passed `t2`: a session's latest writer of `x`
/// in `t3`'s past is outside `t2`'s past (a forced edge) if it is at or
/// after `next[s]` (after `t2` in `τ`, so not in its past), which needs
/// `next[s] < hi[s]`; or else a passed one, which needs `last[s] > lo[s]`
/// (`hi`, `lo`: the clocks of `t3`, `t2`). One SIMD pass over the
/// sessions flags those, and only they are searched. A key's reads come
/// by source, so of the edges into one source only the latest writer of
/// each session is kept (with the read that forces it): session order
/// chains the others to it. So a subset of [`clocks`]' edges, with the
/// same transitive closure (and as many initial-version violations).
fn key_walk<T: ClockEntry>(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
    let ix = cx.ix;
    let n = ix.len();
    let k = ix.sessions.len();
    let (preds, succs) = causal_edges(cx);
    let mut indeg: Vec<u32> = (0..n as u32).map(|t| preds.of(t).len() as u32).collect();
    let mut queue: VecDeque<u32> = ix
        .committed_txns()
        .filter(|&t| indeg[t as usize] == 0)
        .collect();
    // τ positions (NONE: on or after a cycle of so ∪ wr) and clocks.
    let mut tpos = vec![NONE; n];
    let mut order: Vec<u32> = Vec::new();
    let mut clocks: Vec<T> = zeroed_clocks(ix.committed_txns().count() * k);
    while let Some(t3) = queue.pop_front() {
        let i = order.len();
        if (i as u32 + 1).is_multiple_of(LIMIT_EVERY) && limit.hit() {
            return false;
        }
        tpos[t3 as usize] = i as u32;
        order.push(t3);
        let (done, vc) = clocks.split_at_mut(i * k);
        let vc = &mut vc[..k];
        for &p in preds.of(t3) {
            let at = tpos[p as usize] as usize * k;
            let (s, tick) = (cx.sess_of[p as usize], cx.pos_of[p as usize] + 1);
            join(vc, s as usize, T::of(tick), &done[at..at + k]);
        }
        for &s in succs.of(t3) {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                queue.push_back(s);
            }
        }
    }
    let writers = SessionWrites::searched(ix.keys.len(), k, write_triples(cx));
    // Writers and reads by key in τ order (a read by its source's).
    let mut writes: Vec<(u32, u32)> = Vec::new(); // (key, τ position)
    let mut reads: Vec<(u32, u32, u32)> = Vec::new(); // (key, 1 + source's τ or 0, reader's τ)
    for (i, &t) in order.iter().enumerate() {
        writes.extend(ix.writes(t).iter().map(|w| (w.key, i as u32)));
        for r in ix.reads(t) {
            let from = if r.writer == INIT {
                0
            } else {
                tpos[r.writer as usize] + 1
            };
            reads.push((r.key, from, i as u32));
        }
    }
    sort_walk(ix.keys.len(), order.len(), &mut writes, &mut reads);
    let walk = Walk {
        cx,
        clocks: &clocks,
        order: &order,
        writers: &writers,
        limit,
    };
    // Parts of the keys walked on every core; each part's edges are added
    // after the one before's: the same edges, in the same order.
    let parts = walk_parallel(&writes, &reads, |w, r| {
        let mut b = GraphBuilder::new(n);
        let mut part = Forced::new(&mut b);
        let done = walk.keys(w, r, &mut part);
        let (inits, init_count) = (part.inits, part.init_count);
        (done, b, inits, init_count)
    });
    let mut done = true;
    for (ok, b, inits, init_count) in parts {
        done &= ok;
        out.append(b, inits, init_count);
    }
    done
}

/// What every part of [`key_walk`] reads.
struct Walk<'a, T> {
    cx: &'a Ctx<'a>,
    /// Every clock, by τ position.
    clocks: &'a [T],
    /// τ: transactions by position.
    order: &'a [u32],
    writers: &'a SessionWrites,
    limit: Limit<'a>,
}

impl<T: ClockEntry> Walk<'_, T> {
    /// Walks the keys of `writes` and `reads` (a part of [`walk_parallel`]),
    /// adding their forced edges to `out`; false when the limit is hit.
    fn keys(&self, writes: &[WalkWrite], reads: &[WalkRead], out: &mut Forced) -> bool {
        let (cx, clocks, order, writers) = (self.cx, self.clocks, self.order, self.writers);
        let ix = cx.ix;
        let k = ix.sessions.len();
        let zeros = vec![T::default(); k];
        let mut next = vec![T::never(); k];
        let mut last = vec![T::default(); k];
        let mut after: Vec<T> = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        let mut flagged: Vec<u32> = Vec::new();
        // Per session, the latest writer forced before the current source
        // and the τ position of the reader that forces it; the sessions set.
        let mut best: Vec<(u32, u32)> = vec![(NONE, NONE); k];
        let mut kept: Vec<u32> = Vec::new();
        // Per session, where its writes of the key walked are (empty for
        // the sessions that did not write it, which are never flagged).
        let mut run_of: Vec<(u32, u32)> = vec![(0, 0); k];
        let mut seen = 0u32;
        for (mine, reads_of_x) in by_key(writes, reads) {
            let x = reads_of_x[0].0;
            let place = |i: u32| {
                let t = order[i as usize] as usize;
                (cx.sess_of[t] as usize, cx.pos_of[t])
            };
            start_walk(mine, &place, &mut next, &mut after, &mut touched);
            for &(s, from, to) in writers.runs_of(x) {
                run_of[s as usize] = (from, to);
            }
            let mut passed = 0;
            for (j, &(_, src, reader)) in reads_of_x.iter().enumerate() {
                seen += 1;
                if seen.is_multiple_of(LIMIT_EVERY) && self.limit.hit() {
                    return false;
                }
                if let Some(&(_, src, reader)) = reads_of_x.get(j + AHEAD) {
                    // The clocks a later read compares are far apart in
                    // memory: ask for them now.
                    prefetch(&clocks[reader as usize * k..][..k]);
                    if src > 0 {
                        prefetch(&clocks[(src as usize - 1) * k..][..k]);
                    }
                }
                while passed < mine.len() && mine[passed].1 < src {
                    let (s, p) = place(mine[passed].1);
                    next[s] = after[passed];
                    last[s] = T::of(p + 1);
                    passed += 1;
                }
                let hi = &clocks[reader as usize * k..][..k];
                let t2 = if src == 0 {
                    INIT
                } else {
                    order[src as usize - 1]
                };
                let lo = if src == 0 {
                    &zeros[..]
                } else {
                    &clocks[(src as usize - 1) * k..][..k]
                };
                flagged.clear();
                flag(hi, lo, &next, &last, &mut flagged);
                // t3 = order[reader], looked up only for an edge kept.
                let (s2, p2) = match t2 {
                    INIT => (NONE, NONE),
                    _ => (cx.sess_of[t2 as usize], cx.pos_of[t2 as usize]),
                };
                for &s in &flagged {
                    // A flagged session wrote x: its run was set above.
                    let (from, to) = run_of[s as usize];
                    let Some(p1) = latest_in(writers.run(from, to), hi[s as usize].get()) else {
                        continue;
                    };
                    if p1 < lo[s as usize].get() || (s == s2 && p1 == p2) {
                        continue; // in t2's past, or t2 itself
                    }
                    if t2 == INIT {
                        // Each such read is a violation of its own.
                        let t1 = ix.sessions[s as usize][p1 as usize];
                        let t3 = order[reader as usize];
                        out.co(t1, t2, WLabel::forced(Why::Causal, x, t3));
                        continue;
                    }
                    let b = &mut best[s as usize];
                    if b.0 == NONE {
                        kept.push(s);
                        *b = (p1, reader);
                    } else if p1 > b.0 {
                        *b = (p1, reader);
                    }
                }
                if reads_of_x.get(j + 1).is_none_or(|r| r.1 != src) {
                    // The last read from t2: per session, the latest writer
                    // any of its readers forces before t2.
                    for &s in &kept {
                        let (p1, reader) = best[s as usize];
                        let (t1, t3) =
                            (ix.sessions[s as usize][p1 as usize], order[reader as usize]);
                        out.co(t1, t2, WLabel::forced(Why::Causal, x, t3));
                        best[s as usize].0 = NONE;
                    }
                    kept.clear();
                }
            }
            end_walk(&mut next, &mut last, &mut touched);
            for &(s, _, _) in writers.runs_of(x) {
                run_of[s as usize] = (0, 0);
            }
        }
        true
    }
}

/// How many reads ahead [`key_walk`] prefetches clocks.
const AHEAD: usize = 4;

/// The sessions where [`key_walk`] may find a forced edge: `next[s] <
/// hi[s]`, or `last[s] > lo[s]` with `hi[s] > lo[s]`: a branch-free pass
/// over each block of lanes makes a bit mask, whose set bits are pushed.
fn flag<T: ClockEntry>(hi: &[T], lo: &[T], next: &[T], last: &[T], out: &mut Vec<u32>) {
    const LANES: usize = 16;
    let k = hi.len();
    let mut base = 0;
    while base < k {
        let m = LANES.min(k - base);
        let (h, l) = (&hi[base..base + m], &lo[base..base + m]);
        let (nx, ls) = (&next[base..base + m], &last[base..base + m]);
        // One bit a lane, set branch-free; then only the set bits.
        let mut mask = 0u32;
        for q in 0..m {
            let hit = (nx[q] < h[q]) | ((ls[q] > l[q]) & (h[q] > l[q]));
            mask |= u32::from(hit) << q;
        }
        while mask != 0 {
            out.push(base as u32 + mask.trailing_zeros());
            mask &= mask - 1;
        }
        base += m;
    }
}

/// The forced edges by one causal clock a transaction, in topological
/// order, with each clock freed once its last successor has joined it:
/// the search the key walks replace where their clock table would not fit
/// ([`walk_fits`]); `false` when `limit` was hit.
fn clocks<T: ClockEntry>(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
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
    let lens: Vec<usize> = ix.sessions.iter().map(Vec::len).collect();
    let narrow = T::narrow(&[]).is_some();
    let writers = SessionWrites::new(ix.keys.len(), &lens, write_triples(cx), narrow);
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
            let at = slot_of[p as usize] as usize * k;
            let (s, tick) = (cx.sess_of[p as usize], cx.pos_of[p as usize] + 1);
            join(&mut vc, s as usize, T::of(tick), &arena[at..at + k]);
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
            writers.latest_between(x, &vc, c2, |s, p1| {
                if !(s == s2 && p1 == p2) {
                    // t1 is not t2, nor in its causal past: forced before it.
                    let t1 = ix.sessions[s as usize][p1 as usize];
                    out.co(t1, t2, WLabel::forced(Why::Causal, x, t3));
                }
                true
            });
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
    fn edges<T: ClockEntry>(ix: &Index, walk: bool) -> (Vec<(u32, u32, u32, u32)>, usize) {
        let cx = Ctx::new(ix, None);
        let mut b: GraphBuilder<WLabel> = GraphBuilder::new(ix.len());
        let mut out = Forced::new(&mut b);
        if walk {
            key_walk::<T>(&cx, &mut out, Limit::default());
        } else {
            clocks::<T>(&cx, &mut out, Limit::default());
        }
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
    /// force the same edges; walked key by key, a subset of them: each
    /// edge left out runs from an earlier writer of the same session (and
    /// key) as one kept into the same transaction, so session order
    /// implies it.
    #[test]
    fn narrow_and_wide_clocks_searched_or_walked_agree() {
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
        let (mut forced, mut left_out) = (0, 0);
        for _ in 0..3000 {
            let h = random_history(&mut rng, &cfg);
            let ix = Index::new(&h);
            let cx = Ctx::new(&ix, None);
            let narrow = edges::<i16>(&ix, false);
            assert_eq!(narrow, edges::<u32>(&ix, false));
            let walked = edges::<i16>(&ix, true);
            assert_eq!(walked, edges::<u32>(&ix, true));
            assert_eq!(walked.1, narrow.1, "initial-version violations");
            for e in &walked.0 {
                assert!(narrow.0.contains(e), "{e:?} is not forced");
            }
            for &(t1, t2, x, _) in &narrow.0 {
                let (s, p) = (cx.sess_of[t1 as usize], cx.pos_of[t1 as usize]);
                let implied = walked.0.iter().any(|&(u, v, y, _)| {
                    v == t2 && y == x && cx.sess_of[u as usize] == s && cx.pos_of[u as usize] >= p
                });
                assert!(
                    implied,
                    "{t1} -> {t2} (key {x}) is neither kept nor implied"
                );
            }
            forced += narrow.0.len();
            left_out += narrow.0.len() - walked.0.len();
        }
        assert!(forced > 1000, "too few forced edges to compare: {forced}");
        assert!(
            left_out > 50,
            "too few edges left out to compare: {left_out}"
        );
    }
}
