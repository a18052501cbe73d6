//! TPC-C end to end on MariaDB/MySQL (`ISOHARNESS_MYSQL_URL`, else
//! mysql://root@127.0.0.1:3306/test), through the `harness` binary: with
//! the mysql adapter at serializable, the history passes `ser` and the
//! TPC-C consistency conditions hold at the end; the tidb adapter (its
//! TiDB-only statements skipped on a server that is not TiDB) runs the
//! same statements. Every run has tables of its own (dropped at its end),
//! so the server's default database serves. These tests fail, not skip,
//! when the server is down: CI starts it.

mod common;
mod workload_support;

use mysql_async::prelude::Queryable;
use workload_support::*;

/// The server the tests use.
fn url() -> String {
    std::env::var("ISOHARNESS_MYSQL_URL").unwrap_or_else(|_| adapters::mysql::DEFAULT_URL.into())
}

/// `harness run --workload tpcc` on the server with `db` and `args`, 300
/// transactions by 6 clients; fails on exit code 2 (e.g. server down).
fn tpcc_run(db: &str, args: &[&str]) -> Run {
    let url = url();
    let mut all = vec![
        "--db",
        db,
        "--url",
        &url,
        "--workload",
        "tpcc",
        "--clients",
        "6",
        "--txns",
        "300",
        "--seed",
        "21",
    ];
    all.extend_from_slice(args);
    run(&all, 300)
}

/// How many of the run's own tables are still in the database.
fn tables_left(report: &serde_json::Value) -> i64 {
    let names: Vec<String> = report["run"]["tables"]
        .as_array()
        .expect("the report names the run's tables")
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = mysql_async::Opts::from_url(&url()).unwrap();
        let mut c = mysql_async::Conn::new(opts).await.unwrap();
        let mut left = 0;
        for name in &names {
            let n: Option<i64> = c
                .exec_first(
                    "SELECT COUNT(*) FROM information_schema.tables \
                     WHERE table_schema = DATABASE() AND table_name = ?",
                    (name,),
                )
                .await
                .unwrap();
            left += n.unwrap_or(0);
        }
        let _ = c.disconnect().await;
        left
    })
}

#[test]
fn tpcc_on_mysql_at_serializable_passes_and_keeps_its_conditions() {
    let r = tpcc_run("mysql", &["--level", "ser"]);
    let what = "mysql serializable tpcc";
    assert_eq!(r.report["run"]["db"], "mysql", "{what}");
    assert_eq!(r.report["run"]["isolation"], "serializable", "{what}");
    assert_eq!(r.report["verdict"], "ok", "{what}: {}", r.stdout);
    assert_eq!(r.code, 0, "{what}: {}", r.stdout);
    let c = assert_workload_ops("tpcc", &r, what);
    // The load and transactions of every kind committed.
    let committed = r.report["counts"]["committed"].as_u64().unwrap();
    assert!(committed >= 30, "{what}: {committed} committed");
    assert_at_least(
        &c,
        &[
            "txn:load",
            "txn:new-order",
            "txn:payment",
            "txn:order-status",
            "txn:delivery",
            "txn:stock-level",
        ],
        1,
        what,
    );
    // InnoDB's serializable is serializable: conditions 1-4 hold.
    let ec = &r.report["end_check"];
    assert_eq!(ec["ok"], true, "{what}: {ec}");
    assert!(
        r.stdout
            .contains("tpcc-consistency: 4 of 4 conditions hold"),
        "{}",
        r.stdout
    );
    assert_eq!(
        tables_left(&r.report),
        0,
        "{what}: the run drops its tables"
    );
}

/// The tidb adapter on MariaDB: its repeatable read is InnoDB's, which
/// loses updates (so neither the verdict nor the conditions are asserted),
/// but the TPC-C statements run, transactions commit and the end check
/// reads its totals.
#[test]
fn tpcc_through_the_tidb_adapter_runs_on_mariadb() {
    let r = tpcc_run("tidb", &["--level", "si"]);
    let what = "tidb adapter tpcc on mariadb";
    assert_eq!(r.report["run"]["db"], "tidb", "{what}");
    let warnings = r.report["run"]["warnings"].as_array().expect("warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("is not TiDB"))),
        "{what}: {warnings:?}"
    );
    let c = op_counts(&r.history);
    assert_at_least(&c, &["txn:load"], 1, what);
    assert_at_least(
        &c,
        &["txn:new-order", "txn:payment", "r", "w", "i"],
        5,
        what,
    );
    let ec = &r.report["end_check"];
    assert_eq!(ec["check"], "tpcc-consistency", "{what}: {}", r.report);
    assert_eq!(ec["conditions"].as_array().unwrap().len(), 4, "{what}");
    assert_eq!(
        tables_left(&r.report),
        0,
        "{what}: the run drops its tables"
    );
}
