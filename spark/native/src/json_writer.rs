//! Python values as JSON text, byte for byte as `json.JSONEncoder(separators=(",", ":"), allow_nan=False)`
//! writes them (the HTTP sink's images: `spark.sinks.http.images`):
//!
//!     None -> null      True, False -> true, false      int -> its digits      float -> Python's repr
//!     str  -> "…" with '"', '\' and the control characters escaped, every character past ASCII as \uXXXX
//!             (a pair of surrogates past U+FFFF), as `ensure_ascii` does
//!     dict -> {"key":value,…} in the dict's order, str keys      list, tuple -> […]
//!
//! A value this module does not write exactly as the reference would (NaN or an infinity, which the reference
//! refuses; a str holding a lone surrogate; a key that is not a str; any other type) is `None`: the caller
//! leaves it to the reference, which writes it or raises its error.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Append the JSON text of `value` to `out`; None leaves it to the reference (`out` then holds part of it).
pub fn write(value: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Option<()> {
    if value.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(text) = value.cast::<PyString>() {
        string(text.to_str().ok()?, out);
    } else if let Ok(b) = value.cast::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if value.is_instance_of::<PyInt>() {
        match value.extract::<i64>() {
            Ok(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Err(_) => out.extend_from_slice(value.str().ok()?.to_str().ok()?.as_bytes()),
        }
    } else if let Ok(number) = value.cast::<PyFloat>() {
        if !number.value().is_finite() {
            return None;
        }
        out.extend_from_slice(value.repr().ok()?.to_str().ok()?.as_bytes());
    } else if let Ok(dict) = value.cast::<PyDict>() {
        out.push(b'{');
        for (index, (key, item)) in dict.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            string(key.cast::<PyString>().ok()?.to_str().ok()?, out);
            out.push(b':');
            write(&item, out)?;
        }
        out.push(b'}');
    } else if let Ok(list) = value.cast::<PyList>() {
        items(list.iter(), out)?;
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        items(tuple.iter(), out)?;
    } else {
        return None;
    }
    Some(())
}

fn items<'py>(values: impl Iterator<Item = Bound<'py, PyAny>>, out: &mut Vec<u8>) -> Option<()> {
    out.push(b'[');
    for (index, item) in values.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write(&item, out)?;
    }
    out.push(b']');
    Some(())
}

/// A string as `ensure_ascii` writes it.
pub fn string(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(b"\\u");
                    out.extend((0..4).rev().map(|shift| HEX[((*unit >> (shift * 4)) & 0xf) as usize]));
                }
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::string;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        string(text, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_escaped_as_ensure_ascii_escapes_them() {
        // json.dumps's output for the same texts.
        assert_eq!(written("plain ~"), r#""plain ~""#);
        assert_eq!(written("a\"b\\c/"), r#""a\"b\\c/""#);
        assert_eq!(written("\n\r\t\u{8}\u{c}\u{1}\u{7f}"), r#""\n\r\t\b\f\u0001\u007f""#);
        assert_eq!(written("héllo €"), r#""h\u00e9llo \u20ac""#);
        assert_eq!(written("𝄞"), r#""\ud834\udd1e""#);
    }
}
