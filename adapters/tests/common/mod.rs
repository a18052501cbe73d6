//! Helpers shared by the adapter tests: a scratch PostgreSQL database per
//! test, and the register/list semantics every SQL adapter must have. The
//! cases the SQL adapters share are in [`cases`], on the [`server`]s.
#![allow(dead_code, unused_imports, unused_macros)]

pub mod cases;
pub mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters::{Database, Isolation, Outcome, Session};
use history::{Key, Op, Status};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};
use workloads::{Plan, Step};

/// The server the tests use: `ISOHARNESS_PG_URL`, else the default URL.
pub fn admin_url() -> String {
    std::env::var("ISOHARNESS_PG_URL").unwrap_or_else(|_| adapters::postgres::DEFAULT_URL.into())
}

/// A URL for database `db` on the admin URL's server, or on `at` instead.
pub fn url_for(db: &str, at: Option<(&str, u16)>) -> String {
    let admin = admin_url();
    let cfg: Config = admin.parse().expect("ISOHARNESS_PG_URL must parse");
    let user = cfg.get_user().unwrap_or("postgres");
    let auth = match cfg.get_password() {
        Some(p) => format!("{user}:{}", String::from_utf8_lossy(p)),
        None => user.to_string(),
    };
    let (host, port) = match at {
        Some((h, p)) => (h.to_string(), p),
        None => {
            let host = match cfg.get_hosts().first() {
                Some(Host::Tcp(h)) => h.clone(),
                _ => "127.0.0.1".into(),
            };
            (host, cfg.get_ports().first().copied().unwrap_or(5432))
        }
    };
    format!("postgres://{auth}@{host}:{port}/{db}")
}

/// Connects with plain tokio-postgres; panics (the test fails) when the
/// server is down, naming the URL.
pub async fn client(url: &str) -> Client {
    let (c, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is not reachable at {} ({e}); start it or set ISOHARNESS_PG_URL",
                adapters::redact_url(url)
            )
        });
    tokio::spawn(conn);
    c
}

/// Creates (or recreates) the database `ih_test_<tag>` and returns its URL.
pub async fn scratch_db(tag: &str) -> String {
    let admin = client(&admin_url()).await;
    let name = format!("ih_test_{tag}");
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await
        .expect("drop scratch database");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create scratch database");
    url_for(&name, None)
}

/// A plan of these steps.
pub fn plan(steps: Vec<Step>) -> Plan {
    Plan {
        kind: "test",
        steps,
    }
}

pub fn k(i: i64) -> Key {
    Key::Int(i)
}

pub fn r(key: i64, value: Option<i64>) -> Op {
    Op::Read { key: k(key), value }
}

/// Runs `steps` on `s` and asserts the transaction committed.
pub async fn commit(s: &mut Box<dyn Session>, iso: &Isolation, steps: Vec<Step>) -> Vec<Op> {
    let o: Outcome = s.run(&plan(steps), iso).await.expect("plan accepted");
    assert_eq!(o.status, Status::Ok, "{:?}", o.error);
    assert!(!o.broken);
    o.ops
}

/// Register semantics: reads of absent keys, upserts, insert-if-absent that
/// skips live rows and revives tombstones, deletes as tombstones, range
/// reads that include tombstones.
pub async fn register_semantics(db: Arc<dyn Database>, iso: Isolation) {
    db.setup(&workloads::Schema::Registers).await.unwrap();
    let mut s = db.connect(0).await.unwrap();
    let ops = commit(
        &mut s,
        &iso,
        vec![Step::Read(k(1)), Step::Write(k(1), 10), Step::Read(k(1))],
    )
    .await;
    assert_eq!(
        ops,
        vec![
            r(1, None),
            Op::Write {
                key: k(1),
                value: 10
            },
            r(1, Some(10))
        ]
    );
    // A live row: the insert is skipped, only the read is recorded.
    let ops = commit(&mut s, &iso, vec![Step::Insert(k(1), 11)]).await;
    assert_eq!(ops, vec![r(1, Some(10))]);
    // A delete installs a tombstone carrying its id; reads return that id.
    let ops = commit(&mut s, &iso, vec![Step::Delete(k(1), 12), Step::Read(k(1))]).await;
    assert_eq!(
        ops,
        vec![
            Op::Delete {
                key: k(1),
                value: 12
            },
            r(1, Some(12))
        ]
    );
    // Inserting over a tombstone revives the row.
    let ops = commit(&mut s, &iso, vec![Step::Insert(k(1), 13), Step::Read(k(1))]).await;
    assert_eq!(
        ops,
        vec![
            r(1, Some(12)),
            Op::Insert {
                key: k(1),
                value: 13
            },
            r(1, Some(13))
        ]
    );
    let ops = commit(&mut s, &iso, vec![Step::Insert(k(2), 14)]).await;
    assert_eq!(
        ops,
        vec![
            r(2, None),
            Op::Insert {
                key: k(2),
                value: 14
            }
        ]
    );
    // Deleting an absent key still writes a tombstone.
    commit(&mut s, &iso, vec![Step::Delete(k(3), 15)]).await;
    let ops = commit(
        &mut s,
        &iso,
        vec![
            Step::RangeRead(k(0), k(10)),
            Step::RangeRead(k(2), k(2)),
            Step::RangeRead(k(4), k(9)),
        ],
    )
    .await;
    assert_eq!(
        ops,
        vec![
            Op::RangeRead {
                lo: k(0),
                hi: k(10),
                rows: Box::new(vec![(k(1), 13), (k(2), 14), (k(3), 15)])
            },
            Op::RangeRead {
                lo: k(2),
                hi: k(2),
                rows: Box::new(vec![(k(2), 14)])
            },
            Op::RangeRead {
                lo: k(4),
                hi: k(9),
                rows: Box::new(vec![])
            },
        ]
    );
    // String keys are refused before anything is sent.
    let e = s
        .run(&plan(vec![Step::Read(Key::str("x"))]), &iso)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("BIGINT"), "{e}");
    s.close().await;
}

/// List semantics: absent lists read as empty, appends keep their order.
pub async fn list_semantics(db: Arc<dyn Database>, iso: Isolation) {
    db.setup(&workloads::Schema::Lists).await.unwrap();
    let mut s = db.connect(0).await.unwrap();
    let ops = commit(&mut s, &iso, vec![Step::ReadList(k(1))]).await;
    assert_eq!(
        ops,
        vec![Op::ReadList {
            key: k(1),
            values: Some(vec![])
        }]
    );
    commit(
        &mut s,
        &iso,
        vec![
            Step::Append(k(1), 5),
            Step::Append(k(1), 6),
            Step::Append(k(2), 7),
        ],
    )
    .await;
    let ops = commit(
        &mut s,
        &iso,
        vec![Step::ReadList(k(1)), Step::ReadList(k(2))],
    )
    .await;
    assert_eq!(
        ops,
        vec![
            Op::ReadList {
                key: k(1),
                values: Some(vec![5, 6])
            },
            Op::ReadList {
                key: k(2),
                values: Some(vec![7])
            },
        ]
    );
    s.close().await;
}

/// Polls `cond` every 20 ms for up to 10 s.
pub async fn wait_until<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    while !cond().await {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A TCP proxy to the server that drops both sides the moment the client
/// sends COMMIT (as text, in both the PostgreSQL and the MySQL protocol), so
/// the client never learns whether it committed.
pub async fn proxy_cutting_commit(upstream: (String, u16)) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((downstream, _)) = listener.accept().await {
            let up = tokio::net::TcpStream::connect((upstream.0.as_str(), upstream.1))
                .await
                .unwrap();
            tokio::spawn(async move {
                let (mut dr, mut dw) = downstream.into_split();
                let (mut ur, mut uw) = up.into_split();
                let back = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut ur, &mut dw).await;
                });
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    let n = match dr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if buf[..n].windows(6).any(|w| w == b"COMMIT") {
                        break;
                    }
                    if uw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                back.abort();
            });
        }
    });
    port
}

/// One `#[tokio::test]` per `case(args);` line, named as the case in
/// [`cases`] it awaits, or per `test = case(args);` line, named `test`.
macro_rules! shared_cases {
    () => {};
    ($test:ident = $case:ident $(::<$s:ty>)? ($($arg:expr),* $(,)?); $($rest:tt)*) => {
        #[tokio::test]
        async fn $test() {
            $crate::common::cases::$case $(::<$s>)? ($($arg),*).await
        }
        shared_cases!($($rest)*);
    };
    ($case:ident $(::<$s:ty>)? ($($arg:expr),* $(,)?); $($rest:tt)*) => {
        shared_cases!($case = $case $(::<$s>)? ($($arg),*); $($rest)*);
    };
}
pub(crate) use shared_cases;
