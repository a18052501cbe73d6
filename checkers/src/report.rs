//! What a check returns: a verdict, and every anomaly as a small,
//! self-contained counterexample a person can read without the history.

use std::collections::BTreeMap;
use std::fmt;

use history::{Key, Level, Op, Status};
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
    /// The process exit code for this verdict (DESIGN §1).
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
}

impl Anomaly {
    /// The name to show: Adya's, with the scope and the common name.
    pub fn title(&self) -> String {
        let mut s = self.kind.name().to_string();
        match self.scope {
            Scope::Item => {}
            Scope::Session => s.push_str("-session"),
            Scope::RealTime => s.push_str("-realtime"),
        }
        if let Some(c) = self.common {
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
    pub certificate: Option<crate::certify::Certificate>,
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
            let mut shown: Vec<String> = t
                .ops
                .iter()
                .filter(|o| t.ops.len() <= 8 || relevant(o))
                .map(|o| o.to_string())
                .collect();
            if shown.is_empty() {
                shown = t.ops.iter().take(8).map(|o| o.to_string()).collect();
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
