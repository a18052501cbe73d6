//! The importers stream: files of many blocks import whole, and an error
//! deep in a big file, or a file cut short, names the right line (or byte
//! offset) of that file.

use std::path::{Path, PathBuf};

use history::formats::{self, Format};
use history::{Key, Op, ParseError, Status};

/// Operations in the big files: well past the readers' blocks (4-8 MB).
const N: usize = 150_000;

/// A file in the temporary folder, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str, bytes: &[u8]) -> Temp {
        let p =
            std::env::temp_dir().join(format!("isoharness-stream-{}-{name}", std::process::id()));
        if bytes.is_empty() {
            std::fs::create_dir_all(&p).unwrap();
        } else {
            std::fs::write(&p, bytes).unwrap();
        }
        Temp(p)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Elle EDN: an invoke and an ok a line each; line `2i+1` invokes txn `i`.
fn edn(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "{{:index {}, :type :invoke, :process {}, :f :txn, :value [[:w {} {}] [:r 7 nil]]}}\n",
            2 * i,
            i % 5,
            i % 100,
            i + 1
        ));
        s.push_str(&format!(
            "{{:index {}, :type :ok, :process {}, :f :txn, :value [[:w {} {}] [:r 7 nil]]}}\n",
            2 * i + 1,
            i % 5,
            i % 100,
            i + 1
        ));
    }
    s
}

/// Elle JSON: one op a line, inside one array; line `2i+1` invokes txn `i`.
fn elle_json(n: usize) -> String {
    let mut s = String::from("[");
    for i in 0..n {
        for (k, ty) in [(0, "invoke"), (1, "ok")] {
            if i + k > 0 {
                s.push_str(",\n");
            }
            s.push_str(&format!(
                "{{\"type\":\"{ty}\",\"f\":\"txn\",\"process\":{},\"index\":{},\"value\":[[\"w\",{},{}]]}}",
                i % 5,
                2 * i + k,
                i % 100,
                i + 1
            ));
        }
    }
    s.push_str("]\n");
    s
}

/// TimeKiller: line `i+1` is transaction `i`.
fn timekiller(n: usize) -> String {
    let mut s = String::from("[");
    for i in 0..n {
        if i > 0 {
            s.push_str(",\n");
        }
        s.push_str(&format!(
            "{{\"tid\": {i}, \"sid\": {}, \"ops\": [{{\"t\": \"w\", \"k\": {}, \"v\": {}}}]}}",
            i % 5,
            i % 100,
            i + 1
        ));
    }
    s.push_str("]\n");
    s
}

fn read(name: &str, bytes: &[u8], format: Format) -> Result<history::History, ParseError> {
    let t = Temp::new(name, bytes);
    let r = formats::read(&t.0, format);
    if let Err(e) = &r {
        assert_eq!(e.path.as_deref(), Some(t.0.as_path()), "{e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
    r
}

#[test]
fn big_files_of_every_streamed_format_import_whole() {
    let h = read("all.edn", edn(N).as_bytes(), Format::ElleEdn).unwrap();
    assert_eq!(h.txns.len(), N);
    assert_eq!(h.txns[N - 1].id, 2 * (N as u64 - 1));
    assert_eq!(
        h.txns[N - 1].ops,
        vec![
            Op::Write {
                key: Key::Int((N as i64 - 1) % 100),
                value: N as i64
            },
            Op::Read {
                key: Key::Int(7),
                value: None
            }
        ]
    );
    let h = read("all.json", elle_json(N).as_bytes(), Format::ElleJson).unwrap();
    assert_eq!(h.txns.len(), N);
    assert!(h.txns.iter().all(|t| t.status == Status::Ok));
    let h = read("all-tk.json", timekiller(N).as_bytes(), Format::Timekiller).unwrap();
    assert_eq!(h.txns.len(), N);
    assert_eq!(
        (h.txns[N - 1].id, h.txns[N - 1].session),
        (N as u64 - 1, (N as u64 - 1) % 5)
    );
}

/// Replaces the `nth` (0-based) occurrence of `from` in `s`.
fn replace_nth(s: &str, from: &str, to: &str, nth: usize) -> String {
    let (at, _) = s.match_indices(from).nth(nth).expect("occurrence");
    format!("{}{to}{}", &s[..at], &s[at + from.len()..])
}

#[test]
fn an_error_deep_in_a_big_file_names_its_line() {
    let deep = N - 1000; // transaction `deep`'s invoke is on line 2*deep+1
    let bad = replace_nth(&edn(N), "[:w ", "[:q ", 2 * deep);
    let e = read("deep.edn", bad.as_bytes(), Format::ElleEdn).unwrap_err();
    assert_eq!(e.line, Some(2 * deep + 1), "{e}");
    assert!(e.message.contains("micro-op"), "{e}");

    let bad = replace_nth(&elle_json(N), "[\"w\",", "[\"q\",", 2 * deep + 1);
    let e = read("deep.json", bad.as_bytes(), Format::ElleJson).unwrap_err();
    assert_eq!(e.line, Some(2 * deep + 2), "{e}");
    assert!(e.message.contains("unknown micro-op"), "{e}");

    // A syntax error: a missing comma between two elements.
    let bad = replace_nth(&timekiller(N), "},\n", "}\n", deep);
    let e = read("deep-tk.json", bad.as_bytes(), Format::Timekiller).unwrap_err();
    assert_eq!(e.line, Some(deep + 2), "{e}");
    assert!(e.message.contains("expected `,` or `]`"), "{e}");

    // Not UTF-8, deep in the file: its line and byte.
    let good = elle_json(N);
    let at = good.match_indices("\"txn\"").nth(2 * deep).unwrap().0 + 1;
    let mut bad = good.into_bytes();
    bad[at] = 0xff;
    let e = read("deep-utf8.json", &bad, Format::ElleJson).unwrap_err();
    assert_eq!(e.line, Some(2 * deep + 1), "{e}");
    assert!(
        e.message.contains(&format!("invalid UTF-8 at byte {at}")),
        "{e}"
    );
}

#[test]
fn a_big_file_cut_short_is_a_clear_error() {
    // Cut inside the last element: named by the line it starts on.
    let s = edn(N);
    let cut = &s[..s.len() - 20];
    let e = read("cut.edn", cut.as_bytes(), Format::ElleEdn).unwrap_err();
    assert_eq!(e.line, Some(2 * N), "{e}");
    assert!(e.message.contains("not closed"), "{e}");

    let s = elle_json(N);
    let e = read("cut.json", &s.as_bytes()[..s.len() - 20], Format::ElleJson).unwrap_err();
    assert_eq!(e.line, Some(2 * N), "{e}");
    assert!(e.message.contains("cut short"), "{e}");
    // Cut after a whole element: the array is not closed.
    let e = read("cut2.json", &s.as_bytes()[..s.len() - 2], Format::ElleJson).unwrap_err();
    assert_eq!(e.line, Some(2 * N), "{e}");
    assert!(e.message.contains("missing `]`"), "{e}");

    let s = timekiller(N);
    let e = read(
        "cut-tk.json",
        &s.as_bytes()[..s.len() - 30],
        Format::Timekiller,
    )
    .unwrap_err();
    assert_eq!(e.line, Some(N), "{e}");
    // Inside a number: never read as a shorter number.
    let cut = s[..s.len() - 5].trim_end_matches(|c: char| !c.is_ascii_digit());
    assert!(read("cut-tk2.json", cut.as_bytes(), Format::Timekiller).is_err());
}

/// dbcop bincode: one session of `n` transactions, each one write.
fn dbcop(n: usize) -> Vec<u8> {
    let mut b = Vec::new();
    let u = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
    for v in [0, 1, 1, n as u64, n as u64] {
        u(&mut b, v);
    }
    for _ in 0..3 {
        u(&mut b, 1);
        b.push(b'x');
    }
    u(&mut b, 1);
    u(&mut b, n as u64);
    for i in 0..n {
        u(&mut b, 1);
        b.push(1);
        u(&mut b, (i % 100) as u64);
        u(&mut b, i as u64 + 1);
        b.push(1);
        b.push(1);
    }
    b
}

#[test]
fn binary_formats_stream_and_name_the_offset() {
    let n = 400_000; // 27 bytes a transaction: 11 MB
    let b = dbcop(n);
    let h = read("big.bincode", &b, Format::Dbcop).unwrap();
    assert_eq!(h.txns.len(), n);
    let e = read("cut.bincode", &b[..b.len() - 10], Format::Dbcop).unwrap_err();
    // The last transaction's event count is more than is left.
    assert_eq!(e.offset, Some(b.len() as u64 - 27), "{e}");
    assert!(e.message.contains("more than the 9 bytes left"), "{e}");
    let e = read("cut2.bincode", &b[..b.len() - 1], Format::Dbcop).unwrap_err();
    assert_eq!(e.offset, Some(b.len() as u64 - 1), "{e}");
    assert!(e.message.contains("ends inside"), "{e}");
    let mut bad = b.clone();
    let flag = b.len() - 27 * 1000 - 1;
    bad[flag] = 9;
    let e = read("bad.bincode", &bad, Format::Dbcop).unwrap_err();
    assert_eq!(e.offset, Some(flag as u64), "{e}");

    // Cobra: one session's log, S W C per transaction (42 bytes).
    let dir = Temp::new("cobra", b"");
    let mut log = Vec::new();
    for i in 0..n as i64 {
        log.push(b'S');
        log.extend_from_slice(&i.to_be_bytes());
        log.push(b'W');
        for v in [i + 1, i % 100, i + 1] {
            log.extend_from_slice(&v.to_be_bytes());
        }
        log.push(b'C');
        log.extend_from_slice(&i.to_be_bytes());
    }
    let file = dir.0.join("T3.log");
    std::fs::write(&file, &log[..log.len() - 4]).unwrap();
    let e = formats::read(&dir.0, Format::Cobra).unwrap_err();
    assert_eq!(e.path.as_deref(), Some(file.as_path()));
    assert_eq!(e.offset, Some(log.len() as u64 - 9), "{e}");
    std::fs::write(&file, &log).unwrap();
    let h = formats::read(&dir.0, Format::Cobra).unwrap();
    assert_eq!(h.txns.len(), n);
    assert!(h
        .txns
        .iter()
        .all(|t| t.session == 3 && t.status == Status::Ok));
}

#[test]
fn viper_logs_stream_and_name_the_line() {
    let dir = Temp::new("viper", b"");
    let mut log = String::new();
    for i in 0..N {
        log.push_str(&format!(
            "{{\"value\": [[\"w\", {}, {}, true], [\"r\", 7, 0, true]]}}\n",
            i % 100,
            i + 1
        ));
    }
    let file = dir.0.join("J24.log");
    std::fs::write(&file, &log).unwrap();
    let h = formats::read(&dir.0, Format::Viper).unwrap();
    assert_eq!(h.txns.len(), N);
    let deep = N - 100;
    std::fs::write(&file, replace_nth(&log, "[\"w\"", "[\"x\"", deep)).unwrap();
    let e = formats::read(&dir.0, Format::Viper).unwrap_err();
    assert_eq!(e.path.as_deref(), Some(file.as_path()));
    assert_eq!(e.line, Some(deep + 1), "{e}");
    assert!(e.message.contains("unknown op"), "{e}");
}

#[test]
fn nil_reads_of_keys_later_used_as_lists_are_empty_lists() {
    // The key is only known to be a list after its nil read was paired.
    let s = "{:type :invoke, :process 0, :f :txn, :value [[:r 1 nil]]}\n\
             {:type :ok, :process 0, :f :txn, :value [[:r 1 nil]]}\n\
             {:type :invoke, :process 1, :f :txn, :value [[:append 1 5]]}\n\
             {:type :ok, :process 1, :f :txn, :value [[:append 1 5]]}\n";
    let h = formats::parse(s.as_bytes(), Format::ElleEdn, Some(Path::new("h.edn"))).unwrap();
    assert_eq!(
        h.txns[0].ops,
        vec![Op::ReadList {
            key: Key::Int(1),
            values: Some(vec![])
        }]
    );
    // Of two completions before their invokes, the earlier transaction is
    // named, wherever its completion is.
    let s = "{:type :invoke, :process 0, :time 50, :f :txn, :value []}\n\
             {:type :invoke, :process 1, :time 50, :f :txn, :value []}\n\
             {:type :ok, :process 1, :time 10, :f :txn, :value []}\n\
             {:type :ok, :process 0, :time 20, :f :txn, :value []}\n";
    let e = formats::parse(s.as_bytes(), Format::ElleEdn, Some(Path::new("h.edn"))).unwrap_err();
    assert_eq!(e.line, Some(4), "{e}");
    assert_eq!(e.path.as_deref(), Some(Path::new("h.edn")));
}
