//! TiDB through mysql_async, on the MySQL family's connection and
//! statement code ([`crate::mysql`]). What TiDB adds:
//!
//! * its transaction modes as isolation names (docs/clusters.md):
//!   `optimistic` (REPEATABLE READ, optimistic: TiDB's snapshot isolation,
//!   first committer wins at COMMIT), `pessimistic` (REPEATABLE READ,
//!   pessimistic, TiDB's default: DML reads the latest data at a
//!   per-statement `for_update_ts`, so TiDB documents lost updates there)
//!   and `read-committed` (pessimistic). The SI levels default to
//!   `optimistic`, the mode that promises them; every transaction opens
//!   with `BEGIN OPTIMISTIC` or `BEGIN PESSIMISTIC`, so nothing depends on
//!   a session default;
//! * automatic retry of optimistic transactions switched off
//!   (`tidb_disable_txn_auto_retry = ON`, `tidb_retry_limit = 0`), where
//!   the server still has those variables (before v8.0): a retry re-runs
//!   the statements on a new snapshot and hides anomalies;
//! * timestamps, only where reads happen at start_ts (optimistic mode):
//!   start_ts from `@@tidb_current_ts` inside the transaction, commit_ts
//!   from `@@tidb_last_txn_info` only when that names the same start_ts
//!   (before TiDB PR 61057 a read-only transaction left the previous
//!   one's values there); a read-only transaction has no commit_ts;
//! * its own error codes ([`classify_code`]): conflicts fail the
//!   transaction, an undetermined COMMIT is `info` on a connection that
//!   stays, and assertion / data-inconsistency errors are a possible
//!   database bug ([`ErrorClass::Integrity`]), never an ordinary abort.
//!
//! On a server that is not TiDB (e.g. MariaDB, to test the adapter
//! without a cluster) the TiDB-only statements are skipped and the run's
//! warnings say so, once.

use async_trait::async_trait;
use history::{DbTs, Level};
use mysql_async::prelude::Queryable;
use mysql_async::Opts;

use crate::error::{AdapterError, ErrorClass};
use crate::family::{by_level, by_name, Dialect, Endpoint, Family, SqlDatabase};
use crate::mysql::{self, My, TidbSql};
use crate::{normalize_isolation, Isolation, OpenOptions, ReadLock};

/// The URL used when `--url` is not given (as in `docker-compose.yml`).
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:4000/test";

/// The URL parameter choosing optimistic or pessimistic transactions.
pub const MODE_PARAM: &str = "tidb_txn_mode";

/// How to start a server, appended to connection errors.
const HINT: &str =
    "; is TiDB running? `tools/tidb/tidb.sh start` builds and starts one on 127.0.0.1:4000 \
     (see docs/clusters.md), `docker compose --profile tidb up -d --wait` starts a cluster, \
     or point --url at a TiDB server";

/// The TiDB-only SQL, in one place (the rest is [`crate::mysql`]'s).
mod sql {
    pub const DISABLE_AUTO_RETRY: &str = "SET SESSION tidb_disable_txn_auto_retry = ON";
    pub const RETRY_LIMIT: &str = "SET SESSION tidb_retry_limit = 0";
    pub const VERSION: &str = "SELECT tidb_version()";
}

/// TiDB's snapshot isolation: REPEATABLE READ in optimistic mode.
pub const OPTIMISTIC: Isolation = Isolation::new("optimistic", mysql::sql::SET_RR);
/// TiDB's default: REPEATABLE READ in pessimistic mode (lost updates are
/// its documented behaviour).
pub const PESSIMISTIC: Isolation = Isolation::new("pessimistic", mysql::sql::SET_RR);
/// Read committed, which TiDB runs only in pessimistic mode.
pub const READ_COMMITTED: Isolation = mysql::READ_COMMITTED;

/// TiDB's transaction mode, from `--tidb-txn-mode` or the URL: what plain
/// `--isolation repeatable-read` means, and the default of the levels.
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
}

/// The isolation TiDB runs at for `level`, or the one named by
/// `--isolation`; `mode` is the transaction mode asked for by
/// `--tidb-txn-mode` or the URL, if any. Without `--isolation`, the SI
/// levels (and those they imply) run `optimistic`, the mode that gives
/// snapshot isolation, and `rc` runs `read-committed`, unless `mode` says
/// otherwise. There is no serializable (TiDB refuses it, error 8048).
pub fn isolation(
    level: Level,
    explicit: Option<&str>,
    mode: Option<TxnMode>,
) -> Result<Isolation, AdapterError> {
    let rr = match mode {
        Some(TxnMode::Optimistic) => OPTIMISTIC,
        _ => PESSIMISTIC,
    };
    if let Some(name) = explicit {
        let iso = by_name(
            "tidb",
            name,
            &[
                (&["optimistic", "snapshot", "si"], OPTIMISTIC),
                (&["pessimistic"], PESSIMISTIC),
                (&["repeatable-read"], rr),
                (&["read-committed"], READ_COMMITTED),
            ],
            "optimistic (snapshot isolation), pessimistic (TiDB's default repeatable read), \
             read-committed (pessimistic), repeatable-read (as --tidb-txn-mode, else \
             pessimistic)",
        )?;
        let clash = match mode {
            Some(TxnMode::Optimistic) => iso != OPTIMISTIC,
            Some(TxnMode::Pessimistic) => iso == OPTIMISTIC,
            None => false,
        };
        if clash {
            return Err(AdapterError::Isolation(format!(
                "tidb: --isolation {} runs in {} mode, but --tidb-txn-mode (or the URL) asks \
                 for {} mode",
                normalize_isolation(name),
                if iso == OPTIMISTIC {
                    "optimistic"
                } else {
                    "pessimistic"
                },
                mode.map_or("", TxnMode::name)
            )));
        }
        return Ok(iso);
    }
    let (rc, si) = match mode {
        None => (READ_COMMITTED, OPTIMISTIC),
        Some(TxnMode::Optimistic) => (OPTIMISTIC, OPTIMISTIC),
        Some(TxnMode::Pessimistic) => (READ_COMMITTED, PESSIMISTIC),
    };
    by_level(
        level,
        [
            Ok(rc),
            Ok(si.clone()),
            Ok(si),
            Err(AdapterError::Isolation(format!(
                "tidb offers no level that promises {level}: its strongest is optimistic \
                 repeatable read (snapshot isolation); to check it against {level} anyway, \
                 add --isolation optimistic"
            ))),
        ],
    )
}

/// What a TiDB error code (and, for TiDB's catch-all 1105, its message)
/// means for the transaction; MySQL's codes are as in
/// [`mysql::classify_code`]. The codes are TiDB's `errno` package's.
pub fn classify_code(code: u16, message: &str) -> ErrorClass {
    let m = message.to_ascii_lowercase();
    match code {
        // 9007 write conflict at an optimistic COMMIT, 8005 write conflict
        // (txnStartTS is stale), 8002 SELECT FOR UPDATE cannot be retried,
        // 8022 commit failed and rolled back: the transaction is gone.
        8002 | 8005 | 9007 | 8022 => ErrorClass::Serialization,
        // 8027 schema out of date, 8028 schema changed during the
        // transaction; 9006 and 8055, the snapshot is older than the GC
        // safe point: rolled back, safe to run again.
        8027 | 8028 | 9006 | 8055 => ErrorClass::Statement,
        // 9004 resolving locks took too long.
        9004 => ErrorClass::LockTimeout,
        // 9001 PD (timestamp oracle) timeout, 9002 TiKV timeout, 9005
        // region unavailable: at COMMIT the outcome is unknown, and the
        // connection is still good.
        9001 | 9002 | 9005 => ErrorClass::CommitUncertain,
        // 9003 store busy, 9010 max-ts not synced: the store asks for a
        // retry later.
        9003 | 9010 => ErrorClass::Unavailable,
        // 8141 assertion failed (a key exists that must not, or the
        // reverse), 8133-8139 data and index inconsistent: TiDB caught
        // its own data in a state it should never be in.
        8133..=8139 | 8141 => ErrorClass::Integrity,
        _ if m.contains("result undetermined") => ErrorClass::CommitUncertain,
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

/// The statements a session on a TiDB server runs per transaction.
pub(crate) const TIDB_SQL: TidbSql = TidbSql {
    optimistic: "BEGIN OPTIMISTIC",
    pessimistic: "BEGIN PESSIMISTIC",
    current_ts: "SELECT @@tidb_current_ts",
    last_txn_info: "SELECT @@tidb_last_txn_info",
    stamped: OPTIMISTIC.name,
    parse: parse_last_txn_info,
};

/// The TiDB adapter: the MySQL protocol in TiDB's dialect.
pub type Tidb = SqlDatabase<My, TidbDialect>;

/// The TiDB dialect: the transaction mode asked for.
pub struct TidbDialect {
    mode: Option<TxnMode>,
}

impl Tidb {
    /// Parses the `--url`s (default [`DEFAULT_URL`]), the transaction
    /// mode and the session variables; connects nowhere yet.
    pub fn new(opts: &OpenOptions) -> Result<Tidb, AdapterError> {
        SqlDatabase::open(
            ("tidb", HINT, DEFAULT_URL),
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
                Ok(TidbDialect { mode })
            },
        )
    }

    /// The transaction mode asked for by `--tidb-txn-mode` or the URL.
    pub fn mode(&self) -> Option<TxnMode> {
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
    ) -> Result<Option<TidbSql>, AdapterError> {
        let version = family.version(ep, conn).await?;
        let own = [sql::DISABLE_AUTO_RETRY, sql::RETRY_LIMIT];
        let tidb = is_tidb(&version);
        if !tidb {
            let skipped = [
                own[0],
                own[1],
                TIDB_SQL.optimistic,
                TIDB_SQL.pessimistic,
                TIDB_SQL.current_ts,
                TIDB_SQL.last_txn_info,
            ];
            let more = ", so transactions open with START TRANSACTION and no dbts are recorded";
            family.not_the_server(ep, "TiDB", &format!("version {version}"), &skipped, more);
        } else {
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
        }
        Ok(tidb.then_some(TIDB_SQL))
    }

    async fn server(&self, family: &Family<My>) -> Option<String> {
        let text = family.server_text(sql::VERSION).await;
        match text {
            // tidb_version() is several lines: `Release Version: v8.5.0`,
            // `Edition`, `Git Commit Hash`, `Store: unistore`, ...
            Some(t) => Some(t.lines().map(str::trim).collect::<Vec<_>>().join("; ")),
            None => family.server_text(mysql::sql::VERSION).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Database;

    #[test]
    fn levels_map_to_modes() {
        use Level::*;
        use TxnMode::*;
        // By default the SI levels run optimistic, the mode that gives
        // snapshot isolation, and rc runs read committed.
        for level in [Ra, Cc, Pc, Si, StrongSessionSi, StrongSi] {
            assert_eq!(isolation(level, None, None).unwrap(), OPTIMISTIC, "{level}");
            assert_eq!(
                isolation(level, None, Some(Optimistic)).unwrap(),
                OPTIMISTIC
            );
            // Asked for pessimistic mode, the user gets TiDB's default RR.
            assert_eq!(
                isolation(level, None, Some(Pessimistic)).unwrap(),
                PESSIMISTIC
            );
        }
        assert_eq!(isolation(Rc, None, None).unwrap(), READ_COMMITTED);
        assert_eq!(
            isolation(Rc, None, Some(Pessimistic)).unwrap(),
            READ_COMMITTED
        );
        // Optimistic mode has no read committed: SI promises rc.
        assert_eq!(isolation(Rc, None, Some(Optimistic)).unwrap(), OPTIMISTIC);
        for mode in [None, Some(Optimistic), Some(Pessimistic)] {
            for level in [Ser, StrongSessionSer, Sser] {
                let e = isolation(level, None, mode).unwrap_err().to_string();
                assert!(e.contains("--isolation optimistic"), "{e}");
            }
        }
        assert_eq!(OPTIMISTIC.begin, mysql::sql::SET_RR);
        assert_eq!(PESSIMISTIC.begin, mysql::sql::SET_RR);
        assert_eq!(READ_COMMITTED.begin, mysql::sql::SET_RC);
    }

    #[test]
    fn explicit_isolation() {
        use TxnMode::*;
        let named = |name, mode| isolation(Level::Si, Some(name), mode);
        assert_eq!(named("optimistic", None).unwrap(), OPTIMISTIC);
        assert_eq!(named("snapshot", None).unwrap(), OPTIMISTIC);
        assert_eq!(named("Pessimistic", None).unwrap(), PESSIMISTIC);
        assert_eq!(named("read_committed", None).unwrap(), READ_COMMITTED);
        // Plain repeatable read is TiDB's default mode unless asked.
        assert_eq!(named("repeatable-read", None).unwrap(), PESSIMISTIC);
        assert_eq!(
            named("repeatable-read", Some(Optimistic)).unwrap(),
            OPTIMISTIC
        );
        assert_eq!(
            isolation(Level::Ser, Some("optimistic"), None).unwrap(),
            OPTIMISTIC
        );
        // A name and a mode that disagree are refused.
        for (name, mode) in [
            ("read-committed", Optimistic),
            ("pessimistic", Optimistic),
            ("optimistic", Pessimistic),
        ] {
            let e = named(name, Some(mode)).unwrap_err().to_string();
            assert!(e.contains("--tidb-txn-mode"), "{e}");
        }
        let e = named("serializable", None).unwrap_err().to_string();
        assert!(e.contains("\"serializable\""), "{e}");
        assert!(e.contains("optimistic (snapshot isolation)"), "{e}");
    }

    #[test]
    fn tidb_error_codes_are_classified() {
        use crate::Phase::*;
        use history::Status::*;
        for c in [8002, 8005, 9007, 8022] {
            assert_eq!(classify_code(c, ""), ErrorClass::Serialization, "{c}");
        }
        for c in [8027, 8028, 9006, 8055] {
            assert_eq!(classify_code(c, ""), ErrorClass::Statement, "{c}");
        }
        assert_eq!(classify_code(9004, ""), ErrorClass::LockTimeout);
        for c in [9001, 9002, 9005] {
            let class = classify_code(c, "");
            assert_eq!(class, ErrorClass::CommitUncertain, "{c}");
            // At COMMIT the outcome is unknown; the connection stays.
            assert_eq!(class.status(Commit), Info);
            assert_eq!(class.status(Statement), Fail);
            assert!(!class.breaks_connection());
        }
        for c in [9003, 9010] {
            assert_eq!(classify_code(c, ""), ErrorClass::Unavailable, "{c}");
        }
        for c in [8133, 8134, 8135, 8136, 8137, 8138, 8139, 8141] {
            let class = classify_code(c, "assertion failed");
            assert_eq!(class, ErrorClass::Integrity, "{c}");
            assert_eq!(class.status(Commit), Fail);
        }
        assert_eq!(classify_code(8140, ""), ErrorClass::Statement);
        assert_eq!(
            classify_code(
                1105,
                "Write conflict, txnStartTS=1, conflictStartTS=2, conflictCommitTS=3"
            ),
            ErrorClass::Serialization
        );
        let undetermined = classify_code(1105, "[tikv:8004]result undetermined");
        assert_eq!(undetermined, ErrorClass::CommitUncertain);
        assert!(!undetermined.breaks_connection());
        // MySQL's codes as MySQL's.
        assert_eq!(classify_code(1213, ""), ErrorClass::Deadlock);
        assert_eq!(classify_code(1205, ""), ErrorClass::LockTimeout);
        assert_eq!(classify_code(3572, ""), ErrorClass::LockTimeout);
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
        assert_eq!(open(vec![], None).unwrap().mode(), None);
        let t = open(
            vec!["mysql://root@h:4000/test?tidb_txn_mode=optimistic"],
            None,
        )
        .unwrap();
        assert_eq!(t.mode(), Some(TxnMode::Optimistic));
        // The parameter is not passed on to the driver, and is shown.
        assert_eq!(
            t.location(),
            "mysql://root@h:4000/test?tidb_txn_mode=optimistic"
        );
        let t = open(vec![], Some("Pessimistic")).unwrap();
        assert_eq!(t.mode(), Some(TxnMode::Pessimistic));
        assert_eq!(t.isolation(Level::Si, None).unwrap(), PESSIMISTIC);
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
    fn session_variables_are_names_and_are_shown() {
        let mut o = OpenOptions::new(vec![], Default::default());
        o.session_vars = vec![
            ("tidb_enable_async_commit".into(), "OFF".into()),
            ("tidb_read_staleness".into(), "-5".into()),
        ];
        let t = Tidb::new(&o).unwrap();
        assert_eq!(
            t.settings(),
            ["tidb_enable_async_commit=OFF", "tidb_read_staleness=-5"]
        );
        for bad in ["x = 1; DROP TABLE t", "", "1abc", "a-b"] {
            o.session_vars = vec![(bad.into(), "1".into())];
            let e = Tidb::new(&o).err().unwrap().to_string();
            assert!(e.contains("letters, digits and _"), "{bad}: {e}");
        }
    }

    /// The timestamp path on the MariaDB server of the other tests
    /// (`ISOHARNESS_MYSQL_URL`), with statements that answer as TiDB's
    /// would: an optimistic transaction that writes gets start_ts and
    /// commit_ts, but only when `@@tidb_last_txn_info` names its start_ts;
    /// a read-only one gets no commit_ts; a pessimistic one, whose DML
    /// reads do not happen at start_ts, gets none.
    #[tokio::test]
    async fn timestamps_only_where_reads_happen_at_start_ts() {
        use workloads::{Plan, Step};
        let url = std::env::var("ISOHARNESS_MYSQL_URL")
            .unwrap_or_else(|_| crate::mysql::DEFAULT_URL.into());
        let mut opts = OpenOptions::new(vec![url], Default::default());
        opts.tables = crate::TableNames::for_run("tidbts");
        let classify: mysql::Classifier = classify_code;
        let (family, _) =
            Family::<My>::new("tidb", HINT, DEFAULT_URL, classify, &opts, &[]).unwrap();
        family
            .setup(&workloads::Schema::Registers)
            .await
            .expect("MariaDB/MySQL must run (.ci/services) or ISOHARNESS_MYSQL_URL name one");
        let fake = |info: &'static str| TidbSql {
            optimistic: "START TRANSACTION",
            pessimistic: "START TRANSACTION",
            current_ts: "SELECT 41",
            last_txn_info: info,
            ..TIDB_SQL
        };
        let ours = r#"SELECT '{"txn_scope":"global","start_ts":41,"commit_ts":42}'"#;
        let older = r#"SELECT '{"txn_scope":"global","start_ts":40,"commit_ts":40}'"#;
        let write = Plan {
            kind: "w",
            steps: vec![Step::Write(history::Key::Int(1), 7)],
        };
        let read = Plan {
            kind: "r",
            steps: vec![Step::Read(history::Key::Int(1))],
        };
        let stamps = DbTs {
            start: 41,
            commit: Some(42),
        };
        let start_only = DbTs {
            start: 41,
            commit: None,
        };
        for (info, plan, iso, want) in [
            (ours, &write, OPTIMISTIC, Some(stamps)),
            (older, &write, OPTIMISTIC, None),
            (ours, &read, OPTIMISTIC, Some(start_only)),
            (ours, &write, PESSIMISTIC, None),
            (ours, &write, READ_COMMITTED, None),
        ] {
            let (conn, ep) = family.connect(0).await.unwrap();
            let mut s = family.session(ep, conn, Some(fake(info)));
            let o = s.run(plan, &iso).await.unwrap();
            assert_eq!(o.status, history::Status::Ok, "{:?}", o.error);
            assert_eq!(o.dbts, want, "{} {} {info}", plan.kind, iso.name);
            s.close().await;
        }
        family.teardown(false).await.unwrap();
    }

    #[test]
    fn tidb_is_told_by_its_version() {
        assert!(is_tidb("8.0.11-TiDB-v7.5.1"));
        assert!(!is_tidb("10.11.14-MariaDB-0+deb12u2"));
        assert!(!is_tidb("8.0.36"));
    }
}
