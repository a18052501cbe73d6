//! The PostgreSQL adapter against a real server (`ISOHARNESS_PG_URL`, else
//! postgres://postgres@127.0.0.1:5432/postgres). These tests fail, not
//! skip, when the server is down.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters::{Database, DbKind, ErrorClass, OpenOptions};
use common::*;
use history::{Level, Op, Status};
use tokio_postgres::Client;
use workloads::{Schema, Step};

fn open(url: &str) -> Arc<dyn Database> {
    adapters::open(
        DbKind::Postgres,
        &OpenOptions::new(vec![url.to_string()], std::env::temp_dir()),
    )
    .unwrap()
}

/// A database with the registers table, the adapter on it, and a plain
/// client for setting up conflicts.
async fn fixture(tag: &str) -> (Arc<dyn Database>, Client, String) {
    let url = scratch_db(tag).await;
    let db = open(&url);
    db.setup(&Schema::Registers).await.unwrap();
    let c = client(&url).await;
    (db, c, url)
}

/// True once some backend of this database waits for a lock.
async fn someone_waits(monitor: &Client) -> bool {
    let row = monitor
        .query_one(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE wait_event_type = 'Lock' AND datname = current_database()",
            &[],
        )
        .await
        .unwrap();
    row.get::<_, i64>(0) > 0
}

#[tokio::test]
async fn registers_and_lists_behave() {
    let url = scratch_db("semantics").await;
    let db = open(&url);
    for level in [Level::Rc, Level::Si, Level::Ser] {
        let iso = db.isolation(level, None).unwrap();
        register_semantics(Arc::clone(&db), iso.clone()).await;
        list_semantics(Arc::clone(&db), iso).await;
    }
}

#[tokio::test]
async fn a_concurrent_update_fails_a_repeatable_read_txn_with_40001() {
    let (db, ext, url) = fixture("ser_failure").await;
    let monitor = client(&url).await;
    ext.batch_execute("INSERT INTO isoharness_registers VALUES (7, 1, false)")
        .await
        .unwrap();
    ext.batch_execute("BEGIN; UPDATE isoharness_registers SET v = 2 WHERE k = 7")
        .await
        .unwrap();
    let iso = db.isolation(Level::Si, None).unwrap();
    assert_eq!(iso.name, "repeatable-read");
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        let o = s
            .run(&plan(vec![Step::Read(k(7)), Step::Write(k(7), 3)]), &iso)
            .await;
        (o, s, iso)
    });
    wait_until("the write to block", || someone_waits(&monitor)).await;
    ext.batch_execute("COMMIT").await.unwrap();
    let (o, mut s, iso) = run.await.unwrap();
    let o = o.unwrap();
    assert_eq!(o.status, Status::Fail);
    assert_eq!(
        o.ops,
        vec![
            r(7, Some(1)),
            Op::Write {
                key: k(7),
                value: 3
            }
        ]
    );
    let e = o.error.clone().unwrap();
    assert_eq!(e.class, ErrorClass::Serialization);
    assert!(
        o.error_text()
            .unwrap()
            .starts_with("40001: could not serialize access"),
        "{e:?}"
    );
    assert!(
        !o.broken,
        "a serialization failure leaves the connection usable"
    );
    // The same connection goes on.
    let ops = commit(&mut s, &iso, vec![Step::Read(k(7))]).await;
    assert_eq!(ops, vec![r(7, Some(2))]);
}

#[tokio::test]
async fn a_concurrent_insert_fails_with_a_unique_violation_at_read_committed() {
    let (db, ext, url) = fixture("unique").await;
    let monitor = client(&url).await;
    ext.batch_execute("BEGIN; INSERT INTO isoharness_registers VALUES (5, 99, false)")
        .await
        .unwrap();
    let iso = db.isolation(Level::Rc, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        let o = s.run(&plan(vec![Step::Insert(k(5), 100)]), &iso).await;
        (o, s, iso)
    });
    wait_until("the insert to block", || someone_waits(&monitor)).await;
    ext.batch_execute("COMMIT").await.unwrap();
    let (o, mut s, iso) = run.await.unwrap();
    let o = o.unwrap();
    assert_eq!(o.status, Status::Fail);
    assert_eq!(
        o.ops,
        vec![
            r(5, None),
            Op::Insert {
                key: k(5),
                value: 100
            }
        ]
    );
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::UniqueViolation);
    assert!(
        o.error_text().unwrap().starts_with("23505: "),
        "{:?}",
        o.error
    );
    assert!(!o.broken);
    assert_eq!(
        commit(&mut s, &iso, vec![Step::Read(k(5))]).await,
        vec![r(5, Some(99))]
    );
}

#[tokio::test]
async fn a_deadlock_fails_one_side_with_40p01() {
    let (db, ext, url) = fixture("deadlock").await;
    let monitor = client(&url).await;
    ext.batch_execute("INSERT INTO isoharness_registers VALUES (1, 1, false), (2, 2, false)")
        .await
        .unwrap();
    // Let the adapter's backend detect the deadlock (when allowed to set it).
    let _ = ext.batch_execute("SET deadlock_timeout = '10s'").await;
    ext.batch_execute("BEGIN; UPDATE isoharness_registers SET v = 10 WHERE k = 1")
        .await
        .unwrap();
    let iso = db.isolation(Level::Rc, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        s.run(
            &plan(vec![Step::Write(k(2), 20), Step::Write(k(1), 21)]),
            &iso,
        )
        .await
    });
    wait_until("the session to wait for k=1", || someone_waits(&monitor)).await;
    let ext_result = ext
        .batch_execute("UPDATE isoharness_registers SET v = 11 WHERE k = 2")
        .await;
    let ext_deadlocked = match &ext_result {
        Ok(()) => false,
        Err(e) => e.code().map(|c| c.code()) == Some("40P01"),
    };
    let _ = ext
        .batch_execute(if ext_deadlocked { "ROLLBACK" } else { "COMMIT" })
        .await;
    let o = run.await.unwrap().unwrap();
    if ext_deadlocked {
        assert_eq!(o.status, Status::Ok);
    } else {
        assert_eq!(o.status, Status::Fail, "{:?}", o.error);
        assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::Deadlock);
        assert!(o
            .error_text()
            .unwrap()
            .starts_with("40P01: deadlock detected"));
        assert!(!o.broken);
    }
}

#[tokio::test]
async fn a_connection_killed_before_commit_fails_and_reconnecting_works() {
    let (db, ext, url) = fixture("killed").await;
    let monitor = client(&url).await;
    ext.batch_execute("BEGIN; INSERT INTO isoharness_registers VALUES (8, 1, false)")
        .await
        .unwrap();
    let iso = db.isolation(Level::Ser, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let iso2 = iso.clone();
    let run = tokio::spawn(async move {
        s.run(
            &plan(vec![Step::Write(k(9), 5), Step::Write(k(8), 6)]),
            &iso2,
        )
        .await
    });
    wait_until("the write to block", || someone_waits(&monitor)).await;
    monitor
        .batch_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .await
        .unwrap();
    let o = run.await.unwrap().unwrap();
    assert_eq!(
        o.status,
        Status::Fail,
        "lost before COMMIT means not committed"
    );
    assert!(o.broken);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::ConnectionLost);
    assert!(
        o.error_text().unwrap().starts_with("57P01: "),
        "{:?}",
        o.error
    );
    ext.batch_execute("ROLLBACK").await.unwrap();
    let mut s = db.connect(1).await.unwrap();
    assert_eq!(
        commit(&mut s, &iso, vec![Step::Read(k(9))]).await,
        vec![r(9, None)]
    );
}

#[tokio::test]
async fn a_connection_lost_during_commit_is_info() {
    let (_, ext, _) = fixture("info").await;
    let cfg: tokio_postgres::Config = admin_url().parse().unwrap();
    let host = match cfg.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let proxy = proxy_cutting_commit((host, port)).await;
    let db = open(&url_for("ih_test_info", Some(("127.0.0.1", proxy))));
    let iso = db.isolation(Level::Si, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let o = s
        .run(&plan(vec![Step::Read(k(4)), Step::Write(k(4), 44)]), &iso)
        .await
        .unwrap();
    assert_eq!(o.status, Status::Info, "{:?}", o.error);
    assert!(o.broken);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::ConnectionLost);
    assert_eq!(
        o.ops,
        vec![
            r(4, None),
            Op::Write {
                key: k(4),
                value: 44
            }
        ]
    );
    // The server never saw COMMIT, so the write is not there.
    let row = ext
        .query_opt("SELECT v FROM isoharness_registers WHERE k = 4", &[])
        .await
        .unwrap();
    assert!(row.is_none());
}

#[tokio::test]
async fn a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint() {
    let db = open("postgres://alice:hunter2@127.0.0.1:1/nowhere");
    let t = Instant::now();
    let e = db.setup(&Schema::Registers).await.unwrap_err().to_string();
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "took {:?}",
        t.elapsed()
    );
    assert!(
        e.contains("postgres://alice:***@127.0.0.1:1/nowhere"),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "{e}");
    assert!(e.contains("pg_ctl") && e.contains("docker compose"), "{e}");
    let e = db.connect(0).await.err().unwrap().to_string();
    assert!(e.starts_with("cannot connect to postgres at"), "{e}");
}

#[tokio::test]
async fn sessions_are_spread_over_several_urls() {
    let url = scratch_db("multi").await;
    let bad = "postgres://postgres@127.0.0.1:1/nowhere".to_string();
    let db = adapters::open(
        DbKind::Postgres,
        &OpenOptions::new(vec![url, bad], std::env::temp_dir()),
    )
    .unwrap();
    assert!(db.connect(0).await.is_ok());
    assert!(db.connect(1).await.is_err());
    assert!(db.connect(2).await.is_ok());
}

/// The tables a run of suffix `suffix` has in the database.
async fn run_tables(c: &Client, suffix: &str) -> Vec<String> {
    let rows = c
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
             AND tablename LIKE '%' || $1 ORDER BY 1",
            &[&suffix],
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// A run owns its tables: while it runs, a second adapter with the same
/// table names is refused (the advisory lock); its tables kept with
/// `keep_tables` refuse the next one too (they exist); dropped, they are
/// free again. A refused setup touches nothing of the owner's.
#[tokio::test]
async fn a_runs_tables_are_guarded_and_dropped_at_teardown() {
    let url = scratch_db("guard").await;
    let c = client(&url).await;
    let mut opts = OpenOptions::new(vec![url.clone()], std::env::temp_dir());
    opts.tables = adapters::TableNames::with_suffix("guard_1").unwrap();
    let first = adapters::open(DbKind::Postgres, &opts).unwrap();
    let second = adapters::open(DbKind::Postgres, &opts).unwrap();
    first.setup(&Schema::Registers).await.unwrap();
    assert_eq!(
        run_tables(&c, "_guard_1").await,
        ["isoharness_registers_guard_1"]
    );
    c.batch_execute("INSERT INTO isoharness_registers_guard_1 VALUES (1, 1, false)")
        .await
        .unwrap();
    let e = second
        .setup(&Schema::Registers)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("belong to another run that is still running") && !e.contains('\n'),
        "{e}"
    );
    // The refused run drops nothing.
    second.teardown(false).await.unwrap();
    let n: i64 = c
        .query_one("SELECT count(*) FROM isoharness_registers_guard_1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1, "the owner's rows are untouched");
    // Kept: the lock is gone but the tables stay, and are refused.
    first.teardown(true).await.unwrap();
    assert_eq!(run_tables(&c, "_guard_1").await.len(), 1);
    let third = adapters::open(DbKind::Postgres, &opts).unwrap();
    let e = third
        .setup(&Schema::Registers)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("table isoharness_registers_guard_1 already exists"),
        "{e}"
    );
    c.batch_execute("DROP TABLE isoharness_registers_guard_1")
        .await
        .unwrap();
    // Free again; dropped at teardown.
    third.setup(&Schema::Tpcc).await.unwrap();
    assert_eq!(run_tables(&c, "_guard_1").await.len(), 8);
    third.teardown(false).await.unwrap();
    assert!(run_tables(&c, "_guard_1").await.is_empty());
}

#[tokio::test]
async fn connection_errors_get_the_hint_that_fits_them() {
    // A database that does not exist (3D000).
    let e = open("postgres://postgres@127.0.0.1:5432/ih_no_such_database")
        .connect(0)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ih_no_such_database"), "{e}");
    assert!(e.contains("has no database of that name"), "{e}");
    assert!(!e.contains("is the server running"), "{e}");
    // A user the server refuses (28000: with trust auth on 127.0.0.1 a
    // wrong password is accepted, but an unknown role is not).
    let e = open("postgres://ih_no_such_role:s3cr3t@127.0.0.1:5432/postgres")
        .connect(0)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("refused the user name or password"), "{e}");
    assert!(
        !e.contains("is the server running") && !e.contains("s3cr3t"),
        "{e}"
    );
    // Nothing listens on port 1.
    let e = open("postgres://postgres@127.0.0.1:1/postgres")
        .connect(0)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("is the server running"), "{e}");
    assert!(
        !e.contains("refused the user") && !e.contains("no database"),
        "{e}"
    );
}
