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
        agree(&h, i, &mut seen);
    }
    // The generator must exercise both answers at every level.
    assert_two_sided("", STRONG, &seen, 100);
}

/// Checks `h` at every strong level against the oracle, counting each
/// level's answers in `seen`; returns how many the linear check decided.
fn agree(h: &history::History, i: usize, seen: &mut [[usize; 2]; 6]) -> usize {
    let mut linear = 0;
    for (li, &l) in STRONG.iter().enumerate() {
        let want = oracle::satisfies(h, l).expect("strong level");
        let rep = check(h, l, &CheckOptions::default());
        assert_certified(&rep, "oracle_mini");
        assert_verdict(h, &rep, want, &format!("history {i}"));
        seen[li][usize::from(want)] += 1;
        linear += usize::from(rep.method == "mini-transaction");
    }
    linear
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

/// A run's final reads: a read-only transaction reading every key (more
/// than a mini-transaction's two) keeps the history on the linear check,
/// which still agrees with the oracle.
#[test]
fn a_read_only_transaction_of_every_key_keeps_the_linear_check_exact() {
    use history::{History, Op, Status, Txn};
    use rand::seq::IndexedRandom;

    let cfg = GenConfig {
        sessions: 2,
        keys: 3,
        mini: true,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x0152);
    let mut seen = [[0usize; 2]; 6];
    let mut linear = 0;
    for i in 0..2000 {
        let mut txns = random_history(&mut rng, &cfg).txns;
        // Every key written or read, with the values written to it.
        let mut keys: Vec<(history::Key, Vec<Option<i64>>)> = Vec::new();
        for t in &txns {
            for o in &t.ops {
                let (Op::Read { key, .. } | Op::Write { key, .. }) = o else {
                    continue;
                };
                let at = match keys.iter().position(|(k, _)| k == key) {
                    Some(at) => at,
                    None => {
                        keys.push((key.clone(), vec![None]));
                        keys.len() - 1
                    }
                };
                if let Op::Write { value, .. } = o {
                    keys[at].1.push(Some(*value));
                }
            }
        }
        if keys.len() < 3 {
            continue;
        }
        let ops = keys
            .iter()
            .map(|(key, values)| Op::Read {
                key: key.clone(),
                value: *values.choose(&mut rng).expect("the initial version"),
            })
            .collect();
        let id = txns.iter().map(|t| t.id).max().unwrap_or(0) + 1;
        txns.push(Txn::new(id, 7, Status::Ok, ops));
        linear += agree(&History::from_txns(txns), i, &mut seen);
    }
    assert_two_sided("", STRONG, &seen, 100);
    assert!(linear > 2000, "the linear check decided {linear} checks");
}
