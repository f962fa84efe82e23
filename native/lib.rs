//! `schemas._native`: the connector's half (segments read into events) and Spark's half (events read
//! back into log rows) in one module, so one wheel carries both.

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    ringtail_commitlog::python::register(m)?;
    ringtail_events::python::register(m)?;
    Ok(())
}
