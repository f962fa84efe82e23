//! The Python binding of `events`: `schemas._native.EventDecoder`, handed the Arrow buffers of a
//! Kafka batch by address (the caller keeps the batch alive for the call) and giving back the
//! `DECODED` columns' buffers, which `spark.delivery.native_events` assembles into Arrow arrays.

use std::collections::{BTreeMap, HashMap, HashSet};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyList, PyString};
use pyo3::IntoPyObjectExt;

use crate::batch::{Decoded, Decoder, FixedIn, Flags, Records, Valid, VarIn};
use crate::columns::{Bits, Fixed, Items, Pairs, Var};
use crate::copies::Copies;
use crate::datum_writer;
use crate::error::EventError;
use crate::json_writer;
use crate::log_batch::Batches;
use crate::log_insert::{Elements, LogInsert, SinkRow, Slot};
use crate::log_json::{self, Field, Member, Number, Refused};
use crate::mirror::order::Order;
use crate::mirror::value::Value;
use crate::mirror::{Column, Merged, Rules, Storage};
use crate::schema::Schema;
use crate::snapshot::{CellColumn, KeyColumn, ReadRows, TableRows, ValueJson};
use ringtail_contract::avro::Writer;
use ringtail_contract::cql::CqlType;

/// The one place an `EventError` becomes a Python exception. A record's own error never gets here (it
/// is its dead letter): only buffers that do not hold what they claim, the caller's mistake.
fn raise(error: EventError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// (validity address or 0, offsets address, data address, data size, offset, length) of a text or
/// binary column; (validity address or 0, 0, values address, values size, offset, length) of a
/// fixed-width one.
type ColumnAddress = (usize, usize, usize, usize, usize, usize);

unsafe fn slice<'a, T>(address: usize, count: usize) -> &'a [T] {
    if address == 0 || count == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(address as *const T, count)
    }
}

unsafe fn var<'a>(c: ColumnAddress) -> VarIn<'a> {
    let (valid, offsets, data, size, offset, len) = c;
    VarIn {
        valid: (valid != 0).then(|| slice(valid, (offset + len).div_ceil(8))),
        offsets: slice(offsets, offset + len + 1),
        data: slice(data, size),
        offset,
    }
}

unsafe fn fixed<'a, T>(c: ColumnAddress) -> FixedIn<'a, T> {
    let (_, _, values, size, offset, _) = c;
    FixedIn { values: slice(values, size / std::mem::size_of::<T>()), offset }
}

#[pyclass(module = "schemas._native")]
struct EventDecoder {
    inner: Decoder,
}

#[pymethods]
impl EventDecoder {
    #[new]
    #[pyo3(signature = (cells=false))]
    fn new(cells: bool) -> Self {
        EventDecoder { inner: Decoder::new(cells) }
    }

    fn add_schema(&mut self, schema_id: i32, text: &str) {
        self.inner.add(schema_id, text)
    }

    /// Schema ids of the batch's framed values not given yet.
    fn missing(&self, values: ColumnAddress) -> PyResult<Vec<i32>> {
        let column = unsafe { var(values) };
        self.inner.missing(&column, values.5).map_err(raise)
    }

    /// The buffers of the `DECODED` columns, by name; with `copies`, without the records whose change
    /// the task has already decoded.
    #[pyo3(signature = (columns, unknown, copies=None))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        columns: (ColumnAddress, ColumnAddress, ColumnAddress, ColumnAddress, ColumnAddress, ColumnAddress),
        unknown: HashMap<i32, String>,
        mut copies: Option<PyRefMut<'py, ReplicaCopies>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (topic, partition, offset, timestamp, key, value) = columns;
        let records = unsafe {
            Records {
                len: value.5,
                topic: var(topic),
                partition: fixed(partition),
                offset: fixed(offset),
                timestamp: fixed(timestamp),
                key: var(key),
                value: var(value),
            }
        };
        let seen = copies.as_deref_mut().map(|c| &mut c.inner);
        let decoded = py.detach(|| self.inner.decode(&records, &unknown, seen)).map_err(raise)?;
        buffers(py, decoded)
    }
}

/// The changes one task has decoded, so that it skips the other replicas' copies of them
/// (`events::copies`). One per task: a task's result must not depend on the tasks before it.
#[pyclass(module = "schemas._native")]
struct ReplicaCopies {
    inner: Copies,
}

#[pymethods]
impl ReplicaCopies {
    #[new]
    fn new() -> Self {
        ReplicaCopies { inner: Copies::default() }
    }

    /// Records skipped as copies so far.
    #[getter]
    fn skipped(&self) -> usize {
        self.inner.skipped
    }
}

fn bits<'py>(py: Python<'py>, b: &Bits) -> Option<Bound<'py, PyBytes>> {
    (b.unset > 0).then(|| PyBytes::new(py, &b.bytes))
}

fn raw<T>(values: &[T]) -> &[u8] {
    unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) }
}

type VarOut<'py> = (Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize);
type FixedOut<'py> = (Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>, usize);

fn var_out<'py>(py: Python<'py>, v: &Var) -> VarOut<'py> {
    (bits(py, &v.valid), PyBytes::new(py, raw(&v.offsets)), PyBytes::new(py, &v.data), v.valid.unset)
}

fn fixed_out<'py, T>(py: Python<'py>, f: &Fixed<T>) -> FixedOut<'py> {
    (bits(py, &f.valid), PyBytes::new(py, raw(&f.values)), f.valid.unset)
}

fn flags_out<'py>(py: Python<'py>, f: &Flags) -> FixedOut<'py> {
    (bits(py, &f.valid), PyBytes::new(py, &f.values.bytes), f.valid.unset)
}

fn pairs_out<'py>(py: Python<'py>, p: &Pairs) -> (FixedOut<'py>, VarOut<'py>, VarOut<'py>) {
    (
        (bits(py, &p.valid), PyBytes::new(py, raw(&p.offsets)), p.valid.unset),
        var_out(py, &p.keys),
        var_out(py, &p.values),
    )
}

fn items_out<'py>(py: Python<'py>, i: &Items) -> (FixedOut<'py>, VarOut<'py>) {
    ((bits(py, &i.valid), PyBytes::new(py, raw(&i.offsets)), i.valid.unset), var_out(py, &i.items))
}

fn buffers(py: Python<'_>, d: Decoded) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("rows", d.rows)?;
    for (name, column) in [
        ("keyspace", &d.keyspace),
        ("table", &d.table),
        ("cdc$time", &d.time),
        ("key", &d.key),
        ("partition_key", &d.partition_key),
        ("change_id", &d.change_id),
        ("node", &d.node),
        ("topic", &d.topic),
        ("failure", &d.failure),
        ("failure_detail", &d.failure_detail),
        ("raw_key", &d.raw_key),
        ("raw_value", &d.raw_value),
        ("cells", &d.cells),
    ] {
        out.set_item(name, var_out(py, column))?;
    }
    for (name, column) in [
        ("cdc$ttl", &d.ttl),
        ("write_time_us", &d.write_time_us),
        ("kafka_time", &d.kafka_time),
        ("segment_id", &d.segment_id),
        ("entry_offset", &d.entry_offset),
        ("offset", &d.offset),
    ] {
        out.set_item(name, fixed_out(py, column))?;
    }
    for (name, column) in [
        ("cdc$batch_seq_no", &d.batch_seq_no),
        ("update_index", &d.update_index),
        ("row_index", &d.row_index),
        ("partition", &d.partition),
        ("schema_id", &d.schema_id),
    ] {
        out.set_item(name, fixed_out(py, column))?;
    }
    out.set_item("cdc$operation", fixed_out(py, &d.operation))?;
    out.set_item("cdc$end_of_batch", flags_out(py, &d.end_of_batch))?;
    out.set_item("columns", pairs_out(py, &d.columns))?;
    out.set_item("deleted_elements", pairs_out(py, &d.deleted_elements))?;
    out.set_item("deleted_columns", items_out(py, &d.deleted_columns))?;
    Ok(out)
}

/// A key column: (name, CQL type tree, Avro schema of its values).
type KeySpec = (String, CqlType, String);
/// A cell column: (name, CQL type tree, Avro schema of its values, write time selected, TTL selected).
type CellSpec = (String, CqlType, String, bool, bool);

fn value_json(cql: CqlType, schema: &str) -> PyResult<ValueJson> {
    ValueJson::new(cql, schema).map_err(PyValueError::new_err)
}

fn key_columns(specs: Vec<KeySpec>) -> PyResult<Vec<KeyColumn>> {
    specs.into_iter().map(|(name, cql, schema)| Ok(KeyColumn { json: value_json(cql, &schema)?, name })).collect()
}

/// A table's snapshot statement compiled once (`snapshot::TableRows`): pages of its result rows → log rows.
#[pyclass(module = "schemas._native")]
struct SnapshotRows {
    inner: TableRows,
}

#[pymethods]
impl SnapshotRows {
    #[new]
    fn new(
        keyspace: &str,
        table: &str,
        partition_key: Vec<KeySpec>,
        clustering: Vec<KeySpec>,
        cells: Vec<CellSpec>,
    ) -> PyResult<Self> {
        let cells = cells
            .into_iter()
            .map(|(name, cql, schema, written, ttl)| {
                Ok(CellColumn { json: value_json(cql, &schema)?, name, written, ttl })
            })
            .collect::<PyResult<_>>()?;
        Ok(SnapshotRows {
            inner: TableRows::new(keyspace, table, key_columns(partition_key)?, key_columns(clustering)?, cells),
        })
    }

    /// The buffers of the columns a page's rows section gives (`rows`, `token`, `partition_key`, `key`,
    /// `columns`, `cdc$ttl`, `write_time_us`, `change_id`, `cdc$time`); ValueError naming the row and column
    /// of a value that does not fit its type.
    fn read<'py>(&self, py: Python<'py>, section: &[u8], version_us: i64) -> PyResult<Bound<'py, PyDict>> {
        let rows =
            py.detach(|| self.inner.read(section, version_us)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        read_buffers(py, rows)
    }
}

fn read_buffers(py: Python<'_>, r: ReadRows) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("rows", r.rows)?;
    for (name, column) in
        [("partition_key", &r.partition_key), ("key", &r.key), ("change_id", &r.change_id), ("cdc$time", &r.time)]
    {
        out.set_item(name, var_out(py, column))?;
    }
    for (name, column) in [("token", &r.token), ("cdc$ttl", &r.ttl), ("write_time_us", &r.write_time_us)] {
        out.set_item(name, fixed_out(py, column))?;
    }
    out.set_item("columns", pairs_out(py, &r.columns))?;
    Ok(out)
}

/// (name, kind, its columns' addresses, how many of the entries after it are its fields) of a column of
/// log rows made JSON (`log_json`). Kinds, with their columns: `text`, `json`, `hex` (the column); `integer`,
/// `boolean`, `time` (its values as int64); `json_map` (the map's validity, offsets, keys, values);
/// `text_list` (the list's validity, offsets, items); `row` (the struct's validity, then its fields).
type JsonFieldSpec = (String, String, Vec<ColumnAddress>, usize);

unsafe fn valid<'a>(c: ColumnAddress) -> Valid<'a> {
    let (bits, .., offset, len) = c;
    Valid { bits: (bits != 0).then(|| slice(bits, (offset + len).div_ceil(8))), offset }
}

/// The next `count` members of `specs`, a struct's fields after it.
unsafe fn json_members<'a>(specs: &mut std::slice::Iter<'_, JsonFieldSpec>, count: usize) -> PyResult<Vec<Member<'a>>> {
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let (name, kind, columns, fields) =
            specs.next().ok_or_else(|| PyValueError::new_err("a struct's fields are missing"))?;
        let column = |i: usize| {
            columns
                .get(i)
                .copied()
                .ok_or_else(|| PyValueError::new_err(format!("{name}: a {kind} without its column {i}")))
        };
        let number =
            |kind: Number| -> PyResult<Field<'a>> { Ok(Field::Number(kind, valid(column(0)?), fixed(column(0)?))) };
        let field = match kind.as_str() {
            "text" => Field::Text(var(column(0)?)),
            "json" => Field::Json(var(column(0)?)),
            "hex" => Field::Hex(var(column(0)?)),
            "integer" => number(Number::Integer)?,
            "boolean" => number(Number::Boolean)?,
            "time" => number(Number::Time)?,
            "json_map" => Field::JsonMap {
                valid: valid(column(0)?),
                offsets: fixed(column(1)?),
                keys: var(column(2)?),
                values: var(column(3)?),
            },
            "text_list" => {
                Field::TextList { valid: valid(column(0)?), offsets: fixed(column(1)?), items: var(column(2)?) }
            }
            "row" => Field::Row { valid: valid(column(0)?), fields: json_members(specs, *fields)? },
            other => return Err(PyValueError::new_err(format!("{name}: no JSON for a column of kind {other}"))),
        };
        members.push(Member::new(name, field));
    }
    Ok(members)
}

/// Each of `len` rows' JSON text (`log_json`) as a text column's (offsets, data); or the first row that
/// holds a value's text that is not JSON. `fields` (`JsonFieldSpec`) are Arrow columns kept alive by the
/// caller for the call.
#[pyfunction]
fn log_row_texts<'py>(py: Python<'py>, fields: Vec<JsonFieldSpec>, len: usize) -> PyResult<Bound<'py, PyAny>> {
    let (mut specs, mut members) = (fields.iter(), Vec::new());
    while specs.len() > 0 {
        members.extend(unsafe { json_members(&mut specs, 1)? });
    }
    match py.detach(|| log_json::texts(&members, len)) {
        Ok(texts) => {
            (PyBytes::new(py, raw(&texts.offsets)), PyBytes::new(py, texts.data.as_bytes())).into_bound_py_any(py)
        }
        Err(Refused::NotJson(row)) => row.into_bound_py_any(py),
        Err(Refused::Buffers(error)) => Err(raise(error)),
    }
}

/// A mirror's merge rules for one table layout (`spark.mirror.native`): a partition's changes merged
/// into its states natively, or None where the reference merges it.
#[pyclass(module = "schemas._native", frozen)]
struct MirrorRules {
    inner: Rules,
    /// The columns of an image's row in the reference's order (`spark.mirror.images`): the partition
    /// key's, the clustering columns', the static columns', the regular ones'; a row's JSON is framed so.
    shown: Vec<String>,
}

/// (name, storage, static, element keys stored as strings, element order, UDT fields) of a column.
type ColumnSpec = (String, String, bool, bool, String, Vec<String>);
/// (change's place, key, values before or None, values after or None) of an image.
type ImageOut<'py> = (usize, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);
/// (row key, text or None, expiry) of each state to write, (clustering or None, values or None) of each
/// mirror row, and the images, with the partition key values.
type MergedOut<'py> = (
    Bound<'py, PyAny>,
    Vec<(String, Option<String>, Option<i64>)>,
    Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    Vec<ImageOut<'py>>,
);

#[pymethods]
impl MirrorRules {
    #[new]
    fn new(
        partition_key: Vec<String>,
        clustering: Vec<String>,
        columns: Vec<ColumnSpec>,
        dropped: Vec<(String, i64)>,
    ) -> PyResult<Self> {
        let mut shown: Vec<String> = partition_key.iter().chain(&clustering).cloned().collect();
        shown.extend(columns.iter().filter(|c| c.2).map(|c| c.0.clone()));
        shown.extend(columns.iter().filter(|c| !c.2).map(|c| c.0.clone()));
        let mut by_name = BTreeMap::new();
        for (name, storage, is_static, key_strings, order, fields) in columns {
            let storage =
                Storage::named(&storage).ok_or_else(|| PyValueError::new_err(format!("no storage {storage:?}")))?;
            by_name.insert(name, Column { storage, is_static, key_strings, order: Order::named(&order), fields });
        }
        let inner = Rules::new(partition_key, clustering, by_name, dropped.into_iter().collect());
        Ok(MirrorRules { inner, shown })
    }

    /// The row key of the one row a change's cells touch; None: it reaches beyond one row, or the
    /// reference reads it.
    fn touched(&self, cells: &str) -> Option<String> {
        self.inner.touched(cells)
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (key, record, stored, changes, now, due, whole, images=false))]
    fn merge<'py>(
        &self,
        py: Python<'py>,
        key: Option<&str>,
        record: Option<&str>,
        stored: Vec<(String, String)>,
        changes: Vec<String>,
        now: i64,
        due: HashSet<String>,
        whole: bool,
        images: bool,
    ) -> PyResult<Option<MergedOut<'py>>> {
        let changes: Vec<&str> = changes.iter().map(String::as_str).collect();
        let Some(Merged { partition_key, states, rows, images }) =
            self.inner.merge(key, record, &stored, &changes, now, &due, whole, images)
        else {
            return Ok(None);
        };
        let mut shown = Vec::with_capacity(rows.len());
        for (clustering, values) in rows {
            let clustering = match clustering {
                Some(c) => to_python(py, &c)?,
                None => py.None().into_bound(py),
            };
            shown.push((clustering, optional_object(py, values.as_ref(), None)?));
        }
        let mut made = Vec::with_capacity(images.len());
        for image in images {
            let key = optional_object(py, Some(&image.key), Some(&self.shown))?;
            let before = optional_object(py, image.before.as_ref(), Some(&self.shown))?;
            made.push((image.change, key, before, optional_object(py, image.after.as_ref(), Some(&self.shown))?));
        }
        Ok(Some((to_python(py, &partition_key)?, states, shown, made)))
    }
}

/// A dict of the members, or None; with `order`, its keys in that order (those the members have).
fn optional_object<'py>(
    py: Python<'py>,
    members: Option<&BTreeMap<String, Value>>,
    order: Option<&[String]>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(members) = members else { return Ok(py.None().into_bound(py)) };
    let Some(order) = order else { return Ok(object_to_python(py, members)?.into_any()) };
    let out = PyDict::new(py);
    for name in order {
        if let Some(value) = members.get(name) {
            out.set_item(PyString::new(py, name), to_python(py, value)?)?;
        }
    }
    Ok(out.into_any())
}

fn object_to_python<'py>(py: Python<'py>, members: &BTreeMap<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (key, value) in members {
        out.set_item(PyString::new(py, key), to_python(py, value)?)?;
    }
    Ok(out)
}

/// A JSON value as `json.loads` gives it.
fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::BigInt(digits) => py.get_type::<pyo3::types::PyInt>().call1((digits.as_str(),))?,
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let items = items.iter().map(|v| to_python(py, v)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(members) => object_to_python(py, members)?.into_any(),
    })
}

/// A log table's INSERT values made natively (`log_insert`), for `spark.sinks.cassandra.native`.
#[pyclass(module = "schemas._native", frozen)]
struct LogInsertValues {
    inner: LogInsert,
}

/// A map column's (offsets, keys, values) and a list column's (offsets, values).
type MapAddress = (ColumnAddress, ColumnAddress, ColumnAddress);
type ListAddress = (ColumnAddress, ColumnAddress);
/// (name, position, the keys' type tree or None, a UDT's field names or None) of `cdc$deleted_elements_X`.
type ElementsSpec = (String, usize, Option<CqlType>, Option<Vec<String>>);
/// The sink's projection of a log row, in `SinkRow`'s order (`end_of_batch` as int8).
type SinkRowAddresses = (
    ColumnAddress,
    ColumnAddress,
    ColumnAddress,
    ColumnAddress,
    ColumnAddress,
    ColumnAddress,
    ColumnAddress,
    MapAddress,
    ListAddress,
    MapAddress,
    ColumnAddress,
);

/// A BATCH request as Python gets it: (routing key, statements, rows).
type BatchRequest<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<usize>);

fn text_at<'a>(column: &VarIn<'a>, row: usize) -> Option<&'a str> {
    column.get(row).ok().flatten().and_then(|b| std::str::from_utf8(b).ok())
}

/// A map's or list's entries of `row` (the list's without values); None if a key is null or not text.
fn entries<'a>(
    offsets: &FixedIn<'a, i32>,
    keys: &VarIn<'a>,
    values: Option<&VarIn<'a>>,
    row: usize,
) -> Option<Vec<(&'a str, Option<&'a str>)>> {
    let (start, end) = (offsets.get(row), offsets.get(row + 1));
    let mut out = Vec::with_capacity((end - start).max(0) as usize);
    for i in start.max(0) as usize..end.max(0) as usize {
        let key = std::str::from_utf8(keys.get(i).ok()??).ok()?;
        let value = match values {
            Some(values) => values.get(i).ok()?.map(std::str::from_utf8).transpose().ok()?,
            None => None,
        };
        out.push((key, value));
    }
    Some(out)
}

#[pymethods]
impl LogInsertValues {
    /// `width`: the log table's columns; (name, position, type tree) of each key and data column,
    /// (name, position) of each `cdc$deleted_X`, an `ElementsSpec` of each `cdc$deleted_elements_X`.
    #[new]
    fn new(
        width: usize,
        keys: Vec<(String, usize, CqlType)>,
        values: Vec<(String, usize, CqlType)>,
        deleted: Vec<(String, usize)>,
        elements: Vec<ElementsSpec>,
    ) -> PyResult<Self> {
        let elements = elements
            .into_iter()
            .map(|(name, at, keys, fields)| match (keys, fields) {
                (_, Some(fields)) => Ok((name, at, Elements::Fields(fields))),
                (Some(keys), None) => Ok((name, at, Elements::Keys(keys))),
                (None, None) => Err(PyValueError::new_err(format!("{name}: neither the keys' type nor fields"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let positions = keys.iter().map(|k| k.1).chain(values.iter().map(|v| v.1)).chain(deleted.iter().map(|d| d.1));
        if let Some(at) =
            positions.chain(elements.iter().map(|e: &(String, usize, Elements)| e.1)).find(|&at| at >= width)
        {
            return Err(PyValueError::new_err(format!("position {at} beyond the log table's {width} columns")));
        }
        Ok(LogInsertValues { inner: LogInsert::new(width, keys, values, deleted, elements) })
    }

    /// The rows as unlogged BATCH requests of the prepared INSERT `query_id` (`log_batch`): each request's
    /// routing key, statements and rows, with at most `limit` bytes of values a request; and the rows left
    /// to the reference. `rows` (`SinkRowAddresses`) are Arrow columns of the same length, kept alive by
    /// the caller for the call.
    fn batches<'py>(
        &self,
        py: Python<'py>,
        rows: SinkRowAddresses,
        query_id: &[u8],
        limit: usize,
    ) -> PyResult<(Vec<BatchRequest<'py>>, Vec<usize>)> {
        let (stream_id, time, seq, operation, ttl, end_of_batch, key, columns, deleted, elements, write_time) = rows;
        let len = key.5;
        let (stream_id, time, key) = unsafe { (var(stream_id), var(time), var(key)) };
        let (seq, operation, end_of_batch, write_time) =
            unsafe { (fixed::<i32>(seq), fixed::<i8>(operation), fixed::<i8>(end_of_batch), fixed::<i64>(write_time)) };
        let (ttl_valid, ttl) = unsafe { (valid(ttl), fixed::<i64>(ttl)) };
        let (column_offsets, column_names, column_texts) =
            unsafe { (fixed::<i32>(columns.0), var(columns.1), var(columns.2)) };
        let (deleted_offsets, deleted_names) = unsafe { (fixed::<i32>(deleted.0), var(deleted.1)) };
        let (element_offsets, element_names, element_texts) =
            unsafe { (fixed::<i32>(elements.0), var(elements.1), var(elements.2)) };
        let mut batches = Batches::new(query_id, limit);
        let mut left = Vec::new();
        let (mut bytes, mut slots): (Vec<u8>, Vec<Slot>) = (Vec::new(), Vec::new());
        for i in 0..len {
            let ttl_present = ttl_valid.at(i);
            let row = (|| {
                Some(SinkRow {
                    stream_id: stream_id.get(i).ok()??,
                    time: text_at(&time, i)?,
                    batch_seq_no: seq.get(i),
                    operation: operation.get(i),
                    ttl: ttl_present.then(|| ttl.get(i)),
                    end_of_batch: end_of_batch.get(i) != 0,
                    key: text_at(&key, i)?,
                    columns: entries(&column_offsets, &column_names, Some(&column_texts), i)?,
                    deleted_columns: entries(&deleted_offsets, &deleted_names, None, i)?
                        .into_iter()
                        .map(|(name, _)| name)
                        .collect(),
                    deleted_elements: entries(&element_offsets, &element_names, Some(&element_texts), i)?,
                    write_time_us: write_time.get(i),
                })
            })();
            bytes.clear();
            match row.and_then(|row| self.inner.encode(&row, &mut bytes, &mut slots).map(|()| row.stream_id)) {
                Some(routing_key) => batches.add(i, routing_key, &bytes, &slots),
                None => left.push(i),
            }
        }
        let requests = batches
            .finish()
            .map(|r| (PyBytes::new(py, &r.routing_key), PyBytes::new(py, &r.statements), r.rows))
            .collect();
        Ok((requests, left))
    }
}

/// Values in the log's JSON forms as datums of a registered schema, in Confluent's wire format (`datum_writer`).
#[pyclass(module = "schemas._native", frozen)]
pub struct AvroFramer {
    schema: Schema,
    header: [u8; 5],
}

#[pymethods]
impl AvroFramer {
    #[new]
    fn new(schema_id: i32, schema: &str) -> PyResult<Self> {
        let parsed = Schema::parse(schema).map_err(|why| raise(EventError::UnreadableSchema { id: schema_id, why }))?;
        let mut header = [0u8; 5];
        header[1..].copy_from_slice(&schema_id.to_be_bytes());
        Ok(AvroFramer { schema: parsed, header })
    }

    fn frame<'py>(&self, py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let mut w = Writer { buf: self.header.to_vec() };
        datum_writer::write(&self.schema, self.schema.root, value, &mut w)
            .map_err(|error| PyValueError::new_err(error.to_string()))?;
        Ok(PyBytes::new(py, &w.buf))
    }
}

/// The JSON text of `value` as `json.JSONEncoder(separators=(",", ":"), allow_nan=False)` writes it (`json_writer`);
/// None for a value left to that encoder.
#[pyfunction]
fn json_bytes<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> Option<Bound<'py, PyBytes>> {
    let mut out = String::new();
    json_writer::write(value, &mut out)?;
    Some(PyBytes::new(py, out.as_bytes()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroFramer>()?;
    m.add_class::<EventDecoder>()?;
    m.add_class::<LogInsertValues>()?;
    m.add_class::<MirrorRules>()?;
    m.add_class::<ReplicaCopies>()?;
    m.add_class::<SnapshotRows>()?;
    m.add_function(wrap_pyfunction!(json_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(log_row_texts, m)?)
}
