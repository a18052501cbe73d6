//! What the index records about each read, write and non-cyclic anomaly,
//! and where each value was written: the small types the index and its
//! passes ([`writers`](super::writers), [`lists`](super::lists)) share.

use history::Value;

use crate::anomaly::AnomalyKind;

/// The writer id of the initial version (every key starts absent).
pub const INIT: u32 = u32::MAX;

/// Where a value was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteLoc {
    pub txn: u32,
    pub op: u32,
    /// False when the same transaction wrote the key again later: the value
    /// was never installed, and reading it is an intermediate read (G1b).
    pub last: bool,
    /// True when the writer failed (aborted): reading it is G1a. Kept here
    /// so a read needs no second look-up, into the transaction.
    pub failed: bool,
}

/// One external read: a read of a version installed by another transaction
/// (or the initial version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    pub key: u32,
    /// The writer of the version read, or [`INIT`].
    pub writer: u32,
    /// The op (index in the transaction) that read it.
    pub op: u32,
    /// The value read (`None`: absent).
    pub value: Option<Value>,
    /// True when the read came from a range (predicate) read.
    pub predicate: bool,
}

/// One installed write: the last write of a key by a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub key: u32,
    pub value: Value,
    pub op: u32,
}

/// A non-cyclic anomaly, located in the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: AnomalyKind,
    /// The transaction that shows it (the reader).
    pub txn: u32,
    /// The op in that transaction.
    pub op: u32,
    /// The other transaction involved (the writer), if any.
    pub other: Option<u32>,
    pub key: u32,
}
