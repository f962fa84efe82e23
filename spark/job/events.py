"""Change events as the connector writes them → CDC log rows (see rows.py).

Runs on the executors: `decode_partition` is handed to `mapInArrow`. Writer schemas are fetched
from the registry by the id in each payload, once per process, so schema versions may change
from one record to the next.
"""
from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import fastavro
import pyarrow as pa

from connector.avro.errors import MalformedPayload
from connector.avro.wire import schema_id_of, unframe

from . import rows as R
from .rows import DECODED, arrow_schema

_OPS = {"insert": R.ROW_INSERT, "update": R.ROW_UPDATE, "row_delete": R.ROW_DELETE,
        "partition_delete": R.PARTITION_DELETE}
# 100 ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


class RegistryUnavailable(RuntimeError):
    """The registry did not answer: the batch fails and is retried; nothing is dead-lettered."""


class UnknownSchema(ValueError):
    """The registry does not know the payload's schema id."""


def _without_logical_types(schema):
    # Raw longs and ints keep every value exact (timestamps outside Python's datetime range).
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(s) for s in schema]
    return schema


def _branch(schema):
    """The non-null branch of a nullable union."""
    if isinstance(schema, list):
        others = [s for s in schema if s != "null"]
        return others[0] if len(others) == 1 else schema
    return schema


def _value_converter(schema) -> Callable:
    """A function turning an Avro datum of `schema` into the JSON conventions of rows.py."""
    schema = _branch(schema)
    if schema == "bytes":
        return lambda v: None if v is None else "0x" + v.hex()
    if isinstance(schema, str):
        return lambda v: v
    kind = schema["type"]
    if kind == "array":
        items = _branch(schema["items"])
        if isinstance(items, dict) and items.get("type") == "record" and items["name"] == "Entry":
            key, value = (_value_converter(f["type"]) for f in items["fields"])
            return lambda v: None if v is None else [[key(e["key"]), value(e["value"])] for e in v]
        element = _value_converter(items)
        return lambda v: None if v is None else [element(e) for e in v]
    if kind == "map":
        value = _value_converter(schema["values"])
        return lambda v: None if v is None else [[k, value(x)] for k, x in v.items()]
    if kind == "record":
        fields = [(f["name"], _cql_name(f), _value_converter(f["type"])) for f in schema["fields"]]
        if schema["name"] == "Tuple":
            return lambda v: None if v is None else [conv(v[name]) for name, _, conv in fields]
        return lambda v: None if v is None else {cql: conv(v[name]) for name, cql, conv in fields}
    return lambda v: v  # enum, fixed: not produced by the connector


def _cql_name(field: dict) -> str:
    """A field's column or UDT-field name in CQL: the writer records it when it is not a valid Avro
    name (schemas/README.md)."""
    return field.get("cql_name", field["name"])


@dataclass(frozen=True, slots=True)
class Column:
    name: str  # as in CQL
    field: str  # its field in the event's `after` record
    kind: str  # partition_key, clustering, static, regular
    cql_type: str
    convert: Callable  # key columns: the value; others: see _cell_reader


def _cell_reader(field: dict) -> Callable:
    """(value JSON or None, deleted, deleted element keys, ttl) of a non-key column's record."""
    record = _branch(field["type"])
    names = [f["name"] for f in record["fields"]]
    if "value" in names:  # an atomic (or frozen) column
        convert = _value_converter(record["fields"][0]["type"])

        def atomic(cell):
            if cell["tombstone"]:
                return None, True, None, None
            return _dumps(convert(cell["value"])), False, None, cell["ttl"] or None
        return atomic

    added = record["fields"][names.index("added")]["type"]
    removed_record = record["fields"][names.index("removed")]["type"]["items"]
    removed = _value_converter({"type": "array", "items": removed_record["fields"][0]["type"]})  # by key
    if isinstance(added, dict) and added.get("type") == "record":  # a UDT: a record of its fields
        fields = [(f["name"], _cql_name(f), _value_converter(_branch(f["type"])["fields"][0]["type"]))
                  for f in added["fields"]]

        def written(value):
            out = {cql: conv(value[name]["value"]) for name, cql, conv in fields if value[name] is not None}
            ttls = [value[name]["ttl"] for name, _, _ in fields if value[name] is not None]
            return out, ttls
    else:
        element = _branch(added["items"])
        element_fields = {f["name"]: f["type"] for f in element["fields"]}
        key = _value_converter(element_fields["key"])
        value = _value_converter(element_fields["value"]) if "value" in element_fields else None
        if field["cql_type"].startswith("list<"):  # elements by their timeuuid, as ScyllaDB logs lists
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
        return (_dumps(out) if out else None, cell["deletion"] is not None,
                _dumps(removed(gone)) if gone else None, max(ttls, default=0) or None)
    return multi_cell


class EventSchema:
    """A value schema version, parsed for decoding, with one reader per column."""

    def __init__(self, schema_text: str) -> None:
        schema = json.loads(schema_text)
        self.parsed = fastavro.parse_schema(_without_logical_types(schema))
        after = next(f for f in schema["fields"] if f["name"] == "after")["type"]
        self.columns = [
            Column(_cql_name(f), f["name"], f["cql_kind"], f["cql_type"],
                   _value_converter(f["type"]) if f["cql_kind"] in ("partition_key", "clustering") else _cell_reader(f))
            for f in after["fields"]
        ]
        self.key_columns = [c for c in self.columns if c.kind in ("partition_key", "clustering")]
        self.partition_key = [c for c in self.columns if c.kind == "partition_key"]
        self.clustering = [c for c in self.columns if c.kind == "clustering"]
        self.cell_columns = [c for c in self.columns if c.kind in ("static", "regular")]


class SchemaCache:
    """Writer schemas by id from the registry's `/schemas/ids/{id}`; one instance per process."""

    def __init__(self, registry_url: str, timeout: float = 30.0) -> None:
        self.url = registry_url.rstrip("/")
        self.timeout = timeout
        self._schemas: dict[int, EventSchema] = {}

    def get(self, schema_id: int) -> EventSchema:
        schema = self._schemas.get(schema_id)
        if schema is None:
            try:
                with urllib.request.urlopen(f"{self.url}/schemas/ids/{schema_id}", timeout=self.timeout) as answer:
                    text = json.load(answer)["schema"]
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    raise UnknownSchema(f"the registry has no schema with id {schema_id}") from exc
                raise RegistryUnavailable(f"registry {self.url}: HTTP {exc.code} for schema {schema_id}") from exc
            except (urllib.error.URLError, OSError) as exc:
                raise RegistryUnavailable(f"registry {self.url} unreachable: {exc}") from exc
            schema = self._schemas[schema_id] = EventSchema(text)
        return schema


_caches: dict[str, SchemaCache] = {}


def schema_cache(registry_url: str) -> SchemaCache:
    cache = _caches.get(registry_url)
    if cache is None:
        cache = _caches[registry_url] = SchemaCache(registry_url)
    return cache


def change_id(keyspace: str, table: str, partition_key: bytes, event: dict) -> bytes:
    """A digest of what the change is, leaving out where it was read: equal for the copies of
    one write that every replica's connector sends, different for any two different changes."""
    content = _dumps([keyspace, table, event["kind"], event["static"], event["after"], event["liveness"],
                          event["deletion"], event.get("range")], sort_keys=True, default=_json_bytes)
    return hashlib.blake2b(partition_key + content.encode(), digest_size=16).digest()


def _dumps(value, **options) -> str:
    return json.dumps(value, ensure_ascii=False, **options)


def _json_bytes(value):
    if isinstance(value, bytes):
        return "0x" + value.hex()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def log_time(write_time_us: int, digest: bytes) -> str:
    """`cdc$time`: a version-1 timeuuid holding the write time in µs (as ScyllaDB's) whose clock
    sequence and node come from the change digest, so every replica's copy gets the same one."""
    ticks = write_time_us * 10 + _UUID_EPOCH_OFFSET
    rest = int.from_bytes(digest[:8], "big")
    clock_seq = (rest >> 48) & 0x3FFF
    node = rest & 0xFFFFFFFFFFFF
    return str(uuid.UUID(fields=(ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, ((ticks >> 48) & 0x0FFF) | 0x1000,
                                 0x80 | (clock_seq >> 8), clock_seq & 0xFF, node)))


def _key_json(event_after: dict, columns: list[Column], clustering: dict | None = None) -> str:
    out = {}
    for column in columns:
        source = event_after if clustering is None or column.kind == "partition_key" else clustering
        value = source.get(column.field)
        if value is not None:
            out[column.name] = column.convert(value)
    return _dumps(out, default=_json_bytes)


def event_rows(event: dict, schema: EventSchema) -> list[dict]:
    """The log rows of one decoded event, without the Kafka and stream columns."""
    source = event["source"]
    after = event["after"]
    kind = event["kind"]
    keyspace, table, partition_key = source["keyspace"], source["table"], source["partition_key"]
    digest = change_id(keyspace, table, partition_key, event)
    written = source["ts_us"]
    base = {
        "keyspace": keyspace, "table": table, "cdc$time": log_time(written, digest), "cdc$ttl": None,
        "columns": [], "deleted_columns": [], "deleted_elements": [],
        "write_time": written, "write_time_us": written, "partition_key": partition_key, "change_id": digest.hex(),
    }
    if kind == "range_delete":
        rows = []
        for seq, (bound, inclusive_op, exclusive_op) in enumerate((
                (event["range"]["start"], R.RANGE_DELETE_START_INCLUSIVE, R.RANGE_DELETE_START_EXCLUSIVE),
                (event["range"]["end"], R.RANGE_DELETE_END_INCLUSIVE, R.RANGE_DELETE_END_EXCLUSIVE))):
            # An open bound (the partition's start or end) has no clustering and counts as inclusive.
            op = inclusive_op if bound is None or bound["inclusive"] else exclusive_op
            clustering = {} if bound is None else bound["clustering"]
            rows.append({**base, "cdc$batch_seq_no": seq, "cdc$operation": op, "cdc$end_of_batch": seq == 1,
                         "key": _key_json(after, schema.key_columns, clustering)})
        return rows
    row = {**base, "cdc$batch_seq_no": 0, "cdc$end_of_batch": True, "key": _key_json(after, schema.key_columns)}
    row["cdc$operation"] = _OPS[kind]
    if kind in ("insert", "update"):
        ttls = []
        liveness = event["liveness"]
        if liveness is not None and liveness["ttl"]:
            ttls.append(liveness["ttl"])
        for column in schema.cell_columns:
            cell = after.get(column.field)
            if cell is None:
                continue
            value, deleted, elements, ttl = column.convert(cell)
            if value is not None:
                row["columns"].append((column.name, value))
            if deleted:
                row["deleted_columns"].append(column.name)
            if elements is not None:
                row["deleted_elements"].append((column.name, elements))
            if ttl:
                ttls.append(ttl)
        row["cdc$ttl"] = max(ttls, default=None)
    return [row]


def decode_records(records: pa.RecordBatch, cache: SchemaCache) -> pa.RecordBatch:
    """Kafka records (topic, partition, offset, timestamp, key, value) → `DECODED` rows."""
    out: list[dict] = []
    columns = records.to_pydict()
    for topic, partition, offset, timestamp, key, value in zip(
            columns["topic"], columns["partition"], columns["offset"], columns["timestamp"], columns["key"],
            columns["value"]):
        kafka = {"kafka_time": timestamp}
        try:
            if value is None:
                raise MalformedPayload("a record without a value")
            schema_id = schema_id_of(value)
            schema = cache.get(schema_id)
            event = unframe(value, schema.parsed)
            source = event["source"]
            position = source["position"]
            meta = {**kafka, "source": {
                "node": source["node"], "segment_id": position["segment_id"], "entry_offset": position["entry_offset"],
                "update_index": position["update_index"], "row_index": position["row_index"], "topic": topic,
                "partition": partition, "offset": offset, "schema_id": schema_id}}
            out.extend({**row, **meta} for row in event_rows(event, schema))
        except RegistryUnavailable:
            raise
        except Exception as exc:  # anything else about this one record: keep it as a dead letter
            out.append({**kafka, "failure": R.UNDECODABLE, "failure_detail": f"{type(exc).__name__}: {exc}",
                        "raw_key": key, "raw_value": value,
                        "change_id": f"undecodable:{topic}:{partition}:{offset}",
                        "source": {"topic": topic, "partition": partition, "offset": offset}})
    return pa.RecordBatch.from_pylist(out, schema=_DECODED_ARROW)


_DECODED_ARROW = arrow_schema(DECODED)


def decode_partition(registry_url: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function decoding Kafka records with schemas from `registry_url`."""
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        cache = schema_cache(registry_url)
        for batch in batches:
            yield decode_records(batch, cache)
    return decode
