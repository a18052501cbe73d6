//! Importers and exporters for the history formats other tools write, so
//! that any of their histories can be checked, and ours handed to them.
//!
//! | [`Format`] | module | reads | writes |
//! |---|---|---|---|
//! | `jsonl` | [`crate::jsonl`] | yes | yes |
//! | `elle-edn` | [`elle_edn`] | Elle / Jepsen EDN | yes |
//! | `elle-json` | [`elle_json`] | Elle JSON (elle-cli) | no |
//! | `text` | [`text`] | PolySI / Plume / IsoVista `r(k,v,s,t)` | yes |
//! | `awdit` | [`awdit`] | AWDIT test histories | no |
//! | `dbcop` | [`dbcop`] | dbcop `history.bincode` and `dbcop generate` JSON | no |
//! | `cobra` | [`cobra`] | Cobra `T<n>.log` directories | no |
//! | `timekiller` | [`timekiller`] | TimeKiller / Chronos JSON | no |
//! | `viper` | [`viper`] | Viper `J<n>.log` directories | no |
//!
//! ```no_run
//! use history::formats::{self, Format};
//! let h = formats::read("history.edn".as_ref(), Format::Auto)?;
//! formats::write(&h, "history.txt".as_ref(), Format::Text)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every importer names the file and the line (or byte offset, for binary
//! formats) of anything it cannot accept, and never panics on bad input.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::ParseError;
use crate::jsonl_fast::Kept;
use crate::model::History;

pub mod awdit;
pub mod cobra;
pub mod dbcop;
mod dbcop_json;
pub mod elle_edn;
pub mod elle_json;
pub mod text;
pub mod timekiller;
pub mod viper;

mod edn;
mod elle_fast;
mod gzip;
pub use gzip::is_gzip;
#[cfg(test)]
mod elle_fast_agreement;
mod jepsen;
pub(crate) mod util;

/// A history format, as named on the command line (`--format`, `--from`,
/// `--to`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Guess from the content ([`detect`]).
    Auto,
    /// The native JSON Lines format (docs/history-format.md).
    Jsonl,
    /// Elle / Jepsen EDN.
    ElleEdn,
    /// Elle JSON, as elle-cli reads.
    ElleJson,
    /// PolySI / Plume / IsoVista `r(k,v,s,t)` text.
    Text,
    /// AWDIT's test format.
    Awdit,
    /// dbcop's `history.bincode`, or the JSON `dbcop generate` writes.
    Dbcop,
    /// A directory of Cobra `T<n>.log` files.
    Cobra,
    /// TimeKiller / Chronos JSON.
    Timekiller,
    /// A directory of Viper `J<n>.log` files.
    Viper,
}

impl Format {
    /// Every format, `Auto` first.
    pub const ALL: [Format; 10] = [
        Format::Auto,
        Format::Jsonl,
        Format::ElleEdn,
        Format::ElleJson,
        Format::Text,
        Format::Awdit,
        Format::Dbcop,
        Format::Cobra,
        Format::Timekiller,
        Format::Viper,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Jsonl => "jsonl",
            Format::ElleEdn => "elle-edn",
            Format::ElleJson => "elle-json",
            Format::Text => "text",
            Format::Awdit => "awdit",
            Format::Dbcop => "dbcop",
            Format::Cobra => "cobra",
            Format::Timekiller => "timekiller",
            Format::Viper => "viper",
        }
    }

    /// True for the formats [`write()`] can produce.
    pub fn can_write(self) -> bool {
        matches!(self, Format::Jsonl | Format::ElleEdn | Format::Text)
    }

    /// True for the formats whose history is a directory of files.
    pub fn is_directory(self) -> bool {
        matches!(self, Format::Cobra | Format::Viper)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown history format {0:?} (expected one of: auto, jsonl, elle-edn, elle-json, text, awdit, dbcop, cobra, timekiller, viper)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        Ok(match norm.as_str() {
            "auto" => Format::Auto,
            "jsonl" | "json-lines" | "isoharness" => Format::Jsonl,
            "elle-edn" | "edn" | "elle" | "jepsen" => Format::ElleEdn,
            "elle-json" => Format::ElleJson,
            "text" | "polysi" | "plume" | "text-rwst" => Format::Text,
            "awdit" | "awdit-test" => Format::Awdit,
            "dbcop" | "dbcop-bincode" | "bincode" => Format::Dbcop,
            "cobra" | "cobra-log" => Format::Cobra,
            "timekiller" | "timekiller-json" | "chronos" => Format::Timekiller,
            "viper" | "viper-json" => Format::Viper,
            _ => return Err(UnknownFormat(s.to_string())),
        })
    }
}

/// Why a history could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The output could not be written.
    #[error("{}: {source}", .path.as_deref().map_or_else(|| "<output>".into(), |p| p.display().to_string()))]
    Io {
        path: Option<PathBuf>,
        source: io::Error,
    },
    /// There is no exporter for this format.
    #[error("histories cannot be written as {format} (writable: jsonl, elle-edn, text)")]
    NotWritable { format: Format },
    /// A transaction has something the format cannot express.
    #[error("transaction {txn} cannot be written as {format}: {reason}")]
    Unrepresentable {
        format: Format,
        txn: u64,
        reason: String,
    },
}

impl From<io::Error> for ExportError {
    fn from(source: io::Error) -> ExportError {
        ExportError::Io { path: None, source }
    }
}

/// The bytes [`detect`] looks at.
const SNIFF_BYTES: usize = 16 * 1024;

/// Guesses the format of a history file or directory from its content.
///
/// A directory holding `T<n>.log` files is Cobra, `J<n>.log` files Viper,
/// a `history.bincode` or `<n>.json` files (`dbcop generate`) dbcop. A file
/// with NUL bytes or invalid UTF-8 is dbcop. Otherwise the first character
/// that is not whitespace or a `;` comment decides: `{:` Elle EDN, `{"`
/// JSONL unless the first key is `"params"` or `"data"` (dbcop JSON),
/// `[`/`(` then `{:` Elle EDN, `[{"` with a `"tid"` TimeKiller (else Elle
/// JSON), `[[{"events"` / `[[{"committed"` dbcop's bare sessions, `r(`/`w(`
/// the text format, `r k v`/`w k v`/`---`/`===` AWDIT.
pub fn detect(path: &Path) -> Result<Format, ParseError> {
    let meta = std::fs::metadata(path).map_err(|e| ParseError::io(Some(path), e))?;
    if meta.is_dir() {
        return detect_dir(path);
    }
    let buf = if gzip::is_gzip(path)? {
        gzip::prefix(path, SNIFF_BYTES)?
    } else {
        let mut f = util::open(path)?;
        let mut buf = Vec::with_capacity(SNIFF_BYTES);
        Read::by_ref(&mut f)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut buf)
            .map_err(|e| ParseError::io(Some(path), e))?;
        buf
    };
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Err(ParseError::whole(
            Some(path),
            "the file is empty: cannot tell its format",
        ));
    }
    detect_bytes(&buf).ok_or_else(|| {
        ParseError::whole(
            Some(path),
            "cannot tell the history format from the content; name it with --format (jsonl, elle-edn, elle-json, text, awdit, dbcop, cobra, timekiller, viper)",
        )
    })
}

fn detect_dir(dir: &Path) -> Result<Format, ParseError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ParseError::io(Some(dir), e))?;
    let (mut cobra, mut viper, mut dbcop) = (false, false, false);
    for entry in entries {
        let entry = entry.map_err(|e| ParseError::io(Some(dir), e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        cobra |= cobra::session_of(name).is_some();
        viper |= viper::session_of(name).is_some();
        dbcop |= name == "history.bincode" || dbcop::json_history_number(name).is_some();
    }
    match (cobra, viper, dbcop) {
        (true, _, _) => Ok(Format::Cobra),
        (_, true, _) => Ok(Format::Viper),
        (_, _, true) => Ok(Format::Dbcop),
        _ => Err(ParseError::whole(
            Some(dir),
            "this directory holds no T<n>.log (Cobra), J<n>.log (Viper), history.bincode or <n>.json (dbcop)",
        )),
    }
}

/// The format a `--format` flag names, with `auto` told from the content
/// ([`detect`]).
pub fn resolve(path: &Path, format: Format) -> Result<Format, ParseError> {
    match format {
        Format::Auto => detect(path),
        f => Ok(f),
    }
}

/// Guesses the format from the first bytes of a file (`None` when unsure).
pub fn detect_bytes(prefix: &[u8]) -> Option<Format> {
    let text = match std::str::from_utf8(prefix) {
        Ok(s) => s,
        // A multi-byte character cut by the end of the prefix is fine.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&prefix[..e.valid_up_to()]).ok()?
        }
        Err(_) => return Some(Format::Dbcop),
    };
    if text.contains('\0') {
        return Some(Format::Dbcop);
    }
    let b = text.trim_start_matches('\u{feff}').as_bytes();
    // Skip whitespace, commas and `;` comments.
    let mut i = 0;
    let skip = |mut i: usize| loop {
        match b.get(i) {
            Some(c) if c.is_ascii_whitespace() || *c == b',' => i += 1,
            Some(b';') => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            _ => return i,
        }
    };
    i = skip(i);
    let first = *b.get(i)?;
    let next = |j: usize| b.get(skip(j)).copied();
    match first {
        b'{' => match next(i + 1) {
            Some(b':') => Some(Format::ElleEdn),
            _ if first_key_is(b, skip(i + 1), &["params", "data"]) => Some(Format::Dbcop),
            _ => Some(Format::Jsonl),
        },
        b'#' => Some(Format::ElleEdn),
        b'[' | b'(' => {
            let j = skip(i + 1);
            match b.get(j) {
                Some(b'{') => match next(j + 1) {
                    Some(b':') => Some(Format::ElleEdn),
                    Some(b'"') => {
                        if text.contains("\"tid\"") {
                            Some(Format::Timekiller)
                        } else {
                            Some(Format::ElleJson)
                        }
                    }
                    _ => None,
                },
                Some(b'#') => Some(Format::ElleEdn),
                Some(b'[') => {
                    let k = skip(j + 1);
                    let object = b.get(k) == Some(&b'{');
                    (object && first_key_is(b, skip(k + 1), &["events", "committed"]))
                        .then_some(Format::Dbcop)
                }
                _ => None,
            }
        }
        b'r' | b'w' | b'R' | b'W' => match b.get(i + 1) {
            Some(b'(') => Some(Format::Text),
            Some(b' ' | b'\t') => Some(Format::Awdit),
            _ => None,
        },
        b'-' | b'=' => Some(Format::Awdit),
        _ => None,
    }
}

/// True when `b[at..]` starts with a JSON string that is one of `keys`.
fn first_key_is(b: &[u8], at: usize, keys: &[&str]) -> bool {
    keys.iter().any(|k| {
        b.get(at..)
            .and_then(|rest| rest.strip_prefix(b"\""))
            .and_then(|rest| rest.strip_prefix(k.as_bytes()))
            .is_some_and(|rest| rest.first() == Some(&b'"'))
    })
}

/// True when the file (decompressed, when `gzipped`) holds only whitespace.
fn is_blank(path: &Path, gzipped: bool) -> Result<bool, ParseError> {
    let f: Box<dyn Read> = if gzipped {
        Box::new(gzip::reader(path, &|_| {})?)
    } else {
        Box::new(util::open(path)?)
    };
    for byte in io::BufReader::new(f).bytes() {
        if !byte
            .map_err(|e| ParseError::io(Some(path), e))?
            .is_ascii_whitespace()
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Reads a history in `format` ([`Format::Auto`]: [`detect`] it).
///
/// A history without a single transaction is an error, whatever the
/// format: an empty or whitespace-only file, `[]`, a Cobra or Viper folder
/// whose logs are empty, a JSONL file with only a header and an end line.
/// Nothing in it could be checked, and an "ok" would be meaningless.
pub fn read(path: &Path, format: Format) -> Result<History, ParseError> {
    read_counting(path, format, &|_| {})
}

/// [`read`], telling `on_bytes` how many bytes of the file were read each
/// time a block of it is read (for a progress bar). Only JSONL is read
/// through a reader that counts; the other formats do not call it.
pub fn read_counting(
    path: &Path,
    format: Format,
    on_bytes: &dyn Fn(u64),
) -> Result<History, ParseError> {
    read_kept(path, format, on_bytes, Kept::All)
}

/// [`read_counting`], keeping `kept` of each transaction of a JSONL
/// history (the other formats have nothing to leave out).
pub fn read_kept(
    path: &Path,
    format: Format,
    on_bytes: &dyn Fn(u64),
    kept: Kept,
) -> Result<History, ParseError> {
    let gzipped = gzip::is_gzip(path)?;
    if path.is_file() && is_blank(path, gzipped)? {
        return Err(ParseError::whole(
            Some(path),
            if gzipped {
                "the file is empty once decompressed: it holds no transactions"
            } else {
                "the file is empty: it holds no transactions"
            },
        ));
    }
    let (format, h) = match format {
        Format::Auto => {
            let f = detect(path)?;
            let why = guessed_from(f, path.is_dir(), f == Format::Dbcop && is_json_file(path));
            let h = read_as(path, f, gzipped, on_bytes, kept).map_err(|e| {
                if name_confirms(path, f) {
                    e
                } else {
                    guessed(e, f, why)
                }
            })?;
            (f, h)
        }
        f => (f, read_as(path, f, gzipped, on_bytes, kept)?),
    };
    if h.txns.is_empty() {
        let what = if format.is_directory() {
            format!("the {format} logs in this directory hold no transactions")
        } else {
            format!("the {format} history holds no transactions")
        };
        return Err(ParseError::whole(Some(path), what));
    }
    Ok(h)
}

/// What [`detect`] saw that made it guess `format`.
fn guessed_from(format: Format, dir: bool, json: bool) -> &'static str {
    match format {
        Format::Dbcop if dir => "the folder holds a history.bincode or <n>.json files",
        Format::Dbcop if json => {
            "it is JSON whose first key is dbcop's \"params\" or \"data\", or starts [[{\"events\""
        }
        Format::Dbcop => "the file is binary: it has NUL bytes or is not UTF-8 text",
        Format::Cobra => "the folder holds T<n>.log files",
        Format::Viper => "the folder holds J<n>.log files",
        Format::ElleEdn => "it starts like EDN: `{:`, `[{:` or `#`",
        Format::Jsonl => "it starts with a JSON object",
        Format::ElleJson => "it starts with a JSON array of objects",
        Format::Timekiller => "it is a JSON array of objects with \"tid\" fields",
        Format::Text => "it starts with `r(` or `w(`",
        Format::Awdit => "it starts with `r k v`, `w k v`, `---` or `===`",
        Format::Auto => "its content",
    }
}

/// True when the file's name agrees with the guess (`h.jsonl` read as
/// jsonl): then saying that the format was guessed is only noise.
fn name_confirms(path: &Path, format: Format) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match format {
        Format::Jsonl => ext == "jsonl",
        Format::ElleEdn => ext == "edn",
        Format::ElleJson | Format::Timekiller => ext == "json",
        Format::Text | Format::Awdit => ext == "txt",
        Format::Dbcop => ext == "bincode" || (ext == "json" && dbcop_json_named(&name)),
        Format::Cobra | Format::Viper | Format::Auto => path.is_dir(),
    }
}

/// True when the file starts like JSON (for dbcop, which has two encodings).
fn is_json_file(path: &Path) -> bool {
    let mut head = Vec::with_capacity(64);
    util::open(path)
        .and_then(|f| {
            f.take(64)
                .read_to_end(&mut head)
                .map_err(|e| ParseError::io(Some(path), e))
        })
        .is_ok_and(|_| dbcop::is_json(&head))
}

/// True for `<n>.json`, the names `dbcop generate` gives.
fn dbcop_json_named(name: &str) -> bool {
    dbcop::json_history_number(name).is_some()
}

/// An error of an importer that auto mode chose, saying so: `read as dbcop
/// (guessed by --format auto: the file is binary ...; else name the format
/// with --format): ...`.
fn guessed(mut e: ParseError, format: Format, why: &str) -> ParseError {
    e.message = format!(
        "read as {format} (guessed by --format auto: {why}; else name the format with --format): {}",
        e.message
    );
    e
}

/// Reads a history known to be in `format`.
fn read_as(
    path: &Path,
    format: Format,
    gzipped: bool,
    on_bytes: &dyn Fn(u64),
    kept: Kept,
) -> Result<History, ParseError> {
    if format.is_directory() && !path.is_dir() {
        return Err(ParseError::whole(
            Some(path),
            format!("a {format} history is a directory of log files, and this is not a directory"),
        ));
    }
    if gzipped {
        let mut z = gzip::reader(path, on_bytes)?;
        if format == Format::Jsonl {
            // A damaged stream is an input error after the lines before it.
            return crate::jsonl::read_jsonl_from(io::BufReader::new(z), Some(path), kept);
        }
        let mut bytes = Vec::new();
        z.read_to_end(&mut bytes)
            .map_err(|e| ParseError::io(Some(path), e))?;
        return parse_as(&bytes, format, Some(path));
    }
    match format {
        Format::Auto => unreachable!("detect never answers auto"),
        Format::Jsonl => crate::jsonl::read_jsonl_file_kept(path, on_bytes, kept),
        Format::ElleEdn => elle_edn::read_file(path),
        Format::ElleJson => elle_json::read_file(path),
        Format::Text => text::read_file(path),
        Format::Awdit => awdit::read_file(path),
        Format::Dbcop => dbcop::read_file(path),
        Format::Cobra => cobra::read_dir(path),
        Format::Timekiller => timekiller::read_file(path),
        Format::Viper => viper::read_dir(path),
    }
}

/// Parses a single-file history held in memory (stdin, tests);
/// [`Format::Auto`] sniffs it. `path` only names the input in errors.
/// Directory formats (Cobra, Viper) are read with [`cobra::parse_logs`] and
/// [`viper::parse_logs`] instead.
pub fn parse(bytes: &[u8], format: Format, path: Option<&Path>) -> Result<History, ParseError> {
    match format {
        Format::Auto => {
            let f = detect_bytes(bytes).ok_or_else(|| {
                ParseError::whole(path, "cannot tell the history format from the content")
            })?;
            let json = f == Format::Dbcop && dbcop::is_json(bytes);
            parse_as(bytes, f, path).map_err(|e| guessed(e, f, guessed_from(f, false, json)))
        }
        f => parse_as(bytes, f, path),
    }
}

fn parse_as(bytes: &[u8], format: Format, path: Option<&Path>) -> Result<History, ParseError> {
    let text = || util::utf8(bytes, path);
    match format {
        Format::Auto => unreachable!("detect_bytes never answers auto"),
        Format::Jsonl => crate::jsonl::read_jsonl(bytes, path),
        Format::ElleEdn => elle_edn::read(bytes, path),
        Format::ElleJson => elle_json::read(bytes, path),
        Format::Text => text::parse(text()?, path),
        Format::Awdit => awdit::parse(text()?, path),
        Format::Dbcop => dbcop::parse(bytes, path),
        Format::Timekiller => timekiller::read(bytes, path),
        Format::Cobra | Format::Viper => Err(ParseError::whole(
            path,
            format!("a {format} history is a directory of log files, not one input"),
        )),
    }
}

/// Writes a history to any output in `format` (jsonl, elle-edn or text).
pub fn write_to<W: Write>(h: &History, out: W, format: Format) -> Result<(), ExportError> {
    match format {
        Format::Jsonl => {
            crate::jsonl::write_jsonl(h, out)?;
            Ok(())
        }
        Format::ElleEdn => elle_edn::write(h, BufWriter::new(out)),
        Format::Text => text::write(h, BufWriter::new(out)),
        other => Err(ExportError::NotWritable { format: other }),
    }
}

/// Writes a history to a file in `format` (jsonl, elle-edn or text). The
/// file is only created once the format is known to be writable.
pub fn write(h: &History, path: &Path, format: Format) -> Result<(), ExportError> {
    if !format.can_write() {
        return Err(ExportError::NotWritable { format });
    }
    let at = |source: io::Error| ExportError::Io {
        path: Some(path.to_path_buf()),
        source,
    };
    let f = File::create(path).map_err(at)?;
    match write_to(h, f, format) {
        Err(ExportError::Io { path: None, source }) => Err(at(source)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert!("csv".parse::<Format>().is_err());
    }

    #[test]
    fn sniffs_content() {
        let cases: [(&[u8], Option<Format>); 18] = [
            (b"{\n  \"params\": {\n    \"id\": 0,", Some(Format::Dbcop)),
            (b"{\"data\": [[]]}", Some(Format::Dbcop)),
            (b"[\n  [\n    {\n      \"events\": [", Some(Format::Dbcop)),
            (b"[[{\"database\": 1}]]", None),
            (
                b"{\"type\":\"header\",\"version\":1}\n",
                Some(Format::Jsonl),
            ),
            (b"{\"id\":0,\"session\":1,\"ops\":[]}", Some(Format::Jsonl)),
            (b"; comment\n{:type :invoke}", Some(Format::ElleEdn)),
            (b"[{:type :invoke}", Some(Format::ElleEdn)),
            (b"({:type :invoke}", Some(Format::ElleEdn)),
            (
                b"[{\"type\":\"invoke\",\"f\":\"txn\"}",
                Some(Format::ElleJson),
            ),
            (
                b"[\n    {\n        \"cts\": {}, \"tid\": 1",
                Some(Format::Timekiller),
            ),
            (b"w(1,1,0,0)\n", Some(Format::Text)),
            (b"r 0 1\n", Some(Format::Awdit)),
            (b"-----\nr 0 1\n", Some(Format::Awdit)),
            (b"\x00\x00\x00\x00\x00\x00\x00\x00\x02", Some(Format::Dbcop)),
            (b"\xff\xfe", Some(Format::Dbcop)),
            (b"hello", None),
            (b"[1, 2]", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                detect_bytes(bytes),
                want,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
