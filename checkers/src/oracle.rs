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
//!
//! `ok` transactions must commit, `fail` ones must not, and each `info`
//! transaction may go either way. Exponential: only for histories of a
//! handful of transactions.

use std::collections::HashMap;

use history::{History, Key, Level, Op, Status, Value};

/// The oracle's answer for a level it knows; `None` for levels it does not
/// decide.
pub fn satisfies(h: &History, level: Level) -> Option<bool> {
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
        let cons = Constraints::new(h, &included, level);
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
/// begins (session or real-time order).
struct Constraints {
    before: Vec<(usize, usize)>,
}

impl Constraints {
    fn new(h: &History, inc: &[usize], level: Level) -> Constraints {
        let mut before = Vec::new();
        for &a in inc {
            for &b in inc {
                if a == b {
                    continue;
                }
                let (ta, tb) = (&h.txns[a], &h.txns[b]);
                let so = level.uses_sessions() && ta.session == tb.session && a < b;
                let rt = level.uses_real_time()
                    && matches!((ta.end, tb.start), (Some(e), Some(s)) if e < s);
                if so || rt {
                    before.push((a, b));
                }
            }
        }
        Constraints { before }
    }

    /// All of `b`'s predecessors are in `done`.
    fn ready(&self, b: usize, done: &[bool]) -> bool {
        self.before.iter().all(|&(a, bb)| bb != b || done[a])
    }
}

type Store = HashMap<Key, Value>;

/// Runs transaction `t` against `snapshot`: true when every read returns what
/// it should. Returns the writes to install.
fn run(h: &History, t: usize, snapshot: &Store) -> Option<Vec<(Key, Value)>> {
    let mut own: HashMap<Key, Value> = HashMap::new();
    for op in &h.txns[t].ops {
        match op {
            Op::Read { key, value } => {
                let expect = own.get(key).or_else(|| snapshot.get(key)).copied();
                if expect != *value {
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
            if done[t] || !cons.ready(t, done) {
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
                if !s.cons.ready(t, &s.committed) {
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
