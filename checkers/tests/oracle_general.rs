//! The general SER/SI checker against the brute-force oracle, at every
//! strong level, on many random small histories with blind writes, reads of
//! the initial state, several writes per key, and `fail` and `info`
//! transactions. Also: the mini-transaction method and the general one
//! agree on mini-transaction histories.

use checkers::exhaustive::registers as oracle;
use checkers::{check, CheckOptions};
use checkers_testkit::{
    assert_certified, assert_methods, assert_two_sided, assert_verdict, count_method,
    random_history, GenConfig, Methods, STRONG,
};
use history::{to_jsonl_string, History, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn agree(h: &History, i: usize, l: Level) -> bool {
    agree_with(h, i, l, &CheckOptions::default()).0
}

/// Whether the history satisfies `l` (the oracle and the checker agree),
/// and the method that decided.
fn agree_with(h: &History, i: usize, l: Level, opts: &CheckOptions) -> (bool, String) {
    let want = oracle::satisfies(h, l).expect("strong level");
    let rep = check(h, l, opts);
    assert_certified(&rep, "oracle_general");
    assert_verdict(h, &rep, want, &format!("history {i}"));
    if !want {
        assert!(
            // A note about levels left unplaced explains nothing.
            !rep.anomalies.is_empty() || rep.notes.iter().any(|n| !n.starts_with("not placed")),
            "an anomalous verdict needs a counterexample"
        );
    }
    (want, rep.method)
}

/// Checks 10k random histories (as generated, and with no times, as from
/// PolySI's text format) at every strong level against the oracle, and
/// counts the methods that decided: each of `expect` more than `min` times.
fn methods_at_every_level(seed: u64, opts: &CheckOptions, expect: &[&str], min: usize) {
    let cfg = GenConfig {
        keys: 2,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut methods = Methods::new();
    for i in 0..10_000 {
        let h = random_history(&mut rng, &cfg);
        let mut untimed = h.clone();
        for t in &mut untimed.txns {
            t.start = None;
            t.end = None;
        }
        for h in [&h, &untimed] {
            for &l in STRONG {
                let (ok, how) = agree_with(h, i, l, opts);
                count_method(&mut methods, &how, ok);
            }
        }
    }
    assert_methods(&methods, expect, min);
}

/// Every fast path of the black-box search forced on (the session
/// variant's witness, the layered and order-guided guesses, the solver
/// portfolio), at every strong level.
#[test]
fn fast_paths_forced_agree_with_the_oracle() {
    let opts = CheckOptions {
        force_fast_paths: true,
        ..CheckOptions::default()
    };
    let expect = [
        "witness of strong-session-si ok",
        "witness of strong-session-ser ok",
    ];
    methods_at_every_level(0xfa57, &opts, &expect, 20);
}

/// Pruning by vector clocks over the sessions (the witness skipped, so it
/// decides), at every strong level (`si` and `ser` with session order
/// assumed, and the result checked): the same verdicts as the oracle,
/// every one certified (contradictions by their derivation).
#[test]
fn pruning_by_clocks_agrees_with_the_oracle() {
    let opts = CheckOptions {
        skip_witness: true,
        ..CheckOptions::default()
    };
    let expect = ["pruning (clocks) ok", "pruning (clocks) anomalous"];
    methods_at_every_level(0xc10c, &opts, &expect, 100);
}

#[test]
fn general_checker_agrees_with_the_oracle() {
    let cfg = GenConfig {
        keys: 2,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x6e6e);
    let mut seen = [[0usize; 2]; 6];
    for i in 0..10_000 {
        let h = random_history(&mut rng, &cfg);
        for (li, &l) in STRONG.iter().enumerate() {
            seen[li][usize::from(agree(&h, i, l))] += 1;
        }
    }
    assert_two_sided("", STRONG, &seen, 500);
    let unchecked = checkers_testkit::unchecked_certificates();
    eprintln!("{unchecked} decided verdicts without a checked certificate");
}

#[test]
fn general_checker_agrees_on_wider_histories() {
    // Fewer, larger histories: more constraints per key.
    let cfg = GenConfig {
        max_txns: 6,
        max_ops: 5,
        p_wild: 0.05,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x7777);
    for i in 0..1_500 {
        let h = random_history(&mut rng, &cfg);
        for &l in &[Level::Si, Level::Ser, Level::Sser] {
            agree(&h, i, l);
        }
    }
}

/// The complete search alone (no witness, no time guidance, no local
/// search) against the oracle, so that pruning and the CDCL solver are
/// tested on their own, both ways.
#[test]
fn the_complete_search_alone_agrees_with_the_oracle() {
    complete_search_agrees(
        true,
        &[
            "pruning ok",
            "pruning anomalous",
            "solver ok",
            "known edges anomalous",
        ],
    );
}

/// Without pruning, every open choice goes to the CDCL solver.
#[test]
fn the_solver_alone_agrees_with_the_oracle() {
    complete_search_agrees(false, &["solver ok", "solver anomalous"]);
}

fn complete_search_agrees(prune: bool, expect: &[&str]) {
    let opts = checkers::general::GeneralOptions {
        skip_witness: true,
        local: false,
        prune,
        clocks: false,
        ..Default::default()
    };
    search_agrees(&opts, expect);
}

/// Without pruning by clocks (which now proves most of what it found at
/// si and ser), the local search around a witness cycle refutes; every
/// verdict agrees with the oracle.
#[test]
fn the_local_search_agrees_with_the_oracle() {
    let opts = checkers::general::GeneralOptions {
        clocks: false,
        ..Default::default()
    };
    search_agrees(&opts, &["local search anomalous", "witness ok"]);
}

/// `count` random histories of up to six transactions over two keys, the
/// same ones for each caller.
fn histories_of_six(count: usize) -> impl Iterator<Item = History> {
    let cfg = GenConfig {
        max_txns: 6,
        keys: 2,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    (0..count).map(move |_| random_history(&mut rng, &cfg))
}

fn search_agrees(opts: &checkers::general::GeneralOptions, expect: &[&str]) {
    use checkers::general::{check_general, General};
    use checkers::index::Index;
    use checkers::lattice::forbids;
    let mut methods = Methods::new();
    for (i, h) in histories_of_six(4000).enumerate() {
        let ix = Index::new(&h);
        for &l in &[Level::Si, Level::Ser, Level::StrongSessionSi, Level::Sser] {
            let want = oracle::satisfies(&h, l).expect("strong level");
            let non_cyclic = ix
                .findings
                .iter()
                .any(|f| forbids(l, f.kind, checkers::Scope::Item));
            let (got, how) = match check_general(&ix, l, opts) {
                General::Ok { how, .. } => (true, how),
                General::Forced { .. } => (false, "known edges"),
                General::Refuted { how, .. } => (false, how),
                General::Unknown(why) => panic!("history {i} at {l}: unknown: {why}"),
            };
            let got = got && !non_cyclic;
            assert_eq!(
                got,
                want,
                "history {i} at {l}: {how}\n{}",
                to_jsonl_string(&h)
            );
            if !non_cyclic {
                count_method(&mut methods, how, got);
            }
        }
    }
    assert_methods(&methods, expect, 10);
}

#[test]
fn the_generator_exercises_every_method() {
    let mut methods = Methods::new();
    for h in histories_of_six(3000) {
        for &l in &[Level::Si, Level::Ser] {
            let rep = check(&h, l, &CheckOptions::default());
            assert_certified(&rep, "oracle_general");
            *methods
                .entry(format!("{} {}", rep.method, rep.verdict))
                .or_default() += 1;
        }
    }
    let expect = [
        "witness ok",
        "known edges anomalous",
        "pruning (clocks, no session order) anomalous",
    ];
    assert_methods(&methods, &expect, 20);
}

/// A refuted window refutes the whole history: on random histories, every
/// window (a random set of committed transactions) the window check
/// refutes at si or ser is a history the oracle rejects, with the proof
/// renamed to the whole history's ids and certified against it.
#[test]
fn refuted_windows_are_refuted_histories() {
    use checkers::index::Index;
    use checkers::window::{refute_by_windows, refute_window, Ranks};
    use rand::seq::SliceRandom;
    use rand::RngExt;
    let cfg = GenConfig {
        max_txns: 8,
        keys: 2,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut refuted, mut proper) = (0usize, 0usize);
    let far = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    for i in 0..10_000 {
        let h = random_history(&mut rng, &cfg);
        let ix = Index::new(&h);
        if !ix.findings.is_empty() {
            continue;
        }
        let mut committed: Vec<u32> = ix.committed_txns().collect();
        for &l in &[Level::Si, Level::Ser] {
            committed.shuffle(&mut rng);
            let keep = rng.random_range(1..=committed.len().max(1));
            let window = &committed[..keep.min(committed.len())];
            let seed: Vec<u32> = window.iter().take(1).copied().collect();
            let whole = Ranks::new(&ix, |t| t);
            for got in [
                refute_window(&ix, l, window, &seed, far),
                refute_by_windows(&ix, l, &whole, &seed, far),
            ]
            .into_iter()
            .flatten()
            {
                assert!(
                    !oracle::satisfies(&h, l).expect("strong level"),
                    "history {i} at {l}: a window refuted a valid history\n{}",
                    to_jsonl_string(&h)
                );
                let checkers::general::General::Refuted { derivation, .. } = got else {
                    panic!("a window's verdict is a refutation");
                };
                let d = derivation.expect("a window's refutation has its derivation");
                let proof = checkers::certify::Refutation::Derivation(d);
                assert!(
                    checkers::certify::verify_each(&h, l, false, &[proof])[0].is_ok(),
                    "history {i} at {l}: the renamed proof does not check"
                );
                refuted += 1;
                proper += usize::from(window.len() < committed.len());
            }
        }
    }
    eprintln!("refuted {refuted}, of them by a proper window {proper}");
    assert!(
        refuted > 200 && proper > 20,
        "refuted {refuted}, proper {proper}"
    );
}
