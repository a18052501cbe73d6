//! Streaming line-oriented input in blocks of whole lines, parsed on both
//! cores: the importers of line formats (JSONL, the `r(k,v,s,t)` text,
//! AWDIT's format) read at disk speed without ever holding the whole file
//! beside the model they build.
//!
//! A block is a few megabytes of whole lines. Two worker threads each take
//! the next block read and parse it into per-line results, which the
//! reading thread hands on in file order, so what is built from them (and
//! the first error reported) is exactly what a one-line-at-a-time reader
//! gives. No step waits for the slower of two halves: a few blocks are
//! read ahead, and a worker that is done takes the next.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Condvar, Mutex};

/// Bytes read per block (the last line of a block runs on to its newline).
const BLOCK: usize = 8 << 20;

/// The first block's size; each next one is twice the last, up to
/// [`BLOCK`], so that a file of a few megabytes is parsed on both cores too.
const FIRST_BLOCK: usize = 128 << 10;

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

/// True when two threads are worth starting.
pub(crate) fn two_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// Blocks read ahead of the one whose results are taken next: two being
/// parsed and two waiting, so a worker that is done never waits for the
/// reading thread.
const IN_FLIGHT: usize = 4;

/// A block on its way to a worker: the whole lines of `buf`.
struct Job {
    seq: usize,
    buf: Vec<u8>,
    first_line: usize,
    offset: u64,
    at_end: bool,
}

impl Job {
    fn chunk(&self) -> Chunk<'_> {
        Chunk {
            bytes: &self.buf,
            first_line: self.first_line,
            offset: self.offset,
            at_end: self.at_end,
        }
    }
}

/// Reads `input` block by block; each block goes through `parse` (on two
/// worker threads when there are two cores), and `take` receives the
/// results in file order. `take` returns false to stop reading (a history
/// cut short). `on_bytes` is told the size of each read, for progress.
///
/// The stages overlap without a step in lockstep: this thread reads blocks
/// ahead (up to [`IN_FLIGHT`]) and hands on results as they come back in
/// order, while the workers each parse whichever block is next. The
/// results are still taken in file order, and an input error is reported
/// after the results read before it.
pub(crate) fn for_each_block<R, T, P, F>(
    input: R,
    on_bytes: &dyn Fn(u64),
    parse: P,
    take: F,
) -> io::Result<()>
where
    R: Read,
    T: Send,
    P: Fn(Chunk<'_>) -> T + Sync,
    F: FnMut(T) -> bool,
{
    for_each_block_on(two_cores(), input, on_bytes, parse, take)
}

/// [`for_each_block`], on two workers or on this thread alone.
fn for_each_block_on<R, T, P, F>(
    workers: bool,
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
    let mut reader = Blocks {
        carry: Vec::new(),
        block: FIRST_BLOCK,
        spare: Vec::new(),
        first_line: 1,
        offset: 0,
        eof: false,
        seq: 0,
    };
    if !workers {
        while let Some(job) = reader.next(&mut input, on_bytes)? {
            let r = parse(job.chunk());
            reader.spare.push(job.buf);
            if !take(r) {
                return Ok(());
            }
        }
        return Ok(());
    }
    let shared = Shared {
        state: Mutex::new(State {
            jobs: VecDeque::new(),
            closed: false,
            results: Vec::new(),
        }),
        work: Condvar::new(),
        done: Condvar::new(),
    };
    let (shared, parse) = (&shared, &parse);
    std::thread::scope(move |s| {
        // However this ends (a stop, an error, a panic), the workers end.
        let _close = Close(shared);
        for _ in 0..2 {
            std::thread::Builder::new()
                .name("parse".into())
                .spawn_scoped(s, move || {
                    while let Some(job) = shared.next_job() {
                        // A panic goes to the reader, which raises it.
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            parse(job.chunk())
                        }));
                        shared.lock().results.push((job.seq, r, job.buf));
                        shared.done.notify_one();
                    }
                })
                .expect("cannot start a parsing thread");
        }
        let (mut sent, mut taken) = (0usize, 0usize);
        let mut failed: Option<io::Error> = None;
        loop {
            while failed.is_none() && !reader.eof && sent - taken < IN_FLIGHT {
                match reader.next(&mut input, on_bytes) {
                    Ok(Some(job)) => {
                        sent += 1;
                        shared.lock().jobs.push_back(job);
                        shared.work.notify_one();
                    }
                    Ok(None) => break,
                    Err(e) => failed = Some(e),
                }
            }
            if taken == sent {
                break;
            }
            // The next result in file order.
            let (r, buf) = shared.result(taken);
            reader.spare.push(buf);
            taken += 1;
            if !take(r.unwrap_or_else(|p| std::panic::resume_unwind(p))) {
                return Ok(());
            }
        }
        failed.map_or(Ok(()), Err)
    })
}

/// What the reading thread and the two workers share: blocks to parse,
/// and results not yet taken (a few, in any order).
struct Shared<T> {
    state: Mutex<State<T>>,
    /// A block to parse, or the end.
    work: Condvar,
    /// A result.
    done: Condvar,
}

struct State<T> {
    jobs: VecDeque<Job>,
    closed: bool,
    results: Vec<(usize, std::thread::Result<T>, Vec<u8>)>,
}

impl<T> Shared<T> {
    /// The state; a panic elsewhere leaves it as it was, which is fine.
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next block to parse; `None` once the reader is done.
    fn next_job(&self) -> Option<Job> {
        let mut st = self.lock();
        loop {
            if st.closed {
                return None;
            }
            if let Some(job) = st.jobs.pop_front() {
                return Some(job);
            }
            st = self.work.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The result of block `seq` and its buffer, once a worker has it.
    fn result(&self, seq: usize) -> (std::thread::Result<T>, Vec<u8>) {
        let mut st = self.lock();
        loop {
            if let Some(i) = st.results.iter().position(|r| r.0 == seq) {
                let (_, r, buf) = st.results.swap_remove(i);
                return (r, buf);
            }
            st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Ends the workers when dropped.
struct Close<'a, T>(&'a Shared<T>);

impl<T> Drop for Close<'_, T> {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.work.notify_all();
    }
}

/// The blocks of an input, read one after another: each is the whole
/// lines read so far, and the partial line after them starts the next.
struct Blocks {
    /// The partial line that starts the next block.
    carry: Vec<u8>,
    /// Buffers the workers are done with.
    spare: Vec<Vec<u8>>,
    first_line: usize,
    offset: u64,
    eof: bool,
    seq: usize,
    /// The next block's size.
    block: usize,
}

impl Blocks {
    /// The next block, or `None` at the end of the input.
    fn next<R: Read>(&mut self, input: &mut R, on_bytes: &dyn Fn(u64)) -> io::Result<Option<Job>> {
        if self.eof && self.carry.is_empty() {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.carry);
        let end = read_block(input, &mut buf, self.block, &mut self.eof, on_bytes)?;
        self.block = (2 * self.block).min(BLOCK);
        let mut carry = self.spare.pop().unwrap_or_default();
        carry.clear();
        carry.extend_from_slice(&buf[end..]);
        buf.truncate(end);
        self.carry = carry;
        if end == 0 {
            self.spare.push(buf);
            return Ok(None);
        }
        let job = Job {
            seq: self.seq,
            first_line: self.first_line,
            offset: self.offset,
            at_end: self.eof,
            buf,
        };
        self.seq += 1;
        self.first_line += memchr::memchr_iter(b'\n', &job.buf).count();
        self.offset += end as u64;
        Ok(Some(job))
    }
}

/// Reads on into `buf` (which holds a partial line carried over) to a
/// block, and on past it until a newline when one line is longer than a
/// block. Returns where the block's whole lines end (0: nothing left);
/// sets `eof` at the end of the input.
fn read_block<R: Read>(
    input: &mut R,
    buf: &mut Vec<u8>,
    block: usize,
    eof: &mut bool,
    on_bytes: &dyn Fn(u64),
) -> io::Result<usize> {
    let mut target = block.max(buf.len() + 1);
    loop {
        *eof = *eof || fill(input, buf, target, on_bytes)?;
        if *eof {
            return Ok(buf.len());
        }
        if let Some(i) = memchr::memrchr(b'\n', buf) {
            return Ok(i + 1);
        }
        target = buf.len() + block;
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

    /// Every line with its number and flag, as the workers hand them on;
    /// the same as one thread gives.
    fn lines_of(input: &[u8]) -> Vec<(usize, Vec<u8>, bool)> {
        let two = lines_on(true, input);
        assert!(
            two == lines_on(false, input),
            "two workers and one thread differ"
        );
        two
    }

    fn lines_on(workers: bool, input: &[u8]) -> Vec<(usize, Vec<u8>, bool)> {
        let mut out = Vec::new();
        for_each_block_on(
            workers,
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

    /// Lines of many blocks' worth.
    fn many_blocks() -> String {
        (0..3 * BLOCK / 10).map(|i| format!("{:09}\n", i)).collect()
    }

    #[test]
    fn take_stops_the_reading() {
        let text = many_blocks();
        for workers in [true, false] {
            let mut calls = 0;
            let r = for_each_block_on(
                workers,
                text.as_bytes(),
                &|_| {},
                |c| c.first_line,
                |_| {
                    calls += 1;
                    calls < 2
                },
            );
            assert!(r.is_ok());
            assert_eq!(calls, 2, "no result is taken after take said stop");
        }
    }

    #[test]
    fn an_input_error_comes_after_the_lines_read_before_it() {
        /// Gives `ok` bytes of `text`, then an error.
        struct Failing<'a>(&'a [u8], usize);
        impl Read for Failing<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.1 == 0 {
                    return Err(io::Error::other("disk on fire"));
                }
                let n = buf.len().min(self.1).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                self.1 -= n;
                Ok(n)
            }
        }
        let text = many_blocks();
        // Two and a half blocks, then the error.
        let ok = 2 * BLOCK + BLOCK / 2;
        // The bytes of the whole blocks before it (they grow to BLOCK).
        let (mut whole, mut size) = (0, FIRST_BLOCK);
        while whole + size <= ok {
            whole += size;
            size = (2 * size).min(BLOCK);
        }
        for workers in [true, false] {
            let mut lines = 0;
            let r = for_each_block_on(
                workers,
                Failing(text.as_bytes(), ok),
                &|_| {},
                |c| c.lines().count(),
                |n| {
                    lines += n;
                    true
                },
            );
            assert_eq!(r.unwrap_err().to_string(), "disk on fire");
            // Every whole line of the whole blocks read before it was taken.
            assert!(
                lines + 16 >= whole / 10 && lines <= ok / 10,
                "{lines} lines, {whole} bytes in whole blocks"
            );
        }
    }

    #[test]
    #[should_panic(expected = "a parser's bug")]
    fn a_panic_while_parsing_reaches_the_reader() {
        let text = many_blocks();
        let _ = for_each_block(
            text.as_bytes(),
            &|_| {},
            |c| {
                if c.first_line > 1 {
                    panic!("a parser's bug");
                }
            },
            |()| true,
        );
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
