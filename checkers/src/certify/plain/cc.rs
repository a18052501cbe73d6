//! cc's axiom on a plain register history: every writer of `x` in `t3`'s
//! causal past (`so ∪ wr`, transitively) commits before the source of
//! `t3`'s read of `x`. Computed in commit order, which extends `so` and
//! `wr` (checked before), from each transaction's direct predecessors:
//!
//! * with few keys, per transaction and key the latest writer in its past
//!   ([`by_keys`]);
//! * else vector clocks over sessions. When every clock fits in memory
//!   at once ([`by_key_walk`]), key by key: walking a key's writers in
//!   commit order, keep per session the first writer not yet passed; a
//!   read of the version just passed is fine exactly when its reader's
//!   clock is below that vector in every session, one SIMD compare.
//!   Otherwise ([`by_clocks`]) per read and session the latest writer
//!   inside the reader's past (see [`SessionWrites`]).
//!
//! Except in [`by_key_walk`], a row or clock is kept only until its last
//! successor has used it, in reused slots: memory follows what is alive at
//! once.

use super::super::certificate::{INIT, MAX_CLOCK_CELLS};
use super::super::commit_order::CC_FEW_KEYS;
use super::super::common::NONE;
use super::{after_source, Prepared};
use crate::session_writes::{
    by_key, end_walk, join, narrow_fits, prefetch, sort_walk, start_walk, walk_fits, walk_parallel,
    zeroed_clocks, ClockEntry, SessionWrites, WalkRead, WalkWrite,
};

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
    #[cfg(test)]
    let walk = KEY_WALK.with(|w| w.get());
    #[cfg(not(test))]
    let walk = true;
    let stored = walk && walk_fits(co.len(), prep.ns);
    match (narrow_fits(longest), stored) {
        (true, true) => by_key_walk::<i16>(&cx, &preds),
        (false, true) => by_key_walk::<u32>(&cx, &preds),
        (true, false) => by_clocks::<i16>(&cx, &preds),
        (false, false) => by_clocks::<u32>(&cx, &preds),
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: false forces [`by_clocks`] where [`by_key_walk`] would do.
    pub(super) static KEY_WALK: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
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
    // Per key: its writers' in-session indices.
    let mut triples: Vec<(u32, u32, u32)> = Vec::new();
    for (t, &i) in sidx.iter().enumerate() {
        if i != NONE {
            for &key in prep.wkeys(t as u32) {
                triples.push((key, prep.sess[t], i));
            }
        }
    }
    let lens: Vec<usize> = sess_txns.iter().map(Vec::len).collect();
    let writers = SessionWrites::new(prep.nk, &lens, triples, T::narrow(&[]).is_some());
    let mut clocks: Slots<T> = Slots::new(k, n);
    let mut row = vec![T::default(); k];
    let mut ps: Vec<u32> = Vec::new();
    for (i, &t) in co.iter().enumerate() {
        preds(t, &mut ps);
        row.fill(T::default());
        for &p in &ps {
            let (s, tick) = (prep.sess[p as usize], sidx[p as usize] + 1);
            join(&mut row, s as usize, T::of(tick), clocks.row(p));
        }
        for &(key, src) in prep.evs(t as usize) {
            // The source's clock (a predecessor's: still kept).
            let sc = (src != INIT).then(|| clocks.row(src));
            // Writers in the source's past are before it already.
            let ok = writers.latest_between(key, &row, sc, |s, w| {
                !after_source(pos, sess_txns[s as usize][w as usize], src)
            });
            if !ok {
                return false;
            }
        }
        clocks.release(&ps, cx.last_use, i);
        if cx.last_use[t as usize] != NONE && !clocks.keep(t, &row) {
            return false;
        }
    }
    true
}

/// How many reads ahead [`by_key_walk`]'s walk prefetches clocks.
const AHEAD: usize = 2;

/// Vector clocks, all kept (`co.len() × sessions` entries), then one walk
/// per key. For key `x`, `next[s]` is the in-session index of session
/// `s`'s first writer of `x` that the walk has not passed (or never). A
/// read of `x` from `src` holds exactly when, once the walk has passed
/// `src` (at once, for the initial version), no session's writer of `x`
/// at or after `next` is in the reader's past: `clock[s] <= next[s]` for
/// every `s`, as a session's writers of `x` commit in session order.
fn by_key_walk<T: ClockEntry>(cx: &Past, preds: &impl Fn(u32, &mut Vec<u32>)) -> bool {
    let (prep, co, pos) = (cx.prep, cx.co, cx.pos);
    let k = prep.ns;
    // Each committed transaction's index in its session.
    let mut sidx = vec![NONE; pos.len()];
    let mut count = vec![0u32; k];
    for &t in co {
        let s = prep.sess[t as usize] as usize;
        sidx[t as usize] = count[s];
        count[s] += 1;
    }
    // Every clock, by co position.
    let mut clocks: Vec<T> = zeroed_clocks(co.len() * k);
    let mut ps: Vec<u32> = Vec::new();
    for (i, &t) in co.iter().enumerate() {
        preds(t, &mut ps);
        let (done, row) = clocks.split_at_mut(i * k);
        let row = &mut row[..k];
        for &p in &ps {
            let at = pos[p as usize] as usize * k;
            let (s, tick) = (prep.sess[p as usize], sidx[p as usize] + 1);
            join(row, s as usize, T::of(tick), &done[at..at + k]);
        }
    }
    // Writers and reads by key, in commit order (a read by its source's).
    let mut writes: Vec<(u32, u32)> = Vec::new(); // (key, co position)
    let mut reads: Vec<(u32, u32, u32)> = Vec::new(); // (key, 1 + source's co position or 0, reader's)
    for (i, &t) in co.iter().enumerate() {
        writes.extend(prep.wkeys(t).iter().map(|&x| (x, i as u32)));
        for &(x, src) in prep.evs(t as usize) {
            let from = if src == INIT {
                0
            } else {
                pos[src as usize] + 1
            };
            reads.push((x, from, i as u32));
        }
    }
    sort_walk(prep.nk, co.len(), &mut writes, &mut reads);
    // Each part of the keys on a core of its own.
    let clocks = &clocks;
    let place = |i: u32| {
        let t = co[i as usize] as usize;
        (prep.sess[t] as usize, sidx[t])
    };
    let walk = |writes: &[WalkWrite], reads: &[WalkRead]| {
        let mut next = vec![T::never(); k];
        let mut after: Vec<T> = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        for (mine, reads) in by_key(writes, reads) {
            // Before any writer: each session's first. After writer j: its
            // session's next one (`after[j]`).
            start_walk(mine, &place, &mut next, &mut after, &mut touched);
            let mut passed = 0;
            for (j, &(_, from, reader)) in reads.iter().enumerate() {
                if let Some(&(_, _, later)) = reads.get(j + AHEAD) {
                    // A later read's clock is far away in memory: ask now.
                    prefetch(&clocks[later as usize * k..][..k]);
                }
                // Pass the writers up to and including the source.
                while passed < mine.len() && mine[passed].1 < from {
                    next[place(mine[passed].1).0] = after[passed];
                    passed += 1;
                }
                let clock = &clocks[reader as usize * k..][..k];
                let late = clock
                    .iter()
                    .zip(&next)
                    .fold(false, |acc, (c, n)| acc | (c > n));
                if late {
                    return false;
                }
            }
            end_walk(&mut next, &mut [], &mut touched);
        }
        true
    };
    walk_parallel(&writes, &reads, walk)
        .into_iter()
        .all(|ok| ok)
}
