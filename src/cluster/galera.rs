//! MariaDB Galera: `mariadbd` with the galera-4 provider, one per
//! namespace. Node 1 bootstraps the cluster (`--wsrep-new-cluster`); the
//! others join it by state transfer (rsync). `root` may connect without a
//! password from the bridge, which only the host and the nodes reach.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::{netns, Cluster, Node};

/// The Galera library of the `galera-4` package.
const PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

/// What must exist, and the apt package that brings it.
pub const PACKAGES: [(&str, &str); 5] = [
    (PROVIDER, "galera-4"),
    ("mariadbd", "mariadb-server"),
    ("mariadb-install-db", "mariadb-server"),
    ("mariadb", "mariadb-client"),
    ("rsync", "rsync"),
];

/// The client URL of a node.
pub fn url(n: &Node) -> String {
    format!("mysql://root@{}:3306/test", n.addr)
}

/// Creates the data directories, bootstraps node 1, creates the `root`
/// account for the bridge and the `test` database, and starts the rest.
pub fn up(c: &Cluster, deadline: Instant) -> Result<()> {
    let template = c.state.join("template");
    let out = Command::new("mariadb-install-db")
        .arg("--user=mysql")
        .arg(format!("--datadir={}", template.display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .stdin(Stdio::null())
        .output()
        .context("cannot run mariadb-install-db")?;
    if !out.status.success() {
        bail!(
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    for n in &c.nodes {
        std::fs::create_dir_all(&n.dir)?;
        netns::run(
            "cp",
            &[
                "-a",
                &template.to_string_lossy(),
                &n.data().to_string_lossy(),
            ],
        )?;
        netns::run("chown", &["-R", "mysql:mysql", &n.dir.to_string_lossy()])?;
    }
    let _ = std::fs::remove_dir_all(&template);
    let first = &c.nodes[0];
    start(c, first, true)?;
    // Node 1 alone, then the account and database the clients use.
    loop {
        let r = socket_sql(first, "SHOW STATUS LIKE 'wsrep_ready'");
        if matches!(&r, Ok(s) if s.contains("ON")) {
            break;
        }
        if Instant::now() >= deadline {
            bail!("{} did not bootstrap: {}", first.name, why(&r));
        }
        super::alive(first)?;
        std::thread::sleep(Duration::from_millis(300));
    }
    socket_sql(
        first,
        "CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY ''; \
         GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION; \
         CREATE DATABASE IF NOT EXISTS test;",
    )?;
    for n in &c.nodes[1..] {
        start(c, n, false)?;
    }
    Ok(())
}

fn why(r: &Result<String>) -> String {
    match r {
        Ok(s) => format!("answered {:?}", s.trim()),
        Err(e) => format!("{e:#}"),
    }
}

/// Starts `n`'s mariadbd in its namespace, detached; `bootstrap` makes it
/// a new cluster of its own.
pub fn start(c: &Cluster, n: &Node, bootstrap: bool) -> Result<()> {
    let peers: Vec<&str> = c.nodes.iter().map(|o| o.addr.as_str()).collect();
    let d = |p: &Path| p.to_string_lossy().into_owned();
    let mut args: Vec<String> = vec![
        "netns".into(),
        "exec".into(),
        n.ns.clone(),
        "setsid".into(),
        "mariadbd".into(),
        "--no-defaults".into(),
        "--user=mysql".into(),
        format!("--datadir={}", d(&n.data())),
        format!("--bind-address={}", n.addr),
        "--port=3306".into(),
        format!("--socket={}", d(&n.dir.join("mysqld.sock"))),
        format!("--pid-file={}", d(&n.dir.join("server.pid"))),
        format!("--log-error={}", d(&n.log())),
        "--wsrep-on=ON".into(),
        format!("--wsrep-provider={PROVIDER}"),
        format!("--wsrep-cluster-address=gcomm://{}", peers.join(",")),
        format!("--wsrep-node-address={}", n.addr),
        format!("--wsrep-node-name={}", n.name),
        "--wsrep-cluster-name=isoharness".into(),
        "--wsrep-sst-method=rsync".into(),
        "--wsrep-provider-options=gcache.size=64M".into(),
        "--binlog-format=ROW".into(),
        "--default-storage-engine=InnoDB".into(),
        "--innodb-autoinc-lock-mode=2".into(),
        "--innodb-buffer-pool-size=64M".into(),
        "--innodb-flush-log-at-trx-commit=0".into(),
        "--max-connections=300".into(),
        "--skip-name-resolve".into(),
    ];
    for o in &c.options {
        args.push(format!("--{}", o.trim_start_matches('-')));
    }
    if bootstrap {
        args.push("--wsrep-new-cluster".into());
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(n.dir.join("stdout.log"))?;
    Command::new("ip")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start mariadbd for {}", n.name))?;
    super::started(n)?;
    // In a process group of its own, setsid forks mariadbd off into a
    // session of its own: a Ctrl-C at the terminal does not reach it.
    Ok(())
}

/// Runs `sql` on `n` over TCP from the host, as `root`; the tab-separated
/// answer.
pub fn query(n: &Node, sql: &str) -> Result<String> {
    netns::run(
        "mariadb",
        &[
            "--protocol=tcp",
            "-h",
            &n.addr,
            "-P",
            "3306",
            "-u",
            "root",
            "--connect-timeout=2",
            "-N",
            "-B",
            "-e",
            sql,
        ],
    )
}

/// Runs `sql` on `n` through its socket (before `root`@`%` exists).
fn socket_sql(n: &Node, sql: &str) -> Result<String> {
    netns::run(
        "mariadb",
        &[
            "-S",
            &n.dir.join("mysqld.sock").to_string_lossy(),
            "-u",
            "root",
            "-N",
            "-B",
            "-e",
            sql,
        ],
    )
}

/// The node's `wsrep_*` status of interest.
fn wsrep(n: &Node) -> Result<(u32, String, String)> {
    let text = query(
        n,
        "SHOW STATUS WHERE Variable_name IN \
         ('wsrep_cluster_size', 'wsrep_ready', 'wsrep_local_state_comment')",
    )?;
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
            .unwrap_or_default()
    };
    let size = get("wsrep_cluster_size").parse().unwrap_or(0);
    Ok((size, get("wsrep_ready"), get("wsrep_local_state_comment")))
}

/// `Ok` when every node says `wsrep_ready = ON`, `Synced`, and a cluster of
/// all the nodes.
pub fn ready(c: &Cluster) -> Result<()> {
    let want = c.nodes.len() as u32;
    for n in &c.nodes {
        let (size, ready, state) = wsrep(n).map_err(|e| anyhow!("{}: {e:#}", n.name))?;
        if size != want || ready != "ON" || state != "Synced" {
            bail!(
                "{}: wsrep_cluster_size = {size} (want {want}), wsrep_ready = {ready}, state {state}",
                n.name
            );
        }
    }
    Ok(())
}

/// One line about `n` for `cluster status`.
pub fn node_status(n: &Node) -> String {
    match wsrep(n) {
        Ok((size, ready, state)) => {
            format!("wsrep_cluster_size={size} wsrep_ready={ready} state={state}")
        }
        Err(e) => format!("down ({})", first_line(&e)),
    }
}

fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}").lines().next().unwrap_or("").to_string()
}
