//! The anomalies a checker can report, with Adya's names and the common ones.
//!
//! Two families. *Non-cyclic* anomalies are visible in a single transaction
//! or a single read: a value nobody wrote, a read of an aborted or
//! intermediate write, a transaction that does not see its own writes. No
//! version order is needed to see them. *Cyclic* anomalies are cycles in a
//! dependency graph whose edges are write-write (ww), write-read (wr),
//! read-write anti-dependencies (rw), and, for the stronger levels, session
//! (so) and real-time (rt) order. Adya classifies a cycle by its edges:
//!
//! * G0: only ww edges (dirty write);
//! * G1c: ww and wr edges (circular information flow);
//! * G-single: exactly one rw edge (read skew and its relatives);
//! * G-nonadjacent: several rw edges, no two adjacent (what SI forbids);
//! * G2-item: several rw edges, some adjacent (write skew; forbidden by
//!   serializability only).
//!
//! A cycle that needs a session edge is a *session* anomaly, one that needs a
//! real-time edge is a *real-time* one; stronger levels forbid those.
//! `lattice` says which level forbids which (kind, scope).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What went wrong, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnomalyKind {
    // ---- non-cyclic ----
    /// A read returned a value no transaction wrote.
    ThinAirRead,
    /// G1a: a read returned a value written by an aborted transaction.
    AbortedRead,
    /// G1b: a read returned a value its writer later overwrote in the same
    /// transaction.
    IntermediateRead,
    /// A read returned a value the same transaction only writes later.
    FutureRead,
    /// A transaction read a key after writing it and saw another's value.
    NotMyOwnWrite,
    /// A transaction read its own write of a key, but not its last one.
    NotMyLastWrite,
    /// A transaction read one key twice, with no write between, and got two
    /// different values.
    NonRepeatableRead,
    /// Two writes installed the same value on one key, so reads of it cannot
    /// name their writer; the history breaks the unique-value rule.
    DuplicateWrite,
    /// List-append: a list read is not a prefix-compatible version of other
    /// reads of the same key.
    IncompatibleOrder,
    /// List-append: an element appears twice in one list read.
    DuplicateElements,
    // ---- cyclic (Adya) ----
    /// A cycle of write-write dependencies only (dirty write).
    G0,
    /// A cycle of write-write and write-read dependencies.
    G1c,
    /// A cycle with exactly one anti-dependency.
    GSingle,
    /// A cycle with several anti-dependencies, no two adjacent.
    GNonadjacent,
    /// A cycle with adjacent anti-dependencies on items.
    G2Item,
    /// A cycle with adjacent anti-dependencies involving a predicate (range)
    /// read.
    G2,
}

impl AnomalyKind {
    /// The name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::ThinAirRead => "thin-air-read",
            AnomalyKind::AbortedRead => "G1a",
            AnomalyKind::IntermediateRead => "G1b",
            AnomalyKind::FutureRead => "future-read",
            AnomalyKind::NotMyOwnWrite => "not-my-own-write",
            AnomalyKind::NotMyLastWrite => "not-my-last-write",
            AnomalyKind::NonRepeatableRead => "non-repeatable-read",
            AnomalyKind::DuplicateWrite => "duplicate-write",
            AnomalyKind::IncompatibleOrder => "incompatible-order",
            AnomalyKind::DuplicateElements => "duplicate-elements",
            AnomalyKind::G0 => "G0",
            AnomalyKind::G1c => "G1c",
            AnomalyKind::GSingle => "G-single",
            AnomalyKind::GNonadjacent => "G-nonadjacent",
            AnomalyKind::G2Item => "G2-item",
            AnomalyKind::G2 => "G2",
        }
    }

    /// True for anomalies shown by a cycle of dependencies.
    pub fn is_cyclic(self) -> bool {
        matches!(
            self,
            AnomalyKind::G0
                | AnomalyKind::G1c
                | AnomalyKind::GSingle
                | AnomalyKind::GNonadjacent
                | AnomalyKind::G2Item
                | AnomalyKind::G2
        )
    }
}

impl fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which orders a cycle needs besides data dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Data dependencies only (or a non-cyclic anomaly).
    Item,
    /// Needs session order: forbidden only by the session levels (and the
    /// weak levels, whose commit order always contains session order).
    Session,
    /// Needs real-time order: forbidden only by strong SI and strict
    /// serializability.
    RealTime,
}

/// The common name of a cycle's shape, when it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommonName {
    /// Two transactions read the same version and both overwrote it.
    LostUpdate,
    /// Two transactions each read what the other overwrote.
    WriteSkew,
    /// Two readers see two independent writes in opposite orders.
    LongFork,
    /// A reader sees some of a transaction's writes but not others.
    FracturedRead,
    /// A reader sees an effect but misses its cause.
    CausalityViolation,
    /// A reader sees a newer version, then an older one.
    NonMonotonicRead,
    /// A session misses its own earlier transaction's effect.
    SessionGuaranteeViolation,
    /// A reader misses a write that finished before it started.
    StaleRead,
}

impl CommonName {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            CommonName::LostUpdate => "lost update",
            CommonName::WriteSkew => "write skew",
            CommonName::LongFork => "long fork",
            CommonName::FracturedRead => "fractured read",
            CommonName::CausalityViolation => "causality violation",
            CommonName::NonMonotonicRead => "non-monotonic read",
            CommonName::SessionGuaranteeViolation => "session guarantee violation",
            CommonName::StaleRead => "stale read",
        }
    }
}

impl fmt::Display for CommonName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
