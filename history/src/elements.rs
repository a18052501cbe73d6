//! Streaming the elements of a document that is one long sequence (the
//! array of an Elle JSON or TimeKiller file, the operation maps of an EDN
//! file), so that such a file is never held whole beside the model.
//!
//! The input is read in blocks. A [`Grammar`] finds where each element
//! starts and ends (brackets, strings and comments only: no values are
//! built), and the elements found in a block are parsed and handed on in
//! file order. An element cut by the end of a block is carried over to the
//! next one; memory is a block plus the largest element.

use std::io::{self, Read};
use std::path::Path;

use crate::error::ParseError;

/// Bytes read per block.
const BLOCK: usize = 4 << 20;

/// What a [`Grammar`] sees at the front of the unread input.
pub(crate) enum Step<P> {
    /// `skip` bytes of separators, then one element of `len` bytes, at
    /// nesting `depth` in the document; `pre`: the element already parsed
    /// by the grammar's fast path, if it took it.
    Element {
        skip: usize,
        len: usize,
        depth: usize,
        pre: Option<P>,
    },
    /// `n` bytes of separators or structure, and no element.
    Skip(usize),
    /// The input ends here, as it may.
    End,
    /// More input is needed to decide.
    More,
    /// The input is wrong `at` bytes from the front.
    Error { at: usize, message: String },
}

/// The structure around the elements of a document.
pub(crate) trait Grammar {
    /// What the grammar's fast path makes of an element.
    type Pre;

    /// Says what comes first in `bytes` (the unread input, which starts on
    /// line `line`; `eof`: nothing follows). The state may only change
    /// when the answer is not [`Step::More`].
    fn step(&mut self, bytes: &[u8], eof: bool, line: usize) -> Step<Self::Pre>;
}

/// The closing brackets a value still needs, innermost last. Parsers refuse
/// nesting deeper than 128 levels, so a form deeper than [`Closers::MAX`]
/// is ended there, for the parser to refuse.
struct Closers {
    open: [u8; Closers::MAX],
    depth: usize,
}

impl Closers {
    const MAX: usize = 160;

    fn new() -> Closers {
        Closers {
            open: [0; Closers::MAX],
            depth: 0,
        }
    }

    /// Opens a level; false when too deep.
    fn push(&mut self, close: u8) -> bool {
        if self.depth == Closers::MAX {
            return false;
        }
        self.open[self.depth] = close;
        self.depth += 1;
        true
    }

    /// Closes a level with `c`: true when that ends the value (the
    /// outermost level, or a bracket that does not match).
    fn close(&mut self, c: u8) -> bool {
        if self.depth == 0 {
            return true;
        }
        self.depth -= 1;
        self.open[self.depth] != c || self.depth == 0
    }
}

/// Newlines in `b`.
pub(crate) fn newlines(b: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', b).count()
}

/// A fast path for the common shape of an element: the element at the
/// front of the bytes (an opening bracket first) and its length, read in
/// the same pass that finds where it ends; `None` leaves the element to
/// the grammar's extent scan and the general parser. It must only answer
/// for an element whose end the extent scan would put at the same place.
pub(crate) type FastFn<T> = fn(&[u8]) -> Option<(T, usize)>;

/// One element found in a block: its first line, its byte range, its
/// depth, what the fast path made of it.
type Found<P> = (usize, usize, usize, usize, Option<P>);

/// Reads `input`, handing each element (its first line, depth, text, and
/// what the grammar's fast path made of it) to `parse`, and the results in
/// file order to `take`. An element that is not
/// UTF-8 is an error naming its line and the byte offset.
pub(crate) fn for_each_element<R, G, T, P, F>(
    mut input: R,
    path: Option<&Path>,
    mut grammar: G,
    parse: P,
    mut take: F,
) -> Result<(), ParseError>
where
    R: Read,
    G: Grammar,
    P: Fn(usize, usize, &str, Option<G::Pre>) -> Result<T, ParseError>,
    F: FnMut(T) -> Result<(), ParseError>,
{
    let io_err = |e: io::Error| ParseError::io(path, e);
    let mut buf: Vec<u8> = Vec::new();
    let mut eof = fill(&mut input, &mut buf, BLOCK).map_err(io_err)?;
    let mut pos = if buf.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut line = 1usize;
    let mut offset = 0u64; // of buf[0] in the input
    loop {
        let mut found: Vec<Found<G::Pre>> = Vec::new();
        let mut stop: Option<Result<(), ParseError>> = None;
        loop {
            match grammar.step(&buf[pos..], eof, line) {
                Step::Element {
                    skip,
                    len,
                    depth,
                    pre,
                } => {
                    line += newlines(&buf[pos..pos + skip]);
                    let start = pos + skip;
                    found.push((line, start, start + len, depth, pre));
                    line += newlines(&buf[start..start + len]);
                    pos = start + len;
                }
                Step::Skip(n) => {
                    line += newlines(&buf[pos..pos + n]);
                    pos += n;
                }
                Step::End => {
                    stop = Some(Ok(()));
                    break;
                }
                Step::More if !eof => break,
                Step::More => {
                    stop = Some(Err(ParseError::at(
                        path,
                        line + newlines(&buf[pos..]),
                        "unexpected end of input",
                    )));
                    break;
                }
                Step::Error { at, message } => {
                    let at_line = line + newlines(&buf[pos..pos + at]);
                    stop = Some(Err(ParseError::at(path, at_line, message)));
                    break;
                }
            }
        }
        run(&buf, offset, found, path, &parse, &mut take)?;
        if let Some(r) = stop {
            return r;
        }
        // Keep the unread tail (a cut element) and read on.
        buf.drain(..pos);
        offset += pos as u64;
        pos = 0;
        let target = buf.len() + BLOCK;
        eof = fill(&mut input, &mut buf, target).map_err(io_err)?;
    }
}

/// Parses the elements `found` in `buf`, handing the results in order to
/// `take`. One thread: the elements' values are many small allocations,
/// and freeing them on another thread than the one that made them costs
/// more (in glibc's allocator) than the second core gains.
fn run<T, Pre, P, F>(
    buf: &[u8],
    offset: u64,
    found: Vec<Found<Pre>>,
    path: Option<&Path>,
    parse: &P,
    take: &mut F,
) -> Result<(), ParseError>
where
    P: Fn(usize, usize, &str, Option<Pre>) -> Result<T, ParseError>,
    F: FnMut(T) -> Result<(), ParseError>,
{
    // One check of the whole stretch is much cheaper than one per element;
    // if it fails (the bad bytes may be between elements), each element is
    // checked alone, which names the line.
    let whole = match (found.first(), found.last()) {
        (Some(first), Some(last)) => std::str::from_utf8(&buf[first.1..last.2])
            .ok()
            .map(|w| (first.1, w)),
        _ => None,
    };
    for (line, s, e, depth, pre) in found {
        if let Some(text) = whole.and_then(|(base, w)| w.get(s - base..e - base)) {
            take(parse(line, depth, text, pre)?)?;
            continue;
        }
        let bytes = &buf[s..e];
        let text = std::str::from_utf8(bytes).map_err(|err| {
            let at = err.valid_up_to();
            ParseError::at(
                path,
                line + newlines(&bytes[..at]),
                format!(
                    "invalid UTF-8 at byte {}: this is not a text file",
                    offset + (s + at) as u64
                ),
            )
        })?;
        take(parse(line, depth, text, pre)?)?;
    }
    Ok(())
}

/// Reads into `buf` until it holds `target` bytes; true at the end of the
/// input.
fn fill<R: Read>(input: &mut R, buf: &mut Vec<u8>, target: usize) -> io::Result<bool> {
    while buf.len() < target {
        let have = buf.len();
        // Grow by steps, so that a small input costs a small buffer.
        buf.resize((have + have.max(64 << 10)).min(target), 0);
        match input.read(&mut buf[have..]) {
            Ok(0) => {
                buf.truncate(have);
                return Ok(true);
            }
            Ok(n) => buf.truncate(have + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(have),
            Err(e) => {
                buf.truncate(have);
                return Err(e);
            }
        }
    }
    Ok(false)
}

// ------------------------------------------------------------- JSON ----

/// Where the JSON reader is in `[ e, e, ... ]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum JsonAt {
    Start,
    Open { first: bool },
    AfterElement,
    Closed,
}

/// One top-level JSON array, its elements being the elements; objects
/// go to the fast path first, if there is one.
pub(crate) struct JsonArray<T = ()> {
    at: JsonAt,
    fast: Option<FastFn<T>>,
}

impl JsonArray {
    pub(crate) fn new() -> JsonArray {
        JsonArray::with_fast(None)
    }
}

impl<T> JsonArray<T> {
    /// An array whose objects `fast` reads where it can.
    pub(crate) fn with_fast(fast: Option<FastFn<T>>) -> JsonArray<T> {
        JsonArray {
            at: JsonAt::Start,
            fast,
        }
    }
}

fn json_ws(b: &[u8]) -> usize {
    b.iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(b.len())
}

/// The length of the JSON value at the front of `b` (found by its brackets
/// and strings; a mismatched bracket ends it, for the parser to refuse), or
/// `None` when `b` ends first.
fn json_extent(b: &[u8]) -> Option<usize> {
    match b.first()? {
        b'{' | b'[' => {
            let mut stack = Closers::new();
            let mut i = 0;
            while i < b.len() {
                let ends = match b[i] {
                    b'{' => !stack.push(b'}'),
                    b'[' => !stack.push(b']'),
                    c @ (b'}' | b']') => stack.close(c),
                    b'"' => {
                        i += string_len(&b[i..])? - 1;
                        false
                    }
                    _ => false,
                };
                if ends {
                    return Some(i + 1);
                }
                i += 1;
            }
            None
        }
        b'"' => string_len(b),
        b']' | b'}' | b',' => Some(1),
        _ => b
            .iter()
            .position(|c| matches!(c, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n')),
    }
}

/// The length of the string (JSON or EDN) at the front of `b`, quotes
/// included, or `None` when `b` ends first.
fn string_len(b: &[u8]) -> Option<usize> {
    let mut i = 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', &b[i..])?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
        if i > b.len() {
            return None;
        }
    }
}

impl<T> JsonArray<T> {
    /// The element at `b[i]`, found by its brackets and strings.
    fn json_element(&mut self, b: &[u8], i: usize, eof: bool) -> Step<T> {
        match json_extent(&b[i..]) {
            // A value cut by the end of a block could read as another
            // (a number's digits): only the end of input ends it.
            Some(n) if i + n < b.len() || eof => {
                self.at = JsonAt::AfterElement;
                Step::Element {
                    skip: i,
                    len: n,
                    depth: 1,
                    pre: None,
                }
            }
            None if eof => {
                self.at = JsonAt::AfterElement;
                Step::Element {
                    skip: i,
                    len: b.len() - i,
                    depth: 1,
                    pre: None,
                }
            }
            _ => Step::More,
        }
    }
}

impl<T> Grammar for JsonArray<T> {
    type Pre = T;

    fn step(&mut self, b: &[u8], eof: bool, _line: usize) -> Step<T> {
        let i = json_ws(b);
        let Some(&c) = b.get(i) else {
            if !eof {
                return Step::More;
            }
            let message = match self.at {
                JsonAt::Closed => return Step::End,
                JsonAt::Start => "the file is empty",
                _ => "unexpected end of file inside the array (missing `]`)",
            };
            return Step::Error {
                at: i,
                message: message.into(),
            };
        };
        match self.at {
            JsonAt::Start if c == b'[' => {
                self.at = JsonAt::Open { first: true };
                Step::Skip(i + 1)
            }
            JsonAt::Start => Step::Error {
                at: i,
                message: "expected a JSON array `[`".into(),
            },
            JsonAt::Open { first: true } if c == b']' => {
                self.at = JsonAt::Closed;
                Step::Skip(i + 1)
            }
            JsonAt::Open { .. } if c == b'{' && self.fast.is_some() => {
                let fast = self.fast.expect("checked");
                match fast(&b[i..]) {
                    Some((v, n)) if i + n < b.len() || eof => {
                        self.at = JsonAt::AfterElement;
                        Step::Element {
                            skip: i,
                            len: n,
                            depth: 1,
                            pre: Some(v),
                        }
                    }
                    _ => self.json_element(b, i, eof),
                }
            }
            JsonAt::Open { .. } => self.json_element(b, i, eof),
            JsonAt::AfterElement => match c {
                b',' => {
                    self.at = JsonAt::Open { first: false };
                    Step::Skip(i + 1)
                }
                b']' => {
                    self.at = JsonAt::Closed;
                    Step::Skip(i + 1)
                }
                _ => Step::Error {
                    at: i,
                    message: "expected `,` or `]` after an array element".into(),
                },
            },
            JsonAt::Closed => Step::Error {
                at: i,
                message: "unexpected data after the end of the array".into(),
            },
        }
    }
}

/// Deserializes one JSON array element that starts on `line`, naming the
/// line of anything wrong in it.
pub(crate) fn json_element<'de, T: serde::Deserialize<'de>>(
    text: &'de str,
    line: usize,
    path: Option<&Path>,
) -> Result<T, ParseError> {
    use crate::formats::util::json_message;
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<T>();
    match stream.next() {
        Some(Ok(v)) => {
            let used = stream.byte_offset();
            if text[used..].trim_start().is_empty() {
                Ok(v)
            } else {
                let at = used + json_ws(&text.as_bytes()[used..]);
                Err(ParseError::at(
                    path,
                    line + newlines(&text.as_bytes()[..at]),
                    "expected `,` or `]` after an array element",
                ))
            }
        }
        Some(Err(e)) if e.is_eof() => Err(ParseError::at(
            path,
            line,
            format!(
                "the element that starts on this line is cut short ({}; missing `]`?)",
                json_message(&e)
            ),
        )),
        Some(Err(e)) => Err(ParseError::at(
            path,
            line + e.line().saturating_sub(1),
            json_message(&e),
        )),
        None => Err(ParseError::at(
            path,
            line,
            "unexpected end of file inside the array (missing `]`)",
        )),
    }
}

// -------------------------------------------------------------- EDN ----

/// Where the EDN reader is: at the top level, or inside one top-level
/// vector or list of operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EdnAt {
    Top,
    InSeq { close: u8, open_line: usize },
}

/// An EDN file of operation maps, at the top level or inside top-level
/// vectors or lists. An element is one form, or a `#_` discard.
/// Maps go to the fast path first, if there is one.
pub(crate) struct EdnForms<T = ()> {
    at: EdnAt,
    fast: Option<FastFn<T>>,
}

impl<T> EdnForms<T> {
    /// The forms of a file, maps read by `fast` where it can.
    pub(crate) fn with_fast(fast: Option<FastFn<T>>) -> EdnForms<T> {
        EdnForms {
            at: EdnAt::Top,
            fast,
        }
    }

    /// The nesting depth of this grammar's elements (for the reader).
    pub(crate) fn depth(&self) -> usize {
        match self.at {
            EdnAt::Top => 0,
            EdnAt::InSeq { .. } => 1,
        }
    }
}

fn edn_delim(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
    ) || c == 0x0c
}

/// Skips whitespace, commas and `;` comments; `None` when a comment runs to
/// the end of `b`.
fn edn_ws(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(&c) = b.get(i) {
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b',' | 0x0c => i += 1,
            b';' => i += memchr::memchr(b'\n', &b[i..])?,
            _ => return Some(i),
        }
    }
    Some(i)
}

/// A bound on the `#_` and tag prefixes [`edn_form`] follows (deeper
/// nesting is the reader's error to report).
const EDN_PREFIXES: usize = 256;

/// The end of the EDN form starting at `b[i]`; `None` when `b` ends
/// first. Brackets, strings, comments and character literals are followed;
/// a mismatched bracket ends the form, for the reader to refuse.
fn edn_form(b: &[u8], i: usize, prefixes: usize) -> Option<usize> {
    let token = |mut j: usize| -> Option<usize> {
        while j < b.len() {
            if edn_delim(b[j]) {
                return Some(j);
            }
            j += 1;
        }
        None
    };
    match *b.get(i)? {
        b'{' | b'[' | b'(' => {
            let mut stack = Closers::new();
            let mut j = i;
            while j < b.len() {
                let ends = match b[j] {
                    b'{' => !stack.push(b'}'),
                    b'[' => !stack.push(b']'),
                    b'(' => !stack.push(b')'),
                    c @ (b'}' | b']' | b')') => stack.close(c),
                    b'"' => {
                        j += string_len(&b[j..])? - 1;
                        false
                    }
                    b';' => {
                        j += memchr::memchr(b'\n', &b[j..])?;
                        false
                    }
                    b'\\' => {
                        j += 1;
                        false
                    }
                    _ => false,
                };
                if ends {
                    return Some(j + 1);
                }
                j += 1;
            }
            None
        }
        b'"' => Some(i + string_len(&b[i..])?),
        b'\\' => {
            // One character (even a delimiter), then a name's letters.
            let mut j = i + 1;
            let first = *b.get(j)?;
            j += 1;
            if first >= 0x80 {
                while b.get(j).is_some_and(|&c| (0x80..0xc0).contains(&c)) {
                    j += 1;
                }
            }
            token(j)
        }
        b'#' => match *b.get(i + 1)? {
            b'{' => edn_form(b, i + 1, prefixes),
            b'"' => Some(i + 1 + string_len(&b[i + 1..])?),
            b'#' => token(i + 2),
            c if !edn_delim(c) && prefixes < EDN_PREFIXES => {
                // `#_ form` (a discard) or `#tag form`: the prefix and the
                // form after it.
                let j = if b[i + 1] == b'_' {
                    i + 2
                } else {
                    token(i + 1)?
                };
                let j = edn_ws(b, j)?;
                if j >= b.len() {
                    return None;
                }
                edn_form(b, j, prefixes + 1)
            }
            c if !edn_delim(c) => token(i + 1),
            _ => Some(i + 1),
        },
        b'}' | b']' | b')' => Some(i + 1),
        _ => token(i),
    }
}

impl<T> Grammar for EdnForms<T> {
    type Pre = T;

    fn step(&mut self, b: &[u8], eof: bool, line: usize) -> Step<T> {
        let Some(i) = edn_ws(b, 0) else {
            return if eof { Step::Skip(b.len()) } else { Step::More };
        };
        let Some(&c) = b.get(i) else {
            if !eof {
                return Step::More;
            }
            return match self.at {
                EdnAt::Top => Step::End,
                EdnAt::InSeq { open_line, .. } => Step::Error {
                    at: i,
                    message: format!(
                        "unexpected end of input: the sequence opened on line {open_line} is not closed"
                    ),
                },
            };
        };
        match self.at {
            EdnAt::Top if c == b'[' || c == b'(' => {
                self.at = EdnAt::InSeq {
                    close: if c == b'[' { b']' } else { b')' },
                    open_line: line + newlines(&b[..i]),
                };
                return Step::Skip(i + 1);
            }
            EdnAt::InSeq { close, .. } if c == close => {
                self.at = EdnAt::Top;
                return Step::Skip(i + 1);
            }
            _ => {}
        }
        if let (b'{', Some(fast)) = (c, self.fast) {
            if let Some((v, n)) = fast(&b[i..]) {
                if i + n < b.len() || eof {
                    return Step::Element {
                        skip: i,
                        len: n,
                        depth: self.depth(),
                        pre: Some(v),
                    };
                }
            }
        }
        match edn_form(b, i, 0) {
            // A token cut by the end of a block could read as another.
            Some(end) if end < b.len() || eof => Step::Element {
                skip: i,
                len: end - i,
                depth: self.depth(),
                pre: None,
            },
            None if eof => Step::Element {
                skip: i,
                len: b.len() - i,
                depth: self.depth(),
                pre: None,
            },
            _ => Step::More,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements<G: Grammar>(input: &[u8], g: G) -> Result<Vec<(usize, String)>, ParseError> {
        let mut out = Vec::new();
        for_each_element(
            input,
            None,
            g,
            |line, _, s, _| Ok((line, s.to_string())),
            |x| {
                out.push(x);
                Ok(())
            },
        )?;
        Ok(out)
    }

    #[test]
    fn json_elements_and_their_lines() {
        let got = elements(
            b"[\n{\"a\":\"]}\\\"\"},\n\n[1,[2]] , 3,\"x\"]\n",
            JsonArray::new(),
        )
        .unwrap();
        let want = [
            (2, "{\"a\":\"]}\\\"\"}"),
            (4, "[1,[2]]"),
            (4, "3"),
            (4, "\"x\""),
        ];
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0, g.1.as_str()), w);
        }
        assert!(elements(b"[]", JsonArray::new()).unwrap().is_empty());
        let e = elements(b"[1,\n2\n3]", JsonArray::new()).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
    }

    fn json_values(s: &str) -> Result<Vec<(usize, serde_json::Value)>, ParseError> {
        let mut out = Vec::new();
        for_each_element(
            s.as_bytes(),
            None,
            JsonArray::new(),
            |line, _, text, _| Ok((line, json_element::<serde_json::Value>(text, line, None)?)),
            |x| {
                out.push(x);
                Ok(())
            },
        )?;
        Ok(out)
    }

    #[test]
    fn json_errors_name_the_line() {
        let got = json_values("[\n{\"a\":1},\n\n{\"a\":2}\n]\n").unwrap();
        assert_eq!(got[0].0, 2);
        assert_eq!(got[1].0, 4);
        let cases = [
            ("[\n{\"a\":1},\n{\"a\":\n", 3),
            ("[\n{\"a\":1}\n{\"a\":2}]", 3),
            ("", 1),
            ("{}", 1),
            ("[{\"a\":1}]\n\n x", 3),
            ("[\n{\"a\":1},\n", 3),
            ("[\n{\"a\":\n[1}\n]", 3),
            ("[\n1x]", 2),
            ("[\n1,\n]", 3),
        ];
        for (s, line) in cases {
            let e = json_values(s).unwrap_err();
            assert_eq!(e.line, Some(line), "{s:?}: {e}");
        }
    }

    #[test]
    fn edn_forms_and_their_lines() {
        let input =
            b"; c\n{:a \"}\" :b \\} :c [1 2]}\n#_ {:x 1} #tag {:y 2}\n[{:z 3}\n {:w (4)}]\n";
        let got = elements(input, EdnForms::<()>::with_fast(None)).unwrap();
        let want = [
            (2, "{:a \"}\" :b \\} :c [1 2]}"),
            (3, "#_ {:x 1}"),
            (3, "#tag {:y 2}"),
            (4, "{:z 3}"),
            (5, "{:w (4)}"),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0, g.1.as_str()), w);
        }
    }

    #[test]
    fn elements_cut_by_blocks_stay_whole() {
        // Elements long enough to straddle the end of every block.
        let n = 3 * BLOCK / 1000;
        let mut s = String::from("[");
        for i in 0..n {
            s.push_str(&format!(
                "{{\"k\":{i},\"pad\":\"{}\"}},\n",
                "x".repeat(i % 977)
            ));
        }
        s.push_str("123456789]");
        let got = elements(s.as_bytes(), JsonArray::new()).unwrap();
        assert_eq!(got.len(), n + 1);
        for (i, (line, text)) in got.iter().enumerate().take(n) {
            assert_eq!(*line, i + 1);
            assert!(text.starts_with(&format!("{{\"k\":{i},")), "{text}");
        }
        assert_eq!(got[n].1, "123456789");
    }
}
