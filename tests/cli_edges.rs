//! Rough edges of the command line: counts that are negative or too large,
//! and `--dot` into a folder that does not exist. Each is exit code 2 and
//! one `error: ...` line that says what is wrong.

mod common;

use common::{harness, stderr, stdout};

/// Runs `harness ARGS`, asserts exit code 2, no stdout and a one-line
/// message on stderr; returns that line.
fn one_line_error(args: &[&str]) -> String {
    let o = harness(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    err.trim_end().to_string()
}

#[test]
fn negative_counts_must_be_positive_whole_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    for (flag, v) in [
        ("--txns", "-1"),
        ("--clients", "-1"),
        ("--keys", "-5"),
        ("--ops", "-2"),
        ("--txns", "0"),
        ("--txns", "1.5"),
        ("--warehouses", "-1"),
        ("--districts", "0"),
        ("--customers", "-3"),
        ("--items", "x"),
        ("--orders", "-1"),
    ] {
        let err = one_line_error(&["run", "--db", "memdb", flag, v, "--out", &out]);
        assert!(
            err.contains(&format!("{flag} must be a positive whole number")),
            "{flag} {v}: {err}"
        );
    }
    // The range is named where there is one.
    let err = one_line_error(&["run", "--db", "memdb", "--clients", "-1", "--out", &out]);
    assert!(err.contains("(1 to 4096)"), "{err}");
    // `--cluster-nodes` and `cluster up --nodes` too.
    let err = one_line_error(&[
        "run",
        "--cluster",
        "galera",
        "--cluster-nodes",
        "-1",
        "--out",
        &out,
    ]);
    assert!(
        err.contains("--cluster-nodes must be a positive whole number"),
        "{err}"
    );
    let err = one_line_error(&["cluster", "up", "galera", "--nodes", "-3"]);
    assert!(
        err.contains("--nodes must be a positive whole number"),
        "{err}"
    );
}

#[test]
fn oversized_counts_are_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let huge = "99999999999999999999";
    let err = one_line_error(&["run", "--db", "memdb", "--txns", huge, "--out", &out]);
    assert!(
        err.contains(&format!("--txns {huge} is too large")),
        "{err}"
    );
    assert!(!err.contains("at least"), "{err}");
    let err = one_line_error(&["run", "--db", "memdb", "--clients", "5000", "--out", &out]);
    assert!(
        err.contains("--clients 5000 is too large: the most it can be is 4096"),
        "{err}"
    );
    let err = one_line_error(&[
        "run",
        "--db",
        "memdb",
        "--workload",
        "tpcc",
        "--warehouses",
        "99999999999",
        "--out",
        &out,
    ]);
    assert!(
        err.contains("--warehouses 99999999999 is too large: the most it can be is 4294967295"),
        "{err}"
    );
}

#[test]
fn dot_into_a_missing_folder_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    std::fs::write(
        &history,
        "{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[[\"w\",1,1]]}\n",
    )
    .unwrap();
    let h = history.display().to_string();
    let missing = dir.path().join("nope");
    for dot in [
        format!("{}/", missing.display()),
        missing.join("out.dot").display().to_string(),
    ] {
        let err = one_line_error(&["check", &h, "--level", "ser", "--dot", &dot]);
        assert!(
            err.contains(&format!("the folder {} does not exist", missing.display())),
            "{dot}: {err}"
        );
        assert!(!err.contains("Is a directory"), "{err}");
    }
    // An existing folder is still accepted.
    let o = harness(&[
        "check",
        &h,
        "--level",
        "ser",
        "--dot",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A `--certify` or `--dot` file that cannot be written does not hide the
/// verdict: it is printed, then one error line, and the exit code is 2.
#[test]
fn an_unwritable_output_file_comes_after_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("h.jsonl");
    // A read of a value nobody wrote: anomalous at every level.
    std::fs::write(
        &history,
        "{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[[\"w\",1,1]]}\n\
         {\"id\":1,\"session\":1,\"status\":\"ok\",\"ops\":[[\"r\",1,7]]}\n",
    )
    .unwrap();
    let h = history.display().to_string();
    let cert = dir.path().join("nope").join("c.json");
    for extra in [
        vec!["--certify", cert.to_str().unwrap()],
        // /proc takes no new files, even from root.
        vec!["--dot", "/proc/isoharness-test.dot"],
    ] {
        let mut args = vec!["check", h.as_str(), "--level", "ser"];
        args.extend(&extra);
        let o = harness(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(
            stdout(&o).starts_with("ser: anomalous"),
            "{extra:?}: {}",
            stdout(&o)
        );
        let err = stderr(&o);
        assert_eq!(err.trim_end().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.starts_with("error: cannot write "), "{extra:?}: {err}");
        assert!(err.contains(extra[1]), "{extra:?}: {err}");
    }
}
