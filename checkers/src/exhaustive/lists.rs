//! Exhaustive decision of list-append histories, for the certificate
//! checker and as the tests' reference semantics; the list counterpart of
//! [`registers`](super::registers).
//!
//! A history here has only appends and list reads. Each level is decided
//! by its definition, literally, by enumeration, sharing no code with the
//! checkers:
//!
//! * **ser** and its variants: a serial order of the committed
//!   transactions (respecting session or real-time order when asked) in
//!   which every list read returns exactly the appends made to the key
//!   before it, in order, followed by its own transaction's appends so far;
//! * **si** and its variants: a sequence of begin and commit events in
//!   which every list read returns the list committed at its transaction's
//!   begin followed by its own appends so far, and no two transactions that
//!   append to one key overlap (first committer wins);
//! * **rc**, **ra**, **cc**, **pc** (Biswas & Enea 2019, on lists): a list
//!   read after its transaction's own appends to the key must end with
//!   exactly them; the rest (its external part) reads the version installed
//!   by the writer `t2` of its last element (the initial version when it is
//!   empty), and reads from the writer of every element. A read after own
//!   appends happened at the transaction's first append to the key (its
//!   external part is the version that append went on). Then, is there a
//!   total commit order `co` of the committed transactions, extending
//!   session order and read-from, such that (1) the external part of every
//!   read equals the appends to the key of all its writers committed up to
//!   and including `t2`, in `co` order, and, after own appends, of all the
//!   writers committed before `t3` (the transaction installs that base
//!   followed by its appends), and (2) the level's axiom holds with the
//!   premises of the register oracle: for every read of `x` by `t3` from
//!   `t2` and every other writer `t1` of `x`, the premise implies `t1 co
//!   t2` (never true of the initial version). The premises: rc, a read of
//!   `t3` earlier in program order (by where it happened) reads from `t1`;
//!   ra, `t1` precedes `t3` in session order or `t3` read from `t1`; cc, a
//!   chain of those; pc, `t1` commits before (or is) such a direct
//!   predecessor of `t3`.
//!
//! `ok` transactions must commit, `fail` ones must not, and each `info`
//! transaction may go either way; an `info` transaction's reads tell
//! nothing and a `fail` one's constrain nothing. Values appended to a key
//! must be unique. Exponential: only for a handful of transactions.

use std::collections::HashMap;

use history::{History, Key, Level, Op, Status, Value};

use super::enumerate::{
    is_serial, is_strong, is_weak, repeats_a_value, serial_exists, si_schedule_exists,
    some_inclusion, Constraints, Model, Relations,
};

/// The oracle's answer for a list-append history at any of the ten levels;
/// `None` for levels it does not know. Panics on ops other than appends and
/// list reads.
pub fn satisfies(h: &History, level: Level) -> Option<bool> {
    let weak = is_weak(level);
    if !weak && !is_strong(level) {
        return None;
    }
    fn appended(op: &Op) -> Option<(&Key, Value)> {
        match op {
            Op::Append { .. } => op.written(),
            Op::ReadList { .. } => None,
            _ => panic!("the list oracle handles appends and list reads only"),
        }
    }
    if repeats_a_value(h, appended) {
        return Some(false);
    }
    Some(some_inclusion(h, |inc| {
        if weak {
            weak_consistent(h, inc, level)
        } else {
            let cons = Constraints::new(h, inc, level, false);
            if is_serial(level) {
                serial_exists::<Lists>(h, inc, &cons)
            } else {
                si_schedule_exists::<Lists>(h, inc, &cons)
            }
        }
    }))
}

type Store = HashMap<Key, Vec<Value>>;

/// A transaction's appends, per key in program order.
type Appends = Vec<(Key, Vec<Value>)>;

/// Lists: a store of lists, a transaction's writes its appends.
struct Lists;

impl Model for Lists {
    type Store = Store;
    type Writes = Appends;

    /// Runs `t` on `snapshot`: whether each list read (of an `ok`
    /// transaction) returns the snapshot's list followed by its own appends
    /// so far; and the appends to install, per key in program order.
    fn run(h: &History, t: usize, snapshot: &Store) -> Option<Appends> {
        let txn = &h.txns[t];
        let mut own: Appends = Vec::new();
        for op in &txn.ops {
            match op {
                Op::Append { key, value } => match own.iter_mut().find(|(k, _)| k == key) {
                    Some((_, vs)) => vs.push(*value),
                    None => own.push((key.clone(), vec![*value])),
                },
                Op::ReadList {
                    key,
                    values: Some(vs),
                } if txn.status == Status::Ok => {
                    let mut want: Vec<Value> = snapshot.get(key).cloned().unwrap_or_default();
                    if let Some((_, mine)) = own.iter().find(|(k, _)| k == key) {
                        want.extend_from_slice(mine);
                    }
                    if *vs != want {
                        return None;
                    }
                }
                _ => {}
            }
        }
        Some(own)
    }

    fn install(store: &Store, ws: &Appends) -> Store {
        let mut next = store.clone();
        for (k, vs) in ws {
            next.entry(k.clone()).or_default().extend_from_slice(vs);
        }
        next
    }
}

// ---------------------------------------------------------------------------
// The weak levels, literally.
// ---------------------------------------------------------------------------

/// One external list read: its op, key, external part, the writer of the
/// version it read (`None`: the initial version) and the writers of all
/// its elements.
struct ListRead {
    /// Where in program order it read: its op, or after the transaction's
    /// own appends to the key, the first of them (the list those appends
    /// went on was read when the first one was made).
    at: usize,
    /// After the transaction's own appends to the key: its external part is
    /// every append committed before the transaction.
    after_own: bool,
    key: Key,
    seen: Vec<Value>,
    version: Option<usize>,
    from: Vec<usize>,
}

/// The external list reads of each included `ok` transaction, or `None`
/// when some read cannot be explained by committed appends.
fn list_reads(h: &History, inc: &[bool]) -> Option<Vec<Vec<ListRead>>> {
    let mut writer: HashMap<(Key, Value), usize> = HashMap::new();
    for (t, txn) in h.txns.iter().enumerate() {
        for op in &txn.ops {
            if let Op::Append { key, value } = op {
                writer.insert((key.clone(), *value), t);
            }
        }
    }
    let mut out: Vec<Vec<ListRead>> = (0..h.txns.len()).map(|_| Vec::new()).collect();
    for (t, txn) in h.txns.iter().enumerate() {
        if !inc[t] || txn.status != Status::Ok {
            continue;
        }
        let mut own: HashMap<Key, Vec<Value>> = HashMap::new();
        for (o, op) in txn.ops.iter().enumerate() {
            match op {
                Op::Append { key, value } => own.entry(key.clone()).or_default().push(*value),
                Op::ReadList {
                    key,
                    values: Some(vs),
                } => {
                    let mine: &[Value] = own.get(key).map_or(&[], Vec::as_slice);
                    if !vs.ends_with(mine) {
                        return None;
                    }

                    let seen = vs[..vs.len() - mine.len()].to_vec();
                    let mut from = Vec::new();
                    for v in &seen {
                        match writer.get(&(key.clone(), *v)) {
                            Some(&w) if w != t && inc[w] => from.push(w),
                            _ => return None, // thin air, aborted, own
                        }
                    }
                    let at = if mine.is_empty() {
                        o
                    } else {
                        txn.ops
                            .iter()
                            .position(|p| matches!(p, Op::Append { key: k, .. } if k == key))
                            .expect("an own append")
                    };
                    out[t].push(ListRead {
                        at,
                        after_own: !mine.is_empty(),
                        key: key.clone(),
                        version: from.last().copied(),
                        from,
                        seen,
                    });
                }
                _ => {}
            }
        }
    }
    Some(out)
}

fn weak_consistent(h: &History, inc: &[bool], level: Level) -> bool {
    let Some(reads) = list_reads(h, inc) else {
        return false;
    };
    let appends_of = |t: usize, x: &Key| -> Vec<Value> {
        h.txns[t]
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Append { key, value } if key == x => Some(*value),
                _ => None,
            })
            .collect()
    };
    let writes = |t: usize, x: &Key| !appends_of(t, x).is_empty();
    let rel = Relations::new(h, inc, |t| {
        reads[t].iter().flat_map(|r| r.from.iter().copied())
    });
    let holds = |order: &[usize], pos: &[usize]| -> bool {
        let co = |a: usize, b: usize| pos[a] < pos[b];
        for &t3 in &rel.txns {
            for r in &reads[t3] {
                // (1) The version read holds exactly the appends up to it;
                // after own appends, every append committed before t3.
                let upto = if r.after_own {
                    pos[t3]
                } else {
                    r.version.map_or(0, |t2| pos[t2] + 1)
                };
                let built: Vec<Value> = order[..upto]
                    .iter()
                    .flat_map(|&w| appends_of(w, &r.key))
                    .collect();
                if built != r.seen {
                    return false;
                }
                // (2) The axiom.
                for &t1 in &rel.txns {
                    if Some(t1) == r.version || !writes(t1, &r.key) {
                        continue;
                    }
                    let premise = rel.premise(level, pos, t1, t3, || {
                        reads[t3]
                            .iter()
                            .any(|r2| r2.at < r.at && r2.from.contains(&t1))
                    });
                    if premise && !r.version.is_some_and(|t2| co(t1, t2)) {
                        return false;
                    }
                }
            }
        }
        true
    };
    rel.some_commit_order(&holds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkers_testkit::build::{a, rl as r};
    use history::Txn;

    #[test]
    fn appends_install_the_list_a_later_read_of_the_transaction_shows() {
        // T3's appends went on the empty list (its read shows [3]), yet T4
        // saw T1's append before them: no level allows it.
        let h = History::from_txns(vec![
            Txn::new(1, 1, Status::Ok, vec![a(0, 1)]),
            Txn::new(3, 3, Status::Ok, vec![a(0, 3), r(0, &[3])]),
            Txn::new(4, 4, Status::Ok, vec![r(0, &[1, 3])]),
        ]);
        for l in Level::ALL {
            assert_eq!(satisfies(&h, l), Some(false), "{l}");
        }
    }

    #[test]
    fn a_read_after_own_appends_happened_at_the_first_of_them() {
        // T1 saw T0's append, then its own append went on the empty list.
        let h = History::from_txns(vec![
            Txn::new(0, 0, Status::Ok, vec![a(0, 1)]),
            Txn::new(1, 1, Status::Ok, vec![r(0, &[1]), a(0, 2), r(0, &[2])]),
        ]);
        assert_eq!(satisfies(&h, Level::Rc), Some(false));
        // T1 saw T0 (through y), then appended to x on a list without T0's
        // append: read committed forbids it.
        let h = History::from_txns(vec![
            Txn::new(0, 0, Status::Ok, vec![a(0, 7), a(1, 5)]),
            Txn::new(1, 1, Status::Ok, vec![r(1, &[5]), a(0, 1), r(0, &[1])]),
        ]);
        assert_eq!(satisfies(&h, Level::Rc), Some(false));
        // The same append before T1 saw T0: T1 committed first.
        let h = History::from_txns(vec![
            Txn::new(0, 0, Status::Ok, vec![a(0, 7), a(1, 5)]),
            Txn::new(1, 1, Status::Ok, vec![a(0, 1), r(1, &[5]), r(0, &[1])]),
        ]);
        assert_eq!(
            satisfies(&h, Level::Rc),
            Some(false),
            "T0 -wr-> T1 -ww-> T0"
        );
        let h = History::from_txns(vec![
            Txn::new(0, 0, Status::Ok, vec![a(0, 7)]),
            Txn::new(2, 2, Status::Ok, vec![a(1, 5)]),
            Txn::new(1, 1, Status::Ok, vec![a(0, 1), r(1, &[5]), r(0, &[1])]),
            Txn::new(3, 3, Status::Ok, vec![r(0, &[1, 7])]),
        ]);
        assert_eq!(satisfies(&h, Level::Rc), Some(true));
    }

    #[test]
    fn a_list_read_reads_from_every_element_writer() {
        // T3 sees T1's x (under T2's append) and misses T1's y.
        let h = History::from_txns(vec![
            Txn::new(1, 1, Status::Ok, vec![a(0, 1), a(1, 1)]),
            Txn::new(2, 2, Status::Ok, vec![a(0, 2)]),
            Txn::new(3, 3, Status::Ok, vec![r(1, &[]), r(0, &[1, 2])]),
        ]);
        assert_eq!(satisfies(&h, Level::Rc), Some(true));
        assert_eq!(satisfies(&h, Level::Ra), Some(false));
    }
}
