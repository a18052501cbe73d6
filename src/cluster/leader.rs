//! Who leads a Patroni cluster, for faults aimed at "whoever leads now"
//! and for marking each change of leader on a run's timeline.
//!
//! The truth is etcd's leader key (`/service/isoh/leader`, which Patroni
//! holds while it leads), read through the etcd quorum with `etcdctl`: a
//! node cut off from the quorum may still believe it leads, and its own
//! REST API would say so, but the key says who the others follow.
//!
//! A fault whose target is `leader` resolves it when the fault starts and
//! remembers the node in the state folder (`leader-fault.txt`), so that
//! its undo (`start`, `resume`, `heal`) goes to the same node even after
//! another one has taken over.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use history::{Fault, LEADER_CHANGE};

use super::{Cluster, Kind};

/// The name fault targets and `cluster node` use for the current leader.
pub const LEADER: &str = "leader";

/// Patroni's leader key: its namespace, its `scope`, `leader`.
const KEY: &str = "/service/isoh/leader";

/// How often a run looks at the leader key.
const POLL: Duration = Duration::from_millis(250);

/// The node that holds the leader key now; `None` while nobody does.
/// Each member is asked in turn (a linearizable read): one cut off from
/// the quorum cannot answer, and must not hide the others' answer.
pub fn current(c: &Cluster) -> Result<Option<String>> {
    let mut why = Vec::new();
    for n in &c.nodes {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([
                "--endpoints",
                &format!("http://{}:2379", n.addr),
                "--dial-timeout=500ms",
                "--command-timeout=1s",
                "get",
                KEY,
                "--print-value-only",
            ])
            .output()
            .context("cannot run etcdctl (Debian package etcd-client)")?;
        if out.status.success() {
            let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
            return Ok((!name.is_empty()).then_some(name));
        }
        why.push(format!(
            "{}: {}",
            n.name,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    bail!("etcdctl get {KEY}: {}", why.join("; "))
}

/// Where a leader fault remembers the node it hit.
fn remembered(c: &Cluster) -> std::path::PathBuf {
    c.state.join("leader-fault.txt")
}

/// True for the `cluster node` verbs that undo an earlier fault.
fn is_undo(verb: &str) -> bool {
    matches!(
        verb,
        "start" | "start-patroni" | "resume" | "heal" | "unnetem"
    )
}

/// The node names a `cluster node VERB ... NODES` means, with `leader`
/// replaced: by the leader now for a fault (which is remembered), by the
/// node the last leader fault hit for its undo. The second value names the
/// leader a fault hit, for its detail line.
pub fn resolve(c: &Cluster, verb: &str, names: &[String]) -> Result<(Vec<String>, Option<String>)> {
    if !names.iter().any(|n| n == LEADER) {
        return Ok((names.to_vec(), None));
    }
    if c.kind != Kind::Patroni {
        bail!("only a patroni cluster has a `{LEADER}` target");
    }
    let node = if is_undo(verb) {
        std::fs::read_to_string(remembered(c))
            .map(|s| s.trim().to_string())
            .map_err(|_| anyhow!("{verb} leader: no leader fault to undo"))?
    } else {
        let l = current(c)?.ok_or_else(|| anyhow!("{verb} leader: no node leads now"))?;
        std::fs::write(remembered(c), &l).context("cannot remember the leader fault's node")?;
        l
    };
    c.node(&node)?;
    let out = names
        .iter()
        .map(|n| if n == LEADER { node.clone() } else { n.clone() })
        .collect();
    Ok((out, Some(node)))
}

/// Watches the leader of a run's Patroni cluster (`--cluster patroni`);
/// `None` for any other run.
pub fn watch(
    args: &crate::cli::RunArgs,
    now: impl Fn() -> u64 + Send + 'static,
    tx: tokio::sync::mpsc::UnboundedSender<Fault>,
) -> Option<Watch> {
    let kind = args.cluster.filter(|k| *k == Kind::Patroni)?;
    let state = args
        .cluster_state
        .clone()
        .unwrap_or_else(|| kind.default_state());
    let c = Cluster::load(kind, &state).ok()??;
    Some(Watch::start(c, now, tx))
}

/// A thread that watches the leader key during a run and sends a
/// `leader-change` line for each change it sees.
pub struct Watch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    /// Starts watching `c`; `now` is the run's clock (ns), `tx` the
    /// recorder's channel of fault lines.
    pub fn start(
        c: Cluster,
        now: impl Fn() -> u64 + Send + 'static,
        tx: tokio::sync::mpsc::UnboundedSender<Fault>,
    ) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut seen = Seen::default();
            while !flag.load(Ordering::Relaxed) {
                let at = Instant::now();
                // An unreadable key (no etcd quorum) is not a change: the
                // leader is unknown until the key is readable again.
                if let Ok(leader) = current(&c) {
                    if let Some(f) = seen.observe(leader, now()) {
                        let _ = tx.send(f);
                    }
                }
                std::thread::sleep(POLL.saturating_sub(at.elapsed()));
            }
        });
        Watch {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops watching (the last change is sent first).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the watcher knows: the last leader it saw, and since when nobody
/// or somebody else has held the key.
#[derive(Default)]
struct Seen {
    leader: Option<String>,
    /// When the key was first seen without `leader` (ns).
    lost_at: Option<u64>,
    started: bool,
}

impl Seen {
    /// The `leader-change` line for a reading of the key at `t`, if it
    /// changed: from the moment the old leader was last seen gone to the
    /// moment the new one was first seen, naming both.
    fn observe(&mut self, now: Option<String>, t: u64) -> Option<Fault> {
        if !self.started {
            self.started = true;
            self.leader = now;
            return None;
        }
        match now {
            None => {
                self.lost_at.get_or_insert(t);
                None
            }
            Some(n) if Some(&n) == self.leader.as_ref() => {
                // The same node took the key again after a gap.
                let gap = self.lost_at.take()?;
                Some(change(&n, &n, gap, t, "lost and took back the leader key"))
            }
            Some(n) => {
                let old = self.leader.replace(n.clone());
                let start = self.lost_at.take().unwrap_or(t);
                let from = old.as_deref().unwrap_or("none");
                Some(change(from, &n, start, t, "new leader"))
            }
        }
    }
}

fn change(from: &str, to: &str, start: u64, end: u64, what: &str) -> Fault {
    let gap = (end - start) as f64 / 1e9;
    Fault {
        kind: LEADER_CHANGE.into(),
        target: Some(to.into()),
        start,
        end: Some(end),
        applied: true,
        detail: Some(format!("{what}: {from} → {to} (no leader for {gap:.1} s)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_spans_the_leaderless_gap_and_names_both_nodes() {
        let mut s = Seen::default();
        let n = |s: &str| Some(s.to_string());
        assert!(s.observe(n("patroni-1"), 0).is_none());
        assert!(s.observe(n("patroni-1"), 10).is_none());
        assert!(s.observe(None, 20).is_none());
        assert!(s.observe(None, 30).is_none());
        let f = s.observe(n("patroni-3"), 2_000_000_020).expect("a change");
        assert_eq!((f.start, f.end), (20, Some(2_000_000_020)));
        assert_eq!(f.target.as_deref(), Some("patroni-3"));
        assert_eq!(f.kind, LEADER_CHANGE);
        assert!(f
            .detail
            .unwrap()
            .contains("patroni-1 → patroni-3 (no leader for 2.0 s)"));
        // A direct hand-over has no gap; the same leader again is no change.
        let f = s.observe(n("patroni-2"), 3_000_000_000).expect("a change");
        assert_eq!(f.start, 3_000_000_000);
        assert!(s.observe(n("patroni-2"), 3_100_000_000).is_none());
        // Losing the key and taking it back is marked too.
        assert!(s.observe(None, 4_000_000_000).is_none());
        let f = s.observe(n("patroni-2"), 5_000_000_000).expect("a gap");
        assert!(f.detail.unwrap().contains("lost and took back"));
    }
}
