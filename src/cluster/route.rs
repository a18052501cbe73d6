//! Routing a run's sessions over a cluster's nodes: each client is pinned
//! to one writable node (round robin by client number, kept across
//! reconnects); where the cluster has read-only nodes (PostgreSQL
//! standbys), its read-only transactions go to one of those instead (round
//! robin too). Every transaction records the node that served it.
//!
//! A cluster whose one writable node moves (Patroni's leader) is routed
//! differently: its nodes are all `member`s, and every client connects to
//! whichever of them takes a read-write session (libpq's
//! `target_session_attrs=read-write`), trying the last leader found
//! first, so that after a failover the clients reconnect to the new
//! leader. With replica reads, a client's read-only transactions go to
//! another member.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use adapters::{AdapterError, Database, Isolation, Outcome, Session};
use async_trait::async_trait;
use history::Level;
use workloads::{Plan, Schema, Step};

/// Which URL (by index into the run's URL list) is which node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routing {
    /// Nodes that take every transaction: (name, URL index).
    pub writers: Vec<(String, usize)>,
    /// Nodes that take the read-only transactions: (name, URL index).
    pub readers: Vec<(String, usize)>,
    /// The writers are members of which one leads (Patroni): the clients
    /// follow the leader instead of being pinned.
    pub follow: bool,
}

impl Routing {
    /// The routing of a cluster's `urls.txt`: standbys read, the rest write.
    pub fn of_entries(entries: &[super::Entry]) -> Routing {
        let mut r = Routing::default();
        for (i, e) in entries.iter().enumerate() {
            let node = (e.name.clone(), i);
            if e.role == "standby" {
                r.readers.push(node);
            } else if e.role == "member" {
                r.follow = true;
                r.writers.push(node);
            } else {
                r.writers.push(node);
            }
        }
        r
    }

    /// The routing of `--url` (writers) and `--read-url` (readers), given
    /// in that order in one URL list; nodes are named by host and port.
    pub fn of_urls(urls: &[String], read_urls: &[String]) -> Routing {
        let named = |u: &String, i| (host_port(u), i);
        Routing {
            writers: urls.iter().enumerate().map(|(i, u)| named(u, i)).collect(),
            readers: read_urls
                .iter()
                .enumerate()
                .map(|(i, u)| named(u, urls.len() + i))
                .collect(),
            follow: false,
        }
    }
}

/// `host:port` of a URL (without user or password), or the URL's
/// redacted text.
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    rest[..end].to_string()
}

/// `url` asking for a read-write session (libpq's `target_session_attrs`).
pub fn read_write(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}target_session_attrs=read-write")
}

/// True when the plan only reads.
pub fn read_only(plan: &Plan) -> bool {
    plan.steps
        .iter()
        .all(|s| matches!(s, Step::Read(_) | Step::RangeRead(..) | Step::ReadList(_)))
}

/// One adapter per node, behind one [`Database`].
pub struct Routed {
    writers: Vec<(String, Arc<dyn Database>)>,
    readers: Vec<(String, Arc<dyn Database>)>,
    /// When the clients follow the leader: the writer that took the last
    /// read-write session.
    leader: Option<AtomicUsize>,
}

/// Opens one `kind` adapter per node, each with the one URL of its node
/// out of `opts.urls`. The tables are created on the node itself (its URL
/// of `opts.admin_urls`, when a fault proxy stands before it) and, should
/// that node be down at the end, dropped on another writable node. When
/// the clients follow the leader, the writers' URLs ask for a read-write
/// session, and the tables go to whichever node leads.
pub fn open(
    kind: adapters::DbKind,
    opts: &adapters::OpenOptions,
    routing: &Routing,
) -> Result<Arc<dyn Database>, AdapterError> {
    let direct = |i: usize| opts.admin_urls.get(i).unwrap_or(&opts.urls[i]).clone();
    let one = |rw: bool, (name, i): &(String, usize)| {
        let url = |u: String| if rw { read_write(&u) } else { u };
        let mut o = opts.clone();
        o.urls = vec![url(opts.urls[*i].clone())];
        o.admin_urls = vec![url(direct(*i))];
        let others = routing.writers.iter().filter(|(_, j)| j != i);
        o.admin_urls.extend(others.map(|(_, j)| url(direct(*j))));
        adapters::open(kind, &o).map(|db| (name.clone(), db))
    };
    let follow = routing.follow;
    let writers = (routing.writers.iter())
        .map(|w| one(follow, w))
        .collect::<Result<_, _>>()?;
    let readers = (routing.readers.iter())
        .map(|r| one(false, r))
        .collect::<Result<_, _>>()?;
    let leader = follow.then(|| AtomicUsize::new(0));
    Ok(Arc::new(Routed {
        writers,
        readers,
        leader,
    }))
}

impl Routed {
    fn first(&self) -> &Arc<dyn Database> {
        &self.writers[0].1
    }

    /// The writers in the order a client following the leader tries
    /// them: the last leader first.
    fn leader_first(&self, hint: &AtomicUsize) -> impl Iterator<Item = usize> {
        let n = self.writers.len();
        let start = hint.load(Ordering::Relaxed) % n;
        (0..n).map(move |k| (start + k) % n)
    }

    /// A read-write session on whichever writer leads: (its index, it).
    async fn connect_leader(
        &self,
        hint: &AtomicUsize,
        client: u64,
    ) -> Result<(usize, Box<dyn Session>), AdapterError> {
        let mut failed = Vec::new();
        for i in self.leader_first(hint) {
            match self.writers[i].1.connect(client).await {
                Ok(s) => {
                    hint.store(i, Ordering::Relaxed);
                    return Ok((i, s));
                }
                Err(e) => failed.push(format!("{}: {e}", self.writers[i].0)),
            }
        }
        Err(AdapterError::Connect {
            db: self.first().name(),
            url: self.location(),
            detail: format!("no node took a read-write session ({})", failed.join("; ")),
            hint: String::new(),
        })
    }

    /// A session on a reader other than the node named `not` (the
    /// leader), round robin by client; `None` when none answers.
    async fn connect_replica(&self, client: u64, not: &str) -> Option<(String, Box<dyn Session>)> {
        let n = self.readers.len();
        for k in 0..n {
            let (name, db) = &self.readers[(client as usize + k) % n];
            if name == not {
                continue;
            }
            if let Ok(s) = db.connect(client).await {
                return Some((name.clone(), s));
            }
        }
        None
    }
}

fn pick<T>(v: &[T], client: u64) -> &T {
    &v[(client % v.len() as u64) as usize]
}

#[async_trait]
impl Database for Routed {
    fn name(&self) -> &'static str {
        self.first().name()
    }

    fn location(&self) -> String {
        let mut parts: Vec<String> = self
            .writers
            .iter()
            .map(|(n, db)| format!("{n} {}", db.location()))
            .collect();
        parts.extend(
            self.readers
                .iter()
                .map(|(n, db)| format!("{n} (reads) {}", db.location())),
        );
        parts.join(", ")
    }

    fn isolation(&self, level: Level, explicit: Option<&str>) -> Result<Isolation, AdapterError> {
        self.first().isolation(level, explicit)
    }

    async fn setup(&self, schema: &Schema) -> Result<(), AdapterError> {
        let Some(hint) = &self.leader else {
            return self.first().setup(schema).await;
        };
        // On the leader: a writer that is not refuses the session.
        let mut last = None;
        for i in self.leader_first(hint) {
            match self.writers[i].1.setup(schema).await {
                Ok(()) => {
                    hint.store(i, Ordering::Relaxed);
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("a cluster has nodes"))
    }

    async fn teardown(&self, keep_tables: bool) -> Result<(), AdapterError> {
        if self.leader.is_none() {
            return self.first().teardown(keep_tables).await;
        }
        // Only the writer that created the tables drops them (the others
        // have nothing to do), on whichever node leads now.
        let mut first_err = Ok(());
        for (_, db) in &self.writers {
            if let Err(e) = db.teardown(keep_tables).await {
                if first_err.is_ok() {
                    first_err = Err(e);
                }
            }
        }
        first_err
    }

    async fn connect(&self, client: u64) -> Result<Box<dyn Session>, AdapterError> {
        if let Some(hint) = &self.leader {
            let (i, write) = self.connect_leader(hint, client).await?;
            let wn = self.writers[i].0.clone();
            let read = match self.readers.is_empty() {
                true => None,
                false => self.connect_replica(client, &wn).await,
            };
            return Ok(Box::new(RoutedSession {
                write: (wn, write),
                read,
                last: None,
                follow: true,
            }));
        }
        let (wn, wdb) = pick(&self.writers, client);
        let write = wdb.connect(client).await?;
        let read = match self.readers.is_empty() {
            true => None,
            false => {
                let (rn, rdb) = pick(&self.readers, client);
                match rdb.connect(client).await {
                    Ok(s) => Some((rn.clone(), s)),
                    Err(e) => {
                        write.close().await;
                        return Err(e);
                    }
                }
            }
        };
        Ok(Box::new(RoutedSession {
            write: (wn.clone(), write),
            read,
            last: None,
            follow: false,
        }))
    }

    fn warnings(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for (_, db) in self.writers.iter().chain(&self.readers) {
            for w in db.warnings() {
                if !all.contains(&w) {
                    all.push(w);
                }
            }
        }
        all
    }
}

/// A client's connections: one to its writable node, and one to its
/// read-only node when the cluster has those.
struct RoutedSession {
    write: (String, Box<dyn Session>),
    read: Option<(String, Box<dyn Session>)>,
    /// The node of the last plan.
    last: Option<String>,
    /// It follows the leader: a write refused because the node no longer
    /// leads (read-only, SQLSTATE 25006) ends the connection, so that the
    /// client reconnects to the new leader.
    follow: bool,
}

/// PostgreSQL's `read_only_sql_transaction`.
const READ_ONLY: &str = "25006";

#[async_trait]
impl Session for RoutedSession {
    async fn run(&mut self, plan: &Plan, iso: &Isolation) -> Result<Outcome, AdapterError> {
        let (name, s) = match &mut self.read {
            Some(r) if read_only(plan) => (&r.0, &mut r.1),
            _ => (&self.write.0, &mut self.write.1),
        };
        self.last = Some(name.clone());
        let mut outcome = s.run(plan, iso).await?;
        if self.follow && outcome.error.as_ref().is_some_and(|e| e.code == READ_ONLY) {
            outcome.broken = true;
        }
        Ok(outcome)
    }

    async fn close(self: Box<Self>) {
        let me = *self;
        me.write.1.close().await;
        if let Some((_, r)) = me.read {
            r.close().await;
        }
    }

    fn node(&self) -> Option<String> {
        self.last.clone()
    }

    async fn end_check(
        &mut self,
        check: workloads::EndCheck,
    ) -> Result<workloads::EndReport, AdapterError> {
        self.write.1.end_check(check).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_nodes_without_passwords() {
        assert_eq!(
            host_port("postgres://u:secret@10.0.0.1:5432/db?x=1"),
            "10.0.0.1:5432"
        );
        let r = Routing::of_urls(
            &["mysql://root@a:1/t".into()],
            &["mysql://root@b:2/t".into(), "mysql://root@c:3/t".into()],
        );
        assert_eq!(r.writers, vec![("a:1".to_string(), 0)]);
        assert_eq!(
            r.readers,
            vec![("b:2".to_string(), 1), ("c:3".to_string(), 2)]
        );
    }

    #[test]
    fn standbys_read_and_the_rest_write() {
        let e = |name: &str, role: &str| super::super::Entry {
            name: name.into(),
            role: role.into(),
            url: format!("postgres://postgres@{name}/p"),
        };
        let r = Routing::of_entries(&[e("pg-1", "primary"), e("pg-2", "standby")]);
        assert_eq!(r.writers, vec![("pg-1".to_string(), 0)]);
        assert_eq!(r.readers, vec![("pg-2".to_string(), 1)]);
        assert!(!r.follow);
        // Patroni's members: all may lead; the clients follow the leader.
        let r = Routing::of_entries(&[e("patroni-1", "member"), e("patroni-2", "member")]);
        assert_eq!(r.writers.len(), 2);
        assert!(r.readers.is_empty() && r.follow);
    }

    #[test]
    fn followers_ask_for_read_write_sessions() {
        assert_eq!(
            read_write("postgres://postgres@h:5432/postgres"),
            "postgres://postgres@h:5432/postgres?target_session_attrs=read-write"
        );
        assert_eq!(
            read_write("postgres://p@h/db?sslmode=disable"),
            "postgres://p@h/db?sslmode=disable&target_session_attrs=read-write"
        );
    }
}
