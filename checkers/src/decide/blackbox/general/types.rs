//! What the general search takes ([`GeneralOptions`]) and gives
//! ([`General`]), and [`Search`]: the search as the sub-history searches
//! below it ([`interpret`](crate::decide::blackbox::interpret),
//! [`window`](crate::decide::blackbox::window)) call it back, so they need
//! not import the search that calls them.

use std::time::Instant;

use history::Level;

use crate::decide::blackbox::polygraph::{NodeEdge, Polygraph};
use crate::decide::blackbox::solve::Strategy;
use crate::decide::cycles::Cycle;
use crate::decide::depgraph::{DepGraph, Label, Model};
use crate::graph::GraphBuilder;
use crate::index::Index;

/// The model a level is checked in.
pub fn model_of(level: Level) -> Model {
    if matches!(level, Level::Ser | Level::StrongSessionSer | Level::Sser) {
        Model::Ser
    } else {
        Model::Si
    }
}

/// Knobs of the general check.
#[derive(Clone, Copy, Debug)]
pub struct GeneralOptions {
    pub deadline: Option<Instant>,
    pub strategy: Strategy,
    /// Skip the witness and go straight to the solver (for measurements).
    pub skip_witness: bool,
    /// The most writer pairs we build constraints for.
    pub max_pairs: u64,
    /// Use the database's timestamps: commit order as the version order,
    /// and each transaction's snapshot at its start timestamp.
    pub use_dbts: bool,
    /// Before the complete search, look for a small refuted sub-history
    /// around where the witness failed (off inside such searches).
    pub local: bool,
    /// Prune before solving (off only to test the solver on its own).
    pub prune: bool,
    /// Write down a pruning contradiction as a derivation (for a
    /// certificate; costs a search per decision it needs).
    pub prove: bool,
    /// Run every fast path regardless of its thresholds (for tests).
    pub force_fast_paths: bool,
    /// Prune by vector clocks over the sessions when the level orders
    /// them ([`clock_prune`](crate::decide::blackbox::clock_prune)); off to test the
    /// pair-by-pair pruning and the solver on their own.
    pub clocks: bool,
    /// Solve what pruning leaves open (off where only a derivation is of
    /// use: the solver's refutations come without one).
    pub solve: bool,
}

impl Default for GeneralOptions {
    fn default() -> Self {
        GeneralOptions {
            deadline: None,
            strategy: Strategy::Portfolio,
            skip_witness: false,
            max_pairs: 60_000_000,
            use_dbts: false,
            local: true,
            prune: true,
            prove: false,
            force_fast_paths: false,
            clocks: true,
            solve: true,
        }
    }
}

/// What the general check concluded.
#[derive(Debug)]
pub enum General {
    /// Valid; `how` says whether a witness or the solver showed it, and
    /// `schedule` is the witness: the committed transactions' nodes in an
    /// order with every edge forward (SER model: transactions in serial
    /// order; SI model: `2t` begin and `2t + 1` commit events).
    Ok {
        how: &'static str,
        schedule: Vec<u32>,
    },
    /// Cycles among edges every version order has, and lost updates.
    Forced {
        cycles: Vec<Cycle>,
        lost: Vec<crate::decide::blackbox::polygraph::LostUpdate>,
    },
    /// No version order works, but no single forced cycle shows it: the
    /// proof went through pruning or the solver.
    Refuted {
        how: &'static str,
        seed: Vec<u32>,
        /// The cycle that closed the refutation, when pruning found it:
        /// every edge is known or forced.
        cycle: Option<Vec<crate::decide::depgraph::TxnEdge>>,
        /// What pruning decided on the way, as a derivation (when asked).
        derivation: Option<crate::certify::certificate::Derivation>,
    },
    /// Could not decide.
    Unknown(String),
}

/// A dependency graph over a polygraph's nodes with the given edges.
pub(crate) fn graph_of(p: &Polygraph, edges: impl Iterator<Item = NodeEdge>) -> DepGraph {
    let mut b: GraphBuilder<Label> = GraphBuilder::new(p.nodes);
    for (f, t, l) in edges {
        b.edge(f, t, l);
    }
    DepGraph::from_builder(b, p.model, p.txns)
}

/// The general search on a (sub-)history: implemented by
/// [`check_general`](super::check_general) for its options. The searches
/// on sub-histories that the general search itself runs (local
/// refutations, windows, shrinking) call it through this trait.
pub trait Search {
    /// [`check_general`](super::check_general) with these options.
    fn search(&self, ix: &Index, level: Level) -> General;
}
