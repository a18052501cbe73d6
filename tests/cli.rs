//! The command line: exit codes, error messages, `harness check`.

mod common;

use common::*;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const SERIAL: &str = r#"{"type":"header","version":1}
{"id":0,"session":0,"status":"ok","start":1,"end":2,"ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"ok","start":3,"end":4,"ops":[["r",1,10],["w",1,11]]}
{"type":"end","txns":2}
"#;

#[test]
fn check_gives_the_verdict_as_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(dir.path(), "ok.jsonl", SERIAL);
    let o = harness(&["check", &ok, "--level", "ser"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("ser: ok"), "{}", stdout(&o));

    let bad = write(dir.path(), "lost.jsonl", LOST_UPDATE);
    let o = harness(&["check", &bad, "--level", "si"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("si: anomalous"), "{out}");
    assert!(
        out.contains("T0") && out.contains("T1"),
        "the counterexample is shown: {out}"
    );

    let o = harness(&["check", &bad, "--level", "si", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    assert_eq!(v["verdict"], "anomalous");
    assert_eq!(v["level"], "si");
}

#[test]
fn bad_input_is_one_error_line_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "bad.jsonl",
        "{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[]}\n{\"id\":1,\"session\":1,\"status\":\"maybe\",\"ops\":[]}\n",
    );
    let o = harness(&["check", &p, "--level", "ser"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.starts_with(&format!("error: {p}:2: ")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let missing = dir.path().join("nope.jsonl").display().to_string();
    let o = harness(&["check", &missing, "--level", "ser"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim(), format!("error: {missing}: no such file"));

    // A gzipped history cut short: its file and what is wrong, on one line;
    // and one that cannot be followed as it is written.
    let gz = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/findings/postgres-15-ser-g2-item.history.jsonl.gz");
    let bytes = std::fs::read(&gz).unwrap();
    let cut = dir.path().join("cut.jsonl.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let cut = cut.display().to_string();
    let o = harness(&["check", &cut, "--level", "ser"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.starts_with(&format!("error: {cut}: ")), "{err}");
    assert!(
        err.contains("the gzip stream is damaged or cut short"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let o = harness(&["check", gz.to_str().unwrap(), "--level", "ser", "--stream"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("a gzipped history is read whole"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["check", "x.jsonl"],                     // no --level
        vec!["check", "x.jsonl", "--level", "bogus"], // unknown level
        vec!["check", "x.jsonl", "--level", "ser", "--format", "bogus"],
        vec!["run", "--clients", "0"],
        vec!["run", "--txns", "5", "--duration", "1s"],
        vec!["run", "--db", "oracle"],
        vec!["run", "--session-var", "novalue"],
        vec!["frobnicate"],
    ] {
        let o = harness(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn run_refuses_bad_settings_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--isolation", "read-committed"],
            "sqlite offers only serializable",
        ),
        (
            &["--session-var", "tidb_enable_1pc=OFF"],
            "--session-var applies to mysql and tidb, not sqlite",
        ),
        (
            &["--db", "mysql", "--session-var", "x;DROP TABLE t=1"],
            "a variable name is letters, digits and _",
        ),
        (&["--dist", "zipf:x"], "bad key distribution"),
        (&["--workload", "tpcx"], "unknown workload `tpcx`"),
        (&["--keys", "0"], "--keys must be a positive whole number"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["run", "--out", &out, "--txns", "10"];
        args.extend_from_slice(extra);
        let o = harness(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with("error: ") && err.contains(want),
            "{extra:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // Nothing was left behind by the refused runs.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_unreachable_postgres_fails_fast_without_showing_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let t = std::time::Instant::now();
    let o = harness(&[
        "run",
        "--db",
        "postgres",
        "--url",
        "postgres://bob:hunter2@127.0.0.1:1/db",
        "--out",
        &out,
    ]);
    assert!(t.elapsed().as_secs() < 8, "took {:?}", t.elapsed());
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: cannot connect to postgres at postgres://bob:***@127.0.0.1:1/db"),
        "{err}"
    );
    assert!(err.contains("pg_ctl"), "{err}");
    assert!(!err.contains("hunter2") && !stdout(&o).contains("hunter2"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no empty run folder"
    );
}

/// A write skew over blind writes: only the solver (or pruning) decides it.
const BLIND: &str = r#"{"id":0,"session":0,"status":"ok","start":1,"end":9,"ops":[["w",1,10],["w",2,20]]}
{"id":1,"session":1,"status":"ok","start":2,"end":9,"ops":[["w",1,11],["w",2,21]]}
{"id":2,"session":2,"status":"ok","start":3,"end":9,"ops":[["r",1,11],["r",2,20]]}
"#;

#[test]
fn dot_output_draws_each_counterexample() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "lost.jsonl", LOST_UPDATE);
    let dot = dir.path().join("out.dot");
    let o = harness(&[
        "check",
        &bad,
        "--level",
        "si",
        "--dot",
        &dot.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = std::fs::read_to_string(&dot).unwrap();
    assert!(text.starts_with("digraph anomaly {"), "{text}");
    assert!(
        text.contains("T0 -> T1") || text.contains("T1 -> T0"),
        "{text}"
    );
    assert!(text.contains("lost update"), "{text}");
}

#[test]
fn a_check_out_of_time_is_unknown_not_ok() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "blind.jsonl", BLIND);
    // With the guesses off and no time at all, nothing can be decided.
    let o = harness(&[
        "check",
        &p,
        "--level",
        "ser",
        "--no-witness",
        "--timeout",
        "1ns",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("ser: unknown"), "{}", stdout(&o));
    // With time, the same history is refuted.
    let o = harness(&["check", &p, "--level", "ser", "--no-witness"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

#[test]
fn convert_round_trips_through_text_and_edn() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "lost.jsonl", LOST_UPDATE);
    for (to, name) in [("text", "h.txt"), ("elle-edn", "h.edn")] {
        let out = dir.path().join(name).display().to_string();
        let o = harness(&["convert", &src, &out, "--to", to]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let o = harness(&["check", &out, "--level", "si"]);
        assert_eq!(o.status.code(), Some(1), "{to}: {}", stdout(&o));
        assert!(stdout(&o).contains("lost update"), "{to}: {}", stdout(&o));
    }
    let o = harness(&["convert", &src, "/nonexistent/dir/x.txt", "--to", "text"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
}

/// Runs `harness ARGS`, asserts exit code 2 and one error line, and
/// returns that line.
fn usage_error(args: &[&str]) -> String {
    let o = harness(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}{err}", stdout(&o));
    assert!(
        stdout(&o).is_empty(),
        "{args:?}: no verdict: {}",
        stdout(&o)
    );
    err.trim_end().to_string()
}

const FORMATS: [&str; 10] = [
    "auto",
    "jsonl",
    "elle-edn",
    "elle-json",
    "text",
    "awdit",
    "dbcop",
    "cobra",
    "timekiller",
    "viper",
];

#[test]
fn an_empty_or_blank_history_is_an_error_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("empty.txt", ""), ("blank.txt", " \n\t\n  \n")] {
        let p = write(dir.path(), name, text);
        for format in FORMATS {
            let err = usage_error(&["check", &p, "--level", "ser", "--format", format]);
            assert_eq!(
                err,
                format!("error: {p}: the file is empty: it holds no transactions"),
                "--format {format}"
            );
        }
    }
}

#[test]
fn an_empty_list_is_an_error_for_elle_json_and_timekiller() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "empty.json", "[]\n");
    for format in ["elle-json", "timekiller"] {
        let err = usage_error(&["check", &p, "--level", "ser", "--format", format]);
        assert_eq!(
            err,
            format!("error: {p}: the {format} history holds no transactions")
        );
    }
}

#[test]
fn cobra_and_viper_folders_of_empty_logs_are_errors() {
    for (format, log) in [("cobra", "T0.log"), ("viper", "J0.log")] {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), log, "");
        let d = dir.path().display().to_string();
        for f in ["auto", format] {
            let err = usage_error(&["check", &d, "--level", "ser", "--format", f]);
            assert_eq!(
                err,
                format!("error: {d}: the {format} logs in this directory hold no transactions"),
                "--format {f}"
            );
        }
    }
}

#[test]
fn a_jsonl_history_must_hold_what_its_end_line_says() {
    let dir = tempfile::tempdir().unwrap();
    let none = write(
        dir.path(),
        "none.jsonl",
        "{\"type\":\"header\",\"version\":1}\n{\"type\":\"end\",\"txns\":111510}\n",
    );
    let err = usage_error(&["check", &none, "--level", "ser"]);
    assert_eq!(
        err,
        format!(
            "error: {none}:2: the end line says the history has 111510 transactions, but 0 \
             precede it (a truncated or edited file?)"
        )
    );
    // A file cut short: one transaction of the two the end line counts.
    let cut: String = SERIAL
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let cut = write(dir.path(), "cut.jsonl", &cut);
    let err = usage_error(&["check", &cut, "--level", "ser", "--format", "jsonl"]);
    assert!(
        err.starts_with(&format!(
            "error: {cut}:3: the end line says the history has 2 transactions, but 1 precede"
        )),
        "{err}"
    );
    // Header and `"txns":0`: consistent, but nothing to check.
    let zero = write(
        dir.path(),
        "zero.jsonl",
        "{\"type\":\"header\",\"version\":1}\n{\"type\":\"end\",\"txns\":0}\n",
    );
    let err = usage_error(&["check", &zero, "--level", "ser", "--allow-empty"]);
    assert_eq!(
        err,
        format!("error: {zero}: the jsonl history holds no transactions")
    );
}

#[test]
fn a_run_of_no_transactions_or_no_time_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let err = usage_error(&["run", "--db", "memdb", "--txns", "0", "--out", &out]);
    assert!(
        err.starts_with("error: invalid value '0' for '--txns <TXNS>'"),
        "{err}"
    );
    for d in ["0s", "0ms"] {
        let err = usage_error(&["run", "--db", "memdb", "--duration", d, "--out", &out]);
        assert!(
            err.starts_with(&format!(
                "error: invalid value '{d}' for '--duration <DURATION>'"
            )) && err.contains("must be more than zero"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no run folder"
    );
}

/// Two transactions, neither committed.
const NONE_COMMITTED: &str = r#"{"id":0,"session":0,"status":"fail","start":1,"end":2,"error":"40001: x","ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"fail","start":3,"end":4,"error":"40001: x","ops":[["r",1,null],["w",1,11]]}
"#;

#[test]
fn a_history_with_nothing_committed_needs_allow_empty() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "none.jsonl", NONE_COMMITTED);
    let err = usage_error(&["check", &p, "--level", "ser"]);
    assert_eq!(
        err,
        format!(
            "error: {p}: nothing to check: none of its 2 transactions committed (2 failed, \
             0 info); pass --allow-empty to check it anyway"
        )
    );
    let o = harness(&["check", &p, "--level", "ser", "--allow-empty"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).starts_with("ser: ok"), "{}", stdout(&o));
}

/// A TiDB history recorded in pessimistic mode or at read committed has
/// no timestamps, because its reads did not happen at start_ts: the
/// refusal says so.
#[test]
fn use_dbts_on_a_pessimistic_tidb_history_says_why_there_are_none() {
    let dir = tempfile::tempdir().unwrap();
    for iso in ["pessimistic", "read-committed"] {
        let header = format!(
            "{{\"type\":\"header\",\"version\":1,\"db\":\"tidb\",\"isolation\":\"{iso}\"}}"
        );
        let text = SERIAL.replacen(r#"{"type":"header","version":1}"#, &header, 1);
        let p = write(dir.path(), &format!("{iso}.jsonl"), &text);
        let err = usage_error(&["check", &p, "--level", "si", "--use-dbts"]);
        assert!(err.contains("no transaction has a `dbts` field"), "{err}");
        assert!(err.contains(&format!("the isolation `{iso}`")), "{err}");
        assert!(
            err.contains("only --isolation optimistic records them"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn use_dbts_without_any_dbts_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ok.jsonl", SERIAL);
    let err = usage_error(&["check", &p, "--level", "ser", "--use-dbts"]);
    assert_eq!(
        err,
        format!(
            "error: {p}: --use-dbts needs the database's timestamps, but no transaction has a \
             `dbts` field"
        )
    );
}

#[test]
fn negative_counts_get_a_range_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    for (flag, v, want) in [
        ("--txns", "-1", "--txns must be a positive whole number"),
        ("--txns", "0", "--txns must be a positive whole number"),
        (
            "--clients",
            "-3",
            "--clients must be a positive whole number (1 to 4096)",
        ),
        ("--clients", "5000", "--clients 5000 is too large"),
    ] {
        let err = usage_error(&["run", "--db", "memdb", flag, v, "--out", &out]);
        assert!(
            err.starts_with(&format!("error: invalid value '{v}' for '{flag} <"))
                && err.contains(want),
            "{flag} {v}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{err}");
    }
}

#[test]
fn run_and_check_help_list_exit_codes_and_levels() {
    for cmd in ["run", "check"] {
        let o = harness(&[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0));
        let text = stdout(&o);
        assert!(
            text.contains("Exit codes: 0 ok (no anomaly at the level); 1 anomaly found; 2 usage, input or infrastructure error")
                && text.contains("3 unknown"),
            "{cmd}: {text}"
        );
        for level in [
            "rc (read committed)",
            "ra (read atomic)",
            "cc (causal",
            "pc (prefix consistency)",
            "si (snapshot isolation)",
            "strong-session-si",
            "strong-si",
            "ser (serializability)",
            "strong-session-ser",
            "sser (strict serializability)",
        ] {
            assert!(text.contains(level), "{cmd}: {level}: {text}");
        }
    }
}

#[test]
fn a_short_check_without_a_terminal_prints_no_progress() {
    // stderr is a pipe here: progress is a status line every 10 s, so a
    // check of a few transactions prints nothing but its verdict.
    let dir = tempfile::tempdir().unwrap();
    let ok = write(dir.path(), "ok.jsonl", SERIAL);
    let bad = write(dir.path(), "lost.jsonl", LOST_UPDATE);
    for (h, level, code) in [(&ok, "ser", 0), (&bad, "si", 1), (&ok, "rc", 0)] {
        let o = harness(&["check", h, "--level", level]);
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert_eq!(stderr(&o), "", "{h} {level}: no progress noise");
    }
    let o = harness(&["check", "--help"]);
    let text = stdout(&o);
    assert!(
        text.contains("every 10 s") && text.contains("[default: 300s]"),
        "{text}"
    );
}

#[test]
fn report_on_a_file_says_it_wants_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "history.jsonl", SERIAL);
    let err = usage_error(&["report", &p]);
    assert_eq!(
        err,
        format!(
            "error: {p} is a file; harness report takes a run folder (the one holding history.jsonl)"
        )
    );
    let missing = dir.path().join("nope").display().to_string();
    assert_eq!(
        usage_error(&["report", &missing]),
        format!("error: {missing}: no such folder")
    );
}

#[test]
fn import_errors_name_the_file_line_and_problem_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let big = write(
        dir.path(),
        "big.jsonl",
        "{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[[\"w\",1,100000000000000000000000000000]]}\n",
    );
    let err = usage_error(&["check", &big, "--level", "ser", "--format", "jsonl"]);
    assert_eq!(
        err,
        format!("error: {big}:1: value 1e+29 is not a 64-bit integer (column 78)")
    );
    // Auto mode on a .jsonl file: no need to say it guessed.
    let err = usage_error(&["check", &big, "--level", "ser"]);
    assert_eq!(
        err,
        format!("error: {big}:1: value 1e+29 is not a 64-bit integer (column 78)")
    );
    // On a name that does not say: what it guessed, and why.
    let big = dir.path().join("big.log");
    std::fs::copy(dir.path().join("big.jsonl"), &big).unwrap();
    let big = big.display().to_string();
    let err = usage_error(&["check", &big, "--level", "ser"]);
    assert!(
        err.starts_with(&format!(
            "error: {big}:1: read as jsonl (guessed by --format auto: it starts with a JSON object;"
        )) && err.ends_with("value 1e+29 is not a 64-bit integer (column 78)"),
        "{err}"
    );
    let garbage = dir.path().join("garbage.bin");
    std::fs::write(&garbage, b"\x00\x01garbage\xff\xfe\x00").unwrap();
    let g = garbage.display().to_string();
    let err = usage_error(&["check", &g, "--level", "ser"]);
    assert!(
        err.starts_with(&format!(
            "error: {g}: byte 8: read as dbcop (guessed by --format auto: the file is binary"
        )),
        "{err}"
    );
}

#[test]
fn a_text_txn_id_in_two_sessions_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "f.txt", "w(1,5,0,3)\nw(2,6,1,3)\n");
    let err = usage_error(&["check", &f, "--format", "text", "--level", "rc"]);
    assert_eq!(
        err,
        format!(
            "error: {f}:2: txn 3 is in session 1 here but in session 0 before: a transaction belongs to one session"
        )
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn inverted_range_reads_and_empty_transactions_check_ok_at_every_level() {
    let dir = tempfile::tempdir().unwrap();
    // `BETWEEN 2 AND 1`: an empty range (it used to panic, exit 101, at
    // rc, ra, cc and pc).
    let inverted = write(
        dir.path(),
        "inverted.jsonl",
        concat!(
            r#"{"id":1,"session":0,"status":"ok","ops":[["w",1,10],["w",2,20]]}"#,
            "\n",
            r#"{"id":2,"session":1,"status":"ok","ops":[["rq",2,1,[]],["r",1,10]]}"#,
            "\n"
        ),
    );
    // Two empty transactions in one session (pc's certificate used to miss
    // the second: exit 2).
    let empty = write(
        dir.path(),
        "empty.jsonl",
        concat!(
            r#"{"id":1,"session":0,"status":"ok","ops":[]}"#,
            "\n",
            r#"{"id":2,"session":0,"status":"ok","ops":[]}"#,
            "\n"
        ),
    );
    for f in [&inverted, &empty] {
        for l in history::Level::ALL {
            let o = harness(&["check", f, "--level", l.name()]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{f} at {l}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            assert!(
                stdout(&o).starts_with(&format!("{l}: ok")),
                "{}",
                stdout(&o)
            );
        }
    }
}

/// Two transactions with database timestamps and a kind, and a fault line.
const WITH_DBTS: &str = r#"{"type":"header","version":1}
{"id":0,"session":0,"status":"ok","start":1,"end":2,"ops":[["r",1,null],["w",1,10]],"dbts":{"start":1,"commit":2},"kind":"a"}
{"id":1,"session":1,"status":"ok","start":3,"end":4,"ops":[["r",1,10],["w",1,11]],"dbts":{"start":3,"commit":4}}
{"type":"fault","kind":"pause","start":1,"end":3}
{"type":"end","txns":2}
"#;

#[test]
fn convert_refuses_to_write_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "h.jsonl", SERIAL);
    let link = dir.path().join("l.jsonl");
    std::os::unix::fs::symlink(&src, &link).unwrap();
    let other_spelling = dir
        .path()
        .join(".")
        .join("..")
        .join(dir.path().file_name().unwrap())
        .join("h.jsonl");
    for out in [
        src.clone(),
        link.display().to_string(),
        other_spelling.display().to_string(),
    ] {
        for to in ["jsonl", "text"] {
            let err = usage_error(&["convert", &src, &out, "--to", to]);
            assert!(
                err.starts_with(&format!("error: {out}: the output is the input")),
                "{err}"
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&src).unwrap(), SERIAL, "untouched");
}

#[test]
fn convert_writes_into_a_fifo_or_device_without_replacing_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "h.jsonl", SERIAL);
    let file = dir.path().join("h.txt").display().to_string();
    let o = harness(&["convert", &src, &file, "--to", "text"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A FIFO stands for any node that is not a file (`/dev/null`,
    // `/dev/stdout`): the output goes into it, and it stays a FIFO.
    let fifo = dir.path().join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let o = harness(&["convert", &src, &fifo.display().to_string(), "--to", "text"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced by a {kind:?}");
    assert_eq!(
        reader.join().unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );
    let o = harness(&["convert", &src, "/dev/null", "--to", "jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let null = std::fs::metadata("/dev/null").unwrap().file_type();
    assert!(null.is_char_device(), "/dev/null became a {null:?}");
}

#[test]
fn a_failed_conversion_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    // A string key has no text form: the writer fails midway.
    let src = write(
        dir.path(),
        "h.jsonl",
        r#"{"id":0,"session":0,"status":"ok","ops":[["w",1,1]]}
{"id":1,"session":0,"status":"ok","ops":[["w","k",1]]}
"#,
    );
    let out = dir.path().join("h.txt");
    let o = harness(&["convert", &src, &out.display().to_string(), "--to", "text"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("transaction 1"), "{}", stderr(&o));
    assert!(!out.exists(), "no half-written output");
    // An existing output is left as it was.
    std::fs::write(&out, "old").unwrap();
    let o = harness(&["convert", &src, &out.display().to_string(), "--to", "text"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn convert_refuses_to_drop_dbts_and_faults_without_lossy() {
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "h.jsonl", WITH_DBTS);
    for (to, name) in [("elle-edn", "o.edn"), ("text", "o.txt")] {
        let out = dir.path().join(name).display().to_string();
        let err = usage_error(&["convert", &src, &out, "--to", to]);
        assert_eq!(
            err,
            format!(
                "error: {src}: {to} cannot carry the transactions' dbts (2 of them), kind (1 of \
                 them) or the fault line; pass --lossy to drop them"
            )
        );
        assert!(!std::path::Path::new(&out).exists());
        let o = harness(&["convert", &src, &out, "--to", to, "--lossy"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(stderr(&o).contains("dropped (--lossy)"), "{}", stderr(&o));
        let o = harness(&["check", &out, "--level", "ser"]);
        assert_eq!(o.status.code(), Some(0), "{to}: {}", stdout(&o));
    }
    // JSONL carries everything.
    let out = dir.path().join("o.jsonl").display().to_string();
    let o = harness(&["convert", &src, &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let back = std::fs::read_to_string(&out).unwrap();
    assert!(back.contains("dbts") && back.contains("fault"), "{back}");
}

#[test]
fn a_run_in_which_nothing_committed_exits_2_as_check_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    // A run of 1 ns attempts no transaction.
    let o = harness(&["run", "--db", "memdb", "--duration", "1ns", "--out", &out]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}{err}", stdout(&o));
    assert!(!stdout(&o).contains("verdict: ok"), "{}", stdout(&o));
    let run = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .expect("a run folder")
        .unwrap()
        .path();
    let history = run.join("history.jsonl");
    assert!(history.exists());
    // The message of `harness check` on a history with nothing committed
    // (a_history_with_nothing_committed_needs_allow_empty), with the way to
    // check it anyway.
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {}: nothing to check: none of its 0 transactions committed (0 failed, \
             0 info); `harness check --allow-empty` on it checks it anyway",
            history.display()
        )
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["verdict"], "unknown");
    assert_eq!(report["check"]["verdict"], "unknown");
    assert!(report["check"]["satisfies"].as_array().unwrap().is_empty());
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(!html.contains("class=\"verdict ok\""), "no green ok");
    assert!(html.contains("nothing to check"));
}

#[test]
fn zero_timeouts_of_a_run_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    for flag in ["--statement-timeout", "--connect-timeout"] {
        let err = usage_error(&["run", "--db", "memdb", flag, "0s", "--out", &out]);
        assert!(
            err.starts_with(&format!(
                "error: invalid value '0s' for '{flag} <DURATION>'"
            )) && err.contains("must be more than zero")
                && !err.contains('\n'),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Every duration flag's help says what 0s means.
    let o = harness(&["run", "--help"]);
    let help = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    for flag in [
        "--duration",
        "--check-timeout",
        "--statement-timeout",
        "--connect-timeout",
    ] {
        let at = help
            .find(&format!("{flag} <"))
            .unwrap_or_else(|| panic!("{flag}"));
        let next = help[at + 2..]
            .find(" --")
            .map_or(help.len(), |i| at + 2 + i);
        assert!(
            help[at..next].contains("`0s`"),
            "{flag}: {}",
            &help[at..next]
        );
    }
}

#[test]
fn every_level_is_placed_or_said_not_placed() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "ok.jsonl", SERIAL);
    for level in ["ser", "si", "pc", "rc", "sser"] {
        let o = harness(&["check", &p, "--level", level]);
        let out = stdout(&o);
        let named = |prefix: &str| -> Vec<String> {
            out.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .map(|l| l.split(", ").map(str::to_string).collect())
                .unwrap_or_default()
        };
        let mut all: Vec<String> = named("fails: ");
        all.extend(named("satisfies: "));
        all.extend(named("not placed: "));
        for l in history::Level::ALL {
            assert_eq!(
                all.iter().filter(|n| *n == l.name()).count(),
                1,
                "{level}: {} once: {out}",
                l.name()
            );
        }
        if !named("not placed: ").is_empty() {
            assert!(out.contains("note: not placed"), "{out}");
        }
    }
}
