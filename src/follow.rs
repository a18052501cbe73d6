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
    /// Bytes read but not yet ended by a newline.
    partial: Vec<u8>,
    /// Bytes of complete lines handed out.
    consumed: u64,
    /// Lines handed out.
    line: usize,
    chunk: Vec<u8>,
}

impl Tail {
    /// Opens `path` at its start.
    pub fn open(path: &Path) -> Result<Tail> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(Tail {
            path: path.to_path_buf(),
            file,
            partial: Vec::new(),
            consumed: 0,
            line: 0,
            chunk: vec![0; 1 << 20],
        })
    }

    /// Bytes of complete lines handed out so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The complete lines appended since the last call, with their line
    /// numbers (from 1); empty when the file has not grown by a whole line.
    pub fn poll(&mut self, out: &mut Vec<(usize, String)>) -> Result<()> {
        out.clear();
        loop {
            let n = match self.file.read(&mut self.chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", self.path.display()))
                }
            };
            if n == 0 {
                break;
            }
            let mut rest = &self.chunk[..n];
            while let Some(i) = rest.iter().position(|&b| b == b'\n') {
                self.partial.extend_from_slice(&rest[..i]);
                self.consumed += self.partial.len() as u64 + 1;
                self.line += 1;
                let text = String::from_utf8(std::mem::take(&mut self.partial)).map_err(|_| {
                    anyhow::anyhow!("{}:{}: not UTF-8 text", self.path.display(), self.line)
                })?;
                out.push((self.line, text));
                rest = &rest[i + 1..];
            }
            self.partial.extend_from_slice(rest);
            if out.len() >= 4096 {
                break;
            }
        }
        // A file truncated under us (rewritten) cannot be followed.
        let len = self.file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if len < self.consumed {
            let _ = self.file.seek(SeekFrom::Start(self.consumed));
            bail!(
                "{}: the file shrank while it was followed (from {} to {len} bytes)",
                self.path.display(),
                self.consumed
            );
        }
        Ok(())
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
    /// Set by the writer once it has finished (or failed): read to the
    /// file's current end, then stop.
    pub writer_done: Option<&'a AtomicBool>,
}

/// Follows `path` until its `end` line (or `until` says stop), checking its
/// transactions at `level` as they arrive. `on_anomaly` is told once when
/// the stream finds one.
pub fn follow(
    path: &Path,
    level: Level,
    opts: StreamOptions,
    until: &Until<'_>,
    mut on_anomaly: impl FnMut(&str),
) -> Result<Followed> {
    let mut tail = Tail::open(path)?;
    let mut stream = Stream::new(level, opts);
    let mut lines = Vec::new();
    let mut last_growth = Instant::now();
    let mut last_line = Instant::now();
    let mut told = false;
    let mut ended = false;
    let mut stopped = None;
    'follow: loop {
        let done_before = until.writer_done.is_some_and(|d| d.load(Ordering::Acquire));
        tail.poll(&mut lines)?;
        // Caught up with the writer: a pass over what is kept now, so an
        // anomaly is told without waiting for the next batch.
        let caught_up = lines.is_empty();
        if !caught_up {
            last_growth = Instant::now();
            last_line = last_growth;
        }
        for (no, text) in lines.drain(..) {
            let rec = history::jsonl::parse_line(&text)
                .map_err(|m| anyhow::anyhow!("{}:{no}: {m}", path.display()))?;
            match rec {
                Some(Record::Txn(t)) => {
                    if let Some(s) = &mut stream {
                        s.push(&t);
                    }
                }
                Some(Record::End(_)) => {
                    ended = true;
                    break 'follow;
                }
                _ => {}
            }
        }
        if let Some(s) = &mut stream {
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
        }
        if done_before {
            // The writer had finished before this read: nothing more comes.
            stopped = Some("the writer finished without an end line".into());
            break;
        }
        if until.idle.is_some_and(|i| last_growth.elapsed() >= i) {
            stopped = Some(format!(
                "the file did not grow for {}",
                humantime::format_duration(until.idle.unwrap_or_default())
            ));
            break;
        }
        if caught_up {
            std::thread::sleep(POLL);
        }
    }
    let streamed = stream.map(|s| s.finish());
    Ok(Followed {
        streamed,
        consumed: tail.consumed(),
        ended,
        stopped,
        after_last: last_line.elapsed(),
    })
}

/// The history in the first `consumed` bytes of `path`.
pub fn read_prefix(path: &Path, consumed: u64) -> Result<history::History> {
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let r = io::BufReader::new(f.take(consumed));
    history::read_jsonl(r, Some(path)).map_err(|e| anyhow::anyhow!("{e}"))
}
