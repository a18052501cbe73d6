//! Fault injection end to end on real PostgreSQL: crash restarts and
//! process pauses (on a private server each test starts and stops, so it
//! can be restarted freely), the built-in proxy's resets and partitions,
//! and the harness itself killed with SIGKILL in the middle of a run.
//!
//! Needs the PostgreSQL binaries (`ISOHARNESS_PG_BIN`, else
//! /usr/lib/postgresql/15/bin), root (to run them as `postgres`), and the
//! shared server of .ci/services for the proxy and SIGKILL tests.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use history::{History, Key, Op, Status};

/// The tests here time faults to the second; run them one at a time so
/// they do not starve each other of the (few) cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn pg_bin() -> PathBuf {
    std::env::var_os("ISOHARNESS_PG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"))
}

fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .output()
        .expect("run sh")
}

/// A PostgreSQL server of its own: a fresh data folder in a temporary
/// folder, on a free port, run as the `postgres` user; stopped on drop.
struct PgInstance {
    dir: tempfile::TempDir,
    port: u16,
}

/// Server settings: contended mini-transactions deadlock often; detect it
/// in 50 ms, not the default second.
const FAST: &str = "-c fsync=off -c deadlock_timeout=50ms";

impl PgInstance {
    /// Starts a server with these extra `-c` settings.
    fn start(settings: &str) -> PgInstance {
        let bin = pg_bin();
        assert!(
            bin.join("initdb").exists(),
            "no PostgreSQL binaries in {} (set ISOHARNESS_PG_BIN)",
            bin.display()
        );
        let dir = tempfile::Builder::new()
            .prefix("ih-pg-")
            .tempdir_in("/tmp")
            .unwrap();
        let d = dir.path().display().to_string();
        let o = sh(&format!("chown postgres:postgres {d}"));
        assert!(
            o.status.success(),
            "chown: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = sh(&format!(
            "runuser -u postgres -- {}/initdb -D {d}/data -A trust -U postgres >/dev/null",
            bin.display()
        ));
        assert!(
            o.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = PgInstance { dir, port };
        let o = sh(&format!(
            "{} -l {d}/log -o \"-p {port} -k {d} -c listen_addresses=127.0.0.1 -c max_connections=200 {settings}\" start >/dev/null",
            p.ctl()
        ));
        assert!(
            o.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&o.stderr),
            std::fs::read_to_string(format!("{d}/log")).unwrap_or_default()
        );
        p
    }

    fn data(&self) -> String {
        format!("{}/data", self.dir.path().display())
    }

    /// `pg_ctl` as the postgres user, waiting for each action.
    fn ctl(&self) -> String {
        format!(
            "runuser -u postgres -- {}/pg_ctl -D {} -w -t 60",
            pg_bin().display(),
            self.data()
        )
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PgInstance {
    fn drop(&mut self) {
        // Resume anything a failed test left stopped, then stop the server.
        let pid = format!("$(head -1 {}/postmaster.pid)", self.data());
        let _ = sh(&format!(
            "kill -CONT {pid} $(ps -o pid= --ppid {pid}) 2>/dev/null"
        ));
        let _ = sh(&format!("{} stop -m immediate >/dev/null 2>&1", self.ctl()));
    }
}

/// Runs `harness ARGS` as a child that is killed if it outlives `limit`
/// (the test then fails: the run hung).
fn harness_within(args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness");
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "harness {args:?} hung for {} s:\n{}{}",
                limit.as_secs(),
                stdout(&o),
                stderr(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every value read (registers, ranges and lists) has a writer in the
/// history: no transaction was lost.
fn assert_every_read_has_a_writer(h: &History) {
    let mut written: HashSet<(Key, i64)> = HashSet::new();
    for t in &h.txns {
        for o in &t.ops {
            if let Some((k, v)) = o.written() {
                written.insert((k.clone(), v));
            }
        }
    }
    for t in &h.txns {
        for o in &t.ops {
            let read: Vec<(Key, i64)> = match o {
                Op::Read {
                    key,
                    value: Some(v),
                } => vec![(key.clone(), *v)],
                Op::ReadList {
                    key,
                    values: Some(vs),
                } => vs.iter().map(|v| (key.clone(), *v)).collect(),
                Op::RangeRead { rows, .. } => rows.to_vec(),
                _ => vec![],
            };
            for r in read {
                assert!(
                    written.contains(&r),
                    "T{} read {:?}={} but no transaction in the history wrote it",
                    t.id,
                    r.0,
                    r.1
                );
            }
        }
    }
}

/// Every value read has its writer on an earlier line of the file: what
/// makes a history cut anywhere free of reads without a writer.
fn assert_writers_come_first(h: &History) {
    let mut written: HashSet<(Key, i64)> = HashSet::new();
    for t in &h.txns {
        let own: Vec<(Key, i64)> = t
            .ops
            .iter()
            .filter_map(|o| o.written().map(|(k, v)| (k.clone(), v)))
            .collect();
        for o in &t.ops {
            if let Op::Read {
                key,
                value: Some(v),
            } = o
            {
                let r = (key.clone(), *v);
                assert!(
                    written.contains(&r) || own.contains(&r),
                    "T{} (line order) read {key:?}={v} before its writer's line",
                    t.id
                );
            }
        }
        written.extend(own);
    }
}

/// Runs a scenario: the process output, the (complete) history, the run
/// folder, and the temporary folder that holds it.
fn run_scenario(
    scenario: &str,
    limit: Duration,
) -> (std::process::Output, History, PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.join("out");
    let o = harness_within(
        &[
            "run",
            "--scenario",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        limit,
    );
    let run = run_dir(&out);
    let h = history::read_jsonl_file(&run.join("history.jsonl")).expect("the history parses");
    assert!(h.end.is_some(), "the history is complete");
    (o, h, run, tmp)
}

/// `fail` and `info` transactions that overlap `[from, to]` (ns), widened
/// by a second on each side.
fn broken_around(h: &History, from: u64, to: u64) -> (usize, usize) {
    let (lo, hi) = (from.saturating_sub(1_000_000_000), to + 1_000_000_000);
    let near = |t: &&history::Txn| {
        let s = t.start.unwrap_or(0);
        let e = t.end.unwrap_or(s);
        s <= hi && e >= lo
    };
    let fail = h
        .txns
        .iter()
        .filter(near)
        .filter(|t| t.status == Status::Fail)
        .count();
    let info = h
        .txns
        .iter()
        .filter(near)
        .filter(|t| t.status == Status::Info)
        .count();
    (fail, info)
}

fn check_exit(history: &Path, level: &str) -> i32 {
    let o = harness(&[
        "check",
        history.to_str().unwrap(),
        "--level",
        level,
        "--timeout",
        "120s",
    ]);
    o.status.code().unwrap_or(-1)
}

#[test]
fn crash_restarts_leave_a_correct_complete_history() {
    let _serial = serial();
    // Each COMMIT waits 50 ms for company before it flushes (which needs
    // fsync on), so a crash catches some COMMITs in flight: `info`.
    let pg = PgInstance::start(
        "-c fsync=on -c commit_delay=50000 -c commit_siblings=0 -c deadlock_timeout=50ms",
    );
    let scenario = format!(
        r#"
        db = "postgres"
        urls = ["{url}"]
        workload = "mini"
        level = "si"
        isolation = "repeatable-read"
        clients = 16
        duration = "13s"
        keys = 8
        statement_timeout = "2s"
        connect_timeout = "2s"
        check_timeout = "120s"
        nemesis = [{{ fault = "restart", target = "pg", at = ["1500ms", "7s"] }}]
        expect = "ok"
        # Contention and faults abort many transactions by design.
        tested_little = true
        [targets.pg]
        restart = "{ctl} -l {log} restart -m immediate"
        "#,
        url = pg.url(),
        ctl = pg.ctl(),
        log = pg.dir.path().join("log").display(),
    );
    let (o, h, run, _tmp) = run_scenario(&scenario, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("expectation met"), "{}", stdout(&o));
    let restarts: Vec<_> = h.faults.iter().filter(|f| f.kind == "restart").collect();
    assert_eq!(restarts.len(), 2, "{:?}", h.faults);
    let (mut fails, mut infos) = (0, 0);
    for f in &restarts {
        assert!(f.applied, "{f:?}");
        let (fail, info) = broken_around(&h, f.start, f.end.unwrap());
        assert!(
            fail + info > 0,
            "no transaction broke around the restart at {} ns",
            f.start
        );
        fails += fail;
        infos += info;
    }
    assert!(fails > 0, "no fail around the restarts");
    assert!(infos > 0, "no info around the restarts");
    // Clients reconnected: new sessions, and commits after the last restart.
    let last = restarts[1].end.unwrap();
    assert!(workload_txns(&h).any(|t| t.session >= 16));
    assert!(workload_txns(&h).any(|t| t.status == Status::Ok && t.start.unwrap() > last));
    assert_every_read_has_a_writer(&h);
    assert_writers_come_first(&h);
    assert_eq!(check_exit(&run.join("history.jsonl"), "si"), 0);
    let report = read_report(&run);
    assert_eq!(report["faults"].as_array().unwrap().len(), 2);
}

#[test]
fn proxy_resets_and_partitions_leave_a_correct_complete_history() {
    let _serial = serial();
    let url = scratch_db("faults_proxy");
    let scenario = format!(
        r#"
        db = "postgres"
        urls = ["{url}"]
        workload = "mini"
        level = "si"
        clients = 16
        duration = "8s"
        keys = 8
        statement_timeout = "1s"
        connect_timeout = "1s"
        check_timeout = "120s"
        nemesis = [
          "proxy-reset:every=1500ms",
          "proxy-partition:at=2s/5500ms,for=1200ms",
          "proxy-latency:at=4s,for=1s,delay=5ms,jitter=5ms",
          "proxy-refuse:at=7s,for=500ms",
        ]
        expect = "ok"
        # Contention and faults abort many transactions by design.
        tested_little = true
        "#
    );
    let (o, h, run, _tmp) = run_scenario(&scenario, Duration::from_secs(120));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let kinds: Vec<&str> = h.faults.iter().map(|f| f.kind.as_str()).collect();
    for k in [
        "proxy-reset",
        "proxy-partition",
        "proxy-latency",
        "proxy-refuse",
    ] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    assert!(h.faults.iter().all(|f| f.applied));
    for f in h.faults.iter().filter(|f| f.kind == "proxy-partition") {
        let (fail, info) = broken_around(&h, f.start, f.end.unwrap());
        assert!(fail + info > 0, "nothing broke during the partition {f:?}");
        // A black-hole lasts as long as asked.
        assert!(f.end.unwrap() - f.start >= 1_100_000_000, "{f:?}");
    }
    // Resets fail transactions; one that lands during a COMMIT makes an
    // `info` one, which a loaded machine can miss in a short run.
    let (_, fail, info) = h.status_counts();
    assert!(fail > 0, "fail {fail}, info {info}");
    assert_every_read_has_a_writer(&h);
    assert_writers_come_first(&h);
    assert_eq!(check_exit(&run.join("history.jsonl"), "si"), 0);
    let report = read_report(&run);
    assert!(
        report["run"]["url"]
            .as_str()
            .unwrap()
            .contains("through the proxy"),
        "{report}"
    );
}

/// Every fault of the built-in proxy, short: the run's tables are created
/// and dropped on the database itself, not through the proxy (which is
/// gone by the drop), so no run leaves a table behind, on PostgreSQL and
/// on MariaDB.
#[test]
fn proxy_faults_leave_no_tables_behind() {
    let _serial = serial();
    let faults = [
        "proxy-latency:at=500ms,for=1s,delay=1ms",
        "proxy-reset:at=500ms/1200ms",
        "proxy-partition:at=500ms,for=1s",
        "proxy-refuse:at=500ms,for=1s",
    ];
    for (db, url) in [
        ("postgres", scratch_db("faults_tables")),
        ("mysql", mysql_scratch_db("faults_tables")),
    ] {
        for fault in faults {
            let before = db_tables(db, &url, "isoharness_");
            let out = tempfile::tempdir().unwrap();
            let o = harness_within(
                &[
                    "run",
                    "--db",
                    db,
                    "--url",
                    &url,
                    "--workload",
                    "mini",
                    "--duration",
                    "2s",
                    "--clients",
                    "4",
                    "--statement-timeout",
                    "1s",
                    "--connect-timeout",
                    "1s",
                    "--nemesis",
                    fault,
                    "--out",
                    out.path().to_str().unwrap(),
                ],
                Duration::from_secs(120),
            );
            let h = complete_history(&o, out.path());
            assert!(
                h.faults.iter().any(|f| f.applied),
                "{db} {fault}: {:?}",
                h.faults
            );
            let after = db_tables(db, &url, "isoharness_");
            eprintln!("{db} {fault}: tables before {before:?}, after {after:?}");
            assert_eq!(after, before, "{db} {fault}: {}{}", stdout(&o), stderr(&o));
            assert!(before.is_empty(), "{db} {fault}: {before:?}");
            assert!(!stdout(&o).contains("tables kept"), "{}", stdout(&o));
            let report = read_report(&run_dir(out.path()));
            assert!(report["run"].get("tables_kept").is_none(), "{report}");
        }
    }
}

#[test]
fn paused_backends_do_not_hang_the_run() {
    let _serial = serial();
    let pg = PgInstance::start(FAST);
    let children = format!(
        "$(ps -o pid= --ppid $(head -1 {}/postmaster.pid))",
        pg.data()
    );
    let scenario = format!(
        r#"
        db = "postgres"
        urls = ["{url}"]
        workload = "mini"
        level = "si"
        clients = 8
        duration = "7s"
        keys = 8
        statement_timeout = "1s"
        connect_timeout = "1s"
        check_timeout = "120s"
        nemesis = ["pause:at=1500ms/4500ms,for=1500ms"]
        [targets.backends]
        pause = "kill -STOP {children}"
        resume = "kill -CONT {children}"
        "#,
        url = pg.url(),
    );
    let (o, h, run, _tmp) = run_scenario(&scenario, Duration::from_secs(90));
    let code = o.status.code();
    assert!(
        matches!(code, Some(0) | Some(3)),
        "{code:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    let pauses: Vec<_> = h.faults.iter().filter(|f| f.kind == "pause").collect();
    assert_eq!(pauses.len(), 2, "{:?}", h.faults);
    for f in &pauses {
        assert!(f.applied, "{f:?}");
        assert_eq!(f.target.as_deref(), Some("backends"));
        assert!(f.end.unwrap() - f.start >= 1_400_000_000, "{f:?}");
        let (fail, info) = broken_around(&h, f.start, f.end.unwrap());
        assert!(fail + info > 0, "nothing timed out during the pause {f:?}");
    }
    assert!(workload_txns(&h).filter(|t| t.status == Status::Ok).count() > 10);
    assert_every_read_has_a_writer(&h);
    assert_ne!(check_exit(&run.join("history.jsonl"), "si"), 1);
    let log = std::fs::read_to_string(run.join("nemesis.log")).unwrap();
    assert!(
        log.contains("pause backends:") && log.contains("resume backends:"),
        "{log}"
    );
}

#[test]
fn a_failing_fault_command_is_recorded_and_the_run_goes_on() {
    let _serial = serial();
    let scenario = r#"
        db = "sqlite"
        workload = "mini"
        level = "ser"
        clients = 2
        duration = "1500ms"
        nemesis = ["restart:at=200ms/600ms"]
        [targets.nope]
        restart = "echo no such node >&2; exit 4"
    "#;
    let (o, h, run, _tmp) = run_scenario(scenario, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(h.faults.len(), 2);
    for f in &h.faults {
        assert!(!f.applied);
        assert_eq!(f.detail.as_deref(), Some("exit 4: no such node"));
    }
    assert!(
        stdout(&o).contains("warning: nemesis: restart nope failed 2 times"),
        "{}",
        stdout(&o)
    );
    let report = read_report(&run);
    assert_eq!(
        report["run"]["nemesis"][0],
        "restart:at=200ms/600ms,target=nope"
    );
}

#[test]
fn bad_nemesis_specs_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for (spec, want) in [
        ("proxy-reset:every=1s", "need a database reached over TCP"),
        ("proxy-wobble:every=1s", "unknown fault"),
        ("pause:every=1s", "scenario file"),
    ] {
        let o = harness(&[
            "run",
            "--db",
            "sqlite",
            "--txns",
            "10",
            "--nemesis",
            spec,
            "--out",
            out,
        ]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{spec}: {}", stderr(&o));
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no run folder left"
    );
}

/// SIGKILL in the middle of a run: the history so far parses, lacks its
/// end line, and checks without a false anomaly.
#[test]
fn a_killed_harness_leaves_a_checkable_history() {
    let _serial = serial();
    let url = scratch_db("faults_sigkill");
    for (round, after_lines) in [(0, 300usize), (1, 900)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().to_str().unwrap();
        let mut child = run_command(
            "postgres",
            &url,
            "mini",
            &[
                "--level",
                "si",
                "--keys",
                "4",
                "--clients",
                "12",
                "--duration",
                "60s",
                "--seed",
                &round.to_string(),
                "--out",
                out,
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let t0 = Instant::now();
        let history = loop {
            let found = std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("history.jsonl"))
                .find(|p| p.exists());
            if let Some(p) = found {
                let lines = std::fs::read_to_string(&p)
                    .unwrap_or_default()
                    .lines()
                    .count();
                if lines >= after_lines {
                    break p;
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the run wrote too little"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let h = history::read_jsonl_file(&history).expect("the cut history parses");
        assert!(h.end.is_none(), "killed runs have no end line");
        assert!(h.txns.len() >= after_lines - 1);
        assert_every_read_has_a_writer(&h);
        assert_writers_come_first(&h);
        let o = harness(&[
            "check",
            history.to_str().unwrap(),
            "--level",
            "si",
            "--timeout",
            "120s",
        ]);
        let code = o.status.code();
        assert!(
            matches!(code, Some(0) | Some(3)),
            "round {round}: {code:?}\n{}",
            stdout(&o)
        );
        assert!(stdout(&o).contains("no end line"), "{}", stdout(&o));
    }
}

/// A database that vanishes mid-run (here: the proxy cuts it off at 1 s
/// for longer than the run) is named as an outage on the terminal and in
/// report.json, and the run is flagged as having tested little; a run
/// without faults shows no outage.
#[test]
fn a_database_that_vanishes_is_reported_as_an_outage() {
    let _serial = serial();
    let url = scratch_db("faults_outage");
    let run = |extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec![
            "run",
            "--db",
            "postgres",
            "--url",
            &url,
            "--workload",
            "mini",
            "--clients",
            "4",
            "--statement-timeout",
            "1s",
            "--connect-timeout",
            "1s",
            "--out",
            out.path().to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = harness_within(&args, Duration::from_secs(120));
        let report = read_report(&run_dir(out.path()));
        (o, report)
    };
    let (o, report) = run(&[
        "--duration",
        "8s",
        "--nemesis",
        "proxy-partition:at=1s,for=100s",
    ]);
    let text = stdout(&o);
    let outage = &report["run"]["outage"];
    let from = outage["from_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!((0.5..3.0).contains(&from), "{outage}\n{text}");
    assert!(outage.get("to_s").is_none(), "to the end: {outage}");
    assert!(outage["seconds"].as_f64().unwrap() > 5.0, "{outage}");
    let line = text
        .lines()
        .find(|l| l.starts_with("outage: no committed transaction from t="))
        .unwrap_or_else(|| panic!("no outage line:\n{text}{}", stderr(&o)));
    assert!(line.contains("s to the end ("), "{line}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("throughput: ") && l.contains("s before the outage: ")),
        "{text}"
    );
    let warning = text
        .lines()
        .find(|l| l.starts_with("WARNING: this run tested little"))
        .unwrap_or_else(|| panic!("not flagged:\n{text}"));
    assert!(warning.contains(line), "{warning}");
    let little = report["run"]["tested_little"].as_array().unwrap();
    assert!(
        little.iter().any(|w| w.as_str() == Some(line)),
        "{little:?}"
    );
    assert!(report["throughput"]["outside_outage_s"].as_f64().unwrap() < 3.0);

    let (o, report) = run(&["--duration", "2s"]);
    assert!(!stdout(&o).contains("outage"), "{}", stdout(&o));
    assert!(report["run"].get("outage").is_none(), "{report:#}");
}

/// Sends SIGINT to `child` once its run folder holds a history with at
/// least one transaction; the time it was sent.
fn interrupt_once_running(child: &std::process::Child, out: &Path) -> Instant {
    let began = Instant::now();
    loop {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the run never got going"
        );
        let lines = std::fs::read_dir(out)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path().join("history.jsonl")).ok())
            .map_or(0, |t| t.lines().count());
        if lines > 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let sent = Instant::now();
    assert!(sh(&format!("kill -INT {}", child.id())).status.success());
    sent
}

/// A PostgreSQL mini run at `url` that would go on for minutes (its
/// statements may wait 200 s), with `extra` flags, started.
fn long_run(url: &str, extra: &[&str]) -> (std::process::Child, tempfile::TempDir) {
    let mut args = vec![
        "--clients",
        "4",
        "--duration",
        "300s",
        "--statement-timeout",
        "200s",
    ];
    args.extend_from_slice(extra);
    spawn_run("postgres", url, "mini", &args)
}

/// Ctrl-C during a fault: the first signal heals it at once (the proxy's
/// partition, scheduled for 100 s, ends when the signal comes), and the run
/// finishes with its history, verdict and report.
#[test]
fn an_interrupt_heals_the_faults_at_once() {
    let _serial = serial();
    let url = scratch_db("interrupt_heals");
    let (child, out) = long_run(&url, &["--nemesis", "proxy-partition:at=1s,for=100s"]);
    std::thread::sleep(Duration::from_secs(3));
    interrupt_once_running(&child, out.path());
    let o = child.wait_with_output().unwrap();
    assert!(
        stderr(&o).contains("interrupted by SIGINT: healing the faults"),
        "{}",
        stderr(&o)
    );
    let h = complete_history(&o, out.path());
    let f = &h.faults[0];
    let lasted = f.end.expect("healed") - f.start;
    assert!(
        lasted < 30_000_000_000,
        "the partition lasted {} s after the interrupt",
        lasted / 1_000_000_000
    );
    assert!(
        stdout(&o).contains("interrupted by SIGINT"),
        "{}",
        stdout(&o)
    );
    assert_eq!(pg_tables(&url, "isoharness_"), Vec::<String>::new());
}

/// Ctrl-C while every client waits on a lock that healing cannot free (a
/// table another session holds): after the grace period the statements in
/// flight are abandoned, each becomes `fail` (or `info` when it was
/// committing) with the error `interrupted`, long before their 200 s
/// statement timeout, and the run ends with a verdict and its tables
/// dropped.
#[test]
fn an_interrupt_abandons_what_is_still_stuck_after_the_grace() {
    let _serial = serial();
    let url = scratch_db("interrupt_abandons");
    let (child, out) = long_run(&url, &["--isolation", "read-committed", "--level", "rc"]);
    // Once the run's table exists, another session locks it for good.
    let began = Instant::now();
    let table = loop {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no table appeared"
        );
        if let Some(t) = pg_tables(&url, "isoharness_").pop() {
            break t;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (rt, c) = pg(&url);
    rt.block_on(async {
        c.batch_execute(&format!(
            "BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
    });
    std::thread::sleep(Duration::from_secs(1));
    interrupt_once_running(&child, out.path());
    // The lock holder lets go well after the grace period (5 s), so that
    // the run can drop its table: a statement that ends with `interrupted`
    // was abandoned by the run, not freed by the lock's end.
    std::thread::sleep(Duration::from_secs(15));
    rt.block_on(async { c.batch_execute("ROLLBACK").await.unwrap() });
    let o = child.wait_with_output().unwrap();
    let h = complete_history(&o, out.path());
    let abandoned: Vec<&history::Txn> = h
        .txns
        .iter()
        .filter(|t| {
            t.error
                .as_deref()
                .is_some_and(|e| e.starts_with("interrupted"))
        })
        .collect();
    assert!(!abandoned.is_empty(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        abandoned.iter().all(|t| t.status != Status::Ok),
        "{abandoned:?}"
    );
    assert!(stdout(&o).contains("verdict: ok"), "{}", stdout(&o));
    assert_eq!(pg_tables(&url, "isoharness_"), Vec::<String>::new());
}
