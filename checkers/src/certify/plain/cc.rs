//! cc's axiom on a plain register history: every writer of `x` in `t3`'s
//! causal past (`so ∪ wr`, transitively) commits before the source of
//! `t3`'s read of `x`. Computed in commit order, which extends `so` and
//! `wr` (checked before), from each transaction's direct predecessors:
//!
//! * with few keys, per transaction and key the latest writer in its past
//!   ([`by_keys`]);
//! * else vector clocks over sessions, and per key and session the latest
//!   writer inside the past by binary search ([`by_clocks`]); writers in
//!   the source's own past are before it already, so only sessions the
//!   reader knows more of than the source are searched.
//!
//! A row or clock is kept only until its last successor has used it, in
//! reused slots: memory follows what is alive at once.

use super::super::certificate::{INIT, MAX_CLOCK_CELLS};
use super::super::commit_order::{ClockEntry, CC_FEW_KEYS};
use super::super::common::NONE;
use super::{after_source, Prepared};

/// True when every read of an ok transaction sees a version at least as
/// new as every write of its key in the reader's causal past.
pub(super) fn holds(prep: &Prepared, co: &[u32], pos: &[u32]) -> bool {
    let n = pos.len();
    let mut so_pred = vec![NONE; n];
    let mut last = vec![NONE; prep.ns];
    for t in 0..n {
        if pos[t] != NONE {
            let s = prep.sess[t] as usize;
            so_pred[t] = last[s];
            last[s] = t as u32;
        }
    }
    let preds = |t: u32, out: &mut Vec<u32>| {
        out.clear();
        if so_pred[t as usize] != NONE {
            out.push(so_pred[t as usize]);
        }
        out.extend(
            prep.evs(t as usize)
                .iter()
                .map(|e| e.1)
                .filter(|&s| s != INIT),
        );
    };
    // The co position of each transaction's last so/wr successor.
    let mut last_use = vec![NONE; n];
    let mut ps: Vec<u32> = Vec::new();
    for (i, &t) in co.iter().enumerate() {
        preds(t, &mut ps);
        for &p in &ps {
            last_use[p as usize] = i as u32;
        }
    }
    let cx = Past {
        prep,
        co,
        pos,
        last_use: &last_use,
    };
    #[cfg(test)]
    let forced = super::super::commit_order::CC_CLOCKS.with(|f| f.get());
    #[cfg(not(test))]
    let forced: Option<bool> = None;
    if forced.map_or(prep.nk <= prep.ns.max(CC_FEW_KEYS), |clocks| !clocks) {
        return by_keys(&cx, &preds);
    }
    let longest = {
        let mut len = vec![0usize; prep.ns];
        for t in co {
            len[prep.sess[*t as usize] as usize] += 1;
        }
        len.into_iter().max().unwrap_or(0)
    };
    if longest < i16::MAX as usize {
        by_clocks::<i16>(&cx, &preds)
    } else {
        by_clocks::<u32>(&cx, &preds)
    }
}

/// What both ways share.
struct Past<'a> {
    prep: &'a Prepared,
    co: &'a [u32],
    pos: &'a [u32],
    last_use: &'a [u32],
}

/// Rows of `width` cells in reused slots, one per transaction still to be
/// used by a successor.
struct Slots<T> {
    width: usize,
    arena: Vec<T>,
    slot: Vec<u32>,
    free: Vec<u32>,
}

impl<T: Copy + Default> Slots<T> {
    fn new(width: usize, n: usize) -> Self {
        Slots {
            width: width.max(1),
            arena: Vec::new(),
            slot: vec![NONE; n],
            free: Vec::new(),
        }
    }

    fn row(&self, t: u32) -> &[T] {
        let at = self.slot[t as usize] as usize * self.width;
        &self.arena[at..at + self.width]
    }

    /// Frees the rows of `ps` whose last use is co position `i`.
    fn release(&mut self, ps: &[u32], last_use: &[u32], i: usize) {
        for &p in ps {
            if last_use[p as usize] == i as u32 && self.slot[p as usize] != NONE {
                self.free.push(self.slot[p as usize]);
                self.slot[p as usize] = NONE;
            }
        }
    }

    /// Keeps `row` as `t`'s; false past [`MAX_CLOCK_CELLS`].
    fn keep(&mut self, t: u32, row: &[T]) -> bool {
        let w = self.width;
        let at = match self.free.pop() {
            Some(f) => f,
            None => {
                if self.arena.len() + w > MAX_CLOCK_CELLS {
                    return false;
                }
                self.arena.resize(self.arena.len() + w, T::default());
                (self.arena.len() / w - 1) as u32
            }
        };
        self.arena[at as usize * w..][..w].copy_from_slice(row);
        self.slot[t as usize] = at;
        true
    }
}

/// Per transaction and key: 1 + the co position of the latest writer of
/// the key in the transaction's causal past, itself included (0: none).
fn by_keys(cx: &Past, preds: &impl Fn(u32, &mut Vec<u32>)) -> bool {
    let (prep, co, pos) = (cx.prep, cx.co, cx.pos);
    let mut rows: Slots<u32> = Slots::new(prep.nk, pos.len());
    let mut row = vec![0u32; prep.nk.max(1)];
    let mut ps: Vec<u32> = Vec::new();
    for (i, &t) in co.iter().enumerate() {
        preds(t, &mut ps);
        row.fill(0);
        for &p in &ps {
            for (r, &v) in row.iter_mut().zip(rows.row(p)) {
                *r = (*r).max(v);
            }
        }
        for &(k, src) in prep.evs(t as usize) {
            let latest = row[k as usize];
            if latest > 0 && after_source(pos, co[latest as usize - 1], src) {
                return false;
            }
        }
        rows.release(&ps, cx.last_use, i);
        if cx.last_use[t as usize] != NONE {
            for &k in prep.wkeys(t) {
                row[k as usize] = i as u32 + 1;
            }
            if !rows.keep(t, &row) {
                return false;
            }
        }
    }
    true
}

/// Vector clocks over sessions: entry `s` counts session `s`'s
/// transactions in the causal past.
fn by_clocks<T: ClockEntry>(cx: &Past, preds: &impl Fn(u32, &mut Vec<u32>)) -> bool {
    let (prep, co, pos) = (cx.prep, cx.co, cx.pos);
    let (n, k) = (pos.len(), prep.ns);
    // Each committed transaction's index in its session, and each
    // session's transactions.
    let mut sidx = vec![NONE; n];
    let mut sess_txns: Vec<Vec<u32>> = vec![Vec::new(); k];
    for t in 0..n {
        if pos[t] != NONE {
            let list = &mut sess_txns[prep.sess[t] as usize];
            sidx[t] = list.len() as u32;
            list.push(t as u32);
        }
    }
    // Per key: its writers' in-session indices, in one run (session,
    // from, to) per session, ascending.
    let mut triples: Vec<(u32, u32, u32)> = Vec::new();
    for (t, &i) in sidx.iter().enumerate() {
        if i != NONE {
            for &key in prep.wkeys(t as u32) {
                triples.push((key, prep.sess[t], i));
            }
        }
    }
    triples.sort_unstable();
    let idx: Vec<u32> = triples.iter().map(|x| x.2).collect();
    let mut run_start = vec![0u32; prep.nk + 1];
    let mut runs: Vec<(u32, u32, u32)> = Vec::new();
    let mut i = 0;
    for (key, start) in run_start.iter_mut().enumerate().take(prep.nk) {
        *start = runs.len() as u32;
        while i < triples.len() && triples[i].0 == key as u32 {
            let (s, from) = (triples[i].1, i);
            while i < triples.len() && triples[i].0 == key as u32 && triples[i].1 == s {
                i += 1;
            }
            runs.push((s, from as u32, i as u32));
        }
    }
    run_start[prep.nk] = runs.len() as u32;
    drop(triples);
    let mut clocks: Slots<T> = Slots::new(k, n);
    let mut row = vec![T::default(); k];
    let mut ps: Vec<u32> = Vec::new();
    for (i, &t) in co.iter().enumerate() {
        preds(t, &mut ps);
        row.fill(T::default());
        for &p in &ps {
            let s = prep.sess[p as usize] as usize;
            let tick = T::of(sidx[p as usize] + 1);
            if row[s] >= tick {
                continue; // `p` and its whole past are in already
            }
            for (r, &v) in row.iter_mut().zip(clocks.row(p)) {
                *r = (*r).max(v);
            }
            row[s] = tick;
        }
        for &(key, src) in prep.evs(t as usize) {
            // The source's clock (a predecessor's: still kept).
            let sc = (src != INIT).then(|| clocks.row(src));
            let ks = &runs[run_start[key as usize] as usize..run_start[key as usize + 1] as usize];
            for &(s, from, to) in ks {
                let c = row[s as usize];
                if c == T::default() || sc.is_some_and(|sc| c <= sc[s as usize]) {
                    continue; // nothing of session s beyond the source's past
                }
                let c = c.get();
                let run = &idx[from as usize..to as usize];
                let j = run.partition_point(|&x| x < c);
                if j == 0 {
                    continue;
                }
                let w = run[j - 1];
                if sc.is_some_and(|sc| w < sc[s as usize].get()) {
                    continue; // in the source's past: before it already
                }
                if after_source(pos, sess_txns[s as usize][w as usize], src) {
                    return false;
                }
            }
        }
        clocks.release(&ps, cx.last_use, i);
        if cx.last_use[t as usize] != NONE && !clocks.keep(t, &row) {
            return false;
        }
    }
    true
}
