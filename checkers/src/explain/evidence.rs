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

use history::{Op, Status};

use crate::certify::certificate::{
    ClaimedEdge, EdgeClaim, Refutation, Witness, WwWhy, MAX_SUB_TXNS,
};
use crate::decide::cycles::Cycle;
use crate::decide::depgraph::{Dep, Model, TxnEdge, Why};
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

/// A cycle of forced edges as a claimed cycle; `None` when an edge has no
/// local evidence (the checker chose it).
pub fn cycle(ix: &Index, c: &Cycle) -> Option<Refutation> {
    let edges: Vec<ClaimedEdge> = c
        .edges
        .iter()
        .map(|e| claim(ix, e))
        .collect::<Option<_>>()?;
    (!edges.is_empty()).then_some(Refutation::Cycle(edges))
}

/// A refuted set of transactions, when small enough to re-decide by brute
/// force.
pub fn sub_history(ix: &Index, mut txns: Vec<u32>) -> Option<Refutation> {
    txns.retain(|&t| ix.committed[t as usize]);
    txns.sort_unstable();
    txns.dedup();
    // An `info` transaction committed only because an ok one read from it:
    // keep one such reader, or alone the set could let it abort.
    let mut i = 0;
    while i < txns.len() {
        let t = txns[i];
        i += 1;
        if ix.history.txns[t as usize].status != Status::Info
            || txns.iter().any(|&r| reads_from(ix, r, t))
        {
            continue;
        }
        if let Some(r) = ix.committed_txns().find(|&r| reads_from(ix, r, t)) {
            txns.push(r);
        }
    }
    txns.sort_unstable();
    txns.dedup();
    (!txns.is_empty() && txns.len() <= MAX_SUB_TXNS).then_some(Refutation::SubHistory(txns))
}

/// True when `r` is ok and read a value `t` wrote.
fn reads_from(ix: &Index, r: u32, t: u32) -> bool {
    let txn = &ix.history.txns[r as usize];
    if txn.status != Status::Ok {
        return false;
    }
    // A value written more than once names no writer.
    let by = |k: &history::Key, v: i64| {
        ix.key_id(k)
            .filter(|&k| !ix.duplicated(k, v))
            .and_then(|k| ix.writer.get(&(k, v)))
            .is_some_and(|w| w.txn == t)
    };
    txn.ops.iter().any(|op| match op {
        Op::Read {
            key,
            value: Some(v),
        } => by(key, *v),
        Op::ReadList {
            key,
            values: Some(vs),
        } => vs.iter().any(|v| by(key, *v)),
        Op::RangeRead { rows, .. } => rows.iter().any(|(k, v)| by(k, *v)),
        _ => false,
    })
}

/// The transactions a weak-level counterexample needs to be refuted on its
/// own: its own, plus, for each write-write edge on a list, one ok reader
/// whose list shows the order.
pub fn weak_core(ix: &Index, a: &crate::report::Anomaly) -> Vec<u32> {
    let mut txns = txns_by_id(ix, a.txns.iter().map(|t| t.id));
    if !ix.lists {
        return txns;
    }
    let index_of = |id: u64| txns_by_id(ix, std::iter::once(id)).first().copied();
    for e in &a.edges {
        if e.kind != crate::report::EdgeKind::Ww {
            continue;
        }
        let (Some(from), Some(to), Some(k)) = (index_of(e.from), index_of(e.to), &e.key) else {
            continue;
        };
        if let Some(r) = list_reader(ix, k, from, to) {
            txns.push(r);
        }
    }
    txns
}

/// An ok transaction whose read of list `k` shows `from`'s element, and
/// `to`'s only after it.
fn list_reader(ix: &Index, k: &history::Key, from: u32, to: u32) -> Option<u32> {
    let kid = ix.key_id(k)?;
    let by = |v: &i64| {
        (!ix.duplicated(kid, *v))
            .then(|| ix.writer.get(&(kid, *v)).map(|w| w.txn))
            .flatten()
    };
    ix.committed_txns().find(|&r| {
        r != from
            && r != to
            && ix.history.txns[r as usize].status == Status::Ok
            && ix.history.txns[r as usize].ops.iter().any(|op| match op {
                Op::ReadList {
                    key,
                    values: Some(vs),
                } if key == k => {
                    let i = vs.iter().position(|v| by(v) == Some(from));
                    let j = vs.iter().position(|v| by(v) == Some(to));
                    matches!((i, j), (Some(i), Some(j)) if i < j) || (i.is_some() && j.is_none())
                }
                _ => false,
            })
    })
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
pub(crate) fn claim(ix: &Index, e: &TxnEdge) -> Option<ClaimedEdge> {
    let l = e.label;
    let key = || ix.keys[l.key as usize].clone();
    let (kind, key) = match l.dep {
        Dep::Wr => (EdgeClaim::Wr, Some(key())),
        Dep::Ww => (
            EdgeClaim::Ww(precedes(ix, e.from, e.to, l.key, l.why)?),
            Some(key()),
        ),
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
        Why::Observed | Why::Rmw | Why::FirstWriter => {}
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
