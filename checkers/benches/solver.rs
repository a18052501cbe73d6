//! Measures the two ways of solving what pruning leaves: CDCL with an
//! acyclicity theory (checking every partial assignment) against lazy cycle
//! clauses (one per round on full assignments). Pruning and every cheap
//! guess are off, so all the work is the solver's.
//! `cargo bench -p checkers --bench solver`.

use checkers::general::{check_general, General, GeneralOptions};
use checkers::index::Index;
use checkers::solve::Strategy;
use checkers_testkit::{random_history, GenConfig};
use criterion::{criterion_group, criterion_main, Criterion};
use history::{History, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn histories(n: usize, txns: usize) -> Vec<History> {
    let cfg = GenConfig {
        max_txns: txns,
        sessions: 8,
        keys: (txns / 6).max(4) as i64,
        p_wild: 0.02,
        max_stale: 3,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    (0..n).map(|_| random_history(&mut rng, &cfg)).collect()
}

fn solve_all(hs: &[History], level: Level, strategy: Strategy) -> usize {
    let opts = GeneralOptions {
        skip_witness: true,
        local: false,
        prune: false,
        strategy,
        ..GeneralOptions::default()
    };
    hs.iter()
        .filter(|h| {
            matches!(
                check_general(&Index::new(h), level, &opts),
                General::Ok { .. }
            )
        })
        .count()
}

fn bench(c: &mut Criterion) {
    for (name, hs) in [("small", histories(200, 24)), ("large", histories(10, 300))] {
        for level in [Level::Ser, Level::Si] {
            // Both strategies must agree before their speed is compared.
            assert_eq!(
                solve_all(&hs, level, Strategy::Theory),
                solve_all(&hs, level, Strategy::Lazy)
            );
            let mut g = c.benchmark_group(format!("solver-{name}-{level}"));
            g.sample_size(10);
            g.bench_function("theory", |b| {
                b.iter(|| solve_all(&hs, level, Strategy::Theory))
            });
            g.bench_function("lazy", |b| b.iter(|| solve_all(&hs, level, Strategy::Lazy)));
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
