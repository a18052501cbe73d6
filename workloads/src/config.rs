//! One configuration for every workload; `build`
//! turns a name and a configuration into a workload.

use crate::error::WorkloadError;
use crate::keys::{KeyDist, KeySampler};
use crate::tpcc::scale::TpccScale;

/// The workload names `--workload` accepts (and `build` knows).
pub const WORKLOADS: &[&str] = &["mini", "blindw", "range", "append", "tpcc"];

/// The knobs of a workload; settings a workload does not use are ignored
/// unless giving them is certainly a mistake (then `build` refuses).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadConfig {
    /// Key count: keys are `0..keys` (for `append`: the active key slots).
    pub keys: u64,
    /// How keys are picked; skew sets the contention.
    pub dist: KeyDist,
    /// The run's seed; with the client number it fixes every plan.
    pub seed: u64,
    /// Operations per transaction (`blindw`, `range`: exactly; `append`: at
    /// most, like Elle's max-txn-length; `mini` has fixed shapes and ignores it).
    pub ops_per_txn: usize,
    /// Share of reads, overriding the workload's default: `blindw` rm/rw/w:
    /// read-only transactions; `blindw` mixed: keys only read; `mini`:
    /// read-only mini-transactions; `append`: list reads. `range` refuses it
    /// (its variants fix the mix).
    pub read_ratio: Option<f64>,
    /// The workload's variant (`blindw`: rm, rw, w, mixed; `range`: b, rqh, idh).
    pub variant: Option<String>,
    /// How many clients the run has. Only `append` uses it, to keep lists
    /// short: each client appends at most `max_writes_per_key / clients`
    /// values to one key. Set it to the real client count.
    pub clients: u32,
    /// `append`: the most values one list should receive before the key is
    /// retired for a fresh one (Elle's max-writes-per-key).
    pub max_writes_per_key: u32,
    /// `range`: the widest range read, in keys. `None` (the paper's choice)
    /// draws both ends from the key distribution, so a range averages a third
    /// of the key space.
    pub range_len: Option<u64>,
    /// `tpcc`: the database size (warehouses, districts, customers, items,
    /// initial orders); `keys`, `ops_per_txn` and `max_writes_per_key` do
    /// not apply to it (the runner reports the item count as `keys`).
    pub tpcc: TpccScale,
    /// `blindw` (variants rw, rm, w) and `range`: the order in which a
    /// transaction touches its keys; see [`KeyOrder`].
    pub key_order: KeyOrder,
}

/// The order of the operations inside one `blindw` or `range` transaction
/// (`--key-order`).
///
/// The keys of a transaction are drawn the same way either way (the same
/// distinct keys from the same distribution); only their order in the plan
/// differs. [`KeyOrder::Sorted`], the default, touches them in ascending key
/// order (a `range` transaction of range reads: ascending by lower end, so
/// its locks are taken in ascending order too). Two writers that share keys
/// then take their row locks in the same order, so they cannot deadlock on
/// them: one waits for the other and then commits or gets a serialization
/// failure, at once, instead of both waiting out the database's deadlock
/// detection (PostgreSQL's `deadlock_timeout`, 1 s by default) before one
/// is killed. [`KeyOrder::Random`] keeps the draw order (the papers'
/// generator), deadlocks and all.
///
/// Why sorting does not weaken what the workload can detect: the checker
/// builds its dependency graph from which committed version each read
/// returned and which transactions wrote each key (write-read,
/// write-write, read-write edges between transactions); the position of an
/// operation inside its transaction never enters an edge. Sorting keeps
/// every transaction's read and write sets, and two transactions still
/// overlap on exactly the keys they share, so the same conflicts, the same
/// cycles (G0, G1c, G-single, G2, long fork, fractured reads, lost updates
/// through concurrent writers) and the same anomaly kinds can occur. A read
/// under a non-snapshot level still reads its keys at different moments
/// (ascending, instead of in random order), so fractured and skewed reads
/// stay possible. What sorting removes is lock-order deadlock, an abort
/// that detects nothing and, on PostgreSQL, costs a second per victim. Use
/// `random` to also exercise a database's deadlock handling, or in case a
/// bug depends on the order in which a transaction takes its locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyOrder {
    /// Ascending key order inside every transaction (the default).
    #[default]
    Sorted,
    /// The order the keys were drawn in (random).
    Random,
}

/// The names `--key-order` accepts, default first.
pub const KEY_ORDERS: &[&str] = &["sorted", "random"];

impl std::str::FromStr for KeyOrder {
    type Err = String;

    fn from_str(s: &str) -> Result<KeyOrder, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sorted" => Ok(KeyOrder::Sorted),
            "random" => Ok(KeyOrder::Random),
            _ => Err(format!(
                "unknown key order `{s}` (valid: {})",
                KEY_ORDERS.join(", ")
            )),
        }
    }
}

impl std::fmt::Display for KeyOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyOrder::Sorted => "sorted",
            KeyOrder::Random => "random",
        })
    }
}

impl Default for WorkloadConfig {
    fn default() -> WorkloadConfig {
        WorkloadConfig {
            keys: 1000,
            dist: KeyDist::default(),
            seed: 0,
            ops_per_txn: 8,
            read_ratio: None,
            variant: None,
            clients: 1,
            max_writes_per_key: 32,
            range_len: None,
            tpcc: TpccScale::default(),
            key_order: KeyOrder::default(),
        }
    }
}

impl WorkloadConfig {
    /// The defaults the papers used for this workload, as a starting point for
    /// the flags a user gave: `mini` 100 keys zipf:0.99; `blindw` and `range`
    /// 2000 keys and 8 ops (Viper §7), zipf:0.99; `append` 10 active keys, at
    /// most 4 ops, 32 writes per key and Elle's exponential skew (each key
    /// twice as likely as the next); `tpcc` the default [`TpccScale`] with
    /// uniform choices.
    pub fn for_workload(name: &str) -> Result<WorkloadConfig, WorkloadError> {
        let base = WorkloadConfig::default();
        Ok(match name {
            "mini" => WorkloadConfig { keys: 100, ..base },
            "blindw" | "range" => WorkloadConfig {
                keys: 2000,
                ops_per_txn: 8,
                ..base
            },
            "append" => WorkloadConfig {
                keys: 10,
                ops_per_txn: 4,
                dist: KeyDist::Exponential {
                    lambda: 10.0 * std::f64::consts::LN_2,
                },
                ..base
            },
            "tpcc" => WorkloadConfig {
                dist: KeyDist::Uniform,
                ..base
            },
            _ => return Err(unknown(name)),
        })
    }

    /// Checks the settings every workload shares.
    pub(crate) fn validate(&self, workload: &str) -> Result<(), WorkloadError> {
        let bad = |reason: &str| {
            Err(WorkloadError::BadConfig {
                workload: workload.to_string(),
                reason: reason.to_string(),
            })
        };
        if self.keys == 0 {
            return bad("keys must be at least 1");
        }
        if self.keys > i64::MAX as u64 / 2 {
            return bad("keys must fit in a signed 62-bit integer");
        }
        if self.ops_per_txn == 0 {
            return bad("ops_per_txn must be at least 1");
        }
        if let Some(r) = self.read_ratio {
            if !(0.0..=1.0).contains(&r) {
                return bad("read_ratio must be in [0, 1]");
            }
        }
        if self.clients == 0 {
            return bad("clients must be at least 1");
        }
        if self.max_writes_per_key == 0 {
            return bad("max_writes_per_key must be at least 1");
        }
        if self.range_len == Some(0) {
            return bad("range_len must be at least 1");
        }
        self.dist.validate()
    }

    /// The key sampler every workload draws from.
    pub(crate) fn sampler(&self) -> Result<KeySampler, WorkloadError> {
        KeySampler::new(self.dist, self.keys)
    }

    /// Checks `variant` against `valid` (the first is the default) and
    /// returns its index.
    pub(crate) fn variant_index(
        &self,
        workload: &str,
        valid: &[&str],
    ) -> Result<usize, WorkloadError> {
        match self.variant.as_deref() {
            None => Ok(0),
            Some(v) => {
                let v_lower = v.trim().to_ascii_lowercase();
                if valid.is_empty() {
                    return Err(WorkloadError::NoVariants {
                        workload: workload.to_string(),
                        variant: v.to_string(),
                    });
                }
                valid.iter().position(|x| *x == v_lower).ok_or_else(|| {
                    WorkloadError::UnknownVariant {
                        workload: workload.to_string(),
                        variant: v.to_string(),
                        valid: valid.join(", "),
                    }
                })
            }
        }
    }
}

/// The error for a workload name nobody knows, listing the known ones.
pub(crate) fn unknown(name: &str) -> WorkloadError {
    WorkloadError::UnknownWorkload {
        name: name.to_string(),
        valid: WORKLOADS.join(", "),
    }
}
