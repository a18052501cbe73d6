//! Errors of the adapters, and the classification of database errors into
//! what they mean for a transaction's fate (docs/design.md).

use std::future::Future;
use std::time::Duration;

use history::Status;

/// An error that stops the harness from using a database at all: a bad URL,
/// an isolation level the database does not offer, a server that is down.
/// Per-transaction errors are not `AdapterError`s: they end up in an
/// [`crate::Outcome`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    /// The URL or another option cannot be used.
    #[error("{0}")]
    Config(String),
    /// The requested isolation level is not offered by the database.
    #[error("{0}")]
    Isolation(String),
    /// The database could not be reached; the message names the redacted
    /// URL and how to start the server.
    #[error("cannot connect to {db} at {url}: {detail}{hint}")]
    Connect {
        /// The database's name (`postgres`, `sqlite`).
        db: &'static str,
        /// The URL or file, with any password replaced by `***`.
        url: String,
        /// What went wrong.
        detail: String,
        /// How to fix it, starting with a separator (may be empty).
        hint: String,
    },
    /// Creating the tables failed.
    #[error("{db}: setting up the tables at {url} failed: {detail}")]
    Setup {
        /// The database's name.
        db: &'static str,
        /// The redacted URL or file.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// Dropping the run's tables failed (they are still there), after
    /// retrying for as long as [`crate::OpenOptions::teardown_wait`] says.
    #[error("{db}: the run's tables at {url} could not be dropped: {detail}")]
    Teardown {
        /// The database's name.
        db: &'static str,
        /// The redacted URL or file tried last.
        url: String,
        /// What went wrong the last time.
        detail: String,
    },
    /// The plan uses something the adapter cannot express (e.g. string keys
    /// in an integer-keyed table); nothing was sent to the database.
    #[error("unsupported plan: {0}")]
    Unsupported(String),
    /// An end-of-run check of the final database state could not read it.
    #[error("end-of-run check failed to run: {0}")]
    Check(String),
}

/// Why a connection could not be opened, as far as the driver's error
/// tells: it decides which hint a connection error gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectFailure {
    /// The server answered and refused the user or password (PostgreSQL
    /// 28P01 / 28000, MySQL 1045 / 1044 / 1698).
    Auth,
    /// The server answered and has no such database (PostgreSQL 3D000,
    /// MySQL 1049).
    NoDatabase,
    /// Nothing listens at the address (connection refused).
    Refused,
    /// Anything else: a timeout, an unknown host, a protocol error.
    Other,
}

impl ConnectFailure {
    /// From a PostgreSQL SQLSTATE.
    pub fn from_sqlstate(code: &str) -> ConnectFailure {
        match code {
            "28P01" | "28000" => ConnectFailure::Auth,
            "3D000" => ConnectFailure::NoDatabase,
            _ => ConnectFailure::Other,
        }
    }

    /// From a MySQL / MariaDB server error code.
    pub fn from_mysql_code(code: u16) -> ConnectFailure {
        match code {
            // Access denied for user (password), to database, plugin auth.
            1045 | 1044 | 1698 => ConnectFailure::Auth,
            1049 => ConnectFailure::NoDatabase,
            _ => ConnectFailure::Other,
        }
    }

    /// From the IO error under a driver error.
    pub fn from_io(e: &std::io::Error) -> ConnectFailure {
        match e.kind() {
            std::io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
            _ => ConnectFailure::Other,
        }
    }

    /// The hint to append to the connection error (starting with `; `);
    /// `server` is the database's "is the server running?" hint, which fits
    /// a refused connection and anything unexplained.
    pub fn hint(self, server: &str) -> String {
        match self {
            ConnectFailure::Auth => "; the server is running but refused the user name or \
                 password: check them in --url (user:password@host)"
                .into(),
            ConnectFailure::NoDatabase => "; the server is running but has no database of \
                 that name: create it, or name an existing one in --url (the path after the \
                 port)"
                .into(),
            ConnectFailure::Refused | ConnectFailure::Other => server.into(),
        }
    }
}

/// What a database error means for the transaction it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The database refused to serialize the transaction (SQLSTATE 40001,
    /// SQLite `SQLITE_BUSY_SNAPSHOT`); it was rolled back.
    Serialization,
    /// A deadlock was detected (40P01); the transaction was rolled back.
    Deadlock,
    /// A unique key was violated (23505), e.g. two concurrent inserts.
    UniqueViolation,
    /// A lock could not be had in time (55P03, a statement timeout, SQLite
    /// `SQLITE_BUSY`/`SQLITE_LOCKED`).
    LockTimeout,
    /// Any other error the database reported for a statement; the
    /// transaction is aborted, the connection still usable.
    Statement,
    /// The connection broke (IO error, closed socket, server shutdown, an
    /// error the driver cannot explain); its state is unknown.
    ConnectionLost,
    /// The harness gave up waiting for an answer; the connection is
    /// abandoned, its state is unknown.
    Timeout,
    /// An error at COMMIT that does not say whether the commit took effect,
    /// on a connection that stays usable: Galera's 1180 when the node lost
    /// the primary component while the write set was being replicated (the
    /// other nodes may have committed it).
    CommitUncertain,
    /// The node refuses all work for now, though the connection stays up:
    /// Galera's 1047 ("WSREP has not yet prepared node for application
    /// use") on a node cut off from the primary component. The transaction
    /// did not run; the session waits a little before its next one rather
    /// than spin on a node that says no.
    Unavailable,
    /// The database caught its own data in a state it should never be in
    /// (TiDB's assertion failure 8141, data/index inconsistency 8133-8139)
    /// and refused the transaction: a possible database bug, which the run
    /// reports as such, never as an ordinary abort.
    Integrity,
}

/// Where in a transaction an error happened; COMMIT is special, because a
/// broken connection there leaves the outcome unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Opening the transaction.
    Begin,
    /// A statement inside the transaction.
    Statement,
    /// The COMMIT itself.
    Commit,
}

impl ErrorClass {
    /// True when the connection cannot be used again and must be replaced.
    pub fn breaks_connection(self) -> bool {
        matches!(self, ErrorClass::ConnectionLost | ErrorClass::Timeout)
    }

    /// The transaction's fate: `info` only when the connection broke during
    /// COMMIT, or the database's answer to COMMIT leaves its outcome open
    /// ([`ErrorClass::CommitUncertain`]): the commit may or may not have
    /// happened. `fail` otherwise, since the database rolled back or never
    /// received COMMIT.
    pub fn status(self, phase: Phase) -> Status {
        if phase == Phase::Commit
            && (self.breaks_connection() || self == ErrorClass::CommitUncertain)
        {
            Status::Info
        } else {
            Status::Fail
        }
    }

    /// A short name, for statistics when the database gives no code.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Serialization => "serialization",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::UniqueViolation => "unique-violation",
            ErrorClass::LockTimeout => "lock-timeout",
            ErrorClass::Statement => "statement",
            ErrorClass::ConnectionLost => "connection-lost",
            ErrorClass::Timeout => "timeout",
            ErrorClass::CommitUncertain => "commit-uncertain",
            ErrorClass::Unavailable => "unavailable",
            ErrorClass::Integrity => "integrity",
        }
    }
}

/// A classified error of one database call, as an adapter's connection
/// reports it to the shared plan executor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbError {
    /// What the error means.
    pub class: ErrorClass,
    /// The database's code (`40001`, `SQLITE_BUSY`) or the class name.
    pub code: String,
    /// The database's message, without secrets.
    pub message: String,
}

impl DbError {
    /// The text recorded in the history: `code: message`.
    pub fn text(&self) -> String {
        format!("{}: {}", self.code, self.message)
    }
}

/// Replaces the password of a URL (`scheme://user:pass@host/...`, a
/// `password=` query parameter, or a `password=` key of a libpq key/value
/// string) with `***`, so that the URL can be printed.
pub fn redact_url(url: &str) -> String {
    let mut out = match url.find("://") {
        Some(i) => {
            let (scheme, rest) = url.split_at(i + 3);
            let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (auth, tail) = rest.split_at(auth_end);
            match auth.rfind('@') {
                Some(at) => {
                    let (userinfo, host) = auth.split_at(at);
                    match userinfo.find(':') {
                        Some(c) => format!("{scheme}{}:***{host}{tail}", &userinfo[..c]),
                        None => url.to_string(),
                    }
                }
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    };
    // `password=...` as a query parameter or a key/value pair.
    let mut search = 0;
    while let Some(pos) = out[search..].to_ascii_lowercase().find("password=") {
        let start = search + pos + "password=".len();
        let end = out[start..]
            .find(['&', ' ', '#'])
            .map_or(out.len(), |e| start + e);
        out.replace_range(start..end, "***");
        search = start + 3;
    }
    out
}

/// The error and its causes, joined (drivers put the OS error in the
/// source).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
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

/// Removes every occurrence of `secret` from `text` (used on driver
/// messages, in case one echoes a connection string).
pub fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if !s.is_empty() => text.replace(s, "***"),
        _ => text.to_string(),
    }
}

/// Awaits `fut`, turning "no answer within `limit`" into a timeout error.
pub(crate) async fn timed<T>(
    limit: Duration,
    fut: impl Future<Output = Result<T, DbError>>,
) -> Result<T, DbError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(DbError {
            class: ErrorClass::Timeout,
            code: "timeout".into(),
            message: format!("no answer within {} ms", limit.as_millis()),
        }),
    }
}

/// Lets a run abandon every statement in flight at once: what an
/// interrupted run does once its grace period for the transactions in
/// flight is over, so that a stuck database cannot hold it up.
#[derive(Clone, Debug, Default)]
pub struct GiveUp(Option<tokio::sync::watch::Receiver<bool>>);

/// The run's end of a [`GiveUp`].
#[derive(Debug)]
pub struct GiveUpNow(tokio::sync::watch::Sender<bool>);

impl GiveUp {
    /// A signal that never comes (the default: statements wait for their
    /// own timeout only).
    pub fn never() -> GiveUp {
        GiveUp(None)
    }

    /// A signal and the handle that sends it.
    pub fn pair() -> (GiveUpNow, GiveUp) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (GiveUpNow(tx), GiveUp(Some(rx)))
    }

    /// Resolves once the run gives up (never, if it cannot any more).
    async fn wait(&self) {
        if let Some(rx) = &self.0 {
            let mut rx = rx.clone();
            if rx.wait_for(|g| *g).await.is_ok() {
                return;
            }
        }
        std::future::pending().await
    }
}

impl GiveUpNow {
    /// Abandons every statement in flight, and every later one.
    pub fn now(&self) {
        let _ = self.0.send(true);
    }
}

/// What a statement may take: its own timeout, and no longer than the run
/// is willing to wait ([`GiveUp`]).
#[derive(Clone, Debug)]
pub struct Limits {
    /// The statement timeout (`--statement-timeout`).
    pub statement: Duration,
    /// The run's signal to abandon what is in flight.
    pub give_up: GiveUp,
}

/// The error of a statement abandoned by [`GiveUpNow::now`]: a timeout (the
/// connection is dropped; `info` at COMMIT, `fail` before it).
pub const GAVE_UP: &str = "interrupted";

impl Limits {
    /// Awaits `fut` within both limits; running out of either is a
    /// [`ErrorClass::Timeout`].
    pub(crate) async fn timed<T>(
        &self,
        fut: impl Future<Output = Result<T, DbError>>,
    ) -> Result<T, DbError> {
        tokio::select! {
            r = timed(self.statement, fut) => r,
            () = self.give_up.wait() => Err(DbError {
                class: ErrorClass::Timeout,
                code: GAVE_UP.into(),
                message: "abandoned: the run was interrupted and stopped waiting for it".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords_in_urls() {
        let cases = [
            (
                "postgres://user:secret@host:5432/db",
                "postgres://user:***@host:5432/db",
            ),
            ("postgres://user@host/db", "postgres://user@host/db"),
            ("postgres://host/db", "postgres://host/db"),
            (
                "postgres://u:p%40ss@h/db?sslmode=disable",
                "postgres://u:***@h/db?sslmode=disable",
            ),
            (
                "postgres://u@h/db?password=hunter2&x=1",
                "postgres://u@h/db?password=***&x=1",
            ),
            (
                "host=h user=u password=hunter2 dbname=d",
                "host=h user=u password=*** dbname=d",
            ),
            (
                "mysql://root:pw@127.0.0.1:3306/test",
                "mysql://root:***@127.0.0.1:3306/test",
            ),
        ];
        for (url, want) in cases {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }

    #[test]
    fn connect_failures_get_the_hint_that_fits() {
        use ConnectFailure::*;
        for (code, want) in [
            ("28P01", Auth),
            ("28000", Auth),
            ("3D000", NoDatabase),
            ("53300", Other),
        ] {
            assert_eq!(ConnectFailure::from_sqlstate(code), want, "{code}");
        }
        for (code, want) in [
            (1045, Auth),
            (1044, Auth),
            (1698, Auth),
            (1049, NoDatabase),
            (1040, Other),
        ] {
            assert_eq!(ConnectFailure::from_mysql_code(code), want, "{code}");
        }
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(ConnectFailure::from_io(&refused), Refused);
        let other = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert_eq!(ConnectFailure::from_io(&other), Other);
        let server = "; is the server running?";
        assert!(Auth
            .hint(server)
            .contains("refused the user name or password"));
        assert!(!Auth.hint(server).contains("running?"));
        assert!(NoDatabase.hint(server).contains("no database of that name"));
        assert_eq!(Refused.hint(server), server);
        assert_eq!(Other.hint(server), server);
    }

    #[test]
    fn scrub_removes_the_secret() {
        assert_eq!(scrub("bad pass hunter2!", Some("hunter2")), "bad pass ***!");
        assert_eq!(scrub("no secret", None), "no secret");
        assert_eq!(scrub("empty", Some("")), "empty");
    }

    #[test]
    fn only_a_broken_connection_at_commit_is_info() {
        use ErrorClass::*;
        for c in [
            Serialization,
            Deadlock,
            UniqueViolation,
            LockTimeout,
            Statement,
        ] {
            assert!(!c.breaks_connection());
            for p in [Phase::Begin, Phase::Statement, Phase::Commit] {
                assert_eq!(c.status(p), Status::Fail, "{c:?} {p:?}");
            }
        }
        assert!(!CommitUncertain.breaks_connection());
        assert_eq!(CommitUncertain.status(Phase::Statement), Status::Fail);
        assert_eq!(CommitUncertain.status(Phase::Commit), Status::Info);
        for c in [ConnectionLost, Timeout] {
            assert!(c.breaks_connection());
            assert_eq!(c.status(Phase::Begin), Status::Fail);
            assert_eq!(c.status(Phase::Statement), Status::Fail);
            assert_eq!(c.status(Phase::Commit), Status::Info);
        }
    }
}
