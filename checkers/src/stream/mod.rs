//! Checking a history as it is written, in memory that stops growing.
//!
//! The offline check ([`check`](crate::check())) reads the whole history
//! first. A soak run of an hour records tens of millions of transactions,
//! so a [`Stream`] checks them one by one as they arrive instead, and lets
//! go of each one once it is old.
//!
//! # What it decides
//!
//! Mini-transaction histories (MTC): every write reads the version it
//! overwrites, so each key's version order is known as soon as the writer
//! arrives, and the dependency graph (wr, ww, rw; so at the session
//! levels) is fixed edge by edge. SER holds iff that graph is acyclic, SI
//! iff its begin/commit form is ([`depgraph`](crate::decide::depgraph)).
//! Levels `ser`, `si`, `strong-session-ser` and `strong-session-si`.
//!
//! # Why letting go is sound
//!
//! Every edge a new transaction `U` brings joins `U` to an older one, and
//! all of them point into `U`, or into an older transaction that still
//! waits for a writer (and is kept), except one kind: `U` read a version
//! that an older transaction `W` had already overwritten (`U -rw-> W`, a
//! stale read). A transaction is retired only when its predecessors are
//! all retired ([`retained`]), so a cycle through a retired transaction
//! needs an edge into it, that is, a stale read of a version whose next
//! writer is gone. The stream sees that edge arrive, cannot follow it, and
//! hands the history to the offline check ([`Streamed::Offline`]). So a
//! retired transaction never hides a cycle: the stream's `ok` is the
//! offline check's `ok`.
//!
//! Retiring waits for the transaction to be `window` arrivals old, so a
//! read that is stale by less than the window (the usual concurrency) is
//! followed exactly. The same hand-over happens for everything the stream
//! does not model: a transaction that is not a mini-transaction, a read
//! whose writer never arrives (aborted, unknown outcome, thin air), an
//! intermediate or non-repeatable read, a read of one's own write that
//! does not match, a value that cannot be shown unique ([`unique`]). An
//! anomaly the stream finds (a cycle, a lost update) is
//! [`Streamed::Anomalous`]; its counterexample, like every verdict but a
//! streamed `ok`, comes from the offline check of the same history, so
//! the two never differ.

pub mod retained;
pub mod unique;

use history::{Key, Level, Op, Status, Txn, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::anomaly::{AnomalyKind, Scope};
use crate::lattice::forbids;
use crate::report::{Certified, HistoryStats, Report, Verdict};
use retained::{Pass, Ref, Retained};

/// The levels a stream decides.
pub fn streams(level: Level) -> bool {
    matches!(
        level,
        Level::Ser | Level::Si | Level::StrongSessionSer | Level::StrongSessionSi
    )
}

/// How long transactions stay.
#[derive(Clone, Copy, Debug)]
pub struct StreamOptions {
    /// A transaction may leave once this many committed transactions
    /// arrived after it: a read staler than that hands over to the offline
    /// check.
    pub window: u64,
    /// Arrivals between two passes over the kept graph.
    pub batch: u64,
}

impl Default for StreamOptions {
    fn default() -> StreamOptions {
        StreamOptions {
            window: 50_000,
            batch: 50_000,
        }
    }
}

/// What the stream says once the history has ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Streamed {
    /// The level holds (as the offline check would say).
    Ok,
    /// An anomaly, certain; the offline check gives its counterexample.
    Anomalous(String),
    /// The stream cannot decide this history (why); the offline check must.
    Offline(String),
}

/// Counts for the report of a streamed verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub txns: u64,
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
    pub ops: u64,
    pub sessions: u64,
    pub keys: u64,
    /// The most transactions kept at once.
    pub peak_kept: u64,
    /// Transactions retired.
    pub retired: u64,
}

/// One version of a key: who wrote it, who overwrote it, who read it.
#[derive(Debug, Default)]
struct Version {
    /// `None`: the initial version.
    writer: Writer,
    /// The transaction that read this version and wrote the key.
    next: Option<Ref>,
    /// Readers whose rw edge to `next` waits for it.
    readers: Vec<Ref>,
    /// Readers whose wr edge waits for the writer.
    waiting: Vec<Ref>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Writer {
    /// Nobody: the initial version.
    Init,
    /// Read before its writer arrived.
    #[default]
    Pending,
    /// Written by this transaction (kept or retired).
    By(Ref),
}

/// A version's name: key and value (`None`: the initial version).
type VersionId = (u32, Option<Value>);

/// A history checked as it arrives.
#[derive(Debug)]
pub struct Stream {
    level: Level,
    opts: StreamOptions,
    graph: Retained,
    versions: FxHashMap<VersionId, Version>,
    keys: FxHashMap<Key, u32>,
    /// Each session's last committed transaction (session levels).
    last: FxHashMap<u64, Option<Ref>>,
    unique: unique::Ranges,
    /// Committed arrivals so far.
    seq: u64,
    since_pass: u64,
    stats: StreamStats,
    /// Set once the stream has decided or given up: it then only counts.
    done: Option<Streamed>,
}

impl Stream {
    /// A stream for `level`, or `None` when the level is not one it
    /// decides ([`streams`]).
    pub fn new(level: Level, opts: StreamOptions) -> Option<Stream> {
        streams(level).then(|| Stream {
            level,
            opts,
            graph: Retained::new(matches!(level, Level::Si | Level::StrongSessionSi)),
            versions: FxHashMap::default(),
            keys: FxHashMap::default(),
            last: FxHashMap::default(),
            unique: unique::Ranges::default(),
            seq: 0,
            since_pass: 0,
            stats: StreamStats::default(),
            done: None,
        })
    }

    /// What was seen so far.
    pub fn stats(&self) -> StreamStats {
        let mut s = self.stats;
        s.sessions = self.last.len() as u64;
        s.keys = self.keys.len() as u64;
        s
    }

    /// The anomaly found or the reason for handing over, once there is one.
    pub fn decided(&self) -> Option<&Streamed> {
        self.done.as_ref()
    }

    /// Takes the next transaction of the history.
    pub fn push(&mut self, t: &Txn) {
        self.stats.txns += 1;
        self.stats.ops += t.ops.len() as u64;
        match t.status {
            Status::Ok => self.stats.ok += 1,
            Status::Fail => self.stats.fail += 1,
            Status::Info => self.stats.info += 1,
        }
        self.last.entry(t.session).or_insert(None);
        if self.done.is_some() {
            return;
        }
        // Every write, whatever its outcome, must carry a unique value.
        for op in &t.ops {
            if let Some((_, v)) = op.written() {
                if !self.unique.note(t.session, v) {
                    return self.hand_over(format!(
                        "transaction {} writes {v}: the stream shows values unique only when \
                         each session's are increasing and its range is its own",
                        t.id
                    ));
                }
            }
        }
        if t.status == Status::Ok {
            if let Err(why) = self.commit(t) {
                self.done = Some(why);
                return;
            }
            self.since_pass += 1;
            if self.since_pass >= self.opts.batch {
                self.settle();
            }
        }
    }

    /// Looks for a cycle among the kept transactions now, and retires the
    /// old ones (also done every `batch` arrivals).
    pub fn settle(&mut self) {
        if self.done.is_some() {
            return;
        }
        self.since_pass = 0;
        let old = self.seq.saturating_sub(self.opts.window);
        match self.graph.pass(old, old) {
            Pass::Cycle { unordered } => {
                self.done = Some(Streamed::Anomalous(format!(
                    "a dependency cycle among the last {} transactions ({unordered} graph nodes \
                     on or after it)",
                    self.graph.kept()
                )));
            }
            Pass::StaleWait { seq } => self.hand_over(format!(
                "committed transaction #{seq} read a value whose writer had not arrived {} \
                 transactions later (aborted, unknown or never written)",
                self.opts.window
            )),
            Pass::Retired(gone) => {
                self.stats.retired += gone.len() as u64;
                for r in gone {
                    for (k, v) in r.wrote {
                        self.forget(k, Some(v));
                    }
                    for (k, v) in r.overwrote {
                        self.forget(k, v);
                    }
                }
            }
        }
    }

    /// The verdict, once the history has ended.
    pub fn finish(mut self) -> (Streamed, StreamStats) {
        self.settle();
        let stats = self.stats();
        if let Some(d) = self.done {
            return (d, stats);
        }
        if stats.ok == 0 {
            // An `ok` of nothing would mean nothing.
            let why = "no transaction committed: nothing to check".to_string();
            return (Streamed::Offline(why), stats);
        }
        let waiting = self
            .versions
            .values()
            .filter(|v| !v.waiting.is_empty())
            .count();
        if waiting > 0 {
            return (
                Streamed::Offline(format!(
                    "{waiting} values were read whose writer never committed (or is not a \
                     mini-transaction)"
                )),
                stats,
            );
        }
        (Streamed::Ok, stats)
    }

    fn hand_over(&mut self, why: String) {
        self.done = Some(Streamed::Offline(why));
        // Nothing kept is needed any more.
        self.graph = Retained::new(false);
        self.versions = FxHashMap::default();
    }

    /// Drops a version whose writer is retired and that was overwritten (a
    /// later read of it would be stale: it waits, and hands over).
    fn forget(&mut self, k: u32, v: Option<Value>) {
        let Some(ver) = self.versions.get(&(k, v)) else {
            return;
        };
        let writer_gone = match ver.writer {
            Writer::Init => false,
            Writer::Pending => false,
            Writer::By(w) => !self.graph.live(w),
        };
        let next_gone = ver.next.is_some_and(|n| !self.graph.live(n));
        if writer_gone && next_gone && ver.waiting.is_empty() {
            self.versions.remove(&(k, v));
        }
    }

    fn key(&mut self, k: &Key) -> u32 {
        // Known keys (nearly every op) need no clone of the key.
        if let Some(&id) = self.keys.get(k) {
            return id;
        }
        let n = self.keys.len() as u32;
        self.keys.insert(k.clone(), n);
        n
    }

    /// Adds a committed transaction and its edges.
    fn commit(&mut self, t: &Txn) -> Result<(), Streamed> {
        let offline = |why: String| Err(Streamed::Offline(why));
        // A non-cyclic anomaly of one transaction: certain, and at every
        // streamed level forbidden (the lattice says so; else handed over).
        let level = self.level;
        let found = |kind: AnomalyKind, why: String| {
            Err(if forbids(level, kind, Scope::Item) {
                Streamed::Anomalous(format!("{kind}: {why}"))
            } else {
                Streamed::Offline(why)
            })
        };
        // What it read from others and what it installed, per key, checked
        // against the mini-transaction shape and the read-your-writes rules.
        let mut reads: SmallVec<[(u32, Option<Value>); 4]> = SmallVec::new();
        let mut writes: SmallVec<[(u32, Value); 2]> = SmallVec::new();
        // Every value it writes, intermediate ones too.
        let mut written: SmallVec<[(u32, Value); 2]> = SmallVec::new();
        if crate::index::shape::shape(t).is_some() {
            return offline(format!("transaction {} is not a mini-transaction", t.id));
        }
        for op in &t.ops {
            match op {
                Op::Read { key, value } => {
                    let k = self.key(key);
                    if let Some(&(_, own)) = writes.iter().find(|w| w.0 == k) {
                        if *value != Some(own) {
                            let why = format!("transaction {} misreads its own write", t.id);
                            return found(AnomalyKind::NotMyOwnWrite, why);
                        }
                    } else if let Some(&(_, before)) = reads.iter().find(|r| r.0 == k) {
                        if before != *value {
                            let why = format!("transaction {} read {key} twice", t.id);
                            return found(AnomalyKind::NonRepeatableRead, why);
                        }
                    } else {
                        reads.push((k, *value));
                    }
                }
                Op::Write { key, value } => {
                    let k = self.key(key);
                    written.push((k, *value));
                    match writes.iter_mut().find(|w| w.0 == k) {
                        // The intermediate version is not installed: a read
                        // of it waits, and hands over.
                        Some(w) => w.1 = *value,
                        None => writes.push((k, *value)),
                    }
                }
                _ => return offline(format!("transaction {} is not a mini-transaction", t.id)),
            }
        }
        if reads
            .iter()
            .any(|&(k, v)| v.is_some_and(|v| written.contains(&(k, v))))
        {
            let why = format!("transaction {} read a value it writes later", t.id);
            return found(AnomalyKind::FutureRead, why);
        }
        self.seq += 1;
        let me = self.graph.add(self.seq);
        self.stats.peak_kept = self.stats.peak_kept.max(self.graph.kept() as u64);
        // Session order.
        if matches!(self.level, Level::StrongSessionSer | Level::StrongSessionSi) {
            if let Some(Some(p)) = self.last.get(&t.session) {
                if self.graph.live(*p) {
                    self.graph.edge(*p, me, false);
                }
            }
        }
        self.last.insert(t.session, Some(me));
        for &(k, v) in &reads {
            let ver = self.versions.entry((k, v)).or_insert_with(|| Version {
                writer: if v.is_none() {
                    Writer::Init
                } else {
                    Writer::Pending
                },
                ..Version::default()
            });
            match ver.writer {
                Writer::Init => {}
                Writer::Pending => {
                    ver.waiting.push(me);
                    self.graph.wait(me, true);
                }
                Writer::By(w) => {
                    if self.graph.live(w) {
                        self.graph.edge(w, me, false);
                    }
                }
            }
            let wrote_it = writes.iter().any(|w| w.0 == k);
            match ver.next {
                Some(_) if wrote_it => {
                    return Err(Streamed::Anomalous(format!(
                        "lost update: two transactions read one version of key {} and both \
                         overwrote it (the second is {})",
                        key_name(&self.keys, k),
                        t.id
                    )));
                }
                Some(n) => {
                    if !self.graph.live(n) {
                        return offline(format!(
                            "transaction {} read a version overwritten more than {} \
                             transactions before it",
                            t.id, self.opts.window
                        ));
                    }
                    self.graph.edge(me, n, true);
                }
                None if wrote_it => {
                    // `me` installs the next version: ww from its writer, rw
                    // from its readers.
                    ver.next = Some(me);
                    let readers = std::mem::take(&mut ver.readers);
                    let writer = ver.writer;
                    if let Writer::By(w) = writer {
                        if self.graph.live(w) {
                            self.graph.edge(w, me, false);
                        }
                    }
                    for r in readers {
                        if self.graph.live(r) {
                            self.graph.edge(r, me, true);
                        }
                    }
                    self.graph.overwrote(me, k, v);
                }
                None => {
                    ver.readers.push(me);
                    // A version read by many and overwritten by none (a
                    // cold key, the final reads) keeps only live readers.
                    let n = ver.readers.len();
                    if n >= 64 && n.is_power_of_two() {
                        let g = &self.graph;
                        ver.readers.retain(|&r| g.live(r));
                    }
                }
            }
        }
        for &(k, v) in &writes {
            let ver = self.versions.entry((k, Some(v))).or_default();
            if ver.writer != Writer::Pending {
                return offline(format!(
                    "transaction {} writes a value already written",
                    t.id
                ));
            }
            ver.writer = Writer::By(me);
            // Readers (and the next writer) that arrived first.
            for r in std::mem::take(&mut ver.waiting) {
                self.graph.wait(r, false);
                self.graph.edge(me, r, false);
            }
            if let Some(n) = ver.next {
                self.graph.edge(me, n, false);
            }
            self.graph.wrote(me, k, v);
        }
        Ok(())
    }
}

fn key_name(keys: &FxHashMap<Key, u32>, k: u32) -> String {
    keys.iter()
        .find(|(_, &id)| id == k)
        .map_or_else(|| format!("#{k}"), |(key, _)| key.to_string())
}

/// The report of a streamed `ok`: the level and every level it implies
/// hold; the stronger ones are not placed (the stream decides one level).
/// No certificate: the stream keeps no witness order.
pub fn ok_report(level: Level, s: &StreamStats, opts: &StreamOptions, ms: u64) -> Report {
    let satisfies = crate::lattice::weaker_or_equal(level);
    let not_placed = Level::ALL
        .into_iter()
        .filter(|l| !satisfies.contains(l))
        .collect();
    Report {
        level,
        verdict: Verdict::Ok,
        notes: vec![format!(
            "checked in one pass as it was read: at most {} transactions in memory at once ({} retired, \
             window {}); the levels not implied by {level} were not placed",
            s.peak_kept, s.retired, opts.window
        )],
        method: "mini-transaction, streamed".into(),
        anomalies: Vec::new(),
        anomaly_counts: Default::default(),
        fails: Vec::new(),
        satisfies,
        not_placed,
        stats: HistoryStats {
            txns: s.txns as usize,
            ok: s.ok as usize,
            fail: s.fail as usize,
            info: s.info as usize,
            info_committed: 0,
            sessions: s.sessions as usize,
            keys: s.keys as usize,
            ops: s.ops as usize,
        },
        constraints: 0,
        decided_ms: ms,
        elapsed_ms: ms,
        certified: Certified::NotChecked("a streamed check keeps no witness to certify".into()),
        certify_ms: 0,
        certificate: None,
    }
}
