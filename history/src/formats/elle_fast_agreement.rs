//! The Elle fast path ([`super::elle_fast`]) against the general EDN and
//! JSON parsers: wherever the fast path answers, both give the same
//! history or the same error. A module of its own, so that the fast path
//! and the parsers that use it do not import each other.

use std::path::{Path, PathBuf};

use crate::error::ParseError;
use crate::formats::elle_fast::{edn_map, json_object};
use crate::formats::{elle_edn, elle_json};
use crate::model::History;

/// Reads `text` with the fast path and with the general parser alone,
/// and checks both give the same history, or the same error.
fn same(text: &str, json: bool, path: Option<&Path>) -> Result<History, ParseError> {
    same_bytes(text.as_bytes(), json, path)
}

fn same_bytes(text: &[u8], json: bool, path: Option<&Path>) -> Result<History, ParseError> {
    let read = |fast| {
        if json {
            elle_json::read_with(text, path, fast)
        } else {
            elle_edn::read_with(text, path, fast)
        }
    };
    let (fast, general) = (read(true), read(false));
    let shown = String::from_utf8_lossy(text);
    assert_eq!(
        fast, general,
        "fast path and general parser differ on\n{shown}"
    );
    fast
}

#[test]
fn invalid_utf8_is_the_same_error() {
    let ok = b"{:type :ok, :process 0, :value [[:w 1 1]]}\n";
    // In a comment between operations: never read, no error.
    let mut edn = ok.to_vec();
    edn.extend_from_slice(b"; \xff\xfe\n");
    edn.extend_from_slice(ok);
    assert!(same_bytes(&edn, false, None).is_ok());
    // In an operation: its line.
    let mut edn = ok.to_vec();
    edn.extend_from_slice(b"{:type :ok, :process 0, :value [[:w :\xff 1]]}\n");
    assert_eq!(same_bytes(&edn, false, None).unwrap_err().line, Some(2));
    let json =
        b"[{\"type\":\"ok\",\"value\":[]},\n{\"type\":\"ok\",\"value\":[[\"w\",\"\xff\",1]]}]";
    assert_eq!(same_bytes(json, true, None).unwrap_err().line, Some(2));
}

#[test]
fn takes_the_usual_shapes() {
    let edn = [
        "{:type :ok, :f :txn, :value [[:append 1 2] [:r 1 [1 2]]], :process 3, :time 123, :index 7}",
        "{:index 0 :time 10 :type :invoke :process 2 :f :txn :value [[:append 9 2] [:r 8 nil]]}",
        "{:type :info, :process 4, :f :txn, :value [[:w :x 3] [:write \"y\" -4] [:read 5 6]], :error :timeout}",
        "{:type :fail :value [[:a -9223372036854775807 1]] :error \"conflict\" :node \"n1\" :extra nil :n 5 :k :v}",
        "{ ; a comment\n :type :ok ,, :value [ ] :process nil :time nil :f nil }",
        "{:type :info, :f :txn, :process :nemesis, :value []}",
    ];
    for s in edn {
        let (op, len) = edn_map(s.as_bytes()).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(len, s.len(), "{s}");
        assert_eq!(op.is_none(), s.contains(":nemesis"), "{s}");
        same(s, false, None).unwrap();
    }
    let json = [
        r#"{"type":"ok","f":"txn","value":[["append",1,2],["r",1,[1,2]]],"process":3,"time":123,"index":7}"#,
        r#"{ "index" : 0 , "type" : ":invoke" , "process" : 2 , "f" : ":txn" , "value" : [ [ "r" , "x" , null ] , [ "w" , -3 , 0 ] ] }"#,
        r#"{"type":"info","value":[["write","k",1],["read",2,3],["a",4,5]],"error":"timeout","node":"n1","debug":null,"x":true,"y":false,"z":-1}"#,
        r#"{"type":"ok","value":[],"process":null,"time":null,"index":null,"f":null}"#,
        r#"{"type":"info","f":"txn","process":"nemesis","value":[]}"#,
    ];
    for s in json {
        let (op, len) = json_object(s.as_bytes()).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(len, s.len(), "{s}");
        assert_eq!(op.is_none(), s.contains("nemesis"), "{s}");
        same(&format!("[{s}]"), true, None).unwrap();
    }
}

#[test]
fn passes_on_what_it_is_not_sure_of() {
    let edn = [
        "{:type :ok, :type :ok, :value []}",
        "{:type :maybe, :value []}",
        "{:type :ok, :f :read, :value []}",
        "{:type :ok}",
        "{:value []}",
        "{:type :ok, :value [[:x 1 2]]}",
        "{:type :ok, :value [[:w 1]]}",
        "{:type :ok, :value [[:w 1 2 3]]}",
        "{:type :ok, :value [[:w 1 nil]]}",
        "{:type :ok, :value [(:w 1 2)]}",
        "{:type :ok, :value ([:w 1 2])}",
        "{:type :ok, :value [[:r 1 (1 2)]]}",
        "{:type :ok, :value [[:r x 1]]}",
        "{:type :ok, :value [[:r 1 1N]]}",
        "{:type :ok, :value [[:r 1 +1]]}",
        "{:type :ok, :value [[:r 1 99999999999999999999]]}",
        "{:type :ok, :value [[\"r\" 1 1]]}",
        "{::type :ok, :value []}",
        "{:type ::ok, :value []}",
        "{:type :ok, :value [], :time 1.5}",
        "{:type :ok, :value [], :time -1}",
        "{:type :ok, :value [], :process -1}",
        "{:type :ok, :value [], :process \"p\"}",
        "{:type :ok, :value [], :error nil}",
        "{:type :ok, :value [], :error [:abort \"x\"]}",
        "{:type :ok, :value [], :error \"a\\\"b\"}",
        "{:type :ok, :value [], :debug {:a 1}}",
        "{:type :info, :f :start, :process :nemesis, :value nil}",
        "{:type :ok, :value [], #_ :x 1}",
        "{:type :ok, :value [[:w :a\\} 1]]}",
        "{:type :ok, :value [], \"type\" :ok}",
        "{:type :ok :process 0 :value}",
        "{:type :ok, :value [[:r 1 [1 2]]]",
    ];
    for s in edn {
        assert!(edn_map(s.as_bytes()).is_none(), "{s}");
    }
    let json = [
        r#"{"type":"ok","type":"ok","value":[]}"#,
        r#"{"type":"ok","value":[["r",1,-0]]}"#,
        r#"{"type":"ok","value":[["r",1,01]]}"#,
        r#"{"type":"ok","value":[["r",1,1.0]]}"#,
        r#"{"type":"ok","value":[["r",1,1e3]]}"#,
        r#"{"type":"ok","value":[["r",1,9223372036854775808]]}"#,
        r#"{"type":"ok","value":[["r","\u0078",1]]}"#,
        r#"{"type":"ok","value":[[":r",1,1]]}"#,
        r#"{"type":"ok","value":[["r",1]]}"#,
        r#"{"type":"ok","value":[],"time":-0}"#,
        r#"{"type":"ok","value":[],"time":-1}"#,
        r#"{"type":"ok","value":[],"time":1.0}"#,
        r#"{"type":"ok","value":[],"error":null}"#,
        r#"{"type":"ok","value":[],"error":["abort","x"]}"#,
        r#"{"type":"ok","value":[],"debug":{}}"#,
        r#"{"type":"info","f":"start","process":"nemesis","value":null}"#,
        r#"{"type":"ok","value":[],}"#,
        r#"{"type":"maybe","value":[]}"#,
        r#"{"type":"ok","f":"read","value":[]}"#,
        r#"{"type":"ok","value":null}"#,
        r#"{"type":"ok"}"#,
        r#"{}"#,
    ];
    for s in json {
        assert!(json_object(s.as_bytes()).is_none(), "{s}");
    }
}

#[test]
fn agrees_on_odd_documents() {
    let edn = [
        "; c\n[{:type :invoke :process 0 :value [[:r 1 nil]]}\n #_ {:x 1} {:type :ok :process 0 :value [[:r 1 [1]]]}]",
        "#jepsen.history.Op{:type :invoke, :process 0, :f :txn, :value [[:w 1 1]], :time #inst \"2020\"}\n{:type :ok, :process 0, :f :txn, :value [[:w 1 1]]}",
        "({:type :invoke, :value [[:append :x 1]]} {:type :ok, :value [[:append \"x\" 1]]}) ({:type :invoke :value [[:r :x nil]]} {:type :ok :value [[:r :x (1)]]})",
        "{:type :invoke, :process 0, :time 10, :value [[:w 1 1]]}\n{:type :ok, :process 0, :time 5, :value [[:w 1 1]]}",
        "{:type :invoke, :process 0, :time 10.0, :value [[:w 1 1]]}\n{:type :ok, :process 0, :time 20, :value [[:w 1 1]], :error [:x \"y\"]}",
        "{:type :ok, :process 0, :value [[:w 1 1]]}\n{:type :ok, :process 0, :value [[:q 1 1]]}",
        "{:type :ok, :process 0, :value [[:w 1 1]]}\n{:type :ok, :process 0, :value [[:w 1 1]]",
        "{:type :ok, :process 0, :value [[:w 1 1]]} {:type :ok, :process 0, :value [[:w 1 1]]}}",
        "{:type :ok, :process 0, :value [[:w :a\\} 1]]}",
        "{:type :ok, :process 0, :value [[:w 1 1]]}x",
        "{:type :ok, :process 0, :value [[:w 1 1]]} ; trailing",
        "\u{feff}{:type :ok, :process 0, :value [[:w 1 1]], :error :e}",
    ];
    for s in edn {
        let _ = same(s, false, Some(Path::new("h.edn")));
    }
    let json = [
        "[\n{\"type\":\"invoke\",\"process\":0,\"value\":[[\"r\",1,null]]},\n{\"type\":\"ok\",\"process\":0,\"value\":[[\"r\",1,[1]]]}\n]",
        "[{\"type\":\"invoke\",\"process\":0,\"time\":10,\"value\":[]},{\"type\":\"ok\",\"process\":0,\"time\":5,\"value\":[]}]",
        "[{\"type\":\"ok\",\"process\":0,\"value\":[]}\n{\"type\":\"ok\",\"process\":0,\"value\":[]}]",
        "[{\"type\":\"ok\",\"process\":0,\"value\":[]},]",
        "[{\"type\":\"ok\",\"process\":0,\"value\":[]} x]",
        "[{\"type\":\"ok\",\"process\":0,\"value\":[[\"w\",1,1]]}",
        "[{\"type\":\"ok\",\"process\":0,\"value\":[[\"w\",1,1]]}]]",
        "[{\"type\":\"ok\",\"process\":0,\"value\":[[\"w\",\"\\u0078\",1]],\"error\":{\"a\":1}}]",
    ];
    for s in json {
        let _ = same(s, true, Some(Path::new("h.json")));
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// One generated history in both formats: mostly the usual shapes,
/// with odd spacing, comments, key orders, nil values, unknown fields,
/// string and keyword keys, and now and then a form only the general
/// parser reads.
fn generate(seed: u64, ops: usize) -> (String, String) {
    let mut r = Rng(seed | 1);
    let (mut edn, mut json) = (String::new(), String::from("["));
    let mut time = 0u64;
    for n in 0..ops {
        let ews = |r: &mut Rng| {
            r.pick(&[" ", " ", ", ", "\n", " ,\t", " ; c\n", "\r\n ", ",,"])
                .to_string()
        };
        let jws = |r: &mut Rng| r.pick(&["", "", " ", "\n", "\t ", "\r\n"]).to_string();
        let mut fields: Vec<(String, String)> = Vec::new();
        let ty = r.pick(&["invoke", "invoke", "ok", "ok", "fail", "info"]);
        fields.push((format!(":type :{ty}"), format!("\"type\":\"{ty}\"")));
        match r.below(12) {
            0 => fields.push((":process :nemesis".into(), "\"process\":\"nemesis\"".into())),
            1 => fields.push((":process nil".into(), "\"process\":null".into())),
            2 => {}
            _ => {
                let p = r.below(5);
                fields.push((format!(":process {p}"), format!("\"process\":{p}")));
            }
        }
        match r.below(6) {
            0 => {}
            1 => fields.push((":f nil".into(), "\"f\":null".into())),
            _ => fields.push((":f :txn".into(), "\"f\":\"txn\"".into())),
        }
        let mut ev = String::from("[");
        let mut jv = String::from("[");
        for m in 0..r.below(5) {
            let (ef, jf) = match r.below(6) {
                0 => ("r", "r"),
                1 => ("read", "read"),
                2 => ("w", "w"),
                3 => ("write", "write"),
                4 => ("append", "append"),
                _ => ("a", "a"),
            };
            let (ek, jk) = match r.below(4) {
                0 => ("x".to_string(), "\"x\"".to_string()),
                1 => ("\"x\"".to_string(), "\"x\"".to_string()),
                _ => {
                    let k = r.below(6) as i64 - 1;
                    (k.to_string(), k.to_string())
                }
            };
            let ek = if ek == "x" { ":x".to_string() } else { ek };
            let (evl, jvl) = if ef.starts_with('r') {
                match r.below(4) {
                    0 => ("nil".to_string(), "null".to_string()),
                    1 => {
                        let v = r.below(9);
                        (v.to_string(), v.to_string())
                    }
                    _ => {
                        let vs: Vec<String> =
                            (0..r.below(4)).map(|_| r.below(9).to_string()).collect();
                        let open = if r.below(20) == 0 { "(" } else { "[" };
                        let close = if open == "(" { ")" } else { "]" };
                        (
                            format!("{open}{}{close}", vs.join(" ")),
                            format!("[{}]", vs.join(",")),
                        )
                    }
                }
            } else {
                let v = r.below(9);
                (v.to_string(), v.to_string())
            };
            if m > 0 {
                ev.push_str(&ews(&mut r));
                jv.push_str(&format!("{},{}", jws(&mut r), jws(&mut r)));
            }
            ev.push_str(&format!("[:{ef} {ek}{}{evl}]", ews(&mut r)));
            jv.push_str(&format!("[\"{jf}\",{jk},{}{jvl}]", jws(&mut r)));
        }
        ev.push(']');
        jv.push(']');
        fields.push((format!(":value {ev}"), format!("\"value\":{jv}")));
        time += r.below(10);
        match r.below(10) {
            0 => {}
            1 => fields.push((":time nil".into(), "\"time\":null".into())),
            2 => fields.push((format!(":time {time}.0"), format!("\"time\":{time}"))),
            _ => fields.push((format!(":time {time}"), format!("\"time\":{time}"))),
        }
        match r.below(10) {
            0 => fields.push((":index nil".into(), "\"index\":null".into())),
            1 => {}
            _ => fields.push((format!(":index {n}"), format!("\"index\":{n}"))),
        }
        match r.below(8) {
            0 => fields.push((":error :timeout".into(), "\"error\":\"timeout\"".into())),
            1 => fields.push((":error \"a b\"".into(), "\"error\":\"a b\"".into())),
            2 => fields.push((
                ":error [:abort \"x\"]".into(),
                "\"error\":[\"abort\",\"x\"]".into(),
            )),
            _ => {}
        }
        match r.below(8) {
            0 => fields.push((":node \"n1\"".into(), "\"node\":\"n1\"".into())),
            1 => fields.push((":debug {:a [1]}".into(), "\"debug\":{\"a\":[1]}".into())),
            _ => {}
        }
        // Any key order.
        for i in (1..fields.len()).rev() {
            fields.swap(i, r.below(i as u64 + 1) as usize);
        }
        let prefix = match r.below(40) {
            0 => "#_ {:type :ok} ",
            1 => "#jepsen.history.Op",
            _ => "",
        };
        edn.push_str(prefix);
        edn.push('{');
        for (i, (e, _)) in fields.iter().enumerate() {
            if i > 0 {
                edn.push_str(&ews(&mut r));
            }
            edn.push_str(e);
        }
        edn.push('}');
        edn.push_str(&ews(&mut r));
        edn.push('\n');
        if n > 0 {
            json.push_str(&format!("{},{}", jws(&mut r), jws(&mut r)));
        }
        json.push('{');
        for (i, (_, j)) in fields.iter().enumerate() {
            if i > 0 {
                json.push_str(&format!("{},{}", jws(&mut r), jws(&mut r)));
            }
            let (k, v) = j.split_once(':').expect("a JSON field");
            json.push_str(&format!("{k}{}:{}{v}", jws(&mut r), jws(&mut r)));
        }
        json.push('}');
    }
    json.push_str("]\n");
    (edn, json)
}

#[test]
fn agrees_on_generated_histories() {
    for seed in 1..=40 {
        let (edn, json) = generate(seed, 300);
        let e = same(&edn, false, None).unwrap_or_else(|e| panic!("{e}\n{edn}"));
        let j = same(&json, true, None).unwrap_or_else(|e| panic!("{e}\n{json}"));
        // The same operations in both formats (EDN's float times and
        // list reads read as JSON's integers and arrays; errors that
        // are not strings are written back in their own syntax).
        let plain = |mut h: History| {
            h.txns.iter_mut().for_each(|t| t.error = None);
            h
        };
        assert_eq!(plain(e), plain(j), "seed {seed}");
    }
}

/// The shared fixtures, as `history/tests/fixtures.rs` finds them.
fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("ISOHARNESS_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"));
    dir.join("MANIFEST.tsv").is_file().then_some(dir)
}

#[test]
fn agrees_on_the_elle_fixtures() {
    let Some(dir) = fixtures() else {
        eprintln!("fixtures not found; skipping");
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut seen = 0;
    for row in manifest.lines().skip(1) {
        let mut cols = row.split('\t');
        let (Some(path), Some(format)) = (cols.next(), cols.next()) else {
            continue;
        };
        let json = match format {
            "elle-edn" => false,
            "elle-json" => true,
            _ => continue,
        };
        let file = dir.join(path);
        let text = std::fs::read_to_string(&file).unwrap();
        let _ = same(&text, json, Some(&file));
        seen += 1;
    }
    assert!(seen > 0, "no Elle rows in the MANIFEST");
}
