//! Workload generators: deterministic streams of transaction [`Plan`]s with
//! unique write values.
//!
//! A [`Workload`] hands each client its own [`ClientPlans`] stream, seeded
//! from the run's seed and the client number, so the plans a client runs do
//! not depend on scheduling: the same seed gives the same plans.
//!
//! | workload | module | what it is for |
//! |---|---|---|
//! | `mini` | [`mini`] | mini-transactions (MTC): every anomaly in ≤ 4 ops, linear-time checks |
//! | `blindw` | [`blindw`] | Viper's BlindW: read-only vs write-only txns, hard for SI checkers |
//! | `range` | [`range`] | Viper's V-Range: inserts, tombstone deletes and range reads (phantoms) |
//! | `append` | [`append`] | Elle list-append: reads reveal the whole version order |
//! | `tpcc` | [`tpcc`] | TPC-C-lite: real application transactions over eight tables, rows recorded as `table:pk` keys, consistency conditions checked at the end |
//!
//! [`build`] turns a name and a [`WorkloadConfig`] into a [`Workload`];
//! [`keys`] holds the key distributions all of them share.
//!
//! Written values are `write_id(client, n)` for n = 1, 2, 3, … per client
//! ([`WriteIds`]), so every value in a history is unique and none is 0.

pub mod append;
pub mod blindw;
pub mod build;
pub mod config;
pub mod end;
pub mod error;
pub mod keys;
pub mod mini;
pub mod plan;
pub mod range;
pub mod tpcc;

use history::{Key, Value};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use build::{build, variants};
pub use config::{KeyOrder, WorkloadConfig, KEY_ORDERS, WORKLOADS};
pub use end::{ConditionResult, EndCheck, EndReport};
pub use error::WorkloadError;
pub use keys::{KeyDist, KeySampler};
pub use plan::{write_id, write_id_client, Plan, Step, WriteIdBlock, FINAL_READ, FINAL_READ_CHUNK};

/// What tables a workload needs the adapter to create before the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schema {
    /// One table of integer-keyed registers `(k, v)`; a delete writes a
    /// tombstone row. Used by `mini`, `blindw` and `range`.
    Registers,
    /// One table of integer-keyed lists, for Elle's list-append.
    Lists,
    /// The eight TPC-C tables, created empty; the rows are loaded by the
    /// workload's [`Workload::prelude`] transaction so that the history
    /// records who wrote them.
    Tpcc,
}

/// A workload: a schema and, for each client, a stream of plans.
pub trait Workload: Send + Sync {
    /// The workload's name, as given to `--workload`.
    fn name(&self) -> &'static str;
    /// The tables the adapter must create.
    fn schema(&self) -> Schema;
    /// The plan stream of one client. Deterministic in (seed, client).
    fn client(&self, client: u32) -> Box<dyn ClientPlans>;
    /// A transaction the runner runs once, alone, after `setup` and before
    /// the clients start, and records as the history's first transaction:
    /// TPC-C's initial population. Its write ids come from
    /// [`LOADER_CLIENT`], so they never collide with a client's.
    fn prelude(&self) -> Option<Plan> {
        None
    }
    /// The end-of-run check of the final database state the workload
    /// wants, if any.
    fn end_check(&self) -> Option<EndCheck> {
        None
    }
    /// The final reads: read-only plans, of kind [`FINAL_READ`], that read
    /// every key in `written` (for list-append, every list) once the
    /// clients have stopped and every fault has healed, so that a write the
    /// database acknowledged and then lost shows up as an anomaly. `written`
    /// holds every key the run's plans wrote (sorted, without repeats), as
    /// the plans named them: the workload cannot know it alone (append's
    /// lists rotate with each client's transaction count). The default is
    /// none: a workload that reads its final state otherwise (TPC-C's
    /// [`Workload::end_check`]) or that cannot read what it wrote.
    fn final_reads(&self, written: &[Key]) -> Vec<Plan> {
        let _ = written;
        Vec::new()
    }
    /// Whether the workload's keys go out of use as its clients go on
    /// (see [`Workload::closing_keys`]): a run checked as it goes then
    /// reads them as they do.
    fn closes_keys(&self) -> bool {
        false
    }
    /// The keys whose last use is by a plan numbered in `from..to` (a
    /// client's plans are numbered from 0): once every client has run `to`
    /// plans, none will touch them again. A run checked as it goes reads
    /// each such key once then (its closing read), so that the check can
    /// let go of it. Empty when the keys never go out of use.
    fn closing_keys(&self, from: u64, to: u64) -> Vec<Key> {
        let _ = (from, to);
        Vec::new()
    }
    /// Every key some plan numbered in `from..to` may touch: what a run
    /// that made closing reads up to `from` still reads at its end.
    fn keys_in_use(&self, from: u64, to: u64) -> Vec<Key> {
        let _ = (from, to);
        Vec::new()
    }
}

/// The client number whose write ids the [`Workload::prelude`] uses: far
/// above any real client (at most 4096), yet small enough that its ids stay
/// below 2^53, exact in JSON tools that read numbers as doubles (jq).
pub const LOADER_CLIENT: u32 = 1 << 20;

/// One client's stream of plans.
pub trait ClientPlans: Send {
    /// The next transaction to run.
    fn next_plan(&mut self) -> Plan;
    /// Passes over the next `plans` plans without running them: a client
    /// that fell far behind the others catches up, so the keys it would
    /// still use go out of use (see [`Workload::closing_keys`]). The
    /// default draws the plans and drops them.
    fn skip(&mut self, plans: u64) {
        for _ in 0..plans {
            self.next_plan();
        }
    }
}

/// Hands out one client's unique write values, `write_id(client, 1)`,
/// `write_id(client, 2)`, …, so no two writes in a history carry the same
/// value and no value is 0 (which some databases use as a default).
#[derive(Clone, Debug)]
pub struct WriteIds {
    client: u32,
    counter: u32,
}

impl WriteIds {
    /// A fresh counter for `client`; its first value uses counter 1.
    pub fn new(client: u32) -> WriteIds {
        WriteIds { client, counter: 0 }
    }

    /// The next unique value.
    ///
    /// # Panics
    /// After 2^32 − 1 values for one client: the scheme has no room left, and
    /// reusing a value would make the history ambiguous.
    #[inline]
    pub fn next_value(&mut self) -> Value {
        self.counter = self.counter.checked_add(1).unwrap_or_else(|| {
            panic!(
                "client {} has used all 2^32-1 unique write ids",
                self.client
            )
        });
        write_id(self.client, self.counter)
    }

    /// Reserves the next `len` values as one block, for a plan whose
    /// number of writes is decided at run time.
    ///
    /// # Panics
    /// Like [`WriteIds::next_value`], when the counter would overflow.
    pub fn reserve(&mut self, len: u32) -> WriteIdBlock {
        if len == 0 {
            return WriteIdBlock {
                first: write_id(self.client, self.counter.saturating_add(1)),
                len: 0,
            };
        }
        let first = self.next_value();
        self.counter = self.counter.checked_add(len - 1).unwrap_or_else(|| {
            panic!(
                "client {} has used all 2^32-1 unique write ids",
                self.client
            )
        });
        WriteIdBlock { first, len }
    }

    /// How many values have been handed out, for tests and reports.
    pub fn issued(&self) -> u32 {
        self.counter
    }
}

/// What every client of every workload starts from: the workload's shared
/// settings, a random stream of its own and write ids of its own.
pub(crate) struct Seat<S> {
    pub(crate) shared: std::sync::Arc<S>,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) ids: WriteIds,
}

impl<S> Seat<S> {
    /// Client `client`'s seat in `workload`, its stream keyed as [`client_rng`] says.
    pub(crate) fn new(
        shared: &std::sync::Arc<S>,
        seed: u64,
        client: u32,
        workload: &str,
    ) -> Seat<S> {
        Seat {
            shared: std::sync::Arc::clone(shared),
            rng: client_rng(seed, client, workload),
            ids: WriteIds::new(client),
        }
    }
}

/// The random stream of one client of one workload: ChaCha8 keyed by
/// (seed, client, workload name), so a client's plans do not depend on how
/// many other clients there are or on which ran first.
pub fn client_rng(seed: u64, client: u32, workload: &str) -> ChaCha8Rng {
    // FNV-1a: stable across Rust releases, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workload.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&u64::from(client).to_le_bytes());
    key[16..24].copy_from_slice(&h.to_le_bytes());
    key[24..].copy_from_slice(b"isoharns");
    ChaCha8Rng::from_seed(key)
}
