//! Plans per second for each workload and variant (every name in
//! `WORKLOADS`, `tpcc` included): the generators must never be what limits
//! a run (target: well over 100k plans/s each). Also the rows per second of
//! TPC-C's initial population.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use workloads::{build, variants, WorkloadConfig, WORKLOADS};

/// Plans generated per measured iteration.
const BATCH: u64 = 1_000;

fn generate(c: &mut Criterion) {
    let mut group = c.benchmark_group("generate");
    group.throughput(Throughput::Elements(BATCH));
    for name in WORKLOADS {
        let base = WorkloadConfig::for_workload(name).unwrap();
        // The default is the first variant, so only variant-less workloads
        // are measured under their bare name.
        let vs = variants(name).unwrap();
        let mut configs = Vec::new();
        if vs.is_empty() {
            configs.push((String::from(*name), base.clone()));
        }
        for v in vs {
            configs.push((
                format!("{name}-{v}"),
                WorkloadConfig {
                    variant: Some(v.to_string()),
                    ..base.clone()
                },
            ));
        }
        for (label, cfg) in configs {
            let w = build(name, &cfg).unwrap();
            let mut client = w.client(1);
            group.bench_function(label, |b| {
                b.iter(|| {
                    for _ in 0..BATCH {
                        black_box(client.next_plan());
                    }
                })
            });
        }
    }
    group.finish();

    // TPC-C's initial population (the prelude), rows per second, at the
    // default scale: it is generated once per run, before the clients.
    let mut load = c.benchmark_group("prelude");
    let tpcc = build("tpcc", &WorkloadConfig::for_workload("tpcc").unwrap()).unwrap();
    let rows = match tpcc.prelude().map(|p| p.steps) {
        Some(steps) => match steps.as_slice() {
            [workloads::Step::Tpcc(t)] => match &**t {
                workloads::tpcc::TpccTxn::Load(rows) => rows.len() as u64,
                _ => 0,
            },
            _ => 0,
        },
        None => 0,
    };
    load.throughput(Throughput::Elements(rows));
    load.bench_function("tpcc-load", |b| b.iter(|| black_box(tpcc.prelude())));
    load.finish();
}

criterion_group!(benches, generate);
criterion_main!(benches);
