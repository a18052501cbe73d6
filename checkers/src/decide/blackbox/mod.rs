//! The black-box search: SER and SI (and their session and real-time
//! variants) on any read/write history, where the version order is not
//! known.
//!
//! Enters: an [`Index`](crate::index::Index) and a level, from
//! [`check`](mod@crate::check) or the weak levels' pc. Leaves: a
//! [`General`](general::General) verdict (a model, or a refutation with
//! its derivation), which [`check`](mod@crate::check) turns into a report
//! and a certificate for [`certify`](crate::certify).
//!
//! From the bottom up:
//!
//! * [`acyclic`]: an incrementally acyclic graph;
//! * [`polygraph`]: known edges and one constraint per pair of writers,
//!   pruned by reachability; [`solve`] solves what is left (CDCL plus the
//!   acyclicity theory);
//! * [`witness`]: a serial order guessed from the known edges;
//! * [`clocks`] and [`clock_prune`]: pruning every key's writer pairs by
//!   vector clocks over sessions, without building them; [`derive`] turns
//!   a pruning log into a checkable derivation;
//! * [`interpret`] and [`window`]: small sub-histories: a local
//!   refutation, the windows around a contradiction, and shrinking a
//!   refutation to a small counterexample;
//! * [`general`]: the search itself, its stages cheapest first.

pub mod acyclic;
pub mod clock_prune;
pub mod clocks;
pub mod derive;
pub mod general;
pub mod interpret;
pub mod polygraph;
pub mod solve;
pub mod window;
pub mod witness;
