//! Statistics of a recorded history: outcome counts, abort rates overall and
//! per transaction kind with the commonest error codes, throughput, and the
//! latency of committed transactions.

use std::collections::{BTreeMap, HashMap};

use history::{History, Status};
use serde::Serialize;

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
}

/// The code part of an error text `code: message`.
pub fn error_code(text: &str) -> &str {
    match text.split_once(": ") {
        Some((code, _)) if !code.is_empty() && code.len() <= 40 && !code.contains(' ') => code,
        _ => "other",
    }
}

#[derive(Default)]
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
            *self.errors.entry(code.to_string()).or_default() += 1;
        }
    }

    fn finish(mut self) -> Outcomes {
        if self.o.total > 0 {
            self.o.abort_rate = self.o.failed as f64 / self.o.total as f64;
            self.o.info_rate = self.o.info as f64 / self.o.total as f64;
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

/// `abort rate 12.5% (40001 x3, 1213 x1)`: the rate with the commonest
/// error codes, for the terminal summary.
pub fn abort_text(o: &Outcomes) -> String {
    let errs: Vec<String> = o
        .top_errors
        .iter()
        .map(|e| format!("{} x{}", e.code, e.count))
        .collect();
    let rate = o.abort_rate * 100.0;
    if errs.is_empty() {
        format!("abort rate {rate:.1}%")
    } else {
        format!("abort rate {rate:.1}% ({})", errs.join(", "))
    }
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

/// The value at percentile `p` (nearest rank) of sorted `xs`.
fn percentile(xs: &[u64], p: f64) -> u64 {
    if xs.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Computes the statistics of `h`, whose client phase lasted `elapsed_s`.
pub fn compute(h: &History, elapsed_s: f64) -> Stats {
    let mut all = Tally::default();
    let mut kinds: BTreeMap<String, Tally> = BTreeMap::new();
    let mut lat = Vec::new();
    for t in &h.txns {
        let err = t.error.as_deref();
        all.add(t.status, err);
        let kind = t.kind.clone().unwrap_or_else(|| "-".into());
        kinds.entry(kind).or_default().add(t.status, err);
        if t.status == Status::Ok {
            if let (Some(s), Some(e)) = (t.start, t.end) {
                lat.push(e.saturating_sub(s));
            }
        }
    }
    lat.sort_unstable();
    let latency_ms = (!lat.is_empty()).then(|| Latency {
        p50: ms(percentile(&lat, 50.0)),
        p95: ms(percentile(&lat, 95.0)),
        p99: ms(percentile(&lat, 99.0)),
        max: ms(*lat.last().unwrap_or(&0)),
        mean: ms(lat.iter().sum::<u64>() / lat.len() as u64),
    });
    let outcomes = all.finish();
    let per_s = |n: u64| {
        if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        }
    };
    Stats {
        throughput: Throughput {
            committed_per_s: per_s(outcomes.committed),
            attempted_per_s: per_s(outcomes.total),
            elapsed_s,
        },
        by_kind: kinds.into_iter().map(|(k, t)| (k, t.finish())).collect(),
        outcomes,
        latency_ms,
    }
}

/// A run whose abort rate (fail + info) is above this tested little.
pub const MAX_ABORT_RATE: f64 = 0.5;
/// A run with fewer committed writers than this tested little.
pub const MIN_COMMITTED_WRITERS: u64 = 100;

/// Why a run tested little, one reason a line; empty when it did not: most
/// of its transactions aborted, few transactions that write committed (a
/// check of reads alone proves little), or no two committed transactions
/// overlapped in time (no concurrency, so no anomaly was possible).
pub fn tested_little(h: &History) -> Vec<String> {
    let mut why = Vec::new();
    let total = h.txns.len() as u64;
    let aborted = h.txns.iter().filter(|t| t.status != Status::Ok).count() as u64;
    if total > 0 && aborted as f64 / total as f64 > MAX_ABORT_RATE {
        why.push(format!(
            "{aborted} of {total} transactions aborted ({:.1}%, over {:.0}%)",
            aborted as f64 * 100.0 / total as f64,
            MAX_ABORT_RATE * 100.0
        ));
    }
    let committed: Vec<&history::Txn> = h.txns.iter().filter(|t| t.status == Status::Ok).collect();
    let writers = committed.iter().filter(|t| !t.is_read_only()).count() as u64;
    if writers < MIN_COMMITTED_WRITERS {
        why.push(format!(
            "only {writers} committed transactions wrote (fewer than {MIN_COMMITTED_WRITERS})"
        ));
    }
    let mut spans: Vec<(u64, u64)> = committed
        .iter()
        .filter_map(|t| Some((t.start?, t.end?)))
        .collect();
    spans.sort_unstable();
    let mut last_end = None;
    let mut overlap = false;
    for (s, e) in spans {
        if last_end.is_some_and(|l| s < l) {
            overlap = true;
            break;
        }
        last_end = Some(last_end.map_or(e, |l: u64| l.max(e)));
    }
    if !overlap {
        why.push("no two committed transactions overlapped in time (no concurrency)".into());
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;
    use history::Txn;

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
        assert!(tested_little(&h).is_empty(), "{:?}", tested_little(&h));
    }

    #[test]
    fn aborts_few_writers_and_no_overlap_are_told() {
        // 200 committed writers one after another: no concurrency.
        let serial: Vec<Txn> = (0..200)
            .map(|i| writer(i, 0, Status::Ok, 10 * i, 10 * i + 5))
            .collect();
        let why = tested_little(&History::from_txns(serial.clone()));
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("overlapped"), "{why:?}");
        // Overlapping, but 99 committed writers and 301 failures.
        let mut txns: Vec<Txn> = (0..99)
            .map(|i| writer(i, i % 2, Status::Ok, 10 * i, 10 * i + 15))
            .collect();
        txns.extend((99..400).map(|i| writer(i, 2, Status::Fail, 10 * i, 10 * i + 1)));
        let why = tested_little(&History::from_txns(txns));
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(
            why[0].contains("301 of 400 transactions aborted"),
            "{why:?}"
        );
        assert!(why[1].contains("only 99 committed"), "{why:?}");
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
    fn error_codes_are_the_prefix() {
        assert_eq!(error_code("40001: could not serialize"), "40001");
        assert_eq!(error_code("SQLITE_BUSY: database is locked"), "SQLITE_BUSY");
        assert_eq!(error_code("something went wrong: badly"), "other");
        assert_eq!(error_code("no colon"), "other");
    }
}
