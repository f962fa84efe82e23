"""Mutations: `uvint count` partition updates, back to back without lengths.

Because updates have no length prefix, every table of the mutation must be known to
reach the next one; an unknown table id therefore stops decoding the whole entry.
"""
from __future__ import annotations

import struct
import uuid

from schemas.cql import CqlTypeError
from schemas.cql.vint import read_uvint
from schemas.tables.model import SchemaSnapshot

from schemas.change import Change
from .errors import SchemaMismatch, UnknownTable
from .header import UnknownColumn
from .layout import TableLayout
from .partition import read_partition_update

# What reading a CRC-valid mutation with a schema that does not fit can raise.
_MISFIT = (IndexError, KeyError, ValueError, ArithmeticError, struct.error, UnknownColumn, CqlTypeError)


class _UnknownTableId(Exception):
    def __init__(self, table_id: uuid.UUID) -> None:
        self.table_id = table_id


class MutationDecoder:
    """Decodes the mutations of one segment with one schema snapshot."""

    def __init__(self, schema: SchemaSnapshot, segment: str, segment_id: int, messaging_version: int) -> None:
        self.schema = schema
        self.segment = segment
        self.segment_id = segment_id
        self.signed_ldt = messaging_version < 13  # 5.0's messaging 13 reads deletion times as uint32
        self._layouts: dict[bytes, TableLayout] = {}

    def _layout_of(self, raw_id: bytes) -> TableLayout:
        layout = self._layouts.get(raw_id)
        if layout is None:
            table_id = uuid.UUID(bytes=bytes(raw_id))
            table = self.schema.table(table_id)
            if table is None:
                raise _UnknownTableId(table_id)
            layout = self._layouts[raw_id] = TableLayout(table, self.schema)
        return layout

    def decode(self, mutation: bytes, entry_offset: int) -> list[Change]:
        """Changes of the mutation stored in the entry at `entry_offset`."""
        changes: list[Change] = []
        update_index = start = 0
        try:
            count, p = read_uvint(mutation, 0)
            for update_index in range(count):
                start = p
                p = read_partition_update(mutation, p, self._layout_of, self.signed_ldt, self.segment_id,
                                          entry_offset, update_index, changes)
            if p != len(mutation) or count == 0:
                raise ValueError(f"mutation has {len(mutation) - p} bytes after its {count} partition updates")
        except _UnknownTableId as exc:
            raise UnknownTable(self.segment, entry_offset, exc.table_id) from None
        except _MISFIT as exc:
            layout = self._layouts.get(mutation[start:start + 16])
            table = f" of {layout.table.qualified_name}" if layout else ""
            raise SchemaMismatch(self.segment, entry_offset,
                                 f"partition update {update_index}{table} does not fit the schema: {exc}") from None
        return changes
