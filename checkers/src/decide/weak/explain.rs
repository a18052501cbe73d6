//! Counterexamples of the saturated levels: a cycle or an initial-version
//! violation, with the reads that force each commit-order edge.

use std::collections::VecDeque;

use history::{Level, Op, Value};
use rustc_hash::FxHashMap;

use crate::anomaly::{AnomalyKind, CommonName, Scope};
use crate::explain::txn_view;
use crate::graph::PathEdge;
use crate::index::{Index, INIT};
use crate::report::{Anomaly, EdgeKind, EdgeView};

use super::{Ctx, Ev, InitViolation, WLabel, Why, NONE};

fn tn(ix: &Index, t: u32) -> String {
    format!("T{}", ix.history.txns[t as usize].id)
}

fn show(v: Option<Value>) -> String {
    v.map_or_else(|| "absent".to_string(), |v| v.to_string())
}

fn session_name(ix: &Index, t: u32) -> u64 {
    ix.history.txns[t as usize].session
}

/// How the history forces one co edge, at the weakest level that forces it.
struct Just {
    level: Level,
    common: CommonName,
    /// The premise needs session order.
    session: bool,
    /// The premise as edges `t1 → … → reader` (read-from and session).
    premise: Vec<(u32, u32)>,
    /// "after reading y=1 from T1" and the like.
    clause: String,
}

/// The read events of `t3` reading the version of `key` that `writer`
/// installed (not an element of a longer list: the axiom's reads).
fn reads_of(evs: &[Ev], key: u32, writer: u32) -> impl Iterator<Item = &Ev> {
    evs.iter()
        .filter(move |e| e.key == key && e.writer == writer && e.version)
}

fn justify(cx: &Ctx, t1: u32, t2: u32, l: WLabel) -> Just {
    let ix = cx.ix;
    let t3 = l.reader;
    let evs = cx.events_of(t3);
    // The last read of the key from t2: the most reads come before it.
    let alpha = reads_of(&evs, l.key, t2)
        .map(|e| e.at)
        .max()
        .unwrap_or(NONE);
    // The premise read: the one the rc scan used, else any earlier one.
    let from_t1 = |before: u32| {
        evs.iter()
            .find(|e| e.writer == t1 && e.op == l.op && e.at < before)
            .or_else(|| evs.iter().find(|e| e.writer == t1 && e.at < before))
    };
    // t3 read from t1 directly (`e`): rc's premise when it read before
    // alpha, else `level`'s.
    let read_t1 = |level: Level, common: CommonName, how: &str, e: &Ev| Just {
        level,
        common,
        session: false,
        premise: vec![(t1, t3)],
        clause: format!(
            "{how} {}={} from {}",
            ix.keys[e.key as usize],
            show(e.value),
            tn(ix, t1)
        ),
    };
    let direct = |level: Level| -> Option<Just> {
        if let Some(e) = from_t1(alpha) {
            return Some(read_t1(
                Level::Rc,
                CommonName::NonMonotonicRead,
                "after reading",
                e,
            ));
        }
        let e = evs.iter().find(|e| e.writer == t1)?;
        Some(read_t1(
            level,
            CommonName::FracturedRead,
            "and also read",
            e,
        ))
    };
    let session = |level: Level| Just {
        level,
        common: CommonName::SessionGuaranteeViolation,
        session: true,
        premise: vec![(t1, t3)],
        clause: format!(
            "although {} comes before it in session {}",
            tn(ix, t1),
            session_name(ix, t3)
        ),
    };
    if let Some(j) = direct(Level::Ra) {
        return j;
    }
    if cx.so_before(t1, t3) {
        return session(Level::Ra);
    }
    // A longer causal path: read-from only if possible.
    let (path, needs_so) = match causal_path(cx, t1, t3, true) {
        Some(p) => (p, false),
        None => (causal_path(cx, t1, t3, false).unwrap_or_default(), true),
    };
    let names: Vec<String> = path.iter().map(|&t| tn(ix, t)).collect();
    Just {
        level: Level::Cc,
        common: CommonName::CausalityViolation,
        session: needs_so,
        premise: path.windows(2).map(|w| (w[0], w[1])).collect(),
        clause: format!(
            "although {} is in its causal past ({})",
            tn(ix, t1),
            names.join(" → ")
        ),
    }
}

/// A shortest `so ∪ wr` path `from → … → to` (read-from only if asked),
/// by a backward breadth-first search from `to`.
fn causal_path(cx: &Ctx, from: u32, to: u32, wr_only: bool) -> Option<Vec<u32>> {
    let ix = cx.ix;
    let mut parent: FxHashMap<u32, u32> = FxHashMap::default();
    let mut queue = VecDeque::from([to]);
    parent.insert(to, to);
    while let Some(v) = queue.pop_front() {
        if v == from {
            let mut path = vec![from];
            let mut u = from;
            while u != to {
                u = parent[&u];
                path.push(u);
            }
            return Some(path);
        }
        let so_pred = (!wr_only && cx.pos_of[v as usize] > 0 && cx.pos_of[v as usize] != NONE)
            .then(|| {
                ix.sessions[cx.sess_of[v as usize] as usize][cx.pos_of[v as usize] as usize - 1]
            });
        let preds = ix
            .reads(v)
            .iter()
            .map(|r| r.writer)
            .chain(cx.elements(v).iter().map(|e| e.0))
            .filter(|&w| w != INIT)
            .chain(so_pred);
        for p in preds {
            if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(p) {
                e.insert(v);
                queue.push_back(p);
            }
        }
    }
    None
}

/// A read-from or session edge `a → b` of a premise or cycle (`so`: a
/// session step, else read-from when `b` read from `a`).
fn plain_edge(cx: &Ctx, a: u32, b: u32, so: bool) -> EdgeView {
    let ix = cx.ix;
    let evs = if so { Vec::new() } else { cx.events_of(b) };
    let id = |t: u32| ix.history.txns[t as usize].id;
    if let Some(e) = evs.iter().find(|e| e.writer == a) {
        let k = &ix.keys[e.key as usize];
        let list = matches!(
            ix.history.txns[b as usize].ops[e.op as usize],
            Op::ReadList { .. }
        );
        let reason = match e.value {
            Some(v) if list => format!(
                "{} read list {k} holding {v}, appended by {}",
                tn(ix, b),
                tn(ix, a)
            ),
            _ => format!(
                "{} read {k}={}, written by {}",
                tn(ix, b),
                show(e.value),
                tn(ix, a)
            ),
        };
        return EdgeView {
            from: id(a),
            to: id(b),
            kind: EdgeKind::Wr,
            key: Some(k.clone()),
            reason,
        };
    }
    EdgeView {
        from: id(a),
        to: id(b),
        kind: EdgeKind::So,
        key: None,
        reason: format!(
            "{} comes before {} in session {}",
            tn(ix, a),
            tn(ix, b),
            session_name(ix, a)
        ),
    }
}

/// The value `t3` read of `key` from `t2` (its last such read).
fn value_read(cx: &Ctx, t3: u32, key: u32, t2: u32) -> Option<Value> {
    let evs = cx.events_of(t3);
    reads_of(&evs, key, t2).last().and_then(|e| e.value)
}

/// Whether `t3`'s last read of `key` from `t2` is the base of its own
/// appends (a list read after them, which happened at the first append).
fn read_by_append(cx: &Ctx, t3: u32, key: u32, t2: u32) -> bool {
    let evs = cx.events_of(t3);
    reads_of(&evs, key, t2).last().is_some_and(|e| e.at != e.op)
}

/// Merges the justifications of a cycle's co edges into a common name and
/// the weakest level the cycle violates.
fn name_of(justs: &[Just]) -> (Option<CommonName>, Level) {
    if justs.is_empty() {
        return (None, Level::Rc);
    }
    let level = justs.iter().map(|j| j.level).max().unwrap_or(Level::Rc);
    let has = |c: CommonName| justs.iter().any(|j| j.common == c);
    let common = if level == Level::Rc {
        CommonName::NonMonotonicRead
    } else if has(CommonName::CausalityViolation) {
        CommonName::CausalityViolation
    } else if has(CommonName::SessionGuaranteeViolation) {
        CommonName::SessionGuaranteeViolation
    } else {
        CommonName::FracturedRead
    };
    (Some(common), level)
}

pub(super) fn what(common: Option<CommonName>) -> &'static str {
    match common {
        Some(CommonName::NonMonotonicRead) => {
            "a transaction saw a write and then read an older version"
        }
        Some(CommonName::FracturedRead) => "a transaction saw some of another's writes but not all",
        Some(CommonName::CausalityViolation) => "a transaction saw an effect but missed its cause",
        Some(CommonName::SessionGuaranteeViolation) => {
            "a session missed the effect of its own earlier transaction"
        }
        Some(CommonName::LongFork) => "two readers saw two independent writes in opposite orders",
        _ => "session order and read-from form a cycle",
    }
}

/// Adds `t` to the shown transactions once.
fn show_txn(order: &mut Vec<u32>, t: u32) {
    if !order.contains(&t) {
        order.push(t);
    }
}

/// A cycle of the saturated graph as a counterexample, and the weakest
/// level it violates.
pub(super) fn cycle_to_anomaly(cx: &Ctx, path: &[PathEdge<WLabel>]) -> (Anomaly, Level) {
    let ix = cx.ix;
    // Start at a non-session edge, then merge runs of session steps.
    let start = path
        .iter()
        .position(|e| e.label.why != Why::So)
        .unwrap_or(0);
    let mut edges: Vec<PathEdge<WLabel>> = Vec::new();
    for i in 0..path.len() {
        let e = path[(start + i) % path.len()];
        match edges.last_mut() {
            Some(last) if last.label.why == Why::So && e.label.why == Why::So => last.to = e.to,
            _ => edges.push(e),
        }
    }
    let mut order: Vec<u32> = Vec::new();
    for e in &edges {
        show_txn(&mut order, e.from);
    }
    let mut views = Vec::new();
    let mut justs = Vec::new();
    let mut session = false;
    for e in &edges {
        let id = |t: u32| ix.history.txns[t as usize].id;
        match e.label.why {
            Why::So => {
                session = true;
                views.push(plain_edge(cx, e.from, e.to, true));
            }
            Why::Wr => views.push(plain_edge(cx, e.from, e.to, false)),
            Why::List => {
                let kk = &ix.keys[e.label.key as usize];
                let (reader, op) = (e.label.reader, e.label.op);
                show_txn(&mut order, reader);
                let shown = match &ix.history.txns[reader as usize].ops[op as usize] {
                    Op::ReadList {
                        values: Some(vs), ..
                    } => format!("{vs:?}"),
                    _ => "a list".to_string(),
                };
                let writes_shown = |t: u32| match &ix.history.txns[reader as usize].ops[op as usize]
                {
                    Op::ReadList {
                        values: Some(vs), ..
                    } => vs.iter().any(|v| {
                        ix.writer
                            .get(&(e.label.key, *v))
                            .is_some_and(|w| w.txn == t)
                    }),
                    _ => false,
                };
                let reason = if writes_shown(e.to) {
                    format!(
                        "{} read {kk}={shown}: {}'s appends come before {}'s",
                        tn(ix, reader),
                        tn(ix, e.from),
                        tn(ix, e.to)
                    )
                } else {
                    format!(
                        "{} read {kk}={shown}, which ends with {}'s appends and has none of {}'s: {} committed later",
                        tn(ix, reader),
                        tn(ix, e.from),
                        tn(ix, e.to),
                        tn(ix, e.to)
                    )
                };
                views.push(EdgeView {
                    from: id(e.from),
                    to: id(e.to),
                    kind: EdgeKind::Ww,
                    key: Some(kk.clone()),
                    reason,
                });
            }
            _ => {
                let j = justify(cx, e.from, e.to, e.label);
                let t3 = e.label.reader;
                let kk = &ix.keys[e.label.key as usize];
                session |= j.session;
                for &(a, b) in &j.premise {
                    show_txn(&mut order, a);
                    show_txn(&mut order, b);
                }
                views.push(EdgeView {
                    from: id(e.from),
                    to: id(e.to),
                    kind: EdgeKind::Ww,
                    key: Some(kk.clone()),
                    reason: format!(
                        "{} {kk}={} from {} {}, and {} also wrote {kk}, so {} must commit before {}",
                        if read_by_append(cx, t3, e.label.key, e.to) {
                            format!(
                                "{}'s appends (as its later read of {kk} shows) went on",
                                tn(ix, t3)
                            )
                        } else {
                            format!("{} read", tn(ix, t3))
                        },
                        show(value_read(cx, t3, e.label.key, e.to)),
                        tn(ix, e.to),
                        j.clause,
                        tn(ix, e.from),
                        tn(ix, e.from),
                        tn(ix, e.to)
                    ),
                });
                justs.push(j);
            }
        }
    }
    let (common, level) = name_of(&justs);
    let listed = edges.iter().any(|e| e.label.why == Why::List);
    let head = match common {
        None if listed => "the order the lists show contradicts session order or read-from",
        None if session => "session order and read-from form a cycle",
        None => "transactions read from each other in a cycle",
        c => what(c),
    };
    let kind = if justs.is_empty() {
        AnomalyKind::G1c
    } else {
        AnomalyKind::GSingle
    };
    let steps: Vec<String> = views
        .iter()
        .map(|v| format!("T{} -{}->", v.from, v.kind.name()))
        .collect();
    let summary = format!(
        "{head}: {} T{}",
        steps.join(" "),
        views.first().map_or(0, |v| v.from)
    );
    let anomaly = Anomaly {
        kind,
        scope: if session { Scope::Session } else { Scope::Item },
        common,
        summary,
        txns: order.iter().map(|&t| txn_view(ix, t)).collect(),
        edges: views,
        write_ids: crate::report::has_write_ids(ix.history),
    };
    (anomaly, level)
}

/// "Saw `t1`, then read the initial version of a key `t1` wrote" as a
/// counterexample: the premise path from `t1` to the reader, and the
/// reader's anti-dependency back to `t1`.
pub(super) fn init_to_anomaly(cx: &Ctx, v: &InitViolation) -> (Anomaly, Level) {
    let ix = cx.ix;
    let (t1, t3, x) = (v.t1, v.label.reader, v.label.key);
    let j = justify(cx, t1, INIT, v.label);
    let kk = &ix.keys[x as usize];
    let mut order = vec![t1];
    let mut edges: Vec<EdgeView> = Vec::new();
    for &(a, b) in &j.premise {
        show_txn(&mut order, a);
        show_txn(&mut order, b);
        edges.push(plain_edge(cx, a, b, false));
    }
    show_txn(&mut order, t3);
    let id = |t: u32| ix.history.txns[t as usize].id;
    edges.push(EdgeView {
        from: id(t3),
        to: id(t1),
        kind: EdgeKind::Rw,
        key: Some(kk.clone()),
        reason: format!(
            "{} {kk} as absent (the initial version) {}, yet {} wrote {kk}: {} would have to commit before the initial version",
            if read_by_append(cx, t3, x, INIT) {
                format!(
                    "{}'s appends (as its later read of {kk} shows) went on",
                    tn(ix, t3)
                )
            } else {
                format!("{} read", tn(ix, t3))
            },
            j.clause,
            tn(ix, t1),
            tn(ix, t1)
        ),
    });
    let (common, level) = name_of(std::slice::from_ref(&j));
    let summary = format!(
        "{}: {} read {kk} as absent although it already saw {}, which wrote {kk}",
        what(common),
        tn(ix, t3),
        tn(ix, t1)
    );
    let anomaly = Anomaly {
        kind: AnomalyKind::GSingle,
        scope: if j.session {
            Scope::Session
        } else {
            Scope::Item
        },
        common,
        summary,
        txns: order.iter().map(|&t| txn_view(ix, t)).collect(),
        edges,
        write_ids: crate::report::has_write_ids(ix.history),
    };
    (anomaly, level)
}
