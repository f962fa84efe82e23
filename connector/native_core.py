"""The schema as the native core (`schemas._native`, the Rust crate in `connector/native`) takes
it: each table's types as trees the Python type layer parsed, each native type by its traits (types are
parsed and named in one place), its columns in the order of the event's `after` record, and the schema
ids its events are framed with."""
from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import AbstractSet as Set, Mapping

from schemas import _native
from schemas.avro.table import SourceInfo
from schemas.cql import CqlTypeError, parse_type
from schemas.cql.tree import type_tree
from schemas.tables.model import SchemaSnapshot, Table

log = logging.getLogger(__name__)


class Mode(enum.IntEnum):
    """What becomes of a table's changes in the native decoder."""

    SKIP = 0
    EMIT = 1  # they become events
    HAND_OFF = 2  # the entries holding them go back to the reference reader


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    cql: tuple  # `type_tree`
    live: bool  # False: a dropped column, whose cells are read and left out


@dataclass(frozen=True, slots=True)
class TableSpec:
    """One table as `_native.Decoder` reads it (`TableSpec` in the crate's python.rs)."""

    id: bytes  # the table id's 16 bytes
    keyspace: str
    name: str
    key_schema_id: int  # the schema ids its events are framed with (0 unless it emits)
    value_schema_id: int
    partition_key: list[tuple]
    clustering: list[tuple]
    columns: list[ColumnSpec]  # live ones first, in the order of the event's `after` record
    mode: Mode


def table_spec(table: Table, schema: SchemaSnapshot, schema_ids: tuple[int, int] | None = None,
               hand_off: bool = False) -> TableSpec:
    """One table for `Decoder`; `schema_ids` (key, value) for a table whose changes become events."""
    types = schema.types_of(table.keyspace)

    def tree(text: str) -> tuple:
        return type_tree(parse_type(text, types, table.keyspace))

    live = [ColumnSpec(c.name, tree(c.type), True) for c in (*table.static_columns, *table.regular_columns)]
    names = {column.name for column in live}
    # Header column lists name dropped columns too; their cells are read and left out.
    dropped = [ColumnSpec(name, tree(d.type), False) for name, d in table.dropped_columns.items() if name not in names]
    key_id, value_id = schema_ids or (0, 0)
    mode = Mode.HAND_OFF if hand_off else Mode.EMIT if schema_ids is not None else Mode.SKIP
    return TableSpec(table.id.bytes, table.keyspace, table.name, key_id, value_id,
                     [tree(c.type) for c in table.partition_key], [tree(c.type) for c in table.clustering],
                     live + dropped, mode)


def decoder(schema: SchemaSnapshot, messaging_version: int, source: SourceInfo,
            schema_ids: Mapping | None = None, hand_off: Set = frozenset()) -> tuple[_native.Decoder, list[Table]]:
    """A decoder of every table of `schema`, and the tables in its numbering; the changes of the
    tables in `schema_ids` (table id → (key id, value id)) become events, the entries holding a
    change of a table in `hand_off` are handed back, the other tables' changes are skipped."""
    ids = schema_ids or {}
    specs, tables = [], []
    for table in schema.tables.values():
        try:
            specs.append(table_spec(table, schema, ids.get(table.id), table.id in hand_off))
        except CqlTypeError as exc:
            # A snapshot read while a keyspace's types and tables change (the keyspace dropped, a type
            # created with its table) can name a type it does not hold. The table is left out: its
            # changes meet the decoder as an unknown table's, which refreshes the schema.
            log.warning("%s.%s left out of the decoder until the schema is read again: %s", table.keyspace,
                        table.name, exc)
            continue
        tables.append(table)
    return _native.Decoder(specs, messaging_version, source), tables
