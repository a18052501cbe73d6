//! Importer errors speak the user's language: they name the file, the line
//! (or byte offset) and the problem, without the parser's internals, and
//! say which format auto mode guessed.

use std::path::Path;

use history::formats::{self, viper, Format};

fn err(bytes: &[u8], format: Format) -> String {
    formats::parse(bytes, format, Some(Path::new("h.in")))
        .unwrap_err()
        .to_string()
}

const INTERNALS: [&str; 5] = [
    "borrowed string",
    "recursion limit",
    "floating point",
    "expected i64",
    "expected u64",
];

fn clean(e: &str) {
    for bad in INTERNALS {
        assert!(!e.contains(bad), "{bad:?} in {e}");
    }
}

#[test]
fn a_value_beyond_64_bits_is_named_as_such() {
    let line = b"{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[[\"w\",1,100000000000000000000000000000]]}\n";
    let e = err(line, Format::Jsonl);
    assert_eq!(
        e, "h.in:1: value 1e+29 is not a 64-bit integer (column 78)",
        "{e}"
    );
    clean(&e);
}

#[test]
fn deep_nesting_is_too_deep_not_a_recursion_limit() {
    let mut line = b"[{\"type\":\"invoke\",\"f\":\"txn\",\"process\":0,\"value\":".to_vec();
    line.extend(std::iter::repeat_n(b'[', 200));
    line.extend(std::iter::repeat_n(b']', 200));
    line.extend(b"}]\n");
    let e = err(&line, Format::ElleJson);
    assert!(e.starts_with("h.in:1: nesting too deep"), "{e}");
    clean(&e);
}

#[test]
fn escaped_strings_are_strings() {
    // `\u0072` is "r": it used to fail with "expected a borrowed string".
    let log = "{\"value\":[[\"\\u0072\",1,null,true],[\"w\",1,5,true]]}\n";
    let h = viper::parse_logs(&[(0, log)], None).unwrap();
    assert_eq!(h.txns.len(), 1);
    let e = viper::parse_logs(&[(0, "{\"value\":[[\"r\",1,\"x\",true]]}\n")], None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("found string \"x\" where a 64-bit integer was expected"),
        "{e}"
    );
    clean(&e);
}

#[test]
fn an_out_of_range_timestamp_is_out_of_range() {
    let tk = |p: &str| {
        format!(
            "[{{\"tid\":1,\"sid\":1,\"sts\":{{\"p\":{p},\"l\":0}},\"cts\":{{\"p\":\"5\",\"l\":0}},\
             \"ops\":[{{\"t\":\"w\",\"k\":1,\"v\":1}}]}}]\n"
        )
    };
    let e = err(
        tk("\"99999999999999999999999\"").as_bytes(),
        Format::Timekiller,
    );
    assert!(
        e.contains("h.in:1: ") && e.contains("timestamp 99999999999999999999999 is out of range"),
        "{e}"
    );
    assert!(!e.contains("not a number"), "{e}");
    let e = err(tk("99999999999999999999999").as_bytes(), Format::Timekiller);
    assert!(
        e.contains("timestamp 100000000000000000000000 is not a non-negative 64-bit integer"),
        "{e}"
    );
    clean(&e);
}

#[test]
fn auto_mode_says_what_it_guessed() {
    let e = err(b"\x00\x01garbage\xff\xfe\x00", Format::Auto);
    assert!(
        e.starts_with(
            "h.in: byte 8: read as dbcop (guessed by --format auto: the file is binary: it has \
             NUL bytes or is not UTF-8 text; else name the format with --format): "
        ),
        "{e}"
    );
    assert!(
        e.ends_with(
            "the file ends inside the header's node count (n_node) (4 bytes left, 8 needed)"
        ),
        "{e}"
    );
    // Named explicitly, no guess is mentioned.
    let e = err(b"\x00\x01garbage\xff\xfe\x00", Format::Dbcop);
    assert!(!e.contains("guessed"), "{e}");
    // A JSON Lines guess.
    let e = err(b"{\"id\":0}\n", Format::Auto);
    assert!(
        e.starts_with(
            "h.in:1: read as jsonl (guessed by --format auto: it starts with a JSON object;"
        ),
        "{e}"
    );
}

#[test]
fn a_text_txn_in_two_sessions_names_the_line() {
    // Txn 3 in sessions 0 and 1: it used to become two transactions.
    let e = err(b"w(1,5,0,3)\nw(2,6,1,3)\n", Format::Text);
    assert_eq!(
        e,
        "h.in:2: txn 3 is in session 1 here but in session 0 before: a transaction belongs to one session",
        "{e}"
    );
    // The same when the second session's line comes much later, after a
    // lookup map of the transactions is already in use, and when the
    // general (spaced) parser reads the line.
    let mut text = String::new();
    for t in 0..50 {
        text.push_str(&format!("w({t},{},{},{t})\n", t + 1, t % 3));
    }
    text.push_str("r(1,2,1,1)\nr(0,1,1,0)\n");
    let e = err(text.as_bytes(), Format::Text);
    assert!(
        e.starts_with("h.in:52: txn 0 is in session 1 here but in session 0 before"),
        "{e}"
    );
    let e = err(b"w(1,5,0,3)\nw(2,7,0,4)\n\n r( 1 ,5, 2 ,3)\n", Format::Text);
    assert!(e.starts_with("h.in:4: txn 3 is in session 2 here"), "{e}");
}
