//! Black-box checking at 100k transactions without timestamps: BlindW-RW
//! histories in PolySI's text format (`r(key,value,session,txn)`), laid
//! out session by session and numbered in that layout, so neither the
//! file's order nor the numbering says anything about commit order. The
//! histories are generated here from a seed, never stored.
//!
//! These are large (tens of seconds, gigabytes when the search fails), so
//! they are `#[ignore]`d: run them one at a time (each gets a 60 s limit,
//! which two at once on a loaded machine can miss) with
//! `cargo test -p checkers --release --test blackbox_large -- --ignored --test-threads 1`.

use std::time::Duration;

use checkers::{check, CheckOptions, Verdict};
use history::formats::{parse, Format};
use history::Level;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One operation of the generated run: (write?, key, value, session, txn).
type Line = (bool, u32, u64, u32, u32);

/// A serial BlindW-RW run: `txns` transactions from `sessions` sessions
/// taking turns at random, half reading 8 distinct keys, half writing 8
/// distinct keys with fresh values. Serial, so valid at every level.
fn blindw(seed: u64, txns: u32, sessions: u32, keys: u32) -> Vec<Vec<Line>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut current = vec![0u64; keys as usize];
    let mut next = 1u64;
    let mut out = Vec::with_capacity(txns as usize);
    for t in 1..=txns {
        let s = rng.random_range(0..sessions);
        let write = rng.random_bool(0.5);
        let mut ks: Vec<u32> = Vec::with_capacity(8);
        while ks.len() < 8 {
            let k = rng.random_range(0..keys);
            if !ks.contains(&k) {
                ks.push(k);
            }
        }
        let ops = ks
            .into_iter()
            .map(|k| {
                if write {
                    current[k as usize] = next;
                    next += 1;
                }
                (write, k, current[k as usize], s, t)
            })
            .collect();
        out.push(ops);
    }
    out
}

/// Makes one read stale: a read-only transaction that read one key from a
/// writer and another key the same writer overwrote is made to read that
/// key's initial value. It then both follows the writer (read-from) and
/// precedes it (it read what the writer overwrote): an SI anomaly under
/// every version order.
fn inject(txns: &mut [Vec<Line>]) {
    let mut writes_of: std::collections::HashMap<u64, (u32, Vec<u32>)> = Default::default();
    for ops in txns.iter() {
        if ops[0].0 {
            let keys: Vec<u32> = ops.iter().map(|o| o.1).collect();
            for o in ops {
                writes_of.insert(o.2, (o.4, keys.clone()));
            }
        }
    }
    let half = txns.len() / 2;
    for ops in txns[half..].iter_mut() {
        if ops[0].0 {
            continue;
        }
        let hit = ops.iter().enumerate().find_map(|(i, r)| {
            let (_, keys) = writes_of.get(&r.2)?;
            ops.iter()
                .position(|o| o.2 != 0 && keys.contains(&o.1) && o.1 != r.1)
                .filter(|&j| j != i)
        });
        if let Some(j) = hit {
            ops[j].2 = 0;
            return;
        }
    }
    panic!("no transaction to inject an anomaly into");
}

/// The run as text, session by session, numbered in that layout.
fn text(txns: &[Vec<Line>]) -> String {
    let mut by_session: Vec<&Vec<Line>> = txns.iter().collect();
    by_session.sort_by_key(|ops| ops[0].3);
    let mut s = String::new();
    for (n, ops) in by_session.into_iter().enumerate() {
        for &(w, k, v, sess, _) in ops {
            let op = if w { 'w' } else { 'r' };
            s.push_str(&format!("{op}({k},{v},{sess},{})\n", n + 1));
        }
    }
    s
}

/// Makes one read two versions stale, as `scripts/inject-stale-read.py`
/// does for the benchmark: in the second half, the first read-only
/// transaction whose read saw the latest of at least three writes of its
/// key reads the write two before instead. Nothing in that transaction
/// alone contradicts it; the anomaly is in how it sits among its
/// neighbours (and, ignoring sessions, takes a search to show).
fn inject_two_back(txns: &mut [Vec<Line>]) {
    let mut versions: std::collections::HashMap<u32, Vec<u64>> = Default::default();
    let half = txns.len() / 2;
    for (i, ops) in txns.iter_mut().enumerate() {
        if ops[0].0 {
            for o in ops.iter() {
                versions.entry(o.1).or_default().push(o.2);
            }
            continue;
        }
        if i < half {
            continue;
        }
        for o in ops.iter_mut() {
            let vs = versions.get(&o.1).map(Vec::as_slice).unwrap_or(&[]);
            if vs.len() >= 3 && vs.last() == Some(&o.2) {
                o.2 = vs[vs.len() - 3];
                return;
            }
        }
    }
    panic!("no read to make stale");
}

/// What the generated history carries.
#[derive(Clone, Copy)]
enum Injected {
    Nothing,
    /// A read of a key its writer's own writes had overwritten.
    Overwritten,
    /// A read two versions back.
    TwoBack,
    /// A last transaction of one session that reads a written key's
    /// initial value: fine for si (it may take the first snapshot), a
    /// session anomaly with session order.
    LateInitialRead,
}

fn verdict(kind: Injected, level: Level) -> Verdict {
    let mut txns = blindw(1, 100_000, 24, 2000);
    match kind {
        Injected::Nothing => {}
        Injected::Overwritten => inject(&mut txns),
        Injected::TwoBack => inject_two_back(&mut txns),
        Injected::LateInitialRead => {
            let key = txns.iter().find(|ops| ops[0].0).expect("a writer")[0].1;
            let t = txns.len() as u32 + 1;
            txns.push(vec![(false, key, 0, 3, t)]);
        }
    }
    let h = parse(text(&txns).as_bytes(), Format::Text, None).expect("text history");
    let opts = CheckOptions {
        timeout: Some(Duration::from_secs(60)),
        ..CheckOptions::default()
    };
    let rep = check(&h, level, &opts);
    checkers_testkit::assert_certified(&rep, "blackbox_large");
    rep.verdict
}

#[test]
#[ignore]
fn a_valid_100k_text_history_satisfies_si() {
    assert_eq!(verdict(Injected::Nothing, Level::Si), Verdict::Ok);
}

#[test]
#[ignore]
fn a_valid_100k_text_history_satisfies_strong_session_si() {
    assert_eq!(
        verdict(Injected::Nothing, Level::StrongSessionSi),
        Verdict::Ok
    );
}

#[test]
#[ignore]
fn an_injected_stale_read_in_100k_fails_si() {
    assert_eq!(
        verdict(Injected::Overwritten, Level::Si),
        Verdict::Anomalous
    );
}

#[test]
#[ignore]
fn an_injected_stale_read_in_100k_fails_strong_session_si() {
    assert_eq!(
        verdict(Injected::Overwritten, Level::StrongSessionSi),
        Verdict::Anomalous
    );
}

#[test]
#[ignore]
fn a_read_two_versions_stale_in_100k_fails_si() {
    assert_eq!(verdict(Injected::TwoBack, Level::Si), Verdict::Anomalous);
}

#[test]
#[ignore]
fn a_read_two_versions_stale_in_100k_fails_ser() {
    assert_eq!(verdict(Injected::TwoBack, Level::Ser), Verdict::Anomalous);
}

#[test]
#[ignore]
fn a_late_read_of_an_initial_value_in_100k_satisfies_si() {
    assert_eq!(verdict(Injected::LateInitialRead, Level::Si), Verdict::Ok);
}

#[test]
#[ignore]
fn a_late_read_of_an_initial_value_in_100k_fails_strong_session_si() {
    assert_eq!(
        verdict(Injected::LateInitialRead, Level::StrongSessionSi),
        Verdict::Anomalous
    );
}
