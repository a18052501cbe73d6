//! The checker against the brute-force list oracle, at all ten levels, on
//! many random small list-append histories (internal reads, `info`
//! writers, failed transactions, stale and fractured snapshots).

use checkers::testgen::{random_list_history, GenConfig};
use checkers::{check, list_oracle, CheckOptions, Verdict};
use history::{to_jsonl_string, History, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const LEVELS: [Level; 10] = [
    Level::Rc,
    Level::Ra,
    Level::Cc,
    Level::Pc,
    Level::Si,
    Level::StrongSessionSi,
    Level::StrongSi,
    Level::Ser,
    Level::StrongSessionSer,
    Level::Sser,
];

/// Checks one history at every level; returns the oracle's verdicts.
fn agree(h: &History, i: usize) -> [bool; 10] {
    let mut out = [false; 10];
    for (li, &l) in LEVELS.iter().enumerate() {
        let want = list_oracle::satisfies(h, l).expect("a known level");
        let rep = check(h, l, &CheckOptions::default());
        let got = match rep.verdict {
            Verdict::Ok => true,
            Verdict::Anomalous => false,
            Verdict::Unknown => panic!(
                "history {i}: unknown at {l}: {:?}\n{}",
                rep.notes,
                to_jsonl_string(h)
            ),
        };
        assert_eq!(
            got,
            want,
            "history {i} at {l}: checker says {:?}, oracle says {want}\n{}\n{}",
            rep.verdict,
            to_jsonl_string(h),
            rep.summary()
        );
        out[li] = want;
    }
    out
}

fn run(cfg: &GenConfig, seed: u64, count: usize) -> Vec<[usize; 2]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = vec![[0usize; 2]; LEVELS.len()];
    for i in 0..count {
        let h = random_list_history(&mut rng, cfg);
        for (li, ok) in agree(&h, i).into_iter().enumerate() {
            seen[li][usize::from(ok)] += 1;
        }
    }
    for (li, s) in seen.iter().enumerate() {
        eprintln!(
            "seed {seed:#x} {}: {} anomalous, {} ok",
            LEVELS[li], s[0], s[1]
        );
    }
    seen
}

#[test]
fn list_checker_agrees_with_the_oracle() {
    let cfg = GenConfig {
        max_txns: 6,
        sessions: 3,
        keys: 3,
        max_ops: 4,
        p_fail: 0.1,
        p_info: 0.15,
        p_wild: 0.03,
        max_stale: 2,
        per_read_stale: 0.2,
        session_floor: 0.7,
        p_fork: 0.15,
        ..GenConfig::default()
    };
    let seen = run(&cfg, 0x11575, 10_000);
    for (li, s) in seen.iter().enumerate() {
        assert!(s[0] > 500 && s[1] > 500, "{}: {s:?}", LEVELS[li]);
    }
}

#[test]
fn list_checker_agrees_on_fresh_snapshots() {
    // Mostly fresh snapshots: the strong levels hold often, and the
    // histories that fail them fail by a little.
    let cfg = GenConfig {
        max_txns: 5,
        sessions: 2,
        keys: 2,
        max_ops: 4,
        p_fail: 0.1,
        p_info: 0.2,
        p_wild: 0.01,
        max_stale: 1,
        per_read_stale: 0.1,
        session_floor: 0.9,
        p_fork: 0.05,
        ..GenConfig::default()
    };
    let seen = run(&cfg, 0xf2e5, 10_000);
    for (li, s) in seen.iter().enumerate() {
        assert!(s[0] > 300 && s[1] > 300, "{}: {s:?}", LEVELS[li]);
    }
}
