//! The recorder: one thread that receives finished transactions and appends
//! each to `history.jsonl` at once, so that a crash of the harness loses
//! only the transactions still in flight. It numbers transactions in the
//! order they finish and keeps the progress bar up to date.

use std::io::{self, IsTerminal};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use history::{Fault, Header, JsonlWriter, Status, Txn};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc::UnboundedReceiver;

use super::holdback::Holdback;
use super::runner::Clock;
use super::stats::Accumulator;
use crate::progress::{RunCounts, RunStatus};
use crate::report::Bucketing;

/// What the recorder wrote.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recorded {
    /// Transaction lines written.
    pub txns: u64,
    /// Of which committed.
    pub ok: u64,
    /// Of which surely not committed.
    pub fail: u64,
    /// Of which unknown.
    pub info: u64,
}

/// What the recorder kept of the lines it wrote, so that a run too long
/// to read back still reports its statistics, charts and faults (see
/// [`super::stats::Accumulator`] and [`crate::report::Bucketing`]).
pub struct Kept {
    pub stats: Accumulator,
    pub buckets: Bucketing,
    pub faults: Vec<Fault>,
}

/// The progress bar: transactions done out of the budget, or seconds out
/// of the duration. When stderr is not a terminal the bar is hidden, and a
/// status line is printed every few seconds instead
/// ([`crate::progress::RunStatus`]).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    by_time: Option<Clock>,
    /// The counts the status line shows, and the line's printer, when
    /// stderr is not a terminal.
    plain: Option<(Arc<RunCounts>, Arc<RunStatus>)>,
}

impl Progress {
    /// A bar over `txns` transactions, or over `duration` when given.
    pub fn new(txns: u64, duration: Option<Duration>, clock: Clock) -> Progress {
        let (len, template, by_time) = match duration {
            Some(d) => (
                d.as_secs().max(1),
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} s  {msg}",
                Some(clock),
            ),
            None => (
                txns,
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} txns  {msg}",
                None,
            ),
        };
        let terminal = io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let plain = (!terminal).then(|| {
            let counts = Arc::new(RunCounts::default());
            let status = RunStatus::start(
                RunStatus::interval(),
                Arc::clone(&counts),
                Box::new(io::stderr()),
            );
            (counts, Arc::new(status))
        });
        let bar = ProgressBar::with_draw_target(Some(len), target);
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress {
            bar,
            by_time,
            plain,
        }
    }

    fn update(&self, r: &Recorded) {
        if let Some((counts, _)) = &self.plain {
            counts.set(r.ok, r.fail, r.info);
            return;
        }
        match self.by_time {
            Some(c) => self.bar.set_position(c.now() / 1_000_000_000),
            None => self.bar.set_position(r.txns),
        }
        self.bar
            .set_message(format!("ok {} fail {} info {}", r.ok, r.fail, r.info));
    }

    /// Removes the bar, or stops the status lines.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if let Some((_, status)) = &self.plain {
            status.stop();
        }
    }
}

/// What reaches the recorder: a finished transaction or a finished fault.
enum Received {
    Txn(Txn),
    Fault(Fault),
    /// A held transaction may have expired.
    Tick,
    /// Every sender of transactions is gone.
    TxnsClosed,
    /// Every sender of faults is gone.
    FaultsClosed,
}

/// Creates `path`, writes the header, and starts the recorder thread. The
/// thread ends when every sender of transactions and of faults is dropped:
/// it then writes the `end` line and syncs the file to disk. A transaction
/// is written once every value it read has its writer in the file (see
/// [`Holdback`]), or after `hold_limit`. Must be called inside the runtime.
pub fn spawn(
    path: &Path,
    header: &Header,
    mut rx: UnboundedReceiver<Txn>,
    mut faults: UnboundedReceiver<Fault>,
    hold_limit: Duration,
    progress: Progress,
) -> io::Result<JoinHandle<io::Result<(Recorded, Kept)>>> {
    let mut w = JsonlWriter::create(path)?;
    w.write_header(header)?;
    let rt = tokio::runtime::Handle::current();
    let handle = std::thread::Builder::new()
        .name("recorder".into())
        .spawn(move || {
            let mut r = Recorded::default();
            let mut kept = Kept {
                stats: Accumulator::default(),
                buckets: Bucketing::growing(),
                faults: Vec::new(),
            };
            let mut fault_lines = Vec::new();
            let mut hold = Holdback::new(hold_limit);
            let (mut txns_open, mut faults_open) = (true, true);
            let mut write = |w: &mut JsonlWriter<_>, mut t: Txn| -> io::Result<()> {
                t.id = r.txns;
                w.write_txn(&t)?;
                kept.stats.add(&t);
                kept.buckets.add(&t);
                r.txns += 1;
                match t.status {
                    Status::Ok => r.ok += 1,
                    Status::Fail => r.fail += 1,
                    Status::Info => r.info += 1,
                }
                progress.update(&r);
                Ok(())
            };
            while txns_open || faults_open {
                let deadline = hold.deadline();
                if deadline.is_some_and(|d| d <= Instant::now()) {
                    for t in hold.expire(Instant::now()) {
                        write(&mut w, t)?;
                    }
                    continue;
                }
                // The common case needs no trip through the runtime.
                if txns_open {
                    if let Ok(t) = rx.try_recv() {
                        for t in hold.push(t, Instant::now()) {
                            write(&mut w, t)?;
                        }
                        continue;
                    }
                }
                let got = rt.block_on(async {
                    let tick = async {
                        match deadline {
                            Some(d) => tokio::time::sleep_until(d.into()).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        t = rx.recv(), if txns_open => t.map_or(Received::TxnsClosed, Received::Txn),
                        f = faults.recv(), if faults_open => {
                            f.map_or(Received::FaultsClosed, Received::Fault)
                        }
                        () = tick => Received::Tick,
                    }
                });
                match got {
                    Received::Txn(t) => {
                        for t in hold.push(t, Instant::now()) {
                            write(&mut w, t)?;
                        }
                    }
                    Received::Fault(f) => {
                        w.write_fault(&f)?;
                        fault_lines.push(f);
                    }
                    Received::Tick => {
                        for t in hold.expire(Instant::now()) {
                            write(&mut w, t)?;
                        }
                    }
                    Received::TxnsClosed => txns_open = false,
                    Received::FaultsClosed => faults_open = false,
                }
            }
            for t in hold.drain() {
                write(&mut w, t)?;
            }
            w.write_end(Some(super::now_rfc3339()))?;
            w.flush()?;
            w.sync()?;
            kept.faults = fault_lines;
            Ok((r, kept))
        })?;
    Ok(handle)
}
