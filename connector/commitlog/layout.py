"""A table compiled for decoding: each column's type parsed once, framing precomputed."""
from __future__ import annotations

from typing import Any, Callable

from schemas.cql import CqlType, parse_type
from schemas.cql.composite import decode_partition_key
from schemas.tables.model import ColumnKind, SchemaSnapshot, Table


class ColumnLayout:
    """How to read one column's cells."""

    __slots__ = ("name", "type", "fixed_length", "complex", "decode", "empty", "dropped_time")

    def __init__(self, name: str, cql_type: CqlType, dropped_time: int | None = None) -> None:
        self.name = name
        self.type = cql_type
        self.complex = cql_type.multi_cell
        # Complex cell values are always length-prefixed, whatever the element type.
        self.fixed_length = -1 if self.complex or cql_type.fixed_length is None else cql_type.fixed_length
        self.decode: Callable[[bytes], Any] = cql_type.decode
        self.empty = cql_type.empty
        self.dropped_time = dropped_time  # set for dropped columns (µs)


class TableLayout:
    __slots__ = ("table", "partition_key", "clustering", "columns", "column_lists")
    MAX_COLUMN_LISTS = 8

    def __init__(self, table: Table, snapshot: SchemaSnapshot) -> None:
        types = snapshot.types_of(table.keyspace)

        def parse(text: str) -> CqlType:
            return parse_type(text, types, table.keyspace)

        self.table = table
        self.partition_key = [parse(c.type) for c in table.partition_key]
        self.clustering = [ColumnLayout(c.name, parse(c.type)) for c in table.clustering]
        # Header column lists name columns by their UTF-8 bytes; dropped ones are the fallback.
        columns = {name.encode(): ColumnLayout(name, parse(d.type), d.dropped_time)
                   for name, d in table.dropped_columns.items()}
        for c in table.columns:
            if c.kind in (ColumnKind.STATIC, ColumnKind.REGULAR):
                columns[c.name.encode()] = ColumnLayout(c.name, parse(c.type))
        self.columns = columns
        self.column_lists: list[tuple[bytes, list[ColumnLayout]]] = []  # (encoded list, its columns)

    def remember_column_list(self, encoded: bytes, columns: list[ColumnLayout]) -> None:
        if len(self.column_lists) >= self.MAX_COLUMN_LISTS:
            self.column_lists.pop(0)
        self.column_lists.append((encoded, columns))

    def decode_partition_key(self, key: bytes) -> tuple:
        """Values of the partition key columns; several columns form a CompositeType key."""
        return decode_partition_key(self.partition_key, key)
