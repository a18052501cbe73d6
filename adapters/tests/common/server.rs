//! The two servers the SQL adapter tests run on, PostgreSQL (under the
//! postgres and yugabyte adapters) and MariaDB/MySQL (under the mysql and
//! tidb adapters), behind one trait: a plain client beside the adapter, its
//! scratch databases, and the error codes each server answers with.

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use tokio_postgres::config::Host;

use super::wait_until;

/// A server the shared cases can set up conflicts on.
#[allow(async_fn_in_trait)]
pub trait Server {
    /// A plain connection, beside the adapter's.
    type Client;
    /// The statement that opens a transaction on a plain connection.
    const BEGIN: &'static str;
    /// How a unique violation's error text starts.
    const UNIQUE: &'static str;
    /// The code of a deadlock, and how its error text starts.
    const DEADLOCK: (&'static str, &'static str);
    /// Run on the plain connection before a deadlock is set up, best effort.
    const BEFORE_DEADLOCK: Option<&'static str>;
    /// How the error text of a killed connection starts, where it says.
    const KILLED: Option<&'static str>;

    /// The host and port of the admin URL's server.
    fn host_port() -> (String, u16);
    /// A URL for database `db` on the admin URL's server, or on `at`.
    fn url_for(db: &str, at: Option<(&str, u16)>) -> String;
    /// A plain connection; panics (the test fails) when the server is down.
    async fn client(url: &str) -> Self::Client;
    /// Creates (or recreates) the database `ih_test_<tag>`; returns its URL.
    async fn scratch_db(tag: &str) -> String;
    /// Runs `sql`; a failure gives the server's error code.
    async fn exec(c: &mut Self::Client, sql: &str) -> Result<(), String>;
    /// The first column of the first row of `sql`, if there is a row.
    async fn query_i64(c: &mut Self::Client, sql: &str) -> Option<i64>;
    /// The tables of this database whose names end in `suffix`, by name.
    async fn tables_ending(c: &mut Self::Client, suffix: &str) -> Vec<String>;
    /// Waits (up to 10 s) until some connection to `url`'s database waits
    /// for a row lock; returns what [`Server::kill_lock_waiters`] needs.
    async fn wait_for_lock_wait(url: &str, what: &str) -> Vec<u64>;
    /// Kills the connections to `url`'s database that wait for a lock.
    async fn kill_lock_waiters(url: &str, ids: Vec<u64>);
}

/// The PostgreSQL server of `ISOHARNESS_PG_URL`.
pub struct Pg;

/// Backends of the current database that wait for a lock.
const PG_WAITING: &str =
    "FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()";

/// True once some backend of this database waits for a lock.
async fn someone_waits(monitor: &tokio_postgres::Client) -> bool {
    let row = monitor
        .query_one(&format!("SELECT count(*) {PG_WAITING}"), &[])
        .await
        .unwrap();
    row.get::<_, i64>(0) > 0
}

impl Server for Pg {
    type Client = tokio_postgres::Client;
    const BEGIN: &'static str = "BEGIN";
    const UNIQUE: &'static str = "23505: ";
    const DEADLOCK: (&'static str, &'static str) = ("40P01", "40P01: deadlock detected");
    // Let the adapter's backend detect the deadlock (when allowed to set it).
    const BEFORE_DEADLOCK: Option<&'static str> = Some("SET deadlock_timeout = '10s'");
    const KILLED: Option<&'static str> = Some("57P01: ");

    fn host_port() -> (String, u16) {
        let cfg: tokio_postgres::Config = super::admin_url().parse().unwrap();
        let host = match cfg.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            _ => "127.0.0.1".into(),
        };
        (host, cfg.get_ports().first().copied().unwrap_or(5432))
    }

    fn url_for(db: &str, at: Option<(&str, u16)>) -> String {
        super::url_for(db, at)
    }

    async fn client(url: &str) -> Self::Client {
        super::client(url).await
    }

    async fn scratch_db(tag: &str) -> String {
        super::scratch_db(tag).await
    }

    async fn exec(c: &mut Self::Client, sql: &str) -> Result<(), String> {
        c.batch_execute(sql).await.map_err(|e| match e.code() {
            Some(code) => code.code().to_string(),
            None => e.to_string(),
        })
    }

    async fn query_i64(c: &mut Self::Client, sql: &str) -> Option<i64> {
        let row = c.query_opt(sql, &[]).await.unwrap();
        row.map(|r| r.get(0))
    }

    async fn tables_ending(c: &mut Self::Client, suffix: &str) -> Vec<String> {
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

    async fn wait_for_lock_wait(url: &str, what: &str) -> Vec<u64> {
        let monitor = Self::client(url).await;
        wait_until(what, || someone_waits(&monitor)).await;
        vec![]
    }

    /// Terminates every backend of the database that waits for a lock now.
    async fn kill_lock_waiters(url: &str, _: Vec<u64>) {
        let monitor = Self::client(url).await;
        monitor
            .batch_execute(&format!("SELECT pg_terminate_backend(pid) {PG_WAITING}"))
            .await
            .unwrap();
    }
}

/// The MariaDB/MySQL server of `ISOHARNESS_MYSQL_URL`.
pub struct My;

/// The server the MySQL tests use.
fn my_admin_url() -> String {
    std::env::var("ISOHARNESS_MYSQL_URL").unwrap_or_else(|_| adapters::mysql::DEFAULT_URL.into())
}

/// The admin URL's user, password, host and port.
fn my_server() -> (String, Option<String>, String, u16) {
    let o = mysql_async::Opts::from_url(&my_admin_url()).expect("ISOHARNESS_MYSQL_URL must parse");
    (
        o.user().unwrap_or("root").to_string(),
        o.pass().map(String::from),
        o.ip_or_hostname().to_string(),
        o.tcp_port(),
    )
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

impl Server for My {
    type Client = mysql_async::Conn;
    const BEGIN: &'static str = "START TRANSACTION";
    const UNIQUE: &'static str = "1062: ";
    const DEADLOCK: (&'static str, &'static str) = ("1213", "1213: Deadlock found");
    const BEFORE_DEADLOCK: Option<&'static str> = None;
    const KILLED: Option<&'static str> = None;

    fn host_port() -> (String, u16) {
        let (_, _, host, port) = my_server();
        (host, port)
    }

    fn url_for(db: &str, at: Option<(&str, u16)>) -> String {
        let (user, pass, host, port) = my_server();
        let auth = match pass {
            Some(p) => format!("{user}:{p}"),
            None => user,
        };
        let (host, port) = at.map_or((host, port), |(h, p)| (h.to_string(), p));
        format!("mysql://{auth}@{host}:{port}/{db}")
    }

    async fn client(url: &str) -> Self::Client {
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

    async fn scratch_db(tag: &str) -> String {
        let mut c = Self::client(&my_admin_url()).await;
        let name = format!("ih_test_{tag}");
        c.query_drop(format!("DROP DATABASE IF EXISTS {name}"))
            .await
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        Self::url_for(&name, None)
    }

    /// Panics on anything but an error the server sent.
    async fn exec(c: &mut Self::Client, sql: &str) -> Result<(), String> {
        c.query_drop(sql).await.map_err(|e| match e {
            mysql_async::Error::Server(e) => e.code.to_string(),
            e => panic!("{e}"),
        })
    }

    async fn query_i64(c: &mut Self::Client, sql: &str) -> Option<i64> {
        c.query_first(sql).await.unwrap()
    }

    async fn tables_ending(c: &mut Self::Client, suffix: &str) -> Vec<String> {
        c.exec(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name LIKE CONCAT('%', ?) ORDER BY 1",
            (suffix,),
        )
        .await
        .unwrap()
    }

    /// Returns the ids of the waiting connections.
    async fn wait_for_lock_wait(url: &str, what: &str) -> Vec<u64> {
        let mut c = Self::client(url).await;
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

    /// Kills the connections `ids`.
    async fn kill_lock_waiters(url: &str, ids: Vec<u64>) {
        let mut killer = Self::client(url).await;
        for id in ids {
            killer.exec_drop("KILL CONNECTION ?", (id,)).await.unwrap();
        }
    }
}
