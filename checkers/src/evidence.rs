//! The checker's results as certificates: every `ok` with the witness it
//! found, every anomaly with the evidence that proves it, in the terms of
//! [`certify`](crate::certify), which re-checks them on its own.
//!
//! The checker knows *why* it drew each edge (a [`Why`] on its label);
//! here that reason becomes a claim the verifier can test against the ops
//! of the history: a read-modify-write, a first writer, a list order, the
//! database's timestamps. An edge the checker *chose* (one side of a
//! constraint, forced only because the other side was refuted too) has no
//! local evidence; a refutation that needs one is given instead as the
//! small sub-history it was shrunk to, which the verifier re-decides by
//! brute force.

use crate::certify::{ClaimedEdge, EdgeClaim, Refutation, Witness, WwWhy, MAX_SUB_TXNS};
use crate::cycles::Cycle;
use crate::depgraph::{Dep, Model, TxnEdge, Why};
use crate::index::{Finding, Index, INIT};

/// The witness of an `ok` verdict from a schedule of graph nodes (SER
/// model: transactions; SI model: `2t` begin, `2t + 1` commit), keeping
/// the committed transactions only.
pub fn witness_of_schedule(ix: &Index, model: Model, schedule: &[u32]) -> Witness {
    match model {
        Model::Ser => Witness::Serial(
            schedule
                .iter()
                .copied()
                .filter(|&t| ix.committed[t as usize])
                .collect(),
        ),
        Model::Si => Witness::Schedule(
            schedule
                .iter()
                .map(|&v| (v / 2, v % 2 == 1))
                .filter(|&(t, _)| ix.committed[t as usize])
                .collect(),
        ),
    }
}

/// A non-cyclic anomaly, as the read that shows it.
pub fn finding(f: &Finding) -> Refutation {
    Refutation::Finding {
        kind: f.kind,
        txn: f.txn,
        op: f.op,
    }
}

/// Two transactions that read one version of `key` and both overwrote it.
pub fn lost_update(ix: &Index, key: u32, base: u32, a: u32, b: u32) -> Refutation {
    Refutation::LostUpdate {
        key: ix.keys[key as usize].clone(),
        base: (base != INIT).then_some(base),
        a,
        b,
    }
}

/// A cycle of forced edges as a claimed cycle, or, when an edge has no
/// local evidence, the set of its transactions as a sub-history.
pub fn cycle(ix: &Index, c: &Cycle) -> Option<Refutation> {
    let claimed: Option<Vec<ClaimedEdge>> = c.edges.iter().map(|e| edge(ix, e)).collect();
    match claimed {
        Some(edges) if !edges.is_empty() => Some(Refutation::Cycle(edges)),
        _ => {
            let mut txns: Vec<u32> = c.edges.iter().flat_map(|e| [e.from, e.to]).collect();
            txns.sort_unstable();
            txns.dedup();
            sub_history(ix, txns)
        }
    }
}

/// A refuted set of transactions, when small enough to re-decide by brute
/// force.
pub fn sub_history(ix: &Index, mut txns: Vec<u32>) -> Option<Refutation> {
    txns.retain(|&t| ix.committed[t as usize]);
    txns.sort_unstable();
    txns.dedup();
    (!txns.is_empty() && txns.len() <= MAX_SUB_TXNS).then_some(Refutation::SubHistory(txns))
}

/// The transactions of a counterexample, by their ids in the history.
pub fn txns_by_id(ix: &Index, ids: impl Iterator<Item = u64>) -> Vec<u32> {
    let mut want: Vec<u64> = ids.collect();
    want.sort_unstable();
    want.dedup();
    ix.history
        .txns
        .iter()
        .enumerate()
        .filter(|(_, t)| want.binary_search(&t.id).is_ok())
        .map(|(i, _)| i as u32)
        .collect()
}

/// One edge with its evidence, or `None` when the checker chose it.
fn edge(ix: &Index, e: &TxnEdge) -> Option<ClaimedEdge> {
    let l = e.label;
    let key = || ix.keys[l.key as usize].clone();
    let (kind, key) = match l.dep {
        Dep::Wr => (EdgeClaim::Wr, Some(key())),
        Dep::Ww => (EdgeClaim::Ww(precedes(ix, e.from, e.to, l.key, l.why)?), Some(key())),
        Dep::Rw => {
            let why = if l.read_from == INIT {
                WwWhy::FirstWriter
            } else {
                precedes(ix, l.read_from, e.to, l.key, l.why)?
            };
            (
                EdgeClaim::Rw {
                    read_from: (l.read_from != INIT).then_some(l.read_from),
                    why,
                },
                Some(key()),
            )
        }
        Dep::So => (EdgeClaim::So, None),
        Dep::Rt => (EdgeClaim::Rt, None),
        Dep::Ts => (
            EdgeClaim::Ts {
                from_commit: l.key & 1 == 1,
                to_commit: l.key & 2 == 2,
            },
            None,
        ),
        Dep::RtChain | Dep::Internal => return None,
    };
    Some(ClaimedEdge {
        from: e.from,
        to: e.to,
        kind,
        key,
    })
}

/// Why `from`'s version of key `k` comes before `to`'s, in terms the
/// history shows.
fn precedes(ix: &Index, from: u32, to: u32, k: u32, why: Why) -> Option<WwWhy> {
    match why {
        Why::ListOrder => return Some(WwWhy::ListOrder),
        Why::DbTs => return Some(WwWhy::DbTs),
        Why::Chosen | Why::Order => return None,
        Why::Observed | Why::Rmw => {}
    }
    let wrote_after = |t: u32, op: u32| ix.writes(t).iter().any(|w| w.key == k && w.op > op);
    // `to` read `from`'s version, then wrote the key.
    if ix
        .reads(to)
        .iter()
        .any(|r| r.key == k && r.writer == from && wrote_after(to, r.op))
    {
        return Some(WwWhy::ReadModifyWrite);
    }
    // `from` read the key as absent, then wrote it: it came first.
    if ix
        .reads(from)
        .iter()
        .any(|r| r.key == k && r.writer == INIT && wrote_after(from, r.op))
    {
        return Some(WwWhy::FirstWriter);
    }
    None
}
