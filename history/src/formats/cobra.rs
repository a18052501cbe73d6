//! Cobra logs: a directory of binary `T<n>.log` files, one per session
//! (client thread `n`), each a sequence of records of big-endian `i64`s
//! behind a one-byte tag:
//!
//! ```text
//! 'S' txn                              start a transaction
//! 'W' writeId key value                a write (key and value are hashes)
//! 'R' writerTxn writeId key value      a read of the write `writeId`
//! 'C' txn                              commit
//! 'A' txn                              abort (not in the samples; assumed
//!                                      to mirror 'C')
//! e.g. 53 0000000000000000 | 57 0000000010000001 0000000000000001 0000000010000001 | 43 0000000000000000
//! ```
//!
//! Mapping. Session = `n` from the file name. A transaction's id is its
//! Cobra id (ids are unique across the samples; if two sessions use one,
//! transactions are numbered 0, 1, 2, ... instead). Cobra write ids are
//! unique, so a write becomes `Write { key, value: writeId }` and a read
//! `Read { key, value: Some(writeId) }`: every read names its writer
//! exactly; the value hashes are not kept.
//!
//! The initial state: `T-1.log` (Plume's samples) is the init transaction;
//! it is not a session, and reads of the write ids it writes are reads of
//! the initial state (`None`). PolySI's samples have no `T-1.log`; their
//! reads of the initial state name the magic write ids `0xbebeebee` (INIT)
//! or `0xdeadbeef` (NULL), which also become `None`. Garbage-collection
//! reads (write id `0x23332333` or `0x66666666` from the INIT transaction)
//! are not reads of data and are dropped.
//!
//! A transaction still open at the end of its file (the client died) is
//! `Status::Info`; one aborted with 'A' is `Status::Fail`. The optional
//! timestamps some Cobra builds add to 'S' and 'C' are not supported.
//! Files whose names are not `T<integer>.log` are ignored.
//!
//! What the samples show: PolySI's RUBiS and C-Twitter logs start most
//! transactions with reads of INIT/NULL; Plume's TAP conversions write
//! their values as write ids `0x10000000 + n`, and some are lossy upstream
//! (tap-e keeps only the last write of its one transaction).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;

use crate::error::ParseError;
use crate::formats::util::{self, assign_ids};
use crate::model::{History, Key, Op, Status, Txn};

/// The writer-transaction and write id Cobra gives reads of loaded data.
pub const INIT_ID: i64 = 0xbebe_ebee;
/// The write id Cobra gives reads of absent keys.
pub const NULL_ID: i64 = 0xdead_beef;
const GC_WID_TRUE: i64 = 0x2333_2333;
const GC_WID_FALSE: i64 = 0x6666_6666;

/// The session number in a `T<n>.log` file name.
pub fn session_of(name: &str) -> Option<i64> {
    name.strip_prefix('T')?.strip_suffix(".log")?.parse().ok()
}

/// One session's log, as parsed.
struct Log {
    session: i64,
    file: PathBuf,
    txns: Vec<(i64, Status, Vec<Op>)>,
    /// The write ids of the init transaction (`T-1.log`).
    init_writes: Vec<i64>,
}

/// Parses one session's log, streaming: a record at a time through a
/// buffer, never the whole file.
fn parse_log<R: Read>(input: R, session: i64, file: &Path) -> Result<Log, ParseError> {
    let err = |at: usize, m: String| ParseError::at_offset(Some(file), at as u64, m);
    let io_err = |e: io::Error| ParseError::io(Some(file), e);
    let mut input = BufReader::with_capacity(1 << 20, input);
    let mut log = Log {
        session,
        file: file.to_path_buf(),
        txns: Vec::new(),
        init_writes: Vec::new(),
    };
    let mut cur: Option<(i64, Vec<Op>)> = None;
    let mut pos = 0;
    let mut record = [0u8; 1 + 8 * 4];
    loop {
        let at = pos;
        let Some(&tag) = input.fill_buf().map_err(io_err)?.first() else {
            break;
        };
        let n = match tag {
            b'S' | b'C' | b'A' => 1,
            b'W' => 3,
            b'R' => 4,
            other => {
                return Err(err(
                    at,
                    format!("unknown record tag {other:#04x} (expected 'S', 'W', 'R', 'C' or 'A')"),
                ))
            }
        };
        let len = 1 + 8 * n;
        let got = util::read_up_to(&mut input, &mut record[..len]).map_err(io_err)?;
        if got < len {
            return Err(err(
                at,
                format!(
                    "the file ends inside a '{}' record ({got} of {len} bytes)",
                    tag as char
                ),
            ));
        }
        let mut f = [0i64; 4];
        for (i, slot) in f.iter_mut().take(n).enumerate() {
            let s = 1 + 8 * i;
            *slot = i64::from_be_bytes(record[s..s + 8].try_into().expect("8 bytes"));
        }
        pos += len;
        match tag {
            b'S' => {
                if let Some((id, _)) = &cur {
                    return Err(err(
                        at,
                        format!("transaction {} starts before transaction {id} ends", f[0]),
                    ));
                }
                cur = Some((f[0], Vec::new()));
            }
            b'C' | b'A' => {
                let Some((id, ops)) = cur.take() else {
                    return Err(err(
                        at,
                        format!(
                            "'{}' of transaction {} that never started",
                            tag as char, f[0]
                        ),
                    ));
                };
                if id != f[0] {
                    return Err(err(
                        at,
                        format!(
                            "'{}' of transaction {} inside transaction {id}",
                            tag as char, f[0]
                        ),
                    ));
                }
                let status = if tag == b'C' {
                    Status::Ok
                } else {
                    Status::Fail
                };
                log.txns.push((id, status, ops));
            }
            b'W' => {
                let Some((_, ops)) = cur.as_mut() else {
                    return Err(err(at, "a write outside any transaction".into()));
                };
                if session == -1 {
                    log.init_writes.push(f[0]);
                }
                ops.push(Op::Write {
                    key: Key::Int(f[1]),
                    value: f[0],
                });
            }
            _ => {
                let Some((_, ops)) = cur.as_mut() else {
                    return Err(err(at, "a read outside any transaction".into()));
                };
                let (writer, wid, key) = (f[0], f[1], f[2]);
                let value = if wid == INIT_ID || wid == NULL_ID {
                    None
                } else if writer == INIT_ID && (wid == GC_WID_TRUE || wid == GC_WID_FALSE) {
                    continue; // a garbage-collection read
                } else {
                    Some(wid)
                };
                ops.push(Op::Read {
                    key: Key::Int(key),
                    value,
                });
            }
        }
    }
    if let Some((id, ops)) = cur {
        log.txns.push((id, Status::Info, ops));
    }
    Ok(log)
}

/// Builds a history from in-memory logs: `(session number, bytes)` pairs,
/// session `-1` being the init transaction. `dir` names the files in
/// errors (`dir/T<n>.log`).
pub fn parse_logs(logs: &[(i64, &[u8])], dir: Option<&Path>) -> Result<History, ParseError> {
    let base = dir.map_or_else(PathBuf::new, Path::to_path_buf);
    let mut parsed = Vec::with_capacity(logs.len());
    for &(session, bytes) in logs {
        parsed.push(parse_log(
            bytes,
            session,
            &base.join(format!("T{session}.log")),
        )?);
    }
    build(parsed)
}

fn build(mut logs: Vec<Log>) -> Result<History, ParseError> {
    logs.sort_by_key(|l| l.session);
    let init: FxHashSet<i64> = logs
        .iter()
        .filter(|l| l.session == -1)
        .flat_map(|l| l.init_writes.iter().copied())
        .collect();
    let mut txns = Vec::new();
    let mut ids = Vec::new();
    for log in logs {
        if log.session == -1 {
            continue;
        }
        if log.session < 0 {
            return Err(ParseError::whole(
                Some(&log.file),
                format!(
                    "session {} is negative (only T-1.log, the init transaction, may be)",
                    log.session
                ),
            ));
        }
        for (id, status, mut ops) in log.txns {
            for op in &mut ops {
                if let Op::Read { value, .. } = op {
                    if value.is_some_and(|v| init.contains(&v)) {
                        *value = None;
                    }
                }
            }
            txns.push(Txn::new(0, log.session as u64, status, ops));
            ids.push(Some(id as u64));
        }
    }
    assign_ids(&mut txns, &ids);
    Ok(History::from_txns(txns))
}

/// Reads a Cobra log directory.
pub fn read_dir(dir: &Path) -> Result<History, ParseError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ParseError::io(Some(dir), e))?;
    let mut logs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ParseError::io(Some(dir), e))?;
        let name = entry.file_name();
        let Some(session) = name.to_str().and_then(session_of) else {
            continue;
        };
        let file = entry.path();
        let f = File::open(&file).map_err(|e| ParseError::io(Some(&file), e))?;
        logs.push(parse_log(f, session, &file)?);
    }
    if logs.is_empty() {
        return Err(ParseError::whole(
            Some(dir),
            "no T<n>.log files: this is not a Cobra log directory",
        ));
    }
    build(logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes records as a Cobra log.
    fn encode(records: &[(u8, &[i64])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (tag, fields) in records {
            b.push(*tag);
            for f in *fields {
                b.extend_from_slice(&f.to_be_bytes());
            }
        }
        b
    }

    #[test]
    fn reads_resolve_to_writers() {
        let init = encode(&[(b'S', &[-1]), (b'W', &[100, 1, 100]), (b'C', &[-1])]);
        let t0 = encode(&[
            (b'S', &[0]),
            (b'R', &[-1, 100, 1, 100]),
            (b'W', &[101, 1, 55]),
            (b'C', &[0]),
            (b'S', &[1]),
            (b'R', &[INIT_ID, INIT_ID, 7, 9]),
            (b'R', &[NULL_ID, NULL_ID, 8, 0]),
            (b'R', &[INIT_ID, GC_WID_TRUE, 8, 0]),
        ]);
        let t1 = encode(&[(b'S', &[2]), (b'R', &[0, 101, 1, 55]), (b'C', &[2])]);
        let h = parse_logs(&[(1, &t1), (-1, &init), (0, &t0)], None).unwrap();
        assert_eq!(h.txns.len(), 3);
        let t = &h.txns[0];
        assert_eq!((t.id, t.session, t.status), (0, 0, Status::Ok));
        assert_eq!(
            t.ops,
            vec![
                Op::Read {
                    key: Key::Int(1),
                    value: None
                },
                Op::Write {
                    key: Key::Int(1),
                    value: 101
                }
            ]
        );
        assert_eq!(h.txns[1].status, Status::Info);
        assert_eq!(
            h.txns[1].ops,
            vec![
                Op::Read {
                    key: Key::Int(7),
                    value: None
                },
                Op::Read {
                    key: Key::Int(8),
                    value: None
                }
            ]
        );
        assert_eq!(
            h.txns[2].ops,
            vec![Op::Read {
                key: Key::Int(1),
                value: Some(101)
            }]
        );
    }

    #[test]
    fn errors_name_file_and_offset() {
        let t0 = encode(&[(b'S', &[0]), (b'W', &[1, 1, 1]), (b'C', &[0])]);
        let e = parse_logs(&[(0, &t0[..t0.len() - 2])], Some(Path::new("d"))).unwrap_err();
        assert_eq!(e.offset, Some(34));
        assert_eq!(e.path.as_deref(), Some(Path::new("d/T0.log")));
        let mut bad = t0.clone();
        bad[9] = b'X';
        let e = parse_logs(&[(3, &bad)], None).unwrap_err();
        assert_eq!(e.offset, Some(9));
        assert!(e.message.contains("unknown record tag"), "{e}");
        let bad = encode(&[(b'S', &[0]), (b'C', &[1])]);
        assert!(parse_logs(&[(0, &bad)], None)
            .unwrap_err()
            .message
            .contains("inside transaction 0"));
        let bad = encode(&[(b'W', &[1, 1, 1])]);
        assert!(parse_logs(&[(0, &bad)], None)
            .unwrap_err()
            .message
            .contains("outside"));
    }
}
