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
