//! What a check returns: a verdict, and every anomaly as a small,
//! self-contained counterexample a person can read without the history.

use std::collections::BTreeMap;
use std::fmt;

use history::{Key, Level, Op, Status, Value};
use serde::{Deserialize, Serialize};

use crate::anomaly::{AnomalyKind, CommonName, Scope};

/// The answer to "does this history satisfy the level?".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It does: a witness order exists.
    Ok,
    /// It does not: at least one anomaly the level forbids is shown.
    Anomalous,
    /// The checker could not decide (budget, unsupported history). Never
    /// means "ok".
    Unknown,
}

impl Verdict {
    /// The process exit code for this verdict (docs/cli.md).
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Ok => 0,
            Verdict::Anomalous => 1,
            Verdict::Unknown => 3,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::Anomalous => "anomalous",
            Verdict::Unknown => "unknown",
        })
    }
}

/// The kind of a dependency edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    /// Write-write: the target installed the next version after the source's.
    Ww,
    /// Write-read: the target read the source's version.
    Wr,
    /// Read-write anti-dependency: the target overwrote what the source read.
    Rw,
    /// Session order: same client connection, source first.
    So,
    /// Real-time order: the source ended before the target started.
    Rt,
    /// The database's own timestamps order the source before the target.
    Ts,
}

impl EdgeKind {
    /// The short name used in reports and DOT labels.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Ww => "ww",
            EdgeKind::Wr => "wr",
            EdgeKind::Rw => "rw",
            EdgeKind::So => "so",
            EdgeKind::Rt => "rt",
            EdgeKind::Ts => "ts",
        }
    }
}

/// A transaction as shown in a counterexample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TxnView {
    /// The transaction's id in the history.
    pub id: u64,
    pub session: u64,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
    pub ops: Vec<Op>,
    /// The cluster node that served it, when the history says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// One edge of a counterexample, with the history's evidence for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeView {
    /// Source transaction id.
    pub from: u64,
    /// Target transaction id.
    pub to: u64,
    pub kind: EdgeKind,
    /// The key the dependency is on (none for so / rt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Key>,
    /// Why the history forces this edge, in one sentence.
    pub reason: String,
}

/// One anomaly, as a minimal counterexample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    pub kind: AnomalyKind,
    /// Whether the cycle needed session or real-time edges.
    pub scope: Scope,
    /// The common name of the pattern, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub common: Option<CommonName>,
    /// One line saying what happened.
    pub summary: String,
    /// The transactions involved, with their ops.
    pub txns: Vec<TxnView>,
    /// The cycle (or the single read-from) with a reason for each edge.
    pub edges: Vec<EdgeView>,
    /// Whether the values are the harness's write ids (`session << 32 |
    /// counter`), shown decoded beside the raw value: `8589934593 (s2#1)`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write_ids: bool,
}

/// True when `h` was recorded by the harness (its header names the
/// database and the workload), whose written values are write ids.
pub fn has_write_ids(h: &history::History) -> bool {
    h.header
        .as_ref()
        .is_some_and(|x| x.db.is_some() && x.workload.is_some())
}

/// A harness write id (`session << 32 | counter`, the counter from 1) in a
/// readable form, `s7#1013`; `None` for a value that does not decode
/// plausibly (negative, a zero counter, an implausible session).
pub fn write_id_label(v: Value) -> Option<String> {
    let (session, counter) = (v >> 32, v & 0xffff_ffff);
    ((0..1 << 20).contains(&session) && counter > 0).then(|| format!("s{session}#{counter}"))
}

/// A value as shown: raw, and decoded when `ids` and it decodes.
pub fn value_text(v: Value, ids: bool) -> String {
    match write_id_label(v).filter(|_| ids) {
        Some(l) => format!("{v} ({l})"),
        None => v.to_string(),
    }
}

/// An op as shown: like its `Display`, with values decoded when `ids`.
pub fn op_text(op: &Op, ids: bool) -> String {
    if !ids {
        return op.to_string();
    }
    let v = |v: Value| value_text(v, true);
    let opt = |x: &Option<Value>| x.map_or_else(|| "null".to_string(), v);
    match op {
        Op::Read { key, value } => format!("r({key})={}", opt(value)),
        Op::Write { key, value } => format!("w({key},{})", v(*value)),
        Op::Insert { key, value } => format!("i({key},{})", v(*value)),
        Op::Delete { key, value } => format!("d({key},{})", v(*value)),
        Op::Append { key, value } => format!("a({key},{})", v(*value)),
        Op::ReadList { key, values } => match values {
            None => format!("r({key})=?"),
            Some(vs) => {
                let parts: Vec<String> = vs.iter().map(|&x| v(x)).collect();
                format!("r({key})=[{}]", parts.join(","))
            }
        },
        Op::RangeRead { lo, hi, rows } => {
            let parts: Vec<String> = rows.iter().map(|(k, x)| format!("{k}:{}", v(*x))).collect();
            format!("rq({lo}..={hi})={{{}}}", parts.join(","))
        }
    }
}

/// How serious an anomaly is, for ordering counterexamples (0 first), as
/// Elle orders them: dirty writes, then aborted, intermediate and circular
/// information flow, then G-single (lost updates among them),
/// G-nonadjacent, G2-item, G2, then the history's contradictions
/// (thin-air reads, duplicate writes, ...), cycles that need session or
/// real-time edges, and last non-repeatable reads.
pub fn severity(a: &Anomaly) -> u8 {
    use AnomalyKind as K;
    let base = match a.kind {
        K::G0 => 0,
        K::AbortedRead => 1,
        K::IntermediateRead => 2,
        K::G1c => 3,
        K::GSingle => 4,
        K::GNonadjacent => 5,
        K::G2Item => 6,
        K::G2 => 7,
        // The history contradicts itself: a value nobody wrote, a
        // transaction not seeing its own writes, broken list orders.
        K::ThinAirRead
        | K::FutureRead
        | K::NotMyOwnWrite
        | K::NotMyLastWrite
        | K::DuplicateWrite
        | K::IncompatibleOrder
        | K::DuplicateElements => 8,
        _ => 10,
    };
    match a.scope {
        Scope::Item => base,
        // A cycle that needs session or real-time edges is weaker.
        Scope::Session | Scope::RealTime => base.max(8) + 1,
    }
}

impl Anomaly {
    /// The name to show: Adya's, with the scope and the common name.
    pub fn title(&self) -> String {
        Anomaly::title_of(self.kind, self.scope, self.common)
    }

    /// The title of an anomaly of this kind, scope and common name, before
    /// it is built: anomalies past the ones shown are only counted by it.
    pub fn title_of(kind: AnomalyKind, scope: Scope, common: Option<CommonName>) -> String {
        let mut s = kind.name().to_string();
        match scope {
            Scope::Item => {}
            Scope::Session => s.push_str("-session"),
            Scope::RealTime => s.push_str("-realtime"),
        }
        if let Some(c) = common {
            s.push_str(&format!(" ({c})"));
        }
        s
    }
}

/// Counts that describe the history as the checker saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryStats {
    pub txns: usize,
    pub ok: usize,
    pub fail: usize,
    pub info: usize,
    /// `info` transactions whose writes someone read, hence committed.
    pub info_committed: usize,
    pub sessions: usize,
    pub keys: usize,
    pub ops: usize,
}

/// The result of checking one history against one level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The level checked.
    pub level: Level,
    pub verdict: Verdict,
    /// Why the verdict is `unknown`, or notes on an incomplete history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How the level was decided (e.g. `mini-transaction`, `known-order`).
    pub method: String,
    /// Counterexamples, at most a few per kind.
    pub anomalies: Vec<Anomaly>,
    /// How many anomalies of each kind were found, including those not shown.
    pub anomaly_counts: BTreeMap<String, usize>,
    /// Levels the history is shown to fail.
    pub fails: Vec<Level>,
    /// Levels the history is shown to satisfy.
    pub satisfies: Vec<Level>,
    /// Levels neither shown to fail nor to hold (out of the placing time,
    /// or not checked at all); a note says why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_placed: Vec<Level>,
    pub stats: HistoryStats,
    /// Write-order constraints the check had to build (0 when every
    /// version order was known): a measure of its search effort.
    #[serde(default)]
    pub constraints: u64,
    /// Milliseconds until the verdict was known (the rest of `elapsed_ms`
    /// went into shrinking counterexamples and placing the other levels).
    #[serde(default)]
    pub decided_ms: u64,
    /// Milliseconds the check took.
    #[serde(default)]
    pub elapsed_ms: u64,
    /// What the independent certificate checker said of the verdict.
    #[serde(default)]
    pub certified: Certified,
    /// Milliseconds the certificate checker took.
    #[serde(default)]
    pub certify_ms: u64,
    /// The verdict's proof: the witness of an `ok`, the refutations of an
    /// `anomalous` that the certificate checker accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<crate::certify::certificate::Certificate>,
}

/// The certificate checker's word on a verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Certified {
    /// The verdict's proof was re-checked and holds.
    Checked,
    /// The verdict could not be re-checked (why): an `unknown`, or a proof
    /// the certificate checker does not handle.
    NotChecked(String),
    /// The proof was re-checked and does **not** hold: a checker bug. The
    /// verdict must not be trusted (the command line exits 2).
    Failed(String),
    /// Reports written before certificates existed.
    #[default]
    Absent,
}

impl Report {
    /// Each kind of anomaly found, the most serious first: its title, how
    /// many were found, and how many of them the report spells out.
    pub fn kinds_shown(&self) -> Vec<(String, usize, usize)> {
        let mut kinds: Vec<(u8, String, usize, usize)> = self
            .anomaly_counts
            .iter()
            .map(|(k, &n)| {
                let mut of_kind = self.anomalies.iter().filter(|a| &a.title() == k);
                let sev = of_kind.clone().next().map_or(u8::MAX, severity);
                (sev, k.clone(), n, of_kind.by_ref().count())
            })
            .collect();
        kinds.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        kinds.into_iter().map(|(_, k, n, s)| (k, n, s)).collect()
    }

    /// A human summary of a few lines, for terminals.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "{}: {} ({} txns: {} ok, {} fail, {} info; method {})\n",
            self.level,
            self.verdict,
            self.stats.txns,
            self.stats.ok,
            self.stats.fail,
            self.stats.info,
            self.method
        ));
        if !self.anomaly_counts.is_empty() {
            let parts: Vec<String> = self
                .anomaly_counts
                .iter()
                .map(|(k, n)| format!("{k} x{n}"))
                .collect();
            s.push_str(&format!("anomalies: {}\n", parts.join(", ")));
        }
        if !self.fails.is_empty() {
            let f: Vec<&str> = self.fails.iter().map(|l| l.name()).collect();
            s.push_str(&format!("fails: {}\n", f.join(", ")));
        }
        if !self.satisfies.is_empty() {
            let f: Vec<&str> = self.satisfies.iter().map(|l| l.name()).collect();
            s.push_str(&format!("satisfies: {}\n", f.join(", ")));
        }
        if !self.not_placed.is_empty() {
            let f: Vec<&str> = self.not_placed.iter().map(|l| l.name()).collect();
            s.push_str(&format!("not placed: {}\n", f.join(", ")));
        }
        match &self.certified {
            Certified::Checked => {}
            Certified::NotChecked(why) if self.verdict != Verdict::Unknown => {
                s.push_str(&format!("certificate: not checked ({why})\n"))
            }
            Certified::Failed(why) => s.push_str(&format!(
                "certificate: FAILED: {why} (a checker bug: do not trust this verdict)\n"
            )),
            _ => {}
        }
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {}", self.title(), self.summary)?;
        // Long transactions show the ops on the keys the edges are about.
        let keys: Vec<&Key> = self.edges.iter().filter_map(|e| e.key.as_ref()).collect();
        for t in &self.txns {
            let relevant = |o: &Op| match o {
                Op::RangeRead { lo, hi, .. } => keys.iter().any(|k| *k >= lo && *k <= hi),
                other => other.key().is_some_and(|k| keys.contains(&k)),
            };
            let text = |o: &Op| op_text(o, self.write_ids);
            let mut shown: Vec<String> = t
                .ops
                .iter()
                .filter(|o| t.ops.len() <= 8 || relevant(o))
                .map(text)
                .collect();
            if shown.is_empty() {
                shown = t.ops.iter().take(8).map(text).collect();
            }
            let hidden = t.ops.len() - shown.len();
            let more = if hidden > 0 {
                format!(" (+{hidden} other ops)")
            } else {
                String::new()
            };
            let node = t
                .node
                .as_ref()
                .map_or(String::new(), |n| format!(", node {n}"));
            writeln!(
                f,
                "  T{} (session {}{node}, {}): {}{more}",
                t.id,
                t.session,
                t.status.as_str(),
                shown.join(" ")
            )?;
        }
        for e in &self.edges {
            write!(f, "  T{} -> T{} ({}", e.from, e.to, e.kind.name())?;
            if let Some(k) = &e.key {
                write!(f, " on {k}")?;
            }
            writeln!(f, "): {}", e.reason)?;
        }
        Ok(())
    }
}
