//! The SQLite adapter on a real database file.

mod common;

use std::sync::Arc;
use std::time::Duration;

use adapters::sqlite::Sqlite;
use adapters::{Database, DbKind, ErrorClass, OpenOptions};
use common::*;
use history::{Level, Op, Status};
use sqlx::{Connection, Executor};
use workloads::{Schema, Step};

#[tokio::test]
async fn registers_and_lists_behave() {
    let dir = tempfile::tempdir().unwrap();
    let db = adapters::open(DbKind::Sqlite, &OpenOptions::new(vec![], dir.path().into())).unwrap();
    assert_eq!(
        db.location(),
        dir.path().join("sqlite.db").display().to_string()
    );
    for explicit in [None, Some("serializable-immediate")] {
        let iso = db.isolation(Level::Sser, explicit).unwrap();
        register_semantics(Arc::clone(&db), iso.clone()).await;
        list_semantics(Arc::clone(&db), iso).await;
    }
}

#[tokio::test]
async fn a_locked_database_fails_the_txn_with_sqlite_busy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let opts = OpenOptions::new(vec![path.display().to_string()], dir.path().into());
    let db: Arc<dyn Database> = Arc::new(
        Sqlite::new(&opts)
            .unwrap()
            .with_busy_timeout(Duration::from_millis(100)),
    );
    db.setup(&Schema::Registers).await.unwrap();
    let mut other = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    other
        .execute("INSERT INTO isoharness_registers (k, v, tomb) VALUES (1, 1, 0)")
        .await
        .unwrap();
    // The default (immediate) mode asks for the write lock at BEGIN: the
    // transaction fails before any op.
    let iso = db.isolation(Level::Ser, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let o = s
        .run(&plan(vec![Step::Read(k(1)), Step::Write(k(1), 2)]), &iso)
        .await
        .unwrap();
    assert_eq!(o.status, Status::Fail);
    assert!(o.ops.is_empty(), "{:?}", o.ops);
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::LockTimeout);
    // The deferred mode runs the read and fails at the write.
    let iso = db
        .isolation(Level::Ser, Some("serializable-deferred"))
        .unwrap();
    let o = s
        .run(&plan(vec![Step::Read(k(1)), Step::Write(k(1), 2)]), &iso)
        .await
        .unwrap();
    assert_eq!(o.status, Status::Fail);
    assert_eq!(
        o.ops,
        vec![
            r(1, None),
            Op::Write {
                key: k(1),
                value: 2
            }
        ]
    );
    assert_eq!(o.error.as_ref().unwrap().class, ErrorClass::LockTimeout);
    assert!(
        o.error_text().unwrap().starts_with("SQLITE_BUSY"),
        "{:?}",
        o.error
    );
    assert!(!o.broken, "a busy database leaves the connection usable");
    other.execute("COMMIT").await.unwrap();
    // Rolled back properly: the next transaction on the same connection runs.
    let ops = commit(&mut s, &iso, vec![Step::Read(k(1)), Step::Write(k(1), 3)]).await;
    assert_eq!(ops[0], r(1, Some(1)));
    // BEGIN IMMEDIATE fails at BEGIN when another writer holds the lock.
    other.execute("BEGIN IMMEDIATE").await.unwrap();
    let imm = db
        .isolation(Level::Ser, Some("serializable-immediate"))
        .unwrap();
    // (A transaction that writes: read-only ones open with plain BEGIN.)
    let o = s
        .run(&plan(vec![Step::Read(k(1)), Step::Write(k(1), 4)]), &imm)
        .await
        .unwrap();
    assert_eq!(o.status, Status::Fail);
    assert!(o.ops.is_empty());
    assert!(o.error_text().unwrap().starts_with("SQLITE_BUSY"));
    other.execute("ROLLBACK").await.unwrap();
    assert_eq!(
        commit(&mut s, &imm, vec![Step::Read(k(1))]).await,
        vec![r(1, Some(3))]
    );
}

#[tokio::test]
async fn an_unwritable_folder_is_a_clear_connect_error() {
    let opts = OpenOptions::new(vec!["/nonexistent/dir/x.db".into()], "/nonexistent".into());
    let db = adapters::open(DbKind::Sqlite, &opts).unwrap();
    let e = db.setup(&Schema::Registers).await.unwrap_err().to_string();
    assert!(
        e.starts_with("cannot connect to sqlite at /nonexistent/dir/x.db"),
        "{e}"
    );
}
