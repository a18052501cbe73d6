//! The weak-level checks (rc, ra, cc) on large valid histories: 10^5 and
//! 10^6 operations. A valid history is the full cost of a check (no early
//! exit), so that is what is measured.
//!
//! The histories simulate sessions over one commit log: each transaction
//! reads a snapshot that is a random, lagging prefix of the log (never
//! behind what its session already saw or wrote) and commits at the end
//! of it. Every such history is prefix consistent, hence causal, read
//! atomic and read committed.
//!
//! Run: `cargo bench -p checkers --bench weak`.

use std::hint::black_box;

use checkers::index::Index;
use checkers::weak::{check_weak, WeakVerdict};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use history::{History, Key, Level, Op, Status, Txn};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A valid history of about `ops` operations.
fn lagging_prefix_history(ops: usize, sessions: usize, keys: usize, seed: u64) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Per key: (log position, value) of every committed version.
    let mut versions: Vec<Vec<(u32, i64)>> = vec![Vec::new(); keys];
    let mut seen = vec![0u32; sessions]; // log prefix each session has seen
    let mut head = 0u32;
    let mut next_value = 1i64;
    let mut txns = Vec::new();
    let mut total = 0;
    while total < ops {
        let s = rng.random_range(0..sessions);
        let lag = rng.random_range(0..=64u32);
        let snap = head.saturating_sub(lag).max(seen[s]);
        let n = rng.random_range(2..=8usize);
        let mut own: Vec<(usize, i64)> = Vec::new();
        let mut written: Vec<(usize, i64)> = Vec::new();
        let mut t_ops = Vec::with_capacity(n);
        for _ in 0..n {
            let k = rng.random_range(0..keys);
            if rng.random_bool(0.6) {
                let value = match own.iter().find(|(kk, _)| *kk == k) {
                    Some(&(_, v)) => Some(v),
                    None => {
                        let vs = &versions[k];
                        let i = vs.partition_point(|&(p, _)| p < snap);
                        (i > 0).then(|| vs[i - 1].1)
                    }
                };
                t_ops.push(Op::Read {
                    key: Key::Int(k as i64),
                    value,
                });
            } else {
                let v = next_value;
                next_value += 1;
                own.retain(|(kk, _)| *kk != k);
                own.push((k, v));
                written.retain(|(kk, _)| *kk != k);
                written.push((k, v));
                t_ops.push(Op::Write {
                    key: Key::Int(k as i64),
                    value: v,
                });
            }
        }
        total += t_ops.len();
        for (k, v) in written {
            versions[k].push((head, v));
        }
        txns.push(Txn::new(txns.len() as u64, s as u64, Status::Ok, t_ops));
        head += 1;
        seen[s] = head;
    }
    History::from_txns(txns)
}

fn weak(c: &mut Criterion) {
    let mut group = c.benchmark_group("weak");
    group.sample_size(10);
    for (ops, sessions) in [(100_000usize, 16usize), (1_000_000, 16), (1_000_000, 64)] {
        let h = lagging_prefix_history(ops, sessions, ops / 10, 7);
        let ix = Index::new(&h);
        let label = format!("{ops}ops-{sessions}s");
        group.throughput(Throughput::Elements(ix.ops as u64));
        group.bench_function(BenchmarkId::new("index", &label), |b| {
            b.iter(|| black_box(Index::new(&h).ops))
        });
        for level in [Level::Rc, Level::Ra, Level::Cc] {
            let out = check_weak(&ix, level, true);
            assert_eq!(out.verdict, WeakVerdict::Ok, "{level}: {:?}", out.anomalies);
            group.bench_function(BenchmarkId::new(level.name(), &label), |b| {
                b.iter(|| black_box(check_weak(&ix, level, true).verdict))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, weak);
criterion_main!(benches);
