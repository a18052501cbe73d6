//! Statistics of a recorded history: outcome counts, abort rates overall and
//! per transaction kind with the commonest error codes, throughput, and the
//! latency of committed transactions. They are about the workload: the
//! run's final reads (kind `final-read`) are left out of them and counted
//! apart ([`final_reads`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound::{Excluded, Unbounded};

use history::{History, Status, Txn};
use serde::Serialize;

use crate::quantiles::Latencies;

/// How often one error code ended a transaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorCount {
    /// The code before the first `: ` of the error text (`40001`,
    /// `SQLITE_BUSY`, `connection-lost`), or `other`.
    pub code: String,
    /// How many transactions it ended.
    pub count: u64,
}

/// Outcome counts and rates of a set of transactions.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcomes {
    /// Transactions attempted.
    pub total: u64,
    /// Status `ok`.
    pub committed: u64,
    /// Status `fail`.
    pub failed: u64,
    /// Status `info`.
    pub info: u64,
    /// failed / total: transactions the database surely rolled back.
    pub abort_rate: f64,
    /// info / total: transactions whose fate is unknown.
    pub info_rate: f64,
    /// The commonest error codes, most frequent first (at most 5).
    pub top_errors: Vec<ErrorCount>,
    /// Transactions a deadlock ended (see [`is_deadlock_code`]); they are
    /// among `failed`.
    pub deadlocks: u64,
    /// deadlocks / total.
    pub deadlock_rate: f64,
}

/// Whether an error code says the database killed the transaction to break
/// a deadlock: SQLSTATE `40P01` (PostgreSQL, YugabyteDB) or error `1213`
/// (MySQL, MariaDB, TiDB), the codes the adapters classify as
/// `ErrorClass::Deadlock`.
pub fn is_deadlock_code(code: &str) -> bool {
    matches!(code, "40P01" | "1213")
}

/// Commit latency percentiles, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
    /// Average.
    pub mean: f64,
}

/// Throughput over the client phase of the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Throughput {
    /// Committed transactions per second.
    pub committed_per_s: f64,
    /// Attempted transactions (any outcome) per second.
    pub attempted_per_s: f64,
    /// The length of the client phase, in seconds.
    pub elapsed_s: f64,
    /// With an outage (see [`Outage`]): the seconds of the client phase
    /// outside it, over which `outside_outage_per_s` is measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_outage_s: Option<f64>,
    /// Committed transactions per second outside the outage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_outage_per_s: Option<f64>,
}

/// A span of the client phase in which no transaction committed, long
/// enough to say the database was gone (see [`outage`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outage {
    /// When it began (the last commit before it, or the start), seconds
    /// into the client phase.
    pub from_s: f64,
    /// When it ended (the next commit); absent when it lasted to the end
    /// of the client phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_s: Option<f64>,
    /// How long it lasted.
    pub seconds: f64,
}

impl Outage {
    /// `outage: no committed transaction from t=1.0 s to the end (7.0 s)`.
    pub fn text(&self) -> String {
        match self.to_s {
            None => format!(
                "outage: no committed transaction from t={:.1} s to the end ({:.1} s)",
                self.from_s, self.seconds
            ),
            Some(to) => format!(
                "outage: no committed transaction from t={:.1} s to t={to:.1} s ({:.1} s)",
                self.from_s, self.seconds
            ),
        }
    }

    /// `rate over the 1.0 s before the outage`, for the throughput line.
    pub fn rate_span(&self, outside_s: f64) -> String {
        let span = if self.to_s.is_none() {
            "before"
        } else {
            "outside"
        };
        format!("rate over the {outside_s:.1} s {span} the outage")
    }
}

/// Everything `report.json` says about the run besides the check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// All transactions.
    pub outcomes: Outcomes,
    /// Per transaction kind (the plan's `kind`).
    pub by_kind: BTreeMap<String, Outcomes>,
    pub throughput: Throughput,
    /// Latency of committed transactions; absent when none committed.
    pub latency_ms: Option<Latency>,
    /// The longest span without a commit, when it is an outage.
    pub outage: Option<Outage>,
    /// The reasons of [`tested_little`] that look at the transactions
    /// alone (aborts, few writers, no concurrency).
    #[serde(skip)]
    pub traffic_little: Vec<String>,
    /// The final reads, counted apart (`waited_s` left for the run).
    #[serde(skip)]
    pub final_reads: FinalReads,
}

/// Whether `t` is one of the run's final reads (not the workload's).
pub fn is_final_read(t: &Txn) -> bool {
    t.kind.as_deref() == Some(workloads::FINAL_READ)
}

/// The final reads of a run, as `report.json` gives them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FinalReads {
    /// Final-read transactions recorded (every attempt).
    pub txns: u64,
    /// Of which committed.
    pub ok: u64,
    /// Of which failed.
    pub failed: u64,
    /// Of which of unknown fate.
    pub info: u64,
    /// Keys the committed final reads read (each once in a run).
    pub keys: u64,
    /// How long the run waited, after the last fault healed, for the
    /// database to answer; absent when it never did, or when the report
    /// was rebuilt from the history alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_s: Option<f64>,
}

impl FinalReads {
    /// `final reads: 3 transactions, 300 keys, all ok, database answered
    /// after 0.0 s`, for the run's summary.
    pub fn text(&self) -> String {
        if self.txns == 0 {
            return "final reads: none ran".into();
        }
        let outcome = if self.txns == self.ok {
            "all ok".to_string()
        } else {
            format!("{} ok, {} failed, {} info", self.ok, self.failed, self.info)
        };
        let waited = self.waited_s.map_or(String::new(), |w| {
            format!(", database answered after {w:.1} s")
        });
        format!(
            "final reads: {} transactions, {} keys, {outcome}{waited}",
            self.txns, self.keys
        )
    }
}

/// The code part of an error text `code: message`.
pub fn error_code(text: &str) -> &str {
    match text.split_once(": ") {
        Some((code, _)) if !code.is_empty() && code.len() <= 40 && !code.contains(' ') => code,
        _ => "other",
    }
}

#[derive(Debug, Default)]
struct Tally {
    o: Outcomes,
    errors: HashMap<String, u64>,
}

impl Tally {
    fn add(&mut self, status: Status, error: Option<&str>) {
        self.o.total += 1;
        match status {
            Status::Ok => self.o.committed += 1,
            Status::Fail => self.o.failed += 1,
            Status::Info => self.o.info += 1,
        }
        if status != Status::Ok {
            let code = error.map_or("none", error_code);
            if is_deadlock_code(code) {
                self.o.deadlocks += 1;
            }
            match self.errors.get_mut(code) {
                Some(n) => *n += 1,
                None => {
                    self.errors.insert(code.to_string(), 1);
                }
            }
        }
    }

    fn finish(mut self) -> Outcomes {
        if self.o.total > 0 {
            self.o.abort_rate = self.o.failed as f64 / self.o.total as f64;
            self.o.info_rate = self.o.info as f64 / self.o.total as f64;
            self.o.deadlock_rate = self.o.deadlocks as f64 / self.o.total as f64;
        }
        let mut errs: Vec<ErrorCount> = self
            .errors
            .into_iter()
            .map(|(code, count)| ErrorCount { code, count })
            .collect();
        errs.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.code.cmp(&b.code)));
        errs.truncate(5);
        self.o.top_errors = errs;
        self.o
    }
}

/// `abort rate 12.5% (40001 x3, 1213 x1); deadlock rate 3.1% (1)`: the
/// rate with the commonest error codes, and the deadlock rate when there
/// were deadlocks, for the terminal summary.
pub fn abort_text(o: &Outcomes) -> String {
    let errs: Vec<String> = o
        .top_errors
        .iter()
        .map(|e| format!("{} x{}", e.code, e.count))
        .collect();
    let rate = o.abort_rate * 100.0;
    let mut text = if errs.is_empty() {
        format!("abort rate {rate:.1}%")
    } else {
        format!("abort rate {rate:.1}% ({})", errs.join(", "))
    };
    text.push_str(&deadlock_text(o));
    text
}

/// `; deadlock rate 3.1% (1)`, or nothing without deadlocks.
fn deadlock_text(o: &Outcomes) -> String {
    if o.deadlocks == 0 {
        return String::new();
    }
    format!(
        "; deadlock rate {:.1}% ({})",
        o.deadlock_rate * 100.0,
        o.deadlocks
    )
}

/// One line per transaction type for the terminal summary: its counts and
/// abort rate with its commonest error codes; nothing when there is only
/// one type (the overall line says it all).
pub fn kind_lines(st: &Stats) -> Vec<String> {
    if st.by_kind.len() < 2 {
        return Vec::new();
    }
    let width = st.by_kind.keys().map(String::len).max().unwrap_or(0);
    st.by_kind
        .iter()
        .map(|(kind, o)| {
            format!(
                "{kind:<width$} {} txns: {} committed, {} failed, {} info; {}",
                o.total,
                o.committed,
                o.failed,
                o.info,
                abort_text(o)
            )
        })
        .collect()
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Latencies kept exactly up to this many committed transactions (512 kB);
/// past it, the percentiles come from a histogram (three significant
/// digits), so that a long run's statistics stay in bounded memory.
const EXACT_LATENCIES: usize = 1 << 16;

/// What the statistics need of each transaction, gathered one transaction
/// at a time in memory that does not grow with the run (but for the spans
/// of a run with no concurrency at all, see [`Overlap`]): the recorder
/// keeps one as it writes the history, so a long run's report needs no
/// read-back, and [`compute`] folds a history read whole into one.
#[derive(Debug)]
pub struct Accumulator {
    all: Tally,
    kinds: BTreeMap<String, Tally>,
    latency: Latencies,
    commits: CommitSeconds,
    writers: u64,
    overlap: Overlap,
    final_reads: FinalReads,
}

impl Default for Accumulator {
    fn default() -> Self {
        Accumulator {
            all: Tally::default(),
            kinds: BTreeMap::new(),
            latency: Latencies::new(EXACT_LATENCIES),
            commits: CommitSeconds::default(),
            writers: 0,
            overlap: Overlap::Disjoint(BTreeSet::new()),
            final_reads: FinalReads::default(),
        }
    }
}

impl Accumulator {
    /// Counts one transaction of the history (in any order).
    pub fn add(&mut self, t: &Txn) {
        if is_final_read(t) {
            self.add_final_read(t);
            return;
        }
        let err = t.error.as_deref();
        self.all.add(t.status, err);
        let kind = t.kind.as_deref().unwrap_or("-");
        match self.kinds.get_mut(kind) {
            Some(k) => k.add(t.status, err),
            None => {
                let mut k = Tally::default();
                k.add(t.status, err);
                self.kinds.insert(kind.to_string(), k);
            }
        }
        if t.status != Status::Ok {
            return;
        }
        if !t.is_read_only() {
            self.writers += 1;
        }
        if let Some(end) = t.end {
            self.commits.add(end);
        }
        if let (Some(s), Some(e)) = (t.start, t.end) {
            self.latency.add(e.saturating_sub(s));
            self.overlap.add(s, e);
        }
    }

    fn add_final_read(&mut self, t: &Txn) {
        let f = &mut self.final_reads;
        f.txns += 1;
        match t.status {
            Status::Ok => {
                f.ok += 1;
                // A run reads each key in one committed final read at
                // most (a read is tried again only when it did not
                // commit), so the keys are counted, not kept: a streamed
                // run's closing reads read every list it ever used.
                f.keys += t
                    .ops
                    .iter()
                    .filter(|op| {
                        matches!(op, history::Op::Read { .. } | history::Op::ReadList { .. })
                    })
                    .count() as u64;
            }
            Status::Fail => f.failed += 1,
            Status::Info => f.info += 1,
        }
    }

    /// The statistics of the transactions added, over a client phase of
    /// `elapsed_s`.
    pub fn finish(mut self, elapsed_s: f64) -> Stats {
        let latency_ms = (self.latency.count() > 0).then(|| {
            let [p50, p95, p99] = self.latency.percentiles([50.0, 95.0, 99.0]);
            Latency {
                p50: ms(p50),
                p95: ms(p95),
                p99: ms(p99),
                max: ms(self.latency.max()),
                mean: ms(self.latency.mean()),
            }
        });
        let traffic_little = self.traffic_little();
        let outcomes = self.all.finish();
        let per_s = |n: u64| {
            if elapsed_s > 0.0 {
                n as f64 / elapsed_s
            } else {
                0.0
            }
        };
        let outage = self.commits.outage(elapsed_s);
        let outside_outage_s = outage.as_ref().map(|o| (elapsed_s - o.seconds).max(0.0));
        Stats {
            throughput: Throughput {
                committed_per_s: per_s(outcomes.committed),
                attempted_per_s: per_s(outcomes.total),
                elapsed_s,
                outside_outage_s,
                outside_outage_per_s: outside_outage_s.map(|s| {
                    if s > 0.0 {
                        outcomes.committed as f64 / s
                    } else {
                        0.0
                    }
                }),
            },
            by_kind: self
                .kinds
                .into_iter()
                .map(|(k, t)| (k, t.finish()))
                .collect(),
            outcomes,
            latency_ms,
            outage,
            traffic_little,
            final_reads: self.final_reads,
        }
    }

    /// The reasons of [`tested_little`] that look at the transactions alone.
    fn traffic_little(&self) -> Vec<String> {
        let mut why = Vec::new();
        let o = &self.all.o;
        let (total, aborted) = (o.total, o.failed + o.info);
        if total > 0 && aborted as f64 / total as f64 > MAX_ABORT_RATE {
            why.push(format!(
                "{aborted} of {total} transactions aborted ({:.1}%, over {:.0}%)",
                aborted as f64 * 100.0 / total as f64,
                MAX_ABORT_RATE * 100.0
            ));
        }
        if self.writers < MIN_COMMITTED_WRITERS {
            why.push(format!(
                "only {} committed transactions wrote (fewer than {MIN_COMMITTED_WRITERS})",
                self.writers
            ));
        }
        if !matches!(self.overlap, Overlap::Seen) {
            why.push("no two committed transactions overlapped in time (no concurrency)".into());
        }
        why
    }
}

/// Computes the statistics of `h`, whose client phase lasted `elapsed_s`.
pub fn compute(h: &History, elapsed_s: f64) -> Stats {
    let mut acc = Accumulator::default();
    for t in &h.txns {
        acc.add(t);
    }
    acc.finish(elapsed_s)
}

/// Whether two committed transactions overlapped in time, told as the
/// spans arrive: until two do, the spans seen are pairwise disjoint and
/// kept in order of start, so a new span overlaps one of them exactly when
/// it overlaps its neighbour on either side; once two do, nothing is kept.
/// (Only a run with no concurrency at all keeps every span.) Two spans
/// `p <= q`, ordered by (start, end), overlap when `q.start < p.end`.
#[derive(Debug)]
enum Overlap {
    Disjoint(BTreeSet<(u64, u64)>),
    Seen,
}

impl Overlap {
    fn add(&mut self, start: u64, end: u64) {
        let Overlap::Disjoint(spans) = self else {
            return;
        };
        let q = (start, end);
        let before = spans.range(..=q).next_back();
        let after = spans.range((Excluded(q), Unbounded)).next();
        if before.is_some_and(|p| q.0 < p.1) || after.is_some_and(|r| r.0 < q.1) {
            *self = Overlap::Seen;
        } else {
            spans.insert(q);
        }
    }
}

/// The width of the spans of [`CommitSeconds`]: under [`OUTAGE_MIN_S`].
const COMMIT_SPAN_NS: u64 = 1_000_000_000;
const _: () = assert!((COMMIT_SPAN_NS as f64) < OUTAGE_MIN_S * 1e9);

/// The first and last commit (end time, ns) of each second of the run:
/// every gap between two consecutive commits of a second or more lies
/// between the last commit of one second and the first of the next second
/// that has one, so the longest gap, when it is long enough to be an
/// outage, is found exactly from one pair of numbers a second.
///
/// A run of days would keep a pair for each of its seconds, so the oldest
/// seconds are folded away once more than [`KEPT_SECONDS`] are held: of
/// them stays the first and last commit and every gap longer than
/// [`OUTAGE_MIN_S`] (no shorter gap can be an outage, and a commit that
/// arrives late only splits gaps). That is exact in any arrival order, and
/// its memory is that of the outages, not of the run's length.
#[derive(Debug, Default)]
struct CommitSeconds {
    by_second: BTreeMap<u64, (u64, u64)>,
    /// The seconds folded away, all before those of `by_second`.
    folded: Option<Folded>,
}

/// What stays of the seconds [`CommitSeconds`] folded away.
#[derive(Debug)]
struct Folded {
    /// The seconds before this one are folded.
    upto: u64,
    first: u64,
    last: u64,
    /// The gaps between their commits that are longer than
    /// [`OUTAGE_MIN_S`], as `(from, to)`, in order.
    long: Vec<(u64, u64)>,
}

/// Gaps between commits, `(from, to)`.
type Gaps = Vec<(u64, u64)>;

/// How many seconds [`CommitSeconds`] holds before it folds the older half.
const KEPT_SECONDS: usize = 1 << 10;

/// The longest gap (ns) between commits that can never be an outage.
const SHORT_GAP_NS: u64 = (OUTAGE_MIN_S * 1e9) as u64;

impl CommitSeconds {
    fn add(&mut self, end: u64) {
        let second = end / COMMIT_SPAN_NS;
        if let Some(f) = self.folded.as_mut().filter(|f| second < f.upto) {
            f.add(end);
            return;
        }
        let e = self.by_second.entry(second).or_insert((end, end));
        e.0 = e.0.min(end);
        e.1 = e.1.max(end);
        if self.by_second.len() > KEPT_SECONDS {
            self.fold(KEPT_SECONDS / 2);
        }
    }

    /// Folds the oldest `n` seconds held.
    fn fold(&mut self, n: usize) {
        for _ in 0..n {
            let Some((second, (lo, hi))) = self.by_second.pop_first() else {
                return;
            };
            match &mut self.folded {
                None => {
                    self.folded = Some(Folded {
                        upto: second + 1,
                        first: lo,
                        last: hi,
                        long: Vec::new(),
                    })
                }
                Some(f) => {
                    if lo.saturating_sub(f.last) > SHORT_GAP_NS {
                        f.long.push((f.last, lo));
                    }
                    f.last = hi;
                    f.upto = second + 1;
                }
            }
        }
    }

    /// The first commit, every gap between consecutive commits that may
    /// be an outage (in order; gaps of [`OUTAGE_MIN_S`] or less may be left
    /// out) and the last commit: `None` when nothing committed.
    fn gaps(&self) -> Option<(u64, Gaps, u64)> {
        let mut gaps = Vec::new();
        let mut last = None;
        let mut first = None;
        if let Some(f) = &self.folded {
            first = Some(f.first);
            gaps.extend_from_slice(&f.long);
            last = Some(f.last);
        }
        for &(lo, hi) in self.by_second.values() {
            match last {
                Some(prev) => gaps.push((prev, lo)),
                None => first = Some(lo),
            }
            last = Some(hi);
        }
        Some((first?, gaps, last?))
    }

    /// The longest span of the client phase (`0..elapsed_s`) with no
    /// commit, from its start to the first commit, between two commits, or
    /// from the last commit to its end, when it lasted longer than both
    /// [`OUTAGE_MIN_S`] and [`OUTAGE_SHARE`] of the phase: the database was
    /// gone, and the run tested nothing over that span. `None` when nothing
    /// committed at all (there is then nothing to check anyway).
    fn outage(&self, elapsed_s: f64) -> Option<Outage> {
        let (first, gaps, last) = self.gaps()?;
        if elapsed_s.is_nan() || elapsed_s <= 0.0 {
            return None;
        }
        let end = (elapsed_s * 1e9) as u64;
        let mut best: Option<(u64, Option<u64>)> = None;
        let len = |(from, to): (u64, Option<u64>)| to.unwrap_or(end).saturating_sub(from);
        let mut consider = |span: (u64, Option<u64>)| {
            if best.is_none_or(|b| len(span) > len(b)) {
                best = Some(span);
            }
        };
        consider((0, Some(first)));
        for (from, to) in gaps {
            consider((from, Some(to)));
        }
        consider((last, None));
        let (from, to) = best?;
        let seconds = len((from, to)) as f64 / 1e9;
        let limit = OUTAGE_MIN_S.max(OUTAGE_SHARE * elapsed_s);
        (seconds > limit).then(|| Outage {
            from_s: from as f64 / 1e9,
            to_s: to.filter(|&t| t < end).map(|t| t as f64 / 1e9),
            seconds,
        })
    }
}

impl Folded {
    /// A commit that arrives after its second was folded: it moves the
    /// first or last commit, or splits the long gap it falls in.
    fn add(&mut self, end: u64) {
        if end < self.first {
            if self.first - end > SHORT_GAP_NS {
                self.long.insert(0, (end, self.first));
            }
            self.first = end;
            return;
        }
        if end > self.last {
            if end - self.last > SHORT_GAP_NS {
                self.long.push((self.last, end));
            }
            self.last = end;
            return;
        }
        let i = self.long.partition_point(|&(_, to)| to <= end);
        if let Some(&(from, to)) = self.long.get(i).filter(|g| g.0 < end) {
            let halves = [(from, end), (end, to)];
            let keep = halves.into_iter().filter(|&(a, b)| b - a > SHORT_GAP_NS);
            self.long.splice(i..=i, keep);
        }
    }
}

/// A span without a commit longer than this many seconds can be an
/// outage ...
pub const OUTAGE_MIN_S: f64 = 5.0;
/// ... when it is also longer than this share of the client phase.
pub const OUTAGE_SHARE: f64 = 0.25;

/// A run whose abort rate (fail + info) is above this tested little.
pub const MAX_ABORT_RATE: f64 = 0.5;
/// A run with fewer committed writers than this tested little.
pub const MIN_COMMITTED_WRITERS: u64 = 100;

/// Why a run tested little, one reason a line; empty when it did not: its
/// nemesis asked for faults (`faults_asked`) and none was applied (the run
/// did not test what it was for), most of its transactions aborted, few
/// transactions that write committed (a check of reads alone proves
/// little), no two committed transactions overlapped in time (no
/// concurrency, so no anomaly was possible), or the database was gone for
/// a long span (`st.outage`).
pub fn tested_little(faults: &[history::Fault], st: &Stats, faults_asked: bool) -> Vec<String> {
    let mut why = Vec::new();
    if faults_asked {
        why.extend(no_fault_applied(faults));
    }
    why.extend(st.traffic_little.iter().cloned());
    if let Some(o) = &st.outage {
        why.push(o.text());
    }
    why
}

/// `not tested: no fault applied (2 asked, 0 applied: exit 4: ...)` when
/// a run whose nemesis asked for faults applied none of them.
pub fn no_fault_applied(faults: &[history::Fault]) -> Option<String> {
    // Leader changes the run saw are not faults it injected.
    let faults: Vec<&history::Fault> = faults.iter().filter(|f| !f.is_observation()).collect();
    if faults.iter().any(|f| f.applied) {
        return None;
    }
    Some(match faults.first() {
        None => "not tested: no fault applied (the nemesis asked for faults, but none was \
                 due before the run ended)"
            .into(),
        Some(f) => format!(
            "not tested: no fault applied ({} asked, 0 applied: {} {}{})",
            faults.len(),
            f.kind,
            f.target
                .as_deref()
                .map_or(String::new(), |t| format!("{t} ")),
            f.detail
                .as_deref()
                .map_or("failed".into(), |d| format!("failed: {d}"))
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use history::Txn;

    fn outage(h: &History, elapsed_s: f64) -> Option<Outage> {
        compute(h, elapsed_s).outage
    }

    fn traffic_little(h: &History) -> Vec<String> {
        compute(h, 1.0).traffic_little
    }

    fn final_reads(h: &History) -> FinalReads {
        compute(h, 1.0).final_reads
    }

    fn writer(id: u64, session: u64, status: Status, start: u64, end: u64) -> Txn {
        let ops = vec![
            history::Op::Read {
                key: 0.into(),
                value: None,
            },
            history::Op::Write {
                key: 0.into(),
                value: id as i64,
            },
        ];
        let mut t = Txn::new(id, session, status, ops);
        t.start = Some(start);
        t.end = Some(end);
        t
    }

    #[test]
    fn a_busy_concurrent_run_did_not_test_little() {
        let txns = (0..200)
            .map(|i| writer(i, i % 2, Status::Ok, 10 * i, 10 * i + 15))
            .collect();
        let h = History::from_txns(txns);
        assert!(traffic_little(&h).is_empty(), "{:?}", traffic_little(&h));
    }

    #[test]
    fn aborts_few_writers_and_no_overlap_are_told() {
        // 200 committed writers one after another: no concurrency.
        let serial: Vec<Txn> = (0..200)
            .map(|i| writer(i, 0, Status::Ok, 10 * i, 10 * i + 5))
            .collect();
        let why = traffic_little(&History::from_txns(serial.clone()));
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("overlapped"), "{why:?}");
        // Overlapping, but 99 committed writers and 301 failures.
        let mut txns: Vec<Txn> = (0..99)
            .map(|i| writer(i, i % 2, Status::Ok, 10 * i, 10 * i + 15))
            .collect();
        txns.extend((99..400).map(|i| writer(i, 2, Status::Fail, 10 * i, 10 * i + 1)));
        let why = traffic_little(&History::from_txns(txns));
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(
            why[0].contains("301 of 400 transactions aborted"),
            "{why:?}"
        );
        assert!(why[1].contains("only 99 committed"), "{why:?}");
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_long_span_without_commits_is_an_outage() {
        // Commits every 10 ms for 1 s, then none until the end at 8 s.
        let txns: Vec<Txn> = (0..100)
            .map(|i| writer(i, i % 2, Status::Ok, i * S / 100, i * S / 100 + S / 100))
            .collect();
        let h = History::from_txns(txns.clone());
        let o = outage(&h, 8.0).expect("an outage");
        assert!((o.from_s - 1.0).abs() < 1e-9 && o.to_s.is_none(), "{o:?}");
        assert!((o.seconds - 7.0).abs() < 1e-9, "{o:?}");
        assert_eq!(
            o.text(),
            "outage: no committed transaction from t=1.0 s to the end (7.0 s)"
        );
        let st = compute(&h, 8.0);
        assert_eq!(st.outage, Some(o.clone()));
        assert_eq!(st.throughput.outside_outage_s, Some(1.0));
        assert_eq!(st.throughput.outside_outage_per_s, Some(100.0));
        assert_eq!(o.rate_span(1.0), "rate over the 1.0 s before the outage");
        let why = tested_little(&h.faults, &st, false);
        assert!(why.iter().any(|w| w.starts_with("outage: ")), "{why:?}");
        // 3 s of the same 8 s run: under 5 s, no outage.
        assert_eq!(outage(&h, 4.0), None);
        // A gap in the middle: from the commit at 1.01 s to the next at 7 s.
        let mut mid = txns;
        mid.push(writer(100, 0, Status::Ok, 7 * S - 1000, 7 * S));
        mid.push(writer(101, 1, Status::Fail, 2 * S, 3 * S));
        let o = outage(&History::from_txns(mid), 7.5).expect("an outage");
        assert_eq!(
            o.text(),
            "outage: no committed transaction from t=1.0 s to t=7.0 s (6.0 s)"
        );
        // A long run: 25% of 60 s is 15 s.
        let steady: Vec<Txn> = (0..600)
            .map(|i| writer(i, 0, Status::Ok, i * S / 10, i * S / 10 + 1))
            .collect();
        let h = History::from_txns(steady);
        assert_eq!(outage(&h, 60.0), None);
        assert!(outage(&h, 85.0).is_some());
        assert!(outage(&History::default(), 10.0).is_none());
    }

    /// The outage of commits at `ends`, from all of them sorted: the
    /// longest of the gap before the first, between two consecutive ones
    /// and after the last, the first of equals.
    fn outage_of_sorted(ends: &[u64], elapsed_s: f64) -> Option<Outage> {
        let mut sorted = ends.to_vec();
        sorted.sort_unstable();
        let end = (elapsed_s * 1e9) as u64;
        let mut spans = vec![(0, Some(*sorted.first()?))];
        spans.extend(sorted.windows(2).map(|w| (w[0], Some(w[1]))));
        spans.push((*sorted.last()?, None));
        let len = |(from, to): (u64, Option<u64>)| to.unwrap_or(end).saturating_sub(from);
        let mut best = spans[0];
        for &s in &spans[1..] {
            if len(s) > len(best) {
                best = s;
            }
        }
        let seconds = len(best) as f64 / 1e9;
        (seconds > OUTAGE_MIN_S.max(OUTAGE_SHARE * elapsed_s)).then(|| Outage {
            from_s: best.0 as f64 / 1e9,
            to_s: best.1.filter(|&t| t < end).map(|t| t as f64 / 1e9),
            seconds,
        })
    }

    #[test]
    fn a_run_of_hours_keeps_few_seconds_and_finds_the_same_outage() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..40 {
            // Up to 3 hours of commits a few a second, with a few gaps of
            // up to a minute and a few hours-long runs (an outage of 25%).
            let hours = rng.random_range(1..4u64);
            let mut ends = Vec::new();
            let mut t = rng.random_range(0..3 * S);
            let mut outage = round % 4 == 0;
            while t < hours * 3600 * S {
                ends.push(t);
                t += match rng.random_range(0..2000) {
                    0 => rng.random_range(4 * S..60 * S),
                    1 if outage => {
                        outage = false;
                        rng.random_range(hours * 900 * S..hours * 1200 * S)
                    }
                    _ => rng.random_range(1..S / 2),
                };
            }
            // Arrival order: mostly in order, some a little late, a few
            // very late (after their second was folded).
            let mut order: Vec<(u64, u64)> = ends
                .iter()
                .map(|&e| {
                    let late = match rng.random_range(0..1000) {
                        0 => rng.random_range(0..7200 * S),
                        1..=100 => rng.random_range(0..2 * S),
                        _ => 0,
                    };
                    (e + late, e)
                })
                .collect();
            order.sort_unstable();
            let mut c = CommitSeconds::default();
            let mut most = 0;
            for &(_, e) in &order {
                c.add(e);
                most = most.max(c.by_second.len());
            }
            assert!(most <= KEPT_SECONDS, "{most}");
            assert!(c.folded.is_some(), "an hour is folded in part");
            // The gaps that can be outages, the first and the last commit
            // are those of all the commits sorted.
            let mut sorted = ends.clone();
            sorted.sort_unstable();
            let long = |g: &[(u64, u64)]| -> Vec<(u64, u64)> {
                g.iter()
                    .copied()
                    .filter(|&(a, b)| b - a > SHORT_GAP_NS)
                    .collect()
            };
            let want: Vec<(u64, u64)> = sorted.windows(2).map(|w| (w[0], w[1])).collect();
            let (first, gaps, last) = c.gaps().expect("commits");
            assert_eq!((first, last), (sorted[0], *sorted.last().unwrap()));
            assert_eq!(long(&gaps), long(&want), "round {round}");
            let last = *ends.last().unwrap();
            for elapsed in [last / S + 1, last / S + 30, last / S + 4000] {
                let elapsed = elapsed as f64;
                assert_eq!(
                    c.outage(elapsed),
                    outage_of_sorted(&ends, elapsed),
                    "round {round}, elapsed {elapsed}"
                );
            }
        }
    }

    #[test]
    fn a_commit_arriving_after_its_second_was_folded_moves_the_ends() {
        // Seconds 100..2100 arrive first and the older half is folded;
        // then commits at 10 s and 1,050.5 s (inside a folded second) come.
        let mut c = CommitSeconds::default();
        for i in 100..2100 {
            c.add(i * S);
        }
        assert!(c.folded.as_ref().is_some_and(|f| f.upto > 1051));
        c.add(10 * S);
        c.add(1050 * S + S / 2);
        let (first, gaps, last) = c.gaps().unwrap();
        assert_eq!((first, last), (10 * S, 2099 * S));
        let long: Vec<_> = gaps
            .into_iter()
            .filter(|&(a, b)| b - a > SHORT_GAP_NS)
            .collect();
        assert_eq!(long, vec![(10 * S, 100 * S)]);
    }

    #[test]
    fn a_nemesis_that_applied_nothing_did_not_test() {
        let f = |applied: bool| history::Fault {
            kind: "restart".into(),
            target: Some("nope".into()),
            start: 1,
            end: None,
            applied,
            detail: (!applied).then(|| "exit 4: no such node".to_string()),
        };
        assert_eq!(
            no_fault_applied(&[f(false), f(false)]).as_deref(),
            Some("not tested: no fault applied (2 asked, 0 applied: restart nope failed: exit 4: no such node)")
        );
        assert_eq!(no_fault_applied(&[f(false), f(true)]), None);
        assert!(no_fault_applied(&[]).unwrap().contains("none was due"));
        let h = History::from_txns(vec![]);
        let st = compute(&h, 1.0);
        assert!(tested_little(&h.faults, &st, false)
            .iter()
            .all(|w| !w.contains("not tested")));
        assert!(tested_little(&h.faults, &st, true)[0].starts_with("not tested: "));
    }

    fn txn(id: u64, status: Status, kind: &str, lat: u64, err: Option<&str>) -> Txn {
        let mut t = Txn::new(id, 0, status, vec![]);
        t.start = Some(1000 * id);
        t.end = Some(1000 * id + lat);
        t.kind = Some(kind.into());
        t.error = err.map(Into::into);
        t
    }

    #[test]
    fn counts_rates_codes_and_percentiles() {
        let mut txns = Vec::new();
        for i in 0..100 {
            txns.push(txn(i, Status::Ok, "a", (i + 1) * 1_000_000, None));
        }
        txns.push(txn(
            100,
            Status::Fail,
            "a",
            5,
            Some("40001: could not serialize access"),
        ));
        txns.push(txn(
            101,
            Status::Fail,
            "b",
            5,
            Some("40001: could not serialize"),
        ));
        txns.push(txn(102, Status::Fail, "b", 5, Some("23505: duplicate key")));
        txns.push(txn(
            103,
            Status::Info,
            "b",
            5,
            Some("connection-lost: reset"),
        ));
        let s = compute(&History::from_txns(txns), 2.0);
        assert_eq!(s.outcomes.total, 104);
        assert_eq!(s.outcomes.committed, 100);
        assert_eq!(s.outcomes.failed, 3);
        assert_eq!(s.outcomes.info, 1);
        assert!((s.outcomes.abort_rate - 3.0 / 104.0).abs() < 1e-12);
        assert_eq!(
            s.outcomes.top_errors[0],
            ErrorCount {
                code: "40001".into(),
                count: 2
            }
        );
        assert_eq!(s.by_kind["a"].total, 101);
        assert_eq!(s.by_kind["b"].failed, 2);
        assert_eq!(s.by_kind["b"].info, 1);
        assert_eq!(
            s.by_kind["b"].top_errors,
            vec![
                ErrorCount {
                    code: "23505".into(),
                    count: 1
                },
                ErrorCount {
                    code: "40001".into(),
                    count: 1
                },
                ErrorCount {
                    code: "connection-lost".into(),
                    count: 1
                },
            ]
        );
        let lines = kind_lines(&s);
        assert_eq!(lines.len(), 2);
        assert!(
            lines[1]
                .starts_with("b 3 txns: 0 committed, 2 failed, 1 info; abort rate 66.7% (23505 x1"),
            "{lines:?}"
        );
        assert_eq!(s.throughput.committed_per_s, 50.0);
        let l = s.latency_ms.unwrap();
        assert_eq!((l.p50, l.p95, l.p99, l.max), (50.0, 95.0, 99.0, 100.0));
    }

    #[test]
    fn deadlocks_are_counted_and_shown() {
        let txns = vec![
            txn(0, Status::Ok, "w", 5, None),
            txn(1, Status::Fail, "w", 5, Some("40P01: deadlock detected")),
            txn(2, Status::Fail, "w", 5, Some("1213: Deadlock found")),
            txn(3, Status::Fail, "r", 5, Some("40001: could not serialize")),
        ];
        let s = compute(&History::from_txns(txns), 1.0);
        assert_eq!(s.outcomes.deadlocks, 2);
        assert!((s.outcomes.deadlock_rate - 0.5).abs() < 1e-12);
        assert_eq!(s.by_kind["r"].deadlocks, 0);
        assert!(
            abort_text(&s.outcomes).ends_with("; deadlock rate 50.0% (2)"),
            "{}",
            abort_text(&s.outcomes)
        );
        assert!(!abort_text(&s.by_kind["r"]).contains("deadlock"));
    }

    #[test]
    fn final_reads_are_counted_apart() {
        let mut txns: Vec<Txn> = (0..200)
            .map(|i| writer(i, i % 2, Status::Ok, 10 * i, 10 * i + 15))
            .collect();
        let read = |id: u64, status: Status, keys: &[i64]| {
            let ops = keys
                .iter()
                .map(|&k| history::Op::Read {
                    key: k.into(),
                    value: None,
                })
                .collect();
            let mut t = Txn::new(id, 10 + id, status, ops);
            // Long after the workload, one at a time.
            t.start = Some(1_000_000 * id);
            t.end = Some(1_000_000 * id + 1);
            t.kind = Some(workloads::FINAL_READ.into());
            t.error = (status != Status::Ok).then(|| "40001: retry".into());
            t
        };
        txns.push(read(200, Status::Fail, &[0, 1]));
        txns.push(read(201, Status::Ok, &[0, 1]));
        txns.push(read(202, Status::Ok, &[2]));
        let h = History::from_txns(txns);
        let s = compute(&h, 2.0);
        assert_eq!(s.outcomes.total, 200);
        assert_eq!(s.outcomes.failed, 0);
        assert!(!s.by_kind.contains_key(workloads::FINAL_READ));
        assert!(traffic_little(&h).is_empty(), "{:?}", traffic_little(&h));
        let f = final_reads(&h);
        // Keys are counted per committed read, not kept: a run reads each
        // key in one committed final read (a failed one is tried again).
        assert_eq!((f.txns, f.ok, f.failed, f.info, f.keys), (3, 2, 1, 0, 3));
        assert_eq!(
            FinalReads {
                waited_s: Some(0.04),
                ..f
            }
            .text(),
            "final reads: 3 transactions, 3 keys, 2 ok, 1 failed, 0 info, database answered after 0.0 s"
        );
        assert_eq!(FinalReads::default().text(), "final reads: none ran");
    }

    #[test]
    fn error_codes_are_the_prefix() {
        assert_eq!(error_code("40001: could not serialize"), "40001");
        assert_eq!(error_code("SQLITE_BUSY: database is locked"), "SQLITE_BUSY");
        assert_eq!(error_code("something went wrong: badly"), "other");
        assert_eq!(error_code("no colon"), "other");
    }

    /// The sort-based answers [`Accumulator`] replaced, kept as oracles:
    /// the longest gap between sorted commits, and a sweep over the spans
    /// in order of start.
    fn oracle(h: &History, elapsed_s: f64) -> (Option<(u64, Option<u64>)>, bool) {
        let committed: Vec<&Txn> = h
            .txns
            .iter()
            .filter(|t| t.status == Status::Ok && !is_final_read(t))
            .collect();
        let mut commits: Vec<u64> = committed.iter().filter_map(|t| t.end).collect();
        commits.sort_unstable();
        let end = (elapsed_s * 1e9) as u64;
        let len = |(from, to): (u64, Option<u64>)| to.unwrap_or(end).saturating_sub(from);
        let mut best: Option<(u64, Option<u64>)> = None;
        if let (Some(&first), Some(&last)) = (commits.first(), commits.last()) {
            let mut spans = vec![(0, Some(first))];
            spans.extend(commits.windows(2).map(|w| (w[0], Some(w[1]))));
            spans.push((last, None));
            for span in spans {
                if best.is_none_or(|b| len(span) > len(b)) {
                    best = Some(span);
                }
            }
        }
        let limit = (OUTAGE_MIN_S.max(OUTAGE_SHARE * elapsed_s) * 1e9) as u64;
        let best = best.filter(|&b| len(b) > limit);
        let mut spans: Vec<(u64, u64)> = committed
            .iter()
            .filter_map(|t| Some((t.start?, t.end?)))
            .collect();
        spans.sort_unstable();
        let mut last_end: Option<u64> = None;
        let mut overlap = false;
        for (s, e) in spans {
            if last_end.is_some_and(|l| s < l) {
                overlap = true;
                break;
            }
            last_end = Some(last_end.map_or(e, |l| l.max(e)));
        }
        (best, overlap)
    }

    #[test]
    fn the_one_pass_statistics_agree_with_sorting_in_any_order() {
        use rand::seq::SliceRandom;
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut outages = 0;
        for case in 0..400 {
            let n = rng.random_range(0..40u64);
            let spread = [S / 1000, S, 20 * S][case % 3];
            let mut txns: Vec<Txn> = (0..n)
                .map(|i| {
                    let start = rng.random_range(0..spread);
                    let end = start + rng.random_range(0..spread / 4 + 1);
                    let status = [Status::Ok, Status::Ok, Status::Fail][rng.random_range(0..3)];
                    // Some runs have no concurrency: one after another.
                    let (start, end) = if case % 5 == 0 {
                        (i * spread, i * spread + spread / 2)
                    } else {
                        (start, end)
                    };
                    writer(i, i % 3, status, start, end)
                })
                .collect();
            txns.shuffle(&mut rng);
            let h = History::from_txns(txns);
            let elapsed_s = (n.max(1) * spread) as f64 / 1e9 * rng.random_range(1.0..2.0);
            let (best, overlap) = oracle(&h, elapsed_s);
            let st = compute(&h, elapsed_s);
            let end = (elapsed_s * 1e9) as u64;
            let got = st.outage.as_ref().map(|o| {
                (
                    (o.from_s * 1e9).round() as u64,
                    o.to_s.map(|t| (t * 1e9).round() as u64),
                )
            });
            let want = best.map(|(f, t)| (f, t.filter(|&t| t < end)));
            assert_eq!(got, want, "case {case}");
            outages += usize::from(got.is_some());
            let no_overlap = st.traffic_little.iter().any(|w| w.contains("overlapped"));
            assert_eq!(no_overlap, !overlap, "case {case}");
        }
        assert!(outages > 20, "{outages} outages: the cases test little");
    }
}
