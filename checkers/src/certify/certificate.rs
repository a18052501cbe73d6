//! What a certificate says: the claim (a witness execution for `ok`,
//! refutations for `anomalous`), the edges and premises a refutation
//! names, and the errors the verifier answers with. Every other file of
//! [`certify`](super) reads these; this one reads only the [`history`]
//! types and [`AnomalyKind`].

use history::{Key, Level, Value};
use serde::{Deserialize, Serialize};

use crate::anomaly::AnomalyKind;

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
    /// [`Derivation::renamed`](Derivation::renamed)).
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
    pub(super) fn renamed(&self, id: &impl Fn(u32) -> u32) -> WwWhy {
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
    /// re-decided by brute force ([`exhaustive::registers::satisfies`](crate::exhaustive::registers::satisfies))
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
    Derivation(Derivation),
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

pub(super) type R<T> = Result<T, CertError>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Family {
    Ser,
    Si,
    Weak,
}

pub(super) fn family(l: Level) -> Family {
    match l {
        Level::Ser | Level::StrongSessionSer | Level::Sser => Family::Ser,
        Level::Si | Level::StrongSessionSi | Level::StrongSi => Family::Si,
        Level::Rc | Level::Ra | Level::Cc | Level::Pc => Family::Weak,
    }
}

/// Session order constrains executions of this level.
pub(super) fn uses_so(l: Level) -> bool {
    l.uses_sessions() || l.uses_real_time()
}

// A derivation: pruning steps, then the cycle they leave (checked in
// [`derivation`](super::derivation)).

/// Steps, then the cycle they leave no way around.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Derivation {
    pub steps: Vec<Step>,
    pub cycle: Vec<ProofEdge>,
}

/// `first` commits before `second` in every valid execution: the other
/// order implies `rejected`, which `back` (a path from its target to its
/// source) closes into a cycle.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub first: u32,
    pub second: u32,
    /// An edge the order `second` before `first` implies (a `Ww` from
    /// `second` to `first`, or an `Rw` into `first` reading `second`'s
    /// version).
    pub rejected: ClaimedEdge,
    pub back: Vec<ProofEdge>,
}

/// An edge of a derivation's cycles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofEdge {
    /// Every valid execution has it, by the history's own evidence.
    Forced(ClaimedEdge),
    /// Implied by the order an earlier step fixed (`Ww` from its `first`
    /// to its `second`, or `Rw` into its `second` from a reader of its
    /// `first`'s version).
    Chosen { step: u32, edge: ClaimedEdge },
}

impl ProofEdge {
    pub(super) fn edge(&self) -> &ClaimedEdge {
        match self {
            ProofEdge::Forced(e) | ProofEdge::Chosen { edge: e, .. } => e,
        }
    }
}

impl Derivation {
    /// The same derivation over other transaction ids: a proof found on a
    /// sub-history, told in the whole history's ids.
    pub fn renamed(&self, id: &impl Fn(u32) -> u32) -> Derivation {
        let edge = |e: &ProofEdge| match e {
            ProofEdge::Forced(c) => ProofEdge::Forced(c.renamed(id)),
            ProofEdge::Chosen { step, edge } => ProofEdge::Chosen {
                step: *step,
                edge: edge.renamed(id),
            },
        };
        Derivation {
            steps: self
                .steps
                .iter()
                .map(|s| Step {
                    first: id(s.first),
                    second: id(s.second),
                    rejected: s.rejected.renamed(id),
                    back: s.back.iter().map(edge).collect(),
                })
                .collect(),
            cycle: self.cycle.iter().map(edge).collect(),
        }
    }
}
