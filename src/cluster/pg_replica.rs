//! PostgreSQL 15 streaming replication: node 1 is the primary, every other
//! node an asynchronous hot standby cloned from it with `pg_basebackup`.
//! Every server runs as `postgres` in its namespace on port 5432 of its
//! own address, with its socket in its own folder; `postgres` may connect
//! without a password from the bridge, which only the host and the nodes
//! reach.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::{alive, netns, Cluster, Node};

/// The PostgreSQL 15 programs.
const BIN: &str = "/usr/lib/postgresql/15/bin";

/// What must exist, and the apt package that brings it.
pub const PACKAGES: [(&str, &str); 4] = [
    ("/usr/lib/postgresql/15/bin/postgres", "postgresql-15"),
    ("/usr/lib/postgresql/15/bin/initdb", "postgresql-15"),
    ("/usr/lib/postgresql/15/bin/pg_basebackup", "postgresql-15"),
    ("psql", "postgresql-client-15"),
];

/// The client URL of a node.
pub fn url(n: &Node) -> String {
    format!("postgres://postgres@{}:5432/postgres", n.addr)
}

fn bin(p: &str) -> String {
    format!("{BIN}/{p}")
}

/// Runs `prog args` as `postgres` (from the host's namespace).
fn as_postgres(prog: &str, args: &[&str]) -> Result<String> {
    let mut all = vec!["-u", "postgres", "--", prog];
    all.extend_from_slice(args);
    netns::run("runuser", &all)
}

/// Initializes the primary, starts it, clones each standby from it and
/// starts them.
pub fn up(c: &Cluster, deadline: Instant) -> Result<()> {
    for n in &c.nodes {
        std::fs::create_dir_all(&n.dir)?;
    }
    netns::run(
        "chown",
        &["-R", "postgres:postgres", &c.state.to_string_lossy()],
    )?;
    let primary = &c.nodes[0];
    as_postgres(
        &bin("initdb"),
        &[
            "-D",
            &primary.data().to_string_lossy(),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ],
    )?;
    let hba = primary.data().join("pg_hba.conf");
    let mut text = std::fs::read_to_string(&hba)?;
    text.push_str(
        "\n# the harness's bridge (only the host and the cluster's nodes are on it)\n\
         host all all 198.18.0.0/24 trust\n\
         host replication all 198.18.0.0/24 trust\n",
    );
    std::fs::write(&hba, text)?;
    start(c, primary)?;
    // Until the primary answers; at once when its server is gone.
    loop {
        match psql(primary, "SELECT 1") {
            Ok(_) => break,
            Err(e) if Instant::now() >= deadline => bail!("{}: {e:#}", primary.name),
            Err(_) => {
                std::thread::sleep(Duration::from_millis(300));
                alive(primary)?;
            }
        }
    }
    for n in &c.nodes[1..] {
        as_postgres(
            &bin("pg_basebackup"),
            &[
                "-h",
                &primary.addr,
                "-p",
                "5432",
                "-U",
                "postgres",
                "-D",
                &n.data().to_string_lossy(),
                "-X",
                "stream",
                "-c",
                "fast",
                "-R",
                "--no-sync",
            ],
        )
        .with_context(|| format!("cloning {}", n.name))?;
        // Named, so that pg_stat_replication says which standby streams.
        let auto = n.data().join("postgresql.auto.conf");
        let mut text = std::fs::read_to_string(&auto).unwrap_or_default();
        text.push_str(&format!(
            "primary_conninfo = 'host={} port=5432 user=postgres application_name={}'\n",
            primary.addr, n.name
        ));
        std::fs::write(&auto, text)?;
        start(c, n)?;
    }
    Ok(())
}

/// Starts `n`'s postgres in its namespace, detached.
pub fn start(c: &Cluster, n: &Node) -> Result<()> {
    let mut args: Vec<String> = vec![
        "netns".into(),
        "exec".into(),
        n.ns.clone(),
        "setsid".into(),
        "runuser".into(),
        "-u".into(),
        "postgres".into(),
        "--".into(),
        bin("postgres"),
        "-D".into(),
        n.data().to_string_lossy().into_owned(),
        "-c".into(),
        format!("listen_addresses={}", n.addr),
        "-c".into(),
        "port=5432".into(),
        "-c".into(),
        format!("unix_socket_directories={}", n.dir.display()),
        "-c".into(),
        "max_connections=300".into(),
        "-c".into(),
        "fsync=off".into(),
        "-c".into(),
        "wal_level=replica".into(),
        "-c".into(),
        "max_wal_senders=16".into(),
        "-c".into(),
        "hot_standby=on".into(),
        "-c".into(),
        "shared_buffers=32MB".into(),
        // Multi-key writers in random key order deadlock often; found after
        // the default 1 s each, they would stall a run to a few a second.
        "-c".into(),
        "deadlock_timeout=100ms".into(),
        "-c".into(),
        format!("log_directory={}", n.dir.display()),
        "-c".into(),
        format!("external_pid_file={}", n.dir.join("server.pid").display()),
    ];
    for o in &c.options {
        args.push("-c".into());
        args.push(o.trim_start_matches('-').to_string());
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(n.log())?;
    Command::new("ip")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start postgres for {}", n.name))?;
    super::started(n)?;
    Ok(())
}

/// Runs `sql` on `n` over TCP from the host; the unaligned answer.
pub fn psql(n: &Node, sql: &str) -> Result<String> {
    Command::new("psql")
        .args([
            "-h", &n.addr, "-p", "5432", "-U", "postgres", "-d", "postgres",
        ])
        .args(["-X", "-A", "-t", "-q", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "2")
        .stdin(Stdio::null())
        .output()
        .context("cannot run psql")
        .and_then(|o| {
            if o.status.success() {
                Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
            } else {
                Err(anyhow!(
                    "{}",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .next()
                        .unwrap_or("psql failed")
                ))
            }
        })
}

/// `Ok` when the primary runs, every standby is in recovery, and the
/// primary's `pg_stat_replication` shows each standby streaming.
pub fn ready(c: &Cluster) -> Result<()> {
    let primary = &c.nodes[0];
    let streaming = psql(
        primary,
        "SELECT string_agg(application_name, ',') FROM pg_stat_replication WHERE state = 'streaming'",
    )
    .map_err(|e| anyhow!("{}: {e:#}", primary.name))?;
    let streaming: Vec<&str> = streaming.split(',').collect();
    for n in &c.nodes[1..] {
        if psql(n, "SELECT pg_is_in_recovery()").map_err(|e| anyhow!("{}: {e:#}", n.name))? != "t" {
            bail!("{}: not a standby", n.name);
        }
        if !streaming.contains(&n.name.as_str()) {
            bail!("{}: not streaming from {}", n.name, primary.name);
        }
    }
    Ok(())
}

/// Words for a standby's `pg_is_in_recovery()|wal receiver status` answer.
fn standby_status(answer: &str) -> String {
    let (recovery, receiver) = answer.split_once('|').unwrap_or((answer, "?"));
    let role = match recovery {
        "t" => "up, a standby (in recovery)",
        "f" => "up, but NOT in recovery (promoted: a second primary)",
        _ => "up, recovery state unknown",
    };
    format!("{role}, WAL receiver {receiver}")
}

/// One line about `n` for `cluster status`.
pub fn node_status(n: &Node) -> String {
    if n.index == 1 {
        match psql(
            n,
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
        ) {
            Ok(k) => format!("up, {k} standby(s) streaming"),
            Err(e) => format!("down ({e})"),
        }
    } else {
        match psql(
            n,
            "SELECT pg_is_in_recovery(), coalesce((SELECT status FROM pg_stat_wal_receiver), 'no receiver')",
        ) {
            Ok(s) => standby_status(&s),
            Err(e) => format!("down ({e})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::standby_status;

    #[test]
    fn standby_status_is_in_words() {
        assert_eq!(
            standby_status("t|streaming"),
            "up, a standby (in recovery), WAL receiver streaming"
        );
        assert_eq!(
            standby_status("f|no receiver"),
            "up, but NOT in recovery (promoted: a second primary), WAL receiver no receiver"
        );
    }
}
