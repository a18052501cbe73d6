//! Real multi-node clusters on this machine (`harness cluster`): MariaDB
//! Galera, PostgreSQL streaming replication and Patroni, each node in its
//! own network namespace on the harness's bridge.
//!
//! Needs root (namespaces, veth, servers run as `mysql` / `postgres`) and
//! the packages `.ci/services` installs (galera-4, mariadb-server,
//! postgresql-15, patroni, etcd-server). Every test brings its cluster down when it ends, also
//! when it fails (a guard's `Drop`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Clusters share the bridge and node addresses: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A cluster a test started; brought down (processes, namespaces, data)
/// when dropped.
struct Cluster {
    kind: &'static str,
    state: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// A state folder for a `kind` cluster; nothing started yet.
    fn new(kind: &'static str) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        Cluster {
            kind,
            state: dir.path().join("state"),
            _dir: dir,
        }
    }

    fn state(&self) -> &str {
        self.state.to_str().unwrap()
    }

    /// `harness cluster ACTION KIND --state DIR EXTRA...`.
    fn cmd(&self, action: &str, extra: &[&str]) -> Output {
        let mut args = vec!["cluster", action, self.kind, "--state", self.state()];
        args.extend_from_slice(extra);
        harness(&args)
    }

    /// `cluster up`, asserting it worked; its standard output.
    fn up(&self, extra: &[&str]) -> String {
        let t = Instant::now();
        let o = self.cmd("up", extra);
        assert!(
            o.status.success(),
            "cluster up {}: {}{}",
            self.kind,
            stdout(&o),
            stderr(&o)
        );
        eprintln!(
            "cluster up {} took {:.1} s",
            self.kind,
            t.elapsed().as_secs_f64()
        );
        stdout(&o)
    }

    /// A mini-transaction run at `level` with the database's `isolation`.
    fn run_mini(&self, out: &Path, level: &str, isolation: &str, args: &[&str]) -> Output {
        let mut all = vec![
            "--workload",
            "mini",
            "--level",
            level,
            "--isolation",
            isolation,
        ];
        all.extend_from_slice(args);
        self.run(out, &all)
    }

    /// The runs' tables (`isoharness_*`) on each node of a Galera
    /// cluster, by node name, as its `urls.txt` lists them.
    fn run_tables(&self) -> BTreeMap<String, Vec<String>> {
        let urls = std::fs::read_to_string(self.state.join("urls.txt")).unwrap();
        let nodes = urls
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let [name, _role, url] = w[..] else {
                    return None;
                };
                Some((name.to_string(), url.to_string()))
            });
        nodes
            .map(|(name, url)| (name, mysql_tables(&url, "isoharness_")))
            .collect()
    }

    /// `harness run --cluster KIND --cluster-state DIR ARGS`.
    fn run(&self, out: &Path, args: &[&str]) -> Output {
        let mut all = vec![
            "run",
            "--cluster",
            self.kind,
            "--cluster-state",
            self.state(),
            "--out",
            out.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        harness(&all)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let o = self.cmd("down", &[]);
        if !o.status.success() {
            eprintln!("cluster down {} failed: {}", self.kind, stderr(&o));
        }
    }
}

/// What a Galera node's log says about its views (suspected peers, views
/// installed, primary or not), so that a failure explains itself.
fn views(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            // Not the provider's option list, which names evs.suspect_timeout.
            !l.contains("passing config")
                && [
                    "suspect",
                    "view(",
                    "non-primary",
                    "non_prim",
                    "new cluster view",
                ]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// What the clients of the nodes `node` picks saw, by second from `from`
/// (a fault's start) and outcome (status and the error's first words).
fn by_second(
    h: &history::History,
    from: u64,
    node: impl Fn(Option<&str>) -> bool,
) -> BTreeMap<(i64, String), usize> {
    let mut seen = BTreeMap::new();
    for t in h.txns.iter().filter(|t| node(t.node.as_deref())) {
        let e = t.error.as_deref().unwrap_or("-");
        let e = e.get(..e.len().min(30)).unwrap_or(e);
        let s = (t.start.unwrap_or(0) as i64 - from as i64).div_euclid(1_000_000_000);
        *seen.entry((s, format!("{:?} {e}", t.status))).or_default() += 1;
    }
    seen
}

/// The harness's namespaces whose names start with `prefix`.
fn namespaces(prefix: &str) -> Vec<String> {
    let o = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    stdout(&o)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// How many transactions each node served, split into read-only and
/// writing ones.
fn by_node(h: &history::History) -> BTreeMap<String, (usize, usize)> {
    let mut m: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for t in &h.txns {
        let node = t
            .node
            .as_deref()
            .map(str::to_string)
            .expect("every transaction names its node");
        let e = m.entry(node).or_default();
        if t.is_read_only() {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    m
}

/// A verdict, not an error: exit 0 (ok) or 1 (anomaly).
fn assert_verdict(o: &Output) {
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "expected a verdict: {}{}",
        stdout(o),
        stderr(o)
    );
}

#[test]
fn galera_up_run_kill_the_harness_reclaim_and_down() {
    let _g = serial();
    let c = Cluster::new("galera");
    let text = c.up(&["--nodes", "3"]);
    assert_eq!(text.matches("mysql://root@198.18.0.").count(), 3, "{text}");
    let urls = std::fs::read_to_string(c.state.join("urls.txt")).unwrap();
    assert_eq!(urls.lines().filter(|l| !l.starts_with('#')).count(), 3);
    assert!(c.cmd("status", &[]).status.success());
    // A second `up` leaves the ready cluster alone.
    let again = c.up(&["--nodes", "3"]);
    assert!(again.contains("already up"), "{again}");

    // A short run: every transaction names the node that served it, and
    // the clients are spread over all three.
    let out = tempfile::tempdir().unwrap();
    let o = c.run_mini(
        out.path(),
        "si",
        "serializable",
        &["--txns", "300", "--clients", "6"],
    );
    assert_verdict(&o);
    let h = read_history(&run_dir(out.path()), 300);
    let nodes: BTreeSet<String> = by_node(&h).into_keys().collect();
    assert_eq!(
        nodes,
        ["galera-1", "galera-2", "galera-3"]
            .map(String::from)
            .into(),
        "the clients are spread over the nodes"
    );

    // The harness SIGKILLed in the middle of a run with a node killed by
    // its nemesis: the next `up` rebuilds a ready cluster.
    let out2 = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["run", "--cluster", "galera", "--cluster-state", c.state()])
        .args(["--out", out2.path().to_str().unwrap()])
        .args([
            "--workload",
            "mini",
            "--level",
            "si",
            "--isolation",
            "serializable",
        ])
        .args([
            "--duration",
            "60s",
            "--nemesis",
            "kill:target=galera-2,at=1s,for=50s",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let st = c.cmd("status", &[]);
    assert!(!st.status.success(), "galera-2 is down: {}", stdout(&st));
    let rebuilt = c.up(&["--nodes", "3"]);
    assert!(rebuilt.contains("ready in"), "{rebuilt}");
    assert!(c.cmd("status", &[]).status.success());

    // `down` removes everything, and says so again when there is nothing.
    assert!(c.cmd("down", &[]).status.success());
    assert!(namespaces("isoh-galera-").is_empty());
    assert!(!c.state.exists());
    assert!(c.cmd("down", &[]).status.success());
    let st = c.cmd("status", &[]);
    assert_eq!(st.status.code(), Some(2));
}

#[test]
fn galera_partition_and_kill_fail_cleanly_and_heal() {
    let _g = serial();
    let c = Cluster::new("galera");
    c.up(&["--nodes", "3"]);
    let out = tempfile::tempdir().unwrap();
    let o = c.run_mini(
        out.path(),
        "si",
        "serializable",
        &[
            "--duration",
            "36s",
            "--clients",
            "6",
            "--statement-timeout",
            "2s",
            "--nemesis",
            "partition:target=galera-3,at=2s,for=30s",
        ],
    );
    // Serializable Galera keeps SI across nodes: no anomaly at si.
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let h = history::read_jsonl_file(&run_dir(out.path()).join("history.jsonl")).unwrap();
    assert_eq!(h.faults.len(), 1);
    let f = &h.faults[0];
    assert_eq!(
        (f.kind.as_str(), f.target.as_deref(), f.applied),
        ("partition", Some("galera-3"), true)
    );
    assert_eq!(
        f.detail.as_deref(),
        Some("isolate: galera-3 | galera-1 galera-2")
    );
    let (from, to) = (f.start, f.end.expect("healed"));
    // A client keeps its node across reconnects (client c on galera-(c mod
    // 3 + 1)); the write values name the client.
    let moved: Vec<(u32, &str)> = h
        .txns
        .iter()
        .filter_map(|t| Some((t.node.as_deref()?, t.ops.iter().find_map(|o| o.written())?)))
        .map(|(node, (_, v))| (workloads::write_id_client(v), node))
        .filter(|&(client, node)| node != format!("galera-{}", client % 3 + 1))
        .collect();
    assert!(
        moved.is_empty(),
        "{} transactions off their client's node (client, node), first: {:?}",
        moved.len(),
        &moved[..moved.len().min(10)]
    );
    // The cut-off node refuses work with 1047, a clean `fail`, once it has
    // declared its peers gone and installed a non-primary view (6 s after
    // the cut on an idle machine; on a loaded CI machine once not within
    // 20 s, hence a 30 s partition); its clients back off instead of
    // spinning (a few hundred refusals, not tens of thousands).
    let refused: Vec<&history::Txn> = h
        .txns
        .iter()
        .filter(|t| t.error.as_deref().is_some_and(|e| e.starts_with("1047")))
        .collect();
    // What galera-3's clients saw, second by second from the cut, so that
    // a failure explains itself.
    let seen = by_second(&h, from, |n| n == Some("galera-3"));
    eprintln!("galera-3 by second from the cut: {seen:?}");
    let n3 = views(&c.state.join("n3").join("server.log"));
    eprintln!("galera-3's views:\n{n3}");
    assert!(
        !refused.is_empty(),
        "galera-3 refused no work while cut off; it saw {seen:?}; its views: {n3}"
    );
    assert!(
        refused
            .iter()
            .all(|t| t.status == history::Status::Fail && t.node.as_deref() == Some("galera-3")),
        "1047 is a fail on the cut-off node"
    );
    assert!(refused.len() < 1000, "{} refusals", refused.len());
    // The report names the partition's shape on its window.
    let html = std::fs::read_to_string(run_dir(out.path()).join("report.html")).unwrap();
    assert!(html.contains(">partition isolate</text>"), "no named band");
    // The majority commits again once Galera has evicted the cut-off node
    // (evs.suspect_timeout, 5 s; commits stall until then: 6.4 s after the
    // cut on an idle machine, above 12 s once on a loaded CI machine). The statement
    // timeout is well below it, so that clients stuck in a stalled commit
    // give up and try again after the eviction, not only at the heal.
    let majority: Vec<u64> = h
        .txns
        .iter()
        .filter(|t| t.status == history::Status::Ok && t.node.as_deref() != Some("galera-3"))
        .filter_map(|t| t.start)
        .filter(|&s| s > from && s < to)
        .map(|s| (s - from) / 1_000_000)
        .collect();
    // What the majority saw, second by second, and what its nodes logged,
    // so that a failure explains itself.
    let per_s = by_second(&h, from, |n| n != Some("galera-3"));
    eprintln!("the majority's commits in the cut: {}", majority.len());
    // The nodes' logs are read only when the assertion fails.
    let log = |n: &str| views(&c.state.join(n).join("server.log"));
    assert!(
        majority.iter().any(|&ms| ms > 7_000),
        "the majority commits while galera-3 is cut off (commits at ms {majority:?}, \
         the heal at ms {}); it saw {per_s:?}; galera-1's views:\n{}\ngalera-2's views:\n{}",
        (to - from) / 1_000_000,
        log("n1"),
        log("n2")
    );
    // The cluster heals: all three nodes synced again.
    let t = Instant::now();
    while !c.cmd("status", &[]).status.success() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the cluster did not heal"
        );
        std::thread::sleep(Duration::from_secs(1));
    }

    // A node killed with SIGKILL mid-run and started again: its clients'
    // transactions in the window are not `ok`, it rejoins, and the check
    // stays sound (no anomaly at si).
    let out2 = tempfile::tempdir().unwrap();
    let before = c.run_tables();
    let o = c.run_mini(
        out2.path(),
        "si",
        "serializable",
        &[
            "--duration",
            "10s",
            "--clients",
            "6",
            "--statement-timeout",
            "5s",
            // After the partition above, a rejoining node can hold up the
            // tables' setup for a while.
            "--connect-timeout",
            "40s",
            "--nemesis",
            "kill:target=galera-2,at=2s,for=4s",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let h = history::read_jsonl_file(&run_dir(out2.path()).join("history.jsonl")).unwrap();
    assert_eq!(h.faults.len(), 1, "{:?}", h.faults);
    let f = &h.faults[0];
    assert_eq!(
        (f.kind.as_str(), f.target.as_deref(), f.applied),
        ("kill", Some("galera-2"), true)
    );
    let (from, to) = (f.start + 500_000_000, f.end.expect("started again"));
    let served_while_dead = h.txns.iter().filter(|t| {
        t.status == history::Status::Ok
            && t.node.as_deref() == Some("galera-2")
            && t.start.is_some_and(|s| s > from && s < to)
    });
    assert_eq!(
        served_while_dead.count(),
        0,
        "a killed node commits nothing"
    );
    let t = Instant::now();
    while !c.cmd("status", &[]).status.success() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "galera-2 did not rejoin"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    // The run dropped its tables, on every node, the killed one included.
    let after = c.run_tables();
    eprintln!("tables before the kill run {before:?}, after {after:?}");
    assert_eq!(after, before, "{}", stdout(&o));
    assert!(after.values().all(Vec::is_empty), "{after:?}");
    assert!(!stdout(&o).contains("tables kept"), "{}", stdout(&o));
}

#[test]
fn pg_replica_reads_on_standbys_writes_on_the_primary() {
    let _g = serial();
    let c = Cluster::new("pg-replica");
    let text = c.up(&["--nodes", "3"]);
    assert!(
        text.contains("primary") && text.matches("standby").count() == 2,
        "{text}"
    );
    // Standbys refuse SERIALIZABLE: said before anything runs.
    let refused = tempfile::tempdir().unwrap();
    let o = c.run(refused.path(), &["--level", "ser"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--isolation repeatable-read"),
        "{}",
        stderr(&o)
    );
    let out = tempfile::tempdir().unwrap();
    let o = c.run_mini(
        out.path(),
        "si",
        "repeatable-read",
        &["--txns", "400", "--clients", "4"],
    );
    assert_verdict(&o);
    let h = read_history(&run_dir(out.path()), 400);
    let m = by_node(&h);
    // Writes only on the primary; the standbys serve read-only ones.
    assert_eq!(m.get("pg-1").map_or(0, |x| x.0), 0, "{m:?}");
    assert!(m["pg-1"].1 > 0, "{m:?}");
    for s in ["pg-2", "pg-3"] {
        let (reads, writes) = m.get(s).copied().unwrap_or_default();
        assert!(reads > 0 && writes == 0, "{s}: {m:?}");
    }

    // A standby killed with SIGKILL mid-run and started again: the fault
    // line names it, and it streams again afterwards.
    let out2 = tempfile::tempdir().unwrap();
    let o = c.run_mini(
        out2.path(),
        "si",
        "repeatable-read",
        &[
            "--duration",
            "6s",
            "--clients",
            "4",
            "--nemesis",
            "kill:target=pg-2,at=1s,for=2s",
            "--nemesis",
            "partition:target=random,at=3500ms/5s,for=1s,seed=5",
            "--nemesis",
            "netem:target=pg-3,at=1s,for=2s,delay=30ms,jitter=5ms",
        ],
    );
    assert_verdict(&o);
    let h = history::read_jsonl_file(&run_dir(out2.path()).join("history.jsonl")).unwrap();
    assert_eq!(h.faults.len(), 4, "{:?}", h.faults);
    let f = h.faults.iter().find(|f| f.kind == "kill").unwrap();
    assert_eq!(
        (f.kind.as_str(), f.target.as_deref(), f.applied),
        ("kill", Some("pg-2"), true)
    );
    assert!(f.end.is_some(), "the node was started again");
    // Random partitions: each says its shape and both sides, every node
    // on a side; the same seed draws the same shapes (see the unit test).
    let parts: Vec<&history::Fault> = h.faults.iter().filter(|f| f.kind == "partition").collect();
    assert_eq!(parts.len(), 2, "{parts:?}");
    for p in parts {
        let d = p.detail.as_deref().unwrap_or_default();
        assert!(p.applied && p.end.is_some(), "{p:?}");
        assert!(
            ["isolate: ", "halves: ", "bridge: "]
                .iter()
                .any(|s| d.starts_with(s))
                && d.contains(" | ")
                && ["pg-1", "pg-2", "pg-3"].iter().all(|n| d.contains(n)),
            "{d}"
        );
    }
    // netem: applied where the kernel has it, else said plainly.
    let n = h.faults.iter().find(|f| f.kind == "netem").unwrap();
    let d = n.detail.as_deref().unwrap_or_default();
    if n.applied {
        assert!(d.starts_with("delay=30ms jitter=5ms"), "{d}");
    } else {
        assert!(d.contains("no netem queueing discipline"), "{d}");
    }
    let t = Instant::now();
    while !c.cmd("status", &[]).status.success() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "pg-2 does not stream again"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    assert!(c.cmd("down", &[]).status.success());
    assert!(namespaces("isoh-pg-").is_empty());
}

#[test]
fn galera_without_causality_checks_serves_stale_reads() {
    let _g = serial();
    let c = Cluster::new("galera");
    // `run --cluster-opt` brings the cluster up with the option first.
    let stale = |opt: &str, seed: &str| {
        let out = tempfile::tempdir().unwrap();
        let o = c.run_mini(
            out.path(),
            "strong-si",
            "serializable",
            &[
                "--cluster-opt",
                opt,
                "--keys",
                "10",
                "--txns",
                "4000",
                "--seed",
                seed,
            ],
        );
        (o, out)
    };
    // The stale read is not forced: a node must serve a read in the
    // milliseconds before it applies a commit made on another. A run of
    // 2,000 transactions once saw none (CI); up to three runs of 4,000.
    let mut tries = Vec::new();
    let (o, _out) = loop {
        let (o, out) = stale("wsrep-sync-wait=0", &(tries.len() + 1).to_string());
        tries.push(o.status.code());
        if o.status.code() != Some(0) || tries.len() == 3 {
            break (o, out);
        }
    };
    let text = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "exit codes {tries:?}\n{text}{}",
        stderr(&o)
    );
    assert!(text.contains("stale read"), "{text}");
    // The counterexample shows the nodes: the reader's and the writer's.
    let first = text
        .split("\n\n")
        .find(|b| b.contains("(stale read):"))
        .unwrap();
    let nodes: BTreeSet<&str> = ["galera-1", "galera-2", "galera-3"]
        .into_iter()
        .filter(|n| first.contains(&format!("node {n},")))
        .collect();
    assert!(nodes.len() >= 2, "{first}");
    // With causality checks on, no stale read.
    let (o, _out) = stale("wsrep-sync-wait=1", "1");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("options: wsrep-sync-wait=1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_missing_package_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["cluster", "up", "galera", "--state"])
        .arg(dir.path().join("s"))
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("apt package `iproute2`"), "{err}");
}

#[test]
fn a_counterexample_names_the_nodes() {
    // A read on galera-2 that misses a commit galera-1 acknowledged before
    // it began: a stale read, shown with both nodes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    std::fs::write(
        &path,
        r#"{"type":"header","version":1}
{"id":0,"session":0,"status":"ok","start":0,"end":100,"ops":[["w",1,11]],"node":"galera-1"}
{"id":1,"session":1,"status":"ok","start":200,"end":300,"ops":[["r",1,null]],"node":"galera-2"}
{"type":"end","txns":2}
"#,
    )
    .unwrap();
    let o = harness(&["check", path.to_str().unwrap(), "--level", "sser"]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(text.contains("stale read"), "{text}");
    assert!(text.contains("T0 (session 0, node galera-1, ok)"), "{text}");
    assert!(text.contains("T1 (session 1, node galera-2, ok)"), "{text}");
    let o = harness(&["check", path.to_str().unwrap(), "--level", "sser", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let nodes: Vec<&str> = v["anomalies"][0]["txns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["node"].as_str())
        .collect();
    assert_eq!(nodes.len(), 2, "{v}");
}

/// The processes whose command line names `dir` (a cluster's state folder).
fn processes_under(dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&*dir) {
            found.push(cmd);
        }
    }
    found
}

#[test]
fn patroni_up_status_run_on_the_leader_and_down() {
    let _g = serial();
    let c = Cluster::new("patroni");
    // An unknown setting: one line, exit 2, nothing started.
    let o = c.cmd("up", &["--cluster-opt", "wal_level=logical"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown --cluster-opt"),
        "{}",
        stderr(&o)
    );
    assert!(namespaces("isoh-patroni-").is_empty());

    let t = Instant::now();
    let text = c.up(&["--nodes", "3"]);
    assert!(t.elapsed() < Duration::from_secs(60), "{text}");
    assert_eq!(text.matches(" member ").count(), 3, "{text}");
    assert!(text.contains("target_session_attrs=read-write"), "{text}");
    let st = c.cmd("status", &[]);
    let s = stdout(&st);
    assert!(st.status.success(), "{s}{}", stderr(&st));
    assert!(s.contains("leader: patroni-1"), "{s}");
    assert_eq!(s.matches(" replica running, lag ").count(), 2, "{s}");
    assert!(s.contains("synchronous_mode=off"), "{s}");
    assert!(c.up(&["--nodes", "3"]).contains("already up"));

    // A short run: every transaction on the leader.
    let out = tempfile::tempdir().unwrap();
    let o = c.run_mini(
        out.path(),
        "strong-session-si",
        "repeatable-read",
        &["--txns", "200", "--clients", "4"],
    );
    assert_verdict(&o);
    let h = read_history(&run_dir(out.path()), 200);
    let nodes: BTreeSet<String> = by_node(&h).into_keys().collect();
    assert_eq!(nodes, ["patroni-1".to_string()].into(), "{}", stdout(&o));

    // `down` leaves no namespace, no process, no bridge (unless another
    // cluster still uses it).
    assert!(c.cmd("down", &[]).status.success());
    assert!(namespaces("isoh-patroni-").is_empty());
    assert_eq!(processes_under(&c.state), Vec::<String>::new());
    assert!(!c.state.exists());
    if namespaces("isoh-").is_empty() {
        let bridge = Command::new("ip")
            .args(["link", "show", "dev", "isoh-br0"])
            .output()
            .unwrap();
        assert!(!bridge.status.success(), "the bridge is still there");
    }
    assert!(c.cmd("down", &[]).status.success());
}

#[test]
fn patroni_clients_follow_the_new_leader_after_a_failover() {
    let _g = serial();
    let c = Cluster::new("patroni");
    c.up(&["--nodes", "3"]);
    // The leader (node 1 after `up`) killed, all of it (etcd, Patroni,
    // PostgreSQL), 5 s into the run, and started again 15 s later: a
    // replica takes over once the leader key expires (ttl 10 s).
    let out = tempfile::tempdir().unwrap();
    let o = c.run_mini(
        out.path(),
        "strong-session-si",
        "repeatable-read",
        &[
            "--duration",
            "25s",
            "--clients",
            "4",
            "--nemesis",
            "kill:target=patroni-1,at=5s,for=15s",
        ],
    );
    // Asynchronous replication may lose the old leader's last commits:
    // an anomaly is a fair verdict here.
    assert_verdict(&o);
    let h = history::read_jsonl_file(&run_dir(out.path()).join("history.jsonl")).unwrap();
    let f = h.faults.iter().find(|f| f.kind == "kill").unwrap();
    assert_eq!((f.target.as_deref(), f.applied), (Some("patroni-1"), true));
    let ok_on = |t: &&history::Txn| t.status == history::Status::Ok;
    let before: BTreeSet<String> = (h.txns.iter().filter(ok_on))
        .filter(|t| t.end.is_some_and(|e| e < f.start))
        .filter_map(|t| t.node.as_deref().map(str::to_string))
        .collect();
    // The clients' transactions: the final reads come after them.
    let after: BTreeSet<String> = (workload_txns(&h).filter(ok_on))
        .filter(|t| t.start.is_some_and(|s| s > f.start + 1_000_000_000))
        .filter_map(|t| t.node.as_deref().map(str::to_string))
        .collect();
    assert_eq!(before, ["patroni-1".to_string()].into(), "{}", stdout(&o));
    assert!(!after.is_empty(), "the clients stopped: {}", stdout(&o));
    assert!(
        !after.contains("patroni-1"),
        "the dead leader committed: {after:?}"
    );
    // Every client went on after the failover: each committed on the new
    // leader (a reconnected client is a new session).
    let late_sessions = (workload_txns(&h).filter(ok_on))
        .filter(|t| t.start.is_some_and(|s| s > f.start + 1_000_000_000))
        .map(|t| t.session)
        .collect::<BTreeSet<u64>>();
    assert!(late_sessions.len() >= 4, "{late_sessions:?}");
    assert!(!stdout(&o).contains("stopped"), "{}", stdout(&o));
    let st = stdout(&c.cmd("status", &[]));
    assert!(!st.contains("leader: patroni-1 "), "{st}");
}

/// A run on a Patroni cluster whose leader is cut off from the other
/// nodes 5 s in, for 15 s (longer than the ttl of 10 s), checked at
/// strong-si: its exit code, standard output and history.
fn isolate_the_leader(c: &Cluster, out: &Path) -> (Output, history::History) {
    let o = c.run_mini(
        out,
        "strong-si",
        "repeatable-read",
        &[
            "--duration",
            "30s",
            "--clients",
            "8",
            "--keys",
            "10",
            "--nemesis",
            "partition:target=leader,at=5s,for=15s",
        ],
    );
    let h = history::read_jsonl_file(&run_dir(out).join("history.jsonl")).unwrap();
    (o, h)
}

/// Whether a run met Patroni 3.0.2's leader-lock bug (its etcd3
/// `_update_leader` writes the leader key without a condition; fixed
/// upstream by patroni/patroni#2689): the cut-off leader, still busy
/// demoting itself when the partition heals, writes the leader key the new
/// leader holds, promotes its old data, and the new leader's acknowledged
/// commits are gone. Its mark: the leadership left the cut-off node
/// (patroni-1) and came back to it, seen by the run (`changes`, the leader
/// changes it saw) or, when that came too late for the run to see it, by
/// `cluster status` after the run (`status`). The node's own log line
/// (`updated leader lock during demoting self`) is reported, not required:
/// in the runs of docs/findings/patroni-15-failover.md it was not always
/// there.
fn patroni_took_the_lock_back(changes: &[&history::Fault], status: &str) -> bool {
    let to = |l: &&history::Fault| {
        l.detail
            .as_deref()
            .and_then(|d| d.split(" → ").nth(1))
            .map(str::to_string)
    };
    let away = changes
        .iter()
        .filter_map(to)
        .any(|t| !t.starts_with("patroni-1"));
    let back = changes
        .iter()
        .filter_map(to)
        .any(|t| t.starts_with("patroni-1"));
    away && (back || status.contains("leader: patroni-1 "))
}

/// What `scenarios/patroni.toml` established, on one fault: with
/// asynchronous replication the cut-off leader acknowledges commits the
/// new leader never gets; with `synchronous_mode=strict` those commits
/// wait instead, and nothing acknowledged is lost. Checked at strong-si
/// (PostgreSQL's repeatable read on one leader is snapshot isolation in
/// real time), so the loss shows whatever the clients do after the
/// failover: the final reads, which start after every commit, miss the
/// lost writes (exit 1); with strict nothing is missing (exit 0), unless
/// the run met Patroni 3.0.2's leader-lock bug (2 runs in 20 here; see
/// docs/findings/patroni-15-failover.md), which its log must then show.
/// Both runs fail over, and both name the leader they cut off.
#[test]
fn patroni_isolated_leader_loses_commits_unless_synchronous_mode_is_strict() {
    let _g = serial();
    let c = Cluster::new("patroni");
    for (mode, code) in [("off", 1), ("strict", 0)] {
        c.up(&[
            "--nodes",
            "3",
            "--cluster-opt",
            &format!("synchronous_mode={mode}"),
        ]);
        let out = tempfile::tempdir().unwrap();
        let log = c.state.join("n1").join("server.log");
        let seen = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);
        let (o, h) = isolate_the_leader(&c, out.path());
        let text = format!("synchronous_mode={mode}: {}{}", stdout(&o), stderr(&o));
        let changes: Vec<&history::Fault> =
            h.faults.iter().filter(|f| f.is_observation()).collect();
        if mode == "strict" && o.status.code() == Some(1) {
            // The one way strict lost commits here: Patroni 3.0.2's lock
            // bug, the leadership back on the cut-off node.
            let log = std::fs::read(&log).unwrap_or_default();
            let tail = String::from_utf8_lossy(log.get(seen..).unwrap_or_default());
            let lock_line = tail.contains("updated leader lock during demoting self");
            let status = stdout(&c.cmd("status", &[]));
            assert!(
                patroni_took_the_lock_back(&changes, &status),
                "strict lost commits without the lock bug: {text}\ncluster status after the run:\n{status}\nleader changes: {:?}\npatroni-1's log has the lock line: {lock_line}",
                changes.iter().map(|f| f.detail.as_deref().unwrap_or("")).collect::<Vec<_>>()
            );
            eprintln!("synchronous_mode=strict met Patroni 3.0.2's lock bug (patroni-1 took the leader key back; its log has the lock line: {lock_line})");
        } else {
            assert_eq!(o.status.code(), Some(code), "{text}");
        }
        if code == 1 {
            // A lost write shows as a later read of the version it
            // replaced: a stale read, or a lost update when a later
            // transaction also overwrote that version.
            let out = stdout(&o);
            assert!(
                out.contains("stale read") || out.contains("lost update"),
                "{text}"
            );
        }
        let f = h.faults.iter().find(|f| f.kind == "partition").unwrap();
        assert!(f.applied, "{text}");
        assert!(
            f.detail
                .as_deref()
                .unwrap_or("")
                .starts_with("leader patroni-1:"),
            "{f:?}"
        );
        assert!(
            changes.iter().any(|l| l
                .detail
                .as_deref()
                .unwrap_or("")
                .contains("patroni-1 → patroni-")),
            "no failover seen: {changes:?}\n{text}"
        );
        // The final reads ran, on the leader of the run's end: the node
        // the last change of leader went to (Patroni does not fail back
        // on its own, so that is not the node cut off, unless the
        // timeline shows it took the key again).
        let last_leader = changes
            .iter()
            .filter_map(|l| l.detail.as_deref()?.split(" → ").nth(1))
            .filter_map(|to| to.split_whitespace().next())
            .next_back()
            .unwrap_or("")
            .to_string();
        let finals: Vec<&history::Txn> = h.txns.iter().filter(|t| is_final_read(t)).collect();
        assert!(
            finals.iter().any(|t| t.status == history::Status::Ok
                && t.node.as_deref() == Some(last_leader.as_str())),
            "final reads {:?}, leader changes {:?}\n{text}",
            finals
                .iter()
                .map(|t| (t.status, t.node.clone()))
                .collect::<Vec<_>>(),
            changes.iter().map(|l| l.detail.clone()).collect::<Vec<_>>()
        );
    }
    assert!(c.cmd("down", &[]).status.success());
}
