//! Helpers for the end-to-end tests: run the real `harness` binary, read
//! what it wrote, and make scratch PostgreSQL databases.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use history::{History, Status};
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

/// Runs `harness ARGS`.
pub fn harness(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .output()
        .expect("run the harness binary")
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

/// Reads `history.jsonl` of a run and checks that it is complete and
/// consistent: header, end line with the right count, unique ids, sessions
/// that run one transaction at a time, times where they belong.
pub fn read_history(dir: &Path, txns: usize) -> History {
    let h = history::read_jsonl_file(&dir.join("history.jsonl")).expect("the history parses");
    assert!(h.header.is_some(), "header line");
    let end = h.end.as_ref().expect("end line: the history is complete");
    assert_eq!(end.txns as usize, h.txns.len());
    assert_eq!(h.txns.len(), txns, "every budgeted transaction is recorded");
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

/// The server the tests use: `ISOHARNESS_PG_URL`, else the default.
pub fn admin_url() -> String {
    std::env::var("ISOHARNESS_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Creates (or recreates) `ih_test_<tag>` and returns its URL; panics (the
/// test fails) when the server is down.
pub fn scratch_db(tag: &str) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
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

/// Starts two `harness run`s of the mini workload on `db` at `url`, the
/// second 0.15 s after the first, each with its own `--out` folder (so
/// their run ids may well be equal), plus `args`; waits for both and
/// returns their output and run folders.
pub fn two_runs_at_once(
    db: &str,
    url: &str,
    args: &[&str],
) -> Vec<(Output, PathBuf, tempfile::TempDir)> {
    let mut children = Vec::new();
    for i in 0..2 {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
        let out = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args([
                "run",
                "--db",
                db,
                "--url",
                url,
                "--workload",
                "mini",
                "--keys",
                "4",
                "--clients",
                "4",
                "--duration",
                "3s",
                "--check-timeout",
                "120s",
                "--out",
            ])
            .arg(out.path())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the harness");
        children.push((child, out));
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
