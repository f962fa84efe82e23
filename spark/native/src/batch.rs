//! A batch of Kafka records (topic, partition, offset, timestamp, key, value), as Spark hands it to
//! `mapInArrow`, decoded into the `DECODED` columns of `spark.rows`: log rows, and for a record
//! that cannot be read, a dead letter keeping its bytes and saying why.

use std::collections::HashMap;

use crate::columns::{Bits, Fixed, Items, Pairs, Var};
use crate::copies::{digest, Copies};
use crate::datum::Input;
use crate::error::EventError;
use crate::layout::EventLayout;
use crate::rows::{change, Change};
use crate::schema::Schema;

/// Which rows of a column are set: Arrow's validity bitmap (None: every row), from the column's offset.
#[derive(Clone, Copy)]
pub struct Valid<'a> {
    pub bits: Option<&'a [u8]>,
    pub offset: usize,
}

impl Valid<'_> {
    pub fn at(&self, i: usize) -> bool {
        let at = self.offset + i;
        self.bits.is_none_or(|bits| bits.get(at / 8).is_some_and(|b| b & (1 << (at % 8)) != 0))
    }
}

/// A variable-width Arrow column borrowed from the caller.
pub struct VarIn<'a> {
    pub valid: Option<&'a [u8]>,
    pub offsets: &'a [i32],
    pub data: &'a [u8],
    pub offset: usize,
}

impl<'a> VarIn<'a> {
    pub fn get(&self, i: usize) -> Result<Option<&'a [u8]>, EventError> {
        if !(Valid { bits: self.valid, offset: self.offset }).at(i) {
            return Ok(None);
        }
        let at = self.offset + i;
        let (Some(&start), Some(&end)) = (self.offsets.get(at), self.offsets.get(at + 1)) else {
            return Err(EventError::Buffers(format!("row {i} is beyond the column's offsets")));
        };
        if start < 0 || end < start || end as usize > self.data.len() {
            let size = self.data.len();
            return Err(EventError::Buffers(format!(
                "row {i} has offsets {start}..{end} outside the column's {size} bytes"
            )));
        }
        Ok(Some(&self.data[start as usize..end as usize]))
    }
}

/// A fixed-width Arrow column borrowed from the caller (its nulls are read as 0).
pub struct FixedIn<'a, T> {
    pub values: &'a [T],
    pub offset: usize,
}

impl<T: Copy + Default> FixedIn<'_, T> {
    pub fn get(&self, i: usize) -> T {
        self.values.get(self.offset + i).copied().unwrap_or_default()
    }
}

pub struct Records<'a> {
    pub len: usize,
    pub topic: VarIn<'a>,
    pub partition: FixedIn<'a, i32>,
    pub offset: FixedIn<'a, i64>,
    /// µs since the epoch.
    pub timestamp: FixedIn<'a, i64>,
    pub key: VarIn<'a>,
    pub value: VarIn<'a>,
}

#[derive(Default)]
pub struct Flags {
    pub values: Bits,
    pub valid: Bits,
}

#[derive(Default)]
pub struct Decoded {
    pub rows: usize,
    pub keyspace: Var,
    pub table: Var,
    pub time: Var,
    pub batch_seq_no: Fixed<i32>,
    pub operation: Fixed<i8>,
    pub ttl: Fixed<i64>,
    pub end_of_batch: Flags,
    pub key: Var,
    pub columns: Pairs,
    pub deleted_columns: Items,
    pub deleted_elements: Pairs,
    pub write_time_us: Fixed<i64>,
    pub partition_key: Var,
    pub change_id: Var,
    pub kafka_time: Fixed<i64>,
    pub node: Var,
    pub segment_id: Fixed<i64>,
    pub entry_offset: Fixed<i64>,
    pub update_index: Fixed<i32>,
    pub row_index: Fixed<i32>,
    pub topic: Var,
    pub partition: Fixed<i32>,
    pub offset: Fixed<i64>,
    pub schema_id: Fixed<i32>,
    pub failure: Var,
    pub failure_detail: Var,
    pub raw_key: Var,
    pub raw_value: Var,
    pub cells: Var,
}

/// Where a record came from in Kafka.
struct Origin<'a> {
    topic: Option<&'a [u8]>,
    partition: i32,
    offset: i64,
    timestamp: i64,
}

impl Decoded {
    fn log_row(&mut self, c: &Change<'_>, origin: &Origin<'_>, schema_id: i32) {
        for row in &c.rows {
            self.rows += 1;
            self.keyspace.text(Some(c.keyspace));
            self.table.text(Some(c.table));
            self.time.text(Some(&c.time));
            self.batch_seq_no.push(Some(row.seq));
            self.operation.push(Some(row.operation));
            self.ttl.push(row.ttl);
            self.end_of_batch.values.push(row.end_of_batch);
            self.end_of_batch.valid.push(true);
            self.key.text(Some(&row.key));
            self.columns.push(Some(&row.columns));
            self.deleted_columns.push(Some(&row.deleted_columns));
            self.deleted_elements.push(Some(&row.deleted_elements));
            self.write_time_us.push(Some(c.written));
            self.partition_key.push(Some(c.partition_key));
            self.change_id.text(Some(&c.change_id));
            self.kafka_time.push(Some(origin.timestamp));
            self.node.text(Some(c.node));
            self.segment_id.push(Some(c.position[0]));
            self.entry_offset.push(Some(c.position[1]));
            self.update_index.push(Some(c.position[2] as i32));
            self.row_index.push(Some(c.position[3] as i32));
            self.topic.push(origin.topic);
            self.partition.push(Some(origin.partition));
            self.offset.push(Some(origin.offset));
            self.schema_id.push(Some(schema_id));
            self.failure.push(None);
            self.failure_detail.push(None);
            self.raw_key.push(None);
            self.raw_value.push(None);
            self.cells.text(row.cells.as_deref());
        }
    }

    fn dead_letter(&mut self, origin: &Origin<'_>, detail: &str, key: Option<&[u8]>, value: Option<&[u8]>) {
        self.rows += 1;
        for column in [
            &mut self.keyspace,
            &mut self.table,
            &mut self.time,
            &mut self.key,
            &mut self.partition_key,
            &mut self.node,
        ] {
            column.push(None);
        }
        self.batch_seq_no.push(None);
        self.operation.push(None);
        self.ttl.push(None);
        self.end_of_batch.values.push(false);
        self.end_of_batch.valid.push(false);
        self.columns.push(None);
        self.deleted_columns.push(None);
        self.deleted_elements.push(None);
        self.write_time_us.push(None);
        let topic = String::from_utf8_lossy(origin.topic.unwrap_or_default());
        self.change_id.text(Some(&format!("undecodable:{topic}:{}:{}", origin.partition, origin.offset)));
        self.kafka_time.push(Some(origin.timestamp));
        self.segment_id.push(None);
        self.entry_offset.push(None);
        self.update_index.push(None);
        self.row_index.push(None);
        self.topic.push(origin.topic);
        self.partition.push(Some(origin.partition));
        self.offset.push(Some(origin.offset));
        self.schema_id.push(None);
        self.failure.text(Some("undecodable"));
        self.failure_detail.text(Some(detail));
        self.raw_key.push(key);
        self.raw_value.push(value);
        self.cells.push(None);
    }
}

/// The schema id of a Confluent-framed payload, or why it is not one (as `connector.avro.wire` says).
pub fn schema_id(payload: &[u8]) -> Result<i32, EventError> {
    if payload.len() < 5 {
        let size = payload.len();
        return Err(EventError::MalformedPayload(format!("{size} bytes are too few for a Confluent-framed payload")));
    }
    if payload[0] != 0 {
        let magic = payload[0] as i8;
        return Err(EventError::MalformedPayload(format!(
            "magic byte {magic} instead of 0: not a Confluent-framed payload"
        )));
    }
    Ok(i32::from_be_bytes(payload[1..5].try_into().unwrap()))
}

#[derive(Default)]
pub struct Decoder {
    /// With each change's cells and their timestamps (for a mirror).
    pub cells: bool,
    layouts: HashMap<i32, Result<EventLayout, EventError>>,
}

impl Decoder {
    pub fn new(cells: bool) -> Self {
        Decoder { cells, layouts: HashMap::new() }
    }

    /// The writer schema of `id` (its JSON text); one this decoder cannot read makes its records
    /// dead letters saying why.
    pub fn add(&mut self, id: i32, text: &str) {
        let layout = Schema::parse(text).and_then(EventLayout::compile);
        self.layouts.insert(id, layout.map_err(|why| EventError::UnreadableSchema { id, why }));
    }

    /// The schema ids of framed payloads in `values` that this decoder was not given, in order of
    /// first appearance.
    pub fn missing(&self, values: &VarIn<'_>, len: usize) -> Result<Vec<i32>, EventError> {
        let mut out = Vec::new();
        for i in 0..len {
            if let Some(Ok(id)) = values.get(i)?.map(schema_id) {
                if !self.layouts.contains_key(&id) && !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        Ok(out)
    }

    /// The `DECODED` columns of `records`; `unknown` says why an id without a schema has none. With
    /// `copies`, the records whose change the task has already decoded are skipped (`copies`).
    pub fn decode(
        &self,
        records: &Records<'_>,
        unknown: &HashMap<i32, String>,
        mut copies: Option<&mut Copies>,
    ) -> Result<Decoded, EventError> {
        let mut out = Decoded::default();
        for i in 0..records.len {
            let origin = Origin {
                topic: records.topic.get(i)?,
                partition: records.partition.get(i),
                offset: records.offset.get(i),
                timestamp: records.timestamp.get(i),
            };
            let key = records.key.get(i)?;
            let value = records.value.get(i)?;
            // A record that cannot be digested is decoded, and made a dead letter if it cannot be read.
            let digest = copies.as_ref().and_then(|_| self.digest(key, value));
            if let (Some(copies), Some(d)) = (copies.as_deref_mut(), &digest) {
                if copies.seen(d) {
                    copies.skipped += 1;
                    continue;
                }
            }
            match self.record(value, unknown) {
                Ok((c, id)) => {
                    out.log_row(&c, &origin, id);
                    if let (Some(copies), Some(d)) = (copies.as_deref_mut(), digest) {
                        copies.decoded(d);
                    }
                }
                Err(why) => out.dead_letter(&origin, &why.to_string(), key, value),
            }
        }
        Ok(out)
    }

    fn digest(&self, key: Option<&[u8]>, value: Option<&[u8]>) -> Option<[u8; 16]> {
        let value = value?;
        let Some(Ok(layout)) = self.layouts.get(&schema_id(value).ok()?) else {
            return None;
        };
        digest(layout, key, value).ok()
    }

    fn record<'a>(
        &self,
        value: Option<&'a [u8]>,
        unknown: &HashMap<i32, String>,
    ) -> Result<(Change<'a>, i32), EventError> {
        let value = value.ok_or(EventError::MalformedPayload("a record without a value".into()))?;
        let id = schema_id(value)?;
        let layout = match self.layouts.get(&id) {
            Some(Ok(layout)) => layout,
            Some(Err(why)) => return Err(why.clone()),
            None => return Err(EventError::UnknownSchemaId { id, why: unknown.get(&id).cloned() }),
        };
        let mut input = Input::new(value, 5);
        let datum = input
            .read(&layout.schema, layout.schema.root)
            .map_err(|e| EventError::MalformedPayload(format!("{} at byte {}", e.message, e.position)))?;
        if input.remaining() > 0 {
            let left = input.remaining();
            return Err(EventError::MalformedPayload(format!("{left} bytes follow the datum")));
        }
        let c = change(layout, &datum, self.cells)?;
        Ok((c, id))
    }
}
