//! Real time is a hint for the black-box levels: a valid history in which
//! two write-only transactions carry misleading times is still decided
//! (before, the search the times steered ran out of a 60 s budget). And a
//! verdict never waits on levels nobody asked for: placing them has its own
//! small budget.

mod common;

use common::*;
use history::{read_jsonl_file, to_jsonl_string};

/// A valid 10k BlindW history from memdb, with two early write-only
/// transactions' client times moved past the end of the run.
fn misleading(dir: &std::path::Path) -> String {
    let out = dir.join("runs");
    let o = harness(&[
        "run",
        "--db",
        "memdb",
        "--workload",
        "blindw",
        "--variant",
        "rw",
        "--ops",
        "8",
        "--keys",
        "2000",
        "--dist",
        "uniform",
        "--clients",
        "24",
        "--txns",
        "10000",
        "--level",
        "si",
        "--seed",
        "1",
        "--check-timeout",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(3)),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let mut h = read_jsonl_file(&run_dir(&out).join("history.jsonl")).unwrap();
    let last = h.txns.iter().filter_map(|t| t.end).max().unwrap();
    let movers: Vec<usize> = h
        .txns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == history::Status::Ok && t.kind.as_deref() == Some("write-only"))
        .map(|(i, _)| i)
        .skip(10)
        .step_by(10)
        .take(2)
        .collect();
    for i in movers {
        h.txns[i].start = Some(last + 10);
        h.txns[i].end = Some(last + 20);
    }
    let p = dir.join("misleading.jsonl");
    std::fs::write(&p, to_jsonl_string(&h)).unwrap();
    p.display().to_string()
}

#[test]
fn misleading_times_do_not_stop_the_black_box_search() {
    let dir = tempfile::tempdir().unwrap();
    let p = misleading(dir.path());
    for level in ["si", "ser"] {
        let o = harness(&["check", &p, "--level", level, "--timeout", "60s"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{level}: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }
}
