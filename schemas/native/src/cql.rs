//! CQL types as the native core takes them: the tree the Python type layer (`connector.cql`)
//! parsed and resolved, handed over once per schema version, so types are parsed in one place.

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CqlType {
    Ascii,
    Bigint,
    Blob,
    Boolean,
    Counter,
    Date,
    Decimal,
    Double,
    Duration,
    Float,
    Inet,
    Int,
    Smallint,
    Text,
    Time,
    Timestamp,
    Timeuuid,
    Tinyint,
    Uuid,
    Varint,
    List { element: Box<CqlType>, multi_cell: bool },
    Set { element: Box<CqlType>, multi_cell: bool },
    Map { key: Box<CqlType>, value: Box<CqlType>, multi_cell: bool },
    Tuple(Vec<CqlType>),
    Udt { field_names: Vec<String>, fields: Vec<CqlType>, multi_cell: bool },
    Vector { element: Box<CqlType>, dimension: usize },
}

impl CqlType {
    /// The native type named `name` (`varchar` is `text`).
    pub fn native(name: &str) -> Option<CqlType> {
        use CqlType::*;
        Some(match name {
            "ascii" => Ascii,
            "bigint" => Bigint,
            "blob" => Blob,
            "boolean" => Boolean,
            "counter" => Counter,
            "date" => Date,
            "decimal" => Decimal,
            "double" => Double,
            "duration" => Duration,
            "float" => Float,
            "inet" => Inet,
            "int" => Int,
            "smallint" => Smallint,
            "text" | "varchar" => Text,
            "time" => Time,
            "timestamp" => Timestamp,
            "timeuuid" => Timeuuid,
            "tinyint" => Tinyint,
            "uuid" => Uuid,
            "varint" => Varint,
            _ => return None,
        })
    }

    /// Cassandra's empty value of this type reads as null (all but the text-like types, whose empty
    /// value is '' or b'').
    pub fn empty_is_null(&self) -> bool {
        !matches!(self, CqlType::Ascii | CqlType::Text | CqlType::Blob)
    }

    /// Serialized size of every value, if the type has one.
    pub fn fixed_length(&self) -> Option<usize> {
        use CqlType::*;
        match self {
            Bigint | Double | Timestamp => Some(8),
            Boolean => Some(1),
            Float | Int => Some(4),
            Timeuuid | Uuid => Some(16),
            Vector { element, dimension } => element.fixed_length().map(|size| size * dimension),
            _ => None,
        }
    }

    /// Stored as one cell per element: a non-frozen collection or UDT.
    pub fn multi_cell(&self) -> bool {
        match self {
            CqlType::List { multi_cell, .. }
            | CqlType::Set { multi_cell, .. }
            | CqlType::Map { multi_cell, .. }
            | CqlType::Udt { multi_cell, .. } => *multi_cell,
            _ => false,
        }
    }

    /// A text-keyed map, which Avro writes as a map rather than an array of entries.
    pub fn text_keys(key: &CqlType) -> bool {
        matches!(key, CqlType::Ascii | CqlType::Text)
    }
}
