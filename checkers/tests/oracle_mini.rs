//! The mini-transaction checks against the brute-force oracle, on thousands
//! of random small histories with anomalies, `fail` and `info` transactions.

use checkers::testgen::{random_history, GenConfig};
use checkers::{check, oracle, CheckOptions, Verdict};
use history::{to_jsonl_string, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const LEVELS: [Level; 6] = [
    Level::Si,
    Level::StrongSessionSi,
    Level::StrongSi,
    Level::Ser,
    Level::StrongSessionSer,
    Level::Sser,
];

#[test]
fn mini_checks_agree_with_the_oracle() {
    let cfg = GenConfig {
        max_txns: 5,
        sessions: 2,
        keys: 2,
        mini: true,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x0150);
    let mut seen = [[0usize; 2]; 6];
    for i in 0..3000 {
        let h = random_history(&mut rng, &cfg);
        for (li, &l) in LEVELS.iter().enumerate() {
            let want = oracle::satisfies(&h, l).expect("strong level");
            let rep = check(&h, l, &CheckOptions::default());
            let got = match rep.verdict {
                Verdict::Ok => true,
                Verdict::Anomalous => false,
                Verdict::Unknown => panic!(
                    "history {i}: unknown at {l}: {:?}\n{}",
                    rep.notes,
                    to_jsonl_string(&h)
                ),
            };
            assert_eq!(
                got,
                want,
                "history {i} at {l}: checker says {}, oracle says {}\n{}\n{}",
                rep.verdict,
                want,
                to_jsonl_string(&h),
                rep.anomalies
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<String>()
            );
            seen[li][usize::from(want)] += 1;
        }
    }
    // The generator must exercise both answers at every level.
    for (li, s) in seen.iter().enumerate() {
        eprintln!("{}: {} anomalous, {} ok", LEVELS[li], s[0], s[1]);
        assert!(s[0] > 100 && s[1] > 100, "{}: {s:?}", LEVELS[li]);
    }
}
