//! The example histories in `examples/`: each row of `examples/MANIFEST.tsv`
//! is checked with the real binary and must give its verdict, exit code and
//! anomaly, with a certificate that holds; every example is in the manifest
//! and in `examples/README.md`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::*;

/// One row of the manifest.
struct Row {
    line: usize,
    path: String,
    format: String,
    level: String,
    flags: Vec<String>,
    verdict: String,
    exit: i32,
    anomaly: Option<String>,
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn manifest() -> Vec<Row> {
    let text =
        std::fs::read_to_string(examples().join("MANIFEST.tsv")).expect("examples/MANIFEST.tsv");
    let mut rows = Vec::new();
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(
            cols.len(),
            7,
            "MANIFEST.tsv line {}: 7 tab-separated columns",
            i + 1
        );
        if !header {
            assert_eq!(
                cols[0], "path",
                "MANIFEST.tsv: the first row names the columns"
            );
            header = true;
            continue;
        }
        let dash = |s: &str| (s != "-").then(|| s.to_string());
        rows.push(Row {
            line: i + 1,
            path: cols[0].into(),
            format: cols[1].into(),
            level: cols[2].into(),
            flags: dash(cols[3])
                .map(|f| f.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            verdict: cols[4].into(),
            exit: cols[5].parse().expect("an exit code"),
            anomaly: dash(cols[6]),
        });
    }
    assert!(!rows.is_empty(), "MANIFEST.tsv lists no example");
    rows
}

/// Runs one check and returns (exit code, JSON report).
fn check(row: &Row, format: &str) -> (i32, serde_json::Value) {
    let path = examples().join(&row.path).display().to_string();
    let mut args = vec![
        "check", &path, "--format", format, "--level", &row.level, "--json",
    ];
    args.extend(row.flags.iter().map(String::as_str));
    let out = harness(&args);
    let code = out.status.code().expect("an exit code");
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "MANIFEST.tsv line {}: `harness {}` printed no JSON report ({e}); exit {code}, stderr:\n{}",
            row.line,
            args.join(" "),
            stderr(&out)
        )
    });
    (code, report)
}

#[test]
fn every_example_gives_its_verdict() {
    for row in manifest() {
        for format in [row.format.as_str(), "auto"] {
            let (code, report) = check(&row, format);
            let what = format!(
                "MANIFEST.tsv line {}: {} --format {format} --level {} {}",
                row.line,
                row.path,
                row.level,
                row.flags.join(" ")
            );
            assert_eq!(report["verdict"], row.verdict.as_str(), "{what}: verdict");
            assert_eq!(code, row.exit, "{what}: exit code");
            assert_eq!(
                report["certified"], "checked",
                "{what}: the certificate holds"
            );
            let counts = report["anomaly_counts"]
                .as_object()
                .expect("anomaly_counts");
            match &row.anomaly {
                Some(name) => assert!(
                    counts.contains_key(name),
                    "{what}: the report names {name:?}; it has {:?}",
                    counts.keys().collect::<Vec<_>>()
                ),
                None => assert!(counts.is_empty(), "{what}: no anomaly; got {counts:?}"),
            }
        }
    }
}

#[test]
fn every_example_is_in_the_manifest_and_the_readme() {
    let listed: BTreeSet<String> = manifest().into_iter().map(|r| r.path).collect();
    let not_histories = ["README.md", "MANIFEST.tsv", "make-binary.py"];
    let on_disk: BTreeSet<String> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !not_histories.contains(&n.as_str()))
        .collect();
    assert_eq!(
        on_disk, listed,
        "examples/ and MANIFEST.tsv list the same histories"
    );
    let readme = std::fs::read_to_string(examples().join("README.md")).expect("examples/README.md");
    for p in &listed {
        assert!(
            readme.contains(p.as_str()),
            "examples/README.md describes {p}"
        );
    }
}
