//! Datums as JSON text, the two ways the job writes them:
//!
//! * `value`: as `connector.avro.reader.value_reader` reads a value: bytes as `"0x…"` hex, maps and
//!   map entries as `[key, value]` pairs, tuples as arrays, UDTs as objects by CQL field name;
//! * `content`: the datum itself with sorted keys, bytes as hex (what a change's digest covers).
//!
//! Maps keep Python's dict semantics: a repeated key keeps its first place and its last value.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::datum::Datum;
use crate::json::{self, Style};
use crate::schema::{Node, NodeId, Record, Schema};

pub const ENTRY: &str = "Entry";
pub const TUPLE: &str = "Tuple";

/// Entries of a map as a dict holds them.
pub fn dict<'d, 'a>(entries: &'d [(&'a str, Datum<'a>)]) -> Vec<(&'a str, &'d Datum<'a>)> {
    let mut out: Vec<(&'a str, &'d Datum<'a>)> = Vec::with_capacity(entries.len());
    let mut places: HashMap<&'a str, usize> = HashMap::new();
    for (key, value) in entries {
        match places.entry(key) {
            Entry::Occupied(place) => out[*place.get()].1 = value,
            Entry::Vacant(place) => {
                place.insert(out.len());
                out.push((key, value));
            }
        }
    }
    out
}

pub fn primitive(out: &mut String, datum: &Datum<'_>) {
    match datum {
        Datum::Null => out.push_str("null"),
        Datum::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Datum::Long(v) => json::int(out, *v),
        Datum::Float(v) => json::float(out, *v as f64),
        Datum::Double(v) => json::float(out, *v),
        Datum::Str(s) => json::string(out, s),
        Datum::Bytes(b) => {
            out.push_str("\"0x");
            json::hex(out, b);
            out.push('"');
        }
        Datum::Array(_) | Datum::Map(_) | Datum::Record(_) => unreachable!("not a primitive"),
    }
}

pub fn value(out: &mut String, schema: &Schema, id: NodeId, datum: &Datum<'_>, style: Style) {
    let id = schema.branch(id);
    match (schema.node(id), datum) {
        (_, Datum::Null) => out.push_str("null"),
        (Node::Array(items), Datum::Array(elements)) => {
            let items = schema.branch(*items);
            let entry = match schema.node(items) {
                Node::Record(r) if r.name == ENTRY => Some((r.index("key"), r.index("value"), r)),
                _ => None,
            };
            out.push('[');
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item);
                }
                match (entry, element) {
                    (Some((Some(k), Some(v), record)), Datum::Record(fields)) => pair(
                        out,
                        style,
                        |o| value(o, schema, record.fields[k].node, &fields[k], style),
                        |o| value(o, schema, record.fields[v].node, &fields[v], style),
                    ),
                    _ => value(out, schema, items, element, style),
                }
            }
            out.push(']');
        }
        (Node::Map(values), Datum::Map(entries)) => {
            out.push('[');
            for (i, (key, v)) in dict(entries).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item);
                }
                pair(out, style, |o| json::string(o, key), |o| value(o, schema, *values, v, style));
            }
            out.push(']');
        }
        (Node::Record(record), Datum::Record(fields)) => record_value(out, schema, record, fields, style, false),
        _ => primitive(out, datum),
    }
}

/// A tuple as an array, a UDT as an object by CQL field name; `held_only`: a UDT without its null fields
/// (as a snapshot reads a non-frozen one: CQL names only the fields that hold a value).
pub fn record_value(
    out: &mut String,
    schema: &Schema,
    record: &Record,
    fields: &[Datum<'_>],
    style: Style,
    held_only: bool,
) {
    let tuple = record.name == TUPLE;
    out.push(if tuple { '[' } else { '{' });
    let mut first = true;
    for (field, v) in record.fields.iter().zip(fields) {
        if held_only && !tuple && *v == Datum::Null {
            continue;
        }
        if !first {
            out.push_str(style.item);
        }
        first = false;
        if !tuple {
            json::string(out, &field.cql_name);
            out.push_str(style.key);
        }
        value(out, schema, field.node, v, style);
    }
    out.push(if tuple { ']' } else { '}' });
}

/// `[a, b]` in `style`.
pub fn pair(out: &mut String, style: Style, a: impl FnOnce(&mut String), b: impl FnOnce(&mut String)) {
    out.push('[');
    a(out);
    out.push_str(style.item);
    b(out);
    out.push(']');
}

pub fn content(out: &mut String, schema: &Schema, id: NodeId, datum: &Datum<'_>) {
    let id = schema.branch(id);
    let style = json::SPACED;
    match (schema.node(id), datum) {
        (_, Datum::Null) => out.push_str("null"),
        (Node::Array(items), Datum::Array(elements)) => {
            out.push('[');
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item);
                }
                content(out, schema, *items, element);
            }
            out.push(']');
        }
        (Node::Map(values), Datum::Map(entries)) => {
            let mut entries = dict(entries);
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item);
                }
                json::string(out, key);
                out.push_str(style.key);
                content(out, schema, *values, v);
            }
            out.push('}');
        }
        (Node::Record(record), Datum::Record(fields)) => {
            out.push('{');
            for (i, &f) in record.sorted.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item);
                }
                json::string(out, &record.fields[f].name);
                out.push_str(style.key);
                content(out, schema, record.fields[f].node, &fields[f]);
            }
            out.push('}');
        }
        _ => primitive(out, datum),
    }
}
