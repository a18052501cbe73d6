//! MySQL 8 and MariaDB 10.11+ through mysql_async: one connection per
//! session, the isolation level set per session (`SET SESSION TRANSACTION
//! ISOLATION LEVEL ...`), reads as plain `SELECT` or locking reads
//! (`--read-lock`).
//!
//! InnoDB's repeatable read is not snapshot isolation: its reads come from
//! a snapshot, but its writes update the latest version, so two
//! transactions that read and then write one row both commit (a lost
//! update). That is what `--isolation repeatable-read --level si` shows.
//!
//! The connection, statement and error code here is shared with the TiDB
//! adapter ([`crate::tidb`]), which speaks the same protocol.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use history::{DbTs, Level};
use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder};
use workloads::Schema;

use crate::error::{redact_url, scrub, AdapterError, ConnectFailure, DbError, ErrorClass};
use crate::exec::{parse_list, Conn, Notes, SqlSession};
use crate::tables::{Rendered, TableNames};
use crate::{normalize_isolation, Database, Isolation, OpenOptions, ReadLock, Session};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// How to start a server, appended to connection errors.
const HINT: &str =
    "; is the server running? Start one with `docker compose --profile mysql up -d`, \
     or point --url at a running MySQL or MariaDB";

/// All SQL of the MySQL dialect (MySQL, MariaDB, TiDB), in one place.
/// Parameters are `?`.
pub(crate) mod sql {
    /// A plain read and its two locking variants.
    macro_rules! reads {
        ($plain:ident, $update:ident, $share:ident, $sql:literal) => {
            pub const $plain: &str = $sql;
            pub const $update: &str = concat!($sql, " FOR UPDATE");
            pub const $share: &str = concat!($sql, " LOCK IN SHARE MODE");
        };
    }

    pub const DROP: &str = "DROP TABLE IF EXISTS isoharness_registers, isoharness_lists";
    pub const CREATE_REGISTERS: &str = "CREATE TABLE isoharness_registers \
         (k BIGINT PRIMARY KEY, v BIGINT NOT NULL, tomb BOOLEAN NOT NULL DEFAULT false) \
         ENGINE=InnoDB";
    pub const CREATE_LISTS: &str =
        "CREATE TABLE isoharness_lists (k BIGINT PRIMARY KEY, v TEXT NOT NULL) ENGINE=InnoDB";
    /// Run on every new session: a lock wait ends in a clean 1205 before the
    /// harness's own statement timeout abandons the connection.
    pub const SESSION_INIT: &[&str] = &[
        "SET SESSION innodb_lock_wait_timeout = 10",
        "SET SESSION autocommit = 1",
    ];
    pub const VERSION: &str = "SELECT VERSION()";
    /// Takes the run's named lock without waiting: 1 taken, 0 held by
    /// another session, NULL on error.
    pub const GET_LOCK: &str = "SELECT GET_LOCK(?, 0)";
    /// Gives the run's named lock back.
    pub const RELEASE_LOCK: &str = "SELECT RELEASE_LOCK(?)";
    /// Whether the table named ? exists in the current database.
    pub const EXISTS: &str = "SELECT COUNT(*) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = ?";
    pub const SET_RC: &str = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
    pub const SET_RR: &str = "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ";
    pub const SET_SER: &str = "SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE";
    pub const START: &str = "START TRANSACTION";
    pub const COMMIT: &str = "COMMIT";
    pub const ROLLBACK: &str = "ROLLBACK";
    reads!(
        READ,
        READ_FOR_UPDATE,
        READ_SHARE,
        "SELECT v, tomb FROM isoharness_registers WHERE k = ?"
    );
    reads!(
        RANGE,
        RANGE_FOR_UPDATE,
        RANGE_SHARE,
        "SELECT k, v FROM isoharness_registers WHERE k BETWEEN ? AND ? ORDER BY k"
    );
    reads!(
        READ_LIST,
        READ_LIST_FOR_UPDATE,
        READ_LIST_SHARE,
        "SELECT v FROM isoharness_lists WHERE k = ?"
    );
    pub const INSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES (?, ?, false)";
    pub const REVIVE: &str =
        "UPDATE isoharness_registers SET v = ?, tomb = false WHERE k = ? AND tomb";
    pub const UPSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES (?, ?, ?) \
         ON DUPLICATE KEY UPDATE v = VALUES(v), tomb = VALUES(tomb)";
    pub const APPEND: &str = "INSERT INTO isoharness_lists (k, v) VALUES (?, ?) \
         ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', VALUES(v))";
}

/// The read statements for one `--read-lock`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reads {
    read: &'static str,
    range: &'static str,
    list: &'static str,
}

impl Reads {
    /// The statements that read with `lock`.
    pub(crate) fn new(lock: ReadLock) -> Reads {
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

/// Read committed, set per session (shared with TiDB).
pub(crate) const READ_COMMITTED: Isolation = Isolation {
    name: "read-committed",
    begin: sql::SET_RC,
};
/// Repeatable read, set per session (TiDB's snapshot isolation).
pub(crate) const REPEATABLE_READ: Isolation = Isolation {
    name: "repeatable-read",
    begin: sql::SET_RR,
};
/// Serializable: InnoDB turns plain reads into shared-lock reads.
const SERIALIZABLE: Isolation = Isolation {
    name: "serializable",
    begin: sql::SET_SER,
};

/// The isolation MySQL/MariaDB run at for `level`, or the one named by
/// `--isolation`. Repeatable read is the setting that claims the levels
/// between `ra` and `strong-si`; InnoDB does not really give them (lost
/// updates), which is what the harness is for.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    if let Some(name) = explicit {
        return match normalize_isolation(name).as_str() {
            "read-committed" => Ok(READ_COMMITTED),
            "repeatable-read" => Ok(REPEATABLE_READ),
            "serializable" => Ok(SERIALIZABLE),
            _ => Err(AdapterError::Isolation(format!(
                "mysql has no isolation level {name:?}; use one of: \
                 read-committed, repeatable-read, serializable"
            ))),
        };
    }
    Ok(match level {
        Level::Rc => READ_COMMITTED,
        Level::Ra
        | Level::Cc
        | Level::Pc
        | Level::Si
        | Level::StrongSessionSi
        | Level::StrongSi => REPEATABLE_READ,
        Level::Ser | Level::StrongSessionSer | Level::Sser => SERIALIZABLE,
    })
}

/// What a MySQL/MariaDB server error code means for the transaction.
pub fn classify_code(code: u16) -> ErrorClass {
    match code {
        // ER_LOCK_DEADLOCK: InnoDB rolled the transaction back.
        1213 => ErrorClass::Deadlock,
        // ER_LOCK_WAIT_TIMEOUT, ER_LOCK_NOWAIT, MariaDB's max_statement_time
        // (ER_STATEMENT_TIMEOUT) and MySQL's max_execution_time.
        1205 | 3572 | 1969 | 3024 => ErrorClass::LockTimeout,
        // ER_DUP_ENTRY, ER_DUP_KEY.
        1062 | 1022 => ErrorClass::UniqueViolation,
        // ER_CHECKREAD "Record has changed since last read": MariaDB's
        // innodb_snapshot_isolation refusing a lost update; a group
        // replication conflict at commit.
        1020 | 3101 => ErrorClass::Serialization,
        // ER_ERROR_DURING_COMMIT: Galera says it when the node loses the
        // primary component while replicating the write set ("Not
        // connected to Primary Component"), and the other nodes may still
        // commit it: at COMMIT the outcome is unknown.
        1180 => ErrorClass::CommitUncertain,
        // ER_UNKNOWN_COM_ERROR, as Galera uses it: "WSREP has not yet
        // prepared node for application use" on a node outside the primary
        // component (a partition's minority, a joining node).
        1047 => ErrorClass::Unavailable,
        // Server shutdown, connection killed or aborted, network errors
        // reported by the server, and the client-side "server gone/lost"
        // codes some servers send back.
        1053 | 1152 | 1158..=1161 | 1927 | 3169 | 4031 | 2006 | 2013 => ErrorClass::ConnectionLost,
        _ => ErrorClass::Statement,
    }
}

/// The error and its causes, joined.
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

/// A mysql_async error in few words: the OS error of an IO error (the
/// driver wraps it twice), the chain of anything else.
fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Io(mysql_async::IoError::Io(io)) => io.to_string(),
        other => error_chain(other),
    }
}

/// Why connecting failed, from the server's error code or the IO error.
fn connect_failure(e: &mysql_async::Error) -> ConnectFailure {
    match e {
        mysql_async::Error::Server(s) => ConnectFailure::from_mysql_code(s.code),
        mysql_async::Error::Io(mysql_async::IoError::Io(io)) => ConnectFailure::from_io(io),
        _ => ConnectFailure::Other,
    }
}

/// Classifies a server error by its code and message.
pub(crate) type Classifier = fn(u16, &str) -> ErrorClass;

/// Classifies a mysql_async error with `by_code`: a server error by its
/// code, anything else (IO, a closed socket, a protocol error) as a lost
/// connection.
pub(crate) fn classify_with(
    e: &mysql_async::Error,
    secret: Option<&str>,
    by_code: Classifier,
) -> DbError {
    match e {
        mysql_async::Error::Server(s) => DbError {
            class: by_code(s.code, &s.message),
            code: s.code.to_string(),
            message: scrub(&s.message, secret),
        },
        other => DbError {
            class: ErrorClass::ConnectionLost,
            code: ErrorClass::ConnectionLost.name().into(),
            message: scrub(&describe(other), secret),
        },
    }
}

/// Classifies a mysql_async error from MySQL or MariaDB.
pub fn classify(e: &mysql_async::Error, secret: Option<&str>) -> DbError {
    classify_with(e, secret, |code, _| classify_code(code))
}

/// Splits `url` into the URL without the query parameters named in `ours`
/// (which mysql_async would refuse) and those parameters.
pub(crate) fn split_params(url: &str, ours: &[&str]) -> (String, OwnParams) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), Vec::new());
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if ours.contains(&k) {
            taken.push((k.to_string(), v.to_string()));
        } else {
            kept.push(pair);
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, taken)
}

/// One endpoint: its options, its printable URL, its password.
pub(crate) struct Endpoint {
    opts: Opts,
    /// The URL as given, password redacted.
    pub(crate) shown: String,
    secret: Option<String>,
}

/// What every adapter of the MySQL family shares: the endpoints, timeouts,
/// read statements and the notes of what was skipped.
pub(crate) struct Family {
    /// `mysql` or `tidb`.
    pub(crate) db: &'static str,
    hint: &'static str,
    pub(crate) endpoints: Vec<Endpoint>,
    connect_timeout: Duration,
    statement_timeout: Duration,
    reads: Reads,
    /// What was skipped, said once.
    pub(crate) notes: Notes,
    /// The run's table names.
    tables: TableNames,
    /// The connection that created the tables and holds the run's named
    /// lock until [`Family::teardown`].
    guard: tokio::sync::Mutex<Option<mysql_async::Conn>>,
    /// True once `setup` created the tables (only those are dropped).
    owned: AtomicBool,
}

/// The statement that returns the committed transaction's database
/// timestamps, and its parser (TiDB's `@@tidb_last_txn_info`).
pub(crate) type DbtsQuery = (&'static str, fn(&str) -> Option<DbTs>);

/// Query parameters of one URL that the adapter takes for itself.
pub(crate) type OwnParams = Vec<(String, String)>;

/// What a family member adds to a new session.
pub(crate) struct SessionExtras {
    /// Classifies server errors.
    pub(crate) classify: Classifier,
    /// The statement that returns the committed transaction's timestamps,
    /// and its parser (TiDB).
    pub(crate) dbts: Option<DbtsQuery>,
}

impl Family {
    /// Parses the `--url`s (default `default_url`); URL parameters named in
    /// `ours` are taken out and returned, one list per URL.
    pub(crate) fn new(
        db: &'static str,
        hint: &'static str,
        default_url: &str,
        opts: &OpenOptions,
        ours: &[&str],
    ) -> Result<(Family, Vec<OwnParams>), AdapterError> {
        let urls: Vec<&str> = if opts.urls.is_empty() {
            vec![default_url]
        } else {
            opts.urls.iter().map(String::as_str).collect()
        };
        let mut endpoints = Vec::with_capacity(urls.len());
        let mut params = Vec::with_capacity(urls.len());
        for url in urls {
            let shown = redact_url(url);
            let (plain, taken) = split_params(url, ours);
            let parsed = Opts::from_url(&plain).map_err(|e| {
                AdapterError::Config(format!("{db}: cannot use --url {shown}: {e}"))
            })?;
            let secret = parsed.pass().map(str::to_string);
            // Always TCP: a socket would bypass a fault-injecting proxy.
            let opts = Opts::from(OptsBuilder::from_opts(parsed).prefer_socket(false));
            endpoints.push(Endpoint {
                opts,
                shown,
                secret,
            });
            params.push(taken);
        }
        Ok((
            Family {
                db,
                hint,
                endpoints,
                connect_timeout: Duration::from_secs(3),
                statement_timeout: opts.statement_timeout,
                reads: Reads::new(opts.read_lock),
                notes: Notes::default(),
                tables: opts.tables.clone(),
                guard: tokio::sync::Mutex::new(None),
                owned: AtomicBool::new(false),
            },
            params,
        ))
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
    pub(crate) async fn open(&self, ep: &Endpoint) -> Result<mysql_async::Conn, AdapterError> {
        let fail = |detail: String, why: ConnectFailure| AdapterError::Connect {
            db: self.db,
            url: ep.shown.clone(),
            detail: scrub(&detail, ep.secret.as_deref()),
            hint: why.hint(self.hint),
        };
        match tokio::time::timeout(
            self.connect_timeout,
            mysql_async::Conn::new(ep.opts.clone()),
        )
        .await
        {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(fail(describe(&e), connect_failure(&e))),
            Err(_) => Err(fail(
                format!("no answer within {} s", self.connect_timeout.as_secs()),
                ConnectFailure::Other,
            )),
        }
    }

    /// An error of a statement run while connecting or setting up.
    pub(crate) fn setup_error(&self, ep: &Endpoint, e: &mysql_async::Error) -> AdapterError {
        AdapterError::Setup {
            db: self.db,
            url: ep.shown.clone(),
            detail: classify(e, ep.secret.as_deref()).text(),
        }
    }

    /// Creates the tables on the first endpoint, on a connection kept
    /// until [`Family::teardown`]. A run's own tables: first takes the
    /// run's named lock (`GET_LOCK`) and refuses tables that exist already.
    pub(crate) async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        let ep = &self.endpoints[0];
        let fail = |detail: String| AdapterError::Setup {
            db: self.db,
            url: ep.shown.clone(),
            detail,
        };
        let mut guard = self.guard.lock().await;
        let conn = match guard.take() {
            Some(c) => c,
            None => self.open(ep).await?,
        };
        let conn = guard.insert(conn);
        let create = match schema {
            Schema::Registers => sql::CREATE_REGISTERS,
            Schema::Lists => sql::CREATE_LISTS,
            Schema::Tpcc => {
                return Err(AdapterError::Unsupported(format!(
                    "{}: the tpcc workload has no MySQL statements yet (see adapters/src/tpcc)",
                    self.db
                )))
            }
        };
        if self.tables.suffix().is_some() && !self.owned.load(Ordering::Relaxed) {
            let names = self.tables.for_schema(schema);
            let lock = self.tables.lock_name();
            match conn
                .exec_first::<Option<i64>, _, _>(sql::GET_LOCK, (&lock,))
                .await
            {
                Ok(Some(Some(1))) => {}
                Ok(Some(Some(0))) => {
                    return Err(fail(format!(
                        "the tables {} belong to another run that is still running \
                         (it holds the lock {lock})",
                        names.join(", ")
                    )))
                }
                // A server without named locks: the run's own table names
                // still keep runs apart.
                other => self.notes.add(format!(
                    "{}: could not take the lock {lock} ({}); relying on the run's own \
                     table names",
                    self.db,
                    match other {
                        Err(e) => classify(&e, ep.secret.as_deref()).text(),
                        Ok(v) => format!("GET_LOCK returned {v:?}"),
                    }
                )),
            }
            for name in &names {
                let n = conn
                    .exec_first::<i64, _, _>(sql::EXISTS, (name,))
                    .await
                    .map_err(|e| self.setup_error(ep, &e))?;
                if n.unwrap_or(0) > 0 {
                    return Err(fail(format!(
                        "table {name} already exists: it belongs to another run (or one \
                         kept with --keep-tables); this run will not touch it"
                    )));
                }
            }
        }
        for stmt in [sql::DROP, create] {
            if let Err(e) = conn.query_drop(self.tables.render(stmt)).await {
                return Err(self.setup_error(ep, &e));
            }
        }
        self.owned.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Drops the tables `setup` created (unless `keep`) and closes the
    /// connection that holds the run's lock, which releases it.
    pub(crate) async fn teardown(&self, keep: bool) -> Result<(), AdapterError> {
        let held = self.guard.lock().await.take();
        let ep = &self.endpoints[0];
        let owned = self.owned.swap(false, Ordering::Relaxed);
        let mut conn = match held {
            Some(c) => c,
            None if owned && !keep => self.open(ep).await?,
            None => return Ok(()),
        };
        let mut result = Ok(());
        if owned && !keep {
            let drop = format!(
                "DROP TABLE IF EXISTS {}",
                self.tables.all_tables().join(", ")
            );
            if let Err(e) = conn.query_drop(drop).await {
                result = Err(AdapterError::Setup {
                    db: self.db,
                    url: ep.shown.clone(),
                    detail: format!(
                        "dropping the run's tables: {}",
                        classify(&e, ep.secret.as_deref()).text()
                    ),
                });
            }
        }
        // Give the lock back before leaving: the server frees it on
        // disconnect only once it notices, and the next run may come first.
        let _ = conn
            .exec_drop(sql::RELEASE_LOCK, (self.tables.lock_name(),))
            .await;
        let _ = conn.disconnect().await;
        result
    }

    /// Runs the family's session settings on a new connection.
    pub(crate) async fn init_session(
        &self,
        ep: &Endpoint,
        conn: &mut mysql_async::Conn,
    ) -> Result<(), AdapterError> {
        for stmt in sql::SESSION_INIT {
            if let Err(e) = conn.query_drop(*stmt).await {
                return Err(self.setup_error(ep, &e));
            }
        }
        Ok(())
    }

    /// The server's version string (`8.0.36`, `10.11.6-MariaDB`,
    /// `8.0.11-TiDB-v7.5.1`).
    pub(crate) async fn version(
        &self,
        ep: &Endpoint,
        conn: &mut mysql_async::Conn,
    ) -> Result<String, AdapterError> {
        match conn.query_first::<String, _>(sql::VERSION).await {
            Ok(v) => Ok(v.unwrap_or_default()),
            Err(e) => Err(self.setup_error(ep, &e)),
        }
    }

    /// Wraps an initialized connection into a session.
    pub(crate) fn session(
        &self,
        ep: &Endpoint,
        conn: mysql_async::Conn,
        extras: SessionExtras,
    ) -> Box<dyn Session> {
        Box::new(SqlSession::new(
            MyConn {
                conn: Some(conn),
                secret: ep.secret.clone(),
                reads: self.reads,
                level_set: None,
                sql: Rendered::new(self.tables.clone()),
                classify: extras.classify,
                dbts: extras.dbts,
            },
            self.statement_timeout,
        ))
    }
}

/// The MySQL / MariaDB adapter.
pub struct Mysql {
    family: Family,
}

impl Mysql {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Mysql, AdapterError> {
        let (family, _) = Family::new("mysql", HINT, DEFAULT_URL, opts, &[])?;
        Ok(Mysql { family })
    }
}

#[async_trait]
impl Database for Mysql {
    fn name(&self) -> &'static str {
        "mysql"
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
        let ep = self.family.endpoint(session);
        let mut conn = self.family.open(ep).await?;
        self.family.init_session(ep, &mut conn).await?;
        let extras = SessionExtras {
            classify: |code, _| classify_code(code),
            dbts: None,
        };
        Ok(self.family.session(ep, conn, extras))
    }

    fn warnings(&self) -> Vec<String> {
        self.family.notes.all()
    }
}

/// The "connection is gone" error of a session whose connection was
/// already given up.
fn gone() -> DbError {
    DbError {
        class: ErrorClass::ConnectionLost,
        code: ErrorClass::ConnectionLost.name().into(),
        message: "the connection was closed".into(),
    }
}

/// One connection of the MySQL family.
struct MyConn {
    /// `None` once closed.
    conn: Option<mysql_async::Conn>,
    secret: Option<String>,
    reads: Reads,
    /// The `SET SESSION TRANSACTION ISOLATION LEVEL` statement in force.
    level_set: Option<&'static str>,
    /// The statements' text with the run's table names.
    sql: Rendered,
    classify: Classifier,
    dbts: Option<DbtsQuery>,
}

impl MyConn {
    fn conn(&mut self) -> Result<&mut mysql_async::Conn, DbError> {
        self.conn.as_mut().ok_or_else(gone)
    }

    fn err(&self, e: &mysql_async::Error) -> DbError {
        classify_with(e, self.secret.as_deref(), self.classify)
    }

    async fn simple(&mut self, sql: &'static str) -> Result<(), DbError> {
        let r = self.conn()?.query_drop(sql).await;
        r.map_err(|e| self.err(&e))
    }

    async fn exec_drop<P>(&mut self, sql: &'static str, params: P) -> Result<u64, DbError>
    where
        P: Into<mysql_async::Params> + Send,
    {
        let text = self.sql.get(sql);
        let conn = self.conn()?;
        let r = conn.exec_drop(&*text, params).await;
        let n = conn.affected_rows();
        r.map(|()| n).map_err(|e| self.err(&e))
    }
}

#[async_trait]
impl Conn for MyConn {
    async fn begin(&mut self, iso: &Isolation) -> Result<(), DbError> {
        let set = match iso.begin {
            sql::SET_RC => sql::SET_RC,
            sql::SET_RR => sql::SET_RR,
            _ => sql::SET_SER,
        };
        if self.level_set != Some(set) {
            self.simple(set).await?;
            self.level_set = Some(set);
        }
        self.simple(sql::START).await
    }

    async fn read(&mut self, k: i64) -> Result<Option<(i64, bool)>, DbError> {
        let stmt = self.sql.get(self.reads.read);
        let r = self
            .conn()?
            .exec_first::<(i64, bool), _, _>(&*stmt, (k,))
            .await;
        r.map_err(|e| self.err(&e))
    }

    async fn insert(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        self.exec_drop(sql::INSERT, (k, v)).await.map(|_| ())
    }

    async fn revive(&mut self, k: i64, v: i64) -> Result<bool, DbError> {
        self.exec_drop(sql::REVIVE, (v, k)).await.map(|n| n == 1)
    }

    async fn upsert(&mut self, k: i64, v: i64, tomb: bool) -> Result<(), DbError> {
        self.exec_drop(sql::UPSERT, (k, v, tomb)).await.map(|_| ())
    }

    async fn range(&mut self, lo: i64, hi: i64) -> Result<Vec<(i64, i64)>, DbError> {
        let stmt = self.sql.get(self.reads.range);
        let r = self
            .conn()?
            .exec::<(i64, i64), _, _>(&*stmt, (lo, hi))
            .await;
        r.map_err(|e| self.err(&e))
    }

    async fn append(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        self.exec_drop(sql::APPEND, (k, v.to_string()))
            .await
            .map(|_| ())
    }

    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, DbError> {
        let stmt = self.sql.get(self.reads.list);
        let r = self.conn()?.exec_first::<String, _, _>(&*stmt, (k,)).await;
        match r.map_err(|e| self.err(&e))? {
            None => Ok(Vec::new()),
            Some(text) => parse_list(&text),
        }
    }

    async fn commit(&mut self) -> Result<(), DbError> {
        self.simple(sql::COMMIT).await
    }

    async fn rollback(&mut self) -> Result<(), DbError> {
        self.simple(sql::ROLLBACK).await
    }

    async fn close(&mut self) {
        if let Some(c) = self.conn.take() {
            let _ = c.disconnect().await;
        }
    }

    async fn committed_dbts(&mut self) -> Option<DbTs> {
        let (stmt, parse) = self.dbts?;
        let text = self
            .conn()
            .ok()?
            .query_first::<String, _>(stmt)
            .await
            .ok()??;
        parse(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_the_setting_that_claims_them() {
        use Level::*;
        let want = [
            (Rc, "read-committed", sql::SET_RC),
            (Ra, "repeatable-read", sql::SET_RR),
            (Cc, "repeatable-read", sql::SET_RR),
            (Pc, "repeatable-read", sql::SET_RR),
            (Si, "repeatable-read", sql::SET_RR),
            (StrongSessionSi, "repeatable-read", sql::SET_RR),
            (StrongSi, "repeatable-read", sql::SET_RR),
            (Ser, "serializable", sql::SET_SER),
            (StrongSessionSer, "serializable", sql::SET_SER),
            (Sser, "serializable", sql::SET_SER),
        ];
        assert_eq!(want.len(), Level::ALL.len());
        for (level, name, begin) in want {
            let iso = isolation(level, None).unwrap();
            assert_eq!((iso.name, iso.begin), (name, begin), "{level}");
        }
        assert_eq!(
            sql::SET_RR,
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
        );
    }

    #[test]
    fn explicit_isolation_overrides_the_level() {
        assert_eq!(
            isolation(Level::Si, Some("Read_Committed")).unwrap().name,
            "read-committed"
        );
        assert_eq!(
            isolation(Level::Rc, Some("serializable")).unwrap().begin,
            sql::SET_SER
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
    fn error_codes_are_classified() {
        assert_eq!(classify_code(1213), ErrorClass::Deadlock);
        assert_eq!(classify_code(1205), ErrorClass::LockTimeout);
        assert_eq!(classify_code(1062), ErrorClass::UniqueViolation);
        assert_eq!(classify_code(1020), ErrorClass::Serialization);
        assert_eq!(classify_code(1927), ErrorClass::ConnectionLost);
        assert_eq!(classify_code(1053), ErrorClass::ConnectionLost);
        assert_eq!(classify_code(2013), ErrorClass::ConnectionLost);
        assert_eq!(classify_code(1146), ErrorClass::Statement);
        assert_eq!(classify_code(1180), ErrorClass::CommitUncertain);
        assert_eq!(classify_code(1047), ErrorClass::Unavailable);
        assert_eq!(
            ErrorClass::Unavailable.status(crate::Phase::Commit),
            history::Status::Fail
        );
        assert!(!ErrorClass::Unavailable.breaks_connection());
        assert_eq!(classify_code(1064), ErrorClass::Statement);
    }

    #[test]
    fn server_and_io_errors_are_classified() {
        let server = mysql_async::Error::Server(mysql_async::ServerError {
            code: 1213,
            message: "Deadlock found when trying to get lock; pw hunter2".into(),
            state: "40001".into(),
        });
        let e = classify(&server, Some("hunter2"));
        assert_eq!(e.class, ErrorClass::Deadlock);
        assert_eq!(
            e.text(),
            "1213: Deadlock found when trying to get lock; pw ***"
        );
        let io = mysql_async::Error::Io(mysql_async::IoError::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        )));
        let e = classify(&io, None);
        assert_eq!(e.class, ErrorClass::ConnectionLost);
        assert_eq!(e.code, "connection-lost");
        // At COMMIT a lost connection leaves the outcome unknown.
        assert_eq!(e.class.status(crate::Phase::Commit), history::Status::Info);
        let closed = mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed);
        assert_eq!(classify(&closed, None).class, ErrorClass::ConnectionLost);
    }

    /// The path of TiDB's timestamps, on the MariaDB/MySQL server of the
    /// other tests (`ISOHARNESS_MYSQL_URL`): a statement that answers like
    /// `@@tidb_last_txn_info` after COMMIT gives the outcome its `dbts`.
    #[tokio::test]
    async fn timestamps_read_after_commit_reach_the_outcome() {
        let url = std::env::var("ISOHARNESS_MYSQL_URL").unwrap_or_else(|_| DEFAULT_URL.into());
        let opts = OpenOptions::new(vec![url], Default::default());
        let (family, _) = Family::new("tidb", HINT, DEFAULT_URL, &opts, &[]).unwrap();
        let ep = family.endpoint(0);
        let mut conn = family
            .open(ep)
            .await
            .expect("MariaDB/MySQL must run (.ci/services) or ISOHARNESS_MYSQL_URL name one");
        family.init_session(ep, &mut conn).await.unwrap();
        let extras = SessionExtras {
            classify: |code, _| classify_code(code),
            dbts: Some((
                r#"SELECT '{"txn_scope":"global","start_ts":41,"commit_ts":42}'"#,
                crate::tidb::parse_last_txn_info,
            )),
        };
        let mut s = family.session(ep, conn, extras);
        let plan = workloads::Plan {
            kind: "t",
            steps: vec![],
        };
        let o = s.run(&plan, &READ_COMMITTED).await.unwrap();
        assert_eq!(o.status, history::Status::Ok, "{:?}", o.error);
        assert_eq!(
            o.dbts,
            Some(DbTs {
                start: 41,
                commit: Some(42)
            })
        );
        s.close().await;
    }

    #[test]
    fn read_locks_pick_the_statements() {
        assert_eq!(Reads::new(ReadLock::Plain).read, sql::READ);
        assert!(Reads::new(ReadLock::ForUpdate)
            .range
            .ends_with(" FOR UPDATE"));
        assert!(Reads::new(ReadLock::Share)
            .list
            .ends_with(" LOCK IN SHARE MODE"));
    }

    #[test]
    fn own_url_parameters_are_split_off() {
        let (u, p) = split_params(
            "mysql://r@h:4000/test?tidb_txn_mode=optimistic",
            &["tidb_txn_mode"],
        );
        assert_eq!(u, "mysql://r@h:4000/test");
        assert_eq!(p, vec![("tidb_txn_mode".into(), "optimistic".into())]);
        let (u, p) = split_params(
            "mysql://r@h/test?stmt_cache_size=8&tidb_txn_mode=x",
            &["tidb_txn_mode"],
        );
        assert_eq!(u, "mysql://r@h/test?stmt_cache_size=8");
        assert_eq!(p.len(), 1);
        assert_eq!(split_params("mysql://h/db", &["a"]).0, "mysql://h/db");
    }

    #[test]
    fn urls_are_parsed_and_shown_redacted() {
        let opts = OpenOptions::new(
            vec![
                "mysql://alice:s3cret@db1:3307/app".into(),
                "mysql://alice:s3cret@db2:3307/app".into(),
            ],
            Default::default(),
        );
        let m = Mysql::new(&opts).unwrap();
        assert_eq!(
            m.location(),
            "mysql://alice:***@db1:3307/app,mysql://alice:***@db2:3307/app"
        );
        assert_eq!(m.family.endpoints[0].secret.as_deref(), Some("s3cret"));
        assert_eq!(m.family.endpoint(3).shown, "mysql://alice:***@db2:3307/app");
        let dflt = Mysql::new(&OpenOptions::new(vec![], Default::default())).unwrap();
        assert_eq!(dflt.location(), DEFAULT_URL);
        let bad = OpenOptions::new(
            vec!["mysql://u:pw@h:notaport/db".into()],
            Default::default(),
        );
        let e = Mysql::new(&bad).err().unwrap().to_string();
        assert!(!e.contains("pw@"), "{e}");
    }
}
