//! `blindw`: Viper's V-BlindW micro-benchmark ("Viper: A Fast Snapshot
//! Isolation Checker", §7, after Cobra's BlindW).
//!
//! Each transaction does `ops_per_txn` (8 in the paper) operations on
//! distinct keys and is either read-only or write-only. Writes are *blind*
//! (no read of the key first), so the history says nothing about the order of
//! two writes to a key: the checker has to search for a version order
//! (polygraphs / BC-polygraphs), which is exactly the hard case for SI and
//! SER checkers and the one Viper was built for. What it exposes: read-only
//! transactions that see two writers in inconsistent orders — long fork
//! (PL-2+ / PSI but not SI), fractured reads (a read-only txn sees part of a
//! write-only txn), G1c and other cycles through write-read edges.
//!
//! Variants (`--variant`), as in Viper §7 unless noted:
//!
//! | variant | mix |
//! |---|---|
//! | `rw` (default) | 50% read-only, 50% write-only (BlindW-RW) |
//! | `rm` | 90% read-only (BlindW-RM, read-mostly) |
//! | `w` | write-only (ours: pure write contention, G0 / dirty writes) |
//! | `mixed` | ours: read-modify-write txns, see below |
//!
//! `read_ratio` overrides the read-only share of `rw`, `rm` and `w`.
//!
//! Key order (`--key-order`, [`KeyOrder`]): by default `rw`, `rm` and `w`
//! transactions touch their keys in ascending order, so two writers never
//! deadlock on each other's row locks; `random` keeps the order the keys
//! were drawn in. The keys themselves, and so every conflict the checker can
//! see, are the same either way (see [`KeyOrder`]). `mixed` ignores the
//! setting: spacing its reads and writes at random distances is its point.
//!
//! `mixed` gives every transaction a mix of plain reads, blind writes and
//! read-modify-writes (R k … W k, other ops possibly in between), on
//! distinct keys: each new key is only read with probability `read_ratio`
//! (default 0.5), otherwise it is written, half the time after reading it.
//! The RMW pairs let the checker infer write-write order (as with MTs) while
//! the blind writes keep the search non-trivial; lost updates and write skew
//! become visible.
//!
//! Transaction kinds: `read-only`, `write-only`, `mixed`.

use std::sync::Arc;

use history::Key;
use rand::RngExt;

use crate::config::{KeyOrder, WorkloadConfig};
use crate::error::WorkloadError;
use crate::keys::KeySampler;
use crate::{ClientPlans, Plan, Schema, Seat, Step, Workload};

/// BlindW's variants, default first.
pub const VARIANTS: &[&str] = &["rw", "rm", "w", "mixed"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Read-only with this probability, else write-only.
    Blind { read_only: f64 },
    /// Read-modify-write mix; a fresh key is only read with this probability.
    Mixed { read: f64 },
}

struct Shared {
    seed: u64,
    sampler: KeySampler,
    ops: usize,
    mode: Mode,
    key_order: KeyOrder,
}

/// The `blindw` workload: read-only vs write-only transactions, Viper §7.
pub struct BlindW {
    shared: Arc<Shared>,
}

impl BlindW {
    /// Resolves the variant and read ratio; see the module doc.
    pub fn new(cfg: &WorkloadConfig) -> Result<BlindW, WorkloadError> {
        let v = cfg.variant_index("blindw", VARIANTS)?;
        let mode = match VARIANTS[v] {
            "mixed" => Mode::Mixed {
                read: cfg.read_ratio.unwrap_or(0.5),
            },
            name => Mode::Blind {
                read_only: cfg.read_ratio.unwrap_or(match name {
                    "rm" => 0.9,
                    "w" => 0.0,
                    _ => 0.5,
                }),
            },
        };
        Ok(BlindW {
            shared: Arc::new(Shared {
                seed: cfg.seed,
                sampler: cfg.sampler()?,
                ops: cfg.ops_per_txn,
                mode,
                key_order: cfg.key_order,
            }),
        })
    }
}

impl Workload for BlindW {
    fn name(&self) -> &'static str {
        "blindw"
    }

    fn schema(&self) -> Schema {
        Schema::Registers
    }

    /// Point reads of every key written.
    fn final_reads(&self, written: &[Key]) -> Vec<Plan> {
        Plan::final_reads(written, false)
    }

    fn client(&self, client: u32) -> Box<dyn ClientPlans> {
        Box::new(BlindWClient {
            seat: Seat::new(&self.shared, self.shared.seed, client, "blindw"),
            keys: Vec::with_capacity(self.shared.ops),
            pending: Vec::new(),
        })
    }
}

struct BlindWClient {
    seat: Seat<Shared>,
    /// Keys used by the plan being built.
    keys: Vec<u64>,
    /// Keys read by a `mixed` plan that it will write later.
    pending: Vec<u64>,
}

impl BlindWClient {
    fn blind(&mut self, read_only: f64) -> Plan {
        let s = &*self.seat.shared;
        let ro = self.seat.rng.random_bool(read_only);
        s.sampler
            .sample_distinct(&mut self.seat.rng, s.ops, &mut self.keys);
        if s.key_order == KeyOrder::Sorted {
            self.keys.sort_unstable();
        }
        let steps = self
            .keys
            .iter()
            .map(|&k| {
                let k = Key::Int(k as i64);
                if ro {
                    Step::Read(k)
                } else {
                    Step::Write(k, self.seat.ids.next_value())
                }
            })
            .collect();
        Plan {
            kind: if ro { "read-only" } else { "write-only" },
            steps,
        }
    }

    fn mixed(&mut self, read: f64) -> Plan {
        let s = &*self.seat.shared;
        let mut steps = Vec::with_capacity(s.ops);
        self.keys.clear();
        self.pending.clear();
        while steps.len() < s.ops {
            let remaining = s.ops - steps.len();
            let exhausted = self.keys.len() as u64 >= s.sampler.keys();
            // Flush a pending RMW write when it must be (no room or no key
            // left for anything else) or by a coin flip, so writes land at
            // varying distances after their reads.
            if !self.pending.is_empty()
                && (exhausted || self.pending.len() >= remaining || self.seat.rng.random_bool(0.5))
            {
                let i = self.seat.rng.random_range(0..self.pending.len());
                let k = self.pending.swap_remove(i);
                steps.push(Step::Write(Key::Int(k as i64), self.seat.ids.next_value()));
                continue;
            }
            let Some(k) = s.sampler.sample_new(&mut self.seat.rng, &self.keys) else {
                break; // every key is used: a shorter plan
            };
            self.keys.push(k);
            let key = Key::Int(k as i64);
            if self.seat.rng.random_bool(read) {
                steps.push(Step::Read(key));
            } else if remaining >= self.pending.len() + 2 && self.seat.rng.random_bool(0.5) {
                steps.push(Step::Read(key));
                self.pending.push(k);
            } else {
                steps.push(Step::Write(key, self.seat.ids.next_value()));
            }
        }
        Plan {
            kind: "mixed",
            steps,
        }
    }
}

impl ClientPlans for BlindWClient {
    fn next_plan(&mut self) -> Plan {
        match self.seat.shared.mode {
            Mode::Blind { read_only } => self.blind(read_only),
            Mode::Mixed { read } => self.mixed(read),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(variant: &str) -> BlindW {
        BlindW::new(&WorkloadConfig {
            variant: Some(variant.into()),
            ..WorkloadConfig::for_workload("blindw").unwrap()
        })
        .unwrap()
    }

    fn read_only_share(w: &BlindW, n: usize) -> f64 {
        let mut c = w.client(1);
        let mut ro = 0;
        for _ in 0..n {
            let p = c.next_plan();
            assert_eq!(p.steps.len(), 8);
            let reads = p
                .steps
                .iter()
                .filter(|s| matches!(s, Step::Read(_)))
                .count();
            // Read-only or write-only, never both, and labelled as such.
            assert!(reads == 0 || reads == 8, "{p:?}");
            assert_eq!(
                p.kind,
                if reads == 8 {
                    "read-only"
                } else {
                    "write-only"
                }
            );
            ro += usize::from(reads == 8);
        }
        ro as f64 / n as f64
    }

    #[test]
    fn variant_ratios_are_within_tolerance() {
        let n = 40_000;
        for (v, want) in [("rw", 0.5), ("rm", 0.9), ("w", 0.0)] {
            let share = read_only_share(&with(v), n);
            assert!((share - want).abs() < 0.01, "{v}: {share}");
        }
        let custom = BlindW::new(&WorkloadConfig {
            variant: Some("rm".into()),
            read_ratio: Some(0.25),
            ..WorkloadConfig::for_workload("blindw").unwrap()
        })
        .unwrap();
        let share = read_only_share(&custom, n);
        assert!((share - 0.25).abs() < 0.01, "{share}");
    }

    #[test]
    fn keys_are_distinct_within_a_txn() {
        for v in VARIANTS {
            let w = BlindW::new(&WorkloadConfig {
                variant: Some(v.to_string()),
                keys: 12,
                ..WorkloadConfig::for_workload("blindw").unwrap()
            })
            .unwrap();
            let mut c = w.client(0);
            for _ in 0..5_000 {
                let p = c.next_plan();
                let mut read = Vec::new();
                let mut written = Vec::new();
                for s in &p.steps {
                    match s {
                        Step::Read(k) => {
                            assert!(!read.contains(k) && !written.contains(k), "{p:?}");
                            read.push(k.clone());
                        }
                        Step::Write(k, _) => {
                            assert!(!written.contains(k), "{p:?}");
                            written.push(k.clone());
                        }
                        _ => panic!("unexpected step in {p:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn mixed_has_rmw_blind_writes_and_reads() {
        let w = with("mixed");
        let mut c = w.client(2);
        let (mut rmw, mut blind, mut plain_reads, mut total_ops) = (0, 0, 0, 0);
        for _ in 0..10_000 {
            let p = c.next_plan();
            assert_eq!(p.kind, "mixed");
            assert_eq!(p.steps.len(), 8, "{p:?}");
            total_ops += p.steps.len();
            for (i, s) in p.steps.iter().enumerate() {
                match s {
                    Step::Write(k, _) => {
                        if p.steps[..i].contains(&Step::Read(k.clone())) {
                            rmw += 1;
                        } else {
                            blind += 1;
                        }
                    }
                    Step::Read(k) => {
                        let later_write = p.steps[i + 1..]
                            .iter()
                            .any(|s| matches!(s, Step::Write(k2, _) if k2 == k));
                        if !later_write {
                            plain_reads += 1;
                        }
                    }
                    _ => unreachable!(),
                }
            }
        }
        // Each op slot: read-only key (0.5), RMW (0.25, two ops), blind (0.25).
        assert!(rmw > total_ops / 10, "rmw {rmw} of {total_ops}");
        assert!(blind > total_ops / 10, "blind {blind} of {total_ops}");
        assert!(
            plain_reads > total_ops / 4,
            "reads {plain_reads} of {total_ops}"
        );
    }

    fn keys_of(p: &Plan) -> Vec<i64> {
        p.steps
            .iter()
            .map(|s| match s {
                Step::Read(Key::Int(k)) | Step::Write(Key::Int(k), _) => *k,
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn default_key_order_is_ascending_and_random_is_not() {
        assert_eq!(WorkloadConfig::default().key_order, KeyOrder::Sorted);
        for v in ["rw", "rm", "w"] {
            let mut c = with(v).client(3);
            for _ in 0..2_000 {
                let keys = keys_of(&c.next_plan());
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "{v}: {keys:?}");
            }
        }
        let random = BlindW::new(&WorkloadConfig {
            key_order: KeyOrder::Random,
            variant: Some("w".into()),
            ..WorkloadConfig::for_workload("blindw").unwrap()
        })
        .unwrap();
        let mut c = random.client(3);
        let unsorted = (0..200)
            .filter(|_| {
                let keys = keys_of(&c.next_plan());
                keys.windows(2).any(|w| w[0] > w[1])
            })
            .count();
        assert!(unsorted > 100, "only {unsorted} of 200 plans out of order");
    }

    #[test]
    fn key_order_keeps_the_keys() {
        // The same seed draws the same key sets in either order.
        let cfg = |key_order| WorkloadConfig {
            key_order,
            ..WorkloadConfig::for_workload("blindw").unwrap()
        };
        let mut a = BlindW::new(&cfg(KeyOrder::Sorted)).unwrap().client(7);
        let mut b = BlindW::new(&cfg(KeyOrder::Random)).unwrap().client(7);
        for _ in 0..1_000 {
            let (pa, pb) = (a.next_plan(), b.next_plan());
            assert_eq!(pa.kind, pb.kind);
            let mut kb = keys_of(&pb);
            kb.sort_unstable();
            assert_eq!(keys_of(&pa), kb);
        }
    }

    #[test]
    fn fewer_keys_than_ops_gives_shorter_plans() {
        let w = BlindW::new(&WorkloadConfig {
            keys: 3,
            ..WorkloadConfig::for_workload("blindw").unwrap()
        })
        .unwrap();
        let mut c = w.client(0);
        for _ in 0..100 {
            assert_eq!(c.next_plan().steps.len(), 3);
        }
    }
}
