//! rc, ra and cc by saturation: the graph `so ∪ wr ∪ forced` (the forced
//! edges from [`rc`](super::rc), [`ra`](super::ra) or [`cc`](super::cc)),
//! its topological order as the witness, its shortest cycles as the
//! counterexamples.

use history::Level;
use rustc_hash::FxHashSet;

use crate::graph::{CycleScratch, Graph, GraphBuilder, PathEdge};
use crate::index::lists::ListOrders;
use crate::index::{Index, INIT};
use crate::lattice::{forbidding, stronger_or_equal};
use crate::report::Anomaly;

use super::cc_lazy::{self, Lazy};
use super::explain::{cycle_to_anomaly, init_to_anomaly};
use super::{cc::cc_edges, ra::ra_edges, rc::rc_edges};
use super::{
    Ctx, Forced, InitViolation, Limit, WLabel, WeakOutcome, WeakVerdict, Why, MAX_SHOWN, NONE,
};

struct Saturated {
    /// Frozen only when there are cycles to explain.
    graph: GraphBuilder<WLabel>,
    inits: Vec<InitViolation>,
    init_count: usize,
}

pub(super) fn saturate(
    ix: &Index,
    level: Level,
    explain: bool,
    lo: Option<&ListOrders>,
    limit: Limit,
) -> WeakOutcome {
    let method = "saturation";
    // Lazy saturation reads the index alone: a witness needs no context.
    let lazy = if level == Level::Cc {
        cc_lazy::cc_lazy(ix, limit)
    } else {
        Lazy::GaveUp
    };
    if let Lazy::Witness(order) = lazy {
        return WeakOutcome {
            verdict: WeakVerdict::Ok,
            method,
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness: Some(order),
        };
    }
    let cx = Ctx::new(ix, lo);
    let Some(sat) = build(&cx, level, limit, lazy) else {
        return WeakOutcome {
            verdict: WeakVerdict::Unknown(format!(
                "{}: the time given ran out while saturating",
                level.name()
            )),
            method,
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness: None,
        };
    };
    // An acyclic graph (the common case) needs no search for cycles, and
    // any topological order of it is a commit order: taken before the
    // labels are laid out, which only the cycles' explanations read.
    let witness = if sat.init_count > 0 {
        None
    } else {
        let committed = |v: u32| ix.committed.get(v as usize).copied().unwrap_or(false);
        sat.graph.topo_order(committed)
    };
    if !explain || witness.is_some() {
        return WeakOutcome {
            verdict: if witness.is_none() {
                WeakVerdict::Anomalous
            } else {
                WeakVerdict::Ok
            },
            method,
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness,
        };
    }
    let mut anomalies = Vec::new();
    let mut also_fails = Vec::new();
    let mut notes = Vec::new();
    let mut record = |a: Anomaly, weakest: Level, anomalies: &mut Vec<Anomaly>| {
        also_fails.extend(stronger_or_equal(weakest));
        for &m in forbidding(a.kind, a.scope) {
            also_fails.extend(stronger_or_equal(m));
        }
        anomalies.push(a);
    };
    let cycles = shortest_cycles(&sat.graph.build(), MAX_SHOWN);
    let total_cycles = cycles.1;
    for c in &cycles.0 {
        let (a, weakest) = cycle_to_anomaly(&cx, c);
        record(a, weakest, &mut anomalies);
    }
    let mut seen: FxHashSet<(u32, u32, u32)> = FxHashSet::default();
    let mut shown_inits = 0;
    for v in &sat.inits {
        if !seen.insert((v.t1, v.label.key, v.label.reader)) {
            continue;
        }
        if shown_inits >= MAX_SHOWN {
            break;
        }
        shown_inits += 1;
        let (a, weakest) = init_to_anomaly(&cx, v);
        record(a, weakest, &mut anomalies);
    }
    if total_cycles > cycles.0.len() {
        notes.push(format!(
            "{total_cycles} cyclic groups of transactions; the first {} are shown",
            cycles.0.len()
        ));
    }
    if sat.init_count > shown_inits {
        notes.push(format!(
            "{} reads of an initial version after seeing a writer of the key; {shown_inits} are shown",
            sat.init_count
        ));
    }
    let bad = sat.init_count > 0 || total_cycles > 0;
    WeakOutcome {
        verdict: if bad {
            WeakVerdict::Anomalous
        } else {
            WeakVerdict::Ok
        },
        method,
        anomalies,
        also_fails,
        notes,
        // No cycle and no initial-version violation: the order exists.
        witness: if bad { None } else { witness },
    }
}

/// The graph `so ∪ wr ∪ forced` of a level, and the forced edges into the
/// initial transaction; `None` when the limit is hit first. For cc, a
/// refutation by lazy saturation gives the forced edges (a subset that
/// is cyclic already).
fn build(cx: &Ctx, level: Level, limit: Limit, lazy: Lazy) -> Option<Saturated> {
    let ix = cx.ix;
    let n = ix.len();
    let mut b: GraphBuilder<WLabel> = GraphBuilder::new(n);
    for s in &ix.sessions {
        for w in s.windows(2) {
            b.edge(
                w[0],
                w[1],
                WLabel {
                    why: Why::So,
                    key: NONE,
                    reader: w[1],
                    op: NONE,
                },
            );
        }
    }
    let mut seen = vec![0u32; n];
    for t3 in ix.committed_txns() {
        let elements = cx.elements(t3).iter().map(|&(w, key, op)| (w, key, op));
        let versions = ix.reads(t3).iter().map(|r| (r.writer, r.key, r.op));
        for (w, key, op) in versions.chain(elements) {
            if w != INIT && seen[w as usize] != t3 + 1 {
                seen[w as usize] = t3 + 1;
                b.edge(
                    w,
                    t3,
                    WLabel {
                        why: Why::Wr,
                        key,
                        reader: t3,
                        op,
                    },
                );
            }
        }
    }
    if cx.lists {
        list_edges(cx, &mut b);
    }
    let mut out = Forced::new(&mut b);
    let done = match level {
        Level::Rc => rc_edges(cx, &mut out, limit),
        Level::Ra => ra_edges(cx, &mut out, limit),
        Level::Cc => match lazy {
            Lazy::Refuted {
                edges,
                inits,
                init_count,
            } => {
                for (t1, t2, label) in edges {
                    out.b.edge(t1, t2, label);
                }
                out.inits = inits;
                out.init_count = init_count;
                true
            }
            _ => cc_edges(cx, &mut out, limit),
        },
        _ => unreachable!("saturation is for rc, ra and cc"),
    };
    let Forced {
        inits, init_count, ..
    } = out;
    (done && !limit.hit()).then_some(Saturated {
        graph: b,
        inits,
        init_count,
    })
}

/// The commit order the lists show: per key, the writers in the order of
/// the longest read, and every other committed writer of the key after the
/// last of them (its appends would show in every later version). Every read
/// is a prefix of the longest, or the lists' findings fail the level.
fn list_edges(cx: &Ctx, b: &mut GraphBuilder<WLabel>) {
    let ix = cx.ix;
    let Some(lo) = cx.lo else { return };
    let mut in_chain = vec![0u32; ix.len()];
    let mut writers: Vec<Vec<u32>> = vec![Vec::new(); ix.keys.len()];
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            writers[w.key as usize].push(t);
        }
    }
    for (&k, chain) in &lo.chains {
        let (reader, op) = lo.shown_by[&k];
        let label = WLabel {
            why: Why::List,
            key: k,
            reader,
            op,
        };
        for w in chain.windows(2) {
            b.edge(w[0], w[1], label);
        }
        let Some(&last) = chain.last() else { continue };
        for &t in chain {
            in_chain[t as usize] = k + 1;
        }
        for &u in &writers[k as usize] {
            if in_chain[u as usize] != k + 1 {
                b.edge(last, u, label);
            }
        }
    }
}

/// The shortest cycle (session steps free) of each cyclic component, at
/// most `limit` of them, and the number of cyclic components.
fn shortest_cycles(g: &Graph<WLabel>, limit: usize) -> (Vec<Vec<PathEdge<WLabel>>>, usize) {
    let comps = g.cyclic_components(|_| true);
    let mut comp_of = vec![u32::MAX; g.node_count()];
    let mut scratch = CycleScratch::default();
    let weight = |l: WLabel| u32::from(l.why != Why::So);
    let rank = |c: &[PathEdge<WLabel>]| {
        (
            c.iter().filter(|e| e.label.why != Why::So).count(),
            c.iter().filter(|e| e.label.is_co()).count(),
        )
    };
    let mut out = Vec::new();
    for (tag, comp) in comps.iter().enumerate().take(limit) {
        for &v in comp {
            comp_of[v as usize] = tag as u32;
        }
        let step = (comp.len() / 16).max(1);
        let mut best: Option<Vec<PathEdge<WLabel>>> = None;
        for &s in comp.iter().step_by(step).take(16) {
            let Some(c) = g.shortest_cycle_through(
                s,
                |v| comp_of[v as usize] == tag as u32,
                |_| true,
                weight,
                &mut scratch,
            ) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| rank(&c) < rank(b)) {
                best = Some(c);
            }
        }
        if let Some(c) = best {
            out.push(c);
        }
    }
    (out, comps.len())
}
