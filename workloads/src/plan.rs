//! Transaction plans: what a client will ask the database to do, before it
//! knows what the database will answer.
//!
//! A plan is data, so it can be generated ahead of time, logged, compared
//! across runs with the same seed, and executed by any adapter. Values to
//! write are fixed in the plan and unique per key (a unique write id), so
//! every read in the resulting history names exactly one writer.

use history::{Key, Value};

use crate::tpcc::TpccTxn;

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
    /// A TPC-C transaction: a small program whose statements depend on the
    /// values it reads (next order id, stock, balances), so it cannot be a
    /// list of fixed steps. The executor runs it through the adapter's
    /// `TpccConn` and records every row it reads or writes as a key
    /// `table:pk` carrying the row's write id (see [`crate::tpcc`]).
    /// Boxed to keep the common steps small.
    Tpcc(Box<TpccTxn>),
}

/// A transaction to run: its type (for per-type abort rates) and its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The transaction type, e.g. `mini`, `read-only`, `new-order`.
    pub kind: &'static str,
    pub steps: Vec<Step>,
}

/// Write ids a plan reserves for writes whose number is only known at run
/// time (a TPC-C Delivery writes one row per order line it finds):
/// `first`, `first + 1`, …, `first + len − 1`, all from one client's
/// counter, so they stay unique and the plan stays deterministic. Ids left
/// unused are simply never written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteIdBlock {
    /// The first id of the block.
    pub first: Value,
    /// How many ids the block holds.
    pub len: u32,
}

impl WriteIdBlock {
    /// The `i`-th id of the block, or `None` past its end.
    pub fn get(&self, i: u32) -> Option<Value> {
        (i < self.len).then(|| self.first + i64::from(i))
    }

    /// Every id of the block, in order.
    pub fn iter(&self) -> impl Iterator<Item = Value> + '_ {
        (0..self.len).map(|i| self.first + i64::from(i))
    }
}

/// The unique write id scheme: the client in the high 32 bits, a per-client
/// counter in the low 32. Unique across the whole history, not only per key.
pub fn write_id(client: u32, counter: u32) -> Value {
    ((client as i64) << 32) | counter as i64
}
