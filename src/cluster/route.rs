//! Routing a run's sessions over a cluster's nodes: each client is pinned
//! to one writable node (round robin by session id); where the cluster has
//! read-only nodes (PostgreSQL standbys), its read-only transactions go to
//! one of those instead (round robin too). Every transaction records the
//! node that served it.

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
}

impl Routing {
    /// The routing of a cluster's `urls.txt`: standbys read, the rest write.
    pub fn of_entries(entries: &[super::Entry]) -> Routing {
        let mut r = Routing::default();
        for (i, e) in entries.iter().enumerate() {
            let node = (e.name.clone(), i);
            if e.role == "standby" {
                r.readers.push(node);
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
}

/// Opens one `kind` adapter per node, each with the one URL of its node
/// out of `opts.urls`. The tables are created on the node itself (its URL
/// of `opts.admin_urls`, when a fault proxy stands before it) and, should
/// that node be down at the end, dropped on another writable node.
pub fn open(
    kind: adapters::DbKind,
    opts: &adapters::OpenOptions,
    routing: &Routing,
) -> Result<Arc<dyn Database>, AdapterError> {
    let direct = |i: usize| opts.admin_urls.get(i).unwrap_or(&opts.urls[i]).clone();
    let one = |(name, i): &(String, usize)| {
        let mut o = opts.clone();
        o.urls = vec![opts.urls[*i].clone()];
        o.admin_urls = vec![direct(*i)];
        let others = routing.writers.iter().filter(|(_, j)| j != i);
        o.admin_urls.extend(others.map(|(_, j)| direct(*j)));
        adapters::open(kind, &o).map(|db| (name.clone(), db))
    };
    let writers = routing.writers.iter().map(one).collect::<Result<_, _>>()?;
    let readers = routing.readers.iter().map(one).collect::<Result<_, _>>()?;
    Ok(Arc::new(Routed { writers, readers }))
}

impl Routed {
    fn first(&self) -> &Arc<dyn Database> {
        &self.writers[0].1
    }
}

fn pick<T>(v: &[T], session: u64) -> &T {
    &v[(session % v.len() as u64) as usize]
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
        self.first().setup(schema).await
    }

    async fn teardown(&self, keep_tables: bool) -> Result<(), AdapterError> {
        self.first().teardown(keep_tables).await
    }

    async fn connect(&self, session: u64) -> Result<Box<dyn Session>, AdapterError> {
        let (wn, wdb) = pick(&self.writers, session);
        let write = wdb.connect(session).await?;
        let read = match self.readers.is_empty() {
            true => None,
            false => {
                let (rn, rdb) = pick(&self.readers, session);
                match rdb.connect(session).await {
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
}

#[async_trait]
impl Session for RoutedSession {
    async fn run(&mut self, plan: &Plan, iso: &Isolation) -> Result<Outcome, AdapterError> {
        let (name, s) = match &mut self.read {
            Some(r) if read_only(plan) => (&r.0, &mut r.1),
            _ => (&self.write.0, &mut self.write.1),
        };
        self.last = Some(name.clone());
        s.run(plan, iso).await
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
    }
}
