//! Holding back a finished transaction until every value it read has its
//! writer in the history file, so that a history cut short by a crash of
//! the harness (SIGKILL, power loss) never shows a read whose writer is
//! missing: the checker would call that a thin-air read, an anomaly the
//! database did not commit.
//!
//! The window exists because clients report in the order they *hear*
//! back: a writer's COMMIT can take effect, be read by another client, and
//! that reader's transaction reach the recorder before the writer's own
//! client has been told its COMMIT succeeded. Holding the reader until the
//! writer arrives closes it. A writer always arrives for a correct database
//! (it committed before it was read, and its client reports every
//! transaction, as `info` at worst, within the statement timeout), so holds
//! are short. A read no one will ever write (a real thin-air read, or a
//! dirty-read cycle in a broken database) is released after `limit`, and
//! its value is then never waited for again.
//!
//! A session's transactions stay in order: one held transaction holds the
//! later ones of its session behind it.
//!
//! What is in the file is known in memory that does not grow with the run:
//! every value is a write id, `write_id(client, n)`, and a client writes
//! its ids in increasing order, one transaction after another. So a value
//! is in the file when it is at most the highest id of its client released
//! so far, and is not the write of a transaction still held. Only the
//! values given up on are remembered one by one.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use history::{Key, Op, Txn, Value};

/// Beyond this many held transactions the oldest is released at once.
const MAX_HELD: usize = 4096;

/// The reordering buffer between the clients and the history file.
#[derive(Debug)]
pub struct Holdback {
    /// The highest write id in the file, per client
    /// ([`workloads::write_id_client`]).
    released: HashMap<u32, Value>,
    /// The writes of held transactions (how many of each).
    held_writes: HashMap<Value, u32>,
    /// (key, value) of every read given up on.
    given_up: HashSet<(Key, Value)>,
    held: VecDeque<(Txn, Instant)>,
    /// How many transactions of each session are held.
    held_per_session: HashMap<u64, usize>,
    limit: Duration,
}

/// The values `op` read (list reads: every element).
fn reads(op: &Op) -> Vec<(&Key, Value)> {
    match op {
        Op::Read {
            key,
            value: Some(v),
        } => vec![(key, *v)],
        Op::RangeRead { rows, .. } => rows.iter().map(|(k, v)| (k, *v)).collect(),
        Op::ReadList {
            key,
            values: Some(vs),
        } => vs.iter().map(|v| (key, *v)).collect(),
        _ => Vec::new(),
    }
}

impl Holdback {
    /// A buffer that holds a transaction at most `limit`.
    pub fn new(limit: Duration) -> Holdback {
        Holdback {
            released: HashMap::new(),
            held_writes: HashMap::new(),
            given_up: HashSet::new(),
            held: VecDeque::new(),
            held_per_session: HashMap::new(),
            limit,
        }
    }

    /// True when every value `t` read is known, ignoring its own writes
    /// (a transaction may read what it wrote itself).
    fn ready(&self, t: &Txn) -> bool {
        t.ops.iter().flat_map(reads).all(|(k, v)| {
            self.known(k, v)
                || t.ops
                    .iter()
                    .any(|o| o.written().is_some_and(|(wk, wv)| wk == k && wv == v))
        })
    }

    /// Whether `k = v` is in the file already (or given up on).
    fn known(&self, k: &Key, v: Value) -> bool {
        let in_file = self
            .released
            .get(&workloads::write_id_client(v))
            .is_some_and(|&top| v <= top)
            && !self.held_writes.contains_key(&v);
        in_file || self.given_up.contains(&(k.clone(), v))
    }

    fn release(&mut self, t: Txn, out: &mut Vec<Txn>) {
        for op in &t.ops {
            if let Some((_, v)) = op.written() {
                let top = self
                    .released
                    .entry(workloads::write_id_client(v))
                    .or_insert(v);
                *top = (*top).max(v);
            }
        }
        out.push(t);
    }

    /// Counts (or uncounts) the writes of a transaction held.
    fn hold_writes(&mut self, t: &Txn, held: bool) {
        for (_, v) in t.ops.iter().filter_map(Op::written) {
            if held {
                *self.held_writes.entry(v).or_default() += 1;
            } else if let Some(n) = self.held_writes.get_mut(&v) {
                *n -= 1;
                if *n == 0 {
                    self.held_writes.remove(&v);
                }
            }
        }
    }

    /// Releases held transactions that became ready, in arrival order.
    fn settle(&mut self, out: &mut Vec<Txn>) {
        loop {
            let mut blocked: HashSet<u64> = HashSet::new();
            let mut pick = None;
            for (i, (t, _)) in self.held.iter().enumerate() {
                if blocked.contains(&t.session) {
                    continue;
                }
                if self.ready(t) {
                    pick = Some(i);
                    break;
                }
                blocked.insert(t.session);
            }
            let Some(i) = pick else { return };
            if let Some((t, _)) = self.held.remove(i) {
                self.unhold(&t);
                self.release(t, out);
            }
        }
    }

    fn unhold(&mut self, t: &Txn) {
        self.hold_writes(t, false);
        if let Some(n) = self.held_per_session.get_mut(&t.session) {
            *n -= 1;
            if *n == 0 {
                self.held_per_session.remove(&t.session);
            }
        }
    }

    /// Takes a finished transaction; returns those now ready to write.
    pub fn push(&mut self, t: Txn, now: Instant) -> Vec<Txn> {
        let mut out = Vec::new();
        if !self.held_per_session.contains_key(&t.session) && self.ready(&t) {
            self.release(t, &mut out);
            if !self.held.is_empty() {
                self.settle(&mut out);
            }
        } else {
            *self.held_per_session.entry(t.session).or_default() += 1;
            self.hold_writes(&t, true);
            self.held.push_back((t, now));
            // A database that keeps returning values no one wrote must not
            // make every push scan a long queue.
            while self.held.len() > MAX_HELD {
                self.give_up_oldest(&mut out);
            }
        }
        out
    }

    /// Releases what has been held longer than the limit (giving up on the
    /// values it waits for), then whatever that unblocks.
    pub fn expire(&mut self, now: Instant) -> Vec<Txn> {
        let mut out = Vec::new();
        while let Some((_, since)) = self.held.front() {
            if now.duration_since(*since) < self.limit {
                break;
            }
            self.give_up_oldest(&mut out);
        }
        out
    }

    /// Releases the oldest held transaction (nothing of its session is
    /// before it), never waiting for its values again.
    fn give_up_oldest(&mut self, out: &mut Vec<Txn>) {
        let Some((t, _)) = self.held.pop_front() else {
            return;
        };
        for (k, v) in t.ops.iter().flat_map(reads) {
            if !self.known(k, v) {
                self.given_up.insert((k.clone(), v));
            }
        }
        self.unhold(&t);
        self.release(t, out);
        self.settle(out);
    }

    /// When the oldest held transaction expires.
    pub fn deadline(&self) -> Option<Instant> {
        self.held.front().map(|(_, since)| *since + self.limit)
    }

    /// Everything still held, in arrival order (the run is over).
    pub fn drain(&mut self) -> Vec<Txn> {
        self.held_per_session.clear();
        self.held_writes.clear();
        self.held.drain(..).map(|(t, _)| t).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use history::Status;
    use workloads::write_id;

    fn txn(session: u64, kind: &str, ops: Vec<Op>) -> Txn {
        let mut t = Txn::new(0, session, Status::Ok, ops);
        t.kind = Some(kind.into());
        t
    }
    fn kinds(ts: &[Txn]) -> Vec<&str> {
        ts.iter().map(|t| t.kind.as_deref().unwrap()).collect()
    }

    #[test]
    fn a_reader_waits_for_its_writer_and_its_session_waits_with_it() {
        let now = Instant::now();
        let mut h = Holdback::new(Duration::from_secs(10));
        assert_eq!(
            kinds(&h.push(
                txn(0, "init", vec![Op::read(1, None), Op::write(1, 10)]),
                now
            )),
            ["init"]
        );
        // Reads 11, whose writer has not arrived.
        assert!(h
            .push(txn(1, "reader", vec![Op::read(1, Some(11))]), now)
            .is_empty());
        // Same session: waits behind it even though it is ready.
        assert!(h
            .push(txn(1, "next", vec![Op::read(1, Some(10))]), now)
            .is_empty());
        // Another session that is ready goes through.
        assert_eq!(
            kinds(&h.push(txn(2, "other", vec![Op::read(1, Some(10))]), now)),
            ["other"]
        );
        // Own writes need no writer.
        assert_eq!(
            kinds(&h.push(
                txn(3, "own", vec![Op::write(2, 5), Op::read(2, Some(5))]),
                now
            )),
            ["own"]
        );
        let out = h.push(
            txn(0, "writer", vec![Op::read(1, Some(10)), Op::write(1, 11)]),
            now,
        );
        assert_eq!(kinds(&out), ["writer", "reader", "next"]);
        assert_eq!(h.deadline(), None);
    }

    #[test]
    fn thin_air_reads_are_released_after_the_limit_and_not_waited_for_again() {
        let t0 = Instant::now();
        let mut h = Holdback::new(Duration::from_secs(1));
        assert!(h
            .push(txn(1, "a", vec![Op::read(1, Some(99))]), t0)
            .is_empty());
        assert!(h.push(txn(1, "b", vec![]), t0).is_empty());
        assert_eq!(h.deadline(), Some(t0 + Duration::from_secs(1)));
        assert!(h.expire(t0 + Duration::from_millis(500)).is_empty());
        let out = h.expire(t0 + Duration::from_secs(1));
        assert_eq!(kinds(&out), ["a", "b"]);
        // 99 is given up on: a later reader is not held.
        assert_eq!(
            kinds(&h.push(txn(2, "c", vec![Op::read(1, Some(99))]), t0)),
            ["c"]
        );
    }

    #[test]
    fn a_held_write_is_not_known_though_its_client_wrote_past_it() {
        let now = Instant::now();
        let mut h = Holdback::new(Duration::from_secs(10));
        // Client 4's first transaction waits for a value of client 5; after
        // a reconnect (another session) client 4 goes on and is released.
        let a = write_id(5, 1);
        let held = txn(
            1,
            "held",
            vec![Op::read(1, Some(a)), Op::write(2, write_id(4, 1))],
        );
        assert!(h.push(held, now).is_empty());
        let later = txn(
            2,
            "later",
            vec![Op::read(3, None), Op::write(3, write_id(4, 2))],
        );
        assert_eq!(kinds(&h.push(later, now)), ["later"]);
        // A read of the held write waits for it, though 4's top id is past it.
        let reader = txn(3, "reader", vec![Op::read(2, Some(write_id(4, 1)))]);
        assert!(h.push(reader, now).is_empty());
        let out = h.push(txn(6, "writer", vec![Op::write(1, a)]), now);
        assert_eq!(kinds(&out), ["writer", "held", "reader"]);
        // What is remembered is one top id per client, however many writes.
        for n in 3..10_000 {
            let t = txn(2, "w", vec![Op::write(3, write_id(4, n))]);
            assert_eq!(h.push(t, now).len(), 1);
        }
        assert_eq!(h.released.len(), 2);
        assert!(h.held_writes.is_empty() && h.given_up.is_empty());
    }

    #[test]
    fn list_and_range_reads_wait_for_every_element() {
        let now = Instant::now();
        let mut h = Holdback::new(Duration::from_secs(10));
        // Write ids of clients 2 and 3.
        let (v2, v3) = (write_id(2, 1), write_id(3, 1));
        let list = Op::ReadList {
            key: Key::Int(1),
            values: Some(vec![v3, v2]),
        };
        let append = |v| Op::Append {
            key: Key::Int(1),
            value: v,
        };
        assert!(h.push(txn(1, "reader", vec![list]), now).is_empty());
        assert!(h.push(txn(2, "a1", vec![append(v2)]), now).len() == 1);
        let out = h.push(txn(3, "a2", vec![append(v3)]), now);
        assert_eq!(kinds(&out), ["a2", "reader"]);
        let range = Op::RangeRead {
            lo: Key::Int(0),
            hi: Key::Int(9),
            rows: Box::new(vec![(Key::Int(4), 40)]),
        };
        assert!(h.push(txn(4, "rq", vec![range]), now).is_empty());
        assert_eq!(h.drain().len(), 1);
    }
}
