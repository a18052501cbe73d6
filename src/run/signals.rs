//! The signals that interrupt a run: Ctrl-C (SIGINT) and SIGTERM (what
//! `timeout`, docker and CI send), as one stream.
//!
//! One signal is one signal, however it arrives. GNU `timeout` (without
//! `--foreground`) sends its signal twice: to the harness, then to its
//! whole process group, which the harness is in. Ctrl-C under a wrapper
//! that forwards signals (docker, a shell script that traps and passes
//! them on) arrives twice the same way: once from the terminal to the
//! foreground process group, once from the wrapper. The two deliveries
//! come microseconds apart; when the first has already been taken before
//! the second arrives they are two signals to the kernel and to tokio, and
//! the second used to be taken as "quit at once", losing the history's
//! `end` line, the verdict and the cleanup of the tables (once in about ten
//! `timeout` runs). So [`Signals::next`] takes a repeat of the same signal
//! within [`REPEAT_WINDOW`] of the last one it reported as that same
//! delivery: a second signal that quits at once is one sent a second or
//! more after the first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long an interrupted run waits for its transactions in flight, once
/// its faults are healed, before it abandons them (their connections are
/// dropped; each becomes `fail`, or `info` when it was committing).
pub const GRACE: Duration = Duration::from_secs(5);

/// A repeat of the signal last reported, within this time of it, is taken
/// as the same delivery (see the module's documentation).
pub const REPEAT_WINDOW: Duration = Duration::from_secs(1);

/// Both signals, once their handlers are installed.
pub struct Signals {
    /// `None` when SIGINT cannot be handled (then it kills at once).
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    /// `None` when SIGTERM cannot be handled (then it kills at once).
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    /// The signal last reported, and when.
    last: Option<(&'static str, Instant)>,
}

impl Signals {
    /// Installs the SIGINT and SIGTERM handlers (from now on neither kills
    /// the process by itself: a signal that comes before [`Signals::next`]
    /// is asked is kept for it). Must run inside the runtime.
    pub fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let install = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("warning: cannot handle {name} (it will kill the run): {e}");
                    None
                }
            };
            Signals {
                int: install(SignalKind::interrupt(), "SIGINT"),
                term: install(SignalKind::terminate(), "SIGTERM"),
                last: None,
            }
        }
        #[cfg(not(unix))]
        Signals { last: None }
    }

    /// The next signal's name (a repeat of the last one within
    /// [`REPEAT_WINDOW`] is not reported); `None` when no more can be
    /// received.
    pub async fn next(&mut self) -> Option<&'static str> {
        loop {
            let sig = self.next_delivery().await?;
            let now = Instant::now();
            let repeat = self
                .last
                .is_some_and(|(s, at)| s == sig && now.duration_since(at) < REPEAT_WINDOW);
            if !repeat {
                self.last = Some((sig, now));
                return Some(sig);
            }
        }
    }

    /// The next delivery of either signal, repeats included.
    async fn next_delivery(&mut self) -> Option<&'static str> {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
                match s {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            }
            if self.int.is_none() && self.term.is_none() {
                return None;
            }
            tokio::select! {
                i = recv(&mut self.int) => i.map(|()| "SIGINT"),
                t = recv(&mut self.term) => t.map(|()| "SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.ok().map(|()| "SIGINT")
        }
    }
}

/// What the signals do to a run, shared with its clients.
#[derive(Clone, Debug)]
pub struct Interrupts {
    /// Set by the first signal, and by the run itself (a fatal error, a
    /// recorder that cannot write, the end of the clients phase): no
    /// transaction starts after it, and a signal that finds it set quits at
    /// once.
    pub stop: Arc<AtomicBool>,
    /// The first signal (`SIGINT`, `SIGTERM`), once one came.
    pub by: Arc<OnceLock<&'static str>>,
    /// Woken once, by the first signal: the run then heals its faults and
    /// bounds its wait for the transactions in flight.
    pub first: Arc<tokio::sync::Notify>,
    /// Abandons every statement in flight, once the [`GRACE`] is over.
    pub abandon: Arc<adapters::GiveUpNow>,
    /// What the database's sessions watch for that (see
    /// `adapters::OpenOptions::give_up`).
    pub abandoned: adapters::GiveUp,
}

impl Default for Interrupts {
    fn default() -> Interrupts {
        let (abandon, abandoned) = adapters::GiveUp::pair();
        Interrupts {
            stop: Arc::default(),
            by: Arc::default(),
            first: Arc::default(),
            abandon: Arc::new(abandon),
            abandoned,
        }
    }
}

impl Interrupts {
    /// Installs the handlers and watches the signals for the rest of the
    /// process: the first one sets [`Interrupts::stop`] (the clients then
    /// finish the transactions in flight, so the history stays complete
    /// and is checked and reported); one that finds it already set quits
    /// at once. Call it before anything a signal must not cut short (the
    /// run folder, the tables, the history); a signal before the clients
    /// start stops them before their first transaction. Must run inside
    /// the runtime, which keeps the watch going as long as it lives.
    pub fn watch() -> Interrupts {
        let me = Interrupts::default();
        let mut signals = Signals::new();
        let it = me.clone();
        tokio::spawn(async move {
            while let Some(sig) = signals.next().await {
                let _ = it.by.set(sig);
                if it.stop.swap(true, Ordering::Relaxed) {
                    eprintln!("interrupted by {sig}");
                    std::process::exit(exit_status(sig));
                }
                it.first.notify_one();
                eprintln!(
                    "interrupted by {sig}: healing the faults, then finishing the transactions \
                     in flight for at most {} s (another Ctrl-C or SIGTERM, a second or more \
                     later, quits at once)",
                    GRACE.as_secs()
                );
            }
        });
        me
    }
}

/// The exit status of a process that quits at once on `sig`: 128 + its
/// number, as a shell reports a process the signal killed.
pub fn exit_status(sig: &str) -> i32 {
    match sig {
        "SIGTERM" => 143,
        _ => 130,
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::Signals;

    /// Sends `sig` to this process.
    fn raise(sig: &str) {
        let pid = std::process::id().to_string();
        let ok = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    #[test]
    fn a_repeat_within_the_window_is_one_signal() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut s = Signals::new();
            raise("TERM");
            assert_eq!(s.next().await, Some("SIGTERM"));
            // The second delivery after the first was taken: the same one.
            raise("TERM");
            let again = tokio::time::timeout(std::time::Duration::from_millis(300), s.next()).await;
            assert!(again.is_err(), "a repeat was reported: {again:?}");
            // Another signal is another signal.
            raise("INT");
            assert_eq!(s.next().await, Some("SIGINT"));
        });
    }
}
