//! A fast check of an rc, ra or cc commit order on a plain register
//! history (only `Read` and `Write` ops, as in AWDIT's and dbcop's
//! histories).
//!
//! It checks what the general weak-level check
//! ([`commit_order`](super::commit_order)) checks (every committed
//! transaction once, session order, unique values, each read's source a
//! committed transaction's final write, read-from inside the commit order,
//! and the level's axiom), in the same order of reasoning, but over dense
//! key and session ids and arrays stamped per transaction instead of hash
//! maps of keys: one hash probe per op, the rest as the general check. It
//! says only *whether* the order holds: when it does not, the caller runs
//! the general check, which names the violation. What does not depend on
//! the order ([`prepare`]) is built while the checker decides.
//!
//! One axiom per file: [`rc`], [`ra`], [`cc`].

use history::{History, Key, Level, Op, Status, Value};
use rustc_hash::FxHashMap as HashMap;

use super::certificate::INIT;
use super::common::{check_sessions, positions, Top2, NONE};

mod cc;
mod ra;
mod rc;

/// The levels this check decides.
pub fn covers(level: Level) -> bool {
    matches!(level, Level::Rc | Level::Ra | Level::Cc)
}

/// True when every op of the history is a plain register `Read` or
/// `Write`: the shape this check handles.
pub fn applies(h: &History) -> bool {
    h.txns.iter().all(|t| {
        t.ops
            .iter()
            .all(|o| matches!(o, Op::Read { .. } | Op::Write { .. }))
    })
}

/// What the check needs that does not depend on the commit order: each
/// read resolved to its source, and each transaction's written keys. It is
/// built while the checker decides (on the other core), so only the part
/// that needs the witness is left for after the verdict.
pub struct Prepared {
    /// Each transaction's external reads of an ok transaction, in program
    /// order: (key id, source or [`INIT`]) (CSR by transaction).
    ev_start: Vec<u32>,
    evs: Vec<(u32, u32)>,
    /// Each transaction's written keys (CSR, sorted, distinct).
    wk_start: Vec<u32>,
    wk: Vec<u32>,
    /// The number of distinct keys.
    nk: usize,
    /// Each transaction's session, as a dense id.
    sess: Vec<u32>,
    /// The number of sessions.
    ns: usize,
}

impl Prepared {
    fn wkeys(&self, t: u32) -> &[u32] {
        &self.wk[self.wk_start[t as usize] as usize..self.wk_start[t as usize + 1] as usize]
    }

    fn evs(&self, t: usize) -> &[(u32, u32)] {
        &self.evs[self.ev_start[t] as usize..self.ev_start[t + 1] as usize]
    }
}

/// Resolves every read of `h` (which [`applies`]); `None` when some read
/// cannot be explained by any commit order (a value nobody wrote, a
/// duplicate value, an intermediate or own later write, an internal read
/// of another value).
pub fn prepare(h: &History) -> Option<Prepared> {
    let n = h.txns.len();
    let ops: usize = h.txns.iter().map(|t| t.ops.len()).sum();
    // Dense key ids.
    let mut kid: HashMap<&Key, u32> = HashMap::default();
    let mut op_key: Vec<u32> = Vec::with_capacity(ops);
    for t in &h.txns {
        for o in &t.ops {
            let (Op::Read { key, .. } | Op::Write { key, .. }) = o else {
                return None;
            };
            let next = kid.len() as u32;
            op_key.push(*kid.entry(key).or_insert(next));
        }
    }
    let nk = kid.len();
    drop(kid);
    // Each write's (key, value) -> (txn, final write of the key in its
    // transaction), and each transaction's written keys.
    let mut writer: HashMap<(u32, Value), (u32, bool)> = HashMap::default();
    writer.reserve(ops / 2);
    let mut wk_start: Vec<u32> = Vec::with_capacity(n + 1);
    let mut wk: Vec<u32> = Vec::new();
    let mut mark = vec![0u32; nk];
    let mut at = 0usize;
    for (t, txn) in h.txns.iter().enumerate() {
        let stamp = t as u32 + 1;
        wk_start.push(wk.len() as u32);
        let keys = &op_key[at..at + txn.ops.len()];
        at += txn.ops.len();
        let from = wk.len();
        // Backwards: the first write of a key met is its final one.
        for (o, op) in txn.ops.iter().enumerate().rev() {
            if let Op::Write { value, .. } = op {
                let k = keys[o];
                let last = mark[k as usize] != stamp;
                if last {
                    mark[k as usize] = stamp;
                    wk.push(k);
                }
                if writer.insert((k, *value), (t as u32, last)).is_some() {
                    return None; // a duplicate value
                }
            }
        }
        wk[from..].sort_unstable();
    }
    wk_start.push(wk.len() as u32);
    // Each ok transaction's external reads, resolved.
    let mut own_st = vec![0u32; nk];
    let mut own_val: Vec<Value> = vec![0; nk];
    let mut ev_start: Vec<u32> = Vec::with_capacity(n + 1);
    let mut evs: Vec<(u32, u32)> = Vec::with_capacity(ops / 2);
    let mut at = 0usize;
    for (t, txn) in h.txns.iter().enumerate() {
        ev_start.push(evs.len() as u32);
        let keys = &op_key[at..at + txn.ops.len()];
        at += txn.ops.len();
        if txn.status != Status::Ok {
            continue; // info reads tell nothing; fail ones are not committed
        }
        let stamp = t as u32 + 1;
        for (o, op) in txn.ops.iter().enumerate() {
            let k = keys[o];
            match op {
                Op::Write { value, .. } => {
                    own_st[k as usize] = stamp;
                    own_val[k as usize] = *value;
                }
                Op::Read { value, .. } => {
                    if own_st[k as usize] == stamp {
                        if *value != Some(own_val[k as usize]) {
                            return None;
                        }
                        continue;
                    }
                    let src = match value {
                        None => INIT,
                        Some(v) => match writer.get(&(k, *v)) {
                            Some(&(w, true)) if w != t as u32 => w,
                            _ => return None,
                        },
                    };
                    evs.push((k, src));
                }
                _ => return None,
            }
        }
    }
    ev_start.push(evs.len() as u32);
    let mut sid: HashMap<u64, u32> = HashMap::default();
    let sess = h
        .txns
        .iter()
        .map(|t| {
            let next = sid.len() as u32;
            *sid.entry(t.session).or_insert(next)
        })
        .collect();
    Some(Prepared {
        ev_start,
        evs,
        wk_start,
        wk,
        nk,
        sess,
        ns: sid.len(),
    })
}

/// True when `co` is a commit order of `h` (which [`applies`]) at `level`
/// (one [`covers`]), given what [`prepare`] found.
pub fn holds(h: &History, prep: &Prepared, co: &[u32], level: Level) -> bool {
    let Ok(pos) = positions(h, co) else {
        return false;
    };
    if check_sessions(h, &pos, &pos).is_err() {
        return false;
    }
    // Each read's source committed, before the reader.
    for (t, &p) in pos.iter().enumerate() {
        for &(_, src) in prep.evs(t) {
            if src != INIT && (pos[src as usize] == NONE || pos[src as usize] >= p) {
                return false;
            }
        }
    }
    match level {
        Level::Rc => rc::holds(prep, &pos),
        Level::Ra => ra::holds(prep, &pos),
        Level::Cc => cc::holds(prep, co, &pos),
        _ => false,
    }
}

/// The violation [`holds`] looks for: `t1`, a writer of the read's key
/// that the level's premise puts before the reader, commits after the
/// read's source `src` (or the read saw the initial version).
fn after_source(pos: &[u32], t1: u32, src: u32) -> bool {
    t1 != src && (src == INIT || pos[t1 as usize] > pos[src as usize])
}

/// Per reading transaction: the keys it reads, and per such key the two
/// latest-committing writers of it among the sources added so far (rc and
/// ra's premise writers). Arrays stamped per transaction, reused.
struct SourceWriters {
    stamp: u32,
    read_st: Vec<u32>,
    read_keys: Vec<u32>,
    best_st: Vec<u32>,
    best: Vec<Top2>,
    seen: Vec<u32>,
}

impl SourceWriters {
    fn new(prep: &Prepared, n: usize) -> Self {
        SourceWriters {
            stamp: 0,
            read_st: vec![0; prep.nk],
            read_keys: Vec::new(),
            best_st: vec![0; prep.nk],
            best: vec![Top2::default(); prep.nk],
            seen: vec![0; n],
        }
    }

    /// Starts reader `t`, whose external reads are `evs`.
    fn start(&mut self, t: usize, evs: &[(u32, u32)]) {
        self.stamp = t as u32 + 1;
        self.read_keys.clear();
        for &(k, _) in evs {
            if self.read_st[k as usize] != self.stamp {
                self.read_st[k as usize] = self.stamp;
                self.read_keys.push(k);
            }
        }
    }

    /// Counts source `s`'s writes of the keys the reader reads (the smaller
    /// side is iterated), once per reader.
    fn add(&mut self, prep: &Prepared, pos: &[u32], s: u32) {
        if s == INIT || self.seen[s as usize] == self.stamp {
            return;
        }
        self.seen[s as usize] = self.stamp;
        let ws = prep.wkeys(s);
        let p = pos[s as usize];
        let stamp = self.stamp;
        let (best_st, best) = (&mut self.best_st, &mut self.best);
        let mut add = |y: u32| {
            let b = &mut best[y as usize];
            if best_st[y as usize] != stamp {
                best_st[y as usize] = stamp;
                *b = Top2::default();
            }
            b.add(p, s);
        };
        if ws.len() <= self.read_keys.len() {
            for &y in ws {
                if self.read_st[y as usize] == stamp {
                    add(y);
                }
            }
        } else {
            for &y in &self.read_keys {
                if ws.binary_search(&y).is_ok() {
                    add(y);
                }
            }
        }
    }

    /// The latest writer of `k` among the sources added, other than `src`.
    fn latest_except(&self, k: u32, src: u32) -> Option<u32> {
        if self.best_st[k as usize] != self.stamp {
            return None;
        }
        self.best[k as usize].best_except(src).map(|(_, t1)| t1)
    }
}

#[cfg(test)]
mod tests {
    use rand::seq::SliceRandom;
    use rand::{RngExt, SeedableRng};

    use super::super::commit_order::{verify_commit_order_general, CC_CLOCKS};
    use super::*;
    use crate::index::Index;
    use checkers_testkit::{random_history, GenConfig};

    /// The linear check accepts exactly the orders the general check
    /// accepts, at each level (cc every way: per-key rows, clocks walked
    /// key by key, clocks searched per read): the
    /// checker's witnesses, and those with two neighbours swapped or
    /// shuffled.
    #[test]
    fn agrees_with_the_general_check() {
        let cfg = GenConfig {
            max_txns: 10,
            sessions: 3,
            keys: 3,
            max_ops: 4,
            p_wild: 0.3,
            max_stale: 4,
            per_read_stale: 0.3,
            ..GenConfig::default()
        };
        for (level, clocks, walk) in [
            (Level::Rc, None, true),
            (Level::Ra, None, true),
            (Level::Cc, Some(false), true),
            (Level::Cc, Some(true), true),
            (Level::Cc, Some(true), false),
        ] {
            CC_CLOCKS.with(|f| f.set(clocks));
            cc::KEY_WALK.with(|w| w.set(walk));
            let mut rng = rand::rngs::StdRng::seed_from_u64(0x7c);
            let (mut accepted, mut rejected) = (0, 0);
            for _ in 0..4000 {
                let h = random_history(&mut rng, &cfg);
                if !applies(&h) {
                    continue;
                }
                let ix = Index::new(&h);
                let mut co: Vec<u32> =
                    match crate::decide::weak::check_weak(&ix, level, false).witness {
                        Some(w) => w,
                        None => ix.committed_txns().collect(),
                    };
                for round in 0..4 {
                    match round {
                        0 => {}
                        1 | 2 if co.len() > 1 => {
                            let i = rng.random_range(0..co.len() - 1);
                            co.swap(i, i + 1);
                        }
                        _ => co.shuffle(&mut rng),
                    }
                    let fast = prepare(&h).is_some_and(|p| holds(&h, &p, &co, level));
                    let general = verify_commit_order_general(&h, level, &co);
                    assert_eq!(
                        fast,
                        general.is_ok(),
                        "{level} (clocks {clocks:?}, walk {walk}): {h:?}\nco {co:?}: {general:?}"
                    );
                    if fast {
                        accepted += 1;
                    } else {
                        rejected += 1;
                    }
                }
            }
            eprintln!("{level} (clocks {clocks:?}): {accepted} accepted, {rejected} rejected");
            assert!(
                accepted > 500 && rejected > 500,
                "{level}: {accepted} / {rejected}"
            );
        }
        CC_CLOCKS.with(|f| f.set(None));
        cc::KEY_WALK.with(|w| w.set(true));
    }
}
