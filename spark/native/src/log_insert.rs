//! A CDC log row → the serialized values of its log table's INSERT (`spark.sinks.log_table.LogLayout.
//! insert_statement`): the values `LogRowEncoder.encode` makes, as the driver's `bind` serializes them.
//!
//!     values = stream id, time, batch seq no, operation, ttl, end of batch,   (the metadata, in order)
//!              key columns | data columns | cdc$deleted_X | cdc$deleted_elements_X, (by layout position)
//!              write time (µs)                                               (USING TIMESTAMP, last)
//!
//! A slot no part of the row names stays unset, so a row writes only its own cells; a null value stays
//! unset too, as in the reference. Names the layout lacks (columns dropped before the log had them) are
//! skipped. A row any of whose values `cql_bytes` leaves to the reference is left whole to it.

use std::collections::HashMap;
use std::ops::Range;

use crate::cql_bytes::{encode, field_indices, uuid};
use crate::mirror::value::{parse, Value};
use ringtail_contract::cql::CqlType;

/// The metadata, first in every log table's INSERT, in this order.
enum Metadata {
    StreamId,
    Time,
    BatchSeqNo,
    Operation,
    Ttl,
    EndOfBatch,
}

/// What a deleted-elements column holds: the removed keys, of this type, or a UDT's removed fields.
pub enum Elements {
    Keys(CqlType),
    Fields(Vec<String>),
}

/// One log row as the sink's projection holds it.
pub struct SinkRow<'a> {
    pub stream_id: &'a [u8],
    pub time: &'a str,
    pub batch_seq_no: i32,
    pub operation: i8,
    pub ttl: Option<i64>,
    pub end_of_batch: bool,
    pub key: &'a str,
    pub columns: Vec<(&'a str, Option<&'a str>)>,
    pub deleted_columns: Vec<&'a str>,
    pub deleted_elements: Vec<(&'a str, Option<&'a str>)>,
    pub write_time_us: i64,
}

/// A value's bytes in the caller's buffer, or unset.
pub type Slot = Option<Range<usize>>;

pub struct LogInsert {
    /// The INSERT's values, the write time included.
    pub width: usize,
    keys: HashMap<String, (usize, CqlType)>,
    values: HashMap<String, (usize, CqlType)>,
    deleted: HashMap<String, usize>,
    elements: HashMap<String, (usize, Elements)>,
}

impl LogInsert {
    /// `width`: the log table's columns (the write time is one more).
    pub fn new(
        width: usize,
        keys: Vec<(String, usize, CqlType)>,
        values: Vec<(String, usize, CqlType)>,
        deleted: Vec<(String, usize)>,
        elements: Vec<(String, usize, Elements)>,
    ) -> Self {
        LogInsert {
            width: width + 1,
            keys: keys.into_iter().map(|(name, at, ty)| (name, (at, ty))).collect(),
            values: values.into_iter().map(|(name, at, ty)| (name, (at, ty))).collect(),
            deleted: deleted.into_iter().collect(),
            elements: elements.into_iter().map(|(name, at, e)| (name, (at, e))).collect(),
        }
    }

    /// The row's values into `slots` (`width` of them), their bytes appended to `out`; None: the row is
    /// the reference's (`out` and `slots` then hold parts to discard).
    pub fn encode(&self, row: &SinkRow<'_>, out: &mut Vec<u8>, slots: &mut Vec<Slot>) -> Option<()> {
        slots.clear();
        slots.resize(self.width, None);
        let put = |at: usize, bytes: &[u8], out: &mut Vec<u8>, slots: &mut Vec<Slot>| {
            out.extend_from_slice(bytes);
            slots[at] = Some(out.len() - bytes.len()..out.len());
        };
        put(Metadata::StreamId as usize, row.stream_id, out, slots);
        put(Metadata::Time as usize, &uuid(row.time)?, out, slots);
        put(Metadata::BatchSeqNo as usize, &row.batch_seq_no.to_be_bytes(), out, slots);
        put(Metadata::Operation as usize, &row.operation.to_be_bytes(), out, slots);
        if let Some(ttl) = row.ttl {
            put(Metadata::Ttl as usize, &ttl.to_be_bytes(), out, slots);
        }
        put(Metadata::EndOfBatch as usize, &[u8::from(row.end_of_batch)], out, slots);
        let Value::Object(key) = parse(row.key)? else { return None };
        for (name, value) in &key {
            if let Some((at, ty)) = self.keys.get(name) {
                typed(*at, ty, value, out, slots)?;
            }
        }
        // Every text is read, a column's the layout lacks too: one that is not JSON fails the reference.
        for &(name, text) in &row.columns {
            let Some(value) = text.map(parse) else { continue };
            if let Some((at, ty)) = self.values.get(name) {
                typed(*at, ty, &value?, out, slots)?;
            } else {
                value?;
            }
        }
        for &name in &row.deleted_columns {
            if let Some(&at) = self.deleted.get(name) {
                put(at, &[1], out, slots);
            }
        }
        for &(name, text) in &row.deleted_elements {
            let Some(value) = text.map(parse) else { continue };
            let value = value?;
            let Some((at, elements)) = self.elements.get(name) else { continue };
            if matches!(value, Value::Null) {
                continue;
            }
            let start = out.len();
            match elements {
                Elements::Keys(ty) => encode(ty, &value, out)?,
                Elements::Fields(names) => field_indices(names, &value, out)?,
            }
            slots[*at] = Some(start..out.len());
        }
        put(self.width - 1, &row.write_time_us.to_be_bytes(), out, slots);
        Some(())
    }
}

/// A value of type `ty` at `at`; null leaves the slot as it was.
fn typed(at: usize, ty: &CqlType, value: &Value, out: &mut Vec<u8>, slots: &mut [Slot]) -> Option<()> {
    if matches!(value, Value::Null) {
        return Some(());
    }
    let start = out.len();
    encode(ty, value, out)?;
    slots[at] = Some(start..out.len());
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert() -> LogInsert {
        // (stream, time, seq, op, ttl, eob), id int (key), v text, tags frozen<set<text>> and their flags.
        let tags = CqlType::Set { element: Box::new(CqlType::Text), multi_cell: false };
        LogInsert::new(
            12,
            vec![("id".into(), 6, CqlType::Int)],
            vec![("tags".into(), 7, tags), ("v".into(), 8, CqlType::Text)],
            vec![("tags".into(), 9), ("v".into(), 10)],
            vec![(
                "tags".into(),
                11,
                Elements::Keys(CqlType::Set { element: Box::new(CqlType::Text), multi_cell: false }),
            )],
        )
    }

    fn row<'a>(key: &'a str, columns: Vec<(&'a str, Option<&'a str>)>) -> SinkRow<'a> {
        SinkRow {
            stream_id: &[7; 16],
            time: "01234567-89ab-1def-8123-456789abcdef",
            batch_seq_no: 1,
            operation: 2,
            ttl: None,
            end_of_batch: true,
            key,
            columns,
            deleted_columns: vec!["v", "gone"],
            deleted_elements: vec![("tags", Some(r#"["a"]"#))],
            write_time_us: 5,
        }
    }

    fn values(insert: &LogInsert, row: &SinkRow<'_>) -> Option<Vec<Option<Vec<u8>>>> {
        let (mut out, mut slots) = (Vec::new(), Vec::new());
        insert.encode(row, &mut out, &mut slots)?;
        Some(slots.into_iter().map(|s| s.map(|r| out[r].to_vec())).collect())
    }

    #[test]
    fn each_part_of_a_row_fills_its_slots_and_the_rest_stay_unset() {
        let insert = insert();
        let got =
            values(&insert, &row(r#"{"id": 3, "old": 1}"#, vec![("v", Some("\"x\"")), ("n", Some("1"))])).unwrap();
        assert_eq!(got.len(), 13);
        assert_eq!(got[0], Some(vec![7; 16]));
        assert_eq!(got[1].as_ref().map(Vec::len), Some(16));
        assert_eq!(got[2], Some(vec![0, 0, 0, 1]));
        assert_eq!(got[3], Some(vec![2]));
        assert_eq!(got[4], None);
        assert_eq!(got[5], Some(vec![1]));
        assert_eq!(got[6], Some(vec![0, 0, 0, 3]));
        assert_eq!(got[7], None);
        assert_eq!(got[8], Some(b"x".to_vec()));
        assert_eq!(got[9], None);
        assert_eq!(got[10], Some(vec![1]));
        assert_eq!(got[11], Some(vec![0, 0, 0, 1, 0, 0, 0, 1, b'a']));
        assert_eq!(got[12], Some(5i64.to_be_bytes().to_vec()));
    }

    #[test]
    fn a_null_value_stays_unset_and_a_later_value_of_a_column_wins() {
        let insert = insert();
        let columns = vec![("v", Some("\"x\"")), ("v", Some("null")), ("v", None), ("v", Some("\"y\""))];
        let got = values(&insert, &row(r#"{"id": null}"#, columns)).unwrap();
        assert_eq!(got[6], None);
        assert_eq!(got[8], Some(b"y".to_vec()));
    }

    #[test]
    fn a_row_with_a_value_left_to_the_reference_is_left_whole() {
        let insert = insert();
        assert!(values(&insert, &row(r#"{"id": 3}"#, vec![("v", Some("1"))])).is_none());
        assert!(values(&insert, &row("[3]", vec![])).is_none());
        assert!(values(&insert, &row(r#"{"id": 3}"#, vec![("v", Some("not json"))])).is_none());
        let mut bad_time = row(r#"{"id": 3}"#, vec![]);
        bad_time.time = "not a uuid";
        assert!(values(&insert, &bad_time).is_none());
    }
}
