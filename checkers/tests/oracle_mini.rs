//! The mini-transaction checks against the brute-force oracle, on thousands
//! of random small histories with anomalies, `fail` and `info` transactions.

use checkers::exhaustive::registers as oracle;
use checkers::{check, CheckOptions};
use checkers_testkit::{
    assert_certified, assert_two_sided, assert_verdict, holds, random_history, GenConfig, STRONG,
};
use history::to_jsonl_string;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn mini_checks_agree_with_the_oracle() {
    let cfg = GenConfig {
        sessions: 2,
        keys: 2,
        mini: true,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x0150);
    let mut seen = [[0usize; 2]; 6];
    for i in 0..3000 {
        let h = random_history(&mut rng, &cfg);
        for (li, &l) in STRONG.iter().enumerate() {
            let want = oracle::satisfies(&h, l).expect("strong level");
            let rep = check(&h, l, &CheckOptions::default());
            assert_certified(&rep, "oracle_mini");
            assert_verdict(&h, &rep, want, &format!("history {i}"));
            seen[li][usize::from(want)] += 1;
        }
    }
    // The generator must exercise both answers at every level.
    assert_two_sided("", STRONG, &seen, 100);
}

/// On mini-transaction histories too big for the oracle, the linear-time
/// checks and the general (polygraph) checker must give the same verdicts.
#[test]
fn mini_checks_agree_with_the_general_checker() {
    use checkers::general::{check_general, General, GeneralOptions};
    use checkers::index::Index;
    use checkers::lattice::forbids;
    use checkers::Scope;

    let cfg = GenConfig {
        max_txns: 30,
        sessions: 4,
        mini: true,
        p_wild: 0.03,
        p_info: 0.02,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x0151);
    let mut seen = [[0usize; 2]; 6];
    let mut other_method = 0;
    for i in 0..1500 {
        let h = random_history(&mut rng, &cfg);
        let ix = Index::new(&h);
        for (li, &l) in STRONG.iter().enumerate() {
            let rep = check(&h, l, &CheckOptions::default());
            assert_certified(&rep, "oracle_mini");
            if rep.method != "mini-transaction" {
                // A committed `info` writer (or a non-cyclic anomaly found
                // first) sends the history elsewhere: nothing to compare.
                other_method += 1;
                continue;
            }
            let mini_ok = holds(&h, &rep, &format!("history {i}"));
            let non_cyclic = ix.findings.iter().any(|f| forbids(l, f.kind, Scope::Item));
            let general_ok = !non_cyclic
                && match check_general(&ix, l, &GeneralOptions::default()) {
                    General::Ok { .. } => true,
                    General::Forced { .. } | General::Refuted { .. } => false,
                    other => panic!("history {i} at {l}: general check undecided: {other:?}"),
                };
            assert_eq!(
                mini_ok,
                general_ok,
                "history {i} at {l}: mini says {mini_ok}, general says {general_ok}\n{}",
                to_jsonl_string(&h)
            );
            seen[li][usize::from(mini_ok)] += 1;
        }
    }
    eprintln!("{other_method} (history, level) pairs went to another method");
    assert!(other_method < 1500 * 6 / 4, "{other_method}");
    assert_two_sided("", STRONG, &seen, 100);
}
