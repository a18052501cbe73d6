//! Certificate refutations by exhaustion: none verifies on a valid history; the whole history refutes an invalid one.

use checkers::certify::*;
use checkers::exhaustive::registers as oracle;
use checkers::AnomalyKind;
use checkers_testkit::brute::{cycles, edge_cycles, is_ser, is_si, keys_of, small_configs};
use checkers_testkit::certs::cert;
use checkers_testkit::random_history;
use history::{to_jsonl_string, History, Level, Op, Status};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// All candidate refutations of a small history, other than cycles.
fn simple_refutations(h: &History) -> Vec<Refutation> {
    let n = h.txns.len() as u32;
    let mut out = Vec::new();
    for (t, txn) in h.txns.iter().enumerate() {
        for o in 0..txn.ops.len() {
            for kind in [
                AnomalyKind::ThinAirRead,
                AnomalyKind::AbortedRead,
                AnomalyKind::IntermediateRead,
                AnomalyKind::FutureRead,
                AnomalyKind::NotMyOwnWrite,
                AnomalyKind::NotMyLastWrite,
                AnomalyKind::NonRepeatableRead,
                AnomalyKind::DuplicateWrite,
                AnomalyKind::IncompatibleOrder,
                AnomalyKind::DuplicateElements,
                AnomalyKind::G0,
            ] {
                out.push(Refutation::Finding {
                    kind,
                    txn: t as u32,
                    op: o as u32,
                });
            }
        }
    }
    for k in keys_of(h) {
        for a in 0..n {
            for b in 0..n {
                for base in std::iter::once(None).chain((0..n).map(Some)) {
                    out.push(Refutation::LostUpdate {
                        key: k.clone(),
                        base,
                        a,
                        b,
                    });
                }
            }
        }
    }
    out
}

fn weak_candidates(h: &History, level: Level) -> Vec<WeakEdge> {
    let n = h.txns.len() as u32;
    let keys = keys_of(h);
    let mut base = Vec::new();
    for a in 0..n {
        for b in 0..n {
            let mut c = vec![WeakEdge {
                from: a,
                to: b,
                why: WeakWhy::So,
            }];
            for k in &keys {
                c.push(WeakEdge {
                    from: a,
                    to: b,
                    why: WeakWhy::Wr { key: k.clone() },
                });
            }
            base.extend(
                c.into_iter()
                    .filter(|e| verify_weak_edge(h, level, e).is_ok()),
            );
        }
    }
    let mut paths: Vec<Vec<WeakEdge>> = base.iter().map(|e| vec![e.clone()]).collect();
    for a in &base {
        for b in &base {
            if a.to == b.from {
                paths.push(vec![a.clone(), b.clone()]);
            }
        }
    }
    let mut out = base.clone();
    for (t3, txn) in h.txns.iter().enumerate() {
        for (o, op) in txn.ops.iter().enumerate() {
            let Op::Read { key, value } = op else {
                continue;
            };
            let to = match value {
                None => INIT,
                Some(v) => {
                    let ws: Vec<u32> = (0..n)
                        .filter(|&x| {
                            h.txns[x as usize]
                                .ops
                                .iter()
                                .any(|p| p.written() == Some((key, *v)))
                        })
                        .collect();
                    match ws[..] {
                        [x] => x,
                        _ => continue,
                    }
                }
            };
            for t1 in 0..n {
                if !h.txns[t1 as usize]
                    .ops
                    .iter()
                    .any(|p| p.written().is_some_and(|(k, _)| k == key))
                {
                    continue;
                }
                {
                    let mut premises = vec![Premise::Session];
                    for o2 in 0..o {
                        premises.push(Premise::EarlierRead { op: o2 as u32 });
                    }
                    for y in &keys {
                        premises.push(Premise::ReadFrom { key: y.clone() });
                    }
                    if matches!(level, Level::Cc | Level::Pc) {
                        for p in &paths {
                            premises.push(Premise::Path(p.clone()));
                        }
                    }
                    for premise in premises {
                        let e = WeakEdge {
                            from: t1,
                            to,
                            why: WeakWhy::Axiom {
                                reader: t3 as u32,
                                op: o as u32,
                                key: key.clone(),
                                premise,
                            },
                        };
                        if verify_weak_edge(h, level, &e).is_ok() {
                            out.push(e);
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn refutations_are_sound_and_sub_histories_complete() {
    let mut proved = vec![[0usize; 2]; Level::ALL.len()];
    for (li, level) in Level::ALL.into_iter().enumerate() {
        let cfgs = small_configs();
        for (ci, cfg) in cfgs.iter().enumerate() {
            let mut rng = ChaCha8Rng::seed_from_u64(7000 + 100 * li as u64 + ci as u64);
            for i in 0..500 {
                let h = random_history(&mut rng, cfg);
                let holds = oracle::satisfies(&h, level).unwrap();
                let mut found: Option<Refutation> = None;
                let mut check = |r: Refutation| {
                    let c = cert(level, false, Claim::Anomalous(vec![r.clone()]));
                    if verify(&h, &c).is_ok() {
                        assert!(
                            !holds,
                            "{level}, config {ci}, history {i}: the oracle accepts, yet {r:?} verifies\n{}",
                            to_jsonl_string(&h)
                        );
                        found.get_or_insert(r);
                    }
                };
                for r in simple_refutations(&h) {
                    check(r);
                }
                if is_ser(level) || is_si(level) {
                    for r in edge_cycles(&h, level, false, 5000) {
                        check(r);
                    }
                } else {
                    let es = weak_candidates(&h, level);
                    for e in es.iter().filter(|e| e.to == INIT) {
                        check(Refutation::WeakCycle(vec![e.clone()]));
                    }
                    let inner: Vec<WeakEdge> = es.into_iter().filter(|e| e.to != INIT).collect();
                    let mut cs = Vec::new();
                    cycles(&inner, |e| (e.from, e.to), 3, &mut |c| cs.push(c.to_vec()));
                    for c in cs.into_iter().take(5000) {
                        check(Refutation::WeakCycle(
                            c.iter().map(|&i| inner[i].clone()).collect(),
                        ));
                    }
                }
                // The whole history as a sub-history: verifies iff the level
                // fails; random subsets are sound.
                let all: Vec<u32> = (0..h.txns.len() as u32).collect();
                let info = h.txns.iter().filter(|t| t.status == Status::Info).count();
                if info <= MAX_SUB_INFO {
                    let c = cert(
                        level,
                        false,
                        Claim::Anomalous(vec![Refutation::SubHistory(all)]),
                    );
                    assert_eq!(
                        verify(&h, &c).is_ok(),
                        !holds,
                        "{level}, history {i}: the whole sub-history"
                    );
                }
                let sub: Vec<u32> = (0..h.txns.len() as u32)
                    .filter(|_| rng.random_bool(0.6))
                    .collect();
                if !sub.is_empty() {
                    let c = cert(
                        level,
                        false,
                        Claim::Anomalous(vec![Refutation::SubHistory(sub)]),
                    );
                    if verify(&h, &c).is_ok() {
                        assert!(
                            !holds,
                            "{level}, history {i}: a sub-history refutes an ok history"
                        );
                    }
                }
                if !holds {
                    // Refuted without brute force (finding, lost update, cycle)?
                    proved[li][usize::from(found.is_some())] += 1;
                }
            }
        }
    }
    for (li, level) in Level::ALL.into_iter().enumerate() {
        eprintln!(
            "{level}: anomalous histories refuted by a finding, lost update or cycle: {} of {}",
            proved[li][1],
            proved[li][0] + proved[li][1]
        );
    }
}
