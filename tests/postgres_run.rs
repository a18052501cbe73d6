//! `harness run` end to end on PostgreSQL (`ISOHARNESS_PG_URL`, else
//! postgres://postgres@127.0.0.1:5432/postgres). Fails when the server is
//! down: CI starts it.

mod common;

use common::*;
use history::Status;

/// Runs the mini workload with few keys and many clients; returns the
/// exit code, the history and the report.
fn contended_run(tag: &str, args: &[&str]) -> (i32, history::History, serde_json::Value) {
    let url = scratch_db(tag);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut all = vec![
        "run",
        "--db",
        "postgres",
        "--url",
        &url,
        "--workload",
        "mini",
        "--keys",
        "3",
        "--clients",
        "8",
        "--txns",
        "400",
        "--out",
        &out,
        "--check-timeout",
        "60s",
    ];
    all.extend_from_slice(args);
    let o = harness(&all);
    let code = o.status.code().expect("exit code");
    assert_ne!(code, 2, "{tag}: {}", stderr(&o));
    let run = run_dir(dir.path());
    let h = read_history(&run, 400);
    let report = read_report(&run);
    assert_eq!(report["counts"]["total"], 400);
    assert_eq!(report["run"]["db"], "postgres");
    (code, h, report)
}

fn fails_with(h: &history::History, code: &str) -> usize {
    h.txns
        .iter()
        .filter(|t| t.status == Status::Fail)
        .filter(|t| {
            t.error
                .as_deref()
                .is_some_and(|e| e.starts_with(&format!("{code}: ")))
        })
        .count()
}

#[test]
fn read_committed() {
    let (code, h, report) = contended_run("run_rc", &["--level", "rc"]);
    assert_eq!(report["run"]["isolation"], "read-committed");
    assert_eq!(
        h.header.as_ref().unwrap().isolation.as_deref(),
        Some("read-committed")
    );
    assert_eq!(
        fails_with(&h, "40001"),
        0,
        "read committed never fails to serialize"
    );
    assert_ne!(code, 1, "PostgreSQL's read committed is rc: {report}");
}

#[test]
fn repeatable_read() {
    let (code, h, report) = contended_run("run_rr", &["--level", "si"]);
    assert_eq!(report["run"]["isolation"], "repeatable-read");
    assert!(
        fails_with(&h, "40001") > 0,
        "serialization failures expected"
    );
    assert_eq!(
        code, 0,
        "PostgreSQL's repeatable read is SI: {}",
        report["check"]
    );
    assert!(report["abort_rate"]["overall"].as_f64().unwrap() > 0.0);
    let top = &report["abort_rate"]["top_errors"][0]["code"];
    assert_eq!(top, "40001");
}

#[test]
fn serializable() {
    let (code, h, report) = contended_run("run_ser", &["--level", "sser"]);
    assert_eq!(report["run"]["isolation"], "serializable");
    assert!(
        fails_with(&h, "40001") > 0,
        "serialization failures expected"
    );
    assert_eq!(
        code, 0,
        "PostgreSQL's serializable is strictly serializable: {}",
        report["check"]
    );
}

#[test]
fn read_committed_is_not_snapshot_isolation() {
    let (code, _, report) = contended_run(
        "run_rc_as_si",
        &["--isolation", "read-committed", "--level", "si"],
    );
    assert_eq!(report["run"]["isolation"], "read-committed");
    assert_eq!(
        code, 1,
        "lost updates expected: {}",
        report["check"]["anomaly_counts"]
    );
    assert_eq!(report["verdict"], "anomalous");
}

#[test]
fn clients_reconnect_when_their_connections_are_killed() {
    let url = scratch_db("run_kill");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "run",
            "--db",
            "postgres",
            "--url",
            &url,
            "--workload",
            "mini",
            "--keys",
            "10",
            "--clients",
            "4",
            "--duration",
            "4s",
            "--level",
            "si",
            "--out",
            &out,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let killed: i64 = rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut killed = 0;
        for _ in 0..6 {
            tokio::time::sleep(std::time::Duration::from_millis(400)).await;
            let row = c
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid()",
                    &[],
                )
                .await
                .unwrap();
            killed += row.get::<_, i64>(0);
        }
        killed
    });
    let o = child.wait_with_output().unwrap();
    assert!(killed > 0, "the test killed no connection");
    let code = o.status.code().unwrap();
    assert!(
        code == 0 || code == 3,
        "exit {code}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    let run = run_dir(dir.path());
    let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
    assert!(h.end.is_some(), "the history is complete");
    assert!(
        h.txns.iter().any(|t| t.session >= 4),
        "reconnected clients get new session ids"
    );
    let lost = h
        .txns
        .iter()
        .filter(|t| t.status != Status::Ok)
        .filter_map(|t| t.error.as_deref())
        .filter(|e| e.starts_with("57P01: ") || e.starts_with("connection-lost: "))
        .count();
    assert!(
        lost > 0,
        "killed connections show up as failed or info transactions"
    );
    assert!(
        h.status_counts().0 > 0,
        "clients went on committing after reconnecting"
    );
}

/// The tables of the database whose names start with `prefix`.
fn pg_tables(url: &str, prefix: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let rows = c
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
                 AND starts_with(tablename, $1) ORDER BY 1",
                &[&prefix],
            )
            .await
            .unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    })
}

/// Two runs at once against one database used to drop and share one
/// table and report thin-air reads, G1a and lost updates; each now owns
/// its tables, and both pass at serializable.
#[test]
fn two_runs_at_once_on_one_database_both_pass() {
    let url = scratch_db("run_two");
    let runs = two_runs_at_once(
        "postgres",
        &url,
        &["--isolation", "serializable", "--level", "ser"],
    );
    assert_both_pass(&runs);
    assert!(
        pg_tables(&url, "isoharness_").is_empty(),
        "both dropped theirs"
    );
}

/// Without --keep-tables a run leaves no table behind; with it, the
/// tables report.json names stay (and hold the run's rows).
#[test]
fn tables_are_dropped_at_the_end_unless_kept() {
    let url = scratch_db("run_keep");
    for keep in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().display().to_string();
        let mut args = vec![
            "run", "--db", "postgres", "--url", &url, "--txns", "50", "--out", &out,
        ];
        if keep {
            args.push("--keep-tables");
        }
        let o = harness(&args);
        assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
        let report = read_report(&run_dir(dir.path()));
        let named: Vec<String> = report["run"]["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        assert_eq!(named.len(), 1);
        let left = pg_tables(&url, "isoharness_");
        if keep {
            assert_eq!(left, named);
            assert_eq!(report["run"]["tables_kept"], true);
            assert!(stdout(&o).contains(&format!("tables kept: {}", named[0])));
        } else {
            assert!(left.is_empty(), "{left:?}");
            assert!(report["run"].get("tables_kept").is_none());
        }
    }
}
