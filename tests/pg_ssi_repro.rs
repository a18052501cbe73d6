//! The forced schedule of docs/findings/postgres-ssi-read-only-repro.md:
//! runs `scripts/repro/pg-ssi-read-only.sh` once against the PostgreSQL
//! server the tests use (`ISOHARNESS_PG_URL`, else
//! postgres://postgres@127.0.0.1:5432/postgres) and checks the verdict the
//! finding documents: PostgreSQL 15 commits all three transactions of the
//! read-only G2-item cycle when the first writer's backend is held (by
//! gdb) between leaving the proc array and ReleasePredicateLocks.
//!
//! Needs psql, python3 and gdb, and the right to ptrace the server's
//! backends (CI runs as root; `.ci/services` installs gdb). Fails when the
//! server is down or gdb cannot hold the backend: the script then exits 2.
//! If a PostgreSQL release fixes the bug, the verdict becomes "no anomaly
//! (... 40001 ...)" and this test fails: update the finding and the test.

mod common;

use std::process::Command;

use tokio_postgres::config::Host;
use tokio_postgres::Config;

#[test]
fn forced_schedule_commits_the_read_only_cycle() {
    let url = common::admin_url();
    let cfg: Config = url.parse().expect("ISOHARNESS_PG_URL parses");
    let host = match cfg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    assert!(
        host == "127.0.0.1" || host == "localhost",
        "the reproduction connects to 127.0.0.1 only (gdb must attach to the server's backend); \
         {url} names {host}"
    );
    let port = cfg.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = cfg.get_user().unwrap_or("postgres").to_string();
    let dbname = cfg.get_dbname().unwrap_or("postgres").to_string();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/repro/pg-ssi-read-only.sh"
    );

    let start = std::time::Instant::now();
    let o = Command::new("bash")
        .args([
            script, "--port", &port, "--user", &user, "--dbname", &dbname,
        ])
        .output()
        .expect("run scripts/repro/pg-ssi-read-only.sh");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    let took = start.elapsed();

    assert_eq!(
        o.status.code(),
        Some(0),
        "the reproduction did not run (exit 2 is a setup error: PostgreSQL down, no gdb, \
         no ptrace permission):\n{out}{err}"
    );
    let verdicts: Vec<&str> = out.lines().filter(|l| l.starts_with("verdict: ")).collect();
    assert_eq!(verdicts.len(), 1, "one verdict line expected:\n{out}{err}");
    assert!(
        verdicts[0].starts_with("verdict: anomaly reproduced (all three committed;"),
        "PostgreSQL's SSI caught the forced schedule; the finding says it does not:\n{out}{err}"
    );
    assert!(
        out.contains("commits: W committed, P committed, R committed"),
        "{out}"
    );
    assert!(
        out.contains("held by gdb at ReleasePredicateLocks"),
        "W's COMMIT was not held: {out}"
    );
    assert!(took.as_secs() < 60, "the reproduction took {took:?}");
}
