//! The MySQL and TiDB adapters against a real MariaDB/MySQL server
//! (`ISOHARNESS_MYSQL_URL`, else mysql://root@127.0.0.1:3306/test). The
//! TiDB adapter runs on it with its TiDB-only statements skipped. These
//! tests fail, not skip, when the server is down.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters::{Database, DbKind, ErrorClass, OpenOptions, ReadLock};
use common::{commit, k, list_semantics, plan, proxy_cutting_commit, r, register_semantics};
use history::{Level, Op, Status};
use mysql_async::prelude::Queryable;
use workloads::{Schema, Step};

/// The server the tests use.
fn admin_url() -> String {
    std::env::var("ISOHARNESS_MYSQL_URL").unwrap_or_else(|_| adapters::mysql::DEFAULT_URL.into())
}

/// The admin URL's user, password, host and port.
fn server() -> (String, Option<String>, String, u16) {
    let o = mysql_async::Opts::from_url(&admin_url()).expect("ISOHARNESS_MYSQL_URL must parse");
    (
        o.user().unwrap_or("root").to_string(),
        o.pass().map(String::from),
        o.ip_or_hostname().to_string(),
        o.tcp_port(),
    )
}

/// A URL for database `db` on the admin URL's server, or at `at` instead.
fn url_for(db: &str, at: Option<(&str, u16)>) -> String {
    let (user, pass, host, port) = server();
    let auth = match pass {
        Some(p) => format!("{user}:{p}"),
        None => user,
    };
    let (host, port) = at.map_or((host, port), |(h, p)| (h.to_string(), p));
    format!("mysql://{auth}@{host}:{port}/{db}")
}

/// A plain connection; panics (the test fails) when the server is down.
async fn client(url: &str) -> mysql_async::Conn {
    mysql_async::Conn::new(mysql_async::Opts::from_url(url).unwrap())
        .await
        .unwrap_or_else(|e| {
            panic!(
                "MySQL/MariaDB is not reachable at {} ({e}); start it (.ci/services) or set \
                 ISOHARNESS_MYSQL_URL",
                adapters::redact_url(url)
            )
        })
}

/// Creates (or recreates) the database `ih_test_<tag>`; returns its URL.
async fn scratch_db(tag: &str) -> String {
    let mut c = client(&admin_url()).await;
    let name = format!("ih_test_{tag}");
    c.query_drop(format!("DROP DATABASE IF EXISTS {name}"))
        .await
        .unwrap();
    c.query_drop(format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    c.disconnect().await.unwrap();
    url_for(&name, None)
}

fn open_with(kind: DbKind, urls: Vec<String>, lock: ReadLock) -> Arc<dyn Database> {
    let mut o = OpenOptions::new(urls, std::env::temp_dir());
    o.read_lock = lock;
    adapters::open(kind, &o).unwrap()
}

fn open(url: &str) -> Arc<dyn Database> {
    open_with(DbKind::Mysql, vec![url.to_string()], ReadLock::Plain)
}

/// The adapter on a scratch database with the registers table, a plain
/// connection, and the URL.
async fn fixture(tag: &str) -> (Arc<dyn Database>, mysql_async::Conn, String) {
    let url = scratch_db(tag).await;
    let db = open(&url);
    db.setup(&Schema::Registers).await.unwrap();
    let c = client(&url).await;
    (db, c, url)
}

/// The connections to `url`'s database that have been running an INSERT
/// for more than 200 ms: they wait for a row lock. (MariaDB's `TIME_MS`;
/// `information_schema.innodb_trx` is a cache that polling keeps stale.)
async fn blocked(c: &mut mysql_async::Conn) -> Vec<u64> {
    c.query(
        "SELECT id FROM information_schema.processlist \
         WHERE db = DATABASE() AND info LIKE 'INSERT INTO isoharness_registers%' \
         AND time_ms > 200",
    )
    .await
    .unwrap()
}

/// Waits (up to 10 s) until some connection to `url`'s database waits
/// for a row lock; returns their ids.
async fn wait_for_lock_wait(url: &str, what: &str) -> Vec<u64> {
    let mut c = client(url).await;
    let t = Instant::now();
    loop {
        let ids = blocked(&mut c).await;
        if !ids.is_empty() {
            let _ = c.disconnect().await;
            return ids;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let procs: Vec<(u64, Option<String>, Option<String>)> = c
                .query("SELECT id, db, info FROM information_schema.processlist")
                .await
                .unwrap();
            panic!("timed out waiting for {what}: processes {procs:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn registers_and_lists_behave() {
    let url = scratch_db("my_semantics").await;
    for lock in [ReadLock::Plain, ReadLock::ForUpdate, ReadLock::Share] {
        let db = open_with(DbKind::Mysql, vec![url.clone()], lock);
        for level in [Level::Rc, Level::Si, Level::Ser] {
            let iso = db.isolation(level, None).unwrap();
            register_semantics(Arc::clone(&db), iso.clone()).await;
            list_semantics(Arc::clone(&db), iso).await;
        }
        assert!(db.warnings().is_empty(), "{:?}", db.warnings());
    }
}

#[tokio::test]
async fn the_tidb_adapter_runs_on_mariadb_and_says_what_it_skipped() {
    let url = scratch_db("tidb_semantics").await;
    let db = open_with(DbKind::Tidb, vec![url.clone()], ReadLock::Plain);
    for level in [Level::Rc, Level::Si] {
        let iso = db.isolation(level, None).unwrap();
        register_semantics(Arc::clone(&db), iso.clone()).await;
        list_semantics(Arc::clone(&db), iso).await;
    }
    db.setup(&Schema::Registers).await.unwrap();
    let mut s = db.connect(5).await.unwrap();
    let iso = db.isolation(Level::Si, None).unwrap();
    let o = s
        .run(&plan(vec![Step::Read(k(1)), Step::Write(k(1), 9)]), &iso)
        .await
        .unwrap();
    assert_eq!(o.status, Status::Ok, "{:?}", o.error);
    assert_eq!(o.dbts, None, "MariaDB reports no TiDB timestamps");
    let w = db.warnings();
    assert_eq!(w.len(), 1, "said once however many sessions: {w:?}");
    assert!(w[0].contains("is not TiDB"), "{w:?}");
    assert!(w[0].contains("tidb_disable_txn_auto_retry"), "{w:?}");
    assert!(w[0].contains("@@tidb_last_txn_info"), "{w:?}");
    assert!(w[0].contains(&adapters::redact_url(&url)), "{w:?}");
    // TiDB has no serializable.
    assert!(db.isolation(Level::Ser, None).is_err());
}

#[tokio::test]
async fn a_deadlock_fails_one_side_with_1213() {
    let (db, mut ext, url) = fixture("my_deadlock").await;
    ext.query_drop("INSERT INTO isoharness_registers VALUES (1, 1, false), (2, 2, false)")
        .await
        .unwrap();
    ext.query_drop("START TRANSACTION").await.unwrap();
    ext.query_drop("UPDATE isoharness_registers SET v = 10 WHERE k = 1")
        .await
        .unwrap();
    let iso = db.isolation(Level::Rc, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        let o = s
            .run(
                &plan(vec![Step::Write(k(2), 20), Step::Write(k(1), 21)]),
                &iso,
            )
            .await;
        (o, s, iso)
    });
    wait_for_lock_wait(&url, "the session to wait for k=1").await;
    let ext_result = ext
        .query_drop("UPDATE isoharness_registers SET v = 11 WHERE k = 2")
        .await;
    let ext_deadlocked = match &ext_result {
        Ok(()) => false,
        Err(mysql_async::Error::Server(e)) => e.code == 1213,
        Err(e) => panic!("{e}"),
    };
    let _ = ext
        .query_drop(if ext_deadlocked { "ROLLBACK" } else { "COMMIT" })
        .await;
    let (o, mut s, iso) = run.await.unwrap();
    let o = o.unwrap();
    if ext_deadlocked {
        assert_eq!(o.status, Status::Ok);
    } else {
        assert_eq!(o.status, Status::Fail, "{:?}", o.error);
        assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::Deadlock);
        assert!(
            o.error_text().unwrap().starts_with("1213: Deadlock found"),
            "{:?}",
            o.error
        );
        assert!(!o.broken, "a deadlock leaves the connection usable");
        // The same connection goes on.
        assert_eq!(
            commit(&mut s, &iso, vec![Step::Read(k(1))]).await,
            vec![r(1, Some(10))]
        );
    }
}

#[tokio::test]
async fn a_concurrent_insert_fails_with_duplicate_key_1062() {
    let (db, mut ext, url) = fixture("my_unique").await;
    ext.query_drop("START TRANSACTION").await.unwrap();
    ext.query_drop("INSERT INTO isoharness_registers VALUES (5, 99, false)")
        .await
        .unwrap();
    let iso = db.isolation(Level::Rc, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        let o = s.run(&plan(vec![Step::Insert(k(5), 100)]), &iso).await;
        (o, s, iso)
    });
    wait_for_lock_wait(&url, "the insert to block").await;
    ext.query_drop("COMMIT").await.unwrap();
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
        o.error_text().unwrap().starts_with("1062: "),
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
async fn a_connection_lost_during_commit_is_info() {
    let (_, mut ext, _) = fixture("my_info").await;
    let (_, _, host, port) = server();
    let proxy = proxy_cutting_commit((host, port)).await;
    let db = open(&url_for("ih_test_my_info", Some(("127.0.0.1", proxy))));
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
    let row: Option<i64> = ext
        .query_first("SELECT v FROM isoharness_registers WHERE k = 4")
        .await
        .unwrap();
    assert!(row.is_none());
}

#[tokio::test]
async fn a_connection_killed_before_commit_fails_and_reconnecting_works() {
    let (db, mut ext, url) = fixture("my_killed").await;
    ext.query_drop("START TRANSACTION").await.unwrap();
    ext.query_drop("INSERT INTO isoharness_registers VALUES (8, 1, false)")
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
    let ids = wait_for_lock_wait(&url, "the write to block").await;
    let mut killer = client(&url).await;
    for id in ids {
        killer.exec_drop("KILL CONNECTION ?", (id,)).await.unwrap();
    }
    let o = run.await.unwrap().unwrap();
    assert_eq!(
        o.status,
        Status::Fail,
        "lost before COMMIT means not committed"
    );
    assert!(o.broken, "{:?}", o.error);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::ConnectionLost);
    ext.query_drop("ROLLBACK").await.unwrap();
    let mut s = db.connect(1).await.unwrap();
    assert_eq!(
        commit(&mut s, &iso, vec![Step::Read(k(9))]).await,
        vec![r(9, None)]
    );
}

#[tokio::test]
async fn a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint() {
    for (kind, profile) in [(DbKind::Mysql, "mysql"), (DbKind::Tidb, "tidb")] {
        let db = open_with(
            kind,
            vec!["mysql://alice:hunter2@127.0.0.1:1/nowhere".into()],
            ReadLock::Plain,
        );
        let t = Instant::now();
        let e = db.setup(&Schema::Registers).await.unwrap_err().to_string();
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "took {:?}",
            t.elapsed()
        );
        assert!(e.contains("mysql://alice:***@127.0.0.1:1/nowhere"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        assert!(
            e.contains(&format!("docker compose --profile {profile} up -d")),
            "{e}"
        );
        let e = db.connect(0).await.err().unwrap().to_string();
        assert!(
            e.starts_with(&format!("cannot connect to {} at", kind.name())),
            "{e}"
        );
    }
}

#[tokio::test]
async fn sessions_are_spread_over_several_urls() {
    let url = scratch_db("my_multi").await;
    let bad = "mysql://root@127.0.0.1:1/nowhere".to_string();
    for kind in [DbKind::Mysql, DbKind::Tidb] {
        let db = open_with(kind, vec![url.clone(), bad.clone()], ReadLock::Plain);
        assert!(db.connect(0).await.is_ok());
        assert!(db.connect(1).await.is_err());
        assert!(db.connect(2).await.is_ok());
    }
}

/// The tables of this database whose names end in `suffix`.
async fn run_tables(c: &mut mysql_async::Conn, suffix: &str) -> Vec<String> {
    c.exec(
        "SELECT table_name FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name LIKE CONCAT('%', ?) ORDER BY 1",
        (suffix,),
    )
    .await
    .unwrap()
}

/// A run owns its tables: while it runs, a second adapter with the same
/// table names is refused (GET_LOCK); tables kept refuse the next one too;
/// dropped, they are free again. A refused setup touches nothing.
#[tokio::test]
async fn a_runs_tables_are_guarded_and_dropped_at_teardown() {
    let url = scratch_db("guard").await;
    let mut c = client(&url).await;
    let mut opts = OpenOptions::new(vec![url.clone()], std::env::temp_dir());
    opts.tables = adapters::TableNames::with_suffix("guard_1").unwrap();
    let first = adapters::open(DbKind::Mysql, &opts).unwrap();
    let second = adapters::open(DbKind::Mysql, &opts).unwrap();
    first.setup(&Schema::Lists).await.unwrap();
    assert_eq!(
        run_tables(&mut c, "_guard_1").await,
        ["isoharness_lists_guard_1"]
    );
    c.query_drop("INSERT INTO isoharness_lists_guard_1 VALUES (1, '1')")
        .await
        .unwrap();
    let e = second.setup(&Schema::Lists).await.unwrap_err().to_string();
    assert!(
        e.contains("belong to another run that is still running") && !e.contains('\n'),
        "{e}"
    );
    second.teardown(false).await.unwrap();
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM isoharness_lists_guard_1")
        .await
        .unwrap();
    assert_eq!(n, Some(1), "the owner's rows are untouched");
    first.teardown(true).await.unwrap();
    assert_eq!(run_tables(&mut c, "_guard_1").await.len(), 1);
    let third = adapters::open(DbKind::Mysql, &opts).unwrap();
    let e = third.setup(&Schema::Lists).await.unwrap_err().to_string();
    assert!(
        e.contains("table isoharness_lists_guard_1 already exists"),
        "{e}"
    );
    c.query_drop("DROP TABLE isoharness_lists_guard_1")
        .await
        .unwrap();
    third.setup(&Schema::Registers).await.unwrap();
    assert_eq!(run_tables(&mut c, "_guard_1").await.len(), 1);
    third.teardown(false).await.unwrap();
    assert!(run_tables(&mut c, "_guard_1").await.is_empty());
}

#[tokio::test]
async fn connection_errors_get_the_hint_that_fits_them() {
    let connect = |url: &str| {
        let db = open_with(DbKind::Mysql, vec![url.into()], ReadLock::Plain);
        async move { db.connect(0).await.err().unwrap().to_string() }
    };
    // root@127.0.0.1 has an empty password (.ci/services): any other is
    // refused with 1045.
    let e = connect("mysql://root:wr0ng-pw@127.0.0.1:3306/test").await;
    assert!(e.contains("1045") || e.contains("Access denied"), "{e}");
    assert!(e.contains("refused the user name or password"), "{e}");
    assert!(
        !e.contains("is the server running") && !e.contains("wr0ng-pw"),
        "{e}"
    );
    // 1049.
    let e = connect("mysql://root@127.0.0.1:3306/ih_no_such_database").await;
    assert!(e.contains("has no database of that name"), "{e}");
    assert!(!e.contains("is the server running"), "{e}");
    // Nothing listens on port 1.
    let e = connect("mysql://root@127.0.0.1:1/test").await;
    assert!(e.contains("is the server running"), "{e}");
    assert!(
        !e.contains("refused the user") && !e.contains("no database"),
        "{e}"
    );
}
