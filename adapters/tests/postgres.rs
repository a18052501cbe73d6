//! The PostgreSQL adapter against a real server (`ISOHARNESS_PG_URL`, else
//! postgres://postgres@127.0.0.1:5432/postgres). These tests fail, not
//! skip, when the server is down. The cases it shares with the other SQL
//! adapters are in common/cases.rs.

mod common;

use std::time::Duration;

use adapters::{DbKind, ReadLock};
use common::cases::{self, open};
use common::server::Pg;
use common::*;
use history::Level;
use workloads::Schema;

const PG: DbKind = DbKind::Postgres;

#[tokio::test]
async fn registers_and_lists_behave() {
    let db = open(PG, vec![scratch_db("semantics").await], ReadLock::Plain);
    cases::semantics(&db, &[Level::Rc, Level::Si, Level::Ser]).await;
}

shared_cases! {
    // A run owns its tables: the advisory lock, then the tables themselves.
    a_runs_tables_are_guarded_and_dropped_at_teardown::<Pg>(
        PG,
        "guard",
        (Schema::Registers, "isoharness_registers_guard_1", "(1, 1, false)"),
        (Schema::Tpcc, 8),
    );
    a_concurrent_update_fails_a_repeatable_read_txn_with_40001 =
        a_concurrent_update_fails_with_40001(PG, "ser_failure", "repeatable-read");
    a_concurrent_insert_fails_with_a_unique_violation_at_read_committed =
        a_concurrent_insert_fails_with_a_unique_violation::<Pg>(PG, "unique");
    a_deadlock_fails_one_side_with_40p01 = a_deadlock_fails_one_side::<Pg>(PG, "deadlock");
    a_connection_killed_before_commit_fails_and_reconnecting_works::<Pg>(PG, "killed");
    a_statement_past_its_timeout_is_let_go_without_waiting::<Pg>(PG, "abandoned");
    a_connection_lost_during_commit_is_info::<Pg>(PG, "info");
    a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint(
        PG,
        (
            "postgres://alice:hunter2@127.0.0.1:1/nowhere",
            "postgres://alice:***@127.0.0.1:1/nowhere",
            "hunter2",
        ),
        Duration::from_secs(6),
        &["pg_ctl", "docker compose"],
    );
}

#[tokio::test]
async fn sessions_are_spread_over_several_urls() {
    let url = scratch_db("multi").await;
    let bad = "postgres://postgres@127.0.0.1:1/nowhere";
    cases::sessions_are_spread_over_several_urls(PG, &url, bad).await;
}

#[tokio::test]
async fn connection_errors_get_the_hint_that_fits_them() {
    // A database that does not exist (3D000); a user the server refuses
    // (28000: with trust auth on 127.0.0.1 a wrong password is accepted,
    // but an unknown role is not); nothing listening on port 1.
    let (no_db, _) = cases::connection_errors_get_the_hint_that_fits_them(
        PG,
        "postgres://postgres@127.0.0.1:5432/ih_no_such_database",
        (
            "postgres://ih_no_such_role:s3cr3t@127.0.0.1:5432/postgres",
            "s3cr3t",
        ),
        "postgres://postgres@127.0.0.1:1/postgres",
    )
    .await;
    assert!(no_db.contains("ih_no_such_database"), "{no_db}");
}
