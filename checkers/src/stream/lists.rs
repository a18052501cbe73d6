//! The stream's model of list-append histories (Elle).
//!
//! A list read shows every append to its key up to the version it read,
//! so the reads of a key, taken together, write down its version order:
//! the *chain*, grown one element at a time as longer reads arrive. Each
//! element's writer follows the previous one's (ww); a read of the first
//! `n` elements reads from the writer of the `n`-th (wr) and precedes the
//! writer of the next (rw).
//!
//! An append no read has shown yet is *unplaced*: its place is only known
//! to be after the whole chain so far (a read shows every earlier
//! append), which is what the offline check assumes too. So the writer of
//! the chain's last element and the readers of the whole chain precede
//! every unplaced writer of the key; the stream adds those edges as they
//! become true, and the exact ones once a read places the append. Two
//! appends that stay unplaced to the end leave their order open: under
//! SER any order of them agrees with some topological order of an acyclic
//! graph, so they cannot make a cycle the stream missed; under SI (a
//! begin and a commit node per transaction) both orders may, so the
//! stream hands such a history over ([`Lists::unresolved`]).
//!
//! # Letting go
//!
//! A transaction with an unplaced append is kept (edges into it are still
//! to come), without a time limit: a workload that never reads a key again
//! keeps its last writers to the end. `harness run --stream` therefore
//! reads each list a client has just left (a passing read), and each list
//! once no client can touch it any more (its closing read, of kind
//! `final-read`).
//!
//! A key's chain is kept while the key may still be read: a later read
//! shorter than a chain the stream forgot would be a stale read it cannot
//! follow. In a history with closing reads (from its first `final-read`
//! on), a key is let go of once its closing read is retired, and never
//! before: clients that drift apart touch one list minutes apart. In other
//! histories, once no transaction that touched it has been kept for
//! [`IDLE_WINDOWS`] windows. Either way a later read or append of a key
//! let go of hands over; what stays of it is in [`Dropped`].
//!
//! Two list reads that are not prefixes of one another are a certain
//! `incompatible-order`. Everything else that is not a plain chain hands
//! over to the offline check: a read that disagrees with a version only
//! installed (a lost update, which the offline check names), an element whose
//! writer does not arrive (aborted, unknown outcome, thin air), a
//! transaction's appends split up, out of order or read in part by
//! another (an intermediate read), a read that does not end with the
//! reader's own appends, two reads of one key in a transaction that
//! disagree, and a read of one's own later append.

use std::collections::VecDeque;

use history::{Key, Op, Txn, Value, FINAL_READ};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::dropped::Dropped;
use super::retained::Ref;
use super::{Core, Streamed};
use crate::anomaly::{AnomalyKind, Scope};
use crate::lattice::forbids;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Writer {
    /// Read before its writer arrived.
    Pending,
    By(Ref),
}

/// One element of a key's chain.
#[derive(Debug)]
struct Elem {
    value: Value,
    writer: Writer,
    /// Its place among its writer's appends to the key, `(index, count)`,
    /// once the writer is known.
    seg: (u32, u32),
    /// A read by another transaction ended here: it must be its writer's
    /// last append to the key, or that read was intermediate.
    ends_read: bool,
    /// A list read showed it (not only a version a transaction installed).
    read: bool,
}

/// What the stream knows of one key.
#[derive(Debug)]
struct ListKey {
    key: Key,
    /// The version order as far as reads showed it.
    chain: Vec<Elem>,
    /// Readers of the whole chain: their rw edge waits for the next element.
    tail: Vec<Ref>,
    /// Kept writers with appends to the key no read has placed, and how
    /// many.
    unplaced: SmallVec<[(Ref, u32); 2]>,
    /// Kept transactions that touched the key.
    kept: u32,
    /// Elements whose writer has not arrived.
    pending: u32,
    /// When the last kept transaction that touched it was retired (0:
    /// one is kept).
    idle_since: u64,
    /// A closing read (`final-read`) read it: no one touches it again.
    closed: bool,
}

/// The keys of a list-append history still needed.
#[derive(Debug, Default)]
pub(super) struct Lists {
    ids: FxHashMap<Key, u32>,
    /// Boxed: the table then grows by a pointer a slot, not by a whole
    /// key's state, when the lists held reach a new high (a table that
    /// doubles rewrites every slot, so all of them are resident at once).
    keys: FxHashMap<u32, Box<ListKey>>,
    next_id: u32,
    /// Appends of arrived writers that no read has shown:
    /// `value -> (key, writer, index, count)`.
    unplaced: FxHashMap<Value, (u32, Ref, u32, u32)>,
    /// Elements read whose writer has not arrived: `value -> (key, place)`.
    pending: FxHashMap<Value, (u32, u32)>,
    /// The keys let go of.
    dropped: Dropped,
    /// The history reads each list as it closes (it has a `final-read`):
    /// keys are let go of when closed, not when idle.
    closes: bool,
    /// The most keys held at once.
    peak_held: u64,
    /// Keys no kept transaction touches, by when they became so, oldest
    /// first (an entry is stale when the key's `idle_since` moved on).
    idle: VecDeque<(u64, u32)>,
    /// Edges that wait for the pending writer of an element, by `(key,
    /// place)`: `(reader, true)` is `reader -rw-> writer`, `(reader,
    /// false)` is `writer -wr-> reader`.
    waits: FxHashMap<(u32, u32), Vec<(Ref, bool)>>,
}

/// How long, in windows, a key no kept transaction touches is kept whole
/// before it is let go of: clients that drift apart touch one list at
/// times this far apart, and are still followed.
pub(super) const IDLE_WINDOWS: u64 = 8;

/// What one transaction does to one key.
struct Touch<'a> {
    k: u32,
    appends: SmallVec<[Value; 2]>,
    /// The version it read from others (the part before its own appends).
    base: Option<&'a [Value]>,
    /// The longest list it read, its own appends so far included.
    seen: Option<&'a [Value]>,
}

fn offline<T>(why: String) -> Result<T, Streamed> {
    Err(Streamed::Offline(why))
}

impl Lists {
    /// Keys seen so far.
    pub(super) fn keys(&self) -> u64 {
        u64::from(self.next_id)
    }

    /// The most keys held whole at once, and the entries that remember
    /// the keys let go of now: with the kept transactions, what the
    /// stream's memory grows with.
    pub(super) fn held(&self) -> (u64, u64) {
        (self.peak_held, self.dropped.len() as u64)
    }

    /// Why the history cannot be called `ok` at its end, if it cannot.
    /// Under SI, two appends to a key that no read placed leave an order
    /// open that may close a cycle either way (begin and commit are two
    /// nodes, so no one topological order need fit a ww edge between two
    /// overlapping transactions): only the offline check can choose.
    pub(super) fn unresolved(&self, si: bool) -> Option<String> {
        if !self.pending.is_empty() {
            return Some(format!(
                "{} list elements were read whose writer never committed or did not append them",
                self.pending.len()
            ));
        }
        let open = self.keys.values().filter(|k| k.unplaced.len() > 1).count();
        (si && open > 0).then(|| {
            format!(
                "{open} lists end with appends by two or more transactions that no read \
                 shows: their order is open, and SI may hold in no order of them"
            )
        })
    }

    /// A transaction that touched key `k` is retired (at arrival `now`):
    /// the key is idle once none that did is kept, and let go of once it
    /// has been idle for `keep` arrivals.
    pub(super) fn forget(&mut self, k: u32, now: u64, keep: u64) {
        while let Some(&(at, old)) = self.idle.front() {
            if at.saturating_add(keep) >= now {
                break;
            }
            self.idle.pop_front();
            if self.keys.get(&old).is_some_and(|st| st.idle_since == at) {
                self.let_go(old);
            }
        }
        let Some(st) = self.keys.get_mut(&k) else {
            return;
        };
        st.kept -= 1;
        if st.kept == 0 && st.pending == 0 {
            if st.chain.is_empty() || st.closed {
                // A key nothing was ever shown in is as good as new; a
                // closed one is touched no more.
                self.let_go(k);
            } else if !self.closes {
                st.idle_since = now.max(1);
                self.idle.push_back((st.idle_since, k));
            }
        }
    }

    fn let_go(&mut self, k: u32) {
        let st = self.keys.remove(&k).expect("a kept key");
        self.ids.remove(&st.key);
        // An empty list is remembered too once closed: no one touches it
        // again, and the runs of keys let go of stay whole when clients
        // skip epochs, whose lists are only ever read empty.
        if !st.chain.is_empty() || st.closed {
            self.dropped.insert(&st.key);
        }
    }

    fn id(&mut self, key: &Key) -> Result<u32, Streamed> {
        if let Some(&id) = self.ids.get(key) {
            return Ok(id);
        }
        if self.dropped.contains(key) {
            return offline(format!(
                "list {key} is read or appended to after the stream let go of it (as a run's \
                 final reads do, unless it read each list as it closed: `harness run --stream`)"
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.ids.insert(key.clone(), id);
        self.keys.insert(
            id,
            Box::new(ListKey {
                key: key.clone(),
                chain: Vec::new(),
                tail: Vec::new(),
                unplaced: SmallVec::new(),
                kept: 0,
                pending: 0,
                idle_since: 0,
                closed: false,
            }),
        );
        self.peak_held = self.peak_held.max(self.keys.len() as u64);
        Ok(id)
    }

    /// Adds a committed transaction and its edges.
    pub(super) fn commit(&mut self, core: &mut Core, t: &Txn) -> Result<(), Streamed> {
        let mut touched: SmallVec<[Touch; 4]> = SmallVec::new();
        for op in &t.ops {
            let (key, k) = match op {
                Op::Append { key, .. } | Op::ReadList { key, .. } => (key, self.id(key)?),
                _ => {
                    return offline(format!(
                        "transaction {} is not a list-append transaction",
                        t.id
                    ))
                }
            };
            let i = match touched.iter().position(|x| x.k == k) {
                Some(i) => i,
                None => {
                    touched.push(Touch {
                        k,
                        appends: SmallVec::new(),
                        base: None,
                        seen: None,
                    });
                    touched.len() - 1
                }
            };
            let x = &mut touched[i];
            match op {
                Op::Append { value, .. } => x.appends.push(*value),
                Op::ReadList {
                    values: Some(vs), ..
                } => {
                    let c = x.appends.len();
                    if vs.len() < c || vs[vs.len() - c..] != x.appends[..] {
                        return offline(format!(
                            "transaction {} reads {key} without its own appends at the end",
                            t.id
                        ));
                    }
                    let base = &vs[..vs.len() - c];
                    match x.base {
                        Some(b) if b != base => {
                            return offline(format!(
                                "transaction {} reads two versions of {key}",
                                t.id
                            ))
                        }
                        _ => x.base = Some(base),
                    }
                    x.seen = Some(vs);
                }
                _ => {
                    return offline(format!(
                        "transaction {} has a list read without its values",
                        t.id
                    ))
                }
            }
        }
        for x in &touched {
            if x.base
                .is_some_and(|b| b.iter().any(|v| x.appends.contains(v)))
            {
                return offline(format!("transaction {} reads its own later append", t.id));
            }
        }
        let me = core.admit(t);
        let closing = t.kind.as_deref() == Some(FINAL_READ);
        if closing && !self.closes {
            // Keys are let go of when closed from now on.
            self.closes = true;
            self.idle.clear();
        }
        for x in &touched {
            let st = self.keys.get_mut(&x.k).expect("kept");
            st.kept += 1;
            st.idle_since = 0;
            st.closed |= closing;
            core.graph.overwrote(me, x.k, None);
        }
        // Its appends: placed when a read already showed them, else
        // unplaced (after the whole chain).
        for x in &touched {
            let m = x.appends.len() as u32;
            for (j, &v) in x.appends.iter().enumerate() {
                match self.pending.remove(&v) {
                    Some((k, p)) if k == x.k => self.arrive(core, k, p, me, (j as u32, m))?,
                    Some(_) => {
                        return offline(format!(
                            "transaction {} appends {v}, which was read in another list",
                            t.id
                        ))
                    }
                    None => self.unplace(core, x.k, v, me, (j as u32, m)),
                }
            }
        }
        // Its reads: they grow the chain, then join it to the chain. A
        // transaction that read the key and appended to it installs the
        // version it read followed by all its appends: that version is
        // shown as if read.
        let mut installs: SmallVec<[Value; 8]> = SmallVec::new();
        for x in &touched {
            let (Some(seen), Some(base)) = (x.seen, x.base) else {
                continue;
            };
            self.extend(core, x.k, seen, true)?;
            if seen.len() < base.len() + x.appends.len() {
                installs.clear();
                installs.extend_from_slice(base);
                installs.extend_from_slice(&x.appends);
                self.extend(core, x.k, &installs, false)?;
            }
            self.read(core, x.k, base.len(), me)?;
        }
        Ok(())
    }

    /// `me` appended `v` to `k`, and no read has shown it.
    fn unplace(&mut self, core: &mut Core, k: u32, v: Value, me: Ref, seg: (u32, u32)) {
        self.unplaced.insert(v, (k, me, seg.0, seg.1));
        core.graph.unplaced(me, true);
        let st = self.keys.get_mut(&k).expect("kept");
        if let Some(u) = st.unplaced.iter_mut().find(|u| u.0 == me) {
            u.1 += 1;
            return;
        }
        st.unplaced.push((me, 1));
        // After the whole chain: after its last writer and its readers.
        if let Some(Writer::By(w)) = st.chain.last().map(|e| e.writer) {
            if core.graph.live(w) {
                core.graph.edge(w, me, false);
            }
        }
        for &r in &st.tail {
            if core.graph.live(r) {
                core.graph.edge(r, me, true);
            }
        }
    }

    /// Checks `seen` against the chain of `k` and adds what it shows
    /// beyond it. `read`: `seen` is a list read (else the version a
    /// transaction installs, which no read need show).
    fn extend(
        &mut self,
        core: &mut Core,
        k: u32,
        seen: &[Value],
        read: bool,
    ) -> Result<(), Streamed> {
        let st = &self.keys[&k];
        let known = st.chain.len();
        if let Some(e) = st.chain.iter().zip(seen).find(|(e, v)| e.value != **v) {
            let why = format!("two reads of {} are not prefixes of one another", st.key);
            // Two list reads that disagree: certain, whatever else is
            // wrong with them. A version only installed may instead have
            // lost an update, which the offline check names.
            let kind = AnomalyKind::IncompatibleOrder;
            return Err(
                if read && e.0.read && forbids(core.level, kind, Scope::Item) {
                    Streamed::Anomalous(format!("{kind}: {why}"))
                } else {
                    Streamed::Offline(why)
                },
            );
        }
        if read {
            let st = self.keys.get_mut(&k).expect("kept");
            for e in st.chain.iter_mut().take(seen.len()) {
                e.read = true;
            }
        }
        for &v in seen.iter().skip(known) {
            self.reveal(core, k, v, read)?;
        }
        Ok(())
    }

    /// `v` is the next element of the chain of `k`.
    fn reveal(&mut self, core: &mut Core, k: u32, v: Value, read: bool) -> Result<(), Streamed> {
        let (writer, seg) = match self.unplaced.remove(&v) {
            Some((kk, w, j, m)) if kk == k => {
                core.graph.unplaced(w, false);
                let st = self.keys.get_mut(&k).expect("kept");
                if let Some(i) = st.unplaced.iter().position(|u| u.0 == w) {
                    st.unplaced[i].1 -= 1;
                    if st.unplaced[i].1 == 0 {
                        st.unplaced.swap_remove(i);
                    }
                }
                (Writer::By(w), (j, m))
            }
            Some(_) => return offline(format!("{v} is read in a list it was not appended to")),
            None => {
                let p = self.keys[&k].chain.len() as u32;
                if self.pending.insert(v, (k, p)).is_some() {
                    return offline(format!("{v} is read in two places"));
                }
                self.keys.get_mut(&k).expect("kept").pending += 1;
                (Writer::Pending, (0, 0))
            }
        };
        let st = self.keys.get_mut(&k).expect("kept");
        let g = &mut core.graph;
        let elem = Elem {
            value: v,
            writer,
            seg,
            ends_read: false,
            read,
        };
        let tail = std::mem::take(&mut st.tail);
        match writer {
            Writer::By(w) => {
                if let Some(Writer::By(prev)) = st.chain.last().map(|e| e.writer) {
                    if g.live(prev) {
                        g.edge(prev, w, false);
                    }
                }
                for r in tail {
                    if g.live(r) {
                        g.edge(r, w, true);
                    }
                }
                for &(u, _) in &st.unplaced {
                    g.edge(w, u, false);
                }
            }
            Writer::Pending => {
                let waiting: Vec<(Ref, bool)> = tail
                    .into_iter()
                    .filter(|&r| g.live(r))
                    .map(|r| (r, true))
                    .collect();
                if !waiting.is_empty() {
                    self.waits.insert((k, st.chain.len() as u32), waiting);
                }
            }
        }
        st.chain.push(elem);
        let p = st.chain.len() - 1;
        segments(st, p)
    }

    /// The pending writer of element `p` of `k` has arrived: `me`.
    fn arrive(
        &mut self,
        core: &mut Core,
        k: u32,
        p: u32,
        me: Ref,
        seg: (u32, u32),
    ) -> Result<(), Streamed> {
        let st = self.keys.get_mut(&k).expect("kept");
        let g = &mut core.graph;
        let p = p as usize;
        st.pending -= 1;
        let e = &mut st.chain[p];
        e.writer = Writer::By(me);
        e.seg = seg;
        for (r, rw) in self.waits.remove(&(k, p as u32)).unwrap_or_default() {
            if rw {
                if g.live(r) {
                    g.edge(r, me, true);
                }
            } else {
                g.wait(r, false);
                g.edge(me, r, false);
            }
        }
        if let Some(Writer::By(prev)) = p.checked_sub(1).map(|q| st.chain[q].writer) {
            if g.live(prev) {
                g.edge(prev, me, false);
            }
        }
        match st.chain.get(p + 1).map(|e| e.writer) {
            Some(Writer::By(next)) if next != me => {
                if !g.live(next) {
                    return offline(format!(
                        "an append to {} arrived after the next one's writer was let go of",
                        st.key
                    ));
                }
                g.edge(me, next, false);
            }
            Some(_) => {}
            None => {
                for &(u, _) in &st.unplaced {
                    g.edge(me, u, false);
                }
            }
        }
        segments(st, p)
    }

    /// `me` read the first `n` elements of the chain of `k` from others.
    fn read(&mut self, core: &mut Core, k: u32, n: usize, me: Ref) -> Result<(), Streamed> {
        let st = self.keys.get_mut(&k).expect("kept");
        let g = &mut core.graph;
        if let Some(q) = n.checked_sub(1) {
            let e = &mut st.chain[q];
            match e.writer {
                Writer::By(w) => {
                    if g.live(w) {
                        g.edge(w, me, false);
                    }
                }
                Writer::Pending => {
                    self.waits
                        .entry((k, q as u32))
                        .or_default()
                        .push((me, false));
                    g.wait(me, true);
                }
            }
            e.ends_read = true;
            segments(st, q)?;
        }
        match st.chain.get_mut(n) {
            Some(next) => match next.writer {
                Writer::By(w) if w == me => {}
                Writer::By(w) => {
                    if !g.live(w) {
                        return offline(format!(
                            "a read of {} is older than the transactions kept",
                            st.key
                        ));
                    }
                    g.edge(me, w, true);
                }
                Writer::Pending => self
                    .waits
                    .entry((k, n as u32))
                    .or_default()
                    .push((me, true)),
            },
            None => {
                for &(u, _) in &st.unplaced {
                    g.edge(me, u, true);
                }
                st.tail.push(me);
                // A list read by many and appended to by none (a cold key)
                // keeps only live readers.
                let n = st.tail.len();
                if n >= 64 && n.is_power_of_two() {
                    st.tail.retain(|&r| g.live(r));
                }
            }
        }
        Ok(())
    }
}

/// Checks what element `p` of a chain says of its writer's appends, with
/// its neighbours: each writer's appends to a key sit together, all of
/// them, in order, and a read by another ends only after the last.
fn segments(st: &ListKey, p: usize) -> Result<(), Streamed> {
    let c = &st.chain;
    let whole = |a: &Elem| a.seg.0 + 1 == a.seg.1;
    let pair = |a: &Elem, b: &Elem| match (a.writer, b.writer) {
        (Writer::By(x), Writer::By(y)) if x == y => b.seg.0 == a.seg.0 + 1,
        (Writer::By(_), Writer::By(_)) => whole(a) && b.seg.0 == 0,
        _ => true,
    };
    let e = &c[p];
    let known = matches!(e.writer, Writer::By(_));
    let ok = (p > 0 || !known || e.seg.0 == 0)
        && (!known || !e.ends_read || whole(e))
        && (p == 0 || pair(&c[p - 1], e))
        && c.get(p + 1).is_none_or(|b| pair(e, b));
    if ok {
        Ok(())
    } else {
        offline(format!(
            "the appends to {} of one transaction are split up, out of order, or read in part",
            st.key
        ))
    }
}
