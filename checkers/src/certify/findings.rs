//! Non-cyclic refutations: one read no execution can produce.
//!
//! * [`Refutation::Finding`]: one read that no execution of any kind can
//!   produce (a value nobody wrote, a failed writer's value, an
//!   intermediate or future value, not seeing one's own write, two
//!   different values without a write between (forbidden from ra and si
//!   up), list reads that are not prefixes of one another or repeat an
//!   element). A duplicate written value breaks the history model's
//!   unique-value rule rather than the replay semantics; it is accepted at
//!   every level, as the lattice says. On a range read, each row is a read
//!   of its key and each key in range that is not listed a read of it as
//!   absent: a finding holds when one of them shows it (an aborted,
//!   intermediate, thin-air or future row; a key written before by the
//!   transaction that does not show its own last write; a key seen
//!   otherwise by an earlier read).

use rustc_hash::FxHashSet as HashSet;

use history::{Key, Level, Op, Status, Value};

use crate::anomaly::AnomalyKind;

use super::certificate::*;
use super::context::*;

pub(super) fn verify_finding(ctx: &Ctx, level: Level, kind: AnomalyKind, t: u32, o: u32) -> R<()> {
    let h = ctx.h;
    let fail = |why: String| {
        Err(CertError::BadFinding {
            kind,
            txn: t,
            op: o,
            why,
        })
    };
    // `Ok` when the finding's condition `ok` holds, else `why` it does not.
    let holds = |ok: bool, why: &str| if ok { Ok(()) } else { fail(why.into()) };
    if !ctx.in_range(t) || o as usize >= h.txns[t as usize].ops.len() {
        return fail("no such op".into());
    }
    let txn = &h.txns[t as usize];
    let op = &txn.ops[o as usize];
    if kind == AnomalyKind::DuplicateWrite {
        let Some((k, v)) = op.written() else {
            return fail("not a write".into());
        };
        let earlier = ctx.writers(k, v).iter().any(|&w| w < (t, o));
        return holds(earlier, &format!("no earlier write of {k} = {v}"));
    }
    if kind.is_cyclic() {
        return fail("a cyclic anomaly needs a Cycle refutation".into());
    }
    if txn.status != Status::Ok {
        return fail(format!("T{t} is not ok: its reads are no evidence"));
    }
    // Register writes of the key before this op, in order.
    let own_before = |key: &Key| -> Vec<Value> {
        txn.ops[..o as usize]
            .iter()
            .filter_map(|p| match p {
                Op::Write { key: k, value }
                | Op::Insert { key: k, value }
                | Op::Delete { key: k, value }
                    if k == key =>
                {
                    Some(*value)
                }
                _ => None,
            })
            .collect()
    };
    // The (key, value) pairs this op read.
    let read_vals: Vec<(Key, Value)> = match op {
        Op::Read {
            key,
            value: Some(v),
        } => vec![(key.clone(), *v)],
        Op::ReadList {
            key,
            values: Some(vs),
        } => vs.iter().map(|v| (key.clone(), *v)).collect(),
        Op::RangeRead { rows, .. } => rows.to_vec(),
        _ => Vec::new(),
    };
    match kind {
        AnomalyKind::ThinAirRead => {
            if read_vals.iter().any(|(k, v)| ctx.writers(k, *v).is_empty()) {
                return Ok(());
            }
            fail("every value read was written".into())
        }
        AnomalyKind::AbortedRead => {
            let aborted = read_vals.iter().any(|(k, v)| {
                let ws = ctx.writers(k, *v);
                !ws.is_empty()
                    && ws
                        .iter()
                        .all(|&(w, _)| h.txns[w as usize].status == Status::Fail)
            });
            if aborted {
                return Ok(());
            }
            fail("no value read has only failed writers".into())
        }
        AnomalyKind::IntermediateRead => {
            // A value whose only writer (another transaction) wrote the key
            // again later: a version it never installed.
            let intermediate = |key: &Key, v: Value| {
                let [(w, wo)] = ctx.writers(key, v) else {
                    return false;
                };
                let wops = &h.txns[*w as usize].ops;
                *w != t
                    && !matches!(wops[*wo as usize], Op::Append { .. })
                    && wops[*wo as usize + 1..].iter().any(|p| {
                        matches!(p, Op::Write { key: k, .. } | Op::Insert { key: k, .. } | Op::Delete { key: k, .. } if k == key)
                    })
            };
            if let Some(range) = Range::of(op) {
                return holds(
                    range.any_row(intermediate),
                    "no row shows a value its writer overwrote",
                );
            }
            if let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            {
                // A writer's run of elements that ends before its last
                // append to the key: a version it never installed.
                let cut = vs.iter().enumerate().any(|(i, v)| {
                    let [(w, wo)] = ctx.writers(key, *v) else {
                        return false;
                    };
                    let next_is_w = vs
                        .get(i + 1)
                        .is_some_and(|n| ctx.unique_writer(key, *n) == Some(*w));
                    *w != t
                        && !next_is_w
                        && h.txns[*w as usize].ops[*wo as usize + 1..]
                            .iter()
                            .any(|p| matches!(p, Op::Append { key: k, .. } if k == key))
                });
                return holds(
                    cut,
                    "no writer's run of elements stops before its last append",
                );
            }
            let Op::Read {
                key,
                value: Some(v),
            } = op
            else {
                return fail("not a register read of a value".into());
            };
            let [(w, _)] = ctx.writers(key, *v) else {
                return fail("the value has no unique writer".into());
            };
            if intermediate(key, *v) {
                return Ok(());
            }
            fail(format!(
                "T{w}'s write of {key} = {v} is its final one (or is T{t}'s own)"
            ))
        }
        AnomalyKind::FutureRead => {
            // A value only this transaction writes, later.
            let later = |key: &Key, v: Value| matches!(ctx.writers(key, v), [(w, wo)] if *w == t && *wo > o);
            if let Some(range) = Range::of(op) {
                return holds(
                    range.any_row(later),
                    "no row's value is written only later by the same transaction",
                );
            }
            if let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            {
                let future = vs.iter().any(|v| later(key, *v));
                // Or its own element shows up in what it read of others.
                let own_in_snapshot = ctx.external_list(t, o, key).is_some_and(|e| {
                    e.iter()
                        .any(|v| matches!(ctx.writers(key, *v), [(w, _)] if *w == t))
                });
                return holds(
                    future || own_in_snapshot,
                    "no element is appended only later by the same transaction",
                );
            }
            let Op::Read {
                key,
                value: Some(v),
            } = op
            else {
                return fail("not a register read of a value".into());
            };
            if later(key, *v) {
                return Ok(());
            }
            fail("the value is not written only later by the same transaction".into())
        }
        AnomalyKind::NotMyOwnWrite | AnomalyKind::NotMyLastWrite => {
            // Having written `mine` to a key before, a read of it shows
            // `shown`, not the last of them: one of them (not-my-last-write)
            // or none (not-my-own-write).
            let of_kind = |mine: &[Value], shown: Option<Value>| {
                let is_own = shown.is_some_and(|v| mine.contains(&v));
                matches!(
                    (kind, is_own),
                    (AnomalyKind::NotMyOwnWrite, false) | (AnomalyKind::NotMyLastWrite, true)
                )
            };
            if let Some(range) = Range::of(op) {
                // A key it wrote before, listed (its row) or in range (read
                // as absent when not listed), that does not show its own
                // last write: a value it wrote earlier (not-my-last-write)
                // or none of its own (not-my-own-write).
                let wrong = txn.ops[..o as usize].iter().any(|p| {
                    let (Op::Write { key, .. } | Op::Insert { key, .. } | Op::Delete { key, .. }) =
                        p
                    else {
                        return false;
                    };
                    let Some(shown) = range.shows(key) else {
                        return false; // not read
                    };
                    let mine = own_before(key);
                    shown != mine.last().copied() && of_kind(&mine, shown)
                });
                return holds(
                    wrong,
                    &format!("T{t}'s range read shows its own last write of each key it wrote"),
                );
            }
            if let Op::ReadList {
                key,
                values: Some(_),
            } = op
            {
                // After its own appends, a list read must end with them.
                let appended = txn.ops[..o as usize]
                    .iter()
                    .any(|p| matches!(p, Op::Append { key: k, .. } if k == key));
                return holds(
                    appended && ctx.external_list(t, o, key).is_none(),
                    &format!("T{t}'s read of {key} ends with its own appends"),
                );
            }
            let Op::Read { key, value } = op else {
                return fail("not a register read".into());
            };
            let mine = own_before(key);
            let Some(&last) = mine.last() else {
                return fail(format!("T{t} did not write {key} before"));
            };
            if *value == Some(last) {
                return fail("the read returns its own last write".into());
            }
            if of_kind(&mine, *value) {
                return Ok(());
            }
            fail("the read's value does not match the kind".into())
        }
        AnomalyKind::NonRepeatableRead => {
            if level == Level::Rc {
                return Err(CertError::NotForbidden {
                    level,
                    why: "rc allows non-repeatable reads".into(),
                });
            }
            if let Some(range) = Range::of(op) {
                // A key this range read saw (a listed row, or absent when
                // not listed) that an earlier read of the transaction saw
                // otherwise, with no write of its own between.
                let before = &txn.ops[..o as usize];
                let changed = before.iter().enumerate().any(|(i, p)| {
                    let wrote = |k: &Key| {
                        before[i..]
                            .iter()
                            .any(|q| q.written().is_some_and(|(wk, _)| wk == k))
                    };
                    match p {
                        Op::Read { key, value } => {
                            range.covers(key) && !wrote(key) && range.row(key) != *value
                        }
                        Op::RangeRead { .. } => {
                            let earlier = Range::of(p).expect("a range read");
                            let differs = |a: &Range, b: &Range| {
                                a.any_row(|k, v| b.covers(k) && !wrote(k) && b.row(k) != Some(v))
                            };
                            differs(&earlier, &range) || differs(&range, &earlier)
                        }
                        _ => false,
                    }
                });
                return holds(changed, "no key of the range was seen otherwise earlier");
            }
            if let Op::ReadList {
                key,
                values: Some(_),
            } = op
            {
                // Two reads of one list that show different versions of
                // other transactions' appends.
                let mine = ctx.external_list(t, o, key);
                let other = mine.is_some()
                    && (0..o).any(|p| {
                        matches!(&txn.ops[p as usize], Op::ReadList { key: k, values: Some(_) } if k == key)
                            && ctx
                                .external_list(t, p, key)
                                .is_some_and(|e| Some(&e) != mine.as_ref())
                    });
                return holds(
                    other,
                    &format!("no earlier read of list {key} showed another version"),
                );
            }
            let Op::Read { key, value } = op else {
                return fail("not a register read".into());
            };
            let wrote = txn.ops[..o as usize]
                .iter()
                .any(|p| p.written().is_some_and(|(k, _)| k == key));
            if wrote {
                return fail(format!("T{t} wrote {key} before this read"));
            }
            let other = txn.ops[..o as usize].iter().any(|p| match p {
                Op::Read { key: k, value: v } => k == key && v != value,
                Op::RangeRead { .. } => {
                    let earlier = Range::of(p).expect("a range read");
                    earlier.covers(key) && earlier.row(key) != *value
                }
                _ => false,
            });
            if other {
                return Ok(());
            }
            fail(format!("no earlier read of {key} returned another value"))
        }
        AnomalyKind::IncompatibleOrder => {
            let Op::ReadList {
                key,
                values: Some(_),
            } = op
            else {
                return fail("not a list read".into());
            };
            let external = |r: u32, ro: u32| ctx.external_list(r, ro, key);
            let Some(l1) = external(t, o) else {
                return fail(format!(
                    "T{t}'s read of {key} does not end with its own appends"
                ));
            };
            // One transaction's appends are installed together and in
            // order: each writer's elements in a list are one run that
            // starts with its first append to the key, in append order.
            let split = {
                let mut runs: Vec<u32> = Vec::new();
                let mut bad = false;
                let mut i = 0;
                while i < l1.len() && !bad {
                    let Some(w) = ctx.unique_writer(key, l1[i]) else {
                        i += 1;
                        continue;
                    };
                    if runs.contains(&w) {
                        bad = true;
                        break;
                    }
                    runs.push(w);
                    let mine: Vec<Value> = h.txns[w as usize]
                        .ops
                        .iter()
                        .filter_map(|p| match p {
                            Op::Append { key: k, value } if k == key => Some(*value),
                            _ => None,
                        })
                        .collect();
                    let mut j = 0;
                    while i < l1.len() && ctx.unique_writer(key, l1[i]) == Some(w) {
                        if mine.get(j) != Some(&l1[i]) {
                            bad = true;
                        }
                        i += 1;
                        j += 1;
                    }
                }
                bad
            };
            if split {
                return Ok(());
            }
            // Every read, own appends included (a read after them shows the
            // version its transaction builds), is a version of the key: any
            // two are prefixes of one another.
            let prefix = |a: &[Value], b: &[Value]| a.len() <= b.len() && *a == b[..a.len()];
            let whole = |r: u32, ro: u32| match &h.txns[r as usize].ops[ro as usize] {
                Op::ReadList {
                    values: Some(vs), ..
                } if external(r, ro).is_some() => Some(vs),
                _ => None,
            };
            let Some(w1) = whole(t, o) else {
                return fail(format!("T{t}'s read of {key} is not a list read"));
            };
            for &(r, ro) in ctx.list_reads(key) {
                if let Some(w2) = whole(r, ro) {
                    if !prefix(w1, w2) && !prefix(w2, w1) {
                        return Ok(());
                    }
                }
            }
            fail(format!(
                "every ok list read of {key} is compatible with this one"
            ))
        }
        AnomalyKind::DuplicateElements => {
            let Op::ReadList {
                values: Some(l), ..
            } = op
            else {
                return fail("not a list read".into());
            };
            let mut seen = HashSet::default();
            if l.iter().any(|v| !seen.insert(*v)) {
                return Ok(());
            }
            fail("no element repeats".into())
        }
        _ => fail("not a non-cyclic anomaly".into()),
    }
}

/// A range read as the points it reads: each row it lists is a read of its
/// key, and each other key in `lo..=hi` a read of it as absent.
struct Range<'a> {
    lo: &'a Key,
    hi: &'a Key,
    rows: &'a [(Key, Value)],
}

impl<'a> Range<'a> {
    fn of(op: &'a Op) -> Option<Range<'a>> {
        match op {
            Op::RangeRead { lo, hi, rows } => Some(Range { lo, hi, rows }),
            _ => None,
        }
    }

    /// `k` is in `lo..=hi`.
    fn covers(&self, k: &Key) -> bool {
        self.lo <= k && k <= self.hi
    }

    /// The value of the row listed for `k` (the first, if several).
    fn row(&self, k: &Key) -> Option<Value> {
        self.rows.iter().find(|(rk, _)| rk == k).map(|(_, v)| *v)
    }

    /// What it read of `k`: its row's value, `Some(None)` when `k` is in
    /// range but not listed (absent), `None` when it does not read `k`.
    fn shows(&self, k: &Key) -> Option<Option<Value>> {
        let row = self.row(k);
        (row.is_some() || self.covers(k)).then_some(row)
    }

    /// Some row (a read of a value) satisfies `f`.
    fn any_row(&self, mut f: impl FnMut(&Key, Value) -> bool) -> bool {
        self.rows.iter().any(|(k, v)| f(k, *v))
    }
}
