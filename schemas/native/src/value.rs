//! CQL values, as Cassandra serialized them, written as the Avro datum of their type (the mapping
//! of `connector.avro.types`):
//!
//!     ascii, text -> string      blob -> bytes      boolean -> boolean
//!     tinyint, smallint, int -> int                 bigint, counter, time -> long
//!     float, double -> float, double                timestamp -> long (ms)   date -> int (days)
//!     varint, decimal, inet, uuid, timeuuid -> string
//!     duration -> record {months, days, nanoseconds}
//!     list, set, vector -> array                    map with ascii/text keys -> map
//!     other maps -> array of {key, value}           tuple, UDT -> record of nullable fields
//!
//! A value is absent (null), Cassandra's empty value, or bytes. Where the Python layer would decode
//! a value to None — null, or the empty value of a non-text type — the datum is the null branch of
//! its union; an empty text or blob is '' or b''.

use crate::avro::Writer;
use crate::cql::CqlType;
use crate::text;
use crate::vint::read_uvint;

/// Why a value does not fit its type (or a cell its table): the kind, and the words the reference
/// reader's CqlValueError and SchemaMismatch use, which the Python side shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueError {
    /// A value of fixed size with another: `bytes` bytes for `of` ("a date value", "an inet value").
    Size { bytes: usize, of: String },
    /// Bytes that end before what they announce.
    Overrun(&'static str),
    /// Bytes left after the last part.
    Trailing(&'static str),
    /// A number outside the range its type allows.
    OutOfRange(String),
    /// Text that is not what its type says (not UTF-8, not ascii).
    Text(String),
    /// A structure that does not fit the type or the table.
    Malformed(&'static str),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::Size { bytes, of } => write!(f, "{bytes} bytes for {of}"),
            ValueError::Overrun(what) | ValueError::Trailing(what) | ValueError::Malformed(what) => f.write_str(what),
            ValueError::OutOfRange(why) | ValueError::Text(why) => f.write_str(why),
        }
    }
}

/// A value as a cell, a clustering column or a collection element holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Null,
    Empty,
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    /// Serialized bytes as a value: no bytes are the empty value.
    pub fn of(raw: &'a [u8]) -> Value<'a> {
        if raw.is_empty() {
            Value::Empty
        } else {
            Value::Bytes(raw)
        }
    }

    /// The Python layer reads it as None.
    pub fn is_none(&self, cql: &CqlType) -> bool {
        match self {
            Value::Null => true,
            Value::Empty => cql.empty_is_null(),
            Value::Bytes(_) => false,
        }
    }
}

/// `["null", T]` of a value: the datum of `optional(avro_type)`.
pub fn optional(w: &mut Writer, cql: &CqlType, value: Value<'_>) -> Result<(), ValueError> {
    if value.is_none(cql) {
        w.null_or(false);
        return Ok(());
    }
    w.null_or(true);
    present(w, cql, value)
}

/// The datum of `value_type`: nullable only where the empty value reads as None. A null where the
/// type is not nullable (a collection element of a text type) reads as the empty value.
pub fn element(w: &mut Writer, cql: &CqlType, value: Value<'_>) -> Result<(), ValueError> {
    if cql.empty_is_null() {
        return optional(w, cql, value);
    }
    present(w, cql, if value == Value::Null { Value::Empty } else { value })
}

/// A value that does not read as None: an empty text, or bytes.
fn present(w: &mut Writer, cql: &CqlType, value: Value<'_>) -> Result<(), ValueError> {
    match value {
        Value::Bytes(raw) => datum(w, cql, raw),
        _ => {
            w.bytes(b""); // '' or b''
            Ok(())
        }
    }
}

fn exact<const N: usize>(raw: &[u8], cql: &str) -> Result<[u8; N], ValueError> {
    raw.try_into().map_err(|_| ValueError::Size { bytes: raw.len(), of: format!("a {cql} value") })
}

fn signed(raw: &[u8]) -> Result<i64, ValueError> {
    if raw.len() > 8 {
        return Err(ValueError::Size { bytes: raw.len(), of: "a 64-bit value".into() });
    }
    let mut v: i64 = if raw.first().is_some_and(|b| b & 0x80 != 0) { -1 } else { 0 };
    for &b in raw {
        v = v << 8 | b as i64;
    }
    Ok(v)
}

fn zigzag_vint(raw: &[u8], p: usize) -> Result<(i64, usize), ValueError> {
    let (zz, p) = read_uvint(raw, p).ok_or(ValueError::Overrun("vint runs past the end of the value"))?;
    Ok(((zz >> 1) as i64 ^ -((zz & 1) as i64), p))
}

/// A duration's months or days: 32-bit in Cassandra (`Duration`), so a wider vint is damage.
fn duration_part(value: i64, name: &str) -> Result<i64, ValueError> {
    if i32::try_from(value).is_err() {
        return Err(ValueError::OutOfRange(format!("duration {name} {value} outside the 32-bit range")));
    }
    Ok(value)
}

/// Sum of the shard counts of a counter context: int16 header count n, |n| int16 header entries,
/// then 32-byte shards (16-byte counter id, int64 clock, int64 count).
fn counter(raw: &[u8]) -> Result<i64, ValueError> {
    if raw.len() == 8 {
        return signed(raw);
    }
    let count = i16::from_be_bytes(exact::<2>(
        raw.get(..2).ok_or(ValueError::Malformed("malformed counter context"))?,
        "counter",
    )?);
    let header = 2 + 2 * (count as i32).unsigned_abs() as usize;
    if header > raw.len() || !(raw.len() - header).is_multiple_of(32) {
        return Err(ValueError::Malformed("malformed counter context"));
    }
    raw[header..].chunks(32).try_fold(0i64, |sum, shard| {
        sum.checked_add(signed(&shard[24..32])?)
            .ok_or_else(|| ValueError::OutOfRange("counter overflows 64 bits".into()))
    })
}

/// Up to `limit` int32-length-prefixed values from `p` (-1 is null); every byte must be used.
/// `exact`: exactly `limit` of them (collections); else fewer when the bytes end (tuples, UDTs).
fn length_prefixed(raw: &[u8], mut p: usize, limit: usize, exact: bool) -> Result<Vec<Value<'_>>, ValueError> {
    let mut items = Vec::with_capacity(limit.min(4096));
    while items.len() < limit && (exact || p < raw.len()) {
        let size = raw.get(p..p + 4).ok_or(ValueError::Overrun("element length runs past the end of the value"))?;
        let size = i32::from_be_bytes([size[0], size[1], size[2], size[3]]);
        p += 4;
        if size < 0 {
            items.push(Value::Null);
            continue;
        }
        let item =
            raw.get(p..p + size as usize).ok_or(ValueError::Overrun("element runs past the end of the value"))?;
        items.push(Value::of(item));
        p += size as usize;
    }
    if p != raw.len() {
        return Err(ValueError::Trailing("trailing bytes after the last element"));
    }
    Ok(items)
}

/// The elements of a frozen collection: int32 count, then `count * per_item` values.
fn frozen_elements(raw: &[u8], per_item: usize) -> Result<Vec<Value<'_>>, ValueError> {
    let count = raw.get(..4).ok_or(ValueError::Overrun("collection shorter than its element count"))?;
    let count = i32::from_be_bytes([count[0], count[1], count[2], count[3]]);
    if count < 0 {
        return Err(ValueError::Malformed("negative collection size"));
    }
    length_prefixed(raw, 4, count as usize * per_item, true)
}

/// Map entries, one per distinct key: a repeated key keeps its first place and its last value, as
/// a Python dict built from the pairs does.
pub fn distinct_entries<'a>(pairs: impl Iterator<Item = (Value<'a>, Value<'a>)>) -> Vec<(Value<'a>, Value<'a>)> {
    let mut entries: Vec<(Value<'a>, Value<'a>)> = Vec::new();
    for (key, value) in pairs {
        let same =
            |k: &Value<'a>| k == &key || matches!((k, &key), (Value::Null | Value::Empty, Value::Null | Value::Empty));
        match entries.iter_mut().find(|(k, _)| same(k)) {
            Some(entry) => entry.1 = value,
            None => entries.push((key, value)),
        }
    }
    entries
}

/// A map's entries: an Avro map for text keys, else an array of {key, value} records.
pub fn map_entries(
    w: &mut Writer,
    key: &CqlType,
    value: &CqlType,
    entries: &[(Value<'_>, Value<'_>)],
) -> Result<(), ValueError> {
    w.block(entries.len());
    for (k, v) in entries {
        if CqlType::text_keys(key) {
            text_value(w, key, *k)?;
        } else {
            element(w, key, *k)?;
        }
        element(w, value, *v)?;
    }
    w.end_blocks();
    Ok(())
}

/// A text map key: the empty value and null read as ''.
fn text_value(w: &mut Writer, cql: &CqlType, value: Value<'_>) -> Result<(), ValueError> {
    match value {
        Value::Bytes(raw) => datum(w, cql, raw),
        _ => {
            w.bytes(b"");
            Ok(())
        }
    }
}

/// The datum of `avro_type(cql)` for a value's serialized, non-empty bytes.
pub fn datum(w: &mut Writer, cql: &CqlType, raw: &[u8]) -> Result<(), ValueError> {
    use CqlType::*;
    match cql {
        Ascii => {
            if !raw.is_ascii() {
                return Err(ValueError::Text("an ascii value holds a byte above 0x7f".into()));
            }
            w.bytes(raw);
        }
        Text => {
            std::str::from_utf8(raw).map_err(|e| ValueError::Text(format!("a text value is not UTF-8: {e}")))?;
            w.bytes(raw);
        }
        Blob => w.bytes(raw),
        Boolean => w.boolean(raw[0] != 0),
        Tinyint => w.int(i8::from_be_bytes(exact(raw, "tinyint")?) as i64),
        Smallint => w.int(i16::from_be_bytes(exact(raw, "smallint")?) as i64),
        Int => w.int(i32::from_be_bytes(exact(raw, "int")?) as i64),
        Bigint | Time => w.long(i64::from_be_bytes(exact(raw, "64-bit")?)),
        Counter => w.long(counter(raw)?),
        Timestamp => w.long(signed(raw)?),
        Date => {
            if raw.len() > 8 {
                return Err(ValueError::Size { bytes: raw.len(), of: "a date value".into() });
            }
            let days = raw.iter().fold(0u64, |v, &b| v << 8 | b as u64) as i64 - (1 << 31);
            w.int(days);
        }
        Float => w.raw(&f32::from_be_bytes(exact(raw, "float")?).to_le_bytes()),
        Double => w.raw(&f64::from_be_bytes(exact(raw, "double")?).to_le_bytes()),
        Uuid | Timeuuid => w.string(&text::uuid(&exact(raw, "uuid")?)),
        Inet => {
            w.string(&text::inet(raw).ok_or_else(|| ValueError::Size { bytes: raw.len(), of: "an inet value".into() })?)
        }
        Varint => w.string(&text::varint(raw)),
        Decimal => w.string(&text::decimal(raw)),
        Duration => {
            let (months, p) = zigzag_vint(raw, 0)?;
            let (days, p) = zigzag_vint(raw, p)?;
            let (nanoseconds, p) = zigzag_vint(raw, p)?;
            if p != raw.len() {
                return Err(ValueError::Trailing("trailing bytes after duration"));
            }
            w.int(duration_part(months, "months")?);
            w.int(duration_part(days, "days")?);
            w.long(nanoseconds);
        }
        List { element: e, .. } | Set { element: e, .. } => {
            let items = frozen_elements(raw, 1)?;
            w.block(items.len());
            for item in items {
                element(w, e, item)?;
            }
            w.end_blocks();
        }
        Map { key, value, .. } => {
            let blobs = frozen_elements(raw, 2)?;
            let entries = distinct_entries(blobs.chunks(2).map(|pair| (pair[0], pair[1])));
            map_entries(w, key, value, &entries)?;
        }
        Tuple(elements) => fields(w, elements, raw)?,
        Udt { fields: types, .. } => fields(w, types, raw)?,
        Vector { element: e, dimension } => {
            w.block(*dimension);
            match e.fixed_length() {
                Some(size) => {
                    if raw.len() != size * dimension {
                        return Err(ValueError::Malformed("vector has the wrong size"));
                    }
                    for item in raw.chunks(size.max(1)).take(*dimension) {
                        datum(w, e, item)?;
                    }
                }
                None => {
                    let mut p = 0;
                    for _ in 0..*dimension {
                        let (length, q) =
                            read_uvint(raw, p).ok_or(ValueError::Overrun("vint runs past the end of the value"))?;
                        let item = raw
                            .get(q..q + length as usize)
                            .ok_or(ValueError::Overrun("vector element runs past the end"))?;
                        element(w, e, Value::of(item))?;
                        p = q + length as usize;
                    }
                    if p != raw.len() {
                        return Err(ValueError::Trailing("trailing bytes after the last vector element"));
                    }
                }
            }
            w.end_blocks();
        }
    }
    Ok(())
}

/// A tuple's or UDT's fields: each `optional`, those missing at the end null.
fn fields(w: &mut Writer, types: &[CqlType], raw: &[u8]) -> Result<(), ValueError> {
    let given = length_prefixed(raw, 0, types.len(), false)?;
    for (i, cql) in types.iter().enumerate() {
        optional(w, cql, given.get(i).copied().unwrap_or(Value::Null))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{datum, ValueError};
    use crate::avro::Writer;
    use crate::cql::CqlType;

    fn written(cql: CqlType, raw: &[u8]) -> Result<Vec<u8>, ValueError> {
        let mut w = Writer::default();
        datum(&mut w, &cql, raw).map(|()| w.buf)
    }

    #[test]
    fn a_value_becomes_its_avro_datum() {
        assert_eq!(written(CqlType::Int, &[0xff, 0xff, 0xff, 0xff]), Ok(vec![0x01])); // -1
        assert_eq!(written(CqlType::Text, "é".as_bytes()), Ok(vec![0x04, 0xc3, 0xa9]));
        // A date is days since 1970 with 2^31 added, as Cassandra stores it.
        assert_eq!(written(CqlType::Date, &[0x80, 0, 0, 0x01]), Ok(vec![0x02]));
    }

    #[test]
    fn a_value_that_does_not_fit_says_how_in_the_reference_s_words() {
        let error = written(CqlType::Int, &[0, 0, 1]).unwrap_err();
        assert_eq!(error, ValueError::Size { bytes: 3, of: "a int value".into() });
        assert_eq!(error.to_string(), "3 bytes for a int value");
        assert!(matches!(written(CqlType::Ascii, &[0x61, 0xe9]), Err(ValueError::Text(_))));
        assert!(
            matches!(written(CqlType::Text, &[0xff]), Err(ValueError::Text(why)) if why.starts_with("a text value is not UTF-8"))
        );
        assert_eq!(written(CqlType::Inet, &[1, 2, 3]).unwrap_err().to_string(), "3 bytes for an inet value");
    }
}
