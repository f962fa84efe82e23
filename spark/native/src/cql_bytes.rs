//! JSON values serialized as the CQL values a bound statement carries (native protocol v4 and later),
//! for the Cassandra sink: the bytes the Python driver's serializers give for the value that
//! `spark.sinks.cql_values` makes of the same JSON. The JSON follows `spark.rows`' conventions:
//!
//!     ascii, text -> string               blob -> "0x…" hex              boolean -> true | false
//!     tinyint, smallint, int, bigint, counter -> integer or its digits   varint -> integer or digits
//!     float, double -> number, "NaN", "Infinity", "-Infinity"           decimal -> digits "-1.50e3"
//!     timestamp -> ms (integer or digits)  date -> days since the epoch  time -> ns since midnight
//!     uuid, timeuuid -> "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"           inet -> "1.2.3.4" | "::1"
//!     duration -> {months, days, nanoseconds} or [months, days, nanoseconds]
//!     list, set -> array     map -> object (keys as text) or array of [key, value]
//!     tuple -> array (missing trailing elements null)                    UDT -> object by field name
//!
//! The serialized forms:
//!
//!     integer  = big-endian two's complement of the type's width; varint: the fewest bytes
//!     float    = IEEE 754 big-endian        date = u32 of days + 2^31      boolean = 0x00 | 0x01
//!     decimal  = i32 scale, varint unscaled                  duration = vint(zigzag) months, days, ns
//!     list/set = i32 count, (i32 length, element)*           map = i32 count, (i32 length, key, i32 length, value)*
//!     tuple/UDT = (i32 length, field | i32 -1 for null)* over every element or field
//!
//! A value this module does not take exactly as the reference would (a timestamp as ISO text, a float
//! decimal, a map whose keys the reference might merge, a vector, a null inside a collection, any
//! text the reference reads more leniently) is `None`: the caller leaves its row to the reference, which
//! writes it or makes it a dead letter. A map given as an object is serialized in key order, where the
//! driver keeps the object's order; Cassandra stores a frozen map sorted by key either way.

use crate::mirror::value::Value;
use ringtail_contract::cql::CqlType;

/// Appends the serialized `value` of type `ty` to `out`; None leaves the value to the reference (`out`
/// then holds a partial value the caller discards).
pub fn encode(ty: &CqlType, value: &Value, out: &mut Vec<u8>) -> Option<()> {
    use CqlType::*;
    match ty {
        Text => out.extend_from_slice(text(value)?.as_bytes()),
        Ascii => out.extend_from_slice(text(value).filter(|s| s.is_ascii())?.as_bytes()),
        Boolean => out.push(u8::from(*boolean(value)?)),
        Tinyint => out.extend_from_slice(&i8::try_from(integer(value)?).ok()?.to_be_bytes()),
        Smallint => out.extend_from_slice(&i16::try_from(integer(value)?).ok()?.to_be_bytes()),
        Int => out.extend_from_slice(&i32::try_from(integer(value)?).ok()?.to_be_bytes()),
        Bigint | Counter | Timestamp => out.extend_from_slice(&integer(value)?.to_be_bytes()),
        Varint => match value {
            Value::Int(i) => minimal(&i.to_be_bytes(), out),
            Value::Str(digits) | Value::BigInt(digits) => varint(digits, out)?,
            _ => return None,
        },
        Float => {
            let wide = float(value)?;
            let narrow = wide as f32;
            // struct.pack('>f') refuses a finite double beyond f32's range rather than making it infinite.
            if wide.is_finite() && !narrow.is_finite() {
                return None;
            }
            out.extend_from_slice(&narrow.to_be_bytes())
        }
        Double => out.extend_from_slice(&float(value)?.to_be_bytes()),
        Blob => blob(text(value)?, out)?,
        // The reference reads a date's or a time's text as 'YYYY-MM-DD' or 'HH:MM:SS': left to it.
        Date => out.extend_from_slice(&u32::try_from(whole(value)? + (1i64 << 31)).ok()?.to_be_bytes()),
        Time => {
            let nanoseconds = whole(value)?;
            (0..86_400_000_000_000).contains(&nanoseconds).then_some(())?;
            out.extend_from_slice(&nanoseconds.to_be_bytes())
        }
        Uuid | Timeuuid => out.extend_from_slice(&uuid(text(value)?)?),
        Inet => inet(text(value)?, out)?,
        Decimal => decimal(value, out)?,
        Duration => duration(value, out)?,
        List { element, .. } | Set { element, .. } => {
            let Value::Array(items) = value else { return None };
            count(items.len(), out)?;
            for item in items {
                element_of(element, item, out)?;
            }
        }
        Map { key, value: value_type, .. } => map(key, value_type, value, out)?,
        Tuple(elements) => {
            let Value::Array(items) = value else { return None };
            (items.len() <= elements.len()).then_some(())?;
            for (i, ty) in elements.iter().enumerate() {
                field(ty, items.get(i).unwrap_or(&Value::Null), out)?;
            }
        }
        Udt { field_names, fields, .. } => {
            let Value::Object(members) = value else { return None };
            // A member the type does not have is the reference's error to report.
            members.keys().all(|name| field_names.contains(name)).then_some(())?;
            for (name, ty) in field_names.iter().zip(fields) {
                field(ty, members.get(name).unwrap_or(&Value::Null), out)?;
            }
        }
        Vector { .. } => return None,
    }
    Some(())
}

/// The elements of a UDT's deleted fields, by name or index, as the set of smallint indices ScyllaDB
/// logs (`spark.sinks.cql_values.field_indices`).
pub fn field_indices(names: &[String], value: &Value, out: &mut Vec<u8>) -> Option<()> {
    let Value::Array(fields) = value else { return None };
    count(fields.len(), out)?;
    for field in fields {
        let index = match field {
            Value::Str(name) => names.iter().position(|n| n == name)?,
            other => usize::try_from(integer(other)?).ok().filter(|&i| i < names.len())?,
        };
        out.extend_from_slice(&2i32.to_be_bytes());
        out.extend_from_slice(&i16::try_from(index).ok()?.to_be_bytes());
    }
    Some(())
}

fn text(value: &Value) -> Option<&str> {
    match value {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

fn boolean(value: &Value) -> Option<&bool> {
    match value {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

/// An integer, or its digits as text (`int(text)` reads more: a plus sign, spaces, underscores, other
/// digits, which are left to it).
fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        Value::Str(s) => digits(s)?.parse().ok(),
        _ => None,
    }
}

/// A JSON integer only.
fn whole(value: &Value) -> Option<i64> {
    match value {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

/// `s` if it is ASCII digits after an optional minus sign.
fn digits(s: &str) -> Option<&str> {
    let unsigned = s.strip_prefix('-').unwrap_or(s);
    (!unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

/// An exponent's digits after an optional sign, as a number.
fn exponent(s: &str) -> Option<i64> {
    digits(s.strip_prefix('+').filter(|rest| !rest.starts_with('-')).unwrap_or(s))?.parse().ok()
}

fn float(value: &Value) -> Option<f64> {
    match value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Str(s) => float_text(s),
        _ => None,
    }
}

/// A float's text: "NaN", "Infinity", "-Infinity" (JSON has no number for them), or plain decimal digits
/// with an optional exponent; None for any other.
pub fn float_text(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => {
            let (mantissa, exponent) = s.split_once(['e', 'E']).unwrap_or((s, "0"));
            let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, "0"));
            let plain = digits(whole).is_some()
                && fraction.bytes().all(|b| b.is_ascii_digit())
                && !fraction.is_empty()
                && self::exponent(exponent).is_some();
            if plain {
                s.parse().ok()
            } else {
                None
            }
        }
    }
}

/// The bytes of a blob's hex digits after an optional `0x`, appended to `out`; None if they are not.
pub fn blob(text: &str, out: &mut Vec<u8>) -> Option<()> {
    let hex = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text).as_bytes();
    hex.len().is_multiple_of(2).then_some(())?;
    for pair in hex.chunks_exact(2) {
        out.push(nibble(pair[0])? << 4 | nibble(pair[1])?);
    }
    Some(())
}

fn nibble(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// A UUID in its 36-character form with dashes, or as 32 hex digits.
pub fn uuid(text: &str) -> Option<[u8; 16]> {
    let bytes = text.as_bytes();
    let hex: Vec<u8> = match bytes.len() {
        36 if [8, 13, 18, 23].iter().all(|&i| bytes[i] == b'-') => {
            bytes.iter().enumerate().filter(|(i, _)| ![8, 13, 18, 23].contains(i)).map(|(_, &b)| b).collect()
        }
        32 => bytes.to_vec(),
        _ => return None,
    };
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// IPv6 text (the driver's `inet_pton`, for any text with a colon) or a dotted quad without leading zeros
/// (which `inet_aton` would read as octal); other IPv4 forms `inet_aton` reads are left to it.
fn inet(text: &str, out: &mut Vec<u8>) -> Option<()> {
    if text.contains(':') {
        out.extend_from_slice(&text.parse::<std::net::Ipv6Addr>().ok()?.octets());
    } else {
        out.extend_from_slice(&text.parse::<std::net::Ipv4Addr>().ok()?.octets());
    }
    Some(())
}

/// The fewest big-endian two's complement bytes of the integer `text` (an optional minus and digits, of any
/// length), as the driver's `varint_pack`.
fn varint(text: &str, out: &mut Vec<u8>) -> Option<()> {
    digits(text)?;
    let (negative, magnitude) = text.strip_prefix('-').map_or((false, text), |m| (true, m));
    // Little-endian base 256, one decimal digit at a time; a zero byte on top leaves room for the sign.
    let mut bytes = vec![0u8];
    for digit in magnitude.bytes() {
        let mut carry = u32::from(digit - b'0');
        for byte in bytes.iter_mut() {
            let v = u32::from(*byte) * 10 + carry;
            *byte = v as u8;
            carry = v >> 8;
        }
        if carry > 0 {
            bytes.push(carry as u8);
        }
    }
    bytes.push(0);
    if negative {
        let mut carry = 1u16;
        for byte in bytes.iter_mut() {
            let v = u16::from(!*byte) + carry;
            *byte = v as u8;
            carry = v >> 8;
        }
    }
    bytes.reverse();
    minimal(&bytes, out);
    Some(())
}

/// `bytes` (big-endian two's complement) without the leading bytes that only repeat the sign.
fn minimal(bytes: &[u8], out: &mut Vec<u8>) {
    let mut start = 0;
    while start < bytes.len() - 1 {
        let (here, next) = (bytes[start], bytes[start + 1]);
        if (here == 0 && next & 0x80 == 0) || (here == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

/// `Decimal(text)` or an integer: scale (the negated exponent) and the unscaled digits. Floats (whose
/// decimal is their `repr`) and texts beyond `[-]digits[.digits][e[±]digits]` are left to the reference.
fn decimal(value: &Value, out: &mut Vec<u8>) -> Option<()> {
    let (unscaled, exponent) = match value {
        Value::Int(i) => (i.to_string(), 0i64),
        Value::BigInt(digits) => (digits.clone(), 0),
        Value::Str(s) => {
            let (mantissa, exponent) = s.split_once(['e', 'E']).unwrap_or((s, "0"));
            let exponent = self::exponent(exponent)?;
            let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
            digits(whole)?;
            fraction.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
            (format!("{whole}{fraction}"), exponent.checked_sub(fraction.len() as i64)?)
        }
        _ => return None,
    };
    out.extend_from_slice(&i32::try_from(-exponent).ok()?.to_be_bytes());
    varint(&unscaled, out)
}

fn duration(value: &Value, out: &mut Vec<u8>) -> Option<()> {
    let parts = match value {
        Value::Object(members) => {
            let part = |name: &str| members.get(name).and_then(integer);
            [part("months")?, part("days")?, part("nanoseconds")?]
        }
        Value::Array(items) if items.len() == 3 => [integer(&items[0])?, integer(&items[1])?, integer(&items[2])?],
        _ => return None,
    };
    for part in parts {
        uvint((part << 1 ^ part >> 63) as u64, out);
    }
    Some(())
}

/// Cassandra's unsigned vint (VIntCoding.writeUnsignedVInt): as many leading 1-bits in the first byte
/// as bytes follow it.
fn uvint(value: u64, out: &mut Vec<u8>) {
    let bits = 64 - value.leading_zeros() as usize;
    let extra = (1..=8).find(|&e| e == 8 || bits <= 7 * e + 7).filter(|_| bits > 7).unwrap_or(0);
    let bytes = value.to_be_bytes();
    let mut first = if extra == 8 { 0 } else { (value >> (8 * extra)) as u8 };
    first |= !(0xffu8.checked_shr(extra as u32).unwrap_or(0));
    out.push(first);
    out.extend_from_slice(&bytes[8 - extra..]);
}

fn count(n: usize, out: &mut Vec<u8>) -> Option<()> {
    out.extend_from_slice(&i32::try_from(n).ok()?.to_be_bytes());
    Some(())
}

/// A collection's element, key or value: its length, then it; a null one is left to the reference.
fn element_of(ty: &CqlType, value: &Value, out: &mut Vec<u8>) -> Option<()> {
    if matches!(value, Value::Null) {
        return None;
    }
    sized(ty, value, out)
}

/// A tuple's element or a UDT's field: its length, then it, or -1 for null.
fn field(ty: &CqlType, value: &Value, out: &mut Vec<u8>) -> Option<()> {
    if matches!(value, Value::Null) {
        out.extend_from_slice(&(-1i32).to_be_bytes());
        return Some(());
    }
    sized(ty, value, out)
}

fn sized(ty: &CqlType, value: &Value, out: &mut Vec<u8>) -> Option<()> {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    encode(ty, value, out)?;
    let length = i32::try_from(out.len() - at - 4).ok()?;
    out[at..at + 4].copy_from_slice(&length.to_be_bytes());
    Some(())
}

/// Key types of which two Python values are equal only if their serialized bytes are (not floats, where
/// 0.0 == -0.0, nor decimals, where 1.0 == 1.00): the keys the reference's dict would merge are then
/// repeated bytes, which `map` finds.
fn keys_by_bytes(key: &CqlType) -> bool {
    use CqlType::*;
    matches!(
        key,
        Ascii
            | Text
            | Blob
            | Boolean
            | Tinyint
            | Smallint
            | Int
            | Bigint
            | Counter
            | Varint
            | Timestamp
            | Date
            | Time
            | Uuid
            | Timeuuid
            | Inet
    )
}

/// A JSON object's key as the value of a key of type `key`: the text itself for types whose JSON is a
/// string, else the JSON the text holds.
fn object_key(key: &CqlType, text: &str) -> Option<Value> {
    use CqlType::*;
    if matches!(key, Ascii | Text | Blob | Uuid | Timeuuid | Inet | Varint | Decimal) {
        Some(Value::Str(text.to_owned()))
    } else {
        crate::mirror::value::parse(text)
    }
}

fn map(key: &CqlType, value_type: &CqlType, value: &Value, out: &mut Vec<u8>) -> Option<()> {
    keys_by_bytes(key).then_some(())?;
    let mut keys: Vec<(usize, usize)> = Vec::new();
    let mut entry = |k: &Value, v: &Value, out: &mut Vec<u8>| -> Option<()> {
        let at = out.len();
        element_of(key, k, out)?;
        keys.push((at, out.len()));
        element_of(value_type, v, out)
    };
    match value {
        Value::Object(members) => {
            count(members.len(), out)?;
            for (k, v) in members {
                entry(&object_key(key, k)?, v, out)?;
            }
        }
        Value::Array(entries) => {
            count(entries.len(), out)?;
            for pair in entries {
                match pair {
                    Value::Array(kv) if kv.len() == 2 => entry(&kv[0], &kv[1], out)?,
                    Value::Object(kv) if kv.len() == 2 => entry(kv.get("key")?, kv.get("value")?, out)?,
                    _ => return None,
                }
            }
        }
        _ => return None,
    }
    // A key given twice the reference keeps once (its first place, its last value): left to it.
    let mut seen: Vec<&[u8]> = keys.iter().map(|&(a, b)| &out[a..b]).collect();
    seen.sort_unstable();
    seen.windows(2).all(|w| w[0] != w[1]).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mirror::value::parse;
    use CqlType::*;

    fn bytes(ty: &CqlType, json: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        encode(ty, &parse(json)?, &mut out)?;
        Some(out)
    }

    #[test]
    fn integers_take_their_width_and_refuse_what_does_not_fit() {
        assert_eq!(bytes(&Tinyint, "-1"), Some(vec![0xff]));
        assert_eq!(bytes(&Smallint, "\"258\""), Some(vec![1, 2]));
        assert_eq!(bytes(&Int, "-2"), Some(vec![0xff, 0xff, 0xff, 0xfe]));
        assert_eq!(bytes(&Bigint, "1"), Some(vec![0, 0, 0, 0, 0, 0, 0, 1]));
        assert_eq!(bytes(&Tinyint, "128"), None);
        assert_eq!(bytes(&Int, "1.0"), None);
        assert_eq!(bytes(&Int, "true"), None);
        assert_eq!(bytes(&Int, "\" 1\""), None);
    }

    #[test]
    fn varints_take_the_fewest_twos_complement_bytes() {
        // The driver's varint_pack of each.
        for (json, expected) in [
            ("0", vec![0]),
            ("127", vec![0x7f]),
            ("128", vec![0, 0x80]),
            ("-1", vec![0xff]),
            ("-128", vec![0x80]),
            ("-129", vec![0xff, 0x7f]),
            ("\"65535\"", vec![0, 0xff, 0xff]),
        ] {
            assert_eq!(bytes(&Varint, json), Some(expected), "{json}");
        }
        // 2^70 and -(2^70) + 1, beyond 64 bits.
        let mut big = vec![0x40];
        big.extend([0; 8]);
        assert_eq!(bytes(&Varint, "1180591620717411303424"), Some(big));
        assert_eq!(bytes(&Varint, "\"-1180591620717411303423\""), Some([vec![0xc0], vec![0; 7], vec![1]].concat()));
        assert_eq!(bytes(&Varint, "\"-0\""), Some(vec![0]));
        assert_eq!(bytes(&Varint, "\"1e3\""), None);
    }

    #[test]
    fn floats_take_nan_and_the_infinities_as_text_and_refuse_what_f32_cannot_hold() {
        assert_eq!(bytes(&Double, "\"NaN\""), Some(f64::NAN.to_be_bytes().to_vec()));
        assert_eq!(bytes(&Double, "-Infinity"), Some(f64::NEG_INFINITY.to_be_bytes().to_vec()));
        assert_eq!(bytes(&Double, "\"1.5e3\""), Some(1500f64.to_be_bytes().to_vec()));
        assert_eq!(bytes(&Float, "1.5"), Some(1.5f32.to_be_bytes().to_vec()));
        assert_eq!(bytes(&Float, "1e300"), None);
        assert_eq!(bytes(&Float, "\"inf\""), None);
    }

    #[test]
    fn decimals_are_a_scale_and_the_unscaled_digits() {
        assert_eq!(bytes(&Decimal, "\"-1.50\""), Some(vec![0, 0, 0, 2, 0xff, 0x6a]));
        assert_eq!(bytes(&Decimal, "\"1E+3\""), Some(vec![0xff, 0xff, 0xff, 0xfd, 1]));
        assert_eq!(bytes(&Decimal, "\"0.001\""), Some(vec![0, 0, 0, 3, 1]));
        assert_eq!(bytes(&Decimal, "7"), Some(vec![0, 0, 0, 0, 7]));
        assert_eq!(bytes(&Decimal, "1.5"), None);
        assert_eq!(bytes(&Decimal, "\"NaN\""), None);
    }

    #[test]
    fn durations_are_three_zigzag_vints() {
        // Duration(1, -1, 1_000_000_000) as the driver's vints_pack writes it.
        assert_eq!(
            bytes(&Duration, r#"{"months": 1, "days": -1, "nanoseconds": 1000000000}"#),
            Some(vec![2, 1, 0xf0, 0x77, 0x35, 0x94, 0x00])
        );
        assert_eq!(bytes(&Duration, "[0, 0, -1]"), Some(vec![0, 0, 1]));
        let mut out = Vec::new();
        uvint(u64::MAX, &mut out);
        assert_eq!(out, [vec![0xff], vec![0xff; 8]].concat());
        out.clear();
        uvint(128, &mut out);
        assert_eq!(out, vec![0x80, 0x80]);
    }

    #[test]
    fn dates_times_uuids_inets_and_blobs() {
        assert_eq!(bytes(&Date, "-1"), Some(vec![0x7f, 0xff, 0xff, 0xff]));
        assert_eq!(bytes(&Date, "\"2020-01-01\""), None);
        assert_eq!(bytes(&Date, "\"5\""), None);
        assert_eq!(bytes(&Timestamp, "\"-5\""), Some((-5i64).to_be_bytes().to_vec()));
        assert_eq!(bytes(&Int, "\"+5\""), None);
        assert_eq!(bytes(&Time, "86400000000000"), None);
        assert_eq!(bytes(&Timestamp, "\"2020-01-01T00:00:00Z\""), None);
        let uuid = "01234567-89ab-cdef-0123-456789ABCDEF";
        let expected = vec![1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        assert_eq!(bytes(&Uuid, &format!("\"{uuid}\"")), Some(expected.clone()));
        assert_eq!(bytes(&Timeuuid, &format!("\"{}\"", uuid.replace('-', ""))), Some(expected));
        assert_eq!(bytes(&Inet, "\"10.0.0.1\""), Some(vec![10, 0, 0, 1]));
        assert_eq!(bytes(&Inet, "\"::1\"").map(|b| b.len()), Some(16));
        assert_eq!(bytes(&Inet, "\"010.0.0.1\""), None);
        assert_eq!(bytes(&Blob, "\"0xCAfe\""), Some(vec![0xca, 0xfe]));
        assert_eq!(bytes(&Blob, "\"0xcaf\""), None);
        assert_eq!(bytes(&Ascii, "\"é\""), None);
    }

    #[test]
    fn collections_tuples_and_udts() {
        let list = List { element: Box::new(Int), multi_cell: false };
        assert_eq!(bytes(&list, "[1]"), Some(vec![0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1]));
        assert_eq!(bytes(&list, "[null]"), None);
        let map = Map { key: Box::new(Int), value: Box::new(Text), multi_cell: false };
        let entries = Some(vec![0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 1, b'x']);
        assert_eq!(bytes(&map, r#"{"2": "x"}"#), entries);
        assert_eq!(bytes(&map, r#"[[2, "x"]]"#), entries);
        assert_eq!(bytes(&map, r#"[{"key": 2, "value": "x"}]"#), entries);
        assert_eq!(bytes(&map, r#"[[2, "x"], ["2", "y"]]"#), None);
        let doubles = Map { key: Box::new(Double), value: Box::new(Text), multi_cell: false };
        assert_eq!(bytes(&doubles, r#"[[0.0, "x"]]"#), None);
        let tuple = Tuple(vec![Int, Text]);
        assert_eq!(bytes(&tuple, "[1]"), Some(vec![0, 0, 0, 4, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]));
        assert_eq!(bytes(&tuple, "[1, \"a\", 2]"), None);
        let udt = Udt { field_names: vec!["a".into(), "b".into()], fields: vec![Int, Text], multi_cell: false };
        assert_eq!(bytes(&udt, r#"{"b": "z"}"#), Some(vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, b'z']));
        assert_eq!(bytes(&udt, r#"{"c": 1}"#), None);
        let mut out = Vec::new();
        assert_eq!(field_indices(&["a".into(), "b".into()], &parse(r#"["b", 0]"#).unwrap(), &mut out), Some(()));
        assert_eq!(out, vec![0, 0, 0, 2, 0, 0, 0, 2, 0, 1, 0, 0, 0, 2, 0, 0]);
        assert_eq!(field_indices(&["a".into()], &parse("[1]").unwrap(), &mut Vec::new()), None);
    }
}
