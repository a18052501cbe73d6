//! Test-only helpers for the checkers, kept out of the shipped library.
//!
//! Random small histories, for comparing the checkers with the brute-force
//! oracles ([`checkers::exhaustive::registers`], [`checkers::exhaustive::lists`]);
//! [`assert_certified`] and the other assertions on reports; builders of
//! hand-written histories ([`build`]); the brute-force enumeration of
//! witnesses and refutations ([`brute`]); and [`as_range_reads`].
//!
//! A history is made by simulating a loose execution: a random order of
//! transactions, each reading from a slightly stale snapshot of it, so that
//! many histories are valid at some level and many are not. A few reads are
//! then made arbitrary (aborted, intermediate, future or thin-air values),
//! and some transactions fail or end unknown. [`random_list_history`] does
//! the same with appends and list reads.

use history::{History, Key, Op, Status, Txn, Value};
use rand::{Rng, RngExt};

pub mod brute;
pub mod build;
pub mod certs;
mod ranges;
mod verdicts;

pub use ranges::{as_range_reads, RangeStep};
pub use verdicts::{
    assert_certified, assert_certified_on, assert_methods, assert_two_sided, assert_verdict,
    count_method, holds, unchecked_certificates, Methods, STRONG, WEAK,
};

/// The shape of the random histories.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Transactions: at least 1, at most this.
    pub max_txns: usize,
    pub sessions: usize,
    pub keys: i64,
    /// Ops per transaction: at least 1, at most this (ignored for `mini`).
    pub max_ops: usize,
    /// Probability a transaction fails.
    pub p_fail: f64,
    /// Probability a transaction ends `info`.
    pub p_info: f64,
    /// Probability a read is arbitrary rather than from a snapshot.
    pub p_wild: f64,
    /// How stale a snapshot may be, in transactions.
    pub max_stale: usize,
    /// Make mini-transactions (reads of each key before writing it).
    pub mini: bool,
    /// Probability a read takes its own stale snapshot instead of its
    /// transaction's (fractured and non-monotonic reads, for the weak
    /// levels). 0 leaves the random stream as it was.
    pub per_read_stale: f64,
    /// Probability a transaction's snapshot includes its session's previous
    /// transaction (read-your-writes, for the weak levels). 0 leaves the
    /// random stream as it was.
    pub session_floor: f64,
    /// Probability a transaction's snapshot leaves out each of the
    /// `max_stale` transactions just before it (forks: long forks and
    /// causality violations, for the weak levels). 0 leaves the random
    /// stream as it was.
    pub p_fork: f64,
    /// Lists only: probability an append is followed at once by a read of
    /// its key (a read after the transaction's own appends). 0 leaves the
    /// random stream as it was.
    pub p_own_read: f64,
    /// Lists only: probability a transaction's reads after its own appends
    /// show them on the latest list of all transactions before it, as a
    /// read-committed database that holds the row from the append to the
    /// commit gives; else on its (stale) snapshot. 0 leaves the random
    /// stream as it was.
    pub p_locked_base: f64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_txns: 5,
            sessions: 3,
            keys: 3,
            max_ops: 4,
            p_fail: 0.1,
            p_info: 0.1,
            p_wild: 0.1,
            max_stale: 2,
            mini: false,
            per_read_stale: 0.0,
            session_floor: 0.0,
            p_fork: 0.0,
            p_own_read: 0.0,
            p_locked_base: 0.0,
        }
    }
}

enum Plan {
    R(i64),
    W(i64, Value),
}

/// A transaction's plan: 1 to `max_ops` reads and writes of random keys,
/// each write followed by a read of its key with `p_own_read`.
fn random_ops<R: Rng>(
    rng: &mut R,
    cfg: &GenConfig,
    next_value: &mut Value,
    p_own_read: f64,
) -> Vec<Plan> {
    let mut p = Vec::new();
    let ops = rng.random_range(1..=cfg.max_ops);
    for _ in 0..ops {
        let k = rng.random_range(0..cfg.keys);
        if rng.random_bool(0.5) {
            p.push(Plan::R(k));
        } else {
            p.push(Plan::W(k, *next_value));
            *next_value += 1;
            if p_own_read > 0.0 && rng.random_bool(p_own_read) {
                p.push(Plan::R(k));
            }
        }
    }
    p
}

/// Each transaction's status: `fail` with `p_fail`, `info` with `p_info`.
fn random_statuses<R: Rng>(rng: &mut R, cfg: &GenConfig, n: usize) -> Vec<Status> {
    (0..n)
        .map(|_| {
            let x: f64 = rng.random();
            if x < cfg.p_fail {
                Status::Fail
            } else if x < cfg.p_fail + cfg.p_info {
                Status::Info
            } else {
                Status::Ok
            }
        })
        .collect()
}

/// Transaction `i` of the simulated order, with client times near its
/// place and after its session's previous end (an `info` one sometimes
/// without an end).
fn timed_txn<R: Rng>(
    rng: &mut R,
    i: usize,
    session: usize,
    status: Status,
    ops: Vec<Op>,
    session_end: &mut [u64],
) -> Txn {
    let base = 10 * i as u64 + 20;
    let start = (base - rng.random_range(0..15u64)).max(session_end[session] + 1);
    let end = start + 1 + rng.random_range(0..15u64);
    session_end[session] = end;
    let mut t = Txn::new(i as u64, session as u64, status, ops);
    t.start = Some(start);
    t.end = if status == Status::Info && rng.random_bool(0.5) {
        None
    } else {
        Some(end)
    };
    t
}

/// One random history.
pub fn random_history<R: Rng>(rng: &mut R, cfg: &GenConfig) -> History {
    let n = rng.random_range(1..=cfg.max_txns);
    let mut next_value: Value = 1;
    // Plans, in the simulated order.
    let mut plans: Vec<Vec<Plan>> = Vec::with_capacity(n);
    for _ in 0..n {
        let mut p = Vec::new();
        if cfg.mini {
            let nkeys = rng.random_range(1..=2usize.min(cfg.keys as usize));
            let mut ks: Vec<i64> = Vec::new();
            while ks.len() < nkeys {
                let k = rng.random_range(0..cfg.keys);
                if !ks.contains(&k) {
                    ks.push(k);
                }
            }
            let writes: Vec<bool> = ks.iter().map(|_| rng.random_bool(0.6)).collect();
            let interleave = rng.random_bool(0.5);
            if interleave {
                for (k, w) in ks.iter().zip(&writes) {
                    p.push(Plan::R(*k));
                    if *w {
                        p.push(Plan::W(*k, next_value));
                        next_value += 1;
                    }
                }
            } else {
                for k in &ks {
                    p.push(Plan::R(*k));
                }
                for (k, w) in ks.iter().zip(&writes) {
                    if *w {
                        p.push(Plan::W(*k, next_value));
                        next_value += 1;
                    }
                }
            }
        } else {
            p = random_ops(rng, cfg, &mut next_value, 0.0);
        }
        plans.push(p);
    }
    let status = random_statuses(rng, cfg, n);
    // All values written to each key, for wild reads.
    let mut all_writes: Vec<(i64, Value)> = Vec::new();
    for p in &plans {
        for op in p {
            if let Plan::W(k, v) = op {
                all_writes.push((*k, *v));
            }
        }
    }
    // Resolve reads against a stale prefix of the order.
    let mut txns = Vec::with_capacity(n);
    let mut session_end: Vec<u64> = vec![0; cfg.sessions.max(1)];
    let mut session_last: Vec<Option<usize>> = vec![None; cfg.sessions.max(1)];
    for i in 0..n {
        let mut snap = i - rng.random_range(0..=cfg.max_stale.min(i));
        // With `session_floor`, the session is picked first, so that the
        // snapshot can include the session's previous transaction.
        let early_session =
            (cfg.session_floor > 0.0).then(|| rng.random_range(0..cfg.sessions.max(1)));
        if let Some(s) = early_session {
            if let Some(last) = session_last[s] {
                if rng.random_bool(cfg.session_floor) {
                    snap = snap.max(last + 1);
                }
            }
        }
        // Transactions left out of the snapshot, with `p_fork` each.
        let mut skip: Vec<usize> = Vec::new();
        if cfg.p_fork > 0.0 {
            for j in snap.saturating_sub(cfg.max_stale.max(1))..snap {
                if rng.random_bool(cfg.p_fork) {
                    skip.push(j);
                }
            }
        }
        let mut ops = Vec::new();
        let mut own: Vec<(i64, Value)> = Vec::new();
        for op in &plans[i] {
            match *op {
                Plan::W(k, v) => {
                    own.retain(|&(kk, _)| kk != k);
                    own.push((k, v));
                    ops.push(Op::Write {
                        key: Key::Int(k),
                        value: v,
                    });
                }
                Plan::R(k) => {
                    let value = if rng.random_bool(cfg.p_wild) {
                        let cands: Vec<Value> = all_writes
                            .iter()
                            .filter(|w| w.0 == k)
                            .map(|w| w.1)
                            .collect();
                        match rng.random_range(0..4) {
                            0 => None,
                            1 => Some(next_value + 1000),
                            _ if !cands.is_empty() => Some(cands[rng.random_range(0..cands.len())]),
                            _ => None,
                        }
                    } else if let Some(&(_, v)) = own.iter().find(|w| w.0 == k) {
                        Some(v)
                    } else {
                        let snap =
                            if cfg.per_read_stale > 0.0 && rng.random_bool(cfg.per_read_stale) {
                                i - rng.random_range(0..=cfg.max_stale.min(i))
                            } else {
                                snap
                            };
                        // Latest non-failed write of k among the first `snap`.
                        let mut v = None;
                        for (j, p) in plans.iter().enumerate().take(snap) {
                            if status[j] == Status::Fail || skip.contains(&j) {
                                continue;
                            }
                            for o in p {
                                if let Plan::W(kk, vv) = o {
                                    if *kk == k {
                                        v = Some(*vv);
                                    }
                                }
                            }
                        }
                        v
                    };
                    ops.push(Op::Read {
                        key: Key::Int(k),
                        value,
                    });
                }
            }
        }
        let session = match early_session {
            Some(s) => s,
            None => rng.random_range(0..cfg.sessions.max(1)),
        };
        session_last[session] = Some(i);
        txns.push(timed_txn(rng, i, session, status[i], ops, &mut session_end));
    }
    History::from_txns(txns)
}

/// One random list-append history: appends and list reads, simulated like
/// [`random_history`] (stale, forked and per-read snapshots, sessions,
/// times, `fail` and `info` transactions), with reads after the
/// transaction's own appends, and a few lists made arbitrary (an element
/// dropped, moved, doubled, or from nowhere). `mini` is ignored.
pub fn random_list_history<R: Rng>(rng: &mut R, cfg: &GenConfig) -> History {
    let n = rng.random_range(1..=cfg.max_txns);
    let mut next_value: Value = 1;
    let mut plans: Vec<Vec<Plan>> = Vec::with_capacity(n);
    for _ in 0..n {
        plans.push(random_ops(rng, cfg, &mut next_value, cfg.p_own_read));
    }
    let status = random_statuses(rng, cfg, n);
    let mut txns = Vec::with_capacity(n);
    let mut session_end: Vec<u64> = vec![0; cfg.sessions.max(1)];
    let mut session_last: Vec<Option<usize>> = vec![None; cfg.sessions.max(1)];
    for i in 0..n {
        let session = rng.random_range(0..cfg.sessions.max(1));
        let mut snap = i - rng.random_range(0..=cfg.max_stale.min(i));
        if let Some(last) = session_last[session] {
            if rng.random_bool(cfg.session_floor) {
                snap = snap.max(last + 1);
            }
        }
        let mut skip: Vec<usize> = Vec::new();
        for j in snap.saturating_sub(cfg.max_stale.max(1))..snap {
            if rng.random_bool(cfg.p_fork) {
                skip.push(j);
            }
        }
        let locked = cfg.p_locked_base > 0.0 && rng.random_bool(cfg.p_locked_base);
        let mut ops = Vec::new();
        let mut own: Vec<(i64, Value)> = Vec::new();
        for op in &plans[i] {
            match *op {
                Plan::W(k, v) => {
                    own.push((k, v));
                    ops.push(Op::Append {
                        key: Key::Int(k),
                        value: v,
                    });
                }
                Plan::R(k) => {
                    // After its own appends to k, a locked transaction's
                    // appends went on the latest list.
                    let latest = locked && own.iter().any(|w| w.0 == k);
                    let snap = if latest {
                        i
                    } else if rng.random_bool(cfg.per_read_stale) {
                        i - rng.random_range(0..=cfg.max_stale.min(i))
                    } else {
                        snap
                    };
                    let mut vs: Vec<Value> = Vec::new();
                    for (j, p) in plans.iter().enumerate().take(snap) {
                        if status[j] == Status::Fail || (!latest && skip.contains(&j)) {
                            continue;
                        }
                        for o in p {
                            if let Plan::W(kk, vv) = o {
                                if *kk == k {
                                    vs.push(*vv);
                                }
                            }
                        }
                    }
                    vs.extend(own.iter().filter(|w| w.0 == k).map(|w| w.1));
                    if rng.random_bool(cfg.p_wild) {
                        let others: Vec<Value> = plans
                            .iter()
                            .flatten()
                            .filter_map(|o| match o {
                                Plan::W(kk, vv) if *kk == k => Some(*vv),
                                _ => None,
                            })
                            .collect();
                        match rng.random_range(0..5) {
                            0 if !vs.is_empty() => {
                                let at = rng.random_range(0..vs.len());
                                vs.remove(at);
                            }
                            1 if vs.len() >= 2 => {
                                let at = rng.random_range(0..vs.len() - 1);
                                vs.swap(at, at + 1);
                            }
                            2 if !vs.is_empty() => {
                                let at = rng.random_range(0..vs.len());
                                vs.push(vs[at]);
                            }
                            3 if !others.is_empty() => {
                                let v = others[rng.random_range(0..others.len())];
                                let at = rng.random_range(0..=vs.len());
                                vs.insert(at, v);
                            }
                            _ => vs.push(next_value + 1000),
                        }
                    }
                    ops.push(Op::ReadList {
                        key: Key::Int(k),
                        values: Some(vs),
                    });
                }
            }
        }
        session_last[session] = Some(i);
        txns.push(timed_txn(rng, i, session, status[i], ops, &mut session_end));
    }
    History::from_txns(txns)
}

/// Gives a history database timestamps (`dbts`) drawn from few values, so that
/// writers often share a commit timestamp and snapshots are often taken at
/// a commit's timestamp (its own or another's): plausible ones (runs of
/// transactions in the simulated order commit together, each snapshot at or
/// just before one of the last few commit timestamps) or arbitrary ones
/// (from a pool about as large as the history).
pub fn stamp_ties<R: Rng>(h: &mut History, rng: &mut R) {
    let n = h.txns.len() as u64;
    let arbitrary = rng.random_bool(0.3);
    let mut group = 0u64;
    for (i, t) in h.txns.iter_mut().enumerate() {
        if rng.random_bool(0.05) {
            t.dbts = None;
            continue;
        }
        if i > 0 && rng.random_bool(0.5) {
            group += 1;
        }
        let (start, commit) = if arbitrary {
            let a = rng.random_range(1..=n + 1);
            let b = rng.random_range(1..=n + 1);
            (a.min(b), a.max(b))
        } else {
            let back = rng.random_range(0..3u64).min(group);
            let at = 10 * (group - back) + 10;
            let start = if rng.random_bool(0.7) { at } else { at - 1 };
            (start, 10 * group + 10)
        };
        let keep_commit = t.status != Status::Info && rng.random_bool(0.95);
        t.dbts = Some(history::DbTs {
            start,
            commit: keep_commit.then_some(commit),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The generators are deterministic for a seed and stay within the
    /// configured bounds (the checkers' tests rely on both).
    #[test]
    fn histories_are_reproducible_and_within_bounds() {
        let cfg = GenConfig::default();
        for seed in 0..200 {
            let gen = |list: bool| {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                if list {
                    random_list_history(&mut rng, &cfg)
                } else {
                    random_history(&mut rng, &cfg)
                }
            };
            for list in [false, true] {
                let h = gen(list);
                assert_eq!(
                    history::to_jsonl_string(&h),
                    history::to_jsonl_string(&gen(list))
                );
                assert!((1..=cfg.max_txns).contains(&h.txns.len()));
                for t in &h.txns {
                    assert!(t.session < cfg.sessions.max(1) as u64);
                }
            }
        }
    }
}
