//! The checker on small random histories that mix everything an audit can
//! throw at it: duplicate values (also from failed writers), empty
//! transactions, `info` and `fail` outcomes, range reads (some empty, some
//! with inverted bounds), reads after own appends, and database timestamps
//! with ties. Per family (registers, lists, ranges, timestamps) and at all
//! ten levels: no panic, no certificate that fails to hold (the CLI's exit
//! 2, "a checker bug"), and the verdict the brute-force oracles give.
//!
//! `MIXED_HISTORIES=10000 cargo test --release -p checkers --test
//! mixed_histories -- --nocapture` runs the audit's size; the default keeps
//! the suite short.

use std::panic::{catch_unwind, AssertUnwindSafe};

use checkers::exhaustive::lists as list_oracle;
use checkers::exhaustive::registers as oracle;
use checkers::{check, Certified, CheckOptions, Verdict};
use checkers_testkit::{random_history, random_list_history, stamp_ties, GenConfig};
use history::{to_jsonl_string, History, Key, Level, Op};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Histories per family.
fn count() -> usize {
    std::env::var("MIXED_HISTORIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_500)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Family {
    Registers,
    Lists,
    Ranges,
    Timestamps,
}

/// Empties some transactions, and now and then gives one write the value
/// of another write of the same key (a duplicate, from any writer).
fn mix<R: Rng>(h: &mut History, rng: &mut R) {
    for t in h.txns.iter_mut() {
        if rng.random_bool(0.08) {
            t.ops.clear();
        }
    }
    if rng.random_bool(0.2) {
        let writes: Vec<(usize, usize, Key, i64)> = h
            .txns
            .iter()
            .enumerate()
            .flat_map(|(t, txn)| {
                txn.ops
                    .iter()
                    .enumerate()
                    .filter_map(move |(o, op)| op.written().map(|(k, v)| (t, o, k.clone(), v)))
            })
            .collect();
        if writes.len() >= 2 {
            let a = rng.random_range(0..writes.len());
            let same: Vec<&(usize, usize, Key, i64)> = writes
                .iter()
                .enumerate()
                .filter(|(i, w)| *i != a && w.2 == writes[a].2)
                .map(|(_, w)| w)
                .collect();
            if !same.is_empty() {
                let (t, o, _, _) = same[rng.random_range(0..same.len())];
                let v = writes[a].3;
                match &mut h.txns[*t].ops[*o] {
                    Op::Write { value, .. }
                    | Op::Insert { value, .. }
                    | Op::Delete { value, .. }
                    | Op::Append { value, .. } => *value = v,
                    _ => {}
                }
            }
        }
    }
}

/// Turns some point reads into range reads: over the key alone, over its
/// neighbours too (the others read as absent), or inverted (`lo > hi`, no
/// key at all).
fn ranges<R: Rng>(h: &mut History, rng: &mut R) {
    for t in h.txns.iter_mut() {
        for op in t.ops.iter_mut() {
            let Op::Read {
                key: Key::Int(k),
                value,
            } = op
            else {
                continue;
            };
            if !rng.random_bool(0.5) {
                continue;
            }
            let k = *k;
            let rows: Vec<(Key, i64)> = value.map(|v| (Key::Int(k), v)).into_iter().collect();
            *op = match rng.random_range(0..4) {
                0 => Op::RangeRead {
                    lo: Key::Int(k),
                    hi: Key::Int(k),
                    rows: Box::new(rows),
                },
                1 => Op::RangeRead {
                    lo: Key::Int(k - 1),
                    hi: Key::Int(k + 1),
                    rows: Box::new(rows),
                },
                2 => Op::RangeRead {
                    lo: Key::Int(k + 1),
                    hi: Key::Int(k),
                    rows: Box::new(Vec::new()),
                },
                _ => Op::RangeRead {
                    lo: Key::Int(k + 10),
                    hi: Key::Int(k + 20),
                    rows: Box::new(Vec::new()),
                },
            };
        }
    }
}

fn history(family: Family, rng: &mut ChaCha8Rng) -> History {
    let cfg = GenConfig {
        max_txns: 5,
        sessions: 3,
        keys: 3,
        max_ops: 4,
        p_fail: 0.12,
        p_info: 0.12,
        p_wild: 0.05,
        per_read_stale: 0.15,
        session_floor: 0.6,
        p_fork: 0.1,
        p_own_read: 0.4,
        p_locked_base: 0.5,
        ..GenConfig::default()
    };
    let mut h = match family {
        Family::Lists => random_list_history(rng, &cfg),
        _ => random_history(rng, &cfg),
    };
    mix(&mut h, rng);
    match family {
        Family::Ranges => ranges(&mut h, rng),
        Family::Timestamps => stamp_ties(&mut h, rng),
        _ => {}
    }
    h
}

/// What the oracle says, when it can say it (`None`: too many `info`
/// transactions, or a shape it does not take).
fn oracle_says(family: Family, h: &History, l: Level, dbts: bool) -> Option<bool> {
    catch_unwind(AssertUnwindSafe(|| match family {
        Family::Lists => list_oracle::satisfies(h, l),
        _ if dbts => oracle::satisfies_dbts(h, l),
        _ => oracle::satisfies(h, l),
    }))
    .ok()
    .flatten()
}

#[derive(Default, Debug)]
struct Tally {
    checks: usize,
    anomalous: usize,
    ok: usize,
    unknown: usize,
    compared: usize,
    failures: Vec<String>,
}

fn audit(family: Family, seed: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut tally = Tally::default();
    for i in 0..count() {
        let h = history(family, &mut rng);
        // Without timestamps: each level's own verdict, and what the check
        // at each level placed the others at (fails, satisfies).
        let mut direct: Vec<(Level, bool)> = Vec::new();
        let mut placed: Vec<(Level, Vec<Level>, Vec<Level>)> = Vec::new();
        for l in Level::ALL {
            let strong = !matches!(l, Level::Rc | Level::Ra | Level::Cc | Level::Pc);
            for dbts in [false, true] {
                if dbts && !(family == Family::Timestamps && strong) {
                    continue;
                }
                let opts = CheckOptions {
                    use_dbts: dbts,
                    ..CheckOptions::default()
                };
                tally.checks += 1;
                let what = format!(
                    "{family:?} history {i} at {l}{}",
                    if dbts { " --use-dbts" } else { "" }
                );
                let rep = match catch_unwind(AssertUnwindSafe(|| check(&h, l, &opts))) {
                    Ok(r) => r,
                    Err(_) => {
                        tally
                            .failures
                            .push(format!("{what}: panicked\n{}", to_jsonl_string(&h)));
                        continue;
                    }
                };
                if let Certified::Failed(why) = &rep.certified {
                    tally.failures.push(format!(
                        "{what}: the certificate does not hold: {why}\n{}\n{}",
                        to_jsonl_string(&h),
                        rep.summary()
                    ));
                    continue;
                }
                if !dbts {
                    placed.push((l, rep.fails.clone(), rep.satisfies.clone()));
                }
                let got = match rep.verdict {
                    Verdict::Ok => {
                        tally.ok += 1;
                        true
                    }
                    Verdict::Anomalous => {
                        tally.anomalous += 1;
                        false
                    }
                    Verdict::Unknown => {
                        tally.unknown += 1;
                        continue;
                    }
                };
                if !dbts {
                    direct.push((l, got));
                }
                if let Some(want) = oracle_says(family, &h, l, dbts) {
                    tally.compared += 1;
                    if got != want {
                        tally.failures.push(format!(
                            "{what}: checker {:?}, oracle {}\n{}\n{}",
                            rep.verdict,
                            if want { "ok" } else { "anomalous" },
                            to_jsonl_string(&h),
                            rep.summary()
                        ));
                    }
                }
            }
        }
        // One answer per level, whichever level was checked.
        for (l, fails, satisfies) in &placed {
            for &(other, ok) in &direct {
                if (fails.contains(&other) && ok) || (satisfies.contains(&other) && !ok) {
                    tally.failures.push(format!(
                        "{family:?} history {i}: the check at {l} places {other} against its own check ({})\n{}",
                        if ok { "ok" } else { "anomalous" },
                        to_jsonl_string(&h)
                    ));
                }
            }
        }
    }
    eprintln!(
        "{family:?}: {tally:?}",
        tally = (
            tally.checks,
            tally.anomalous,
            tally.ok,
            tally.unknown,
            tally.compared,
            tally.failures.len()
        )
    );
    tally
}

fn assert_clean(family: Family, seed: u64) {
    let t = audit(family, seed);
    assert!(
        t.failures.is_empty(),
        "{} of {} checks went wrong; the first:\n{}",
        t.failures.len(),
        t.checks,
        t.failures[..t.failures.len().min(3)].join("\n\n")
    );
    // The mix decides both ways and the oracle checks most of it.
    assert!(t.ok > t.checks / 10 && t.anomalous > t.checks / 10, "{t:?}");
    assert!(2 * t.compared > t.checks, "{t:?}");
}

#[test]
fn registers() {
    assert_clean(Family::Registers, 0x5eed_0001);
}

#[test]
fn lists() {
    assert_clean(Family::Lists, 0x5eed_0002);
}

#[test]
fn ranges_with_empty_and_inverted_bounds() {
    assert_clean(Family::Ranges, 0x5eed_0003);
}

#[test]
fn timestamps_with_ties() {
    assert_clean(Family::Timestamps, 0x5eed_0004);
}
