//! The history indexed for checking refutations ([`Ctx`]): who wrote each
//! value, built lazily, shared by every refutation of one certificate.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cell::OnceCell;

use history::{History, Key, Op, Status, Value};
use smallvec::SmallVec;

use super::certificate::*;

/// (key, value) -> every (txn, op) writing it.
pub(super) type WriteIndex = HashMap<(Key, Value), SmallVec<[(u32, u32); 1]>>;

/// Lazily built indexes over the whole history, for checking evidence.
pub(super) struct Ctx<'a> {
    pub(super) h: &'a History,
    /// (key, value) -> every op writing it.
    pub(super) writes: OnceCell<WriteIndex>,
    /// key -> every list read (txn, op) of an ok transaction.
    pub(super) list_reads: OnceCell<HashMap<Key, Vec<(u32, u32)>>>,
    /// `info` transactions some ok transaction read a value of: they
    /// committed in every execution that explains that read.
    pub(super) observed: OnceCell<HashSet<u32>>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(h: &'a History) -> Ctx<'a> {
        Ctx {
            h,
            writes: OnceCell::new(),
            list_reads: OnceCell::new(),
            observed: OnceCell::new(),
        }
    }

    /// True when `t` committed in every valid execution: it is ok, or an
    /// ok transaction read a value only `t` wrote.
    pub(super) fn surely_committed(&self, t: u32) -> bool {
        if self.txn_ok(t) {
            return true;
        }
        let seen = self.observed.get_or_init(|| {
            let mut seen = HashSet::default();
            for txn in self.h.txns.iter().filter(|x| x.status == Status::Ok) {
                for op in &txn.ops {
                    let mut note = |k: &Key, v: Value| {
                        if let Some(w) = self.unique_writer(k, v) {
                            if self.h.txns[w as usize].status == Status::Info {
                                seen.insert(w);
                            }
                        }
                    };
                    match op {
                        Op::Read {
                            key,
                            value: Some(v),
                        } => note(key, *v),
                        Op::ReadList {
                            key,
                            values: Some(vs),
                        } => vs.iter().for_each(|v| note(key, *v)),
                        Op::RangeRead { rows, .. } => rows.iter().for_each(|(k, v)| note(k, *v)),
                        _ => {}
                    }
                }
            }
            seen
        });
        seen.contains(&t)
    }

    pub(super) fn writers(&self, key: &Key, v: Value) -> &[(u32, u32)] {
        let m = self.writes.get_or_init(|| {
            let mut m = WriteIndex::default();
            for (t, txn) in self.h.txns.iter().enumerate() {
                for (o, op) in txn.ops.iter().enumerate() {
                    if let Some((k, v)) = op.written() {
                        m.entry((k.clone(), v))
                            .or_default()
                            .push((t as u32, o as u32));
                    }
                }
            }
            m
        });
        m.get(&(key.clone(), v)).map_or(&[][..], |s| s.as_slice())
    }

    /// The only transaction writing `key = v`, if exactly one op writes it.
    pub(super) fn unique_writer(&self, key: &Key, v: Value) -> Option<u32> {
        match self.writers(key, v) {
            [(w, _)] => Some(*w),
            _ => None,
        }
    }

    pub(super) fn list_reads(&self, key: &Key) -> &[(u32, u32)] {
        let m = self.list_reads.get_or_init(|| {
            let mut m: HashMap<Key, Vec<(u32, u32)>> = HashMap::default();
            for (t, txn) in self.h.txns.iter().enumerate() {
                if txn.status != Status::Ok {
                    continue;
                }
                for (o, op) in txn.ops.iter().enumerate() {
                    if let Op::ReadList {
                        key,
                        values: Some(_),
                    } = op
                    {
                        m.entry(key.clone()).or_default().push((t as u32, o as u32));
                    }
                }
            }
            m
        });
        m.get(key).map_or(&[][..], |v| v.as_slice())
    }

    pub(super) fn txn_ok(&self, t: u32) -> bool {
        (t as usize) < self.h.txns.len() && self.h.txns[t as usize].status == Status::Ok
    }

    pub(super) fn in_range(&self, t: u32) -> bool {
        (t as usize) < self.h.txns.len()
    }

    pub(super) fn writes_key(&self, t: u32, key: &Key) -> bool {
        self.h.txns[t as usize]
            .ops
            .iter()
            .any(|o| o.written().is_some_and(|(k, _)| k == key))
    }

    /// The external reads of `key` by ok `t`, as (op, version read): the
    /// version is `None` for the initial one, else the unique writer of the
    /// value (register, or a range read's row; a range read covering `key`
    /// without listing it read it as absent) or of the list's last element. A read after the
    /// transaction's own write (or append) of `key` is not external; a read
    /// whose version has no unique writer other than `t` is skipped.
    pub(super) fn external_reads(&self, t: u32, key: &Key) -> Vec<(u32, Option<u32>)> {
        let mut out = Vec::new();
        if !self.txn_ok(t) {
            return out;
        }
        let mut wrote = false;
        let mut own_appends: Vec<Value> = Vec::new();
        for (o, op) in self.h.txns[t as usize].ops.iter().enumerate() {
            match op {
                Op::Read { key: k, value } if k == key && !wrote => match value {
                    None => out.push((o as u32, None)),
                    Some(v) => {
                        if let Some(w) = self.unique_writer(key, *v).filter(|&w| w != t) {
                            out.push((o as u32, Some(w)));
                        }
                    }
                },
                Op::ReadList {
                    key: k,
                    values: Some(vs),
                } if k == key => {
                    // After its own appends a list read must end with them,
                    // in order; what precedes them is the version it read.
                    let own = own_appends.len();
                    let external = if own == 0 {
                        Some(&vs[..])
                    } else if vs.len() >= own && vs[vs.len() - own..] == own_appends[..] {
                        Some(&vs[..vs.len() - own])
                    } else {
                        None
                    };
                    match external.map(|e| e.last()) {
                        None => {}
                        Some(None) => out.push((o as u32, None)),
                        Some(Some(v)) => {
                            if let Some(w) = self.unique_writer(key, *v).filter(|&w| w != t) {
                                out.push((o as u32, Some(w)));
                            }
                        }
                    }
                }
                Op::RangeRead { lo, hi, rows } if lo <= key && key <= hi && !wrote => {
                    // A key in range and not listed was read as absent.
                    match rows.iter().find(|(k, _)| k == key) {
                        None => out.push((o as u32, None)),
                        Some((_, v)) => {
                            if let Some(w) = self.unique_writer(key, *v).filter(|&w| w != t) {
                                out.push((o as u32, Some(w)));
                            }
                        }
                    }
                }
                _ => {}
            }
            if let Op::Append { key: k, value } = op {
                if k == key {
                    own_appends.push(*value);
                }
            }
            if op.written().is_some_and(|(k, _)| k == key) {
                wrote = true;
            }
        }
        out
    }

    /// What list read `ro` of transaction `r` shows of other transactions:
    /// the list minus `r`'s own earlier appends to `key`, which must end it
    /// in order (`None` when they do not, or `r` wrote the key otherwise).
    pub(super) fn external_list(&self, r: u32, ro: u32, key: &Key) -> Option<Vec<Value>> {
        let ops = &self.h.txns[r as usize].ops;
        let Op::ReadList {
            values: Some(vs), ..
        } = &ops[ro as usize]
        else {
            return None;
        };
        let own: Vec<Value> = ops[..ro as usize]
            .iter()
            .filter_map(|p| match p {
                Op::Append { key: k, value } if k == key => Some(*value),
                _ => None,
            })
            .collect();
        let wrote_other = ops[..ro as usize]
            .iter()
            .any(|p| !matches!(p, Op::Append { .. }) && p.written().is_some_and(|(k, _)| k == key));
        let n = own.len();
        (!wrote_other && vs.len() >= n && vs[vs.len() - n..] == own[..])
            .then(|| vs[..vs.len() - n].to_vec())
    }

    /// `to` (ok) read `from`'s write of `key`: an external register read of
    /// its value, or any list read of `key` holding one of its elements.
    pub(super) fn reads_from(&self, to: u32, key: &Key, from: u32) -> bool {
        if from == to || !self.txn_ok(to) || !self.in_range(from) {
            return false;
        }
        if self
            .external_reads(to, key)
            .iter()
            .any(|&(_, v)| v == Some(from))
        {
            return true;
        }
        self.h.txns[to as usize].ops.iter().any(|op| match op {
            Op::ReadList {
                key: k,
                values: Some(vs),
            } if k == key => vs.iter().any(|v| self.unique_writer(key, *v) == Some(from)),
            _ => false,
        })
    }

    /// Checks that in every valid execution `from`'s version of `key`
    /// precedes `to`'s (and both are committed).
    pub(super) fn ww(
        &self,
        from: u32,
        to: u32,
        key: &Key,
        why: &WwWhy,
        use_dbts: bool,
    ) -> Result<(), String> {
        if !self.in_range(from) || !self.in_range(to) {
            return Err("no such transaction".into());
        }
        if from == to {
            return Err("a version does not precede itself".into());
        }
        let both_write = self.writes_key(from, key) && self.writes_key(to, key);
        match why {
            WwWhy::ReadModifyWrite => {
                if !self.writes_key(to, key) {
                    return Err(format!("T{to} does not write {key}"));
                }
                if !self
                    .external_reads(to, key)
                    .iter()
                    .any(|&(_, v)| v == Some(from))
                {
                    return Err(format!("T{to} (ok) did not read T{from}'s {key}"));
                }
                if !self.writes_key(from, key) {
                    return Err(format!("T{from} does not write {key}"));
                }
                Ok(())
            }
            WwWhy::FirstWriter => {
                if !both_write {
                    return Err(format!("T{from} and T{to} do not both write {key}"));
                }
                if !self.surely_committed(to) {
                    return Err(format!("T{to} need not commit"));
                }
                if !self
                    .external_reads(from, key)
                    .iter()
                    .any(|&(_, v)| v.is_none())
                {
                    return Err(format!("T{from} (ok) did not read {key} as absent"));
                }
                Ok(())
            }
            WwWhy::ListOrder => {
                for &(r, o) in self.list_reads(key) {
                    let Op::ReadList {
                        values: Some(vs), ..
                    } = &self.h.txns[r as usize].ops[o as usize]
                    else {
                        continue;
                    };
                    let i = vs
                        .iter()
                        .position(|v| self.unique_writer(key, *v) == Some(from));
                    let j = vs
                        .iter()
                        .rposition(|v| self.unique_writer(key, *v) == Some(to));
                    match (i, j) {
                        (Some(i), Some(j)) if i < j => return Ok(()),
                        // The read shows `from`'s element and none of
                        // `to`'s: lists only grow, so `to` (which appended
                        // to the key and committed) came after the version
                        // read, and `from` at or before it.
                        (Some(_), None)
                            if r != to && self.writes_key(to, key) && self.surely_committed(to) =>
                        {
                            return Ok(())
                        }
                        _ => {}
                    }
                }
                Err(format!(
                    "no ok list read of {key} shows T{from}'s element before T{to}'s (or without T{to}'s)"
                ))
            }
            WwWhy::DbTs => {
                if !use_dbts {
                    return Err("timestamps are not in use".into());
                }
                if !both_write {
                    return Err(format!("T{from} and T{to} do not both write {key}"));
                }
                if !self.surely_committed(from) || !self.surely_committed(to) {
                    return Err("both must commit".into());
                }
                let c = |t: u32| self.h.txns[t as usize].dbts.and_then(|d| d.commit);
                match (c(from), c(to)) {
                    (Some(a), Some(b)) if a < b => Ok(()),
                    _ => Err(format!("T{from}'s commit timestamp is not below T{to}'s")),
                }
            }
            WwWhy::Chain(links) => {
                if links.is_empty() {
                    return Err("empty chain".into());
                }
                let mut cur = from;
                for (c, w) in links {
                    self.ww(cur, *c, key, w, use_dbts)
                        .map_err(|e| format!("chain link T{cur} -> T{c}: {e}"))?;
                    cur = *c;
                }
                if cur != to {
                    return Err(format!("the chain ends at T{cur}, not T{to}"));
                }
                Ok(())
            }
        }
    }
}
