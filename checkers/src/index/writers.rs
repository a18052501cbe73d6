//! Who wrote each (key, value): the index's writer table, split by key id
//! into two parts that two cores fill at once.
//!
//! Filling the table is one hash insert per write, and the table is too
//! large for the caches, so a single core spends most of the pass waiting
//! on memory. A key's writes all land in one part (by the parity of its
//! id), so each part sees its writes in history order and decides alone
//! what one pass over the whole table decided: the first writer of a value
//! wins and a later one is a duplicate, and a write overwritten by its own
//! transaction was never installed (`last` false).
//!
//! When the written values are dense, as a workload's counters make them
//! (`session << 32 | n` in the mini workload, for instance), the table is
//! instead a vector per value of the upper 32 bits, indexed by the lower
//! bits: a read of a recent version then finds its writer near the other
//! recent writes, in cache, where a hash table scatters them. That form is
//! kept only while no two keys share a value. When they do but each key's
//! values are dense, as per-key counters make them (AWDIT's generator
//! writes 0, 1, 2, ... to each key), there is one such table per key;
//! else the hash form is built.

use rustc_hash::FxHashMap;

use history::{History, Value};

use super::records::{Finding, WriteLoc};
use crate::anomaly::AnomalyKind;

/// The fewest writes filled on two threads.
const PARALLEL_WRITES: usize = 50_000;

/// A transaction's writes with more ops than this are tracked in a hash
/// map instead of a short list.
const SHORT_TXN: usize = 16;

/// The writer table: `(key id, value)` to where it was written.
pub struct Writers {
    repr: Repr,
}

enum Repr {
    /// Split by the parity of the key id.
    Hash([FxHashMap<(u32, Value), WriteLoc>; 2]),
    Dense(Dense),
    PerKey(PerKey),
}

impl Default for Writers {
    fn default() -> Writers {
        Writers {
            repr: Repr::Hash(Default::default()),
        }
    }
}

/// A value's slot in the dense form: no key (`NONE`) when nobody wrote it.
#[derive(Clone, Copy)]
struct Slot {
    key: u32,
    loc: WriteLoc,
}

const NONE: u32 = u32::MAX;

/// The values of one upper half, `lo..lo + slots.len()` in the lower bits.
struct Group {
    lo: i64,
    slots: Vec<Slot>,
}

/// The dense form: value `v` is in group `(v >> 32) - hi`, at slot
/// `(v & 0xffff_ffff) - lo`; empty by default (nothing is found in it).
#[derive(Default)]
struct Dense {
    hi: i64,
    groups: Vec<Group>,
    len: usize,
}

/// The most groups (distinct upper halves) of the dense form.
const MAX_GROUPS: i64 = 4096;

/// The most written keys of the per-key dense form.
const MAX_KEYED: usize = 1024;

fn split(v: Value) -> (i64, i64) {
    (v >> 32, v & 0xffff_ffff)
}

impl Dense {
    /// The empty dense table for `values`, if they are dense enough: at
    /// most twice as many slots as values.
    fn plan(values: &[Value]) -> Option<Dense> {
        let (&first, _) = values.split_first()?;
        let (mut hmin, mut hmax) = (split(first).0, split(first).0);
        for &v in values {
            let h = split(v).0;
            hmin = hmin.min(h);
            hmax = hmax.max(h);
            if hmax - hmin >= MAX_GROUPS {
                return None;
            }
        }
        let groups = (hmax - hmin + 1) as usize;
        let mut range = vec![(i64::MAX, i64::MIN); groups];
        for &v in values {
            let (h, l) = split(v);
            let r = &mut range[(h - hmin) as usize];
            r.0 = r.0.min(l);
            r.1 = r.1.max(l);
        }
        let slots: i64 = range
            .iter()
            .filter(|r| r.0 <= r.1)
            .map(|r| r.1 - r.0 + 1)
            .sum();
        if slots > 2 * values.len() as i64 + 1024 {
            return None;
        }
        let empty = Slot {
            key: NONE,
            loc: WriteLoc {
                txn: 0,
                op: 0,
                last: false,
                failed: false,
            },
        };
        Some(Dense {
            hi: hmin,
            groups: range
                .into_iter()
                .map(|(lo, hi)| Group {
                    lo,
                    slots: if lo <= hi {
                        vec![empty; (hi - lo + 1) as usize]
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
            len: 0,
        })
    }

    /// The number of slots, filled or not.
    fn slots(&self) -> usize {
        self.groups.iter().map(|g| g.slots.len()).sum()
    }

    fn slot(&self, v: Value) -> Option<&Slot> {
        let (h, l) = split(v);
        let g = self.groups.get(usize::try_from(h - self.hi).ok()?)?;
        g.slots.get(usize::try_from(l - g.lo).ok()?)
    }

    fn slot_mut(&mut self, v: Value) -> Option<&mut Slot> {
        let (h, l) = split(v);
        let g = self.groups.get_mut(usize::try_from(h - self.hi).ok()?)?;
        g.slots.get_mut(usize::try_from(l - g.lo).ok()?)
    }
}

/// The per-key dense form: the dense form of each key's values, by key id.
struct PerKey(Vec<Dense>);

impl PerKey {
    /// The empty per-key table for these writes (`wkeys[i]` wrote
    /// `wvals[i]`), if each key's values are dense enough and all the
    /// slots together at most twice as many as the writes.
    fn plan(wkeys: &[u32], wvals: &[Value]) -> Option<PerKey> {
        let keys = *wkeys.iter().max()? as usize + 1;
        if keys > MAX_KEYED {
            return None;
        }
        let mut values: Vec<Vec<Value>> = vec![Vec::new(); keys];
        for (&k, &v) in wkeys.iter().zip(wvals) {
            values[k as usize].push(v);
        }
        let tables: Vec<Dense> = values
            .iter()
            // A key nobody wrote: nothing is looked up in it.
            .map(|vs| {
                if vs.is_empty() {
                    Some(Dense::default())
                } else {
                    Dense::plan(vs)
                }
            })
            .collect::<Option<_>>()?;
        let slots: usize = tables.iter().map(Dense::slots).sum();
        (slots <= 2 * wvals.len() + 1024).then_some(PerKey(tables))
    }

    fn slot(&self, k: u32, v: Value) -> Option<&Slot> {
        self.0.get(k as usize)?.slot(v).filter(|s| s.key == k)
    }
}

/// What [`fill`] needs of a table.
trait Table {
    /// Records the first writer of `(k, v)`: `Ok(Some(txn))` when `txn`
    /// wrote it first, `Err(())` when the table cannot hold it.
    #[allow(clippy::result_unit_err)]
    fn first(&mut self, k: u32, v: Value, loc: WriteLoc) -> Result<Option<u32>, ()>;
    fn get_mut(&mut self, k: u32, v: Value) -> Option<&mut WriteLoc>;
}

impl Table for FxHashMap<(u32, Value), WriteLoc> {
    fn first(&mut self, k: u32, v: Value, loc: WriteLoc) -> Result<Option<u32>, ()> {
        match self.entry((k, v)) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(Some(e.get().txn)),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(loc);
                Ok(None)
            }
        }
    }
    fn get_mut(&mut self, k: u32, v: Value) -> Option<&mut WriteLoc> {
        self.get_mut(&(k, v))
    }
}

impl Table for Dense {
    fn first(&mut self, k: u32, v: Value, loc: WriteLoc) -> Result<Option<u32>, ()> {
        let s = self.slot_mut(v).ok_or(())?;
        if s.key == NONE {
            *s = Slot { key: k, loc };
            self.len += 1;
            Ok(None)
        } else if s.key == k {
            Ok(Some(s.loc.txn))
        } else {
            // Two keys share the value: the hash form holds them.
            Err(())
        }
    }
    fn get_mut(&mut self, k: u32, v: Value) -> Option<&mut WriteLoc> {
        self.slot_mut(v).filter(|s| s.key == k).map(|s| &mut s.loc)
    }
}

impl Table for PerKey {
    fn first(&mut self, k: u32, v: Value, loc: WriteLoc) -> Result<Option<u32>, ()> {
        self.0.get_mut(k as usize).ok_or(())?.first(k, v, loc)
    }
    fn get_mut(&mut self, k: u32, v: Value) -> Option<&mut WriteLoc> {
        self.0.get_mut(k as usize)?.get_mut(k, v)
    }
}

impl Writers {
    /// Where `value` was written to `key` (the first writer, if several).
    pub fn get(&self, kv: &(u32, Value)) -> Option<&WriteLoc> {
        match &self.repr {
            Repr::Hash(parts) => parts[(kv.0 & 1) as usize].get(kv),
            Repr::Dense(d) => d.slot(kv.1).filter(|s| s.key == kv.0).map(|s| &s.loc),
            Repr::PerKey(d) => d.slot(kv.0, kv.1).map(|s| &s.loc),
        }
    }

    /// The number of distinct (key, value) pairs written.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Hash(parts) => parts[0].len() + parts[1].len(),
            Repr::Dense(d) => d.len,
            Repr::PerKey(d) => d.0.iter().map(|t| t.len).sum(),
        }
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills the table from the history's writes. `wkeys` and `wvals` hold
    /// the key id and value of every write-like op, in history order, and
    /// `counts` how many of them have an even and an odd key id. Returns
    /// the table and the duplicate writes, in history order.
    pub(crate) fn build(
        h: &History,
        wkeys: &[u32],
        wvals: &[Value],
        counts: [usize; 2],
    ) -> (Writers, Vec<Finding>) {
        if let Some(mut d) = Dense::plan(wvals) {
            if let Ok(dups) = fill(h, wkeys, None, &mut d) {
                return (
                    Writers {
                        repr: Repr::Dense(d),
                    },
                    dups,
                );
            }
        }
        if let Some(mut d) = PerKey::plan(wkeys, wvals) {
            if let Ok(dups) = fill(h, wkeys, None, &mut d) {
                return (
                    Writers {
                        repr: Repr::PerKey(d),
                    },
                    dups,
                );
            }
        }
        let two = wkeys.len() >= PARALLEL_WRITES && crate::two_cores();
        let part = |p: u32| {
            let mut map: FxHashMap<(u32, Value), WriteLoc> =
                FxHashMap::with_capacity_and_hasher(counts[p as usize], Default::default());
            let dups = fill(h, wkeys, Some(p), &mut map).unwrap_or_default();
            (map, dups)
        };
        let ((p0, d0), (p1, d1)) = if two {
            std::thread::scope(|s| {
                let second = std::thread::Builder::new()
                    .name("writers".into())
                    .spawn_scoped(s, || part(1))
                    .expect("cannot start a writer-table thread");
                let a = part(0);
                let b = second
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e));
                (a, b)
            })
        } else {
            (part(0), part(1))
        };
        let mut dups = d0;
        if !d1.is_empty() {
            dups.extend(d1);
            dups.sort_by_key(|f| (f.txn, f.op));
        }
        (
            Writers {
                repr: Repr::Hash([p0, p1]),
            },
            dups,
        )
    }
}

/// Fills `table` with the writes whose key id has parity `part` (all of
/// them for `None`); the duplicate writes among them, or `Err` when the
/// table cannot hold a write.
fn fill<T: Table>(
    h: &History,
    wkeys: &[u32],
    part: Option<u32>,
    table: &mut T,
) -> Result<Vec<Finding>, ()> {
    let mut dups = Vec::new();
    // This transaction's last installed value of each key (of this part).
    let mut short: Vec<(u32, Value)> = Vec::new();
    let mut long: FxHashMap<u32, Value> = FxHashMap::default();
    let mut i = 0;
    for (t, txn) in h.txns.iter().enumerate() {
        let t = t as u32;
        let failed = txn.status == history::Status::Fail;
        let is_long = txn.ops.len() > SHORT_TXN;
        short.clear();
        if is_long {
            long.clear();
        }
        for (o, op) in txn.ops.iter().enumerate() {
            let Some((_, v)) = op.written() else { continue };
            let k = wkeys[i];
            i += 1;
            if part.is_some_and(|p| k & 1 != p) {
                continue;
            }
            let loc = WriteLoc {
                txn: t,
                op: o as u32,
                last: true,
                failed,
            };
            if let Some(other) = table.first(k, v, loc)? {
                // Keep the first writer; report the clash.
                dups.push(Finding {
                    kind: AnomalyKind::DuplicateWrite,
                    txn: t,
                    op: o as u32,
                    other: Some(other),
                    key: k,
                });
                // It still overwrites the transaction's earlier write of
                // `k`, which is then not installed either.
                let before = if is_long {
                    long.get(&k).copied()
                } else {
                    short.iter().find(|(kk, _)| *kk == k).map(|s| s.1)
                };
                if let Some(l) = before.and_then(|old| table.get_mut(k, old)) {
                    if l.txn == t {
                        l.last = false;
                    }
                }
                continue;
            }
            // The transaction wrote `k` before: that value is not installed.
            let before = if is_long {
                long.insert(k, v)
            } else {
                match short.iter_mut().find(|(kk, _)| *kk == k) {
                    Some(slot) => Some(std::mem::replace(&mut slot.1, v)),
                    None => {
                        short.push((k, v));
                        None
                    }
                }
            };
            if let Some(old) = before {
                if let Some(l) = table.get_mut(k, old) {
                    if l.txn == t {
                        l.last = false;
                    }
                }
            }
        }
    }
    Ok(dups)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use history::{Key, Op, Status, Txn};

    use super::*;

    /// The writer table of `h` and its duplicate writes, with the key ids
    /// the index gives written keys (in the order of their first write).
    fn build(h: &History) -> (Writers, Vec<Finding>, HashMap<Key, u32>) {
        let mut ids: HashMap<Key, u32> = HashMap::new();
        let (mut wkeys, mut wvals, mut counts) = (Vec::new(), Vec::new(), [0usize; 2]);
        for (k, v) in h.txns.iter().flat_map(|t| &t.ops).filter_map(Op::written) {
            let next = ids.len() as u32;
            let id = *ids.entry(k.clone()).or_insert(next);
            counts[(id & 1) as usize] += 1;
            wkeys.push(id);
            wvals.push(v);
        }
        let (writers, dups) = Writers::build(h, &wkeys, &wvals, counts);
        (writers, dups, ids)
    }

    /// The table one plain pass over the writes gives.
    fn reference(h: &History, ids: &HashMap<Key, u32>) -> HashMap<(u32, Value), WriteLoc> {
        let mut m: HashMap<(u32, Value), WriteLoc> = HashMap::new();
        for (t, txn) in h.txns.iter().enumerate() {
            let t = t as u32;
            let mut last: HashMap<u32, Value> = HashMap::new();
            for (o, op) in txn.ops.iter().enumerate() {
                let Some((k, v)) = op.written() else { continue };
                let k = ids[k];
                if m.contains_key(&(k, v)) {
                    continue;
                }
                m.insert(
                    (k, v),
                    WriteLoc {
                        txn: t,
                        op: o as u32,
                        last: true,
                        failed: txn.status == Status::Fail,
                    },
                );
                if let Some(old) = last.insert(k, v) {
                    let l = m.get_mut(&(k, old)).unwrap();
                    if l.txn == t {
                        l.last = false;
                    }
                }
            }
        }
        m
    }

    fn w(k: i64, v: i64) -> Op {
        Op::Write {
            key: Key::Int(k),
            value: v,
        }
    }

    /// A history of `n` transactions writing `value(i, j)`, with
    /// duplicates, overwrites within a transaction, and failed writers.
    fn history(n: usize, value: impl Fn(usize, usize) -> i64) -> History {
        let mut h = History::default();
        for i in 0..n {
            let k = (i % 7) as i64;
            let mut ops = vec![w(k, value(i, 0)), w(k + 1, value(i, 1))];
            if i % 5 == 0 {
                ops.push(w(k, value(i, 2)));
            }
            if i % 11 == 3 {
                // A value another transaction wrote to the same key.
                ops.push(w(((i - 3) % 7) as i64, value(i - 3, 0)));
            }
            if i % 13 == 0 {
                ops.push(Op::Write {
                    key: Key::str("s"),
                    value: value(i, 3),
                });
            }
            let st = if i % 4 == 1 { Status::Fail } else { Status::Ok };
            h.txns.push(Txn::new(i as u64, (i % 3) as u64, st, ops));
        }
        h
    }

    fn agrees(h: &History) -> bool {
        let (writer, dups, ids) = build(h);
        let want = reference(h, &ids);
        let writes: usize = h
            .txns
            .iter()
            .map(|t| t.ops.iter().filter(|o| o.written().is_some()).count())
            .sum();
        let dups = dups
            .iter()
            .filter(|f| f.kind == AnomalyKind::DuplicateWrite);
        writer.len() == want.len()
            && dups.count() == writes - want.len()
            && want.iter().all(|(kv, l)| writer.get(kv) == Some(l))
            && writer.get(&(0, -12345)).is_none()
    }

    #[test]
    fn dense_values_agree_with_one_pass() {
        // Session-numbered values, as the workloads write them.
        let h = history(2000, |i, j| {
            (((i % 3) as i64) << 32) | (4 * (i / 3) + j) as i64
        });
        assert!(matches!(build(&h).0.repr, Repr::Dense(_)));
        assert!(agrees(&h));
    }

    #[test]
    fn values_shared_by_keys_use_a_dense_form_per_key() {
        // The same values on different keys, dense on each (about a
        // counter per key, as AWDIT writes them): the dense form cannot
        // hold them, a dense form per key can.
        let h = history(2000, |i, j| (4 * (i / 7) + j) as i64);
        assert!(matches!(build(&h).0.repr, Repr::PerKey(_)));
        assert!(agrees(&h));
        // Shared, and each key's spread over more than twice its writes:
        // the hash form.
        let h = history(2000, |i, j| (i + j) as i64);
        assert!(matches!(build(&h).0.repr, Repr::Hash(_)));
        assert!(agrees(&h));
    }

    #[test]
    fn sparse_values_on_two_threads_agree_with_one_pass() {
        let h = history(40_000, |i, j| {
            ((i as i64 * 4 + j as i64).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64)) >> 1
        });
        assert!(matches!(build(&h).0.repr, Repr::Hash(_)));
        assert!(agrees(&h));
        let h = history(40_000, |i, j| (i * 4 + j) as i64 + (1 << 40));
        assert!(matches!(build(&h).0.repr, Repr::Dense(_)));
        assert!(agrees(&h));
    }
}
