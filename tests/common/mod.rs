//! Helpers for the end-to-end tests: run the real `harness` binary, read
//! what it wrote, and make scratch PostgreSQL and MariaDB/MySQL databases.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use history::{History, Status, Txn};
use mysql_async::prelude::Queryable;
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

/// Runs `harness ARGS`.
pub fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .expect("run the harness binary")
}

/// `--db DB --url URL --workload WORKLOAD`: what a run runs, and where.
pub fn target<'a>(db: &'a str, url: &'a str, workload: &'a str) -> Vec<&'a str> {
    vec!["--db", db, "--url", url, "--workload", workload]
}

/// `harness run` of `workload` on `db` at `url`, with `args`; the caller
/// says what becomes of its output, and starts it.
pub fn run_command(db: &str, url: &str, workload: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness"));
    c.arg("run").args(target(db, url, workload)).args(args);
    c
}

/// [`run_command`] with `--out` a new temporary folder, started, its
/// stdout and stderr piped (for `wait_with_output`); returns the child and
/// the folder.
pub fn spawn_run(db: &str, url: &str, workload: &str, args: &[&str]) -> (Child, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let child = run_command(db, url, workload, args)
        .arg("--out")
        .arg(out.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the harness");
    (child, out)
}

/// The history of a run that was disturbed (exit code 0 or 3: not an
/// anomaly), read from its run folder under `out`; asserts it is complete.
pub fn complete_history(o: &Output, out: &Path) -> History {
    let code = o.status.code().unwrap();
    assert!(
        code == 0 || code == 3,
        "exit {code}: {}{}",
        stdout(o),
        stderr(o)
    );
    let run = run_dir(out);
    let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
    assert!(h.end.is_some(), "the history is complete");
    h
}

/// Runs the mini workload on `db` at `url` with 8 clients, 400
/// transactions and `args` (few keys among them, for contention); checks
/// the history, the count and the database the report names; returns the
/// exit code, the history and the report.
pub fn contended_run(
    db: &str,
    url: &str,
    tag: &str,
    args: &[&str],
) -> (i32, History, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut all = vec!["run"];
    all.extend(target(db, url, "mini"));
    all.extend(["--clients", "8", "--txns", "400", "--out", &out]);
    all.extend(["--check-timeout", "60s"]);
    all.extend_from_slice(args);
    let o = harness(&all);
    let code = o.status.code().expect("exit code");
    assert_ne!(code, 2, "{tag}: {}", stderr(&o));
    let run = run_dir(dir.path());
    let h = read_history(&run, 400);
    let report = read_report(&run);
    assert_eq!(report["counts"]["total"], 400);
    assert_eq!(report["run"]["db"], db);
    (code, h, report)
}

/// The one warning of the run's report that contains `marker`: settings
/// an adapter skipped are reported once, however many sessions skip them.
pub fn the_warning(report: &serde_json::Value, marker: &str) -> String {
    let warnings = report["run"]["warnings"].as_array().expect("warnings");
    let found: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains(marker))
        .collect();
    assert_eq!(found.len(), 1, "reported once: {warnings:?}");
    found[0].to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one run folder under `out`.
pub fn run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "expected one run folder in {}: {dirs:?}",
        out.display()
    );
    dirs.into_iter().next().unwrap()
}

/// Whether `t` is one of the run's final reads (kind `final-read`), which
/// the harness adds after the workload's own transactions.
pub fn is_final_read(t: &Txn) -> bool {
    t.kind.as_deref() == Some(workloads::FINAL_READ)
}

/// The workload's own transactions of `h`: all but the final reads.
pub fn workload_txns(h: &History) -> impl Iterator<Item = &Txn> + '_ {
    h.txns.iter().filter(|t| !is_final_read(t))
}

/// Reads `history.jsonl` of a run and checks that it is complete and
/// consistent: header, end line with the right count, unique ids, sessions
/// that run one transaction at a time, times where they belong. `txns` is
/// the workload's transactions, the final reads not counted.
pub fn read_history(dir: &Path, txns: usize) -> History {
    let h = history::read_jsonl_file(&dir.join("history.jsonl")).expect("the history parses");
    assert!(h.header.is_some(), "header line");
    let end = h.end.as_ref().expect("end line: the history is complete");
    assert_eq!(end.txns as usize, h.txns.len());
    assert_eq!(
        workload_txns(&h).count(),
        txns,
        "every budgeted transaction is recorded"
    );
    let (ok, fail, info) = h.status_counts();
    assert_eq!(ok + fail + info, h.txns.len());
    let ids: HashSet<u64> = h.txns.iter().map(|t| t.id).collect();
    assert_eq!(ids.len(), h.txns.len(), "transaction ids are unique");
    let mut last_end: std::collections::HashMap<u64, u64> = Default::default();
    for t in &h.txns {
        let start = t.start.expect("every transaction has a start");
        match t.status {
            Status::Info => assert!(t.end.is_none(), "info has no end"),
            _ => assert!(t.end.expect("an end") >= start),
        }
        if t.status != Status::Ok {
            assert!(
                t.error.is_some(),
                "T{} {:?} has no error text",
                t.id,
                t.status
            );
        }
        assert!(t.kind.is_some());
        // A session's transactions do not overlap and appear in order.
        if let Some(prev) = last_end.get(&t.session) {
            assert!(
                *prev <= start,
                "session {} overlaps itself at T{}",
                t.session,
                t.id
            );
        }
        last_end.insert(t.session, t.end.unwrap_or(u64::MAX));
    }
    h
}

/// The run's `report.json`.
pub fn read_report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json is JSON")
}

/// A runtime for the plain clients of a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A plain PostgreSQL client on `url`, with its runtime.
pub fn pg(url: &str) -> (tokio::runtime::Runtime, tokio_postgres::Client) {
    let rt = runtime();
    let c = rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(conn);
        c
    });
    (rt, c)
}

/// The server the tests use: `ISOHARNESS_PG_URL`, else the default.
pub fn admin_url() -> String {
    std::env::var("ISOHARNESS_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Creates (or recreates) `ih_test_<tag>` and returns its URL; panics (the
/// test fails) when the server is down.
pub fn scratch_db(tag: &str) -> String {
    let rt = runtime();
    let admin = admin_url();
    let name = format!("ih_test_{tag}");
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(&admin, NoTls)
            .await
            .unwrap_or_else(|e| {
                panic!("PostgreSQL is not reachable ({e}); start it or set ISOHARNESS_PG_URL")
            });
        tokio::spawn(conn);
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .await
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        // Contended runs deadlock often at read committed; detect it sooner
        // than the default 1 s (allowed for superusers only; else ignored).
        let _ = c
            .batch_execute(&format!(
                "ALTER DATABASE {name} SET deadlock_timeout = '100ms'"
            ))
            .await;
    });
    let cfg: Config = admin.parse().unwrap();
    let user = cfg.get_user().unwrap_or("postgres");
    let auth = match cfg.get_password() {
        Some(p) => format!("{user}:{}", String::from_utf8_lossy(p)),
        None => user.to_string(),
    };
    let host = match cfg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    format!("postgres://{auth}@{host}:{port}/{name}")
}

/// Creates (or recreates) the database `ih_test_<tag>` on the MariaDB/MySQL
/// server (`ISOHARNESS_MYSQL_URL`, else the default) and returns its URL;
/// panics (the test fails) when the server is down.
pub fn mysql_scratch_db(tag: &str) -> String {
    let admin = std::env::var("ISOHARNESS_MYSQL_URL")
        .unwrap_or_else(|_| adapters::mysql::DEFAULT_URL.into());
    let opts = mysql_async::Opts::from_url(&admin).expect("ISOHARNESS_MYSQL_URL must parse");
    let name = format!("ih_test_{tag}");
    runtime().block_on(async {
        let mut c = mysql_async::Conn::new(opts.clone())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "MySQL/MariaDB is not reachable ({e}); start it (.ci/services) or set \
                     ISOHARNESS_MYSQL_URL"
                )
            });
        c.query_drop(format!("DROP DATABASE IF EXISTS {name}"))
            .await
            .unwrap();
        c.query_drop(format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let _ = c.disconnect().await;
    });
    let auth = match opts.pass() {
        Some(p) => format!("{}:{p}", opts.user().unwrap_or("root")),
        None => opts.user().unwrap_or("root").to_string(),
    };
    format!(
        "mysql://{auth}@{}:{}/{name}",
        opts.ip_or_hostname(),
        opts.tcp_port()
    )
}

/// The tables of the database at the PostgreSQL `url` (its current
/// schema) whose names start with `prefix`.
pub fn pg_tables(url: &str, prefix: &str) -> Vec<String> {
    let (rt, c) = pg(url);
    rt.block_on(async {
        let rows = c
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() \
                 AND starts_with(tablename, $1) ORDER BY 1",
                &[&prefix],
            )
            .await
            .unwrap();
        rows.iter().map(|r| r.get(0)).collect()
    })
}

/// The tables of the database at the MySQL/MariaDB `url` whose names
/// start with `prefix`.
pub fn mysql_tables(url: &str, prefix: &str) -> Vec<String> {
    runtime().block_on(async {
        let opts = mysql_async::Opts::from_url(url).unwrap();
        let mut c = mysql_async::Conn::new(opts).await.unwrap();
        let names: Vec<String> = c
            .exec(
                "SELECT table_name FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND LEFT(table_name, CHAR_LENGTH(?)) = ? \
                 ORDER BY 1",
                (prefix, prefix),
            )
            .await
            .unwrap();
        let _ = c.disconnect().await;
        names
    })
}

/// The tables whose names start with `prefix` in the database at `url`,
/// a PostgreSQL (`--db postgres`) or MySQL/MariaDB (`--db mysql`) one.
pub fn db_tables(db: &str, url: &str, prefix: &str) -> Vec<String> {
    match db {
        "postgres" => pg_tables(url, prefix),
        "mysql" => mysql_tables(url, prefix),
        _ => panic!("no table listing for --db {db}"),
    }
}

/// Starts two `harness run`s of the mini workload on `db` at `url`, the
/// second 0.15 s after the first, each with its own `--out` folder (so
/// their run ids may well be equal), plus `args`; waits for both and
/// returns their output and run folders.
pub fn two_runs_at_once(
    db: &str,
    url: &str,
    args: &[&str],
) -> Vec<(Output, PathBuf, tempfile::TempDir)> {
    let mut all = vec!["--keys", "4", "--clients", "4", "--duration", "3s"];
    all.extend(["--check-timeout", "120s"]);
    all.extend_from_slice(args);
    let mut children = Vec::new();
    for i in 0..2 {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
        children.push(spawn_run(db, url, "mini", &all));
    }
    children
        .into_iter()
        .map(|(child, out)| {
            let o = child.wait_with_output().unwrap();
            let dir = run_dir(out.path());
            (o, dir, out)
        })
        .collect()
}

/// Asserts that both runs of [`two_runs_at_once`] passed, each with its
/// own tables.
pub fn assert_both_pass(runs: &[(Output, PathBuf, tempfile::TempDir)]) -> Vec<String> {
    let mut tables = Vec::new();
    for (o, dir, _) in runs {
        assert_eq!(
            o.status.code(),
            Some(0),
            "each run passes on its own tables:\n{}{}",
            stdout(o),
            stderr(o)
        );
        let report = read_report(dir);
        let t = report["run"]["tables"][0]
            .as_str()
            .expect("report names its table");
        assert!(t.starts_with("isoharness_registers_"), "{t}");
        assert!(report["counts"]["committed"].as_u64().unwrap() > 0);
        tables.push(t.to_string());
    }
    assert_ne!(tables[0], tables[1], "the runs have tables of their own");
    tables
}

/// Two runs at once of [`two_runs_at_once`] on `db` at `url`, at
/// serializable checked at `ser`: both pass, each on its own tables.
pub fn two_serializable_runs_at_once_pass(db: &str, url: &str) {
    let runs = two_runs_at_once(db, url, &["--isolation", "serializable", "--level", "ser"]);
    assert_both_pass(&runs);
}

/// Asserts that the TPC-C consistency conditions 1-4 held at the end of a
/// run whose report has `end_check` `ec` and whose stdout is `stdout`.
pub fn assert_tpcc_conditions_hold(ec: &serde_json::Value, stdout: &str, what: &str) {
    assert_eq!(ec["ok"], true, "{what}: {ec}");
    assert!(
        stdout.contains("tpcc-consistency: 4 of 4 conditions hold"),
        "{stdout}"
    );
}

/// Two transactions read the same version and both overwrite it: a lost
/// update, as JSONL lines.
pub const LOST_UPDATE: &str = r#"{"id":0,"session":0,"status":"ok","start":1,"end":4,"ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"ok","start":2,"end":5,"ops":[["r",1,null],["w",1,11]]}
"#;
