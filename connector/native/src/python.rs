//! The Python binding: `connector._native`. Errors become the reference decoder's exception
//! classes (`connector.commitlog.errors`), with the segment path and the position.

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyList};

use std::collections::HashMap;

use pyo3::types::PyTuple;

use crate::change::{Bound as RowBound, Cell, Change, ColumnCells, Value};
use crate::error::{Error, Kind};
use crate::event::{write_time, Place, SourceInfo, TablePlan};
use crate::header::DeletionTime;
use crate::layout::{ColumnLayout, TableLayout};
use crate::mutation::{BareKey, MutationDecoder, MutationError};
use crate::segment::{self, Flow};
use pyo3::exceptions::PyValueError;
use ringtail_contract::cql::CqlType;
use ringtail_contract::value::ValueError;

fn raise(py: Python<'_>, path: &str, error: Error) -> PyErr {
    let class = match error.kind {
        Kind::Corrupt => "CorruptSegment",
        Kind::Crc => "CrcMismatch",
        Kind::Truncated => "TruncatedSegment",
        Kind::Unsupported => "UnsupportedSegment",
        Kind::UnsupportedVersion => "UnsupportedVersion",
        Kind::Encrypted => "EncryptedSegment",
    };
    let made = py
        .import("connector.commitlog.errors")
        .and_then(|errors| errors.getattr(class))
        .and_then(|class| class.call1((path, error.position, error.message)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(failed) => failed,
    }
}

/// What `Segment.entries` read.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct Entries {
    /// Each entry as (logical offset, mutation bytes).
    entries: Py<PyList>,
    /// The logical end of the last section read.
    end: usize,
    /// Whether a zero entry size ended the segment.
    end_of_segment: bool,
    /// The damage that ended the read, as the reference reader's exception (after the entries before it).
    error: Option<Py<PyAny>>,
}

/// A commit log segment mapped read-only, its descriptor verified.
#[pyclass(module = "schemas._native", frozen)]
struct Segment {
    path: String,
    inner: segment::Segment,
}

#[pymethods]
impl Segment {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let name = path.to_string_lossy().into_owned();
        let opened =
            py.detach(|| segment::Segment::open(&path)).map_err(|e| PyOSError::new_err(format!("{name}: {e}")))?;
        let inner = opened.map_err(|e| raise(py, &name, e))?;
        Ok(Segment { path: name, inner })
    }

    #[getter]
    fn segment_id(&self) -> i64 {
        self.inner.descriptor.segment_id
    }

    #[getter]
    fn version(&self) -> i32 {
        self.inner.descriptor.version
    }

    #[getter]
    fn messaging_version(&self) -> u32 {
        self.inner.descriptor.messaging_version()
    }

    #[getter]
    fn header_length(&self) -> usize {
        self.inner.descriptor.header_length
    }

    /// The descriptor's parameters, as the JSON text written.
    #[getter]
    fn parameters(&self) -> &str {
        &self.inner.descriptor.parameters
    }

    #[getter]
    fn compression(&self) -> Option<&str> {
        self.inner.descriptor.compression.as_deref()
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// (marker, start, end) of each section up to `limit`, the `_cdc.idx` offset.
    #[pyo3(signature = (limit=None))]
    fn sections(&self, py: Python<'_>, limit: Option<usize>) -> PyResult<Vec<(usize, usize, usize)>> {
        let (found, error) = py.detach(|| self.inner.sections(limit));
        match error {
            Some(e) => Err(raise(py, &self.path, e)),
            None => Ok(found.iter().map(|s| (s.marker, s.start, s.end)).collect()),
        }
    }

    /// The entries of the sections up to `limit` from logical position `start`; the damage that ended the
    /// read is returned after the entries before it, not raised.
    #[pyo3(signature = (limit=None, start=None))]
    fn entries(&self, py: Python<'_>, limit: Option<usize>, start: Option<usize>) -> PyResult<Entries> {
        let mut found = Vec::new();
        let visit = py.detach(|| {
            self.inner.visit(limit, start, |offset, mutation| {
                found.push((offset, mutation.to_vec()));
                Flow::Continue
            })
        });
        let error = visit.error.map(|e| raise(py, &self.path, e).into_value(py).into_any());
        let entries = PyList::new(py, found.iter().map(|(offset, m)| (*offset, PyBytes::new(py, m))))?.unbind();
        Ok(Entries { entries, end: visit.end, end_of_segment: visit.end_of_segment, error })
    }

    /// One pass over the entries of the sections up to `limit` from logical position `start` (an
    /// entry's offset), decoded by `decoder` into the events of its emitting tables, the GIL released
    /// meanwhile: a `Pass`. The error that ends a pass (damage, an unknown table, a schema that does not
    /// fit) is returned after the events before it, not raised; an entry of a table handed off stops the
    /// pass before it, for the caller to read it another way. `skip`: the offset of an entry to pass
    /// over unread (one a schema miss made the caller give up).
    #[pyo3(signature = (decoder, file, ts_ms, limit=None, start=None, max_events=None, skip=None))]
    #[allow(clippy::too_many_arguments)]
    fn events<'py>(
        &self,
        py: Python<'py>,
        decoder: &Decoder,
        file: &str,
        ts_ms: i64,
        limit: Option<usize>,
        start: Option<usize>,
        max_events: Option<usize>,
        skip: Option<usize>,
    ) -> PyResult<Pass> {
        let mut events = Vec::new();
        let mut failure = None;
        let mut resume = None;
        let mut hand_off = None;
        let mut skipped = 0usize;
        let segment_id = self.inner.descriptor.segment_id;
        let visit = py.detach(|| {
            self.inner.visit(limit, start, |offset, mutation| {
                if skip == Some(offset) {
                    return Flow::Continue;
                }
                if max_events.is_some_and(|m| events.len() >= m) {
                    resume = Some(offset);
                    return Flow::Stop;
                }
                match decoder.encode(mutation, segment_id, offset, file, ts_ms, &mut events) {
                    Ok(skips) => {
                        skipped += skips;
                        Flow::Continue
                    }
                    Err(Failure::HandOff) => {
                        hand_off = Some((offset, mutation.to_vec()));
                        Flow::Stop
                    }
                    Err(f) => {
                        failure = Some((offset, f));
                        Flow::Stop
                    }
                }
            })
        });
        let error = match (visit.error, failure) {
            (Some(e), _) => Some(raise(py, &self.path, e).into_value(py).into_bound(py).into_any()),
            (None, Some((offset, f))) => Some(decoder.exception(py, &self.path, offset, f)?.into_any()),
            (None, None) => None,
        };
        let events = Events::new(py, &events)?;
        let hand_off = hand_off.map(|(offset, m)| (offset, PyBytes::new(py, &m).unbind()));
        Ok(Pass {
            events: Py::new(py, events)?,
            end: visit.end,
            end_of_segment: visit.end_of_segment,
            resume,
            error: error.map(Bound::unbind),
            hand_off,
            skipped,
        })
    }
}

/// What one pass of `Segment.events` read.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct Pass {
    /// The events, in log order.
    events: Py<Events>,
    /// The logical end of the last section read completely.
    end: usize,
    /// Whether a zero entry size ended the segment.
    end_of_segment: bool,
    /// The offset of the first entry not read when `max_events` stopped the pass early.
    resume: Option<usize>,
    /// The error that ended the pass, as the reference reader's exception (after the events before it).
    error: Option<Py<PyAny>>,
    /// (offset, mutation bytes) of an entry holding a change of a table the decoder hands off.
    hand_off: Option<(usize, Py<PyBytes>)>,
    /// Changes of tables the decoder skips.
    skipped: usize,
}

/// A column as `connector.native_core.ColumnSpec` describes it: live columns come first, in the order of
/// the event's `after` record; dropped ones follow (their cells are read and left out).
#[derive(FromPyObject)]
struct ColumnSpec {
    name: String,
    cql: CqlType,
    live: bool,
}

/// One table as `connector.native_core.TableSpec` describes it; tables are numbered by their place in
/// the decoder's list.
#[derive(FromPyObject)]
struct TableSpec {
    id: [u8; 16],
    keyspace: String,
    name: String,
    key_schema_id: u32,
    value_schema_id: u32,
    partition_key: Vec<CqlType>,
    clustering: Vec<CqlType>,
    columns: Vec<ColumnSpec>,
    /// `connector.native_core.Mode`: 0 skip its changes, 1 make them events, 2 hand off the entries
    /// holding them.
    mode: u8,
}

/// The `source` record's fields that do not vary per change (`schemas.avro.table.SourceInfo`).
#[derive(FromPyObject)]
struct Source {
    version: String,
    name: String,
    cluster: String,
    node: String,
}

fn column_layout(index: usize, cql: &CqlType) -> ColumnLayout {
    // Complex cell values are always length-prefixed, whatever the element type.
    let fixed_length = if cql.multi_cell() { -1 } else { cql.fixed_length().map_or(-1, |n| n as i32) };
    ColumnLayout { index, fixed_length, complex: cql.multi_cell() }
}

/// Decodes the mutations of one schema version into changes, or straight into framed events.
#[pyclass(module = "schemas._native", frozen)]
struct Decoder {
    decoder: MutationDecoder,
    /// Each table's qualified name and what becomes of its changes.
    tables: Vec<(String, Mode)>,
    source: SourceInfo,
}

#[pymethods]
impl Decoder {
    #[new]
    fn new(tables: Vec<TableSpec>, messaging_version: u32, source: Source) -> PyResult<Self> {
        let mut layouts = HashMap::new();
        let mut modes = Vec::with_capacity(tables.len());
        for (number, spec) in tables.into_iter().enumerate() {
            let TableSpec { id, keyspace, name: table, key_schema_id, value_schema_id, partition_key, clustering, columns, mode } =
                spec;
            let mut by_name = HashMap::new();
            let mut types = Vec::with_capacity(columns.len());
            let live = columns.iter().take_while(|c| c.live).count();
            if columns[live..].iter().any(|c| c.live) {
                return Err(PyValueError::new_err(format!(
                    "{keyspace}.{table}: live columns come before dropped ones"
                )));
            }
            for (index, column) in columns.into_iter().enumerate() {
                by_name.insert(column.name.into_bytes(), column_layout(index, &column.cql));
                types.push(column.cql);
            }
            let fixed = clustering.iter().map(|c| c.fixed_length().map_or(-1, |n| n as i32)).collect();
            layouts.insert(id, (number, TableLayout { clustering: fixed, columns: by_name }));
            let name = format!("{keyspace}.{table}");
            let plan = TablePlan {
                key_schema_id,
                value_schema_id,
                keyspace,
                table,
                partition_key,
                clustering,
                columns: types,
                live,
            };
            let mode = match mode {
                0 => Mode::Skip,
                1 => Mode::Emit(plan),
                2 => Mode::HandOff,
                other => return Err(PyValueError::new_err(format!("unknown table mode {other}"))),
            };
            modes.push((name, mode));
        }
        let Source { version, name, cluster, node } = source;
        Ok(Decoder {
            decoder: MutationDecoder::new(layouts, messaging_version),
            tables: modes,
            source: SourceInfo { version, name, cluster, node },
        })
    }

    /// The changes of the mutation in the entry at `entry_offset` of `segment`.
    fn changes(&self, py: Python<'_>, mutation: &[u8], segment: &str, entry_offset: usize) -> PyResult<Changes> {
        let (mut changes, mut bare) = (Vec::new(), Vec::new());
        let miss = match self.decoder.decode(mutation, &mut changes, &mut bare) {
            Ok(()) => None,
            Err(e) => Some(self.exception(py, segment, entry_offset, Failure::Mutation(e))?.unbind()),
        };
        let changes = changes.iter().map(|c| raw_change(py, c)).collect::<PyResult<Vec<_>>>()?;
        let bare_keys = bare
            .into_iter()
            .map(|(table, update_index, key)| BareUpdate { table, update_index, key: PyBytes::new(py, key).unbind() });
        Ok(Changes {
            changes: PyList::new(py, changes)?.unbind(),
            bare_keys: PyList::new(py, bare_keys)?.unbind(),
            miss,
        })
    }

    /// The events of the mutation's changes to the tables that emit them, key and value framed. `file` is
    /// the segment's file name, `ts_ms` the processing time. Raises UnknownTable or SchemaMismatch (a value
    /// that does not fit its type too) with the entry's position.
    #[allow(clippy::too_many_arguments)]
    fn events(
        &self,
        py: Python<'_>,
        mutation: &[u8],
        segment: &str,
        segment_id: i64,
        entry_offset: usize,
        file: &str,
        ts_ms: i64,
    ) -> PyResult<Events> {
        let mut events = Vec::new();
        if let Err(f) = self.encode(mutation, segment_id, entry_offset, file, ts_ms, &mut events) {
            return Err(PyErr::from_value(self.exception(py, segment, entry_offset, f)?));
        }
        Events::new(py, &events)
    }
}

/// What `Decoder.changes` decoded of one entry.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct Changes {
    /// `RawChange`s.
    changes: Py<PyList>,
    /// `BareUpdate`s: the updates that hold no change, whose keys the reference reader decodes all the same.
    bare_keys: Py<PyList>,
    /// The entry's UnknownTable or SchemaMismatch, for the caller to raise once it has decoded the values
    /// before it, as the reference reader decodes them as it reads.
    miss: Option<Py<PyAny>>,
}

/// A partition update that holds no change: its table's number, its place in the mutation, its key.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct BareUpdate {
    table: usize,
    update_index: u32,
    key: Py<PyBytes>,
}

/// One change's event, made without the GIL.
struct Event {
    offset: usize,
    table: usize,
    update_index: u32,
    row_index: u32,
    write_time: i64,
    key: Vec<u8>,
    value: Vec<u8>,
}

/// Events in log order, a column per field (`connector.batch.Batch` takes the columns as they are): no
/// Python object per event beyond its values.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct Events {
    /// The offset of the entry holding each change.
    offsets: Py<PyList>,
    /// The table of each change, by its place in the decoder's tables.
    tables: Py<PyList>,
    /// Each change's partition update in its mutation, and row in its update.
    updates: Py<PyList>,
    rows: Py<PyList>,
    /// Each change's write time, µs.
    write_times: Py<PyList>,
    /// Each event's key and value, framed.
    keys: Py<PyList>,
    values: Py<PyList>,
}

impl Events {
    fn new(py: Python<'_>, events: &[Event]) -> PyResult<Self> {
        let column = |items: Vec<Bound<'_, PyAny>>| PyList::new(py, items).map(Bound::unbind);
        let ints = |f: &dyn Fn(&Event) -> i64| -> PyResult<Py<PyList>> {
            PyList::new(py, events.iter().map(f)).map(Bound::unbind)
        };
        Ok(Events {
            offsets: ints(&|e| e.offset as i64)?,
            tables: ints(&|e| e.table as i64)?,
            updates: ints(&|e| i64::from(e.update_index))?,
            rows: ints(&|e| i64::from(e.row_index))?,
            write_times: ints(&|e| e.write_time)?,
            keys: column(events.iter().map(|e| PyBytes::new(py, &e.key).into_any()).collect())?,
            values: column(events.iter().map(|e| PyBytes::new(py, &e.value).into_any()).collect())?,
        })
    }
}

#[pymethods]
impl Events {
    fn __len__(&self, py: Python<'_>) -> usize {
        self.offsets.bind(py).len()
    }
}

/// What becomes of a table's changes.
enum Mode {
    Skip,
    Emit(TablePlan),
    /// The entries holding its changes go back to the caller (the reference path reads them).
    HandOff,
}

/// Why an entry could not become events.
enum Failure {
    /// It holds a change of a table handed off.
    HandOff,
    Mutation(MutationError),
    /// A value that does not fit its type: (update index, table number, why).
    Value(u32, usize, ValueError),
}

impl Decoder {
    /// Append the events of one mutation; the count of changes skipped. On a failure, no events.
    fn encode(
        &self,
        mutation: &[u8],
        segment_id: i64,
        offset: usize,
        file: &str,
        ts_ms: i64,
        out: &mut Vec<Event>,
    ) -> Result<usize, Failure> {
        let (mut changes, mut bare) = (Vec::new(), Vec::new());
        let decoded = self.decoder.decode(mutation, &mut changes, &mut bare);
        if let Err(mismatch @ MutationError::SchemaMismatch { .. }) = decoded {
            return Err(Failure::Mutation(mismatch));
        }
        if decoded.is_ok() && changes.iter().any(|c| matches!(self.tables[c.table].1, Mode::HandOff)) {
            return Err(Failure::HandOff);
        }
        let first = out.len();
        let place = Place { segment_id, entry_offset: offset as i64, file, ts_ms };
        // An unknown table is reported once what was read before it fits, as the reference reader would.
        let result = self
            .encode_changes(&changes, &bare, offset, place, out)
            .and_then(|skipped| decoded.map(|()| skipped).map_err(Failure::Mutation));
        if result.is_err() {
            out.truncate(first);
        }
        result
    }

    /// Append the events of the emitted tables' changes, after checking the keys their bare updates
    /// hold; the count of changes skipped.
    fn encode_changes(
        &self,
        changes: &[Change<'_>],
        bare: &[BareKey<'_>],
        offset: usize,
        place: Place<'_>,
        out: &mut Vec<Event>,
    ) -> Result<usize, Failure> {
        for &(table, update_index, key) in bare {
            if let Mode::Emit(plan) = &self.tables[table].1 {
                plan.check_key(key).map_err(|why| Failure::Value(update_index, table, why))?;
            }
        }
        let mut skipped = 0;
        for change in changes {
            let Mode::Emit(plan) = &self.tables[change.table].1 else {
                skipped += 1;
                continue;
            };
            let (key, value) = plan
                .encode(change, &self.source, place)
                .map_err(|why| Failure::Value(change.update_index, change.table, why))?;
            out.push(Event {
                offset,
                table: change.table,
                update_index: change.update_index,
                row_index: change.row_index,
                write_time: write_time(change),
                key,
                value,
            });
        }
        Ok(skipped)
    }

    fn table_name(&self, table: Option<usize>) -> String {
        table.map_or(String::new(), |t| format!(" of {}", self.tables[t].0))
    }

    /// The reference reader's exception for a failure at the entry at `entry_offset`.
    fn exception<'py>(
        &self,
        py: Python<'py>,
        segment: &str,
        entry_offset: usize,
        failure: Failure,
    ) -> PyResult<Bound<'py, PyAny>> {
        let errors = py.import("connector.commitlog.errors")?;
        match failure {
            Failure::HandOff => Ok(PyValueError::new_err(format!(
                "{segment} @ {entry_offset}: the entry holds a change of a table handed off"
            ))
            .into_value(py)
            .into_bound(py)
            .into_any()),
            Failure::Mutation(MutationError::UnknownTable(id)) => {
                let table_id = py
                    .import("uuid")?
                    .getattr("UUID")?
                    .call((), Some(&[("bytes", PyBytes::new(py, &id))].into_py_dict(py)?))?;
                errors.getattr("UnknownTable")?.call1((segment, entry_offset, table_id))
            }
            Failure::Mutation(MutationError::SchemaMismatch { update_index, table, misfit }) => {
                let message = format!(
                    "partition update {update_index}{} does not fit the schema: {} (byte {} of the mutation)",
                    self.table_name(table),
                    misfit.message,
                    misfit.position
                );
                errors.getattr("SchemaMismatch")?.call1((segment, entry_offset, message))
            }
            Failure::Value(update_index, table, why) => {
                let message = format!(
                    "partition update {update_index}{}: a value does not fit the schema: {why}",
                    self.table_name(Some(table))
                );
                errors.getattr("SchemaMismatch")?.call1((segment, entry_offset, message))
            }
        }
    }
}

fn value<'py>(py: Python<'py>, value: &Value<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Empty => PyBytes::new(py, b"").into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
    })
}

fn clustering<'py>(py: Python<'py>, values: &[Value<'_>]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, values.iter().map(|v| value(py, v)).collect::<PyResult<Vec<_>>>()?)
}

fn deletion(d: &Option<DeletionTime>) -> Option<(i64, i64)> {
    d.map(|d| (d.marked_for_delete_at, d.local_deletion_time))
}

fn bound<'py>(py: Python<'py>, b: &Option<RowBound<'_>>) -> PyResult<Option<(Bound<'py, PyTuple>, bool)>> {
    b.as_ref().map(|b| Ok((clustering(py, &b.clustering)?, b.inclusive))).transpose()
}

/// One cell of a change, its value still raw bytes.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct RawCell {
    timestamp: i64,
    ttl: i64,
    local_deletion_time: Option<i64>,
    tombstone: bool,
    /// The element's key in a multi-cell column.
    path: Option<Py<PyBytes>>,
    value: Py<PyBytes>,
}

fn cell(py: Python<'_>, c: &Cell<'_>) -> RawCell {
    RawCell {
        timestamp: c.timestamp,
        ttl: c.ttl,
        local_deletion_time: c.local_deletion_time,
        tombstone: c.tombstone,
        path: c.path.map(|p| PyBytes::new(py, p).unbind()),
        value: PyBytes::new(py, c.value).unbind(),
    }
}

/// One column of a change: its number among the table's columns, its cells (one unless multi-cell).
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct RawColumn {
    index: usize,
    multi_cell: bool,
    /// (marked for delete at, local deletion time) of a multi-cell column's deletion.
    deletion: Option<(i64, i64)>,
    /// `RawCell`s.
    cells: Py<PyList>,
}

/// One change as `Decoder.changes` gives it, its values still raw bytes (`connector.native_changes`
/// decodes them with the schema's codecs). Clustering values and bounds are tuples of raw values.
#[pyclass(module = "schemas._native", frozen, get_all)]
pub struct RawChange {
    table: usize,
    update_index: u32,
    row_index: u32,
    op: &'static str,
    partition_key: Py<PyBytes>,
    clustering: Py<PyTuple>,
    /// (timestamp, ttl, expires at when the ttl is set) of the row's liveness.
    liveness: Option<(i64, i64, Option<i64>)>,
    /// (marked for delete at, local deletion time).
    deletion: Option<(i64, i64)>,
    shadowable: bool,
    is_static: bool,
    /// (clustering values, inclusive) of a range deletion's start and end.
    range_start: Option<(Py<PyTuple>, bool)>,
    range_end: Option<(Py<PyTuple>, bool)>,
    /// `RawColumn`s.
    columns: Py<PyList>,
}

fn raw_change(py: Python<'_>, c: &Change<'_>) -> PyResult<RawChange> {
    let columns = c
        .columns
        .iter()
        .map(|column| match column {
            ColumnCells::Simple { column, cell: one } => Ok(RawColumn {
                index: *column,
                multi_cell: false,
                deletion: None,
                cells: PyList::new(py, [cell(py, one)])?.unbind(),
            }),
            ColumnCells::Complex { column, deletion: d, cells } => Ok(RawColumn {
                index: *column,
                multi_cell: true,
                deletion: deletion(d),
                cells: PyList::new(py, cells.iter().map(|one| cell(py, one)))?.unbind(),
            }),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let unbound = |b: Option<(Bound<'_, PyTuple>, bool)>| b.map(|(values, inclusive)| (values.unbind(), inclusive));
    Ok(RawChange {
        table: c.table,
        update_index: c.update_index,
        row_index: c.row_index,
        op: c.op.name(),
        partition_key: PyBytes::new(py, c.partition_key).unbind(),
        clustering: clustering(py, &c.clustering)?.unbind(),
        liveness: c.liveness.map(|l| (l.timestamp, l.ttl, l.expires_at)),
        deletion: deletion(&c.deletion),
        shadowable: c.shadowable,
        is_static: c.is_static,
        range_start: unbound(bound(py, &c.range_start)?),
        range_end: unbound(bound(py, &c.range_end)?),
        columns: PyList::new(py, columns)?.unbind(),
    })
}

/// The connector's classes, added to `schemas._native` by the extension crate.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Segment>()?;
    m.add_class::<Decoder>()?;
    m.add_class::<Pass>()?;
    m.add_class::<Events>()?;
    m.add_class::<RawChange>()?;
    m.add_class::<Entries>()?;
    m.add_class::<Changes>()?;
    m.add_class::<BareUpdate>()?;
    m.add_class::<RawColumn>()?;
    m.add_class::<RawCell>()?;
    Ok(())
}
