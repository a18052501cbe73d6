//! The names of the isolation levels a history can be checked against.
//!
//! The names are part of the history format (the header's `level`) and of
//! the command line, so they live here; what each level forbids and which
//! levels imply which is data in `checkers::lattice`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An isolation level, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Level {
    /// Read committed (Adya PL-2; Cerone et al.; Biswas & Enea).
    #[serde(rename = "rc")]
    Rc,
    /// Read atomic: a transaction sees all or none of another's writes.
    #[serde(rename = "ra")]
    Ra,
    /// Transactional causal consistency.
    #[serde(rename = "cc")]
    Cc,
    /// Prefix consistency: everyone sees a prefix of one commit order.
    #[serde(rename = "pc")]
    Pc,
    /// Snapshot isolation (Adya SI; Cerone–Gotsman), sessions ignored.
    #[serde(rename = "si")]
    Si,
    /// SI where each session sees its own earlier transactions.
    #[serde(rename = "strong-session-si")]
    StrongSessionSi,
    /// SI that respects real-time order.
    #[serde(rename = "strong-si")]
    StrongSi,
    /// Serializability (Adya PL-3), sessions ignored.
    #[serde(rename = "ser")]
    Ser,
    /// Serializability respecting session order.
    #[serde(rename = "strong-session-ser")]
    StrongSessionSer,
    /// Strict serializability: serializable in real-time order.
    #[serde(rename = "sser")]
    Sser,
}

impl Level {
    /// Every level, weakest first.
    pub const ALL: [Level; 10] = [
        Level::Rc,
        Level::Ra,
        Level::Cc,
        Level::Pc,
        Level::Si,
        Level::StrongSessionSi,
        Level::StrongSi,
        Level::Ser,
        Level::StrongSessionSer,
        Level::Sser,
    ];

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Level::Rc => "rc",
            Level::Ra => "ra",
            Level::Cc => "cc",
            Level::Pc => "pc",
            Level::Si => "si",
            Level::StrongSessionSi => "strong-session-si",
            Level::StrongSi => "strong-si",
            Level::Ser => "ser",
            Level::StrongSessionSer => "strong-session-ser",
            Level::Sser => "sser",
        }
    }

    /// A human name, for reports.
    pub fn title(self) -> &'static str {
        match self {
            Level::Rc => "read committed",
            Level::Ra => "read atomic",
            Level::Cc => "causal consistency",
            Level::Pc => "prefix consistency",
            Level::Si => "snapshot isolation",
            Level::StrongSessionSi => "strong session snapshot isolation",
            Level::StrongSi => "strong snapshot isolation",
            Level::Ser => "serializability",
            Level::StrongSessionSer => "strong session serializability",
            Level::Sser => "strict serializability",
        }
    }

    /// True when session order constrains the commit order.
    pub fn uses_sessions(self) -> bool {
        !matches!(self, Level::Si | Level::Ser)
    }

    /// True when real-time order constrains the commit order.
    pub fn uses_real_time(self) -> bool {
        matches!(self, Level::StrongSi | Level::Sser)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level name that is not one of [`Level::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown level {0:?} (expected one of: rc, ra, cc, pc, si, strong-session-si, strong-si, ser, strong-session-ser, sser)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(s: &str) -> Result<Level, UnknownLevel> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        let lvl = match norm.as_str() {
            "rc" | "read-committed" => Level::Rc,
            "ra" | "read-atomic" => Level::Ra,
            "cc" | "causal" | "tcc" => Level::Cc,
            "pc" | "prefix" => Level::Pc,
            "si" | "snapshot-isolation" => Level::Si,
            "strong-session-si" | "pc-si" => Level::StrongSessionSi,
            "strong-si" => Level::StrongSi,
            "ser" | "serializable" | "serializability" => Level::Ser,
            "strong-session-ser" => Level::StrongSessionSer,
            "sser" | "strict-serializable" | "strict-serializability" => Level::Sser,
            _ => return Err(UnknownLevel(s.to_string())),
        };
        Ok(lvl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for l in Level::ALL {
            assert_eq!(l.name().parse::<Level>().unwrap(), l);
            assert_eq!(
                serde_json::to_string(&l).unwrap(),
                format!("\"{}\"", l.name())
            );
        }
        assert!("bogus".parse::<Level>().is_err());
    }
}
