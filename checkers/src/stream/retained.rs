//! The dependency graph of the transactions a stream still keeps, and the
//! pass that finds a cycle in it and lets go of the rest.
//!
//! Each kept transaction has a slot; its graph nodes are the slot (SER) or
//! `2·slot` (begin) and `2·slot + 1` (commit) in the SI model of
//! [`depgraph`](crate::decide::depgraph). A slot is reused once its
//! transaction is retired; a [`Ref`] names a transaction by slot and
//! arrival number, so a reference to a retired one is recognised.
//!
//! The invariant the stream's soundness rests on: **no kept node has an
//! edge into a retired node**. A transaction is retired only when every
//! predecessor it has is retired, and edges out of a retired node are
//! dropped with it (a cycle through it would need an edge into it).

use smallvec::SmallVec;

/// A transaction by slot and arrival number (0 for none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    pub slot: u32,
    pub seq: u64,
}

/// One kept transaction.
#[derive(Debug, Default)]
struct Slot {
    /// Arrival number among committed transactions, from 1; 0: free.
    seq: u64,
    /// Reads whose writer has not arrived yet: it cannot leave before.
    waiting: u32,
    /// Appends no read has placed yet (lists): edges into it will come
    /// when one does, so it cannot leave before; no time limit.
    unplaced: u32,
    /// The versions it wrote, `(key, value)`: forgotten with it.
    wrote: SmallVec<[(u32, i64); 2]>,
    /// The versions it overwrote: forgotten with it when their writer is
    /// gone (lists: each key it touched, once).
    overwrote: SmallVec<[(u32, Option<i64>); 2]>,
}

/// What a pass found.
#[derive(Debug, PartialEq, Eq)]
pub enum Pass {
    /// The kept graph is acyclic; these transactions were retired.
    Retired(Vec<Retired>),
    /// The kept graph has a cycle (through this many nodes' worth of the
    /// graph that could not be ordered).
    Cycle { unordered: usize },
    /// A transaction has waited for a writer for longer than the window.
    StaleWait { seq: u64 },
}

/// What the version table must forget of a retired transaction.
#[derive(Debug, PartialEq, Eq)]
pub struct Retired {
    pub wrote: SmallVec<[(u32, i64); 2]>,
    pub overwrote: SmallVec<[(u32, Option<i64>); 2]>,
}

/// The most successors a reused slot's node keeps room for. A list kept
/// at any larger size would stay with its slot: each slot would keep the
/// largest list it ever held, and a run's memory would creep up for hours
/// as rarer and rarer large lists came by. (Issue 26: with 64 here, a
/// 16-minute SQLite list-append run grew 2.9 MB between minutes 2 and 14;
/// with 4, 1.1 MB.)
const KEPT_EDGES: usize = 4;

/// The kept transactions and their edges.
#[derive(Debug)]
pub struct Retained {
    /// Two nodes per transaction (SI's begin and commit) or one.
    per_txn: u32,
    slots: Vec<Slot>,
    /// Successors of each node.
    succ: Vec<Vec<u32>>,
    free: Vec<u32>,
    kept: usize,
    /// Scratch of a pass.
    indeg: Vec<u32>,
    blocked: Vec<bool>,
    queue: Vec<u32>,
}

impl Retained {
    /// An empty graph; `si` gives each transaction a begin and a commit
    /// node.
    pub fn new(si: bool) -> Retained {
        Retained {
            per_txn: if si { 2 } else { 1 },
            slots: Vec::new(),
            succ: Vec::new(),
            free: Vec::new(),
            kept: 0,
            indeg: Vec::new(),
            blocked: Vec::new(),
            queue: Vec::new(),
        }
    }

    /// The same with room for `txns` kept transactions, so that a stream
    /// whose kept set stays under that never moves or grows its vectors:
    /// its memory is then set by the window, not by the highest count a
    /// long run happens to reach. The room is only reserved: pages are
    /// resident once used.
    pub fn with_room(si: bool, txns: usize) -> Retained {
        let mut g = Retained::new(si);
        let nodes = txns * g.per_txn as usize;
        g.slots.reserve_exact(txns);
        g.succ.reserve_exact(nodes);
        g.free.reserve_exact(txns);
        g.indeg.reserve_exact(nodes);
        g.blocked.reserve_exact(nodes);
        g.queue.reserve_exact(nodes);
        g
    }

    /// How many transactions are kept.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// Keeps a new transaction.
    pub fn add(&mut self, seq: u64) -> Ref {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot::default());
                for _ in 0..self.per_txn {
                    self.succ.push(Vec::new());
                }
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[slot as usize] = Slot {
            seq,
            ..Slot::default()
        };
        if self.per_txn == 2 {
            let b = 2 * slot;
            self.succ[b as usize].push(b + 1);
        }
        self.kept += 1;
        Ref { slot, seq }
    }

    /// Whether `r` is still kept.
    pub fn live(&self, r: Ref) -> bool {
        self.slots
            .get(r.slot as usize)
            .is_some_and(|s| s.seq == r.seq && s.seq != 0)
    }

    /// One more (or one fewer) read of `r` waits for its writer.
    pub fn wait(&mut self, r: Ref, more: bool) {
        let w = &mut self.slots[r.slot as usize].waiting;
        if more {
            *w += 1;
        } else {
            *w -= 1;
        }
    }

    /// One more (or one fewer) append of `r` waits for a read to place it.
    pub fn unplaced(&mut self, r: Ref, more: bool) {
        let u = &mut self.slots[r.slot as usize].unplaced;
        if more {
            *u += 1;
        } else {
            *u -= 1;
        }
    }

    /// Remembers a version `r` wrote, to forget it with `r`.
    pub fn wrote(&mut self, r: Ref, key: u32, value: i64) {
        self.slots[r.slot as usize].wrote.push((key, value));
    }

    /// Remembers a version `r` overwrote, to forget it with `r`.
    pub fn overwrote(&mut self, r: Ref, key: u32, value: Option<i64>) {
        self.slots[r.slot as usize].overwrote.push((key, value));
    }

    /// A dependency `from → to` (both kept): `rw` joins begin to commit
    /// in the SI model, every other kind commit to begin.
    pub fn edge(&mut self, from: Ref, to: Ref, rw: bool) {
        if from == to {
            return;
        }
        let (f, t) = match (self.per_txn, rw) {
            (1, _) => (from.slot, to.slot),
            (_, true) => (2 * from.slot, 2 * to.slot + 1),
            (_, false) => (2 * from.slot + 1, 2 * to.slot),
        };
        self.succ[f as usize].push(t);
    }

    /// Orders the kept graph (Kahn). A node left unordered is on or after
    /// a cycle. Otherwise retires, in that order, every transaction that
    /// arrived at or before `old`, waits for no writer, and whose
    /// predecessors are all retired: the invariant above holds after it.
    /// A transaction of arrival `stale` or earlier still waiting is
    /// reported instead.
    pub fn pass(&mut self, old: u64, stale: u64) -> Pass {
        let n = self.succ.len();
        let per = self.per_txn as usize;
        self.indeg.clear();
        self.indeg.resize(n, 0);
        self.blocked.clear();
        self.blocked.resize(n, false);
        self.queue.clear();
        for (s, slot) in self.slots.iter().enumerate() {
            if slot.seq == 0 {
                continue;
            }
            if slot.waiting > 0 && slot.seq <= stale {
                return Pass::StaleWait { seq: slot.seq };
            }
            for node in s * per..(s + 1) * per {
                for &t in &self.succ[node] {
                    self.indeg[t as usize] += 1;
                }
            }
        }
        for (s, slot) in self.slots.iter().enumerate() {
            if slot.seq == 0 {
                continue;
            }
            // A transaction that may not leave blocks its nodes, and so
            // everything after them.
            let stays = slot.seq > old || slot.waiting > 0 || slot.unplaced > 0;
            for node in s * per..(s + 1) * per {
                self.blocked[node] = stays;
                if self.indeg[node] == 0 {
                    self.queue.push(node as u32);
                }
            }
        }
        let mut head = 0;
        while head < self.queue.len() {
            let u = self.queue[head] as usize;
            head += 1;
            let blocked = self.blocked[u];
            for &t in &self.succ[u] {
                let t = t as usize;
                if blocked {
                    self.blocked[t] = true;
                }
                self.indeg[t] -= 1;
                if self.indeg[t] == 0 {
                    self.queue.push(t as u32);
                }
            }
        }
        let ordered = self.queue.len();
        if ordered < self.kept * per {
            return Pass::Cycle {
                unordered: self.kept * per - ordered,
            };
        }
        let mut gone = Vec::new();
        for s in 0..self.slots.len() {
            let slot = &self.slots[s];
            // The commit node comes after the begin node: it is blocked when
            // either is.
            if slot.seq == 0 || self.blocked[(s + 1) * per - 1] {
                continue;
            }
            let slot = std::mem::take(&mut self.slots[s]);
            gone.push(Retired {
                wrote: slot.wrote,
                overwrote: slot.overwrote,
            });
            for node in s * per..(s + 1) * per {
                // A slot is reused: what its list grew to must not stay
                // with it for good (see [`KEPT_EDGES`]).
                let succ = &mut self.succ[node];
                if succ.capacity() > KEPT_EDGES {
                    *succ = Vec::new();
                } else {
                    succ.clear();
                }
            }
            self.free.push(s as u32);
            self.kept -= 1;
        }
        Pass::Retired(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::{Pass, Retained};

    #[test]
    fn a_cycle_is_found_and_nothing_after_a_waiting_transaction_leaves() {
        let mut g = Retained::new(false);
        let a = g.add(1);
        let b = g.add(2);
        let c = g.add(3);
        g.edge(a, b, false);
        g.edge(b, c, false);
        g.wait(b, true);
        // a may leave; b waits, and c comes after b.
        let Pass::Retired(gone) = g.pass(3, 0) else {
            panic!("no cycle here")
        };
        assert_eq!(gone.len(), 1);
        assert!(!g.live(a) && g.live(b) && g.live(c));
        assert_eq!(g.pass(3, 2), Pass::StaleWait { seq: 2 });
        g.wait(b, false);
        g.edge(c, b, true);
        assert!(matches!(g.pass(3, 0), Pass::Cycle { .. }));
    }

    #[test]
    fn a_reused_slot_keeps_no_more_room_than_a_small_list() {
        // A transaction with a hundred readers, one of which has ten: once
        // retired, no slot keeps room for more than `KEPT_EDGES`
        // successors, whatever its list grew to.
        let mut g = Retained::new(false);
        for round in 0..3u64 {
            let base = round * 1000 + 1;
            let w = g.add(base);
            let readers: Vec<_> = (1..=100).map(|i| g.add(base + i)).collect();
            for &r in &readers {
                g.edge(w, r, false);
            }
            // A list of ten: more than a reused slot keeps room for.
            for &r in &readers[1..11] {
                g.edge(readers[0], r, false);
            }
            assert!(g.succ.iter().any(|s| s.capacity() >= 100));
            let Pass::Retired(gone) = g.pass(base + 100, 0) else {
                panic!("no cycle here")
            };
            assert_eq!(gone.len(), 101);
            assert_eq!(g.kept(), 0);
            let kept_room: Vec<usize> = g.succ.iter().map(Vec::capacity).collect();
            // Room for a few successors (one allocation of the smallest
            // size a vector of `u32` grows to), never for ten.
            assert!(kept_room.iter().all(|&c| c <= 4), "{kept_room:?}");
            // The slots are reused, not added to.
            assert_eq!(g.slots.len(), 101);
        }
    }

    #[test]
    fn si_orders_begin_before_commit_and_allows_one_rw_pair() {
        // Write skew: a -rw-> b and b -rw-> a is no SI cycle.
        let mut g = Retained::new(true);
        let a = g.add(1);
        let b = g.add(2);
        g.edge(a, b, true);
        g.edge(b, a, true);
        assert!(matches!(g.pass(0, 0), Pass::Retired(ref v) if v.is_empty()));
        // A wr edge back closes a cycle.
        g.edge(b, a, false);
        assert!(matches!(g.pass(0, 0), Pass::Cycle { .. }));
    }
}
