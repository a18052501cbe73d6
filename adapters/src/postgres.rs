//! PostgreSQL through tokio-postgres: one connection per session, levels
//! read committed, repeatable read (snapshot isolation) and serializable.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use history::Level;
use tokio_postgres::{Client, Config, NoTls, Statement};
use workloads::Schema;

use crate::error::{redact_url, scrub, AdapterError, DbError, ErrorClass};
use crate::exec::{parse_list, Conn, SqlSession};
use crate::{normalize_isolation, Database, Isolation, OpenOptions, Session};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// All SQL this adapter sends, in one place. Parameters are `$N`.
mod sql {
    pub const SETUP_REGISTERS: &str = "SET lock_timeout = '10s'; \
         DROP TABLE IF EXISTS isoharness_registers, isoharness_lists; \
         CREATE TABLE isoharness_registers (k BIGINT PRIMARY KEY, v BIGINT NOT NULL, \
         tomb BOOLEAN NOT NULL DEFAULT false);";
    pub const SETUP_LISTS: &str = "SET lock_timeout = '10s'; \
         DROP TABLE IF EXISTS isoharness_registers, isoharness_lists; \
         CREATE TABLE isoharness_lists (k BIGINT PRIMARY KEY, v TEXT NOT NULL);";
    /// Run on every new session: a lock wait ends in a clean 55P03 before
    /// the harness's own statement timeout abandons the connection.
    pub const SESSION_INIT: &str = "SET lock_timeout = '10s'";
    pub const BEGIN_RC: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";
    pub const BEGIN_RR: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ";
    pub const BEGIN_SER: &str = "BEGIN ISOLATION LEVEL SERIALIZABLE";
    pub const COMMIT: &str = "COMMIT";
    pub const ROLLBACK: &str = "ROLLBACK";
    pub const READ: &str = "SELECT v, tomb FROM isoharness_registers WHERE k = $1";
    pub const INSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES ($1, $2, false)";
    pub const REVIVE: &str =
        "UPDATE isoharness_registers SET v = $2, tomb = false WHERE k = $1 AND tomb";
    pub const UPSERT: &str = "INSERT INTO isoharness_registers (k, v, tomb) VALUES ($1, $2, $3) \
         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, tomb = EXCLUDED.tomb";
    pub const RANGE: &str =
        "SELECT k, v FROM isoharness_registers WHERE k BETWEEN $1 AND $2 ORDER BY k";
    pub const APPEND: &str = "INSERT INTO isoharness_lists (k, v) VALUES ($1, $2) \
         ON CONFLICT (k) DO UPDATE SET v = isoharness_lists.v || ',' || EXCLUDED.v";
    pub const READ_LIST: &str = "SELECT v FROM isoharness_lists WHERE k = $1";
}

const READ_COMMITTED: Isolation = Isolation {
    name: "read-committed",
    begin: sql::BEGIN_RC,
};
const REPEATABLE_READ: Isolation = Isolation {
    name: "repeatable-read",
    begin: sql::BEGIN_RR,
};
const SERIALIZABLE: Isolation = Isolation {
    name: "serializable",
    begin: sql::BEGIN_SER,
};

/// How to start a server, appended to connection errors.
const HINT: &str =
    "; is the server running? Start one with `docker compose --profile postgres up -d`, \
     or `pg_ctl -D DATADIR -o '-p 5432' start`, or point --url at a running server";

/// One endpoint: its parsed config, its printable URL, its password.
struct Endpoint {
    config: Config,
    shown: String,
    secret: Option<String>,
}

/// The PostgreSQL adapter.
pub struct Postgres {
    endpoints: Vec<Endpoint>,
    connect_timeout: Duration,
    statement_timeout: Duration,
}

impl Postgres {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Postgres, AdapterError> {
        let urls: Vec<&str> = if opts.urls.is_empty() {
            vec![DEFAULT_URL]
        } else {
            opts.urls.iter().map(String::as_str).collect()
        };
        let mut endpoints = Vec::with_capacity(urls.len());
        for url in urls {
            let shown = redact_url(url);
            let config = Config::from_str(url).map_err(|e| {
                AdapterError::Config(format!("postgres: cannot use --url {shown}: {e}"))
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
        Ok(Postgres {
            endpoints,
            connect_timeout: Duration::from_secs(3),
            statement_timeout: opts.statement_timeout,
        })
    }

    async fn open(&self, idx: usize) -> Result<(Client, &Endpoint), AdapterError> {
        let ep = &self.endpoints[idx % self.endpoints.len()];
        let fail = |detail: String| AdapterError::Connect {
            db: "postgres",
            url: ep.shown.clone(),
            detail: scrub(&detail, ep.secret.as_deref()),
            hint: HINT.into(),
        };
        let mut cfg = ep.config.clone();
        cfg.connect_timeout(self.connect_timeout);
        let limit = self.connect_timeout + Duration::from_secs(1);
        let (client, connection) = match tokio::time::timeout(limit, cfg.connect(NoTls)).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(fail(error_chain(&e))),
            Err(_) => return Err(fail(format!("no answer within {} s", limit.as_secs()))),
        };
        tokio::spawn(async move {
            // Ends when the connection closes; errors reach the client.
            let _ = connection.await;
        });
        Ok((client, ep))
    }
}

/// The error and its causes, joined (tokio-postgres puts the OS error in
/// the source).
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
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            DbError {
                class: classify_sqlstate(code),
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
        let shown: Vec<&str> = self.endpoints.iter().map(|e| e.shown.as_str()).collect();
        shown.join(",")
    }

    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        isolation(level, explicit)
    }

    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        let (client, ep) = self.open(0).await?;
        let script = match schema {
            Schema::Registers => sql::SETUP_REGISTERS,
            Schema::Lists => sql::SETUP_LISTS,
        };
        client
            .batch_execute(script)
            .await
            .map_err(|e| AdapterError::Setup {
                db: "postgres",
                url: ep.shown.clone(),
                detail: classify(&e, ep.secret.as_deref()).text(),
            })
    }

    async fn connect(&self, session: u64) -> Result<Box<dyn Session>, AdapterError> {
        let idx = (session % self.endpoints.len() as u64) as usize;
        let (client, ep) = self.open(idx).await?;
        let secret = ep.secret.clone();
        if let Err(e) = client.batch_execute(sql::SESSION_INIT).await {
            return Err(AdapterError::Connect {
                db: "postgres",
                url: ep.shown.clone(),
                detail: classify(&e, secret.as_deref()).text(),
                hint: String::new(),
            });
        }
        Ok(Box::new(SqlSession::new(
            PgConn {
                client,
                stmts: HashMap::new(),
                secret,
            },
            self.statement_timeout,
        )))
    }
}

/// One PostgreSQL connection with its prepared statements.
struct PgConn {
    client: Client,
    stmts: HashMap<&'static str, Statement>,
    secret: Option<String>,
}

impl PgConn {
    fn err(&self, e: tokio_postgres::Error) -> DbError {
        classify(&e, self.secret.as_deref())
    }

    /// The prepared statement for `sql`, preparing it on first use.
    async fn stmt(&mut self, sql: &'static str) -> Result<Statement, DbError> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await.map_err(|e| self.err(e))?;
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
        self.simple(sql).await
    }

    async fn read(&mut self, k: i64) -> Result<Option<(i64, bool)>, DbError> {
        let st = self.stmt(sql::READ).await?;
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
        let st = self.stmt(sql::RANGE).await?;
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
        let st = self.stmt(sql::READ_LIST).await?;
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

    #[test]
    fn urls_are_parsed_and_shown_redacted() {
        let opts = OpenOptions::new(
            vec!["postgres://alice:s3cret@db.example:5433/app".into()],
            Default::default(),
        );
        let pg = Postgres::new(&opts).unwrap();
        assert_eq!(pg.location(), "postgres://alice:***@db.example:5433/app");
        assert_eq!(pg.endpoints[0].secret.as_deref(), Some("s3cret"));
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
