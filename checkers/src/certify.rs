//! Certificates: verdicts that carry their own proof, and an independent
//! verifier for them.
//!
//! # What a certificate is
//!
//! The fast checker decides a level with clever machinery (dense indexes,
//! inferred version orders, constraint solving, saturation). A bug there
//! turns into a wrong verdict that nobody can see. A [`Certificate`] is the
//! verdict *together with a proof of it* in a form that is cheap to check:
//!
//! * an `ok` verdict carries a [`Witness`]: an execution (a serial order, an
//!   SI schedule of begin and commit events, or a commit order for the weak
//!   levels) that explains every read of the history;
//! * an `anomalous` verdict carries [`Refutation`]s: a non-cyclic finding
//!   (a read no execution can produce), a cycle of orderings every valid
//!   execution must contain, a lost update, or a small sub-history that is
//!   already inconsistent by brute force.
//!
//! [`verify`] re-checks the proof against the history and the definition of
//! the level, and nothing else.
//!
//! # Why it is separate
//!
//! This module shares no code with the fast checker: it reads the
//! [`history`] types directly, re-derives every read-from and every edge
//! from the ops, and uses only [`AnomalyKind`] for names and
//! [`oracle::satisfies`](crate::oracle::satisfies) for tiny sub-histories.
//! Its semantics are those of [`oracle`](crate::oracle), checked literally
//! but on one given execution instead of all of them, so the checks stay
//! near-linear (`O(ops log n)`) while the tests compare them with the
//! oracle on thousands of random histories.
//!
//! # What a witness proves
//!
//! A level holds iff *some* execution of its kind explains the history; a
//! witness names one, so checking that it is an execution of the level is
//! a complete proof of `ok`:
//!
//! * [`Witness::Serial`] (ser, strong-session-ser, sser): the committed
//!   transactions in a serial order. Every `ok` transaction must appear
//!   once, no `fail` one, and `info` ones that appear are the committed
//!   ones. Replaying in order with one current value (or list) per key,
//!   every read of an `ok` transaction must return its own latest write of
//!   the key, or the store's value (lists: the store's list followed by its
//!   own appends). Session order (earlier transaction of a session first)
//!   and real-time order (an `ok` transaction that ended before another
//!   started comes first) must hold when the level uses them. With
//!   `use_dbts`, timestamped writers of a key appear in commit-timestamp
//!   order. That is exactly the oracle's definition, for one order.
//! * [`Witness::Schedule`] (si, strong-session-si, strong-si): begin and
//!   commit events. Each committed transaction begins once then commits
//!   once; its reads see what committed before its begin (plus its own
//!   writes), checked by replaying the events with one store (a read is
//!   checked at the begin event, when the store is the snapshot); no two
//!   writers of a key overlap (first committer wins: at each commit, the
//!   latest earlier commit of a writer of each written key must precede the
//!   begin); session and real-time order put the earlier transaction's
//!   commit before the later one's begin. With `use_dbts` the events are in
//!   timestamp order (begin at `dbts.start`, commit at `dbts.commit`, begin
//!   first at equal timestamps).
//! * [`Witness::CommitOrder`] (rc, ra, cc, pc): a total commit order `co`
//!   (Biswas & Enea). Written values must be unique; every read of an `ok`
//!   transaction must name a committed writer's final write (or its own
//!   latest write); `co` must extend session order and read-from; and for
//!   each read of `x` by `t3` from `t2` and every other committed writer
//!   `t1` of `x`, the level's premise must imply `t1 co t2`. The premise is
//!   checked without enumerating pairs: rc and ra keep, per key, the two
//!   latest (in `co`) premise writers and compare with `t2`; ra's session
//!   part needs only the latest earlier writer of the session; cc uses
//!   vector clocks over sessions (computed in `co` order) and, per session
//!   and key, the latest writer inside the causal past (binary search); pc
//!   needs only the latest writer of `x` at or before the latest direct
//!   predecessor of `t3`, which must be `t2`. In each case the writers
//!   skipped are ordered before the one checked by session order or by
//!   `co` itself, so checking that one is checking all.
//!
//! # What a refutation proves
//!
//! A refutation shows that *no* execution of the level exists:
//!
//! * [`Refutation::Finding`]: one read that no execution of any kind can
//!   produce (a value nobody wrote, a failed writer's value, an
//!   intermediate or future value, not seeing one's own write, two
//!   different values without a write between (forbidden from ra and si
//!   up), list reads that are not prefixes of one another or repeat an
//!   element). A duplicate written value breaks the history model's
//!   unique-value rule rather than the replay semantics; it is accepted at
//!   every level, as the lattice says. On a range read, each row is a read
//!   of its key and each key in range that is not listed a read of it as
//!   absent: a finding holds when one of them shows it (an aborted,
//!   intermediate, thin-air or future row; a key written before by the
//!   transaction that does not show its own last write; a key seen
//!   otherwise by an earlier read).
//! * [`Refutation::Cycle`]: every edge is checked against its evidence and
//!   means "in every valid execution, both ends are committed and `from`
//!   comes before `to`" (in the serial order, or, for SI, between the
//!   named begin/commit events; see [`EdgeClaim`]). A cycle of such
//!   orderings is a contradiction. For SI the begin/commit mapping and the
//!   rule that a path may go from a transaction's begin to its own commit
//!   but not back make the same argument with events.
//! * [`Refutation::LostUpdate`]: two committed transactions both read one
//!   version of a key and both overwrote it. In a serial order the later
//!   one must see the earlier one's write; in an SI schedule first
//!   committer wins forces the later one to begin after the earlier one's
//!   commit, so it sees that write too. Not a violation at the weak levels.
//! * [`Refutation::SubHistory`]: a restriction of any valid execution to a
//!   set `S` of transactions is a valid execution of the sub-history that
//!   keeps `S` and only the reads whose value was written inside `S` (the
//!   latest writer before a read, if in `S`, is still the latest in `S`;
//!   session, real-time and first-committer constraints restrict; weak
//!   axiom premises only shrink). So if brute force finds the sub-history
//!   inconsistent, so is the history.
//! * [`Refutation::WeakCycle`]: a cycle of session, read-from and axiom
//!   edges; each axiom edge is re-derived from its read and premise, and
//!   every such edge must be in every valid commit order.
//!
//! Range reads are replayed for the SER and SI families (each row listed
//! must be the visible version, and each key visible in the range must be
//! listed); the weak levels and sub-histories return
//! [`CertError::Unsupported`] for them (the oracle handles registers only).
//! `use_dbts` constrains the SER and SI families only; weak witnesses
//! ignore it.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cell::OnceCell;

use history::{History, Key, Level, Op, Status, Value};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::anomaly::AnomalyKind;

pub mod derivation;
pub mod plain_rc;

/// The initial transaction, as an endpoint of a weak axiom edge (a read of
/// the absent version reads from it).
pub const INIT: u32 = u32::MAX;

/// Above this many transactions a sub-history is not brute-forced.
pub const MAX_SUB_TXNS: usize = 9;
/// The same for the SI family, whose brute force enumerates begin/commit
/// interleavings (7 transactions already take ~0.3 s, 9 take minutes).
pub const MAX_SUB_TXNS_SI: usize = 6;
/// The cc check keeps one vector clock (one counter per session) per
/// committed transaction whose so/wr successors are not all done; above
/// this many counters alive at once it refuses.
pub const MAX_CLOCK_CELLS: usize = 1 << 30;

/// Above this many `info` transactions a sub-history is not brute-forced.
pub const MAX_SUB_INFO: usize = 4;

/// A claim the checker makes, in a form this module can verify on its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Witness {
    /// SER family: the committed transactions in a serial order.
    Serial(Vec<u32>),
    /// SI family: begin (false) and commit (true) events of the committed
    /// transactions, in order.
    Schedule(Vec<(u32, bool)>),
    /// Weak levels: a total commit order of the committed transactions
    /// (Biswas & Enea axioms).
    CommitOrder(Vec<u32>),
}

/// One edge of a refuting cycle, as the checker claims it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedEdge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeClaim,
    pub key: Option<Key>,
}

/// What an edge of a [`Refutation::Cycle`] claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeClaim {
    /// `to` read `from`'s installed version of key (or an element `from`
    /// appended, for lists).
    Wr,
    /// `from`'s version of key precedes `to`'s, because of `why`.
    Ww(WwWhy),
    /// `from` read key's version installed by `read_from` (None =
    /// initial/absent version) and `to`'s version comes after it: `to`'s
    /// precedence over `read_from` justified by `why` (ignored when
    /// read_from is None: every installed version follows the initial one).
    Rw { read_from: Option<u32>, why: WwWhy },
    /// Same session, `from` first.
    So,
    /// `from` is ok and ended before `to` started (client times).
    Rt,
    /// SI-model event edge from the database's timestamps: `from`'s event
    /// (commit if from_commit) has a smaller timestamp than `to`'s event (or
    /// equal, begin-before-commit).
    Ts { from_commit: bool, to_commit: bool },
}

/// Why one version of a key precedes another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WwWhy {
    /// `to` read `from`'s version and then wrote key itself: it installed
    /// the next version.
    ReadModifyWrite,
    /// `from` read key as absent and then wrote it: `from` installed the
    /// first version, before every other writer (`to`).
    FirstWriter,
    /// An ok list read of key shows `from`'s appended element before
    /// `to`'s.
    ListOrder,
    /// With use_dbts: both have commit timestamps and from's is smaller.
    DbTs,
    /// A chain of the above through intermediate writers (from -> c1 -> ...
    /// -> to): each pair is the next writer and the reason for the link
    /// into it; the last pair's writer is `to`.
    Chain(Vec<(u32, WwWhy)>),
}

impl ClaimedEdge {
    /// The same claim over other transaction ids (see
    /// [`Derivation::renamed`](derivation::Derivation::renamed)).
    pub fn renamed(&self, id: &impl Fn(u32) -> u32) -> ClaimedEdge {
        let kind = match &self.kind {
            EdgeClaim::Ww(why) => EdgeClaim::Ww(why.renamed(id)),
            EdgeClaim::Rw { read_from, why } => EdgeClaim::Rw {
                read_from: read_from.map(id),
                why: why.renamed(id),
            },
            other => other.clone(),
        };
        ClaimedEdge {
            from: id(self.from),
            to: id(self.to),
            kind,
            key: self.key.clone(),
        }
    }
}

impl WwWhy {
    fn renamed(&self, id: &impl Fn(u32) -> u32) -> WwWhy {
        match self {
            WwWhy::Chain(links) => WwWhy::Chain(
                links
                    .iter()
                    .map(|(t, why)| (id(*t), why.renamed(id)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// One edge of a [`Refutation::WeakCycle`]: `from` commits before `to` in
/// every valid commit order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeakEdge {
    pub from: u32,
    /// [`INIT`] for an axiom edge into the initial transaction (a read of
    /// the absent version): such an edge is a contradiction on its own.
    pub to: u32,
    pub why: WeakWhy,
}

/// The evidence of a [`WeakEdge`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WeakWhy {
    /// Session order: both ok, same session, `from` first.
    So,
    /// Read-from: `to` (ok) read `from`'s version of key.
    Wr { key: Key },
    /// The level's axiom: `reader`'s op `op` read `key` from `to` (register
    /// read), `from` also wrote `key`, and `premise` holds.
    Axiom {
        reader: u32,
        op: u32,
        key: Key,
        premise: Premise,
    },
}

/// The premise of an axiom edge `t1 -> t2` for reader `t3`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Premise {
    /// rc (and up): an earlier op of `t3` read from `t1`.
    EarlierRead { op: u32 },
    /// ra (and up): `t1` precedes `t3` in session order.
    Session,
    /// ra (and up): `t3` read `key` from `t1`.
    ReadFrom { key: Key },
    /// cc and pc: a path of session / read-from edges from `t1` to `t3`.
    Path(Vec<WeakEdge>),
}

/// A proof that the history violates the level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refutation {
    /// A non-cyclic anomaly at txn `txn`, op index `op`.
    Finding {
        kind: AnomalyKind,
        txn: u32,
        op: u32,
    },
    /// A cycle whose every edge the history forces.
    Cycle(Vec<ClaimedEdge>),
    /// Two committed txns both read key's version from `base` (None =
    /// initial) and both wrote key.
    LostUpdate {
        key: Key,
        base: Option<u32>,
        a: u32,
        b: u32,
    },
    /// A small set of transactions that on its own violates the level:
    /// re-decided by brute force ([`oracle::satisfies`](crate::oracle::satisfies))
    /// on the sub-history that keeps these transactions and drops every
    /// read of a value written outside them. Registers only; at most
    /// [`MAX_SUB_TXNS`] transactions ([`MAX_SUB_TXNS_SI`] for the SI family)
    /// and [`MAX_SUB_INFO`] info ones.
    SubHistory(Vec<u32>),
    /// Weak levels: a cycle of session, read-from and axiom edges.
    WeakCycle(Vec<WeakEdge>),
    /// SER and SI families: a derivation (what pruning the polygraph did):
    /// steps that each fix the commit order of two transactions because
    /// the other order closes a cycle, then a cycle no order avoids.
    Derivation(crate::certify::derivation::Derivation),
}

/// A verdict with its proof.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Certificate {
    pub level: Level,
    pub use_dbts: bool,
    pub claim: Claim,
}

/// What the certificate claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Claim {
    Ok(Witness),
    Anomalous(Vec<Refutation>),
}

/// Why a certificate does not prove its claim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    #[error("a {witness} witness does not fit level {level}")]
    WrongWitness { witness: &'static str, level: Level },
    #[error("transaction index {0} is out of range")]
    NoSuchTxn(u32),
    #[error("T{0} appears twice in the witness")]
    Duplicate(u32),
    #[error("ok transaction T{0} is missing from the witness")]
    MissingOk(u32),
    #[error("failed transaction T{0} is in the witness")]
    FailIncluded(u32),
    #[error("schedule: T{txn} {why}")]
    BadEvents { txn: u32, why: &'static str },
    #[error("T{txn} op {op} read {key} = {got}, but the witness gives {want}")]
    WrongRead {
        txn: u32,
        op: u32,
        key: Key,
        got: String,
        want: String,
    },
    #[error("T{txn} op {op}: {why}")]
    UnexplainedRead { txn: u32, op: u32, why: String },
    #[error("session order T{before} -> T{after} is not respected")]
    SessionOrder { before: u32, after: u32 },
    #[error("real-time order T{before} -> T{after} is not respected (T{before} ended before T{after} started)")]
    RealTime { before: u32, after: u32 },
    #[error("read-from T{from} -> T{to} is not in the commit order")]
    ReadFromOrder { from: u32, to: u32 },
    #[error("key {key}: T{first} is ordered before T{second} but has a larger commit timestamp")]
    DbTsKeyOrder { key: Key, first: u32, second: u32 },
    #[error("event {}(T{first}) comes before {}(T{second}) against their timestamps", if *.first_commit { "commit" } else { "begin" }, if *.second_commit { "commit" } else { "begin" })]
    DbTsEvents {
        first: u32,
        first_commit: bool,
        second: u32,
        second_commit: bool,
    },
    #[error("first committer wins broken on key {key}: T{other} commits while T{txn} runs")]
    FirstCommitterWins { txn: u32, other: u32, key: Key },
    #[error("key {key}: value {value} is written twice (T{first} and T{second})")]
    DuplicateValue {
        key: Key,
        value: Value,
        first: u32,
        second: u32,
    },
    #[error("{level} axiom broken: T{reader} op {op} read {key} from {t2}, T{t1} also wrote {key}, the premise holds, but T{t1} does not commit first")]
    Axiom {
        level: Level,
        reader: u32,
        op: u32,
        key: Key,
        t1: u32,
        t2: String,
    },
    #[error("an anomalous claim needs at least one refutation")]
    NoRefutation,
    #[error("{0}")]
    BadDerivation(String),
    #[error("finding {kind} at T{txn} op {op} does not hold: {why}")]
    BadFinding {
        kind: AnomalyKind,
        txn: u32,
        op: u32,
        why: String,
    },
    #[error("cycle edge {index} (T{from} -> T{to}) does not hold: {why}")]
    BadEdge {
        index: usize,
        from: u32,
        to: u32,
        why: String,
    },
    #[error("cycle edges {index} and {next} do not connect (or the cycle is empty)")]
    Disconnected { index: usize, next: usize },
    #[error("level {level} allows this: {why}")]
    NotForbidden { level: Level, why: String },
    #[error("lost update on {key} by T{a} and T{b} does not hold: {why}")]
    BadLostUpdate {
        key: Key,
        a: u32,
        b: u32,
        why: String,
    },
    #[error("the sub-history of {txns:?} satisfies {level}")]
    SubHistoryHolds { txns: Vec<u32>, level: Level },
    #[error("sub-history too large to brute-force ({txns} transactions, {info} info; at most {max} and {MAX_SUB_INFO})")]
    TooLarge {
        txns: usize,
        info: usize,
        max: usize,
    },
    #[error("unsupported: {0}")]
    Unsupported(String),
}

type R<T> = Result<T, CertError>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    Ser,
    Si,
    Weak,
}

fn family(l: Level) -> Family {
    match l {
        Level::Ser | Level::StrongSessionSer | Level::Sser => Family::Ser,
        Level::Si | Level::StrongSessionSi | Level::StrongSi => Family::Si,
        Level::Rc | Level::Ra | Level::Cc | Level::Pc => Family::Weak,
    }
}

/// Session order constrains executions of this level.
fn uses_so(l: Level) -> bool {
    l.uses_sessions() || l.uses_real_time()
}

/// Checks a certificate against the history: `Ok(())` when it proves its
/// claim.
pub fn verify(h: &History, cert: &Certificate) -> Result<(), CertError> {
    verify_prepared(h, cert, None)
}

/// [`verify`], with what [`plain_rc::prepare`] found beforehand (when the
/// certificate is an rc commit order of a plain register history).
pub fn verify_prepared(
    h: &History,
    cert: &Certificate,
    prep: Option<&plain_rc::Prepared>,
) -> Result<(), CertError> {
    if h.txns.len() >= INIT as usize {
        return Err(CertError::Unsupported(
            "more than 2^32-1 transactions".into(),
        ));
    }
    match &cert.claim {
        Claim::Ok(w) => {
            // The linear check; when it does not hold, the general one
            // names the violation.
            if let (Witness::CommitOrder(co), Some(p), Level::Rc) = (w, prep, cert.level) {
                if plain_rc::holds(h, p, co) {
                    return Ok(());
                }
            }
            verify_witness(h, cert.level, cert.use_dbts, w)
        }
        Claim::Anomalous(refs) => {
            if refs.is_empty() {
                return Err(CertError::NoRefutation);
            }
            let ctx = Ctx::new(h);
            for r in refs {
                verify_refutation(&ctx, cert.level, cert.use_dbts, r)?;
            }
            Ok(())
        }
    }
}

/// Whether one refutation holds at `level` (database timestamps not
/// trusted): the check a search makes before it believes its own proof.
pub fn refutes(h: &History, level: Level, r: Refutation) -> bool {
    verify_each(h, level, false, &[r]).iter().all(|v| v.is_ok())
}

/// Checks each refutation on its own (one shared index of the history), so
/// a caller can tell the ones that hold from the ones that cannot be
/// checked ([`CertError::Unsupported`], [`CertError::TooLarge`]) or fail.
pub fn verify_each(
    h: &History,
    level: Level,
    use_dbts: bool,
    refs: &[Refutation],
) -> Vec<Result<(), CertError>> {
    if h.txns.len() >= INIT as usize {
        return refs
            .iter()
            .map(|_| {
                Err(CertError::Unsupported(
                    "more than 2^32-1 transactions".into(),
                ))
            })
            .collect();
    }
    let ctx = Ctx::new(h);
    refs.iter()
        .map(|r| verify_refutation(&ctx, level, use_dbts, r))
        .collect()
}

/// Checks that `w` is an execution of `level` explaining `h`.
pub fn verify_witness(h: &History, level: Level, use_dbts: bool, w: &Witness) -> R<()> {
    match (family(level), w) {
        (Family::Ser, Witness::Serial(order)) => verify_serial(h, level, use_dbts, order),
        (Family::Si, Witness::Schedule(ev)) => verify_schedule(h, level, use_dbts, ev),
        (Family::Weak, Witness::CommitOrder(co)) => verify_commit_order(h, level, co),
        (_, w) => Err(CertError::WrongWitness {
            witness: match w {
                Witness::Serial(_) => "serial",
                Witness::Schedule(_) => "schedule",
                Witness::CommitOrder(_) => "commit-order",
            },
            level,
        }),
    }
}

// ---------------------------------------------------------------------------
// Shared small pieces.
// ---------------------------------------------------------------------------

const NONE: u32 = u32::MAX;

fn fmt_opt(v: Option<Value>) -> String {
    v.map_or_else(|| "absent".to_string(), |v| v.to_string())
}

fn fmt_list(v: &[Value]) -> String {
    format!("{v:?}")
}

/// The distinct keys a transaction writes (write, insert, delete, append).
fn written_keys(h: &History, t: u32) -> Vec<Key> {
    let mut ks: Vec<Key> = h.txns[t as usize]
        .ops
        .iter()
        .filter_map(|o| o.written().map(|(k, _)| k.clone()))
        .collect();
    ks.sort();
    ks.dedup();
    ks
}

/// Positions of the transactions of `order`, checking that it lists each
/// committed transaction once: every ok one, no failed one.
fn positions(h: &History, order: &[u32]) -> R<Vec<u32>> {
    let n = h.txns.len();
    let mut pos = vec![NONE; n];
    for (i, &t) in order.iter().enumerate() {
        if t as usize >= n {
            return Err(CertError::NoSuchTxn(t));
        }
        if pos[t as usize] != NONE {
            return Err(CertError::Duplicate(t));
        }
        if h.txns[t as usize].status == Status::Fail {
            return Err(CertError::FailIncluded(t));
        }
        pos[t as usize] = i as u32;
    }
    check_all_ok_present(h, &pos)?;
    Ok(pos)
}

fn check_all_ok_present(h: &History, pos: &[u32]) -> R<()> {
    for (t, txn) in h.txns.iter().enumerate() {
        if txn.status == Status::Ok && pos[t] == NONE {
            return Err(CertError::MissingOk(t as u32));
        }
    }
    Ok(())
}

/// The two largest `(position, txn)` pairs added, for distinct txns.
#[derive(Clone, Copy, Default, Debug)]
struct Top2 {
    a: Option<(u32, u32)>,
    b: Option<(u32, u32)>,
}

impl Top2 {
    fn add(&mut self, pos: u32, txn: u32) {
        if self.a.is_none_or(|x| pos > x.0) {
            self.b = self.a;
            self.a = Some((pos, txn));
        } else if self.b.is_none_or(|x| pos > x.0) {
            self.b = Some((pos, txn));
        }
    }

    /// The largest pair whose txn is not `txn`.
    fn best_except(&self, txn: u32) -> Option<(u32, u32)> {
        match self.a {
            Some(x) if x.1 == txn => self.b,
            other => other,
        }
    }
}

/// Session order: of two consecutive committed transactions of a session
/// (history order), the earlier's `end_pos` precedes the later's
/// `start_pos`.
fn check_sessions(h: &History, end_pos: &[u32], start_pos: &[u32]) -> R<()> {
    let mut last: HashMap<u64, u32> = HashMap::default();
    for (t, txn) in h.txns.iter().enumerate() {
        if start_pos[t] == NONE {
            continue;
        }
        if let Some(&p) = last.get(&txn.session) {
            if end_pos[p as usize] >= start_pos[t] {
                return Err(CertError::SessionOrder {
                    before: p,
                    after: t as u32,
                });
            }
        }
        last.insert(txn.session, t as u32);
    }
    Ok(())
}

/// Real-time order: every ok `t1` that ended before a committed `t2`
/// started has `end_pos[t1] < start_pos[t2]`. Sorting by end and keeping
/// prefix maxima makes it `O(n log n)`.
fn check_real_time(h: &History, end_pos: &[u32], start_pos: &[u32]) -> R<()> {
    let mut ends: Vec<(u64, u32)> = h
        .txns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == Status::Ok)
        .filter_map(|(i, t)| t.end.map(|e| (e, i as u32)))
        .collect();
    ends.sort_unstable();
    let mut prefix: Vec<Top2> = Vec::with_capacity(ends.len());
    let mut cur = Top2::default();
    for &(_, t) in &ends {
        cur.add(end_pos[t as usize], t);
        prefix.push(cur);
    }
    for (t2, txn) in h.txns.iter().enumerate() {
        let (Some(s), true) = (txn.start, start_pos[t2] != NONE) else {
            continue;
        };
        let idx = ends.partition_point(|&(e, _)| e < s);
        if idx == 0 {
            continue;
        }
        if let Some((p, t1)) = prefix[idx - 1].best_except(t2 as u32) {
            if p >= start_pos[t2] {
                return Err(CertError::RealTime {
                    before: t1,
                    after: t2 as u32,
                });
            }
        }
    }
    Ok(())
}

/// With timestamps: along the commit sequence, timestamped writers of each
/// key appear in non-decreasing commit-timestamp order.
fn check_dbts_keys(h: &History, commits: impl Iterator<Item = u32>) -> R<()> {
    let mut max: HashMap<Key, (u64, u32)> = HashMap::default();
    for t in commits {
        let Some(c) = h.txns[t as usize].dbts.and_then(|d| d.commit) else {
            continue;
        };
        for k in written_keys(h, t) {
            match max.get(&k) {
                Some(&(m, w)) if m > c => {
                    return Err(CertError::DbTsKeyOrder {
                        key: k,
                        first: w,
                        second: t,
                    })
                }
                Some(&(m, _)) if m == c => {}
                _ => {
                    max.insert(k, (c, t));
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Replay (SER and SI).
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Store {
    /// The registers, for reads of one key.
    reg: HashMap<Key, Value>,
    /// The same, ordered, for range reads: built at the first one, then
    /// kept up to date.
    sorted: OnceCell<BTreeMap<Key, Value>>,
    list: HashMap<Key, Vec<Value>>,
}

impl Store {
    /// The registers in key order.
    fn sorted(&self) -> &BTreeMap<Key, Value> {
        self.sorted
            .get_or_init(|| self.reg.iter().map(|(k, v)| (k.clone(), *v)).collect())
    }
}

/// What a transaction installs when it commits.
struct Effects {
    /// Final register value per key.
    reg: Vec<(Key, Value)>,
    /// Appends, in program order.
    app: Vec<(Key, Value)>,
    /// The distinct keys written.
    keys: Vec<Key>,
}

/// Runs `t` against `store` (the state it sees), checking the reads of an
/// ok transaction; returns what it installs.
fn run_txn(h: &History, t: u32, store: &Store) -> R<Effects> {
    let txn = &h.txns[t as usize];
    let check = txn.status == Status::Ok;
    let mut own: BTreeMap<&Key, Value> = BTreeMap::new();
    let mut own_app: HashMap<&Key, Vec<Value>> = HashMap::default();
    let mut app = Vec::new();
    for (o, op) in txn.ops.iter().enumerate() {
        match op {
            Op::Read { key, value } => {
                if !check {
                    continue;
                }
                let want = own.get(key).or_else(|| store.reg.get(key)).copied();
                if want != *value {
                    return Err(CertError::WrongRead {
                        txn: t,
                        op: o as u32,
                        key: key.clone(),
                        got: fmt_opt(*value),
                        want: fmt_opt(want),
                    });
                }
            }
            Op::ReadList { key, values } => {
                let (true, Some(vs)) = (check, values) else {
                    continue;
                };
                let base = store.list.get(key).map_or(&[][..], |v| v.as_slice());
                let mine = own_app.get(key).map_or(&[][..], |v| v.as_slice());
                let same = vs.len() == base.len() + mine.len()
                    && vs[..base.len()] == *base
                    && vs[base.len()..] == *mine;
                if !same {
                    let mut want = base.to_vec();
                    want.extend_from_slice(mine);
                    return Err(CertError::WrongRead {
                        txn: t,
                        op: o as u32,
                        key: key.clone(),
                        got: fmt_list(vs),
                        want: fmt_list(&want),
                    });
                }
            }
            Op::Write { key, value } | Op::Insert { key, value } | Op::Delete { key, value } => {
                own.insert(key, *value);
            }
            Op::Append { key, value } => {
                own_app.entry(key).or_default().push(*value);
                app.push((key.clone(), *value));
            }
            Op::RangeRead { lo, hi, rows } => {
                if !check {
                    continue;
                }
                let bad = |key: &Key, got: String, want: Option<Value>| {
                    Err(CertError::WrongRead {
                        txn: t,
                        op: o as u32,
                        key: key.clone(),
                        got,
                        want: fmt_opt(want),
                    })
                };
                // Each row listed is the version visible now...
                for (k, v) in rows {
                    let want = own.get(k).or_else(|| store.reg.get(k)).copied();
                    if want != Some(*v) {
                        return bad(k, format!("{v} (range row)"), want);
                    }
                }
                // ... and each key visible in range is listed (else it was
                // read as absent). The scans stop at the first key not
                // listed, so they visit at most rows + 1 keys each.
                if lo <= hi {
                    let listed: HashSet<&Key> = rows.iter().map(|(k, _)| k).collect();
                    let visible = own.range::<&Key, _>(lo..=hi).map(|(k, v)| (*k, *v)).chain(
                        store
                            .sorted()
                            .range::<Key, _>(lo..=hi)
                            .map(|(k, v)| (k, *v)),
                    );
                    for (k, v) in visible {
                        if !listed.contains(k) {
                            return bad(k, "absent (not in the range read)".into(), Some(v));
                        }
                    }
                }
            }
        }
    }
    let mut keys: Vec<Key> = own
        .keys()
        .map(|k| (*k).clone())
        .chain(app.iter().map(|(k, _)| k.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    Ok(Effects {
        reg: own.into_iter().map(|(k, v)| (k.clone(), v)).collect(),
        app,
        keys,
    })
}

fn install(store: &mut Store, e: Effects) {
    for (k, v) in e.reg {
        if let Some(sorted) = store.sorted.get_mut() {
            sorted.insert(k.clone(), v);
        }
        store.reg.insert(k, v);
    }
    for (k, v) in e.app {
        store.list.entry(k).or_default().push(v);
    }
}

fn verify_serial(h: &History, level: Level, use_dbts: bool, order: &[u32]) -> R<()> {
    let pos = positions(h, order)?;
    let mut store = Store::default();
    for &t in order {
        let e = run_txn(h, t, &store)?;
        install(&mut store, e);
    }
    if uses_so(level) {
        check_sessions(h, &pos, &pos)?;
    }
    if level.uses_real_time() {
        check_real_time(h, &pos, &pos)?;
    }
    if use_dbts {
        check_dbts_keys(h, order.iter().copied())?;
    }
    Ok(())
}

fn verify_schedule(h: &History, level: Level, use_dbts: bool, events: &[(u32, bool)]) -> R<()> {
    let n = h.txns.len();
    let mut bpos = vec![NONE; n];
    let mut cpos = vec![NONE; n];
    for (i, &(t, c)) in events.iter().enumerate() {
        if t as usize >= n {
            return Err(CertError::NoSuchTxn(t));
        }
        let bad = |why| Err(CertError::BadEvents { txn: t, why });
        let tu = t as usize;
        if !c {
            if bpos[tu] != NONE {
                return bad("begins twice");
            }
            bpos[tu] = i as u32;
        } else {
            if bpos[tu] == NONE {
                return bad("commits before it begins");
            }
            if cpos[tu] != NONE {
                return bad("commits twice");
            }
            cpos[tu] = i as u32;
        }
    }
    for t in 0..n {
        if bpos[t] != NONE && cpos[t] == NONE {
            return Err(CertError::BadEvents {
                txn: t as u32,
                why: "begins but never commits",
            });
        }
        if cpos[t] != NONE && h.txns[t].status == Status::Fail {
            return Err(CertError::FailIncluded(t as u32));
        }
    }
    check_all_ok_present(h, &cpos)?;
    // Replay: reads are checked at the begin event, against the store of
    // what committed before it; writes are installed at the commit event.
    let mut store = Store::default();
    let mut pending: HashMap<u32, Effects> = HashMap::default();
    // Per key, the latest commit (position, txn) of a writer.
    let mut last_commit: HashMap<Key, (u32, u32)> = HashMap::default();
    // The latest begun transaction's effects, outside `pending`: most
    // commit right after they begin (always in a serial schedule).
    let mut latest: Option<(u32, Effects)> = None;
    for (i, &(t, c)) in events.iter().enumerate() {
        if !c {
            if let Some((u, e)) = latest.take() {
                pending.insert(u, e);
            }
            latest = Some((t, run_txn(h, t, &store)?));
            continue;
        }
        let e = match latest.take() {
            Some((u, e)) if u == t => e,
            other => {
                if let Some((u, e)) = other {
                    pending.insert(u, e);
                }
                pending.remove(&t).expect("begun before commit")
            }
        };
        for k in &e.keys {
            if let Some(&(p, u)) = last_commit.get(k) {
                if p > bpos[t as usize] {
                    return Err(CertError::FirstCommitterWins {
                        txn: t,
                        other: u,
                        key: k.clone(),
                    });
                }
            }
            last_commit.insert(k.clone(), (i as u32, t));
        }
        install(&mut store, e);
    }
    if uses_so(level) {
        check_sessions(h, &cpos, &bpos)?;
    }
    if level.uses_real_time() {
        check_real_time(h, &cpos, &bpos)?;
    }
    if use_dbts {
        check_dbts_keys(h, events.iter().filter(|e| e.1).map(|e| e.0))?;
        check_dbts_events(h, events)?;
    }
    Ok(())
}

/// With timestamps, SI: timestamped events in non-decreasing (timestamp,
/// begin-before-commit) order.
fn check_dbts_events(h: &History, events: &[(u32, bool)]) -> R<()> {
    let mut max: Option<((u64, bool), u32)> = None;
    for &(t, c) in events {
        let Some(d) = h.txns[t as usize].dbts else {
            continue;
        };
        let ts = if c {
            match d.commit {
                Some(x) => x,
                None => continue,
            }
        } else {
            d.start
        };
        let key = (ts, c);
        match max {
            Some((m, u)) if key < m => {
                return Err(CertError::DbTsEvents {
                    first: u,
                    first_commit: m.1,
                    second: t,
                    second_commit: c,
                })
            }
            Some((m, _)) if key == m => {}
            _ => max = Some((key, t)),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Weak levels: a commit order.
// ---------------------------------------------------------------------------

/// One external read of a committed ok transaction.
struct ReadEv {
    t3: u32,
    op: u32,
    /// Where in program order it read: `op`, or for a list read after the
    /// transaction's own appends to the key, the first of those appends
    /// (the version they went on is what it shows before them).
    at: u32,
    key: Key,
    /// The transaction whose version was read, or [`INIT`].
    src: u32,
    /// Every transaction read from (list reads: each element's writer),
    /// as a range of `WeakCtx::srcs`.
    srcs: (usize, usize),
}

fn verify_commit_order(h: &History, level: Level, co: &[u32]) -> R<()> {
    // rc on a plain register history: a linear check; when it does not
    // hold, the general check names the violation.
    if level == Level::Rc && plain_rc::applies(h) {
        if let Some(p) = plain_rc::prepare(h) {
            if plain_rc::holds(h, &p, co) {
                return Ok(());
            }
        }
    }
    verify_commit_order_general(h, level, co)
}

/// The weak levels' commit-order check, for every kind of history.
fn verify_commit_order_general(h: &History, level: Level, co: &[u32]) -> R<()> {
    let n = h.txns.len();
    // Unique values over every write of the history: where each is, and
    // whether it is its transaction's final register write of the key. The
    // keys are owned (an `Int` inline): a probe compares them without
    // chasing a pointer into the history.
    let mut writer: HashMap<(Key, Value), (u32, u32, bool)> = HashMap::default();
    let mut later: HashSet<&Key> = HashSet::default();
    for (t, txn) in h.txns.iter().enumerate() {
        later.clear();
        for (o, op) in txn.ops.iter().enumerate().rev() {
            if let Some((k, v)) = op.written() {
                let register =
                    matches!(op, Op::Write { .. } | Op::Insert { .. } | Op::Delete { .. });
                let last = register && later.insert(k);
                match writer.entry((k.clone(), v)) {
                    std::collections::hash_map::Entry::Occupied(e) => {
                        return Err(CertError::DuplicateValue {
                            key: k.clone(),
                            value: v,
                            first: e.get().0,
                            second: t as u32,
                        });
                    }
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert((t as u32, o as u32, last));
                    }
                }
            }
        }
    }
    let pos = positions(h, co)?;
    let committed = |t: u32| pos[t as usize] != NONE;
    check_sessions(h, &pos, &pos)?;
    // The lists: per key, the committed appends in co order, and where each
    // appender's part ends.
    let mut full: HashMap<&Key, Vec<Value>> = HashMap::default();
    let mut list_end: HashMap<(u32, &Key), usize> = HashMap::default();
    for &t in co {
        for op in &h.txns[t as usize].ops {
            if let Op::Append { key, value } = op {
                let l = full.entry(key).or_default();
                l.push(*value);
                list_end.insert((t, key), l.len());
            }
        }
    }
    // Keys committed transactions write, in key order (for range reads).
    let ranges = h
        .txns
        .iter()
        .any(|t| t.ops.iter().any(|o| matches!(o, Op::RangeRead { .. })));
    let written: std::collections::BTreeSet<&Key> = co
        .iter()
        .filter(|_| ranges)
        .flat_map(|&t| h.txns[t as usize].ops.iter())
        .filter_map(|op| op.written().map(|(k, _)| k))
        .collect();
    // External read events.
    let mut evs: Vec<ReadEv> = Vec::new();
    let mut srcs: Vec<u32> = Vec::new();
    for (t, txn) in h.txns.iter().enumerate() {
        let t = t as u32;
        if txn.status != Status::Ok {
            continue; // info reads tell nothing; fail ones are not committed
        }
        let mut own: HashMap<&Key, Value> = HashMap::default();
        let mut own_app: HashMap<&Key, usize> = HashMap::default();
        let first_ev = evs.len();
        for (o, op) in txn.ops.iter().enumerate() {
            let bad = |why: String| CertError::UnexplainedRead {
                txn: t,
                op: o as u32,
                why,
            };
            // A range read is a read of each key in range: the rows it
            // lists, and every other key a committed transaction writes, as
            // absent.
            let points: Vec<(&Key, Option<Value>)> = match op {
                Op::Read { key, value } => vec![(key, *value)],
                Op::RangeRead { lo, hi, rows } => {
                    let mut ps: Vec<(&Key, Option<Value>)> =
                        rows.iter().map(|(k, v)| (k, Some(*v))).collect();
                    // An inverted range (`lo > hi`, as `BETWEEN 2 AND 1`
                    // gives) is empty: it reads no key as absent.
                    if lo <= hi {
                        for k in written.range::<Key, _>(lo..=hi) {
                            if !rows.iter().any(|(rk, _)| rk == *k) {
                                ps.push((*k, None));
                            }
                        }
                    }
                    ps
                }
                _ => Vec::new(),
            };
            for (key, value) in points {
                let value = &value;
                if let Some(&mine) = own.get(key) {
                    if *value != Some(mine) {
                        return Err(bad(format!(
                            "read {key} = {} after writing {mine}",
                            fmt_opt(*value)
                        )));
                    }
                    continue;
                }
                let src = match value {
                    None => INIT,
                    Some(v) => {
                        let Some(&(w, _, last)) = writer.get(&(key.clone(), *v)) else {
                            return Err(bad(format!("nobody wrote {key} = {v}")));
                        };
                        if w == t {
                            return Err(bad(format!("reads its own later write {key} = {v}")));
                        }
                        if !committed(w) {
                            return Err(bad(format!(
                                "read {key} = {v} from T{w}, not committed in the witness"
                            )));
                        }
                        if !last {
                            return Err(bad(format!(
                                "read {key} = {v}, not T{w}'s final write of {key}"
                            )));
                        }
                        w
                    }
                };
                let s = srcs.len();
                if src != INIT {
                    srcs.push(src);
                }
                evs.push(ReadEv {
                    t3: t,
                    op: o as u32,
                    at: o as u32,
                    key: key.clone(),
                    src,
                    srcs: (s, srcs.len()),
                });
            }
            match op {
                Op::Read { .. } | Op::RangeRead { .. } => {}
                Op::ReadList { key, values } => {
                    let Some(vs) = values else { continue };
                    let mine = own_app.get(key).copied().unwrap_or(0);
                    if vs.len() < mine {
                        return Err(bad(format!("list {key} misses its own appends")));
                    }
                    let ext = &vs[..vs.len() - mine];
                    // Its own appends must end the list, in order.
                    let own_vals: Vec<Value> = txn.ops[..o]
                        .iter()
                        .filter_map(|p| match p {
                            Op::Append { key: k, value } if k == key => Some(*value),
                            _ => None,
                        })
                        .collect();
                    if vs[vs.len() - mine..] != own_vals[..] {
                        return Err(bad(format!("list {key} does not end with its own appends")));
                    }

                    let src = match ext.last() {
                        None => INIT,
                        Some(v) => match writer.get(&(key.clone(), *v)) {
                            Some(&(w, _, _)) if w != t && committed(w) => w,
                            _ => {
                                return Err(bad(format!(
                                    "list {key} ends with {v}, not a committed append of another transaction"
                                )))
                            }
                        },
                    };
                    let expect = if mine > 0 {
                        // After its own appends: the version they went on,
                        // which holds every append committed before it.
                        let all = txn
                            .ops
                            .iter()
                            .filter(|p| matches!(p, Op::Append { key: k, .. } if k == key))
                            .count();
                        match list_end.get(&(t, key)) {
                            Some(&e) => &full[key][..e - all],
                            None => return Err(bad(format!("T{t} is not in the commit order"))),
                        }
                    } else if src == INIT {
                        &[][..]
                    } else {
                        match list_end.get(&(src, key)) {
                            Some(&e) => &full[key][..e],
                            None => return Err(bad(format!("T{src} appended nothing to {key}"))),
                        }
                    };
                    if ext != expect {
                        return Err(bad(format!(
                            "list {key} = {} is not the commit-order prefix {}",
                            fmt_list(ext),
                            fmt_list(expect)
                        )));
                    }
                    // After its own appends, it read (what they went on)
                    // at the first of them.
                    let at = if mine > 0 {
                        txn.ops
                            .iter()
                            .position(|p| matches!(p, Op::Append { key: k, .. } if k == key))
                            .unwrap_or(o) as u32
                    } else {
                        o as u32
                    };
                    let s = srcs.len();
                    let mut seen: HashSet<u32> = HashSet::default();
                    for v in ext {
                        let w = writer[&(key.clone(), *v)].0;
                        if seen.insert(w) {
                            srcs.push(w);
                        }
                    }
                    evs.push(ReadEv {
                        t3: t,
                        op: o as u32,
                        at,
                        key: key.clone(),
                        src,
                        srcs: (s, srcs.len()),
                    });
                }
                Op::Write { key, value }
                | Op::Insert { key, value }
                | Op::Delete { key, value } => {
                    own.insert(key, *value);
                }
                Op::Append { key, .. } => {
                    *own_app.entry(key).or_default() += 1;
                }
            }
        }
        // In program order of where each read happened.
        evs[first_ev..].sort_by_key(|e| e.at);
    }
    // co extends read-from (list elements are at or before their last one).
    for e in &evs {
        if e.src != INIT && pos[e.src as usize] >= pos[e.t3 as usize] {
            return Err(CertError::ReadFromOrder {
                from: e.src,
                to: e.t3,
            });
        }
    }
    let wc = WeakCtx {
        h,
        level,
        co,
        pos: &pos,
        evs: &evs,
        srcs: &srcs,
        wkeys: (0..n as u32)
            .map(|t| {
                if committed(t) {
                    written_keys(h, t)
                } else {
                    Vec::new()
                }
            })
            .collect(),
    };
    match level {
        Level::Rc => wc.rc(),
        Level::Ra => wc.ra(),
        Level::Cc => wc.cc(),
        Level::Pc => wc.pc(),
        _ => unreachable!("weak levels only"),
    }
}

/// One key's writers for the cc check: in-session indices (`idx`), one
/// run `(session, from, to)` of them per session.
#[derive(Default)]
struct Runs {
    runs: Vec<(u32, u32, u32)>,
    idx: Vec<u32>,
}

/// A cc clock entry (a count of a session's transactions): `i16` when
/// sessions are short enough, as its element-wise max vectorizes on
/// baseline x86-64, else `u32`.
trait ClockEntry: Copy + Ord + Default {
    fn of(x: u32) -> Self;
    fn get(self) -> u32;
}

impl ClockEntry for i16 {
    fn of(x: u32) -> Self {
        x as i16
    }
    fn get(self) -> u32 {
        self as u32
    }
}

impl ClockEntry for u32 {
    fn of(x: u32) -> Self {
        x
    }
    fn get(self) -> u32 {
        self
    }
}

/// cc is certified with one entry per written key, not per session, when
/// there are at most this many keys (or fewer than sessions).
const CC_FEW_KEYS: usize = 64;

#[cfg(test)]
thread_local! {
    /// Tests: force cc's per-session clocks (`Some(true)`) or per-key rows.
    static CC_CLOCKS: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

struct WeakCtx<'a> {
    h: &'a History,
    level: Level,
    co: &'a [u32],
    pos: &'a [u32],
    evs: &'a [ReadEv],
    srcs: &'a [u32],
    /// Sorted written keys of each committed transaction.
    wkeys: Vec<Vec<Key>>,
}

impl WeakCtx<'_> {
    fn violation(&self, e: &ReadEv, t1: u32) -> CertError {
        CertError::Axiom {
            level: self.level,
            reader: e.t3,
            op: e.op,
            key: e.key.clone(),
            t1,
            t2: if e.src == INIT {
                "the initial version".to_string()
            } else {
                format!("T{}", e.src)
            },
        }
    }

    /// `t1` (a premise writer of the read's key) must commit before the
    /// read's source.
    fn require_before(&self, e: &ReadEv, t1: u32) -> R<()> {
        if t1 == e.src {
            return Ok(());
        }
        if e.src == INIT || self.pos[t1 as usize] > self.pos[e.src as usize] {
            return Err(self.violation(e, t1));
        }
        Ok(())
    }

    fn sources(&self, e: &ReadEv) -> &[u32] {
        &self.srcs[e.srcs.0..e.srcs.1]
    }

    /// Events grouped by reader (they were made in history order).
    fn groups(&self) -> impl Iterator<Item = &[ReadEv]> {
        self.evs.chunk_by(|a, b| a.t3 == b.t3)
    }

    /// Keys that `s` wrote among `keys`: the smaller side is iterated.
    fn written_among<'k>(&self, s: u32, keys: &HashSet<&'k Key>) -> Vec<&'k Key> {
        let ws = &self.wkeys[s as usize];
        if ws.len() <= keys.len() {
            ws.iter().filter_map(|k| keys.get(k).copied()).collect()
        } else {
            keys.iter()
                .copied()
                .filter(|k| ws.binary_search(k).is_ok())
                .collect()
        }
    }

    /// rc: writers of `x` that an earlier read of `t3` read from.
    fn rc(&self) -> R<()> {
        for g in self.groups() {
            let keys: HashSet<&Key> = g.iter().map(|e| &e.key).collect();
            let mut seen: HashSet<u32> = HashSet::default();
            let mut best: HashMap<&Key, Top2> = HashMap::default();
            // The reads of one op (a range read's keys) are not earlier
            // than each other: their sources count from the next op on.
            let mut pending: Vec<u32> = Vec::new();
            let mut at = None;
            for e in g {
                if at != Some(e.at) {
                    at = Some(e.at);
                    for s in pending.drain(..) {
                        if seen.insert(s) {
                            for y in self.written_among(s, &keys) {
                                best.entry(y).or_default().add(self.pos[s as usize], s);
                            }
                        }
                    }
                }
                if let Some(b) = best.get(&e.key) {
                    if let Some((_, t1)) = b.best_except(e.src) {
                        self.require_before(e, t1)?;
                    }
                }
                pending.extend_from_slice(self.sources(e));
            }
        }
        Ok(())
    }

    /// ra: writers of `x` that `t3` read from, or that precede it in its
    /// session (the latest such is enough: session order chains the rest).
    fn ra(&self) -> R<()> {
        let h = self.h;
        let mut by_txn: Vec<&[ReadEv]> = vec![&[]; self.h.txns.len()];
        for g in self.groups() {
            by_txn[g[0].t3 as usize] = g;
        }
        let mut last_w: HashMap<(u64, &Key), u32> = HashMap::default();
        for (t3, txn) in h.txns.iter().enumerate() {
            let t3 = t3 as u32;
            if self.pos[t3 as usize] == NONE {
                continue;
            }
            let g = by_txn[t3 as usize];
            if !g.is_empty() {
                let keys: HashSet<&Key> = g.iter().map(|e| &e.key).collect();
                let mut seen: HashSet<u32> = HashSet::default();
                let mut best: HashMap<&Key, Top2> = HashMap::default();
                for e in g.iter() {
                    for &s in self.sources(e) {
                        if seen.insert(s) {
                            for y in self.written_among(s, &keys) {
                                best.entry(y).or_default().add(self.pos[s as usize], s);
                            }
                        }
                    }
                }
                for e in g.iter() {
                    if let Some((_, t1)) = best.get(&e.key).and_then(|b| b.best_except(e.src)) {
                        self.require_before(e, t1)?;
                    }
                    if let Some(&p) = last_w.get(&(txn.session, &e.key)) {
                        self.require_before(e, p)?;
                    }
                }
            }
            for k in &self.wkeys[t3 as usize] {
                last_w.insert((txn.session, k), t3);
            }
        }
        Ok(())
    }

    /// cc: writers of `x` in `t3`'s causal past. Vector clocks over sessions,
    /// computed in co order (which extends so and wr); per session and key,
    /// the latest writer inside the past, by binary search. A clock is kept
    /// only until its last so/wr successor (in co) has been computed, in
    /// reused slots, so memory follows the clocks alive at once, not all.
    fn cc(&self) -> R<()> {
        let mut len: HashMap<u64, usize> = HashMap::default();
        for (t, txn) in self.h.txns.iter().enumerate() {
            if self.pos[t] != NONE {
                *len.entry(txn.session).or_default() += 1;
            }
        }
        // Few written keys (fewer than sessions): one entry per key, not
        // per session.
        let mut keys: HashMap<&Key, u32> = HashMap::default();
        for ws in &self.wkeys {
            for key in ws {
                let next = keys.len() as u32;
                keys.entry(key).or_insert(next);
            }
        }
        let by_keys = keys.len() <= len.len().max(CC_FEW_KEYS);
        #[cfg(test)]
        let by_keys = CC_CLOCKS
            .with(|f| f.get())
            .map_or(by_keys, |clocks| !clocks);
        if by_keys {
            self.cc_by_keys(&keys)
        } else if len.values().all(|&l| l < i16::MAX as usize) {
            self.cc_with::<i16>()
        } else {
            self.cc_with::<u32>()
        }
    }

    /// Each transaction's read groups, by reader.
    fn reads_by_txn(&self) -> Vec<&[ReadEv]> {
        let mut by_txn: Vec<&[ReadEv]> = vec![&[]; self.h.txns.len()];
        for g in self.groups() {
            by_txn[g[0].t3 as usize] = g;
        }
        by_txn
    }

    /// `t`'s so/wr predecessors, into `out`.
    fn preds(&self, so_pred: &[u32], by_txn: &[&[ReadEv]], t: u32, out: &mut Vec<u32>) {
        out.clear();
        if so_pred[t as usize] != NONE {
            out.push(so_pred[t as usize]);
        }
        for e in by_txn[t as usize] {
            out.extend_from_slice(self.sources(e));
        }
    }

    /// The co position of each transaction's last so/wr successor: after
    /// it, the transaction's row of a causal-past table can be freed.
    fn last_use(&self, preds: &impl Fn(u32, &mut Vec<u32>)) -> Vec<u32> {
        let mut last_use = vec![NONE; self.h.txns.len()];
        let mut ps: Vec<u32> = Vec::new();
        for (i, &t) in self.co.iter().enumerate() {
            preds(t, &mut ps);
            for &p in &ps {
                last_use[p as usize] = i as u32;
            }
        }
        last_use
    }

    /// [`cc`](Self::cc) over few written keys (`keys`: their dense ids):
    /// per transaction and key, the latest writer of the key (in co) in
    /// its causal past, computed in co order from the so/wr predecessors;
    /// each read's source must be that writer. `O(n·k)` for `k` keys,
    /// where the clocks cost a binary search per read and session. Rows
    /// are kept until the last so/wr successor, like the clocks.
    fn cc_by_keys(&self, keys: &HashMap<&Key, u32>) -> R<()> {
        let h = self.h;
        let n = h.txns.len();
        let k = keys.len().max(1);
        let mut last_of: HashMap<u64, u32> = HashMap::default();
        let mut so_pred = vec![NONE; n];
        for (t, txn) in h.txns.iter().enumerate() {
            if self.pos[t] == NONE {
                continue;
            }
            if let Some(p) = last_of.insert(txn.session, t as u32) {
                so_pred[t] = p;
            }
        }
        let by_txn = self.reads_by_txn();
        let preds = |t: u32, out: &mut Vec<u32>| self.preds(&so_pred, &by_txn, t, out);
        let last_use = self.last_use(&preds);
        let mut ps: Vec<u32> = Vec::new();
        // Entry x of a row: 1 + the co position of the latest writer of
        // key x in the transaction's causal past, itself included (0:
        // none).
        let mut arena: Vec<u32> = Vec::new();
        let mut slot = vec![NONE; n];
        let mut free: Vec<u32> = Vec::new();
        let mut row = vec![0u32; k];
        for (i, &t) in self.co.iter().enumerate() {
            preds(t, &mut ps);
            row.fill(0);
            for &p in &ps {
                let at = slot[p as usize] as usize * k;
                for (r, &v) in row.iter_mut().zip(&arena[at..at + k]) {
                    *r = (*r).max(v);
                }
            }
            for e in by_txn[t as usize] {
                let Some(&x) = keys.get(&e.key) else {
                    continue;
                };
                let latest = row[x as usize];
                if latest > 0 {
                    self.require_before(e, self.co[latest as usize - 1])?;
                }
            }
            for &p in &ps {
                if last_use[p as usize] == i as u32 && slot[p as usize] != NONE {
                    free.push(slot[p as usize]);
                    slot[p as usize] = NONE;
                }
            }
            if last_use[t as usize] != NONE {
                for key in &self.wkeys[t as usize] {
                    row[keys[key] as usize] = i as u32 + 1;
                }
                let at = match free.pop() {
                    Some(f) => f,
                    None => {
                        if arena.len() + k > MAX_CLOCK_CELLS {
                            return Err(CertError::Unsupported(format!(
                                "cc rows over {k} keys: more than {MAX_CLOCK_CELLS} cells alive at once"
                            )));
                        }
                        arena.resize(arena.len() + k, 0);
                        (arena.len() / k - 1) as u32
                    }
                };
                arena[at as usize * k..][..k].copy_from_slice(&row);
                slot[t as usize] = at;
            }
        }
        Ok(())
    }

    /// [`cc`](Self::cc) with clock entries of type `T`.
    fn cc_with<T: ClockEntry>(&self) -> R<()> {
        let h = self.h;
        let n = h.txns.len();
        let mut sess_ix: HashMap<u64, u32> = HashMap::default();
        let mut sess_txns: Vec<Vec<u32>> = Vec::new();
        let mut sidx = vec![NONE; n];
        let mut sess = vec![NONE; n];
        let mut so_pred = vec![NONE; n];
        for (t, txn) in h.txns.iter().enumerate() {
            if self.pos[t] == NONE {
                continue;
            }
            let s = *sess_ix.entry(txn.session).or_insert_with(|| {
                sess_txns.push(Vec::new());
                (sess_txns.len() - 1) as u32
            });
            let list = &mut sess_txns[s as usize];
            if let Some(&p) = list.last() {
                so_pred[t] = p;
            }
            sidx[t] = list.len() as u32;
            list.push(t as u32);
            sess[t] = s;
        }
        let k = sess_txns.len();
        // Per key: its writers' in-session indices, ascending, in one run
        // per session.
        let mut writers: HashMap<Key, Runs> = HashMap::default();
        for (s, list) in sess_txns.iter().enumerate() {
            for &t in list {
                for key in &self.wkeys[t as usize] {
                    let w = writers.entry(key.clone()).or_default();
                    let at = w.idx.len() as u32;
                    match w.runs.last_mut() {
                        Some(r) if r.0 == s as u32 => r.2 = at + 1,
                        _ => w.runs.push((s as u32, at, at + 1)),
                    }
                    w.idx.push(sidx[t as usize]);
                }
            }
        }
        let by_txn = self.reads_by_txn();
        let preds = |t: u32, out: &mut Vec<u32>| self.preds(&so_pred, &by_txn, t, out);
        let last_use = self.last_use(&preds);
        let mut ps: Vec<u32> = Vec::new();
        // Clocks in slots of `arena`: entry s counts session s's
        // transactions in the causal past.
        let mut arena: Vec<T> = Vec::new();
        let mut slot = vec![NONE; n];
        let mut free: Vec<u32> = Vec::new();
        let mut row = vec![T::default(); k];
        for (i, &t) in self.co.iter().enumerate() {
            preds(t, &mut ps);
            row.fill(T::default());
            for &p in &ps {
                let s = sess[p as usize] as usize;
                let tick = T::of(sidx[p as usize] + 1);
                if row[s] >= tick {
                    // `p` is in the past already (the clock that brought
                    // it in counted its own past too).
                    continue;
                }
                let at = slot[p as usize] as usize * k;
                for (r, &v) in row.iter_mut().zip(&arena[at..at + k]) {
                    *r = (*r).max(v);
                }
                row[s] = tick;
            }
            for e in by_txn[t as usize] {
                let Some(ws) = writers.get(&e.key) else {
                    continue;
                };
                // The source's clock (a predecessor's: still kept). A
                // writer in its past commits before it, as co extends so
                // and wr (checked above), so only entries beyond it count.
                let src = (e.src != INIT).then(|| {
                    let at = slot[e.src as usize] as usize * k;
                    &arena[at..at + k]
                });
                for &(s, from, to) in &ws.runs {
                    let c = row[s as usize];
                    if src.is_some_and(|sc| c <= sc[s as usize]) {
                        continue;
                    }
                    let c = c.get();
                    if c == 0 {
                        continue;
                    }
                    let run = &ws.idx[from as usize..to as usize];
                    let j = run.partition_point(|&x| x < c);
                    if j > 0 {
                        self.require_before(e, sess_txns[s as usize][run[j - 1] as usize])?;
                    }
                }
            }
            for &p in &ps {
                if last_use[p as usize] == i as u32 && slot[p as usize] != NONE {
                    free.push(slot[p as usize]);
                    slot[p as usize] = NONE;
                }
            }
            if last_use[t as usize] != NONE {
                let at = match free.pop() {
                    Some(f) => f,
                    None => {
                        if arena.len() + k > MAX_CLOCK_CELLS {
                            return Err(CertError::Unsupported(format!(
                                "cc vector clocks over {k} sessions: more than {MAX_CLOCK_CELLS} cells alive at once"
                            )));
                        }
                        arena.resize(arena.len() + k, T::default());
                        (arena.len() / k - 1) as u32
                    }
                };
                arena[at as usize * k..][..k].copy_from_slice(&row);
                slot[t as usize] = at;
            }
        }
        Ok(())
    }

    /// pc: writers of `x` at or before (in co) a direct so/wr predecessor
    /// of `t3`; the latest of them must be the read's source.
    fn pc(&self) -> R<()> {
        let h = self.h;
        let mut wpos: HashMap<&Key, Vec<u32>> = HashMap::default();
        for (i, &t) in self.co.iter().enumerate() {
            for key in &self.wkeys[t as usize] {
                wpos.entry(key).or_default().push(i as u32);
            }
        }
        let mut so_pred: HashMap<u64, u32> = HashMap::default();
        let mut pred_max = vec![NONE; h.txns.len()];
        for (t, txn) in h.txns.iter().enumerate() {
            if self.pos[t] == NONE {
                continue;
            }
            if let Some(&p) = so_pred.get(&txn.session) {
                pred_max[t] = self.pos[p as usize];
            }
            so_pred.insert(txn.session, t as u32);
        }
        for e in self.evs {
            for &s in self.sources(e) {
                let m = &mut pred_max[e.t3 as usize];
                let p = self.pos[s as usize];
                if *m == NONE || p > *m {
                    *m = p;
                }
            }
        }
        for e in self.evs {
            let m = pred_max[e.t3 as usize];
            if m == NONE {
                continue;
            }
            let Some(ws) = wpos.get(&e.key) else { continue };
            let i = ws.partition_point(|&p| p <= m);
            if i > 0 {
                self.require_before(e, self.co[ws[i - 1] as usize])?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Refutations.
// ---------------------------------------------------------------------------

/// (key, value) -> every (txn, op) writing it.
type WriteIndex = HashMap<(Key, Value), SmallVec<[(u32, u32); 1]>>;

/// Lazily built indexes over the whole history, for checking evidence.
struct Ctx<'a> {
    h: &'a History,
    /// (key, value) -> every op writing it.
    writes: OnceCell<WriteIndex>,
    /// key -> every list read (txn, op) of an ok transaction.
    list_reads: OnceCell<HashMap<Key, Vec<(u32, u32)>>>,
    /// `info` transactions some ok transaction read a value of: they
    /// committed in every execution that explains that read.
    observed: OnceCell<HashSet<u32>>,
}

impl<'a> Ctx<'a> {
    fn new(h: &'a History) -> Ctx<'a> {
        Ctx {
            h,
            writes: OnceCell::new(),
            list_reads: OnceCell::new(),
            observed: OnceCell::new(),
        }
    }

    /// True when `t` committed in every valid execution: it is ok, or an
    /// ok transaction read a value only `t` wrote.
    fn surely_committed(&self, t: u32) -> bool {
        if self.txn_ok(t) {
            return true;
        }
        let seen = self.observed.get_or_init(|| {
            let mut seen = HashSet::default();
            for txn in self.h.txns.iter().filter(|x| x.status == Status::Ok) {
                for op in &txn.ops {
                    let mut note = |k: &Key, v: Value| {
                        if let Some(w) = self.unique_writer(k, v) {
                            if self.h.txns[w as usize].status == Status::Info {
                                seen.insert(w);
                            }
                        }
                    };
                    match op {
                        Op::Read {
                            key,
                            value: Some(v),
                        } => note(key, *v),
                        Op::ReadList {
                            key,
                            values: Some(vs),
                        } => vs.iter().for_each(|v| note(key, *v)),
                        Op::RangeRead { rows, .. } => rows.iter().for_each(|(k, v)| note(k, *v)),
                        _ => {}
                    }
                }
            }
            seen
        });
        seen.contains(&t)
    }

    fn writers(&self, key: &Key, v: Value) -> &[(u32, u32)] {
        let m = self.writes.get_or_init(|| {
            let mut m = WriteIndex::default();
            for (t, txn) in self.h.txns.iter().enumerate() {
                for (o, op) in txn.ops.iter().enumerate() {
                    if let Some((k, v)) = op.written() {
                        m.entry((k.clone(), v))
                            .or_default()
                            .push((t as u32, o as u32));
                    }
                }
            }
            m
        });
        m.get(&(key.clone(), v)).map_or(&[][..], |s| s.as_slice())
    }

    /// The only transaction writing `key = v`, if exactly one op writes it.
    fn unique_writer(&self, key: &Key, v: Value) -> Option<u32> {
        match self.writers(key, v) {
            [(w, _)] => Some(*w),
            _ => None,
        }
    }

    fn list_reads(&self, key: &Key) -> &[(u32, u32)] {
        let m = self.list_reads.get_or_init(|| {
            let mut m: HashMap<Key, Vec<(u32, u32)>> = HashMap::default();
            for (t, txn) in self.h.txns.iter().enumerate() {
                if txn.status != Status::Ok {
                    continue;
                }
                for (o, op) in txn.ops.iter().enumerate() {
                    if let Op::ReadList {
                        key,
                        values: Some(_),
                    } = op
                    {
                        m.entry(key.clone()).or_default().push((t as u32, o as u32));
                    }
                }
            }
            m
        });
        m.get(key).map_or(&[][..], |v| v.as_slice())
    }

    fn txn_ok(&self, t: u32) -> bool {
        (t as usize) < self.h.txns.len() && self.h.txns[t as usize].status == Status::Ok
    }

    fn in_range(&self, t: u32) -> bool {
        (t as usize) < self.h.txns.len()
    }

    fn writes_key(&self, t: u32, key: &Key) -> bool {
        self.h.txns[t as usize]
            .ops
            .iter()
            .any(|o| o.written().is_some_and(|(k, _)| k == key))
    }

    /// The external reads of `key` by ok `t`, as (op, version read): the
    /// version is `None` for the initial one, else the unique writer of the
    /// value (register, or a range read's row; a range read covering `key`
    /// without listing it read it as absent) or of the list's last element. A read after the
    /// transaction's own write (or append) of `key` is not external; a read
    /// whose version has no unique writer other than `t` is skipped.
    fn external_reads(&self, t: u32, key: &Key) -> Vec<(u32, Option<u32>)> {
        let mut out = Vec::new();
        if !self.txn_ok(t) {
            return out;
        }
        let mut wrote = false;
        let mut own_appends: Vec<Value> = Vec::new();
        for (o, op) in self.h.txns[t as usize].ops.iter().enumerate() {
            match op {
                Op::Read { key: k, value } if k == key && !wrote => match value {
                    None => out.push((o as u32, None)),
                    Some(v) => {
                        if let Some(w) = self.unique_writer(key, *v).filter(|&w| w != t) {
                            out.push((o as u32, Some(w)));
                        }
                    }
                },
                Op::ReadList {
                    key: k,
                    values: Some(vs),
                } if k == key => {
                    // After its own appends a list read must end with them,
                    // in order; what precedes them is the version it read.
                    let own = own_appends.len();
                    let external = if own == 0 {
                        Some(&vs[..])
                    } else if vs.len() >= own && vs[vs.len() - own..] == own_appends[..] {
                        Some(&vs[..vs.len() - own])
                    } else {
                        None
                    };
                    match external.map(|e| e.last()) {
                        None => {}
                        Some(None) => out.push((o as u32, None)),
                        Some(Some(v)) => {
                            if let Some(w) = self.unique_writer(key, *v).filter(|&w| w != t) {
                                out.push((o as u32, Some(w)));
                            }
                        }
                    }
                }
                Op::RangeRead { lo, hi, rows } if lo <= key && key <= hi && !wrote => {
                    // A key in range and not listed was read as absent.
                    match rows.iter().find(|(k, _)| k == key) {
                        None => out.push((o as u32, None)),
                        Some((_, v)) => {
                            if let Some(w) = self.unique_writer(key, *v).filter(|&w| w != t) {
                                out.push((o as u32, Some(w)));
                            }
                        }
                    }
                }
                _ => {}
            }
            if let Op::Append { key: k, value } = op {
                if k == key {
                    own_appends.push(*value);
                }
            }
            if op.written().is_some_and(|(k, _)| k == key) {
                wrote = true;
            }
        }
        out
    }

    /// What list read `ro` of transaction `r` shows of other transactions:
    /// the list minus `r`'s own earlier appends to `key`, which must end it
    /// in order (`None` when they do not, or `r` wrote the key otherwise).
    fn external_list(&self, r: u32, ro: u32, key: &Key) -> Option<Vec<Value>> {
        let ops = &self.h.txns[r as usize].ops;
        let Op::ReadList {
            values: Some(vs), ..
        } = &ops[ro as usize]
        else {
            return None;
        };
        let own: Vec<Value> = ops[..ro as usize]
            .iter()
            .filter_map(|p| match p {
                Op::Append { key: k, value } if k == key => Some(*value),
                _ => None,
            })
            .collect();
        let wrote_other = ops[..ro as usize]
            .iter()
            .any(|p| !matches!(p, Op::Append { .. }) && p.written().is_some_and(|(k, _)| k == key));
        let n = own.len();
        (!wrote_other && vs.len() >= n && vs[vs.len() - n..] == own[..])
            .then(|| vs[..vs.len() - n].to_vec())
    }

    /// `to` (ok) read `from`'s write of `key`: an external register read of
    /// its value, or any list read of `key` holding one of its elements.
    fn reads_from(&self, to: u32, key: &Key, from: u32) -> bool {
        if from == to || !self.txn_ok(to) || !self.in_range(from) {
            return false;
        }
        if self
            .external_reads(to, key)
            .iter()
            .any(|&(_, v)| v == Some(from))
        {
            return true;
        }
        self.h.txns[to as usize].ops.iter().any(|op| match op {
            Op::ReadList {
                key: k,
                values: Some(vs),
            } if k == key => vs.iter().any(|v| self.unique_writer(key, *v) == Some(from)),
            _ => false,
        })
    }

    /// Checks that in every valid execution `from`'s version of `key`
    /// precedes `to`'s (and both are committed).
    fn ww(&self, from: u32, to: u32, key: &Key, why: &WwWhy, use_dbts: bool) -> Result<(), String> {
        if !self.in_range(from) || !self.in_range(to) {
            return Err("no such transaction".into());
        }
        if from == to {
            return Err("a version does not precede itself".into());
        }
        let both_write = self.writes_key(from, key) && self.writes_key(to, key);
        match why {
            WwWhy::ReadModifyWrite => {
                if !self.writes_key(to, key) {
                    return Err(format!("T{to} does not write {key}"));
                }
                if !self
                    .external_reads(to, key)
                    .iter()
                    .any(|&(_, v)| v == Some(from))
                {
                    return Err(format!("T{to} (ok) did not read T{from}'s {key}"));
                }
                if !self.writes_key(from, key) {
                    return Err(format!("T{from} does not write {key}"));
                }
                Ok(())
            }
            WwWhy::FirstWriter => {
                if !both_write {
                    return Err(format!("T{from} and T{to} do not both write {key}"));
                }
                if !self.surely_committed(to) {
                    return Err(format!("T{to} need not commit"));
                }
                if !self
                    .external_reads(from, key)
                    .iter()
                    .any(|&(_, v)| v.is_none())
                {
                    return Err(format!("T{from} (ok) did not read {key} as absent"));
                }
                Ok(())
            }
            WwWhy::ListOrder => {
                for &(r, o) in self.list_reads(key) {
                    let Op::ReadList {
                        values: Some(vs), ..
                    } = &self.h.txns[r as usize].ops[o as usize]
                    else {
                        continue;
                    };
                    let i = vs
                        .iter()
                        .position(|v| self.unique_writer(key, *v) == Some(from));
                    let j = vs
                        .iter()
                        .rposition(|v| self.unique_writer(key, *v) == Some(to));
                    match (i, j) {
                        (Some(i), Some(j)) if i < j => return Ok(()),
                        // The read shows `from`'s element and none of
                        // `to`'s: lists only grow, so `to` (which appended
                        // to the key and committed) came after the version
                        // read, and `from` at or before it.
                        (Some(_), None)
                            if r != to && self.writes_key(to, key) && self.surely_committed(to) =>
                        {
                            return Ok(())
                        }
                        _ => {}
                    }
                }
                Err(format!(
                    "no ok list read of {key} shows T{from}'s element before T{to}'s (or without T{to}'s)"
                ))
            }
            WwWhy::DbTs => {
                if !use_dbts {
                    return Err("timestamps are not in use".into());
                }
                if !both_write {
                    return Err(format!("T{from} and T{to} do not both write {key}"));
                }
                if !self.surely_committed(from) || !self.surely_committed(to) {
                    return Err("both must commit".into());
                }
                let c = |t: u32| self.h.txns[t as usize].dbts.and_then(|d| d.commit);
                match (c(from), c(to)) {
                    (Some(a), Some(b)) if a < b => Ok(()),
                    _ => Err(format!("T{from}'s commit timestamp is not below T{to}'s")),
                }
            }
            WwWhy::Chain(links) => {
                if links.is_empty() {
                    return Err("empty chain".into());
                }
                let mut cur = from;
                for (c, w) in links {
                    self.ww(cur, *c, key, w, use_dbts)
                        .map_err(|e| format!("chain link T{cur} -> T{c}: {e}"))?;
                    cur = *c;
                }
                if cur != to {
                    return Err(format!("the chain ends at T{cur}, not T{to}"));
                }
                Ok(())
            }
        }
    }
}

fn verify_refutation(ctx: &Ctx, level: Level, use_dbts: bool, r: &Refutation) -> R<()> {
    match r {
        Refutation::Finding { kind, txn, op } => verify_finding(ctx, level, *kind, *txn, *op),
        Refutation::Cycle(edges) => verify_cycle(ctx, level, use_dbts, edges),
        Refutation::LostUpdate { key, base, a, b } => {
            verify_lost_update(ctx, level, key, *base, *a, *b)
        }
        Refutation::SubHistory(txns) => verify_sub_history(ctx.h, level, use_dbts, txns),
        Refutation::WeakCycle(edges) => verify_weak_cycle(ctx, level, edges),
        Refutation::Derivation(d) => derivation::verify(ctx, level, use_dbts, d),
    }
}

fn verify_finding(ctx: &Ctx, level: Level, kind: AnomalyKind, t: u32, o: u32) -> R<()> {
    let h = ctx.h;
    let fail = |why: String| {
        Err(CertError::BadFinding {
            kind,
            txn: t,
            op: o,
            why,
        })
    };
    if !ctx.in_range(t) || o as usize >= h.txns[t as usize].ops.len() {
        return fail("no such op".into());
    }
    let txn = &h.txns[t as usize];
    let op = &txn.ops[o as usize];
    if kind == AnomalyKind::DuplicateWrite {
        let Some((k, v)) = op.written() else {
            return fail("not a write".into());
        };
        let earlier = ctx.writers(k, v).iter().any(|&w| w < (t, o));
        return if earlier {
            Ok(())
        } else {
            fail(format!("no earlier write of {k} = {v}"))
        };
    }
    if kind.is_cyclic() {
        return fail("a cyclic anomaly needs a Cycle refutation".into());
    }
    if txn.status != Status::Ok {
        return fail(format!("T{t} is not ok: its reads are no evidence"));
    }
    // Register writes of the key before this op, in order.
    let own_before = |key: &Key| -> Vec<Value> {
        txn.ops[..o as usize]
            .iter()
            .filter_map(|p| match p {
                Op::Write { key: k, value }
                | Op::Insert { key: k, value }
                | Op::Delete { key: k, value }
                    if k == key =>
                {
                    Some(*value)
                }
                _ => None,
            })
            .collect()
    };
    // The (key, value) pairs this op read.
    let read_vals: Vec<(Key, Value)> = match op {
        Op::Read {
            key,
            value: Some(v),
        } => vec![(key.clone(), *v)],
        Op::ReadList {
            key,
            values: Some(vs),
        } => vs.iter().map(|v| (key.clone(), *v)).collect(),
        Op::RangeRead { rows, .. } => rows.clone(),
        _ => Vec::new(),
    };
    match kind {
        AnomalyKind::ThinAirRead => {
            if read_vals.iter().any(|(k, v)| ctx.writers(k, *v).is_empty()) {
                return Ok(());
            }
            fail("every value read was written".into())
        }
        AnomalyKind::AbortedRead => {
            let aborted = read_vals.iter().any(|(k, v)| {
                let ws = ctx.writers(k, *v);
                !ws.is_empty()
                    && ws
                        .iter()
                        .all(|&(w, _)| h.txns[w as usize].status == Status::Fail)
            });
            if aborted {
                return Ok(());
            }
            fail("no value read has only failed writers".into())
        }
        AnomalyKind::IntermediateRead => {
            if let Op::RangeRead { rows, .. } = op {
                // A row whose only writer (another transaction) wrote the
                // key again later: a version it never installed.
                let cut = rows.iter().any(|(key, v)| {
                    let [(w, wo)] = ctx.writers(key, *v) else {
                        return false;
                    };
                    let wops = &h.txns[*w as usize].ops;
                    *w != t
                        && !matches!(wops[*wo as usize], Op::Append { .. })
                        && wops[*wo as usize + 1..].iter().any(|p| {
                            matches!(p, Op::Write { key: k, .. } | Op::Insert { key: k, .. } | Op::Delete { key: k, .. } if k == key)
                        })
                });
                return if cut {
                    Ok(())
                } else {
                    fail("no row shows a value its writer overwrote".into())
                };
            }
            if let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            {
                // A writer's run of elements that ends before its last
                // append to the key: a version it never installed.
                let cut = vs.iter().enumerate().any(|(i, v)| {
                    let [(w, wo)] = ctx.writers(key, *v) else {
                        return false;
                    };
                    let next_is_w = vs
                        .get(i + 1)
                        .is_some_and(|n| ctx.unique_writer(key, *n) == Some(*w));
                    *w != t
                        && !next_is_w
                        && h.txns[*w as usize].ops[*wo as usize + 1..]
                            .iter()
                            .any(|p| matches!(p, Op::Append { key: k, .. } if k == key))
                });
                return if cut {
                    Ok(())
                } else {
                    fail("no writer's run of elements stops before its last append".into())
                };
            }
            let Op::Read {
                key,
                value: Some(v),
            } = op
            else {
                return fail("not a register read of a value".into());
            };
            let [(w, wo)] = ctx.writers(key, *v) else {
                return fail("the value has no unique writer".into());
            };
            let wops = &h.txns[*w as usize].ops;
            let register = !matches!(wops[*wo as usize], Op::Append { .. });
            let overwritten = wops[*wo as usize + 1..].iter().any(|p| {
                matches!(p, Op::Write { key: k, .. } | Op::Insert { key: k, .. } | Op::Delete { key: k, .. } if k == key)
            });
            if *w != t && register && overwritten {
                return Ok(());
            }
            fail(format!(
                "T{w}'s write of {key} = {v} is its final one (or is T{t}'s own)"
            ))
        }
        AnomalyKind::FutureRead => {
            if let Op::RangeRead { rows, .. } = op {
                let later = rows
                    .iter()
                    .any(|(k, v)| matches!(ctx.writers(k, *v), [(w, wo)] if *w == t && *wo > o));
                return if later {
                    Ok(())
                } else {
                    fail("no row's value is written only later by the same transaction".into())
                };
            }
            if let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            {
                let later = vs
                    .iter()
                    .any(|v| matches!(ctx.writers(key, *v), [(w, wo)] if *w == t && *wo > o));
                // Or its own element shows up in what it read of others.
                let own_in_snapshot = ctx.external_list(t, o, key).is_some_and(|e| {
                    e.iter()
                        .any(|v| matches!(ctx.writers(key, *v), [(w, _)] if *w == t))
                });
                return if later || own_in_snapshot {
                    Ok(())
                } else {
                    fail("no element is appended only later by the same transaction".into())
                };
            }
            let Op::Read {
                key,
                value: Some(v),
            } = op
            else {
                return fail("not a register read of a value".into());
            };
            match ctx.writers(key, *v) {
                [(w, wo)] if *w == t && *wo > o => Ok(()),
                _ => fail("the value is not written only later by the same transaction".into()),
            }
        }
        AnomalyKind::NotMyOwnWrite | AnomalyKind::NotMyLastWrite => {
            if let Op::RangeRead { lo, hi, rows } = op {
                // A key it wrote before, listed (its row) or in range (read
                // as absent when not listed), that does not show its own
                // last write: a value it wrote earlier (not-my-last-write)
                // or none of its own (not-my-own-write).
                let wrong = txn.ops[..o as usize].iter().any(|p| {
                    let (Op::Write { key, .. } | Op::Insert { key, .. } | Op::Delete { key, .. }) =
                        p
                    else {
                        return false;
                    };
                    let row = rows.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
                    if row.is_none() && !(lo <= key && key <= hi) {
                        return false; // not read
                    }
                    let mine = own_before(key);
                    if row == mine.last().copied() {
                        return false;
                    }
                    let is_own = row.is_some_and(|v| mine.contains(&v));
                    matches!(
                        (kind, is_own),
                        (AnomalyKind::NotMyOwnWrite, false) | (AnomalyKind::NotMyLastWrite, true)
                    )
                });
                return if wrong {
                    Ok(())
                } else {
                    fail(format!(
                        "T{t}'s range read shows its own last write of each key it wrote"
                    ))
                };
            }
            if let Op::ReadList {
                key,
                values: Some(_),
            } = op
            {
                // After its own appends, a list read must end with them.
                let appended = txn.ops[..o as usize]
                    .iter()
                    .any(|p| matches!(p, Op::Append { key: k, .. } if k == key));
                return if appended && ctx.external_list(t, o, key).is_none() {
                    Ok(())
                } else {
                    fail(format!("T{t}'s read of {key} ends with its own appends"))
                };
            }
            let Op::Read { key, value } = op else {
                return fail("not a register read".into());
            };
            let mine = own_before(key);
            let Some(&last) = mine.last() else {
                return fail(format!("T{t} did not write {key} before"));
            };
            if *value == Some(last) {
                return fail("the read returns its own last write".into());
            }
            let is_own = value.is_some_and(|v| mine.contains(&v));
            match (kind, is_own) {
                (AnomalyKind::NotMyOwnWrite, false) | (AnomalyKind::NotMyLastWrite, true) => Ok(()),
                _ => fail("the read's value does not match the kind".into()),
            }
        }
        AnomalyKind::NonRepeatableRead => {
            if level == Level::Rc {
                return Err(CertError::NotForbidden {
                    level,
                    why: "rc allows non-repeatable reads".into(),
                });
            }
            if let Op::RangeRead { lo, hi, rows } = op {
                // A key this range read saw (a listed row, or absent when
                // not listed) that an earlier read of the transaction saw
                // otherwise, with no write of its own between.
                let now = |k: &Key| rows.iter().find(|(rk, _)| rk == k).map(|(_, v)| *v);
                let before = &txn.ops[..o as usize];
                let changed = before.iter().enumerate().any(|(i, p)| {
                    let wrote = |k: &Key| {
                        before[i..]
                            .iter()
                            .any(|q| q.written().is_some_and(|(wk, _)| wk == k))
                    };
                    match p {
                        Op::Read { key, value } => {
                            key >= lo && key <= hi && !wrote(key) && now(key) != *value
                        }
                        Op::RangeRead {
                            lo: l2,
                            hi: h2,
                            rows: r2,
                        } => {
                            r2.iter()
                                .any(|(k, v)| k >= lo && k <= hi && !wrote(k) && now(k) != Some(*v))
                                || rows.iter().any(|(k, v)| {
                                    k >= l2
                                        && k <= h2
                                        && !wrote(k)
                                        && r2.iter().find(|(rk, _)| rk == k).map(|(_, x)| *x)
                                            != Some(*v)
                                })
                        }
                        _ => false,
                    }
                });
                return if changed {
                    Ok(())
                } else {
                    fail("no key of the range was seen otherwise earlier".into())
                };
            }
            if let Op::ReadList {
                key,
                values: Some(_),
            } = op
            {
                // Two reads of one list that show different versions of
                // other transactions' appends.
                let mine = ctx.external_list(t, o, key);
                let other = mine.is_some()
                    && (0..o).any(|p| {
                        matches!(&txn.ops[p as usize], Op::ReadList { key: k, values: Some(_) } if k == key)
                            && ctx
                                .external_list(t, p, key)
                                .is_some_and(|e| Some(&e) != mine.as_ref())
                    });
                return if other {
                    Ok(())
                } else {
                    fail(format!(
                        "no earlier read of list {key} showed another version"
                    ))
                };
            }
            let Op::Read { key, value } = op else {
                return fail("not a register read".into());
            };
            let wrote = txn.ops[..o as usize]
                .iter()
                .any(|p| p.written().is_some_and(|(k, _)| k == key));
            if wrote {
                return fail(format!("T{t} wrote {key} before this read"));
            }
            let other = txn.ops[..o as usize].iter().any(|p| match p {
                Op::Read { key: k, value: v } => k == key && v != value,
                Op::RangeRead { lo, hi, rows } => {
                    key >= lo
                        && key <= hi
                        && rows.iter().find(|(k, _)| k == key).map(|(_, v)| *v) != *value
                }
                _ => false,
            });
            if other {
                return Ok(());
            }
            fail(format!("no earlier read of {key} returned another value"))
        }
        AnomalyKind::IncompatibleOrder => {
            let Op::ReadList {
                key,
                values: Some(_),
            } = op
            else {
                return fail("not a list read".into());
            };
            let external = |r: u32, ro: u32| ctx.external_list(r, ro, key);
            let Some(l1) = external(t, o) else {
                return fail(format!(
                    "T{t}'s read of {key} does not end with its own appends"
                ));
            };
            // One transaction's appends are installed together and in
            // order: each writer's elements in a list are one run that
            // starts with its first append to the key, in append order.
            let split = {
                let mut runs: Vec<u32> = Vec::new();
                let mut bad = false;
                let mut i = 0;
                while i < l1.len() && !bad {
                    let Some(w) = ctx.unique_writer(key, l1[i]) else {
                        i += 1;
                        continue;
                    };
                    if runs.contains(&w) {
                        bad = true;
                        break;
                    }
                    runs.push(w);
                    let mine: Vec<Value> = h.txns[w as usize]
                        .ops
                        .iter()
                        .filter_map(|p| match p {
                            Op::Append { key: k, value } if k == key => Some(*value),
                            _ => None,
                        })
                        .collect();
                    let mut j = 0;
                    while i < l1.len() && ctx.unique_writer(key, l1[i]) == Some(w) {
                        if mine.get(j) != Some(&l1[i]) {
                            bad = true;
                        }
                        i += 1;
                        j += 1;
                    }
                }
                bad
            };
            if split {
                return Ok(());
            }
            // Every read, own appends included (a read after them shows the
            // version its transaction builds), is a version of the key: any
            // two are prefixes of one another.
            let prefix = |a: &[Value], b: &[Value]| a.len() <= b.len() && *a == b[..a.len()];
            let whole = |r: u32, ro: u32| match &h.txns[r as usize].ops[ro as usize] {
                Op::ReadList {
                    values: Some(vs), ..
                } if external(r, ro).is_some() => Some(vs),
                _ => None,
            };
            let Some(w1) = whole(t, o) else {
                return fail(format!("T{t}'s read of {key} is not a list read"));
            };
            for &(r, ro) in ctx.list_reads(key) {
                if let Some(w2) = whole(r, ro) {
                    if !prefix(w1, w2) && !prefix(w2, w1) {
                        return Ok(());
                    }
                }
            }
            fail(format!(
                "every ok list read of {key} is compatible with this one"
            ))
        }
        AnomalyKind::DuplicateElements => {
            let Op::ReadList {
                values: Some(l), ..
            } = op
            else {
                return fail("not a list read".into());
            };
            let mut seen = HashSet::default();
            if l.iter().any(|v| !seen.insert(*v)) {
                return Ok(());
            }
            fail("no element repeats".into())
        }
        _ => fail("not a non-cyclic anomaly".into()),
    }
}

/// Where an edge leaves and enters in the SI begin/commit graph: (from is
/// the commit event, to is the commit event).
fn si_nodes(kind: &EdgeClaim) -> (bool, bool) {
    match kind {
        EdgeClaim::Rw { .. } => (false, true),
        EdgeClaim::Ts {
            from_commit,
            to_commit,
        } => (*from_commit, *to_commit),
        _ => (true, false),
    }
}

fn verify_cycle(ctx: &Ctx, level: Level, use_dbts: bool, edges: &[ClaimedEdge]) -> R<()> {
    let len = edges.len();
    if len == 0 {
        return Err(CertError::Disconnected { index: 0, next: 0 });
    }
    for i in 0..len {
        if edges[i].to != edges[(i + 1) % len].from {
            return Err(CertError::Disconnected {
                index: i,
                next: (i + 1) % len,
            });
        }
    }
    let fam = family(level);
    for (i, e) in edges.iter().enumerate() {
        let allowed = edge_allowed(level, use_dbts, &e.kind);
        if !allowed {
            return Err(CertError::NotForbidden {
                level,
                why: format!("edge {i} ({:?}) does not order {level} executions", e.kind),
            });
        }
        verify_edge(ctx, use_dbts, e).map_err(|why| CertError::BadEdge {
            index: i,
            from: e.from,
            to: e.to,
            why,
        })?;
    }
    if fam == Family::Si {
        for i in 0..len {
            let (_, into_commit) = si_nodes(&edges[i].kind);
            let (from_commit, _) = si_nodes(&edges[(i + 1) % len].kind);
            if into_commit && !from_commit {
                return Err(CertError::NotForbidden {
                    level,
                    why: format!(
                        "edges {i} and {} meet at T{}'s commit and leave from its begin (e.g. two adjacent rw edges)",
                        (i + 1) % len,
                        edges[i].to
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Does an edge of this kind order the executions of `level`?
fn edge_allowed(level: Level, use_dbts: bool, kind: &EdgeClaim) -> bool {
    match (kind, family(level)) {
        (EdgeClaim::Wr | EdgeClaim::So, Family::Weak) => true,
        (_, Family::Weak) => false,
        (EdgeClaim::So, _) => uses_so(level),
        (EdgeClaim::Rt, _) => level.uses_real_time(),
        (EdgeClaim::Ts { .. }, f) => f == Family::Si && use_dbts,
        _ => true,
    }
}

/// Checks one edge's evidence: in every valid execution both ends are
/// committed and `from` precedes `to`.
fn verify_edge(ctx: &Ctx, use_dbts: bool, e: &ClaimedEdge) -> Result<(), String> {
    let h = ctx.h;
    let (from, to) = (e.from, e.to);
    if !ctx.in_range(from) || !ctx.in_range(to) {
        return Err("no such transaction".into());
    }
    if from == to && !matches!(e.kind, EdgeClaim::Ts { .. }) {
        return Err("a self edge".into());
    }
    // Every endpoint must commit in every valid execution: ok, or the
    // writer of a value an ok transaction read.
    if !matches!(e.kind, EdgeClaim::Wr) && !ctx.surely_committed(from) {
        return Err(format!("T{from} need not commit"));
    }
    if !ctx.surely_committed(to) {
        return Err(format!("T{to} need not commit"));
    }
    let key = || {
        e.key
            .as_ref()
            .ok_or_else(|| "the edge names no key".to_string())
    };
    let (tf, tt) = (&h.txns[from as usize], &h.txns[to as usize]);
    match &e.kind {
        EdgeClaim::Wr => {
            let k = key()?;
            if ctx.reads_from(to, k, from) {
                Ok(())
            } else {
                Err(format!("T{to} did not read T{from}'s {k}"))
            }
        }
        EdgeClaim::Ww(why) => ctx.ww(from, to, key()?, why, use_dbts),
        EdgeClaim::Rw { read_from, why } => {
            let k = key()?;
            if !ctx.writes_key(to, k) {
                return Err(format!("T{to} does not write {k}"));
            }
            if !ctx
                .external_reads(from, k)
                .iter()
                .any(|&(_, v)| v == *read_from)
            {
                return Err(format!(
                    "T{from} did not read {k}'s version {}",
                    read_from.map_or("initial".to_string(), |w| format!("of T{w}"))
                ));
            }
            match read_from {
                None => Ok(()),
                Some(w) if *w == to => Err("the version read is the target's own".into()),
                Some(w) => ctx.ww(*w, to, k, why, use_dbts),
            }
        }
        EdgeClaim::So => {
            if tf.session == tt.session && from < to {
                Ok(())
            } else {
                Err("not in session order".into())
            }
        }
        EdgeClaim::Rt => match (tf.end, tt.start) {
            // An `info` transaction's end orders nothing: it may have
            // committed after its client gave up.
            _ if tf.status != Status::Ok => Err(format!("T{from} is not ok")),
            (Some(a), Some(b)) if a < b => Ok(()),
            _ => Err(format!("T{from} did not end before T{to} started")),
        },
        EdgeClaim::Ts {
            from_commit,
            to_commit,
        } => {
            let ev = |t: &history::Txn, c: bool| -> Option<u64> {
                let d = t.dbts?;
                if c {
                    d.commit
                } else {
                    Some(d.start)
                }
            };
            match (ev(tf, *from_commit), ev(tt, *to_commit)) {
                (Some(a), Some(b)) if a < b || (a == b && !*from_commit && *to_commit) => Ok(()),
                _ => Err("the timestamps do not order these events".into()),
            }
        }
    }
}

fn verify_lost_update(
    ctx: &Ctx,
    level: Level,
    key: &Key,
    base: Option<u32>,
    a: u32,
    b: u32,
) -> R<()> {
    let fail = |why: String| {
        Err(CertError::BadLostUpdate {
            key: key.clone(),
            a,
            b,
            why,
        })
    };
    if family(level) == Family::Weak {
        return Err(CertError::NotForbidden {
            level,
            why: "lost updates are allowed below si".into(),
        });
    }
    if a == b {
        return fail("the same transaction twice".into());
    }
    for t in [a, b] {
        if !ctx.txn_ok(t) {
            return fail(format!("T{t} is not ok"));
        }
        let ops = &ctx.h.txns[t as usize].ops;
        let read = ctx
            .external_reads(t, key)
            .into_iter()
            .find(|&(_, v)| v == base);
        let Some((o, _)) = read else {
            return fail(format!("T{t} did not read that version of {key}"));
        };
        let writes_after = ops[o as usize + 1..]
            .iter()
            .any(|p| p.written().is_some_and(|(k, _)| k == key));
        if !writes_after {
            return fail(format!("T{t} does not write {key} after reading it"));
        }
    }
    Ok(())
}

fn verify_sub_history(h: &History, level: Level, use_dbts: bool, txns: &[u32]) -> R<()> {
    let mut set: Vec<u32> = txns.to_vec();
    set.sort_unstable();
    set.dedup();
    if set.len() != txns.len() {
        return Err(CertError::Duplicate(txns[0]));
    }
    if let Some(&t) = set.iter().find(|&&t| t as usize >= h.txns.len()) {
        return Err(CertError::NoSuchTxn(t));
    }
    let info = set
        .iter()
        .filter(|&&t| h.txns[t as usize].status == Status::Info)
        .count();
    let max = if family(level) == Family::Si {
        MAX_SUB_TXNS_SI
    } else {
        MAX_SUB_TXNS
    };
    if set.len() > max || info > MAX_SUB_INFO {
        return Err(CertError::TooLarge {
            txns: set.len(),
            info,
            max,
        });
    }
    // Writers of each (key, value) over the whole history.
    let mut writers: HashMap<(&Key, Value), Vec<u32>> = HashMap::default();
    for (t, txn) in h.txns.iter().enumerate() {
        for op in &txn.ops {
            if let Some((k, v)) = op.written() {
                writers.entry((k, v)).or_default().push(t as u32);
            }
        }
    }
    // A value nobody wrote is kept: no execution can read it.
    let inside = |k: &Key, v: Value| {
        writers
            .get(&(k, v))
            .is_none_or(|ws| ws.iter().all(|w| set.binary_search(w).is_ok()))
    };
    let register = |op: &Op| {
        matches!(
            op,
            Op::Read { .. } | Op::Write { .. } | Op::Insert { .. } | Op::Delete { .. }
        )
    };
    let list = |op: &Op| matches!(op, Op::Append { .. } | Op::ReadList { .. });
    let all_ops = || set.iter().flat_map(|&t| h.txns[t as usize].ops.iter());
    let lists = all_ops().all(list);
    if !lists && !all_ops().all(register) {
        return Err(CertError::Unsupported(
            "sub-history with range reads, or with lists and registers mixed".into(),
        ));
    }
    let mut sub = Vec::with_capacity(set.len());
    for &t in &set {
        let mut txn = h.txns[t as usize].clone();
        // A register read of a value written outside the set is dropped; a
        // list read keeps the elements appended inside it (what the same
        // read shows in the execution restricted to the set).
        txn.ops.retain(|op| match op {
            Op::Read {
                key,
                value: Some(v),
            } => inside(key, *v),
            _ => true,
        });
        for op in &mut txn.ops {
            if let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            {
                vs.retain(|v| inside(key, *v));
            }
        }
        sub.push(txn);
    }
    let sub = History::from_txns(sub);
    // With the database's timestamps, the restriction of a valid execution
    // keeps them, so the timestamp oracle decides (registers only).
    let decided = match (lists, use_dbts && family(level) != Family::Weak) {
        (true, true) => {
            return Err(CertError::Unsupported(
                "list sub-histories with timestamps".into(),
            ))
        }
        (true, false) => crate::list_oracle::satisfies(&sub, level),
        (false, true) => crate::oracle::satisfies_dbts(&sub, level),
        (false, false) => crate::oracle::satisfies(&sub, level),
    };
    match decided {
        Some(false) => Ok(()),
        Some(true) => Err(CertError::SubHistoryHolds { txns: set, level }),
        None => Err(CertError::Unsupported(format!(
            "the oracle does not decide {level}"
        ))),
    }
}

fn verify_weak_cycle(ctx: &Ctx, level: Level, edges: &[WeakEdge]) -> R<()> {
    if family(level) != Family::Weak {
        return Err(CertError::NotForbidden {
            level,
            why: "a weak cycle refutes the weak levels only".into(),
        });
    }
    let len = edges.len();
    if len == 0 {
        return Err(CertError::Disconnected { index: 0, next: 0 });
    }
    let into_init = edges.iter().any(|e| e.to == INIT);
    if into_init && len != 1 {
        return Err(CertError::Disconnected { index: 0, next: 0 });
    }
    if !into_init {
        for i in 0..len {
            if edges[i].to != edges[(i + 1) % len].from {
                return Err(CertError::Disconnected {
                    index: i,
                    next: (i + 1) % len,
                });
            }
        }
    }
    for (i, e) in edges.iter().enumerate() {
        weak_edge(ctx, level, e).map_err(|why| CertError::BadEdge {
            index: i,
            from: e.from,
            to: e.to,
            why,
        })?;
    }
    Ok(())
}

/// Checks that `e.from` commits before `e.to` in every valid commit order of
/// `level` (both committed).
fn weak_edge(ctx: &Ctx, level: Level, e: &WeakEdge) -> Result<(), String> {
    let h = ctx.h;
    let (from, to) = (e.from, e.to);
    if !ctx.in_range(from) || (to != INIT && !ctx.in_range(to)) {
        return Err("no such transaction".into());
    }
    if from == to {
        return Err("a self edge".into());
    }
    match &e.why {
        WeakWhy::So => {
            if to != INIT
                && ctx.txn_ok(from)
                && ctx.txn_ok(to)
                && h.txns[from as usize].session == h.txns[to as usize].session
                && from < to
            {
                Ok(())
            } else {
                Err("not in session order (both ok)".into())
            }
        }
        WeakWhy::Wr { key } => {
            if to != INIT && ctx.reads_from(to, key, from) {
                Ok(())
            } else {
                Err(format!("T{to} (ok) did not read T{from}'s {key}"))
            }
        }
        WeakWhy::Axiom {
            reader,
            op,
            key,
            premise,
        } => {
            let t3 = *reader;
            if !ctx.txn_ok(t3) || *op as usize >= h.txns[t3 as usize].ops.len() {
                return Err(format!("T{t3} op {op} is not an op of an ok transaction"));
            }
            let Op::Read { key: k, value } = &h.txns[t3 as usize].ops[*op as usize] else {
                return Err("the axiom's read is not a register read".into());
            };
            if k != key {
                return Err(format!("op {op} reads {k}, not {key}"));
            }
            let src = if to == INIT { None } else { Some(to) };
            if !ctx
                .external_reads(t3, key)
                .iter()
                .any(|&(o, v)| o == *op && v == src)
            {
                return Err(format!(
                    "T{t3} op {op} does not read {key} = {} from {}",
                    fmt_opt(*value),
                    src.map_or("the initial version".to_string(), |w| format!("T{w}"))
                ));
            }
            if !ctx.writes_key(from, key) {
                return Err(format!("T{from} does not write {key}"));
            }
            if from == t3 {
                return Err("the reader is not its own premise".into());
            }
            match premise {
                Premise::EarlierRead { op: o2 } => {
                    let earlier = *o2 < *op
                        && h.txns[t3 as usize].ops[*o2 as usize]
                            .key()
                            .is_some_and(|k2| {
                                ctx.external_reads(t3, k2)
                                    .iter()
                                    .any(|&(o, v)| o == *o2 && v == Some(from))
                            });
                    if earlier {
                        Ok(())
                    } else {
                        Err(format!("T{t3} op {o2} is not an earlier read from T{from}"))
                    }
                }
                Premise::Session => {
                    if level == Level::Rc {
                        return Err("rc's axiom has no session premise".into());
                    }
                    weak_edge(
                        ctx,
                        level,
                        &WeakEdge {
                            from,
                            to: t3,
                            why: WeakWhy::So,
                        },
                    )
                }
                Premise::ReadFrom { key: y } => {
                    if level == Level::Rc {
                        return Err("rc's premise must be an earlier read".into());
                    }
                    if ctx.reads_from(t3, y, from) {
                        Ok(())
                    } else {
                        Err(format!("T{t3} did not read {y} from T{from}"))
                    }
                }
                Premise::Path(path) => {
                    if matches!(level, Level::Rc | Level::Ra) {
                        return Err(format!("{level}'s premise is not a causal path"));
                    }
                    if path.is_empty() || path[0].from != from || path[path.len() - 1].to != t3 {
                        return Err(format!("the path does not lead from T{from} to T{t3}"));
                    }
                    for (i, p) in path.iter().enumerate() {
                        if i + 1 < path.len() && p.to != path[i + 1].from {
                            return Err(format!("path steps {i} and {} do not connect", i + 1));
                        }
                        if !matches!(p.why, WeakWhy::So | WeakWhy::Wr { .. }) {
                            return Err("a path step must be so or wr".into());
                        }
                        weak_edge(ctx, level, p).map_err(|w| format!("path step {i}: {w}"))?;
                    }
                    Ok(())
                }
            }
        }
    }
}

/// Checks one claimed cycle edge on its own: `Ok` when the history forces
/// it (both ends committed in every valid execution, `from` first). For
/// tests and tools; [`verify`] checks every edge of a cycle this way.
pub fn verify_edge_claim(h: &History, level: Level, use_dbts: bool, e: &ClaimedEdge) -> R<()> {
    if !edge_allowed(level, use_dbts, &e.kind) {
        return Err(CertError::NotForbidden {
            level,
            why: format!("a {:?} edge does not order {level} executions", e.kind),
        });
    }
    verify_edge(&Ctx::new(h), use_dbts, e).map_err(|why| CertError::BadEdge {
        index: 0,
        from: e.from,
        to: e.to,
        why,
    })
}

/// Checks one weak-cycle edge on its own (see [`verify_edge_claim`]).
pub fn verify_weak_edge(h: &History, level: Level, e: &WeakEdge) -> R<()> {
    weak_edge(&Ctx::new(h), level, e).map_err(|why| CertError::BadEdge {
        index: 0,
        from: e.from,
        to: e.to,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use history::{DbTs, Txn};

    fn w(k: i64, v: i64) -> Op {
        Op::Write {
            key: Key::Int(k),
            value: v,
        }
    }

    fn r(k: i64, v: Option<i64>) -> Op {
        Op::Read {
            key: Key::Int(k),
            value: v,
        }
    }

    fn ok(id: u64, session: u64, ops: Vec<Op>) -> Txn {
        Txn::new(id, session, Status::Ok, ops)
    }

    fn serial(h: &History, level: Level, dbts: bool, o: &[u32]) -> R<()> {
        verify(
            h,
            &Certificate {
                level,
                use_dbts: dbts,
                claim: Claim::Ok(Witness::Serial(o.to_vec())),
            },
        )
    }

    fn schedule(h: &History, level: Level, dbts: bool, ev: &[(u32, bool)]) -> R<()> {
        verify(
            h,
            &Certificate {
                level,
                use_dbts: dbts,
                claim: Claim::Ok(Witness::Schedule(ev.to_vec())),
            },
        )
    }

    /// cc's per-key rows and per-session clocks accept the same commit
    /// orders: the history's own order, lightly shuffled.
    #[test]
    fn cc_rows_and_clocks_agree() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xcc);
        let cfg = crate::testgen::GenConfig {
            max_txns: 10,
            sessions: 3,
            keys: 3,
            max_ops: 4,
            p_info: 0.0,
            p_wild: 0.2,
            max_stale: 4,
            ..crate::testgen::GenConfig::default()
        };
        let (mut ok, mut axiom) = (0, 0);
        for _ in 0..3000 {
            let h = crate::testgen::random_history(&mut rng, &cfg);
            let mut co: Vec<u32> = (0..h.txns.len() as u32)
                .filter(|&t| h.txns[t as usize].status == Status::Ok)
                .collect();
            for _ in 0..rng.random_range(0..3) {
                if co.len() > 1 {
                    let i = rng.random_range(0..co.len() - 1);
                    co.swap(i, i + 1);
                }
            }
            let c = Certificate {
                level: Level::Cc,
                use_dbts: false,
                claim: Claim::Ok(Witness::CommitOrder(co)),
            };
            let run = |clocks: bool| {
                CC_CLOCKS.with(|f| f.set(Some(clocks)));
                let r = verify(&h, &c);
                CC_CLOCKS.with(|f| f.set(None));
                r
            };
            let (rows, clocks) = (run(false), run(true));
            assert_eq!(rows.is_ok(), clocks.is_ok(), "{rows:?} vs {clocks:?}");
            match rows {
                Ok(()) => ok += 1,
                Err(CertError::Axiom { .. }) => axiom += 1,
                Err(_) => {}
            }
        }
        assert!(
            ok > 200 && axiom > 200,
            "{ok} accepted, {axiom} broke the axiom"
        );
    }

    #[test]
    fn top2_skips_the_excluded_txn() {
        let mut t = Top2::default();
        assert_eq!(t.best_except(0), None);
        t.add(5, 1);
        t.add(3, 2);
        t.add(4, 3);
        assert_eq!(t.best_except(9), Some((5, 1)));
        assert_eq!(t.best_except(1), Some((4, 3)));
        assert_eq!(t.best_except(3), Some((5, 1)));
    }

    #[test]
    fn real_time_ignores_a_txn_against_itself() {
        // T0's recorded end is before its own start (clock skew): it must
        // not be ordered before itself.
        let mut a = ok(0, 0, vec![w(1, 1)]);
        a.start = Some(10);
        a.end = Some(5);
        let h = History::from_txns(vec![a]);
        serial(&h, Level::Sser, false, &[0]).unwrap();
        schedule(&h, Level::StrongSi, false, &[(0, false), (0, true)]).unwrap();
    }

    #[test]
    fn schedule_structure_is_checked() {
        let h = History::from_txns(vec![ok(0, 0, vec![w(1, 1)]), ok(1, 1, vec![r(1, None)])]);
        let bad = [
            vec![(0, true), (0, false), (1, false), (1, true)],
            vec![(0, false), (0, false), (0, true), (1, false), (1, true)],
            vec![(0, false), (0, true), (0, true), (1, false), (1, true)],
            vec![(0, false), (1, false), (1, true)],
        ];
        for ev in bad {
            let e = schedule(&h, Level::Si, false, &ev).unwrap_err();
            assert!(
                matches!(e, CertError::BadEvents { txn: 0, .. }),
                "{ev:?}: {e}"
            );
        }
        assert_eq!(
            schedule(&h, Level::Si, false, &[(1, false), (1, true)]).unwrap_err(),
            CertError::MissingOk(0)
        );
        schedule(
            &h,
            Level::Si,
            false,
            &[(1, false), (0, false), (1, true), (0, true)],
        )
        .unwrap();
    }

    #[test]
    fn equal_timestamps() {
        // Begin and commit at the same timestamp: the begin comes first, so
        // T1 (begin 2) must not see T0 (commit 2).
        let mut a = ok(0, 0, vec![w(1, 1)]);
        a.dbts = Some(DbTs {
            start: 1,
            commit: Some(2),
        });
        let mut b = ok(1, 1, vec![r(1, None)]);
        b.dbts = Some(DbTs {
            start: 2,
            commit: None,
        });
        let h = History::from_txns(vec![a, b]);
        schedule(
            &h,
            Level::Si,
            true,
            &[(0, false), (1, false), (0, true), (1, true)],
        )
        .unwrap();
        let e = schedule(
            &h,
            Level::Si,
            true,
            &[(0, false), (0, true), (1, false), (1, true)],
        );
        assert!(matches!(e, Err(CertError::WrongRead { .. })));
        // Two commits at one timestamp are unordered.
        let mut c = ok(0, 0, vec![w(1, 1)]);
        c.dbts = Some(DbTs {
            start: 1,
            commit: Some(3),
        });
        let mut d = ok(1, 1, vec![w(2, 1)]);
        d.dbts = Some(DbTs {
            start: 1,
            commit: Some(3),
        });
        let h = History::from_txns(vec![c, d]);
        for ev in [
            [(0, false), (1, false), (0, true), (1, true)],
            [(0, false), (1, false), (1, true), (0, true)],
        ] {
            schedule(&h, Level::Si, true, &ev).unwrap();
        }
        serial(&h, Level::Ser, true, &[1, 0]).unwrap();
    }

    #[test]
    fn range_reads_outside_replay_are_unsupported_and_sub_histories_bounded() {
        let h = History::from_txns(vec![ok(
            0,
            0,
            vec![Op::RangeRead {
                lo: Key::Int(0),
                hi: Key::Int(9),
                rows: vec![],
            }],
        )]);
        serial(&h, Level::Ser, false, &[0]).unwrap();
        let weak = Certificate {
            level: Level::Cc,
            use_dbts: false,
            claim: Claim::Ok(Witness::CommitOrder(vec![0])),
        };
        verify(&h, &weak).unwrap();
        let sub = Certificate {
            level: Level::Ser,
            use_dbts: false,
            claim: Claim::Anomalous(vec![Refutation::SubHistory(vec![0])]),
        };
        assert!(matches!(verify(&h, &sub), Err(CertError::Unsupported(_))));
        let big = History::from_txns((0..10).map(|i| ok(i, 0, vec![w(1, i as i64)])).collect());
        let e = verify(
            &big,
            &Certificate {
                level: Level::Ser,
                use_dbts: false,
                claim: Claim::Anomalous(vec![Refutation::SubHistory((0..10).collect())]),
            },
        )
        .unwrap_err();
        assert_eq!(
            e,
            CertError::TooLarge {
                txns: 10,
                info: 0,
                max: MAX_SUB_TXNS
            }
        );
        eprintln!("{e}");
    }

    #[test]
    fn families() {
        for l in Level::ALL {
            let f = family(l);
            assert_eq!(
                f == Family::Weak,
                matches!(l, Level::Rc | Level::Ra | Level::Cc | Level::Pc)
            );
            // Session order constrains every level but plain si and ser.
            assert_eq!(uses_so(l), !matches!(l, Level::Si | Level::Ser));
        }
    }
}
