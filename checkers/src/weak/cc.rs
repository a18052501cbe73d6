//! cc: the forced edges of causal consistency, by vector clocks over
//! sessions in a topological order of `so ∪ wr` (see the [module docs](super)).

use std::collections::VecDeque;

use crate::graph::GraphBuilder;
use crate::index::INIT;

use super::{co, Csr, Ctx, InitViolation, WLabel, Why, NONE};

/// The distinct `so ∪ wr` predecessors of each committed transaction, as
/// CSR in both directions: (preds, succs).
fn causal_edges(cx: &Ctx) -> (Csr, Csr) {
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

/// cc: vector clocks in a topological order of `so ∪ wr`. When `so ∪ wr`
/// is cyclic no clock exists; the cycle is the anomaly and no co edge is
/// added.
pub(super) fn cc_edges(
    cx: &Ctx,
    b: &mut GraphBuilder<WLabel>,
    inits: &mut Vec<InitViolation>,
    init_count: &mut usize,
) {
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
    // Each key's committed writers by session, positions ascending: the
    // segments (session, from, to) of `wpos`. Which of them are in a causal
    // past is read off the clock, so this can be built up front.
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
    drop(triples);
    // Clocks, in slots of an arena: entry s is 1 + the position of the
    // latest transaction of session s in the causal past (0: none). A
    // slot is freed once the last successor has used it.
    let mut arena: Vec<u32> = Vec::new();
    let mut slot_of = vec![NONE; n];
    let mut free: Vec<u32> = Vec::new();
    let mut vc = vec![0u32; k];
    while let Some(t3) = queue.pop_front() {
        vc.fill(0);
        for &p in preds.of(t3) {
            let slot = slot_of[p as usize] as usize;
            for (a, &b) in vc.iter_mut().zip(&arena[slot * k..slot * k + k]) {
                *a = (*a).max(b);
            }
            let s = cx.sess_of[p as usize] as usize;
            vc[s] = vc[s].max(cx.pos_of[p as usize] + 1);
        }
        for r in ix.reads(t3) {
            let (x, t2) = (r.key, r.writer);
            let segments =
                &segs[seg_start[x as usize] as usize..seg_start[x as usize + 1] as usize];
            for &(s, from, to) in segments {
                let c = vc[s as usize];
                if c == 0 {
                    continue;
                }
                let ps = &wpos[from as usize..to as usize];
                let i = ps.partition_point(|&p| p < c);
                if i == 0 {
                    continue;
                }
                let p1 = ps[i - 1];
                let t1 = ix.sessions[s as usize][p1 as usize];
                if t1 == t2 {
                    continue;
                }
                if t2 != INIT {
                    let slot = slot_of[t2 as usize] as usize;
                    if arena[slot * k + s as usize] > p1 {
                        continue; // t1 is in t2's causal past already
                    }
                }
                let label = WLabel {
                    why: Why::Causal,
                    key: x,
                    reader: t3,
                    op: NONE,
                };
                co(b, inits, init_count, t1, t2, label);
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
                arena.resize(arena.len() + k, 0);
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
}
