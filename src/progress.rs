//! What `harness check` and `harness run` show while a history is read and
//! checked, on stderr.
//!
//! * On a terminal: a bar of the bytes read while a JSONL history is read
//!   (a spinner for the other formats), then a spinner naming the check's
//!   stage and how long it has run. Both are cleared before the verdict.
//! * Elsewhere (CI logs, pipes): one line about every [`STATUS_EVERY`]
//!   while a stage runs (`check: deciding ser… 20 s`), so a check that
//!   ends within that time prints nothing at all.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use checkers::{CheckOptions, Stage};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the status line is printed when stderr is not a terminal.
pub const STATUS_EVERY: Duration = Duration::from_secs(10);

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
        let jsonl = match format {
            history::Format::Auto => {
                path.is_file()
                    && history::formats::detect(path).ok() == Some(history::Format::Jsonl)
            }
            f => f == history::Format::Jsonl,
        };
        self.read_with(path, jsonl, |on_bytes| {
            history::formats::read_counting(path, format, on_bytes)
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
                eprintln!("stage: {s:?} at {} ms", t0.elapsed().as_millis());
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
    pub fn start(interval: Duration, mut out: Box<dyn Write + Send>) -> StatusPrinter {
        let what = Arc::new(Mutex::new(String::from("starting")));
        let (tx, rx) = mpsc::channel::<()>();
        let shown = Arc::clone(&what);
        let t0 = Instant::now();
        let thread = std::thread::spawn(move || loop {
            match rx.recv_timeout(interval) {
                Err(RecvTimeoutError::Timeout) => {
                    let what = shown.lock().map(|w| w.clone()).unwrap_or_default();
                    let _ = writeln!(out, "{what}… {} s", t0.elapsed().as_secs());
                    let _ = out.flush();
                }
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        });
        StatusPrinter {
            what,
            stop: Mutex::new(Some((tx, thread))),
        }
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
    use super::StatusPrinter;
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
}
