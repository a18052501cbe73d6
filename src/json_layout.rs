//! The layout of the JSON that `harness` writes (`check --json`,
//! `report.json`): objects one field a line, as `serde_json`'s pretty
//! printer lays them out, but an array of numbers, strings or arrays on one
//! line. The pretty printer puts every element on a line of its own, which
//! made the certificate of a million-transaction `ok` (a commit order of
//! two million `[txn, start]` pairs) 76 MB of mostly indentation; laid out
//! here it is a fifth of that. Only whitespace differs: any JSON reader
//! reads the same document.

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};
use std::io::{self, Write};

/// `value` as JSON text in this layout (without a final newline).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    to_writer(&mut out, value)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// `value` written as JSON text in this layout (without a final newline):
/// a certificate of tens of megabytes goes out as it is laid out, never
/// held whole.
pub fn to_writer<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Layout::default());
    value.serialize(&mut ser)
}

/// One open array or object.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    /// An object, laid out a field a line.
    Object,
    /// An array whose layout waits for its first element.
    Undecided,
    /// An array of objects, an element a line.
    Lines,
    /// An array on one line, and everything inside it.
    Inline,
}

/// The formatter: a stack of what is open, and the indent of what is laid
/// out over lines.
#[derive(Default)]
struct Layout {
    open: Vec<Open>,
    indent: usize,
    /// Whether the innermost open container holds a value yet.
    has_value: bool,
}

impl Layout {
    /// Whether we are inside an array laid out on one line.
    fn inline(&self) -> bool {
        self.open.contains(&Open::Inline)
    }

    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.indent {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Settles the layout of an array at its first element: on lines when
    /// that element is an object, else on one line.
    fn lead<W: ?Sized + Write>(&mut self, w: &mut W, object: bool) -> io::Result<()> {
        if let Some(top) = self.open.last_mut() {
            if *top == Open::Undecided {
                if object {
                    *top = Open::Lines;
                    return self.newline(w);
                }
                *top = Open::Inline;
                self.indent -= 1;
            }
        }
        Ok(())
    }
}

/// A scalar: settle the array it opens, then write it compactly.
macro_rules! scalar {
    ($($name:ident: $ty:ty),* $(,)?) => {$(
        fn $name<W: ?Sized + Write>(&mut self, w: &mut W, v: $ty) -> io::Result<()> {
            self.lead(w, false)?;
            CompactFormatter.$name(w, v)
        }
    )*};
}

impl Formatter for Layout {
    scalar!(
        write_bool: bool, write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64,
        write_i128: i128, write_u8: u8, write_u16: u16, write_u32: u32, write_u64: u64,
        write_u128: u128, write_f32: f32, write_f64: f64, write_number_str: &str,
        write_raw_fragment: &str, write_byte_array: &[u8],
    );

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.lead(w, false)?;
        w.write_all(b"null")
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.lead(w, false)?;
        w.write_all(b"\"")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.lead(w, false)?;
        let open = if self.inline() {
            Open::Inline
        } else {
            Open::Undecided
        };
        if open == Open::Undecided {
            self.indent += 1;
        }
        self.open.push(open);
        self.has_value = false;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        let open = self.open.pop();
        match open {
            Some(Open::Lines) => {
                self.indent -= 1;
                self.newline(w)?;
            }
            Some(Open::Undecided) => self.indent -= 1, // empty
            _ => {}
        }
        self.has_value = true;
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match self.open.last() {
            Some(Open::Lines) => {
                w.write_all(b",")?;
                self.newline(w)
            }
            _ if first => Ok(()), // the first element settles the layout
            _ => w.write_all(b", "),
        }
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.lead(w, true)?;
        if !self.inline() {
            self.indent += 1;
        }
        self.open.push(Open::Object);
        self.has_value = false;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open.pop();
        if !self.inline() {
            self.indent -= 1;
            if self.has_value {
                self.newline(w)?;
            }
        }
        self.has_value = true;
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.inline() {
            if !first {
                w.write_all(b" ")?;
            }
            Ok(())
        } else {
            self.newline(w)
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn arrays_of_scalars_and_pairs_take_one_line_objects_take_a_line_a_field() {
        let v = json!({
            "level": "si",
            "satisfies": ["rc", "ra"],
            "order": [[0, false], [0, true]],
            "empty": [],
            "none": {},
            "anomalies": [{"name": "G1c", "cycle": [1, 2]}, {"name": "G0"}],
            "nested": {"x": [1, {"a": null}]},
        });
        let text = super::to_string(&v).unwrap();
        let want = r#"{
  "anomalies": [
    {
      "cycle": [1, 2],
      "name": "G1c"
    },
    {
      "name": "G0"
    }
  ],
  "empty": [],
  "level": "si",
  "nested": {
    "x": [1, {"a": null}]
  },
  "none": {},
  "order": [[0, false], [0, true]],
  "satisfies": ["rc", "ra"]
}"#;
        assert_eq!(text, want);
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }
}
