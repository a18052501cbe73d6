//! Brute-force reference semantics, for testing the real checkers.
//!
//! Each level is decided here by following its definition literally, by
//! enumeration, with no cleverness that could share a bug with the fast
//! checkers:
//!
//! * **ser** and its variants: is there a serial order of the committed
//!   transactions (respecting session or real-time order when asked) in
//!   which every read returns the latest value written before it (or the
//!   transaction's own last write)?
//! * **si** and its variants: is there a sequence of begin and commit
//!   events in which every transaction reads the state committed at its
//!   begin (or its own writes), and no two transactions that both write a
//!   key overlap (first committer wins)?
//! * **rc**, **ra**, **cc**, **pc** (Biswas & Enea 2019): every read of a
//!   committed value names its writer (a read of a value no committed
//!   transaction installed, or one its own transaction writes later, is
//!   inconsistent; a read after the transaction's own write must return
//!   that write); then, is there a total commit order of the committed
//!   transactions, extending session order and read-from, such that for
//!   every read of `x` by `t3` from `t2` and every other writer `t1` of `x`
//!   the level's premise implies `t1` commits before `t2`? The premises:
//!   rc, a read of `t3` earlier in program order reads from `t1`; ra,
//!   `t1` precedes `t3` in session order or `t3` read from `t1`; cc, a
//!   chain of those; pc, `t1` commits before (or is) such a direct
//!   predecessor of `t3`. A read of the initial (absent) version reads
//!   from an initial transaction that commits before everything. Written
//!   values must be unique per key.
//!
//! A range read of `lo..=hi` reads each row it lists and, as absent, every
//! other key in range, all at one point of its transaction; an inverted
//! range (`lo > hi`, as `BETWEEN 2 AND 1` gives) holds no key.
//!
//! `ok` transactions must commit, `fail` ones must not, and each `info`
//! transaction may go either way. Exponential: only for histories of a
//! handful of transactions.
//!
//! [`satisfies_dbts`] adds what the database's timestamps state (the
//! white-box check, `--use-dbts`): each key's writers that have commit
//! timestamps install their versions in commit-timestamp order (SER and SI
//! families), and, for the SI family only, every stated event of the
//! schedule sits at its timestamp: a begin at its start timestamp, a commit
//! at its commit timestamp, begins before commits at equal timestamps.
//! Serializability does not ask the serial order to be the commit order.
//! Events without a timestamp are free.

use std::collections::{HashMap, HashSet};

use history::{History, Key, Level, Op, Status, Value};

/// The oracle's answer for a level it knows; `None` for levels it does not
/// decide.
pub fn satisfies(h: &History, level: Level) -> Option<bool> {
    decide(h, level, false)
}

/// The oracle's answer when the database's timestamps (`dbts`) count too;
/// the weak levels do not use them.
pub fn satisfies_dbts(h: &History, level: Level) -> Option<bool> {
    decide(h, level, true)
}

fn decide(h: &History, level: Level, dbts: bool) -> Option<bool> {
    // A value written twice to a key, by any transaction (also a failed
    // one, also twice by one), breaks the unique-value rule every level
    // relies on: no level holds.
    let mut seen: HashSet<(&Key, Value)> = HashSet::new();
    for t in &h.txns {
        for op in &t.ops {
            if let Some((k, v)) = op.written() {
                if !seen.insert((k, v)) {
                    return Some(false);
                }
            }
        }
    }
    if matches!(level, Level::Rc | Level::Ra | Level::Cc | Level::Pc) {
        return Some(weak_satisfies(h, level));
    }
    let strong = matches!(
        level,
        Level::Si
            | Level::StrongSessionSi
            | Level::StrongSi
            | Level::Ser
            | Level::StrongSessionSer
            | Level::Sser
    );
    if !strong {
        return None;
    }
    let info: Vec<usize> = (0..h.txns.len())
        .filter(|&i| h.txns[i].status == Status::Info)
        .collect();
    assert!(
        info.len() <= 12,
        "too many info transactions for the oracle"
    );
    for mask in 0u32..(1 << info.len()) {
        let included: Vec<usize> = (0..h.txns.len())
            .filter(|&i| match h.txns[i].status {
                Status::Ok => true,
                Status::Fail => false,
                Status::Info => {
                    let pos = info.iter().position(|&j| j == i).expect("info txn");
                    mask & (1 << pos) != 0
                }
            })
            .collect();
        let cons = Constraints::new(h, &included, level, dbts);
        let ok = match level {
            Level::Ser | Level::StrongSessionSer | Level::Sser => {
                serial_exists(h, &included, &cons)
            }
            _ => si_schedule_exists(h, &included, &cons),
        };
        if ok {
            return Some(true);
        }
    }
    Some(false)
}

/// Pairs `(a, b)` of included transactions where `a` must finish before `b`
/// begins (session or real-time order), and the timestamp orders.
struct Constraints {
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
    fn new(h: &History, inc: &[usize], level: Level, dbts: bool) -> Constraints {
        let mut commits_before = Vec::new();
        let mut events = Vec::new();
        if dbts {
            for &a in inc {
                let Some(da) = h.txns[a].dbts else { continue };
                if !matches!(level, Level::Ser | Level::StrongSessionSer | Level::Sser) {
                    events.push((da.start, false, a));
                    if let Some(c) = da.commit {
                        events.push((c, true, a));
                    }
                }
                for &b in inc {
                    let Some(db) = h.txns[b].dbts else { continue };
                    let common = writes_keys(h, a)
                        .iter()
                        .any(|k| writes_keys(h, b).contains(k));
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
        for &a in inc {
            for &b in inc {
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

type Store = HashMap<Key, Value>;

/// Runs transaction `t` against `snapshot`: true when every read returns what
/// it should (an `info` transaction's reads tell nothing). Returns the
/// writes to install.
fn run(h: &History, t: usize, snapshot: &Store) -> Option<Vec<(Key, Value)>> {
    let mut own: HashMap<Key, Value> = HashMap::new();
    let reads_count = h.txns[t].status == Status::Ok;
    for op in &h.txns[t].ops {
        match op {
            Op::Read { .. } if !reads_count => {}
            Op::Read { key, value } => {
                let expect = own.get(key).or_else(|| snapshot.get(key)).copied();
                if expect != *value {
                    return None;
                }
            }
            Op::RangeRead { .. } if !reads_count => {}
            Op::RangeRead { lo, hi, rows } => {
                // Each row is the version visible now, and every key
                // visible in `lo..=hi` is a row (none when `lo > hi`).
                let now = |k: &Key| own.get(k).or_else(|| snapshot.get(k)).copied();
                if rows.iter().any(|(k, v)| now(k) != Some(*v)) {
                    return None;
                }
                let unlisted = own
                    .keys()
                    .chain(snapshot.keys())
                    .any(|k| lo <= k && k <= hi && !rows.iter().any(|(rk, _)| rk == k));
                if unlisted {
                    return None;
                }
            }
            Op::Write { key, value } | Op::Insert { key, value } | Op::Delete { key, value } => {
                own.insert(key.clone(), *value);
            }
            _ => panic!("the oracle handles register histories only"),
        }
    }
    let mut w: Vec<(Key, Value)> = own.into_iter().collect();
    w.sort();
    Some(w)
}

fn writes_keys(h: &History, t: usize) -> Vec<Key> {
    let mut ks: Vec<Key> = h.txns[t]
        .ops
        .iter()
        .filter_map(|o| o.written().map(|(k, _)| k.clone()))
        .collect();
    ks.sort();
    ks.dedup();
    ks
}

fn serial_exists(h: &History, inc: &[usize], cons: &Constraints) -> bool {
    fn go(
        h: &History,
        inc: &[usize],
        cons: &Constraints,
        done: &mut Vec<bool>,
        store: &Store,
        left: usize,
    ) -> bool {
        if left == 0 {
            return true;
        }
        for &t in inc {
            if done[t] || !cons.ready(t, done) || !cons.may_commit(t, done) {
                continue;
            }
            let Some(ws) = run(h, t, store) else { continue };
            let mut next = store.clone();
            for (k, v) in ws {
                next.insert(k, v);
            }
            done[t] = true;
            if go(h, inc, cons, done, &next, left - 1) {
                return true;
            }
            done[t] = false;
        }
        false
    }
    let mut done = vec![false; h.txns.len()];
    go(h, inc, cons, &mut done, &Store::new(), inc.len())
}

fn si_schedule_exists(h: &History, inc: &[usize], cons: &Constraints) -> bool {
    struct S<'a> {
        h: &'a History,
        inc: &'a [usize],
        cons: &'a Constraints,
        wkeys: Vec<Vec<Key>>,
        begun: Vec<bool>,
        committed: Vec<bool>,
        /// Commits that happened while each transaction was running.
        during: Vec<Vec<usize>>,
        pending: Vec<Option<Vec<(Key, Value)>>>,
    }
    fn go(s: &mut S, store: &Store, left: usize) -> bool {
        if left == 0 {
            return true;
        }
        for i in 0..s.inc.len() {
            let t = s.inc[i];
            if !s.begun[t] {
                if !s.cons.ready(t, &s.committed)
                    || !s.cons.event_ready(t, false, &s.begun, &s.committed)
                {
                    continue;
                }
                let Some(ws) = run(s.h, t, store) else {
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
                let mut next = store.clone();
                for (k, v) in ws {
                    next.insert(k, v);
                }
                s.committed[t] = true;
                let running: Vec<usize> = s
                    .inc
                    .iter()
                    .copied()
                    .filter(|&u| s.begun[u] && !s.committed[u])
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
    let mut s = S {
        h,
        inc,
        cons,
        wkeys: (0..n).map(|t| writes_keys(h, t)).collect(),
        begun: vec![false; n],
        committed: vec![false; n],
        during: vec![Vec::new(); n],
        pending: vec![None; n],
    };
    go(&mut s, &Store::new(), inc.len())
}

// ---------------------------------------------------------------------------
// The weak levels, literally.
// ---------------------------------------------------------------------------

/// Where a read event reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    /// The initial transaction (the key was absent).
    Init,
    /// A committed transaction (history index).
    Txn(usize),
}

/// One external read event: (op index, key, source).
type ReadEvent = (usize, Key, Src);

fn weak_satisfies(h: &History, level: Level) -> bool {
    // Unique values, over every write of the history.
    let mut seen: HashSet<(Key, Value)> = HashSet::new();
    for t in &h.txns {
        for op in &t.ops {
            if let Some((k, v)) = op.written() {
                if !seen.insert((k.clone(), v)) {
                    return false;
                }
            }
        }
    }
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
        weak_consistent(h, &included, level)
    })
}

/// The external read events of each included transaction, or `None` when
/// some read cannot be explained by a committed write.
fn read_events(h: &History, inc: &[bool]) -> Option<Vec<Vec<ReadEvent>>> {
    // (key, value) -> (writer, is its last write of the key)
    let mut written: HashMap<(Key, Value), (usize, bool)> = HashMap::new();
    for (t, txn) in h.txns.iter().enumerate() {
        let mut last: HashMap<Key, Value> = HashMap::new();
        for op in &txn.ops {
            if let Some((k, v)) = op.written() {
                last.insert(k.clone(), v);
                written.insert((k.clone(), v), (t, false));
            }
        }
        for (k, v) in last {
            written.insert((k, v), (t, true));
        }
    }
    let mut out = vec![Vec::new(); h.txns.len()];
    for (t, txn) in h.txns.iter().enumerate() {
        // An `info` transaction's reads tell nothing.
        if !inc[t] || txn.status != Status::Ok {
            continue;
        }
        let mut own: HashMap<Key, Value> = HashMap::new();
        for (o, op) in txn.ops.iter().enumerate() {
            // A range read is a read, at one point of the program, of each
            // row it lists and, as absent, of every other written key in
            // `lo..=hi` (none when `lo > hi`: an inverted range is empty).
            let points: Vec<(&Key, Option<Value>)> = match op {
                Op::Read { key, value } => vec![(key, *value)],
                Op::RangeRead { lo, hi, rows } => {
                    let mut ps: Vec<(&Key, Option<Value>)> =
                        rows.iter().map(|(k, v)| (k, Some(*v))).collect();
                    let mut absent: Vec<&Key> = written
                        .keys()
                        .map(|(k, _)| k)
                        .filter(|&k| lo <= k && k <= hi && !rows.iter().any(|(rk, _)| rk == k))
                        .collect();
                    absent.sort();
                    absent.dedup();
                    ps.extend(absent.into_iter().map(|k| (k, None)));
                    ps
                }
                _ => Vec::new(),
            };
            for (key, value) in points {
                if let Some(&mine) = own.get(key) {
                    // After its own write: must see that write.
                    if value != Some(mine) {
                        return None;
                    }
                    continue;
                }
                let src = match value {
                    None => Src::Init,
                    Some(v) => match written.get(&(key.clone(), v)) {
                        Some(&(w, true)) if w != t && inc[w] => Src::Txn(w),
                        _ => return None, // thin air, aborted, intermediate, future
                    },
                };
                out[t].push((o, key.clone(), src));
            }
            match op {
                Op::Read { .. } | Op::RangeRead { .. } => {}
                Op::Write { key, value }
                | Op::Insert { key, value }
                | Op::Delete { key, value } => {
                    own.insert(key.clone(), *value);
                }
                _ => panic!("the oracle handles register histories only"),
            }
        }
    }
    Some(out)
}

fn weak_consistent(h: &History, inc: &[bool], level: Level) -> bool {
    let n = h.txns.len();
    let Some(reads) = read_events(h, inc) else {
        return false;
    };
    let txns: Vec<usize> = (0..n).filter(|&t| inc[t]).collect();
    let writes = |t: usize, x: &Key| {
        h.txns[t]
            .ops
            .iter()
            .any(|o| o.written().is_some_and(|(k, _)| k == x))
    };
    // so and wr, as matrices over history indices.
    let mut so = vec![vec![false; n]; n];
    let mut wr = vec![vec![false; n]; n];
    for &a in &txns {
        for &b in &txns {
            so[a][b] = a < b && h.txns[a].session == h.txns[b].session;
        }
        for (_, _, src) in &reads[a] {
            if let Src::Txn(w) = *src {
                wr[w][a] = true;
            }
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
    // Does `co` (positions) satisfy the axiom at every read?
    let axiom_holds = |pos: &[usize]| -> bool {
        let co = |a: usize, b: usize| pos[a] < pos[b];
        for &t3 in &txns {
            for (o, x, src) in &reads[t3] {
                for &t1 in &txns {
                    if Src::Txn(t1) == *src || !writes(t1, x) {
                        continue;
                    }
                    let premise = match level {
                        Level::Rc => reads[t3]
                            .iter()
                            .any(|(o2, _, s2)| o2 < o && *s2 == Src::Txn(t1)),
                        Level::Ra => so[t1][t3] || wr[t1][t3],
                        Level::Cc => hb[t1][t3],
                        Level::Pc => txns
                            .iter()
                            .any(|&t4| (t4 == t1 || co(t1, t4)) && (so[t4][t3] || wr[t4][t3])),
                        _ => unreachable!("weak levels only"),
                    };
                    if !premise {
                        continue;
                    }
                    let ordered = match *src {
                        Src::Init => false, // nothing commits before the initial transaction
                        Src::Txn(t2) => co(t1, t2),
                    };
                    if !ordered {
                        return false;
                    }
                }
            }
        }
        true
    };
    // Every total order of the committed transactions extending so ∪ wr.
    fn extend(
        txns: &[usize],
        so: &[Vec<bool>],
        wr: &[Vec<bool>],
        placed: &mut Vec<usize>,
        pos: &mut [usize],
        check: &dyn Fn(&[usize]) -> bool,
    ) -> bool {
        if placed.len() == txns.len() {
            return check(pos);
        }
        for &t in txns {
            if pos[t] != usize::MAX {
                continue;
            }
            let ready = txns
                .iter()
                .all(|&p| !(so[p][t] || wr[p][t]) || pos[p] != usize::MAX);
            if !ready {
                continue;
            }
            pos[t] = placed.len();
            placed.push(t);
            if extend(txns, so, wr, placed, pos, check) {
                return true;
            }
            placed.pop();
            pos[t] = usize::MAX;
        }
        false
    }
    let mut pos = vec![usize::MAX; n];
    extend(&txns, &so, &wr, &mut Vec::new(), &mut pos, &axiom_holds)
}
