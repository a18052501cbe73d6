//! Turning a refutation into a small counterexample (PolySI §4.6 in
//! spirit): when no version order works but no single forced cycle shows
//! it, find a small set of transactions that is refuted on its own, then
//! show the clearest cycle it must contain.
//!
//! A *sub-history* keeps some transactions and drops every read of a value
//! written outside them. Dropping reads and transactions only removes
//! constraints, so a refuted sub-history proves the whole history fails:
//! every counterexample shown is real. The set is grown from a seed (the
//! cycle that refuted a guess) until refuted, then shrunk one transaction at
//! a time. On the final few transactions every choice of version order is
//! tried, and the shortest cycle over all of them is shown; its guessed
//! edges are explained as "either order closes a cycle".

use std::collections::BTreeSet;
use std::time::Instant;

use history::{History, Key, Level, Op, Status, Txn};
use rustc_hash::FxHashSet;

use crate::cycles::{find_cycles, Cycle};
use crate::depgraph::{Dep, Why};
use crate::explain::cycle_anomaly;
use crate::general::{check_general, graph_of, General, GeneralOptions};
use crate::index::{Index, INIT};
use crate::polygraph::Polygraph;
use crate::report::Anomaly;

/// Largest set we try to refute on its own.
const MAX_SET: usize = 48;
/// Largest number of open choices we enumerate for the final picture.
const MAX_ENUM: usize = 12;

/// The sub-history of the transactions `set` (indices into `ix`).
pub fn sub_history(ix: &Index, set: &[u32]) -> History {
    let inside: FxHashSet<u32> = set.iter().copied().collect();
    let h = ix.history;
    let keep_value = |k: &Key, v: Option<i64>| -> bool {
        match v {
            None => true,
            Some(v) => match ix.key_id(k).and_then(|kid| ix.writer.get(&(kid, v))) {
                Some(w) => inside.contains(&w.txn),
                None => true, // thin air stays thin air
            },
        }
    };
    let mut txns = Vec::with_capacity(set.len());
    let mut sorted: Vec<u32> = set.to_vec();
    sorted.sort_unstable();
    // Keys written inside the set, for range reads.
    let mut written: BTreeSet<Key> = BTreeSet::new();
    for &t in &sorted {
        for op in &h.txns[t as usize].ops {
            if let Some((k, _)) = op.written() {
                written.insert(k.clone());
            }
        }
    }
    for &t in &sorted {
        let orig = &h.txns[t as usize];
        let mut ops = Vec::with_capacity(orig.ops.len());
        for op in &orig.ops {
            match op {
                Op::Read { key, value } => {
                    if keep_value(key, *value) {
                        ops.push(op.clone());
                    }
                }
                Op::ReadList { key, values } => {
                    // Keep the elements written inside the set: filtering
                    // every read alike keeps prefixes prefixes.
                    if keep_value(key, values.as_ref().and_then(|v| v.last().copied())) {
                        let values = values.as_ref().map(|vs| {
                            vs.iter()
                                .copied()
                                .filter(|&v| keep_value(key, Some(v)))
                                .collect()
                        });
                        ops.push(Op::ReadList {
                            key: key.clone(),
                            values,
                        });
                    }
                }
                Op::RangeRead { lo, hi, rows } => {
                    for (k, v) in rows {
                        if keep_value(k, Some(*v)) {
                            ops.push(Op::Read {
                                key: k.clone(),
                                value: Some(*v),
                            });
                        }
                    }
                    for k in written.range(lo.clone()..=hi.clone()) {
                        if !rows.iter().any(|(rk, _)| rk == k) {
                            ops.push(Op::Read {
                                key: k.clone(),
                                value: None,
                            });
                        }
                    }
                }
                _ => ops.push(op.clone()),
            }
        }
        let mut x = Txn {
            ops,
            ..orig.clone()
        };
        // Committed in the whole history: keep it committed here.
        if ix.committed[t as usize] {
            x.status = Status::Ok;
        }
        txns.push(x);
    }
    History::from_txns(txns)
}

fn refuted(ix: &Index, set: &[u32], level: Level, deadline: Option<Instant>) -> bool {
    let h = sub_history(ix, set);
    let sub = Index::new(&h);
    if !sub.findings.is_empty() {
        return true;
    }
    let opts = GeneralOptions {
        deadline,
        ..GeneralOptions::default()
    };
    matches!(
        check_general(&sub, level, &opts),
        General::Forced { .. } | General::Refuted { .. }
    )
}

/// Transactions related to `t`: whom it read from, who read it, and who
/// wrote a key it wrote or read.
fn neighbours(ix: &Index, t: u32, out: &mut BTreeSet<u32>) {
    for r in ix.reads(t) {
        if r.writer != INIT {
            out.insert(r.writer);
        }
    }
    let keys: FxHashSet<u32> = ix
        .writes(t)
        .iter()
        .map(|w| w.key)
        .chain(ix.reads(t).iter().map(|r| r.key))
        .collect();
    for u in ix.committed_txns() {
        if u == t {
            continue;
        }
        if ix.reads(u).iter().any(|r| r.writer == t)
            || ix.writes(u).iter().any(|w| keys.contains(&w.key))
        {
            out.insert(u);
        }
    }
}

/// A small counterexample for a refuted history, grown from `seed`.
pub fn counterexample(
    ix: &Index,
    level: Level,
    seed: &[u32],
    deadline: Option<Instant>,
) -> Option<Anomaly> {
    let mut set: BTreeSet<u32> = seed
        .iter()
        .copied()
        .filter(|&t| ix.committed[t as usize])
        .collect();
    if set.is_empty() {
        return None;
    }
    // Grow until refuted.
    loop {
        let v: Vec<u32> = set.iter().copied().collect();
        if refuted(ix, &v, level, deadline) {
            break;
        }
        if set.len() >= MAX_SET || deadline.is_some_and(|d| Instant::now() > d) {
            return None;
        }
        let mut more = set.clone();
        for &t in &v {
            neighbours(ix, t, &mut more);
        }
        if more.len() == set.len() {
            return None;
        }
        // Add the nearest first, staying under the cap.
        for t in more {
            if set.len() >= MAX_SET {
                break;
            }
            set.insert(t);
        }
    }
    // Shrink one transaction at a time.
    let mut cur: Vec<u32> = set.into_iter().collect();
    let mut i = 0;
    while i < cur.len() {
        let mut trial = cur.clone();
        trial.remove(i);
        if !trial.is_empty() && refuted(ix, &trial, level, deadline) {
            cur = trial;
        } else {
            i += 1;
        }
    }
    picture(ix, &cur, level)
}

/// The clearest cycle of a refuted sub-history, over every choice of order.
fn picture(ix: &Index, set: &[u32], level: Level) -> Option<Anomaly> {
    let h = sub_history(ix, set);
    let sub = Index::new(&h);
    let model = crate::general::model_of(level);
    let orders = crate::depgraph::Orders::of(level);
    let chains = if h.has_lists() {
        crate::lists::list_orders(&sub).chains
    } else {
        Default::default()
    };
    let p = Polygraph::build(&sub, model, orders, &chains, true, 1 << 20).ok()?;
    let n = p.constraints.len();
    let mut best: Option<(usize, usize, Cycle)> = None;
    let mut consider = |c: Cycle| {
        let guessed = c
            .edges
            .iter()
            .filter(|e| e.label.why == Why::Chosen)
            .count();
        let key = (c.edges.len(), guessed);
        if best.as_ref().is_none_or(|b| key < (b.0, b.1)) {
            best = Some((key.0, key.1, c));
        }
    };
    if n <= MAX_ENUM {
        for mask in 0u32..(1u32 << n) {
            let chosen = (0..n).flat_map(|c| p.side(c, mask & (1 << c) != 0).iter().copied());
            let dg = graph_of(&p, p.known.iter().copied().chain(chosen));
            for c in find_cycles(&dg, orders) {
                consider(c);
            }
        }
    } else {
        let dg = graph_of(&p, p.known.iter().copied());
        for c in find_cycles(&dg, orders) {
            consider(c);
        }
    }
    let (_, _, cycle) = best?;
    let mut a = cycle_anomaly(&sub, &cycle);
    // Every transaction of the refuted set matters, not only the cycle's.
    for t in 0..sub.len() as u32 {
        if !a.txns.iter().any(|v| v.id == h.txns[t as usize].id) {
            a.txns.push(crate::explain::txn_view(&sub, t));
        }
    }
    // Show the transactions as the history has them, all ops included.
    for tv in &mut a.txns {
        if let Some(orig) = ix.history.txns.iter().find(|t| t.id == tv.id) {
            tv.ops = orig.ops.clone();
            tv.status = orig.status;
        }
    }
    for (e, te) in a.edges.iter_mut().zip(&cycle.edges) {
        if te.label.why == Why::Chosen && matches!(te.label.dep, Dep::Ww | Dep::Rw) {
            e.reason
                .push_str(" [a guessed order: the opposite order closes a cycle too]");
        }
    }
    a.summary = format!("{} (no version order avoids it)", a.summary);
    Some(a)
}
