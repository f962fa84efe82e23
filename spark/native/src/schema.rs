//! A writer schema (the registry's JSON) as an arena of nodes, named types resolved, for reading
//! datums back. Only what the event contract writes is accepted: records, arrays, maps, unions with
//! one non-null branch and the primitive types; logical types are read as their raw numbers and text.

use std::collections::HashMap;

use serde_json::Value as Json;

pub type NodeId = usize;

#[derive(Debug)]
pub enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(NodeId),
    Map(NodeId),
    Record(Record),
    /// Branches in the writer's order.
    Union(Vec<NodeId>),
}

#[derive(Debug)]
pub struct Record {
    /// The `name` as written (the contract tells tuples and map entries apart by it).
    pub name: String,
    pub fields: Vec<Field>,
    /// Field indexes in the order of their names (as a record is written with sorted keys).
    pub sorted: Vec<usize>,
}

#[derive(Debug)]
pub struct Field {
    pub name: String,
    /// The CQL identifier: `cql_name` when the writer recorded one, else the Avro name.
    pub cql_name: String,
    pub cql_kind: Option<String>,
    pub cql_type: Option<String>,
    pub node: NodeId,
}

#[derive(Debug)]
pub struct Schema {
    pub nodes: Vec<Node>,
    pub root: NodeId,
}

impl Schema {
    pub fn parse(text: &str) -> Result<Schema, String> {
        let json: Json = serde_json::from_str(text).map_err(|e| format!("the writer schema is not JSON: {e}"))?;
        let mut parser = Parser { nodes: Vec::new(), named: HashMap::new() };
        let root = parser.node(&json, "")?;
        Ok(Schema { nodes: parser.nodes, root })
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The non-null branch of a nullable union, or the node itself.
    pub fn branch(&self, id: NodeId) -> NodeId {
        match &self.nodes[id] {
            Node::Union(branches) => {
                branches.iter().copied().find(|b| !matches!(self.nodes[*b], Node::Null)).unwrap_or(id)
            }
            _ => id,
        }
    }

    pub fn record(&self, id: NodeId) -> Option<&Record> {
        match &self.nodes[self.branch(id)] {
            Node::Record(r) => Some(r),
            _ => None,
        }
    }

    /// The fewest bytes a datum of `id` takes (0 only for null and records of such fields): an
    /// array count larger than the bytes left is then damage, not a long read.
    pub fn min_size(&self, id: NodeId) -> usize {
        match &self.nodes[id] {
            Node::Null => 0,
            Node::Boolean | Node::Int | Node::Long | Node::Bytes | Node::String => 1,
            Node::Array(_) | Node::Map(_) | Node::Union(_) => 1,
            Node::Float => 4,
            Node::Double => 8,
            Node::Record(r) => r.fields.iter().map(|f| self.min_size(f.node)).sum(),
        }
    }
}

impl Record {
    pub fn index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

struct Parser {
    nodes: Vec<Node>,
    named: HashMap<String, NodeId>,
}

impl Parser {
    fn add(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&mut self, json: &Json, namespace: &str) -> Result<NodeId, String> {
        match json {
            Json::String(name) => self.named_or_primitive(name, namespace),
            Json::Array(branches) => {
                let ids = branches.iter().map(|b| self.node(b, namespace)).collect::<Result<Vec<_>, _>>()?;
                let others = ids.iter().filter(|b| !matches!(self.nodes[**b], Node::Null)).count();
                if others > 1 {
                    return Err("a union of several non-null branches".into());
                }
                Ok(self.add(Node::Union(ids)))
            }
            Json::Object(object) => {
                let kind = object.get("type").ok_or("a schema object without a type")?;
                match kind.as_str() {
                    Some("record") | Some("error") => self.record(object, namespace),
                    Some("array") => {
                        let items = self.node(object.get("items").ok_or("an array without items")?, namespace)?;
                        Ok(self.add(Node::Array(items)))
                    }
                    Some("map") => {
                        let values = self.node(object.get("values").ok_or("a map without values")?, namespace)?;
                        Ok(self.add(Node::Map(values)))
                    }
                    Some("enum") | Some("fixed") => Err(format!("{} types are not part of the event contract", kind)),
                    _ => self.node(kind, namespace),
                }
            }
            other => Err(format!("{other} is not a schema")),
        }
    }

    fn named_or_primitive(&mut self, name: &str, namespace: &str) -> Result<NodeId, String> {
        let node = match name {
            "null" => Node::Null,
            "boolean" => Node::Boolean,
            "int" => Node::Int,
            "long" => Node::Long,
            "float" => Node::Float,
            "double" => Node::Double,
            "bytes" => Node::Bytes,
            "string" => Node::String,
            _ => {
                let full = if name.contains('.') || namespace.is_empty() {
                    name.to_string()
                } else {
                    format!("{namespace}.{name}")
                };
                return self
                    .named
                    .get(&full)
                    .or_else(|| self.named.get(name))
                    .copied()
                    .ok_or_else(|| format!("the type {name} is used before it is defined"));
            }
        };
        Ok(self.add(node))
    }

    fn record(&mut self, object: &serde_json::Map<String, Json>, enclosing: &str) -> Result<NodeId, String> {
        let name = object.get("name").and_then(Json::as_str).ok_or("a record without a name")?;
        let (full, namespace) = match (name.rfind('.'), object.get("namespace").and_then(Json::as_str)) {
            (Some(dot), _) => (name.to_string(), name[..dot].to_string()),
            (None, Some(ns)) if !ns.is_empty() => (format!("{ns}.{name}"), ns.to_string()),
            _ if !enclosing.is_empty() => (format!("{enclosing}.{name}"), enclosing.to_string()),
            _ => (name.to_string(), String::new()),
        };
        // Registered before its fields are read, as Avro allows a record to name itself.
        let id = self.add(Node::Record(Record { name: name.to_string(), fields: Vec::new(), sorted: Vec::new() }));
        self.named.insert(full, id);
        let mut fields = Vec::new();
        for field in object.get("fields").and_then(Json::as_array).ok_or("a record without fields")? {
            let text = |key: &str| field.get(key).and_then(Json::as_str).map(str::to_string);
            let field_name = text("name").ok_or("a field without a name")?;
            let node = self.node(field.get("type").ok_or("a field without a type")?, &namespace)?;
            fields.push(Field {
                cql_name: text("cql_name").unwrap_or_else(|| field_name.clone()),
                name: field_name,
                cql_kind: text("cql_kind"),
                cql_type: text("cql_type"),
                node,
            });
        }
        let mut sorted: Vec<usize> = (0..fields.len()).collect();
        sorted.sort_by(|a, b| fields[*a].name.cmp(&fields[*b].name));
        self.nodes[id] = Node::Record(Record { name: name.to_string(), fields, sorted });
        Ok(id)
    }
}
