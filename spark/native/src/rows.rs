//! One change event → its CDC log rows, as `spark.delivery.events.event_rows` makes them: ScyllaDB's
//! operation codes, the key and written values as JSON text, deleted columns and elements, the
//! largest TTL, a change id that is equal on every replica and a `cdc$time` timeuuid made from it;
//! with `cells`, each change's cells with their timestamps for a mirror (`cell_changes`).

use std::fmt::Write;

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;

use crate::datum::Datum;
use crate::error::EventError;
use crate::json::{self, Style, COMPACT, SPACED};
use crate::layout::{Cell, Collection, Column, ColumnKind, Elements, EventLayout, Live};
use crate::values::{content, pair, value};

// ScyllaDB's cdc$operation codes (cdc/log.hh).
const ROW_UPDATE: i8 = 1;
const ROW_INSERT: i8 = 2;
const ROW_DELETE: i8 = 3;
const PARTITION_DELETE: i8 = 4;
const RANGE_DELETE_START_INCLUSIVE: i8 = 5;
const RANGE_DELETE_START_EXCLUSIVE: i8 = 6;
const RANGE_DELETE_END_INCLUSIVE: i8 = 7;
const RANGE_DELETE_END_EXCLUSIVE: i8 = 8;
// ringtail's own: a row as read (a snapshot's, or a read repair merging several writes into one row).
const ROW_READ: i8 = 10;
/// 100 ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
const UUID_EPOCH_OFFSET: i64 = 0x01B2_1DD2_1381_4000;

pub struct LogRow {
    pub seq: i32,
    pub operation: i8,
    pub ttl: Option<i64>,
    pub end_of_batch: bool,
    pub key: String,
    pub columns: Vec<(String, String)>,
    pub deleted_columns: Vec<String>,
    pub deleted_elements: Vec<(String, String)>,
    pub cells: Option<String>,
}

/// What every row of one change shares. An event that cannot be logged is an error saying why, as the
/// dead letter's detail (`Type: message`).
pub struct Change<'a> {
    pub keyspace: &'a str,
    pub table: &'a str,
    pub node: &'a str,
    pub position: [i64; 4],
    pub written: i64,
    pub partition_key: &'a [u8],
    pub time: String,
    pub change_id: String,
    pub rows: Vec<LogRow>,
}

fn fields<'d, 'a>(datum: &'d Datum<'a>) -> Result<&'d [Datum<'a>], EventError> {
    match datum {
        Datum::Record(fields) => Ok(fields),
        _ => Err(EventError::InvalidEvent("a record expected")),
    }
}

fn long(datum: &Datum<'_>) -> Result<i64, EventError> {
    match datum {
        Datum::Long(v) => Ok(*v),
        _ => Err(EventError::InvalidEvent("a number expected")),
    }
}

fn text<'a>(datum: &Datum<'a>) -> Result<&'a str, EventError> {
    match datum {
        Datum::Str(s) => Ok(s),
        _ => Err(EventError::InvalidEvent("a string expected")),
    }
}

/// `cdc$time`: a version-1 timeuuid holding the write time in µs whose clock sequence and node come
/// from the change digest, so every replica's copy gets the same one.
pub fn log_time(written_us: i64, digest: &[u8]) -> String {
    let ticks = written_us.wrapping_mul(10).wrapping_add(UUID_EPOCH_OFFSET) as u64;
    let rest = u64::from_be_bytes(digest[..8].try_into().unwrap());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        ticks & 0xFFFF_FFFF,
        (ticks >> 32) & 0xFFFF,
        ((ticks >> 48) & 0x0FFF) | 0x1000,
        0x8000 | ((rest >> 48) & 0x3FFF),
        rest & 0xFFFF_FFFF_FFFF
    )
}

pub fn change<'a>(layout: &EventLayout, event: &Datum<'a>, with_cells: bool) -> Result<Change<'a>, EventError> {
    let schema = &layout.schema;
    let envelope = fields(event)?;
    let source = fields(&envelope[layout.source])?;
    let s = &layout.src;
    let position = fields(&source[s.position])?;
    let after = fields(&envelope[layout.after])?;
    let kind = text(&envelope[layout.kind])?;
    let keyspace = text(&source[s.keyspace])?;
    let table = text(&source[s.table])?;
    let Datum::Bytes(partition_key) = source[s.partition_key] else {
        return Err(EventError::InvalidEvent("partition_key is not bytes"));
    };
    let range = layout.range.map(|r| &envelope[r]);

    // The digest of what the change is, leaving out where it was read.
    let envelope_record = schema.record(schema.root).unwrap();
    let mut digested = String::from("[");
    json::string(&mut digested, keyspace);
    digested.push_str(", ");
    json::string(&mut digested, table);
    digested.push_str(", ");
    json::string(&mut digested, kind);
    for index in [layout.static_row, layout.after, layout.liveness, layout.deletion] {
        digested.push_str(", ");
        content(&mut digested, schema, envelope_record.fields[index].node, &envelope[index]);
    }
    digested.push_str(", ");
    match layout.range {
        Some(r) => content(&mut digested, schema, envelope_record.fields[r].node, &envelope[r]),
        None => digested.push_str("null"),
    }
    digested.push(']');
    let mut hasher = Blake2bVar::new(16).unwrap();
    hasher.update(partition_key);
    hasher.update(digested.as_bytes());
    let mut digest = [0u8; 16];
    hasher.finalize_variable(&mut digest).unwrap();
    let mut change_id = String::with_capacity(32);
    json::hex(&mut change_id, &digest);

    let written = long(&source[s.ts_us])?;
    let static_row = matches!(envelope[layout.static_row], Datum::Bool(true));
    let liveness = &envelope[layout.liveness];
    let deletion = &envelope[layout.deletion];
    let cells = |layout: &EventLayout| -> Result<Option<String>, EventError> {
        if !with_cells {
            return Ok(None);
        }
        cell_changes(layout, kind, static_row, after, liveness, deletion, range).map(Some)
    };
    let plain = |seq, operation, end_of_batch, key| LogRow {
        seq,
        operation,
        ttl: None,
        end_of_batch,
        key,
        columns: Vec::new(),
        deleted_columns: Vec::new(),
        deleted_elements: Vec::new(),
        cells: None,
    };
    let mut rows = Vec::with_capacity(2);
    if kind == "range_delete" {
        let bounds = match range {
            Some(Datum::Record(bounds)) => bounds,
            _ => return Err(EventError::InvalidEvent("a range deletion without its range")),
        };
        let ends = [
            (RANGE_DELETE_START_INCLUSIVE, RANGE_DELETE_START_EXCLUSIVE),
            (RANGE_DELETE_END_INCLUSIVE, RANGE_DELETE_END_EXCLUSIVE),
        ];
        for (seq, (bound, (inclusive_op, exclusive_op))) in bounds.iter().zip(ends).enumerate() {
            // An open bound (the partition's start or end) has no clustering and counts as inclusive.
            let (operation, clustering) = match bound {
                Datum::Null => (inclusive_op, None),
                Datum::Record(b) => {
                    let inclusive = matches!(b[1], Datum::Bool(true));
                    (if inclusive { inclusive_op } else { exclusive_op }, Some(fields(&b[0])?))
                }
                _ => return Err(EventError::InvalidEvent("a range bound is not a record")),
            };
            let key = key_json(layout, after, Some(clustering.unwrap_or(&[])))?;
            rows.push(plain(seq as i32, operation, seq == 1, key));
        }
        rows[0].cells = cells(layout)?;
    } else {
        let operation = match kind {
            "insert" => ROW_INSERT,
            "update" => ROW_UPDATE,
            "row_delete" => ROW_DELETE,
            "partition_delete" => PARTITION_DELETE,
            other => return Err(EventError::UnknownOperation(other.to_string())),
        };
        let mut row = plain(0, operation, true, key_json(layout, after, None)?);
        if kind == "insert" || kind == "update" {
            let mut ttl: Option<i64> = None;
            if let Datum::Record(l) = liveness {
                let t = long(&l[1])?;
                if t != 0 {
                    ttl = Some(t);
                }
            }
            for column in layout.columns.iter().filter(|c| c.kind == ColumnKind::Cell) {
                let cell = &after[column.field];
                if matches!(cell, Datum::Null) {
                    continue;
                }
                if let Some(t) = read_cell(layout, column, cell, &mut row)? {
                    ttl = Some(ttl.map_or(t, |m| m.max(t)));
                }
            }
            row.ttl = ttl;
            if restates(layout, after, liveness, deletion)? {
                row.operation = ROW_READ;
            }
        }
        row.cells = cells(layout)?;
        rows.push(row);
    }
    let mut place = [0i64; 4];
    for (slot, index) in place.iter_mut().zip([s.segment_id, s.entry_offset, s.update_index, s.row_index]) {
        *slot = long(&position[index])?;
    }
    for (name, value) in [("update_index", place[2]), ("row_index", place[3])] {
        if i32::try_from(value).is_err() {
            return Err(EventError::MalformedPayload(format!(
                "source.position.{name} {value} is out of an int's range"
            )));
        }
    }
    Ok(Change {
        keyspace,
        table,
        node: text(&source[s.node])?,
        position: place,
        written,
        partition_key,
        time: log_time(written, &digest),
        change_id,
        rows,
    })
}

/// Whether a row's liveness, deletion and cells carry more than one write timestamp: it is no one write
/// but several merged, as a read repair sends them to a replica that missed them. A collection's own
/// deletion is left out: a collection overwritten is deleted a microsecond before its elements are written.
fn restates(
    layout: &EventLayout,
    after: &[Datum<'_>],
    liveness: &Datum<'_>,
    deletion: &Datum<'_>,
) -> Result<bool, EventError> {
    let mut first: Option<i64> = None;
    let mut several = false;
    let mut see = |t: i64| match first {
        None => first = Some(t),
        Some(f) => several |= f != t,
    };
    for record in [liveness, deletion] {
        if let Datum::Record(r) = record {
            see(long(&r[0])?);
        }
    }
    for column in layout.columns.iter().filter(|c| c.kind == ColumnKind::Cell) {
        let cell = &after[column.field];
        if matches!(cell, Datum::Null) {
            continue;
        }
        let cell_fields = fields(cell)?;
        match column.cell.as_ref().unwrap() {
            Cell::Atomic { live, .. } => see(long(&cell_fields[live.timestamp])?),
            Cell::Multi { added, removed, removed_timestamp, elements, .. } => {
                match elements {
                    Elements::Udt(udt) => {
                        let added = fields(&cell_fields[*added])?;
                        for (index, _, live) in udt {
                            if let Datum::Record(element) = &added[*index] {
                                see(long(&element[live.timestamp])?);
                            }
                        }
                    }
                    Elements::Collection { live, .. } => {
                        let Datum::Array(items) = &cell_fields[*added] else {
                            return Err(EventError::InvalidEvent("added is not an array"));
                        };
                        for item in items {
                            see(long(&fields(item)?[live.timestamp])?);
                        }
                    }
                }
                let Datum::Array(gone) = &cell_fields[*removed] else {
                    return Err(EventError::InvalidEvent("removed is not an array"));
                };
                for r in gone {
                    see(long(&fields(r)?[*removed_timestamp])?);
                }
            }
        }
    }
    Ok(several)
}

/// The primary key columns set, as a JSON object; a range bound's clustering comes from the bound.
fn key_json(layout: &EventLayout, after: &[Datum<'_>], clustering: Option<&[Datum<'_>]>) -> Result<String, EventError> {
    let mut out = String::from("{");
    let mut first = true;
    for column in layout.columns.iter().filter(|c| c.kind != ColumnKind::Cell) {
        let datum = match clustering {
            Some(bound) if column.kind == ColumnKind::Clustering => bound_value(bound, column),
            _ => &after[column.field],
        };
        if matches!(datum, Datum::Null) {
            continue;
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        json::string(&mut out, &column.name);
        out.push_str(": ");
        value(&mut out, &layout.schema, column.node, datum, SPACED);
    }
    out.push('}');
    Ok(out)
}

/// A clustering column's value in a range bound's clustering record.
fn bound_value<'d, 'a>(bound: &'d [Datum<'a>], column: &Column) -> &'d Datum<'a> {
    const NULL: &Datum<'static> = &Datum::Null;
    match column.bound {
        Some(i) if i < bound.len() => &bound[i],
        _ => NULL,
    }
}

/// A non-key column's cell into `row` (value written, deleted, elements removed); its largest TTL.
fn read_cell(
    layout: &EventLayout,
    column: &Column,
    cell: &Datum<'_>,
    row: &mut LogRow,
) -> Result<Option<i64>, EventError> {
    let schema = &layout.schema;
    let cell_fields = fields(cell)?;
    match column.cell.as_ref().unwrap() {
        Cell::Atomic { live, tombstone } => {
            if matches!(cell_fields[*tombstone], Datum::Bool(true)) {
                row.deleted_columns.push(column.name.clone());
                return Ok(None);
            }
            let (i, node) = live.value.unwrap();
            if !matches!(cell_fields[i], Datum::Null) {
                let mut out = String::new();
                value(&mut out, schema, node, &cell_fields[i], SPACED);
                row.columns.push((column.name.clone(), out));
            }
            let ttl = long(&cell_fields[live.ttl])?;
            Ok((ttl != 0).then_some(ttl))
        }
        Cell::Multi { deletion, added, removed, removed_key, elements, .. } => {
            let mut out = String::new();
            let mut ttl: Option<i64> = None;
            let mut keep = |t: i64| ttl = Some(ttl.map_or(t, |m: i64| m.max(t)));
            let written = match elements {
                Elements::Udt(udt) => {
                    let added = fields(&cell_fields[*added])?;
                    out.push('{');
                    let mut n = 0;
                    for (index, name, live) in udt {
                        let Datum::Record(element) = &added[*index] else { continue };
                        if n > 0 {
                            out.push_str(", ");
                        }
                        n += 1;
                        json::string(&mut out, name);
                        out.push_str(": ");
                        let (i, node) = live.value.unwrap();
                        value(&mut out, schema, node, &element[i], SPACED);
                        keep(long(&element[live.ttl])?);
                    }
                    out.push('}');
                    n
                }
                Elements::Collection { kind, key, live } => {
                    let Datum::Array(items) = &cell_fields[*added] else {
                        return Err(EventError::InvalidEvent("added is not an array"));
                    };
                    let mut entries: Vec<(String, String)> = Vec::with_capacity(items.len());
                    for item in items {
                        let element = fields(item)?;
                        let mut k = String::new();
                        value(&mut k, schema, key.1, &element[key.0], SPACED);
                        let mut v = String::new();
                        if let Some((i, node)) = live.value {
                            value(&mut v, schema, node, &element[i], SPACED);
                        }
                        entries.push((k, v));
                        keep(long(&element[live.ttl])?);
                    }
                    collection(&mut out, *kind, entries)
                }
            };
            if written > 0 {
                row.columns.push((column.name.clone(), out));
            }
            if !matches!(cell_fields[*deletion], Datum::Null) {
                row.deleted_columns.push(column.name.clone());
            }
            let Datum::Array(gone) = &cell_fields[*removed] else {
                return Err(EventError::InvalidEvent("removed is not an array"));
            };
            if !gone.is_empty() {
                let mut out = String::from("[");
                for (i, r) in gone.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    value(&mut out, schema, removed_key.1, &fields(r)?[removed_key.0], SPACED);
                }
                out.push(']');
                row.deleted_elements.push((column.name.clone(), out));
            }
            Ok(ttl.filter(|t| *t != 0))
        }
    }
}

/// The elements written to a collection as the log shows them: a list as an object by timeuuid
/// (a repeated key keeps its first place and last value, as in a dict), a set as an array, a map as
/// `[key, value]` pairs. The number of elements.
fn collection(out: &mut String, kind: Collection, entries: Vec<(String, String)>) -> usize {
    match kind {
        Collection::List => {
            let mut unique: Vec<(String, String)> = Vec::with_capacity(entries.len());
            let mut places = std::collections::HashMap::new();
            for (k, v) in entries {
                match places.get(&k) {
                    Some(&i) => unique[i] = (k, v),
                    None => {
                        places.insert(k.clone(), unique.len());
                        unique.push((k, v));
                    }
                }
            }
            out.push('{');
            for (i, (k, v)) in unique.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push_str(": ");
                out.push_str(v);
            }
            out.push('}');
            unique.len()
        }
        Collection::Set | Collection::Map => {
            out.push('[');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if kind == Collection::Set {
                    out.push_str(k);
                } else {
                    pair(out, SPACED, |o| o.push_str(k), |o| o.push_str(v));
                }
            }
            out.push(']');
            entries.len()
        }
    }
}

/// `[timestamp, ttl, expiry if ttl else null, 0, value]` of a live cell in `style`.
fn live_cell(
    out: &mut String,
    layout: &EventLayout,
    live: &Live,
    cell: &[Datum<'_>],
    style: Style,
) -> Result<(), EventError> {
    let ttl = long(&cell[live.ttl])?;
    let _ = write!(out, "{}{}{}{}", long(&cell[live.timestamp])?, style.item, ttl, style.item);
    if ttl != 0 {
        crate::values::primitive(out, &cell[live.expiry]);
    } else {
        out.push_str("null");
    }
    out.push_str(style.item);
    out.push('0');
    out.push_str(style.item);
    match live.value {
        Some((i, node)) => value(out, &layout.schema, node, &cell[i], style),
        None => out.push_str("null"),
    }
    Ok(())
}

/// `[key, timestamp, ttl, expiry, 0, value]` of a collection element or UDT field written.
fn keyed_cell(
    out: &mut String,
    layout: &EventLayout,
    live: &Live,
    cell: &[Datum<'_>],
    style: Style,
    key: impl FnOnce(&mut String),
) -> Result<(), EventError> {
    out.push('[');
    key(out);
    out.push_str(style.item);
    live_cell(out, layout, live, cell, style)?;
    out.push(']');
    Ok(())
}

/// The `cells` column: `{"k", "s", "l", "d", "c"[, "r"]}` as `spark.delivery.events.cell_changes` writes it.
fn cell_changes(
    layout: &EventLayout,
    kind: &str,
    static_row: bool,
    after: &[Datum<'_>],
    liveness: &Datum<'_>,
    deletion: &Datum<'_>,
    range: Option<&Datum<'_>>,
) -> Result<String, EventError> {
    let schema = &layout.schema;
    let style = COMPACT;
    let clustering: Vec<&Column> = layout.columns.iter().filter(|c| c.kind == ColumnKind::Clustering).collect();
    let mut out = String::from("{\"k\":");
    if static_row || kind == "partition_delete" {
        out.push_str("null");
    } else {
        out.push('[');
        for (i, column) in clustering.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            value(&mut out, schema, column.node, &after[column.field], style);
        }
        out.push(']');
    }
    out.push_str(if static_row { ",\"s\":true,\"l\":" } else { ",\"s\":false,\"l\":" });
    match liveness {
        Datum::Record(l) => {
            let ttl = long(&l[1])?;
            let _ = write!(out, "[{},{},", long(&l[0])?, ttl);
            if ttl != 0 {
                crate::values::primitive(&mut out, &l[2]);
            } else {
                out.push_str("null");
            }
            out.push(']');
        }
        _ => out.push_str("null"),
    }
    out.push_str(",\"d\":");
    match deletion {
        Datum::Record(d) => json::int(&mut out, long(&d[0])?),
        _ => out.push_str("null"),
    }
    out.push_str(",\"c\":{");
    let mut first = true;
    for column in layout.columns.iter().filter(|c| c.kind == ColumnKind::Cell) {
        let Datum::Record(cell) = &after[column.field] else { continue };
        if !first {
            out.push(',');
        }
        first = false;
        json::string(&mut out, &column.name);
        out.push(':');
        match column.cell.as_ref().unwrap() {
            Cell::Atomic { live, tombstone } => {
                out.push('[');
                if matches!(cell[*tombstone], Datum::Bool(true)) {
                    let _ = write!(out, "{},0,null,1,null", long(&cell[live.timestamp])?);
                } else {
                    live_cell(&mut out, layout, live, cell, style)?;
                }
                out.push(']');
            }
            Cell::Multi { deletion, added, removed, removed_key, removed_timestamp, elements } => {
                out.push('[');
                match &cell[*deletion] {
                    Datum::Record(d) => json::int(&mut out, long(&d[0])?),
                    _ => out.push_str("null"),
                }
                out.push_str(",[");
                let mut n = 0;
                let mut next = |out: &mut String| {
                    if n > 0 {
                        out.push(',');
                    }
                    n += 1;
                };
                match elements {
                    Elements::Udt(udt) => {
                        let added = fields(&cell[*added])?;
                        for (index, name, live) in udt {
                            let Datum::Record(element) = &added[*index] else { continue };
                            next(&mut out);
                            keyed_cell(&mut out, layout, live, element, style, |o| json::string(o, name))?;
                        }
                    }
                    Elements::Collection { key, live, .. } => {
                        let Datum::Array(items) = &cell[*added] else {
                            return Err(EventError::InvalidEvent("added is not an array"));
                        };
                        for item in items {
                            let element = fields(item)?;
                            next(&mut out);
                            keyed_cell(&mut out, layout, live, element, style, |o| {
                                value(o, schema, key.1, &element[key.0], style)
                            })?;
                        }
                    }
                }
                let Datum::Array(gone) = &cell[*removed] else {
                    return Err(EventError::InvalidEvent("removed is not an array"));
                };
                for r in gone {
                    let r = fields(r)?;
                    next(&mut out);
                    out.push('[');
                    value(&mut out, schema, removed_key.1, &r[removed_key.0], style);
                    let _ = write!(out, ",{},0,null,1,null]", long(&r[*removed_timestamp])?);
                }
                out.push_str("]]");
            }
        }
    }
    out.push('}');
    if kind == "range_delete" {
        out.push_str(",\"r\":[");
        let Some(Datum::Record(bounds)) = range else {
            return Err(EventError::InvalidEvent("a range deletion without its range"));
        };
        for (i, bound) in bounds.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match bound {
                Datum::Record(b) => {
                    let prefix = fields(&b[0])?;
                    out.push('[');
                    out.push('[');
                    for (n, column) in clustering.iter().enumerate() {
                        let v = bound_value(prefix, column);
                        if matches!(v, Datum::Null) {
                            break;
                        }
                        if n > 0 {
                            out.push(',');
                        }
                        value(&mut out, schema, column.node, v, style);
                    }
                    out.push_str(if matches!(b[1], Datum::Bool(true)) { "],true]" } else { "],false]" });
                }
                _ => out.push_str("null"),
            }
        }
        out.push(']');
    }
    out.push('}');
    Ok(out)
}
