//! Database timestamps in certificates: a brute-force dbts oracle vs witnesses, sound refutation edges, violations.

use checkers::certify::*;
use checkers::exhaustive::registers as oracle;
use checkers_testkit::brute::{
    any_perm, any_schedule, committed_sets, edge_cycles, is_ser, some_witness,
};
use checkers_testkit::build::{r, stamped, t, w};
use checkers_testkit::certs::{cert, keyless, ok_schedule, rw};
use checkers_testkit::{random_history, GenConfig};
use history::{to_jsonl_string, DbTs, History, Key, Level, Op, Status};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random history with database timestamps loosely following the
/// simulated order (so some are consistent and some are not).
fn dbts_history(rng: &mut ChaCha8Rng) -> History {
    let cfg = GenConfig {
        max_txns: 4,
        p_wild: 0.05,
        ..GenConfig::default()
    };
    let mut h = random_history(rng, &cfg);
    for (i, t) in h.txns.iter_mut().enumerate() {
        if rng.random_bool(0.1) {
            continue;
        }
        let start = (3 * i as u64 + 4).saturating_sub(rng.random_range(0..6u64));
        let commit = if rng.random_bool(0.85) {
            Some(start + rng.random_range(0..5u64))
        } else {
            None
        };
        t.dbts = Some(DbTs { start, commit });
    }
    h
}

/// A naive replay for the test oracle: `(key, value)` pairs, scanned.
fn naive_run(h: &History, t: usize, store: &[(Key, i64)]) -> Option<Vec<(Key, i64)>> {
    let mut own: Vec<(Key, i64)> = Vec::new();
    for op in &h.txns[t].ops {
        match op {
            Op::Read { key, value } => {
                if h.txns[t].status != Status::Ok {
                    continue;
                }
                let get = |s: &[(Key, i64)]| s.iter().rev().find(|(k, _)| k == key).map(|p| p.1);
                let v = get(&own).or_else(|| get(store));
                if v != *value {
                    return None;
                }
            }
            Op::Write { key, value } => own.push((key.clone(), *value)),
            _ => unreachable!(),
        }
    }
    Some(own)
}

fn writes(h: &History, t: usize) -> Vec<Key> {
    h.txns[t]
        .ops
        .iter()
        .filter_map(|o| o.written().map(|(k, _)| k.clone()))
        .collect()
}

fn share_key(h: &History, a: usize, b: usize) -> bool {
    let wb = writes(h, b);
    writes(h, a).iter().any(|k| wb.contains(k))
}

/// `a` must precede `b` (session or real time).
fn must_precede(h: &History, level: Level, a: usize, b: usize) -> bool {
    let (ta, tb) = (&h.txns[a], &h.txns[b]);
    let so = (level.uses_sessions() || level.uses_real_time()) && ta.session == tb.session && a < b;
    let rt = level.uses_real_time()
        && ta.status == Status::Ok
        && matches!((ta.end, tb.start), (Some(e), Some(s)) if e < s);
    a != b && (so || rt)
}

/// The brute-force dbts oracle: serial orders filtered by the timestamp
/// rules, all checked pairwise.
fn dbts_ser(h: &History, level: Level) -> bool {
    committed_sets(h).iter().any(|set| {
        any_perm(set, &mut |o| {
            let o: Vec<usize> = o.iter().map(|&t| t as usize).collect();
            let mut store: Vec<(Key, i64)> = Vec::new();
            for &t in &o {
                match naive_run(h, t, &store) {
                    Some(w) => store.extend(w),
                    None => return false,
                }
            }
            for i in 0..o.len() {
                for j in i + 1..o.len() {
                    let (a, b) = (o[i], o[j]);
                    if must_precede(h, level, b, a) {
                        return false;
                    }
                    let c = |t: usize| h.txns[t].dbts.and_then(|d| d.commit);
                    if let (Some(ca), Some(cb)) = (c(a), c(b)) {
                        if ca > cb && share_key(h, a, b) {
                            return false;
                        }
                    }
                }
            }
            true
        })
    })
}

/// The brute-force dbts oracle for SI: schedules filtered by the timestamp
/// rules, all checked pairwise.
fn dbts_si(h: &History, level: Level) -> bool {
    committed_sets(h).iter().any(|set| {
        any_schedule(set, &mut |s| {
            let at = |t: usize, c: bool| s.iter().position(|&e| e == (t as u32, c)).unwrap();
            let mut store: Vec<(Key, i64)> = Vec::new();
            let mut pending: Vec<Option<Vec<(Key, i64)>>> = vec![None; h.txns.len()];
            for &(t, c) in s {
                let t = t as usize;
                if !c {
                    match naive_run(h, t, &store) {
                        Some(w) => pending[t] = Some(w),
                        None => return false,
                    }
                } else {
                    store.extend(pending[t].take().unwrap());
                }
            }
            for &a in set {
                for &b in set {
                    let (a, b) = (a as usize, b as usize);
                    if a == b {
                        continue;
                    }
                    if must_precede(h, level, a, b) && at(a, true) > at(b, false) {
                        return false;
                    }
                    // First committer wins: overlapping writers of a key.
                    if share_key(h, a, b) && at(a, false) < at(b, true) && at(b, true) < at(a, true)
                    {
                        return false;
                    }
                }
            }
            // Timestamped events in order.
            let ev_ts = |t: usize, c: bool| -> Option<(u64, bool)> {
                let d = h.txns[t].dbts?;
                if c {
                    d.commit.map(|x| (x, true))
                } else {
                    Some((d.start, false))
                }
            };
            for i in 0..s.len() {
                for j in i + 1..s.len() {
                    let (e1, e2) = (s[i], s[j]);
                    if let (Some(k1), Some(k2)) =
                        (ev_ts(e1.0 as usize, e1.1), ev_ts(e2.0 as usize, e2.1))
                    {
                        if k2 < k1 {
                            return false;
                        }
                    }
                }
            }
            true
        })
    })
}

/// The brute-force dbts oracle of the level's kind.
fn dbts_oracle(h: &History, level: Level) -> bool {
    if is_ser(level) {
        dbts_ser(h, level)
    } else {
        dbts_si(h, level)
    }
}

#[test]
fn dbts_witnesses_agree_with_a_brute_force_timestamp_oracle() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut seen = [[0usize; 2]; 4];
    for i in 0..1500 {
        let h = dbts_history(&mut rng);
        for (li, level) in [Level::Ser, Level::Sser, Level::Si, Level::StrongSi]
            .into_iter()
            .enumerate()
        {
            let want = dbts_oracle(&h, level);
            let got = some_witness(&h, level, true);
            assert_eq!(
                got,
                want,
                "dbts history {i} at {level}: witness {got}, brute force {want}\n{}",
                to_jsonl_string(&h)
            );
            seen[li][usize::from(want)] += 1;
            // Without timestamps the test oracle is the crate's oracle.
            if i % 5 == 0 {
                let mut plain = h.clone();
                plain.txns.iter_mut().for_each(|t| t.dbts = None);
                let want = dbts_oracle(&plain, level);
                assert_eq!(want, oracle::satisfies(&plain, level).unwrap());
            }
        }
    }
    eprintln!("dbts (ser, sser, si, strong-si) [not, ok]: {seen:?}");
    for s in seen {
        assert!(s[0] > 50 && s[1] > 50, "too one-sided: {s:?}");
    }
}

#[test]
fn dbts_refutation_edges_are_sound() {
    let mut rng = ChaCha8Rng::seed_from_u64(4242);
    let mut refuted = 0;
    for i in 0..300 {
        let h = dbts_history(&mut rng);
        for level in [Level::Ser, Level::Si] {
            let holds = dbts_oracle(&h, level);
            for r in edge_cycles(&h, level, true, 5000) {
                if verify(&h, &cert(level, true, Claim::Anomalous(vec![r.clone()]))).is_ok() {
                    assert!(
                        !holds,
                        "dbts history {i} at {level}: {r:?}\n{}",
                        to_jsonl_string(&h)
                    );
                    refuted += 1;
                }
            }
        }
    }
    eprintln!("dbts cycles verified on anomalous histories: {refuted}");
}

#[test]
fn dbts_violations_are_rejected() {
    // SER: T0 and T1 both write x; timestamps say T0 (commit 5) after T1
    // (commit 3). Serial order [0, 1] contradicts them.
    let h = History::from_txns(vec![
        stamped(t(0, 0, vec![w(1, 1)]), 1, Some(5)),
        stamped(t(1, 1, vec![w(1, 2)]), 2, Some(3)),
        t(2, 2, vec![r(1, Some(2))]),
    ]);
    let c = |o: &[u32], dbts| {
        verify(
            &h,
            &cert(Level::Ser, dbts, Claim::Ok(Witness::Serial(o.to_vec()))),
        )
    };
    c(&[0, 1, 2], false).unwrap();
    let e = c(&[0, 1, 2], true).unwrap_err();
    assert_eq!(
        e,
        CertError::DbTsKeyOrder {
            key: Key::Int(1),
            first: 0,
            second: 1
        }
    );
    eprintln!("{e}");
    assert!(matches!(
        c(&[1, 0, 2], true).unwrap_err(),
        CertError::WrongRead { .. }
    ));
    // Refuted with timestamps: T2 read T1's x, T0's version is after T1's
    // (dbts), so T2's read is stale only if T0 came before T2... use a
    // ww-by-dbts edge plus the rw from T2: 2 -rw-> 0 (T2 read T1's x,
    // T0's version follows T1's by timestamps), 0 -> ? no cycle here; the
    // SER serial [1, 2, 0] is fine:
    c(&[1, 2, 0], true).unwrap();
    // SI: a begin after a commit with a larger timestamp.
    let h = History::from_txns(vec![
        stamped(t(0, 0, vec![w(1, 1)]), 1, Some(2)),
        stamped(t(1, 1, vec![r(1, None)]), 5, None),
    ]);
    let ev = [(1, false), (1, true), (0, false), (0, true)];
    ok_schedule(&h, Level::Si, false, &ev).unwrap();
    let e = ok_schedule(&h, Level::Si, true, &ev).unwrap_err();
    assert!(matches!(e, CertError::DbTsEvents { .. }), "{e}");
    eprintln!("{e}");
    assert!(!some_witness(&h, Level::Si, true));
    // The refutation: commit(T0) -ts-> begin(T1) -rw-> commit(T0).
    let ts = EdgeClaim::Ts {
        from_commit: true,
        to_commit: false,
    };
    let cyc = Refutation::Cycle(vec![keyless(0, 1, ts), rw(1, 0, None, WwWhy::DbTs, 1)]);
    let refutes = |level, dbts| verify(&h, &cert(level, dbts, Claim::Anomalous(vec![cyc.clone()])));
    refutes(Level::Si, true).unwrap();
    assert!(refutes(Level::Si, false).is_err());
    assert!(refutes(Level::Ser, true).is_err());
}
