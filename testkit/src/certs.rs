//! Certificates by hand: a claim at a level, the edges of a cycle, and
//! the certificate checker's answer on them.

use checkers::certify::*;
use history::{History, Key, Level};

/// A certificate of `claim` at `level`.
pub fn cert(level: Level, use_dbts: bool, claim: Claim) -> Certificate {
    Certificate {
        level,
        use_dbts,
        claim,
    }
}

/// Checks that the serial order `o` witnesses `level`.
pub fn ok_serial(h: &History, level: Level, o: &[u32]) -> Result<(), CertError> {
    verify(
        h,
        &cert(level, false, Claim::Ok(Witness::Serial(o.to_vec()))),
    )
}

/// Checks that the schedule `s` witnesses `level`.
pub fn ok_schedule(
    h: &History,
    level: Level,
    use_dbts: bool,
    s: &[(u32, bool)],
) -> Result<(), CertError> {
    verify(
        h,
        &cert(level, use_dbts, Claim::Ok(Witness::Schedule(s.to_vec()))),
    )
}

/// Checks that `r` refutes `level`.
pub fn refute(h: &History, level: Level, r: Refutation) -> Result<(), CertError> {
    verify(h, &cert(level, false, Claim::Anomalous(vec![r])))
}

/// An edge on the integer key `key`.
pub fn edge(from: u32, to: u32, kind: EdgeClaim, key: i64) -> ClaimedEdge {
    ClaimedEdge {
        from,
        to,
        kind,
        key: Some(Key::Int(key)),
    }
}

/// An edge on no key (session, real time, timestamps).
pub fn keyless(from: u32, to: u32, kind: EdgeClaim) -> ClaimedEdge {
    ClaimedEdge {
        from,
        to,
        kind,
        key: None,
    }
}

/// An anti-dependency on `key`: `from` read the version `read_from`
/// installed (`None`: the initial one), which `to`'s overwrote, by `why`.
pub fn rw(from: u32, to: u32, read_from: Option<u32>, why: WwWhy, key: i64) -> ClaimedEdge {
    edge(from, to, EdgeClaim::Rw { read_from, why }, key)
}
