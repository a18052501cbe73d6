//! Bad input never panics: truncated, garbled and randomly mutated input to
//! every importer gives a `ParseError` that names a line or a byte offset
//! (or, by chance, still parses).

use std::path::Path;

use history::formats::{self, cobra, viper, Format};
use history::ParseError;

mod common;
use common::Rng;

/// Bytes that matter to the parsers, to make mutations interesting.
const SPICE: &[u8] = b"[]{}()\",:;#_-=\n \\0123456789rwSWRCnil-1\xff\x00";

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..1 + rng.index(4) {
        let at = rng.index(b.len() + 1);
        match rng.index(6) {
            0 if !b.is_empty() => {
                let i = rng.index(b.len());
                b[i] = rng.next() as u8;
            }
            1 if !b.is_empty() => {
                let i = rng.index(b.len());
                b[i] = SPICE[rng.index(SPICE.len())];
            }
            2 => {
                let end = (at + 1 + rng.index(8)).min(b.len());
                b.drain(at.min(end)..end);
            }
            3 => {
                for _ in 0..1 + rng.index(4) {
                    b.insert(at.min(b.len()), SPICE[rng.index(SPICE.len())]);
                }
            }
            4 => b.truncate(at),
            _ => {
                let end = (at + rng.index(16)).min(b.len());
                let chunk = b[at.min(end)..end].to_vec();
                let to = rng.index(b.len() + 1);
                b.splice(to..to, chunk);
            }
        }
    }
    b
}

fn located(e: &ParseError) -> bool {
    e.line.is_some() || e.offset.is_some()
}

const EDN: &str = r#"; a comment
{:index 0, :time 10, :type :invoke, :process 1, :f :txn, :value [[:append 9 2] [:r 8 nil]]}
{:index 1, :time 25, :type :ok, :process 1, :f :txn, :value [[:append 9 2] [:r 8 [1 2]]]}
{:index 2, :time 30, :type :invoke, :process 4, :f :txn, :value [[:w :x 3] [:r "y" nil]]}
{:index 3, :time 41, :type :info, :process 4, :f :txn, :value [[:w :x 3] [:r "y" nil]], :error :timeout}
"#;
const JSON: &str = r#"[{"type":"invoke","f":"txn","value":[["w","x",2]],"process":0,"index":1},
{"type":"ok","f":"txn","value":[["w","x",2]],"process":0,"index":2},
{"type":"invoke","f":"txn","value":[["append",253,1],["r",253,null]],"process":1,"index":3},
{"type":"ok","f":"txn","value":[["append",253,1],["r",253,[1]]],"process":1,"index":4}]"#;
const TEXT: &str = "w(1,0,0,0)\nw(2,0,0,0)\nw(1,1,1,1)\nr(2,0,1,1)\nw(2,5,2,-1)\nr(1,1,2,3)\n";
const AWDIT: &str = "w 0 0\nw 1 0\n=====\nw 0 1\n-----\nr 0 1\nr 1 0\n";
const TK: &str = r#"[{"tid": 52, "sid": 47, "sts": {"p": "320316483", "l": 0}, "cts": {"p": "320316485", "l": 0},
  "ops": [{"t": "r", "k": 313, "v": 0}, {"t": "w", "k": 774, "v": 424}]},
 {"tid": 53, "sid": 3, "sts": {"p": 448719026730565749, "l": 0},
  "ops": [{"t": "a", "k": 83, "v": 90}, {"t": "r", "k": 99, "v": [90]}]}]"#;
const JSONL: &str = "{\"type\":\"header\",\"version\":1}\n{\"id\":0,\"session\":3,\"status\":\"ok\",\"start\":1,\"end\":2,\"ops\":[[\"r\",\"x1\",null],[\"w\",\"x1\",5]]}\n";
const VIPER: &str =
    "{\"value\": [[\"r\", 1, 2, true]]}\n{\"value\": [[\"w\", 1, 1, true], [\"w\", 2, 1, true]]}\n";

fn dbcop_sample() -> Vec<u8> {
    let mut b = Vec::new();
    let u = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    for v in [0, 2, 2, 2, 3] {
        u(&mut b, v);
    }
    for s in ["info", "start", "end"] {
        u(&mut b, s.len() as u64);
        b.extend_from_slice(s.as_bytes());
    }
    u(&mut b, 2);
    for events in [vec![(1u8, 1u64, 1u64)], vec![(0, 1, 1), (1, 2, 4)]] {
        u(&mut b, 1);
        u(&mut b, events.len() as u64);
        for (w, k, v) in events {
            b.push(w);
            u(&mut b, k);
            u(&mut b, v);
            b.push(1);
        }
        b.push(1);
    }
    b
}

fn cobra_sample() -> Vec<u8> {
    let mut b = Vec::new();
    for (tag, fields) in [
        (b'S', vec![0i64]),
        (b'R', vec![0xbebe_ebee, 0xbebe_ebee, 7, 9]),
        (b'W', vec![0x1000_0001, 1, 0x1000_0001]),
        (b'C', vec![0]),
        (b'S', vec![1]),
        (b'R', vec![0, 0x1000_0001, 1, 0x1000_0001]),
        (b'C', vec![1]),
    ] {
        b.push(tag);
        for f in fields {
            b.extend_from_slice(&f.to_be_bytes());
        }
    }
    b
}

fn single_file_samples() -> Vec<(Format, Vec<u8>)> {
    vec![
        (Format::ElleEdn, EDN.as_bytes().to_vec()),
        (Format::ElleJson, JSON.as_bytes().to_vec()),
        (Format::Text, TEXT.as_bytes().to_vec()),
        (Format::Awdit, AWDIT.as_bytes().to_vec()),
        (Format::Timekiller, TK.as_bytes().to_vec()),
        (Format::Jsonl, JSONL.as_bytes().to_vec()),
        (Format::Dbcop, dbcop_sample()),
    ]
}

#[test]
fn samples_parse() {
    for (fmt, bytes) in single_file_samples() {
        let h = formats::parse(&bytes, fmt, None).unwrap_or_else(|e| panic!("{fmt}: {e}"));
        assert!(!h.txns.is_empty(), "{fmt}");
        assert_eq!(formats::detect_bytes(&bytes), Some(fmt), "{fmt}");
    }
    assert_eq!(
        cobra::parse_logs(&[(0, &cobra_sample())], None)
            .unwrap()
            .txns
            .len(),
        2
    );
    assert_eq!(
        viper::parse_logs(&[(24, VIPER)], None).unwrap().txns.len(),
        2
    );
}

#[test]
fn every_truncation_fails_with_a_location_or_parses() {
    for (fmt, bytes) in single_file_samples() {
        for cut in 0..bytes.len() {
            if let Err(e) = formats::parse(&bytes[..cut], fmt, None) {
                assert!(located(&e), "{fmt} cut at {cut}: {e}");
            }
        }
    }
    let log = cobra_sample();
    for cut in 0..log.len() {
        if let Err(e) = cobra::parse_logs(&[(0, &log[..cut])], None) {
            assert!(located(&e), "cobra cut at {cut}: {e}");
        }
    }
    for cut in 0..VIPER.len() {
        if let Err(e) = viper::parse_logs(&[(24, &VIPER[..cut])], None) {
            assert!(located(&e), "viper cut at {cut}: {e}");
        }
    }
}

#[test]
fn truncated_inputs_are_refused_with_their_place() {
    // Cut inside the last record: each importer must refuse, not guess.
    let cases: [(Format, &[u8], usize); 5] = [
        (
            Format::ElleEdn,
            b"{:type :ok, :process 0, :value [[:r 1 nil]]}\n{:type :ok, :process 0, :val",
            2,
        ),
        (
            Format::ElleJson,
            b"[{\"type\":\"ok\",\"process\":0,\"value\":[]},\n{\"type\":\"ok\",\"pro",
            2,
        ),
        (Format::Text, b"w(1,1,0,0)\nr(1,1,0", 2),
        (Format::Awdit, b"w 0 0\n-----\nr 0", 3),
        (
            Format::Timekiller,
            b"[{\"tid\": 1, \"sid\": 0, \"ops\": []},\n{\"tid\": 2, \"si",
            2,
        ),
    ];
    // A JSONL history is written a whole line at a time; a last line cut
    // mid-record is what a run killed outright (or a crash) leaves, and the
    // lines before it are the history, without its end line.
    let cut = formats::parse(
        b"{\"id\":0,\"session\":1,\"status\":\"ok\",\"ops\":[]}\n{\"id\":1,",
        Format::Jsonl,
        Some(Path::new("h")),
    )
    .expect("a cut last line ends the history");
    assert_eq!(cut.txns.len(), 1);
    assert!(cut.end.is_none());
    for (fmt, bytes, line) in cases {
        let e = formats::parse(bytes, fmt, Some(Path::new("h"))).unwrap_err();
        assert_eq!(e.line, Some(line), "{fmt}: {e}");
        assert_eq!(e.path.as_deref(), Some(Path::new("h")), "{fmt}: {e}");
        assert!(!e.message.contains('\n'), "{fmt}: one-line reasons: {e}");
    }
    let b = dbcop_sample();
    let e = formats::parse(&b[..b.len() - 5], Format::Dbcop, None).unwrap_err();
    assert!(e.offset.is_some(), "{e}");
    let b = cobra_sample();
    let e = cobra::parse_logs(&[(0, &b[..b.len() - 5])], Some(Path::new("d"))).unwrap_err();
    assert_eq!(e.offset, Some(b.len() as u64 - 9));
    assert_eq!(e.path.as_deref(), Some(Path::new("d/T0.log")));
    // Not UTF-8: the line of the bad byte.
    let e = formats::parse(b"w(1,1,0,0)\nw(1,\xff,0,0)\n", Format::Text, None).unwrap_err();
    assert_eq!(e.line, Some(2), "{e}");
}

#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let rounds = if cfg!(debug_assertions) { 3000 } else { 20000 };
    for (fmt, bytes) in single_file_samples() {
        for i in 0..rounds {
            let m = mutate(&mut rng, &bytes);
            // The named importer, and auto-detection.
            for f in [fmt, Format::Auto] {
                if let Err(e) = formats::parse(&m, f, None) {
                    assert!(
                        located(&e) || f == Format::Auto,
                        "{fmt} round {i}: {e}\n{:?}",
                        String::from_utf8_lossy(&m)
                    );
                }
            }
        }
    }
    let log = cobra_sample();
    for _ in 0..rounds {
        let m = mutate(&mut rng, &log);
        if let Err(e) = cobra::parse_logs(&[(0, &m)], None) {
            assert!(located(&e), "cobra: {e}");
        }
    }
    for _ in 0..rounds {
        let m = mutate(&mut rng, VIPER.as_bytes());
        let Ok(s) = std::str::from_utf8(&m) else {
            continue;
        };
        if let Err(e) = viper::parse_logs(&[(24, s)], None) {
            assert!(located(&e), "viper: {e}");
        }
    }
}

/// Mutates small real fixture files too, when the fixtures are present.
#[test]
fn random_mutations_of_fixture_files_never_panic() {
    let dir = std::env::var_os("ISOHARNESS_FIXTURES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"));
    if !dir.is_dir() {
        eprintln!("fixtures not found; skipping");
        return;
    }
    let files = [
        (Format::ElleEdn, "elle/histories/si-without-g-single.edn"),
        (
            Format::ElleEdn,
            "elle-cli/histories/knossos/cas-register/bad/rethink-fail-minimal.edn",
        ),
        (
            Format::ElleJson,
            "elle-cli/histories/elle/paper-example.json",
        ),
        (
            Format::Text,
            "PolySI-PVLDB2023-Artifacts/artifact/PolySIHistories/violations/galera/galera.txt",
        ),
        (
            Format::Awdit,
            "AWDIT/histories/tests/read-atomic/test-ra.txt",
        ),
        (
            Format::Dbcop,
            "plume-on-hat/History/testcase/dbcop/tap-n/history.bincode",
        ),
    ];
    let mut rng = Rng(42);
    for (fmt, rel) in files {
        let bytes = std::fs::read(dir.join(rel)).unwrap();
        for _ in 0..1000 {
            let m = mutate(&mut rng, &bytes);
            if let Err(e) = formats::parse(&m, fmt, None) {
                assert!(located(&e), "{rel}: {e}");
            }
        }
    }
    let log = std::fs::read(dir.join("plume-on-hat/History/testcase/cobra/tap-n/T1.log")).unwrap();
    for _ in 0..1000 {
        let m = mutate(&mut rng, &log);
        if let Err(e) = cobra::parse_logs(&[(1, &m)], None) {
            assert!(located(&e), "cobra: {e}");
        }
    }
}
