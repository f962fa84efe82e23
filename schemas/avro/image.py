"""One table's image schemas: each change as whole rows before and after it, in Debezium's envelope, for
consumers that read rows (Debezium's JDBC sink, `ExtractNewRecordState`, a search index, a cache).

Key: record Key, the primary key columns (a row's images share a key: a compacted topic keeps each
row's newest, and its tombstone removes the row).

Value: record Envelope
    before   Value or null    the row before the change (null: not in `SELECT *`)
    after    Value or null    the row after it (null: the change removed it)
    op       c, u, d, or r    created, updated, deleted, or read by a snapshot
    ts_ms    when the image was made (its batch's planned time, or its purge's), ms since the epoch
    source   the change it comes from: its node, commit log position, write time, change id

Value holds every column of the table, each nullable, in its natural Avro type (`types.avro_type`),
as `SELECT *` shows it: primary key columns first, then the others by name. Record names live under
`ringtail.image.<keyspace>.<table>`, apart from the change topic's.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.cql import CqlType

from .json_values import Convert, json_datum
from .names import ROOT_NAMESPACE, avro_name, define_once, field, record
from .table import CONNECTOR, VERSION
from .types import avro_type, optional

@dataclass(frozen=True)
class ImageSchemas:
    """A table's key and value schemas, and the function from an image's parts to their datums."""

    keyspace: str
    table: str
    key_schema: dict
    value_schema: dict
    key_columns: tuple[tuple[str, str, Convert], ...]  # (CQL name, Avro name, JSON form → datum)
    columns: tuple[tuple[str, str, Convert], ...]  # every column, key ones first

    @classmethod
    def of(cls, keyspace: str, table: str, key_columns: Sequence[tuple[str, CqlType]],
           columns: Sequence[tuple[str, CqlType]]) -> ImageSchemas:
        """From the primary key columns and the other columns, each (name, parsed CQL type), in order."""
        namespace = f"{ROOT_NAMESPACE}.image.{avro_name(keyspace)}.{avro_name(table)}"

        def typed(name: str, cql: CqlType) -> tuple[dict, tuple[str, str, Convert]]:
            avro = optional(avro_type(cql, f"{namespace}.{avro_name(name)}"))
            return field(name, avro.schema, cql_type=cql.cql), (name, avro_name(name), json_datum(cql))

        key = [typed(name, cql) for name, cql in key_columns]
        every = key + [typed(name, cql) for name, cql in columns]
        value = record("Value", namespace, [f for f, _ in every], doc="a row as SELECT * shows it")
        source = record("Source", namespace, [
            field("version", "string", "ringtail version"),
            field("connector", "string", "always 'cassandra'"),
            field("name", "string", "the subscription or job that made the image"),
            field("keyspace", "string"),
            field("table", "string"),
            field("node", ["null", "string"], "the node whose commit log held the change"),
            field("segment_id", ["null", "long"], "the commit log segment"),
            field("entry_offset", ["null", "long"], "the mutation's offset in it"),
            field("ts_ms", "long", "write timestamp of the change, ms since the epoch"),
            field("ts_us", "long", "write timestamp of the change, µs since the epoch"),
            field("change_id", "string", "digest of the change, equal on every replica"),
            field("snapshot", "string", "'true' for a row a snapshot read, else 'false' (as Debezium)"),
        ])
        envelope = record("Envelope", namespace, [
            field("before", ["null", value], "the row before the change; null: not in SELECT *"),
            field("after", ["null", value], "the row after the change; null: removed"),
            field("source", source),
            field("op", "string", "c (created), u (updated), d (deleted), r (read by a snapshot)"),
            field("ts_ms", "long", "when the image was made, ms since the epoch"),
        ])
        return cls(keyspace, table, define_once(record("Key", namespace, [f for f, _ in key])),
                   define_once(envelope), tuple(c for _, c in key), tuple(c for _, c in every))

    # The datums of an image, as fastavro writes them: the reference for the native core, which the Kafka sink
    # gives the rows' JSON forms as they are (`envelope`, `spark.sinks.kafka.images`).

    def key(self, row: Mapping[str, Any]) -> dict:
        """The key datum of a row (its key columns, by CQL name, in the JSON forms)."""
        return {avro: convert(row.get(name)) for name, avro, convert in self.key_columns}

    def row(self, row: Mapping[str, Any] | None) -> dict | None:
        return None if row is None else {avro: convert(row.get(name)) for name, avro, convert in self.columns}

    def value(self, op: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
              source: Mapping[str, Any], ts_ms: int) -> dict:
        """The envelope datum; `source` holds the per-change fields (name, node, position, times, id)."""
        return self.envelope(op, self.row(before), self.row(after), source, ts_ms)

    def envelope(self, op: str, before: Any, after: Any, source: Mapping[str, Any], ts_ms: int) -> dict:
        """The envelope around `before` and `after` as given: `value`'s datums, or the rows' JSON forms as the
        sinks give them (the native core reads those, the HTTP sink posts them)."""
        return {"before": before, "after": after, "op": op, "ts_ms": ts_ms, "source": self.source(source)}

    def source(self, fields: Mapping[str, Any]) -> dict:
        """The `source` of an image whose per-change fields are `fields`."""
        return {"version": VERSION, "connector": CONNECTOR, "keyspace": self.keyspace, "table": self.table, **fields}
