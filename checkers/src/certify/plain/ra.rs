//! ra's axiom on a plain register history: a writer of `x` that `t3` read
//! something from, or that precedes `t3` in its session, commits before
//! the source of `t3`'s read of `x`. Of the session's writers the latest
//! earlier one is enough: session order, inside the commit order, chains
//! the rest before it.

use rustc_hash::FxHashMap as HashMap;

use super::super::common::NONE;
use super::{after_source, Prepared, SourceWriters};

/// True when every read of an ok transaction sees a version at least as
/// new as those its sources and its session's earlier transactions wrote.
pub(super) fn holds(prep: &Prepared, pos: &[u32]) -> bool {
    let mut sw = SourceWriters::new(prep, pos.len());
    // (session, key) -> the latest committed writer so far, in history
    // (and so session) order.
    let mut last_w: HashMap<u64, u32> = HashMap::default();
    let at = |t: usize, k: u32| (u64::from(prep.sess[t]) << 32) | u64::from(k);
    for t in 0..pos.len() {
        if pos[t] == NONE {
            continue;
        }
        let evs = prep.evs(t);
        if !evs.is_empty() {
            sw.start(t, evs);
            for &(_, src) in evs {
                sw.add(prep, pos, src);
            }
            for &(k, src) in evs {
                if sw
                    .latest_except(k, src)
                    .is_some_and(|t1| after_source(pos, t1, src))
                {
                    return false;
                }
                if last_w
                    .get(&at(t, k))
                    .is_some_and(|&p| after_source(pos, p, src))
                {
                    return false;
                }
            }
        }
        for &k in prep.wkeys(t as u32) {
            last_w.insert(at(t, k), t as u32);
        }
    }
    true
}
