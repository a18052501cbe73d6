//! `memdb`: an in-process multi-version key-value store with switchable
//! isolation bugs.
//!
//! It is three things at once: a target that needs no server (a demo of
//! the harness), a source of large valid histories for benchmarks, and the
//! proof that each bug the checkers claim to catch is caught. It runs the
//! `tpcc` workload too, interpreting TPC-C's statements on whole rows
//! (module `tpcc`), so its bugs also show up as broken TPC-C consistency
//! conditions.
//!
//! Correct levels:
//!
//! * `rc`: every read sees the latest committed version at the time of the
//!   read; commits install without checks.
//! * `si`: a snapshot at BEGIN (the commit counter); first committer wins:
//!   a transaction whose written key got a newer version since its
//!   snapshot aborts.
//! * `ser`: `si` plus backward validation: a transaction aborts if any key
//!   it read (or any key in a range it scanned) got a newer version since
//!   its snapshot. It then behaves as if it ran at its commit point, which
//!   is even strictly serializable.
//!
//! Bugs (`--bug`), each producing the anomaly it is named after:
//!
//! * `lost-update`: no write-conflict check and no validation of keys the
//!   transaction writes;
//! * `write-skew`: `ser` validates only the keys it writes (it is `si`);
//! * `stale-read`: snapshots lag a few commits behind, and read-only
//!   transactions commit without validation (serializable, not strict);
//!   the read bugs below also skip validation of read-only transactions,
//!   so that `ser` shows them too;
//! * `fractured-read`: read-only transactions read their first key at a
//!   snapshot a few commits old and every later key at the latest version;
//! * `long-fork`: read-only transactions see even keys and odd keys at two
//!   different points of the commit order;
//! * `aborted-read`: some writers publish their writes before committing,
//!   then abort;
//! * `lost-write`: an acknowledged commit that was never durable: when a
//!   session closes, the versions its last committed writing transaction
//!   installed are lost, though its COMMIT answered ok. They go once no
//!   session is open any more (as in a crash after the clients left), so
//!   nothing looks wrong while the sessions run; only a read after they all
//!   closed (the run's final reads, on fresh sessions) can see the loss, as
//!   a read of an older version than one committed before it began.

use std::collections::BTreeMap;

/// How many times a transaction that shows a bug (aborted-read: it
/// published its writes; lost-update: it read and wrote one key) lets the
/// other sessions run before it commits or aborts.
const BUG_YIELDS: usize = 16;

/// How many times a read-committed append yields for a list key another
/// transaction holds before it gives up (a lock wait timeout, which also
/// ends deadlocks).
const LOCK_YIELDS: usize = 2_000;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use history::Level;
use workloads::Schema;

use crate::error::{AdapterError, DbError, ErrorClass};
use crate::exec::{Conn, Row, SqlSession};
use crate::{normalize_isolation, Database, Isolation, OpenOptions, Session};

mod tpcc;

/// The isolation memdb implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemLevel {
    ReadCommitted,
    Snapshot,
    Serializable,
}

impl MemLevel {
    /// Every level, by its `--isolation` name.
    pub const NAMES: [(&'static str, MemLevel); 3] = [
        ("read-committed", MemLevel::ReadCommitted),
        ("snapshot", MemLevel::Snapshot),
        ("serializable", MemLevel::Serializable),
    ];

    /// The level an `--isolation` name stands for.
    pub fn from_name(name: &str) -> Option<MemLevel> {
        MemLevel::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, l)| l)
    }

    /// The `--isolation` name of a level.
    pub fn name(self) -> &'static str {
        MemLevel::NAMES
            .iter()
            .find(|(_, l)| *l == self)
            .map_or("", |(n, _)| n)
    }

    /// The weakest memdb level that promises `level`.
    pub fn promising(level: Level) -> MemLevel {
        match level {
            Level::Rc => MemLevel::ReadCommitted,
            Level::Ra
            | Level::Cc
            | Level::Pc
            | Level::Si
            | Level::StrongSessionSi
            | Level::StrongSi => MemLevel::Snapshot,
            Level::Ser | Level::StrongSessionSer | Level::Sser => MemLevel::Serializable,
        }
    }
}

/// A deliberate isolation bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    LostUpdate,
    StaleRead,
    FracturedRead,
    WriteSkew,
    LongFork,
    AbortedRead,
    LostWrite,
}

impl Bug {
    /// Every bug, for tests and help text.
    pub const ALL: [Bug; 7] = [
        Bug::LostUpdate,
        Bug::StaleRead,
        Bug::FracturedRead,
        Bug::WriteSkew,
        Bug::LongFork,
        Bug::AbortedRead,
        Bug::LostWrite,
    ];

    /// The name used by `--bug`.
    pub fn name(self) -> &'static str {
        match self {
            Bug::LostUpdate => "lost-update",
            Bug::StaleRead => "stale-read",
            Bug::FracturedRead => "fractured-read",
            Bug::WriteSkew => "write-skew",
            Bug::LongFork => "long-fork",
            Bug::AbortedRead => "aborted-read",
            Bug::LostWrite => "lost-write",
        }
    }

    /// Parses a `--bug` name.
    pub fn parse(s: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|b| b.name() == s)
    }
}

/// One committed version.
#[derive(Clone, Debug)]
struct Version {
    ts: u64,
    val: Val,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    Reg {
        v: i64,
        tomb: bool,
    },
    List(Arc<Vec<i64>>),
    /// A TPC-C row, its columns in insert order (see [`tpcc`]).
    Row(Arc<Vec<i64>>),
    /// A deleted TPC-C row.
    Gone,
}

/// Which table a key lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Table {
    Reg,
    List,
    /// A TPC-C table; keys pack the primary key into an `i64`.
    Tpcc(workloads::tpcc::TpccTable),
}

#[derive(Default)]
struct State {
    /// Commit counter: the timestamp of the last commit.
    clock: u64,
    data: BTreeMap<(Table, i64), Vec<Version>>,
    /// Uncommitted writes published by the aborted-read bug.
    dirty: BTreeMap<(Table, i64), Val>,
    /// Per commit (index ts - 1), the parities of the keys it touched
    /// (bit 0 even, bit 1 odd): the long-fork bug splits a reader's view
    /// only across commits that touched one parity each, so that it makes
    /// long forks and not fractured reads.
    parities: Vec<u8>,
    /// Read committed: the list keys a transaction appended to, and which
    /// transaction holds each until it ends (as a row lock from `UPDATE` to
    /// `COMMIT` in PostgreSQL or InnoDB): its appends go on the newest list
    /// and nobody else's commit can slip under them.
    locks: BTreeMap<i64, u64>,
    /// The last transaction number given out (lock owners).
    txns: u64,
    /// Connections open now.
    open: usize,
    /// The lost-write bug: the writes of closed sessions to lose once no
    /// session is open (commit timestamp, keys).
    lost: Vec<(u64, Vec<(Table, i64)>)>,
}

impl State {
    fn at(&self, k: (Table, i64), ts: u64) -> Option<&Val> {
        let vs = self.data.get(&k)?;
        vs.iter().rev().find(|v| v.ts <= ts).map(|v| &v.val)
    }

    fn newest_ts(&self, k: (Table, i64)) -> u64 {
        self.data
            .get(&k)
            .and_then(|vs| vs.last())
            .map_or(0, |v| v.ts)
    }
}

/// The store, shared by all sessions of a run. The isolation level is a
/// property of each transaction (the `Isolation` it begins with).
pub struct MemDb {
    state: Mutex<State>,
    bug: Option<Bug>,
    seed: u64,
}

impl MemDb {
    /// A fresh, empty store.
    pub fn new(bug: Option<Bug>, seed: u64) -> Arc<MemDb> {
        Arc::new(MemDb {
            state: Mutex::new(State::default()),
            bug,
            seed,
        })
    }

    /// Forgets everything (the `setup` of a run).
    pub fn clear(&self) {
        *self.state.lock().expect("memdb lock") = State::default();
    }

    /// A connection for `session`.
    pub fn connect(self: &Arc<Self>, session: u64) -> MemConn {
        self.state.lock().expect("memdb lock").open += 1;
        MemConn {
            db: Arc::clone(self),
            rng: ChaCha8Rng::seed_from_u64(self.seed ^ session.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            txn: None,
            seen: 0,
            committed: None,
            last_write: None,
        }
    }
}

/// A transaction in progress.
struct MemTxn {
    level: MemLevel,
    snapshot: u64,
    /// Second snapshot: for odd keys (long-fork bug), or for the first read (fractured-read bug).
    odd_snapshot: u64,
    writes: BTreeMap<(Table, i64), Val>,
    reads: Vec<(Table, i64)>,
    ranges: Vec<(Table, i64, i64)>,
    /// Values appended per list key, replayed on the newest list at commit
    /// (an append is one atomic update, as `SET v = v || x` is in SQL).
    appends: BTreeMap<i64, Vec<i64>>,
    dirty: bool,
    /// This transaction's number, for the locks it holds.
    id: u64,
}

/// One session's connection to memdb.
pub struct MemConn {
    db: Arc<MemDb>,
    rng: ChaCha8Rng,
    txn: Option<MemTxn>,
    /// The newest commit this session has seen: the fractured-read and
    /// long-fork bugs never read older (they break atomicity, not session
    /// guarantees; stale reads are the stale-read bug's job).
    seen: u64,
    /// The timestamps of the last commit, reported as its `dbts`.
    committed: Option<history::DbTs>,
    /// The lost-write bug: the commit timestamp and the keys of this
    /// session's last committed writing transaction, whose versions go
    /// when the session closes.
    last_write: Option<(u64, Vec<(Table, i64)>)>,
}

fn abort(msg: &str) -> DbError {
    DbError {
        class: ErrorClass::Serialization,
        code: "MEMDB_ABORT".into(),
        message: msg.into(),
    }
}

fn no_txn() -> DbError {
    DbError {
        class: ErrorClass::Statement,
        code: "MEMDB_NO_TXN".into(),
        message: "no transaction in progress".into(),
    }
}

/// Frees the list locks `t` holds.
fn release(st: &mut State, t: &MemTxn) {
    if t.level == MemLevel::ReadCommitted {
        for k in t.appends.keys() {
            if st.locks.get(k) == Some(&t.id) {
                st.locks.remove(k);
            }
        }
    }
}

/// The `dbts` of a transaction that read at its snapshot, as TiDB reports
/// them: a commit at `ts` is visible to snapshots from `ts` on, so starts
/// and commits are interleaved on one odd/even scale (start `2s+1` sees
/// commits `2c` with `c <= s`). Read committed reads at no one snapshot,
/// and the read bugs read around theirs: those get none.
fn snapshot_dbts(t: &MemTxn, bug: Option<Bug>, commit: u64) -> Option<history::DbTs> {
    let reads_elsewhere = matches!(
        bug,
        Some(Bug::FracturedRead) | Some(Bug::LongFork) | Some(Bug::AbortedRead)
    );
    (t.level != MemLevel::ReadCommitted && !reads_elsewhere).then(|| history::DbTs {
        start: 2 * t.snapshot + 1,
        commit: (!t.writes.is_empty()).then_some(2 * commit),
    })
}

impl MemConn {
    fn txn(&mut self) -> Result<&mut MemTxn, DbError> {
        self.txn.as_mut().ok_or_else(no_txn)
    }

    /// The read-your-writes-or-snapshot view of one key.
    fn get(&mut self, k: (Table, i64)) -> Result<Option<Val>, DbError> {
        let db = Arc::clone(&self.db);
        let t = self.txn.as_mut().ok_or_else(no_txn)?;
        if let Some(v) = t.writes.get(&k) {
            return Ok(Some(v.clone()));
        }
        let st = db.state.lock().expect("memdb lock");
        if db.bug == Some(Bug::AbortedRead) {
            if let Some(v) = st.dirty.get(&k) {
                t.reads.push(k);
                return Ok(Some(v.clone()));
            }
        }
        let read_only = t.writes.is_empty();
        let ts = if db.bug == Some(Bug::FracturedRead) && read_only && t.reads.is_empty() {
            t.odd_snapshot
        } else if t.level == MemLevel::ReadCommitted
            || (db.bug == Some(Bug::FracturedRead) && read_only)
        {
            st.clock
        } else if db.bug == Some(Bug::LongFork) && read_only && k.1 % 2 != 0 {
            t.odd_snapshot
        } else {
            t.snapshot
        };
        t.reads.push(k);
        self.seen = self.seen.max(ts);
        Ok(st.at(k, ts).cloned())
    }

    fn put(&mut self, k: (Table, i64), v: Val) -> Result<(), DbError> {
        let db = Arc::clone(&self.db);
        let t = self.txn.as_mut().ok_or_else(no_txn)?;
        if t.dirty {
            db.state
                .lock()
                .expect("memdb lock")
                .dirty
                .insert(k, v.clone());
        }
        t.writes.insert(k, v);
        Ok(())
    }

    fn end(&mut self) {
        if let Some(t) = self.txn.take() {
            let mut st = self.db.state.lock().expect("memdb lock");
            if t.dirty {
                for k in t.writes.keys() {
                    st.dirty.remove(k);
                }
            }
            release(&mut st, &t);
        }
    }

    /// Read committed: takes the lock of list key `k` for the transaction,
    /// waiting (yielding) while another holds it.
    async fn lock_list(&mut self, k: i64) -> Result<(), DbError> {
        let id = self.txn()?.id;
        for _ in 0..LOCK_YIELDS {
            {
                let mut st = self.db.state.lock().expect("memdb lock");
                let owner = *st.locks.entry(k).or_insert(id);
                if owner == id {
                    return Ok(());
                }
            }
            tokio::task::yield_now().await;
        }
        Err(abort(
            "lock wait timeout: another transaction holds the list",
        ))
    }
}

#[async_trait]
impl Conn for MemConn {
    async fn begin(&mut self, iso: &Isolation) -> Result<(), DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        let level = MemLevel::from_name(iso.name).ok_or_else(|| DbError {
            class: ErrorClass::Statement,
            code: "MEMDB_LEVEL".into(),
            message: format!("memdb has no isolation level {:?}", iso.name),
        })?;
        self.end();
        let (clock, id) = {
            let mut st = self.db.state.lock().expect("memdb lock");
            st.txns += 1;
            (st.clock, st.txns)
        };
        let (mut snapshot, mut odd_snapshot) = (clock, clock);
        match self.db.bug {
            Some(Bug::StaleRead) => snapshot = clock.saturating_sub(self.rng.random_range(0..4u64)),
            // The first read of a reader uses this older view.
            Some(Bug::FracturedRead) => {
                odd_snapshot = clock
                    .saturating_sub(self.rng.random_range(1..4u64))
                    .max(self.seen)
            }
            Some(Bug::LongFork) => {
                let st = self.db.state.lock().expect("memdb lock");
                let one_parity = st
                    .parities
                    .iter()
                    .rev()
                    .take(8)
                    .take_while(|&&p| p != 3)
                    .count() as u64;
                // As far back as the split stays a long fork.
                let older = clock.saturating_sub(one_parity).max(self.seen);
                if self.rng.random_bool(0.5) {
                    snapshot = older;
                } else {
                    odd_snapshot = older;
                }
            }
            _ => {}
        }
        let dirty = self.db.bug == Some(Bug::AbortedRead) && self.rng.random_bool(0.2);
        self.txn = Some(MemTxn {
            level,
            snapshot,
            odd_snapshot,
            writes: BTreeMap::new(),
            reads: Vec::new(),
            ranges: Vec::new(),
            appends: BTreeMap::new(),
            dirty,
            id,
        });
        Ok(())
    }

    async fn read(&mut self, k: i64) -> Result<Option<Row>, DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        Ok(match self.get((Table::Reg, k))? {
            Some(Val::Reg { v, tomb }) => Some((v, tomb)),
            _ => None,
        })
    }

    async fn insert(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        if let Some(Val::Reg { tomb: false, .. }) = self.get((Table::Reg, k))? {
            return Err(DbError {
                class: ErrorClass::UniqueViolation,
                code: "MEMDB_UNIQUE".into(),
                message: format!("key {k} exists"),
            });
        }
        self.put((Table::Reg, k), Val::Reg { v, tomb: false })
    }

    async fn revive(&mut self, k: i64, v: i64) -> Result<bool, DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        match self.get((Table::Reg, k))? {
            Some(Val::Reg { tomb: true, .. }) => {
                self.put((Table::Reg, k), Val::Reg { v, tomb: false })?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn upsert(&mut self, k: i64, v: i64, tomb: bool) -> Result<(), DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        self.put((Table::Reg, k), Val::Reg { v, tomb })
    }

    async fn range(&mut self, lo: i64, hi: i64) -> Result<Vec<(i64, i64)>, DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        if lo > hi {
            // An empty range, as `BETWEEN 2 AND 1` is (a `BTreeMap` range
            // would panic).
            self.txn()?;
            return Ok(Vec::new());
        }
        let keys: Vec<i64> = {
            let t = self.txn()?;
            t.ranges.push((Table::Reg, lo, hi));
            let mut ks: Vec<i64> = t
                .writes
                .range((Table::Reg, lo)..=(Table::Reg, hi))
                .map(|(k, _)| k.1)
                .collect();
            let st = self.db.state.lock().expect("memdb lock");
            ks.extend(
                st.data
                    .range((Table::Reg, lo)..=(Table::Reg, hi))
                    .map(|(k, _)| k.1),
            );
            ks.sort_unstable();
            ks.dedup();
            ks
        };
        let mut out = Vec::new();
        for k in keys {
            if let Some(Val::Reg { v, .. }) = self.get((Table::Reg, k))? {
                out.push((k, v));
            }
        }
        Ok(out)
    }

    async fn append(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        if self.txn()?.level == MemLevel::ReadCommitted {
            self.lock_list(k).await?;
            // Held from here to the end: the list read below is the
            // newest, and stays so until this transaction commits.
            self.txn()?.appends.entry(k).or_default();
        }
        let mut list = match self.get((Table::List, k))? {
            Some(Val::List(l)) => (*l).clone(),
            _ => Vec::new(),
        };
        list.push(v);
        self.txn()?.appends.entry(k).or_default().push(v);
        self.put((Table::List, k), Val::List(Arc::new(list)))
    }

    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        Ok(match self.get((Table::List, k))? {
            Some(Val::List(l)) => (*l).clone(),
            _ => Vec::new(),
        })
    }

    async fn commit(&mut self) -> Result<(), DbError> {
        // Let other sessions run between statements, as a network would.
        tokio::task::yield_now().await;
        // Two bugs hold the transaction open so that other sessions
        // reliably see what the bug does: aborted-read keeps its published
        // writes out (one yield let a 1000-transaction run miss them about
        // once in 20); lost-update keeps a read-modify-write open, so that
        // another session reads the same version and overwrites it too
        // (one yield let a 400-transaction run on 3 keys miss every lost
        // update about once in 30).
        let held = self.txn.as_ref().is_some_and(|t| {
            t.dirty
                || (self.db.bug == Some(Bug::LostUpdate)
                    && t.reads.iter().any(|k| t.writes.contains_key(k)))
        });
        if held {
            for _ in 0..BUG_YIELDS {
                tokio::task::yield_now().await;
            }
        }
        let t = self.txn.take().ok_or_else(no_txn)?;
        let db = Arc::clone(&self.db);
        let mut st = db.state.lock().expect("memdb lock");
        // Whether it commits or not, under this guard nobody sees the locks
        // go before its appends are in.
        release(&mut st, &t);
        self.committed = None;
        if t.dirty {
            for k in t.writes.keys() {
                st.dirty.remove(k);
            }
            return Err(abort(
                "aborted after publishing its writes (aborted-read bug)",
            ));
        }
        let bug = db.bug;
        if t.level != MemLevel::ReadCommitted && bug != Some(Bug::LostUpdate) {
            // First committer wins.
            for k in t.writes.keys() {
                if st.newest_ts(*k) > t.snapshot {
                    return Err(abort(
                        "write conflict: a newer version was committed since the snapshot",
                    ));
                }
            }
        }
        let read_only = t.writes.is_empty();
        // The read bugs are meant for readers: a writer that read through
        // them must not commit, or it would add anomalies of other kinds.
        if !read_only && matches!(bug, Some(Bug::FracturedRead) | Some(Bug::LongFork)) {
            let since = t.snapshot.min(t.odd_snapshot);
            if t.reads.iter().any(|k| st.newest_ts(*k) > since) {
                return Err(abort(
                    "read validation: a key read was overwritten since the snapshot",
                ));
            }
        }
        let validate = t.level == MemLevel::Serializable
            && bug != Some(Bug::WriteSkew)
            && !(read_only
                && matches!(
                    bug,
                    Some(Bug::StaleRead) | Some(Bug::FracturedRead) | Some(Bug::LongFork)
                ));
        if validate {
            let changed = |k: &(Table, i64)| st.newest_ts(*k) > t.snapshot;
            let lost_update_skip =
                |k: &(Table, i64)| bug == Some(Bug::LostUpdate) && t.writes.contains_key(k);
            if t.reads.iter().any(|k| !lost_update_skip(k) && changed(k)) {
                return Err(abort(
                    "read validation: a key read was overwritten since the snapshot",
                ));
            }
            for &(table, lo, hi) in &t.ranges {
                if st
                    .data
                    .range((table, lo)..=(table, hi))
                    .any(|(_, vs)| vs.last().is_some_and(|v| v.ts > t.snapshot))
                {
                    return Err(abort("range validation: a row in a scanned range changed"));
                }
            }
        }
        self.committed = snapshot_dbts(&t, bug, st.clock + 1);
        if !t.writes.is_empty() {
            if bug == Some(Bug::LongFork) {
                let parity = |k: &(Table, i64)| 1u8 << (k.1.rem_euclid(2));
                let touched = t
                    .reads
                    .iter()
                    .chain(t.writes.keys())
                    .fold(0, |m, k| m | parity(k));
                st.parities.push(touched);
            }
            st.clock += 1;
            let ts = st.clock;
            let mut writes = t.writes;
            for (k, vs) in &t.appends {
                let mut list = match st.at((Table::List, *k), ts) {
                    Some(Val::List(l)) => (**l).clone(),
                    _ => Vec::new(),
                };
                list.extend_from_slice(vs);
                writes.insert((Table::List, *k), Val::List(Arc::new(list)));
            }
            if bug == Some(Bug::LostWrite) {
                self.last_write = Some((ts, writes.keys().copied().collect()));
            }
            for (k, v) in writes {
                st.data.entry(k).or_default().push(Version { ts, val: v });
            }
            self.seen = ts;
        }
        Ok(())
    }

    async fn rollback(&mut self) -> Result<(), DbError> {
        self.end();
        Ok(())
    }

    async fn committed_dbts(&mut self) -> Option<history::DbTs> {
        self.committed.take()
    }

    async fn close(&mut self) {
        self.end();
    }

    fn tpcc(&mut self) -> Option<&mut dyn crate::tpcc::TpccConn> {
        Some(self)
    }
}

impl Drop for MemConn {
    /// A closed session: under the lost-write bug its last acknowledged
    /// write was never made durable, and is lost once no session is open.
    fn drop(&mut self) {
        let Ok(mut st) = self.db.state.lock() else {
            return;
        };
        st.open = st.open.saturating_sub(1);
        if let Some(w) = self.last_write.take() {
            st.lost.push(w);
        }
        if st.open > 0 {
            return;
        }
        for (ts, keys) in std::mem::take(&mut st.lost) {
            for k in keys {
                if let Some(vs) = st.data.get_mut(&k) {
                    vs.retain(|v| v.ts != ts);
                    if vs.is_empty() {
                        st.data.remove(&k);
                    }
                }
            }
        }
    }
}

/// memdb as a [`Database`]: one store per run, shared by its sessions.
pub struct MemDatabase {
    db: Arc<MemDb>,
    limits: crate::Limits,
}

impl MemDatabase {
    /// A store for one run; `--url` makes no sense here.
    pub fn new(opts: &OpenOptions) -> Result<MemDatabase, AdapterError> {
        if !opts.urls.is_empty() {
            return Err(AdapterError::Config(
                "memdb runs in-process and takes no --url".into(),
            ));
        }
        Ok(MemDatabase {
            db: MemDb::new(opts.bug, opts.seed),
            limits: opts.limits(),
        })
    }
}

#[async_trait]
impl Database for MemDatabase {
    fn name(&self) -> &'static str {
        "memdb"
    }

    fn location(&self) -> String {
        match self.db.bug {
            Some(b) => format!("in-process (bug: {})", b.name()),
            None => "in-process".into(),
        }
    }

    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        let l = match explicit {
            None => MemLevel::promising(level),
            Some(name) => MemLevel::from_name(&normalize_isolation(name)).ok_or_else(|| {
                AdapterError::Isolation(format!(
                    "memdb has no isolation level {name:?} (it offers read-committed, snapshot, serializable)"
                ))
            })?,
        };
        Ok(Isolation {
            name: l.name(),
            begin: "BEGIN",
        })
    }

    async fn setup(&self, _schema: &Schema) -> Result<(), AdapterError> {
        self.db.clear();
        Ok(())
    }

    async fn connect(&self, client: u64) -> Result<Box<dyn Session>, AdapterError> {
        Ok(Box::new(SqlSession::new(
            self.db.connect(client),
            self.limits.clone(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(name: &'static str) -> Isolation {
        Isolation {
            name,
            begin: "BEGIN",
        }
    }

    async fn txn(
        c: &mut MemConn,
        level: &'static str,
        f: impl AsyncFnOnce(&mut MemConn),
    ) -> Result<(), DbError> {
        c.begin(&iso(level)).await?;
        f(c).await;
        c.commit().await
    }

    #[tokio::test]
    async fn snapshot_isolation_reads_a_snapshot_and_first_committer_wins() {
        let db = MemDb::new(None, 1);
        let (mut a, mut b) = (db.connect(1), db.connect(2));
        a.begin(&iso("snapshot")).await.unwrap();
        b.begin(&iso("snapshot")).await.unwrap();
        assert_eq!(a.read(1).await.unwrap(), None);
        a.upsert(1, 10, false).await.unwrap();
        b.upsert(1, 20, false).await.unwrap();
        a.commit().await.unwrap();
        let e = b.commit().await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Serialization);
        txn(&mut b, "snapshot", async |c| {
            assert_eq!(c.read(1).await.unwrap(), Some((10, false)))
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn serializable_rejects_write_skew_and_the_bug_allows_it() {
        for (bug, both_commit) in [(None, false), (Some(Bug::WriteSkew), true)] {
            let db = MemDb::new(bug, 1);
            let (mut a, mut b) = (db.connect(1), db.connect(2));
            a.begin(&iso("serializable")).await.unwrap();
            b.begin(&iso("serializable")).await.unwrap();
            a.read(1).await.unwrap();
            a.read(2).await.unwrap();
            b.read(1).await.unwrap();
            b.read(2).await.unwrap();
            a.upsert(1, 10, false).await.unwrap();
            b.upsert(2, 20, false).await.unwrap();
            a.commit().await.unwrap();
            assert_eq!(b.commit().await.is_ok(), both_commit, "{bug:?}");
        }
    }

    #[tokio::test]
    async fn an_inverted_range_is_empty() {
        let db = MemDb::new(None, 1);
        let mut a = db.connect(1);
        txn(&mut a, "serializable", async |c| {
            c.upsert(1, 10, false).await.unwrap();
            c.upsert(2, 20, false).await.unwrap();
            assert_eq!(c.range(2, 1).await.unwrap(), vec![]);
            assert_eq!(c.range(1, 2).await.unwrap(), vec![(1, 10), (2, 20)]);
        })
        .await
        .unwrap();
        txn(&mut a, "serializable", async |c| {
            assert_eq!(c.range(2, 1).await.unwrap(), vec![]);
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn the_lost_update_bug_lets_both_writers_commit() {
        let db = MemDb::new(Some(Bug::LostUpdate), 1);
        let (mut a, mut b) = (db.connect(1), db.connect(2));
        a.begin(&iso("snapshot")).await.unwrap();
        b.begin(&iso("snapshot")).await.unwrap();
        a.upsert(1, 10, false).await.unwrap();
        b.upsert(1, 20, false).await.unwrap();
        a.commit().await.unwrap();
        b.commit().await.unwrap();
    }

    #[tokio::test]
    async fn the_lost_write_bug_drops_the_last_write_of_a_closed_session() {
        for (bug, after) in [
            (None, Some((20, false))),
            (Some(Bug::LostWrite), Some((10, false))),
        ] {
            let db = MemDb::new(bug, 1);
            let (mut a, mut b) = (db.connect(1), db.connect(2));
            for v in [10, 20] {
                txn(&mut a, "serializable", async |c| {
                    c.upsert(1, v, false).await.unwrap()
                })
                .await
                .unwrap();
            }
            txn(&mut a, "serializable", async |c| {
                assert_eq!(c.read(1).await.unwrap(), Some((20, false)))
            })
            .await
            .unwrap();
            a.close().await;
            drop(a);
            // While another session is open, nothing is lost.
            txn(&mut b, "serializable", async |c| {
                assert_eq!(c.read(1).await.unwrap(), Some((20, false)))
            })
            .await
            .unwrap();
            drop(b);
            let mut c = db.connect(3);
            txn(&mut c, "serializable", async |c| {
                assert_eq!(c.read(1).await.unwrap(), after, "{bug:?}")
            })
            .await
            .unwrap();
        }
    }

    #[test]
    fn levels_and_bugs_have_names() {
        for (n, l) in MemLevel::NAMES {
            assert_eq!(MemLevel::from_name(n), Some(l));
        }
        for b in Bug::ALL {
            assert_eq!(Bug::parse(b.name()), Some(b));
        }
        let d = MemDatabase::new(&OpenOptions::new(vec![], Default::default())).unwrap();
        assert_eq!(d.isolation(Level::Si, None).unwrap().name, "snapshot");
        assert_eq!(d.isolation(Level::Sser, None).unwrap().name, "serializable");
        assert!(d.isolation(Level::Si, Some("bogus")).is_err());
    }
}
