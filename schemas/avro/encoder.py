"""Changes of any table to (key, value) data, with one compiled TableEncoder per table."""
from __future__ import annotations

import time
import uuid

from schemas.change import Change
from schemas.tables.model import SchemaSnapshot, Table

from .table import SourceInfo, TableEncoder


class ChangeEncoder:
    """Keep `schema` equal to the snapshot the changes were decoded with (the reader's): UDT
    definitions come from it, and a changed UDT or table rebuilds that table's encoder."""

    def __init__(self, source: SourceInfo, schema: SchemaSnapshot) -> None:
        self.source = source
        self._schema = schema
        self._tables: dict[uuid.UUID, TableEncoder] = {}

    @property
    def schema(self) -> SchemaSnapshot:
        return self._schema

    @schema.setter
    def schema(self, schema: SchemaSnapshot) -> None:
        if schema is self._schema:
            return
        self._schema = schema
        self._tables = {table_id: encoder for table_id, encoder in self._tables.items()
                        if schema.table(table_id) is encoder.table
                        and schema.types_of(encoder.table.keyspace) == encoder.user_types}

    def table(self, table: Table) -> TableEncoder:
        encoder = self._tables.get(table.id)
        if encoder is None or encoder.table is not table:
            encoder = self._tables[table.id] = TableEncoder(table, self._schema.types_of(table.keyspace))
        return encoder

    def encode(self, change: Change, segment: str, ts_ms: int | None = None) -> tuple[dict, dict]:
        """(key, value) of a change read from `segment`, processed at `ts_ms` (default: now)."""
        if ts_ms is None:
            ts_ms = time.time_ns() // 1_000_000
        return self.table(change.table).encode(change, self.source, segment, ts_ms)
