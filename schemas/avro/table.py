"""One table's key and value schemas, and the compiled function turning its changes into data.

Key: record Key, the partition key columns. Every row of a Cassandra partition gets the same
Kafka key, so the partition's changes stay in order in one Kafka partition (and the topic
must not be compacted: one key holds many rows).

Value: record Envelope, Debezium's envelope without `before` (Cassandra writes without
reading). `after` holds the row: primary key columns as plain values, every other column as
a nullable record (see cells.py) that is null when the change did not touch the column; a
column set to null or deleted is a record with `tombstone` true (or a `deletion`, for
non-frozen collections and UDTs). Columns are ordered partition key, clustering, static and
regular ones by name, so a schema depends on the table alone, not on how it was described.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Mapping

from schemas.change import Bound, Change, Op, write_time
from schemas.cql import parse_type
from schemas.tables.model import Column, Table, UserType

from .cells import column_cell, deletion_datum, deletion_record
from .names import avro_name, define_once, field, record, table_namespace
from .types import avro_type, optional, value_type

CONNECTOR = "cassandra"
try:
    VERSION = version("ringtail")
except PackageNotFoundError:  # run from a checkout that was never installed
    VERSION = "unknown"
_DEBEZIUM_OPS = {Op.INSERT: "c", Op.UPDATE: "u", Op.ROW_DELETE: "d", Op.PARTITION_DELETE: "d",
                 Op.RANGE_DELETE: "d"}


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where changes come from: the `source` block's fields that do not vary per change."""

    name: str  # logical name of the connector (Debezium's topic.prefix)
    cluster: str
    node: str  # the node whose commit log is read, e.g. its host id
    version: str = VERSION


class TableEncoder:
    """Built once per table (and schema version); `encode` is the per-change hot path."""

    def __init__(self, table: Table, user_types: Mapping[str, UserType]) -> None:
        self.table = table
        self.user_types = user_types  # the keyspace's UDTs the column types were resolved with
        namespace = table_namespace(table)

        def column_type(column: Column):
            return parse_type(column.type, user_types, table.keyspace)

        def path(column: Column) -> str:
            return f"{namespace}.{avro_name(column.name)}"

        def primary_key(column: Column) -> tuple[dict, tuple]:
            """`after` field and (field name, convert) of a primary key column: a plain value,
            null when the change has none (a partition deletion's clustering) or it is empty."""
            avro = optional(avro_type(column_type(column), path(column)))
            return (field(column.name, avro.schema, cql_type=column.type, cql_kind=column.kind.value),
                    (avro_name(column.name), avro.convert))

        partition_key = [primary_key(c) for c in table.partition_key]
        clustering = [primary_key(c) for c in table.clustering]
        self._partition_key = [convert for _, convert in partition_key]  # for the key and `after`
        self._clustering = [convert for _, convert in clustering]
        key_fields = [field(c.name, value_type(column_type(c), path(c)).schema, cql_type=c.type)
                      for c in table.partition_key]
        clustering_fields = [f for f, _ in clustering]
        after_fields = [f for f, _ in partition_key] + clustering_fields

        deletion = deletion_record(namespace)
        self._columns = {}  # CQL name -> (field name, cell encoder)
        for column in (*table.static_columns, *table.regular_columns):
            cell, encode = column_cell(column_type(column), path(column), deletion)
            after_fields.append(field(column.name, ["null", cell], cql_type=column.type, cql_kind=column.kind.value))
            self._columns[column.name] = (avro_name(column.name), encode)
        self._empty_row = dict.fromkeys(f["name"] for f in after_fields)
        self._empty_clustering = dict.fromkeys(name for name, _ in self._clustering)
        # A table without clustering columns has no range deletions; an empty record would
        # also be unwritable for Parquet-based sinks.
        self._has_range = bool(self._clustering)

        self.key_schema = define_once(record("Key", namespace, key_fields))
        self.value_schema = define_once(_envelope(namespace, after_fields, clustering_fields, deletion))
        self._source: SourceInfo | None = None
        self._segment: str | None = None
        self._source_fields: dict = {}

    def encode(self, change: Change, source: SourceInfo, segment: str, ts_ms: int) -> tuple[dict, dict]:
        """(key, value) of `change`, read from the commit log segment `segment` (its path or
        name) and processed at `ts_ms` (ms since the epoch)."""
        key = {name: v if convert is None else convert(v)
               for (name, convert), v in zip(self._partition_key, change.partition_key)}
        row = self._empty_row.copy()
        row.update(key)
        for (name, convert), v in zip(self._clustering, change.clustering):
            row[name] = v if convert is None else convert(v)
        columns = self._columns
        for name, cell in change.cells.items():
            column = columns.get(name)
            if column is not None:  # cells of dropped columns are dead data
                row[column[0]] = column[1](cell)
        if source is not self._source or segment != self._segment:
            self._source, self._segment = source, segment
            self._source_fields = {"version": source.version, "connector": CONNECTOR, "name": source.name,
                                   "cluster": source.cluster, "node": source.node, "keyspace": self.table.keyspace,
                                   "table": self.table.name, "file": os.path.basename(segment)}
        written = write_time(change)
        position = change.position
        liveness = change.liveness
        value = {
            "op": _DEBEZIUM_OPS[change.op],
            "kind": change.op.value,
            "ts_ms": ts_ms,
            "source": {**self._source_fields,
                       "position": {"segment_id": position.segment_id, "entry_offset": position.entry_offset,
                                    "update_index": position.update_index, "row_index": position.row_index},
                       "ts_ms": written // 1000, "ts_us": written, "partition_key": change.partition_key_bytes},
            "after": row,
            "static": change.static,
            "liveness": None if liveness is None else {
                "timestamp": liveness.timestamp, "ttl": liveness.ttl, "local_deletion_time": liveness.expires_at},
            "deletion": deletion_datum(change.deletion),
        }
        if self._has_range:
            value["range"] = None if change.op is not Op.RANGE_DELETE else {
                "start": self._bound(change.range_start), "end": self._bound(change.range_end)}
        return key, value

    def _bound(self, bound: Bound | None) -> dict | None:
        if bound is None:
            return None
        clustering = self._empty_clustering.copy()
        for (name, convert), v in zip(self._clustering, bound.clustering):
            clustering[name] = v if convert is None else convert(v)
        return {"clustering": clustering, "inclusive": bound.inclusive}


def _envelope(namespace: str, after_fields: list[dict], clustering_fields: list[dict], deletion: dict) -> dict:
    position = record("Position", namespace, [
        field("segment_id", "long"), field("entry_offset", "long"), field("update_index", "int"),
        field("row_index", "int")], doc="where the change is in the commit log; ordered like the log")
    source = record("Source", namespace, [
        field("version", "string", "ringtail version"),
        field("connector", "string", "always 'cassandra'"),
        field("name", "string", "logical name of the connector"),
        field("cluster", "string"),
        field("node", "string", "the node whose commit log held the change"),
        field("keyspace", "string"),
        field("table", "string"),
        field("file", "string", "commit log segment file name"),
        field("position", position),
        field("ts_ms", "long", "write timestamp of the change, ms since the epoch"),
        field("ts_us", "long", "write timestamp of the change, µs since the epoch (Cassandra's precision)"),
        field("partition_key", "bytes", "the serialized partition key, as Cassandra hashes it into the token",
              default=""),
    ])
    liveness = record("Liveness", namespace, [
        field("timestamp", "long"), field("ttl", "int"), field("local_deletion_time", ["null", "long"])],
        doc="primary key liveness written by INSERT; local_deletion_time is its expiry with a TTL")
    fields = [
        field("op", "string", "Debezium operation: c (insert), u (update), d (row, partition or range delete)"),
        field("kind", "string", "the Cassandra change: insert, update, row_delete, partition_delete, range_delete"),
        field("ts_ms", "long", "when the connector processed the change, ms since the epoch"),
        field("source", source),
        field("after", record("Value", namespace, after_fields),
              "the row; a null column was not touched by the change"),
        field("static", "boolean", "the change is to the partition's static row (clustering columns are null)"),
        field("liveness", ["null", liveness]),
        field("deletion", ["null", deletion], "the row, partition or range deletion"),
    ]
    if clustering_fields:
        clustering = record("Clustering", namespace, clustering_fields,
                            doc="a clustering prefix: the first columns set, the others null")
        bound = record("Bound", namespace, [field("clustering", clustering), field("inclusive", "boolean")])
        fields.append(field("range", ["null", record("Range", namespace, [
            field("start", ["null", bound]), field("end", ["null", bound])])],
            "the deleted clustering range; an empty prefix is the partition's start or end"))
    return record("Envelope", namespace, fields)
