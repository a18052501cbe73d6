//! The checker's compact view of a history: dense ids, who wrote each value,
//! what each transaction read from whom, and which transactions committed.
//!
//! Unique written values are what make black-box checking possible: a read
//! of `x = v` names exactly one writer. Building the index resolves every
//! read to its writer once, and records the *non-cyclic* anomalies found on
//! the way (a value nobody wrote, a read of an aborted or intermediate
//! write, a transaction that does not see its own writes), which need no
//! version order.
//!
//! What counts as committed: `ok` transactions, and `info` transactions
//! whose writes an `ok` transaction observed (they must have committed),
//! including an append seen anywhere in a list, not only at its end.
//!
//! A list read after the transaction's own appends to the key must end
//! with exactly those appends; the part before them is an external read of
//! the version its snapshot held (the writer of the part's last element).
//! An unobserved `info` transaction is treated as aborted, which can only
//! remove constraints, never add an anomaly. Only `ok` transactions' reads
//! are evidence: an aborted transaction's reads constrain nothing, and an
//! `info` transaction's reads tell nothing (docs/history-format.md).
//!
//! Stage 1 of a check. Enters: a [`History`]. Leaves: an [`Index`] (with
//! its [`Finding`]s), which every later stage reads; next is
//! [`decide`](crate::decide). Its passes: [`writers`] (who wrote each
//! value), [`lists`] (list orders and their findings), [`shape`] (which
//! transactions are mini-transactions); [`records`] holds the types they
//! share.

use rustc_hash::FxHashMap;

use history::{History, Key, Op, Status, Value};

use crate::anomaly::AnomalyKind;

pub mod lists;
pub mod records;
pub mod shape;
pub mod writers;

pub use records::{Finding, Read, Write, WriteLoc, INIT};

use shape::shape;
use writers::Writers;

/// Integer keys below this are interned through a vector, not a hash map.
const SMALL_KEYS: i64 = 1 << 20;

/// An unused slot of `Index::small_keys`.
const NO_KEY: u32 = u32::MAX;

/// The slot of a small non-negative integer key.
fn small(k: &Key) -> Option<usize> {
    match k {
        Key::Int(i) if (0..SMALL_KEYS).contains(i) => Some(*i as usize),
        _ => None,
    }
}

/// The fewest transactions whose reads are resolved on two threads.
const PARALLEL_READS: usize = 50_000;

/// What pass 2 finds in a run of transactions.
struct ReadsPart {
    reads: Vec<Read>,
    /// Where each transaction's reads begin in `reads`.
    start: Vec<u32>,
    findings: Vec<Finding>,
}

/// The compact index of a history. Transaction `i` is `history.txns[i]`.
pub struct Index<'h> {
    pub history: &'h History,
    /// Interned keys: `keys[id]`.
    pub keys: Vec<Key>,
    key_ids: FxHashMap<Key, u32>,
    /// The ids of small non-negative integer keys, by key (`NO_KEY`: not
    /// seen), so the usual keys need no hashing; other keys are in `key_ids`.
    small_keys: Vec<u32>,
    /// Who wrote each (key, value).
    pub writer: Writers,
    /// Whether each transaction counts as committed.
    pub committed: Vec<bool>,
    reads: Vec<Read>,
    read_start: Vec<u32>,
    writes: Vec<Write>,
    write_start: Vec<u32>,
    /// Non-cyclic anomalies in committed transactions.
    pub findings: Vec<Finding>,
    /// Committed transactions of each session, in session order.
    pub sessions: Vec<Vec<u32>>,
    /// Each transaction's session slot, from pass 1 until the sessions
    /// are listed.
    session_of: Vec<u32>,
    /// How many transactions are `ok`, `fail` and `info`, counted by the
    /// first pass rather than by a scan of their own.
    pub statuses: (usize, usize, usize),
    /// Number of `info` transactions found to have committed.
    pub info_committed: usize,
    /// Total number of ops.
    pub ops: usize,
    /// Whether any op is a list append or list read (`History::has_lists`,
    /// found once here rather than by a scan in every stage).
    pub lists: bool,
    /// Whether any op is a range read: found here, once, for the stages
    /// that need the written keys in key order.
    pub ranges: bool,
    /// Why the history is not made of mini-transactions (`None`: it is),
    /// found once by [`not_mini`](crate::decide::mini::not_mini) for every stage.
    pub(crate) not_mini: std::sync::OnceLock<Option<String>>,
    /// The transactions that are not mini-transactions by their shape
    /// ([`shape`](shape::shape)), in history order.
    pub(crate) not_mini_shaped: Vec<u32>,
    /// The (key, value) pairs written more than once (a `duplicate-write`).
    duplicated: rustc_hash::FxHashSet<(u32, Value)>,
}

impl<'h> Index<'h> {
    /// Builds the index in two linear passes over the history.
    pub fn new(history: &'h History) -> Index<'h> {
        let n = history.txns.len();
        let mut ix = Index {
            history,
            keys: Vec::new(),
            key_ids: FxHashMap::default(),
            small_keys: Vec::new(),
            writer: Writers::default(),
            committed: Vec::new(),
            reads: Vec::new(),
            read_start: Vec::with_capacity(n + 1),
            writes: Vec::new(),
            write_start: Vec::with_capacity(n + 1),
            findings: Vec::new(),
            sessions: Vec::new(),
            session_of: Vec::new(),
            statuses: (0, 0, 0),
            info_committed: 0,
            ops: 0,
            lists: false,
            ranges: false,
            not_mini: std::sync::OnceLock::new(),
            not_mini_shaped: Vec::new(),
            duplicated: Default::default(),
        };
        let mut dup: Vec<Finding> = Vec::new();
        // Pass 1: the writes here, the census on the other core.
        let two = n >= PARALLEL_READS && crate::two_cores();
        let c = if two {
            std::thread::scope(|s| {
                let counting = std::thread::Builder::new()
                    .name("census".into())
                    .spawn_scoped(s, || Census::of(history))
                    .expect("cannot start an indexing thread");
                ix.index_writes(&mut dup);
                counting
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e))
            })
        } else {
            ix.index_writes(&mut dup);
            Census::of(history)
        };
        ix.not_mini_shaped = c.not_mini_shaped;
        ix.ops = c.ops;
        ix.statuses = c.statuses;
        ix.committed = c.committed;
        ix.session_of = c.session_of;
        ix.sessions = vec![Vec::new(); c.sessions as usize];
        ix.lists = c.lists;
        ix.ranges = c.ranges;
        for f in &dup {
            if let Some((_, v)) = history.txns[f.txn as usize].ops[f.op as usize].written() {
                ix.duplicated.insert((f.key, v));
            }
        }
        let mut raw: Vec<Finding> = Vec::new();
        ix.index_reads(&mut raw);
        ix.resolve_committed();
        // Keep only what committed transactions show.
        ix.findings = dup
            .into_iter()
            .chain(raw)
            .filter(|f| ix.committed[f.txn as usize] || f.kind == AnomalyKind::DuplicateWrite)
            .collect();
        ix.index_sessions();
        ix
    }

    /// True when `k = v` was written more than once (by one transaction or
    /// several, whatever their outcome). A read of it has no one writer:
    /// the index resolves it to none and derives nothing from it but what
    /// holds whoever wrote it; the duplicate write is the anomaly.
    pub fn duplicated(&self, k: u32, v: Value) -> bool {
        !self.duplicated.is_empty() && self.duplicated.contains(&(k, v))
    }

    /// The op of `t` before `o` that wrote `k = v`, if any.
    fn own_write_before(&self, t: u32, o: u32, k: u32, v: Value) -> Option<u32> {
        match self.writer.get(&(k, v)) {
            Some(l) if l.txn == t && l.op < o => Some(l.op),
            _ if self.duplicated(k, v) => self.history.txns[t as usize].ops[..o as usize]
                .iter()
                .position(|p| {
                    p.written()
                        .is_some_and(|(pk, pv)| pv == v && self.key_id(pk) == Some(k))
                })
                .map(|p| p as u32),
            _ => None,
        }
    }

    /// The number of transactions.
    pub fn len(&self) -> usize {
        self.committed.len()
    }

    /// True for an empty history.
    pub fn is_empty(&self) -> bool {
        self.committed.is_empty()
    }

    /// The dense id of a key, if it occurs in the history.
    pub fn key_id(&self, k: &Key) -> Option<u32> {
        match small(k) {
            Some(i) => self.small_keys.get(i).copied().filter(|&id| id != NO_KEY),
            None => self.key_ids.get(k).copied(),
        }
    }

    fn intern(&mut self, k: &Key) -> u32 {
        if let Some(i) = small(k) {
            if i >= self.small_keys.len() {
                self.small_keys.resize(i + 1, NO_KEY);
            }
            if self.small_keys[i] == NO_KEY {
                self.small_keys[i] = self.keys.len() as u32;
                self.keys.push(k.clone());
            }
            return self.small_keys[i];
        }
        if let Some(&id) = self.key_ids.get(k) {
            return id;
        }
        let id = self.keys.len() as u32;
        self.keys.push(k.clone());
        self.key_ids.insert(k.clone(), id);
        id
    }

    /// The id of a key interned before.
    fn known_key(&self, k: &Key) -> u32 {
        self.key_id(k)
            .expect("every key of the history is interned")
    }

    /// The number of external reads of all transactions.
    pub fn read_count(&self) -> usize {
        self.reads.len()
    }

    /// The number of installed writes of all transactions.
    pub fn write_count(&self) -> usize {
        self.writes.len()
    }

    /// The external reads of transaction `t`.
    pub fn reads(&self, t: u32) -> &[Read] {
        let t = t as usize;
        &self.reads[self.read_start[t] as usize..self.read_start[t + 1] as usize]
    }

    /// The installed writes of transaction `t` (one per key).
    pub fn writes(&self, t: u32) -> &[Write] {
        let t = t as usize;
        &self.writes[self.write_start[t] as usize..self.write_start[t + 1] as usize]
    }

    /// Iterates over committed transaction ids.
    pub fn committed_txns(&self) -> impl Iterator<Item = u32> + '_ {
        self.committed
            .iter()
            .enumerate()
            .filter(|(_, &c)| c)
            .map(|(i, _)| i as u32)
    }

    /// Pass 1: intern keys, record each transaction's installed writes,
    /// and fill the writer table (on two cores, see [`Writers`]).
    fn index_writes(&mut self, dup: &mut Vec<Finding>) {
        let h = self.history;
        // The key id of every write-like op, in history order.
        let mut wkeys: Vec<u32> = Vec::new();
        let mut wvals: Vec<Value> = Vec::new();
        let mut counts = [0usize; 2];
        let mut scratch = InstallScratch::default();
        // The keys read (by transactions whose reads count), in the order
        // of their first read: interned after the written keys, so the ids
        // are those a pass of writes, then a pass of reads, would give.
        let mut read_keys: Vec<&Key> = Vec::new();
        let mut small_read: Vec<bool> = Vec::new();
        for txn in &h.txns {
            let from = wkeys.len();
            let reads_count = txn.status != Status::Info;
            for op in &txn.ops {
                if reads_count {
                    let mut read = |k| match small(k) {
                        Some(i) => {
                            if i >= small_read.len() {
                                small_read.resize(i + 1, false);
                            }
                            if !small_read[i] {
                                small_read[i] = true;
                                read_keys.push(k);
                            }
                        }
                        None => read_keys.push(k),
                    };
                    match op {
                        Op::Read { key, .. }
                        | Op::ReadList {
                            key,
                            values: Some(_),
                        } => read(key),
                        Op::RangeRead { rows, .. } => {
                            for (k, _) in rows.iter() {
                                read(k);
                            }
                        }
                        _ => {}
                    }
                }
                let Some((k, v)) = op.written() else { continue };
                let k = self.intern(k);
                counts[(k & 1) as usize] += 1;
                wkeys.push(k);
                wvals.push(v);
            }
            // Installed writes as if no write were a duplicate; redone
            // below in the rare case that some are.
            self.write_start.push(self.writes.len() as u32);
            install(&mut self.writes, &mut scratch, txn, &wkeys[from..], |_| {
                false
            });
        }
        self.write_start.push(self.writes.len() as u32);
        for k in read_keys {
            self.intern(k);
        }
        let (writers, dups) = Writers::build(h, &wkeys, &wvals, counts);
        self.writer = writers;
        if !dups.is_empty() {
            // A duplicate write installs nothing: skip it.
            self.writes.clear();
            self.write_start.clear();
            let mut from = 0;
            let mut d = 0;
            for (t, txn) in h.txns.iter().enumerate() {
                let n = txn.ops.iter().filter(|o| o.written().is_some()).count();
                let t = t as u32;
                let mine = &dups[d..dups.partition_point(|f| f.txn <= t)];
                d += mine.len();
                self.write_start.push(self.writes.len() as u32);
                install(
                    &mut self.writes,
                    &mut scratch,
                    txn,
                    &wkeys[from..from + n],
                    |o| mine.iter().any(|f| f.op == o),
                );
                from += n;
            }
            self.write_start.push(self.writes.len() as u32);
        }
        *dup = dups;
    }

    /// Pass 2: resolve every read of every transaction to its writer, and
    /// find the non-cyclic anomalies.
    fn index_reads(&mut self, out: &mut Vec<Finding>) {
        let h = self.history;
        // The keys only read were interned by pass 1, so the passes below
        // only look keys up and can share the index.
        let n = h.txns.len();
        let two = n >= PARALLEL_READS && crate::two_cores();
        let split = if two { n / 2 } else { n };
        let ops_before_split: usize = h.txns[..split].iter().map(|t| t.ops.len()).sum();
        // Written keys in key order, for range reads.
        let mut written_keys: Vec<u32> = {
            let mut seen = vec![false; self.keys.len()];
            for w in &self.writes {
                seen[w.key as usize] = true;
            }
            (0..self.keys.len() as u32)
                .filter(|&k| seen[k as usize])
                .collect()
        };
        written_keys.sort_by(|a, b| self.keys[*a as usize].cmp(&self.keys[*b as usize]));

        // The transactions' reads are resolved in two halves, one per core:
        // the index is only read, and each read looks up its writer in a
        // table too large for the caches, so two cores wait on memory
        // together. The halves are joined in order, as one pass gives them.
        let room = (ops_before_split, self.ops - ops_before_split);
        let this = &*self;
        let (a, b) = std::thread::scope(|s| {
            let second = two.then(|| {
                std::thread::Builder::new()
                    .name("index".into())
                    .spawn_scoped(s, || this.reads_of(split..n, room.1, &written_keys))
                    .expect("cannot start an indexing thread")
            });
            let a = this.reads_of(0..split, room.0, &written_keys);
            let b = second.map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            (a, b)
        });
        self.read_start = a.start;
        self.reads = a.reads;
        out.extend(a.findings);
        if let Some(b) = b {
            self.reads.reserve_exact(b.reads.len());
            let base = self.reads.len() as u32;
            self.read_start.extend(b.start.iter().map(|s| s + base));
            self.reads.extend(b.reads);
            out.extend(b.findings);
        }
        self.read_start.push(self.reads.len() as u32);
    }

    /// Pass 2 on the transactions `range` (of `ops` ops): their reads
    /// (`start`: where each transaction's begin, from 0) and the
    /// non-cyclic anomalies they show.
    fn reads_of(
        &self,
        range: std::ops::Range<usize>,
        ops: usize,
        written_keys: &[u32],
    ) -> ReadsPart {
        let h = self.history;
        let mut part = ReadsPart {
            reads: Vec::with_capacity(ops),
            start: Vec::with_capacity(range.len()),
            findings: Vec::new(),
        };
        let out = &mut part.findings;
        let reads = &mut part.reads;
        // Per-transaction scratch, keyed by key id.
        let mut own: FxHashMap<u32, (Value, u32)> = FxHashMap::default(); // last own write, op
        let mut first_read: FxHashMap<u32, Option<Value>> = FxHashMap::default();
        let mut nonrep_reported: Vec<u32> = Vec::new();
        // Per key: how many appends the transaction made so far.
        let mut own_appends: FxHashMap<u32, u32> = FxHashMap::default();
        let no_own: FxHashMap<u32, (Value, u32)> = FxHashMap::default();
        for (t, txn) in h.txns.iter().enumerate().take(range.end).skip(range.start) {
            part.start.push(reads.len() as u32);
            own.clear();
            own_appends.clear();
            first_read.clear();
            nonrep_reported.clear();
            let t32 = t as u32;
            // The reads of an `info` transaction tell nothing (docs/history-format.md):
            // its outcome, and so what it saw, is unknown.
            if txn.status == Status::Info {
                continue;
            }
            for (o, op) in txn.ops.iter().enumerate() {
                let o32 = o as u32;
                match op {
                    Op::Read { key, value } => {
                        let k = self.known_key(key);
                        self.observe(
                            t32,
                            o32,
                            k,
                            *value,
                            false,
                            &own,
                            &mut first_read,
                            &mut nonrep_reported,
                            reads,
                            out,
                        );
                    }
                    Op::ReadList { key, values } => {
                        // A list read reads the version installed by the
                        // writer of its last element (Plume, Elle). After
                        // the transaction's own appends it must end with
                        // them, and what comes before them is an external
                        // read of the version its snapshot held.
                        let Some(vs) = values else { continue };
                        let k = self.known_key(key);
                        let c = own_appends.get(&k).copied().unwrap_or(0) as usize;
                        if c > 0 {
                            match self.own_tail(t32, o32, k, vs, c) {
                                Ok(()) => {}
                                Err(kind) => {
                                    out.push(Finding {
                                        kind,
                                        txn: t32,
                                        op: o32,
                                        other: None,
                                        key: k,
                                    });
                                    continue;
                                }
                            }
                        }
                        let prefix = &vs[..vs.len() - c];
                        self.observe(
                            t32,
                            o32,
                            k,
                            prefix.last().copied(),
                            false,
                            &no_own,
                            &mut first_read,
                            &mut nonrep_reported,
                            reads,
                            out,
                        );
                    }
                    Op::RangeRead { lo, hi, rows } => {
                        let mut listed: FxHashMap<u32, Value> = FxHashMap::default();
                        for (k, v) in rows.iter() {
                            let k = self.known_key(k);
                            listed.insert(k, *v);
                            self.observe(
                                t32,
                                o32,
                                k,
                                Some(*v),
                                true,
                                &own,
                                &mut first_read,
                                &mut nonrep_reported,
                                reads,
                                out,
                            );
                        }
                        // Keys in range that were written somewhere but are
                        // not listed were read as absent.
                        let from = written_keys.partition_point(|&k| self.keys[k as usize] < *lo);
                        let mut i = from;
                        while i < written_keys.len() && self.keys[written_keys[i] as usize] <= *hi {
                            let k = written_keys[i];
                            if !listed.contains_key(&k) {
                                self.observe(
                                    t32,
                                    o32,
                                    k,
                                    None,
                                    true,
                                    &own,
                                    &mut first_read,
                                    &mut nonrep_reported,
                                    reads,
                                    out,
                                );
                            }
                            i += 1;
                        }
                    }
                    _ => {
                        if let Some((k, v)) = op.written() {
                            let k = self.known_key(k);
                            own.insert(k, (v, o32));
                            if matches!(op, Op::Append { .. }) {
                                *own_appends.entry(k).or_insert(0) += 1;
                            }
                        }
                    }
                }
            }
        }
        part
    }

    /// Whether list read `vs` of `k` by `t` at op `o` ends with exactly the
    /// `c` appends `t` made to `k` before it, in order; else the anomaly.
    fn own_tail(&self, t: u32, o: u32, k: u32, vs: &[Value], c: usize) -> Result<(), AnomalyKind> {
        let own_at = |v: &Value| self.own_write_before(t, o, k, *v);
        let tail = &vs[vs.len().saturating_sub(c)..];
        let fits = vs.len() >= c
            && if tail.iter().any(|v| self.duplicated(k, *v)) {
                // A value written twice: the appends themselves, in order.
                let appended = self.history.txns[t as usize].ops[..o as usize]
                    .iter()
                    .filter_map(|p| match p {
                        Op::Append { key, value } if self.key_id(key) == Some(k) => Some(*value),
                        _ => None,
                    });
                tail.iter().copied().eq(appended)
            } else {
                let mut prev: Option<u32> = None;
                tail.iter().all(|v| match own_at(v) {
                    Some(op) if prev.is_none_or(|p| p < op) => {
                        prev = Some(op);
                        true
                    }
                    _ => false,
                })
            };
        if fits {
            return Ok(());
        }
        // Seeing an earlier own append last is not seeing the last one.
        if vs.last().and_then(own_at).is_some() {
            Err(AnomalyKind::NotMyLastWrite)
        } else {
            Err(AnomalyKind::NotMyOwnWrite)
        }
    }

    /// Records one read of `k` by transaction `t` at op `o`.
    #[allow(clippy::too_many_arguments)]
    fn observe(
        &self,
        t: u32,
        o: u32,
        k: u32,
        value: Option<Value>,
        predicate: bool,
        own: &FxHashMap<u32, (Value, u32)>,
        first_read: &mut FxHashMap<u32, Option<Value>>,
        nonrep_reported: &mut Vec<u32>,
        reads: &mut Vec<Read>,
        out: &mut Vec<Finding>,
    ) {
        let finding = |kind, other| Finding {
            kind,
            txn: t,
            op: o,
            other,
            key: k,
        };
        if let Some(&(last, _)) = own.get(&k) {
            // An internal read: must see the transaction's own last write.
            if value == Some(last) {
                return;
            }
            let own = value
                .and_then(|v| self.writer.get(&(k, v)))
                .filter(|l| l.txn == t);
            let kind = match (own, value) {
                // Written more than once: only its own earlier writes say
                // what the read is (a later write of it may not be the
                // one read).
                (_, Some(v)) if self.duplicated(k, v) => {
                    if self.own_write_before(t, o, k, v).is_some() {
                        AnomalyKind::NotMyLastWrite
                    } else {
                        AnomalyKind::NotMyOwnWrite
                    }
                }
                (Some(l), _) if l.op > o => AnomalyKind::FutureRead,
                (Some(_), _) => AnomalyKind::NotMyLastWrite,
                (None, _) => AnomalyKind::NotMyOwnWrite,
            };
            out.push(finding(kind, None));
            return;
        }
        match first_read.get(&k) {
            Some(&first) if first == value => return, // a repeat; nothing new
            Some(_) => {
                if !nonrep_reported.contains(&k) {
                    nonrep_reported.push(k);
                    out.push(finding(AnomalyKind::NonRepeatableRead, None));
                }
                // Both reads are real; keep this one as evidence too.
            }
            None => {
                first_read.insert(k, value);
            }
        }
        let Some(v) = value else {
            reads.push(Read {
                key: k,
                writer: INIT,
                op: o,
                value: None,
                predicate,
            });
            return;
        };
        if self.duplicated(k, v) {
            // Several writers: the read names none of them.
            return;
        }
        let Some(&loc) = self.writer.get(&(k, v)) else {
            out.push(finding(AnomalyKind::ThinAirRead, None));
            return;
        };
        if loc.txn == t {
            out.push(finding(AnomalyKind::FutureRead, None));
            return;
        }
        if loc.failed {
            out.push(finding(AnomalyKind::AbortedRead, Some(loc.txn)));
            return;
        }
        if !loc.last {
            out.push(finding(AnomalyKind::IntermediateRead, Some(loc.txn)));
            return;
        }
        reads.push(Read {
            key: k,
            writer: loc.txn,
            op: o,
            value: Some(v),
            predicate,
        });
    }

    /// Committed = ok, plus every info transaction a committed transaction
    /// read from (to a fixpoint: an observed info transaction's reads count).
    fn resolve_committed(&mut self) {
        let h = self.history;
        // Pass 1 marked the `ok` ones; without `info` transactions that is
        // all there is to it.
        if self.statuses.2 == 0 {
            return;
        }
        let mut stack: Vec<u32> = self.committed_txns().collect();
        // Every element of a list an `ok` transaction read was appended by
        // a transaction that committed, not only the last one.
        let mut found: Vec<u32> = Vec::new();
        let list_readers = h.txns.iter().enumerate().filter(|_| self.lists);
        for (t, txn) in list_readers {
            if txn.status != Status::Ok {
                continue;
            }
            for op in &txn.ops {
                let Op::ReadList {
                    key,
                    values: Some(vs),
                } = op
                else {
                    continue;
                };
                let Some(k) = self.key_id(key) else {
                    continue;
                };
                for v in vs.iter().filter(|v| !self.duplicated(k, **v)) {
                    if let Some(l) = self.writer.get(&(k, *v)) {
                        let w = l.txn as usize;
                        if w != t && !self.committed[w] && h.txns[w].status == Status::Info {
                            found.push(l.txn);
                        }
                    }
                }
            }
        }
        for w in found {
            if !self.committed[w as usize] {
                self.committed[w as usize] = true;
                self.info_committed += 1;
                stack.push(w);
            }
        }
        while let Some(t) = stack.pop() {
            for i in self.read_start[t as usize]..self.read_start[t as usize + 1] {
                let w = self.reads[i as usize].writer;
                if w != INIT
                    && !self.committed[w as usize]
                    && h.txns[w as usize].status == Status::Info
                {
                    self.committed[w as usize] = true;
                    self.info_committed += 1;
                    stack.push(w);
                }
            }
        }
    }

    /// Each session's committed transactions, from the session slots pass 1
    /// gave (a scan of 4 bytes a transaction, not of the history).
    fn index_sessions(&mut self) {
        for (t, &s) in self.session_of.iter().enumerate() {
            if self.committed[t] {
                self.sessions[s as usize].push(t as u32);
            }
        }
        self.session_of = Vec::new();
    }

    /// Number of distinct sessions.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }
}

/// What pass 1 learns of each transaction apart from its writes, on a
/// core of its own while the writes are interned.
struct Census {
    /// The transactions that are not mini-transactions by their shape.
    not_mini_shaped: Vec<u32>,
    ops: usize,
    statuses: (usize, usize, usize),
    /// `ok` transactions (committed before `info` ones are resolved).
    committed: Vec<bool>,
    /// Each transaction's session slot, and how many slots.
    session_of: Vec<u32>,
    sessions: u32,
    /// Whether any op is a list append or a list read.
    lists: bool,
    /// Whether any op is a range read.
    ranges: bool,
}

impl Census {
    fn of(h: &History) -> Census {
        let n = h.txns.len();
        let mut c = Census {
            not_mini_shaped: Vec::new(),
            ops: 0,
            statuses: (0, 0, 0),
            committed: vec![false; n],
            session_of: Vec::with_capacity(n),
            sessions: 0,
            lists: false,
            ranges: false,
        };
        let mut sessions = SessionIds::default();
        for (t, txn) in h.txns.iter().enumerate() {
            if shape(txn).is_some() {
                c.not_mini_shaped.push(t as u32);
            }
            c.ops += txn.ops.len();
            match txn.status {
                Status::Ok => {
                    c.statuses.0 += 1;
                    c.committed[t] = true;
                }
                Status::Fail => c.statuses.1 += 1,
                Status::Info => c.statuses.2 += 1,
            }
            c.session_of.push(sessions.slot(txn.session));
            for op in &txn.ops {
                match op {
                    Op::ReadList { .. } | Op::Append { .. } => c.lists = true,
                    Op::RangeRead { .. } => c.ranges = true,
                    _ => {}
                }
            }
        }
        c.sessions = sessions.count;
        c
    }
}

/// Dense slots for session ids, in order of first appearance: small ids
/// (the harness numbers its clients from 0) through a vector, others
/// hashed.
#[derive(Default)]
struct SessionIds {
    small: Vec<u32>,
    other: FxHashMap<u64, u32>,
    count: u32,
}

impl SessionIds {
    const SMALL: u64 = 1 << 16;

    fn slot(&mut self, session: u64) -> u32 {
        let fresh = self.count;
        let s = if session < Self::SMALL {
            let i = session as usize;
            if i >= self.small.len() {
                self.small.resize(i + 1, u32::MAX);
            }
            if self.small[i] == u32::MAX {
                self.small[i] = fresh;
            }
            self.small[i]
        } else {
            *self.other.entry(session).or_insert(fresh)
        };
        if s == fresh {
            self.count += 1;
        }
        s
    }
}

/// Per-transaction scratch of [`install`]: where each key's installed
/// write is in the output.
#[derive(Default)]
struct InstallScratch {
    at: FxHashMap<u32, usize>,
}

/// Appends transaction `txn`'s installed writes (the last write of each
/// key, at the position of its first) to `writes`. `wkeys` are the key ids
/// of its write-like ops; ops `skip` says are not installed (duplicates).
fn install(
    writes: &mut Vec<Write>,
    scratch: &mut InstallScratch,
    txn: &history::Txn,
    wkeys: &[u32],
    skip: impl Fn(u32) -> bool,
) {
    let base = writes.len();
    let long = wkeys.len() > 16;
    if long {
        scratch.at.clear();
    }
    let mut i = 0;
    for (o, op) in txn.ops.iter().enumerate() {
        let Some((_, v)) = op.written() else { continue };
        let key = wkeys[i];
        i += 1;
        let o = o as u32;
        if skip(o) {
            continue;
        }
        let w = Write {
            key,
            value: v,
            op: o,
        };
        let pos = if long {
            scratch.at.get(&key).copied()
        } else {
            writes[base..]
                .iter()
                .position(|x| x.key == key)
                .map(|p| base + p)
        };
        match pos {
            Some(p) => writes[p] = w,
            None => {
                if long {
                    scratch.at.insert(key, writes.len());
                }
                writes.push(w);
            }
        }
    }
}

#[cfg(test)]
mod tests;
