//! Small pieces the witness and refutation checks share: printing
//! values, written keys, positions in an order, and the session,
//! real-time and timestamp checks of an order.

use rustc_hash::FxHashMap as HashMap;

use history::{History, Key, Status, Value};

use super::certificate::*;

pub(super) const NONE: u32 = u32::MAX;

pub(super) fn fmt_opt(v: Option<Value>) -> String {
    v.map_or_else(|| "absent".to_string(), |v| v.to_string())
}

pub(super) fn fmt_list(v: &[Value]) -> String {
    format!("{v:?}")
}

/// Positions of the transactions of `order`, checking that it lists each
/// committed transaction once: every ok one, no failed one.
pub(super) fn positions(h: &History, order: &[u32]) -> R<Vec<u32>> {
    let n = h.txns.len();
    let mut pos = vec![NONE; n];
    for (i, &t) in order.iter().enumerate() {
        if t as usize >= n {
            return Err(CertError::NoSuchTxn(t));
        }
        if pos[t as usize] != NONE {
            return Err(CertError::Duplicate(t));
        }
        if h.txns[t as usize].status == Status::Fail {
            return Err(CertError::FailIncluded(t));
        }
        pos[t as usize] = i as u32;
    }
    check_all_ok_present(h, &pos)?;
    Ok(pos)
}

pub(super) fn check_all_ok_present(h: &History, pos: &[u32]) -> R<()> {
    for (t, txn) in h.txns.iter().enumerate() {
        if txn.status == Status::Ok && pos[t] == NONE {
            return Err(CertError::MissingOk(t as u32));
        }
    }
    Ok(())
}

/// The two largest `(position, txn)` pairs added, for distinct txns.
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Top2 {
    pub(super) a: Option<(u32, u32)>,
    pub(super) b: Option<(u32, u32)>,
}

impl Top2 {
    pub(super) fn add(&mut self, pos: u32, txn: u32) {
        if self.a.is_none_or(|x| pos > x.0) {
            self.b = self.a;
            self.a = Some((pos, txn));
        } else if self.b.is_none_or(|x| pos > x.0) {
            self.b = Some((pos, txn));
        }
    }

    /// The largest pair whose txn is not `txn`.
    pub(super) fn best_except(&self, txn: u32) -> Option<(u32, u32)> {
        match self.a {
            Some(x) if x.1 == txn => self.b,
            other => other,
        }
    }
}

/// Session order: of two consecutive committed transactions of a session
/// (history order), the earlier's `end_pos` precedes the later's
/// `start_pos`.
pub(super) fn check_sessions(h: &History, end_pos: &[u32], start_pos: &[u32]) -> R<()> {
    let mut last: HashMap<u64, u32> = HashMap::default();
    for (t, txn) in h.txns.iter().enumerate() {
        if start_pos[t] == NONE {
            continue;
        }
        if let Some(&p) = last.get(&txn.session) {
            if end_pos[p as usize] >= start_pos[t] {
                return Err(CertError::SessionOrder {
                    before: p,
                    after: t as u32,
                });
            }
        }
        last.insert(txn.session, t as u32);
    }
    Ok(())
}

/// Real-time order: every ok `t1` that ended before a committed `t2`
/// started has `end_pos[t1] < start_pos[t2]`. Sorting by end and keeping
/// prefix maxima makes it `O(n log n)`.
pub(super) fn check_real_time(h: &History, end_pos: &[u32], start_pos: &[u32]) -> R<()> {
    let mut ends: Vec<(u64, u32)> = h
        .txns
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == Status::Ok)
        .filter_map(|(i, t)| t.end.map(|e| (e, i as u32)))
        .collect();
    ends.sort_unstable();
    let mut prefix: Vec<Top2> = Vec::with_capacity(ends.len());
    let mut cur = Top2::default();
    for &(_, t) in &ends {
        cur.add(end_pos[t as usize], t);
        prefix.push(cur);
    }
    for (t2, txn) in h.txns.iter().enumerate() {
        let (Some(s), true) = (txn.start, start_pos[t2] != NONE) else {
            continue;
        };
        let idx = ends.partition_point(|&(e, _)| e < s);
        if idx == 0 {
            continue;
        }
        if let Some((p, t1)) = prefix[idx - 1].best_except(t2 as u32) {
            if p >= start_pos[t2] {
                return Err(CertError::RealTime {
                    before: t1,
                    after: t2 as u32,
                });
            }
        }
    }
    Ok(())
}

/// With timestamps: along the commit sequence, timestamped writers of each
/// key appear in non-decreasing commit-timestamp order.
pub(super) fn check_dbts_keys(h: &History, commits: impl Iterator<Item = u32>) -> R<()> {
    let mut max: HashMap<Key, (u64, u32)> = HashMap::default();
    for t in commits {
        let Some(c) = h.txns[t as usize].dbts.and_then(|d| d.commit) else {
            continue;
        };
        for k in h.txns[t as usize].written_keys() {
            match max.get(&k) {
                Some(&(m, w)) if m > c => {
                    return Err(CertError::DbTsKeyOrder {
                        key: k,
                        first: w,
                        second: t,
                    })
                }
                Some(&(m, _)) if m == c => {}
                _ => {
                    max.insert(k, (c, t));
                }
            }
        }
    }
    Ok(())
}
