//! A table compiled for decoding: how each column's cells are framed, looked up by the UTF-8 name
//! the serialization header lists them by.

use std::collections::HashMap;

#[derive(Clone, Copy, Debug)]
pub struct ColumnLayout {
    /// The column's index in the layout the caller gave (its own numbering).
    pub index: usize,
    /// Serialized size of every value, or -1 when values are length-prefixed.
    pub fixed_length: i32,
    /// Stored as one cell per element (a non-frozen collection or UDT).
    pub complex: bool,
}

#[derive(Clone, Debug, Default)]
pub struct TableLayout {
    /// Fixed length (or -1) of each clustering column, in clustering order.
    pub clustering: Vec<i32>,
    /// Static and regular columns, and dropped ones, by name.
    pub columns: HashMap<Vec<u8>, ColumnLayout>,
}
