//! The histories shipped with docs/findings give what their findings say:
//! each gzipped history, checked as it is (`harness check FILE.gz`) at the
//! level its finding names, is anomalous with the anomalies the finding
//! prints. Anyone can rerun a finding's counterexample from the repository
//! alone; a checker change that moves one of these verdicts fails here,
//! and the finding must then be read again. Every history in the folder
//! must be listed.

mod common;

use std::path::Path;

use common::{harness, stderr, stdout};

/// Each shipped history, the level its finding checks it at, and the
/// anomalies line the finding prints.
const SHIPPED: &[(&str, &str, &str)] = &[
    (
        "galera-10.11-rr-lost-update",
        "si",
        "G-single (lost update) x251",
    ),
    (
        "galera-10.11-stale-read",
        "strong-si",
        "G-single-realtime (stale read) x11",
    ),
    (
        "patroni-15-sync-on-killed-patroni",
        "strong-session-si",
        "G-single (lost update) x10",
    ),
    (
        "patroni-15-sync-strict-lock-taken-back",
        "strong-session-si",
        "G-single (lost update) x8",
    ),
    (
        "pg-15-async-standby-stale-read",
        "sser",
        "G-nonadjacent-session x1, G-single-realtime (stale read) x9, G-single-session \
         (session guarantee violation) x38, G2-item x2, G2-item (write skew) x3, \
         G2-item-session x2",
    ),
    (
        "pg-15-remote-apply-standby-first",
        "strong-si",
        "G-single-session (session guarantee violation) x1",
    ),
    ("postgres-15-ser-g2-item", "ser", "G2-item x1"),
    ("postgres-15-ser-g2-item-2", "ser", "G2-item x1"),
];

#[test]
fn every_shipped_history_gives_the_anomalies_its_finding_prints() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/findings");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".history.jsonl.gz").map(str::to_string)
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = SHIPPED.iter().map(|s| s.0.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "list each history of docs/findings here");
    for (name, level, anomalies) in SHIPPED {
        let path = dir.join(format!("{name}.history.jsonl.gz"));
        let o = harness(&["check", path.to_str().unwrap(), "--level", level]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {out}{}", stderr(&o));
        assert!(
            out.starts_with(&format!("{level}: anomalous (")),
            "{name}: {out}"
        );
        assert!(
            out.lines().any(|l| l == format!("anomalies: {anomalies}")),
            "{name}: {out}"
        );
    }
}
