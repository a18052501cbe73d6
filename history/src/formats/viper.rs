//! Viper logs as Plume writes them: a directory of `J<n>.log` files, one
//! per session, one JSON transaction per line.
//!
//! ```text
//! {"value": [["w", 1, 1, true], ["w", 2, 1, true]]}
//! {"value": [["r", 1, 2, true]]}
//! ```
//!
//! Each micro-op is `[op, key, value, success]` with `op` `"r"` or `"w"`.
//! Kept minimal: the samples are Plume's conversions of its text histories
//! (several are empty upstream). Session = `n` from the file name (Plume
//! starts at 24); transactions are committed and numbered 0, 1, 2, ... in
//! session order; micro-ops with `success = false` are dropped; a `null`
//! read value is a read of the initial state. As in the text format these
//! come from, a read of `0` is a read of the initial state unless some
//! transaction writes `0` to that key. Errors name the file and line.

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::blocks::{self, Chunk};
use crate::error::ParseError;
use crate::formats::util::{self, json_message, snippet, zero_reads_to_initial};
use crate::model::{History, Key, Op, Status, Txn};

/// One op as Viper writes it: `[op, key, value, ok]`.
type RawOp<'a> = (Cow<'a, str>, Key, Option<i64>, Option<bool>);

#[derive(Deserialize)]
struct RawTxn<'a> {
    #[serde(borrow)]
    value: Vec<RawOp<'a>>,
}

/// The session number in a `J<n>.log` file name.
pub fn session_of(name: &str) -> Option<u64> {
    name.strip_prefix('J')?.strip_suffix(".log")?.parse().ok()
}

/// The ops of one line, or why it is wrong.
fn ops_of(line: &str) -> Result<Vec<Op>, String> {
    let raw: RawTxn = serde_json::from_str(line).map_err(|e| json_message(&e))?;
    let mut ops = Vec::with_capacity(raw.value.len());
    for (op, key, value, ok) in raw.value {
        if ok == Some(false) {
            continue;
        }
        ops.push(match (op.as_ref(), value) {
            ("r", value) => Op::Read { key, value },
            ("w", Some(value)) => Op::Write { key, value },
            ("w", None) => return Err("a write of null".into()),
            (other, _) => {
                return Err(format!(
                    "unknown op {} (expected \"r\" or \"w\")",
                    snippet(other)
                ))
            }
        });
    }
    Ok(ops)
}

/// `{"value": [["w", 1, 1, true], ["r", 2, null, true]]}` exactly, as
/// Plume writes it (integer keys, spaces only after `:` and `,`): the ops,
/// read without serde. `None` sends the line to [`ops_of`], which accepts
/// any JSON and words errors.
fn fast_ops(line: &[u8]) -> Option<Vec<Op>> {
    let mut b = line.strip_prefix(b"{\"value\":")?;
    let skip = |b: &mut &[u8]| {
        while let Some(rest) = b.strip_prefix(b" ") {
            *b = rest;
        }
    };
    let eat = |b: &mut &[u8], what: &[u8]| -> Option<()> {
        skip(b);
        *b = b.strip_prefix(what)?;
        Some(())
    };
    let int = |b: &mut &[u8]| -> Option<i64> {
        skip(b);
        let end = b
            .iter()
            .position(|&c| c == b',' || c == b']' || c == b' ')?;
        let digits = b[..end].strip_prefix(b"-").unwrap_or(&b[..end]);
        if digits.len() > 1 && digits[0] == b'0' {
            return None; // not JSON: serde says why
        }
        let v = util::int(&b[..end])?;
        *b = &b[end..];
        Some(v)
    };
    eat(&mut b, b"[")?;
    // One `[` an op: the exact capacity keeps the model small.
    let mut ops = Vec::with_capacity(memchr::memchr_iter(b'[', b).count());
    skip(&mut b);
    if let Some(rest) = b.strip_prefix(b"]") {
        b = rest;
    } else {
        loop {
            eat(&mut b, b"[\"")?;
            let write = match b.first()? {
                b'w' => true,
                b'r' => false,
                _ => return None,
            };
            b = b.get(1..)?.strip_prefix(b"\",")?;
            let key = Key::Int(int(&mut b)?);
            eat(&mut b, b",")?;
            skip(&mut b);
            let value = match b.strip_prefix(b"null") {
                Some(rest) => {
                    b = rest;
                    None
                }
                None => Some(int(&mut b)?),
            };
            eat(&mut b, b",")?;
            skip(&mut b);
            let ok = if let Some(rest) = b.strip_prefix(b"true") {
                b = rest;
                true
            } else {
                b = b.strip_prefix(b"false")?;
                false
            };
            eat(&mut b, b"]")?;
            if ok {
                ops.push(match (write, value) {
                    (false, value) => Op::Read { key, value },
                    (true, Some(value)) => Op::Write { key, value },
                    (true, None) => return None,
                });
            }
            skip(&mut b);
            match b.first()? {
                b',' => b = &b[1..],
                b']' => {
                    b = &b[1..];
                    break;
                }
                _ => return None,
            }
        }
    }
    eat(&mut b, b"}")?;
    let rest = b.strip_suffix(b"\r").unwrap_or(b);
    rest.iter().all(|&c| c == b' ').then_some(ops)
}

/// The transactions (their ops) of one block of lines; stops at the first
/// error, with its line.
fn parse_chunk(chunk: Chunk<'_>) -> (Vec<Vec<Op>>, Option<(usize, String)>) {
    let mut out = Vec::new();
    for (no, bytes, _) in chunk.lines() {
        if let Some(ops) = fast_ops(bytes) {
            out.push(ops);
            continue;
        }
        let line = match chunk.text(bytes) {
            Ok(s) => s,
            Err(msg) => return (out, Some((no, msg))),
        };
        if line.trim().is_empty() {
            continue;
        }
        match ops_of(line) {
            Ok(ops) => out.push(ops),
            Err(msg) => return (out, Some((no, msg))),
        }
    }
    (out, None)
}

/// Reads one session's log, streaming: blocks of lines are parsed on both
/// cores.
fn parse_log<R: Read>(
    input: R,
    session: u64,
    file: &Path,
    out: &mut Vec<Txn>,
) -> Result<(), ParseError> {
    let mut failed = None;
    blocks::for_each_block(input, &|_| {}, parse_chunk, |(txns, err)| {
        for ops in txns {
            let id = out.len() as u64;
            out.push(Txn::new(id, session, Status::Ok, ops));
        }
        failed = err;
        failed.is_none()
    })
    .map_err(|e| ParseError::io(Some(file), e))?;
    match failed {
        Some((line, msg)) => Err(ParseError::at(Some(file), line, msg)),
        None => Ok(()),
    }
}

/// Builds a history from in-memory logs: `(session number, text)` pairs.
/// `dir` names the files in errors (`dir/J<n>.log`).
pub fn parse_logs(logs: &[(u64, &str)], dir: Option<&Path>) -> Result<History, ParseError> {
    let base = dir.map_or_else(PathBuf::new, Path::to_path_buf);
    let mut sorted: Vec<_> = logs.to_vec();
    sorted.sort_by_key(|l| l.0);
    let mut txns = Vec::new();
    for (session, text) in sorted {
        parse_log(
            text.as_bytes(),
            session,
            &base.join(format!("J{session}.log")),
            &mut txns,
        )?;
    }
    zero_reads_to_initial(&mut txns);
    Ok(History::from_txns(txns))
}

/// Reads a Viper log directory.
pub fn read_dir(dir: &Path) -> Result<History, ParseError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ParseError::io(Some(dir), e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ParseError::io(Some(dir), e))?;
        if let Some(session) = entry.file_name().to_str().and_then(session_of) {
            files.push((session, entry.path()));
        }
    }
    if files.is_empty() {
        return Err(ParseError::whole(
            Some(dir),
            "no J<n>.log files: this is not a Viper log directory",
        ));
    }
    files.sort();
    let mut txns = Vec::new();
    for (session, file) in files {
        let f = std::fs::File::open(&file).map_err(|e| ParseError::io(Some(&file), e))?;
        parse_log(f, session, &file, &mut txns)?;
    }
    zero_reads_to_initial(&mut txns);
    Ok(History::from_txns(txns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_and_serde_agree() {
        for line in [
            r#"{"value": [["w", 1, 1, true], ["r", 2, null, true], ["r", 3, 4, false]]}"#,
            r#"{"value":[["w",1,1,true],["r",-2,0,true]]}"#,
            r#"{"value": []}"#,
            r#"{"value": [["r", 7, 5, true]]}  "#,
        ] {
            assert_eq!(
                fast_ops(line.as_bytes()),
                Some(ops_of(line).unwrap()),
                "{line}"
            );
        }
        for line in [
            r#"{"value": [["w", 1, null, true]]}"#,
            r#"{"value": [["w", "k", 1, true]]}"#,
            r#"{"value": [["x", 1, 1, true]]}"#,
            r#"{"value": [["w", 1, 1, true]] x}"#,
            r#"{"value": [["w", 1, 1.5, true]]}"#,
            r#"{"value": [["w", 1, 1, true]]"#,
            r#"{"value": [["w", 1, 01, true]]}"#,
        ] {
            assert_eq!(fast_ops(line.as_bytes()), None, "{line}");
        }
    }

    #[test]
    fn parses_sessions() {
        let h = parse_logs(
            &[
                (
                    26,
                    "{\"value\": [[\"r\", 2, 1, true], [\"r\", 1, 0, true]]}\n",
                ),
                (
                    24,
                    "{\"value\": [[\"w\", 1, 2, true], [\"w\", 3, 3, false]]}\n",
                ),
            ],
            None,
        )
        .unwrap();
        assert_eq!(h.txns.len(), 2);
        assert_eq!((h.txns[0].session, h.txns[0].ops.len()), (24, 1));
        assert_eq!(
            h.txns[1].ops[1],
            Op::Read {
                key: Key::Int(1),
                value: None
            }
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_logs(
            &[(24, "{\"value\": []}\n{\"value\": [[\"x\", 1, 1, true]]}")],
            Some(Path::new("d")),
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.path.as_deref()),
            (Some(2), Some(Path::new("d/J24.log")))
        );
        let e = parse_logs(&[(24, "{\"value\": [[\"w\", 1]]}")], None).unwrap_err();
        assert_eq!(e.line, Some(1));
    }
}
