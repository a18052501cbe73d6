//! Jepsen operation pairing, shared by the Elle EDN and Elle JSON readers.
//!
//! Both formats are a list of operations: an `invoke` when a client starts a
//! transaction and a completion (`ok`, `fail` or `info`) when it learns the
//! outcome. This module turns that list into transactions:
//!
//! - an `invoke` pairs with the next completion of the same `process`;
//!   operations without a `process` pair first-in, first-out, and each such
//!   transaction is its own session (numbered after the largest process);
//! - `ok`: the completion's micro-ops are what happened. A `nil` read is a
//!   read of the initial state: an empty list on a list key (a key that is
//!   appended to or read as a list anywhere in the history), `None` on a
//!   register key;
//! - `fail`: `Status::Fail` with the invoke's micro-ops; reads whose result
//!   is `nil` (unknown) are dropped;
//! - `info`, or an `invoke` never completed (a history cut short):
//!   `Status::Info` with the invoke's writes; all reads are dropped, since
//!   their results are unknown; `end` is `None`;
//! - a completion with no `invoke` before it (Plume writes such histories)
//!   stands alone, its own micro-ops taken as above, with `start = None`;
//! - a second `invoke` of a process whose earlier one never completed
//!   leaves the earlier one `Info`.
//!
//! Transaction ids are the `:index` of the invoke (or of the lone
//! completion) when every transaction has one and they are unique; else
//! 0, 1, 2, ... in order of invocation, which is also the order of
//! [`History::txns`].

use std::collections::VecDeque;
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::ParseError;
use crate::formats::util::assign_ids;
use crate::model::{History, Key, Op, Status, Txn, Value};

/// The type of a Jepsen operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Invoke,
    Ok,
    Fail,
    Info,
}

impl Kind {
    /// Parses a `:type` name.
    pub(crate) fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "invoke" => Kind::Invoke,
            "ok" => Kind::Ok,
            "fail" => Kind::Fail,
            "info" => Kind::Info,
            _ => return None,
        })
    }
}

/// The result of a read micro-op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ReadVal {
    /// `nil`: not yet known (in an invoke) or absent/empty (in an `ok`).
    Nil,
    One(Value),
    List(Vec<Value>),
}

/// One micro-op of an Elle transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Micro {
    Read(Key, ReadVal),
    Write(Key, Value),
    Append(Key, Value),
}

impl Micro {
    fn key(&self) -> &Key {
        match self {
            Micro::Read(k, _) | Micro::Write(k, _) | Micro::Append(k, _) => k,
        }
    }
}

/// One Jepsen operation, as read from a file.
#[derive(Clone, Debug)]
pub(crate) struct JOp {
    pub line: usize,
    pub kind: Kind,
    pub process: Option<u64>,
    pub time: Option<u64>,
    pub index: Option<u64>,
    pub ops: Vec<Micro>,
    pub error: Option<String>,
}

/// Pairs operations into transactions as they are read. A transaction is
/// built as soon as its completion arrives, so only the invokes still open
/// are held besides the history.
pub(crate) struct Builder {
    /// The transactions in order of invocation; an open one is a
    /// placeholder until its completion comes (or the end: `Info`).
    txns: Vec<Txn>,
    /// The invokes of the open transactions, by index in `txns`.
    open: FxHashMap<usize, JOp>,
    /// Each transaction's process (`None`: its own session, numbered at
    /// the end) and the `:index` its id may come from.
    procs: Vec<Option<u64>>,
    ids: Vec<Option<u64>>,
    pending: FxHashMap<u64, usize>,
    pending_anon: VecDeque<usize>,
    max_process: Option<u64>,
    /// Keys appended to or read as lists anywhere: their nil reads are
    /// empty lists.
    list_keys: FxHashSet<Key>,
    /// The first (in history order) completion that ends before it starts.
    time_error: Option<(usize, ParseError)>,
}

/// The message for a history that has operations but none of them a
/// transaction.
pub(crate) const NOT_TXN: &str = "this importer reads Elle/Jepsen transaction histories (`:f :txn` with micro-ops such as [:r k v], [:w k v], [:append k v]); bank, counter, set, register, mutex and long-fork histories are not transaction histories";

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            txns: Vec::new(),
            open: FxHashMap::default(),
            procs: Vec::new(),
            ids: Vec::new(),
            pending: FxHashMap::default(),
            pending_anon: VecDeque::new(),
            max_process: None,
            list_keys: FxHashSet::default(),
            time_error: None,
        }
    }

    /// Adds the next operation of the file.
    pub(crate) fn push(&mut self, op: JOp) {
        if let Some(p) = op.process {
            self.max_process = Some(self.max_process.map_or(p, |m| m.max(p)));
        }
        for m in &op.ops {
            if matches!(m, Micro::Append(..) | Micro::Read(_, ReadVal::List(_))) {
                let k = m.key();
                if !self.list_keys.contains(k) {
                    self.list_keys.insert(k.clone());
                }
            }
        }
        match (op.kind, op.process) {
            (Kind::Invoke, process) => {
                // An earlier invoke of p that never completed stays Info.
                let i = self.txns.len();
                match process {
                    Some(p) => {
                        self.pending.insert(p, i);
                    }
                    None => self.pending_anon.push_back(i),
                }
                self.txns.push(Txn::new(0, 0, Status::Info, Vec::new()));
                self.procs.push(process);
                self.ids.push(op.index);
                self.open.insert(i, op);
            }
            (_, process) => {
                let open = match process {
                    Some(p) => self.pending.remove(&p),
                    None => self.pending_anon.pop_front(),
                };
                match open {
                    Some(i) => {
                        let invoke = self.open.remove(&i);
                        let t = self.build(i, invoke, Some(op));
                        self.txns[i] = t;
                    }
                    None => {
                        let i = self.txns.len();
                        self.procs.push(process);
                        self.ids.push(op.index);
                        let t = self.build(i, None, Some(op));
                        self.txns.push(t);
                    }
                }
            }
        }
    }

    /// The transaction `i` made of its invoke and completion (the session
    /// and id are set by [`Builder::finish`]; nil reads are `None` until
    /// then).
    fn build(&mut self, i: usize, invoke: Option<JOp>, completion: Option<JOp>) -> Txn {
        let status = match &completion {
            None => Status::Info,
            Some(c) => match c.kind {
                Kind::Ok => Status::Ok,
                Kind::Fail => Status::Fail,
                _ => Status::Info,
            },
        };
        let line = invoke
            .as_ref()
            .or(completion.as_ref())
            .map_or(0, |o| o.line);
        let start = invoke.as_ref().and_then(|i| i.time);
        let end = match status {
            Status::Info => None,
            _ => completion.as_ref().and_then(|c| c.time),
        };
        if let (Some(s), Some(e)) = (start, end) {
            if e < s && self.time_error.as_ref().is_none_or(|(j, _)| i < *j) {
                let err = ParseError::at(
                    None,
                    completion.as_ref().map_or(line, |c| c.line),
                    format!("the completion's :time {e} is before its invoke's :time {s}"),
                );
                self.time_error = Some((i, err));
            }
        }
        let error = completion.as_ref().and_then(|c| c.error.clone());
        // Where the micro-ops come from: the completion for ok, the
        // invoke otherwise (the completion when there is no invoke).
        let source = match (status, invoke, completion) {
            (Status::Ok, _, Some(c)) => c.ops,
            (_, Some(i), _) => i.ops,
            (_, None, Some(c)) => c.ops,
            (_, None, None) => Vec::new(),
        };
        let ops = source
            .into_iter()
            .filter_map(|m| convert(m, status))
            .collect();
        Txn {
            id: 0,
            session: 0,
            status,
            start,
            end,
            ops,
            error: error.map(Into::into),
            dbts: None,
            kind: None,
            node: None,
        }
    }

    /// Builds the history, or explains why there is none.
    pub(crate) fn finish(mut self, path: Option<&Path>) -> Result<History, ParseError> {
        for (i, invoke) in std::mem::take(&mut self.open) {
            self.txns[i] = self.build(i, Some(invoke), None);
        }
        if let Some((_, mut e)) = self.time_error.take() {
            e.path = path.map(Path::to_path_buf);
            return Err(e);
        }
        let mut next_session = self.max_process.map_or(0, |m| m.saturating_add(1));
        let lists = !self.list_keys.is_empty();
        for (t, process) in self.txns.iter_mut().zip(&self.procs) {
            t.session = match *process {
                Some(s) => s,
                None => {
                    next_session = next_session.saturating_add(1);
                    next_session - 1
                }
            };
            if !lists {
                continue;
            }
            // A nil read of a list key reads the empty list.
            for op in &mut t.ops {
                if let Op::Read { key, value: None } = op {
                    if self.list_keys.contains(key) {
                        *op = Op::ReadList {
                            key: key.clone(),
                            values: Some(Vec::new()),
                        };
                    }
                }
            }
        }
        let mut txns = self.txns;
        assign_ids(&mut txns, &self.ids);
        Ok(History::from_txns(txns))
    }
}

/// One micro-op in our model, or `None` when its result is unknown. A nil
/// read is `Read { value: None }` here, made an empty list read by
/// [`Builder::finish`] when its key is a list key.
fn convert(m: Micro, status: Status) -> Option<Op> {
    match m {
        Micro::Write(key, value) => Some(Op::Write { key, value }),
        Micro::Append(key, value) => Some(Op::Append { key, value }),
        Micro::Read(key, v) => match (status, v) {
            (Status::Info, _) => None,
            (Status::Fail, ReadVal::Nil) => None,
            (_, ReadVal::Nil) => Some(Op::Read { key, value: None }),
            (_, ReadVal::One(v)) => Some(Op::Read {
                key,
                value: Some(v),
            }),
            (_, ReadVal::List(vs)) => Some(Op::ReadList {
                key,
                values: Some(vs),
            }),
        },
    }
}

/// Reads the operations of an Elle history, EDN or JSON by `grammar`,
/// streaming, and pairs them into transactions: an element the grammar's
/// fast path took arrives parsed; `parse` reads any other (its line, its
/// depth, its text) into at most one op, or several.
pub(crate) fn read_elle<R, G, P>(
    input: R,
    path: Option<&Path>,
    grammar: G,
    parse: P,
) -> Result<History, ParseError>
where
    R: std::io::Read,
    G: crate::elements::Grammar<Pre = Option<JOp>>,
    P: Fn(usize, usize, &str) -> Result<(Option<JOp>, Vec<JOp>), ParseError>,
{
    let mut b = Builder::new();
    crate::elements::for_each_element(
        input,
        path,
        grammar,
        |line, depth, text, pre| match pre {
            Some(op) => Ok((op.map(|op| JOp { line, ..op }), Vec::new())),
            None => parse(line, depth, text),
        },
        |(one, more)| {
            one.into_iter().chain(more).for_each(|op| b.push(op));
            Ok(())
        },
    )?;
    b.finish(path)
}
