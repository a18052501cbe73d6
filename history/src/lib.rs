//! Transaction histories: the model, the native JSONL format, and (in
//! [`formats`]) importers and exporters for the formats other tools write.
//!
//! A history is what clients observed: transactions, their micro-ops, their
//! outcome and timing. Checkers take a [`History`]; collectors write one with
//! [`JsonlWriter`] as they go.

mod blocks;
mod elements;
pub mod error;
pub mod formats;
pub mod jsonl;
mod jsonl_fast;
pub mod level;
pub mod model;

pub use error::ParseError;
pub use formats::{ExportError, Format, UnknownFormat};
pub use jsonl::{
    read_jsonl, read_jsonl_file, read_jsonl_str, to_jsonl_string, write_jsonl, JsonlReader,
    JsonlWriter, Record,
};
pub use jsonl_fast::Kept;
pub use level::{Level, UnknownLevel};
pub use model::{
    DbTs, End, Fault, Header, History, Key, Op, Status, Txn, Value, FINAL_READ, LEADER_CHANGE,
    PASSING_READ,
};
