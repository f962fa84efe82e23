//! A CQL type from the tree the Python side hands over (`connector.native_core`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::cql::CqlType;

impl<'py> FromPyObject<'_, 'py> for CqlType {
    type Error = PyErr;

    /// ("native", kind, bits, counter, time ordered, ascii) | ("list" | "set", element, multi-cell)
    /// | ("map", key, value, multi-cell) | ("tuple", [types]) | ("udt", [field names], [types], multi-cell)
    /// | ("vector", element, dimension)
    fn extract(tree: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let kind: String = tree.get_item(0)?.extract()?;
        let item = |i: usize| tree.get_item(i);
        Ok(match kind.as_str() {
            "native" => {
                let kind: String = item(1)?.extract()?;
                let bits: u32 = item(2)?.extract()?;
                let (counter, time_ordered, ascii) = (item(3)?.extract()?, item(4)?.extract()?, item(5)?.extract()?);
                CqlType::native(&kind, bits, counter, time_ordered, ascii).ok_or_else(|| {
                    PyValueError::new_err(format!("no native CQL type of kind {kind} and {bits} bits"))
                })?
            }
            "list" => CqlType::List { element: Box::new(item(1)?.extract()?), multi_cell: item(2)?.extract()? },
            "set" => CqlType::Set { element: Box::new(item(1)?.extract()?), multi_cell: item(2)?.extract()? },
            "map" => CqlType::Map {
                key: Box::new(item(1)?.extract()?),
                value: Box::new(item(2)?.extract()?),
                multi_cell: item(3)?.extract()?,
            },
            "tuple" => CqlType::Tuple(item(1)?.extract()?),
            "udt" => CqlType::Udt {
                field_names: item(1)?.extract()?,
                fields: item(2)?.extract()?,
                multi_cell: item(3)?.extract()?,
            },
            "vector" => CqlType::Vector { element: Box::new(item(1)?.extract()?), dimension: item(2)?.extract()? },
            other => return Err(PyValueError::new_err(format!("unknown kind of CQL type {other}"))),
        })
    }
}
