"""Avro names for Cassandra identifiers.

Avro names match [A-Za-z_][A-Za-z0-9_]*, while a quoted Cassandra identifier may hold any
character. A valid identifier is used as it is; any other becomes its valid characters plus
a hash of the whole identifier. The name depends on the identifier alone, never on its
neighbours, so it stays the same while the table evolves.

Every named type of a table lives under the table's namespace, `ringtail.<keyspace>.<table>`;
a column's types under `<table namespace>.<column>`, and nested ones under the path to them
(`.element`, `.key`, `.value`, `.field1`, a UDT field's name). Leaf names come from a fixed
vocabulary (Cell, Element, Removed, Fields, Entry, Tuple, Udt, Duration), so a full name is
unique per table and path: two columns never share a record, whatever their types.
"""
from __future__ import annotations

import hashlib
import re

from schemas.tables.model import Table

from .errors import NameClash

ROOT_NAMESPACE = "ringtail"
# Leaf record names the reader (reader.py) recognises a structure by.
ENTRY, TUPLE = "Entry", "Tuple"
_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INVALID_CHARACTER = re.compile(r"[^A-Za-z0-9_]")


def avro_name(identifier: str) -> str:
    if _VALID.match(identifier):
        return identifier
    digest = hashlib.sha256(identifier.encode()).hexdigest()[:8]
    return f"_{_INVALID_CHARACTER.sub('_', identifier)}_{digest}"


def table_namespace(table: Table) -> str:
    return f"{ROOT_NAMESPACE}.{avro_name(table.keyspace)}.{avro_name(table.name)}"


def field(identifier: str, schema, doc: str | None = None, **attributes) -> dict:
    """A record field named after `identifier`; a nullable field defaults to null so that
    readers of a newer schema can read older data (backward compatibility)."""
    name = avro_name(identifier)
    out = {"name": name, "type": schema}
    if isinstance(schema, list) and schema[0] == "null":
        out["default"] = None
    if doc:
        out["doc"] = doc
    if name != identifier:
        out["cql_name"] = identifier
    out.update(attributes)
    return out


def cql_name(field_schema: dict) -> str:
    """The CQL identifier of a field `field` made: recorded as `cql_name` when the Avro name differs."""
    return field_schema.get("cql_name", field_schema["name"])


def record(name: str, namespace: str, fields: list[dict], doc: str | None = None) -> dict:
    names = [f["name"] for f in fields]
    if len(set(names)) != len(names):
        clashing = sorted({n for n in names if names.count(n) > 1})
        raise NameClash(f"record {namespace}.{name}: several fields are named {', '.join(clashing)}")
    out = {"type": "record", "name": name, "namespace": namespace}
    if doc:
        out["doc"] = doc
    out["fields"] = fields
    return out


def define_once(schema):
    """The schema with each named type defined at its first use and referenced by full name
    afterwards, as Avro requires; two different definitions of one name are an error."""
    definitions: dict[str, dict] = {}

    def walk(node):
        if isinstance(node, list):
            return [walk(branch) for branch in node]
        if not isinstance(node, dict):
            return node
        if node.get("type") == "record":
            full_name = f"{node['namespace']}.{node['name']}"
            known = definitions.get(full_name)
            if known is not None:
                if known != node:
                    raise NameClash(f"{full_name} would be defined twice with different shapes")
                return full_name
            definitions[full_name] = node
            return {**node, "fields": [{**f, "type": walk(f["type"])} for f in node["fields"]]}
        if node.get("type") == "array":
            return {**node, "items": walk(node["items"])}
        if node.get("type") == "map":
            return {**node, "values": walk(node["values"])}
        return node

    return walk(schema)
