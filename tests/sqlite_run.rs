//! `harness run` end to end on the embedded SQLite.

mod common;

use common::*;

#[test]
fn a_sqlite_run_records_a_complete_history_and_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = harness(&[
        "run",
        "--workload",
        "mini",
        "--level",
        "ser",
        "--clients",
        "4",
        "--txns",
        "300",
        "--keys",
        "5",
        "--seed",
        "7",
        "--out",
        &out,
    ]);
    let text = stdout(&o);
    let run = run_dir(dir.path());
    let report = read_report(&run);
    let verdict = report["verdict"].as_str().unwrap().to_string();
    // SQLite is serializable: never anomalous; the exit code is the verdict's.
    assert_eq!(verdict, "ok", "{text}{}", stderr(&o));
    assert_eq!(o.status.code(), Some(0));
    assert!(text.starts_with("verdict: ok (ser)"), "{text}");
    assert!(
        text.contains("history: ") && text.contains("report: "),
        "{text}"
    );

    let h = read_history(&run, 300);
    let hd = h.header.as_ref().unwrap();
    assert_eq!(hd.db.as_deref(), Some("sqlite"));
    assert_eq!(hd.isolation.as_deref(), Some("serializable-immediate"));
    assert_eq!(hd.seed, Some(7));
    assert!(
        workload_txns(&h).all(|t| t.session < 4),
        "no reconnects expected"
    );

    // The workload's transactions; the final reads are counted apart.
    let count = |st: history::Status| workload_txns(&h).filter(|t| t.status == st).count();
    let (ok, fail, info) = (
        count(history::Status::Ok),
        count(history::Status::Fail),
        count(history::Status::Info),
    );
    assert_eq!(report["counts"]["total"], 300);
    assert_eq!(report["counts"]["committed"], ok as u64);
    assert_eq!(report["counts"]["failed"], fail as u64);
    assert_eq!(report["counts"]["info"], info as u64);
    assert_eq!(info, 0, "no connection is lost on a local file");
    assert_eq!(report["run"]["db"], "sqlite");
    assert_eq!(report["run"]["seed"], 7);
    assert_eq!(report["run"]["clients"], 4);
    assert_eq!(report["check"]["verdict"], "ok");
    let rate = report["abort_rate"]["overall"].as_f64().unwrap();
    assert!((rate - fail as f64 / 300.0).abs() < 1e-9);
    for (_, k) in report["abort_rate"]["by_kind"].as_object().unwrap() {
        assert!(k["total"].as_u64().unwrap() > 0);
    }
    assert!(report["throughput"]["committed_per_s"].as_f64().unwrap() > 0.0);
    let lat = &report["latency_ms"];
    assert!(lat["p50"].as_f64().unwrap() <= lat["p95"].as_f64().unwrap());
    assert!(lat["p99"].as_f64().unwrap() <= lat["max"].as_f64().unwrap());

    // The recorded history checks the same way through `harness check`.
    let hist = run.join("history.jsonl").display().to_string();
    let c = harness(&["check", &hist, "--level", "ser"]);
    assert_eq!(c.status.code(), Some(0), "{}", stdout(&c));
}

#[test]
fn a_timed_run_with_every_register_workload_completes() {
    for (workload, level) in [("blindw", "si"), ("range", "ser"), ("append", "ser")] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().display().to_string();
        let o = harness(&[
            "run",
            "--workload",
            workload,
            "--level",
            level,
            "--clients",
            "3",
            "--duration",
            "1s",
            "--keys",
            "20",
            "--check-timeout",
            "10s",
            "--out",
            &out,
        ]);
        let code = o.status.code().unwrap();
        assert!(
            code == 0 || code == 3,
            "{workload}: exit {code}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let run = run_dir(dir.path());
        let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
        assert!(h.end.is_some());
        assert!(
            !h.txns.is_empty(),
            "{workload}: a 1 s run commits something"
        );
        let report = read_report(&run);
        assert!(report["run"]["duration_s"].as_f64().unwrap() == 1.0);
        let verdict = report["verdict"].as_str().unwrap();
        assert_eq!(code, if verdict == "ok" { 0 } else { 3 }, "{workload}");
    }
}

/// The quick start's `harness run` (SQLite, mini, ser, no other flag) tests
/// something: thousands of commits, few aborts, no tested-little warning.
#[test]
fn the_default_run_commits_thousands_with_few_aborts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = harness(&["run", "--out", &out]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    let report = read_report(&run_dir(dir.path()));
    let committed = report["counts"]["committed"].as_u64().unwrap();
    let total = report["counts"]["total"].as_u64().unwrap();
    let aborted = total - committed;
    assert!(committed >= 1000, "{committed} committed\n{text}");
    assert!(
        (aborted as f64) < 0.5 * total as f64,
        "{aborted} of {total} aborted\n{text}"
    );
    assert_eq!(report["run"]["isolation"], "serializable-immediate");
    assert!(report["run"].get("tested_little").is_none(), "{report:#}");
    assert!(!text.contains("WARNING"), "{text}");
}

/// A run too short to test anything says so on the terminal, in
/// report.json and in report.html.
#[test]
fn a_run_that_tests_little_warns_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = harness(&["run", "--txns", "20", "--clients", "2", "--out", &out]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    let line = text
        .lines()
        .find(|l| l.starts_with("WARNING: this run tested little"))
        .unwrap_or_else(|| panic!("no warning:\n{text}"));
    assert!(
        line.contains("committed transactions wrote (fewer than 100)"),
        "{line}"
    );
    let run = run_dir(dir.path());
    let report = read_report(&run);
    let why = report["run"]["tested_little"]
        .as_array()
        .expect("tested_little");
    assert!(
        why.iter()
            .any(|w| w.as_str().unwrap().contains("fewer than 100")),
        "{why:?}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("WARNING: this run tested little"),
        "report.html"
    );

    // Many clients at the deferred setting: most transactions fail.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = harness(&[
        "run",
        "--isolation",
        "serializable-deferred",
        "--clients",
        "16",
        "--keys",
        "4",
        "--txns",
        "2000",
        "--out",
        &out,
    ]);
    let text = stdout(&o);
    let report = read_report(&run_dir(dir.path()));
    let rate = report["abort_rate"]["overall"].as_f64().unwrap();
    if rate > 0.5 {
        assert!(text.contains("transactions aborted"), "{text}");
        assert!(report["run"]["tested_little"].is_array(), "{report:#}");
    }
}

/// SIGTERM (what `timeout`, docker and CI send) ends a run like the first
/// Ctrl-C: the transactions in flight finish, the history gets its end
/// line, the run is checked and reported, and the exit code is the
/// verdict's (0 here: SQLite is serializable).
#[cfg(unix)]
#[test]
fn sigterm_finishes_checks_and_reports_the_run() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--duration", "600s", "--clients", "4", "--out", &out])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until clients have recorded transactions (the signal handler is
    // installed before they start).
    let mut tries = 0;
    let run = loop {
        let dirs: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        if let [d] = dirs.as_slice() {
            let lines = std::fs::read_to_string(d.join("history.jsonl"))
                .map(|t| t.lines().count())
                .unwrap_or(0);
            if lines > 50 {
                break d.clone();
            }
        }
        tries += 1;
        assert!(tries < 600, "the run recorded nothing");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
    let end = h.end.as_ref().expect("the history has its end line");
    assert_eq!(end.txns as usize, h.txns.len());
    let report = read_report(&run);
    assert_eq!(report["run"]["interrupted"], true, "{report:#}");
    assert_eq!(report["run"]["interrupted_by"], "SIGTERM");
    assert_eq!(report["run"]["complete"], true);
    assert_eq!(report["verdict"], "ok");
    let n = h.txns.len();
    assert!(
        text.contains(&format!("interrupted by SIGTERM after {n} transactions")),
        "{text}"
    );
    for f in std::fs::read_dir(&run).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.ends_with("-wal") && !name.ends_with("-shm"),
            "{name} left behind"
        );
    }
}

/// What a run stopped by one SIGTERM leaves in `out`: its history has its
/// end line, its report a verdict (ok: SQLite is serializable) and the
/// signal, and the exit code is the verdict's. `what` names the run.
#[cfg(unix)]
fn assert_ended_by_one_sigterm(o: &std::process::Output, out: &std::path::Path, what: &str) {
    let text = stdout(o);
    let why = format!("{what}: {text}{}", stderr(o));
    assert_eq!(o.status.code(), Some(0), "{why}");
    let run = run_dir(out);
    let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
    let end = h
        .end
        .as_ref()
        .unwrap_or_else(|| panic!("no end line: {why}"));
    assert_eq!(end.txns as usize, h.txns.len(), "{why}");
    let report = read_report(&run);
    assert_eq!(report["verdict"], "ok", "{why}");
    assert_eq!(report["run"]["interrupted_by"], "SIGTERM", "{why}");
    assert!(text.starts_with("verdict: ok (ser)"), "{why}");
    assert!(
        !stderr(o).contains("interrupted by SIGTERM\n"),
        "quit at once: {why}"
    );
}

/// One signal is one signal: GNU `timeout` (without `--foreground`) sends
/// its SIGTERM to the harness and then to its whole process group, so the
/// harness gets it twice; that must stop the run gracefully every time,
/// never quit at once (issue 24). `--preserve-status` makes `timeout`
/// exit with the harness's code.
#[cfg(unix)]
#[test]
fn sigterm_through_timeout_counts_once_every_time() {
    for i in 0..50 {
        let dir = tempfile::tempdir().unwrap();
        let o = std::process::Command::new("timeout")
            .args(["--preserve-status", "-s", "TERM", "0.5s"])
            .arg(env!("CARGO_BIN_EXE_harness"))
            .args(["run", "--clients", "1", "--duration", "600s", "--out"])
            .arg(dir.path())
            .output()
            .expect("run timeout (GNU coreutils)");
        assert_ended_by_one_sigterm(&o, dir.path(), &format!("run {i} of 50"));
    }
}

/// The same SIGTERM sent to the harness and to its process group, back to
/// back (what `timeout` does, with the gap that made the second delivery
/// a second signal more often): the run still ends gracefully.
#[cfg(unix)]
#[test]
fn a_process_group_sigterm_counts_once() {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    for i in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_harness"))
            .args(["run", "--clients", "1", "--duration", "600s", "--out"])
            .arg(dir.path())
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the client has recorded transactions.
        let mut tries = 0;
        loop {
            let lines = std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| {
                    std::fs::read_to_string(e.unwrap().path().join("history.jsonl")).ok()
                })
                .map(|t| t.lines().count())
                .sum::<usize>();
            if lines > 20 {
                break;
            }
            tries += 1;
            assert!(tries < 600, "the run recorded nothing");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid = child.id().to_string();
        for target in [pid.clone(), format!("-{pid}")] {
            let ok = Command::new("kill")
                .args(["-TERM", "--", &target])
                .status()
                .unwrap()
                .success();
            assert!(ok, "kill -TERM -- {target}");
        }
        let o = child.wait_with_output().unwrap();
        assert_ended_by_one_sigterm(&o, dir.path(), &format!("run {i} of 5"));
    }
}

/// With stderr not a terminal, the clients phase prints a status line every
/// few seconds (here every 200 ms, through `HARNESS_RUN_STATUS_MS`): the
/// seconds elapsed, committed, failed, info and the rate, so a CI log shows
/// a live run.
#[test]
fn a_run_without_a_terminal_prints_status_lines() {
    let dir = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--clients", "2", "--duration", "2s", "--out"])
        .arg(dir.path())
        .env("HARNESS_RUN_STATUS_MS", "200")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{}{err}", stdout(&o));
    // run: 1 s: 2468 committed, 56 failed, 0 info; 246.8 committed/s
    let lines: Vec<(u64, u64, u64, u64, f64)> = err
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("run: ")?;
            let (secs, rest) = rest.split_once(" s: ")?;
            let (ok, rest) = rest.split_once(" committed, ")?;
            let (fail, rest) = rest.split_once(" failed, ")?;
            let (info, rest) = rest.split_once(" info; ")?;
            let rate = rest.strip_suffix(" committed/s")?;
            Some((
                secs.parse().ok()?,
                ok.parse().ok()?,
                fail.parse().ok()?,
                info.parse().ok()?,
                rate.parse().ok()?,
            ))
        })
        .collect();
    assert!(!lines.is_empty(), "no status line: {err}");
    let &(_, ok, _, info, _) = lines.last().unwrap();
    assert!(ok > 0, "{err}");
    assert_eq!(info, 0, "{err}");
    assert!(lines.iter().all(|l| l.4 >= 0.0), "{err}");
    // Counts only grow.
    assert!(lines.windows(2).all(|w| w[0].1 <= w[1].1), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("run: ")).count(),
        lines.len(),
        "a status line of another shape: {err}"
    );
}
