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
