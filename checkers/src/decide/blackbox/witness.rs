//! Witnesses: cheap guesses of a version order that, once verified, prove a
//! history valid without any search.
//!
//! A witness is only a proposal; the caller checks the dependency graph it
//! implies, so a wrong guess costs time, never an answer. Two guesses:
//!
//! * [`serial_order`]: replay the history one transaction at a time, in
//!   commit-time order, taking a transaction only when every value it read
//!   is the current one and nobody still waiting needs the versions it
//!   would overwrite. Real databases commit close to the time the client
//!   sees the commit, so this greedy replay finds a serial order for most
//!   serializable histories, even when the clients' clocks put neighbours
//!   slightly out of order.
//! * the topological order of the known graph by time (in `general`),
//!   which also serves snapshot isolation.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::decide::depgraph::{Orders, VersionOrder, Why};
use crate::index::{Index, INIT};

/// A serial order of the committed transactions in which every read sees
/// the latest write, respecting session and real-time order when asked; or
/// `None` when the greedy replay gets stuck (which proves nothing).
pub fn serial_order(ix: &Index, orders: Orders) -> Option<Vec<u32>> {
    let h = ix.history;
    let committed: Vec<u32> = ix.committed_txns().collect();
    let n = ix.len();
    let timed = h.txns.iter().any(|t| t.end.is_some() || t.start.is_some());
    let prio = |t: u32| -> u64 {
        let x = &h.txns[t as usize];
        if timed {
            x.end.or(x.start).unwrap_or(0)
        } else {
            t as u64
        }
    };
    // Readers still waiting for each version.
    let mut waiting: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    for &t in &committed {
        for r in ix.reads(t) {
            if r.writer == INIT || ix.committed[r.writer as usize] {
                *waiting.entry((r.key, r.writer)).or_default() += 1;
            }
        }
    }
    let mut current: Vec<u32> = vec![INIT; ix.keys.len()];
    let mut done = vec![false; n];
    // Session predecessor of each committed transaction.
    let mut session_prev: Vec<u32> = vec![u32::MAX; n];
    if orders.sessions {
        for s in &ix.sessions {
            for w in s.windows(2) {
                session_prev[w[1] as usize] = w[0];
            }
        }
    }
    // Real time: committed transactions by end; a transaction may go once
    // every transaction that ended before it started is done.
    let mut by_end: Vec<(u64, u32)> = Vec::new();
    if orders.realtime {
        by_end = committed
            .iter()
            .filter(|&&t| h.txns[t as usize].status == history::Status::Ok)
            .filter_map(|&t| h.txns[t as usize].end.map(|e| (e, t)))
            .collect();
        by_end.sort_unstable();
    }
    let mut end_cursor = 0usize;

    let mut heap: BinaryHeap<Reverse<(u64, u32)>> =
        committed.iter().map(|&t| Reverse((prio(t), t))).collect();
    let mut blocked: Vec<u32> = Vec::new();
    let mut order = Vec::with_capacity(committed.len());
    let mut work: usize = 0;
    let budget = 64 * committed.len() + 10_000;
    while order.len() < committed.len() {
        let Some(Reverse((_, t))) = heap.pop() else {
            return None; // stuck: everything left is blocked
        };
        work += 1 + blocked.len();
        if work > budget {
            return None;
        }
        while end_cursor < by_end.len() && done[by_end[end_cursor].1 as usize] {
            end_cursor += 1;
        }
        let ready = {
            let sp = session_prev[t as usize];
            let session_ok = sp == u32::MAX || done[sp as usize];
            let rt_ok = !orders.realtime
                || match h.txns[t as usize].start {
                    None => true,
                    Some(s) => by_end.partition_point(|&(e, _)| e < s) <= end_cursor,
                };
            let reads_ok = ix
                .reads(t)
                .iter()
                .all(|r| current[r.key as usize] == r.writer);
            let safe = ix.writes(t).iter().all(|w| {
                let cur = current[w.key as usize];
                let pending = waiting.get(&(w.key, cur)).copied().unwrap_or(0);
                let own = ix
                    .reads(t)
                    .iter()
                    .filter(|r| r.key == w.key && r.writer == cur)
                    .count() as u32;
                pending <= own
            });
            session_ok && rt_ok && reads_ok && safe
        };
        if !ready {
            blocked.push(t);
            continue;
        }
        for r in ix.reads(t) {
            if let Some(c) = waiting.get_mut(&(r.key, r.writer)) {
                *c -= 1;
            }
        }
        for w in ix.writes(t) {
            current[w.key as usize] = t;
        }
        done[t as usize] = true;
        order.push(t);
        // Something changed: give the blocked ones another chance.
        for b in blocked.drain(..) {
            heap.push(Reverse((prio(b), b)));
        }
    }
    Some(order)
}

/// The version order a serial order implies: each key's writers in order.
pub fn version_order_of(ix: &Index, order: &[u32]) -> VersionOrder {
    let mut vo = VersionOrder::new();
    let mut last: Vec<u32> = vec![INIT; ix.keys.len()];
    for &t in order {
        for w in ix.writes(t) {
            vo.link(w.key, last[w.key as usize], t, Why::Chosen);
            last[w.key as usize] = t;
        }
    }
    vo
}
