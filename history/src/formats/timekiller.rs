//! TimeKiller / Chronos histories: one JSON array of committed
//! transactions with the database's hybrid-logical-clock timestamps.
//!
//! ```text
//! [{"tid": 52, "sid": 47,
//!   "sts": {"p": "320316483", "l": 0}, "cts": {"p": "320316485", "l": 0},
//!   "ops": [{"t": "r", "k": 313, "v": 0}, {"t": "w", "k": 774, "v": 424}]},
//!  {"tid": 53, "sid": 3, "sts": {"p": 448719026730565749, "l": 0}, "cts": ...,
//!   "ops": [{"t": "a", "k": 83, "v": 90}, {"t": "r", "k": 99, "v": [90]}]}]
//! ```
//!
//! `tid` is the transaction id, `sid` the session; a session's
//! transactions are in file order (in the samples this is also `sts` and
//! `tid` order). `t` is `w` (write), `r` (read: an integer, or a list in
//! the list variant) or `a` (append). Every transaction is committed;
//! `start`/`end` (client times) are unknown.
//!
//! Initial values: as in dbcop, a register read of `0` is a read of the
//! initial state (`None`) unless some transaction writes `0` to that key.
//! A list read of `[]` is an empty list.
//!
//! Timestamps: `sts`/`cts` become [`DbTs`] `{start, commit}`. An HLC
//! timestamp is a physical part `p` (a string or a number) and a logical
//! counter `l`; they are combined into one `u64` that keeps their order:
//! `p << 16 | l` when every `p < 2^48` and every `l < 2^16` (the key-value
//! sample: `p` ~ 3.2e8); else `p` alone when every `l` is 0 (the list
//! sample, whose `p` ~ 4.5e17 is already a TiDB-style TSO with its logical
//! bits inside); else the rank of `(p, l)` among all the history's
//! timestamps (order and equality kept, magnitudes lost).

use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::elements::{for_each_element, json_element, JsonArray};
use crate::error::ParseError;
use crate::formats::util::{assign_ids, snippet, zero_reads_to_initial};
use crate::model::{DbTs, History, Key, Op, Status, Txn, Value};

/// The physical part of an HLC timestamp: a number or a decimal string.
struct Phys(u64);

impl<'de> Deserialize<'de> for Phys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Phys, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Phys;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-negative integer or a decimal string")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Phys, E> {
                Ok(Phys(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Phys, E> {
                u64::try_from(v)
                    .map(Phys)
                    .map_err(|_| E::custom(format!("negative timestamp {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Phys, E> {
                let t = v.trim();
                t.parse().map(Phys).map_err(|_| {
                    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                        E::custom(format!(
                            "timestamp {t} is out of range (more than 2^64 - 1)"
                        ))
                    } else {
                        E::custom(format!("timestamp {v:?} is not a number"))
                    }
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Phys, E> {
                Err(E::custom(format!(
                    "timestamp {v} is not a non-negative 64-bit integer"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct Hlc {
    p: Phys,
    #[serde(default)]
    l: u64,
}

/// An op's value: an integer, `null`, or a list.
enum Val {
    Null,
    One(Value),
    List(Vec<Value>),
}

impl<'de> Deserialize<'de> for Val {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Val, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Val;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer, null or a list of integers")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Val, E> {
                Ok(Val::Null)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Val, E> {
                Ok(Val::One(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Val, E> {
                i64::try_from(v)
                    .map(Val::One)
                    .map_err(|_| E::custom("value out of range"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Val, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = a.next_element::<Value>()? {
                    out.push(v);
                }
                Ok(Val::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct RawOp<'a> {
    #[serde(borrow)]
    t: Cow<'a, str>,
    k: Key,
    #[serde(default = "null")]
    v: Val,
}

fn null() -> Val {
    Val::Null
}

#[derive(Deserialize)]
struct RawTxn<'a> {
    tid: u64,
    sid: u64,
    sts: Option<Hlc>,
    cts: Option<Hlc>,
    #[serde(borrow)]
    ops: Vec<RawOp<'a>>,
}

/// An HLC timestamp as read: (physical, logical).
type Stamp = (u64, u64);

/// Parses a TimeKiller JSON history.
pub fn parse(input: &str, path: Option<&Path>) -> Result<History, ParseError> {
    read(input.as_bytes(), path)
}

/// One transaction as read: the transaction, its `tid`, its timestamps.
type Read1 = (Txn, u64, (Option<Stamp>, Option<Stamp>));

/// Converts one raw transaction (which starts on `line`).
fn txn_of(raw: RawTxn, line: usize, path: Option<&Path>) -> Result<Read1, ParseError> {
    let mut ops = Vec::with_capacity(raw.ops.len());
    for op in raw.ops {
        let err = |m: String| ParseError::at(path, line, format!("transaction {}: {m}", raw.tid));
        ops.push(match (op.t.as_ref(), op.v) {
            ("r", Val::Null) => Op::Read {
                key: op.k,
                value: None,
            },
            ("r", Val::One(v)) => Op::Read {
                key: op.k,
                value: Some(v),
            },
            ("r", Val::List(vs)) => Op::ReadList {
                key: op.k,
                values: Some(vs),
            },
            ("w", Val::One(value)) => Op::Write { key: op.k, value },
            ("a", Val::One(value)) => Op::Append { key: op.k, value },
            ("w" | "a", _) => return Err(err(format!("a {:?} op needs an integer \"v\"", op.t))),
            (other, _) => {
                return Err(err(format!(
                    "unknown op type {} (expected \"r\", \"w\" or \"a\")",
                    snippet(other)
                )))
            }
        });
    }
    let hlc = |h: Option<Hlc>| h.map(|h| (h.p.0, h.l));
    Ok((
        Txn::new(0, raw.sid, Status::Ok, ops),
        raw.tid,
        (hlc(raw.sts), hlc(raw.cts)),
    ))
}

/// Reads a TimeKiller JSON history, streaming: each transaction is parsed
/// as it is read; the input is never held whole.
pub fn read<R: Read>(input: R, path: Option<&Path>) -> Result<History, ParseError> {
    let mut txns = Vec::new();
    let mut ids = Vec::new();
    let mut stamps: Vec<(Option<Stamp>, Option<Stamp>)> = Vec::new();
    for_each_element(
        input,
        path,
        JsonArray::new(),
        |line, _, text, _| txn_of(json_element::<RawTxn>(text, line, path)?, line, path),
        |(t, id, st)| {
            txns.push(t);
            ids.push(Some(id));
            stamps.push(st);
            Ok(())
        },
    )?;
    assign_ids(&mut txns, &ids);
    let combine = combiner(stamps.iter().flat_map(|(s, c)| s.iter().chain(c.iter())));
    for (t, (s, c)) in txns.iter_mut().zip(&stamps) {
        if let Some(s) = s {
            t.dbts = Some(DbTs {
                start: combine(*s),
                commit: c.map(&combine),
            });
        }
    }
    zero_reads_to_initial(&mut txns);
    Ok(History::from_txns(txns))
}

/// Chooses how to turn `(p, l)` into one ordered `u64` (see the module doc).
fn combiner<'a>(all: impl Iterator<Item = &'a Stamp> + Clone) -> impl Fn(Stamp) -> u64 {
    let packs = all.clone().all(|&(p, l)| p < 1 << 48 && l < 1 << 16);
    let no_logical = all.clone().all(|&(_, l)| l == 0);
    let mut ranks: Vec<Stamp> = if packs || no_logical {
        Vec::new()
    } else {
        let mut v: Vec<_> = all.copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    ranks.shrink_to_fit();
    move |(p, l)| {
        if packs {
            p << 16 | l
        } else if no_logical {
            p
        } else {
            ranks.binary_search(&(p, l)).unwrap_or(0) as u64
        }
    }
}

/// Reads a TimeKiller JSON history file.
pub fn read_file(path: &Path) -> Result<History, ParseError> {
    super::util::read_path(path, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_variants() {
        let s = r#"[
 {"tid": 5, "sid": 1, "sts": {"p": "100", "l": 1}, "cts": {"p": "102", "l": 0},
  "ops": [{"t": "r", "k": 3, "v": 0}, {"t": "w", "k": 3, "v": 9}]},
 {"tid": 6, "sid": 2, "sts": {"p": "103", "l": 0}, "cts": {"p": "104", "l": 2},
  "ops": [{"t": "r", "k": 3, "v": 9}]}
]"#;
        let h = parse(s, None).unwrap();
        assert_eq!(h.txns[0].id, 5);
        assert_eq!(
            h.txns[0].ops[0],
            Op::Read {
                key: Key::Int(3),
                value: None
            }
        );
        assert_eq!(
            h.txns[0].dbts,
            Some(DbTs {
                start: 100 << 16 | 1,
                commit: Some(102 << 16)
            })
        );
        let s = r#"[{"tid": 1, "sid": 0, "sts": {"p": 448719026730565749, "l": 0}, "cts": {"p": 448719026770149417, "l": 0},
  "ops": [{"t": "a", "k": 83, "v": 90}, {"t": "r", "k": 99, "v": []}]}]"#;
        let h = parse(s, None).unwrap();
        assert_eq!(h.txns[0].dbts.unwrap().start, 448719026730565749);
        assert_eq!(
            h.txns[0].ops[1],
            Op::ReadList {
                key: Key::Int(99),
                values: Some(vec![])
            }
        );
    }

    #[test]
    fn big_stamps_with_logical_parts_are_ranked() {
        let s = r#"[{"tid": 1, "sid": 0, "sts": {"p": 281474976710656, "l": 3}, "cts": {"p": 281474976710656, "l": 4}, "ops": []},
 {"tid": 2, "sid": 0, "sts": {"p": 281474976710657, "l": 0}, "ops": []}]"#;
        let h = parse(s, None).unwrap();
        assert_eq!(
            h.txns[0].dbts,
            Some(DbTs {
                start: 0,
                commit: Some(1)
            })
        );
        assert_eq!(
            h.txns[1].dbts,
            Some(DbTs {
                start: 2,
                commit: None
            })
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            (
                "[\n{\"tid\": 1, \"sid\": 0, \"ops\": [{\"t\": \"x\", \"k\": 1, \"v\": 1}]}]",
                2,
                "unknown op type",
            ),
            (
                "[\n{\"tid\": 1, \"sid\": 0,\n \"ops\": [{\"t\": \"w\", \"k\": 1, \"v\": [1]}]}]",
                2,
                "integer",
            ),
            (
                "[\n{\"tid\": 1, \"sid\": 0,\n \"sts\": {\"p\": \"x1\"}, \"ops\": []}]",
                3,
                "not a number",
            ),
            ("[\n{\"tid\": 1, \"ops\": []}]", 2, "sid"),
            (
                "[\n{\"tid\": 1, \"sid\": 0, \"ops\": []},\n",
                3,
                "missing `]`",
            ),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }
}
