//! Exhaustive decision of register histories: the certificate checker's
//! second decider of small sub-histories, and the tests' reference
//! semantics (their oracle) for the real checkers.
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

use std::collections::HashMap;

use history::{History, Key, Level, Op, Status, Value};

use super::enumerate::{
    is_serial, is_strong, is_weak, repeats_a_value, serial_exists, si_schedule_exists,
    some_inclusion, Constraints, Model, Relations,
};

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
    if repeats_a_value(h, Op::written) {
        return Some(false);
    }
    if is_weak(level) {
        return Some(some_inclusion(h, |inc| weak_consistent(h, inc, level)));
    }
    if !is_strong(level) {
        return None;
    }
    Some(some_inclusion(h, |inc| {
        let cons = Constraints::new(h, inc, level, dbts);
        if is_serial(level) {
            serial_exists::<Registers>(h, inc, &cons)
        } else {
            si_schedule_exists::<Registers>(h, inc, &cons)
        }
    }))
}

type Store = HashMap<Key, Value>;

/// Registers: a store of values, a transaction's writes its last value of
/// each key.
struct Registers;

impl Model for Registers {
    type Store = Store;
    type Writes = Vec<(Key, Value)>;

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
                Op::Write { key, value }
                | Op::Insert { key, value }
                | Op::Delete { key, value } => {
                    own.insert(key.clone(), *value);
                }
                _ => panic!("the oracle handles register histories only"),
            }
        }
        let mut w: Vec<(Key, Value)> = own.into_iter().collect();
        w.sort();
        Some(w)
    }

    fn install(store: &Store, ws: &Vec<(Key, Value)>) -> Store {
        let mut next = store.clone();
        for (k, v) in ws {
            next.insert(k.clone(), *v);
        }
        next
    }
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
    let Some(reads) = read_events(h, inc) else {
        return false;
    };
    let writes = |t: usize, x: &Key| {
        h.txns[t]
            .ops
            .iter()
            .any(|o| o.written().is_some_and(|(k, _)| k == x))
    };
    let rel = Relations::new(h, inc, |t| {
        reads[t].iter().filter_map(|(_, _, src)| match *src {
            Src::Txn(w) => Some(w),
            Src::Init => None,
        })
    });
    // Does `co` (positions) satisfy the axiom at every read?
    let axiom_holds = |_: &[usize], pos: &[usize]| -> bool {
        let co = |a: usize, b: usize| pos[a] < pos[b];
        for &t3 in &rel.txns {
            for (o, x, src) in &reads[t3] {
                for &t1 in &rel.txns {
                    if Src::Txn(t1) == *src || !writes(t1, x) {
                        continue;
                    }
                    let premise = rel.premise(level, pos, t1, t3, || {
                        reads[t3]
                            .iter()
                            .any(|(o2, _, s2)| o2 < o && *s2 == Src::Txn(t1))
                    });
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
    rel.some_commit_order(&axiom_holds)
}
