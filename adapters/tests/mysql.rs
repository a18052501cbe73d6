//! The MySQL and TiDB adapters against a real MariaDB/MySQL server
//! (`ISOHARNESS_MYSQL_URL`, else mysql://root@127.0.0.1:3306/test). The
//! TiDB adapter runs on it with its TiDB-only statements skipped. These
//! tests fail, not skip, when the server is down. The cases they share
//! with the other SQL adapters are in common/cases.rs.

mod common;

use std::time::Duration;

use adapters::{DbKind, ReadLock};
use common::cases::{self, open};
use common::server::{My, Server};
use common::{k, plan, shared_cases};
use history::{Level, Status};
use workloads::{Schema, Step};

const MY: DbKind = DbKind::Mysql;

#[tokio::test]
async fn registers_and_lists_behave() {
    let url = My::scratch_db("my_semantics").await;
    for lock in [ReadLock::Plain, ReadLock::ForUpdate, ReadLock::Share] {
        let db = open(MY, vec![url.clone()], lock);
        cases::semantics(&db, &[Level::Rc, Level::Si, Level::Ser]).await;
        assert!(db.warnings().is_empty(), "{:?}", db.warnings());
    }
}

#[tokio::test]
async fn the_tidb_adapter_runs_on_mariadb_and_says_what_it_skipped() {
    let url = My::scratch_db("tidb_semantics").await;
    let db = open(DbKind::Tidb, vec![url.clone()], ReadLock::Plain);
    cases::semantics(&db, &[Level::Rc, Level::Si]).await;
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

shared_cases! {
    a_deadlock_fails_one_side_with_1213 = a_deadlock_fails_one_side::<My>(MY, "my_deadlock");
    a_concurrent_insert_fails_with_duplicate_key_1062 =
        a_concurrent_insert_fails_with_a_unique_violation::<My>(MY, "my_unique");
    a_connection_lost_during_commit_is_info::<My>(MY, "my_info");
    a_connection_killed_before_commit_fails_and_reconnecting_works::<My>(MY, "my_killed");
    a_statement_past_its_timeout_is_let_go_without_waiting::<My>(MY, "my_abandoned");
    // A run owns its tables: GET_LOCK, then the tables themselves.
    a_runs_tables_are_guarded_and_dropped_at_teardown::<My>(
        MY,
        "guard",
        (Schema::Lists, "isoharness_lists_guard_1", "(1, '1')"),
        (Schema::Registers, 1),
    );
}

#[tokio::test]
async fn a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint() {
    for (kind, profile) in [(MY, "mysql"), (DbKind::Tidb, "tidb")] {
        cases::a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint(
            kind,
            (
                "mysql://alice:hunter2@127.0.0.1:1/nowhere",
                "mysql://alice:***@127.0.0.1:1/nowhere",
                "hunter2",
            ),
            Duration::from_secs(5),
            &[&format!("docker compose --profile {profile} up -d")],
        )
        .await;
    }
}

#[tokio::test]
async fn sessions_are_spread_over_several_urls() {
    let url = My::scratch_db("my_multi").await;
    for kind in [MY, DbKind::Tidb] {
        cases::sessions_are_spread_over_several_urls(
            kind,
            &url,
            "mysql://root@127.0.0.1:1/nowhere",
        )
        .await;
    }
}

#[tokio::test]
async fn connection_errors_get_the_hint_that_fits_them() {
    // root@127.0.0.1 has an empty password (.ci/services): any other is
    // refused with 1045; a database that does not exist is 1049; nothing
    // listens on port 1.
    let (_, bad_user) = cases::connection_errors_get_the_hint_that_fits_them(
        MY,
        "mysql://root@127.0.0.1:3306/ih_no_such_database",
        ("mysql://root:wr0ng-pw@127.0.0.1:3306/test", "wr0ng-pw"),
        "mysql://root@127.0.0.1:1/test",
    )
    .await;
    assert!(
        bad_user.contains("1045") || bad_user.contains("Access denied"),
        "{bad_user}"
    );
}
