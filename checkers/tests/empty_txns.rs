//! Committed transactions with no operations are valid at every level, and
//! every witness lists each of them once: at `pc`, two empty transactions in
//! one session used to leave the second out of the commit order ("T1 is
//! missing from the witness", a certificate failure).

use checkers::exhaustive::registers as oracle;
use checkers::{check, Certified, CheckOptions, Verdict};
use checkers_testkit::{assert_certified, random_history, GenConfig};
use history::{read_jsonl_str, to_jsonl_string, History, Level, Status};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn h(lines: &[&str]) -> History {
    read_jsonl_str(&lines.join("\n")).unwrap()
}

/// Ok at every level, with a certificate that was checked, as the oracle
/// says.
fn ok_everywhere(h: &History, what: &str) {
    for l in Level::ALL {
        let rep = check(h, l, &CheckOptions::default());
        assert!(
            rep.verdict == Verdict::Ok && matches!(rep.certified, Certified::Checked),
            "{what} at {l}: {} ({}), certificate {:?}\n{}",
            rep.verdict,
            rep.method,
            rep.certified,
            to_jsonl_string(h)
        );
        assert_eq!(oracle::satisfies(h, l), Some(true), "{what} at {l}");
    }
}

#[test]
fn empty_transactions_are_ok_and_certified_at_every_level() {
    let e = |id: u64, s: u64| format!(r#"{{"id":{id},"session":{s},"status":"ok","ops":[]}}"#);
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("one empty transaction", vec![e(1, 0)]),
        (
            "two empty transactions in one session",
            vec![e(1, 0), e(2, 0)],
        ),
        (
            "three empty transactions in one session",
            vec![e(1, 0), e(2, 0), e(3, 0)],
        ),
        (
            "empty transactions in several sessions",
            vec![e(1, 0), e(2, 1), e(3, 0), e(4, 2), e(5, 1)],
        ),
        (
            "empty ones around a writer and a reader",
            vec![
                e(1, 0),
                e(2, 0),
                r#"{"id":3,"session":0,"status":"ok","ops":[["w",1,1]]}"#.into(),
                e(4, 0),
                e(5, 1),
                r#"{"id":6,"session":1,"status":"ok","ops":[["r",1,1]]}"#.into(),
                e(7, 1),
                e(8, 1),
            ],
        ),
        (
            "empty, read-only, write-only and read-write, in three sessions",
            vec![
                e(1, 2),
                r#"{"id":2,"session":0,"status":"ok","ops":[["r",1,null],["w",1,1]]}"#.into(),
                e(3, 0),
                r#"{"id":4,"session":1,"status":"ok","ops":[["r",1,1]]}"#.into(),
                e(5, 1),
                r#"{"id":6,"session":2,"status":"ok","ops":[["w",2,1]]}"#.into(),
                e(7, 2),
                r#"{"id":8,"session":1,"status":"ok","ops":[["r",2,1],["r",1,1]]}"#.into(),
                r#"{"id":9,"session":0,"status":"fail","ops":[]}"#.into(),
                e(10, 0),
            ],
        ),
        (
            "empty transactions beside empty failed and unknown ones",
            vec![
                e(1, 0),
                r#"{"id":2,"session":1,"status":"fail","ops":[]}"#.into(),
                r#"{"id":3,"session":2,"status":"info","ops":[]}"#.into(),
                e(4, 0),
            ],
        ),
    ];
    for (what, lines) in cases {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        ok_everywhere(&h(&lines), what);
    }
}

#[test]
fn an_anomaly_beside_empty_transactions_is_still_found() {
    // A fractured read (forbidden from ra up; rc allows it when the read of
    // the older version comes first), between empty transactions.
    let h = h(&[
        r#"{"id":1,"session":0,"status":"ok","ops":[]}"#,
        r#"{"id":2,"session":0,"status":"ok","ops":[["w",1,1],["w",2,1]]}"#,
        r#"{"id":3,"session":0,"status":"ok","ops":[]}"#,
        r#"{"id":4,"session":1,"status":"ok","ops":[]}"#,
        r#"{"id":5,"session":1,"status":"ok","ops":[["r",2,null],["r",1,1]]}"#,
        r#"{"id":6,"session":1,"status":"ok","ops":[]}"#,
    ]);
    for l in Level::ALL {
        let rep = check(&h, l, &CheckOptions::default());
        assert_certified(&rep, "fractured read");
        let want = l != Level::Rc;
        assert_eq!(oracle::satisfies(&h, l), Some(!want), "at {l}");
        assert_eq!(rep.verdict == Verdict::Anomalous, want, "at {l}");
    }
}

/// Random small histories with some transactions emptied: the verdict is
/// the oracle's at every level, and every certificate holds.
#[test]
fn random_histories_with_empty_transactions_agree_with_the_oracle() {
    let configs = [
        GenConfig::default(),
        GenConfig {
            max_txns: 6,
            sessions: 2,
            per_read_stale: 0.2,
            session_floor: 0.5,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns: 6,
            sessions: 1,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns: 6,
            mini: true,
            ..GenConfig::default()
        },
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(0xe3b7);
    let mut empty_ok = 0;
    for (c, cfg) in configs.iter().enumerate() {
        for i in 0..400 {
            let mut h = random_history(&mut rng, cfg);
            for t in &mut h.txns {
                if rng.random_bool(0.4) {
                    t.ops.clear();
                }
            }
            empty_ok += h
                .txns
                .iter()
                .filter(|t| t.ops.is_empty() && t.status == Status::Ok)
                .count();
            for l in Level::ALL {
                let what = format!("config {c} history {i} at {l}");
                let rep = check(&h, l, &CheckOptions::default());
                assert_certified(&rep, &what);
                let want = oracle::satisfies(&h, l).expect("every level");
                let got = match rep.verdict {
                    Verdict::Ok => true,
                    Verdict::Anomalous => false,
                    Verdict::Unknown => panic!("{what}: unknown\n{}", to_jsonl_string(&h)),
                };
                assert_eq!(
                    got,
                    want,
                    "{what}: checker {} ({}), oracle {want}\n{}",
                    rep.verdict,
                    rep.method,
                    to_jsonl_string(&h)
                );
            }
        }
    }
    assert!(empty_ok > 500, "only {empty_ok} empty ok transactions");
}
