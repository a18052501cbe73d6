//! TPC-C through the adapters, without the runner: the initial load, the
//! five programs on concurrent sessions, what they record, and the
//! consistency check on the final state, on SQLite, memdb, PostgreSQL and
//! MariaDB/MySQL (one shared case for the servers). Server tests fail, not
//! skip, when the server is down.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use adapters::{Database, DbKind, Isolation, OpenOptions, TableNames};
use common::scratch_db;
use history::{Key, Level, Op, Status};
use mysql_async::prelude::Queryable;
use workloads::tpcc::TpccScale;
use workloads::{EndCheck, Workload, WorkloadConfig};

fn workload(seed: u64) -> Box<dyn Workload> {
    let cfg = WorkloadConfig {
        seed,
        tpcc: TpccScale {
            warehouses: 2,
            districts: 3,
            customers: 5,
            items: 20,
            orders: 4,
        },
        ..WorkloadConfig::for_workload("tpcc").unwrap()
    };
    workloads::build("tpcc", &cfg).unwrap()
}

/// What a run of `clients` × `each` transactions committed and recorded.
#[derive(Debug, Default)]
struct Tally {
    by_status: BTreeMap<(String, &'static str), usize>,
    ops: BTreeMap<&'static str, usize>,
    errors: BTreeMap<String, usize>,
}

fn op_kind(op: &Op) -> &'static str {
    match op {
        Op::Read { value: None, .. } => "r-null",
        Op::Read { .. } => "r",
        Op::Write { .. } => "w",
        Op::Insert { .. } => "i",
        Op::Delete { .. } => "d",
        Op::RangeRead { .. } => "rq",
        Op::Append { .. } => "a",
        Op::ReadList { .. } => "rl",
    }
}

fn is_tpcc_key(k: &Key) -> bool {
    matches!(k, Key::Str(s) if s.split(':').count() >= 2)
}

/// The five TPC-C programs, each of which a run must see commit.
const KINDS: [&str; 5] = [
    "new-order",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
];

/// Loads the tables and runs the clients concurrently: each runs at least
/// `each` transactions, and goes on (up to 20 × `each`) until every kind has
/// committed once, since under contention a heavy Delivery can abort many
/// times in a row.
async fn drive(db: Arc<dyn Database>, iso: Isolation, clients: u32, each: usize) -> Tally {
    let wl: Arc<dyn Workload> = Arc::from(workload(3));
    db.setup(&wl.schema()).await.unwrap();
    let mut s = db.connect(0).await.unwrap();
    let load = wl.prelude().unwrap();
    let out = s.run(&load, &iso).await.unwrap();
    assert_eq!(out.status, Status::Ok, "{:?}", out.error);
    assert!(out.ops.iter().all(|o| matches!(o, Op::Insert { .. })));
    let before = s.end_check(EndCheck::TpccConsistency).await.unwrap();
    assert!(before.ok, "{before}");
    s.close().await;

    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let mut tasks = Vec::new();
    for c in 0..clients {
        let db = Arc::clone(&db);
        let wl = Arc::clone(&wl);
        let iso = iso.clone();
        let seen = Arc::clone(&seen);
        tasks.push(tokio::spawn(async move {
            let mut s = db.connect(u64::from(c)).await.unwrap();
            let mut plans = wl.client(c);
            let mut t = Tally::default();
            for i in 0..20 * each {
                if i >= each && seen.lock().unwrap().len() == KINDS.len() {
                    break;
                }
                let p = plans.next_plan();
                let o = s.run(&p, &iso).await.unwrap();
                let st = match o.status {
                    Status::Ok => "ok",
                    Status::Fail => "fail",
                    Status::Info => "info",
                };
                *t.by_status.entry((p.kind.to_string(), st)).or_default() += 1;
                if let Some(e) = &o.error {
                    *t.errors.entry(e.code.clone()).or_default() += 1;
                }
                if o.status == Status::Ok {
                    seen.lock().unwrap().insert(p.kind.to_string());
                    for op in &o.ops {
                        if let Some(k) = op.key() {
                            assert!(is_tpcc_key(k), "{op}");
                        }
                        *t.ops.entry(op_kind(op)).or_default() += 1;
                    }
                }
                assert!(!o.broken, "{:?}", o.error);
            }
            s.close().await;
            t
        }));
    }
    let mut all = Tally::default();
    for t in tasks {
        let t = t.await.unwrap();
        for (k, v) in t.by_status {
            *all.by_status.entry(k).or_default() += v;
        }
        for (k, v) in t.ops {
            *all.ops.entry(k).or_default() += v;
        }
        for (k, v) in t.errors {
            *all.errors.entry(k).or_default() += v;
        }
    }
    all
}

fn committed(t: &Tally, kind: &str) -> usize {
    t.by_status
        .get(&(kind.to_string(), "ok"))
        .copied()
        .unwrap_or(0)
}

async fn consistent(db: &Arc<dyn Database>) -> workloads::EndReport {
    let mut s = db.connect(99).await.unwrap();
    let r = s.end_check(EndCheck::TpccConsistency).await.unwrap();
    s.close().await;
    r
}

fn assert_every_kind_committed(t: &Tally) {
    for kind in KINDS {
        assert!(committed(t, kind) > 0, "no {kind} committed: {t:?}");
    }
    for op in ["r", "w", "i", "d", "rq"] {
        assert!(t.ops.get(op).copied().unwrap_or(0) > 0, "no {op}: {t:?}");
    }
    // Only New-Order's deliberate rollback and contention end a txn.
    for code in t.errors.keys() {
        assert!(
            [
                "tpcc-rollback",
                "40001",
                "40P01",
                "SQLITE_BUSY",
                "SQLITE_BUSY_SNAPSHOT",
                "23505",
                "MEMDB_ABORT",
                "MEMDB_UNIQUE",
                "1213",
                "1205",
                "1062",
            ]
            .contains(&code.as_str()),
            "unexpected error {code}: {t:?}"
        );
    }
}

#[tokio::test]
async fn sqlite_runs_every_transaction_and_stays_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let db = adapters::open(
        DbKind::Sqlite,
        &OpenOptions::new(vec![], dir.path().to_path_buf()),
    )
    .unwrap();
    let iso = db.isolation(Level::Ser, None).unwrap();
    let t = drive(Arc::clone(&db), iso, 3, 120).await;
    assert_every_kind_committed(&t);
    let r = consistent(&db).await;
    assert!(r.ok, "{r}");
    assert!(r.conditions.iter().all(|c| c.checked > 0));
}

/// The case every SQL server runs at serializable: the load, the five
/// programs on four concurrent sessions, the consistency check; then
/// `tamper` adds 1 to district (2, 1)'s D_YTD behind the harness's back,
/// and condition 1, only it, is reported broken for warehouse 2.
async fn serializable_stays_consistent_and_a_tamper_is_caught(
    db: Arc<dyn Database>,
    tamper: impl std::future::Future<Output = ()>,
) {
    let iso = db.isolation(Level::Ser, None).unwrap();
    let t = drive(Arc::clone(&db), iso, 4, 100).await;
    assert_every_kind_committed(&t);
    let r = consistent(&db).await;
    assert!(r.ok, "{r}");
    assert!(r.conditions.iter().all(|c| c.checked > 0), "{r}");

    tamper.await;
    let r = consistent(&db).await;
    assert!(!r.ok);
    assert!(
        !r.conditions[0].ok && r.conditions[1..].iter().all(|c| c.ok),
        "{r}"
    );
    assert!(
        r.conditions[0].violations[0].starts_with("warehouse 2:"),
        "{r}"
    );
}

/// The tamper's statement, on the district table named `district`.
fn tamper_sql(district: &str) -> String {
    format!("UPDATE {district} SET d_ytd = d_ytd + 1 WHERE d_w_id = 2 AND d_id = 1")
}

#[tokio::test]
async fn postgres_serializable_stays_consistent_and_a_tampered_total_is_caught() {
    let url = scratch_db("tpcc_lib").await;
    let db = adapters::open(
        DbKind::Postgres,
        &OpenOptions::new(vec![url.clone()], std::env::temp_dir()),
    )
    .unwrap();
    let tamper = async {
        let c = common::client(&url).await;
        c.execute(&tamper_sql("tpcc_district"), &[]).await.unwrap();
    };
    serializable_stays_consistent_and_a_tamper_is_caught(db, tamper).await;
}

/// MariaDB/MySQL (`ISOHARNESS_MYSQL_URL`, else the adapter's default URL),
/// on tables of the test's own (the run-style suffixed names), dropped at
/// the end. InnoDB's serializable takes shared locks on every read, so
/// contention ends transactions in deadlocks (1213) rather than
/// serialization failures. Fails, not skips, when the server is down.
#[tokio::test]
async fn mariadb_serializable_stays_consistent_and_a_tampered_total_is_caught() {
    let url = std::env::var("ISOHARNESS_MYSQL_URL")
        .unwrap_or_else(|_| adapters::mysql::DEFAULT_URL.into());
    let mut opts = OpenOptions::new(vec![url.clone()], std::env::temp_dir());
    opts.tables = TableNames::for_run("tpcc_lib_mysql");
    let district = opts.tables.name("tpcc_district");
    let db = adapters::open(DbKind::Mysql, &opts).unwrap();
    let tamper = async {
        let opts = mysql_async::Opts::from_url(&url).expect("ISOHARNESS_MYSQL_URL must parse");
        let mut c = mysql_async::Conn::new(opts).await.unwrap_or_else(|e| {
            panic!("MySQL/MariaDB is not reachable ({e}); start it or set ISOHARNESS_MYSQL_URL")
        });
        c.query_drop(tamper_sql(&district)).await.unwrap();
        let _ = c.disconnect().await;
    };
    serializable_stays_consistent_and_a_tamper_is_caught(Arc::clone(&db), tamper).await;
    db.teardown(false).await.unwrap();
}

#[tokio::test]
async fn memdb_runs_tpcc_and_its_lost_update_bug_breaks_the_conditions() {
    let dir = tempfile::tempdir().unwrap();
    for level in [Level::Si, Level::Ser] {
        let db = adapters::open(
            DbKind::Memdb,
            &OpenOptions::new(vec![], dir.path().to_path_buf()),
        )
        .unwrap();
        let iso = db.isolation(level, None).unwrap();
        let t = drive(Arc::clone(&db), iso, 4, 150).await;
        assert_every_kind_committed(&t);
        let r = consistent(&db).await;
        assert!(r.ok, "{level}: {r}");
    }
    // Without write-conflict checks, concurrent Payments lose each other's
    // year-to-date updates: condition 1 breaks.
    let mut opts = OpenOptions::new(vec![], dir.path().to_path_buf());
    opts.bug = Some(adapters::memdb::Bug::LostUpdate);
    let db = adapters::open(DbKind::Memdb, &opts).unwrap();
    let iso = db.isolation(Level::Si, None).unwrap();
    drive(Arc::clone(&db), iso, 4, 150).await;
    let r = consistent(&db).await;
    assert!(!r.ok && !r.conditions[0].ok, "{r}");
}
