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
pub mod memdb;
pub mod postgres;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use history::{Level, Op, Status};
use workloads::{Plan, Schema};

pub use error::{redact_url, AdapterError, DbError, ErrorClass, Phase};

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

    /// Drops and recreates the tables `schema` needs; the keys start absent.
    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError>;

    /// Opens one connection for `session`; may be called again for the same
    /// client after its connection broke.
    async fn connect(&self, session: u64) -> Result<Box<dyn Session>, AdapterError>;
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
}

impl DbKind {
    /// The name used by `--db`.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Sqlite => "sqlite",
            DbKind::Postgres => "postgres",
            DbKind::Memdb => "memdb",
        }
    }
}

/// How to reach a database: what `--url` and the run folder say.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// `--url` values; empty means the database's default. Sessions are
    /// spread over several URLs round-robin.
    pub urls: Vec<String>,
    /// The run folder (SQLite keeps its file there unless a URL names one).
    pub run_dir: PathBuf,
    /// How long to wait for any one statement before abandoning the
    /// connection (the transaction is then `fail`, or `info` at COMMIT).
    pub statement_timeout: Duration,
    /// For `memdb`: the isolation bug to switch on.
    pub bug: Option<memdb::Bug>,
    /// For `memdb`: the seed of its random choices.
    pub seed: u64,
}

impl OpenOptions {
    /// Options with the default statement timeout (30 s).
    pub fn new(urls: Vec<String>, run_dir: PathBuf) -> OpenOptions {
        OpenOptions {
            urls,
            run_dir,
            statement_timeout: Duration::from_secs(30),
            bug: None,
            seed: 0,
        }
    }
}

/// Opens the adapter for `kind`. Validates the options; connects nowhere
/// yet.
pub fn open(kind: DbKind, opts: &OpenOptions) -> Result<Arc<dyn Database>, AdapterError> {
    Ok(match kind {
        DbKind::Sqlite => Arc::new(sqlite::Sqlite::new(opts)?),
        DbKind::Postgres => Arc::new(postgres::Postgres::new(opts)?),
        DbKind::Memdb => Arc::new(memdb::MemDatabase::new(opts)?),
    })
}

/// Normalizes an `--isolation` name: lowercase, `_` and spaces as `-`.
pub(crate) fn normalize_isolation(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['_', ' '], "-")
}
