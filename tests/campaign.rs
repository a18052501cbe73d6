//! `harness campaign` and `harness compare` end to end: the shipped
//! scenarios/local.toml on PostgreSQL, MariaDB and SQLite (pointed at
//! scratch databases), its summary.json and a junit.xml that a JUnit parser
//! accepts; a campaign that misses its expectation; a planted regression.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

fn junit(path: &Path) -> junit_parser::TestSuites {
    let f = std::fs::File::open(path).expect("junit.xml");
    junit_parser::from_reader(std::io::BufReader::new(f)).expect("a JUnit parser accepts it")
}

fn summary(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("summary.json")).unwrap()
}

/// A scenario file in a scratch folder, and where its campaign writes.
struct Scenario {
    dir: tempfile::TempDir,
    file: PathBuf,
    out: PathBuf,
}

impl Scenario {
    /// `toml` written to `file_name` in a new scratch folder.
    fn new(file_name: &str, toml: &str) -> Scenario {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(file_name);
        std::fs::write(&file, toml).unwrap();
        let out = dir.path().join("results");
        Scenario { dir, file, out }
    }

    /// `harness campaign FILE --out RESULTS`.
    fn run(&self) -> Output {
        harness(&[
            "campaign",
            self.file.to_str().unwrap(),
            "--out",
            self.out.to_str().unwrap(),
        ])
    }
}

/// A MariaDB database of its own on the server of .ci/services.
fn scratch_mariadb(name: &str) -> String {
    let o = Command::new("mariadb")
        .args([
            "--protocol=tcp",
            "-h",
            "127.0.0.1",
            "-P",
            "3306",
            "-u",
            "root",
            "-e",
            &format!("DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}"),
        ])
        .output()
        .expect("the mariadb client (installed by .ci/services)");
    assert!(
        o.status.success(),
        "MariaDB is not reachable on 127.0.0.1:3306 (start .ci/services): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    format!("mysql://root@127.0.0.1:3306/{name}")
}

#[test]
fn the_local_campaign_runs_and_reports() {
    let pg = scratch_db("campaign");
    let maria = scratch_mariadb("ih_test_campaign");
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/local.toml"))
            .unwrap()
            .replace("postgres://postgres@127.0.0.1:5432/postgres", &pg)
            .replace("mysql://root@127.0.0.1:3306/test", &maria);
    assert!(text.contains(&pg) && text.contains(&maria));
    let sc = Scenario::new("local.toml", &text);
    let (out, o) = (&sc.out, sc.run());
    let root = out.join("local");
    let s = summary(&root.join("summary.json"));
    if o.status.code() != Some(0) {
        // Keep the histories and show each failed run's log (its
        // counterexample), so a failure on CI can be studied afterwards.
        let mut logs = String::new();
        for r in s["runs"].as_array().into_iter().flatten() {
            if r["status"] != "passed" {
                let log = root.join(r["log"].as_str().unwrap_or_default());
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                logs.push_str(&format!("\n== {}:\n{text}", log.display()));
            }
        }
        let kept = sc.dir.keep();
        panic!(
            "campaign failed (results kept in {}):\n{}{}{logs}\n{s:#}",
            kept.display(),
            stdout(&o),
            stderr(&o)
        );
    }
    let runs = s["runs"].as_array().unwrap();
    assert!(runs.len() >= 6, "{}", runs.len());
    assert_eq!(s["passed"].as_u64(), Some(runs.len() as u64));
    for db in ["postgres", "mariadb", "sqlite"] {
        assert!(runs.iter().any(|r| r["db"] == db), "no {db} run");
    }
    for r in runs {
        assert_eq!(r["status"], "passed", "{r:#}");
        assert!(r["throughput"].as_f64().unwrap() > 0.0, "{r:#}");
        assert!(r["abort_rate"].as_f64().is_some());
        let dir = root.join(r["dir"].as_str().unwrap());
        assert!(dir.join("history.jsonl").exists() && dir.join("report.json").exists());
    }
    // MariaDB's repeatable read is caught, as expected.
    let rr = runs
        .iter()
        .find(|r| r["db"] == "mariadb" && r["isolation"] == "repeatable-read")
        .expect("a MariaDB repeatable read run");
    assert_eq!(rr["expect"], "anomalous");
    assert_eq!(rr["verdict"], "anomalous");
    // Proxy faults were injected (tests/faults.rs looks at what they do).
    for n in ["resets", "partitions"] {
        let r = runs.iter().find(|r| r["nemesis"] == n).unwrap();
        assert!(r["faults"].as_u64().unwrap() > 0, "{r:#}");
    }
    let j = junit(&root.join("junit.xml"));
    let cases: Vec<_> = j.suites.iter().flat_map(|s| &s.cases).collect();
    assert_eq!(cases.len(), runs.len());
    assert!(cases.iter().all(|c| c.status.is_success()));
    assert_eq!((j.failures, j.errors), (0, 0));
    // Each run can be repeated from its folder.
    let first = runs[0]["name"].as_str().unwrap();
    assert!(root.join("runs").join(first).join("scenario.toml").exists());
}

#[test]
fn missed_expectations_fail_the_campaign_and_junit() {
    let sc = Scenario::new(
        "c.toml",
        r#"
        name = "strict"
        [defaults]
        txns = 400
        clients = 2
        [databases.lite]
        db = "sqlite"
        [databases.memdb]
        db = "memdb"
        [[matrix]]
        databases = ["lite"]
        levels = ["ser"]
        expect = "ok"             # SQLite is serializable: met
        [[matrix]]
        name = "strict"
        databases = ["lite"]
        levels = ["ser"]
        expect = "anomalous"      # missed
        [[matrix]]
        name = "broken"
        databases = ["memdb"]
        levels = ["ser"]
        isolation = "no-such-level"   # cannot run: an error
        "#,
    );
    let (out, o) = (&sc.out, sc.run());
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let root = out.join("strict");
    let s = summary(&root.join("summary.json"));
    assert_eq!(
        (
            s["passed"].as_u64(),
            s["failed"].as_u64(),
            s["errors"].as_u64()
        ),
        (Some(1), Some(1), Some(1)),
        "{s:#}"
    );
    let j = junit(&root.join("junit.xml"));
    assert_eq!((j.tests, j.failures, j.errors), (3, 1, 1));
    let failed = j.suites[0]
        .cases
        .iter()
        .find(|c| c.status.is_failure())
        .unwrap();
    assert!(
        failed.name.contains("strict-lite-mini-ser"),
        "{}",
        failed.name
    );
    let errored = j.suites[0]
        .cases
        .iter()
        .find(|c| c.status.is_error())
        .unwrap();
    assert!(
        errored
            .status
            .error_as_ref()
            .message
            .contains("no-such-level"),
        "{:?}",
        errored.status
    );
    // A second campaign keeps the first summary for compare.
    let o = sc.run();
    assert_eq!(o.status.code(), Some(1));
    assert!(root.join("summary.prev.json").exists());
    let o = harness(&[
        "compare",
        root.join("summary.prev.json").to_str().unwrap(),
        root.to_str().unwrap(),
        "--throughput-drop",
        "0.99",
        "--abort-rise",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // Dry runs list the runs.
    let o = harness(&["campaign", sc.file.to_str().unwrap(), "--dry-run"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o).lines().count(), 3, "{}", stdout(&o));
}

#[test]
fn compare_flags_a_planted_regression() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, tput: f64, aborts: f64, anomalies: Value| {
        serde_json::json!({
            "name": name, "db": "postgres", "workload": "mini", "level": "si",
            "status": "passed", "verdict": "ok", "anomalies": anomalies,
            "throughput": tput, "abort_rate": aborts, "txns": 10000
        })
    };
    let doc = |runs: Vec<Value>| serde_json::json!({"campaign": "n", "passed": runs.len(), "failed": 0, "errors": 0, "runs": runs});
    let old = doc(vec![
        run("a", 1000.0, 0.10, serde_json::json!({})),
        run("b", 1000.0, 0.10, serde_json::json!({})),
        run("c", 1000.0, 0.10, serde_json::json!({})),
        run("d", 1000.0, 0.10, serde_json::json!({})),
    ]);
    let new = doc(vec![
        run("a", 980.0, 0.11, serde_json::json!({})),
        run("b", 400.0, 0.10, serde_json::json!({})),
        run(
            "c",
            1000.0,
            0.10,
            serde_json::json!({"G-single (lost update)": 2}),
        ),
        run("d", 1000.0, 0.40, serde_json::json!({})),
    ]);
    let op = dir.path().join("old.json");
    let np = dir.path().join("new.json");
    std::fs::write(&op, old.to_string()).unwrap();
    std::fs::write(&np, new.to_string()).unwrap();
    let (o_s, n_s) = (op.to_str().unwrap(), np.to_str().unwrap());

    let o = harness(&["compare", o_s, n_s]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("3 regressions"), "{text}");
    assert!(text.contains("REGRESSION b [throughput]: throughput 1000.0 -> 400.0 committed/s (-60.0%; Poisson rate test z = "), "{text}");
    assert!(
        text.contains(
            "REGRESSION d [abort-rate]: abort rate 10.0% -> 40.0% (two-proportion z = 49.0, p = "
        ),
        "{text}"
    );
    assert!(
        text.contains("REGRESSION c [new-anomaly]: new: G-single (lost update) x2"),
        "{text}"
    );
    assert!(!text.contains("REGRESSION a"), "{text}");

    let o = harness(&["compare", o_s, n_s, "--json", "--throughput-drop", "0.7"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["regressions"].as_array().unwrap().len(), 2);

    let o = harness(&["compare", o_s, o_s]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    let o = harness(&["compare", o_s, "/no/such/summary.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/no/such/summary.json"),
        "{}",
        stderr(&o)
    );
    std::fs::write(&np, "{\"runs\": 3}").unwrap();
    let o = harness(&["compare", o_s, n_s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a campaign summary"),
        "{}",
        stderr(&o)
    );

    let o = harness(&["compare", "--help"]);
    assert!(stdout(&o).contains("Exit codes: 0 no regression; 1 a regression"));
}

/// A run that tests little (here 20 transactions) fails an expectation it
/// would otherwise meet, unless the scenario says so (`tested_little`).
#[test]
fn a_run_that_tested_little_fails_its_expectation() {
    let sc = Scenario::new(
        "c.toml",
        r#"
        name = "little"
        [defaults]
        txns = 20
        clients = 2
        [databases.lite]
        db = "sqlite"
        [[matrix]]
        name = "plain"
        databases = ["lite"]
        levels = ["ser"]
        expect = "ok"
        [[matrix]]
        name = "allowed"
        databases = ["lite"]
        levels = ["ser"]
        expect = "ok"
        tested_little = true
        "#,
    );
    let (out, o) = (&sc.out, sc.run());
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let s = summary(&out.join("little").join("summary.json"));
    assert_eq!(
        (s["passed"].as_u64(), s["failed"].as_u64()),
        (Some(1), Some(1)),
        "{s:#}"
    );
    let runs = s["runs"].as_array().unwrap();
    let plain = runs
        .iter()
        .find(|r| r["name"].as_str().unwrap().starts_with("plain"))
        .unwrap();
    assert_eq!(plain["status"], "failed", "{plain:#}");
    let msg = plain["message"].as_str().unwrap();
    assert!(msg.contains("tested little"), "{msg}");
    assert!(plain["tested_little"].is_array(), "{plain:#}");
    let allowed = runs
        .iter()
        .find(|r| r["name"].as_str().unwrap().starts_with("allowed"))
        .unwrap();
    assert_eq!(allowed["status"], "passed", "{allowed:#}");
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn no_password_reaches_the_campaign_results() {
    const PW: &str = "s3cr3t-pw";
    // PostgreSQL of .ci/services trusts 127.0.0.1: any password is accepted.
    let pg = scratch_db("secrets").replacen("postgres@", &format!("postgres:{PW}@"), 1);
    assert!(pg.contains(PW), "{pg}");
    let sc = Scenario::new(
        "c.toml",
        &format!(
            r#"
            name = "secrets"
            [defaults]
            txns = 50
            clients = 2
            connect_timeout = "2s"
            [databases.pg]
            db = "postgres"
            urls = ["{pg}"]
            [databases.down]
            db = "postgres"
            urls = ["postgres://postgres:{PW}@127.0.0.1:1/postgres"]
            [databases.memdb]
            db = "memdb"
            [[matrix]]
            databases = ["pg", "down", "memdb"]
            levels = ["ser"]
            expect = "ok"
            tested_little = true
            "#
        ),
    );
    let (out, o) = (&sc.out, sc.run());
    // The run on the closed port cannot run: exit 1, and the other two ran.
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(!stdout(&o).contains(PW) && !stderr(&o).contains(PW));
    let s = summary(&out.join("secrets").join("summary.json"));
    assert_eq!(
        (s["passed"].as_u64(), s["errors"].as_u64()),
        (Some(2), Some(1)),
        "{s:#}"
    );
    let mut files = Vec::new();
    files_under(out, &mut files);
    assert!(files.len() > 6, "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let found = bytes.windows(PW.len()).any(|w| w == PW.as_bytes());
        assert!(!found, "{} holds the password", f.display());
    }
    // The kept scenario shows the URL, masked.
    let pg_run = s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["db"] == "pg")
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_string();
    let kept = std::fs::read_to_string(
        out.join("secrets")
            .join("runs")
            .join(&pg_run)
            .join("scenario.toml"),
    )
    .unwrap();
    assert!(kept.contains("postgres:***@127.0.0.1:5432"), "{kept}");
}

#[test]
fn the_cluster_campaigns_are_valid_and_cover_the_settings() {
    // The runs that need a cluster are in tests/cluster.rs; here: both
    // files parse, every node fault names a target the cluster will have,
    // and they cover the settings the findings are about.
    for (file, runs, must) in [
        (
            "galera.toml",
            14,
            &[
                "sync-wait-0-galera-mini",
                "rr-snapshot-isolation-off-galera-mini",
                "rr-snapshot-isolation-on-galera-append",
                "faults-galera-mini-si-repeatable-read-random-partitions",
                "faults-galera-mini-si-repeatable-read-slow-link",
            ][..],
        ),
        (
            "pg-replica.toml",
            14,
            &[
                "async-pg-replica-mini-sser",
                "async-faults-pg-replica-mini-si-repeatable-read-kill-primary",
                "remote-apply-pg-replica-mini-strong-si",
            ][..],
        ),
    ] {
        let path = format!("{}/scenarios/{file}", env!("CARGO_MANIFEST_DIR"));
        let o = harness(&["campaign", &path, "--dry-run"]);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", stderr(&o));
        let text = stdout(&o);
        assert_eq!(text.lines().count(), runs, "{file}: {text}");
        for m in must {
            assert!(text.contains(m), "{file}: no {m} in {text}");
        }
    }
    // A node fault on a node the cluster will not have is refused.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"bad\"\n[databases.g]\ncluster = \"galera\"\ncluster_nodes = 3\n\
         [nemeses]\nk = [\"kill:target=galera-4,at=1s\"]\n\
         [[matrix]]\ndatabases = [\"g\"]\nnemeses = [\"k\"]\n",
    )
    .unwrap();
    let o = harness(&["campaign", bad.to_str().unwrap(), "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("galera-4"), "{}", stderr(&o));
}

/// A run whose nemesis asked for faults and applied none (here a restart
/// command that always fails) did not test what it was for: it fails its
/// expectation, and summary.json and JUnit say why, unless the scenario
/// allows it (`tested_little = true`).
#[test]
fn a_run_whose_faults_never_applied_fails_its_expectation() {
    let sc = Scenario::new(
        "c.toml",
        r#"
        name = "nofault"
        [defaults]
        duration = "1500ms"
        clients = 4
        [databases.lite]
        db = "sqlite"
        targets.nope.restart = "echo no such node >&2; exit 4"
        [nemeses]
        broken = ["restart:at=200ms/600ms"]
        [[matrix]]
        name = "plain"
        databases = ["lite"]
        levels = ["ser"]
        nemeses = ["broken"]
        expect = "ok"
        [[matrix]]
        name = "allowed"
        databases = ["lite"]
        levels = ["ser"]
        nemeses = ["broken"]
        expect = "ok"
        tested_little = true
        "#,
    );
    let (out, o) = (&sc.out, sc.run());
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let root = out.join("nofault");
    let s = summary(&root.join("summary.json"));
    assert_eq!(
        (s["passed"].as_u64(), s["failed"].as_u64()),
        (Some(1), Some(1)),
        "{s:#}"
    );
    let runs = s["runs"].as_array().unwrap();
    let named = |p: &str| {
        runs.iter()
            .find(|r| r["name"].as_str().unwrap().starts_with(p))
            .unwrap()
    };
    let plain = named("plain");
    assert_eq!(plain["status"], "failed", "{plain:#}");
    let want = "not tested: no fault applied (2 asked, 0 applied: restart nope failed: exit 4";
    let msg = plain["message"].as_str().unwrap();
    assert!(msg.contains(want), "{msg}");
    assert!(
        plain["tested_little"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(want)),
        "{plain:#}"
    );
    assert_eq!(
        (plain["faults"].as_u64(), plain["faults_failed"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(named("allowed")["status"], "passed", "{s:#}");
    let j = junit(&root.join("junit.xml"));
    assert_eq!((j.tests, j.failures), (2, 1));
    let failed = j.suites[0]
        .cases
        .iter()
        .find(|c| c.status.is_failure())
        .unwrap();
    assert!(failed.name.contains("plain-lite"), "{}", failed.name);
    let why = &failed.status.failure_as_ref().message;
    assert!(why.contains(want), "{why}");
}

/// Two identical campaigns compare clean however far apart their
/// sub-second throughputs are (a note says they were too short to judge);
/// the same campaign with a memdb bug switched on is a regression.
#[test]
fn compare_takes_identical_campaigns_as_equal_and_reports_a_planted_bug() {
    let text = r#"
        name = "planted"
        seed = 1
        [defaults]
        workload = "mini"
        clients = 4
        # Long enough (tens of ms) that a worker thread the machine
        # preempts for a time slice cannot leave one client to run alone:
        # at 400 a busy CI machine once saw no two transactions overlap.
        txns = 3000
        keys = 3
        [databases.memdb]
        db = "memdb"
        [[matrix]]
        databases = ["memdb"]
        levels = ["si"]
        expect = "ok"
        "#;
    let summary = |sc: &Scenario| sc.out.join("planted").join("summary.json");
    let (a, b) = (Scenario::new("c.toml", text), Scenario::new("c.toml", text));
    let buggy = Scenario::new(
        "c.toml",
        &text.replace(
            "db = \"memdb\"",
            "db = \"memdb\"\n        bug = \"lost-update\"",
        ),
    );
    for (sc, want) in [(&a, 0), (&b, 0), (&buggy, 1)] {
        let o = sc.run();
        // What failed, when a run missed its expectation.
        let junit = std::fs::read_to_string(sc.out.join("planted").join("junit.xml"));
        assert_eq!(
            o.status.code(),
            Some(want),
            "{}{}\n{junit:?}",
            stdout(&o),
            stderr(&o)
        );
    }
    let (sa, sb, sbug) = (summary(&a), summary(&b), summary(&buggy));
    let o = harness(&["compare", sa.to_str().unwrap(), sb.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains(": 0 regressions"), "{}", stdout(&o));
    let o = harness(&["compare", sa.to_str().unwrap(), sbug.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("[new-anomaly]: new: G-single (lost update)"),
        "{}",
        stdout(&o)
    );
}
