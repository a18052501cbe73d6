//! The signals that interrupt a run: Ctrl-C (SIGINT) and SIGTERM (what
//! `timeout`, docker and CI send), as one stream.

/// Both signals, once their handlers are installed.
pub struct Signals {
    /// `None` when SIGTERM cannot be handled (then it kills at once).
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the SIGTERM handler (from now on SIGTERM no longer kills
    /// the process by itself). Must run inside the runtime.
    pub fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let term = match signal(SignalKind::terminate()) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("warning: cannot handle SIGTERM (it will kill the run): {e}");
                    None
                }
            };
            Signals { term }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal's name; `None` when no more can be received.
    pub async fn next(&mut self) -> Option<&'static str> {
        #[cfg(unix)]
        {
            let term = async {
                match &mut self.term {
                    Some(t) => t.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = tokio::signal::ctrl_c() => r.ok().map(|()| "SIGINT"),
                t = term => t.map(|()| "SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.ok().map(|()| "SIGINT")
        }
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
