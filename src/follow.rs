//! Following a history file while it is written: `harness check --follow`,
//! and the check a run makes as it records.
//!
//! [`Tail`] hands out the complete lines appended to the file since it last
//! looked (a line still being written waits for its newline); [`follow`]
//! feeds their transactions to a [`Stream`] until the `end` line, and says
//! what the stream found and how far the file was read, so that whatever
//! the stream leaves open is decided by the offline check of exactly that
//! much of the file.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use checkers::stream::Stream;
use checkers::stream::{StreamOptions, StreamStats, Streamed};
use history::{Level, Record};

/// How often a file that did not grow is looked at again.
const POLL: Duration = Duration::from_millis(50);

/// The complete lines appended to a file.
pub struct Tail {
    path: PathBuf,
    file: File,
    /// The complete lines of the last poll, then the start of a line still
    /// being written.
    buf: Vec<u8>,
    /// Where the complete lines in `buf` end.
    whole: usize,
    /// Bytes of complete lines handed out.
    consumed: u64,
    /// Lines handed out.
    line: usize,
}

/// At most this much is read per poll, so batches stay small.
const POLL_BYTES: usize = 1 << 20;

/// Parsed batches (of up to [`POLL_BYTES`] of lines each) that may wait
/// between the reading thread and the checking one. Enough to keep both
/// busy; more would only hold memory whenever the check falls behind (a
/// run's check descheduled for a moment), and each such moment can raise
/// a run's high-water mark for good. Following a finished 8-minute
/// list-append history took 111 MB with 32 of them, 61 MB with 4.
const IN_FLIGHT: usize = 4;

impl Tail {
    /// Opens `path` at its start.
    pub fn open(path: &Path) -> Result<Tail> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(Tail {
            path: path.to_path_buf(),
            file,
            buf: Vec::new(),
            whole: 0,
            consumed: 0,
            line: 0,
        })
    }

    /// Bytes of complete lines handed out so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The complete lines appended since the last call, each with its line
    /// number (from 1), borrowed from one buffer; none when the file has
    /// not grown by a whole line.
    pub fn poll(&mut self) -> Result<impl Iterator<Item = (usize, &[u8])> + '_> {
        // Drop the lines handed out last time; keep the partial one.
        self.buf.drain(..self.whole);
        let start = self.buf.len();
        self.buf.resize(start + POLL_BYTES, 0);
        let mut end = start;
        while end < self.buf.len() {
            match self.file.read(&mut self.buf[end..]) {
                Ok(0) => break,
                Ok(n) => end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", self.path.display()))
                }
            }
        }
        self.buf.truncate(end);
        self.whole = self
            .buf
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        // A file truncated under us (rewritten) cannot be followed.
        let len = self.file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if len < self.consumed + end as u64 {
            let _ = self.file.seek(SeekFrom::Start(self.consumed));
            bail!(
                "{}: the file shrank while it was followed (to {len} bytes)",
                self.path.display()
            );
        }
        self.consumed += self.whole as u64;
        let first = self.line + 1;
        let lines: Vec<&[u8]> = self.buf[..self.whole].split(|&b| b == b'\n').collect();
        // The split leaves an empty piece after the last newline.
        let n = lines.len().saturating_sub(1);
        self.line += n;
        Ok(lines
            .into_iter()
            .take(n)
            .enumerate()
            .map(move |(i, l)| (first + i, l)))
    }
}

/// What following a file found.
pub struct Followed {
    /// The stream's word and counts (`None`: the level is not streamed).
    pub streamed: Option<(Streamed, StreamStats)>,
    /// How much of the file was read (whole lines): the offline check reads
    /// exactly this much.
    pub consumed: u64,
    /// Whether the `end` line was read.
    pub ended: bool,
    /// Why the following stopped before the `end` line, if it did.
    pub stopped: Option<String>,
    /// From the last line read to the verdict.
    pub after_last: Duration,
}

/// When [`follow`] stops.
pub struct Until<'a> {
    /// The file stays the same this long: taken as cut short.
    pub idle: Option<Duration>,
    /// Stop at the first anomaly the stream finds.
    pub stop_on_anomaly: bool,
    /// Stop as soon as the stream has found an anomaly or handed over: a
    /// finished file, which the offline check then reads whole.
    pub stop_when_decided: bool,
    /// Set by the writer once it has finished (or failed): read to the
    /// file's current end, then stop.
    pub writer_done: Option<&'a AtomicBool>,
}

/// What the reading thread hands to the checking one.
enum Msg {
    /// Transactions, and how far the file has been read after them.
    Txns(Vec<history::Txn>, u64),
    /// Everything written so far has been handed over.
    CaughtUp,
    /// The `end` line.
    End,
    /// Nothing more will come (why).
    Stop(String),
    Failed(anyhow::Error),
}

/// Follows `path` until its `end` line (or `until` says stop), checking its
/// transactions at `level` as they arrive: one thread reads and parses,
/// the other checks. `on_anomaly` is told once when the stream finds one.
pub fn follow(
    path: &Path,
    level: Level,
    opts: StreamOptions,
    until: &Until<'_>,
    mut on_anomaly: impl FnMut(&str),
) -> Result<Followed> {
    let mut tail = Tail::open(path)?;
    let mut stream = Stream::new(level, opts);
    let quit = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(IN_FLIGHT);
    // Checked batches go back to the reader, which allocated them, to be
    // freed there: the allocator frees fastest on the allocating thread.
    let (back, used) = std::sync::mpsc::sync_channel::<Vec<history::Txn>>(IN_FLIGHT);
    let mut consumed = 0;
    let mut last_line = Instant::now();
    let mut told = false;
    let mut ended = false;
    let mut stopped = None;
    std::thread::scope(|s| {
        let quit = &quit;
        s.spawn(move || read(&mut tail, until, quit, &tx, &used));
        for msg in rx {
            let caught_up = match msg {
                Msg::Txns(ts, c) => {
                    if let Some(s) = &mut stream {
                        for t in &ts {
                            s.push(t);
                        }
                    }
                    let _ = back.try_send(ts);
                    consumed = c;
                    last_line = Instant::now();
                    false
                }
                Msg::CaughtUp => true,
                Msg::End => {
                    ended = true;
                    break;
                }
                Msg::Stop(why) => {
                    stopped = Some(why);
                    break;
                }
                Msg::Failed(e) => {
                    quit.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            };
            let Some(s) = &mut stream else { continue };
            // Caught up with the writer: a pass over what is kept now, so
            // an anomaly is told without waiting for the next batch.
            if caught_up {
                s.settle();
            }
            if let (Some(Streamed::Anomalous(why)), false) = (s.decided(), told) {
                told = true;
                on_anomaly(why);
                if until.stop_on_anomaly {
                    stopped = Some(format!("stopped at the first anomaly: {why}"));
                    break;
                }
            }
            if until.stop_when_decided && s.decided().is_some() {
                stopped = Some("the stream has decided".into());
                break;
            }
        }
        quit.store(true, Ordering::Relaxed);
        Ok(())
    })?;
    let streamed = stream.map(|s| s.finish());
    Ok(Followed {
        streamed,
        consumed,
        ended,
        stopped,
        after_last: last_line.elapsed(),
    })
}

/// The reading thread: complete lines, parsed, in batches, until the `end`
/// line, an error, or `until` says stop.
fn read(
    tail: &mut Tail,
    until: &Until<'_>,
    quit: &AtomicBool,
    tx: &SyncSender<Msg>,
    used: &Receiver<Vec<history::Txn>>,
) {
    let mut last_growth = Instant::now();
    let mut told_caught_up = false;
    let path = tail.path.clone();
    while !quit.load(Ordering::Relaxed) {
        let done_before = until.writer_done.is_some_and(|d| d.load(Ordering::Acquire));
        let lines = match tail.poll() {
            Ok(lines) => lines,
            Err(e) => {
                let _ = tx.send(Msg::Failed(e));
                return;
            }
        };
        // The last batch checked, emptied here, holds the next one.
        let mut txns = Vec::new();
        for mut old in used.try_iter() {
            old.clear();
            txns = old;
        }
        let mut seen = false;
        let mut end = false;
        for (no, bytes) in lines {
            seen = true;
            let parsed = std::str::from_utf8(bytes)
                .map_err(|_| "the line is not valid UTF-8".to_string())
                .and_then(history::jsonl::parse_line_for_check);
            match parsed {
                Err(m) => {
                    let e = anyhow::anyhow!("{}:{no}: {m}", path.display());
                    let _ = tx.send(Msg::Failed(e));
                    return;
                }
                Ok(Some(Record::Txn(t))) => txns.push(t),
                Ok(Some(Record::End(_))) => {
                    end = true;
                    break;
                }
                Ok(_) => {}
            }
        }
        if !seen {
            let stop = if done_before {
                // The writer had finished before this read: nothing more.
                Some("the writer finished without an end line".to_string())
            } else {
                until.idle.filter(|&i| last_growth.elapsed() >= i).map(|i| {
                    format!(
                        "the file did not grow for {}",
                        humantime::format_duration(i)
                    )
                })
            };
            if let Some(why) = stop {
                let _ = tx.send(Msg::Stop(why));
                return;
            }
            if !told_caught_up && tx.send(Msg::CaughtUp).is_err() {
                return;
            }
            told_caught_up = true;
            std::thread::sleep(POLL);
            continue;
        }
        last_growth = Instant::now();
        told_caught_up = false;
        if tx.send(Msg::Txns(txns, tail.consumed())).is_err() {
            return;
        }
        if end {
            let _ = tx.send(Msg::End);
            return;
        }
    }
}

/// The history in the first `consumed` bytes of `path`.
pub fn read_prefix(path: &Path, consumed: u64) -> Result<history::History> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let r = io::BufReader::new(f.take(consumed));
    history::read_jsonl(r, Some(path)).map_err(|e| anyhow::anyhow!("{e}"))
}
