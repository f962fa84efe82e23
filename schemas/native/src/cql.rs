//! CQL types as the native core takes them: the tree the Python type layer (`schemas.cql`) parsed and
//! resolved, handed over once per schema version with each native type's traits (kind, width, flags),
//! so types are parsed and named in one place.

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
    /// The native type of these traits (`schemas.cql.Kind`'s name, the width of an integer or a
    /// float, and whether it is a counter, a timeuuid, ascii).
    pub fn native(kind: &str, bits: u32, counter: bool, time_ordered: bool, ascii: bool) -> Option<CqlType> {
        use CqlType::*;
        Some(match (kind, bits) {
            ("TEXT", _) if ascii => Ascii,
            ("TEXT", _) => Text,
            ("BLOB", _) => Blob,
            ("BOOLEAN", _) => Boolean,
            ("INTEGER", 64) if counter => Counter,
            ("INTEGER", 8) => Tinyint,
            ("INTEGER", 16) => Smallint,
            ("INTEGER", 32) => Int,
            ("INTEGER", 64) => Bigint,
            ("VARINT", _) => Varint,
            ("DECIMAL", _) => Decimal,
            ("FLOAT", 32) => Float,
            ("FLOAT", 64) => Double,
            ("TIMESTAMP", _) => Timestamp,
            ("DATE", _) => Date,
            ("TIME", _) => Time,
            ("UUID", _) if time_ordered => Timeuuid,
            ("UUID", _) => Uuid,
            ("INET", _) => Inet,
            ("DURATION", _) => Duration,
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

#[cfg(test)]
mod tests {
    use super::CqlType::{self, *};

    #[test]
    fn the_traits_name_one_native_type_each() {
        let native =
            |kind, bits, counter, time_ordered, ascii| CqlType::native(kind, bits, counter, time_ordered, ascii);
        assert_eq!(native("TEXT", 0, false, false, true), Some(Ascii));
        assert_eq!(native("TEXT", 0, false, false, false), Some(Text));
        assert_eq!(native("INTEGER", 8, false, false, false), Some(Tinyint));
        assert_eq!(native("INTEGER", 64, true, false, false), Some(Counter));
        assert_eq!(native("INTEGER", 64, false, false, false), Some(Bigint));
        assert_eq!(native("FLOAT", 32, false, false, false), Some(Float));
        assert_eq!(native("UUID", 0, false, true, false), Some(Timeuuid));
        assert_eq!(native("UUID", 0, false, false, false), Some(Uuid));
        assert_eq!(native("INTEGER", 24, false, false, false), None);
        assert_eq!(native("MONEY", 0, false, false, false), None);
    }
}
