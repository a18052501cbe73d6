//! Elle's list-append: the version order written down by the data itself.
//!
//! Appends accumulate, so a read of a list shows every version of the key
//! up to the one it read: `[1, 2, 3]` says the appends of 1, 2 and 3 were
//! installed in that order, and the writer of 3 installed the version read.
//! The longest read of a key therefore fixes the order of every append it
//! contains, and every other read must be a prefix of it. An append that no
//! read shows came after every version anyone read. With the order known,
//! SER and SI are decided by one cycle search, as for mini-transactions.
//!
//! A read after the transaction's own appends to the key must end with
//! exactly them (the index reports it when not). It shows the version the
//! transaction is building: the committed version its first append went on
//! (its *base*), then its own appends so far; the transaction installs the
//! base followed by all its appends. So the whole read, own appends
//! included, is a version of the key like any other read here, as in Elle
//! (see docs/levels.md, "A list read after the transaction's own appends").
//!
//! Anomalies only lists can show: two reads that are not prefixes of one
//! another (incompatible order), an element twice in one read (duplicate
//! elements), a transaction's appends to a key split up, incomplete or out
//! of order in a read, and thin-air, aborted or future elements anywhere
//! in a list.

use rustc_hash::FxHashMap;

use history::{Op, Status, Value};

use crate::anomaly::AnomalyKind;
use crate::index::{Finding, Index};

/// What the list reads of a history say.
#[derive(Default, Debug)]
pub struct ListOrders {
    /// Per key, the writers of its observed versions, in order.
    pub chains: FxHashMap<u32, Vec<u32>>,
    /// Anomalies found in list reads (beyond what the index finds from each
    /// read's last element).
    pub findings: Vec<Finding>,
    /// Per chained key, the read (transaction, op) that shows the chain,
    /// to explain the order.
    pub shown_by: FxHashMap<u32, (u32, u32)>,
}

/// Reads every committed transaction's list reads.
///
/// A read after the transaction's own appends to the key shows the version
/// the transaction is building (its base, then its appends so far): its
/// base is checked like any other read, and the whole list is a version.
pub fn list_orders(ix: &Index) -> ListOrders {
    let h = ix.history;
    let mut out = ListOrders::default();
    // How many appends each (transaction, key) made.
    let mut appends: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    for (t, txn) in h.txns.iter().enumerate() {
        for op in &txn.ops {
            if let Op::Append { key, .. } = op {
                if let Some(k) = ix.key_id(key) {
                    *appends.entry((t as u32, k)).or_insert(0) += 1;
                }
            }
        }
    }
    // Longest read per key: (txn, op, values).
    let mut longest: FxHashMap<u32, (u32, u32, &[Value])> = FxHashMap::default();
    let mut reads: Vec<(u32, u32, u32, &[Value])> = Vec::new();
    let mut own: FxHashMap<u32, u32> = FxHashMap::default();
    let mut sorted: Vec<Value> = Vec::new();
    for t in ix.committed_txns() {
        let txn = &h.txns[t as usize];
        if txn.status != Status::Ok {
            continue; // an `info` transaction's reads tell nothing
        }
        own.clear();
        for (o, op) in txn.ops.iter().enumerate() {
            if let Op::Append { key, .. } = op {
                if let Some(k) = ix.key_id(key) {
                    *own.entry(k).or_insert(0) += 1;
                }
                continue;
            }
            let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            else {
                continue;
            };
            let Some(k) = ix.key_id(key) else { continue };
            let finding = |kind, other| Finding {
                kind,
                txn: t,
                op: o as u32,
                other,
                key: k,
            };
            // Duplicates.
            sorted.clear();
            sorted.extend_from_slice(vs);
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                out.findings
                    .push(finding(AnomalyKind::DuplicateElements, None));
                continue;
            }
            // An element written twice names no one writer: the read
            // orders nothing (the duplicate write is the anomaly).
            if vs.iter().any(|v| ix.duplicated(k, *v)) {
                continue;
            }
            // After its own appends, the read must end with them (else the
            // index reports it); the rest is the external observation.
            let c = own.get(&k).copied().unwrap_or(0) as usize;
            // Exactly its own appends so far, in order (no element
            // repeats here).
            let mut prev = None;
            let tail_is_own = vs.len() >= c
                && vs[vs.len() - c..].iter().all(|v| {
                    let Some(l) = ix
                        .writer
                        .get(&(k, *v))
                        .filter(|l| l.txn == t && l.op < o as u32)
                    else {
                        return false;
                    };
                    let in_order = prev.is_none_or(|p| p < l.op);
                    prev = Some(l.op);
                    in_order
                });
            if !tail_is_own {
                continue;
            }
            if !segments_ok(
                ix,
                t,
                k,
                &vs[..vs.len() - c],
                &appends,
                &mut |kind, other| out.findings.push(finding(kind, other)),
            ) {
                continue;
            }
            reads.push((k, t, o as u32, vs));
            let e = longest.entry(k).or_insert((t, o as u32, vs));
            if vs.len() > e.2.len() {
                *e = (t, o as u32, vs);
            }
        }
    }
    // Every read must be a prefix of the longest.
    let mut incompatible: Vec<u32> = Vec::new();
    for &(k, t, o, vs) in &reads {
        let (_, _, long) = longest[&k];
        if long[..vs.len()] != *vs && !incompatible.contains(&k) {
            incompatible.push(k);
            out.findings.push(Finding {
                kind: AnomalyKind::IncompatibleOrder,
                txn: t,
                op: o,
                other: None,
                key: k,
            });
        }
    }
    for (&k, &(_, _, vs)) in &longest {
        if incompatible.contains(&k) {
            continue;
        }
        let mut chain: Vec<u32> = Vec::new();
        for v in vs {
            if let Some(l) = ix.writer.get(&(k, *v)) {
                if chain.last() != Some(&l.txn) && ix.committed[l.txn as usize] {
                    chain.push(l.txn);
                }
            }
        }
        out.chains.insert(k, chain);
        let (t, o, _) = longest[&k];
        out.shown_by.insert(k, (t, o));
    }
    out
}

/// Checks the external part `vs` of a list read of `k` by `t`: each element
/// (the last is the index's business) has a committed writer other than
/// `t`, and each writer's appends form one segment holding all of its
/// appends to `k` in order. Reports what is wrong through `report`; false
/// when something is.
fn segments_ok(
    ix: &Index,
    t: u32,
    k: u32,
    vs: &[Value],
    appends: &FxHashMap<(u32, u32), u32>,
    report: &mut dyn FnMut(AnomalyKind, Option<u32>),
) -> bool {
    let h = ix.history;
    let mut segs: Vec<u32> = Vec::new();
    // The current segment: its start and the op of its latest element.
    let mut seg_start = 0usize;
    let mut prev_op = 0u32;
    for i in 0..=vs.len() {
        let loc = vs.get(i).map(|v| ix.writer.get(&(k, *v)).copied());
        let last = i + 1 == vs.len();
        let w = match loc {
            Some(None) if last => return false, // thin air: the index reports it
            Some(None) => {
                report(AnomalyKind::ThinAirRead, None);
                return false;
            }
            Some(Some(l)) if l.txn == t => {
                if !last {
                    report(AnomalyKind::FutureRead, None);
                }
                return false;
            }
            Some(Some(l)) if h.txns[l.txn as usize].status == Status::Fail => {
                if !last {
                    report(AnomalyKind::AbortedRead, Some(l.txn));
                }
                return false;
            }
            Some(Some(l)) => Some(l),
            None => None,
        };
        let same = matches!((w, segs.last()), (Some(l), Some(&s)) if l.txn == s);
        if same {
            let l = w.expect("same writer");
            if l.op <= prev_op {
                report(AnomalyKind::IncompatibleOrder, Some(l.txn));
                return false;
            }
            prev_op = l.op;
            continue;
        }
        // A segment ends here: it must hold all of its writer's appends.
        if let Some(&p) = segs.last() {
            let len = (i - seg_start) as u32;
            if len != appends.get(&(p, k)).copied().unwrap_or(0) {
                let ends_early = ix.writer.get(&(k, vs[i - 1])).is_some_and(|l| !l.last);
                if ends_early {
                    // At the end of the list the index reports it.
                    if i < vs.len() {
                        report(AnomalyKind::IntermediateRead, Some(p));
                    }
                } else {
                    report(AnomalyKind::IncompatibleOrder, Some(p));
                }
                return false;
            }
        }
        let Some(l) = w else { break };
        if segs.contains(&l.txn) {
            report(AnomalyKind::IncompatibleOrder, Some(l.txn));
            return false;
        }
        segs.push(l.txn);
        seg_start = i;
        prev_op = l.op;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkers_testkit::build::{a, rl};
    use history::{History, Txn};
    fn ok(id: u64, ops: Vec<Op>) -> Txn {
        Txn::new(id, id, Status::Ok, ops)
    }
    fn kinds(h: &History) -> Vec<AnomalyKind> {
        list_orders(&Index::new(h))
            .findings
            .iter()
            .map(|f| f.kind)
            .collect()
    }

    #[test]
    fn a_writers_appends_must_all_show_in_order() {
        use AnomalyKind::*;
        let two = ok(0, vec![a(1, 1), a(1, 2)]);
        let read = |vs: &[i64]| {
            kinds(&History::from_txns(vec![
                two.clone(),
                ok(1, vec![a(1, 3)]),
                ok(2, vec![rl(1, vs)]),
            ]))
        };
        assert_eq!(read(&[1, 2, 3]), vec![]);
        assert_eq!(read(&[2, 3]), vec![IncompatibleOrder], "missing its first");
        assert_eq!(read(&[2, 1, 3]), vec![IncompatibleOrder], "out of order");
        assert_eq!(read(&[1, 3]), vec![IntermediateRead], "missing its last");
        assert_eq!(read(&[1, 3, 2]), vec![IntermediateRead], "split up");
    }

    #[test]
    fn an_element_from_the_readers_future_is_a_future_read() {
        let h = History::from_txns(vec![
            ok(0, vec![a(1, 1)]),
            ok(1, vec![rl(1, &[5, 1]), a(1, 5)]),
        ]);
        assert_eq!(kinds(&h), vec![AnomalyKind::FutureRead]);
    }

    #[test]
    fn a_read_after_own_appends_is_the_version_its_transaction_builds() {
        let h = History::from_txns(vec![
            ok(0, vec![a(1, 1)]),
            ok(1, vec![a(1, 2)]),
            ok(2, vec![a(1, 3), rl(1, &[1, 2, 3])]),
            ok(3, vec![rl(1, &[1])]),
        ]);
        let lo = list_orders(&Index::new(&h));
        assert!(lo.findings.is_empty(), "{:?}", lo.findings);
        assert_eq!(lo.chains[&0], vec![0, 1, 2]);
        // Its appends went on the empty list, yet another read puts T0's
        // append before them: two versions that are not one history.
        let h = History::from_txns(vec![
            ok(0, vec![a(1, 1)]),
            ok(1, vec![a(1, 3), rl(1, &[3])]),
            ok(2, vec![rl(1, &[1, 3])]),
        ]);
        assert_eq!(kinds(&h), vec![AnomalyKind::IncompatibleOrder]);
    }
}
