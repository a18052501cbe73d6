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

use crate::error::{AdapterError, ErrorClass};
use tokio_postgres::{Client, Config};

use crate::family::{by_level, by_name, Dialect, Endpoint, Family, SqlDatabase};
use crate::postgres::{self, Pg, RcCheck};
use crate::{Isolation, OpenOptions};

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
const SNAPSHOT: Isolation = Isolation::new("snapshot", postgres::sql::BEGIN_RR);

/// The isolation YugabyteDB runs at to promise `level`, or the one named by
/// `--isolation`.
pub fn isolation(level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
    match explicit {
        Some(name) => by_name(
            "yugabyte",
            name,
            &[
                (&["read-committed"], postgres::READ_COMMITTED),
                (&["snapshot", "repeatable-read", "si"], SNAPSHOT),
                (&["serializable"], postgres::SERIALIZABLE),
            ],
            "read-committed, snapshot (repeatable-read), serializable",
        ),
        None => Ok(by_level(
            level,
            [
                postgres::READ_COMMITTED,
                SNAPSHOT,
                postgres::SERIALIZABLE,
                postgres::SERIALIZABLE,
            ],
        )),
    }
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

/// The YugabyteDB dialect: its read committed check.
pub struct YugabyteDialect {
    rc_check: Arc<RcCheck>,
}

/// The YugabyteDB adapter.
pub type Yugabyte = SqlDatabase<Pg, YugabyteDialect>;

impl Yugabyte {
    /// Parses the `--url`s (default [`DEFAULT_URL`]); connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Yugabyte, AdapterError> {
        let server = ("yugabyte", HINT, DEFAULT_URL);
        SqlDatabase::open(server, classify as _, opts, &[], |family, _| {
            let rc_check = Arc::new(RcCheck::new(
                "yugabyte",
                sql::EFFECTIVE_LEVEL,
                "yugabyte: READ COMMITTED runs as snapshot isolation on this cluster \
                 (start the tservers with yb_enable_read_committed_isolation=true)",
                Arc::clone(&family.notes),
            ));
            Ok(YugabyteDialect { rc_check })
        })
    }
}

#[async_trait]
impl Dialect<Pg> for YugabyteDialect {
    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        isolation(level, explicit)
    }

    async fn prepare(
        &self,
        family: &Family<Pg>,
        ep: &Endpoint<Config>,
        client: &mut Client,
    ) -> Result<Option<Arc<RcCheck>>, AdapterError> {
        let version = family.version(ep, client).await?;
        let short = version.split(" on ").next().unwrap_or(&version);
        if !is_yugabyte(&version) {
            let mut skipped = sql::SESSION_INIT.to_vec();
            skipped.push(sql::EFFECTIVE_LEVEL);
            family.not_the_server(ep, "YugabyteDB", short, &skipped, "");
            return Ok(None);
        }
        for stmt in sql::SESSION_INIT {
            match client.batch_execute(stmt).await {
                Ok(()) => {}
                // A setting this version does not have: nothing to set.
                Err(e) if e.code().map(|c| c.code()) == Some("42704") => {
                    family.notes.add(format!(
                        "yugabyte: skipped `{stmt}`: the server ({short}) has no such setting"
                    ));
                }
                Err(e) => return Err(family.init_error(ep, &e)),
            }
        }
        self.rc_check.probe(client).await;
        Ok(Some(Arc::clone(&self.rc_check)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

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
        crate::family::check_levels(isolation, &want);
    }

    /// `--isolation` overrides the level, by YSQL's names for its
    /// settings; an unknown name is refused with the list.
    #[test]
    fn isolation_names_override_the_level() {
        let e = isolation(Level::Si, Some("chaos")).unwrap_err().to_string();
        assert!(e.contains("snapshot"), "{e}");
        crate::family::check_names(
            isolation,
            &[
                (Level::Ser, "snapshot", "snapshot"),
                (Level::Ser, "repeatable-read", "snapshot"),
                (Level::Si, "READ COMMITTED", "read-committed"),
            ],
        );
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
