//! `harness check` re-checks every verdict with the independent certificate
//! checker: `--certify FILE` writes the proof, `--json` carries it, and the
//! proof verifies on its own against the history.

mod common;

use checkers::certify::{verify, Certificate, Claim};
use common::*;

const SERIAL: &str = r#"{"id":0,"session":0,"status":"ok","start":1,"end":2,"ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"ok","start":3,"end":4,"ops":[["r",1,10],["w",1,11]]}
"#;

/// Two transactions read the same version and both overwrite it.
const LOST_UPDATE: &str = r#"{"id":0,"session":0,"status":"ok","start":1,"end":4,"ops":[["r",1,null],["w",1,10]]}
{"id":1,"session":1,"status":"ok","start":2,"end":5,"ops":[["r",1,null],["w",1,11]]}
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
