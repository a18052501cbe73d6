//! dbcop's JSON histories: what current dbcop (`dbcop generate`, 0.2,
//! github.com/rnbguy/dbcop) writes, one file per history (`0.json`,
//! `1.json`, ...), and the bare sessions array its WASM API takes.
//!
//! ```text
//! {"params": {"id": 0, "n_node": 2, "n_variable": 3, "n_transaction": 2, "n_event": 2},
//!  "info": "generated", "start": "2025-...", "end": "2025-...",
//!  "data": [                                  sessions
//!    [                                        a session: its transactions
//!      {"events": [{"Write": {"variable": 0, "version": 1}},
//!                  {"Read": {"variable": 1, "version": null}}],
//!       "committed": true}]]}
//! ```
//!
//! `data` may also be the whole file (`[[{"events": ...}]]`). An event is
//! `{"Read": {"variable": V, "version": V or null}}`,
//! `{"Write": {"variable": V, "version": V}}`, or dbcop's compact
//! `["r", V, V or null]` / `["w", V, V]`; variables and versions are
//! non-negative integers below 2^63. `params`, `info`, `start` and `end`
//! are not kept. The mapping to transactions is the bincode reader's
//! ([`super::dbcop`]): the same [`push_txn`] and [`finish`].

use std::path::Path;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::dbcop::{finish, push_txn, Event};
use super::util::json_message;
use crate::error::ParseError;
use crate::model::History;

/// A dbcop variable or version: a `u64` that must fit an `i64`.
struct Val(i64);

impl<'de> Deserialize<'de> for Val {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Val, D::Error> {
        let v = u64::deserialize(d)?;
        i64::try_from(v)
            .map(Val)
            .map_err(|_| de::Error::custom(format!("{v} does not fit in 63 bits")))
    }
}

/// The tagged form: `{"Read": {...}}` / `{"Write": {...}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
enum Tagged {
    Read { variable: Val, version: Option<Val> },
    Write { variable: Val, version: Val },
}

/// Either form of an event, as dbcop reads them.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "an event: {\"Read\": {\"variable\": V, \"version\": V or null}}, {\"Write\": {\"variable\": V, \"version\": V}}, [\"r\", V, V or null] or [\"w\", V, V], with V a non-negative integer below 2^63"
)]
enum RawEvent {
    Tagged(Tagged),
    Compact(char, Val, Option<Val>),
}

struct JsonEvent(Event);

impl<'de> Deserialize<'de> for JsonEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonEvent, D::Error> {
        let (write, key, value) = match RawEvent::deserialize(d)? {
            RawEvent::Tagged(Tagged::Read { variable, version }) => {
                (false, variable, version.map(|v| v.0))
            }
            RawEvent::Tagged(Tagged::Write { variable, version }) => {
                (true, variable, Some(version.0))
            }
            RawEvent::Compact('r', variable, version) => (false, variable, version.map(|v| v.0)),
            RawEvent::Compact('w', variable, Some(version)) => (true, variable, Some(version.0)),
            RawEvent::Compact('w', _, None) => {
                return Err(de::Error::custom("a write [\"w\", V, null] has no version"))
            }
            RawEvent::Compact(other, _, _) => {
                return Err(de::Error::custom(format!(
                    "an event's tag is {other:?}, expected \"r\" or \"w\""
                )))
            }
        };
        Ok(JsonEvent(Event {
            write,
            key: key.0,
            value,
            success: true,
        }))
    }
}

#[derive(Deserialize)]
struct JsonTxn {
    events: Vec<JsonEvent>,
    committed: bool,
}

type Sessions = Vec<Vec<JsonTxn>>;

/// What `dbcop generate` writes; only `data` is kept.
#[derive(Deserialize)]
struct Wrapped {
    data: Sessions,
}

/// Parses a dbcop JSON history: the object `dbcop generate` writes, or a
/// bare array of sessions.
pub(crate) fn parse(bytes: &[u8], path: Option<&Path>) -> Result<History, ParseError> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let first = bytes.iter().find(|c| !c.is_ascii_whitespace());
    let sessions = match first {
        Some(b'{') => serde_json::from_slice::<Wrapped>(bytes).map(|w| w.data),
        Some(b'[') => serde_json::from_slice::<Sessions>(bytes),
        _ => return Err(ParseError::whole(
            path,
            "a dbcop JSON history is an object with a \"data\" array of sessions, or that array",
        )),
    }
    .map_err(|e| {
        ParseError::at(
            path,
            e.line().max(1),
            format!("column {}: {}", e.column(), json_message(&e)),
        )
    })?;
    let mut txns = Vec::with_capacity(sessions.iter().map(Vec::len).sum());
    for (s, session) in sessions.into_iter().enumerate() {
        for t in session {
            push_txn(
                &mut txns,
                s as u64,
                t.events.into_iter().map(|e| e.0),
                t.committed,
            );
        }
    }
    Ok(finish(txns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Key, Op, Status};

    #[test]
    fn reads_generate_output_and_bare_sessions() {
        let wrapped = br#"{
  "params": {"id": 0, "n_node": 2, "n_variable": 2, "n_transaction": 1, "n_event": 2},
  "info": "generated",
  "start": "2025-01-01T00:00:00+00:00",
  "end": "2025-01-01T00:00:00+00:00",
  "data": [
    [{"events": [{"Write": {"variable": 0, "version": 0}}, {"Write": {"variable": 1, "version": 0}}], "committed": true},
     {"events": [{"Read": {"variable": 0, "version": 0}}, {"Write": {"variable": 1, "version": 1}}], "committed": true}],
    [{"events": [["r", 1, 1], ["w", 0, 1], ["r", 5, null]], "committed": false}]
  ]
}"#;
        let h = parse(wrapped, None).unwrap();
        assert_eq!(h.txns.len(), 3);
        assert_eq!((h.txns[1].session, h.txns[1].status), (0, Status::Ok));
        // Version 0 is written by the init transaction, so a read of it
        // names that write.
        assert_eq!(h.txns[1].ops[0], Op::read(0, Some(0)));
        assert_eq!((h.txns[2].session, h.txns[2].status), (1, Status::Fail));
        assert_eq!(
            h.txns[2].ops,
            vec![
                Op::read(1, Some(1)),
                Op::Write {
                    key: Key::Int(0),
                    value: 1
                },
                Op::read(5, None)
            ]
        );
        let bare =
            br#"[[{"events": [{"Read": {"variable": 3, "version": 0}}], "committed": true}]]"#;
        let h = parse(bare, None).unwrap();
        // No write of 0: a read of the initial state.
        assert_eq!(h.txns[0].ops, vec![Op::read(3, None)]);
    }

    #[test]
    fn errors_name_the_line() {
        let cases: [(&[u8], usize, &str); 5] = [
            (
                b"{\"params\": {},\n\"info\": \"x\"}",
                2,
                "missing field `data`",
            ),
            (
                b"[[{\"events\": [\n{\"Read\": {\"version\": 1}}], \"committed\": true}]]",
                2,
                "an event",
            ),
            (
                b"[[{\"events\": [\n[\"x\", 1, 1]], \"committed\": true}]]",
                2,
                "tag",
            ),
            (
                b"[[{\"events\": [\n[\"w\", 1, 9223372036854775808]], \"committed\": true}]]",
                2,
                "an event",
            ),
            (b"[[{\"events\": []\n}]]", 2, "missing field `committed`"),
        ];
        for (input, line, want) in cases {
            let e = parse(input, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(e.message.contains(want), "{e}");
        }
    }
}
