//! Transaction plans: what a client will ask the database to do, before it
//! knows what the database will answer.
//!
//! A plan is data, so it can be generated ahead of time, logged, compared
//! across runs with the same seed, and executed by any adapter. Values to
//! write are fixed in the plan and unique per key (a unique write id), so
//! every read in the resulting history names exactly one writer.

use history::{Key, Value};

/// One step of a plan. The executor records each step as one or more
/// [`history::Op`]s carrying what the database returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Read a key; recorded as `["r", k, v]`.
    Read(Key),
    /// Write (upsert) a value; recorded as `["w", k, v]`.
    Write(Key, Value),
    /// Insert only if the key is absent or holds a tombstone: the executor
    /// reads the key first (recorded as a read), then inserts (`["i", k, v]`)
    /// only when allowed.
    Insert(Key, Value),
    /// Delete: writes a tombstone carrying a unique id; `["d", k, v]`.
    Delete(Key, Value),
    /// Range read of `lo..=hi`, tombstones included; `["rq", lo, hi, rows]`.
    RangeRead(Key, Key),
    /// Append a value to a list; `["a", k, v]`.
    Append(Key, Value),
    /// Read a whole list; `["r", k, [..]]`.
    ReadList(Key),
}

/// A transaction to run: its type (for per-type abort rates) and its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The transaction type, e.g. `mini`, `read-only`, `new-order`.
    pub kind: &'static str,
    pub steps: Vec<Step>,
}

/// The unique write id scheme: the client in the high 32 bits, a per-client
/// counter in the low 32. Unique across the whole history, not only per key.
pub fn write_id(client: u32, counter: u32) -> Value {
    ((client as i64) << 32) | counter as i64
}
