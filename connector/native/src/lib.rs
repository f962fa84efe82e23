//! The connector's native half: commit log segment bytes to change events.
//!
//! One module per on-disk structure, as in the reference decoder (`connector.commitlog`), which
//! the tests hold this one to; CQL values and the Avro writer are the contract's (`ringtail_contract`);
//! `python` is the binding.

pub mod bytes;
pub mod cell;
pub mod change;
pub mod compression;
pub mod descriptor;
pub mod entry;
pub mod error;
pub mod event;
pub mod header;
pub mod layout;
pub mod mutation;
pub mod partial;
pub mod partition;
pub mod segment;
pub mod sync;
pub mod unfiltered;

pub mod python;
