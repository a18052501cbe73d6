//! The weak levels: read committed (`rc`), read atomic (`ra`), causal
//! consistency (`cc`) and prefix consistency (`pc`), after Biswas & Enea
//! (2019, "On the complexity of checking transactional consistency") and
//! Cerone et al. (2015), as dbcop, Plume and AWDIT check them.
//!
//! # The model
//!
//! Only committed transactions count. Each read of a transaction that did
//! not write the key first is an *external* read: it reads from exactly one
//! writer (unique values), which gives the read-from relation `wr`, lifted
//! to transactions. There is an initial transaction that wrote every key's
//! absent version and precedes everything. A history satisfies a level iff
//! some strict total *commit order* `co` of the committed transactions
//! contains session order and read-from (`so ∪ wr ⊆ co`) and satisfies the
//! level's axiom: for every key `x`, every read `r` of a transaction `t3`
//! that reads `x` from `t2`, and every other writer `t1 ≠ t2` of `x`,
//!
//! * **rc**: if a read of `t3` *before `r` in program order* reads from
//!   `t1`, then `t1 co t2` (what a transaction saw committed stays
//!   committed; the axiom has no session clause, but `co` still contains
//!   session order);
//! * **ra**: if `t1 (so ∪ wr) t3`, then `t1 co t2` (a transaction sees all
//!   or none of another's writes, and its own session's);
//! * **cc**: if `t1 (so ∪ wr)+ t3`, then `t1 co t2` (a transaction sees its
//!   whole causal past);
//! * **pc**: if `t1 co* ; (so ∪ wr) t3`, then `t1 co t2` (every transaction
//!   sees a prefix of one commit order).
//!
//! When `t2` is the initial transaction, `t1 co t2` is impossible: seeing
//! `t1` and then reading the initial version of a key `t1` wrote is an
//! anomaly on its own. The non-cyclic anomalies (thin-air, aborted and
//! intermediate reads, future reads, not seeing one's own writes, duplicate
//! writes) fail every level; a non-repeatable read is allowed at `rc` and
//! is a cycle of the `ra` axiom.
//!
//! For example, with `T1: w(x,1)`, `T2: r(x)=1 w(x,2) w(y,2)` and
//! `T3: r(y)=2 r(x)=1`: T3 read y from T2, then x from T1, and T2 also
//! wrote x, so rc forces `T2 co T1`; but T2 read from T1, so `T1 co T2`.
//! No commit order exists: a non-monotonic read, not even rc. Had T3 read
//! x first and y second, rc would hold (T3 may see T2 commit between its
//! two reads) and ra would fail (T3 saw some of T2's writes, not all).
//!
//! # Lists
//!
//! A list read of `x` reads the version installed by the writer of its last
//! element (`t2` of the axiom; the initial version when the list is empty),
//! and reads *from* the writer of every element: each gives a `wr` edge and
//! a premise. After the transaction's own appends to `x`, only the part
//! before them counts (the index checks they end the list). The version
//! `t2` installed holds exactly the appends of the writers committed up to
//! `t2`, in `co` order, so the order of the longest read of each key (which
//! every other read is a prefix of, or the lists' findings fail the level)
//! is part of `co`, and every other committed writer of `x` commits after
//! its last writer. These edges join the saturated graph (rc, ra, cc) and
//! the split history keeps the lists (pc).
//!
//! # Witnesses
//!
//! An `ok` verdict comes with a commit order ([`WeakOutcome::witness`]):
//! for rc, ra and cc a topological order of the saturated graph; for pc
//! the order in which the write parts commit in a strong-session SI
//! schedule of the split history, solved for again from its polygraph.
//!
//! # Saturation
//!
//! For rc, ra and cc the premise of the axiom does not mention `co`, so the
//! edges it forces are known up front: the history is consistent iff
//! `so ∪ wr ∪ forced` is acyclic (any topological order is a witness `co`).
//! Adding every forced edge is quadratic; the algorithms below add a
//! subset whose transitive closure is the same (every forced edge left
//! out is a path of edges put in), in the spirit of AWDIT (Møldrup &
//! Pavlogiannis):
//!
//! * **rc**: per transaction, scan its read events backwards (all of them:
//!   a repeated read late in a transaction can matter, so repeats the index
//!   drops are read again from the ops), keeping per key the earliest later
//!   read and the earliest later read from a different writer. Consecutive
//!   reads of one key from different writers are linked, which chains all
//!   reads of that key; the *first* read from each writer `t1` links `t1`
//!   to the earliest later read of each key `t1` wrote that is not from
//!   `t1`, iterating whichever of `t1`'s writes and the keys read later is
//!   smaller. Heavy/light counting bounds the work by `O(n^{3/2} log n)`
//!   (a writer with more than `√n` keys is one of at most `√n`).
//! * **ra**: for each reader and each writer it read from, the same
//!   smaller-side intersection (`O(n^{3/2} log n)`); for session order, per
//!   key only the latest earlier writer of the session, since session order
//!   chains the others (`O(n)`).
//! * **cc**: transactions in a topological order of `so ∪ wr`, each with a
//!   vector clock of its causal past (one entry per session). For a read of
//!   `x` from `t2` only the latest writer of `x` of each session inside the
//!   causal past matters (session order chains the rest), found by binary
//!   search; an edge already implied by `t2`'s own clock is skipped. That is
//!   `O(n·k log n)` for `k` sessions; clocks live in an arena and a slot is
//!   reused once its transaction's last successor is done. When `so ∪ wr`
//!   itself is cyclic there is no clock, and that cycle is the anomaly.
//! * **pc** is NP-complete: its premise uses `co`. Operationally, every
//!   transaction reads a snapshot that is a prefix of the commit order
//!   (containing its session's past) and commits later; unlike SI, nothing
//!   stops two concurrent writers of a key. Splitting each transaction into
//!   a read-only part (its external reads) followed in its session by a
//!   write-only part (its installed writes) turns this into strong-session
//!   SI of the split history: a write-only part can always commit right
//!   after it begins, so first-committer-wins never bites, and the read
//!   part's snapshot is the prefix. (In begin/commit-graph terms: a
//!   write-write edge becomes commit-to-commit instead of commit-to-begin.)
//!   The SI machinery of [`general`](crate::general) (pruning, CDCL)
//!   decides it, within a time budget. `cc` is checked first: `pc` implies
//!   it and it is cheap.
//!
//! # Counterexamples
//!
//! A cycle is shown with its transactions and ops, each session or
//! read-from edge with its evidence, and each forced commit-order edge as a
//! write-write edge with the read that forces it ("T3 read x from T2 after
//! reading y from T1, and T1 also wrote x, so T1 must commit before T2").
//! Its Adya kind is G-single when a forced edge is involved (under every
//! version order the forced edge is either a write-write dependency or a
//! single anti-dependency closing a cycle) and G1c otherwise; its scope is
//! `session` when session order is needed anywhere, including inside the
//! premise of a forced edge. Its common name follows the weakest premise
//! used: program order (non-monotonic read), read-from (fractured read),
//! session order (session guarantee violation), a longer causal path
//! (causality violation). A `pc` counterexample is the split history's,
//! with each transaction's two parts shown as the one original transaction
//! (a long fork is the typical one).

use std::collections::VecDeque;
use std::time::Instant;

use history::{History, Level, Op, Status, Txn, Value};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::anomaly::{AnomalyKind, CommonName, Scope};
use crate::explain::{cycle_anomaly, txn_view};
use crate::general::{check_general, General, GeneralOptions};
use crate::graph::{CycleScratch, Graph, GraphBuilder, PathEdge};
use crate::index::{Index, INIT};
use crate::interpret::counterexample;
use crate::lattice::{forbidding, forbids, stronger_or_equal};
use crate::lists::ListOrders;
use crate::report::{Anomaly, EdgeKind, EdgeView};

/// The answer for one weak level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeakVerdict {
    /// A commit order satisfying the level exists.
    Ok,
    /// The level is violated: a forbidden non-cyclic anomaly or a cycle.
    Anomalous,
    /// Could not decide (only `pc`: time budget, list histories); why.
    Unknown(String),
}

/// What checking one weak level found.
#[derive(Clone, Debug)]
pub struct WeakOutcome {
    /// The verdict, counting the index's non-cyclic findings too.
    pub verdict: WeakVerdict,
    /// How it was decided, for the report.
    pub method: &'static str,
    /// Cyclic counterexamples (and "saw a write, then read the initial
    /// version" ones). Non-cyclic findings are not repeated here: the
    /// caller reports them from [`Index::findings`].
    pub anomalies: Vec<Anomaly>,
    /// Every level the anomalies found show failed (the checked one and
    /// stronger, plus whatever the counterexamples show besides).
    pub also_fails: Vec<Level>,
    /// Remarks for the report (counterexamples cut, unsupported parts).
    pub notes: Vec<String>,
    /// With an `Ok` verdict, a commit order satisfying the level: every
    /// committed transaction (index ids) once, first to commit first, so a
    /// certificate checker can verify the verdict; `None` otherwise.
    pub witness: Option<Vec<u32>>,
}

/// True for the levels this module decides.
pub fn is_weak(level: Level) -> bool {
    matches!(level, Level::Rc | Level::Ra | Level::Cc | Level::Pc)
}

/// Checks a weak level; with `explain` false only the verdict is computed.
pub fn check_weak(ix: &Index, level: Level, explain: bool) -> WeakOutcome {
    check_weak_until(ix, level, explain, None)
}

/// [`check_weak`] with a deadline, which only `pc` (NP-complete) can hit.
pub fn check_weak_until(
    ix: &Index,
    level: Level,
    explain: bool,
    deadline: Option<Instant>,
) -> WeakOutcome {
    if !is_weak(level) {
        return WeakOutcome {
            verdict: WeakVerdict::Unknown(format!("{} is not a weak level", level.name())),
            method: "none",
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness: None,
        };
    }
    let mut also_fails = Vec::new();
    let mut findings = false;
    // What the lists themselves show wrong counts like the index's findings
    // (the caller reports both).
    let lo = ix
        .history
        .has_lists()
        .then(|| crate::lists::list_orders(ix));
    let list_findings = lo.as_ref().map_or(&[][..], |l| &l.findings[..]);
    for f in ix.findings.iter().chain(list_findings) {
        if forbids(level, f.kind, Scope::Item) {
            findings = true;
            for &m in forbidding(f.kind, Scope::Item) {
                also_fails.extend(stronger_or_equal(m));
            }
        }
    }
    if findings && !explain {
        // Decided already; the caller explains the findings.
        also_fails.extend(stronger_or_equal(level));
        also_fails.sort();
        also_fails.dedup();
        return WeakOutcome {
            verdict: WeakVerdict::Anomalous,
            method: "non-cyclic",
            anomalies: Vec::new(),
            also_fails,
            notes: Vec::new(),
            witness: None,
        };
    }
    let mut out = if level == Level::Pc {
        check_pc(ix, explain, findings, deadline, lo.as_ref())
    } else {
        saturate(ix, level, explain, lo.as_ref())
    };
    if findings && out.verdict != WeakVerdict::Anomalous {
        out.verdict = WeakVerdict::Anomalous;
    }
    if out.verdict != WeakVerdict::Ok {
        out.witness = None;
    }
    if out.verdict == WeakVerdict::Anomalous {
        also_fails.extend(stronger_or_equal(level));
    }
    also_fails.append(&mut out.also_fails);
    also_fails.sort();
    also_fails.dedup();
    out.also_fails = also_fails;
    out
}

// ---------------------------------------------------------------------------
// Shared state
// ---------------------------------------------------------------------------

/// "No transaction" in per-key slots ([`INIT`] is the initial transaction).
const NONE: u32 = u32::MAX - 1;
/// At most this many counterexamples are spelled out per check.
const MAX_SHOWN: usize = 64;
/// At most this many initial-version violations are kept (all are counted).
const MAX_INIT_KEPT: usize = 4096;

/// Why an edge is in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// Session order, between neighbours.
    So,
    /// Read-from: the target read the source's write of `key` at `op`.
    Wr,
    /// rc: the reader read from the source at `op`, before reading `key`
    /// from the target.
    Po,
    /// ra: the reader read from the source (anywhere) and `key` from the
    /// target.
    ReadFrom,
    /// ra: the source comes before the reader in its session.
    Session,
    /// cc: the source is in the reader's causal past.
    Causal,
    /// A list read (by `reader` at `op`) of `key` shows the source's
    /// appends before the target's, or (`target` appended nothing it shows)
    /// ends before the target's.
    List,
}

/// One edge label: 16 bytes.
#[derive(Clone, Copy, Debug)]
struct WLabel {
    why: Why,
    /// The key read from the target (co edges) or read-from edges' key.
    key: u32,
    /// The transaction whose read forces the edge (co edges).
    reader: u32,
    /// The op of the premise read (rc) or of the read (wr); else `NONE`.
    op: u32,
}

impl WLabel {
    fn is_co(self) -> bool {
        !matches!(self.why, Why::So | Why::Wr)
    }
}

/// A forced edge into the initial transaction: `t1` would have to commit
/// before the initial version of `key` that `reader` read.
#[derive(Clone, Copy, Debug)]
struct InitViolation {
    t1: u32,
    label: WLabel,
}

/// One external read event, in program order.
#[derive(Clone, Copy, Debug)]
struct Ev {
    op: u32,
    key: u32,
    writer: u32,
    value: Option<Value>,
    /// False for a list element's writer other than the last one's: a read
    /// *from* the writer (a premise), not of the version it installed.
    version: bool,
}

struct Ctx<'a> {
    ix: &'a Index<'a>,
    /// Session (index into `ix.sessions`) and position of each committed
    /// transaction; `NONE` for the others.
    sess_of: Vec<u32>,
    pos_of: Vec<u32>,
    /// Each transaction's written keys, sorted (CSR).
    wk_start: Vec<u32>,
    wk: Vec<u32>,
    /// Keys written anywhere, in key order (for range reads), if needed.
    written_sorted: Vec<u32>,
    /// The history has list reads.
    lists: bool,
    /// Checking rc: a list read after the transaction's own appends to the
    /// key is no observation (its base was read when it appended, and rc's
    /// premise is about program order).
    rc: bool,
    /// What its list reads say, when it has them.
    lo: Option<&'a ListOrders>,
    /// Per transaction (CSR), the writers of list elements it read besides
    /// the versions it read: (writer, key, op), each writer once.
    el_start: Vec<u32>,
    el: Vec<(u32, u32, u32)>,
}

impl<'a> Ctx<'a> {
    fn new(ix: &'a Index<'a>, lo: Option<&'a ListOrders>, level: Level) -> Ctx<'a> {
        let n = ix.len();
        let mut sess_of = vec![NONE; n];
        let mut pos_of = vec![NONE; n];
        for (s, txns) in ix.sessions.iter().enumerate() {
            for (p, &t) in txns.iter().enumerate() {
                sess_of[t as usize] = s as u32;
                pos_of[t as usize] = p as u32;
            }
        }
        let mut wk_start = Vec::with_capacity(n + 1);
        let mut wk = Vec::new();
        for t in 0..n as u32 {
            wk_start.push(wk.len() as u32);
            let from = wk.len();
            wk.extend(ix.writes(t).iter().map(|w| w.key));
            wk[from..].sort_unstable();
        }
        wk_start.push(wk.len() as u32);
        let has_ranges = ix
            .history
            .txns
            .iter()
            .any(|t| t.ops.iter().any(|o| matches!(o, Op::RangeRead { .. })));
        let mut written_sorted = Vec::new();
        if has_ranges {
            let mut seen = vec![false; ix.keys.len()];
            for &k in &wk {
                seen[k as usize] = true;
            }
            written_sorted = (0..ix.keys.len() as u32)
                .filter(|&k| seen[k as usize])
                .collect();
            written_sorted.sort_by(|a, b| ix.keys[*a as usize].cmp(&ix.keys[*b as usize]));
        }
        let mut cx = Ctx {
            ix,
            sess_of,
            pos_of,
            wk_start,
            wk,
            written_sorted,
            lists: ix.history.has_lists(),
            rc: level == Level::Rc,
            lo,
            el_start: Vec::new(),
            el: Vec::new(),
        };
        if cx.lists {
            let mut own = vec![0u32; ix.keys.len()];
            let mut evs = Vec::new();
            let mut seen = vec![0u32; n];
            let mut el_start = Vec::with_capacity(n + 1);
            let mut el = Vec::new();
            for t in 0..n as u32 {
                el_start.push(el.len() as u32);
                if !ix.committed[t as usize] {
                    continue;
                }
                let mut marks = Stamped {
                    marks: &mut own,
                    stamp: t + 1,
                };
                cx.events(t, &mut marks, &mut evs);
                for e in evs.iter().filter(|e| !e.version) {
                    if seen[e.writer as usize] != t + 1 {
                        seen[e.writer as usize] = t + 1;
                        el.push((e.writer, e.key, e.op));
                    }
                }
            }
            el_start.push(el.len() as u32);
            cx.el_start = el_start;
            cx.el = el;
        }
        cx
    }

    /// The writers of list elements `t` read from besides the versions it
    /// read: (writer, key, op).
    fn elements(&self, t: u32) -> &[(u32, u32, u32)] {
        if self.el_start.is_empty() {
            return &[];
        }
        &self.el[self.el_start[t as usize] as usize..self.el_start[t as usize + 1] as usize]
    }

    /// The keys `t` wrote, sorted.
    fn wkeys(&self, t: u32) -> &[u32] {
        &self.wk[self.wk_start[t as usize] as usize..self.wk_start[t as usize + 1] as usize]
    }

    /// `a` comes before `b` in one session (false for the initial
    /// transaction).
    fn so_before(&self, a: u32, b: u32) -> bool {
        a != INIT
            && b != INIT
            && self.sess_of[a as usize] != NONE
            && self.sess_of[a as usize] == self.sess_of[b as usize]
            && self.pos_of[a as usize] < self.pos_of[b as usize]
    }

    /// The writer a read of `k` returning `v` by `t` reads from, when that
    /// is a committed transaction's installed write or the initial version;
    /// `None` for the non-cyclic anomalies (reported by the index).
    fn resolve(&self, t: u32, k: u32, v: Option<Value>) -> Option<u32> {
        let Some(v) = v else { return Some(INIT) };
        let loc = self.ix.writer.get(&(k, v))?;
        let w = loc.txn as usize;
        if loc.txn == t
            || !loc.last
            || self.ix.history.txns[w].status == Status::Fail
            || !self.ix.committed[w]
        {
            return None;
        }
        Some(loc.txn)
    }

    /// Every external read event of `t`, in program order, repeats
    /// included (the index keeps only the first read of each version, but
    /// under rc a repeat later in the transaction can matter). `own` must
    /// start empty.
    fn events(&self, t: u32, own: &mut impl OwnKeys, out: &mut Vec<Ev>) {
        out.clear();
        let ix = self.ix;
        if ix.history.txns[t as usize].status != Status::Ok {
            return; // an `info` transaction's reads tell nothing
        }
        for (o, op) in ix.history.txns[t as usize].ops.iter().enumerate() {
            let o = o as u32;
            let mut push = |key: u32, value: Option<Value>, own: &dyn OwnKeys| {
                if own.has(key) {
                    return; // an internal read
                }
                if let Some(writer) = self.resolve(t, key, value) {
                    out.push(Ev {
                        op: o,
                        key,
                        writer,
                        value,
                        version: true,
                    });
                }
            };
            match op {
                Op::Read { key, value } => {
                    if let Some(k) = ix.key_id(key) {
                        push(k, *value, &*own);
                    }
                }
                Op::ReadList {
                    key,
                    values: Some(vs),
                } => {
                    let Some(k) = ix.key_id(key) else { continue };
                    if self.rc && own.has(k) {
                        continue;
                    }
                    // After its own appends, the part before them is
                    // what it read.
                    let Some(vs) = self.external_part(t, o, k, vs, own.has(k)) else {
                        continue;
                    };
                    let last = vs.last().copied();
                    let lw = last.and_then(|v| self.resolve(t, k, Some(v)));
                    // Every element's writer is read from.
                    for (i, v) in vs.iter().enumerate() {
                        let Some(l) = ix.writer.get(&(k, *v)) else {
                            continue;
                        };
                        let w = l.txn;
                        let dup =
                            i > 0 && ix.writer.get(&(k, vs[i - 1])).is_some_and(|p| p.txn == w);
                        if dup
                            || Some(w) == lw
                            || w == t
                            || !ix.committed[w as usize]
                            || ix.history.txns[w as usize].status == Status::Fail
                        {
                            continue;
                        }
                        out.push(Ev {
                            op: o,
                            key: k,
                            writer: w,
                            value: Some(*v),
                            version: false,
                        });
                    }
                    if let Some(writer) = if last.is_none() { Some(INIT) } else { lw } {
                        out.push(Ev {
                            op: o,
                            key: k,
                            writer,
                            value: last,
                            version: true,
                        });
                    }
                }
                Op::ReadList { values: None, .. } => {}
                Op::RangeRead { lo, hi, rows } => {
                    let mut listed: Vec<u32> = Vec::with_capacity(rows.len());
                    for (k, v) in rows {
                        if let Some(k) = ix.key_id(k) {
                            listed.push(k);
                            push(k, Some(*v), &*own);
                        }
                    }
                    listed.sort_unstable();
                    let ws = &self.written_sorted;
                    let from = ws.partition_point(|&k| ix.keys[k as usize] < *lo);
                    for &k in ws[from..]
                        .iter()
                        .take_while(|&&k| ix.keys[k as usize] <= *hi)
                    {
                        if listed.binary_search(&k).is_err() {
                            push(k, None, &*own);
                        }
                    }
                }
                _ => {
                    if let Some((k, _)) = op.written() {
                        if let Some(k) = ix.key_id(k) {
                            own.add(k);
                        }
                    }
                }
            }
        }
    }

    /// The external part of list read `vs` of `k` at op `o` of `t`: without
    /// the transaction's own appends before it, which must end it (`None`
    /// when they do not: the index reports that).
    fn external_part<'v>(
        &self,
        t: u32,
        o: u32,
        k: u32,
        vs: &'v [Value],
        wrote_before: bool,
    ) -> Option<&'v [Value]> {
        if !wrote_before {
            return Some(vs);
        }
        let key = &self.ix.keys[k as usize];
        let c = self.ix.history.txns[t as usize].ops[..o as usize]
            .iter()
            .filter(|p| matches!(p, Op::Append { key: pk, .. } if pk == key))
            .count();
        if c == 0 || vs.len() < c {
            return None;
        }
        let (ext, tail) = vs.split_at(vs.len() - c);
        tail.iter()
            .all(|v| self.ix.writer.get(&(k, *v)).is_some_and(|l| l.txn == t))
            .then_some(ext)
    }

    /// `t`'s external read events (allocating; for explanations).
    fn events_of(&self, t: u32) -> Vec<Ev> {
        let mut own: FxHashSet<u32> = FxHashSet::default();
        let mut out = Vec::new();
        self.events(t, &mut own, &mut out);
        out
    }
}

/// The keys a transaction has written so far, while its ops are scanned.
trait OwnKeys {
    fn has(&self, k: u32) -> bool;
    fn add(&mut self, k: u32);
}

impl OwnKeys for FxHashSet<u32> {
    fn has(&self, k: u32) -> bool {
        self.contains(&k)
    }
    fn add(&mut self, k: u32) {
        self.insert(k);
    }
}

/// A per-key array stamped with the current transaction: no clearing
/// between transactions.
struct Stamped<'s> {
    marks: &'s mut [u32],
    stamp: u32,
}

impl OwnKeys for Stamped<'_> {
    fn has(&self, k: u32) -> bool {
        self.marks[k as usize] == self.stamp
    }
    fn add(&mut self, k: u32) {
        self.marks[k as usize] = self.stamp;
    }
}

/// Adds a forced co edge `t1 → t2`, or records an initial-version
/// violation when `t2` is the initial transaction.
fn co(
    b: &mut GraphBuilder<WLabel>,
    inits: &mut Vec<InitViolation>,
    init_count: &mut usize,
    t1: u32,
    t2: u32,
    label: WLabel,
) {
    if t1 == t2 || t1 == INIT || t2 == NONE {
        return;
    }
    if t2 == INIT {
        *init_count += 1;
        if inits.len() < MAX_INIT_KEPT {
            inits.push(InitViolation { t1, label });
        }
        return;
    }
    b.edge(t1, t2, label);
}

// ---------------------------------------------------------------------------
// rc, ra, cc: saturation
// ---------------------------------------------------------------------------

struct Saturated {
    graph: Graph<WLabel>,
    inits: Vec<InitViolation>,
    init_count: usize,
}

fn saturate(ix: &Index, level: Level, explain: bool, lo: Option<&ListOrders>) -> WeakOutcome {
    let cx = Ctx::new(ix, lo, level);
    let sat = build(&cx, level);
    let method = "saturation";
    if !explain {
        let witness = if sat.init_count > 0 {
            None
        } else {
            topo_order(ix, &sat.graph)
        };
        return WeakOutcome {
            verdict: if witness.is_none() {
                WeakVerdict::Anomalous
            } else {
                WeakVerdict::Ok
            },
            method,
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness,
        };
    }
    let mut anomalies = Vec::new();
    let mut also_fails = Vec::new();
    let mut notes = Vec::new();
    let mut record = |a: Anomaly, weakest: Level, anomalies: &mut Vec<Anomaly>| {
        also_fails.extend(stronger_or_equal(weakest));
        for &m in forbidding(a.kind, a.scope) {
            also_fails.extend(stronger_or_equal(m));
        }
        anomalies.push(a);
    };
    let cycles = shortest_cycles(&sat.graph, MAX_SHOWN);
    let total_cycles = cycles.1;
    for c in &cycles.0 {
        let (a, weakest) = cycle_to_anomaly(&cx, c);
        record(a, weakest, &mut anomalies);
    }
    let mut seen: FxHashSet<(u32, u32, u32)> = FxHashSet::default();
    let mut shown_inits = 0;
    for v in &sat.inits {
        if !seen.insert((v.t1, v.label.key, v.label.reader)) {
            continue;
        }
        if shown_inits >= MAX_SHOWN {
            break;
        }
        shown_inits += 1;
        let (a, weakest) = init_to_anomaly(&cx, v);
        record(a, weakest, &mut anomalies);
    }
    if total_cycles > cycles.0.len() {
        notes.push(format!(
            "{total_cycles} cyclic groups of transactions; the first {} are shown",
            cycles.0.len()
        ));
    }
    if sat.init_count > shown_inits {
        notes.push(format!(
            "{} reads of an initial version after seeing a writer of the key; {shown_inits} are shown",
            sat.init_count
        ));
    }
    let bad = sat.init_count > 0 || total_cycles > 0;
    WeakOutcome {
        verdict: if bad {
            WeakVerdict::Anomalous
        } else {
            WeakVerdict::Ok
        },
        method,
        anomalies,
        also_fails,
        notes,
        witness: if bad {
            None
        } else {
            topo_order(ix, &sat.graph)
        },
    }
}

/// A topological order of the committed transactions in `g`, or `None`
/// when `g` has a cycle (Kahn's algorithm): for rc, ra and cc any such
/// order of the saturated graph is a commit order.
fn topo_order<L: Copy>(ix: &Index, g: &Graph<L>) -> Option<Vec<u32>> {
    let n = g.node_count();
    let mut indeg = vec![0u32; n];
    for v in 0..n as u32 {
        for (_, w) in g.out(v) {
            indeg[w as usize] += 1;
        }
    }
    let mut stack: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
    let mut order = Vec::with_capacity(n);
    let mut done = 0usize;
    while let Some(v) = stack.pop() {
        done += 1;
        if ix.committed.get(v as usize).copied().unwrap_or(false) {
            order.push(v);
        }
        for (_, w) in g.out(v) {
            indeg[w as usize] -= 1;
            if indeg[w as usize] == 0 {
                stack.push(w);
            }
        }
    }
    (done == n).then_some(order)
}

/// The graph `so ∪ wr ∪ forced` of a level, and the forced edges into the
/// initial transaction.
fn build(cx: &Ctx, level: Level) -> Saturated {
    let ix = cx.ix;
    let n = ix.len();
    let mut b: GraphBuilder<WLabel> = GraphBuilder::new(n);
    for s in &ix.sessions {
        for w in s.windows(2) {
            b.edge(
                w[0],
                w[1],
                WLabel {
                    why: Why::So,
                    key: NONE,
                    reader: w[1],
                    op: NONE,
                },
            );
        }
    }
    let mut seen = vec![0u32; n];
    for t3 in ix.committed_txns() {
        let elements = cx.elements(t3).iter().map(|&(w, key, op)| (w, key, op));
        let versions = ix.reads(t3).iter().map(|r| (r.writer, r.key, r.op));
        for (w, key, op) in versions.chain(elements) {
            if w != INIT && seen[w as usize] != t3 + 1 {
                seen[w as usize] = t3 + 1;
                b.edge(
                    w,
                    t3,
                    WLabel {
                        why: Why::Wr,
                        key,
                        reader: t3,
                        op,
                    },
                );
            }
        }
    }
    if cx.lists {
        list_edges(cx, &mut b);
    }
    let mut inits = Vec::new();
    let mut init_count = 0;
    match level {
        Level::Rc => rc_edges(cx, &mut b, &mut inits, &mut init_count),
        Level::Ra => ra_edges(cx, &mut b, &mut inits, &mut init_count),
        Level::Cc => cc_edges(cx, &mut b, &mut inits, &mut init_count),
        _ => unreachable!("saturation is for rc, ra and cc"),
    }
    Saturated {
        graph: b.build(),
        inits,
        init_count,
    }
}

/// The commit order the lists show: per key, the writers in the order of
/// the longest read, and every other committed writer of the key after the
/// last of them (its appends would show in every later version). Every read
/// is a prefix of the longest, or the lists' findings fail the level.
fn list_edges(cx: &Ctx, b: &mut GraphBuilder<WLabel>) {
    let ix = cx.ix;
    let Some(lo) = cx.lo else { return };
    let mut in_chain = vec![0u32; ix.len()];
    let mut writers: Vec<Vec<u32>> = vec![Vec::new(); ix.keys.len()];
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            writers[w.key as usize].push(t);
        }
    }
    for (&k, chain) in &lo.chains {
        let (reader, op) = lo.shown_by[&k];
        let label = WLabel {
            why: Why::List,
            key: k,
            reader,
            op,
        };
        for w in chain.windows(2) {
            b.edge(w[0], w[1], label);
        }
        let Some(&last) = chain.last() else { continue };
        for &t in chain {
            in_chain[t as usize] = k + 1;
        }
        for &u in &writers[k as usize] {
            if in_chain[u as usize] != k + 1 {
                b.edge(last, u, label);
            }
        }
    }
}

/// rc: per reader, a backward scan of its read events.
fn rc_edges(
    cx: &Ctx,
    b: &mut GraphBuilder<WLabel>,
    inits: &mut Vec<InitViolation>,
    init_count: &mut usize,
) {
    let ix = cx.ix;
    let nk = ix.keys.len();
    let mut own = vec![0u32; nk];
    // Per key, for the reads after the scan point: the earliest one's
    // writer, and the earliest one's from a different writer.
    let mut kst = vec![0u32; nk];
    let mut first = vec![NONE; nk];
    let mut second = vec![NONE; nk];
    let mut touched: Vec<u32> = Vec::new();
    let mut seen = vec![0u32; ix.len()];
    let mut evs: Vec<Ev> = Vec::new();
    let mut is_first: Vec<bool> = Vec::new();
    for t3 in ix.committed_txns() {
        let stamp = t3 + 1;
        // The index's reads are the read events unless it dropped some
        // (repeats, internal or anomalous reads, range reads): then rescan.
        let rs = ix.reads(t3);
        let read_ops = ix.history.txns[t3 as usize]
            .ops
            .iter()
            .map(|o| match o {
                Op::Read { .. }
                | Op::ReadList {
                    values: Some(_), ..
                } => 1,
                Op::RangeRead { .. } => usize::MAX / 2,
                _ => 0,
            })
            // Saturating: two range reads must not overflow (debug panic).
            .fold(0usize, usize::saturating_add);
        if read_ops == rs.len() && !cx.lists {
            evs.clear();
            evs.extend(rs.iter().map(|r| Ev {
                op: r.op,
                key: r.key,
                writer: r.writer,
                value: r.value,
                version: true,
            }));
        } else {
            let mut marks = Stamped {
                marks: &mut own,
                stamp,
            };
            cx.events(t3, &mut marks, &mut evs);
        }
        is_first.clear();
        for e in &evs {
            let f = e.writer != INIT && seen[e.writer as usize] != stamp;
            if f {
                seen[e.writer as usize] = stamp;
            }
            is_first.push(f);
        }
        touched.clear();
        let mut i = evs.len();
        while i > 0 {
            // The reads of one op (a range read) happen together.
            let op = evs[i - 1].op;
            let mut j = i - 1;
            while j > 0 && evs[j - 1].op == op {
                j -= 1;
            }
            for idx in j..i {
                let e = evs[idx];
                if e.writer == INIT {
                    continue; // the initial transaction precedes everyone
                }
                let label = |key: u32| WLabel {
                    why: Why::Po,
                    key,
                    reader: t3,
                    op: e.op,
                };
                if is_first[idx] {
                    // t3 saw e.writer here: every later read of a key it
                    // wrote must come from it or from a later writer.
                    let w = e.writer;
                    let wk = cx.wkeys(w);
                    let mut hit = |x: u32, b: &mut GraphBuilder<WLabel>| {
                        let x_ = x as usize;
                        let target = if first[x_] != w {
                            first[x_]
                        } else {
                            second[x_]
                        };
                        co(b, inits, init_count, w, target, label(x));
                    };
                    common_keys(wk, &touched, &kst, stamp, |x| hit(x, b));
                }
                // The next read of the same key, if from someone else.
                let k = e.key as usize;
                if e.version && kst[k] == stamp && first[k] != e.writer {
                    co(b, inits, init_count, e.writer, first[k], label(e.key));
                }
            }
            for e in evs[j..i].iter().filter(|e| e.version) {
                let k = e.key as usize;
                if kst[k] != stamp {
                    kst[k] = stamp;
                    first[k] = e.writer;
                    second[k] = NONE;
                    touched.push(e.key);
                } else if first[k] != e.writer {
                    second[k] = first[k];
                    first[k] = e.writer;
                }
            }
            i = j;
        }
    }
}

/// ra: per reader, the writers it read from and its session's latest
/// earlier writer of each key it read.
fn ra_edges(
    cx: &Ctx,
    b: &mut GraphBuilder<WLabel>,
    inits: &mut Vec<InitViolation>,
    init_count: &mut usize,
) {
    let ix = cx.ix;
    let nk = ix.keys.len();
    // Per key read by the current reader: the first two writers read.
    let mut kst = vec![0u32; nk];
    let mut w1 = vec![NONE; nk];
    let mut w2 = vec![NONE; nk];
    // Per key: the session's latest writer so far (stamped by session).
    let mut lw_sess = vec![0u32; nk];
    let mut lw = vec![NONE; nk];
    let mut seen = vec![0u32; ix.len()];
    let mut keys: Vec<u32> = Vec::new();
    let mut preds: Vec<u32> = Vec::new();
    for (s, session) in ix.sessions.iter().enumerate() {
        let sst = s as u32 + 1;
        for &t3 in session {
            let stamp = t3 + 1;
            keys.clear();
            preds.clear();
            for r in ix.reads(t3) {
                let x = r.key as usize;
                if kst[x] != stamp {
                    kst[x] = stamp;
                    w1[x] = r.writer;
                    w2[x] = NONE;
                    keys.push(r.key);
                } else if w1[x] != r.writer && w2[x] == NONE {
                    // A second version of one key: with the first, already
                    // a cycle; more writers add nothing to the verdict.
                    w2[x] = r.writer;
                }
                if r.writer != INIT && seen[r.writer as usize] != stamp {
                    seen[r.writer as usize] = stamp;
                    preds.push(r.writer);
                }
            }
            for &(w, _, _) in cx.elements(t3) {
                if seen[w as usize] != stamp {
                    seen[w as usize] = stamp;
                    preds.push(w);
                }
            }
            for &t1 in &preds {
                let wk = cx.wkeys(t1);
                let mut hit = |x: u32, b: &mut GraphBuilder<WLabel>| {
                    for t2 in [w1[x as usize], w2[x as usize]] {
                        if t2 != NONE && t2 != t1 && !cx.so_before(t1, t2) {
                            let label = WLabel {
                                why: Why::ReadFrom,
                                key: x,
                                reader: t3,
                                op: NONE,
                            };
                            co(b, inits, init_count, t1, t2, label);
                        }
                    }
                };
                common_keys(wk, &keys, &kst, stamp, |x| hit(x, b));
            }
            for &x in &keys {
                let xi = x as usize;
                if lw_sess[xi] != sst {
                    continue;
                }
                let l = lw[xi];
                for t2 in [w1[xi], w2[xi]] {
                    if t2 != NONE && t2 != l && !cx.so_before(l, t2) {
                        let label = WLabel {
                            why: Why::Session,
                            key: x,
                            reader: t3,
                            op: NONE,
                        };
                        co(b, inits, init_count, l, t2, label);
                    }
                }
            }
            for w in ix.writes(t3) {
                lw_sess[w.key as usize] = sst;
                lw[w.key as usize] = t3;
            }
        }
    }
}

/// A compressed-sparse-rows adjacency over transactions.
struct Csr {
    start: Vec<u32>,
    adj: Vec<u32>,
}

impl Csr {
    fn from_pairs(n: usize, pairs: &[(u32, u32)]) -> Csr {
        let mut start = vec![0u32; n + 1];
        for &(a, _) in pairs {
            start[a as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut adj = vec![0u32; pairs.len()];
        for &(a, b) in pairs {
            adj[fill[a as usize] as usize] = b;
            fill[a as usize] += 1;
        }
        Csr { start, adj }
    }

    fn of(&self, v: u32) -> &[u32] {
        &self.adj[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }
}

/// The distinct `so ∪ wr` predecessors of each committed transaction, as
/// CSR in both directions: (preds, succs).
fn causal_edges(cx: &Ctx) -> (Csr, Csr) {
    let ix = cx.ix;
    let n = ix.len();
    let mut pairs: Vec<(u32, u32)> = Vec::new(); // (reader, pred)
    let mut seen = vec![0u32; n];
    for t3 in ix.committed_txns() {
        let stamp = t3 + 1;
        let (s, p) = (cx.sess_of[t3 as usize], cx.pos_of[t3 as usize]);
        if p > 0 {
            let prev = ix.sessions[s as usize][p as usize - 1];
            seen[prev as usize] = stamp;
            pairs.push((t3, prev));
        }
        let elements = cx.elements(t3).iter().map(|e| e.0);
        for w in ix.reads(t3).iter().map(|r| r.writer).chain(elements) {
            if w != INIT && seen[w as usize] != stamp {
                seen[w as usize] = stamp;
                pairs.push((t3, w));
            }
        }
    }
    let preds = Csr::from_pairs(n, &pairs);
    for p in pairs.iter_mut() {
        *p = (p.1, p.0);
    }
    let succs = Csr::from_pairs(n, &pairs);
    (preds, succs)
}

/// cc: vector clocks in a topological order of `so ∪ wr`. When `so ∪ wr`
/// is cyclic no clock exists; the cycle is the anomaly and no co edge is
/// added.
fn cc_edges(
    cx: &Ctx,
    b: &mut GraphBuilder<WLabel>,
    inits: &mut Vec<InitViolation>,
    init_count: &mut usize,
) {
    let ix = cx.ix;
    let n = ix.len();
    let k = ix.sessions.len();
    let (preds, succs) = causal_edges(cx);
    let mut indeg: Vec<u32> = (0..n as u32).map(|t| preds.of(t).len() as u32).collect();
    let mut remaining: Vec<u32> = (0..n as u32).map(|t| succs.of(t).len() as u32).collect();
    let mut queue: VecDeque<u32> = ix
        .committed_txns()
        .filter(|&t| indeg[t as usize] == 0)
        .collect();
    // Each key's committed writers by session, positions ascending: the
    // segments (session, from, to) of `wpos`. Which of them are in a causal
    // past is read off the clock, so this can be built up front.
    let mut triples: Vec<(u32, u32, u32)> = Vec::new(); // (key, session, position)
    for t in ix.committed_txns() {
        for w in ix.writes(t) {
            triples.push((w.key, cx.sess_of[t as usize], cx.pos_of[t as usize]));
        }
    }
    triples.sort_unstable();
    let wpos: Vec<u32> = triples.iter().map(|t| t.2).collect();
    let nk = ix.keys.len();
    let mut seg_start = vec![0u32; nk + 1];
    let mut segs: Vec<(u32, u32, u32)> = Vec::new();
    let mut i = 0;
    for (key, start) in seg_start.iter_mut().enumerate().take(nk) {
        *start = segs.len() as u32;
        while i < triples.len() && triples[i].0 == key as u32 {
            let (s, from) = (triples[i].1, i);
            while i < triples.len() && triples[i].0 == key as u32 && triples[i].1 == s {
                i += 1;
            }
            segs.push((s, from as u32, i as u32));
        }
    }
    seg_start[nk] = segs.len() as u32;
    drop(triples);
    // Clocks, in slots of an arena: entry s is 1 + the position of the
    // latest transaction of session s in the causal past (0: none). A
    // slot is freed once the last successor has used it.
    let mut arena: Vec<u32> = Vec::new();
    let mut slot_of = vec![NONE; n];
    let mut free: Vec<u32> = Vec::new();
    let mut vc = vec![0u32; k];
    while let Some(t3) = queue.pop_front() {
        vc.fill(0);
        for &p in preds.of(t3) {
            let slot = slot_of[p as usize] as usize;
            for (a, &b) in vc.iter_mut().zip(&arena[slot * k..slot * k + k]) {
                *a = (*a).max(b);
            }
            let s = cx.sess_of[p as usize] as usize;
            vc[s] = vc[s].max(cx.pos_of[p as usize] + 1);
        }
        for r in ix.reads(t3) {
            let (x, t2) = (r.key, r.writer);
            let segments =
                &segs[seg_start[x as usize] as usize..seg_start[x as usize + 1] as usize];
            for &(s, from, to) in segments {
                let c = vc[s as usize];
                if c == 0 {
                    continue;
                }
                let ps = &wpos[from as usize..to as usize];
                let i = ps.partition_point(|&p| p < c);
                if i == 0 {
                    continue;
                }
                let p1 = ps[i - 1];
                let t1 = ix.sessions[s as usize][p1 as usize];
                if t1 == t2 {
                    continue;
                }
                if t2 != INIT {
                    let slot = slot_of[t2 as usize] as usize;
                    if arena[slot * k + s as usize] > p1 {
                        continue; // t1 is in t2's causal past already
                    }
                }
                let label = WLabel {
                    why: Why::Causal,
                    key: x,
                    reader: t3,
                    op: NONE,
                };
                co(b, inits, init_count, t1, t2, label);
            }
        }
        for &p in preds.of(t3) {
            remaining[p as usize] -= 1;
            if remaining[p as usize] == 0 {
                free.push(slot_of[p as usize]);
                slot_of[p as usize] = NONE;
            }
        }
        if remaining[t3 as usize] > 0 {
            let slot = free.pop().unwrap_or_else(|| {
                arena.resize(arena.len() + k, 0);
                (arena.len() / k - 1) as u32
            });
            let at = slot as usize * k;
            arena[at..at + k].copy_from_slice(&vc);
            slot_of[t3 as usize] = slot;
        }
        for &s in succs.of(t3) {
            indeg[s as usize] -= 1;
            if indeg[s as usize] == 0 {
                queue.push_back(s);
            }
        }
    }
}

/// The shortest cycle (session steps free) of each cyclic component, at
/// most `limit` of them, and the number of cyclic components.
fn shortest_cycles(g: &Graph<WLabel>, limit: usize) -> (Vec<Vec<PathEdge<WLabel>>>, usize) {
    let comps = g.cyclic_components(|_| true);
    let mut comp_of = vec![u32::MAX; g.node_count()];
    let mut scratch = CycleScratch::default();
    let weight = |l: WLabel| u32::from(l.why != Why::So);
    let rank = |c: &[PathEdge<WLabel>]| {
        (
            c.iter().filter(|e| e.label.why != Why::So).count(),
            c.iter().filter(|e| e.label.is_co()).count(),
        )
    };
    let mut out = Vec::new();
    for (tag, comp) in comps.iter().enumerate().take(limit) {
        for &v in comp {
            comp_of[v as usize] = tag as u32;
        }
        let step = (comp.len() / 16).max(1);
        let mut best: Option<Vec<PathEdge<WLabel>>> = None;
        for &s in comp.iter().step_by(step).take(16) {
            let Some(c) = g.shortest_cycle_through(
                s,
                |v| comp_of[v as usize] == tag as u32,
                |_| true,
                weight,
                &mut scratch,
            ) else {
                continue;
            };
            if best.as_ref().is_none_or(|b| rank(&c) < rank(b)) {
                best = Some(c);
            }
        }
        if let Some(c) = best {
            out.push(c);
        }
    }
    (out, comps.len())
}

// ---------------------------------------------------------------------------
// Explanations
// ---------------------------------------------------------------------------

fn tn(ix: &Index, t: u32) -> String {
    format!("T{}", ix.history.txns[t as usize].id)
}

fn show(v: Option<Value>) -> String {
    v.map_or_else(|| "absent".to_string(), |v| v.to_string())
}

fn session_name(ix: &Index, t: u32) -> u64 {
    ix.history.txns[t as usize].session
}

/// How the history forces one co edge, at the weakest level that forces it.
struct Just {
    level: Level,
    common: CommonName,
    /// The premise needs session order.
    session: bool,
    /// The premise as edges `t1 → … → reader` (read-from and session).
    premise: Vec<(u32, u32)>,
    /// "after reading y=1 from T1" and the like.
    clause: String,
}

/// The read events of `t3` reading `key` from `writer`.
fn reads_of(evs: &[Ev], key: u32, writer: u32) -> impl Iterator<Item = &Ev> {
    evs.iter()
        .filter(move |e| e.key == key && e.writer == writer)
}

fn justify(cx: &Ctx, t1: u32, t2: u32, l: WLabel) -> Just {
    let ix = cx.ix;
    let t3 = l.reader;
    let evs = cx.events_of(t3);
    // The last read of the key from t2: the most reads come before it.
    let alpha = reads_of(&evs, l.key, t2)
        .map(|e| e.op)
        .max()
        .unwrap_or(NONE);
    // The premise read: the one the rc scan used, else any earlier one.
    let from_t1 = |before: u32| {
        evs.iter()
            .find(|e| e.writer == t1 && e.op == l.op && e.op < before)
            .or_else(|| evs.iter().find(|e| e.writer == t1 && e.op < before))
    };
    let direct = |level: Level| -> Option<Just> {
        if let Some(e) = from_t1(alpha) {
            return Some(Just {
                level: Level::Rc,
                common: CommonName::NonMonotonicRead,
                session: false,
                premise: vec![(t1, t3)],
                clause: format!(
                    "after reading {}={} from {}",
                    ix.keys[e.key as usize],
                    show(e.value),
                    tn(ix, t1)
                ),
            });
        }
        let e = evs.iter().find(|e| e.writer == t1)?;
        Some(Just {
            level,
            common: CommonName::FracturedRead,
            session: false,
            premise: vec![(t1, t3)],
            clause: format!(
                "and also read {}={} from {}",
                ix.keys[e.key as usize],
                show(e.value),
                tn(ix, t1)
            ),
        })
    };
    let session = |level: Level| Just {
        level,
        common: CommonName::SessionGuaranteeViolation,
        session: true,
        premise: vec![(t1, t3)],
        clause: format!(
            "although {} comes before it in session {}",
            tn(ix, t1),
            session_name(ix, t3)
        ),
    };
    if let Some(j) = direct(Level::Ra) {
        return j;
    }
    if cx.so_before(t1, t3) {
        return session(Level::Ra);
    }
    // A longer causal path: read-from only if possible.
    let (path, needs_so) = match causal_path(cx, t1, t3, true) {
        Some(p) => (p, false),
        None => (causal_path(cx, t1, t3, false).unwrap_or_default(), true),
    };
    let names: Vec<String> = path.iter().map(|&t| tn(ix, t)).collect();
    Just {
        level: Level::Cc,
        common: CommonName::CausalityViolation,
        session: needs_so,
        premise: path.windows(2).map(|w| (w[0], w[1])).collect(),
        clause: format!(
            "although {} is in its causal past ({})",
            tn(ix, t1),
            names.join(" → ")
        ),
    }
}

/// A shortest `so ∪ wr` path `from → … → to` (read-from only if asked),
/// by a backward breadth-first search from `to`.
fn causal_path(cx: &Ctx, from: u32, to: u32, wr_only: bool) -> Option<Vec<u32>> {
    let ix = cx.ix;
    let mut parent: FxHashMap<u32, u32> = FxHashMap::default();
    let mut queue = VecDeque::from([to]);
    parent.insert(to, to);
    while let Some(v) = queue.pop_front() {
        if v == from {
            let mut path = vec![from];
            let mut u = from;
            while u != to {
                u = parent[&u];
                path.push(u);
            }
            return Some(path);
        }
        let so_pred = (!wr_only && cx.pos_of[v as usize] > 0 && cx.pos_of[v as usize] != NONE)
            .then(|| {
                ix.sessions[cx.sess_of[v as usize] as usize][cx.pos_of[v as usize] as usize - 1]
            });
        let preds = ix
            .reads(v)
            .iter()
            .map(|r| r.writer)
            .chain(cx.elements(v).iter().map(|e| e.0))
            .filter(|&w| w != INIT)
            .chain(so_pred);
        for p in preds {
            if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(p) {
                e.insert(v);
                queue.push_back(p);
            }
        }
    }
    None
}

/// A read-from or session edge `a → b` of a premise or cycle (`so`: a
/// session step, else read-from when `b` read from `a`).
fn plain_edge(cx: &Ctx, a: u32, b: u32, so: bool) -> EdgeView {
    let ix = cx.ix;
    let evs = if so { Vec::new() } else { cx.events_of(b) };
    let id = |t: u32| ix.history.txns[t as usize].id;
    if let Some(e) = evs.iter().find(|e| e.writer == a) {
        let k = &ix.keys[e.key as usize];
        let list = matches!(
            ix.history.txns[b as usize].ops[e.op as usize],
            Op::ReadList { .. }
        );
        let reason = match e.value {
            Some(v) if list => format!(
                "{} read list {k} holding {v}, appended by {}",
                tn(ix, b),
                tn(ix, a)
            ),
            _ => format!(
                "{} read {k}={}, written by {}",
                tn(ix, b),
                show(e.value),
                tn(ix, a)
            ),
        };
        return EdgeView {
            from: id(a),
            to: id(b),
            kind: EdgeKind::Wr,
            key: Some(k.clone()),
            reason,
        };
    }
    EdgeView {
        from: id(a),
        to: id(b),
        kind: EdgeKind::So,
        key: None,
        reason: format!(
            "{} comes before {} in session {}",
            tn(ix, a),
            tn(ix, b),
            session_name(ix, a)
        ),
    }
}

/// The value `t3` read of `key` from `t2` (its last such read).
fn value_read(cx: &Ctx, t3: u32, key: u32, t2: u32) -> Option<Value> {
    let evs = cx.events_of(t3);
    reads_of(&evs, key, t2).last().and_then(|e| e.value)
}

/// Merges the justifications of a cycle's co edges into a common name and
/// the weakest level the cycle violates.
fn name_of(justs: &[Just]) -> (Option<CommonName>, Level) {
    if justs.is_empty() {
        return (None, Level::Rc);
    }
    let level = justs.iter().map(|j| j.level).max().unwrap_or(Level::Rc);
    let has = |c: CommonName| justs.iter().any(|j| j.common == c);
    let common = if level == Level::Rc {
        CommonName::NonMonotonicRead
    } else if has(CommonName::CausalityViolation) {
        CommonName::CausalityViolation
    } else if has(CommonName::SessionGuaranteeViolation) {
        CommonName::SessionGuaranteeViolation
    } else {
        CommonName::FracturedRead
    };
    (Some(common), level)
}

fn what(common: Option<CommonName>) -> &'static str {
    match common {
        Some(CommonName::NonMonotonicRead) => {
            "a transaction saw a write and then read an older version"
        }
        Some(CommonName::FracturedRead) => "a transaction saw some of another's writes but not all",
        Some(CommonName::CausalityViolation) => "a transaction saw an effect but missed its cause",
        Some(CommonName::SessionGuaranteeViolation) => {
            "a session missed the effect of its own earlier transaction"
        }
        Some(CommonName::LongFork) => "two readers saw two independent writes in opposite orders",
        _ => "session order and read-from form a cycle",
    }
}

/// Adds `t` to the shown transactions once.
fn show_txn(order: &mut Vec<u32>, t: u32) {
    if !order.contains(&t) {
        order.push(t);
    }
}

/// A cycle of the saturated graph as a counterexample, and the weakest
/// level it violates.
/// Calls `f` on each key both in `wk` (a writer's sorted keys) and in
/// `stamped` (the keys whose `kst` is `stamp`), walking the shorter list:
/// the saturation loops meet this intersection once per visible writer.
fn common_keys(wk: &[u32], stamped: &[u32], kst: &[u32], stamp: u32, mut f: impl FnMut(u32)) {
    if wk.len() <= stamped.len() {
        for &x in wk {
            if kst[x as usize] == stamp {
                f(x);
            }
        }
    } else {
        for &x in stamped {
            if wk.binary_search(&x).is_ok() {
                f(x);
            }
        }
    }
}

fn cycle_to_anomaly(cx: &Ctx, path: &[PathEdge<WLabel>]) -> (Anomaly, Level) {
    let ix = cx.ix;
    // Start at a non-session edge, then merge runs of session steps.
    let start = path
        .iter()
        .position(|e| e.label.why != Why::So)
        .unwrap_or(0);
    let mut edges: Vec<PathEdge<WLabel>> = Vec::new();
    for i in 0..path.len() {
        let e = path[(start + i) % path.len()];
        match edges.last_mut() {
            Some(last) if last.label.why == Why::So && e.label.why == Why::So => last.to = e.to,
            _ => edges.push(e),
        }
    }
    let mut order: Vec<u32> = Vec::new();
    for e in &edges {
        show_txn(&mut order, e.from);
    }
    let mut views = Vec::new();
    let mut justs = Vec::new();
    let mut session = false;
    for e in &edges {
        let id = |t: u32| ix.history.txns[t as usize].id;
        match e.label.why {
            Why::So => {
                session = true;
                views.push(plain_edge(cx, e.from, e.to, true));
            }
            Why::Wr => views.push(plain_edge(cx, e.from, e.to, false)),
            Why::List => {
                let kk = &ix.keys[e.label.key as usize];
                let (reader, op) = (e.label.reader, e.label.op);
                show_txn(&mut order, reader);
                let shown = match &ix.history.txns[reader as usize].ops[op as usize] {
                    Op::ReadList {
                        values: Some(vs), ..
                    } => format!("{vs:?}"),
                    _ => "a list".to_string(),
                };
                let writes_shown = |t: u32| match &ix.history.txns[reader as usize].ops[op as usize]
                {
                    Op::ReadList {
                        values: Some(vs), ..
                    } => vs.iter().any(|v| {
                        ix.writer
                            .get(&(e.label.key, *v))
                            .is_some_and(|w| w.txn == t)
                    }),
                    _ => false,
                };
                let reason = if writes_shown(e.to) {
                    format!(
                        "{} read {kk}={shown}: {}'s appends come before {}'s",
                        tn(ix, reader),
                        tn(ix, e.from),
                        tn(ix, e.to)
                    )
                } else {
                    format!(
                        "{} read {kk}={shown}, which ends with {}'s appends and has none of {}'s: {} committed later",
                        tn(ix, reader),
                        tn(ix, e.from),
                        tn(ix, e.to),
                        tn(ix, e.to)
                    )
                };
                views.push(EdgeView {
                    from: id(e.from),
                    to: id(e.to),
                    kind: EdgeKind::Ww,
                    key: Some(kk.clone()),
                    reason,
                });
            }
            _ => {
                let j = justify(cx, e.from, e.to, e.label);
                let t3 = e.label.reader;
                let kk = &ix.keys[e.label.key as usize];
                session |= j.session;
                for &(a, b) in &j.premise {
                    show_txn(&mut order, a);
                    show_txn(&mut order, b);
                }
                views.push(EdgeView {
                    from: id(e.from),
                    to: id(e.to),
                    kind: EdgeKind::Ww,
                    key: Some(kk.clone()),
                    reason: format!(
                        "{} read {kk}={} from {} {}, and {} also wrote {kk}, so {} must commit before {}",
                        tn(ix, t3),
                        show(value_read(cx, t3, e.label.key, e.to)),
                        tn(ix, e.to),
                        j.clause,
                        tn(ix, e.from),
                        tn(ix, e.from),
                        tn(ix, e.to)
                    ),
                });
                justs.push(j);
            }
        }
    }
    let (common, level) = name_of(&justs);
    let listed = edges.iter().any(|e| e.label.why == Why::List);
    let head = match common {
        None if listed => "the order the lists show contradicts session order or read-from",
        None if session => "session order and read-from form a cycle",
        None => "transactions read from each other in a cycle",
        c => what(c),
    };
    let kind = if justs.is_empty() {
        AnomalyKind::G1c
    } else {
        AnomalyKind::GSingle
    };
    let steps: Vec<String> = views
        .iter()
        .map(|v| format!("T{} -{}->", v.from, v.kind.name()))
        .collect();
    let summary = format!(
        "{head}: {} T{}",
        steps.join(" "),
        views.first().map_or(0, |v| v.from)
    );
    let anomaly = Anomaly {
        kind,
        scope: if session { Scope::Session } else { Scope::Item },
        common,
        summary,
        txns: order.iter().map(|&t| txn_view(ix, t)).collect(),
        edges: views,
        write_ids: crate::report::has_write_ids(ix.history),
    };
    (anomaly, level)
}

/// "Saw `t1`, then read the initial version of a key `t1` wrote" as a
/// counterexample: the premise path from `t1` to the reader, and the
/// reader's anti-dependency back to `t1`.
fn init_to_anomaly(cx: &Ctx, v: &InitViolation) -> (Anomaly, Level) {
    let ix = cx.ix;
    let (t1, t3, x) = (v.t1, v.label.reader, v.label.key);
    let j = justify(cx, t1, INIT, v.label);
    let kk = &ix.keys[x as usize];
    let mut order = vec![t1];
    let mut edges: Vec<EdgeView> = Vec::new();
    for &(a, b) in &j.premise {
        show_txn(&mut order, a);
        show_txn(&mut order, b);
        edges.push(plain_edge(cx, a, b, false));
    }
    show_txn(&mut order, t3);
    let id = |t: u32| ix.history.txns[t as usize].id;
    edges.push(EdgeView {
        from: id(t3),
        to: id(t1),
        kind: EdgeKind::Rw,
        key: Some(kk.clone()),
        reason: format!(
            "{} read {kk} as absent (the initial version) {}, yet {} wrote {kk}: {} would have to commit before the initial version",
            tn(ix, t3),
            j.clause,
            tn(ix, t1),
            tn(ix, t1)
        ),
    });
    let (common, level) = name_of(std::slice::from_ref(&j));
    let summary = format!(
        "{}: {} read {kk} as absent although it already saw {}, which wrote {kk}",
        what(common),
        tn(ix, t3),
        tn(ix, t1)
    );
    let anomaly = Anomaly {
        kind: AnomalyKind::GSingle,
        scope: if j.session {
            Scope::Session
        } else {
            Scope::Item
        },
        common,
        summary,
        txns: order.iter().map(|&t| txn_view(ix, t)).collect(),
        edges,
        write_ids: crate::report::has_write_ids(ix.history),
    };
    (anomaly, level)
}

// ---------------------------------------------------------------------------
// pc: split transactions, strong-session SI
// ---------------------------------------------------------------------------

fn check_pc(
    ix: &Index,
    explain: bool,
    findings: bool,
    deadline: Option<Instant>,
    lo: Option<&ListOrders>,
) -> WeakOutcome {
    let unknown = |why: &str| WeakOutcome {
        verdict: WeakVerdict::Unknown(why.to_string()),
        method: "split SI",
        anomalies: Vec::new(),
        also_fails: Vec::new(),
        notes: Vec::new(),
        witness: None,
    };
    // Prefix consistency implies causal consistency, which is cheap.
    let cc = saturate(ix, Level::Cc, explain, lo);
    if cc.verdict == WeakVerdict::Anomalous {
        return WeakOutcome {
            method: "saturation (cc)",
            ..cc
        };
    }
    if findings {
        // Already failed; the findings are the counterexamples.
        return WeakOutcome {
            verdict: WeakVerdict::Anomalous,
            method: "non-cyclic",
            anomalies: Vec::new(),
            also_fails: Vec::new(),
            notes: Vec::new(),
            witness: None,
        };
    }
    let cx = Ctx::new(ix, lo, Level::Pc);
    let (split, origin) = split_history(&cx);
    let six = Index::new(&split);
    let opts = GeneralOptions {
        deadline,
        ..GeneralOptions::default()
    };
    let mut anomalies = Vec::new();
    let mut also_fails = Vec::new();
    let mut notes = Vec::new();
    let mut witness = None;
    let verdict = match check_general(&six, Level::StrongSessionSi, &opts) {
        General::Ok { .. } => {
            witness = pc_witness(&six, &origin, deadline).map(|co| with_empty(ix, co));
            if witness.is_none() {
                return unknown(
                    "prefix consistency holds, but no commit order was found in time to show it",
                );
            }
            WeakVerdict::Ok
        }
        General::Forced { cycles, .. } => {
            if explain {
                for c in cycles.iter().take(MAX_SHOWN) {
                    let a = unsplit(ix, cycle_anomaly(&six, c));
                    // Every edge forced and no session order: the same
                    // cycle is in Adya's SI graph of the original.
                    if a.scope == Scope::Item {
                        for &m in forbidding(a.kind, a.scope) {
                            also_fails.extend(stronger_or_equal(m));
                        }
                    }
                    anomalies.push(a);
                }
            }
            WeakVerdict::Anomalous
        }
        General::Refuted { seed, .. } => {
            if explain {
                match counterexample(&six, Level::StrongSessionSi, &seed, deadline) {
                    Some(a) => anomalies.push(unsplit(ix, a)),
                    None => notes.push(
                        "no commit order gives every transaction a prefix, but no small counterexample was found"
                            .into(),
                    ),
                }
            }
            WeakVerdict::Anomalous
        }
        General::Unknown(why) => return unknown(&why),
    };
    WeakOutcome {
        verdict,
        method: "split SI",
        anomalies,
        also_fails,
        notes,
        witness,
    }
}

/// Each committed transaction as a read-only transaction (its external
/// reads, as plain reads, or its lists' external parts as list reads)
/// followed in its session by a write-only one (its installed writes, or
/// all its appends). Both keep the original id, so explanations name the
/// original transactions; the second result is each part's original index.
fn split_history(cx: &Ctx) -> (History, Vec<u32>) {
    let ix = cx.ix;
    let mut txns = Vec::with_capacity(2 * ix.len());
    let mut origin = Vec::with_capacity(2 * ix.len());
    let mut own = vec![0u32; ix.keys.len()];
    let mut evs = Vec::new();
    for t in ix.committed_txns() {
        let orig = &ix.history.txns[t as usize];
        let mut marks = Stamped {
            marks: &mut own,
            stamp: t + 1,
        };
        cx.events(t, &mut marks, &mut evs);
        let mut part = |ops: Vec<Op>| {
            let mut x = Txn::new(orig.id, orig.session, Status::Ok, ops);
            x.start = orig.start;
            x.end = orig.end;
            txns.push(x);
            origin.push(t);
        };
        if !evs.is_empty() {
            part(
                evs.iter()
                    .filter(|e| e.version)
                    .map(|e| {
                        let key = ix.keys[e.key as usize].clone();
                        match &orig.ops[e.op as usize] {
                            Op::ReadList {
                                values: Some(vs), ..
                            } => {
                                // The external part (events exist only
                                // for reads whose own appends end them).
                                let ext = own_prefix(cx, t, e.op, e.key, vs);
                                Op::ReadList {
                                    key,
                                    values: Some(ext.to_vec()),
                                }
                            }
                            _ => Op::Read {
                                key,
                                value: e.value,
                            },
                        }
                    })
                    .collect(),
            );
        }
        let mut ws: Vec<Op> = orig
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Append { .. }))
            .cloned()
            .collect();
        ws.extend(
            ix.writes(t)
                .iter()
                .filter(|w| !matches!(orig.ops[w.op as usize], Op::Append { .. }))
                .map(|w| Op::Write {
                    key: ix.keys[w.key as usize].clone(),
                    value: w.value,
                }),
        );
        if !ws.is_empty() {
            part(ws);
        }
    }
    (History::from_txns(txns), origin)
}

/// The external part of list read `vs` of key `k` at op `o` of `t` (see
/// [`Ctx::external_part`]); `vs` itself when it is not known.
fn own_prefix<'v>(cx: &Ctx, t: u32, o: u32, k: u32, vs: &'v [Value]) -> &'v [Value] {
    let key = &cx.ix.keys[k as usize];
    let wrote = cx.ix.history.txns[t as usize].ops[..o as usize]
        .iter()
        .any(|op| op.written().is_some_and(|(pk, _)| pk == key));
    cx.external_part(t, o, k, vs, wrote).unwrap_or(vs)
}

/// A commit order of the original transactions from a strong-session SI
/// schedule of the split history `six` (`origin`: each part's original
/// transaction): each transaction commits when its last part does. The
/// schedule is a topological order of the begin/commit graph of a version
/// order: first the SI check's cheap guess (each key's writers in the order
/// of a topological order of the known edges), then the solver's, from the
/// same polygraph the SI check solves. `None` when neither is had in time.
fn pc_witness(six: &Index, origin: &[u32], deadline: Option<Instant>) -> Option<Vec<u32>> {
    use crate::acyclic::{Acyclic, FIXED};
    use crate::depgraph::{DepGraph, Model, Orders, VersionOrder, Why as DWhy};
    use crate::polygraph::{prune, Polygraph, Pruned};
    use crate::solve::{solve, Solved, Strategy};
    let chains = if six.history.has_lists() {
        crate::lists::list_orders(six).chains
    } else {
        FxHashMap::default()
    };
    let orders = Orders::of(Level::StrongSessionSi);
    let known = Polygraph::build(six, Model::Si, orders, &chains, false, 0).ok()?;
    let known_pairs: Vec<(u32, u32)> = known.known.iter().map(|e| (e.0, e.1)).collect();
    let order = kahn(known.nodes, &known_pairs)?;
    let mut position = vec![0u32; known.nodes];
    for (i, &v) in order.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    let mut per_key: Vec<Vec<(u32, u32)>> = vec![Vec::new(); six.keys.len()];
    for t in six.committed_txns() {
        for w in six.writes(t) {
            per_key[w.key as usize].push((position[2 * t as usize + 1], t));
        }
    }
    let mut vo = VersionOrder::new();
    for (k, ws) in per_key.iter_mut().enumerate() {
        ws.sort_unstable();
        let mut prev = INIT;
        for &(_, t) in ws.iter() {
            vo.link(k as u32, prev, t, DWhy::Chosen);
            prev = t;
        }
    }
    let dg = DepGraph::build(six, &vo, Model::Si, orders);
    let g = &dg.graph;
    let pairs: Vec<(u32, u32)> = (0..g.node_count() as u32)
        .flat_map(|v| g.out(v).map(move |(_, w)| (v, w)))
        .collect();
    if let Some(sched) = kahn(g.node_count(), &pairs) {
        let mut pos = vec![0u32; g.node_count()];
        for (i, &v) in sched.iter().enumerate() {
            pos[v as usize] = i as u32;
        }
        return Some(commit_order(six, origin, &pos));
    }
    // The solver's schedule.
    let p = Polygraph::build(six, Model::Si, orders, &chains, true, 60_000_000).ok()?;
    let mut g = Acyclic::new(&order);
    for &(f, t, _) in &p.known {
        g.add(f, t, FIXED).ok()?;
    }
    let mut state = vec![None; p.constraints.len()];
    let Pruned::Open(open) = prune(&p, &mut g, &mut state, deadline) else {
        return None;
    };
    let pos = if open.is_empty() {
        g.positions()
    } else {
        let polarity = vec![true; open.len()];
        match solve(&p, g, &open, &polarity, deadline, Strategy::Theory) {
            Solved::Sat(_, pos) => pos,
            _ => return None,
        }
    };
    Some(commit_order(six, origin, &pos))
}

/// Places the committed transactions that have no part in the split
/// history (no reads, no writes) right after their session's previous
/// transaction: they order nothing but their session.
fn with_empty(ix: &Index, co: Vec<u32>) -> Vec<u32> {
    let placed: rustc_hash::FxHashSet<u32> = co.iter().copied().collect();
    let mut after: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut first: Vec<u32> = Vec::new();
    for s in &ix.sessions {
        let mut prev: Option<u32> = None;
        for &t in s {
            if !placed.contains(&t) {
                match prev {
                    Some(p) => after.entry(p).or_default().push(t),
                    None => first.push(t),
                }
            }
            prev = Some(t);
        }
    }
    if after.is_empty() && first.is_empty() {
        return co;
    }
    let mut out = first;
    let mut stack: Vec<u32> = Vec::new();
    for t in co {
        stack.push(t);
        while let Some(x) = stack.pop() {
            out.push(x);
            if let Some(next) = after.get(&x) {
                stack.extend(next.iter().rev());
            }
        }
    }
    out
}

/// A topological order of the graph on `n` nodes with edges `pairs`, or
/// `None` when it has a cycle.
fn kahn(n: usize, pairs: &[(u32, u32)]) -> Option<Vec<u32>> {
    let succ = Csr::from_pairs(n, pairs);
    let mut indeg = vec![0u32; n];
    for &(_, t) in pairs {
        indeg[t as usize] += 1;
    }
    let mut stack: Vec<u32> = (0..n as u32).filter(|&v| indeg[v as usize] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(v) = stack.pop() {
        order.push(v);
        for &w in succ.of(v) {
            indeg[w as usize] -= 1;
            if indeg[w as usize] == 0 {
                stack.push(w);
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// The original transactions in the order their last parts commit, given
/// each split-history node's position in a schedule (begin and commit
/// nodes `2s` and `2s + 1` of part `s`).
fn commit_order(six: &Index, origin: &[u32], pos: &[u32]) -> Vec<u32> {
    let mut at: FxHashMap<u32, u32> = FxHashMap::default();
    for (s, &t) in origin.iter().enumerate() {
        if six.committed[s] {
            let c = pos[2 * s + 1];
            let e = at.entry(t).or_insert(c);
            *e = (*e).max(c);
        }
    }
    let mut co: Vec<(u32, u32)> = at.into_iter().map(|(t, c)| (c, t)).collect();
    co.sort_unstable();
    co.into_iter().map(|(_, t)| t).collect()
}

/// Maps a counterexample of the split history back: the original
/// transactions, without the step from a transaction's read part to its
/// write part. A cycle that needed no other session step is an item-level
/// anomaly of the original.
fn unsplit(ix: &Index, mut a: Anomaly) -> Anomaly {
    let mut by_id: FxHashMap<u64, u32> = FxHashMap::default();
    for t in ix.committed_txns() {
        by_id.entry(ix.history.txns[t as usize].id).or_insert(t);
    }
    let mut txns = Vec::new();
    let mut shown: Vec<u64> = Vec::new();
    for v in &a.txns {
        if shown.contains(&v.id) {
            continue;
        }
        shown.push(v.id);
        if let Some(&t) = by_id.get(&v.id) {
            txns.push(txn_view(ix, t));
        }
    }
    a.txns = txns;
    a.edges.retain(|e| e.from != e.to);
    let mut head = a.summary.split(": ").next().unwrap_or("").to_string();
    if a.scope == Scope::Session && !a.edges.iter().any(|e| e.kind == EdgeKind::So) {
        // Only the read part → write part steps needed session order.
        a.scope = Scope::Item;
        let rw = a.edges.iter().filter(|e| e.kind == EdgeKind::Rw).count();
        let others_wr = a
            .edges
            .iter()
            .all(|e| matches!(e.kind, EdgeKind::Rw | EdgeKind::Wr));
        a.common =
            if a.kind == AnomalyKind::GNonadjacent && a.edges.len() == 4 && rw == 2 && others_wr {
                Some(CommonName::LongFork)
            } else {
                None
            };
        head = match a.common {
            Some(c) => what(Some(c)).to_string(),
            None => format!(
                "no commit order gives every transaction a prefix ({})",
                a.kind
            ),
        };
    }
    let steps: Vec<String> = a
        .edges
        .iter()
        .map(|e| format!("T{} -{}->", e.from, e.kind.name()))
        .collect();
    a.summary = format!(
        "{head}: {} T{}",
        steps.join(" "),
        a.edges.first().map_or(0, |e| e.from)
    );
    a
}
