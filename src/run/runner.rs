//! The clients: each one a tokio task with its own connection and plan
//! stream, running transactions one after another until the budget is used
//! up, and handing each finished transaction to the recorder.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::BTreeSet;

use adapters::{AdapterError, Database, DbError, Isolation, Session};
use history::{Key, Status, Txn};
use tokio::sync::mpsc::UnboundedSender;
use workloads::{ClientPlans, Plan};

/// The run's one monotonic clock: nanoseconds since the run started.
#[derive(Clone, Copy, Debug)]
pub struct Clock(Instant);

impl Clock {
    /// A clock that reads 0 now.
    pub fn start() -> Clock {
        Clock(Instant::now())
    }

    /// Nanoseconds since the start.
    pub fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// How much work the run does: a number of transactions, or a deadline.
#[derive(Debug)]
pub enum Budget {
    /// Attempt this many transactions in total (ok, fail and info alike).
    Txns {
        /// The budget.
        total: u64,
        /// Transactions taken so far (may overshoot `total` by the clients).
        claimed: AtomicU64,
    },
    /// Start transactions until this instant.
    Until(Instant),
}

impl Budget {
    /// Takes one transaction from the budget; false when it is used up.
    pub fn claim(&self) -> bool {
        match self {
            Budget::Txns { total, claimed } => claimed.fetch_add(1, Ordering::Relaxed) < *total,
            Budget::Until(t) => Instant::now() < *t,
        }
    }

    /// Gives back a claim that was not used (the client stopped first).
    fn unclaim(&self) {
        if let Budget::Txns { claimed, .. } = self {
            claimed.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// True once no more transactions will be started.
    fn exhausted(&self) -> bool {
        match self {
            Budget::Txns { total, claimed } => claimed.load(Ordering::Relaxed) >= *total,
            Budget::Until(t) => Instant::now() >= *t,
        }
    }
}

/// What every client shares.
pub struct Shared {
    /// The database under test.
    pub db: Arc<dyn Database>,
    /// The isolation every transaction runs at.
    pub iso: Isolation,
    /// The clock of `start` / `end`.
    pub clock: Clock,
    /// What is left to run.
    pub budget: Budget,
    /// Set by Ctrl-C or SIGTERM, a fatal error, or a recorder that cannot
    /// write (shared with the signal watcher, [`super::signals::Interrupts`]).
    pub stop: Arc<AtomicBool>,
    /// The first signal that interrupted the run (`SIGINT`, `SIGTERM`),
    /// when one did: the run ended before its budget was used up.
    pub interrupted_by: Arc<std::sync::OnceLock<&'static str>>,
    /// The next session id for a client that reconnects.
    pub next_session: AtomicU64,
    /// How long a client keeps trying to reconnect before giving up.
    pub reconnect_window: Duration,
    /// How long one connection attempt (or a polite close) may take.
    pub connect_timeout: Duration,
    /// Each client's finished plans, when the run makes closing reads
    /// ([`super::closing`]); the clients then keep no written keys.
    pub finished: Option<super::closing::Finished>,
    /// Every client waits here before its first plan, so that all start
    /// together, as Jepsen's workers do: none can use up a small budget
    /// while the others are still being spawned.
    pub start: tokio::sync::Barrier,
}

/// How a client's run ended.
#[derive(Debug, Default)]
pub struct ClientEnd {
    /// Why the client stopped early, when it did.
    pub warning: Option<String>,
    /// A fatal error that must end the run (a plan the adapter refused).
    pub fatal: Option<String>,
    /// The first few errors by which the database said its own data was
    /// inconsistent ([`adapters::ErrorClass::Integrity`]): a possible
    /// database bug, reported as such, never as an ordinary abort.
    pub integrity: Vec<String>,
    /// Every key the client's plans wrote (or tried to), whatever became
    /// of them: what the run's final reads read.
    pub written: BTreeSet<Key>,
}

/// One plan run: its history line and how it ended.
pub struct Ran {
    /// The finished transaction, as the recorder takes it (its `id` is
    /// given there).
    pub txn: Txn,
    /// The error that ended it, when it did not commit.
    pub error: Option<DbError>,
    /// True when the session must be replaced before the next plan.
    pub broken: bool,
}

/// Runs `plan` on `s`, as session `session_id`, and builds the
/// transaction the history records for it. `Err` only when the adapter
/// cannot express the plan (nothing was sent).
pub async fn run_plan(
    shared: &Shared,
    session_id: u64,
    s: &mut Box<dyn Session>,
    plan: &Plan,
) -> Result<Ran, AdapterError> {
    let start = shared.clock.now();
    let outcome = s.run(plan, &shared.iso).await?;
    let finish = shared.clock.now();
    let txn = Txn {
        id: 0, // the recorder numbers transactions as they finish
        session: session_id,
        status: outcome.status,
        start: Some(start),
        // An info transaction may take effect after we gave up on it.
        end: (outcome.status != Status::Info).then_some(finish),
        error: outcome.error_text().map(Into::into),
        ops: outcome.ops,
        dbts: outcome.dbts,
        kind: Some(plan.kind.into()),
        node: s.node().map(Into::into),
    };
    Ok(Ran {
        txn,
        error: outcome.error,
        broken: outcome.broken,
    })
}

/// How many integrity errors a client keeps word for word.
const INTEGRITY_KEPT: usize = 3;

/// The first and the longest wait after an unavailable node's refusal.
const UNAVAILABLE_WAIT_MIN: Duration = Duration::from_millis(20);
const UNAVAILABLE_WAIT_MAX: Duration = Duration::from_millis(500);

/// One client: runs plans on `session` (reconnecting when the connection
/// breaks) until the budget is used up or the run is stopped.
pub async fn client(
    shared: Arc<Shared>,
    client: u32,
    first: Box<dyn Session>,
    mut plans: Box<dyn ClientPlans>,
    tx: UnboundedSender<Txn>,
) -> ClientEnd {
    let mut session_id = u64::from(client);
    let mut session = Some(first);
    let mut end = ClientEnd::default();
    shared.start.wait().await;
    // How long to wait after a node said it is unavailable (doubling while
    // it keeps saying so): a client on a cut-off node must not spin.
    let mut unavailable_wait = Duration::ZERO;
    while !shared.stop.load(Ordering::Relaxed) {
        let s = match session.as_mut() {
            Some(s) => s,
            None => match reconnect(&shared, client).await {
                Ok((id, s)) => {
                    session_id = id;
                    session.insert(s)
                }
                Err(why) => {
                    end.warning = why.map(|w| format!("client {client} stopped: {w}"));
                    break;
                }
            },
        };
        if !shared.budget.claim() {
            break;
        }
        if shared.stop.load(Ordering::Relaxed) {
            shared.budget.unclaim();
            break;
        }
        if let Some(f) = &shared.finished {
            let behind = f.catch_up(client);
            if behind > 0 {
                plans.skip(behind);
            }
        }
        let plan = plans.next_plan();
        if shared.finished.is_none() {
            for k in plan.written_keys() {
                if !end.written.contains(k) {
                    end.written.insert(k.clone());
                }
            }
        }
        let outcome = match run_plan(&shared, session_id, s, &plan).await {
            Ok(o) => o,
            Err(e) => {
                end.fatal = Some(format!("client {client}: {e}"));
                shared.stop.store(true, Ordering::Relaxed);
                break;
            }
        };
        if tx.send(outcome.txn).is_err() {
            // The recorder is gone (it could not write); stop everyone.
            shared.stop.store(true, Ordering::Relaxed);
            break;
        }
        if let Some(f) = &shared.finished {
            f.one(client);
        }
        if let Some(e) = outcome
            .error
            .as_ref()
            .filter(|e| e.class == adapters::ErrorClass::Integrity)
        {
            if end.integrity.len() < INTEGRITY_KEPT {
                end.integrity
                    .push(format!("session {session_id}, {}: {}", plan.kind, e.text()));
            }
        }
        let unavailable = outcome
            .error
            .as_ref()
            .is_some_and(|e| e.class == adapters::ErrorClass::Unavailable);
        unavailable_wait = if unavailable {
            (unavailable_wait * 2).clamp(UNAVAILABLE_WAIT_MIN, UNAVAILABLE_WAIT_MAX)
        } else {
            Duration::ZERO
        };
        if unavailable {
            tokio::time::sleep(unavailable_wait).await;
        }
        if outcome.broken {
            if let Some(s) = session.take() {
                // A close over a dead link must not hang the client.
                let _ = tokio::time::timeout(shared.connect_timeout, s.close()).await;
            }
        }
    }
    if let Some(f) = &shared.finished {
        f.stop(client);
    }
    if let Some(s) = session.take() {
        let _ = tokio::time::timeout(shared.connect_timeout, s.close()).await;
    }
    end
}

/// Opens a new connection for `client`, on its node, with exponential
/// backoff. `Err(None)` when the run ended meanwhile, `Err(Some(why))` when
/// the database stayed unreachable for the whole reconnect window.
async fn reconnect(
    shared: &Shared,
    client: u32,
) -> Result<(u64, Box<dyn Session>), Option<String>> {
    let began = Instant::now();
    let mut delay = Duration::from_millis(50);
    // A reconnected client is a new session: its transactions are not
    // ordered after the old connection's by the database.
    let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
    loop {
        if shared.stop.load(Ordering::Relaxed) || shared.budget.exhausted() {
            return Err(None);
        }
        let attempt =
            tokio::time::timeout(shared.connect_timeout, shared.db.connect(u64::from(client)));
        let result = match attempt.await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(_) => Err(format!(
                "no connection within {} s",
                shared.connect_timeout.as_secs_f64()
            )),
        };
        match result {
            Ok(s) => return Ok((id, s)),
            Err(e) if began.elapsed() >= shared.reconnect_window => {
                return Err(Some(format!(
                    "could not reconnect for {} s: {e}",
                    shared.reconnect_window.as_secs()
                )))
            }
            Err(_) => {
                tokio::time::sleep(delay).await;
                // Capped low: a server back after a crash or a partition
                // should see its clients again within a second.
                delay = (delay * 2).min(Duration::from_secs(1));
            }
        }
    }
}
