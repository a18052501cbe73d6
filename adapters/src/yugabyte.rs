//! YugabyteDB's YSQL through tokio-postgres, on the PostgreSQL family's
//! connection and statement code ([`crate::postgres`]). What YugabyteDB
//! adds:
//!
//! * its levels: read committed, snapshot (`REPEATABLE READ`) and
//!   serializable. Read committed is real only when the tservers run with
//!   `yb_enable_read_committed_isolation=true` (the compose cluster does);
//!   otherwise YSQL runs READ COMMITTED as snapshot isolation. Once per
//!   run, in a transaction of its own, the adapter asks
//!   `yb_effective_transaction_isolation_level`; when read committed
//!   transactions run and it is not read committed, the run's warnings
//!   say so;
//! * reads from the tablet leaders only (`yb_read_from_followers = off`);
//! * its retryable errors: 40001 (read restarts, conflicts, aborted
//!   transactions), 40P01, and the same conditions when an older server
//!   reports them as internal errors (`XX000: Restart read required`).
//!
//! On a server that is plain PostgreSQL (to test the adapter without a
//! cluster) the YugabyteDB-only settings are skipped and the run's warnings
//! say so, once.

use std::sync::Arc;

use async_trait::async_trait;
use history::Level;
use workloads::Schema;

use crate::error::{AdapterError, ErrorClass};
use crate::postgres::{self, Family, RcCheck};
use crate::{normalize_isolation, Database, Isolation, OpenOptions, Session};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "postgres://yugabyte@127.0.0.1:5433/yugabyte";

/// How to start the cluster, appended to connection errors.
const HINT: &str = "; is the cluster running? Start it with \
     `docker compose --profile yugabyte up -d` (it needs a minute to be ready), \
     or point --url at a YugabyteDB YSQL server";

/// The YugabyteDB-only SQL, in one place (the rest is
/// [`crate::postgres`]'s).
mod sql {
    /// Session settings run on every new YugabyteDB session.
    pub const SESSION_INIT: &[&str] = &["SET yb_read_from_followers = off"];
    /// The level a transaction really runs at.
    pub const EFFECTIVE_LEVEL: &str = "SHOW yb_effective_transaction_isolation_level";
}

/// Snapshot isolation: YSQL's REPEATABLE READ.
const SNAPSHOT: Isolation = Isolation {
    name: "snapshot",
    begin: postgres::sql::BEGIN_RR,
};

/// The isolation YugabyteDB runs at to promise `level`, or the one named by
/// `--isolation`.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    if let Some(name) = explicit {
        return match normalize_isolation(name).as_str() {
            "read-committed" => Ok(postgres::READ_COMMITTED),
            "snapshot" | "repeatable-read" | "si" => Ok(SNAPSHOT),
            "serializable" => Ok(postgres::SERIALIZABLE),
            _ => Err(AdapterError::Isolation(format!(
                "yugabyte has no isolation level {name:?}; use one of: \
                 read-committed, snapshot (repeatable-read), serializable"
            ))),
        };
    }
    Ok(match level {
        Level::Rc => postgres::READ_COMMITTED,
        Level::Ra | Level::Cc | Level::Pc | Level::Si | Level::StrongSessionSi => SNAPSHOT,
        Level::StrongSi | Level::Ser | Level::StrongSessionSer | Level::Sser => {
            postgres::SERIALIZABLE
        }
    })
}

/// Messages of YugabyteDB's retryable conflicts, whatever SQLSTATE came
/// with them (older servers send `XX000`).
const CONFLICTS: &[&str] = &[
    "restart read required",
    "transaction aborted",
    "conflicts with higher priority transaction",
    "conflicts with committed transaction",
    "aborted by a conflict",
    "value write after transaction start",
    "could not serialize access",
    "try again",
];

/// What a YSQL error means: the SQLSTATE as PostgreSQL's, except that an
/// otherwise unexplained error whose message is one of YugabyteDB's
/// conflicts is a serialization failure, and an RPC timeout is a timeout
/// (at COMMIT the outcome is unknown).
pub fn classify(code: &str, message: &str) -> ErrorClass {
    let class = postgres::classify_sqlstate(code);
    if class != ErrorClass::Statement {
        return class;
    }
    let m = message.to_ascii_lowercase();
    if CONFLICTS.iter().any(|c| m.contains(c)) {
        ErrorClass::Serialization
    } else if m.contains("timed out") || m.contains("passed its deadline") {
        ErrorClass::Timeout
    } else {
        class
    }
}

/// True when `version()` is YugabyteDB's (`PostgreSQL 11.2-YB-2.20.2.0-b0 ...`).
pub fn is_yugabyte(version: &str) -> bool {
    version.contains("-YB-")
}

/// The YugabyteDB adapter.
pub struct Yugabyte {
    family: Family,
    rc_check: Arc<RcCheck>,
}

impl Yugabyte {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Yugabyte, AdapterError> {
        let family = Family::new("yugabyte", HINT, DEFAULT_URL, classify, opts)?;
        let rc_check = Arc::new(RcCheck::new(
            "yugabyte",
            sql::EFFECTIVE_LEVEL,
            "yugabyte: READ COMMITTED runs as snapshot isolation on this cluster \
             (start the tservers with yb_enable_read_committed_isolation=true)",
            Arc::clone(&family.notes),
        ));
        Ok(Yugabyte { family, rc_check })
    }
}

#[async_trait]
impl Database for Yugabyte {
    fn name(&self) -> &'static str {
        "yugabyte"
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
        let version = self.family.version(ep, &client).await?;
        if !is_yugabyte(&version) {
            let mut skipped = sql::SESSION_INIT.to_vec();
            skipped.push(sql::EFFECTIVE_LEVEL);
            self.family.notes.add(format!(
                "yugabyte: the server at {} is not YugabyteDB ({}); skipped the \
                 YugabyteDB-only statements `{}`",
                ep.shown,
                version.split(" on ").next().unwrap_or(&version),
                skipped.join("`, `")
            ));
            return Ok(self.family.session(ep, client, None));
        }
        for stmt in sql::SESSION_INIT {
            match client.batch_execute(stmt).await {
                Ok(()) => {}
                // A setting this version does not have: nothing to set.
                Err(e) if e.code().map(|c| c.code()) == Some("42704") => {
                    self.family.notes.add(format!(
                        "yugabyte: skipped `{stmt}`: the server ({}) has no such setting",
                        version.split(" on ").next().unwrap_or(&version)
                    ));
                }
                Err(e) => return Err(self.family.init_error(ep, &e)),
            }
        }
        self.rc_check.probe(&client).await;
        let check = Some(Arc::clone(&self.rc_check));
        Ok(self.family.session(ep, client, check))
    }

    fn warnings(&self) -> Vec<String> {
        self.family.notes.all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_the_weakest_setting_that_promises_them() {
        use Level::*;
        let rc = "BEGIN ISOLATION LEVEL READ COMMITTED";
        let rr = "BEGIN ISOLATION LEVEL REPEATABLE READ";
        let ser = "BEGIN ISOLATION LEVEL SERIALIZABLE";
        let want = [
            (Rc, "read-committed", rc),
            (Ra, "snapshot", rr),
            (Cc, "snapshot", rr),
            (Pc, "snapshot", rr),
            (Si, "snapshot", rr),
            (StrongSessionSi, "snapshot", rr),
            (StrongSi, "serializable", ser),
            (Ser, "serializable", ser),
            (StrongSessionSer, "serializable", ser),
            (Sser, "serializable", ser),
        ];
        assert_eq!(want.len(), Level::ALL.len());
        for (level, name, begin) in want {
            let iso = isolation(level, None).unwrap();
            assert_eq!((iso.name, iso.begin), (name, begin), "{level}");
        }
    }

    #[test]
    fn explicit_isolation() {
        assert_eq!(
            isolation(Level::Ser, Some("snapshot")).unwrap().name,
            "snapshot"
        );
        assert_eq!(
            isolation(Level::Ser, Some("repeatable-read")).unwrap().name,
            "snapshot"
        );
        assert_eq!(
            isolation(Level::Si, Some("READ COMMITTED")).unwrap().name,
            "read-committed"
        );
        let e = isolation(Level::Si, Some("chaos")).unwrap_err().to_string();
        assert!(e.contains("snapshot"), "{e}");
    }

    #[test]
    fn yugabyte_errors_are_classified() {
        use ErrorClass::*;
        let cases = [
            (
                "40001",
                "Restart read required at: { read: ... }",
                Serialization,
            ),
            (
                "40001",
                "could not serialize access due to concurrent update",
                Serialization,
            ),
            ("40P01", "deadlock detected", Deadlock),
            ("XX000", "Query error: Restart read required", Serialization),
            ("XX000", "Transaction aborted: kAborted", Serialization),
            (
                "XX000",
                "Operation expired: Transaction 1a2b expired or aborted by a conflict: 40001",
                Serialization,
            ),
            (
                "XX000",
                "Transaction 1a2b conflicts with higher priority transaction: 3c4d",
                Serialization,
            ),
            (
                "XX000",
                "Value write after transaction start",
                Serialization,
            ),
            (
                "XX000",
                "Timed out: Perform RPC to 127.0.0.1:9100 timed out",
                Timeout,
            ),
            ("XX000", "Network error: connection refused", Statement),
            (
                "23505",
                "duplicate key value violates unique constraint",
                UniqueViolation,
            ),
            (
                "57P01",
                "terminating connection due to administrator command",
                ConnectionLost,
            ),
            ("08006", "Transaction aborted", ConnectionLost),
            ("42P01", "relation does not exist", Statement),
        ];
        for (code, msg, want) in cases {
            assert_eq!(classify(code, msg), want, "{code}: {msg}");
        }
        assert_eq!(
            classify("XX000", "Timed out").status(crate::Phase::Commit),
            history::Status::Info
        );
    }

    #[test]
    fn yugabyte_is_told_by_its_version() {
        assert!(is_yugabyte(
            "PostgreSQL 11.2-YB-2.20.2.0-b0 on x86_64-pc-linux-gnu, compiled by clang"
        ));
        assert!(!is_yugabyte(
            "PostgreSQL 15.10 (Debian 15.10-0+deb12u1) on x86_64"
        ));
    }

    #[test]
    fn default_url_and_redaction() {
        let y = Yugabyte::new(&OpenOptions::new(vec![], Default::default())).unwrap();
        assert_eq!(y.location(), DEFAULT_URL);
        let y = Yugabyte::new(&OpenOptions::new(
            vec!["postgres://yugabyte:pw@n1:5433/yugabyte".into()],
            Default::default(),
        ))
        .unwrap();
        assert_eq!(y.location(), "postgres://yugabyte:***@n1:5433/yugabyte");
    }
}
