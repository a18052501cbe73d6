//! PostgreSQL through tokio-postgres: one connection per session, levels
//! read committed, repeatable read (snapshot isolation) and serializable.
//!
//! The connection and statement code ([`Family`], `PgConn`) is shared with
//! the YugabyteDB adapter ([`crate::yugabyte`]), which speaks YSQL, the
//! PostgreSQL protocol and dialect.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use history::Level;
use tokio_postgres::{Client, Config, NoTls, Statement};
use workloads::Schema;

use crate::error::{redact_url, scrub, AdapterError, ConnectFailure, DbError, ErrorClass};
use crate::exec::{parse_list, Conn, Notes, SqlSession};
use crate::tables::{Rendered, TableNames};
use crate::{normalize_isolation, Database, Isolation, OpenOptions, ReadLock, Session};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

mod tpcc;

/// All SQL this adapter (and YugabyteDB's) sends, in one place.
/// Parameters are `$N`.
pub(crate) mod sql {
    /// A plain read and its two locking variants.
    macro_rules! reads {
        ($plain:ident, $update:ident, $share:ident, $sql:literal) => {
            pub const $plain: &str = $sql;
            pub const $update: &str = concat!($sql, " FOR UPDATE");
            pub const $share: &str = concat!($sql, " FOR SHARE");
        };
    }

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
    pub const COMMIT: &str = "COMMIT";
    pub const ROLLBACK: &str = "ROLLBACK";
    pub const VERSION: &str = "SELECT version()";
    reads!(
        READ,
        READ_FOR_UPDATE,
        READ_SHARE,
        "SELECT v, tomb FROM isoharness_registers WHERE k = $1"
    );
    pub const INSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES ($1, $2, false)";
    pub const REVIVE: &str =
        "UPDATE isoharness_registers SET v = $2, tomb = false WHERE k = $1 AND tomb";
    pub const UPSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES ($1, $2, $3) \
         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, tomb = EXCLUDED.tomb";
    reads!(
        RANGE,
        RANGE_FOR_UPDATE,
        RANGE_SHARE,
        "SELECT k, v FROM isoharness_registers WHERE k BETWEEN $1 AND $2 ORDER BY k"
    );
    pub const APPEND: &str = "INSERT INTO isoharness_lists (k, v) VALUES ($1, $2) \
         ON CONFLICT (k) DO UPDATE SET v = isoharness_lists.v || ',' || EXCLUDED.v";
    reads!(
        READ_LIST,
        READ_LIST_FOR_UPDATE,
        READ_LIST_SHARE,
        "SELECT v FROM isoharness_lists WHERE k = $1"
    );
}

/// The read statements for one `--read-lock`.
#[derive(Clone, Copy, Debug)]
struct Reads {
    read: &'static str,
    range: &'static str,
    list: &'static str,
}

impl Reads {
    fn new(lock: ReadLock) -> Reads {
        match lock {
            ReadLock::Plain => Reads {
                read: sql::READ,
                range: sql::RANGE,
                list: sql::READ_LIST,
            },
            ReadLock::ForUpdate => Reads {
                read: sql::READ_FOR_UPDATE,
                range: sql::RANGE_FOR_UPDATE,
                list: sql::READ_LIST_FOR_UPDATE,
            },
            ReadLock::Share => Reads {
                read: sql::READ_SHARE,
                range: sql::RANGE_SHARE,
                list: sql::READ_LIST_SHARE,
            },
        }
    }
}

/// Read committed (shared with YugabyteDB).
pub(crate) const READ_COMMITTED: Isolation = Isolation {
    name: "read-committed",
    begin: sql::BEGIN_RC,
};
const REPEATABLE_READ: Isolation = Isolation {
    name: "repeatable-read",
    begin: sql::BEGIN_RR,
};
/// Serializable (shared with YugabyteDB).
pub(crate) const SERIALIZABLE: Isolation = Isolation {
    name: "serializable",
    begin: sql::BEGIN_SER,
};

/// How to start a server, appended to connection errors.
const HINT: &str =
    "; is the server running? Start one with `docker compose --profile postgres up -d`, \
     or `pg_ctl -D DATADIR -o '-p 5432' start`, or point --url at a running server";

/// One endpoint: its parsed config, its printable URL, its password.
pub(crate) struct Endpoint {
    config: Config,
    /// The URL as given, password redacted.
    pub(crate) shown: String,
    secret: Option<String>,
}

/// Classifies a server error by its SQLSTATE and message.
pub(crate) type Classifier = fn(&str, &str) -> ErrorClass;

/// What every adapter of the PostgreSQL family shares: the endpoints,
/// timeouts, read statements and the notes of what was skipped.
pub(crate) struct Family {
    /// `postgres` or `yugabyte`.
    db: &'static str,
    hint: &'static str,
    endpoints: Vec<Endpoint>,
    connect_timeout: Duration,
    statement_timeout: Duration,
    reads: Reads,
    classify: Classifier,
    /// What was skipped, said once.
    pub(crate) notes: Arc<Notes>,
    /// The run's table names.
    tables: TableNames,
    /// The connection that created the tables and holds the run's
    /// advisory lock until [`Family::teardown`].
    guard: tokio::sync::Mutex<Option<Client>>,
    /// True once `setup` created the tables (only those are dropped).
    owned: AtomicBool,
}

impl Family {
    /// Parses the `--url`s (default `default_url`); connects nowhere yet.
    pub(crate) fn new(
        db: &'static str,
        hint: &'static str,
        default_url: &str,
        classify: Classifier,
        opts: &OpenOptions,
    ) -> Result<Family, AdapterError> {
        let urls: Vec<&str> = if opts.urls.is_empty() {
            vec![default_url]
        } else {
            opts.urls.iter().map(String::as_str).collect()
        };
        let mut endpoints = Vec::with_capacity(urls.len());
        for url in urls {
            let shown = redact_url(url);
            let config = Config::from_str(url).map_err(|e| {
                AdapterError::Config(format!("{db}: cannot use --url {shown}: {e}"))
            })?;
            let secret = config
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned());
            endpoints.push(Endpoint {
                config,
                shown,
                secret,
            });
        }
        Ok(Family {
            db,
            hint,
            endpoints,
            connect_timeout: Duration::from_secs(3),
            statement_timeout: opts.statement_timeout,
            reads: Reads::new(opts.read_lock),
            classify,
            notes: Arc::default(),
            tables: opts.tables.clone(),
            guard: tokio::sync::Mutex::new(None),
            owned: AtomicBool::new(false),
        })
    }

    /// The endpoints, redacted, comma-separated.
    pub(crate) fn location(&self) -> String {
        let shown: Vec<&str> = self.endpoints.iter().map(|e| e.shown.as_str()).collect();
        shown.join(",")
    }

    /// The endpoint session `session` uses: round-robin.
    pub(crate) fn endpoint(&self, session: u64) -> &Endpoint {
        &self.endpoints[(session % self.endpoints.len() as u64) as usize]
    }

    /// Connects to `ep`, failing within the connect timeout with the
    /// redacted URL and the hint.
    pub(crate) async fn open(&self, ep: &Endpoint) -> Result<Client, AdapterError> {
        let fail = |detail: String, why: ConnectFailure| AdapterError::Connect {
            db: self.db,
            url: ep.shown.clone(),
            detail: scrub(&detail, ep.secret.as_deref()),
            hint: why.hint(self.hint),
        };
        let mut cfg = ep.config.clone();
        cfg.connect_timeout(self.connect_timeout);
        let limit = self.connect_timeout + Duration::from_secs(1);
        let (client, connection) = match tokio::time::timeout(limit, cfg.connect(NoTls)).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(fail(error_chain(&e), connect_failure(&e))),
            Err(_) => {
                return Err(fail(
                    format!("no answer within {} s", limit.as_secs()),
                    ConnectFailure::Other,
                ))
            }
        };
        tokio::spawn(async move {
            // Ends when the connection closes; errors reach the client.
            let _ = connection.await;
        });
        Ok(client)
    }

    /// A statement run while connecting failed: the session cannot start.
    pub(crate) fn init_error(&self, ep: &Endpoint, e: &tokio_postgres::Error) -> AdapterError {
        AdapterError::Connect {
            db: self.db,
            url: ep.shown.clone(),
            detail: classify_with(e, ep.secret.as_deref(), self.classify).text(),
            hint: String::new(),
        }
    }

    /// Creates the tables on the first endpoint, on a connection kept
    /// until [`Family::teardown`]. A run's own tables: first takes the
    /// run's advisory lock and refuses tables that exist already.
    pub(crate) async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        let ep = &self.endpoints[0];
        let fail = |detail: String| AdapterError::Setup {
            db: self.db,
            url: ep.shown.clone(),
            detail,
        };
        let db_err = |e: &tokio_postgres::Error| {
            classify_with(e, ep.secret.as_deref(), self.classify).text()
        };
        let mut guard = self.guard.lock().await;
        let client = match guard.take() {
            Some(c) if !c.is_closed() => c,
            _ => self.open(ep).await?,
        };
        let client = &*guard.insert(client);
        if self.tables.suffix().is_some() && !self.owned.load(Ordering::Relaxed) {
            let names = self.tables.for_schema(schema);
            let lock = self.tables.lock_name();
            match client
                .query_one(sql::TRY_LOCK, &[&self.tables.lock_key()])
                .await
            {
                Ok(row) => {
                    if !row.try_get::<_, bool>(0).map_err(|e| fail(db_err(&e)))? {
                        return Err(fail(format!(
                            "the tables {} belong to another run that is still running \
                             (it holds the advisory lock {lock})",
                            names.join(", ")
                        )));
                    }
                }
                // A server without advisory locks: the run's own table
                // names still keep runs apart.
                Err(e) => self.notes.add(format!(
                    "{}: could not take the advisory lock {lock} ({}); relying on the \
                     run's own table names",
                    self.db,
                    db_err(&e)
                )),
            }
            let rows = client
                .query(sql::EXISTING, &[&names])
                .await
                .map_err(|e| fail(db_err(&e)))?;
            if let Some(row) = rows.first() {
                let name: String = row.try_get(0).map_err(|e| fail(db_err(&e)))?;
                return Err(fail(format!(
                    "table {name} already exists: it belongs to another run (or one kept \
                     with --keep-tables); this run will not touch it"
                )));
            }
        }
        let script = match schema {
            Schema::Registers => sql::SETUP_REGISTERS,
            Schema::Lists => sql::SETUP_LISTS,
            Schema::Tpcc => tpcc::SETUP,
        };
        client
            .batch_execute(&self.tables.render(script))
            .await
            .map_err(|e| fail(db_err(&e)))?;
        self.owned.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Drops the tables `setup` created (unless `keep`) and closes the
    /// connection that holds the run's lock, which releases it.
    pub(crate) async fn teardown(&self, keep: bool) -> Result<(), AdapterError> {
        let held = self.guard.lock().await.take();
        if !self.owned.swap(false, Ordering::Relaxed) || keep {
            // Release the lock now: a closed connection releases it only
            // once the server notices, and the next run may come first.
            if let Some(c) = held.filter(|c| !c.is_closed()) {
                let _ = c.query_one(sql::UNLOCK, &[&self.tables.lock_key()]).await;
            }
            return Ok(());
        }
        let ep = &self.endpoints[0];
        let client = match held {
            Some(c) if !c.is_closed() => c,
            _ => self.open(ep).await?,
        };
        let drop = format!(
            "DROP TABLE IF EXISTS {}",
            self.tables.all_tables().join(", ")
        );
        let dropped = client.batch_execute(&drop).await;
        let _ = client
            .query_one(sql::UNLOCK, &[&self.tables.lock_key()])
            .await;
        dropped.map_err(|e| AdapterError::Setup {
            db: self.db,
            url: ep.shown.clone(),
            detail: format!(
                "dropping the run's tables: {}",
                classify_with(&e, ep.secret.as_deref(), self.classify).text()
            ),
        })
    }

    /// Opens a connection for `session` on its endpoint, with the session
    /// settings every member of the family runs.
    pub(crate) async fn connect(&self, session: u64) -> Result<(Client, &Endpoint), AdapterError> {
        let ep = self.endpoint(session);
        let client = self.open(ep).await?;
        if let Err(e) = client.batch_execute(sql::SESSION_INIT).await {
            return Err(self.init_error(ep, &e));
        }
        Ok((client, ep))
    }

    /// The server's `version()` string.
    pub(crate) async fn version(
        &self,
        ep: &Endpoint,
        client: &Client,
    ) -> Result<String, AdapterError> {
        match client.query_one(sql::VERSION, &[]).await {
            Ok(row) => row.try_get(0).map_err(|e| self.init_error(ep, &e)),
            Err(e) => Err(self.init_error(ep, &e)),
        }
    }

    /// Wraps a connected client into a session; `rc_check` says, when a
    /// read committed transaction runs, what its probe found (YugabyteDB).
    pub(crate) fn session(
        &self,
        ep: &Endpoint,
        client: Client,
        rc_check: Option<Arc<RcCheck>>,
    ) -> Box<dyn Session> {
        Box::new(SqlSession::new(
            PgConn {
                client,
                stmts: HashMap::new(),
                sql: Rendered::new(self.tables.clone()),
                secret: ep.secret.clone(),
                reads: self.reads,
                classify: self.classify,
                rc_check,
            },
            self.statement_timeout,
        ))
    }
}

/// Whether the database really runs READ COMMITTED at read committed
/// (YugabyteDB runs it as snapshot isolation unless a server flag enables
/// it): probed once per run outside any transaction of the workload, and
/// told in the notes when a read committed transaction runs.
pub(crate) struct RcCheck {
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
pub struct Postgres {
    family: Family,
}

impl Postgres {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Postgres, AdapterError> {
        let classify: Classifier = |code, _| classify_sqlstate(code);
        Ok(Postgres {
            family: Family::new("postgres", HINT, DEFAULT_URL, classify, opts)?,
        })
    }
}

/// The error and its causes, joined (tokio-postgres puts the OS error in
/// the source).
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

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The isolation PostgreSQL runs at to promise `level`, or the one named
/// by `--isolation`.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    if let Some(name) = explicit {
        return match normalize_isolation(name).as_str() {
            "read-committed" => Ok(READ_COMMITTED),
            "repeatable-read" => Ok(REPEATABLE_READ),
            "serializable" => Ok(SERIALIZABLE),
            _ => Err(AdapterError::Isolation(format!(
                "postgres has no isolation level {name:?}; use one of: \
                 read-committed, repeatable-read, serializable"
            ))),
        };
    }
    Ok(match level {
        Level::Rc => READ_COMMITTED,
        // Repeatable read is snapshot isolation, which implies the weaker
        // levels; strong session SI holds on one node, since a session's
        // later snapshot includes its own commits.
        Level::Ra | Level::Cc | Level::Pc | Level::Si | Level::StrongSessionSi => REPEATABLE_READ,
        Level::StrongSi | Level::Ser | Level::StrongSessionSer | Level::Sser => SERIALIZABLE,
    })
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

#[async_trait]
impl Database for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn location(&self) -> String {
        self.family.location()
    }

    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        isolation(level, explicit)
    }

    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        self.family.setup(schema).await
    }

    async fn teardown(&self, keep_tables: bool) -> Result<(), AdapterError> {
        self.family.teardown(keep_tables).await
    }

    async fn connect(&self, session: u64) -> Result<Box<dyn Session>, AdapterError> {
        let (client, ep) = self.family.connect(session).await?;
        Ok(self.family.session(ep, client, None))
    }

    fn warnings(&self) -> Vec<String> {
        self.family.notes.all()
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
        let st = self.stmt(self.reads.read).await?;
        let row = self
            .client
            .query_opt(&st, &[&k])
            .await
            .map_err(|e| self.err(e))?;
        match row {
            None => Ok(None),
            Some(r) => {
                let v: i64 = r.try_get(0).map_err(|e| self.err(e))?;
                let tomb: bool = r.try_get(1).map_err(|e| self.err(e))?;
                Ok(Some((v, tomb)))
            }
        }
    }

    async fn insert(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        let st = self.stmt(sql::INSERT).await?;
        let r = self.client.execute(&st, &[&k, &v]).await;
        r.map(|_| ()).map_err(|e| self.err(e))
    }

    async fn revive(&mut self, k: i64, v: i64) -> Result<bool, DbError> {
        let st = self.stmt(sql::REVIVE).await?;
        let r = self.client.execute(&st, &[&k, &v]).await;
        r.map(|n| n == 1).map_err(|e| self.err(e))
    }

    async fn upsert(&mut self, k: i64, v: i64, tomb: bool) -> Result<(), DbError> {
        let st = self.stmt(sql::UPSERT).await?;
        let r = self.client.execute(&st, &[&k, &v, &tomb]).await;
        r.map(|_| ()).map_err(|e| self.err(e))
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
        let st = self.stmt(sql::APPEND).await?;
        let text = v.to_string();
        let r = self.client.execute(&st, &[&k, &text]).await;
        r.map(|_| ()).map_err(|e| self.err(e))
    }

    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, DbError> {
        let st = self.stmt(self.reads.list).await?;
        let row = self
            .client
            .query_opt(&st, &[&k])
            .await
            .map_err(|e| self.err(e))?;
        match row {
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
        assert_eq!(want.len(), Level::ALL.len());
        for (level, name, begin) in want {
            let iso = isolation(level, None).unwrap();
            assert_eq!((iso.name, iso.begin), (name, begin), "{level}");
        }
    }

    #[test]
    fn explicit_isolation_overrides_the_level() {
        let iso = isolation(Level::Sser, Some("read-committed")).unwrap();
        assert_eq!(iso.name, "read-committed");
        assert_eq!(
            isolation(Level::Rc, Some("SERIALIZABLE")).unwrap().name,
            "serializable"
        );
        assert_eq!(
            isolation(Level::Rc, Some("repeatable_read")).unwrap().name,
            "repeatable-read"
        );
        let e = isolation(Level::Si, Some("snapshot"))
            .unwrap_err()
            .to_string();
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
    fn read_locks_pick_the_statements() {
        assert_eq!(Reads::new(ReadLock::Plain).read, sql::READ);
        assert!(Reads::new(ReadLock::ForUpdate)
            .range
            .ends_with(" ORDER BY k FOR UPDATE"));
        assert!(Reads::new(ReadLock::Share).list.ends_with(" FOR SHARE"));
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
        let dflt = Postgres::new(&OpenOptions::new(vec![], Default::default())).unwrap();
        assert_eq!(dflt.location(), DEFAULT_URL);
        let bad = OpenOptions::new(
            vec!["postgres://u:pw@h:notaport/db".into()],
            Default::default(),
        );
        let e = Postgres::new(&bad).err().unwrap().to_string();
        assert!(!e.contains("pw@"), "{e}");
        assert!(e.contains("u:***@h"), "{e}");
    }
}
