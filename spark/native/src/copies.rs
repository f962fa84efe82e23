//! Replica copies met within one task. Each replica's connector sends its own copy of a change: the
//! same key and the same envelope bytes but for where and when that connector read it (`source`,
//! `ts_ms`). The copies of a write are keyed alike, so they share a Kafka partition and mostly a
//! micro-batch: a task meets them a few records apart. It decodes the first and skips the others by a
//! digest of those bytes, taken before any decoding, which is where replication's cost was (reading
//! every copy into rows only for the job's state to drop two of three).
//!
//! A digest covers the key, the schema id and every envelope field but `source` and `ts_ms`, so two
//! records share one only if they carry the same change (the same `change_id`, which is computed from
//! less). A record is skipped only after a record with its digest was decoded into rows; copies met in
//! different tasks are the job's state's to remove (`spark.delivery.pipeline.remove_replica_copies`).

use std::collections::HashSet;

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;

use crate::datum::{DatumError, Input};
use crate::layout::EventLayout;

/// The digests of the changes a task has decoded.
#[derive(Default)]
pub struct Copies {
    seen: HashSet<[u8; 16]>,
    /// Records skipped as copies.
    pub skipped: usize,
}

impl Copies {
    pub fn seen(&self, digest: &[u8; 16]) -> bool {
        self.seen.contains(digest)
    }

    pub fn decoded(&mut self, digest: [u8; 16]) {
        self.seen.insert(digest);
    }
}

/// The digest of a framed `value` (schema id in bytes 1..5) and its `key`, read by `layout`: the
/// envelope's fields up to the last one left out are read to find where each starts; the rest is
/// taken as it is.
pub fn digest(layout: &EventLayout, key: Option<&[u8]>, value: &[u8]) -> Result<[u8; 16], DatumError> {
    let schema = &layout.schema;
    let envelope = schema.record(schema.root).expect("a compiled layout's root is a record");
    let mut hasher = Blake2bVar::new(16).unwrap();
    // A missing key and an empty one differ; a length prefix keeps the key apart from the value.
    match key {
        Some(key) => {
            hasher.update(&(key.len() as u64).to_le_bytes());
            hasher.update(key);
        }
        None => hasher.update(&u64::MAX.to_le_bytes()),
    }
    hasher.update(&value[..5]);
    let mut input = Input::new(value, 5);
    let last = layout.replica_specific.iter().copied().max().unwrap_or(0);
    for (index, field) in envelope.fields.iter().enumerate().take(last + 1) {
        let start = input.pos;
        input.read(schema, field.node)?;
        if !layout.replica_specific.contains(&index) {
            hasher.update(&value[start..input.pos]);
        }
    }
    hasher.update(&value[input.pos..]);
    let mut out = [0u8; 16];
    hasher.finalize_variable(&mut out).unwrap();
    Ok(out)
}
