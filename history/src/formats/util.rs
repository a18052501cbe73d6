//! Helpers shared by the importers: reading files, locating errors, the
//! "value 0 is the initial value" convention, and transaction ids.

use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::ParseError;
use crate::model::{Key, Op, Status, Txn};

/// Opens a history file, an error naming it when it cannot be.
pub(crate) fn open(path: &Path) -> Result<std::fs::File, ParseError> {
    std::fs::File::open(path).map_err(|e| ParseError::io(Some(path), e))
}

/// Reads `into.len()` bytes, or all that is left; the bytes read.
pub(crate) fn read_up_to<R: std::io::Read>(
    input: &mut R,
    into: &mut [u8],
) -> std::io::Result<usize> {
    let mut got = 0;
    while got < into.len() {
        match input.read(&mut into[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Checks that `bytes` are UTF-8, naming the line of the first bad byte.
pub(crate) fn utf8<'a>(bytes: &'a [u8], path: Option<&Path>) -> Result<&'a str, ParseError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        ParseError::at(
            path,
            line_of(&bytes[..at], at),
            format!("invalid UTF-8 at byte {at}: this is not a text file"),
        )
    })
}

/// The 1-based line of byte `offset` of `bytes`.
pub(crate) fn line_of(bytes: &[u8], offset: usize) -> usize {
    let end = offset.min(bytes.len());
    1 + bytes[..end].iter().filter(|&&b| b == b'\n').count()
}

/// A decimal integer of plain digits and an optional `-`, as generated
/// files write them; `None` for anything else (the caller's general parser
/// then decides).
pub(crate) fn int(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    Some(if neg { -v } else { v })
}

/// At most the first 60 characters of `s`, for quoting input in a one-line
/// error message.
pub(crate) fn snippet(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// A serde_json error message without serde_json's own " at line L column C"
/// (the caller gives the line in the file).
pub(crate) fn json_message(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => &msg,
    };
    plain_json_message(msg)
}

/// A Rust type name in a serde message, in the user's terms.
fn plain_type(expected: &str) -> Option<&'static str> {
    Some(match expected {
        "i64" | "i32" | "i128" => "a 64-bit integer",
        "u64" | "u32" | "usize" | "u128" => "a non-negative 64-bit integer",
        "a borrowed string" | "a string" => "a string",
        "f64" | "f32" => "a number",
        "a boolean" | "bool" => "true or false",
        _ => return None,
    })
}

/// A serde_json message (without its position) in the user's terms:
/// `invalid type: floating point `1e+29`, expected i64` becomes
/// `value 1e+29 is not a 64-bit integer`, `recursion limit exceeded`
/// `nesting too deep`, and Rust type names become words.
pub(crate) fn plain_json_message(msg: &str) -> String {
    if msg.starts_with("recursion limit exceeded") {
        return "nesting too deep: more than 128 levels of brackets".into();
    }
    if msg.starts_with("number out of range") {
        return "a number is out of range (too large for a 64-bit float)".into();
    }
    let value_and_expected = |prefix: &str| {
        msg.strip_prefix(prefix)
            .and_then(|rest| rest.split_once("`, expected "))
    };
    if let Some((v, expected)) = value_and_expected("invalid type: floating point `")
        .or_else(|| value_and_expected("invalid value: integer `"))
    {
        let integer = expected.contains("integer")
            || matches!(
                expected,
                "i64" | "i32" | "u64" | "u32" | "usize" | "i128" | "u128"
            );
        if integer {
            let what = if expected.starts_with('u') || expected.contains("non-negative") {
                "a non-negative 64-bit integer"
            } else {
                "a 64-bit integer"
            };
            return format!("value {v} is not {what}");
        }
    }
    if let Some((found, expected)) = msg
        .strip_prefix("invalid type: ")
        .and_then(|rest| rest.split_once(", expected "))
    {
        let expected = plain_type(expected).unwrap_or(expected);
        return format!("found {found} where {expected} was expected");
    }
    msg.to_string()
}

/// The convention of PolySI, Plume, dbcop and TimeKiller: every key starts
/// at value `0`, written by an implicit initial transaction. A read of `0`
/// on a key that no committed (or unknown) transaction writes `0` to is a
/// read of the initial state, `None` in our model. Where some transaction
/// does write `0` to the key, the read stays `Some(0)` and names that writer.
pub(crate) fn zero_reads_to_initial(txns: &mut [Txn]) {
    let mut zero_written: FxHashSet<Key> = FxHashSet::default();
    for t in txns.iter().filter(|t| t.status != Status::Fail) {
        for op in &t.ops {
            if let Some((k, 0)) = op.written() {
                zero_written.insert(k.clone());
            }
        }
    }
    for t in txns.iter_mut() {
        for op in &mut t.ops {
            if let Op::Read { key, value } = op {
                if *value == Some(0) && !zero_written.contains(key) {
                    *value = None;
                }
            }
        }
    }
}

/// Sets transaction ids: the source's ids when every transaction has one and
/// they are unique (so reports name the source's transactions), otherwise
/// 0, 1, 2, ... in history order.
pub(crate) fn assign_ids(txns: &mut [Txn], source: &[Option<u64>]) {
    debug_assert_eq!(txns.len(), source.len());
    let mut seen: FxHashMap<u64, ()> = FxHashMap::default();
    seen.reserve(source.len());
    let unique = source
        .iter()
        .all(|id| matches!(id, Some(v) if seen.insert(*v, ()).is_none()));
    for (i, t) in txns.iter_mut().enumerate() {
        t.id = if unique {
            source[i].unwrap_or(i as u64)
        } else {
            i as u64
        };
    }
}

/// Runs a streaming exporter into memory: what each format's `to_string` is.
pub(crate) fn write_to_string(
    h: &crate::model::History,
    write: impl FnOnce(&crate::model::History, &mut Vec<u8>) -> Result<(), super::ExportError>,
) -> Result<String, super::ExportError> {
    let mut buf = Vec::new();
    write(h, &mut buf)?;
    Ok(String::from_utf8(buf).expect("every exporter writes UTF-8"))
}

/// Opens `path` and hands it to a format's streaming reader, which names
/// the file in its errors.
pub(crate) fn read_path<F>(path: &Path, read: F) -> Result<crate::model::History, ParseError>
where
    F: FnOnce(std::fs::File, Option<&Path>) -> Result<crate::model::History, ParseError>,
{
    read(open(path)?, Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_read_as_plain_words() {
        for (msg, want) in [
            (
                "invalid type: floating point `1e+29`, expected i64",
                "value 1e+29 is not a 64-bit integer",
            ),
            (
                "invalid value: integer `-1`, expected u64",
                "value -1 is not a non-negative 64-bit integer",
            ),
            (
                "invalid value: integer `18446744073709551615`, expected i64",
                "value 18446744073709551615 is not a 64-bit integer",
            ),
            (
                "recursion limit exceeded",
                "nesting too deep: more than 128 levels of brackets",
            ),
            (
                "invalid type: string \"x\", expected a borrowed string",
                "found string \"x\" where a string was expected",
            ),
            (
                "invalid type: string \"x\", expected i64",
                "found string \"x\" where a 64-bit integer was expected",
            ),
            ("missing field `ops`", "missing field `ops`"),
        ] {
            assert_eq!(plain_json_message(msg), want, "{msg}");
        }
    }

    #[test]
    fn ids_fall_back_to_order_when_not_unique() {
        let mut t = vec![
            Txn::new(0, 0, Status::Ok, vec![]),
            Txn::new(0, 0, Status::Ok, vec![]),
        ];
        assign_ids(&mut t, &[Some(5), Some(7)]);
        assert_eq!((t[0].id, t[1].id), (5, 7));
        assign_ids(&mut t, &[Some(5), Some(5)]);
        assert_eq!((t[0].id, t[1].id), (0, 1));
        assign_ids(&mut t, &[Some(5), None]);
        assert_eq!((t[0].id, t[1].id), (0, 1));
    }
}
