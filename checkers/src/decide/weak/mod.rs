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
//!   reused once its transaction's last successor is done. When every
//!   clock fits in memory at once, the keys are walked instead, on every
//!   core: per key, its writers in the topological order, one SIMD pass
//!   per read flagging the sessions to search, and of the edges into one
//!   source only each session's latest writer (session order chains the
//!   rest). When `so ∪ wr`
//!   itself is cyclic there is no clock, and that cycle is the anomaly.
//!   With few keys and many sessions that is still reads × sessions
//!   edges, so histories with at most 64 written keys (and no lists) go
//!   to **lazy saturation** first: guess a commit order (a topological
//!   order of `so ∪ wr`), compute per transaction and key the latest
//!   writer of the key in its causal past under the guess (`O(n·k)` for
//!   `k` keys), and for each read whose source is not that writer add the
//!   one forced edge `latest → source`; then guess again, keeping the
//!   previous order wherever the added edges allow. An order that passes
//!   is a witness; a cycle of the edges added (with `so ∪ wr`) or a read
//!   of an initial version after a writer is a refutation. When neither
//!   comes within a few dozen rounds, the exact algorithm above decides.
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
//!   The SI machinery of [`general`](crate::decide::blackbox::general) (pruning, CDCL)
//!   decides it, within a time budget. `cc` is checked first: `pc` implies
//!   it and it is cheap. Before the split, the lattice: strong-session SI
//!   implies `pc`, and a strong-session SI schedule of the history itself
//!   gives a `pc` commit order (its commits, in order: each snapshot is a
//!   prefix of them and holds the session's past). It is searched on a
//!   quarter of the time left; most valid histories, write skews included,
//!   are decided by it without the split's doubled size. A failure proves
//!   nothing about `pc` and passes on to the split.
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
//!
//! # Files
//!
//! This file holds the shared model ([`Ctx`]: read events, written keys,
//! session positions); [`saturate`](saturate) builds the graph and its
//! witness for rc, ra and cc, whose forced edges come from [`rc`](rc),
//! [`ra`](ra) and [`cc`](cc) (or, for cc over few keys, the lazy
//! [`cc_lazy`](cc_lazy)); [`pc`](pc) is the split-history search;
//! [`explain`](explain) turns cycles into counterexamples.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use history::{Level, Op, Status, Value};
use rustc_hash::FxHashSet;

use crate::anomaly::Scope;
use crate::graph::GraphBuilder;
use crate::index::lists::ListOrders;
use crate::index::{Index, INIT};
use crate::lattice::{forbidding, forbids, stronger_or_equal};
use crate::report::Anomaly;

mod cc;
mod cc_lazy;
mod explain;
mod pc;
mod ra;
mod rc;
mod saturate;

use pc::check_pc;
use saturate::saturate;

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

/// [`check_weak`] with a deadline: `pc` (NP-complete) searches until it,
/// and the saturation of rc, ra and cc stops at it (`unknown`).
pub fn check_weak_until(
    ix: &Index,
    level: Level,
    explain: bool,
    deadline: Option<Instant>,
) -> WeakOutcome {
    check_weak_limited(
        ix,
        level,
        explain,
        Limit {
            deadline,
            soft: None,
        },
    )
}

/// When a check gives up (`unknown`): at a deadline, or past a softer
/// one once a flag is set. Placing the other levels uses the flag to stop
/// when the verdict's certificate is checked, so it never holds up the
/// verdict for a level nobody asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limit<'a> {
    /// Give up after this instant.
    pub deadline: Option<Instant>,
    /// Give up after this instant once the flag is set.
    pub soft: Option<(Instant, &'a AtomicBool)>,
}

impl Limit<'_> {
    /// True when the check must give up now.
    pub fn hit(&self) -> bool {
        if self.deadline.is_none() && self.soft.is_none() {
            return false;
        }
        let now = Instant::now();
        self.deadline.is_some_and(|d| now > d)
            || self
                .soft
                .is_some_and(|(at, flag)| now > at && flag.load(Ordering::Relaxed))
    }
}

/// How many transactions the saturation loops handle between two looks at
/// the [`Limit`].
const LIMIT_EVERY: u32 = 1024;

/// [`check_weak`] within a [`Limit`].
pub fn check_weak_limited(ix: &Index, level: Level, explain: bool, limit: Limit) -> WeakOutcome {
    let deadline = limit.deadline;
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
    let lo = ix.lists.then(|| crate::index::lists::list_orders(ix));
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
        saturate(ix, level, explain, lo.as_ref(), limit)
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
// Shared model
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
    /// A co edge that `reader`'s reads of `key` force, for reason `why`.
    fn forced(why: Why, key: u32, reader: u32) -> WLabel {
        WLabel {
            why,
            key,
            reader,
            op: NONE,
        }
    }

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
    /// The op that shows the read.
    op: u32,
    /// Where in program order the read happened: `op`, except for a list
    /// read after the transaction's own appends to the key, whose external
    /// part was read by the first of those appends (see the module docs).
    at: u32,
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
    /// What its list reads say, when it has them.
    lo: Option<&'a ListOrders>,
    /// Per transaction (CSR), the writers of list elements it read besides
    /// the versions it read: (writer, key, op), each writer once.
    el_start: Vec<u32>,
    el: Vec<(u32, u32, u32)>,
}

impl<'a> Ctx<'a> {
    fn new(ix: &'a Index<'a>, lo: Option<&'a ListOrders>) -> Ctx<'a> {
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
        let mut written_sorted = Vec::new();
        if ix.ranges {
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
            lists: ix.lists,
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
        if self.ix.duplicated(k, v) {
            return None; // several writers: the read names none of them
        }
        let loc = self.ix.writer.get(&(k, v))?;
        let w = loc.txn as usize;
        if loc.txn == t || !loc.last || loc.failed || !self.ix.committed[w] {
            return None;
        }
        Some(loc.txn)
    }

    /// Every external read event of `t`, in program order (of `at`),
    /// repeats included (the index keeps only the first read of each
    /// version, but under rc a repeat later in the transaction can
    /// matter). `own` must start empty.
    fn events(&self, t: u32, own: &mut impl OwnKeys, out: &mut Vec<Ev>) {
        out.clear();
        // Per appended key, the op of the transaction's first append to it:
        // where a later read's external part was read.
        let mut first_append: smallvec::SmallVec<[(u32, u32); 4]> = smallvec::SmallVec::new();
        let mut moved = false;
        let ix = self.ix;
        if ix.history.txns[t as usize].status != Status::Ok {
            return; // an `info` transaction's reads tell nothing
        }
        // The index resolved the first read of each version already (the
        // same writer `resolve` finds, for a committed reader): a repeat
        // finds it there without a hash probe, when there are few.
        let rs = ix.reads(t);
        let rs = if rs.len() <= 16 && !self.lists {
            rs
        } else {
            &[]
        };
        for (o, op) in ix.history.txns[t as usize].ops.iter().enumerate() {
            let o = o as u32;
            let mut push = |key: u32, value: Option<Value>, own: &dyn OwnKeys| {
                if own.has(key) {
                    return; // an internal read
                }
                let known = rs
                    .iter()
                    .find(|r| r.key == key && r.value == value && value.is_some())
                    .map(|r| r.writer);
                if let Some(writer) = known.or_else(|| self.resolve(t, key, value)) {
                    out.push(Ev {
                        op: o,
                        at: o,
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
                    // After its own appends, the part before them is
                    // what it read, and it read it at the first of them.
                    let Some(vs) = self.external_part(t, o, k, vs, own.has(k)) else {
                        continue;
                    };
                    let at = match first_append.iter().find(|(fk, _)| *fk == k) {
                        Some(&(_, a)) if own.has(k) => {
                            moved = true;
                            a
                        }
                        _ => o,
                    };
                    let last = vs.last().copied();
                    let lw = last.and_then(|v| self.resolve(t, k, Some(v)));
                    // Every element's writer is read from.
                    for (i, v) in vs.iter().enumerate() {
                        let Some(l) = ix.writer.get(&(k, *v)).filter(|_| !ix.duplicated(k, *v))
                        else {
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
                            at,
                            key: k,
                            writer: w,
                            value: Some(*v),
                            version: false,
                        });
                    }
                    if let Some(writer) = if last.is_none() { Some(INIT) } else { lw } {
                        out.push(Ev {
                            op: o,
                            at,
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
                    for (k, v) in rows.iter() {
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
                            if matches!(op, Op::Append { .. })
                                && !first_append.iter().any(|(fk, _)| *fk == k)
                            {
                                first_append.push((k, o));
                            }
                            own.add(k);
                        }
                    }
                }
            }
        }
        if moved {
            // Stable: the reads of one op stay together, in their order.
            out.sort_by_key(|e| e.at);
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

/// Where a level's forced co edges go: the graph being built, and the
/// reads of an initial version after a writer of the key (the first
/// [`MAX_INIT_KEPT`] kept, all counted).
struct Forced<'a> {
    b: &'a mut GraphBuilder<WLabel>,
    inits: Vec<InitViolation>,
    init_count: usize,
}

impl<'a> Forced<'a> {
    fn new(b: &'a mut GraphBuilder<WLabel>) -> Forced<'a> {
        Forced {
            b,
            inits: Vec::new(),
            init_count: 0,
        }
    }

    /// Adds a forced co edge `t1 → t2`, or records an initial-version
    /// violation when `t2` is the initial transaction.
    fn co(&mut self, t1: u32, t2: u32, label: WLabel) {
        if t1 == t2 || t1 == INIT || t2 == NONE {
            return;
        }
        if t2 == INIT {
            self.init_count += 1;
            if self.inits.len() < MAX_INIT_KEPT {
                self.inits.push(InitViolation { t1, label });
            }
            return;
        }
        self.b.edge(t1, t2, label);
    }

    /// Adds what another part of the same walk found (its edges in `b`),
    /// after what this one holds.
    fn append(&mut self, b: GraphBuilder<WLabel>, inits: Vec<InitViolation>, init_count: usize) {
        self.b.append(b);
        let room = MAX_INIT_KEPT.saturating_sub(self.inits.len());
        self.inits.extend(inits.into_iter().take(room));
        self.init_count += init_count;
    }
}

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

    /// The same edges the other way, each list in increasing order.
    fn reversed(&self) -> Csr {
        let n = self.start.len() - 1;
        let mut start = vec![0u32; n + 1];
        for &b in &self.adj {
            start[b as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut adj = vec![0u32; self.adj.len()];
        for a in 0..n as u32 {
            for &b in self.of(a) {
                adj[fill[b as usize] as usize] = a;
                fill[b as usize] += 1;
            }
        }
        Csr { start, adj }
    }
}
