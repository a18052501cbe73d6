//! `harness run` end to end on PostgreSQL (`ISOHARNESS_PG_URL`, else
//! postgres://postgres@127.0.0.1:5432/postgres). Fails when the server is
//! down: CI starts it.

mod common;

use common::*;
use history::Status;

/// Runs the mini workload on a scratch database with three keys and
/// eight clients; returns the exit code, the history and the report.
fn pg_contended_run(tag: &str, args: &[&str]) -> (i32, history::History, serde_json::Value) {
    let url = scratch_db(tag);
    let mut all = vec!["--keys", "3"];
    all.extend_from_slice(args);
    contended_run("postgres", &url, tag, &all)
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
    let (code, h, report) = pg_contended_run("run_rc", &["--level", "rc"]);
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

/// A contended run at `--level level`, where PostgreSQL runs at `iso`:
/// transactions fail with 40001, and the history passes, as `claim` says.
fn passes_failing_to_serialize(
    tag: &str,
    level: &str,
    iso: &str,
    claim: &str,
) -> serde_json::Value {
    let (code, h, report) = pg_contended_run(tag, &["--level", level]);
    assert_eq!(report["run"]["isolation"], iso);
    assert!(
        fails_with(&h, "40001") > 0,
        "serialization failures expected"
    );
    assert_eq!(code, 0, "{claim}: {}", report["check"]);
    report
}

#[test]
fn repeatable_read() {
    let claim = "PostgreSQL's repeatable read is SI";
    let report = passes_failing_to_serialize("run_rr", "si", "repeatable-read", claim);
    assert!(report["abort_rate"]["overall"].as_f64().unwrap() > 0.0);
    let top = &report["abort_rate"]["top_errors"][0]["code"];
    assert_eq!(top, "40001");
}

#[test]
fn serializable() {
    let claim = "PostgreSQL's serializable is strictly serializable";
    passes_failing_to_serialize("run_ser", "sser", "serializable", claim);
}

#[test]
fn read_committed_is_not_snapshot_isolation() {
    let (code, _, report) = pg_contended_run(
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
    let args = [
        "--keys",
        "10",
        "--clients",
        "4",
        "--duration",
        "4s",
        "--level",
        "si",
    ];
    let (child, dir) = spawn_run("postgres", &url, "mini", &args);
    let (rt, c) = pg(&url);
    let killed: i64 = rt.block_on(async {
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
    let h = complete_history(&o, dir.path());
    assert!(
        workload_txns(&h).any(|t| t.session >= 4),
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
        workload_txns(&h).any(|t| t.status == Status::Ok),
        "clients went on committing after reconnecting"
    );
}

/// Two runs at once against one database used to drop and share one
/// table and report thin-air reads, G1a and lost updates; each now owns
/// its tables, and both pass at serializable.
#[test]
fn two_runs_at_once_on_one_database_both_pass() {
    let url = scratch_db("run_two");
    two_serializable_runs_at_once_pass("postgres", &url);
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

/// At read committed, one key and eight clients lose updates within a
/// few hundred transactions: `--stop-on-anomaly` ends the run at the
/// first one the check made while recording finds, long before its
/// duration, and the full check of what was recorded shows it.
#[test]
fn a_read_committed_run_stops_at_its_first_lost_update() {
    let url = scratch_db("run_rc_stop");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut args = vec!["run"];
    args.extend(target("postgres", &url, "mini"));
    args.extend([
        "--isolation",
        "read-committed",
        "--level",
        "si",
        "--keys",
        "1",
    ]);
    args.extend(["--clients", "8", "--duration", "5min", "--stop-on-anomaly"]);
    args.extend(["--out", &out]);
    let o = harness(&args);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}{}", stderr(&o));
    assert!(text.contains("stopped by --stop-on-anomaly"), "{text}");
    assert!(text.contains("streamed check: si anomalous"), "{text}");
    assert!(text.contains("lost update"), "{text}");
    let report = read_report(&run_dir(dir.path()));
    assert_eq!(report["run"]["interrupted_by"], "--stop-on-anomaly");
    let secs = report["throughput"]["elapsed_s"].as_f64().unwrap();
    assert!(secs < 150.0, "ran {secs} s of its 5 minutes");
    let tables = pg_tables(&url, "isoharness_");
    assert!(tables.is_empty(), "tables left behind: {tables:?}");
}
