//! The contract's native half, which both sides build on: CQL types as the schema names them (`cql`),
//! a CQL value's bytes to its Avro encoding (`value`), the Avro binary writer (`avro`), Python's text
//! forms (`text`) and Cassandra's variable-length integers (`vint`). The reference is `schemas.cql`
//! and `schemas.avro`; `python` reads a CQL type from the tree the Python side hands over.

pub mod avro;
pub mod cql;
pub mod text;
pub mod value;
pub mod vint;

pub mod python;
