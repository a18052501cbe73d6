//! rc: the forced edges of read committed, by a backward scan of each
//! reader's read events (see the [module docs](super)).

use history::Op;

use crate::index::INIT;

use super::{common_keys, Ctx, Ev, Forced, Limit, Stamped, WLabel, Why, LIMIT_EVERY, NONE};

/// rc: per reader, a backward scan of its read events; false when the
/// limit is hit first.
pub(super) fn rc_edges(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
    let ix = cx.ix;
    let nk = ix.keys.len();
    let mut own = vec![0u32; nk];
    // Per key, for the reads after the scan point: the earliest one's
    // writer, and the earliest one's from a different writer.
    let mut kst = vec![0u32; nk];
    let mut first = vec![NONE; nk];
    let mut second = vec![NONE; nk];
    let mut touched: Vec<u32> = Vec::new();
    let mut seen = vec![0u32; ix.len()];
    let mut evs: Vec<Ev> = Vec::new();
    let mut is_first: Vec<bool> = Vec::new();
    for t3 in ix.committed_txns() {
        if t3.is_multiple_of(LIMIT_EVERY) && limit.hit() {
            return false;
        }
        let stamp = t3 + 1;
        // The index's reads are the read events unless it dropped some
        // (repeats, internal or anomalous reads, range reads): then rescan.
        let rs = ix.reads(t3);
        let read_ops = ix.history.txns[t3 as usize]
            .ops
            .iter()
            .map(|o| match o {
                Op::Read { .. }
                | Op::ReadList {
                    values: Some(_), ..
                } => 1,
                Op::RangeRead { .. } => usize::MAX / 2,
                _ => 0,
            })
            // Saturating: two range reads must not overflow (debug panic).
            .fold(0usize, usize::saturating_add);
        if read_ops == rs.len() && !cx.lists {
            evs.clear();
            evs.extend(rs.iter().map(|r| Ev {
                op: r.op,
                at: r.op,
                key: r.key,
                writer: r.writer,
                value: r.value,
                version: true,
            }));
        } else {
            let mut marks = Stamped {
                marks: &mut own,
                stamp,
            };
            cx.events(t3, &mut marks, &mut evs);
        }
        is_first.clear();
        for e in &evs {
            let f = e.writer != INIT && seen[e.writer as usize] != stamp;
            if f {
                seen[e.writer as usize] = stamp;
            }
            is_first.push(f);
        }
        touched.clear();
        let mut i = evs.len();
        while i > 0 {
            // The reads at one point (a range read's, a list read's
            // elements) happen together.
            let at = evs[i - 1].at;
            let mut j = i - 1;
            while j > 0 && evs[j - 1].at == at {
                j -= 1;
            }
            for idx in j..i {
                let e = evs[idx];
                if e.writer == INIT {
                    continue; // the initial transaction precedes everyone
                }
                let label = |key: u32| WLabel {
                    why: Why::Po,
                    key,
                    reader: t3,
                    op: e.op,
                };
                if is_first[idx] {
                    // t3 saw e.writer here: every later read of a key it
                    // wrote must come from it or from a later writer.
                    let w = e.writer;
                    let wk = cx.wkeys(w);
                    let hit = |x: u32| {
                        let x_ = x as usize;
                        let target = if first[x_] != w {
                            first[x_]
                        } else {
                            second[x_]
                        };
                        out.co(w, target, label(x));
                    };
                    common_keys(wk, &touched, &kst, stamp, hit);
                }
                // The next read of the same key, if from someone else.
                let k = e.key as usize;
                if e.version && kst[k] == stamp && first[k] != e.writer {
                    out.co(e.writer, first[k], label(e.key));
                }
            }
            for e in evs[j..i].iter().filter(|e| e.version) {
                let k = e.key as usize;
                if kst[k] != stamp {
                    kst[k] = stamp;
                    first[k] = e.writer;
                    second[k] = NONE;
                    touched.push(e.key);
                } else if first[k] != e.writer {
                    second[k] = first[k];
                    first[k] = e.writer;
                }
            }
            i = j;
        }
    }
    true
}
