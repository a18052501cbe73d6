//! The check a run makes while it records: a thread follows the history
//! file as the recorder writes it ([`crate::follow`]), so the verdict of a
//! streamed level is known a few milliseconds after the last transaction,
//! and `--stop-on-anomaly` can end the run at the first anomaly.
//!
//! The run's own check of the whole history still follows, for the report
//! and its counterexamples, unless the stream decided `ok` and the run is
//! too long to read back (or `--stream` asks it not to).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use checkers::stream::{ok_report, streams, StreamOptions, Streamed};

use super::signals::Interrupts;
use crate::cli::RunArgs;
use crate::follow::{follow, Followed, Until};

/// The following thread, while the run goes.
pub struct Streaming {
    started: Instant,
    writer_done: Arc<AtomicBool>,
    thread: JoinHandle<anyhow::Result<Option<Followed>>>,
    level: history::Level,
}

/// Starts following `history` when the run makes mini-transactions or
/// list-append and its level is one a stream decides (`None` otherwise).
pub fn start(args: &RunArgs, history: &Path, interrupts: &Interrupts) -> Option<Streaming> {
    if !streams(args.level) || !matches!(args.workload.as_str(), "mini" | "append") {
        for (asked, flag, then) in [
            (
                args.stop_on_anomaly,
                "--stop-on-anomaly",
                "the run goes to its end",
            ),
            (
                args.stream,
                "--stream",
                "the history is read back and checked whole",
            ),
        ] {
            if asked {
                eprintln!(
                    "warning: {flag}: only mini-transactions and list-append at ser, si, \
                     strong-session-ser and strong-session-si are checked while the run records, \
                     not {} at {}; {then}",
                    args.workload, args.level
                );
            }
        }
        return None;
    }
    let writer_done = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&writer_done);
    let path = history.to_path_buf();
    let (level, stop_on) = (args.level, args.stop_on_anomaly);
    let (stop, by, first) = (
        Arc::clone(&interrupts.stop),
        Arc::clone(&interrupts.by),
        Arc::clone(&interrupts.first),
    );
    let thread = std::thread::Builder::new()
        .name("streamed-check".into())
        .spawn(move || {
            // The recorder makes the file once the tables are set up.
            while !path.exists() {
                if done.load(Ordering::Acquire) {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let until = Until {
                idle: None,
                stop_on_anomaly: stop_on,
                stop_when_decided: false,
                writer_done: Some(&done),
            };
            follow(&path, level, StreamOptions::default(), &until, |why| {
                if !stop_on {
                    return;
                }
                eprintln!("streamed check: {why}: ending the run (--stop-on-anomaly)");
                let _ = by.set("--stop-on-anomaly");
                if !stop.swap(true, Ordering::Relaxed) {
                    first.notify_one();
                }
            })
            .map(Some)
        })
        .ok()?;
    Some(Streaming {
        started: Instant::now(),
        writer_done,
        thread,
        level,
    })
}

/// How the streamed check ended.
pub struct Ended {
    /// The verdict as a line for the summary (also printed at once).
    pub line: String,
    /// The report of an `ok` verdict, which the run may take as its own.
    pub ok: Option<checkers::Report>,
}

impl Streaming {
    /// Once the recorder has written its last line: the streamed verdict.
    pub fn finish(self) -> Option<Ended> {
        self.writer_done.store(true, Ordering::Release);
        let followed = match self.thread.join() {
            Ok(Ok(Some(f))) => f,
            Ok(Ok(None)) => return None,
            Ok(Err(e)) => return Some(Ended::failed(format!("{e:#}"))),
            Err(_) => return Some(Ended::failed("its thread panicked".into())),
        };
        let (verdict, stats) = followed.streamed?;
        if stats.ok == 0 {
            // The run says itself that it has nothing to check.
            return None;
        }
        let level = self.level;
        let ok = matches!(verdict, Streamed::Ok).then(|| {
            let ms = self.started.elapsed().as_millis() as u64;
            ok_report(level, &stats, &StreamOptions::default(), ms)
        });
        let line = match verdict {
            Streamed::Ok => format!(
                "streamed check: {level} ok ({} txns, at most {} in memory), {} ms after the \
                 last transaction",
                stats.txns,
                stats.peak_kept,
                followed.after_last.as_millis()
            ),
            Streamed::Anomalous(why) => format!("streamed check: {level} anomalous: {why}"),
            Streamed::Offline(why) => {
                format!("streamed check: {level} left to the full check: {why}")
            }
        };
        eprintln!("{line}");
        Some(Ended { line, ok })
    }
}

impl Ended {
    fn failed(why: String) -> Ended {
        Ended {
            line: format!("streamed check: failed ({why})"),
            ok: None,
        }
    }
}
