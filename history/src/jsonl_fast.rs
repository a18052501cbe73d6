//! A fast path for the transaction lines of the JSONL format: a scanner for
//! exactly the fields a transaction line has, several times faster than
//! the general JSON deserializer on a million-line history.
//!
//! It accepts only what it is sure of: the known transaction fields, each
//! once, strings without escapes, integers without fraction or exponent,
//! the ops `r`, `w`, `i`, `d`, `a`. Anything else (a header, fault or end
//! line, an escape, an unknown field, a range read, an error of any kind)
//! gives `None`, and the line goes to the general parser, which then
//! decides, and words the error, exactly as before.

use crate::model::{DbTs, Key, Op, Status, Txn, Value};

/// A cursor over one line.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string without escapes or control characters (the line is UTF-8
    /// already).
    fn str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        let rest = &self.b[start..];
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[len] != b'"' || rest[..len].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i = start + len + 1;
        std::str::from_utf8(&rest[..len]).ok()
    }

    /// Whether the string here (as [`str`](Self::str) accepts it) is
    /// `want`, without making it a `str`: an ASCII string needs no UTF-8
    /// check.
    fn skipped_str_is(&mut self, want: &str) -> Option<bool> {
        let text = self.name()?;
        (text.is_ascii() || std::str::from_utf8(text).is_ok()).then(|| text == want.as_bytes())
    }

    /// A short string compared as bytes (a field name, a status, an op
    /// code): no escapes, no control characters, and no UTF-8 check, since
    /// only ASCII names are accepted from it. A scan byte by byte beats
    /// `memchr` on a few bytes.
    fn name(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let rest = &self.b[start..];
        let len = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.i = start + len + 1;
        Some(&rest[..len])
    }

    /// `null`.
    #[inline]
    fn null(&mut self) -> Option<()> {
        self.ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            Some(())
        } else {
            None
        }
    }

    /// An integer as JSON writes it: `-?(0|[1-9][0-9]*)`, then neither a
    /// fraction nor an exponent. The magnitude and its sign.
    #[inline]
    fn int(&mut self) -> Option<(bool, u64)> {
        self.ws();
        let b = self.b;
        let mut i = self.i;
        let neg = b.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        let start = i;
        // Nineteen digits cannot overflow a u64: the digits are summed
        // unchecked, and only a longer number is summed again, checked.
        let mut v: u64 = 0;
        while let Some(&c) = b.get(i) {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && b[start] == b'0') {
            return None;
        }
        if digits > 19 {
            v = b[start..i].iter().try_fold(0u64, |v, &c| {
                v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            })?;
        }
        if let Some(b'.' | b'e' | b'E') = b.get(i) {
            return None;
        }
        self.i = i;
        Some((neg, v))
    }

    #[inline]
    fn u64(&mut self) -> Option<u64> {
        match self.int()? {
            (false, v) => Some(v),
            (true, 0) => Some(0),
            (true, _) => None,
        }
    }

    #[inline]
    fn i64(&mut self) -> Option<i64> {
        match self.int()? {
            (false, v) => i64::try_from(v).ok(),
            (true, v) if v <= 1 << 63 => Some((v as i128).wrapping_neg() as i64),
            (true, _) => None,
        }
    }

    #[inline]
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.peek()? == b'n' {
            self.null().map(|()| None)
        } else {
            self.u64().map(Some)
        }
    }

    fn opt_string(&mut self) -> Option<Option<Box<str>>> {
        if self.peek()? == b'n' {
            self.null().map(|()| None)
        } else {
            self.str().map(|s| Some(s.into()))
        }
    }

    /// [`opt_string`](Self::opt_string) for a field that is not kept: the
    /// same lines are accepted, nothing is allocated.
    fn skip_opt_string(&mut self) -> Option<Option<Box<str>>> {
        if self.peek()? == b'n' {
            self.null().map(|()| None)
        } else {
            self.str().map(|_| None)
        }
    }

    fn key(&mut self) -> Option<Key> {
        if self.peek()? == b'"' {
            self.str().map(Key::str)
        } else {
            self.i64().map(Key::Int)
        }
    }

    /// `["r", key, value]` and the other register and list ops.
    fn op(&mut self) -> Option<Op> {
        self.eat(b'[')?;
        self.ws();
        // Every op code is one letter: read it in place, not as a name.
        let code = match self.b.get(self.i..self.i + 3) {
            Some(&[b'"', c, b'"']) => c,
            _ => return None,
        };
        self.i += 3;
        self.eat(b',')?;
        let key = self.key()?;
        self.eat(b',')?;
        let op = match code {
            b'r' => match self.peek()? {
                b'n' => {
                    self.null()?;
                    Op::Read { key, value: None }
                }
                b'[' => {
                    self.i += 1;
                    let mut vs: Vec<Value> = Vec::new();
                    if self.peek()? == b']' {
                        self.i += 1;
                    } else {
                        loop {
                            vs.push(self.i64()?);
                            match self.peek()? {
                                b',' => self.i += 1,
                                b']' => {
                                    self.i += 1;
                                    break;
                                }
                                _ => return None,
                            }
                        }
                    }
                    Op::ReadList {
                        key,
                        values: Some(vs),
                    }
                }
                _ => Op::Read {
                    key,
                    value: Some(self.i64()?),
                },
            },
            b'w' => Op::Write {
                key,
                value: self.i64()?,
            },
            b'i' => Op::Insert {
                key,
                value: self.i64()?,
            },
            b'd' => Op::Delete {
                key,
                value: self.i64()?,
            },
            b'a' => Op::Append {
                key,
                value: self.i64()?,
            },
            _ => return None,
        };
        self.eat(b']')?;
        Some(op)
    }

    /// The ops, parsed into `scratch` first so that the vector kept is
    /// allocated once, at its final size: a vector grown by pushes has room
    /// for 4 ops, and shrinking it is a second trip to the allocator.
    fn ops(&mut self, scratch: &mut Vec<Op>) -> Option<Vec<Op>> {
        self.eat(b'[')?;
        scratch.clear();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(Vec::new());
        }
        loop {
            scratch.push(self.op()?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    let mut ops = Vec::with_capacity(scratch.len());
                    ops.append(scratch);
                    return Some(ops);
                }
                _ => return None,
            }
        }
    }

    /// `{"start": n, "commit": n}` (commit optional or null).
    fn dbts(&mut self) -> Option<Option<DbTs>> {
        if self.peek()? == b'n' {
            return self.null().map(|()| None);
        }
        self.eat(b'{')?;
        let (mut start, mut commit, mut seen_commit) = (None, None, false);
        loop {
            match self.name()? {
                b"start" if start.is_none() => {
                    self.eat(b':')?;
                    start = Some(self.u64()?);
                }
                b"commit" if !seen_commit => {
                    self.eat(b':')?;
                    commit = self.opt_u64()?;
                    seen_commit = true;
                }
                _ => return None,
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(Some(DbTs {
                        start: start?,
                        commit,
                    }));
                }
                _ => return None,
            }
        }
    }
}

/// Parses a transaction line of the usual shape; `None` sends the line to
/// the general parser.
pub(crate) fn parse_txn(line: &[u8]) -> Option<Txn> {
    parse_txn_kept(line, Kept::All)
}

/// What a read keeps of each transaction of a JSONL history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Every field.
    All,
    /// What a check reads: not `kind` or `error`, which are checked as
    /// text and dropped (two allocations fewer a transaction, a tenth of a
    /// million-transaction history's memory); but a `kind` of `final-read`
    /// is kept, since a streamed list check lets go of a list once such a
    /// read has read it, and so is `node`, which counterexamples name.
    Check,
}

/// [`parse_txn`], keeping `kept`: the lines accepted are the same.
pub(crate) fn parse_txn_kept(line: &[u8], kept: Kept) -> Option<Txn> {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<Op>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|s| parse_txn_with(line, &mut s.borrow_mut(), kept))
}

/// [`parse_txn`] with a scratch vector for the ops.
fn parse_txn_with(line: &[u8], scratch: &mut Vec<Op>, kept: Kept) -> Option<Txn> {
    let mut c = Cur { b: line, i: 0 };
    c.eat(b'{')?;
    let mut t = Txn::new(0, 0, Status::Ok, Vec::new());
    // Which fields were seen: a repeated field is the general parser's to
    // refuse.
    let mut seen = 0u16;
    loop {
        let name = c.name()?;
        c.eat(b':')?;
        let bit = match name {
            b"id" => {
                t.id = c.u64()?;
                1
            }
            b"session" => {
                t.session = c.u64()?;
                2
            }
            b"status" => {
                t.status = match c.name()? {
                    b"ok" => Status::Ok,
                    b"fail" => Status::Fail,
                    b"info" => Status::Info,
                    _ => return None,
                };
                4
            }
            b"start" => {
                t.start = c.opt_u64()?;
                8
            }
            b"end" => {
                t.end = c.opt_u64()?;
                16
            }
            b"ops" => {
                t.ops = c.ops(scratch)?;
                32
            }
            b"error" => {
                t.error = match kept {
                    Kept::All => c.opt_string()?,
                    Kept::Check => c.skip_opt_string()?,
                };
                64
            }
            b"dbts" => {
                t.dbts = c.dbts()?;
                128
            }
            b"kind" => {
                t.kind = match kept {
                    Kept::All => c.opt_string()?,
                    Kept::Check if c.peek()? == b'n' => c.null().map(|()| None)?,
                    Kept::Check => c
                        .skipped_str_is(crate::model::FINAL_READ)?
                        .then(|| crate::model::FINAL_READ.into()),
                };
                256
            }
            b"node" => {
                t.node = c.opt_string()?;
                512
            }
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match c.peek()? {
            b',' => c.i += 1,
            b'}' => {
                c.i += 1;
                break;
            }
            _ => return None,
        }
    }
    // Nothing after the object; every required field present; a
    // transaction that ends before it starts is the general parser's error.
    if c.peek().is_some() || seen & 0b10_0111 != 0b10_0111 {
        return None;
    }
    if let (Some(s), Some(e)) = (t.start, t.end) {
        if e < s {
            return None;
        }
    }
    Some(t)
}
