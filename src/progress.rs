//! What `harness check` and `harness run` show while a history is read and
//! checked, on stderr.
//!
//! * On a terminal: a bar of the bytes read while a JSONL history is read
//!   (a spinner for the other formats), then a spinner naming the check's
//!   stage and how long it has run. Both are cleared before the verdict.
//! * Elsewhere (CI logs, pipes): one line about every [`STATUS_EVERY`]
//!   while a stage runs (`check: deciding ser… 20 s`), so a check that
//!   ends within that time prints nothing at all.
//!
//! While the clients of `harness run` run, the recorder shows its own bar
//! on a terminal; elsewhere [`RunStatus`] prints one line about every
//! [`RUN_STATUS_EVERY`] (`run: 10 s: 2468 committed, 56 failed, 0 info;
//! 246.8 committed/s`), so a CI log shows a live run.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use checkers::{CheckOptions, Stage};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the status line is printed when stderr is not a terminal.
pub const STATUS_EVERY: Duration = Duration::from_secs(10);

/// How often `harness run` prints its status line while its clients run,
/// when stderr is not a terminal.
pub const RUN_STATUS_EVERY: Duration = Duration::from_secs(5);

/// An environment variable that sets [`RUN_STATUS_EVERY`] in milliseconds
/// (for tests, which cannot wait that long).
pub const RUN_STATUS_EVERY_ENV: &str = "HARNESS_RUN_STATUS_MS";

/// How the spinner and bar redraw on a terminal.
const TICK: Duration = Duration::from_millis(120);

/// The progress shown on stderr, terminal or not.
pub enum Reporter {
    /// A bar or spinner on the terminal.
    Terminal(ProgressBar),
    /// A status line every so often, from a thread of its own.
    Plain(StatusPrinter),
}

impl Reporter {
    /// A reporter for stderr: bars on a terminal, status lines otherwise.
    pub fn stderr() -> Reporter {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            spinner(&bar, "starting");
            bar.set_draw_target(ProgressDrawTarget::stderr());
            Reporter::Terminal(bar)
        } else {
            Reporter::Plain(StatusPrinter::start(
                STATUS_EVERY,
                Box::new(std::io::stderr()),
            ))
        }
    }

    /// Says what is being done now.
    pub fn stage(&self, what: &str) {
        match self {
            Reporter::Terminal(bar) => {
                if bar.length().is_some() {
                    spinner(bar, what);
                } else {
                    bar.set_message(what.to_string());
                }
                bar.reset_elapsed();
            }
            Reporter::Plain(p) => p.set(what),
        }
    }

    /// Prints a line without breaking the bar.
    pub fn println(&self, line: &str) {
        match self {
            Reporter::Terminal(bar) => bar.suspend(|| eprintln!("{line}")),
            Reporter::Plain(_) => eprintln!("{line}"),
        }
    }

    /// Reads a history (as `harness check` does), with a bar of the bytes
    /// read when it is JSONL.
    pub fn read(
        &self,
        path: &Path,
        format: history::Format,
    ) -> Result<history::History, history::ParseError> {
        let jsonl = path.is_file()
            && history::formats::resolve(path, format).ok() == Some(history::Format::Jsonl);
        self.read_with(path, jsonl, |on_bytes| {
            history::formats::read_kept(path, format, on_bytes, history::Kept::Check)
        })
    }

    /// Reads the history a run recorded (JSONL), with a bar of the bytes
    /// read.
    pub fn read_recorded(&self, path: &Path) -> Result<history::History, history::ParseError> {
        self.read_with(path, true, |on_bytes| {
            history::jsonl::read_jsonl_file_counting(path, on_bytes)
        })
    }

    fn read_with(
        &self,
        path: &Path,
        counts: bool,
        read: impl FnOnce(&dyn Fn(u64)) -> Result<history::History, history::ParseError>,
    ) -> Result<history::History, history::ParseError> {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let what = format!("check: reading {name}");
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let bar = match self {
            Reporter::Terminal(bar) if counts && size > 0 => bar,
            _ => {
                self.stage(&what);
                return read(&|_| {});
            }
        };
        bar.set_length(size);
        bar.set_position(0);
        bar.reset_elapsed();
        bar.set_message(what);
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} {msg} {bar:25} {bytes}/{total_bytes} ({elapsed})",
        ) {
            bar.set_style(style);
        }
        let h = read(&|n| bar.inc(n));
        // Back to a spinner for what follows.
        spinner(bar, "read");
        h
    }

    /// Sets `opts` to tell this reporter the check's stages, and to print
    /// the verdict the moment it is known (terminal only, as
    /// [`early_text`] says).
    pub fn watch(self: &Arc<Self>, opts: &mut CheckOptions, early_verdict: bool) {
        let me = Arc::clone(self);
        let times = stage_times();
        opts.progress = Some(Arc::new(move |s| {
            if let Some(t0) = times {
                eprintln!(
                    "stage: {s:?} at {} ms{}",
                    t0.elapsed().as_millis(),
                    resident()
                );
            }
            if let Some(what) = describe(s) {
                me.stage(&what);
            }
        }));
        if early_verdict && matches!(**self, Reporter::Terminal(_)) {
            let me = Arc::clone(self);
            opts.on_verdict = Some(Arc::new(move |level, verdict, took| {
                me.println(&early_text(level, verdict, took));
            }));
        }
    }

    /// Clears the bar, or stops the status lines.
    pub fn finish(&self) {
        match self {
            Reporter::Terminal(bar) => bar.finish_and_clear(),
            Reporter::Plain(p) => p.stop(),
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// With `HARNESS_STAGE_TIMES` set, when the process started its work: each
/// stage of a check is then printed on stderr with the time since (to see
/// where the time goes without a profiler).
pub fn stage_times() -> Option<Instant> {
    static T0: std::sync::OnceLock<Option<Instant>> = std::sync::OnceLock::new();
    *T0.get_or_init(|| std::env::var_os("HARNESS_STAGE_TIMES").map(|_| Instant::now()))
}

/// `, N MB resident` for a stage line (Linux; empty elsewhere).
pub fn resident() -> String {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok());
    pages.map_or(String::new(), |p| {
        format!(", {} MB resident", p * 4096 / 1_000_000)
    })
}

/// Makes `bar` a spinner saying `what`, with the time it has run.
fn spinner(bar: &ProgressBar, what: &str) {
    bar.unset_length();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    bar.enable_steady_tick(TICK);
}

/// The words for a stage (`None`: keep saying what was said).
pub fn describe(s: Stage) -> Option<String> {
    Some(match s {
        Stage::Indexing { txns } => format!("check: indexing {txns} transactions"),
        Stage::Indexed { .. } | Stage::Decided(_) => return None,
        Stage::Deciding { level } => format!("check: deciding {level}"),
        Stage::Placing => "check: placing the other levels".into(),
        Stage::Certifying => "check: certifying the verdict".into(),
        Stage::Done => "check: writing the report".into(),
    })
}

/// Prints `check: <stage>… <n> s` every `interval` until stopped: nothing
/// when stopped within the first interval.
pub struct StatusPrinter {
    what: Arc<Mutex<String>>,
    stop: Mutex<Option<(Sender<()>, JoinHandle<()>)>>,
}

impl StatusPrinter {
    /// Starts the printing thread, writing to `out`.
    pub fn start(interval: Duration, out: Box<dyn Write + Send>) -> StatusPrinter {
        let what = Arc::new(Mutex::new(String::from("starting")));
        let shown = Arc::clone(&what);
        let stop = Self::every(interval, out, move |elapsed| {
            let what = shown.lock().map(|w| w.clone()).unwrap_or_default();
            format!("{what}… {} s", elapsed.as_secs())
        });
        StatusPrinter {
            what,
            stop: Mutex::new(Some(stop)),
        }
    }

    /// A thread that writes `line(time since it started)` to `out` every
    /// `interval` until told to stop.
    fn every(
        interval: Duration,
        mut out: Box<dyn Write + Send>,
        mut line: impl FnMut(Duration) -> String + Send + 'static,
    ) -> (Sender<()>, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<()>();
        let t0 = Instant::now();
        let thread = std::thread::spawn(move || loop {
            match rx.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {
                    let _ = writeln!(out, "{}", line(t0.elapsed()));
                    let _ = out.flush();
                }
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        });
        (tx, thread)
    }

    /// Says what is being done now (printed at the next interval).
    pub fn set(&self, what: &str) {
        if let Ok(mut w) = self.what.lock() {
            what.clone_into(&mut w);
        }
    }

    /// Stops the thread at once and waits for it; no line follows.
    pub fn stop(&self) {
        let taken = self.stop.lock().ok().and_then(|mut s| s.take());
        if let Some((tx, thread)) = taken {
            let _ = tx.send(());
            let _ = thread.join();
        }
    }
}

impl Drop for StatusPrinter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The transactions recorded so far, as the recorder counts them.
#[derive(Debug, Default)]
pub struct RunCounts {
    ok: AtomicU64,
    fail: AtomicU64,
    info: AtomicU64,
}

impl RunCounts {
    /// Sets the counts: committed, failed, unknown.
    pub fn set(&self, ok: u64, fail: u64, info: u64) {
        self.ok.store(ok, Ordering::Relaxed);
        self.fail.store(fail, Ordering::Relaxed);
        self.info.store(info, Ordering::Relaxed);
    }
}

/// The status line of `harness run`'s clients phase when stderr is not a
/// terminal: `run: 10 s: 2468 committed, 56 failed, 0 info; 246.8
/// committed/s`, every interval (nothing when the clients stop within the
/// first). The seconds are those since the line's clock started; the rate
/// is that of the last interval.
pub struct RunStatus(StatusPrinter);

impl RunStatus {
    /// Starts printing the lines of `counts` to `out`.
    pub fn start(interval: Duration, counts: Arc<RunCounts>, out: Box<dyn Write + Send>) -> Self {
        let (mut last_ok, mut last_at) = (0, Duration::ZERO);
        let stop = StatusPrinter::every(interval, out, move |elapsed| {
            let ok = counts.ok.load(Ordering::Relaxed);
            let fail = counts.fail.load(Ordering::Relaxed);
            let info = counts.info.load(Ordering::Relaxed);
            let took = (elapsed - last_at).as_secs_f64();
            let rate = if took > 0.0 {
                ok.saturating_sub(last_ok) as f64 / took
            } else {
                0.0
            };
            (last_ok, last_at) = (ok, elapsed);
            format!(
                "run: {} s: {ok} committed, {fail} failed, {info} info; {rate:.1} committed/s",
                elapsed.as_secs()
            )
        });
        RunStatus(StatusPrinter {
            what: Arc::default(),
            stop: Mutex::new(Some(stop)),
        })
    }

    /// The interval: [`RUN_STATUS_EVERY`], or the milliseconds in
    /// [`RUN_STATUS_EVERY_ENV`].
    pub fn interval() -> Duration {
        std::env::var(RUN_STATUS_EVERY_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&ms| ms > 0)
            .map_or(RUN_STATUS_EVERY, Duration::from_millis)
    }

    /// Stops the lines at once; none follows.
    pub fn stop(&self) {
        self.0.stop();
    }
}

/// On a terminal, the verdict is shown the moment it is known: placing the
/// other levels and shrinking counterexamples can take seconds more. This
/// is its line.
pub fn early_text(level: history::Level, verdict: checkers::Verdict, took: Duration) -> String {
    format!(
        "{level}: {verdict} (decided in {:.2} s; placing the other levels and shrinking counterexamples)",
        took.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::{RunCounts, RunStatus, StatusPrinter};
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(out: &Shared) -> Vec<String> {
        String::from_utf8(out.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_long_stage_prints_a_line_per_interval() {
        let out = Shared::default();
        let p = StatusPrinter::start(Duration::from_millis(50), Box::new(out.clone()));
        p.set("check: deciding ser");
        std::thread::sleep(Duration::from_millis(200));
        p.stop();
        let got = lines(&out);
        assert!(got.len() >= 2, "{got:?}");
        assert!(got[0].starts_with("check: deciding ser… "), "{got:?}");
        assert!(got[0].ends_with(" s"), "{got:?}");
        // Nothing after stopping.
        let n = got.len();
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(lines(&out).len(), n);
    }

    #[test]
    fn a_short_stage_prints_nothing() {
        let out = Shared::default();
        let p = StatusPrinter::start(Duration::from_millis(50), Box::new(out.clone()));
        p.set("check: deciding ser");
        std::thread::sleep(Duration::from_millis(10));
        drop(p);
        std::thread::sleep(Duration::from_millis(100));
        assert!(lines(&out).is_empty(), "{:?}", lines(&out));
    }

    #[test]
    fn the_run_status_line_has_its_counts_and_rate() {
        let out = Shared::default();
        let counts = Arc::new(RunCounts::default());
        counts.set(40, 3, 1);
        let p = RunStatus::start(
            Duration::from_millis(50),
            Arc::clone(&counts),
            Box::new(out.clone()),
        );
        std::thread::sleep(Duration::from_millis(130));
        p.stop();
        let got = lines(&out);
        assert!(!got.is_empty(), "{got:?}");
        let first = &got[0];
        assert!(first.starts_with("run: "), "{got:?}");
        assert!(
            first.contains(" s: 40 committed, 3 failed, 1 info; "),
            "{got:?}"
        );
        assert!(first.ends_with(" committed/s"), "{got:?}");
        // Nothing new committed since the first line: a rate of 0.
        if let Some(second) = got.get(1) {
            assert!(second.ends_with("; 0.0 committed/s"), "{got:?}");
        }
    }
}
