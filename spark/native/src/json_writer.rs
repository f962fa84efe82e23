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

use std::fmt::Write;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::json;

/// Append the JSON text of `value` to `out`; None leaves it to the reference (`out` then holds part of it).
pub fn write(value: &Bound<'_, PyAny>, out: &mut String) -> Option<()> {
    if value.is_none() {
        out.push_str("null");
    } else if let Ok(text) = value.cast::<PyString>() {
        json::ascii_string(out, text.to_str().ok()?);
    } else if let Ok(b) = value.cast::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
    } else if value.is_instance_of::<PyInt>() {
        match value.extract::<i64>() {
            Ok(n) => json::int(out, n),
            Err(_) => {
                let _ = write!(out, "{}", value.str().ok()?);
            }
        }
    } else if let Ok(number) = value.cast::<PyFloat>() {
        if !number.value().is_finite() {
            return None;
        }
        json::float(out, number.value());
    } else if let Ok(dict) = value.cast::<PyDict>() {
        out.push('{');
        for (index, (key, item)) in dict.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            json::ascii_string(out, key.cast::<PyString>().ok()?.to_str().ok()?);
            out.push(':');
            write(&item, out)?;
        }
        out.push('}');
    } else if let Ok(list) = value.cast::<PyList>() {
        items(list.iter(), out)?;
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        items(tuple.iter(), out)?;
    } else {
        return None;
    }
    Some(())
}

fn items<'py>(values: impl Iterator<Item = Bound<'py, PyAny>>, out: &mut String) -> Option<()> {
    out.push('[');
    for (index, item) in values.enumerate() {
        if index > 0 {
            out.push(',');
        }
        write(&item, out)?;
    }
    out.push(']');
    Some(())
}
