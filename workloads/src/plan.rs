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

/// The `kind` of a final read (see [`Plan::final_reads`]): reports and
/// statistics tell them from the workload's own transactions by it.
pub const FINAL_READ: &str = history::FINAL_READ;

/// The most keys one final-read transaction reads.
pub const FINAL_READ_CHUNK: usize = 100;

impl Plan {
    /// The keys this plan writes (writes, inserts, deletes, appends), in
    /// step order, repeats included; a TPC-C step names none.
    pub fn written_keys(&self) -> impl Iterator<Item = &Key> + '_ {
        self.steps.iter().filter_map(|s| match s {
            Step::Write(k, _) | Step::Insert(k, _) | Step::Delete(k, _) | Step::Append(k, _) => {
                Some(k)
            }
            _ => None,
        })
    }

    /// Final reads of `keys`: read-only plans of kind [`FINAL_READ`], each
    /// reading at most [`FINAL_READ_CHUNK`] of them, in the order given,
    /// with point reads (`Step::Read`, which also shows a tombstone's id),
    /// or whole-list reads when `lists`.
    pub fn final_reads(keys: &[Key], lists: bool) -> Vec<Plan> {
        keys.chunks(FINAL_READ_CHUNK)
            .map(|chunk| Plan {
                kind: FINAL_READ,
                steps: chunk
                    .iter()
                    .map(|k| {
                        if lists {
                            Step::ReadList(k.clone())
                        } else {
                            Step::Read(k.clone())
                        }
                    })
                    .collect(),
            })
            .collect()
    }
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

/// The client that wrote `id` ([`write_id`]): which node served it, where
/// clients keep theirs.
pub fn write_id_client(id: Value) -> u32 {
    (id >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_id_names_its_client() {
        for (c, n) in [(0, 1), (7, 0), (7, u32::MAX), (u32::MAX, 3)] {
            assert_eq!(write_id_client(write_id(c, n)), c, "write_id({c}, {n})");
        }
    }

    #[test]
    fn final_reads_read_every_written_key_in_chunks() {
        let keys: Vec<Key> = (0..250).map(Key::Int).collect();
        let plans = Plan::final_reads(&keys, false);
        assert_eq!(plans.len(), 3);
        assert!(plans.iter().all(|p| p.kind == FINAL_READ));
        assert_eq!(plans[2].steps.len(), 50);
        let read: Vec<Key> = plans
            .iter()
            .flat_map(|p| &p.steps)
            .map(|s| match s {
                Step::Read(k) => k.clone(),
                other => panic!("not a point read: {other:?}"),
            })
            .collect();
        assert_eq!(read, keys);
        let lists = Plan::final_reads(&keys[..2], true);
        assert_eq!(
            lists[0].steps,
            vec![Step::ReadList(Key::Int(0)), Step::ReadList(Key::Int(1))]
        );
        assert!(Plan::final_reads(&[], false).is_empty());
        let p = Plan {
            kind: "t",
            steps: vec![
                Step::Read(Key::Int(1)),
                Step::Write(Key::Int(2), 1),
                Step::Insert(Key::Int(3), 2),
                Step::Delete(Key::Int(4), 3),
                Step::Append(Key::Int(5), 4),
                Step::ReadList(Key::Int(6)),
                Step::RangeRead(Key::Int(0), Key::Int(9)),
            ],
        };
        let w: Vec<&Key> = p.written_keys().collect();
        assert_eq!(w, [&Key::Int(2), &Key::Int(3), &Key::Int(4), &Key::Int(5)]);
    }
}
