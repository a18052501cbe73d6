//! Elle / Jepsen histories in EDN: one operation map per line.
//!
//! ```text
//! ; T1 appends to 9, T2 reads it
//! {:index 0, :time 10, :type :invoke, :process 2, :f :txn, :value [[:append 9 2] [:r 8 nil]]}
//! {:index 1, :time 25, :type :ok, :process 2, :f :txn, :value [[:append 9 2] [:r 8 [1 2]]]}
//! {:index 2, :time 30, :type :invoke, :process 4, :f :txn, :value [[:w :x 3]]}
//! {:index 3, :time 41, :type :info, :process 4, :f :txn, :value [[:w :x 3]], :error :timeout}
//! ```
//!
//! Maps may span lines, be separated by commas, sit inside one top-level
//! vector or list (`[{...} {...}]`, as Knossos and some Jepsen tools write),
//! and be interleaved with `;` comments and `#_` discards. Tagged literals
//! (`#jepsen.history.Op{...}`, `#inst "..."`) are read as their value.
//!
//! Keys: `:type` (`:invoke`/`:ok`/`:fail`/`:info`), `:process` (an integer
//! = the session; keyword processes such as `:nemesis` are not clients and
//! their operations are skipped), `:f` (`:txn`, or absent), `:value` (a
//! vector of micro-ops `[:r k v]`, `[:w k v]`, `[:append k v]`; a read's
//! `v` is `nil`, an integer or a list), `:time` (ns), `:index`, `:error`.
//! Micro-op keys are integers, keywords or strings (`:x` and `"x"` are the
//! same key). How invokes and completions become transactions is described
//! in the `jepsen` module: `ok` takes the completion's micro-ops, `fail`
//! the invoke's, `info` the invoke's writes only (reads unknown).
//!
//! An operation whose `:f` is not `:txn` (a bank transfer, a counter add, a
//! register read...) is refused with its line: those histories are not
//! transaction histories.
//!
//! The exporter ([`write()`]) writes an invoke and a completion per
//! transaction, `:process` = session, `:time` = start / end, merged in time
//! order so that Elle sees the same concurrency; see [`write()`] for what it
//! cannot carry.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::elements::{EdnForms, FastFn};
use crate::error::ParseError;
use crate::formats::edn::{Edn, Reader};
use crate::formats::elle_fast;
use crate::formats::jepsen::{read_elle, JOp, Kind, Micro, ReadVal, NOT_TXN};
use crate::formats::{ExportError, Format};
use crate::model::{History, Key, Op, Status, Txn};

// ---------------------------------------------------------- importer ----

fn get<'e, 'a>(map: &'e [(Edn<'a>, Edn<'a>)], name: &str) -> Option<&'e Edn<'a>> {
    map.iter()
        .find(|(k, _)| matches!(k, Edn::Keyword(n) if *n == name))
        .map(|(_, v)| v)
}

fn key_of(v: &Edn, line: usize, path: Option<&Path>) -> Result<Key, ParseError> {
    match v {
        Edn::Int(i) => Ok(Key::Int(*i)),
        Edn::Keyword(s) | Edn::Symbol(s) => Ok(Key::str(s)),
        Edn::Str(s) => Ok(Key::str(s)),
        other => Err(ParseError::at(
            path,
            line,
            format!(
                "a micro-op key must be an integer, keyword or string, not {}",
                other.kind()
            ),
        )),
    }
}

fn micro_of(v: &Edn, line: usize, path: Option<&Path>) -> Result<Micro, ParseError> {
    let err = |m: String| ParseError::at(path, line, m);
    let items = match v {
        Edn::Vector(items) | Edn::List(items) => items,
        other => {
            return Err(err(format!(
                "a micro-op must be a vector like [:r k v], not {}",
                other.kind()
            )))
        }
    };
    if items.len() != 3 {
        return Err(err(format!(
            "a micro-op has 3 elements [f k v], this one has {}",
            items.len()
        )));
    }
    let f = match &items[0] {
        Edn::Keyword(f) | Edn::Symbol(f) => *f,
        Edn::Str(f) => f.as_ref(),
        other => {
            return Err(err(format!(
                "a micro-op starts with :r, :w or :append, not {}",
                other.kind()
            )))
        }
    };
    let key = key_of(&items[1], line, path)?;
    let int = |v: &Edn, what: &str| match v {
        Edn::Int(i) => Ok(*i),
        other => Err(err(format!(
            "the value of {what} must be an integer, not {}",
            other.kind()
        ))),
    };
    match f {
        "r" | "read" => {
            let rv = match &items[2] {
                Edn::Nil => ReadVal::Nil,
                Edn::Int(i) => ReadVal::One(*i),
                Edn::Vector(vs) | Edn::List(vs) => ReadVal::List(
                    vs.iter()
                        .map(|v| int(v, "a list element"))
                        .collect::<Result<_, _>>()?,
                ),
                other => {
                    return Err(err(format!(
                        "a read returns nil, an integer or a list, not {}",
                        other.kind()
                    )))
                }
            };
            Ok(Micro::Read(key, rv))
        }
        "w" | "write" => Ok(Micro::Write(key, int(&items[2], "a write")?)),
        "append" | "a" => Ok(Micro::Append(key, int(&items[2], "an append")?)),
        other => Err(err(format!(
            "unknown micro-op :{other} (expected :r, :w or :append)"
        ))),
    }
}

fn nonneg(
    v: &Edn,
    what: &str,
    line: usize,
    path: Option<&Path>,
) -> Result<Option<u64>, ParseError> {
    match v {
        Edn::Nil => Ok(None),
        Edn::Int(i) if *i >= 0 => Ok(Some(*i as u64)),
        Edn::Float(f) if *f >= 0.0 && f.is_finite() => Ok(Some(*f as u64)),
        other => Err(ParseError::at(
            path,
            line,
            format!(
                "{what} must be a non-negative integer, not {}",
                describe(other)
            ),
        )),
    }
}

fn describe(v: &Edn) -> String {
    match v {
        Edn::Int(i) => i.to_string(),
        other => other.kind().to_string(),
    }
}

/// Turns one operation map into a Jepsen op (`None` for operations of
/// non-client processes such as the nemesis).
fn op_of(v: Edn, line: usize, path: Option<&Path>) -> Result<Option<JOp>, ParseError> {
    let err = |m: String| ParseError::at(path, line, m);
    let Edn::Map(map) = v else {
        return Err(err(format!(
            "expected an operation map {{:type ..., :value ...}}, found {}",
            v.kind()
        )));
    };
    let process = match get(&map, "process") {
        None | Some(Edn::Nil) => None,
        Some(Edn::Int(p)) if *p >= 0 => Some(*p as u64),
        Some(Edn::Keyword(_) | Edn::Symbol(_) | Edn::Str(_)) => return Ok(None),
        Some(other) => {
            return Err(err(format!(
                ":process must be a non-negative integer, not {}",
                describe(other)
            )))
        }
    };
    let kind = match get(&map, "type") {
        Some(Edn::Keyword(t)) => Kind::parse(t).ok_or_else(|| {
            err(format!(
                "unknown :type :{t} (expected :invoke, :ok, :fail or :info)"
            ))
        })?,
        Some(other) => {
            return Err(err(format!(
                ":type must be a keyword, not {}",
                other.kind()
            )))
        }
        None => return Err(err("the operation has no :type".into())),
    };
    match get(&map, "f") {
        None | Some(Edn::Nil) => {}
        Some(Edn::Keyword("txn")) => {}
        Some(other) => {
            let mut f = String::new();
            other.render(&mut f);
            return Err(err(format!(
                "operation :f {f} is not a transaction: {NOT_TXN}"
            )));
        }
    }
    let ops = match get(&map, "value") {
        Some(Edn::Vector(items) | Edn::List(items)) => items
            .iter()
            .map(|m| micro_of(m, line, path))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(err(format!(
                ":value must be a vector of micro-ops, not {}; {NOT_TXN}",
                other.kind()
            )))
        }
        None => return Err(err(format!("the operation has no :value; {NOT_TXN}"))),
    };
    let time = match get(&map, "time") {
        Some(t) => nonneg(t, ":time", line, path)?,
        None => None,
    };
    let index = match get(&map, "index") {
        Some(t) => nonneg(t, ":index", line, path)?,
        None => None,
    };
    let error = get(&map, "error").map(|e| match e {
        Edn::Str(s) => s.to_string(),
        Edn::Keyword(k) => k.to_string(),
        other => {
            let mut s = String::new();
            other.render(&mut s);
            s
        }
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

/// Parses an Elle/Jepsen EDN history.
pub fn parse(input: &str, path: Option<&Path>) -> Result<History, ParseError> {
    read(input.as_bytes(), path)
}

/// The operations of one top-level form (or of a `#_` discard: none),
/// `text` starting on `line` at nesting `depth`.
fn ops_of(
    text: &str,
    line: usize,
    depth: usize,
    path: Option<&Path>,
) -> Result<Vec<JOp>, ParseError> {
    let mut r = Reader::at_line(text, path, line);
    let mut out = Vec::new();
    loop {
        r.skip_ws(depth)?;
        if r.peek().is_none() {
            return Ok(out);
        }
        let line = r.line();
        let v = r.value(depth)?;
        if let Some(op) = op_of(v, line, path)? {
            out.push(op);
        }
    }
}

/// Reads an Elle/Jepsen EDN history, streaming: each operation map is
/// parsed and paired as it is read; the input is never
/// held whole.
pub fn read<R: Read>(input: R, path: Option<&Path>) -> Result<History, ParseError> {
    read_with(input, path, true)
}

/// [`read`], with the fast path for operation maps in the usual shape
/// ([`elle_fast`]) or (`fast` false, for tests) the general reader alone.
pub(crate) fn read_with<R: Read>(
    input: R,
    path: Option<&Path>,
    fast: bool,
) -> Result<History, ParseError> {
    let fast: Option<FastFn<Option<JOp>>> = fast.then_some(elle_fast::edn_map);
    read_elle(
        input,
        path,
        EdnForms::with_fast(fast),
        |line, depth, text| Ok((None, ops_of(text, line, depth, path)?)),
    )
}

/// Reads an Elle/Jepsen EDN history file.
pub fn read_file(path: &Path) -> Result<History, ParseError> {
    super::util::read_path(path, read)
}

// ---------------------------------------------------------- exporter ----

fn write_key(out: &mut String, k: &Key) {
    match k {
        Key::Int(i) => out.push_str(&i.to_string()),
        Key::Str(s) => {
            let simple = s
                .bytes()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && s.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'));
            if simple {
                out.push(':');
                out.push_str(s);
            } else {
                write_str(out, s);
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes `[:f k v]` micro-ops; reads show their result only when
/// `with_reads` (a completion of a committed transaction).
fn write_ops(out: &mut String, t: &Txn, with_reads: bool) -> Result<(), ExportError> {
    out.push('[');
    let mut first = true;
    for op in &t.ops {
        let mut item = String::new();
        match op {
            Op::Read { key, value } => {
                item.push_str("[:r ");
                write_key(&mut item, key);
                match value {
                    Some(v) if with_reads => item.push_str(&format!(" {v}]")),
                    _ => item.push_str(" nil]"),
                }
            }
            Op::ReadList { key, values } => {
                if with_reads && values.is_none() {
                    continue; // an unknown list read: Elle has no way to say so
                }
                item.push_str("[:r ");
                write_key(&mut item, key);
                match values {
                    Some(vs) if with_reads => {
                        item.push_str(" [");
                        for (i, v) in vs.iter().enumerate() {
                            if i > 0 {
                                item.push(' ');
                            }
                            item.push_str(&v.to_string());
                        }
                        item.push_str("]]");
                    }
                    _ => item.push_str(" nil]"),
                }
            }
            Op::Write { key, value } => {
                item.push_str("[:w ");
                write_key(&mut item, key);
                item.push_str(&format!(" {value}]"));
            }
            Op::Append { key, value } => {
                item.push_str("[:append ");
                write_key(&mut item, key);
                item.push_str(&format!(" {value}]"));
            }
            other => {
                return Err(ExportError::Unrepresentable {
                    format: Format::ElleEdn,
                    txn: t.id,
                    reason: format!(
                        "op {other} has no Elle form (Elle has reads, writes and appends only)"
                    ),
                })
            }
        }
        if !first {
            out.push(' ');
        }
        first = false;
        out.push_str(&item);
    }
    out.push(']');
    Ok(())
}

/// Writes a history as Elle EDN: per transaction an `:invoke` (reads `nil`)
/// and a completion (`:ok` with the results, `:fail`, or `:info` with reads
/// `nil`), `:process` = session, `:f :txn`, `:index` counting operations.
///
/// Jepsen infers real-time order from the order of operations, so the
/// operations are merged in time order (invoke at `start`, completion at
/// `end`), keeping each session's transactions one after another. When some
/// transaction has no `start`, times are unknown: transactions are then
/// written in rounds (every session's first transaction invoked, then all
/// completed, then every session's second, ...), which orders rounds in real
/// time, so check such exports with a model that ignores real time.
///
/// What EDN cannot carry: transaction ids (the importer uses the invoke's
/// `:index`), the results of reads of failed and unknown transactions,
/// unknown list reads of committed ones, `kind` and `dbts`. Inserts,
/// deletes and range reads are refused.
pub fn write<W: Write>(h: &History, mut out: W) -> Result<(), ExportError> {
    let txns = &h.txns;
    let timed = txns.iter().all(|t| t.start.is_some());
    // Each session's transactions, in history order.
    let mut sessions: Vec<Vec<usize>> = Vec::new();
    let mut slot: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, t) in txns.iter().enumerate() {
        let s = *slot.entry(t.session).or_insert_with(|| {
            sessions.push(Vec::new());
            sessions.len() - 1
        });
        sessions[s].push(i);
    }
    // Per session: (sort key, is_invoke, txn) events, non-decreasing keys.
    let mut events: Vec<Vec<(u64, bool, usize)>> = Vec::with_capacity(sessions.len());
    for list in &sessions {
        let mut ev = Vec::with_capacity(list.len() * 2);
        let mut last = 0u64;
        for (r, &i) in list.iter().enumerate() {
            let t = &txns[i];
            let (inv, done) = if timed {
                let inv = t.start.unwrap_or(0).max(last);
                let end = match t.end {
                    Some(e) => e,
                    None => list
                        .get(r + 1)
                        .and_then(|&n| txns[n].start)
                        .unwrap_or(u64::MAX),
                };
                (inv, end.max(inv))
            } else {
                (2 * r as u64, 2 * r as u64 + 1)
            };
            ev.push((inv, true, i));
            ev.push((done, false, i));
            last = done;
        }
        events.push(ev);
    }
    // Merge: smallest key first; at equal keys completions before invokes.
    let mut heads = vec![0usize; events.len()];
    let mut heap = BinaryHeap::new();
    for (s, ev) in events.iter().enumerate() {
        if let Some(&(k, inv, _)) = ev.first() {
            heap.push(Reverse((k, inv, s)));
        }
    }
    let mut index = 0u64;
    let mut line = String::with_capacity(256);
    while let Some(Reverse((_, is_invoke, s))) = heap.pop() {
        let (_, _, i) = events[s][heads[s]];
        heads[s] += 1;
        if let Some(&(k, inv, _)) = events[s].get(heads[s]) {
            heap.push(Reverse((k, inv, s)));
        }
        let t = &txns[i];
        line.clear();
        let ty = if is_invoke {
            "invoke"
        } else {
            match t.status {
                Status::Ok => "ok",
                Status::Fail => "fail",
                Status::Info => "info",
            }
        };
        line.push_str(&format!(
            "{{:index {index}, :type :{ty}, :process {}, :f :txn",
            t.session
        ));
        index += 1;
        let time = if !timed {
            None
        } else if is_invoke {
            t.start
        } else {
            t.end
        };
        if let Some(time) = time {
            line.push_str(&format!(", :time {time}"));
        }
        line.push_str(", :value ");
        let with_reads = !is_invoke && t.status == Status::Ok;
        write_ops(&mut line, t, with_reads)?;
        if !is_invoke {
            if let Some(e) = &t.error {
                line.push_str(", :error ");
                write_str(&mut line, e);
            }
        }
        line.push_str("}\n");
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// Writes a history as Elle EDN to a string.
pub fn to_string(h: &History) -> Result<String, ExportError> {
    super::util::write_to_string(h, |h, buf| write(h, buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn p(s: &str) -> History {
        parse(s, None).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn reads_values() {
        let mut r = Reader::new(
            "{:a 1, :b [1 -2 3N], :c \"x\\\"y\", :d #{1}, :e (nil true), #_ :skip :f 1.5, :g #inst \"2020\" :h \\a}",
            None,
        );
        let v = r.value(0).unwrap();
        let Edn::Map(m) = v else { panic!() };
        assert_eq!(m.len(), 8);
        assert_eq!(
            get(&m, "b"),
            Some(&Edn::Vector(vec![Edn::Int(1), Edn::Int(-2), Edn::Int(3)]))
        );
        assert_eq!(get(&m, "c"), Some(&Edn::Str(Cow::Owned("x\"y".into()))));
        assert_eq!(get(&m, "f"), Some(&Edn::Float(1.5)));
        assert_eq!(get(&m, "g"), Some(&Edn::Str(Cow::Borrowed("2020"))));
        assert_eq!(get(&m, "h"), Some(&Edn::Char('a')));
    }

    #[test]
    fn pairs_invokes_with_completions() {
        let h = p(r#"
{:index 0, :time 10, :type :invoke, :process 1, :f :txn, :value [[:append 9 2] [:r 8 nil]]}
{:index 1, :time 12, :type :invoke, :process 2, :f :txn, :value [[:w :x 1] [:r :y nil]]}
{:index 2, :time 20, :type :ok, :process 1, :f :txn, :value [[:append 9 2] [:r 8 [1 2]]]}
{:index 3, :time 30, :type :fail, :process 2, :f :txn, :value [[:w :x 1] [:r :y 5]], :error [:abort "conflict"]}
{:index 4, :time 40, :type :invoke, :process 1, :f :txn, :value [[:r 9 nil] [:w "y" 2]]}
{:index 5, :time 50, :type :info, :process 1, :f :txn, :value [[:r 9 nil] [:w "y" 2]], :error :timeout}
{:index 6, :time 60, :type :invoke, :process 3, :f :txn, :value [[:r 9 nil] [:r :y nil]]}
{:index 7, :time 70, :type :ok, :process 3, :f :txn, :value [[:r 9 nil] [:r :y nil]]}
{:index 8, :time 80, :type :invoke, :process 4, :f :txn, :value [[:w :z 1]]}
"#);
        assert_eq!(h.txns.len(), 5);
        let t = &h.txns[0];
        assert_eq!(
            (t.id, t.session, t.status, t.start, t.end),
            (0, 1, Status::Ok, Some(10), Some(20))
        );
        assert_eq!(
            t.ops,
            vec![
                Op::Append {
                    key: Key::Int(9),
                    value: 2
                },
                Op::ReadList {
                    key: Key::Int(8),
                    values: Some(vec![1, 2])
                }
            ]
        );
        let t = &h.txns[1];
        assert_eq!((t.id, t.status, t.end), (1, Status::Fail, Some(30)));
        assert_eq!(
            t.ops,
            vec![Op::Write {
                key: Key::str("x"),
                value: 1
            }]
        );
        assert_eq!(t.error.as_deref(), Some("[:abort \"conflict\"]"));
        let t = &h.txns[2];
        assert_eq!((t.id, t.status, t.end), (4, Status::Info, None));
        assert_eq!(
            t.ops,
            vec![Op::Write {
                key: Key::str("y"),
                value: 2
            }]
        );
        assert_eq!(t.error.as_deref(), Some("timeout"));
        // nil reads on a list key are empty lists; on a register key, absent.
        let t = &h.txns[3];
        assert_eq!(
            t.ops,
            vec![
                Op::ReadList {
                    key: Key::Int(9),
                    values: Some(vec![])
                },
                Op::Read {
                    key: Key::str("y"),
                    value: None
                }
            ]
        );
        let t = &h.txns[4];
        assert_eq!(
            (t.id, t.status, t.start, t.end),
            (8, Status::Info, Some(80), None)
        );
    }

    #[test]
    fn lone_completions_and_missing_processes() {
        let h = p("{:index 0, :time 0, :type :fail, :process 1, :f :txn, :value [[:append 1 1]]}\n{:index 1, :time 0, :type :ok, :process 2, :f :txn, :value [[:r 1 [1]]]}");
        assert_eq!(h.txns.len(), 2);
        assert_eq!(h.txns[0].status, Status::Fail);
        assert_eq!(
            h.txns[0].ops,
            vec![Op::Append {
                key: Key::Int(1),
                value: 1
            }]
        );
        assert_eq!(h.txns[1].start, None);
        assert_eq!(h.txns[1].end, Some(0));
        let h = p("[{:type :invoke :value [[:append 1 1]]}\n {:type :ok :value [[:append 1 1]]}\n {:type :invoke :value [[:r 1 nil]]}\n {:type :ok :value [[:r 1 [1]]]}]");
        assert_eq!(h.txns.len(), 2);
        assert_ne!(h.txns[0].session, h.txns[1].session);
        assert_eq!(
            h.txns[1].ops,
            vec![Op::ReadList {
                key: Key::Int(1),
                values: Some(vec![1])
            }]
        );
    }

    #[test]
    fn skips_the_nemesis() {
        let h = p("{:type :info, :f :start, :process :nemesis, :value nil}\n{:type :invoke, :f :txn, :process 0, :value [[:w 1 1]]}\n{:type :ok, :f :txn, :process 0, :value [[:w 1 1]]}");
        assert_eq!(h.txns.len(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("{:type :ok, :process 0, :value [[:r 1 nil]]}\n{:type :ok, :process 0, :value [[:r 1 nil]]", 2, "not closed"),
            ("{:type :ok, :process 0, :f :read, :value 3}", 1, "not a transaction"),
            ("\n\n{:type :maybe, :process 0, :value []}", 3, "unknown :type"),
            ("{:type :ok, :process 0, :value [[:x 1 2]]}", 1, "unknown micro-op"),
            ("{:type :ok, :process 0, :value [[:w 1 nil]]}", 1, "must be an integer"),
            ("{:type :ok, :process 0, :value [[:w 1]]}", 1, "3 elements"),
            ("{:type :ok, :process 0 :value}", 1, "odd number"),
            ("{:type :ok, :process -1, :value []}", 1, ":process"),
            ("{:type :ok, :process 0, :value [[:r 1 99999999999999999999]]}", 1, "out of range"),
            ("{:type :ok, :value []]", 1, "closes the map"),
            ("{:type :ok, :value [\"abc]}\n\n", 1, "string"),
            ("{:value []}", 1, "no :type"),
            ("[1 2]", 1, "expected an operation map"),
            ("{:type :invoke :process 0 :time 5 :value []}\n{:type :ok :process 0 :time 3 :value []}", 2, "before its invoke"),
        ];
        for (text, line, needle) in cases {
            let e = parse(text, None).unwrap_err();
            assert_eq!(e.line, Some(line), "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let s = "[".repeat(100_000);
        assert!(parse(&s, None).is_err());
    }

    #[test]
    fn export_interleaves_by_time() {
        let mut a = Txn::new(
            7,
            1,
            Status::Ok,
            vec![Op::Write {
                key: Key::Int(1),
                value: 1,
            }],
        );
        a.start = Some(0);
        a.end = Some(100);
        let mut b = Txn::new(
            8,
            2,
            Status::Ok,
            vec![Op::Read {
                key: Key::Int(1),
                value: Some(1),
            }],
        );
        b.start = Some(10);
        b.end = Some(20);
        let s = to_string(&History::from_txns(vec![a, b])).unwrap();
        let types: Vec<&str> = s
            .lines()
            .map(|l| {
                l.split(":type :")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap()
            })
            .collect();
        assert_eq!(types, ["invoke", "invoke", "ok", "ok"]);
        assert!(s.lines().nth(1).unwrap().contains("[[:r 1 nil]]"));
        assert!(s.lines().nth(2).unwrap().contains(":process 2"));
        let back = p(&s);
        assert_eq!(back.txns.len(), 2);
        assert_eq!(
            back.txns[1].ops,
            vec![Op::Read {
                key: Key::Int(1),
                value: Some(1)
            }]
        );
    }
}
