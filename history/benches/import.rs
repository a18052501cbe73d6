//! Import speed: a ~5 MB history of each format, parsed from memory.
//! `cargo bench -p history --bench import`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use history::formats::{self, cobra, Format};

fn target_bytes() -> usize {
    5_000_000
}

fn check(c: &mut Criterion, name: &str, bytes: usize, f: impl Fn() -> usize) {
    assert!(f() > 0, "{name}: no transactions");
    let mut g = c.benchmark_group("import");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function(name, |b| b.iter(&f));
    g.finish();
}

fn text_is_fast(c: &mut Criterion) {
    let mut s = String::new();
    let (mut txn, mut v) = (0u64, 0i64);
    while s.len() < target_bytes() {
        for i in 0..8 {
            v += 1;
            let op = if i % 2 == 0 { 'r' } else { 'w' };
            s.push_str(&format!("{op}({},{v},{},{txn})\n", v % 1000, txn % 50));
        }
        txn += 1;
    }
    check(c, "text", s.len(), || {
        formats::parse(s.as_bytes(), Format::Text, None)
            .unwrap()
            .txns
            .len()
    });
}

fn elle_edn_and_json_are_fast(c: &mut Criterion) {
    let mut edn = String::new();
    let mut json = String::from("[");
    let mut i = 0u64;
    while edn.len() < target_bytes() {
        let p = i % 30;
        let k = i % 500;
        edn.push_str(&format!("{{:index {}, :time {}, :type :invoke, :process {p}, :f :txn, :value [[:append {k} {i}] [:r {} nil]]}}\n", 2 * i, 10 * i, k + 1));
        edn.push_str(&format!("{{:index {}, :time {}, :type :ok, :process {p}, :f :txn, :value [[:append {k} {i}] [:r {} [1 2 3 4 5 6]]]}}\n", 2 * i + 1, 10 * i + 5, k + 1));
        json.push_str(&format!("{{\"index\":{},\"time\":{},\"type\":\"invoke\",\"process\":{p},\"f\":\"txn\",\"value\":[[\"append\",{k},{i}],[\"r\",{},null]]}},\n", 2 * i, 10 * i, k + 1));
        json.push_str(&format!("{{\"index\":{},\"time\":{},\"type\":\"ok\",\"process\":{p},\"f\":\"txn\",\"value\":[[\"append\",{k},{i}],[\"r\",{},[1,2,3,4,5,6]]]}},\n", 2 * i + 1, 10 * i + 5, k + 1));
        i += 1;
    }
    json.pop();
    json.pop();
    json.push(']');
    check(c, "elle-edn", edn.len(), || {
        formats::parse(edn.as_bytes(), Format::ElleEdn, None)
            .unwrap()
            .txns
            .len()
    });
    check(c, "elle-json", json.len(), || {
        formats::parse(json.as_bytes(), Format::ElleJson, None)
            .unwrap()
            .txns
            .len()
    });
}

fn binary_formats_are_fast(c: &mut Criterion) {
    // dbcop: 18 bytes an event.
    let mut b = Vec::new();
    let u = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    for v in [0, 10, 100, 1, 1] {
        u(&mut b, v);
    }
    for _ in 0..3 {
        u(&mut b, 1);
        b.push(b'x');
    }
    let per_session = target_bytes() / 10 / (8 + 8 * 18 + 1 + 8);
    u(&mut b, 10);
    let mut v = 0;
    for _ in 0..10 {
        u(&mut b, per_session as u64);
        for _ in 0..per_session {
            u(&mut b, 8);
            for e in 0..8u64 {
                v += 1;
                b.push((e % 2) as u8);
                u(&mut b, v % 1000);
                u(&mut b, v);
                b.push(1);
            }
            b.push(1);
        }
    }
    check(c, "dbcop", b.len(), || {
        formats::parse(&b, Format::Dbcop, None).unwrap().txns.len()
    });
    // Cobra: one log of 25- and 33-byte records.
    let mut log = Vec::new();
    let mut txn = 0i64;
    while log.len() < target_bytes() {
        log.push(b'S');
        log.extend_from_slice(&txn.to_be_bytes());
        for j in 0..4i64 {
            log.push(b'W');
            for f in [txn * 8 + j, j, 7] {
                log.extend_from_slice(&f.to_be_bytes());
            }
            log.push(b'R');
            for f in [txn - 1, (txn - 1) * 8 + j, j, 7] {
                log.extend_from_slice(&f.to_be_bytes());
            }
        }
        log.push(b'C');
        log.extend_from_slice(&txn.to_be_bytes());
        txn += 1;
    }
    check(c, "cobra", log.len(), || {
        cobra::parse_logs(&[(0, &log)], None).unwrap().txns.len()
    });
}

fn timekiller_is_fast(c: &mut Criterion) {
    let mut s = String::from("[");
    let mut i = 0u64;
    while s.len() < target_bytes() {
        if i > 0 {
            s.push_str(",\n");
        }
        s.push_str(&format!(
            "{{\"tid\": {i}, \"sid\": {}, \"sts\": {{\"p\": \"{}\", \"l\": 0}}, \"cts\": {{\"p\": \"{}\", \"l\": 1}}, \"ops\": [",
            i % 50,
            1000 + i,
            1001 + i
        ));
        for j in 0..8u64 {
            if j > 0 {
                s.push_str(", ");
            }
            let t = if j % 2 == 0 { "r" } else { "w" };
            s.push_str(&format!(
                "{{\"t\": \"{t}\", \"k\": {}, \"v\": {}}}",
                (i + j) % 1000,
                i * 8 + j
            ));
        }
        s.push_str("]}");
        i += 1;
    }
    s.push(']');
    check(c, "timekiller", s.len(), || {
        formats::parse(s.as_bytes(), Format::Timekiller, None)
            .unwrap()
            .txns
            .len()
    });
}

criterion_group!(
    benches,
    text_is_fast,
    elle_edn_and_json_are_fast,
    binary_formats_are_fast,
    timekiller_is_fast
);
criterion_main!(benches);
