//! ra: the forced edges of read atomic, from the writers each reader read
//! from and its session's latest earlier writers (see the [module docs](super)).

use crate::index::INIT;

use super::{common_keys, Ctx, Forced, Limit, WLabel, Why, LIMIT_EVERY, NONE};

/// ra: per reader, the writers it read from and its session's latest
/// earlier writer of each key it read; false when the limit is hit first.
pub(super) fn ra_edges(cx: &Ctx, out: &mut Forced, limit: Limit) -> bool {
    let ix = cx.ix;
    let nk = ix.keys.len();
    // Per key read by the current reader: the first two writers read.
    let mut kst = vec![0u32; nk];
    let mut w1 = vec![NONE; nk];
    let mut w2 = vec![NONE; nk];
    // Per key: the session's latest writer so far (stamped by session).
    let mut lw_sess = vec![0u32; nk];
    let mut lw = vec![NONE; nk];
    let mut seen = vec![0u32; ix.len()];
    let mut keys: Vec<u32> = Vec::new();
    let mut preds: Vec<u32> = Vec::new();
    for (s, session) in ix.sessions.iter().enumerate() {
        let sst = s as u32 + 1;
        for &t3 in session {
            if t3.is_multiple_of(LIMIT_EVERY) && limit.hit() {
                return false;
            }
            let stamp = t3 + 1;
            keys.clear();
            preds.clear();
            for r in ix.reads(t3) {
                let x = r.key as usize;
                if kst[x] != stamp {
                    kst[x] = stamp;
                    w1[x] = r.writer;
                    w2[x] = NONE;
                    keys.push(r.key);
                } else if w1[x] != r.writer && w2[x] == NONE {
                    // A second version of one key: with the first, already
                    // a cycle; more writers add nothing to the verdict.
                    w2[x] = r.writer;
                }
                if r.writer != INIT && seen[r.writer as usize] != stamp {
                    seen[r.writer as usize] = stamp;
                    preds.push(r.writer);
                }
            }
            for &(w, _, _) in cx.elements(t3) {
                if seen[w as usize] != stamp {
                    seen[w as usize] = stamp;
                    preds.push(w);
                }
            }
            for &t1 in &preds {
                let wk = cx.wkeys(t1);
                let hit = |x: u32| {
                    for t2 in [w1[x as usize], w2[x as usize]] {
                        if t2 != NONE && t2 != t1 && !cx.so_before(t1, t2) {
                            out.co(t1, t2, WLabel::forced(Why::ReadFrom, x, t3));
                        }
                    }
                };
                common_keys(wk, &keys, &kst, stamp, hit);
            }
            for &x in &keys {
                let xi = x as usize;
                if lw_sess[xi] != sst {
                    continue;
                }
                let l = lw[xi];
                for t2 in [w1[xi], w2[xi]] {
                    if t2 != NONE && t2 != l && !cx.so_before(l, t2) {
                        out.co(l, t2, WLabel::forced(Why::Session, x, t3));
                    }
                }
            }
            for w in ix.writes(t3) {
                lw_sess[w.key as usize] = sst;
                lw[w.key as usize] = t3;
            }
        }
    }
    true
}
