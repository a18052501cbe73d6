//! rc's axiom on a plain register history: a read of `x` from `t2` after
//! a read (in program order) from `t1`, which also wrote `x`, needs `t1`
//! before `t2` in the commit order.

use super::{after_source, Prepared, SourceWriters};

/// True when no read of an ok transaction sees a version older than one
/// an earlier read of the transaction already saw the writer of.
pub(super) fn holds(prep: &Prepared, pos: &[u32]) -> bool {
    let mut sw = SourceWriters::new(prep, pos.len());
    for t in 0..pos.len() {
        let evs = prep.evs(t);
        if evs.is_empty() {
            continue;
        }
        sw.start(t, evs);
        for i in 0..evs.len() {
            if i > 0 {
                sw.add(prep, pos, evs[i - 1].1);
            }
            let (k, src) = evs[i];
            if sw
                .latest_except(k, src)
                .is_some_and(|t1| after_source(pos, t1, src))
            {
                return false;
            }
        }
    }
    true
}
