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

mod whole;

use std::io::Read;
use std::path::Path;

use crate::blocks::{self, Chunk};
use crate::error::ParseError;
use crate::formats::util::{self, snippet};
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

/// A separator line.
#[derive(Clone, Copy)]
enum End {
    /// `-----`: the end of a transaction.
    Txn,
    /// `=====`: the end of a session.
    Session,
}

/// How sessions are numbered: from 0, in file order, a session separator
/// after at least one transaction ending the session (empty sessions are
/// skipped, as in AWDIT).
#[derive(Clone, Copy, Default)]
struct Sessions {
    /// The current session's number.
    number: u64,
    /// A transaction of the current session was closed.
    used: bool,
}

impl Sessions {
    /// Separator `end`, which `closed` a transaction or not; true when it
    /// ended a session.
    fn end(&mut self, end: End, closed: bool) -> bool {
        self.used |= closed;
        let ended = matches!(end, End::Session) && self.used;
        if ended {
            self.number += 1;
            self.used = false;
        }
        ended
    }
}

/// One line's meaning.
enum Line {
    End(End),
    Op(Op),
}

/// What a block's lines say, with each run of op lines gathered by the
/// worker that parsed it into the ops of (part of) one transaction: the
/// reading thread only strings the transactions together.
enum Piece {
    End(End),
    /// Consecutive op lines, exactly as long as they are.
    Ops(Vec<Op>),
}

/// `r k v` / `w k v` with single spaces and plain integers, parsed without
/// building strings; `None` sends the line to [`parse_line`].
fn fast_line(b: &[u8]) -> Option<Line> {
    let write = match b.first()? {
        b'r' | b'R' => false,
        b'w' | b'W' => true,
        _ => return None,
    };
    if b.get(1) != Some(&b' ') {
        return None;
    }
    let rest = &b[2..];
    let sp = memchr::memchr(b' ', rest)?;
    let key = Key::Int(util::int(&rest[..sp])?);
    let value = util::int(&rest[sp + 1..])?;
    Some(Line::Op(if write {
        Op::Write { key, value }
    } else {
        Op::Read {
            key,
            value: Some(value),
        }
    }))
}

/// Any line, with the error it gets; `None` for a blank one.
fn parse_line(s: &str) -> Option<Result<Line, String>> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if is_rule(s, b'-') {
        return Some(Ok(Line::End(End::Txn)));
    }
    if is_rule(s, b'=') {
        return Some(Ok(Line::End(End::Session)));
    }
    let mut parts = s.split_whitespace();
    let op = parts.next().unwrap_or("");
    let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
        return Some(Err(format!(
            "expected `r key value`, `w key value`, `-----` or `=====`, found {}",
            snippet(s)
        )));
    };
    let num = |f: &str, what: &str| {
        f.parse::<i64>()
            .map_err(|_| format!("the {what} {} is not a 64-bit integer", snippet(f)))
    };
    let op = (|| {
        let key = Key::Int(num(k, "key")?);
        let value = num(v, "value")?;
        Ok(match op {
            "r" | "R" => Op::Read {
                key,
                value: Some(value),
            },
            "w" | "W" => Op::Write { key, value },
            other => {
                return Err(format!(
                    "unknown operation {} (expected r or w)",
                    snippet(other)
                ))
            }
        })
    })();
    Some(op.map(Line::Op))
}

/// The lines of one block, parsed on a thread of its own; stops at the
/// first error, with its line.
fn parse_chunk(chunk: Chunk<'_>) -> (Vec<Piece>, Option<(usize, String)>) {
    let mut out = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let put = |out: &mut Vec<Piece>, ops: &mut Vec<Op>, l: Line| match l {
        Line::Op(op) => ops.push(op),
        Line::End(end) => {
            if !ops.is_empty() {
                out.push(Piece::Ops(ops.as_slice().to_vec()));
                ops.clear();
            }
            out.push(Piece::End(end));
        }
    };
    let mut failed = None;
    for (no, bytes, _) in chunk.lines() {
        if let Some(l) = fast_line(bytes) {
            put(&mut out, &mut ops, l);
            continue;
        }
        let s = match chunk.text(bytes) {
            Ok(s) => s,
            Err(msg) => {
                failed = Some((no, msg));
                break;
            }
        };
        match parse_line(s) {
            None => {}
            Some(Ok(l)) => put(&mut out, &mut ops, l),
            Some(Err(m)) => {
                failed = Some((no, m));
                break;
            }
        }
    }
    if !ops.is_empty() {
        out.push(Piece::Ops(ops));
    }
    (out, failed)
}

/// Parses an AWDIT test history.
pub fn parse(input: &str, path: Option<&Path>) -> Result<History, ParseError> {
    read(input.as_bytes(), path)
}

/// Reads an AWDIT test history from any input, streaming: blocks of lines
/// are parsed on both cores, and only the history is kept.
pub fn read<R: Read>(input: R, path: Option<&Path>) -> Result<History, ParseError> {
    read_sized(input, path, 0)
}

/// About how many bytes a transaction takes in AWDIT's generated
/// histories (34 at 2^16 events), rounded down so that one reservation
/// from the file's size usually holds them all.
const BYTES_PER_TXN: u64 = 24;

/// [`read`], with room for the transactions of `bytes` of input made at
/// once: grown by doubling, the transactions' vector was copied as it went
/// (on AWDIT's causal history of 2^16 events, an rc check took 4,332–4,376
/// page faults so, 4,194–4,258 with the room made at once).
fn read_sized<R: Read>(input: R, path: Option<&Path>, bytes: u64) -> Result<History, ParseError> {
    let mut txns: Vec<Txn> = Vec::with_capacity((bytes / BYTES_PER_TXN) as usize);
    let mut sessions = Sessions::default();
    let mut cur: Vec<Op> = Vec::new();
    let mut failed = None;
    blocks::for_each_block(input, &|_| {}, parse_chunk, |(pieces, err)| {
        for p in pieces {
            match p {
                // Ops run on across a block's end only at its start.
                Piece::Ops(ops) if cur.is_empty() => cur = ops,
                Piece::Ops(ops) => cur.extend(ops),
                Piece::End(end) => {
                    let closed = close(&mut cur, sessions.number, &mut txns);
                    sessions.end(end, closed);
                }
            }
        }
        failed = err;
        failed.is_none()
    })
    .map_err(|e| ParseError::io(path, e))?;
    if let Some((line, msg)) = failed {
        return Err(ParseError::at(path, line, msg));
    }
    close(&mut cur, sessions.number, &mut txns);
    Ok(History::from_txns(txns))
}

/// Files of these sizes are read whole and parsed in pieces ([`whole`]):
/// a smaller one is a block or two of the streaming reader, and a larger
/// one is read while it is parsed rather than held whole beside the
/// history.
const WHOLE: std::ops::RangeInclusive<u64> = (256 << 10)..=(64 << 20);

/// Reads an AWDIT test history file.
pub fn read_file(path: &Path) -> Result<History, ParseError> {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    if WHOLE.contains(&bytes) && blocks::two_cores() {
        let mut data = Vec::with_capacity(bytes as usize);
        super::util::open(path)?
            .read_to_end(&mut data)
            .map_err(|e| ParseError::io(Some(path), e))?;
        if let Some(h) = whole::parse(&data) {
            return Ok(h);
        }
        return read_sized(data.as_slice(), Some(path), bytes);
    }
    super::util::read_path(path, |f, p| read_sized(f, p, bytes))
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

    /// A file of several blocks (their ends fall inside transactions)
    /// reads as the transactions written, in order.
    #[test]
    fn transactions_run_on_across_blocks() {
        let mut text = String::new();
        let mut want = Vec::new();
        for s in 0..40u64 {
            for t in 0..400i64 {
                let ops: Vec<Op> = (0..1 + (t % 5))
                    .map(|i| Op::Write {
                        key: Key::Int(i),
                        value: s as i64 * 10_000 + t,
                    })
                    .collect();
                for op in &ops {
                    if let Op::Write {
                        key: Key::Int(k),
                        value,
                    } = op
                    {
                        text.push_str(&format!("w {k} {value}\n"));
                    }
                }
                text.push_str("-----\n");
                want.push((s, ops));
            }
            text.push_str("=====\n");
        }
        assert!(
            text.len() > 3 * (128 << 10),
            "{} bytes: one block",
            text.len()
        );
        let h = parse(&text, None).unwrap();
        // A file is read with room made from its size: the same history.
        let file = std::env::temp_dir().join(format!("awdit-blocks-{}.txt", std::process::id()));
        std::fs::write(&file, &text).unwrap();
        let from_file = read_file(&file);
        std::fs::remove_file(&file).unwrap();
        assert!(from_file.unwrap() == h, "the file reads otherwise");
        let got: Vec<(u64, Vec<Op>)> = h.txns.into_iter().map(|t| (t.session, t.ops)).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the transactions differ");
    }

    #[test]
    fn the_fast_path_and_the_general_parser_agree() {
        let plain = "w 0 0\nw 1 0\n-----\nr 0 0\n=====\nw 0 1\n";
        let spaced = "w  0 0\n W 1\t0\n ----- \nR 0 0\r\n=====\nw 0 +1\n";
        assert_eq!(parse(plain, None).unwrap(), parse(spaced, None).unwrap());
    }

    /// A file read whole names a bad line as the streaming reader does.
    #[test]
    fn a_file_read_whole_names_its_bad_line() {
        let mut text = String::new();
        for s in 0..6000 {
            text.push_str(&format!("w {s} 1\nr {s} 1\n-----\nw {s} 2\n=====\n"));
        }
        text.push_str("w 1 x\n");
        let bad_line = text.lines().count();
        for s in 0..6000 {
            text.push_str(&format!("w {s} 3\n=====\n"));
        }
        assert!(WHOLE.contains(&(text.len() as u64)), "{} bytes", text.len());
        let file = std::env::temp_dir().join(format!("awdit-whole-{}.txt", std::process::id()));
        std::fs::write(&file, &text).unwrap();
        let e = read_file(&file).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(e.line, Some(bad_line), "{e}");
        assert!(e.to_string().contains("value"), "{e}");
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
