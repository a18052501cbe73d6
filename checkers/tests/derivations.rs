//! Pruning contradictions written down as derivations: on random histories
//! decided by the complete search alone (no witness, no local search), every
//! derivation the checker writes must convince the independent certificate
//! checker, and agree with the brute-force oracle.

use checkers::certify::{verify, Certificate, Claim, Refutation};
use checkers::exhaustive::registers as oracle;
use checkers::general::{check_general, General, GeneralOptions};
use checkers::index::Index;
use checkers_testkit::{random_history, GenConfig, STRONG};
use history::to_jsonl_string;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn every_derivation_verifies() {
    let cfg = GenConfig {
        max_txns: 8,
        p_wild: 0.0,
        ..GenConfig::default()
    };
    let opts = GeneralOptions {
        skip_witness: true,
        local: false,
        prove: true,
        ..GeneralOptions::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0xde71);
    let mut checked = [0usize; 6];
    for i in 0..4_000 {
        let h = random_history(&mut rng, &cfg);
        let ix = Index::new(&h);
        if !ix.findings.is_empty() {
            continue;
        }
        for (li, &l) in STRONG.iter().enumerate() {
            let General::Refuted {
                derivation: Some(d),
                ..
            } = check_general(&ix, l, &opts)
            else {
                continue;
            };
            assert_eq!(
                oracle::satisfies(&h, l),
                Some(false),
                "history {i} at {l}: refuted but the oracle accepts it\n{}",
                to_jsonl_string(&h)
            );
            let cert = Certificate {
                level: l,
                use_dbts: false,
                claim: Claim::Anomalous(vec![Refutation::Derivation(d.clone())]),
            };
            if let Err(e) = verify(&h, &cert) {
                panic!(
                    "history {i} at {l}: the derivation does not hold: {e}\n{}\n{d:#?}",
                    to_jsonl_string(&h)
                );
            }
            checked[li] += 1;
        }
    }
    for (li, n) in checked.iter().enumerate() {
        eprintln!("{}: {n} derivations verified", STRONG[li]);
        assert!(*n > 20, "{}: too few derivations ({n})", STRONG[li]);
    }
}
