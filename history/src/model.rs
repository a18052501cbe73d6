//! The history model: what a client saw of each transaction, and nothing the
//! database did not show it.
//!
//! A [`History`] is a list of [`Txn`]s. Each transaction belongs to one
//! session (one client connection), has an outcome ([`Status`]), the
//! harness's monotonic start/end times, and a list of micro-operations
//! ([`Op`]). Written values are unique per key, so every read names exactly
//! one writer: that is what makes black-box checking possible.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A written value. Unique per key across a history (a *unique write id*).
pub type Value = i64;

/// A key: an integer or a string, as a database row's primary key would be.
///
/// Integers sort before strings; integers numerically, strings bytewise, so
/// that range reads (`lo..=hi`) have one meaning in every tool.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// An integer key, e.g. `7`.
    Int(i64),
    /// A string key, e.g. `"x7"` or `"stock:1:42"`; shared, because a key is
    /// repeated in many ops.
    Str(Arc<str>),
}

impl Key {
    /// A string key.
    pub fn str(s: &str) -> Key {
        Key::Str(Arc::from(s))
    }
}

impl From<i64> for Key {
    fn from(v: i64) -> Key {
        Key::Int(v)
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key::str(s)
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        match (self, other) {
            (Key::Int(a), Key::Int(b)) => a.cmp(b),
            (Key::Int(_), Key::Str(_)) => Ordering::Less,
            (Key::Str(_), Key::Int(_)) => Ordering::Greater,
            (Key::Str(a), Key::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        }
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(v) => write!(f, "{v}"),
            Key::Str(s) => f.write_str(s),
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(v) => write!(f, "{v}"),
            Key::Str(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Key::Int(v) => s.serialize_i64(*v),
            Key::Str(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key (integer or string)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Key, E> {
                Ok(Key::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Key, E> {
                i64::try_from(v)
                    .map(Key::Int)
                    .map_err(|_| E::custom("integer key out of range"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(Key::str(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// What a client learned of a transaction's fate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Committed: COMMIT returned success.
    Ok,
    /// Definitely not committed (rolled back, or refused before COMMIT).
    Fail,
    /// Unknown: the connection broke or timed out around COMMIT. Committed
    /// if anyone observes its writes; may be treated as aborted otherwise.
    Info,
}

impl Status {
    /// The word used in the history format.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Fail => "fail",
            Status::Info => "info",
        }
    }
}

/// One micro-operation of a transaction, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read `key`; `None` means the key was absent (never written, or read
    /// before any insert).
    Read { key: Key, value: Option<Value> },
    /// Write (update or upsert) `value` to `key`.
    Write { key: Key, value: Value },
    /// Insert `key` with `value`; only done when the key was absent.
    Insert { key: Key, value: Value },
    /// Delete `key`: installs a tombstone version whose unique id is `value`.
    Delete { key: Key, value: Value },
    /// Range read of `lo..=hi`: the rows found (tombstones included). A key
    /// in range that is not listed was read as absent.
    RangeRead {
        lo: Key,
        hi: Key,
        /// Boxed, so that an op is 48 bytes, not 56: range reads are rare,
        /// and a million-transaction history holds millions of ops.
        #[allow(clippy::box_collection)]
        rows: Box<Vec<(Key, Value)>>,
    },
    /// Append `value` to the list at `key` (Elle list-append).
    Append { key: Key, value: Value },
    /// Read the whole list at `key`; `None` when the read returned nothing
    /// useful (an aborted or unknown read in an imported history).
    ReadList {
        key: Key,
        values: Option<Vec<Value>>,
    },
}

impl Op {
    /// A read of the integer key `k` that saw `v` (`None`: absent); short
    /// constructors keep hand-written histories in tests readable.
    pub fn read(k: i64, v: Option<i64>) -> Op {
        Op::Read {
            key: Key::Int(k),
            value: v,
        }
    }

    /// A write of `v` to the integer key `k`.
    pub fn write(k: i64, v: i64) -> Op {
        Op::Write {
            key: Key::Int(k),
            value: v,
        }
    }

    /// An append of `v` to the list at the integer key `k`.
    pub fn append(k: i64, v: i64) -> Op {
        Op::Append {
            key: Key::Int(k),
            value: v,
        }
    }

    /// A read of the whole list at the integer key `k`.
    pub fn read_list(k: i64, vs: &[i64]) -> Op {
        Op::ReadList {
            key: Key::Int(k),
            values: Some(vs.to_vec()),
        }
    }

    /// The key an op touches (`None` for range reads, which touch many).
    pub fn key(&self) -> Option<&Key> {
        match self {
            Op::Read { key, .. }
            | Op::Write { key, .. }
            | Op::Insert { key, .. }
            | Op::Delete { key, .. }
            | Op::Append { key, .. }
            | Op::ReadList { key, .. } => Some(key),
            Op::RangeRead { .. } => None,
        }
    }

    /// The value a write-like op installs (write, insert, delete, append).
    pub fn written(&self) -> Option<(&Key, Value)> {
        match self {
            Op::Write { key, value }
            | Op::Insert { key, value }
            | Op::Delete { key, value }
            | Op::Append { key, value } => Some((key, *value)),
            _ => None,
        }
    }

    /// True for ops that only observe.
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            Op::Read { .. } | Op::RangeRead { .. } | Op::ReadList { .. }
        )
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn opt(v: &Option<Value>) -> String {
            v.map_or_else(|| "null".to_string(), |v| v.to_string())
        }
        match self {
            Op::Read { key, value } => write!(f, "r({key})={}", opt(value)),
            Op::Write { key, value } => write!(f, "w({key},{value})"),
            Op::Insert { key, value } => write!(f, "i({key},{value})"),
            Op::Delete { key, value } => write!(f, "d({key},{value})"),
            Op::Append { key, value } => write!(f, "a({key},{value})"),
            Op::ReadList { key, values } => match values {
                None => write!(f, "r({key})=?"),
                Some(vs) => {
                    write!(f, "r({key})=[")?;
                    for (i, v) in vs.iter().enumerate() {
                        if i > 0 {
                            f.write_str(",")?;
                        }
                        write!(f, "{v}")?;
                    }
                    f.write_str("]")
                }
            },
            Op::RangeRead { lo, hi, rows } => {
                write!(f, "rq({lo}..={hi})={{")?;
                for (i, (k, v)) in rows.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k}:{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Timestamps the database itself reported (e.g. TiDB `start_ts`/`commit_ts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbTs {
    /// The snapshot timestamp.
    pub start: u64,
    /// The commit timestamp (`None` for read-only or unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<u64>,
}

/// One transaction, as recorded by a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txn {
    /// Unique within the history; kept from the source so reports match it.
    pub id: u64,
    /// The client connection; a session's transactions run one after another
    /// in the order they appear in the history.
    pub session: u64,
    /// The outcome the client saw.
    pub status: Status,
    /// Nanoseconds on the harness's monotonic clock, just before BEGIN.
    pub start: Option<u64>,
    /// Nanoseconds just after the COMMIT result; `None` when unknown.
    pub end: Option<u64>,
    /// The micro-operations, in program order.
    pub ops: Vec<Op>,
    /// The error that ended the transaction, for `fail` and `info`. (The
    /// text fields are `Box<str>`, not `String`: never grown, and 8 bytes
    /// fewer each in a history of millions.)
    pub error: Option<Box<str>>,
    /// Database timestamps, for white-box checking.
    pub dbts: Option<DbTs>,
    /// The transaction type (e.g. `new-order`), for per-type abort rates.
    pub kind: Option<Box<str>>,
    /// The node of a cluster that served the transaction (`galera-2`), when
    /// the run spread its clients over several nodes.
    pub node: Option<Box<str>>,
}

// What a million-transaction history costs per transaction and per op
// before any index: a field added here is paid for a million times.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Txn>() == 152 && std::mem::size_of::<Op>() == 48);

impl Txn {
    /// A committed transaction with no timing, for tests and importers.
    pub fn new(id: u64, session: u64, status: Status, ops: Vec<Op>) -> Txn {
        Txn {
            id,
            session,
            status,
            start: None,
            end: None,
            ops,
            error: None,
            dbts: None,
            kind: None,
            node: None,
        }
    }

    /// True when no op writes.
    pub fn is_read_only(&self) -> bool {
        self.ops.iter().all(Op::is_read)
    }

    /// The distinct keys it writes (write, insert, delete, append), sorted:
    /// what decides whether two transactions conflict.
    pub fn written_keys(&self) -> Vec<Key> {
        let mut ks: Vec<Key> = self
            .ops
            .iter()
            .filter_map(|o| o.written().map(|(k, _)| k.clone()))
            .collect();
        ks.sort();
        ks.dedup();
        ks
    }
}

/// The first line of a recorded history: what was run, and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version; this crate writes and reads version 1.
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// The server's own account of itself (`VERSION()`, TiDB's
    /// `tidb_version()`), so a finding names exactly what was tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Session settings beyond the isolation (`--session-var`), as
    /// `name=value`: they change what a verdict means.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<String>,
}

/// A fault the nemesis injected, with its time window on the same clock as
/// transactions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// What was done: `partition`, `reset`, `pause`, `kill`, `restart`, ...
    pub kind: String,
    /// What it was done to: an endpoint, a node, a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub start: u64,
    #[serde(default)]
    pub end: Option<u64>,
    /// False when the fault's command failed; the run went on without it.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub applied: bool,
    /// The command's error, or other detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The `kind` of the read-only transactions `harness run` adds to read its
/// keys back: the final reads after the workload, and the closing read of
/// a list no client will touch again. A list-append check as it goes lets
/// go of a list once such a read has read it.
pub const FINAL_READ: &str = "final-read";

/// The `kind` of a read `harness run --stream` makes of a list some client
/// has just left (other clients may still use it): it places that
/// client's appends, and is checked like any other transaction.
pub const PASSING_READ: &str = "passing-read";

/// The `kind` of a fault line that records a change of leader the run saw
/// (from the start of the leaderless gap to the new leader): an
/// observation for the timeline, not a fault anybody injected.
pub const LEADER_CHANGE: &str = "leader-change";

impl Fault {
    /// True for lines that record what the run saw rather than a fault it
    /// injected: they count toward no fault statistics.
    pub fn is_observation(&self) -> bool {
        self.kind == LEADER_CHANGE
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The last line of a complete history; its absence means the run was cut
/// short (the harness crashed or was killed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// How many transaction lines the recorder wrote.
    pub txns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
}

/// A whole history in memory, as the checkers take it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    pub header: Option<Header>,
    pub txns: Vec<Txn>,
    pub faults: Vec<Fault>,
    pub end: Option<End>,
}

impl History {
    /// A history of just these transactions.
    pub fn from_txns(txns: Vec<Txn>) -> History {
        History {
            txns,
            ..History::default()
        }
    }

    /// True when any op is a list append or list read (Elle list-append).
    pub fn has_lists(&self) -> bool {
        self.txns.iter().any(|t| {
            t.ops
                .iter()
                .any(|o| matches!(o, Op::Append { .. } | Op::ReadList { .. }))
        })
    }

    /// Counts of transactions by status: (ok, fail, info).
    pub fn status_counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for t in &self.txns {
            match t.status {
                Status::Ok => c.0 += 1,
                Status::Fail => c.1 += 1,
                Status::Info => c.2 += 1,
            }
        }
        c
    }
}
