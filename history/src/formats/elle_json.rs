//! Elle / Jepsen histories as JSON (what elle-cli reads): one array of
//! operation objects.
//!
//! ```text
//! [{"type":"invoke","f":"txn","value":[["w","x",2]],"process":0,"time":10,"index":1},
//!  {"type":"ok","f":"txn","value":[["w","x",2]],"process":0,"time":20,"index":2},
//!  {"type":"invoke","f":"txn","value":[["append",253,1],["r",253,null]],"process":1,"index":3},
//!  {"type":"ok","f":"txn","value":[["append",253,1],["r",253,[1]]],"process":1,"index":4}]
//! ```
//!
//! The fields and their meaning are those of the EDN form (see
//! [`super::elle_edn`]): keywords become strings, `nil` becomes `null`.
//! A `"process"` that is a string (`"nemesis"`) is not a client; its
//! operations are skipped. Operations whose `"f"` is not `"txn"` are
//! refused (bank, counter, set, register and mutex histories are not
//! transaction histories). Errors name the line the offending operation
//! starts on.

use std::io::Read;
use std::path::Path;

use serde_json::Value as J;

use crate::elements::{json_element, FastFn, JsonArray};
use crate::error::ParseError;
use crate::formats::elle_fast;
use crate::formats::jepsen::{read_elle, JOp, Kind, Micro, ReadVal, NOT_TXN};
use crate::formats::util::snippet;
use crate::model::{History, Key};

fn kind_of(v: &J) -> &'static str {
    match v {
        J::Null => "null",
        J::Bool(_) => "a boolean",
        J::Number(_) => "a number",
        J::String(_) => "a string",
        J::Array(_) => "an array",
        J::Object(_) => "an object",
    }
}

fn int(v: &J, what: &str, line: usize, path: Option<&Path>) -> Result<i64, ParseError> {
    v.as_i64().ok_or_else(|| {
        ParseError::at(
            path,
            line,
            format!("{what} must be a 64-bit integer, not {}", kind_of(v)),
        )
    })
}

fn micro_of(v: &J, line: usize, path: Option<&Path>) -> Result<Micro, ParseError> {
    let err = |m: String| ParseError::at(path, line, m);
    let Some(items) = v.as_array() else {
        return Err(err(format!(
            "a micro-op must be an array like [\"r\", k, v], not {}",
            kind_of(v)
        )));
    };
    if items.len() != 3 {
        return Err(err(format!(
            "a micro-op has 3 elements [f, k, v], this one has {}",
            items.len()
        )));
    }
    let Some(f) = items[0].as_str() else {
        return Err(err(format!(
            "a micro-op starts with \"r\", \"w\" or \"append\", not {}",
            kind_of(&items[0])
        )));
    };
    let key = match &items[1] {
        J::String(s) => Key::str(s),
        k => Key::Int(int(k, "a micro-op key", line, path)?),
    };
    match f {
        "r" | "read" => {
            let rv = match &items[2] {
                J::Null => ReadVal::Nil,
                J::Array(vs) => ReadVal::List(
                    vs.iter()
                        .map(|v| int(v, "a list element", line, path))
                        .collect::<Result<_, _>>()?,
                ),
                v => ReadVal::One(int(v, "a read's value", line, path)?),
            };
            Ok(Micro::Read(key, rv))
        }
        "w" | "write" => Ok(Micro::Write(
            key,
            int(&items[2], "a write's value", line, path)?,
        )),
        "append" | "a" => Ok(Micro::Append(
            key,
            int(&items[2], "an append's value", line, path)?,
        )),
        other => Err(err(format!(
            "unknown micro-op {} (expected \"r\", \"w\" or \"append\")",
            snippet(other)
        ))),
    }
}

fn nonneg(v: &J, what: &str, line: usize, path: Option<&Path>) -> Result<Option<u64>, ParseError> {
    match v {
        J::Null => Ok(None),
        _ => v.as_u64().map(Some).ok_or_else(|| {
            ParseError::at(
                path,
                line,
                format!("{what} must be a non-negative integer, not {v}"),
            )
        }),
    }
}

fn op_of(v: J, line: usize, path: Option<&Path>) -> Result<Option<JOp>, ParseError> {
    let err = |m: String| ParseError::at(path, line, m);
    let J::Object(map) = v else {
        return Err(err(format!(
            "expected an operation object {{\"type\": ..., \"value\": ...}}, found {}",
            kind_of(&v)
        )));
    };
    let process = match map.get("process") {
        None | Some(J::Null) => None,
        Some(J::String(_)) => return Ok(None),
        Some(p) => Some(p.as_u64().ok_or_else(|| {
            err(format!(
                "\"process\" must be a non-negative integer, not {p}"
            ))
        })?),
    };
    let kind = match map.get("type") {
        Some(J::String(t)) => Kind::parse(t.trim_start_matches(':')).ok_or_else(|| {
            err(format!(
                "unknown \"type\" {t:?} (expected invoke, ok, fail or info)"
            ))
        })?,
        Some(other) => {
            return Err(err(format!(
                "\"type\" must be a string, not {}",
                kind_of(other)
            )))
        }
        None => return Err(err("the operation has no \"type\"".into())),
    };
    match map.get("f") {
        None | Some(J::Null) => {}
        Some(J::String(f)) if f.trim_start_matches(':') == "txn" => {}
        Some(other) => {
            return Err(err(format!(
                "operation \"f\": {other} is not a transaction: {NOT_TXN}"
            )))
        }
    }
    let ops = match map.get("value") {
        Some(J::Array(items)) => items
            .iter()
            .map(|m| micro_of(m, line, path))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(err(format!(
                "\"value\" must be an array of micro-ops, not {}; {NOT_TXN}",
                kind_of(other)
            )))
        }
        None => return Err(err(format!("the operation has no \"value\"; {NOT_TXN}"))),
    };
    let time = match map.get("time") {
        Some(t) => nonneg(t, "\"time\"", line, path)?,
        None => None,
    };
    let index = match map.get("index") {
        Some(t) => nonneg(t, "\"index\"", line, path)?,
        None => None,
    };
    let error = map.get("error").map(|e| match e {
        J::String(s) => s.clone(),
        other => other.to_string(),
    });
    Ok(Some(JOp {
        line,
        kind,
        process,
        time,
        index,
        ops,
        error,
    }))
}

/// Parses an Elle JSON history (one array of operations).
pub fn parse(input: &str, path: Option<&Path>) -> Result<History, ParseError> {
    read(input.as_bytes(), path)
}

/// Reads an Elle JSON history, streaming: each operation is parsed and
/// paired as it is read; the input is never held whole.
pub fn read<R: Read>(input: R, path: Option<&Path>) -> Result<History, ParseError> {
    read_with(input, path, true)
}

/// [`read`], with the fast path for operations in the usual shape
/// ([`elle_fast`]) or (`fast` false, for tests) serde_json alone.
pub(crate) fn read_with<R: Read>(
    input: R,
    path: Option<&Path>,
    fast: bool,
) -> Result<History, ParseError> {
    let fast: Option<FastFn<Option<JOp>>> = fast.then_some(elle_fast::json_object);
    read_elle(input, path, JsonArray::with_fast(fast), |line, _, text| {
        let op = op_of(json_element::<J>(text, line, path)?, line, path)?;
        Ok((op, Vec::new()))
    })
}

/// Reads an Elle JSON history file.
pub fn read_file(path: &Path) -> Result<History, ParseError> {
    super::util::read_path(path, read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Op, Status};

    #[test]
    fn parses_the_elle_cli_example() {
        let s = r#"[{"type":"invoke","f":"txn","value":[["w","x",2]],"process":0,"index":1},
{"type":"ok","f":"txn","value":[["w","x",2]],"process":0,"index":2},
{"type":"invoke","f":"txn","value":[["r","x",null]],"process":0,"index":3},
{"type":"ok","f":"txn","value":[["r","x",3]],"process":0,"index":4}]"#;
        let h = parse(s, None).unwrap();
        assert_eq!(h.txns.len(), 2);
        assert_eq!(h.txns[0].id, 1);
        assert_eq!(h.txns[1].status, Status::Ok);
        assert_eq!(
            h.txns[1].ops,
            vec![Op::Read {
                key: Key::str("x"),
                value: Some(3)
            }]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("[{\"type\":\"ok\",\"process\":0,\"value\":[]},\n{\"type\":\"ok\",\n\"process\":0,\"value\":[[\"q\",1,1]]}]", 2, "unknown micro-op"),
            ("[{\"type\":\"ok\",\"process\":0,\"value\":[]},\n{\"type\":\"ok\",\"process\":0,\"value\":[[\"r\",1,1]]", 2, "missing `]`"),
            ("[\n{\"type\":\"invoke\",\"f\":\"read\",\"process\":0}]", 2, "not a transaction"),
            ("[\n{\"type\":\"ok\",\"process\":0,\"value\":[[\"w\",1,\"a\"]]}]", 2, "64-bit integer"),
            ("[\n{\"type\":\"ok\",\"process\":0,\"value\":[]}\n\n{}]", 4, "expected `,`"),
            ("[\n{\"type\":\"ok\",\n\"process\":0,\n\"value\":[]x}]", 4, "expected"),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }
}
