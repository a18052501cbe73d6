//! Whether a transaction has the shape of a mini-transaction (one or two
//! reads, or any number without writes; at most two writes, each after a
//! read of its key). Found for every transaction while the index is built;
//! the reason a history is not made of them is told by
//! [`not_mini`](crate::decide::mini::not_mini).

use history::Op;

/// Why a transaction is not a mini-transaction.
pub(crate) enum Shape<'a> {
    /// An `info` transaction that writes.
    Blind,
    WriteUnread(&'a history::Key),
    Op(&'a Op),
    Reads(usize),
    Writes(usize),
}

/// Why `txn` is not a mini-transaction, or `None` when it is one (should
/// it commit). Found for every transaction while the index is built, where
/// its ops are in the cache anyway.
pub(crate) fn shape(txn: &history::Txn) -> Option<Shape<'_>> {
    if txn.status == history::Status::Info && !txn.is_read_only() {
        return Some(Shape::Blind);
    }
    let (mut reads, mut writes) = (0, 0);
    for (i, op) in txn.ops.iter().enumerate() {
        match op {
            Op::Read { .. } => reads += 1,
            Op::Write { key, .. } => {
                writes += 1;
                let read_first = txn.ops[..i]
                    .iter()
                    .any(|o| matches!(o, Op::Read { key: k, .. } if k == key));
                if !read_first {
                    return Some(Shape::WriteUnread(key));
                }
            }
            other => return Some(Shape::Op(other)),
        }
    }
    // A read-only transaction may read any number of keys (a run's final
    // reads read them all): its reads order no writer, so the version
    // order stays forced, and the graph takes any reads.
    if writes > 0 && !(1..=2).contains(&reads) {
        return Some(Shape::Reads(reads));
    }
    if writes > 2 {
        return Some(Shape::Writes(writes));
    }
    None
}
