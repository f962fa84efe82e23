//! Mutations: `uvint count` partition updates, back to back without lengths. Because updates
//! have no length prefix, every table of the mutation must be known to reach the next one; an
//! unknown table id therefore stops decoding the whole entry.

use std::collections::HashMap;

use crate::change::Change;
use crate::header::uvint;
use crate::layout::TableLayout;
use crate::partial::Misfit;
use crate::partition::read_partition_update;

#[derive(Debug, PartialEq, Eq)]
pub enum MutationError {
    /// A partition update names a table id the decoder was not given.
    UnknownTable([u8; 16]),
    /// The layout does not fit the bytes of the (CRC-valid) mutation.
    SchemaMismatch { update_index: u32, table: Option<usize>, misfit: Misfit },
}

/// Decodes mutations with one set of table layouts, keyed by table id.
pub struct MutationDecoder {
    tables: HashMap<[u8; 16], (usize, TableLayout)>,
    /// Deletion times are signed before messaging version 13 (Cassandra 5.0 reads them unsigned).
    signed_ldt: bool,
}

impl MutationDecoder {
    pub fn new(tables: HashMap<[u8; 16], (usize, TableLayout)>, messaging_version: u32) -> Self {
        MutationDecoder { tables, signed_ldt: messaging_version < 13 }
    }

    /// Append the changes of one mutation to `out`; on an error, none of them.
    pub fn decode<'a>(&self, mutation: &'a [u8], out: &mut Vec<Change<'a>>) -> Result<(), MutationError> {
        let first = out.len();
        let result = self.decode_updates(mutation, out);
        if result.is_err() {
            out.truncate(first);
        }
        result
    }

    fn decode_updates<'a>(&self, mutation: &'a [u8], out: &mut Vec<Change<'a>>) -> Result<(), MutationError> {
        let mismatch = |update_index, table, misfit| MutationError::SchemaMismatch { update_index, table, misfit };
        let (count, mut p) = uvint(mutation, 0).map_err(|m| mismatch(0, None, m))?;
        for update_index in 0..count as u32 {
            let id: [u8; 16] = mutation
                .get(p..p + 16)
                .and_then(|id| id.try_into().ok())
                .ok_or_else(|| mismatch(update_index, None, Misfit::at(p, "mutation ends inside a table id")))?;
            let (table, layout) = self.tables.get(&id).ok_or(MutationError::UnknownTable(id))?;
            p = read_partition_update(mutation, p + 16, *table, layout, self.signed_ldt, update_index, out)
                .map_err(|m| mismatch(update_index, Some(*table), m))?;
        }
        if p != mutation.len() || count == 0 {
            let misfit =
                Misfit::at(p, format!("mutation has {} bytes after its {count} partition updates", mutation.len() - p));
            return Err(mismatch(count.saturating_sub(1) as u32, None, misfit));
        }
        Ok(())
    }
}
