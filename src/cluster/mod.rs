//! `harness cluster up|down|status KIND`: real multi-node clusters on one
//! machine, each node a server process in its own network namespace with
//! its own address on the harness's bridge (see [`netns`]).
//!
//! A cluster lives in one state folder (default
//! `/tmp/isoharness-cluster/<kind>`): a folder per node (`n1`, `n2`, ...)
//! with its data, log and pid file, `options.txt` (the extra server
//! options of `up --server-opt`), and `urls.txt`, one line per node:
//! `NAME ROLE URL`. `harness run --cluster KIND` reads `urls.txt`.
//!
//! `up` is idempotent: a cluster that is up and ready is left alone;
//! anything else of that kind (namespaces named `isoh-<kind>-*`, processes
//! in them) is torn down first and the cluster built afresh, so a crashed
//! or SIGKILLed harness never blocks the next `up`.

pub mod args;
pub mod galera;
pub mod leader;
pub mod netns;
pub mod patroni;
pub mod pg_replica;
pub mod route;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

pub use args::{Action, ClusterArgs, Common, Kind, NodeArgs, UpArgs, MAX_NODES};

impl Kind {
    /// The prefix of node names (`galera-1`, `pg-2`).
    fn node_prefix(self) -> &'static str {
        match self {
            Kind::Galera => "galera",
            Kind::PgReplica => "pg",
            Kind::Patroni => "patroni",
        }
    }

    /// The last octet of node 1's address: each kind has its own ten
    /// addresses in the bridge's /24, so both kinds can be up at once.
    fn first_octet(self) -> u32 {
        match self {
            Kind::Galera => 11,
            Kind::PgReplica => 21,
            Kind::Patroni => 31,
        }
    }

    /// The host end of node veth pairs: `isoh-g1`, `isoh-p1`, `isoh-a1`.
    fn veth_letter(self) -> char {
        match self {
            Kind::Galera => 'g',
            Kind::PgReplica => 'p',
            Kind::Patroni => 'a',
        }
    }

    /// The adapter that speaks to it.
    pub fn db(self) -> crate::cli::DbArg {
        match self {
            Kind::Galera => crate::cli::DbArg::Mysql,
            Kind::PgReplica | Kind::Patroni => crate::cli::DbArg::Postgres,
        }
    }

    /// Its namespaces' common prefix.
    fn ns_prefix(self) -> String {
        format!("{}{}-", netns::PREFIX, self.node_prefix())
    }
}

/// One node of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// 1-based.
    pub index: u32,
    /// `galera-2`.
    pub name: String,
    /// `isoh-galera-2`.
    pub ns: String,
    /// `isoh-g2`.
    pub veth: String,
    /// `198.18.0.12`.
    pub addr: String,
    /// Its folder in the state folder.
    pub dir: PathBuf,
}

impl Node {
    /// Node `index` of a `kind` cluster kept in `state`.
    pub fn new(kind: Kind, index: u32, state: &Path) -> Node {
        let name = format!("{}-{index}", kind.node_prefix());
        Node {
            kind,
            index,
            ns: format!("{}{name}", netns::PREFIX),
            veth: format!("{}{}{index}", netns::PREFIX, kind.veth_letter()),
            addr: format!("198.18.0.{}", kind.first_octet() + index - 1),
            dir: state.join(format!("n{index}")),
            name,
        }
    }

    /// Its data directory.
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Its server log.
    pub fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }
}

/// A cluster: its kind, state folder and nodes.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub kind: Kind,
    pub state: PathBuf,
    pub nodes: Vec<Node>,
    /// Extra server options (`--server-opt`), kept in `options.txt`.
    pub options: Vec<String>,
}

impl Cluster {
    /// A cluster of `n` nodes in `state`.
    pub fn new(kind: Kind, n: u32, state: PathBuf, options: Vec<String>) -> Cluster {
        let nodes = (1..=n).map(|i| Node::new(kind, i, &state)).collect();
        Cluster {
            kind,
            state,
            nodes,
            options,
        }
    }

    /// The cluster `up` recorded in `state`; `None` when there is none.
    pub fn load(kind: Kind, state: &Path) -> Result<Option<Cluster>> {
        let Some(entries) = read_urls(state)? else {
            return Ok(None);
        };
        let options = std::fs::read_to_string(state.join("options.txt"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        Ok(Some(Cluster::new(
            kind,
            entries.len() as u32,
            state.to_path_buf(),
            options,
        )))
    }

    /// The node named `name` (`galera-2`) or numbered `name` (`2`).
    pub fn node(&self, name: &str) -> Result<&Node> {
        self.nodes
            .iter()
            .find(|n| n.name == name || n.index.to_string() == name)
            .ok_or_else(|| anyhow!("{}: no node {name:?}", self.kind.name()))
    }

    /// The URL lines: `NAME ROLE URL`.
    fn entries(&self) -> Vec<Entry> {
        self.nodes
            .iter()
            .map(|n| Entry {
                name: n.name.clone(),
                role: match self.kind {
                    Kind::Galera => "node",
                    Kind::PgReplica if n.index == 1 => "primary",
                    Kind::PgReplica => "standby",
                    // Any member may lead: the clients follow the leader.
                    Kind::Patroni => "member",
                }
                .into(),
                url: match self.kind {
                    Kind::Galera => galera::url(n),
                    Kind::PgReplica => pg_replica::url(n),
                    Kind::Patroni => patroni::url(n),
                },
            })
            .collect()
    }
}

/// One line of `urls.txt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The node's name (`galera-1`), recorded in the history.
    pub name: String,
    /// `node` (Galera), `primary` or `standby` (pg-replica), `member`
    /// (Patroni: whichever leads takes the writes).
    pub role: String,
    pub url: String,
}

/// Reads `STATE/urls.txt`; `None` when it is not there.
pub fn read_urls(state: &Path) -> Result<Option<Vec<Entry>>> {
    let path = state.join("urls.txt");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        let [name, role, url] = w[..] else {
            bail!(
                "{}:{}: expected `NAME ROLE URL`, got {line:?}",
                path.display(),
                i + 1
            );
        };
        out.push(Entry {
            name: name.into(),
            role: role.into(),
            url: url.into(),
        });
    }
    Ok(Some(out))
}

fn write_urls(c: &Cluster) -> Result<()> {
    let mut s = String::from("# NAME ROLE URL, written by `harness cluster up`\n");
    for e in c.entries() {
        let _ = writeln!(s, "{} {} {}", e.name, e.role, e.url);
    }
    let path = c.state.join("urls.txt");
    std::fs::write(&path, s).with_context(|| format!("cannot write {}", path.display()))
}

/// Runs `harness cluster ...`.
pub fn command(args: ClusterArgs) -> Result<u8> {
    match args.action {
        Action::Up(a) => up(&a),
        Action::Down(c) => {
            down(c.kind, &c.state(), true);
            crate::output::print_out(&format!("{} cluster down\n", c.kind.name()));
            Ok(0)
        }
        Action::Status(c) => status(&c),
        Action::Node(a) => node_fault(&a),
    }
}

/// The packages a kind needs: (what must exist, the apt package).
fn check_packages(kind: Kind) -> Result<()> {
    let mut need: Vec<(&str, &str)> = vec![("ip", "iproute2"), ("runuser", "util-linux")];
    match kind {
        Kind::Galera => need.extend(galera::PACKAGES),
        Kind::PgReplica => need.extend(pg_replica::PACKAGES),
        Kind::Patroni => need.extend(patroni::PACKAGES),
    }
    for (what, pkg) in need {
        let found = if what.starts_with('/') {
            Path::new(what).exists()
        } else {
            std::env::var_os("PATH")
                .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(what).is_file()))
        };
        if !found {
            bail!("{what} is missing: install the apt package `{pkg}` (apt-get install {pkg})");
        }
    }
    Ok(())
}

/// Stops everything of `kind` the harness can prove is its own: the
/// processes in its namespaces `isoh-<kind>-*` and those named in the
/// state folder's pid files, the namespaces, and (when no other cluster
/// uses it) the bridge; with `data`, the state folder too.
pub fn down(kind: Kind, state: &Path, data: bool) {
    for ns in netns::namespaces(&kind.ns_prefix()) {
        netns::remove_namespace(&ns);
    }
    // A server that somehow runs outside its namespace: only if its pid
    // file is in our state folder and its command line names our folder.
    for i in 1..=MAX_NODES {
        let node = Node::new(kind, i, state);
        if let Some(pid) = pid_of(&node) {
            let _ = netns::quiet("kill", &["-KILL", &pid.to_string()]);
        }
        let _ = netns::quiet("ip", &["link", "del", &node.veth]);
    }
    netns::remove_bridge_if_unused();
    let ours = ["urls.txt", "options.txt", "n1"]
        .iter()
        .any(|f| state.join(f).exists());
    if data && ours {
        let _ = std::fs::remove_dir_all(state);
    }
}

/// The pid in the node's pid file, when that process runs and its command
/// line names the node's folder (so it is ours).
pub fn pid_of(node: &Node) -> Option<u32> {
    let text = std::fs::read_to_string(node.dir.join("server.pid"))
        .or_else(|_| std::fs::read_to_string(node.data().join("postmaster.pid")))
        .ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
    cmd.contains(&*node.dir.to_string_lossy()).then_some(pid)
}

fn up(a: &UpArgs) -> Result<u8> {
    let (c, what) = ensure_up(a)?;
    print_urls(&c, &what);
    Ok(0)
}

/// Brings a cluster up as `a` says, or leaves it when it is up with that
/// shape and those options; returns it and how it came to be (`already
/// up`, `ready in 17.2 s`).
pub fn ensure_up(a: &UpArgs) -> Result<(Cluster, String)> {
    let kind = a.common.kind;
    let state = a.common.state();
    check_packages(kind)?;
    if kind == Kind::Patroni {
        patroni::Settings::parse(&a.server_opts)?;
    }
    if let Some(c) = Cluster::load(kind, &state)? {
        // A run killed mid-fault may have left a node paused, cut off or
        // on a degraded link: undo all of that first.
        for n in &c.nodes {
            netns::signal_all(&n.ns, "CONT");
            netns::unblock_all(&n.ns);
            netns::unnetem(&n.ns);
        }
        // A cluster of this shape that is up and ready is left alone.
        if c.nodes.len() == a.nodes as usize && c.options == a.server_opts && ready(&c).is_ok() {
            return Ok((c, "already up".into()));
        }
    }
    down(kind, &state, true);
    let c = Cluster::new(kind, a.nodes, state.clone(), a.server_opts.clone());
    std::fs::create_dir_all(&state)
        .with_context(|| format!("cannot create {}", state.display()))?;
    std::fs::write(state.join("options.txt"), a.server_opts.join("\n"))?;
    let began = Instant::now();
    let deadline = began + a.timeout;
    let built = (|| {
        netns::ensure_bridge()?;
        for n in &c.nodes {
            netns::add_node(&n.ns, &n.veth, &n.addr)?;
        }
        match kind {
            Kind::Galera => galera::up(&c, deadline),
            Kind::PgReplica => pg_replica::up(&c, deadline),
            Kind::Patroni => patroni::up(&c, deadline),
        }?;
        wait_ready(&c, deadline)
    })();
    if let Err(e) = built {
        // Stop what started, keep the logs.
        down(kind, &state, false);
        bail!(
            "{} cluster not ready after {:.0} s: {e:#} (logs in {}/n*/server.log)",
            kind.name(),
            began.elapsed().as_secs_f64(),
            state.display()
        );
    }
    write_urls(&c)?;
    let what = format!("ready in {:.1} s", began.elapsed().as_secs_f64());
    Ok((c, what))
}

fn print_urls(c: &Cluster, what: &str) {
    let mut s = format!(
        "{} cluster of {} nodes {what}; state in {}\n",
        c.kind.name(),
        c.nodes.len(),
        c.state.display()
    );
    for e in c.entries() {
        let _ = writeln!(s, "{:<10} {:<8} {}", e.name, e.role, e.url);
    }
    if c.kind == Kind::Patroni {
        let _ = writeln!(s, "leader-following URL: {}", patroni::leader_url(c));
    }
    let _ = writeln!(
        s,
        "run against it: harness run --cluster {} --workload mini --level si",
        c.kind.name()
    );
    crate::output::print_out(&s);
}

/// Waits until every node is ready, or the deadline, or a node's server
/// is gone.
pub fn wait_ready(c: &Cluster, deadline: Instant) -> Result<()> {
    loop {
        match ready(c) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => {
                for n in &c.nodes {
                    alive(n)?;
                }
                std::thread::sleep(Duration::from_millis(500))
            }
        }
    }
}

/// Waits (up to 5 s) for the server just started in `n`'s namespace to
/// show up there.
pub fn started(n: &Node) -> Result<()> {
    for _ in 0..50 {
        if !netns::pids(&n.ns).is_empty() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    alive(n)
}

/// `Ok` while some process runs in the node's namespace; else the last
/// line of its server log (why it stopped).
pub fn alive(n: &Node) -> Result<()> {
    if !netns::pids(&n.ns).is_empty() {
        return Ok(());
    }
    let log = std::fs::read_to_string(n.log()).unwrap_or_default();
    let last = log
        .lines()
        .rev()
        .find(|l| l.contains("ERROR") || l.contains("FATAL"))
        .or_else(|| log.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("no log");
    bail!("{}'s server exited: {}", n.name, last.trim())
}

/// `Ok` when every node is up and ready, else why not (the first node that
/// is not).
pub fn ready(c: &Cluster) -> Result<()> {
    match c.kind {
        Kind::Galera => galera::ready(c),
        Kind::PgReplica => pg_replica::ready(c),
        Kind::Patroni => patroni::ready(c),
    }
}

fn status(a: &Common) -> Result<u8> {
    let state = a.state();
    let Some(c) = Cluster::load(a.kind, &state)? else {
        bail!(
            "no {} cluster in {} (start one with `harness cluster up {}`)",
            a.kind.name(),
            state.display(),
            a.kind.name()
        );
    };
    let mut s = String::new();
    for (n, e) in c.nodes.iter().zip(c.entries()) {
        let line = match c.kind {
            Kind::Galera => galera::node_status(n),
            Kind::PgReplica => pg_replica::node_status(n),
            Kind::Patroni => continue,
        };
        let _ = writeln!(s, "{:<10} {:<8} {} {line}", e.name, e.role, e.url);
    }
    if c.kind == Kind::Patroni {
        s = patroni::status_text(&c);
    }
    crate::output::print_out(&s);
    match ready(&c) {
        Ok(()) => {
            crate::output::print_out(&format!("{} cluster ready\n", c.kind.name()));
            Ok(0)
        }
        Err(e) => bail!("{} cluster not ready: {e:#}", c.kind.name()),
    }
}

/// Starts node `n`'s server in its namespace (again).
pub fn start_node(c: &Cluster, n: &Node) -> Result<()> {
    match c.kind {
        Kind::Galera => galera::start(c, n, false),
        Kind::PgReplica => pg_replica::start(c, n),
        Kind::Patroni => patroni::start(c, n),
    }
}

fn node_fault(a: &NodeArgs) -> Result<u8> {
    let state = a.common.state();
    let c = Cluster::load(a.common.kind, &state)?
        .ok_or_else(|| anyhow!("no {} cluster in {}", a.common.kind.name(), state.display()))?;
    // `leader` (Patroni): the node that leads as the fault starts, and the
    // same node again for its undo.
    let (names, leader) = leader::resolve(&c, &a.fault, &a.nodes)?;
    let nodes: Vec<&Node> = names.iter().map(|n| c.node(n)).collect::<Result<_>>()?;
    // What the fault did, naming the leader it hit (the last line counts).
    let tell = |d: &str| match &leader {
        Some(l) => say_detail(&format!("leader {l}: {d}")),
        None => say_detail(d),
    };
    if leader.is_some() {
        tell(&a.fault);
    }
    let whole = |name: &str, order: Vec<&Node>| -> Result<u8> {
        let p = Partition::of(name, &order);
        for (x, y) in p.cuts() {
            cut(x, y)?;
        }
        tell(&p.describe());
        Ok(0)
    };
    match a.fault.as_str() {
        "halves" | "bridge" => return whole(&a.fault, c.nodes.iter().collect()),
        "random" => {
            // Jepsen's random partitions: a shape drawn per fault, over the
            // nodes in a shuffled order, from the fault's seed.
            let seed = std::env::var("ISOHARNESS_SEED")
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
            let (shape, order) = random_shape(&c, seed);
            return whole(shape, order);
        }
        "heal" => {
            for o in &c.nodes {
                netns::unblock_all(&o.ns);
            }
            return Ok(0);
        }
        _ if nodes.is_empty() => bail!("cluster node {}: which nodes?", a.fault),
        _ => {}
    }
    for n in &nodes {
        match a.fault.as_str() {
            "kill" => netns::kill_all(&n.ns),
            // One process of a Patroni node: its PostgreSQL (Patroni
            // notices and restarts it) or its Patroni (the PostgreSQL it
            // leaves behind keeps serving until Patroni comes back).
            "kill-postgres" => {
                netns::kill_named(&n.ns, "postgres");
            }
            "kill-patroni" => {
                netns::kill_named(&n.ns, "patroni");
            }
            "start-patroni" => patroni::start_patroni_again(n)?,
            // The node's etcd traffic to and from every other node: its
            // Patroni loses the consensus store while PostgreSQL's own
            // traffic (replication, clients) still flows.
            "isolate-etcd" => {
                for o in c.nodes.iter().filter(|o| o.index != n.index) {
                    netns::block_ports(&n.ns, &o.addr, "2379-2380")?;
                    netns::block_ports(&o.ns, &n.addr, "2379-2380")?;
                }
                tell(&format!("etcd of {} cut off from the other members", n.name));
            }
            "start" => {
                if netns::pids(&n.ns).is_empty() {
                    start_node(&c, n)?;
                }
            }
            "pause" => {
                netns::signal_all(&n.ns, "STOP");
            }
            "resume" => {
                netns::signal_all(&n.ns, "CONT");
            }
            "isolate" => {
                // Both directions between this node and every other node;
                // the host (the clients) still reaches it, as in Jepsen.
                let mut order = vec![*n];
                order.extend(c.nodes.iter().filter(|o| o.index != n.index));
                whole("isolate", order)?;
            }
            "netem" => {
                let ms = |v: &str| -> Result<u64> {
                    std::env::var(v)
                        .unwrap_or_else(|_| "0".into())
                        .parse()
                        .with_context(|| format!("{v} is not a number of milliseconds"))
                };
                let loss: f64 = std::env::var("ISOHARNESS_LOSS_PCT")
                    .unwrap_or_else(|_| "0".into())
                    .parse()
                    .context("ISOHARNESS_LOSS_PCT is not a percentage")?;
                let (delay, jitter) = (ms("ISOHARNESS_DELAY_MS")?, ms("ISOHARNESS_JITTER_MS")?);
                netns::netem(&n.ns, delay, jitter, loss)?;
                tell(&format!("{} link: tc netem delay {delay}ms {jitter}ms loss {loss}%", n.name));
            }
            "unnetem" => netns::unnetem(&n.ns),
            f => bail!(
                "unknown node fault {f:?} (kill, start, pause, resume, isolate, netem, unnetem, halves, bridge, random, heal; patroni also kill-postgres, kill-patroni, start-patroni, isolate-etcd)"
            ),
        }
    }
    Ok(0)
}

/// Tells the nemesis what a fault did (see `nemesis::command::DETAIL_PREFIX`).
fn say_detail(d: &str) {
    println!("{} {d}", crate::nemesis::command::DETAIL_PREFIX);
}

/// Drops the packets between two nodes, both ways.
fn cut(a: &Node, b: &Node) -> Result<()> {
    netns::block(&a.ns, &b.addr, true)?;
    netns::block(&b.ns, &a.addr, true)
}

/// A partition of a whole cluster: two sides that cannot reach each
/// other, and for `bridge` the node that still sees both.
#[derive(Debug)]
struct Partition<'a> {
    shape: &'static str,
    left: Vec<&'a Node>,
    bridge: Option<&'a Node>,
    right: Vec<&'a Node>,
}

impl<'a> Partition<'a> {
    /// The partition `shape` makes of the nodes in `order`. `isolate`: the
    /// first node from the rest. `halves`: the first ⌊n/2⌋ nodes (the
    /// minority) from the rest. `bridge`: the nodes before the middle one
    /// from those after it, the middle node seeing both sides (Jepsen's
    /// bridge; with fewer than 3 nodes it cuts nothing).
    fn of(shape: &str, order: &[&'a Node]) -> Partition<'a> {
        let n = order.len();
        let (shape, l, b, r) = match shape {
            "isolate" => ("isolate", n.min(1), None, n.min(1)),
            "halves" => ("halves", n / 2, None, n / 2),
            _ if n < 3 => ("bridge", 0, None, n),
            _ => ("bridge", n / 2, Some(order[n / 2]), n / 2 + 1),
        };
        Partition {
            shape,
            left: order[..l].to_vec(),
            bridge: b,
            right: order[r..].to_vec(),
        }
    }

    /// The node pairs it cuts.
    fn cuts(&self) -> Vec<(&'a Node, &'a Node)> {
        self.left
            .iter()
            .flat_map(|x| self.right.iter().map(move |y| (*x, *y)))
            .collect()
    }

    /// `halves: galera-1 | galera-2 galera-3`, for the fault's detail.
    fn describe(&self) -> String {
        let names = |v: &[&Node]| {
            let mut v: Vec<&str> = v.iter().map(|n| n.name.as_str()).collect();
            v.sort_unstable();
            v.join(" ")
        };
        let mut s = format!(
            "{}: {} | {}",
            self.shape,
            names(&self.left),
            names(&self.right)
        );
        if let Some(b) = self.bridge {
            let _ = write!(s, " ({} sees both)", b.name);
        }
        s
    }
}

/// A random partition shape (isolate one node, halves, or bridge) and the
/// shuffled node order it applies to, drawn from `seed`.
fn random_shape(c: &Cluster, seed: u64) -> (&'static str, Vec<&Node>) {
    use rand::seq::SliceRandom;
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<&Node> = c.nodes.iter().collect();
    order.shuffle(&mut rng);
    let shapes: &[&'static str] = if order.len() >= 3 {
        &["isolate", "halves", "bridge"]
    } else {
        &["isolate", "halves"]
    };
    (shapes[rng.random_range(0..shapes.len())], order)
}

/// After a `--cluster` run with node faults: waits (up to 30 s) until the
/// cluster is ready again; a warning when it is not.
pub fn settle(args: &crate::cli::RunArgs) -> Option<String> {
    let kind = args.cluster?;
    if args.nemesis.is_empty() {
        return None;
    }
    let state = args
        .cluster_state
        .clone()
        .unwrap_or_else(|| kind.default_state());
    let c = Cluster::load(kind, &state).ok()??;
    wait_ready(&c, Instant::now() + Duration::from_secs(30))
        .err()
        .map(|e| {
            format!(
                "the {} cluster was not ready again 30 s after the faults: {e:#}",
                kind.name()
            )
        })
}

/// Points a run at its cluster (`--cluster`) or its read-only nodes
/// (`--read-url`): sets the database and the URL list (writable nodes
/// first, then read-only ones), adds one command-fault target per node,
/// and returns how sessions are routed; `None` for a plain run.
pub fn prepare_run(args: &mut crate::cli::RunArgs) -> Result<Option<route::Routing>> {
    let Some(kind) = args.cluster else {
        if args.read_urls.is_empty() {
            return Ok(None);
        }
        if args.urls.is_empty() {
            bail!("--read-url needs --url (the writable node) or --cluster");
        }
        let r = route::Routing::of_urls(&args.urls, &args.read_urls);
        args.urls.extend(args.read_urls.iter().cloned());
        return Ok(Some(r));
    };
    let state = args
        .cluster_state
        .clone()
        .unwrap_or_else(|| kind.default_state());
    if args.cluster_nodes.is_some() || !args.cluster_opts.is_empty() {
        let (c, what) = ensure_up(&UpArgs {
            common: Common {
                kind,
                state: Some(state.clone()),
            },
            nodes: args.cluster_nodes.unwrap_or(3),
            timeout: Duration::from_secs(180),
            server_opts: args.cluster_opts.clone(),
        })?;
        eprintln!(
            "{} cluster of {} nodes {what} (options: {})",
            kind.name(),
            c.nodes.len(),
            if c.options.is_empty() {
                "none".to_string()
            } else {
                c.options.join(" ")
            }
        );
    }
    let Some(mut entries) = read_urls(&state)? else {
        bail!(
            "no {} cluster in {}: start one with `harness cluster up {}`",
            kind.name(),
            state.display(),
            kind.name()
        );
    };
    if !args.read_urls.is_empty() {
        entries.retain(|e| e.role != "standby");
        for u in &args.read_urls {
            entries.push(Entry {
                name: route::host_port(u),
                role: "standby".into(),
                url: u.clone(),
            });
        }
    }
    args.db = kind.db();
    args.urls = entries.iter().map(|e| e.url.clone()).collect();
    if let Some(c) = Cluster::load(kind, &state)? {
        for (name, t) in targets(&c)? {
            args.targets.entry(name).or_insert(t);
        }
    }
    let mut routing = route::Routing::of_entries(&entries);
    if kind == Kind::Patroni {
        let c = Cluster::load(kind, &state)?;
        let opts = c.map(|c| c.options).unwrap_or_default();
        if patroni::Settings::parse(&opts)?.read_replicas {
            // Read-only transactions go to a member that is not the leader.
            routing.readers = routing.writers.clone();
        }
    }
    Ok(Some(routing))
}

/// The command-fault targets a `--cluster` run will have, for checking a
/// scenario before the cluster is up: `nodes` nodes, else as many as the
/// cluster in `state` has, else 3.
pub fn planned_targets(
    kind: Kind,
    state: Option<PathBuf>,
    nodes: Option<u32>,
) -> Result<crate::nemesis::Targets> {
    let state = state.unwrap_or_else(|| kind.default_state());
    let n = match nodes {
        Some(n) => n,
        None => Cluster::load(kind, &state)?.map_or(3, |c| c.nodes.len() as u32),
    };
    targets(&Cluster::new(kind, n, state, Vec::new()))
}

/// The command-fault targets of a cluster run: one per node, whose
/// commands call this binary's hidden `cluster node` command.
pub fn targets(c: &Cluster) -> Result<crate::nemesis::Targets> {
    let exe = std::env::current_exe().context("cannot find the harness binary")?;
    let q = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    // `harness cluster node FAULT KIND --state DIR [NODE]`.
    let cmd = |fault: &str, node: &str| {
        format!(
            "{} cluster node {fault} {} --state {} {node}",
            q(&exe.to_string_lossy()),
            c.kind.name(),
            q(&c.state.to_string_lossy()),
        )
        .trim_end()
        .to_string()
    };
    let mut t = crate::nemesis::Targets::new();
    for n in &c.nodes {
        let cmd = |f: &str| cmd(f, &n.name);
        t.insert(
            n.name.clone(),
            crate::nemesis::command::Target {
                pause: Some(cmd("pause")),
                resume: Some(cmd("resume")),
                kill: Some(cmd("kill")),
                start: Some(cmd("start")),
                restart: Some(format!("{} && {}", cmd("kill"), cmd("start"))),
                partition: Some(cmd("isolate")),
                heal: Some(cmd("heal")),
                netem: Some(cmd("netem")),
                unnetem: Some(cmd("unnetem")),
                timeout: Some("120s".into()),
            },
        );
    }
    if c.kind == Kind::Patroni {
        t.extend(leader_targets(&cmd));
    }
    // Partitions of the whole cluster, by shape.
    for shape in ["halves", "bridge", "random"] {
        t.insert(
            shape.into(),
            crate::nemesis::command::Target {
                partition: Some(cmd(shape, "")),
                heal: Some(cmd("heal", "")),
                timeout: Some("60s".into()),
                ..Default::default()
            },
        );
    }
    Ok(t)
}

/// A Patroni cluster's targets aimed at whichever node leads when the
/// fault starts: `leader` (the whole node: kill, pause, isolate, netem),
/// `leader-postgres` and `leader-patroni` (kill one process; `start`
/// makes sure Patroni runs again), `leader-etcd` (partition: its etcd
/// from the other members).
fn leader_targets(cmd: &dyn Fn(&str, &str) -> String) -> crate::nemesis::Targets {
    use crate::nemesis::command::Target;
    let l = |f: &str| Some(cmd(f, leader::LEADER));
    let limit = Some("120s".to_string());
    let mut t = crate::nemesis::Targets::new();
    t.insert(
        "leader".into(),
        Target {
            pause: l("pause"),
            resume: l("resume"),
            kill: l("kill"),
            start: l("start"),
            partition: l("isolate"),
            heal: l("heal"),
            netem: l("netem"),
            unnetem: l("unnetem"),
            timeout: limit.clone(),
            ..Default::default()
        },
    );
    for (name, kill) in [
        ("leader-postgres", "kill-postgres"),
        ("leader-patroni", "kill-patroni"),
    ] {
        t.insert(
            name.into(),
            Target {
                kill: l(kill),
                start: l("start-patroni"),
                timeout: limit.clone(),
                ..Default::default()
            },
        );
    }
    t.insert(
        "leader-etcd".into(),
        Target {
            partition: l("isolate-etcd"),
            heal: l("heal"),
            timeout: limit,
            ..Default::default()
        },
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[(&Node, &Node)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.name.clone(), b.name.clone()))
            .collect()
    }

    #[test]
    fn partition_shapes() {
        let c = Cluster::new(Kind::Galera, 5, PathBuf::from("/x"), Vec::new());
        let all: Vec<&Node> = c.nodes.iter().collect();
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        // 2 against 3.
        let h = Partition::of("halves", &all);
        assert_eq!(names(&h.cuts()).len(), 6);
        assert!(names(&h.cuts()).contains(&p("galera-2", "galera-5")));
        assert_eq!(
            h.describe(),
            "halves: galera-1 galera-2 | galera-3 galera-4 galera-5"
        );
        // 1, 2 | 3 | 4, 5: galera-3 sees both sides.
        let b = Partition::of("bridge", &all);
        assert_eq!(b.cuts().len(), 4);
        assert!(names(&b.cuts())
            .iter()
            .all(|(x, y)| x != "galera-3" && y != "galera-3"));
        assert_eq!(
            b.describe(),
            "bridge: galera-1 galera-2 | galera-4 galera-5 (galera-3 sees both)"
        );
        let c3 = Cluster::new(Kind::Galera, 3, PathBuf::from("/x"), Vec::new());
        let all3: Vec<&Node> = c3.nodes.iter().collect();
        assert_eq!(
            names(&Partition::of("bridge", &all3).cuts()),
            vec![p("galera-1", "galera-3")]
        );
        let i = Partition::of("isolate", &[&c3.nodes[2], &c3.nodes[0], &c3.nodes[1]]);
        assert_eq!(i.describe(), "isolate: galera-3 | galera-1 galera-2");
        assert_eq!(i.cuts().len(), 2);
    }

    #[test]
    fn random_partitions_are_seeded_and_vary() {
        let c = Cluster::new(Kind::Galera, 5, PathBuf::from("/x"), Vec::new());
        let draw = |seed| {
            let (shape, order) = random_shape(&c, seed);
            Partition::of(shape, &order).describe()
        };
        assert_eq!(draw(7), draw(7));
        let seen: std::collections::BTreeSet<String> = (0..40).map(draw).collect();
        for shape in ["isolate:", "halves:", "bridge:"] {
            assert!(seen.iter().any(|d| d.starts_with(shape)), "{seen:?}");
        }
        // Shuffled: not always the same minority.
        let halves: std::collections::BTreeSet<&String> =
            seen.iter().filter(|d| d.starts_with("halves:")).collect();
        assert!(halves.len() > 1, "{halves:?}");
        // Every shape cuts something and leaves every node on some side.
        for d in &seen {
            for n in 1..=5 {
                assert!(d.contains(&format!("galera-{n}")), "{d}");
            }
        }
    }

    #[test]
    fn nodes_have_their_own_addresses_and_names() {
        let n = Node::new(Kind::PgReplica, 2, Path::new("/s"));
        assert_eq!(
            (
                n.name.as_str(),
                n.ns.as_str(),
                n.veth.as_str(),
                n.addr.as_str()
            ),
            ("pg-2", "isoh-pg-2", "isoh-p2", "198.18.0.22")
        );
        let g = Node::new(Kind::Galera, 9, Path::new("/s"));
        assert_eq!(g.addr, "198.18.0.19");
    }
}
