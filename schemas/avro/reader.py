"""Reading events back, the other half of the contract the encoder writes (schemas/README.md): a
value schema version parsed once into one reader per column, each turning the event's Avro datum into
JSON-able values named as in CQL (the writer's `cql_name` where the Avro name differs); and the writer
schemas by id, from the registry, once per process.
"""
from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import fastavro

from schemas.runtime.access import RegistrySecurity

from schemas.cql import type_name

from .errors import UnknownSchemaId
from .names import ENTRY, TUPLE, cql_name

if TYPE_CHECKING:  # the registry's client (httpx, authlib) takes a tenth of a second to import
    from .registry import SchemaRegistry

KEY_KINDS = ("partition_key", "clustering")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_LOGICAL: dict[str, Callable] = {
    "timestamp-millis": lambda v: (v - _EPOCH) // dt.timedelta(milliseconds=1),
    "date": lambda v: (v - _EPOCH.date()).days,
    "uuid": str,
}


def _without_logical_types(schema):
    # Raw longs and ints keep every value exact (timestamps outside Python's datetime range).
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(s) for s in schema]
    return schema


def _expanded(schema, named: dict | None = None, namespace: str = ""):
    """The schema with each reference to a named type replaced by its definition: the writer defines a
    type once and names it after (a set's element type reappears as the key of its removed elements),
    and the readers need the definition wherever it is used."""
    named = {} if named is None else named
    if isinstance(schema, str):
        return named.get(schema, named.get(f"{namespace}.{schema}", schema))
    if isinstance(schema, list):
        return [_expanded(s, named, namespace) for s in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "record":
        namespace = schema.get("namespace", namespace)
        out = dict(schema)
        named[f"{namespace}.{schema['name']}"] = out
        out["fields"] = [{**f, "type": _expanded(f["type"], named, namespace)} for f in schema["fields"]]
        return out
    if kind == "array":
        return {**schema, "items": _expanded(schema["items"], named, namespace)}
    if kind == "map":
        return {**schema, "values": _expanded(schema["values"], named, namespace)}
    return schema


def _branch(schema):
    """The non-null branch of a nullable union."""
    if isinstance(schema, list):
        others = [s for s in schema if s != "null"]
        return others[0] if len(others) == 1 else schema
    return schema


def as_is(value):
    """The reader of a datum that is already JSON-able (value_reader's answer for primitive schemas)."""
    return value


def value_reader(schema) -> Callable:
    """A function turning an Avro datum of `schema` into a JSON-able value: bytes as "0x…" hex, maps as
    [key, value] pairs (keys may be any value), tuples as lists, UDTs as objects by CQL field name.
    Logical types are read as their raw numbers and text, whether the datum holds those (as read
    back) or the Python values a writer is given (datetime, date, UUID: as a snapshot holds them)."""
    schema = _branch(schema)
    if schema == "bytes":
        return lambda v: None if v is None else "0x" + v.hex()
    if isinstance(schema, str):
        return as_is
    logical = _LOGICAL.get(schema.get("logicalType"))
    if logical is not None:
        return lambda v: v if v is None or isinstance(v, (int, str)) else logical(v)
    kind = schema["type"]
    if kind == "array":
        items = _branch(schema["items"])
        if isinstance(items, dict) and items.get("type") == "record" and items["name"] == ENTRY:
            key, value = (value_reader(f["type"]) for f in items["fields"])
            return lambda v: None if v is None else [[key(e["key"]), value(e["value"])] for e in v]
        element = value_reader(items)
        return lambda v: None if v is None else [element(e) for e in v]
    if kind == "map":
        value = value_reader(schema["values"])
        return lambda v: None if v is None else [[k, value(x)] for k, x in v.items()]
    if kind == "record":
        fields = [(f["name"], cql_name(f), value_reader(f["type"])) for f in schema["fields"]]
        if schema["name"] == TUPLE:
            return lambda v: None if v is None else [conv(v[name]) for name, _, conv in fields]
        return lambda v: None if v is None else {cql: conv(v[name]) for name, cql, conv in fields}
    return as_is  # enum, fixed: not produced by the connector


@dataclass(frozen=True, slots=True)
class ColumnReader:
    name: str  # as in CQL
    field: str  # its field in the event's `after` record
    kind: str  # partition_key, clustering, static, regular
    cql_type: str
    read: Callable  # key columns: the value; others: see cell_reader
    cells: Callable | None = None  # others: see cell_detail_reader


def cell_reader(field: dict) -> Callable:
    """A function reading a non-key column's record: (what was written or None, whether the column was
    deleted, the keys of the elements removed or None, the largest TTL or None)."""
    record = _branch(field["type"])
    names = [f["name"] for f in record["fields"]]
    if "value" in names:  # an atomic (or frozen) column
        convert = value_reader(record["fields"][0]["type"])

        def atomic(cell):
            if cell["tombstone"]:
                return None, True, None, None
            return convert(cell["value"]), False, None, cell["ttl"] or None
        return atomic

    added = record["fields"][names.index("added")]["type"]
    removed_record = record["fields"][names.index("removed")]["type"]["items"]
    removed = value_reader({"type": "array", "items": removed_record["fields"][0]["type"]})  # by key
    if isinstance(added, dict) and added.get("type") == "record":  # a UDT: a record of its fields
        fields = [(f["name"], cql_name(f), value_reader(_branch(f["type"])["fields"][0]["type"]))
                  for f in added["fields"]]

        def written(value):
            out = {cql: conv(value[name]["value"]) for name, cql, conv in fields if value[name] is not None}
            ttls = [value[name]["ttl"] for name, _, _ in fields if value[name] is not None]
            return out, ttls
    else:
        element = _branch(added["items"])
        element_fields = {f["name"]: f["type"] for f in element["fields"]}
        key = value_reader(element_fields["key"])
        value = value_reader(element_fields["value"]) if "value" in element_fields else None
        if type_name(field["cql_type"]) == "list":  # elements by their timeuuid, as ScyllaDB logs lists
            def written(elements):
                return {key(e["key"]): value(e["value"]) for e in elements}, [e["ttl"] for e in elements]
        elif value is None:  # a set
            def written(elements):
                return [key(e["key"]) for e in elements], [e["ttl"] for e in elements]
        else:  # a map
            def written(elements):
                return [[key(e["key"]), value(e["value"])] for e in elements], [e["ttl"] for e in elements]

    def multi_cell(cell):
        out, ttls = written(cell["added"])
        gone = [r["key"] for r in cell["removed"]]
        return (out or None, cell["deletion"] is not None, removed(gone) if gone else None,
                max(ttls, default=0) or None)
    return multi_cell


def cell_detail_reader(field: dict) -> Callable:
    """A function reading a non-key column's record whole, each cell with its timestamp, TTL and expiry,
    values as `value_reader` gives them (what a mirror merges by Cassandra's rules):

    * a single cell: ``[timestamp, ttl, expiry, tombstone, value]``: ttl 0 and expiry null without a TTL,
      tombstone 1 with ttl 0, expiry null and value null (its deletion time decides nothing);
    * a multi-cell column: ``[deletion timestamp or null, [[key, timestamp, ttl, expiry, tombstone,
      value], ...]]``, each element written or removed (tombstone 1, value null); the key is a list
      element's timeuuid, a set element, a map key or a UDT field's CQL name."""
    record = _branch(field["type"])
    names = [f["name"] for f in record["fields"]]
    if "value" in names:
        convert = value_reader(record["fields"][0]["type"])

        def single(cell):
            if cell["tombstone"]:
                return [cell["timestamp"], 0, None, 1, None]
            ttl = cell["ttl"]
            return [cell["timestamp"], ttl, cell["local_deletion_time"] if ttl else None, 0, convert(cell["value"])]
        return single

    added = record["fields"][names.index("added")]["type"]
    removed_record = record["fields"][names.index("removed")]["type"]["items"]
    removed_key = value_reader(removed_record["fields"][0]["type"])
    if isinstance(added, dict) and added.get("type") == "record":  # a UDT: a record of its fields
        fields = [(f["name"], cql_name(f), value_reader(_branch(f["type"])["fields"][0]["type"]))
                  for f in added["fields"]]

        def written(value):
            return [[cql, e["timestamp"], e["ttl"], e["local_deletion_time"] if e["ttl"] else None, 0,
                     conv(e["value"])] for name, cql, conv in fields if (e := value[name]) is not None]
    else:
        element_fields = {f["name"]: f["type"] for f in _branch(added["items"])["fields"]}
        key = value_reader(element_fields["key"])
        value = value_reader(element_fields["value"]) if "value" in element_fields else None

        def written(elements):
            return [[key(e["key"]), e["timestamp"], e["ttl"], e["local_deletion_time"] if e["ttl"] else None, 0,
                     None if value is None else value(e["value"])] for e in elements]

    def multi_cell(cell):
        deletion = cell["deletion"]
        elements = written(cell["added"])
        elements.extend([removed_key(r["key"]), r["timestamp"], 0, None, 1, None] for r in cell["removed"])
        return [None if deletion is None else deletion["timestamp"], elements]
    return multi_cell


class EventReader:
    """A value schema version, parsed for decoding, with one reader per column."""

    def __init__(self, schema: dict) -> None:
        self.parsed = fastavro.parse_schema(_without_logical_types(schema))
        after = next(f for f in _expanded(schema)["fields"] if f["name"] == "after")["type"]
        self.columns = [
            ColumnReader(cql_name(f), f["name"], f["cql_kind"], f["cql_type"], value_reader(f["type"]))
            if f["cql_kind"] in KEY_KINDS else
            ColumnReader(cql_name(f), f["name"], f["cql_kind"], f["cql_type"], cell_reader(f), cell_detail_reader(f))
            for f in after["fields"]
        ]
        self.key_columns = [c for c in self.columns if c.kind in KEY_KINDS]
        self.partition_key = [c for c in self.columns if c.kind == "partition_key"]
        self.clustering = [c for c in self.columns if c.kind == "clustering"]
        self.cell_columns = [c for c in self.columns if c.kind in ("static", "regular")]


class EventReaders:
    """The writer schema and an `EventReader` per schema id, the schema asked of the registry once; an
    id the registry does not know is asked again only after `unknown_for` seconds (a topic of records
    whose schemas are gone would otherwise cost a request each)."""

    def __init__(self, registry: SchemaRegistry, unknown_for: float = 30.0) -> None:
        self.registry = registry
        self.unknown_for = unknown_for
        self._schemas: dict[int, dict] = {}
        self._readers: dict[int, EventReader] = {}
        self._unknown: dict[int, tuple[float, UnknownSchemaId]] = {}

    def schema(self, schema_id: int) -> dict:
        """Raises UnknownSchemaId when the registry has no such id, RegistryError when it fails."""
        schema = self._schemas.get(schema_id)
        if schema is None:
            unknown = self._unknown.get(schema_id)
            if unknown is not None and time.monotonic() - unknown[0] < self.unknown_for:
                raise unknown[1]
            try:
                schema = self._schemas[schema_id] = self.registry.schema(schema_id)
            except UnknownSchemaId as exc:
                self._unknown[schema_id] = (time.monotonic(), exc)
                raise
        return schema

    def get(self, schema_id: int) -> EventReader:
        """The reader of `schema_id`'s events; raises as `schema` does."""
        reader = self._readers.get(schema_id)
        if reader is None:
            reader = self._readers[schema_id] = EventReader(self.schema(schema_id))
        return reader


_readers: dict[tuple[str, RegistrySecurity], EventReaders] = {}


def event_readers(registry_url: str, security: RegistrySecurity = RegistrySecurity()) -> EventReaders:
    """The process's readers for `registry_url`, reached as `security` says (Spark reuses its Python
    workers)."""
    readers = _readers.get((registry_url, security))
    if readers is None:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        from .registry import SchemaRegistry

        client = SchemaRegistryClient(security.client(registry_url))
        readers = _readers[(registry_url, security)] = EventReaders(SchemaRegistry(client))
    return readers
