//! A change as its Kafka event: the key and value records of the event contract
//! (`connector.avro.table`, `connector.avro.cells`) in Avro, framed with their schema ids
//! (Confluent's wire format: magic byte 0, the id as a big-endian int32, the datum).

use crate::change::{Bound, Cell, Change, ColumnCells, Op};
use crate::header::DeletionTime;
use ringtail_contract::avro::Writer;
use ringtail_contract::cql::CqlType;
use ringtail_contract::value::{element, optional, Value, ValueError};

/// What a table's events are made of, compiled once per schema version.
pub struct TablePlan {
    pub key_schema_id: u32,
    pub value_schema_id: u32,
    pub keyspace: String,
    pub table: String,
    pub partition_key: Vec<CqlType>,
    pub clustering: Vec<CqlType>,
    /// The types of the static and regular columns, in the order of the `after` record, then of the
    /// dropped columns; the decoder numbers them so.
    pub columns: Vec<CqlType>,
    /// How many of `columns` are live; the cells of the dropped ones are dead data.
    pub live: usize,
}

/// The `source` fields every event of a connector shares.
pub struct SourceInfo {
    pub version: String,
    pub name: String,
    pub cluster: String,
    pub node: String,
}

/// The event's place, for the `source.position` record.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub segment_id: i64,
    pub entry_offset: i64,
    /// Commit log segment file name.
    pub file: &'a str,
    /// When the connector processed the change, ms since the epoch.
    pub ts_ms: i64,
}

fn frame(schema_id: u32) -> Writer {
    let mut w = Writer::default();
    w.buf.push(0);
    w.buf.extend_from_slice(&schema_id.to_be_bytes());
    w
}

/// The components of a partition key: a key of one column is its bytes; of several, a
/// CompositeType (per component a uint16 length, the bytes, an end-of-component byte).
fn key_components(key: &[u8], count: usize) -> Result<Vec<&[u8]>, ValueError> {
    if count == 1 {
        return Ok(vec![key]);
    }
    let short = || ValueError::Overrun("composite partition key is shorter than its columns");
    let mut components = Vec::with_capacity(count);
    let mut p = 0;
    for _ in 0..count {
        let size = key.get(p..p + 2).ok_or_else(short)?;
        let end = p + 2 + u16::from_be_bytes([size[0], size[1]]) as usize;
        if end >= key.len() {
            return Err(short());
        }
        components.push(&key[p + 2..end]);
        p = end + 1;
    }
    if p != key.len() {
        return Err(ValueError::Malformed("composite partition key has more components than the table"));
    }
    Ok(components)
}

fn deletion(w: &mut Writer, d: &Option<DeletionTime>) {
    w.null_or(d.is_some());
    if let Some(d) = d {
        w.long(d.marked_for_delete_at);
        w.long(d.local_deletion_time);
    }
}

fn nullable_long(w: &mut Writer, v: Option<i64>) {
    w.null_or(v.is_some());
    if let Some(v) = v {
        w.long(v);
    }
}

/// timestamp, ttl, local_deletion_time: the fields every live cell record ends with.
fn live(w: &mut Writer, cell: &Cell<'_>) {
    w.long(cell.timestamp);
    w.int(cell.ttl);
    nullable_long(w, cell.local_deletion_time);
}

fn removed(w: &mut Writer, cell: &Cell<'_>) -> Result<(), ValueError> {
    w.long(cell.timestamp);
    w.long(cell.local_deletion_time.ok_or(ValueError::Malformed("a removed element without a deletion time"))?);
    Ok(())
}

fn timeuuid(w: &mut Writer, path: &[u8]) -> Result<(), ValueError> {
    ringtail_contract::value::datum(w, &CqlType::Timeuuid, path)
}

/// The index a UDT cell path names (an int16, Python's indexing from the end when negative).
fn field_index(path: &[u8], count: usize) -> Result<usize, ValueError> {
    let raw: [u8; 2] =
        path.try_into().map_err(|_| ValueError::Size { bytes: path.len(), of: "a UDT field index".into() })?;
    let index = i16::from_be_bytes(raw) as i64;
    let resolved = if index < 0 { index + count as i64 } else { index };
    if resolved < 0 || resolved >= count as i64 {
        return Err(ValueError::OutOfRange(format!("UDT field index {index} out of range")));
    }
    Ok(resolved as usize)
}

/// The record of a non-frozen collection or UDT column: {deletion, added, removed}.
fn complex(
    w: &mut Writer,
    cql: &CqlType,
    column_deletion: &Option<DeletionTime>,
    cells: &[Cell<'_>],
) -> Result<(), ValueError> {
    deletion(w, column_deletion);
    fn path<'a>(c: &Cell<'a>) -> &'a [u8] {
        c.path.unwrap_or(&[])
    }
    let tombstones: Vec<&Cell<'_>> = cells.iter().filter(|c| c.tombstone).collect();
    if let CqlType::Udt { field_names, fields, .. } = cql {
        // added: one nullable entry per field, the last cell of a field winning
        let mut latest: Vec<Option<&Cell<'_>>> = vec![None; fields.len()];
        for cell in cells.iter().filter(|c| !c.tombstone) {
            latest[field_index(path(cell), fields.len())?] = Some(cell);
        }
        for (field, cell) in fields.iter().zip(&latest) {
            w.null_or(cell.is_some());
            if let Some(cell) = cell {
                element(w, field, Value::of(cell.value))?;
                live(w, cell);
            }
        }
        w.block(tombstones.len());
        for cell in tombstones {
            w.string(&field_names[field_index(path(cell), fields.len())?]);
            removed(w, cell)?;
        }
        w.end_blocks();
        return Ok(());
    }
    let key = |w: &mut Writer, cell: &Cell<'_>| -> Result<(), ValueError> {
        match cql {
            CqlType::List { .. } => timeuuid(w, path(cell)),
            CqlType::Set { element: e, .. } => element(w, e, Value::of(path(cell))),
            CqlType::Map { key: k, .. } => element(w, k, Value::of(path(cell))),
            _ => Err(ValueError::Malformed("cells with a path in a column that is not a collection")),
        }
    };
    let live_cells: Vec<&Cell<'_>> = cells.iter().filter(|c| !c.tombstone).collect();
    w.block(live_cells.len());
    for cell in live_cells {
        key(w, cell)?;
        match cql {
            CqlType::List { element: e, .. } => element(w, e, Value::of(cell.value))?,
            CqlType::Map { value: v, .. } => element(w, v, Value::of(cell.value))?,
            _ => {} // a set's element is its key
        }
        live(w, cell);
    }
    w.end_blocks();
    w.block(tombstones.len());
    for cell in tombstones {
        key(w, cell)?;
        removed(w, cell)?;
    }
    w.end_blocks();
    Ok(())
}

/// A column's field of the `after` record, present: its cell, or its collection's deletion and cells.
fn column_cells(w: &mut Writer, cql: &CqlType, cells: &ColumnCells<'_>) -> Result<(), ValueError> {
    match cells {
        ColumnCells::Simple { cell, .. } => {
            let value = if cell.tombstone { Value::Null } else { Value::of(cell.value) };
            optional(w, cql, value)?;
            live(w, cell);
            w.boolean(cell.tombstone);
        }
        ColumnCells::Complex { deletion: d, cells, .. } => complex(w, cql, d, cells)?,
    }
    Ok(())
}

/// The write timestamp (µs) of a change: the newest of its deletion, row liveness and cells.
pub fn write_time(change: &Change<'_>) -> i64 {
    let mut newest: Option<i64> = None;
    let mut see = |t: i64| newest = Some(newest.map_or(t, |n| n.max(t)));
    for column in &change.columns {
        match column {
            ColumnCells::Simple { cell, .. } => see(cell.timestamp),
            ColumnCells::Complex { deletion, cells, .. } => {
                cells.iter().for_each(|c| see(c.timestamp));
                if let Some(d) = deletion {
                    see(d.marked_for_delete_at);
                }
            }
        }
    }
    if let Some(d) = change.deletion {
        see(d.marked_for_delete_at);
    }
    if let Some(l) = change.liveness {
        see(l.timestamp);
    }
    newest.unwrap_or(0)
}

impl TablePlan {
    /// Whether a partition key's serialized bytes fit the key's types.
    pub fn check_key(&self, key: &[u8]) -> Result<(), ValueError> {
        self.key_record(&mut Writer::default(), &key_components(key, self.partition_key.len())?)
    }

    fn key_record(&self, w: &mut Writer, components: &[&[u8]]) -> Result<(), ValueError> {
        for (cql, component) in self.partition_key.iter().zip(components) {
            element(w, cql, Value::of(component))?;
        }
        Ok(())
    }

    /// (key, value) of a change, framed.
    pub fn encode(
        &self,
        change: &Change<'_>,
        source: &SourceInfo,
        place: Place<'_>,
    ) -> Result<(Vec<u8>, Vec<u8>), ValueError> {
        let components = key_components(change.partition_key, self.partition_key.len())?;
        let mut key = frame(self.key_schema_id);
        self.key_record(&mut key, &components)?;
        let mut w = frame(self.value_schema_id);
        let (op, kind) = match change.op {
            Op::Insert => ("c", "insert"),
            Op::Update => ("u", "update"),
            other => ("d", other.name()),
        };
        w.string(op);
        w.string(kind);
        w.long(place.ts_ms);
        // source
        for text in [
            &source.version,
            "cassandra",
            &source.name,
            &source.cluster,
            &source.node,
            &self.keyspace,
            &self.table,
            place.file,
        ] {
            w.string(text);
        }
        w.long(place.segment_id);
        w.long(place.entry_offset);
        w.int(change.update_index as i64);
        w.int(change.row_index as i64);
        let written = write_time(change);
        w.long(written.div_euclid(1000));
        w.long(written);
        w.bytes(change.partition_key);
        // after
        for (cql, component) in self.partition_key.iter().zip(&components) {
            optional(&mut w, cql, Value::of(component))?;
        }
        self.clustering_record(&mut w, &change.clustering)?;
        let mut cells: Vec<Option<&ColumnCells<'_>>> = vec![None; self.live];
        for column in &change.columns {
            let index = match column {
                ColumnCells::Simple { column, .. } | ColumnCells::Complex { column, .. } => *column,
            };
            // Dead cells (a dropped column's, or the first of a column a damaged header names twice)
            // are not written, but checked: the reference reader decodes every cell it reads.
            let dead = if index < self.live { cells[index].replace(column) } else { Some(column) };
            if let Some(dead) = dead {
                let cql = self
                    .columns
                    .get(index)
                    .ok_or(ValueError::Malformed("a cell of a column the table does not have"))?;
                column_cells(&mut Writer::default(), cql, dead)?;
            }
        }
        for (cql, found) in self.columns.iter().zip(&cells) {
            w.null_or(found.is_some());
            if let Some(found) = found {
                column_cells(&mut w, cql, found)?;
            }
        }
        w.boolean(change.is_static);
        w.null_or(change.liveness.is_some());
        if let Some(l) = change.liveness {
            w.long(l.timestamp);
            w.int(l.ttl);
            nullable_long(&mut w, l.expires_at);
        }
        deletion(&mut w, &change.deletion);
        if !self.clustering.is_empty() {
            w.null_or(change.op == Op::RangeDelete);
            if change.op == Op::RangeDelete {
                self.bound(&mut w, &change.range_start)?;
                self.bound(&mut w, &change.range_end)?;
            }
        }
        Ok((key.buf, w.buf))
    }

    /// The clustering columns, each nullable; a prefix leaves the rest null.
    fn clustering_record(&self, w: &mut Writer, values: &[Value<'_>]) -> Result<(), ValueError> {
        for (i, cql) in self.clustering.iter().enumerate() {
            optional(w, cql, values.get(i).copied().unwrap_or(Value::Null))?;
        }
        Ok(())
    }

    fn bound(&self, w: &mut Writer, bound: &Option<Bound<'_>>) -> Result<(), ValueError> {
        w.null_or(bound.is_some());
        if let Some(b) = bound {
            self.clustering_record(w, &b.clustering)?;
            w.boolean(b.inclusive);
        }
        Ok(())
    }
}
