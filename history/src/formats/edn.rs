//! A reader of EDN (Clojure's data notation), enough for Jepsen and Elle
//! histories: values borrow from the input where they can, nesting is
//! bounded, comments, discards and tagged literals are handled. The Elle
//! importer ([`super::elle_edn`]) turns the values into transactions.

use std::borrow::Cow;
use std::path::Path;

use crate::error::ParseError;

/// Nesting deeper than this is refused (a garbled file must not overflow
/// the stack).
const MAX_DEPTH: usize = 128;

/// An EDN value, borrowing from the input where it can.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Edn<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Char(char),
    Keyword(&'a str),
    Symbol(&'a str),
    Vector(Vec<Edn<'a>>),
    List(Vec<Edn<'a>>),
    Set(Vec<Edn<'a>>),
    Map(Vec<(Edn<'a>, Edn<'a>)>),
}

impl Edn<'_> {
    /// A short name of the value's type, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Edn::Nil => "nil",
            Edn::Bool(_) => "a boolean",
            Edn::Int(_) => "an integer",
            Edn::Float(_) => "a float",
            Edn::Str(_) => "a string",
            Edn::Char(_) => "a character",
            Edn::Keyword(_) => "a keyword",
            Edn::Symbol(_) => "a symbol",
            Edn::Vector(_) => "a vector",
            Edn::List(_) => "a list",
            Edn::Set(_) => "a set",
            Edn::Map(_) => "a map",
        }
    }

    /// The value written back as EDN (for `:error` values).
    pub(crate) fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let seq = |out: &mut String, open: &str, close: &str, items: &[Edn]| {
            out.push_str(open);
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                v.render(out);
            }
            out.push_str(close);
        };
        match self {
            Edn::Nil => out.push_str("nil"),
            Edn::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            Edn::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Edn::Float(v) => {
                let _ = write!(out, "{v}");
            }
            Edn::Str(s) => {
                let _ = write!(out, "{s:?}");
            }
            Edn::Char(c) => {
                let _ = write!(out, "\\{c}");
            }
            Edn::Keyword(k) => {
                let _ = write!(out, ":{k}");
            }
            Edn::Symbol(s) => out.push_str(s),
            Edn::Vector(v) => seq(out, "[", "]", v),
            Edn::List(v) => seq(out, "(", ")", v),
            Edn::Set(v) => seq(out, "#{", "}", v),
            Edn::Map(kv) => {
                out.push('{');
                for (i, (k, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    k.render(out);
                    out.push(' ');
                    v.render(out);
                }
                out.push('}');
            }
        }
    }
}

/// A small EDN reader that counts lines as it goes.
pub(crate) struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
    line: usize,
    path: Option<&'a Path>,
}

fn is_delim(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
    ) || c == 0x0c
}

impl<'a> Reader<'a> {
    #[cfg(test)]
    pub(crate) fn new(s: &'a str, path: Option<&'a Path>) -> Reader<'a> {
        let pos = if s.starts_with('\u{feff}') { 3 } else { 0 };
        Reader {
            s,
            b: s.as_bytes(),
            pos,
            line: 1,
            path,
        }
    }

    /// A reader of `s`, a piece of a file that starts on line `line`.
    pub(crate) fn at_line(s: &'a str, path: Option<&'a Path>, line: usize) -> Reader<'a> {
        Reader {
            s,
            b: s.as_bytes(),
            pos: 0,
            line,
            path,
        }
    }

    pub(crate) fn line(&self) -> usize {
        self.line
    }

    fn err(&self, msg: impl Into<String>) -> ParseError {
        ParseError::at(self.path, self.line, msg)
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Skips whitespace, commas, `;` comments and `#_` discarded forms.
    pub(crate) fn skip_ws(&mut self, depth: usize) -> Result<(), ParseError> {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                b' ' | b'\t' | b'\r' | b',' | 0x0c => self.pos += 1,
                b';' => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                b'#' if self.b.get(self.pos + 1) == Some(&b'_') => {
                    if depth > MAX_DEPTH {
                        return Err(self.err(format!("`#_` nested deeper than {MAX_DEPTH} levels")));
                    }
                    self.pos += 2;
                    self.skip_ws(depth + 1)?;
                    if self.peek().is_none() {
                        return Err(self.err("`#_` at the end of the input discards nothing"));
                    }
                    self.value(depth + 1)?;
                }
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    /// Reads a token (symbol, keyword, number) up to the next delimiter.
    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if is_delim(c) {
                break;
            }
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    /// Reads one value (after `skip_ws`).
    pub(crate) fn value(&mut self, depth: usize) -> Result<Edn<'a>, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("values nested deeper than {MAX_DEPTH} levels")));
        }
        let Some(c) = self.peek() else {
            return Err(self.err("unexpected end of input: a value was expected"));
        };
        match c {
            b'{' => {
                let open = self.line;
                self.pos += 1;
                let items = self.seq(b'}', "map", open, depth)?;
                if items.len() % 2 != 0 {
                    return Err(ParseError::at(
                        self.path,
                        open,
                        "a map has an odd number of forms (a key without a value)",
                    ));
                }
                let mut kv = Vec::with_capacity(items.len() / 2);
                let mut it = items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    kv.push((k, v));
                }
                Ok(Edn::Map(kv))
            }
            b'[' => {
                let open = self.line;
                self.pos += 1;
                Ok(Edn::Vector(self.seq(b']', "vector", open, depth)?))
            }
            b'(' => {
                let open = self.line;
                self.pos += 1;
                Ok(Edn::List(self.seq(b')', "list", open, depth)?))
            }
            b')' | b']' | b'}' => Err(self.err(format!(
                "unexpected `{}` with nothing open to close",
                c as char
            ))),
            b'"' => self.string(),
            b'\\' => {
                self.pos += 1;
                let start = self.pos;
                // A character literal is at least one character, even a delimiter.
                if let Some(ch) = self.s[start..].chars().next() {
                    self.pos += ch.len_utf8();
                } else {
                    return Err(self.err("unexpected end of input after `\\`"));
                }
                let rest = self.token();
                let name = &self.s[start..start + (self.pos - start)];
                let ch = match name {
                    "newline" => '\n',
                    "space" => ' ',
                    "tab" => '\t',
                    "return" => '\r',
                    "formfeed" => '\x0c',
                    "backspace" => '\x08',
                    _ if rest.is_empty() => name.chars().next().unwrap_or(' '),
                    _ if name.starts_with('u') && name.len() == 5 => {
                        u32::from_str_radix(&name[1..], 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| self.err(format!("bad character literal \\{name}")))?
                    }
                    _ => return Err(self.err(format!("unknown character literal \\{name}"))),
                };
                Ok(Edn::Char(ch))
            }
            b'#' => {
                self.pos += 1;
                match self.peek() {
                    Some(b'{') => {
                        let open = self.line;
                        self.pos += 1;
                        Ok(Edn::Set(self.seq(b'}', "set", open, depth)?))
                    }
                    Some(b'"') => self.string(), // a regex, kept as its text
                    Some(b'#') => {
                        self.pos += 1;
                        let t = self.token();
                        match t {
                            "Inf" => Ok(Edn::Float(f64::INFINITY)),
                            "-Inf" => Ok(Edn::Float(f64::NEG_INFINITY)),
                            "NaN" => Ok(Edn::Float(f64::NAN)),
                            _ => Err(self.err(format!("unknown symbolic value ##{t}"))),
                        }
                    }
                    Some(c) if !is_delim(c) => {
                        // A tagged literal: #tag value; the tag is dropped.
                        let tag = self.token();
                        self.skip_ws(depth)?;
                        if self.peek().is_none() {
                            return Err(self.err(format!("tag #{tag} has no value")));
                        }
                        self.value(depth + 1)
                    }
                    _ => Err(self.err("a lone `#` is not EDN")),
                }
            }
            _ => {
                let t = self.token();
                self.atom(t)
            }
        }
    }

    fn seq(
        &mut self,
        close: u8,
        what: &str,
        open_line: usize,
        depth: usize,
    ) -> Result<Vec<Edn<'a>>, ParseError> {
        let mut out = Vec::new();
        loop {
            self.skip_ws(depth)?;
            match self.peek() {
                None => {
                    return Err(self.err(format!(
                        "unexpected end of input: the {what} opened on line {open_line} is not closed with `{}`",
                        close as char
                    )))
                }
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(c @ (b')' | b']' | b'}')) => {
                    return Err(self.err(format!(
                        "`{}` closes the {what} opened on line {open_line}, which needs `{}`",
                        c as char, close as char
                    )))
                }
                Some(_) => out.push(self.value(depth + 1)?),
            }
        }
    }

    fn string(&mut self) -> Result<Edn<'a>, ParseError> {
        let open = self.line;
        self.pos += 1;
        let start = self.pos;
        let mut owned: Option<String> = None;
        let mut run = start;
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError::at(
                    self.path,
                    open,
                    "unexpected end of input: the string opened here is not closed",
                ));
            };
            match c {
                b'"' => {
                    let s = match owned {
                        None => Cow::Borrowed(&self.s[start..self.pos]),
                        Some(mut o) => {
                            o.push_str(&self.s[run..self.pos]);
                            Cow::Owned(o)
                        }
                    };
                    self.pos += 1;
                    return Ok(Edn::Str(s));
                }
                b'\\' => {
                    let o = owned.get_or_insert_with(String::new);
                    o.push_str(&self.s[run..self.pos]);
                    self.pos += 1;
                    let Some(e) = self.peek() else { continue };
                    self.pos += 1;
                    match e {
                        b'n' => o.push('\n'),
                        b't' => o.push('\t'),
                        b'r' => o.push('\r'),
                        b'b' => o.push('\x08'),
                        b'f' => o.push('\x0c'),
                        b'"' => o.push('"'),
                        b'\\' => o.push('\\'),
                        b'u' => {
                            let hex = self.s.get(self.pos..self.pos + 4).unwrap_or("");
                            let ch = u32::from_str_radix(hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or_else(|| self.err("bad \\u escape in a string"))?;
                            o.push(ch);
                            self.pos += 4;
                        }
                        b'\n' => {
                            self.line += 1;
                            o.push('\n');
                        }
                        _ => {
                            return Err(
                                self.err(format!("unknown escape `\\{}` in a string", e as char))
                            )
                        }
                    }
                    run = self.pos;
                }
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
    }

    fn atom(&self, t: &'a str) -> Result<Edn<'a>, ParseError> {
        let b = t.as_bytes();
        let Some(&first) = b.first() else {
            return Err(self.err("unexpected character"));
        };
        let numeric = first.is_ascii_digit()
            || (matches!(first, b'+' | b'-') && b.get(1).is_some_and(u8::is_ascii_digit));
        if numeric {
            let body = t.strip_suffix('N').unwrap_or(t);
            if let Ok(v) = body.parse::<i64>() {
                return Ok(Edn::Int(v));
            }
            let all_digits = body
                .trim_start_matches(['+', '-'])
                .bytes()
                .all(|c| c.is_ascii_digit());
            if all_digits {
                return Err(self.err(format!("integer {t} is out of range (64-bit)")));
            }
            let body = t.strip_suffix('M').unwrap_or(t);
            if let Ok(v) = body.parse::<f64>() {
                return Ok(Edn::Float(v));
            }
            if let Some((n, d)) = body.split_once('/') {
                if let (Ok(n), Ok(d)) = (n.parse::<f64>(), d.parse::<f64>()) {
                    return Ok(Edn::Float(n / d));
                }
            }
            return Err(self.err(format!("bad number `{t}`")));
        }
        if let Some(k) = t.strip_prefix(':') {
            let k = k.strip_prefix(':').unwrap_or(k);
            if k.is_empty() {
                return Err(self.err("empty keyword `:`"));
            }
            return Ok(Edn::Keyword(k));
        }
        Ok(match t {
            "nil" => Edn::Nil,
            "true" => Edn::Bool(true),
            "false" => Edn::Bool(false),
            _ => {
                if t.bytes().any(|c| c < 0x20 || c == 0x7f) {
                    return Err(self.err("unexpected control character"));
                }
                Edn::Symbol(t)
            }
        })
    }
}
