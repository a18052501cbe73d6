//! TPC-C end to end on memdb: correct at snapshot isolation (history `si`,
//! consistency conditions hold), and its lost-update bug caught twice, by
//! the checker in the history and by the conditions in the final state.

mod common;
mod workload_support;

use workload_support::*;

fn tpcc(extra: &[&str]) -> Run {
    let mut args = vec![
        "--db",
        "memdb",
        "--workload",
        "tpcc",
        "--level",
        "si",
        "--clients",
        "6",
        "--txns",
        "300",
        "--seed",
        "3",
    ];
    args.extend_from_slice(extra);
    run(&args, 300)
}

#[test]
fn memdb_snapshot_isolation_keeps_tpcc_consistent() {
    let r = tpcc(&[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_workload_ops("tpcc", &r, "memdb snapshot tpcc");
    assert_eq!(
        r.report["end_check"]["ok"], true,
        "{}",
        r.report["end_check"]
    );
}

#[test]
fn memdb_lost_updates_break_the_history_and_the_conditions() {
    let r = tpcc(&["--bug", "lost-update"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.report["verdict"], "anomalous");
    let counts = &r.report["check"]["anomaly_counts"];
    assert!(
        counts
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.contains("lost update")),
        "{counts}"
    );
    let ec = &r.report["end_check"];
    assert_eq!(ec["ok"], false, "{ec}");
    assert_eq!(ec["conditions"][0]["ok"], false, "W_YTD = sum(D_YTD): {ec}");
    assert!(r.stdout.contains("condition 1 failed"), "{}", r.stdout);
}
