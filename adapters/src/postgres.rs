//! PostgreSQL through tokio-postgres: one connection per session, levels
//! read committed, repeatable read (snapshot isolation) and serializable.
//!
//! The protocol ([`Pg`]: connecting, the run's advisory lock, the tables)
//! and the connection (`PgConn`) are shared with the YugabyteDB dialect
//! ([`crate::yugabyte`]), which speaks YSQL, the PostgreSQL protocol and
//! dialect.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use history::Level;
use tokio_postgres::{Client, Config, NoTls, Statement};
use workloads::Schema;

use crate::error::{error_chain, scrub, AdapterError, ConnectFailure, DbError, ErrorClass};
use crate::exec::{parse_list, Conn, Notes, SqlSession};
use crate::family::{
    ansi, read_statements, Endpoint, Family, Levels, Lock, OwnParams, Protocol, Reads, SqlDatabase,
};
use crate::tables::{Rendered, TableNames};
use crate::{Isolation, OpenOptions, Session};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

mod tpcc;

/// All SQL this adapter (and YugabyteDB's) sends, in one place.
/// Parameters are `$N`.
pub(crate) mod sql {
    pub use crate::family::{COMMIT, ROLLBACK};

    pub const SETUP_REGISTERS: &str = "SET lock_timeout = '10s'; \
         DROP TABLE IF EXISTS isoharness_registers, isoharness_lists; \
         CREATE TABLE isoharness_registers (k BIGINT PRIMARY KEY, v BIGINT NOT NULL, \
         tomb BOOLEAN NOT NULL DEFAULT false);";
    pub const SETUP_LISTS: &str = "SET lock_timeout = '10s'; \
         DROP TABLE IF EXISTS isoharness_registers, isoharness_lists; \
         CREATE TABLE isoharness_lists (k BIGINT PRIMARY KEY, v TEXT NOT NULL);";
    /// Takes the run's advisory lock without waiting: true when taken.
    pub const TRY_LOCK: &str = "SELECT pg_try_advisory_lock($1)";
    /// Gives the run's advisory lock back.
    pub const UNLOCK: &str = "SELECT pg_advisory_unlock($1)";
    /// Which of the tables named in $1 already exist in the schema.
    pub const EXISTING: &str = "SELECT tablename::text FROM pg_catalog.pg_tables \
         WHERE schemaname = current_schema() AND tablename = ANY($1) ORDER BY 1";
    /// Run on every new session: a lock wait ends in a clean 55P03 before
    /// the harness's own statement timeout abandons the connection.
    pub const SESSION_INIT: &str = "SET lock_timeout = '10s'";
    pub const BEGIN_RC: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";
    pub const BEGIN_RR: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    pub const BEGIN_SER: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE";
    pub const VERSION: &str = "SELECT version()";
    pub const INSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES ($1, $2, false)";
    pub const REVIVE: &str =
        "UPDATE isoharness_registers SET v = $2, tomb = false WHERE k = $1 AND tomb";
    pub const UPSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES ($1, $2, $3) \
         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, tomb = EXCLUDED.tomb";
    pub const APPEND: &str = "INSERT INTO isoharness_lists (k, v) VALUES ($1, $2) \
         ON CONFLICT (k) DO UPDATE SET v = isoharness_lists.v || ',' || EXCLUDED.v";
}

/// Read committed (shared with YugabyteDB).
pub(crate) const READ_COMMITTED: Isolation = Isolation::new("read-committed", sql::BEGIN_RC);
const REPEATABLE_READ: Isolation = Isolation::new("repeatable-read", sql::BEGIN_RR);
/// Serializable (shared with YugabyteDB).
pub(crate) const SERIALIZABLE: Isolation = Isolation::new("serializable", sql::BEGIN_SER);

/// How to start a server, appended to connection errors.
const HINT: &str =
    "; is the server running? Start one with `docker compose --profile postgres up -d`, \
     or `pg_ctl -D DATADIR -o '-p 5432' start`, or point --url at a running server";

/// Classifies a server error by its SQLSTATE and message.
pub(crate) type Classifier = fn(&str, &str) -> ErrorClass;

/// The PostgreSQL protocol through tokio-postgres.
pub struct Pg;

#[async_trait]
impl Protocol for Pg {
    type Opts = Config;
    type Conn = Client;
    type Classify = Classifier;
    const LOCK: &'static str = "advisory lock";
    const READS: [Reads; 3] = read_statements!(
        " FOR SHARE",
        "SELECT v, tomb FROM isoharness_registers WHERE k = $1",
        "SELECT k, v FROM isoharness_registers WHERE k BETWEEN $1 AND $2 ORDER BY k",
        "SELECT v FROM isoharness_lists WHERE k = $1"
    );
    const CONNECT_GRACE: Duration = Duration::from_secs(1);

    fn parse(url: &str, _: &[&str]) -> Result<(Config, Option<String>, OwnParams), String> {
        let config = Config::from_str(url).map_err(|e| e.to_string())?;
        let secret = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        Ok((config, secret, Vec::new()))
    }

    async fn connect(
        config: &Config,
        timeout: Duration,
    ) -> Result<Client, (String, ConnectFailure)> {
        let mut cfg = config.clone();
        cfg.connect_timeout(timeout);
        let (client, connection) = cfg
            .connect(NoTls)
            .await
            .map_err(|e| (error_chain(&e), connect_failure(&e)))?;
        tokio::spawn(async move {
            // Ends when the connection closes; errors reach the client.
            let _ = connection.await;
        });
        Ok(client)
    }

    fn usable(client: &Client) -> bool {
        !client.is_closed()
    }

    fn tables_script(_: &str, schema: &Schema) -> Result<&'static [&'static str], AdapterError> {
        Ok(match schema {
            Schema::Registers => &[sql::SETUP_REGISTERS],
            Schema::Lists => &[sql::SETUP_LISTS],
            Schema::Tpcc => tpcc::setup(),
        })
    }

    async fn batch(client: &mut Client, sql: &str, secret: Option<&str>) -> Result<(), String> {
        let r = client.batch_execute(sql).await;
        r.map_err(|e| classify(&e, secret).text())
    }

    async fn try_lock(
        client: &mut Client,
        tables: &TableNames,
        secret: Option<&str>,
    ) -> Result<Lock, String> {
        match client.query_one(sql::TRY_LOCK, &[&tables.lock_key()]).await {
            Ok(row) => match row.try_get::<_, bool>(0) {
                Ok(true) => Ok(Lock::Taken),
                Ok(false) => Ok(Lock::Held),
                Err(e) => Err(classify(&e, secret).text()),
            },
            Err(e) => Ok(Lock::Unknown(classify(&e, secret).text())),
        }
    }

    async fn existing(
        client: &mut Client,
        names: &[String],
        secret: Option<&str>,
    ) -> Result<Option<String>, String> {
        let err = |e| classify(&e, secret).text();
        let rows = client.query(sql::EXISTING, &[&names]).await.map_err(err)?;
        rows.first().map(|r| r.try_get(0)).transpose().map_err(err)
    }

    async fn unlock(client: &mut Client, tables: &TableNames) {
        let _ = client.query_one(sql::UNLOCK, &[&tables.lock_key()]).await;
    }

    async fn close(_: Client) {
        // Dropping the client ends the connection task; nothing to flush.
    }

    const VERSION: &'static str = sql::VERSION;

    async fn text(client: &mut Client, sql: &str) -> Option<String> {
        let row = client.query_opt(sql, &[]).await.ok()??;
        row.try_get::<_, String>(0).ok()
    }

    async fn init(
        family: &Family<Pg>,
        ep: &Endpoint<Config>,
        client: &mut Client,
    ) -> Result<(), AdapterError> {
        let r = client.batch_execute(sql::SESSION_INIT).await;
        r.map_err(|e| family.init_error(ep, &e))
    }

    /// When a read committed transaction runs, the check says what its
    /// probe found (YugabyteDB).
    type Extra = Option<Arc<RcCheck>>;

    fn session(
        family: &Family<Pg>,
        ep: &Endpoint<Config>,
        client: Client,
        rc_check: Option<Arc<RcCheck>>,
    ) -> Box<dyn Session> {
        Box::new(SqlSession::new(
            PgConn {
                client,
                stmts: HashMap::new(),
                sql: Rendered::new(family.tables.clone()),
                secret: ep.secret.clone(),
                reads: family.reads,
                classify: family.classify,
                rc_check,
            },
            family.limits.clone(),
        ))
    }
}

impl Family<Pg> {
    /// A statement run while connecting failed: the session cannot start.
    pub(crate) fn init_error(
        &self,
        ep: &Endpoint<Config>,
        e: &tokio_postgres::Error,
    ) -> AdapterError {
        AdapterError::Connect {
            db: self.db,
            url: ep.shown.clone(),
            detail: classify_with(e, ep.secret.as_deref(), self.classify).text(),
            hint: String::new(),
        }
    }

    /// The server's `version()` string.
    pub(crate) async fn version(
        &self,
        ep: &Endpoint<Config>,
        client: &Client,
    ) -> Result<String, AdapterError> {
        match client.query_one(sql::VERSION, &[]).await {
            Ok(row) => row.try_get(0).map_err(|e| self.init_error(ep, &e)),
            Err(e) => Err(self.init_error(ep, &e)),
        }
    }
}

/// Whether the database really runs READ COMMITTED at read committed
/// (YugabyteDB runs it as snapshot isolation unless a server flag enables
/// it): probed once per run outside any transaction of the workload, and
/// told in the notes when a read committed transaction runs.
pub struct RcCheck {
    /// The database's name, for the notes.
    db: &'static str,
    /// The statement that returns the level in effect.
    sql: &'static str,
    /// What a level that is not read committed means.
    warning: &'static str,
    /// What the probe found: the warning to give, or `None` when read
    /// committed is real; unset until the probe ran.
    found: std::sync::OnceLock<Option<String>>,
    /// Where the warning goes.
    notes: Arc<Notes>,
}

impl RcCheck {
    /// A check of `db` with `sql` (returning the level in effect) that
    /// says `warning` into `notes`.
    pub(crate) fn new(
        db: &'static str,
        sql: &'static str,
        warning: &'static str,
        notes: Arc<Notes>,
    ) -> RcCheck {
        RcCheck {
            db,
            sql,
            warning,
            found: std::sync::OnceLock::new(),
            notes,
        }
    }

    /// Probes on `client` in a transaction of its own, once per run.
    pub(crate) async fn probe(&self, client: &Client) {
        if self.found.get().is_some() {
            return;
        }
        let level = async {
            client.batch_execute(sql::BEGIN_RC).await?;
            let row = client.query_one(self.sql, &[]).await;
            let _ = client.batch_execute(sql::ROLLBACK).await;
            row?.try_get::<_, String>(0)
        }
        .await;
        let warning = match level {
            Ok(l) if l.eq_ignore_ascii_case("read committed") => None,
            Ok(l) => Some(format!("{} (the server says {l:?})", self.warning)),
            Err(e) => Some(format!(
                "{}: could not check that READ COMMITTED is read committed (`{}`: {})",
                self.db,
                self.sql,
                error_chain(&e)
            )),
        };
        let _ = self.found.set(warning);
    }

    /// A read committed transaction runs: say what the probe found.
    fn read_committed_runs(&self) {
        if let Some(Some(w)) = self.found.get() {
            self.notes.add(w.clone());
        }
    }
}

/// The PostgreSQL adapter.
pub type Postgres = SqlDatabase<Pg, Levels>;

impl Postgres {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Postgres, AdapterError> {
        let by_code: Classifier = |code, _| classify_sqlstate(code);
        SqlDatabase::plain(("postgres", HINT, DEFAULT_URL), by_code, opts, isolation)
    }
}

/// Why connecting failed, from the server's SQLSTATE or the IO error.
fn connect_failure(e: &tokio_postgres::Error) -> ConnectFailure {
    if let Some(db) = e.as_db_error() {
        return ConnectFailure::from_sqlstate(db.code().code());
    }
    if e.to_string().contains("password missing") {
        return ConnectFailure::Auth;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cur {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return ConnectFailure::from_io(io);
        }
        cur = c.source();
    }
    ConnectFailure::Other
}

/// The isolation PostgreSQL runs at to promise `level`, or the one named
/// by `--isolation`.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    // Repeatable read is snapshot isolation, which implies the weaker
    // levels; strong session SI holds on one node, since a session's
    // later snapshot includes its own commits.
    let settings = [READ_COMMITTED, REPEATABLE_READ, SERIALIZABLE];
    ansi("postgres", level, explicit, settings, SERIALIZABLE)
}

/// What a SQLSTATE means for the transaction.
pub fn classify_sqlstate(code: &str) -> ErrorClass {
    match code {
        "40001" => ErrorClass::Serialization,
        "40P01" => ErrorClass::Deadlock,
        "23505" => ErrorClass::UniqueViolation,
        // lock_not_available (lock_timeout), query_canceled (statement_timeout)
        "55P03" | "57014" => ErrorClass::LockTimeout,
        // statement_completion_unknown: the server itself does not know
        "40003" => ErrorClass::ConnectionLost,
        // admin/crash shutdown, cannot connect now, database dropped
        "57P01" | "57P02" | "57P03" | "57P04" | "57P05" => ErrorClass::ConnectionLost,
        c if c.starts_with("08") => ErrorClass::ConnectionLost,
        _ => ErrorClass::Statement,
    }
}

/// Classifies a tokio-postgres error: by SQLSTATE when the server sent one,
/// otherwise (closed socket, IO, protocol) as a lost connection.
pub fn classify(e: &tokio_postgres::Error, secret: Option<&str>) -> DbError {
    classify_with(e, secret, |code, _| classify_sqlstate(code))
}

/// [`classify`] with the family member's classifier of server errors.
pub(crate) fn classify_with(
    e: &tokio_postgres::Error,
    secret: Option<&str>,
    by_code: Classifier,
) -> DbError {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            DbError {
                class: by_code(code, db.message()),
                code: code.to_string(),
                message: scrub(db.message(), secret),
            }
        }
        None => DbError {
            class: ErrorClass::ConnectionLost,
            code: ErrorClass::ConnectionLost.name().into(),
            message: scrub(&error_chain(e), secret),
        },
    }
}

/// One connection of the PostgreSQL family with its prepared statements.
struct PgConn {
    client: Client,
    stmts: HashMap<&'static str, Statement>,
    /// The statements' text with the run's table names.
    sql: Rendered,
    secret: Option<String>,
    reads: Reads,
    classify: Classifier,
    rc_check: Option<Arc<RcCheck>>,
}

impl PgConn {
    fn err(&self, e: tokio_postgres::Error) -> DbError {
        classify_with(&e, self.secret.as_deref(), self.classify)
    }

    /// The prepared statement for `sql`, preparing it on first use.
    async fn stmt(&mut self, sql: &'static str) -> Result<Statement, DbError> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let text = self.sql.get(sql);
        let s = self.client.prepare(&text).await.map_err(|e| self.err(e))?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }

    /// Runs the prepared `sql` with `params`: the rows it changed.
    async fn run_prepared(
        &mut self,
        sql: &'static str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, DbError> {
        let st = self.stmt(sql).await?;
        let r = self.client.execute(&st, params).await;
        r.map_err(|e| self.err(e))
    }

    /// Runs the prepared single-row query `sql` with `params`.
    async fn query_row(
        &mut self,
        sql: &'static str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<tokio_postgres::Row>, DbError> {
        let st = self.stmt(sql).await?;
        let r = self.client.query_opt(&st, params).await;
        r.map_err(|e| self.err(e))
    }

    async fn simple(&mut self, sql: &'static str) -> Result<(), DbError> {
        self.client
            .batch_execute(sql)
            .await
            .map_err(|e| self.err(e))
    }
}

#[async_trait]
impl Conn for PgConn {
    async fn begin(&mut self, iso: &Isolation) -> Result<(), DbError> {
        let sql = match iso.begin {
            sql::BEGIN_RC => sql::BEGIN_RC,
            sql::BEGIN_RR => sql::BEGIN_RR,
            _ => sql::BEGIN_SER,
        };
        if sql == sql::BEGIN_RC {
            if let Some(check) = &self.rc_check {
                check.read_committed_runs();
            }
        }
        self.simple(sql).await
    }

    async fn read(&mut self, k: i64) -> Result<Option<(i64, bool)>, DbError> {
        match self.query_row(self.reads.read, &[&k]).await? {
            None => Ok(None),
            Some(r) => {
                let v: i64 = r.try_get(0).map_err(|e| self.err(e))?;
                let tomb: bool = r.try_get(1).map_err(|e| self.err(e))?;
                Ok(Some((v, tomb)))
            }
        }
    }

    async fn insert(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        self.run_prepared(sql::INSERT, &[&k, &v]).await.map(|_| ())
    }

    async fn revive(&mut self, k: i64, v: i64) -> Result<bool, DbError> {
        Ok(self.run_prepared(sql::REVIVE, &[&k, &v]).await? == 1)
    }

    async fn upsert(&mut self, k: i64, v: i64, tomb: bool) -> Result<(), DbError> {
        self.run_prepared(sql::UPSERT, &[&k, &v, &tomb])
            .await
            .map(|_| ())
    }

    async fn range(&mut self, lo: i64, hi: i64) -> Result<Vec<(i64, i64)>, DbError> {
        let st = self.stmt(self.reads.range).await?;
        let rows = self
            .client
            .query(&st, &[&lo, &hi])
            .await
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let k: i64 = r.try_get(0).map_err(|e| self.err(e))?;
            let v: i64 = r.try_get(1).map_err(|e| self.err(e))?;
            out.push((k, v));
        }
        Ok(out)
    }

    async fn append(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        let text = v.to_string();
        self.run_prepared(sql::APPEND, &[&k, &text])
            .await
            .map(|_| ())
    }

    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, DbError> {
        match self.query_row(self.reads.list, &[&k]).await? {
            None => Ok(Vec::new()),
            Some(r) => {
                let text: String = r.try_get(0).map_err(|e| self.err(e))?;
                parse_list(&text)
            }
        }
    }

    async fn commit(&mut self) -> Result<(), DbError> {
        self.simple(sql::COMMIT).await
    }

    async fn rollback(&mut self) -> Result<(), DbError> {
        self.simple(sql::ROLLBACK).await
    }

    async fn close(&mut self) {
        // Dropping the client ends the connection task; nothing to flush.
    }

    fn tpcc(&mut self) -> Option<&mut dyn crate::tpcc::TpccConn> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    #[test]
    fn read_locks_pick_the_statements() {
        crate::family::check_read_locks::<Pg>(" FOR SHARE");
    }

    #[test]
    fn levels_map_to_the_weakest_setting_that_promises_them() {
        use Level::*;
        let want = [
            (Rc, "read-committed", "BEGIN ISOLATION LEVEL READ COMMITTED"),
            (
                Ra,
                "repeatable-read",
                "BEGIN ISOLATION LEVEL REPEATABLE READ",
            ),
            (
                Cc,
                "repeatable-read",
                "BEGIN ISOLATION LEVEL REPEATABLE READ",
            ),
            (
                Pc,
                "repeatable-read",
                "BEGIN ISOLATION LEVEL REPEATABLE READ",
            ),
            (
                Si,
                "repeatable-read",
                "BEGIN ISOLATION LEVEL REPEATABLE READ",
            ),
            (
                StrongSessionSi,
                "repeatable-read",
                "BEGIN ISOLATION LEVEL REPEATABLE READ",
            ),
            (
                StrongSi,
                "serializable",
                "BEGIN ISOLATION LEVEL SERIALIZABLE",
            ),
            (Ser, "serializable", "BEGIN ISOLATION LEVEL SERIALIZABLE"),
            (
                StrongSessionSer,
                "serializable",
                "BEGIN ISOLATION LEVEL SERIALIZABLE",
            ),
            (Sser, "serializable", "BEGIN ISOLATION LEVEL SERIALIZABLE"),
        ];
        crate::family::check_levels(isolation, &want);
        // --isolation overrides the level.
        let names = [
            (Level::Sser, "read-committed", "read-committed"),
            (Level::Rc, "SERIALIZABLE", "serializable"),
            (Level::Rc, "repeatable_read", "repeatable-read"),
        ];
        crate::family::check_names(isolation, &names);
        let e = isolation(Level::Si, Some("snapshot")).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("\"snapshot\"") && e.contains("repeatable-read"),
            "{e}"
        );
    }

    #[test]
    fn sqlstates_are_classified() {
        assert_eq!(classify_sqlstate("40001"), ErrorClass::Serialization);
        assert_eq!(classify_sqlstate("40P01"), ErrorClass::Deadlock);
        assert_eq!(classify_sqlstate("23505"), ErrorClass::UniqueViolation);
        assert_eq!(classify_sqlstate("55P03"), ErrorClass::LockTimeout);
        assert_eq!(classify_sqlstate("57014"), ErrorClass::LockTimeout);
        assert_eq!(classify_sqlstate("57P01"), ErrorClass::ConnectionLost);
        assert_eq!(classify_sqlstate("08006"), ErrorClass::ConnectionLost);
        assert_eq!(classify_sqlstate("40003"), ErrorClass::ConnectionLost);
        assert_eq!(classify_sqlstate("42P01"), ErrorClass::Statement);
        assert_eq!(classify_sqlstate("23502"), ErrorClass::Statement);
    }

    /// Needs the PostgreSQL server of the other tests (`ISOHARNESS_PG_URL`).
    #[tokio::test]
    async fn the_read_committed_probe_warns_only_when_it_is_not_read_committed() {
        let url = std::env::var("ISOHARNESS_PG_URL").unwrap_or_else(|_| DEFAULT_URL.into());
        let pg = Postgres::new(&OpenOptions::new(vec![url], Default::default())).unwrap();
        let (client, _) = pg
            .family
            .connect(0)
            .await
            .expect("PostgreSQL must run (.ci/services) or ISOHARNESS_PG_URL name one");
        let notes = Arc::new(Notes::default());
        let probe = |sql| RcCheck::new("yugabyte", sql, "downgraded", Arc::clone(&notes));
        let real = probe("SHOW transaction_isolation");
        real.read_committed_runs();
        real.probe(&client).await;
        real.read_committed_runs();
        assert!(notes.all().is_empty(), "{:?}", notes.all());
        let fake = probe("SELECT 'repeatable read'::text");
        fake.probe(&client).await;
        assert!(notes.all().is_empty(), "said only when rc runs");
        fake.read_committed_runs();
        fake.read_committed_runs();
        assert_eq!(
            notes.all(),
            vec!["downgraded (the server says \"repeatable read\")".to_string()]
        );
        let broken = probe("SHOW no_such_setting_here");
        broken.probe(&client).await;
        broken.read_committed_runs();
        let all = notes.all();
        assert_eq!(all.len(), 2);
        assert!(all[1].starts_with("yugabyte: could not check"), "{all:?}");
        // The probe left no transaction open: a new statement runs in a
        // transaction of its own, at the session's default level.
        client
            .batch_execute("SET default_transaction_isolation = 'serializable'")
            .await
            .unwrap();
        let row = client
            .query_one("SHOW transaction_isolation", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "serializable");
    }

    #[test]
    fn sessions_go_to_the_endpoints_round_robin() {
        let opts = OpenOptions::new(
            vec!["postgres://u@a/db".into(), "postgres://u@b/db".into()],
            Default::default(),
        );
        let pg = Postgres::new(&opts).unwrap();
        let hosts: Vec<&str> = (0..4)
            .map(|s| pg.family.endpoint(s).shown.as_str())
            .collect();
        assert_eq!(
            hosts,
            [
                "postgres://u@a/db",
                "postgres://u@b/db",
                "postgres://u@a/db",
                "postgres://u@b/db"
            ]
        );
    }

    #[test]
    fn urls_are_parsed_and_shown_redacted() {
        let opts = OpenOptions::new(
            vec!["postgres://alice:s3cret@db.example:5433/app".into()],
            Default::default(),
        );
        let pg = Postgres::new(&opts).unwrap();
        assert_eq!(pg.location(), "postgres://alice:***@db.example:5433/app");
        assert_eq!(pg.family.endpoints[0].secret.as_deref(), Some("s3cret"));
        let bad = "postgres://u:pw@h:notaport/db";
        let e = crate::family::check_default_and_bad(Postgres::new, DEFAULT_URL, bad);
        assert!(e.contains("u:***@h"), "{e}");
    }
}
