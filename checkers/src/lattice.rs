//! The level lattice, as data: which levels imply which, and which anomalies
//! each level forbids.
//!
//! Two tables, in the style of Elle's `consistency-model` namespace:
//!
//! * [`IMPLIES`]: `(stronger, weaker)` pairs; the rest is their transitive
//!   closure. Note that Adya's `si` and `ser` ignore sessions while the weak
//!   levels (`rc` … `pc`) follow Cerone et al., whose commit order contains
//!   session order, so `si` does **not** imply `rc`: a session whose later
//!   transaction's write is ordered first is Adya-SI yet breaks the weak
//!   levels. `strong-session-si` implies `pc`.
//! * [`FORBIDS`]: for each (anomaly, scope), the weakest levels that forbid
//!   it; every level implying one of them forbids it too.

use std::sync::OnceLock;

use history::Level;

use crate::anomaly::{AnomalyKind, Scope};

use Level::*;

/// Direct implications between levels: `(a, b)` means every history that
/// satisfies `a` satisfies `b`.
pub const IMPLIES: &[(Level, Level)] = &[
    (Sser, StrongSessionSer),
    (Sser, StrongSi),
    (StrongSessionSer, Ser),
    (StrongSessionSer, StrongSessionSi),
    (StrongSi, StrongSessionSi),
    (Ser, Si),
    (StrongSessionSi, Si),
    (StrongSessionSi, Pc),
    (Pc, Cc),
    (Cc, Ra),
    (Ra, Rc),
];

/// The weakest levels forbidding each anomaly in each scope. A row may name
/// several levels because the lattice is not a chain.
pub const FORBIDS: &[(AnomalyKind, Scope, &[Level])] = &[
    (AnomalyKind::ThinAirRead, Scope::Item, &[Rc, Si]),
    (AnomalyKind::AbortedRead, Scope::Item, &[Rc, Si]),
    (AnomalyKind::IntermediateRead, Scope::Item, &[Rc, Si]),
    (AnomalyKind::FutureRead, Scope::Item, &[Rc, Si]),
    (AnomalyKind::NotMyOwnWrite, Scope::Item, &[Rc, Si]),
    (AnomalyKind::NotMyLastWrite, Scope::Item, &[Rc, Si]),
    (AnomalyKind::DuplicateWrite, Scope::Item, &[Rc, Si]),
    (AnomalyKind::IncompatibleOrder, Scope::Item, &[Rc, Si]),
    (AnomalyKind::DuplicateElements, Scope::Item, &[Rc, Si]),
    (AnomalyKind::NonRepeatableRead, Scope::Item, &[Ra, Si]),
    (AnomalyKind::G0, Scope::Item, &[Rc, Si]),
    (AnomalyKind::G0, Scope::Session, &[Rc, StrongSessionSi]),
    (AnomalyKind::G0, Scope::RealTime, &[StrongSi]),
    (AnomalyKind::G1c, Scope::Item, &[Rc, Si]),
    (AnomalyKind::G1c, Scope::Session, &[Rc, StrongSessionSi]),
    (AnomalyKind::G1c, Scope::RealTime, &[StrongSi]),
    (AnomalyKind::GSingle, Scope::Item, &[Si]),
    (AnomalyKind::GSingle, Scope::Session, &[StrongSessionSi]),
    (AnomalyKind::GSingle, Scope::RealTime, &[StrongSi]),
    (AnomalyKind::GNonadjacent, Scope::Item, &[Si]),
    (
        AnomalyKind::GNonadjacent,
        Scope::Session,
        &[StrongSessionSi],
    ),
    (AnomalyKind::GNonadjacent, Scope::RealTime, &[StrongSi]),
    (AnomalyKind::G2Item, Scope::Item, &[Ser]),
    (AnomalyKind::G2Item, Scope::Session, &[StrongSessionSer]),
    (AnomalyKind::G2Item, Scope::RealTime, &[Sser]),
    (AnomalyKind::G2, Scope::Item, &[Ser]),
    (AnomalyKind::G2, Scope::Session, &[StrongSessionSer]),
    (AnomalyKind::G2, Scope::RealTime, &[Sser]),
];

/// True when every history satisfying `strong` satisfies `weak` (reflexive).
/// A lookup in the closure of [`IMPLIES`], made once: the checkers ask it
/// per finding and per anomaly.
pub fn implies(strong: Level, weak: Level) -> bool {
    static CLOSURE: OnceLock<[[bool; N]; N]> = OnceLock::new();
    CLOSURE.get_or_init(|| {
        let mut c = [[false; N]; N];
        for a in Level::ALL {
            for b in Level::ALL {
                c[a as usize][b as usize] = reaches(a, b);
            }
        }
        c
    })[strong as usize][weak as usize]
}

/// The number of levels.
const N: usize = Level::ALL.len();

/// [`implies`] by walking [`IMPLIES`].
fn reaches(strong: Level, weak: Level) -> bool {
    strong == weak
        || IMPLIES
            .iter()
            .any(|&(a, b)| a == strong && reaches(b, weak))
}

/// Every level that implies `l` (including `l`): the levels a history fails
/// once it fails `l`.
pub fn stronger_or_equal(l: Level) -> Vec<Level> {
    Level::ALL.into_iter().filter(|&s| implies(s, l)).collect()
}

/// Every level `l` implies (including `l`): the levels a history satisfies
/// once it satisfies `l`.
pub fn weaker_or_equal(l: Level) -> Vec<Level> {
    Level::ALL.into_iter().filter(|&w| implies(l, w)).collect()
}

/// The weakest levels forbidding an anomaly; empty when no level does.
pub fn forbidding(kind: AnomalyKind, scope: Scope) -> &'static [Level] {
    FORBIDS
        .iter()
        .find(|&&(k, s, _)| k == kind && s == scope)
        .map(|&(_, _, ls)| ls)
        .unwrap_or(&[])
}

/// True when `level` forbids the anomaly.
pub fn forbids(level: Level, kind: AnomalyKind, scope: Scope) -> bool {
    forbidding(kind, scope).iter().any(|&m| implies(level, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lattice_is_a_partial_order() {
        for a in Level::ALL {
            assert!(implies(a, a));
            for b in Level::ALL {
                if a != b && implies(a, b) {
                    assert!(!implies(b, a), "{a} and {b} imply each other");
                }
                for c in Level::ALL {
                    if implies(a, b) && implies(b, c) {
                        assert!(implies(a, c));
                    }
                }
            }
        }
    }

    #[test]
    fn known_implications() {
        assert!(implies(Sser, Rc));
        assert!(implies(Sser, Si));
        assert!(implies(StrongSessionSi, Pc));
        assert!(!implies(Si, Rc), "Adya SI ignores sessions");
        assert!(!implies(Ser, StrongSi));
        assert!(!implies(StrongSi, Ser));
        assert_eq!(stronger_or_equal(Ser), vec![Ser, StrongSessionSer, Sser]);
    }

    #[test]
    fn what_levels_forbid() {
        use AnomalyKind::*;
        assert!(forbids(Si, GSingle, Scope::Item));
        assert!(!forbids(Si, G2Item, Scope::Item), "SI allows write skew");
        assert!(forbids(Ser, G2Item, Scope::Item));
        assert!(!forbids(Ser, GSingle, Scope::RealTime));
        assert!(forbids(Sser, GSingle, Scope::RealTime));
        assert!(forbids(StrongSessionSer, GSingle, Scope::Session));
        assert!(!forbids(Rc, NonRepeatableRead, Scope::Item));
        assert!(forbids(Ra, NonRepeatableRead, Scope::Item));
        for l in Level::ALL {
            assert!(forbids(l, ThinAirRead, Scope::Item), "{l}");
            assert!(forbids(l, G1c, Scope::Item), "{l}");
        }
        // Every row names at least one level.
        for (k, s, ls) in FORBIDS {
            assert!(!ls.is_empty(), "{k:?} {s:?}");
        }
    }
}
