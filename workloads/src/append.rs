//! `append`: Elle's list-append workload (Kingsbury & Alvaro, "Elle:
//! Inferring Isolation Anomalies from Experimental Observations", VLDB 2020;
//! used as Jepsen's append benchmark in Viper §7).
//!
//! Each key holds a list; a transaction appends unique values to lists
//! (`Step::Append`) and reads whole lists (`Step::ReadList`). A list read
//! shows the *entire* version order of its key (every append in commit
//! order), so the checker knows write-write order without guessing: cycles
//! (G0, G1c, G-single, G2-item) are found in linear time, and lost appends,
//! aborted reads (G1a), intermediate reads (G1b), dirty updates and
//! incompatible orders (two reads that are not prefixes of each other) are
//! all visible directly. It is the strongest black-box workload for SER/SI.
//!
//! Transactions have 1..=`ops_per_txn` operations (Elle's min/max txn
//! length, default 1..=4); each op is a list read with probability
//! `read_ratio` (default ½, Elle's mix), else an append; keys may repeat
//! within a transaction, as in Elle.
//!
//! Key rotation. Lists must stay short, or reads grow and checking slows to
//! a crawl; Elle retires a key once it has had `max-writes-per-key` appends.
//! Elle counts appends in one generator shared by all clients. Here each
//! client's plans depend only on (seed, client, config), so rotation is
//! driven by each client's own clock, its transaction count:
//!
//! - there are `keys` *slots* (the active key set, default 10), picked with
//!   the key distribution (default: Elle's exponential, each slot twice as
//!   likely as the next);
//! - slot `s` in epoch `g` is the key `s·2^32 + g` ([`list_key`]), so each
//!   slot's lists are consecutive integers (a check that remembers the
//!   lists it let go of as runs of integers keeps about one run a slot); a
//!   client is in epoch `⌊t / period(s)⌋` of slot `s` at its t-th
//!   transaction;
//! - `period(s)` is set so that, when all `clients` clients run at the same
//!   pace, the key gets about `max_writes_per_key` appends over its epoch
//!   (hot slots rotate fast, cold ones slowly);
//! - as a hard bound, a client appends at most
//!   `cap = max(1, max_writes_per_key / clients)` values to one key; further
//!   appends to it in that epoch become reads. So no list ever exceeds
//!   `clients · cap ≤ max_writes_per_key` values (if `clients ≤
//!   max_writes_per_key`; else `clients`).
//!
//! Clients at the same transaction count use the same keys, so they contend.
//! Clients running at different speeds drift apart and touch different
//! epochs, which lowers contention; a larger `max_writes_per_key` lengthens
//! epochs and tolerates more drift. Set `clients` to the real client count,
//! or lists may grow to `clients × max_writes_per_key`.
//!
//! Transaction kinds: `read-only`, `append-only`, `mixed`.

use std::sync::Arc;

use history::Key;
use rand::RngExt;

use crate::config::WorkloadConfig;
use crate::error::WorkloadError;
use crate::keys::KeySampler;
use crate::{ClientPlans, Plan, Schema, Seat, Step, Workload};

/// The most slots `append` takes: each client keeps a counter per slot, and
/// a large active set defeats the point (short, contended lists).
pub const MAX_SLOTS: u64 = 1 << 20;

/// The list of slot `slot` in epoch `epoch`: `slot·2^32 + epoch`, below
/// 2^52 (exact in JSON tools that read numbers as doubles) for every slot
/// and the first 2^32 epochs, more than any run reaches.
pub fn list_key(slot: u64, epoch: u64) -> Key {
    Key::Int(((slot << 32) | (epoch & 0xffff_ffff)) as i64)
}

struct Shared {
    seed: u64,
    sampler: KeySampler,
    max_ops: usize,
    read_ratio: f64,
    cap: u32,
    /// Transactions per epoch, per slot.
    periods: Vec<u64>,
}

/// The `append` workload: Elle list-append with per-client key rotation.
pub struct Append {
    shared: Arc<Shared>,
}

impl Append {
    /// Sizes the per-slot epochs from the key distribution; see the module doc.
    pub fn new(cfg: &WorkloadConfig) -> Result<Append, WorkloadError> {
        cfg.variant_index("append", &[])?;
        if cfg.keys > MAX_SLOTS {
            return Err(WorkloadError::BadConfig {
                workload: "append".into(),
                reason: format!(
                    "keys is the active key set and must be at most {MAX_SLOTS} (got {})",
                    cfg.keys
                ),
            });
        }
        let sampler = cfg.sampler()?;
        let read_ratio = cfg.read_ratio.unwrap_or(0.5);
        let cap = (cfg.max_writes_per_key / cfg.clients).max(1);
        let mean_len = (1.0 + cfg.ops_per_txn as f64) / 2.0;
        let appends_per_txn = mean_len * (1.0 - read_ratio);
        let periods = (0..cfg.keys)
            .map(|s| {
                let per_txn = appends_per_txn * sampler.probability(s);
                // Saturating: a slot never appended to never rotates.
                ((f64::from(cap) / per_txn) as u64).max(1)
            })
            .collect();
        Ok(Append {
            shared: Arc::new(Shared {
                seed: cfg.seed,
                sampler,
                max_ops: cfg.ops_per_txn,
                read_ratio,
                cap,
                periods,
            }),
        })
    }

    /// The list a client's t-th transaction uses for `slot`, for tests and
    /// for explaining a history.
    pub fn key_for(&self, slot: u64, txn: u64) -> Key {
        let s = &*self.shared;
        let epoch = txn / s.periods[slot as usize];
        list_key(slot, epoch)
    }
}

impl Workload for Append {
    fn name(&self) -> &'static str {
        "append"
    }

    fn schema(&self) -> Schema {
        Schema::Lists
    }

    /// Whole-list reads of every list appended to.
    fn final_reads(&self, written: &[Key]) -> Vec<Plan> {
        Plan::final_reads(written, true)
    }

    /// Slot `s`'s epoch `e` is used by plans `e·p ..= (e+1)·p − 1`.
    fn closes_keys(&self) -> bool {
        true
    }

    fn closing_keys(&self, from: u64, to: u64) -> Vec<Key> {
        let s = &*self.shared;
        let mut keys = Vec::new();
        for (slot, &p) in s.periods.iter().enumerate() {
            // Epochs whose last plan, (e+1)·p − 1, is in from..to.
            for e in (from + 1).div_ceil(p) - 1..to / p {
                keys.push(list_key(slot as u64, e));
            }
        }
        keys
    }

    fn keys_in_use(&self, from: u64, to: u64) -> Vec<Key> {
        let s = &*self.shared;
        let mut keys = Vec::new();
        if from >= to {
            return keys;
        }
        for (slot, &p) in s.periods.iter().enumerate() {
            for e in from / p..=(to - 1) / p {
                keys.push(list_key(slot as u64, e));
            }
        }
        keys.sort();
        keys
    }

    fn client(&self, client: u32) -> Box<dyn ClientPlans> {
        Box::new(AppendClient {
            seat: Seat::new(&self.shared, self.shared.seed, client, "append"),
            txn: 0,
            slots: vec![(0, 0); self.shared.periods.len()],
        })
    }
}

struct AppendClient {
    seat: Seat<Shared>,
    /// Plans handed out so far: this client's clock.
    txn: u64,
    /// Per slot: the epoch last used, and appends made to it in that epoch.
    slots: Vec<(u64, u32)>,
}

impl ClientPlans for AppendClient {
    fn next_plan(&mut self) -> Plan {
        let s = &*self.seat.shared;
        let len = self.seat.rng.random_range(1..=s.max_ops);
        let mut steps = Vec::with_capacity(len);
        let (mut reads, mut appends) = (0, 0);
        for _ in 0..len {
            let slot = s.sampler.sample(&mut self.seat.rng);
            let wants_read = self.seat.rng.random_bool(s.read_ratio);
            let epoch = self.txn / s.periods[slot as usize];
            let state = &mut self.slots[slot as usize];
            if state.0 != epoch {
                *state = (epoch, 0);
            }
            let key = list_key(slot, epoch);
            if wants_read || state.1 >= s.cap {
                steps.push(Step::ReadList(key));
                reads += 1;
            } else {
                state.1 += 1;
                steps.push(Step::Append(key, self.seat.ids.next_value()));
                appends += 1;
            }
        }
        self.txn += 1;
        let kind = match (reads, appends) {
            (_, 0) => "read-only",
            (0, _) => "append-only",
            _ => "mixed",
        };
        Plan { kind, steps }
    }

    /// Only the clock moves: the skipped plans would have drawn nothing
    /// that a later plan depends on (its epochs follow from the clock).
    fn skip(&mut self, plans: u64) {
        self.txn += plans;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(clients: u32) -> WorkloadConfig {
        WorkloadConfig {
            clients,
            ..WorkloadConfig::for_workload("append").unwrap()
        }
    }

    /// Appends per key across `clients` clients running `txns` each.
    fn appends_per_key(w: &Append, clients: u32, txns: usize) -> HashMap<Key, usize> {
        let mut per_key: HashMap<Key, usize> = HashMap::new();
        for c in 0..clients {
            let mut p = w.client(c);
            for _ in 0..txns {
                for s in p.next_plan().steps {
                    match s {
                        Step::Append(k, _) => *per_key.entry(k).or_default() += 1,
                        Step::ReadList(_) => {}
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
        }
        per_key
    }

    #[test]
    fn plans_have_elle_shapes() {
        let w = Append::new(&cfg(1)).unwrap();
        let mut c = w.client(0);
        let mut lens = [0usize; 5];
        let (mut reads, mut ops) = (0, 0);
        for _ in 0..20_000 {
            let p = c.next_plan();
            assert!((1..=4).contains(&p.steps.len()));
            lens[p.steps.len()] += 1;
            ops += p.steps.len();
            reads += p
                .steps
                .iter()
                .filter(|s| matches!(s, Step::ReadList(_)))
                .count();
        }
        assert!(lens[1..].iter().all(|&n| n > 4_000), "{lens:?}");
        let share = reads as f64 / ops as f64;
        assert!((0.45..0.6).contains(&share), "read share {share}");
        assert_eq!(w.schema(), Schema::Lists);
    }

    #[test]
    fn lists_never_exceed_max_writes_per_key() {
        for clients in [1, 4, 16] {
            let w = Append::new(&cfg(clients)).unwrap();
            let per_key = appends_per_key(&w, clients, 3_000);
            let max = per_key.values().copied().max().unwrap();
            assert!(max <= 32, "{clients} clients: a key got {max} appends");
            // Rotation happened and the hot keys actually filled up.
            assert!(
                per_key.len() > 50,
                "{clients} clients: {} keys",
                per_key.len()
            );
            assert!(max >= 24, "{clients} clients: fullest list only {max}");
        }
    }

    #[test]
    fn clients_in_step_share_their_keys() {
        let w = Append::new(&cfg(4)).unwrap();
        let keys_of = |c: u32| {
            let mut p = w.client(c);
            let mut ks: Vec<Key> = (0..500)
                .flat_map(|_| p.next_plan().steps)
                .map(|s| match s {
                    Step::Append(k, _) | Step::ReadList(k) => k,
                    _ => unreachable!(),
                })
                .collect();
            ks.sort();
            ks.dedup();
            ks
        };
        let (a, b) = (keys_of(0), keys_of(1));
        let common = a.iter().filter(|k| b.contains(k)).count();
        assert!(
            common * 10 >= a.len().min(b.len()) * 8,
            "{common} of {}",
            a.len()
        );
        // The hot slot rotates: epoch 0 and a later epoch differ.
        assert_ne!(w.key_for(0, 0), w.key_for(0, 1_000));
    }

    #[test]
    fn too_many_slots_is_refused() {
        let e = Append::new(&WorkloadConfig {
            keys: MAX_SLOTS + 1,
            ..cfg(1)
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("active key set"), "{e}");
    }

    #[test]
    fn a_closed_list_is_never_touched_again_and_every_list_is_closed_or_in_use() {
        let w = Append::new(&cfg(3)).unwrap();
        let n = 400u64;
        // The last plan number that touched each key.
        let mut last: HashMap<Key, u64> = HashMap::new();
        for c in 0..3 {
            let mut plans = w.client(c);
            for t in 0..n {
                for step in plans.next_plan().steps {
                    let (Step::Append(k, _) | Step::ReadList(k)) = step else {
                        panic!("not an append step");
                    };
                    let e = last.entry(k).or_insert(t);
                    *e = (*e).max(t);
                }
            }
        }
        let mut closed = Vec::new();
        for (from, to) in [(0, 1), (1, 7), (7, 150), (150, n)] {
            for k in w.closing_keys(from, to) {
                if let Some(&t) = last.get(&k) {
                    assert!(t < to, "{k} closed at {to} but used by plan {t}");
                }
                closed.push(k);
            }
        }
        let open = w.keys_in_use(n, n + 1);
        for k in last.keys() {
            assert!(
                closed.contains(k) || open.contains(k),
                "{k} neither closed nor in use"
            );
        }
        assert!(closed.len() > 20 && closed.len() > open.len(), "{closed:?}");
    }

    #[test]
    fn a_client_that_skips_uses_the_keys_of_its_new_clock() {
        let w = Append::new(&cfg(2)).unwrap();
        let mut c = w.client(0);
        c.next_plan();
        c.skip(5_000);
        // Plan 5,001 on: only keys a plan numbered there may touch.
        let in_use = w.keys_in_use(5_001, 5_051);
        for _ in 0..50 {
            for step in c.next_plan().steps {
                let (Step::Append(k, _) | Step::ReadList(k)) = step else {
                    panic!("not an append step");
                };
                assert!(in_use.contains(&k), "{k} is not in use at plan 5,001");
            }
        }
        // The skipped plans' lists closed: none of them is touched.
        let closed = w.closing_keys(0, 5_001);
        assert!(!closed.iter().any(|k| in_use.contains(k)));
    }
}
