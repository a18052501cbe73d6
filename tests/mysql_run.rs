//! `harness run` end to end on MariaDB/MySQL (`ISOHARNESS_MYSQL_URL`, else
//! mysql://root@127.0.0.1:3306/test), with the mysql adapter and with the
//! tidb adapter (whose TiDB-only statements are skipped there). Fails when
//! the server is down: CI starts it.

mod common;

use common::*;
use history::Status;
use mysql_async::prelude::Queryable;

/// Creates (or recreates) the database `ih_test_<tag>` on the server and
/// returns its URL; panics (the test fails) when the server is down.
fn mysql_scratch_db(tag: &str) -> String {
    let admin = std::env::var("ISOHARNESS_MYSQL_URL")
        .unwrap_or_else(|_| adapters::mysql::DEFAULT_URL.into());
    let opts = mysql_async::Opts::from_url(&admin).expect("ISOHARNESS_MYSQL_URL must parse");
    let name = format!("ih_test_{tag}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = mysql_async::Conn::new(opts.clone())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "MySQL/MariaDB is not reachable ({e}); start it (.ci/services) or set \
                     ISOHARNESS_MYSQL_URL"
                )
            });
        c.query_drop(format!("DROP DATABASE IF EXISTS {name}"))
            .await
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let _ = c.disconnect().await;
    });
    let auth = match opts.pass() {
        Some(p) => format!("{}:{p}", opts.user().unwrap_or("root")),
        None => opts.user().unwrap_or("root").to_string(),
    };
    format!(
        "mysql://{auth}@{}:{}/{name}",
        opts.ip_or_hostname(),
        opts.tcp_port()
    )
}

/// Runs the mini workload with few keys and several clients on a scratch
/// database; returns the exit code, the history and the report.
fn contended_run(tag: &str, db: &str, args: &[&str]) -> (i32, history::History, serde_json::Value) {
    let url = mysql_scratch_db(tag);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut all = vec![
        "run",
        "--db",
        db,
        "--url",
        &url,
        "--workload",
        "mini",
        "--keys",
        "4",
        "--clients",
        "8",
        "--txns",
        "400",
        "--seed",
        "11",
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
    assert_eq!(report["run"]["db"], db);
    (code, h, report)
}

#[test]
fn repeatable_read_is_not_snapshot_isolation_it_loses_updates() {
    let (code, _, report) = contended_run(
        "run_my_rr",
        "mysql",
        &["--isolation", "repeatable-read", "--level", "si"],
    );
    assert_eq!(report["run"]["isolation"], "repeatable-read");
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
    let (code, h, report) = contended_run(
        "run_my_ser",
        "mysql",
        &["--isolation", "serializable", "--level", "ser"],
    );
    assert_eq!(report["run"]["isolation"], "serializable");
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
    let (code, _, report) = contended_run(
        "run_my_rr_for_update",
        "mysql",
        &[
            "--isolation",
            "repeatable-read",
            "--read-lock",
            "for-update",
            "--level",
            "si",
        ],
    );
    assert_eq!(code, 0, "{}", report["check"]);
}

#[test]
fn the_tidb_adapter_runs_end_to_end_on_mariadb() {
    let (code, h, report) = contended_run(
        "run_tidb_on_mariadb",
        "tidb",
        &["--level", "si", "--read-lock", "for-update"],
    );
    assert_eq!(code, 0, "{}", report["check"]);
    assert_eq!(report["run"]["isolation"], "repeatable-read");
    let warnings = report["run"]["warnings"].as_array().expect("warnings");
    let skipped: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("is not TiDB"))
        .collect();
    assert_eq!(skipped.len(), 1, "reported once: {warnings:?}");
    assert!(
        skipped[0].contains("tidb_disable_txn_auto_retry"),
        "{skipped:?}"
    );
    assert!(skipped[0].contains("@@tidb_last_txn_info"), "{skipped:?}");
    assert!(h.txns.iter().all(|t| t.dbts.is_none()));
}

/// Two runs at once against one MariaDB database each own their tables
/// and both pass at serializable; neither leaves a table behind.
#[test]
fn two_runs_at_once_on_one_database_both_pass() {
    let url = mysql_scratch_db("run_two");
    let runs = two_runs_at_once(
        "mysql",
        &url,
        &["--isolation", "serializable", "--level", "ser"],
    );
    assert_both_pass(&runs);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let left: Vec<String> = rt.block_on(async {
        let mut c = mysql_async::Conn::new(mysql_async::Opts::from_url(&url).unwrap())
            .await
            .unwrap();
        c.query("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
            .await
            .unwrap()
    });
    assert!(left.is_empty(), "{left:?}");
}
