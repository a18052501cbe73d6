//! The native history format: JSON Lines, version 1 (docs/history-format.md).
//!
//! One JSON object per line. Lines with a `type` are `header`, `fault` or
//! `end`; every other line is a transaction. The writer emits each line with
//! a single `write` call, so a harness killed at any instant leaves a file of
//! whole lines; the reader streams, one line at a time, and names the line
//! of anything it cannot accept.
//!
//! A transaction line has `id`, `session`, `status`, `start`, `end`, `ops`,
//! and optionally `kind`, `error`, `dbts`, and `node`: the cluster node
//! that served it (`"galera-2"`), written only by runs routed over a
//! cluster's nodes (`harness run --cluster`, `--read-url`).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ParseError;
use crate::jsonl_fast::Kept;
use crate::model::{DbTs, End, Fault, Header, History, Key, Op, Status, Txn, Value};

/// The history format version this crate reads and writes.
pub const VERSION: u32 = 1;

// ---------------------------------------------------------------- ops ----

impl Serialize for Op {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Op::Read { key, value } => ("r", key, value).serialize(s),
            Op::Write { key, value } => ("w", key, value).serialize(s),
            Op::Insert { key, value } => ("i", key, value).serialize(s),
            Op::Delete { key, value } => ("d", key, value).serialize(s),
            Op::Append { key, value } => ("a", key, value).serialize(s),
            Op::ReadList { key, values } => ("r", key, values).serialize(s),
            Op::RangeRead { lo, hi, rows } => {
                let mut seq = s.serialize_seq(Some(4))?;
                seq.serialize_element("rq")?;
                seq.serialize_element(lo)?;
                seq.serialize_element(hi)?;
                seq.serialize_element(rows)?;
                seq.end()
            }
        }
    }
}

/// A read's result: absent, a register value, or a list.
enum ReadResult {
    Absent,
    One(Value),
    List(Vec<Value>),
}

impl<'de> Deserialize<'de> for ReadResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ReadResult;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("null, an integer, or a list of integers")
            }
            fn visit_unit<E: de::Error>(self) -> Result<ReadResult, E> {
                Ok(ReadResult::Absent)
            }
            fn visit_none<E: de::Error>(self) -> Result<ReadResult, E> {
                Ok(ReadResult::Absent)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ReadResult, E> {
                Ok(ReadResult::One(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ReadResult, E> {
                i64::try_from(v)
                    .map(ReadResult::One)
                    .map_err(|_| E::custom("value out of range"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<ReadResult, A::Error> {
                let mut out = Vec::with_capacity(a.size_hint().unwrap_or(4));
                while let Some(v) = a.next_element::<Value>()? {
                    out.push(v);
                }
                Ok(ReadResult::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Op, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Op;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an op such as [\"r\", key, value] or [\"w\", key, value]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Op, A::Error> {
                let code: Cow<'de, str> = a
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("empty op"))?;
                let missing =
                    |what: &str| de::Error::custom(format!("op {code:?} lacks its {what}"));
                let op = match code.as_ref() {
                    "r" => {
                        let key: Key = a.next_element()?.ok_or_else(|| missing("key"))?;
                        let v: ReadResult = a.next_element()?.ok_or_else(|| missing("value"))?;
                        match v {
                            ReadResult::Absent => Op::Read { key, value: None },
                            ReadResult::One(v) => Op::Read {
                                key,
                                value: Some(v),
                            },
                            ReadResult::List(vs) => Op::ReadList {
                                key,
                                values: Some(vs),
                            },
                        }
                    }
                    "w" | "i" | "d" | "a" => {
                        let key: Key = a.next_element()?.ok_or_else(|| missing("key"))?;
                        let value: Value = a.next_element()?.ok_or_else(|| missing("value"))?;
                        match code.as_ref() {
                            "w" => Op::Write { key, value },
                            "i" => Op::Insert { key, value },
                            "d" => Op::Delete { key, value },
                            _ => Op::Append { key, value },
                        }
                    }
                    "rq" => {
                        let lo: Key = a.next_element()?.ok_or_else(|| missing("low key"))?;
                        let hi: Key = a.next_element()?.ok_or_else(|| missing("high key"))?;
                        let rows: Vec<(Key, Value)> =
                            a.next_element()?.ok_or_else(|| missing("rows"))?;
                        Op::RangeRead {
                            lo,
                            hi,
                            rows: Box::new(rows),
                        }
                    }
                    other => {
                        return Err(de::Error::custom(format!(
                            "unknown op {other:?} (expected r, w, i, d, rq or a)"
                        )))
                    }
                };
                if a.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(format!(
                        "op {code:?} has too many fields"
                    )));
                }
                Ok(op)
            }
        }
        d.deserialize_seq(V)
    }
}

// -------------------------------------------------------------- lines ----

/// One line of a history file.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// Boxed: a header is one line of a million, and a record as large
    /// as it would be copied with every transaction line.
    Header(Box<Header>),
    Txn(Txn),
    Fault(Fault),
    End(End),
}

/// Every field any line may carry; which ones must be present depends on
/// `type`. Parsing into one flat struct keeps the hot path to one pass.
#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
    // transaction
    id: Option<u64>,
    session: Option<u64>,
    status: Option<Status>,
    start: Option<u64>,
    end: Option<u64>,
    ops: Option<Vec<Op>>,
    error: Option<String>,
    dbts: Option<DbTs>,
    kind: Option<String>,
    node: Option<String>,
    // header
    version: Option<u32>,
    db: Option<String>,
    level: Option<String>,
    isolation: Option<String>,
    workload: Option<String>,
    seed: Option<u64>,
    clients: Option<u64>,
    started: Option<String>,
    server: Option<String>,
    settings: Option<Vec<String>>,
    // fault
    target: Option<String>,
    applied: Option<bool>,
    detail: Option<String>,
    // end
    txns: Option<u64>,
    finished: Option<String>,
}

fn required<T>(v: Option<T>, field: &str, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{what} line lacks the field `{field}`"))
}

/// [`parse_line`], with transaction lines of the usual shape read by the
/// fast scanner (several times quicker): for a reader that takes lines one
/// by one, such as one following a file as it is written.
pub fn parse_line_fast(line: &str) -> Result<Option<Record>, String> {
    let bytes = line.trim_end_matches('\r').as_bytes();
    if bytes.first() == Some(&b'{') {
        if let Some(t) = crate::jsonl_fast::parse_txn(bytes) {
            return Ok(Some(Record::Txn(t)));
        }
    }
    parse_line(line)
}

/// [`parse_line_fast`] for a check, keeping what [`Kept::Check`] keeps
/// when the fast path takes the line. Every line is
/// accepted or refused as [`parse_line`] would.
pub fn parse_line_for_check(line: &str) -> Result<Option<Record>, String> {
    let bytes = line.trim_end_matches('\r').as_bytes();
    if bytes.first() == Some(&b'{') {
        if let Some(t) = crate::jsonl_fast::parse_txn_kept(bytes, crate::jsonl_fast::Kept::Check) {
            return Ok(Some(Record::Txn(t)));
        }
    }
    parse_line(line)
}

/// Parses one line (without its newline). Blank lines give `Ok(None)`.
pub fn parse_line(line: &str) -> Result<Option<Record>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let first = line
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .next();
    if first != Some('{') {
        return Err(format!(
            "expected a JSON object ({{...}}) on each line, found {}",
            crate::formats::util::snippet(line.trim())
        ));
    }
    let raw: RawLine = serde_json::from_str(line).map_err(|e| {
        let msg = e.to_string();
        // serde_json appends " at line 1 column N"; the line is ours to give.
        match msg.rfind(" at line ") {
            Some(i) => format!(
                "{} (column {})",
                crate::formats::util::plain_json_message(&msg[..i]),
                e.column()
            ),
            None => crate::formats::util::plain_json_message(&msg),
        }
    })?;
    let rec = match raw.ty.as_deref() {
        None => {
            let t = Txn {
                id: required(raw.id, "id", "transaction")?,
                session: required(raw.session, "session", "transaction")?,
                status: required(raw.status, "status", "transaction")?,
                start: raw.start,
                end: raw.end,
                ops: required(raw.ops, "ops", "transaction")?,
                error: raw.error.map(Into::into),
                dbts: raw.dbts,
                kind: raw.kind.map(Into::into),
                node: raw.node.map(Into::into),
            };
            if let (Some(s), Some(e)) = (t.start, t.end) {
                if e < s {
                    return Err(format!("transaction {} ends ({e}) before it starts ({s})", t.id));
                }
            }
            Record::Txn(t)
        }
        Some("header") => {
            let version = required(raw.version, "version", "header")?;
            if version != VERSION {
                return Err(format!(
                    "history format version {version} is not supported (this harness reads version {VERSION})"
                ));
            }
            Record::Header(Box::new(Header {
                version,
                db: raw.db,
                level: raw.level,
                isolation: raw.isolation,
                workload: raw.workload,
                seed: raw.seed,
                clients: raw.clients,
                started: raw.started,
                server: raw.server,
                settings: raw.settings.unwrap_or_default(),
            }))
        }
        Some("fault") => Record::Fault(Fault {
            kind: required(raw.kind, "kind", "fault")?,
            target: raw.target,
            start: required(raw.start, "start", "fault")?,
            end: raw.end,
            applied: raw.applied.unwrap_or(true),
            detail: raw.detail,
        }),
        Some("end") => Record::End(End {
            txns: required(raw.txns, "txns", "end")?,
            finished: raw.finished,
        }),
        Some(other) => {
            return Err(format!(
                "unknown line type {other:?} (expected header, fault or end, or no type for a transaction)"
            ))
        }
    };
    Ok(Some(rec))
}

/// Streams the records of a history, one line at a time, so a file of any
/// size can be scanned in constant memory.
pub struct JsonlReader<R> {
    input: R,
    path: Option<PathBuf>,
    line_no: usize,
    buf: String,
    done: bool,
}

impl JsonlReader<BufReader<File>> {
    /// Opens a history file.
    pub fn open(path: &Path) -> Result<Self, ParseError> {
        let f = crate::formats::util::open(path)?;
        Ok(JsonlReader::new(BufReader::with_capacity(1 << 16, f)).with_path(path))
    }
}

impl<R: BufRead> JsonlReader<R> {
    /// A reader over any buffered input.
    pub fn new(input: R) -> Self {
        JsonlReader {
            input,
            path: None,
            line_no: 0,
            buf: String::new(),
            done: false,
        }
    }

    /// Names the file in error messages.
    pub fn with_path(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The number of the line last read (1-based).
    pub fn line(&self) -> usize {
        self.line_no
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Result<(usize, Record), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    let msg = if e.kind() == io::ErrorKind::InvalidData {
                        "the line is not valid UTF-8".to_string()
                    } else {
                        e.to_string()
                    };
                    return Some(Err(ParseError::at(
                        self.path.as_deref(),
                        self.line_no + 1,
                        msg,
                    )));
                }
            }
            self.line_no += 1;
            let cut = !self.buf.ends_with('\n');
            let line = self.buf.trim_end_matches(['\n', '\r']);
            match parse_line(line) {
                Ok(None) => continue,
                Ok(Some(rec)) => return Some(Ok((self.line_no, rec))),
                // The last line of a run killed outright (or of a machine
                // that lost power) can be cut mid-record: what came before
                // it is the history, without its end line.
                Err(_) if cut && self.line_no > 1 && cut_short(line) => {
                    self.done = true;
                    return None;
                }
                Err(msg) => {
                    return Some(Err(ParseError::at(self.path.as_deref(), self.line_no, msg)))
                }
            }
        }
        None
    }
}

/// True when `line` is the start of a JSON object that ends too soon.
fn cut_short(line: &str) -> bool {
    line.starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(line)
            .err()
            .is_some_and(|e| e.is_eof())
}

/// What one line of a block gave.
enum Parsed {
    Rec(Record),
    Err(String),
    /// The file's last line, cut mid-record: the history ends before it.
    Cut,
}

/// Parses the lines of one block (on a thread of its own), as
/// [`JsonlReader`] would: the fast path for ordinary transaction lines,
/// the general parser for everything else. Stops at the first error.
fn parse_chunk(
    chunk: crate::blocks::Chunk<'_>,
    kept: Kept,
    out: Vec<(usize, Parsed)>,
) -> (usize, Vec<(usize, Parsed)>) {
    (chunk.bytes.len(), parse_lines(chunk, kept, out))
}

/// The lines of `chunk`, parsed into `out` (emptied first: a vector an
/// earlier block used, whose memory is already the process's).
fn parse_lines(
    chunk: crate::blocks::Chunk<'_>,
    kept: Kept,
    mut out: Vec<(usize, Parsed)>,
) -> Vec<(usize, Parsed)> {
    out.clear();
    out.reserve(chunk.bytes.len() / 128);
    for (no, bytes, cut) in chunk.lines() {
        let mut bytes = bytes;
        while let [rest @ .., b'\r'] = bytes {
            bytes = rest;
        }
        if bytes.first() == Some(&b'{') {
            if let Some(t) = crate::jsonl_fast::parse_txn_kept(bytes, kept) {
                out.push((no, Parsed::Rec(Record::Txn(t))));
                continue;
            }
        }
        let Ok(line) = std::str::from_utf8(bytes) else {
            out.push((no, Parsed::Err("the line is not valid UTF-8".into())));
            return out;
        };
        match parse_line(line) {
            Ok(None) => {}
            Ok(Some(rec)) => out.push((no, Parsed::Rec(rec))),
            // The last line of a run killed outright (or of a machine that
            // lost power) can be cut mid-record: what came before it is the
            // history, without its end line.
            Err(_) if cut && no > 1 && cut_short(line) => {
                out.push((no, Parsed::Cut));
                return out;
            }
            Err(msg) => {
                out.push((no, Parsed::Err(msg)));
                return out;
            }
        }
    }
    out
}

/// Builds a history from its records in file order, checking what one line
/// cannot show on its own: one header, first; unique transaction ids;
/// nothing after `end`.
struct Builder<'p> {
    path: Option<&'p Path>,
    h: History,
    seen_any: bool,
    /// The largest id so far: ids that only grow need no lookup.
    max_id: Option<u64>,
    /// Every id so far and its line, built when an id does not grow.
    ids: Option<FxHashMap<u64, usize>>,
    /// The line of each transaction, for the message about a repeated id.
    lines: Vec<usize>,
}

impl Builder<'_> {
    fn take(&mut self, line: usize, rec: Record) -> Result<(), ParseError> {
        let path = self.path;
        let err = |msg: String| ParseError::at(path, line, msg);
        let h = &mut self.h;
        if h.end.is_some() {
            return Err(err("a line follows the end line".into()));
        }
        match rec {
            Record::Header(hd) => {
                if self.seen_any {
                    return Err(err("the header must be the first line".into()));
                }
                h.header = Some(*hd);
            }
            Record::Txn(t) => {
                let grows = self.max_id.is_none_or(|m| t.id > m);
                if !grows && self.ids.is_none() {
                    let ids = h.txns.iter().map(|t| t.id).zip(self.lines.iter().copied());
                    self.ids = Some(ids.collect());
                }
                if let Some(ids) = &mut self.ids {
                    if let Some(first) = ids.insert(t.id, line) {
                        return Err(err(format!(
                            "transaction id {} is used twice (first on line {first})",
                            t.id
                        )));
                    }
                }
                self.max_id = Some(self.max_id.map_or(t.id, |m| m.max(t.id)));
                self.lines.push(line);
                h.txns.push(t);
            }
            Record::Fault(f) => h.faults.push(f),
            Record::End(e) => {
                // A file cut short, or edited, no longer matches its end
                // line: what is missing cannot be checked.
                if e.txns != h.txns.len() as u64 {
                    return Err(err(format!(
                        "the end line says the history has {} transactions, but {} precede it \
                         (a truncated or edited file?)",
                        e.txns,
                        h.txns.len()
                    )));
                }
                h.end = Some(e);
            }
        }
        self.seen_any = true;
        Ok(())
    }
}

/// Reads a whole history from JSONL, checking what one line cannot show on
/// its own: one header, first; unique transaction ids; nothing after `end`.
/// Streams: blocks of lines are parsed on both cores and the file is never
/// held whole.
pub fn read_jsonl<R: BufRead>(input: R, path: Option<&Path>) -> Result<History, ParseError> {
    read_jsonl_counting(input, path, None, &|_| {}, Kept::All)
}

/// [`read_jsonl`], keeping `kept` of each transaction (a decompressed
/// file, whose size is not known).
pub(crate) fn read_jsonl_from<R: Read>(
    input: R,
    path: Option<&Path>,
    kept: Kept,
) -> Result<History, ParseError> {
    read_jsonl_counting(input, path, None, &|_| {}, kept)
}

/// [`read_jsonl`] of an input of `size` bytes (when known), telling
/// `on_bytes` of each read.
fn read_jsonl_counting<R: Read>(
    input: R,
    path: Option<&Path>,
    size: Option<u64>,
    on_bytes: &dyn Fn(u64),
    kept: Kept,
) -> Result<History, ParseError> {
    let mut b = Builder {
        path,
        h: History::default(),
        seen_any: false,
        max_id: None,
        ids: None,
        lines: Vec::new(),
    };
    let mut failed: Option<ParseError> = None;
    // Each block's results go into a vector an earlier block's went into:
    // a fresh one for every block is memory faulted in again and again.
    let spare: std::sync::Mutex<Vec<Vec<(usize, Parsed)>>> = Default::default();
    let parse = |chunk: crate::blocks::Chunk<'_>| {
        let out = spare
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default();
        parse_chunk(chunk, kept, out)
    };
    crate::blocks::for_each_block(input, on_bytes, parse, |(bytes, mut items)| {
        // Room for all the transactions at once, guessed from the first
        // block's lines per byte: growing a vector of a million
        // transactions by doubling copies it over and over.
        if let Some(size) = size.filter(|_| b.h.txns.capacity() == 0 && bytes > 0) {
            let guess = size as f64 * items.len() as f64 / bytes as f64 * 1.05;
            b.h.txns.reserve(guess as usize);
            b.lines.reserve(guess as usize);
        }
        for (line, p) in items.drain(..) {
            let res = match p {
                Parsed::Rec(rec) => b.take(line, rec),
                Parsed::Err(msg) => Err(ParseError::at(path, line, msg)),
                Parsed::Cut => return false,
            };
            if let Err(e) = res {
                failed = Some(e);
                return false;
            }
        }
        if let Ok(mut s) = spare.lock() {
            s.push(items);
        }
        true
    })
    .map_err(|e| ParseError::io(path, e))?;
    match failed {
        Some(e) => Err(e),
        None => Ok(b.h),
    }
}

/// Reads a JSONL history file.
pub fn read_jsonl_file(path: &Path) -> Result<History, ParseError> {
    read_jsonl_file_counting(path, &|_| {})
}

/// [`read_jsonl_file`], telling `on_bytes` how many bytes of the file each
/// read returned (for a progress bar).
pub fn read_jsonl_file_counting(
    path: &Path,
    on_bytes: &dyn Fn(u64),
) -> Result<History, ParseError> {
    read_jsonl_file_kept(path, on_bytes, Kept::All)
}

/// [`read_jsonl_file_counting`], keeping `kept` of each transaction.
pub fn read_jsonl_file_kept(
    path: &Path,
    on_bytes: &dyn Fn(u64),
    kept: Kept,
) -> Result<History, ParseError> {
    let f = crate::formats::util::open(path)?;
    let size = f.metadata().ok().map(|m| m.len());
    read_jsonl_counting(f, Some(path), size, on_bytes, kept)
}

/// Reads JSONL from a string (tests, small tools).
pub fn read_jsonl_str(s: &str) -> Result<History, ParseError> {
    read_jsonl(s.as_bytes(), None)
}

// ------------------------------------------------------------- writer ----

/// A transaction's line, written by hand: the bytes serde would write
/// (the tests hold the two to each other), without serde's per-field
/// dispatch, since a recorded run and `convert` write millions of them. Strings go through
/// serde_json for its escaping; list and range reads, rare, wholly.
fn txn_line(out: &mut Vec<u8>, t: &Txn) -> io::Result<()> {
    fn int(out: &mut Vec<u8>, n: impl itoa::Integer) {
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }
    fn opt(out: &mut Vec<u8>, n: Option<impl itoa::Integer>) {
        match n {
            Some(n) => int(out, n),
            None => out.extend_from_slice(b"null"),
        }
    }
    fn text(out: &mut Vec<u8>, s: &str) -> io::Result<()> {
        serde_json::to_writer(&mut *out, s).map_err(io::Error::other)
    }
    fn key(out: &mut Vec<u8>, k: &Key) -> io::Result<()> {
        match k {
            Key::Int(k) => {
                int(out, *k);
                Ok(())
            }
            Key::Str(s) => text(out, s),
        }
    }
    out.extend_from_slice(b"{\"id\":");
    int(out, t.id);
    out.extend_from_slice(b",\"session\":");
    int(out, t.session);
    out.extend_from_slice(b",\"status\":\"");
    out.extend_from_slice(t.status.as_str().as_bytes());
    out.extend_from_slice(b"\",\"start\":");
    opt(out, t.start);
    out.extend_from_slice(b",\"end\":");
    opt(out, t.end);
    if let Some(kind) = &t.kind {
        out.extend_from_slice(b",\"kind\":");
        text(out, kind)?;
    }
    out.extend_from_slice(b",\"ops\":[");
    for (i, op) in t.ops.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let (name, k, v): (&[u8], _, _) = match op {
            Op::Read { key, value } => (b"[\"r\",", key, *value),
            Op::Write { key, value } => (b"[\"w\",", key, Some(*value)),
            Op::Insert { key, value } => (b"[\"i\",", key, Some(*value)),
            Op::Delete { key, value } => (b"[\"d\",", key, Some(*value)),
            Op::Append { key, value } => (b"[\"a\",", key, Some(*value)),
            Op::ReadList { .. } | Op::RangeRead { .. } => {
                serde_json::to_writer(&mut *out, op).map_err(io::Error::other)?;
                continue;
            }
        };
        out.extend_from_slice(name);
        key(out, k)?;
        out.push(b',');
        opt(out, v);
        out.push(b']');
    }
    out.push(b']');
    if let Some(error) = &t.error {
        out.extend_from_slice(b",\"error\":");
        text(out, error)?;
    }
    if let Some(d) = t.dbts {
        out.extend_from_slice(b",\"dbts\":{\"start\":");
        int(out, d.start);
        if let Some(c) = d.commit {
            out.extend_from_slice(b",\"commit\":");
            int(out, c);
        }
        out.push(b'}');
    }
    if let Some(node) = &t.node {
        out.extend_from_slice(b",\"node\":");
        text(out, node)?;
    }
    out.push(b'}');
    Ok(())
}

#[derive(Serialize)]
struct Typed<'a, T: Serialize> {
    #[serde(rename = "type")]
    ty: &'a str,
    #[serde(flatten)]
    body: &'a T,
}

/// Writes a history as JSON Lines. Each record is one `write_all` of one
/// whole line, so the file never holds half a line after a crash of the
/// writing process.
pub struct JsonlWriter<W: Write> {
    out: W,
    line: Vec<u8>,
    txns: u64,
}

impl JsonlWriter<File> {
    /// Creates (truncates) a history file.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(JsonlWriter::new(File::create(path)?))
    }

    /// Flushes to stable storage (fsync), at the end of a run.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.sync_all()
    }
}

impl<W: Write> JsonlWriter<W> {
    /// A writer over any output.
    pub fn new(out: W) -> Self {
        JsonlWriter {
            out,
            line: Vec::with_capacity(256),
            txns: 0,
        }
    }

    fn emit<T: Serialize>(&mut self, v: &T) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, v).map_err(io::Error::other)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Writes the header line.
    pub fn write_header(&mut self, h: &Header) -> io::Result<()> {
        self.emit(&Typed {
            ty: "header",
            body: h,
        })
    }

    /// Appends one transaction.
    pub fn write_txn(&mut self, t: &Txn) -> io::Result<()> {
        self.txns += 1;
        self.line.clear();
        txn_line(&mut self.line, t)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Appends a fault window.
    pub fn write_fault(&mut self, f: &Fault) -> io::Result<()> {
        self.emit(&Typed {
            ty: "fault",
            body: f,
        })
    }

    /// Writes the end line, which marks the history complete.
    pub fn write_end(&mut self, finished: Option<String>) -> io::Result<()> {
        let e = End {
            txns: self.txns,
            finished,
        };
        self.emit(&Typed {
            ty: "end",
            body: &e,
        })
    }

    /// Pushes buffered bytes to the OS.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The number of transactions written so far.
    pub fn txns_written(&self) -> u64 {
        self.txns
    }

    /// Gives back the output.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes a whole history (header, transactions, faults, end if present).
pub fn write_jsonl<W: Write>(h: &History, out: W) -> io::Result<W> {
    let mut w = JsonlWriter::new(io::BufWriter::new(out));
    if let Some(hd) = &h.header {
        w.write_header(hd)?;
    }
    for t in &h.txns {
        w.write_txn(t)?;
    }
    for f in &h.faults {
        w.write_fault(f)?;
    }
    if let Some(e) = &h.end {
        w.write_end(e.finished.clone())?;
    }
    w.flush()?;
    w.into_inner().into_inner().map_err(|e| e.into_error())
}

/// Writes a whole history to a string.
pub fn to_jsonl_string(h: &History) -> String {
    let bytes = write_jsonl(h, Vec::new()).expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("JSON is UTF-8")
}

/// Reads all of `input` into a string; used by importers that need the whole
/// text.
pub fn read_all(mut input: impl Read, path: Option<&Path>) -> Result<String, ParseError> {
    let mut s = String::new();
    input
        .read_to_string(&mut s)
        .map_err(|e| ParseError::io(path, e))?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What serde writes for a transaction: the oracle of [`txn_line`].
    #[derive(Serialize)]
    struct TxnLine<'a> {
        id: u64,
        session: u64,
        status: Status,
        start: Option<u64>,
        end: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<&'a str>,
        ops: &'a [Op],
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        dbts: Option<DbTs>,
        #[serde(skip_serializing_if = "Option::is_none")]
        node: Option<&'a str>,
    }

    fn by_serde(t: &Txn) -> String {
        serde_json::to_string(&TxnLine {
            id: t.id,
            session: t.session,
            status: t.status,
            start: t.start,
            end: t.end,
            kind: t.kind.as_deref(),
            ops: &t.ops,
            error: t.error.as_deref(),
            dbts: t.dbts,
            node: t.node.as_deref(),
        })
        .unwrap()
    }

    fn by_hand(t: &Txn) -> String {
        let mut out = Vec::new();
        txn_line(&mut out, t).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn key() -> impl Strategy<Value = Key> {
        prop_oneof![
            any::<i64>().prop_map(Key::Int),
            // Quotes, backslashes, control and non-ASCII characters.
            "[a-z\"\\\\\n\t\u{1}é✓]{0,6}".prop_map(|s| Key::str(&s)),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        let v = any::<i64>();
        prop_oneof![
            (key(), proptest::option::of(v)).prop_map(|(key, value)| Op::Read { key, value }),
            (key(), v).prop_map(|(key, value)| Op::Write { key, value }),
            (key(), v).prop_map(|(key, value)| Op::Insert { key, value }),
            (key(), v).prop_map(|(key, value)| Op::Delete { key, value }),
            (key(), v).prop_map(|(key, value)| Op::Append { key, value }),
            (
                key(),
                proptest::option::of(proptest::collection::vec(v, 0..3))
            )
                .prop_map(|(key, values)| Op::ReadList { key, values }),
            (key(), key(), proptest::collection::vec((key(), v), 0..3)).prop_map(
                |(lo, hi, rows)| Op::RangeRead {
                    lo,
                    hi,
                    rows: Box::new(rows)
                }
            ),
        ]
    }

    fn text() -> impl Strategy<Value = Option<Box<str>>> {
        proptest::option::of("[a-z\"\\\\\n é]{0,8}".prop_map(|s| s.into_boxed_str()))
    }

    fn txn() -> impl Strategy<Value = Txn> {
        let status = prop_oneof![Just(Status::Ok), Just(Status::Fail), Just(Status::Info)];
        let dbts = proptest::option::of((any::<u64>(), proptest::option::of(any::<u64>())))
            .prop_map(|d| d.map(|(start, commit)| DbTs { start, commit }));
        // An end before the start is refused by the reader.
        let times = (
            proptest::option::of(0..u64::MAX / 2),
            proptest::option::of(0..u64::MAX / 2),
        )
            .prop_map(|(start, took)| (start, took.map(|d| d + start.unwrap_or(0))));
        (
            (any::<u64>(), any::<u64>(), status, times),
            proptest::collection::vec(op(), 0..5),
            (text(), text(), text(), dbts),
        )
            .prop_map(
                |((id, session, status, (start, end)), ops, (kind, error, node, dbts))| Txn {
                    id,
                    session,
                    status,
                    start,
                    end,
                    ops,
                    error,
                    dbts,
                    kind,
                    node,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The hand-written line is serde's, byte for byte, and reads back
        /// as itself (as bytes: a list read of nothing is written as a
        /// register read of nothing, `["r",k,null]`, either way).
        #[test]
        fn a_txn_line_is_what_serde_writes(t in txn()) {
            let line = by_hand(&t);
            prop_assert_eq!(&line, &by_serde(&t));
            let back = read_jsonl_str(&format!("{line}\n")).unwrap();
            prop_assert_eq!(by_hand(&back.txns[0]), line);
        }
    }

    #[test]
    fn a_last_line_cut_mid_record_ends_the_history() {
        let text =
            "{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[[\"w\",1,1]]}\n{\"id\":1,\"ses";
        let h = read_jsonl_str(text).expect("the cut line is dropped");
        assert_eq!(h.txns.len(), 1);
        assert!(h.end.is_none());
        // A broken line that ends with a newline is still an error.
        let broken = "{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[]}\n{\"id\":1,\"ses\n";
        assert!(read_jsonl_str(broken).is_err());
    }

    #[test]
    fn round_trips_every_op_kind() {
        let mut t = Txn::new(
            3,
            1,
            Status::Info,
            vec![
                Op::Read {
                    key: Key::str("x1"),
                    value: None,
                },
                Op::Read {
                    key: Key::Int(2),
                    value: Some(5),
                },
                Op::Write {
                    key: Key::Int(2),
                    value: 12884901889,
                },
                Op::Insert {
                    key: Key::Int(3),
                    value: 7,
                },
                Op::Delete {
                    key: Key::Int(3),
                    value: 8,
                },
                Op::RangeRead {
                    lo: Key::Int(1),
                    hi: Key::Int(4),
                    rows: Box::new(vec![(Key::Int(2), 12884901889)]),
                },
                Op::Append {
                    key: Key::str("l"),
                    value: 1,
                },
                Op::ReadList {
                    key: Key::str("l"),
                    values: Some(vec![1, 2]),
                },
            ],
        );
        t.start = Some(10);
        t.node = Some("galera-2".into());
        t.error = Some("connection reset".into());
        t.dbts = Some(DbTs {
            start: 4,
            commit: Some(9),
        });
        let h = History {
            header: Some(Header {
                version: 1,
                db: Some("sqlite".into()),
                ..Header::default()
            }),
            txns: vec![t],
            faults: vec![Fault {
                kind: "partition".into(),
                target: Some("db".into()),
                start: 1,
                end: Some(2),
                applied: false,
                detail: None,
            }],
            end: Some(End {
                txns: 1,
                finished: None,
            }),
        };
        let s = to_jsonl_string(&h);
        assert!(s.contains(r#""node":"galera-2""#), "{s}");
        let back = read_jsonl_str(&s).unwrap();
        assert_eq!(back, h);
        // Without a node, the line has no `node` field.
        let mut plain = h.clone();
        plain.txns[0].node = None;
        assert!(!to_jsonl_string(&plain).contains("node"));
    }

    #[test]
    fn parses_the_design_example() {
        let s = r#"{"type":"header","version":1,"db":"postgres","level":"si","workload":"mini","seed":7,"clients":16,"started":"2026-11-25T21:00:00Z"}
{"id":0,"session":3,"status":"ok","start":120334,"end":150001,"ops":[["r","x1",null],["w","x1",12884901889]]}
{"id":1,"session":4,"status":"fail","start":130000,"end":170000,"ops":[["r","x1",null],["w","x1",17179869185]],"error":"40001: could not serialize access"}
{"id":2,"session":5,"status":"info","start":140000,"end":null,"ops":[["w","x2",21474836481]],"error":"connection reset during COMMIT"}
{"type":"fault","kind":"partition","target":"tidb-1","start":200000,"end":5200000}
{"type":"end","txns":3,"finished":"2026-11-25T21:01:00Z"}
"#;
        let h = read_jsonl_str(s).unwrap();
        assert_eq!(h.txns.len(), 3);
        assert_eq!(h.txns[2].status, Status::Info);
        assert_eq!(h.txns[2].end, None);
        assert_eq!(h.faults.len(), 1);
        assert_eq!(h.end.as_ref().unwrap().txns, 3);
        assert_eq!(h.header.as_ref().unwrap().seed, Some(7));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("{\"id\":0,\"session\":1,\"status\":\"maybe\",\"ops\":[]}", 1, "unknown variant"),
            ("{\"id\":0,\"session\":1,\"ops\":[]}", 1, "status"),
            ("\n\n{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[[\"x\",1,2]]}", 3, "unknown op"),
            ("{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[[\"r\",1]]}", 1, "lacks its value"),
            ("{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[]}\n{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[]}", 2, "used twice"),
            ("{\"type\":\"header\",\"version\":9}", 1, "version 9"),
            ("{\"type\":\"bogus\"}", 1, "unknown line type"),
            ("[1,2,3]", 1, "expected a JSON object ({...}) on each line, found \"[1,2,3]\""),
            ("{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[],\"start\":5,\"end\":2}", 1, "before it starts"),
        ];
        for (text, line, needle) in cases {
            let e = read_jsonl_str(text).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn a_file_cut_after_a_whole_line_parses_without_an_end() {
        let s = "{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[[\"w\",1,1]]}\n";
        let h = read_jsonl_str(s).unwrap();
        assert!(h.end.is_none());
        assert_eq!(h.txns.len(), 1);
    }
}

/// The JSONL fast path ([`crate::jsonl_fast`]) against the general parser.
#[cfg(test)]
mod fast_path_tests {
    use super::{parse_line, parse_line_for_check, Record};
    use crate::jsonl_fast::{parse_txn, parse_txn_kept, Kept};

    /// The fast path agrees with the general parser wherever it answers,
    /// and its check-only form takes the same lines and drops only the
    /// text fields.
    fn same(line: &str) -> bool {
        let fast = parse_txn(line.as_bytes());
        let lean = parse_txn_kept(line.as_bytes(), Kept::Check);
        assert_eq!(fast.is_some(), lean.is_some(), "{line}");
        let slow = parse_line(line);
        if fast.is_none() {
            assert_eq!(parse_line_for_check(line), slow.clone(), "{line}");
        }
        match (fast, slow) {
            (Some(f), Ok(Some(Record::Txn(s)))) => {
                assert_eq!(f, s, "{line}");
                let mut s = s;
                s.kind = s.kind.filter(|k| &**k == crate::model::FINAL_READ);
                s.error = None;
                assert_eq!(lean, Some(s), "{line}");
                true
            }
            (Some(f), other) => panic!("{line}: fast {f:?}, general {other:?}"),
            (None, _) => false,
        }
    }

    #[test]
    fn agrees_with_the_general_parser() {
        for line in [
            r#"{"id":0,"session":18,"status":"ok","start":273868,"end":343813,"kind":"rx","ops":[["r",6,null]],"dbts":{"start":1}}"#,
            r#"{"id":1,"session":8,"status":"ok","kind":"final-read","ops":[["r",6,[1,2]]]}"#,
            r#"{"id":1,"session":8,"status":"ok","kind":null,"ops":[["r",6,[1,2]]]}"#,
            r#"{"id":2,"session":0,"status":"ok","start":1,"end":2,"ops":[["r",7,null],["r",7,null],["w",7,1]],"dbts":{"start":1,"commit":2}}"#,
            r#" { "id" : 3 , "session" : 1 , "status" : "info" , "start" : 5 , "end" : null , "ops" : [ [ "w" , "x1" , -12884901889 ] , [ "i" , -3 , 4 ] ] , "error" : "reset" } "#,
            r#"{"id":4,"session":1,"status":"fail","ops":[["a","l",1],["r","l",[1,2,3]],["r","l",[]],["d",2,9],["r","k",5]],"node":"galera-2","error":null}"#,
            r#"{"id":5,"session":1,"status":"ok","ops":[],"dbts":{"start":4,"commit":null},"kind":null}"#,
            r#"{"id":18446744073709551615,"session":1,"status":"ok","ops":[["w",-9223372036854775808,9223372036854775807]]}"#,
            r#"{"ops":[["w",1,1]],"status":"ok","session":2,"id":6,"dbts":null}"#,
            // Twenty digits that fit; a kind that is not ASCII; spaces
            // around an op code.
            r#"{"id":10000000000000000000,"session":1,"status":"ok","kind":"lecture-été","ops":[["r",1,1]]}"#,
            r#"{"id":7,"session":1,"status":"ok","kind":"final-read","ops":[[ "r" ,1, [ ] ]]}"#,
        ] {
            assert!(same(line), "the fast path should take {line}");
        }
    }

    #[test]
    fn passes_on_what_it_is_not_sure_of() {
        for line in [
            r#"{"type":"header","version":1}"#,
            r#"{"id":1,"id":2,"session":1,"status":"ok","ops":[]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[],"extra":1}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["rq",1,2,[]]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[],"error":"a\"b"}"#,
            r#"{"id":1.5,"session":1,"status":"ok","ops":[]}"#,
            r#"{"id":01,"session":1,"status":"ok","ops":[]}"#,
            r#"{"id":-1,"session":1,"status":"ok","ops":[]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["w",9223372036854775808,1]]}"#,
            r#"{"id":18446744073709551616,"session":1,"status":"ok","ops":[]}"#,
            r#"{"id":123456789012345678901,"session":1,"status":"ok","ops":[]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["ww",1,2]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["",1,2]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["w\u0041",1,2]]}"#,
            r#"{"id":1,"session":1,"status":"maybe","ops":[]}"#,
            r#"{"id":1,"session":1,"ops":[]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[],"start":5,"end":2}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[]} x"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["r",1]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["w",1,2,3]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[],"dbts":{"commit":1}}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[],"dbts":{"start":1,"x":1}}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["w",1,1e3]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["w",1,1]"#,
            "",
        ] {
            assert!(!same(line), "the fast path should pass on {line}");
            // The line-by-line entry falls back to the general parser.
            let slow = parse_line(line).map_err(|e| e.to_string());
            assert_eq!(super::parse_line_fast(line), slow, "{line}");
        }
    }
}
