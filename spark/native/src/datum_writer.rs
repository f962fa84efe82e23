//! An Avro binary datum written by its writer schema from Python values in the log's JSON forms (those of
//! `schemas.avro.json_values`: a mirror's rows, an image's), byte for byte as fastavro's `schemaless_writer`
//! writes the datum `json_values` makes of them (the Kafka sink's images: `spark.sinks.kafka.images`):
//!
//!     record  <- dict: each field's value under its CQL name (`cql_name`, else its name), null if absent;
//!                list or tuple (a tuple's record, `Tuple`): its fields in order, null past the end
//!     union   <- None: the null branch; anything else: the one other branch (the contract's unions)
//!     array   <- list or tuple: one block of its items, then the end; dict: its values
//!                of `Entry` records (a map whose keys are not text) <- dict, or list of [key, value] pairs
//!     map     <- dict of str keys, or list of [key, value] pairs: one block of the pairs, then the end
//!     bytes   <- bytes, or str of hex digits after an optional 0x
//!     float, double <- float, int, or str ("NaN", "Infinity", "-Infinity": JSON has no number for them)
//!     string  <- str          boolean <- bool          int, long <- int          null <- None
//!
//! Errors name where the value that does not fit sits (`after.tags[2]`) and what was expected there.

use std::fmt;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};
use ringtail_contract::avro::Writer;

use crate::cql_bytes;
use crate::schema::{Node, NodeId, Record, Schema};
use crate::values::{ENTRY, TUPLE};

/// A value that does not fit its place in the schema: where (outermost first), and why.
#[derive(Debug, PartialEq, Eq)]
pub struct DatumError {
    pub path: Vec<String>,
    pub why: String,
}

impl fmt::Display for DatumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut at = String::new();
        for step in &self.path {
            if !step.starts_with('[') && !at.is_empty() {
                at.push('.');
            }
            at.push_str(step);
        }
        if at.is_empty() {
            write!(f, "the datum: {}", self.why)
        } else {
            write!(f, "{at}: {}", self.why)
        }
    }
}

impl DatumError {
    fn expected(what: &str, value: &Bound<'_, PyAny>) -> DatumError {
        let got = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        DatumError { path: Vec::new(), why: format!("{what} expected, not {got}") }
    }

    /// The error one step further out: `step` is a field's name or an item's `[index]`.
    fn within(mut self, step: impl Into<String>) -> DatumError {
        self.path.insert(0, step.into());
        self
    }
}

/// Write `value` as the datum of node `id` of `schema`.
pub fn write(schema: &Schema, id: NodeId, value: &Bound<'_, PyAny>, w: &mut Writer) -> Result<(), DatumError> {
    match schema.node(id) {
        Node::Null if value.is_none() => Ok(()),
        Node::Null => Err(DatumError::expected("None", value)),
        Node::Boolean => {
            let b = value.cast::<PyBool>().map_err(|_| DatumError::expected("a bool", value))?;
            w.boolean(b.is_true());
            Ok(())
        }
        Node::Int | Node::Long => {
            w.long(value.extract::<i64>().map_err(|_| DatumError::expected("an int of 64 bits", value))?);
            Ok(())
        }
        Node::Float => {
            w.raw(&(float(value)? as f32).to_le_bytes());
            Ok(())
        }
        Node::Double => {
            w.raw(&float(value)?.to_le_bytes());
            Ok(())
        }
        Node::String => {
            let text = value.cast::<PyString>().map_err(|_| DatumError::expected("a str", value))?;
            w.string(text.to_str().map_err(|_| DatumError::expected("text of UTF-8", value))?);
            Ok(())
        }
        Node::Bytes => {
            if let Ok(bytes) = value.cast::<PyBytes>() {
                w.bytes(bytes.as_bytes());
            } else {
                let text = value.cast::<PyString>().map_err(|_| DatumError::expected("bytes or hex", value))?;
                let mut bytes = Vec::new();
                text.to_str()
                    .ok()
                    .and_then(|text| cql_bytes::blob(text, &mut bytes))
                    .ok_or_else(|| DatumError::expected("hex digits", value))?;
                w.bytes(&bytes);
            }
            Ok(())
        }
        Node::Array(items) => match schema.node(*items) {
            Node::Record(entry) if entry.name == ENTRY => pairs(schema, entry, value, w),
            _ => {
                let items_of =
                    if value.is_instance_of::<PyDict>() { value.call_method0("values") } else { Ok(value.clone()) };
                let list = sequence(&items_of.map_err(|e| DatumError { path: vec![], why: e.to_string() })?)
                    .ok_or_else(|| DatumError::expected("a list", value))?;
                w.block(list.len());
                for (index, item) in list.iter().enumerate() {
                    write(schema, *items, item, w).map_err(|e| e.within(format!("[{index}]")))?;
                }
                w.end_blocks();
                Ok(())
            }
        },
        Node::Map(values) => {
            let entries = entries(value).ok_or_else(|| DatumError::expected("a dict or [key, value] pairs", value))?;
            w.block(entries.len());
            for (key, item) in &entries {
                let key = key.cast::<PyString>().map_err(|_| DatumError::expected("a str key", key))?;
                let key = key.to_str().map_err(|_| DatumError::expected("a key of UTF-8", key.as_any()))?;
                w.string(key);
                write(schema, *values, item, w).map_err(|e| e.within(format!("[{key:?}]")))?;
            }
            w.end_blocks();
            Ok(())
        }
        Node::Record(record) => {
            let none = value.py().None().into_bound(value.py());
            if let Ok(dict) = value.cast::<PyDict>() {
                for field in &record.fields {
                    let item =
                        dict.get_item(&field.cql_name).map_err(|e| DatumError { path: vec![], why: e.to_string() })?;
                    write(schema, field.node, item.as_ref().unwrap_or(&none), w)
                        .map_err(|e| e.within(field.name.clone()))?;
                }
                return Ok(());
            }
            let items = sequence(value).filter(|_| record.name == TUPLE);
            let items = items.ok_or_else(|| DatumError::expected("a dict", value))?;
            for (index, field) in record.fields.iter().enumerate() {
                write(schema, field.node, items.get(index).unwrap_or(&none), w)
                    .map_err(|e| e.within(field.name.clone()))?;
            }
            Ok(())
        }
        Node::Union(branches) => {
            let present = !value.is_none();
            let index = branches.iter().position(|b| matches!(schema.node(*b), Node::Null) != present);
            let index = index.ok_or_else(|| DatumError::expected("a value of the union's one branch", value))?;
            w.branch(index as i64);
            write(schema, branches[index], value, w)
        }
    }
}

/// The items of a list or tuple.
fn sequence<'py>(value: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = value.cast::<PyList>() {
        Some(list.iter().collect())
    } else {
        value.cast::<PyTuple>().ok().map(|tuple| tuple.iter().collect())
    }
}

/// The (key, value) pairs of a dict, or of a list of [key, value] pairs.
fn entries<'py>(value: &Bound<'py, PyAny>) -> Option<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    if let Ok(dict) = value.cast::<PyDict>() {
        return Some(dict.iter().collect());
    }
    sequence(value)?
        .iter()
        .map(|pair| match sequence(pair)?.as_slice() {
            [key, item] => Some((key.clone(), item.clone())),
            _ => None,
        })
        .collect()
}

/// A map whose keys are not text, as an array of `entry` records.
fn pairs(schema: &Schema, entry: &Record, value: &Bound<'_, PyAny>, w: &mut Writer) -> Result<(), DatumError> {
    let entries = entries(value).ok_or_else(|| DatumError::expected("a dict or [key, value] pairs", value))?;
    let (key_node, value_node) = (entry.fields[0].node, entry.fields[1].node);
    w.block(entries.len());
    for (index, (key, item)) in entries.iter().enumerate() {
        write(schema, key_node, key, w).map_err(|e| e.within("key").within(format!("[{index}]")))?;
        write(schema, value_node, item, w).map_err(|e| e.within("value").within(format!("[{index}]")))?;
    }
    w.end_blocks();
    Ok(())
}

/// A float or double: a number, or its text (`cql_bytes::float_text`: JSON holds NaN and the infinities so).
fn float(value: &Bound<'_, PyAny>) -> Result<f64, DatumError> {
    if let Ok(text) = value.cast::<PyString>() {
        let parsed = text.to_str().ok().and_then(cql_bytes::float_text);
        return parsed.ok_or_else(|| DatumError::expected("a number", value));
    }
    value.extract::<f64>().map_err(|_| DatumError::expected("a number", value))
}

#[cfg(test)]
mod tests {
    use super::DatumError;

    #[test]
    fn an_error_names_where_its_value_sits() {
        let error = DatumError { path: vec![], why: "a str expected, not int".into() };
        assert_eq!(error.to_string(), "the datum: a str expected, not int");
        let error = error.within("[2]").within("tags").within("after");
        assert_eq!(error.to_string(), "after.tags[2]: a str expected, not int");
    }
}
