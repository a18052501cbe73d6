//! The stream's model of mini-transactions (MTC): every write reads the
//! version it overwrites, so each key's version order is known as soon as
//! the writer arrives, and the dependency graph is fixed edge by edge.
//!
//! Every edge a new transaction `U` brings joins `U` to an older one, and
//! all of them point into `U`, or into an older transaction that still
//! waits for a writer (and is kept), except one kind: `U` read a version
//! that an older transaction `W` had already overwritten (`U -rw-> W`, a
//! stale read). When `W` is gone that hands over (see the parent module).

use history::{Key, Op, Txn, Value};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::retained::Ref;
use super::{Core, Streamed};
use crate::anomaly::{AnomalyKind, Scope};
use crate::lattice::forbids;

/// One version of a key: who wrote it, who overwrote it, who read it.
#[derive(Debug, Default)]
struct Version {
    /// `None`: the initial version.
    writer: Writer,
    /// The transaction that read this version and wrote the key.
    next: Option<Ref>,
    /// Readers whose rw edge to `next` waits for it.
    readers: Vec<Ref>,
    /// Readers whose wr edge waits for the writer.
    waiting: Vec<Ref>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Writer {
    /// Nobody: the initial version.
    Init,
    /// Read before its writer arrived.
    #[default]
    Pending,
    /// Written by this transaction (kept or retired).
    By(Ref),
}

/// A version's name: key and value (`None`: the initial version).
type VersionId = (u32, Option<Value>);

/// The versions of mini-transaction keys still needed.
#[derive(Debug, Default)]
pub(super) struct Mini {
    versions: FxHashMap<VersionId, Version>,
    keys: FxHashMap<Key, u32>,
}

impl Mini {
    /// Keys seen so far.
    pub(super) fn keys(&self) -> usize {
        self.keys.len()
    }

    /// Versions read whose writer never arrived.
    pub(super) fn waiting(&self) -> usize {
        self.versions
            .values()
            .filter(|v| !v.waiting.is_empty())
            .count()
    }

    /// Drops a version whose writer is retired and that was overwritten (a
    /// later read of it would be stale: it waits, and hands over).
    pub(super) fn forget(&mut self, core: &Core, k: u32, v: Option<Value>) {
        let Some(ver) = self.versions.get(&(k, v)) else {
            return;
        };
        let writer_gone = match ver.writer {
            Writer::Init => false,
            Writer::Pending => false,
            Writer::By(w) => !core.graph.live(w),
        };
        let next_gone = ver.next.is_some_and(|n| !core.graph.live(n));
        if writer_gone && next_gone && ver.waiting.is_empty() {
            self.versions.remove(&(k, v));
        }
    }

    fn key(&mut self, k: &Key) -> u32 {
        // Known keys (nearly every op) need no clone of the key.
        if let Some(&id) = self.keys.get(k) {
            return id;
        }
        let n = self.keys.len() as u32;
        self.keys.insert(k.clone(), n);
        n
    }

    /// Adds a committed transaction and its edges.
    pub(super) fn commit(&mut self, core: &mut Core, t: &Txn) -> Result<(), Streamed> {
        let offline = |why: String| Err(Streamed::Offline(why));
        // A non-cyclic anomaly of one transaction: certain, and at every
        // streamed level forbidden (the lattice says so; else handed over).
        let level = core.level;
        let found = |kind: AnomalyKind, why: String| {
            Err(if forbids(level, kind, Scope::Item) {
                Streamed::Anomalous(format!("{kind}: {why}"))
            } else {
                Streamed::Offline(why)
            })
        };
        // What it read from others and what it installed, per key, checked
        // against the mini-transaction shape and the read-your-writes rules.
        let mut reads: SmallVec<[(u32, Option<Value>); 4]> = SmallVec::new();
        let mut writes: SmallVec<[(u32, Value); 2]> = SmallVec::new();
        // Every value it writes, intermediate ones too.
        let mut written: SmallVec<[(u32, Value); 2]> = SmallVec::new();
        if crate::index::shape::shape(t).is_some() {
            return offline(format!("transaction {} is not a mini-transaction", t.id));
        }
        for op in &t.ops {
            match op {
                Op::Read { key, value } => {
                    let k = self.key(key);
                    if let Some(&(_, own)) = writes.iter().find(|w| w.0 == k) {
                        if *value != Some(own) {
                            let why = format!("transaction {} misreads its own write", t.id);
                            return found(AnomalyKind::NotMyOwnWrite, why);
                        }
                    } else if let Some(&(_, before)) = reads.iter().find(|r| r.0 == k) {
                        if before != *value {
                            let why = format!("transaction {} read {key} twice", t.id);
                            return found(AnomalyKind::NonRepeatableRead, why);
                        }
                    } else {
                        reads.push((k, *value));
                    }
                }
                Op::Write { key, value } => {
                    let k = self.key(key);
                    written.push((k, *value));
                    match writes.iter_mut().find(|w| w.0 == k) {
                        // The intermediate version is not installed: a read
                        // of it waits, and hands over.
                        Some(w) => w.1 = *value,
                        None => writes.push((k, *value)),
                    }
                }
                _ => return offline(format!("transaction {} is not a mini-transaction", t.id)),
            }
        }
        if reads
            .iter()
            .any(|&(k, v)| v.is_some_and(|v| written.contains(&(k, v))))
        {
            let why = format!("transaction {} read a value it writes later", t.id);
            return found(AnomalyKind::FutureRead, why);
        }
        let me = core.admit(t);
        for &(k, v) in &reads {
            let ver = self.versions.entry((k, v)).or_insert_with(|| Version {
                writer: if v.is_none() {
                    Writer::Init
                } else {
                    Writer::Pending
                },
                ..Version::default()
            });
            match ver.writer {
                Writer::Init => {}
                Writer::Pending => {
                    ver.waiting.push(me);
                    core.graph.wait(me, true);
                }
                Writer::By(w) => {
                    if core.graph.live(w) {
                        core.graph.edge(w, me, false);
                    }
                }
            }
            let wrote_it = writes.iter().any(|w| w.0 == k);
            match ver.next {
                Some(_) if wrote_it => {
                    return Err(Streamed::Anomalous(format!(
                        "lost update: two transactions read one version of key {} and both \
                         overwrote it (the second is {})",
                        key_name(&self.keys, k),
                        t.id
                    )));
                }
                Some(n) => {
                    if !core.graph.live(n) {
                        return offline(format!(
                            "transaction {} read a version overwritten more than {} \
                             transactions before it",
                            t.id, core.opts.window
                        ));
                    }
                    core.graph.edge(me, n, true);
                }
                None if wrote_it => {
                    // `me` installs the next version: ww from its writer, rw
                    // from its readers.
                    ver.next = Some(me);
                    let readers = std::mem::take(&mut ver.readers);
                    let writer = ver.writer;
                    if let Writer::By(w) = writer {
                        if core.graph.live(w) {
                            core.graph.edge(w, me, false);
                        }
                    }
                    for r in readers {
                        if core.graph.live(r) {
                            core.graph.edge(r, me, true);
                        }
                    }
                    core.graph.overwrote(me, k, v);
                }
                None => {
                    ver.readers.push(me);
                    // A version read by many and overwritten by none (a
                    // cold key, the final reads) keeps only live readers.
                    let n = ver.readers.len();
                    if n >= 64 && n.is_power_of_two() {
                        let g = &core.graph;
                        ver.readers.retain(|&r| g.live(r));
                    }
                }
            }
        }
        for &(k, v) in &writes {
            let ver = self.versions.entry((k, Some(v))).or_default();
            if ver.writer != Writer::Pending {
                return offline(format!(
                    "transaction {} writes a value already written",
                    t.id
                ));
            }
            ver.writer = Writer::By(me);
            // Readers (and the next writer) that arrived first.
            for r in std::mem::take(&mut ver.waiting) {
                core.graph.wait(r, false);
                core.graph.edge(me, r, false);
            }
            if let Some(n) = ver.next {
                core.graph.edge(me, n, false);
            }
            core.graph.wrote(me, k, v);
        }
        Ok(())
    }
}

fn key_name(keys: &FxHashMap<Key, u32>, k: u32) -> String {
    keys.iter()
        .find(|(_, &id)| id == k)
        .map_or_else(|| format!("#{k}"), |(key, _)| key.to_string())
}
