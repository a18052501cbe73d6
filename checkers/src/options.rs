//! The knobs of a check ([`CheckOptions`]) and the stages it tells its
//! progress by ([`Stage`]). Read by every stage; reads only the solver's
//! [`Strategy`](crate::decide::blackbox::solve::Strategy) and the report's
//! [`Verdict`].

use std::time::Duration;

use crate::report::Verdict;

/// Knobs of a check.
#[derive(Clone)]
pub struct CheckOptions {
    /// Give up and answer `unknown` after this long.
    pub timeout: Option<Duration>,
    /// How many counterexamples of each kind to spell out.
    pub max_examples: usize,
    /// Use the database's own timestamps (`dbts`) as the version order.
    pub use_dbts: bool,
    /// How the SER/SI solver searches.
    pub strategy: crate::decide::blackbox::solve::Strategy,
    /// Skip the cheap guesses (witness, time guidance, local search) and
    /// decide by the complete search alone; for measurements.
    pub skip_witness: bool,
    /// Run every fast path of the black-box search (a stronger level's
    /// witness, the read-from guess, the solver portfolio) even where its
    /// size or shape threshold would skip it, and before the older guesses;
    /// for testing the fast paths against the oracle.
    pub force_fast_paths: bool,
    /// Told the verdict as soon as it is known, before the other levels
    /// are placed and the counterexamples shrunk (for progress output).
    pub on_verdict: Option<OnVerdict>,
    /// Told each stage of the check as it starts or ends (for progress
    /// output); see [`Stage`].
    pub progress: Option<Progress>,
}

impl std::fmt::Debug for CheckOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckOptions")
            .field("timeout", &self.timeout)
            .field("max_examples", &self.max_examples)
            .field("use_dbts", &self.use_dbts)
            .field("strategy", &self.strategy)
            .field("skip_witness", &self.skip_witness)
            .field("force_fast_paths", &self.force_fast_paths)
            .field("on_verdict", &self.on_verdict.as_ref().map(|_| "Fn"))
            .field("progress", &self.progress.as_ref().map(|_| "Fn"))
            .finish()
    }
}

/// A callback told the requested level's verdict and how long it took.
pub type OnVerdict = std::sync::Arc<dyn Fn(history::Level, Verdict, Duration) + Send + Sync>;

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            timeout: None,
            max_examples: 8,
            use_dbts: false,
            strategy: crate::decide::blackbox::solve::Strategy::Portfolio,
            skip_witness: false,
            force_fast_paths: false,
            on_verdict: None,
            progress: None,
        }
    }
}

/// Where a check is, as told to [`CheckOptions::progress`], in the order
/// [`check`] goes through its stages. Every check tells `Indexing`,
/// `Indexed`, `Deciding`, `Decided`, `Placing`, `Certifying` and `Done`,
/// once each; nothing is told from inside a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Indexing this many transactions (read-from, committed set).
    Indexing { txns: usize },
    /// The index is built; it holds this many transactions.
    Indexed { txns: usize },
    /// Deciding the requested level (the long stage on a large history).
    Deciding { level: history::Level },
    /// The requested level's verdict is known (its counterexamples shrunk).
    Decided(Verdict),
    /// Placing the other levels, on a small budget of their own.
    Placing,
    /// Re-checking the verdict's proof with the independent verifier (it
    /// starts with placing, on a second thread; told once placing is done
    /// and only the proof is awaited).
    Certifying,
    /// The report is being assembled; the check is over.
    Done,
}

/// A callback told each [`Stage`] of a check. It runs on the checking
/// thread: it should return at once (set a message, not draw).
pub type Progress = std::sync::Arc<dyn Fn(Stage) + Send + Sync>;

impl CheckOptions {
    /// Tells the progress callback, if any, that the check is at `stage`.
    pub fn tell(&self, stage: Stage) {
        if let Some(p) = &self.progress {
            p(stage);
        }
    }
}
