//! The YugabyteDB adapter against the real PostgreSQL server of the other
//! adapter tests (`ISOHARNESS_PG_URL`): YSQL speaks PostgreSQL, so the
//! adapter runs end to end with its YugabyteDB-only settings skipped. Fails,
//! not skips, when the server is down.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters::{Database, DbKind, OpenOptions, ReadLock};
use common::*;
use history::{Level, Status};
use workloads::{Schema, Step};

fn open(urls: Vec<String>, lock: ReadLock) -> Arc<dyn Database> {
    let mut o = OpenOptions::new(urls, std::env::temp_dir());
    o.read_lock = lock;
    adapters::open(DbKind::Yugabyte, &o).unwrap()
}

#[tokio::test]
async fn the_yugabyte_adapter_runs_on_postgres_and_says_what_it_skipped() {
    let url = scratch_db("yb_semantics").await;
    for lock in [ReadLock::Plain, ReadLock::ForUpdate, ReadLock::Share] {
        let db = open(vec![url.clone()], lock);
        for (level, name) in [
            (Level::Rc, "read-committed"),
            (Level::Si, "snapshot"),
            (Level::Ser, "serializable"),
        ] {
            let iso = db.isolation(level, None).unwrap();
            assert_eq!(iso.name, name);
            register_semantics(Arc::clone(&db), iso.clone()).await;
            list_semantics(Arc::clone(&db), iso).await;
        }
        let w = db.warnings();
        assert_eq!(w.len(), 1, "said once however many sessions: {w:?}");
        assert!(w[0].contains("is not YugabyteDB"), "{w:?}");
        assert!(w[0].contains("yb_read_from_followers"), "{w:?}");
        assert!(
            w[0].contains("yb_effective_transaction_isolation_level"),
            "{w:?}"
        );
    }
}

#[tokio::test]
async fn a_concurrent_update_fails_a_snapshot_txn_with_40001() {
    let url = scratch_db("yb_conflict").await;
    let db = open(vec![url.clone()], ReadLock::Plain);
    db.setup(&Schema::Registers).await.unwrap();
    let ext = client(&url).await;
    let monitor = client(&url).await;
    ext.batch_execute("INSERT INTO isoharness_registers VALUES (7, 1, false)")
        .await
        .unwrap();
    ext.batch_execute("BEGIN; UPDATE isoharness_registers SET v = 2 WHERE k = 7")
        .await
        .unwrap();
    let iso = db.isolation(Level::Si, None).unwrap();
    let mut s = db.connect(0).await.unwrap();
    let run = tokio::spawn(async move {
        s.run(&plan(vec![Step::Read(k(7)), Step::Write(k(7), 3)]), &iso)
            .await
    });
    wait_until("the write to block", || async {
        let row = monitor
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event_type = 'Lock' AND datname = current_database()",
                &[],
            )
            .await
            .unwrap();
        row.get::<_, i64>(0) > 0
    })
    .await;
    ext.batch_execute("COMMIT").await.unwrap();
    let o = run.await.unwrap().unwrap();
    assert_eq!(o.status, Status::Fail);
    assert_eq!(
        o.error.as_ref().unwrap().class,
        adapters::ErrorClass::Serialization
    );
    assert!(o.error_text().unwrap().starts_with("40001: "));
}

#[tokio::test]
async fn a_cluster_that_is_down_fails_fast_with_a_redacted_url_and_a_hint() {
    let db = open(
        vec!["postgres://yugabyte:hunter2@127.0.0.1:1/yugabyte".into()],
        ReadLock::Plain,
    );
    let t = Instant::now();
    let e = db.setup(&Schema::Registers).await.unwrap_err().to_string();
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "took {:?}",
        t.elapsed()
    );
    assert!(
        e.contains("postgres://yugabyte:***@127.0.0.1:1/yugabyte"),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "{e}");
    assert!(e.contains("docker compose --profile yugabyte up -d"), "{e}");
}

#[tokio::test]
async fn sessions_are_spread_over_several_urls() {
    let url = scratch_db("yb_multi").await;
    let bad = "postgres://yugabyte@127.0.0.1:1/nowhere".to_string();
    let db = open(vec![url, bad], ReadLock::Plain);
    assert!(db.connect(0).await.is_ok());
    assert!(db.connect(1).await.is_err());
    assert!(db.connect(2).await.is_ok());
}
