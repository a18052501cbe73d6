//! The arguments of `harness cluster` and what names a cluster kind: plain
//! data the command line and the cluster code both use (a leaf module).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

/// The kinds of cluster the harness can start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// MariaDB Galera: every node takes writes (galera-4, mariadb-server).
    Galera,
    /// PostgreSQL 15 streaming replication: node 1 is the primary, the
    /// others asynchronous hot standbys.
    PgReplica,
    /// PostgreSQL 15 managed by Patroni over etcd: one leader that moves
    /// on failover, the others streaming replicas.
    Patroni,
}

impl Kind {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Galera => "galera",
            Kind::PgReplica => "pg-replica",
            Kind::Patroni => "patroni",
        }
    }

    /// The default folder of its state.
    pub fn default_state(self) -> PathBuf {
        PathBuf::from("/tmp/isoharness-cluster").join(self.name())
    }
}

/// The most nodes a cluster may have (each kind has ten addresses).
pub const MAX_NODES: u32 = 9;

/// `--nodes`: 1 to [`MAX_NODES`], with a one-line message otherwise.
fn parse_nodes(s: &str) -> Result<u32, String> {
    crate::cli::positive(s, "--nodes", u64::from(MAX_NODES)).map(|n| n as u32)
}

/// `harness cluster ...`.
#[derive(Args, Debug, Clone)]
pub struct ClusterArgs {
    #[command(subcommand)]
    pub action: Action,
}

/// What `harness cluster` does.
#[derive(Subcommand, Debug, Clone)]
pub enum Action {
    /// Start a cluster (or leave a ready one alone) and print its URLs.
    Up(UpArgs),
    /// Stop the cluster and remove its processes, namespaces and data.
    Down(Common),
    /// Say whether each node is up and ready; exit 0 when all are.
    Status(Common),
    /// One node-level fault (what `harness run --cluster` gives the
    /// nemesis as target commands).
    #[command(hide = true)]
    Node(NodeArgs),
}

/// What every cluster command takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// galera, pg-replica or patroni.
    #[arg(value_enum)]
    pub kind: Kind,
    /// The state folder (default /tmp/isoharness-cluster/KIND).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

impl Common {
    /// The state folder: the given one, or the kind's default.
    pub fn state(&self) -> PathBuf {
        self.state
            .clone()
            .unwrap_or_else(|| self.kind.default_state())
    }
}

/// `harness cluster up`.
#[derive(Args, Debug, Clone)]
pub struct UpArgs {
    #[command(flatten)]
    pub common: Common,
    /// Nodes (galera: 3; pg-replica: 3, a primary and two standbys;
    /// patroni: 3, a leader and two replicas).
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = parse_nodes)]
    pub nodes: u32,
    /// Give up when the cluster is not ready after this long.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// An extra option for every server, repeatable: for galera a mariadbd
    /// option (`--server-opt wsrep-sync-wait=1`), for pg-replica a setting
    /// (`--server-opt synchronous_commit=remote_apply`), for patroni one of
    /// its cluster settings (`--cluster-opt synchronous_mode=on`; see
    /// docs/clusters.md).
    #[arg(
        long = "server-opt",
        visible_alias = "cluster-opt",
        value_name = "NAME=VALUE"
    )]
    pub server_opts: Vec<String>,
}

/// `harness cluster node FAULT KIND NODE...`.
#[derive(Args, Debug, Clone)]
pub struct NodeArgs {
    /// kill, start, pause, resume, isolate (each of the given nodes),
    /// halves, bridge (the whole cluster), heal.
    pub fault: String,
    #[command(flatten)]
    pub common: Common,
    /// The nodes (names or numbers).
    pub nodes: Vec<String>,
}
