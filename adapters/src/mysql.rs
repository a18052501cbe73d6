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
//! The protocol ([`My`]: connecting, the run's named lock, the tables) and
//! the connection (`MyConn`) are shared with the TiDB dialect
//! ([`crate::tidb`]), which speaks the same protocol.

use std::time::Duration;

use async_trait::async_trait;
use history::{DbTs, Level};
use mysql_async::prelude::Queryable;
use mysql_async::{Opts, OptsBuilder};
use workloads::Schema;

use crate::error::{error_chain, scrub, AdapterError, ConnectFailure, DbError, ErrorClass};
use crate::exec::{parse_list, Conn, SqlSession};
use crate::family::{
    ansi, read_statements, Endpoint, Family, Levels, Lock, OwnParams, Protocol, Reads, SqlDatabase,
};
use crate::tables::{Rendered, TableNames};
use crate::{Isolation, OpenOptions, Session};

mod tpcc;

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// How to start a server, appended to connection errors.
const HINT: &str =
    "; is the server running? Start one with `docker compose --profile mysql up -d`, \
     or point --url at a running MySQL or MariaDB";

/// All SQL of the MySQL dialect (MySQL, MariaDB, TiDB), in one place.
/// Parameters are `?`.
pub(crate) mod sql {
    pub use crate::family::{COMMIT, ROLLBACK};

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
    /// The isolation is set per session, once, before START TRANSACTION.
    macro_rules! set_level {
        ($level:literal) => {
            concat!("SET SESSION TRANSACTION ISOLATION LEVEL ", $level)
        };
    }
    pub const SET_RC: &str = set_level!("READ COMMITTED");
    pub const SET_RR: &str = set_level!("REPEATABLE READ");
    pub const SET_SER: &str = set_level!("SERIALIZABLE");
    pub const START: &str = "START TRANSACTION";
    pub const INSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES (?, ?, false)";
    pub const REVIVE: &str =
        "UPDATE isoharness_registers SET v = ?, tomb = false WHERE k = ? AND tomb";
    pub const UPSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES (?, ?, ?) \
         ON DUPLICATE KEY UPDATE v = VALUES(v), tomb = VALUES(tomb)";
    pub const APPEND: &str = "INSERT INTO isoharness_lists (k, v) VALUES (?, ?) \
         ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', VALUES(v))";
}

/// Read committed, set per session (shared with TiDB).
pub(crate) const READ_COMMITTED: Isolation = Isolation::new("read-committed", sql::SET_RC);
/// Repeatable read, set per session (TiDB's snapshot isolation).
pub(crate) const REPEATABLE_READ: Isolation = Isolation::new("repeatable-read", sql::SET_RR);
/// Serializable: InnoDB turns plain reads into shared-lock reads.
const SERIALIZABLE: Isolation = Isolation::new("serializable", sql::SET_SER);

/// The isolation MySQL/MariaDB run at for `level`, or the one named by
/// `--isolation`. Repeatable read is the setting that claims the levels
/// between `ra` and `strong-si`; InnoDB does not really give them (lost
/// updates), which is what the harness is for.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    let settings = [READ_COMMITTED, REPEATABLE_READ, SERIALIZABLE];
    ansi("mysql", level, explicit, settings, REPEATABLE_READ)
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

/// What a session on a TiDB server runs beyond MySQL's statements (the
/// values are in [`crate::tidb`]; a test may give others, to run the path
/// on MariaDB): how a transaction opens in each mode, and how its
/// timestamps are read.
#[derive(Clone, Copy, Debug)]
pub struct TidbSql {
    /// Opens an optimistic transaction (`BEGIN OPTIMISTIC`).
    pub optimistic: &'static str,
    /// Opens a pessimistic transaction (`BEGIN PESSIMISTIC`).
    pub pessimistic: &'static str,
    /// The open transaction's start_ts (`SELECT @@tidb_current_ts`).
    pub current_ts: &'static str,
    /// The last committed transaction's timestamps, after COMMIT.
    pub last_txn_info: &'static str,
    /// The one isolation (by name) that is optimistic, and whose reads all
    /// happen at start_ts: only its transactions get timestamps.
    pub stamped: &'static str,
    /// Parses what `last_txn_info` returns.
    pub parse: fn(&str) -> Option<DbTs>,
}

/// The MySQL protocol through mysql_async.
pub struct My;

#[async_trait]
impl Protocol for My {
    // A named lock (GET_LOCK), like PostgreSQL's advisory lock.
    const LOCK: &'static str = "lock";
    const CONNECT_GRACE: Duration = Duration::ZERO;
    type Opts = Opts;
    type Conn = mysql_async::Conn;
    type Classify = Classifier;
    const READS: [Reads; 3] = read_statements!(
        " LOCK IN SHARE MODE",
        "SELECT v, tomb FROM isoharness_registers WHERE k = ?",
        "SELECT k, v FROM isoharness_registers WHERE k BETWEEN ? AND ? ORDER BY k",
        "SELECT v FROM isoharness_lists WHERE k = ?"
    );

    fn parse(url: &str, ours: &[&str]) -> Result<(Opts, Option<String>, OwnParams), String> {
        let (plain, taken) = split_params(url, ours);
        let parsed = Opts::from_url(&plain).map_err(|e| e.to_string())?;
        let secret = parsed.pass().map(str::to_string);
        // Always TCP: a socket would bypass a fault-injecting proxy.
        let opts = Opts::from(OptsBuilder::from_opts(parsed).prefer_socket(false));
        Ok((opts, secret, taken))
    }

    async fn connect(
        opts: &Opts,
        _: Duration,
    ) -> Result<mysql_async::Conn, (String, ConnectFailure)> {
        let r = mysql_async::Conn::new(opts.clone()).await;
        r.map_err(|e| (describe(&e), connect_failure(&e)))
    }

    fn usable(_: &mysql_async::Conn) -> bool {
        true
    }

    fn tables_script(_: &str, schema: &Schema) -> Result<&'static [&'static str], AdapterError> {
        Ok(match schema {
            Schema::Registers => &[sql::DROP, sql::CREATE_REGISTERS],
            Schema::Lists => &[sql::DROP, sql::CREATE_LISTS],
            Schema::Tpcc => tpcc::setup(),
        })
    }

    async fn batch(
        conn: &mut mysql_async::Conn,
        sql: &str,
        secret: Option<&str>,
    ) -> Result<(), String> {
        let r = conn.query_drop(sql).await;
        r.map_err(|e| classify(&e, secret).text())
    }

    async fn try_lock(
        conn: &mut mysql_async::Conn,
        tables: &TableNames,
        secret: Option<&str>,
    ) -> Result<Lock, String> {
        let r = conn
            .exec_first::<Option<i64>, _, _>(sql::GET_LOCK, (tables.lock_name(),))
            .await;
        Ok(match r {
            Ok(Some(Some(1))) => Lock::Taken,
            Ok(Some(Some(0))) => Lock::Held,
            Err(e) => Lock::Unknown(classify(&e, secret).text()),
            Ok(v) => Lock::Unknown(format!("GET_LOCK returned {v:?}")),
        })
    }

    async fn existing(
        conn: &mut mysql_async::Conn,
        names: &[String],
        secret: Option<&str>,
    ) -> Result<Option<String>, String> {
        for name in names {
            let n = conn.exec_first::<i64, _, _>(sql::EXISTS, (name,)).await;
            if n.map_err(|e| classify(&e, secret).text())?.unwrap_or(0) > 0 {
                return Ok(Some(name.clone()));
            }
        }
        Ok(None)
    }

    async fn unlock(conn: &mut mysql_async::Conn, tables: &TableNames) {
        let _ = conn
            .exec_drop(sql::RELEASE_LOCK, (tables.lock_name(),))
            .await;
    }

    async fn close(conn: mysql_async::Conn) {
        let _ = conn.disconnect().await;
    }

    const VERSION: &'static str = sql::VERSION;

    async fn text(conn: &mut mysql_async::Conn, sql: &str) -> Option<String> {
        conn.query_first::<String, _>(sql).await.ok().flatten()
    }

    async fn init(
        family: &Family<My>,
        ep: &Endpoint<Opts>,
        conn: &mut mysql_async::Conn,
    ) -> Result<(), AdapterError> {
        for stmt in sql::SESSION_INIT {
            if let Err(e) = conn.query_drop(*stmt).await {
                return Err(family.setup_error(ep, &e));
            }
        }
        // `--session-var`: the name was checked, the value is a parameter
        // (an integer as one: MySQL refuses a string for an integer).
        for (name, value) in &family.session_vars {
            let stmt = format!("SET SESSION {name} = ?");
            let r = match value.parse::<i64>() {
                Ok(n) => conn.exec_drop(&stmt, (n,)).await,
                Err(_) => conn.exec_drop(&stmt, (value,)).await,
            };
            r.map_err(|e| family.setup_error(ep, &e))?;
        }
        Ok(())
    }

    /// TiDB's statements, on a TiDB server.
    type Extra = Option<TidbSql>;

    fn session(
        family: &Family<My>,
        ep: &Endpoint<Opts>,
        conn: mysql_async::Conn,
        tidb: Option<TidbSql>,
    ) -> Box<dyn Session> {
        Box::new(SqlSession::new(
            MyConn {
                conn: Some(conn),
                secret: ep.secret.clone(),
                reads: family.reads,
                level_set: None,
                sql: Rendered::new(family.tables.clone()),
                classify: family.classify,
                tidb,
                txn: TxnStamps::default(),
            },
            family.limits.clone(),
        ))
    }
}

impl Family<My> {
    /// An error of a statement run while connecting or setting up.
    pub(crate) fn setup_error(&self, ep: &Endpoint<Opts>, e: &mysql_async::Error) -> AdapterError {
        AdapterError::Setup {
            db: self.db,
            url: ep.shown.clone(),
            detail: classify(e, ep.secret.as_deref()).text(),
        }
    }

    /// The server's version string (`8.0.36`, `10.11.6-MariaDB`,
    /// `8.0.11-TiDB-v7.5.1`).
    pub(crate) async fn version(
        &self,
        ep: &Endpoint<Opts>,
        conn: &mut mysql_async::Conn,
    ) -> Result<String, AdapterError> {
        match conn.query_first::<String, _>(sql::VERSION).await {
            Ok(v) => Ok(v.unwrap_or_default()),
            Err(e) => Err(self.setup_error(ep, &e)),
        }
    }
}

/// The MySQL / MariaDB adapter.
pub type Mysql = SqlDatabase<My, Levels>;

impl Mysql {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Mysql, AdapterError> {
        let by_code: Classifier = |code, _| classify_code(code);
        SqlDatabase::plain(("mysql", HINT, DEFAULT_URL), by_code, opts, isolation)
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
    /// TiDB's statements, on a TiDB server.
    tidb: Option<TidbSql>,
    /// What the open transaction needs for its timestamps.
    txn: TxnStamps,
}

/// The open transaction, as far as its TiDB timestamps go.
#[derive(Clone, Copy, Debug, Default)]
struct TxnStamps {
    /// Its reads all happen at start_ts (optimistic mode): it gets
    /// timestamps.
    stamped: bool,
    /// No step writes: it has no commit timestamp.
    read_only: bool,
    /// Its start_ts, read just before COMMIT.
    start_ts: Option<u64>,
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
        self.begin_plan(iso, false).await
    }

    async fn begin_plan(&mut self, iso: &Isolation, read_only: bool) -> Result<(), DbError> {
        let set = match iso.begin {
            sql::SET_RC => sql::SET_RC,
            sql::SET_RR => sql::SET_RR,
            _ => sql::SET_SER,
        };
        if self.level_set != Some(set) {
            self.simple(set).await?;
            self.level_set = Some(set);
        }
        let (start, stamped) = match self.tidb {
            None => (sql::START, false),
            Some(t) if iso.name == t.stamped => (t.optimistic, true),
            Some(t) => (t.pessimistic, false),
        };
        self.txn = TxnStamps {
            stamped,
            read_only,
            start_ts: None,
        };
        self.simple(start).await
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
        if let (Some(t), true) = (self.tidb, self.txn.stamped) {
            // Inside the transaction: its start_ts, fixed since BEGIN.
            let r = self.conn()?.query_first::<u64, _>(t.current_ts).await;
            self.txn.start_ts = r.map_err(|e| self.err(&e))?.filter(|&ts| ts > 0);
        }
        self.simple(sql::COMMIT).await
    }

    async fn rollback(&mut self) -> Result<(), DbError> {
        self.simple(sql::ROLLBACK).await
    }

    fn tpcc(&mut self) -> Option<&mut dyn crate::tpcc::TpccConn> {
        Some(self)
    }

    async fn close(&mut self) {
        if let Some(c) = self.conn.take() {
            let _ = c.disconnect().await;
        }
    }

    async fn committed_dbts(&mut self) -> Option<DbTs> {
        let t = self.tidb?;
        let start = self.txn.start_ts.take()?;
        if self.txn.read_only {
            return Some(DbTs {
                start,
                commit: None,
            });
        }
        let text = self
            .conn()
            .ok()?
            .query_first::<String, _>(t.last_txn_info)
            .await
            .ok()??;
        // Only the info of this very transaction: an older TiDB leaves an
        // earlier one's there after some transactions.
        let info = (t.parse)(&text)?;
        (info.start == start && info.commit.is_some()).then_some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    /// Each level runs the setting that claims it, and the reads take the
    /// lock `--read-lock` asks for.
    #[test]
    fn levels_map_to_the_setting_that_claims_them() {
        crate::family::check_read_locks::<My>(" LOCK IN SHARE MODE");
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
        crate::family::check_levels(isolation, &want);
        assert_eq!(
            sql::SET_RR,
            "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
        );
    }

    #[test]
    fn explicit_isolation_overrides_the_level() {
        crate::family::check_names(
            isolation,
            &[(Level::Si, "Read_Committed", "read-committed")],
        );
        let ser = isolation(Level::Rc, Some("serializable")).unwrap();
        assert_eq!(ser.begin, sql::SET_SER);
        let e = isolation(Level::Si, Some("snapshot")).unwrap_err();
        assert!(e.to_string().contains("\"snapshot\""), "{e}");
        assert!(e.to_string().contains("repeatable-read"), "{e}");
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
        let bad = "mysql://u:pw@h:notaport/db";
        crate::family::check_default_and_bad(Mysql::new, DEFAULT_URL, bad);
    }
}
