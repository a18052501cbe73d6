//! Helpers for the per-workload end-to-end tests: run the real `harness`
//! binary on one workload, read back its history and report, and count the
//! op kinds the committed transactions recorded.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use history::{History, Key, Op, Status};

use super::common::{harness, read_report, run_dir, stderr, stdout, workload_txns};

/// What one run gave.
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// What it printed.
    pub stdout: String,
    /// The history, checked complete by [`run`].
    pub history: History,
    /// `report.json`.
    pub report: serde_json::Value,
    /// The run folder (kept while the `TempDir` lives).
    pub dir: PathBuf,
    _tmp: tempfile::TempDir,
}

/// Runs `harness run ARGS --out TMP`, fails the test on exit code 2, and
/// reads the history back (with `txns` transactions, plus the prelude when
/// the workload has one).
pub fn run(args: &[&str], txns: usize) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().display().to_string();
    let mut all: Vec<&str> = vec!["run", "--out", &out, "--check-timeout", "120s"];
    all.extend_from_slice(args);
    let o = harness(&all);
    let code = o.status.code().expect("an exit code");
    let text = stdout(&o);
    assert_ne!(code, 2, "harness {all:?} failed: {text}{}", stderr(&o));
    let dir = run_dir(tmp.path());
    let history = history::read_jsonl_file(&dir.join("history.jsonl")).expect("history parses");
    assert!(history.end.is_some(), "the history is complete");
    let prelude = usize::from(history.txns.first().and_then(|t| t.kind.as_deref()) == Some("load"));
    assert_eq!(
        workload_txns(&history).count(),
        txns + prelude,
        "every budgeted txn is recorded"
    );
    let report = read_report(&dir);
    assert_eq!(report["counts"]["total"], (txns + prelude) as u64);
    Run {
        code,
        stdout: text,
        history,
        report,
        dir,
        _tmp: tmp,
    }
}

/// How many ops of each kind the committed transactions recorded:
/// `r`, `r-null` (a read of an absent key), `w`, `i`, `d`, `rq` (range
/// reads), `rq-row`, `rq-tomb` (range-read rows that are tombstones),
/// `a`, `rl` (list reads), `rl-nonempty`, and `txn:KIND` per kind.
pub fn op_counts(h: &History) -> BTreeMap<String, usize> {
    let tombs: HashSet<(Key, i64)> = h
        .txns
        .iter()
        .flat_map(|t| &t.ops)
        .filter_map(|o| match o {
            Op::Delete { key, value } => Some((key.clone(), *value)),
            _ => None,
        })
        .collect();
    let mut c: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |k: &str, n: usize| *c.entry(k.to_string()).or_default() += n;
    for t in workload_txns(h).filter(|t| t.status == Status::Ok) {
        add(&format!("txn:{}", t.kind.as_deref().unwrap_or("?")), 1);
        for o in &t.ops {
            match o {
                Op::Read { value: None, .. } => add("r-null", 1),
                Op::Read { .. } => add("r", 1),
                Op::Write { .. } => add("w", 1),
                Op::Insert { .. } => add("i", 1),
                Op::Delete { .. } => add("d", 1),
                Op::RangeRead { rows, .. } => {
                    add("rq", 1);
                    add("rq-row", rows.len());
                    let dead = rows
                        .iter()
                        .filter(|(k, v)| tombs.contains(&(k.clone(), *v)))
                        .count();
                    add("rq-tomb", dead);
                }
                Op::Append { .. } => add("a", 1),
                Op::ReadList { values, .. } => {
                    add("rl", 1);
                    if values.as_ref().is_some_and(|v| !v.is_empty()) {
                        add("rl-nonempty", 1);
                    }
                }
            }
        }
    }
    c
}

/// The count of `kind` (0 when absent).
pub fn n(c: &BTreeMap<String, usize>, kind: &str) -> usize {
    c.get(kind).copied().unwrap_or(0)
}

/// Asserts that every kind in `kinds` was recorded at least `min` times.
pub fn assert_at_least(c: &BTreeMap<String, usize>, kinds: &[&str], min: usize, what: &str) {
    for k in kinds {
        assert!(
            n(c, k) >= min,
            "{what}: {k} {} < {min}; counts {c:?}",
            n(c, k)
        );
    }
}

/// Asserts that none of `kinds` was recorded.
pub fn assert_none(c: &BTreeMap<String, usize>, kinds: &[&str], what: &str) {
    for k in kinds {
        assert_eq!(n(c, k), 0, "{what}: unexpected {k}; counts {c:?}");
    }
}

/// Checks the op kinds `workload` is meant to produce, with counts, and
/// returns the counts (printed with `--nocapture`).
pub fn assert_workload_ops(workload: &str, r: &Run, what: &str) -> BTreeMap<String, usize> {
    let h = &r.history;
    let c = op_counts(h);
    eprintln!("{what}: {c:?}");
    let committed = workload_txns(h).filter(|t| t.status == Status::Ok).count();
    assert!(committed >= 30, "{what}: only {committed} committed");
    match workload {
        "mini" => {
            // 1–2 reads, at most 2 writes, each write after a read of its key.
            assert_at_least(&c, &["r", "w"], 20, what);
            assert_none(&c, &["i", "d", "rq", "a", "rl"], what);
            for t in workload_txns(h).filter(|t| t.status == Status::Ok) {
                let reads = t
                    .ops
                    .iter()
                    .filter(|o| matches!(o, Op::Read { .. }))
                    .count();
                assert!(
                    (1..=2).contains(&reads) && t.ops.len() <= 4,
                    "{what}: {t:?}"
                );
            }
        }
        "blindw" => {
            // rw: read-only and write-only transactions, never both.
            assert_at_least(&c, &["r", "w", "txn:read-only", "txn:write-only"], 20, what);
            assert_none(&c, &["i", "d", "rq", "a", "rl"], what);
            for t in workload_txns(h) {
                let reads = t.ops.iter().filter(|o| o.is_read()).count();
                assert!(reads == 0 || reads == t.ops.len(), "{what}: mixed {t:?}");
            }
        }
        "range" => {
            assert_at_least(
                &c,
                &["r", "w", "i", "d", "rq", "rq-row", "rq-tomb"],
                5,
                what,
            );
            assert_at_least(
                &c,
                &[
                    "txn:read",
                    "txn:write",
                    "txn:insert",
                    "txn:delete",
                    "txn:range",
                ],
                5,
                what,
            );
            assert_none(&c, &["a", "rl"], what);
        }
        "append" => {
            assert_at_least(&c, &["a", "rl", "rl-nonempty"], 20, what);
            assert_none(&c, &["w", "i", "d", "rq"], what);
        }
        "tpcc" => {
            // The load: one committed transaction of inserts only, first.
            let load = &h.txns[0];
            assert_eq!(load.kind.as_deref(), Some("load"), "{what}");
            assert_eq!(load.status, Status::Ok, "{what}");
            assert!(
                load.ops.len() > 500 && load.ops.iter().all(|o| matches!(o, Op::Insert { .. })),
                "{what}: the load inserts every row"
            );
            assert_at_least(&c, &["r", "w", "i", "rq-row"], 20, what);
            // Range reads come only from order-status and stock-level (2 of
            // the 5 kinds); at serializable on a loaded machine most of a
            // 300-transaction run can abort, so fewer are asked for.
            assert_at_least(&c, &["rq"], 8, what);
            assert_at_least(&c, &["txn:new-order", "txn:payment"], 5, what);
            assert_none(&c, &["a", "rl", "rq-tomb"], what);
            // Every key is `table:pk` of a TPC-C table.
            const TABLES: [&str; 8] = [
                "warehouse",
                "district",
                "customer",
                "item",
                "stock",
                "order",
                "new_order",
                "order_line",
            ];
            for t in &h.txns {
                for o in &t.ops {
                    let keys: Vec<&Key> = match o {
                        Op::RangeRead { lo, hi, rows } => {
                            let mut v = vec![lo, hi];
                            v.extend(rows.iter().map(|(k, _)| k));
                            v
                        }
                        _ => o.key().into_iter().collect(),
                    };
                    for k in keys {
                        let Key::Str(s) = k else {
                            panic!("{what}: integer key in {o}")
                        };
                        let table = s.split(':').next().unwrap();
                        assert!(
                            TABLES.contains(&table) && s.contains(':'),
                            "{what}: key {s}"
                        );
                    }
                }
            }
            // The end-of-run consistency check ran and is in the report.
            let ec = &r.report["end_check"];
            assert_eq!(ec["check"], "tpcc-consistency", "{what}: {}", r.report);
            assert_eq!(ec["conditions"].as_array().unwrap().len(), 4, "{what}");
            for cond in ec["conditions"].as_array().unwrap() {
                assert!(cond["checked"].as_u64().unwrap() > 0, "{what}: {cond}");
            }
            assert!(
                r.stdout.contains("tpcc-consistency: "),
                "{what}: {}",
                r.stdout
            );
        }
        other => panic!("no expectations for {other}"),
    }
    c
}
