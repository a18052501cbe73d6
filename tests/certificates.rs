//! `harness check` re-checks every verdict with the independent certificate
//! checker: `--certify FILE` writes the proof, `--json` carries it, and the
//! proof verifies on its own against the history.

mod common;

use checkers::certify::{verify, Certificate, Claim};
use common::*;

const SERIAL: &str = r#"{"id":0,"session":0,"status":"ok","start":1,"end":2,"ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"ok","start":3,"end":4,"ops":[["r",1,10],["w",1,11]]}
"#;

#[test]
fn every_verdict_comes_with_a_proof_that_verifies() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, level, code, ok) in [
        ("serial", SERIAL, "ser", 0, true),
        ("lost", LOST_UPDATE, "si", 1, false),
    ] {
        let h = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&h, text).unwrap();
        let cert = dir.path().join(format!("{name}.cert.json"));
        let o = harness(&[
            "check",
            h.to_str().unwrap(),
            "--level",
            level,
            "--certify",
            cert.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(code), "{}{}", stdout(&o), stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["certified"], "checked", "{v}");
        assert!(v["certificate"].is_object(), "--json carries it: {v}");
        let c: Certificate =
            serde_json::from_str(&std::fs::read_to_string(&cert).unwrap()).unwrap();
        assert_eq!(matches!(c.claim, Claim::Ok(_)), ok);
        let history = history::read_jsonl_file(&h).unwrap();
        verify(&history, &c).expect("the written certificate verifies on its own");
    }
}

/// `harness check` on histories where the certificate checker used to
/// reject the verdict's proof (exit 2): now each is anomalous, with a proof
/// that holds, and exits 1. (A commit-timestamp tie with `--use-dbts`; a
/// value written twice, once by a failed transaction; a transaction whose
/// range read does not show its own write.)
#[test]
fn audited_histories_are_anomalous_with_a_proof_that_holds() {
    const TIE: &str = r#"{"id":0,"session":0,"status":"ok","ops":[["w","x",1]],"dbts":{"start":0,"commit":1}}
{"id":1,"session":1,"status":"ok","ops":[["w","x",2],["w","y",2]],"dbts":{"start":2,"commit":5}}
{"id":2,"session":2,"status":"ok","ops":[["w","x",3]],"dbts":{"start":3,"commit":5}}
{"id":3,"session":3,"status":"ok","ops":[["r","x",1],["r","y",2]],"dbts":{"start":6}}
"#;
    const DUPLICATE: &str = r#"{"id":0,"session":0,"status":"ok","ops":[["r","x",5]]}
{"id":1,"session":1,"status":"fail","ops":[["w","x",5]]}
{"id":2,"session":2,"status":"ok","ops":[["w","x",5]]}
"#;
    const RANGE: &str = r#"{"id":0,"session":0,"status":"ok","ops":[["w",1,5],["rq",1,1,[]]]}
"#;
    let dir = tempfile::tempdir().unwrap();
    let levels = [
        "rc",
        "ra",
        "cc",
        "pc",
        "si",
        "strong-session-si",
        "strong-si",
        "ser",
        "strong-session-ser",
        "sser",
    ];
    for (name, text, dbts, levels, kind) in [
        ("tie", TIE, true, &levels[4..], None),
        (
            "duplicate",
            DUPLICATE,
            false,
            &levels[..],
            Some("duplicate-write"),
        ),
        ("range", RANGE, false, &levels[..], Some("not-my-own-write")),
    ] {
        let h = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&h, text).unwrap();
        let history = history::read_jsonl_file(&h).unwrap();
        for level in levels {
            let mut args = vec!["check", h.to_str().unwrap(), "--level", level, "--json"];
            if dbts {
                args.push("--use-dbts");
            }
            let o = harness(&args);
            assert_eq!(
                o.status.code(),
                Some(1),
                "{name} at {level}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["verdict"], "anomalous", "{name} at {level}: {v}");
            assert_eq!(v["certified"], "checked", "{name} at {level}: {v}");
            if let Some(kind) = kind {
                assert!(
                    v["anomalies"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|a| a["kind"] == kind),
                    "{name} at {level}: {v}"
                );
            }
            let c: Certificate = serde_json::from_value(v["certificate"].clone()).unwrap();
            assert!(matches!(c.claim, Claim::Anomalous(_)));
            verify(&history, &c).expect("the certificate verifies on its own");
        }
    }
}
