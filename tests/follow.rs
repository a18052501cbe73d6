//! Checking a history while it is written: `harness check --follow` on a
//! file another writer is still appending to, and a run that stops at its
//! first anomaly (`--stop-on-anomaly`).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A write id as the harness makes them: the session in the high bits.
fn wid(session: u64, n: u64) -> u64 {
    ((session + 1) << 32) | n
}

/// `n` serializable mini-transactions over 4 sessions and 3 keys: each
/// reads its key's latest version and writes the next.
fn serial_lines(n: u64) -> Vec<String> {
    let mut latest: [Option<u64>; 3] = [None; 3];
    let mut count = [0u64; 4];
    (0..n)
        .map(|i| {
            let (s, k) = (i % 4, (i % 3) as usize);
            count[s as usize] += 1;
            let v = wid(s, count[s as usize]);
            let read = latest[k].map_or("null".to_string(), |x| x.to_string());
            latest[k] = Some(v);
            format!(
                r#"{{"id":{i},"session":{s},"status":"ok","ops":[["r","k{k}",{read}],["w","k{k}",{v}]]}}"#
            )
        })
        .collect()
}

const HEADER: &str = r#"{"type":"header","version":1}"#;

/// Two lines, transactions `id` (session 0) and `id + 1` (session 1): each
/// reads `base` from `key` and overwrites it, a lost update.
fn lost_update(id: u64, key: &str, base: u64) -> String {
    (0..2)
        .map(|s| {
            format!(
                "{{\"id\":{},\"session\":{s},\"status\":\"ok\",\"ops\":[[\"r\",\"{key}\",{base}],[\"w\",\"{key}\",{}]]}}\n",
                id + s,
                wid(s, 1000)
            )
        })
        .collect()
}

/// `harness check PATH --level LEVEL --follow EXTRA...`.
fn follow(path: &std::path::Path, level: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "check",
        path.to_str().unwrap(),
        "--level",
        level,
        "--follow",
    ];
    args.extend_from_slice(extra);
    harness(&args)
}

/// `harness run --db memdb FLAGS` into a fresh folder (kept alive by the
/// returned guard).
fn memdb_run(flags: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = harness(&[&["run", "--db", "memdb", "--out", out], flags].concat());
    (o, dir)
}

#[test]
fn follow_checks_a_file_while_it_is_written_and_answers_at_its_end_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "{HEADER}").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["check", path.to_str().unwrap(), "--level", "si", "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Written in pieces, one of them cut mid-line, while the check runs.
    let lines = serial_lines(3000);
    for chunk in lines.chunks(500) {
        let text = chunk.join("\n") + "\n";
        let (a, b) = text.split_at(text.len() / 2);
        f.write_all(a.as_bytes()).unwrap();
        f.flush().unwrap();
        std::thread::sleep(Duration::from_millis(60));
        f.write_all(b.as_bytes()).unwrap();
        f.flush().unwrap();
    }
    writeln!(f, r#"{{"type":"end","txns":3000}}"#).unwrap();
    f.flush().unwrap();
    let o = child.wait_with_output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("si: ok (3000 txns: 3000 ok"), "{out}");
    assert!(out.contains("method mini-transaction, streamed"), "{out}");
    assert!(err.contains("ms after the last line read"), "{err}");
}

#[test]
fn follow_stops_at_the_first_anomaly_and_shows_its_counterexample() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lost.jsonl");
    let mut text = String::from(HEADER) + "\n";
    for l in serial_lines(200) {
        text += &(l + "\n");
    }
    // Two transactions read k0's latest version and both overwrite it.
    let base = wid(2, 50); // k0 last written by line 198: session 2, its 50th write
    text += &lost_update(200, "k0", base);
    // No end line: the writer is still "running"; the check must not wait
    // for it (nor for --idle) once it has found the anomaly.
    std::fs::write(&path, text).unwrap();
    let t0 = Instant::now();
    let o = follow(&path, "ser", &["--stop-on-anomaly", "--idle", "10min"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "it waited for --idle"
    );
    assert!(out.starts_with("ser: anomalous (202 txns"), "{out}");
    assert!(out.contains("lost update"), "{out}");
    assert!(out.contains("T200") && out.contains("T201"), "{out}");
    assert!(err.contains("stopped at the first anomaly"), "{err}");
}

#[test]
fn follow_takes_a_file_that_stops_growing_as_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.jsonl");
    let text = String::from(HEADER) + "\n" + &serial_lines(50).join("\n") + "\n";
    std::fs::write(&path, text).unwrap();
    let o = follow(&path, "strong-session-ser", &["--idle", "1s"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("streamed"), "{out}");
    assert!(out.contains("no end line"), "{out}");
    assert!(err.contains("did not grow for 1s"), "{err}");
}

#[test]
fn follow_hands_over_what_it_does_not_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    let text = String::from(HEADER)
        + "\n"
        + &serial_lines(40).join("\n")
        + "\n{\"type\":\"end\",\"txns\":40}\n";
    std::fs::write(&path, &text).unwrap();
    // A level the stream does not decide: the whole file is checked.
    let o = follow(&path, "rc", &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("streamed"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("is not checked as it goes"),
        "{}",
        stderr(&o)
    );
    // A global value counter (not per session): handed over, same verdict.
    let global = text.replace(&wid(1, 1).to_string(), "7");
    std::fs::write(&path, global.replace(&wid(0, 1).to_string(), "8")).unwrap();
    let o = follow(&path, "ser", &[]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("the offline check decides"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("method mini-transaction)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn stream_checks_a_finished_file_in_one_pass_with_the_offline_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("done.jsonl");
    // No end line, and no writer: --stream reads to the end and answers at
    // once (a --follow would wait for --idle).
    std::fs::write(
        &path,
        String::from(HEADER) + "\n" + &serial_lines(300).join("\n") + "\n",
    )
    .unwrap();
    let t0 = Instant::now();
    let o = harness(&["check", path.to_str().unwrap(), "--level", "si", "--stream"]);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(50),
        "it waited for --idle"
    );
    assert!(out.starts_with("si: ok (300 txns: 300 ok"), "{out}");
    assert!(out.contains("method mini-transaction, streamed"), "{out}");
    assert!(out.contains("no end line"), "{out}");
    // A lost update at the end: the streamed check finds it, and the
    // offline check of the same file gives the counterexample.
    let mut text = std::fs::read_to_string(&path).unwrap();
    let base = wid(3, 75); // k2 last written by line 299: session 3, its 75th write
    text += &lost_update(300, "k2", base);
    std::fs::write(&path, text).unwrap();
    let streamed = harness(&[
        "check",
        path.to_str().unwrap(),
        "--level",
        "ser",
        "--stream",
    ]);
    let offline = harness(&[
        "check",
        path.to_str().unwrap(),
        "--level",
        "ser",
        "--offline",
    ]);
    assert_eq!(
        streamed.status.code(),
        Some(1),
        "{}{}",
        stdout(&streamed),
        stderr(&streamed)
    );
    assert!(
        stderr(&streamed).contains("the offline check decides (lost update"),
        "{}",
        stderr(&streamed)
    );
    assert_eq!(stdout(&streamed), stdout(&offline));
    assert!(
        stdout(&streamed).contains("T300") && stdout(&streamed).contains("T301"),
        "{}",
        stdout(&streamed)
    );
    // A level the stream does not decide: read whole at once.
    let o = harness(&["check", path.to_str().unwrap(), "--level", "rc", "--stream"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("rc is not checked as it is read"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).starts_with("rc: ok (302 txns"), "{}", stdout(&o));
    // Only JSONL streams; and a certificate needs the whole history.
    let txt = dir.path().join("h.txt");
    std::fs::write(&txt, "w(1,1,1,1)\nr(1,1,2,2)\n").unwrap();
    let o = harness(&["check", txt.to_str().unwrap(), "--level", "ser", "--stream"]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("--stream reads JSONL histories"),
        "{}",
        stderr(&o)
    );
    let cert = dir.path().join("cert.json");
    let ok = dir.path().join("ok.jsonl");
    std::fs::write(
        &ok,
        String::from(HEADER) + "\n" + &serial_lines(30).join("\n") + "\n",
    )
    .unwrap();
    let o = harness(&[
        "check",
        ok.to_str().unwrap(),
        "--level",
        "si",
        "--stream",
        "--certify",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains("streamed"), "{}", stdout(&o));
    assert!(cert.exists());
}

#[test]
fn follow_reports_a_broken_line_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.jsonl");
    std::fs::write(&path, format!("{HEADER}\n{{\"id\":0,\"session\":\n\n")).unwrap();
    let o = follow(&path, "ser", &[]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("broken.jsonl:2:"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_run_stops_at_its_first_anomaly_with_stop_on_anomaly() {
    let (o, dir) = memdb_run(&[
        "--bug",
        "lost-update",
        "--duration",
        "10min",
        "--stop-on-anomaly",
    ]);
    let (text, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{text}{err}");
    assert!(text.starts_with("verdict: anomalous (ser)"), "{text}");
    assert!(text.contains("stopped by --stop-on-anomaly"), "{text}");
    assert!(
        text.contains("streamed check: ser anomalous: lost update"),
        "{text}"
    );
    let report = read_report(&run_dir(dir.path()));
    assert_eq!(
        report["run"]["interrupted_by"], "--stop-on-anomaly",
        "{report}"
    );
    // Ended long before its 10 minutes.
    let secs = report["throughput"]["elapsed_s"].as_f64().unwrap();
    assert!(secs < 300.0, "{report}");

    // A valid run says its streamed verdict in its summary.
    let (o, _dir) = memdb_run(&["--txns", "3000"]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    assert!(text.contains("streamed check: ser ok ("), "{text}");
}

/// The nearest-rank percentile of sorted `xs`, in ms.
fn ms_at(xs: &[u64], p: f64) -> f64 {
    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1] as f64 / 1e6
}

#[test]
fn a_streamed_run_reports_what_its_history_holds_without_reading_it_back() {
    let args = ["--level", "si", "--txns", "6000", "--seed", "9"];
    let (o, dir) = memdb_run(&[&args[..], &["--stream"]].concat());
    let (text, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{text}{err}");
    assert!(text.starts_with("verdict: ok (si)"), "{text}");
    assert!(err.contains("was not read back (--stream)"), "{err}");
    let run = run_dir(dir.path());
    let report = read_report(&run);
    assert_eq!(report["check"]["method"], "mini-transaction, streamed");
    assert!(
        !run.join("certificate.json").exists(),
        "a streamed ok has no certificate"
    );
    // What the recorder counted is what the history on disk holds.
    let h = read_history(&run, 6000);
    let workload: Vec<&history::Txn> = workload_txns(&h).collect();
    let count = |s: history::Status| workload.iter().filter(|t| t.status == s).count() as u64;
    let counts = &report["counts"];
    assert_eq!(counts["total"], 6000);
    assert_eq!(counts["committed"], count(history::Status::Ok));
    assert_eq!(counts["failed"], count(history::Status::Fail));
    assert_eq!(counts["info"], count(history::Status::Info));
    let mut lat: Vec<u64> = workload
        .iter()
        .filter(|t| t.status == history::Status::Ok)
        .map(|t| t.end.unwrap() - t.start.unwrap())
        .collect();
    lat.sort_unstable();
    let l = &report["latency_ms"];
    for (p, field) in [(50.0, "p50"), (95.0, "p95"), (99.0, "p99"), (100.0, "max")] {
        assert_eq!(l[field].as_f64(), Some(ms_at(&lat, p)), "{field}: {l}");
    }
    let finals = h.txns.iter().filter(|t| is_final_read(t)).count();
    assert!(finals > 0);
    assert_eq!(report["final_reads"]["txns"], finals as u64);
    // The charts over time are drawn from the recorder's buckets; the
    // timeline of every transaction is not.
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("committed throughput (txn/s)"), "{html}");
    assert!(html.contains("<polyline"), "{html}");
    assert!(
        html.contains(&format!(
            "Not drawn: the run's {} transactions",
            h.txns.len()
        )),
        "{html}"
    );

    // Without --stream a run this small is read back, checked whole and
    // certified.
    let (o, dir) = memdb_run(&args);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let run = run_dir(dir.path());
    assert_ne!(
        read_report(&run)["check"]["method"],
        "mini-transaction, streamed"
    );
    assert!(run.join("certificate.json").exists());
    assert!(std::fs::read_to_string(run.join("report.html"))
        .unwrap()
        .contains("id=\"latency-raw\""));
}

#[test]
fn a_streamed_run_reads_back_what_the_stream_does_not_decide() {
    // An anomaly: the history is read back for its counterexample.
    let (o, dir) = memdb_run(&["--bug", "lost-update", "--txns", "3000", "--stream"]);
    let (text, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{text}{err}");
    assert!(text.contains("lost update"), "{text}");
    assert!(!err.contains("not read back"), "{err}");
    let run = run_dir(dir.path());
    assert_ne!(
        read_report(&run)["check"]["method"],
        "mini-transaction, streamed"
    );
    // A level the stream does not check: said, then read back.
    let (o, _dir) = memdb_run(&["--level", "rc", "--txns", "500", "--stream"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{}{err}", stdout(&o));
    assert!(
        err.contains("warning: --stream: only mini-transactions"),
        "{err}"
    );
    assert!(err.contains("read back and checked whole"), "{err}");
}

/// On SQLite, some connections get the database's lock far more often
/// than others, so with 8 clients some fall over 1,000 plans behind within
/// seconds and skip ahead: the run says so on stderr and in report.json,
/// with the same figures, since the plans skipped never ran.
#[test]
fn a_streamed_list_append_run_on_sqlite_reports_the_plans_its_clients_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let o = harness(&[
        "run",
        "--out",
        out,
        "--workload",
        "append",
        "--level",
        "ser",
        "--clients",
        "8",
        "--duration",
        "8s",
        "--stream",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{}{err}", stdout(&o));
    let note = err
        .lines()
        .find(|l| l.starts_with("note: a client fell over 1000 plans behind"))
        .unwrap_or_else(|| panic!("no client skipped ahead: {err}"));
    let skipped = &read_report(&run_dir(dir.path()))["run"]["skipped_ahead"];
    let (times, plans) = (skipped["times"].as_u64(), skipped["plans"].as_u64());
    assert!(times.is_some_and(|t| t > 0), "{skipped}");
    assert_eq!(skipped["max_drift"].as_u64(), Some(1000), "{skipped}");
    let want = format!(
        "skipped ahead to it {} time{} ({} plans skipped in all)",
        times.unwrap(),
        if times == Some(1) { "" } else { "s" },
        plans.unwrap()
    );
    assert!(note.contains(&want), "{note} / {skipped}");
}

#[test]
fn a_streamed_list_append_run_reads_each_list_as_it_closes_and_lets_go_of_it() {
    let (o, dir) = memdb_run(&[
        "--workload",
        "append",
        "--level",
        "si",
        "--duration",
        "6s",
        "--stream",
    ]);
    let (text, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{text}{err}");
    assert!(text.starts_with("verdict: ok (si)"), "{text}");
    assert!(err.contains("was not read back (--stream)"), "{err}");
    let run = run_dir(dir.path());
    let report = read_report(&run);
    assert_eq!(report["check"]["method"], "list-append, streamed");
    // The lists were read while the clients ran (closing reads), and the
    // stream let go of their transactions.
    let h = history::read_jsonl_file(&run.join("history.jsonl")).unwrap();
    let last_client = h.txns.iter().rposition(|t| !is_final_read(t)).unwrap();
    let closing = h.txns[..last_client]
        .iter()
        .filter(|t| is_final_read(t))
        .count();
    assert!(
        closing > 10,
        "{closing} final reads before the clients ended"
    );
    let notes = report["check"]["notes"].to_string();
    let retired: u64 = notes
        .split(" retired")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{notes}"));
    assert!(retired > h.txns.len() as u64 / 3, "{notes}");
    // The offline check of the same history agrees.
    let o = harness(&[
        "check",
        run.join("history.jsonl").to_str().unwrap(),
        "--level",
        "si",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    // Write skew in list-append: a cycle found while recording ends the
    // run, which is read back for its counterexample.
    let (o, dir) = memdb_run(&[
        "--workload",
        "append",
        "--bug",
        "write-skew",
        "--duration",
        "10min",
        "--stop-on-anomaly",
        "--stream",
    ]);
    let (text, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{text}{err}");
    assert!(text.starts_with("verdict: anomalous (ser)"), "{text}");
    assert!(
        text.contains("streamed check: ser anomalous: a dependency cycle"),
        "{text}"
    );
    assert!(text.contains("stopped by --stop-on-anomaly"), "{text}");
    assert!(!err.contains("not read back"), "{err}");
    let report = read_report(&run_dir(dir.path()));
    let secs = report["throughput"]["elapsed_s"].as_f64().unwrap();
    assert!(secs < 300.0, "{report}");
}
