//! `harness run` end to end on MariaDB/MySQL (`ISOHARNESS_MYSQL_URL`, else
//! mysql://root@127.0.0.1:3306/test), with the mysql adapter and with the
//! tidb adapter (whose TiDB-only statements are skipped there). Fails when
//! the server is down: CI starts it.

mod common;

use common::*;
use history::Status;

/// Runs the mini workload with `db` on a scratch database with four keys
/// and eight clients; returns the exit code, the history and the report.
fn my_contended_run(
    tag: &str,
    db: &str,
    args: &[&str],
) -> (i32, history::History, serde_json::Value) {
    let url = mysql_scratch_db(tag);
    let mut all = vec!["--keys", "4", "--seed", "11"];
    all.extend_from_slice(args);
    contended_run(db, &url, tag, &all)
}

/// [`my_contended_run`] with the mysql adapter at `--isolation isolation
/// --level level` and `more`; asserts the run says it ran at `isolation`.
fn mysql_at(
    tag: &str,
    isolation: &str,
    level: &str,
    more: &[&str],
) -> (i32, history::History, serde_json::Value) {
    let mut args = vec!["--isolation", isolation, "--level", level];
    args.extend_from_slice(more);
    let (code, h, report) = my_contended_run(tag, "mysql", &args);
    assert_eq!(report["run"]["isolation"], isolation);
    (code, h, report)
}

#[test]
fn repeatable_read_is_not_snapshot_isolation_it_loses_updates() {
    let (code, _, report) = mysql_at("run_my_rr", "repeatable-read", "si", &[]);
    assert_eq!(code, 1, "lost updates expected: {}", report["check"]);
    assert_eq!(report["verdict"], "anomalous");
    let anomalies = report["check"]["anomalies"].as_array().unwrap();
    assert!(
        anomalies.iter().any(|a| a["common"] == "lost-update"),
        "a lost-update counterexample: {}",
        report["check"]["anomaly_counts"]
    );
    let lost = anomalies
        .iter()
        .find(|a| a["common"] == "lost-update")
        .unwrap();
    assert!(lost["txns"].as_array().unwrap().len() >= 2, "{lost}");
    assert!(report["run"]["warnings"].is_null(), "{}", report["run"]);
}

#[test]
fn serializable_passes_ser() {
    let (code, h, report) = mysql_at("run_my_ser", "serializable", "ser", &[]);
    assert_eq!(
        code, 0,
        "MariaDB's serializable is ser: {}",
        report["check"]
    );
    // Serializable InnoDB locks its reads: contention shows as deadlocks,
    // reported per transaction type with their codes.
    let deadlocks = h
        .txns
        .iter()
        .filter(|t| t.status == Status::Fail)
        .filter(|t| t.error.as_deref().is_some_and(|e| e.starts_with("1213: ")))
        .count();
    assert!(deadlocks > 0, "deadlocks expected");
    assert_eq!(report["abort_rate"]["top_errors"][0]["code"], "1213");
    let by_kind = report["abort_rate"]["by_kind"].as_object().unwrap();
    assert!(by_kind.len() > 1, "{by_kind:?}");
    let with_errors = by_kind
        .values()
        .filter(|k| k["failed"].as_u64().unwrap() > 0)
        .collect::<Vec<_>>();
    assert!(!with_errors.is_empty());
    for k in with_errors {
        assert_eq!(k["top_errors"][0]["code"], "1213", "{k}");
    }
}

#[test]
fn locking_reads_make_repeatable_read_keep_its_updates() {
    let for_update = ["--read-lock", "for-update"];
    let (code, _, report) = mysql_at("run_my_rr_for_update", "repeatable-read", "si", &for_update);
    assert_eq!(code, 0, "{}", report["check"]);
}

#[test]
fn the_tidb_adapter_runs_end_to_end_on_mariadb() {
    let (code, h, report) = my_contended_run(
        "run_tidb_on_mariadb",
        "tidb",
        &[
            "--level",
            "si",
            "--read-lock",
            "for-update",
            "--session-var",
            "innodb_lock_wait_timeout=7",
        ],
    );
    assert_eq!(code, 0, "{}", report["check"]);
    // The SI levels run TiDB's optimistic mode, and the run says so.
    assert_eq!(report["run"]["isolation"], "optimistic");
    let header = h.header.as_ref().expect("a header");
    assert_eq!(header.isolation.as_deref(), Some("optimistic"));
    // What the server is and the session settings are in the header.
    assert!(
        header
            .server
            .as_deref()
            .is_some_and(|v| v.contains("MariaDB")),
        "{:?}",
        header.server
    );
    assert_eq!(header.settings, ["innodb_lock_wait_timeout=7"]);
    assert_eq!(report["run"]["settings"][0], "innodb_lock_wait_timeout=7");
    assert!(report["run"]["server"]
        .as_str()
        .is_some_and(|v| v.contains("MariaDB")));
    let skipped = the_warning(&report, "is not TiDB");
    assert!(skipped.contains("tidb_disable_txn_auto_retry"), "{skipped}");
    assert!(skipped.contains("@@tidb_last_txn_info"), "{skipped}");
    assert!(h.txns.iter().all(|t| t.dbts.is_none()));
}

/// Two runs at once against one MariaDB database each own their tables
/// and both pass at serializable; neither leaves a table behind.
#[test]
fn two_runs_at_once_on_one_database_both_pass() {
    let url = mysql_scratch_db("run_two");
    two_serializable_runs_at_once_pass("mysql", &url);
    let left = mysql_tables(&url, "");
    assert!(left.is_empty(), "{left:?}");
}
