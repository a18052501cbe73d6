//! Brute force for the certificate checker's tests, on small histories:
//! every committed set, serial order and begin/commit schedule (does some
//! witness verify?), and every edge that checks on its own and the short
//! cycles of them (candidate refutations).

use checkers::certify::*;
use history::{History, Key, Level, Status};

use crate::certs::cert;
use crate::GenConfig;

/// Every possible committed set: ok ones, plus each subset of info ones.
pub fn committed_sets(h: &History) -> Vec<Vec<u32>> {
    let info: Vec<usize> = (0..h.txns.len())
        .filter(|&i| h.txns[i].status == Status::Info)
        .collect();
    (0u32..(1 << info.len()))
        .map(|mask| {
            (0..h.txns.len())
                .filter(|&i| match h.txns[i].status {
                    Status::Ok => true,
                    Status::Fail => false,
                    Status::Info => {
                        let p = info.iter().position(|&j| j == i).unwrap();
                        mask & (1 << p) != 0
                    }
                })
                .map(|i| i as u32)
                .collect()
        })
        .collect()
}

/// Calls `f` on each permutation of `v` until it returns true.
pub fn any_perm(v: &[u32], f: &mut dyn FnMut(&[u32]) -> bool) -> bool {
    fn go(left: &mut Vec<u32>, acc: &mut Vec<u32>, f: &mut dyn FnMut(&[u32]) -> bool) -> bool {
        if left.is_empty() {
            return f(acc);
        }
        for i in 0..left.len() {
            let t = left.remove(i);
            acc.push(t);
            let found = go(left, acc, f);
            acc.pop();
            left.insert(i, t);
            if found {
                return true;
            }
        }
        false
    }
    go(&mut v.to_vec(), &mut Vec::new(), f)
}

/// A test on a schedule.
pub type SchedFn<'a> = dyn FnMut(&[(u32, bool)]) -> bool + 'a;

/// Calls `f` on each begin/commit schedule of `v` until it returns true.
pub fn any_schedule(v: &[u32], f: &mut SchedFn) -> bool {
    fn go(v: &[u32], state: &mut Vec<u8>, acc: &mut Vec<(u32, bool)>, f: &mut SchedFn) -> bool {
        if acc.len() == 2 * v.len() {
            return f(acc);
        }
        for i in 0..v.len() {
            if state[i] == 2 {
                continue;
            }
            let commit = state[i] == 1;
            state[i] += 1;
            acc.push((v[i], commit));
            let found = go(v, state, acc, f);
            acc.pop();
            state[i] -= 1;
            if found {
                return true;
            }
        }
        false
    }
    go(v, &mut vec![0; v.len()], &mut Vec::new(), f)
}

/// A level whose witness is a serial order.
pub fn is_ser(l: Level) -> bool {
    matches!(l, Level::Ser | Level::StrongSessionSer | Level::Sser)
}

/// A level whose witness is a begin/commit schedule.
pub fn is_si(l: Level) -> bool {
    matches!(l, Level::Si | Level::StrongSessionSi | Level::StrongSi)
}

/// Some witness of the level's kind verifies.
pub fn some_witness(h: &History, level: Level, use_dbts: bool) -> bool {
    committed_sets(h).iter().any(|set| {
        if is_si(level) {
            any_schedule(set, &mut |s| {
                verify(
                    h,
                    &cert(level, use_dbts, Claim::Ok(Witness::Schedule(s.to_vec()))),
                )
                .is_ok()
            })
        } else {
            let mk = |o: &[u32]| {
                if is_ser(level) {
                    Witness::Serial(o.to_vec())
                } else {
                    Witness::CommitOrder(o.to_vec())
                }
            };
            any_perm(set, &mut |o| {
                verify(h, &cert(level, use_dbts, Claim::Ok(mk(o)))).is_ok()
            })
        }
    })
}

/// The keys of a history's ops, sorted.
pub fn keys_of(h: &History) -> Vec<Key> {
    let mut ks: Vec<Key> = h
        .txns
        .iter()
        .flat_map(|t| t.ops.iter().filter_map(|o| o.key().cloned()))
        .collect();
    ks.sort();
    ks.dedup();
    ks
}

/// Every edge between two transactions that checks on its own: single
/// reasons first, then chains of two of them, then the rw edges they
/// justify.
#[allow(clippy::needless_range_loop)]
pub fn holding_edges(h: &History, level: Level, use_dbts: bool) -> Vec<ClaimedEdge> {
    let n = h.txns.len() as u32;
    let keys = keys_of(h);
    let holds = |e: &ClaimedEdge| verify_edge_claim(h, level, use_dbts, e).is_ok();
    let mut out = Vec::new();
    for a in 0..n {
        for b in 0..n {
            for kind in [
                EdgeClaim::So,
                EdgeClaim::Rt,
                EdgeClaim::Ts {
                    from_commit: true,
                    to_commit: false,
                },
                EdgeClaim::Ts {
                    from_commit: false,
                    to_commit: true,
                },
                EdgeClaim::Ts {
                    from_commit: true,
                    to_commit: true,
                },
                EdgeClaim::Ts {
                    from_commit: false,
                    to_commit: false,
                },
            ] {
                let e = ClaimedEdge {
                    from: a,
                    to: b,
                    kind,
                    key: None,
                };
                if holds(&e) {
                    out.push(e);
                }
            }
        }
    }
    for k in &keys {
        let ww = |a: u32, b: u32, why: WwWhy| ClaimedEdge {
            from: a,
            to: b,
            kind: EdgeClaim::Ww(why),
            key: Some(k.clone()),
        };
        // Single reasons, per ordered pair.
        let mut basic: Vec<Vec<Vec<WwWhy>>> = vec![vec![Vec::new(); n as usize]; n as usize];
        for a in 0..n {
            for b in 0..n {
                for why in [
                    WwWhy::ReadModifyWrite,
                    WwWhy::FirstWriter,
                    WwWhy::ListOrder,
                    WwWhy::DbTs,
                ] {
                    if holds(&ww(a, b, why.clone())) {
                        basic[a as usize][b as usize].push(why);
                    }
                }
            }
        }
        let mut all = basic.clone();
        for a in 0..n as usize {
            for c in 0..n as usize {
                for b in 0..n as usize {
                    for w1 in &basic[a][c] {
                        for w2 in &basic[c][b] {
                            let why =
                                WwWhy::Chain(vec![(c as u32, w1.clone()), (b as u32, w2.clone())]);
                            if holds(&ww(a as u32, b as u32, why.clone())) {
                                all[a][b].push(why);
                            }
                        }
                    }
                }
            }
        }
        for a in 0..n {
            for b in 0..n {
                let mut kinds = vec![
                    EdgeClaim::Wr,
                    EdgeClaim::Rw {
                        read_from: None,
                        why: WwWhy::ReadModifyWrite,
                    },
                ];
                for why in &all[a as usize][b as usize] {
                    kinds.push(EdgeClaim::Ww(why.clone()));
                }
                for rf in 0..n {
                    for why in &all[rf as usize][b as usize] {
                        kinds.push(EdgeClaim::Rw {
                            read_from: Some(rf),
                            why: why.clone(),
                        });
                    }
                }
                for kind in kinds {
                    let e = ClaimedEdge {
                        from: a,
                        to: b,
                        kind,
                        key: Some(k.clone()),
                    };
                    if holds(&e) {
                        out.push(e);
                    }
                }
            }
        }
    }
    out
}

/// Calls `f` on each cycle of up to `max` edges (as edge indices).
pub fn cycles<E>(
    edges: &[E],
    ends: impl Fn(&E) -> (u32, u32),
    max: usize,
    f: &mut dyn FnMut(&[usize]),
) {
    fn go<E>(
        edges: &[E],
        ends: &dyn Fn(&E) -> (u32, u32),
        max: usize,
        path: &mut Vec<usize>,
        f: &mut dyn FnMut(&[usize]),
    ) {
        let first = ends(&edges[path[0]]).0;
        let last = ends(&edges[*path.last().unwrap()]).1;
        if last == first {
            f(path);
        }
        if path.len() == max {
            return;
        }
        for (i, e) in edges.iter().enumerate() {
            // Each cycle once per rotation: start from its smallest edge.
            if i < path[0] || ends(e).0 != last {
                continue;
            }
            path.push(i);
            go(edges, ends, max, path, f);
            path.pop();
        }
    }
    for i in 0..edges.len() {
        go(edges, &ends, max, &mut vec![i], f);
    }
}

/// The short cycles (up to four edges) of the edges that check on their
/// own ([`holding_edges`]), as refutations; at most `limit` of them.
pub fn edge_cycles(h: &History, level: Level, use_dbts: bool, limit: usize) -> Vec<Refutation> {
    let es = holding_edges(h, level, use_dbts);
    let mut cs = Vec::new();
    cycles(&es, |e| (e.from, e.to), 4, &mut |c| cs.push(c.to_vec()));
    cs.into_iter()
        .take(limit)
        .map(|c| Refutation::Cycle(c.iter().map(|&i| es[i].clone()).collect()))
        .collect()
}

/// The random history shapes the brute-force comparisons run on: plain,
/// mini-transactions, and forks with per-read snapshots.
pub fn small_configs() -> Vec<GenConfig> {
    let max_txns = 5;
    vec![
        GenConfig {
            max_txns,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns,
            mini: true,
            p_info: 0.15,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns,
            per_read_stale: 0.3,
            session_floor: 0.5,
            p_fork: 0.3,
            p_info: 0.2,
            p_fail: 0.15,
            sessions: 2,
            ..GenConfig::default()
        },
    ]
}
