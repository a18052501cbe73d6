//! The test-history format of AWDIT: `w k v` / `r k v` lines, a line of
//! dashes between the transactions of a session, a line of `=` between
//! sessions.
//!
//! ```text
//! w 0 0
//! w 1 0
//! =====
//! w 0 1
//! -----
//! r 0 1
//! r 1 0
//! ```
//!
//! Keys and values are integers. There are **no** implicit initial values:
//! every value read must be written by some transaction, so `r 0 0` reads
//! the write `w 0 0` (a read of a value nobody wrote is a thin-air read for
//! the checker, not a read of the initial state). All transactions are
//! committed. Sessions and transactions are numbered 0, 1, 2, ... in file
//! order; as in AWDIT, empty transactions and sessions (two separators in a
//! row, a separator at the start or the end) are skipped.

use std::path::Path;

use crate::error::ParseError;
use crate::formats::util::{read_bytes, snippet, utf8};
use crate::model::{History, Key, Op, Status, Txn};

/// Ends the current transaction, if it has ops; true when it had.
fn close(cur: &mut Vec<Op>, session: u64, txns: &mut Vec<Txn>) -> bool {
    if cur.is_empty() {
        return false;
    }
    let id = txns.len() as u64;
    txns.push(Txn::new(id, session, Status::Ok, std::mem::take(cur)));
    true
}

fn is_rule(s: &str, c: u8) -> bool {
    !s.is_empty() && s.bytes().all(|b| b == c)
}

/// Parses an AWDIT test history.
pub fn parse(input: &str, path: Option<&Path>) -> Result<History, ParseError> {
    let mut txns: Vec<Txn> = Vec::new();
    let mut session = 0u64;
    let mut session_used = false;
    let mut cur: Vec<Op> = Vec::new();
    for (n, raw) in input.lines().enumerate() {
        let s = raw.trim();
        if s.is_empty() {
            continue;
        }
        if is_rule(s, b'-') {
            session_used |= close(&mut cur, session, &mut txns);
            continue;
        }
        if is_rule(s, b'=') {
            session_used |= close(&mut cur, session, &mut txns);
            if session_used {
                session += 1;
                session_used = false;
            }
            continue;
        }
        let err = |m: String| ParseError::at(path, n + 1, m);
        let mut parts = s.split_whitespace();
        let op = parts.next().unwrap_or("");
        let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(err(format!(
                "expected `r key value`, `w key value`, `-----` or `=====`, found {}",
                snippet(s)
            )));
        };
        let num = |f: &str, what: &str| {
            f.parse::<i64>()
                .map_err(|_| err(format!("the {what} {} is not a 64-bit integer", snippet(f))))
        };
        let key = Key::Int(num(k, "key")?);
        let value = num(v, "value")?;
        cur.push(match op {
            "r" | "R" => Op::Read {
                key,
                value: Some(value),
            },
            "w" | "W" => Op::Write { key, value },
            other => {
                return Err(err(format!(
                    "unknown operation {} (expected r or w)",
                    snippet(other)
                )))
            }
        });
    }
    close(&mut cur, session, &mut txns);
    Ok(History::from_txns(txns))
}

/// Reads an AWDIT test history file.
pub fn read_file(path: &Path) -> Result<History, ParseError> {
    let bytes = read_bytes(path)?;
    parse(utf8(&bytes, Some(path))?, Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_and_transactions() {
        let h = parse(
            "w 0 0\nw 1 0\n=====\nw 0 1\n-----\nr 0 1\nr 1 0\n=====\n=====\nw 1 1\n-----\n",
            None,
        )
        .unwrap();
        let shape: Vec<(u64, u64, usize)> = h
            .txns
            .iter()
            .map(|t| (t.id, t.session, t.ops.len()))
            .collect();
        assert_eq!(shape, vec![(0, 0, 2), (1, 1, 1), (2, 1, 2), (3, 2, 1)]);
        assert_eq!(
            h.txns[2].ops[1],
            Op::Read {
                key: Key::Int(1),
                value: Some(0)
            }
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("w 0 0\n-----\nx 1 1", 3, "unknown operation"),
            ("w 0 0\nr 1", 2, "expected `r key value`"),
            ("w 0 0\nr 1 2 3", 2, "expected"),
            ("\n\nw a 0", 3, "key \"a\""),
            ("w 0 0.5", 1, "value"),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }
}
