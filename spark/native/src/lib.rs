//! Spark's native half, for the job and the runners: Confluent-framed Avro values of a Kafka batch →
//! CDC log rows as Arrow columns, in one pass without Python objects per row, and a snapshot's pages of
//! result rows the same way. The reference is `spark.delivery.events` with `schemas.avro.reader`, and
//! `spark.snapshot.rows`; the tests hold this one to them byte for byte.
//!
//! One module per step: `schema` (a writer schema), `datum` (Avro binary), `json` (Python's JSON
//! text), `values` (a datum as JSON), `layout` (a schema version compiled for reading events),
//! `rows` (an event's log rows), `columns` (the Arrow buffers), `copies` (replica copies met in a task),
//! `batch` (a Kafka batch), `snapshot` (a page of a snapshot's result rows); `cql_bytes` (a JSON value as
//! the CQL bytes a bound statement carries), `log_insert` (a log row as its log table's INSERT values)
//! and `log_batch` (a partition's rows as one BATCH request's statements), for the Cassandra sink;
//! `error` why a record cannot become rows; `json_text` (whether a text is JSON as Python reads it) and
//! `log_json` (a log row's JSON text), for the sinks that send JSON; `mirror` (a mirrored partition's
//! changes merged into its states, as `spark.mirror` merges them); `python` is the binding.
pub mod batch;
pub mod columns;
pub mod copies;
pub mod cql_bytes;
pub mod datum;
pub mod datum_writer;
pub mod error;
pub mod json;
pub mod json_text;
pub mod json_writer;
pub mod layout;
pub mod log_batch;
pub mod log_insert;
pub mod log_json;
pub mod mirror;
pub mod rows;
pub mod schema;
pub mod snapshot;
pub mod values;

pub mod python;
