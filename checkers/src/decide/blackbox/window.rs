//! Refutation by windows: when the search that assumes session order meets
//! a contradiction that needs session edges (so it proves nothing at `si`
//! or `ser`, which ignore sessions), the real anomaly is usually nearby.
//!
//! A *window* is a run of consecutive transactions in a guessed commit
//! order (the layers of read-from and session order, which no file order
//! can mislead) around the contradiction's transactions. Its sub-history
//! keeps those transactions and drops every read of a value written
//! outside them ([`sub_history`]). Dropping transactions and reads only
//! removes constraints, so a window refuted on its own refutes the whole
//! history. The window is checked by pair pruning without sessions (no
//! witness, no clocks, no solver: only a derivation is of use). On a few
//! thousand transactions that finds a contradiction without session
//! edges, where the whole history's search under session order meets only
//! ones that need them. The derivation, renamed
//! to the whole history's ids, is checked by the certificate checker
//! before it is believed. Windows grow twofold until one is refuted, one
//! is too big, or the time share runs out.

use std::time::{Duration, Instant};

use history::Level;

use crate::certify::certificate::Refutation;
use crate::certify::refutes;
use crate::decide::blackbox::general::types::{General, GeneralOptions, Search};
use crate::decide::blackbox::interpret::sub_history;
use crate::index::{Index, INIT};

/// Largest window checked (transactions): pruning a window grows faster
/// than its size (1 s at 11.6k transactions, 3.8 s at 21k, 15 s at 40k in
/// a 100k BlindW-RW history; BENCHMARKS.md, issue 14's fourth stop).
const MAX_WINDOW: usize = 16_384;
/// A window's time, per transaction in it.
const PER_TXN: Duration = Duration::from_micros(500);
/// Smallest margin on each side of the contradiction's transactions.
const MIN_MARGIN: usize = 64;

/// The committed transactions in a guessed commit order, and each one's
/// rank in it (`u32::MAX` for the rest).
pub struct Ranks {
    order: Vec<u32>,
    rank: Vec<u32>,
}

impl Ranks {
    /// Ranks committed transactions by `pos` (a commit position per
    /// transaction).
    pub fn new(ix: &Index, pos: impl Fn(u32) -> u32) -> Ranks {
        let mut order: Vec<u32> = ix.committed_txns().collect();
        order.sort_unstable_by_key(|&t| pos(t));
        let mut rank = vec![u32::MAX; ix.len()];
        for (i, &t) in order.iter().enumerate() {
            rank[t as usize] = i as u32;
        }
        Ranks { order, rank }
    }
}

/// Looks for a refuted window around `seed` at `level`, within `until`:
/// a certified refutation of the whole history, or `None`.
pub fn refute_by_windows(
    ix: &Index,
    level: Level,
    ranks: &Ranks,
    seed: &[u32],
    until: Instant,
) -> Option<General> {
    let placed: Vec<usize> = seed
        .iter()
        .filter(|&&t| t != INIT && (t as usize) < ix.len())
        .map(|&t| ranks.rank[t as usize])
        .filter(|&r| r != u32::MAX)
        .map(|r| r as usize)
        .collect();
    let (lo, hi) = (*placed.iter().min()?, *placed.iter().max()?);
    let n = ranks.order.len();
    let mut margin = (hi - lo + 1).div_ceil(2).max(MIN_MARGIN);
    loop {
        let (a, b) = (lo.saturating_sub(margin), (hi + margin + 1).min(n));
        if Instant::now() >= until || b - a > MAX_WINDOW {
            return None;
        }
        // A window without the anomaly is as hard to pass as the whole
        // history: each gets time in proportion to its size, and the
        // next, larger one the rest.
        let budget = PER_TXN * (b - a) as u32;
        let this = until.min(Instant::now() + budget);
        if let Some(refuted) = refute_window(ix, level, &ranks.order[a..b], seed, this) {
            return Some(refuted);
        }
        if b - a >= n {
            return None;
        }
        margin *= 2;
    }
}

/// One window (any set of committed transactions), checked on its own: a
/// refutation of the whole history, its proof renamed and certified.
pub fn refute_window(
    ix: &Index,
    level: Level,
    window: &[u32],
    seed: &[u32],
    until: Instant,
) -> Option<General> {
    let mut set = window.to_vec();
    set.sort_unstable(); // the sub-history's transaction i is set[i]
    let h = sub_history(ix, &set);
    let sub = Index::new(&h);
    if !sub.findings.is_empty() {
        return None; // the whole history's own findings come first
    }
    let opts = GeneralOptions {
        deadline: Some(until),
        local: false,
        prove: true,
        skip_witness: true,
        clocks: false,
        solve: false,
        ..GeneralOptions::default()
    };
    let General::Refuted {
        derivation: Some(d),
        cycle,
        ..
    } = opts.search(&sub, level)
    else {
        return None;
    };
    let id = |t: u32| if t == INIT { INIT } else { set[t as usize] };
    let derivation = d.renamed(&id);
    let proof = Refutation::Derivation(derivation.clone());
    if !refutes(ix.history, level, proof) {
        return None;
    }
    let cycle = cycle.map(|edges| {
        edges
            .into_iter()
            .map(|e| crate::decide::depgraph::TxnEdge {
                from: id(e.from),
                to: id(e.to),
                label: e.label,
            })
            .collect()
    });
    Some(General::Refuted {
        how: "pruning on a window",
        seed: seed.to_vec(),
        cycle,
        derivation: Some(derivation),
    })
}

/// The share of the time left that windows may take.
pub fn share(deadline: Option<Instant>) -> Instant {
    let now = Instant::now();
    match deadline {
        Some(d) => now + d.saturating_duration_since(now) / 3,
        None => now + Duration::from_secs(20),
    }
}
