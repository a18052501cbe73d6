//! Workload generators: deterministic streams of transaction [`Plan`]s with
//! unique write values.
//!
//! A [`Workload`] hands each client its own [`ClientPlans`] stream, seeded
//! from the run's seed and the client number, so the plans a client runs do
//! not depend on scheduling: the same seed gives the same plans.

pub mod plan;

pub use plan::{write_id, Plan, Step};

/// What tables a workload needs the adapter to create before the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schema {
    /// One table of integer-keyed registers `(k, v)`; a delete writes a
    /// tombstone row. Used by `mini`, `blindw` and `range`.
    Registers,
    /// One table of integer-keyed lists, for Elle's list-append.
    Lists,
}

/// A workload: a schema and, for each client, a stream of plans.
pub trait Workload: Send + Sync {
    /// The workload's name, as given to `--workload`.
    fn name(&self) -> &'static str;
    /// The tables the adapter must create.
    fn schema(&self) -> Schema;
    /// The plan stream of one client. Deterministic in (seed, client).
    fn client(&self, client: u32) -> Box<dyn ClientPlans>;
}

/// One client's stream of plans.
pub trait ClientPlans: Send {
    /// The next transaction to run.
    fn next_plan(&mut self) -> Plan;
}
