//! Consistency checking of transaction histories.
//!
//! [`check`] takes a [`History`](history::History) and a
//! [`Level`](history::Level) and returns a [`Report`]: a verdict and every
//! anomaly as a minimal counterexample. The checker never depends on how the
//! history was made; it can be used as a library.
//!
//! The folders follow the stages of a check ([`check`](mod@check) runs
//! them in this order):
//!
//! 1. [`index`]: dense ids, read-from resolution, the committed set, and
//!    the non-cyclic anomalies (its [`writers`](index::writers) and
//!    [`lists`](index::lists) passes);
//! 2. [`decide`]: the requested level's verdict:
//!    * [`mini`](decide::mini), [`depgraph`](decide::depgraph) and
//!      [`cycles`](decide::cycles): the linear check when the version order
//!      is known (mini-transactions, timestamps): dependency graphs, cycle
//!      search by layers and Adya classification;
//!    * [`weak`](decide::weak): the levels below SI (rc, ra, cc by
//!      saturation; pc through the SI machinery);
//!    * [`blackbox`](decide::blackbox): any read/write history at SI and
//!      up: known edges, a witness order, clock pruning, windows, polygraph
//!      constraints solved over an incrementally acyclic graph, local
//!      refutations;
//! 3. placing the other levels by the [`lattice`] (which levels imply
//!    which, and what each forbids), in [`check`](mod@check) itself;
//! 4. [`explain`]: counterexamples with a reason per edge, DOT, and the
//!    verdicts as certificates ([`evidence`](explain::evidence)), used by
//!    the deciding stage as it shrinks and by the report;
//! 5. [`certify`]: certificates (a witness execution for `ok`, refutations
//!    for `anomalous`) and their independent, near-linear verifier.
//!
//! Shared by all: [`options`] (the knobs and the progress stages),
//! [`anomaly`] (names), [`report`] (what a check returns), [`graph`]
//! (graph storage and searches: components, shortest cycle);
//! `session_writes` (vector clock entries, and each key's writes per
//! session, for cc's decision and its certificate).
//!
//! [`stream`]: beside the stages, the check of a history as it is
//! written (ser, si and their session variants on mini-transactions), in
//! memory that stops growing; what it cannot decide goes to [`check`].
//!
//! [`exhaustive`]: every level decided by enumeration on tiny histories,
//! for [`certify`] to re-decide the sub-histories a refutation names, and
//! as the reference semantics (the oracle) the tests hold all of the above
//! to (the random small histories for those tests are in the
//! `checkers-testkit` crate, not shipped here).
//!
//! The stage folders keep their files' old paths where other crates use
//! them: [`general`], [`solve`], [`window`] and [`weak`] are re-exported
//! here.

pub mod anomaly;
pub mod certify;
pub mod check;
mod cores;
pub mod decide;
pub mod exhaustive;
pub mod explain;
pub mod graph;
pub mod index;
pub mod lattice;
pub mod options;
pub mod report;
mod session_writes;
pub mod stream;

pub use decide::blackbox::{general, solve, window};
pub use decide::weak;

pub use anomaly::{AnomalyKind, CommonName, Scope};
pub use explain::{edge_meaning, to_dot};
pub use report::{
    has_write_ids, op_text, severity, value_text, write_id_label, Anomaly, Certified, EdgeKind,
    EdgeView, HistoryStats, Report, TxnView, Verdict,
};

pub use check::check;
pub use options::{CheckOptions, OnVerdict, Progress, Stage};

/// True when a second thread has a core of its own: work is split in two
/// only then.
pub(crate) fn two_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|c| c.get() > 1)
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
