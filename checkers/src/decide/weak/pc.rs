//! pc: prefix consistency, as strong-session SI of the split history (see
//! the [module docs](super)).

use std::time::Instant;

use history::{History, Level, Op, Status, Txn, Value};
use rustc_hash::FxHashMap;

use crate::anomaly::{AnomalyKind, CommonName, Scope};
use crate::decide::blackbox::general::{check_general, General, GeneralOptions};
use crate::decide::blackbox::interpret::counterexample;
use crate::explain::{cycle_anomaly, txn_view};
use crate::index::lists::ListOrders;
use crate::index::{Index, INIT};
use crate::lattice::{forbidding, stronger_or_equal};
use crate::report::{Anomaly, EdgeKind};

use super::explain::what;
use super::saturate::saturate;
use super::{Csr, Ctx, Limit, Stamped, WeakOutcome, WeakVerdict, MAX_SHOWN};

pub(super) fn check_pc(
    ix: &Index,
    explain: bool,
    findings: bool,
    deadline: Option<Instant>,
    lo: Option<&ListOrders>,
) -> WeakOutcome {
    let unknown = |why: &str| WeakOutcome {
        verdict: WeakVerdict::Unknown(why.to_string()),
        method: "split SI",
        anomalies: Vec::new(),
        also_fails: Vec::new(),
        notes: Vec::new(),
        witness: None,
    };
    // Prefix consistency implies causal consistency, which is cheap.
    let limit = Limit {
        deadline,
        soft: None,
    };
    let cc = saturate(ix, Level::Cc, explain, lo, limit);
    if cc.verdict == WeakVerdict::Anomalous {
        return WeakOutcome {
            method: "saturation (cc)",
            ..cc
        };
    }
    if findings {
        // Already failed; the findings are the counterexamples.
        return WeakOutcome {
            verdict: WeakVerdict::Anomalous,
            method: "non-cyclic",
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness: None,
        };
    }
    // The lattice: strong-session SI implies pc, and its schedule's commit
    // order is a pc commit order (each snapshot, a prefix of the commits,
    // holds the session's earlier transactions). It needs no split history,
    // and decides most valid histories, write skews included.
    if let Some(co) = stronger_witness(ix, deadline) {
        return WeakOutcome {
            verdict: WeakVerdict::Ok,
            method: "witness of strong-session-si",
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness: Some(co),
        };
    }
    let cx = Ctx::new(ix, lo);
    let (split, origin) = split_history(&cx);
    let six = Index::new(&split);
    let opts = GeneralOptions {
        deadline,
        ..GeneralOptions::default()
    };
    let mut anomalies = Vec::new();
    let mut also_fails = Vec::new();
    let mut notes = Vec::new();
    let mut witness = None;
    let verdict = match check_general(&six, Level::StrongSessionSi, &opts) {
        General::Ok { .. } => {
            witness = pc_witness(&six, &origin, deadline).map(|co| with_empty(ix, co));
            if witness.is_none() {
                return unknown(
                    "prefix consistency holds, but no commit order was found in time to show it",
                );
            }
            WeakVerdict::Ok
        }
        General::Forced { cycles, .. } => {
            if explain {
                for c in cycles.iter().take(MAX_SHOWN) {
                    let a = unsplit(ix, cycle_anomaly(&six, c));
                    // Every edge forced and no session order: the same
                    // cycle is in Adya's SI graph of the original.
                    if a.scope == Scope::Item {
                        for &m in forbidding(a.kind, a.scope) {
                            also_fails.extend(stronger_or_equal(m));
                        }
                    }
                    anomalies.push(a);
                }
            }
            WeakVerdict::Anomalous
        }
        General::Refuted { seed, .. } => {
            if explain {
                match counterexample(&six, Level::StrongSessionSi, &seed, deadline) {
                    Some(a) => anomalies.push(unsplit(ix, a)),
                    None => notes.push(
                        "no commit order gives every transaction a prefix, but no small counterexample was found"
                            .into(),
                    ),
                }
            }
            WeakVerdict::Anomalous
        }
        General::Unknown(why) => return unknown(&why),
    };
    WeakOutcome {
        verdict,
        method: "split SI",
        anomalies,
        also_fails,
        notes,
        witness,
    }
}

/// A pc commit order from a strong-session SI schedule of `ix` (commit
/// events in schedule order), found on a share of the time; `None` when
/// the history fails strong-session SI or no schedule is had in time, which
/// proves nothing about pc.
fn stronger_witness(ix: &Index, deadline: Option<Instant>) -> Option<Vec<u32>> {
    // Session order must order something, else split SI is no harder.
    if !ix.sessions.iter().any(|s| s.len() > 1) {
        return None;
    }
    let opts = GeneralOptions {
        deadline: Some(crate::decide::lattice_deadline(deadline)),
        local: false,
        prove: false,
        ..GeneralOptions::default()
    };
    let General::Ok { schedule, .. } = check_general(ix, Level::StrongSessionSi, &opts) else {
        return None;
    };
    // Schedule events are `2t` (begin) and `2t + 1` (commit).
    let co: Vec<u32> = schedule
        .iter()
        .filter(|&&v| v % 2 == 1 && ix.committed[(v / 2) as usize])
        .map(|&v| v / 2)
        .collect();
    (co.len() == ix.committed_txns().count()).then_some(co)
}

/// Each committed transaction as a read-only transaction (its external
/// reads, as plain reads, or its lists' external parts as list reads)
/// followed in its session by a write-only one (its installed writes, or
/// all its appends, with its list reads after them). Both keep the original id, so explanations name the
/// original transactions; the second result is each part's original index.
fn split_history(cx: &Ctx) -> (History, Vec<u32>) {
    let ix = cx.ix;
    let mut txns = Vec::with_capacity(2 * ix.len());
    let mut origin = Vec::with_capacity(2 * ix.len());
    let mut own = vec![0u32; ix.keys.len()];
    let mut evs = Vec::new();
    for t in ix.committed_txns() {
        let orig = &ix.history.txns[t as usize];
        let mut marks = Stamped {
            marks: &mut own,
            stamp: t + 1,
        };
        cx.events(t, &mut marks, &mut evs);
        let mut part = |ops: Vec<Op>| {
            let mut x = Txn::new(orig.id, orig.session, Status::Ok, ops);
            x.start = orig.start;
            x.end = orig.end;
            txns.push(x);
            origin.push(t);
        };
        if !evs.is_empty() {
            part(
                evs.iter()
                    .filter(|e| e.version)
                    .map(|e| {
                        let key = ix.keys[e.key as usize].clone();
                        match &orig.ops[e.op as usize] {
                            Op::ReadList {
                                values: Some(vs), ..
                            } => {
                                // The external part (events exist only
                                // for reads whose own appends end them).
                                let ext = own_prefix(cx, t, e.op, e.key, vs);
                                Op::ReadList {
                                    key,
                                    values: Some(ext.to_vec()),
                                }
                            }
                            _ => Op::Read {
                                key,
                                value: e.value,
                            },
                        }
                    })
                    .collect(),
            );
        }
        // The appends, and each list read after the transaction's own
        // appends to the key: it shows the version they went on, so the
        // write part reads it too (first committer wins then keeps every
        // other writer of the key out until the part commits).
        let mut appended: Vec<&history::Key> = Vec::new();
        let mut ws: Vec<Op> = Vec::new();
        for o in &orig.ops {
            match o {
                Op::Append { key, .. } => {
                    if !appended.contains(&key) {
                        appended.push(key);
                    }
                    ws.push(o.clone());
                }
                // (An `info` transaction's reads tell nothing.)
                Op::ReadList {
                    key,
                    values: Some(_),
                } if orig.status == Status::Ok && appended.contains(&key) => ws.push(o.clone()),
                _ => {}
            }
        }
        ws.extend(
            ix.writes(t)
                .iter()
                .filter(|w| !matches!(orig.ops[w.op as usize], Op::Append { .. }))
                .map(|w| Op::Write {
                    key: ix.keys[w.key as usize].clone(),
                    value: w.value,
                }),
        );
        if !ws.is_empty() {
            part(ws);
        }
    }
    (History::from_txns(txns), origin)
}

/// The external part of list read `vs` of key `k` at op `o` of `t` (see
/// [`Ctx::external_part`]); `vs` itself when it is not known.
fn own_prefix<'v>(cx: &Ctx, t: u32, o: u32, k: u32, vs: &'v [Value]) -> &'v [Value] {
    let key = &cx.ix.keys[k as usize];
    let wrote = cx.ix.history.txns[t as usize].ops[..o as usize]
        .iter()
        .any(|op| op.written().is_some_and(|(pk, _)| pk == key));
    cx.external_part(t, o, k, vs, wrote).unwrap_or(vs)
}

/// A commit order of the original transactions from a strong-session SI
/// schedule of the split history `six` (`origin`: each part's original
/// transaction): each transaction commits when its last part does. The
/// schedule is a topological order of the begin/commit graph of a version
/// order: first the SI check's cheap guess (each key's writers in the order
/// of a topological order of the known edges), then the solver's, from the
/// same polygraph the SI check solves. `None` when neither is had in time.
fn pc_witness(six: &Index, origin: &[u32], deadline: Option<Instant>) -> Option<Vec<u32>> {
    use crate::decide::blackbox::acyclic::{Acyclic, FIXED};
    use crate::decide::blackbox::polygraph::{prune, Polygraph, Pruned};
    use crate::decide::blackbox::solve::{solve, Solved, Strategy};
    use crate::decide::depgraph::{DepGraph, Model, Orders, VersionOrder, Why as DWhy};
    let chains = if six.lists {
        crate::index::lists::list_orders(six).chains
    } else {
        FxHashMap::default()
    };
    let orders = Orders::of(Level::StrongSessionSi);
    let known = Polygraph::build(six, Model::Si, orders, &chains, false, 0).ok()?;
    let known_pairs: Vec<(u32, u32)> = known.known.iter().map(|e| (e.0, e.1)).collect();
    let order = kahn(known.nodes, &known_pairs)?;
    let mut position = vec![0u32; known.nodes];
    for (i, &v) in order.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    let mut per_key: Vec<Vec<(u32, u32)>> = vec![Vec::new(); six.keys.len()];
    for t in six.committed_txns() {
        for w in six.writes(t) {
            per_key[w.key as usize].push((position[2 * t as usize + 1], t));
        }
    }
    let mut vo = VersionOrder::new();
    for (k, ws) in per_key.iter_mut().enumerate() {
        ws.sort_unstable();
        let mut prev = INIT;
        for &(_, t) in ws.iter() {
            vo.link(k as u32, prev, t, DWhy::Chosen);
            prev = t;
        }
    }
    let dg = DepGraph::build(six, &vo, Model::Si, orders);
    let g = &dg.graph;
    let pairs: Vec<(u32, u32)> = (0..g.node_count() as u32)
        .flat_map(|v| g.out(v).map(move |(_, w)| (v, w)))
        .collect();
    if let Some(sched) = kahn(g.node_count(), &pairs) {
        let mut pos = vec![0u32; g.node_count()];
        for (i, &v) in sched.iter().enumerate() {
            pos[v as usize] = i as u32;
        }
        return Some(commit_order(six, origin, &pos));
    }
    // The solver's schedule.
    let p = Polygraph::build(six, Model::Si, orders, &chains, true, 60_000_000).ok()?;
    let mut g = Acyclic::new(&order);
    for &(f, t, _) in &p.known {
        g.add(f, t, FIXED).ok()?;
    }
    let mut state = vec![None; p.constraints.len()];
    let Pruned::Open(open) = prune(&p, &mut g, &mut state, deadline) else {
        return None;
    };
    let pos = if open.is_empty() {
        g.positions()
    } else {
        let polarity = vec![true; open.len()];
        match solve(&p, g, &open, &polarity, deadline, Strategy::Theory) {
            Solved::Sat(_, pos) => pos,
            _ => return None,
        }
    };
    Some(commit_order(six, origin, &pos))
}

/// Places the committed transactions that have no part in the split
/// history (no reads, no writes) right after their session's previous
/// transaction: they order nothing but their session.
fn with_empty(ix: &Index, co: Vec<u32>) -> Vec<u32> {
    let placed: rustc_hash::FxHashSet<u32> = co.iter().copied().collect();
    let mut after: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut first: Vec<u32> = Vec::new();
    for s in &ix.sessions {
        let mut prev: Option<u32> = None;
        for &t in s {
            if !placed.contains(&t) {
                match prev {
                    Some(p) => after.entry(p).or_default().push(t),
                    None => first.push(t),
                }
            }
            prev = Some(t);
        }
    }
    if after.is_empty() && first.is_empty() {
        return co;
    }
    // The empty transactions that open their session go first; every
    // transaction, these included, is followed by the empty ones right
    // after it in its session (so a session of empty transactions only is
    // placed whole, not just its first).
    let mut out = Vec::with_capacity(ix.len());
    let mut stack: Vec<u32> = Vec::new();
    for t in first.into_iter().chain(co) {
        stack.push(t);
        while let Some(x) = stack.pop() {
            out.push(x);
            if let Some(next) = after.get(&x) {
                stack.extend(next.iter().rev());
            }
        }
    }
    out
}

/// A topological order of the graph on `n` nodes with edges `pairs`, or
/// `None` when it has a cycle.
fn kahn(n: usize, pairs: &[(u32, u32)]) -> Option<Vec<u32>> {
    let succ = Csr::from_pairs(n, pairs);
    let mut indeg = vec![0u32; n];
    for &(_, t) in pairs {
        indeg[t as usize] += 1;
    }
    let mut stack: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(v) = stack.pop() {
        order.push(v);
        for &w in succ.of(v) {
            indeg[w as usize] -= 1;
            if indeg[w as usize] == 0 {
                stack.push(w);
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// The original transactions in the order their last parts commit, given
/// each split-history node's position in a schedule (begin and commit
/// nodes `2s` and `2s + 1` of part `s`).
fn commit_order(six: &Index, origin: &[u32], pos: &[u32]) -> Vec<u32> {
    let mut at: FxHashMap<u32, u32> = FxHashMap::default();
    for (s, &t) in origin.iter().enumerate() {
        if six.committed[s] {
            let c = pos[2 * s + 1];
            let e = at.entry(t).or_insert(c);
            *e = (*e).max(c);
        }
    }
    let mut co: Vec<(u32, u32)> = at.into_iter().map(|(t, c)| (c, t)).collect();
    co.sort_unstable();
    co.into_iter().map(|(_, t)| t).collect()
}

/// Maps a counterexample of the split history back: the original
/// transactions, without the step from a transaction's read part to its
/// write part. A cycle that needed no other session step is an item-level
/// anomaly of the original.
fn unsplit(ix: &Index, mut a: Anomaly) -> Anomaly {
    let mut by_id: FxHashMap<u64, u32> = FxHashMap::default();
    for t in ix.committed_txns() {
        by_id.entry(ix.history.txns[t as usize].id).or_insert(t);
    }
    let mut txns = Vec::new();
    let mut shown: Vec<u64> = Vec::new();
    for v in &a.txns {
        if shown.contains(&v.id) {
            continue;
        }
        shown.push(v.id);
        if let Some(&t) = by_id.get(&v.id) {
            txns.push(txn_view(ix, t));
        }
    }
    a.txns = txns;
    a.edges.retain(|e| e.from != e.to);
    let mut head = a.summary.split(": ").next().unwrap_or("").to_string();
    if a.scope == Scope::Session && !a.edges.iter().any(|e| e.kind == EdgeKind::So) {
        // Only the read part → write part steps needed session order.
        a.scope = Scope::Item;
        let rw = a.edges.iter().filter(|e| e.kind == EdgeKind::Rw).count();
        let others_wr = a
            .edges
            .iter()
            .all(|e| matches!(e.kind, EdgeKind::Rw | EdgeKind::Wr));
        a.common =
            if a.kind == AnomalyKind::GNonadjacent && a.edges.len() == 4 && rw == 2 && others_wr {
                Some(CommonName::LongFork)
            } else {
                None
            };
        head = match a.common {
            Some(c) => what(Some(c)).to_string(),
            None => format!(
                "no commit order gives every transaction a prefix ({})",
                a.kind
            ),
        };
    }
    let steps: Vec<String> = a
        .edges
        .iter()
        .map(|e| format!("T{} -{}->", e.from, e.kind.name()))
        .collect();
    a.summary = format!(
        "{head}: {} T{}",
        steps.join(" "),
        a.edges.first().map_or(0, |e| e.from)
    );
    a
}
