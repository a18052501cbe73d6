//! Builders for hand-written histories: ops on integer or string keys,
//! committed transactions, and histories from JSONL lines.

use history::{read_jsonl_str, DbTs, History, Key, Op, Status, Txn, Value};

/// A read of `k` that saw `v` (`None`: absent).
pub fn r(k: impl Into<Key>, v: Option<Value>) -> Op {
    Op::Read {
        key: k.into(),
        value: v,
    }
}

/// A write of `v` to `k`.
pub fn w(k: impl Into<Key>, v: Value) -> Op {
    Op::Write {
        key: k.into(),
        value: v,
    }
}

/// An append of `v` to the list `k`.
pub fn a(k: impl Into<Key>, v: Value) -> Op {
    Op::Append {
        key: k.into(),
        value: v,
    }
}

/// A read of the list `k` that saw `vs`.
pub fn rl(k: impl Into<Key>, vs: &[Value]) -> Op {
    Op::ReadList {
        key: k.into(),
        values: Some(vs.to_vec()),
    }
}

/// A range read of the integer keys `lo..=hi` that saw `rows`.
pub fn rq(lo: i64, hi: i64, rows: &[(i64, Value)]) -> Op {
    Op::RangeRead {
        lo: Key::Int(lo),
        hi: Key::Int(hi),
        rows: Box::new(rows.iter().map(|&(k, v)| (Key::Int(k), v)).collect()),
    }
}

/// A committed transaction.
pub fn t(id: u64, session: u64, ops: Vec<Op>) -> Txn {
    Txn::new(id, session, Status::Ok, ops)
}

/// `x` with client times.
pub fn timed(mut x: Txn, start: u64, end: u64) -> Txn {
    x.start = Some(start);
    x.end = Some(end);
    x
}

/// `x` with database timestamps.
pub fn stamped(mut x: Txn, start: u64, commit: Option<u64>) -> Txn {
    x.dbts = Some(DbTs { start, commit });
    x
}

/// A history of committed transactions, each `(id, session, ops)`.
pub fn committed(txns: Vec<(u64, u64, Vec<Op>)>) -> History {
    History::from_txns(txns.into_iter().map(|(id, s, ops)| t(id, s, ops)).collect())
}

/// A history from JSONL text.
pub fn jsonl(text: &str) -> History {
    read_jsonl_str(text).unwrap()
}

/// A history from the rest of each transaction's JSONL object (status and
/// ops): transaction `i` gets id `i` and session `i`.
pub fn jsonl_txns(lines: &[&str]) -> History {
    let text: String = lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{{\"id\":{i},\"session\":{i},{l}}}\n"))
        .collect();
    jsonl(&text)
}
