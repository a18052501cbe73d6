//! The fast path of the Elle importers: one operation in the shapes Jepsen
//! and elle-cli write, read straight from its bytes into a [`JOp`], with no
//! value tree in between.
//!
//! ```text
//! {:type :ok, :f :txn, :value [[:append 1 2] [:r 1 [1 2]]], :process 3, :time 123, :index 7}
//! {"type":"ok","f":"txn","value":[["append",1,2],["r",1,[1,2]]],"process":3,"time":123,"index":7}
//! ```
//!
//! It accepts only what it is sure of: the fields `type`, `f`, `value`,
//! `process`, `time`, `index` and `error`, each at most once, in any order;
//! other fields whose value is a plain integer, string, keyword or nil;
//! integers without fraction, exponent, sign prefix or suffix; strings
//! without escapes; the micro-ops `r`/`read`, `w`/`write`, `append`/`a`
//! with an integer, string or keyword key; whitespace, commas and (EDN) `;`
//! comments anywhere a separator may be. Anything else (tags, discards,
//! floats, lists in place of vectors, an unknown type or micro-op, an error
//! of any kind) answers `None`: the general parser then reads the
//! operation and decides, and words the error, exactly as it would alone.

use crate::formats::jepsen::{JOp, Kind, Micro, ReadVal};
use crate::formats::util;
use crate::model::Key;

/// The fields of an operation read so far.
#[derive(Default)]
struct Fields {
    /// One bit per known field already read: a second one passes.
    seen: u8,
    kind: Option<Kind>,
    process: Option<u64>,
    /// The process is a name (`:nemesis`): not a client, skipped.
    named_process: bool,
    time: Option<u64>,
    index: Option<u64>,
    ops: Option<Vec<Micro>>,
    error: Option<String>,
}

impl Fields {
    /// Marks field `bit` read; `None` when it was read before.
    fn once(&mut self, bit: u8) -> Option<()> {
        let m = 1 << bit;
        if self.seen & m != 0 {
            return None;
        }
        self.seen |= m;
        Some(())
    }

    /// The operation, as the general parsers make it (its line is set by
    /// the caller): `Some(None)` for a process that is not a client.
    fn finish(self) -> Option<Option<JOp>> {
        if self.named_process {
            return Some(None);
        }
        Some(Some(JOp {
            line: 0,
            kind: self.kind?,
            process: self.process,
            time: self.time,
            index: self.index,
            ops: self.ops?,
            error: self.error,
        }))
    }
}

const TYPE: u8 = 0;
const F: u8 = 1;
const PROCESS: u8 = 2;
const VALUE: u8 = 3;
const TIME: u8 = 4;
const INDEX: u8 = 5;
const ERROR: u8 = 6;

/// A `:type` name.
fn kind(name: &[u8]) -> Option<Kind> {
    Some(match name {
        b"invoke" => Kind::Invoke,
        b"ok" => Kind::Ok,
        b"fail" => Kind::Fail,
        b"info" => Kind::Info,
        _ => return None,
    })
}

/// What a micro-op does, by its name.
#[derive(Clone, Copy)]
enum MicroF {
    Read,
    Write,
    Append,
}

fn micro_f(name: &[u8]) -> Option<MicroF> {
    Some(match name {
        b"r" | b"read" => MicroF::Read,
        b"w" | b"write" => MicroF::Write,
        b"append" | b"a" => MicroF::Append,
        _ => return None,
    })
}

/// `s` without its leading colons (JSON histories may keep EDN's
/// keyword colons: `":ok"`).
fn trim_colons(mut s: &[u8]) -> &[u8] {
    while let [b':', rest @ ..] = s {
        s = rest;
    }
    s
}

/// A key's text as a key (the input is UTF-8, and keys end at ASCII
/// delimiters).
fn str_key(b: &[u8]) -> Option<Key> {
    std::str::from_utf8(b).ok().map(Key::str)
}

/// The bytes that end an EDN token: the reader's delimiters, and `\`.
static ENDS_TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let ends = b" \t\n\r,()[]{}\";\\\x0c";
    let mut i = 0;
    while i < ends.len() {
        t[ends[i] as usize] = true;
        i += 1;
    }
    t
};

/// A cursor over one operation's bytes.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn new(b: &'a [u8]) -> Cur<'a> {
        Cur { b, i: 0 }
    }

    fn at(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    // ------------------------------------------------------------ EDN ----

    /// Skips EDN whitespace, commas and `;` comments.
    fn edn_ws(&mut self) {
        while let Some(c) = self.at() {
            match c {
                b' ' | b'\n' | b',' | b'\t' | b'\r' | 0x0c => self.i += 1,
                b';' => {
                    self.i = match memchr::memchr(b'\n', &self.b[self.i..]) {
                        Some(n) => self.i + n,
                        None => self.b.len(),
                    }
                }
                _ => return,
            }
        }
    }

    /// The next byte after EDN whitespace.
    fn edn_peek(&mut self) -> Option<u8> {
        self.edn_ws();
        self.at()
    }

    fn edn_eat(&mut self, c: u8) -> Option<()> {
        (self.edn_peek()? == c).then(|| self.i += 1)
    }

    /// A token (a keyword, number or symbol) up to the next delimiter or
    /// `\` (which the extent scan reads as a character literal: no
    /// answer then).
    fn edn_token(&mut self) -> &'a [u8] {
        let start = self.i;
        let rest = &self.b[start..];
        let len = rest
            .iter()
            .position(|&c| ENDS_TOKEN[usize::from(c)])
            .unwrap_or(rest.len());
        self.i += len;
        &rest[..len]
    }

    /// A keyword `:name` (not `::name`), its name.
    fn edn_keyword(&mut self) -> Option<&'a [u8]> {
        if self.edn_peek()? != b':' {
            return None;
        }
        let t = self.edn_token();
        match t.get(1) {
            None | Some(b':') => None,
            Some(_) => Some(&t[1..]),
        }
    }

    /// `nil` (true) or a plain decimal integer (false, and its value).
    fn edn_int_or_nil(&mut self) -> Option<Option<i64>> {
        self.edn_ws();
        let t = self.edn_token();
        if t == b"nil" {
            Some(None)
        } else {
            util::int(t).map(Some)
        }
    }

    fn edn_int(&mut self) -> Option<i64> {
        self.edn_int_or_nil()?
    }

    /// `nil` or a non-negative integer.
    fn edn_opt_u64(&mut self) -> Option<Option<u64>> {
        match self.edn_int_or_nil()? {
            None => Some(None),
            Some(v) => u64::try_from(v).ok().map(Some),
        }
    }

    /// A string without escapes.
    fn edn_str(&mut self) -> Option<&'a str> {
        self.edn_eat(b'"')?;
        let rest = &self.b[self.i..];
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[len] != b'"' {
            return None;
        }
        self.i += len + 1;
        std::str::from_utf8(&rest[..len]).ok()
    }

    /// A micro-op key: an integer, a keyword or a string.
    fn edn_key(&mut self) -> Option<Key> {
        match self.edn_peek()? {
            b':' => str_key(self.edn_keyword()?),
            b'"' => self.edn_str().map(Key::str),
            _ => self.edn_int().map(Key::Int),
        }
    }

    /// `[:f k v]`.
    fn edn_micro(&mut self) -> Option<Micro> {
        self.edn_eat(b'[')?;
        let f = micro_f(self.edn_keyword()?)?;
        let key = self.edn_key()?;
        let m = match f {
            MicroF::Read => {
                let v = if self.edn_peek()? == b'[' {
                    self.i += 1;
                    let mut vs = Vec::new();
                    while self.edn_peek()? != b']' {
                        vs.push(self.edn_int()?);
                    }
                    self.i += 1;
                    ReadVal::List(vs)
                } else {
                    match self.edn_int_or_nil()? {
                        None => ReadVal::Nil,
                        Some(v) => ReadVal::One(v),
                    }
                };
                Micro::Read(key, v)
            }
            MicroF::Write => Micro::Write(key, self.edn_int()?),
            MicroF::Append => Micro::Append(key, self.edn_int()?),
        };
        self.edn_eat(b']')?;
        Some(m)
    }

    /// The value of a field this reader does not use: nil, an integer, a
    /// keyword or a string.
    fn edn_skip_simple(&mut self) -> Option<()> {
        match self.edn_peek()? {
            b':' => self.edn_keyword().map(drop),
            b'"' => self.edn_str().map(drop),
            _ => self.edn_int_or_nil().map(drop),
        }
    }

    // ----------------------------------------------------------- JSON ----

    fn json_peek(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.at() {
            self.i += 1;
        }
        self.at()
    }

    fn json_eat(&mut self, c: u8) -> Option<()> {
        (self.json_peek()? == c).then(|| self.i += 1)
    }

    /// A string without escapes or control characters, as bytes (for
    /// names compared with ASCII ones: no UTF-8 check).
    fn json_name(&mut self) -> Option<&'a [u8]> {
        self.json_eat(b'"')?;
        let rest = &self.b[self.i..];
        let len = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.i += len + 1;
        Some(&rest[..len])
    }

    /// A string without escapes or control characters.
    fn json_str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.json_name()?).ok()
    }

    /// A literal word (`null`, `true`, `false`).
    fn json_word(&mut self, w: &[u8]) -> Option<()> {
        self.json_peek()?;
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Some(())
        } else {
            None
        }
    }

    /// An integer as JSON writes it, `-?(0|[1-9][0-9]*)` with neither a
    /// fraction nor an exponent, that serde_json reads as an integer (not
    /// `-0`, which it reads as a float): its sign and magnitude.
    fn json_int(&mut self) -> Option<(bool, u64)> {
        self.json_peek()?;
        let neg = self.at() == Some(b'-');
        if neg {
            self.i += 1;
        }
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(c) = self.at() {
            if !c.is_ascii_digit() {
                break;
            }
            v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        if digits == 0 || (digits > 1 && self.b[start] == b'0') || (neg && v == 0) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.at() {
            return None;
        }
        Some((neg, v))
    }

    fn json_i64(&mut self) -> Option<i64> {
        match self.json_int()? {
            (false, v) => i64::try_from(v).ok(),
            (true, v) if v <= 1 << 63 => Some((v as i128).wrapping_neg() as i64),
            (true, _) => None,
        }
    }

    /// `null` or a non-negative integer.
    fn json_opt_u64(&mut self) -> Option<Option<u64>> {
        if self.json_peek()? == b'n' {
            self.json_word(b"null").map(|()| None)
        } else {
            match self.json_int()? {
                (false, v) => Some(Some(v)),
                (true, _) => None,
            }
        }
    }

    /// `["f", k, v]`.
    fn json_micro(&mut self) -> Option<Micro> {
        self.json_eat(b'[')?;
        let f = micro_f(self.json_name()?)?;
        self.json_eat(b',')?;
        let key = if self.json_peek()? == b'"' {
            Key::str(self.json_str()?)
        } else {
            Key::Int(self.json_i64()?)
        };
        self.json_eat(b',')?;
        let m = match f {
            MicroF::Read => {
                let v = match self.json_peek()? {
                    b'n' => {
                        self.json_word(b"null")?;
                        ReadVal::Nil
                    }
                    b'[' => {
                        self.i += 1;
                        let mut vs = Vec::new();
                        if self.json_peek()? != b']' {
                            loop {
                                vs.push(self.json_i64()?);
                                if self.json_peek()? == b']' {
                                    break;
                                }
                                self.json_eat(b',')?;
                            }
                        }
                        self.i += 1;
                        ReadVal::List(vs)
                    }
                    _ => ReadVal::One(self.json_i64()?),
                };
                Micro::Read(key, v)
            }
            MicroF::Write => Micro::Write(key, self.json_i64()?),
            MicroF::Append => Micro::Append(key, self.json_i64()?),
        };
        self.json_eat(b']')?;
        Some(m)
    }

    /// The value of a field this reader does not use: null, true, false,
    /// an integer or a string.
    fn json_skip_simple(&mut self) -> Option<()> {
        match self.json_peek()? {
            b'"' => self.json_name().map(drop),
            b'n' => self.json_word(b"null"),
            b't' => self.json_word(b"true"),
            b'f' => self.json_word(b"false"),
            _ => self.json_int().map(drop),
        }
    }
}

/// The EDN operation map at the front of `text`, and its length:
/// `Some(op)`, `None` for a process that is not a client. `None` when the
/// general parser must read it.
pub(crate) fn edn_map(text: &[u8]) -> Option<(Option<JOp>, usize)> {
    let mut c = Cur::new(text);
    c.edn_eat(b'{')?;
    let mut f = Fields::default();
    loop {
        if c.edn_peek()? == b'}' {
            c.i += 1;
            break;
        }
        match c.edn_keyword()? {
            b"type" => {
                f.once(TYPE)?;
                f.kind = Some(kind(c.edn_keyword()?)?);
            }
            b"f" => {
                f.once(F)?;
                if c.edn_peek()? == b':' {
                    if c.edn_keyword()? != b"txn" {
                        return None;
                    }
                } else if c.edn_token() != b"nil" {
                    return None;
                }
            }
            b"process" => {
                f.once(PROCESS)?;
                if c.edn_peek()? == b':' {
                    c.edn_keyword()?;
                    f.named_process = true;
                } else {
                    f.process = c.edn_opt_u64()?;
                }
            }
            b"value" => {
                f.once(VALUE)?;
                c.edn_eat(b'[')?;
                let mut ops = Vec::new();
                while c.edn_peek()? != b']' {
                    ops.push(c.edn_micro()?);
                }
                c.i += 1;
                f.ops = Some(ops);
            }
            b"time" => {
                f.once(TIME)?;
                f.time = c.edn_opt_u64()?;
            }
            b"index" => {
                f.once(INDEX)?;
                f.index = c.edn_opt_u64()?;
            }
            b"error" => {
                f.once(ERROR)?;
                let e = match c.edn_peek()? {
                    b':' => std::str::from_utf8(c.edn_keyword()?).ok()?,
                    _ => c.edn_str()?,
                };
                f.error = Some(e.to_string());
            }
            _ => c.edn_skip_simple()?,
        }
    }
    Some((f.finish()?, c.i))
}

/// The JSON operation object at the front of `text`, and its length, as
/// [`edn_map`].
pub(crate) fn json_object(text: &[u8]) -> Option<(Option<JOp>, usize)> {
    let mut c = Cur::new(text);
    c.json_eat(b'{')?;
    let mut f = Fields::default();
    if c.json_peek()? != b'}' {
        loop {
            let name = c.json_name()?;
            c.json_eat(b':')?;
            match name {
                b"type" => {
                    f.once(TYPE)?;
                    f.kind = Some(kind(trim_colons(c.json_name()?))?);
                }
                b"f" => {
                    f.once(F)?;
                    if c.json_peek()? == b'n' {
                        c.json_word(b"null")?;
                    } else if trim_colons(c.json_name()?) != b"txn" {
                        return None;
                    }
                }
                b"process" => {
                    f.once(PROCESS)?;
                    if c.json_peek()? == b'"' {
                        c.json_name()?;
                        f.named_process = true;
                    } else {
                        f.process = c.json_opt_u64()?;
                    }
                }
                b"value" => {
                    f.once(VALUE)?;
                    c.json_eat(b'[')?;
                    let mut ops = Vec::new();
                    if c.json_peek()? != b']' {
                        loop {
                            ops.push(c.json_micro()?);
                            if c.json_peek()? == b']' {
                                break;
                            }
                            c.json_eat(b',')?;
                        }
                    }
                    c.i += 1;
                    f.ops = Some(ops);
                }
                b"time" => {
                    f.once(TIME)?;
                    f.time = c.json_opt_u64()?;
                }
                b"index" => {
                    f.once(INDEX)?;
                    f.index = c.json_opt_u64()?;
                }
                b"error" => {
                    f.once(ERROR)?;
                    f.error = Some(c.json_str()?.to_string());
                }
                _ => c.json_skip_simple()?,
            }
            match c.json_peek()? {
                b',' => c.i += 1,
                b'}' => break,
                _ => return None,
            }
        }
    }
    c.i += 1;
    Some((f.finish()?, c.i))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{edn_map, json_object};
    use crate::error::ParseError;
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
}
