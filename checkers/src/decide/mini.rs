//! Mini-transactions (MTC, Definition 8): one or two reads, at most two
//! writes, and every write preceded by a read of the same key. A read-only
//! transaction may read more keys (a run's final reads read all of them):
//! it orders no version, so everything below holds with it.
//!
//! Because every write reads the version it overwrites, the version order
//! of each key is known: the writer that read version `v` installed the
//! version right after `v` (anything else is already a lost update). So the
//! dependency graph is unique, and SER, SI and SSER are decided in linear
//! time (O(n log n) for SSER, for the sort by time). The one exception is
//! the DIVERGENCE pattern: two transactions read the same version and both
//! overwrite it. Whichever goes first, the other overwrote a version it
//! never read: a lost update, which SI and SER both forbid.

use crate::decide::depgraph::{VersionOrder, Why};
use crate::index::shape::{shape, Shape};
use crate::index::Index;

/// One DIVERGENCE: `a` and `b` both read `base`'s version of `key` (or the
/// initial version) and both wrote `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub key: u32,
    pub base: u32,
    pub a: u32,
    pub b: u32,
}

/// Why the history is not made of mini-transactions, or `None` if it is.
/// Only committed transactions matter: an aborted one constrains nothing.
/// Found once per index: every stage asks.
pub fn not_mini(ix: &Index) -> Option<String> {
    ix.not_mini.get_or_init(|| find_not_mini(ix)).clone()
}

fn find_not_mini(ix: &Index) -> Option<String> {
    // The transactions of the wrong shape were listed by the index, in
    // order; the first committed one is the reason.
    let t = ix
        .not_mini_shaped
        .iter()
        .copied()
        .find(|&t| ix.committed[t as usize])?;
    let txn = &ix.history.txns[t as usize];
    let id = txn.id;
    Some(match shape(txn)? {
        Shape::Blind => {
            // Its reads tell nothing, so its writes are blind.
            format!("transaction {id} has an unknown outcome, so its writes count as blind")
        }
        Shape::WriteUnread(key) => {
            format!("transaction {id} writes {key} without reading it first")
        }
        Shape::Op(other) => {
            format!("transaction {id} has an op ({other}) that mini-transactions do not use")
        }
        Shape::Reads(reads) => {
            format!("transaction {id} writes and has {reads} reads (1 or 2 allowed)")
        }
        Shape::Writes(writes) => {
            format!("transaction {id} has {writes} writes (at most 2 allowed)")
        }
    })
}

/// The version order a mini-transaction history forces: each writer comes
/// right after the version it read. Competing successors are returned as
/// divergences.
pub fn version_order(ix: &Index) -> (VersionOrder, Vec<Divergence>) {
    let mut vo = VersionOrder::by_txn(ix.len());
    let mut div = Vec::new();
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            // The read of the same key that precedes the write.
            let Some(r) = ix.reads(t).iter().find(|r| r.key == w.key && r.op < w.op) else {
                continue;
            };
            if let Some(other) = vo.link(w.key, r.writer, t, Why::Rmw) {
                div.push(Divergence {
                    key: w.key,
                    base: r.writer,
                    a: other,
                    b: t,
                });
            }
        }
    }
    (vo, div)
}
