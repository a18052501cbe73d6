//! Stage 2 of a check: deciding the requested level.
//!
//! Enters: the [`Index`](crate::index::Index) of stage 1 and a level.
//! Leaves: a verdict with its proof (a witness, or anomalies and their
//! refutations, written with [`certify`](crate::certify)'s types), which
//! [`check`](mod@crate::check) places on the lattice (stage 3) and hands to
//! [`certify`](crate::certify) (stage 4).
//!
//! * [`mini`]: the version order of mini-transaction histories;
//! * [`depgraph`]: dependency and begin/commit graphs for a known version
//!   order;
//! * [`cycles`]: cycle search by layers and Adya classification;
//! * [`weak`]: the levels below SI;
//! * [`blackbox`]: the general search for any read/write history.

pub mod blackbox;
pub mod cycles;
pub mod depgraph;
pub mod mini;
pub mod weak;

use std::time::{Duration, Instant};

/// The share of the remaining time a stronger level's witness may take
/// (the lattice: it is tried before the level itself, and its failure
/// proves nothing).
const LATTICE_SHARE: u32 = 4;
/// Its budget when the check has no time limit.
const LATTICE_MAX: Duration = Duration::from_secs(60);

/// Until when a stronger level's witness is searched for, from now.
pub(crate) fn lattice_deadline(deadline: Option<Instant>) -> Instant {
    let now = Instant::now();
    now + deadline.map_or(LATTICE_MAX, |d| {
        d.saturating_duration_since(now) / LATTICE_SHARE
    })
}
