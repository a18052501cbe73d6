//! The enumeration the two exhaustive deciders ([`registers`](super::registers)
//! and [`lists`](super::lists)) share:
//! which levels they decide, every way the `info` transactions can go, the
//! order constraints of a level, the searches for a serial order and for an
//! SI schedule over a store of either kind, and, for the weak levels, the
//! session, read-from and happens-before relations, the commit orders that
//! extend them and the levels' premises. What a transaction reads and
//! installs, and what a read must show, stay in each decider.
//!
//! Like the deciders, this shares no code with the checkers.

use std::collections::HashSet;

use history::{History, Key, Level, Status, Value};

/// rc, ra, cc, pc: decided by a commit order.
pub(crate) fn is_weak(level: Level) -> bool {
    matches!(level, Level::Rc | Level::Ra | Level::Cc | Level::Pc)
}

/// The levels decided by a serial order (the rest of the strong ones by an
/// SI schedule).
pub(crate) fn is_serial(level: Level) -> bool {
    matches!(level, Level::Ser | Level::StrongSessionSer | Level::Sser)
}

/// The SER and SI families.
pub(crate) fn is_strong(level: Level) -> bool {
    is_serial(level) || matches!(level, Level::Si | Level::StrongSessionSi | Level::StrongSi)
}

/// True when some value is written twice to one key (by any transaction,
/// also a failed one, also twice by one), over the ops `written` maps to a
/// write.
pub(crate) fn repeats_a_value<'a>(
    h: &'a History,
    written: impl Fn(&'a history::Op) -> Option<(&'a Key, Value)>,
) -> bool {
    let mut seen: HashSet<(&Key, Value)> = HashSet::new();
    h.txns
        .iter()
        .flat_map(|t| &t.ops)
        .filter_map(written)
        .any(|kv| !seen.insert(kv))
}

/// True when `f` holds for some choice of the transactions that commit:
/// `ok` ones do, `fail` ones do not, and each `info` one may go either way
/// (`f` gets one flag per transaction).
pub(crate) fn some_inclusion(h: &History, mut f: impl FnMut(&[bool]) -> bool) -> bool {
    let info: Vec<usize> = (0..h.txns.len())
        .filter(|&i| h.txns[i].status == Status::Info)
        .collect();
    assert!(
        info.len() <= 12,
        "too many info transactions for the oracle"
    );
    (0u32..(1 << info.len())).any(|mask| {
        let included: Vec<bool> = (0..h.txns.len())
            .map(|i| match h.txns[i].status {
                Status::Ok => true,
                Status::Fail => false,
                Status::Info => {
                    let pos = info.iter().position(|&j| j == i).expect("info txn");
                    mask & (1 << pos) != 0
                }
            })
            .collect();
        f(&included)
    })
}

/// Pairs `(a, b)` of included transactions where `a` must finish before `b`
/// begins (session or real-time order), and the timestamp orders.
pub(crate) struct Constraints {
    before: Vec<(usize, usize)>,
    /// `(a, b)`: `a`'s version of a common key comes before `b`'s (commit
    /// timestamps), so `a` must commit before `b` does.
    commits_before: Vec<(usize, usize)>,
    /// SI with timestamps: every stated event, as (timestamp, is commit,
    /// txn); an event may happen only once every event with a smaller
    /// (timestamp, is commit) has happened.
    events: Vec<(u64, bool, usize)>,
}

impl Constraints {
    /// The constraints over the included transactions; with `dbts`, also
    /// what the database's timestamps state.
    pub(crate) fn new(h: &History, inc: &[bool], level: Level, dbts: bool) -> Constraints {
        let inc: Vec<usize> = (0..h.txns.len()).filter(|&t| inc[t]).collect();
        let mut commits_before = Vec::new();
        let mut events = Vec::new();
        if dbts {
            for &a in &inc {
                let Some(da) = h.txns[a].dbts else { continue };
                if !is_serial(level) {
                    events.push((da.start, false, a));
                    if let Some(c) = da.commit {
                        events.push((c, true, a));
                    }
                }
                for &b in &inc {
                    let Some(db) = h.txns[b].dbts else { continue };
                    let common = h.txns[a]
                        .written_keys()
                        .iter()
                        .any(|k| h.txns[b].written_keys().contains(k));
                    if a != b
                        && common
                        && matches!((da.commit, db.commit), (Some(x), Some(y)) if x < y)
                    {
                        commits_before.push((a, b));
                    }
                }
            }
        }
        let mut before = Vec::new();
        for &a in &inc {
            for &b in &inc {
                if a == b {
                    continue;
                }
                let (ta, tb) = (&h.txns[a], &h.txns[b]);
                let so = level.uses_sessions() && ta.session == tb.session && a < b;
                let rt = level.uses_real_time()
                    && ta.status == Status::Ok
                    && matches!((ta.end, tb.start), (Some(e), Some(s)) if e < s);
                if so || rt {
                    before.push((a, b));
                }
            }
        }
        Constraints {
            before,
            commits_before,
            events,
        }
    }

    /// All of `b`'s predecessors are in `done`.
    fn ready(&self, b: usize, done: &[bool]) -> bool {
        self.before.iter().all(|&(a, bb)| bb != b || done[a])
    }

    /// `b` may commit: every writer whose version must precede `b`'s has
    /// committed.
    fn may_commit(&self, b: usize, committed: &[bool]) -> bool {
        self.commits_before
            .iter()
            .all(|&(a, bb)| bb != b || committed[a])
    }

    /// The event (`commit`? of `t`) may happen now: every stated event with a
    /// smaller (timestamp, kind) has happened.
    fn event_ready(&self, t: usize, commit: bool, begun: &[bool], committed: &[bool]) -> bool {
        let Some(&(ts, c, _)) = self.events.iter().find(|&&(_, c, u)| u == t && c == commit) else {
            return true;
        };
        self.events
            .iter()
            .all(|&(ts2, c2, u)| (ts2, c2) >= (ts, c) || if c2 { committed[u] } else { begun[u] })
    }
}

/// What a store is and how a transaction runs on it: the one part of the
/// serial and SI searches that depends on the data model.
pub(crate) trait Model {
    /// The committed state.
    type Store: Default;
    /// What a transaction installs.
    type Writes: Clone;
    /// Runs `t` on `snapshot`: `None` when a read (of an `ok` transaction)
    /// does not return what it should, else the writes to install.
    fn run(h: &History, t: usize, snapshot: &Self::Store) -> Option<Self::Writes>;
    /// `store` with `ws` installed.
    fn install(store: &Self::Store, ws: &Self::Writes) -> Self::Store;
}

/// Is there a serial order of the included transactions, within the
/// constraints, in which every transaction runs on the state the ones
/// before it installed?
pub(crate) fn serial_exists<M: Model>(h: &History, inc: &[bool], cons: &Constraints) -> bool {
    fn go<M: Model>(
        h: &History,
        inc: &[bool],
        cons: &Constraints,
        done: &mut Vec<bool>,
        store: &M::Store,
        left: usize,
    ) -> bool {
        if left == 0 {
            return true;
        }
        for t in 0..h.txns.len() {
            if !inc[t] || done[t] || !cons.ready(t, done) || !cons.may_commit(t, done) {
                continue;
            }
            let Some(ws) = M::run(h, t, store) else {
                continue;
            };
            let next = M::install(store, &ws);
            done[t] = true;
            if go::<M>(h, inc, cons, done, &next, left - 1) {
                return true;
            }
            done[t] = false;
        }
        false
    }
    let left = inc.iter().filter(|&&i| i).count();
    let mut done = vec![false; h.txns.len()];
    go::<M>(h, inc, cons, &mut done, &M::Store::default(), left)
}

/// Is there a sequence of begin and commit events of the included
/// transactions, within the constraints, in which every transaction runs on
/// the state committed at its begin and no two that write a common key
/// overlap (first committer wins)?
pub(crate) fn si_schedule_exists<M: Model>(h: &History, inc: &[bool], cons: &Constraints) -> bool {
    struct S<'a, M: Model> {
        h: &'a History,
        inc: &'a [bool],
        cons: &'a Constraints,
        wkeys: Vec<Vec<Key>>,
        begun: Vec<bool>,
        committed: Vec<bool>,
        /// Commits that happened while each transaction was running.
        during: Vec<Vec<usize>>,
        pending: Vec<Option<M::Writes>>,
    }
    fn go<M: Model>(s: &mut S<M>, store: &M::Store, left: usize) -> bool {
        if left == 0 {
            return true;
        }
        for t in 0..s.h.txns.len() {
            if !s.inc[t] {
                continue;
            }
            if !s.begun[t] {
                if !s.cons.ready(t, &s.committed)
                    || !s.cons.event_ready(t, false, &s.begun, &s.committed)
                {
                    continue;
                }
                let Some(ws) = M::run(s.h, t, store) else {
                    continue;
                };
                s.begun[t] = true;
                s.pending[t] = Some(ws);
                s.during[t].clear();
                if go(s, store, left) {
                    return true;
                }
                s.begun[t] = false;
                s.pending[t] = None;
            } else if !s.committed[t] {
                if !s.cons.may_commit(t, &s.committed)
                    || !s.cons.event_ready(t, true, &s.begun, &s.committed)
                {
                    continue;
                }
                // First committer wins: nobody who committed while t ran may
                // share a written key with t.
                let conflict = s.during[t]
                    .iter()
                    .any(|&u| s.wkeys[u].iter().any(|k| s.wkeys[t].contains(k)));
                if conflict {
                    continue;
                }
                let ws = s.pending[t].clone().expect("begun");
                let next = M::install(store, &ws);
                s.committed[t] = true;
                let running: Vec<usize> = (0..s.h.txns.len())
                    .filter(|&u| s.inc[u] && s.begun[u] && !s.committed[u])
                    .collect();
                for &u in &running {
                    s.during[u].push(t);
                }
                if go(s, &next, left - 1) {
                    return true;
                }
                for &u in &running {
                    s.during[u].pop();
                }
                s.committed[t] = false;
            }
        }
        false
    }
    let n = h.txns.len();
    let mut s = S::<M> {
        h,
        inc,
        cons,
        wkeys: (0..n).map(|t| h.txns[t].written_keys()).collect(),
        begun: vec![false; n],
        committed: vec![false; n],
        during: vec![Vec::new(); n],
        pending: (0..n).map(|_| None).collect(),
    };
    let left = inc.iter().filter(|&&i| i).count();
    go(&mut s, &M::Store::default(), left)
}

/// The weak levels' relations over the included transactions, as matrices
/// over history indices: session order, read-from, and happens-before
/// (their union, closed).
pub(crate) struct Relations {
    /// The included transactions, in history order.
    pub(crate) txns: Vec<usize>,
    pub(crate) so: Vec<Vec<bool>>,
    pub(crate) wr: Vec<Vec<bool>>,
    pub(crate) hb: Vec<Vec<bool>>,
}

impl Relations {
    /// `reads_from(t)`: the transactions included `t` reads from.
    pub(crate) fn new<I: IntoIterator<Item = usize>>(
        h: &History,
        inc: &[bool],
        reads_from: impl Fn(usize) -> I,
    ) -> Relations {
        let n = h.txns.len();
        let txns: Vec<usize> = (0..n).filter(|&t| inc[t]).collect();
        let mut so = vec![vec![false; n]; n];
        let mut wr = vec![vec![false; n]; n];
        for &a in &txns {
            for &b in &txns {
                so[a][b] = a < b && h.txns[a].session == h.txns[b].session;
            }
            for w in reads_from(a) {
                wr[w][a] = true;
            }
        }
        // (so ∪ wr)+, by Floyd–Warshall.
        let mut hb: Vec<Vec<bool>> = (0..n)
            .map(|a| (0..n).map(|b| so[a][b] || wr[a][b]).collect())
            .collect();
        for m in 0..n {
            let via = hb[m].clone();
            for row in hb.iter_mut() {
                if row[m] {
                    for (cell, &reach) in row.iter_mut().zip(&via) {
                        *cell |= reach;
                    }
                }
            }
        }
        Relations { txns, so, wr, hb }
    }

    /// The level's premise for a read by `t3` and another writer `t1` of
    /// its key, under the commit order `pos` (positions): rc's, that an
    /// earlier read of `t3` reads from `t1`, is `rc`'s to say; ra, `t1`
    /// precedes `t3` in session order or `t3` read from `t1`; cc, a chain
    /// of those; pc, `t1` commits before (or is) such a direct predecessor
    /// of `t3`.
    pub(crate) fn premise(
        &self,
        level: Level,
        pos: &[usize],
        t1: usize,
        t3: usize,
        rc: impl FnOnce() -> bool,
    ) -> bool {
        let (so, wr) = (&self.so, &self.wr);
        match level {
            Level::Rc => rc(),
            Level::Ra => so[t1][t3] || wr[t1][t3],
            Level::Cc => self.hb[t1][t3],
            Level::Pc => self
                .txns
                .iter()
                .any(|&t4| (t4 == t1 || pos[t1] < pos[t4]) && (so[t4][t3] || wr[t4][t3])),
            _ => unreachable!("weak levels only"),
        }
    }

    /// True when `check(order, pos)` holds for some total order of the
    /// included transactions that extends so ∪ wr (`pos[t]`: `t`'s place in
    /// `order`).
    pub(crate) fn some_commit_order(&self, check: &dyn Fn(&[usize], &[usize]) -> bool) -> bool {
        fn extend(
            r: &Relations,
            placed: &mut Vec<usize>,
            pos: &mut [usize],
            check: &dyn Fn(&[usize], &[usize]) -> bool,
        ) -> bool {
            if placed.len() == r.txns.len() {
                return check(placed, pos);
            }
            for &t in &r.txns {
                if pos[t] != usize::MAX {
                    continue;
                }
                let ready = r
                    .txns
                    .iter()
                    .all(|&p| !(r.so[p][t] || r.wr[p][t]) || pos[p] != usize::MAX);
                if !ready {
                    continue;
                }
                pos[t] = placed.len();
                placed.push(t);
                if extend(r, placed, pos, check) {
                    return true;
                }
                placed.pop();
                pos[t] = usize::MAX;
            }
            false
        }
        let mut pos = vec![usize::MAX; self.so.len()];
        extend(self, &mut Vec::new(), &mut pos, check)
    }
}
