//! SQLite (bundled, through sqlx): a database file in the run folder, WAL
//! mode, one connection per session, a busy timeout. SQLite offers one
//! isolation level, serializable, which implies every level the checker
//! knows; a busy database (`SQLITE_BUSY`) fails the transaction.
//!
//! Two ways to open a transaction: `serializable-immediate` (the default)
//! opens every transaction that writes with `BEGIN IMMEDIATE`, so writers
//! queue on the write lock (waiting up to the busy timeout) instead of
//! failing, while read-only transactions open with `BEGIN` and read their
//! snapshot beside the writer; `serializable-deferred` opens every
//! transaction with `BEGIN`, and a reader that later writes fails at once
//! with `SQLITE_BUSY(_SNAPSHOT)` when another writer got there first (most
//! of them, with a few clients).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use history::Level;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Connection, Row};
use workloads::Schema;

use crate::error::{AdapterError, DbError, ErrorClass};
use crate::exec::{parse_list, Conn, SqlSession};
use crate::tables::{Rendered, TableNames};
use crate::{normalize_isolation, Database, Isolation, OpenOptions, Session};

mod tpcc;

/// All SQL this adapter sends, in one place (TPC-C's in [`tpcc`]).
/// Parameters are `?N`.
mod sql {
    pub const SETUP_REGISTERS: &str = "DROP TABLE IF EXISTS isoharness_registers; \
         DROP TABLE IF EXISTS isoharness_lists; \
         CREATE TABLE isoharness_registers (k INTEGER PRIMARY KEY, v INTEGER NOT NULL, \
         tomb INTEGER NOT NULL DEFAULT 0);";
    pub const SETUP_LISTS: &str = "DROP TABLE IF EXISTS isoharness_registers; \
         DROP TABLE IF EXISTS isoharness_lists; \
         CREATE TABLE isoharness_lists (k INTEGER PRIMARY KEY, v TEXT NOT NULL);";
    pub const BEGIN_DEFERRED: &str = "BEGIN";
    pub const BEGIN_IMMEDIATE: &str = "BEGIN IMMEDIATE";
    pub const COMMIT: &str = "COMMIT";
    pub const ROLLBACK: &str = "ROLLBACK";
    pub const READ: &str = "SELECT v, tomb FROM isoharness_registers WHERE k = ?1";
    pub const INSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES (?1, ?2, 0)";
    pub const REVIVE: &str =
        "UPDATE isoharness_registers SET v = ?2, tomb = 0 WHERE k = ?1 AND tomb <> 0";
    pub const UPSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES (?1, ?2, ?3) \
         ON CONFLICT (k) DO UPDATE SET v = excluded.v, tomb = excluded.tomb";
    pub const RANGE: &str =
        "SELECT k, v FROM isoharness_registers WHERE k BETWEEN ?1 AND ?2 ORDER BY k";
    pub const APPEND: &str = "INSERT INTO isoharness_lists (k, v) VALUES (?1, ?2) \
         ON CONFLICT (k) DO UPDATE SET v = isoharness_lists.v || ',' || excluded.v";
    pub const READ_LIST: &str = "SELECT v FROM isoharness_lists WHERE k = ?1";
    pub const EXISTS: &str =
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1";
}

/// The isolation names `--isolation` accepts for SQLite.
const NAMES: &str = "serializable or serializable-immediate (the default: BEGIN IMMEDIATE for \
     transactions that write, BEGIN for read-only ones), serializable-deferred (BEGIN for all)";

/// The SQLite adapter.
pub struct Sqlite {
    path: PathBuf,
    /// The run's table names.
    tables: TableNames,
    /// True once `setup` created the tables (only those are dropped).
    owned: AtomicBool,
    busy_timeout: Duration,
    limits: crate::Limits,
}

impl Sqlite {
    /// Uses the file named by the one `--url` (`sqlite://PATH`,
    /// `sqlite:PATH` or a plain path), else `sqlite.db` in the run folder.
    pub fn new(opts: &OpenOptions) -> Result<Sqlite, AdapterError> {
        let path = match opts.urls.as_slice() {
            [] => opts.run_dir.join("sqlite.db"),
            [url] => {
                let p = url
                    .strip_prefix("sqlite://")
                    .or_else(|| url.strip_prefix("sqlite:"))
                    .unwrap_or(url);
                if p.is_empty() || p.contains(":memory:") {
                    return Err(AdapterError::Config(format!(
                        "sqlite: --url {url:?} names no file (sessions need a shared file)"
                    )));
                }
                PathBuf::from(p)
            }
            _ => {
                return Err(AdapterError::Config(
                    "sqlite: give at most one --url (the database file)".into(),
                ))
            }
        };
        Ok(Sqlite {
            path,
            tables: opts.tables.clone(),
            owned: AtomicBool::new(false),
            busy_timeout: Duration::from_secs(5),
            limits: opts.limits(),
        })
    }

    /// Sets how long SQLite waits for a lock before answering
    /// `SQLITE_BUSY` (default 5 s).
    pub fn with_busy_timeout(mut self, t: Duration) -> Sqlite {
        self.busy_timeout = t;
        self
    }

    async fn open_conn(&self) -> Result<SqliteConnection, AdapterError> {
        let opts = SqliteConnectOptions::new()
            .filename(&self.path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(self.busy_timeout);
        SqliteConnection::connect_with(&opts)
            .await
            .map_err(|e| AdapterError::Connect {
                db: "sqlite",
                url: self.path.display().to_string(),
                detail: e.to_string(),
                hint: "; check that the folder exists and is writable".into(),
            })
    }
}

/// The isolation SQLite runs at for `level` or `--isolation NAME`.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    // Serializable implies every level the checker knows, so any `--level`
    // is promised by SQLite's only level.
    let _ = level;
    let immediate = Isolation {
        name: "serializable-immediate",
        begin: sql::BEGIN_IMMEDIATE,
    };
    let Some(name) = explicit else {
        return Ok(immediate);
    };
    match normalize_isolation(name).as_str() {
        "serializable" | "serializable-immediate" | "immediate" => Ok(immediate),
        "serializable-deferred" | "deferred" => Ok(Isolation {
            name: "serializable-deferred",
            begin: sql::BEGIN_DEFERRED,
        }),
        _ => Err(AdapterError::Isolation(format!(
            "sqlite offers only serializable isolation; --isolation {name:?} is not one of: {NAMES}"
        ))),
    }
}

#[async_trait]
impl Database for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        isolation(level, explicit)
    }

    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        let fail = |detail: String| AdapterError::Setup {
            db: "sqlite",
            url: self.location(),
            detail,
        };
        let mut conn = self.open_conn().await?;
        if self.tables.suffix().is_some() && !self.owned.load(Ordering::Relaxed) {
            // Runs sharing one file (`--url`) have their own table names;
            // a table of this run's name that exists is another's.
            for name in self.tables.for_schema(schema) {
                let r = sqlx::query_scalar::<_, i64>(sql::EXISTS)
                    .bind(&name)
                    .fetch_one(&mut conn)
                    .await;
                match r {
                    Ok(0) => {}
                    Ok(_) => {
                        let _ = conn.close().await;
                        return Err(fail(format!(
                            "table {name} already exists: it belongs to another run (or one \
                             kept with --keep-tables); this run will not touch it"
                        )));
                    }
                    Err(e) => {
                        let _ = conn.close().await;
                        return Err(fail(error_text(&e)));
                    }
                }
            }
        }
        let script = match schema {
            Schema::Registers => sql::SETUP_REGISTERS,
            Schema::Lists => sql::SETUP_LISTS,
            Schema::Tpcc => tpcc::setup(),
        };
        let script = self.tables.render(script);
        let r = sqlx::raw_sql(AssertSqlSafe(script))
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        r.map_err(|e| fail(error_text(&e)))?;
        self.owned.store(true, Ordering::Relaxed);
        Ok(())
    }

    async fn teardown(&self, keep_tables: bool) -> Result<(), AdapterError> {
        if !self.owned.swap(false, Ordering::Relaxed) || keep_tables {
            return Ok(());
        }
        let mut conn = self.open_conn().await?;
        let script: String = self
            .tables
            .all_tables()
            .iter()
            .map(|t| format!("DROP TABLE IF EXISTS {t};"))
            .collect();
        let r = sqlx::raw_sql(AssertSqlSafe(script))
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        r.map(|_| ()).map_err(|e| AdapterError::Teardown {
            db: "sqlite",
            url: self.location(),
            detail: error_text(&e),
        })
    }

    async fn connect(&self, _client: u64) -> Result<Box<dyn Session>, AdapterError> {
        let conn = self.open_conn().await?;
        Ok(Box::new(SqlSession::new(
            SqliteConn {
                conn: Some(conn),
                sql: Rendered::new(self.tables.clone()),
            },
            self.limits.clone(),
        )))
    }
}

/// The name of an SQLite (extended) result code, e.g. `SQLITE_BUSY`.
pub fn code_name(code: i32) -> String {
    let name = match code {
        517 => "SQLITE_BUSY_SNAPSHOT",
        261 => "SQLITE_BUSY_RECOVERY",
        773 => "SQLITE_BUSY_TIMEOUT",
        262 => "SQLITE_LOCKED_SHAREDCACHE",
        2067 => "SQLITE_CONSTRAINT_UNIQUE",
        1555 => "SQLITE_CONSTRAINT_PRIMARYKEY",
        1299 => "SQLITE_CONSTRAINT_NOTNULL",
        _ => match code & 0xff {
            1 => "SQLITE_ERROR",
            5 => "SQLITE_BUSY",
            6 => "SQLITE_LOCKED",
            8 => "SQLITE_READONLY",
            10 => "SQLITE_IOERR",
            11 => "SQLITE_CORRUPT",
            13 => "SQLITE_FULL",
            14 => "SQLITE_CANTOPEN",
            19 => "SQLITE_CONSTRAINT",
            26 => "SQLITE_NOTADB",
            _ => return format!("SQLITE_{code}"),
        },
    };
    name.to_string()
}

/// What an SQLite result code means for the transaction. A stale snapshot
/// that cannot be upgraded to a write is a serialization failure; other
/// busy/locked answers are lock timeouts; disk-level errors leave the state
/// unknown, like a lost connection.
pub fn classify_code(code: i32) -> ErrorClass {
    match code {
        517 => ErrorClass::Serialization,
        2067 | 1555 => ErrorClass::UniqueViolation,
        _ => match code & 0xff {
            5 | 6 => ErrorClass::LockTimeout,
            10 | 11 | 13 | 14 | 26 => ErrorClass::ConnectionLost,
            _ => ErrorClass::Statement,
        },
    }
}

/// Classifies an sqlx error: a database error by its result code; anything
/// else (IO, a crashed worker, a protocol or decoding surprise) leaves the
/// connection in an unknown state.
pub fn classify(e: &sqlx::Error) -> DbError {
    if let sqlx::Error::Database(d) = e {
        if let Some(code) = d.code().and_then(|c| c.parse::<i32>().ok()) {
            return DbError {
                class: classify_code(code),
                code: code_name(code),
                message: d.message().to_string(),
            };
        }
    }
    DbError {
        class: ErrorClass::ConnectionLost,
        code: ErrorClass::ConnectionLost.name().into(),
        message: e.to_string(),
    }
}

fn error_text(e: &sqlx::Error) -> String {
    classify(e).text()
}

/// The statement that opens a transaction: `BEGIN IMMEDIATE` (take the
/// write lock now, waiting for it) only in the immediate mode and only for
/// a transaction that may write; a read-only one reads its WAL snapshot
/// without the lock, beside the writer.
fn begin_statement(iso: &Isolation, read_only: bool) -> &'static str {
    if iso.begin == sql::BEGIN_IMMEDIATE && !read_only {
        sql::BEGIN_IMMEDIATE
    } else {
        sql::BEGIN_DEFERRED
    }
}

/// One SQLite connection; `None` once closed.
struct SqliteConn {
    conn: Option<SqliteConnection>,
    /// The statements' text with the run's table names.
    sql: Rendered,
}

impl SqliteConn {
    fn c(&mut self) -> Result<&mut SqliteConnection, DbError> {
        self.conn.as_mut().ok_or_else(|| DbError {
            class: ErrorClass::ConnectionLost,
            code: ErrorClass::ConnectionLost.name().into(),
            message: "connection already closed".into(),
        })
    }

    async fn exec(&mut self, sql: &'static str) -> Result<u64, DbError> {
        let r = sqlx::query(sql).execute(self.c()?).await;
        r.map(|r| r.rows_affected()).map_err(|e| classify(&e))
    }
}

#[async_trait]
impl Conn for SqliteConn {
    async fn begin(&mut self, iso: &Isolation) -> Result<(), DbError> {
        self.exec(begin_statement(iso, false)).await.map(|_| ())
    }

    async fn begin_plan(&mut self, iso: &Isolation, read_only: bool) -> Result<(), DbError> {
        self.exec(begin_statement(iso, read_only)).await.map(|_| ())
    }

    async fn read(&mut self, k: i64) -> Result<Option<(i64, bool)>, DbError> {
        let row = sqlx::query(AssertSqlSafe(self.sql.get(sql::READ)))
            .bind(k)
            .fetch_optional(self.c()?)
            .await
            .map_err(|e| classify(&e))?;
        match row {
            None => Ok(None),
            Some(r) => {
                let v: i64 = r.try_get(0).map_err(|e| classify(&e))?;
                let tomb: i64 = r.try_get(1).map_err(|e| classify(&e))?;
                Ok(Some((v, tomb != 0)))
            }
        }
    }

    async fn insert(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        let r = sqlx::query(AssertSqlSafe(self.sql.get(sql::INSERT)))
            .bind(k)
            .bind(v)
            .execute(self.c()?)
            .await;
        r.map(|_| ()).map_err(|e| classify(&e))
    }

    async fn revive(&mut self, k: i64, v: i64) -> Result<bool, DbError> {
        let r = sqlx::query(AssertSqlSafe(self.sql.get(sql::REVIVE)))
            .bind(k)
            .bind(v)
            .execute(self.c()?)
            .await;
        r.map(|r| r.rows_affected() == 1).map_err(|e| classify(&e))
    }

    async fn upsert(&mut self, k: i64, v: i64, tomb: bool) -> Result<(), DbError> {
        let r = sqlx::query(AssertSqlSafe(self.sql.get(sql::UPSERT)))
            .bind(k)
            .bind(v)
            .bind(i64::from(tomb))
            .execute(self.c()?)
            .await;
        r.map(|_| ()).map_err(|e| classify(&e))
    }

    async fn range(&mut self, lo: i64, hi: i64) -> Result<Vec<(i64, i64)>, DbError> {
        let rows = sqlx::query(AssertSqlSafe(self.sql.get(sql::RANGE)))
            .bind(lo)
            .bind(hi)
            .fetch_all(self.c()?)
            .await
            .map_err(|e| classify(&e))?;
        rows.iter()
            .map(|r| {
                let k: i64 = r.try_get(0)?;
                let v: i64 = r.try_get(1)?;
                Ok((k, v))
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(|e| classify(&e))
    }

    async fn append(&mut self, k: i64, v: i64) -> Result<(), DbError> {
        let r = sqlx::query(AssertSqlSafe(self.sql.get(sql::APPEND)))
            .bind(k)
            .bind(v.to_string())
            .execute(self.c()?)
            .await;
        r.map(|_| ()).map_err(|e| classify(&e))
    }

    async fn read_list(&mut self, k: i64) -> Result<Vec<i64>, DbError> {
        let row = sqlx::query(AssertSqlSafe(self.sql.get(sql::READ_LIST)))
            .bind(k)
            .fetch_optional(self.c()?)
            .await
            .map_err(|e| classify(&e))?;
        match row {
            None => Ok(Vec::new()),
            Some(r) => {
                let text: String = r.try_get(0).map_err(|e| classify(&e))?;
                parse_list(&text)
            }
        }
    }

    async fn commit(&mut self) -> Result<(), DbError> {
        self.exec(sql::COMMIT).await.map(|_| ())
    }

    async fn rollback(&mut self) -> Result<(), DbError> {
        self.exec(sql::ROLLBACK).await.map(|_| ())
    }

    async fn close(&mut self) {
        if let Some(c) = self.conn.take() {
            let _ = c.close().await;
        }
    }

    fn tpcc(&mut self) -> Option<&mut dyn crate::tpcc::TpccConn> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_maps_to_serializable_immediate() {
        for l in Level::ALL {
            let iso = isolation(l, None).unwrap();
            assert_eq!(iso.name, "serializable-immediate");
            assert_eq!(iso.begin, "BEGIN IMMEDIATE");
        }
        let imm = isolation(Level::Ser, Some("Serializable_Immediate")).unwrap();
        assert_eq!(imm.begin, "BEGIN IMMEDIATE");
        assert_eq!(
            isolation(Level::Rc, Some("serializable")).unwrap().name,
            "serializable-immediate"
        );
        let def = isolation(Level::Ser, Some("serializable-deferred")).unwrap();
        assert_eq!((def.name, def.begin), ("serializable-deferred", "BEGIN"));
    }

    #[test]
    fn read_only_transactions_do_not_take_the_write_lock() {
        let imm = isolation(Level::Ser, None).unwrap();
        assert_eq!(begin_statement(&imm, false), "BEGIN IMMEDIATE");
        assert_eq!(begin_statement(&imm, true), "BEGIN");
        let def = isolation(Level::Ser, Some("deferred")).unwrap();
        assert_eq!(begin_statement(&def, false), "BEGIN");
        assert_eq!(begin_statement(&def, true), "BEGIN");
    }

    #[test]
    fn unknown_isolation_names_are_refused_clearly() {
        for bad in ["read-committed", "snapshot", "repeatable-read", "bogus"] {
            let e = isolation(Level::Si, Some(bad)).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("only serializable"), "{msg}");
            assert!(msg.contains(bad), "{msg}");
        }
    }

    #[test]
    fn result_codes_are_classified() {
        assert_eq!(classify_code(5), ErrorClass::LockTimeout);
        assert_eq!(classify_code(6), ErrorClass::LockTimeout);
        assert_eq!(classify_code(517), ErrorClass::Serialization);
        assert_eq!(classify_code(2067), ErrorClass::UniqueViolation);
        assert_eq!(classify_code(1555), ErrorClass::UniqueViolation);
        assert_eq!(classify_code(1299), ErrorClass::Statement);
        assert_eq!(classify_code(1), ErrorClass::Statement);
        assert_eq!(classify_code(10), ErrorClass::ConnectionLost);
        assert_eq!(classify_code(266), ErrorClass::ConnectionLost); // IOERR_READ
        assert_eq!(code_name(5), "SQLITE_BUSY");
        assert_eq!(code_name(517), "SQLITE_BUSY_SNAPSHOT");
        assert_eq!(code_name(2067), "SQLITE_CONSTRAINT_UNIQUE");
        assert_eq!(code_name(266), "SQLITE_IOERR");
        assert_eq!(code_name(4242), "SQLITE_4242");
    }

    #[test]
    fn io_errors_break_the_connection() {
        let e = sqlx::Error::Io(std::io::Error::other("disk gone"));
        let d = classify(&e);
        assert_eq!(d.class, ErrorClass::ConnectionLost);
        assert!(d.text().starts_with("connection-lost: "), "{}", d.text());
    }

    #[test]
    fn url_forms_name_the_file() {
        let dir = PathBuf::from("/tmp/run");
        let s = Sqlite::new(&OpenOptions::new(vec![], dir.clone())).unwrap();
        assert_eq!(s.path, dir.join("sqlite.db"));
        for u in ["sqlite:///tmp/x.db", "sqlite:/tmp/x.db", "/tmp/x.db"] {
            let s = Sqlite::new(&OpenOptions::new(vec![u.into()], dir.clone())).unwrap();
            assert_eq!(s.path, PathBuf::from("/tmp/x.db"), "{u}");
        }
        assert!(Sqlite::new(&OpenOptions::new(
            vec!["sqlite::memory:".into()],
            dir.clone()
        ))
        .is_err());
        assert!(Sqlite::new(&OpenOptions::new(vec!["a".into(), "b".into()], dir)).is_err());
    }
}
