//! ringtail's native core: commit log segment bytes to change events.
//!
//! One module per on-disk structure, as in the reference decoder (`connector.commitlog`), which
//! the tests hold this one to; `python` is the binding.

pub mod avro;
pub mod bytes;
pub mod cell;
pub mod change;
pub mod compression;
pub mod cql;
pub mod descriptor;
pub mod entry;
pub mod error;
pub mod event;
pub mod events;
pub mod header;
pub mod layout;
pub mod mutation;
pub mod partial;
pub mod partition;
pub mod segment;
pub mod sync;
pub mod text;
pub mod unfiltered;
pub mod value;
pub mod vint;

mod python;
mod python_events;
