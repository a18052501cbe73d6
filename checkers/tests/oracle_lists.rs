//! The checker against the brute-force list oracle, at all ten levels, on
//! many random small list-append histories (internal reads, `info`
//! writers, failed transactions, stale and fractured snapshots).

use checkers::exhaustive::lists as list_oracle;
use checkers::{check, CheckOptions};
use checkers_testkit::{
    assert_certified, assert_two_sided, assert_verdict, random_list_history, GenConfig,
};
use history::{to_jsonl_string, History, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Checks one history at every level; returns the oracle's verdicts.
fn agree(h: &History, i: usize) -> [bool; 10] {
    let mut out = [false; 10];
    let mut placed: Vec<(Level, Vec<Level>, Vec<Level>)> = Vec::new();
    for (li, &l) in Level::ALL.iter().enumerate() {
        let want = list_oracle::satisfies(h, l).expect("a known level");
        let rep = check(h, l, &CheckOptions::default());
        assert_certified(&rep, "oracle_lists");
        assert_verdict(h, &rep, want, &format!("history {i}"));
        out[li] = want;
        placed.push((l, rep.fails.clone(), rep.satisfies.clone()));
    }
    // One answer per level: what a check at one level says of another
    // (fails / satisfies) is what checking that level says.
    for (l, fails, satisfies) in &placed {
        for (li, &other) in Level::ALL.iter().enumerate() {
            let placed_as = if fails.contains(&other) {
                Some(false)
            } else if satisfies.contains(&other) {
                Some(true)
            } else {
                None
            };
            assert!(
                placed_as.is_none_or(|p| p == out[li]),
                "history {i}: the check at {l} places {other} against its own check\n{}",
                to_jsonl_string(h)
            );
        }
    }
    out
}

/// Pairs of levels (weaker, stronger) whose separation is counted: how
/// many histories satisfy the first and not the second.
const SEPARATIONS: [(usize, usize); 6] = [(0, 1), (1, 2), (2, 3), (3, 5), (4, 7), (4, 5)];

/// Per level, how many histories were anomalous and ok; and per pair of
/// [`SEPARATIONS`], how many separated them.
fn run(cfg: &GenConfig, seed: u64, count: usize) -> (Vec<[usize; 2]>, Vec<usize>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = vec![[0usize; 2]; Level::ALL.len()];
    let mut apart = vec![0usize; SEPARATIONS.len()];
    for i in 0..count {
        let h = random_list_history(&mut rng, cfg);
        let v = agree(&h, i);
        for (li, &ok) in v.iter().enumerate() {
            seen[li][usize::from(ok)] += 1;
        }
        for (p, &(a, b)) in SEPARATIONS.iter().enumerate() {
            apart[p] += usize::from(v[a] && !v[b]);
        }
    }
    for (p, &(a, b)) in SEPARATIONS.iter().enumerate() {
        eprintln!(
            "seed {seed:#x} {} ok and {} anomalous: {}",
            Level::ALL[a],
            Level::ALL[b],
            apart[p]
        );
    }
    (seen, apart)
}

#[test]
fn list_checker_agrees_with_the_oracle() {
    let cfg = GenConfig {
        max_txns: 6,
        p_info: 0.15,
        p_wild: 0.03,
        per_read_stale: 0.2,
        session_floor: 0.7,
        p_fork: 0.15,
        ..GenConfig::default()
    };
    let (seen, _) = run(&cfg, 0x11575, 10_000);
    assert_two_sided("", &Level::ALL, &seen, 500);
}

#[test]
fn list_checker_agrees_on_fresh_snapshots() {
    // Mostly fresh snapshots: the strong levels hold often, and the
    // histories that fail them fail by a little.
    let cfg = GenConfig {
        sessions: 2,
        keys: 2,
        p_info: 0.2,
        p_wild: 0.01,
        max_stale: 1,
        per_read_stale: 0.1,
        session_floor: 0.9,
        p_fork: 0.05,
        ..GenConfig::default()
    };
    let (seen, _) = run(&cfg, 0xf2e5, 10_000);
    assert_two_sided("", &Level::ALL, &seen, 300);
}

#[test]
fn list_checker_agrees_on_forks() {
    // Snapshots that leave out recent transactions, more sessions and
    // reads: long forks and causality violations, so that the weak levels
    // come apart.
    let cfg = GenConfig {
        max_txns: 6,
        sessions: 4,
        keys: 2,
        max_ops: 5,
        p_fail: 0.05,
        p_wild: 0.0,
        max_stale: 3,
        per_read_stale: 0.1,
        session_floor: 0.9,
        p_fork: 0.5,
        ..GenConfig::default()
    };
    let (seen, apart) = run(&cfg, 0xf04c, 20_000);
    assert_two_sided("", &Level::ALL, &seen, 300);
    for (p, &n) in apart.iter().enumerate() {
        let (a, b) = SEPARATIONS[p];
        assert!(n > 20, "{} vs {}: {n}", Level::ALL[a], Level::ALL[b]);
    }
}

#[test]
fn list_checker_agrees_on_reads_after_own_appends() {
    // Most appends are read back at once, half of the transactions on the
    // latest list (as a read-committed database holding the row gives),
    // the rest on their stale snapshots: where a read after own appends
    // happened, and what it says about the version installed, decide.
    let cfg = GenConfig {
        max_txns: 6,
        keys: 2,
        p_info: 0.1,
        p_wild: 0.02,
        per_read_stale: 0.2,
        session_floor: 0.7,
        p_fork: 0.1,
        p_own_read: 0.6,
        p_locked_base: 0.5,
        ..GenConfig::default()
    };
    // At least a third of the transactions read after their own appends.
    let mut rng = ChaCha8Rng::seed_from_u64(0x0a3e);
    let (mut txns, mut own_reads) = (0usize, 0usize);
    for _ in 0..2_000 {
        let h = random_list_history(&mut rng, &cfg);
        for t in &h.txns {
            txns += 1;
            let mut appended = Vec::new();
            let mut hit = false;
            for op in &t.ops {
                match op {
                    history::Op::Append { key, .. } => appended.push(key.clone()),
                    history::Op::ReadList { key, .. } => hit |= appended.contains(key),
                    _ => {}
                }
            }
            own_reads += usize::from(hit);
        }
    }
    assert!(3 * own_reads >= txns, "{own_reads} of {txns}");
    let (seen, apart) = run(&cfg, 0x0a3e, 10_000);
    assert_two_sided("", &Level::ALL, &seen, 300);
    // rc ok and ra anomalous: reads after own appends that only rc allows.
    assert!(apart[0] > 50, "{apart:?}");
}
