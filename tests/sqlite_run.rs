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
    assert_eq!(hd.isolation.as_deref(), Some("serializable"));
    assert_eq!(hd.seed, Some(7));
    assert!(
        h.txns.iter().all(|t| t.session < 4),
        "no reconnects expected"
    );

    let (ok, fail, info) = h.status_counts();
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
