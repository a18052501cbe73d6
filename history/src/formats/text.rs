//! The text format of PolySI, Plume and IsoVista: one operation per line,
//! `op(key,value,session,txn)`, all integers.
//!
//! ```text
//! w(1,0,0,0)      <- optional explicit init transaction: session 0, txn 0,
//! w(2,0,0,0)         writing 0 to keys before anything else
//! w(1,1,1,1)      <- session 1, txn 1 writes 1 to key 1
//! r(2,0,1,1)      <-   ... and reads key 2 = 0, the initial value
//! w(2,5,2,-1)     <- txn -1: an aborted write (session 2)
//! r(1,1,2,3)
//! ```
//!
//! The operations of one `txn` form one transaction, in file order (its
//! lines need not be adjacent); transactions are ordered by their first
//! line, which is also their session order. Transaction numbers are global
//! in every sample, so the transaction id is the file's `txn`; a number
//! used by two sessions is refused (an error naming the line where the
//! second session uses it), as it cannot name one transaction.
//!
//! `txn = -1` marks an aborted write (Plume's `TextHistoryLoader`): the
//! aborted writes of a session are gathered in one `Status::Fail`
//! transaction of that session, placed at its first such line, with the
//! next free id. Reads marked `-1` are ignored, as Plume does.
//!
//! Value `0` is the initial value of every key (the loaders add an init
//! transaction writing 0 to each key). Exactly what this importer does:
//!
//! 1. The *explicit init transaction* is the first transaction of the file
//!    when it is session 0, txn 0 and all its operations are writes of `0`
//!    (IsoVista's `pg_ser_bug.txt` and `yugabyte_tcc.txt`).
//! 2. If it exists and no other (non-aborted) transaction writes `0` to one
//!    of its keys, it is dropped: its writes are the initial state.
//!    Otherwise it is kept as an ordinary transaction.
//! 3. Then a read of `0` is a read of the initial state (`value: None`),
//!    unless some remaining committed transaction writes `0` to that key, in
//!    which case it stays `Some(0)` and names that writer.
//!
//! The exporter ([`write()`]) writes `ok` transactions as they are, `fail`
//! ones as aborted writes (`txn -1`, reads dropped), and `info` ones as
//! committed (reads dropped) when some read observes one of their writes,
//! else as aborted writes. It needs integer keys, register ops only, and
//! non-negative keys and values with no written `0` (0 is the initial
//! value); anything else is refused.

use std::io::{Read, Write};
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::blocks::{self, Chunk};
use crate::error::ParseError;
use crate::formats::util::{self, assign_ids, snippet, zero_reads_to_initial};
use crate::formats::{ExportError, Format};
use crate::model::{History, Key, Op, Status, Txn};

/// One parsed line.
struct Line {
    write: bool,
    /// The line's number counted from its chunk's first line (in what
    /// would be padding: a `Line` stays 40 bytes), for errors found later.
    rel: u32,
    key: i64,
    value: i64,
    session: u64,
    txn: i64,
}

fn parse_line(s: &str) -> Result<Line, String> {
    let bad = || {
        format!(
            "expected `r(key,value,session,txn)` or `w(key,value,session,txn)`, found {}",
            snippet(s)
        )
    };
    let (write, rest) = match s.as_bytes().first() {
        Some(b'r') => (false, &s[1..]),
        Some(b'w') => (true, &s[1..]),
        _ => return Err(bad()),
    };
    let inner = rest
        .trim_start()
        .strip_prefix('(')
        .and_then(|r| r.trim_end().strip_suffix(')'))
        .ok_or_else(bad)?;
    let mut parts = inner.split(',');
    let mut field = |name: &str| -> Result<i64, String> {
        let f = parts
            .next()
            .ok_or_else(|| format!("missing the {name} field in {}", snippet(s)))?
            .trim();
        f.parse::<i64>()
            .map_err(|_| format!("the {name} {} is not a 64-bit integer", snippet(f)))
    };
    let key = field("key")?;
    let value = field("value")?;
    let session = field("session")?;
    let txn = field("txn")?;
    if parts.next().is_some() {
        return Err(format!("too many fields in {} (expected 4)", snippet(s)));
    }
    if session < 0 {
        return Err(format!("negative session {session}"));
    }
    if txn < -1 {
        return Err(format!(
            "negative txn {txn} (only -1, an aborted write, is allowed)"
        ));
    }
    Ok(Line {
        write,
        rel: 0,
        key,
        value,
        session: session as u64,
        txn,
    })
}

/// `r(k,v,s,t)` / `w(k,v,s,t)` exactly, with plain integers: the lines
/// of a generated history, parsed without building strings. `None` sends
/// the line to [`parse_line`], which accepts spaces and words errors.
fn fast_line(b: &[u8]) -> Option<Line> {
    let write = match b.first()? {
        b'r' => false,
        b'w' => true,
        _ => return None,
    };
    if b.get(1) != Some(&b'(') || b.last() != Some(&b')') || b.len() < 3 {
        return None;
    }
    let mut fields = [0i64; 4];
    let mut parts = b[2..b.len() - 1].split(|&c| c == b',');
    for f in &mut fields {
        *f = util::int(parts.next()?)?;
    }
    if parts.next().is_some() || fields[2] < 0 || fields[3] < -1 {
        return None;
    }
    Some(Line {
        write,
        rel: 0,
        key: fields[0],
        value: fields[1],
        session: fields[2] as u64,
        txn: fields[3],
    })
}

/// The lines of one block, parsed on a thread of its own, and the number
/// of the block's first line; stops at the first error, with its line.
fn parse_chunk(chunk: Chunk<'_>) -> (Vec<Line>, usize, Option<(usize, String)>) {
    let mut out = Vec::with_capacity(chunk.bytes.len() / 16);
    let first = chunk.first_line;
    // A chunk of a few megabytes has far fewer than 2^32 lines.
    let rel = |no: usize| u32::try_from(no - first).unwrap_or(u32::MAX);
    for (no, bytes, _) in chunk.lines() {
        if let Some(mut l) = fast_line(bytes) {
            l.rel = rel(no);
            out.push(l);
            continue;
        }
        let s = match chunk.text(bytes) {
            Ok(s) => s.trim(),
            Err(msg) => return (out, first, Some((no, msg))),
        };
        if s.is_empty() {
            continue;
        }
        match parse_line(s) {
            Ok(l) => out.push(Line { rel: rel(no), ..l }),
            Err(m) => return (out, first, Some((no, m))),
        }
    }
    (out, first, None)
}

// `rel` fits in `Line`'s padding: the importer's memory traffic per line is
// what it was.
const _: () = assert!(std::mem::size_of::<Line>() == 40);

/// Parses a history in the text format.
pub fn parse(input: &str, path: Option<&Path>) -> Result<History, ParseError> {
    read(input.as_bytes(), path)
}

/// Reads a history in the text format from any input, streaming: blocks of
/// lines are parsed on both cores, and only the history is kept.
pub fn read<R: Read>(input: R, path: Option<&Path>) -> Result<History, ParseError> {
    let mut txns: Vec<Txn> = Vec::new();
    let mut src_ids: Vec<Option<u64>> = Vec::new();
    // Each transaction number's transaction (whose session it is).
    let mut by_id: Option<FxHashMap<i64, usize>> = None;
    let mut max_txn: Option<i64> = None;
    let mut aborted: FxHashMap<u64, usize> = FxHashMap::default();
    let mut failed = None;
    // Takes one line in file order; the error is a transaction number used
    // by a second session.
    let mut take = |l: Line| -> Result<(), String> {
        let key = Key::Int(l.key);
        if l.txn == -1 {
            if !l.write {
                return Ok(());
            }
            let i = *aborted.entry(l.session).or_insert_with(|| {
                txns.push(Txn::new(0, l.session, Status::Fail, Vec::new()));
                src_ids.push(None);
                txns.len() - 1
            });
            txns[i].ops.push(Op::Write {
                key,
                value: l.value,
            });
            return Ok(());
        }
        // Most lines continue the transaction of the line before, and
        // most others start one numbered above all before it: neither needs
        // a lookup (nor can name another session's transaction). The map of
        // every txn is built the first time a line goes back to an earlier
        // number (or to the line before's number in another session).
        let last = txns.len().checked_sub(1);
        let i = match last {
            Some(last)
                if src_ids[last] == Some(l.txn as u64) && txns[last].session == l.session =>
            {
                last
            }
            _ if by_id.is_none() && max_txn.is_none_or(|m| l.txn > m) => {
                txns.push(Txn::new(0, l.session, Status::Ok, Vec::new()));
                src_ids.push(Some(l.txn as u64));
                txns.len() - 1
            }
            _ => {
                let map = by_id.get_or_insert_with(|| {
                    src_ids
                        .iter()
                        .enumerate()
                        .filter_map(|(j, id)| id.map(|id| (id as i64, j)))
                        .collect()
                });
                let j = *map.entry(l.txn).or_insert_with(|| {
                    txns.push(Txn::new(0, l.session, Status::Ok, Vec::new()));
                    src_ids.push(Some(l.txn as u64));
                    txns.len() - 1
                });
                if txns[j].session != l.session {
                    return Err(format!(
                        "txn {} is in session {} here but in session {} before: a transaction belongs to one session",
                        l.txn, l.session, txns[j].session
                    ));
                }
                j
            }
        };
        max_txn = Some(max_txn.map_or(l.txn, |m| m.max(l.txn)));
        txns[i].ops.push(if l.write {
            Op::Write {
                key,
                value: l.value,
            }
        } else {
            Op::Read {
                key,
                value: Some(l.value),
            }
        });
        Ok(())
    };
    blocks::for_each_block(input, &|_| {}, parse_chunk, |(lines, first, err)| {
        for l in lines {
            let rel = l.rel as usize;
            if let Err(msg) = take(l) {
                failed = Some((first + rel, msg));
                return false;
            }
        }
        failed = err;
        failed.is_none()
    })
    .map_err(|e| ParseError::io(path, e))?;
    if let Some((line, msg)) = failed {
        return Err(ParseError::at(path, line, msg));
    }
    // Aborted-write transactions take the next free ids when the file's
    // own ids are unique.
    let first_free = src_ids.iter().flatten().max().map_or(0, |m| m + 1);
    for (next, id) in (first_free..).zip(src_ids.iter_mut().filter(|i| i.is_none())) {
        *id = Some(next);
    }
    drop(aborted);
    drop(by_id);
    drop_explicit_init(&mut txns, &mut src_ids);
    assign_ids(&mut txns, &src_ids);
    zero_reads_to_initial(&mut txns);
    Ok(History::from_txns(txns))
}

/// Steps 1 and 2 of the module doc: drops the explicit init transaction
/// when its writes can only be the initial state.
fn drop_explicit_init(txns: &mut Vec<Txn>, src_ids: &mut Vec<Option<u64>>) {
    let Some(init) = txns.first() else {
        return;
    };
    let is_init = init.session == 0
        && src_ids[0] == Some(0)
        && !init.ops.is_empty()
        && init
            .ops
            .iter()
            .all(|op| matches!(op, Op::Write { value: 0, .. }));
    if !is_init {
        return;
    }
    let keys: FxHashSet<&Key> = init.ops.iter().filter_map(Op::key).collect();
    let clash = txns[1..]
        .iter()
        .filter(|t| t.status != Status::Fail)
        .flat_map(|t| t.ops.iter())
        .any(|op| matches!(op.written(), Some((k, 0)) if keys.contains(k)));
    if !clash {
        txns.remove(0);
        src_ids.remove(0);
    }
}

/// Reads a text-format history file.
pub fn read_file(path: &Path) -> Result<History, ParseError> {
    super::util::read_path(path, read)
}

fn unrepresentable(t: &Txn, reason: String) -> ExportError {
    ExportError::Unrepresentable {
        format: Format::Text,
        txn: t.id,
        reason,
    }
}

/// Which transactions committed: `ok` ones, and `info` ones whose write an
/// `ok` transaction read (an `info` transaction's reads tell nothing).
fn committed_set(h: &History) -> Vec<bool> {
    let mut writer: FxHashMap<(&Key, i64), usize> = FxHashMap::default();
    for (i, t) in h.txns.iter().enumerate() {
        for op in &t.ops {
            if let Some((k, v)) = op.written() {
                writer.entry((k, v)).or_insert(i);
            }
        }
    }
    let mut committed: Vec<bool> = h.txns.iter().map(|t| t.status == Status::Ok).collect();
    for (i, t) in h.txns.iter().enumerate() {
        if t.status != Status::Ok {
            continue;
        }
        for op in &t.ops {
            if let Op::Read {
                key,
                value: Some(v),
            } = op
            {
                if let Some(&w) = writer.get(&(key, *v)) {
                    if w != i && h.txns[w].status == Status::Info {
                        committed[w] = true;
                    }
                }
            }
        }
    }
    committed
}

/// Writes a history in the text format (see the module doc for how
/// statuses map). What the format cannot carry: times, errors, `kind`,
/// `dbts`, reads of failed and unknown transactions, empty transactions,
/// and the grouping of a session's aborted writes into transactions (they
/// come back as one failed transaction per session).
pub fn write<W: Write>(h: &History, mut out: W) -> Result<(), ExportError> {
    // An `info` transaction counts as committed when a committed
    // transaction other than itself read its write (to a fixpoint), as the
    // checkers decide; committed ones keep their reads.
    let committed = committed_set(h);
    let mut line = String::with_capacity(64);
    for (ti, t) in h.txns.iter().enumerate() {
        let txn_no = i64::try_from(t.id)
            .map_err(|_| unrepresentable(t, format!("id {} is beyond 2^63", t.id)))?;
        if t.session > i64::MAX as u64 {
            return Err(unrepresentable(
                t,
                format!("session {} is beyond 2^63", t.session),
            ));
        }
        let mut ops = Vec::with_capacity(t.ops.len());
        for op in &t.ops {
            match op {
                Op::Read {
                    key: Key::Int(k),
                    value,
                } => {
                    let v = value.unwrap_or(0);
                    if *k < 0 || v < 0 || *value == Some(0) {
                        return Err(unrepresentable(
                            t,
                            format!("{op}: keys and read values must be non-negative, and 0 stands for the initial value"),
                        ));
                    }
                    ops.push((false, *k, v));
                }
                Op::Write {
                    key: Key::Int(k),
                    value,
                } => {
                    if *k < 0 || *value <= 0 {
                        return Err(unrepresentable(
                            t,
                            format!("{op}: keys must be non-negative and written values positive (0 is the initial value)"),
                        ));
                    }
                    ops.push((true, *k, *value));
                }
                other => {
                    return Err(unrepresentable(
                        t,
                        format!("{other} has no text form (only reads and writes of integer keys)"),
                    ))
                }
            }
        }
        let committed = committed[ti];
        for (w, k, v) in ops {
            if !w && t.status != Status::Ok {
                continue; // the reads of failed and unknown transactions tell nothing
            }
            line.clear();
            let op = if w { 'w' } else { 'r' };
            let txn = if committed { txn_no } else { -1 };
            line.push_str(&format!("{op}({k},{v},{},{txn})\n", t.session));
            out.write_all(line.as_bytes())?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Writes a history in the text format to a string.
pub fn to_string(h: &History) -> Result<String, ExportError> {
    super::util::write_to_string(h, |h, buf| write(h, buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(k: i64, v: Option<i64>) -> Op {
        Op::read(k, v)
    }
    fn w(k: i64, v: i64) -> Op {
        Op::write(k, v)
    }

    #[test]
    fn groups_by_session_and_txn() {
        let h = parse(
            "w(1,2,0,0)\nr(1,2,1,1)\nw(1,1,1,2)\nw(2,1,1,2)\nr(2,1,2,3)\nr(1,2,2,3)",
            None,
        )
        .unwrap();
        assert_eq!(h.txns.len(), 4);
        let ids: Vec<_> = h.txns.iter().map(|t| (t.id, t.session)).collect();
        assert_eq!(ids, vec![(0, 0), (1, 1), (2, 1), (3, 2)]);
        assert_eq!(h.txns[2].ops, vec![w(1, 1), w(2, 1)]);
        assert_eq!(h.txns[3].ops, vec![r(2, Some(1)), r(1, Some(2))]);
    }

    #[test]
    fn aborted_writes_form_a_failed_txn() {
        let h = parse("w(1,1,0,-1)\nw(2,1,0,-1)\nr(1,1,0,1)", None).unwrap();
        assert_eq!(h.txns.len(), 2);
        assert_eq!(h.txns[0].status, Status::Fail);
        assert_eq!(h.txns[0].ops, vec![w(1, 1), w(2, 1)]);
        assert_eq!(h.txns[0].id, 2);
        assert_eq!(h.txns[1].id, 1);
        assert_eq!(h.txns[1].ops, vec![r(1, Some(1))]);
    }

    #[test]
    fn zero_is_the_initial_value() {
        // Implicit initial values.
        let h = parse("r(1,0,0,0)\nw(1,1,0,0)", None).unwrap();
        assert_eq!(h.txns[0].ops, vec![r(1, None), w(1, 1)]);
        // An explicit init transaction is dropped.
        let h = parse("w(1,0,0,0)\nw(2,0,0,0)\nr(1,0,1,1)\nw(2,1,1,1)", None).unwrap();
        assert_eq!(h.txns.len(), 1);
        assert_eq!(h.txns[0].ops, vec![r(1, None), w(2, 1)]);
        // Someone else writes 0 to key 2: reads of (2, 0) name a writer.
        let h = parse("w(1,0,0,0)\nr(1,0,1,1)\nr(2,0,1,1)\nw(2,0,2,2)", None).unwrap();
        assert_eq!(h.txns.len(), 2);
        assert_eq!(h.txns[0].ops, vec![r(1, None), r(2, Some(0))]);
        // ... and when that key was the init transaction's, it is kept.
        let h = parse("w(1,0,0,0)\nr(1,0,1,1)\nw(1,0,2,2)", None).unwrap();
        assert_eq!(h.txns.len(), 3);
        assert_eq!(h.txns[1].ops, vec![r(1, Some(0))]);
        // Session 0 txn 0 that is not only writes of 0 is an ordinary txn.
        let h = parse("w(1,1,0,0)\nr(2,0,0,0)", None).unwrap();
        assert_eq!(h.txns.len(), 1);
        assert_eq!(h.txns[0].ops, vec![w(1, 1), r(2, None)]);
    }

    #[test]
    fn the_fast_path_and_the_general_parser_agree() {
        let plain = "w(1,1,1,1)\nr(1,1,2,2)\nw(2,-3,2,2)\nw(3,4,1,-1)\n";
        let spaced = "w( 1, 1, 1, 1 )\n r(1 ,1,2,2)\r\nw(2,-3,2,+2)\nw(3,4,1,-1)  \n";
        assert_eq!(parse(plain, None).unwrap(), parse(spaced, None).unwrap());
    }

    #[test]
    fn a_transaction_resumed_later_in_the_file_is_one_transaction() {
        let h = parse(
            "w(1,1,1,1)\nw(2,1,2,2)\nw(3,1,1,1)\nw(4,1,3,3)\nr(2,1,2,2)",
            None,
        )
        .unwrap();
        let shape: Vec<(u64, usize)> = h.txns.iter().map(|t| (t.id, t.ops.len())).collect();
        assert_eq!(shape, vec![(1, 2), (2, 2), (3, 1)]);
    }

    #[test]
    fn a_txn_belongs_to_one_session() {
        // Non-adjacent lines of one transaction in one session are fine...
        let h = parse("w(1,1,0,3)\nw(2,1,1,4)\nr(2,1,0,3)\nw(3,1,0,5)", None).unwrap();
        let shape: Vec<(u64, u64, usize)> = h
            .txns
            .iter()
            .map(|t| (t.id, t.session, t.ops.len()))
            .collect();
        assert_eq!(shape, vec![(3, 0, 2), (4, 1, 1), (5, 0, 1)]);
        // ... but one number in two sessions is refused, at the line of
        // the second session, adjacent or not, by either parser.
        for (text, line) in [
            ("w(1,5,0,3)\nw(2,6,1,3)", 2),
            ("w(1,5,0,3)\nw(2,6,1,4)\nr(1,5,2,3)", 3),
            ("w(1,5,0,3)\nw(2,6,1,4)\nw(3,6,0,5)\n\nr( 2 ,6,0,4)", 5),
            ("w(1,0,0,0)\nr(1,0,1,0)", 2),
            ("w(1,1,2,-1)\nw(1,5,0,3)\nw(2,6,2,3)", 3),
        ] {
            let e = parse(text, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(
                e.to_string().contains("belongs to one session"),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn invalid_utf8_names_its_line_and_byte() {
        let e = read(&b"w(1,1,1,1)\nw(2,\xff,1,1)\n"[..], None).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(e.to_string().contains("invalid UTF-8 at byte 15"), "{e}");
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("w(1,1,0,0)\nx(1,1,0,0)", 2, "expected `r(key"),
            ("w(1,1,0,0)\n\nr(1,a,0,0)", 3, "value \"a\""),
            ("w(1,1,0,0)\nr(1,1,0)", 2, "missing the txn"),
            ("w(1,1,0,0,9)", 1, "too many"),
            ("w(1,1,-3,0)", 1, "negative session"),
            ("w(1,1,0,-2)", 1, "negative txn"),
            ("w(1,1,0,0", 1, "expected"),
            ("w(99999999999999999999,1,0,0)", 1, "64-bit"),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn export_maps_statuses() {
        let mut info_seen = Txn::new(5, 2, Status::Info, vec![r(3, Some(4)), w(1, 7)]);
        info_seen.end = None;
        let h = History::from_txns(vec![
            Txn::new(1, 0, Status::Ok, vec![r(1, None), w(1, 3)]),
            Txn::new(2, 1, Status::Fail, vec![r(1, Some(3)), w(2, 9)]),
            info_seen,
            Txn::new(6, 3, Status::Info, vec![w(4, 1)]),
            Txn::new(7, 4, Status::Ok, vec![r(1, Some(7))]),
        ]);
        let s = to_string(&h).unwrap();
        assert_eq!(
            s,
            "r(1,0,0,1)\nw(1,3,0,1)\nw(2,9,1,-1)\nw(1,7,2,5)\nw(4,1,3,-1)\nr(1,7,4,7)\n"
        );
        let bad = History::from_txns(vec![Txn::new(1, 0, Status::Ok, vec![w(1, 0)])]);
        assert!(matches!(
            to_string(&bad),
            Err(ExportError::Unrepresentable { txn: 1, .. })
        ));
        let bad = History::from_txns(vec![Txn::new(
            1,
            0,
            Status::Ok,
            vec![Op::Append {
                key: Key::Int(1),
                value: 1,
            }],
        )]);
        assert!(to_string(&bad).is_err());
    }
}
