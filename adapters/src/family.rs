//! What the SQL adapters that speak a network protocol share: the
//! endpoints and how to connect to them, the run's tables (lock, refuse
//! another run's, create, drop), the read statements of `--read-lock`, the
//! isolation tables, and one [`Database`] for every dialect.
//!
//! Two things differ, and are two traits:
//!
//! * a [`Protocol`] (PostgreSQL through tokio-postgres, MySQL through
//!   mysql_async): how to parse a URL, connect, run a script, take and
//!   give back the run's lock, and its SQL for the tables and reads;
//! * a [`Dialect`] of a protocol (PostgreSQL or YugabyteDB, MySQL/MariaDB
//!   or TiDB): its name, its isolation levels, and what it adds to a new
//!   session (settings, error classification, timestamps).
//!
//! The plan loop itself is [`crate::exec`]'s, for every adapter.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use history::Level;
use workloads::Schema;

use crate::error::{redact_url, scrub, AdapterError, ConnectFailure};
use crate::exec::Notes;
use crate::tables::TableNames;
use crate::{normalize_isolation, Database, Isolation, OpenOptions, ReadLock, Session};

/// Ends a transaction, in every dialect.
pub const COMMIT: &str = "COMMIT";
/// Abandons a transaction, in every dialect.
pub const ROLLBACK: &str = "ROLLBACK";

/// The read statements for one `--read-lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reads {
    /// One register.
    pub read: &'static str,
    /// A range of registers.
    pub range: &'static str,
    /// One list.
    pub list: &'static str,
}

impl Reads {
    /// The statements of `table` (plain, for update, share) that read with
    /// `lock`.
    pub fn new(lock: ReadLock, table: &[Reads; 3]) -> Reads {
        match lock {
            ReadLock::Plain => table[0],
            ReadLock::ForUpdate => table[1],
            ReadLock::Share => table[2],
        }
    }
}

/// The three reads as plain, `FOR UPDATE` and shared (`$share` appended)
/// statements, for [`Protocol::READS`].
macro_rules! read_statements {
    ($share:literal, $read:literal, $range:literal, $list:literal) => {
        [
            $crate::family::Reads {
                read: $read,
                range: $range,
                list: $list,
            },
            $crate::family::Reads {
                read: concat!($read, " FOR UPDATE"),
                range: concat!($range, " FOR UPDATE"),
                list: concat!($list, " FOR UPDATE"),
            },
            $crate::family::Reads {
                read: concat!($read, $share),
                range: concat!($range, $share),
                list: concat!($list, $share),
            },
        ]
    };
}
pub(crate) use read_statements;

/// The setting a dialect runs at for `level`, from its settings for read
/// committed, snapshot isolation, strong SI and serializable (the levels
/// each promises, and everything weaker).
pub fn by_level<T>(level: Level, [rc, si, strong_si, ser]: [T; 4]) -> T {
    match level {
        Level::Rc => rc,
        Level::Ra | Level::Cc | Level::Pc | Level::Si | Level::StrongSessionSi => si,
        Level::StrongSi => strong_si,
        Level::Ser | Level::StrongSessionSer | Level::Sser => ser,
    }
}

/// The isolation `--isolation name` asks `db` for, from the names each of
/// its settings goes by; otherwise an error listing `offered`.
pub fn by_name(
    db: &str,
    name: &str,
    settings: &[(&[&str], Isolation)],
    offered: &str,
) -> Result<Isolation, AdapterError> {
    let n = normalize_isolation(name);
    settings
        .iter()
        .find(|(names, _)| names.contains(&n.as_str()))
        .map(|(_, iso)| iso.clone())
        .ok_or_else(|| {
            AdapterError::Isolation(format!(
                "{db} has no isolation level {name:?}; use one of: {offered}"
            ))
        })
}

/// The isolation of a database that offers the three ANSI settings by
/// their names (`rc`, `rr`, `ser`); `strong_si` is the one that promises
/// strong SI.
pub fn ansi(
    db: &str,
    level: Level,
    explicit: Option<&str>,
    [rc, rr, ser]: [Isolation; 3],
    strong_si: Isolation,
) -> Result<Isolation, AdapterError> {
    match explicit {
        Some(name) => by_name(
            db,
            name,
            &[
                (&["read-committed"], rc),
                (&["repeatable-read"], rr),
                (&["serializable"], ser),
            ],
            "read-committed, repeatable-read, serializable",
        ),
        None => Ok(by_level(level, [rc, rr, strong_si, ser])),
    }
}

/// Asserts that `isolation` maps every level to the setting (name, begin
/// statement) `want` gives it.
#[cfg(test)]
pub(crate) fn check_levels<F>(isolation: F, want: &[(Level, &str, &str)])
where
    F: Fn(Level, Option<&str>) -> Result<Isolation, AdapterError>,
{
    assert_eq!(want.len(), Level::ALL.len());
    for &(level, name, begin) in want {
        let iso = isolation(level, None).unwrap();
        assert_eq!((iso.name, iso.begin), (name, begin), "{level}");
    }
}

/// Asserts that `isolation` at `level` with `--isolation given` runs the
/// setting named `name`, for each (level, given, name) of `want`.
#[cfg(test)]
pub(crate) fn check_names<F>(isolation: F, want: &[(Level, &str, &str)])
where
    F: Fn(Level, Option<&str>) -> Result<Isolation, AdapterError>,
{
    for &(level, given, name) in want {
        let iso = isolation(level, Some(given)).unwrap();
        assert_eq!(iso.name, name, "{level} {given}");
    }
}

/// Asserts that the adapter `new` makes runs at `default` without
/// `--url`, and refuses the URL `bad` without showing its password `pw`;
/// returns the refusal.
#[cfg(test)]
pub(crate) fn check_default_and_bad<T: Database>(
    new: fn(&OpenOptions) -> Result<T, AdapterError>,
    default: &str,
    bad: &str,
) -> String {
    let dflt = new(&OpenOptions::new(vec![], Default::default())).unwrap();
    assert_eq!(dflt.location(), default);
    let e = new(&OpenOptions::new(vec![bad.into()], Default::default()));
    let e = e.err().unwrap().to_string();
    assert!(!e.contains("pw@"), "{e}");
    e
}

/// What asking for the run's database-level lock gave.
pub enum Lock {
    /// This connection holds it now.
    Taken,
    /// Another session holds it: another run is still running.
    Held,
    /// The server could not say (no such locks): why.
    Unknown(String),
}

/// Query parameters of one URL that the adapter takes for itself.
pub type OwnParams = Vec<(String, String)>;

/// A network protocol's driver and SQL, for [`Family`]. Errors are given as
/// the text recorded for them (`code: message`, secrets scrubbed).
#[async_trait]
pub trait Protocol: Sized + Send + Sync + 'static {
    /// A parsed URL.
    type Opts: Clone + Send + Sync;
    /// An open connection.
    type Conn: Send + Sync;
    /// Classifies the server's errors (a dialect's own).
    type Classify: Copy + Send + Sync;
    /// What the run's lock is called in messages.
    const LOCK: &'static str;
    /// The reads: plain, for update, share.
    const READS: [Reads; 3];
    /// How much longer than the driver's own connect timeout to wait.
    const CONNECT_GRACE: Duration;
    /// Parses `url`, taking out the parameters named in `ours`: the
    /// options, the password, the parameters taken.
    fn parse(url: &str, ours: &[&str]) -> Result<(Self::Opts, Option<String>, OwnParams), String>;
    /// Connects, giving up after about `timeout`; on failure, what went
    /// wrong and why.
    async fn connect(
        opts: &Self::Opts,
        timeout: Duration,
    ) -> Result<Self::Conn, (String, ConnectFailure)>;
    /// False when the connection is known to be closed.
    fn usable(conn: &Self::Conn) -> bool;
    /// The statements that drop and create the tables of `schema`, run one
    /// after another with [`Protocol::batch`].
    fn tables_script(db: &str, schema: &Schema) -> Result<&'static [&'static str], AdapterError>;
    /// Runs `sql` (one or more statements, no parameters).
    async fn batch(conn: &mut Self::Conn, sql: &str, secret: Option<&str>) -> Result<(), String>;
    /// Tries to take the run's lock without waiting.
    async fn try_lock(
        conn: &mut Self::Conn,
        tables: &TableNames,
        secret: Option<&str>,
    ) -> Result<Lock, String>;
    /// The first of `names` that exists as a table already.
    async fn existing(
        conn: &mut Self::Conn,
        names: &[String],
        secret: Option<&str>,
    ) -> Result<Option<String>, String>;
    /// Gives the run's lock back (best effort).
    async fn unlock(conn: &mut Self::Conn, tables: &TableNames);
    /// Closes the connection (best effort).
    async fn close(conn: Self::Conn);
    /// The query whose one-line answer says what the server is.
    const VERSION: &'static str;
    /// The first column of the first row `sql` returns, as text; `None`
    /// on any error.
    async fn text(conn: &mut Self::Conn, sql: &str) -> Option<String>;
    /// Runs the session settings of every dialect on a new connection.
    async fn init(
        family: &Family<Self>,
        ep: &Endpoint<Self::Opts>,
        conn: &mut Self::Conn,
    ) -> Result<(), AdapterError>;
    /// What a dialect may add to a new session.
    type Extra: Default + Send;
    /// Wraps an initialized connection into a session.
    fn session(
        family: &Family<Self>,
        ep: &Endpoint<Self::Opts>,
        conn: Self::Conn,
        extra: Self::Extra,
    ) -> Box<dyn Session>;
}

/// One endpoint: its parsed options, its printable URL, its password.
#[derive(Clone)]
pub struct Endpoint<O> {
    pub(crate) opts: O,
    /// The URL as given, password redacted.
    pub(crate) shown: String,
    pub(crate) secret: Option<String>,
}

/// What every adapter over protocol `P` shares: the endpoints, timeouts,
/// read statements, the notes of what was skipped, and the connection that
/// holds the run's lock.
pub struct Family<P: Protocol> {
    /// The database's name (`postgres`, `tidb`).
    pub(crate) db: &'static str,
    hint: &'static str,
    pub(crate) endpoints: Vec<Endpoint<P::Opts>>,
    /// Where the tables are created and dropped: the database itself
    /// (never a fault proxy); the drop tries them in turn.
    admin: Vec<Endpoint<P::Opts>>,
    /// How long the drop keeps trying.
    teardown_wait: Duration,
    connect_timeout: Duration,
    pub(crate) statement_timeout: Duration,
    /// What each client statement may take (the timeout and the run's
    /// give-up signal).
    pub(crate) limits: crate::Limits,
    pub(crate) reads: Reads,
    /// Classifies the server's errors.
    pub(crate) classify: P::Classify,
    /// What was skipped, said once.
    pub(crate) notes: Arc<Notes>,
    /// The run's table names.
    pub(crate) tables: TableNames,
    /// `--session-var`, set on every new connection by [`Protocol::init`].
    pub(crate) session_vars: Vec<(String, String)>,
    /// The connection that created the tables and holds the run's lock
    /// until [`Family::teardown`].
    guard: tokio::sync::Mutex<Option<P::Conn>>,
    /// True once `setup` created the tables (only those are dropped).
    owned: AtomicBool,
}

impl<P: Protocol> Family<P> {
    /// Parses the `--url`s (default `default_url`); URL parameters named in
    /// `ours` are taken out and returned, one list per URL. Connects
    /// nowhere yet.
    pub(crate) fn new(
        db: &'static str,
        hint: &'static str,
        default_url: &str,
        classify: P::Classify,
        opts: &OpenOptions,
        ours: &[&str],
    ) -> Result<(Self, Vec<OwnParams>), AdapterError> {
        let urls: Vec<&str> = if opts.urls.is_empty() {
            vec![default_url]
        } else {
            opts.urls.iter().map(String::as_str).collect()
        };
        let parse = |url: &str| {
            let shown = redact_url(url);
            let (parsed, secret, taken) = P::parse(url, ours).map_err(|e| {
                AdapterError::Config(format!("{db}: cannot use --url {shown}: {e}"))
            })?;
            let ep = Endpoint {
                opts: parsed,
                shown,
                secret,
            };
            Ok::<_, AdapterError>((ep, taken))
        };
        let mut endpoints = Vec::with_capacity(urls.len());
        let mut params = Vec::with_capacity(urls.len());
        for url in urls {
            let (ep, taken) = parse(url)?;
            endpoints.push(ep);
            params.push(taken);
        }
        let admin = match opts.admin_urls.is_empty() {
            true => vec![endpoints[0].clone()],
            false => (opts.admin_urls.iter())
                .map(|u| parse(u).map(|(ep, _)| ep))
                .collect::<Result<_, _>>()?,
        };
        let family = Family {
            db,
            hint,
            endpoints,
            admin,
            teardown_wait: opts.teardown_wait,
            connect_timeout: Duration::from_secs(3),
            statement_timeout: opts.statement_timeout,
            limits: opts.limits(),
            reads: Reads::new(opts.read_lock, &P::READS),
            classify,
            notes: Arc::default(),
            tables: opts.tables.clone(),
            session_vars: checked_vars(db, &opts.session_vars)?,
            guard: tokio::sync::Mutex::new(None),
            owned: AtomicBool::new(false),
        };
        Ok((family, params))
    }

    /// What the server says it is: the answer of `sql` on a connection of
    /// its own to the database (not through a fault proxy); `None` if
    /// anything fails (the run then says so where it connects).
    pub(crate) async fn server_text(&self, sql: &str) -> Option<String> {
        let mut conn = self.open(&self.admin[0]).await.ok()?;
        let text = P::text(&mut conn, sql).await;
        P::close(conn).await;
        text
    }

    /// The session variables, `name=value` each, for the history header.
    pub(crate) fn settings(&self) -> Vec<String> {
        let shown = self.session_vars.iter().map(|(n, v)| format!("{n}={v}"));
        shown.collect()
    }

    /// The endpoints, redacted, comma-separated.
    pub(crate) fn location(&self) -> String {
        let shown: Vec<&str> = self.endpoints.iter().map(|e| e.shown.as_str()).collect();
        shown.join(",")
    }

    /// The endpoint client `client` uses: round robin, the same on every
    /// reconnect.
    pub(crate) fn endpoint(&self, client: u64) -> &Endpoint<P::Opts> {
        &self.endpoints[(client % self.endpoints.len() as u64) as usize]
    }

    /// Connects to `ep`, failing within the connect timeout with the
    /// redacted URL and the hint.
    pub(crate) async fn open(&self, ep: &Endpoint<P::Opts>) -> Result<P::Conn, AdapterError> {
        let fail = |detail: String, why: ConnectFailure| AdapterError::Connect {
            db: self.db,
            url: ep.shown.clone(),
            detail: scrub(&detail, ep.secret.as_deref()),
            hint: why.hint(self.hint),
        };
        let limit = self.connect_timeout + P::CONNECT_GRACE;
        match tokio::time::timeout(limit, P::connect(&ep.opts, self.connect_timeout)).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err((detail, why))) => Err(fail(detail, why)),
            Err(_) => Err(fail(
                format!("no answer within {} s", limit.as_secs()),
                ConnectFailure::Other,
            )),
        }
    }

    /// A setup error at the endpoint the tables are created at.
    fn setup_failed(&self, detail: String) -> AdapterError {
        AdapterError::Setup {
            db: self.db,
            url: self.admin[0].shown.clone(),
            detail,
        }
    }

    /// Creates the tables on the database itself (the first of the admin
    /// endpoints, never a fault proxy), on a connection kept until
    /// [`Family::teardown`]. A run's own tables: first takes the run's
    /// lock and refuses tables that exist already.
    pub(crate) async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        let ep = &self.admin[0];
        let secret = ep.secret.as_deref();
        let fail = |detail: String| self.setup_failed(detail);
        let mut guard = self.guard.lock().await;
        let conn = match guard.take() {
            Some(c) if P::usable(&c) => c,
            _ => self.open(ep).await?,
        };
        let conn = guard.insert(conn);
        let script = P::tables_script(self.db, schema)?;
        if self.tables.suffix().is_some() && !self.owned.load(Ordering::Relaxed) {
            let names = self.tables.for_schema(schema);
            let lock = self.tables.lock_name();
            match P::try_lock(conn, &self.tables, secret)
                .await
                .map_err(fail)?
            {
                Lock::Taken => {}
                Lock::Held => {
                    return Err(fail(format!(
                        "the tables {} belong to another run that is still running \
                         (it holds the {} {lock})",
                        names.join(", "),
                        P::LOCK
                    )))
                }
                // A server without such locks: the run's own table names
                // still keep runs apart.
                Lock::Unknown(why) => self.notes.add(format!(
                    "{}: could not take the {} {lock} ({why}); relying on the run's own \
                     table names",
                    self.db,
                    P::LOCK
                )),
            }
            if let Some(name) = P::existing(conn, &names, secret).await.map_err(fail)? {
                return Err(fail(format!(
                    "table {name} already exists: it belongs to another run (or one \
                     kept with --keep-tables); this run will not touch it"
                )));
            }
        }
        for stmt in script {
            P::batch(conn, &self.tables.render(stmt), secret)
                .await
                .map_err(fail)?;
        }
        self.owned.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Drops the tables `setup` created (unless `keep`), gives the run's
    /// lock back and closes the connection that held it. While the drop
    /// fails (the connection was lost with a killed or restarted node, the
    /// node cannot be reached or refuses work while it rejoins), it tries
    /// again on a new connection, to the next admin endpoint (another node
    /// of the cluster), for up to [`OpenOptions::teardown_wait`].
    pub(crate) async fn teardown(&self, keep: bool) -> Result<(), AdapterError> {
        let held = self.guard.lock().await.take();
        let held = held.filter(|c| P::usable(c));
        if !self.owned.swap(false, Ordering::Relaxed) || keep {
            if let Some(mut conn) = held {
                P::unlock(&mut conn, &self.tables).await;
                P::close(conn).await;
            }
            return Ok(());
        }
        let sql = format!(
            "DROP TABLE IF EXISTS {}",
            self.tables.all_tables().join(", ")
        );
        let deadline = tokio::time::Instant::now() + self.teardown_wait;
        let mut held = held;
        let mut pause = Duration::from_millis(200);
        for ep in self.admin.iter().cycle() {
            let secret = ep.secret.as_deref();
            // The connection that holds the lock first (on the first
            // endpoint), then new ones.
            let (conn, holds_lock) = match held.take() {
                Some(c) => (Ok(c), true),
                None => (self.open(ep).await, false),
            };
            let failed = match conn {
                Err(AdapterError::Connect { detail, .. }) => detail,
                Err(e) => e.to_string(),
                Ok(mut conn) => {
                    let r = tokio::time::timeout(
                        self.statement_timeout,
                        P::batch(&mut conn, &sql, secret),
                    )
                    .await;
                    let failed = match r {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e),
                        Err(_) => Some(format!(
                            "no answer within {} s",
                            self.statement_timeout.as_secs_f64()
                        )),
                    };
                    // Give the lock back before leaving: the server frees
                    // it on disconnect only once it notices, and the next
                    // run may come first.
                    if holds_lock {
                        let unlock = P::unlock(&mut conn, &self.tables);
                        let _ = tokio::time::timeout(self.statement_timeout, unlock).await;
                    }
                    P::close(conn).await;
                    match failed {
                        None => return Ok(()),
                        Some(e) => e,
                    }
                }
            };
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(AdapterError::Teardown {
                    db: self.db,
                    url: ep.shown.clone(),
                    detail: format!(
                        "{failed} (still failing after {} s)",
                        self.teardown_wait.as_secs_f64()
                    ),
                });
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(Duration::from_secs(2));
        }
        unreachable!("the admin endpoints are never empty")
    }

    /// Opens a connection for client `client` on its endpoint, with the
    /// session settings every dialect runs.
    pub(crate) async fn connect(
        &self,
        client: u64,
    ) -> Result<(P::Conn, &Endpoint<P::Opts>), AdapterError> {
        let ep = self.endpoint(client);
        let mut conn = self.open(ep).await?;
        P::init(self, ep, &mut conn).await?;
        Ok((conn, ep))
    }

    /// Wraps an initialized connection into a session, with what the
    /// dialect adds.
    pub(crate) fn session(
        &self,
        ep: &Endpoint<P::Opts>,
        conn: P::Conn,
        extra: P::Extra,
    ) -> Box<dyn Session> {
        P::session(self, ep, conn, extra)
    }

    /// Says once that the server at `ep` is not `what` (its version
    /// `version`), so the statements `skipped` were not run; `more` ends
    /// the sentence.
    pub(crate) fn not_the_server(
        &self,
        ep: &Endpoint<P::Opts>,
        what: &str,
        version: &str,
        skipped: &[&str],
        more: &str,
    ) {
        self.notes.add(format!(
            "{}: the server at {} is not {what} ({version}); skipped the {what}-only \
             statements `{}`{more}",
            self.db,
            ep.shown,
            skipped.join("`, `")
        ));
    }
}

/// One dialect of protocol `P`: its isolation levels and what it adds to
/// a new session.
#[async_trait]
pub trait Dialect<P: Protocol>: Send + Sync + 'static {
    /// The setting that promises `level`, or the one named `explicit`.
    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError>;

    /// Runs the dialect's own settings on a new connection, and says what
    /// it adds to the session; by default nothing.
    async fn prepare(
        &self,
        family: &Family<P>,
        ep: &Endpoint<P::Opts>,
        conn: &mut P::Conn,
    ) -> Result<P::Extra, AdapterError> {
        let _ = (family, ep, conn);
        Ok(P::Extra::default())
    }

    /// What the server says it is, for the history header: by default
    /// the protocol's version query.
    async fn server(&self, family: &Family<P>) -> Option<String> {
        family.server_text(P::VERSION).await
    }
}

/// Checks the `--session-var` names: letters, digits and `_`. A name
/// cannot be a parameter, so nothing else may reach the SQL text (the
/// value always goes as a parameter).
fn checked_vars(
    db: &str,
    vars: &[(String, String)],
) -> Result<Vec<(String, String)>, AdapterError> {
    for (name, _) in vars {
        let first = name.chars().next();
        let ok = first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(AdapterError::Config(format!(
                "{db}: --session-var {name:?}: a variable name is letters, digits and _"
            )));
        }
    }
    Ok(vars.to_vec())
}

/// A dialect that adds nothing to its protocol but its isolation levels.
pub struct Levels(pub fn(Level, Option<&str>) -> Result<Isolation, AdapterError>);

impl<P: Protocol> Dialect<P> for Levels {
    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        (self.0)(level, explicit)
    }
}

/// The adapter of dialect `D` of protocol `P`: the family's endpoints and
/// tables, and the dialect's own state.
pub struct SqlDatabase<P: Protocol, D: Dialect<P>> {
    pub(crate) family: Family<P>,
    pub(crate) dialect: D,
}

impl<P: Protocol, D: Dialect<P>> SqlDatabase<P, D> {
    /// The adapter of `db` (started as `hint` says, at `default_url` when
    /// no `--url` is given), its server errors classified by `classify`;
    /// `dialect` makes the dialect from the family and the URL parameters
    /// named in `ours`. Connects nowhere yet.
    pub(crate) fn open(
        (db, hint, default_url): (&'static str, &'static str, &str),
        classify: P::Classify,
        opts: &OpenOptions,
        ours: &[&str],
        dialect: impl FnOnce(&Family<P>, Vec<OwnParams>) -> Result<D, AdapterError>,
    ) -> Result<Self, AdapterError> {
        let (family, params) = Family::new(db, hint, default_url, classify, opts, ours)?;
        let dialect = dialect(&family, params)?;
        Ok(SqlDatabase { family, dialect })
    }
}

impl<P: Protocol> SqlDatabase<P, Levels> {
    /// The adapter of a dialect that adds only its `isolation` levels.
    pub(crate) fn plain(
        server: (&'static str, &'static str, &str),
        classify: P::Classify,
        opts: &OpenOptions,
        isolation: fn(Level, Option<&str>) -> Result<Isolation, AdapterError>,
    ) -> Result<Self, AdapterError> {
        Self::open(server, classify, opts, &[], |_, _| Ok(Levels(isolation)))
    }
}

#[async_trait]
impl<P: Protocol, D: Dialect<P>> Database for SqlDatabase<P, D> {
    fn name(&self) -> &'static str {
        self.family.db
    }

    fn location(&self) -> String {
        self.family.location()
    }

    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        self.dialect.isolation(level, explicit)
    }

    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        self.family.setup(schema).await
    }

    async fn teardown(&self, keep_tables: bool) -> Result<(), AdapterError> {
        self.family.teardown(keep_tables).await
    }

    async fn connect(&self, client: u64) -> Result<Box<dyn Session>, AdapterError> {
        let (mut conn, ep) = self.family.connect(client).await?;
        let extra = self.dialect.prepare(&self.family, ep, &mut conn).await?;
        Ok(self.family.session(ep, conn, extra))
    }

    fn warnings(&self) -> Vec<String> {
        self.family.notes.all()
    }

    async fn server(&self) -> Option<String> {
        self.dialect.server(&self.family).await
    }

    fn settings(&self) -> Vec<String> {
        self.family.settings()
    }
}

/// Asserts that protocol `P`'s reads take the lock `--read-lock` asks
/// for: none when plain, FOR UPDATE, and `share` (its share-lock clause).
#[cfg(test)]
pub(crate) fn check_read_locks<P: Protocol>(share: &str) {
    let plain = Reads::new(ReadLock::Plain, &P::READS);
    assert!(
        plain.read.ends_with("WHERE k = $1") || plain.read.ends_with("WHERE k = ?"),
        "{plain:?}"
    );
    assert!(!plain.range.contains(" FOR "), "{plain:?}");
    let update = Reads::new(ReadLock::ForUpdate, &P::READS);
    assert!(
        update.range.ends_with(" ORDER BY k FOR UPDATE"),
        "{update:?}"
    );
    assert!(Reads::new(ReadLock::Share, &P::READS).list.ends_with(share));
}
