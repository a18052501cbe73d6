//! An AWDIT file of up to some tens of megabytes, read whole and parsed
//! in pieces of whole sessions on both cores, each transaction built
//! straight into its place in the history.
//!
//! The streaming reader ([`blocks`](crate::blocks)) parses blocks on two
//! worker threads and strings their transactions together on the reading
//! thread, in file order: that thread builds every transaction, one after
//! another, behind the workers. Here the file is cut after session
//! separators (`=====`), so that no transaction or session spans two
//! pieces, and each piece is read twice, by whichever core is free: once
//! to count its transactions and sessions, then, once every piece knows
//! where its transactions go and what its first session is numbered, to
//! build them there. A line that does not parse, or anything else out of
//! the ordinary, hands the file back to the streaming reader, which names
//! the error.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::blocks::Chunk;
use crate::model::{History, Op, Status, Txn};

use super::{fast_line, parse_line, End, Line, Sessions};

/// About this many bytes a piece: several per core, so that a core that
/// is done takes another while the other finishes its last.
const PIECE: usize = 32 << 10;

/// At most this many pieces.
const MAX_PIECES: usize = 256;

/// What the first reading of a piece found.
#[derive(Clone, Copy)]
struct Count {
    txns: usize,
    /// Sessions ended by a separator after at least one transaction.
    sessions: u64,
}

/// Parses `data` as the streaming reader does, or `None` when it does not
/// take it (too few session separators to share out, a line that does not
/// parse): the caller then gives it to the streaming reader.
pub(super) fn parse(data: &[u8]) -> Option<History> {
    parse_in(data, PIECE)
}

/// [`parse`], in pieces of about `piece` bytes.
fn parse_in(data: &[u8], piece: usize) -> Option<History> {
    let pieces = cut(data, piece);
    if pieces.len() < 2 {
        return None;
    }
    let n = pieces.len();
    let counts = on_both(n, |i| count(pieces[i]));
    let counts: Vec<Count> = counts.into_iter().collect::<Option<_>>()?;
    let total: usize = counts.iter().map(|c| c.txns).sum();
    let mut txns: Vec<Txn> = Vec::with_capacity(total);
    let built = {
        let mut rest = &mut txns.spare_capacity_mut()[..total];
        let mut slots = Vec::with_capacity(n);
        let mut first = (0usize, 0u64);
        for c in &counts {
            let (mine, later) = rest.split_at_mut(c.txns);
            slots.push(Mutex::new(Some((mine, first))));
            first = (first.0 + c.txns, first.1 + c.sessions);
            rest = later;
        }
        on_both(n, |i| {
            let (slot, first) = slots[i].lock().unwrap_or_else(|e| e.into_inner()).take()?;
            build(pieces[i], first, i + 1 == n, slot)
        })
    };
    if built.iter().all(Option::is_some) {
        // SAFETY: each piece wrote every slot of its own part (`build`
        // answers only when it filled its part exactly), and the parts
        // tile the first `total` slots.
        unsafe { txns.set_len(total) };
        return Some(History::from_txns(txns));
    }
    // A piece failed (and dropped what it had built); drop the others'.
    let mut rest = &mut txns.spare_capacity_mut()[..total];
    for (c, b) in counts.iter().zip(&built) {
        let (mine, later) = rest.split_at_mut(c.txns);
        if b.is_some() {
            for t in mine {
                // SAFETY: this piece filled its part.
                unsafe { t.assume_init_drop() };
            }
        }
        rest = later;
    }
    None
}

/// Runs `f` on `0..n`, each index once, on this thread and one other,
/// whichever is free taking the next; the answers in index order.
fn on_both<T: Send>(n: usize, f: impl Fn(usize) -> Option<T> + Sync) -> Vec<Option<T>> {
    let next = AtomicUsize::new(0);
    let run = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return mine;
            }
            mine.push((i, f(i)));
        }
    };
    let (a, b) = std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("parse".into())
            .spawn_scoped(s, run)
            .expect("cannot start a parsing thread");
        let here = run();
        (
            here,
            other
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for (i, r) in a.into_iter().chain(b) {
        out[i] = r;
    }
    out
}

/// Cuts `data` into pieces of about `piece` bytes, each ending with a
/// session separator (the last with the file).
fn cut(data: &[u8], piece: usize) -> Vec<&[u8]> {
    let want = (data.len() / piece.max(1)).clamp(1, MAX_PIECES);
    let step = data.len() / want;
    let mut pieces = Vec::with_capacity(want);
    let mut from = 0;
    while from < data.len() {
        let target = from + step;
        let end = if target >= data.len() {
            data.len()
        } else {
            after_session_end(data, target).unwrap_or(data.len())
        };
        pieces.push(&data[from..end]);
        from = end;
    }
    pieces
}

/// The end of the first session separator line at or after `at` (just
/// past its newline), if one comes.
fn after_session_end(data: &[u8], at: usize) -> Option<usize> {
    // From the start of the line after the one `at` is in.
    let mut line = at + memchr::memchr(b'\n', &data[at..])? + 1;
    while line < data.len() {
        let end = memchr::memchr(b'\n', &data[line..]).map(|i| line + i);
        let text = &data[line..end.unwrap_or(data.len())];
        if text.first() == Some(&b'=') && text.trim_ascii().iter().all(|&b| b == b'=') {
            return end.map(|e| e + 1);
        }
        line = end? + 1;
    }
    None
}

/// One line's meaning, as the streaming reader takes it: `None` for a
/// blank line; an error for a line it refuses.
fn meaning(line: &[u8]) -> Result<Option<Line>, ()> {
    if let Some(l) = fast_line(line) {
        return Ok(Some(l));
    }
    let text = std::str::from_utf8(line).map_err(|_| ())?;
    match parse_line(text) {
        None => Ok(None),
        Some(Ok(l)) => Ok(Some(l)),
        Some(Err(_)) => Err(()),
    }
}

/// What a line is, for the first reading.
enum Kind {
    /// An op (parsed, and checked, when the transaction is built).
    Op,
    End(End),
}

/// What a line is, read quickly where it can be: `None` for a blank line.
fn kind(line: &[u8]) -> Result<Option<Kind>, ()> {
    Ok(match line {
        [b'r' | b'R' | b'w' | b'W', b' ', ..] => Some(Kind::Op),
        [b'-', ..] if line.iter().all(|&b| b == b'-') => Some(Kind::End(End::Txn)),
        [b'=', ..] if line.iter().all(|&b| b == b'=') => Some(Kind::End(End::Session)),
        _ => match meaning(line)? {
            None => None,
            Some(Line::Op(_)) => Some(Kind::Op),
            Some(Line::End(e)) => Some(Kind::End(e)),
        },
    })
}

/// The lines of a piece, without their newlines.
fn lines(piece: &[u8]) -> impl Iterator<Item = &[u8]> {
    let chunk = Chunk {
        bytes: piece,
        first_line: 1,
        offset: 0,
        at_end: true,
    };
    chunk.lines().map(|(_, l, _)| l)
}

/// The first reading: a piece's transactions and ended sessions.
fn count(piece: &[u8]) -> Option<Count> {
    let mut txns = 0;
    let mut sessions = Sessions::default();
    let mut ops = false;
    for line in lines(piece) {
        match kind(line).ok()? {
            None => {}
            Some(Kind::Op) => ops = true,
            Some(Kind::End(end)) => {
                txns += usize::from(ops);
                sessions.end(end, std::mem::take(&mut ops));
            }
        }
    }
    txns += usize::from(ops);
    Some(Count {
        txns,
        sessions: sessions.number,
    })
}

/// The second reading: builds a piece's transactions into `slot`, the
/// first numbered `first.0` in session `first.1`. `Some` only when it
/// filled `slot` exactly; otherwise it leaves nothing built.
fn build(
    piece: &[u8],
    first: (usize, u64),
    last: bool,
    slot: &mut [MaybeUninit<Txn>],
) -> Option<()> {
    let (id, session) = first;
    let mut sessions = Sessions {
        number: session,
        used: false,
    };
    let mut made = 0usize;
    let mut cur: Vec<Op> = Vec::new();
    // Builds the transaction of `cur`, if it has ops; false when `slot`
    // has no room left for it.
    let mut close = |cur: &mut Vec<Op>, session: u64, made: &mut usize| {
        let Some(s) = slot.get_mut(*made) else {
            return false;
        };
        s.write(Txn::new(
            (id + *made) as u64,
            session,
            Status::Ok,
            cur.as_slice().to_vec(),
        ));
        cur.clear();
        *made += 1;
        true
    };
    let mut ok = true;
    for line in lines(piece) {
        match meaning(line) {
            Err(()) => ok = false,
            Ok(None) => {}
            Ok(Some(Line::Op(op))) => cur.push(op),
            Ok(Some(Line::End(end))) => {
                let closed = !cur.is_empty();
                ok = !closed || close(&mut cur, sessions.number, &mut made);
                sessions.end(end, closed);
            }
        }
        if !ok {
            break;
        }
    }
    if ok && !cur.is_empty() {
        // Only the file's last piece may end inside a transaction.
        ok = last && close(&mut cur, sessions.number, &mut made);
    }
    if ok && made == slot.len() {
        return Some(());
    }
    for t in &mut slot[..made] {
        // SAFETY: the first `made` slots were written above.
        unsafe { t.assume_init_drop() };
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Lines of every shape the streaming reader takes (ops with odd
    /// spacing, case and line ends; separators of any length, indented or
    /// doubled; blank lines).
    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => (0..4i64, 0..100i64).prop_map(|(k, v)| format!("w {k} {v}")),
            6 => (0..4i64, 0..100i64).prop_map(|(k, v)| format!("r {k} {v}")),
            1 => (0..4i64, -5..5i64).prop_map(|(k, v)| format!("R  {k} {v}\r")),
            1 => (0..4i64, 0..9i64).prop_map(|(k, v)| format!(" W {k}\t{v}")),
            4 => Just("-----".to_string()),
            1 => Just("-\r".to_string()),
            1 => Just("  ---".to_string()),
            3 => Just("=====".to_string()),
            1 => Just("=\r".to_string()),
            1 => Just(" ==".to_string()),
            1 => Just(String::new()),
            1 => Just("   ".to_string()),
        ]
    }

    proptest! {
        /// Cut anywhere it may be, the file reads as the streaming reader
        /// reads it.
        #[test]
        fn pieces_read_as_the_streaming_reader_reads(
            lines in prop::collection::vec(line(), 0..300),
            newline_at_end in any::<bool>(),
            piece in 1usize..400,
        ) {
            let mut text = lines.join("\n");
            if newline_at_end {
                text.push('\n');
            }
            let streamed = super::super::parse(&text, None).expect("every line parses");
            let shared = cut(text.as_bytes(), piece).len() > 1;
            match parse_in(text.as_bytes(), piece) {
                Some(h) => prop_assert!(h == streamed, "{text:?}"),
                // Every line parses: only a file it cannot cut is handed back.
                None => prop_assert!(!shared, "handed back: {text:?}"),
            }
        }
    }

    /// A history of many sessions is read in pieces (not handed back),
    /// and a line that does not parse hands it back.
    #[test]
    fn sessions_are_shared_out_and_errors_handed_back() {
        let mut text = String::new();
        for s in 0..200 {
            for t in 0..5 {
                text.push_str(&format!("w {s} {t}\nr {s} {t}\n-----\n"));
            }
            text.push_str("=====\n");
        }
        assert!(cut(text.as_bytes(), 1000).len() > 10);
        let h = parse_in(text.as_bytes(), 1000).expect("read in pieces");
        assert_eq!(h, super::super::parse(&text, None).unwrap());
        assert_eq!(h.txns.len(), 1000);
        assert_eq!(h.txns[999].session, 199);
        // One session: nothing to share out.
        let one = text.replace("=====\n", "");
        assert!(parse_in(one.as_bytes(), 1000).is_none());
        // A line the first reading takes for an op, but that does not
        // parse, anywhere: handed back.
        for at in [10, text.len() / 2, text.len() - 30] {
            let mut bad = text.clone();
            let line = bad[at..].find('\n').unwrap() + at + 1;
            bad.insert_str(line, "r 1 x\n");
            assert!(parse_in(bad.as_bytes(), 1000).is_none(), "at {at}");
        }
    }
}
