"""Change events → CDC log rows (see rows.py). Events are read through the contract's reader
(`schemas.avro.reader`), which knows their structure and CQL names; this module only turns them
into rows.

Runs on the executors: `decode_partition` is handed to `mapInArrow`. Writer schemas are fetched
from the registry by the id in each payload, once per process, so schema versions may change
from one record to the next.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator

import pyarrow as pa

from schemas.avro.errors import MalformedPayload, RegistryError, UnknownSchemaId
from schemas.avro.reader import ColumnReader, EventReader, EventReaders, event_readers
from schemas.avro.wire import schema_id_of, unframe
from schemas.runtime.access import RegistrySecurity

from spark import rows as R
from .assign import StreamAssigner
from .native_events import ReplicaCopies, native_events
from spark.rows import DECODED, arrow_schema

_OPS = {"insert": R.ROW_INSERT, "update": R.ROW_UPDATE, "row_delete": R.ROW_DELETE,
        "partition_delete": R.PARTITION_DELETE}
# 100 ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000
_INT_RANGE = 1 << 31


def change_id(keyspace: str, table: str, partition_key: bytes, event: dict) -> bytes:
    """A digest of what the change is, leaving out where it was read: equal for the copies of
    one write that every replica's connector sends, different for any two different changes."""
    content = _content([keyspace, table, event["kind"], event["static"], event["after"], event["liveness"],
                        event["deletion"], event.get("range")])
    return hashlib.blake2b(partition_key + content.encode(), digest_size=16).digest()


def _json_bytes(value):
    if isinstance(value, bytes):
        return "0x" + value.hex()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# One encoder each (json.dumps with options builds a new one per call, for every row and value):
_dumps = json.JSONEncoder(ensure_ascii=False).encode  # a value's JSON, as the log holds it
_key = json.JSONEncoder(ensure_ascii=False, default=_json_bytes).encode  # a key, whose blobs are bytes
_content = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=_json_bytes).encode
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # the `cells` column


def log_time(write_time_us: int, digest: bytes) -> str:
    """`cdc$time`: a version-1 timeuuid holding the write time in µs (as ScyllaDB's) whose clock
    sequence and node come from the change digest, so every replica's copy gets the same one.
    Formatted directly (it is made for every row): the fields of RFC 4122, variant bits 10."""
    ticks = write_time_us * 10 + _UUID_EPOCH_OFFSET
    rest = int.from_bytes(digest[:8], "big")
    return (f"{ticks & 0xFFFFFFFF:08x}-{(ticks >> 32) & 0xFFFF:04x}-{((ticks >> 48) & 0x0FFF) | 0x1000:04x}-"
            f"{0x8000 | ((rest >> 48) & 0x3FFF):04x}-{rest & 0xFFFFFFFFFFFF:012x}")


def _key_json(event_after: dict, columns: list[ColumnReader], clustering: dict | None = None) -> str:
    out = {}
    for column in columns:
        source = event_after if clustering is None or column.kind == "partition_key" else clustering
        value = source.get(column.field)
        if value is not None:
            out[column.name] = column.read(value)
    return _key(out)


def cell_changes(event: dict, schema: EventReader) -> str:
    """The `cells` column: the whole change with each cell's timestamp, TTL and expiry, as JSON text
    (what a mirror merges; `spark.mirror.changes` reads it):

    ``{"k": clustering values (null for the static row and partition deletions), "s": static,
    "l": [timestamp, ttl, expiry] (primary key liveness) or null, "d": deletion timestamp or null,
    "r": [start, end] of a range deletion, each [clustering prefix, inclusive] or null (open),
    "c": {column: cell as `cell_detail_reader` reads it}}``"""
    after = event["after"]
    liveness, deletion = event["liveness"], event["deletion"]
    out = {
        "k": None if event["static"] or event["kind"] == "partition_delete"
        else [c.read(after.get(c.field)) for c in schema.clustering],
        "s": event["static"],
        "l": None if liveness is None else [liveness["timestamp"], liveness["ttl"],
                                            liveness["local_deletion_time"] if liveness["ttl"] else None],
        "d": None if deletion is None else deletion["timestamp"],
        "c": {c.name: c.cells(cell) for c in schema.cell_columns if (cell := after.get(c.field)) is not None},
    }
    if event["kind"] == "range_delete":
        out["r"] = [None if bound is None else [_prefix(bound["clustering"], schema), bound["inclusive"]]
                    for bound in (event["range"]["start"], event["range"]["end"])]
    return _compact(out)


def _prefix(clustering: dict, schema: EventReader) -> list:
    """A range bound's clustering prefix: the values of its first columns, up to the first unset."""
    values = []
    for column in schema.clustering:
        value = clustering.get(column.field)
        if value is None:
            break
        values.append(column.read(value))
    return values


def event_rows(event: dict, schema: EventReader, cells: bool = False) -> list[dict]:
    """The log rows of one decoded event, without the Kafka and stream columns; with `cells`, the first
    carries the change's `cell_changes`."""
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
        "cells": None,
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
        if cells:
            rows[0]["cells"] = cell_changes(event, schema)
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
            value, deleted, elements, ttl = column.read(cell)
            if value is not None:
                row["columns"].append((column.name, _dumps(value)))
            if deleted:
                row["deleted_columns"].append(column.name)
            if elements is not None:
                row["deleted_elements"].append((column.name, _dumps(elements)))
            if ttl:
                ttls.append(ttl)
        row["cdc$ttl"] = max(ttls, default=None)
        if _restates(event, schema):
            row["cdc$operation"] = R.ROW_READ
    if cells:
        row["cells"] = cell_changes(event, schema)
    return [row]


def _restates(event: dict, schema: EventReader) -> bool:
    """Whether a row's liveness, deletion and cells carry more than one write timestamp: it is no one write
    but several merged, as a read repair sends them to a replica that missed them. A collection's own
    deletion is left out: a collection overwritten is deleted a microsecond before its elements are written."""
    times = {record["timestamp"] for record in (event["liveness"], event["deletion"]) if record is not None}
    after = event["after"]
    for column in schema.cell_columns:
        cell = after.get(column.field)
        if cell is None:
            continue
        if "timestamp" in cell:  # one cell
            times.add(cell["timestamp"])
            continue
        added = cell["added"]  # a UDT's fields (a record), or a collection's elements
        times.update(e["timestamp"] for e in (added.values() if isinstance(added, dict) else added) if e is not None)
        times.update(r["timestamp"] for r in cell["removed"])
    return len(times) > 1


def decode_records(records: pa.RecordBatch, readers: EventReaders, cells: bool = False) -> pa.RecordBatch:
    """Kafka records (topic, partition, offset, timestamp, key, value) → `DECODED` rows; `cells`: with
    each change's `cell_changes` (for a mirror)."""
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
            schema = readers.get(schema_id)
            event = unframe(value, schema.parsed)
            source = event["source"]
            position = source["position"]
            for name in ("update_index", "row_index"):  # fastavro reads an Avro int without checking its range
                if not -_INT_RANGE <= position[name] < _INT_RANGE:
                    raise MalformedPayload(f"source.position.{name} {position[name]} is out of an int's range")
            meta = {**kafka, "source": {
                "node": source["node"], "segment_id": position["segment_id"], "entry_offset": position["entry_offset"],
                "update_index": position["update_index"], "row_index": position["row_index"], "topic": topic,
                "partition": partition, "offset": offset, "schema_id": schema_id}}
            out.extend({**row, **meta} for row in event_rows(event, schema, cells))
        except Exception as exc:
            if isinstance(exc, RegistryError) and not isinstance(exc, UnknownSchemaId):
                raise  # the registry failed: the batch fails and is retried, nothing is dead-lettered
            # Anything about this one record: kept as a dead letter with its bytes.
            out.append({**kafka, "failure": R.UNDECODABLE, "failure_detail": f"{type(exc).__name__}: {exc}",
                        "raw_key": key, "raw_value": value,
                        "change_id": f"undecodable:{topic}:{partition}:{offset}",
                        "source": {"topic": topic, "partition": partition, "offset": offset}})
    return pa.RecordBatch.from_pylist(out, schema=_DECODED_ARROW)


_DECODED_ARROW = arrow_schema(DECODED)


def decode_partition(registry_url: str, cells: bool = False, assigner: StreamAssigner | None = None,
                     decoder: str = "native", registry_security: RegistrySecurity = RegistrySecurity(),
                     skip_copies: bool = False) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The `mapInArrow` function decoding Kafka records with schemas from `registry_url` (reached as
    `registry_security` says), with the native core (`spark.delivery.native_events`) or this module (`decoder`
    "python"), and with an `assigner` giving each row its stream id in the same pass. With `skip_copies`
    (for a job that removes replica copies) the native core skips the copies of a change that its task
    has already decoded, before decoding them; the rest are left to the job's state, as every copy is
    with this module."""
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if decoder == "native":
            copies = ReplicaCopies() if skip_copies else None
            native = native_events(registry_url, cells, registry_security)

            def rows(batch: pa.RecordBatch) -> pa.RecordBatch:
                return native.decode(batch, copies)
        else:
            readers = event_readers(registry_url, registry_security)

            def rows(batch: pa.RecordBatch) -> pa.RecordBatch:
                return decode_records(batch, readers, cells)
        for batch in batches:
            decoded = rows(batch)
            yield decoded if assigner is None else assigner.assign(decoded)
    return decode
