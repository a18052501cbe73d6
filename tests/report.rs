//! `report.html`: written by `harness run`, rebuilt by `harness report`,
//! with every text from the history or the report escaped.

mod common;

use std::path::Path;

use common::*;

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs the lost-update memdb job in a fresh folder under `out`; returns
/// its exit code and run folder.
fn lost_update_run(out: &Path, txns: u64) -> (Option<i32>, std::path::PathBuf) {
    let out = out.join(format!("txns-{txns}"));
    let o = harness(&[
        "run",
        "--db",
        "memdb",
        "--bug",
        "lost-update",
        "--workload",
        "mini",
        "--keys",
        "3",
        "--txns",
        &txns.to_string(),
        "--clients",
        "8",
        "--level",
        "si",
        "--out",
        &path(&out),
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    (o.status.code(), run_dir(&out))
}

#[test]
fn a_run_writes_the_html_report_and_dot_files_and_report_rebuilds_them() {
    let out = tempfile::tempdir().unwrap();
    // Too short a run to race: no anomaly, and the page says so.
    let (code, dir) = lost_update_run(out.path(), 1);
    assert_eq!(code, Some(0));
    assert!(read(&dir.join("report.html")).contains("verdict: <b>ok</b>"));
    assert!(!dir.join("anomaly-1.dot").exists());
    // With 8 clients on 3 keys, 2,000 transactions always lose updates.
    let (code, dir) = lost_update_run(out.path(), 2000);
    assert_eq!(code, Some(1));
    let html_path = dir.join("report.html");
    let html = read(&html_path);
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(
        html.contains("verdict: <b>anomalous</b> at level <b>si</b>"),
        "{html}"
    );
    assert_eq!(
        html.matches("<svg class=\"plot\"").count(),
        3,
        "three plots"
    );
    assert!(!html.contains("<script"), "no JavaScript");
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "no external asset"
    );

    let report = read_report(&dir);
    let check: checkers::Report =
        serde_json::from_value(report["check"].clone()).expect("the check part deserializes");
    assert!(!check.anomalies.is_empty());
    for (i, a) in check.anomalies.iter().enumerate() {
        assert!(html.contains(&a.title()), "{} is shown", a.title());
        let dot = read(&dir.join(format!("anomaly-{}.dot", i + 1)));
        assert_eq!(dot, checkers::to_dot(a));
        let svg = read(&dir.join(format!("anomaly-{}.svg", i + 1)));
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        assert!(
            svg.contains("<style>"),
            "a standalone drawing carries its style"
        );
        for t in &a.txns {
            assert!(svg.contains(&format!(">T{}<", t.id)), "T{} is drawn", t.id);
        }
    }
    assert!(!dir
        .join(format!("anomaly-{}.dot", check.anomalies.len() + 1))
        .exists());
    assert_eq!(
        html.matches("<svg class=\"cycle\"").count(),
        check.anomalies.len(),
        "each counterexample is drawn"
    );

    // `harness report` rebuilds the same files from the folder.
    std::fs::remove_file(&html_path).unwrap();
    std::fs::remove_file(dir.join("anomaly-1.dot")).unwrap();
    let o = harness(&["report", &path(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), format!("report: {}", path(&html_path)));
    assert_eq!(read(&html_path), html, "the rebuilt report is the same");
    assert_eq!(
        read(&dir.join("anomaly-1.dot")),
        checkers::to_dot(&check.anomalies[0])
    );
}

const EVIL: &str = "<script>alert(1)</script>";

/// A lost update on a string key made of markup, a failed transaction whose
/// error and kind are markup, and a fault named with markup.
fn evil_history() -> String {
    format!(
        r#"{{"type":"header","version":1}}
{{"id":0,"session":0,"status":"ok","start":1000,"end":4000,"kind":"<b>upd</b>","ops":[["r","{EVIL}",null],["w","{EVIL}",10]]}}
{{"id":1,"session":1,"status":"ok","start":2000,"end":5000,"kind":"<b>upd</b>","ops":[["r","{EVIL}",null],["w","{EVIL}",11]]}}
{{"id":2,"session":2,"status":"fail","start":2500,"end":6000,"kind":"<b>upd</b>","error":"<img src=x onerror=alert(2)>: boom","ops":[]}}
{{"type":"fault","kind":"<i>partition</i>","target":"'n1\"","start":1500,"end":3000}}
{{"type":"end","txns":3}}
"#
    )
}

#[test]
fn everything_from_the_history_and_report_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let hist = run.join("history.jsonl");
    std::fs::write(&hist, evil_history()).unwrap();
    let o = harness(&["check", &path(&hist), "--level", "ser", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let mut check: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // As an older harness wrote it, without the newer measurements.
    check.as_object_mut().unwrap().remove("decided_ms");
    assert!(
        check.to_string().contains(EVIL),
        "the key is in the check: {check}"
    );
    let by_kind = serde_json::json!({
        "total": 3, "committed": 2, "failed": 1, "info": 0,
        "abort_rate": 0.333, "info_rate": 0.0,
        "top_errors": [{"code": "<img src=x onerror=alert(3)>", "count": 1}],
    });
    let report = serde_json::json!({
        "run": {
            "id": "<script>alert(4)</script>",
            "db": "postgres",
            "url": "postgres://bob:hunter2@127.0.0.1:5432/db?password=hunter2",
            "workload": "mini",
            "level": "ser",
            "warnings": ["<u>careful</u>"],
        },
        "verdict": "anomalous",
        "counts": {"total": 3, "committed": 2, "failed": 1, "info": 0},
        "abort_rate": {
            "overall": 0.333,
            "info": 0.0,
            "top_errors": [{"code": "<img src=x onerror=alert(5)>", "count": 1}],
            "by_kind": {"<b>upd</b>": by_kind},
        },
        "end_check": {
            "check": "<em>tpcc</em>",
            "ok": false,
            "conditions": [{"id": 1, "name": "W_YTD <> sum", "ok": false, "checked": 1,
                            "violation_count": 1, "violations": ["<s>w1</s>"]}],
        },
        "check": check,
    });
    std::fs::write(run.join("report.json"), report.to_string()).unwrap();
    let o = harness(&["report", &path(&run)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = read(&run.join("report.html"));
    for raw in [
        "<script", "<img", "<b>upd", "<i>", "<u>", "<em>", "<s>", "'n1\"", "W_YTD <>",
    ] {
        assert!(!html.contains(raw), "{raw} appears unescaped");
    }
    for escaped in [
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "&lt;script&gt;alert(4)&lt;/script&gt;",
        "&lt;img src=x onerror=alert(5)&gt;",
        "&lt;b&gt;upd&lt;/b&gt;",
        "&lt;i&gt;partition&lt;/i&gt;",
        "&#39;n1&quot;",
        "&lt;em&gt;tpcc&lt;/em&gt;",
    ] {
        assert!(html.contains(escaped), "{escaped} is missing");
    }
    assert!(!html.contains("hunter2"), "the password is not shown");
    assert!(html.contains("G-single (lost update)"));
    assert!(read(&run.join("anomaly-1.dot")).starts_with("digraph anomaly"));
}

#[test]
fn bad_run_folders_are_one_error_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = |o: &std::process::Output, want: &str| {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
        let err = stderr(o);
        assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("panicked"), "{err}");
    };

    let missing = dir.path().join("nope");
    let o = harness(&["report", &path(&missing)]);
    one_line(&o, &format!("error: {}: no such folder", path(&missing)));

    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let report = run.join("report.json");
    let o = harness(&["report", &path(&run)]);
    one_line(&o, &format!("error: {}: no such file", path(&report)));

    std::fs::write(&report, "{\"run\": {\"id\": \"x\"},\n  \"check\": [1, 2,\n").unwrap();
    let o = harness(&["report", &path(&run)]);
    one_line(&o, &format!("error: {}: ", path(&report)));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));

    std::fs::write(&report, "{\"run\": {}, \"check\": {\"level\": \"ser\"}}\n").unwrap();
    let o = harness(&["report", &path(&run)]);
    one_line(&o, &format!("error: {}: in \"check\": ", path(&report)));

    // A good report.json, then a missing and a garbled history.
    let hist = run.join("history.jsonl");
    std::fs::write(&hist, evil_history()).unwrap();
    let o = harness(&["check", &path(&hist), "--level", "ser", "--json"]);
    let check: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    std::fs::write(&report, serde_json::json!({ "check": check }).to_string()).unwrap();
    std::fs::remove_file(&hist).unwrap();
    let o = harness(&["report", &path(&run)]);
    one_line(&o, &format!("error: {}: no such file", path(&hist)));

    std::fs::write(
        &hist,
        "{\"type\":\"header\",\"version\":1}\n{\"id\":0,\"session\":0,\"status\":\"maybe\",\"ops\":[]}\n",
    )
    .unwrap();
    let o = harness(&["report", &path(&run)]);
    one_line(&o, &format!("error: {}:2: ", path(&hist)));
    assert!(
        !run.join("report.html").exists(),
        "nothing written on error"
    );
}

#[test]
fn counterexamples_explain_themselves() {
    let out = tempfile::tempdir().unwrap();
    let o = harness(&[
        "run",
        "--db",
        "memdb",
        "--bug",
        "aborted-read",
        "--workload",
        "mini",
        "--keys",
        "3",
        "--txns",
        "1000",
        "--clients",
        "4",
        "--level",
        "si",
        "--out",
        &path(out.path()),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let dir = run_dir(out.path());
    let check: checkers::Report =
        serde_json::from_value(read_report(&dir)["check"].clone()).unwrap();
    // The terminal says how many of each kind exist and how many are shown.
    let found: usize = check.anomaly_counts.values().sum();
    if check.anomalies.len() > 3 {
        let want = format!(
            "3 of {} counterexamples shown here; the report has {} of the {found} anomalies found (",
            check.anomalies.len(),
            check.anomalies.len()
        );
        assert!(stdout(&o).contains(&want), "{}", stdout(&o));
    }
    let aborted_reads = || {
        check
            .anomalies
            .iter()
            .enumerate()
            .filter(|(_, a)| a.kind == checkers::AnomalyKind::AbortedRead)
    };
    // The plain shape when there is one: a reader that also read the key
    // before (from a committed writer) brings that writer along too.
    let (i, a) = aborted_reads()
        .find(|(_, a)| a.txns.len() == 2)
        .or_else(|| aborted_reads().next())
        .expect("an aborted read");
    // The aborted writer is drawn beside the reader, with the wr edge.
    assert_eq!(a.txns.len(), a.edges.len() + 1, "{a}");
    let failed: Vec<u64> = a
        .txns
        .iter()
        .filter(|t| t.status == history::Status::Fail)
        .map(|t| t.id)
        .collect();
    assert!(
        a.edges.iter().any(|e| failed.contains(&e.from)),
        "an edge from the aborted writer: {a}"
    );
    assert!(a.write_ids, "a harness history's values are write ids");
    assert!(a.to_string().contains("(s"), "{a}");
    let html = read(&dir.join("report.html"));
    let n = i + 1;
    let section = &html[html.find(&format!("id=\"anomaly-{n}\"")).unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert_eq!(
        section.matches("<ellipse").count(),
        a.txns.len(),
        "{section}"
    );
    assert_eq!(section.matches("<g class=\"edge\">").count(), a.edges.len());
    assert!(
        section.contains("<mark>"),
        "ops on the edge's key are marked"
    );
    assert!(html.contains("<th>found</th><th>shown below</th>"));
    // The standalone drawing is a complete picture.
    let svg = read(&dir.join(format!("anomaly-{n}.svg")));
    assert!(svg.contains(&format!(">{}</text>", a.title())), "{svg}");
    assert!(svg.contains("wr: write-read"), "a legend: {svg}");
    for t in &a.txns {
        assert!(
            svg.contains(&format!(">T{} (session {}", t.id, t.session)),
            "{svg}"
        );
    }
    // `check --dot` writes one valid graph per file.
    let dot = out.path().join("g.dot");
    let hist = dir.join("history.jsonl");
    let o = harness(&["check", &path(&hist), "--level", "si", "--dot", &path(&dot)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!dot.exists());
    for k in 1..=check.anomalies.len() {
        let text = read(&out.path().join(format!("g-{k}.dot")));
        assert_eq!(text.matches("digraph").count(), 1, "{text}");
        assert!(text.trim_end().ends_with('}'));
    }
    assert!(!out
        .path()
        .join(format!("g-{}.dot", check.anomalies.len() + 1))
        .exists());
}
