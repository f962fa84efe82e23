"""A segment's changes as the native core decodes them, made into the reference reader's `Change`
objects: what `python -m connector dump --decoder native` prints, so the two decoders can be held to
each other line for line (`diff` of the two dumps is empty)."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable, Iterator

from connector import native_core
from schemas import _native
from schemas.avro.table import SourceInfo
from connector.commitlog import Bound, Cell, Change, ComplexColumn, DeletionTime, Liveness, Op, Position, \
    SchemaMismatch, UnknownTable
from connector.commitlog.layout import ColumnLayout, TableLayout
from schemas.cql import CqlTypeError
from schemas.tables import SchemaSnapshot

# What the reference decoder's value decoding raises for bytes that do not fit a type.
_MISFIT = (IndexError, KeyError, ValueError, ArithmeticError, struct.error, CqlTypeError)
_SOURCE = SourceInfo("ringtail", "", "")  # changes, not events: the source is not written


def _layouts(schema: SchemaSnapshot, messaging_version: int):
    """The native decoder of `schema`, and per table number its layout and columns by number."""
    decoder, tables = native_core.decoder(schema, messaging_version, _SOURCE)
    layouts = []
    for table in tables:
        layout = TableLayout(table, schema)
        names = [column.name.encode() for column in native_core.table_spec(table, schema).columns]
        layouts.append((layout, [layout.columns[name] for name in names]))
    return decoder, layouts


def _value(column: ColumnLayout, raw):
    if raw is None:
        return None
    return column.decode(raw) if raw else column.empty


def _clustering(layout: TableLayout, values) -> tuple:
    return tuple(_value(column, raw) for column, raw in zip(layout.clustering, values))


def _cell(column: ColumnLayout, multi_cell: bool, cell: _native.RawCell) -> Cell:
    timestamp, ttl, ldt, tombstone = cell.timestamp, cell.ttl, cell.local_deletion_time, cell.tombstone
    if multi_cell:
        if tombstone:
            return Cell(None, timestamp, ttl, ldt, True, column.type.decode_path(cell.path))
        key, value = column.type.decode_cell(cell.path, cell.value)
        return Cell(value, timestamp, ttl, ldt, False, key)
    return Cell(None if tombstone else _value(column, cell.value), timestamp, ttl, ldt, tombstone)


def _change(layouts, segment_id: int, offset: int, found: _native.RawChange) -> Change:
    layout, by_index = layouts[found.table]
    cells = {}
    for raw in found.columns:
        column = by_index[raw.index]
        if raw.multi_cell:
            cells[column.name] = ComplexColumn(None if raw.deletion is None else DeletionTime(*raw.deletion),
                                               [_cell(column, True, c) for c in raw.cells])
        else:
            cells[column.name] = _cell(column, False, raw.cells[0])
    start, end, key = found.range_start, found.range_end, found.partition_key
    return Change(
        Position(segment_id, offset, found.update_index, found.row_index), layout.table, Op(found.op),
        layout.decode_partition_key(key), _clustering(layout, found.clustering), cells,
        None if found.liveness is None else Liveness(*found.liveness),
        None if found.deletion is None else DeletionTime(*found.deletion), found.shadowable, found.is_static,
        None if start is None else Bound(_clustering(layout, start[0]), start[1]),
        None if end is None else Bound(_clustering(layout, end[0]), end[1]), partition_key_bytes=key)


def native_changes(path: str | Path, schema: SchemaSnapshot, limit: int | None = None,
                   on_schema_miss: Callable[[UnknownTable | SchemaMismatch], None] | None = None) -> Iterator[Change]:
    """Every change of the segment up to `limit`, read by the native core, in log order; damage is
    raised after the changes before it. An entry the schema does not fit raises, unless
    `on_schema_miss` returns for it (the entry is then skipped), as the reference reader's tools do."""
    segment = _native.Segment(Path(path))
    decoder, layouts = _layouts(schema, segment.messaging_version)
    read = segment.entries(limit)
    for offset, mutation in read.entries:
        try:
            found = decoder.changes(mutation, str(path), offset)
            try:  # the reference decodes values as it reads an entry: a value that does not fit is a miss
                changes = [_change(layouts, segment.segment_id, offset, f) for f in found.changes]
                for bare in found.bare_keys:
                    layouts[bare.table][0].decode_partition_key(bare.key)
            except _MISFIT as exc:
                raise SchemaMismatch(str(path), offset, f"a value does not fit the schema: {exc}") from None
            if found.miss is not None:  # found after the values before it, which the reference reads first
                raise found.miss
        except (UnknownTable, SchemaMismatch) as miss:
            if on_schema_miss is None:
                raise
            on_schema_miss(miss)
            continue
        yield from changes
    if read.error is not None:
        raise read.error
