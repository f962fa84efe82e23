//! The Python binding: `connector._native`. Errors become the reference decoder's exception
//! classes (`connector.commitlog.errors`), with the segment path and the position.

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{Error, Kind};
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Segment>()?;
    Ok(())
}
