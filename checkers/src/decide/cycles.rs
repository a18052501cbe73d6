//! Finding cycles in a dependency graph and naming them.
//!
//! The search goes in layers, as Elle's does: first data dependencies only
//! (ww, wr, rw), then with session order, then with real-time order. A
//! component that only becomes cyclic once session edges are added holds a
//! *session* anomaly, and so on; this gives each cycle the weakest scope
//! that explains it, so a report never blames real time for what the data
//! alone shows. In each cyclic component the shortest cycle is reported:
//! the smallest set of transactions that shows the anomaly.

use crate::anomaly::{AnomalyKind, CommonName, Scope};
use crate::decide::depgraph::{Dep, DepGraph, Label, Orders, TxnEdge, Why};
use crate::graph::CycleScratch;

/// A cycle of transactions, with the weakest scope that closes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    pub scope: Scope,
    pub edges: Vec<TxnEdge>,
}

impl Cycle {
    /// A cycle named by the weakest scope its edges need: a session edge
    /// makes it a session anomaly, a real-time edge a real-time one.
    pub fn of_edges(edges: Vec<TxnEdge>) -> Cycle {
        let scope = [Scope::Item, Scope::Session, Scope::RealTime]
            .into_iter()
            .find(|&s| edges.iter().all(|e| keep_for(s)(e.label)))
            .unwrap_or(Scope::RealTime);
        Cycle { scope, edges }
    }
}

fn keep_for(scope: Scope) -> impl Fn(Label) -> bool {
    move |l: Label| match l.dep {
        Dep::Ww | Dep::Wr | Dep::Rw | Dep::Internal | Dep::Ts => true,
        Dep::So => scope != Scope::Item,
        Dep::Rt | Dep::RtChain => scope == Scope::RealTime,
    }
}

fn weight(l: Label) -> u32 {
    match l.dep {
        Dep::Internal | Dep::RtChain | Dep::Ts => 0,
        _ => 1,
    }
}

/// Every cyclic component's shortest cycle, layer by layer. Components of a
/// later layer that contain a node already reported are skipped: their
/// core anomaly is already shown.
pub fn find_cycles(dg: &DepGraph, orders: Orders) -> Vec<Cycle> {
    let g = &dg.graph;
    let mut scopes = vec![Scope::Item];
    if orders.sessions || orders.realtime {
        scopes.push(Scope::Session);
    }
    if orders.realtime {
        scopes.push(Scope::RealTime);
    }
    let mut covered = vec![false; g.node_count()];
    let mut comp_of = vec![u32::MAX; g.node_count()];
    let mut scratch = CycleScratch::default();
    let mut out = Vec::new();
    let mut next_tag = 0u32;
    for &scope in &scopes {
        let keep = keep_for(scope);
        let comps = g.cyclic_components(&keep);
        for comp in &comps {
            if comp.iter().any(|&v| covered[v as usize]) {
                continue;
            }
            let tag = next_tag;
            next_tag += 1;
            for &v in comp {
                comp_of[v as usize] = tag;
            }
            // Try several start nodes; small components, all of them.
            let starts: Vec<u32> = {
                let txn_nodes: Vec<u32> = comp
                    .iter()
                    .copied()
                    .filter(|&v| dg.txn_of(v).is_some())
                    .collect();
                if txn_nodes.len() <= 64 {
                    txn_nodes
                } else {
                    let step = txn_nodes.len() / 16;
                    txn_nodes
                        .iter()
                        .step_by(step.max(1))
                        .take(16)
                        .copied()
                        .collect()
                }
            };
            let mut best: Option<Vec<TxnEdge>> = None;
            for s in starts {
                let Some(path) = g.shortest_cycle_through(
                    s,
                    |v| comp_of[v as usize] == tag,
                    &keep,
                    weight,
                    &mut scratch,
                ) else {
                    continue;
                };
                let edges = dg.to_txn_edges(&path);
                if best.as_ref().is_none_or(|b| rank(&edges) < rank(b)) {
                    best = Some(edges);
                }
            }
            for &v in comp {
                covered[v as usize] = true;
            }
            if let Some(edges) = best {
                out.push(Cycle { scope, edges });
            }
        }
    }
    out
}

/// Shorter first; among equals, fewer anti-dependencies (closer to G0/G1).
fn rank(edges: &[TxnEdge]) -> (usize, usize) {
    (
        edges.len(),
        edges.iter().filter(|e| e.label.dep == Dep::Rw).count(),
    )
}

/// Adya's name for a cycle, and its common name when the shape has one.
pub fn classify(c: &Cycle) -> (AnomalyKind, Option<CommonName>) {
    let e = &c.edges;
    let n = e.len();
    // Named by Adya's graph where that keeps the cycle's meaning: a first
    // writer's precedence is the anti-dependency it stands for (see
    // `Why::FirstWriter`), when that makes the cycle one anti-dependency
    // (G-single). With more, the name would be one the level allows
    // (G2), while the cycle refutes it only through the level's own
    // first-writer rule; such a cycle keeps its ww name.
    let plain_rw = e.iter().filter(|x| x.label.dep == Dep::Rw).count();
    let first_writers = e
        .iter()
        .filter(|x| x.label.dep == Dep::Ww && x.label.why == Why::FirstWriter)
        .count();
    let swap = plain_rw + first_writers == 1;
    let adya_rw = |x: &TxnEdge| {
        x.label.dep == Dep::Rw
            || (swap && x.label.dep == Dep::Ww && x.label.why == Why::FirstWriter)
    };
    let is_rw = |i: usize| adya_rw(&e[i % n]);
    let rw = (0..n).filter(|&i| is_rw(i)).count();
    let adjacent = (0..n).any(|i| is_rw(i) && is_rw(i + 1));
    let predicate = e
        .iter()
        .any(|x| x.label.dep == Dep::Rw && x.label.predicate);
    let kind = match rw {
        0 if e.iter().all(|x| x.label.dep == Dep::Ww) => AnomalyKind::G0,
        0 => AnomalyKind::G1c,
        1 => AnomalyKind::GSingle,
        _ if !adjacent => AnomalyKind::GNonadjacent,
        _ if predicate => AnomalyKind::G2,
        _ => AnomalyKind::G2Item,
    };
    let mut txns: Vec<u32> = e.iter().map(|x| x.from).collect();
    txns.sort_unstable();
    txns.dedup();
    let others: Vec<&TxnEdge> = e.iter().filter(|x| !adya_rw(x)).collect();
    let common = match kind {
        AnomalyKind::GSingle => match c.scope {
            Scope::RealTime => Some(CommonName::StaleRead),
            Scope::Session => Some(CommonName::SessionGuaranteeViolation),
            Scope::Item => {
                let rw_edge = e.iter().find(|x| adya_rw(x)).expect("one rw");
                if txns.len() == 2
                    && others.len() == 1
                    && others[0].label.dep == Dep::Ww
                    && others[0].label.key == rw_edge.label.key
                {
                    Some(CommonName::LostUpdate)
                } else if txns.len() == 2 && others.iter().all(|x| x.label.dep == Dep::Wr) {
                    Some(CommonName::FracturedRead)
                } else if txns.len() >= 3 && others.iter().all(|x| x.label.dep == Dep::Wr) {
                    Some(CommonName::CausalityViolation)
                } else {
                    None
                }
            }
        },
        AnomalyKind::G2Item | AnomalyKind::G2
            if txns.len() == 2 && rw == 2 && c.scope == Scope::Item =>
        {
            Some(CommonName::WriteSkew)
        }
        AnomalyKind::GNonadjacent
            if c.scope == Scope::Item
                && n == 4
                && rw == 2
                && others.iter().all(|x| x.label.dep == Dep::Wr) =>
        {
            Some(CommonName::LongFork)
        }
        _ => None,
    };
    (kind, common)
}
