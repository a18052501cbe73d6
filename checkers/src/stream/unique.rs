//! Proving that every written value is unique, in memory that does not grow
//! with the history.
//!
//! The offline check remembers every `(key, value)` written, to report a
//! `duplicate-write`. A stream cannot. It relies instead on how write ids
//! are made: each session's writes carry strictly increasing values, and
//! the ranges `[first, last]` of different sessions never overlap (the
//! harness puts the client in the high 32 bits and a counter in the low
//! ones). When both hold, no value is written twice, whatever the key. A
//! history whose values break the pattern is handed to the offline check:
//! [`Ranges::note`] says so, it never guesses.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use history::Value;
use rustc_hash::FxHashMap;

/// The value range each session has written so far.
#[derive(Debug, Default)]
pub struct Ranges {
    /// Each session's `(first, last)` value.
    of_session: FxHashMap<u64, (Value, Value)>,
    /// Every range, by its first value: `first -> last`.
    by_first: BTreeMap<Value, Value>,
}

impl Ranges {
    /// Records that `session` wrote `v`; `false` when uniqueness can no
    /// longer be shown this way (`v` is not above the session's last value,
    /// or falls into another session's range).
    pub fn note(&mut self, session: u64, v: Value) -> bool {
        match self.of_session.get_mut(&session) {
            Some((first, last)) => {
                if v <= *last {
                    return false;
                }
                // Ranges are disjoint, so one that starts above `last` is the
                // only kind `[first, v]` can run into.
                if self
                    .by_first
                    .range((Excluded(*last), Included(v)))
                    .next()
                    .is_some()
                {
                    return false;
                }
                *last = v;
                self.by_first.insert(*first, v);
                true
            }
            None => {
                let below = self.by_first.range((Unbounded, Included(v))).next_back();
                if below.is_some_and(|(_, &last)| last >= v) {
                    return false;
                }
                self.of_session.insert(session, (v, v));
                self.by_first.insert(v, v);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ranges;

    #[test]
    fn harness_write_ids_are_proved_unique() {
        let mut r = Ranges::default();
        for c in 1..=1000i64 {
            for s in 0..8u64 {
                assert!(r.note(s, ((s as i64) << 32) | c));
            }
        }
    }

    #[test]
    fn a_repeat_or_an_overlap_is_not_proved() {
        let mut r = Ranges::default();
        assert!(r.note(1, 10));
        assert!(!r.note(1, 10), "a session repeating its own value");
        assert!(r.note(2, 20));
        assert!(!r.note(1, 25), "session 1 running over session 2's range");
        assert!(!r.note(3, 20), "a new session starting inside a range");
        assert!(r.note(3, 5));
        assert!(!r.note(3, 15), "growing over session 1's range");
        // A global counter shared by sessions interleaves their ranges.
        let mut g = Ranges::default();
        assert!(g.note(1, 1));
        assert!(g.note(2, 2));
        assert!(!g.note(1, 3));
    }
}
