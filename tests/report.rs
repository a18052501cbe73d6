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
    assert!(html.contains("<svg class=\"plot timeline\""), "a timeline");
    assert!(
        html.contains("<svg class=\"plot latency-raw\""),
        "a latency plot"
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
    // One counterexample goes to FILE itself, several to FILE-1 … FILE-n
    // (the run is not seeded, so either can happen).
    let n = check.anomalies.len();
    let files: Vec<std::path::PathBuf> = if n == 1 {
        vec![dot.clone()]
    } else {
        assert!(!dot.exists());
        (1..=n)
            .map(|k| out.path().join(format!("g-{k}.dot")))
            .collect()
    };
    for f in &files {
        let text = read(f);
        assert_eq!(text.matches("digraph").count(), 1, "{text}");
        assert!(text.trim_end().ends_with('}'));
    }
    assert!(!out.path().join(format!("g-{}.dot", n + 1)).exists());
}

/// The part of `html` from `from` to the next `to` (both included).
fn between<'a>(html: &'a str, from: &str, to: &str) -> &'a str {
    let start = html.find(from).unwrap_or_else(|| panic!("no {from}"));
    let rest = &html[start..];
    &rest[..rest
        .find(to)
        .unwrap_or_else(|| panic!("no {to} after {from}"))
        + to.len()]
}

/// A history with ok, fail and info transactions (one info without an
/// end), nodes named with markup, a fault, and a lost update.
fn timeline_history() -> String {
    let node = "<script>alert(6)</script>";
    format!(
        r#"{{"type":"header","version":1}}
{{"id":0,"session":0,"status":"ok","start":1000000,"end":4000000,"node":"{node}","ops":[["r","x",null],["w","x",10]]}}
{{"id":1,"session":1,"status":"ok","start":2000000,"end":5000000,"node":"n2","ops":[["r","x",null],["w","x",11]]}}
{{"id":2,"session":2,"status":"fail","start":2500000,"end":6000000,"error":"<script>alert(7)</script>","ops":[]}}
{{"id":3,"session":3,"status":"info","start":3000000,"error":"connection reset","ops":[["w","y",12]]}}
{{"id":4,"session":2,"status":"info","start":6500000,"end":7000000,"error":"timeout at commit","ops":[["w","y",13]]}}
{{"id":5,"session":0,"status":"ok","start":4500000,"end":9000000,"node":"{node}","ops":[["r","y",null]]}}
{{"type":"fault","kind":"pause","target":"n2","start":3500000,"end":5500000}}
{{"type":"end","txns":6}}
"#
    )
}

#[test]
fn the_timeline_and_latency_plot_show_every_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let hist = run.join("history.jsonl");
    std::fs::write(&hist, timeline_history()).unwrap();
    let o = harness(&["check", &path(&hist), "--level", "ser", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let check: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    std::fs::write(
        run.join("report.json"),
        serde_json::json!({ "check": check }).to_string(),
    )
    .unwrap();
    let o = harness(&["report", &path(&run)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = read(&run.join("report.html"));
    assert!(
        !html.contains("<script"),
        "node names and errors are escaped"
    );

    let tl = between(&html, "<svg class=\"plot timeline\"", "</svg>");
    assert!(html.contains("<h2 id=\"timeline\">Timeline</h2>"));
    // One row per session, labelled with the node, escaped.
    assert_eq!(tl.matches("<g class=\"tlrow\"").count(), 4, "{tl}");
    for s in 0..4 {
        assert!(tl.contains(&format!("id=\"tl-s{s}\"")), "{tl}");
    }
    assert!(tl.contains("session 0 on &lt;script&gt;alert(6)&lt;/script&gt;"));
    // A bar per transaction, by outcome; the info without an end is open.
    assert_eq!(tl.matches("<rect class=\"t-ok\"").count(), 3, "{tl}");
    assert_eq!(tl.matches("<rect class=\"t-fail\"").count(), 1, "{tl}");
    assert_eq!(tl.matches("<rect class=\"t-info\"").count(), 1, "{tl}");
    assert_eq!(tl.matches("<rect class=\"t-info open\"").count(), 1, "{tl}");
    // Tooltips: id, outcome, times in ms, the error escaped.
    assert!(
        tl.contains("T2 fail, session 2, 2.500 ms to 6.000 ms (3.500 ms): &lt;script&gt;alert(7)&lt;/script&gt;"),
        "{tl}"
    );
    assert!(tl.contains("T3 info, session 3, from 3.000 ms, no end"));
    assert_eq!(tl.matches("class=\"fault\"").count(), 1, "a fault band");
    assert!(tl.contains("time (ms)"));

    let lat = between(&html, "<svg class=\"plot latency-raw\"", "</svg>");
    assert!(lat.contains("(ms, log scale)"));
    // One dot per transaction with an end; the open info is not drawn.
    assert_eq!(lat.matches("<circle ").count(), 5, "{lat}");
    for c in ["t-ok", "t-fail", "t-info"] {
        assert!(lat.contains(&format!("<circle class=\"{c}\"")), "{c}");
    }
    assert!(
        lat.contains(">1<") && lat.contains(">10<"),
        "decades: {lat}"
    );
    assert_eq!(lat.matches("class=\"fault\"").count(), 1, "a fault band");
    assert!(lat.contains("&lt;script&gt;alert(7)&lt;/script&gt;"));

    // The lost update's transactions: times in ms, linked to the timeline.
    for (id, times) in [(0, "1.000 / 4.000"), (1, "2.000 / 5.000")] {
        let link = format!("href=\"#tl-T{id}\"");
        assert!(html.contains(&link), "{link}");
        assert!(tl.contains(&format!("id=\"tl-T{id}\"")), "T{id} is marked");
        let a = between(&html, &link, "</a>");
        assert!(a.ends_with(&format!(">{times}</a>")), "{a}");
    }
}

#[test]
fn big_histories_give_a_bounded_timeline_linked_to_counterexamples() {
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
        "3000",
        "--clients",
        "4",
        "--level",
        "si",
        "--out",
        &path(out.path()),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let dir = run_dir(out.path());
    let h = history::read_jsonl_file(&dir.join("history.jsonl")).unwrap();
    let html = read(&dir.join("report.html"));
    let tl = between(&html, "<svg class=\"plot timeline\"", "</svg>");
    let sessions: std::collections::BTreeSet<u64> = h.txns.iter().map(|t| t.session).collect();
    assert_eq!(tl.matches("<g class=\"tlrow\"").count(), sessions.len());
    // Aggregated, and the caption says so.
    assert!(
        html.contains("more than 2000: each row is cut into"),
        "{html}"
    );
    assert!(
        tl.matches("<rect class=\"t-").count() < 3000,
        "fewer cells than txns"
    );
    for (status, class) in [
        (history::Status::Ok, "t-ok"),
        (history::Status::Fail, "t-fail"),
        (history::Status::Info, "t-info"),
    ] {
        if h.txns.iter().any(|t| t.status == status) {
            assert!(tl.contains(&format!("<rect class=\"{class}\"")), "{class}");
        }
    }
    let lat = between(&html, "<svg class=\"plot latency-raw\"", "</svg>");
    assert!(lat.contains("log scale"));
    assert!(html.contains("one dot per 8 &times; 8 px cell and outcome, bigger for more"));
    assert!(lat.matches("<circle").count() < 3000);
    assert!(
        html.len() < 600_000,
        "the report stays small: {}",
        html.len()
    );
    // Every counterexample transaction: ms on the charts' axis (the run's
    // clock starts at 0), linked to its marker on the timeline.
    let check: checkers::Report =
        serde_json::from_value(read_report(&dir)["check"].clone()).unwrap();
    assert!(!check.anomalies.is_empty());
    for t in check.anomalies.iter().flat_map(|a| &a.txns) {
        let (Some(start), Some(end)) = (t.start, t.end) else {
            continue;
        };
        assert!(tl.contains(&format!("id=\"tl-T{}\"", t.id)), "T{}", t.id);
        let link = format!("href=\"#tl-T{}\"", t.id);
        let a = between(&html, &link, "</a>");
        let want = format!(">{:.3} / {:.3}</a>", start as f64 / 1e6, end as f64 / 1e6);
        assert!(a.ends_with(&want), "{a} vs {want}");
    }
}

/// A run killed before it wrote its report.json gets one rebuilt from the
/// history alone; a history cut short says so (its torn last line left
/// out); and a history that no longer matches its report.json is refused
/// rather than mixed with it.
#[test]
fn report_rebuilds_from_the_history_alone_and_refuses_a_changed_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = lost_update_run(dir.path(), 300);
    let hist = run.join("history.jsonl");
    let report = run.join("report.json");
    let total = |p: &Path| -> u64 {
        let v: serde_json::Value = serde_json::from_str(&read(p)).unwrap();
        v["counts"]["total"].as_u64().unwrap()
    };
    // Every transaction recorded: the workload's (`counts`) and the final
    // reads after them, counted apart.
    let recorded = |p: &Path| -> u64 {
        let v: serde_json::Value = serde_json::from_str(&read(p)).unwrap();
        total(p) + v["final_reads"]["txns"].as_u64().unwrap_or(0)
    };
    assert_eq!(total(&report), 300);
    let all = recorded(&report);
    // 300 transactions of a lost-update bug on 8 clients: usually some
    // lost updates, not always (the interleaving is not forced).
    let verdict =
        serde_json::from_str::<serde_json::Value>(&read(&report)).unwrap()["verdict"].clone();
    assert!(verdict == "anomalous" || verdict == "ok", "{verdict}");

    // Killed before its report: rebuilt, and the rebuilt one says so.
    std::fs::remove_file(&report).unwrap();
    std::fs::remove_file(run.join("report.html")).unwrap();
    let o = harness(&["report", &path(&run)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("rebuilt from the history alone"),
        "{}",
        stderr(&o)
    );
    let rebuilt: serde_json::Value = serde_json::from_str(&read(&report)).unwrap();
    assert_eq!(rebuilt["counts"]["total"], 300);
    assert_eq!(rebuilt["run"]["level"], "si");
    assert_eq!(rebuilt["run"]["db"], "memdb");
    assert_eq!(rebuilt["verdict"], verdict, "the same verdict rebuilt");
    assert!(rebuilt["run"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("rebuilt"));
    assert!(run.join("report.html").exists());

    // Cut short: the end line gone and the last transaction torn in two.
    let text = read(&hist);
    let lines: Vec<&str> = text.lines().collect();
    let (kept, last) = (&lines[..lines.len() - 2], lines[lines.len() - 2]);
    let torn = format!("{}\n{}", kept.join("\n"), &last[..last.len() / 2]);
    std::fs::write(&hist, torn).unwrap();
    let o = harness(&["report", &path(&run)]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("has no end line: the run was cut short"),
        "{err}"
    );
    assert!(
        err.contains(&format!("describes {all} transactions but"))
            && err.contains(&format!("holds {}", all - 1)),
        "{err}"
    );
    let o = harness(&["check", &path(&hist), "--level", "si"]);
    assert!(stderr(&o).contains("has no end line"), "{}", stderr(&o));

    // Moved away, the old report gives way to one of the history as it is.
    std::fs::rename(&report, run.join("report.old.json")).unwrap();
    let o = harness(&["report", &path(&run)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(recorded(&report), all - 1);
    let warning = serde_json::from_str::<serde_json::Value>(&read(&report)).unwrap()["run"]
        ["warnings"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(warning.contains("cut short"), "{warning}");
}
