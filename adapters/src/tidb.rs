//! TiDB through mysql_async, on the MySQL family's connection and
//! statement code ([`crate::mysql`]). What TiDB adds:
//!
//! * optimistic or pessimistic transactions (`tidb_txn_mode`; from
//!   `--tidb-txn-mode` or the URL parameter `tidb_txn_mode`, default
//!   pessimistic);
//! * automatic retry of optimistic transactions switched off
//!   (`tidb_disable_txn_auto_retry = ON`, `tidb_retry_limit = 0`): a retry
//!   would re-run the statements on a new snapshot and hide anomalies;
//! * its own retryable error codes (8002, 8005, 9007 write conflicts, ...);
//! * after each commit, `@@tidb_last_txn_info` gives `start_ts` and
//!   `commit_ts`, recorded as the transaction's `dbts`.
//!
//! On a server that is not TiDB (e.g. MariaDB, to test the adapter
//! without a cluster) the TiDB-only statements are skipped and the run's
//! warnings say so, once.

use async_trait::async_trait;
use history::{DbTs, Level};
use mysql_async::prelude::Queryable;

use crate::error::{AdapterError, ErrorClass};
use mysql_async::Opts;

use crate::family::{by_level, by_name, Dialect, Endpoint, Family, SqlDatabase};
use crate::mysql::{self, DbtsQuery, My};
use crate::{normalize_isolation, Isolation, OpenOptions, ReadLock};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:4000/test";

/// The URL parameter choosing optimistic or pessimistic transactions.
pub const MODE_PARAM: &str = "tidb_txn_mode";

/// How to start the cluster, appended to connection errors.
const HINT: &str = "; is the cluster running? Start it with `docker compose --profile tidb up -d` \
     (it needs a minute to be ready), or point --url at a TiDB server";

/// The TiDB-only SQL, in one place (the rest is [`crate::mysql`]'s).
mod sql {
    pub const DISABLE_AUTO_RETRY: &str = "SET SESSION tidb_disable_txn_auto_retry = ON";
    pub const RETRY_LIMIT: &str = "SET SESSION tidb_retry_limit = 0";
    pub const OPTIMISTIC: &str = "SET SESSION tidb_txn_mode = 'optimistic'";
    pub const PESSIMISTIC: &str = "SET SESSION tidb_txn_mode = 'pessimistic'";
    pub const LAST_TXN_INFO: &str = "SELECT @@tidb_last_txn_info";
}

/// TiDB's transaction mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnMode {
    /// Conflicts are detected at COMMIT (write conflicts 9007/8005).
    Optimistic,
    /// Writes take locks as they run, like InnoDB (TiDB's default).
    Pessimistic,
}

impl TxnMode {
    /// Parses `optimistic` / `pessimistic`.
    pub fn parse(s: &str) -> Option<TxnMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "optimistic" => Some(TxnMode::Optimistic),
            "pessimistic" => Some(TxnMode::Pessimistic),
            _ => None,
        }
    }

    /// The value of `tidb_txn_mode`.
    pub fn name(self) -> &'static str {
        match self {
            TxnMode::Optimistic => "optimistic",
            TxnMode::Pessimistic => "pessimistic",
        }
    }

    fn set(self) -> &'static str {
        match self {
            TxnMode::Optimistic => sql::OPTIMISTIC,
            TxnMode::Pessimistic => sql::PESSIMISTIC,
        }
    }
}

/// The isolation TiDB runs at for `level` in `mode`, or the one named by
/// `--isolation`. TiDB's repeatable read is snapshot isolation (with
/// timestamps from PD, so real-time ordered: strong SI); read committed
/// exists only in pessimistic mode; there is no serializable.
pub fn isolation(
    level: Level,
    explicit: Option<&str>,
    mode: TxnMode,
) -> Result<Isolation, AdapterError> {
    let pessimistic = mode == TxnMode::Pessimistic;
    if let Some(name) = explicit {
        if !pessimistic && normalize_isolation(name) == "read-committed" {
            return Err(AdapterError::Isolation(
                "tidb runs read committed only in pessimistic mode; \
                 use --tidb-txn-mode pessimistic"
                    .into(),
            ));
        }
        return by_name(
            "tidb",
            name,
            &[
                (&["read-committed"], mysql::READ_COMMITTED),
                (
                    &["repeatable-read", "snapshot", "si"],
                    mysql::REPEATABLE_READ,
                ),
            ],
            "read-committed (pessimistic mode), repeatable-read (snapshot isolation)",
        );
    }
    // Optimistic mode has no read committed; SI implies rc.
    let rc = if pessimistic {
        mysql::READ_COMMITTED
    } else {
        mysql::REPEATABLE_READ
    };
    by_level(
        level,
        [
            Ok(rc),
            Ok(mysql::REPEATABLE_READ),
            Ok(mysql::REPEATABLE_READ),
            Err(AdapterError::Isolation(format!(
                "tidb offers no level that promises {level}: its strongest is repeatable-read \
             (snapshot isolation); to check it against {level} anyway, add \
             --isolation repeatable-read"
            ))),
        ],
    )
}

/// What a TiDB error code (and, for TiDB's catch-all 1105, its message)
/// means for the transaction; MySQL's codes are as in
/// [`mysql::classify_code`].
pub fn classify_code(code: u16, message: &str) -> ErrorClass {
    let m = message.to_ascii_lowercase();
    match code {
        // 8002 SELECT FOR UPDATE cannot be retried after a conflict, 8005
        // write conflict (txnStartTS is stale), 9007 write conflict in
        // TiKV, 8022 commit failed and rolled back: retry the whole txn.
        8002 | 8005 | 9007 | 8022 => ErrorClass::Serialization,
        // 8027 schema out of date, 8028 schema changed during the txn:
        // rolled back, safe to retry.
        8027 | 8028 => ErrorClass::Statement,
        // 9004 resolving locks took too long.
        9004 => ErrorClass::LockTimeout,
        // 9001 PD timeout, 9002 TiKV timeout, 9005 region unavailable: at
        // COMMIT the outcome is unknown.
        9001 | 9002 | 9005 => ErrorClass::Timeout,
        _ if m.contains("undetermined") => ErrorClass::Timeout,
        _ if m.contains("write conflict") => ErrorClass::Serialization,
        c => mysql::classify_code(c),
    }
}

/// Reads `start_ts` and `commit_ts` from `@@tidb_last_txn_info`, e.g.
/// `{"txn_scope":"global","start_ts":4191,"commit_ts":4192,...}`. A
/// read-only transaction has commit_ts 0 (no commit timestamp).
pub fn parse_last_txn_info(text: &str) -> Option<DbTs> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let num = |key: &str| -> Option<u64> {
        match v.get(key)? {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.parse().ok(),
            _ => None,
        }
    };
    let start = num("start_ts").filter(|&s| s > 0)?;
    let commit = num("commit_ts").filter(|&c| c > 0);
    Some(DbTs { start, commit })
}

/// The TiDB dialect: its transaction mode.
pub struct TidbDialect {
    mode: TxnMode,
}

/// The TiDB adapter.
pub type Tidb = SqlDatabase<My, TidbDialect>;

impl Tidb {
    /// Parses the `--url`s (default [`DEFAULT_URL`]) and the transaction
    /// mode; connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Tidb, AdapterError> {
        let server = ("tidb", HINT, DEFAULT_URL);
        SqlDatabase::open(
            server,
            classify_code as _,
            opts,
            &[MODE_PARAM],
            |_, params| {
                if opts.read_lock == ReadLock::Share {
                    return Err(AdapterError::Config(
                        "tidb: --read-lock share takes no lock in TiDB (LOCK IN SHARE MODE is a \
                     no-op there); use --read-lock for-update"
                            .into(),
                    ));
                }
                let given = params
                    .iter()
                    .flatten()
                    .map(|(_, v)| v.as_str())
                    .chain(opts.tidb_txn_mode.as_deref());
                let mut mode = None;
                for m in given {
                    let parsed = TxnMode::parse(m).ok_or_else(|| {
                        AdapterError::Config(format!(
                        "tidb: unknown transaction mode {m:?} (expected optimistic or pessimistic)"
                    ))
                    })?;
                    if mode.is_some_and(|old| old != parsed) {
                        return Err(AdapterError::Config(
                        "tidb: the URLs and --tidb-txn-mode ask for different transaction modes"
                            .into(),
                    ));
                    }
                    mode = Some(parsed);
                }
                let mode = mode.unwrap_or(TxnMode::Pessimistic);
                Ok(TidbDialect { mode })
            },
        )
    }

    /// The transaction mode sessions run in.
    pub fn mode(&self) -> TxnMode {
        self.dialect.mode
    }
}

/// True when the `VERSION()` string is TiDB's (`8.0.11-TiDB-v7.5.1`).
pub fn is_tidb(version: &str) -> bool {
    version.contains("TiDB")
}

#[async_trait]
impl Dialect<My> for TidbDialect {
    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        isolation(level, explicit, self.mode)
    }

    async fn prepare(
        &self,
        family: &Family<My>,
        ep: &Endpoint<Opts>,
        conn: &mut mysql_async::Conn,
    ) -> Result<Option<DbtsQuery>, AdapterError> {
        let version = family.version(ep, conn).await?;
        let own = [sql::DISABLE_AUTO_RETRY, sql::RETRY_LIMIT, self.mode.set()];
        if !is_tidb(&version) {
            let mut skipped: Vec<&str> = own.to_vec();
            skipped.push(sql::LAST_TXN_INFO);
            let more = format!(
                ", so no dbts are recorded and the transaction mode ({}) is not set",
                self.mode.name()
            );
            family.not_the_server(ep, "TiDB", &format!("version {version}"), &skipped, &more);
            return Ok(None);
        }
        for stmt in own {
            match conn.query_drop(stmt).await {
                Ok(()) => {}
                // A variable this TiDB version no longer has (auto
                // retry was removed in v8.0): nothing to switch off.
                Err(mysql_async::Error::Server(e)) if e.code == 1193 => {
                    family.notes.add(format!(
                        "tidb: skipped `{stmt}`: the server ({version}) has no such \
                         variable ({}: {})",
                        e.code, e.message
                    ));
                }
                Err(e) => return Err(family.setup_error(ep, &e)),
            }
        }
        Ok(Some((sql::LAST_TXN_INFO, parse_last_txn_info)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    #[test]
    fn levels_map_to_repeatable_read_or_read_committed() {
        use Level::*;
        use TxnMode::*;
        for mode in [Optimistic, Pessimistic] {
            for level in [Ra, Cc, Pc, Si, StrongSessionSi, StrongSi] {
                let iso = isolation(level, None, mode).unwrap();
                assert_eq!(iso.name, "repeatable-read", "{level} {mode:?}");
                assert_eq!(
                    iso.begin,
                    "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
                );
            }
            for level in [Ser, StrongSessionSer, Sser] {
                let e = isolation(level, None, mode).unwrap_err().to_string();
                assert!(e.contains("--isolation repeatable-read"), "{e}");
            }
        }
        assert_eq!(
            isolation(Rc, None, Pessimistic).unwrap().begin,
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
        );
        // Optimistic mode has no read committed: SI promises rc.
        assert_eq!(
            isolation(Rc, None, Optimistic).unwrap().name,
            "repeatable-read"
        );
    }

    #[test]
    fn explicit_isolation() {
        use TxnMode::*;
        assert_eq!(
            isolation(Level::Ser, Some("repeatable-read"), Optimistic)
                .unwrap()
                .name,
            "repeatable-read"
        );
        assert_eq!(
            isolation(Level::Si, Some("snapshot"), Pessimistic)
                .unwrap()
                .name,
            "repeatable-read"
        );
        assert_eq!(
            isolation(Level::Si, Some("read-committed"), Pessimistic)
                .unwrap()
                .name,
            "read-committed"
        );
        let e = isolation(Level::Rc, Some("read-committed"), Optimistic)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pessimistic"), "{e}");
        let e = isolation(Level::Ser, Some("serializable"), Pessimistic)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"serializable\""), "{e}");
    }

    #[test]
    fn tidb_error_codes_are_classified() {
        for c in [8002, 8005, 9007, 8022] {
            assert_eq!(classify_code(c, ""), ErrorClass::Serialization, "{c}");
        }
        assert_eq!(classify_code(8028, ""), ErrorClass::Statement);
        assert_eq!(classify_code(8027, ""), ErrorClass::Statement);
        assert_eq!(classify_code(9004, ""), ErrorClass::LockTimeout);
        for c in [9001, 9002, 9005] {
            assert_eq!(classify_code(c, ""), ErrorClass::Timeout, "{c}");
            // A timeout at COMMIT leaves the outcome unknown.
            assert_eq!(
                classify_code(c, "").status(crate::Phase::Commit),
                history::Status::Info
            );
        }
        assert_eq!(
            classify_code(
                1105,
                "Write conflict, txnStartTS=1, conflictStartTS=2, conflictCommitTS=3"
            ),
            ErrorClass::Serialization
        );
        assert_eq!(
            classify_code(1105, "result undetermined"),
            ErrorClass::Timeout
        );
        // MySQL's codes as MySQL's.
        assert_eq!(classify_code(1213, ""), ErrorClass::Deadlock);
        assert_eq!(classify_code(1205, ""), ErrorClass::LockTimeout);
        assert_eq!(classify_code(1062, ""), ErrorClass::UniqueViolation);
        assert_eq!(classify_code(1105, "unknown error"), ErrorClass::Statement);
    }

    #[test]
    fn last_txn_info_gives_the_timestamps() {
        let t = r#"{"txn_scope":"global","start_ts":419138453985918979,"commit_ts":419138453985918980,"txn_commit_mode":"2pc","async_commit_fallback":false,"one_pc_fallback":false,"error":""}"#;
        assert_eq!(
            parse_last_txn_info(t),
            Some(DbTs {
                start: 419138453985918979,
                commit: Some(419138453985918980)
            })
        );
        let ro = r#"{"txn_scope":"global","start_ts":5,"commit_ts":0}"#;
        assert_eq!(
            parse_last_txn_info(ro),
            Some(DbTs {
                start: 5,
                commit: None
            })
        );
        assert_eq!(parse_last_txn_info(r#"{"start_ts":0}"#), None);
        assert_eq!(parse_last_txn_info("not json"), None);
        assert_eq!(
            parse_last_txn_info(r#"{"start_ts":"7","commit_ts":"9"}"#),
            Some(DbTs {
                start: 7,
                commit: Some(9)
            })
        );
    }

    #[test]
    fn modes_come_from_the_flag_or_the_url() {
        let open = |urls: Vec<&str>, flag: Option<&str>| {
            let mut o = OpenOptions::new(
                urls.into_iter().map(String::from).collect(),
                Default::default(),
            );
            o.tidb_txn_mode = flag.map(String::from);
            Tidb::new(&o)
        };
        assert_eq!(open(vec![], None).unwrap().mode(), TxnMode::Pessimistic);
        let t = open(
            vec!["mysql://root@h:4000/test?tidb_txn_mode=optimistic"],
            None,
        )
        .unwrap();
        assert_eq!(t.mode(), TxnMode::Optimistic);
        // The parameter is not passed on to the driver, and is shown.
        assert_eq!(
            t.location(),
            "mysql://root@h:4000/test?tidb_txn_mode=optimistic"
        );
        assert_eq!(
            open(vec![], Some("Optimistic")).unwrap().mode(),
            TxnMode::Optimistic
        );
        assert!(open(vec![], Some("lazy")).is_err());
        assert!(open(
            vec!["mysql://root@h:4000/test?tidb_txn_mode=optimistic"],
            Some("pessimistic")
        )
        .is_err());
        let mut o = OpenOptions::new(vec![], Default::default());
        o.read_lock = ReadLock::Share;
        assert!(Tidb::new(&o)
            .err()
            .unwrap()
            .to_string()
            .contains("for-update"));
    }

    #[test]
    fn tidb_is_told_by_its_version() {
        assert!(is_tidb("8.0.11-TiDB-v7.5.1"));
        assert!(!is_tidb("10.11.14-MariaDB-0+deb12u2"));
        assert!(!is_tidb("8.0.36"));
    }
}
