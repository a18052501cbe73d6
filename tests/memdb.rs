//! memdb: a correct store passes the level it runs at, on every workload,
//! and every switchable bug is caught at the levels that forbid it.

mod common;

use common::*;

fn run(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let mut all = vec!["run", "--db", "memdb", "--out", &out];
    if !args.contains(&"--seed") {
        all.extend(["--seed", "7"]);
    }
    all.extend_from_slice(args);
    let o = harness(&all);
    let report = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("report.json"))
        .find(|p| p.exists())
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (
        o.status.code(),
        report,
        format!("{}{}", stdout(&o), stderr(&o)),
    )
}

#[test]
fn a_correct_memdb_passes_its_level_on_every_workload() {
    for w in ["mini", "blindw", "range", "append", "tpcc"] {
        for level in ["rc", "si", "ser"] {
            let (code, _, out) = run(&[
                "--workload",
                w,
                "--level",
                level,
                "--txns",
                "600",
                "--clients",
                "6",
            ]);
            assert_eq!(code, Some(0), "{w} at {level}:\n{out}");
        }
    }
}

#[test]
fn every_bug_is_caught_where_it_is_forbidden() {
    // (bug, keys, levels that must catch it); the report must name the
    // anomaly the bug is named after.
    let cases: &[(&str, &str, &[&str])] = &[
        ("lost-update", "6", &["si", "ser"]),
        ("write-skew", "6", &["ser"]),
        ("stale-read", "6", &["sser", "strong-si"]),
        ("fractured-read", "6", &["ra", "si", "ser"]),
        ("long-fork", "2", &["si", "ser"]),
        ("aborted-read", "6", &["rc", "si", "ser"]),
    ];
    for (bug, keys, levels) in cases {
        for level in *levels {
            // A bug shows only when transactions overlap; on a loaded
            // machine the clients may barely overlap, so each case gets a
            // few seeds. Every run must still be a clean verdict.
            let mut missed = Vec::new();
            for seed in ["7", "8", "9"] {
                let args = [
                    "--bug",
                    bug,
                    "--workload",
                    "mini",
                    "--level",
                    level,
                    "--keys",
                    keys,
                    "--seed",
                    seed,
                    "--txns",
                    "3000",
                    "--clients",
                    "8",
                ];
                let (code, report, out) = run(&args);
                assert!(matches!(code, Some(0 | 1)), "{bug} at {level}:\n{out}");
                let names: Vec<&str> = report["check"]["anomalies"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .flat_map(|x| [&x["kind"], &x["common"]])
                            .filter_map(|v| v.as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                // Now and then the cycle found for a long fork is longer
                // than its 4-txn shape (more transactions, or a ww edge
                // between them): still G-nonadjacent, the class long forks
                // belong to, but without the shape the common name needs.
                let named = names.contains(bug)
                    || (*bug == "long-fork" && names.contains(&"g-nonadjacent"));
                if code == Some(1) && named {
                    missed.clear();
                    break;
                }
                missed.push(format!(
                    "seed {seed}: exit {code:?}, named {names:?}\n{out}"
                ));
            }
            assert!(
                missed.is_empty(),
                "{bug} at {level} was not caught and named:\n{}",
                missed.join("\n")
            );
        }
    }
}

#[test]
fn write_skew_is_allowed_by_snapshot_isolation() {
    // The bug weakens serializable to snapshot isolation: si still holds.
    let (code, _, out) = run(&[
        "--bug",
        "write-skew",
        "--workload",
        "mini",
        "--keys",
        "6",
        "--level",
        "si",
        "--txns",
        "2000",
    ]);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn the_database_timestamps_spare_the_search() {
    // memdb reports its snapshot and commit timestamps (`dbts`) as TiDB
    // does. With them every version order is known: no constraint is
    // built, where the black-box search needs thousands.
    for level in ["si", "ser"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().display().to_string();
        let args = [
            "run",
            "--db",
            "memdb",
            "--workload",
            "blindw",
            "--variant",
            "rw",
            "--keys",
            "200",
        ];
        let o = harness(
            &[
                &args[..],
                &[
                    "--txns",
                    "2000",
                    "--clients",
                    "12",
                    "--level",
                    level,
                    "--out",
                    &out,
                ],
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let run = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let history = run.join("history.jsonl").display().to_string();
        let check = |flag: &str| {
            let o = harness(&["check", &history, "--level", level, "--json", flag]);
            assert_eq!(o.status.code(), Some(0), "{flag}: {}", stderr(&o));
            let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            r["constraints"].as_u64().unwrap()
        };
        let white = check("--use-dbts");
        let black = check("--no-witness");
        assert_eq!(white, 0, "{level}");
        assert!(
            black > 1000,
            "{level}: black-box built only {black} constraints"
        );
    }
}

/// Read committed on lists: an append holds its list from the append to
/// the commit, as a row lock does in PostgreSQL and InnoDB, so a read after
/// it shows the version the transaction installs. Checked at rc by the
/// rule that places such a read at the append, a correct run is ok every
/// time, on few hot keys; the same runs are not snapshot isolation.
#[test]
fn read_committed_appends_pass_rc_every_time() {
    for seed in 1..=20 {
        let seed = seed.to_string();
        let (code, report, out) = run(&[
            "--workload",
            "append",
            "--level",
            "rc",
            "--keys",
            "4",
            "--clients",
            "8",
            "--seed",
            &seed,
        ]);
        assert_eq!(code, Some(0), "seed {seed}:\n{out}");
        let committed = report["counts"]["committed"].as_u64().unwrap_or(0);
        assert!(
            committed >= 1_800,
            "seed {seed}: {committed} committed\n{out}"
        );
    }
    let (code, _, out) = run(&[
        "--workload",
        "append",
        "--isolation",
        "read-committed",
        "--level",
        "si",
        "--keys",
        "4",
        "--clients",
        "8",
    ]);
    assert_eq!(code, Some(1), "read committed is not si:\n{out}");
}
