//! Consistency checking of transaction histories.
//!
//! [`check`] takes a [`History`](history::History) and a
//! [`Level`](history::Level) and returns a [`Report`]: a verdict and every
//! anomaly as a minimal counterexample. The checker never depends on how the
//! history was made; it can be used as a library.
//!
//! The modules, in the order a check uses them:
//!
//! * [`index`]: dense ids, read-from resolution, committed set, non-cyclic
//!   anomalies;
//! * [`mini`]: the version order of mini-transaction histories;
//! * [`general`]: any read/write history: known edges, a witness order,
//!   then [`polygraph`] constraints pruned and solved by [`solve`] over an
//!   incrementally acyclic graph ([`acyclic`]); when the level orders
//!   sessions, [`clock_prune`] prunes every key's writer pairs by vector
//!   clocks ([`clocks`]) without building them; [`interpret`] shrinks a
//!   refutation to a small counterexample;
//! * [`depgraph`]: dependency and begin/commit graphs for a known version
//!   order;
//! * [`graph`]: the graph storage and searches (components, shortest
//!   cycle);
//! * [`cycles`]: cycle search by layers and Adya classification;
//! * [`explain`]: counterexamples with a reason per edge, and DOT;
//! * [`weak`]: the levels below SI (rc, ra, cc by saturation; pc through
//!   the SI machinery);
//! * [`lattice`]: which levels imply which, and what each forbids;
//! * [`check`](mod@check): choosing a method and assembling the report;
//! * [`oracle`], [`list_oracle`] and [`testgen`]: brute-force reference
//!   semantics (registers, lists) and random small histories, for testing
//!   all of the above;
//! * [`evidence`]: the checker's verdicts as certificates (witnesses and
//!   refutations);
//! * [`certify`]: certificates (a witness execution for `ok`, refutations
//!   for `anomalous`) and their independent, near-linear verifier.

pub mod acyclic;
pub mod anomaly;
pub mod certify;
pub mod check;
pub mod clock_prune;
pub mod clocks;
pub mod cycles;
pub mod depgraph;
pub mod derive;
pub mod evidence;
pub mod explain;
pub mod general;
pub mod graph;
pub mod index;
pub mod interpret;
pub mod lattice;
pub mod list_oracle;
pub mod lists;
pub mod mini;
pub mod oracle;
pub mod polygraph;
pub mod report;
pub mod solve;
pub mod testgen;
pub mod weak;
pub mod window;
pub mod witness;
pub mod writers;

use std::time::Duration;

pub use anomaly::{AnomalyKind, CommonName, Scope};
pub use explain::{edge_meaning, to_dot};
pub use report::{
    has_write_ids, op_text, severity, value_text, write_id_label, Anomaly, Certified, EdgeKind,
    EdgeView, HistoryStats, Report, TxnView, Verdict,
};

pub use check::check;

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
    pub strategy: solve::Strategy,
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
            strategy: solve::Strategy::Portfolio,
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

#[cfg(test)]
mod tests {
    use super::{check, CheckOptions, Stage, Verdict};
    use history::Level;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_check_tells_each_stage_once_in_order() {
        let h = history::read_jsonl_str(
            r#"{"id":0,"session":0,"status":"ok","start":1,"end":4,"ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"ok","start":2,"end":5,"ops":[["r",1,null],["w",1,11]]}
"#,
        )
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let opts = CheckOptions {
            progress: Some(Arc::new(move |s| log.lock().unwrap().push(s))),
            ..CheckOptions::default()
        };
        let r = check(&h, Level::Si, &opts);
        assert_eq!(r.verdict, Verdict::Anomalous);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                Stage::Indexing { txns: 2 },
                Stage::Indexed { txns: 2 },
                Stage::Deciding { level: Level::Si },
                Stage::Decided(Verdict::Anomalous),
                Stage::Placing,
                Stage::Certifying,
                Stage::Done,
            ]
        );
        assert!(format!("{opts:?}").contains("progress: Some"));
    }
}
