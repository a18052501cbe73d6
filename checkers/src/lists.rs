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
//! Anomalies only lists can show: two reads that are not prefixes of one
//! another (incompatible order), an element twice in one read (duplicate
//! elements), a transaction's appends to a key split up or incomplete in a
//! read, and thin-air or aborted elements anywhere in a list.

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
}

/// Reads every committed transaction's list reads.
pub fn list_orders(ix: &Index) -> ListOrders {
    let h = ix.history;
    let mut out = ListOrders::default();
    // Longest read per key: (txn, op, values).
    let mut longest: FxHashMap<u32, (u32, u32, &[Value])> = FxHashMap::default();
    let mut reads: Vec<(u32, u32, u32, &[Value])> = Vec::new();
    for t in ix.committed_txns() {
        let txn = &h.txns[t as usize];
        if txn.status != Status::Ok {
            continue; // an `info` transaction's reads tell nothing
        }
        for (o, op) in txn.ops.iter().enumerate() {
            let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            else {
                continue;
            };
            let Some(k) = ix.key_id(key) else { continue };
            // Internal reads (after the transaction's own append) are not
            // observations of other transactions' versions.
            let own_before = txn.ops[..o]
                .iter()
                .any(|p| matches!(p, Op::Append { key: pk, .. } if pk == key));
            if own_before {
                continue;
            }
            let finding = |kind, other| Finding {
                kind,
                txn: t,
                op: o as u32,
                other,
                key: k,
            };
            // Duplicates.
            let mut sorted: Vec<Value> = vs.clone();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                out.findings
                    .push(finding(AnomalyKind::DuplicateElements, None));
                continue;
            }
            // Each element (the last is the index's business) must have a
            // committed writer; each writer's appends must be contiguous and
            // complete.
            let mut bad = false;
            let mut segs: Vec<u32> = Vec::new();
            for (i, v) in vs.iter().enumerate() {
                let loc = ix.writer.get(&(k, *v)).copied();
                let last = i + 1 == vs.len();
                match loc {
                    None if !last => {
                        out.findings.push(finding(AnomalyKind::ThinAirRead, None));
                        bad = true;
                        break;
                    }
                    Some(l) if !last && h.txns[l.txn as usize].status == Status::Fail => {
                        out.findings
                            .push(finding(AnomalyKind::AbortedRead, Some(l.txn)));
                        bad = true;
                        break;
                    }
                    Some(l) if segs.last() != Some(&l.txn) => {
                        if segs.contains(&l.txn) {
                            out.findings
                                .push(finding(AnomalyKind::IncompatibleOrder, Some(l.txn)));
                            bad = true;
                            break;
                        }
                        // The previous writer's segment must have ended with
                        // its last append to this key.
                        if i > 0 {
                            if let Some(p) = ix.writer.get(&(k, vs[i - 1])) {
                                if !p.last && p.txn != l.txn {
                                    out.findings
                                        .push(finding(AnomalyKind::IntermediateRead, Some(p.txn)));
                                    bad = true;
                                    break;
                                }
                            }
                        }
                        segs.push(l.txn);
                    }
                    Some(_) => {}
                    None => {}
                }
            }
            if bad {
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
    }
    out
}
