//! A log row's JSON text, made from its Arrow columns on the executors for the sinks that send JSON
//! (Kafka, HTTP): the JSON of `log_row_json(row)` (`spark.sinks.json_rows`, the reference) without spaces,
//! but that text is written as it is, not escaped to ASCII, and a value's JSON text goes in unparsed.
//!
//!     row     = "{" ( member ( "," member )* )? "}"
//!     member  = name ":" value
//!     value   = "null" | text | json | hex | integer | "true" | "false" | time | object | list | row
//!     text    = a JSON string (`json::string`: only '"', '\' and control characters escaped)
//!     json    = a value's JSON text as the decoder made it (checked: `json_text::is_json`)
//!     hex     = '"0x' lowercase hex digits '"'
//!     time    = '"' YYYY-MM-DD "T" hh:mm:ss ( "." µs{6} )? '+00:00"'  (no fraction on a whole second)
//!     object  = "{" ( text ":" ( json | "null" ) ( "," … )* )? "}"   (a map of text to JSON text)
//!     list    = "[" ( ( text | "null" ) ( "," … )* )? "]"             (a list of text)
//!
//! A row whose JSON text is not JSON (a value's text the decoder set in place that is not) makes no text:
//! the caller is told the first such row, and the sink fails the batch naming its change.

use std::fmt::Write;

use crate::batch::{FixedIn, Valid, VarIn};
use crate::error::EventError;
use crate::json;
use crate::json_text::is_json;

/// A 64-bit column's values as JSON writes them.
#[derive(Clone, Copy)]
pub enum Number {
    Integer,
    Boolean,
    /// µs since the epoch, as an ISO 8601 UTC time.
    Time,
}

/// One column of the rows, borrowed from the caller.
pub enum Field<'a> {
    Text(VarIn<'a>),
    Json(VarIn<'a>),
    Hex(VarIn<'a>),
    Number(Number, Valid<'a>, FixedIn<'a, i64>),
    /// `map<string, string>` of JSON texts.
    JsonMap {
        valid: Valid<'a>,
        offsets: FixedIn<'a, i32>,
        keys: VarIn<'a>,
        values: VarIn<'a>,
    },
    /// `list<string>`.
    TextList {
        valid: Valid<'a>,
        offsets: FixedIn<'a, i32>,
        items: VarIn<'a>,
    },
    /// A struct: its fields.
    Row {
        valid: Valid<'a>,
        fields: Vec<Member<'a>>,
    },
}

/// A column and its name, written once as the member's opening `"name":`.
pub struct Member<'a> {
    opening: String,
    field: Field<'a>,
}

impl<'a> Member<'a> {
    pub fn new(name: &str, field: Field<'a>) -> Self {
        let mut opening = String::new();
        json::string(&mut opening, name);
        opening.push(':');
        Member { opening, field }
    }
}

/// The JSON texts of `len` rows of `fields`, as Arrow's 32-bit offsets and data.
pub struct Texts {
    pub offsets: Vec<i32>,
    pub data: String,
}

/// Why rows made no texts.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Row `row` holds a value's JSON text that is not JSON.
    NotJson(usize),
    /// The buffers do not hold the rows they claim.
    Buffers(EventError),
}

impl From<EventError> for Refused {
    fn from(error: EventError) -> Self {
        Refused::Buffers(error)
    }
}

/// Each row's JSON text: an object of `fields` in their order.
pub fn texts(fields: &[Member<'_>], len: usize) -> Result<Texts, Refused> {
    let mut out = Texts { offsets: Vec::with_capacity(len + 1), data: String::new() };
    out.offsets.push(0);
    for row in 0..len {
        object(&mut out.data, fields, row).map_err(|refused| match refused {
            Refused::NotJson(_) => Refused::NotJson(row),
            other => other,
        })?;
        let end = i32::try_from(out.data.len())
            .map_err(|_| EventError::Buffers(format!("row {row}'s JSON passes 2 GiB, past Arrow's text offsets")))?;
        out.offsets.push(end);
    }
    Ok(out)
}

fn object(out: &mut String, fields: &[Member<'_>], row: usize) -> Result<(), Refused> {
    out.push('{');
    for (i, member) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&member.opening);
        value(out, &member.field, row)?;
    }
    out.push('}');
    Ok(())
}

fn value(out: &mut String, field: &Field<'_>, row: usize) -> Result<(), Refused> {
    let set = match field {
        Field::Number(_, valid, _)
        | Field::JsonMap { valid, .. }
        | Field::TextList { valid, .. }
        | Field::Row { valid, .. } => valid.at(row),
        Field::Text(_) | Field::Json(_) | Field::Hex(_) => true, // their nulls are read with their values
    };
    if !set {
        out.push_str("null");
        return Ok(());
    }
    match field {
        Field::Text(column) => text(out, column.get(row)?, row)?,
        Field::Json(column) => json_text(out, column.get(row)?, row)?,
        Field::Hex(column) => match column.get(row)? {
            Some(bytes) => {
                out.push_str("\"0x");
                for b in bytes {
                    let _ = write!(out, "{b:02x}");
                }
                out.push('"');
            }
            None => out.push_str("null"),
        },
        Field::Number(kind, _, values) => {
            let v = values.get(row);
            match kind {
                Number::Integer => json::int(out, v),
                Number::Boolean => out.push_str(if v != 0 { "true" } else { "false" }),
                Number::Time => time(out, v),
            }
        }
        Field::JsonMap { offsets, keys, values, .. } => sequence(out, offsets, row, ('{', '}'), |out, i| {
            let key = keys.get(i)?.ok_or_else(|| EventError::Buffers(format!("row {row} has a null map key")))?;
            json::string(out, utf8(key, row)?);
            out.push(':');
            json_text(out, values.get(i)?, row)
        })?,
        Field::TextList { offsets, items, .. } => {
            sequence(out, offsets, row, ('[', ']'), |out, i| text(out, items.get(i)?, row))?
        }
        Field::Row { fields, .. } => object(out, fields, row)?,
    }
    Ok(())
}

/// `open`, each child row of row `row` (of a map or list) as `item` writes it, commas between, `close`.
fn sequence(
    out: &mut String,
    offsets: &FixedIn<'_, i32>,
    row: usize,
    (open, close): (char, char),
    mut item: impl FnMut(&mut String, usize) -> Result<(), Refused>,
) -> Result<(), Refused> {
    out.push(open);
    for (n, i) in entries(offsets, row).enumerate() {
        if n > 0 {
            out.push(',');
        }
        item(out, i)?;
    }
    out.push(close);
    Ok(())
}

/// A text as a JSON string (null: `null`).
fn text(out: &mut String, value: Option<&[u8]>, row: usize) -> Result<(), Refused> {
    match value {
        Some(bytes) => json::string(out, utf8(bytes, row)?),
        None => out.push_str("null"),
    }
    Ok(())
}

/// The child rows of a map's or list's row `row`.
fn entries(offsets: &FixedIn<'_, i32>, row: usize) -> std::ops::Range<usize> {
    offsets.get(row).max(0) as usize..offsets.get(row + 1).max(0) as usize
}

fn utf8(bytes: &[u8], row: usize) -> Result<&str, EventError> {
    std::str::from_utf8(bytes).map_err(|_| EventError::Buffers(format!("row {row} holds text that is not UTF-8")))
}

/// A value's JSON text as it is (null: `null`); not JSON refuses the row.
fn json_text(out: &mut String, text: Option<&[u8]>, row: usize) -> Result<(), Refused> {
    match text {
        Some(text) if is_json(text) => out.push_str(utf8(text, row)?),
        Some(_) => return Err(Refused::NotJson(row)),
        None => out.push_str("null"),
    }
    Ok(())
}

/// µs since the epoch as Python's `datetime.isoformat()` of it in UTC writes it.
fn time(out: &mut String, micros: i64) {
    let (seconds, fraction) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
    let (days, second) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil(days);
    let _ =
        write!(out, "\"{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}", second / 3600, second / 60 % 60, second % 60);
    if fraction != 0 {
        let _ = write!(out, ".{fraction:06}");
    }
    out.push_str("+00:00\"");
}

/// (year, month, day) of a count of days since 1970-01-01 in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`: 400-year eras of 146,097 days, years from March so February ends them).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var<'a>(offsets: &'a [i32], data: &'a [u8]) -> VarIn<'a> {
        VarIn { valid: None, offsets, data, offset: 0 }
    }

    fn rendered(micros: i64) -> String {
        let mut out = String::new();
        time(&mut out, micros);
        out
    }

    #[test]
    fn times_are_written_as_python_s_isoformat_in_utc() {
        assert_eq!(rendered(0), "\"1970-01-01T00:00:00+00:00\"");
        assert_eq!(rendered(1_700_000_000_123_456), "\"2023-11-14T22:13:20.123456+00:00\"");
        assert_eq!(rendered(951_782_400_000_001), "\"2000-02-29T00:00:00.000001+00:00\"");
        assert_eq!(rendered(-1), "\"1969-12-31T23:59:59.999999+00:00\"");
        assert_eq!(rendered(-62_135_596_800_000_000), "\"0001-01-01T00:00:00+00:00\"");
        assert_eq!(rendered(253_402_300_799_000_000), "\"9999-12-31T23:59:59+00:00\"");
    }

    #[test]
    fn a_row_is_an_object_of_its_fields_in_their_order_with_nulls_and_escapes() {
        let valid = Valid { bits: Some(&[0b01]), offset: 0 };
        let numbers = [7_i64, 9];
        let fields = vec![
            Member::new("na\"me", Field::Text(var(&[0, 2, 4], b"a\nb\\"))),
            Member::new("key", Field::Json(var(&[0, 9, 18], b"{\"id\": 1}{\"id\": 2}"))),
            Member::new("blob", Field::Hex(var(&[0, 2, 2], &[0x0f, 0xa0]))),
            Member::new("n", Field::Number(Number::Integer, valid, FixedIn { values: &numbers, offset: 0 })),
            Member::new(
                "b",
                Field::Number(
                    Number::Boolean,
                    Valid { bits: None, offset: 0 },
                    FixedIn { values: &numbers, offset: 0 },
                ),
            ),
        ];
        let made = texts(&fields, 2).unwrap();
        assert_eq!(made.offsets.len(), 3);
        let first = &made.data[..made.offsets[1] as usize];
        let second = &made.data[made.offsets[1] as usize..];
        assert_eq!(first, "{\"na\\\"me\":\"a\\n\",\"key\":{\"id\": 1},\"blob\":\"0x0fa0\",\"n\":7,\"b\":true}");
        assert_eq!(second, "{\"na\\\"me\":\"b\\\\\",\"key\":{\"id\": 2},\"blob\":\"0x\",\"n\":null,\"b\":true}");
    }

    #[test]
    fn maps_lists_and_structs_are_written_nested() {
        let (map_offsets, list_offsets) = ([0_i32, 2, 2], [0_i32, 0, 2]);
        let fields = vec![
            Member::new(
                "columns",
                Field::JsonMap {
                    valid: Valid { bits: None, offset: 0 },
                    offsets: FixedIn { values: &map_offsets, offset: 0 },
                    keys: var(&[0, 1, 4], b"ab\"c"),
                    values: VarIn { valid: Some(&[0b01]), offsets: &[0, 4, 4], data: b"[1] ", offset: 0 },
                },
            ),
            Member::new(
                "deleted",
                Field::TextList {
                    valid: Valid { bits: None, offset: 0 },
                    offsets: FixedIn { values: &list_offsets, offset: 0 },
                    items: var(&[0, 1, 3], b"xyz"),
                },
            ),
            Member::new(
                "source",
                Field::Row {
                    valid: Valid { bits: Some(&[0b10]), offset: 0 },
                    fields: vec![Member::new("node", Field::Text(var(&[0, 1, 2], b"pq")))],
                },
            ),
        ];
        let made = texts(&fields, 2).unwrap();
        assert_eq!(
            made.data,
            "{\"columns\":{\"a\":[1] ,\"b\\\"c\":null},\"deleted\":[],\"source\":null}\
             {\"columns\":{},\"deleted\":[\"x\",\"yz\"],\"source\":{\"node\":\"q\"}}"
        );
    }

    #[test]
    fn a_value_whose_text_is_not_json_refuses_its_row() {
        let fields = vec![Member::new("key", Field::Json(var(&[0, 2, 4, 5], b"{}{}{")))];
        assert_eq!(texts(&fields, 3).err(), Some(Refused::NotJson(2)));
    }
}
