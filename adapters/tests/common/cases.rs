//! The cases every SQL adapter over a server must pass, written once: each
//! takes the adapter (`DbKind`) and the server it runs on ([`Server`]), and
//! the per-database test files call them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters::{
    AdapterError, Database, DbKind, ErrorClass, Isolation, OpenOptions, Outcome, ReadLock, Session,
};
use history::{Level, Op, Status};
use tokio::task::JoinHandle;
use workloads::{Schema, Step};

use super::server::{Pg, Server};
use super::{commit, k, list_semantics, plan, proxy_cutting_commit, r, register_semantics};

/// The adapter `kind` on `urls`, its reads locking with `lock`.
pub fn open(kind: DbKind, urls: Vec<String>, lock: ReadLock) -> Arc<dyn Database> {
    let mut o = OpenOptions::new(urls, std::env::temp_dir());
    o.read_lock = lock;
    adapters::open(kind, &o).unwrap()
}

/// The adapter `kind` on a scratch database `ih_test_<tag>` with the
/// registers table, a plain client for setting up conflicts, and the URL.
pub async fn fixture<S: Server>(kind: DbKind, tag: &str) -> (Arc<dyn Database>, S::Client, String) {
    let url = S::scratch_db(tag).await;
    let db = open(kind, vec![url.clone()], ReadLock::Plain);
    db.setup(&Schema::Registers).await.unwrap();
    let c = S::client(&url).await;
    (db, c, url)
}

/// Register and list semantics at each of `levels`; returns the names of
/// the isolation settings they ran at.
pub async fn semantics(db: &Arc<dyn Database>, levels: &[Level]) -> Vec<&'static str> {
    let mut names = Vec::new();
    for &level in levels {
        let iso = db.isolation(level, None).unwrap();
        names.push(iso.name);
        register_semantics(Arc::clone(db), iso.clone()).await;
        list_semantics(Arc::clone(db), iso).await;
    }
    names
}

/// A write of `value` to `key`, as recorded.
fn w(key: i64, value: i64) -> Op {
    Op::Write { key: k(key), value }
}

/// An insert of `value` at `key`, as recorded.
fn ins(key: i64, value: i64) -> Op {
    Op::Insert { key: k(key), value }
}

/// Runs each of `sql` on the plain connection, panicking on an error.
async fn exec_all<S: Server>(ext: &mut S::Client, sql: &[&str]) {
    for q in sql {
        S::exec(ext, q).await.unwrap();
    }
}

/// What a session run in the background gives back: its outcome, and the
/// session and isolation for going on.
type Ran = (Result<Outcome, AdapterError>, Box<dyn Session>, Isolation);

/// Runs `steps` on a new session at `level` in the background, and returns
/// once it waits for a lock (`what`): the run, and the waiters' ids.
async fn run_blocked<S: Server>(
    db: &Arc<dyn Database>,
    url: &str,
    level: Level,
    steps: Vec<Step>,
    what: &str,
) -> (JoinHandle<Ran>, Vec<u64>) {
    let iso = db.isolation(level, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        let o = s.run(&plan(steps), &iso).await;
        (o, s, iso)
    });
    let ids = S::wait_for_lock_wait(url, what).await;
    (run, ids)
}

/// The background run's outcome, failed with `class` and an error text that
/// starts with `prefix`, the connection still usable; and the session.
async fn failed(
    run: JoinHandle<Ran>,
    class: ErrorClass,
    prefix: &str,
) -> (Outcome, Box<dyn Session>, Isolation) {
    let (o, s, iso) = run.await.unwrap();
    let o = o.unwrap();
    assert_eq!(o.status, Status::Fail, "{:?}", o.error);
    assert_eq!(o.error.as_ref().unwrap().class, class);
    assert!(o.error_text().unwrap().starts_with(prefix), "{:?}", o.error);
    assert!(
        !o.broken,
        "a {class:?} failure leaves the connection usable"
    );
    (o, s, iso)
}

/// The same connection goes on: a read of `key` commits and sees `value`.
async fn then_reads(mut s: Box<dyn Session>, iso: &Isolation, key: i64, value: Option<i64>) {
    assert_eq!(
        commit(&mut s, iso, vec![Step::Read(k(key))]).await,
        vec![r(key, value)]
    );
}

/// At snapshot isolation (the setting called `si_name`), an update that
/// waits for a concurrent one to commit fails with 40001, records what it
/// did, and leaves the connection usable.
pub async fn a_concurrent_update_fails_with_40001(kind: DbKind, tag: &str, si_name: &str) {
    let (db, mut ext, url) = fixture::<Pg>(kind, tag).await;
    assert_eq!(db.isolation(Level::Si, None).unwrap().name, si_name);
    exec_all::<Pg>(
        &mut ext,
        &[
            "INSERT INTO isoharness_registers VALUES (7, 1, false)",
            "BEGIN; UPDATE isoharness_registers SET v = 2 WHERE k = 7",
        ],
    )
    .await;
    let steps = vec![Step::Read(k(7)), Step::Write(k(7), 3)];
    let (run, _) = run_blocked::<Pg>(&db, &url, Level::Si, steps, "the write to block").await;
    exec_all::<Pg>(&mut ext, &["COMMIT"]).await;
    let (o, s, iso) = failed(
        run,
        ErrorClass::Serialization,
        "40001: could not serialize access",
    )
    .await;
    assert_eq!(o.ops, vec![r(7, Some(1)), w(7, 3)]);
    then_reads(s, &iso, 7, Some(2)).await;
}

/// At read committed, an insert that waits for a concurrent insert of the
/// same key fails with a unique violation and leaves the connection usable.
pub async fn a_concurrent_insert_fails_with_a_unique_violation<S: Server>(kind: DbKind, tag: &str) {
    let (db, mut ext, url) = fixture::<S>(kind, tag).await;
    let insert = "INSERT INTO isoharness_registers VALUES (5, 99, false)";
    exec_all::<S>(&mut ext, &[S::BEGIN, insert]).await;
    let steps = vec![Step::Insert(k(5), 100)];
    let (run, _) = run_blocked::<S>(&db, &url, Level::Rc, steps, "the insert to block").await;
    exec_all::<S>(&mut ext, &["COMMIT"]).await;
    let (o, s, iso) = failed(run, ErrorClass::UniqueViolation, S::UNIQUE).await;
    assert_eq!(o.ops, vec![r(5, None), ins(5, 100)]);
    then_reads(s, &iso, 5, Some(99)).await;
}

/// Two transactions that lock k=1 and k=2 in opposite orders: one side
/// fails with the server's deadlock error; when it is the adapter's, the
/// connection goes on.
pub async fn a_deadlock_fails_one_side<S: Server>(kind: DbKind, tag: &str) {
    let (db, mut ext, url) = fixture::<S>(kind, tag).await;
    let rows = "INSERT INTO isoharness_registers VALUES (1, 1, false), (2, 2, false)";
    exec_all::<S>(&mut ext, &[rows]).await;
    if let Some(sql) = S::BEFORE_DEADLOCK {
        let _ = S::exec(&mut ext, sql).await;
    }
    let lock_1 = "UPDATE isoharness_registers SET v = 10 WHERE k = 1";
    exec_all::<S>(&mut ext, &[S::BEGIN, lock_1]).await;
    let steps = vec![Step::Write(k(2), 20), Step::Write(k(1), 21)];
    let what = "the session to wait for k=1";
    let (run, _) = run_blocked::<S>(&db, &url, Level::Rc, steps, what).await;
    let lock_2 = "UPDATE isoharness_registers SET v = 11 WHERE k = 2";
    let (code, text) = S::DEADLOCK;
    let ext_deadlocked = S::exec(&mut ext, lock_2).await.is_err_and(|c| c == code);
    let end = if ext_deadlocked { "ROLLBACK" } else { "COMMIT" };
    let _ = S::exec(&mut ext, end).await;
    if ext_deadlocked {
        let o = run.await.unwrap().0.unwrap();
        assert_eq!(o.status, Status::Ok);
    } else {
        let (_, s, iso) = failed(run, ErrorClass::Deadlock, text).await;
        then_reads(s, &iso, 1, Some(10)).await;
    }
}

/// A session killed while it waits for a lock, before COMMIT: the
/// transaction failed, the connection is broken, and a new one works.
pub async fn a_connection_killed_before_commit_fails_and_reconnecting_works<S: Server>(
    kind: DbKind,
    tag: &str,
) {
    let (db, mut ext, url) = fixture::<S>(kind, tag).await;
    let insert = "INSERT INTO isoharness_registers VALUES (8, 1, false)";
    exec_all::<S>(&mut ext, &[S::BEGIN, insert]).await;
    let steps = vec![Step::Write(k(9), 5), Step::Write(k(8), 6)];
    let (run, ids) = run_blocked::<S>(&db, &url, Level::Ser, steps, "the write to block").await;
    S::kill_lock_waiters(&url, ids).await;
    let (o, _, iso) = run.await.unwrap();
    let o = o.unwrap();
    assert_eq!(
        o.status,
        Status::Fail,
        "lost before COMMIT means not committed"
    );
    assert!(o.broken, "{:?}", o.error);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::ConnectionLost);
    if let Some(prefix) = S::KILLED {
        assert!(o.error_text().unwrap().starts_with(prefix), "{:?}", o.error);
    }
    exec_all::<S>(&mut ext, &["ROLLBACK"]).await;
    then_reads(db.connect(1).await.unwrap(), &iso, 9, None).await;
}

/// A statement that waits for a lock past the statement timeout: the
/// transaction failed with a timeout, the connection is broken, and closing
/// it does not wait for the server to answer the abandoned statement (the
/// lock is still held: the server would answer only when it is released,
/// or its lock wait times out).
pub async fn a_statement_past_its_timeout_is_let_go_without_waiting<S: Server>(
    kind: DbKind,
    tag: &str,
) {
    let (_, mut ext, url) = fixture::<S>(kind, tag).await;
    let mut opts = OpenOptions::new(vec![url], std::env::temp_dir());
    opts.statement_timeout = Duration::from_secs(1);
    let db = adapters::open(kind, &opts).unwrap();
    let insert = "INSERT INTO isoharness_registers VALUES (8, 1, false)";
    exec_all::<S>(&mut ext, &[S::BEGIN, insert]).await;
    let iso = db.isolation(Level::Ser, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let o = s
        .run(&plan(vec![Step::Write(k(8), 6)]), &iso)
        .await
        .unwrap();
    assert_eq!(o.status, Status::Fail, "{:?}", o.error);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::Timeout);
    assert!(o.broken, "an abandoned statement breaks the connection");
    let closing = Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(4), s.close()).await;
    assert!(
        closed.is_ok(),
        "the close waited {:?} for the abandoned statement",
        closing.elapsed()
    );
    exec_all::<S>(&mut ext, &["ROLLBACK"]).await;
    then_reads(db.connect(1).await.unwrap(), &iso, 8, None).await;
}

/// A connection cut as the client sends COMMIT: the outcome is unknown
/// (info), and the server, which never saw COMMIT, has not the write.
pub async fn a_connection_lost_during_commit_is_info<S: Server>(kind: DbKind, tag: &str) {
    let (_, mut ext, _) = fixture::<S>(kind, tag).await;
    let proxy = proxy_cutting_commit(S::host_port()).await;
    let url = S::url_for(&format!("ih_test_{tag}"), Some(("127.0.0.1", proxy)));
    let db = open(kind, vec![url], ReadLock::Plain);
    let steps = plan(vec![Step::Read(k(4)), Step::Write(k(4), 44)]);
    let si = db.isolation(Level::Si, None).unwrap();
    let o = db.connect(0).await.unwrap().run(&steps, &si).await.unwrap();
    assert_eq!(o.status, Status::Info, "{:?}", o.error);
    assert!(o.broken);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::ConnectionLost);
    assert_eq!(o.ops, vec![r(4, None), w(4, 44)]);
    // The server never saw COMMIT, so the write is not there.
    let row = S::query_i64(&mut ext, "SELECT v FROM isoharness_registers WHERE k = 4").await;
    assert!(row.is_none());
}

/// The adapter `kind` at `url`, where no server listens: setup fails
/// within `limit`, naming the URL `redacted` (without its password
/// `secret`) and giving each of `hints`; connecting fails too.
pub async fn a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint(
    kind: DbKind,
    (url, redacted, secret): (&str, &str, &str),
    limit: Duration,
    hints: &[&str],
) {
    let db = open(kind, vec![url.into()], ReadLock::Plain);
    let t = Instant::now();
    let e = db.setup(&Schema::Registers).await.unwrap_err().to_string();
    assert!(t.elapsed() < limit, "took {:?}", t.elapsed());
    assert!(e.contains(redacted), "{e}");
    assert!(!e.contains(secret), "{e}");
    for hint in hints {
        assert!(e.contains(hint), "{e}");
    }
    let e = db.connect(0).await.err().unwrap().to_string();
    assert!(
        e.starts_with(&format!("cannot connect to {} at", kind.name())),
        "{e}"
    );
}

/// Sessions go round the URLs: session 1 gets `bad`, 0 and 2 `good`.
pub async fn sessions_are_spread_over_several_urls(kind: DbKind, good: &str, bad: &str) {
    let db = open(kind, vec![good.into(), bad.into()], ReadLock::Plain);
    assert!(db.connect(0).await.is_ok());
    assert!(db.connect(1).await.is_err());
    assert!(db.connect(2).await.is_ok());
}

/// A run owns its tables: while it runs, a second adapter with the same
/// table names is refused (the server's lock); its tables kept with
/// `keep_tables` refuse the next one too (they exist); dropped, they are
/// free again. A refused setup touches nothing of the owner's. The run
/// sets up `schema`, whose one table is `table`, and adds a `row` to it;
/// once the tables are free, `then` is set up, with `then_tables` tables.
pub async fn a_runs_tables_are_guarded_and_dropped_at_teardown<S: Server>(
    kind: DbKind,
    tag: &str,
    (schema, table, row): (Schema, &str, &str),
    (then, then_tables): (Schema, usize),
) {
    let url = S::scratch_db(tag).await;
    let mut c = S::client(&url).await;
    let mut opts = OpenOptions::new(vec![url.clone()], std::env::temp_dir());
    opts.tables = adapters::TableNames::with_suffix("guard_1").unwrap();
    let first = adapters::open(kind, &opts).unwrap();
    let second = adapters::open(kind, &opts).unwrap();
    first.setup(&schema).await.unwrap();
    assert_eq!(S::tables_ending(&mut c, "_guard_1").await, [table]);
    S::exec(&mut c, &format!("INSERT INTO {table} VALUES {row}"))
        .await
        .unwrap();
    let e = second.setup(&schema).await.unwrap_err().to_string();
    assert!(
        e.contains("belong to another run that is still running") && !e.contains('\n'),
        "{e}"
    );
    // The refused run drops nothing.
    second.teardown(false).await.unwrap();
    let n = S::query_i64(&mut c, &format!("SELECT count(*) FROM {table}")).await;
    assert_eq!(n, Some(1), "the owner's rows are untouched");
    // Kept: the lock is gone but the tables stay, and are refused.
    first.teardown(true).await.unwrap();
    assert_eq!(S::tables_ending(&mut c, "_guard_1").await.len(), 1);
    let third = adapters::open(kind, &opts).unwrap();
    let e = third.setup(&schema).await.unwrap_err().to_string();
    assert!(e.contains(&format!("table {table} already exists")), "{e}");
    S::exec(&mut c, &format!("DROP TABLE {table}"))
        .await
        .unwrap();
    // Free again; dropped at teardown.
    third.setup(&then).await.unwrap();
    assert_eq!(
        S::tables_ending(&mut c, "_guard_1").await.len(),
        then_tables
    );
    third.teardown(false).await.unwrap();
    assert!(S::tables_ending(&mut c, "_guard_1").await.is_empty());
}

/// The error of connecting the adapter `kind` to `url`.
async fn connect_error(kind: DbKind, url: &str) -> String {
    let db = open(kind, vec![url.into()], ReadLock::Plain);
    db.connect(0).await.err().unwrap().to_string()
}

/// Each way of failing to connect gets its own hint: a database that does
/// not exist (`no_db`), a user or password the server refuses (`bad_user`,
/// whose password `secret` is never shown), nothing listening (`down`).
/// Returns the errors of `no_db` and `bad_user`.
pub async fn connection_errors_get_the_hint_that_fits_them(
    kind: DbKind,
    no_db: &str,
    (bad_user, secret): (&str, &str),
    down: &str,
) -> (String, String) {
    let e_db = connect_error(kind, no_db).await;
    assert!(e_db.contains("has no database of that name"), "{e_db}");
    assert!(!e_db.contains("is the server running"), "{e_db}");
    let e_user = connect_error(kind, bad_user).await;
    assert!(
        e_user.contains("refused the user name or password"),
        "{e_user}"
    );
    assert!(
        !e_user.contains("is the server running") && !e_user.contains(secret),
        "{e_user}"
    );
    let e = connect_error(kind, down).await;
    assert!(e.contains("is the server running"), "{e}");
    assert!(
        !e.contains("refused the user") && !e.contains("no database"),
        "{e}"
    );
    (e_db, e_user)
}
