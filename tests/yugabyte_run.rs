//! `harness run --db yugabyte` end to end on PostgreSQL (`ISOHARNESS_PG_URL`,
//! else postgres://postgres@127.0.0.1:5432/postgres): YSQL speaks
//! PostgreSQL, so the adapter runs with its YugabyteDB-only settings skipped
//! and reported. Fails when the server is down: CI starts it.

mod common;

use common::*;

#[test]
fn the_yugabyte_adapter_runs_end_to_end_on_postgres() {
    let url = scratch_db("run_yb_on_pg");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut args = vec!["run", "--url", &url];
    args.extend(target("yugabyte", &url, "mini"));
    args.extend(["--keys", "4", "--clients", "6", "--txns", "300"]);
    args.extend(["--level", "si", "--out", &out]);
    let o = harness(&args);
    let code = o.status.code().unwrap();
    assert_eq!(code, 0, "{}{}", stdout(&o), stderr(&o));
    let run = run_dir(dir.path());
    read_history(&run, 300);
    let report = read_report(&run);
    assert_eq!(report["run"]["db"], "yugabyte");
    assert_eq!(report["run"]["isolation"], "snapshot");
    let skipped = the_warning(&report, "is not YugabyteDB");
    assert!(skipped.contains("yb_read_from_followers"), "{skipped}");
    assert!(stdout(&o).contains("warning: yugabyte: the server at"));
    // Both endpoints are named.
    let shown = report["run"]["url"].as_str().unwrap();
    assert_eq!(shown.matches("ih_test_run_yb_on_pg").count(), 2, "{shown}");
}
