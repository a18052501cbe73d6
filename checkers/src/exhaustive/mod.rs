//! Exhaustive decision of tiny histories: each level decided by following
//! its definition literally, by enumeration, sharing no code with the
//! fast checkers of [`decide`](crate::decide).
//!
//! It has two users, and is product code for the first:
//!
//! * the certificate checker ([`certify`](crate::certify)) re-decides the
//!   small sub-histories that a refutation names (at most a handful of
//!   transactions), so that an `anomalous` verdict outside the cycle
//!   shapes is proved by a second, independent decider;
//! * the tests use it as the reference semantics (the oracle) against
//!   which the checkers are compared on many small random histories.
//!
//! [`registers`] decides read/write (and range) histories, [`lists`]
//! list-append ones; what both enumerate (the `info` outcomes, orders,
//! schedules, commit orders and premises) is in `enumerate`.

mod enumerate;
pub mod lists;
pub mod registers;
