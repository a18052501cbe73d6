//! A pruning contradiction written down as a [`Derivation`] the certificate
//! checker can follow on its own.
//!
//! Pruning decides constraints in rounds; a decision of round `r` rests on
//! the graph as it stood when round `r` began: the known edges and the
//! decisions of earlier rounds. Here the contradiction is traced back: the
//! final cycle names the decisions it uses, each decision gets the path
//! that closed a cycle with its rejected side (found again by a search
//! restricted to earlier rounds), and so on until only known edges remain.
//! Only the decisions the contradiction needs become steps.

use std::collections::VecDeque;
use std::time::Instant;

use rustc_hash::FxHashMap;

use crate::certify::certificate::{ClaimedEdge, EdgeClaim, WwWhy};
use crate::certify::certificate::{Derivation, ProofEdge, Step};
use crate::decide::blackbox::polygraph::{NodeEdge, Polygraph, PruneEnd, PruneLog};
use crate::decide::depgraph::{Dep, Label, Model, TxnEdge};
use crate::index::Index;

/// Most steps a derivation may take before we give up on writing it.
const MAX_STEPS: usize = 4096;

/// Where an edge of the pruned graph came from.
#[derive(Clone, Copy)]
enum Source {
    Known(Label),
    /// A decision (its index in the log).
    Decided(u32, Label),
}

/// The derivation of a pruning contradiction, or `None` when an edge has
/// no evidence the certificate checker knows, or it would be too long.
pub fn derivation(
    ix: &Index,
    p: &Polygraph,
    log: &PruneLog,
    deadline: Option<Instant>,
) -> Option<Derivation> {
    let end = log.end.as_ref()?;
    // The decisions as (first, second, round, rejected edge), plus, when
    // both sides of one constraint failed, that constraint decided last.
    let mut decisions: Vec<Decision> = log
        .decisions
        .iter()
        .map(|&(c, a_first, round, rej)| {
            let k = &p.constraints[c as usize];
            let (first, second) = if a_first { (k.a, k.b) } else { (k.b, k.a) };
            (first, second, round, rej)
        })
        .collect();
    let sides: Vec<&[NodeEdge]> = log
        .decisions
        .iter()
        .map(|&(c, a_first, _, _)| p.side(c as usize, a_first))
        .collect();
    let end = match end {
        PruneEnd::Both {
            c,
            round,
            a_first,
            b_first,
        } => {
            let k = &p.constraints[*c as usize];
            decisions.push((k.a, k.b, *round, *b_first));
            End::Both {
                edge: *a_first,
                round: *round,
            }
        }
        PruneEnd::Cycle(cyc) => End::Cycle(cyc.iter().map(|&(f, t, _)| (f, t)).collect()),
    };
    trace(ix, p, &p.known, &decisions, &sides, end, deadline)
}

/// The derivation of a contradiction found by pruning with clocks: its
/// decisions (each with the edges it added, `sides[i]`) and the cycle of
/// node edges they closed.
pub fn derivation_of(
    ix: &Index,
    known: &Polygraph,
    decisions: &[Decision],
    sides: &[&[NodeEdge]],
    cycle: Vec<(u32, u32)>,
    deadline: Option<Instant>,
) -> Option<Derivation> {
    trace(
        ix,
        known,
        &known.known,
        decisions,
        sides,
        End::Cycle(cycle),
        deadline,
    )
}

/// A pruning decision: `first` before `second` from `round` on, because
/// the other order implies the rejected edge, which closes a cycle with the
/// graph as it stood when the round began.
pub type Decision = (u32, u32, u32, NodeEdge);

/// How a pruning contradiction ends.
enum End {
    /// Both orders of the last decision's pair close a cycle: `edge` is
    /// the offending edge of the order that decision did not reject.
    Both { edge: NodeEdge, round: u32 },
    /// The decisions' edges closed this cycle.
    Cycle(Vec<(u32, u32)>),
}

/// Traces a contradiction back through the decisions it needs, down to
/// known edges.
fn trace(
    ix: &Index,
    p: &Polygraph,
    known: &[NodeEdge],
    decisions: &[Decision],
    sides: &[&[NodeEdge]],
    end: End,
    deadline: Option<Instant>,
) -> Option<Derivation> {
    // Every edge with its earliest source and the round it entered.
    let mut source: FxHashMap<(u32, u32), Source> = FxHashMap::default();
    let mut adj: Vec<Vec<(u32, u32)>> = vec![Vec::new(); p.nodes];
    for &(f, t, l) in known {
        source.entry((f, t)).or_insert(Source::Known(l));
        adj[f as usize].push((t, 0));
    }
    for (i, side) in sides.iter().enumerate() {
        let round = decisions[i].2;
        for &(f, t, l) in side.iter() {
            source.entry((f, t)).or_insert(Source::Decided(i as u32, l));
            adj[f as usize].push((t, round));
        }
    }
    let final_nodes: Vec<(u32, u32, Source)> = match end {
        End::Both { edge, round } => {
            let last = decisions.len() as u32 - 1;
            let mut cyc = vec![(edge.0, edge.1, Source::Decided(last, edge.2))];
            cyc.extend(path(&adj, &source, edge.1, edge.0, round)?);
            cyc
        }
        End::Cycle(cyc) => cyc
            .iter()
            .map(|&(f, t)| source.get(&(f, t)).map(|&s| (f, t, s)))
            .collect::<Option<_>>()?,
    };
    // The decisions the final cycle needs, and theirs, and so on.
    let mut back: FxHashMap<u32, Vec<(u32, u32, Source)>> = FxHashMap::default();
    let mut work: Vec<u32> = needs(&final_nodes);
    while let Some(d) = work.pop() {
        if back.contains_key(&d) {
            continue;
        }
        if back.len() >= MAX_STEPS || deadline.is_some_and(|t| Instant::now() > t) {
            return None;
        }
        let (_, _, round, (f, t, _)) = decisions[d as usize];
        let p_back = path(&adj, &source, t, f, round)?;
        work.extend(needs(&p_back));
        back.insert(d, p_back);
    }
    // Steps in decision order (rounds ascending), so each uses earlier ones.
    let mut order: Vec<u32> = back.keys().copied().collect();
    order.sort_unstable();
    let step_of: FxHashMap<u32, u32> = order
        .iter()
        .enumerate()
        .map(|(i, &d)| (d, i as u32))
        .collect();
    let conv = Conv {
        ix,
        p,
        decisions,
        step_of: &step_of,
    };
    let mut steps = Vec::with_capacity(order.len());
    for &d in &order {
        // The rejected side is the order `second` before `first`: its
        // edges point into `first`.
        let (first, second, _, (f, t, l)) = decisions[d as usize];
        let rejected = conv.chosen_edge(f, t, l, first)?;
        steps.push(Step {
            first,
            second,
            rejected,
            back: conv.path(&back[&d], false)?,
        });
    }
    Some(Derivation {
        steps,
        cycle: conv.path(&final_nodes, true)?,
    })
}

/// The decisions a list of edges uses.
fn needs(edges: &[(u32, u32, Source)]) -> Vec<u32> {
    edges
        .iter()
        .filter_map(|&(_, _, s)| match s {
            Source::Decided(d, _) => Some(d),
            Source::Known(_) => None,
        })
        .collect()
}

/// A shortest path `from ⇝ to` over edges that entered before `round`.
fn path(
    adj: &[Vec<(u32, u32)>],
    source: &FxHashMap<(u32, u32), Source>,
    from: u32,
    to: u32,
    round: u32,
) -> Option<Vec<(u32, u32, Source)>> {
    if from == to {
        return Some(Vec::new());
    }
    let mut parent: FxHashMap<u32, u32> = FxHashMap::default();
    let mut queue = VecDeque::from([from]);
    parent.insert(from, from);
    while let Some(v) = queue.pop_front() {
        for &(w, r) in &adj[v as usize] {
            if r >= round || parent.contains_key(&w) {
                continue;
            }
            parent.insert(w, v);
            if w == to {
                let mut out = Vec::new();
                let mut x = to;
                while x != from {
                    let px = parent[&x];
                    out.push((px, x, *source.get(&(px, x))?));
                    x = px;
                }
                out.reverse();
                return Some(out);
            }
            queue.push_back(w);
        }
    }
    None
}

/// Turns node-level edges into the certificate's transaction-level claims.
struct Conv<'a> {
    ix: &'a Index<'a>,
    p: &'a Polygraph,
    decisions: &'a [(u32, u32, u32, NodeEdge)],
    step_of: &'a FxHashMap<u32, u32>,
}

impl Conv<'_> {
    /// The transaction of a node and whether the node is its commit.
    fn txn(&self, node: u32) -> Option<(u32, bool)> {
        let t = self.p.txn_of(node)?;
        Some((t, self.p.model == Model::Si && node % 2 == 1))
    }

    /// An edge a commit order implies (`Ww first → second`, or `Rw R →
    /// second` reading `first`'s version), as a claim.
    fn chosen_edge(&self, f: u32, t: u32, l: Label, second: u32) -> Option<ClaimedEdge> {
        let (from, _) = self.txn(f)?;
        let (to, _) = self.txn(t)?;
        self.chosen_edge_txn(from, to, l, second)
    }

    /// A path (or, with `cycle`, a cycle) of node edges as proof edges:
    /// steps inside a transaction vanish, and a run through time nodes
    /// becomes one real-time or timestamp edge.
    fn path(&self, edges: &[(u32, u32, Source)], cycle: bool) -> Option<Vec<ProofEdge>> {
        let n = edges.len();
        // A cycle is read from an edge that leaves a transaction node.
        let start = if cycle {
            (0..n).find(|&i| self.txn(edges[i].0).is_some())?
        } else {
            0
        };
        let mut out = Vec::new();
        let mut entered: Option<(u32, bool, Dep)> = None;
        for i in 0..n {
            let (f, t, s) = edges[(start + i) % n];
            let label = match s {
                Source::Known(l) | Source::Decided(_, l) => l,
            };
            match (self.txn(f), self.txn(t)) {
                (Some(a), Some(b)) => {
                    if label.dep == Dep::Internal || a.0 == b.0 {
                        continue;
                    }
                    out.push(self.proof_edge(a.0, b.0, label, s)?);
                }
                (Some(a), None) => entered = Some((a.0, a.1, label.dep)),
                (None, Some(b)) => {
                    let (from, from_commit, dep) = entered.take()?;
                    let kind = match dep {
                        Dep::Rt => EdgeClaim::Rt,
                        Dep::Ts => EdgeClaim::Ts {
                            from_commit,
                            to_commit: b.1,
                        },
                        _ => return None,
                    };
                    if from != b.0 || matches!(kind, EdgeClaim::Ts { .. }) {
                        out.push(ProofEdge::Forced(ClaimedEdge {
                            from,
                            to: b.0,
                            kind,
                            key: None,
                        }));
                    }
                }
                (None, None) => {}
            }
        }
        (entered.is_none() || !cycle).then_some(out)
    }

    fn proof_edge(&self, from: u32, to: u32, l: Label, s: Source) -> Option<ProofEdge> {
        match s {
            Source::Known(_) => {
                let e = TxnEdge { from, to, label: l };
                crate::explain::evidence::claim(self.ix, &e).map(ProofEdge::Forced)
            }
            Source::Decided(d, _) => {
                let (_, second, _, _) = self.decisions[d as usize];
                Some(ProofEdge::Chosen {
                    step: *self.step_of.get(&d)?,
                    edge: self.chosen_edge_txn(from, to, l, second)?,
                })
            }
        }
    }

    fn chosen_edge_txn(&self, from: u32, to: u32, l: Label, second: u32) -> Option<ClaimedEdge> {
        if to != second {
            return None;
        }
        let kind = match l.dep {
            Dep::Ww => EdgeClaim::Ww(WwWhy::Chain(Vec::new())),
            Dep::Rw => EdgeClaim::Rw {
                read_from: Some(l.read_from),
                why: WwWhy::Chain(Vec::new()),
            },
            _ => return None,
        };
        Some(ClaimedEdge {
            from,
            to,
            kind,
            key: Some(self.ix.keys[l.key as usize].clone()),
        })
    }
}
