//! A value schema version compiled once for reading events: where the envelope's fields are, and
//! one reader per column of `after`, as `connector.avro.reader.EventReader` builds them. The envelope,
//! source, position, column and cell records are found by field name; the contract's small fixed
//! records (liveness, deletion, range, bound) are read in the order `connector.avro.table` writes them.

use crate::schema::{Node, NodeId, Record, Schema};

pub struct EventLayout {
    pub schema: Schema,
    pub kind: usize,
    pub source: usize,
    pub after: usize,
    pub static_row: usize,
    pub liveness: usize,
    pub deletion: usize,
    /// Absent for a table without clustering columns.
    pub range: Option<usize>,
    pub src: SourceFields,
    pub columns: Vec<Column>,
    /// The envelope's fields that differ between replicas' copies of a change: where and when each
    /// connector read it.
    pub replica_specific: Vec<usize>,
}

pub struct SourceFields {
    pub keyspace: usize,
    pub table: usize,
    pub node: usize,
    pub position: usize,
    pub segment_id: usize,
    pub entry_offset: usize,
    pub update_index: usize,
    pub row_index: usize,
    pub ts_us: usize,
    pub partition_key: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    PartitionKey,
    Clustering,
    Cell,
}

pub struct Column {
    /// As in CQL.
    pub name: String,
    /// A clustering column's index in a range bound's clustering record.
    pub bound: Option<usize>,
    /// Its index in `after`.
    pub field: usize,
    pub kind: ColumnKind,
    pub node: NodeId,
    pub cell: Option<Cell>,
}

/// A live cell's fields: value (absent in a set's element), timestamp, ttl, local deletion time.
#[derive(Clone, Copy)]
pub struct Live {
    pub value: Option<(usize, NodeId)>,
    pub timestamp: usize,
    pub ttl: usize,
    pub expiry: usize,
}

pub enum Cell {
    /// A simple or frozen column: one cell, maybe a tombstone.
    Atomic { live: Live, tombstone: usize },
    /// A non-frozen collection or UDT: a column deletion, elements added, elements removed.
    Multi {
        deletion: usize,
        added: usize,
        removed: usize,
        removed_key: (usize, NodeId),
        removed_timestamp: usize,
        elements: Elements,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    /// Elements by their timeuuid, as ScyllaDB logs lists.
    List,
    Set,
    Map,
}

pub enum Elements {
    Collection {
        kind: Collection,
        key: (usize, NodeId),
        live: Live,
    },
    /// Per UDT field: its index in `added`, its CQL name, and its element's fields.
    Udt(Vec<(usize, String, Live)>),
}

fn field(record: &Record, name: &str, of: &str) -> Result<usize, String> {
    record.index(name).ok_or_else(|| format!("{of} has no field {name}"))
}

fn record<'s>(schema: &'s Schema, id: NodeId, what: &str) -> Result<&'s Record, String> {
    schema.record(id).ok_or_else(|| format!("{what} is not a record"))
}

impl EventLayout {
    pub fn compile(schema: Schema) -> Result<EventLayout, String> {
        let envelope = record(&schema, schema.root, "the value schema")?;
        let f = |name: &str| field(envelope, name, "the envelope");
        let source_node = envelope.fields[f("source")?].node;
        let source = record(&schema, source_node, "source")?;
        let s = |name: &str| field(source, name, "source");
        let position = record(&schema, source.fields[s("position")?].node, "source.position")?;
        let p = |name: &str| field(position, name, "source.position");
        let src = SourceFields {
            keyspace: s("keyspace")?,
            table: s("table")?,
            node: s("node")?,
            position: s("position")?,
            segment_id: p("segment_id")?,
            entry_offset: p("entry_offset")?,
            update_index: p("update_index")?,
            row_index: p("row_index")?,
            ts_us: s("ts_us")?,
            partition_key: s("partition_key")?,
        };
        let after = f("after")?;
        let row = record(&schema, envelope.fields[after].node, "after")?;
        let range = envelope.index("range");
        // range → its start bound → the bound's clustering record, whose fields share `after`'s names.
        let bound_clustering = range
            .and_then(|r| schema.record(envelope.fields[r].node))
            .and_then(|r| schema.record(r.fields[0].node))
            .and_then(|b| schema.record(b.fields[0].node));
        let mut columns = Vec::with_capacity(row.fields.len());
        for (index, column) in row.fields.iter().enumerate() {
            let kind = match column.cql_kind.as_deref() {
                Some("partition_key") => ColumnKind::PartitionKey,
                Some("clustering") => ColumnKind::Clustering,
                Some("static") | Some("regular") => ColumnKind::Cell,
                other => return Err(format!("column {} has the kind {other:?}", column.name)),
            };
            let cell = match kind {
                ColumnKind::Cell => {
                    Some(cell(&schema, column.node, column.cql_type.as_deref().unwrap_or(""), &column.name)?)
                }
                _ => None,
            };
            columns.push(Column {
                name: column.cql_name.clone(),
                bound: bound_clustering.and_then(|c| c.index(&column.name)),
                field: index,
                kind,
                node: column.node,
                cell,
            });
        }
        Ok(EventLayout {
            kind: f("kind")?,
            source: f("source")?,
            after,
            static_row: f("static")?,
            liveness: f("liveness")?,
            deletion: f("deletion")?,
            range,
            src,
            columns,
            replica_specific: ["source", "ts_ms"].iter().filter_map(|name| envelope.index(name)).collect(),
            schema,
        })
    }
}

fn live(record: &Record, of: &str, with_value: bool) -> Result<Live, String> {
    let value = match record.index("value") {
        Some(i) => Some((i, record.fields[i].node)),
        None if with_value => return Err(format!("{of} has no field value")),
        None => None,
    };
    Ok(Live {
        value,
        timestamp: field(record, "timestamp", of)?,
        ttl: field(record, "ttl", of)?,
        expiry: field(record, "local_deletion_time", of)?,
    })
}

/// The outermost type's name of a CQL type as written, lowercased (`list` of `list<frozen<a>>`).
fn type_name(cql_type: &str) -> String {
    let text = cql_type.trim();
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>().to_lowercase()
}

fn cell(schema: &Schema, id: NodeId, cql_type: &str, column: &str) -> Result<Cell, String> {
    let of = format!("the cell of {column}");
    let cell = record(schema, id, &of)?;
    if cell.index("value").is_some() {
        return Ok(Cell::Atomic { live: live(cell, &of, true)?, tombstone: field(cell, "tombstone", &of)? });
    }
    let added = field(cell, "added", &of)?;
    let removed = field(cell, "removed", &of)?;
    let Node::Array(removed_items) = schema.node(schema.branch(cell.fields[removed].node)) else {
        return Err(format!("{of}: removed is not an array"));
    };
    let removed_record = record(schema, *removed_items, &of)?;
    let removed_key = field(removed_record, "key", &of)?;
    let elements = match schema.node(schema.branch(cell.fields[added].node)) {
        Node::Record(fields) => Elements::Udt(
            fields
                .fields
                .iter()
                .enumerate()
                .map(|(i, f)| Ok((i, f.cql_name.clone(), live(record(schema, f.node, &of)?, &of, true)?)))
                .collect::<Result<_, String>>()?,
        ),
        Node::Array(items) => {
            let element = record(schema, *items, &of)?;
            let key = field(element, "key", &of)?;
            let live = live(element, &of, false)?;
            let kind = if type_name(cql_type) == "list" {
                Collection::List
            } else if live.value.is_none() {
                Collection::Set
            } else {
                Collection::Map
            };
            Elements::Collection { kind, key: (key, element.fields[key].node), live }
        }
        _ => return Err(format!("{of}: added is neither a record nor an array")),
    };
    Ok(Cell::Multi {
        deletion: field(cell, "deletion", &of)?,
        added,
        removed,
        removed_key: (removed_key, removed_record.fields[removed_key].node),
        removed_timestamp: field(removed_record, "timestamp", &of)?,
        elements,
    })
}
