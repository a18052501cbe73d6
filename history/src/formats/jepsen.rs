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

/// A transaction being assembled from its invoke and completion.
struct Partial {
    process: Option<u64>,
    invoke: Option<JOp>,
    completion: Option<JOp>,
}

/// Pairs operations into transactions as they are read.
pub(crate) struct Builder {
    partials: Vec<Partial>,
    pending: FxHashMap<u64, usize>,
    pending_anon: VecDeque<usize>,
    max_process: Option<u64>,
}

/// The message for a history that has operations but none of them a
/// transaction.
pub(crate) const NOT_TXN: &str = "this importer reads Elle/Jepsen transaction histories (`:f :txn` with micro-ops such as [:r k v], [:w k v], [:append k v]); bank, counter, set, register, mutex and long-fork histories are not transaction histories";

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            partials: Vec::new(),
            pending: FxHashMap::default(),
            pending_anon: VecDeque::new(),
            max_process: None,
        }
    }

    /// Adds the next operation of the file.
    pub(crate) fn push(&mut self, op: JOp) {
        if let Some(p) = op.process {
            self.max_process = Some(self.max_process.map_or(p, |m| m.max(p)));
        }
        match (op.kind, op.process) {
            (Kind::Invoke, Some(p)) => {
                // An earlier invoke of p that never completed stays Info.
                self.pending.insert(p, self.partials.len());
                self.partials.push(Partial {
                    process: Some(p),
                    invoke: Some(op),
                    completion: None,
                });
            }
            (Kind::Invoke, None) => {
                self.pending_anon.push_back(self.partials.len());
                self.partials.push(Partial {
                    process: None,
                    invoke: Some(op),
                    completion: None,
                });
            }
            (_, process) => {
                let open = match process {
                    Some(p) => self.pending.remove(&p),
                    None => self.pending_anon.pop_front(),
                };
                match open {
                    Some(i) => self.partials[i].completion = Some(op),
                    None => self.partials.push(Partial {
                        process,
                        invoke: None,
                        completion: Some(op),
                    }),
                }
            }
        }
    }

    /// Builds the history, or explains why there is none.
    pub(crate) fn finish(self, path: Option<&Path>) -> Result<History, ParseError> {
        // Keys used as lists anywhere make their nil reads empty lists.
        let mut list_keys: FxHashSet<Key> = FxHashSet::default();
        for p in &self.partials {
            for op in p.invoke.iter().chain(p.completion.iter()) {
                for m in &op.ops {
                    if matches!(m, Micro::Append(..) | Micro::Read(_, ReadVal::List(_))) {
                        list_keys.insert(m.key().clone());
                    }
                }
            }
        }
        let mut next_session = self.max_process.map_or(0, |m| m.saturating_add(1));
        let mut txns = Vec::with_capacity(self.partials.len());
        let mut ids = Vec::with_capacity(self.partials.len());
        for p in self.partials {
            let session = match p.process {
                Some(s) => s,
                None => {
                    next_session = next_session.saturating_add(1);
                    next_session - 1
                }
            };
            let status = match &p.completion {
                None => Status::Info,
                Some(c) => match c.kind {
                    Kind::Ok => Status::Ok,
                    Kind::Fail => Status::Fail,
                    _ => Status::Info,
                },
            };
            let line = p
                .invoke
                .as_ref()
                .or(p.completion.as_ref())
                .map_or(0, |o| o.line);
            let (start, id_src) = match &p.invoke {
                Some(i) => (i.time, i.index),
                None => (None, p.completion.as_ref().and_then(|c| c.index)),
            };
            let end = match status {
                Status::Info => None,
                _ => p.completion.as_ref().and_then(|c| c.time),
            };
            if let (Some(s), Some(e)) = (start, end) {
                if e < s {
                    return Err(ParseError::at(
                        path,
                        p.completion.as_ref().map_or(line, |c| c.line),
                        format!("the completion's :time {e} is before its invoke's :time {s}"),
                    ));
                }
            }
            let error = p.completion.as_ref().and_then(|c| c.error.clone());
            // Where the micro-ops come from: the completion for ok, the
            // invoke otherwise (the completion when there is no invoke).
            let source = match (status, p.invoke, p.completion) {
                (Status::Ok, _, Some(c)) => c.ops,
                (_, Some(i), _) => i.ops,
                (_, None, Some(c)) => c.ops,
                (_, None, None) => Vec::new(),
            };
            let ops = source
                .into_iter()
                .filter_map(|m| convert(m, status, &list_keys))
                .collect();
            txns.push(Txn {
                id: 0,
                session,
                status,
                start,
                end,
                ops,
                error,
                dbts: None,
                kind: None,
                node: None,
            });
            ids.push(id_src);
        }
        assign_ids(&mut txns, &ids);
        Ok(History::from_txns(txns))
    }
}

/// One micro-op in our model, or `None` when its result is unknown.
fn convert(m: Micro, status: Status, list_keys: &FxHashSet<Key>) -> Option<Op> {
    match m {
        Micro::Write(key, value) => Some(Op::Write { key, value }),
        Micro::Append(key, value) => Some(Op::Append { key, value }),
        Micro::Read(key, v) => match (status, v) {
            (Status::Info, _) => None,
            (Status::Fail, ReadVal::Nil) => None,
            (_, ReadVal::Nil) => Some(if list_keys.contains(&key) {
                Op::ReadList {
                    key,
                    values: Some(Vec::new()),
                }
            } else {
                Op::Read { key, value: None }
            }),
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
