//! The Python binding: `connector._native`. Errors become the reference decoder's exception
//! classes (`connector.commitlog.errors`), with the segment path and the position.

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes};

use std::collections::HashMap;

use pyo3::types::PyTuple;

use crate::change::{Bound as RowBound, Cell, Change, ColumnCells, Value};
use crate::error::{Error, Kind};
use crate::header::DeletionTime;
use crate::layout::{ColumnLayout, TableLayout};
use crate::mutation::{MutationDecoder, MutationError};
use crate::segment;

fn raise(py: Python<'_>, path: &str, error: Error) -> PyErr {
    let class = match error.kind {
        Kind::Corrupt => "CorruptSegment",
        Kind::Crc => "CrcMismatch",
        Kind::Truncated => "TruncatedSegment",
        Kind::Unsupported => "UnsupportedSegment",
        Kind::UnsupportedVersion => "UnsupportedVersion",
        Kind::Encrypted => "EncryptedSegment",
    };
    let made = py.import("connector.commitlog.errors")
        .and_then(|errors| errors.getattr(class))
        .and_then(|class| class.call1((path, error.position, error.message)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(failed) => failed,
    }
}

/// (entries, end, end of segment) as `Segment.entries` returns them.
type EntriesRead<'py> = (Vec<(usize, Bound<'py, PyBytes>)>, usize, bool);

/// A commit log segment mapped read-only, its descriptor verified.
#[pyclass(module = "connector._native", frozen)]
struct Segment {
    path: String,
    inner: segment::Segment,
}

#[pymethods]
impl Segment {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let name = path.to_string_lossy().into_owned();
        let opened = py.detach(|| segment::Segment::open(&path))
            .map_err(|e| PyOSError::new_err(format!("{name}: {e}")))?;
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
        let found = py.detach(|| self.inner.sections(limit)).map_err(|e| raise(py, &self.path, e))?;
        Ok(found.iter().map(|s| (s.marker, s.start, s.end)).collect())
    }

    /// (entries, end, end_of_segment): the (logical offset, mutation bytes) of the entries of
    /// the sections up to `limit` from logical position `start`; the logical end of the last
    /// section read; whether a zero entry size ended the segment.
    #[pyo3(signature = (limit=None, start=None))]
    fn entries<'py>(&self, py: Python<'py>, limit: Option<usize>, start: Option<usize>)
                    -> PyResult<EntriesRead<'py>> {
        let read = py.detach(|| self.inner.read(limit, start)).map_err(|e| raise(py, &self.path, e))?;
        let entries = read.entries.iter().map(|(offset, m)| (*offset, PyBytes::new(py, m))).collect();
        Ok((entries, read.end, read.end_of_segment))
    }
}

/// (table id, fixed length of each clustering column, (UTF-8 name, fixed length, multi-cell) of
/// each static, regular and dropped column) of one table; fixed lengths are -1 for
/// length-prefixed values. Tables and columns are numbered by their place in these lists.
type TableDescription = ([u8; 16], Vec<i32>, Vec<(Vec<u8>, i32, bool)>);

/// Decodes mutations into changes whose values stay serialized bytes.
#[pyclass(module = "connector._native", frozen)]
struct MutationReader {
    decoder: MutationDecoder,
}

#[pymethods]
impl MutationReader {
    #[new]
    fn new(tables: Vec<TableDescription>, messaging_version: u32) -> Self {
        let mut layouts = HashMap::new();
        for (table, (id, clustering, columns)) in tables.into_iter().enumerate() {
            let columns = columns.into_iter().enumerate().map(|(index, (name, fixed_length, complex))| {
                (name, ColumnLayout { index, fixed_length, complex })
            }).collect();
            layouts.insert(id, (table, TableLayout { clustering, columns }));
        }
        MutationReader { decoder: MutationDecoder::new(layouts, messaging_version) }
    }

    /// The changes of the mutation in the entry at `entry_offset` of `segment`, as tuples:
    /// (table, update index, row index, op, partition key, clustering, liveness, deletion,
    /// (shadowable, static), (range start, range end), columns); each column (index, multi-cell,
    /// column deletion, cells), each cell (timestamp, ttl, local deletion time, tombstone, path,
    /// value). Raises UnknownTable or
    /// SchemaMismatch with the entry's position.
    fn decode<'py>(&self, py: Python<'py>, mutation: &[u8], segment: &str, entry_offset: usize)
                   -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let mut changes = Vec::new();
        if let Err(error) = self.decoder.decode(mutation, &mut changes) {
            let errors = py.import("connector.commitlog.errors")?;
            let exception = match error {
                MutationError::UnknownTable(id) => {
                    let table_id = py.import("uuid")?.getattr("UUID")?
                        .call((), Some(&[("bytes", PyBytes::new(py, &id))].into_py_dict(py)?))?;
                    errors.getattr("UnknownTable")?.call1((segment, entry_offset, table_id))?
                }
                MutationError::SchemaMismatch { update_index, misfit, .. } => {
                    let message = format!("partition update {update_index} does not fit the schema: {} (byte {})",
                                          misfit.message, misfit.position);
                    errors.getattr("SchemaMismatch")?.call1((segment, entry_offset, message))?
                }
            };
            return Err(PyErr::from_value(exception));
        }
        changes.iter().map(|c| change_tuple(py, c)).collect()
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

type CellTuple<'py> = (i64, i64, Option<i64>, bool, Option<Bound<'py, PyBytes>>, Bound<'py, PyBytes>);

fn cell<'py>(py: Python<'py>, c: &Cell<'_>) -> CellTuple<'py> {
    (c.timestamp, c.ttl, c.local_deletion_time, c.tombstone, c.path.map(|p| PyBytes::new(py, p)),
     PyBytes::new(py, c.value))
}

fn change_tuple<'py>(py: Python<'py>, c: &Change<'_>) -> PyResult<Bound<'py, PyTuple>> {
    let columns = c.columns.iter().map(|column| match column {
        ColumnCells::Simple { column, cell: one } => (*column, false, None::<(i64, i64)>, vec![cell(py, one)]).into_pyobject(py),
        ColumnCells::Complex { column, deletion: d, cells } => {
            (*column, true, deletion(d), cells.iter().map(|one| cell(py, one)).collect::<Vec<_>>()).into_pyobject(py)
        }
    }).collect::<PyResult<Vec<_>>>()?;
    (c.table, c.update_index, c.row_index, c.op.name(), PyBytes::new(py, c.partition_key), clustering(py, &c.clustering)?,
     c.liveness.map(|l| (l.timestamp, l.ttl, l.expires_at)), deletion(&c.deletion), (c.shadowable, c.is_static),
     (bound(py, &c.range_start)?, bound(py, &c.range_end)?), columns).into_pyobject(py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Segment>()?;
    m.add_class::<MutationReader>()?;
    Ok(())
}
