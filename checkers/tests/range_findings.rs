//! Non-cyclic anomalies found on a range read (a listed row, or a key in
//! range that is not listed and so was read as absent) are certified like
//! those of plain reads: the certificate checker re-derives each from the
//! history. Every kind the index reports on a range read, at all ten
//! levels; then random range histories, against the oracle.

use checkers::certify::{Claim, Refutation};
use checkers::exhaustive::registers as oracle;
use checkers::{check, AnomalyKind, Certified, CheckOptions, Verdict};
use checkers_testkit::build::jsonl_txns;
use checkers_testkit::{
    as_range_reads, assert_certified_on, assert_two_sided, assert_verdict, random_history,
    GenConfig, RangeStep,
};
use history::{History, Level, Op};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One history per finding kind, the finding on a range read.
fn cases() -> Vec<(AnomalyKind, &'static str, History)> {
    use AnomalyKind::*;
    vec![
        (
            NotMyOwnWrite,
            "its own write of a key in range is not listed",
            jsonl_txns(&[r#""status":"ok","ops":[["w",1,5],["rq",1,1,[]]]"#]),
        ),
        (
            NotMyOwnWrite,
            "a key in range lists another's value after its own write",
            jsonl_txns(&[
                r#""status":"ok","ops":[["w",1,4]]"#,
                r#""status":"ok","ops":[["w",1,5],["rq",0,2,[[1,4]]]]"#,
            ]),
        ),
        (
            NotMyLastWrite,
            "a key in range lists its own earlier write",
            jsonl_txns(&[r#""status":"ok","ops":[["w",1,5],["w",1,6],["rq",1,2,[[1,5]]]]"#]),
        ),
        (
            FutureRead,
            "a row shows its own later write",
            jsonl_txns(&[r#""status":"ok","ops":[["rq",1,2,[[2,7]]],["w",2,7]]"#]),
        ),
        (
            FutureRead,
            "a row shows its own later write of a key it wrote before",
            jsonl_txns(&[r#""status":"ok","ops":[["w",2,6],["rq",1,2,[[2,7]]],["w",2,7]]"#]),
        ),
        (
            IntermediateRead,
            "a row shows a value its writer overwrote",
            jsonl_txns(&[
                r#""status":"ok","ops":[["w",1,1],["w",1,2]]"#,
                r#""status":"ok","ops":[["rq",0,5,[[1,1]]]]"#,
            ]),
        ),
        (
            AbortedRead,
            "a row shows a failed transaction's write",
            jsonl_txns(&[
                r#""status":"fail","ops":[["w",1,1]]"#,
                r#""status":"ok","ops":[["rq",1,1,[[1,1]]]]"#,
            ]),
        ),
        (
            ThinAirRead,
            "a row shows a value nobody wrote",
            jsonl_txns(&[r#""status":"ok","ops":[["rq",1,3,[[2,9]]]]"#]),
        ),
        (
            NonRepeatableRead,
            "a range read lists a key an earlier read saw absent",
            jsonl_txns(&[
                r#""status":"ok","ops":[["w",1,1]]"#,
                r#""status":"ok","ops":[["r",1,null],["rq",0,2,[[1,1]]]]"#,
            ]),
        ),
        (
            NonRepeatableRead,
            "a range read lists another value than an earlier range read",
            jsonl_txns(&[
                r#""status":"ok","ops":[["w",1,1]]"#,
                r#""status":"ok","ops":[["w",1,2]]"#,
                r#""status":"ok","ops":[["rq",0,2,[[1,1]]],["rq",1,1,[[1,2]]]]"#,
            ]),
        ),
    ]
}

/// The checker's report at `l`, whose certificate must hold.
fn checked(h: &History, l: Level, what: &str) -> checkers::Report {
    let rep = check(h, l, &CheckOptions::default());
    assert_certified_on(h, &rep, what);
    rep
}

#[test]
fn each_finding_on_a_range_read_is_certified_at_every_level() {
    for (kind, what, h) in cases() {
        for l in Level::ALL {
            let rep = checked(&h, l, what);
            let forbidden = kind != AnomalyKind::NonRepeatableRead || l != Level::Rc;
            let want = if forbidden {
                Verdict::Anomalous
            } else {
                Verdict::Ok
            };
            assert_eq!(rep.verdict, want, "{what} at {l}: {:?}", rep.anomalies);
            assert_eq!(
                oracle::satisfies(&h, l),
                Some(want == Verdict::Ok),
                "{what} at {l}: the oracle"
            );
            assert_eq!(rep.certified, Certified::Checked, "{what} at {l}");
            if !forbidden {
                continue;
            }
            assert!(
                rep.anomalies.iter().any(|a| a.kind == kind),
                "{what} at {l}: {:?}",
                rep.anomalies
            );
            // The finding itself is what the certificate proves.
            let Some(Claim::Anomalous(refs)) = rep.certificate.as_ref().map(|c| &c.claim) else {
                panic!("{what} at {l}: no refutation");
            };
            assert!(
                refs.iter().any(|r| matches!(
                    r,
                    Refutation::Finding { kind: k, txn, op }
                        if *k == kind
                            && matches!(h.txns[*txn as usize].ops[*op as usize], Op::RangeRead { .. })
                )),
                "{what} at {l}: {refs:?}"
            );
        }
    }
}

#[test]
fn a_finding_on_a_range_read_is_checked_not_assumed() {
    // The certificate checker re-derives each finding: the same claims on
    // range reads that show nothing wrong do not hold.
    let fine = jsonl_txns(&[
        r#""status":"ok","ops":[["w",1,1]]"#,
        r#""status":"ok","ops":[["w",2,5],["rq",0,3,[[1,1],[2,5]]],["w",1,6]]"#,
    ]);
    for kind in [
        AnomalyKind::NotMyOwnWrite,
        AnomalyKind::NotMyLastWrite,
        AnomalyKind::FutureRead,
        AnomalyKind::IntermediateRead,
        AnomalyKind::AbortedRead,
        AnomalyKind::ThinAirRead,
        AnomalyKind::NonRepeatableRead,
    ] {
        let r = Refutation::Finding {
            kind,
            txn: 1,
            op: 1,
        };
        let res = checkers::certify::verify_each(&fine, Level::Ser, false, &[r]);
        assert!(res[0].is_err(), "{kind:?} holds on a good range read");
    }
}

/// Turns reads into range reads: a run of reads of consecutive keys
/// `k, k+1, ...` (no op between) becomes one range read `k..=k+n`, a lone
/// read of `k` now and then `k..=k`, or a range that also covers a key
/// nobody writes (`-1`), and a read of `k` also a range over `k` and
/// `k+1` when the next op reads `k+1` (an absent row then stays absent).
fn random_range_reads(h: &History, rng: &mut ChaCha8Rng) -> History {
    as_range_reads(h, &mut |step| match step {
        RangeStep::Extend { .. } => rng.random_bool(0.7),
        RangeStep::KeepRead => rng.random_bool(0.25),
        RangeStep::WidenLow => rng.random_bool(0.3),
    })
}

#[test]
fn random_range_histories_are_certified_and_agree_with_the_oracle() {
    let cfg = GenConfig {
        max_txns: 5,
        max_ops: 5,
        keys: 3,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x7a4e);
    let mut ranges = 0usize;
    let mut findings = 0usize;
    let mut seen = [[0usize; 2]; 10];
    for i in 0..1_500 {
        let base = random_history(&mut rng, &cfg);
        let h = random_range_reads(&base, &mut rng);
        ranges += h
            .txns
            .iter()
            .flat_map(|t| &t.ops)
            .filter(|o| matches!(o, Op::RangeRead { lo, hi, .. } if lo != hi))
            .count();
        for (li, l) in Level::ALL.into_iter().enumerate() {
            let what = format!("range history {i}");
            let rep = checked(&h, l, &what);
            let want = oracle::satisfies(&h, l).expect("the oracle decides every level");
            assert_verdict(&h, &rep, want, &what);
            seen[li][usize::from(want)] += 1;
            if let Some(Claim::Anomalous(refs)) = rep.certificate.as_ref().map(|c| &c.claim) {
                findings += refs
                    .iter()
                    .filter(|r| matches!(r, Refutation::Finding { txn, op, .. } if matches!(h.txns[*txn as usize].ops[*op as usize], Op::RangeRead { .. })))
                    .count();
            }
        }
    }
    eprintln!(
        "{ranges} range reads over two keys or more; {findings} certified findings on range reads"
    );
    assert_two_sided("", &Level::ALL, &seen, 50);
    assert!(ranges > 200 && findings > 200, "{ranges} {findings}");
    eprintln!(
        "{} decided verdicts without a checked certificate",
        checkers_testkit::unchecked_certificates()
    );
}
