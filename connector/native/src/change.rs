//! Decoded changes: one per row, partition deletion or range deletion, with values still the
//! bytes Cassandra serialized (borrowed from the mutation).

use crate::header::DeletionTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// The row has primary-key liveness (an INSERT).
    Insert,
    /// Cells only.
    Update,
    RowDelete,
    PartitionDelete,
    RangeDelete,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Update => "update",
            Op::RowDelete => "row_delete",
            Op::PartitionDelete => "partition_delete",
            Op::RangeDelete => "range_delete",
        }
    }
}

/// Primary-key liveness of a row (written by INSERT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Liveness {
    pub timestamp: i64,
    pub ttl: i64,
    /// Local expiration time in seconds when ttl > 0.
    pub expires_at: Option<i64>,
}

/// LivenessInfo.EMPTY: what cells of a row without a row marker inherit.
pub const NO_LIVENESS: Liveness = Liveness { timestamp: i64::MIN, ttl: 0, expires_at: None };

pub use ringtail_contract::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell<'a> {
    pub timestamp: i64,
    pub ttl: i64,
    /// Expiry time (ttl > 0) or deletion time (tombstone).
    pub local_deletion_time: Option<i64>,
    pub tombstone: bool,
    /// The element key of a multi-cell column's cell.
    pub path: Option<&'a [u8]>,
    /// The serialized value; empty for an empty value (and tombstones).
    pub value: &'a [u8],
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnCells<'a> {
    Simple {
        column: usize,
        cell: Cell<'a>,
    },
    /// A non-frozen collection or UDT: a deletion written before the elements (an overwrite or
    /// `DELETE col`) and the element cells.
    Complex {
        column: usize,
        deletion: Option<DeletionTime>,
        cells: Vec<Cell<'a>>,
    },
}

/// One end of a range deletion: a clustering prefix and whether it is included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound<'a> {
    pub clustering: Vec<Value<'a>>,
    pub inclusive: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change<'a> {
    /// The caller's index of the table.
    pub table: usize,
    pub update_index: u32,
    /// Index of the item in the partition update: partition deletion, static row, then every row
    /// or range tombstone marker (a range deletion is reported at its closing marker).
    pub row_index: u32,
    pub op: Op,
    /// The serialized partition key, as Cassandra hashes it into the token.
    pub partition_key: &'a [u8],
    pub clustering: Vec<Value<'a>>,
    pub columns: Vec<ColumnCells<'a>>,
    pub liveness: Option<Liveness>,
    /// Row, partition or range deletion.
    pub deletion: Option<DeletionTime>,
    /// The row deletion is shadowable (legacy views).
    pub shadowable: bool,
    pub is_static: bool,
    pub range_start: Option<Bound<'a>>,
    pub range_end: Option<Bound<'a>>,
}

impl<'a> Change<'a> {
    pub fn new(table: usize, update_index: u32, row_index: u32, op: Op, partition_key: &'a [u8]) -> Self {
        Change {
            table,
            update_index,
            row_index,
            op,
            partition_key,
            clustering: Vec::new(),
            columns: Vec::new(),
            liveness: None,
            deletion: None,
            shadowable: false,
            is_static: false,
            range_start: None,
            range_end: None,
        }
    }
}
