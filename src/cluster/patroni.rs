//! Patroni: each node runs an etcd member, a PostgreSQL 15 server and the
//! Patroni that manages it, all three in the node's namespace and as
//! `postgres`. etcd (client port 2379, peer port 2380) is the cluster's
//! consensus store; Patroni (REST API on port 8008) keeps one leader, the
//! others streaming replicas, and fails over when the leader is gone.
//! PostgreSQL listens on port 5432; `postgres` may connect without a
//! password from the bridge.
//!
//! `up` starts every etcd member, then node 1's Patroni (which bootstraps
//! the database and becomes the leader), then the others (which clone it).
//! The settings of `--cluster-opt` are kept in the state folder's
//! `options.txt`.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::pg_replica::psql;
use super::{alive, netns, Cluster, Node};

/// What must exist, and the apt package that brings it.
pub const PACKAGES: [(&str, &str); 7] = [
    ("/usr/lib/postgresql/15/bin/postgres", "postgresql-15"),
    ("psql", "postgresql-client-15"),
    ("patroni", "patroni"),
    ("etcd", "etcd-server"),
    ("etcdctl", "etcd-client"),
    (
        "/usr/lib/python3/dist-packages/psycopg2",
        "python3-psycopg2",
    ),
    // Patroni's etcd3 module builds on the v2 client's classes.
    ("/usr/lib/python3/dist-packages/etcd", "python3-etcd"),
];

/// Patroni's cluster name (its `scope`).
const SCOPE: &str = "isoh";
/// The ports: PostgreSQL, Patroni's REST API, etcd's clients and peers.
const PG_PORT: u16 = 5432;
const REST_PORT: u16 = 8008;
const ETCD_CLIENT: u16 = 2379;
const ETCD_PEER: u16 = 2380;

/// `synchronous_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    Off,
    On,
    Strict,
}

/// The cluster's settings (`--cluster-opt NAME=VALUE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub synchronous_mode: Sync,
    /// Bytes a replica may lag and still be promoted.
    pub maximum_lag_on_failover: u64,
    /// Seconds the leader key lives without renewal.
    pub ttl: u32,
    /// Seconds between Patroni's checks.
    pub loop_wait: u32,
    /// Read-only transactions go to replicas.
    pub read_replicas: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            synchronous_mode: Sync::Off,
            maximum_lag_on_failover: 1_048_576,
            ttl: 10,
            loop_wait: 2,
            read_replicas: false,
        }
    }
}

/// The option names, for messages.
const NAMES: &str = "synchronous_mode, maximum_lag_on_failover, ttl, loop_wait, read_routing";

impl Settings {
    /// The settings `opts` (`NAME=VALUE` each) give; a one-line error for
    /// an unknown name or a bad value.
    pub fn parse(opts: &[String]) -> Result<Settings> {
        let mut s = Settings::default();
        for o in opts {
            let (name, value) = o
                .split_once('=')
                .ok_or_else(|| anyhow!("patroni: --cluster-opt {o:?} is not NAME=VALUE"))?;
            let (name, value) = (name.trim().trim_start_matches('-'), value.trim());
            let bad = |what: &str| anyhow!("patroni: --cluster-opt {name}={value}: {what}");
            let secs = |min: u32| -> Result<u32> {
                value
                    .trim_end_matches('s')
                    .parse::<u32>()
                    .ok()
                    .filter(|&v| v >= min)
                    .ok_or_else(|| bad(&format!("expected whole seconds, at least {min}")))
            };
            match name.replace('-', "_").as_str() {
                "synchronous_mode" => {
                    s.synchronous_mode = match value {
                        "off" | "false" => Sync::Off,
                        "on" | "true" => Sync::On,
                        "strict" => Sync::Strict,
                        _ => return Err(bad("expected off, on or strict")),
                    }
                }
                "maximum_lag_on_failover" => {
                    s.maximum_lag_on_failover = value
                        .parse()
                        .map_err(|_| bad("expected a number of bytes"))?
                }
                "ttl" => s.ttl = secs(4)?,
                "loop_wait" => s.loop_wait = secs(1)?,
                "read_routing" => {
                    s.read_replicas = match value {
                        "off" | "leader" => false,
                        "replicas" | "on" => true,
                        _ => return Err(bad("expected off or replicas")),
                    }
                }
                _ => bail!("patroni: unknown --cluster-opt {name:?} (known: {NAMES})"),
            }
        }
        if s.retry_timeout() < 1 {
            bail!(
                "patroni: ttl {} is too short for loop_wait {}: Patroni needs \
                 loop_wait + 2 * retry_timeout <= ttl, with retry_timeout at least 1 s",
                s.ttl,
                s.loop_wait
            );
        }
        Ok(s)
    }

    /// Patroni's `retry_timeout`: as long as `loop_wait + 2 * retry_timeout
    /// <= ttl` allows.
    pub fn retry_timeout(&self) -> u32 {
        self.ttl.saturating_sub(self.loop_wait) / 2
    }

    /// One line, for `status`.
    pub fn describe(&self) -> String {
        format!(
            "synchronous_mode={} maximum_lag_on_failover={} ttl={}s loop_wait={}s \
             retry_timeout={}s read_routing={}",
            match self.synchronous_mode {
                Sync::Off => "off",
                Sync::On => "on",
                Sync::Strict => "strict",
            },
            self.maximum_lag_on_failover,
            self.ttl,
            self.loop_wait,
            self.retry_timeout(),
            if self.read_replicas {
                "replicas"
            } else {
                "off"
            }
        )
    }
}

/// The client URL of a node.
pub fn url(n: &Node) -> String {
    format!("postgres://postgres@{}:{PG_PORT}/postgres", n.addr)
}

/// One URL naming every node that asks for a read-write session: libpq
/// and tokio-postgres try the hosts in turn and keep the leader.
pub fn leader_url(c: &Cluster) -> String {
    let hosts: Vec<String> = c
        .nodes
        .iter()
        .map(|n| format!("{}:{PG_PORT}", n.addr))
        .collect();
    format!(
        "postgres://postgres@{}/postgres?target_session_attrs=read-write",
        hosts.join(",")
    )
}

fn etcd_dir(n: &Node) -> std::path::PathBuf {
    n.dir.join("etcd")
}

/// Node `n`'s Patroni configuration.
fn config(c: &Cluster, n: &Node, s: &Settings) -> String {
    let etcd_hosts: Vec<String> = c
        .nodes
        .iter()
        .map(|m| format!("{}:{ETCD_CLIENT}", m.addr))
        .collect();
    let dir = n.dir.display();
    let hba = "  - local all all trust\n  \
               - host all all 127.0.0.1/32 trust\n  \
               - host all all 198.18.0.0/24 trust\n  \
               - host replication all 198.18.0.0/24 trust\n";
    format!(
        "# written by `harness cluster up patroni`
scope: {SCOPE}
name: {name}
log:
  level: INFO
restapi:
  listen: {addr}:{REST_PORT}
  connect_address: {addr}:{REST_PORT}
etcd3:
  hosts: {etcd}
watchdog:
  mode: off
bootstrap:
  dcs:
    ttl: {ttl}
    loop_wait: {loop_wait}
    retry_timeout: {retry}
    maximum_lag_on_failover: {lag}
    synchronous_mode: {sync}
    synchronous_mode_strict: {strict}
    postgresql:
      use_pg_rewind: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters:
        max_connections: 300
        max_wal_senders: 16
        max_replication_slots: 16
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
  initdb:
  - encoding: UTF8
  - no-sync
  pg_hba:
{hba}postgresql:
  listen: {addr}:{PG_PORT}
  connect_address: {addr}:{PG_PORT}
  data_dir: {dir}/data
  bin_dir: /usr/lib/postgresql/15/bin
  pgpass: {dir}/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '{dir}'
    fsync: 'off'
    shared_buffers: 32MB
    deadlock_timeout: 100ms
  pg_hba:
{hba}",
        name = n.name,
        addr = n.addr,
        etcd = etcd_hosts.join(","),
        ttl = s.ttl,
        loop_wait = s.loop_wait,
        retry = s.retry_timeout(),
        lag = s.maximum_lag_on_failover,
        sync = s.synchronous_mode != Sync::Off,
        strict = s.synchronous_mode == Sync::Strict,
    )
}

/// Writes every node's configuration, starts every etcd member, then node
/// 1's Patroni (it bootstraps and leads), then the others (they clone it).
pub fn up(c: &Cluster, deadline: Instant) -> Result<()> {
    let s = Settings::parse(&c.options)?;
    for n in &c.nodes {
        std::fs::create_dir_all(&n.dir)?;
        std::fs::write(n.dir.join("patroni.yml"), config(c, n, &s))?;
    }
    netns::run(
        "chown",
        &["-R", "postgres:postgres", &c.state.to_string_lossy()],
    )?;
    for n in &c.nodes {
        start_etcd(c, n, true)?;
    }
    let first = &c.nodes[0];
    until(deadline, first, || {
        let (code, body) = http_get(&first.addr, ETCD_CLIENT, "/health")?;
        match code == 200 && body.contains("true") {
            true => Ok(()),
            false => bail!("etcd not healthy: {body}"),
        }
    })
    .context("etcd")?;
    start_patroni(first)?;
    until(deadline, first, || match members(c)?.leader() {
        Some(l) if l.name == first.name && l.state == "running" => Ok(()),
        _ => bail!("{} is not the leader yet", first.name),
    })?;
    for n in &c.nodes[1..] {
        start_patroni(n)?;
    }
    Ok(())
}

/// Retries `f` until it works, the deadline passes, or `n` is gone.
fn until(deadline: Instant, n: &Node, mut f: impl FnMut() -> Result<()>) -> Result<()> {
    loop {
        match f() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => {
                alive(n)?;
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
}

/// Starts node `n` again (after a kill): its etcd member and its Patroni.
pub fn start(c: &Cluster, n: &Node) -> Result<()> {
    start_etcd(c, n, false)?;
    start_patroni(n)
}

/// Runs `args` in `n`'s namespace as `postgres`, detached, its output
/// appended to `log`.
fn spawn(n: &Node, args: &[String], log: &std::path::Path) -> Result<()> {
    let mut all: Vec<String> = [
        "netns", "exec", &n.ns, "setsid", "runuser", "-u", "postgres",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.push("--".into());
    all.extend_from_slice(args);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    Command::new("ip")
        .args(&all)
        .current_dir(&n.dir)
        .env("HOME", &n.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {} for {}", args[0], n.name))?;
    Ok(())
}

/// Starts `n`'s etcd member; `fresh` when the cluster is new.
fn start_etcd(c: &Cluster, n: &Node, fresh: bool) -> Result<()> {
    let peer = |m: &Node| format!("http://{}:{ETCD_PEER}", m.addr);
    let initial: Vec<String> = c
        .nodes
        .iter()
        .map(|m| format!("{}={}", m.name, peer(m)))
        .collect();
    let client = format!("http://{}:{ETCD_CLIENT}", n.addr);
    let args: Vec<String> = [
        "etcd",
        "--name",
        &n.name,
        "--data-dir",
        &etcd_dir(n).to_string_lossy(),
        "--listen-client-urls",
        &client,
        "--advertise-client-urls",
        &client,
        "--listen-peer-urls",
        &peer(n),
        "--initial-advertise-peer-urls",
        &peer(n),
        "--initial-cluster",
        &initial.join(","),
        "--initial-cluster-state",
        if fresh { "new" } else { "existing" },
        "--initial-cluster-token",
        "isoh-patroni",
        // Quick elections: the bridge is local.
        "--heartbeat-interval",
        "100",
        "--election-timeout",
        "1000",
        "--logger",
        "zap",
        "--log-level",
        "warn",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    spawn(n, &args, &n.dir.join("etcd.log"))?;
    super::started(n)
}

/// Starts `n`'s Patroni again unless it runs (after a `kill-patroni`, or
/// a `kill-postgres`, which Patroni itself repairs).
pub fn start_patroni_again(n: &Node) -> Result<()> {
    let running = !netns::named_pids(&n.ns, "patroni").is_empty();
    match running {
        true => Ok(()),
        false => start_patroni(n),
    }
}

/// Starts `n`'s Patroni (which starts its PostgreSQL).
fn start_patroni(n: &Node) -> Result<()> {
    let conf = n.dir.join("patroni.yml").to_string_lossy().into_owned();
    spawn(n, &["patroni".into(), conf], &n.log())
}

/// `GET path` on `addr:port`, HTTP/1.0; the status and the body.
fn http_get(addr: &str, port: u16, path: &str) -> Result<(u16, String)> {
    let sa: SocketAddr = format!("{addr}:{port}").parse()?;
    let mut s = TcpStream::connect_timeout(&sa, Duration::from_secs(1))
        .with_context(|| format!("{addr}:{port}"))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.set_write_timeout(Some(Duration::from_secs(2)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}:{port}\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .with_context(|| format!("{addr}:{port}{path}"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("{addr}:{port}{path}: not an HTTP answer"))?;
    Ok((code, body.to_string()))
}

/// One member as Patroni's `GET /cluster` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    /// `leader`, `replica`, `sync_standby`.
    pub role: String,
    /// `running`, `starting`, `stopped`, ...
    pub state: String,
    /// Bytes behind the leader (replicas), or `unknown`.
    pub lag: Option<String>,
    pub timeline: Option<u64>,
}

/// The members, and which node answered.
#[derive(Clone, Debug)]
pub struct Members {
    pub from: String,
    pub members: Vec<Member>,
}

impl Members {
    pub fn leader(&self) -> Option<&Member> {
        self.members.iter().find(|m| m.role == "leader")
    }

    fn get(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }
}

/// Parses Patroni's `GET /cluster` answer.
fn parse_members(from: &str, body: &str) -> Result<Members> {
    let v: serde_json::Value = serde_json::from_str(body).context("GET /cluster")?;
    let text = |m: &serde_json::Value, k: &str| m[k].as_str().unwrap_or("").to_string();
    let members = v["members"]
        .as_array()
        .ok_or_else(|| anyhow!("GET /cluster: no members"))?
        .iter()
        .map(|m| Member {
            name: text(m, "name"),
            role: text(m, "role"),
            state: text(m, "state"),
            lag: match &m["lag"] {
                serde_json::Value::Null => None,
                serde_json::Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            },
            timeline: m["timeline"].as_u64(),
        })
        .collect();
    Ok(Members {
        from: from.to_string(),
        members,
    })
}

/// The members, from the first node whose REST API answers.
pub fn members(c: &Cluster) -> Result<Members> {
    let mut why = Vec::new();
    for n in &c.nodes {
        match http_get(&n.addr, REST_PORT, "/cluster") {
            Ok((200, body)) => return parse_members(&n.name, &body),
            Ok((code, _)) => why.push(format!("{}: HTTP {code}", n.name)),
            Err(e) => why.push(format!("{}: {e:#}", n.name)),
        }
    }
    bail!("no Patroni REST API answers ({})", why.join("; "))
}

/// `Ok` when one node leads, every other node is a running replica, the
/// leader's `pg_stat_replication` shows each streaming, and (with
/// synchronous mode) one is the synchronous standby.
pub fn ready(c: &Cluster) -> Result<()> {
    let m = members(c)?;
    let leader = m.leader().ok_or_else(|| anyhow!("no leader"))?;
    if leader.state != "running" {
        bail!("the leader {} is {}", leader.name, leader.state);
    }
    let lnode = c.node(&leader.name)?;
    let streaming = psql(
        lnode,
        "SELECT string_agg(application_name, ',') FROM pg_stat_replication WHERE state = 'streaming'",
    )
    .map_err(|e| anyhow!("{}: {e:#}", lnode.name))?;
    let streaming: Vec<&str> = streaming.split(',').collect();
    for n in c.nodes.iter().filter(|n| n.name != leader.name) {
        let Some(r) = m.get(&n.name) else {
            bail!("{}: not a member", n.name);
        };
        if r.state != "running" {
            bail!("{}: {}", n.name, r.state);
        }
        if !streaming.contains(&n.name.as_str()) {
            bail!("{}: not streaming from {}", n.name, leader.name);
        }
    }
    let s = Settings::parse(&c.options)?;
    if s.synchronous_mode != Sync::Off
        && c.nodes.len() > 1
        && !m.members.iter().any(|r| r.role == "sync_standby")
    {
        bail!("no synchronous standby yet");
    }
    Ok(())
}

/// What `cluster status patroni` prints: the settings, the leader, and a
/// line per node (role, state, lag, timeline, from Patroni's REST API).
pub fn status_text(c: &Cluster) -> String {
    let mut s = String::new();
    match Settings::parse(&c.options) {
        Ok(set) => {
            let _ = writeln!(s, "settings: {}", set.describe());
        }
        Err(e) => {
            let _ = writeln!(s, "settings: {e:#}");
        }
    }
    let m = members(c);
    match &m {
        Ok(m) => {
            let leader = m.leader().map_or("none", |l| l.name.as_str());
            let _ = writeln!(s, "leader: {leader} (as {} says)", m.from);
        }
        Err(e) => {
            let _ = writeln!(s, "leader: unknown ({e:#})");
        }
    }
    for n in &c.nodes {
        let api = match http_get(&n.addr, REST_PORT, "/patroni") {
            Ok(_) => "Patroni up".to_string(),
            Err(e) => format!("down: Patroni does not answer ({e:#})"),
        };
        let member = m.as_ref().ok().and_then(|m| m.get(&n.name));
        let line = match member {
            Some(r) => {
                let mut l = format!("{} {}", r.role, r.state);
                if let Some(lag) = &r.lag {
                    let _ = write!(l, ", lag {lag}");
                    if lag.parse::<u64>().is_ok() {
                        l.push_str(" bytes");
                    }
                }
                if let Some(t) = r.timeline {
                    let _ = write!(l, ", timeline {t}");
                }
                l
            }
            None => "not a member".into(),
        };
        let _ = writeln!(s, "{:<10} {:<15} {} {line}; {api}", n.name, n.addr, url(n));
    }
    let _ = writeln!(s, "leader-following URL: {}", leader_url(c));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn settings_parse_and_refuse() {
        let d = Settings::parse(&[]).unwrap();
        assert_eq!(d, Settings::default());
        assert_eq!(d.retry_timeout(), 4);
        let s = Settings::parse(&opts(&[
            "synchronous_mode=strict",
            "maximum_lag_on_failover=0",
            "ttl=20",
            "loop_wait=5s",
            "read_routing=replicas",
        ]))
        .unwrap();
        assert_eq!(
            (
                s.synchronous_mode,
                s.maximum_lag_on_failover,
                s.ttl,
                s.loop_wait
            ),
            (Sync::Strict, 0, 20, 5)
        );
        assert!(s.read_replicas);
        assert_eq!(s.retry_timeout(), 7);
        for (bad, says) in [
            ("wal_level=logical", "unknown --cluster-opt \"wal_level\""),
            ("synchronous_mode=maybe", "off, on or strict"),
            ("ttl=2", "at least 4"),
            ("read_routing=all", "off or replicas"),
            ("ttl", "NAME=VALUE"),
        ] {
            let e = format!("{:#}", Settings::parse(&opts(&[bad])).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
        let e = Settings::parse(&opts(&["ttl=5", "loop_wait=4"])).unwrap_err();
        assert!(format!("{e}").contains("too short"), "{e}");
    }

    #[test]
    fn config_follows_the_settings() {
        let c = Cluster::new(
            super::super::Kind::Patroni,
            3,
            "/s".into(),
            opts(&["synchronous_mode=on"]),
        );
        let s = Settings::parse(&c.options).unwrap();
        let y = config(&c, &c.nodes[1], &s);
        for want in [
            "name: patroni-2",
            "listen: 198.18.0.32:8008",
            "hosts: 198.18.0.31:2379,198.18.0.32:2379,198.18.0.33:2379",
            "ttl: 10",
            "loop_wait: 2",
            "retry_timeout: 4",
            "synchronous_mode: true",
            "synchronous_mode_strict: false",
            "data_dir: /s/n2/data",
        ] {
            assert!(y.contains(want), "{want}: {y}");
        }
        assert_eq!(
            leader_url(&c),
            "postgres://postgres@198.18.0.31:5432,198.18.0.32:5432,198.18.0.33:5432/postgres\
             ?target_session_attrs=read-write"
        );
    }

    #[test]
    fn members_are_read_from_the_rest_api() {
        let body = r#"{"members": [
            {"name": "patroni-1", "role": "leader", "state": "running", "timeline": 1},
            {"name": "patroni-2", "role": "replica", "state": "running", "timeline": 1, "lag": 0},
            {"name": "patroni-3", "role": "replica", "state": "starting", "lag": "unknown"}]}"#;
        let m = parse_members("patroni-2", body).unwrap();
        assert_eq!(m.leader().unwrap().name, "patroni-1");
        assert_eq!(m.get("patroni-2").unwrap().lag.as_deref(), Some("0"));
        assert_eq!(m.get("patroni-3").unwrap().lag.as_deref(), Some("unknown"));
        assert_eq!(m.get("patroni-1").unwrap().lag, None);
    }
}
