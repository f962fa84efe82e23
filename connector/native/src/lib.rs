//! ringtail's native core: commit log segment bytes to change events.
//!
//! One module per on-disk structure, as in the reference decoder (`connector.commitlog`), which
//! the tests hold this one to; `python` is the binding.

pub mod bytes;
pub mod compression;
pub mod descriptor;
pub mod entry;
pub mod error;
pub mod segment;
pub mod sync;

mod python;
