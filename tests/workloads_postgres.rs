//! Every workload end to end on the real PostgreSQL (`ISOHARNESS_PG_URL`,
//! else postgres://postgres@127.0.0.1:5432/postgres), at each level it
//! offers: read committed checked at `rc`, repeatable read at `si`,
//! serializable at `ser`. Each history passes the level promised and holds
//! the op kinds its workload is meant to produce, counted. Then: read
//! committed is caught violating `si`, and TPC-C's consistency conditions
//! hold after serializable runs, and a deliberate break is reported. These
//! tests fail, not skip, when the server is down.

mod common;
mod workload_support;

use std::time::{Duration, Instant};

use adapters::{DbKind, OpenOptions};
use common::*;
use workload_support::*;
use workloads::EndCheck;

/// PostgreSQL's levels: (checked level, its own setting).
const LEVELS: [(&str, &str); 3] = [
    ("rc", "read-committed"),
    ("si", "repeatable-read"),
    ("ser", "serializable"),
];

/// Runs `workload` at every level on one scratch database (each run
/// recreates the tables) and checks verdict and op kinds.
fn every_level(workload: &str, clients: &str, extra: &[&str]) -> Vec<Run> {
    let url = scratch_db(&format!("wl_{workload}"));
    let mut runs = Vec::new();
    for (level, iso) in LEVELS {
        let txns = 300;
        let mut args = target("postgres", &url, workload);
        args.extend(["--level", level, "--clients", clients]);
        args.extend(["--txns", "300", "--seed", "21"]);
        args.extend_from_slice(extra);
        let r = run(&args, txns);
        let what = format!("postgres {iso} {workload}");
        assert_eq!(r.report["run"]["isolation"], iso, "{what}");
        assert_eq!(
            r.report["verdict"], "ok",
            "{what}: PostgreSQL's {iso} promises {level}: {}",
            r.stdout
        );
        assert_eq!(r.code, 0, "{what}: {}", r.stdout);
        assert_workload_ops(workload, &r, &what);
        runs.push(r);
    }
    runs
}

#[test]
fn mini_at_every_level() {
    every_level("mini", "6", &["--keys", "10"]);
}

#[test]
fn blindw_at_every_level() {
    every_level("blindw", "4", &["--keys", "40"]);
}

#[test]
fn range_at_every_level() {
    every_level("range", "4", &["--keys", "40"]);
}

#[test]
fn append_at_every_level() {
    every_level("append", "6", &[]);
}

#[test]
fn tpcc_at_every_level_keeps_its_conditions_under_si_and_ser() {
    let runs = every_level("tpcc", "6", &[]);
    for (r, (level, _)) in runs.iter().zip(LEVELS) {
        let ec = &r.report["end_check"];
        if level != "rc" {
            // TPC-C is SI-robust: repeatable read and serializable keep
            // consistency conditions 1-4.
            assert_tpcc_conditions_hold(ec, &r.stdout, level);
        } else {
            // Read committed may lose Payment's updates of W_YTD (condition
            // 1); it is reported, and not an anomaly of `rc`.
            eprintln!("read committed: {ec}");
        }
    }
}

/// Runs PostgreSQL's read committed checked at `si` until the checker
/// catches it, at most `attempts` seeds; returns the seed and the anomaly
/// counts.
fn caught_at_si(workload: &str, extra: &[&str], attempts: u64) -> (u64, serde_json::Value) {
    let url = scratch_db(&format!("rc_as_si_{workload}"));
    for seed in 1..=attempts {
        let seed_s = seed.to_string();
        let mut args = target("postgres", &url, workload);
        args.extend(["--isolation", "read-committed", "--level", "si"]);
        args.extend(["--clients", "6", "--txns", "200", "--seed", &seed_s]);
        args.extend_from_slice(extra);
        let r = run(&args, 200);
        assert_eq!(r.report["run"]["isolation"], "read-committed");
        if r.code == 1 {
            assert_eq!(r.report["verdict"], "anomalous");
            let counts = r.report["check"]["anomaly_counts"].clone();
            assert!(!counts.as_object().unwrap().is_empty(), "{counts}");
            return (seed, counts);
        }
        eprintln!("{workload} seed {seed}: not caught (exit {})", r.code);
    }
    panic!("{workload}: read committed passed `si` with {attempts} seeds");
}

#[test]
fn read_committed_is_caught_violating_si() {
    // Few keys and six clients: lost updates, read skew and phantoms are
    // frequent at read committed. Seed 1 is caught in every calibration
    // run; up to three seeds are tried so that one quiet run cannot fail
    // the test.
    let (seed, counts) = caught_at_si("range", &["--keys", "10"], 3);
    eprintln!("range: caught with seed {seed}: {counts}");
    let (seed, counts) = caught_at_si("blindw", &["--variant", "mixed", "--keys", "5"], 3);
    eprintln!("blindw mixed: caught with seed {seed}: {counts}");
}

/// The consistency check run again through the library, on the final
/// state as it is now.
fn recheck(rt: &tokio::runtime::Runtime, url: &str, suffix: &str) -> workloads::EndReport {
    rt.block_on(async {
        let mut opts = OpenOptions::new(vec![url.to_string()], std::env::temp_dir());
        opts.tables = adapters::TableNames::with_suffix(suffix).unwrap();
        let db = adapters::open(DbKind::Postgres, &opts).unwrap();
        let mut s = db.connect(0).await.unwrap();
        let r = s.end_check(EndCheck::TpccConsistency).await.unwrap();
        s.close().await;
        r
    })
}

#[test]
fn a_broken_tpcc_condition_is_reported() {
    let url = scratch_db("tpcc_break");
    // A serializable run; while it runs, the test takes 123.45 out of a
    // district's D_YTD behind the harness's back (no write id changes, so
    // the history cannot show it; only the final state can).
    let mut args = vec!["--level", "ser", "--clients", "4", "--duration", "3s"];
    args.extend(["--seed", "5", "--check-timeout", "120s", "--keep-tables"]);
    let (child, tmp) = spawn_run("postgres", &url, "tpcc", &args);
    let (rt, c) = pg(&url);
    let began = Instant::now();
    let mut district = String::new();
    let tampered = rt.block_on(async {
        loop {
            // The run's own district table, once it exists.
            if district.is_empty() {
                let row = c
                    .query_opt(
                        "SELECT tablename::text FROM pg_tables \
                         WHERE starts_with(tablename, 'tpcc_district_')",
                        &[],
                    )
                    .await
                    .unwrap();
                district = row.map(|r| r.get(0)).unwrap_or_default();
            }
            // The district rows exist once the load has committed.
            if !district.is_empty() {
                let r = c
                    .execute(
                        &format!(
                            "UPDATE {district} SET d_ytd = d_ytd - 12345 \
                             WHERE d_w_id = 1 AND d_id = 1"
                        ),
                        &[],
                    )
                    .await;
                if let Ok(1) = r {
                    return true;
                }
            }
            if began.elapsed() > Duration::from_secs(20) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let o = child.wait_with_output().unwrap();
    let text = stdout(&o);
    assert!(tampered, "the load never committed: {text}{}", stderr(&o));
    let run = run_dir(tmp.path());
    let report = read_report(&run);
    // The history is serializable: the tamper left no trace in it...
    assert_eq!(report["verdict"], "ok", "{text}");
    // ...but the final state breaks condition 1, and only condition 1.
    let ec = &report["end_check"];
    assert_eq!(ec["ok"], false, "{ec}");
    let conds = ec["conditions"].as_array().unwrap();
    assert_eq!(conds[0]["ok"], false, "{ec}");
    assert_eq!(conds[0]["violation_count"], 1, "{ec}");
    let v = conds[0]["violations"][0].as_str().unwrap();
    assert!(
        v.starts_with("warehouse 1: ") && v.ends_with("(off by 123.45)"),
        "{v}"
    );
    assert!(conds[1..].iter().all(|c| c["ok"] == true), "{ec}");
    assert!(
        text.contains("condition 1 failed (W_YTD = sum(D_YTD)) on 1 of 2"),
        "{text}"
    );
    // At `ser` a failed condition is an anomaly: exit code 1.
    assert_eq!(o.status.code(), Some(1), "{text}");

    // The same check through the library: still broken, and fine again
    // once the money is put back.
    let suffix = district.strip_prefix("tpcc_district_").unwrap();
    let r = recheck(&rt, &url, suffix);
    assert!(!r.ok && !r.conditions[0].ok, "{r}");
    rt.block_on(c.execute(
        &format!("UPDATE {district} SET d_ytd = d_ytd + 12345 WHERE d_w_id = 1 AND d_id = 1"),
        &[],
    ))
    .unwrap();
    let r = recheck(&rt, &url, suffix);
    assert!(r.ok, "{r}");
}

/// blindw at its defaults (sorted key order, 2000 zipf keys, 8 clients) for
/// a few seconds: writers take their row locks in one order, so no
/// transaction dies of a deadlock (40P01), and most commit. No timing is
/// asserted: the point of the default is that no writer waits out
/// `deadlock_timeout`, which the deadlock count shows directly.
#[test]
fn blindw_default_key_order_does_not_deadlock() {
    let url = scratch_db("wl_blindw_key_order");
    for level in ["ser", "si"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().display().to_string();
        let mut args = vec!["run", "--out", &out, "--check-timeout", "120s"];
        args.extend(target("postgres", &url, "blindw"));
        args.extend(["--level", level, "--clients", "8", "--duration", "3s"]);
        args.extend(["--seed", "24"]);
        let o = harness(&args);
        let text = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{level}: {text}{}", stderr(&o));
        let dir = run_dir(tmp.path());
        let h = history::read_jsonl_file(&dir.join("history.jsonl")).expect("history parses");
        let report = read_report(&dir);
        assert_eq!(report["run"]["key_order"], "sorted", "{level}");
        let deadlocked = h
            .txns
            .iter()
            .filter(|t| t.error.as_deref().is_some_and(|e| e.starts_with("40P01")))
            .count();
        assert_eq!(deadlocked, 0, "{level}: {text}");
        assert_eq!(report["abort_rate"]["deadlocks"], 0, "{level}: {text}");
        let writers = h
            .txns
            .iter()
            .filter(|t| t.kind.as_deref() == Some("write-only"))
            .count();
        assert!(writers > 0, "{level}: no writers: {text}");
        let abort = report["abort_rate"]["overall"].as_f64().unwrap();
        assert!(abort < 0.5, "{level}: abort rate {abort}: {text}");
    }
}
