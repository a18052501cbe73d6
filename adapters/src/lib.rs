//! Database adapters: connect, choose the isolation level, run a
//! [`Plan`](workloads::Plan), and record what the database answered.
//!
//! Every database is a [`Database`]; each client connection is a
//! [`Session`]. A session runs one plan as one transaction and returns an
//! [`Outcome`]: the ops with the values the database really returned, the
//! status (`ok` / `fail` / `info`) and the error text. The runner stamps the
//! transaction's id, session and times. The plan executor is shared
//! ([`exec`]); each adapter supplies its SQL dialect and error
//! classification.

pub mod error;
pub mod exec;
pub mod family;
pub mod memdb;
pub mod mysql;
pub mod postgres;
pub mod sqlite;
pub mod tables;
pub mod tidb;
pub mod tpcc;
pub mod yugabyte;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use history::{DbTs, Level, Op, Status};
use workloads::{Plan, Schema};

pub use error::{
    redact_url, AdapterError, ConnectFailure, DbError, ErrorClass, GiveUp, GiveUpNow, Limits,
    Phase, GAVE_UP,
};
pub use tables::TableNames;

/// The isolation a database will run transactions at: its own name for it
/// and the statement that opens a transaction at that level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Isolation {
    /// The database's own name for the level, as given to `--isolation`
    /// (e.g. `repeatable-read`); recorded in the history header and report.
    pub name: &'static str,
    /// The statement that opens a transaction at this level.
    pub begin: &'static str,
}

impl Isolation {
    /// The level the database calls `name`, opened with `begin`.
    pub const fn new(name: &'static str, begin: &'static str) -> Isolation {
        Isolation { name, begin }
    }
}

/// What running one plan gave: the recorded ops and the transaction's fate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The ops as executed, with the values the database returned; a write
    /// whose statement failed is still listed (it was attempted).
    pub ops: Vec<Op>,
    /// `ok` committed, `fail` surely not committed, `info` unknown.
    pub status: Status,
    /// The error that ended the transaction (`fail` and `info`).
    pub error: Option<DbError>,
    /// True when the connection must be replaced before the next plan.
    pub broken: bool,
    /// The database's own start/commit timestamps of the transaction, where
    /// it reports them (TiDB), for white-box checking.
    pub dbts: Option<DbTs>,
}

impl Outcome {
    /// The error text recorded in the history (`code: message`).
    pub fn error_text(&self) -> Option<String> {
        self.error.as_ref().map(DbError::text)
    }
}

/// A database the harness can test. Object safe, so the runner can hold an
/// `Arc<dyn Database>` whatever `--db` says.
#[async_trait]
pub trait Database: Send + Sync {
    /// The name used by `--db`.
    fn name(&self) -> &'static str;

    /// Where the database is, for reports: URL(s) with passwords redacted,
    /// or the file.
    fn location(&self) -> String;

    /// The database setting to run at so that `level` is promised, or the
    /// one named by `explicit` (`--isolation`); refuses levels and names the
    /// database does not offer, with a message listing what it does offer.
    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError>;

    /// Creates the tables `schema` needs, under the names of
    /// [`OpenOptions::tables`]; the keys start absent. With a run's own
    /// names it first takes the run's database-level lock (where the
    /// database has one) and refuses tables that already exist (another
    /// run's); with the fixed names it drops and recreates them.
    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError>;

    /// Ends the run on the database once the clients have stopped: drops
    /// the tables this adapter's [`Database::setup`] created, unless
    /// `keep_tables`, and releases the run's lock. Never drops tables it
    /// did not create. Goes to the database itself, never through a fault
    /// proxy ([`OpenOptions::admin_urls`]), and keeps trying while it
    /// cannot get through, for up to [`OpenOptions::teardown_wait`]; an
    /// error means the tables are still there.
    async fn teardown(&self, keep_tables: bool) -> Result<(), AdapterError> {
        let _ = keep_tables;
        Ok(())
    }

    /// Opens one connection for the client numbered `client`, which picks
    /// its node where there are several. Called again with the same number
    /// after the connection broke, it reconnects the client to the same
    /// node, as a Jepsen worker keeps its node: a client that moved on
    /// would leave the nodes it left untested and crowd the ones it joined.
    async fn connect(&self, client: u64) -> Result<Box<dyn Session>, AdapterError>;

    /// What the adapter skipped or could not do so far (e.g. TiDB-only
    /// statements on a server that is not TiDB), each said once, for the
    /// run's warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// What the server says it is (`VERSION()`, TiDB's `tidb_version()`),
    /// asked once before a run, for the history header: a finding names
    /// exactly what was tested. `None` where the adapter does not ask.
    async fn server(&self) -> Option<String> {
        None
    }

    /// The session settings the adapter applies beyond the isolation
    /// (`--session-var`), as `name=value`, for the history header.
    fn settings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One client connection. Its transactions run one after another.
#[async_trait]
pub trait Session: Send {
    /// Runs `plan` as one transaction at `iso`. `Err` only when the plan
    /// cannot be expressed for this database (nothing was sent); every
    /// database error is reported in the [`Outcome`].
    async fn run(&mut self, plan: &Plan, iso: &Isolation) -> Result<Outcome, AdapterError>;

    /// Closes the connection politely (best effort).
    async fn close(self: Box<Self>);

    /// The cluster node that served the last plan run, when the session
    /// knows it (a session routed over a cluster's nodes); recorded as the
    /// transaction's `node`.
    fn node(&self) -> Option<String> {
        None
    }

    /// Runs a workload's end-of-run check on the final database state
    /// (TPC-C's consistency conditions), once the clients have stopped.
    /// The default says the adapter cannot; [`exec::SqlSession`] runs it
    /// through its connection's [`tpcc::TpccConn`].
    async fn end_check(
        &mut self,
        check: workloads::EndCheck,
    ) -> Result<workloads::EndReport, AdapterError> {
        Err(AdapterError::Unsupported(format!(
            "this database cannot run the {} check",
            check.name()
        )))
    }
}

/// The databases this crate can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DbKind {
    /// Embedded SQLite (bundled), a file in the run folder.
    Sqlite,
    /// PostgreSQL over tokio-postgres.
    Postgres,
    /// The in-process multi-version store, with optional bugs.
    Memdb,
    /// MySQL 8 or MariaDB 10.11+ over mysql_async.
    Mysql,
    /// TiDB over mysql_async (optimistic or pessimistic transactions).
    Tidb,
    /// YugabyteDB's YSQL over tokio-postgres.
    Yugabyte,
}

impl DbKind {
    /// The name used by `--db`.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Sqlite => "sqlite",
            DbKind::Postgres => "postgres",
            DbKind::Memdb => "memdb",
            DbKind::Mysql => "mysql",
            DbKind::Tidb => "tidb",
            DbKind::Yugabyte => "yugabyte",
        }
    }
}

/// How reads lock the rows they read (`--read-lock`), for testing what
/// locking reads add to a level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadLock {
    /// Plain `SELECT`: a consistent (snapshot) read where the level has one.
    #[default]
    Plain,
    /// `SELECT ... FOR UPDATE`: an exclusive lock on every row read.
    ForUpdate,
    /// `SELECT ... LOCK IN SHARE MODE` (MySQL) / `FOR SHARE` (PostgreSQL).
    Share,
}

impl ReadLock {
    /// The names `--read-lock` accepts, by value.
    pub const NAMES: [(&'static str, ReadLock); 3] = [
        ("plain", ReadLock::Plain),
        ("for-update", ReadLock::ForUpdate),
        ("share", ReadLock::Share),
    ];

    /// Parses a `--read-lock` value (`plain`, `for-update`, `share`).
    pub fn parse(s: &str) -> Option<ReadLock> {
        let n = normalize_isolation(s);
        Self::NAMES
            .iter()
            .find(|(name, _)| *name == n)
            .map(|(_, r)| *r)
    }

    /// The name `--read-lock` takes.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("plain", |(n, _)| n)
    }
}

/// How to reach a database: what `--url` and the run folder say.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// `--url` values; empty means the database's default. Sessions are
    /// spread over several URLs round-robin.
    pub urls: Vec<String>,
    /// Where the run's tables are created and dropped (and the server's
    /// version asked), when not at the first of `urls`: the database
    /// itself when `urls` point at a fault proxy, so that setup and
    /// teardown never go through the faults. The first is used; the drop
    /// tries the others in turn (other nodes of the same replicated
    /// database) while it cannot reach one. Empty: the first of `urls`.
    pub admin_urls: Vec<String>,
    /// How long [`Database::teardown`] keeps trying to drop the tables
    /// while the database cannot be reached or refuses (a node killed or
    /// restarting, a cluster still rejoining) before it gives up.
    pub teardown_wait: Duration,
    /// The run folder (SQLite keeps its file there unless a URL names one).
    pub run_dir: PathBuf,
    /// How long to wait for any one statement before abandoning the
    /// connection (the transaction is then `fail`, or `info` at COMMIT).
    pub statement_timeout: Duration,
    /// The run's signal to abandon every statement in flight (after an
    /// interrupt's grace period); never, by default.
    pub give_up: GiveUp,
    /// For `memdb`: the isolation bug to switch on.
    pub bug: Option<memdb::Bug>,
    /// For `memdb`: the seed of its random choices.
    pub seed: u64,
    /// How reads lock (postgres, yugabyte, mysql, tidb).
    pub read_lock: ReadLock,
    /// For `tidb`: `optimistic` or `pessimistic`; `None` is the
    /// `tidb_txn_mode` URL parameter, else pessimistic.
    pub tidb_txn_mode: Option<String>,
    /// For `mysql` and `tidb`: session variables set on every connection
    /// (`--session-var NAME=VALUE`), e.g. TiDB's `tidb_enable_async_commit`.
    pub session_vars: Vec<(String, String)>,
    /// The names of the tables: [`TableNames::fixed`] unless set;
    /// `harness run` gives every run its own ([`TableNames::for_run`]).
    pub tables: TableNames,
}

impl OpenOptions {
    /// What each statement may take.
    pub fn limits(&self) -> Limits {
        Limits {
            statement: self.statement_timeout,
            give_up: self.give_up.clone(),
        }
    }

    /// Options with the default statement timeout (30 s), setup and
    /// teardown at the first URL, and 30 s for the drop to get through.
    pub fn new(urls: Vec<String>, run_dir: PathBuf) -> OpenOptions {
        OpenOptions {
            urls,
            admin_urls: Vec::new(),
            teardown_wait: Duration::from_secs(30),
            run_dir,
            statement_timeout: Duration::from_secs(30),
            give_up: GiveUp::never(),
            bug: None,
            seed: 0,
            read_lock: ReadLock::Plain,
            tidb_txn_mode: None,
            session_vars: Vec::new(),
            tables: TableNames::fixed(),
        }
    }
}

/// Opens the adapter for `kind`. Validates the options; connects nowhere
/// yet.
pub fn open(kind: DbKind, opts: &OpenOptions) -> Result<Arc<dyn Database>, AdapterError> {
    if opts.read_lock != ReadLock::Plain && matches!(kind, DbKind::Sqlite | DbKind::Memdb) {
        return Err(AdapterError::Config(format!(
            "--read-lock {} applies to postgres, yugabyte, mysql and tidb, not {}",
            opts.read_lock.name(),
            kind.name()
        )));
    }
    if opts.tidb_txn_mode.is_some() && kind != DbKind::Tidb {
        return Err(AdapterError::Config(format!(
            "--tidb-txn-mode applies to --db tidb, not {}",
            kind.name()
        )));
    }
    if !opts.session_vars.is_empty() && !matches!(kind, DbKind::Mysql | DbKind::Tidb) {
        return Err(AdapterError::Config(format!(
            "--session-var applies to mysql and tidb, not {}",
            kind.name()
        )));
    }
    Ok(match kind {
        DbKind::Sqlite => Arc::new(sqlite::Sqlite::new(opts)?),
        DbKind::Postgres => Arc::new(postgres::Postgres::new(opts)?),
        DbKind::Memdb => Arc::new(memdb::MemDatabase::new(opts)?),
        DbKind::Mysql => Arc::new(mysql::Mysql::new(opts)?),
        DbKind::Tidb => Arc::new(tidb::Tidb::new(opts)?),
        DbKind::Yugabyte => Arc::new(yugabyte::Yugabyte::new(opts)?),
    })
}

/// Normalizes an `--isolation` name: lowercase, `_` and spaces as `-`.
pub(crate) fn normalize_isolation(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['_', ' '], "-")
}
