//! The command line: argument definitions and the dispatch to each
//! subcommand. Every failure becomes one `error: ...` line and exit code 2.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use history::Level;

/// Finds isolation bugs in real databases, Jepsen-style.
#[derive(Parser, Debug)]
#[command(name = "harness", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a workload against a database, record the history, check it.
    Run(Box<RunArgs>),
    /// Check a recorded history against an isolation level.
    Check(CheckArgs),
    /// Convert a history between formats.
    Convert(ConvertArgs),
    /// Run a matrix of scenarios; write summary.json and junit.xml.
    Campaign(crate::campaign::args::CampaignArgs),
    /// Compare two campaign summaries and flag regressions.
    Compare(crate::compare::CompareArgs),
    /// Rebuild the HTML report (and DOT drawings) of a run folder.
    Report(crate::report_cmd::ReportArgs),
    /// Start, stop or inspect a local multi-node cluster (galera,
    /// pg-replica, patroni), each node in its own network namespace.
    Cluster(crate::cluster::args::ClusterArgs),
}

/// The databases `--db` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DbArg {
    /// Embedded SQLite (a file in the run folder); needs no server.
    Sqlite,
    /// PostgreSQL (default URL postgres://postgres@127.0.0.1:5432/postgres).
    Postgres,
    /// The in-process multi-version store (rc, si, ser; see --bug).
    Memdb,
    /// MySQL 8 or MariaDB (default URL mysql://root@127.0.0.1:3306/test).
    Mysql,
    /// TiDB (default URL mysql://root@127.0.0.1:4000/test; see --tidb-txn-mode).
    Tidb,
    /// YugabyteDB YSQL (default URL postgres://yugabyte@127.0.0.1:5433/yugabyte).
    Yugabyte,
}

impl DbArg {
    /// The adapter kind this names.
    pub fn kind(self) -> adapters::DbKind {
        match self {
            DbArg::Sqlite => adapters::DbKind::Sqlite,
            DbArg::Postgres => adapters::DbKind::Postgres,
            DbArg::Memdb => adapters::DbKind::Memdb,
            DbArg::Mysql => adapters::DbKind::Mysql,
            DbArg::Tidb => adapters::DbKind::Tidb,
            DbArg::Yugabyte => adapters::DbKind::Yugabyte,
        }
    }
}

/// The exit codes and levels, after `run --help` and `check --help`.
const VERDICT_HELP: &str = "Exit codes: 0 ok (no anomaly at the level); 1 anomaly found; \
2 usage, input or infrastructure error (bad flags, unreadable history, database down); \
3 unknown (the check could not decide within its time limit).

Levels (--level): rc (read committed), ra (read atomic), cc (causal \
consistency), pc (prefix consistency), si (snapshot isolation), strong-session-si, \
strong-si, ser (serializability), strong-session-ser, sser (strict serializability).

Progress (stderr): on a terminal, a bar while the history is read and a \
spinner naming the check's stage (indexing, deciding, placing, certifying); \
elsewhere, a line such as `check: deciding ser… 20 s` every 10 s while the \
check runs, and nothing for one that ends sooner. `harness run` shows a bar \
while its clients run, and elsewhere a line such as `run: 10 s: 2468 \
committed, 56 failed, 0 info; 246.8 committed/s` every 5 s.";

/// Arguments of `harness run`.
#[derive(Args, Debug, Clone)]
#[command(after_help = VERDICT_HELP)]
pub struct RunArgs {
    /// The database to test.
    #[arg(long, value_enum, default_value_t = DbArg::Sqlite)]
    pub db: DbArg,
    /// Where the database is (repeat for several endpoints; sessions are
    /// spread over them). Default: the database's usual local address.
    #[arg(long = "url", value_name = "URL")]
    pub urls: Vec<String>,
    /// Run against the cluster `harness cluster up KIND` started (galera,
    /// pg-replica, patroni): its node URLs, each client pinned to one node
    /// (patroni: each follows the leader); for pg-replica, read-only
    /// transactions go to the standbys. Sets --db.
    /// Its nodes are command-fault targets (`kill:target=galera-2`).
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "urls")]
    pub cluster: Option<crate::cluster::args::Kind>,
    /// The state folder of --cluster (default /tmp/isoharness-cluster/KIND).
    #[arg(long, value_name = "DIR", requires = "cluster")]
    pub cluster_state: Option<PathBuf>,
    /// Bring --cluster up first with this many nodes, as `harness cluster
    /// up KIND --nodes N` would (a cluster already up with this shape and
    /// these options is used as it is).
    #[arg(long, value_name = "N", requires = "cluster", allow_negative_numbers = true, value_parser = parse_cluster_nodes)]
    pub cluster_nodes: Option<u32>,
    /// A server option of --cluster, repeatable, as `harness cluster up
    /// --server-opt` takes it (`wsrep-sync-wait=1`; patroni: its settings,
    /// `synchronous_mode=on`); brings the cluster up
    /// first with these options (3 nodes unless --cluster-nodes).
    #[arg(long = "cluster-opt", value_name = "NAME=VALUE", requires = "cluster")]
    pub cluster_opts: Vec<String>,
    /// A read-only node (a standby) that takes the read-only transactions,
    /// repeatable; with --url for a cluster the harness did not start, or
    /// with --cluster to choose the standbys by hand.
    #[arg(long = "read-url", value_name = "URL")]
    pub read_urls: Vec<String>,
    /// The workload: mini, blindw, range, append or tpcc.
    #[arg(long, default_value = "mini")]
    pub workload: String,
    /// A variant of the workload (blindw: rw, rm, w, mixed; range: b, rqh, idh).
    #[arg(long)]
    pub variant: Option<String>,
    /// blindw (rw, rm, w) and range: the order in which a transaction
    /// touches its keys, sorted (ascending: writers take row locks in one
    /// order, so no lock-order deadlocks; the default) or random (the draw
    /// order, deadlocks included). Either way the same keys, so the same
    /// conflicts and anomalies, are possible.
    #[arg(long, value_name = "ORDER", value_parser = parse_key_order)]
    pub key_order: Option<workloads::KeyOrder>,
    /// The level the history is checked against (rc, ra, cc, pc, si,
    /// strong-session-si, strong-si, ser, strong-session-ser, sser).
    #[arg(long, default_value = "ser")]
    pub level: Level,
    /// The database's own isolation setting (e.g. read-committed,
    /// repeatable-read, serializable); default: the one promising --level.
    #[arg(long, value_name = "NAME")]
    pub isolation: Option<String>,
    /// Concurrent client sessions (1 to 4096).
    #[arg(long, default_value_t = 8, allow_negative_numbers = true, value_parser = parse_clients)]
    pub clients: u32,
    /// Transactions to attempt in total (default 5000 on sqlite, 2000 on the
    /// other databases, unless --duration).
    #[arg(long, conflicts_with = "duration", allow_negative_numbers = true, value_parser = parse_txns)]
    pub txns: Option<u64>,
    /// Run for this long instead (e.g. 60s, 5m). `0s` is refused (a run
    /// of no time records nothing).
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Number of keys (default: the workload's, e.g. 100 for mini).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_keys)]
    pub keys: Option<u64>,
    /// Key distribution: uniform, zipf[:THETA], hotspot[:FRACTION:PROB],
    /// exponential[:LAMBDA] (default: the workload's).
    #[arg(long)]
    pub dist: Option<String>,
    /// Operations per transaction (blindw, range, append).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ops)]
    pub ops: Option<usize>,
    /// Share of reads, overriding the workload's mix.
    #[arg(long)]
    pub read_ratio: Option<f64>,
    /// Seed of the workload generator (default: from the clock; printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Folder that receives the run folder.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Give up checking after this long: the verdict is then `unknown`
    /// (exit 3), never `ok`. `0s` means no limit.
    #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = humantime::parse_duration)]
    pub check_timeout: Duration,
    /// End the run at the first anomaly the check made while it records
    /// finds (`--workload mini` at ser, si and their session variants),
    /// as a first Ctrl-C would: the transactions in flight finish, and the
    /// history so far is checked and reported.
    #[arg(long)]
    pub stop_on_anomaly: bool,
    /// Take the verdict of the check made while the run records, and do
    /// not read the history back: statistics and charts come from what the
    /// recorder counted as it wrote, so the run's memory stays flat however
    /// long it runs (no certificate, no other level placed, no timeline of
    /// every transaction). A run does this by itself once its history
    /// reaches 512 MiB. Only `--workload mini` at ser, si and their session
    /// variants is checked as it records; a streamed anomaly, or any other
    /// run, is read back and checked whole.
    #[arg(long)]
    pub stream: bool,
    /// memdb only: switch on an isolation bug (lost-update, stale-read,
    /// fractured-read, write-skew, long-fork, aborted-read, lost-write).
    #[arg(long, value_parser = parse_bug)]
    pub bug: Option<adapters::memdb::Bug>,
    /// The TPC-C scale (--warehouses, --districts, --customers, --items,
    /// --orders).
    #[command(flatten)]
    pub tpcc: crate::run::hooks::TpccArgs,
    /// How reads lock the rows they read: plain (a consistent read),
    /// for-update (SELECT ... FOR UPDATE) or share (LOCK IN SHARE MODE /
    /// FOR SHARE). postgres, yugabyte, mysql and tidb only.
    #[arg(long, value_name = "LOCK", value_parser = parse_read_lock)]
    pub read_lock: Option<adapters::ReadLock>,
    /// tidb only: the transaction mode that plain `--isolation
    /// repeatable-read` and the levels run in, optimistic or pessimistic
    /// (default: the URL's tidb_txn_mode parameter; else the SI levels run
    /// optimistic, rc read committed, repeatable-read pessimistic).
    #[arg(long, value_name = "MODE")]
    pub tidb_txn_mode: Option<String>,
    /// mysql and tidb only: set a session variable on every connection
    /// (repeatable), recorded in the history header and the report; e.g.
    /// tidb_enable_async_commit=OFF, tidb_enable_1pc=OFF,
    /// tidb_guarantee_linearizability=OFF, tidb_read_staleness=-5.
    #[arg(long = "session-var", value_name = "NAME=VALUE", value_parser = parse_session_var)]
    pub session_vars: Vec<(String, String)>,
    /// Inject faults while the clients run (repeatable; `;` separates
    /// several): KIND[:KEY=VALUE,...] with KIND proxy-reset,
    /// proxy-partition, proxy-latency, proxy-refuse (through a built-in
    /// TCP proxy), or pause, kill, restart, partition (commands of a
    /// scenario target); keys every=5s | random=2s..8s | at=3s/10s,
    /// start=, count=, for=3s, delay=, jitter=, target=, seed=. Example:
    /// proxy-partition:every=10s,for=3s
    #[arg(long = "nemesis", value_name = "SPEC")]
    pub nemesis: Vec<String>,
    /// Read the run's settings (database, workload, faults and their
    /// targets, expected outcome) from a scenario TOML file; flags given
    /// here override it.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Abandon a statement (and its connection) that gets no answer for
    /// this long: the transaction is then `fail`, or `info` at COMMIT.
    /// `0s` is refused (it would abandon every statement; there is no "no
    /// limit" here).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_statement_timeout)]
    pub statement_timeout: Duration,
    /// Give up opening a connection after this long (a client then
    /// retries with backoff). `0s` is refused (no connection could open;
    /// there is no "no limit" here).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_connect_timeout)]
    pub connect_timeout: Duration,
    /// Leave the run's tables (`isoharness_registers_<run>` etc., named in
    /// report.json) in the database instead of dropping them at the end.
    #[arg(long)]
    pub keep_tables: bool,
    /// Skip the final reads: by default, once the clients have stopped and
    /// every fault has healed, the run reads back every key it wrote (for
    /// append, every list) in read-only transactions recorded in the
    /// history with kind `final-read`, so that a write the database
    /// acknowledged and then lost shows up as an anomaly.
    #[arg(long)]
    pub no_final_reads: bool,
    /// How long the final reads wait for the database to answer again
    /// after the last fault healed (reported); past it they are skipped,
    /// with a warning.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    pub final_read_wait: Duration,
    /// Command-fault targets, from the scenario file.
    #[arg(skip)]
    pub targets: crate::nemesis::command::Targets,
    /// The scenario's expected outcome, reported after the check.
    #[arg(skip)]
    pub expect: Option<crate::expectation::Expectation>,
}

/// A whole number from 1 to `max`, or a one-line message naming `flag`:
/// that the value must be a positive whole number (for `-1`, `0`, `1.5`,
/// `many`), or that it is too large (beyond `max`, or beyond what any
/// count can hold).
pub(crate) fn positive(s: &str, flag: &str, max: u64) -> Result<u64, String> {
    let t = s.trim();
    let upto = if max == u64::MAX {
        String::new()
    } else {
        format!(" (1 to {max})")
    };
    let digits = t.strip_prefix('+').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{flag} must be a positive whole number{upto}, not {t:?}"
        ));
    }
    match digits.parse::<u64>() {
        Ok(0) => Err(format!(
            "{flag} must be a positive whole number{upto}, not 0"
        )),
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!(
            "{flag} {t} is too large: the most it can be is {max}"
        )),
    }
}

fn parse_txns(s: &str) -> Result<u64, String> {
    positive(s, "--txns", u64::MAX)
}

fn parse_clients(s: &str) -> Result<u32, String> {
    positive(s, "--clients", 4096).map(|n| n as u32)
}

fn parse_keys(s: &str) -> Result<u64, String> {
    positive(s, "--keys", u64::MAX)
}

fn parse_ops(s: &str) -> Result<usize, String> {
    positive(s, "--ops", u64::from(u32::MAX)).map(|n| n as usize)
}

fn parse_key_order(s: &str) -> Result<workloads::KeyOrder, String> {
    s.parse()
}

fn parse_cluster_nodes(s: &str) -> Result<u32, String> {
    positive(
        s,
        "--cluster-nodes",
        u64::from(crate::cluster::args::MAX_NODES),
    )
    .map(|n| n as u32)
}

/// Where `--dot` writes: an existing folder, or a file in one. A path
/// ending in `/` names a folder, which must exist (writing to it would
/// otherwise fail with the system's "Is a directory").
fn parse_dot(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    if p.is_dir() {
        return Ok(p);
    }
    if s.ends_with('/') || s.ends_with(std::path::MAIN_SEPARATOR) {
        let folder = s.trim_end_matches(['/', std::path::MAIN_SEPARATOR]);
        return Err(format!("the folder {folder} does not exist"));
    }
    if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !parent.is_dir() {
            return Err(format!("the folder {} does not exist", parent.display()));
        }
    }
    Ok(p)
}

/// A duration of more than zero (`--duration 0s` would record nothing).
fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    positive_duration(s, "a run of no time records nothing")
}

/// `--statement-timeout`: more than zero.
fn parse_statement_timeout(s: &str) -> Result<Duration, String> {
    positive_duration(
        s,
        "a statement timeout of 0s would abandon every statement; it does not mean no limit",
    )
}

/// `--connect-timeout`: more than zero.
fn parse_connect_timeout(s: &str) -> Result<Duration, String> {
    positive_duration(
        s,
        "a connect timeout of 0s would let no connection open; it does not mean no limit",
    )
}

/// A duration of more than zero, or a message saying `why` zero is wrong.
fn positive_duration(s: &str, why: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(format!("must be more than zero ({why})"));
    }
    Ok(d)
}

fn parse_read_lock(s: &str) -> Result<adapters::ReadLock, String> {
    adapters::ReadLock::parse(s).ok_or_else(|| {
        format!("unknown read lock {s:?} (expected one of: plain, for-update, share)")
    })
}

fn parse_session_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("{s:?} is not NAME=VALUE")),
    }
}

fn parse_bug(s: &str) -> Result<adapters::memdb::Bug, String> {
    adapters::memdb::Bug::parse(s).ok_or_else(|| {
        let names: Vec<&str> = adapters::memdb::Bug::ALL.iter().map(|b| b.name()).collect();
        format!("unknown bug {s:?} (expected one of: {})", names.join(", "))
    })
}

/// Arguments of `harness check`.
#[derive(Args, Debug, Clone)]
#[command(after_help = VERDICT_HELP)]
pub struct CheckArgs {
    /// The history file.
    pub history: PathBuf,
    /// The level to check against.
    #[arg(long)]
    pub level: Level,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The history's format: auto, jsonl, elle-edn, elle-json, text, awdit,
    /// dbcop, cobra, timekiller, viper.
    #[arg(long, default_value = "auto")]
    pub format: history::Format,
    /// Give up after this long: the verdict is then `unknown` (exit 3),
    /// never `ok`. The requested level gets the whole limit; placing the
    /// other levels ("fails" / "satisfies") gets a few seconds of its own
    /// and leaves unknown what it could not place. `0s` means no limit.
    #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Use the database's own timestamps (`dbts`) as the version order
    /// (an error when no transaction has them).
    #[arg(long)]
    pub use_dbts: bool,
    /// Check a history in which no transaction committed (otherwise
    /// "nothing to check", exit 2).
    #[arg(long)]
    pub allow_empty: bool,
    /// Write the counterexamples as Graphviz DOT, one graph per file (render
    /// each with `dot -Tsvg`): FILE itself when there is one; FILE's stem
    /// with -1, -2, ... (`out.dot` -> `out-1.dot`, `out-2.dot`) when there
    /// are several; `FILE/anomaly-N.dot` when FILE is an existing folder.
    #[arg(long, value_name = "FILE", value_parser = parse_dot)]
    pub dot: Option<PathBuf>,
    /// Write the verdict's certificate (the witness of an `ok`, the checked
    /// refutations of an `anomalous`) to this file as JSON. Every verdict
    /// is re-checked by an independent certificate checker before it is
    /// printed; one whose proof does not hold exits 2. `--json` carries it
    /// too.
    #[arg(long, value_name = "FILE")]
    pub certify: Option<PathBuf>,
    /// How the SER/SI solver searches: `portfolio` (theory and lazy in
    /// turn, on growing budgets), `theory` (CDCL with an acyclicity theory)
    /// or `lazy` (cycle clauses learned from full assignments); the last two for measurements.
    #[arg(long, value_name = "STRATEGY", default_value = "portfolio", value_parser = parse_strategy)]
    pub solver: checkers::solve::Strategy,
    /// Skip the witness and time-guided guesses and go to the complete
    /// search (slower; for measurements).
    #[arg(long)]
    pub no_witness: bool,
    /// Check the file while another process still writes it (a JSONL
    /// history being recorded): transactions are checked as they arrive
    /// and leave memory once old (ser, si and their session variants on
    /// mini-transactions; other histories are read whole), and the verdict
    /// comes when the `end` line does.
    #[arg(long)]
    pub follow: bool,
    /// With --follow: how long the file may stay unchanged before it is
    /// taken as cut short and checked as it is.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration, requires = "follow")]
    pub idle: Duration,
    /// With --follow: stop at the first anomaly the streamed check finds,
    /// and check what was read so far.
    #[arg(long, requires = "follow")]
    pub stop_on_anomaly: bool,
    /// Read the history whole even when it is large: a JSONL history of
    /// 512 MiB or more at a streamed level (ser, si and their session
    /// variants) is otherwise checked as it is read, in memory that does
    /// not grow with it, with no certificate and no other level placed.
    #[arg(long, conflicts_with = "follow")]
    pub offline: bool,
    /// Check a finished history as it is read whatever its size (as a
    /// large one is): the streamed check, and the offline one only for
    /// what it leaves open.
    #[arg(long, conflicts_with_all = ["follow", "offline"])]
    pub stream: bool,
}

fn parse_strategy(s: &str) -> Result<checkers::solve::Strategy, String> {
    match s {
        "theory" => Ok(checkers::solve::Strategy::Theory),
        "lazy" => Ok(checkers::solve::Strategy::Lazy),
        "portfolio" => Ok(checkers::solve::Strategy::Portfolio),
        _ => Err(format!(
            "unknown solver strategy {s:?} (expected portfolio, theory or lazy)"
        )),
    }
}

/// Arguments of `harness convert`.
#[derive(Args, Debug, Clone)]
pub struct ConvertArgs {
    /// The history to read.
    pub input: PathBuf,
    /// The file to write.
    pub output: PathBuf,
    /// The input's format (auto, jsonl, elle-edn, elle-json, text, awdit,
    /// dbcop, cobra, timekiller, viper).
    #[arg(long, default_value = "auto")]
    pub from: history::Format,
    /// The output's format (jsonl, elle-edn, text).
    #[arg(long, default_value = "jsonl")]
    pub to: history::Format,
    /// Write the output even when its format cannot carry all of the
    /// input (elle-edn and text drop the database timestamps `dbts`, the
    /// transaction kinds and nodes, and the fault lines): without it such
    /// a conversion is refused, naming what would be lost.
    #[arg(long)]
    pub lossy: bool,
}
