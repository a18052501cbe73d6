//! A value written twice to one key breaks the unique-value rule: the
//! verdict is anomalous (`duplicate-write`) at every level, and the checker
//! may claim only what holds beside it. A read of such a value has several
//! possible writers, so it is not resolved to one of them: no aborted,
//! intermediate or future read, no edge, lost update or sub-history is
//! derived from it. Every certificate must hold.

use checkers::{check, AnomalyKind, Certified, CheckOptions, Verdict};
use checkers_testkit::build::jsonl_txns;
use history::{History, Level};

/// The example of the audit and its variants: (name, the status and ops
/// of each transaction).
const CASES: &[(&str, &[&str])] = &[
    (
        "a failed and an ok writer",
        &[
            r#""status":"ok","ops":[["r","x",5]]"#,
            r#""status":"fail","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5]]"#,
        ],
    ),
    (
        "two ok writers",
        &[
            r#""status":"ok","ops":[["r","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5]]"#,
        ],
    ),
    (
        "an ok writer, then an info writer",
        &[
            r#""status":"ok","ops":[["w","x",5]]"#,
            r#""status":"info","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["r","x",5]]"#,
        ],
    ),
    (
        "both writes in one transaction",
        &[
            r#""status":"ok","ops":[["r","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5],["w","x",5]]"#,
        ],
    ),
    (
        "an overwritten write, then the same value again",
        &[
            r#""status":"ok","ops":[["r","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5],["w","x",6],["w","x",5]]"#,
        ],
    ),
    (
        "a read of the reader's own later write, also written by another",
        &[
            r#""status":"ok","ops":[["r","x",5],["w","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5]]"#,
        ],
    ),
    (
        "a read after its own write of the value another also wrote",
        &[
            r#""status":"ok","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5],["w","x",6],["r","x",5]]"#,
        ],
    ),
    (
        "two read-modify-writes of a duplicated value",
        &[
            r#""status":"fail","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["r","x",5],["w","x",6]]"#,
            r#""status":"ok","ops":[["r","x",5],["w","x",7]]"#,
        ],
    ),
    (
        "duplicated list appends",
        &[
            r#""status":"ok","ops":[["r","x",[5]]]"#,
            r#""status":"fail","ops":[["a","x",5]]"#,
            r#""status":"ok","ops":[["a","x",5]]"#,
        ],
    ),
    (
        "duplicated list appends, both ok, read in two orders",
        &[
            r#""status":"ok","ops":[["a","x",5]]"#,
            r#""status":"ok","ops":[["a","x",6],["a","x",5]]"#,
            r#""status":"ok","ops":[["r","x",[5,6]]]"#,
            r#""status":"ok","ops":[["r","x",[6,5]]]"#,
        ],
    ),
    (
        "a duplicate and a real cycle",
        &[
            r#""status":"ok","ops":[["r","x",5]]"#,
            r#""status":"fail","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["w","x",5]]"#,
            r#""status":"ok","ops":[["w","y",1],["r","z",1]]"#,
            r#""status":"ok","ops":[["w","z",1],["r","y",1]]"#,
        ],
    ),
    (
        "a duplicate read in a cycle",
        &[
            r#""status":"ok","ops":[["r","x",5],["w","y",1]]"#,
            r#""status":"ok","ops":[["r","y",1],["w","x",5]]"#,
            r#""status":"fail","ops":[["w","x",5]]"#,
        ],
    ),
];

fn cases() -> Vec<(&'static str, History)> {
    CASES
        .iter()
        .map(|&(name, txns)| (name, jsonl_txns(txns)))
        .collect()
}

#[test]
fn a_duplicate_write_is_the_anomaly_and_every_claim_beside_it_holds() {
    for (name, h) in cases() {
        for l in Level::ALL {
            let rep = check(&h, l, &CheckOptions::default());
            assert_eq!(
                rep.certified,
                Certified::Checked,
                "{name} at {l}: {:?}\n{}",
                rep.certificate,
                rep.anomalies
                    .iter()
                    .map(|a| format!("{a}\n"))
                    .collect::<String>()
            );
            assert_eq!(rep.verdict, Verdict::Anomalous, "{name} at {l}");
            assert!(
                rep.anomalies
                    .iter()
                    .any(|a| a.kind == AnomalyKind::DuplicateWrite),
                "{name} at {l}: {:?}",
                rep.anomalies
            );
            let Some(checkers::certify::Certificate {
                claim: checkers::certify::Claim::Anomalous(refs),
                ..
            }) = &rep.certificate
            else {
                panic!("{name} at {l}: no anomalous certificate");
            };
            assert!(
                refs.iter().any(|r| matches!(
                    r,
                    checkers::certify::Refutation::Finding {
                        kind: AnomalyKind::DuplicateWrite,
                        ..
                    }
                )),
                "{name} at {l}: {refs:?}"
            );
            // The certificate holds on its own, as a whole.
            checkers::certify::verify(&h, rep.certificate.as_ref().unwrap())
                .unwrap_or_else(|e| panic!("{name} at {l}: {e}"));
        }
    }
}

#[test]
fn a_duplicate_beside_a_real_cycle_keeps_the_cycle() {
    let (_, h) = cases()
        .into_iter()
        .find(|(n, _)| *n == "a duplicate and a real cycle")
        .unwrap();
    for l in Level::ALL {
        let rep = check(&h, l, &CheckOptions::default());
        assert_eq!(rep.certified, Certified::Checked, "{l}");
        assert!(
            rep.anomalies.iter().any(|a| a.kind == AnomalyKind::G1c),
            "{l}: {:?}",
            rep.anomalies
        );
    }
}

/// Makes one written value of `h` a copy of another write of the same key
/// (in another transaction or the same one), when there are two; the
/// reads of the copied value keep it.
fn duplicate_one(h: &mut History, rng: &mut rand_chacha::ChaCha8Rng) -> bool {
    use rand::RngExt;
    let mut writes: Vec<(usize, usize)> = Vec::new();
    for (t, txn) in h.txns.iter().enumerate() {
        for (o, op) in txn.ops.iter().enumerate() {
            if op.written().is_some() {
                writes.push((t, o));
            }
        }
    }
    for _ in 0..8 {
        if writes.len() < 2 {
            return false;
        }
        let a = writes[rng.random_range(0..writes.len())];
        let b = writes[rng.random_range(0..writes.len())];
        if a == b {
            continue;
        }
        let (ka, va) = h.txns[a.0].ops[a.1]
            .written()
            .map(|(k, v)| (k.clone(), v))
            .unwrap();
        let kb = h.txns[b.0].ops[b.1]
            .written()
            .map(|(k, _)| k.clone())
            .unwrap();
        if ka != kb
            || matches!(h.txns[a.0].ops[a.1], history::Op::Append { .. })
                != matches!(h.txns[b.0].ops[b.1], history::Op::Append { .. })
        {
            continue;
        }
        match &mut h.txns[b.0].ops[b.1] {
            history::Op::Write { value, .. }
            | history::Op::Insert { value, .. }
            | history::Op::Delete { value, .. }
            | history::Op::Append { value, .. } => *value = va,
            _ => unreachable!(),
        }
        return true;
    }
    false
}

#[test]
fn random_histories_with_a_duplicate_are_anomalous_with_certificates_that_hold() {
    use checkers_testkit::{assert_certified, random_history, random_list_history, GenConfig};
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xd0b1e);
    let cfg = GenConfig {
        keys: 2,
        ..GenConfig::default()
    };
    let mini = GenConfig {
        mini: true,
        ..cfg.clone()
    };
    let mut n = 0;
    for i in 0..4_000 {
        let mut h = match i % 4 {
            0 => random_list_history(&mut rng, &cfg),
            1 => random_history(&mut rng, &mini),
            _ => random_history(&mut rng, &cfg),
        };
        if !duplicate_one(&mut h, &mut rng) {
            continue;
        }
        n += 1;
        for l in Level::ALL {
            let rep = check(&h, l, &CheckOptions::default());
            if matches!(rep.certified, Certified::Failed(_)) {
                eprintln!("history {i}:\n{}", history::to_jsonl_string(&h));
            }
            assert_certified(&rep, "duplicates");
            assert_eq!(rep.verdict, Verdict::Anomalous, "history {i} at {l}");
            assert!(
                rep.anomalies
                    .iter()
                    .any(|a| a.kind == AnomalyKind::DuplicateWrite),
                "history {i} at {l}"
            );
        }
    }
    assert!(n > 1_000, "{n} histories with a duplicate");
}
