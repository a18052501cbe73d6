//! The final reads of a run: once the clients have stopped and every fault
//! has healed, the run waits (at most `--final-read-wait`) until the
//! database answers again, then reads back every key the run wrote (for
//! list-append, every list) in ordinary read-only transactions of kind
//! `final-read`, each on a fresh session, and records them in the history
//! like any other transaction. The checker needs nothing new: a write the
//! database acknowledged and then lost is read as missing after its commit,
//! an anomaly at the real-time levels. `--no-final-reads` turns them off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use adapters::{GiveUpNow, Session};
use history::{Status, Txn};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;
use workloads::Plan;

use super::runner::{run_plan, Shared};

/// How many times one final read is tried before it is given up (every
/// attempt is recorded as what it was).
pub const ATTEMPTS: usize = 3;

/// What the final reads did, besides the transactions they recorded.
#[derive(Debug, Default)]
pub struct Done {
    /// The final-read transactions the workload asked for (0: it has none,
    /// or the run wrote nothing).
    pub planned: usize,
    /// How long the database took to answer after the faults healed;
    /// `None` when it did not answer within the wait (or was not asked).
    pub waited: Option<Duration>,
    /// What went wrong, for the report's warnings.
    pub warnings: Vec<String>,
}

/// Resolves once `stop` is set (polled: the flag has no waker).
async fn until_stopped(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A fresh session (a new session id), trying with backoff for at most
/// `window`. `Err(None)` when the run was interrupted meanwhile,
/// `Err(Some(why))` when the database did not answer in time.
async fn connect(
    shared: &Shared,
    window: Duration,
) -> Result<(u64, Box<dyn Session>), Option<String>> {
    let began = Instant::now();
    let mut delay = Duration::from_millis(50);
    let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return Err(None);
        }
        let attempt = tokio::time::timeout(shared.connect_timeout, shared.db.connect(id));
        let result = tokio::select! {
            r = attempt => match r {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err(format!(
                    "no connection within {} s",
                    shared.connect_timeout.as_secs_f64()
                )),
            },
            () = until_stopped(&shared.stop) => return Err(None),
        };
        match result {
            Ok(s) => return Ok((id, s)),
            Err(e) if began.elapsed() + delay > window => return Err(Some(e)),
            Err(_) => {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// Runs the final reads `plans` one after another, each on a fresh
/// session, handing every attempt to the recorder through `tx`. A read
/// that does not commit is tried again, [`ATTEMPTS`] times in all. The
/// first Ctrl-C or SIGTERM (`first`) abandons the statements in flight
/// (`abandon`) and stops them.
pub async fn run(
    shared: &Shared,
    plans: Vec<Plan>,
    wait: Duration,
    tx: &UnboundedSender<Txn>,
    first: &Notify,
    abandon: &GiveUpNow,
) -> Done {
    let mut done = Done {
        planned: plans.len(),
        ..Done::default()
    };
    if plans.is_empty() || shared.stop.load(Ordering::Relaxed) {
        return done;
    }
    let watch = async {
        first.notified().await;
        // Read-only transactions: nothing to wait for.
        abandon.now();
        std::future::pending::<()>().await
    };
    let body = reads(shared, plans, wait, tx, &mut done);
    tokio::select! {
        () = body => {}
        () = watch => {}
    }
    done
}

async fn reads(
    shared: &Shared,
    plans: Vec<Plan>,
    wait: Duration,
    tx: &UnboundedSender<Txn>,
    done: &mut Done,
) {
    // Wait until the database answers: the faults healed just now.
    let began = Instant::now();
    let mut session = match connect(shared, wait).await {
        Ok(s) => Some(s),
        Err(None) => {
            done.warnings
                .push("final reads skipped: the run was interrupted".into());
            return;
        }
        Err(Some(e)) => {
            done.warnings.push(format!(
                "final reads skipped: the database did not answer within {} s \
                 (--final-read-wait) after the last fault healed: {e}",
                wait.as_secs_f64()
            ));
            return;
        }
    };
    done.waited = Some(began.elapsed());
    let mut given_up = 0;
    'plans: for plan in &plans {
        for attempt in 1..=ATTEMPTS {
            if shared.stop.load(Ordering::Relaxed) {
                done.warnings
                    .push("final reads cut short: the run was interrupted".into());
                break 'plans;
            }
            // Every attempt on a fresh session (the first one's is the
            // connection that showed the database answers).
            let (id, mut s) = match session.take() {
                Some(s) => s,
                None => match connect(shared, wait).await {
                    Ok(s) => s,
                    Err(None) => continue,
                    Err(Some(e)) => {
                        done.warnings.push(format!(
                            "final reads cut short: no connection within {} s: {e}",
                            wait.as_secs_f64()
                        ));
                        break 'plans;
                    }
                },
            };
            let ran = run_plan(shared, id, &mut s, plan).await;
            let _ = tokio::time::timeout(shared.connect_timeout, s.close()).await;
            let ran = match ran {
                Ok(r) => r,
                Err(e) => {
                    done.warnings.push(format!(
                        "final reads cut short: the adapter refused one: {e}"
                    ));
                    break 'plans;
                }
            };
            let ok = ran.txn.status == Status::Ok;
            if tx.send(ran.txn).is_err() {
                // The recorder is gone (it could not write).
                shared.stop.store(true, Ordering::Relaxed);
                break 'plans;
            }
            if ok {
                continue 'plans;
            }
            if attempt == ATTEMPTS {
                given_up += 1;
            }
        }
    }
    if given_up > 0 {
        done.warnings.push(format!(
            "{given_up} of {} final reads did not commit in {ATTEMPTS} attempts: the keys they \
             read were not read back",
            plans.len()
        ));
    }
}
