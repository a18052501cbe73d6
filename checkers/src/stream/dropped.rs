//! The keys a streamed check has let go of, remembered so that a later
//! touch of one hands the history over instead of being misread.
//!
//! A run of an hour lets go of millions of lists, and a set of them would
//! grow all along. Integer keys are kept as runs of consecutive integers
//! instead: `harness run`'s list keys count up with the workload's epochs
//! and are let go of roughly in order, so the runs merge and their number
//! stays near the number of lists still open below the highest one let go
//! of. Text keys (rare in lists) are kept as 8-byte hashes; two keys that
//! share a hash only make the stream hand over when it need not.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use history::Key;
use rustc_hash::{FxHashSet, FxHasher};

/// Keys let go of.
#[derive(Debug, Default)]
pub(super) struct Dropped {
    /// Disjoint runs `first -> last` (inclusive), no two adjacent.
    ints: BTreeMap<i64, i64>,
    /// Hashes of text keys.
    texts: FxHashSet<u64>,
}

impl Dropped {
    /// Remembers `k`.
    pub(super) fn insert(&mut self, k: &Key) {
        match k {
            Key::Int(i) => self.insert_int(*i),
            Key::Str(_) => {
                self.texts.insert(hash(k));
            }
        }
    }

    /// Whether `k` was let go of (or shares a hash with one that was).
    pub(super) fn contains(&self, k: &Key) -> bool {
        match k {
            Key::Int(i) => self.run_at(*i).is_some(),
            Key::Str(_) => self.texts.contains(&hash(k)),
        }
    }

    /// How many runs and hashes are kept: what the memory grows with.
    pub(super) fn len(&self) -> usize {
        self.ints.len() + self.texts.len()
    }

    /// The run holding `i`, as `(first, last)`.
    fn run_at(&self, i: i64) -> Option<(i64, i64)> {
        let (&first, &last) = self.ints.range(..=i).next_back()?;
        (last >= i).then_some((first, last))
    }

    fn insert_int(&mut self, i: i64) {
        if self.run_at(i).is_some() {
            return;
        }
        let (mut first, mut last) = (i, i);
        // Joins the run ending just before and the one starting just after.
        if let Some(before) = i.checked_sub(1).and_then(|j| self.run_at(j)) {
            first = before.0;
        }
        if let Some(after) = i.checked_add(1) {
            if let Some(&end) = self.ints.get(&after) {
                self.ints.remove(&after);
                last = end;
            }
        }
        self.ints.insert(first, last);
    }
}

fn hash(k: &Key) -> u64 {
    let mut h = FxHasher::default();
    k.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_keys_merge_into_one_run_and_nothing_else_is_kept() {
        let mut d = Dropped::default();
        for i in [5, 7, 6, 3, 4, 10, i64::MAX, i64::MIN] {
            d.insert(&Key::Int(i));
        }
        d.insert(&Key::Int(6));
        // 3..=7, 10, MAX, MIN.
        assert_eq!(d.len(), 4);
        for i in [3, 4, 5, 6, 7, 10, i64::MAX, i64::MIN] {
            assert!(d.contains(&Key::Int(i)), "{i}");
        }
        for i in [2, 8, 9, 11, i64::MAX - 1, i64::MIN + 1] {
            assert!(!d.contains(&Key::Int(i)), "{i}");
        }
        d.insert(&Key::Int(8));
        d.insert(&Key::Int(9));
        assert_eq!(d.len(), 3);
        assert!(!d.contains(&Key::str("x")));
        d.insert(&Key::str("x"));
        assert!(d.contains(&Key::str("x")) && !d.contains(&Key::str("y")));
    }
}
