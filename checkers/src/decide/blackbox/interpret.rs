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

use crate::decide::blackbox::general::types::{
    graph_of, model_of, General, GeneralOptions, Search,
};
use crate::decide::blackbox::polygraph::Polygraph;
use crate::decide::cycles::{find_cycles, Cycle};
use crate::decide::depgraph::{Dep, Why};
use crate::explain::cycle_anomaly;
use crate::index::{Index, INIT};
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
            Some(v) => match ix.key_id(k).map(|kid| (kid, ix.writer.get(&(kid, v)))) {
                // Written more than once: the read names no writer.
                Some((kid, _)) if ix.duplicated(kid, v) => false,
                Some((_, Some(w))) => inside.contains(&w.txn),
                _ => true, // thin air stays thin air
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
                    for (k, v) in rows.iter() {
                        if keep_value(k, Some(*v)) {
                            ops.push(Op::Read {
                                key: k.clone(),
                                value: Some(*v),
                            });
                        }
                    }
                    // An inverted range (`lo > hi`) is empty.
                    let covered = (lo <= hi).then(|| written.range(lo.clone()..=hi.clone()));
                    for k in covered.into_iter().flatten() {
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
        if ix.committed[t as usize] && x.status != Status::Ok {
            // An observed `info` transaction committed, but when is unknown
            // (its end orders nothing) and its reads tell nothing.
            x.status = Status::Ok;
            x.end = None;
            x.ops.retain(|o| !o.is_read());
        }
        txns.push(x);
    }
    History::from_txns(txns)
}

fn refuted(ix: &Index, set: &[u32], level: Level, deadline: Option<Instant>) -> bool {
    let h = sub_history(ix, set);
    let sub = Index::new(&h);
    // A duplicate write is no counterexample a sub-history can prove: the
    // SER and SI replay semantics accept it (reads of it are not resolved).
    if sub
        .findings
        .iter()
        .any(|f| f.kind != crate::anomaly::AnomalyKind::DuplicateWrite)
    {
        return true;
    }
    let opts = GeneralOptions {
        deadline,
        local: false,
        ..GeneralOptions::default()
    };
    matches!(
        opts.search(&sub, level),
        General::Forced { .. } | General::Refuted { .. }
    )
}

/// Who touches what, for growing neighbourhoods without scanning the whole
/// history: the writers of each key and the readers of each version.
pub struct Neighbourhood {
    writers: Vec<Vec<u32>>,
    readers: rustc_hash::FxHashMap<(u32, u32), Vec<u32>>,
}

impl Neighbourhood {
    /// Indexes the committed transactions of `ix`.
    pub fn new(ix: &Index) -> Neighbourhood {
        let mut writers: Vec<Vec<u32>> = vec![Vec::new(); ix.keys.len()];
        let mut readers: rustc_hash::FxHashMap<(u32, u32), Vec<u32>> = Default::default();
        for t in ix.committed_txns() {
            for w in ix.writes(t) {
                writers[w.key as usize].push(t);
            }
            for r in ix.reads(t) {
                readers.entry((r.key, r.writer)).or_default().push(t);
            }
        }
        Neighbourhood { writers, readers }
    }

    /// Transactions related to `t` (whom it read from, who read it, who
    /// wrote what it touched, who read those keys' versions), each with its
    /// distance in time from `t`, nearest first.
    fn of(&self, ix: &Index, t: u32, out: &mut Vec<(u64, u32)>) {
        let h = ix.history;
        let mid = |u: u32| {
            let x = &h.txns[u as usize];
            let s = x.start.unwrap_or(u as u64);
            s / 2 + x.end.unwrap_or(s) / 2
        };
        let here = mid(t);
        let mut push = |u: u32| {
            if u != t && u != INIT {
                out.push((mid(u).abs_diff(here), u));
            }
        };
        for r in ix.reads(t) {
            push(r.writer);
            for &w in &self.writers[r.key as usize] {
                push(w);
            }
        }
        for w in ix.writes(t) {
            for &u in &self.writers[w.key as usize] {
                push(u);
                if let Some(rs) = self.readers.get(&(w.key, u)) {
                    rs.iter().for_each(|&r| push(r));
                }
            }
            if let Some(rs) = self.readers.get(&(w.key, INIT)) {
                rs.iter().for_each(|&r| push(r));
            }
        }
    }
}

/// Looks for a small refuted sub-history around `seed`: adds the nearest
/// related transactions a few at a time, up to `max_set`, checking each
/// set on its own. A refuted set proves the whole history fails.
pub fn local_refutation(
    ix: &Index,
    level: Level,
    seed: &[u32],
    max_set: usize,
    deadline: Option<Instant>,
) -> Option<Vec<u32>> {
    let nb = Neighbourhood::new(ix);
    let mut budget = MAX_CHECKS;
    grow_with(ix, &nb, level, seed, max_set, deadline, &mut budget)
}

/// A small counterexample for a refuted history: grown from `seed` when a
/// small neighbourhood already fails, otherwise cut down from the whole
/// history by delta debugging.
pub fn counterexample(
    ix: &Index,
    level: Level,
    seed: &[u32],
    deadline: Option<Instant>,
) -> Option<Anomaly> {
    counterexample_core(ix, level, seed, deadline).and_then(|(a, _)| a)
}

/// Like [`counterexample`], with the refuted set of transactions it shows
/// (what a certificate re-decides on its own); `None` when no refuted set
/// was found in time.
pub fn counterexample_core(
    ix: &Index,
    level: Level,
    seed: &[u32],
    deadline: Option<Instant>,
) -> Option<(Option<Anomaly>, Vec<u32>)> {
    let mut budget = MAX_CHECKS;
    let nb = Neighbourhood::new(ix);
    let core = grow_with(ix, &nb, level, seed, MAX_SET, deadline, &mut budget).or_else(|| {
        let all: Vec<u32> = ix.committed_txns().collect();
        (all.len() <= MAX_WHOLE && refuted(ix, &all, level, deadline)).then_some(all)
    })?;
    let core = shrink(ix, level, core, deadline, &mut budget);
    Some((picture(ix, &core, level), core))
}

/// Most refutation checks one counterexample may cost.
const MAX_CHECKS: usize = 400;
/// Largest history cut down from the whole.
const MAX_WHOLE: usize = 20_000;

/// Grows `seed` by its nearest neighbours until the set is refuted on its
/// own, checking after each batch.
#[allow(clippy::too_many_arguments)]
fn grow_with(
    ix: &Index,
    nb: &Neighbourhood,
    level: Level,
    seed: &[u32],
    max_set: usize,
    deadline: Option<Instant>,
    budget: &mut usize,
) -> Option<Vec<u32>> {
    let mut set: BTreeSet<u32> = seed
        .iter()
        .copied()
        .filter(|&t| ix.committed[t as usize])
        .collect();
    if set.is_empty() {
        return None;
    }
    let mut cands: Vec<(u64, u32)> = Vec::new();
    loop {
        let v: Vec<u32> = set.iter().copied().collect();
        *budget = budget.checked_sub(1)?;
        if refuted(ix, &v, level, deadline) {
            return Some(v);
        }
        if set.len() >= max_set || deadline.is_some_and(|d| Instant::now() > d) {
            return None;
        }
        cands.clear();
        for &t in &v {
            nb.of(ix, t, &mut cands);
        }
        cands.sort_unstable();
        let step = (set.len() / 2).clamp(4, 32);
        let before = set.len();
        for &(_, u) in &cands {
            if set.len() >= (before + step).min(max_set) {
                break;
            }
            if ix.committed[u as usize] {
                set.insert(u);
            }
        }
        if set.len() == before {
            return None;
        }
    }
}

/// Delta debugging (ddmin): drop chunks, then single transactions, while
/// the rest stays refuted.
fn shrink(
    ix: &Index,
    level: Level,
    mut cur: Vec<u32>,
    deadline: Option<Instant>,
    budget: &mut usize,
) -> Vec<u32> {
    let mut n = 2usize;
    while cur.len() >= 2 && *budget > 0 && deadline.is_none_or(|d| Instant::now() <= d) {
        let chunk = cur.len().div_ceil(n);
        let mut removed = false;
        for start in (0..cur.len()).step_by(chunk) {
            let end = (start + chunk).min(cur.len());
            let trial: Vec<u32> = cur[..start].iter().chain(&cur[end..]).copied().collect();
            if trial.is_empty() || *budget == 0 {
                continue;
            }
            *budget -= 1;
            if refuted(ix, &trial, level, deadline) {
                cur = trial;
                n = (n - 1).max(2);
                removed = true;
                break;
            }
        }
        if !removed {
            if n >= cur.len() {
                break;
            }
            n = (2 * n).min(cur.len());
        }
    }
    cur
}

/// The clearest cycle of a refuted sub-history, over every choice of order.
fn picture(ix: &Index, set: &[u32], level: Level) -> Option<Anomaly> {
    let h = sub_history(ix, set);
    let sub = Index::new(&h);
    let model = model_of(level);
    let orders = crate::decide::depgraph::Orders::of(level);
    let chains = if h.has_lists() {
        crate::index::lists::list_orders(&sub).chains
    } else {
        Default::default()
    };
    let p = Polygraph::build(&sub, model, orders, &chains, true, 1 << 20).ok()?;
    let n = p.constraints.len();
    // The shortest, least-guessed cycle under one choice of orders.
    let under = |mask: u32, enumerate: bool| -> Option<Cycle> {
        let chosen = (0..n)
            .filter(|_| enumerate)
            .flat_map(|c| p.side(c, mask & (1 << c) != 0).iter().copied());
        let dg = graph_of(&p, p.known.iter().copied().chain(chosen));
        find_cycles(&dg, orders).into_iter().min_by_key(|c| {
            let guessed = c
                .edges
                .iter()
                .filter(|e| e.label.why == Why::Chosen)
                .count();
            (c.edges.len(), guessed)
        })
    };
    let enumerate = n <= MAX_ENUM;
    let masks = if enumerate { 1u32 << n } else { 1 };
    let (mask, cycle) = (0..masks)
        .filter_map(|m| under(m, enumerate).map(|c| (m, c)))
        .min_by_key(|(_, c)| {
            let guessed = c
                .edges
                .iter()
                .filter(|e| e.label.why == Why::Chosen)
                .count();
            (c.edges.len(), guessed)
        })?;
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
    // A guessed order is justified by the cycle its opposite closes.
    for (e, te) in a.edges.iter_mut().zip(&cycle.edges) {
        if te.label.why != Why::Chosen || !matches!(te.label.dep, Dep::Ww | Dep::Rw) {
            continue;
        }
        let (x, y) = (te.from.min(te.to), te.from.max(te.to));
        let pair = p.constraints.iter().position(|c| {
            (c.a, c.b) == (x, y) || (te.label.dep == Dep::Rw && (c.a == te.to || c.b == te.to))
        });
        let alt = pair
            .filter(|_| enumerate)
            .and_then(|c| under(mask ^ (1 << c), true));
        match alt {
            Some(alt) => e.reason.push_str(&format!(
                " [guessed; the opposite order closes {}]",
                crate::explain::cycle_text(&sub, &alt.edges)
            )),
            None => e
                .reason
                .push_str(" [guessed; every other order closes a cycle too]"),
        }
    }
    a.summary = format!("{} (no version order avoids it)", a.summary);
    Some(a)
}
