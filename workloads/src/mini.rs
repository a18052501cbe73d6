//! `mini`: mini-transactions, from "Boosting End-to-End Database Isolation
//! Checking via Mini-Transactions" (MTC), §III, Definition 8.
//!
//! A mini-transaction (MT) has one or two reads and at most two writes, and
//! every write is preceded (not necessarily immediately) by a read of the
//! same key. With unique written values this read-modify-write pattern pins
//! down the write-read *and* almost all of the write-write order of a
//! history, so SER and SI can be checked in linear time and SSER in
//! quadratic time (MTC §IV), and a violation shows up as a tiny cycle.
//! Despite their size MTs express all 14 anomalies of MTC Fig. 5 / Table I:
//! lost update (two MTs read x=v and both write x), write skew
//! (`[R x, R y, W y]` against `[R x, R y, W x]`), long fork, fractured and
//! causality-violating reads, and the intra-transactional ones (non-repeatable
//! read with `[R x, R x, W x]`, not-my-own-write with `[R x, W x, R x]`).
//!
//! Each plan is one of the 11 shapes of MTC's own Jepsen generator, picked
//! uniformly (so 2 in 11 are read-only); `x` and `y` are distinct keys drawn
//! from the key distribution:
//!
//! | kind | steps |
//! |---|---|
//! | `rx` | R x |
//! | `rx-ry` | R x, R y |
//! | `rx-wx` | R x, W x |
//! | `rx-ry-wy` | R x, R y, W y |
//! | `rx-ry-wx` | R x, R y, W x |
//! | `rx-rx-wx` | R x, R x, W x |
//! | `rx-wx-ry` | R x, W x, R y |
//! | `rx-wx-rx` | R x, W x, R x |
//! | `rx-ry-wx-wy` | R x, R y, W x, W y |
//! | `rx-ry-wy-wx` | R x, R y, W y, W x |
//! | `rx-wx-ry-wy` | R x, W x, R y, W y |
//!
//! `read_ratio`, when set, is the share of read-only shapes instead. With a
//! single key only the one-key shapes are used. `ops_per_txn` is ignored:
//! the shapes are the point.

use std::sync::Arc;

use history::Key;
use rand::RngExt;

use crate::config::WorkloadConfig;
use crate::error::WorkloadError;
use crate::keys::KeySampler;
use crate::{ClientPlans, Plan, Schema, Seat, Step, Workload};

/// One MT shape: its name, and its steps as (is write, uses y) pairs.
struct Shape {
    kind: &'static str,
    ops: &'static [(bool, bool)],
}

const R: bool = false;
const W: bool = true;
const X: bool = false;
const Y: bool = true;

/// The 11 shapes of MTC's generator (`r`, `r1r2`, `r1w1`, `r1r2w2`, `r2r1w2`,
/// `r1r1w1`, `r2w2r1`, `r2w2r2`, `r1r2w1w2`, `r1r2w2w1`, `r1w1r2w2`), with the
/// keys renamed so that x is always read first.
const SHAPES: &[Shape] = &[
    Shape {
        kind: "rx",
        ops: &[(R, X)],
    },
    Shape {
        kind: "rx-ry",
        ops: &[(R, X), (R, Y)],
    },
    Shape {
        kind: "rx-wx",
        ops: &[(R, X), (W, X)],
    },
    Shape {
        kind: "rx-ry-wy",
        ops: &[(R, X), (R, Y), (W, Y)],
    },
    Shape {
        kind: "rx-ry-wx",
        ops: &[(R, X), (R, Y), (W, X)],
    },
    Shape {
        kind: "rx-rx-wx",
        ops: &[(R, X), (R, X), (W, X)],
    },
    Shape {
        kind: "rx-wx-ry",
        ops: &[(R, X), (W, X), (R, Y)],
    },
    Shape {
        kind: "rx-wx-rx",
        ops: &[(R, X), (W, X), (R, X)],
    },
    Shape {
        kind: "rx-ry-wx-wy",
        ops: &[(R, X), (R, Y), (W, X), (W, Y)],
    },
    Shape {
        kind: "rx-ry-wy-wx",
        ops: &[(R, X), (R, Y), (W, Y), (W, X)],
    },
    Shape {
        kind: "rx-wx-ry-wy",
        ops: &[(R, X), (W, X), (R, Y), (W, Y)],
    },
];

impl Shape {
    fn two_keys(&self) -> bool {
        self.ops.iter().any(|&(_, y)| y)
    }
    fn read_only(&self) -> bool {
        self.ops.iter().all(|&(w, _)| !w)
    }
}

struct Shared {
    seed: u64,
    sampler: KeySampler,
    read_ratio: Option<f64>,
    /// Indices into [`SHAPES`] usable with this key count.
    all: Vec<usize>,
    read_only: Vec<usize>,
    writing: Vec<usize>,
}

/// The `mini` workload: mini-transactions for the fast MTC checks.
pub struct Mini {
    shared: Arc<Shared>,
}

impl Mini {
    /// Sets up the shapes and key sampler; see the module doc for the mix.
    pub fn new(cfg: &WorkloadConfig) -> Result<Mini, WorkloadError> {
        cfg.variant_index("mini", &[])?;
        let sampler = cfg.sampler()?;
        let usable: Vec<usize> = (0..SHAPES.len())
            .filter(|&i| sampler.keys() >= 2 || !SHAPES[i].two_keys())
            .collect();
        let (read_only, writing) = usable.iter().partition(|&&i| SHAPES[i].read_only());
        Ok(Mini {
            shared: Arc::new(Shared {
                seed: cfg.seed,
                sampler,
                read_ratio: cfg.read_ratio,
                all: usable,
                read_only,
                writing,
            }),
        })
    }
}

impl Workload for Mini {
    fn name(&self) -> &'static str {
        "mini"
    }

    fn schema(&self) -> Schema {
        Schema::Registers
    }

    /// Point reads of every key written.
    fn final_reads(&self, written: &[Key]) -> Vec<Plan> {
        Plan::final_reads(written, false)
    }

    fn client(&self, client: u32) -> Box<dyn ClientPlans> {
        Box::new(MiniClient {
            seat: Seat::new(&self.shared, self.shared.seed, client, "mini"),
            keys: Vec::with_capacity(2),
        })
    }
}

struct MiniClient {
    seat: Seat<Shared>,
    keys: Vec<u64>,
}

impl ClientPlans for MiniClient {
    fn next_plan(&mut self) -> Plan {
        let s = &*self.seat.shared;
        let pool = match s.read_ratio {
            None => &s.all,
            Some(p) if self.seat.rng.random_bool(p) => &s.read_only,
            Some(_) => &s.writing,
        };
        let shape = &SHAPES[pool[self.seat.rng.random_range(0..pool.len())]];
        let nkeys = if shape.two_keys() { 2 } else { 1 };
        s.sampler
            .sample_distinct(&mut self.seat.rng, nkeys, &mut self.keys);
        let x = Key::Int(self.keys[0] as i64);
        let y = Key::Int(*self.keys.last().expect("at least one key") as i64);
        let steps = shape
            .ops
            .iter()
            .map(|&(write, on_y)| {
                let k = if on_y { y.clone() } else { x.clone() };
                if write {
                    Step::Write(k, self.seat.ids.next_value())
                } else {
                    Step::Read(k)
                }
            })
            .collect();
        Plan {
            kind: shape.kind,
            steps,
        }
    }
}

/// Checks MTC Definition 8 (plus our rule that a two-key MT uses distinct
/// keys), so tests and other crates can assert a plan is a mini-transaction.
pub fn is_mini_transaction(plan: &Plan) -> bool {
    let mut reads = 0;
    let mut writes = 0;
    let mut read_keys: Vec<&Key> = Vec::with_capacity(2);
    let mut written: Vec<&Key> = Vec::with_capacity(2);
    for step in &plan.steps {
        match step {
            Step::Read(k) => {
                reads += 1;
                if !read_keys.contains(&k) {
                    read_keys.push(k);
                }
            }
            Step::Write(k, _) => {
                writes += 1;
                if !read_keys.contains(&k) || written.contains(&k) {
                    return false;
                }
                written.push(k);
            }
            _ => return false,
        }
    }
    (1..=2).contains(&reads) && writes <= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg() -> WorkloadConfig {
        WorkloadConfig::for_workload("mini").unwrap()
    }

    #[test]
    fn definition_8_holds_on_100k_plans() {
        let w = Mini::new(&cfg()).unwrap();
        let mut kinds: HashMap<&str, usize> = HashMap::new();
        let mut c = w.client(3);
        for _ in 0..100_000 {
            let p = c.next_plan();
            assert!(is_mini_transaction(&p), "not an MT: {p:?}");
            let keys: Vec<&Key> = p
                .steps
                .iter()
                .map(|s| match s {
                    Step::Read(k) | Step::Write(k, _) => k,
                    _ => unreachable!(),
                })
                .collect();
            let distinct = {
                let mut d = keys.clone();
                d.sort();
                d.dedup();
                d.len()
            };
            let two = SHAPES.iter().find(|s| s.kind == p.kind).unwrap().two_keys();
            assert_eq!(distinct, if two { 2 } else { 1 }, "{p:?}");
            *kinds.entry(p.kind).or_default() += 1;
        }
        // Every shape shows up, roughly uniformly (1/11 ≈ 9091 each).
        assert_eq!(kinds.len(), SHAPES.len());
        for (k, n) in kinds {
            assert!((8_000..10_200).contains(&n), "{k}: {n}");
        }
    }

    #[test]
    fn the_checker_rejects_non_mts() {
        let x = Key::Int(1);
        let y = Key::Int(2);
        let bad = [
            vec![Step::Write(x.clone(), 1)],
            vec![Step::Write(x.clone(), 1), Step::Read(x.clone())],
            vec![Step::Read(x.clone()), Step::Write(y.clone(), 1)],
            vec![
                Step::Read(x.clone()),
                Step::Read(y.clone()),
                Step::Read(x.clone()),
            ],
            vec![
                Step::Read(x.clone()),
                Step::Write(x.clone(), 1),
                Step::Write(x.clone(), 2),
            ],
            vec![],
        ];
        for steps in bad {
            assert!(!is_mini_transaction(&Plan { kind: "t", steps }));
        }
    }

    #[test]
    fn read_ratio_sets_the_read_only_share() {
        let w = Mini::new(&WorkloadConfig {
            read_ratio: Some(0.7),
            ..cfg()
        })
        .unwrap();
        let mut c = w.client(0);
        let n = 50_000;
        let ro = (0..n)
            .filter(|_| {
                c.next_plan()
                    .steps
                    .iter()
                    .all(|s| matches!(s, Step::Read(_)))
            })
            .count();
        let share = ro as f64 / n as f64;
        assert!((share - 0.7).abs() < 0.01, "{share}");
    }

    #[test]
    fn one_key_uses_only_one_key_shapes() {
        let w = Mini::new(&WorkloadConfig { keys: 1, ..cfg() }).unwrap();
        let mut c = w.client(0);
        for _ in 0..1000 {
            let p = c.next_plan();
            assert!(is_mini_transaction(&p));
            assert!(p.steps.iter().all(|s| match s {
                Step::Read(k) | Step::Write(k, _) => *k == Key::Int(0),
                _ => false,
            }));
        }
    }
}
