//! `range`: Viper's V-Range micro-benchmark ("Viper: A Fast Snapshot
//! Isolation Checker", §7; range queries and tombstones in §4).
//!
//! Five transaction types, one operation type each, `ops_per_txn` (8 in the
//! paper) operations per transaction:
//!
//! | kind | steps |
//! |---|---|
//! | `read` | `Step::Read` of distinct keys |
//! | `write` | `Step::Write` (update/upsert) of distinct keys |
//! | `insert` | `Step::Insert` of distinct keys (only where absent or tombstoned) |
//! | `delete` | `Step::Delete` of distinct keys: a tombstone with a unique id |
//! | `range` | `Step::RangeRead(lo, hi)` over integer keys, `lo ≤ hi` |
//!
//! Variants (`--variant`), the paper's mixes:
//!
//! | variant | read | write | insert | delete | range |
//! |---|---|---|---|---|---|
//! | `b` (default, Range-B) | 20% | 20% | 20% | 20% | 20% |
//! | `rqh` (Range-RQH) | 12.5% | 12.5% | 12.5% | 12.5% | 50% |
//! | `idh` (Range-IDH) | 10% | 10% | 35% | 35% | 10% |
//!
//! What it exposes: predicate anomalies that single-key workloads cannot see.
//! A range read must see a consistent snapshot of *which keys exist*, so a
//! range that misses a committed insert while seeing a later write (a
//! phantom), two range reads in one transaction that disagree, or a range
//! read and an insert/delete forming a cycle (Adya G2, predicate write skew)
//! all show up. Deletes write tombstones carrying unique ids (Viper §4), so a
//! range read names the delete it saw and the checker can order inserts,
//! deletes and range reads like ordinary writes and reads.
//!
//! Keys: the paper grows the key space ("inserts add a key by increasing the
//! maximum key by 1, or re-insert existing keys") and ranges span "1 to the
//! maximum key inserted". A shared maximum needs coordination between
//! clients, which would make a client's plans depend on the others, so here
//! the key space is fixed at `0..keys` and starts empty; an insert of an
//! absent key plays the part of a new key, an insert of a deleted
//! (tombstoned) key is a re-insert, and the executor skips an insert whose
//! key exists. Keys come from the key distribution. A range read draws both
//! ends from it and sorts them (as ViperBench does: two keys, low to high),
//! so ranges are wide; `range_len` caps the width for faster checks.
//! `read_ratio` is refused: the variant fixes the mix.
//!
//! Key order (`--key-order`, [`KeyOrder`]): by default a transaction's
//! keys come in ascending order, and a transaction of range reads reads its
//! ranges by ascending lower end, so writers (and, where reads lock, readers)
//! take row locks in one global order and cannot deadlock on them; `random`
//! keeps the draw order. The keys and ranges are the same either way, so
//! the checker can see the same conflicts (see [`KeyOrder`]).

use std::sync::Arc;

use history::Key;
use rand::RngExt;

use crate::config::{KeyOrder, WorkloadConfig};
use crate::error::WorkloadError;
use crate::keys::KeySampler;
use crate::{ClientPlans, Plan, Schema, Seat, Step, Workload};

/// V-Range's variants, default first.
pub const VARIANTS: &[&str] = &["b", "rqh", "idh"];

/// Transaction kinds, in the order of the weights in [`MIXES`].
const KINDS: [&str; 5] = ["read", "write", "insert", "delete", "range"];

/// Percent of transactions of each kind per variant (Viper §7).
const MIXES: [[f64; 5]; 3] = [
    [20.0, 20.0, 20.0, 20.0, 20.0],
    [12.5, 12.5, 12.5, 12.5, 50.0],
    [10.0, 10.0, 35.0, 35.0, 10.0],
];

struct Shared {
    seed: u64,
    sampler: KeySampler,
    ops: usize,
    /// Cumulative share of each kind, the last one 1.0.
    cumulative: [f64; 5],
    range_len: Option<u64>,
    key_order: KeyOrder,
}

/// The `range` workload: inserts, tombstone deletes and range reads.
pub struct Range {
    shared: Arc<Shared>,
}

impl Range {
    /// Resolves the variant's mix; see the module doc.
    pub fn new(cfg: &WorkloadConfig) -> Result<Range, WorkloadError> {
        let v = cfg.variant_index("range", VARIANTS)?;
        if cfg.read_ratio.is_some() {
            return Err(WorkloadError::BadConfig {
                workload: "range".into(),
                reason: "read_ratio is not used: pick a variant (b, rqh, idh) instead".into(),
            });
        }
        let mut cumulative = [0.0; 5];
        let mut acc = 0.0;
        for (c, w) in cumulative.iter_mut().zip(MIXES[v]) {
            acc += w / 100.0;
            *c = acc;
        }
        cumulative[4] = 1.0;
        Ok(Range {
            shared: Arc::new(Shared {
                seed: cfg.seed,
                sampler: cfg.sampler()?,
                ops: cfg.ops_per_txn,
                cumulative,
                range_len: cfg.range_len,
                key_order: cfg.key_order,
            }),
        })
    }
}

impl Workload for Range {
    fn name(&self) -> &'static str {
        "range"
    }

    fn schema(&self) -> Schema {
        Schema::Registers
    }

    /// Point reads of every key written, inserted or deleted (a
    /// tombstone reads as its delete's id); no range reads.
    fn final_reads(&self, written: &[Key]) -> Vec<Plan> {
        Plan::final_reads(written, false)
    }

    fn client(&self, client: u32) -> Box<dyn ClientPlans> {
        Box::new(RangeClient {
            seat: Seat::new(&self.shared, self.shared.seed, client, "range"),
            keys: Vec::with_capacity(self.shared.ops),
        })
    }
}

struct RangeClient {
    seat: Seat<Shared>,
    keys: Vec<u64>,
}

impl RangeClient {
    /// The ends `(lo, hi)` of one range read, `lo ≤ hi`.
    fn range(&mut self) -> (u64, u64) {
        let s = &*self.seat.shared;
        let a = s.sampler.sample(&mut self.seat.rng);
        let (lo, hi) = match s.range_len {
            None => {
                let b = s.sampler.sample(&mut self.seat.rng);
                (a.min(b), a.max(b))
            }
            Some(len) => {
                let hi = a.saturating_add(self.seat.rng.random_range(0..len));
                (a, hi.min(s.sampler.keys() - 1))
            }
        };
        (lo, hi)
    }
}

impl ClientPlans for RangeClient {
    fn next_plan(&mut self) -> Plan {
        let s = &*self.seat.shared;
        let u: f64 = self.seat.rng.random();
        let kind = s.cumulative.iter().position(|&c| u < c).unwrap_or(4);
        let sorted = s.key_order == KeyOrder::Sorted;
        let steps = if kind == 4 {
            let mut ranges: Vec<(u64, u64)> = (0..s.ops).map(|_| self.range()).collect();
            if sorted {
                // Ascending lower ends: each range then locks (where reads
                // lock) only keys above those already locked.
                ranges.sort_unstable();
            }
            ranges
                .into_iter()
                .map(|(lo, hi)| Step::RangeRead(Key::Int(lo as i64), Key::Int(hi as i64)))
                .collect()
        } else {
            s.sampler
                .sample_distinct(&mut self.seat.rng, s.ops, &mut self.keys);
            if sorted {
                self.keys.sort_unstable();
            }
            self.keys
                .iter()
                .map(|&k| {
                    let k = Key::Int(k as i64);
                    match kind {
                        0 => Step::Read(k),
                        1 => Step::Write(k, self.seat.ids.next_value()),
                        2 => Step::Insert(k, self.seat.ids.next_value()),
                        _ => Step::Delete(k, self.seat.ids.next_value()),
                    }
                })
                .collect()
        };
        Plan {
            kind: KINDS[kind],
            steps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(variant: &str) -> WorkloadConfig {
        WorkloadConfig {
            variant: Some(variant.into()),
            ..WorkloadConfig::for_workload("range").unwrap()
        }
    }

    fn step_kind(s: &Step) -> &'static str {
        match s {
            Step::Read(_) => "read",
            Step::Write(..) => "write",
            Step::Insert(..) => "insert",
            Step::Delete(..) => "delete",
            Step::RangeRead(..) => "range",
            _ => "other",
        }
    }

    #[test]
    fn every_variant_has_every_step_kind_in_the_papers_mix() {
        let n = 40_000;
        for (v, mix) in VARIANTS.iter().zip(MIXES) {
            let w = Range::new(&cfg(v)).unwrap();
            let mut c = w.client(5);
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for _ in 0..n {
                let p = c.next_plan();
                assert_eq!(p.steps.len(), 8);
                // One op type per txn, matching the kind.
                for s in &p.steps {
                    assert_eq!(step_kind(s), p.kind, "{p:?}");
                }
                *seen.entry(p.kind).or_default() += 1;
            }
            for (kind, pct) in KINDS.iter().zip(mix) {
                let share = *seen.get(kind).unwrap_or(&0) as f64 / n as f64;
                assert!(
                    (share - pct / 100.0).abs() < 0.01,
                    "{v} {kind}: {share} vs {pct}%"
                );
            }
        }
    }

    #[test]
    fn ranges_are_ordered_and_in_the_key_space() {
        for range_len in [None, Some(10)] {
            let w = Range::new(&WorkloadConfig {
                keys: 50,
                range_len,
                ..cfg("rqh")
            })
            .unwrap();
            let mut c = w.client(0);
            let mut widest = 0;
            for _ in 0..5_000 {
                for s in c.next_plan().steps {
                    match s {
                        Step::RangeRead(Key::Int(lo), Key::Int(hi)) => {
                            assert!(0 <= lo && lo <= hi && hi < 50, "{lo}..={hi}");
                            widest = widest.max(hi - lo);
                        }
                        Step::Read(Key::Int(k))
                        | Step::Write(Key::Int(k), _)
                        | Step::Insert(Key::Int(k), _)
                        | Step::Delete(Key::Int(k), _) => assert!((0..50).contains(&k)),
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
            match range_len {
                None => assert!(widest > 40, "widest {widest}"),
                Some(len) => assert_eq!(widest, len as i64 - 1),
            }
        }
    }

    #[test]
    fn read_ratio_is_refused() {
        let e = Range::new(&WorkloadConfig {
            read_ratio: Some(0.3),
            ..cfg("b")
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("read_ratio is not used"), "{e}");
    }

    /// The sort key of a step: its key, or a range's ends.
    fn order_key(s: &Step) -> (i64, i64) {
        match s {
            Step::RangeRead(Key::Int(lo), Key::Int(hi)) => (*lo, *hi),
            Step::Read(Key::Int(k))
            | Step::Write(Key::Int(k), _)
            | Step::Insert(Key::Int(k), _)
            | Step::Delete(Key::Int(k), _) => (*k, *k),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn default_key_order_is_ascending_and_random_is_not() {
        let w = Range::new(&cfg("b")).unwrap();
        let mut c = w.client(4);
        for _ in 0..5_000 {
            let p = c.next_plan();
            let ks: Vec<_> = p.steps.iter().map(order_key).collect();
            assert!(ks.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
        }
        let w = Range::new(&WorkloadConfig {
            key_order: KeyOrder::Random,
            ..cfg("b")
        })
        .unwrap();
        let mut c = w.client(4);
        let mut unsorted = HashMap::new();
        for _ in 0..2_000 {
            let p = c.next_plan();
            let ks: Vec<_> = p.steps.iter().map(order_key).collect();
            if ks.windows(2).any(|w| w[0] > w[1]) {
                *unsorted.entry(p.kind).or_insert(0) += 1;
            }
        }
        // Every kind comes out of order at times under `random`.
        assert_eq!(unsorted.len(), KINDS.len(), "{unsorted:?}");
    }
}
