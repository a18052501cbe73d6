//! Streaming line-oriented input in blocks of whole lines, each parsed on
//! both cores: the importers of line formats (JSONL, the `r(k,v,s,t)`
//! text, AWDIT's format) read at disk speed without ever holding the whole
//! file beside the model they build.
//!
//! A block is a few megabytes of whole lines. It is cut in two at a line
//! boundary; the halves are parsed on two threads into per-line results,
//! which are then handed on in file order, so what is built from them (and
//! the first error reported) is exactly what a one-line-at-a-time reader
//! gives.

use std::io::{self, Read};

/// Bytes read per block (the last line of a block runs on to its newline).
const BLOCK: usize = 8 << 20;

/// Bytes asked of the input per read.
const READ_STEP: usize = 256 << 10;

/// A run of whole lines, and where it starts in the file.
pub(crate) struct Chunk<'a> {
    /// The lines, each with its `\n` (the file's last line may lack it).
    pub bytes: &'a [u8],
    /// The 1-based number of the chunk's first line.
    pub first_line: usize,
    /// The byte offset of the chunk in the input.
    pub offset: u64,
    /// True when this chunk ends the file.
    pub at_end: bool,
}

impl<'a> Chunk<'a> {
    /// `line` (one of [`Chunk::lines`]) as text; the error names the byte
    /// offset in the input of the first byte that is not UTF-8.
    pub fn text(&self, line: &'a [u8]) -> Result<&'a str, String> {
        std::str::from_utf8(line).map_err(|e| {
            let at = self.offset as usize
                + (line.as_ptr() as usize - self.bytes.as_ptr() as usize)
                + e.valid_up_to();
            format!("invalid UTF-8 at byte {at}: this is not a text file")
        })
    }

    /// The chunk's lines, without their `\n`, numbered from `first_line`;
    /// the flag is true for a last line of the file that has no newline.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &'a [u8], bool)> {
        let b = self.bytes;
        let at_end = self.at_end;
        let mut pos = 0;
        let mut no = self.first_line;
        std::iter::from_fn(move || {
            if pos >= b.len() {
                return None;
            }
            let (line, next, cut) = match memchr::memchr(b'\n', &b[pos..]) {
                Some(i) => (&b[pos..pos + i], pos + i + 1, false),
                None => (&b[pos..], b.len(), at_end),
            };
            let item = (no, line, cut);
            pos = next;
            no += 1;
            Some(item)
        })
    }
}

/// Splits `bytes` (whole lines) into two runs of whole lines near its
/// middle.
fn halves(bytes: &[u8]) -> (&[u8], &[u8]) {
    let mid = bytes.len() / 2;
    match memchr::memchr(b'\n', &bytes[mid..]) {
        Some(i) => bytes.split_at(mid + i + 1),
        None => (bytes, &[]),
    }
}

/// True when two threads are worth starting.
fn two_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// Reads `input` block by block; each block's two halves go through `parse`
/// (on two threads when there are two cores), and `take` receives the
/// results in file order. `take` returns false to stop reading (a history
/// cut short). `on_bytes` is told the size of each read, for progress.
///
/// The stages overlap: while one block is parsed, this thread hands on the
/// previous block's results and reads the next block, so neither the reads
/// nor `take` leave a core idle. The results are still taken in file order,
/// and an input error is reported after the results read before it.
pub(crate) fn for_each_block<R, T, P, F>(
    mut input: R,
    on_bytes: &dyn Fn(u64),
    parse: P,
    mut take: F,
) -> io::Result<()>
where
    R: Read,
    T: Send,
    P: Fn(Chunk<'_>) -> T + Sync,
    F: FnMut(T) -> bool,
{
    let threads = two_cores();
    let mut buf: Vec<u8> = Vec::with_capacity(BLOCK + (1 << 16));
    let mut next: Vec<u8> = Vec::with_capacity(BLOCK + (1 << 16));
    let mut first_line = 1usize;
    let mut offset = 0u64;
    let mut eof = false;
    // The previous block's results, not yet taken.
    let mut pending: Option<(T, T)> = None;
    // Read the first block.
    let mut end = read_block(&mut input, &mut buf, &mut eof, on_bytes)?;
    loop {
        if end == 0 {
            if let Some((ra, rb)) = pending.take() {
                let _ = take(ra) && take(rb);
            }
            return Ok(());
        }
        let block = &buf[..end];
        let (a, b) = halves(block);
        let b_first = first_line + memchr::memchr_iter(b'\n', a).count();
        let chunk_a = Chunk {
            bytes: a,
            first_line,
            offset,
            at_end: eof && b.is_empty(),
        };
        let chunk_b = Chunk {
            bytes: b,
            first_line: b_first,
            offset: offset + a.len() as u64,
            at_end: eof,
        };
        // The partial line after the block starts the next one.
        next.clear();
        next.extend_from_slice(&buf[end..]);
        let last = eof;
        let (results, went_on, read) = if threads {
            std::thread::scope(|s| {
                let ha = s.spawn(|| parse(chunk_a));
                let hb = s.spawn(|| parse(chunk_b));
                // Meanwhile: the previous results, then the next block.
                let went_on = pending.take().is_none_or(|(ra, rb)| take(ra) && take(rb));
                let read = (went_on && !last)
                    .then(|| read_block(&mut input, &mut next, &mut eof, on_bytes));
                let ra = ha.join().expect("a parsing thread panicked");
                let rb = hb.join().expect("a parsing thread panicked");
                ((ra, rb), went_on, read)
            })
        } else {
            let went_on = pending.take().is_none_or(|(ra, rb)| take(ra) && take(rb));
            let results = (parse(chunk_a), parse(chunk_b));
            let read =
                (went_on && !last).then(|| read_block(&mut input, &mut next, &mut eof, on_bytes));
            (results, went_on, read)
        };
        let (ra, rb) = results;
        match read {
            _ if !went_on => return Ok(()),
            None => {
                // The last block.
                let _ = take(ra) && take(rb);
                return Ok(());
            }
            Some(Err(err)) => {
                // What was read before the error is taken first, and an
                // error in it is the one reported.
                return if take(ra) && take(rb) {
                    Err(err)
                } else {
                    Ok(())
                };
            }
            Some(Ok(e)) => {
                pending = Some((ra, rb));
                first_line = b_first + memchr::memchr_iter(b'\n', b).count();
                offset += end as u64;
                end = e;
                std::mem::swap(&mut buf, &mut next);
            }
        }
    }
}

/// Reads on into `buf` (which holds a partial line carried over) to a
/// block, and on past it until a newline when one line is longer than a
/// block. Returns where the block's whole lines end (0: nothing left);
/// sets `eof` at the end of the input.
fn read_block<R: Read>(
    input: &mut R,
    buf: &mut Vec<u8>,
    eof: &mut bool,
    on_bytes: &dyn Fn(u64),
) -> io::Result<usize> {
    let mut target = BLOCK.max(buf.len() + 1);
    loop {
        *eof = *eof || fill(input, buf, target, on_bytes)?;
        if *eof {
            return Ok(buf.len());
        }
        if let Some(i) = memchr::memrchr(b'\n', buf) {
            return Ok(i + 1);
        }
        target = buf.len() + BLOCK;
    }
}

/// Reads into `buf` until it holds `target` bytes; true at the end of the
/// input.
fn fill<R: Read>(
    input: &mut R,
    buf: &mut Vec<u8>,
    target: usize,
    on_bytes: &dyn Fn(u64),
) -> io::Result<bool> {
    while buf.len() < target {
        let have = buf.len();
        // A step at a time: a small file touches no more memory than it
        // fills (a whole block zeroed up front is 8 MB of RSS).
        buf.resize(target.min(have + READ_STEP), 0);
        match input.read(&mut buf[have..]) {
            Ok(0) => {
                buf.truncate(have);
                return Ok(true);
            }
            Ok(n) => {
                buf.truncate(have + n);
                on_bytes(n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(have),
            Err(e) => {
                buf.truncate(have);
                return Err(e);
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(input: &[u8]) -> Vec<(usize, Vec<u8>, bool)> {
        let mut out = Vec::new();
        for_each_block(
            input,
            &|_| {},
            |c| {
                assert_eq!(&input[c.offset as usize..][..c.bytes.len()], c.bytes);
                c.lines()
                    .map(|(n, l, cut)| (n, l.to_vec(), cut))
                    .collect::<Vec<_>>()
            },
            |v| {
                out.extend(v);
                true
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn every_line_once_in_order_with_its_number() {
        let text: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let got = lines_of(text.as_bytes());
        assert_eq!(got.len(), 100_000);
        for (i, (n, l, cut)) in got.iter().enumerate() {
            assert_eq!(*n, i + 1);
            assert_eq!(l, format!("line {i}").as_bytes());
            assert!(!cut);
        }
    }

    #[test]
    fn a_last_line_without_newline_is_flagged() {
        let got = lines_of(b"a\n\nb");
        assert_eq!(
            got,
            vec![
                (1, b"a".to_vec(), false),
                (2, b"".to_vec(), false),
                (3, b"b".to_vec(), true)
            ]
        );
        assert!(lines_of(b"").is_empty());
    }

    #[test]
    fn blocks_cut_mid_line_keep_lines_whole() {
        // Lines longer than a block, and block ends that fall mid-line.
        let long = "x".repeat(BLOCK + 123);
        let text = format!("{long}\nshort\n{long}");
        let got = lines_of(text.as_bytes());
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].1.len(), BLOCK + 123);
        assert_eq!(got[1], (2, b"short".to_vec(), false));
        assert_eq!((got[2].0, got[2].1.len(), got[2].2), (3, BLOCK + 123, true));
        let many: String = (0..3 * BLOCK / 10).map(|i| format!("{:09}\n", i)).collect();
        let got = lines_of(many.as_bytes());
        assert_eq!(got.len(), 3 * BLOCK / 10);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (n, l, _))| *n == i + 1 && l == format!("{:09}", i).as_bytes()));
    }
}
