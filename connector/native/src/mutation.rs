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

/// The partition key of an update that holds no change: (table number, update index, key). The
/// reference reader decodes every key it reads, so a key that does not fit its types is a misfit
/// even where no change carries it.
pub type BareKey<'a> = (usize, u32, &'a [u8]);

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

    /// Append the changes of one mutation to `out` and the keys of its updates without changes to
    /// `bare`. On a SchemaMismatch, none of them. On an UnknownTable, those of the updates before
    /// it: values are checked after decoding, and the reference reader, which checks them as it
    /// reads, would report a misfit among them first.
    pub fn decode<'a>(
        &self,
        mutation: &'a [u8],
        out: &mut Vec<Change<'a>>,
        bare: &mut Vec<BareKey<'a>>,
    ) -> Result<(), MutationError> {
        let (first, first_bare) = (out.len(), bare.len());
        let result = self.decode_updates(mutation, out, bare);
        if let Err(MutationError::SchemaMismatch { .. }) = result {
            out.truncate(first);
            bare.truncate(first_bare);
        }
        result
    }

    fn decode_updates<'a>(
        &self,
        mutation: &'a [u8],
        out: &mut Vec<Change<'a>>,
        bare: &mut Vec<BareKey<'a>>,
    ) -> Result<(), MutationError> {
        let mismatch = |update_index, table, misfit| MutationError::SchemaMismatch { update_index, table, misfit };
        let (count, mut p) = uvint(mutation, 0).map_err(|m| mismatch(0, None, m))?;
        for update_index in 0..count as u32 {
            let id: [u8; 16] = mutation
                .get(p..p + 16)
                .and_then(|id| id.try_into().ok())
                .ok_or_else(|| mismatch(update_index, None, Misfit::at(p, "mutation ends inside a table id")))?;
            let (table, layout) = self.tables.get(&id).ok_or(MutationError::UnknownTable(id))?;
            let changes = out.len();
            let key;
            (p, key) = read_partition_update(mutation, p + 16, *table, layout, self.signed_ldt, update_index, out)
                .map_err(|m| mismatch(update_index, Some(*table), m))?;
            if let Some(key) = key.filter(|_| out.len() == changes) {
                bare.push((*table, update_index, key));
            }
        }
        if p != mutation.len() || count == 0 {
            let misfit =
                Misfit::at(p, format!("mutation has {} bytes after its {count} partition updates", mutation.len() - p));
            return Err(mismatch(count.saturating_sub(1) as u32, None, misfit));
        }
        Ok(())
    }
}
