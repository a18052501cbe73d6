//! Imports every history of the shared fixtures (`MANIFEST.tsv`) and checks
//! its structure; refuses the rows that are not transaction histories. The
//! fixtures live outside the repository: `$ISOHARNESS_FIXTURES`, else
//! `../../shared/fixtures` from this crate. Without them these tests say so
//! and pass, unless `ISOHARNESS_REQUIRE_FIXTURES` is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use history::formats::{self, Format};
use history::{History, Key, Op, Status};

fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("ISOHARNESS_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"));
    if dir.join("MANIFEST.tsv").is_file() {
        Some(dir)
    } else if std::env::var_os("ISOHARNESS_REQUIRE_FIXTURES").is_some() {
        panic!("fixtures not found at {}", dir.display());
    } else {
        eprintln!("fixtures not found at {}; skipping", dir.display());
        None
    }
}

struct Row {
    path: String,
    format: String,
    notes: String,
}

fn rows(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Row {
                path: f[0].to_string(),
                format: f[1].to_string(),
                notes: f.get(4).unwrap_or(&"").to_string(),
            }
        })
        .collect()
}

fn format_of(manifest: &str) -> Option<Format> {
    Some(match manifest {
        "text-rwst" => Format::Text,
        "awdit-test" => Format::Awdit,
        "elle-edn" => Format::ElleEdn,
        "elle-json" => Format::ElleJson,
        "dbcop-bincode" => Format::Dbcop,
        "cobra-log" => Format::Cobra,
        "viper-json" => Format::Viper,
        "timekiller-json" => Format::Timekiller,
        "other" => return None,
        f => panic!("MANIFEST has an unknown format {f}"),
    })
}

fn load(dir: &Path, rel: &str) -> History {
    let p = dir.join(rel);
    formats::read(&p, Format::Auto).unwrap_or_else(|e| panic!("{e}"))
}

fn r(k: i64, v: Option<i64>) -> Op {
    Op::read(k, v)
}
fn w(k: i64, v: i64) -> Op {
    Op::write(k, v)
}
fn a(k: i64, v: i64) -> Op {
    Op::append(k, v)
}
fn rl(k: i64, vs: &[i64]) -> Op {
    Op::read_list(k, vs)
}

/// (session, status, ops) of each transaction, in order.
fn shape(h: &History) -> Vec<(u64, Status, Vec<Op>)> {
    h.txns
        .iter()
        .map(|t| (t.session, t.status, t.ops.clone()))
        .collect()
}

#[test]
fn every_manifest_row_imports_or_is_refused() {
    let Some(dir) = fixtures() else { return };
    let rows = rows(&dir);
    assert!(rows.len() >= 166, "{} rows", rows.len());
    let mut per_format: BTreeMap<String, usize> = BTreeMap::new();
    for row in &rows {
        *per_format.entry(row.format.clone()).or_default() += 1;
        let path = dir.join(&row.path);
        let detected = formats::detect(&path).unwrap_or_else(|e| panic!("{e}"));
        let Some(fmt) = format_of(&row.format) else {
            // Not a transaction history: refused, with the line and why.
            let e = formats::read(&path, Format::Auto).unwrap_err();
            assert!(e.line.is_some(), "{}: {e}", row.path);
            assert!(e.message.contains("not a transaction"), "{}: {e}", row.path);
            assert!(matches!(detected, Format::ElleEdn | Format::ElleJson));
            continue;
        };
        assert_eq!(detected, fmt, "{}", row.path);
        let empty_upstream = row.notes.contains("EMPTY");
        if empty_upstream {
            // No transactions: refused, in any format, as nothing to check.
            for f in [fmt, Format::Auto] {
                let e = formats::read(&path, f).unwrap_err();
                assert!(
                    e.message.contains("hold no transactions"),
                    "{}: {e}",
                    row.path
                );
            }
            continue;
        }
        let h = formats::read(&path, fmt).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(h, formats::read(&path, Format::Auto).unwrap());
        assert!(!h.txns.is_empty(), "{}: no transactions", row.path);
        let mut ids: Vec<u64> = h.txns.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), h.txns.len(), "{}: ids not unique", row.path);
        let (ok, fail, info) = h.status_counts();
        assert!(ok > 0, "{}: nothing committed", row.path);
        let ops = || h.txns.iter().flat_map(|t| t.ops.iter());
        let registers_only = || {
            ops().all(|o| {
                matches!(
                    o,
                    Op::Read {
                        key: Key::Int(_),
                        ..
                    } | Op::Write {
                        key: Key::Int(_),
                        ..
                    }
                )
            })
        };
        match fmt {
            Format::Text => {
                assert!(registers_only(), "{}", row.path);
                assert_eq!(info, 0);
                let aborted = std::fs::read_to_string(&path).unwrap().contains(",-1)");
                assert_eq!(fail > 0, aborted, "{}", row.path);
                assert!(ops().all(|o| !matches!(o, Op::Read { value: Some(0), .. })));
            }
            Format::Awdit => {
                assert!(registers_only());
                assert_eq!((fail, info), (0, 0));
                assert!(ops().all(|o| !matches!(o, Op::Read { value: None, .. })));
            }
            Format::ElleEdn | Format::ElleJson => {
                assert!(ops().all(|o| matches!(
                    o,
                    Op::Read { .. } | Op::Write { .. } | Op::Append { .. } | Op::ReadList { .. }
                )));
                let list_append = !row.path.contains("rw-register");
                assert_eq!(h.has_lists(), list_append, "{}", row.path);
                // Elle reads in committed transactions are known.
                assert!(h
                    .txns
                    .iter()
                    .filter(|t| t.status == Status::Ok)
                    .flat_map(|t| &t.ops)
                    .all(|o| !matches!(o, Op::ReadList { values: None, .. })));
                // Unknown transactions carry no reads.
                assert!(h.txns.iter().filter(|t| t.status == Status::Info).all(|t| t
                    .ops
                    .iter()
                    .all(|o| !o.is_read())
                    && t.end.is_none()));
            }
            Format::Dbcop | Format::Viper => {
                assert!(registers_only());
                assert_eq!(info, 0);
            }
            Format::Cobra => {
                assert!(registers_only());
                assert_eq!((fail, info), (0, 0));
            }
            Format::Timekiller => {
                assert!(h
                    .txns
                    .iter()
                    .all(|t| t.dbts.is_some_and(|d| d.commit >= Some(d.start))));
                assert_eq!((fail, info), (0, 0));
            }
            _ => unreachable!(),
        }
    }
    // Every format of the manifest was exercised.
    for f in [
        "text-rwst",
        "awdit-test",
        "elle-edn",
        "elle-json",
        "dbcop-bincode",
        "cobra-log",
        "viper-json",
        "timekiller-json",
        "other",
    ] {
        assert!(per_format.get(f).copied().unwrap_or(0) > 0, "no {f} rows");
    }
}

#[test]
fn plume_tap_cases_by_hand() {
    let Some(dir) = fixtures() else { return };
    let tc = "plume-on-hat/History/testcase";
    // tap-b AbortedRead: session 0 aborts w(1,1), w(2,1); txn 1 reads x1 = 1.
    let h = load(&dir, &format!("{tc}/text/tap-b.txt"));
    assert_eq!(
        shape(&h),
        vec![
            (0, Status::Fail, vec![w(1, 1), w(2, 1)]),
            (0, Status::Ok, vec![r(1, Some(1))]),
        ]
    );
    assert_eq!(h.txns[1].id, 1);
    // The same case in Elle syntax: a lone :fail, then a list read.
    let h = load(&dir, &format!("{tc}/elle/tap-b.edn"));
    assert_eq!(
        shape(&h),
        vec![
            (1, Status::Fail, vec![a(1, 1), a(2, 1)]),
            (2, Status::Ok, vec![rl(1, &[1])]),
        ]
    );
    // tap-h NonMonoReadCO, text: txn ids are global, sessions 0..2.
    let h = load(&dir, &format!("{tc}/text/tap-h.txt"));
    assert_eq!(
        shape(&h),
        vec![
            (0, Status::Ok, vec![w(1, 2)]),
            (1, Status::Ok, vec![r(1, Some(2))]),
            (1, Status::Ok, vec![w(1, 1), w(2, 1)]),
            (2, Status::Ok, vec![r(2, Some(1)), r(1, Some(2))]),
        ]
    );
    assert_eq!(
        h.txns.iter().map(|t| t.id).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    // ... in dbcop: Plume added its init transaction as session 0, with the
    // values renumbered (0 -> 1, 2 -> 2, 1 -> 3).
    let h = load(&dir, &format!("{tc}/dbcop/tap-h/history.bincode"));
    assert_eq!(
        shape(&h),
        vec![
            (0, Status::Ok, vec![w(1, 1), w(2, 1)]),
            (1, Status::Ok, vec![w(1, 2)]),
            (2, Status::Ok, vec![r(1, Some(2))]),
            (2, Status::Ok, vec![w(1, 3), w(2, 3)]),
            (3, Status::Ok, vec![r(2, Some(3)), r(1, Some(2))]),
        ]
    );
    // ... in Cobra: values are write ids; T-1.log is the initial state.
    let h = load(&dir, &format!("{tc}/cobra/tap-h/"));
    let (w1, w2, w3) = (0x1000_0002, 0x1000_0003, 0x1000_0004);
    assert_eq!(
        shape(&h),
        vec![
            (0, Status::Ok, vec![w(1, w1)]),
            (1, Status::Ok, vec![r(1, Some(w1))]),
            (1, Status::Ok, vec![w(1, w2), w(2, w3)]),
            (2, Status::Ok, vec![r(2, Some(w3)), r(1, Some(w1))]),
        ]
    );
    // tap-d in Cobra: T1 reads T0's write by its write id.
    let h = load(&dir, &format!("{tc}/cobra/tap-d/"));
    assert_eq!(
        shape(&h),
        vec![
            (0, Status::Ok, vec![w(1, 0x1000_0001)]),
            (
                1,
                Status::Ok,
                vec![w(1, 0x1000_0002), r(1, Some(0x1000_0001))]
            ),
        ]
    );
    // Viper copies (tap-e..n) are the text cases with sessions + 24.
    for letter in 'e'..='n' {
        let text = load(&dir, &format!("{tc}/text/tap-{letter}.txt"));
        let viper = load(&dir, &format!("{tc}/viper/tap-{letter}/"));
        let shifted: Vec<_> = shape(&viper)
            .into_iter()
            .map(|(s, st, ops)| (s - 24, st, ops))
            .collect();
        assert_eq!(shifted, shape(&text), "tap-{letter}");
    }
    // Every TAP case has as many committed transactions in text, Cobra and
    // Viper form (where those exist and are not lossy), and dbcop has one
    // more (its init session).
    for letter in 'c'..='n' {
        let text = load(&dir, &format!("{tc}/text/tap-{letter}.txt"));
        let dbcop = load(&dir, &format!("{tc}/dbcop/tap-{letter}/history.bincode"));
        let cobra = load(&dir, &format!("{tc}/cobra/tap-{letter}/"));
        assert_eq!(dbcop.txns.len(), text.txns.len() + 1, "tap-{letter}");
        assert_eq!(cobra.txns.len(), text.txns.len(), "tap-{letter}");
    }
}

#[test]
fn other_samples_by_hand() {
    let Some(dir) = fixtures() else { return };
    // IsoVista: the explicit init transaction (session 0, txn 0, writes of 0)
    // is dropped and reads of 0 are reads of the initial state.
    let h = load(&dir, "IsoVista/history/bugs/pg_ser_bug.txt");
    assert_eq!(h.txns.len(), 20);
    assert!(h.txns.iter().all(|t| t.session != 0));
    assert_eq!(h.txns[0].ops, vec![w(9, 1), r(10, None)]);
    assert_eq!(h.txns[0].id, 1);
    let h = load(&dir, "IsoVista/history/bugs/yugabyte_tcc.txt");
    assert_eq!(h.txns.len(), 20);
    // PolySI's yugabyte.txt starts with an ordinary session-0 transaction.
    let h = load(
        &dir,
        "PolySI-PVLDB2023-Artifacts/artifact/PolySIHistories/violations/yugabyte/yugabyte.txt",
    );
    assert_eq!(h.txns.len(), 20);
    assert_eq!(h.txns[0].ops[0], r(15, None));
    // Galera lost update: 7 transactions over one key.
    let h = load(
        &dir,
        "PolySI-PVLDB2023-Artifacts/artifact/PolySIHistories/violations/galera/galera.txt",
    );
    assert_eq!(h.txns.len(), 7);
    assert!(h
        .txns
        .iter()
        .flat_map(|t| &t.ops)
        .all(|o| o.key() == Some(&Key::Int(0))));
    // dbcop Dgraph: 320 of 800 transactions failed.
    let h = load(
        &dir,
        "PolySI-PVLDB2023-Artifacts/artifact/PolySIHistories/violations/dgraph/history.bincode",
    );
    assert_eq!(h.status_counts(), (480, 320, 0));
    assert_eq!(h.txns.iter().map(|t| t.session).max(), Some(9));
    // Cobra RUBiS: most reads are of the initial (INIT/NULL) state.
    let h = load(
        &dir,
        "PolySI-PVLDB2023-Artifacts/artifact/PolySIHistories/fig8_9_10/rubis-10000/hist-00000/",
    );
    assert_eq!(h.txns.len(), 9358);
    let init_reads = h
        .txns
        .iter()
        .flat_map(|t| &t.ops)
        .filter(|o| matches!(o, Op::Read { value: None, .. }))
        .count();
    assert_eq!(init_reads, 28465 + 2024);
    assert_eq!(h.txns.iter().map(|t| t.session).min(), Some(10));
    // Elle: comments, ids from :index, nil reads of list keys are empty lists.
    let h = load(&dir, "elle/histories/si-without-g-single.edn");
    assert_eq!(
        h.txns.iter().map(|t| t.id).collect::<Vec<_>>(),
        [10, 20, 30, 40]
    );
    assert_eq!(h.txns[1].ops[1], rl(9, &[]));
    assert_eq!(h.txns[3].ops, vec![a(6, 2), rl(9, &[2])]);
    // paper-example: no :process, so each transaction is its own session;
    // elle-cli's copy puts them all in process 1; its JSON twin is identical.
    let bare = load(&dir, "elle/histories/paper-example.edn");
    let edn = load(&dir, "elle-cli/histories/elle/paper-example.edn");
    let json = load(&dir, "elle-cli/histories/elle/paper-example.json");
    assert_eq!(edn, json);
    assert_eq!(
        bare.txns.iter().map(|t| t.session).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(edn.txns.iter().all(|t| t.session == 1));
    for (x, y) in bare.txns.iter().zip(&edn.txns) {
        assert_eq!(x.ops, y.ops);
    }
    assert_eq!(bare.txns[1].ops, vec![a(255, 8), rl(253, &[1, 3, 4])]);
    // rw-register: keyword keys, EDN and JSON agree.
    let edn = load(&dir, "elle-cli/histories/elle/rw-register.edn");
    let json = load(&dir, "elle-cli/histories/elle/rw-register.json");
    assert_eq!(edn, json);
    assert_eq!(
        edn.txns[1].ops,
        vec![Op::Read {
            key: Key::str("x"),
            value: Some(3)
        }]
    );
    // huge-scc: cut-off invokes and :info completions are unknown.
    let h = load(&dir, "elle/histories/huge-scc.edn");
    assert_eq!(h.status_counts(), (3036, 7070, 148));
    // TimeKiller: HLC stamps packed as p << 16 | l, or the TSO as is.
    let h = load(&dir, "TimeKiller/examples/format-kv.json");
    assert_eq!(h.txns[0].id, 50);
    assert_eq!(h.txns[0].session, 32);
    let d = h.txns[0].dbts.unwrap();
    assert_eq!(
        (d.start, d.commit),
        (320316484 << 16, Some(320316486 << 16))
    );
    assert_eq!(h.txns[0].ops[0], r(313, None));
    let h = load(&dir, "TimeKiller/examples/format-list.json");
    assert_eq!(h.txns[0].dbts.unwrap().start, 448719026730565749);
    assert!(h.has_lists());
    // AWDIT: 0 is an ordinary value; long-fork has 5 transactions in 3 sessions.
    let h = load(&dir, "AWDIT/histories/tests/causal/long-fork.txt");
    assert_eq!(
        shape(&h),
        vec![
            (0, Status::Ok, vec![w(0, 0), w(1, 0)]),
            (1, Status::Ok, vec![w(0, 1)]),
            (1, Status::Ok, vec![r(0, Some(1)), r(1, Some(0))]),
            (2, Status::Ok, vec![w(1, 1)]),
            (2, Status::Ok, vec![r(1, Some(1)), r(0, Some(0))]),
        ]
    );
}

#[test]
fn directories_and_missing_files() {
    let Some(dir) = fixtures() else { return };
    // A dbcop history may be named by its directory.
    let d = dir.join("plume-on-hat/History/testcase/dbcop/tap-h");
    assert_eq!(formats::detect(&d).unwrap(), Format::Dbcop);
    assert_eq!(formats::read(&d, Format::Auto).unwrap().txns.len(), 5);
    // A directory format given a file, and a missing path.
    let f = dir.join("plume-on-hat/History/testcase/text/tap-h.txt");
    let e = formats::read(&f, Format::Cobra).unwrap_err();
    assert!(e.message.contains("not a directory"), "{e}");
    let e = formats::read(&dir.join("nope.edn"), Format::Auto).unwrap_err();
    assert!(e.path.is_some(), "{e}");
    // The wrong importer for a file fails with a location, not a panic.
    for fmt in [
        Format::ElleEdn,
        Format::ElleJson,
        Format::Awdit,
        Format::Timekiller,
        Format::Dbcop,
        Format::Jsonl,
    ] {
        let e = formats::read(&f, fmt).unwrap_err();
        assert!(e.line.is_some() || e.offset.is_some(), "{fmt}: {e}");
    }
}
