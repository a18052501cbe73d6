//! A range read whose low bound is above its high bound (`rq(2,1,[])`, as
//! SQL's `BETWEEN 2 AND 1` gives) is an empty range: it reads nothing, at
//! every level, in the checker, its certificate checker and the oracle
//! alike. It used to panic ("range start is greater than range end").

use checkers::exhaustive::registers as oracle;
use checkers::{check, Certified, CheckOptions, Verdict};
use checkers_testkit::build::{jsonl, rq};
use checkers_testkit::{assert_certified, assert_verdict, random_history, GenConfig};
use history::{to_jsonl_string, History, Level, Op};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The history without its inverted range reads, which read nothing, and
/// with its range reads of one key `k..=k` as plain reads of `k`.
fn without_inverted(h: &History) -> History {
    let mut out = h.clone();
    for t in &mut out.txns {
        t.ops
            .retain(|o| !matches!(o, Op::RangeRead { lo, hi, .. } if lo > hi));
        for o in &mut t.ops {
            if let Op::RangeRead { lo, hi, rows } = o {
                if lo == hi && rows.len() <= 1 && rows.iter().all(|(k, _)| k == lo) {
                    *o = Op::Read {
                        key: lo.clone(),
                        value: rows.first().map(|(_, v)| *v),
                    };
                }
            }
        }
    }
    out
}

/// A read of `k` as a range read of `k..=k`.
fn as_range(op: &Op) -> Op {
    match op {
        Op::Read { key, value } => Op::RangeRead {
            lo: key.clone(),
            hi: key.clone(),
            rows: Box::new(value.iter().map(|v| (key.clone(), *v)).collect()),
        },
        other => other.clone(),
    }
}

/// The checker's verdict at `l`, which must agree with the oracle's and
/// with the verdict on the history without its inverted range reads, with
/// a certificate that holds.
fn verdict(h: &History, l: Level, what: &str) -> bool {
    let rep = check(h, l, &CheckOptions::default());
    assert_certified(&rep, what);
    let want = oracle::satisfies(h, l).expect("a level the oracle decides");
    let plain = without_inverted(h);
    let want_plain = oracle::satisfies(&plain, l).expect("a level the oracle decides");
    assert_eq!(
        want,
        want_plain,
        "{what} at {l}: the oracle sees the inverted range reads\n{}",
        to_jsonl_string(h)
    );
    let got = assert_verdict(h, &rep, want, what);
    let rep_plain = check(&plain, l, &CheckOptions::default());
    assert_eq!(
        rep_plain.verdict,
        rep.verdict,
        "{what} at {l}: the inverted range reads change the verdict\n{}",
        to_jsonl_string(h)
    );
    got
}

#[test]
fn an_inverted_range_read_is_empty_at_every_level() {
    let cases = [
        // The audit's case: the only range read is inverted.
        concat!(
            r#"{"id":1,"session":0,"status":"ok","ops":[["w",1,10],["w",2,20]]}"#,
            "\n",
            r#"{"id":2,"session":1,"status":"ok","ops":[["rq",2,1,[]],["r",1,10]]}"#,
        ),
        // Inverted over keys that are written, before and after the
        // transaction's own write of one of them; string keys too.
        concat!(
            r#"{"id":1,"session":0,"status":"ok","ops":[["w",1,10],["w","b",20]]}"#,
            "\n",
            r#"{"id":2,"session":1,"status":"ok","ops":[["rq",3,0,[]],["w",2,5],["rq",9,1,[]],["rq","c","a",[]],["r",1,10]]}"#,
            "\n",
            r#"{"id":3,"session":1,"status":"ok","ops":[["rq",2,2,[[2,5]]],["rq",5,-5,[]]]}"#,
        ),
        // Only inverted range reads, in a read-only transaction.
        r#"{"id":1,"session":0,"status":"ok","ops":[["rq",1,0,[]]]}"#,
    ];
    for (i, text) in cases.iter().enumerate() {
        let h = jsonl(text);
        for l in Level::ALL {
            let rep = check(&h, l, &CheckOptions::default());
            assert_eq!(rep.verdict, Verdict::Ok, "case {i} at {l}: {rep:?}");
            assert!(
                matches!(rep.certified, Certified::Checked),
                "case {i} at {l}: certificate {:?}",
                rep.certified
            );
            assert!(verdict(&h, l, &format!("case {i}")));
        }
    }
}

#[test]
fn an_inverted_range_read_beside_a_real_anomaly() {
    // An aborted read: forbidden at every level.
    let aborted = jsonl(concat!(
        r#"{"id":1,"session":0,"status":"fail","ops":[["w",1,10]]}"#,
        "\n",
        r#"{"id":2,"session":1,"status":"ok","ops":[["rq",2,1,[]],["r",1,10],["rq",5,3,[]]]}"#,
    ));
    for l in Level::ALL {
        let rep = check(&aborted, l, &CheckOptions::default());
        assert_eq!(rep.verdict, Verdict::Anomalous, "aborted read at {l}");
        assert!(!rep.anomalies.is_empty(), "aborted read at {l}");
        assert!(!verdict(&aborted, l, "aborted read"));
    }
    // A lost update (forbidden from si up) and write skew (from ser up),
    // with inverted range reads in every transaction.
    let lost = jsonl(concat!(
        r#"{"id":0,"session":0,"status":"ok","ops":[["w",1,1],["w",2,1]]}"#,
        "\n",
        r#"{"id":1,"session":1,"status":"ok","ops":[["rq",2,1,[]],["r",1,1],["w",1,2]]}"#,
        "\n",
        r#"{"id":2,"session":2,"status":"ok","ops":[["r",1,1],["rq",9,0,[]],["w",1,3]]}"#,
    ));
    let skew = jsonl(concat!(
        r#"{"id":0,"session":0,"status":"ok","ops":[["w",1,1],["w",2,1]]}"#,
        "\n",
        r#"{"id":1,"session":1,"status":"ok","ops":[["r",1,1],["r",2,1],["rq",2,1,[]],["w",1,2]]}"#,
        "\n",
        r#"{"id":2,"session":2,"status":"ok","ops":[["rq",2,1,[]],["r",1,1],["r",2,1],["w",2,2]]}"#,
    ));
    for l in Level::ALL {
        let weak = matches!(l, Level::Rc | Level::Ra | Level::Cc | Level::Pc);
        let serializable = matches!(l, Level::Ser | Level::StrongSessionSer | Level::Sser);
        assert_eq!(verdict(&lost, l, "lost update"), weak, "lost update at {l}");
        assert_eq!(
            verdict(&skew, l, "write skew"),
            !serializable,
            "write skew at {l}"
        );
    }
}

#[test]
fn random_histories_with_inverted_range_reads() {
    let cfg = GenConfig {
        max_txns: 5,
        per_read_stale: 0.2,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x1a7e);
    for i in 0..1000 {
        let mut h = random_history(&mut rng, &cfg);
        for t in &mut h.txns {
            // Some reads of absent keys as range reads of that key alone,
            // which read the same (not after the transaction's own write).
            for i in 0..t.ops.len() {
                let own = t.ops[..i]
                    .iter()
                    .any(|p| p.written().map(|(k, _)| k) == t.ops[i].key());
                let absent = matches!(t.ops[i], Op::Read { value: None, .. });
                if absent && !own && rng.random_bool(0.5) {
                    t.ops[i] = as_range(&t.ops[i]);
                }
            }
            if rng.random_bool(0.5) {
                let at = rng.random_range(0..=t.ops.len());
                let lo = rng.random_range(0..cfg.keys + 1);
                let hi = lo - rng.random_range(1..=cfg.keys + 1);
                t.ops.insert(at, rq(lo, hi, &[]));
            }
        }
        for l in Level::ALL {
            verdict(&h, l, &format!("history {i}"));
        }
    }
}
