//! The YugabyteDB adapter against the real PostgreSQL server of the other
//! adapter tests (`ISOHARNESS_PG_URL`): YSQL speaks PostgreSQL, so the
//! adapter runs end to end with its YugabyteDB-only settings skipped. Fails,
//! not skips, when the server is down. The cases it shares with the other
//! SQL adapters are in common/cases.rs.

mod common;

use std::time::Duration;

use adapters::{DbKind, ReadLock};
use common::cases::{self, open};
use common::*;
use history::Level;

const YB: DbKind = DbKind::Yugabyte;

#[tokio::test]
async fn the_yugabyte_adapter_runs_on_postgres_and_says_what_it_skipped() {
    let url = scratch_db("yb_semantics").await;
    for lock in [ReadLock::Plain, ReadLock::ForUpdate, ReadLock::Share] {
        let db = open(YB, vec![url.clone()], lock);
        let names = cases::semantics(&db, &[Level::Rc, Level::Si, Level::Ser]).await;
        assert_eq!(names, ["read-committed", "snapshot", "serializable"]);
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

shared_cases! {
    a_concurrent_update_fails_a_snapshot_txn_with_40001 =
        a_concurrent_update_fails_with_40001(YB, "yb_conflict", "snapshot");
    a_cluster_that_is_down_fails_fast_with_a_redacted_url_and_a_hint =
        a_server_that_is_down_fails_fast_with_a_redacted_url_and_a_hint(
            YB,
            (
                "postgres://yugabyte:hunter2@127.0.0.1:1/yugabyte",
                "postgres://yugabyte:***@127.0.0.1:1/yugabyte",
                "hunter2",
            ),
            Duration::from_secs(6),
            &["docker compose --profile yugabyte up -d"],
        );
}

#[tokio::test]
async fn sessions_are_spread_over_several_urls() {
    let url = scratch_db("yb_multi").await;
    let bad = "postgres://yugabyte@127.0.0.1:1/nowhere";
    cases::sessions_are_spread_over_several_urls(YB, &url, bad).await;
}
