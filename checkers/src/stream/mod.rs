//! Checking a history as it is written, in memory that stops growing.
//!
//! The offline check ([`check`](crate::check())) reads the whole history
//! first. A soak run of an hour records tens of millions of transactions,
//! so a [`Stream`] checks them one by one as they arrive instead, and lets
//! go of each one once it is old.
//!
//! # What it decides
//!
//! Two kinds of history, told apart by the first committed transaction:
//!
//! - mini-transactions (MTC, [`mini`]): every write reads the version it
//!   overwrites, so each key's version order is known as soon as the
//!   writer arrives;
//! - list-append (Elle, [`lists`]): a list read shows every append to its
//!   key up to the version read, so the reads write the version order
//!   down as they arrive.
//!
//! Either way the dependency graph (wr, ww, rw; so at the session levels)
//! is fixed edge by edge. SER holds iff that graph is acyclic, SI iff its
//! begin/commit form is ([`depgraph`](crate::decide::depgraph)). Levels
//! `ser`, `si`, `strong-session-ser` and `strong-session-si`.
//!
//! # Why letting go is sound
//!
//! Every edge a new transaction `U` brings joins `U` to an older one, and
//! all of them point into `U`, or into an older transaction that still
//! waits for a writer or for a read to place its append (and is kept),
//! except one kind: `U` read a version that an older transaction `W` had
//! already overwritten (`U -rw-> W`, a stale read). A transaction is
//! retired only when its predecessors are
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
//! does not model: a transaction of neither kind, a read
//! whose writer never arrives (aborted, unknown outcome, thin air), an
//! intermediate or non-repeatable read, a read of one's own write that
//! does not match, a value that cannot be shown unique ([`unique`]). An
//! anomaly the stream finds (a cycle, a lost update) is
//! [`Streamed::Anomalous`]; its counterexample, like every verdict but a
//! streamed `ok`, comes from the offline check of the same history, so
//! the two never differ.

pub mod dropped;
pub mod lists;
pub mod mini;
pub mod retained;
pub mod unique;

use history::{Level, Op, Status, Txn};
use rustc_hash::FxHashMap;

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

/// The most kept transactions a stream reserves room for up front.
const MAX_ROOM: u64 = 1 << 20;

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
    /// A list-append history (else mini-transactions).
    pub lists: bool,
    /// Lists: the most keys held whole at once.
    pub peak_held_keys: u64,
    /// Lists: the entries that remember the keys let go of, at the end.
    pub dropped_entries: u64,
}

/// What every model shares: the kept graph, the session order, the
/// arrival count.
#[derive(Debug)]
pub(crate) struct Core {
    level: Level,
    opts: StreamOptions,
    graph: Retained,
    /// Each session's last committed transaction (session levels).
    last: FxHashMap<u64, Option<Ref>>,
    /// Committed arrivals so far.
    seq: u64,
    peak_kept: u64,
}

impl Core {
    /// Keeps a committed transaction, with its session-order edge.
    fn admit(&mut self, t: &Txn) -> Ref {
        self.seq += 1;
        let me = self.graph.add(self.seq);
        self.peak_kept = self.peak_kept.max(self.graph.kept() as u64);
        if matches!(self.level, Level::StrongSessionSer | Level::StrongSessionSi) {
            if let Some(Some(p)) = self.last.get(&t.session) {
                if self.graph.live(*p) {
                    self.graph.edge(*p, me, false);
                }
            }
        }
        self.last.insert(t.session, Some(me));
        me
    }
}

/// Which kind of history this is, known from its first committed
/// transaction that reads or writes.
#[derive(Debug)]
enum Model {
    Unknown,
    Mini(mini::Mini),
    Lists(lists::Lists),
}

/// A history checked as it arrives.
#[derive(Debug)]
pub struct Stream {
    core: Core,
    model: Model,
    unique: unique::Ranges,
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
            core: Core {
                level,
                opts,
                // A pass comes at least every `batch` arrivals, and
                // retires what is older than the window.
                graph: Retained::with_room(
                    matches!(level, Level::Si | Level::StrongSessionSi),
                    opts.window.saturating_add(opts.batch).min(MAX_ROOM) as usize,
                ),
                last: FxHashMap::default(),
                seq: 0,
                peak_kept: 0,
            },
            model: Model::Unknown,
            unique: unique::Ranges::default(),
            since_pass: 0,
            stats: StreamStats::default(),
            done: None,
        })
    }

    /// What was seen so far.
    pub fn stats(&self) -> StreamStats {
        let mut s = self.stats;
        s.sessions = self.core.last.len() as u64;
        s.peak_kept = self.core.peak_kept;
        match &self.model {
            Model::Unknown => {}
            Model::Mini(m) => s.keys = m.keys() as u64,
            Model::Lists(l) => {
                s.keys = l.keys();
                s.lists = true;
                (s.peak_held_keys, s.dropped_entries) = l.held();
            }
        }
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
        self.core.last.entry(t.session).or_insert(None);
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
            if matches!(self.model, Model::Unknown) && !t.ops.is_empty() {
                let lists = t
                    .ops
                    .iter()
                    .any(|o| matches!(o, Op::Append { .. } | Op::ReadList { .. }));
                self.model = if lists {
                    Model::Lists(lists::Lists::default())
                } else {
                    Model::Mini(mini::Mini::default())
                };
            }
            let done = match &mut self.model {
                Model::Unknown => Ok(()),
                Model::Mini(m) => m.commit(&mut self.core, t),
                Model::Lists(l) => l.commit(&mut self.core, t),
            };
            if let Err(why) = done {
                self.done = Some(why);
                return;
            }
            self.since_pass += 1;
            if self.since_pass >= self.core.opts.batch {
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
        let window = self.core.opts.window;
        let old = self.core.seq.saturating_sub(window);
        match self.core.graph.pass(old, old) {
            Pass::Cycle { unordered } => {
                self.done = Some(Streamed::Anomalous(format!(
                    "a dependency cycle among the last {} transactions ({unordered} graph nodes \
                     on or after it)",
                    self.core.graph.kept()
                )));
            }
            Pass::StaleWait { seq } => self.hand_over(format!(
                "committed transaction #{seq} read a value whose writer had not arrived {window} \
                 transactions later (aborted, unknown or never written)"
            )),
            Pass::Retired(gone) => {
                self.stats.retired += gone.len() as u64;
                for r in gone {
                    match &mut self.model {
                        Model::Unknown => {}
                        Model::Mini(m) => {
                            for (k, v) in r.wrote {
                                m.forget(&self.core, k, Some(v));
                            }
                            for (k, v) in r.overwrote {
                                m.forget(&self.core, k, v);
                            }
                        }
                        Model::Lists(l) => {
                            let keep = window.saturating_mul(lists::IDLE_WINDOWS);
                            for (k, _) in r.overwrote {
                                l.forget(k, self.core.seq, keep);
                            }
                        }
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
        let unresolved = match &self.model {
            Model::Unknown => None,
            Model::Mini(m) => (m.waiting() > 0).then(|| {
                format!(
                    "{} values were read whose writer never committed (or is not a \
                     mini-transaction)",
                    m.waiting()
                )
            }),
            Model::Lists(l) => l.unresolved(matches!(
                self.core.level,
                Level::Si | Level::StrongSessionSi
            )),
        };
        match unresolved {
            Some(why) => (Streamed::Offline(why), stats),
            None => (Streamed::Ok, stats),
        }
    }

    fn hand_over(&mut self, why: String) {
        self.done = Some(Streamed::Offline(why));
        // Nothing kept is needed any more (but the counts).
        let s = self.stats();
        self.stats.keys = s.keys;
        self.stats.lists = s.lists;
        self.core.graph = Retained::new(false);
        self.model = Model::Unknown;
    }
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
             window {}{}); the levels not implied by {level} were not placed",
            s.peak_kept,
            s.retired,
            opts.window,
            if s.lists {
                format!(
                    "; at most {} lists held whole, {} entries for the lists let go of",
                    s.peak_held_keys, s.dropped_entries
                )
            } else {
                String::new()
            }
        )],
        method: if s.lists {
            "list-append, streamed"
        } else {
            "mini-transaction, streamed"
        }
        .into(),
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
