//! Closing reads. A list of `append` is read once, early, as soon as no
//! client can touch it any more (the workload's
//! [`closing_keys`](workloads::Workload::closing_keys)): in a run checked as
//! it goes (`--stream`), that read places the list's last appends, so the
//! streamed check can let go of the list and its writers
//! (`checkers::stream::lists`). Without it they would stay in memory until
//! the final reads at the end of the run, and a run of an hour would grow
//! all along.
//!
//! A list is closed once every client still running has finished the
//! plans that use it: each client counts the plans it has finished
//! ([`Finished`]). The reads are ordinary read-only transactions of kind
//! `final-read` on a session of their own, recorded like any other; a list
//! whose read did not commit is tried again at the next round, and at the
//! end of the run by the final reads.
//!
//! Clients drift apart, and a list stays open until the slowest one has
//! passed it: an append by a faster client that nobody reads meanwhile
//! would keep its writer, and everything after it, in the check's memory
//! for as long as the drift (minutes in an hour's run). So each round also
//! reads, once, every list some client left since the last round (its
//! *passing read*, of kind `passing-read`): each append is then placed within a round or two of
//! its client moving on, whatever the drift. A passing read that does not
//! commit is tried again at the next round, until the list closes.
//!
//! The drift itself is bounded: a client more than [`MAX_DRIFT`] plans
//! behind the fastest skips ahead to it ([`Finished::catch_up`]), so the
//! lists in use, which the check holds whole, stay few however long the
//! run. The plans it skipped get no passing read: it left no list there.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use adapters::Session;
use history::{Key, Status, Txn, FINAL_READ, PASSING_READ};
use tokio::sync::mpsc::UnboundedSender;
use workloads::{Plan, Workload};

use super::runner::{run_plan, Shared};

/// How often the closed lists are read.
const ROUND: Duration = Duration::from_millis(100);

/// How far a client may fall behind the fastest, in plans, before it skips
/// ahead to the fastest's clock ([`Finished::catch_up`]). The lists in use
/// are those between the slowest client still running and the fastest, and
/// the check holds each of them whole until its closing read.
pub const MAX_DRIFT: u64 = 1_000;

/// How many plans each client has finished, and whether it has stopped.
#[derive(Debug)]
pub struct Finished {
    plans: Vec<AtomicU64>,
    stopped: Vec<AtomicBool>,
    /// The most plans a client has finished.
    most: AtomicU64,
    /// How many times a client skipped ahead, and how many plans in all.
    catch_ups: AtomicU64,
    skipped: AtomicU64,
    /// The plans skipped since the closer last looked, `(client, from,
    /// to)`: nobody left lists there, so they get no passing read.
    gaps: std::sync::Mutex<Vec<(u32, u64, u64)>>,
}

impl Finished {
    /// Nothing finished yet, for `clients` clients.
    pub fn new(clients: u32) -> Finished {
        Finished {
            plans: (0..clients).map(|_| AtomicU64::new(0)).collect(),
            stopped: (0..clients).map(|_| AtomicBool::new(false)).collect(),
            most: AtomicU64::new(0),
            catch_ups: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            gaps: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Client `c` finished one more plan (its transaction is recorded).
    pub fn one(&self, c: u32) {
        let now = self.plans[c as usize].fetch_add(1, Ordering::Release) + 1;
        self.most.fetch_max(now, Ordering::AcqRel);
    }

    /// How many plans client `c` skips before its next one: all it lags
    /// behind the fastest client, once that is more than [`MAX_DRIFT`]
    /// (else 0). They count as finished, since `c` will never run them, so
    /// the lists they would have touched close. Without this, the clients
    /// drift apart (a database that favours some connections, a client
    /// away reconnecting) and the lists in use between the slowest and the
    /// fastest grow in number all through the run.
    pub fn catch_up(&self, c: u32) -> u64 {
        let mine = self.plans[c as usize].load(Ordering::Acquire);
        let lag = self.most.load(Ordering::Acquire).saturating_sub(mine);
        if lag <= MAX_DRIFT {
            return 0;
        }
        // The gap first: a closer that sees the jump without it reads the
        // gap's lists once more, which is harmless.
        self.gaps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((c, mine, mine + lag));
        self.plans[c as usize].fetch_add(lag, Ordering::Release);
        self.catch_ups.fetch_add(1, Ordering::Relaxed);
        self.skipped.fetch_add(lag, Ordering::Relaxed);
        lag
    }

    /// How many times a client skipped ahead, and how many plans in all.
    pub fn skips(&self) -> (u64, u64) {
        (
            self.catch_ups.load(Ordering::Relaxed),
            self.skipped.load(Ordering::Relaxed),
        )
    }

    /// Client `c` runs no more plans.
    pub fn stop(&self, c: u32) {
        self.stopped[c as usize].store(true, Ordering::Release);
    }

    /// The fewest plans a client still running has finished; `None` once
    /// every client has stopped.
    fn least_running(&self) -> Option<u64> {
        self.plans
            .iter()
            .zip(&self.stopped)
            .filter(|(_, s)| !s.load(Ordering::Acquire))
            .map(|(p, _)| p.load(Ordering::Acquire))
            .min()
    }

    /// The plans skipped since the last call, `(client, from, to)`.
    fn take_gaps(&self) -> Vec<(u32, u64, u64)> {
        std::mem::take(&mut *self.gaps.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How many plans each client has finished.
    fn each(&self) -> Vec<u64> {
        self.plans
            .iter()
            .map(|p| p.load(Ordering::Acquire))
            .collect()
    }

    /// The most plans a client has finished.
    pub fn most(&self) -> u64 {
        self.most.load(Ordering::Acquire)
    }
}

/// What the closing reads did.
#[derive(Debug, Default)]
pub struct Closed {
    /// Lists last used by plans before this number were closed.
    pub upto: u64,
    /// Closed lists whose read has not committed: the final reads read
    /// them.
    pub left: Vec<Key>,
    /// Why the closing reads stopped early, when they did.
    pub warning: Option<String>,
}

impl Closed {
    /// The lists the final reads still read once every client has stopped.
    pub fn final_keys(mut self, wl: &dyn Workload, finished: &Finished) -> Vec<Key> {
        self.left.extend(wl.keys_in_use(self.upto, finished.most()));
        self.left.sort();
        self.left.dedup();
        self.left
    }
}

/// Reads every list as it closes, until every client has stopped or the
/// run is interrupted.
pub async fn run(
    shared: &Shared,
    finished: &Finished,
    wl: &dyn Workload,
    tx: &UnboundedSender<Txn>,
) -> Closed {
    let mut closed = Closed::default();
    let mut session: Option<(u64, Box<dyn Session>)> = None;
    let mut seen = finished.each();
    let mut passing: Vec<Key> = Vec::new();
    while let Some(least) = finished.least_running() {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        if least > closed.upto {
            let keys = wl.closing_keys(closed.upto, least);
            closed.left.extend(keys);
            closed.upto = least;
        }
        let now = finished.each();
        // A passing read that did not commit is tried again, unless the
        // list is closed now (its closing read places the appends).
        passing.extend(passed(wl, &seen, &now, &finished.take_gaps()));
        passing.sort();
        passing.dedup();
        let closing: std::collections::HashSet<&Key> = closed.left.iter().collect();
        passing.retain(|k| !closing.contains(k));
        seen = now;
        let mut outcome = Ok(());
        if !closed.left.is_empty() {
            outcome = read(shared, &mut session, &mut closed.left, FINAL_READ, tx).await;
        }
        if outcome.is_ok() && !passing.is_empty() {
            outcome = read(shared, &mut session, &mut passing, PASSING_READ, tx).await;
        }
        if let Err(why) = outcome {
            closed.warning = Some(format!("the closing reads stopped: {why}"));
            break;
        }
        tokio::time::sleep(ROUND).await;
    }
    if let Some((_, s)) = session.take() {
        let _ = tokio::time::timeout(shared.connect_timeout, s.close()).await;
    }
    closed
}

/// The lists some client left between `seen` and `now` (plans finished,
/// per client), but for the plans it skipped (`gaps`, `(client, from,
/// to)`): the passing reads of a round. Each client's stretches are asked
/// of the workload once, after overlapping stretches are merged.
fn passed(wl: &dyn Workload, seen: &[u64], now: &[u64], gaps: &[(u32, u64, u64)]) -> Vec<Key> {
    let mut stretches: Vec<(u64, u64)> = Vec::new();
    for (c, (&s, &n)) in seen.iter().zip(now).enumerate() {
        let mut from = s;
        let mut mine: Vec<(u64, u64)> = gaps
            .iter()
            .filter(|g| g.0 as usize == c)
            .map(|g| (g.1, g.2))
            .collect();
        mine.sort_unstable();
        for (a, b) in mine {
            let to = a.min(n);
            if to > from {
                stretches.push((from, to));
            }
            from = from.max(b);
        }
        if n > from {
            stretches.push((from, n));
        }
    }
    stretches.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(stretches.len());
    for (from, to) in stretches {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    merged
        .into_iter()
        .flat_map(|(from, to)| wl.closing_keys(from, to))
        .collect()
}

/// Reads `left` once, in transactions of kind `kind`, removing the lists
/// whose read committed. `Err` only when the adapter cannot run the read
/// at all.
async fn read(
    shared: &Shared,
    session: &mut Option<(u64, Box<dyn Session>)>,
    left: &mut Vec<Key>,
    kind: &'static str,
    tx: &UnboundedSender<Txn>,
) -> Result<(), String> {
    let plans = Plan::final_reads(left, true);
    let mut missed = Vec::new();
    for mut plan in plans {
        plan.kind = kind;
        let (id, s) = match session {
            Some(s) => s,
            None => {
                let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
                match tokio::time::timeout(shared.connect_timeout, shared.db.connect(id)).await {
                    Ok(Ok(s)) => session.insert((id, s)),
                    // The database is away (a fault): the next round.
                    _ => {
                        missed.extend(plan_keys(&plan));
                        continue;
                    }
                }
            }
        };
        let ran = run_plan(shared, *id, s, &plan)
            .await
            .map_err(|e| e.to_string())?;
        if ran.txn.status != Status::Ok {
            missed.extend(plan_keys(&plan));
        }
        if ran.broken {
            if let Some((_, s)) = session.take() {
                let _ = tokio::time::timeout(shared.connect_timeout, s.close()).await;
            }
        }
        if tx.send(ran.txn).is_err() {
            return Err("the recorder is gone".into());
        }
    }
    *left = missed;
    Ok(())
}

fn plan_keys(plan: &Plan) -> impl Iterator<Item = Key> + '_ {
    plan.steps.iter().filter_map(|s| match s {
        workloads::Step::ReadList(k) => Some(k.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::{passed, Finished, MAX_DRIFT};
    use workloads::{Workload, WorkloadConfig};

    #[test]
    fn a_round_reads_each_list_some_client_left_once() {
        let cfg = WorkloadConfig {
            clients: 3,
            ..WorkloadConfig::for_workload("append").unwrap()
        };
        let wl = workloads::append::Append::new(&cfg).unwrap();
        let left = |from, to| wl.closing_keys(from, to);
        // Clients at 0..40 and 30..50 overlap: one stretch 0..50; client 2
        // did nothing.
        let mut want = left(0, 50);
        want.sort();
        assert!(!want.is_empty());
        let mut got = passed(&wl, &[0, 30, 7], &[40, 50, 7], &[]);
        got.sort();
        assert_eq!(got, want);
        // Stretches apart are asked apart: nothing between them is read.
        let got = passed(&wl, &[0, 100], &[10, 110], &[]);
        let mut want = left(0, 10);
        want.extend(left(100, 110));
        assert_eq!(got, want);
        assert!(left(10, 100).iter().all(|k| !got.contains(k)));
        assert!(passed(&wl, &[5, 5], &[5, 5], &[]).is_empty());
        // Plans a client skipped get no passing read: client 0 ran 0..10,
        // skipped 10..5,000 and ran 5,000..5,010.
        let got = passed(&wl, &[0], &[5_010], &[(0, 10, 5_000)]);
        let mut want = left(0, 10);
        want.extend(left(5_000, 5_010));
        assert_eq!(got, want);
        assert!(left(10, 5_000).iter().all(|k| !got.contains(k)));
        // Another client's gap takes nothing from this one's stretch.
        let got = passed(&wl, &[0, 0], &[50, 0], &[(1, 0, 40)]);
        assert_eq!(got, left(0, 50));
    }

    #[test]
    fn a_list_closes_by_the_slowest_client_still_running() {
        let f = Finished::new(3);
        assert_eq!(f.least_running(), Some(0));
        (0..5).for_each(|_| f.one(0));
        (0..2).for_each(|_| f.one(1));
        (0..9).for_each(|_| f.one(2));
        assert_eq!(f.least_running(), Some(2));
        // A client that stopped holds nothing back.
        f.stop(1);
        assert_eq!(f.least_running(), Some(5));
        assert_eq!(f.most(), 9);
        f.stop(0);
        f.stop(2);
        assert_eq!(f.least_running(), None);
    }

    #[test]
    fn a_client_far_behind_skips_to_the_fastest() {
        let f = Finished::new(2);
        (0..MAX_DRIFT).for_each(|_| f.one(0));
        // Exactly MAX_DRIFT behind: it runs on.
        assert_eq!(f.catch_up(1), 0);
        f.one(0);
        assert_eq!(f.catch_up(1), MAX_DRIFT + 1);
        // Its skipped plans count as finished: the lists they would have
        // touched can close.
        assert_eq!(f.least_running(), Some(MAX_DRIFT + 1));
        assert_eq!(f.most(), MAX_DRIFT + 1);
        assert_eq!(f.catch_up(1), 0);
        assert_eq!(f.skips(), (1, MAX_DRIFT + 1));
        assert_eq!(f.take_gaps(), vec![(1, 0, MAX_DRIFT + 1)]);
        assert!(f.take_gaps().is_empty());
    }
}
