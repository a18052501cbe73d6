//! Final reads: after the clients and the faults, every run reads back
//! every key it wrote, in `final-read` transactions of its history. A
//! write the database acknowledged and then lost (memdb `--bug
//! lost-write`) is caught because of them, and only because of them.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::*;
use history::{History, Key, Op, Status};

/// One finished run: its exit code, output, history and report.
struct Run {
    code: Option<i32>,
    out: String,
    history: History,
    report: serde_json::Value,
    _dir: tempfile::TempDir,
}

/// `harness run ARGS --out TMP`, read back.
fn run(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut all = vec!["run", "--out", &out];
    all.extend_from_slice(args);
    let o = harness(&all);
    let text = format!("{}{}", stdout(&o), stderr(&o));
    let run: PathBuf = run_dir(dir.path());
    let history = history::read_jsonl_file(&run.join("history.jsonl"))
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(history.end.is_some(), "the history is complete: {text}");
    let report = read_report(&run);
    Run {
        code: o.status.code(),
        out: text,
        history,
        report,
        _dir: dir,
    }
}

/// The keys the committed workload transactions wrote.
fn written(h: &History) -> BTreeSet<Key> {
    workload_txns(h)
        .filter(|t| t.status == Status::Ok)
        .flat_map(|t| &t.ops)
        .filter_map(|o| match o {
            Op::Write { key, .. }
            | Op::Insert { key, .. }
            | Op::Delete { key, .. }
            | Op::Append { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect()
}

/// The keys the committed final reads read; asserts they only read.
fn read_back(h: &History) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    for t in h.txns.iter().filter(|t| is_final_read(t)) {
        assert!(t.is_read_only(), "a final read wrote: {t:?}");
        if t.status != Status::Ok {
            continue;
        }
        for o in &t.ops {
            match o {
                Op::Read { key, .. } | Op::ReadList { key, .. } => {
                    keys.insert(key.clone());
                }
                other => panic!("not a point or list read: {other}"),
            }
        }
    }
    keys
}

/// Asserts the run read back every key it wrote, in final reads that come
/// after every workload transaction, and that its report counts them apart.
fn assert_read_back_everything(r: &Run, what: &str) {
    let h = &r.history;
    let w = written(h);
    assert!(!w.is_empty(), "{what}: nothing written: {}", r.out);
    let read = read_back(h);
    let missing: Vec<&Key> = w.difference(&read).collect();
    assert!(missing.is_empty(), "{what}: not read back: {missing:?}");
    let finals: Vec<&history::Txn> = h.txns.iter().filter(|t| is_final_read(t)).collect();
    let last_workload_end = workload_txns(h).filter_map(|t| t.end).max().unwrap();
    let sessions: BTreeSet<u64> = workload_txns(h).map(|t| t.session).collect();
    for t in &finals {
        assert!(t.start.unwrap() >= last_workload_end, "{what}: {t:?}");
        assert!(!sessions.contains(&t.session), "{what}: a fresh session");
    }
    let f = &r.report["final_reads"];
    assert_eq!(f["txns"], finals.len() as u64, "{what}: {f}");
    assert_eq!(f["keys"], read.len() as u64, "{what}: {f}");
    assert!(f["waited_s"].as_f64().is_some(), "{what}: {f}");
    // `counts` is the workload's alone.
    assert_eq!(
        r.report["counts"]["total"],
        workload_txns(h).count() as u64,
        "{what}"
    );
    assert!(
        r.report["abort_rate"]["by_kind"]
            .get(workloads::FINAL_READ)
            .is_none(),
        "{what}"
    );
    assert!(
        r.out.contains(&format!(
            "final reads: {} transactions, {} keys, ",
            finals.len(),
            read.len()
        )),
        "{what}: {}",
        r.out
    );
}

/// Asserts a run with `--no-final-reads` has none.
fn assert_no_final_reads(r: &Run, what: &str) {
    assert!(
        !r.history.txns.iter().any(is_final_read),
        "{what}: final reads recorded"
    );
    assert!(r.report.get("final_reads").is_none(), "{what}");
    assert!(!r.out.contains("final reads:"), "{what}: {}", r.out);
}

#[test]
fn a_lost_write_is_caught_only_because_of_the_final_reads() {
    for workload in ["mini", "append"] {
        for level in ["strong-si", "sser"] {
            let what = format!("{workload} at {level}");
            let args = [
                "--db",
                "memdb",
                "--bug",
                "lost-write",
                "--workload",
                workload,
                "--level",
                level,
                "--seed",
                "7",
            ];
            let with = run(&args);
            assert_eq!(with.code, Some(1), "{what}: {}", with.out);
            assert_read_back_everything(&with, &what);
            // The counterexample has a final read in it.
            let finals: BTreeSet<u64> = with
                .history
                .txns
                .iter()
                .filter(|t| is_final_read(t))
                .map(|t| t.id)
                .collect();
            let anomalies = with.report["check"]["anomalies"].as_array().unwrap();
            assert!(!anomalies.is_empty(), "{what}");
            assert!(
                anomalies.iter().all(|a| a["txns"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| finals.contains(&t["id"].as_u64().unwrap()))),
                "{what}: an anomaly without a final read: {anomalies:#?}"
            );
            let without = run(&[&args[..], &["--no-final-reads"]].concat());
            assert_eq!(without.code, Some(0), "{what}: {}", without.out);
            assert_no_final_reads(&without, &what);
        }
    }
}

#[test]
fn a_correct_memdb_passes_with_final_reads_at_every_level() {
    for workload in ["mini", "blindw", "range", "append"] {
        for level in ["rc", "si", "ser", "strong-si", "sser"] {
            let what = format!("{workload} at {level}");
            let r = run(&[
                "--db",
                "memdb",
                "--workload",
                workload,
                "--level",
                level,
                "--seed",
                "7",
                "--txns",
                "600",
                "--clients",
                "6",
            ]);
            assert_eq!(r.code, Some(0), "{what}: {}", r.out);
            assert_read_back_everything(&r, &what);
        }
    }
}

#[test]
fn a_sqlite_run_reads_back_every_key_it_wrote() {
    for workload in ["mini", "range", "append"] {
        let what = format!("sqlite {workload}");
        let args = [
            "--workload",
            workload,
            "--txns",
            "400",
            "--clients",
            "4",
            "--seed",
            "7",
        ];
        let r = run(&args);
        assert_eq!(r.code, Some(0), "{what}: {}", r.out);
        assert_read_back_everything(&r, &what);
        assert!(
            r.out.contains(", all ok, database answered after "),
            "{what}: {}",
            r.out
        );
        let without = run(&[&args[..], &["--no-final-reads"]].concat());
        assert_eq!(without.code, Some(0), "{what}: {}", without.out);
        assert_no_final_reads(&without, &what);
        assert_eq!(without.report["counts"]["total"], 400);
    }
}

#[test]
fn a_postgres_run_reads_back_every_key_it_wrote() {
    let url = scratch_db("final_reads");
    let r = run(&[
        "--db",
        "postgres",
        "--url",
        &url,
        "--workload",
        "blindw",
        "--keys",
        "300",
        "--txns",
        "300",
        "--clients",
        "4",
        "--seed",
        "7",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.out);
    assert_read_back_everything(&r, "postgres blindw");
    // 300 keys or fewer: at most 100 per transaction.
    let finals = r.history.txns.iter().filter(|t| is_final_read(t)).count();
    assert!((1..=3).contains(&finals), "{finals}");
}

/// `harness report` rebuilds report.json from a history with final reads:
/// they are counted apart there too, and the rebuilt report is accepted.
#[test]
fn a_rebuilt_report_counts_the_final_reads_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = harness(&[
        "run", "--db", "memdb", "--txns", "300", "--seed", "7", "--out", &out,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = run_dir(dir.path());
    let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
    let finals = h.txns.iter().filter(|t| is_final_read(t)).count() as u64;
    assert!(finals > 0);
    // The report as written is accepted by `harness report`.
    let o = harness(&["report", &run.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(
            "<th>final reads (apart)</th><td class=\"n\">{finals} txns, "
        )),
        "the HTML report counts them apart"
    );
    std::fs::remove_file(run.join("report.json")).unwrap();
    let o = harness(&["report", &run.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rebuilt = read_report(&run);
    assert_eq!(rebuilt["counts"]["total"], 300);
    assert_eq!(rebuilt["final_reads"]["txns"], finals);
    assert!(rebuilt["final_reads"].get("waited_s").is_none());
}
