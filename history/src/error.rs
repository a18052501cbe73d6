//! Errors that point at the place in the input that is wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// A history that cannot be read: which file, which line (or byte offset for
/// binary formats), and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The file, when reading one.
    pub path: Option<PathBuf>,
    /// 1-based line number, for text formats.
    pub line: Option<usize>,
    /// Byte offset, for binary formats.
    pub offset: Option<u64>,
    /// What is wrong, in one line.
    pub message: String,
}

impl ParseError {
    /// An error at a line of a text file.
    pub fn at(path: Option<&Path>, line: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            path: path.map(Path::to_path_buf),
            line: Some(line),
            offset: None,
            message: message.into(),
        }
    }

    /// An error at a byte offset of a binary file.
    pub fn at_offset(path: Option<&Path>, offset: u64, message: impl Into<String>) -> ParseError {
        ParseError {
            path: path.map(Path::to_path_buf),
            line: None,
            offset: Some(offset),
            message: message.into(),
        }
    }

    /// An error about the file as a whole.
    pub fn whole(path: Option<&Path>, message: impl Into<String>) -> ParseError {
        ParseError {
            path: path.map(Path::to_path_buf),
            line: None,
            offset: None,
            message: message.into(),
        }
    }

    /// The file could not be opened or read.
    pub fn io(path: Option<&Path>, e: std::io::Error) -> ParseError {
        ParseError::whole(path, e.to_string())
    }

    /// Names the file, when the error was made without it.
    pub fn in_file(mut self, path: &Path) -> ParseError {
        if self.path.is_none() {
            self.path = Some(path.to_path_buf());
        }
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .path
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "<input>".to_string());
        match (self.line, self.offset) {
            (Some(l), _) => write!(f, "{name}:{l}: {}", self.message),
            (None, Some(o)) => write!(f, "{name}: byte {o}: {}", self.message),
            (None, None) => write!(f, "{name}: {}", self.message),
        }
    }
}
