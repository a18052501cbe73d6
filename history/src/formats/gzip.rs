//! Gzipped single-file histories (`history.jsonl.gz`, as findings ship
//! them): read through the decompressor, so that nobody has to `zcat` a
//! history before checking it.
//!
//! A file is gzipped when it starts with gzip's magic bytes, whatever its
//! name. The readers of [`super`] then see the decompressed content
//! instead of the file's: [`super::detect`] tells the format from it, and
//! JSONL is decompressed as it is parsed (never held whole), the other
//! formats into memory and parsed from there. Errors name the gzipped
//! file, and the line of the decompressed text.

use std::io::{self, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::util;
use crate::error::ParseError;

/// The first two bytes of every gzip member.
const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// True when `path` is a file that starts with gzip's magic bytes.
pub fn is_gzip(path: &Path) -> Result<bool, ParseError> {
    if !path.is_file() {
        return Ok(false);
    }
    let mut head = [0u8; 2];
    let mut f = util::open(path)?;
    let n = util::read_up_to(&mut f, &mut head).map_err(|e| ParseError::io(Some(path), e))?;
    Ok(n == 2 && head == MAGIC)
}

/// A reader that tells `on_bytes` how many compressed bytes each read took,
/// so that a progress bar over the file's size ends at its end.
struct Counting<'a, R> {
    inner: R,
    on_bytes: &'a dyn Fn(u64),
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.on_bytes)(n as u64);
        Ok(n)
    }
}

/// The decompressed content of `path`, its read errors worded as what they
/// mean here (a damaged or truncated gzip stream); `on_bytes` is told of
/// the compressed bytes read.
pub(crate) fn reader<'a>(
    path: &Path,
    on_bytes: &'a dyn Fn(u64),
) -> Result<impl Read + 'a, ParseError> {
    let file = Counting {
        inner: util::open(path)?,
        on_bytes,
    };
    Ok(Reworded(MultiGzDecoder::new(file)))
}

/// Rewords the decompressor's errors about its input.
struct Reworded<R>(R);

impl<R: Read> Read for Reworded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidInput
            | io::ErrorKind::InvalidData
            | io::ErrorKind::UnexpectedEof => io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the gzip stream is damaged or cut short ({e})"),
            ),
            _ => e,
        })
    }
}

/// The decompressed start of `path` (up to `len` bytes), to tell its format.
pub(crate) fn prefix(path: &Path, len: usize) -> Result<Vec<u8>, ParseError> {
    let mut z = reader(path, &|_| {})?;
    let mut buf = vec![0u8; len];
    let n = util::read_up_to(&mut z, &mut buf).map_err(|e| ParseError::io(Some(path), e))?;
    buf.truncate(n);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::GzEncoder;
    use flate2::Compression;

    use super::super::Format;
    use super::*;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// A file `name` holding `bytes` in a folder of its own, removed with
    /// the returned guard.
    fn temp(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        (dir, p)
    }

    const JSONL: &str = concat!(
        "{\"type\":\"header\",\"version\":1}\n",
        "{\"id\":0,\"session\":0,\"status\":\"ok\",\"ops\":[[\"w\",1,1]]}\n",
        "{\"id\":1,\"session\":1,\"status\":\"ok\",\"ops\":[[\"r\",1,1]]}\n",
    );

    #[test]
    fn a_gzipped_history_reads_as_the_plain_one_in_every_file_format() {
        let text = "w(1,1,0,0)\nr(1,1,1,1)\n";
        for (name, plain) in [("h.jsonl.gz", JSONL), ("h.txt.gz", text)] {
            let (_d, p) = temp(name, &gz(plain.as_bytes()));
            assert!(is_gzip(&p).unwrap());
            let want = super::super::parse(plain.as_bytes(), Format::Auto, None).unwrap();
            let got = super::super::read(&p, Format::Auto).unwrap();
            assert_eq!(got.txns, want.txns, "{name}");
            // The progress counts the compressed bytes, to the file's size.
            let seen = std::cell::Cell::new(0u64);
            let count = |n: u64| seen.set(seen.get() + n);
            super::super::read_counting(&p, Format::Auto, &count).unwrap();
            assert_eq!(seen.get(), std::fs::metadata(&p).unwrap().len(), "{name}");
            assert_eq!(super::super::detect(&p).unwrap(), want_format(name));
        }
    }

    fn want_format(name: &str) -> Format {
        if name.contains("jsonl") {
            Format::Jsonl
        } else {
            Format::Text
        }
    }

    #[test]
    fn errors_name_the_gzipped_file_and_the_decompressed_line() {
        let bad = JSONL.replace("\"ops\":[[\"r\",1,1]]", "\"ops\":[[\"r\",1,1]");
        let (_d1, p) = temp("bad.jsonl.gz", &gz(bad.as_bytes()));
        let e = super::super::read(&p, Format::Auto)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("{}:3:", p.display())), "{e}");

        let mut cut = gz(JSONL.as_bytes());
        cut.truncate(cut.len() / 2);
        let (_d2, p) = temp("cut.jsonl.gz", &cut);
        let e = super::super::read(&p, Format::Auto)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&p.display().to_string()), "{e}");
        assert!(e.contains("gzip stream is damaged or cut short"), "{e}");

        let (_d3, p) = temp("blank.jsonl.gz", &gz(b"\n \n"));
        let e = super::super::read(&p, Format::Auto)
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty once decompressed"), "{e}");
    }

    #[test]
    fn a_plain_file_is_not_gzipped() {
        let (_d1, p) = temp("plain.jsonl", JSONL.as_bytes());
        assert!(!is_gzip(&p).unwrap());
        let (_d2, one) = temp("one", b"\x1f");
        assert!(!is_gzip(&one).unwrap());
        assert!(!is_gzip(p.parent().unwrap()).unwrap());
    }
}
